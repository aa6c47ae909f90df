// The `myelin` CLI on text projects: the word-language example checks; a small text-lines
// project trains (the text encoding and the source's notes printed) and its checkpoint
// evaluates without the project file, through the vocabulary saved in it; with Debian's word
// lists installed, the word-language example trains a few steps and evaluates.
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_process.h"

namespace {

using Result = CliResult;

Result runCli(const QStringList& args, int timeoutMs = 120000) {
    return runCliProcess(args, timeoutMs);
}

QString wordLanguage() {
    return QStringLiteral(MYELIN_SOURCE_DIR "/resources/examples/word_language.myelin");
}

bool haveWordLists() {
    for (const char* list : {"american-english", "ngerman", "french", "italian", "spanish",
                             "portuguese", "dutch", "swedish"})
        if (!QFile::exists(QStringLiteral("/usr/share/dict/") + QLatin1String(list))) return false;
    return true;
}

void writeFile(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes);
}

} // namespace

class TestCliText : public QObject {
    Q_OBJECT

  private slots:
    void checkWordLanguage() {
        // check reads the project and the model, not the data: it passes without the lists.
        const Result r = runCli({QStringLiteral("check"), wordLanguage()});
        QVERIFY2(r.exitCode == 0, qPrintable(r.out + r.err));
        QVERIFY2(r.out.contains(QStringLiteral("[1, 24] int64")), qPrintable(r.out));
        QVERIFY(r.out.trimmed().endsWith(QStringLiteral("OK")));
    }

    void smallTextProjectTrainsAndEvaluates() {
        QTemporaryDir dir;
        writeFile(dir.filePath("a.txt"), "aab\naba\nbaa\naaa\nabb\nbab\naax\naay\naab\n");
        writeFile(dir.filePath("b.txt"), "ccd\ncdc\ndcc\nccc\ncdd\ndcd\nccz\nccw\n\xFF\n");
        const QString project = dir.filePath("text.myelin");
        writeFile(project, R"({"format_version": 1, "name": "letters", "model": {"nodes": [
            {"id": 1, "kind": "Input", "attrs": {"shape": [4], "dtype": "int64"}},
            {"id": 2, "kind": "Embedding", "attrs": {"num_embeddings": 16, "embedding_dim": 4}},
            {"id": 3, "kind": "Flatten"},
            {"id": 4, "kind": "Linear", "attrs": {"in_features": 16, "out_features": 2}},
            {"id": 5, "kind": "Output"}],
            "edges": [{"from": 1, "to": 2}, {"from": 2, "to": 3}, {"from": 3, "to": 4},
                      {"from": 4, "to": 5}]},
          "data": {"source": {"kind": "text-lines", "classes": "A=a.txt, B=b.txt",
                              "max_length": 4, "test_fraction": 0.25},
                   "validation_fraction": 0.25, "batch_size": 4, "num_workers": 0},
          "training": {"loss": {"kind": "CrossEntropyLoss"},
                       "optimizer": {"kind": "Adam", "lr": 0.01}, "epochs": 2, "seed": 3}})");
        const QString store = dir.filePath("runs.sqlite");
        const Result r = runCli({QStringLiteral("train"), project, QStringLiteral("--store"), store,
                                 QStringLiteral("--checkpoint-dir"), dir.filePath("ck")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.out + r.err));
        QVERIFY2(r.out.contains(QRegularExpression("text: char tokens, vocabulary of \\d+, 4 per "
                                                   "example")),
                 qPrintable(r.out));
        // a.txt repeats "aab": dropped once; b.txt's last line is not UTF-8.
        QVERIFY2(r.out.contains(QStringLiteral("b.txt line 9: not valid UTF-8")),
                 qPrintable(r.out));
        QVERIFY(r.out.contains(QStringLiteral("test: accuracy=")));
        const QString checkpoint = lastCheckpoint(r.out);
        QVERIFY2(QFile::exists(checkpoint), qPrintable(r.out));

        // Without the project file: the checkpoint's project and vocabulary.
        const Result ev = runCli({QStringLiteral("eval"), QStringLiteral("--checkpoint"),
                                  checkpoint, QStringLiteral("--top-loss"), QStringLiteral("2")});
        QVERIFY2(ev.exitCode == 0, qPrintable(ev.out + ev.err));
        QVERIFY2(ev.out.contains(QStringLiteral("test (4 examples): accuracy=")),
                 qPrintable(ev.out));
    }

    void wordLanguageTrainsAndEvaluates() {
        if (!haveWordLists())
            QSKIP("Debian's word lists are not installed (wamerican wngerman wfrench witalian "
                  "wspanish wportuguese wdutch wswedish)");
        QTemporaryDir dir;
        const Result r =
            runCli({QStringLiteral("train"), wordLanguage(), QStringLiteral("--store"),
                    dir.filePath("runs.sqlite"), QStringLiteral("--checkpoint-dir"),
                    dir.filePath("ck"), QStringLiteral("--max-steps"), QStringLiteral("30")});
        QVERIFY2(r.exitCode == 3, qPrintable(r.out + r.err)); // stopped by --max-steps
        QVERIFY2(r.out.contains(QStringLiteral("38,880 training")) ||
                     r.out.contains(QStringLiteral("38880 training")),
                 qPrintable(r.out));
        QVERIFY2(r.out.contains(QStringLiteral("read as ISO-8859-1")), qPrintable(r.out));
        const Result ev = runCli({QStringLiteral("eval"), wordLanguage(),
                                  QStringLiteral("--checkpoint"), lastCheckpoint(r.out)});
        QVERIFY2(ev.exitCode == 0, qPrintable(ev.out + ev.err));
        QVERIFY2(ev.out.contains(QStringLiteral("test (4800 examples): accuracy=")),
                 qPrintable(ev.out));
        QVERIFY(ev.out.contains(QStringLiteral("Swedish")));
    }
};

QTEST_APPLESS_MAIN(TestCliText)
#include "test_cli_text.moc"
