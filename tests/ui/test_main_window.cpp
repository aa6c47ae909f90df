// MainWindow driven offscreen: menus, status bar, title, dialogs, and a screenshot artifact.
#include "document/project_document.h"
#include "shell/backends_dialog.h"
#include "shell/main_window.h"
#include "ui_test_support.h"
#include "widgets/theme.h"

#include <myelin/device.h>
#include <myelin/export/export.h>
#include <myelin/generator.h>
#include <myelin/graph/build.h>
#include <myelin/io/project.h>
#include <myelin/version.h>

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QFrame>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QStackedWidget>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QUndoCommand>
#include <QUndoStack>
#include <QtTest>

using myelin::ui::MainWindow;

using myelin::test::artifactsDir;
using myelin::test::saveScreenshot;

namespace {

QString plainTitle(const QMenu* menu) {
    return menu->title().remove(QLatin1Char('&'));
}

class CounterCommand : public QUndoCommand {
  public:
    explicit CounterCommand(int& counter) : counter_(counter) { setText(QStringLiteral("step")); }
    void redo() override { ++counter_; }
    void undo() override { --counter_; }

  private:
    int& counter_;
};

} // namespace

class TestMainWindow : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase();
    void menusExist();
    void withoutProjectOnlyProjectActionsAreDisabled();
    void projectActionsEnableWithProject();
    void statusBarShowsBackends();
    void titleWithoutProject();
    void titleWithProject();
    void missingProjectStillOpens();
    void malformedProjectAtStartupIsExplained();
    void welcomePageShowsBackends();
    void undoRedoFollowStack();
    void statusBarToggles();
    void fullScreenToggles();
    void backendsDialogListsBackends();
    void aboutDialogShowsVersion();
    void importModelOpensItsProject();
    void screenshot();
};

void TestMainWindow::initTestCase() {
    // Settings (recent files) and autosave files go to a test location, not the user's.
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("MyelinTest"));
    QCoreApplication::setApplicationName(QStringLiteral("test_main_window"));
    QSettings().clear();
    myelin::ui::applyStudioTheme(*qApp);
    QVERIFY(!myelin::ui::studioIcon().isNull());
}

void TestMainWindow::menusExist() {
    MainWindow w;
    const QStringList expected = {QStringLiteral("File"), QStringLiteral("Edit"),
                                  QStringLiteral("View"), QStringLiteral("Train"),
                                  QStringLiteral("Help")};
    QStringList titles;
    for (QAction* action : w.menuBar()->actions())
        if (action->menu() != nullptr) titles << plainTitle(action->menu());
    QCOMPARE(titles, expected);

    for (const char* name : {"menuFile", "menuEdit", "menuView", "menuTrain", "menuHelp"})
        QVERIFY2(w.findChild<QMenu*>(QString::fromLatin1(name)) != nullptr, name);
    for (const char* name : {"actionQuit", "actionUndo", "actionRedo", "actionToggleStatusBar",
                             "actionFullScreen", "actionBackends", "actionAbout", "actionAboutQt"})
        QVERIFY2(w.findChild<QAction*>(QString::fromLatin1(name)) != nullptr, name);
}

// No placeholder entries: without a project every menu action works, except undo/redo (empty
// stack) and the actions that need an open project or a selection.
const QStringList kProjectActions = {
    QStringLiteral("actionUndo"), QStringLiteral("actionRedo"), QStringLiteral("actionSave"),
    QStringLiteral("actionSaveAs"), QStringLiteral("actionCloseProject"),
    QStringLiteral("actionRecentMenu"), QStringLiteral("actionCut"), QStringLiteral("actionCopy"),
    QStringLiteral("actionPaste"), QStringLiteral("actionDuplicate"),
    QStringLiteral("actionDelete"), QStringLiteral("actionRename"),
    QStringLiteral("actionDisconnect"), QStringLiteral("actionSelectAll"),
    QStringLiteral("actionArrangeLayers"), QStringLiteral("actionZoomIn"),
    QStringLiteral("actionZoomOut"), QStringLiteral("actionZoomReset"), QStringLiteral("actionFit"),
    QStringLiteral("actionSnapToGrid"), QStringLiteral("actionShow_paletteDock"),
    QStringLiteral("actionShow_inspectorDock"), QStringLiteral("actionShow_problemsDock"),
    QStringLiteral("actionShow_summaryDock"), QStringLiteral("actionShow_trainingDock"),
    QStringLiteral("actionTrain"),
    // No run to pause, resume or stop without a project.
    QStringLiteral("actionPause"), QStringLiteral("actionResume"), QStringLiteral("actionStop"),
    QStringLiteral("actionChangeWhilePaused")};

void TestMainWindow::withoutProjectOnlyProjectActionsAreDisabled() {
    QSettings().remove(QStringLiteral("recentFiles"));
    MainWindow w;
    for (QMenu* menu : w.menuBar()->findChildren<QMenu*>()) {
        QVERIFY2(!menu->actions().isEmpty() || menu->objectName() == QLatin1String("menuRecent"),
                 qPrintable(plainTitle(menu)));
        for (QAction* action : menu->actions()) {
            if (action->isSeparator()) continue;
            const bool needsProject = kProjectActions.contains(action->objectName());
            QVERIFY2(action->isEnabled() != needsProject,
                     qPrintable(action->text() + QStringLiteral(" ") + action->objectName()));
        }
    }
}

void TestMainWindow::projectActionsEnableWithProject() {
    MainWindow w;
    QVERIFY(w.newProject());
    for (const char* name : {"actionSave", "actionSaveAs", "actionCloseProject", "actionSelectAll",
                             "actionZoomIn", "actionFit", "actionSnapToGrid"})
        QVERIFY2(w.findChild<QAction*>(QString::fromLatin1(name))->isEnabled(), name);
    // Selection-dependent actions wait for a selection.
    for (const char* name : {"actionCut", "actionCopy", "actionDelete", "actionRename"})
        QVERIFY2(!w.findChild<QAction*>(QString::fromLatin1(name))->isEnabled(), name);
    QCOMPARE(w.windowTitle(), QStringLiteral("Myelin Studio — Untitled"));
    QVERIFY(w.closeProject());
    QCOMPARE(w.windowTitle(), QStringLiteral("Myelin Studio"));
}

void TestMainWindow::statusBarShowsBackends() {
    MainWindow w;
    auto* label = w.statusBar()->findChild<QLabel*>(QStringLiteral("backendsLabel"));
    QVERIFY(label != nullptr);
    QVERIFY2(label->text().contains(QStringLiteral("CPU")), qPrintable(label->text()));
    QCOMPARE(label->text(), QString::fromStdString(myelin::backends_summary()));
}

void TestMainWindow::titleWithoutProject() {
    MainWindow w;
    QCOMPARE(w.windowTitle(), QStringLiteral("Myelin Studio"));
    QVERIFY(w.projectPath().isEmpty());
    QCOMPARE(w.size(), QSize(1280, 800));
}

void TestMainWindow::titleWithProject() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("fashion_mlp.myelin"));
    myelin::io::save_project(myelin::io::Project{}, path.toStdString());

    MainWindow w(path);
    QCOMPARE(w.windowTitle(), QStringLiteral("Myelin Studio — fashion_mlp.myelin"));
    QCOMPARE(w.projectPath(), QFileInfo(path).absoluteFilePath());
    // The editor replaces the welcome page.
    auto* pages = qobject_cast<QStackedWidget*>(w.centralWidget());
    QVERIFY(pages != nullptr);
    QCOMPARE(pages->currentWidget()->objectName(), QStringLiteral("workspace"));
    QCOMPARE(w.workspaceTabs()->currentWidget()->objectName(), QStringLiteral("modelEditor"));
    // Model, Data, Training, Gradient Flow, Distributions, Feature Maps, Gradient through Time
    // (hidden until a run with recurrent layers is shown), Runs, Evaluate
    QCOMPARE(w.workspaceTabs()->count(), 9);
    QCOMPARE(w.workspaceTabs()->tabText(5), QStringLiteral("Feature Maps"));
    QCOMPARE(w.workspaceTabs()->tabText(6), QStringLiteral("Gradient through Time"));
    QVERIFY(!w.workspaceTabs()->isTabVisible(6));
    QCOMPARE(w.workspaceTabs()->tabText(7), QStringLiteral("Runs"));
    QCOMPARE(w.workspaceTabs()->tabText(8), QStringLiteral("Evaluate"));
}

void TestMainWindow::malformedProjectAtStartupIsExplained() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("broken.myelin"));
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("{\n  \"format_version\": 1,\n  \"model\": [\n}\n");
    file.close();

    MainWindow w(path);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QCOMPARE(w.windowTitle(), QStringLiteral("Myelin Studio"));
    QVERIFY(w.projectPath().isEmpty());
    auto* notice = w.findChild<QLabel*>(QStringLiteral("projectNotice"));
    QVERIFY(notice->isVisible());
    // The message names the file and the line:column of the error.
    QVERIFY2(notice->text().contains(QStringLiteral("broken.myelin:4:1")),
             qPrintable(notice->text()));
}

void TestMainWindow::missingProjectStillOpens() {
    MainWindow w(QStringLiteral("/nonexistent/dir/missing.myelin"));
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QCOMPARE(w.windowTitle(), QStringLiteral("Myelin Studio"));
    QVERIFY(w.projectPath().isEmpty());
    auto* notice = w.findChild<QLabel*>(QStringLiteral("projectNotice"));
    QVERIFY(notice != nullptr);
    QVERIFY(notice->isVisible());
    QVERIFY2(notice->text().contains(QStringLiteral("missing.myelin")), qPrintable(notice->text()));
    saveScreenshot(w, QStringLiteral("main_window_missing_project.png"));
}

void TestMainWindow::welcomePageShowsBackends() {
    MainWindow w;
    auto* title = w.findChild<QLabel*>(QStringLiteral("welcomeTitle"));
    QVERIFY(title != nullptr);
    QCOMPARE(title->text(), QStringLiteral("Myelin Studio"));
    QVERIFY(w.findChild<QLabel*>(QStringLiteral("welcomeSubtitle")) != nullptr);
    QVERIFY(w.findChild<QLabel*>(QStringLiteral("welcomeRoadmap")) != nullptr);

    const auto backends = myelin::available_backends();
    const QList<QFrame*> cards = w.findChildren<QFrame*>(QStringLiteral("backendCard"));
    QCOMPARE(cards.size(), static_cast<qsizetype>(backends.size()));
    QCOMPARE(cards.first()->property("backend").toString(), QStringLiteral("CPU"));
}

void TestMainWindow::undoRedoFollowStack() {
    MainWindow w;
    auto* undo = w.findChild<QAction*>(QStringLiteral("actionUndo"));
    auto* redo = w.findChild<QAction*>(QStringLiteral("actionRedo"));
    QVERIFY(!undo->isEnabled());
    QVERIFY(!redo->isEnabled());

    int counter = 0;
    w.undoStack()->push(new CounterCommand(counter));
    QCOMPARE(counter, 1);
    QVERIFY(undo->isEnabled());
    undo->trigger();
    QCOMPARE(counter, 0);
    QVERIFY(redo->isEnabled());
    redo->trigger();
    QCOMPARE(counter, 1);
}

void TestMainWindow::statusBarToggles() {
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    auto* toggle = w.findChild<QAction*>(QStringLiteral("actionToggleStatusBar"));
    QVERIFY(toggle->isChecked());
    QVERIFY(w.statusBar()->isVisible());
    toggle->trigger();
    QVERIFY(!w.statusBar()->isVisible());
    toggle->trigger();
    QVERIFY(w.statusBar()->isVisible());
}

void TestMainWindow::fullScreenToggles() {
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    auto* fullScreen = w.findChild<QAction*>(QStringLiteral("actionFullScreen"));
    QVERIFY(!fullScreen->isChecked());
    fullScreen->trigger();
    QTRY_VERIFY(w.windowState().testFlag(Qt::WindowFullScreen));
    QVERIFY(fullScreen->isChecked());
    fullScreen->trigger();
    QTRY_VERIFY(!w.windowState().testFlag(Qt::WindowFullScreen));
    QVERIFY(!fullScreen->isChecked());
}

void TestMainWindow::backendsDialogListsBackends() {
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.findChild<QAction*>(QStringLiteral("actionBackends"))->trigger();

    auto* dialog = w.findChild<myelin::ui::BackendsDialog*>();
    QVERIFY(dialog != nullptr);
    QVERIFY(QTest::qWaitForWindowExposed(dialog));
    auto* table = dialog->findChild<QTableWidget*>(QStringLiteral("backendsTable"));
    QVERIFY(table != nullptr);
    const auto backends = myelin::available_backends();
    QCOMPARE(table->rowCount(), static_cast<int>(backends.size()));
    QCOMPARE(table->item(0, 0)->text(), QStringLiteral("CPU"));
    QCOMPARE(table->item(0, 2)->text(), QString::fromStdString(backends.front().details));
    auto* cuda = dialog->findChild<QLabel*>(QStringLiteral("cudaLabel"));
    QVERIFY(cuda != nullptr);
    QVERIFY2(cuda->text().startsWith(QStringLiteral("Compiled in (CUDA ")) ||
                 cuda->text().startsWith(QStringLiteral("Not built (")),
             qPrintable(cuda->text()));
    saveScreenshot(*dialog, QStringLiteral("backends_dialog.png"));
    dialog->close();
}

void TestMainWindow::aboutDialogShowsVersion() {
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.findChild<QAction*>(QStringLiteral("actionAbout"))->trigger();

    auto* box = w.findChild<QMessageBox*>(QStringLiteral("aboutDialog"));
    QVERIFY(box != nullptr);
    QVERIFY(box->text().contains(QString::fromLatin1(myelin::version())));
    QVERIFY(box->text().contains(QStringLiteral("CPU")));
    QVERIFY(QTest::qWaitForWindowExposed(box));
    saveScreenshot(*box, QStringLiteral("about_dialog.png"));
    box->close();
}

// File > Import Model…: the shipped CNN exported to ONNX and imported again opens as a project
// of Myelin layers that starts its runs from the imported weights; a file that is no model is
// refused in a message box and nothing is written.
void TestMainWindow::importModelOpensItsProject() {
    QTemporaryDir dir;
    myelin::exporters::ExportSource source;
    source.project =
        myelin::io::load_project(myelin::test::examplePath("fashion_cnn").toStdString());
    myelin::default_generator().manual_seed(3);
    source.weights = myelin::graph::build(source.project.model)->state_dict();
    const QString onnx = dir.filePath(QStringLiteral("cnn.onnx"));
    myelin::exporters::export_onnx(source, onnx.toStdString());
    MainWindow w;
    const QString project = dir.filePath(QStringLiteral("imported.myelin"));
    QVERIFY(w.findChild<QAction*>(QStringLiteral("actionImportModel"))->isEnabled()); // no project
    QVERIFY(w.importModel(onnx, project));
    QCOMPARE(w.document()->filePath(), project);
    QCOMPARE(w.document()->spec().nodes.size(), source.project.model.nodes.size());
    QCOMPARE(w.document()->project().train.init_weights, std::string("imported.safetensors"));
    QVERIFY(QFile::exists(dir.filePath(QStringLiteral("imported.safetensors"))));
    QVERIFY2(w.statusBar()->currentMessage().contains(QStringLiteral("Set its data")),
             qPrintable(w.statusBar()->currentMessage()));

    const QString junk = dir.filePath(QStringLiteral("junk.onnx"));
    QFile f(junk);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("not a model");
    f.close();
    QVERIFY(!w.importModel(junk, dir.filePath(QStringLiteral("junk.myelin"))));
    QVERIFY(w.findChild<QMessageBox*>(QStringLiteral("importFailedBox")) != nullptr);
    QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("junk.myelin"))));
}

void TestMainWindow::screenshot() {
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    saveScreenshot(w, QStringLiteral("main_window.png"));
}

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
