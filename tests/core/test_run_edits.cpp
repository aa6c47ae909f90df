// Changes to a run between steps (RunControl::request_edits, the studio's Change while paused):
// the learning rate from the next step on (a schedule scaled with it, groups keep their ratios),
// gradient clipping, a RunChanged event with what changed, and a schedule that sets the lr
// itself refusing it with a warning.
#include <myelin/io/project.h>
#include <myelin/train/callbacks.h>
#include <myelin/train/run_control.h>
#include <myelin/train/trainer.h>

#include <QtTest>

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
        p.train.scheduler_interval = "step";
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
        p.train.scheduler_interval = "step";
        RunEdits lr;
        lr.lr = 1e-5;
        r = train_with(p, 3, lr);
        QVERIFY(r.changes.empty());
        QCOMPARE(r.warnings.size(), size_t(1));
        QVERIFY(
            QString::fromStdString(r.warnings[0]).contains("OneCycleLR sets the learning rate"));
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
