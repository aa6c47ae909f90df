// The inspection views, driven offscreen after real training runs in the studio: what they plot
// is what the run store holds, live and when the run is reopened later.
#include "blobs_project.h"
#include "document/project_document.h"
#include "editor/edge_item.h"
#include "editor/graph_scene.h"
#include "editor/model_editor.h"
#include "editor/node_item.h"
#include "editor/step_scrubber.h"
#include "inspect/distributions_view.h"
#include "inspect/gradient_flow_view.h"
#include "shell/main_window.h"
#include "training/breakpoints_dialog.h"
#include "training/training_controller.h"
#include "ui_test_support.h"
#include "widgets/theme.h"

#include <myelin/store/run_store.h>

#include <QAction>
#include <QCheckBox>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QSettings>
#include <QSignalSpy>
#include <QSlider>
#include <QStandardPaths>
#include <QTabWidget>

#include <QTemporaryDir>
#include <QtTest>
#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

using myelin::test::writeBlobsProject;
using myelin::ui::GradientFlowView;
using myelin::ui::MainWindow;
using myelin::ui::TrainingController;
namespace store = myelin::store;

namespace {

constexpr int kRunTimeoutMs = 120000;

double storedValue(const store::RunStore& runs, const std::string& key, int64_t step) {
    const auto points = runs.metric_series(1, key, {step, step});
    return points.empty() ? std::nan("") : points.front().value;
}

} // namespace

class TestInspect : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase() {
        myelin::test::isolateStudioSettings(home_);
        myelin::ui::applyStudioTheme(*qApp); // as the studio does: screenshots show its look
    }

    void gradientFlowShowsWhatTheStoreHolds() {
        QTemporaryDir dir;
        const QString project = writeBlobsProject(dir.path(), 3, 600);
        const QString storePath = dir.filePath(QStringLiteral("runs.sqlite"));
        MainWindow w;
        w.trainingController()->setStorePath(storePath);
        w.resize(1280, 860);
        w.show();
        QVERIFY(w.openProject(project));
        GradientFlowView* view = w.gradientFlowView();

        // When the run is created, the view follows it live (the main window connected first).
        bool followedLive = false;
        connect(w.trainingController(), &TrainingController::runCreated, view,
                [&] { followedLive = view->isLive() && view->run() == 1; });
        QSignalSpy finished(w.trainingController(), &TrainingController::finished);
        QVERIFY(w.startTraining());
        QVERIFY(finished.wait(kRunTimeoutMs));
        QVERIFY(followedLive);
        QVERIFY(!view->isLive());

        // Layers with parameters, in model order; every plotted point is the store's.
        const std::vector<std::string> layers = {"fc1", "fc2"};
        QCOMPARE(view->plottedLayers(), layers);
        store::RunStore runs = store::RunStore::open(storePath.toStdString());
        const int64_t lastStep =
            runs.nearest_metric_point(1, "loss", std::numeric_limits<int64_t>::max())->step;
        QVERIFY(lastStep > 20);
        for (int64_t step : {int64_t(1), int64_t(17), lastStep})
            for (const auto& layer : layers) {
                const auto plotted = view->plottedValue(layer, step);
                QVERIFY2(plotted, qPrintable(QStringLiteral("%1 at step %2")
                                                 .arg(QString::fromStdString(layer))
                                                 .arg(step)));
                QCOMPARE(*plotted, storedValue(runs, "grad_norm/" + layer, step));
            }
        // The bars are on the newest step, then on the step chosen.
        QCOMPARE(*view->selectedStep(), lastStep);
        QCOMPARE(*view->barValue("fc2"), storedValue(runs, "grad_norm/fc2", lastStep));
        view->selectStep(17);
        QCOMPARE(*view->selectedStep(), int64_t(17));
        QCOMPARE(*view->barValue("fc1"), storedValue(runs, "grad_norm/fc1", 17));
        // The other measures read their own series.
        view->setMeasure(GradientFlowView::Measure::UpdateRatio);
        QCOMPARE(*view->plottedValue("fc1", 5), storedValue(runs, "update_ratio/fc1", 5));
        QCOMPARE(*view->barValue("fc1"), storedValue(runs, "update_ratio/fc1", 17));
        view->setMeasure(GradientFlowView::Measure::WeightNorm);
        QCOMPARE(*view->plottedValue("fc2", 30), storedValue(runs, "weight_norm/fc2", 30));
        // Mean / max |grad|: lines of max |grad|, bars of max and mean at the step; a layer's
        // max |g| lies between its mean |g| and its L2 norm.
        view->setMeasure(GradientFlowView::Measure::GradientMagnitude);
        QCOMPARE(*view->plottedValue("fc1", 5), storedValue(runs, "grad_max_abs/fc1", 5));
        QCOMPARE(*view->barValue("fc1"), storedValue(runs, "grad_max_abs/fc1", 17));
        QCOMPARE(*view->meanBarValue("fc1"), storedValue(runs, "grad_mean_abs/fc1", 17));
        for (const char* layer : {"fc1", "fc2"}) {
            const double mean = *view->meanBarValue(layer), top = *view->barValue(layer);
            QVERIFY(mean > 0 && mean <= top);
            QVERIFY(top <= storedValue(runs, std::string("grad_norm/") + layer, 17) * (1 + 1e-12));
        }
        // A change made while the run was paused (as RunChanged records it) is marked when
        // the run is shown again.
        QVERIFY(view->changeSteps().empty());
        runs.log_event(1, {.step = 17, .kind = "change", .message = "lr 0.01 -> 0.001"});
        runs.flush();
        view->showRun(1, false);
        QCOMPARE(view->changeSteps(), std::vector<int64_t>{17});
        {
            auto* tabs = w.findChild<QTabWidget*>(QStringLiteral("workspaceTabs"));
            tabs->setCurrentWidget(view);
            QTest::qWait(50);
            myelin::test::saveScreenshot(w, QStringLiteral("inspect_gradient_magnitude.png"));
            tabs->setCurrentIndex(0);
        }

        // The canvas badges follow the selected step: fc1's shows its norm there.
        view->setMeasure(GradientFlowView::Measure::GradientNorm);
        const auto badgeOf = [&](const char* name) -> std::optional<myelin::ui::NodeBadge> {
            for (const auto& node : w.document()->spec().nodes)
                if (node.name == name) return w.editor()->scene()->nodeItem(node.id)->badge();
            return std::nullopt;
        };
        // (The canvas takes badges at most once a second.)
        view->selectStep(17);
        const QString at17 = QString::number(storedValue(runs, "grad_norm/fc1", 17), 'g', 2);
        QTRY_VERIFY_WITH_TIMEOUT(badgeOf("fc1") && badgeOf("fc1")->text.contains(at17), 3000);
        const auto fc1 = badgeOf("fc1");
        QCOMPARE(fc1->health, myelin::train::LayerHealth::Healthy);
        QVERIFY2(
            fc1->text.contains(QString::number(storedValue(runs, "grad_norm/fc1", 17), 'g', 2)),
            qPrintable(fc1->text));
        QVERIFY(!fc1->spark.empty());
        QVERIFY(fc1->spark.back() > 0);
        // Selecting fc2 on the canvas focuses the views on it.
        for (const auto& node : w.document()->spec().nodes)
            if (node.name == "fc2") w.editor()->scene()->selectNodes({node.id});
        QCOMPARE(view->highlightedLayer(), std::string("fc2"));
        view->selectStep(lastStep);
        const QString atLast =
            QString::number(storedValue(runs, "grad_norm/fc1", lastStep), 'g', 2);
        QTRY_VERIFY_WITH_TIMEOUT(badgeOf("fc1")->text.contains(atLast), 3000);
        // The scrubber under the canvas mirrors the view's step and range, and moves the view
        // and the badges.
        myelin::ui::StepScrubber* scrubber = w.editor()->scrubber();
        QVERIFY(!scrubber->isHidden());
        QCOMPARE(scrubber->step(), lastStep);
        auto* slider = scrubber->findChild<QSlider*>(QStringLiteral("stepScrubberSlider"));
        QCOMPARE(int64_t(slider->maximum()), lastStep);
        slider->setValue(17);
        QCOMPARE(*view->selectedStep(), int64_t(17));
        QVERIFY(!scrubber->following());
        QTRY_VERIFY_WITH_TIMEOUT(badgeOf("fc1")->text.contains(at17), 3000);
        view->selectStep(lastStep);
        QCOMPARE(scrubber->step(), lastStep);
        auto* live = scrubber->findChild<QCheckBox*>(QStringLiteral("stepScrubberLive"));
        live->setChecked(true); // follow the newest step
        QCOMPARE(*view->selectedStep(), lastStep);
        QVERIFY(scrubber->following());
        QTRY_VERIFY_WITH_TIMEOUT(badgeOf("fc1")->text.contains(atLast), 3000);
        myelin::test::saveScreenshot(w, QStringLiteral("inspect_step_scrubber.png"));
        slider->setValue(17);
        QCOMPARE(w.distributionsView()->markedStep(), int64_t(17)); // the other view follows

        auto* tabs = w.findChild<QTabWidget*>(QStringLiteral("workspaceTabs"));
        tabs->setCurrentWidget(view);
        QTest::qWait(50);
        myelin::test::saveScreenshot(w, QStringLiteral("inspect_gradient_flow.png"));

        // Reopened from the store by a view that never saw it live: the same numbers.
        GradientFlowView reopened;
        reopened.setStorePath(storePath);
        QCOMPARE(reopened.run(), int64_t(1));
        QVERIFY(!reopened.isLive());
        QCOMPARE(reopened.plottedLayers(), layers);
        for (int64_t step = 1; step <= lastStep; ++step)
            for (const auto& layer : layers)
                QCOMPARE(reopened.plottedValue(layer, step), view->plottedValue(layer, step));
    }

    // A run whose ReLU is dead (every output exactly zero): its node's badge says so, and a
    // run of another model leaves the canvas alone.
    void deadLayerShowsOnItsBadge() {
        QTemporaryDir dir;
        const QString project = writeBlobsProject(dir.path(), 1);
        const QString storePath = dir.filePath(QStringLiteral("runs.sqlite"));
        QFile file(project);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const std::string projectJson = file.readAll().toStdString();
        {
            store::RunStore runs = store::RunStore::open(storePath.toStdString());
            const int64_t run = runs.create_run({"dead relu", projectJson});
            std::vector<store::MetricPoint> points;
            for (int64_t step = 1; step <= 20; ++step)
                for (const char* layer : {"fc1", "fc2"})
                    points.push_back({run, std::string("grad_norm/") + layer, step,
                                      layer[2] == '1' ? 1e-9 : 0.3, 0});
            points.push_back({run, "activation_mean/1", 20, 0.0, 0});
            points.push_back({run, "activation_zero_fraction/1", 20, 1.0, 0});
            runs.log_metrics(points);
            runs.finish_run(run, store::RunStatus::Finished);
        }
        MainWindow w;
        w.resize(1280, 860);
        w.show();
        QVERIFY(w.openProject(project));
        w.gradientFlowView()->setStorePath(storePath);
        QCOMPARE(w.gradientFlowView()->run(), int64_t(1));
        std::optional<myelin::ui::NodeBadge> relu, fc1;
        const auto readBadges = [&] {
            for (const auto& node : w.document()->spec().nodes) {
                if (node.kind == "ReLU") relu = w.editor()->scene()->nodeItem(node.id)->badge();
                if (node.name == "fc1") fc1 = w.editor()->scene()->nodeItem(node.id)->badge();
            }
            return relu.has_value() && fc1.has_value();
        };
        // The canvas takes badges at most once a second.
        QTRY_VERIFY_WITH_TIMEOUT(readBadges(), 5000);
        QCOMPARE(relu->health, myelin::train::LayerHealth::Dead);
        QVERIFY2(relu->text.contains(QStringLiteral("100% zeros")), qPrintable(relu->text));
        QVERIFY2(relu->toolTip.contains(QStringLiteral("dead units")), qPrintable(relu->toolTip));
        QCOMPARE(fc1->health, myelin::train::LayerHealth::Vanishing); // 1e-9 against 0.3
        QTest::qWait(50);
        myelin::test::saveScreenshot(w, QStringLiteral("inspect_graph_badges.png"));

        // Another model's run: no badge lands on a node of a different kind.
        {
            store::RunStore runs = store::RunStore::open(storePath.toStdString());
            QByteArray other = QByteArray::fromStdString(projectJson);
            other.replace("\"kind\": \"ReLU\"", "\"kind\": \"Tanh\"");
            const int64_t run = runs.create_run({"other model", other.toStdString()});
            const std::vector<store::MetricPoint> points = {
                {run, "grad_norm/fc1", 5, 0.3, 0},
                {run, "activation_mean/1", 5, 0.0, 0},
                {run, "activation_zero_fraction/1", 5, 1.0, 0}};
            runs.log_metrics(points);
            runs.finish_run(run, store::RunStatus::Finished);
        }
        w.gradientFlowView()->refreshRuns();
        w.gradientFlowView()->showRun(2);
        // The ReLU's dead badge goes (the run's layer "1" is a Tanh); fc1 keeps one.
        QTRY_VERIFY_WITH_TIMEOUT(!readBadges() && !relu.has_value() && fc1.has_value(), 5000);
        QCOMPARE(fc1->health, myelin::train::LayerHealth::Healthy); // run 2's value, 0.3
    }

    // Histograms every 10 steps: the Distributions tab follows the run; every captured
    // histogram holds the whole batch's values, the heatmap's columns are shares, the bands are
    // ordered, and the zero strip shows the store's zero fractions.
    void distributionsShowTheCapturedHistograms() {
        QTemporaryDir dir;
        const QString project = writeBlobsProject(dir.path(), 3, 600);
        const QString storePath = dir.filePath(QStringLiteral("runs.sqlite"));
        MainWindow w;
        w.trainingController()->setStorePath(storePath);
        w.resize(1280, 860);
        w.show();
        QVERIFY(w.openProject(project));
        myelin::spec::TrainSpec spec = w.document()->project().train;
        spec.capture.summaries_every = 10;
        w.document()->applyTrainEdit(spec, QStringLiteral("Capture every 10 steps"));
        QSignalSpy finished(w.trainingController(), &TrainingController::finished);
        QVERIFY(w.startTraining());
        QVERIFY(finished.wait(kRunTimeoutMs));

        myelin::ui::DistributionsView* d = w.distributionsView();
        QCOMPARE(d->run(), int64_t(1));
        QVERIFY(d->changeSteps().empty());
        {
            // A change made while paused, marked when the run is shown again.
            store::RunStore runs = store::RunStore::open(storePath.toStdString());
            runs.log_event(1, {.step = 20, .kind = "change", .message = "froze fc1"});
            runs.flush();
        }
        d->showRun(storePath, 1, false);
        QCOMPARE(d->changeSteps(), std::vector<int64_t>{20});
        // The edge out of fc1 carries fc1's output: it shows that output's statistics at the
        // inspected (newest) step, as the store has them.
        {
            store::RunStore runs = store::RunStore::open(storePath.toStdString());
            const auto means = runs.metric_series(1, "activation_mean/fc1");
            QVERIFY(!means.empty());
            myelin::graph::NodeId fc1 = -1;
            for (const auto& node : w.document()->spec().nodes)
                if (node.name == "fc1") fc1 = node.id;
            const myelin::graph::Edge out = w.document()->spec().outputs_of(fc1).at(0);
            myelin::ui::EdgeItem* edge = w.editor()->scene()->edgeItem(out);
            QVERIFY(edge);
            const QString mean = QString::number(means.back().value, 'g', 2);
            QTRY_VERIFY_WITH_TIMEOUT(edge->stats().contains(QStringLiteral("μ ") + mean), 3000);
            QVERIFY2(edge->toolTip().contains(QStringLiteral("fc1's output")),
                     qPrintable(edge->toolTip()));
            QCOMPARE(edge->label(), QStringLiteral("[N, 16]"));
            myelin::test::saveScreenshot(w, QStringLiteral("inspect_edge_statistics.png"));
        }
        QStringList names;
        for (const auto& n : d->layers())
            names << QString::fromStdString(n);
        QCOMPARE(names.join(QLatin1Char(',')), QStringLiteral("fc1,1,fc2")); // model order
        // Selecting a layer on the canvas focuses the view on it.
        for (const auto& node : w.document()->spec().nodes)
            if (node.name == "fc2") w.editor()->scene()->selectNodes({node.id});
        QCOMPARE(d->layer(), std::string("fc2"));
        d->setLayer("fc1");
        QVERIFY(d->steps().size() >= 7);
        QCOMPARE(d->steps().front(), int64_t(10));
        store::RunStore runs = store::RunStore::open(storePath.toStdString());
        const auto histograms = runs.histogram_series(1, "activation/fc1");
        QCOMPARE(histograms.size(), d->steps().size());
        for (const auto& h : histograms) {
            double total = 0;
            for (double c : h.counts)
                total += c;
            QCOMPARE(total, 16.0 * 16.0); // a batch of 16 examples x 16 features
        }
        for (const auto& column : d->columns()) {
            double share = 0;
            for (double c : column)
                share += c;
            QVERIFY(std::abs(share - 1.0) < 1e-9);
        }
        d->setGradients(true);
        QCOMPARE(d->steps().size(), runs.histogram_series(1, "gradient/fc1").size());
        d->setMode(myelin::ui::DistributionsView::Mode::Percentiles);
        for (const auto& p : d->percentiles()) {
            QCOMPARE(p.size(), size_t(5));
            for (size_t k = 1; k < p.size(); ++k)
                QVERIFY(p[k - 1] <= p[k]);
            QVERIFY(p.front() >= d->valueLow() && p.back() <= d->valueHigh());
        }
        // The zero strip: the ReLU's row holds the store's zero fractions.
        const auto& strip = d->stripLayers();
        const auto relu = std::find(strip.begin(), strip.end(), std::string("1"));
        QVERIFY(relu != strip.end());
        const auto zeros = runs.metric_series(1, "activation_zero_fraction/1");
        QCOMPARE(d->stripSteps().front(), zeros.front().step);
        QCOMPARE(d->stripValue(size_t(relu - strip.begin()), 0), zeros.front().value);
        QVERIFY2(d->nonFiniteText().contains(QStringLiteral("No NaN")),
                 qPrintable(d->nonFiniteText()));
        // The same strip for NaN/Inf counts: activation + gradient counts of the store.
        d->setStripMetric(myelin::ui::DistributionsView::StripMetric::NonFinite);
        const auto& counted = d->stripLayers();
        const auto fc1 = std::find(counted.begin(), counted.end(), std::string("fc1"));
        QVERIFY(fc1 != counted.end());
        const auto activationBad = runs.metric_series(1, "activation_nonfinite/fc1");
        const auto gradientBad = runs.metric_series(1, "gradient_nonfinite/fc1");
        QVERIFY(!activationBad.empty() && !gradientBad.empty());
        QCOMPARE(d->stripSteps().front(), activationBad.front().step);
        QCOMPARE(d->stripValue(size_t(fc1 - counted.begin()), 0),
                 activationBad.front().value + gradientBad.front().value);
        d->setStripMetric(myelin::ui::DistributionsView::StripMetric::ZeroFraction);

        d->setGradients(false);
        auto* tabs = w.findChild<QTabWidget*>(QStringLiteral("workspaceTabs"));
        tabs->setCurrentWidget(d);
        // The ridgeline: evenly spread captured steps, oldest first, first and newest included,
        // each curve from that step's column (a floor and a curve graph per ridge).
        d->setMode(myelin::ui::DistributionsView::Mode::Ridgeline);
        const auto& ridges = d->ridges();
        QVERIFY(ridges.size() >= 2 && ridges.size() <= 24);
        QCOMPARE(ridges.front(), size_t(0));
        QCOMPARE(ridges.back(), d->steps().size() - 1);
        QVERIFY(std::is_sorted(ridges.begin(), ridges.end()));
        auto* plot = d->findChild<QCustomPlot*>(QStringLiteral("distributionsPlot"));
        QCOMPARE(plot->graphCount(), int(2 * ridges.size()));
        QTest::qWait(50);
        myelin::test::saveScreenshot(w, QStringLiteral("inspect_distributions_ridgeline.png"));
        d->setMode(myelin::ui::DistributionsView::Mode::Heatmap);
        QCOMPARE(d->ridges().size(), size_t(0));
        QTest::qWait(50);
        myelin::test::saveScreenshot(w, QStringLiteral("inspect_distributions.png"));
    }

    void saysWhatIsMissing() {
        QTemporaryDir dir;
        const QString storePath = dir.filePath(QStringLiteral("runs.sqlite"));
        GradientFlowView view;
        view.setStorePath(storePath); // no store yet
        QVERIFY2(view.message().contains(QStringLiteral("No run to show yet")),
                 qPrintable(view.message()));
        {
            store::RunStore runs = store::RunStore::open(storePath.toStdString());
            const int64_t run = runs.create_run({"no capture", "{}"});
            runs.log_metric(run, "loss", 1, 0.5);
            runs.finish_run(run, store::RunStatus::Finished);
        }
        view.refreshRuns();
        QCOMPARE(view.run(), int64_t(1));
        QVERIFY2(view.message().contains(QStringLiteral("recorded no per-layer norms")),
                 qPrintable(view.message()));
        QVERIFY(view.plottedLayers().empty());
        // Distributions of the same run: nothing captured, and changing the strip's metric then
        // draws nothing (it read the first and last captured step of none: found under ASan).
        myelin::ui::DistributionsView distributions;
        distributions.showRun(storePath, 1, false);
        QVERIFY(!distributions.message().isEmpty());
        distributions.setStripMetric(myelin::ui::DistributionsView::StripMetric::NonFinite);
        distributions.setStripMetric(myelin::ui::DistributionsView::StripMetric::ZeroFraction);
        QVERIFY(!distributions.message().isEmpty());
    }

    // With the non-finite breakpoint set, a run whose weights overflow is held at the step that
    // produced the NaN: paused, the layer selected, the banner saying what fired; Resume finishes
    // the step as it would have run (the NaN then fails the run), and the store keeps the event.
    void nanBreakpointHoldsTheRunAtItsStep() {
        QTemporaryDir dir;
        const QString project =
            writeBlobsProject(dir.path(), 5, 600, "{\"kind\": \"SGD\", \"lr\": 1e38}");
        const QString storePath = dir.filePath(QStringLiteral("runs.sqlite"));
        myelin::ui::storeBreakpoints(myelin::train::parse_break_conditions("nonfinite"));
        MainWindow w;
        w.trainingController()->setStorePath(storePath);
        w.resize(1280, 860);
        w.show();
        QVERIFY(w.openProject(project));
        std::optional<myelin::train::BreakpointFired> hit;
        connect(w.trainingController(), &TrainingController::breakpointHit, &w,
                [&](const myelin::train::BreakpointFired& b) { hit = b; });
        QSignalSpy finished(w.trainingController(), &TrainingController::finished);
        QVERIFY(w.startTraining());
        QTRY_VERIFY_WITH_TIMEOUT(hit.has_value(), kRunTimeoutMs);
        QCOMPARE(w.trainingController()->state(), TrainingController::State::Paused);
        QVERIFY(hit->paused);
        QCOMPARE(hit->condition, std::string("nonfinite"));
        QVERIFY(hit->layer.has_value());
        // The layer is selected on the canvas; the banner says what fired and what to do.
        const auto selected = w.editor()->scene()->selectedNodeIds();
        QCOMPARE(selected.size(), size_t(1));
        QCOMPARE(w.document()->spec().find(selected[0])->name, *hit->layer);
        const QString banner = w.findChild<QLabel*>(QStringLiteral("lockBanner"))->text();
        QVERIFY2(banner.contains(QStringLiteral("Breakpoint nonfinite at step %1").arg(hit->step)),
                 qPrintable(banner));
        QVERIFY(w.findChild<QAction*>(QStringLiteral("actionResume"))->isEnabled());
        QTest::qWait(100);
        QVERIFY(finished.isEmpty()); // held, not ended
        myelin::test::saveScreenshot(w, QStringLiteral("inspect_breakpoint.png"));

        w.findChild<QAction*>(QStringLiteral("actionResume"))->trigger();
        QVERIFY(finished.wait(kRunTimeoutMs));
        QCOMPARE(finished.at(0).at(0).value<myelin::train::RunStatus>(),
                 myelin::train::RunStatus::Failed); // the step ran as it would have
        store::RunStore runs = store::RunStore::open(storePath.toStdString());
        const auto events = runs.events(1);
        QCOMPARE(events.size(), size_t(1));
        QCOMPARE(events[0].step, hit->step);
        QCOMPARE(events[0].layer, *hit->layer);
        myelin::ui::storeBreakpoints({});
    }

    // Breakpoints set while a run goes hold it from its next step.
    void breakpointsSetWhileTraining() {
        QTemporaryDir dir;
        const QString project = writeBlobsProject(dir.path(), 200, 600);
        MainWindow w;
        w.trainingController()->setStorePath(dir.filePath(QStringLiteral("runs.sqlite")));
        w.show();
        QVERIFY(w.openProject(project));
        myelin::ui::storeBreakpoints({});
        std::optional<myelin::train::BreakpointFired> hit;
        connect(w.trainingController(), &TrainingController::breakpointHit, &w,
                [&](const myelin::train::BreakpointFired& b) { hit = b; });
        QSignalSpy steps(w.trainingController(), &TrainingController::progressChanged);
        QSignalSpy finished(w.trainingController(), &TrainingController::finished);
        QVERIFY(w.startTraining());
        QTRY_VERIFY_WITH_TIMEOUT(steps.count() > 0, kRunTimeoutMs);
        QVERIFY(!hit.has_value());
        w.trainingController()->setBreakpoints(
            myelin::train::parse_break_conditions("loss-above=0"));
        QTRY_VERIFY_WITH_TIMEOUT(hit.has_value(), kRunTimeoutMs);
        QCOMPARE(w.trainingController()->state(), TrainingController::State::Paused);
        QCOMPARE(hit->condition, std::string("loss-above=0"));
        w.stopTraining(); // gives the held step up, with a checkpoint before it
        QVERIFY(finished.wait(kRunTimeoutMs));
        QCOMPARE(finished.at(0).at(0).value<myelin::train::RunStatus>(),
                 myelin::train::RunStatus::Stopped);
    }

    void breakpointsDialogReadsAndWritesConditions() {
        const auto conditions =
            myelin::train::parse_break_conditions("grad-spike=25,dead=0.75,loss-above=3@40");
        myelin::ui::BreakpointsDialog dialog(conditions);
        QCOMPARE(dialog.conditions(), conditions);
        QCOMPARE(myelin::ui::breakpointsText(dialog.conditions()),
                 QStringLiteral("grad-spike=25,dead=0.75,loss-above=3@40"));
        dialog.findChild<QCheckBox*>(QStringLiteral("breakNonFinite"))->setChecked(true);
        dialog.findChild<QCheckBox*>(QStringLiteral("breakDead"))->setChecked(false);
        QCOMPARE(myelin::ui::breakpointsText(dialog.conditions()),
                 QStringLiteral("nonfinite,grad-spike=25,loss-above=3@40"));
        QVERIFY(dialog.findChild<QLabel*>(QStringLiteral("breakCommandLine"))
                    ->text()
                    .contains(QStringLiteral("--break-on nonfinite,grad-spike=25")));
        myelin::ui::storeBreakpoints(dialog.conditions());
        QCOMPARE(myelin::ui::storedBreakpoints(), dialog.conditions());
        QSettings().setValue(QStringLiteral("training/breakpoints"), QStringLiteral("nonsense=1"));
        QVERIFY(myelin::ui::storedBreakpoints().empty()); // unreadable: none
        myelin::ui::storeBreakpoints({});
        dialog.grab().save(
            QDir(myelin::test::artifactsDir()).filePath(QStringLiteral("breakpoints_dialog.png")));
    }

  private:
    QTemporaryDir home_;
};

QTEST_MAIN(TestInspect)
#include "test_inspect.moc"
