// Device faults (issue 41): the opaque test device (opaque_device.h) fails an allocation, a
// kernel, or goes away altogether in the middle of a run. The run ends stopped, not failed (the
// machine's fault, not the project's: what matters is that it can go on from its last
// checkpoint), with a message naming the device and the operation; that checkpoint is kept and a
// resume on the CPU finishes the run; the faulted step's tensors are freed. With a real GPU in
// the CUDA slot nothing can be injected, and the tests skip.
#include <myelin/io/project.h>
#include <myelin/store/run_store.h>
#include <myelin/train/callbacks.h>
#include <myelin/train/events.h>
#include <myelin/train/recorded_run.h>
#include <myelin/train/trainer.h>

#include <QTemporaryDir>
#include <QtTest>

#include "opaque_device.h"

#include <filesystem>
#include <functional>
#include <optional>

using namespace myelin;
using namespace myelin::train;

namespace {

constexpr Device kDevice{DeviceType::CUDA, 0};
const std::filesystem::path kExamples =
    std::filesystem::path(MYELIN_SOURCE_DIR) / "resources/examples";

io::Project project() {
    return io::load_project(kExamples / "tabular_regression.myelin");
}

TrainerOptions options_in(const QTemporaryDir& dir, Device device) {
    TrainerOptions o;
    o.project_dir = kExamples;
    o.checkpoint_dir = dir.filePath(QStringLiteral("checkpoints")).toStdString();
    o.epochs = 3;
    o.threads = 1;
    o.device = device;
    return o;
}

// Sets the device's faults at a point of the run: after the first epoch's checkpoint (callbacks
// added to a Trainer run after the built-in CheckpointKeeper), or inside a later step once its
// gradients are complete, so the fault lands in the optimizer step with some parameters updated.
class ArmFaults final : public TrainerCallback {
  public:
    enum class When { AfterFirstEpoch, BeforeOptimizerStep };
    ArmFaults(When when, opaque_device::Faults faults) : when_(when), faults_(faults) {}
    void on_epoch_end(Trainer& trainer, EpochEnd&) override {
        if (when_ == When::AfterFirstEpoch && trainer.epoch() == 0) arm(trainer);
    }
    void after_backward(Trainer& trainer) override {
        // Three steps into the second epoch (the first epoch's checkpoint is written).
        if (when_ == When::BeforeOptimizerStep && trainer.epoch() == 1 &&
            trainer.step() == checkpoint_step_ + 3)
            arm(trainer);
    }
    void after_step_reported(Trainer&) override {
        live_at_step_end = opaque_device::live_allocations.load();
    }
    void on_epoch_end_step(int64_t step) { checkpoint_step_ = step; }
    int64_t armed_at_step = -1;
    int64_t live_at_step_end = 0; // device blocks alive after the last step that finished

  private:
    void arm(Trainer& trainer) {
        armed_at_step = trainer.step();
        opaque_device::faults = faults_;
    }
    When when_;
    opaque_device::Faults faults_;
    int64_t checkpoint_step_ = 0;
};

// What a faulted run reported and returned.
struct FaultedRun {
    TrainResult result;
    std::optional<RunError> error;
    std::optional<Finished> finished;
    int64_t steps_per_epoch = 0;
    int64_t injected = 0;         // faults the device threw
    int64_t live_after_run = 0;   // device blocks alive after run(), the Trainer still there
    int64_t live_at_step_end = 0; // ... after the last step that finished
};

} // namespace

class TestDeviceFaults : public QObject {
    Q_OBJECT

    opaque_device::OpaqueDevice* opaque_ = nullptr;

    // Trains on the opaque device with `faults` set at `when`; the faults are cleared after.
    FaultedRun run_with(const QTemporaryDir& dir, ArmFaults::When when,
                        opaque_device::Faults faults) {
        FaultedRun out;
        const int64_t live_before = opaque_device::live_allocations.load();
        {
            Trainer trainer(project(), options_in(dir, kDevice));
            out.steps_per_epoch = trainer.steps_per_epoch();
            auto arm = std::make_shared<ArmFaults>(when, faults);
            arm->on_epoch_end_step(out.steps_per_epoch);
            trainer.add_callback(arm);
            CallbackSink sink([&](const Event& e) {
                if (auto* error = e.get<RunError>()) out.error = *error;
                if (auto* finished = e.get<Finished>()) out.finished = *finished;
            });
            trainer.set_sink(&sink);
            out.result = trainer.run();
            trainer.set_sink(nullptr);
            out.live_after_run = opaque_device::live_allocations.load();
            out.live_at_step_end = arm->live_at_step_end;
            out.injected = opaque_device::faults.injected;
            opaque_device::faults = {};
        }
        // Nothing of the run is left on the device once its Trainer is gone.
        if (opaque_device::live_allocations.load() != live_before)
            qWarning("device blocks: %lld before the run, %lld after", (long long)live_before,
                     (long long)opaque_device::live_allocations.load());
        [&] { QCOMPARE(opaque_device::live_allocations.load(), live_before); }();
        return out;
    }

    // The run stopped at a fault, resumable from the first epoch's checkpoint, and saying so.
    void check_stopped(const FaultedRun& run, const QTemporaryDir& dir, const char* operation) {
        QVERIFY2(run.injected > 0, "the fault was never reached");
        QCOMPARE(run.result.status, RunStatus::Stopped);
        const QString error = QString::fromStdString(run.result.error);
        for (const char* part :
             {"the device cuda:0", "opaque:0", operation, "injected fault", "the run stopped",
              "can be resumed from /", "/epoch-0001.safetensors (step"})
            QVERIFY2(error.contains(QLatin1String(part)), qPrintable(error + " | wants: " + part));
        QVERIFY(run.error);
        QVERIFY(run.error->stopped);
        QCOMPARE(run.error->message, run.result.error);
        QVERIFY(run.finished);
        QCOMPARE(run.finished->status, RunStatus::Stopped);
        // The last checkpoint is kept and named; none is written of the faulted state.
        const std::filesystem::path checkpoints =
            dir.filePath(QStringLiteral("checkpoints")).toStdString();
        QCOMPARE(run.result.last_checkpoint, checkpoints / "epoch-0001.safetensors");
        QVERIFY(std::filesystem::exists(run.result.last_checkpoint));
        for (const auto& entry : std::filesystem::directory_iterator(checkpoints)) {
            const std::string name = entry.path().filename().string();
            QVERIFY2(name == "epoch-0001.safetensors" || name == "best.safetensors", name.c_str());
        }
        // The faulted step's tensors went with it: no more device blocks than after the last
        // step that finished (parameters, gradients, optimizer state).
        QVERIFY2(run.live_after_run <= run.live_at_step_end,
                 qPrintable(QStringLiteral("%1 device blocks after the run, %2 after the last step")
                                .arg(run.live_after_run)
                                .arg(run.live_at_step_end)));
    }

    // The run goes on from its checkpoint on the CPU to the end.
    void check_resumes_on_cpu(const FaultedRun& run, const QTemporaryDir& dir) {
        TrainerOptions resume = options_in(dir, kCPU);
        resume.resume_from = run.result.last_checkpoint;
        Trainer again(project(), resume);
        const TrainResult finished = again.run();
        QCOMPARE(finished.status, RunStatus::Finished);
        QCOMPARE(finished.epochs_completed, int64_t(3));
        QCOMPARE(finished.steps, 3 * run.steps_per_epoch);
    }

  private slots:
    void initTestCase() {
        opaque_ = opaque_device::register_if_no_gpu();
        if (!opaque_)
            QSKIP("a GPU holds the CUDA slot: faults are injected on the test device only");
    }

    void cleanup() { opaque_device::faults = {}; }

    void anAllocationOutOfMemoryStopsTheRun() {
        QTemporaryDir dir;
        opaque_device::Faults faults;
        faults.fail_allocation = 3; // early in the second epoch's first step
        const FaultedRun run = run_with(dir, ArmFaults::When::AfterFirstEpoch, faults);
        check_stopped(run, dir, "is out of memory: tried to allocate");
        QCOMPARE(run.result.steps, run.steps_per_epoch);
        check_resumes_on_cpu(run, dir);
    }

    void aFailedKernelInTheOptimizerStepStopsTheRun() {
        QTemporaryDir dir;
        opaque_device::Faults faults;
        faults.fail_kernel = 2; // inside the optimizer step: some parameters already updated
        const FaultedRun run = run_with(dir, ArmFaults::When::BeforeOptimizerStep, faults);
        check_stopped(run, dir, "failed: an illegal memory access was encountered");
        // The step did not count, and nothing of it was written: the resume starts from the
        // epoch's checkpoint, three steps back.
        QCOMPARE(run.result.steps, run.steps_per_epoch + 3);
        QVERIFY(run.result.error.find("after step " + std::to_string(run.steps_per_epoch + 3)) !=
                std::string::npos);
        check_resumes_on_cpu(run, dir);
    }

    void aDeviceThatDisappearsStopsTheRun() {
        QTemporaryDir dir;
        opaque_device::Faults faults;
        faults.disappear = 1; // every call from the next one on
        const FaultedRun run = run_with(dir, ArmFaults::When::AfterFirstEpoch, faults);
        check_stopped(run, dir, "the device is gone");
        check_resumes_on_cpu(run, dir);
    }

    // Through the run store, as the CLI and the studio run: the store says stopped, with the
    // device's message, and a resume by run id finds the checkpoint.
    void theStoreRecordsTheFaultedRunStopped() {
        QTemporaryDir dir;
        const std::string store_path = dir.filePath(QStringLiteral("runs.sqlite")).toStdString();
        int64_t id = 0;
        {
            TrainerOptions options = options_in(dir, kDevice);
            options.checkpoint_dir.clear(); // the run's own folder in the store
            RecordedRunOptions recorded;
            recorded.store_path = store_path;
            RecordedRun run(project(), options, recorded);
            id = run.id();
            opaque_device::Faults faults;
            faults.disappear = 1;
            run.prepare().add_callback(
                std::make_shared<ArmFaults>(ArmFaults::When::AfterFirstEpoch, faults));
            const TrainResult result = run.run(nullptr);
            opaque_device::faults = {};
            QCOMPARE(result.status, RunStatus::Stopped);
        }
        store::RunStore store = store::RunStore::open(store_path);
        const store::Run recorded = store.run(id);
        QCOMPARE(recorded.status, store::RunStatus::Stopped);
        QVERIFY2(QString::fromStdString(recorded.error).contains("the device cuda:0"),
                 recorded.error.c_str());
        std::optional<int64_t> parent;
        const std::filesystem::path resume_from = resolve_resume(std::to_string(id), store, parent);
        QCOMPARE(resume_from.filename().string(), std::string("epoch-0001.safetensors"));
    }
};

QTEST_GUILESS_MAIN(TestDeviceFaults)
#include "test_device_faults.moc"
