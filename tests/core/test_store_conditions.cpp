// Run store (issue 41): opening a store that is locked by another program, read-only, damaged or
// written by a newer Myelin is a distinct outcome (StoreError::problem(), RunStore::condition())
// whose message names the file and what to do, and the file's bytes are the same afterwards: a
// store that could not be validated is never written (no migration, no marking of interrupted
// runs). A read-only store stays readable.
#include <myelin/error.h>
#include <myelin/store/run_store.h>

#include <QTemporaryDir>
#include <QtTest>

#include "store_conditions.h"
#include "test_support.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>

using namespace myelin;
using namespace myelin::store;
namespace fs = std::filesystem;

namespace {

StoreOptions with(StoreAccess access) {
    StoreOptions options;
    options.access = access;
    options.busy_timeout = std::chrono::milliseconds(100); // the bounded wait, short for tests
    return options;
}

// The problem of the StoreError fn throws, and its message in `message`.
StoreProblem problem_of(const std::function<void()>& fn, QString* message) {
    try {
        fn();
    } catch (const StoreError& e) {
        *message = QString::fromUtf8(e.what());
        return e.problem();
    } catch (const std::exception& e) {
        *message = QStringLiteral("not a StoreError: ") + e.what();
        return StoreProblem::None;
    }
    *message = QStringLiteral("no exception");
    return StoreProblem::None;
}

// Restores an environment variable when the test ends, however it ends.
class ScopedEnv {
  public:
    ScopedEnv(const char* name, const char* value) : name_(name) { qputenv(name, value); }
    ~ScopedEnv() { qunsetenv(name_); }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

  private:
    const char* name_;
};

const RunSummary* find_run(const std::vector<RunSummary>& runs, const std::string& name) {
    for (const auto& r : runs)
        if (r.run.name == name) return &r;
    return nullptr;
}

} // namespace

class TestStoreConditions : public QObject {
    Q_OBJECT

    fs::path fresh(const QTemporaryDir& dir, const char* name) const {
        const fs::path path = fs::path(dir.path().toStdString()) / name;
        test::makeStore(path);
        return path;
    }

    // A store held by another program: its runs read, a write lock it cannot get within the
    // busy timeout makes it Locked (the ReadWriteIfAllowed open) instead of waiting for minutes.
    void checkLockedButReadable(const fs::path& path) {
        const std::string before = sha256_file(path);
        {
            test::SqliteConnection other(path);
            QCOMPARE(other.exec("BEGIN EXCLUSIVE"), SQLITE_OK);
            RunStore store = RunStore::open(path, with(StoreAccess::ReadWriteIfAllowed));
            QCOMPARE(store.condition(), StoreProblem::Locked);
            QVERIFY(!store.read_only());
            const QString note = QString::fromStdString(store.condition_message());
            QVERIFY2(note.contains(QString::fromStdString(path.string())), qPrintable(note));
            QVERIFY2(note.contains("locked by another program"), qPrintable(note));
            const auto runs = store.list_runs();
            QCOMPARE(runs.size(), size_t(2));
            // The crashed run is not marked: that would be a write.
            QCOMPARE(find_run(runs, "crashed")->run.status, RunStatus::Running);
            QString message;
            QCOMPARE(problem_of([&] { store.create_run({.name = "blocked"}); }, &message),
                     StoreProblem::Locked);
            QVERIFY2(message.contains("close the program holding it"), qPrintable(message));
            store.close();
            QCOMPARE(other.exec("ROLLBACK"), SQLITE_OK);
        }
        QCOMPARE(sha256_file(path), before);
    }

  private slots:
    void lockedStoreIsReadableAndSaysSo() {
        QTemporaryDir dir;
        checkLockedButReadable(fresh(dir, "locked.sqlite"));
    }

    void lockedAgainstReadersIsRefused() {
        QTemporaryDir dir;
        const fs::path path = fresh(dir, "exclusive.sqlite");
        const std::string before = sha256_file(path);
        {
            // Exclusive locking mode shuts out readers too: the open fails after the bounded wait.
            test::SqliteConnection other(path);
            QCOMPARE(other.exec("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE"), SQLITE_OK);
            for (StoreAccess access : {StoreAccess::ReadWriteIfAllowed, StoreAccess::ReadWrite}) {
                QString message;
                QCOMPARE(problem_of([&] { RunStore::open(path, with(access)); }, &message),
                         StoreProblem::Locked);
                QVERIFY2(message.contains(QString::fromStdString(path.string())),
                         qPrintable(message));
                QVERIFY2(message.contains("locked"), qPrintable(message));
            }
            QCOMPARE(other.exec("ROLLBACK"), SQLITE_OK);
        }
        QCOMPARE(sha256_file(path), before);
    }

    void readOnlyStoreIsReadButNeverWritten() {
        QTemporaryDir dir;
        const fs::path path = fresh(dir, "read-only.sqlite");
        const std::string before = sha256_file(path);
        // chmod where permission bits stop writes; as root the store's switch stands in for them.
        test::setReadOnlyMode(path, true);
        const std::unique_ptr<void, std::function<void(void*)>> writableAgain(
            &dir, [&](void*) { test::setReadOnlyMode(path, false); }); // so dir can be removed
        std::optional<ScopedEnv> forced;
        if (!test::permissionsStopWrites()) forced.emplace("MYELIN_STORE_READ_ONLY", "1");
        {
            RunStore store = RunStore::open(path, with(StoreAccess::ReadWriteIfAllowed));
            QCOMPARE(store.condition(), StoreProblem::ReadOnly);
            QVERIFY(store.read_only());
            const QString note = QString::fromStdString(store.condition_message());
            QVERIFY2(note.contains(QString::fromStdString(path.string())), qPrintable(note));
            QVERIFY2(note.contains("read-only") && note.contains("new runs cannot be recorded"),
                     qPrintable(note));
            // Readable: the runs, their series.
            const auto runs = store.list_runs();
            QCOMPARE(runs.size(), size_t(2));
            const RunSummary* baseline = find_run(runs, "baseline");
            QVERIFY(baseline);
            QCOMPARE(store.metric_series(baseline->run.id, "loss").size(), size_t(400));
            // Never written: the crashed run stays as it was, every write is refused.
            QCOMPARE(find_run(runs, "crashed")->run.status, RunStatus::Running);
            QVERIFY(store.mark_interrupted_runs().empty());
            QString message;
            QCOMPARE(problem_of([&] { store.create_run({.name = "new"}); }, &message),
                     StoreProblem::ReadOnly);
            QVERIFY2(message.contains(QString::fromStdString(path.string())), qPrintable(message));
            QCOMPARE(problem_of([&] { store.rename_run(baseline->run.id, "renamed"); }, &message),
                     StoreProblem::ReadOnly);
            QCOMPARE(
                problem_of([&] { store.log_metric(baseline->run.id, "loss", 500, 0.1); }, &message),
                StoreProblem::ReadOnly);
            QCOMPARE(problem_of([&] { store.delete_run(baseline->run.id); }, &message),
                     StoreProblem::ReadOnly);
            store.close();
        }
        // What training opens (ReadWrite) is refused, saying why.
        QString message;
        QCOMPARE(problem_of([&] { RunStore::open(path, with(StoreAccess::ReadWrite)); }, &message),
                 StoreProblem::ReadOnly);
        QVERIFY2(message.contains(QString::fromStdString(path.string())) &&
                     message.contains("new runs cannot be recorded"),
                 qPrintable(message));
        QCOMPARE(sha256_file(path), before);
        if (test::permissionsStopWrites()) {
            // A file nobody may write is read as immutable: nothing is created beside it.
            QVERIFY(!fs::exists(path.string() + "-wal"));
            QVERIFY(!fs::exists(path.string() + "-shm"));
        }
    }

    void readOnlyAccessNeverWrites() {
        QTemporaryDir dir;
        const fs::path path = fresh(dir, "opened-read-only.sqlite");
        const std::string before = sha256_file(path);
        {
            RunStore store = RunStore::open(path, with(StoreAccess::ReadOnly));
            QVERIFY(store.read_only());
            QVERIFY2(store.condition_message().find("opened read-only") != std::string::npos,
                     store.condition_message().c_str());
            QCOMPARE(store.list_runs().size(), size_t(2));
            QString message;
            QCOMPARE(problem_of([&] { store.set_run_note(1, "note"); }, &message),
                     StoreProblem::ReadOnly);
        }
        QCOMPARE(sha256_file(path), before);
        // A missing file is not created.
        const fs::path missing = fs::path(dir.path().toStdString()) / "missing.sqlite";
        QString message;
        QCOMPARE(
            problem_of([&] { RunStore::open(missing, with(StoreAccess::ReadOnly)); }, &message),
            StoreProblem::ReadOnly);
        QVERIFY(!fs::exists(missing));
    }

    void damagedStoreIsRefusedUntouched() {
        QTemporaryDir dir;
        const fs::path path = fresh(dir, "damaged.sqlite");
        test::damageMiddlePage(path);
        const std::string before = sha256_file(path);
        // ReadWrite would mark the crashed run interrupted: quick_check runs first.
        for (StoreAccess access : {StoreAccess::ReadWriteIfAllowed, StoreAccess::ReadWrite}) {
            QString message;
            QCOMPARE(problem_of([&] { RunStore::open(path, with(access)); }, &message),
                     StoreProblem::Damaged);
            QVERIFY2(message.contains(QString::fromStdString(path.string())), qPrintable(message));
            QVERIFY2(message.contains("damaged") && message.contains("backup"),
                     qPrintable(message));
        }
        QCOMPARE(sha256_file(path), before);
    }

    void notADatabaseIsDamaged() {
        QTemporaryDir dir;
        const fs::path path = fresh(dir, "overwritten-header.sqlite");
        {
            std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
            file.write("not an sqlite header", 20);
        }
        const std::string before = sha256_file(path);
        QString message;
        QCOMPARE(problem_of([&] { RunStore::open(path, with(StoreAccess::ReadWriteIfAllowed)); },
                            &message),
                 StoreProblem::Damaged);
        QVERIFY2(message.contains("not an SQLite database"), qPrintable(message));
        QCOMPARE(sha256_file(path), before);
    }

    void newerStoreIsRefusedUntouched() {
        QTemporaryDir dir;
        const fs::path path = fresh(dir, "newer.sqlite");
        test::makeNewer(path);
        const std::string before = sha256_file(path);
        for (StoreAccess access :
             {StoreAccess::ReadWriteIfAllowed, StoreAccess::ReadWrite, StoreAccess::ReadOnly}) {
            QString message;
            QCOMPARE(problem_of([&] { RunStore::open(path, with(access)); }, &message),
                     StoreProblem::Newer);
            QVERIFY2(message.contains(QString::fromStdString(path.string())), qPrintable(message));
            QVERIFY2(message.contains(QStringLiteral("schema version %1 was written by a newer "
                                                     "Myelin")
                                          .arg(kSchemaVersion + 1)),
                     qPrintable(message));
        }
        QCOMPARE(sha256_file(path), before);
    }

    void healthyStoreOpensForWriting() {
        QTemporaryDir dir;
        const fs::path path = fresh(dir, "healthy.sqlite");
        RunStore store = RunStore::open(path, with(StoreAccess::ReadWriteIfAllowed));
        QCOMPARE(store.condition(), StoreProblem::None);
        QVERIFY(store.condition_message().empty());
        // The open checked the file, then marked the crashed run.
        const auto runs = store.list_runs();
        QCOMPARE(find_run(runs, "crashed")->run.status, RunStatus::Interrupted);
        QVERIFY(store.create_run({.name = "next"}) > 0);
        QCOMPARE(problem_name(StoreProblem::Locked), std::string_view("locked"));
        QCOMPARE(problem_name(StoreProblem::ReadOnly), std::string_view("read-only"));
        QCOMPARE(problem_name(StoreProblem::Damaged), std::string_view("damaged"));
        QCOMPARE(problem_name(StoreProblem::Newer), std::string_view("newer"));
    }
};

QTEST_GUILESS_MAIN(TestStoreConditions)
#include "test_store_conditions.moc"
