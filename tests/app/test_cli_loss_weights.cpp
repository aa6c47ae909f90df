// `myelin check` and `myelin train` with class weights: both print the weights in use in class
// order; a class the data does not have, and a negative weight, are refused (exit 1) with the
// loss, the option and the class named, before anything trains.
#include "blobs_project.h"

#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_process.h"

namespace {

using Result = CliResult;

Result runCli(const QStringList& args) {
    return runCliProcess(args, 60000);
}

// The blobs project (classes a, b, c) with `loss` as its loss object.
QString blobsWithLoss(const QTemporaryDir& dir, const QByteArray& loss) {
    const QString path = myelin::test::writeBlobsProject(dir.path(), 1, 120);
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    QByteArray text = f.readAll();
    f.close();
    text.replace(R"({"kind": "CrossEntropyLoss"})", loss);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(text) != text.size())
        return {};
    return path;
}

} // namespace

class TestCliLossWeights : public QObject {
    Q_OBJECT

  private slots:
    void checkAndTrainPrintTheWeights();
    void badWeightsAreRefused();
};

void TestCliLossWeights::checkAndTrainPrintTheWeights() {
    QTemporaryDir dir;
    const QString project =
        blobsWithLoss(dir, R"({"kind": "CrossEntropyLoss", "weight": {"c": 3, "a": 0.5}})");
    QVERIFY(!project.isEmpty());
    const QString line = QStringLiteral("loss CrossEntropyLoss weight: a 0.5, b 1, c 3");
    const Result check = runCli({QStringLiteral("check"), project});
    QCOMPARE(check.exitCode, 0);
    QVERIFY2(check.out.contains(line), qPrintable(check.out));
    QVERIFY(check.out.contains(QStringLiteral("OK")));

    const Result train = runCli({QStringLiteral("train"), project, QStringLiteral("--store"),
                                 dir.filePath(QStringLiteral("runs.sqlite"))});
    QCOMPARE(train.exitCode, 0);
    QVERIFY2(train.out.contains(line), qPrintable(train.out + train.err));
    QVERIFY(train.out.contains(QStringLiteral("finished run")));

    // Without weights nothing is printed.
    QTemporaryDir plainDir;
    const QString plain = blobsWithLoss(plainDir, R"({"kind": "CrossEntropyLoss"})");
    const Result plainCheck = runCli({QStringLiteral("check"), plain});
    QCOMPARE(plainCheck.exitCode, 0);
    QVERIFY(!plainCheck.out.contains(QStringLiteral("weight:")));
}

void TestCliLossWeights::badWeightsAreRefused() {
    QTemporaryDir dir;
    const QString unknown =
        blobsWithLoss(dir, R"({"kind": "CrossEntropyLoss", "weight": {"Coat": 2}})");
    const QString expected =
        QStringLiteral("CrossEntropyLoss weight: the data has no class 'Coat' (its classes: a, "
                       "b, c)");
    const Result check = runCli({QStringLiteral("check"), unknown});
    QCOMPARE(check.exitCode, 1);
    QVERIFY2(check.err.contains(expected), qPrintable(check.err));
    const Result train = runCli({QStringLiteral("train"), unknown, QStringLiteral("--store"),
                                 dir.filePath(QStringLiteral("runs.sqlite"))});
    QCOMPARE(train.exitCode, 1);
    QVERIFY2(train.err.contains(expected), qPrintable(train.err));
    QVERIFY(!train.out.contains(QStringLiteral("epoch 1/1")));

    QTemporaryDir negDir;
    const QString negative = blobsWithLoss(negDir, R"({"kind": "NLLLoss", "weight": {"a": -1}})");
    const Result neg = runCli({QStringLiteral("check"), negative});
    QCOMPARE(neg.exitCode, 1);
    QVERIFY2(neg.err.contains(QStringLiteral("training.loss.weight: NLLLoss weight: 'a': must be a "
                                             "finite number >= 0, got -1")),
             qPrintable(neg.err));
}

QTEST_GUILESS_MAIN(TestCliLossWeights)
#include "test_cli_loss_weights.moc"
