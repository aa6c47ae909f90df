// `myelin train --events jsonl` and `--stop-file` (issue 19, what the studio's multi-process runs
// use): every JSON line on stdout parses back into an event, the run's id comes first and its end
// last; a stop file stops one process, and stops 2 MPI ranks at the same step with the run
// "stopped" in the store (skipped where CMake found no Open MPI).
#include "blobs_project.h"
#include "cli_process.h"

#include <myelin/store/run_store.h>
#include <myelin/train/event_lines.h>

#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace myelin;

namespace {

constexpr int kTimeoutMs = 60000;

struct Lines {
    std::vector<train::EventLine> events; // in order
    QString plain;                        // everything that is not an event line
};

Lines parseOutput(const QString& out) {
    Lines lines;
    for (const QString& line : out.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
        const QByteArray utf8 = line.toUtf8();
        auto parsed =
            train::parse_event_line(std::string_view(utf8.constData(), size_t(utf8.size())));
        if (parsed)
            lines.events.push_back(std::move(*parsed));
        else
            lines.plain += line + QLatin1Char('\n');
    }
    return lines;
}

template <typename P> int countOf(const Lines& lines) {
    int n = 0;
    for (const auto& l : lines.events)
        n += l.event && l.event->get<P>() ? 1 : 0;
    return n;
}

// Starts `program args`, creates `stopFile` once a StepMetrics line has arrived, and waits for
// the end; the collected output and exit code.
CliResult runAndStop(const QString& program, const QStringList& args, const QString& stopFile) {
    QProcess process;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("OMPI_ALLOW_RUN_AS_ROOT", "1");
    env.insert("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    env.insert("OMPI_MCA_btl", "self,tcp");
    process.setProcessEnvironment(env);
    process.start(program, args);
    CliResult r;
    QByteArray out;
    QElapsedTimer clock;
    clock.start();
    while (!out.contains("\"event\":\"StepMetrics\"") && clock.elapsed() < kTimeoutMs &&
           process.state() != QProcess::NotRunning) {
        process.waitForReadyRead(200);
        out += process.readAllStandardOutput();
    }
    QFile(stopFile).open(QIODevice::WriteOnly);
    if (!process.waitForFinished(kTimeoutMs)) {
        process.kill();
        process.waitForFinished();
        r.err = QStringLiteral("did not finish after the stop file was made");
        return r;
    }
    out += process.readAllStandardOutput();
    r.exitCode = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
    r.out = QString::fromUtf8(out);
    r.err = QString::fromUtf8(process.readAllStandardError());
    return r;
}

} // namespace

class TestCliEvents : public QObject {
    Q_OBJECT

  private slots:
    void everyLineIsAnEventFromCreationToTheEnd();
    void badEventFormatIsAUsageError();
    void stopFileStopsOneProcess();
    void stopFileStopsEveryRank();
};

void TestCliEvents::everyLineIsAnEventFromCreationToTheEnd() {
    QTemporaryDir dir;
    const QString project = test::writeBlobsProject(dir.path(), 2, 600);
    const QString store = dir.filePath("s.db");
    const CliResult r = runCliProcess(
        {"train", project, "--store", store, "--threads", "1", "--events", "jsonl"}, kTimeoutMs);
    QVERIFY2(r.exitCode == 0, qPrintable(r.out + r.err));
    const Lines lines = parseOutput(r.out);
    QVERIFY(lines.events.size() > 10);
    // The run first (the CLI writes it as soon as the run exists), the end last.
    QVERIFY(lines.events.front().run);
    QCOMPARE(lines.events.front().run->run_id, int64_t(1));
    QCOMPARE(QString::fromStdString(lines.events.front().run->store_path), store);
    const auto& last = lines.events.back();
    QVERIFY(last.event && last.event->get<train::Finished>());
    QCOMPARE(int(last.event->get<train::Finished>()->status), int(train::RunStatus::Finished));
    QCOMPARE(countOf<train::RunStarted>(lines), 1);
    // 432 training rows in batches of 16: 27 steps per epoch, each reported; every epoch too.
    QCOMPARE(countOf<train::StepMetrics>(lines), 2 * 27);
    QCOMPARE(countOf<train::EpochMetrics>(lines), 2);
    QVERIFY(countOf<train::CheckpointSaved>(lines) >= 2);
    // The store has what the lines said.
    auto runs = store::RunStore::open(store.toStdString());
    QCOMPARE(runs.metric_series(1, "loss").size(), size_t(2 * 27));
    // No progress bar or epoch lines among the events; the run's summary lines stay.
    QVERIFY2(!lines.plain.contains("epoch 1/2"), qPrintable(lines.plain));
    QVERIFY2(lines.plain.contains("finished run 1"), qPrintable(lines.plain));
}

void TestCliEvents::badEventFormatIsAUsageError() {
    QTemporaryDir dir;
    const QString project = test::writeBlobsProject(dir.path(), 1, 300);
    const CliResult r = runCliProcess({"train", project, "--events", "xml"}, kTimeoutMs);
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("--events: the one format is 'jsonl', got 'xml'"), qPrintable(r.err));
}

void TestCliEvents::stopFileStopsOneProcess() {
    QTemporaryDir dir;
    const QString project = test::writeBlobsProject(dir.path(), 100000, 600);
    const QString store = dir.filePath("s.db"), stop = dir.filePath("stop");
    const CliResult r = runAndStop(QStringLiteral(MYELIN_CLI_PATH),
                                   {"train", project, "--store", store, "--threads", "1",
                                    "--events", "jsonl", "--stop-file", stop},
                                   stop);
    QVERIFY2(r.exitCode == 3, qPrintable(r.out.right(2000) + r.err));
    const Lines lines = parseOutput(r.out);
    QVERIFY(lines.events.back().event);
    QCOMPARE(int(lines.events.back().event->get<train::Finished>()->status),
             int(train::RunStatus::Stopped));
    QCOMPARE(store::RunStore::open(store.toStdString()).run(1).status, store::RunStatus::Stopped);
}

void TestCliEvents::stopFileStopsEveryRank() {
    if (QByteArray(MYELIN_MPIEXEC).isEmpty())
        QSKIP("Open MPI not found at configure time (install libopenmpi-dev openmpi-bin)");
    QTemporaryDir dir;
    const QString project = test::writeBlobsProject(dir.path(), 100000, 600);
    const QString store = dir.filePath("s.db"), stop = dir.filePath("stop");
    const CliResult r = runAndStop(QStringLiteral(MYELIN_MPIEXEC),
                                   {"-np", "2", "--oversubscribe", QStringLiteral(MYELIN_CLI_PATH),
                                    "train", project, "--store", store, "--threads", "1",
                                    "--events", "jsonl", "--stop-file", stop},
                                   stop);
    QVERIFY2(r.exitCode == 3, qPrintable(r.out.right(2000) + r.err));
    QVERIFY2(!r.err.contains("myelin: "), qPrintable(r.err)); // no rank reported a failure
    const Lines lines = parseOutput(r.out);
    // One rank reports: one run, one start, one end.
    int created = 0;
    for (const auto& l : lines.events)
        created += l.run ? 1 : 0;
    QCOMPARE(created, 1);
    QCOMPARE(countOf<train::RunStarted>(lines), 1);
    QCOMPARE(countOf<train::Finished>(lines), 1);
    const auto* finished = lines.events.back().event->get<train::Finished>();
    QVERIFY(finished);
    QCOMPARE(int(finished->status), int(train::RunStatus::Stopped));
    auto runs = store::RunStore::open(store.toStdString());
    const auto run = runs.run(1);
    QCOMPARE(run.status, store::RunStatus::Stopped);
    QCOMPARE(runs.params(1).at("dist.world_size"), std::string("2"));
    // The stop's checkpoint is at the step the run ended.
    bool atTheEnd = false;
    for (const auto& artifact : runs.artifacts(1))
        atTheEnd = atTheEnd || artifact.step == finished->step;
    QVERIFY(atTheEnd);
}

QTEST_GUILESS_MAIN(TestCliEvents)
#include "test_cli_events.moc"
