// Run store: schema and reopen, write/read round trips, downsampling against brute force, latest
// metrics, CSV export, deletion of rows and files, crash detection (dead pid, killed writer
// process), concurrent writers (two stores, a child process), locked and malformed files.
#include <myelin/error.h>
#include <myelin/store/run_store.h>

#include <QTemporaryDir>
#include <QtTest>

#include "test_support.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace myelin;
using namespace myelin::store;
namespace fs = std::filesystem;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void write_file(const fs::path& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary);
    f.write(bytes.data(), std::streamsize(bytes.size()));
}

std::string read_file(const fs::path& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// A plain SQLite connection: the "other program" of the locking and malformed-file tests.
class RawDb {
  public:
    explicit RawDb(const fs::path& path) { sqlite3_open(path.c_str(), &db_); }
    ~RawDb() { sqlite3_close(db_); }
    int exec(const std::string& sql) {
        return sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
    }
    int64_t integer(const std::string& sql) {
        sqlite3_stmt* s = nullptr;
        sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr);
        int64_t v = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
        sqlite3_finalize(s);
        return v;
    }
    std::string text(const std::string& sql) {
        sqlite3_stmt* s = nullptr;
        sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr);
        std::string v;
        if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
            v = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
        sqlite3_finalize(s);
        return v;
    }

  private:
    sqlite3* db_ = nullptr;
};

// Starts this test executable again in one of the child modes of main() below.
pid_t spawn_self(std::vector<std::string> args, int* stdout_fd = nullptr) {
    // Everything is allocated before fork: the child only calls async-signal-safe functions.
    std::vector<char*> argv{const_cast<char*>("test_store")};
    for (auto& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    int fds[2] = {-1, -1};
    if (stdout_fd && pipe(fds) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        if (stdout_fd) {
            dup2(fds[1], STDOUT_FILENO);
            close(fds[0]);
            close(fds[1]);
        }
        execv("/proc/self/exe", argv.data());
        _exit(127);
    }
    if (stdout_fd) {
        close(fds[1]);
        *stdout_fd = fds[0];
    }
    return pid;
}

int wait_exit_code(pid_t pid) {
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The pid of a process that has certainly ended (and been reaped).
int64_t dead_pid() {
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/true", "true", static_cast<char*>(nullptr));
        _exit(0);
    }
    waitpid(pid, nullptr, 0);
    return pid;
}

RunInfo named(const std::string& name) {
    RunInfo info;
    info.name = name;
    return info;
}

// Brute-force reference for one bucket.
struct Expected {
    int64_t count = 0, first_step = 0, last_step = 0;
    double min = kNaN, max = kNaN, first = 0, last = 0;
};

// Turns a store of this build back into one of schema version 3 (before notes, tags and
// project paths): what the migration tests of older versions start from.
constexpr const char* kBackToVersion3 =
    "DROP TABLE time_gradients; ALTER TABLE runs DROP COLUMN note; ALTER TABLE runs "
    "DROP COLUMN project_path; DROP TABLE run_tags; ";

bool same(double a, double b) {
    return (std::isnan(a) && std::isnan(b)) || a == b;
}

} // namespace

class TestStore : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    fs::path file(const std::string& name) const {
        return fs::path(dir_.path().toStdString()) / name;
    }

  private slots:
    void sha256MatchesKnownVectors() {
        write_file(file("empty"), "");
        QCOMPARE(sha256_file(file("empty")),
                 std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
        write_file(file("abc"), "abc");
        QCOMPARE(sha256_file(file("abc")),
                 std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
        write_file(file("448"), "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq");
        QCOMPARE(sha256_file(file("448")),
                 std::string("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
        write_file(file("million"), std::string(1000000, 'a'));
        QCOMPARE(sha256_file(file("million")),
                 std::string("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
        QVERIFY(error_of<StoreError>([&] { sha256_file(file("missing")); }).contains("missing"));
    }

    void defaultPathFollowsXdg() {
        QByteArray old_xdg = qgetenv("XDG_DATA_HOME"), old_home = qgetenv("HOME");
        qputenv("XDG_DATA_HOME", "/data/xdg");
        QCOMPARE(default_store_path(), fs::path("/data/xdg/myelin/runs.sqlite"));
        qunsetenv("XDG_DATA_HOME");
        qputenv("HOME", "/home/someone");
        QCOMPARE(default_store_path(), fs::path("/home/someone/.local/share/myelin/runs.sqlite"));
        qputenv("XDG_DATA_HOME", "relative/ignored");
        QCOMPARE(default_store_path(), fs::path("/home/someone/.local/share/myelin/runs.sqlite"));
        if (old_xdg.isNull())
            qunsetenv("XDG_DATA_HOME");
        else
            qputenv("XDG_DATA_HOME", old_xdg);
        qputenv("HOME", old_home);
    }

    void schemaIsCreatedAndReopened() {
        fs::path path = file("nested/deeper/runs.sqlite");
        int64_t id = 0;
        {
            RunStore store = RunStore::open(path); // creates the folders
            QCOMPARE(store.path(), path);
            id = store.create_run(named("first"));
        }
        {
            RawDb raw(path);
            QCOMPARE(raw.integer("PRAGMA user_version"), int64_t(kSchemaVersion));
            QCOMPARE(raw.integer("PRAGMA application_id"), int64_t(0x4D594C4E));
            QCOMPARE(raw.text("PRAGMA journal_mode"), std::string("wal"));
            for (const char* table :
                 {"runs", "params", "metrics", "latest_metrics", "histograms", "artifacts",
                  "metric_summaries", "events", "feature_maps", "run_tags"})
                QVERIFY2(raw.integer(std::string("SELECT count(*) FROM sqlite_schema WHERE "
                                                 "type = 'table' AND name = '") +
                                     table + "'") == 1,
                         table);
        }
        RunStore again = RunStore::open(path);
        QCOMPARE(again.run(id).name, std::string("first"));
        int64_t second = again.create_run(named("second"));
        QVERIFY(second > id);
        QCOMPARE(again.list_runs().size(), size_t(2));
        QCOMPARE(again.list_runs().front().run.id, second); // newest first
    }

    void roundTrip() {
        RunStore store = RunStore::open(file("roundtrip.sqlite"));
        RunInfo info;
        info.name = "mlp";
        info.project_json = R"({"format_version": 1})";
        info.device = "cpu";
        info.threads = 4;
        int64_t parent = store.create_run(named("parent"));
        info.parent_run = parent;
        info.parent_checkpoint = file("parent.safetensors").string();
        int64_t id = store.create_run(info);

        store.set_params(id, {{"lr", "0.001"}, {"batch_size", "128"}});
        store.set_params(id, {{"lr", "0.01"}}); // replaces
        for (int step = 0; step < 100; ++step) {
            store.log_metric(id, "train/loss", step, 1.0 / (step + 1), 1000.0 + step);
            if (step % 10 == 0) store.log_metric(id, "val/acc", step, step / 100.0, 2000.0 + step);
        }
        store.log_metric(id, "train/loss", 50, kNaN, 1050.0); // NaN replaces step 50
        store.log_metric(id, "inf", 0, std::numeric_limits<double>::infinity());
        std::vector<double> counts{1, 2, 3, 4};
        store.log_histogram(id, "act/fc1", 10, -1.0, 1.0, counts, 3000.0);
        store.log_histogram(id, "act/fc1", 20, -2.0, 2.0, std::vector<double>{5, 6}, 3001.0);
        write_file(file("ckpt.safetensors"), "abc");
        int64_t artifact = store.add_artifact(
            id, {"checkpoint", file("ckpt.safetensors"), 99, R"({"epoch": 1})", ""});
        store.finish_run(id, RunStatus::Finished);

        Run r = store.run(id);
        QCOMPARE(r.name, std::string("mlp"));
        QVERIFY(r.status == RunStatus::Finished);
        QCOMPARE(r.project_json, info.project_json);
        QCOMPARE(r.parent_run, std::optional<int64_t>(parent));
        QCOMPARE(r.parent_checkpoint, info.parent_checkpoint);
        QCOMPARE(r.device, std::string("cpu"));
        QCOMPARE(r.threads, 4);
        QCOMPARE(r.pid, int64_t(getpid()));
        QVERIFY(!r.host.empty());
        QVERIFY(r.ended_at && *r.ended_at >= r.started_at);

        auto params = store.params(id);
        QCOMPARE(params.size(), size_t(2));
        QCOMPARE(params["lr"], std::string("0.01"));

        QCOMPARE(store.metric_keys(id), (std::vector<std::string>{"inf", "train/loss", "val/acc"}));
        auto loss = store.metric_series(id, "train/loss");
        QCOMPARE(loss.size(), size_t(100));
        QCOMPARE(loss[3].step, int64_t(3));
        QCOMPARE(loss[3].value, 0.25);
        QCOMPARE(loss[3].wall_time, 1003.0);
        QVERIFY(std::isnan(loss[50].value));
        auto part = store.metric_series(id, "val/acc", {20, 40});
        QCOMPARE(part.size(), size_t(3));
        QCOMPARE(part.front().step, int64_t(20));
        QCOMPARE(part.back().value, 0.4);
        QVERIFY(std::isinf(store.metric_series(id, "inf").at(0).value));
        QVERIFY(store.metric_series(id, "no such key").empty());
        QVERIFY(store.metric_series(id, "inf").at(0).wall_time > 1.6e9); // defaulted to now

        QCOMPARE(store.histogram_keys(id), std::vector<std::string>{"act/fc1"});
        auto hist = store.histogram_series(id, "act/fc1");
        QCOMPARE(hist.size(), size_t(2));
        QCOMPARE(hist[0].counts, counts);
        QCOMPARE(hist[0].min, -1.0);
        QCOMPARE(hist[1].max, 2.0);
        QCOMPARE(hist[1].wall_time, 3001.0);
        QCOMPARE(store.histogram_series(id, "act/fc1", {15, 100}).size(), size_t(1));

        auto arts = store.artifacts(id);
        QCOMPARE(arts.size(), size_t(1));
        QCOMPARE(arts[0].id, artifact);
        QCOMPARE(arts[0].kind, std::string("checkpoint"));
        QCOMPARE(arts[0].path, file("ckpt.safetensors"));
        QCOMPARE(arts[0].sha256,
                 std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
        QCOMPARE(arts[0].step, int64_t(99));
        QCOMPARE(arts[0].metadata_json, std::string(R"({"epoch": 1})"));
    }

    void latestMetricsFollowTheHighestStep() {
        RunStore store = RunStore::open(file("latest.sqlite"));
        int64_t a = store.create_run(named("a"));
        int64_t b = store.create_run(named("b"));
        store.log_metric(a, "loss", 5, 0.5);
        store.log_metric(a, "loss", 10, 0.1);
        store.flush(); // separate batches: the upsert must not go backwards
        store.log_metric(a, "loss", 3, 0.9);
        store.log_metric(a, "acc", 7, 0.7);
        store.log_metric(b, "loss", 1, 2.0);
        auto latest = store.latest_metrics(a);
        QCOMPARE(latest.size(), size_t(2));
        QCOMPARE(latest[0].key, std::string("acc"));
        QCOMPARE(latest[1].key, std::string("loss"));
        QCOMPARE(latest[1].step, int64_t(10));
        QCOMPARE(latest[1].value, 0.1);
        store.log_metric(a, "loss", 10, 0.05); // replacing the latest point updates it
        QCOMPARE(store.latest_metrics(a)[1].value, 0.05);

        auto runs = store.list_runs();
        QCOMPARE(runs.size(), size_t(2));
        QCOMPARE(runs[0].run.id, b);
        QCOMPARE(runs[0].latest_metrics.size(), size_t(1));
        QCOMPARE(runs[0].latest_metrics[0].value, 2.0);
        QCOMPARE(runs[1].latest_metrics.size(), size_t(2));
        QVERIFY(runs[1].run.project_json.empty()); // list_runs leaves snapshots out
    }

    // Buckets from metric_series_downsampled equal a brute-force pass over the raw points with
    // the same boundaries, at every summary level, with gaps, NaNs, a spike and rewritten steps.
    void downsamplingMatchesBruteForce() {
        StoreOptions options;
        options.batch_points = 1000; // many batches: summaries updated incrementally
        RunStore store = RunStore::open(file("downsample.sqlite"), options);
        int64_t id = store.create_run(named("long"));
        std::mt19937_64 rng(7);
        std::map<int64_t, double> truth;
        std::vector<MetricPoint> points;
        int64_t step = 0;
        while (step < 2'000'000) {
            // Occasional gaps after step 10000 (dense before, for the point-wise check below).
            step += 1 + (step > 10000 && rng() % 100 == 0 ? int64_t(rng() % 5000) : 0);
            double v = std::sin(step * 1e-4) + double(rng() % 1000) * 1e-4;
            if (rng() % 997 == 0) v = kNaN;
            points.push_back({id, "loss", step, v, 1.0});
            truth[step] = v;
        }
        truth[123457] = 1e6; // a spike must survive
        points.push_back({id, "loss", 123457, 1e6, 1.0});
        // Rewrite a few early steps after later ones were written.
        for (int i = 0; i < 50; ++i) {
            int64_t s = points[size_t(rng() % points.size())].step;
            truth[s] = -5.0 - i;
            points.push_back({id, "loss", s, -5.0 - i, 1.0});
        }
        store.log_metrics(points);
        // An unrelated series must not leak in.
        store.log_metric(id, "other", 500, 1e9);

        std::vector<MetricBucket> got; // of the last check
        auto check = [&](StepRange range, int buckets) {
            got = store.metric_series_downsampled(id, "loss", range, buckets);
            QVERIFY2(!got.empty(),
                     qPrintable(QString("range %1..%2").arg(range.first).arg(range.last)));
            QVERIFY(int(got.size()) <= buckets);
            int64_t total = 0;
            for (size_t i = 0; i < got.size(); ++i) {
                const MetricBucket& b = got[i];
                QVERIFY(b.begin_step <= b.end_step);
                if (i > 0) QVERIFY(b.begin_step > got[i - 1].end_step);
                Expected e;
                for (auto it = truth.lower_bound(b.begin_step);
                     it != truth.end() && it->first <= b.end_step; ++it) {
                    if (it->first < range.first || it->first > range.last) continue;
                    if (e.count == 0) {
                        e.first_step = it->first;
                        e.first = it->second;
                    }
                    e.last_step = it->first;
                    e.last = it->second;
                    ++e.count;
                    if (!std::isnan(it->second)) {
                        if (std::isnan(e.min) || it->second < e.min) e.min = it->second;
                        if (std::isnan(e.max) || it->second > e.max) e.max = it->second;
                    }
                }
                QCOMPARE(b.count, e.count);
                QCOMPARE(b.first_step, e.first_step);
                QCOMPARE(b.last_step, e.last_step);
                QVERIFY(same(b.min, e.min));
                QVERIFY(same(b.max, e.max));
                QVERIFY(same(b.first, e.first));
                QVERIFY(same(b.last, e.last));
                total += b.count;
            }
            int64_t expected_total = 0;
            for (auto it = truth.lower_bound(range.first);
                 it != truth.end() && it->first <= range.last; ++it)
                ++expected_total;
            QCOMPARE(total, expected_total); // no point lost between buckets
        };
        // ~2M steps: the bucket count picks the summary level (block 4^level <= width / 4).
        check({}, 2000); // level 3 (64-step blocks)
        bool spike = false;
        for (auto& b : got)
            spike = spike || b.max == 1e6;
        QVERIFY(spike);
        struct Case {
            StepRange range;
            int buckets;
        };
        const Case cases[] = {
            {{}, 100000},             // level 1
            {{}, 25000},              // level 2
            {{}, 900},                // level 4
            {{}, 200},                // level 5
            {{}, 60},                 // level 6
            {{}, 20},                 // level 7
            {{}, 7},                  // level 8
            {{1000, 1200}, 2000},     // points, one per bucket
            {{777, 1'234'567}, 333},  // ragged ends read point-wise
            {{5, 9'000'000'000}, 50}, // a range beyond the data
            {{0, 100}, 1},            // one bucket
        };
        for (const Case& c : cases) {
            check(c.range, c.buckets);
            if (QTest::currentTestFailed()) return; // one report, not one per bucket
        }
        QVERIFY(store.metric_series_downsampled(id, "loss", {3'000'000, 4'000'000}, 10).empty());
        QVERIFY(error_of<StoreError>([&] {
                    store.metric_series_downsampled(id, "loss", {}, 0);
                }).contains("at least one bucket"));
    }

    void csvExport() {
        RunStore store = RunStore::open(file("csv.sqlite"));
        int64_t id = store.create_run(named("csv"));
        store.log_metric(id, "loss", 0, 1.5, 100.0);
        store.log_metric(id, "loss", 1, 0.25, 101.0);
        store.log_metric(id, "loss", 2, kNaN, 102.5);
        store.log_metric(id, "a,\"quoted\"", 1, 0.1, 103.0);
        store.export_metrics_csv(id, file("long.csv"));
        QCOMPARE(read_file(file("long.csv")), std::string("key,step,wall_time,value\r\n"
                                                          "\"a,\"\"quoted\"\"\",1,103,0.1\r\n"
                                                          "loss,0,100,1.5\r\n"
                                                          "loss,1,101,0.25\r\n"
                                                          "loss,2,102.5,nan\r\n"));
        store.export_metrics_csv(id, file("wide.csv"), CsvLayout::Wide);
        QCOMPARE(read_file(file("wide.csv")), std::string("step,\"a,\"\"quoted\"\"\",loss\r\n"
                                                          "0,,1.5\r\n"
                                                          "1,0.1,0.25\r\n"
                                                          "2,,nan\r\n"));
        QVERIFY(error_of<StoreError>([&] {
                    store.export_metrics_csv(999, file("x.csv"));
                }).contains("run 999 does not exist"));
        QVERIFY(!fs::exists(file("x.csv")));
        QVERIFY(error_of<StoreError>([&] {
                    store.export_metrics_csv(id, file("no/such/folder/x.csv"));
                }).contains("no/such/folder/x.csv"));
    }

    void deleteRemovesRowsAndOnlyItsFiles() {
        fs::path path = file("delete/runs.sqlite");
        RunStore store = RunStore::open(path);
        int64_t doomed = store.create_run(named("doomed"));
        int64_t other = store.create_run(named("other"));
        store.set_params(doomed, {{"lr", "1"}});
        for (int s = 0; s < 5000; ++s)
            store.log_metric(doomed, "loss", s, s);
        store.log_histogram(doomed, "h", 1, 0, 1, std::vector<double>{1});
        store.log_metric(other, "loss", 1, 1);

        fs::path folder = store.artifact_folder(doomed);
        QCOMPARE(folder, file("delete/runs") / std::to_string(doomed));
        fs::create_directories(folder / "checkpoints");
        write_file(folder / "checkpoints/best.safetensors", "best");
        write_file(folder / "notes.txt", "unlisted but in the run folder");
        fs::path outside = file("outside");
        fs::create_directories(outside);
        write_file(outside / "exported.onnx", "onnx");
        write_file(outside / "shared.safetensors", "shared");
        write_file(outside / "changed.safetensors", "before");
        write_file(outside / "bystander.txt", "not listed anywhere");
        write_file(outside / "now-a-folder", "replaced by a folder below");
        store.add_artifact(doomed,
                           {"checkpoint", folder / "checkpoints/best.safetensors", 1, "{}", ""});
        store.add_artifact(doomed, {"onnx", outside / "exported.onnx", 1, "{}", ""});
        store.add_artifact(doomed, {"checkpoint", outside / "shared.safetensors", 1, "{}", ""});
        store.add_artifact(other, {"checkpoint", outside / "shared.safetensors", 1, "{}", ""});
        store.add_artifact(doomed, {"checkpoint", outside / "changed.safetensors", 1, "{}", ""});
        store.add_artifact(doomed, {"checkpoint", outside / "now-a-folder", 1, "{}", "abc"});
        write_file(outside / "changed.safetensors", "after: another file now");
        fs::remove(outside / "now-a-folder");
        fs::create_directories(outside / "now-a-folder");

        QVERIFY(error_of<StoreError>([&] { store.delete_run(doomed); }).contains("still running"));
        store.finish_run(doomed, RunStatus::Stopped);
        DeleteResult result = store.delete_run(doomed);

        QVERIFY(!fs::exists(folder));
        QVERIFY(!fs::exists(outside / "exported.onnx"));
        QVERIFY(fs::exists(outside / "shared.safetensors"));
        QVERIFY(fs::exists(outside / "changed.safetensors"));
        QVERIFY(fs::exists(outside / "bystander.txt"));
        QVERIFY(fs::exists(path));
        QCOMPARE(result.removed_files.size(), size_t(3));
        QCOMPARE(result.kept_files.size(), size_t(3));
        auto kept = [&](const std::string& what) {
            return std::any_of(
                result.kept_files.begin(), result.kept_files.end(),
                [&](const std::string& k) { return k.find(what) != std::string::npos; });
        };
        QVERIFY(kept("shared.safetensors: another run lists it"));
        QVERIFY(kept("changed.safetensors: its contents changed"));
        QVERIFY(kept("not a regular file"));

        QVERIFY(error_of<StoreError>([&] { store.run(doomed); }).contains("does not exist"));
        QVERIFY(store.metric_series(doomed, "loss").empty());
        QVERIFY(store.params(doomed).empty());
        QVERIFY(store.artifacts(doomed).empty());
        QVERIFY(store.histogram_series(doomed, "h").empty());
        QCOMPARE(store.list_runs().size(), size_t(1));
        QCOMPARE(store.metric_series(other, "loss").size(), size_t(1));
        QCOMPARE(store.artifacts(other).size(), size_t(1));
        RawDb raw(path);
        for (const char* table :
             {"metrics", "latest_metrics", "metric_summaries", "histograms", "params", "artifacts"})
            QVERIFY2(raw.integer(std::string("SELECT count(*) FROM ") + table +
                                 " WHERE run = " + std::to_string(doomed)) == 0,
                     table);
        // Ids are never reused, so a new run cannot inherit the deleted run's folder.
        QVERIFY(store.create_run(named("new")) > other);
    }

    void deadProcessRunsBecomeInterrupted() {
        fs::path path = file("crash.sqlite");
        int64_t dead = 0, alive = 0, remote = 0;
        const int64_t pid = dead_pid();
        {
            StoreOptions options;
            options.mark_interrupted_at_open = false;
            RunStore store = RunStore::open(path, options);
            RunInfo info = named("dead");
            info.pid = pid;
            dead = store.create_run(info);
            store.log_metric(dead, "loss", 7, 0.5, 12345.0);
            alive = store.create_run(named("alive")); // this process
            RunInfo elsewhere = named("remote");
            elsewhere.host = "some-other-host.example";
            elsewhere.pid = pid;
            remote = store.create_run(elsewhere);
            store.flush();
            QVERIFY(store.run(dead).status == RunStatus::Running);
        }
        RunStore store = RunStore::open(path);
        Run r = store.run(dead);
        QVERIFY(r.status == RunStatus::Interrupted);
        QVERIFY(r.error.find("process " + std::to_string(pid)) != std::string::npos);
        QVERIFY(r.ended_at.has_value());
        QCOMPARE(*r.ended_at, std::max(12345.0, r.started_at));
        QVERIFY(store.run(alive).status == RunStatus::Running);
        QVERIFY(store.run(remote).status == RunStatus::Running); // cannot tell: left alone
        QVERIFY(store.mark_interrupted_runs().empty());
    }

    // kill -9 of a process in the middle of writing: the store opens, its committed points are
    // there, and the run is marked interrupted.
    void killedWriterProcessLeavesInterruptedRun() {
        fs::path path = file("killed.sqlite");
        int out = -1;
        pid_t child = spawn_self({"--child-hang", path.string()}, &out);
        QVERIFY(child > 0);
        char buffer[64] = {};
        ssize_t got = 0;
        while (got < ssize_t(sizeof buffer) - 1) {
            ssize_t n = read(out, buffer + got, sizeof buffer - 1 - size_t(got));
            if (n <= 0 || std::memchr(buffer, '\n', size_t(got + n))) {
                got += n > 0 ? n : 0;
                break;
            }
            got += n;
        }
        close(out);
        int64_t id = std::atoll(buffer);
        QVERIFY2(id > 0, buffer);
        kill(child, SIGKILL);
        waitpid(child, nullptr, 0);
        RunStore store = RunStore::open(path);
        QVERIFY(store.run(id).status == RunStatus::Interrupted);
        QCOMPARE(store.metric_series(id, "loss").size(), size_t(100));
    }

    void twoStoresWriteConcurrently() {
        fs::path path = file("concurrent.sqlite");
        StoreOptions options;
        options.batch_points = 256; // many small transactions competing for the write lock
        RunStore a = RunStore::open(path, options);
        RunStore b = RunStore::open(path, options);
        int64_t run_a = a.create_run(named("a"));
        int64_t run_b = b.create_run(named("b"));
        const int n = 10000;
        auto writer = [&](RunStore* store, int64_t run) {
            for (int s = 0; s < n; ++s) {
                store->log_metric(run, "loss", s, s * 0.5);
                store->log_metric(run_a, "shared/" + std::to_string(run), s, s); // same run
            }
            store->flush();
        };
        std::thread ta(writer, &a, run_a), tb(writer, &b, run_b);
        ta.join();
        tb.join();
        RunStore reader = RunStore::open(path);
        QCOMPARE(reader.metric_series(run_a, "loss").size(), size_t(n));
        QCOMPARE(reader.metric_series(run_b, "loss").size(), size_t(n));
        QCOMPARE(reader.metric_series(run_a, "shared/" + std::to_string(run_a)).size(), size_t(n));
        QCOMPARE(reader.metric_series(run_a, "shared/" + std::to_string(run_b)).size(), size_t(n));
        QCOMPARE(reader.metric_series(run_b, "loss").back().value, (n - 1) * 0.5);
    }

    void childProcessWritesConcurrently() {
        fs::path path = file("process.sqlite");
        RunStore store = RunStore::open(path);
        int64_t run = store.create_run(named("shared"));
        const int n = 10000;
        pid_t child = spawn_self({"--child-writer", path.string(), std::to_string(run),
                                  std::to_string(n), "child/loss"});
        QVERIFY(child > 0);
        for (int s = 0; s < n; ++s)
            store.log_metric(run, "parent/loss", s, s);
        store.flush();
        QCOMPARE(wait_exit_code(child), 0);
        QCOMPARE(store.metric_series(run, "parent/loss").size(), size_t(n));
        auto child_series = store.metric_series(run, "child/loss");
        QCOMPARE(child_series.size(), size_t(n));
        QCOMPARE(child_series.back().value, double(n - 1));
    }

    void smallQueueLosesNothing() {
        StoreOptions options;
        options.queue_capacity = 64; // the producer has to wait for the writer
        options.batch_points = 16;
        RunStore store = RunStore::open(file("queue.sqlite"), options);
        int64_t run = store.create_run(named("q"));
        for (int s = 0; s < 5000; ++s)
            store.log_metric(run, "loss", s, s);
        std::vector<MetricPoint> many;
        for (int s = 0; s < 1000; ++s)
            many.push_back({run, "bulk", s, double(s), 0});
        store.log_metrics(many); // larger than the queue: goes in pieces
        store.log_histogram(run, "big", 0, 0, 1, std::vector<double>(4096, 1.0));
        QCOMPARE(store.metric_series(run, "loss").size(), size_t(5000));
        QCOMPARE(store.metric_series(run, "bulk").size(), size_t(1000));
        QCOMPARE(store.histogram_series(run, "big").at(0).counts.size(), size_t(4096));
    }

    void lockedStoreGivesErrorNotHang() {
        fs::path path = file("locked.sqlite");
        int64_t run = 0;
        {
            RunStore setup = RunStore::open(path);
            run = setup.create_run(named("r"));
        }
        StoreOptions options;
        options.busy_timeout = std::chrono::milliseconds(200);
        RunStore store = RunStore::open(path, options);
        RawDb locker(path);
        QCOMPARE(locker.exec("BEGIN EXCLUSIVE"), SQLITE_OK);
        QCOMPARE(locker.exec("UPDATE runs SET name = 'locked' WHERE id = " + std::to_string(run)),
                 SQLITE_OK);

        QString created = error_of<StoreError>([&] { store.create_run(named("blocked")); });
        QVERIFY2(created.contains(QString::fromStdString(path.string())), qPrintable(created));
        QVERIFY2(created.contains("locked by another connection"), qPrintable(created));
        QVERIFY(created.contains("200 ms"));

        store.log_metric(run, "loss", 1, 1.0);
        QString flushed = error_of<StoreError>([&] { store.flush(); });
        QVERIFY2(flushed.contains("locked by another connection"), qPrintable(flushed));
        QVERIFY(flushed.contains("retried"));

        // Reads still work in WAL mode while another connection writes.
        QCOMPARE(store.run(run).name, std::string("r"));

        QCOMPARE(locker.exec("COMMIT"), SQLITE_OK);
        store.flush(); // the kept point is written once the lock is gone
        QCOMPARE(store.metric_series(run, "loss").size(), size_t(1));
        QCOMPARE(store.run(run).name, std::string("locked"));

        // A connection in exclusive locking mode (it needs every other connection closed first)
        // shuts out even readers: open fails cleanly.
        store.close();
        QCOMPARE(locker.exec("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; UPDATE runs SET "
                             "name = 'x'; COMMIT"),
                 SQLITE_OK);
        QString opened = error_of<StoreError>([&] { RunStore::open(path, options); });
        QVERIFY2(opened.contains(QString::fromStdString(path.string())), qPrintable(opened));
        QVERIFY2(opened.contains("locked"), qPrintable(opened));
    }

    void writerErrorsReachTheCaller() {
        fs::path path = file("writer-error.sqlite");
        RunStore a = RunStore::open(path);
        RunStore b = RunStore::open(path);
        int64_t run = a.create_run(named("r"));
        a.log_metric(run, "loss", 0, 1.0);
        a.flush();
        b.finish_run(run, RunStatus::Stopped);
        b.delete_run(run); // a still believes the run exists
        a.log_metric(run, "loss", 1, 1.0);
        QString error = error_of<StoreError>([&] { a.flush(); });
        QVERIFY2(error.contains("FOREIGN KEY"), qPrintable(error));
        QVERIFY(error.contains("1 metric points"));
        QVERIFY(error.contains(QString::fromStdString(path.string())));
        a.flush(); // reported once; the store keeps working
        int64_t next = a.create_run(named("next"));
        a.log_metric(next, "loss", 0, 1.0);
        a.close();
        QVERIFY(error_of<StoreError>([&] { a.flush(); }).contains("closed"));
    }

    void badInputIsRefused() {
        RunStore store = RunStore::open(file("bad.sqlite"));
        int64_t run = store.create_run(named("r"));
        QVERIFY(error_of<StoreError>([&] {
                    store.log_metric(999, "loss", 0, 1);
                }).contains("run 999 does not exist"));
        QVERIFY(
            error_of<StoreError>([&] { store.log_metric(run, "", 0, 1); }).contains("empty key"));
        QVERIFY(error_of<StoreError>([&] {
                    store.log_metric(run, "loss", -1, 1);
                }).contains("out of range"));
        QVERIFY(error_of<StoreError>([&] {
                    store.log_histogram(run, "h", 0, 1, 0, std::vector<double>{1});
                }).contains("min <= max"));
        QVERIFY(error_of<StoreError>([&] {
                    store.finish_run(run, RunStatus::Running);
                }).contains("cannot be 'running'"));
        QVERIFY(error_of<StoreError>([&] {
                    store.finish_run(999, RunStatus::Failed);
                }).contains("run 999 does not exist"));
        QVERIFY(error_of<StoreError>([&] { store.run(999); }).contains("run 999 does not exist"));
        QVERIFY(error_of<StoreError>([&] {
                    store.set_params(999, {{"a", "b"}});
                }).contains("run 999 does not exist"));
        RunInfo orphan = named("orphan");
        orphan.parent_run = 999;
        QVERIFY(error_of<StoreError>([&] {
                    store.create_run(orphan);
                }).contains("parent run 999 does not exist"));
        QVERIFY(
            error_of<StoreError>([&] {
                store.add_artifact(run, {"checkpoint", file("missing.safetensors"), 0, "{}", ""});
            }).contains("missing.safetensors' of run"));
        QVERIFY(error_of<StoreError>([&] {
                    store.add_artifact(run, {"checkpoint", file(""), 0, "{}", ""});
                }).contains("is not a regular file"));
        QVERIFY(parse_run_status("interrupted") == RunStatus::Interrupted);
        QVERIFY(!parse_run_status("bogus"));
        QCOMPARE(status_name(RunStatus::Failed), std::string_view("failed"));
    }

    void notADatabaseIsRefused() {
        fs::path path = file("garbage.sqlite");
        write_file(path, std::string(4096, 'x'));
        QString error = error_of<StoreError>([&] { RunStore::open(path); });
        QVERIFY2(error.contains(QString::fromStdString(path.string())), qPrintable(error));
        QVERIFY2(error.contains("not an SQLite database (expected a Myelin run store)"),
                 qPrintable(error));
        QCOMPARE(read_file(path), std::string(4096, 'x')); // untouched
    }

    void foreignDatabaseIsRefused() {
        fs::path path = file("foreign.sqlite");
        {
            RawDb raw(path);
            raw.exec("CREATE TABLE contacts (name TEXT)");
        }
        QString error = error_of<StoreError>([&] { RunStore::open(path); });
        QVERIFY2(error.contains("not a Myelin run store"), qPrintable(error));
        {
            RawDb raw(path);
            QCOMPARE(raw.text("PRAGMA journal_mode"), std::string("delete")); // not switched
            raw.exec("PRAGMA application_id = 1234");
        }
        error = error_of<StoreError>([&] { RunStore::open(path); });
        QVERIFY2(error.contains("another application"), qPrintable(error));
    }

    void eventsRoundTripAndAVersion1StoreIsMigrated() {
        fs::path path = file("events.sqlite");
        int64_t id = 0;
        {
            RunStore store = RunStore::open(path);
            id = store.create_run(named("with events"));
            store.log_metric(id, "loss", 7, 0.5);
            store.log_event(id, {7, "breakpoint", "fc1", "gradient spike in fc1", 0});
            store.log_event(id, {3, "breakpoint", "", "loss above 2 at step 3", 0});
            const auto events = store.events(id);
            QCOMPARE(events.size(), size_t(2));
            QCOMPARE(events[0].step, int64_t(3)); // by step
            QCOMPARE(events[1].layer, std::string("fc1"));
            QCOMPARE(events[1].message, std::string("gradient spike in fc1"));
            QVERIFY(events[1].wall_time > 0);
            QVERIFY(error_of<StoreError>([&] {
                        store.log_event(id, {1, "", "", "x", 0});
                    }).contains("needs a kind"));
            QVERIFY(error_of<StoreError>([&] {
                        store.log_event(id + 100, {1, "breakpoint", "", "x", 0});
                    }).contains(QString::number(id + 100)));
        }
        {
            // What a store written by version 1 looks like: no events table.
            RawDb raw(path);
            QCOMPARE(
                raw.exec(std::string(kBackToVersion3) +
                         "DROP TABLE events; DROP TABLE feature_maps; PRAGMA user_version = 1"),
                SQLITE_OK);
        }
        RunStore migrated = RunStore::open(path);
        QCOMPARE(migrated.run(id).name, std::string("with events"));
        QCOMPARE(migrated.metric_series(id, "loss").size(), size_t(1));
        QVERIFY(migrated.events(id).empty());
        migrated.log_event(id, {9, "breakpoint", "", "after the migration", 0});
        QCOMPARE(migrated.events(id).size(), size_t(1));
        migrated.finish_run(id, RunStatus::Stopped);
        migrated.delete_run(id);
        QVERIFY(migrated.events(id).empty()); // deleted with the run
    }

    void featureMapsRoundTrip() {
        RunStore store = RunStore::open(file("maps.sqlite"));
        const int64_t run = store.create_run(named("cnn"));
        const int64_t shape[] = {2, 3, 4, 5}; // examples, channels, height, width
        // Values float16 holds exactly once scaled: eighths, a negative, a zero.
        auto values_at = [](int64_t step, float offset) {
            std::vector<float> v(120);
            for (size_t i = 0; i < v.size(); ++i)
                v[i] = float(int(i % 17) - 8) / 8.0f + offset + float(step);
            return v;
        };
        // Layers in forward order as the probe reports them, which is not alphabetical.
        for (int64_t step : {10, 20, 40})
            for (const char* layer : {"conv", "act", "bn"})
                store.log_feature_map(run, layer, step, shape, values_at(step, layer[0] == 'a'));
        store.log_probe_input(run, 10, shape, values_at(0, 0.5f));
        QCOMPARE(store.feature_map_layers(run), (std::vector<std::string>{"conv", "act", "bn"}));
        QCOMPARE(store.feature_map_steps(run, "act"), (std::vector<int64_t>{10, 20, 40}));
        QCOMPARE(store.feature_map_capture_steps(run), (std::vector<int64_t>{10, 20, 40}));
        QVERIFY(store.feature_map_steps(run, "missing").empty());

        const auto map = store.feature_map(run, "act", 20);
        QVERIFY(map);
        QCOMPARE(map->step, int64_t(20));
        QVERIFY(map->wall_time > 0);
        QCOMPARE(map->examples, int64_t(2));
        QCOMPARE(map->channels, int64_t(3));
        QCOMPARE(map->height, int64_t(4));
        QCOMPARE(map->width, int64_t(5));
        QCOMPARE(map->values, values_at(20, 1.0f));
        // at(): [example][channel][y][x], row-major.
        QCOMPARE(map->at(1, 2, 3, 4), values_at(20, 1.0f)[119]);
        QCOMPARE(map->at(1, 0, 2, 1), values_at(20, 1.0f)[60 + 2 * 5 + 1]);

        // The nearest recorded step; the earlier one on a tie.
        const auto step_of = [&](int64_t asked) {
            return store.feature_map(run, "conv", asked)->step;
        };
        QCOMPARE(step_of(0), int64_t(10));
        QCOMPARE(step_of(14), int64_t(10));
        QCOMPARE(step_of(15), int64_t(10));
        QCOMPARE(step_of(16), int64_t(20));
        QCOMPARE(step_of(30), int64_t(20));
        QCOMPARE(step_of(31), int64_t(40));
        QCOMPARE(step_of(std::numeric_limits<int64_t>::max()), int64_t(40));
        QVERIFY(!store.feature_map(run, "missing", 10));
        QVERIFY(!store.feature_map(run, "", 10)); // the probe input is not a layer

        const auto input = store.probe_input(run);
        QVERIFY(input);
        QCOMPARE(input->step, int64_t(10));
        QCOMPARE(input->values, values_at(0, 0.5f));
        QVERIFY(!store.probe_input(run + 1));

        // Logging a step again replaces it.
        store.log_feature_map(run, "conv", 20, shape, values_at(0, 3.0f));
        QCOMPARE(store.feature_map(run, "conv", 20)->values, values_at(0, 3.0f));
        QCOMPARE(store.feature_map_steps(run, "conv").size(), size_t(3));

        // Any range: float16 scaled by a power of two keeps 11 bits of large and tiny maps, and
        // NaN and infinities stay what they are.
        std::mt19937 rng(5);
        std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
        for (float magnitude : {1e-30f, 1e-7f, 1.0f, 7e4f, 1e12f, 3e38f}) {
            std::vector<float> v(120);
            for (float& x : v)
                x = uniform(rng) * magnitude;
            v[3] = 0.0f;
            v[7] = magnitude; // the largest |value|
            store.log_feature_map(run, "range", 1, shape, v);
            const auto back = store.feature_map(run, "range", 1);
            QCOMPARE(back->values[3], 0.0f);
            for (size_t i = 0; i < v.size(); ++i)
                QVERIFY2(std::abs(back->values[i] - v[i]) <=
                             std::max(std::abs(v[i]) * 0x1p-11f, magnitude * 0x1p-24f),
                         qPrintable(QStringLiteral("magnitude %1, value %2: %3 read back as %4")
                                        .arg(double(magnitude))
                                        .arg(i)
                                        .arg(double(v[i]))
                                        .arg(double(back->values[i]))));
        }
        std::vector<float> odd(120, 2.0f);
        odd[0] = std::numeric_limits<float>::quiet_NaN();
        odd[1] = std::numeric_limits<float>::infinity();
        odd[2] = -std::numeric_limits<float>::infinity();
        store.log_feature_map(run, "odd", 1, shape, odd);
        const auto back = store.feature_map(run, "odd", 1);
        QVERIFY(std::isnan(back->values[0]));
        QCOMPARE(back->values[1], std::numeric_limits<float>::infinity());
        QCOMPARE(back->values[2], -std::numeric_limits<float>::infinity());
        QCOMPARE(back->values[3], 2.0f);

        // Bad input is refused before anything is queued.
        const std::vector<float> few(7);
        QVERIFY(error_of<StoreError>([&] {
                    store.log_feature_map(run, "conv", 1, shape, few);
                }).contains("shape 2x3x4x5 needs 120 values, got 7"));
        const int64_t flat[] = {2, 60};
        QVERIFY(error_of<StoreError>([&] {
                    store.log_feature_map(run, "conv", 1, flat, values_at(0, 0));
                }).contains("needs a shape of 4 dimensions"));
        const int64_t empty[] = {2, 0, 4, 5};
        QVERIFY(error_of<StoreError>([&] {
                    store.log_feature_map(run, "conv", 1, empty, few);
                }).contains("is empty or too large"));
        QVERIFY(error_of<StoreError>([&] {
                    store.log_feature_map(run, "", 1, shape, values_at(0, 0));
                }).contains("needs a layer name"));
        QVERIFY(error_of<StoreError>([&] {
                    store.log_feature_map(run, "conv", -1, shape, values_at(0, 0));
                }).contains("out of range"));
        QVERIFY(error_of<StoreError>([&] {
                    store.log_feature_map(run + 50, "conv", 1, shape, values_at(0, 0));
                }).contains(QStringLiteral("run %1 does not exist").arg(run + 50)));

        // Deleted with the run.
        store.finish_run(run, RunStatus::Finished);
        store.delete_run(run);
        QVERIFY(store.feature_map_layers(run).empty());
        QVERIFY(!store.probe_input(run));
    }

    void damagedFeatureMapsGiveAMessage() {
        const fs::path path = file("damaged-maps.sqlite");
        int64_t run = 0;
        {
            RunStore store = RunStore::open(path);
            run = store.create_run(named("cnn"));
            const int64_t shape[] = {1, 2, 2, 2};
            store.log_feature_map(run, "conv", 5, shape, std::vector<float>(8, 1.0f));
            store.log_feature_map(run, "pool", 5, shape, std::vector<float>(8, 1.0f));
        }
        {
            RawDb raw(path);
            QCOMPARE(raw.exec("UPDATE feature_maps SET data = zeroblob(3) WHERE layer = 'conv'"),
                     SQLITE_OK);
            QCOMPARE(raw.exec("UPDATE feature_maps SET channels = -2 WHERE layer = 'pool'"),
                     SQLITE_OK);
        }
        {
            RunStore store = RunStore::open(path);
            QString error = error_of<StoreError>([&] { store.feature_map(run, "conv", 5); });
            QVERIFY2(error.contains("feature map 'conv' of run 1 at step 5 is corrupt"),
                     qPrintable(error));
            QVERIFY2(error.contains("needs 16 bytes of float16"), qPrintable(error));
            QVERIFY2(error.contains("the row has 3 bytes"), qPrintable(error));
            error = error_of<StoreError>([&] { store.feature_map(run, "pool", 5); });
            QVERIFY2(error.contains("its shape 1x-2x2x2 is empty or too large"), qPrintable(error));
            QCOMPARE(store.feature_map_layers(run).size(), size_t(2)); // the listing still works
        }
        {
            // A file claiming version 3 without the table (changed by hand).
            RawDb raw(path);
            QCOMPARE(raw.exec("DROP TABLE feature_maps"), SQLITE_OK);
        }
        RunStore store = RunStore::open(path);
        QCOMPARE(store.run(run).name, std::string("cnn"));
        for (auto read : std::vector<std::function<void()>>{
                 [&] { store.feature_map_layers(run); }, [&] { store.feature_map(run, "conv", 5); },
                 [&] { store.feature_map_steps(run, "conv"); }, [&] { store.probe_input(run); }}) {
            const QString error = error_of<StoreError>(read);
            QVERIFY2(error.contains("has no feature_maps table"), qPrintable(error));
            QVERIFY2(error.contains(QString::fromStdString(path.string())), qPrintable(error));
        }
    }

    void aVersion2StoreIsMigrated() {
        fs::path path = file("v2.sqlite");
        int64_t id = 0;
        {
            RunStore store = RunStore::open(path);
            id = store.create_run(named("before feature maps"));
            store.log_metric(id, "loss", 7, 0.5);
            store.log_event(id, {7, "breakpoint", "fc1", "gradient spike in fc1", 0});
        }
        {
            // What a store written by version 2 looks like: no feature_maps table.
            RawDb raw(path);
            QCOMPARE(raw.exec(std::string(kBackToVersion3) +
                              "DROP TABLE feature_maps; PRAGMA user_version = 2"),
                     SQLITE_OK);
        }
        RunStore migrated = RunStore::open(path);
        {
            RawDb raw(path);
            QCOMPARE(raw.integer("PRAGMA user_version"), int64_t(kSchemaVersion));
            QCOMPARE(raw.integer("SELECT count(*) FROM sqlite_schema WHERE name = "
                                 "'feature_maps_by_layer'"),
                     int64_t(1));
        }
        QCOMPARE(migrated.run(id).name, std::string("before feature maps"));
        QCOMPARE(migrated.metric_series(id, "loss").size(), size_t(1));
        QCOMPARE(migrated.events(id).size(), size_t(1));
        QVERIFY(migrated.feature_map_layers(id).empty());
        const int64_t shape[] = {1, 1, 2, 2};
        migrated.log_feature_map(id, "conv", 9, shape, std::vector<float>{1, 2, 3, 4});
        QCOMPARE(migrated.feature_map(id, "conv", 0)->values, (std::vector<float>{1, 2, 3, 4}));
        migrated.finish_run(id, RunStatus::Stopped);
        migrated.delete_run(id);
        QVERIFY(migrated.feature_map_layers(id).empty()); // deleted with the run
    }

    void newerSchemaIsRefused() {
        fs::path path = file("newer.sqlite");
        RunStore::open(path).close();
        {
            RawDb raw(path);
            raw.exec("PRAGMA user_version = " + std::to_string(kSchemaVersion + 1));
        }
        QString error = error_of<StoreError>([&] { RunStore::open(path); });
        QVERIFY2(error.contains(QString::fromStdString(path.string())), qPrintable(error));
        QVERIFY2(error.contains(QStringLiteral("schema version %1 was written by a newer Myelin")
                                    .arg(kSchemaVersion + 1)),
                 qPrintable(error));
    }

    void unwritableLocationIsRefused() {
        write_file(file("plain-file"), "x");
        fs::path below_file = file("plain-file/sub/runs.sqlite");
        QString error = error_of<StoreError>([&] { RunStore::open(below_file); });
        QVERIFY2(error.contains(QString::fromStdString(below_file.string())), qPrintable(error));
        QVERIFY2(error.contains("cannot create its folder"), qPrintable(error));

        fs::create_directories(file("a-folder.sqlite"));
        QVERIFY(error_of<StoreError>([&] {
                    RunStore::open(file("a-folder.sqlite"));
                }).contains("this is a folder"));

        if (geteuid() == 0) return; // root writes anywhere; the mode check cannot fail
        fs::path locked = file("read-only");
        fs::create_directories(locked);
        chmod(locked.c_str(), 0500);
        error = error_of<StoreError>([&] { RunStore::open(locked / "runs.sqlite"); });
        chmod(locked.c_str(), 0700);
        QVERIFY2(error.contains("is not writable"), qPrintable(error));
    }
};

namespace {
// Child modes for the multi-process tests (run through spawn_self).
int child_main(int argc, char** argv) {
    std::string mode = argv[1];
    try {
        if (mode == "--child-writer" && argc == 6) {
            RunStore store = RunStore::open(argv[2]);
            int64_t run = std::atoll(argv[3]);
            int n = std::atoi(argv[4]);
            for (int s = 0; s < n; ++s)
                store.log_metric(run, argv[5], s, s);
            store.close();
            return 0;
        }
        if (mode == "--child-hang" && argc == 3) {
            RunStore store = RunStore::open(argv[2]);
            int64_t run = store.create_run(RunInfo{"doomed", "", {}, "", "cpu", 1, "", 0, 0});
            for (int s = 0; s < 100; ++s)
                store.log_metric(run, "loss", s, s);
            store.flush();
            std::printf("%lld\n", static_cast<long long>(run));
            std::fflush(stdout);
            for (;;)
                pause(); // killed by the parent
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "child: %s\n", e.what());
        return 1;
    }
    std::fprintf(stderr, "child: bad arguments\n");
    return 2;
}
} // namespace

int main(int argc, char** argv) {
    if (argc >= 2 && std::strncmp(argv[1], "--child-", 8) == 0) return child_main(argc, argv);
    TestStore test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}

#include "test_store.moc"
