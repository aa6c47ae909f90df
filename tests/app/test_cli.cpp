// Runs the built `myelin` command-line tool and checks its output and exit codes.
#include "blobs_project.h"
#include "stripes_project.h"

#include <myelin/io/safetensors.h>
#include <myelin/plugin/plugin.h>
#include <myelin/store/run_store.h>
#include <myelin/tensor.h>
#include <myelin/version.h>

#include <QFile>

#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_process.h"
#include <algorithm>
#include <bit>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <sys/types.h>

using myelin::test::writeBlobsProject;

namespace {

using Result = CliResult;

Result runCli(const QStringList& args, const QStringList& env = {}) {
    return runCliProcess(args, 30000, env);
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

// Counts the lines of a long-format metrics CSV whose key is `key`.
int countMetric(const QString& csvPath, const QString& key) {
    int n = 0;
    for (const QByteArray& line : readFile(csvPath).split('\n'))
        n += line.startsWith((key + ",").toUtf8());
    return n;
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
    void memoryPreflightRefusesWhatCannotFit();
    void lrFindPrintsTheCurveAndSuggestion();
    void checkInvalidProject();
    void checkMalformedProject();
    void deeplyNestedFilesAreRefused();
    void formatRewritesCanonically();
    void trainEvalAndRuns();
    void runsShowCountsFeatureMaps();
    void stopAndResume();
    void forkReproducesTheParentAndRecordsEdits();
    void refusedForksChangeNothing();
    void evalConfusionMatrixCountsThePredictions();
    void breakOnStopsBeforeTheStep();
    void interruptWithCtrlC();
    void killedRunIsMarkedInterrupted();
    void twoProcessesShareAStore();
    void pluginsListsWhatLoaded();
    void pluginsReportsRefusedPlugins();
    void pluginProjectChecksAndTrains();
};

void TestCli::version() {
    const Result r = runCli({QStringLiteral("--version")});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.err.isEmpty(), qPrintable(r.err));
    const QStringList lines = r.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QVERIFY(lines.size() >= 3); // then the CUDA backend and devices (test_cli_device)
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
    QVERIFY(r.out.contains(QStringLiteral("train PROJECT [options]")));
    QVERIFY(r.out.contains(QStringLiteral("runs export-csv RUN FILE")));
    // A command's options are in its own help (test_cli_options), which the top help points to.
    QVERIFY(r.out.contains(QStringLiteral("myelin COMMAND --help")));
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
    // What it would train with: every option of the optimizer, as its kind describes them.
    QVERIFY2(r.out.contains(QStringLiteral("optimizer  Adam: lr 0.001, beta1 0.9, beta2 0.999, "
                                           "eps 1e-08, weight_decay 0, amsgrad false")),
             qPrintable(r.out));
    QVERIFY(r.out.contains(QStringLiteral("schedule   none")));
    // The memory pre-flight's parts and what is free.
    for (const char* part : {"memory to train at batch size 128 on cpu:", "optimizer state (Adam",
                             "activations saved for backward", "free on this machine",
                             "the largest batch size that fits"})
        QVERIFY2(r.out.contains(QLatin1String(part)), part);
    const Result usage = runCli({QStringLiteral("check")});
    QCOMPARE(usage.exitCode, 2);
    const Result badBatch = runCli({QStringLiteral("check"), example("fashion_cnn.myelin"),
                                    QStringLiteral("--batch-size"), QStringLiteral("zero")});
    QCOMPARE(badBatch.exitCode, 2);
}

// fashion_mlp with a 1.3-billion-wide hidden layer (1.2 trillion parameters, 19 TB with Adam):
// `check` and `train` refuse it in moments, naming the need and the machine's free memory, and
// train creates no run (it was OOM-killed minutes later, leaving an "interrupted" run).
void TestCli::memoryPreflightRefusesWhatCannotFit() {
    QByteArray text = readFile(example("fashion_mlp.myelin"));
    QVERIFY(text.contains("\"out_features\": 256") && text.contains("\"in_features\": 256"));
    text.replace("\"out_features\": 256", "\"out_features\": 1300000000");
    text.replace("\"in_features\": 256", "\"in_features\": 1300000000");
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("huge.myelin"));
    QVERIFY(writeFile(path, text));
    QElapsedTimer clock;
    clock.start();
    const Result check = runCli({QStringLiteral("check"), path});
    QCOMPARE(check.exitCode, 1);
    for (const char* part : {"needs about", "TB", "this machine has", "more than there is",
                             "no batch size fits", "the largest layer, '1'"})
        QVERIFY2(check.err.contains(QLatin1String(part)), qPrintable(check.err));
    QVERIFY2(check.out.contains(QStringLiteral("memory to train at batch size 128 on cpu:")),
             qPrintable(check.out));
    const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
    const Result train = runCli({QStringLiteral("train"), path, QStringLiteral("--store"), store});
    QCOMPARE(train.exitCode, 1);
    QVERIFY2(train.err.contains(QStringLiteral("no batch size fits")) &&
                 train.err.contains(QStringLiteral("--ignore-memory-check")),
             qPrintable(train.err));
    QVERIFY(!QFileInfo::exists(store)); // refused before the run was recorded
    qInfo("check and train refused in %lld ms together", (long long)clock.elapsed());
}

// `myelin lr-find`: the curve and the suggestions, nothing written beside the project.
void TestCli::lrFindPrintsTheCurveAndSuggestion() {
    QTemporaryDir dir;
    const QString project = dir.filePath(QStringLiteral("tabular.myelin"));
    QByteArray text = readFile(example("tabular_regression.myelin"));
    QVERIFY(!text.isEmpty());
    QVERIFY(QFile::copy(example("tabular_regression.myelin"), project));
    QTemporaryDir storeDir;
    const QString store = storeDir.filePath(QStringLiteral("runs.sqlite"));
    QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("data")));
    QVERIFY(QFile::copy(example("data/tabular_regression.csv"),
                        dir.filePath(QStringLiteral("data/tabular_regression.csv"))));
    const Result r =
        runCli({QStringLiteral("lr-find"), project, QStringLiteral("--steps"), QStringLiteral("60"),
                QStringLiteral("--start-lr"), QStringLiteral("1e-6"), QStringLiteral("--end-lr"),
                QStringLiteral("1"), QStringLiteral("--store"), store});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err + r.out));
    for (const char* part : {"learning-rate range test of", "smoothed", "suggested learning rate:",
                             "a tenth of where the loss is lowest", "the project's learning rate:"})
        QVERIFY2(r.out.contains(QLatin1String(part)), qPrintable(r.out));
    QCOMPARE(readFile(project), text);
    QCOMPARE(QDir(dir.path()).entryList(QDir::NoDotAndDotDot | QDir::AllEntries).size(), 2);
    // Recorded as a run of its own kind: left out of `runs list` unless --all.
    QVERIFY2(r.out.contains(QStringLiteral("recorded as run 1")), qPrintable(r.out));
    const Result list =
        runCli({QStringLiteral("runs"), QStringLiteral("list"), QStringLiteral("--store"), store});
    QCOMPARE(list.exitCode, 0);
    QVERIFY2(!list.out.contains(QStringLiteral("LR range test")) &&
                 list.out.contains(QStringLiteral("1 learning-rate range test(s) not listed")),
             qPrintable(list.out));
    const Result all = runCli({QStringLiteral("runs"), QStringLiteral("list"),
                               QStringLiteral("--store"), store, QStringLiteral("--all")});
    QVERIFY2(all.out.contains(QStringLiteral("Tabular regression (LR")), qPrintable(all.out));
    const Result usage = runCli({QStringLiteral("lr-find"), project, QStringLiteral("--end-lr"),
                                 QStringLiteral("-1"), QStringLiteral("--store"), store});
    QCOMPARE(usage.exitCode, 2);
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

// Issue 20: a safetensors header nesting arrays 10^6 deep (2 MB, far under the 100 MB header
// limit) overflowed the stack of a recursive JSON parse. Every path that reads a checkpoint
// refuses it with exit code 1 and a message naming the file; a project file too.
void TestCli::deeplyNestedFilesAreRefused() {
    QTemporaryDir dir;
    const QString project = writeBlobsProject(dir.path(), 1);
    const int depth = 1000000;
    QByteArray header = "{\"w\":{\"dtype\":\"F32\",\"shape\":" + QByteArray(depth, '[') +
                        QByteArray(depth, ']') + ",\"data_offsets\":[0,4]}}";
    header.append(QByteArray(int(-header.size() & 7), ' '));
    QByteArray file(8, '\0');
    for (int i = 0; i < 8; ++i)
        file[i] = char((quint64(header.size()) >> (8 * i)) & 0xff);
    const QString deep = dir.filePath(QStringLiteral("deep.safetensors"));
    QVERIFY(writeFile(deep, file + header + QByteArray(4, '\0')));
    const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
    const QList<QStringList> commands = {
        {QStringLiteral("eval"), project, QStringLiteral("--checkpoint"), deep},
        {QStringLiteral("train"), project, QStringLiteral("--store"), store,
         QStringLiteral("--init-weights"), deep},
        {QStringLiteral("train"), project, QStringLiteral("--store"), store,
         QStringLiteral("--resume"), deep}};
    for (const QStringList& args : commands) {
        const Result r = runCli(args);
        QVERIFY2(r.exitCode == 1, qPrintable(args.join(' ') + ": " + r.err));
        QVERIFY2(r.err.contains(deep) && r.err.contains(QStringLiteral("1000002 levels deep")),
                 qPrintable(args.join(' ') + ": " + r.err));
    }
    const QString deepProject = dir.filePath(QStringLiteral("deep.myelin"));
    QVERIFY(writeFile(deepProject, "{\"format_version\": 1, \"ui\": " + QByteArray(depth, '[') +
                                       QByteArray(depth, ']') + "}"));
    const Result check = runCli({QStringLiteral("check"), deepProject});
    QCOMPARE(check.exitCode, 1);
    QVERIFY2(check.err.contains(deepProject + QStringLiteral(": the JSON nests arrays and objects "
                                                             "1000001 levels deep")),
             qPrintable(check.err));
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

void TestCli::trainEvalAndRuns() {
    QTemporaryDir dir;
    const QString project = writeBlobsProject(dir.path(), 3);
    const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
    const Result r = runCli({QStringLiteral("train"), project, QStringLiteral("--store"), store});
    QVERIFY2(r.exitCode == 0, qPrintable(r.out + r.err));
    // Not a terminal: plain lines, per epoch metrics, checkpoints, test metrics.
    QVERIFY2(r.out.contains(QStringLiteral("run 1 \"blobs\"")), qPrintable(r.out));
    QVERIFY(r.out.contains(QStringLiteral("epoch 3/3 step 42:")));
    QVERIFY(r.out.contains(QStringLiteral("val_accuracy=")));
    QVERIFY(r.out.contains(QStringLiteral("checkpoint (best): ")));
    QVERIFY(r.out.contains(QStringLiteral("test: accuracy=")));
    QVERIFY(r.out.contains(QStringLiteral("finished run 1 after 42 steps")));
    QVERIFY(!r.out.contains(QLatin1Char('\r')));

    const Result list =
        runCli({QStringLiteral("runs"), QStringLiteral("list"), QStringLiteral("--store"), store});
    QCOMPARE(list.exitCode, 0);
    QVERIFY2(list.out.contains(QStringLiteral("blobs")) &&
                 list.out.contains(QStringLiteral("finished")),
             qPrintable(list.out));
    QVERIFY(list.out.contains(QStringLiteral("val_accuracy=")));
    const Result show = runCli({QStringLiteral("runs"), QStringLiteral("show"), QStringLiteral("1"),
                                QStringLiteral("--store"), store});
    QCOMPARE(show.exitCode, 0);
    QVERIFY2(show.out.contains(QStringLiteral("optimizer = Adam")), qPrintable(show.out));
    QVERIFY(show.out.contains(QStringLiteral("test_accuracy")));
    QVERIFY(show.out.contains(QStringLiteral("checkpoint step 42:")));
    QVERIFY(!show.out.contains(QStringLiteral("feature maps"))); // an MLP has none
    QVERIFY2(show.out.contains(QStringLiteral("project: ")), qPrintable(show.out));
    {
        // Tags and a note set by the studio's runs browser are shown.
        auto runs = myelin::store::RunStore::open(store.toStdString());
        runs.set_run_tags(1, {"baseline", "blobs"});
        runs.set_run_note(1, "first try");
    }
    const Result tagged = runCli({QStringLiteral("runs"), QStringLiteral("show"),
                                  QStringLiteral("1"), QStringLiteral("--store"), store});
    QVERIFY2(tagged.out.contains(QStringLiteral("tags: baseline, blobs\nnote: first try")),
             qPrintable(tagged.out));
    // Per layer, in model order, at the newest step and at a chosen one.
    const Result layers = runCli({QStringLiteral("runs"), QStringLiteral("layers"),
                                  QStringLiteral("1"), QStringLiteral("--store"), store});
    QCOMPARE(layers.exitCode, 0);
    QVERIFY2(layers.out.contains(QStringLiteral("norms: step 42; activations: none recorded")),
             qPrintable(layers.out));
    const qsizetype fc1 = layers.out.indexOf(QStringLiteral("\nfc1 (Linear)"));
    QVERIFY2(fc1 > 0 && fc1 < layers.out.indexOf(QStringLiteral("\nfc2 (Linear)")),
             qPrintable(layers.out));
    const Result atStep =
        runCli({QStringLiteral("runs"), QStringLiteral("layers"), QStringLiteral("1"),
                QStringLiteral("--step"), QStringLiteral("7"), QStringLiteral("--store"), store});
    QVERIFY2(atStep.out.contains(QStringLiteral("norms: step 7;")), qPrintable(atStep.out));
    QCOMPARE(
        runCli({QStringLiteral("runs"), QStringLiteral("layers"), QStringLiteral("1"),
                QStringLiteral("--step"), QStringLiteral("-3"), QStringLiteral("--store"), store})
            .exitCode,
        2);
    const QString csv = dir.filePath(QStringLiteral("m.csv"));
    QCOMPARE(runCli({QStringLiteral("runs"), QStringLiteral("export-csv"), QStringLiteral("1"), csv,
                     QStringLiteral("--store"), store})
                 .exitCode,
             0);
    QCOMPARE(countMetric(csv, QStringLiteral("loss")), 42);
    QCOMPARE(countMetric(csv, QStringLiteral("val_loss")), 3);

    // eval a checkpoint, with per-example outputs.
    QString checkpoint;
    for (const QString& line : show.out.split(QLatin1Char('\n')))
        if (line.contains(QStringLiteral("checkpoint step 42:")) &&
            line.contains(QStringLiteral("epoch-")))
            checkpoint = line.section(QStringLiteral(": "), 1).trimmed();
    QVERIFY2(QFile::exists(checkpoint), qPrintable(show.out));
    const QString preds = dir.filePath(QStringLiteral("p.csv"));
    const Result ev = runCli({QStringLiteral("eval"), project, QStringLiteral("--checkpoint"),
                              checkpoint, QStringLiteral("--predictions"), preds});
    QVERIFY2(ev.exitCode == 0, qPrintable(ev.err));
    QVERIFY2(ev.out.contains(QStringLiteral("test (60 examples): accuracy=")), qPrintable(ev.out));
    QVERIFY(ev.out.contains(QStringLiteral("confusion matrix")));
    QCOMPARE(readFile(preds).count('\n'), 61);

    const Result del = runCli({QStringLiteral("runs"), QStringLiteral("delete"),
                               QStringLiteral("1"), QStringLiteral("--store"), store});
    QCOMPARE(del.exitCode, 0);
    QVERIFY(!QFile::exists(checkpoint));
    QVERIFY(
        runCli({QStringLiteral("runs"), QStringLiteral("list"), QStringLiteral("--store"), store})
            .out.contains(QStringLiteral("(no runs)")));
    // Usage errors.
    QCOMPARE(runCli({QStringLiteral("train")}).exitCode, 2);
    QCOMPARE(
        runCli({QStringLiteral("train"), project, QStringLiteral("--epochs"), QStringLiteral("0")})
            .exitCode,
        2);
    QCOMPARE(runCli({QStringLiteral("runs"), QStringLiteral("show"), QStringLiteral("x"),
                     QStringLiteral("--store"), store})
                 .exitCode,
             2);
}

void TestCli::runsShowCountsFeatureMaps() {
    QTemporaryDir dir;
    const QString project =
        QString::fromStdString(myelin::test::writeStripesProject(dir.path().toStdString(), 2, 5));
    QVERIFY(!project.isEmpty());
    const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
    const Result r = runCli({QStringLiteral("train"), project, QStringLiteral("--store"), store});
    QVERIFY2(r.exitCode == 0, qPrintable(r.out + r.err));
    const Result show = runCli({QStringLiteral("runs"), QStringLiteral("show"), QStringLiteral("1"),
                                QStringLiteral("--store"), store});
    QCOMPARE(show.exitCode, 0);
    QVERIFY2(show.out.contains(QStringLiteral(
                 "feature maps: 4 captures, steps 5 to 20, layers conv, act, pool\n")),
             qPrintable(show.out));
}

void TestCli::stopAndResume() {
    QTemporaryDir dir;
    const QString project = writeBlobsProject(dir.path(), 2);
    const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
    const Result a = runCli({QStringLiteral("train"), project, QStringLiteral("--store"), store,
                             QStringLiteral("--max-steps"), QStringLiteral("13")});
    QCOMPARE(a.exitCode, 3);
    QVERIFY2(a.out.contains(QStringLiteral("stopped run 1 at step 13; resume with --resume 1")),
             qPrintable(a.out));
    const Result b = runCli({QStringLiteral("train"), project, QStringLiteral("--store"), store,
                             QStringLiteral("--resume"), QStringLiteral("1")});
    QVERIFY2(b.exitCode == 0, qPrintable(b.out + b.err));
    QVERIFY(b.out.contains(QStringLiteral("finished run 2 after 28 steps")));
    const Result show = runCli({QStringLiteral("runs"), QStringLiteral("show"), QStringLiteral("2"),
                                QStringLiteral("--store"), store});
    QVERIFY2(show.out.contains(QStringLiteral("resumed from run 1")), qPrintable(show.out));
    const Result list =
        runCli({QStringLiteral("runs"), QStringLiteral("list"), QStringLiteral("--store"), store});
    QVERIFY(list.out.contains(QStringLiteral("stopped")));
    QVERIFY(runCli({QStringLiteral("train"), project, QStringLiteral("--store"), store,
                    QStringLiteral("--resume"), QStringLiteral("/nonexistent.safetensors")})
                .err.contains(QStringLiteral("no checkpoint file")));
}

// Issue 14. A 4-epoch run (56 steps) forked at step 42 without edits trains its last epoch again
// with the very same losses; forked with --lr / --epochs it records the changes and its parent;
// the fork, stopped and resumed, keeps its lineage (and `runs list` shows it).
void TestCli::forkReproducesTheParentAndRecordsEdits() {
    QTemporaryDir dir;
    const QString project = writeBlobsProject(dir.path(), 4);
    const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
    const auto train = [&](QStringList extra) {
        return runCli(
            QStringList{QStringLiteral("train"), project, QStringLiteral("--store"), store} +
            extra);
    };
    QCOMPARE(train({}).exitCode, 0);
    const Result same = train({QStringLiteral("--fork"), QStringLiteral("1@42")});
    QVERIFY2(same.exitCode == 0, qPrintable(same.out + same.err));
    QVERIFY2(same.out.contains(QStringLiteral("run 2 \"blobs\"")) &&
                 same.out.contains(QStringLiteral("fork of run 1 at step 42 (")) &&
                 same.out.contains(QStringLiteral("epoch-0003.safetensors)\n  no changes\n")),
             qPrintable(same.out));
    {
        auto s = myelin::store::RunStore::open(store.toStdString());
        const auto parent = s.metric_series(1, "loss");
        const auto fork = s.metric_series(2, "loss");
        QCOMPARE(parent.size(), size_t(56));
        QCOMPARE(fork.size(), size_t(14));
        for (size_t i = 0; i < fork.size(); ++i) {
            QCOMPARE(fork[i].step, parent[42 + i].step);
            // QCOMPARE on doubles is fuzzy: compare the bits.
            QCOMPARE(std::bit_cast<quint64>(fork[i].value),
                     std::bit_cast<quint64>(parent[42 + i].value));
        }
    }

    const Result edited =
        train({QStringLiteral("--fork"), QStringLiteral("1@42"), QStringLiteral("--lr"),
               QStringLiteral("0.001"), QStringLiteral("--epochs"), QStringLiteral("5"),
               QStringLiteral("--max-steps"), QStringLiteral("60")});
    QVERIFY2(edited.exitCode == 3, qPrintable(edited.out + edited.err));
    QVERIFY2(edited.out.contains(QStringLiteral("  training.epochs: 4 -> 5\n")) &&
                 edited.out.contains(QStringLiteral("  training.optimizer.lr: 0.01 -> 0.001\n")),
             qPrintable(edited.out));
    QVERIFY(edited.out.contains(QStringLiteral("fork from step 42: optimizer lr 0.01 -> 0.001")));
    QVERIFY(edited.out.contains(QStringLiteral("stopped run 3 at step 60")));
    const auto show3 = [&] {
        return runCli({QStringLiteral("runs"), QStringLiteral("show"), QStringLiteral("3"),
                       QStringLiteral("--store"), store})
            .out;
    };
    const QString shown = show3();
    QVERIFY2(
        shown.contains(QStringLiteral("forked from run 1@42 (")) &&
            shown.contains(QStringLiteral("  fork.diff.training.optimizer.lr = 0.01 -> 0.001\n")) &&
            shown.contains(QStringLiteral("  fork.diff.training.epochs = 4 -> 5\n")) &&
            shown.contains(QStringLiteral("  fork.from = 1@42\n")),
        qPrintable(shown));

    // A resume goes on with the fork's learning rate: --lr is for forks.
    QCOMPARE(train({QStringLiteral("--resume"), QStringLiteral("3"), QStringLiteral("--lr"),
                    QStringLiteral("0.1")})
                 .exitCode,
             2);
    const Result resumed = train({QStringLiteral("--resume"), QStringLiteral("3"),
                                  QStringLiteral("--epochs"), QStringLiteral("5")});
    QVERIFY2(resumed.exitCode == 0, qPrintable(resumed.out + resumed.err));
    QVERIFY(resumed.out.contains(QStringLiteral("finished run 4 after 70 steps")));
    QCOMPARE(show3(), shown); // the fork's record, lineage included, is as it was
    {
        auto s = myelin::store::RunStore::open(store.toStdString());
        QCOMPARE(s.run(4).parent_run, std::optional<int64_t>(3));
        QCOMPARE(s.run(3).parent_run, std::optional<int64_t>(1));
        const auto lr = s.metric_series(4, "lr");
        QVERIFY(!lr.empty());
        QCOMPARE(lr.back().value, 0.001);
    }
    const Result list =
        runCli({QStringLiteral("runs"), QStringLiteral("list"), QStringLiteral("--store"), store});
    QCOMPARE(list.exitCode, 0);
    const QStringList lines = list.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QVERIFY2(lines.size() == 5 && lines[0].contains(QStringLiteral("parent")),
             qPrintable(list.out));
    const QRegularExpression row(QStringLiteral("^\\s+(\\d+)\\s+blobs\\s+\\w+\\s+(\\S+)\\s"));
    QStringList parents;
    for (int i = 1; i < lines.size(); ++i) {
        const auto m = row.match(lines[i]);
        QVERIFY2(m.hasMatch(), qPrintable(lines[i]));
        parents << m.captured(1) + QLatin1Char(':') + m.captured(2);
    }
    QCOMPARE(parents, (QStringList{QStringLiteral("4:#3@60"), QStringLiteral("3:#1@42"),
                                   QStringLiteral("2:#1@42"), QStringLiteral("1:-")}));
}

// Each refusal exits 1 with a message saying what is wrong and leaves the runs table as it was.
void TestCli::refusedForksChangeNothing() {
    QTemporaryDir dir;
    const QString project = writeBlobsProject(dir.path(), 3);
    const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
    QCOMPARE(runCli({QStringLiteral("train"), project, QStringLiteral("--store"), store}).exitCode,
             0);
    // A run of a process that is alive (this test), as `myelin train` records one.
    int64_t live = 0;
    {
        auto s = myelin::store::RunStore::open(store.toStdString());
        live = s.create_run({.name = "live"});
    }
    // The same project with 8 hidden units instead of 16, in another folder.
    QTemporaryDir otherDir;
    QByteArray narrowText = readFile(writeBlobsProject(otherDir.path(), 3));
    narrowText.replace("\"out_features\": 16", "\"out_features\": 8");
    narrowText.replace("\"in_features\": 16", "\"in_features\": 8");
    const QString narrow = otherDir.filePath(QStringLiteral("narrow.myelin"));
    QVERIFY(writeFile(narrow, narrowText));

    const auto list = [&] {
        return runCli({QStringLiteral("runs"), QStringLiteral("list"), QStringLiteral("--store"),
                       store})
            .out;
    };
    const QString before = list();
    QVERIFY2(before.contains(QStringLiteral("running")), qPrintable(before));
    const auto fork = [&](const QString& projectFile, const QString& source) {
        return runCli({QStringLiteral("train"), projectFile, QStringLiteral("--store"), store,
                       QStringLiteral("--fork"), source});
    };
    const auto refused = [&](const Result& r, const QString& message) {
        QVERIFY2(r.exitCode == 1 && r.err.contains(message), qPrintable(r.out + r.err));
        QVERIFY2(!r.out.contains(QStringLiteral("run 3")), qPrintable(r.out));
        QCOMPARE(list(), before);
    };
    refused(fork(project, QStringLiteral("9")),
            QStringLiteral("myelin: error: --fork: run store '") + store +
                QStringLiteral("': run 9 does not exist"));
    refused(fork(project, QString::number(live)),
            QStringLiteral("--fork: run 2 is still running (process %1 on ")
                .arg(QCoreApplication::applicationPid()));
    refused(fork(narrow, QStringLiteral("1@28")),
            QStringLiteral("--fork: run 1's checkpoint at step 28 (") +
                dir.filePath(QStringLiteral("runs/1/checkpoints/epoch-0002.safetensors")) +
                QStringLiteral(") does not fit the project's model:\n  shape: fc1.weight: "
                               "expected [8, 4], got [16, 4]\n"));
    refused(fork(project, QStringLiteral("1@20")),
            QStringLiteral("--fork: run 1 wrote no checkpoint at step 20; it has checkpoints at "
                           "steps 28, 42"));
    std::filesystem::remove_all(dir.filePath(QStringLiteral("runs/1/checkpoints")).toStdString());
    refused(fork(project, QStringLiteral("1")),
            QStringLiteral("--fork: run 1's checkpoint files are gone:\n  ") +
                dir.filePath(QStringLiteral("runs/1/checkpoints/")));
    refused(fork(project, QStringLiteral("1@42")),
            QStringLiteral(".safetensors (step 42): deleted\nnone of its checkpoint files is "
                           "left as it was written"));
    // Usage errors.
    QCOMPARE(fork(project, QStringLiteral("1@x")).exitCode, 2);
    QCOMPARE(runCli({QStringLiteral("train"), project, QStringLiteral("--store"), store,
                     QStringLiteral("--fork"), QStringLiteral("1"), QStringLiteral("--resume"),
                     QStringLiteral("1")})
                 .exitCode,
             2);
    QCOMPARE(
        runCli({QStringLiteral("train"), project, QStringLiteral("--lr"), QStringLiteral("-1")})
            .exitCode,
        2);
    myelin::store::RunStore::open(store.toStdString())
        .finish_run(live, myelin::store::RunStatus::Stopped);
}

// The confusion matrix `eval` prints (with class names, and per-class scores) counts what the
// model's outputs in --predictions say: an early checkpoint, so some examples are wrong.
void TestCli::evalConfusionMatrixCountsThePredictions() {
    QTemporaryDir dir;
    const QString project = writeBlobsProject(dir.path(), 3);
    const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
    const QString checkpoints = dir.filePath(QStringLiteral("ck"));
    QCOMPARE(runCli({QStringLiteral("train"), project, QStringLiteral("--store"), store,
                     QStringLiteral("--checkpoint-dir"), checkpoints, QStringLiteral("--max-steps"),
                     QStringLiteral("1")})
                 .exitCode,
             3);
    const QString preds = dir.filePath(QStringLiteral("p.csv"));
    const Result ev = runCli({QStringLiteral("eval"), project, QStringLiteral("--checkpoint"),
                              checkpoints + QStringLiteral("/step-0000001.safetensors"),
                              QStringLiteral("--predictions"), preds});
    QVERIFY2(ev.exitCode == 0, qPrintable(ev.out + ev.err));

    // Counted here: rows are true classes, columns the argmax (the first on ties).
    int counted[3][3] = {};
    const QList<QByteArray> rows = readFile(preds).split('\n');
    QCOMPARE(rows[0], QByteArray("target,output0,output1,output2"));
    int examples = 0;
    for (int i = 1; i < rows.size(); ++i) {
        if (rows[i].isEmpty()) continue;
        const QList<QByteArray> f = rows[i].split(',');
        QCOMPARE(f.size(), 4);
        int best = 0;
        for (int c = 1; c < 3; ++c)
            if (f[1 + c].toDouble() > f[1 + best].toDouble()) best = c;
        ++counted[f[0].toInt()][best];
        ++examples;
    }
    QCOMPARE(examples, 60);

    const QStringList lines = ev.out.split(QLatin1Char('\n'));
    const qsizetype at =
        lines.indexOf(QStringLiteral("confusion matrix (rows: true class, columns: predicted):"));
    QVERIFY2(at > 0 && lines.size() > at + 9, qPrintable(ev.out));
    QCOMPARE(lines[at + 1].split(QLatin1Char(' '), Qt::SkipEmptyParts),
             (QStringList{QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c")}));
    int wrong = 0;
    for (int r = 0; r < 3; ++r) {
        const QStringList f = lines[at + 2 + r].split(QLatin1Char(' '), Qt::SkipEmptyParts);
        QCOMPARE(f.size(), 4);
        QCOMPARE(f[0], QString(QLatin1Char("abc"[r])));
        for (int c = 0; c < 3; ++c) {
            QCOMPARE(f[1 + c].toInt(), counted[r][c]);
            if (r != c) wrong += counted[r][c];
        }
    }
    QVERIFY2(wrong > 0, qPrintable(ev.out)); // the comparison covered more than a diagonal
    // Per class: precision, recall, F1 and support from the same counts.
    QCOMPARE(lines[at + 5].trimmed(), QStringLiteral("per class:"));
    for (int c = 0; c < 3; ++c) {
        int predicted = 0, actual = 0;
        for (int k = 0; k < 3; ++k) {
            predicted += counted[k][c];
            actual += counted[c][k];
        }
        const double p = predicted ? double(counted[c][c]) / predicted : 0.0;
        const double r = actual ? double(counted[c][c]) / actual : 0.0;
        const double f1 = p + r > 0 ? 2 * p * r / (p + r) : 0.0;
        const QStringList f = lines[at + 7 + c].split(QLatin1Char(' '), Qt::SkipEmptyParts);
        QCOMPARE(f, (QStringList{QString(QLatin1Char("abc"[c])), QString::number(p, 'f', 4),
                                 QString::number(r, 'f', 4), QString::number(f1, 'f', 4),
                                 QString::number(actual)}));
    }
    // --top-loss K: the K examples whose cross-entropy, from the outputs above, is largest.
    const Result top = runCli({QStringLiteral("eval"), project, QStringLiteral("--checkpoint"),
                               checkpoints + QStringLiteral("/step-0000001.safetensors"),
                               QStringLiteral("--top-loss"), QStringLiteral("3")});
    QVERIFY2(top.exitCode == 0, qPrintable(top.out + top.err));
    QList<std::pair<double, int>> losses; // (loss, example)
    for (int i = 1; i < rows.size(); ++i) {
        if (rows[i].isEmpty()) continue;
        const QList<QByteArray> f = rows[i].split(',');
        double sum = 0;
        for (int c = 0; c < 3; ++c)
            sum += std::exp(f[1 + c].toDouble());
        losses.append({std::log(sum) - f[1 + f[0].toInt()].toDouble(), i - 1});
    }
    std::stable_sort(losses.begin(), losses.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    const QStringList topLines = top.out.split(QLatin1Char('\n'));
    const qsizetype first = topLines.indexOf(QStringLiteral("top 3 losses (example: loss):"));
    QVERIFY2(first > 0 && topLines.size() > first + 3, qPrintable(top.out));
    for (int k = 0; k < 3; ++k) {
        const QStringList f = topLines[first + 1 + k].split(QLatin1Char(' '), Qt::SkipEmptyParts);
        QCOMPARE(f[0], QString::number(losses[k].second) + QLatin1Char(':'));
        QVERIFY2(std::abs(f[1].toDouble() - losses[k].first) < 1e-3, qPrintable(top.out));
    }
}

void TestCli::breakOnStopsBeforeTheStep() {
    QTemporaryDir dir;
    const QString project = writeBlobsProject(dir.path(), 2);
    const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
    const auto train = [&](QStringList extra) {
        return runCli(
            QStringList{QStringLiteral("train"), project, QStringLiteral("--store"), store} +
            extra);
    };
    // The step that trips it is not applied: the checkpoint is of the position before it.
    const Result a = train({QStringLiteral("--break-on"), QStringLiteral("loss-above=0@5")});
    QCOMPARE(a.exitCode, 3);
    QVERIFY2(a.out.contains(QStringLiteral("breakpoint loss-above=0@5 at step 5: the loss ")),
             qPrintable(a.out));
    QVERIFY(a.out.contains(QStringLiteral("stopped run 1 at step 4; resume with --resume 1")));
    const Result show = runCli({QStringLiteral("runs"), QStringLiteral("show"), QStringLiteral("1"),
                                QStringLiteral("--store"), store});
    QVERIFY2(show.out.contains(QStringLiteral("events:\n  step 5 breakpoint: loss-above=0@5: ")),
             qPrintable(show.out));
    // Resumed, it runs step 5 again and ends exactly where an uninterrupted run ends.
    const Result resumed = train({QStringLiteral("--resume"), QStringLiteral("1")});
    QVERIFY2(resumed.exitCode == 0, qPrintable(resumed.out + resumed.err));
    const Result whole = train({});
    QCOMPARE(whole.exitCode, 0);
    const auto testLine = [](const QString& out) {
        for (const QString& line : out.split(QLatin1Char('\n')))
            if (line.startsWith(QStringLiteral("test:"))) return line;
        return QString();
    };
    QVERIFY(!testLine(whole.out).isEmpty());
    QCOMPARE(testLine(resumed.out), testLine(whole.out));

    // A learning rate that overflows the weights: the first non-finite value stops the run.
    QTemporaryDir wildDir;
    const QString wild =
        writeBlobsProject(wildDir.path(), 2, 300, "{\"kind\": \"SGD\", \"lr\": 1e38}");
    const Result nan = runCli({QStringLiteral("train"), wild, QStringLiteral("--store"), store,
                               QStringLiteral("--break-on"), QStringLiteral("nonfinite")});
    QCOMPARE(nan.exitCode, 3);
    QVERIFY2(nan.out.contains(QStringLiteral("breakpoint nonfinite at step ")),
             qPrintable(nan.out));
    QVERIFY2(nan.out.contains(QStringLiteral(" in fc")), qPrintable(nan.out));
    QVERIFY(!nan.err.contains(QStringLiteral("training failed")));

    // A layer forced dead: fc1's bias at -100 leaves the ReLU after it (module "1") all zeros.
    const QString init = dir.filePath(QStringLiteral("dead.safetensors"));
    myelin::io::save_safetensors(init.toStdString(), {{"fc1.bias", myelin::full({16}, -100.0)}});
    const Result dead = train({QStringLiteral("--break-on"), QStringLiteral("dead=0.9"),
                               QStringLiteral("--init-weights"), init});
    QCOMPARE(dead.exitCode, 3);
    QVERIFY2(dead.out.contains(QStringLiteral("breakpoint dead=0.9 at step 1 in 1: 1's output is "
                                              "100% zeros")),
             qPrintable(dead.out));

    // Conditions that do not read are a usage error.
    for (const char* bad :
         {"dead=2", "grad-spike=1", "loss-above=x", "often", "nonfinite,,dead=0.5"})
        QCOMPARE(train({QStringLiteral("--break-on"), QLatin1String(bad)}).exitCode, 2);
}

void TestCli::interruptWithCtrlC() {
    QTemporaryDir dir;
    const QString project = writeBlobsProject(dir.path(), 100000);
    const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
    QProcess p;
    p.start(QStringLiteral(MYELIN_CLI_PATH),
            {QStringLiteral("train"), project, QStringLiteral("--store"), store});
    QVERIFY(p.waitForStarted());
    // Wait for training to be under way (the first epoch line), then Ctrl-C.
    QByteArray out;
    for (int i = 0; i < 300 && !out.contains("epoch 1/"); ++i) {
        p.waitForReadyRead(100);
        out += p.readAllStandardOutput();
    }
    QVERIFY2(out.contains("epoch 1/"), out.constData());
    ::kill(pid_t(p.processId()), SIGINT);
    QVERIFY(p.waitForFinished(30000));
    out += p.readAllStandardOutput();
    QCOMPARE(p.exitCode(), 3);
    QVERIFY2(out.contains("stopped run 1"), out.constData());
    QVERIFY(QString::fromUtf8(p.readAllStandardError())
                .contains(QStringLiteral("stopping after this step")));
    const Result show = runCli({QStringLiteral("runs"), QStringLiteral("show"), QStringLiteral("1"),
                                QStringLiteral("--store"), store});
    QVERIFY2(show.out.contains(QStringLiteral(": stopped")), qPrintable(show.out));
    // The stop wrote a checkpoint at the step it stopped on: step-N.safetensors mid-epoch, or
    // the epoch's checkpoint when the stop landed on an epoch's last step.
    const QRegularExpressionMatch stopped =
        QRegularExpression(QStringLiteral("stopped run 1 at step (\\d+)"))
            .match(QString::fromUtf8(out));
    QVERIFY2(stopped.hasMatch(), out.constData());
    QVERIFY2(show.out.contains(QStringLiteral(" step %1: ").arg(stopped.captured(1))),
             qPrintable(show.out));
}

void TestCli::killedRunIsMarkedInterrupted() {
    QTemporaryDir dir;
    const QString project = writeBlobsProject(dir.path(), 100000);
    const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
    const QString checkpoints = dir.filePath(QStringLiteral("ck"));
    QProcess p;
    p.start(QStringLiteral(MYELIN_CLI_PATH),
            {QStringLiteral("train"), project, QStringLiteral("--store"), store,
             QStringLiteral("--checkpoint-dir"), checkpoints});
    QVERIFY(p.waitForStarted());
    QByteArray out;
    for (int i = 0; i < 300 && out.count("checkpoint: ") < 2; ++i) {
        p.waitForReadyRead(100);
        out += p.readAllStandardOutput();
    }
    QVERIFY2(out.count("checkpoint: ") >= 2, out.constData());
    ::kill(pid_t(p.processId()), SIGKILL);
    QVERIFY(p.waitForFinished(10000));
    // The store opens, and the dead run is marked interrupted (not left "running").
    const Result list =
        runCli({QStringLiteral("runs"), QStringLiteral("list"), QStringLiteral("--store"), store});
    QCOMPARE(list.exitCode, 0);
    QVERIFY2(list.out.contains(QStringLiteral("interrupted")), qPrintable(list.out));
    QVERIFY(!list.out.contains(QStringLiteral("running")));
    // Resuming from its last checkpoint works.
    const Result resumed = runCli({QStringLiteral("train"), project, QStringLiteral("--store"),
                                   store, QStringLiteral("--resume"), QStringLiteral("1"),
                                   QStringLiteral("--max-steps"), QStringLiteral("1")});
    QVERIFY2(resumed.exitCode == 3, qPrintable(resumed.out + resumed.err));
    QVERIFY(resumed.out.contains(QStringLiteral("stopped run 2")));
}

void TestCli::twoProcessesShareAStore() {
    QTemporaryDir dir;
    const QString project = writeBlobsProject(dir.path(), 6);
    const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
    QProcess a, b;
    const QStringList args = {QStringLiteral("train"), project, QStringLiteral("--store"), store};
    a.start(QStringLiteral(MYELIN_CLI_PATH), args);
    b.start(QStringLiteral(MYELIN_CLI_PATH), args);
    QVERIFY(a.waitForFinished(120000) && b.waitForFinished(120000));
    QVERIFY2(a.exitCode() == 0, a.readAllStandardError().constData());
    QVERIFY2(b.exitCode() == 0, b.readAllStandardError().constData());
    for (const char* run : {"1", "2"}) {
        const QString csv = dir.filePath(QStringLiteral("m%1.csv").arg(run));
        QCOMPARE(runCli({QStringLiteral("runs"), QStringLiteral("export-csv"), QLatin1String(run),
                         csv, QStringLiteral("--store"), store})
                     .exitCode,
                 0);
        QCOMPARE(countMetric(csv, QStringLiteral("loss")), 84);
        QCOMPARE(countMetric(csv, QStringLiteral("val_accuracy")), 6);
    }
}

void TestCli::pluginsListsWhatLoaded() {
    const Result r = runCli({QStringLiteral("plugins")},
                            {QStringLiteral("MYELIN_PLUGIN_PATH=" MYELIN_EXAMPLE_PLUGIN_DIR)});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.err.isEmpty(), qPrintable(r.err));
    QVERIFY2(r.out.contains(QStringLiteral("  " MYELIN_EXAMPLE_PLUGIN_DIR "\n")),
             qPrintable(r.out));
    QVERIFY2(r.out.contains(QStringLiteral("1 plugin(s) loaded")), qPrintable(r.out));
    QVERIFY2(r.out.contains(QStringLiteral("example 1.0  ")), qPrintable(r.out));
    QVERIFY2(r.out.contains(QStringLiteral("myelin_example.so")), qPrintable(r.out));
    QVERIFY2(r.out.contains(QStringLiteral("  layer SqueezeExcitation")), qPrintable(r.out));
    const Result extra = runCli({QStringLiteral("plugins"), QStringLiteral("x")});
    QCOMPARE(extra.exitCode, 2);
}

void TestCli::pluginsReportsRefusedPlugins() {
    const QString env = QStringLiteral("MYELIN_PLUGIN_PATH=" MYELIN_TEST_PLUGIN_DIR
                                       "/wrong_version:" MYELIN_EXAMPLE_PLUGIN_DIR);
    const Result r = runCli({QStringLiteral("plugins")}, {env});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.out.contains(QStringLiteral("1 plugin(s) loaded")), qPrintable(r.out));
    QVERIFY2(r.out.contains(QStringLiteral("1 plugin(s) refused")), qPrintable(r.out));
    QVERIFY2(r.out.contains(QStringLiteral("wrong_version.so: was built for plugin interface "
                                           "version %1")
                                .arg(MYELIN_PLUGIN_ABI_VERSION + 1)),
             qPrintable(r.out));
    // Any other command goes on with a warning.
    const Result check = runCli({QStringLiteral("check"), example("fashion_mlp.myelin")}, {env});
    QCOMPARE(check.exitCode, 0);
    QVERIFY2(check.err.startsWith(QStringLiteral("myelin: warning: plugin ")),
             qPrintable(check.err));
}

void TestCli::pluginProjectChecksAndTrains() {
    const QString project = QStringLiteral(MYELIN_SOURCE_DIR "/plugins/example/fashion_se.myelin");
    const QStringList env = {QStringLiteral("MYELIN_PLUGIN_PATH=" MYELIN_EXAMPLE_PLUGIN_DIR)};
    const Result check = runCli({QStringLiteral("check"), project}, env);
    QCOMPARE(check.exitCode, 0);
    QVERIFY2(check.out.contains(QStringLiteral("SqueezeExcitation")), qPrintable(check.out));
    QVERIFY(check.out.trimmed().endsWith(QStringLiteral("OK")));

    // Without the plugin the file still reads, and check names the missing kind.
    const Result without = runCli({QStringLiteral("check"), project},
                                  {QStringLiteral("MYELIN_PLUGIN_PATH=/nonexistent")});
    QCOMPARE(without.exitCode, 1);
    QVERIFY2(without.out.contains(QStringLiteral("unknown layer kind 'SqueezeExcitation'")),
             qPrintable(without.out));

    QTemporaryDir dir;
    const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
    const Result train = runCli({QStringLiteral("train"), project, QStringLiteral("--max-steps"),
                                 QStringLiteral("20"), QStringLiteral("--store"), store},
                                env);
    QCOMPARE(train.exitCode, 3); // stopped before the end, with a checkpoint
    QVERIFY2(train.out.contains(QStringLiteral("stopped run 1 at step 20")),
             qPrintable(train.out + train.err));
    const Result layers = runCli({QStringLiteral("runs"), QStringLiteral("layers"),
                                  QStringLiteral("1"), QStringLiteral("--store"), store},
                                 env);
    QCOMPARE(layers.exitCode, 0);
    QVERIFY2(layers.out.contains(QStringLiteral("SqueezeExcitation")), qPrintable(layers.out));
}

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
