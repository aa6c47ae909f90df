// The Training page driven offscreen as a person uses it: kind combos, option forms, run
// settings, the learning-rate preview (its numbers checked against core's train::preview_lr),
// undo/redo through the document, invalid options refused with the reason, and the lock used
// while a run trains. Screenshots land in the artifacts folder (docs/screenshots/ holds copies).
#include "document/project_document.h"
#include "pages/lr_finder_dialog.h"
#include "pages/lr_preview_sampling.h"
#include "pages/training_page.h"
#include "ui_test_support.h"
#include "widgets/theme.h"

#include <myelin/io/project.h>
#include <myelin/train/components.h>

#include <qcustomplot.h>

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QUndoStack>
#include <QWheelEvent>
#include <QtTest>

#include <algorithm>
#include <vector>

using myelin::spec::TrainSpec;
using myelin::test::artifactsDir;
using myelin::test::examplePath;
using myelin::ui::LrFinderDialog;
using myelin::ui::ProjectDocument;
using myelin::ui::TrainingPage;

namespace {

void savePixmap(const QPixmap& shot, const QString& path) {
    QVERIFY(!shot.isNull());
    QVERIFY2(shot.save(path), qPrintable(QStringLiteral("cannot write ") + path));
    qInfo("screenshot: %s", qPrintable(path));
}

// The example project open in a document, and the page showing it at the studio's size.
struct Fixture {
    ProjectDocument doc;
    TrainingPage page{&doc};
    Fixture() {
        doc.open(myelin::io::load_project(examplePath("fashion_cnn").toStdString()),
                 examplePath("fashion_cnn"));
        page.resize(1280, 800);
        page.show();
    }
    const TrainSpec& train() const { return doc.project().train; }
    QUndoStack& undo() { return *doc.undoStack(); }
    template <typename T> T* find(const char* name) {
        return page.findChild<T*>(QString::fromLatin1(name));
    }
    // An option's editor inside one component's form ("lossOptions", ...).
    template <typename T> T* option(const char* container, const char* name) {
        auto* box = find<QWidget>(container);
        return box == nullptr ? nullptr
                              : box->findChild<T*>(QStringLiteral("attr_") + QLatin1String(name));
    }
    QLabel* optionError(const char* container, const char* name) {
        return find<QWidget>(container)->findChild<QLabel*>(QStringLiteral("attrError_") +
                                                            QLatin1String(name));
    }
    void choose(const char* comboName, const QString& data) {
        auto* combo = find<QComboBox>(comboName);
        QVERIFY(combo != nullptr);
        const int index = combo->findData(data);
        QVERIFY2(index >= 0, qPrintable(data));
        combo->setCurrentIndex(index);
    }
    QCPGraph* graph() { return find<QCustomPlot>("lrPreviewPlot")->graph(0); }
};

bool strictlyDecreasing(const std::vector<double>& v) {
    for (size_t i = 1; i < v.size(); ++i)
        if (!(v[i] < v[i - 1])) return false;
    return true;
}

} // namespace

class TestTrainingPage : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase();
    void showsTheProjectsSettings();
    void cosinePreviewComesFromCore();
    void perStepPreviewUsesTheDataSize();
    void optimizerLrUpdatesPreviewAndUndoRestores();
    void findLearningRateAppliesASuggestion();
    void invalidOptionsAreExplainedAndNotCommitted();
    void kindChangeResetsOptionsAndUndoRestores();
    void epochsSpinBoxIsOneUndoStep();
    void reduceOnPlateauShowsANote();
    void runSettingsAreUndoableEdits();
    void lockingDisablesEditors();
    void noProjectDisablesThePage();
    void wheelScrollsTheFormNotItsInputs();
    void screenshot();
};

// Scrolling the settings with the wheel used to change whatever combo box passed under the
// pointer (seen in a real window: Adam became Adagrad). Unfocused inputs leave it to the form.
void TestTrainingPage::wheelScrollsTheFormNotItsInputs() {
    Fixture f;
    f.page.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&f.page));
    auto* optimizer = f.find<QComboBox>("optimizerKind");
    auto* scroll = f.find<QScrollArea>("trainingSettingsScroll");
    QVERIFY(optimizer && scroll);
    QVERIFY(scroll->verticalScrollBar()->maximum() > 0);
    QCOMPARE(optimizer->focusPolicy(), Qt::StrongFocus);
    const QString kind = optimizer->currentText();
    const int undoBefore = f.undo().count();
    // Returns whether the input accepted the wheel. (A real wheel event that the input leaves
    // unaccepted goes on to its parents, so the scroll area scrolls: seen in a real window.)
    auto wheelDown = [&] {
        QWheelEvent down(QPointF(5, 5), optimizer->mapToGlobal(QPointF(5, 5)), QPoint(),
                         QPoint(0, -120), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
        QApplication::sendEvent(optimizer, &down);
        return down.isAccepted();
    };
    QVERIFY(!wheelDown());
    QCOMPARE(optimizer->currentText(), kind);
    QCOMPARE(QString::fromStdString(f.train().optimizer.kind), kind);
    QCOMPARE(f.undo().count(), undoBefore);
    // Focused (clicked or tabbed to), the input takes the wheel as anywhere in Qt.
    optimizer->setFocus(Qt::TabFocusReason);
    QVERIFY(optimizer->hasFocus());
    QVERIFY(wheelDown());
    QVERIFY(optimizer->currentText() != kind);
}

void TestTrainingPage::initTestCase() {
    myelin::ui::applyStudioTheme(*qApp);
    QVERIFY2(QFileInfo::exists(examplePath("fashion_cnn")), qPrintable(examplePath("fashion_cnn")));
}

void TestTrainingPage::showsTheProjectsSettings() {
    Fixture f;
    QVERIFY(QTest::qWaitForWindowExposed(&f.page));
    auto* loss = f.find<QComboBox>("lossKind");
    auto* optimizer = f.find<QComboBox>("optimizerKind");
    auto* scheduler = f.find<QComboBox>("schedulerKind");
    QVERIFY(loss && optimizer && scheduler);
    QCOMPARE(loss->currentText(), QStringLiteral("CrossEntropyLoss"));
    QCOMPARE(optimizer->currentText(), QStringLiteral("Adam"));
    QCOMPARE(scheduler->currentText(), QStringLiteral("None"));
    // Every kind core offers, with its documentation as tooltip.
    QCOMPARE(loss->count(), int(myelin::spec::loss_kinds().size()));
    QCOMPARE(optimizer->count(), int(myelin::spec::optimizer_kinds().size()));
    QCOMPARE(scheduler->count(), int(myelin::spec::scheduler_kinds().size()) + 1);
    const auto& adam = *myelin::spec::find_component(myelin::spec::optimizer_kinds(), "Adam");
    QCOMPARE(optimizer->itemData(optimizer->currentIndex(), Qt::ToolTipRole).toString(),
             QString::fromStdString(adam.doc));

    auto* lr = f.option<QDoubleSpinBox>("optimizerOptions", "lr");
    QVERIFY(lr != nullptr);
    QCOMPARE(lr->value(), 0.001);
    QVERIFY(f.option<QDoubleSpinBox>("lossOptions", "label_smoothing") != nullptr);
    QVERIFY(f.option<QDoubleSpinBox>("lossOptions", "lr") == nullptr);
    QVERIFY(f.find<QWidget>("schedulerOptions")->isHidden()); // None has no options

    QCOMPARE(f.find<QSpinBox>("trainEpochs")->value(), 2);
    QCOMPARE(f.find<QSpinBox>("trainAccumulation")->value(), 1);
    QCOMPARE(f.find<QLineEdit>("trainSeed")->text(), QStringLiteral("1"));
    QVERIFY(!f.find<QCheckBox>("trainClipNormEnabled")->isChecked());
    QVERIFY(!f.find<QDoubleSpinBox>("trainClipNorm")->isEnabled());
    QVERIFY(!f.find<QCheckBox>("earlyStoppingEnabled")->isChecked());
    // float32 and bfloat16 autocast, both choosable, and float16 (CUDA only: greyed with the
    // reason where no device here trains in it, test_training_project_device); the project's
    // value is shown.
    auto* precision = f.find<QComboBox>("trainPrecision");
    QCOMPARE(precision->count(), 3);
    QCOMPARE(precision->itemData(2).toString(), QStringLiteral("float16"));
    QVERIFY(precision->isEnabled());
    QCOMPARE(precision->currentData().toString(), QStringLiteral("float32"));
    QVERIFY(precision->toolTip().contains(QStringLiteral("bfloat16")));

    // No schedule: a constant line at the optimizer's lr, one point per epoch.
    const std::vector<double> constant(2, 0.001);
    QVERIFY(f.page.previewValues() == constant);
    QCOMPARE(f.graph()->dataCount(), 2);
    QVERIFY(f.page.previewError().isEmpty());
}

void TestTrainingPage::cosinePreviewComesFromCore() {
    Fixture f;
    f.find<QSpinBox>("trainEpochs")->setValue(10);
    f.choose("schedulerKind", QStringLiteral("CosineAnnealingLR"));
    QVERIFY(f.train().scheduler.has_value());
    QCOMPARE(f.train().scheduler->kind, std::string("CosineAnnealingLR"));
    QCOMPARE(f.undo().undoText(), QStringLiteral("Change LR schedule to CosineAnnealingLR"));
    QVERIFY(f.option<QSpinBox>("schedulerOptions", "T_max") != nullptr);

    const std::vector<double>& values = f.page.previewValues();
    QCOMPARE(values.size(), size_t(10)); // one per epoch
    QVERIFY(values == myelin::train::preview_lr(f.train().optimizer, *f.train().scheduler, 10));
    QCOMPARE(values.front(), 0.001); // the optimizer's lr
    QVERIFY(strictlyDecreasing(values));
    QCOMPARE(f.graph()->dataCount(), 10);
    QCOMPARE(f.graph()->data()->at(0)->key, 1.0);
    QCOMPARE(f.graph()->data()->at(0)->value, 0.001);
    QCOMPARE(f.page.previewPositions().back(), 10.0);

    // An option of the schedule changes the curve: eta_min is where it ends.
    auto* etaMin = f.option<QDoubleSpinBox>("schedulerOptions", "eta_min");
    QVERIFY(etaMin != nullptr);
    etaMin->setValue(0.0001);
    QCOMPARE(f.train().scheduler->options.get_float("eta_min"), 0.0001);
    QVERIFY(f.page.previewValues() ==
            myelin::train::preview_lr(f.train().optimizer, *f.train().scheduler, 10));
    QVERIFY(f.page.previewValues().back() > 0.0001);
}

void TestTrainingPage::perStepPreviewUsesTheDataSize() {
    Fixture f;
    f.choose("schedulerKind", QStringLiteral("StepLR"));
    f.choose("schedulerInterval", QStringLiteral("step"));
    QVERIFY(f.train().scheduler_interval == myelin::spec::ScheduleInterval::Step);
    // Fashion-MNIST: 60,000 - 10% validation = 54,000 images, batch 128 -> 422 steps.
    QVERIFY(f.page.stepsPerEpochKnown());
    QCOMPARE(f.page.previewStepsPerEpoch(), int64_t(422));
    QCOMPARE(f.page.previewValues().size(), size_t(422 * 2));
    QVERIFY(f.page.previewValues() ==
            myelin::train::preview_lr(f.train().optimizer, *f.train().scheduler, 844));
    QVERIFY(f.find<QLabel>("lrPreviewSteps")->text().contains(QStringLiteral("422")));
    QCOMPARE(f.find<QCustomPlot>("lrPreviewPlot")->xAxis->label(),
             QStringLiteral("Optimizer step"));

    // A long run is drawn at a bounded number of its steps, with core's values at those steps
    // (test_lr_preview has the huge runs).
    f.find<QSpinBox>("trainEpochs")->setValue(100); // 42,200 steps
    const std::vector<double> all =
        myelin::train::preview_lr(f.train().optimizer, *f.train().scheduler, 42200);
    const std::vector<double>& sampled = f.page.previewValues();
    QVERIFY(sampled.size() <= size_t(myelin::ui::kMaxPreviewPoints));
    QCOMPARE(f.page.previewPositions().back(), 42200.0);
    for (size_t i = 0; i < sampled.size(); ++i)
        QCOMPARE(sampled[i], all[size_t(f.page.previewPositions()[i]) - 1]);
    // StepLR's default step_size 10: 4,219 drops, too many to mark each one.
    QVERIFY(f.find<QLabel>("lrPreviewNote")->text().contains(QStringLiteral("too often")));
    f.undo().undo();
    QCOMPARE(f.page.previewValues().size(), size_t(844));

    // Accumulation and the data spec's batch size change the steps per epoch.
    f.find<QSpinBox>("trainAccumulation")->setValue(2);
    QCOMPARE(f.page.previewStepsPerEpoch(), int64_t(211));
    QCOMPARE(f.page.previewValues().size(), size_t(422));
    myelin::spec::DataSpec data = f.doc.project().data;
    data.batch_size = 64;
    f.doc.applyDataEdit(data, QStringLiteral("Change batch size"));
    QCOMPARE(f.page.previewStepsPerEpoch(), int64_t(422)); // 844 micro-batches / 2
    QCOMPARE(f.page.previewValues().size(), size_t(844));

    // Another source: the size is unknown, the preview says what it assumes.
    data.source = {"csv", {}};
    f.doc.applyDataEdit(data, QStringLiteral("Change source"));
    QVERIFY(!f.page.stepsPerEpochKnown());
    auto* assumed = f.find<QSpinBox>("previewStepsPerEpoch");
    QVERIFY(assumed->isVisibleTo(&f.page));
    assumed->setValue(50);
    QCOMPARE(f.page.previewValues().size(), size_t(100));
    QVERIFY(f.page.previewValues() ==
            myelin::train::preview_lr(f.train().optimizer, *f.train().scheduler, 100));
}

void TestTrainingPage::optimizerLrUpdatesPreviewAndUndoRestores() {
    Fixture f;
    f.choose("schedulerKind", QStringLiteral("CosineAnnealingLR"));
    const int commands = f.undo().count();
    auto* lr = f.option<QDoubleSpinBox>("optimizerOptions", "lr");
    QVERIFY(lr != nullptr);
    lr->setValue(0.01);
    QCOMPARE(f.train().optimizer.options.get_float("lr"), 0.01);
    QCOMPARE(f.page.previewValues().front(), 0.01);
    QCOMPARE(f.undo().count(), commands + 1);
    QCOMPARE(f.undo().undoText(), QStringLiteral("Change optimizer lr to 0.01"));

    f.undo().undo();
    QCOMPARE(f.train().optimizer.options.get_float("lr"), 0.001);
    QCOMPARE(f.page.previewValues().front(), 0.001);
    QCOMPARE(f.option<QDoubleSpinBox>("optimizerOptions", "lr")->value(), 0.001);
    f.undo().redo();
    QCOMPARE(f.option<QDoubleSpinBox>("optimizerOptions", "lr")->value(), 0.01);
    QCOMPARE(f.page.previewValues().front(), 0.01);
}

// "Find learning rate…": the range test on the CNN in its dialog, the curve plotted with the
// suggestions, and "Use" applying one as one undoable edit (nothing else changes).
void TestTrainingPage::findLearningRateAppliesASuggestion() {
    Fixture f;
    const myelin::io::Project before = f.doc.project();
    const int commands = f.undo().count();
    auto* button = f.find<QPushButton>("findLearningRate");
    QVERIFY(button != nullptr && button->isEnabled());
    QTest::mouseClick(button, Qt::LeftButton);
    LrFinderDialog* dialog = f.page.lrFinderDialog();
    QVERIFY(dialog != nullptr);
    QTRY_VERIFY_WITH_TIMEOUT(dialog->useSteepestButton()->isEnabled() || !dialog->error().isEmpty(),
                             120000);
    QVERIFY2(dialog->error().isEmpty(), qPrintable(dialog->error()));
    const myelin::train::LrFindResult& r = dialog->result();
    QVERIFY(r.lrs.size() >= 10 && r.lrs.size() <= 100);
    QCOMPARE(dialog->plot()->graph(1)->dataCount(), int(r.smoothed.size()));
    QVERIFY(r.steepest_lr > 1e-7 && r.steepest_lr < 10);
    QVERIFY(dialog->summaryText().contains(QStringLiteral("Suggested")));
    QCoreApplication::processEvents(); // the buttons' new texts laid out
    savePixmap(dialog->grab(), QDir(artifactsDir()).filePath(QStringLiteral("lr_finder.png")));
    QCOMPARE(f.undo().count(), commands); // nothing changed while it ran
    const double suggested = r.steepest_lr;
    dialog->useSteepestButton()->click();
    QCOMPARE(f.train().optimizer.options.get_float("lr"), suggested);
    QCOMPARE(f.undo().count(), commands + 1);
    QVERIFY2(f.undo().undoText().contains(QStringLiteral("range test")),
             qPrintable(f.undo().undoText()));
    f.undo().undo();
    QVERIFY(f.doc.project().train == before.train);
    QVERIFY(f.doc.project().model == before.model);
}

void TestTrainingPage::invalidOptionsAreExplainedAndNotCommitted() {
    Fixture f;
    f.choose("schedulerKind", QStringLiteral("StepLR"));
    const TrainSpec before = f.train();
    const int commands = f.undo().count();

    // Outside the option's description: explained under the field.
    auto* lr = f.option<QDoubleSpinBox>("optimizerOptions", "lr");
    lr->setValue(0);
    QLabel* lrError = f.optionError("optimizerOptions", "lr");
    QVERIFY(!lrError->isHidden());
    QVERIFY2(lrError->text().contains(QStringLiteral("> 0")), qPrintable(lrError->text()));
    QVERIFY(f.train() == before);

    // Within the description but refused by core (Adam needs beta1 < 1): the reason shows under
    // the plot and under the field, the project keeps its value and the plot its curve.
    auto* beta1 = f.option<QDoubleSpinBox>("optimizerOptions", "beta1");
    beta1->setValue(1.0);
    QVERIFY2(f.page.previewError().contains(QStringLiteral("beta1")),
             qPrintable(f.page.previewError()));
    auto* errorLabel = f.find<QLabel>("lrPreviewError");
    QVERIFY(errorLabel->isVisibleTo(&f.page));
    QVERIFY(!f.optionError("optimizerOptions", "beta1")->isHidden());
    QVERIFY(f.train() == before);
    QCOMPARE(f.undo().count(), commands);
    QVERIFY(!f.page.previewValues().empty());
    beta1->setValue(0.9); // back to the project's value
    QVERIFY(f.page.previewError().isEmpty());

    // A schedule option core refuses (LinearLR needs total_iters > 0).
    f.choose("schedulerKind", QStringLiteral("LinearLR"));
    const TrainSpec linear = f.train();
    f.option<QSpinBox>("schedulerOptions", "total_iters")->setValue(0);
    QVERIFY2(f.page.previewError().contains(QStringLiteral("total_iters")),
             qPrintable(f.page.previewError()));
    QVERIFY(f.train() == linear);

    // A kind that does not fit the other settings is taken (its defaults) with the reason shown,
    // so the next edit can make it fit: OneCycleLR cycles momentum, which Adagrad lacks.
    f.choose("optimizerKind", QStringLiteral("Adagrad"));
    f.choose("schedulerKind", QStringLiteral("OneCycleLR"));
    QCOMPARE(f.train().scheduler->kind, std::string("OneCycleLR"));
    QVERIFY(!f.page.previewError().isEmpty());
    QVERIFY(f.page.previewValues().empty());
    QCOMPARE(f.graph()->dataCount(), 0);
    auto* cycle = f.option<QCheckBox>("schedulerOptions", "cycle_momentum");
    QVERIFY(cycle != nullptr);
    cycle->setChecked(false);
    QVERIFY(!f.train().scheduler->options.get_bool("cycle_momentum"));
    QVERIFY2(f.page.previewError().isEmpty(), qPrintable(f.page.previewError()));
    QCOMPARE(f.page.previewValues().size(), size_t(2));
}

void TestTrainingPage::kindChangeResetsOptionsAndUndoRestores() {
    Fixture f;
    f.option<QDoubleSpinBox>("optimizerOptions", "lr")->setValue(0.005);
    f.choose("optimizerKind", QStringLiteral("SGD"));
    const auto& sgd = *myelin::spec::find_component(myelin::spec::optimizer_kinds(), "SGD");
    QCOMPARE(f.train().optimizer.kind, std::string("SGD"));
    QVERIFY(f.train().optimizer.options == myelin::graph::with_defaults(sgd.options, {}));
    QCOMPARE(f.option<QDoubleSpinBox>("optimizerOptions", "lr")->value(), 0.01);
    QVERIFY(f.option<QCheckBox>("optimizerOptions", "nesterov") != nullptr);
    QVERIFY(f.option<QDoubleSpinBox>("optimizerOptions", "beta1") == nullptr);
    QCOMPARE(f.page.previewValues().front(), 0.01);

    f.undo().undo();
    QCOMPARE(f.find<QComboBox>("optimizerKind")->currentText(), QStringLiteral("Adam"));
    QCOMPARE(f.train().optimizer.options.get_float("lr"), 0.005);
    QCOMPARE(f.option<QDoubleSpinBox>("optimizerOptions", "lr")->value(), 0.005);
    QVERIFY(f.option<QDoubleSpinBox>("optimizerOptions", "beta1") != nullptr);
    QVERIFY(f.option<QCheckBox>("optimizerOptions", "nesterov") == nullptr);

    f.choose("lossKind", QStringLiteral("HuberLoss"));
    QVERIFY(f.option<QDoubleSpinBox>("lossOptions", "delta") != nullptr);
    f.choose("schedulerKind", QStringLiteral("ExponentialLR"));
    f.choose("schedulerKind", QString());
    QVERIFY(!f.train().scheduler.has_value());
    QCOMPARE(f.undo().undoText(), QStringLiteral("Remove the LR schedule"));
    QVERIFY(f.find<QWidget>("schedulerOptions")->isHidden());
    f.undo().undo();
    QCOMPARE(f.find<QComboBox>("schedulerKind")->currentText(), QStringLiteral("ExponentialLR"));
    QVERIFY(f.option<QDoubleSpinBox>("schedulerOptions", "gamma") != nullptr);
}

void TestTrainingPage::epochsSpinBoxIsOneUndoStep() {
    Fixture f;
    auto* epochs = f.find<QSpinBox>("trainEpochs");
    const int commands = f.undo().count();
    for (int i = 0; i < 3; ++i)
        epochs->stepBy(1);
    QCOMPARE(f.train().epochs, int64_t(5));
    QCOMPARE(f.undo().count(), commands + 1);
    QCOMPARE(f.undo().undoText(), QStringLiteral("Change epochs to 5"));
    QCOMPARE(f.page.previewValues().size(), size_t(5));
    f.undo().undo();
    QCOMPARE(f.train().epochs, int64_t(2));
    QCOMPARE(epochs->value(), 2);
    QCOMPARE(f.page.previewValues().size(), size_t(2));
}

void TestTrainingPage::reduceOnPlateauShowsANote() {
    Fixture f;
    f.choose("schedulerKind", QStringLiteral("ReduceLROnPlateau"));
    QCOMPARE(f.train().scheduler->kind, std::string("ReduceLROnPlateau"));
    QVERIFY(f.page.previewValues().empty());
    QCOMPARE(f.graph()->dataCount(), 0);
    auto* note = f.find<QLabel>("lrPreviewPlateauNote");
    QVERIFY(note->isVisibleTo(&f.page));
    QVERIFY(note->text().contains(QStringLiteral("ReduceLROnPlateau")));
    QVERIFY(!f.find<QCustomPlot>("lrPreviewPlot")->isVisibleTo(&f.page));
    QVERIFY(f.page.previewError().isEmpty());
    QVERIFY(!f.find<QComboBox>("schedulerInterval")->isEnabled()); // always per epoch

    // The metrics the trainer records for a classifier with a validation split.
    auto* metric = f.find<QComboBox>("plateauMetric");
    QVERIFY(metric->isVisibleTo(&f.page));
    QCOMPARE(metric->currentText(), QStringLiteral("val_loss"));
    for (const char* name : {"val_loss", "val_accuracy", "val_top5_accuracy", "val_macro_f1",
                             "train_loss", "train_accuracy"})
        QVERIFY2(metric->findText(QLatin1String(name)) >= 0, name);
    QVERIFY(metric->findText(QStringLiteral("val_rmse")) < 0);
    metric->setCurrentIndex(metric->findText(QStringLiteral("val_accuracy")));
    QCOMPARE(f.train().plateau_metric, std::string("val_accuracy"));
    QCOMPARE(f.train().scheduler->options.get_string("mode"), std::string("max"));
    QVERIFY(note->text().contains(QStringLiteral("val_accuracy")));
    f.undo().undo();
    QCOMPARE(f.train().plateau_metric, std::string("val_loss"));
    QCOMPARE(f.train().scheduler->options.get_string("mode"), std::string("min"));
    QCOMPARE(metric->currentText(), QStringLiteral("val_loss"));
}

void TestTrainingPage::runSettingsAreUndoableEdits() {
    Fixture f;
    auto* clipOn = f.find<QCheckBox>("trainClipNormEnabled");
    auto* clip = f.find<QDoubleSpinBox>("trainClipNorm");
    clipOn->setChecked(true);
    QCOMPARE(f.train().clip_grad_norm, std::optional<double>(1.0));
    QVERIFY(clip->isEnabled());
    clip->setValue(0.5);
    QCOMPARE(f.train().clip_grad_norm, std::optional<double>(0.5));
    clipOn->setChecked(false);
    QVERIFY(!f.train().clip_grad_norm.has_value());
    f.undo().undo();
    QCOMPARE(f.train().clip_grad_norm, std::optional<double>(0.5));
    QVERIFY(clipOn->isChecked());

    f.find<QCheckBox>("trainClipValueEnabled")->setChecked(true);
    QCOMPARE(f.train().clip_grad_value, std::optional<double>(1.0));

    auto* precision = f.find<QComboBox>("trainPrecision");
    f.choose("trainPrecision", QStringLiteral("bfloat16"));
    QVERIFY(f.train().precision == myelin::spec::Precision::BFloat16);
    QCOMPARE(f.undo().undoText(), QStringLiteral("Change precision to bfloat16"));
    f.undo().undo();
    QVERIFY(f.train().precision == myelin::spec::Precision::Float32);
    QCOMPARE(precision->currentData().toString(), QStringLiteral("float32"));
    f.undo().redo();
    QVERIFY(f.train().precision == myelin::spec::Precision::BFloat16);
    QCOMPARE(precision->currentData().toString(), QStringLiteral("bfloat16"));

    auto* flush = f.find<QCheckBox>("trainFlushDenormal");
    QVERIFY(!flush->isChecked());
    flush->setChecked(true);
    QVERIFY(f.train().flush_denormal);
    QCOMPARE(f.undo().undoText(), QStringLiteral("Flush denormals to zero"));
    f.undo().undo();
    QVERIFY(!f.train().flush_denormal);
    QVERIFY(!flush->isChecked());
    f.undo().redo();
    QVERIFY(f.train().flush_denormal);
    QVERIFY(flush->isChecked());

    // A GPU's numerics: each box is its key, undoable.
    auto* deterministic = f.find<QCheckBox>("trainDeterministic");
    auto* tf32 = f.find<QCheckBox>("trainAllowTf32");
    QVERIFY(!deterministic->isChecked() && !tf32->isChecked());
    deterministic->setChecked(true);
    QVERIFY(f.train().deterministic);
    QCOMPARE(f.undo().undoText(), QStringLiteral("Use deterministic GPU kernels"));
    tf32->setChecked(true);
    QVERIFY(f.train().allow_tf32);
    f.undo().undo();
    QVERIFY(!f.train().allow_tf32);
    QVERIFY(!tf32->isChecked());
    QVERIFY(f.train().deterministic);

    auto* seed = f.find<QLineEdit>("trainSeed");
    seed->setText(QStringLiteral("42"));
    emit seed->editingFinished();
    QCOMPARE(f.train().seed, uint64_t(42));

    f.find<QSpinBox>("trainValidateEvery")->setValue(200);
    QCOMPARE(f.train().validate_every_steps, int64_t(200));
    f.find<QSpinBox>("trainThreads")->setValue(4);
    QCOMPARE(f.train().threads, 4);

    auto* es = f.find<QCheckBox>("earlyStoppingEnabled");
    auto* patience = f.find<QSpinBox>("earlyStoppingPatience");
    QVERIFY(!patience->isEnabled());
    es->setChecked(true);
    QVERIFY(f.train().early_stopping.enabled);
    QVERIFY(patience->isEnabled());
    patience->setValue(3);
    QCOMPARE(f.train().early_stopping.patience, int64_t(3));
    auto* esMetric = f.find<QComboBox>("earlyStoppingMetric");
    esMetric->setCurrentIndex(esMetric->findText(QStringLiteral("val_accuracy")));
    QCOMPARE(f.train().early_stopping.metric, std::string("val_accuracy"));
    QVERIFY(f.train().early_stopping.mode == myelin::spec::MetricMode::Max);
    QCOMPARE(f.find<QComboBox>("earlyStoppingMode")->currentData().toString(),
             QStringLiteral("max"));
    f.find<QDoubleSpinBox>("earlyStoppingMinDelta")->setValue(0.001);
    QCOMPARE(f.train().early_stopping.min_delta, 0.001);

    f.find<QSpinBox>("checkpointEvery")->setValue(0);
    QCOMPARE(f.train().checkpoints.every_epochs, int64_t(0));
    f.find<QSpinBox>("checkpointKeepLast")->setValue(5);
    QCOMPARE(f.train().checkpoints.keep_last, int64_t(5));
    f.find<QCheckBox>("checkpointKeepBest")->setChecked(false);
    QVERIFY(!f.train().checkpoints.keep_best);

    f.find<QCheckBox>("captureLayerNorms")->setChecked(false);
    QVERIFY(!f.train().capture.layer_norms);
    QVERIFY(!f.find<QSpinBox>("captureLayerNormsEvery")->isEnabled());
    f.find<QSpinBox>("captureSummariesEvery")->setValue(0);
    QCOMPARE(f.train().capture.summaries_every, int64_t(0));
    f.find<QSpinBox>("captureFeatureMapsEvery")->setValue(250);
    QCOMPARE(f.train().capture.feature_maps_every, int64_t(250));

    // Capture layers: names the model has, or the reason.
    auto* layers = f.find<QLineEdit>("captureLayers");
    const TrainSpec before = f.train();
    layers->setText(QStringLiteral("no_such_layer"));
    emit layers->editingFinished();
    QVERIFY(f.train() == before);
    QVERIFY(!f.find<QLabel>("captureLayersError")->isHidden());
    QString module;
    for (const auto& info : f.doc.analysis().nodes)
        if (!info.module_name.empty() && module.isEmpty())
            module = QString::fromStdString(info.module_name);
    layers->setText(module);
    emit layers->editingFinished();
    QCOMPARE(f.train().capture.layers, std::vector<std::string>{module.toStdString()});
    QVERIFY(f.find<QLabel>("captureLayersError")->isHidden());

    // Every edit above is its own undo step; undoing them all gives the file's spec back.
    const TrainSpec original =
        myelin::io::load_project(examplePath("fashion_cnn").toStdString()).train;
    while (f.undo().canUndo())
        f.undo().undo();
    QVERIFY(f.train() == original);
    QCOMPARE(seed->text(), QStringLiteral("1"));
    QVERIFY(!es->isChecked());
    QCOMPARE(layers->text(), QString());
}

void TestTrainingPage::lockingDisablesEditors() {
    Fixture f;
    const QString reason = QStringLiteral("Run 3 is training with these settings.");
    f.page.setEditingLocked(true, reason);
    QVERIFY(f.page.isEditingLocked());
    for (const char* name : {"lossKind", "optimizerKind", "schedulerKind", "schedulerInterval",
                             "trainEpochs", "trainAccumulation", "trainSeed",
                             "earlyStoppingEnabled", "checkpointEvery", "captureLayerNorms"})
        QVERIFY2(!f.find<QWidget>(name)->isEnabled(), name);
    QVERIFY(!f.option<QDoubleSpinBox>("optimizerOptions", "lr")->isEnabled());
    QVERIFY(!f.option<QDoubleSpinBox>("lossOptions", "label_smoothing")->isEnabled());
    auto* banner = f.find<QLabel>("trainingBanner");
    QVERIFY(banner->isVisibleTo(&f.page));
    QCOMPARE(banner->text(), reason);
    QVERIFY(f.find<QCustomPlot>("lrPreviewPlot")->isEnabled()); // the preview stays readable
    QTest::qWait(50); // the banner's height settles in the layout
    savePixmap(f.page.grab(),
               QDir(artifactsDir()).filePath(QStringLiteral("training_page_locked.png")));

    f.page.setEditingLocked(false);
    QVERIFY(f.find<QWidget>("lossKind")->isEnabled());
    QVERIFY(f.option<QDoubleSpinBox>("optimizerOptions", "lr")->isEnabled());
    QVERIFY(!banner->isVisibleTo(&f.page));
}

void TestTrainingPage::noProjectDisablesThePage() {
    ProjectDocument doc;
    TrainingPage page(&doc);
    page.resize(1280, 800);
    page.show();
    QVERIFY(!page.findChild<QComboBox*>(QStringLiteral("lossKind"))->isEnabled());
    QVERIFY(page.findChild<QLabel*>(QStringLiteral("trainingBanner"))->isVisibleTo(&page));
    QVERIFY(page.previewValues().empty());

    doc.open(myelin::io::load_project(examplePath("fashion_cnn").toStdString()), QString());
    QVERIFY(page.findChild<QComboBox*>(QStringLiteral("lossKind"))->isEnabled());
    QVERIFY(!page.findChild<QLabel*>(QStringLiteral("trainingBanner"))->isVisibleTo(&page));
    QCOMPARE(page.previewValues().size(), size_t(2));
    doc.close();
    QVERIFY(!page.findChild<QComboBox*>(QStringLiteral("lossKind"))->isEnabled());
    QVERIFY(page.previewValues().empty());
}

void TestTrainingPage::screenshot() {
    Fixture f;
    QVERIFY(QTest::qWaitForWindowExposed(&f.page));
    // Warmup then cosine over 20 epochs, stepped per optimizer step.
    f.find<QSpinBox>("trainEpochs")->setValue(20);
    f.choose("optimizerKind", QStringLiteral("AdamW"));
    f.option<QDoubleSpinBox>("optimizerOptions", "lr")->setValue(0.003);
    f.choose("schedulerKind", QStringLiteral("CosineAnnealingLR"));
    f.choose("schedulerInterval", QStringLiteral("step"));
    f.option<QSpinBox>("schedulerOptions", "warmup")->setValue(800);
    f.option<QDoubleSpinBox>("schedulerOptions", "eta_min")->setValue(0.00001);
    f.find<QCheckBox>("trainClipNormEnabled")->setChecked(true);
    // 8,440 steps, drawn at at most kMaxPreviewPoints of them, the warmup's end among them.
    const std::vector<double>& x = f.page.previewPositions();
    auto plotted = [&](int64_t step) {
        const auto it = std::lower_bound(x.begin(), x.end(), double(step + 1));
        return it != x.end() && *it == double(step + 1)
                   ? f.page.previewValues()[size_t(it - x.begin())]
                   : -1.0;
    };
    QVERIFY(f.page.previewValues().size() <= size_t(myelin::ui::kMaxPreviewPoints));
    QCOMPARE(x.back(), double(422 * 20));
    QCOMPARE(plotted(800), 0.003);                          // the warmup's end: the optimizer's lr
    QVERIFY(f.page.previewValues().front() < plotted(800)); // warming up
    QVERIFY(f.page.previewError().isEmpty());
    QTest::qWait(50); // layouts settle after the option forms were rebuilt

    // Hovering the curve reads out the step and its learning rate.
    auto* plot = f.find<QCustomPlot>("lrPreviewPlot");
    const QPoint at(int(plot->xAxis->coordToPixel(4000)), int(plot->yAxis->coordToPixel(0.002)));
    QTest::mouseMove(plot, at);
    QCPItemText* hover = nullptr;
    for (int i = 0; i < plot->itemCount(); ++i)
        if (auto* text = qobject_cast<QCPItemText*>(plot->item(i))) hover = text;
    QVERIFY(hover != nullptr);
    QTRY_VERIFY(hover->visible());
    static const QRegularExpression readout(QStringLiteral("^step ([0-9,]+) .* lr (\\S+)$"));
    const QRegularExpressionMatch m = readout.match(hover->text());
    QVERIFY2(m.hasMatch(), qPrintable(hover->text()));
    const int step = m.captured(1).remove(QLatin1Char(',')).toInt();
    QVERIFY2(qAbs(step - 4000) < 20, qPrintable(hover->text())); // within a few pixels
    QCOMPARE(m.captured(2), QString::number(plotted(step - 1), 'g', 6));
    const QPixmap shot = f.page.grab();
    QCOMPARE(shot.size(), QSize(1280, 800));
    savePixmap(shot, QDir(artifactsDir()).filePath(QStringLiteral("training_page.png")));

    // The rest of the settings, scrolled down.
    auto* scroll = f.find<QScrollArea>("trainingSettingsScroll");
    QVERIFY(scroll != nullptr);
    scroll->verticalScrollBar()->setValue(scroll->verticalScrollBar()->maximum());
    QTest::qWait(20);
    savePixmap(f.page.grab(),
               QDir(artifactsDir()).filePath(QStringLiteral("training_page_settings.png")));

    f.choose("schedulerKind", QStringLiteral("ReduceLROnPlateau"));
    QTest::qWait(50);
    savePixmap(f.page.grab(),
               QDir(artifactsDir()).filePath(QStringLiteral("training_page_plateau.png")));
}

QTEST_MAIN(TestTrainingPage)
#include "test_training_page.moc"
