// Forks (issue 14) through RecordedRun, the code the CLI and the studio share: a fork without
// edits reproduces its parent's per-step losses after the branch point bit for bit (from an
// epoch's end and from mid-epoch); a fork with edits (lr override, an edited project) records
// them and its parent link, and applies them; resuming a fork keeps the lineage and the edits;
// refused forks (unknown run, running run, deleted or overwritten checkpoints, a step without a
// checkpoint, a checkpoint of another model) leave the store unchanged. Also io::project_changes.
#include <myelin/error.h>
#include <myelin/io/project.h>
#include <myelin/store/run_store.h>
#include <myelin/train/recorded_run.h>

#include <QTemporaryDir>
#include <QtTest>

#include "../support/blobs_project.h"
#include "test_support.h"

#include <bit>
#include <cmath>
#include <filesystem>

using namespace myelin;
using namespace myelin::train;

namespace {

// QCOMPARE on doubles is fuzzy (qFuzzyCompare); these must be the same bits.
quint64 bits(double v) {
    return std::bit_cast<quint64>(v);
}

// Collects the log lines a run reports.
struct Logs final : EventSink {
    std::vector<std::string> lines;
    void on_event(const Event& e) override {
        if (auto* m = e.get<LogMessage>()) lines.push_back(m->text);
    }
    bool contains(const std::string& text) const {
        for (const auto& l : lines)
            if (l.find(text) != std::string::npos) return true;
        return false;
    }
};

} // namespace

class TestFork : public QObject {
    Q_OBJECT

  private slots:
    void init();
    void projectChangesLeaveOutLayout();
    void forkSourceReads();
    void forkWithoutEditsReproducesTheParent();
    void forkFromMidEpochEqualsTheStraightRun();
    void forkWithEditsRecordsAndAppliesThem();
    void refusedForksChangeNothing();

  private:
    // The blobs project with a Dropout before fc2 (so the generator state matters) and every
    // epoch's checkpoint kept.
    io::Project project(int epochs) const;
    TrainResult train(const io::Project& p, TrainerOptions options, RecordedRunOptions run,
                      int64_t* id = nullptr, EventSink* sink = nullptr) const;
    std::vector<store::MetricSample> series(int64_t run, const char* key) const;

    std::unique_ptr<QTemporaryDir> dir_;
    std::string store_;
};

void TestFork::init() {
    dir_ = std::make_unique<QTemporaryDir>();
    QVERIFY(dir_->isValid());
    QVERIFY(!myelin::test::writeBlobsProject(dir_->path(), 1).isEmpty());
    store_ = dir_->filePath(QStringLiteral("runs.sqlite")).toStdString();
}

io::Project TestFork::project(int epochs) const {
    io::Project p = io::load_project(dir_->filePath(QStringLiteral("blobs.myelin")).toStdString());
    auto& m = p.model;
    std::erase_if(m.edges, [](const graph::Edge& e) { return e.from == 3 && e.to == 4; });
    const auto drop = m.add_node("Dropout", "drop", {{"p", 0.2}});
    m.connect(3, drop);
    m.connect(drop, 4);
    p.train.epochs = epochs;
    p.train.checkpoints.keep_last = 100;
    return p;
}

TrainResult TestFork::train(const io::Project& p, TrainerOptions options, RecordedRunOptions run,
                            int64_t* id, EventSink* sink) const {
    options.project_dir = dir_->path().toStdString();
    options.run_name = "blobs";
    run.store_path = store_;
    RecordedRun recorded(p, options, run);
    if (id) *id = recorded.id();
    return recorded.run(sink);
}

std::vector<store::MetricSample> TestFork::series(int64_t run, const char* key) const {
    return store::RunStore::open(store_).metric_series(run, key);
}

void TestFork::projectChangesLeaveOutLayout() {
    io::Project a = project(3);
    io::Project b = a;
    QVERIFY(io::project_changes(a, b).empty());
    b.train.optimizer.options.set("lr", 0.001);
    b.model.nodes[0].x += 50; // moved on the canvas: not a change of training
    b.ui_json = R"({"zoom": 2})";
    b.model.add_node("ReLU", "extra");
    const auto changes = io::project_changes(a, b);
    QCOMPARE(changes.size(), size_t(2));
    QCOMPARE(changes[0].path, std::string("model.nodes[6]"));
    QCOMPARE(changes[0].before, std::string("(none)"));
    QVERIFY(changes[0].after.find("\"extra\"") != std::string::npos);
    QCOMPARE(changes[1].path, std::string("training.optimizer.lr"));
    QCOMPARE(changes[1].before, std::string("0.01"));
    QCOMPARE(changes[1].after, std::string("0.001"));
}

void TestFork::forkSourceReads() {
    QCOMPARE(parse_fork_source("3"), (ForkSource{3, std::nullopt}));
    QCOMPARE(parse_fork_source("12@200"), (ForkSource{12, 200}));
    QCOMPARE(to_string(ForkSource{12, 200}), std::string("12@200"));
    for (const char* bad : {"", "x", "3@", "@5", "3@-1", "3@5@6", "-3", "99999999999999999999"})
        QVERIFY2(error_of<Error>([&] {
                     parse_fork_source(bad);
                 }).contains(QStringLiteral("expected RUN or RUN@STEP")),
                 bad);
}

// The parent trains 4 epochs (56 steps); the fork branches off at the end of epoch 2 (step 28)
// and trains epochs 3 and 4 again: every one of the 28 losses after the branch point, the lr,
// the validation and test metrics equal the parent's exactly.
void TestFork::forkWithoutEditsReproducesTheParent() {
    const io::Project p = project(4);
    int64_t parent = 0, fork = 0;
    QCOMPARE(train(p, {}, {}, &parent).status, RunStatus::Finished);
    RecordedRunOptions from;
    from.fork = ForkSource{parent, 28};
    QCOMPARE(train(p, {}, from, &fork).status, RunStatus::Finished);

    const auto parent_loss = series(parent, "loss");
    const auto fork_loss = series(fork, "loss");
    QCOMPARE(parent_loss.size(), size_t(56));
    QCOMPARE(fork_loss.size(), size_t(28));
    for (size_t i = 0; i < fork_loss.size(); ++i) {
        QCOMPARE(fork_loss[i].step, int64_t(29 + i));
        QCOMPARE(fork_loss[i].step, parent_loss[28 + i].step);
        QCOMPARE(bits(fork_loss[i].value), bits(parent_loss[28 + i].value));
    }
    for (const char* key : {"lr", "val_loss", "val_accuracy", "test_loss", "test_accuracy"}) {
        const auto a = series(parent, key), b = series(fork, key);
        QVERIFY2(!b.empty(), key);
        QCOMPARE(b.back().step, a.back().step);
        QCOMPARE(bits(b.back().value), bits(a.back().value));
    }

    store::RunStore store = store::RunStore::open(store_);
    const store::Run run = store.run(fork);
    QCOMPARE(run.parent_run, std::optional<int64_t>(parent));
    QVERIFY(run.parent_checkpoint.ends_with("epoch-0002.safetensors"));
    const auto params = store.params(fork);
    QCOMPARE(params.at("fork.from"), std::string("1@28"));
    for (const auto& [key, value] : params)
        QVERIFY2(!key.starts_with("fork.diff."), key.c_str()); // nothing was edited
}

// A parent stopped mid-epoch 2 (step 20, batch 6 of 14) forks into a run that finishes: its 36
// losses equal those of a run trained straight through.
void TestFork::forkFromMidEpochEqualsTheStraightRun() {
    const io::Project p = project(4);
    int64_t stopped = 0, straight = 0, fork = 0;
    TrainerOptions first;
    first.max_steps = 20;
    QCOMPARE(train(p, first, {}, &stopped).status, RunStatus::Stopped);
    QCOMPARE(train(p, {}, {}, &straight).status, RunStatus::Finished);
    RecordedRunOptions from;
    from.fork = ForkSource{stopped, std::nullopt}; // its newest: step-0000020.safetensors
    QCOMPARE(train(p, {}, from, &fork).status, RunStatus::Finished);
    const std::string branch = store::RunStore::open(store_).run(fork).parent_checkpoint;
    QVERIFY2(branch.ends_with("step-0000020.safetensors"), branch.c_str());

    const auto whole = series(straight, "loss");
    const auto forked = series(fork, "loss");
    QCOMPARE(forked.size(), size_t(36));
    for (size_t i = 0; i < forked.size(); ++i) {
        QCOMPARE(forked[i].step, whole[20 + i].step);
        QCOMPARE(bits(forked[i].value), bits(whole[20 + i].value));
    }
}

// The parent halves its lr every epoch (StepLR). The fork branches off at step 14 with --lr
// 0.001 (a tenth of 0.01) and a project that adds weight decay and a fifth epoch: the schedule
// goes on scaled (each lr a tenth of the parent's), the changes are recorded as fork.diff.*
// parameters beside the parent link. A resume of the fork keeps both.
void TestFork::forkWithEditsRecordsAndAppliesThem() {
    io::Project p = project(4);
    p.train.scheduler = spec::Choice{"StepLR", {{"step_size", int64_t(1)}, {"gamma", 0.5}}};
    int64_t parent = 0, fork = 0, resumed = 0;
    QCOMPARE(train(p, {}, {}, &parent).status, RunStatus::Finished);

    io::Project edited = p;
    edited.train.optimizer.options.set("weight_decay", 0.0001);
    TrainerOptions edits;
    edits.lr = 0.001;
    edits.epochs = 5;
    edits.max_steps = 40; // stops mid-epoch 3, to be resumed below
    RecordedRunOptions from;
    from.fork = ForkSource{parent, 14};
    Logs logs;
    QCOMPARE(train(edited, edits, from, &fork, &logs).status, RunStatus::Stopped);
    QVERIFY2(logs.contains("fork from step 14: optimizer lr 0.01 -> 0.001, weight_decay 0 -> "
                           "0.0001"),
             logs.lines.empty() ? "no log" : logs.lines.front().c_str());

    {
        store::RunStore store = store::RunStore::open(store_);
        const auto params = store.params(fork);
        QCOMPARE(params.at("fork.from"), std::string("1@14"));
        QCOMPARE(params.at("fork.diff.training.optimizer.lr"), std::string("0.01 -> 0.001"));
        QCOMPARE(params.at("fork.diff.training.optimizer.weight_decay"),
                 std::string("0.0 -> 0.0001"));
        QCOMPARE(params.at("fork.diff.training.epochs"), std::string("4 -> 5"));
        QCOMPARE(store.run(fork).parent_run, std::optional<int64_t>(parent));
    }
    const auto parent_lr = series(parent, "lr");
    const auto fork_lr = series(fork, "lr");
    QCOMPARE(fork_lr.size(), size_t(26));
    for (const auto& point : fork_lr)
        QVERIFY2(std::abs(point.value - parent_lr[size_t(point.step - 1)].value / 10) < 1e-15,
                 qPrintable(QStringLiteral("step %1: %2").arg(point.step).arg(point.value)));
    QCOMPARE(fork_lr.front().value, 0.0005); // epoch 2: 0.01 / 2, scaled by 1/10

    // Resumed with the unedited project: the fork's optimizer state carries its edits, the
    // resume says it goes on with them, and the lineage is fork -> parent.
    RecordedRunOptions resume;
    resume.resume = std::to_string(fork);
    TrainerOptions longer;
    longer.epochs = 5;
    Logs resume_logs;
    QCOMPARE(train(p, longer, resume, &resumed, &resume_logs).status, RunStatus::Finished);
    QVERIFY(resume_logs.contains("a resume goes on with the checkpoint's"));
    store::RunStore store = store::RunStore::open(store_);
    QCOMPARE(store.run(resumed).parent_run, std::optional<int64_t>(fork));
    QCOMPARE(store.run(fork).parent_run, std::optional<int64_t>(parent));
    QCOMPARE(store.params(fork).at("fork.diff.training.optimizer.lr"),
             std::string("0.01 -> 0.001"));
    const auto resumed_lr = series(resumed, "lr");
    QCOMPARE(resumed_lr.size(), size_t(30)); // steps 41..70
    QCOMPARE(resumed_lr.back().value, 0.01 / 16 / 10);
}

void TestFork::refusedForksChangeNothing() {
    io::Project p = project(3);
    int64_t parent = 0;
    QCOMPARE(train(p, {}, {}, &parent).status, RunStatus::Finished);
    // A run still running: this process's (alive), created as a CLI or studio run would be.
    const int64_t live = store::RunStore::open(store_).create_run({.name = "live"});

    const auto runs_now = [&] { return store::RunStore::open(store_).list_runs().size(); };
    const size_t before = runs_now();
    const auto refusal = [&](const io::Project& project, RecordedRunOptions options) {
        return error_of<Error>([&] { train(project, {}, options); });
    };
    RecordedRunOptions o;
    o.fork = ForkSource{7, std::nullopt};
    QVERIFY2(refusal(p, o).contains(QStringLiteral("run 7 does not exist")),
             qPrintable(refusal(p, o)));
    o.fork = ForkSource{live, std::nullopt};
    QVERIFY2(refusal(p, o).contains(QStringLiteral("run 2 is still running (process ")),
             qPrintable(refusal(p, o)));
    o.fork = ForkSource{parent, 20};
    QCOMPARE(refusal(p, o), QStringLiteral("--fork: run 1 wrote no checkpoint at step 20; it has "
                                           "checkpoints at steps 14, 28, 42"));
    o.fork = ForkSource{parent, 14};
    o.resume = "1";
    QVERIFY(refusal(p, o).contains(QStringLiteral("either resumed or forked")));
    o.resume.clear();

    // A checkpoint of another model: fc1 with 8 units instead of 16.
    io::Project narrow = p;
    for (auto& node : narrow.model.nodes) {
        if (node.name == "fc1") node.attrs.set("out_features", int64_t(8));
        if (node.name == "fc2") node.attrs.set("in_features", int64_t(8));
    }
    QVERIFY2(refusal(narrow, o).contains(
                 QStringLiteral("does not fit the project's model:\n  shape: fc1.weight: "
                                "expected [8, 4], got [16, 4]")),
             qPrintable(refusal(narrow, o)));

    // Deleted files: epoch 1's checkpoint goes; best.safetensors was overwritten at later steps,
    // so step 14 has nothing left. Without a step the newest is used; with all gone, refused.
    const auto folder = store::RunStore::open(store_).artifact_folder(parent) / "checkpoints";
    std::filesystem::remove(folder / "epoch-0001.safetensors");
    const QString gone = refusal(p, o);
    QVERIFY2(gone.contains(QStringLiteral("run 1's checkpoint files at step 14 are gone:")) &&
                 gone.contains(QStringLiteral("epoch-0001.safetensors (step 14): deleted")) &&
                 gone.contains(QStringLiteral("best.safetensors (step 14): overwritten since")) &&
                 gone.contains(QStringLiteral("it has checkpoints at steps 28, 42")),
             qPrintable(gone));
    std::filesystem::remove_all(folder);
    o.fork = ForkSource{parent, std::nullopt};
    QVERIFY2(refusal(p, o).contains(QStringLiteral("run 1's checkpoint files are gone:")),
             qPrintable(refusal(p, o)));

    QCOMPARE(runs_now(), before);
    store::RunStore store = store::RunStore::open(store_);
    QCOMPARE(store.run(live).status, store::RunStatus::Running);
    store.finish_run(live, store::RunStatus::Stopped);
}

QTEST_GUILESS_MAIN(TestFork)
#include "test_fork.moc"
