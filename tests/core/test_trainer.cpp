// The training engine on small CSV problems (fast): it learns; the same seed gives bit-identical
// losses; stop + resume equals training straight through (from an epoch-end and a mid-epoch
// checkpoint); gradient accumulation equals the big batch; early stopping; NaN detection names
// the module; frozen layers and lr multipliers; pause/stop from another thread; data that does
// not fit the model is refused with a message saying what to change; checkpoints round-trip and
// damaged ones are refused.
#include <myelin/error.h>
#include <myelin/io/checkpoint.h>
#include <myelin/io/project.h>
#include <myelin/io/safetensors.h>
#include <myelin/spec/components.h>
#include <myelin/tensor.h>
#include <myelin/train/trainer.h>

#include <QTemporaryDir>
#include <QtTest>

#include "test_support.h"

#include <atomic>
#include <cmath>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <thread>

using namespace myelin;
using namespace myelin::train;

namespace {

// 3 Gaussian blobs in 4-d, `rows` rows, class names a/b/c.
void write_blobs_csv(const std::string& path, int rows = 300) {
    std::mt19937 rng(7);
    std::normal_distribution<double> noise(0.0, 0.6);
    std::ofstream out(path);
    out << "x0,x1,x2,x3,label\n";
    const double centers[3][4] = {{2, 0, 0, 1}, {0, 2, 0, -1}, {0, 0, 2, 0}};
    for (int i = 0; i < rows; ++i) {
        int c = i % 3;
        for (int d = 0; d < 4; ++d)
            out << centers[c][d] + noise(rng) << ",";
        out << "abc"[c] << "\n";
    }
}

io::Project blobs_project(const std::string& csv, int64_t epochs = 3, int64_t batch = 16) {
    io::Project p;
    p.name = "blobs";
    auto& m = p.model;
    auto in = m.add_node("Input", "", {{"shape", std::vector<int64_t>{4}}});
    auto fc1 =
        m.add_node("Linear", "fc1", {{"in_features", int64_t(4)}, {"out_features", int64_t(16)}});
    auto act = m.add_node("ReLU", "act");
    auto drop = m.add_node("Dropout", "drop", {{"p", 0.1}});
    auto fc2 =
        m.add_node("Linear", "fc2", {{"in_features", int64_t(16)}, {"out_features", int64_t(3)}});
    auto out = m.add_node("Output");
    m.connect(in, fc1);
    m.connect(fc1, act);
    m.connect(act, drop);
    m.connect(drop, fc2);
    m.connect(fc2, out);
    p.data.source = {"csv",
                     {{"path", csv},
                      {"target_column", std::string("label")},
                      {"task", std::string("classification")},
                      {"test_fraction", 0.2}}};
    p.data.validation_fraction = 0.2;
    p.data.batch_size = batch;
    p.data.num_workers = 0;
    p.train.loss = {"CrossEntropyLoss", {}};
    p.train.optimizer = {"Adam", {{"lr", 0.01}}};
    p.train.epochs = epochs;
    p.train.seed = 5;
    p.train.capture.summaries_every = 5;
    p.train.capture.feature_maps_every = 7;
    return p;
}

// Collects every event (thread-safe enough for run() on this thread).
struct Recorder final : EventSink {
    std::vector<Event> events;
    void on_event(const Event& e) override { events.push_back(e); }
    std::vector<double> losses() const {
        std::vector<double> out;
        for (const auto& e : events)
            if (auto* m = e.get<StepMetrics>()) out.push_back(m->loss);
        return out;
    }
    template <typename P> int count() const {
        int n = 0;
        for (const auto& e : events)
            n += e.get<P>() != nullptr;
        return n;
    }
};

std::vector<float> weights_of(Trainer& t) {
    std::vector<float> out;
    for (const auto& [k, v] : t.model().state_dict()) {
        if (!is_floating(v.dtype())) continue;
        Tensor c = v.contiguous();
        out.insert(out.end(), c.data<float>(), c.data<float>() + c.numel());
    }
    return out;
}

} // namespace

class TestTrainer : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase();
    void learnsAndReports();
    void reproducible();
    void flushDenormalHoldsForTheRunOnly();
    void resumeEqualsStraightRun();
    void resumeMidEpoch();
    void accumulationEqualsBigBatch();
    void earlyStopping();
    void nanNamesTheModule();
    void frozenLayersDoNotMove();
    void transferLearningFromWeights();
    void stopAndPauseFromAnotherThread();
    void callbacksSeeTheHookPointsInOrder();
    void breakpointHoldsTheStepAndResumeFinishesIt();
    void breakConditionsReadAndWrite();
    void breakpointsChangeWhileTheRunGoes();
    void controlOutlivesTheTrainer();
    void offeredMetricsAreTheRecordedOnes();
    void dataMustFitTheModel();
    void regressionExample();
    void checkpointFileIsValidated();
    void registeredMetricIsComputedAndOffered(); // last: it registers a metric kind

  private:
    QTemporaryDir dir_;
    std::string csv_;
};

void TestTrainer::initTestCase() {
    QVERIFY(dir_.isValid());
    csv_ = dir_.filePath("blobs.csv").toStdString();
    write_blobs_csv(csv_);
}

void TestTrainer::learnsAndReports() {
    Recorder rec;
    TrainerOptions o;
    o.checkpoint_dir = dir_.filePath("learn").toStdString();
    Trainer t(blobs_project(csv_, 8), o);
    t.set_sink(&rec);
    QCOMPARE(t.data().train->size(), int64_t(192));
    QCOMPARE(t.data().validation->size(), int64_t(48));
    QCOMPARE(t.data().test->size(), int64_t(60));
    TrainResult r = t.run();
    QCOMPARE(r.status, RunStatus::Finished);
    QCOMPARE(r.steps, int64_t(8 * 12));
    QVERIFY2(r.validation.at("accuracy") > 0.9,
             qPrintable(QString::number(r.validation.at("accuracy"))));
    QVERIFY(r.test.at("accuracy") > 0.9);
    auto losses = rec.losses();
    QCOMPARE(losses.size(), size_t(96));
    QVERIFY(losses.back() < losses.front() * 0.5);
    QCOMPARE(rec.count<RunStarted>(), 1);
    QCOMPARE(rec.count<EpochMetrics>(), 8);
    QCOMPARE(rec.count<Finished>(), 1);
    QVERIFY(rec.count<TensorSummaryEvent>() > 0);
    QVERIFY(rec.count<FeatureMapEvent>() > 0);
    // Per-layer stats on every step, for the layers with parameters.
    for (const auto& e : rec.events)
        if (auto* m = e.get<StepMetrics>()) {
            QCOMPARE(m->layers.size(), size_t(2));
            QCOMPARE(QString::fromStdString(m->layers[0].layer), QStringLiteral("fc1"));
            QVERIFY(m->layers[0].grad_norm > 0 && m->layers[0].update_ratio > 0);
        }
    // Activation and gradient summaries of every layer on capture steps.
    bool act = false, grad = false;
    for (const auto& e : rec.events)
        if (auto* s = e.get<TensorSummaryEvent>()) {
            act = act || (s->kind == SummaryKind::Activation && s->layer == "act");
            grad = grad || (s->kind == SummaryKind::Gradient && s->layer == "fc1");
            QCOMPARE(s->summary.histogram.size(), size_t(64));
        }
    QVERIFY(act && grad);
    // Confusion matrix of the validation set in the epoch metrics.
    for (const auto& e : rec.events)
        if (auto* m = e.get<EpochMetrics>()) {
            QCOMPARE(m->confusion.num_classes, int64_t(3));
            int64_t total = 0;
            for (auto c : m->confusion.counts)
                total += c;
            QCOMPARE(total, int64_t(48));
        }
    QVERIFY(std::filesystem::exists(r.best_checkpoint));
    QVERIFY(std::filesystem::exists(r.last_checkpoint));
    // keep_last = 2: only the two newest periodic checkpoints remain.
    int periodic = 0;
    for (const auto& f : std::filesystem::directory_iterator(o.checkpoint_dir))
        periodic += f.path().filename().string().starts_with("epoch-");
    QCOMPARE(periodic, 2);
    auto progress = t.progress();
    QCOMPARE(progress.step, int64_t(96));
    QCOMPARE(progress.total_steps, int64_t(96));
}

void TestTrainer::reproducible() {
    auto run = [&] {
        Recorder rec;
        Trainer t(blobs_project(csv_, 2), {});
        t.set_sink(&rec);
        t.run();
        return std::make_pair(rec.losses(), weights_of(t));
    };
    auto a = run(), b = run();
    QCOMPARE(a.first.size(), size_t(24));
    QVERIFY(a.first == b.first);   // bit-identical losses
    QVERIFY(a.second == b.second); // and weights
    // Another seed gives another run.
    io::Project p = blobs_project(csv_, 2);
    p.train.seed = 6;
    Recorder rec;
    Trainer t(p, {});
    t.set_sink(&rec);
    t.run();
    QVERIFY(rec.losses() != a.first);
}

// training.flush_denormal: on for the run (every step sees it; a tensor op on the run's thread
// flushes a denormal product to 0), off again afterwards; the run itself still learns.
void TestTrainer::flushDenormalHoldsForTheRunOnly() {
    struct ModeProbe : TrainerCallback {
        int steps = 0, flushed_steps = 0;
        bool product_flushed = true;
        const Tensor tiny = full({70000}, 1e-39f), half = full({70000}, 0.5f); // two shares
        void after_optimizer_step(Trainer&, StepMetrics&) override {
            ++steps;
            if (flush_denormal()) ++flushed_steps;
            for (float v : mul(tiny, half).to_vector<float>())
                product_flushed = product_flushed && v == 0.0f;
        }
    };
    QVERIFY(!flush_denormal());
    io::Project p = blobs_project(csv_, 2);
    p.train.flush_denormal = true;
    Trainer t(p, {});
    auto probe = std::make_shared<ModeProbe>();
    t.add_callback(probe);
    const TrainResult r = t.run();
    QCOMPARE(int(r.status), int(RunStatus::Finished));
    QCOMPARE(probe->steps, 24);
    QCOMPARE(probe->flushed_steps, 24);
    QVERIFY(probe->product_flushed);
    QVERIFY(!flush_denormal());
    // The CLI's override sets it the same way.
    TrainerOptions o;
    o.flush_denormal = true;
    QVERIFY(effective_project(blobs_project(csv_, 2), o).train.flush_denormal);
}

void TestTrainer::resumeEqualsStraightRun() {
    io::Project p = blobs_project(csv_, 2);
    p.train.scheduler = spec::Choice{"StepLR", {{"step_size", int64_t(1)}, {"gamma", 0.5}}};
    Recorder straight;
    Trainer a(p, {});
    a.set_sink(&straight);
    a.run();

    TrainerOptions first;
    first.epochs = 1;
    first.checkpoint_dir = dir_.filePath("resume").toStdString();
    Recorder part1;
    Trainer b(p, first);
    b.set_sink(&part1);
    TrainResult r1 = b.run();
    QVERIFY(std::filesystem::exists(r1.last_checkpoint));

    TrainerOptions second;
    second.resume_from = r1.last_checkpoint;
    Recorder part2;
    Trainer c(p, second);
    c.set_sink(&part2);
    TrainResult r2 = c.run();
    QCOMPARE(r2.status, RunStatus::Finished);
    auto joined = part1.losses();
    auto rest = part2.losses();
    joined.insert(joined.end(), rest.begin(), rest.end());
    QCOMPARE(part1.losses().size(), size_t(12));
    QCOMPARE(straight.losses().size(), size_t(24));
    QVERIFY(joined == straight.losses());
    QVERIFY(weights_of(c) == weights_of(a));
    QCOMPARE(r2.steps, int64_t(24));
}

void TestTrainer::resumeMidEpoch() {
    io::Project p = blobs_project(csv_, 2);
    Recorder straight;
    Trainer a(p, {});
    a.set_sink(&straight);
    a.run();

    TrainerOptions first;
    first.max_steps = 17; // stops inside epoch 2
    first.checkpoint_dir = dir_.filePath("mid").toStdString();
    Recorder part1;
    Trainer b(p, first);
    b.set_sink(&part1);
    TrainResult r1 = b.run();
    QCOMPARE(r1.status, RunStatus::Stopped);
    QCOMPARE(r1.steps, int64_t(17));
    QVERIFY(r1.last_checkpoint.filename().string().starts_with("step-"));
    io::Checkpoint ck = io::load_checkpoint(r1.last_checkpoint);
    QCOMPARE(ck.position.epoch, int64_t(1));
    QCOMPARE(ck.position.batch_in_epoch, int64_t(5));

    TrainerOptions second;
    second.resume_from = r1.last_checkpoint;
    Recorder part2;
    Trainer c(p, second);
    c.set_sink(&part2);
    c.run();
    auto joined = part1.losses();
    auto rest = part2.losses();
    joined.insert(joined.end(), rest.begin(), rest.end());
    QCOMPARE(rest.size(), size_t(7));
    QVERIFY(joined == straight.losses());
    QVERIFY(weights_of(c) == weights_of(a));
}

void TestTrainer::accumulationEqualsBigBatch() {
    // Without dropout (randomness would differ), 4 micro-batches of 12 == one batch of 48.
    auto make = [&](int64_t batch, int64_t accumulation) {
        io::Project p = blobs_project(csv_, 2, batch);
        p.train.accumulation_steps = accumulation;
        p.model.node(4).attrs.set("p", 0.0);
        p.train.optimizer = {"SGD", {{"lr", 0.1}, {"momentum", 0.9}}};
        return p;
    };
    Recorder big_rec, small_rec;
    Trainer big(make(48, 1), {});
    big.set_sink(&big_rec);
    big.run();
    Trainer small(make(12, 4), {});
    small.set_sink(&small_rec);
    small.run();
    QCOMPARE(small.steps_per_epoch(), big.steps_per_epoch());
    auto a = big_rec.losses(), b = small_rec.losses();
    QCOMPARE(a.size(), size_t(8));
    QCOMPARE(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
        QVERIFY2(std::abs(a[i] - b[i]) < 1e-5, qPrintable(QString::number(i)));
    auto wa = weights_of(big), wb = weights_of(small);
    for (size_t i = 0; i < wa.size(); ++i)
        QVERIFY(std::abs(wa[i] - wb[i]) < 1e-5);
}

void TestTrainer::earlyStopping() {
    io::Project p = blobs_project(csv_, 50);
    p.train.early_stopping = {true, "val_loss", myelin::spec::MetricMode::Min, 2,
                              10.0}; // no improvement counts
    Recorder rec;
    Trainer t(p, {});
    t.set_sink(&rec);
    TrainResult r = t.run();
    QCOMPARE(r.status, RunStatus::Finished);
    QVERIFY(r.early_stopped);
    QCOMPARE(r.epochs_completed, int64_t(3)); // first sets the best, two bad epochs stop it
    QCOMPARE(rec.count<EpochMetrics>(), 3);
    // An unknown metric is a clear error.
    p.train.early_stopping.metric = "val_bogus";
    Trainer bad(p, {});
    TrainResult br = bad.run();
    QCOMPARE(br.status, RunStatus::Failed);
    QVERIFY2(QString::fromStdString(br.error).contains(
                 "unknown metric 'val_bogus' (available: val_accuracy"),
             br.error.c_str());
}

void TestTrainer::nanNamesTheModule() {
    // A huge learning rate blows the weights up; the first non-finite output is named.
    io::Project p = blobs_project(csv_, 3);
    p.train.optimizer = {"SGD", {{"lr", 1e30}}};
    TrainerOptions o;
    o.checkpoint_dir = dir_.filePath("nan").toStdString();
    Recorder rec;
    Trainer t(p, o);
    t.set_sink(&rec);
    TrainResult r = t.run();
    QCOMPARE(r.status, RunStatus::Failed);
    QVERIFY2(QString::fromStdString(r.error).contains("at step"), r.error.c_str());
    QVERIFY2(r.error_module.has_value(), r.error.c_str());
    QVERIFY(*r.error_module == "fc1" || *r.error_module == "fc2" || *r.error_module == "act");
    QCOMPARE(rec.count<RunError>(), 1);
    // No checkpoint of the broken state was written.
    QVERIFY(!std::filesystem::exists(o.checkpoint_dir) ||
            std::filesystem::is_empty(o.checkpoint_dir) || r.last_checkpoint.empty());
}

void TestTrainer::frozenLayersDoNotMove() {
    io::Project p = blobs_project(csv_, 1);
    p.model.node(2).frozen = true;       // fc1
    p.model.node(5).lr_multiplier = 0.5; // fc2
    Trainer t(p, {});
    Tensor before = t.model().child("fc1")->param("weight").clone();
    Tensor fc2_before = t.model().child("fc2")->param("weight").clone();
    t.run();
    QVERIFY(allclose(t.model().child("fc1")->param("weight"), before, 0, 0));
    QVERIFY(!allclose(t.model().child("fc2")->param("weight"), fc2_before, 0, 0));
}

void TestTrainer::transferLearningFromWeights() {
    // Weights from elsewhere (PyTorch writes the same names): a plain safetensors state_dict.
    Trainer pretrained(blobs_project(csv_, 2), {});
    pretrained.run();
    auto weights = dir_.filePath("pretrained.safetensors").toStdString();
    io::save_safetensors(weights, pretrained.model().state_dict());

    io::Project p = blobs_project(csv_, 1);
    p.model.node(2).frozen = true; // fc1: a frozen backbone
    TrainerOptions o;
    o.init_weights = weights;
    Recorder rec;
    Trainer t(p, o);
    t.set_sink(&rec);
    Tensor loaded = t.model().child("fc1")->param("weight").clone();
    QVERIFY(allclose(loaded, pretrained.model().child("fc1")->param("weight"), 0, 0));
    t.run();
    QVERIFY(allclose(t.model().child("fc1")->param("weight"), loaded, 0, 0));
    QCOMPARE(rec.count<LogMessage>() >= 1, true); // the test metrics line at least

    // Partial weights: the rest keeps its initialisation, with a warning naming it.
    auto partial = dir_.filePath("partial.safetensors").toStdString();
    io::save_safetensors(partial, {{"fc1.weight", pretrained.model().child("fc1")->param("weight")},
                                   {"head.bias", zeros({3})}});
    o.init_weights = partial;
    Recorder warn;
    Trainer t2(p, o);
    t2.set_sink(&warn);
    t2.run();
    bool missing = false, unexpected = false;
    for (const auto& e : warn.events)
        if (auto* l = e.get<LogMessage>()) {
            missing = missing || l->text.find("3 tensor(s) not in") != std::string::npos;
            unexpected =
                unexpected || l->text.find("are not in the model: head.bias") != std::string::npos;
        }
    QVERIFY(missing && unexpected);
    // Wrong shapes are an error naming the tensor.
    auto wrong = dir_.filePath("wrong.safetensors").toStdString();
    io::save_safetensors(wrong, {{"fc1.weight", zeros({3, 3})}});
    o.init_weights = wrong;
    QVERIFY(error_of<Error>([&] { Trainer x(p, o); }).contains("fc1.weight"));
}

void TestTrainer::stopAndPauseFromAnotherThread() {
    io::Project p = blobs_project(csv_, 1000);
    TrainerOptions o;
    o.checkpoint_dir = dir_.filePath("stop").toStdString();
    Trainer t(p, o);
    std::atomic<int64_t> steps{0};
    CallbackSink sink([&](const Event& e) {
        if (e.get<StepMetrics>()) ++steps;
    });
    t.set_sink(&sink);
    TrainResult r;
    std::thread worker([&] { r = t.run(); });
    while (steps < 5)
        std::this_thread::yield();
    t.pause();
    // While paused the step count stops moving (checked after the loop reached the pause).
    while (!t.paused())
        std::this_thread::yield();
    int64_t at_pause = steps;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    QVERIFY(steps - at_pause <= 1); // the step in flight may finish
    t.resume();
    while (steps < at_pause + 5)
        std::this_thread::yield();
    t.stop();
    worker.join();
    QCOMPARE(r.status, RunStatus::Stopped);
    QVERIFY(std::filesystem::exists(r.last_checkpoint));
    QVERIFY(r.steps < 1000 * 12);
    // Stop while paused also ends the run.
    Trainer t2(p, {});
    t2.pause();
    std::thread w2([&] { r = t2.run(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    t2.stop();
    w2.join();
    QCOMPARE(r.status, RunStatus::Stopped);
    QCOMPARE(r.steps, int64_t(0));
}

// A breakpoint set to pause holds the run inside the step that tripped it, before the optimizer
// step; resumed, the run goes on exactly as one without the breakpoint.
void TestTrainer::breakpointHoldsTheStepAndResumeFinishesIt() {
    const io::Project p = blobs_project(csv_, 2);
    Trainer plain(p, {});
    Recorder plain_events;
    plain.set_sink(&plain_events);
    QCOMPARE(plain.run().status, RunStatus::Finished);

    TrainerOptions o;
    o.breakpoints = std::make_shared<BreakpointSet>(parse_break_conditions("loss-above=0@7"));
    o.on_break = BreakAction::Pause;
    Trainer t(p, o);
    std::mutex mutex;
    std::vector<Event> events;
    std::atomic<bool> fired{false};
    CallbackSink sink([&](const Event& e) {
        std::lock_guard lock(mutex);
        events.push_back(e);
        if (e.get<BreakpointFired>()) fired = true;
    });
    t.set_sink(&sink);
    TrainResult r;
    std::thread worker([&] { r = t.run(); });
    while (!fired)
        std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    {
        std::lock_guard lock(mutex);
        QVERIFY(t.paused());
        QCOMPARE(t.step(), int64_t(6)); // step 7 is held, not applied
        const BreakpointFired* b = nullptr;
        int steps = 0;
        for (const auto& e : events) {
            if (e.get<StepMetrics>()) ++steps;
            if (!b) b = e.get<BreakpointFired>();
        }
        QCOMPARE(steps, 6);
        QCOMPARE(b->step, int64_t(7));
        QCOMPARE(b->condition, std::string("loss-above=0@7"));
        QVERIFY(b->paused);
        QVERIFY(!b->layer);
    }
    t.resume();
    worker.join();
    QCOMPARE(r.status, RunStatus::Finished);
    int fires = 0;
    std::vector<double> losses;
    for (const auto& e : events) {
        fires += e.get<BreakpointFired>() != nullptr;
        if (auto* m = e.get<StepMetrics>()) losses.push_back(m->loss);
    }
    QCOMPARE(fires, 1);                      // once per run, though the loss stays above 0
    QCOMPARE(losses, plain_events.losses()); // exactly the run without the breakpoint
    QVERIFY(weights_of(t) == weights_of(plain));

    // Stopped while held: the step is given up, the checkpoint is of the position before it.
    o.checkpoint_dir = dir_.filePath("held").toStdString();
    Trainer held(p, o);
    fired = false;
    CallbackSink notice([&](const Event& e) {
        if (e.get<BreakpointFired>()) fired = true;
    });
    held.set_sink(&notice);
    std::thread w2([&] { r = held.run(); });
    while (!fired)
        std::this_thread::yield();
    held.stop();
    w2.join();
    QCOMPARE(r.status, RunStatus::Stopped);
    QCOMPARE(r.steps, int64_t(6));
    QVERIFY(r.last_checkpoint.filename() == "step-0000006.safetensors");
}

// Conditions set while the run goes apply from the next optimizer step on.
void TestTrainer::breakpointsChangeWhileTheRunGoes() {
    TrainerOptions o;
    o.breakpoints = std::make_shared<BreakpointSet>(); // none yet
    o.on_break = BreakAction::Stop;
    Trainer t(blobs_project(csv_, 50), o);
    std::atomic<int64_t> fired_at{-1};
    std::atomic<int64_t> steps{0};
    CallbackSink sink([&](const Event& e) {
        if (e.get<StepMetrics>() && ++steps == 5)
            o.breakpoints->set(parse_break_conditions("loss-above=0")); // from the training thread
        if (auto* b = e.get<BreakpointFired>()) fired_at = b->step;
    });
    t.set_sink(&sink);
    const TrainResult r = t.run();
    QCOMPARE(r.status, RunStatus::Stopped);
    QCOMPARE(fired_at.load(), int64_t(6)); // the first step that began after the change
    QCOMPARE(r.steps, int64_t(5));
}

void TestTrainer::breakConditionsReadAndWrite() {
    const auto all =
        parse_break_conditions(" nonfinite, grad-spike=10,dead=0.9 ,loss-above=2.5@100");
    QCOMPARE(all.size(), size_t(4));
    QCOMPARE(all[1].kind, BreakCondition::Kind::GradSpike);
    QCOMPARE(all[1].threshold, 10.0);
    QCOMPARE(all[3].from_step, int64_t(100));
    std::string written;
    for (const auto& c : all)
        written += (written.empty() ? "" : ",") + format_break_condition(c);
    QCOMPARE(written, std::string("nonfinite,grad-spike=10,dead=0.9,loss-above=2.5@100"));
    QCOMPARE(parse_break_conditions(written), all);
    QCOMPARE(parse_break_conditions("nonfinite,nonfinite").size(), size_t(1));
    for (const char* bad : {"", "dead", "dead=0", "dead=1.5", "grad-spike=1", "grad-spike=x",
                            "loss-above=1@-3", "loss-above=1@2.5", "nonfinite=1", "nan", "a,,b"})
        QVERIFY2(!error_of<Error>([&] { parse_break_conditions(bad); }).contains("no exception"),
                 bad);
    QVERIFY(error_of<Error>([] { parse_break_conditions("dead=2"); }).contains("dead=0.9"));
}

// A callback added from outside sees every hook point, in the documented order: with 2
// micro-batches per step, each step reads before_step, (forward, loss) twice, backward,
// optimizer step, reported; each epoch ends with on_epoch_end after its EpochMetrics.
void TestTrainer::callbacksSeeTheHookPointsInOrder() {
    struct Log final : TrainerCallback {
        std::string text;
        void on_run_start(Trainer&) override { text += "start "; }
        void before_step(Trainer& t) override { text += "s" + std::to_string(t.step() + 1) + ":"; }
        void after_forward(Trainer&, const ForwardPass& pass) override {
            text += std::isfinite(pass.loss_value()) && pass.output.dim() == 2 ? "f" : "?";
        }
        // The micro-batch's backward has run: the first layer has a gradient.
        void after_loss(Trainer& t, const ForwardPass& pass) override {
            const bool backward_done = t.model().parameters().front().grad().defined();
            text += std::isfinite(pass.loss_value()) && backward_done ? "l" : "?";
        }
        void after_backward(Trainer&) override { text += "b"; }
        void after_optimizer_step(Trainer& t, StepMetrics& m) override {
            text += m.step == t.step() && m.layers.size() == 2 ? "o" : "?";
        }
        void after_step_reported(Trainer&) override { text += "r "; }
        void on_epoch_end(Trainer& t, EpochEnd& end) override {
            text += "e" + std::to_string(t.epoch() + 1) + (end.last_epoch ? "!" : "") + " ";
        }
        void on_run_end(Trainer&, TrainResult& r) override {
            text += r.status == RunStatus::Finished ? "end" : "failed";
        }
    };
    io::Project p = blobs_project(csv_, 2, 64); // 180 training rows: 3 batches, 2 steps
    p.train.accumulation_steps = 2;
    Trainer t(p, {});
    auto log = std::make_shared<Log>();
    t.add_callback(log);
    QCOMPARE(t.run().status, RunStatus::Finished);
    QCOMPARE(QString::fromStdString(log->text),
             QStringLiteral("start s1:flflbor s2:flbor e1 s3:flflbor s4:flbor e2! end"));

    // A callback's error fails the run with its message and layer.
    struct Breaks final : TrainerCallback {
        void after_backward(Trainer& t) override {
            if (t.step() == 2) throw TrainingFailure("breakpoint hit", std::string("fc2"));
        }
    };
    Trainer broken(p, {});
    broken.add_callback(std::make_shared<Breaks>());
    const TrainResult r = broken.run();
    QCOMPARE(r.status, RunStatus::Failed);
    QCOMPARE(QString::fromStdString(r.error), QStringLiteral("breakpoint hit"));
    QCOMPARE(QString::fromStdString(r.error_module.value_or("")), QStringLiteral("fc2"));
    QCOMPARE(r.steps, int64_t(2));
}

// The run's RunControl is shared: a stop requested before the Trainer exists is honoured, and
// the control stays usable after the Trainer is gone.
void TestTrainer::controlOutlivesTheTrainer() {
    auto control = std::make_shared<RunControl>();
    control->stop();
    TrainResult r;
    {
        TrainerOptions o;
        o.control = control;
        Trainer t(blobs_project(csv_, 5), o);
        QCOMPARE(t.shared_control(), control);
        r = t.run();
    }
    QCOMPARE(r.status, RunStatus::Stopped);
    QCOMPARE(r.steps, int64_t(0));
    control->pause();
    control->resume();
    QVERIFY(!control->wait_while_paused());
}

// train::epoch_metrics (what the studio offers for early stopping and plateau schedules) names
// exactly the epoch metrics a run records, each with its direction.
void TestTrainer::offeredMetricsAreTheRecordedOnes() {
    Trainer t(blobs_project(csv_, 1), {});
    Recorder rec;
    t.set_sink(&rec);
    QCOMPARE(t.run().status, RunStatus::Finished);
    std::set<std::string> recorded;
    for (const auto& e : rec.events)
        if (const auto* m = e.get<EpochMetrics>()) {
            for (const auto& [k, v] : m->train)
                recorded.insert("train_" + k);
            for (const auto& [k, v] : m->validation)
                recorded.insert("val_" + k);
        }
    std::set<std::string> offered;
    for (const MetricInfo& m : epoch_metrics(true, 3, true))
        offered.insert(m.name);
    QCOMPARE(offered, recorded);
    QVERIFY(higher_is_better("val_accuracy") && higher_is_better("train_macro_f1") &&
            higher_is_better("val_r2") && higher_is_better("top5_accuracy"));
    QVERIFY(!higher_is_better("val_loss") && !higher_is_better("val_rmse") &&
            !higher_is_better("train_loss") && !higher_is_better("val_mae"));
    // One description per metric, which every room reads: labels, and one score per task.
    QCOMPARE(spec::describe_metric("val_macro_f1")->label, std::string("macro F1"));
    QCOMPARE(spec::describe_metric("test_r2")->label, std::string("R²"));
    QVERIFY(!spec::describe_metric("lr") && !spec::describe_metric("grad_norm/fc1"));
    int scores[3] = {};
    for (const spec::MetricDescription& d : spec::metric_descriptions()) {
        QVERIFY2(!d.label.empty(), d.name.c_str());
        scores[int(d.task)] += d.score ? 1 : 0;
    }
    QCOMPARE(scores[int(spec::MetricTask::Classification)], 1);
    QCOMPARE(scores[int(spec::MetricTask::Regression)], 1);
    // The score lists are the ones scalars() fills.
    RegressionMetrics regression;
    std::vector<std::string> keys;
    for (const auto& [k, v] : regression.scalars())
        keys.push_back(k);
    auto names = RegressionMetrics::names();
    std::sort(names.begin(), names.end());
    QCOMPARE(keys, names);
    for (int64_t classes : {3, 5, 10}) {
        ClassificationMetrics cls(classes);
        keys.clear();
        for (const auto& [k, v] : cls.scalars())
            keys.push_back(k);
        names = ClassificationMetrics::names(classes);
        std::sort(names.begin(), names.end());
        QCOMPARE(keys, names);
    }
    // Regression records its errors and R² on validation only.
    const auto metrics = epoch_metrics(false, 0, true);
    QCOMPARE(metrics.size(), size_t(6)); // val_loss, val_mae, val_mse, val_rmse, val_r2, train_loss
    QCOMPARE(epoch_metrics(false, 0, false).size(), size_t(1));
}

void TestTrainer::dataMustFitTheModel() {
    io::Project wrong_input = blobs_project(csv_);
    wrong_input.model.node(1).attrs.set("shape", std::vector<int64_t>{5});
    wrong_input.model.node(2).attrs.set("in_features", int64_t(5));
    QCOMPARE(error_of<Error>([&] { Trainer t(wrong_input, {}); }),
             QStringLiteral("the model's Input expects examples of shape [5] but the data gives "
                            "[4] (set the Input node's shape to [4])"));
    io::Project wrong_classes = blobs_project(csv_);
    wrong_classes.model.node(5).attrs.set("out_features", int64_t(10));
    QVERIFY(error_of<Error>([&] {
                Trainer t(wrong_classes, {});
            }).contains("needs [N, 3] (set the last layer's output size to 3)"));
    // A loss of float targets on class indices names the losses that take them (from the
    // loss records, not a list in the trainer).
    io::Project regression_loss = blobs_project(csv_);
    regression_loss.train.loss = {"MSELoss", {}};
    const QString wrong_target = error_of<Error>([&] { Trainer t(regression_loss, {}); });
    QVERIFY2(wrong_target.contains("MSELoss needs float targets of the output's shape; this data "
                                   "has class indices: choose CrossEntropyLoss"),
             qPrintable(wrong_target));
    io::Project invalid = blobs_project(csv_);
    invalid.model.node(2).attrs.set("in_features", int64_t(7));
    QVERIFY(error_of<Error>([&] { Trainer t(invalid, {}); }).contains("the model cannot be built"));
    io::Project missing = blobs_project(dir_.filePath("nope.csv").toStdString());
    QVERIFY(error_of<Error>([&] { Trainer t(missing, {}); }).contains("nope.csv"));
}

void TestTrainer::regressionExample() {
    const std::string path =
        std::string(MYELIN_SOURCE_DIR) + "/resources/examples/tabular_regression.myelin";
    io::Project p = io::load_project(path);
    TrainerOptions o;
    o.project_dir = std::filesystem::path(path).parent_path();
    o.epochs = 15;
    Trainer t(p, o);
    TrainResult r = t.run();
    QCOMPARE(r.status, RunStatus::Finished);
    QVERIFY2(r.test.at("r2") > 0.9, qPrintable(QString::number(r.test.at("r2"))));
    QVERIFY(r.validation.count("rmse"));
}

void TestTrainer::checkpointFileIsValidated() {
    TrainerOptions o;
    o.epochs = 1;
    o.checkpoint_dir = dir_.filePath("ck").toStdString();
    Trainer t(blobs_project(csv_), o);
    TrainResult r = t.run();
    io::Checkpoint c = io::load_checkpoint(r.last_checkpoint);
    QCOMPARE(c.position.epoch, int64_t(1));
    QCOMPARE(c.position.step, int64_t(12));
    QCOMPARE(c.optimizer_kind, std::string("Adam"));
    QCOMPARE(c.model.size(), size_t(4)); // fc1.weight, fc1.bias, fc2.weight, fc2.bias
    QCOMPARE(QString::fromStdString(c.model[0].first), QStringLiteral("fc1.weight"));
    QCOMPARE(c.optimizer.state.size(), size_t(4));
    QVERIFY(c.optimizer.state.at(0).count("exp_avg"));
    QVERIFY(!c.project_json.empty());
    // The file's model tensors are exactly the state_dict (what PyTorch's load_state_dict gets).
    auto file = io::load_safetensors(r.last_checkpoint);
    QVERIFY(file.find("fc2.bias") && file.find("optimizer.state.3.exp_avg_sq"));
    // A weights-only safetensors file is not a checkpoint to resume from.
    auto plain = dir_.filePath("plain.safetensors").toStdString();
    io::save_safetensors(plain, t.model().state_dict());
    QVERIFY(
        error_of<Error>([&] { io::load_checkpoint(plain); }).contains("not a Myelin checkpoint"));
    // Damaged metadata is named.
    auto bad = dir_.filePath("bad.safetensors").toStdString();
    io::save_safetensors(bad, c.model,
                         {{"format", io::kCheckpointFormat}, {"training", "{\"epoch\": -1}"}});
    QVERIFY(error_of<Error>([&] {
                io::load_checkpoint(bad);
            }).contains("training.epoch: expected an integer >= 0"));
    // A checkpoint of another model does not resume.
    io::Project other = blobs_project(csv_);
    other.model.node(2).attrs.set("out_features", int64_t(8));
    other.model.node(5).attrs.set("in_features", int64_t(8));
    TrainerOptions ro;
    ro.resume_from = r.last_checkpoint;
    QVERIFY(error_of<Error>([&] {
                Trainer x(other, ro);
            }).contains("the checkpoint does not fit this model"));
}

// A metric kind registered from outside (as a plugin would) is computed on validation and
// test, offered for early stopping with its direction, and early stopping can watch it.
void TestTrainer::registeredMetricIsComputedAndOffered() {
    class ExamplesSeen final : public spec::MetricAccumulator {
      public:
        void update(const Tensor& outputs, const Tensor&) override { seen_ += outputs.size(0); }
        double value() const override { return double(seen_); }

      private:
        int64_t seen_ = 0;
    };
    spec::MetricKind kind;
    kind.name = "examples_seen";
    kind.doc = "How many examples were evaluated.";
    kind.task = spec::MetricTask::Classification;
    kind.higher_is_better = true;
    kind.build = [] { return std::make_unique<ExamplesSeen>(); };
    spec::register_kind(kind);
    // A built-in metric's name, a second registration and options are refused.
    spec::MetricKind clash = kind;
    clash.name = "accuracy";
    QVERIFY(error_of<Error>([&] { spec::register_kind(clash); }).contains("built-in"));
    QVERIFY(error_of<Error>([&] { spec::register_kind(kind); }).contains("already registered"));

    bool offered = false;
    for (const MetricInfo& m : epoch_metrics(true, 3, true))
        offered = offered || (m.name == "val_examples_seen" && m.higher_is_better);
    QVERIFY(offered);
    for (const MetricInfo& m : epoch_metrics(false, 0, true))
        QVERIFY(m.name != "val_examples_seen"); // a classification metric only

    io::Project p = blobs_project(csv_, 3);
    p.train.early_stopping.enabled = true;
    p.train.early_stopping.metric = "val_examples_seen";
    p.train.early_stopping.mode = myelin::spec::MetricMode::Max;
    p.train.early_stopping.patience = 1;
    Trainer t(p, {});
    TrainResult r = t.run();
    QCOMPARE(r.status, RunStatus::Finished);
    QCOMPARE(r.validation.at("examples_seen"), double(t.data().validation->size()));
    QCOMPARE(r.test.at("examples_seen"), double(t.data().test->size()));
    QVERIFY(r.early_stopped); // it never improves after the first epoch
}

QTEST_GUILESS_MAIN(TestTrainer)
#include "test_trainer.moc"
