#pragma once
// Runs the myelin CLI (MYELIN_CLI_PATH, defined by the test's CMake target) as a child process
// and collects what it printed: shared by the CLI tests.
#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

struct CliResult {
    int exitCode = -1; // -1: crashed or did not finish
    QString out;
    QString err;
};

// `env`: NAME=VALUE pairs set for the child on top of this process's environment.
inline CliResult runCliProcess(const QStringList& args, int timeoutMs,
                               const QStringList& env = {}) {
    QProcess process;
    if (!env.isEmpty()) {
        QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
        for (const QString& kv : env)
            e.insert(kv.section(QLatin1Char('='), 0, 0), kv.section(QLatin1Char('='), 1));
        process.setProcessEnvironment(e);
    }
    process.start(QStringLiteral(MYELIN_CLI_PATH), args);
    CliResult r;
    if (!process.waitForFinished(timeoutMs)) {
        process.kill();
        process.waitForFinished();
        r.err = QStringLiteral("did not finish: ") + process.errorString();
        return r;
    }
    r.exitCode = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
    r.out = QString::fromUtf8(process.readAllStandardOutput());
    r.err = QString::fromUtf8(process.readAllStandardError());
    return r;
}

// The checkpoint path `myelin train` printed last (its "checkpoint: PATH" lines).
inline QString lastCheckpoint(const QString& out) {
    QString path;
    for (const QString& line : out.split(QLatin1Char('\n')))
        if (line.startsWith(QStringLiteral("checkpoint: ")))
            path = line.section(QStringLiteral(": "), 1).trimmed();
    return path;
}
