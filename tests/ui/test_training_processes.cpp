// The studio launching a local multi-process run (issue 19), offscreen: the Training page's
// "Processes on this machine" control (hidden where no run in processes can start), a real
// 2-process `mpirun ... myelin train --events jsonl` run whose events reach the live view, Stop
// ending every rank with the run "stopped" in the store, a run to its end, and failures — a
// project the CLI cannot read, data that is missing — shown with the CLI's message. The runs are
// skipped with the reason where Open MPI (or the MPI build of the CLI) is absent.
#include "blobs_project.h"
#include "document/project_document.h"
#include "pages/training_page.h"
#include "shell/main_window.h"
#include "training/process_run.h"
#include "training/training_controller.h"
#include "training/training_dock.h"
#include "ui_test_support.h"
#include "widgets/theme.h"

#include <myelin/io/project.h>
#include <myelin/store/run_store.h>
#include <myelin/train/data_setup.h>

#include <qcustomplot.h>

#include <QAction>
#include <QApplication>
#include <QFile>
#include <QLabel>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include <memory>

using myelin::test::writeBlobsProject;
using myelin::ui::MainWindow;
using myelin::ui::ProcessRun;
using myelin::ui::TrainingController;

namespace {

constexpr int kRunTimeoutMs = 120000;

QAction* action(MainWindow& w, const char* name) {
    return w.findChild<QAction*>(QString::fromLatin1(name));
}

QSpinBox* processesSpin(MainWindow& w) {
    return w.trainingPage()->findChild<QSpinBox*>(QStringLiteral("trainProcesses"));
}

myelin::store::RunStatus storedStatus(const QString& store, int64_t run) {
    auto runs = myelin::store::RunStore::open(store.toStdString());
    for (const auto& r : runs.list_runs())
        if (r.run.id == run) return r.run.status;
    return myelin::store::RunStatus::Running;
}

} // namespace

class TestTrainingProcesses : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase();
    void controlIsHiddenWhereProcessesCannotStart();
    void previewCountsEachProcesssSteps();
    void twoProcessesTrainLiveAndStop();
    void twoProcessesTrainToTheEnd();
    void projectTheCliCannotReadIsReported();
    void missingDataIsShownInTheStudio();
    void failingRankShowsRankZerosMessage();
    void closingTheStudioAsksAndStopsTheRun();
    void destroyingTheControllerStopsTheRun();

  private:
    bool skipWithoutMpi();
    QTemporaryDir home_;
};

void TestTrainingProcesses::initTestCase() {
    myelin::test::isolateStudioSettings(home_);
    myelin::ui::applyStudioTheme(*qApp);
    // The CLI this build made (the test runs from its own folder, not beside it), over loopback
    // TCP as in tests/dist.
    qputenv("MYELIN_CLI", QByteArrayLiteral(MYELIN_CLI_PATH));
    qputenv("OMPI_MCA_btl", "self,tcp");
}

bool TestTrainingProcesses::skipWithoutMpi() {
    QString why;
    if (ProcessRun::available(&why)) return false;
    qInfo("skipped: %s", qPrintable(why));
    return true;
}

void TestTrainingProcesses::controlIsHiddenWhereProcessesCannotStart() {
    QTemporaryDir dir;
    MainWindow w;
    w.resize(1280, 860);
    w.show();
    QVERIFY(w.openProject(writeBlobsProject(dir.path(), 2, 600)));
    w.workspaceTabs()->setCurrentWidget(w.trainingPage());
    QSpinBox* spin = processesSpin(w);
    QVERIFY(spin);

    w.trainingPage()->setProcessesAvailable(false, 8);
    QVERIFY(!spin->isVisible());
    QCOMPARE(w.trainingPage()->processes(), 1);

    w.trainingPage()->setProcessesAvailable(true, 8);
    QVERIFY(spin->isVisible());
    QCOMPARE(spin->maximum(), 8);
    spin->setValue(2);
    QCOMPARE(w.trainingPage()->processes(), 2);
    auto* note = w.trainingPage()->findChild<QLabel*>(QStringLiteral("processesNote"));
    QVERIFY(note);
    QVERIFY2(note->text().contains(QStringLiteral("thread")), qPrintable(note->text()));
    // The run overview counts every process's batch (blobs: batch 16, no accumulation).
    auto* overview = w.trainingPage()->findChild<QLabel*>(QStringLiteral("trainOverview"));
    QVERIFY(overview);
    QVERIFY2(overview->text().contains(QStringLiteral("32 examples per optimizer step")) &&
                 overview->text().contains(QStringLiteral("2 processes")),
             qPrintable(overview->text()));
    // A studio setting: the next window offers the same number.
    MainWindow again;
    again.trainingPage()->setProcessesAvailable(true, 8);
    QCOMPARE(again.trainingPage()->processes(), 2);
    again.trainingPage()->setProcessesAvailable(false, 8);
    QCOMPARE(again.trainingPage()->processes(), 1);
    auto* scroll =
        w.trainingPage()->findChild<QScrollArea*>(QStringLiteral("trainingSettingsScroll"));
    QVERIFY(scroll);
    scroll->ensureWidgetVisible(spin, 50, 200);
    QTest::qWait(50);
    myelin::test::saveScreenshot(w, QStringLiteral("training_processes.png"));
    spin->setValue(1);
}

void TestTrainingProcesses::previewCountsEachProcesssSteps() {
    // Fashion-MNIST's size is known from the spec: the preview and the overview count the steps
    // each process takes through its share, which is what its scheduler will see.
    MainWindow w;
    QVERIFY(w.openProject(
        QStringLiteral(MYELIN_TEST_SOURCE_DIR "/resources/examples/fashion_mlp.myelin")));
    myelin::ui::TrainingPage* page = w.trainingPage();
    const myelin::io::Project& project = w.document()->project();
    const int64_t alone =
        *myelin::train::known_steps_per_epoch(project.data, project.train.accumulation_steps);
    page->setProcessesAvailable(true, 4);
    processesSpin(w)->setValue(1);
    QCOMPARE(page->previewStepsPerEpoch(), alone);
    processesSpin(w)->setValue(3);
    const int64_t each =
        *myelin::train::known_steps_per_epoch(project.data, project.train.accumulation_steps, 3);
    QVERIFY2(each < alone / 2, qPrintable(QString::number(each)));
    QCOMPARE(page->previewStepsPerEpoch(), each);
    QCOMPARE(int64_t(page->previewPositions().size()) > 0, true);
    QVERIFY(page->previewPositions().back() <= double(each * project.train.epochs));
    auto* overview = page->findChild<QLabel*>(QStringLiteral("trainOverview"));
    QVERIFY(overview);
    QVERIFY2(overview->text().contains(QStringLiteral("in each of 3 processes")),
             qPrintable(overview->text()));
    auto* note = page->findChild<QLabel*>(QStringLiteral("processesNote"));
    QVERIFY(note);
    QVERIFY2(note->text().contains(QStringLiteral("3 processes")) &&
                 !note->text().contains(QLatin1Char('%')),
             qPrintable(note->text()));
    processesSpin(w)->setValue(1);
    QCOMPARE(page->previewStepsPerEpoch(), alone);
}

void TestTrainingProcesses::twoProcessesTrainLiveAndStop() {
    if (skipWithoutMpi()) QSKIP("no mpirun or no MPI build of the CLI (see the log)");
    QTemporaryDir dir;
    const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
    MainWindow w;
    w.trainingController()->setStorePath(store);
    w.resize(1280, 860);
    w.show();
    QVERIFY(w.openProject(writeBlobsProject(dir.path(), 100000, 600)));
    w.trainingPage()->setProcessesAvailable(true, 4);
    processesSpin(w)->setValue(2);

    TrainingController* controller = w.trainingController();
    QSignalSpy created(controller, &TrainingController::runCreated);
    QSignalSpy started(controller, &TrainingController::runStarted);
    QSignalSpy steps(controller, &TrainingController::stepMetrics);
    QSignalSpy logs(controller, &TrainingController::logMessage);
    QSignalSpy finished(controller, &TrainingController::finished);
    QVERIFY(w.startTraining());
    QVERIFY(controller->isMultiProcess());
    QCOMPARE(controller->runProcesses(), 2);
    QVERIFY(w.document()->isLocked());
    QVERIFY(!action(w, "actionPause")->isEnabled()); // processes have no pause
    QVERIFY(action(w, "actionStop")->isEnabled());

    QTRY_VERIFY_WITH_TIMEOUT(steps.count() >= 30, kRunTimeoutMs);
    QCOMPARE(created.count(), 1);
    QCOMPARE(created.at(0).at(1).toString(), store);
    const qint64 run = created.at(0).at(0).toLongLong();
    QCOMPARE(controller->runId(), run);
    QCOMPARE(started.count(), 1);
    // 2 ranks x batch 16: 432 training rows are 14 steps of the global batch 32 per epoch.
    QCOMPARE(started.at(0).at(0).value<myelin::train::RunStarted>().steps_per_epoch, int64_t(14));
    QString logText;
    for (const QList<QVariant>& l : logs)
        logText += l.at(0).toString() + QLatin1Char('\n');
    QVERIFY2(logText.contains(QStringLiteral("data-parallel: 2 ranks")), qPrintable(logText));
    QVERIFY(controller->progress().total_steps > 0);
    QTRY_VERIFY_WITH_TIMEOUT(w.trainingDock()->stepLossPoints() >= 30, 5000);
    QTRY_VERIFY_WITH_TIMEOUT(w.trainingDock()->validationLossPoints() >= 2, kRunTimeoutMs);
    auto* device = w.trainingDock()->findChild<QLabel*>(QStringLiteral("trainingDevice"));
    QVERIFY(device);
    QVERIFY2(device->text().contains(QStringLiteral("2 processes")), qPrintable(device->text()));
    QTest::qWait(300); // a replot after the last batch
    myelin::test::saveScreenshot(w, QStringLiteral("live_training_mpi.png"));

    action(w, "actionStop")->trigger();
    QCOMPARE(controller->state(), TrainingController::State::Stopping);
    QVERIFY(finished.wait(kRunTimeoutMs));
    QCOMPARE(finished.at(0).at(0).value<myelin::train::RunStatus>(),
             myelin::train::RunStatus::Stopped);
    QCOMPARE(controller->state(), TrainingController::State::Idle);
    QVERIFY(!w.document()->isLocked());
    QCOMPARE(int(storedStatus(store, run)), int(myelin::store::RunStatus::Stopped));
    auto runs = myelin::store::RunStore::open(store.toStdString());
    QCOMPARE(runs.params(run).at("dist.world_size"), std::string("2"));
    // The stop wrote a checkpoint the run can be resumed from.
    const auto artifacts = runs.artifacts(run);
    QVERIFY(!artifacts.empty());
    QVERIFY(QFile::exists(QString::fromStdString(artifacts.back().path.string())));
}

void TestTrainingProcesses::twoProcessesTrainToTheEnd() {
    if (skipWithoutMpi()) QSKIP("no mpirun or no MPI build of the CLI (see the log)");
    QTemporaryDir dir;
    const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
    MainWindow w;
    w.trainingController()->setStorePath(store);
    QVERIFY(w.openProject(writeBlobsProject(dir.path(), 3, 600)));
    w.trainingPage()->setProcessesAvailable(true, 4);
    processesSpin(w)->setValue(2);
    TrainingController* controller = w.trainingController();
    QSignalSpy epochs(controller, &TrainingController::epochMetrics);
    QSignalSpy finished(controller, &TrainingController::finished);
    QVERIFY(w.startTraining());
    QVERIFY(finished.wait(kRunTimeoutMs));
    QCOMPARE(finished.at(0).at(0).value<myelin::train::RunStatus>(),
             myelin::train::RunStatus::Finished);
    QCOMPARE(epochs.count(), 3);
    QCOMPARE(w.trainingDock()->validationLossPoints(), 3);
    QCOMPARE(w.trainingDock()->stepLossPoints(), 3 * 14);
    QCOMPARE(int(storedStatus(store, controller->runId())),
             int(myelin::store::RunStatus::Finished));
    // The project recorded with the run is the studio's file, not the temporary copy.
    auto runs = myelin::store::RunStore::open(store.toStdString());
    QCOMPARE(QString::fromStdString(runs.run(controller->runId()).project_path),
             dir.filePath(QStringLiteral("blobs.myelin")));
}

void TestTrainingProcesses::projectTheCliCannotReadIsReported() {
    if (skipWithoutMpi()) QSKIP("no mpirun or no MPI build of the CLI (see the log)");
    QTemporaryDir dir;
    const QString broken = dir.filePath(QStringLiteral("broken.myelin"));
    QFile f(broken);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"format_version\": 1, \"model\": ");
    f.close();
    ProcessRun run;
    QSignalSpy ended(&run, &ProcessRun::ended);
    QSignalSpy created(&run, &ProcessRun::runCreated);
    myelin::ui::ProcessRunOptions options;
    options.storePath = dir.filePath(QStringLiteral("runs.sqlite"));
    QString error;
    QVERIFY2(run.startFile(broken, options, &error), qPrintable(error));
    QVERIFY(ended.wait(kRunTimeoutMs));
    QCOMPARE(ended.at(0).at(0).toInt(), 1);
    const QString message = ended.at(0).at(1).toString();
    QVERIFY2(message.contains(QStringLiteral("broken.myelin")), qPrintable(message));
    QCOMPARE(created.count(), 0); // refused before a run was made
    QVERIFY(!QFile::exists(options.storePath) ||
            myelin::store::RunStore::open(options.storePath.toStdString()).list_runs().empty());
}

void TestTrainingProcesses::missingDataIsShownInTheStudio() {
    if (skipWithoutMpi()) QSKIP("no mpirun or no MPI build of the CLI (see the log)");
    QTemporaryDir dir;
    const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
    MainWindow w;
    w.trainingController()->setStorePath(store);
    w.show();
    QVERIFY(w.openProject(writeBlobsProject(dir.path(), 2, 600)));
    QVERIFY(QFile::remove(dir.filePath(QStringLiteral("blobs.csv"))));
    w.trainingPage()->setProcessesAvailable(true, 4);
    processesSpin(w)->setValue(2);
    TrainingController* controller = w.trainingController();
    QSignalSpy errors(controller, &TrainingController::runError);
    QSignalSpy finished(controller, &TrainingController::finished);
    QVERIFY(w.startTraining());
    QVERIFY(finished.wait(kRunTimeoutMs));
    QCOMPARE(finished.at(0).at(0).value<myelin::train::RunStatus>(),
             myelin::train::RunStatus::Failed);
    QVERIFY(errors.count() >= 1);
    const QString message = errors.at(0).at(0).toString();
    QVERIFY2(message.contains(QStringLiteral("blobs.csv")), qPrintable(message));
    // The studio shows it, and the store has the run as failed.
    auto* box = w.findChild<QMessageBox*>(QStringLiteral("trainingErrorBox"));
    QVERIFY(box);
    QVERIFY2(box->informativeText().contains(QStringLiteral("blobs.csv")),
             qPrintable(box->informativeText()));
    QVERIFY(controller->runId() > 0);
    QCOMPARE(int(storedStatus(store, controller->runId())), int(myelin::store::RunStatus::Failed));
    QVERIFY(!w.document()->isLocked());
}

void TestTrainingProcesses::failingRankShowsRankZerosMessage() {
    if (skipWithoutMpi()) QSKIP("no mpirun or no MPI build of the CLI (see the log)");
    QTemporaryDir dir;
    const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
    MainWindow w;
    w.trainingController()->setStorePath(store);
    QVERIFY(w.openProject(writeBlobsProject(dir.path(), 100, 600)));
    w.trainingPage()->setProcessesAvailable(true, 4);
    processesSpin(w)->setValue(2);
    TrainingController* controller = w.trainingController();
    QSignalSpy errors(controller, &TrainingController::runError);
    QSignalSpy finished(controller, &TrainingController::finished);
    // The CLI's fault injection (tests/dist): rank 1 throws at its 5th step. The ranks inherit
    // mpirun's environment, which is the studio's.
    qputenv("MYELIN_TEST_DIST_FAULT", "1:5:throw");
    const bool started = w.startTraining();
    qunsetenv("MYELIN_TEST_DIST_FAULT");
    QVERIFY(started);
    QVERIFY(finished.wait(kRunTimeoutMs));
    QCOMPARE(finished.at(0).at(0).value<myelin::train::RunStatus>(),
             myelin::train::RunStatus::Failed);
    QVERIFY(errors.count() >= 1);
    const QString message = errors.at(0).at(0).toString();
    QVERIFY2(message.contains(QStringLiteral("rank 1 failed: injected failure")),
             qPrintable(message));
    auto* box = w.findChild<QMessageBox*>(QStringLiteral("trainingErrorBox"));
    QVERIFY(box);
    QVERIFY2(box->informativeText().contains(QStringLiteral("rank 1")),
             qPrintable(box->informativeText()));
    QCOMPARE(int(storedStatus(store, controller->runId())), int(myelin::store::RunStatus::Failed));
}

void TestTrainingProcesses::closingTheStudioAsksAndStopsTheRun() {
    if (skipWithoutMpi()) QSKIP("no mpirun or no MPI build of the CLI (see the log)");
    QTemporaryDir dir;
    const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
    MainWindow w;
    w.trainingController()->setStorePath(store);
    w.show();
    QVERIFY(w.openProject(writeBlobsProject(dir.path(), 100000, 600)));
    w.trainingPage()->setProcessesAvailable(true, 4);
    processesSpin(w)->setValue(2);
    TrainingController* controller = w.trainingController();
    QSignalSpy steps(controller, &TrainingController::stepMetrics);
    QVERIFY(w.startTraining());
    QTRY_VERIFY_WITH_TIMEOUT(steps.count() >= 5, kRunTimeoutMs);
    const qint64 run = controller->runId();
    QVERIFY(run > 0);
    // The question comes first; answer it with Yes.
    bool asked = false;
    QTimer answer;
    answer.setInterval(50);
    connect(&answer, &QTimer::timeout, this, [&] {
        auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
        if (!box) return;
        asked = box->text().contains(QStringLiteral("Stop the training run"));
        box->button(QMessageBox::Yes)->click();
    });
    answer.start();
    QVERIFY(w.close());
    answer.stop();
    QVERIFY(asked);
    QVERIFY(!controller->isActive());
    QCOMPARE(int(storedStatus(store, run)), int(myelin::store::RunStatus::Stopped));
}

void TestTrainingProcesses::destroyingTheControllerStopsTheRun() {
    if (skipWithoutMpi()) QSKIP("no mpirun or no MPI build of the CLI (see the log)");
    QTemporaryDir dir;
    const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
    const QString path = writeBlobsProject(dir.path(), 100000, 600);
    auto controller = std::make_unique<TrainingController>();
    controller->setStorePath(store);
    QSignalSpy steps(controller.get(), &TrainingController::stepMetrics);
    myelin::ui::TrainingStartOptions options;
    options.processes = 2;
    QVERIFY(controller->start(myelin::io::load_project(path.toStdString()), dir.path(), options));
    QTRY_VERIFY_WITH_TIMEOUT(steps.count() >= 5, kRunTimeoutMs);
    const qint64 run = controller->runId();
    controller.reset(); // asks the processes to stop and waits for them
    QCOMPARE(int(storedStatus(store, run)), int(myelin::store::RunStatus::Stopped));
}

QTEST_MAIN(TestTrainingProcesses)
#include "test_training_processes.moc"
