// A checkpoint the disk cannot take (io::set_write_fault_for_tests stands in for a full disk):
// the run ends stopped, not failed, saying what the file needed and which checkpoint it can be
// resumed from; that checkpoint is kept and the resume works; no partial file is left.
#include <myelin/io/project.h>
#include <myelin/io/safetensors.h>
#include <myelin/train/trainer.h>

#include <QDir>
#include <QTemporaryDir>
#include <QtTest>

#include <cerrno>

using namespace myelin;
using namespace myelin::train;

namespace {

const std::string kExamples = std::string(MYELIN_SOURCE_DIR) + "/resources/examples";

// Fails every checkpoint write from the `from`-th on (1-based) with ENOSPC.
struct FullDiskFrom {
    explicit FullDiskFrom(int from) {
        io::set_write_fault_for_tests([from, count = 0](const std::filesystem::path&) mutable {
            return ++count >= from ? ENOSPC : 0;
        });
    }
    ~FullDiskFrom() { io::set_write_fault_for_tests({}); }
};

TrainerOptions options_in(const QTemporaryDir& dir) {
    TrainerOptions o;
    o.project_dir = kExamples;
    o.checkpoint_dir = dir.filePath(QStringLiteral("checkpoints")).toStdString();
    o.epochs = 5;
    return o;
}

} // namespace

class TestWriteFailures : public QObject {
    Q_OBJECT

  private slots:
    void aFullDiskStopsTheRunResumably() {
        const io::Project project = io::load_project(kExamples + "/tabular_regression.myelin");
        QTemporaryDir dir;
        TrainResult result;
        {
            // Epochs 1 and 2 write best and epoch-NNNN each; epoch 3's first write fails.
            const FullDiskFrom full(5);
            Trainer trainer(project, options_in(dir));
            result = trainer.run();
        }
        QCOMPARE(result.status, RunStatus::Stopped);
        const QString error = QString::fromStdString(result.error);
        for (const char* part : {"No space left on device", "the file needs", "kB",
                                 "can be resumed from /", "/epoch-0002.safetensors (step"})
            QVERIFY2(error.contains(QLatin1String(part)), result.error.c_str());
        // The last good checkpoint is kept, and no temporary file is left.
        const QDir checkpoints(dir.filePath(QStringLiteral("checkpoints")));
        QVERIFY(checkpoints.exists(QStringLiteral("epoch-0002.safetensors")));
        for (const QString& name : checkpoints.entryList(QDir::Files))
            QVERIFY2(!name.endsWith(QStringLiteral(".tmp")), qPrintable(name));
        // With space again, the run goes on from there to the end.
        TrainerOptions resume = options_in(dir);
        resume.resume_from =
            checkpoints.filePath(QStringLiteral("epoch-0002.safetensors")).toStdString();
        Trainer again(project, resume);
        QCOMPARE(again.run().status, RunStatus::Finished);
    }

    void withoutACheckpointItSaysSo() {
        const io::Project project = io::load_project(kExamples + "/tabular_regression.myelin");
        QTemporaryDir dir;
        const FullDiskFrom full(1);
        Trainer trainer(project, options_in(dir));
        const TrainResult result = trainer.run();
        QCOMPARE(result.status, RunStatus::Stopped);
        QVERIFY2(QString::fromStdString(result.error).contains("cannot be resumed"),
                 result.error.c_str());
    }

    void aWriteErrorNamesTheFileAndKeepsTheOldOne() {
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("w.safetensors")).toStdString();
        io::save_safetensors(path, {{"a", ones({4})}});
        io::set_write_fault_for_tests([](const std::filesystem::path&) { return ENOSPC; });
        try {
            io::save_safetensors(path, {{"a", zeros({1000})}});
            io::set_write_fault_for_tests({});
            QFAIL("the write did not fail");
        } catch (const io::WriteError& e) {
            io::set_write_fault_for_tests({});
            QCOMPARE(e.error_number(), ENOSPC);
            QVERIFY(e.bytes_needed() > 4000);
            QVERIFY(QString(e.what()).contains(QString::fromStdString(path)));
        }
        const io::SafetensorsFile kept = io::load_safetensors(path);
        QCOMPARE(kept.tensors.at(0).second.numel(), int64_t(4));
    }
};

QTEST_GUILESS_MAIN(TestWriteFailures)
#include "test_write_failures.moc"
