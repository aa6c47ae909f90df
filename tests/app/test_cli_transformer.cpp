// The `myelin` CLI on the Transformer word-language example: check prints the encoder with its
// parameter count, and with Debian's word lists installed it trains a few steps (through the
// MultiheadAttention / TransformerEncoder kinds) and its checkpoint evaluates.
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_process.h"

namespace {

QString example() {
    return QStringLiteral(MYELIN_SOURCE_DIR "/resources/examples/word_language_transformer.myelin");
}

bool haveWordLists() {
    for (const char* list : {"american-english", "ngerman", "french", "italian", "spanish",
                             "portuguese", "dutch", "swedish"})
        if (!QFile::exists(QStringLiteral("/usr/share/dict/") + QLatin1String(list))) return false;
    return true;
}

} // namespace

class TestCliTransformer : public QObject {
    Q_OBJECT

  private slots:
    void checkShowsTheEncoder() {
        const CliResult r = runCliProcess({QStringLiteral("check"), example()}, 60000);
        QVERIFY2(r.exitCode == 0, qPrintable(r.out + r.err));
        QVERIFY2(r.out.contains(QStringLiteral("TransformerEncoder")), qPrintable(r.out));
        QVERIFY2(r.out.contains(QStringLiteral("67,072")), qPrintable(r.out)); // the encoder
        QVERIFY2(r.out.contains(QStringLiteral("75,784 parameters")), qPrintable(r.out));
        QVERIFY(r.out.trimmed().endsWith(QStringLiteral("OK")));
    }

    void trainsAFewStepsAndEvaluates() {
        if (!haveWordLists())
            QSKIP("Debian's word lists are not installed (wamerican wngerman wfrench witalian "
                  "wspanish wportuguese wdutch wswedish)");
        QTemporaryDir dir;
        const CliResult r =
            runCliProcess({QStringLiteral("train"), example(), QStringLiteral("--store"),
                           dir.filePath("runs.sqlite"), QStringLiteral("--checkpoint-dir"),
                           dir.filePath("ck"), QStringLiteral("--max-steps"), QStringLiteral("8")},
                          300000);
        QVERIFY2(r.exitCode == 3, qPrintable(r.out + r.err)); // stopped by --max-steps
        QVERIFY2(r.out.contains(QStringLiteral("75784 parameters")), qPrintable(r.out));
        const QString checkpoint = lastCheckpoint(r.out);
        QVERIFY2(QFile::exists(checkpoint), qPrintable(r.out));
        const CliResult ev = runCliProcess(
            {QStringLiteral("eval"), example(), QStringLiteral("--checkpoint"), checkpoint},
            300000);
        QVERIFY2(ev.exitCode == 0, qPrintable(ev.out + ev.err));
        QVERIFY2(ev.out.contains(QStringLiteral("test (4800 examples): accuracy=")),
                 qPrintable(ev.out));
    }
};

QTEST_APPLESS_MAIN(TestCliTransformer)
#include "test_cli_transformer.moc"
