// The studio with a run store that is locked by another program, read-only, damaged or written by
// a newer Myelin (issue 41): the project opens and stays editable, the Runs tab says which
// condition in words (naming the file), a readable store is still listed, training into a
// read-only store is refused with a message, and the store file's bytes never change.
#include "document/project_document.h"
#include "runs/runs_browser.h"
#include "shell/main_window.h"
#include "training/training_controller.h"

#include <myelin/io/project.h>
#include <myelin/store/run_store.h>

#include <QAction>
#include <QFile>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>

#include "blobs_project.h"
#include "store_conditions.h"
#include "ui_test_support.h"

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>

using namespace myelin;
using myelin::ui::MainWindow;
using myelin::ui::RunsBrowser;
using myelin::ui::TrainingController;
namespace fs = std::filesystem;

namespace {
constexpr int kLoadTimeoutMs = 30000;

// Restores an environment variable when the test ends, however it ends.
class ScopedEnv {
  public:
    ScopedEnv(const char* name, const QByteArray& value) : name_(name), old_(qgetenv(name)) {
        qputenv(name, value);
    }
    ~ScopedEnv() {
        if (old_.isNull())
            qunsetenv(name_);
        else
            qputenv(name_, old_);
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

  private:
    const char* name_;
    QByteArray old_;
};

// Opens the studio on an example project with `store` as its run store (MYELIN_STORE), shows
// the Runs tab and returns what it says about the store once it has read it.
QString runsTabNote(MainWindow& w) {
    RunsBrowser* browser = w.runsBrowser();
    browser->setBusyTimeout(std::chrono::milliseconds(100)); // the bounded wait, short for tests
    QSignalSpy loaded(browser, &RunsBrowser::runsLoaded);
    w.workspaceTabs()->setCurrentWidget(w.findChild<QWidget*>(QStringLiteral("runsPage")));
    if (loaded.isEmpty() && !loaded.wait(kLoadTimeoutMs)) return QStringLiteral("(not loaded)");
    return browser->storeNote();
}

// The rest of the studio still works: the project is open and editable, and its pages show.
bool studioStillUsable(MainWindow& w) {
    if (!w.document()->isOpen() || !w.editingLockReason().isEmpty()) return false;
    for (int i = 0; i < w.workspaceTabs()->count(); ++i) {
        w.workspaceTabs()->setCurrentIndex(i);
        if (w.workspaceTabs()->currentIndex() != i) return false;
    }
    return true;
}

// The runs the Runs tab lists, as the CSV export writes them.
QByteArray listedRuns(MainWindow& w, const QTemporaryDir& dir) {
    // Every run, not only the open project's.
    if (auto* all = w.runsBrowser()->findChild<QToolButton*>(QStringLiteral("runsScopeAll")))
        all->setChecked(true);
    const QString csv = dir.filePath(QStringLiteral("listed.csv"));
    QString error;
    if (!w.runsBrowser()->exportCsv(csv, &error)) return error.toUtf8();
    QFile file(csv);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}
} // namespace

class TestRunsStoreConditions : public QObject {
    Q_OBJECT

    QTemporaryDir home_;

    // In a folder of its own: the read-only case makes that folder read-only.
    fs::path makeStore(const QTemporaryDir& dir, const char* name) {
        const fs::path path = fs::path(dir.path().toStdString()) / "store" / name;
        fs::create_directories(path.parent_path());
        test::makeStore(path);
        return path;
    }

  private slots:
    void initTestCase() { myelin::test::isolateStudioSettings(home_); }

    void lockedStoreIsListedUnderANote() {
        QTemporaryDir dir;
        const fs::path path = makeStore(dir, "locked.sqlite");
        const std::string before = store::sha256_file(path);
        {
            test::SqliteConnection other(path);
            QCOMPARE(other.exec("BEGIN EXCLUSIVE"), SQLITE_OK);
            ScopedEnv storeEnv("MYELIN_STORE", QByteArray::fromStdString(path.string()));
            MainWindow w(myelin::test::examplePath("fashion_mlp"));
            const QString note = runsTabNote(w);
            QVERIFY2(note.contains(QStringLiteral("locked by another program")), qPrintable(note));
            QVERIFY2(note.contains(QString::fromStdString(path.string())), qPrintable(note));
            QVERIFY(listedRuns(w, dir).contains("baseline"));
            QVERIFY(studioStillUsable(w));
            QCOMPARE(other.exec("ROLLBACK"), SQLITE_OK);
        }
        QCOMPARE(store::sha256_file(path), before);
    }

    void readOnlyStoreIsListedButNotWritten() {
        QTemporaryDir dir;
        const fs::path path = makeStore(dir, "read-only.sqlite");
        const std::string before = store::sha256_file(path);
        // chmod where permission bits stop writes; as root (where they do not) the store's
        // MYELIN_STORE_READ_ONLY switch stands in for them.
        test::setReadOnlyMode(path, true);
        const std::unique_ptr<void, std::function<void(void*)>> writableAgain(
            &dir, [&](void*) { test::setReadOnlyMode(path, false); });
        std::optional<ScopedEnv> forced;
        if (!test::permissionsStopWrites()) forced.emplace("MYELIN_STORE_READ_ONLY", "1");
        {
            ScopedEnv storeEnv("MYELIN_STORE", QByteArray::fromStdString(path.string()));
            MainWindow w(myelin::test::examplePath("fashion_mlp"));
            const QString note = runsTabNote(w);
            QVERIFY2(note.contains(QStringLiteral("The run store is read-only")), qPrintable(note));
            QVERIFY2(note.contains(QString::fromStdString(path.string())), qPrintable(note));
            const QByteArray listed = listedRuns(w, dir);
            QVERIFY2(listed.contains("baseline") && listed.contains("crashed"), listed.constData());
            // Nothing offers to change it.
            w.runsBrowser()->selectRuns({1});
            for (const char* name : {"renameRunAction", "deleteRunsAction", "tagRunsAction",
                                     "resumeRunAction", "forkRunAction"}) {
                auto* action = w.runsBrowser()->findChild<QAction*>(QLatin1String(name));
                QVERIFY(action);
                QVERIFY2(!action->isEnabled(), name);
            }
            QVERIFY(studioStillUsable(w));
        }
        {
            // Train: refused, saying why, and nothing recorded.
            const QString projectPath = myelin::test::writeBlobsProject(dir.path(), 1);
            const io::Project project = io::load_project(projectPath.toStdString());
            TrainingController controller;
            controller.setStorePath(QString::fromStdString(path.string()));
            QSignalSpy errors(&controller, &TrainingController::runError);
            QSignalSpy finished(&controller, &TrainingController::finished);
            if (controller.start(project, dir.path()))
                QVERIFY(finished.wait(kLoadTimeoutMs) || !finished.isEmpty());
            QVERIFY(!errors.isEmpty());
            const QString message = errors.last().at(0).toString();
            QVERIFY2(message.contains(QStringLiteral("read-only")) &&
                         message.contains(QStringLiteral("new runs cannot be recorded")),
                     qPrintable(message));
            QCOMPARE(controller.state(), TrainingController::State::Idle);
        }
        QCOMPARE(store::sha256_file(path), before);
    }

    void damagedStoreIsShownUnwritten() {
        QTemporaryDir dir;
        const fs::path path = makeStore(dir, "damaged.sqlite");
        test::damageMiddlePage(path);
        const std::string before = store::sha256_file(path);
        {
            ScopedEnv storeEnv("MYELIN_STORE", QByteArray::fromStdString(path.string()));
            MainWindow w(myelin::test::examplePath("fashion_mlp"));
            const QString note = runsTabNote(w);
            QVERIFY2(note.contains(QStringLiteral("The run store is damaged")), qPrintable(note));
            QVERIFY2(note.contains(QString::fromStdString(path.string())), qPrintable(note));
            QVERIFY(studioStillUsable(w));
        }
        QCOMPARE(store::sha256_file(path), before);
    }

    void newerStoreIsShownUnwritten() {
        QTemporaryDir dir;
        const fs::path path = makeStore(dir, "newer.sqlite");
        test::makeNewer(path);
        const std::string before = store::sha256_file(path);
        {
            ScopedEnv storeEnv("MYELIN_STORE", QByteArray::fromStdString(path.string()));
            MainWindow w(myelin::test::examplePath("fashion_mlp"));
            const QString note = runsTabNote(w);
            QVERIFY2(note.contains(QStringLiteral("written by a newer version of Myelin")),
                     qPrintable(note));
            QVERIFY2(
                note.contains(QStringLiteral("schema version %1").arg(store::kSchemaVersion + 1)),
                qPrintable(note));
            QVERIFY2(note.contains(QString::fromStdString(path.string())), qPrintable(note));
            QVERIFY(studioStillUsable(w));
        }
        QCOMPARE(store::sha256_file(path), before);
    }
};

QTEST_MAIN(TestRunsStoreConditions)
#include "test_runs_store_conditions.moc"
