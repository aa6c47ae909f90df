// The command line: `myelin export` in each format from a checkpoint that carries its project,
// its refusals (exit 1 with the reason, no file; exit 2 for a bad command line), and
// `myelin eval --checkpoint FILE` without the project file.
#include "blobs_project.h"
#include "export_test_models.h"

#include <myelin/io/checkpoint.h>

#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

using namespace myelin;
using namespace export_test;

namespace {

struct Result {
    int code = -1;
    QString out, err;
};

Result run_cli(const QStringList& args, const QString& working_dir = {}) {
    QProcess p;
    if (!working_dir.isEmpty()) p.setWorkingDirectory(working_dir);
    p.start(MYELIN_CLI_PATH, args);
    Result r;
    if (!p.waitForFinished(300000)) return r;
    r.code = p.exitCode();
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}

} // namespace

class TestExportCli : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    QString checkpoint_;

  private slots:
    // A checkpoint of fashion_mlp (fresh weights) that describes itself as training writes it.
    void initTestCase() {
        QVERIFY(dir_.isValid());
        auto source = fresh_source(io::load_project(example_path("fashion_mlp")));
        io::Checkpoint c;
        c.model = source.weights;
        c.project_json = io::serialize_project(source.project);
        c.position.step = 7;
        c.description.project_dir =
            QFileInfo(q(example_path("fashion_mlp"))).absolutePath().toStdString();
        c.description.class_names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                     "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
        checkpoint_ = dir_.filePath("mlp.safetensors");
        io::save_checkpoint(checkpoint_.toStdString(), c);
    }

    void exportsEachFormat() {
        for (const char* format : {"onnx", "pytorch", "safetensors"}) {
            const QString out = dir_.filePath(QString("model.") + format);
            const Result r =
                run_cli({"export", "--checkpoint", checkpoint_, "--format", format, "-o", out});
            QVERIFY2(r.code == 0, qPrintable(r.err));
            QVERIFY2(r.out.contains("wrote " + out), qPrintable(r.out));
            QVERIFY(QFileInfo(out).size() > 0);
        }
        // With the project named too.
        const Result r =
            run_cli({"export", q(example_path("fashion_mlp")), "--checkpoint", checkpoint_,
                     "--format", "onnx", "-o", dir_.filePath("named.onnx")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
    }

    void refusals() {
        QTemporaryDir empty;
        // A checkpoint that does not fit the project.
        Result r = run_cli({"export", q(example_path("fashion_cnn")), "--checkpoint", checkpoint_,
                            "--format", "onnx", "-o", empty.filePath("cnn.onnx")});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("do not fit the model of project 'Fashion-MNIST CNN'"),
                 qPrintable(r.err));
        // An output folder that does not exist.
        r = run_cli({"export", "--checkpoint", checkpoint_, "--format", "pytorch", "-o",
                     empty.filePath("missing/model.py")});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("does not exist"), qPrintable(r.err));
        QVERIFY(QDir(empty.path()).isEmpty(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot));
        // Bad command lines.
        r = run_cli({"export", "--checkpoint", checkpoint_, "--format", "tflite", "-o", "x"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("unknown format 'tflite'"), qPrintable(r.err));
        r = run_cli({"export", "--checkpoint", checkpoint_});
        QCOMPARE(r.code, 2);
    }

    // The checkpoint alone: its project, its data folder.
    void evalWithoutProject() {
        const Result r = run_cli({"eval", "--checkpoint", checkpoint_, "--threads", "2"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.contains("test (10000 examples)"), qPrintable(r.out));
        QVERIFY2(r.out.contains("Ankle boot"), qPrintable(r.out));
        // The exported safetensors (weights only, no optimizer or generator state) too, with
        // the same numbers.
        const Result exported =
            run_cli({"eval", "--checkpoint", dir_.filePath("model.safetensors"), "--threads", "2"});
        QVERIFY2(exported.code == 0, qPrintable(exported.err));
        QCOMPARE(exported.out.section('\n', 0, 0), r.out.section('\n', 0, 0));
    }

    // A checkpoint written by training says what the model needs: run, classes, input shape,
    // the preprocessing with Normalize's computed values, metrics at its step, the data folder.
    void trainedCheckpointDescribesItself() {
        QTemporaryDir project_dir;
        const QString project = myelin::test::writeBlobsProject(project_dir.path(), 2);
        QVERIFY(!project.isEmpty());
        QFile f(project);
        QVERIFY(f.open(QIODevice::ReadWrite));
        QByteArray text = f.readAll();
        text.replace(R"("num_workers": 0})",
                     R"("num_workers": 0, "transforms": [{"kind": "Normalize"}]})");
        f.resize(0);
        f.write(text);
        f.close();
        const QString store = project_dir.filePath("runs.sqlite"),
                      checkpoints = project_dir.filePath("checkpoints");
        Result r = run_cli({"train", project, "--store", store, "--checkpoint-dir", checkpoints});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QString last =
            checkpoints + "/" +
            QDir(checkpoints).entryList({"epoch-*.safetensors"}, QDir::Files, QDir::Name).last();
        const io::Checkpoint c = io::load_checkpoint(last.toStdString());
        const io::CheckpointDescription& d = c.description;
        QCOMPARE(d.run_id, int64_t(1));
        QCOMPARE(d.class_names, (std::vector<std::string>{"a", "b", "c"}));
        QCOMPARE(d.input_shape, (std::vector<int64_t>{4}));
        QCOMPARE(d.project_dir, QFileInfo(project_dir.path()).canonicalFilePath().toStdString());
        QCOMPARE(d.preprocessing.size(), size_t(1));
        QCOMPARE(d.preprocessing[0].kind, std::string("Normalize"));
        // Computed from the training split (the spec leaves them empty).
        bool number = false;
        QString::fromStdString(d.preprocessing[0].options.get_string("mean"))
            .split(',')
            .first()
            .toDouble(&number);
        QVERIFY(number);
        QVERIFY(QString::fromStdString(d.preprocessing[0].options.get_string("std")).toDouble() >
                0);
        QCOMPARE(d.metrics_step, c.position.step);
        bool train_loss = false, val_loss = false;
        for (const auto& [name, value] : d.metrics) {
            train_loss = train_loss || name == "train_loss";
            val_loss = val_loss || name == "val_loss";
        }
        QVERIFY(train_loss && val_loss);
        // Evaluated from elsewhere, with a copy of the checkpoint: the data is found.
        QTemporaryDir elsewhere;
        const QString copy = elsewhere.filePath("copy.safetensors");
        QVERIFY(QFile::copy(last, copy));
        r = run_cli({"eval", "--checkpoint", copy}, elsewhere.path());
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.contains("accuracy="), qPrintable(r.out));
        // Exported as safetensors, its model card holds the test-set evaluation: the confusion
        // matrix's counts sum to the test examples `myelin eval` reports.
        const QString out = elsewhere.filePath("blobs.safetensors");
        r = run_cli({"export", "--checkpoint", copy, "--format", "safetensors", "-o", out},
                    elsewhere.path());
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QFile card(elsewhere.filePath("blobs.md"));
        QVERIFY(card.open(QIODevice::ReadOnly));
        const QString md = QString::fromUtf8(card.readAll());
        QVERIFY2(md.contains("Confusion matrix (rows: true class, columns: predicted)"),
                 qPrintable(md));
        int64_t counted = 0;
        for (const QString& line : md.split('\n'))
            if (line.startsWith("| **"))
                for (const QString& cell : line.split('|').mid(2))
                    counted += cell.trimmed().toLongLong();
        const auto examples = QRegularExpression(R"(data \((\d+) examples\))").match(md);
        QVERIFY2(examples.hasMatch(), qPrintable(md));
        QCOMPARE(counted, examples.captured(1).toLongLong());
        QVERIFY2(md.contains("| a | "), qPrintable(md)); // per-class scores
    }
};

QTEST_GUILESS_MAIN(TestExportCli)
#include "test_export_cli.moc"
