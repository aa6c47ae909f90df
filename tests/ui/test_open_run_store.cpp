// File > Open Run Store: the studio reads the runs of another store — e.g. the one a cluster run
// wrote with `mpirun myelin train --store FILE` — in the Runs and inspection tabs, and records new
// runs there; a file that is not a run store is refused with a message and changes nothing.
#include "inspect/gradient_flow_view.h"
#include "runs/runs_browser.h"
#include "shell/main_window.h"
#include "training/training_controller.h"
#include "ui_test_support.h"

#include <myelin/store/run_store.h>

#include <QApplication>
#include <QComboBox>
#include <QFile>
#include <QMessageBox>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

using namespace myelin;
using namespace myelin::ui;

class TestOpenRunStore : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase() { myelin::test::isolateStudioSettings(home_); }

    void clusterStoreIsShown() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("cluster.sqlite"));
        {
            // What rank 0 of a 4-rank job on another host leaves behind.
            auto store = store::RunStore::open(path.toStdString());
            store::RunInfo info;
            info.name = "cluster run";
            info.host = "node17";
            info.pid = 4242;
            const int64_t run = store.create_run(info);
            store.set_params(run, {{"dist.world_size", "4"}});
            store.finish_run(run, store::RunStatus::Finished);
            store.close();
        }
        MainWindow w(myelin::test::examplePath("fashion_mlp.myelin"));
        const QString before = w.trainingController()->storePath();
        QVERIFY(before != path);
        QVERIFY(w.openRunStore(path));
        QCOMPARE(w.trainingController()->storePath(), path); // new runs go there too
        QCOMPARE(w.gradientFlowView()->storePath(), path);
        auto* runs = w.gradientFlowView()->findChild<QComboBox*>(QStringLiteral("inspectRun"));
        QVERIFY(runs);
        QVERIFY2(runs->count() == 1 && runs->itemText(0).contains(QStringLiteral("cluster run")),
                 qPrintable(runs->count() ? runs->itemText(0) : QStringLiteral("(empty)")));
        // The Runs tab reads it when shown.
        QSignalSpy loaded(w.runsBrowser(), &RunsBrowser::runsLoaded);
        w.workspaceTabs()->setCurrentWidget(w.findChild<QWidget*>(QStringLiteral("runsPage")));
        QCOMPARE(w.runsBrowser()->storePath(), path);
        QVERIFY(loaded.count() > 0 || loaded.wait(10000));
        const QString csv = dir.filePath(QStringLiteral("runs.csv"));
        QString error;
        QVERIFY2(w.runsBrowser()->exportCsv(csv, &error), qPrintable(error));
        QFile listed(csv);
        QVERIFY(listed.open(QIODevice::ReadOnly));
        QVERIFY(listed.readAll().contains("cluster run"));
    }

    void notAStoreIsRefused() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("notes.sqlite"));
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("these are notes, not a database\n");
        file.close();
        MainWindow w(myelin::test::examplePath("fashion_mlp.myelin"));
        const QString before = w.trainingController()->storePath();
        QString shown;
        QTimer::singleShot(0, this, [&] {
            if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
                shown = box->text();
                box->close();
            }
        });
        QVERIFY(!w.openRunStore(path));
        QVERIFY2(shown.contains(QStringLiteral("notes.sqlite")), qPrintable(shown));
        QCOMPARE(w.trainingController()->storePath(), before);
        QFile again(path);
        QVERIFY(again.open(QIODevice::ReadOnly));
        QCOMPARE(again.readAll(), QByteArray("these are notes, not a database\n"));
    }

  private:
    QTemporaryDir home_;
};

QTEST_MAIN(TestOpenRunStore)
#include "test_open_run_store.moc"
