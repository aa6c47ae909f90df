#include "main_window.h"

#include "backends_dialog.h"
#include "theme.h"
#include "welcome_page.h"

#include <myelin/device.h>
#include <myelin/version.h>

#include <QAction>
#include <QApplication>
#include <QEvent>
#include <QFileInfo>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>
#include <QUndoStack>

namespace myelin::ui {

namespace {

constexpr int kDefaultWidth = 1280;
constexpr int kDefaultHeight = 800;

QString backendsText() {
    return QString::fromStdString(backends_summary());
}

} // namespace

MainWindow::MainWindow(const QString& projectPath, QWidget* parent) : QMainWindow(parent) {
    setObjectName(QStringLiteral("mainWindow"));
    setWindowIcon(studioIcon());
    resize(kDefaultWidth, kDefaultHeight);

    undoStack_ = new QUndoStack(this);
    undoStack_->setObjectName(QStringLiteral("undoStack"));

    welcomePage_ = new WelcomePage(this);
    setCentralWidget(welcomePage_);

    createMenus();
    createStatusBar();
    setProject(projectPath);
}

void MainWindow::createMenus() {
    // File. New, Open and Save arrive with the project-file format; only Quit does something now.
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->setObjectName(QStringLiteral("menuFile"));
    QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setObjectName(QStringLiteral("actionQuit"));
    quit->setShortcut(QKeySequence::Quit);
    quit->setMenuRole(QAction::QuitRole);

    // Edit: undo and redo of the QUndoStack every editor change goes through.
    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    edit->setObjectName(QStringLiteral("menuEdit"));
    QAction* undo = undoStack_->createUndoAction(this, tr("&Undo"));
    undo->setObjectName(QStringLiteral("actionUndo"));
    undo->setShortcut(QKeySequence::Undo);
    QAction* redo = undoStack_->createRedoAction(this, tr("&Redo"));
    redo->setObjectName(QStringLiteral("actionRedo"));
    redo->setShortcut(QKeySequence::Redo);
    edit->addAction(undo);
    edit->addAction(redo);

    // View.
    QMenu* view = menuBar()->addMenu(tr("&View"));
    view->setObjectName(QStringLiteral("menuView"));
    QAction* statusBarAction = view->addAction(tr("Show &Status Bar"));
    statusBarAction->setObjectName(QStringLiteral("actionToggleStatusBar"));
    statusBarAction->setCheckable(true);
    statusBarAction->setChecked(true);
    connect(statusBarAction, &QAction::toggled, this,
            [this](bool visible) { statusBar()->setVisible(visible); });
    view->addSeparator();
    fullScreenAction_ = view->addAction(tr("&Full Screen"));
    fullScreenAction_->setObjectName(QStringLiteral("actionFullScreen"));
    fullScreenAction_->setCheckable(true);
    fullScreenAction_->setShortcut(QKeySequence::FullScreen);
    connect(fullScreenAction_, &QAction::toggled, this, [this](bool on) {
        if (on == isFullScreen()) return;
        setWindowState(windowState() ^ Qt::WindowFullScreen);
    });

    // Train. Training controls arrive with the training engine; the backends it will use can
    // be inspected now.
    QMenu* train = menuBar()->addMenu(tr("&Train"));
    train->setObjectName(QStringLiteral("menuTrain"));
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
    statusBar()->addPermanentWidget(backendsLabel_);
}

void MainWindow::setProject(const QString& path) {
    projectPath_.clear();
    setWindowTitle(tr("Myelin Studio"));
    welcomePage_->setProjectNotice(QString());
    if (path.isEmpty()) return;

    const QFileInfo info(path);
    if (!info.exists()) {
        statusBar()->showMessage(tr("Project file not found: %1").arg(info.absoluteFilePath()));
        welcomePage_->setProjectNotice(
            tr("Project file not found: %1").arg(info.absoluteFilePath().toHtmlEscaped()));
        return;
    }
    projectPath_ = info.absoluteFilePath();
    setWindowTitle(tr("Myelin Studio — %1").arg(info.fileName()));
    welcomePage_->setProjectNotice(
        tr("<b>%1</b><br>The graph editor will open this project once the project file "
           "format lands.")
            .arg(info.absoluteFilePath().toHtmlEscaped()));
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

} // namespace myelin::ui
