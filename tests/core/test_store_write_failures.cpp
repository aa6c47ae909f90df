// A run store that cannot take a write (issue 41): a full disk or a failing drive, stood in for by
// the store's write fault seam (store/sqlite_db.h), so no mount is needed. The run ends stopped,
// not failed, saying why; its checkpoint at the stop is written and resumes; what the store held
// before the fault is intact (every point up to it, PRAGMA integrity_check "ok"); the store says
// stopped when it can still take a small write, and interrupted once the process has ended when
// it cannot take any.
#include <myelin/io/project.h>
#include <myelin/store/run_store.h>
#include <myelin/train/callbacks.h>
#include <myelin/train/recorded_run.h>
#include <myelin/train/store_sink.h>
#include <myelin/train/trainer.h>

#include <QTemporaryDir>
#include <QtTest>

#include "store/sqlite_db.h"

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

using namespace myelin;
using namespace myelin::train;

namespace {

const std::filesystem::path kExamples =
    std::filesystem::path(MYELIN_SOURCE_DIR) / "resources/examples";

io::Project project() {
    return io::load_project(kExamples / "tabular_regression.myelin");
}

TrainerOptions options_in(const QTemporaryDir& dir) {
    TrainerOptions o;
    o.project_dir = kExamples;
    o.checkpoint_dir = dir.filePath(QStringLiteral("checkpoints")).toStdString();
    o.epochs = 3;
    o.threads = 1;
    return o;
}

// Once armed, the store's commits whose operation starts with `what` ("" for every write) fail
// with SQLite result code `code`.
class StoreFault {
  public:
    StoreFault(std::string what, int code) {
        store::detail::set_write_fault_for_tests(
            [this, what, code](const std::filesystem::path&, std::string_view doing) {
                if (!armed || doing.substr(0, what.size()) != what) return SQLITE_OK;
                ++failed;
                return code;
            });
    }
    ~StoreFault() { store::detail::set_write_fault_for_tests({}); }
    StoreFault(const StoreFault&) = delete;
    StoreFault& operator=(const StoreFault&) = delete;
    std::atomic<bool> armed{false};
    std::atomic<int> failed{0};
};

// After step `at` was reported: everything logged so far committed (when given the store), then
// the fault armed.
class ArmAtStep final : public TrainerCallback {
  public:
    ArmAtStep(int64_t at, StoreFault& fault, store::RunStore* store)
        : at_(at), fault_(fault), store_(store) {}
    void after_step_reported(Trainer& trainer) override {
        if (trainer.step() != at_) return;
        if (store_) store_->flush();
        fault_.armed = true;
    }

  private:
    int64_t at_;
    StoreFault& fault_;
    store::RunStore* store_;
};

// A child process that has ended: its pid stands for a training process that is gone.
int64_t pid_of_an_ended_process() {
    const pid_t child = fork();
    if (child == 0) _exit(0);
    int status = 0;
    waitpid(child, &status, 0);
    return child;
}

std::string integrity_check(const std::string& path) {
    sqlite3* db = nullptr;
    std::string result = "cannot open";
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
        sqlite3_stmt* stmt = nullptr;
        if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, nullptr) == SQLITE_OK &&
            sqlite3_step(stmt) == SQLITE_ROW)
            result = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
        sqlite3_finalize(stmt);
    }
    sqlite3_close(db);
    return result;
}

// The steps of `key`'s points in the store.
std::vector<int64_t> steps_of(const store::RunStore& store, int64_t run, const char* key) {
    std::vector<int64_t> steps;
    for (const auto& point : store.metric_series(run, key))
        steps.push_back(point.step);
    return steps;
}

std::vector<int64_t> one_to(int64_t last) {
    std::vector<int64_t> steps;
    for (int64_t s = 1; s <= last; ++s)
        steps.push_back(s);
    return steps;
}

// A run recorded as RecordedRun records it, on a store whose queue holds one log call at a time:
// a writer's failure then reaches the training thread within two log calls, whatever the timing.
struct StoreRun {
    TrainResult result;
    int64_t id = 0;
    int64_t steps_per_epoch = 0;
};

StoreRun run_on_store(const std::string& store_path, const TrainerOptions& options,
                      StoreFault& fault, int64_t arm_after_epoch_steps, int64_t pid = 0) {
    store::StoreOptions store_options;
    store_options.queue_capacity = 1;
    store_options.batch_points = 1; // committed at once, not after the flush interval
    store::RunStore store = store::RunStore::open(store_path, store_options);
    StoreRun out;
    store::RunInfo info = run_info(project(), options);
    info.pid = pid;
    out.id = store.create_run(info);
    TrainerOptions with_id = options;
    with_id.run_id = out.id;
    Trainer trainer(project(), with_id);
    record_run_params(store, out.id, trainer, project());
    out.steps_per_epoch = trainer.steps_per_epoch();
    trainer.add_callback(
        std::make_shared<ArmAtStep>(out.steps_per_epoch + arm_after_epoch_steps, fault, &store));
    StoreSink sink(store, out.id);
    trainer.set_sink(&sink);
    out.result = trainer.run();
    trainer.set_sink(nullptr);
    return out;
}

void check_contains(const std::string& text, std::initializer_list<const char*> parts) {
    for (const char* part : parts)
        QVERIFY2(text.find(part) != std::string::npos, (text + " | wants: " + part).c_str());
}

// The run goes on from `checkpoint` (no store) to its end.
void check_resumes(const QTemporaryDir& dir, const std::filesystem::path& checkpoint,
                   int64_t steps_per_epoch) {
    TrainerOptions resume = options_in(dir);
    resume.resume_from = checkpoint;
    Trainer again(project(), resume);
    const TrainResult finished = again.run();
    QCOMPARE(finished.status, RunStatus::Finished);
    QCOMPARE(finished.steps, 3 * steps_per_epoch);
}

} // namespace

class TestStoreWriteFailures : public QObject {
    Q_OBJECT

  private slots:
    // The metrics' batches do not fit (the WAL fills the disk); the run's row still takes its
    // small update.
    void aStoreFullOfMetricsStopsTheRunResumably() {
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("runs.sqlite")).toStdString();
        StoreFault fault("writing metrics", SQLITE_FULL);
        const StoreRun run = run_on_store(path, options_in(dir), fault, 5);
        const int64_t fault_step = run.steps_per_epoch + 5;
        QVERIFY(fault.failed > 0);
        QCOMPARE(run.result.status, RunStatus::Stopped);
        check_contains(run.result.error, {"the run store could not record the run",
                                          "writing metrics: the disk is full", "metric points",
                                          "are lost", "the batch needed about",
                                          "the run stopped after step", "can be resumed from /"});
        QVERIFY(run.result.steps > fault_step);
        QVERIFY(run.result.steps < 2 * run.steps_per_epoch); // stopped within the epoch
        // The checkpoint at the stop is written, named and recorded.
        const std::filesystem::path checkpoint = run.result.last_checkpoint;
        QVERIFY(std::filesystem::exists(checkpoint));
        QCOMPARE(checkpoint.filename().string().rfind("step-", 0), size_t(0));
        check_contains(run.result.error, {("can be resumed from " + checkpoint.string()).c_str()});

        fault.armed = false;
        QCOMPARE(integrity_check(path), std::string("ok"));
        {
            store::RunStore store = store::RunStore::open(path);
            const store::Run recorded = store.run(run.id);
            QCOMPARE(recorded.status, store::RunStatus::Stopped);
            check_contains(recorded.error, {"the disk is full", "the run stopped after step"});
            // Every point committed before the fault is there, and nothing after it.
            QCOMPARE(steps_of(store, run.id, "loss"), one_to(fault_step));
            std::optional<int64_t> parent;
            QCOMPARE(resolve_resume(std::to_string(run.id), store, parent), checkpoint);
        }
        check_resumes(dir, checkpoint, run.steps_per_epoch);
    }

    // A drive that fails every write: not even the run's end can be recorded. The checkpoint file
    // is still written; the store, once the process has ended, lists the run interrupted.
    void whenNothingCanBeWrittenTheRunIsInterruptedNextOpen() {
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("runs.sqlite")).toStdString();
        StoreFault fault("", SQLITE_IOERR_WRITE);
        // The run's process is recorded as one that has ended (this test's own is still alive).
        const StoreRun run =
            run_on_store(path, options_in(dir), fault, 5, pid_of_an_ended_process());
        const int64_t fault_step = run.steps_per_epoch + 5;
        QCOMPARE(run.result.status, RunStatus::Stopped);
        check_contains(run.result.error,
                       {"the run store could not record the run", "disk I/O error",
                        "the run stopped after step",
                        "lists the run as running until it is opened after this process has "
                        "ended, then as interrupted"});
        QVERIFY(std::filesystem::exists(run.result.last_checkpoint));
        check_contains(run.result.error,
                       {("can be resumed from " + run.result.last_checkpoint.string()).c_str()});

        fault.armed = false;
        QCOMPARE(integrity_check(path), std::string("ok"));
        {
            store::RunStore store = store::RunStore::open(path);
            const store::Run recorded = store.run(run.id);
            QCOMPARE(recorded.status, store::RunStatus::Interrupted);
            QCOMPARE(steps_of(store, run.id, "loss"), one_to(fault_step));
            // The first epoch's checkpoint was recorded before the fault; the stop's could not be.
            std::vector<std::string> recorded_checkpoints;
            for (const auto& a : store.artifacts(run.id))
                recorded_checkpoints.push_back(a.path.filename().string());
            QVERIFY(std::count(recorded_checkpoints.begin(), recorded_checkpoints.end(),
                               "epoch-0001.safetensors") > 0);
            QVERIFY(std::count(recorded_checkpoints.begin(), recorded_checkpoints.end(),
                               run.result.last_checkpoint.filename().string()) == 0);
        }
        check_resumes(dir, run.result.last_checkpoint, run.steps_per_epoch);
    }

    // As `myelin train` and the studio run (RecordedRun, the store's default batching): whenever
    // the failure reaches the run, mid-run or at its end, the store never lists the run failed
    // (it used to, when the last flush threw past the Trainer), and says what was lost.
    void aRecordedRunIsNeverMarkedFailedByTheStore() {
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("runs.sqlite")).toStdString();
        StoreFault fault("writing metrics", SQLITE_FULL);
        TrainerOptions options = options_in(dir);
        options.checkpoint_dir.clear(); // the run's folder in the store
        RecordedRunOptions recorded;
        recorded.store_path = path;
        int64_t id = 0;
        TrainResult result;
        {
            RecordedRun run(project(), options, recorded);
            id = run.id();
            Trainer& trainer = run.prepare();
            trainer.add_callback(
                std::make_shared<ArmAtStep>(trainer.steps_per_epoch() + 5, fault, nullptr));
            result = run.run(nullptr);
        }
        fault.armed = false;
        QVERIFY(fault.failed > 0);
        QVERIFY(result.status != RunStatus::Failed);
        check_contains(result.error, {"the disk is full", "are lost"});
        QCOMPARE(integrity_check(path), std::string("ok"));
        store::RunStore store = store::RunStore::open(path);
        const store::Run run = store.run(id);
        QVERIFY2(run.status == store::RunStatus::Stopped ||
                     run.status == store::RunStatus::Finished,
                 store::status_name(run.status).data());
        check_contains(run.error, {"the disk is full"});
    }

    // The seam itself: a failed commit rolls its transaction back and the next one goes through.
    void aFailedCommitLeavesNothingBehind() {
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("runs.sqlite")).toStdString();
        store::RunStore store = store::RunStore::open(path);
        const int64_t id = store.create_run({});
        StoreFault fault("recording an artifact", SQLITE_FULL);
        fault.armed = true;
        store::ArtifactInfo artifact;
        artifact.kind = "checkpoint";
        artifact.path = path; // any existing file
        try {
            store.add_artifact(id, artifact);
            QFAIL("the artifact was recorded");
        } catch (const store::StoreError& e) {
            check_contains(e.what(), {"recording an artifact: the disk is full"});
        }
        QVERIFY(store.artifacts(id).empty());
        fault.armed = false;
        store.add_artifact(id, artifact);
        QCOMPARE(store.artifacts(id).size(), size_t(1));
    }
};

QTEST_GUILESS_MAIN(TestStoreWriteFailures)
#include "test_store_write_failures.moc"
