#pragma once
// Runs a train::Trainer on a worker QThread for the studio, exactly as `myelin train` does: the
// run is created in the SQLite run store (a StoreSink records every event there), checkpoints go
// to the run's artifact folder, and the trainer's events also go into a bounded EventQueue that
// a ~30 Hz timer on the GUI thread drains into the signals below — a fast training loop never
// floods the event loop, and the loop never waits for the UI. pause(), resume() and stop() may be
// called at any time (also before the trainer is built: a stop then cancels the start).
#include <myelin/io/project.h>
#include <myelin/train/breakpoints.h>
#include <myelin/train/events.h>
#include <myelin/train/recorded_run.h>
#include <myelin/train/run_control.h>

#include <QObject>
#include <QString>

#include <memory>
#include <optional>
#include <vector>

class QThread;
class QTimer;

namespace myelin::ui {

class ProcessRun;

struct TrainingStartOptions {
    std::optional<int64_t> epochs; // override the project's
    int64_t maxSteps = 0;          // stop after this many optimizer steps; 0: no limit
    QString runName;               // empty: the project's name
    QString resume;                // a run id in the store or a checkpoint file; empty: fresh
    // Fork: a new run branching off this run's checkpoint (the project passed to start() is the
    // fork's, its differences from the parent's are recorded). Excludes `resume`.
    std::optional<train::ForkSource> fork;
    QString projectPath; // the project file, recorded with the run; empty: unsaved
    // Conditions that pause the run at the step where one holds (breakpointHit tells); they
    // can be changed while it goes (setBreakpoints).
    std::vector<train::BreakCondition> breakpoints;
    // More than 1: the run trains data-parallel in this many processes on this machine, launched
    // with mpirun (ProcessRun; needs ProcessRun::available()). Its events arrive as they do from
    // a run in the studio; it cannot pause, and a breakpoint stops it.
    int processes = 1;
};

class TrainingController : public QObject {
    Q_OBJECT

  public:
    enum class State { Idle, Running, Paused, Stopping };
    Q_ENUM(State)

    explicit TrainingController(QObject* parent = nullptr);
    // Stops a run that is still going and waits for its thread.
    ~TrainingController() override;

    // The run store runs are recorded in (default: store::default_store_path()).
    void setStorePath(const QString& path) { storePath_ = path; }
    QString storePath() const { return storePath_; }

    // Starts training a snapshot of `project`; data paths are relative to `projectDir`. False
    // (with nothing started) when a run is already going. Problems found later — a store that
    // cannot be opened, data that does not fit the model, a NaN — arrive as runError() and
    // finished(Failed).
    bool start(const io::Project& project, const QString& projectDir,
               const TrainingStartOptions& options = {});
    // Replaces the breakpoints of the run that is going, from its next optimizer step on.
    void setBreakpoints(const std::vector<train::BreakCondition>& conditions);
    // While paused (in this process): settings the run takes when it resumes (the learning rate,
    // gradient clipping, frozen layers, lr multipliers, capture; train::RunEdits). False when
    // there is no such run.
    bool requestEdits(const train::RunEdits& edits);
    // The current (or last) run's settings: the project it started from with what requestEdits
    // changed since (clipping, frozen layers, lr multipliers, capture).
    const io::Project& runSettings() const { return runSettings_; }
    void pause();
    void resume();
    // Finishes the current optimizer step, writes a checkpoint and ends the run as stopped.
    void stop();
    // Waits (processing no events) until the worker thread has ended; true when it has.
    bool wait(int timeoutMs);

    State state() const { return state_; }
    // False for a run in other processes (they have no pause).
    bool canPause() const { return process_ == nullptr; }
    // The run trains in other processes (TrainingStartOptions::processes > 1).
    bool isMultiProcess() const { return process_ != nullptr; }
    // Processes the current (or last) run trains in: 1 for a run in the studio.
    int runProcesses() const { return runProcesses_; }
    bool isActive() const { return state_ != State::Idle; }
    // The run's id in the store; -1 before it is created.
    int64_t runId() const { return runId_; }
    const train::Progress& progress() const { return progress_; }
  signals:
    void stateChanged(myelin::ui::TrainingController::State state);
    void runCreated(qint64 runId, const QString& storePath);
    void runStarted(const myelin::train::RunStarted& started);
    void stepMetrics(const myelin::train::StepMetrics& metrics);
    void epochMetrics(const myelin::train::EpochMetrics& metrics);
    void progressChanged(const myelin::train::Progress& progress);
    void checkpointSaved(const myelin::train::CheckpointSaved& checkpoint);
    void logMessage(const QString& text, bool warning);
    // The run failed: the message, and the module where a NaN/Inf first appeared (may be empty).
    void runError(const QString& message, const QString& module);
    // A breakpoint held the run at a step: the controller is Paused; resume() finishes the
    // step, stop() gives it up (with a checkpoint of the position before it).
    void breakpointHit(const myelin::train::BreakpointFired& breakpoint);
    // Settings changed at a step (requestEdits), as the trainer applied them.
    void runChanged(qint64 step, const QString& what);
    // The run ended and the controller is idle again (the store has the final status).
    void finished(myelin::train::RunStatus status);

  private:
    struct Session;
    // The worker thread's whole job: what `myelin train` does, with the queue as a second sink.
    static void trainInSession(const std::shared_ptr<Session>& session, const io::Project& project,
                               const std::string& projectDir, const TrainingStartOptions& start);
    void drain();
    void dispatch(const train::Event& event);
    void setState(State state);
    void onThreadFinished();
    // A run in other processes (training_controller_process.cpp).
    bool startProcesses(const io::Project& project, const QString& projectDir,
                        const TrainingStartOptions& options);
    void onProcessEnded(int exitCode, const QString& errorText);

    QString storePath_;
    std::shared_ptr<Session> session_;
    QThread* thread_ = nullptr;
    QTimer* drainTimer_ = nullptr;
    State state_ = State::Idle;
    int64_t runId_ = -1;
    train::Progress progress_;
    std::optional<train::RunStatus> finalStatus_; // from the Finished event
    io::Project runSettings_;
    ProcessRun* process_ = nullptr;
    int runProcesses_ = 1;
    bool errorReported_ = false; // a RunError arrived (a process run's stderr is then not shown)
};

} // namespace myelin::ui
