// The Feature Maps tab, driven offscreen after a real training run of a small CNN in the studio:
// it follows the run, reads nothing while hidden, shows the stored values (each pixel the
// stored value's place in its channel's range), switches examples, enlarges a clicked channel,
// and says in words why a run has no maps to show.
#include "blobs_project.h"
#include "document/project_document.h"
#include "inspect/feature_maps_view.h"
#include "inspect/gradient_flow_view.h"
#include "shell/main_window.h"
#include "stripes_project.h"
#include "training/training_controller.h"
#include "ui_test_support.h"

#include <myelin/store/run_store.h>
#include <myelin/train/layer_inspection.h>

#include <QFile>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <sqlite3.h>

#include <cmath>
#include <limits>

using myelin::ui::FeatureMapsView;
using myelin::ui::MainWindow;
using myelin::ui::TrainingController;
namespace store = myelin::store;
namespace train = myelin::train;

namespace {

constexpr int kRunTimeoutMs = 120000;

QString stripesProject(const QTemporaryDir& dir, int epochs, int every) {
    return QString::fromStdString(
        myelin::test::writeStripesProject(dir.path().toStdString(), epochs, every));
}

QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// Trains the project in a main window (the Feature Maps tab hidden) and waits for the end.
bool trainInStudio(MainWindow& w, const QString& project, const QString& storePath) {
    w.trainingController()->setStorePath(storePath);
    w.resize(1400, 900);
    w.show();
    if (!w.openProject(project)) return false;
    QSignalSpy finished(w.trainingController(), &TrainingController::finished);
    return w.startTraining() && finished.wait(kRunTimeoutMs);
}

} // namespace

class TestFeatureMapsView : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase() { myelin::test::isolateStudioSettings(home_); }

    void showsTheStoredMaps() {
        QTemporaryDir dir;
        const QString project = stripesProject(dir, 3, 5);
        const QString storePath = dir.filePath(QStringLiteral("runs.sqlite"));
        MainWindow w;
        FeatureMapsView* view = w.featureMapsView();
        // It follows the run the Gradient Flow view shows, live from the start.
        bool followedLive = false;
        connect(w.trainingController(), &TrainingController::runCreated, view,
                [&] { followedLive = view->isLive() && view->run() == 1; });
        QVERIFY(trainInStudio(w, project, storePath));
        QVERIFY(followedLive);
        QVERIFY(!view->isLive());
        // Hidden all along (the Model tab is shown): it has read nothing.
        QVERIFY(view->layers().empty());
        auto* tabs = w.findChild<QTabWidget*>(QStringLiteral("workspaceTabs"));
        tabs->setCurrentWidget(view);
        QVERIFY(view->isVisible());

        // Shown: the layers with [examples, channels, height, width] outputs, every capture,
        // the newest step first.
        QCOMPARE(view->layers(), (std::vector<std::string>{"conv", "act", "pool"}));
        QCOMPARE(view->layer(), std::string("conv"));
        const std::vector<int64_t> steps = {5, 10, 15, 20, 25, 30};
        QCOMPARE(view->steps(), steps);
        QCOMPARE(view->shownStep(), std::optional<int64_t>(30));
        QCOMPARE(view->examples(), 4);
        QCOMPARE(view->channels(), 8);
        QCOMPARE(view->shownChannels(), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
        QVERIFY2(view->message().isEmpty(), qPrintable(view->message()));
        QVERIFY2(view->rangeText().contains(QStringLiteral("Channels 0–7 of 8, 8×8 each")),
                 qPrintable(view->rangeText()));

        // A chosen step (the nearest recorded), example and channel: the view's values are the
        // store's, and each pixel is the value's place in its channel's min..max.
        view->selectStep(12);
        QCOMPARE(view->shownStep(), std::optional<int64_t>(10));
        view->setExample(2);
        store::RunStore runs = store::RunStore::open(storePath.toStdString());
        const auto stored = runs.feature_map(1, "conv", 10);
        QVERIFY(stored);
        const int channel = 3;
        const train::ChannelStats stats = train::channel_stats(*stored, 2, channel);
        QVERIFY(stats.max > stats.min);
        const QImage image = view->channelImage(channel);
        QCOMPARE(image.size(), QSize(8, 8));
        for (int y = 0; y < 8; ++y)
            for (int x = 0; x < 8; ++x) {
                const float value = stored->at(2, channel, y, x);
                QCOMPARE(view->shownValue(channel, y, x), value);
                QCOMPARE(image.pixel(x, y),
                         FeatureMapsView::shade((value - stats.min) / (stats.max - stats.min)));
            }
        QVERIFY2(view->rangeText().contains(QStringLiteral("example #3's values at step 10")),
                 qPrintable(view->rangeText()));

        // Another example: other values, other images.
        view->setExample(0);
        QCOMPARE(view->example(), 0);
        QCOMPARE(view->shownValue(channel, 4, 4), stored->at(0, channel, 4, 4));
        QVERIFY(view->channelImage(channel) != image);
        QVERIFY(!view->exampleThumbnail(0).isNull()); // the input is a 1x8x8 image
        QVERIFY(view->exampleThumbnail(0) != view->exampleThumbnail(1));

        // A click on a channel enlarges it, with its min, max and mean.
        QCOMPARE(view->enlargedChannel(), -1);
        const QRect tile = view->channelRect(5);
        QVERIFY(!tile.isEmpty());
        QTest::mouseClick(view->grid(), Qt::LeftButton, {}, tile.center());
        QCOMPARE(view->enlargedChannel(), 5);
        const train::ChannelStats five = train::channel_stats(*stored, 0, 5);
        const QString caption = view->enlargedText();
        QVERIFY2(
            caption.contains(QStringLiteral("conv (Conv2d) · channel 5 · example #1 · step 10")),
            qPrintable(caption));
        QVERIFY2(caption.contains(QStringLiteral("min %1 · max %2 · mean %3")
                                      .arg(QString::number(five.min, 'g', 4),
                                           QString::number(five.max, 'g', 4),
                                           QString::number(five.mean, 'g', 4))),
                 qPrintable(caption));

        // The channel range; then another layer keeps the step.
        view->setChannelRange(4, 16);
        QCOMPARE(view->shownChannels(), (std::vector<int>{4, 5, 6, 7}));
        view->setLayer("pool");
        QCOMPARE(view->shownStep(), std::optional<int64_t>(10));
        QCOMPARE(view->channelImage(4).size(), QSize(4, 4));
        QCOMPARE(view->shownValue(6, 1, 2), runs.feature_map(1, "pool", 10)->at(0, 6, 1, 2));

        view->setLayer("conv");
        view->setChannelRange(0, 16);
        view->setExample(1);
        view->enlargeChannel(2);
        QTest::qWait(50);
        myelin::test::saveScreenshot(w, QStringLiteral("inspect_feature_maps_test.png"));

        // A finished run opened later: a new window on the same store, the tab opened first.
        MainWindow later;
        later.trainingController()->setStorePath(storePath);
        later.resize(1400, 900);
        later.show();
        QVERIFY(later.openProject(project));
        later.findChild<QTabWidget*>(QStringLiteral("workspaceTabs"))
            ->setCurrentWidget(later.featureMapsView());
        FeatureMapsView* reopened = later.featureMapsView();
        QCOMPARE(reopened->run(), int64_t(1));
        QVERIFY(!reopened->isLive());
        QCOMPARE(reopened->layers(), view->layers());
        QCOMPARE(reopened->shownStep(), std::optional<int64_t>(30));
        QCOMPARE(reopened->shownValue(1, 2, 3), runs.feature_map(1, "conv", 30)->at(0, 1, 2, 3));
    }

    void saysWhyThereIsNothingToShow() {
        QTemporaryDir dir;
        const QString storePath = dir.filePath(QStringLiteral("runs.sqlite"));
        FeatureMapsView view;
        view.resize(900, 600);
        view.show();
        QVERIFY2(view.message().contains(QStringLiteral("No run to show yet")),
                 qPrintable(view.message()));

        const QByteArray stripes = [&] {
            QTemporaryDir other;
            return readAll(stripesProject(other, 1, 500));
        }();
        QVERIFY(!stripes.isEmpty());
        QByteArray off = stripes;
        off.replace("\"feature_maps_every\": 500", "\"feature_maps_every\": 0");
        QTemporaryDir blobsDir;
        QByteArray mlp = readAll(myelin::test::writeBlobsProject(blobsDir.path(), 1));
        mlp.replace("\"seed\": 3}", "\"seed\": 3, \"capture\": {\"feature_maps_every\": 5}}");
        QVERIFY(mlp.contains("feature_maps_every"));
        int64_t offRun = 0, liveRun = 0, shortRun = 0, mlpRun = 0, damagedRun = 0;
        {
            store::RunStore runs = store::RunStore::open(storePath.toStdString());
            auto add = [&](const char* name, const QByteArray& project, int64_t lastStep,
                           bool finish) {
                const int64_t run = runs.create_run({name, project.toStdString()});
                runs.log_metric(run, "loss", lastStep, 0.5);
                if (finish) runs.finish_run(run, store::RunStatus::Finished);
                return run;
            };
            offRun = add("capture off", off, 800, true);
            liveRun = add("going", stripes, 120, false);
            shortRun = add("short", stripes, 120, true);
            mlpRun = add("mlp", mlp, 40, true);
            damagedRun = add("damaged", stripes, 600, true);
            const int64_t shape[] = {4, 2, 3, 3};
            runs.log_feature_map(damagedRun, "conv", 500, shape, std::vector<float>(72, 1.0f));
        }
        {
            // A blob cut short by something other than Myelin.
            sqlite3* db = nullptr;
            QCOMPARE(sqlite3_open(storePath.toUtf8().constData(), &db), SQLITE_OK);
            const int rc = sqlite3_exec(db, "UPDATE feature_maps SET data = zeroblob(10)", nullptr,
                                        nullptr, nullptr);
            sqlite3_close(db);
            QCOMPARE(rc, SQLITE_OK);
        }

        view.showRun(storePath, offRun, false);
        QVERIFY2(
            view.message().contains(
                QStringLiteral("Run #%1 captured no feature maps (capture is off").arg(offRun)),
            qPrintable(view.message()));
        view.showRun(storePath, liveRun, true);
        QVERIFY2(
            view.message().contains(
                QStringLiteral(
                    "Feature maps are captured every 500 steps — none yet (run #%1 is at step 120)")
                    .arg(liveRun)),
            qPrintable(view.message()));
        view.runFinished();
        view.showRun(storePath, shortRun, false);
        QVERIFY2(view.message().contains(
                     QStringLiteral("ended at step 120, before its first feature-map capture")),
                 qPrintable(view.message()));
        view.showRun(storePath, mlpRun, false);
        QVERIFY2(view.message().contains(QStringLiteral("no layer of its model has image-shaped")),
                 qPrintable(view.message()));
        view.showRun(storePath, damagedRun, false);
        QVERIFY2(view.message().contains(QStringLiteral("is corrupt")), qPrintable(view.message()));
        QTest::qWait(20);
        view.showRun(storePath, offRun, false);
        myelin::test::saveScreenshot(view, QStringLiteral("inspect_feature_maps_empty.png"));

        // The Feature Maps tab of a studio run with capture off says the same.
        QTemporaryDir runDir;
        const QString project = stripesProject(runDir, 1, 0);
        MainWindow w;
        QVERIFY(trainInStudio(w, project, runDir.filePath(QStringLiteral("runs.sqlite"))));
        w.findChild<QTabWidget*>(QStringLiteral("workspaceTabs"))
            ->setCurrentWidget(w.featureMapsView());
        QVERIFY2(w.featureMapsView()->message().contains(QStringLiteral("capture is off")),
                 qPrintable(w.featureMapsView()->message()));
    }

  private:
    QTemporaryDir home_;
};

QTEST_MAIN(TestFeatureMapsView)
#include "test_feature_maps_view.moc"
