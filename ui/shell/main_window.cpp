// The main window itself: its pages, docks, menus and status bar, the About and backends
// dialogs and the window events. The project's file actions (open, new, save, recent files,
// recovery) are in main_window_project.cpp, training in main_window_training.cpp.
#include "shell/main_window.h"

#include "document/autosave.h"
#include "document/project_document.h"
#include "editor/graph_scene.h"
#include "editor/layer_palette.h"
#include "editor/model_editor.h"
#include "editor/model_summary_panel.h"
#include "editor/node_inspector.h"
#include "editor/problems_panel.h"
#include "inspect/distributions_view.h"
#include "inspect/feature_maps_view.h"
#include "inspect/gradient_flow_view.h"
#include "inspect/time_gradients_view.h"
#include "pages/data_page.h"
#include "pages/training_page.h"
#include "shell/backends_dialog.h"
#include "shell/plugins_dialog.h"
#include "shell/welcome_page.h"
#include "training/training_controller.h"
#include "training/training_dock.h"
#include "widgets/theme.h"

#include <myelin/device.h>
#include <myelin/graph/analysis.h>
#include <myelin/version.h>

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QEvent>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>
#include <QStyle>
#include <QTabWidget>
#include <QUndoStack>
#include <QVBoxLayout>

namespace myelin::ui {

namespace {

constexpr int kDefaultWidth = 1280;
constexpr int kDefaultHeight = 800;
const char* kAutosaveKey = "autosaveSeconds";
const char* kStorePathKey = "runStorePath";

QString backendsText() {
    return QString::fromStdString(backends_summary());
}

} // namespace

MainWindow::MainWindow(const QString& projectPath, QWidget* parent) : QMainWindow(parent) {
    setObjectName(QStringLiteral("mainWindow"));
    setWindowIcon(studioIcon());
    resize(kDefaultWidth, kDefaultHeight);
    setDockNestingEnabled(true);
    // Docks snap into place. QMainWindow::restoreState() while a dropped dock is still being
    // animated into place crashes (Qt 6.4; the Runs tab and back just after a dock was dropped,
    // found by the monkey test), and the Runs and Evaluate tabs restore the docks' state.
    setAnimated(false);

    document_ = new ProjectDocument(this);
    autosave_ = new Autosave(document_, this);
    autosave_->setIntervalSeconds(
        QSettings()
            .value(QString::fromLatin1(kAutosaveKey), Autosave::kDefaultIntervalSeconds)
            .toInt());

    welcomePage_ = new WelcomePage(this);
    editor_ = new ModelEditor(document_, this);
    dataPage_ = new DataPage(document_, this);
    trainingPage_ = new TrainingPage(document_, this);
    gradientFlow_ = new GradientFlowView(this);
    distributions_ = new DistributionsView(this);
    featureMaps_ = new FeatureMapsView(this);
    timeGradients_ = new TimeGradientsView(this);
    // An open project: the lock banner (while training) over the Model / Data / Training tabs.
    workspace_ = new QWidget(this);
    workspace_->setObjectName(QStringLiteral("workspace"));
    lockBanner_ = new QLabel(workspace_);
    lockBanner_->setObjectName(QStringLiteral("lockBanner"));
    lockBanner_->hide();
    workspaceTabs_ = new QTabWidget(workspace_);
    workspaceTabs_->setObjectName(QStringLiteral("workspaceTabs"));
    workspaceTabs_->setDocumentMode(true);
    workspaceTabs_->addTab(editor_, tr("Model"));
    workspaceTabs_->addTab(dataPage_, tr("Data"));
    workspaceTabs_->addTab(trainingPage_, tr("Training"));
    workspaceTabs_->addTab(gradientFlow_, tr("Gradient Flow"));
    workspaceTabs_->addTab(distributions_, tr("Distributions"));
    workspaceTabs_->addTab(featureMaps_, tr("Feature Maps"));
    workspaceTabs_->addTab(timeGradients_, tr("Gradient through Time"));
    workspaceTabs_->setTabVisible(workspaceTabs_->indexOf(timeGradients_), false);
    auto* workspaceLayout = new QVBoxLayout(workspace_);
    workspaceLayout->setContentsMargins(0, 0, 0, 0);
    workspaceLayout->setSpacing(0);
    workspaceLayout->addWidget(lockBanner_);
    workspaceLayout->addWidget(workspaceTabs_, 1);
    pages_ = new QStackedWidget(this);
    pages_->addWidget(welcomePage_);
    pages_->addWidget(workspace_);
    setCentralWidget(pages_);

    training_ = new TrainingController(this);
    // The learning-rate range test is recorded where runs are (as a run tagged lr-find).
    trainingPage_->setRunStorePath([this] { return training_->storePath(); });
    const QString storePath = qEnvironmentVariable("MYELIN_STORE");
    if (!storePath.isEmpty())
        training_->setStorePath(storePath);
    else if (QSettings().contains(QString::fromLatin1(kStorePathKey)))
        training_->setStorePath(QSettings().value(QString::fromLatin1(kStorePathKey)).toString());

    createDocks();
    createMenus();
    createStatusBar();
    createTraining();
    createRuns();

    connect(welcomePage_, &WelcomePage::newProjectRequested, this,
            &MainWindow::showNewProjectDialog);
    connect(welcomePage_, &WelcomePage::openRequested, this, &MainWindow::showOpenDialog);
    connect(welcomePage_, &WelcomePage::recentFileRequested, this, &MainWindow::openProject);
    connect(document_, &ProjectDocument::dirtyChanged, this, &MainWindow::updateTitle);
    connect(document_, &ProjectDocument::filePathChanged, this, &MainWindow::updateTitle);
    connect(document_, &ProjectDocument::projectReplaced, this, [this] {
        updateTitle();
        showProject(document_->isOpen());
    });
    connect(editor_, &ModelEditor::statusMessage, this,
            [this](const QString& text) { statusBar()->showMessage(text, kStatusMs); });

    updateRecentMenu();
    showProject(false);
    updateTitle();
    openAtStartup(projectPath);
}

MainWindow::~MainWindow() = default;

QUndoStack* MainWindow::undoStack() const {
    return document_->undoStack();
}

QString MainWindow::projectPath() const {
    return document_->filePath();
}

void MainWindow::createDocks() {
    auto makeDock = [this](const QString& title, const char* name, QWidget* content,
                           Qt::DockWidgetArea area) {
        auto* dock = new QDockWidget(title, this);
        dock->setObjectName(QString::fromLatin1(name));
        dock->setWidget(content);
        dock->setFeatures(QDockWidget::DockWidgetClosable | QDockWidget::DockWidgetMovable |
                          QDockWidget::DockWidgetFloatable);
        addDockWidget(area, dock);
        return dock;
    };
    palette_ = new LayerPalette(this);
    palette_->setMinimumWidth(170); // the kind names stay readable
    inspector_ = new NodeInspector(document_, this);
    problems_ = new ProblemsPanel(document_, this);
    summary_ = new ModelSummaryPanel(document_, this);
    paletteDock_ = makeDock(tr("Layers"), "paletteDock", palette_, Qt::LeftDockWidgetArea);
    inspectorDock_ =
        makeDock(tr("Inspector"), "inspectorDock", inspector_, Qt::RightDockWidgetArea);
    problemsDock_ = makeDock(tr("Problems"), "problemsDock", problems_, Qt::BottomDockWidgetArea);
    summaryDock_ = makeDock(tr("Model Summary"), "summaryDock", summary_, Qt::BottomDockWidgetArea);
    tabifyDockWidget(problemsDock_, summaryDock_);
    trainingDock_ = new TrainingDock(training_, this);
    trainingDockWidget_ =
        makeDock(tr("Live Training"), "trainingDock", trainingDock_, Qt::BottomDockWidgetArea);
    tabifyDockWidget(problemsDock_, trainingDockWidget_);
    problemsDock_->raise();
    // The side docks run the full height; the bottom docks sit under the canvas only.
    setCorner(Qt::BottomLeftCorner, Qt::LeftDockWidgetArea);
    setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
    resizeDocks({paletteDock_, inspectorDock_}, {210, 320}, Qt::Horizontal);
    resizeDocks({problemsDock_}, {170}, Qt::Vertical);

    connect(palette_, &LayerPalette::kindActivated, editor_, &ModelEditor::addLayerAfterSelection);
    connect(editor_->scene(), &QGraphicsScene::selectionChanged, this, [this] {
        const std::vector<graph::NodeId> ids = editor_->scene()->selectedNodeIds();
        inspector_->setSelection(ids);
        // One layer selected: the inspection views focus on it.
        std::string module;
        if (ids.size() == 1)
            for (size_t i = 0; i < document_->spec().nodes.size(); ++i)
                if (document_->spec().nodes[i].id == ids[0] &&
                    i < document_->analysis().nodes.size())
                    module = document_->analysis().nodes[i].module_name;
        gradientFlow_->highlightLayer(module);
        if (!module.empty()) {
            distributions_->setLayer(module);
            featureMaps_->setLayer(module);
        }
    });
    connect(problems_, &ProblemsPanel::nodeActivated, editor_, &ModelEditor::focusNode);
    connect(summary_, &ModelSummaryPanel::nodeActivated, editor_, &ModelEditor::focusNode);
    connect(problems_, &ProblemsPanel::countsChanged, this, [this](int errors, int warnings) {
        problemsDock_->setWindowTitle(
            errors + warnings > 0 ? tr("Problems (%1)").arg(errors + warnings) : tr("Problems"));
    });
}

void MainWindow::createMenus() {
    // File.
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->setObjectName(QStringLiteral("menuFile"));
    newAction_ = file->addAction(tr("&New Project…"), this, &MainWindow::showNewProjectDialog);
    newAction_->setObjectName(QStringLiteral("actionNew"));
    newAction_->setShortcut(QKeySequence::New);
    openAction_ = file->addAction(tr("&Open…"), this, &MainWindow::showOpenDialog);
    openAction_->setObjectName(QStringLiteral("actionOpen"));
    openAction_->setShortcut(QKeySequence::Open);
    recentMenu_ = file->addMenu(tr("Open &Recent"));
    recentMenu_->setObjectName(QStringLiteral("menuRecent"));
    recentMenu_->menuAction()->setObjectName(QStringLiteral("actionRecentMenu"));
    file->addSeparator();
    saveAction_ = file->addAction(tr("&Save"), this, &MainWindow::saveProject);
    saveAction_->setObjectName(QStringLiteral("actionSave"));
    saveAction_->setShortcut(QKeySequence::Save);
    saveAsAction_ = file->addAction(tr("Save &As…"), this, [this] { saveProjectAs(); });
    saveAsAction_->setObjectName(QStringLiteral("actionSaveAs"));
    saveAsAction_->setShortcut(QKeySequence::SaveAs);
    file->addSeparator();
    importAction_ = file->addAction(tr("&Import Model…"), this, &MainWindow::showImportDialog);
    importAction_->setObjectName(QStringLiteral("actionImportModel"));
    importAction_->setStatusTip(tr("Build a project of Myelin layers from an ONNX model (from "
                                   "torch.onnx.export) and start its runs from its weights"));
    exportAction_ =
        file->addAction(tr("&Export Trained Model…"), this, &MainWindow::showExportDialog);
    exportAction_->setObjectName(QStringLiteral("actionExport"));
    exportAction_->setShortcut(Qt::CTRL | Qt::Key_E);
    exportAction_->setStatusTip(
        tr("Write a run's checkpoint as ONNX, PyTorch code or self-describing safetensors"));
    QAction* openStore =
        file->addAction(tr("Open Run S&tore…"), this, &MainWindow::showOpenRunStoreDialog);
    openStore->setObjectName(QStringLiteral("actionOpenRunStore"));
    openStore->setStatusTip(tr("Read runs from another run store (e.g. one a cluster run wrote) "
                               "and record new runs in it"));
    file->addSeparator();
    closeAction_ = file->addAction(tr("&Close Project"), this, &MainWindow::closeProject);
    closeAction_->setObjectName(QStringLiteral("actionCloseProject"));
    closeAction_->setShortcut(QKeySequence::Close);
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setObjectName(QStringLiteral("actionQuit"));
    quit->setShortcut(QKeySequence::Quit);
    quit->setMenuRole(QAction::QuitRole);

    // Edit: undo and redo of the QUndoStack every editor change goes through ("Undo Add
    // Conv2d"), then the editor's own actions.
    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    edit->setObjectName(QStringLiteral("menuEdit"));
    undoAction_ = undoStack()->createUndoAction(this, tr("&Undo"));
    undoAction_->setObjectName(QStringLiteral("actionUndo"));
    undoAction_->setShortcut(QKeySequence::Undo);
    redoAction_ = undoStack()->createRedoAction(this, tr("&Redo"));
    redoAction_->setObjectName(QStringLiteral("actionRedo"));
    redoAction_->setShortcut(QKeySequence::Redo);
    edit->addAction(undoAction_);
    edit->addAction(redoAction_);
    edit->addSeparator();
    editor_->addEditActions(edit);

    // View.
    QMenu* view = menuBar()->addMenu(tr("&View"));
    view->setObjectName(QStringLiteral("menuView"));
    editor_->addViewActions(view);
    view->addSeparator();
    for (QDockWidget* dock :
         {paletteDock_, inspectorDock_, problemsDock_, summaryDock_, trainingDockWidget_}) {
        QAction* toggle = dock->toggleViewAction();
        toggle->setObjectName(QStringLiteral("actionShow_") + dock->objectName());
        view->addAction(toggle);
    }
    view->addSeparator();
    QAction* statusBarAction = view->addAction(tr("Show &Status Bar"));
    statusBarAction->setObjectName(QStringLiteral("actionToggleStatusBar"));
    statusBarAction->setCheckable(true);
    statusBarAction->setChecked(true);
    connect(statusBarAction, &QAction::toggled, this,
            [this](bool visible) { statusBar()->setVisible(visible); });
    fullScreenAction_ = view->addAction(tr("&Full Screen"));
    fullScreenAction_->setObjectName(QStringLiteral("actionFullScreen"));
    fullScreenAction_->setCheckable(true);
    fullScreenAction_->setShortcut(QKeySequence::FullScreen);
    connect(fullScreenAction_, &QAction::toggled, this, [this](bool on) {
        if (on == isFullScreen()) return;
        setWindowState(windowState() ^ Qt::WindowFullScreen);
    });

    // Train: start / pause / resume / stop (also on the toolbar), and the backends.
    QMenu* train = menuBar()->addMenu(tr("&Train"));
    train->setObjectName(QStringLiteral("menuTrain"));
    trainAction_ = train->addAction(tr("&Train"), this, &MainWindow::startTraining);
    trainAction_->setObjectName(QStringLiteral("actionTrain"));
    trainAction_->setShortcut(Qt::Key_F5);
    trainAction_->setStatusTip(tr("Train the open project; the run is recorded in the run store"));
    trainAction_->setIcon(style()->standardIcon(QStyle::SP_MediaPlay));
    pauseAction_ = train->addAction(tr("&Pause"), this, &MainWindow::pauseTraining);
    pauseAction_->setObjectName(QStringLiteral("actionPause"));
    pauseAction_->setShortcut(Qt::Key_F6);
    pauseAction_->setIcon(style()->standardIcon(QStyle::SP_MediaPause));
    resumeAction_ = train->addAction(tr("&Resume"), this, &MainWindow::resumeTraining);
    resumeAction_->setObjectName(QStringLiteral("actionResume"));
    resumeAction_->setShortcut(Qt::Key_F7);
    resumeAction_->setIcon(style()->standardIcon(QStyle::SP_MediaSeekForward));
    changeAction_ =
        train->addAction(tr("C&hange While Paused…"), this, &MainWindow::changeWhilePaused);
    changeAction_->setObjectName(QStringLiteral("actionChangeWhilePaused"));
    changeAction_->setStatusTip(tr("The learning rate and gradient clipping a paused run takes "
                                   "from its next step"));
    stopAction_ = train->addAction(tr("&Stop"), this, &MainWindow::stopTraining);
    stopAction_->setObjectName(QStringLiteral("actionStop"));
    stopAction_->setShortcut(Qt::SHIFT | Qt::Key_F5);
    stopAction_->setStatusTip(tr("Finish the current step, write a checkpoint and stop"));
    stopAction_->setIcon(style()->standardIcon(QStyle::SP_MediaStop));
    train->addSeparator();
    QAction* breakpoints =
        train->addAction(tr("Brea&kpoints…"), this, &MainWindow::showBreakpointsDialog);
    breakpoints->setObjectName(QStringLiteral("actionBreakpoints"));
    breakpoints->setStatusTip(
        tr("Conditions that pause a run at a step: NaN, gradient spike, dead units, loss"));
    QAction* backends =
        train->addAction(tr("Compute &Backends…"), this, &MainWindow::showBackendsDialog);
    backends->setObjectName(QStringLiteral("actionBackends"));
    backends->setStatusTip(tr("Show the compute backends this process can train on"));

    // Help.
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->setObjectName(QStringLiteral("menuHelp"));
    QAction* about =
        help->addAction(tr("&About Myelin Studio"), this, &MainWindow::showAboutDialog);
    about->setObjectName(QStringLiteral("actionAbout"));
    about->setMenuRole(QAction::AboutRole);
    QAction* plugins = help->addAction(tr("&Plugins…"), this, [this] {
        auto* dialog = new PluginsDialog(this);
        dialog->setAttribute(Qt::WA_DeleteOnClose);
        dialog->open();
    });
    plugins->setObjectName(QStringLiteral("actionPlugins"));
    plugins->setStatusTip(tr("The plugins loaded, the kinds they add, and the ones refused"));
    QAction* aboutQt = help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);
    aboutQt->setObjectName(QStringLiteral("actionAboutQt"));
    aboutQt->setMenuRole(QAction::AboutQtRole);
}

void MainWindow::createStatusBar() {
    backendsLabel_ = new QLabel(backendsText(), this);
    backendsLabel_->setObjectName(QStringLiteral("backendsLabel"));
    backendsLabel_->setToolTip(tr("Compute backends available to this process"));
    statusBar()->setObjectName(QStringLiteral("statusBar"));
    statusBar()->setSizeGripEnabled(false);
    trainStatus_ = new QLabel(this);
    trainStatus_->setObjectName(QStringLiteral("trainStatusLabel"));
    trainProgress_ = new QProgressBar(this);
    trainProgress_->setObjectName(QStringLiteral("trainProgress"));
    trainProgress_->setMaximumWidth(180);
    trainProgress_->setMaximumHeight(14);
    trainProgress_->setTextVisible(false);
    trainStatus_->hide();
    trainProgress_->hide();
    statusBar()->addPermanentWidget(trainStatus_);
    statusBar()->addPermanentWidget(trainProgress_);
    statusBar()->addPermanentWidget(backendsLabel_);
}

void MainWindow::showBackendsDialog() {
    auto* dialog = new BackendsDialog(this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->open();
}

void MainWindow::showAboutDialog() {
    auto* box = new QMessageBox(this);
    box->setObjectName(QStringLiteral("aboutDialog"));
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setWindowTitle(tr("About Myelin Studio"));
    box->setIconPixmap(studioIcon().pixmap(QSize(72, 72)));
    box->setTextFormat(Qt::RichText);
    box->setText(tr("<h3>Myelin Studio %1</h3>"
                    "<p>Build and train neural networks, and watch them learn.</p>"
                    "<p>Compute backends:<br>%2</p>"
                    "<p>Built with Qt %3.</p>")
                     .arg(QString::fromLatin1(myelin::version()), backendsText().toHtmlEscaped(),
                          QString::fromLatin1(qVersion())));
    box->setStandardButtons(QMessageBox::Close);
    box->open();
}

void MainWindow::changeEvent(QEvent* event) {
    if (event->type() == QEvent::WindowStateChange && fullScreenAction_ != nullptr)
        fullScreenAction_->setChecked(isFullScreen());
    QMainWindow::changeEvent(event);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (training_->isActive()) {
        const auto answer = QMessageBox::question(
            this, tr("Training Is Running"),
            tr("Stop the training run and quit? It stops after the current step and writes a "
               "checkpoint it can be resumed from."),
            QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
        if (answer != QMessageBox::Yes) {
            event->ignore();
            return;
        }
        training_->stop();
        training_->wait(120000);
    }
    if (!maybeSave()) {
        event->ignore();
        return;
    }
    autosave_->discard();
    event->accept();
}

} // namespace myelin::ui
