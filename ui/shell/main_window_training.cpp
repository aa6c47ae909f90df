// The main window's training side: the Train toolbar and the controller's signals, starting,
// pausing and stopping a run, the editing lock while one goes, training errors, breakpoints
// (the dialog and a fired one) and the layer badges the canvas shows while a run streams.
#include "shell/main_window.h"

#include "document/project_document.h"
#include "editor/graph_scene.h"
#include "editor/layer_palette.h"
#include "editor/model_editor.h"
#include "editor/node_inspector.h"
#include "editor/node_item.h"
#include "editor/step_scrubber.h"
#include "inspect/distributions_view.h"
#include "inspect/feature_maps_view.h"
#include "inspect/gradient_flow_view.h"
#include "inspect/time_gradients_view.h"
#include "pages/data_page.h"
#include "pages/training_page.h"
#include "runs/fork_dialog.h"
#include "shell/welcome_page.h"
#include "training/breakpoints_dialog.h"
#include "training/paused_changes_dialog.h"
#include "training/process_run.h"
#include "training/training_controller.h"
#include "training/training_dock.h"
#include "widgets/theme.h"

#include <myelin/cuda.h>
#include <myelin/error.h>
#include <myelin/graph/analysis.h>
#include <myelin/train/memory_estimate.h>
#include <myelin/train/trainer.h>

#include <QAction>
#include <QDockWidget>
#include <QGridLayout>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QProgressBar>
#include <QStatusBar>
#include <QTabWidget>
#include <QThread>
#include <QTimer>
#include <QToolBar>
#include <QUndoStack>

#include <algorithm>
#include <climits>

namespace myelin::ui {

void MainWindow::createTraining() {
    trainingPage_->setProcessesAvailable(ProcessRun::available(), QThread::idealThreadCount());
    trainToolBar_ = addToolBar(tr("Training"));
    trainToolBar_->setObjectName(QStringLiteral("trainToolBar"));
    trainToolBar_->setMovable(false);
    trainToolBar_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    trainToolBar_->setIconSize(QSize(16, 16));
    for (QAction* action : {trainAction_, pauseAction_, resumeAction_, changeAction_, stopAction_})
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
                setLiveText(trainStatus_, tr("%1  ·  ETA %2  ·  %3")
                                              .arg(progressText(p), formatDuration(p.eta_seconds),
                                                   runPlaceText(*training_)));
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
    // The scrubber under the canvas and the Gradient Flow view's step move together; the badges
    // follow the Gradient Flow view's step.
    StepScrubber* scrubber = editor_->scrubber();
    connect(gradientFlow_, &GradientFlowView::stepsChanged, scrubber, &StepScrubber::setSteps);
    connect(scrubber, &StepScrubber::stepRequested, gradientFlow_,
            [this](qint64 step) { gradientFlow_->selectStep(step); });
    connect(scrubber, &StepScrubber::followRequested, gradientFlow_,
            &GradientFlowView::setFollowNewest);
    // Scrubbing moves the Feature Maps view to the nearest step it has maps for.
    connect(scrubber, &StepScrubber::stepRequested, featureMaps_,
            [this](qint64 step) { featureMaps_->selectStep(step); });
    connect(gradientFlow_, &GradientFlowView::stepsChanged, distributions_,
            [this](qint64, qint64 selected) {
                if (selected != distributions_->markedStep()) distributions_->markStep(selected);
            });
    connect(training_, &TrainingController::finished, featureMaps_, &FeatureMapsView::runFinished);
    connect(gradientFlow_, &GradientFlowView::runShown, this, [this](qint64 run, bool live) {
        distributions_->showRun(gradientFlow_->storePath(), run, live);
        featureMaps_->showRun(gradientFlow_->storePath(), run, live);
        timeGradients_->showRun(gradientFlow_->storePath(), run, live);
    });
    // Gradient through Time: its tab only for runs with recurrent layers; the scrubber moves it.
    connect(timeGradients_, &TimeGradientsView::availabilityChanged, this, [this](bool on) {
        workspaceTabs_->setTabVisible(workspaceTabs_->indexOf(timeGradients_), on);
    });
    connect(training_, &TrainingController::finished, timeGradients_,
            &TimeGradientsView::runFinished);
    connect(scrubber, &StepScrubber::stepRequested, timeGradients_,
            [this](qint64 step) { timeGradients_->selectStep(step); });
    connect(workspaceTabs_, &QTabWidget::currentChanged, this, [this](int index) {
        QWidget* page = workspaceTabs_->widget(index);
        if (page != gradientFlow_ && page != distributions_ && page != featureMaps_ &&
            page != timeGradients_)
            return;
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
    pauseAction_->setEnabled(state == TrainingController::State::Running && training_->canPause());
    resumeAction_->setEnabled(state == TrainingController::State::Paused);
    changeAction_->setEnabled(state == TrainingController::State::Paused && training_->canPause());
    stopAction_->setEnabled(state == TrainingController::State::Running ||
                            state == TrainingController::State::Paused);
    // Another project cannot replace the one a run is training.
    const bool idle = state == TrainingController::State::Idle;
    newAction_->setEnabled(idle);
    openAction_->setEnabled(idle);
    importAction_->setEnabled(idle);
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
    // The memory pre-flight: a run that cannot fit is refused before anything starts (it would
    // be killed by the system minutes later); one that is close is said in the status bar.
    try {
        const io::Project& project = document_->project();
        const train::MemoryVerdict memory = train::check_training_memory(
            project, document_->dataDirectory().toStdString(), project.data.batch_size,
            parse_device(project.train.device));
        if (memory.fit == train::MemoryFit::DoesNotFit) {
            auto* box =
                new QMessageBox(QMessageBox::Warning, tr("Not Enough Memory"),
                                tr("This run cannot fit in memory."), QMessageBox::Close, this);
            box->setObjectName(QStringLiteral("notEnoughMemoryBox"));
            box->setInformativeText(QString::fromStdString(memory.message));
            box->setAttribute(Qt::WA_DeleteOnClose);
            box->open();
            return false;
        }
        if (memory.fit == train::MemoryFit::Close)
            statusBar()->showMessage(QString::fromStdString(memory.message), kStatusMs);
    } catch (const Error&) {
        // The run's own setup says what is wrong with the model or the data.
    }
    TrainingStartOptions options;
    options.runName = document_->displayName();
    if (options.runName.endsWith(QStringLiteral(".myelin")))
        options.runName.chop(int(qstrlen(".myelin")));
    options.projectPath = document_->filePath();
    options.processes = trainingPage_->processes();
    return startRun(document_->project(), document_->dataDirectory(), options);
}

void MainWindow::changeWhilePaused() {
    if (training_->state() != TrainingController::State::Paused || !training_->canPause()) return;
    auto* dialog =
        new PausedChangesDialog(training_->progress().step, trainingDock_->lastLearningRate(),
                                training_->runSettings(), this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::accepted, this, [this, dialog] {
        if (training_->requestEdits(dialog->edits()))
            statusBar()->showMessage(tr("The changes take effect when the run resumes."),
                                     kStatusMs);
    });
    dialog->open();
}

bool MainWindow::resumeRun(qint64 run) {
    return resumeOrForkRun(run, false);
}

bool MainWindow::forkRun(qint64 run) {
    return resumeOrForkRun(run, true);
}

bool MainWindow::resumeOrForkRun(qint64 run, bool fork) {
    if (training_->isActive()) {
        statusBar()->showMessage(tr("A run is going: stop it first."), kStatusMs);
        return false;
    }
    ForkDialog dialog(training_->storePath(), run,
                      fork ? ForkDialog::Mode::Fork : ForkDialog::Mode::Resume, this);
    dialog.setObjectName(QStringLiteral("forkDialog"));
    if (dialog.exec() != QDialog::Accepted) return false;
    TrainingStartOptions options;
    if (dialog.mode() == ForkDialog::Mode::Fork)
        options.fork = dialog.forkSource();
    else
        options.resume = dialog.checkpointPath();
    const io::Project project = dialog.project();
    options.runName = QString::fromStdString(project.name.empty() ? "untitled" : project.name);
    options.projectPath = dialog.projectPath();
    // Data paths are relative to the folder of the project the run was trained from.
    QString dataDir = dialog.projectDirectory();
    if (dataDir.isEmpty() && document_->isOpen()) dataDir = document_->dataDirectory();
    return startRun(project, dataDir, options);
}

bool MainWindow::startRun(const io::Project& project, const QString& dataDir,
                          TrainingStartOptions options) {
    // A device (or precision) this machine cannot train on is refused before a run is created.
    try {
        train::training_device(project);
    } catch (const Error& e) {
        auto* box = new QMessageBox(QMessageBox::Warning, tr("Cannot Train on This Device"),
                                    tr("The project's training device cannot be used here."),
                                    QMessageBox::Close, this);
        box->setObjectName(QStringLiteral("cannotTrainDeviceBox"));
        QString reason = QString::fromStdString(e.what());
        if (reason.startsWith(QStringLiteral("the "))) reason[0] = QLatin1Char('T'); // a sentence
        box->setInformativeText(reason + QStringLiteral("\n\n") +
                                tr("Choose the device and precision on the Training page."));
        // Wide enough for the reason's device names ("cuda:0") to stay on one line.
        if (auto* grid = qobject_cast<QGridLayout*>(box->layout()))
            grid->addItem(new QSpacerItem(480, 0, QSizePolicy::Minimum, QSizePolicy::Fixed),
                          grid->rowCount(), 0, 1, grid->columnCount());
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->open();
        return false;
    }
    options.breakpoints = storedBreakpoints();
    if (!training_->start(project, dataDir, options)) return false;
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

} // namespace myelin::ui
