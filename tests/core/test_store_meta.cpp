// Run store, schema version 4: what a person adds to a run (name, note, tags), the project file
// a run was trained from, the lineage list_runs reports (fork / resume and the branch step), the
// change counter and the series ranges a runs table reads, and the migration of a version 3 file.
#include <myelin/error.h>
#include <myelin/store/run_store.h>

#include "store/sqlite_db.h"

#include <QTemporaryDir>
#include <QtTest>

#include "test_support.h"

#include <sqlite3.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

using namespace myelin;
using namespace myelin::store;
namespace fs = std::filesystem;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A plain SQLite connection, to make a file look like an older version and to count rows.
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

  private:
    sqlite3* db_ = nullptr;
};

RunInfo named(const std::string& name) {
    RunInfo info;
    info.name = name;
    return info;
}

const RunSummary& summary_of(const std::vector<RunSummary>& runs, int64_t id) {
    for (const auto& r : runs)
        if (r.run.id == id) return r;
    throw Error("run " + std::to_string(id) + " is not listed");
}

void touch(const fs::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
}
} // namespace

class TestStoreMeta : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    fs::path file(const std::string& name) const {
        return fs::path(dir_.path().toStdString()) / name;
    }

  private slots:
    // A connection keeps finished statements for the next prepare() of the same SQL: one still
    // in use is never handed out twice, and a reused one starts reset, its bindings cleared.
    void preparedStatementsAreReusedSafely() {
        using myelin::store::detail::Database;
        Database db(file("statements.sqlite"), std::chrono::milliseconds(1000));
        db.exec("CREATE TABLE t (x INTEGER)", "creating");
        for (int i = 0; i < 5; ++i)
            db.prepare("INSERT INTO t (x) VALUES (?1)").bind(1, i).run("inserting");
        const char* query = "SELECT x FROM t WHERE x >= ?1 ORDER BY x";
        for (int round = 0; round < 2; ++round) {
            auto a = db.prepare(query);
            a.bind(1, 3);
            QVERIFY(a.step("a"));
            QCOMPARE(a.int64(0), int64_t(3));
            auto b = db.prepare(query); // the same SQL while `a` is under way
            b.bind(1, 0);
            QVERIFY(b.step("b"));
            QCOMPARE(b.int64(0), int64_t(0));
            QVERIFY(a.step("a"));
            QCOMPARE(a.int64(0), int64_t(4));
            QVERIFY(!a.step("a"));
        }
        // Unbound, ?1 is NULL: no row compares >= NULL. A kept binding would return rows.
        auto c = db.prepare(query);
        QVERIFY(!c.step("c"));
    }

    void aVersion3StoreIsMigrated() {
        const fs::path path = file("v3.sqlite");
        int64_t parent = 0, child = 0;
        {
            RunStore store = RunStore::open(path);
            parent = store.create_run(named("before notes"));
            store.set_params(parent, {{"seed", "3"}});
            store.log_metric(parent, "loss", 4, 0.25);
            store.finish_run(parent, RunStatus::Finished);
            RunInfo info = named("its resume");
            info.parent_run = parent;
            child = store.create_run(info);
            store.finish_run(child, RunStatus::Stopped);
        }
        {
            // A file written by version 3: no note or project_path column, no run_tags table.
            RawDb raw(path);
            QCOMPARE(raw.exec("DROP TABLE time_gradients; ALTER TABLE runs DROP COLUMN note; ALTER "
                              "TABLE runs DROP COLUMN "
                              "project_path; DROP TABLE run_tags; PRAGMA user_version = 3"),
                     SQLITE_OK);
        }
        RunStore migrated = RunStore::open(path);
        {
            RawDb raw(path);
            QCOMPARE(raw.integer("PRAGMA user_version"), int64_t(kSchemaVersion));
            QCOMPARE(raw.integer("SELECT count(*) FROM sqlite_schema WHERE name = 'run_tags'"),
                     int64_t(1));
        }
        const auto runs = migrated.list_runs();
        QCOMPARE(runs.size(), size_t(2));
        const Run& before = summary_of(runs, parent).run;
        QCOMPARE(before.name, std::string("before notes"));
        QCOMPARE(before.status, RunStatus::Finished);
        QVERIFY(before.note.empty() && before.tags.empty() && before.project_path.empty());
        QCOMPARE(summary_of(runs, parent).latest_metrics.size(), size_t(1));
        QCOMPARE(summary_of(runs, child).run.parent_run, std::optional<int64_t>(parent));
        QCOMPARE(migrated.params(parent).at("seed"), std::string("3"));
        migrated.set_run_tags(parent, {"baseline"});
        migrated.set_run_note(parent, "kept across the migration");
        QCOMPARE(migrated.run(parent).tags, std::vector<std::string>{"baseline"});
        QCOMPARE(migrated.run(parent).note, std::string("kept across the migration"));
    }

    void renameNoteAndTagsRoundTrip() {
        const fs::path path = file("meta.sqlite");
        RunStore store = RunStore::open(path);
        RunInfo info = named("mlp");
        info.project_path = file("projects/../blobs.myelin").string(); // stored normal
        const int64_t id = store.create_run(info);
        const int64_t other = store.create_run(named("other"));
        QCOMPARE(store.run(id).project_path, file("blobs.myelin").string());
        QVERIFY(store.run(other).project_path.empty());

        store.rename_run(id, "mlp, wider \"fc1\" ✓");
        const std::string note = "lr 1e-3 diverged at epoch 4;\nretry with warmup ✓";
        store.set_run_note(id, note);
        store.set_run_tags(id, {"sweep-3", "baseline", "sweep-3", "ünïcode tag"});
        store.set_run_tags(other, {"baseline"});

        for (const Run& r : {store.run(id), summary_of(store.list_runs(), id).run}) {
            QCOMPARE(r.name, std::string("mlp, wider \"fc1\" ✓"));
            QCOMPARE(r.note, note);
            QCOMPARE(r.tags, (std::vector<std::string>{"baseline", "sweep-3", "ünïcode tag"}));
        }
        QCOMPARE(summary_of(store.list_runs(), other).run.tags,
                 std::vector<std::string>{"baseline"});

        store.set_run_tags(id, {});
        QVERIFY(store.run(id).tags.empty());
        QCOMPARE(store.run(other).tags, std::vector<std::string>{"baseline"});
        store.set_run_note(id, "");
        QVERIFY(store.run(id).note.empty());
    }

    void badInputChangesNothing() {
        RunStore store = RunStore::open(file("bad.sqlite"));
        const int64_t id = store.create_run(named("kept"));
        store.set_run_tags(id, {"kept"});
        store.set_run_note(id, "kept");
        const QString run = QString::number(id);
        struct Case {
            std::function<void()> call;
            const char* expected;
        };
        const Case cases[] = {
            {[&] { store.rename_run(id, ""); }, "cannot be empty"},
            {[&] { store.rename_run(id, "   "); }, "cannot be empty"},
            {[&] { store.rename_run(id, "two\nlines"); }, "line break"},
            {[&] { store.rename_run(id, std::string(201, 'x')); }, "longer than 200 bytes"},
            {[&] { store.set_run_note(id, std::string(64 * 1024 + 1, 'x')); }, "64 KiB"},
            {[&] {
                 store.set_run_tags(id, {"fine", "a,b"});
             },
             "'a,b' holds a comma"},
            {[&] {
                 store.set_run_tags(id, {"fine", ""});
             },
             "cannot be empty"},
            {[&] { store.set_run_tags(id, {"trailing "}); }, "starts or ends with a space"},
            {[&] { store.set_run_tags(id, {"tab\there"}); }, "control character"},
            {[&] { store.set_run_tags(id, {std::string(65, 't')}); }, "longer than 64 bytes"},
        };
        for (const Case& c : cases) {
            const QString error = error_of<StoreError>(c.call);
            QVERIFY2(error.contains(QLatin1String(c.expected)), qPrintable(error));
            QVERIFY2(error.contains(run), qPrintable(error)); // names the run
        }
        const Run after = store.run(id);
        QCOMPARE(after.name, std::string("kept"));
        QCOMPARE(after.note, std::string("kept"));
        QCOMPARE(after.tags, std::vector<std::string>{"kept"});
    }

    void unknownRunsAreRefused() {
        RunStore store = RunStore::open(file("unknown.sqlite"));
        const int64_t id = store.create_run(named("only"));
        const int64_t missing = id + 41;
        for (const auto& call : std::vector<std::function<void()>>{
                 [&] { store.rename_run(missing, "x"); }, [&] { store.set_run_note(missing, "x"); },
                 [&] { store.set_run_tags(missing, {"x"}); }}) {
            const QString error = error_of<StoreError>(call);
            QVERIFY2(error.contains(QStringLiteral("run %1 does not exist").arg(missing)),
                     qPrintable(error));
        }
        RawDb raw(file("unknown.sqlite"));
        QCOMPARE(raw.integer("SELECT count(*) FROM run_tags"), int64_t(0));
    }

    void deletingARunRemovesItsTagsOnly() {
        const fs::path path = file("delete.sqlite");
        RunStore store = RunStore::open(path);
        const int64_t doomed = store.create_run(named("doomed"));
        const int64_t kept = store.create_run(named("kept"));
        store.set_run_tags(doomed, {"a", "b"});
        store.set_run_tags(kept, {"a"});
        store.finish_run(doomed, RunStatus::Finished);
        store.delete_run(doomed);
        RawDb raw(path);
        QCOMPARE(raw.integer("SELECT count(*) FROM run_tags WHERE run = " + std::to_string(doomed)),
                 int64_t(0));
        QCOMPARE(store.run(kept).tags, std::vector<std::string>{"a"});
    }

    void lineageAndBranchSteps() {
        const fs::path path = file("lineage.sqlite");
        RunStore store = RunStore::open(path);
        const int64_t parent = store.create_run(named("parent"));
        const fs::path folder = store.artifact_folder(parent);
        fs::create_directories(folder);
        touch(folder / "epoch-0002.safetensors", "two");
        touch(folder / "best.safetensors", "best");
        store.add_artifact(parent, {"checkpoint", folder / "epoch-0002.safetensors", 200});
        // best.safetensors is listed at every step it was written; it holds the newest.
        store.add_artifact(parent, {"checkpoint", folder / "best.safetensors", 100});
        store.add_artifact(parent, {"checkpoint", folder / "best.safetensors", 300});
        store.finish_run(parent, RunStatus::Finished);

        RunInfo fork = named("fork");
        fork.parent_run = parent;
        fork.parent_checkpoint = (folder / "epoch-0002.safetensors").string();
        const int64_t forked = store.create_run(fork);
        store.set_params(forked, {{"fork.from", std::to_string(parent) + "@200"}});

        RunInfo resume = named("resume");
        resume.parent_run = parent;
        resume.parent_checkpoint = (folder / "best.safetensors").string();
        const int64_t resumed = store.create_run(resume);

        RunInfo from_file = named("from a file");
        from_file.parent_checkpoint = file("elsewhere.safetensors").string();
        const int64_t outside = store.create_run(from_file);

        RunInfo unlisted = named("unlisted checkpoint");
        unlisted.parent_run = parent;
        unlisted.parent_checkpoint = (folder / "gone.safetensors").string();
        const int64_t lost = store.create_run(unlisted);

        const auto runs = store.list_runs();
        struct Expected {
            int64_t id;
            RunOrigin origin;
            std::optional<int64_t> step;
        };
        for (const Expected& e :
             {Expected{parent, RunOrigin::Fresh, std::nullopt},
              Expected{forked, RunOrigin::Forked, 200}, Expected{resumed, RunOrigin::Resumed, 300},
              Expected{outside, RunOrigin::Resumed, std::nullopt},
              Expected{lost, RunOrigin::Resumed, std::nullopt}}) {
            for (const Run& r : {summary_of(runs, e.id).run, store.run(e.id)}) {
                QCOMPARE(int(r.origin), int(e.origin));
                QCOMPARE(r.branch_step, e.step);
            }
        }
    }

    void dataVersionMovesWithEveryCommit() {
        const fs::path path = file("version.sqlite");
        RunStore reader = RunStore::open(path);
        RunStore writer = RunStore::open(path); // another connection, as another process has
        uint64_t v = reader.data_version();
        QCOMPARE(reader.data_version(), v); // nothing happened

        const int64_t id = writer.create_run(named("by another connection"));
        QVERIFY(reader.data_version() != v);
        v = reader.data_version();

        writer.log_metric(id, "loss", 1, 0.5);
        writer.flush(); // committed by the writer thread's own connection
        QVERIFY(reader.data_version() != v);
        v = reader.data_version();

        reader.rename_run(id, "renamed here"); // this store's own connection
        QVERIFY(reader.data_version() != v);
        v = reader.data_version();

        reader.log_metric(id, "loss", 2, 0.4); // this store's writer thread
        reader.flush();
        QVERIFY(reader.data_version() != v);
    }

    void metricRangesComeFromTheSummaries() {
        RunStore store = RunStore::open(file("ranges.sqlite"));
        const int64_t longer = store.create_run(named("longer than one top-level block"));
        const int64_t with_nan = store.create_run(named("NaN"));
        const int64_t without = store.create_run(named("no loss"));
        std::vector<MetricPoint> points;
        double lo = 1e9, hi = -1e9;
        for (int64_t step = 0; step < 140000; step += 7) {
            const double value = 2.0 + std::sin(double(step) * 0.001) * (1.0 + double(step) / 1e5);
            lo = std::min(lo, value);
            hi = std::max(hi, value);
            points.push_back({longer, "loss", step, value, 1});
        }
        points.push_back({with_nan, "loss", 0, kNaN, 1});
        points.push_back({with_nan, "loss", 1, 0.75, 1});
        points.push_back({with_nan, "loss", 2, kNaN, 1});
        points.push_back({without, "val_accuracy", 0, 0.5, 1});
        store.log_metrics(points);
        const auto ranges = store.metric_ranges("loss");
        QCOMPARE(ranges.size(), size_t(2)); // `without` has no loss
        QCOMPARE(ranges[0].run, longer);
        QCOMPARE(ranges[0].min, lo);
        QCOMPARE(ranges[0].max, hi);
        QCOMPARE(ranges[1].run, with_nan);
        QCOMPARE(ranges[1].min, 0.75); // NaN left out
        QCOMPARE(ranges[1].max, 0.75);
        QVERIFY(store.metric_ranges("no such key").empty());
    }
};

QTEST_GUILESS_MAIN(TestStoreMeta)
#include "test_store_meta.moc"
