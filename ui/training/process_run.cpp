#include "training/process_run.h"

#include <myelin/error.h>
#include <myelin/train/event_lines.h>

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QThread>

#include <unistd.h>

#include <algorithm>

namespace myelin::ui {

namespace {

constexpr int kKeptErrorLines = 40;
constexpr int kStopWaitMs = 30000; // closing: time for the ranks to finish their step

QString executable(const QString& path) {
    const QFileInfo info(path);
    return info.isFile() && info.isExecutable() ? info.absoluteFilePath() : QString();
}

} // namespace

QString failureMessageFrom(const QString& errorOutput) {
    const QStringList lines = errorOutput.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QString first;
    for (const QString& raw : lines) {
        const QString line = raw.trimmed();
        if (!line.startsWith(QLatin1String("myelin: "))) continue;
        const QString text = line.mid(8);
        // Rank 0 names the failing rank and its error; its line says the most.
        if (text.startsWith(QLatin1String("rank 0:"))) return text;
        if (first.isEmpty()) first = text;
    }
    if (!first.isEmpty()) return first;
    for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
        const QString line = it->trimmed();
        // Open MPI frames its notices with lines of dashes.
        if (!line.isEmpty() && !line.startsWith(QLatin1String("---"))) return line;
    }
    return {};
}

ProcessRun::ProcessRun(QObject* parent) : QObject(parent) {}

ProcessRun::~ProcessRun() {
    if (isRunning()) {
        stop();
        if (!wait(kStopWaitMs)) kill();
    }
}

QString ProcessRun::cliPath() {
    if (const QString env = qEnvironmentVariable("MYELIN_CLI"); !env.isEmpty())
        return executable(env);
    const QDir app(QCoreApplication::applicationDirPath());
    if (QString beside = executable(app.filePath(QStringLiteral("myelin"))); !beside.isEmpty())
        return beside;
    return QStandardPaths::findExecutable(QStringLiteral("myelin"));
}

QString ProcessRun::mpirunPath() {
    if (const QString env = qEnvironmentVariable("MYELIN_MPIRUN"); !env.isEmpty())
        return executable(env);
    return QStandardPaths::findExecutable(QStringLiteral("mpirun"));
}

bool ProcessRun::available(QString* why) {
    auto refuse = [why](const QString& reason) {
        if (why) *why = reason;
        return false;
    };
#ifndef MYELIN_STUDIO_MPI
    return refuse(tr("this build has no MPI support"));
#endif
    if (mpirunPath().isEmpty()) return refuse(tr("no mpirun on the PATH (install openmpi-bin)"));
    if (cliPath().isEmpty()) return refuse(tr("the myelin command-line tool was not found"));
    if (why) why->clear();
    return true;
}

int ProcessRun::threadsPerProcess(int projectThreads, int processes) {
    const int total = projectThreads > 0 ? projectThreads : QThread::idealThreadCount();
    return std::max(1, total / std::max(1, processes));
}

bool ProcessRun::start(const io::Project& project, const ProcessRunOptions& options,
                       QString* error) {
    auto dir =
        std::make_unique<QTemporaryDir>(QDir::temp().filePath(QStringLiteral("myelin-run-XXXXXX")));
    if (!dir->isValid()) {
        if (error)
            *error = tr("Cannot make a folder for the project copy: %1").arg(dir->errorString());
        return false;
    }
    const QString copy = dir->filePath(QStringLiteral("project.myelin"));
    try {
        io::save_project(project, copy.toStdString());
    } catch (const std::exception& e) {
        if (error)
            *error =
                tr("Cannot write the project copy %1: %2").arg(copy, QString::fromUtf8(e.what()));
        return false;
    }
    dir_ = std::move(dir);
    if (startFile(copy, options, error)) return true;
    dir_.reset();
    return false;
}

bool ProcessRun::startFile(const QString& projectFile, const ProcessRunOptions& options,
                           QString* error) {
    if (process_ != nullptr) {
        if (error) *error = tr("This run has already started.");
        return false;
    }
    QString why;
    if (!available(&why)) {
        if (error) *error = tr("Cannot train in several processes: %1.").arg(why);
        return false;
    }
    // The stop file lives beside the copy; a broken copy given as a file gets its own folder.
    if (!dir_) {
        dir_ = std::make_unique<QTemporaryDir>(
            QDir::temp().filePath(QStringLiteral("myelin-run-XXXXXX")));
        if (!dir_->isValid()) {
            if (error) *error = tr("Cannot make a folder for the run: %1").arg(dir_->errorString());
            dir_.reset();
            return false;
        }
    }
    stopFile_ = dir_->filePath(QStringLiteral("stop"));
    QFile::remove(stopFile_);

    QStringList args = {QStringLiteral("-np"),
                        QString::number(options.processes),
                        QStringLiteral("--oversubscribe"),
                        cliPath(),
                        QStringLiteral("train"),
                        projectFile,
                        QStringLiteral("--dist"),
                        QStringLiteral("mpi"),
                        QStringLiteral("--events"),
                        QStringLiteral("jsonl"),
                        QStringLiteral("--stop-file"),
                        stopFile_,
                        QStringLiteral("--threads"),
                        QString::number(options.threadsPerProcess)};
    if (!options.storePath.isEmpty()) args << QStringLiteral("--store") << options.storePath;
    if (!options.runName.isEmpty()) args << QStringLiteral("--name") << options.runName;
    if (!options.dataDir.isEmpty()) args << QStringLiteral("--data-dir") << options.dataDir;
    if (!options.projectPath.isEmpty())
        args << QStringLiteral("--record-project") << options.projectPath;
    args << options.extraArgs;

    process_ = new QProcess(this);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    if (::geteuid() == 0) { // Open MPI refuses root unless told twice
        env.insert(QStringLiteral("OMPI_ALLOW_RUN_AS_ROOT"), QStringLiteral("1"));
        env.insert(QStringLiteral("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"), QStringLiteral("1"));
    }
    process_->setProcessEnvironment(env);
    connect(process_, &QProcess::readyReadStandardOutput, this, &ProcessRun::readOutput);
    connect(process_, &QProcess::readyReadStandardError, this, &ProcessRun::readErrors);
    connect(process_, &QProcess::finished, this, &ProcessRun::onFinished);
    const QString program = mpirunPath();
    commandLine_ = program + QLatin1Char(' ') + args.join(QLatin1Char(' '));
    process_->start(program, args);
    if (!process_->waitForStarted(10000)) {
        if (error) *error = tr("Cannot start %1: %2").arg(program, process_->errorString());
        process_->deleteLater();
        process_ = nullptr;
        return false;
    }
    return true;
}

void ProcessRun::stop() {
    if (!isRunning() || stopFile_.isEmpty()) return;
    QFile file(stopFile_);
    if (!file.open(QIODevice::WriteOnly)) kill(); // a stop that cannot be asked for still stops
}

void ProcessRun::kill() {
    if (isRunning()) process_->kill();
}

bool ProcessRun::wait(int timeoutMs) {
    if (!isRunning()) return true;
    return process_->waitForFinished(timeoutMs);
}

bool ProcessRun::isRunning() const {
    return process_ != nullptr && process_->state() != QProcess::NotRunning;
}

void ProcessRun::readOutput() {
    pendingOut_ += process_->readAllStandardOutput();
    qsizetype start = 0;
    for (qsizetype end = pendingOut_.indexOf('\n'); end >= 0;
         end = pendingOut_.indexOf('\n', start)) {
        handleLine(pendingOut_.mid(start, end - start));
        start = end + 1;
    }
    pendingOut_.remove(0, start);
}

void ProcessRun::handleLine(const QByteArray& line) {
    std::optional<train::EventLine> parsed;
    try {
        parsed = train::parse_event_line(std::string_view(line.constData(), size_t(line.size())));
    } catch (const Error& e) {
        emit eventArrived(train::Event(train::LogMessage{train::LogLevel::Warning, e.what()}));
        return;
    }
    if (!parsed) return; // the CLI's plain output (the run line, the data summary)
    if (parsed->run)
        emit runCreated(parsed->run->run_id, QString::fromStdString(parsed->run->store_path));
    if (parsed->event) emit eventArrived(*parsed->event);
}

void ProcessRun::readErrors() {
    errorOutput_ += QString::fromUtf8(process_->readAllStandardError());
    QStringList lines = errorOutput_.split(QLatin1Char('\n'));
    if (lines.size() > kKeptErrorLines) {
        lines = lines.mid(lines.size() - kKeptErrorLines);
        errorOutput_ = lines.join(QLatin1Char('\n'));
    }
}

void ProcessRun::onFinished(int exitCode, QProcess::ExitStatus status) {
    if (ended_) return;
    ended_ = true;
    readOutput();
    if (!pendingOut_.isEmpty()) handleLine(pendingOut_); // a last line without its newline
    pendingOut_.clear();
    readErrors();
    const int code = status == QProcess::NormalExit ? exitCode : -1;
    emit ended(code, code == 0 ? QString() : failureMessageFrom(errorOutput_));
}

} // namespace myelin::ui
