#pragma once
// A training run in other processes: `mpirun -np N myelin train <copy> --events jsonl ...` on
// this machine, N processes training data-parallel with the machine's cores split between them.
// The project is saved to a temporary copy (its data paths still resolve in the original's
// folder: --data-dir); rank 0 records the run in the studio's store and writes every event as a
// JSON line on stdout (train/event_lines.h), which this reads back into the same train::Event
// values an in-process run reports. Stop creates the run's stop file: rank 0 sees it at the next
// step and every rank stops there, with a checkpoint. The studio never links MPI; it only starts
// the launcher.
#include <myelin/io/project.h>
#include <myelin/train/events.h>

#include <QObject>
#include <QProcess>
#include <QString>
#include <QStringList>

#include <memory>

class QTemporaryDir;

namespace myelin::ui {

struct ProcessRunOptions {
    int processes = 2;
    int threadsPerProcess = 1;
    QString storePath;
    QString runName;
    QString dataDir;       // where the project's data paths resolve
    QString projectPath;   // the project file recorded with the run; empty: unsaved
    QStringList extraArgs; // more `myelin train` options (--epochs, --resume, --break-on, ...)
};

class ProcessRun : public QObject {
    Q_OBJECT

  public:
    explicit ProcessRun(QObject* parent = nullptr);
    // Stops a run that is still going (waiting a while for it), then kills what is left.
    ~ProcessRun() override;

    // The `myelin` command-line tool: $MYELIN_CLI, else beside the studio's executable, else on
    // the PATH. Empty when none is found.
    static QString cliPath();
    // The MPI launcher: $MYELIN_MPIRUN, else mpirun on the PATH. Empty when none is found.
    static QString mpirunPath();
    // Whether this studio can launch a multi-process run: its build found MPI (so the CLI built
    // beside it trains data-parallel), and the launcher and the CLI are found. When not, `why`
    // says what is missing.
    static bool available(QString* why = nullptr);
    // Threads for each of `processes` processes: the project's threads (0: this machine's cores)
    // split between them, at least 1.
    static int threadsPerProcess(int projectThreads, int processes);

    // Saves `project` to a temporary copy and starts the launcher on it. False with `error` set
    // (and nothing started) when the copy cannot be written or the launcher cannot be started.
    bool start(const io::Project& project, const ProcessRunOptions& options, QString* error);
    // As start(), on a project file as it is (tests give it a broken one).
    bool startFile(const QString& projectFile, const ProcessRunOptions& options, QString* error);
    // The run stops after its current step (every process), with a checkpoint.
    void stop();
    // Kills the launcher and its processes at once (the run is left as the store's open-time
    // check finds it).
    void kill();
    // Waits (handling the process's output, not the event loop) until it has ended.
    bool wait(int timeoutMs);
    bool isRunning() const;

    // The command line it started ("mpirun -np 2 ... myelin train ..."), for the log.
    QString commandLine() const { return commandLine_; }
    // What the processes wrote on stderr that was not MPI's own banner, trimmed to the last lines.
    QString errorOutput() const { return errorOutput_; }

  signals:
    void runCreated(qint64 runId, const QString& storePath);
    void eventArrived(const myelin::train::Event& event);
    // The launcher ended: its exit code (-1: it crashed or was killed) and, for a failed run,
    // the most telling line it wrote on stderr (may be empty).
    void ended(int exitCode, const QString& errorText);

  private:
    void readOutput();
    void readErrors();
    void handleLine(const QByteArray& line);
    void onFinished(int exitCode, QProcess::ExitStatus status);

    QProcess* process_ = nullptr;
    std::unique_ptr<QTemporaryDir> dir_;
    QString stopFile_;
    QString commandLine_;
    QByteArray pendingOut_;
    QString errorOutput_;
    bool ended_ = false;
};

// The message to show for a failed launch, from its stderr: the "myelin: ..." lines (the CLI's
// own errors, rank 0's first), else the last non-empty line. Empty for empty output.
QString failureMessageFrom(const QString& errorOutput);

} // namespace myelin::ui
