// The Evaluate tab's Quantize view (issue 38, item 4) on the stripes CNN trained here: the
// Quantize button writes the int8 checkpoint beside the float one (which stays as it was) and
// shows both models side by side — the metrics as an evaluation of each file gives them, per-class
// recall, sizes, examples/s, the layers that became int8 — and the confusion matrix of either;
// static controls are off for dynamic quantization; an int8 checkpoint, a cancel and a training
// run are said in words; a regression project gets its metrics without per-class parts.
// Screenshot: quantization_view.png.
#include "eval/confusion_matrix_widget.h"
#include "eval/quantization_view.h"
#include "runs/checkpoint_picker.h"
#include "shell/evaluate_page.h"
#include "stripes_project.h"
#include "ui_test_support.h"
#include "widgets/theme.h"

#include <myelin/io/project.h>
#include <myelin/train/evaluation.h>
#include <myelin/train/trainer.h>

#include <QComboBox>
#include <QCryptographicHash>
#include <QFile>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

using myelin::ui::EvaluatePage;
using myelin::ui::QuantizationView;
namespace io = myelin::io;
namespace train = myelin::train;

namespace {

constexpr int kTimeoutMs = 180000;

QString trainCheckpoint(const QString& projectFile, int64_t steps, int64_t epochs) {
    train::TrainerOptions options;
    options.project_dir = QFileInfo(projectFile).absolutePath().toStdString();
    options.checkpoint_dir = options.project_dir / "ck";
    options.max_steps = steps;
    options.epochs = epochs;
    train::Trainer trainer(io::load_project(projectFile.toStdString()), options);
    return QString::fromStdString(trainer.run().last_checkpoint.string());
}

QByteArray fileHash(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) return {};
    return QCryptographicHash::hash(file.readAll(), QCryptographicHash::Sha256);
}

// The row of `table` whose first column reads `label`; -1 when none does.
int rowOf(const QTableWidget* table, const QString& label) {
    for (int r = 0; r < table->rowCount(); ++r)
        if (table->item(r, 0) && table->item(r, 0)->text() == label) return r;
    return -1;
}

// Clicks the view's Quantize button and waits for the job to end.
bool clickQuantize(QuantizationView* view) {
    if (!view->quantizeButton()->isEnabled()) return false;
    QSignalSpy finished(view, &QuantizationView::finished);
    QTest::mouseClick(view->quantizeButton(), Qt::LeftButton);
    // An error can end the job before the click returns: its signal is then already queued.
    return !finished.isEmpty() || finished.wait(kTimeoutMs);
}

} // namespace

class TestQuantizationView : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase() {
        myelin::test::isolateStudioSettings(home_);
        myelin::ui::applyStudioTheme(*qApp);
        QVERIFY(dir_.isValid());
        stripes_ = QString::fromStdString(
            myelin::test::writeStripesProject(dir_.path().toStdString(), 3, 0));
        QVERIFY(!stripes_.isEmpty());
        checkpoint_ = trainCheckpoint(stripes_, 5, 1); // early: some examples still wrong
        QVERIFY2(QFile::exists(checkpoint_), qPrintable(checkpoint_));
    }

    void staticQuantizationSideBySide() {
        EvaluatePage page;
        page.resize(1500, 900);
        page.setOpenProject(io::load_project(stripes_.toStdString()),
                            QFileInfo(stripes_).absolutePath());
        page.show();
        QuantizationView* view = page.quantizationView();
        page.tabs()->setCurrentWidget(view);
        QVERIFY(!view->quantizeButton()->isEnabled()); // no checkpoint yet
        QCOMPARE(view->message(), QStringLiteral("Choose a float checkpoint to quantize."));
        page.picker()->chooseFile(checkpoint_);
        QVERIFY(view->quantizeButton()->isEnabled());
        QVERIFY(view->message().startsWith(QStringLiteral("Press Quantize")));

        // Dynamic quantization has nothing to calibrate: its controls are off.
        view->schemeBox()->setCurrentIndex(1);
        QVERIFY(!view->observerBox()->isEnabled());
        QVERIFY(!view->calibrationBox()->isEnabled());
        view->schemeBox()->setCurrentIndex(0);
        QVERIFY(view->observerBox()->isEnabled());
        QVERIFY(view->calibrationBox()->isEnabled());
        view->observerBox()->setCurrentIndex(view->observerBox()->findText("minmax"));
        view->calibrationBox()->setValue(4);

        const QByteArray floatHash = fileHash(checkpoint_);
        const QString int8Path = QuantizationView::int8PathFor(checkpoint_);
        QCOMPARE(QFileInfo(int8Path).fileName(),
                 QFileInfo(checkpoint_).completeBaseName() + ".int8.safetensors");
        QVERIFY(!QFile::exists(int8Path));
        QVERIFY(clickQuantize(view));
        QVERIFY2(view->message().isEmpty(), qPrintable(view->message()));
        QVERIFY(view->floatEvaluation() && view->int8Evaluation() && view->result());
        // Beside the float file, which is as it was.
        QCOMPARE(view->int8Path(), int8Path);
        QVERIFY(QFile::exists(int8Path));
        QCOMPARE(fileHash(checkpoint_), floatHash);
        QCOMPARE(view->result()->plan.observer, myelin::quant::ObserverKind::MinMax);
        QCOMPARE(view->result()->plan.calibration_batches, int64_t(4));

        // The int8 numbers are an evaluation of the file written.
        auto trainer = train::trainer_for_checkpoint(
            io::load_project(stripes_.toStdString()),
            QFileInfo(stripes_).absolutePath().toStdString(), int8Path.toStdString());
        const train::Evaluation direct =
            train::evaluate_examples(*trainer, train::evaluation_dataset(*trainer));
        const train::Evaluation& f = *view->floatEvaluation();
        const train::Evaluation& q = *view->int8Evaluation();
        QCOMPARE(q.predicted, direct.predicted);
        qInfo("accuracy: float32 %.4f, int8 %.4f", f.metrics.at("accuracy"),
              q.metrics.at("accuracy"));
        QVERIFY(f.metrics.at("accuracy") > 0.5);
        QVERIFY(std::abs(q.metrics.at("accuracy") - f.metrics.at("accuracy")) <= 0.15);

        // Side by side: both accuracies, the sizes, examples/s.
        const QTableWidget* summary = view->summaryTable();
        const int accuracy = rowOf(summary, "accuracy");
        QVERIFY(accuracy >= 0);
        QCOMPARE(summary->item(accuracy, 1)->text(),
                 QString::number(f.metrics.at("accuracy"), 'f', 4));
        QCOMPARE(summary->item(accuracy, 2)->text(),
                 QString::number(q.metrics.at("accuracy"), 'f', 4));
        QVERIFY(summary->item(accuracy, 3)->text().endsWith(" pt"));
        QVERIFY(rowOf(summary, "loss") >= 0);
        QVERIFY(rowOf(summary, "macro F1") >= 0);
        QVERIFY(rowOf(summary, "Same prediction as float32") >= 0);
        const int tensors = rowOf(summary, "Model tensors");
        QVERIFY(tensors >= 0);
        QVERIFY(view->result()->int8_bytes < view->result()->float_bytes);
        QVERIFY(rowOf(summary, "Checkpoint file on disk") >= 0);
        const int speed = rowOf(summary, "Examples/s");
        QVERIFY(speed >= 0);
        QVERIFY(summary->item(speed, 1)->text() != "0" && summary->item(speed, 2)->text() != "0");

        // Per class: each class's recall under both, with the change.
        const QTableWidget* perClass = view->perClassTable();
        QCOMPARE(perClass->rowCount(), 3);
        for (int c = 0; c < 3; ++c) {
            QCOMPARE(perClass->item(c, 2)->text(),
                     QString::number(f.per_class[size_t(c)].recall, 'f', 4));
            QCOMPARE(perClass->item(c, 3)->text(),
                     QString::number(q.per_class[size_t(c)].recall, 'f', 4));
            QVERIFY(perClass->item(c, 4)->text().endsWith(" pt"));
        }

        // The layers: both the conv and the fc in int8 (the conv's ReLU fused).
        const QTableWidget* layers = view->layerTable();
        for (const char* name : {"conv", "fc"}) {
            const int row = rowOf(layers, name);
            QVERIFY2(row >= 0, name);
            QCOMPARE(layers->item(row, 2)->text(), QStringLiteral("int8"));
        }
        QVERIFY(layers->item(rowOf(layers, "conv"), 3)->text().contains("ReLU act fused"));

        // The switch shows the matrix of either model.
        auto* floatButton = view->findChild<QPushButton*>("quantizeMatrixFloat");
        auto* int8Button = view->findChild<QPushButton*>("quantizeMatrixInt8");
        QVERIFY(floatButton && int8Button);
        QVERIFY(view->showsInt8Matrix());
        QCOMPARE(view->confusionMatrix()->matrix().counts, q.confusion.counts);
        QTest::mouseClick(floatButton, Qt::LeftButton);
        QVERIFY(!view->showsInt8Matrix());
        QCOMPARE(view->confusionMatrix()->matrix().counts, f.confusion.counts);
        QTest::mouseClick(int8Button, Qt::LeftButton);
        QCOMPARE(view->confusionMatrix()->matrix().counts, q.confusion.counts);
        // A clicked cell gives its count under both models.
        QTest::mouseClick(view->confusionMatrix(), Qt::LeftButton, {},
                          view->confusionMatrix()->cellRect(0, 0).center());
        QCOMPARE(view->confusionMatrix()->selectedCell(),
                 (std::optional<std::pair<int, int>>{{0, 0}}));
        QVERIFY(view->findChild<QLabel*>("quantizeCellNote")
                    ->text()
                    .contains(QStringLiteral("%1 with float32, %2 with int8")
                                  .arg(f.confusion.at(0, 0))
                                  .arg(q.confusion.at(0, 0))));
        QTest::qWait(50);
        myelin::test::saveScreenshot(page, QStringLiteral("quantization_view.png"));
        view->detailTabs()->setCurrentWidget(view->layerTable());
        myelin::test::saveScreenshot(*view, QStringLiteral("quantization_view_layers.png"));

        // Quantizing again replaces the int8 file (it is the view's own), never the float one.
        view->schemeBox()->setCurrentIndex(1); // dynamic: the Linear only
        QVERIFY(clickQuantize(view));
        QVERIFY2(view->message().isEmpty(), qPrintable(view->message()));
        QCOMPARE(fileHash(checkpoint_), floatHash);
        QCOMPARE(view->layerTable()->item(rowOf(view->layerTable(), "fc"), 2)->text(),
                 QStringLiteral("int8"));
        const int conv = rowOf(view->layerTable(), "conv");
        QCOMPARE(view->layerTable()->item(conv, 2)->text(), QStringLiteral("float32"));
        QVERIFY(!view->layerTable()->item(conv, 3)->text().isEmpty()); // the reason
    }

    void int8CheckpointIsSaidInWords() {
        const QString int8Path = QuantizationView::int8PathFor(checkpoint_);
        if (!QFile::exists(int8Path)) QSKIP("needs staticQuantizationSideBySide's int8 file");
        EvaluatePage page;
        page.setOpenProject(io::load_project(stripes_.toStdString()),
                            QFileInfo(stripes_).absolutePath());
        page.picker()->chooseFile(int8Path);
        QuantizationView* view = page.quantizationView();
        QVERIFY(clickQuantize(view));
        QVERIFY2(view->message().contains("already quantized"), qPrintable(view->message()));
        QVERIFY(!view->int8Evaluation());
        QVERIFY(!QFile::exists(QuantizationView::int8PathFor(int8Path)));
        myelin::test::saveScreenshot(*view, QStringLiteral("quantization_view_int8_input.png"));
    }

    void cancelAndTrainingAreRefusedInWords() {
        EvaluatePage page;
        page.setOpenProject(io::load_project(stripes_.toStdString()),
                            QFileInfo(stripes_).absolutePath());
        const QString copy = dir_.filePath("copy.safetensors");
        QVERIFY(QFile::copy(checkpoint_, copy));
        page.picker()->chooseFile(copy);
        QuantizationView* view = page.quantizationView();
        QSignalSpy finished(view, &QuantizationView::finished);
        QTest::mouseClick(view->quantizeButton(), Qt::LeftButton);
        QVERIFY(view->isRunning());
        // Evaluating meanwhile is refused (they would share the process's random state).
        QVERIFY(!page.findChild<QPushButton*>("evaluateButton")->isEnabled());
        view->cancel(); // before the first calibration batch has run
        QVERIFY(finished.wait(kTimeoutMs));
        QVERIFY2(view->message().contains("Cancelled during calibration"),
                 qPrintable(view->message()));
        QVERIFY(!QFile::exists(QuantizationView::int8PathFor(copy)));
        QVERIFY(page.findChild<QPushButton*>("evaluateButton")->isEnabled());

        page.setTrainingActive(true);
        QVERIFY(!view->quantizeButton()->isEnabled());
        QVERIFY(view->quantizeButton()->toolTip().contains("training"));
        page.quantize(); // refused, as the button is
        QVERIFY(!view->isRunning());
        page.setTrainingActive(false);
        QVERIFY(view->quantizeButton()->isEnabled());
    }

    void regressionShowsMetricsWithoutClasses() {
        const QString examples =
            QFileInfo(myelin::test::examplePath("tabular_regression")).absolutePath();
        QTemporaryDir dir;
        QVERIFY(QDir().mkpath(dir.filePath("data")));
        QVERIFY(QFile::copy(examples + "/data/tabular_regression.csv",
                            dir.filePath("data/tabular_regression.csv")));
        const QString project = dir.filePath("regression.myelin");
        QVERIFY(QFile::copy(myelin::test::examplePath("tabular_regression"), project));
        const QString checkpoint = trainCheckpoint(project, 40, 3);
        QVERIFY(QFile::exists(checkpoint));
        QuantizationView view;
        view.resize(1200, 700);
        view.show();
        view.setCheckpointChosen(true);
        QSignalSpy finished(&view, &QuantizationView::finished);
        view.quantize(io::load_project(project.toStdString()), dir.path(), checkpoint);
        QVERIFY(finished.wait(kTimeoutMs));
        QVERIFY2(view.message().isEmpty(), qPrintable(view.message()));
        QVERIFY(!view.int8Evaluation()->classification());
        QVERIFY(rowOf(view.summaryTable(), "R²") >= 0);
        QVERIFY(rowOf(view.summaryTable(), "Same prediction as float32") < 0);
        QVERIFY(!view.detailTabs()->isTabVisible(view.detailTabs()->indexOf(view.perClassTable())));
        QVERIFY(!view.confusionMatrix()->isVisibleTo(&view));
        QVERIFY(view.layerTable()->rowCount() > 0);
    }

  private:
    QTemporaryDir home_;
    QTemporaryDir dir_;
    QString stripes_;
    QString checkpoint_;
};

QTEST_MAIN(TestQuantizationView)
#include "test_quantization_view.moc"
