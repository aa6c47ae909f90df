// The runs browser over stores built in the test: lineage nesting and branch steps, key metrics,
// status colours, a run written by another process (the CLI) appearing by itself, rename / tags /
// note through the UI's actions, delete (rows and files of that run only; a running run refused),
// filters, CSV export, selection and expansion kept across refreshes, and stores it cannot show.
#include "blobs_project.h"
#include "runs/run_tree_model.h"
#include "runs/runs_browser.h"
#include "ui_test_support.h"
#include "widgets/theme.h"

#include <myelin/store/run_store.h>

#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QToolButton>
#include <QTreeView>
#include <QtTest>

#include <sqlite3.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <sys/wait.h>
#include <unistd.h>

using myelin::ui::RunsBrowser;
using myelin::ui::RunTreeModel;
namespace store = myelin::store;
namespace colors = myelin::ui::colors;
namespace fs = std::filesystem;

namespace {

constexpr int kLoadMs = 10000;

double now() {
    return double(QDateTime::currentMSecsSinceEpoch()) / 1000.0;
}

// The runs of the lineage store, by role.
struct Lineage {
    QString path;
    int64_t parent = 0, fork = 0, resumed = 0, failed = 0, running = 0, other = 0;
};

fs::path writeCheckpoint(store::RunStore& runs, int64_t run, int64_t step) {
    const fs::path folder = runs.artifact_folder(run) / "checkpoints";
    fs::create_directories(folder);
    const fs::path file = folder / ("step-" + std::to_string(step) + ".safetensors");
    std::ofstream(file, std::ios::binary) << "checkpoint of run " << run << " at " << step;
    runs.add_artifact(run, {"checkpoint", file, step});
    return file;
}

// A loss falling from ~2.3 with a little wiggle, validation per 100 steps.
void logCurves(store::RunStore& runs, int64_t run, int64_t first, int64_t last, double scale) {
    std::vector<store::MetricPoint> points;
    for (int64_t s = first; s <= last; ++s) {
        const double loss = 0.25 + 2.05 * std::exp(-double(s) / (260.0 * scale)) +
                            0.04 * std::sin(double(s) * 0.37);
        points.push_back({run, "loss", s, loss, 0});
        if (s % 100 == 0 && s > 0) {
            points.push_back({run, "val_loss", s, loss + 0.06, 0});
            points.push_back(
                {run, "val_accuracy", s, 0.95 - 0.8 * std::exp(-double(s) / 300.0), 0});
        }
    }
    runs.log_metrics(points);
}

Lineage buildLineage(const QString& dir) {
    Lineage l;
    l.path = QDir(dir).filePath(QStringLiteral("runs.sqlite"));
    store::RunStore runs = store::RunStore::open(l.path.toStdString());
    const std::string project = QDir(dir).filePath(QStringLiteral("fashion.myelin")).toStdString();
    const double t = now();
    auto info = [&](const char* name, double hoursAgo) {
        store::RunInfo i;
        i.name = name;
        i.device = "cpu";
        i.threads = 8;
        i.started_at = t - hoursAgo * 3600;
        i.project_path = project;
        return i;
    };
    l.parent = runs.create_run(info("fashion_cnn", 5));
    logCurves(runs, l.parent, 0, 2000, 1.0);
    writeCheckpoint(runs, l.parent, 1000);
    const fs::path branch = writeCheckpoint(runs, l.parent, 1400);
    writeCheckpoint(runs, l.parent, 2000);
    runs.set_run_tags(l.parent, {"baseline"});
    runs.finish_run(l.parent, store::RunStatus::Finished);

    store::RunInfo fork = info("fashion_cnn lr 3e-4", 3);
    fork.parent_run = l.parent;
    fork.parent_checkpoint = branch.string();
    l.fork = runs.create_run(fork);
    runs.set_params(l.fork, {{"fork.from", std::to_string(l.parent) + "@1400"},
                             {"fork.diff.training.optimizer.lr", "0.001 -> 0.0003"}});
    logCurves(runs, l.fork, 1401, 1800, 0.8);
    const fs::path forkCheckpoint = writeCheckpoint(runs, l.fork, 1800);
    runs.set_run_tags(l.fork, {"lr-sweep"});
    runs.set_run_note(l.fork, "lower lr after the plateau, stopped to check the curves");
    runs.finish_run(l.fork, store::RunStatus::Stopped);

    store::RunInfo resume = info("fashion_cnn lr 3e-4", 2);
    resume.parent_run = l.fork;
    resume.parent_checkpoint = forkCheckpoint.string();
    l.resumed = runs.create_run(resume);
    logCurves(runs, l.resumed, 1801, 2600, 0.8);
    runs.set_run_tags(l.resumed, {"best", "lr-sweep"});
    runs.finish_run(l.resumed, store::RunStatus::Finished);

    l.failed = runs.create_run(info("fashion_cnn wide", 1.5));
    logCurves(runs, l.failed, 0, 240, 1.0);
    runs.finish_run(l.failed, store::RunStatus::Failed,
                    "fc2: loss is NaN at step 241 (first non-finite output: conv2)");

    l.other = runs.create_run(info("blobs mlp", 1.2));
    runs.set_run_note(l.other, "quick check, 1 epoch");
    runs.finish_run(l.other, store::RunStatus::Interrupted,
                    "process 4242 on lab-1 ended without finishing the run");

    l.running = runs.create_run(info("fashion_cnn dropout 0.3", 0.3)); // this process: alive
    logCurves(runs, l.running, 0, 700, 1.1);
    runs.flush();
    return l;
}

// The index (column `column`) of run `id` in the view's model, searched through the tree.
QModelIndex find(const QAbstractItemModel* model, qint64 id, int column = 0,
                 const QModelIndex& parent = {}) {
    for (int r = 0; r < model->rowCount(parent); ++r) {
        const QModelIndex index = model->index(r, 0, parent);
        if (index.data(RunTreeModel::RunIdRole).toLongLong() == id)
            return model->index(r, column, parent);
        if (QModelIndex inside = find(model, id, column, index); inside.isValid()) return inside;
    }
    return {};
}

QString cell(const QAbstractItemModel* model, qint64 id, int column) {
    return find(model, id, column).data().toString();
}

qint64 parentOf(const QAbstractItemModel* model, qint64 id) {
    const QModelIndex parent = find(model, id).parent();
    return parent.isValid() ? parent.data(RunTreeModel::RunIdRole).toLongLong() : -1;
}

int listedCount(const QAbstractItemModel* model, const QModelIndex& parent = {}) {
    int n = model->rowCount(parent);
    for (int r = 0; r < model->rowCount(parent); ++r)
        n += listedCount(model, model->index(r, 0, parent));
    return n;
}

QAction* action(RunsBrowser& b, const char* name) {
    return b.findChild<QAction*>(QLatin1String(name));
}

// The dialog `name` the browser opened (null after 2 s without one).
template <typename T> T* waitFor(QWidget& parent, const char* name) {
    T* found = nullptr;
    const bool shown = QTest::qWaitFor(
        [&] {
            for (T* child : parent.findChildren<T*>(QLatin1String(name)))
                if (child->isVisible()) found = child; // closed ones wait for deleteLater
            return found != nullptr;
        },
        2000);
    return shown ? found : nullptr;
}

constexpr int kMetric0 = RunTreeModel::FirstMetricColumn;

} // namespace

class TestRunsBrowser : public QObject {
    Q_OBJECT

    QTemporaryDir home_;

    // A browser on `path`, loaded.
    static void open(RunsBrowser& browser, const QString& path) {
        QSignalSpy loaded(&browser, &RunsBrowser::runsLoaded);
        browser.setStorePath(path);
        QVERIFY(loaded.wait(kLoadMs));
    }
    static QAbstractItemModel* model(RunsBrowser& browser) {
        return browser.findChild<QTreeView*>(QStringLiteral("runsTree"))->model();
    }

  private slots:
    void initTestCase() {
        myelin::test::isolateStudioSettings(home_);
        myelin::ui::applyStudioTheme(*qApp);
    }

    void listsRunsAsALineageTree() {
        QTemporaryDir dir;
        const Lineage l = buildLineage(dir.path());
        RunsBrowser browser;
        open(browser, l.path);
        const QAbstractItemModel* m = model(browser);
        QCOMPARE(listedCount(m), 6);
        QCOMPARE(parentOf(m, l.parent), -1);
        QCOMPARE(parentOf(m, l.fork), l.parent);
        QCOMPARE(parentOf(m, l.resumed), l.fork);
        QCOMPARE(parentOf(m, l.failed), -1);
        QCOMPARE(cell(m, l.fork, RunTreeModel::LineageColumn),
                 QStringLiteral("forked at step 1400"));
        QCOMPARE(cell(m, l.resumed, RunTreeModel::LineageColumn),
                 QStringLiteral("resumed at step 1800"));
        QCOMPARE(cell(m, l.parent, RunTreeModel::LineageColumn), QString());
        QCOMPARE(cell(m, l.parent, RunTreeModel::StatusColumn), QStringLiteral("Finished"));
        QCOMPARE(cell(m, l.running, RunTreeModel::StatusColumn), QStringLiteral("Running"));
        QCOMPARE(cell(m, l.failed, RunTreeModel::DeviceColumn), QStringLiteral("cpu · 8 threads"));
        QCOMPARE(cell(m, l.parent, RunTreeModel::TagsColumn), QStringLiteral("baseline"));
        QCOMPARE(cell(m, l.resumed, RunTreeModel::TagsColumn), QStringLiteral("best, lr-sweep"));
        QCOMPARE(cell(m, l.parent, RunTreeModel::DurationColumn).left(3), QStringLiteral("5 h"));
        // Status colours come from the theme.
        QCOMPARE(find(m, l.failed, RunTreeModel::StatusColumn).data(Qt::ForegroundRole),
                 QVariant(colors::kRunFailed));
        QCOMPARE(find(m, l.running, RunTreeModel::StatusColumn).data(Qt::ForegroundRole),
                 QVariant(colors::kRunRunning));
        QVERIFY(find(m, l.failed, RunTreeModel::StatusColumn)
                    .data(Qt::ToolTipRole)
                    .toString()
                    .contains(QStringLiteral("loss is NaN")));

        // Best and last of each key metric, against the store.
        store::RunStore runs = store::RunStore::open(l.path.toStdString());
        for (const int64_t id : {l.parent, l.fork, l.resumed}) {
            const char* keys[] = {"loss", "val_loss", "val_accuracy"};
            for (int k = 0; k < 3; ++k) {
                const auto series = runs.metric_series(id, keys[k]);
                QVERIFY(!series.empty());
                double best = series.front().value;
                for (const auto& p : series)
                    best = k == 2 ? std::max(best, p.value) : std::min(best, p.value);
                QCOMPARE(find(m, id, kMetric0 + 2 * k).data(RunTreeModel::SortRole).toDouble(),
                         best);
                QCOMPARE(find(m, id, kMetric0 + 2 * k + 1).data(RunTreeModel::SortRole).toDouble(),
                         series.back().value);
                QCOMPARE(cell(m, id, kMetric0 + 2 * k + 1),
                         QString::number(series.back().value, 'g', 4));
            }
        }
    }

    void aRunOfAnotherProcessAppearsByItself() {
        QTemporaryDir dir;
        const QString project = myelin::test::writeBlobsProject(dir.path(), 2);
        QVERIFY(!project.isEmpty());
        const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
        RunsBrowser browser;
        browser.setProjectPath(project);
        open(browser, path); // no store yet: the browser waits for the file
        QVERIFY(browser.findChild<QLabel*>(QStringLiteral("runsMessage"))
                    ->text()
                    .contains(QStringLiteral("No runs yet")));

        QProcess cli;
        cli.setProcessChannelMode(QProcess::MergedChannels);
        cli.start(QStringLiteral(MYELIN_CLI_PATH),
                  {QStringLiteral("train"), project, QStringLiteral("--store"), path,
                   QStringLiteral("--name"), QStringLiteral("from the cli")});
        QVERIFY(cli.waitForStarted());
        // Nobody calls refresh(): the browser's own timer finds the run.
        QTRY_VERIFY_WITH_TIMEOUT(find(model(browser), 1).isValid(), 20000);
        QCOMPARE(cell(model(browser), 1, RunTreeModel::NameColumn), QStringLiteral("from the cli"));
        QVERIFY(cli.state() == QProcess::NotRunning || cli.waitForFinished(60000));
        QVERIFY2(cli.exitStatus() == QProcess::NormalExit && cli.exitCode() == 0,
                 cli.readAll().constData());
        QTRY_COMPARE_WITH_TIMEOUT(cell(model(browser), 1, RunTreeModel::StatusColumn),
                                  QStringLiteral("Finished"), 10000);
        // The CLI recorded the project file: the run is listed under "This project".
        QVERIFY(browser.findChild<QToolButton*>(QStringLiteral("runsScopeProject"))->isChecked());
        QCOMPARE(listedCount(model(browser)), 1);
        browser.setProjectPath(dir.filePath(QStringLiteral("other.myelin")));
        QCOMPARE(listedCount(model(browser)), 0);
        QVERIFY(browser.findChild<QLabel*>(QStringLiteral("runsScopeHint"))->isVisibleTo(&browser));
        browser.findChild<QToolButton*>(QStringLiteral("runsScopeAll"))->click();
        QCOMPARE(listedCount(model(browser)), 1);
    }

    void renameTagsAndNoteThroughTheActions() {
        QTemporaryDir dir;
        const Lineage l = buildLineage(dir.path());
        RunsBrowser browser;
        open(browser, l.path);
        store::RunStore runs = store::RunStore::open(l.path.toStdString());

        browser.selectRuns({l.failed});
        QCOMPARE(browser.selectedRuns(), QList<qint64>{l.failed});
        QVERIFY(action(browser, "renameRunAction")->isEnabled());
        action(browser, "renameRunAction")->trigger();
        auto* rename = waitFor<QInputDialog>(browser, "renameRunDialog");
        QVERIFY(rename);
        QCOMPARE(rename->textValue(), QStringLiteral("fashion_cnn wide"));
        rename->setTextValue(QStringLiteral("  wide, diverged  "));
        rename->accept();
        QCOMPARE(runs.run(l.failed).name, std::string("wide, diverged"));
        QTRY_COMPARE_WITH_TIMEOUT(cell(model(browser), l.failed, RunTreeModel::NameColumn),
                                  QStringLiteral("wide, diverged"), kLoadMs);

        action(browser, "noteRunAction")->trigger();
        auto* note = waitFor<QInputDialog>(browser, "runNoteDialog");
        QVERIFY(note);
        note->setTextValue(QStringLiteral("NaN at step 241\nretry with grad clipping"));
        note->accept();
        QCOMPARE(runs.run(l.failed).note, std::string("NaN at step 241\nretry with grad clipping"));
        QTRY_COMPARE_WITH_TIMEOUT(cell(model(browser), l.failed, RunTreeModel::NoteColumn),
                                  QStringLiteral("NaN at step 241 …"), kLoadMs);

        // Tags of two runs: the shared one is edited, the others stay.
        browser.selectRuns({l.fork, l.resumed});
        QTRY_COMPARE(browser.selectedRuns().size(), 2);
        action(browser, "tagRunsAction")->trigger();
        auto* tags = waitFor<QInputDialog>(browser, "runTagsDialog");
        QVERIFY(tags);
        QCOMPARE(tags->textValue(), QStringLiteral("lr-sweep"));
        tags->setTextValue(QStringLiteral("lr-sweep-2 ,  keep,"));
        tags->accept();
        QCOMPARE(runs.run(l.fork).tags, (std::vector<std::string>{"keep", "lr-sweep-2"}));
        QCOMPARE(runs.run(l.resumed).tags,
                 (std::vector<std::string>{"best", "keep", "lr-sweep-2"}));
        QTRY_COMPARE_WITH_TIMEOUT(cell(model(browser), l.resumed, RunTreeModel::TagsColumn),
                                  QStringLiteral("best, keep, lr-sweep-2"), kLoadMs);

        // A bad tag: the store's message, and no run changed.
        action(browser, "tagRunsAction")->trigger();
        tags = waitFor<QInputDialog>(browser, "runTagsDialog");
        QVERIFY(tags);
        tags->setTextValue(QStringLiteral("fine, ") + QString(70, QLatin1Char('x')));
        tags->accept();
        auto* error = waitFor<QMessageBox>(browser, "runsErrorBox");
        QVERIFY(error);
        QVERIFY2(error->text().contains(QStringLiteral("longer than 64 bytes")),
                 qPrintable(error->text()));
        error->close();
        QCOMPARE(runs.run(l.fork).tags, (std::vector<std::string>{"keep", "lr-sweep-2"}));
        QCOMPARE(runs.run(l.resumed).tags,
                 (std::vector<std::string>{"best", "keep", "lr-sweep-2"}));
    }

    void requestsCarryTheSelectedRun() {
        QTemporaryDir dir;
        const Lineage l = buildLineage(dir.path());
        RunsBrowser browser;
        open(browser, l.path);
        QSignalSpy selection(&browser, &RunsBrowser::selectionChanged);
        QSignalSpy resume(&browser, &RunsBrowser::resumeRequested);
        QSignalSpy fork(&browser, &RunsBrowser::forkRequested);
        QSignalSpy evaluate(&browser, &RunsBrowser::evaluateRequested);
        browser.selectRuns({l.fork});
        QCOMPARE(selection.count(), 1);
        QCOMPARE(selection.last().at(0).value<QList<qint64>>(), QList<qint64>{l.fork});
        action(browser, "resumeRunAction")->trigger();
        action(browser, "forkRunAction")->trigger();
        action(browser, "evaluateRunAction")->trigger();
        QCOMPARE(resume.count(), 1);
        QCOMPARE(resume.last().at(0).toLongLong(), l.fork);
        QCOMPARE(fork.last().at(0).toLongLong(), l.fork);
        QCOMPARE(evaluate.last().at(0).toLongLong(), l.fork);
        // A running run is neither resumed nor forked; several runs are not one.
        browser.selectRuns({l.running});
        QVERIFY(!action(browser, "resumeRunAction")->isEnabled());
        QVERIFY(!action(browser, "forkRunAction")->isEnabled());
        browser.selectRuns({l.parent, l.failed});
        QVERIFY(!action(browser, "evaluateRunAction")->isEnabled());
        QVERIFY(action(browser, "tagRunsAction")->isEnabled());
        QCOMPARE(browser.selectedRuns().size(), 2);
    }

    void aRunWhoseProcessDiedBecomesInterrupted() {
        QTemporaryDir dir;
        const Lineage l = buildLineage(dir.path());
        RunsBrowser browser;
        open(browser, l.path);
        // A process that has ended (and been reaped): its run was never finished.
        const pid_t child = fork();
        if (child == 0) {
            execl("/bin/true", "true", static_cast<char*>(nullptr));
            _exit(0);
        }
        waitpid(child, nullptr, 0);
        int64_t orphan = 0;
        {
            store::StoreOptions options;
            options.mark_interrupted_at_open = false;
            store::RunStore runs = store::RunStore::open(l.path.toStdString(), options);
            store::RunInfo info;
            info.name = "orphan";
            info.pid = child;
            orphan = runs.create_run(info);
        }
        QTRY_COMPARE_WITH_TIMEOUT(cell(model(browser), orphan, RunTreeModel::StatusColumn),
                                  QStringLiteral("Interrupted"), kLoadMs);
        QCOMPARE(cell(model(browser), l.running, RunTreeModel::StatusColumn),
                 QStringLiteral("Running")); // this process is alive
    }

    void deleteRemovesThatRunsRowsAndFilesOnly() {
        QTemporaryDir dir;
        const Lineage l = buildLineage(dir.path());
        RunsBrowser browser;
        open(browser, l.path);
        store::RunStore runs = store::RunStore::open(l.path.toStdString());
        const fs::path doomedFolder = runs.artifact_folder(l.fork);
        const fs::path keptFolder = runs.artifact_folder(l.parent);
        const fs::path doomed = writeCheckpoint(runs, l.fork, 1600);
        // The resumed run started from this one: it stays while that run lists it.
        const fs::path shared = doomedFolder / "checkpoints" / "step-1800.safetensors";
        QVERIFY(fs::exists(shared));

        browser.selectRuns({l.fork});
        action(browser, "deleteRunsAction")->trigger();
        auto* box = waitFor<QMessageBox>(browser, "deleteRunsBox");
        QVERIFY(box);
        QVERIFY2(box->text().contains(QStringLiteral("#%1 fashion_cnn lr 3e-4").arg(l.fork)),
                 qPrintable(box->text()));
        QVERIFY2(box->informativeText().contains(QString::fromStdString(doomedFolder.string())),
                 qPrintable(box->informativeText()));
        QVERIFY(box->informativeText().contains(QStringLiteral("1 run branched from them stays")));
        myelin::test::saveScreenshot(*box, QStringLiteral("runs_browser_delete.png"));
        box->findChild<QPushButton*>(QStringLiteral("deleteRunsConfirm"))->click();

        QTRY_VERIFY_WITH_TIMEOUT(!find(model(browser), l.fork).isValid(), kLoadMs);
        QVERIFY(!fs::exists(doomed));
        QVERIFY(fs::exists(shared));
        auto* kept = waitFor<QMessageBox>(browser, "runsErrorBox"); // says which files stayed
        QVERIFY(kept);
        QVERIFY2(kept->text().contains(QString::fromStdString(shared.string()) +
                                       QStringLiteral(": another run lists it")),
                 qPrintable(kept->text()));
        kept->close();
        QVERIFY(fs::exists(keptFolder / "checkpoints" / "step-1400.safetensors"));
        QVERIFY(fs::exists(runs.artifact_folder(l.resumed)) == false); // it never had files
        QCOMPARE(listedCount(model(browser)), 5);
        QCOMPARE(parentOf(model(browser), l.resumed), -1); // kept, without its parent
        QCOMPARE(runs.list_runs().size(), size_t(5));
        QVERIFY(runs.metric_series(l.fork, "loss").empty());
        QCOMPARE(runs.metric_series(l.parent, "loss").size(), size_t(2001));

        // A run whose process is alive: asked, then refused with the store's message.
        browser.selectRuns({l.running});
        action(browser, "deleteRunsAction")->trigger();
        box = waitFor<QMessageBox>(browser, "deleteRunsBox");
        QVERIFY(box);
        QVERIFY(box->informativeText().contains(QStringLiteral("still running")));
        box->findChild<QPushButton*>(QStringLiteral("deleteRunsConfirm"))->click();
        auto* error = waitFor<QMessageBox>(browser, "runsErrorBox");
        QVERIFY(error);
        QVERIFY2(error->text().contains(QStringLiteral("stop it before deleting it")),
                 qPrintable(error->text()));
        QVERIFY(find(model(browser), l.running).isValid());
        QCOMPARE(runs.run(l.running).status, store::RunStatus::Running);
    }

    void filtersByTextStatusAndTag() {
        QTemporaryDir dir;
        const Lineage l = buildLineage(dir.path());
        RunsBrowser browser;
        open(browser, l.path);
        QAbstractItemModel* m = model(browser);
        auto* status = browser.findChild<QComboBox*>(QStringLiteral("runsStatusFilter"));
        status->setCurrentIndex(status->findText(QStringLiteral("Failed")));
        QCOMPARE(listedCount(m), 1);
        QVERIFY(find(m, l.failed).isValid());
        // A matching child keeps its parents.
        status->setCurrentIndex(status->findText(QStringLiteral("Stopped")));
        QCOMPARE(listedCount(m), 2);
        QCOMPARE(parentOf(m, l.fork), l.parent);
        status->setCurrentIndex(0);

        auto* tag = browser.findChild<QComboBox*>(QStringLiteral("runsTagFilter"));
        QCOMPARE(tag->count(), 4); // All tags, baseline, best, lr-sweep
        tag->setCurrentIndex(tag->findText(QStringLiteral("best")));
        QCOMPARE(listedCount(m), 3); // the resumed run under its fork under the parent
        QVERIFY(find(m, l.resumed).isValid());
        tag->setCurrentIndex(0);

        auto* text = browser.findChild<QLineEdit*>(QStringLiteral("runsFilter"));
        text->setText(QStringLiteral("QUICK CHECK")); // the note of `other`, any case
        QCOMPARE(listedCount(m), 1);
        QVERIFY(find(m, l.other).isValid());
        text->setText(QStringLiteral("dropout"));
        QCOMPARE(listedCount(m), 1);
        QVERIFY(find(m, l.running).isValid());
        text->clear();
        QCOMPARE(listedCount(m), 6);
        QCOMPARE(browser.findChild<QLabel*>(QStringLiteral("runsCount"))->text(),
                 QStringLiteral("6 runs"));
    }

    // A learning-rate range test (a run tagged lr-find) is not listed until its tag is chosen.
    void rangeTestsAreListedWhenTheirTagIsChosen() {
        QTemporaryDir dir;
        const Lineage l = buildLineage(dir.path());
        {
            store::RunStore runs = store::RunStore::open(l.path.toStdString());
            runs.set_run_tags(l.other, {"lr-find"});
        }
        RunsBrowser browser;
        open(browser, l.path);
        QAbstractItemModel* m = model(browser);
        QCOMPARE(listedCount(m), 5);
        QVERIFY(!find(m, l.other).isValid());
        auto* tag = browser.findChild<QComboBox*>(QStringLiteral("runsTagFilter"));
        tag->setCurrentIndex(tag->findText(QStringLiteral("lr-find")));
        QCOMPARE(listedCount(m), 1);
        QVERIFY(find(m, l.other).isValid());
    }

    void exportsTheListedRunsAsCsv() {
        QTemporaryDir dir;
        const Lineage l = buildLineage(dir.path());
        {
            store::RunStore runs = store::RunStore::open(l.path.toStdString());
            runs.set_run_note(l.other, "said \"maybe\", then\nstopped");
        }
        RunsBrowser browser;
        open(browser, l.path);
        browser.findChild<QLineEdit*>(QStringLiteral("runsFilter"))->setText(QStringLiteral("lr"));
        const QString csv = dir.filePath(QStringLiteral("runs.csv"));
        QString error;
        QVERIFY2(browser.exportCsv(csv, &error), qPrintable(error));
        QFile file(csv);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray text = file.readAll();
        QList<QByteArray> lines = text.split('\n');
        QCOMPARE(lines.takeLast(), QByteArray()); // ends with a line break
        // Listed: the parent (kept for its children), the fork, its resume.
        QCOMPARE(lines.size(), 4);
        for (const QByteArray& line : lines)
            QVERIFY(line.endsWith('\r'));
        QVERIFY(lines[0].startsWith("id,name,status,parent,origin,branch_step,started,ended,"));
        QVERIFY(lines[0].contains(",best_loss,last_loss,best_val_loss,last_val_loss,"
                                  "best_val_accuracy,last_val_accuracy,tags,note\r"));
        QVERIFY2(lines[2].startsWith(QByteArray::number(qint64(l.fork)) +
                                     ",fashion_cnn lr 3e-4,stopped," +
                                     QByteArray::number(qint64(l.parent)) + ",forked,1400,"),
                 lines[2].constData());
        QVERIFY(lines[3].contains(",\"best, lr-sweep\","));

        // Quoting (RFC 4180) of a note with a comma, quotes and a line break.
        browser.findChild<QLineEdit*>(QStringLiteral("runsFilter"))->clear();
        QVERIFY(browser.exportCsv(csv, &error));
        file.close(); // the export replaced the file
        QVERIFY(file.open(QIODevice::ReadOnly));
        QVERIFY(file.readAll().contains(",\"said \"\"maybe\"\", then\nstopped\"\r\n"));
        QVERIFY(!browser.exportCsv(dir.filePath(QStringLiteral("no/such/folder/x.csv")), &error));
        QVERIFY2(error.contains(QStringLiteral("no/such/folder")), qPrintable(error));
    }

    void selectionAndExpansionSurviveARefresh() {
        QTemporaryDir dir;
        const Lineage l = buildLineage(dir.path());
        RunsBrowser browser;
        open(browser, l.path);
        auto* tree = browser.findChild<QTreeView*>(QStringLiteral("runsTree"));
        QVERIFY(tree->isExpanded(find(model(browser), l.parent)));
        tree->collapse(find(model(browser), l.fork));
        browser.selectRuns({l.resumed, l.failed});
        QSignalSpy selection(&browser, &RunsBrowser::selectionChanged);
        {
            // A new run and a renamed one from another connection: the tree is rebuilt.
            store::RunStore runs = store::RunStore::open(l.path.toStdString());
            store::RunInfo child;
            child.name = "another fork";
            child.parent_run = l.parent;
            runs.create_run(child);
            runs.rename_run(l.failed, "renamed elsewhere");
        }
        QTRY_COMPARE_WITH_TIMEOUT(listedCount(model(browser)), 7, kLoadMs);
        QTRY_COMPARE(cell(model(browser), l.failed, RunTreeModel::NameColumn),
                     QStringLiteral("renamed elsewhere"));
        const QList<qint64> selected = browser.selectedRuns();
        QCOMPARE(QSet<qint64>(selected.begin(), selected.end()),
                 (QSet<qint64>{l.resumed, l.failed}));
        QVERIFY(tree->isExpanded(find(model(browser), l.parent)));
        QVERIFY(!tree->isExpanded(find(model(browser), l.fork)));
        QCOMPARE(selection.count(), 0); // nothing the person chose changed
    }

    void storesItCannotShowSayWhy() {
        QTemporaryDir dir;
        RunsBrowser browser;
        auto* message = browser.findChild<QLabel*>(QStringLiteral("runsMessage"));

        const QString garbage = dir.filePath(QStringLiteral("garbage.sqlite"));
        QFile file(garbage);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(QByteArray(4096, 'x'));
        file.close();
        open(browser, garbage);
        QVERIFY2(message->isVisibleTo(&browser) || message->parentWidget(), "message shown");
        QVERIFY2(message->text().contains(garbage), qPrintable(message->text()));
        QVERIFY(message->property("problem").toBool());

        const QString newer = dir.filePath(QStringLiteral("newer.sqlite"));
        store::RunStore::open(newer.toStdString()).close();
        {
            sqlite3* db = nullptr;
            QCOMPARE(sqlite3_open(newer.toUtf8().constData(), &db), SQLITE_OK);
            const std::string sql =
                "PRAGMA user_version = " + std::to_string(store::kSchemaVersion + 1);
            QCOMPARE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
            sqlite3_close(db);
        }
        open(browser, newer);
        QVERIFY2(message->text().contains(QStringLiteral("written by a newer Myelin")),
                 qPrintable(message->text()));
        browser.resize(900, 300);
        myelin::test::saveScreenshot(browser, QStringLiteral("runs_browser_newer_store.png"));
        QVERIFY(!action(browser, "deleteRunsAction")->isEnabled());
        QCOMPARE(model(browser)->rowCount(), 0);
    }

    void screenshot() {
        QTemporaryDir dir;
        const Lineage l = buildLineage(dir.path());
        RunsBrowser browser;
        browser.setProjectPath(dir.filePath(QStringLiteral("fashion.myelin")));
        open(browser, l.path);
        browser.resize(1760, 330);
        browser.show();
        browser.selectRuns({l.resumed});
        QVERIFY(QTest::qWaitForWindowExposed(&browser));
        myelin::test::saveScreenshot(browser, QStringLiteral("runs_browser.png"));
    }
};

QTEST_MAIN(TestRunsBrowser)
#include "test_runs_browser.moc"
