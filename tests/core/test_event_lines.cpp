// Training events as JSON lines (train/event_lines.h): every carried kind round-trips exactly,
// non-finite numbers survive, plain output and unknown kinds are passed over, malformed lines
// name the field.
#include <myelin/error.h>
#include <myelin/train/event_lines.h>

#include <QtTest>

#include <cmath>
#include <limits>

using namespace myelin;
using namespace myelin::train;

namespace {

Event roundTrip(const Event& e) {
    const std::string line = event_line(e);
    if (line.empty() || line.find('\n') != std::string::npos) return Event(Finished{}, -1.0);
    auto parsed = parse_event_line(line + "\n");
    if (!parsed || !parsed->event) return Event(Finished{}, -2.0);
    return *parsed->event;
}

} // namespace

class TestEventLines : public QObject {
    Q_OBJECT

  private slots:
    void everyCarriedKindRoundTrips() {
        const double t = 1795574904.8291237;
        {
            const Event back = roundTrip(Event(RunStarted{"blobs \"2\"", 5, 68, 1, 68}, t));
            const auto* e = back.get<RunStarted>();
            QVERIFY(e);
            QCOMPARE(e->run_name, std::string("blobs \"2\""));
            QCOMPARE(e->epochs, int64_t(5));
            QCOMPARE(e->steps_per_epoch, int64_t(68));
            QCOMPARE(e->start_epoch, int64_t(1));
            QCOMPARE(e->start_step, int64_t(68));
            QCOMPARE(back.wall_time, t);
        }
        {
            StepMetrics m{2, 137, 0.123456789012345, 1e-3, 5000.5, {}, std::nullopt, false};
            m.layers.push_back({"features.0", 1.5, 2.5, 0.01, 0.002, 0.3});
            const Event back = roundTrip(Event(m, t));
            const auto* e = back.get<StepMetrics>();
            QVERIFY(e);
            QCOMPARE(e->step, int64_t(137));
            QCOMPARE(e->loss, m.loss); // exact: the writer keeps every digit
            QCOMPARE(e->lr, 1e-3);
            QCOMPARE(e->layers.size(), size_t(1));
            QCOMPARE(e->layers[0].layer, std::string("features.0"));
            QCOMPARE(e->layers[0].grad_max_abs, 0.3);
            QVERIFY(!e->grad_scale);
            QVERIFY(!e->step_skipped);
        }
        {
            // float16's loss scaling: the scale and a skipped step travel too.
            StepMetrics m{0, 9, 0.5, 1e-3, 100.0, {}, 32768.0, true};
            const Event back = roundTrip(Event(m, t));
            const auto* e = back.get<StepMetrics>();
            QVERIFY(e && e->grad_scale);
            QCOMPARE(*e->grad_scale, 32768.0);
            QVERIFY(e->step_skipped);
        }
        {
            EpochMetrics m{0, 68, {{"loss", 0.5}, {"accuracy", 0.75}}, {{"loss", 0.6}}, {}};
            m.confusion.num_classes = 2;
            m.confusion.counts = {3, 1, 0, 4};
            m.confusion.class_names = {"cat", "dog"};
            const Event back = roundTrip(Event(m, t));
            const auto* e = back.get<EpochMetrics>();
            QVERIFY(e);
            QCOMPARE(e->train, m.train);
            QCOMPARE(e->validation, m.validation);
            QCOMPARE(e->confusion.counts, m.confusion.counts);
            QCOMPARE(e->confusion.class_names, m.confusion.class_names);
        }
        {
            const Event back = roundTrip(Event(CheckpointSaved{"/a/b c.safetensors", 1, 68, true}));
            const auto* e = back.get<CheckpointSaved>();
            QVERIFY(e);
            QCOMPARE(e->path, std::string("/a/b c.safetensors"));
            QVERIFY(e->is_best);
        }
        {
            const Event back = roundTrip(Event(Progress{1, 5, 3, 68, 71, 340, 1234.5, -1.0}));
            const auto* e = back.get<Progress>();
            QVERIFY(e);
            QCOMPARE(e->total_steps, int64_t(340));
            QCOMPARE(e->eta_seconds, -1.0);
        }
        {
            const Event back = roundTrip(Event(LogMessage{LogLevel::Warning, "careful\nnow"}));
            const auto* e = back.get<LogMessage>();
            QVERIFY(e);
            QCOMPARE(int(e->level), int(LogLevel::Warning));
            QCOMPARE(e->text, std::string("careful\nnow"));
        }
        {
            const Event back = roundTrip(Event(RunError{"rank 1: boom", 2, 99, "fc1"}));
            const auto* e = back.get<RunError>();
            QVERIFY(e);
            QCOMPARE(e->message, std::string("rank 1: boom"));
            QCOMPARE(e->module, std::optional<std::string>("fc1"));
            const Event without = roundTrip(Event(RunError{"x", 0, 0, std::nullopt}));
            QVERIFY(!without.get<RunError>()->module);
        }
        {
            const Event back =
                roundTrip(Event(BreakpointFired{"nonfinite", "loss is nan", "fc2", 1, 5, true}));
            const auto* e = back.get<BreakpointFired>();
            QVERIFY(e);
            QCOMPARE(e->layer, std::optional<std::string>("fc2"));
            QVERIFY(e->paused);
        }
        {
            const Event back = roundTrip(
                Event(RunChanged{7, "lr 0.1 -> 0.01, froze fc1", {{"fc1", true}, {"fc2", false}}}));
            const auto* e = back.get<RunChanged>();
            QVERIFY(e);
            QCOMPARE(e->step, int64_t(7));
            QCOMPARE(e->what, std::string("lr 0.1 -> 0.01, froze fc1"));
            QCOMPARE(e->frozen.size(), size_t(2));
            QVERIFY(e->frozen[0] == std::make_pair(std::string("fc1"), true));
            QVERIFY(e->frozen[1] == std::make_pair(std::string("fc2"), false));
        }
        for (RunStatus s : {RunStatus::Finished, RunStatus::Stopped, RunStatus::Failed}) {
            const Event back = roundTrip(Event(Finished{s, 3, 204}));
            const auto* e = back.get<Finished>();
            QVERIFY(e);
            QCOMPARE(int(e->status), int(s));
            QCOMPARE(e->step, int64_t(204));
        }
    }

    void nonFiniteNumbersSurvive() {
        const double inf = std::numeric_limits<double>::infinity();
        StepMetrics m{
            0, 1, std::numeric_limits<double>::quiet_NaN(), inf, -inf, {}, std::nullopt, false};
        const Event back = roundTrip(Event(m));
        const auto* e = back.get<StepMetrics>();
        QVERIFY(e);
        QVERIFY(std::isnan(e->loss));
        QCOMPARE(e->lr, inf);
        QCOMPARE(e->samples_per_second, -inf);
    }

    void runCreatedLineRoundTrips() {
        const auto parsed = parse_event_line(run_created_line({42, "/tmp/runs \"x\".sqlite"}));
        QVERIFY(parsed && parsed->run && !parsed->event);
        QCOMPARE(parsed->run->run_id, int64_t(42));
        QCOMPARE(parsed->run->store_path, std::string("/tmp/runs \"x\".sqlite"));
    }

    void storeOnlyKindsAreNotWritten() {
        QVERIFY(event_line(Event(TensorSummaryEvent{})).empty());
        QVERIFY(event_line(Event(TimeGradientEvent{})).empty());
        QVERIFY(!event_line_carries(EventKind::FeatureMap));
        QVERIFY(event_line_carries(EventKind::StepMetrics));
    }

    void plainOutputAndUnknownKindsArePassedOver() {
        QVERIFY(!parse_event_line("run 1 \"blobs\" in /tmp/s.db"));
        QVERIFY(!parse_event_line(""));
        QVERIFY(!parse_event_line("{not json"));
        QVERIFY(!parse_event_line(R"({"event": "SomethingNewer", "time": 1})"));
    }

    void malformedLinesNameTheField() {
        try {
            parse_event_line(R"({"event": "Finished", "time": 1, "status": "done", "epoch": 0,
                                 "step": 1})");
            QFAIL("an unknown status was accepted");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("done"), e.what());
        }
        try {
            parse_event_line(R"({"event": "Progress", "time": 1})");
            QFAIL("a Progress without fields was accepted");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("no field 'epoch'"), e.what());
        }
        QVERIFY_THROWS_EXCEPTION(Error, parse_event_line(R"({"time": 1})"));
    }
};

QTEST_APPLESS_MAIN(TestEventLines)
#include "test_event_lines.moc"
