// The command line as Unix tools have it (issue 43): every command's --help from the one
// description, --opt=value, --, the nearest option named for a typo, --json documents, and the
// man page and bash completion generated from the same description at build time.
#include "blobs_project.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_process.h"

namespace {

const QStringList kCommands = {"check",       "format",    "train",       "lr-find",
                               "eval",        "export",    "import",      "runs",
                               "runs list",   "runs show", "runs layers", "runs export-csv",
                               "runs delete", "plugins"};

CliResult runCli(const QStringList& args) {
    return runCliProcess(args, 60000);
}

QByteArray readFile(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// stdout parsed whole as one JSON object: anything else printed there fails the parse.
QJsonObject jsonOf(const CliResult& r) {
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(r.out.toUtf8(), &error);
    if (error.error != QJsonParseError::NoError || !doc.isObject()) {
        qWarning("not one JSON object (%s):\n%s", qPrintable(error.errorString()),
                 qPrintable(r.out.left(2000)));
        return {};
    }
    return doc.object();
}

bool hasKeys(const QJsonObject& o, const QStringList& keys) {
    for (const QString& k : keys)
        if (!o.contains(k)) {
            qWarning("no key '%s' in %s", qPrintable(k),
                     qPrintable(QJsonDocument(o).toJson(QJsonDocument::Compact).left(600)));
            return false;
        }
    return true;
}

// The bash completion sourced, _myelin run on `words` (the cursor on the last), COMPREPLY's
// words one a line.
QStringList complete(const QStringList& words, const QString& workDir = {}) {
    QString script = QStringLiteral("source '" MYELIN_BASH_COMPLETION "'; COMP_WORDS=(");
    for (const QString& w : words)
        script += " '" + w + "'";
    script += QStringLiteral("); COMP_CWORD=%1; _myelin; printf '%s\\n' \"${COMPREPLY[@]}\"")
                  .arg(words.size() - 1);
    QProcess bash;
    if (!workDir.isEmpty()) bash.setWorkingDirectory(workDir);
    bash.start(QStringLiteral("bash"), {QStringLiteral("-c"), script});
    if (!bash.waitForFinished(30000)) return {QStringLiteral("(bash did not finish)")};
    return QString::fromUtf8(bash.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts);
}

} // namespace

class TestCliOptions : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase();
    void trainHelpShowsItsOptionsAndExitCodes();
    void everyCommandHasItsOwnHelp();
    void optionValuesAfterEqualsOrSpace();
    void doubleDashEndsTheOptions();
    void formatTakesManyProjects();
    void misspeltOptionNamesTheNearest();
    void jsonDocuments();
    void checkJsonOfAnInvalidProject();
    void manPageAndCompletionAreGenerated();
    void completionOffersCommandsProjectsAndRuns();

  private:
    QTemporaryDir dir_;
    QString project_;
    QString store_;
    QString checkpoint_;
};

// One short run the JSON and completion tests read.
void TestCliOptions::initTestCase() {
    QVERIFY(dir_.isValid());
    project_ = myelin::test::writeBlobsProject(dir_.path(), 2);
    store_ = dir_.filePath(QStringLiteral("runs.sqlite"));
    const CliResult r = runCli({"train", project_, "--store=" + store_, "--epochs=1"});
    QVERIFY2(r.exitCode == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains("finished run 1"), qPrintable(r.out));
    checkpoint_ = lastCheckpoint(r.out);
    QVERIFY2(QFile::exists(checkpoint_), qPrintable(r.out));
}

void TestCliOptions::trainHelpShowsItsOptionsAndExitCodes() {
    const CliResult r = runCli({"train", "--help"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.err.isEmpty(), qPrintable(r.err));
    QVERIFY2(r.out.startsWith("Usage: myelin train PROJECT [options]\n"), qPrintable(r.out));
    for (const char* part :
         {"--epochs N", "--seed S", "--fork RUN[@STEP]", "--lr X", "--resume RUN|CHECKPOINT",
          "--device cpu|cuda[:N]", "--break-on CONDITIONS", "--events jsonl", "-h, --help",
          "Exit codes:", "0  success", "1  the project is invalid", "2  bad command line",
          "3  training was stopped before the end", "Ctrl-C"})
        QVERIFY2(r.out.contains(QLatin1String(part)), part);
    // The lines are filled to the help's width.
    for (const QString& line : r.out.split('\n'))
        QVERIFY2(line.size() <= 100, qPrintable(line));
    const CliResult h = runCli({"train", "-h"});
    QCOMPARE(h.exitCode, 0);
    QCOMPARE(h.out, r.out);
    // Help wins over what else is wrong on the line (no PROJECT here).
    QCOMPARE(runCli({"train", "--epochs", "x", "--help"}).exitCode, 0);
}

void TestCliOptions::everyCommandHasItsOwnHelp() {
    for (const QString& command : kCommands) {
        QStringList args = command.split(' ');
        args << "--help";
        const CliResult r = runCli(args);
        QVERIFY2(r.exitCode == 0, qPrintable(command + ": " + r.err));
        QVERIFY2(r.out.startsWith("Usage: myelin " + command), qPrintable(r.out));
        QVERIFY2(r.out.contains("Exit codes:\n") && r.out.contains("2  bad command line") &&
                     r.out.contains("3  training was stopped"),
                 qPrintable(r.out));
    }
    const CliResult top = runCli({"--help"});
    for (const QString& command : kCommands)
        QVERIFY2(top.out.contains("  " + command), qPrintable(command));
}

void TestCliOptions::optionValuesAfterEqualsOrSpace() {
    // --epochs=1 trained in initTestCase; the spaced form and the last of a repeated option.
    const QString store = dir_.filePath(QStringLiteral("forms.sqlite"));
    const CliResult r = runCli({"train", project_, "--store", store, "--epochs=3", "--epochs", "1",
                                "--max-steps=5", "--name=spaced form"});
    QVERIFY2(r.exitCode == 3, qPrintable(r.out + r.err)); // stopped by --max-steps
    QVERIFY2(r.out.contains("run 1 \"spaced form\""), qPrintable(r.out));
    QVERIFY2(r.out.contains("stopped run 1 at step 5"), qPrintable(r.out));
    // A bad value is still refused by the command (exit 2), in either form.
    QCOMPARE(runCli({"train", project_, "--epochs=0"}).exitCode, 2);
    const CliResult missing = runCli({"train", project_, "--epochs"});
    QCOMPARE(missing.exitCode, 2);
    QVERIFY2(missing.err.contains("--epochs needs a value"), qPrintable(missing.err));
}

void TestCliOptions::doubleDashEndsTheOptions() {
    // A project whose name starts with '-' is an argument after --.
    QVERIFY(QFile::copy(project_, dir_.filePath(QStringLiteral("-dash.myelin"))));
    QProcess p;
    p.setWorkingDirectory(dir_.path());
    p.start(QStringLiteral(MYELIN_CLI_PATH), {"check", "--", "-dash.myelin"});
    QVERIFY(p.waitForFinished(60000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    QVERIFY(p.readAllStandardOutput().contains("OK"));
    p.start(QStringLiteral(MYELIN_CLI_PATH), {"check", "-dash.myelin"});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 2); // without --, an unknown option
}

void TestCliOptions::formatTakesManyProjects() {
    QTemporaryDir other;
    const QString second = myelin::test::writeBlobsProject(other.path(), 1);
    const CliResult r = runCli({"format", project_, second});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QCOMPARE(runCli({"format"}).exitCode, 2);
}

void TestCliOptions::misspeltOptionNamesTheNearest() {
    const CliResult r = runCli({"train", project_, "--epoch", "1"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY(r.out.isEmpty());
    QVERIFY2(r.err.contains("unknown option '--epoch'; did you mean '--epochs'?"),
             qPrintable(r.err));
    QVERIFY2(r.err.contains("myelin train --help"), qPrintable(r.err));
    const CliResult eq = runCli({"check", project_, "--batch-sise=4"});
    QCOMPARE(eq.exitCode, 2);
    QVERIFY2(eq.err.contains("did you mean '--batch-size'?"), qPrintable(eq.err));
    const CliResult command = runCli({"trian", project_});
    QCOMPARE(command.exitCode, 2);
    QVERIFY2(command.err.contains("unknown command 'trian'; did you mean 'train'?"),
             qPrintable(command.err));
    const CliResult action = runCli({"runs", "lsit"});
    QCOMPARE(action.exitCode, 2);
    QVERIFY2(action.err.contains("did you mean 'list'?"), qPrintable(action.err));
    // One command a line: a second command's name is an argument too many.
    const CliResult two = runCli({"check", project_, "train", project_});
    QCOMPARE(two.exitCode, 2);
    QVERIFY2(two.err.contains("check: unexpected argument 'train'"), qPrintable(two.err));
    // Nothing near: no guess.
    const CliResult far = runCli({"train", project_, "--zzzzzzzz"});
    QCOMPARE(far.exitCode, 2);
    QVERIFY2(far.err.contains("unknown option '--zzzzzzzz'") && !far.err.contains("did you mean"),
             qPrintable(far.err));
}

void TestCliOptions::jsonDocuments() {
    const CliResult list = runCli({"runs", "list", "--store", store_, "--json"});
    QCOMPARE(list.exitCode, 0);
    const QJsonObject l = jsonOf(list);
    QVERIFY(hasKeys(l, {"store", "runs", "hidden_lr_find"}));
    QCOMPARE(l["runs"].toArray().size(), 1);
    const QJsonObject run = l["runs"].toArray()[0].toObject();
    QVERIFY(hasKeys(run, {"id", "name", "status", "started_at", "ended_at", "parent_run",
                          "parent_step", "parent_checkpoint", "tags", "metrics"}));
    QCOMPARE(run["id"].toInt(), 1);
    QCOMPARE(run["status"].toString(), QStringLiteral("finished"));
    QVERIFY(hasKeys(run["metrics"].toObject()["loss"].toObject(), {"value", "step"}));

    const CliResult show = runCli({"runs", "show", "1", "--store=" + store_, "--json"});
    QCOMPARE(show.exitCode, 0);
    const QJsonObject s = jsonOf(show);
    QVERIFY(hasKeys(s, {"id", "name", "status", "forked_from", "host", "device", "threads", "error",
                        "project", "note", "params", "metrics", "feature_maps", "events",
                        "artifacts"}));
    QVERIFY(!s["artifacts"].toArray().isEmpty());
    QVERIFY(hasKeys(s["artifacts"].toArray()[0].toObject(), {"kind", "step", "path"}));

    const CliResult layers = runCli({"runs", "layers", "1", "--store", store_, "--json"});
    QCOMPARE(layers.exitCode, 0);
    const QJsonObject y = jsonOf(layers);
    QVERIFY(hasKeys(y, {"run", "requested_step", "norms_step", "summaries_step", "layers"}));
    QVERIFY(!y["layers"].toArray().isEmpty());
    QVERIFY(hasKeys(y["layers"].toArray()[0].toObject(),
                    {"layer", "kind", "grad_norm", "weight_norm", "update_ratio", "activation_mean",
                     "activation_std", "zero_fraction", "nonfinite"}));

    const CliResult check = runCli({"check", project_, "--json"});
    QCOMPARE(check.exitCode, 0);
    const QJsonObject c = jsonOf(check);
    QVERIFY(hasKeys(c, {"project", "name", "ok", "valid", "batch_size", "layers", "total_params",
                        "trainable_params", "problems", "loss", "memory", "training"}));
    QCOMPARE(c["ok"].toBool(), true);
    QCOMPARE(c["total_params"].toInt(), 4 * 16 + 16 + 16 * 3 + 3);
    QVERIFY(hasKeys(c["layers"].toArray()[0].toObject(),
                    {"name", "kind", "outputs", "params", "flops"}));
    QVERIFY(hasKeys(c["memory"].toObject(),
                    {"device", "batch_size", "parts", "total_bytes", "free_bytes", "fit"}));

    const QString csv = dir_.filePath(QStringLiteral("predictions.csv"));
    const CliResult eval = runCli({"eval", project_, "--checkpoint", checkpoint_, "--json",
                                   "--top-loss=3", "--predictions", csv});
    QVERIFY2(eval.exitCode == 0, qPrintable(eval.err));
    const QJsonObject e = jsonOf(eval);
    QVERIFY(hasKeys(e, {"split", "examples", "metrics", "predictions", "confusion", "top_losses"}));
    QVERIFY(e["metrics"].toObject().contains("accuracy"));
    QCOMPARE(e["predictions"].toString(), csv);
    QVERIFY(QFile::exists(csv));
    const QJsonObject confusion = e["confusion"].toObject();
    QVERIFY(hasKeys(confusion, {"classes", "matrix", "per_class"}));
    QCOMPARE(confusion["classes"].toArray().size(), 3);
    QCOMPARE(e["top_losses"].toArray().size(), 3);
    QVERIFY(hasKeys(e["top_losses"].toArray()[0].toObject(),
                    {"example", "loss", "target", "predicted", "probability"}));
}

// An invalid project: exit 1 as before, the document says why (stdout stays one document).
void TestCliOptions::checkJsonOfAnInvalidProject() {
    QByteArray text = readFile(project_);
    QVERIFY(text.contains("\"in_features\": 16"));
    text.replace("\"in_features\": 16", "\"in_features\": 15");
    const QString bad = dir_.filePath(QStringLiteral("bad.myelin"));
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly) && f.write(text) == text.size());
    f.close();
    const CliResult r = runCli({"check", bad, "--json"});
    QCOMPARE(r.exitCode, 1);
    const QJsonObject c = jsonOf(r);
    QCOMPARE(c["ok"].toBool(true), false);
    QCOMPARE(c["valid"].toBool(true), false);
    QVERIFY(!c["problems"].toArray().isEmpty());
    QVERIFY2(r.err.contains("is invalid"), qPrintable(r.err));
}

void TestCliOptions::manPageAndCompletionAreGenerated() {
    const QByteArray man = readFile(QStringLiteral(MYELIN_MAN_PAGE));
    QVERIFY2(man.startsWith(".TH MYELIN 1"), MYELIN_MAN_PAGE);
    // What the binary generates now: the build wrote the page from this very description.
    const CliResult generated = runCli({"--generate-man"});
    QCOMPARE(generated.exitCode, 0);
    QCOMPARE(generated.out.toUtf8(), man);
    const QString page = QString::fromUtf8(man).replace(QLatin1String("\\-"), QLatin1String("-"));
    for (const QString& command : kCommands)
        if (command != "runs") QVERIFY2(page.contains(".SS \"" + command), qPrintable(command));
    for (const char* part : {"--fork", "--epochs", "--json", "EXIT STATUS", "MYELIN_PLUGIN_PATH"})
        QVERIFY2(page.contains(QLatin1String(part)), part);

    const QByteArray completion = readFile(QStringLiteral(MYELIN_BASH_COMPLETION));
    QVERIFY2(completion.contains("complete -F _myelin myelin"), MYELIN_BASH_COMPLETION);
    const CliResult script = runCli({"--generate-bash-completion"});
    QCOMPARE(script.out.toUtf8(), completion);
    for (const QString& command : kCommands) {
        const QStringList path = command.split(' ');
        const QString pattern =
            path.size() == 1 ? "\"/" + command + "\"" : "\"runs/" + path[1] + "\"";
        QVERIFY2(completion.contains(pattern.toUtf8()), qPrintable(command));
    }
    QProcess bash;
    bash.start(QStringLiteral("bash"),
               {"-c", QStringLiteral("source '" MYELIN_BASH_COMPLETION "' && complete -p myelin")});
    QVERIFY(bash.waitForFinished(30000));
    QCOMPARE(bash.exitCode(), 0);
    QCOMPARE(bash.readAllStandardOutput().trimmed(), QByteArray("complete -F _myelin myelin"));
}

void TestCliOptions::completionOffersCommandsProjectsAndRuns() {
    const QString cli = QStringLiteral(MYELIN_CLI_PATH);
    QCOMPARE(complete({cli, "tr"}), QStringList{"train"});
    QCOMPARE(complete({cli, "runs", "l"}), (QStringList{"list", "layers"}));
    QCOMPARE(complete({cli, "train", "x.myelin", "--epo"}), QStringList{"--epochs"});
    QCOMPARE(complete({cli, "train", "x.myelin", "--device", ""}), (QStringList{"cpu", "cuda"}));
    QCOMPARE(complete({cli, "export", "--format", "=", "o"}), QStringList{"onnx"});
    // Projects for PROJECT: *.myelin files and folders, nothing else.
    QDir(dir_.path()).mkdir(QStringLiteral("folder"));
    QStringList projects = complete({cli, "check", ""}, dir_.path());
    projects.sort();
    QCOMPARE(projects,
             (QStringList{"-dash.myelin", "bad.myelin", "blobs.myelin", "folder", "runs"}));
    // Run ids from the store the command line names, as `myelin runs list --ids-only` gives.
    QCOMPARE(complete({cli, "runs", "show", "--store", store_, ""}), QStringList{"1"});
    // "--store=FILE" as bash splits it at '='.
    QCOMPARE(complete({cli, "train", "x.myelin", "--store", "=", store_, "--fork", ""}),
             QStringList{"1"});
    const CliResult ids = runCli({"runs", "list", "--ids-only", "--store", store_});
    QCOMPARE(ids.out, QStringLiteral("1\n"));
}

QTEST_GUILESS_MAIN(TestCliOptions)
#include "test_cli_options.moc"
