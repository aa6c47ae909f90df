// The Data page driven offscreen: the preview of Fashion-MNIST (class balance, example grid,
// split sizes) and of a CSV regression table, undoable edits of every kind of setting, a source
// that cannot be loaded shown in place, and the preview worker surviving stale results and the
// page's destruction. Screenshots of the page land in the artifacts folder.
#include "document/project_document.h"
#include "pages/data_page.h"
#include "ui_test_support.h"
#include "widgets/theme.h"

#include <myelin/io/project.h>

#include <qcustomplot.h>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QTextDocumentFragment>
#include <QToolButton>
#include <QUndoStack>
#include <QtTest>

#include <memory>

using myelin::ui::DataPage;
using myelin::ui::ProjectDocument;

using myelin::test::artifactsDir;
using myelin::test::examplePath;
using myelin::test::saveScreenshot;

namespace {

constexpr int kPreviewTimeoutMs = 120000; // Fashion-MNIST is 70,000 images; a slow machine

bool haveFashionMnist() {
    return QFileInfo::exists(
        QStringLiteral("/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz"));
}

QString plain(const QLabel* label) {
    return QTextDocumentFragment::fromHtml(label->text()).toPlainText();
}

// A document holding an example project and the page showing it at the screenshot size.
struct Fixture {
    ProjectDocument doc;
    std::unique_ptr<DataPage> page;

    explicit Fixture(const char* example, bool show = true) {
        const QString path = examplePath(example);
        doc.open(myelin::io::load_project(path.toStdString()), path);
        page = std::make_unique<DataPage>(&doc);
        page->resize(1280, 800);
        if (show) page->show();
    }
    const myelin::spec::DataSpec& data() const { return doc.project().data; }
    QUndoStack& undo() { return *doc.undoStack(); }
    template <typename T> T* find(const char* name) {
        return page->findChild<T*>(QLatin1String(name));
    }
    QCPBars* bars() {
        auto* chart = find<QCustomPlot>("dataClassChart");
        if (chart == nullptr || chart->plottableCount() != 1) return nullptr;
        return qobject_cast<QCPBars*>(chart->plottable(0));
    }
};

double barTotal(QCPBars* bars) {
    double total = 0;
    for (auto it = bars->data()->constBegin(); it != bars->data()->constEnd(); ++it)
        total += it->value;
    return total;
}

} // namespace

class TestDataPage : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase() {
        myelin::ui::applyStudioTheme(*qApp); // as the studio does: screenshots show its look
    }
    void fashionMnistPreview();
    void loaderEditsAreUndoableAndNeedNoReload();
    void missingCsvShowsErrorInPlace();
    void transformsAddMoveRemoveUndo();
    void tabularRegressionPreview();
    void untitledCopyReadsDataBesideTheExample();
    void closedDocumentDisablesPage();
    void hiddenPageLoadsWhenShown();
    void staleResultsAreDropped();
    void destroyedWhileLoading();
};

void TestDataPage::fashionMnistPreview() {
    if (!haveFashionMnist()) QSKIP("Fashion-MNIST (dataset-fashion-mnist) is not installed");
    Fixture f("fashion_cnn");
    QVERIFY(QTest::qWaitForWindowExposed(f.page.get()));
    QVERIFY2(f.page->waitForPreview(kPreviewTimeoutMs), qPrintable(f.page->previewError()));

    // Settings show the project's spec.
    QCOMPARE(f.find<QComboBox>("dataSource")->currentText(), QStringLiteral("fashion-mnist"));
    QCOMPARE(f.find<QComboBox>("dataSource")->count(), 7);
    QCOMPARE(f.find<QDoubleSpinBox>("dataValidationFraction")->value(), 0.1);
    QCOMPARE(f.find<QSpinBox>("dataBatchSize")->value(), 128);
    QCOMPARE(f.find<QSpinBox>("dataWorkers")->value(), 2);
    QVERIFY(f.find<QCheckBox>("dataShuffle")->isChecked());
    QVERIFY(!f.find<QCheckBox>("dataDropLast")->isChecked());
    auto* directory = qobject_cast<QLineEdit*>(f.page->sourceOptionEditor("directory"));
    QVERIFY(directory != nullptr);
    QCOMPARE(directory->text(), QStringLiteral("/usr/share/datasets/fashion-mnist"));
    QVERIFY(f.find<QToolButton>("browse_directory") != nullptr);
    auto* transforms = f.find<QListWidget>("dataTransforms");
    QCOMPARE(transforms->count(), 1);
    QVERIFY(transforms->item(0)->text().contains(QStringLiteral("ScaleTo01")));

    // Ten classes whose counts add up to the training split: 60,000 less 10% validation.
    QCPBars* bars = f.bars();
    QVERIFY(bars != nullptr);
    QCOMPARE(bars->data()->size(), 10);
    QCOMPARE(barTotal(bars), 54000.0);
    auto ticker =
        f.find<QCustomPlot>("dataClassChart")->xAxis->ticker().dynamicCast<QCPAxisTickerText>();
    QVERIFY(!ticker.isNull());
    QCOMPARE(ticker->ticks().value(0.0), QStringLiteral("T-shirt/top"));
    QCOMPARE(ticker->ticks().value(9.0), QStringLiteral("Ankle boot"));

    // The grid, the summary, no error.
    QCOMPARE(f.page->previewImageCount(), 24);
    QVERIFY(f.find<QWidget>("dataPreviewGrid")->isVisible());
    const QString summary = plain(f.find<QLabel>("dataSummary"));
    for (const char* part : {"54,000 training", "6,000 validation", "10,000 test", "[1, 28, 28]",
                             "float32", "values 0 … 1", "10 classes"})
        QVERIFY2(summary.contains(QString::fromUtf8(part)), qPrintable(summary));
    QVERIFY(
        f.find<QLabel>("dataLoaderFacts")->text().contains(QStringLiteral("422 batches of 128")));
    QVERIFY(!f.find<QLabel>("dataError")->isVisible());
    QVERIFY(f.page->previewError().isEmpty());

    saveScreenshot(*f.page, QStringLiteral("data_page_fashion_mnist.png"));
}

void TestDataPage::loaderEditsAreUndoableAndNeedNoReload() {
    if (!haveFashionMnist()) QSKIP("Fashion-MNIST (dataset-fashion-mnist) is not installed");
    Fixture f("fashion_cnn");
    QVERIFY2(f.page->waitForPreview(kPreviewTimeoutMs), qPrintable(f.page->previewError()));
    auto* batch = f.find<QSpinBox>("dataBatchSize");

    batch->setValue(64);
    QCOMPARE(f.data().batch_size, 64);
    QCOMPARE(f.undo().count(), 1);
    QCOMPARE(f.undo().undoText(), QStringLiteral("Change batch size to 64"));
    // Loader settings do not change the examples: no reload, only the batch line.
    QVERIFY(!f.page->previewPending());
    QVERIFY(
        f.find<QLabel>("dataLoaderFacts")->text().contains(QStringLiteral("844 batches of 64")));

    // Stepping the spin box is one undo.
    batch->stepUp();
    batch->stepUp();
    QCOMPARE(f.data().batch_size, 66);
    QCOMPARE(f.undo().count(), 1);
    f.undo().undo();
    QCOMPARE(f.data().batch_size, 128);
    QCOMPARE(batch->value(), 128);
    f.undo().redo();
    QCOMPARE(batch->value(), 66);

    // The other loader settings, each its own edit.
    f.find<QSpinBox>("dataWorkers")->setValue(4);
    QCOMPARE(f.data().num_workers, 4);
    f.find<QCheckBox>("dataShuffle")->setChecked(false);
    QVERIFY(!f.data().shuffle);
    f.find<QCheckBox>("dataDropLast")->setChecked(true);
    QVERIFY(f.data().drop_last);
    QVERIFY(f.find<QLabel>("dataLoaderFacts")->text().contains(QStringLiteral("fixed order")));
    QCOMPARE(f.undo().count(), 4);
    f.undo().undo();
    QVERIFY(!f.find<QCheckBox>("dataDropLast")->isChecked());
    f.undo().undo();
    QVERIFY(f.find<QCheckBox>("dataShuffle")->isChecked());
    f.undo().undo();
    QCOMPARE(f.find<QSpinBox>("dataWorkers")->value(), 2);

    // The validation fraction changes the split: a new preview with the new sizes.
    f.find<QDoubleSpinBox>("dataValidationFraction")->setValue(0.2);
    QCOMPARE(f.data().validation_fraction, 0.2);
    QVERIFY(f.page->previewPending());
    QVERIFY2(f.page->waitForPreview(kPreviewTimeoutMs), qPrintable(f.page->previewError()));
    QCOMPARE(barTotal(f.bars()), 48000.0);
    QVERIFY(plain(f.find<QLabel>("dataSummary")).contains(QStringLiteral("12,000 validation")));
    f.undo().undo();
    QCOMPARE(f.find<QDoubleSpinBox>("dataValidationFraction")->value(), 0.1);
    QVERIFY(f.page->waitForPreview(kPreviewTimeoutMs));
    QCOMPARE(barTotal(f.bars()), 54000.0);
}

void TestDataPage::missingCsvShowsErrorInPlace() {
    if (!haveFashionMnist()) QSKIP("Fashion-MNIST (dataset-fashion-mnist) is not installed");
    Fixture f("fashion_cnn");
    QVERIFY(f.page->waitForPreview(kPreviewTimeoutMs));
    auto* source = f.find<QComboBox>("dataSource");

    // Switching the kind starts from the new kind's defaults.
    source->setCurrentIndex(source->findText(QStringLiteral("csv")));
    QCOMPARE(f.data().source.kind, std::string("csv"));
    QCOMPARE(f.data().source.options.get_string("path"), std::string());
    QVERIFY(f.data().source.options.get_bool("header"));
    QVERIFY(f.page->sourceOptionEditor("directory") == nullptr);
    auto* path = qobject_cast<QLineEdit*>(f.page->sourceOptionEditor("path"));
    auto* target = qobject_cast<QLineEdit*>(f.page->sourceOptionEditor("target_column"));
    QVERIFY(path != nullptr && target != nullptr);
    QVERIFY(f.find<QToolButton>("browse_path") != nullptr);

    target->setText(QStringLiteral("label"));
    emit target->editingFinished();
    path->setText(QStringLiteral("no_such_table.csv"));
    emit path->editingFinished();
    QCOMPARE(f.data().source.options.get_string("path"), std::string("no_such_table.csv"));
    QCOMPARE(f.undo().count(), 3);

    QVERIFY(!f.page->waitForPreview(kPreviewTimeoutMs));
    QVERIFY(!f.page->previewPending());
    auto* error = f.find<QLabel>("dataError");
    QVERIFY(error->isVisible());
    QVERIFY2(error->text().contains(QStringLiteral("no_such_table.csv")),
             qPrintable(error->text()));
    QCOMPARE(f.page->previewError(), error->text());
    QCOMPARE(f.page->previewImageCount(), 0);
    QCOMPARE(f.find<QCustomPlot>("dataClassChart")->plottableCount(), 0);
    // The rest of the page stays usable.
    QVERIFY(source->isEnabled());
    QVERIFY(path->isEnabled());
    QVERIFY(f.find<QSpinBox>("dataBatchSize")->isEnabled());

    saveScreenshot(*f.page, QStringLiteral("data_page_error.png"));

    // Undo back to Fashion-MNIST: the next preview clears the error.
    f.undo().undo();
    f.undo().undo();
    f.undo().undo();
    QCOMPARE(f.data().source.kind, std::string("fashion-mnist"));
    QCOMPARE(source->currentText(), QStringLiteral("fashion-mnist"));
    QVERIFY(f.page->waitForPreview(kPreviewTimeoutMs));
    QVERIFY(!error->isVisible());
    QVERIFY(f.page->previewError().isEmpty());
    QCOMPARE(barTotal(f.bars()), 54000.0);
}

void TestDataPage::transformsAddMoveRemoveUndo() {
    if (!haveFashionMnist()) QSKIP("Fashion-MNIST (dataset-fashion-mnist) is not installed");
    Fixture f("fashion_cnn");
    auto* list = f.find<QListWidget>("dataTransforms");
    auto kinds = [&] {
        QStringList out;
        for (const auto& t : f.data().transforms)
            out << QString::fromStdString(t.kind);
        return out;
    };
    QCOMPARE(kinds(), QStringList{"ScaleTo01"});

    auto* add = f.page->findChild<QAction*>(QStringLiteral("addTransform_RandomHorizontalFlip"));
    QVERIFY(add != nullptr);
    add->trigger();
    QCOMPARE(kinds(), (QStringList{"ScaleTo01", "RandomHorizontalFlip"}));
    QCOMPARE(list->count(), 2);
    QCOMPARE(f.page->selectedTransform(), 1);
    QCOMPARE(list->currentRow(), 1);
    QCOMPARE(f.undo().undoText(), QStringLiteral("Add transform RandomHorizontalFlip"));

    // The selected transform's options.
    auto* p = qobject_cast<QDoubleSpinBox*>(f.page->transformOptionEditor("p"));
    QVERIFY(p != nullptr);
    QCOMPARE(p->value(), 0.5);
    p->setValue(0.25);
    QCOMPARE(f.data().transforms[1].options.get_float("p"), 0.25);
    QVERIFY(list->item(1)->text().contains(QStringLiteral("p 0.25")));

    // Move it first, then remove it.
    f.find<QPushButton>("dataMoveTransformUp")->click();
    QCOMPARE(kinds(), (QStringList{"RandomHorizontalFlip", "ScaleTo01"}));
    QCOMPARE(f.page->selectedTransform(), 0);
    f.find<QPushButton>("dataRemoveTransform")->click();
    QCOMPARE(kinds(), QStringList{"ScaleTo01"});
    QCOMPARE(list->count(), 1);
    QCOMPARE(f.undo().count(), 4);

    // Undo all of it, step by step, and redo.
    f.undo().undo();
    QCOMPARE(kinds(), (QStringList{"RandomHorizontalFlip", "ScaleTo01"}));
    QCOMPARE(list->count(), 2);
    f.undo().undo();
    QCOMPARE(kinds(), (QStringList{"ScaleTo01", "RandomHorizontalFlip"}));
    f.undo().undo();
    QCOMPARE(f.data().transforms[1].options.get_float("p"), 0.5);
    f.undo().undo();
    QCOMPARE(kinds(), QStringList{"ScaleTo01"});
    QCOMPARE(list->count(), 1);
    f.undo().redo();
    QCOMPARE(kinds(), (QStringList{"ScaleTo01", "RandomHorizontalFlip"}));
    QCOMPARE(list->count(), 2);

    // With the flip the preview still loads.
    QVERIFY2(f.page->waitForPreview(kPreviewTimeoutMs), qPrintable(f.page->previewError()));
    QCOMPARE(f.page->previewImageCount(), 24);

    // Normalize without values computes them from the training split: the examples the
    // preview shows are centred, so some values are negative.
    f.page->findChild<QAction*>(QStringLiteral("addTransform_Normalize"))->trigger();
    QVERIFY(qobject_cast<QLineEdit*>(f.page->transformOptionEditor("mean")) != nullptr);
    QVERIFY2(f.page->waitForPreview(kPreviewTimeoutMs), qPrintable(f.page->previewError()));
    const QString summary = plain(f.find<QLabel>("dataSummary"));
    QVERIFY2(summary.contains(QStringLiteral("values -")), qPrintable(summary));
    QCOMPARE(f.page->previewImageCount(), 24);
}

// File > New from an example gives an untitled project whose relative data paths still point at
// the example's folder (the CSV beside it), for the preview as for training.
void TestDataPage::untitledCopyReadsDataBesideTheExample() {
    const QString example = examplePath("tabular_regression");
    const QString folder = QFileInfo(example).absolutePath();
    ProjectDocument doc;
    doc.open(myelin::io::load_project(example.toStdString()), QString(), false, folder);
    QVERIFY(doc.filePath().isEmpty());
    QCOMPARE(doc.dataDirectory(), folder);
    QVERIFY(QDir::currentPath() != folder); // the test would prove nothing from there
    DataPage page(&doc);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    QVERIFY2(page.waitForPreview(kPreviewTimeoutMs), qPrintable(page.previewError()));
    QVERIFY(page.previewError().isEmpty());
    // Without a folder the untitled project reads from the current directory, where the CSV
    // is not.
    doc.open(myelin::io::load_project(example.toStdString()), QString());
    QCOMPARE(doc.dataDirectory(), QDir::currentPath());
    QVERIFY(!page.waitForPreview(kPreviewTimeoutMs));
    QVERIFY(!page.previewError().isEmpty());
}

void TestDataPage::tabularRegressionPreview() {
    Fixture f("tabular_regression");
    QVERIFY(QTest::qWaitForWindowExposed(f.page.get()));
    QVERIFY2(f.page->waitForPreview(kPreviewTimeoutMs), qPrintable(f.page->previewError()));

    // 1,000 rows: 20% test, then 15% of the rest for validation.
    const QString summary = plain(f.find<QLabel>("dataSummary"));
    for (const char* part :
         {"680 training", "120 validation", "200 test", "[6]", "regression of price"})
        QVERIFY2(summary.contains(QString::fromUtf8(part)), qPrintable(summary));

    // A table of rows (features by name, the target last) instead of pictures.
    QCOMPARE(f.page->previewImageCount(), 0);
    auto* table = f.find<QTableWidget>("dataPreviewTable");
    QVERIFY(table->isVisible());
    QCOMPARE(table->rowCount(), 24);
    QCOMPARE(table->columnCount(), 7);
    QCOMPARE(table->horizontalHeaderItem(0)->text(), QStringLiteral("area"));
    QCOMPARE(table->horizontalHeaderItem(6)->text(), QStringLiteral("price"));
    bool ok = false;
    table->item(0, 6)->text().toDouble(&ok);
    QVERIFY(ok);

    // The target's distribution instead of class bars, with min / mean / max.
    auto* stats = f.find<QLabel>("dataTargetStats");
    QVERIFY(stats->isVisible());
    const QString statsText = plain(stats);
    QVERIFY2(statsText.contains(QStringLiteral("min")) &&
                 statsText.contains(QStringLiteral("mean")) &&
                 statsText.contains(QStringLiteral("max")),
             qPrintable(statsText));
    QCPBars* bars = f.bars();
    QVERIFY(bars != nullptr);
    QCOMPARE(barTotal(bars), 680.0);
    QVERIFY(f.find<QCustomPlot>("dataClassChart")
                ->xAxis->ticker()
                .dynamicCast<QCPAxisTickerText>()
                .isNull());
    QVERIFY(f.page->sourceOptionEditor("path") != nullptr);

    saveScreenshot(*f.page, QStringLiteral("data_page_tabular.png"));
}

void TestDataPage::closedDocumentDisablesPage() {
    ProjectDocument doc;
    DataPage page(&doc);
    page.resize(1280, 800);
    page.show();
    QVERIFY(!page.previewPending());
    QVERIFY(!page.findChild<QComboBox*>(QStringLiteral("dataSource"))->isEnabled());
    QVERIFY(!page.findChild<QSpinBox*>(QStringLiteral("dataBatchSize"))->isEnabled());

    const QString path = examplePath("tabular_regression");
    doc.open(myelin::io::load_project(path.toStdString()), path);
    QVERIFY(page.findChild<QComboBox*>(QStringLiteral("dataSource"))->isEnabled());
    QCOMPARE(page.findChild<QComboBox*>(QStringLiteral("dataSource"))->currentText(),
             QStringLiteral("csv"));
    QVERIFY(page.waitForPreview(kPreviewTimeoutMs));

    doc.close();
    QVERIFY(!page.findChild<QComboBox*>(QStringLiteral("dataSource"))->isEnabled());
    QVERIFY(!page.previewPending());
    QCOMPARE(page.findChild<QCustomPlot*>(QStringLiteral("dataClassChart"))->plottableCount(), 0);
}

void TestDataPage::hiddenPageLoadsWhenShown() {
    Fixture f("tabular_regression", /*show=*/false);
    // A page in a hidden tab waits for its turn instead of loading on every edit.
    QVERIFY(f.page->previewPending());
    QVERIFY(!f.page->waitForPreview(300));
    QSignalSpy finished(f.page.get(), &DataPage::previewFinished);
    f.page->show();
    QVERIFY(finished.wait(kPreviewTimeoutMs));
    QCOMPARE(finished.takeFirst().at(0).toBool(), true);
    QCOMPARE(f.find<QTableWidget>("dataPreviewTable")->rowCount(), 24);
}

void TestDataPage::staleResultsAreDropped() {
    Fixture f("tabular_regression");
    QVERIFY(f.page->waitForPreview(kPreviewTimeoutMs));
    QSignalSpy finished(f.page.get(), &DataPage::previewFinished);

    // Start a preview of one split, change the spec while it loads: only the latest is shown.
    f.find<QDoubleSpinBox>("dataValidationFraction")->setValue(0.5);
    f.page->refreshPreview();
    f.find<QDoubleSpinBox>("dataValidationFraction")->setValue(0.25);
    QVERIFY(f.page->waitForPreview(kPreviewTimeoutMs));
    QCOMPARE(finished.count(), 1);
    QVERIFY2(plain(f.find<QLabel>("dataSummary")).contains(QStringLiteral("600 training")),
             qPrintable(plain(f.find<QLabel>("dataSummary"))));
    QCOMPARE(barTotal(f.bars()), 600.0);

    // The split is seeded with the training seed: a new seed previews again.
    myelin::spec::TrainSpec train = f.doc.project().train;
    train.seed += 1;
    f.doc.applyTrainEdit(train, QStringLiteral("Change seed"));
    QVERIFY(f.page->previewPending());
    QVERIFY(f.page->waitForPreview(kPreviewTimeoutMs));
    QVERIFY(f.find<QLabel>("dataLoaderFacts")
                ->text()
                .contains(QStringLiteral("split seed %1").arg(train.seed)));
}

void TestDataPage::destroyedWhileLoading() {
    if (!haveFashionMnist()) QSKIP("Fashion-MNIST (dataset-fashion-mnist) is not installed");
    Fixture f("fashion_cnn");
    f.page->refreshPreview();
    QVERIFY(f.page->previewPending());
    f.page.reset(); // the loading task goes on with its own copies; its result must go nowhere
    QTest::qWait(50);
    QVERIFY(f.doc.isOpen());
}

QTEST_MAIN(TestDataPage)
#include "test_data_page.moc"
