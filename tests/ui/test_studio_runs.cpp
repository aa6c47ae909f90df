// The studio's memory (issue 14) and export (issue 15) through the main window: a run trained
// with Train appears in the Runs tab; Fork from there (the dialog accepted without edits) trains
// a child run that repeats the parent's losses after the branch point bit for bit; Evaluate
// shows the run's checkpoint evaluated (the confusion matrix counts every test example); File >
// Export writes the ONNX file and reads it back.
#include "document/project_document.h"
#include "eval/evaluation_view.h"
#include "runs/fork_dialog.h"
#include "runs/runs_browser.h"
#include "runs/runs_compare_view.h"
#include "shell/evaluate_page.h"
#include "shell/export_dialog.h"
#include "shell/main_window.h"
#include "training/training_controller.h"

#include <myelin/store/run_store.h>
#include <myelin/train/evaluation.h>

#include <QApplication>
#include <QDockWidget>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include "blobs_project.h"
#include "ui_test_support.h"

#include <bit>
#include <numeric>

using namespace myelin;
using myelin::ui::MainWindow;
using myelin::ui::TrainingController;

namespace {
constexpr int kRunTimeoutMs = 120000;

bool trainToTheEnd(MainWindow& w, const std::function<bool()>& start) {
    QSignalSpy finished(w.trainingController(), &TrainingController::finished);
    return start() && finished.wait(kRunTimeoutMs);
}
} // namespace

class TestStudioRuns : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase();
    void trainedRunIsListed();
    void forkFromTheStudioRepeatsTheParent();
    void evaluateFromTheRunsTab();
    void exportWritesAndReadsBack();

  private:
    QTemporaryDir home_;
    QTemporaryDir dir_;
    QString store_;
    std::unique_ptr<MainWindow> window_;
    qint64 parent_ = -1;
};

void TestStudioRuns::initTestCase() {
    myelin::test::isolateStudioSettings(home_);
    QVERIFY(dir_.isValid());
    const QString project = myelin::test::writeBlobsProject(dir_.path(), 2);
    QVERIFY(!project.isEmpty());
    store_ = dir_.filePath(QStringLiteral("runs.sqlite"));
    qputenv("MYELIN_STORE", store_.toUtf8());
    window_ = std::make_unique<MainWindow>(project);
    window_->resize(1300, 850);
    window_->show();
    QVERIFY(QTest::qWaitForWindowExposed(window_.get()));
    QVERIFY(trainToTheEnd(*window_, [this] { return window_->startTraining(); }));
    parent_ = window_->trainingController()->runId();
    QVERIFY(parent_ > 0);
}

void TestStudioRuns::trainedRunIsListed() {
    MainWindow& w = *window_;
    QSignalSpy loaded(w.runsBrowser(), &ui::RunsBrowser::runsLoaded);
    w.workspaceTabs()->setCurrentWidget(w.findChild<QWidget*>(QStringLiteral("runsPage")));
    QVERIFY(loaded.count() > 0 || loaded.wait(10000));
    w.runsBrowser()->selectRuns({parent_});
    QCOMPARE(w.runsBrowser()->selectedRuns(), QList<qint64>{parent_});
    // The selection is what the comparison below it shows.
    QCOMPARE(w.runsCompareView()->runs(), QList<qint64>{parent_});
    // The Runs tab has the window to itself; the editing docks come back on the Model tab.
    auto* palette = w.findChild<QDockWidget*>(QStringLiteral("paletteDock"));
    QVERIFY(palette);
    QVERIFY(!palette->isVisible());
    w.workspaceTabs()->setCurrentIndex(0);
    QVERIFY(palette->isVisible());
    w.workspaceTabs()->setCurrentWidget(w.findChild<QWidget*>(QStringLiteral("runsPage")));
    myelin::test::saveScreenshot(w, QStringLiteral("studio_runs_tab.png"));
    // The studio records the project file the run was trained from.
    auto store = store::RunStore::open(store_.toStdString());
    QCOMPARE(QString::fromStdString(store.run(parent_).project_path), w.projectPath());
}

void TestStudioRuns::forkFromTheStudioRepeatsTheParent() {
    MainWindow& w = *window_;
    auto store = store::RunStore::open(store_.toStdString());
    const auto parentLoss = store.metric_series(parent_, "loss");
    QVERIFY(parentLoss.size() % 2 == 0);
    const int64_t branch = int64_t(parentLoss.size() / 2); // the first epoch's checkpoint
    // The browser's Fork opens the dialog: choose the first epoch's checkpoint and accept.
    bool accepted = false;
    QTimer::singleShot(0, [&] {
        auto* dialog = qobject_cast<ui::ForkDialog*>(QApplication::activeModalWidget());
        if (!dialog || !dialog->selectCheckpoint(branch)) {
            if (dialog) dialog->reject();
            return;
        }
        accepted = dialog->changes().empty();
        dialog->accept();
    });
    QVERIFY(trainToTheEnd(w, [&] { return w.forkRun(parent_); }));
    QVERIFY(accepted);
    const qint64 fork = w.trainingController()->runId();
    QVERIFY(fork != parent_);
    QCOMPARE(store.run(fork).parent_run.value_or(-1), int64_t(parent_));
    QCOMPARE(store.run(fork).project_path, store.run(parent_).project_path);
    const auto forkLoss = store.metric_series(fork, "loss");
    QCOMPARE(forkLoss.size(), parentLoss.size() - size_t(branch));
    for (size_t i = 0; i < forkLoss.size(); ++i) {
        const auto& p = parentLoss[size_t(branch) + i];
        QCOMPARE(forkLoss[i].step, p.step);
        QVERIFY2(std::bit_cast<quint64>(forkLoss[i].value) == std::bit_cast<quint64>(p.value),
                 qPrintable(QStringLiteral("step %1").arg(p.step)));
    }
}

void TestStudioRuns::evaluateFromTheRunsTab() {
    MainWindow& w = *window_;
    ui::EvaluationView* view = w.evaluatePage()->evaluationView();
    QSignalSpy done(view, &ui::EvaluationView::finished);
    w.evaluateRun(parent_);
    QCOMPARE(w.workspaceTabs()->currentWidget(), static_cast<QWidget*>(w.evaluatePage()));
    QVERIFY(done.wait(60000));
    QVERIFY2(view->message().isEmpty(), qPrintable(view->message()));
    const train::Evaluation* e = view->evaluation();
    QVERIFY(e);
    QCOMPARE(e->confusion.num_classes, int64_t(3));
    QCOMPARE(std::accumulate(e->confusion.counts.begin(), e->confusion.counts.end(), int64_t(0)),
             e->size);
    myelin::test::saveScreenshot(w, QStringLiteral("studio_evaluate.png"));
}

void TestStudioRuns::exportWritesAndReadsBack() {
    ui::ExportDialog dialog(store_, parent_, dir_.path());
    QVERIFY(!dialog.checkpointPath().isEmpty());
    dialog.setFormat(0); // ONNX
    const QString out = dir_.filePath(QStringLiteral("blobs.onnx"));
    dialog.outputEdit()->setText(out);
    dialog.resize(820, 480);
    dialog.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dialog));
    QSignalSpy finished(&dialog, &ui::ExportDialog::exportFinished);
    dialog.findChild<QPushButton*>(QStringLiteral("exportStart"))->click();
    QVERIFY(finished.wait(60000));
    QVERIFY2(finished.at(0).at(0).toBool(), qPrintable(dialog.outcome()));
    QVERIFY(QFileInfo(out).size() > 0);
    QVERIFY2(dialog.outcome().contains(QStringLiteral("read back")), qPrintable(dialog.outcome()));
    myelin::test::saveScreenshot(dialog, QStringLiteral("export_dialog.png"));
    // An output folder that does not exist: refused, nothing written.
    const QString bad = dir_.filePath(QStringLiteral("missing/blobs.onnx"));
    dialog.outputEdit()->setText(bad);
    dialog.findChild<QPushButton*>(QStringLiteral("exportStart"))->click();
    QVERIFY(finished.wait(60000));
    QVERIFY(!finished.last().at(0).toBool());
    QVERIFY2(dialog.outcome().startsWith(QStringLiteral("Nothing was written")),
             qPrintable(dialog.outcome()));
    QVERIFY(!QFileInfo::exists(bad));
}

QTEST_MAIN(TestStudioRuns)
#include "test_studio_runs.moc"
