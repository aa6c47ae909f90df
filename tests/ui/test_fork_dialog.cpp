// Resume and fork from the studio (issue 14): the fork dialog lists a run's checkpoints with
// markers on its loss curve, shows a fork's edits as the changes it will record, and the run it
// starts through the TrainingController (the studio's Train path) reproduces the parent's
// losses after the branch point bit for bit when nothing was edited, records its edits and its
// parent when something was, and a run still going, or one whose checkpoint files are gone, is
// refused in words. A run recorded on a GPU this machine does not have resumes on the CPU.
#include "runs/fork_dialog.h"
#include "training/training_controller.h"
#include "widgets/device_picker.h"

#include <myelin/cuda.h>
#include <myelin/io/project.h>
#include <myelin/store/run_store.h>

#include <qcustomplot.h>

#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "blobs_project.h"
#include "ui_test_support.h"

#include <bit>
#include <filesystem>
#include <unistd.h>

using namespace myelin;
using myelin::ui::ForkDialog;
using myelin::ui::TrainingController;

namespace {
constexpr int kRunTimeoutMs = 60000;
}

class TestForkDialog : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase();
    void forkWithoutEditsReproducesTheParent();
    void forkWithAnLrEditRecordsIt();
    void resumeContinuesFromTheChosenCheckpoint();
    void runningAndDeletedRunsAreRefused();
    void aGpuRunResumesOnTheCpu();

  private:
    // Trains `project` through the controller; returns the run id (-1 on failure).
    qint64 train(const io::Project& project, const ui::TrainingStartOptions& options = {});
    // The blobs project with a Dropout (the generator's state matters) and every epoch's
    // checkpoint kept.
    io::Project project() const;

    QTemporaryDir home_;
    QTemporaryDir dir_;
    QString store_;
    qint64 parent_ = -1;
    int64_t stepsPerEpoch_ = 0;
};

void TestForkDialog::initTestCase() {
    myelin::test::isolateStudioSettings(home_);
    QVERIFY(dir_.isValid());
    QVERIFY(!myelin::test::writeBlobsProject(dir_.path(), 3).isEmpty());
    store_ = dir_.filePath(QStringLiteral("runs.sqlite"));
    parent_ = train(project());
    QVERIFY(parent_ > 0);
    const auto loss = store::RunStore::open(store_.toStdString()).metric_series(parent_, "loss");
    QCOMPARE(loss.size() % 3, size_t(0));
    stepsPerEpoch_ = int64_t(loss.size() / 3);
}

io::Project TestForkDialog::project() const {
    io::Project p = io::load_project(dir_.filePath(QStringLiteral("blobs.myelin")).toStdString());
    auto& m = p.model;
    std::erase_if(m.edges, [](const graph::Edge& e) { return e.from == 3 && e.to == 4; });
    const auto drop = m.add_node("Dropout", "drop", {{"p", 0.2}});
    m.connect(3, drop);
    m.connect(drop, 4);
    p.train.checkpoints.keep_last = 100;
    return p;
}

qint64 TestForkDialog::train(const io::Project& project, const ui::TrainingStartOptions& options) {
    TrainingController controller;
    controller.setStorePath(store_);
    QSignalSpy finished(&controller, &TrainingController::finished);
    QSignalSpy errors(&controller, &TrainingController::runError);
    if (!controller.start(project, dir_.path(), options)) return -1;
    if (!finished.wait(kRunTimeoutMs)) return -1;
    if (!errors.isEmpty()) {
        qWarning("run failed: %s", qPrintable(errors.first().first().toString()));
        return -1;
    }
    return controller.runId();
}

void TestForkDialog::forkWithoutEditsReproducesTheParent() {
    ForkDialog dialog(store_, parent_, ForkDialog::Mode::Fork);
    QVERIFY2(dialog.problem().isEmpty(), qPrintable(dialog.problem()));
    auto* list = dialog.findChild<QListWidget*>(QStringLiteral("forkCheckpoints"));
    QVERIFY(list);
    QCOMPARE(list->count(), 3); // one checkpoint per epoch
    // The newest is chosen first; branch after the first epoch instead (clicking its marker).
    QCOMPARE(dialog.checkpointStep().value_or(-1), 3 * stepsPerEpoch_);
    auto* plot = dialog.findChild<QCustomPlot*>(QStringLiteral("forkTimeline"));
    QVERIFY(plot);
    QCOMPARE(plot->graph(1)->dataCount(), 3); // a marker per checkpoint
    dialog.resize(900, 680);
    dialog.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dialog));
    plot->replot();
    const QPoint marker(int(plot->xAxis->coordToPixel(double(stepsPerEpoch_))),
                        int(plot->yAxis->coordToPixel(plot->graph(1)->data()->at(0)->value)));
    QTest::mouseClick(plot, Qt::LeftButton, {}, marker);
    QCOMPARE(dialog.checkpointStep().value_or(-1), stepsPerEpoch_);
    QVERIFY(dialog.changes().empty());
    QCOMPARE(dialog.changesTable()->rowCount(), 0);
    auto* start = dialog.findChild<QPushButton*>(QStringLiteral("forkStart"));
    QVERIFY(start && start->isEnabled());
    QCOMPARE(start->text(), QStringLiteral("Fork"));

    ui::TrainingStartOptions options;
    options.fork = dialog.forkSource();
    const qint64 fork = train(dialog.project(), options);
    QVERIFY(fork > 0);
    auto store = store::RunStore::open(store_.toStdString());
    QCOMPARE(store.run(fork).parent_run.value_or(-1), int64_t(parent_));
    QCOMPARE(store.params(fork).at("fork.from"),
             std::to_string(parent_) + "@" + std::to_string(stepsPerEpoch_));
    const auto parentLoss = store.metric_series(parent_, "loss");
    const auto forkLoss = store.metric_series(fork, "loss");
    QCOMPARE(forkLoss.size(), size_t(2 * stepsPerEpoch_));
    for (const auto& point : forkLoss) {
        const auto same = std::find_if(parentLoss.begin(), parentLoss.end(),
                                       [&](const auto& p) { return p.step == point.step; });
        QVERIFY(same != parentLoss.end());
        QVERIFY2(std::bit_cast<quint64>(same->value) == std::bit_cast<quint64>(point.value),
                 qPrintable(QStringLiteral("step %1: parent %2, fork %3")
                                .arg(point.step)
                                .arg(same->value, 0, 'g', 17)
                                .arg(point.value, 0, 'g', 17)));
    }
}

void TestForkDialog::forkWithAnLrEditRecordsIt() {
    ForkDialog dialog(store_, parent_, ForkDialog::Mode::Fork);
    QVERIFY(dialog.selectCheckpoint(2 * stepsPerEpoch_));
    dialog.learningRateEdit()->setText(QStringLiteral("0.002"));
    dialog.epochsEdit()->setValue(4);
    QListWidget* frozen = dialog.frozenLayersEdit();
    QCOMPARE(frozen->count(), 2); // fc1 and fc2 have parameters; ReLU and Dropout do not
    frozen->item(0)->setCheckState(Qt::Checked);
    const auto changes = dialog.changes();
    QCOMPARE(dialog.changesTable()->rowCount(), int(changes.size()));
    QCOMPARE(changes.size(), size_t(3));
    dialog.resize(1000, 700);
    myelin::test::saveScreenshot(dialog, QStringLiteral("runs_fork_diff.png"));

    ui::TrainingStartOptions options;
    options.fork = dialog.forkSource();
    const qint64 fork = train(dialog.project(), options);
    QVERIFY(fork > 0);
    auto store = store::RunStore::open(store_.toStdString());
    const auto params = store.params(fork);
    QCOMPARE(params.at("fork.from"),
             std::to_string(parent_) + "@" + std::to_string(2 * stepsPerEpoch_));
    QCOMPARE(params.at("fork.diff.training.optimizer.lr"), std::string("0.01 -> 0.002"));
    QCOMPARE(params.at("fork.diff.training.epochs"), std::string("3 -> 4"));
    QVERIFY(params.count("fork.diff.model.nodes[1].frozen"));
    // epochs 3 and 4
    QCOMPARE(store.metric_series(fork, "loss").size(), size_t(2 * stepsPerEpoch_));
    // The frozen layer's weights did not move: its weight norm is constant.
    const auto norms = store.metric_series(fork, "weight_norm/fc1");
    QVERIFY(!norms.empty());
    for (const auto& n : norms)
        QCOMPARE(n.value, norms.front().value);
}

void TestForkDialog::resumeContinuesFromTheChosenCheckpoint() {
    ForkDialog dialog(store_, parent_, ForkDialog::Mode::Resume);
    QVERIFY(dialog.selectCheckpoint(stepsPerEpoch_));
    QVERIFY(dialog.changes().empty());
    QVERIFY(!dialog.findChild<QWidget*>(QStringLiteral("forkEdits"))->isEnabled());
    ui::TrainingStartOptions options;
    options.resume = dialog.checkpointPath();
    const qint64 resumed = train(dialog.project(), options);
    QVERIFY(resumed > 0);
    auto store = store::RunStore::open(store_.toStdString());
    QCOMPARE(store.run(resumed).parent_run.value_or(-1), int64_t(parent_));
    const auto loss = store.metric_series(resumed, "loss");
    QVERIFY(!loss.empty());
    QCOMPARE(loss.front().step, stepsPerEpoch_ + 1);
}

void TestForkDialog::runningAndDeletedRunsAreRefused() {
    auto store = store::RunStore::open(store_.toStdString());
    // A run of this (living) process that has not ended: still running.
    const int64_t running = store.create_run({.name = "going", .pid = int64_t(getpid())});
    {
        ForkDialog dialog(store_, running, ForkDialog::Mode::Fork);
        QVERIFY2(dialog.problem().contains(QStringLiteral("still running")),
                 qPrintable(dialog.problem()));
        QVERIFY(!dialog.findChild<QPushButton*>(QStringLiteral("forkStart"))->isEnabled());
    }
    store.finish_run(running, store::RunStatus::Finished);
    {
        ForkDialog dialog(store_, running, ForkDialog::Mode::Fork);
        QVERIFY2(dialog.problem().contains(QStringLiteral("wrote no checkpoint")),
                 qPrintable(dialog.problem()));
    }
    // A run whose checkpoint files were deleted: each listed as deleted, nothing to start.
    const int64_t copy = train(project());
    QVERIFY(copy > 0);
    for (const auto& a : store.artifacts(copy))
        std::filesystem::remove(a.path);
    ForkDialog dialog(store_, copy, ForkDialog::Mode::Fork);
    QVERIFY2(dialog.problem().contains(QStringLiteral("deleted")), qPrintable(dialog.problem()));
    QVERIFY(!dialog.checkpointStep());
    QVERIFY(!dialog.findChild<QPushButton*>(QStringLiteral("forkStart"))->isEnabled());
    QVERIFY(!dialog.selectCheckpoint(stepsPerEpoch_));
    QCOMPARE(store.run(copy).status, store::RunStatus::Finished); // nothing changed
}

// A run that trained on cuda:0 (recorded so here: this machine has no usable GPU) is resumed
// from the studio on the CPU: the dialog picks the CPU, says why, and the run goes on there.
void TestForkDialog::aGpuRunResumesOnTheCpu() {
    if (cuda_status().usable()) QSKIP("a usable GPU: the run's own device would be kept");
    auto store = store::RunStore::open(store_.toStdString());
    io::Project gpu_project = project();
    gpu_project.train.device = "cuda:0";
    const int64_t gpu_run = store.create_run(
        {.name = "on the gpu",
         .project_json = io::serialize_project(gpu_project),
         .device = "cuda:0",
         .project_path = dir_.filePath(QStringLiteral("blobs.myelin")).toStdString()});
    // Its own copies of the parent's checkpoints (as if it had written them).
    for (const store::Artifact& a : store.artifacts(parent_)) {
        if (a.kind != "checkpoint") continue;
        const std::filesystem::path copy =
            a.path.parent_path() / ("gpu-" + a.path.filename().string());
        std::filesystem::copy_file(a.path, copy, std::filesystem::copy_options::overwrite_existing);
        store.add_artifact(
            gpu_run,
            {.kind = a.kind, .path = copy, .step = a.step, .metadata_json = a.metadata_json});
    }
    store.finish_run(gpu_run, store::RunStatus::Finished);

    ForkDialog dialog(store_, gpu_run, ForkDialog::Mode::Resume);
    QVERIFY2(dialog.problem().isEmpty(), qPrintable(dialog.problem()));
    QCOMPARE(dialog.devicePicker()->device(), QStringLiteral("cpu"));
    auto* note = dialog.findChild<QLabel*>(QStringLiteral("forkDeviceNote"));
    QVERIFY(note && !note->isHidden());
    QVERIFY2(note->text().contains(QStringLiteral("cuda:0")) &&
                 note->text().contains(QString::fromStdString(cuda_status().reason)),
             qPrintable(note->text()));
    QCOMPARE(dialog.project().train.device, std::string("cpu"));
    QVERIFY(dialog.selectCheckpoint(stepsPerEpoch_));
    myelin::test::saveScreenshot(dialog, QStringLiteral("fork_dialog_gpu_run_on_cpu.png"));

    ui::TrainingStartOptions options;
    options.resume = dialog.checkpointPath();
    const qint64 resumed = train(dialog.project(), options);
    QVERIFY(resumed > 0);
    const store::Run run = store::RunStore::open(store_.toStdString()).run(resumed);
    QCOMPARE(run.device, std::string("cpu"));
    QCOMPARE(run.parent_run.value_or(-1), gpu_run);
}

QTEST_MAIN(TestForkDialog)
#include "test_fork_dialog.moc"
