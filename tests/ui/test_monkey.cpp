// Random input over the whole studio (issue 41): seeded sequences of clicks, double-clicks,
// drags (also between ports on the canvas), wheel, keys and context-menu picks over every tab,
// dock and dialog, with training runs started and stopped among them. Fails on a Qt warning
// about invalid use, a modal dialog that cannot be closed, a run that does not end, or a write
// into the checkout's examples; a crash or sanitizer finding ends the process.
//
//   MYELIN_MONKEY_SECONDS  how long the events go on (default 20: ctest's short run)
//   MYELIN_MONKEY_SEED     the std::mt19937 seed that chooses every event (default 41)
//   MYELIN_MONKEY_LOG      the event log (one line per event); default: in the sandbox
//
// scripts/monkey.sh SECONDS SEED runs it longer in a real X window (Xvfb). Everything the studio
// writes (settings, autosaves, run store, saved projects) stays in a temporary sandbox: HOME,
// the XDG folders, the working directory, the examples folder and the project are all in it.
#include "blobs_project.h"
#include "document/project_document.h"
#include "editor/graph_scene.h"
#include "editor/graph_view.h"
#include "editor/model_editor.h"
#include "editor/node_item.h"
#include "monkey.h"
#include "shell/main_window.h"
#include "training/training_controller.h"
#include "ui_test_support.h"
#include "widgets/theme.h"

#include <qcustomplot.h>

#include <QApplication>
#include <QDateTime>
#include <QDir>
#include <QDirIterator>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QMutex>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSplitter>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QWindow>
#include <QtTest>

#include <cstdio>

using myelin::test::monkey::describe;
using myelin::test::monkey::invalidUseMessages;
using myelin::test::monkey::messagesMutex;
using myelin::test::monkey::Monkey;
using myelin::ui::MainWindow;
using myelin::ui::TrainingController;

namespace {

constexpr int kDefaultSeconds = 20;
constexpr quint32 kDefaultSeed = 41;
constexpr int kRunEndTimeoutMs = 60000;

// name, size and modification time of every file below `dir`: equal before and after means
// nothing there was written.
QStringList fingerprint(const QString& dir) {
    QStringList lines;
    QDirIterator it(dir, QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot,
                    QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QFileInfo info(it.next());
        lines << QStringLiteral("%1 %2 %3")
                     .arg(info.filePath())
                     .arg(info.size())
                     .arg(info.lastModified().toMSecsSinceEpoch());
    }
    lines.sort();
    return lines;
}

bool copyFolder(const QString& from, const QString& to) {
    QDir().mkpath(to);
    QDirIterator it(from, QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot,
                    QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QFileInfo info(it.next());
        const QString target = QDir(to).filePath(QDir(from).relativeFilePath(info.filePath()));
        if (info.isDir() ? !QDir().mkpath(target) : !QFile::copy(info.filePath(), target))
            return false;
    }
    return true;
}

} // namespace

class TestMonkey : public QObject {
    Q_OBJECT

  public:
    explicit TestMonkey(QString sandbox) : sandbox_(std::move(sandbox)) {}

  private slots:
    void initTestCase();
    void collapsedPlotPaintsNothing();
    void selectedLayersSurviveAnotherProject();
    void tabsAroundADockDrag();
    void dragAwayFromTheScrolledEnd();
    void randomInput();

  private:
    // A one-epoch blobs project in its own folder of the sandbox; empty when it cannot be made.
    QString blobsProject(const QString& folder) const {
        const QString dir = QDir(sandbox_).filePath(folder);
        return QDir().mkpath(dir) ? myelin::test::writeBlobsProject(dir, 1) : QString();
    }
    // `w` at a full-screen size, shown, exposed and on `project`.
    static bool shownOn(MainWindow& w, const QString& project) {
        w.resize(1280, 860);
        w.show();
        return QTest::qWaitForWindowExposed(&w) && w.openProject(project);
    }

    QString sandbox_;
};

void TestMonkey::initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("MyelinTest"));
    QCoreApplication::setApplicationName(QStringLiteral("test_monkey"));
    // Quit and closing the window must not end the test's event loop: the monkey shows it again.
    QApplication::setQuitOnLastWindowClosed(false);
    myelin::ui::applyStudioTheme(*qApp);
    myelin::test::monkey::previousHandler =
        qInstallMessageHandler(myelin::test::monkey::recordMessage);
}

// Found by the monkey (a splitter handle dragged to the end): a studio plot collapsed to nothing
// must not paint into an empty pixmap.
void TestMonkey::collapsedPlotPaintsNothing() {
    QSplitter split(Qt::Vertical);
    auto* plot = new QCustomPlot(&split);
    myelin::ui::stylePlot(plot, {plot->xAxis, plot->yAxis});
    plot->addGraph()->setData({0.0, 1.0, 2.0}, {1.0, 3.0, 2.0});
    split.addWidget(plot);
    split.addWidget(new QLabel(QStringLiteral("below")));
    split.resize(400, 300);
    split.show();
    QVERIFY(QTest::qWaitForWindowExposed(&split));
    const qsizetype before = [] {
        QMutexLocker lock(&messagesMutex);
        return invalidUseMessages.size();
    }();
    split.setSizes({0, 300});
    QCOMPARE(plot->height(), 0);
    plot->replot();
    QApplication::processEvents();
    split.setSizes({150, 150});
    plot->replot();
    QApplication::processEvents();
    QMutexLocker lock(&messagesMutex);
    QCOMPARE(invalidUseMessages.mid(before), QStringList());
}

// Found by the monkey (seed 41: layers selected, then an example opened from File > New): the
// canvas deleted the old cards while its maps still held them, and the selection signal that a
// deleted selected card sends read them.
void TestMonkey::selectedLayersSurviveAnotherProject() {
    const QString project = blobsProject(QStringLiteral("selected"));
    QVERIFY(!project.isEmpty());
    MainWindow w;
    w.show();
    QVERIFY(w.openProject(project));
    myelin::ui::GraphScene* scene = w.editor()->scene();
    std::vector<myelin::graph::NodeId> all;
    for (const auto& node : w.document()->spec().nodes)
        all.push_back(node.id);
    scene->selectNodes(all);
    QCOMPARE(scene->selectedNodeIds().size(), all.size());
    // The same node ids again (1..5): the stale cards would be found by id.
    QVERIFY(w.newProject(project));
    QVERIFY(scene->selectedNodeIds().empty());
    QCOMPARE(scene->nodeItem(all.front()) != nullptr, true);
}

// Found by the monkey (seed 11): the Runs tab and back while a dock was being dragged, or just
// after it was dropped (while it was animated into place), restored the docks' layout under
// the drag and crashed in QMainWindow::restoreState.
void TestMonkey::tabsAroundADockDrag() {
    MainWindow w;
    QVERIFY(shownOn(w, blobsProject(QStringLiteral("dockdrag"))));
    auto* palette = w.findChild<QDockWidget*>(QStringLiteral("paletteDock"));
    auto* live = w.findChild<QDockWidget*>(QStringLiteral("trainingDock"));
    live->show();
    live->raise();
    QTabWidget* tabs = w.workspaceTabs();
    QWidget* runs = w.findChild<QWidget*>(QStringLiteral("runsPage"));
    QVERIFY(runs != nullptr);

    QWindow* window = w.windowHandle();
    const QPoint title = live->mapTo(&w, QPoint(30, 8)); // the dock's title bar
    QTest::mouseMove(window, title);
    QTest::mousePress(window, Qt::LeftButton, {}, title);
    for (int i = 1; i <= 6; ++i)
        QTest::mouseMove(window, title + QPoint(15 * i, 20 * i));
    QCOMPARE(QWidget::mouseGrabber(), live); // being dragged
    tabs->setCurrentWidget(runs);
    tabs->setCurrentWidget(w.editor());
    tabs->setCurrentWidget(runs);
    QVERIFY(palette->isVisible()); // the docks wait for the drag to end
    QTest::mouseRelease(window, Qt::LeftButton, {}, title + QPoint(90, 120));
    QVERIFY(live->isFloating());
    QTRY_VERIFY(!palette->isVisible()); // then step aside for the Runs tab

    // Just after a drop.
    QTest::mouseMove(window, title);
    tabs->setCurrentWidget(w.editor());
    const QPoint paletteTitle = palette->mapTo(&w, QPoint(30, 8));
    QTest::mousePress(window, Qt::LeftButton, {}, paletteTitle);
    for (int i = 1; i <= 6; ++i)
        QTest::mouseMove(window, paletteTitle + QPoint(20 * i, 20 * i));
    QTest::mouseRelease(window, Qt::LeftButton, {}, paletteTitle + QPoint(120, 120));
    tabs->setCurrentWidget(runs);
    tabs->setCurrentWidget(w.editor());
    QVERIFY(palette->isVisible());
    QVERIFY(live->isVisible());
}

// Found by the monkey under xcb (seed 41): all layers selected and dragged away from the end the
// canvas was scrolled to. Each committed move shrank the scene, the view scrolled back to its
// end and replayed the move, which moved the cards and committed again, until the stack
// overflowed.
void TestMonkey::dragAwayFromTheScrolledEnd() {
    MainWindow w;
    QVERIFY(shownOn(w, blobsProject(QStringLiteral("scrolled"))));
    myelin::ui::GraphScene* scene = w.editor()->scene();
    myelin::ui::GraphView* view = w.editor()->view();
    std::vector<myelin::graph::NodeId> all;
    for (const auto& node : w.document()->spec().nodes)
        all.push_back(node.id);
    scene->selectNodes(all);
    // Zoomed so that the scene is wider than the view and its right end shows the cards.
    QWidget* viewport = view->viewport();
    const double zoom = 1.5 * viewport->width() / scene->sceneRect().width();
    view->zoomBy(zoom / view->zoom());
    const QPointF grab = scene->nodeItem(all.front())->sceneBoundingRect().center();
    view->centerOn(grab);
    QScrollBar* bar = view->horizontalScrollBar();
    bar->setValue(bar->maximum());
    QVERIFY(bar->maximum() > bar->minimum());
    const QPoint at = view->mapFromScene(grab);
    QVERIFY(viewport->rect().contains(at));
    const double xBefore = w.document()->spec().node(all.front()).x;

    QTest::mousePress(viewport, Qt::LeftButton, Qt::NoModifier, at);
    for (int step = 1; step <= 5; ++step)
        QTest::mouseMove(viewport, at - QPoint(15 * step, 0));
    QTest::mouseRelease(viewport, Qt::LeftButton, Qt::NoModifier, at - QPoint(75, 0));
    QVERIFY(w.document()->spec().node(all.front()).x < xBefore);
}

void TestMonkey::randomInput() {
    bool ok = false;
    const int seconds = qEnvironmentVariableIntValue("MYELIN_MONKEY_SECONDS", &ok);
    const qint64 durationMs = 1000 * qint64(ok && seconds > 0 ? seconds : kDefaultSeconds);
    const QByteArray seedText = qgetenv("MYELIN_MONKEY_SEED");
    const quint32 seed = seedText.isEmpty() ? kDefaultSeed : seedText.toUInt(&ok);
    QVERIFY2(seedText.isEmpty() || ok, "MYELIN_MONKEY_SEED must be a number from 0 to 2^32-1");
    QString logPath = qEnvironmentVariable("MYELIN_MONKEY_LOG");
    if (logPath.isEmpty()) logPath = QDir(sandbox_).filePath(QStringLiteral("monkey-events.log"));

    // A tiny project that trains in seconds (blobs), copied into the sandbox, and the run store.
    const QString projectDir = QDir(sandbox_).filePath(QStringLiteral("project"));
    QVERIFY(QDir().mkpath(projectDir));
    // 400 epochs: the scheduled stop and many random events come while it trains.
    const QString project = myelin::test::writeBlobsProject(projectDir, 400, 900);
    QVERIFY(!project.isEmpty());
    const QString examples =
        QDir(myelin::test::sourceDir()).filePath(QStringLiteral("resources/examples"));
    const QStringList examplesBefore = fingerprint(examples);
    QVERIFY(!examplesBefore.isEmpty());

    MainWindow w;
    w.trainingController()->setStorePath(QDir(sandbox_).filePath(QStringLiteral("runs.sqlite")));
    w.resize(1280, 860);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openProject(project));
    QSignalSpy started(w.trainingController(), &TrainingController::runStarted);
    QSignalSpy finished(w.trainingController(), &TrainingController::finished);

    Monkey monkey(w, seed, durationMs, logPath);
    QVERIFY2(monkey.open(), qPrintable(QStringLiteral("cannot write ") + logPath));
    std::printf("monkey: seed %u, %lld s, platform %s; events logged to %s\n", seed,
                static_cast<long long>(durationMs / 1000),
                qPrintable(QGuiApplication::platformName()), qPrintable(logPath));
    std::fflush(stdout);
    monkey.start();
    while (!monkey.timeIsUp())
        QTest::qWait(50);

    // Wind down: close what is open, stop a run still going and wait for its end.
    monkey.stop();
    monkey.record(QStringLiteral("time is up: closing dialogs, stopping the run"));
    QElapsedTimer windDown;
    windDown.start();
    while ((QApplication::activeModalWidget() != nullptr ||
            QApplication::activePopupWidget() != nullptr) &&
           windDown.elapsed() < 10000)
        QTest::qWait(50);
    if (QApplication::activeModalWidget() != nullptr)
        monkey.fail(QStringLiteral("a modal dialog is still open at the end: ") +
                    describe(QApplication::activeModalWidget()));
    if (!w.isVisible()) w.show();
    TrainingController* training = w.trainingController();
    if (training->state() == TrainingController::State::Paused) w.resumeTraining();
    if (training->isActive()) w.stopTraining();
    QElapsedTimer runEnd;
    runEnd.start();
    while (training->isActive() && runEnd.elapsed() < kRunEndTimeoutMs) {
        QTest::qWait(50);
        // A stop can open an error box (e.g. the store); close those too.
        if (QWidget* modal = QApplication::activeModalWidget())
            if (auto* dialog = qobject_cast<QDialog*>(modal)) dialog->reject();
    }
    if (training->isActive()) monkey.fail(QStringLiteral("the training run did not end"));
    monkey.record(QStringLiteral("done"));

    monkey.checkMessages();
    if (fingerprint(examples) != examplesBefore)
        monkey.fail(QStringLiteral("the checkout's examples were written: ") + examples);

    std::printf("monkey: %lld events, %d dialogs and %d menus closed by the watchdog, %lld runs "
                "started, %lld ended\n",
                static_cast<long long>(monkey.steps()), monkey.dialogsClosed(),
                monkey.menusClosed(), static_cast<long long>(started.count()),
                static_cast<long long>(finished.count()));
    if (!monkey.failures().isEmpty()) {
        std::printf("monkey: FAILED with seed %u; the last events before the first failure:\n",
                    seed);
        for (const QString& line : monkey.eventsAtFirstFailure())
            std::printf("  %s\n", qPrintable(line));
        for (const QString& failure : monkey.failures())
            std::printf("  failure: %s\n", qPrintable(failure));
        std::printf("monkey: replay with MYELIN_MONKEY_SEED=%u MYELIN_MONKEY_SECONDS=%lld\n", seed,
                    static_cast<long long>(durationMs / 1000));
        std::fflush(stdout);
    }
    QVERIFY2(monkey.failures().isEmpty(), qPrintable(monkey.failures().value(0)));
    // The events reached the studio: the scheduled run started, and every run ended (some end
    // before they start: data the monkey made unreadable, a stop before the first step).
    QVERIFY2(started.count() >= 1, "no training run started");
    QVERIFY(finished.count() >= started.count());
    QVERIFY(!w.trainingController()->isActive());
}

// The sandbox exists before QApplication, so that nothing (Qt's own start-up included) reads or
// writes the person's HOME or XDG folders.
int main(int argc, char** argv) {
    QTemporaryDir sandbox;
    if (!sandbox.isValid()) {
        std::fprintf(stderr, "test_monkey: cannot make a temporary folder\n");
        return 1;
    }
    const QDir root(sandbox.path());
    for (const char* name : {"home", "config", "data", "cache", "state", "runtime", "work"})
        root.mkpath(QString::fromLatin1(name));
    QFile::setPermissions(root.filePath(QStringLiteral("runtime")),
                          QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
    qputenv("HOME", root.filePath(QStringLiteral("home")).toUtf8());
    qputenv("XDG_CONFIG_HOME", root.filePath(QStringLiteral("config")).toUtf8());
    qputenv("XDG_DATA_HOME", root.filePath(QStringLiteral("data")).toUtf8());
    qputenv("XDG_CACHE_HOME", root.filePath(QStringLiteral("cache")).toUtf8());
    qputenv("XDG_STATE_HOME", root.filePath(QStringLiteral("state")).toUtf8());
    qputenv("XDG_RUNTIME_DIR", root.filePath(QStringLiteral("runtime")).toUtf8());
    // File > New and the welcome page offer copies of the examples, never the checkout's files.
    const QString examples =
        QDir(myelin::test::sourceDir()).filePath(QStringLiteral("resources/examples"));
    if (!copyFolder(examples, root.filePath(QStringLiteral("examples")))) {
        std::fprintf(stderr, "test_monkey: cannot copy %s\n", qPrintable(examples));
        return 1;
    }
    qputenv("MYELIN_EXAMPLES_DIR", root.filePath(QStringLiteral("examples")).toUtf8());
    QDir::setCurrent(root.filePath(QStringLiteral("work"))); // relative paths land here
    // Qt's own file and message dialogs: the monkey can see and close them on every platform.
    QCoreApplication::setAttribute(Qt::AA_DontUseNativeDialogs);

    QApplication app(argc, argv);
    TestMonkey test(sandbox.path());
    const int result = QTest::qExec(&test, argc, argv);
    if (result != 0) {
        sandbox.setAutoRemove(false);
        std::printf("monkey: the sandbox (event log, project, run store) is kept in %s\n",
                    qPrintable(sandbox.path()));
    }
    return result;
}

#include "test_monkey.moc"
