// The Training page's device picker shows and writes the project's training.device (one undoable
// edit); a device the machine cannot train on stays selected, greyed, with the reason in the
// note; a device not listed gets a greyed entry of its own. Train refuses such a project (and
// float16 on the CPU) with the reason and starts nothing; on the CPU the run records its device.
// Screenshots `training_device_project` (a project asking for CUDA here) and
// `training_device_refused` (the message Train gives).
#include "blobs_project.h"
#include "document/project_document.h"
#include "pages/training_page.h"
#include "shell/main_window.h"
#include "training/training_controller.h"
#include "ui_test_support.h"
#include "widgets/theme.h"

#include <myelin/cuda.h>
#include <myelin/io/project.h>
#include <myelin/store/run_store.h>

#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QMessageBox>
#include <QScrollArea>
#include <QSignalSpy>
#include <QStandardItemModel>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QtTest>

using myelin::test::examplePath;

namespace {

bool itemEnabled(QComboBox* combo, int row) {
    auto* model = qobject_cast<QStandardItemModel*>(combo->model());
    return model != nullptr && model->item(row)->isEnabled();
}

void setTrain(myelin::ui::ProjectDocument& doc, const std::string& device,
              const std::string& precision = "float32") {
    myelin::spec::TrainSpec t = doc.project().train;
    t.device = device;
    t.precision = *myelin::spec::setting_named<myelin::spec::Precision>(precision);
    doc.applyTrainEdit(t, QStringLiteral("test"));
}

} // namespace

class TestTrainingProjectDevice : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() {
        QVERIFY(home_.isValid());
        myelin::test::isolateStudioSettings(home_);
        myelin::ui::applyStudioTheme(*qApp);
    }

    void pickerShowsAndWritesTheProjectDevice() {
        myelin::ui::ProjectDocument doc;
        myelin::ui::TrainingPage page(&doc);
        myelin::io::Project project =
            myelin::io::load_project(examplePath("fashion_cnn").toStdString());
        project.train.device = "cuda";
        doc.open(project, examplePath("fashion_cnn"));
        page.resize(1280, 800);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        auto* combo = page.findChild<QComboBox*>(QStringLiteral("trainDevice"));
        auto* note = page.findChild<QLabel*>(QStringLiteral("trainDeviceNote"));
        QVERIFY(combo != nullptr && note != nullptr);
        const int listed = combo->count();
        const myelin::CudaStatus& cuda = myelin::cuda_status();
        QCOMPARE(listed, 1 + (cuda.devices.empty() ? 1 : int(cuda.devices.size())));

        // The project's device is selected ("cuda" is cuda:0's entry).
        QVERIFY2(combo->currentIndex() == 1, qPrintable(combo->currentText()));
        if (!cuda.usable()) {
            QVERIFY(!itemEnabled(combo, 1));
            QVERIFY(note->isVisibleTo(&page));
            QVERIFY2(note->text().startsWith(QStringLiteral("This project trains on cuda, which "
                                                            "cannot be used here; choose the "
                                                            "CPU")),
                     qPrintable(note->text()));
            QVERIFY(note->text().contains(QString::fromStdString(cuda.reason)));
            auto* scroll = page.findChild<QScrollArea*>(QStringLiteral("trainingSettingsScroll"));
            QVERIFY(scroll != nullptr);
            scroll->ensureWidgetVisible(combo, 0, 260);
            QTest::qWait(50);
            myelin::test::saveScreenshot(page, QStringLiteral("training_device_project.png"));
        }

        // Choosing the CPU is one undoable edit of training.device.
        const int undoBefore = doc.undoStack()->count();
        combo->setCurrentIndex(0);
        QCOMPARE(doc.project().train.device, std::string("cpu"));
        QCOMPARE(doc.undoStack()->count(), undoBefore + 1);
        QCOMPARE(doc.undoStack()->undoText(), QStringLiteral("Train on cpu"));
        QVERIFY(!note->text().startsWith(QStringLiteral("This project trains on")));
        doc.undoStack()->undo();
        QCOMPARE(doc.project().train.device, std::string("cuda"));
        QCOMPARE(combo->currentIndex(), 1);

        // A device this machine does not list: a greyed entry of its own, gone when another
        // device is chosen.
        setTrain(doc, "cuda:5");
        QCOMPARE(combo->count(), listed + 1);
        QCOMPARE(combo->currentIndex(), listed);
        QCOMPARE(combo->currentText(), QStringLiteral("cuda:5 · from the project"));
        QVERIFY(!itemEnabled(combo, listed));
        QVERIFY(!combo->itemData(listed, Qt::ToolTipRole).toString().isEmpty());
        QVERIFY(note->text().startsWith(QStringLiteral("This project trains on cuda:5")));
        setTrain(doc, "cpu");
        QCOMPARE(combo->count(), listed);
        QCOMPARE(combo->currentIndex(), 0);

        // float16 is listed; where no device here can train in it, greyed with the reason.
        auto* precision = page.findChild<QComboBox*>(QStringLiteral("trainPrecision"));
        QVERIFY(precision != nullptr);
        const int half = precision->findData(QStringLiteral("float16"));
        QVERIFY(half >= 0);
        if (!cuda.usable()) {
            QVERIFY(!itemEnabled(precision, half));
            QVERIFY(precision->itemData(half, Qt::ToolTipRole)
                        .toString()
                        .contains(QString::fromStdString(cuda.reason)));
        }
        setTrain(doc, "cpu", "float16");
        QCOMPARE(precision->currentIndex(), half);
    }

    void trainRefusesADeviceItCannotUse() {
        if (myelin::cuda_status().usable()) QSKIP("a CUDA device is usable here");
        QTemporaryDir dir;
        const QString project = myelin::test::writeBlobsProject(dir.path(), 1, 300);
        const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
        myelin::ui::MainWindow w;
        w.trainingController()->setStorePath(store);
        QVERIFY(w.openProject(project));

        setTrain(*w.document(), "cuda");
        QVERIFY(!w.startTraining());
        QVERIFY(!w.trainingController()->isActive());
        auto* box = w.findChild<QMessageBox*>(QStringLiteral("cannotTrainDeviceBox"));
        QVERIFY(box != nullptr);
        QVERIFY2(box->informativeText().startsWith(
                     QStringLiteral("The project's training.device \"cuda\": device cuda:0 is "
                                    "not usable: ") +
                     QString::fromStdString(myelin::cuda_status().reason)),
                 qPrintable(box->informativeText()));
        QTRY_VERIFY(box->isVisible());
        myelin::test::saveScreenshot(*box, QStringLiteral("training_device_refused.png"));
        box->close();
        QTRY_VERIFY(w.findChild<QMessageBox*>(QStringLiteral("cannotTrainDeviceBox")) == nullptr);
        QVERIFY(!QFile::exists(store)); // nothing recorded

        setTrain(*w.document(), "cpu", "float16");
        QVERIFY(!w.startTraining());
        box = w.findChild<QMessageBox*>(QStringLiteral("cannotTrainDeviceBox"));
        QVERIFY(box != nullptr);
        QVERIFY2(box->informativeText().startsWith(
                     QStringLiteral("training.precision \"float16\" needs a CUDA device")),
                 qPrintable(box->informativeText()));
        box->close();
        QVERIFY(!QFile::exists(store));

        // On the CPU it trains, and the run records where it computed.
        setTrain(*w.document(), "cpu");
        QSignalSpy finished(w.trainingController(), &myelin::ui::TrainingController::finished);
        QVERIFY(w.startTraining());
        QVERIFY(finished.wait(120000));
        const myelin::store::RunStore runs = myelin::store::RunStore::open(store.toStdString());
        const std::vector<myelin::store::RunSummary> all = runs.list_runs();
        QCOMPARE(all.size(), size_t(1));
        QCOMPARE(all[0].run.device, std::string("cpu"));
        QCOMPARE(runs.params(all[0].run.id).at("device"), std::string("cpu"));
    }

  private:
    QTemporaryDir home_;
};

QTEST_MAIN(TestTrainingProjectDevice)
#include "test_training_project_device.moc"
