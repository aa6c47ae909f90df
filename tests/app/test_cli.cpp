// Runs the built `myelin` command-line tool and checks its output and exit codes.
#include <myelin/version.h>

#include <QProcess>
#include <QtTest>

namespace {

struct Result {
    int exitCode = -1;
    QString out;
    QString err;
};

Result runCli(const QStringList& args) {
    QProcess process;
    process.start(QStringLiteral(MYELIN_CLI_PATH), args);
    Result r;
    if (!process.waitForFinished(30000)) {
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

} // namespace

class TestCli : public QObject {
    Q_OBJECT

  private slots:
    void version();
    void help();
    void shortHelp();
    void unknownArgument();
    void extraArgument();
    void noArguments();
};

void TestCli::version() {
    const Result r = runCli({QStringLiteral("--version")});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.err.isEmpty(), qPrintable(r.err));
    const QStringList lines = r.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 2);
    QCOMPARE(lines[0], QStringLiteral("myelin ") + QString::fromLatin1(myelin::version()));
    QVERIFY2(lines[1].startsWith(QStringLiteral("backends: CPU")), qPrintable(lines[1]));
}

void TestCli::help() {
    const Result r = runCli({QStringLiteral("--help")});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.err.isEmpty(), qPrintable(r.err));
    QVERIFY(r.out.startsWith(QStringLiteral("Usage: myelin")));
    QVERIFY(r.out.contains(QStringLiteral("--version")));
    QVERIFY(r.out.contains(QStringLiteral("--help")));
    // Only commands that exist are listed.
    QVERIFY(!r.out.contains(QStringLiteral("train")));
}

void TestCli::shortHelp() {
    const Result r = runCli({QStringLiteral("-h")});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.startsWith(QStringLiteral("Usage: myelin")));
}

void TestCli::unknownArgument() {
    const Result r = runCli({QStringLiteral("--bogus-flag")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY(r.out.isEmpty());
    QVERIFY2(r.err.contains(QStringLiteral("unknown argument '--bogus-flag'")), qPrintable(r.err));
}

void TestCli::extraArgument() {
    const Result r = runCli({QStringLiteral("--version"), QStringLiteral("extra")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY(r.out.isEmpty());
    QVERIFY2(r.err.contains(QStringLiteral("'extra'")), qPrintable(r.err));
}

void TestCli::noArguments() {
    const Result r = runCli({});
    QCOMPARE(r.exitCode, 2);
    QVERIFY(r.out.isEmpty());
    QVERIFY(r.err.contains(QStringLiteral("Usage: myelin")));
}

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
