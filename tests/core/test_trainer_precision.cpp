// Float16's loss scaling in the training step, run on the CPU with float32 compute through
// TrainerOptions::grad_scaler: scaling by a power of two changes nothing when no gradient
// overflows (also with clipping, so the gradients are unscaled before it); an overflow, injected
// as a gradient that float32 cannot hold, skips the step (weights and optimizer state as they
// were), backs the scale off and restarts the growth count, as torch.cuda.amp.GradScaler; the
// scale is a metric per step; a checkpoint keeps the scaler's state under PyTorch's names and a
// resume goes on as the run straight through. training.precision "float16" on the CPU and a
// training.device that cannot be used are refused with the key and the reason.
#include <myelin/cuda.h>
#include <myelin/error.h>
#include <myelin/io/checkpoint.h>
#include <myelin/io/project.h>
#include <myelin/io/safetensors.h>
#include <myelin/nn/module.h>
#include <myelin/store/run_store.h>
#include <myelin/tensor.h>
#include <myelin/train/recorded_run.h>
#include <myelin/train/trainer.h>

#include <QTemporaryDir>
#include <QtTest>

#include "../support/device_line.h"
#include "test_support.h"

#include <cfloat>
#include <cmath>
#include <fstream>
#include <random>
#include <set>
#include <tuple>

using namespace myelin;
using namespace myelin::train;

namespace {

// 3 Gaussian blobs in 4-d, class names a/b/c.
void write_blobs_csv(const std::string& path) {
    std::mt19937 rng(11);
    std::normal_distribution<double> noise(0.0, 0.7);
    std::ofstream out(path);
    out << "x0,x1,x2,x3,label\n";
    const double centers[3][4] = {{2, 0, 0, 1}, {0, 2, 0, -1}, {0, 0, 2, 0}};
    for (int i = 0; i < 240; ++i) {
        const int c = i % 3;
        for (int d = 0; d < 4; ++d)
            out << centers[c][d] + noise(rng) << ",";
        out << "abc"[c] << "\n";
    }
}

// 240 rows: 192 to train on after the 20% test split, 154 after validation: 10 steps of 16.
io::Project blobs_project(const std::string& csv, int64_t epochs) {
    io::Project p;
    p.name = "blobs";
    auto& m = p.model;
    auto in = m.add_node("Input", "", {{"shape", std::vector<int64_t>{4}}});
    auto fc1 =
        m.add_node("Linear", "fc1", {{"in_features", int64_t(4)}, {"out_features", int64_t(16)}});
    auto act = m.add_node("ReLU", "act");
    auto fc2 =
        m.add_node("Linear", "fc2", {{"in_features", int64_t(16)}, {"out_features", int64_t(3)}});
    auto out = m.add_node("Output");
    m.connect(in, fc1);
    m.connect(fc1, act);
    m.connect(act, fc2);
    m.connect(fc2, out);
    p.data.source = {"csv",
                     {{"path", csv},
                      {"target_column", std::string("label")},
                      {"task", std::string("classification")},
                      {"test_fraction", 0.2}}};
    p.data.validation_fraction = 0.2;
    p.data.batch_size = 16;
    p.data.num_workers = 0;
    p.train.loss = {"CrossEntropyLoss", {}};
    p.train.optimizer = {"Adam", {{"lr", 0.01}}};
    p.train.epochs = epochs;
    p.train.seed = 3;
    p.train.capture.summaries_every = 0;
    p.train.capture.feature_maps_every = 0;
    return p;
}

std::vector<float> weights_of(Trainer& t) {
    std::vector<float> out;
    for (const auto& [k, v] : t.model().state_dict()) {
        const Tensor c = v.contiguous();
        out.insert(out.end(), c.data<float>(), c.data<float>() + c.numel());
    }
    return out;
}

struct Recorder final : EventSink {
    std::vector<StepMetrics> steps;
    std::vector<std::tuple<std::string, int64_t, double, double>>
        gradients; // layer, step, mean, std
    void on_event(const Event& e) override {
        if (auto* m = e.get<StepMetrics>()) steps.push_back(*m);
        if (auto* g = e.get<TensorSummaryEvent>(); g && g->kind == SummaryKind::Gradient)
            gradients.emplace_back(g->layer, g->step, g->summary.mean, g->summary.std);
    }
    std::vector<double> losses() const {
        std::vector<double> out;
        for (const auto& m : steps)
            out.push_back(m.loss);
        return out;
    }
};

// At the given steps, fc2's output gradient is multiplied by FLT_MAX in backward (its forward
// value is unchanged: out + (out - out) * FLT_MAX): the scaled gradients overflow float32, as
// float16 gradients overflow under a too large scale. Also notes what the trainer saw.
class OverflowAt final : public TrainerCallback {
  public:
    explicit OverflowAt(std::set<int64_t> steps) : steps_(std::move(steps)) {}
    void before_step(Trainer& trainer) override {
        if (!steps_.count(trainer.step() + 1)) return;
        hook_ = trainer.model().child("fc2")->register_forward_hook(
            [](nn::Module&, const TensorList&, const Tensor& out) {
                const Tensor value = out.detach();
                return value + (out - value) * double(FLT_MAX);
            });
    }
    void after_backward(Trainer& trainer) override {
        hook_.remove();
        overflowed[trainer.step() + 1] = trainer.gradients_overflowed();
        before_ = weights_of(trainer);
    }
    void after_optimizer_step(Trainer& trainer, StepMetrics& metrics) override {
        unchanged[metrics.step] = weights_of(trainer) == before_;
        layer_stats[metrics.step] = !metrics.layers.empty();
    }
    std::map<int64_t, bool> overflowed, unchanged, layer_stats;

  private:
    std::set<int64_t> steps_;
    HookHandle hook_;
    std::vector<float> before_;
};

// torch's _amp_update_scale_ over `steps`, overflowing at `overflows`: the scale after each.
std::vector<double> expected_scales(double scale, int64_t interval, int64_t steps,
                                    const std::set<int64_t>& overflows) {
    std::vector<double> out;
    int64_t tracker = 0;
    for (int64_t s = 1; s <= steps; ++s) {
        if (overflows.count(s)) {
            scale *= 0.5;
            tracker = 0;
        } else if (++tracker == interval) {
            scale *= 2.0;
            tracker = 0;
        }
        out.push_back(scale);
    }
    return out;
}

} // namespace

class TestTrainerPrecision : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase() {
        myelin::test::print_cuda_device();
        QVERIFY(dir_.isValid());
        csv_ = dir_.filePath("blobs.csv").toStdString();
        write_blobs_csv(csv_);
    }

    // A power-of-two scale is exact: with no overflow the run is the unscaled run, bit for bit,
    // also when clipping acts (so the gradients were unscaled before it), gradient summaries
    // included (they are of the unscaled gradients).
    void scalingWithoutOverflowChangesNothing() {
        for (const bool clip : {false, true}) {
            io::Project p = blobs_project(csv_, 2);
            if (clip) p.train.clip_grad_norm = 0.05;
            p.train.capture.summaries_every = 4; // gradient summaries show the true gradients
            Recorder plain, scaled;
            Trainer a(p, {});
            a.set_sink(&plain);
            QCOMPARE(a.run().status, RunStatus::Finished);
            TrainerOptions options;
            options.grad_scaler = optim::GradScalerOptions{};
            Trainer b(p, options);
            QVERIFY(b.grad_scaler() != nullptr && a.grad_scaler() == nullptr);
            b.set_sink(&scaled);
            QCOMPARE(b.run().status, RunStatus::Finished);
            QCOMPARE(scaled.steps.size(), size_t(20));
            QVERIFY(scaled.losses() == plain.losses());
            QVERIFY(weights_of(a) == weights_of(b));
            QCOMPARE(scaled.gradients.size(), size_t(5 * 3)); // steps 4..20, fc1 act fc2
            QVERIFY(scaled.gradients == plain.gradients);
            for (const StepMetrics& m : scaled.steps) {
                QCOMPARE(m.grad_scale.value_or(0), 65536.0); // 20 steps: no growth yet
                QVERIFY(!m.step_skipped);
            }
            for (const StepMetrics& m : plain.steps)
                QVERIFY(!m.grad_scale);
        }
    }

    // Overflows at steps 2, 7 and 8: each skipped (weights as they were, no layer statistics,
    // the run goes on), the scale halves; growth doubles it after 3 finite steps in a row.
    void overflowSkipsTheStepAndBacksOff() {
        io::Project p = blobs_project(csv_, 2);
        TrainerOptions options;
        options.grad_scaler = optim::GradScalerOptions{1024.0, 2.0, 0.5, 3, true};
        const std::set<int64_t> overflows = {2, 7, 8};
        auto injector = std::make_shared<OverflowAt>(overflows);
        Recorder events;
        Trainer t(p, options);
        t.add_callback(injector);
        t.set_sink(&events);
        const TrainResult r = t.run();
        QVERIFY2(r.status == RunStatus::Finished, r.error.c_str());
        QCOMPARE(r.steps, int64_t(20));
        const std::vector<double> want = expected_scales(1024, 3, 20, overflows);
        QCOMPARE(events.steps.size(), want.size());
        for (size_t i = 0; i < want.size(); ++i) {
            const StepMetrics& m = events.steps[i];
            const bool overflow = overflows.count(m.step) > 0;
            QCOMPARE(m.step, int64_t(i + 1));
            QCOMPARE(m.grad_scale.value_or(0), want[i]);
            QCOMPARE(m.step_skipped, overflow);
            QCOMPARE(injector->overflowed.at(m.step), overflow);
            QCOMPARE(injector->unchanged.at(m.step), overflow);
            QCOMPARE(injector->layer_stats.at(m.step), !overflow);
            QVERIFY(std::isfinite(m.loss)); // the forward pass was not touched
        }
        QCOMPARE(want[1], 512.0);
        QCOMPARE(want[4], 1024.0); // 3 finite steps after the backoff: grown
        QCOMPARE(t.grad_scaler()->get_scale(), want.back());
        for (const float w : weights_of(t))
            QVERIFY(std::isfinite(w));
    }

    // Stopped at step 9 and resumed: the checkpoint holds the scaler's state under torch's names,
    // and the resumed run's scales and losses are those of the run straight through.
    void checkpointKeepsTheScaler() {
        io::Project p = blobs_project(csv_, 2);
        const std::set<int64_t> overflows = {3, 12};
        const optim::GradScalerOptions scaling{256.0, 2.0, 0.5, 4, true};
        Recorder straight;
        {
            TrainerOptions options;
            options.grad_scaler = scaling;
            Trainer t(p, options);
            t.add_callback(std::make_shared<OverflowAt>(overflows));
            t.set_sink(&straight);
            QCOMPARE(t.run().status, RunStatus::Finished);
        }
        TrainerOptions first;
        first.grad_scaler = scaling;
        first.max_steps = 9;
        first.checkpoint_dir = dir_.filePath("scaler").toStdString();
        Recorder part1;
        Trainer a(p, first);
        a.add_callback(std::make_shared<OverflowAt>(overflows));
        a.set_sink(&part1);
        const TrainResult r1 = a.run();
        QCOMPARE(r1.status, RunStatus::Stopped);
        // After step 9: overflow at 3 (256 -> 128), growth after 4 more (step 7: 256), 2 since.
        const io::Checkpoint c = io::load_checkpoint(r1.last_checkpoint);
        const std::map<std::string, double> state{{"scale", 256.0},
                                                  {"growth_factor", 2.0},
                                                  {"backoff_factor", 0.5},
                                                  {"growth_interval", 4.0},
                                                  {"_growth_tracker", 2.0}};
        QVERIFY(c.grad_scaler == state);
        QVERIFY(c.grad_scaler == a.grad_scaler()->state_dict());
        const io::SafetensorsFile file = io::load_safetensors(r1.last_checkpoint);
        const std::optional<std::string> text = file.metadata_value("grad_scaler");
        QVERIFY(text);
        QVERIFY2(text->find("\"growth_interval\":4") != std::string::npos, text->c_str());
        QVERIFY2(text->find("\"_growth_tracker\":2") != std::string::npos, text->c_str());

        TrainerOptions second;
        second.grad_scaler = scaling;
        second.resume_from = r1.last_checkpoint;
        Recorder part2;
        Trainer b(p, second);
        b.add_callback(std::make_shared<OverflowAt>(overflows));
        b.set_sink(&part2);
        QCOMPARE(b.run().status, RunStatus::Finished);
        std::vector<StepMetrics> joined = part1.steps;
        joined.insert(joined.end(), part2.steps.begin(), part2.steps.end());
        QCOMPARE(joined.size(), straight.steps.size());
        for (size_t i = 0; i < joined.size(); ++i) {
            QCOMPARE(joined[i].step, straight.steps[i].step);
            QCOMPARE(joined[i].loss, straight.steps[i].loss);
            QCOMPARE(joined[i].grad_scale.value_or(-1), straight.steps[i].grad_scale.value_or(-1));
            QCOMPARE(joined[i].step_skipped, straight.steps[i].step_skipped);
        }
        QVERIFY(straight.steps[11].step_skipped);

        // A checkpoint without scaler state (trained in float32) resumes with a fresh scale, and
        // says so; a float32 resume of a scaled checkpoint notes the state is unused.
        TrainerOptions plain;
        plain.max_steps = 3;
        plain.checkpoint_dir = dir_.filePath("plain").toStdString();
        Trainer c32(p, plain);
        const TrainResult r32 = c32.run();
        QVERIFY(io::load_checkpoint(r32.last_checkpoint).grad_scaler.empty());
        TrainerOptions scaledResume;
        scaledResume.grad_scaler = scaling;
        scaledResume.resume_from = r32.last_checkpoint;
        scaledResume.max_steps = 4;
        std::vector<std::string> notes;
        CallbackSink sink([&](const Event& e) {
            if (auto* m = e.get<LogMessage>()) notes.push_back(m->text);
        });
        Trainer d(p, scaledResume);
        d.set_sink(&sink);
        d.run();
        QCOMPARE(d.grad_scaler()->get_scale(), 256.0);
        QVERIFY(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
            return n.find("holds no loss scaling state") != std::string::npos &&
                   n.find("starts at 256") != std::string::npos;
        }));
        TrainerOptions unscaledResume;
        unscaledResume.resume_from = r1.last_checkpoint;
        unscaledResume.max_steps = 10;
        notes.clear();
        Trainer e(p, unscaledResume);
        e.set_sink(&sink);
        e.run();
        QVERIFY(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
            return n.find("holds loss scaling state") != std::string::npos;
        }));
    }

    // The scale and the skipped steps are metrics of the run in the store; the run records the
    // device it computed on, and device and precision among its parameters.
    void storeRecordsScaleAndDevice() {
        io::Project p = blobs_project(csv_, 1);
        TrainerOptions options;
        options.grad_scaler = optim::GradScalerOptions{64.0, 2.0, 0.5, 2, true};
        RecordedRunOptions where;
        where.store_path = dir_.filePath("runs.sqlite").toStdString();
        RecordedRun run(p, options, where);
        run.prepare().add_callback(std::make_shared<OverflowAt>(std::set<int64_t>{4}));
        QCOMPARE(run.run(nullptr).status, RunStatus::Finished);
        const store::RunStore store = store::RunStore::open(where.store_path);
        const auto scales = store.metric_series(run.id(), "grad_scale");
        const auto skipped = store.metric_series(run.id(), "skipped_step");
        const std::vector<double> want = expected_scales(64, 2, 10, {4});
        QCOMPARE(scales.size(), want.size());
        QCOMPARE(skipped.size(), want.size());
        for (size_t i = 0; i < want.size(); ++i) {
            QCOMPARE(scales[i].step, int64_t(i + 1));
            QCOMPARE(scales[i].value, want[i]);
            QCOMPARE(skipped[i].value, i == 3 ? 1.0 : 0.0);
        }
        QCOMPARE(store.run(run.id()).device, std::string("cpu"));
        const auto params = store.params(run.id());
        QCOMPARE(params.at("device"), std::string("cpu"));
        QCOMPARE(params.at("precision"), std::string("float32"));
    }

    // float16 needs a CUDA device: on the CPU the trainer refuses it naming the key and why; a
    // project's training.device is checked (with the reason it cannot be used) before anything
    // is built, and --device (the `requested` device) overrides it.
    void deviceAndPrecisionAreChecked() {
        io::Project p = blobs_project(csv_, 1);
        QVERIFY(training_device(p) == kCPU);
        p.train.precision = myelin::spec::Precision::Float16;
        CHECK_ERROR(Error, Trainer(p, {}), "training.precision \"float16\" needs a CUDA device",
                    "on the CPU choose \"bfloat16\"");
        CHECK_ERROR(Error, training_device(p), "training.precision \"float16\"",
                    "training runs on cpu");
        p.train.precision = myelin::spec::Precision::BFloat16;
        QVERIFY(training_device(p) == kCPU);

        p.train.device = "cuda:0";
        const CudaStatus& cuda = cuda_status();
        if (!cuda.usable()) {
            CHECK_ERROR(Error, training_device(p), "the project's training.device \"cuda:0\"",
                        "not usable", cuda.reason.c_str());
            // The CLI's --device cpu overrides the project's device.
            QVERIFY(training_device(p, kCPU) == kCPU);
            // The checkpoint's project records where it trained.
            TrainerOptions options;
            options.device = training_device(p, kCPU);
            QCOMPARE(effective_project(p, options).train.device, std::string("cpu"));
        } else {
            qInfo("CUDA present (%s): the refusal on a machine without one is not checked here",
                  cuda.devices[0].summary().c_str());
        }
        p.train.device = "cuda:64";
        CHECK_ERROR(Error, training_device(p), "training.device \"cuda:64\"");
        p.train.device = "tpu";
        CHECK_ERROR(Error, training_device(p), "training.device: device 'tpu'");
    }

  private:
    QTemporaryDir dir_;
    std::string csv_;
};

QTEST_MAIN(TestTrainerPrecision)
#include "test_trainer_precision.moc"
