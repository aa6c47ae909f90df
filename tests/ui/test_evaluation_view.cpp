// The Evaluation view and the Try-one-example view on checkpoints of small models trained here:
// the confusion matrix counts what `myelin eval --predictions` says (counted in this test), a
// clicked cell lists exactly its examples, row-normalised rows sum to 1, a single example's
// top-1 is the evaluation's prediction, and checkpoints or inputs that do not fit are said in
// words. With MYELIN_EVAL_FASHION_CHECKPOINT set (a fashion_cnn checkpoint) it also takes the
// Fashion-MNIST screenshots of docs/screenshots.
#include "blobs_project.h"
#include "eval/confusion_matrix_widget.h"
#include "eval/evaluation_view.h"
#include "eval/single_example_view.h"
#include "stripes_project.h"
#include "ui_test_support.h"
#include "widgets/theme.h"

#include <myelin/io/project.h>
#include <myelin/train/evaluation.h>
#include <myelin/train/trainer.h>

#include <QFile>
#include <QImage>
#include <QListWidget>
#include <QProcess>
#include <QProgressBar>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>
#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <vector>

using myelin::ui::EvaluationView;
using myelin::ui::SingleExampleView;
namespace io = myelin::io;
namespace train = myelin::train;

namespace {

constexpr int kEvaluationTimeoutMs = 120000;

// Trains `projectFile` for `steps` optimizer steps with checkpoints; the stop's checkpoint.
QString trainCheckpoint(const QString& projectFile, int64_t steps, int64_t epochs = 1) {
    train::TrainerOptions options;
    options.project_dir = QFileInfo(projectFile).absolutePath().toStdString();
    options.checkpoint_dir = options.project_dir / "ck";
    options.max_steps = steps;
    options.epochs = epochs;
    train::Trainer trainer(io::load_project(projectFile.toStdString()), options);
    const train::TrainResult result = trainer.run();
    return QString::fromStdString(result.last_checkpoint.string());
}

bool evaluateAndWait(EvaluationView& view, const QString& projectFile, const QString& checkpoint) {
    QSignalSpy finished(&view, &EvaluationView::finished);
    view.evaluate(io::load_project(projectFile.toStdString()),
                  QFileInfo(projectFile).absolutePath(), checkpoint);
    return finished.wait(kEvaluationTimeoutMs);
}

std::vector<int64_t> sorted(std::vector<int64_t> v) {
    std::sort(v.begin(), v.end());
    return v;
}

} // namespace

class TestEvaluationView : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase() {
        myelin::test::isolateStudioSettings(home_);
        myelin::ui::applyStudioTheme(*qApp);
        QVERIFY(dir_.isValid());
        stripes_ = QString::fromStdString(
            myelin::test::writeStripesProject(dir_.path().toStdString(), 1, 0));
        QVERIFY(!stripes_.isEmpty());
        checkpoint_ = trainCheckpoint(stripes_, 5); // early: some examples still wrong
        QVERIFY2(QFile::exists(checkpoint_), qPrintable(checkpoint_));
    }

    // Before any evaluation the view says what to do: choose a checkpoint, then (one chosen)
    // press Evaluate; results, once shown, stay (it said "Choose a checkpoint" with one chosen).
    void promptsBeforeEvaluating() {
        EvaluationView view;
        QCOMPARE(view.message(), QStringLiteral("Choose a checkpoint to evaluate."));
        view.setCheckpointChosen(true);
        QVERIFY2(view.message().startsWith(QStringLiteral("Press Evaluate")),
                 qPrintable(view.message()));
        view.setCheckpointChosen(false);
        QCOMPARE(view.message(), QStringLiteral("Choose a checkpoint to evaluate."));
        QVERIFY(evaluateAndWait(view, stripes_, checkpoint_));
        QVERIFY(view.evaluation());
        view.setCheckpointChosen(true);
        QVERIFY(view.message().isEmpty());
    }

    void confusionMatrixCountsWhatTheCliPredicts() {
        // `myelin eval --predictions`: the model's outputs per example, counted here.
        const QString csv = dir_.filePath(QStringLiteral("predictions.csv"));
        QProcess cli;
        cli.start(QStringLiteral(MYELIN_CLI_PATH),
                  {QStringLiteral("eval"), stripes_, QStringLiteral("--checkpoint"), checkpoint_,
                   QStringLiteral("--predictions"), csv});
        QVERIFY(cli.waitForFinished(60000));
        QVERIFY2(cli.exitCode() == 0, cli.readAllStandardError().constData());
        QFile file(csv);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QList<QByteArray> rows = file.readAll().split('\n');
        QCOMPARE(rows[0], QByteArray("target,output0,output1,output2"));
        int64_t counted[3][3] = {};
        int examples = 0;
        for (int i = 1; i < rows.size(); ++i) {
            if (rows[i].isEmpty()) continue;
            const QList<QByteArray> f = rows[i].split(',');
            int best = 0;
            for (int c = 1; c < 3; ++c)
                if (f[1 + c].toDouble() > f[1 + best].toDouble()) best = c;
            ++counted[f[0].toInt()][best];
            ++examples;
        }
        QCOMPARE(examples, 48);

        EvaluationView view;
        view.resize(1200, 760);
        view.show();
        QVERIFY(evaluateAndWait(view, stripes_, checkpoint_));
        QVERIFY2(view.evaluation(), qPrintable(view.message()));
        QVERIFY(view.message().isEmpty());
        QVERIFY(view.metricsText().contains(QStringLiteral("accuracy")));
        const train::Evaluation& e = *view.evaluation();
        const auto& shown = view.confusionMatrix()->matrix();
        int64_t wrong = 0;
        for (int t = 0; t < 3; ++t)
            for (int p = 0; p < 3; ++p) {
                QCOMPARE(shown.at(t, p), counted[t][p]);
                QCOMPARE(view.confusionMatrix()->cellText(t, p), QString::number(counted[t][p]));
                if (t != p) wrong += counted[t][p];
            }
        QVERIFY2(wrong > 0, "the comparison covers more than the diagonal");

        // Clicking a cell lists exactly its examples; every cell, by a click on its square.
        for (int t = 0; t < 3; ++t)
            for (int p = 0; p < 3; ++p) {
                const QRect r = view.confusionMatrix()->cellRect(t, p);
                QVERIFY(!r.isEmpty());
                QTest::mouseClick(view.confusionMatrix(), Qt::LeftButton, {}, r.center());
                QVERIFY(view.confusionMatrix()->selectedCell() ==
                        std::make_optional(std::pair{t, p}));
                QCOMPARE(sorted(view.listedExamples()), e.cell(t, p));
                QCOMPARE(int64_t(view.cellList()->count()), counted[t][p]);
                for (int k = 0; k < view.cellList()->count(); ++k) {
                    const int64_t i = view.cellList()->item(k)->data(Qt::UserRole).toLongLong();
                    QCOMPARE(e.targets[size_t(i)], int64_t(t));
                    QCOMPARE(e.predicted[size_t(i)], int64_t(p));
                    QVERIFY(!view.cellList()->item(k)->icon().isNull()); // a thumbnail
                }
            }

        // Row-normalised: each row's shares sum to 1 and are what the cells print.
        view.setNormalized(true);
        QVERIFY(view.confusionMatrix()->isNormalized());
        for (int t = 0; t < 3; ++t) {
            const std::vector<double> row = e.normalized_row(t);
            double sum = 0;
            for (int p = 0; p < 3; ++p) {
                sum += row[size_t(p)];
                QCOMPARE(row[size_t(p)], double(counted[t][p]) /
                                             double(counted[t][0] + counted[t][1] + counted[t][2]));
                const QString text = view.confusionMatrix()->cellText(t, p);
                QCOMPARE(text, row[size_t(p)] == 0 ? QStringLiteral("0")
                                                   : QString::number(row[size_t(p)], 'f', 2));
            }
            QVERIFY(std::abs(sum - 1.0) < 1e-12);
        }

        // Per class and the highest losses.
        QCOMPARE(view.perClassTable()->rowCount(), 3);
        for (int c = 0; c < 3; ++c)
            QCOMPARE(view.perClassTable()->item(c, 3)->text(),
                     QString::number(e.per_class[size_t(c)].f1, 'f', 4));
        QCOMPARE(view.topLossTable()->rowCount(), int(e.top_losses.size()));
        QCOMPARE(view.topLossTable()->item(0, 5)->text(),
                 QString::number(*std::max_element(e.losses.begin(), e.losses.end()), 'f', 4));
        // The worst mistakes, a click away.
        for (int t = 0; t < 3; ++t)
            for (int p = 0; p < 3; ++p)
                if (t != p && counted[t][p] > 0) view.showCell(t, p);
        view.setNormalized(false);
        myelin::test::saveScreenshot(view, QStringLiteral("eval_confusion_stripes.png"));
    }

    void singleExampleAgreesWithTheEvaluation() {
        EvaluationView evaluation;
        QVERIFY(evaluateAndWait(evaluation, stripes_, checkpoint_));
        const train::Evaluation& e = *evaluation.evaluation();

        SingleExampleView view;
        view.resize(1200, 700);
        view.show();
        view.setModel(io::load_project(stripes_.toStdString()), dir_.path(), checkpoint_);
        QVERIFY2(view.hasModel(), qPrintable(view.message()));
        QCOMPARE(view.exampleCount(), e.size);
        for (int64_t i = 0; i < e.size; ++i) {
            view.showExample(i);
            QCOMPARE(view.currentExample(), i);
            QCOMPARE(view.predictedClass(), e.predicted[size_t(i)]);
            QCOMPARE(view.topClasses().front().first, e.predicted[size_t(i)]);
            QVERIFY(std::abs(view.topClasses().front().second -
                             e.probability(i, e.predicted[size_t(i)])) < 1e-4);
        }
        // Every layer's activation, in forward order; feature maps for the 4-D ones.
        std::vector<std::string> layers;
        for (const auto& a : view.activations())
            layers.push_back(a.layer);
        QCOMPARE(layers, (std::vector<std::string>{"conv", "act", "pool", "flat", "fc"}));
        view.selectLayer("conv");
        QVERIFY(view.showsFeatureMaps());
        view.selectLayer("fc");
        QVERIFY(!view.showsFeatureMaps());
        view.selectLayer("act");
        view.showExample(4);
        QCOMPARE(view.selectedLayer(), std::string("act")); // the layer stays chosen

        // An image file: converted to the model's one 8x8 channel, and said so.
        const QString png = dir_.filePath(QStringLiteral("stripes.png"));
        QImage picture(16, 16, QImage::Format_RGB32);
        for (int y = 0; y < 16; ++y)
            for (int x = 0; x < 16; ++x)
                picture.setPixel(x, y, qRgb((y / 2) % 2 * 255, 40, 90));
        QVERIFY(picture.save(png));
        QVERIFY2(view.openImage(png), qPrintable(view.message()));
        QCOMPARE(view.currentExample(), int64_t(-1));
        QVERIFY2(view.inputNote().contains(QStringLiteral("resized from 16×16 to 8×8")),
                 qPrintable(view.inputNote()));
        QVERIFY(view.inputNote().contains(QStringLiteral("grey")));
        QCOMPARE(view.output().numel(), int64_t(3));
        // What is not an image, or not this project's kind of input, changes nothing.
        const myelin::Tensor before = view.output();
        const QString text = dir_.filePath(QStringLiteral("notes.png"));
        QFile notes(text);
        QVERIFY(notes.open(QIODevice::WriteOnly) && notes.write("not a picture") > 0);
        notes.close();
        QVERIFY(!view.openImage(text));
        QVERIFY2(view.message().contains(QStringLiteral("is not an image")),
                 qPrintable(view.message()));
        QVERIFY(!view.showRow(QStringLiteral("1, 2, 3")));
        QVERIFY(view.message().contains(QStringLiteral("open an image file instead")));
        QCOMPARE(view.output().data<float>()[0], before.data<float>()[0]);
        view.showExample(1);
        QVERIFY(view.message().isEmpty()); // a good input clears the last problem
        view.selectLayer("conv");
        myelin::test::saveScreenshot(view, QStringLiteral("eval_single_example_stripes.png"));
    }

    void tabularRowsAreReadAndChecked() {
        QTemporaryDir dir;
        const QString project = myelin::test::writeBlobsProject(dir.path(), 2);
        const QString checkpoint = trainCheckpoint(project, 20, 2);
        QVERIFY(QFile::exists(checkpoint));
        SingleExampleView view;
        view.setModel(io::load_project(project.toStdString()), dir.path(), checkpoint);
        QVERIFY2(view.hasModel(), qPrintable(view.message()));
        QVERIFY2(view.showRow(QStringLiteral("0.1, 2.2, -0.1, 0.2")), qPrintable(view.message()));
        QCOMPARE(view.predictedClass(), int64_t(1)); // near class b's centre
        QCOMPARE(int(view.topClasses().size()), 3);
        QVERIFY(!view.showRow(QStringLiteral("1, 2")));
        QCOMPARE(view.message(), QStringLiteral("The row has 2 value(s); the model takes 4."));
        QVERIFY(!view.showRow(QStringLiteral("1, x, 0, 0")));
        QVERIFY(view.message().contains(QStringLiteral("'x', is not a number")));
        QCOMPARE(view.predictedClass(), int64_t(1)); // unchanged
        QVERIFY(!view.openImage(dir.filePath(QStringLiteral("blobs.csv"))));
        QVERIFY(view.message().contains(QStringLiteral("not images")));
    }

    void regressionShowsScatterAndResiduals() {
        const QString examples =
            QFileInfo(myelin::test::examplePath("tabular_regression")).absolutePath();
        QTemporaryDir dir;
        // The example's data beside a copy of the project (its checkpoints go into `dir`).
        QVERIFY(QDir().mkpath(dir.filePath(QStringLiteral("data"))));
        QVERIFY(QFile::copy(examples + QStringLiteral("/data/tabular_regression.csv"),
                            dir.filePath(QStringLiteral("data/tabular_regression.csv"))));
        const QString project = dir.filePath(QStringLiteral("regression.myelin"));
        QVERIFY(QFile::copy(myelin::test::examplePath("tabular_regression"), project));
        const QString checkpoint = trainCheckpoint(project, 40, 3);
        QVERIFY(QFile::exists(checkpoint));
        EvaluationView view;
        view.resize(1200, 700);
        view.show();
        QVERIFY(evaluateAndWait(view, project, checkpoint));
        QVERIFY2(view.evaluation(), qPrintable(view.message()));
        const train::Evaluation& e = *view.evaluation();
        QVERIFY(!e.classification());
        QVERIFY(view.metricsText().contains(QStringLiteral("R²")));
        // The points are the (true, predicted) pairs; the line is y = x.
        QCOMPARE(view.scatterPlot()->graphCount(), 2);
        const auto* points = view.scatterPlot()->graph(1)->data().data();
        QCOMPARE(points->size(), int(e.size));
        double keys = 0, values = 0, targets = 0, outputs = 0; // the plot sorts by key
        for (int i = 0; i < points->size(); ++i) {
            keys += points->at(i)->key;
            values += points->at(i)->value;
            targets += e.target_value(i, 0);
            outputs += e.output(i, 0);
        }
        QVERIFY(std::abs(keys - targets) <= 1e-9 * std::abs(targets) + 1e-9);
        QVERIFY(std::abs(values - outputs) <= 1e-9 * std::abs(outputs) + 1e-9);
        const auto* line = view.scatterPlot()->graph(0)->data().data();
        QCOMPARE(line->at(0)->key, line->at(0)->value);
        // The histogram counts every residual once.
        auto* bars = qobject_cast<QCPBars*>(view.residualPlot()->plottable(0));
        QVERIFY(bars);
        double total = 0;
        for (auto it = bars->data()->constBegin(); it != bars->data()->constEnd(); ++it)
            total += it->value;
        QCOMPARE(total, double(e.size));
        myelin::test::saveScreenshot(view, QStringLiteral("eval_regression.png"));
    }

    void checkpointsThatDoNotFitAreSaidInWords() {
        io::Project other = io::load_project(stripes_.toStdString());
        for (auto& node : other.model.nodes) {
            if (node.kind == "Conv2d") node.attrs.set("out_channels", int64_t(4));
            if (node.kind == "Linear") node.attrs.set("in_features", int64_t(64));
        }
        EvaluationView view;
        QSignalSpy finished(&view, &EvaluationView::finished);
        view.evaluate(other, dir_.path(), checkpoint_);
        QVERIFY(finished.wait(kEvaluationTimeoutMs));
        QVERIFY(!view.evaluation());
        QVERIFY2(view.message().contains(QStringLiteral("does not fit this model")),
                 qPrintable(view.message()));
        view.evaluate(other, dir_.path(), dir_.filePath(QStringLiteral("gone.safetensors")));
        QVERIFY(finished.wait(kEvaluationTimeoutMs));
        QVERIFY2(view.message().contains(QStringLiteral("no such checkpoint file")),
                 qPrintable(view.message()));

        SingleExampleView single;
        single.setModel(other, dir_.path(), checkpoint_);
        QVERIFY(!single.hasModel());
        QVERIFY(single.message().contains(QStringLiteral("does not fit this model")));
        single.showExample(0); // nothing to show, and no crash
        QVERIFY(!single.openImage(dir_.filePath(QStringLiteral("stripes.png"))));
    }

    // The screenshots of docs/screenshots, on a real Fashion-MNIST model (a checkpoint of
    // resources/examples/fashion_cnn.myelin named by MYELIN_EVAL_FASHION_CHECKPOINT).
    void fashionScreenshots() {
        const QString checkpoint = qEnvironmentVariable("MYELIN_EVAL_FASHION_CHECKPOINT");
        if (checkpoint.isEmpty() || !QFile::exists(checkpoint))
            QSKIP("MYELIN_EVAL_FASHION_CHECKPOINT names no fashion_cnn checkpoint");
        const QString project = myelin::test::examplePath("fashion_cnn");
        EvaluationView view;
        view.resize(1400, 820);
        view.show();
        // Cancel, once batches are going: nothing is shown but the message.
        {
            QSignalSpy finished(&view, &EvaluationView::finished);
            view.evaluate(io::load_project(project.toStdString()),
                          QFileInfo(project).absolutePath(), checkpoint);
            QVERIFY(view.isRunning());
            QTRY_VERIFY_WITH_TIMEOUT(view.findChild<QProgressBar*>()->maximum() > 0, 60000);
            view.cancel();
            QVERIFY(finished.wait(kEvaluationTimeoutMs));
            QVERIFY(!view.evaluation());
            QVERIFY2(view.message().contains(QStringLiteral("cancelled")),
                     qPrintable(view.message()));
        }
        // The GUI thread keeps its timers while the evaluation runs.
        int ticks = 0;
        QTimer tick;
        connect(&tick, &QTimer::timeout, [&] { ++ticks; });
        tick.start(20);
        QVERIFY(evaluateAndWait(view, project, checkpoint));
        QVERIFY(ticks > 0);
        QVERIFY2(view.evaluation(), qPrintable(view.message()));
        view.showCell(6, 0); // Shirts taken for T-shirts: the model's most common mistake
        QCOMPARE(sorted(view.listedExamples()).size(),
                 std::min<size_t>(400, view.evaluation()->cell(6, 0).size()));
        myelin::test::saveScreenshot(view, QStringLiteral("eval_confusion.png"));
        view.detailTabs()->setCurrentIndex(2);
        view.setNormalized(true);
        myelin::test::saveScreenshot(view, QStringLiteral("eval_top_loss.png"));
        view.detailTabs()->setCurrentIndex(1);
        myelin::test::saveScreenshot(view, QStringLiteral("eval_per_class.png"));

        SingleExampleView single;
        single.resize(1400, 820);
        single.show();
        single.setModel(io::load_project(project.toStdString()), QFileInfo(project).absolutePath(),
                        checkpoint);
        QVERIFY2(single.hasModel(), qPrintable(single.message()));
        single.showExample(12);
        QCOMPARE(single.predictedClass(), view.evaluation()->predicted[12]);
        single.selectLayer(single.activations().front().layer);
        QVERIFY(single.showsFeatureMaps());
        myelin::test::saveScreenshot(single, QStringLiteral("eval_single_example.png"));
    }

  private:
    QTemporaryDir home_;
    QTemporaryDir dir_;
    QString stripes_;
    QString checkpoint_;
};

QTEST_MAIN(TestEvaluationView)
#include "test_evaluation_view.moc"
