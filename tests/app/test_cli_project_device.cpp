// The project's training.device in `myelin train`: a project asking for a device this machine
// cannot train on fails before the run (exit 1, the key and the reason, nothing stored); --device
// overrides it, and the run records the device it computed on; training.precision "float16" on
// the CPU is refused naming the key; a malformed device names the key; `myelin format` keeps it.
#include "cli_process.h"
#include "device_line.h"

#include <myelin/cuda.h>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

namespace {

CliResult runCli(const QStringList& args) {
    return runCliProcess(args, 120000);
}

// The tabular example (one epoch) in `dir` with its data, with "precision": "float32" replaced
// by `training` (e.g. "\"precision\": \"float32\", \"device\": \"cuda\"").
QString writeProject(const QTemporaryDir& dir, const QString& training) {
    const QString examples = QStringLiteral(MYELIN_SOURCE_DIR "/resources/examples/");
    QDir(dir.path()).mkpath(QStringLiteral("data"));
    QFile::copy(examples + QStringLiteral("data/tabular_regression.csv"),
                dir.filePath(QStringLiteral("data/tabular_regression.csv")));
    QFile in(examples + QStringLiteral("tabular_regression.myelin"));
    if (!in.open(QIODevice::ReadOnly)) return {};
    QString text = QString::fromUtf8(in.readAll());
    const QString precision = QStringLiteral("\"precision\": \"float32\"");
    if (!text.contains(precision)) return {};
    text.replace(precision, training);
    text.replace(QRegularExpression(QStringLiteral("\"epochs\": [0-9]+")),
                 QStringLiteral("\"epochs\": 1"));
    const QString path = dir.filePath(QStringLiteral("project.myelin"));
    QFile out(path);
    if (!out.open(QIODevice::WriteOnly)) return {};
    out.write(text.toUtf8());
    return path;
}

const QString kCuda = QStringLiteral("\"precision\": \"float32\", \"device\": \"cuda\"");

} // namespace

class TestCliProjectDevice : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() { myelin::test::print_cuda_device(); }

    void projectDeviceIsCheckedBeforeTheRun() {
        QTemporaryDir dir;
        const QString project = writeProject(dir, kCuda);
        QVERIFY(!project.isEmpty());
        const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
        const CliResult r =
            runCli({QStringLiteral("train"), project, QStringLiteral("--store"), store});
        const myelin::CudaStatus& cuda = myelin::cuda_status();
        if (cuda.usable()) {
            // A GPU here: the run goes, or training on it is refused with the backend's reason.
            QVERIFY2(r.exitCode == 0 || r.err.contains(QStringLiteral("training.device \"cuda\"")),
                     qPrintable(r.err));
            return;
        }
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.startsWith(QStringLiteral(
                     "myelin: error: the project's training.device \"cuda\": device cuda:0 is "
                     "not usable: ")),
                 qPrintable(r.err));
        QVERIFY2(r.err.contains(QString::fromStdString(cuda.reason)), qPrintable(r.err));
        QVERIFY2(r.out.isEmpty(), qPrintable(r.out)); // no run started
        QVERIFY(!QFile::exists(store));               // nothing recorded
    }

    void deviceOptionOverridesTheProject() {
        QTemporaryDir dir;
        const QString project = writeProject(dir, kCuda);
        const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
        const CliResult r = runCli({QStringLiteral("train"), project, QStringLiteral("--device"),
                                    QStringLiteral("cpu"), QStringLiteral("--store"), store});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const CliResult show = runCli({QStringLiteral("runs"), QStringLiteral("show"),
                                       QStringLiteral("1"), QStringLiteral("--store"), store});
        QCOMPARE(show.exitCode, 0);
        QVERIFY2(show.out.contains(QStringLiteral(" (cpu, ")), qPrintable(show.out));
        QVERIFY2(show.out.contains(QStringLiteral("device = cpu")), qPrintable(show.out));
        QVERIFY2(show.out.contains(QStringLiteral("precision = float32")), qPrintable(show.out));
    }

    void float16OnTheCpuIsRefused() {
        QTemporaryDir dir;
        const QString project = writeProject(dir, QStringLiteral("\"precision\": \"float16\""));
        const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
        const CliResult r =
            runCli({QStringLiteral("train"), project, QStringLiteral("--store"), store});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.startsWith(QStringLiteral("myelin: error: training.precision \"float16\" "
                                                 "needs a CUDA device (training runs on cpu)")),
                 qPrintable(r.err));
        QVERIFY(!QFile::exists(store));
    }

    void malformedDeviceNamesTheKey() {
        QTemporaryDir dir;
        const QString project =
            writeProject(dir, QStringLiteral("\"precision\": \"float32\", \"device\": \"gpu\""));
        const CliResult r = runCli({QStringLiteral("check"), project});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains(QStringLiteral(
                     "project.myelin:training.device: expected \"cpu\", \"cuda\" or \"cuda:N\"")),
                 qPrintable(r.err));
    }

    void formatKeepsTheDevice() {
        QTemporaryDir dir;
        const QString project = writeProject(dir, kCuda);
        QCOMPARE(runCli({QStringLiteral("format"), project}).exitCode, 0);
        QFile file(project);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(file.readAll());
        QVERIFY2(text.contains(QStringLiteral("\n    \"device\": \"cuda\",\n")), qPrintable(text));
        QVERIFY(text.startsWith(QStringLiteral("{\n  \"format_version\": 3,")));
    }
};

QTEST_APPLESS_MAIN(TestCliProjectDevice)
#include "test_cli_project_device.moc"
