// The main window's project file actions: opening (at startup, from the Open dialog, a recent
// file), new projects, saving, closing with the offer to save, the recent files menu and the
// recovery of autosaved changes.
#include "shell/main_window.h"

#include "document/autosave.h"
#include "document/model_edits.h"
#include "document/project_document.h"
#include "editor/graph_view.h"
#include "editor/model_editor.h"
#include "shell/new_project_dialog.h"
#include "shell/welcome_page.h"
#include "training/training_controller.h"

#include <myelin/error.h>
#include <myelin/export/import.h>
#include <myelin/io/project.h>

#include <QAction>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>

namespace myelin::ui {

namespace {

constexpr int kMaxRecentFiles = 8;
const char* kRecentFilesKey = "recentFiles";
const char* kLastDirectoryKey = "lastProjectDirectory";

// A shipped example (in the folder File > New offers them from) opens as an untitled copy, as Qt
// Creator opens its examples: Save asks where, so a stray Ctrl+S never writes over the example
// that the gallery, the CLI's docs and the tests read.
bool isShippedExample(const QFileInfo& file) {
    const QString examples = exampleDirectory();
    return !examples.isEmpty() && file.canonicalPath() == examples;
}

} // namespace

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
    const bool example = isShippedExample(info);
    try {
        io::Project project = io::load_project(info.absoluteFilePath().toStdString());
        if (example)
            document_->open(std::move(project), QString(), /*dirty=*/false, info.absolutePath());
        else
            document_->open(std::move(project), info.absoluteFilePath());
    } catch (const Error& e) {
        statusBar()->showMessage(tr("Could not open %1").arg(info.fileName()));
        welcomePage_->setProjectNotice(tr("<b>Could not open this project</b><br>%1")
                                           .arg(QString::fromUtf8(e.what()).toHtmlEscaped()));
        return;
    }
    arrangeLayersIfNeeded();
    if (example)
        statusBar()->showMessage(exampleCopyMessage(info.fileName()));
    else
        addRecentFile(info.absoluteFilePath());
    QTimer::singleShot(0, editor_->view(), [this] { editor_->view()->showModel(); });
}

bool MainWindow::arrangeLayersIfNeeded() {
    if (!layoutNeedsArranging(document_->spec())) return false;
    // The file's positions hide edges behind nodes; lay it out (not an edit to undo).
    graph::ModelSpec arranged = document_->spec();
    arrangeLayers(arranged);
    document_->setLayoutWithoutUndo(arranged);
    return true;
}

QString MainWindow::exampleCopyMessage(const QString& fileName) const {
    return tr("Opened the example %1 as an untitled copy: Save asks where to keep it")
        .arg(fileName);
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
    if (isShippedExample(QFileInfo(absolute))) {
        if (!newProject(absolute)) return false;
        statusBar()->showMessage(exampleCopyMessage(QFileInfo(absolute).fileName()), kStatusMs);
        return true;
    }
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
    if (arrangeLayersIfNeeded()) {
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
    arrangeLayersIfNeeded();
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

void MainWindow::showImportDialog() {
    const QString directory =
        QSettings().value(QString::fromLatin1(kLastDirectoryKey), QDir::homePath()).toString();
    const QString onnx = QFileDialog::getOpenFileName(this, tr("Import Model"), directory,
                                                      tr("ONNX models (*.onnx)"));
    if (onnx.isEmpty()) return;
    const QFileInfo info(onnx);
    QString project = QFileDialog::getSaveFileName(
        this, tr("Save the Imported Project As"),
        info.dir().filePath(info.completeBaseName() + QStringLiteral(".myelin")),
        tr("Myelin projects (*.myelin)"));
    if (project.isEmpty()) return;
    if (!project.endsWith(QStringLiteral(".myelin"))) project += QStringLiteral(".myelin");
    importModel(onnx, project);
}

bool MainWindow::importModel(const QString& onnx, const QString& projectPath) {
    if (training_->isActive()) return false;
    try {
        const exporters::ImportedModel model = exporters::import_onnx_file(onnx.toStdString());
        const std::filesystem::path checkpoint =
            exporters::default_import_checkpoint(projectPath.toStdString());
        exporters::write_imported_model(model, projectPath.toStdString(), checkpoint);
        if (!openProject(projectPath)) return false;
        statusBar()->showMessage(
            tr("Imported %1: %2 layers; runs start from its weights (%3). Set its data on the "
               "Data page before training.")
                .arg(QFileInfo(onnx).fileName())
                .arg(model.project.model.nodes.size() - 2)
                .arg(QString::fromStdString(checkpoint.filename().string())),
            kStatusMs * 3);
        return true;
    } catch (const Error& e) {
        auto* box = new QMessageBox(QMessageBox::Warning, tr("Cannot Import"),
                                    tr("%1 cannot be imported.").arg(QFileInfo(onnx).fileName()),
                                    QMessageBox::Close, this);
        box->setObjectName(QStringLiteral("importFailedBox"));
        box->setInformativeText(QString::fromStdString(e.what()));
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->open();
        return false;
    }
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

} // namespace myelin::ui
