// TrainingController's runs in other processes: N ranks started with mpirun (ProcessRun), whose
// events arrive as JSON lines and go through the same dispatch() as an in-process run's, so the
// live view, the status bar and the Runs tab see no difference.
#include "training/process_run.h"
#include "training/training_controller.h"

#include <myelin/train/breakpoints.h>

#include <QStringList>
#include <QTimer>

namespace myelin::ui {

bool TrainingController::startProcesses(const io::Project& project, const QString& projectDir,
                                        const TrainingStartOptions& options) {
    ProcessRunOptions run;
    run.processes = options.processes;
    run.threadsPerProcess =
        ProcessRun::threadsPerProcess(int(project.train.threads), options.processes);
    run.storePath = storePath_;
    run.runName = !options.runName.isEmpty() ? options.runName
                  : !project.name.empty()    ? QString::fromStdString(project.name)
                                             : QStringLiteral("untitled");
    run.dataDir = projectDir.isEmpty() ? QStringLiteral(".") : projectDir;
    run.projectPath = options.projectPath;
    if (options.epochs)
        run.extraArgs << QStringLiteral("--epochs") << QString::number(*options.epochs);
    if (options.maxSteps > 0)
        run.extraArgs << QStringLiteral("--max-steps") << QString::number(options.maxSteps);
    if (!options.resume.isEmpty()) run.extraArgs << QStringLiteral("--resume") << options.resume;
    if (options.fork)
        run.extraArgs << QStringLiteral("--fork")
                      << (options.fork->step ? QStringLiteral("%1@%2")
                                                   .arg(options.fork->run)
                                                   .arg(qint64(*options.fork->step))
                                             : QString::number(options.fork->run));
    if (!options.breakpoints.empty()) {
        // Nobody can resume a paused rank: in other processes a breakpoint stops the run.
        QStringList conditions;
        for (const train::BreakCondition& c : options.breakpoints)
            conditions << QString::fromStdString(train::format_break_condition(c));
        run.extraArgs << QStringLiteral("--break-on") << conditions.join(QLatin1Char(','));
    }

    session_.reset();
    runId_ = -1;
    progress_ = train::Progress{};
    finalStatus_.reset();
    errorReported_ = false;
    process_ = new ProcessRun(this);
    connect(process_, &ProcessRun::runCreated, this, [this](qint64 id, const QString& store) {
        runId_ = id;
        emit runCreated(id, store);
    });
    connect(process_, &ProcessRun::eventArrived, this, [this](const train::Event& e) {
        if (const auto* f = e.get<train::Finished>()) finalStatus_ = f->status;
        dispatch(e);
    });
    connect(process_, &ProcessRun::ended, this, &TrainingController::onProcessEnded);
    setState(State::Running);
    QString error;
    if (!process_->start(project, run, &error)) {
        // Nothing started: a run that failed before it began, reported once the caller has
        // seen start() succeed (as a run on the worker thread fails after start()).
        delete process_;
        process_ = nullptr;
        QTimer::singleShot(0, this, [this, error] {
            emit runError(error, QString());
            setState(State::Idle);
            emit finished(train::RunStatus::Failed);
        });
        return true;
    }
    emit logMessage(tr("Training in %1 processes, %2 thread(s) each: %3")
                        .arg(run.processes)
                        .arg(run.threadsPerProcess)
                        .arg(process_->commandLine()),
                    false);
    return true;
}

void TrainingController::onProcessEnded(int exitCode, const QString& errorText) {
    // A run that failed before it could say why in an event (a project the CLI cannot read, a
    // launcher that refused): what the processes wrote on stderr.
    if (!finalStatus_ && !errorReported_) {
        const QString message =
            !errorText.isEmpty() ? errorText
                                 : tr("The training processes ended with exit code %1 before the "
                                      "run began.")
                                       .arg(exitCode);
        emit runError(message, QString());
    }
    process_->deleteLater();
    process_ = nullptr;
    setState(State::Idle);
    emit finished(finalStatus_.value_or(train::RunStatus::Failed));
}

} // namespace myelin::ui
