// Changes to a run between steps (RunControl::request_edits, the studio's Change while paused):
// the learning rate from the next step on (a schedule scaled with it, groups keep their ratios),
// gradient clipping, a RunChanged event with what changed, a schedule that sets the lr itself
// refusing it with a warning; layers frozen, unfrozen and re-weighted mid-run (optimizer state
// carried by parameter name, the schedule going on), capture turned on mid-run, and a resume
// after such a change.
#include <myelin/graph/build.h>
#include <myelin/io/project.h>
#include <myelin/train/callbacks.h>
#include <myelin/train/run_control.h>
#include <myelin/train/trainer.h>

#include <QtTest>

#include <QTemporaryDir>

#include <cmath>

using namespace myelin;
using namespace myelin::train;

namespace {

const std::string kExamples = std::string(MYELIN_SOURCE_DIR) + "/resources/examples";

// Asks for `edits` once step `at` was reported (as the studio does while paused there).
class EditAt final : public TrainerCallback {
  public:
    EditAt(int64_t at, RunEdits edits) : at_(at), edits_(std::move(edits)) {}
    void after_step_reported(Trainer& trainer) override {
        if (trainer.step() == at_) trainer.control().request_edits(edits_);
    }

  private:
    int64_t at_;
    RunEdits edits_;
};

struct Recorded {
    std::map<int64_t, double> lr; // per step
    std::vector<RunChanged> changes;
    std::vector<std::string> warnings;
};

Recorded train_with(io::Project project, int64_t at, RunEdits edits) {
    TrainerOptions options;
    options.project_dir = kExamples;
    options.max_steps = 12;
    Trainer trainer(project, options);
    Recorded r;
    CallbackSink sink([&](const Event& e) {
        if (auto* m = e.get<StepMetrics>()) r.lr[m->step] = m->lr;
        if (auto* c = e.get<RunChanged>()) r.changes.push_back(*c);
        if (auto* l = e.get<LogMessage>(); l && l->level == LogLevel::Warning)
            r.warnings.push_back(l->text);
    });
    trainer.set_sink(&sink);
    trainer.add_callback(std::make_shared<EditAt>(at, std::move(edits)));
    trainer.run();
    return r;
}

io::Project tabular() {
    return io::load_project(kExamples + "/tabular_regression.myelin");
}

// The tabular example's three Linear layers are nodes 2, 4 and 6.
constexpr graph::NodeId kFirstLinear = 2, kSecondLinear = 4;

// Every step's weights of two layers, each group's lr and the optimizer's step count of the
// second layer's weight.
class Watch final : public TrainerCallback {
  public:
    void after_step_reported(Trainer& trainer) override {
        for (graph::NodeId id : {kFirstLinear, kSecondLinear}) {
            const std::string& name = trainer.model().module_name(id);
            weights[trainer.step()][id] = trainer.model().child(name)->parameters()[0].clone();
        }
        std::vector<double> lrs;
        for (const auto& g : trainer.optimizer().param_groups())
            lrs.push_back(g.options.at("lr"));
        group_lrs[trainer.step()] = lrs;
        const Tensor second =
            trainer.model().child(trainer.model().module_name(kSecondLinear))->parameters()[0];
        auto& groups = trainer.optimizer().param_groups();
        for (size_t g = 0; g < groups.size(); ++g)
            for (size_t i = 0; i < groups[g].params.size(); ++i)
                if (groups[g].params[i].is_same(second))
                    adam_steps[trainer.step()] = trainer.optimizer().state(g, i).at("step").item();
    }
    std::map<int64_t, std::map<graph::NodeId, Tensor>> weights;
    std::map<int64_t, std::vector<double>> group_lrs;
    std::map<int64_t, double> adam_steps;
};

struct Run {
    Recorded recorded;
    std::shared_ptr<Watch> watch = std::make_shared<Watch>();
    int64_t summaries = 0;
    std::filesystem::path last_checkpoint;
};

Run watch_run(io::Project project, int64_t at, RunEdits edits, TrainerOptions options = {}) {
    options.project_dir = kExamples;
    if (!options.max_steps) options.max_steps = 12;
    Trainer trainer(project, options);
    Run run;
    CallbackSink sink([&](const Event& e) {
        if (auto* m = e.get<StepMetrics>()) run.recorded.lr[m->step] = m->lr;
        if (auto* c = e.get<RunChanged>()) run.recorded.changes.push_back(*c);
        if (e.get<TensorSummaryEvent>()) ++run.summaries;
        if (auto* l = e.get<LogMessage>(); l && l->level == LogLevel::Warning)
            run.recorded.warnings.push_back(l->text);
    });
    trainer.set_sink(&sink);
    trainer.add_callback(std::make_shared<EditAt>(at, std::move(edits)));
    trainer.add_callback(run.watch);
    run.last_checkpoint = trainer.run().last_checkpoint;
    return run;
}

std::string module_of(graph::NodeId id) {
    io::Project p = tabular();
    return graph::build(p.model)->module_name(id);
}

} // namespace

class TestRunEdits : public QObject {
    Q_OBJECT

  private slots:
    void learningRateFromTheNextStep() {
        RunEdits edits;
        edits.lr = 2e-4;
        const Recorded r = train_with(tabular(), 5, edits);
        QCOMPARE(r.lr.at(5), 3e-3); // the project's Adam lr until then
        QCOMPARE(r.lr.at(6), 2e-4);
        QCOMPARE(r.lr.at(12), 2e-4);
        QCOMPARE(r.changes.size(), size_t(1));
        QCOMPARE(r.changes[0].step, int64_t(5));
        QCOMPARE(r.changes[0].what, std::string("lr 0.003 -> 0.0002"));
    }

    // With a schedule the lr is scaled: the schedule goes on from the new value.
    void aScheduleIsScaled() {
        io::Project p = tabular();
        p.train.scheduler = spec::Choice{"StepLR", {{"step_size", int64_t(3)}, {"gamma", 0.5}}};
        p.train.scheduler_interval = myelin::spec::ScheduleInterval::Step;
        const Recorded plain = train_with(p, 0, RunEdits{}); // no change
        QVERIFY(plain.changes.empty());
        RunEdits edits;
        edits.lr = 1e-4;
        const Recorded r = train_with(p, 5, edits);
        for (int64_t t = 1; t <= 5; ++t)
            QCOMPARE(r.lr.at(t), plain.lr.at(t));
        // From step 6 the schedule's values scaled by one factor: its decays go on from there.
        const double factor = 1e-4 / plain.lr.at(6);
        for (int64_t t = 6; t <= 12; ++t)
            QVERIFY2(std::abs(r.lr.at(t) - plain.lr.at(t) * factor) <= 1e-15,
                     qPrintable(QString::number(t)));
        QVERIFY(plain.lr.at(12) < plain.lr.at(6)); // it decayed in between
        QCOMPARE(r.changes.size(), size_t(1));
    }

    void clippingAndOneCycle() {
        RunEdits clip;
        clip.clip_grad_norm = std::optional<double>(1.0);
        Recorded r = train_with(tabular(), 3, clip);
        QCOMPARE(r.changes.size(), size_t(1));
        QCOMPARE(r.changes[0].what, std::string("clip_grad_norm off -> 1"));
        // OneCycleLR sets the lr from max_lr: refused with a warning, nothing changes.
        io::Project p = tabular();
        p.train.scheduler = spec::Choice{"OneCycleLR", {}};
        p.train.scheduler_interval = myelin::spec::ScheduleInterval::Step;
        RunEdits lr;
        lr.lr = 1e-5;
        r = train_with(p, 3, lr);
        QVERIFY(r.changes.empty());
        QCOMPARE(r.warnings.size(), size_t(1));
        QVERIFY(
            QString::fromStdString(r.warnings[0]).contains("OneCycleLR sets the learning rate"));
    }

    // Frozen from step 6 on: the layer's weights stay, the others train on and keep their Adam
    // state (its step count goes on, it does not restart).
    void freezeMidRun() {
        const std::string first = module_of(kFirstLinear);
        RunEdits edits;
        edits.frozen[first] = true;
        const Run run = watch_run(tabular(), 5, edits);
        QCOMPARE(run.recorded.changes.size(), size_t(1));
        QCOMPARE(run.recorded.changes[0].what, std::string("froze Linear #2")); // as the canvas
        const std::vector<std::pair<std::string, bool>> frozen{{first, true}};
        QCOMPARE(run.recorded.changes[0].frozen, frozen); // the store's kFrozenEvent comes of it
        const auto& w = run.watch->weights;
        QVERIFY(!equal(w.at(4).at(kFirstLinear), w.at(5).at(kFirstLinear))); // trained until 5
        for (int64_t t = 6; t <= 12; ++t) {
            QVERIFY2(equal(w.at(5).at(kFirstLinear), w.at(t).at(kFirstLinear)),
                     qPrintable(QString::number(t)));
            QVERIFY(!equal(w.at(t - 1).at(kSecondLinear), w.at(t).at(kSecondLinear)));
        }
        QCOMPARE(run.watch->adam_steps.at(12), 12.0);
        QCOMPARE(run.watch->group_lrs.at(12).size(), size_t(1));
    }

    // A layer frozen in the project trains from the step after it is unfrozen, with fresh state.
    void unfreezeMidRun() {
        io::Project p = tabular();
        p.model.node(kFirstLinear).frozen = true;
        const std::string first = module_of(kFirstLinear);
        RunEdits edits;
        edits.frozen[first] = false;
        const Run run = watch_run(p, 4, edits);
        QCOMPARE(run.recorded.changes.at(0).what, std::string("unfroze Linear #2"));
        const auto& w = run.watch->weights;
        QVERIFY(equal(w.at(1).at(kFirstLinear), w.at(4).at(kFirstLinear)));
        QVERIFY(!equal(w.at(4).at(kFirstLinear), w.at(5).at(kFirstLinear)));
        QCOMPARE(run.watch->adam_steps.at(12), 12.0);
    }

    // An lr multiplier set mid-run splits the layer into a group of its own at lr x multiplier;
    // a StepLR schedule goes on in both groups.
    void lrMultiplierMidRun() {
        io::Project p = tabular();
        p.train.scheduler = spec::Choice{"StepLR", {{"step_size", int64_t(3)}, {"gamma", 0.5}}};
        p.train.scheduler_interval = myelin::spec::ScheduleInterval::Step;
        const std::string second = module_of(kSecondLinear);
        RunEdits edits;
        edits.lr_multiplier[second] = 0.1;
        const Run plain = watch_run(p, 0, RunEdits{});
        const Run run = watch_run(p, 5, edits);
        QCOMPARE(run.recorded.changes.at(0).what, std::string("Linear #4 lr x1 -> x0.1"));
        for (int64_t t = 6; t <= 12; ++t) {
            const auto& lrs = run.watch->group_lrs.at(t);
            QCOMPARE(lrs.size(), size_t(2));
            const double base = plain.watch->group_lrs.at(t).at(0);
            QVERIFY2(std::abs(lrs[0] - base) <= 1e-15 * base, qPrintable(QString::number(t)));
            QVERIFY2(std::abs(lrs[1] - 0.1 * base) <= 1e-15 * base, qPrintable(QString::number(t)));
        }
        QVERIFY(plain.watch->group_lrs.at(12).at(0) < plain.watch->group_lrs.at(6).at(0));
        QCOMPARE(run.watch->adam_steps.at(12), 12.0); // its state went along to the new group
    }

    void refusedLayerEdits() {
        RunEdits edits;
        edits.lr_multiplier[module_of(kFirstLinear)] = 0.0;
        edits.frozen["no-such-layer"] = true;
        Run run = watch_run(tabular(), 3, edits);
        QVERIFY(run.recorded.changes.empty());
        QCOMPARE(run.recorded.warnings.size(), size_t(2));
        // Every layer frozen: nothing changes, it says why.
        RunEdits all;
        for (graph::NodeId id : {2, 4, 6})
            all.frozen[module_of(id)] = true;
        run = watch_run(tabular(), 3, all);
        QVERIFY(run.recorded.changes.empty());
        QVERIFY(QString::fromStdString(run.recorded.warnings.at(0)).contains("every layer"));
    }

    // Summaries turned on at step 6 are captured from then on.
    void captureMidRun() {
        io::Project p = tabular();
        p.train.capture.summaries_every = 0;
        RunEdits edits;
        edits.capture = p.train.capture;
        edits.capture->summaries_every = 2;
        const Run off = watch_run(p, 0, RunEdits{});
        QCOMPARE(off.summaries, int64_t(0));
        const Run on = watch_run(p, 5, edits);
        QVERIFY(on.summaries > 0);
        QCOMPARE(on.recorded.changes.at(0).what, std::string("summaries off -> every 2"));
    }

    // A run stopped after freezing a layer resumes with it frozen (and its optimizer state).
    void resumeAfterAFreeze() {
        QTemporaryDir dir;
        TrainerOptions options;
        options.checkpoint_dir = dir.filePath("ck").toStdString();
        options.max_steps = 8;
        const std::string first = module_of(kFirstLinear);
        RunEdits edits;
        edits.frozen[first] = true;
        const Run before = watch_run(tabular(), 3, edits, options);
        QVERIFY(!before.last_checkpoint.empty());
        TrainerOptions resume;
        resume.resume_from = before.last_checkpoint;
        resume.max_steps = 12;
        const Run after = watch_run(tabular(), -1, RunEdits{}, resume);
        const auto& w = after.watch->weights;
        QVERIFY(!w.empty());
        QVERIFY(equal(w.begin()->second.at(kFirstLinear), w.rbegin()->second.at(kFirstLinear)));
        QVERIFY(equal(before.watch->weights.at(8).at(kFirstLinear),
                      w.rbegin()->second.at(kFirstLinear)));
        QCOMPARE(after.watch->adam_steps.rbegin()->second, double(w.rbegin()->first));
    }

    void editsMergeUntilTaken() {
        RunControl control;
        RunEdits a, b;
        a.lr = 1e-3;
        b.clip_grad_value = std::optional<double>();
        control.request_edits(a);
        control.request_edits(b);
        const auto taken = control.take_edits();
        QVERIFY(taken && taken->lr == 1e-3 && taken->clip_grad_value.has_value() &&
                !taken->clip_grad_value->has_value());
        QVERIFY(!control.take_edits());
    }
};

QTEST_GUILESS_MAIN(TestRunEdits)
#include "test_run_edits.moc"
