#include "training/training_controller.h"

#include "training/process_run.h"

#include <myelin/device.h>
#include <myelin/error.h>
#include <myelin/graph/analysis.h>
#include <myelin/store/run_store.h>
#include <myelin/train/recorded_run.h>

#include <QThread>
#include <QTimer>

#include <algorithm>
#include <atomic>
#include <filesystem>

namespace myelin::ui {

namespace {

// 10 Hz: what the live plots redraw at (TrainingDock::replot); draining more often woke the GUI
// thread, on a machine whose cores all train, for updates no one could see.
constexpr int kDrainIntervalMs = 100;
constexpr size_t kQueueCapacity = 4096;
constexpr size_t kMaxEventsPerDrain = 2048;

} // namespace

// What the GUI thread and the worker share: the events, and the run's stop / pause requests.
// The controller never points into the Trainer (which lives and dies on the worker); requests
// made before it exists or after it is gone land on the RunControl and are simply remembered.
struct TrainingController::Session {
    train::EventQueue queue{kQueueCapacity};
    std::shared_ptr<train::RunControl> control = std::make_shared<train::RunControl>();
    std::atomic<int64_t> runId{-1};
    std::string storePath;
    // The run's breakpoints; setBreakpoints changes them while it goes.
    std::shared_ptr<train::BreakpointSet> breakpoints = std::make_shared<train::BreakpointSet>();
};

TrainingController::TrainingController(QObject* parent)
    : QObject(parent), storePath_(QString::fromStdString(store::default_store_path().string())) {
    drainTimer_ = new QTimer(this);
    drainTimer_->setInterval(kDrainIntervalMs);
    connect(drainTimer_, &QTimer::timeout, this, &TrainingController::drain);
}

TrainingController::~TrainingController() {
    if (process_ != nullptr) {
        // Stops its processes (they finish the step and checkpoint); nobody hears of it now.
        process_->disconnect(this);
        delete process_;
    }
    if (thread_ != nullptr) {
        stop();
        thread_->wait();
        delete thread_;
    }
}

bool TrainingController::start(const io::Project& project, const QString& projectDir,
                               const TrainingStartOptions& options) {
    if (isActive()) return false;
    runProcesses_ = std::max(1, options.processes);
    runSettings_ = project;
    if (options.processes > 1) return startProcesses(project, projectDir, options);
    session_ = std::make_shared<Session>();
    session_->storePath = storePath_.toStdString();
    session_->breakpoints->set(options.breakpoints);
    runId_ = -1;
    progress_ = train::Progress{};
    finalStatus_.reset();
    auto session = session_;
    const std::string dir = projectDir.isEmpty() ? std::string(".") : projectDir.toStdString();
    thread_ = QThread::create([session, project, dir, options] {
        trainInSession(session, project, dir, options);
        session->queue.close();
    });
    thread_->setObjectName(QStringLiteral("trainingThread"));
    connect(thread_, &QThread::finished, this, &TrainingController::onThreadFinished);
    // The peak the studio shows is this run's: reset before the worker allocates (runCreated
    // reaches the GUI at the next drain, when the run has already allocated).
    reset_peak_memory_stats(DeviceType::CPU);
    setState(State::Running);
    thread_->start();
    drainTimer_->start();
    return true;
}

void TrainingController::setBreakpoints(const std::vector<train::BreakCondition>& conditions) {
    if (session_ && isActive()) session_->breakpoints->set(conditions);
}

void TrainingController::pause() {
    if (state_ != State::Running || !session_ || process_) return;
    session_->control->pause();
    setState(State::Paused);
}

bool TrainingController::requestEdits(const train::RunEdits& edits) {
    if (state_ != State::Paused || !session_ || process_ || edits.empty()) return false;
    session_->control->request_edits(edits);
    spec::TrainSpec& train = runSettings_.train;
    if (edits.clip_grad_norm) train.clip_grad_norm = *edits.clip_grad_norm;
    if (edits.clip_grad_value) train.clip_grad_value = *edits.clip_grad_value;
    if (edits.capture) train.capture = *edits.capture;
    if (!edits.frozen.empty() || !edits.lr_multiplier.empty()) {
        graph::ModelSpec& model = runSettings_.model;
        const graph::Analysis analysis = graph::analyze(model);
        auto node = [&](const std::string& module) {
            return model.find(analysis.node_of_module(model, module));
        };
        for (const auto& [module, frozen] : edits.frozen)
            if (graph::Node* n = node(module)) n->frozen = frozen;
        for (const auto& [module, multiplier] : edits.lr_multiplier)
            if (graph::Node* n = node(module)) n->lr_multiplier = multiplier;
    }
    return true;
}

void TrainingController::resume() {
    if (state_ != State::Paused || !session_) return;
    session_->control->resume();
    setState(State::Running);
}

void TrainingController::stop() {
    if (isActive() && process_) {
        process_->stop();
        setState(State::Stopping);
        return;
    }
    if (!isActive() || !session_) return;
    session_->control->stop();
    setState(State::Stopping);
}

bool TrainingController::wait(int timeoutMs) {
    if (process_) return process_->wait(timeoutMs);
    if (thread_ == nullptr) return true;
    return thread_->wait(QDeadlineTimer(timeoutMs));
}

void TrainingController::setState(State state) {
    if (state == state_) return;
    state_ = state;
    emit stateChanged(state);
}

void TrainingController::drain() {
    if (!session_) return;
    if (runId_ < 0 && session_->runId >= 0) {
        runId_ = session_->runId;
        emit runCreated(runId_, QString::fromStdString(session_->storePath));
    }
    std::vector<train::Event> events;
    session_->queue.drain(events, kMaxEventsPerDrain);
    // Progress replaces the one before it: only a drain's last is worth showing.
    const train::Event* last_progress = nullptr;
    for (const train::Event& event : events)
        if (event.get<train::Progress>()) last_progress = &event;
    for (const train::Event& event : events)
        if (!event.get<train::Progress>() || &event == last_progress) dispatch(event);
}

void TrainingController::dispatch(const train::Event& event) {
    if (const auto* e = event.get<train::RunStarted>()) {
        emit runStarted(*e);
    } else if (const auto* e = event.get<train::StepMetrics>()) {
        emit stepMetrics(*e);
    } else if (const auto* e = event.get<train::EpochMetrics>()) {
        emit epochMetrics(*e);
    } else if (const auto* e = event.get<train::Progress>()) {
        progress_ = *e;
        emit progressChanged(*e);
    } else if (const auto* e = event.get<train::CheckpointSaved>()) {
        emit checkpointSaved(*e);
    } else if (const auto* e = event.get<train::LogMessage>()) {
        emit logMessage(QString::fromStdString(e->text), e->level == train::LogLevel::Warning);
    } else if (const auto* e = event.get<train::RunError>()) {
        errorReported_ = true;
        emit runError(QString::fromStdString(e->message),
                      e->module ? QString::fromStdString(*e->module) : QString());
    } else if (const auto* e = event.get<train::BreakpointFired>()) {
        // The trainer paused itself; reflect it so Resume and Stop act on it.
        if (e->paused && state_ == State::Running) setState(State::Paused);
        emit breakpointHit(*e);
    } else if (const auto* e = event.get<train::RunChanged>()) {
        emit runChanged(qint64(e->step), QString::fromStdString(e->what));
    } else if (const auto* e = event.get<train::Finished>()) {
        // Reported once the worker has ended (onThreadFinished): then a new run can start.
        finalStatus_ = e->status;
    }
    // Tensor summaries and feature maps are recorded in the store; the live view does not show
    // them yet.
}

void TrainingController::onThreadFinished() {
    // Everything the worker pushed is in the closed queue: deliver it all before going idle.
    while (session_ && !session_->queue.exhausted())
        drain();
    drainTimer_->stop();
    thread_->deleteLater();
    thread_ = nullptr;
    setState(State::Idle);
    // No Finished event means the worker ended without one (it cannot, short of a bug): failed.
    emit finished(finalStatus_.value_or(train::RunStatus::Failed));
}

void TrainingController::trainInSession(const std::shared_ptr<Session>& session,
                                        const io::Project& project, const std::string& projectDir,
                                        const TrainingStartOptions& start) {
    auto fail = [&](const std::string& message) {
        session->queue.push(train::RunError{message, 0, 0, std::nullopt});
        session->queue.push(train::Finished{train::RunStatus::Failed, 0, 0});
    };
    std::optional<train::RecordedRun> run;
    try {
        train::TrainerOptions options;
        options.control = session->control;
        options.project_dir = projectDir;
        options.epochs = start.epochs;
        options.max_steps = start.maxSteps;
        options.breakpoints = session->breakpoints;
        options.on_break = train::BreakAction::Pause;
        options.device = train::training_device(project); // checked by the window already
        options.run_name = !start.runName.isEmpty() ? start.runName.toStdString()
                           : !project.name.empty()  ? project.name
                                                    : std::string("untitled");
        train::RecordedRunOptions recorded;
        recorded.store_path = session->storePath;
        recorded.resume = start.resume.toStdString();
        recorded.fork = start.fork;
        recorded.project_path = start.projectPath.toStdString();
        // The run exists in the store before anything can fail, so a failed setup is recorded.
        run.emplace(project, options, recorded);
        session->runId = run->id();
        try {
            run->prepare();
        } catch (const Error& e) {
            fail(e.what()); // recorded as failed by prepare()
            return;
        }
        run->run(&session->queue);
    } catch (const std::exception& e) {
        // The store itself failed (cannot be opened, locked past its busy timeout, disk full),
        // or the resume target does not exist.
        if (run) run->fail(e.what());
        fail(e.what());
    }
}

} // namespace myelin::ui
