// The Training page's device picker: the CPU first and selected, every CUDA device (or the CUDA
// entry when there is none) listed with a device training cannot use greyed, its reason as the
// tooltip and in the note under the list. Here (no driver) the reason is the CUDA runtime's.
// Screenshots `training_device` (the run settings with the picker and its note) and
// `training_device_list` (its list open).
#include "document/project_document.h"
#include "pages/training_page.h"
#include "ui_test_support.h"
#include "widgets/theme.h"

#include <myelin/cuda.h>
#include <myelin/io/project.h>

#include <QAbstractItemView>
#include <QComboBox>
#include <QDir>
#include <QLabel>
#include <QPainter>
#include <QScrollArea>
#include <QStandardItemModel>
#include <QtTest>

using myelin::test::artifactsDir;
using myelin::test::examplePath;

class TestTrainingDevice : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() { myelin::ui::applyStudioTheme(*qApp); }

    void listsTheCpuAndEachGpuWithReasons() {
        myelin::ui::ProjectDocument doc;
        myelin::ui::TrainingPage page(&doc);
        doc.open(myelin::io::load_project(examplePath("fashion_cnn").toStdString()),
                 examplePath("fashion_cnn"));
        page.resize(1280, 800);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));

        auto* combo = page.findChild<QComboBox*>(QStringLiteral("trainDevice"));
        auto* note = page.findChild<QLabel*>(QStringLiteral("trainDeviceNote"));
        QVERIFY(combo != nullptr && note != nullptr);
        QVERIFY(combo->isEnabled());
        QCOMPARE(combo->currentData().toString(), QStringLiteral("cpu"));
        QVERIFY2(combo->itemText(0).startsWith(QStringLiteral("CPU · ")),
                 qPrintable(combo->itemText(0)));
        auto* model = qobject_cast<QStandardItemModel*>(combo->model());
        QVERIFY(model != nullptr);
        QVERIFY(model->item(0)->isEnabled());

        const myelin::CudaStatus& cuda = myelin::cuda_status();
        const int gpus = int(cuda.devices.size());
        QCOMPARE(combo->count(), 1 + (gpus == 0 ? 1 : gpus));
        for (int row = 1; row < combo->count(); ++row) {
            // In this version training runs on the CPU only: every GPU entry says why not.
            QVERIFY(!model->item(row)->isEnabled());
            const QString tip = combo->itemData(row, Qt::ToolTipRole).toString();
            QVERIFY2(!tip.isEmpty(), qPrintable(combo->itemText(row)));
            if (gpus == 0) {
                QCOMPARE(tip, QString::fromStdString(cuda.reason));
            } else {
                const myelin::GpuInfo& gpu = cuda.devices[size_t(row - 1)];
                QVERIFY(combo->itemText(row).contains(QString::fromStdString(gpu.name)));
                QVERIFY(combo->itemText(row).endsWith(QStringLiteral(" GiB")));
            }
        }
        QVERIFY(note->isVisibleTo(&page));
        if (gpus == 0)
            QCOMPARE(note->text(), QStringLiteral("GPU: ") + QString::fromStdString(cuda.reason));

        // A greyed entry cannot be chosen from the list.
        combo->showPopup();
        QAbstractItemView* list = combo->view();
        QTRY_VERIFY(list->isVisible());
        const QRect gpuRow = list->visualRect(model->index(1, 0));
        QTest::mouseClick(list->viewport(), Qt::LeftButton, {}, gpuRow.center());
        QCOMPARE(combo->currentData().toString(), QStringLiteral("cpu"));

        // Screenshots: the run settings in view with the note, then with the list open.
        auto* scroll = page.findChild<QScrollArea*>(QStringLiteral("trainingSettingsScroll"));
        QVERIFY(scroll != nullptr);
        if (list->isVisible()) combo->hidePopup();
        scroll->ensureWidgetVisible(combo, 0, 260);
        QTest::qWait(50);
        const QString closedPath =
            QDir(artifactsDir()).filePath(QStringLiteral("training_device.png"));
        QVERIFY2(page.grab().save(closedPath), qPrintable(closedPath));
        qInfo("screenshot: %s", qPrintable(closedPath));
        combo->showPopup();
        QTRY_VERIFY(list->isVisible());
        QTest::qWait(50);
        QPixmap shot = page.grab();
        {
            QWidget* popup = list->window();
            const QPixmap popupShot = popup->grab();
            QPainter painter(&shot);
            painter.drawPixmap(page.mapFromGlobal(popup->mapToGlobal(QPoint(0, 0))), popupShot);
        }
        combo->hidePopup();
        const QString path =
            QDir(artifactsDir()).filePath(QStringLiteral("training_device_list.png"));
        QVERIFY2(shot.save(path), qPrintable(path));
        qInfo("screenshot: %s", qPrintable(path));
    }
};

QTEST_MAIN(TestTrainingDevice)
#include "test_training_device.moc"
