// The main window's Runs and Evaluate tabs: the runs browser (every recorded run as a lineage
// tree) over the comparison of the selected runs; resume, fork and evaluate from it; and File >
// Export.
#include "shell/main_window.h"

#include "document/project_document.h"
#include "inspect/gradient_flow_view.h"
#include "runs/runs_browser.h"
#include "runs/runs_compare_view.h"
#include "shell/evaluate_page.h"
#include "shell/export_dialog.h"
#include "training/training_controller.h"

#include <myelin/store/run_store.h>

#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>

namespace myelin::ui {

void MainWindow::createRuns() {
    runsPage_ = new QSplitter(Qt::Vertical, workspace_);
    runsPage_->setObjectName(QStringLiteral("runsPage"));
    auto* split = static_cast<QSplitter*>(runsPage_);
    runsBrowser_ = new RunsBrowser(split);
    runsCompare_ = new RunsCompareView(split);
    split->addWidget(runsBrowser_);
    split->addWidget(runsCompare_);
    // The list gets room for a dozen runs; the plots the rest.
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 3);
    split->setSizes({380, 520});
    workspaceTabs_->addTab(runsPage_, tr("Runs"));
    evaluatePage_ = new EvaluatePage(workspace_);
    workspaceTabs_->addTab(evaluatePage_, tr("Evaluate"));

    connect(runsBrowser_, &RunsBrowser::resumeRequested, this, &MainWindow::resumeRun);
    connect(runsBrowser_, &RunsBrowser::forkRequested, this, &MainWindow::forkRun);
    connect(runsBrowser_, &RunsBrowser::evaluateRequested, this, &MainWindow::evaluateRun);
    connect(runsBrowser_, &RunsBrowser::selectionChanged, runsCompare_, &RunsCompareView::setRuns);
    connect(workspaceTabs_, &QTabWidget::currentChanged, this, &MainWindow::updateRunsViews);
    connect(document_, &ProjectDocument::filePathChanged, this, &MainWindow::updateRunsViews);
    connect(document_, &ProjectDocument::projectReplaced, this, &MainWindow::updateRunsViews);
    connect(training_, &TrainingController::stateChanged, this,
            [this] { evaluatePage_->setTrainingActive(training_->isActive()); });
}

void MainWindow::arrangeDocksForPage() {
    // Not under a dock being dragged (it holds the mouse): QMainWindow::restoreState() crashes
    // then (Qt 6.4; found by the monkey test: a tab switched while the Live Training dock was
    // dragged, as a NaN's error does when it shows the Model tab). Once the drag has ended.
    if (qobject_cast<QDockWidget*>(QWidget::mouseGrabber()) != nullptr) {
        if (!dockArrangePending_) {
            dockArrangePending_ = true;
            QTimer::singleShot(100, this, [this] {
                dockArrangePending_ = false;
                arrangeDocksForPage();
            });
        }
        return;
    }
    // The Runs and Evaluate tabs take the whole window: the editing docks (and the idle live
    // view) step aside while they are shown, and come back as they were.
    QWidget* page = workspaceTabs_->currentWidget();
    const bool wide = document_->isOpen() && (page == runsPage_ || page == evaluatePage_);
    if (wide && dockStateBeforeRuns_.isEmpty()) {
        dockStateBeforeRuns_ = saveState();
        for (QDockWidget* dock : {paletteDock_, inspectorDock_, problemsDock_, summaryDock_})
            dock->hide();
        if (!training_->isActive()) trainingDockWidget_->hide();
    } else if (!wide && !dockStateBeforeRuns_.isEmpty()) {
        restoreState(dockStateBeforeRuns_);
        dockStateBeforeRuns_.clear();
        if (training_->isActive()) trainingDockWidget_->show();
    }
}

void MainWindow::updateRunsViews() {
    QWidget* page = workspaceTabs_->currentWidget();
    arrangeDocksForPage();
    if (page == runsPage_) {
        if (runsBrowser_->storePath() != training_->storePath()) {
            runsBrowser_->setStorePath(training_->storePath());
            runsCompare_->setStorePath(training_->storePath());
        }
        runsBrowser_->setProjectPath(document_->filePath());
    } else if (page == evaluatePage_) {
        evaluatePage_->setStorePath(training_->storePath());
        evaluatePage_->setOpenProject(
            document_->isOpen() ? std::optional<io::Project>(document_->project()) : std::nullopt,
            document_->dataDirectory());
        evaluatePage_->setTrainingActive(training_->isActive());
    }
}

void MainWindow::evaluateRun(qint64 run) {
    if (training_->isActive()) {
        statusBar()->showMessage(tr("A run is training: evaluate when it has ended."), kStatusMs);
        return;
    }
    workspaceTabs_->setCurrentWidget(evaluatePage_); // reads the store (updateRunsViews)
    evaluatePage_->evaluateRun(run);
}

void MainWindow::showExportDialog() {
    // A safetensors export evaluates the model for its card, which shares the process's random
    // state with a training run.
    if (training_->isActive()) {
        statusBar()->showMessage(tr("A run is training: export when it has ended."), kStatusMs);
        return;
    }
    const QList<qint64> selected = runsBrowser_->selectedRuns();
    const qint64 run = selected.isEmpty() ? training_->runId() : selected.first();
    const QString folder = document_->filePath().isEmpty()
                               ? QDir::homePath()
                               : QFileInfo(document_->filePath()).path();
    ExportDialog dialog(training_->storePath(), run, folder, this);
    dialog.exec();
}

void MainWindow::showOpenRunStoreDialog() {
    // The current store's folder; the home folder before any run has created it (a folder that
    // does not exist would open the dialog in the working folder with its name as the file).
    QString folder = QFileInfo(training_->storePath()).absolutePath();
    if (!QDir(folder).exists()) folder = QDir::homePath();
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Open Run Store"), folder, tr("Run stores (*.sqlite *.db);;All files (*)"));
    if (!path.isEmpty()) openRunStore(path);
}

bool MainWindow::openRunStore(const QString& path) {
    if (training_->isActive()) {
        statusBar()->showMessage(tr("A run is training: open another run store when it has ended."),
                                 kStatusMs);
        return false;
    }
    QString condition;
    try {
        // Opening checks that it is a run store (and migrates an older schema) before any view
        // reads it; runs of processes on other hosts are left as they are. A read-only store,
        // or one another program holds locked, is still read (the Runs tab says which); a
        // damaged or newer one is refused, unwritten.
        store::StoreOptions options;
        options.access = store::StoreAccess::ReadWriteIfAllowed;
        const auto opened = store::RunStore::open(path.toStdString(), options);
        condition = QString::fromStdString(opened.condition_message());
    } catch (const std::exception& e) {
        QMessageBox::warning(this, tr("Open Run Store"),
                             tr("%1 cannot be opened as a run store:\n%2")
                                 .arg(QDir::toNativeSeparators(path), QString::fromUtf8(e.what())));
        return false;
    }
    training_->setStorePath(path);
    gradientFlow_->setStorePath(path);
    updateRunsViews();
    if (!condition.isEmpty())
        statusBar()->showMessage(condition, kStatusMs);
    else
        statusBar()->showMessage(tr("Run store %1: the Runs, Evaluate and inspection tabs read it; "
                                    "new runs are recorded in it")
                                     .arg(QDir::toNativeSeparators(path)),
                                 kStatusMs);
    return true;
}

} // namespace myelin::ui
