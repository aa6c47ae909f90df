#include "shell/main_window.h"

#include "document/autosave.h"
#include "document/model_edits.h"
#include "document/project_document.h"
#include "editor/graph_scene.h"
#include "editor/graph_view.h"
#include "editor/layer_palette.h"
#include "editor/model_editor.h"
#include "editor/model_summary_panel.h"
#include "editor/node_inspector.h"
#include "editor/node_item.h"
#include "editor/problems_panel.h"
#include "inspect/distributions_view.h"
#include "inspect/gradient_flow_view.h"
#include "pages/data_page.h"
#include "pages/training_page.h"
#include "shell/backends_dialog.h"
#include "shell/new_project_dialog.h"
#include "shell/welcome_page.h"
#include "training/breakpoints_dialog.h"
#include "training/training_controller.h"
#include "training/training_dock.h"
#include "widgets/theme.h"

#include <myelin/device.h>
#include <myelin/graph/analysis.h>
#include <myelin/io/project.h>
#include <myelin/version.h>

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>
#include <QStyle>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>

#include <QUndoStack>
#include <algorithm>
#include <climits>

namespace myelin::ui {

namespace {

constexpr int kDefaultWidth = 1280;
constexpr int kDefaultHeight = 800;
constexpr int kMaxRecentFiles = 8;
constexpr int kStatusMs = 5000;
const char* kRecentFilesKey = "recentFiles";
const char* kLastDirectoryKey = "lastProjectDirectory";
const char* kAutosaveKey = "autosaveSeconds";
const char* kStorePathKey = "runStorePath";

QString backendsText() {
    return QString::fromStdString(backends_summary());
}

const char* kDockStyleSheet = R"(
QDockWidget { font-weight: bold; color: #52606D; }
QDockWidget::title {
    background: #F4F5F7;
    padding: 6px 10px;
    border-bottom: 1px solid #DDE1E6;
}
#lockBanner {
    background: #FDF6E3; color: #7A5312; border-bottom: 1px solid #EBD9A8; padding: 6px 12px;
}
#workspaceTabs::pane { border: none; }
)";

} // namespace

MainWindow::MainWindow(const QString& projectPath, QWidget* parent) : QMainWindow(parent) {
    setObjectName(QStringLiteral("mainWindow"));
    setWindowIcon(studioIcon());
    resize(kDefaultWidth, kDefaultHeight);
    setDockNestingEnabled(true);

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
    const QString storePath = qEnvironmentVariable("MYELIN_STORE");
    if (!storePath.isEmpty())
        training_->setStorePath(storePath);
    else if (QSettings().contains(QString::fromLatin1(kStorePathKey)))
        training_->setStorePath(QSettings().value(QString::fromLatin1(kStorePathKey)).toString());

    createDocks();
    createMenus();
    createStatusBar();
    createTraining();

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
    setStyleSheet(QString::fromLatin1(kDockStyleSheet));
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
        if (!module.empty()) distributions_->setLayer(module);
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

void MainWindow::createTraining() {
    trainToolBar_ = addToolBar(tr("Training"));
    trainToolBar_->setObjectName(QStringLiteral("trainToolBar"));
    trainToolBar_->setMovable(false);
    trainToolBar_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    trainToolBar_->setIconSize(QSize(16, 16));
    for (QAction* action : {trainAction_, pauseAction_, resumeAction_, stopAction_})
        trainToolBar_->addAction(action);

    connect(training_, &TrainingController::stateChanged, this,
            [this](TrainingController::State state) {
                updateTrainingActions();
                // Going on after a breakpoint: the banner says the lock's reason again.
                if (state == TrainingController::State::Running) lockBanner_->setText(lockReason_);
                if (state == TrainingController::State::Idle) {
                    setEditingLocked(false);
                    trainStatus_->hide();
                    trainProgress_->hide();
                }
            });
    connect(training_, &TrainingController::progressChanged, this,
            [this](const train::Progress& p) {
                if (p.total_steps > 0) {
                    trainProgress_->setRange(0, int(std::min<int64_t>(p.total_steps, INT_MAX)));
                    trainProgress_->setValue(int(std::min<int64_t>(p.step, INT_MAX)));
                }
                trainStatus_->setText(
                    tr("%1  ·  ETA %2").arg(progressText(p), formatDuration(p.eta_seconds)));
            });
    connect(training_, &TrainingController::runError, this, &MainWindow::onTrainingError);
    connect(training_, &TrainingController::breakpointHit, this, &MainWindow::onBreakpoint);
    connect(gradientFlow_, &GradientFlowView::badgesChanged, this, &MainWindow::showLayerBadges);
    badgeTimer_.setSingleShot(true);
    connect(&badgeTimer_, &QTimer::timeout, this, &MainWindow::applyLayerBadges);
    // The gradient flow view follows the run just started and reads the store for any other.
    connect(training_, &TrainingController::runCreated, this,
            [this](qint64 run, const QString& storePath) {
                gradientFlow_->setStorePath(storePath);
                gradientFlow_->showRun(run, true);
            });
    connect(training_, &TrainingController::finished, gradientFlow_,
            &GradientFlowView::runFinished);
    connect(training_, &TrainingController::finished, distributions_,
            &DistributionsView::runFinished);
    connect(gradientFlow_, &GradientFlowView::runShown, this, [this](qint64 run, bool live) {
        distributions_->showRun(gradientFlow_->storePath(), run, live);
    });
    connect(workspaceTabs_, &QTabWidget::currentChanged, this, [this](int index) {
        QWidget* page = workspaceTabs_->widget(index);
        if (page != gradientFlow_ && page != distributions_) return;
        gradientFlow_->setStorePath(training_->storePath()); // a no-op when it is open already
        if (!gradientFlow_->isLive()) gradientFlow_->refreshRuns();
    });
    connect(training_, &TrainingController::finished, this, [this](train::RunStatus status) {
        const qint64 run = training_->runId();
        const QString what = QString::fromLatin1(train::run_status_name(status));
        statusBar()->showMessage(
            run >= 0 ? tr("Run %1 %2 (recorded in %3)").arg(run).arg(what, training_->storePath())
                     : tr("Training %1").arg(what),
            kStatusMs * 2);
    });
    updateTrainingActions();
}

void MainWindow::updateTrainingActions() {
    const auto state = training_->state();
    const bool open = document_->isOpen();
    trainAction_->setEnabled(open && state == TrainingController::State::Idle);
    pauseAction_->setEnabled(state == TrainingController::State::Running);
    resumeAction_->setEnabled(state == TrainingController::State::Paused);
    stopAction_->setEnabled(state == TrainingController::State::Running ||
                            state == TrainingController::State::Paused);
    // Another project cannot replace the one a run is training.
    const bool idle = state == TrainingController::State::Idle;
    newAction_->setEnabled(idle);
    openAction_->setEnabled(idle);
    closeAction_->setEnabled(idle && open);
    recentMenu_->setEnabled(idle);
    welcomePage_->setEnabled(idle);
}

void MainWindow::setEditingLocked(bool locked) {
    lockReason_ = locked ? tr("Editing is locked while the model trains — pause does not unlock "
                              "it; Stop (Shift+F5) ends the run and unlocks the project.")
                         : QString();
    lockBanner_->setText(lockReason_);
    lockBanner_->setVisible(locked);
    document_->setLocked(locked);
    editor_->setEditingLocked(locked);
    palette_->setEnabled(!locked);
    inspector_->setEnabled(!locked);
    dataPage_->setEnabled(!locked);
    trainingPage_->setEditingLocked(locked, lockReason_);
    undoAction_->setEnabled(!locked && undoStack()->canUndo());
    redoAction_->setEnabled(!locked && undoStack()->canRedo());
}

bool MainWindow::startTraining() {
    if (!document_->isOpen() || training_->isActive()) return false;
    const int errors = int(document_->analysis().error_count());
    if (errors > 0) {
        problemsDock_->show();
        problemsDock_->raise();
        auto* box = new QMessageBox(
            QMessageBox::Warning, tr("Cannot Train Yet"),
            tr("The model has %n problem(s); fix them before training.", nullptr, errors),
            QMessageBox::Close, this);
        box->setObjectName(QStringLiteral("cannotTrainBox"));
        box->setInformativeText(tr("The Problems panel lists each one; click it to select the "
                                   "layer."));
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->open();
        return false;
    }
    TrainingStartOptions options;
    options.breakpoints = storedBreakpoints();
    options.runName = document_->displayName();
    if (options.runName.endsWith(QStringLiteral(".myelin")))
        options.runName.chop(int(qstrlen(".myelin")));
    if (!training_->start(document_->project(), document_->dataDirectory(), options)) return false;
    setEditingLocked(true);
    trainStatus_->setText(tr("Starting…"));
    trainProgress_->setRange(0, 0); // busy until the first progress report
    trainStatus_->show();
    trainProgress_->show();
    trainingDockWidget_->show();
    trainingDockWidget_->raise();
    // Room for the plots (after the raise has taken effect).
    QTimer::singleShot(0, this, [this] {
        if (trainingDockWidget_->height() < 300)
            resizeDocks({trainingDockWidget_}, {300}, Qt::Vertical);
    });
    statusBar()->showMessage(
        tr("Training %1 (run store %2)").arg(options.runName, training_->storePath()), kStatusMs);
    return true;
}

void MainWindow::pauseTraining() {
    training_->pause();
}

void MainWindow::resumeTraining() {
    training_->resume();
}

void MainWindow::stopTraining() {
    training_->stop();
    statusBar()->showMessage(tr("Stopping after this step (a checkpoint is written)…"), kStatusMs);
}

void MainWindow::onTrainingError(const QString& message, const QString& module) {
    // A NaN/Inf names the module where it first appeared: select its node on the canvas.
    const graph::NodeId node =
        module.isEmpty()
            ? -1
            : document_->analysis().node_of_module(document_->spec(), module.toStdString());
    if (node >= 0) {
        workspaceTabs_->setCurrentWidget(editor_);
        editor_->focusNode(node);
    }
    auto* box = new QMessageBox(QMessageBox::Critical, tr("Training Failed"),
                                node >= 0 ? tr("Training failed in layer %1.").arg(module)
                                          : tr("Training failed."),
                                QMessageBox::Close, this);
    box->setObjectName(QStringLiteral("trainingErrorBox"));
    box->setInformativeText(message);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
}

void MainWindow::openAtStartup(const QString& path) {
    welcomePage_->setProjectNotice(QString());
    if (path.isEmpty()) return;
    const QFileInfo info(path);
    if (!info.exists()) {
        statusBar()->showMessage(tr("Project file not found: %1").arg(info.absoluteFilePath()));
        welcomePage_->setProjectNotice(
            tr("Project file not found: %1").arg(info.absoluteFilePath().toHtmlEscaped()));
        return;
    }
    // No message box before the window is up: a broken file is explained on the welcome page.
    try {
        io::Project project = io::load_project(info.absoluteFilePath().toStdString());
        document_->open(std::move(project), info.absoluteFilePath());
    } catch (const Error& e) {
        statusBar()->showMessage(tr("Could not open %1").arg(info.fileName()));
        welcomePage_->setProjectNotice(tr("<b>Could not open this project</b><br>%1")
                                           .arg(QString::fromUtf8(e.what()).toHtmlEscaped()));
        return;
    }
    if (layoutNeedsArranging(document_->spec())) {
        graph::ModelSpec arranged = document_->spec();
        arrangeLayers(arranged);
        document_->setLayoutWithoutUndo(arranged);
    }
    addRecentFile(info.absoluteFilePath());
    QTimer::singleShot(0, editor_->view(), [this] { editor_->view()->showModel(); });
}

void MainWindow::showProject(bool open) {
    pages_->setCurrentWidget(open ? workspace_ : static_cast<QWidget*>(welcomePage_));
    if (open) workspaceTabs_->setCurrentWidget(editor_);
    for (QDockWidget* dock :
         {paletteDock_, inspectorDock_, problemsDock_, summaryDock_, trainingDockWidget_}) {
        dock->setVisible(open);
        dock->toggleViewAction()->setEnabled(open);
    }
    if (open) problemsDock_->raise();
    trainToolBar_->setVisible(open);
    updateTrainingActions();
    saveAction_->setEnabled(open);
    saveAsAction_->setEnabled(open);
    if (open) editor_->view()->setFocus();
}

void MainWindow::updateTitle() {
    if (!document_->isOpen()) {
        setWindowTitle(tr("Myelin Studio"));
        return;
    }
    setWindowTitle(
        tr("Myelin Studio — %1%2")
            .arg(document_->displayName(), document_->isDirty() ? QStringLiteral("*") : QString()));
}

void MainWindow::showProjectError(const QString& text) {
    auto* box = new QMessageBox(this);
    box->setObjectName(QStringLiteral("projectErrorBox"));
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setIcon(QMessageBox::Critical);
    box->setWindowTitle(tr("Cannot Open Project"));
    box->setText(tr("The project could not be opened; the open project is unchanged."));
    box->setInformativeText(text);
    box->setStandardButtons(QMessageBox::Close);
    box->open();
}

bool MainWindow::openProject(const QString& path) {
    const QString absolute = QFileInfo(path).absoluteFilePath();
    io::Project project;
    try {
        project = io::load_project(absolute.toStdString());
    } catch (const Error& e) {
        showProjectError(QString::fromUtf8(e.what()));
        statusBar()->showMessage(tr("Could not open %1").arg(QFileInfo(path).fileName()),
                                 kStatusMs);
        return false;
    }
    if (!maybeSave()) return false;
    document_->open(std::move(project), absolute);
    if (layoutNeedsArranging(document_->spec())) {
        // The file's positions hide edges behind nodes; lay it out (not an edit to undo).
        graph::ModelSpec arranged = document_->spec();
        arrangeLayers(arranged);
        document_->setLayoutWithoutUndo(arranged);
        statusBar()->showMessage(
            tr("Opened %1 (layers arranged automatically)").arg(QFileInfo(absolute).fileName()),
            kStatusMs);
    } else {
        statusBar()->showMessage(tr("Opened %1").arg(QFileInfo(absolute).fileName()), kStatusMs);
    }
    QSettings().setValue(QString::fromLatin1(kLastDirectoryKey),
                         QFileInfo(absolute).absolutePath());
    addRecentFile(absolute);
    editor_->view()->showModel();
    QTimer::singleShot(0, editor_->view(), [this] { editor_->view()->showModel(); });
    return true;
}

bool MainWindow::newProject(const QString& examplePath) {
    io::Project project;
    if (!examplePath.isEmpty()) {
        try {
            project = io::load_project(examplePath.toStdString());
        } catch (const Error& e) {
            showProjectError(QString::fromUtf8(e.what()));
            return false;
        }
    }
    if (!maybeSave()) return false;
    document_->open(std::move(project), QString(), /*dirty=*/false,
                    examplePath.isEmpty() ? QString() : QFileInfo(examplePath).absolutePath());
    if (layoutNeedsArranging(document_->spec())) {
        graph::ModelSpec arranged = document_->spec();
        arrangeLayers(arranged);
        document_->setLayoutWithoutUndo(arranged);
    }
    editor_->view()->showModel();
    QTimer::singleShot(0, editor_->view(), [this] { editor_->view()->showModel(); });
    return true;
}

bool MainWindow::saveProject() {
    if (!document_->isOpen()) return false;
    if (document_->filePath().isEmpty()) return saveProjectAs();
    return saveProjectAs(document_->filePath());
}

bool MainWindow::saveProjectAs(const QString& path) {
    if (!document_->isOpen()) return false;
    QString target = path;
    if (target.isEmpty()) {
        const QString directory =
            QSettings().value(QString::fromLatin1(kLastDirectoryKey), QDir::homePath()).toString();
        QString suggested = document_->filePath();
        if (suggested.isEmpty()) {
            QString base = QString::fromStdString(document_->project().name).toLower();
            base.replace(QRegularExpression(QStringLiteral("[^a-z0-9_-]+")), QStringLiteral("_"));
            suggested = QDir(directory).filePath(
                (base.isEmpty() ? QStringLiteral("untitled") : base) + QStringLiteral(".myelin"));
        }
        target = QFileDialog::getSaveFileName(this, tr("Save Project As"), suggested,
                                              tr("Myelin projects (*.myelin)"));
        if (target.isEmpty()) return false;
        if (QFileInfo(target).suffix().isEmpty()) target += QStringLiteral(".myelin");
    }
    try {
        document_->saveAs(target);
    } catch (const Error& e) {
        QMessageBox::critical(this, tr("Cannot Save Project"), QString::fromUtf8(e.what()));
        return false;
    }
    QSettings().setValue(QString::fromLatin1(kLastDirectoryKey), QFileInfo(target).absolutePath());
    addRecentFile(document_->filePath());
    statusBar()->showMessage(tr("Saved %1").arg(document_->filePath()), kStatusMs);
    return true;
}

bool MainWindow::closeProject() {
    if (!document_->isOpen()) return true;
    if (!maybeSave()) return false;
    document_->close();
    return true;
}

bool MainWindow::maybeSave() {
    if (!document_->isDirty()) return true;
    QMessageBox box(QMessageBox::Warning, tr("Unsaved Changes"),
                    tr("Save the changes to %1?").arg(document_->displayName()),
                    QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, this);
    box.setObjectName(QStringLiteral("unsavedChangesBox"));
    box.setInformativeText(tr("Changes you do not save are lost."));
    box.setDefaultButton(QMessageBox::Save);
    switch (box.exec()) {
    case QMessageBox::Save:
        return saveProject();
    case QMessageBox::Discard:
        autosave_->discard();
        return true;
    default:
        return false;
    }
}

void MainWindow::showNewProjectDialog() {
    auto* dialog = new NewProjectDialog(this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::accepted, this,
            [this, dialog] { newProject(dialog->selectedExample()); });
    dialog->open();
}

void MainWindow::showOpenDialog() {
    const QString directory =
        QSettings().value(QString::fromLatin1(kLastDirectoryKey), QDir::homePath()).toString();
    const QString path = QFileDialog::getOpenFileName(this, tr("Open Project"), directory,
                                                      tr("Myelin projects (*.myelin)"));
    if (!path.isEmpty()) openProject(path);
}

void MainWindow::addRecentFile(const QString& path) {
    QSettings settings;
    QStringList files = settings.value(QString::fromLatin1(kRecentFilesKey)).toStringList();
    files.removeAll(path);
    files.prepend(path);
    while (files.size() > kMaxRecentFiles)
        files.removeLast();
    settings.setValue(QString::fromLatin1(kRecentFilesKey), files);
    updateRecentMenu();
}

void MainWindow::updateRecentMenu() {
    QStringList files;
    for (const QString& path :
         QSettings().value(QString::fromLatin1(kRecentFilesKey)).toStringList())
        if (QFileInfo::exists(path)) files << path; // moved or deleted since
    recentMenu_->clear();
    for (const QString& path : files) {
        QAction* action = recentMenu_->addAction(QFileInfo(path).fileName(), this,
                                                 [this, path] { openProject(path); });
        action->setToolTip(path);
        action->setStatusTip(path);
    }
    if (!files.isEmpty()) {
        recentMenu_->addSeparator();
        recentMenu_->addAction(tr("Clear Menu"), this, [this] {
            QSettings().remove(QString::fromLatin1(kRecentFilesKey));
            updateRecentMenu();
        });
    }
    recentMenu_->menuAction()->setEnabled(!files.isEmpty());
    welcomePage_->setRecentFiles(files);
}

void MainWindow::offerRecovery() {
    for (const Autosave::Recovery& recovery : Autosave::pendingRecoveries()) {
        const QString name = recovery.original.isEmpty() ? tr("an unsaved project")
                                                         : QFileInfo(recovery.original).fileName();
        QMessageBox box(QMessageBox::Question, tr("Recover Unsaved Changes"),
                        tr("Myelin Studio closed without saving the changes to %1.").arg(name),
                        QMessageBox::NoButton, this);
        box.setObjectName(QStringLiteral("recoveryBox"));
        box.setInformativeText(tr("They were autosaved %1. Recover them?")
                                   .arg(QLocale().toString(recovery.saved, QLocale::ShortFormat)));
        QPushButton* recover = box.addButton(tr("Recover"), QMessageBox::AcceptRole);
        box.addButton(tr("Discard"), QMessageBox::DestructiveRole);
        box.setDefaultButton(recover);
        box.exec();
        if (box.clickedButton() != static_cast<QAbstractButton*>(recover)) {
            Autosave::remove(recovery.file);
            continue;
        }
        io::Project project;
        try {
            project = io::load_project(recovery.file.toStdString());
        } catch (const Error& e) {
            showProjectError(QString::fromUtf8(e.what()));
            Autosave::remove(recovery.file);
            continue;
        }
        if (!maybeSave()) return;
        document_->open(std::move(project), recovery.original, /*dirty=*/true);
        autosave_->saveNow();
        if (autosave_->recoveryPath() != recovery.file) Autosave::remove(recovery.file);
        editor_->view()->showModel();
        statusBar()->showMessage(tr("Recovered the unsaved changes to %1").arg(name), kStatusMs);
        return; // one project at a time; the others are offered at the next start
    }
}

void MainWindow::showBreakpointsDialog() {
    auto* dialog = new BreakpointsDialog(storedBreakpoints(), this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::accepted, this, [this, dialog] {
        storeBreakpoints(dialog->conditions());
        training_->setBreakpoints(dialog->conditions()); // the run going, from its next step
        const QString text = breakpointsText(dialog->conditions());
        statusBar()->showMessage(
            text.isEmpty() ? tr("No breakpoints") : tr("Breakpoints: %1").arg(text), kStatusMs);
    });
    dialog->open();
}

void MainWindow::showLayerBadges(const std::vector<train::LayerBadge>& badges) {
    // At most once a second: the canvas repaints its badges rarely while a run streams (the
    // view polls at 4 Hz); the newest badges always land, a second later at most.
    pendingBadges_ = badges;
    const qint64 sinceLast = badgeClock_.isValid() ? badgeClock_.elapsed() : kBadgeIntervalMs;
    if (sinceLast >= kBadgeIntervalMs) {
        applyLayerBadges();
    } else if (!badgeTimer_.isActive()) {
        badgeTimer_.start(int(kBadgeIntervalMs - sinceLast));
    }
}

void MainWindow::applyLayerBadges() {
    badgeClock_.start();
    const std::vector<train::LayerBadge> badges = std::move(pendingBadges_);
    pendingBadges_.clear();
    // A layer goes to the node of the open model with its module name and its kind; a run of
    // another model leaves the canvas alone.
    std::unordered_map<graph::NodeId, NodeBadge> byNode;
    if (document_->isOpen())
        for (const auto& badge : badges) {
            const graph::NodeId node =
                document_->analysis().node_of_module(document_->spec(), badge.layer.name);
            const graph::Node* spec = node >= 0 ? document_->spec().find(node) : nullptr;
            if (spec && spec->kind == badge.layer.kind) byNode[node] = nodeBadge(badge);
        }
    editor_->scene()->setBadges(byNode);
}

void MainWindow::onBreakpoint(const train::BreakpointFired& breakpoint) {
    // Where it happened: the layer's node on the canvas, the gradient flow at the last recorded
    // step before the held one, and what fired in the banner until the run goes on.
    const QString layer = breakpoint.layer ? QString::fromStdString(*breakpoint.layer) : QString();
    const graph::NodeId node =
        layer.isEmpty()
            ? -1
            : document_->analysis().node_of_module(document_->spec(), layer.toStdString());
    if (node >= 0) editor_->focusNode(node);
    gradientFlow_->selectStep(breakpoint.step - 1);
    const QString what = tr("Breakpoint %1 at step %2: %3.")
                             .arg(QString::fromStdString(breakpoint.condition))
                             .arg(breakpoint.step)
                             .arg(QString::fromStdString(breakpoint.message));
    lockBanner_->setText(breakpoint.paused
                             ? what + tr(" Resume (F7) finishes the step; Stop (Shift+F5) gives "
                                         "it up and writes a checkpoint before it.")
                             : what);
    statusBar()->showMessage(what, kStatusMs * 2);
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
