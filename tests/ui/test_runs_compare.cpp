// Compare runs (issue 14, item 3): stores built here with RunStore, read by RunsCompareView
// offscreen. The plotted values are the store's; the smoothing is TensorBoard's debiased EMA
// (golden numbers worked out by hand); a fork's (and a resume's) inherited history ends at its
// branch step, recursively; "Only differences" shows exactly the differing parameters; a log
// axis leaves out values <= 0 and says so; x as epoch and as wall time; the empty states.
#include "runs/runs_compare_data.h"
#include "runs/runs_compare_view.h"
#include "runs/smoothing.h"
#include "ui_test_support.h"
#include "widgets/theme.h"

#include <myelin/store/run_store.h>

#include <qcustomplot.h>
#include <sqlite3.h>

#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

using myelin::ui::RunsCompareView;
using Curve = RunsCompareView::Curve;
namespace store = myelin::store;
namespace compare = myelin::ui::compare;

namespace {

constexpr double kStart = 1.7e9; // every run's start, unix seconds

// A run with `values` logged as `key` at steps first, first + 1, ... and wall time start +
// step / 2 seconds.
int64_t addRun(store::RunStore& s, const std::string& name, const std::string& key, int64_t first,
               const std::vector<double>& values, std::optional<int64_t> parent = std::nullopt) {
    const int64_t run = s.create_run({.name = name, .parent_run = parent, .started_at = kStart});
    std::vector<store::MetricPoint> points;
    for (size_t i = 0; i < values.size(); ++i) {
        const int64_t step = first + int64_t(i);
        points.push_back({run, key, step, values[i], kStart + double(step) / 2});
    }
    s.log_metrics(points);
    s.finish_run(run, store::RunStatus::Finished);
    return run;
}

std::vector<double> ramp(int count, double from, double by) {
    std::vector<double> v;
    for (int i = 0; i < count; ++i)
        v.push_back(from + by * i);
    return v;
}

// The value of `key` at `step` of `run` in the store.
double stored(const store::RunStore& s, int64_t run, const std::string& key, int64_t step) {
    const auto rows = s.metric_series(run, key, {step, step});
    return rows.empty() ? std::nan("") : rows.front().value;
}

} // namespace

class TestRunsCompare : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase() {
        myelin::test::isolateStudioSettings(home_);
        myelin::ui::applyStudioTheme(*qApp); // as the studio does: screenshots show its look
    }

    void plottedValuesAreTheStores() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
        int64_t a = 0, b = 0;
        {
            auto s = store::RunStore::open(path.toStdString());
            a = addRun(s, "a", "loss", 0, {2.5, 2.0, 1.75, 1.5, 1.25});
            b = addRun(s, "b", "loss", 0, {3.0, 1.0, 0.5});
        }
        RunsCompareView view;
        view.setStorePath(path);
        view.setRuns({a, b});
        QCOMPARE(view.series(), QStringList{QStringLiteral("loss")}); // picked by default
        QVERIFY(view.availableSeries().contains(QStringLiteral("loss")));
        view.setSmoothing(0);
        auto s = store::RunStore::open(path.toStdString());
        for (int64_t run : {a, b}) {
            const auto points = view.plotted(QStringLiteral("loss"), run, Curve::Line);
            const auto rows = s.metric_series(run, "loss");
            QCOMPARE(points.size(), qsizetype(rows.size()));
            for (size_t i = 0; i < rows.size(); ++i) {
                QCOMPARE(points[i].x(), double(rows[i].step));
                QCOMPARE(points[i].y(), rows[i].value);
            }
            QVERIFY(view.plotted(QStringLiteral("loss"), run, Curve::Raw).isEmpty());
        }
        // Smoothed: the raw points move behind the line, unchanged.
        view.setSmoothing(0.6);
        const auto raw = view.plotted(QStringLiteral("loss"), a, Curve::Raw);
        QCOMPARE(raw.size(), 5);
        QCOMPARE(raw[2].y(), 1.75);
        QVERIFY(view.message().isEmpty());

        // A run keeps its colour when the others leave the selection.
        const auto colourOf = [&](const QString& name) {
            QCustomPlot* plot = view.plot(QStringLiteral("loss"));
            for (int g = 0; g < plot->graphCount(); ++g)
                if (plot->graph(g)->name() == name) return plot->graph(g)->pen().color();
            return QColor();
        };
        const QString bName = QStringLiteral("#%1 b").arg(b);
        const QColor bColour = colourOf(bName);
        QVERIFY(bColour.isValid());
        QVERIFY(bColour != colourOf(QStringLiteral("#%1 a").arg(a)));
        view.setRuns({b});
        QCOMPARE(colourOf(bName), bColour);

        // Clicking a run in the legend hides its curves (greyed in the legend); again shows.
        view.setRuns({a, b});
        view.resize(900, 600);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QCustomPlot* plot = view.plot(QStringLiteral("loss"));
        plot->replot();
        const auto graphNamed = [&](const QString& name) {
            for (int g = 0; g < plot->graphCount(); ++g)
                if (plot->graph(g)->name() == name) return plot->graph(g);
            return static_cast<QCPGraph*>(nullptr);
        };
        QCPAbstractLegendItem* item = plot->legend->itemWithPlottable(graphNamed(bName));
        QVERIFY(item);
        QTest::mouseClick(plot, Qt::LeftButton, {}, item->rect().center());
        QTRY_VERIFY(view.isRunHidden(b)); // queued after the click
        QVERIFY(!graphNamed(bName)->visible());
        QVERIFY(graphNamed(QStringLiteral("#%1 a").arg(a))->visible());
        plot->replot();
        item = plot->legend->itemWithPlottable(graphNamed(bName));
        QTest::mouseClick(plot, Qt::LeftButton, {}, item->rect().center());
        QTRY_VERIFY(!view.isRunHidden(b));
        QVERIFY(graphNamed(bName)->visible());
    }

    // A change made while a run was paused (a store event of kind "change") is a dashed line in
    // the run's colour at its step, said under the plot; none on the epoch axis.
    void changesWhilePausedAreMarked() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
        int64_t a = 0, b = 0;
        {
            auto s = store::RunStore::open(path.toStdString());
            a = addRun(s, "a", "loss", 0, ramp(10, 2.0, -0.1));
            b = addRun(s, "b", "loss", 0, ramp(10, 2.5, -0.1));
            s.log_event(a, {4, "change", "", "lr 0.01 -> 0.001", 0});
        }
        RunsCompareView view;
        view.setStorePath(path);
        view.setRuns({a, b});
        QCustomPlot* plot = view.plot(QStringLiteral("loss"));
        QVERIFY(plot != nullptr);
        QCOMPARE(plot->itemCount(), 1);
        auto* line = qobject_cast<QCPItemStraightLine*>(plot->item(0));
        QVERIFY(line != nullptr);
        QCOMPARE(line->point1->coords().x(), 4.0);
        const auto* notes = view.findChild<QLabel*>(QStringLiteral("comparePlotNotes"));
        QVERIFY(notes != nullptr);
        QVERIFY2(notes->text().contains(QStringLiteral("changed after step 4: lr 0.01 -> 0.001")),
                 qPrintable(notes->text()));
        view.setSmoothing(0.3); // a redraw keeps one line, not two
        QCOMPARE(view.plot(QStringLiteral("loss"))->itemCount(), 1);
    }

    void smoothingIsTensorBoardsDebiasedEma() {
        // By hand, w = 0.6: last = 0.4, 1.04, 1.824, (NaN skipped), 3.0944, (Inf skipped),
        // 3.45664; debias = 1 - 0.6^n for n = 1..5 finite values folded in.
        const double nan = std::numeric_limits<double>::quiet_NaN();
        const double inf = std::numeric_limits<double>::infinity();
        const std::vector<double> values = {1, 2, 3, nan, 5, inf, 4};
        const std::vector<double> golden = {
            1.0, 1.625, 1.824 / 0.784, nan, 3.0944 / 0.8704, inf, 3.45664 / 0.92224};
        const auto smoothed = myelin::ui::debiasedEma(values, 0.6);
        QCOMPARE(smoothed.size(), golden.size());
        QCOMPARE(smoothed[0], values[0]); // the first point is the raw value
        for (size_t i = 0; i < golden.size(); ++i) {
            if (std::isnan(golden[i])) {
                QVERIFY(std::isnan(smoothed[i]));
                continue;
            }
            if (std::isinf(golden[i])) {
                QCOMPARE(smoothed[i], golden[i]); // passed through
                continue;
            }
            QVERIFY2(std::abs(smoothed[i] - golden[i]) <= 1e-12 * std::abs(golden[i]),
                     qPrintable(QStringLiteral("point %1: %2, not %3")
                                    .arg(i)
                                    .arg(smoothed[i], 0, 'g', 17)
                                    .arg(golden[i], 0, 'g', 17)));
        }
        QCOMPARE(smoothed[2], 2.3265306122448983);
        QCOMPARE(myelin::ui::debiasedEma(values, 0)[4], 5.0); // 0: unchanged
        QCOMPARE(myelin::ui::debiasedEma(std::vector<double>{3, 3, 3}, 0.9)[2], 3.0);
        QCOMPARE(myelin::ui::debiasedEma(std::vector<double>{0, 1}, 2.0)[1], // clamped
                 1 / (1 - 0.999 * 0.999) * (1 - 0.999) * 1);

        // Through the view: the smoothed line of a run holding the finite values.
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
        int64_t run = 0;
        {
            auto s = store::RunStore::open(path.toStdString());
            run = addRun(s, "r", "loss", 0, {1, 2, 3, 5, 4});
        }
        RunsCompareView view;
        view.setStorePath(path);
        view.setRuns({run});
        view.setSmoothing(0.6);
        const auto line = view.plotted(QStringLiteral("loss"), run, Curve::Line);
        const std::vector<double> expected = {1.0, 1.625, 1.824 / 0.784, 3.0944 / 0.8704,
                                              3.45664 / 0.92224};
        QCOMPARE(line.size(), qsizetype(expected.size()));
        for (size_t i = 0; i < expected.size(); ++i)
            QVERIFY(std::abs(line[int(i)].y() - expected[i]) <= 1e-12 * expected[i]);
    }

    void forkHistoryEndsAtTheBranchStep() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
        int64_t parent = 0, fork = 0, forkOfFork = 0, resumed = 0, other = 0;
        {
            auto s = store::RunStore::open(path.toStdString());
            parent = addRun(s, "parent", "loss", 0, ramp(100, 10, -0.05));
            fork = addRun(s, "fork", "loss", 41, ramp(40, 7, -0.1), parent);
            s.set_params(fork, {{"fork.from", std::to_string(parent) + "@40"}});
            forkOfFork = addRun(s, "fork2", "loss", 61, ramp(30, 3, -0.01), fork);
            s.set_params(forkOfFork, {{"fork.from", std::to_string(fork) + "@60"}});
            // A resume: parent_run and parent_checkpoint only, the checkpoint at step 50.
            other = addRun(s, "other", "loss", 0, ramp(80, 5, -0.01));
            const QString checkpoint = dir.filePath(QStringLiteral("other-50.ckpt"));
            QFile file(checkpoint);
            QVERIFY(file.open(QIODevice::WriteOnly));
            file.write("checkpoint");
            file.close();
            s.add_artifact(other,
                           {.kind = "checkpoint", .path = checkpoint.toStdString(), .step = 50});
            resumed = s.create_run({.name = "resumed",
                                    .parent_run = other,
                                    .parent_checkpoint = checkpoint.toStdString(),
                                    .started_at = kStart});
            s.log_metrics(std::vector<store::MetricPoint>{{resumed, "loss", 51, 0.5, kStart},
                                                          {resumed, "loss", 52, 0.4, kStart}});
        }
        RunsCompareView view;
        view.setStorePath(path);
        view.setRuns({parent, fork, forkOfFork, resumed});
        view.setSmoothing(0);
        auto s = store::RunStore::open(path.toStdString());
        const QString loss = QStringLiteral("loss");

        const auto history = view.plotted(loss, fork, Curve::History);
        QCOMPARE(history.size(), 41);
        QCOMPARE(history.front().x(), 0.0);
        QCOMPARE(history.back().x(), 40.0); // ends at the branch step
        QCOMPARE(history.back().y(), stored(s, parent, "loss", 40));
        const auto own = view.plotted(loss, fork, Curve::Line);
        QCOMPARE(own.front().x(), 41.0);
        // Joined: from the history's last point to the run's first.
        const auto join = view.plotted(loss, fork, Curve::Join);
        QCOMPARE(join.size(), 2);
        QCOMPARE(join[0], history.back());
        QCOMPARE(join[1], own.front());
        QVERIFY(view.plotted(loss, parent, Curve::History).isEmpty());

        // A fork of a fork: the grandparent up to 40, then the fork up to 60.
        const auto deep = view.plotted(loss, forkOfFork, Curve::History);
        QCOMPARE(deep.size(), 61);
        QCOMPARE(deep[40].y(), stored(s, parent, "loss", 40));
        QCOMPARE(deep[41].y(), stored(s, fork, "loss", 41));
        QCOMPARE(deep.back().x(), 60.0);
        QCOMPARE(deep.back().y(), stored(s, fork, "loss", 60));

        // A resume: its parent's checkpoint was written at step 50.
        const auto resumedHistory = view.plotted(loss, resumed, Curve::History);
        QCOMPARE(resumedHistory.back().x(), 50.0);
        QCOMPARE(resumedHistory.back().y(), stored(s, other, "loss", 50));

        // Smoothed, the EMA runs over the whole lineage: the history still ends at the branch.
        view.setSmoothing(0.9);
        QCOMPARE(view.plotted(loss, fork, Curve::History).back().x(), 40.0);
        QCOMPARE(view.plotted(loss, fork, Curve::HistoryRaw).back().x(), 40.0);
        const auto lineage = compare::readLineage(s, forkOfFork);
        QCOMPARE(lineage.ancestors.size(), size_t(2));
        QCOMPARE(lineage.ancestors[0].run, parent);
        QCOMPARE(lineage.ancestors[1].firstStep, int64_t(41));
    }

    void onlyDifferencesShowsExactlyTheDifferingParams() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
        int64_t a = 0, b = 0, c = 0;
        {
            auto s = store::RunStore::open(path.toStdString());
            a = addRun(s, "a", "loss", 0, {1});
            b = addRun(s, "b", "loss", 0, {1});
            c = addRun(s, "c", "loss", 0, {1});
            s.set_params(a, {{"epochs", "5"}, {"lr", "0.01"}, {"seed", "1"}, {"loss", "ce"}});
            s.set_params(b, {{"epochs", "5"}, {"lr", "0.001"}, {"seed", "1"}, {"loss", "ce"}});
            s.set_params(c, {{"epochs", "5"},
                             {"lr", "0.01"},
                             {"seed", "1"},
                             {"loss", "ce"},
                             {"fork.from", "1@3"}});
        }
        RunsCompareView view;
        view.setStorePath(path);
        view.setRuns({a, b, c});
        QVERIFY(view.onlyDifferences()); // the default
        QCOMPARE(view.shownParams(),
                 (QStringList{QStringLiteral("fork.from"), QStringLiteral("lr")}));
        QCOMPARE(view.paramNotes(), QStringLiteral("2 of 5 parameters differ (highlighted)."));
        view.setOnlyDifferences(false);
        QCOMPARE(view.shownParams().size(), 5);
        view.setRuns({a, c});
        view.setOnlyDifferences(true);
        QCOMPARE(view.shownParams(), QStringList{QStringLiteral("fork.from")});
        view.setRuns({a});
        QCOMPARE(view.shownParams(), QStringList());
        QVERIFY(view.paramNotes().contains(QStringLiteral("Select two or more runs")));
    }

    void logYLeavesOutNonPositiveValues() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
        int64_t run = 0;
        {
            auto s = store::RunStore::open(path.toStdString());
            run = addRun(s, "r", "val_loss", 0, {2, 0, 1, -1, 0.5, 0.25});
        }
        RunsCompareView view;
        view.setStorePath(path);
        view.setRuns({run});
        view.setSeries({QStringLiteral("val_loss")});
        view.setSmoothing(0);
        QCOMPARE(view.plotted(QStringLiteral("val_loss"), run, Curve::Line).size(), 6);
        view.setLogY(true);
        const auto line = view.plotted(QStringLiteral("val_loss"), run, Curve::Line);
        QCOMPARE(line.size(), 4);
        for (const QPointF& p : line)
            QVERIFY(p.y() > 0);
        QCOMPARE(line[1], QPointF(2, 1));
        QCOMPARE(view.notes(QStringLiteral("val_loss")),
                 QStringLiteral("Log y leaves out values ≤ 0: 2 in run %1.").arg(run));
        QCOMPARE(view.plot(QStringLiteral("val_loss"))->yAxis->scaleType(), QCPAxis::stLogarithmic);
        view.setSmoothing(0.5);
        for (Curve curve : {Curve::Line, Curve::Raw})
            for (const QPointF& p : view.plotted(QStringLiteral("val_loss"), run, curve))
                QVERIFY(p.y() > 0);
        view.setLogY(false);
        QVERIFY(view.notes(QStringLiteral("val_loss")).isEmpty());
    }

    void xAsEpochAndWallTime() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
        int64_t run = 0, fork = 0, noEpochs = 0;
        {
            auto s = store::RunStore::open(path.toStdString());
            run = addRun(s, "r", "loss", 1, ramp(40, 4, -0.1)); // steps 1..40
            // Epochs of 10 steps: epoch k ends at step 10k.
            for (int k = 1; k <= 4; ++k)
                s.log_metric(run, "epoch", 10 * k, k, kStart + 5.0 * k);
            fork = addRun(s, "f", "loss", 21, ramp(10, 1, -0.1), run);
            s.set_params(fork, {{"fork.from", std::to_string(run) + "@20"}});
            s.log_metric(fork, "epoch", 30, 3);
            noEpochs = addRun(s, "n", "loss", 0, {1, 2});
        }
        RunsCompareView view;
        view.setStorePath(path);
        view.setRuns({run, fork, noEpochs});
        view.setSmoothing(0);
        view.setXAxis(RunsCompareView::XAxis::Epoch);
        const QString loss = QStringLiteral("loss");
        const auto line = view.plotted(loss, run, Curve::Line);
        QCOMPARE(line.size(), 40);
        QCOMPARE(line[0].x(), 0.1);  // step 1
        QCOMPARE(line[14].x(), 1.5); // step 15
        QCOMPARE(line[39].x(), 4.0); // step 40
        // The fork reads its epochs through its parent's history: step 25 is epoch 2.5.
        const auto forkLine = view.plotted(loss, fork, Curve::Line);
        QCOMPARE(forkLine[4].x(), 2.5);
        QCOMPARE(view.plotted(loss, fork, Curve::History).back().x(), 2.0);
        QVERIFY(view.plotted(loss, noEpochs, Curve::Line).isEmpty());
        QVERIFY(view.notes(loss).contains(
            QStringLiteral("Not shown with x as epoch (no epoch recorded yet): run %1.")
                .arg(noEpochs)));
        QCOMPARE(view.plot(loss)->xAxis->label(), QStringLiteral("epoch"));

        // Wall time: seconds since the run started (points were logged at step / 2 s); the
        // fork started at kStart too, so its own time continues from its branch point's.
        view.setXAxis(RunsCompareView::XAxis::WallTime);
        QCOMPARE(view.plotted(loss, run, Curve::Line)[9].x(), 5.0); // step 10
        const auto forkTime = view.plotted(loss, fork, Curve::Line);
        QCOMPARE(forkTime.front().x(), 10.0 + 10.5); // branch at 10 s, then 10.5 s of its own
        // Seconds over a short span (h:m:s over one longer than 5 minutes).
        QCOMPARE(view.plot(loss)->xAxis->label(),
                 QStringLiteral("wall time since the run started (s)"));
    }

    void emptyStatesSayWhy() {
        RunsCompareView view;
        QCOMPARE(view.message(), QStringLiteral("Select two or more runs to compare."));
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
        view.setStorePath(path);
        view.setRuns({1});
        QVERIFY(view.message().startsWith(QStringLiteral("No run store yet")));
        int64_t a = 0, b = 0;
        {
            auto s = store::RunStore::open(path.toStdString());
            a = addRun(s, "a", "loss", 0, {1, 2});
            b = addRun(s, "b", "loss", 0, {1, 2});
            s.log_metric(a, "val_accuracy", 1, 0.5);
        }
        view.setStorePath(path);
        view.setRuns({});
        QCOMPARE(view.message(), QStringLiteral("Select two or more runs to compare."));
        view.setRuns({a, b, 99});
        QVERIFY(view.message().isEmpty());
        view.setSeries({QStringLiteral("loss"), QStringLiteral("val_accuracy")});
        QCOMPARE(view.notes(QStringLiteral("val_accuracy")),
                 QStringLiteral("No series named val_accuracy in run %1.").arg(b));
        QVERIFY(view.notes(QStringLiteral("loss")).isEmpty());
        view.setRuns({99});
        QCOMPARE(view.message(), QStringLiteral("Run 99 is not in the store."));
    }

    void pickerGroupsAndFiltersTheSeries() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
        int64_t a = 0, b = 0;
        {
            auto s = store::RunStore::open(path.toStdString());
            a = addRun(s, "a", "loss", 0, {1, 2});
            b = addRun(s, "b", "val_accuracy", 0, {0.5, 0.6});
            for (const char* key : {"lr", "grad_norm/fc1", "grad_norm/fc2", "weight_norm/fc1"})
                s.log_metric(a, key, 1, 0.1);
            s.log_metric(b, "custom", 1, 3);
        }
        RunsCompareView view;
        view.setStorePath(path);
        view.setRuns({a, b});
        // Loss and metrics, the optimizer, the per-layer families, the rest: the union of both.
        QCOMPARE(view.availableSeries(),
                 (QStringList{"loss", "val_accuracy", "lr", "grad_norm/fc1", "grad_norm/fc2",
                              "weight_norm/fc1", "custom"}));
        auto* picker = view.findChild<QTreeWidget*>(QStringLiteral("compareSeries"));
        QVERIFY(picker);
        QCOMPARE(picker->topLevelItem(2)->text(0), QStringLiteral("grad_norm per layer"));
        // Ticking a series in the picker adds its plot.
        QTreeWidgetItem* fc2 = picker->topLevelItem(2)->child(1);
        QCOMPARE(fc2->text(0), QStringLiteral("grad_norm/fc2"));
        QSignalSpy changed(&view, &RunsCompareView::seriesChanged);
        fc2->setCheckState(0, Qt::Checked);
        QCOMPARE(view.series(), (QStringList{"loss", "grad_norm/fc2"}));
        QCOMPARE(changed.count(), 1);
        QVERIFY(view.plot(QStringLiteral("grad_norm/fc2")));
        QCOMPARE(view.notes(QStringLiteral("grad_norm/fc2")),
                 QStringLiteral("No series named grad_norm/fc2 in run %1.").arg(b));
        picker->topLevelItem(0)->child(0)->setCheckState(0, Qt::Unchecked); // loss
        QCOMPARE(view.series(), QStringList{"grad_norm/fc2"});
        QVERIFY(!view.plot(QStringLiteral("loss")));
        // The filter hides what does not match, and groups left empty.
        auto* filter = view.findChild<QLineEdit*>(QStringLiteral("compareSeriesFilter"));
        filter->setText(QStringLiteral("FC1"));
        QVERIFY(picker->topLevelItem(0)->isHidden());
        QVERIFY(!picker->topLevelItem(2)->child(0)->isHidden());
        QVERIFY(picker->topLevelItem(2)->child(1)->isHidden());
        QVERIFY(!picker->topLevelItem(3)->isHidden()); // weight_norm/fc1
        // Nothing picked: the plots give way to a hint.
        view.setSeries({});
        QVERIFY(!view.plot(QStringLiteral("grad_norm/fc2")));
        auto* hint = view.findChild<QLabel*>(QStringLiteral("compareNoSeries"));
        QVERIFY(hint && !hint->isHidden());
    }

    void badLineageAndValuesAreNamed() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
        int64_t gone = 0, loop = 0, garbled = 0, gaps = 0;
        {
            auto s = store::RunStore::open(path.toStdString());
            gone = addRun(s, "gone", "loss", 5, {1, 2});
            s.set_params(gone, {{"fork.from", "99@4"}});
            loop = addRun(s, "loop", "loss", 5, {1, 2});
            s.set_params(loop, {{"fork.from", std::to_string(loop) + "@4"}});
            garbled = addRun(s, "garbled", "loss", 0, {1, 2});
            s.set_params(garbled, {{"fork.from", "seven"}});
            const double nan = std::numeric_limits<double>::quiet_NaN();
            gaps = addRun(s, "gaps", "loss", 0,
                          {1, nan, 2, std::numeric_limits<double>::infinity(), 3});
        }
        RunsCompareView view;
        view.setStorePath(path);
        view.setRuns({gone, loop, garbled, gaps});
        const QString notes = view.findChild<QLabel*>(QStringLiteral("compareRunNotes"))->text();
        QVERIFY2(notes.contains(
                     QStringLiteral("run %1's parent run 99 is no longer in the store").arg(gone)),
                 qPrintable(notes));
        QVERIFY2(notes.contains(
                     QStringLiteral("run %1's parent run %1 is also its descendant").arg(loop)),
                 qPrintable(notes));
        QVERIFY2(notes.contains(QStringLiteral("seven")), qPrintable(notes));
        // Each is still drawn, without a history.
        for (int64_t run : {gone, loop, garbled}) {
            QCOMPARE(view.plotted(QStringLiteral("loss"), run, Curve::Line).size(), 2);
            QVERIFY(view.plotted(QStringLiteral("loss"), run, Curve::History).isEmpty());
        }
        // NaN and Inf: gaps in the line, said in words, not folded into the smoothing.
        view.setSmoothing(0.5);
        const auto line = view.plotted(QStringLiteral("loss"), gaps, Curve::Line);
        QCOMPARE(line.size(), 5);
        QVERIFY(std::isnan(line[1].y()) && std::isnan(line[3].y()));
        QCOMPARE(line[2].y(), (0.5 * 0.5 * 1 + 0.5 * 2) / (1 - 0.25));
        QCOMPARE(view.notes(QStringLiteral("loss")),
                 QStringLiteral("NaN or infinite values, drawn as gaps: 2 in run %1.").arg(gaps));
    }

    void aNewerStoreIsRefusedInWords() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
        {
            auto s = store::RunStore::open(path.toStdString());
            addRun(s, "a", "loss", 0, {1});
        }
        sqlite3* db = nullptr;
        QCOMPARE(sqlite3_open(qPrintable(path), &db), SQLITE_OK);
        const std::string pragma =
            "PRAGMA user_version = " + std::to_string(store::kSchemaVersion + 1);
        QCOMPARE(sqlite3_exec(db, pragma.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
        sqlite3_close(db);
        RunsCompareView view;
        view.setStorePath(path);
        view.setRuns({1});
        QVERIFY2(view.message().startsWith(QStringLiteral("Cannot read the run store: ")),
                 qPrintable(view.message()));
        QVERIFY(view.message().contains(QStringLiteral("runs.sqlite")));
    }

    void followsARunningRun() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
        auto s = store::RunStore::open(path.toStdString());
        const int64_t done = addRun(s, "done", "loss", 0, {3, 2, 1});
        const int64_t running = s.create_run({.name = "running"});
        s.log_metric(running, "loss", 0, 2.5);
        s.log_metric(running, "loss", 1, 2.0);
        s.flush();
        RunsCompareView view;
        view.setStorePath(path);
        view.setRuns({done, running});
        view.setSmoothing(0);
        QVERIFY(view.isLive());
        QCOMPARE(view.plotted(QStringLiteral("loss"), running, Curve::Line).size(), 2);
        s.log_metric(running, "loss", 2, 1.5);
        s.log_metric(running, "val_loss", 2, 1.7);
        s.flush();
        view.refresh();
        const auto line = view.plotted(QStringLiteral("loss"), running, Curve::Line);
        QCOMPARE(line.size(), 3);
        QCOMPARE(line.back(), QPointF(2, 1.5));
        QVERIFY(view.availableSeries().contains(QStringLiteral("val_loss"))); // a new key
        s.finish_run(running, store::RunStatus::Finished);
        view.refresh();
        QVERIFY(!view.isLive());
    }

    void aSmoothingChangeKeepsTheZoom() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
        int64_t run = 0;
        {
            auto s = store::RunStore::open(path.toStdString());
            run = addRun(s, "r", "loss", 0, ramp(100, 5, -0.04));
        }
        RunsCompareView view;
        view.setStorePath(path);
        view.setRuns({run});
        QCustomPlot* plot = view.plot(QStringLiteral("loss"));
        QCOMPARE(plot->xAxis->range().upper, 99.0); // fitted to the curve
        plot->xAxis->setRange(20, 40);              // the person zooms in
        view.setSmoothing(0.3);
        QCOMPARE(plot->xAxis->range(), QCPRange(20, 40));
        view.setXAxis(RunsCompareView::XAxis::WallTime); // a new axis is fitted again
        QCOMPARE(plot->xAxis->range().upper, 49.5);
    }

    void longSeriesAreReadAsBucketsKeepingSpikes() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
        int64_t run = 0;
        std::vector<double> values = ramp(20000, 1, 0);
        values[12345] = 50; // a spike
        {
            auto s = store::RunStore::open(path.toStdString());
            run = addRun(s, "long", "loss", 0, values);
        }
        RunsCompareView view;
        view.setStorePath(path);
        view.setRuns({run});
        view.setSmoothing(0.6);
        const auto line = view.plotted(QStringLiteral("loss"), run, Curve::Line);
        const auto raw = view.plotted(QStringLiteral("loss"), run, Curve::Raw);
        QVERIFY(line.size() <= compare::kBuckets);
        QVERIFY(line.size() > compare::kBuckets / 2);
        double highest = 0;
        for (const QPointF& p : raw)
            highest = std::max(highest, p.y());
        QCOMPARE(highest, 50.0);
        QCOMPARE(line.back().x(), 19999.0);
        // Buckets carry no times: with x as wall time they are read across the series (points
        // were logged at step / 2 seconds, so the interpolation is exact here).
        view.setXAxis(RunsCompareView::XAxis::WallTime);
        const auto timed = view.plotted(QStringLiteral("loss"), run, Curve::Line);
        QCOMPARE(timed.back().x(), 19999.0 / 2);
        QVERIFY(std::abs(timed[timed.size() / 2].x() - line[line.size() / 2].x() / 2) < 1e-9);
    }

    void screenshot() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
        int64_t base = 0, small = 0, fork = 0;
        {
            auto s = store::RunStore::open(path.toStdString());
            // Three noisy loss curves: lr 0.01, lr 0.003 with batch 128, and a fork of the
            // first at step 300 with lr 0.001.
            const auto curve = [](int from, int to, double scale, double rate, double floor,
                                  unsigned seed) {
                std::vector<double> v;
                for (int step = from; step <= to; ++step) {
                    seed = seed * 1103515245u + 12345u;
                    const double noise = double((seed >> 16) % 1000) / 1000.0 - 0.5;
                    const double mean = floor + scale * std::exp(-rate * step);
                    v.push_back(mean * (1 + 0.35 * noise));
                }
                return v;
            };
            base = addRun(s, "mlp lr 0.01", "loss", 0, curve(0, 600, 2.0, 0.008, 0.35, 7));
            small = addRun(s, "mlp lr 0.003", "loss", 0, curve(0, 600, 2.0, 0.004, 0.4, 11));
            auto forkValues = curve(301, 600, 2.0, 0.008, 0.35, 13);
            for (size_t i = 0; i < forkValues.size(); ++i) // the lower lr settles lower
                forkValues[i] *= 1 - 0.3 * (1 - std::exp(-double(i) / 60));
            fork = addRun(s, "mlp lr 0.01 fork lr 0.001", "loss", 301, forkValues, base);
            const std::map<std::string, std::string> common = {{"epochs", "10"},
                                                               {"seed", "1"},
                                                               {"optimizer", "adam"},
                                                               {"loss", "cross_entropy"},
                                                               {"threads", "2"}};
            auto params = common;
            params["batch_size"] = "64";
            params["lr"] = "0.01";
            s.set_params(base, params);
            params["lr"] = "0.003";
            params["batch_size"] = "128";
            s.set_params(small, params);
            params = common;
            params["batch_size"] = "64";
            params["lr"] = "0.001";
            params["fork.from"] = std::to_string(base) + "@300";
            params["fork.diff.train.optimizer.lr"] = "0.01 -> 0.001";
            s.set_params(fork, params);
            // Epochs of 60 steps, and the learning rates (cosine; the fork's from 0.001).
            for (int64_t run : {base, small, fork}) {
                const double lr = run == base ? 0.01 : run == small ? 0.003 : 0.001;
                std::vector<store::MetricPoint> points;
                for (int64_t step = run == fork ? 301 : 0; step <= 600; ++step) {
                    const double t = kStart + double(step) / 2;
                    points.push_back(
                        {run, "lr", step, lr * 0.5 * (1 + std::cos(M_PI * double(step) / 600)), t});
                    if (step > 0 && step % 60 == 0)
                        points.push_back({run, "epoch", step, double(step / 60), t});
                }
                s.log_metrics(points);
            }
        }
        RunsCompareView view;
        view.resize(1280, 820);
        view.setStorePath(path);
        view.setRuns({base, small, fork});
        QCOMPARE(view.smoothing(), 0.6); // the default
        view.setSmoothing(0.85);         // smoother than by default, for the picture
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QVERIFY(!view.plotted(QStringLiteral("loss"), fork, Curve::History).isEmpty());
        QVERIFY(!view.plotted(QStringLiteral("loss"), fork, Curve::Raw).isEmpty());
        QCOMPARE(view.shownParams(),
                 (QStringList{QStringLiteral("batch_size"),
                              QStringLiteral("fork.diff.train.optimizer.lr"),
                              QStringLiteral("fork.from"), QStringLiteral("lr")}));
        view.plot(QStringLiteral("loss"))->replot();
        myelin::test::saveScreenshot(view, QStringLiteral("runs_compare.png"));

        // The fork without its parent (its inherited history stands out), loss and lr on a log
        // axis against epochs.
        view.setRuns({small, fork});
        view.setSeries({QStringLiteral("loss"), QStringLiteral("lr")});
        view.setXAxis(RunsCompareView::XAxis::Epoch);
        view.setLogY(true);
        QCOMPARE(view.plotted(QStringLiteral("lr"), fork, Curve::History).back().x(), 5.0);
        QCOMPARE(view.plot(QStringLiteral("lr"))->yAxis->scaleType(), QCPAxis::stLogarithmic);
        QApplication::processEvents();
        myelin::test::saveScreenshot(view, QStringLiteral("runs_compare_fork_log_epoch.png"));
    }

  private:
    QTemporaryDir home_;
};

QTEST_MAIN(TestRunsCompare)
#include "test_runs_compare.moc"
