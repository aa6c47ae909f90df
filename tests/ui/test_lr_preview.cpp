// The Training page's learning-rate preview with huge values (the monkey froze the studio for
// seconds stepping T_max, a warmup or the epochs up): at most kMaxPreviewPoints points whatever
// the run's length, each the schedule's own lr at its step, with the corners (the warmup's end,
// StepLR's and MultiStepLR's drops, restarts, OneCycleLR's peak) kept exactly. How long each
// update and paint takes is printed, not asserted. Screenshots land in the artifacts folder.
#include "document/project_document.h"
#include "pages/lr_finder_dialog.h"
#include "pages/lr_preview_sampling.h"
#include "pages/training_page.h"
#include "ui_test_support.h"
#include "widgets/theme.h"

#include <myelin/io/project.h>
#include <myelin/optim/optimizer.h>
#include <myelin/train/components.h>

#include <qcustomplot.h>

#include <QApplication>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QLabel>
#include <QPointer>
#include <QPushButton>
#include <QSpinBox>
#include <QtTest>

#include <algorithm>
#include <functional>
#include <memory>
#include <set>
#include <vector>

using myelin::test::examplePath;
using myelin::ui::kMaxPreviewPoints;
using myelin::ui::ProjectDocument;
using myelin::ui::TrainingPage;

namespace {

// Fashion-MNIST's 54,000 training images in batches of 128.
constexpr int64_t kStepsPerEpoch = 422;

struct Fixture {
    ProjectDocument doc;
    TrainingPage page{&doc};
    Fixture() {
        doc.open(myelin::io::load_project(examplePath("fashion_cnn").toStdString()),
                 examplePath("fashion_cnn"));
        page.resize(1280, 800);
        page.show();
    }
    const myelin::spec::TrainSpec& train() const { return doc.project().train; }
    template <typename T> T* find(const char* name) {
        return page.findChild<T*>(QString::fromLatin1(name));
    }
    template <typename T> T* option(const char* name) {
        return find<QWidget>("schedulerOptions")
            ->findChild<T*>(QStringLiteral("attr_") + QLatin1String(name));
    }
    void choose(const char* comboName, const QString& data) {
        auto* combo = find<QComboBox>(comboName);
        QVERIFY(combo != nullptr);
        const int index = combo->findData(data);
        QVERIFY2(index >= 0, qPrintable(data));
        combo->setCurrentIndex(index);
    }
    QCustomPlot* plot() { return find<QCustomPlot>("lrPreviewPlot"); }
    // Runs `edit`, then paints the plot at once; prints both times and the points plotted.
    void measure(const char* what, const std::function<void()>& edit) {
        plot()->replot(QCustomPlot::rpImmediateRefresh); // a first paint's setup is not counted
        QElapsedTimer timer;
        timer.start();
        edit();
        const qint64 update = timer.elapsed();
        timer.restart();
        plot()->replot(QCustomPlot::rpImmediateRefresh);
        qInfo("%s: update %lld ms, paint %lld ms, %d points", what, update, timer.elapsed(),
              plot()->graph(0)->dataCount());
    }
    // A per-step schedule of `kind` over `epochs` epochs of Fashion-MNIST.
    void perStep(const char* kind, int epochs) {
        choose("schedulerKind", QString::fromLatin1(kind));
        choose("schedulerInterval", QStringLiteral("step"));
        measure(qPrintable(QStringLiteral("%1 over %2 epochs").arg(kind).arg(epochs)),
                [&] { find<QSpinBox>("trainEpochs")->setValue(epochs); });
        QCOMPARE(page.previewStepsPerEpoch(), kStepsPerEpoch);
    }
    // The plotted lr at `step` (x = step + 1); fails the test when that step is not plotted.
    double plotted(int64_t step) {
        const std::vector<double>& x = page.previewPositions();
        const auto it = std::lower_bound(x.begin(), x.end(), double(step + 1));
        if (it == x.end() || *it != double(step + 1)) {
            QTest::qFail(qPrintable(QStringLiteral("step %1 is not plotted").arg(step)), __FILE__,
                         __LINE__);
            return -1;
        }
        return page.previewValues()[size_t(it - x.begin())];
    }
};

// The project's schedule as the trainer builds it, for its own lr at any step.
struct Reference {
    std::unique_ptr<myelin::optim::Optimizer> optimizer;
    std::unique_ptr<myelin::train::Schedule> schedule;
    int64_t steps = 0;
    explicit Reference(const myelin::spec::TrainSpec& t) {
        steps = myelin::train::schedule_steps(t, kStepsPerEpoch);
        optimizer = myelin::train::make_preview_optimizer(t.optimizer);
        schedule = std::make_unique<myelin::train::Schedule>(*t.scheduler, *optimizer, steps);
    }
    double at(int64_t step) const { return *schedule->lr_at(step); }
};

// What bounds the preview's cost: at most kMaxPreviewPoints points, the first and the last step
// among them, each the schedule's own lr, the plot drawing exactly these.
void checkBounded(Fixture& f, const Reference& r) {
    const std::vector<double>& x = f.page.previewPositions();
    const std::vector<double>& lr = f.page.previewValues();
    QVERIFY(!lr.empty());
    QVERIFY2(int64_t(lr.size()) <= kMaxPreviewPoints, qPrintable(QString::number(lr.size())));
    QCOMPARE(x.size(), lr.size());
    QCOMPARE(x.front(), 1.0);
    QCOMPARE(x.back(), double(r.steps));
    QVERIFY(std::is_sorted(x.begin(), x.end()));
    QCPGraph* graph = f.plot()->graph(0);
    QCOMPARE(graph->dataCount(), int(lr.size()));
    for (size_t i = 0; i < lr.size(); ++i) {
        QCOMPARE(lr[i], r.at(int64_t(x[i]) - 1));
        QCOMPARE(graph->data()->at(int(i))->key, x[i]);
        QCOMPARE(graph->data()->at(int(i))->value, lr[i]);
    }
}

// The distinct values plotted.
std::set<double> levels(const std::vector<double>& values) {
    return {values.begin(), values.end()};
}

} // namespace

class TestLrPreview : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase();
    void warmupAndCosineOverAHugeRun();
    void stepLrDropsStayExact();
    void stepLrOfOneStepStillDecays();
    void restartsOverAHugeRun();
    void oneCycleAndMultiStepKeepTheirCorners();
    void noScheduleOverAHugeRun();
    void samplingIsBoundedForAnyCorners();
    void lrFinderOpensAndClosesWithHugeValues();
    void screenshots();
};

void TestLrPreview::initTestCase() {
    myelin::ui::applyStudioTheme(*qApp);
    QVERIFY2(QFileInfo::exists(examplePath("fashion_cnn")), qPrintable(examplePath("fashion_cnn")));
}

// Cosine over 10,000 epochs (4.2 million steps), T_max 10^7, a warmup of 10^6 steps, then
// 10^6 epochs: the same number of points each time, the warmup's peak exact.
void TestLrPreview::warmupAndCosineOverAHugeRun() {
    Fixture f;
    QVERIFY(QTest::qWaitForWindowExposed(&f.page));
    f.perStep("CosineAnnealingLR", 10000);
    checkBounded(f, Reference(f.train()));
    f.measure("T_max 10^7", [&] { f.option<QSpinBox>("T_max")->setValue(10000000); });
    f.measure("warmup 10^6", [&] { f.option<QSpinBox>("warmup")->setValue(1000000); });
    QCOMPARE(f.train().scheduler->options.get_int("warmup"), int64_t(1000000));
    const Reference r(f.train());
    QCOMPARE(r.steps, int64_t(4220000));
    checkBounded(f, r);
    QCOMPARE(f.plotted(0), 0.0001); // warmup_start_factor 0.1 x lr
    QCOMPARE(f.plotted(999999), r.at(999999));
    QCOMPARE(f.plotted(1000000), 0.001); // the warmup's end: the peak, exactly
    QCOMPARE(*std::max_element(f.page.previewValues().begin(), f.page.previewValues().end()),
             0.001);
    QCOMPARE(f.plotted(4219999), r.at(4219999));
    const QString note = f.find<QLabel>("lrPreviewNote")->text();
    QVERIFY2(note.contains(QStringLiteral("4,220,000 steps")), qPrintable(note));

    f.measure("epochs 10^6", [&] { f.find<QSpinBox>("trainEpochs")->setValue(1000000); });
    const Reference huge(f.train());
    QCOMPARE(huge.steps, int64_t(422000000));
    checkBounded(f, huge);
    QCOMPARE(f.plotted(1000000), 0.001);
    f.measure("epochs - 1", [&] { f.find<QSpinBox>("trainEpochs")->stepBy(-1); });
    checkBounded(f, Reference(f.train()));
}

// StepLR dropping every 10^6 of 4.2 million steps: a staircase of four drops, each corner
// plotted exactly (the step before the drop and the drop), nothing in between.
void TestLrPreview::stepLrDropsStayExact() {
    Fixture f;
    f.perStep("StepLR", 10000);
    f.measure("step_size 10^6", [&] { f.option<QSpinBox>("step_size")->setValue(1000000); });
    const Reference r(f.train());
    checkBounded(f, r);
    for (int64_t drop : {1000000, 2000000, 3000000, 4000000}) {
        QCOMPARE(f.plotted(drop - 1), r.at(drop - 1));
        QCOMPARE(f.plotted(drop), r.at(drop));
        QCOMPARE(f.plotted(drop), f.plotted(drop - 1) * 0.1);
    }
    QCOMPARE(levels(f.page.previewValues()).size(), size_t(5));
}

// StepLR with step_size 1 over 4.2 million steps: too many drops to mark each, still the
// schedule's smooth-looking decay at every plotted step.
void TestLrPreview::stepLrOfOneStepStillDecays() {
    Fixture f;
    f.perStep("StepLR", 10000);
    f.measure("gamma 0.999999", [&] { f.option<QDoubleSpinBox>("gamma")->setValue(0.999999); });
    f.measure("step_size 1", [&] { f.option<QSpinBox>("step_size")->setValue(1); });
    QCOMPARE(f.train().scheduler->options.get_int("step_size"), int64_t(1));
    const Reference r(f.train());
    checkBounded(f, r);
    const std::vector<double>& lr = f.page.previewValues();
    for (size_t i = 1; i < lr.size(); ++i)
        QVERIFY(lr[i] < lr[i - 1]);
    QVERIFY(lr.size() > 600); // enough points for a smooth curve
    QVERIFY(lr.back() < 0.02 * lr.front() && lr.back() > 0.01 * lr.front()); // 0.999999^4.2M
    QVERIFY(f.find<QLabel>("lrPreviewNote")->text().contains(QStringLiteral("too often")));
}

// CosineAnnealingWarmRestarts restarting every 100 of 4.2 million steps (its lr_at used to walk
// every cycle: seconds per point), and every 10^6 steps (each restart exact).
void TestLrPreview::restartsOverAHugeRun() {
    Fixture f;
    f.perStep("CosineAnnealingWarmRestarts", 10000);
    f.measure("T_0 100", [&] { f.option<QSpinBox>("T_0")->setValue(100); });
    const Reference r(f.train());
    checkBounded(f, r);
    const std::vector<double>& lr = f.page.previewValues();
    // The band the restarts sweep: each cell's restart and the step before it are plotted.
    QCOMPARE(*std::max_element(lr.begin(), lr.end()), 0.001);
    QVERIFY(*std::min_element(lr.begin(), lr.end()) <= r.at(99));
    // Drawn without the fill under it (see kMaxFilledTurns).
    QCOMPARE(f.plot()->graph(0)->brush().style(), Qt::NoBrush);

    f.measure("T_0 10^6", [&] { f.option<QSpinBox>("T_0")->setValue(1000000); });
    const Reference few(f.train());
    checkBounded(f, few);
    for (int64_t restart : {1000000, 2000000, 3000000, 4000000}) {
        QCOMPARE(f.plotted(restart - 1), few.at(restart - 1));
        QCOMPARE(f.plotted(restart), 0.001);
    }
    QVERIFY(f.plot()->graph(0)->brush().style() != Qt::NoBrush);
}

// Corners of schedules set through the document: OneCycleLR's peak, MultiStepLR's milestones
// one step apart.
void TestLrPreview::oneCycleAndMultiStepKeepTheirCorners() {
    Fixture f;
    f.perStep("OneCycleLR", 10000);
    const Reference cycle(f.train());
    checkBounded(f, cycle);
    const std::vector<double>& lr = f.page.previewValues();
    // The peak, max_lr, at the end of the first phase (0.3 x 4.22M steps - 1).
    QCOMPARE(*std::max_element(lr.begin(), lr.end()), 0.01);

    myelin::spec::TrainSpec t = f.train();
    const auto* kind = myelin::spec::find_component(myelin::spec::scheduler_kinds(), "MultiStepLR");
    QVERIFY(kind != nullptr);
    t.scheduler =
        myelin::spec::Choice{"MultiStepLR", myelin::graph::with_defaults(kind->options, {})};
    t.scheduler->options.set("milestones", std::vector<int64_t>{1000000, 1000001, 3000000});
    f.measure("MultiStepLR", [&] { f.doc.applyTrainEdit(t, QStringLiteral("Milestones")); });
    QVERIFY2(f.page.previewError().isEmpty(), qPrintable(f.page.previewError()));
    const Reference steps(f.train());
    checkBounded(f, steps);
    QCOMPARE(f.plotted(999999), 0.001);
    QCOMPARE(f.plotted(1000000), 0.0001);
    QCOMPARE(f.plotted(1000001), 0.00001);
    QCOMPARE(f.plotted(2999999), 0.00001);
    QCOMPARE(f.plotted(3000000), steps.at(3000000));
    QCOMPARE(levels(f.page.previewValues()).size(), size_t(4));
}

// No schedule over 10^6 epochs: a constant line of at most kMaxPreviewPoints points.
void TestLrPreview::noScheduleOverAHugeRun() {
    Fixture f;
    f.measure("no schedule, 10^6 epochs",
              [&] { f.find<QSpinBox>("trainEpochs")->setValue(1000000); });
    const std::vector<double>& lr = f.page.previewValues();
    QVERIFY(int64_t(lr.size()) <= kMaxPreviewPoints);
    QCOMPARE(levels(lr).size(), size_t(1));
    QCOMPARE(f.page.previewPositions().front(), 1.0);
    QCOMPARE(f.page.previewPositions().back(), 1000000.0);
}

// The sampling on its own: every step of a short run; at most maxPoints of a long one, all of a
// few corners with the step before each, one per cell of many.
void TestLrPreview::samplingIsBoundedForAnyCorners() {
    using myelin::ui::samplePreviewSteps;
    auto every = [](int64_t period) {
        return [period](int64_t after) -> std::optional<int64_t> {
            return (after / period + 1) * period;
        };
    };
    QCOMPARE(samplePreviewSteps(10, every(3), 100).steps.size(), size_t(10));
    for (int64_t period : {int64_t(1), int64_t(2), int64_t(7), int64_t(1000), int64_t(33333),
                           int64_t(1000000000), int64_t(10000000000), int64_t(1) << 39}) {
        const auto s = samplePreviewSteps(int64_t(1) << 40, every(period), 2000);
        QVERIFY2(s.steps.size() <= 2000, qPrintable(QString::number(period)));
        QCOMPARE(s.steps.front(), int64_t(0));
        QCOMPARE(s.steps.back(), (int64_t(1) << 40) - 1);
        QVERIFY(std::adjacent_find(s.steps.begin(), s.steps.end(), std::greater_equal<int64_t>()) ==
                s.steps.end());
        const bool few = ((int64_t(1) << 40) - 1) / period <= 2000 / 3;
        QVERIFY2(s.everyCorner == few, qPrintable(QString::number(period)));
        if (few)
            for (int64_t c = period; c < (int64_t(1) << 40); c += period)
                QVERIFY(std::binary_search(s.steps.begin(), s.steps.end(), c - 1) &&
                        std::binary_search(s.steps.begin(), s.steps.end(), c));
    }
}

// The range test's dialog: its steps are fixed (at most 100), not the project's; opening it
// and closing it at once (it waits for its worker) are timed with a run of 10^6 epochs.
void TestLrPreview::lrFinderOpensAndClosesWithHugeValues() {
    Fixture f;
    f.perStep("CosineAnnealingLR", 1000000);
    QElapsedTimer timer;
    timer.start();
    f.find<QPushButton>("findLearningRate")->click();
    QPointer<myelin::ui::LrFinderDialog> dialog = f.page.lrFinderDialog();
    QVERIFY(dialog != nullptr && dialog->running());
    qInfo("LR finder opened and started in %lld ms", timer.elapsed());
    timer.restart();
    QTest::keyClick(dialog, Qt::Key_Escape); // reject(): cancels, waits for the worker
    qInfo("LR finder cancelled and closed in %lld ms", timer.elapsed());
    QVERIFY(dialog.isNull() || (!dialog->running() && dialog->result().lrs.size() <= 100));
}

// The preview with a T_max far beyond the run, one of 84 half periods (no fill), restarts
// every 1000 steps (a band) and a staircase, over 4.2 million steps.
void TestLrPreview::screenshots() {
    Fixture f;
    QVERIFY(QTest::qWaitForWindowExposed(&f.page));
    auto* preview = f.find<QWidget>("trainingPreview");
    QVERIFY(preview != nullptr);
    f.perStep("CosineAnnealingLR", 10000);
    f.option<QSpinBox>("warmup")->setValue(200000);
    f.option<QSpinBox>("T_max")->setValue(10000000);
    QTest::qWait(50);
    myelin::test::saveScreenshot(*preview, QStringLiteral("lr_preview_huge_t_max.png"));
    f.option<QSpinBox>("T_max")->setValue(50000);
    QTest::qWait(20);
    myelin::test::saveScreenshot(*preview, QStringLiteral("lr_preview_small_t_max.png"));
    f.perStep("CosineAnnealingWarmRestarts", 10000);
    f.option<QSpinBox>("T_0")->setValue(1000);
    QTest::qWait(20);
    myelin::test::saveScreenshot(*preview, QStringLiteral("lr_preview_restarts.png"));
    f.perStep("StepLR", 10000);
    f.option<QSpinBox>("step_size")->setValue(1000000);
    f.option<QDoubleSpinBox>("gamma")->setValue(0.5);
    QTest::qWait(20);
    myelin::test::saveScreenshot(*preview, QStringLiteral("lr_preview_staircase.png"));
}

QTEST_MAIN(TestLrPreview)
#include "test_lr_preview.moc"
