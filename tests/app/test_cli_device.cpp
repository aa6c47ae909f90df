// `myelin --version` lists the CUDA backend and its devices (or why none is usable), and
// `myelin train --device` refuses a device it cannot use before the run starts: exit 1, the
// device and the reason, nothing written to the store. Runs the same on a machine with a GPU
// (there the refusal is the CPU-only layers') and without one (the runtime's reason).
#include "cli_process.h"
#include "device_line.h"

#include <myelin/cuda.h>
#include <myelin/error.h>

#include <QtTest>

namespace {

CliResult runCli(const QStringList& args) {
    return runCliProcess(args, 120000);
}

QString example(const char* name) {
    return QStringLiteral(MYELIN_SOURCE_DIR "/resources/examples/") + QLatin1String(name);
}

} // namespace

class TestCliDevice : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() { myelin::test::print_cuda_device(); }

    void versionListsTheCudaBackend() {
        const CliResult r = runCli({QStringLiteral("--version")});
        QCOMPARE(r.exitCode, 0);
        const myelin::CudaStatus& cuda = myelin::cuda_status();
        if (!cuda.compiled) {
            QVERIFY2(r.out.contains(QStringLiteral("CUDA backend: not built (")),
                     qPrintable(r.out));
            return;
        }
        QVERIFY2(r.out.contains(QStringLiteral("CUDA backend: compiled in (CUDA ")),
                 qPrintable(r.out));
        if (cuda.usable()) {
            for (const myelin::GpuInfo& gpu : cuda.devices)
                QVERIFY2(r.out.contains(QStringLiteral("cuda:%1  ").arg(gpu.index) +
                                        QString::fromStdString(gpu.name)),
                         qPrintable(r.out));
        } else {
            QVERIFY2(r.out.contains(QStringLiteral("no usable CUDA device: ") +
                                    QString::fromStdString(cuda.reason)),
                     qPrintable(r.out));
        }
    }

    void trainOnAnUnusableDeviceFailsBeforeTheRun() {
        QTemporaryDir dir;
        const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
        for (const QString& device : {QStringLiteral("cuda"), QStringLiteral("cuda:7")}) {
            const CliResult r =
                runCli({QStringLiteral("train"), example("fashion_mlp.myelin"),
                        QStringLiteral("--device"), device, QStringLiteral("--store"), store});
            QCOMPARE(r.exitCode, 1);
            const QString named = device == QStringLiteral("cuda") ? QStringLiteral("cuda:0")
                                                                   : QStringLiteral("cuda:7");
            QVERIFY2(r.err.startsWith(QStringLiteral("myelin: error: device ") + named) ||
                         r.err.startsWith(QStringLiteral("myelin: error: training on ") + named),
                     qPrintable(r.err));
            if (!myelin::cuda_status().usable())
                QVERIFY2(r.err.contains(QString::fromStdString(myelin::cuda_status().reason)),
                         qPrintable(r.err));
            QVERIFY2(r.out.isEmpty(), qPrintable(r.out)); // no run started
            QVERIFY(!QFile::exists(store));               // nothing recorded
        }
    }

    void badDeviceTextIsAUsageError() {
        for (const char* text : {"gpu", "cuda:", "cuda:-1", "cuda:1x", "CPU"}) {
            const CliResult r = runCli({QStringLiteral("train"), example("fashion_mlp.myelin"),
                                        QStringLiteral("--device"), QLatin1String(text)});
            QCOMPARE(r.exitCode, 2);
            QVERIFY2(r.err.contains(QStringLiteral("--device: device '") + QLatin1String(text) +
                                    QStringLiteral("': expected cpu, cuda or cuda:N")),
                     qPrintable(r.err));
        }
    }

    void parseDevice() {
        QCOMPARE(myelin::parse_device("cpu"), myelin::kCPU);
        QCOMPARE(myelin::parse_device("cuda"), myelin::cuda_device(0));
        QCOMPARE(myelin::parse_device("cuda:3"), myelin::cuda_device(3));
        QCOMPARE(myelin::parse_device("cuda:3").str(), std::string("cuda:3"));
        for (const char* text : {"", "cuda:99999999999", " cuda"}) {
            bool refused = false;
            try {
                myelin::parse_device(text);
            } catch (const myelin::Error&) {
                refused = true;
            }
            QVERIFY2(refused, text);
        }
        myelin::check_device_usable(myelin::kCPU); // never throws
        myelin::check_training_device(myelin::kCPU);
    }

    // Only cuda:0 is usable in this version (Tensor::to refuses any other index), so a second GPU
    // is refused where it is offered, with the reason, not when training starts.
    void onlyTheFirstCudaDeviceIsUsable() {
        using myelin::cuda_device;
        using myelin::cuda_index_refusal;
        QVERIFY(cuda_index_refusal(cuda_device(0), 1).empty());
        QVERIFY(cuda_index_refusal(cuda_device(0), 2).empty());
        QCOMPARE(cuda_index_refusal(cuda_device(1), 2),
                 std::string("device cuda:1 is not usable: this version runs on cuda:0 only"));
        QCOMPARE(cuda_index_refusal(cuda_device(2), 2),
                 std::string("device cuda:2 does not exist: this machine has 2 CUDA device(s) "
                             "(cuda:0 to cuda:1)"));
        QCOMPARE(cuda_index_refusal(cuda_device(1), 1),
                 std::string("device cuda:1 does not exist: this machine has 1 CUDA device(s) "
                             "(cuda:0)"));
        QVERIFY(!cuda_index_refusal(cuda_device(0), 0).empty());
    }
};

QTEST_APPLESS_MAIN(TestCliDevice)
#include "test_cli_device.moc"
