// `myelin runs` with a run store that is locked by another program, read-only, damaged or
// written by a newer Myelin (issue 41): a store that can be read is listed with a warning on
// stderr saying which (exit 0); one that cannot says which and exits 1 (the README's runtime
// error); a write to a read-only store is refused (exit 1). The file's bytes never change.
#include <myelin/store/run_store.h>

#include <QTemporaryDir>
#include <QtTest>

#include "cli_process.h"
#include "store_conditions.h"

#include <filesystem>
#include <functional>
#include <memory>

using namespace myelin;
namespace fs = std::filesystem;

namespace {
// The CLI waits for another program's lock for the store's busy timeout (5 s) before it says the
// store is locked.
constexpr int kCliTimeoutMs = 60000;

CliResult runsList(const fs::path& store, const QStringList& env = {}) {
    return runCliProcess({QStringLiteral("runs"), QStringLiteral("list"), QStringLiteral("--store"),
                          QString::fromStdString(store.string())},
                         kCliTimeoutMs, env);
}

QString describe(const CliResult& r) {
    return QStringLiteral("exit %1\nstdout: %2\nstderr: %3").arg(r.exitCode).arg(r.out, r.err);
}
} // namespace

class TestCliStoreConditions : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;

    // In a folder of its own: the read-only case makes that folder read-only.
    fs::path makeStore(const char* name) {
        const fs::path path = fs::path(dir_.path().toStdString()) / name / "runs.sqlite";
        fs::create_directories(path.parent_path());
        test::makeStore(path);
        return path;
    }

  private slots:
    void lockedStoreIsListedWithAWarning() {
        const fs::path path = makeStore("locked");
        const std::string before = store::sha256_file(path);
        test::SqliteConnection other(path);
        QCOMPARE(other.exec("BEGIN EXCLUSIVE"), SQLITE_OK);
        const CliResult r = runsList(path);
        QVERIFY2(r.exitCode == 0, qPrintable(describe(r)));
        QVERIFY2(r.out.contains(QStringLiteral("baseline")), qPrintable(describe(r)));
        QVERIFY2(r.err.contains(QStringLiteral("warning")) &&
                     r.err.contains(QStringLiteral("locked by another program")) &&
                     r.err.contains(QString::fromStdString(path.string())),
                 qPrintable(describe(r)));
        QCOMPARE(other.exec("ROLLBACK"), SQLITE_OK);
        QCOMPARE(store::sha256_file(path), before);
    }

    void storeLockedAgainstReadersExits1() {
        const fs::path path = makeStore("exclusive");
        const std::string before = store::sha256_file(path);
        test::SqliteConnection other(path);
        QCOMPARE(other.exec("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE"), SQLITE_OK);
        const CliResult r = runsList(path);
        QVERIFY2(r.exitCode == 1, qPrintable(describe(r)));
        QVERIFY2(r.out.isEmpty(), qPrintable(describe(r)));
        QVERIFY2(r.err.contains(QStringLiteral("locked")) &&
                     r.err.contains(QString::fromStdString(path.string())),
                 qPrintable(describe(r)));
        QCOMPARE(other.exec("ROLLBACK"), SQLITE_OK);
        QCOMPARE(store::sha256_file(path), before);
    }

    void readOnlyStoreIsListedButNotWritten() {
        const fs::path path = makeStore("read-only");
        const std::string before = store::sha256_file(path);
        test::setReadOnlyMode(path, true);
        const std::unique_ptr<void, std::function<void(void*)>> writableAgain(
            &dir_, [&](void*) { test::setReadOnlyMode(path, false); });
        // As root permission bits do not stop writes: the store's switch stands in for them.
        const QStringList env = test::permissionsStopWrites()
                                    ? QStringList()
                                    : QStringList{QStringLiteral("MYELIN_STORE_READ_ONLY=1")};
        CliResult r = runsList(path, env);
        QVERIFY2(r.exitCode == 0, qPrintable(describe(r)));
        QVERIFY2(r.out.contains(QStringLiteral("baseline")) &&
                     r.out.contains(QStringLiteral("crashed")),
                 qPrintable(describe(r)));
        QVERIFY2(r.err.contains(QStringLiteral("warning")) &&
                     r.err.contains(QStringLiteral("read-only")) &&
                     r.err.contains(QString::fromStdString(path.string())),
                 qPrintable(describe(r)));
        // The run whose process ended is shown as it is: marking it would be a write.
        QVERIFY2(r.out.contains(QStringLiteral("running")), qPrintable(describe(r)));

        r = runCliProcess({QStringLiteral("runs"), QStringLiteral("delete"), QStringLiteral("1"),
                           QStringLiteral("--store"), QString::fromStdString(path.string())},
                          kCliTimeoutMs, env);
        QVERIFY2(r.exitCode == 1, qPrintable(describe(r)));
        QVERIFY2(r.err.contains(QStringLiteral("cannot be renamed, tagged or deleted")),
                 qPrintable(describe(r)));
        QCOMPARE(store::sha256_file(path), before);
    }

    void damagedStoreExits1() {
        const fs::path path = makeStore("damaged");
        test::damageMiddlePage(path);
        const std::string before = store::sha256_file(path);
        const CliResult r = runsList(path);
        QVERIFY2(r.exitCode == 1, qPrintable(describe(r)));
        QVERIFY2(r.out.isEmpty(), qPrintable(describe(r)));
        QVERIFY2(r.err.contains(QStringLiteral("damaged")) &&
                     r.err.contains(QString::fromStdString(path.string())),
                 qPrintable(describe(r)));
        QCOMPARE(store::sha256_file(path), before);
    }

    void newerStoreExits1() {
        const fs::path path = makeStore("newer");
        test::makeNewer(path);
        const std::string before = store::sha256_file(path);
        const CliResult r = runsList(path);
        QVERIFY2(r.exitCode == 1, qPrintable(describe(r)));
        QVERIFY2(r.out.isEmpty(), qPrintable(describe(r)));
        QVERIFY2(r.err.contains(QStringLiteral("written by a newer Myelin")) &&
                     r.err.contains(QString::fromStdString(path.string())),
                 qPrintable(describe(r)));
        QCOMPARE(store::sha256_file(path), before);
    }
};

QTEST_GUILESS_MAIN(TestCliStoreConditions)
#include "test_cli_store_conditions.moc"
