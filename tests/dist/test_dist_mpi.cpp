// `myelin train` as 2 MPI ranks on loopback (mpirun -np 2 --oversubscribe, TCP): the same losses
// as one rank with the global batch, a failing or killed rank failing the recorded run without
// a hang, a resume with another world size, and --dist-check naming a diverged tensor. Skipped
// where CMake found no Open MPI.
#include "blobs_project.h"
#include "cli_process.h"

#include <myelin/store/run_store.h>

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

using namespace myelin;

namespace {

// 3200 rows: 2304 training examples (18 batches of 128, so no padding), 256 validation, 640 test.
QString writeProject(const QString& dir, int batch, int epochs) {
    const QString path = myelin::test::writeBlobsProject(
        dir, epochs, 3200, R"({"kind": "SGD", "lr": 0.1, "momentum": 0.9})");
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    QByteArray text = f.readAll();
    f.close();
    text.replace("\"batch_size\": 16", "\"batch_size\": " + QByteArray::number(batch));
    if (!f.open(QIODevice::WriteOnly) || f.write(text) != text.size()) return {};
    return path;
}

CliResult runRanks(int ranks, const QStringList& args, const QStringList& env = {}) {
    QProcess process;
    QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
    e.insert("OMPI_ALLOW_RUN_AS_ROOT", "1");
    e.insert("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    e.insert("OMPI_MCA_btl", "self,tcp");
    QStringList mpiArgs = {"-np", QString::number(ranks), "--oversubscribe"};
    for (const QString& kv : env) {
        e.insert(kv.section('=', 0, 0), kv.section('=', 1));
        mpiArgs << "-x" << kv.section('=', 0, 0);
    }
    process.setProcessEnvironment(e);
    process.start(QStringLiteral(MYELIN_MPIEXEC),
                  mpiArgs + QStringList{QStringLiteral(MYELIN_CLI_PATH), "train"} + args);
    CliResult r;
    if (!process.waitForFinished(50000)) {
        process.kill();
        process.waitForFinished();
        r.err = "mpirun did not finish within 50 s (a hang)";
        return r;
    }
    r.exitCode = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
    r.out = QString::fromUtf8(process.readAllStandardOutput());
    r.err = QString::fromUtf8(process.readAllStandardError());
    return r;
}

std::vector<store::MetricSample> series(const QString& store, int64_t run, const char* key) {
    return store::RunStore::open(store.toStdString()).metric_series(run, key);
}

} // namespace

class TestDistMpi : public QObject {
    Q_OBJECT

  private slots:
    void init() {
        if (QByteArray(MYELIN_MPIEXEC).isEmpty())
            QSKIP("Open MPI not found at configure time (install libopenmpi-dev openmpi-bin)");
    }
    void twoRanksReproduceOneRankWithTheGlobalBatch();
    void overlapMatchesAveragingAfterBackward();
    void failingRankFailsTheRun();
    void killedRankFailsTheRun();
    void resumeWithAnotherWorldSize();
    void distCheckNamesTheDivergedTensor();
    void badDistModeIsAUsageError();
};

void TestDistMpi::twoRanksReproduceOneRankWithTheGlobalBatch() {
    QTemporaryDir one, two;
    const QString p128 = writeProject(one.path(), 128, 4), p64 = writeProject(two.path(), 64, 4);
    QVERIFY(!p128.isEmpty() && !p64.isEmpty());
    const QStringList common = {"--threads", "1", "--max-steps", "50"};
    const CliResult a =
        runCliProcess(QStringList{"train", p128, "--store", one.filePath("s.db")} + common, 50000);
    QVERIFY2(a.exitCode == 3, qPrintable(a.err)); // stopped by --max-steps
    const CliResult b = runRanks(2, QStringList{p64, "--store", two.filePath("s.db")} + common);
    QVERIFY2(b.exitCode == 3, qPrintable(b.out + b.err));
    QVERIFY2(b.out.contains("global batch 64 x 2 = 128"), qPrintable(b.out));

    const auto la = series(one.filePath("s.db"), 1, "loss");
    const auto lb = series(two.filePath("s.db"), 1, "loss");
    QCOMPARE(la.size(), size_t(50));
    QCOMPARE(lb.size(), size_t(50));
    for (size_t i = 0; i < la.size(); ++i) {
        QCOMPARE(lb[i].step, la[i].step);
        const double rel = std::abs(la[i].value - lb[i].value) / std::abs(la[i].value);
        QVERIFY2(rel < 1e-5, qPrintable(QString("step %1: %2 vs %3")
                                            .arg(la[i].step)
                                            .arg(la[i].value, 0, 'g', 12)
                                            .arg(lb[i].value, 0, 'g', 12)));
    }
    // The epochs' training metrics are the ranks' sums: the same as one rank's.
    for (const char* key : {"train_loss", "train_accuracy", "val_loss"}) {
        const auto ea = series(one.filePath("s.db"), 1, key);
        const auto eb = series(two.filePath("s.db"), 1, key);
        QCOMPARE(ea.size(), size_t(2)); // epochs end at steps 18 and 36
        QCOMPARE(eb.size(), ea.size());
        for (size_t i = 0; i < ea.size(); ++i)
            QVERIFY2(std::abs(ea[i].value - eb[i].value) <= 1e-5 * std::abs(ea[i].value),
                     qPrintable(QString("%1 at step %2: %3 vs %4")
                                    .arg(key)
                                    .arg(ea[i].step)
                                    .arg(ea[i].value)
                                    .arg(eb[i].value)));
    }
    const auto params = store::RunStore::open(two.filePath("s.db").toStdString()).params(1);
    QCOMPARE(params.at("dist.world_size"), std::string("2"));
    QCOMPARE(params.at("dist.global_batch"), std::string("128"));
    QVERIFY(params.at("dist.backend").rfind("mpi", 0) == 0);
    QVERIFY(params.count("dist.hosts"));
}

void TestDistMpi::overlapMatchesAveragingAfterBackward() {
    // One bucket per parameter (4), started from the gradient hooks during backward, against
    // all four started after backward: the same averages, bit for bit.
    QTemporaryDir dir;
    const QString project = writeProject(dir.path(), 64, 1);
    const QStringList common = {"--threads", "1", "--max-steps", "12", "--bucket-mb", "0.0001"};
    const CliResult a = runRanks(2, QStringList{project, "--store", dir.filePath("a.db")} + common);
    QVERIFY2(a.exitCode == 3, qPrintable(a.out + a.err));
    QVERIFY2(a.out.contains("averaged in 4 bucket(s) per step, overlapping backward"),
             qPrintable(a.out));
    QVERIFY2(a.out.contains("48 of 48 bucket allreduces started during backward"),
             qPrintable(a.out));
    const CliResult b = runRanks(
        2, QStringList{project, "--store", dir.filePath("b.db"), "--dist-no-overlap"} + common);
    QVERIFY2(b.exitCode == 3, qPrintable(b.out + b.err));
    QVERIFY2(b.out.contains("0 of 48 bucket allreduces started during backward"),
             qPrintable(b.out));
    const auto la = series(dir.filePath("a.db"), 1, "loss");
    const auto lb = series(dir.filePath("b.db"), 1, "loss");
    QCOMPARE(la.size(), size_t(12));
    QCOMPARE(lb.size(), la.size());
    for (size_t i = 0; i < la.size(); ++i)
        QCOMPARE(la[i].value, lb[i].value);
}

void TestDistMpi::failingRankFailsTheRun() {
    QTemporaryDir dir;
    const QString project = writeProject(dir.path(), 64, 2);
    const CliResult r = runRanks(2, {project, "--store", dir.filePath("s.db"), "--threads", "1"},
                                 {"MYELIN_TEST_DIST_FAULT=1:5:throw"});
    QVERIFY2(r.exitCode > 0, qPrintable(r.out + r.err)); // ended, not hung
    QVERIFY2(r.err.contains("training failed: rank 1 failed: injected failure"), qPrintable(r.err));
    const auto run = store::RunStore::open(dir.filePath("s.db").toStdString()).run(1);
    QCOMPARE(run.status, store::RunStatus::Failed);
    QVERIFY2(run.error.find("rank 1 failed") != std::string::npos, run.error.c_str());
}

void TestDistMpi::killedRankFailsTheRun() {
    QTemporaryDir dir;
    const QString project = writeProject(dir.path(), 64, 2);
    const CliResult r = runRanks(2, {project, "--store", dir.filePath("s.db"), "--threads", "1"},
                                 {"MYELIN_TEST_DIST_FAULT=1:5:kill"});
    QVERIFY2(r.exitCode != 0, qPrintable(r.out + r.err));
    QVERIFY2(!r.err.contains("did not finish"), qPrintable(r.err));
    // mpirun terminates rank 0, whose SIGTERM handler fails its wait: the run is failed, and
    // not a stop (Ctrl-C to mpirun also SIGTERMs the ranks), since rank 1's process is gone.
    // Open MPI may instead hold rank 0 in a reconnect to the dead peer until mpirun's SIGKILL,
    // 1 s later: then the store's open-time check of dead processes marks the run interrupted.
    const auto run = store::RunStore::open(dir.filePath("s.db").toStdString()).run(1);
    const bool failedNamingRank = run.status == store::RunStatus::Failed &&
                                  run.error.find("rank 1 (") != std::string::npos &&
                                  run.error.find("is gone: it died") != std::string::npos;
    const bool killedAndFoundDead =
        run.status == store::RunStatus::Interrupted &&
        run.error.find("ended without finishing the run") != std::string::npos;
    QVERIFY2(
        failedNamingRank || killedAndFoundDead,
        qPrintable(
            QString("status %1: %2").arg(int(run.status)).arg(QString::fromStdString(run.error))));
}

void TestDistMpi::resumeWithAnotherWorldSize() {
    QTemporaryDir dir;
    const QString project = writeProject(dir.path(), 64, 2);
    const QString store = dir.filePath("s.db");
    const CliResult a =
        runRanks(2, {project, "--store", store, "--threads", "1", "--max-steps", "5"});
    QVERIFY2(a.exitCode == 3, qPrintable(a.out + a.err));
    // 5 steps of 2 ranks = 10 batches of 64 into epoch 1; alone, 36 batches per epoch.
    const CliResult b = runCliProcess(
        {"train", project, "--store", store, "--threads", "1", "--resume", "1"}, 50000);
    QVERIFY2(b.exitCode == 0, qPrintable(b.out + b.err));
    QVERIFY2(b.out.contains("the checkpoint was written by 2 rank(s), this run has 1: the epoch "
                            "goes on at batch 10 of each rank, 640 examples"),
             qPrintable(b.out));
    QVERIFY2(b.out.contains("finished run 2 after 67 steps"), qPrintable(b.out)); // 5 + 26 + 36
    const auto losses = series(store, 2, "loss");
    QCOMPARE(losses.size(), size_t(62));
    QCOMPARE(losses.front().step, int64_t(6));
}

void TestDistMpi::distCheckNamesTheDivergedTensor() {
    QTemporaryDir dir;
    const QString project = writeProject(dir.path(), 64, 1);
    const CliResult r = runRanks(
        2, {project, "--store", dir.filePath("s.db"), "--threads", "1", "--dist-check", "3"},
        {"MYELIN_TEST_DIST_FAULT=1:6:perturb"});
    QVERIFY2(r.exitCode > 0, qPrintable(r.out + r.err));
    QVERIFY2(r.err.contains("--dist-check: after step 6 'fc1.weight' differs between ranks"),
             qPrintable(r.err));
}

void TestDistMpi::badDistModeIsAUsageError() {
    QTemporaryDir dir;
    const QString project = writeProject(dir.path(), 64, 1);
    const CliResult r = runCliProcess({"train", project, "--dist", "nccl"}, 20000);
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("--dist: expected auto, mpi or none, got 'nccl'"), qPrintable(r.err));
}

QTEST_GUILESS_MAIN(TestDistMpi)
#include "test_dist_mpi.moc"
