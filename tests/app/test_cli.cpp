// Runs the built `myelin` command-line tool and checks its output and exit codes.
#include <myelin/version.h>

#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
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

QString example(const char* name) {
    return QStringLiteral(MYELIN_SOURCE_DIR "/resources/examples/") + QLatin1String(name);
}

QByteArray readFile(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

bool writeFile(const QString& path, const QByteArray& data) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(data) == data.size();
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
    void checkValidProject();
    void checkInvalidProject();
    void checkMalformedProject();
    void formatRewritesCanonically();
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
    QVERIFY(r.out.contains(QStringLiteral("check PROJECT")));
    QVERIFY(r.out.contains(QStringLiteral("Exit codes:")));
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
    QVERIFY2(r.err.contains(QStringLiteral("unknown command '--bogus-flag'")), qPrintable(r.err));
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

void TestCli::checkValidProject() {
    const Result r = runCli({QStringLiteral("check"), example("fashion_cnn.myelin"),
                             QStringLiteral("--batch-size"), QStringLiteral("128")});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.err.isEmpty(), qPrintable(r.err));
    QVERIFY2(r.out.contains(QStringLiteral("Fashion-MNIST CNN")), qPrintable(r.out));
    QVERIFY(r.out.contains(QStringLiteral("[128, 64, 7, 7]")));
    QVERIFY(r.out.contains(QStringLiteral("421,642 parameters (421,642 trainable)")));
    QVERIFY(r.out.trimmed().endsWith(QStringLiteral("OK")));
    const Result usage = runCli({QStringLiteral("check")});
    QCOMPARE(usage.exitCode, 2);
    const Result badBatch = runCli({QStringLiteral("check"), example("fashion_cnn.myelin"),
                                    QStringLiteral("--batch-size"), QStringLiteral("zero")});
    QCOMPARE(badBatch.exitCode, 2);
}

void TestCli::checkInvalidProject() {
    // The MLP example with its first Linear expecting 100 features and a dangling Tanh.
    QByteArray text = readFile(example("fashion_mlp.myelin"));
    QVERIFY(text.contains("\"in_features\": 784"));
    text.replace("\"in_features\": 784", "\"in_features\": 100");
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("bad.myelin"));
    QVERIFY(writeFile(path, text));
    const Result r = runCli({QStringLiteral("check"), path});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.out.contains(QStringLiteral("1 error(s), 0 warning(s):")), qPrintable(r.out));
    QVERIFY2(r.out.contains(QStringLiteral(
                 "1 (Linear): expected input [N, *, 100] (in_features=100), got [1, 784]")) ||
                 r.out.contains(QStringLiteral("Linear #3: expected input [N, *, 100]")),
             qPrintable(r.out));
    QVERIFY2(r.err.contains(QStringLiteral("is invalid (1 error(s))")), qPrintable(r.err));
}

void TestCli::checkMalformedProject() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("broken.myelin"));
    QVERIFY(writeFile(path, "{\n  \"format_version\": 1,\n  \"model\": [\n"));
    const Result r = runCli({QStringLiteral("check"), path});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains(path + QStringLiteral(":4:1: invalid JSON")), qPrintable(r.err));
    const Result missing = runCli({QStringLiteral("check"), dir.filePath(QStringLiteral("no"))});
    QCOMPARE(missing.exitCode, 1);
    QVERIFY2(missing.err.contains(QStringLiteral("cannot open the file")), qPrintable(missing.err));
}

void TestCli::formatRewritesCanonically() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("p.myelin"));
    QVERIFY(writeFile(path, R"({"format_version": 1,
      "model": {"nodes": [{"id": 1, "kind": "Input", "attrs": {"shape": [3]}},
                          {"id": 2, "kind": "Output"}], "edges": [{"from": 1, "to": 2}]},
      "data": {"source": {"kind": "fashion-mnist"}},
      "training": {"loss": {"kind": "MSELoss"}, "optimizer": {"kind": "Adam"}}})"));
    QCOMPARE(runCli({QStringLiteral("format"), path}).exitCode, 0);
    const QByteArray once = readFile(path);
    QVERIFY2(once.contains("\n    \"nodes\": [\n"), once.constData());
    QVERIFY(once.contains("\"shape\": [3]"));
    QCOMPARE(runCli({QStringLiteral("format"), path}).exitCode, 0);
    QCOMPARE(readFile(path), once);
}

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
