// The Training page's class weights driven offscreen: a CrossEntropyLoss on a small synthetic
// CSV with known class counts shows a Class | Examples | Weight table, a typed weight
// is one undoable edit, a negative one is refused with the reason, Balance classes fills
// n_samples / (n_classes * count) for each class, and the weights survive save -> reload. The
// screenshot training_class_weights shows the table after Balance classes.
#include "document/project_document.h"
#include "pages/class_weights_editor.h"
#include "pages/training_page.h"
#include "ui_test_support.h"
#include "widgets/theme.h"

#include <myelin/io/project.h>

#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QTableWidget>
#include <QUndoStack>
#include <QtTest>

#include <fstream>
#include <random>

using namespace myelin;
using myelin::ui::ClassWeightsEditor;
using myelin::ui::ProjectDocument;
using myelin::ui::TrainingPage;

namespace {

const char* const kClasses[3] = {"normal", "warning", "failure"};

// 12 normal, 6 warning and 2 failure rows of 4 features.
void writeCsv(const std::string& path) {
    std::mt19937 rng(5);
    std::normal_distribution<double> noise(0.0, 0.5);
    std::ofstream out(path);
    out << "x0,x1,x2,x3,state\n";
    const int counts[3] = {12, 6, 2};
    for (int c = 0; c < 3; ++c)
        for (int i = 0; i < counts[c]; ++i) {
            for (int d = 0; d < 4; ++d)
                out << (d == c ? 2.0 : 0.0) + noise(rng) << ",";
            out << kClasses[c] << "\n";
        }
}

io::Project project() {
    io::Project p;
    p.name = "machine states";
    auto& m = p.model;
    auto in = m.add_node("Input", "", {{"shape", std::vector<int64_t>{4}}});
    auto fc =
        m.add_node("Linear", "fc", {{"in_features", int64_t(4)}, {"out_features", int64_t(3)}});
    auto out = m.add_node("Output");
    m.connect(in, fc);
    m.connect(fc, out);
    p.data.source = {"csv",
                     {{"path", std::string("states.csv")},
                      {"target_column", std::string("state")},
                      {"task", std::string("classification")},
                      {"test_fraction", 0.0}}};
    p.data.validation_fraction = 0; // every row trains: the counts are the file's
    p.data.num_workers = 0;
    p.train.loss = {"CrossEntropyLoss", {}};
    return p;
}

graph::NumberTable named(std::vector<std::pair<std::string, double>> entries) {
    graph::NumberTable t;
    t.by_name = std::move(entries);
    return t;
}

const graph::NumberTable& weightOf(const ProjectDocument& doc) {
    return doc.project().train.loss.options.get_table("weight");
}

} // namespace

class TestClassWeights : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase();
    void editBalanceSaveReload();

  private:
    QTemporaryDir home_;
};

void TestClassWeights::initTestCase() {
    test::isolateStudioSettings(home_);
    ui::applyStudioTheme(*qApp);
}

void TestClassWeights::editBalanceSaveReload() {
    QTemporaryDir dir;
    writeCsv(dir.filePath("states.csv").toStdString());
    const QString path = dir.filePath("states.myelin");
    io::save_project(project(), path.toStdString());

    ProjectDocument doc;
    doc.open(io::load_project(path.toStdString()), path);
    TrainingPage page(&doc);
    page.resize(1280, 800);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    ClassWeightsEditor* editor = page.classWeightsEditor();
    QVERIFY(editor != nullptr);
    // One table, in the loss's options (not the optimizer's).
    QCOMPARE(page.findChildren<ClassWeightsEditor*>().size(), qsizetype(1));
    QVERIFY(page.findChild<QWidget*>(QStringLiteral("lossOptions"))->isAncestorOf(editor));
    QTRY_VERIFY_WITH_TIMEOUT(page.classCounts()->known(), 20000);
    QTableWidget* table = editor->tableWidget();
    // The CSV's classes in the data's order (sorted names), with their training counts.
    QCOMPARE(table->rowCount(), 3);
    const char* const order[3] = {"failure", "normal", "warning"};
    const char* const counts[3] = {"2", "12", "6"};
    for (int r = 0; r < 3; ++r) {
        QCOMPARE(table->item(r, 0)->text(), QString::fromLatin1(order[r]));
        QCOMPARE(table->item(r, 1)->text(), QString::fromLatin1(counts[r]));
        QCOMPARE(table->item(r, 2)->text(), QStringLiteral("1"));
    }
    QVERIFY(weightOf(doc).empty());

    // A typed weight is one undoable edit of the project.
    const int undoBefore = doc.undoStack()->count();
    table->item(2, 2)->setText(QStringLiteral("2.5"));
    QVERIFY(weightOf(doc) == named({{"warning", 2.5}}));
    QCOMPARE(doc.undoStack()->count(), undoBefore + 1);
    QCOMPARE(editor->shownWeights(), (std::vector<double>{1.0, 1.0, 2.5}));
    doc.undoStack()->undo();
    QVERIFY(weightOf(doc).empty());
    QCOMPARE(page.classWeightsEditor()->shownWeights(), (std::vector<double>{1.0, 1.0, 1.0}));
    doc.undoStack()->redo();
    QVERIFY(weightOf(doc) == named({{"warning", 2.5}}));

    // A negative weight is refused with the reason; the project keeps its weights.
    editor = page.classWeightsEditor();
    editor->tableWidget()->item(1, 2)->setText(QStringLiteral("-1"));
    auto* status = editor->findChild<QLabel*>(QStringLiteral("classWeightsStatus"));
    QVERIFY(status != nullptr && status->isVisibleTo(editor));
    QVERIFY2(status->text().contains(QStringLiteral("normal must be a number >= 0")),
             qPrintable(status->text()));
    QVERIFY(weightOf(doc) == named({{"warning", 2.5}}));

    // Balance classes: n_samples / (n_classes * count) = 20 / (3 * count).
    auto* balance = editor->findChild<QPushButton*>(QStringLiteral("classWeightsBalance"));
    QVERIFY(balance != nullptr && balance->isEnabled());
    balance->click();
    const std::vector<double> balanced{20.0 / 6, 20.0 / 36, 20.0 / 18};
    QVERIFY(weightOf(doc) ==
            named({{"failure", balanced[0]}, {"normal", balanced[1]}, {"warning", balanced[2]}}));
    QCOMPARE(page.classWeightsEditor()->shownWeights(), balanced);
    QCOMPARE(page.classWeightsEditor()->tableWidget()->item(0, 2)->text(),
             QStringLiteral("3.33333"));

    // The screenshot: the loss section with the balanced table.
    page.findChild<QScrollArea*>(QStringLiteral("trainingSettingsScroll"))
        ->verticalScrollBar()
        ->setValue(0);
    QApplication::processEvents();
    test::saveScreenshot(page, QStringLiteral("training_class_weights.png"));

    // Save -> reload shows them.
    doc.saveAs(path);
    const io::Project reread = io::load_project(path.toStdString());
    QVERIFY(reread.train.loss.options.get_table("weight") == weightOf(doc));
    ProjectDocument doc2;
    doc2.open(reread, path);
    TrainingPage page2(&doc2);
    page2.resize(1280, 800);
    page2.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page2));
    QTRY_VERIFY_WITH_TIMEOUT(page2.classCounts()->known(), 20000);
    QCOMPARE(page2.classWeightsEditor()->shownWeights(), balanced);

    // Reset: no weights (PyTorch's None), one more undo step.
    page2.classWeightsEditor()
        ->findChild<QPushButton*>(QStringLiteral("classWeightsReset"))
        ->click();
    QVERIFY(weightOf(doc2).empty());
    QCOMPARE(page2.classWeightsEditor()->shownWeights(), (std::vector<double>{1.0, 1.0, 1.0}));

    // Losses without class weights have no table; NLLLoss has one.
    auto* kind = page2.findChild<QComboBox*>(QStringLiteral("lossKind"));
    kind->setCurrentIndex(kind->findData(QStringLiteral("MSELoss")));
    QVERIFY(page2.classWeightsEditor() == nullptr);
    kind->setCurrentIndex(kind->findData(QStringLiteral("NLLLoss")));
    QVERIFY(page2.classWeightsEditor() != nullptr);

    // BCEWithLogitsLoss: pos_weight and weight, one number per output, in a line each.
    kind->setCurrentIndex(kind->findData(QStringLiteral("BCEWithLogitsLoss")));
    QVERIFY(page2.classWeightsEditor() == nullptr);
    auto* posWeight = page2.findChild<QWidget*>(QStringLiteral("lossOptions"))
                          ->findChild<QLineEdit*>(QStringLiteral("attr_pos_weight"));
    QVERIFY(posWeight != nullptr);
    posWeight->setText(QStringLiteral("2, 0.5"));
    emit posWeight->editingFinished();
    graph::NumberTable listed;
    listed.by_position = {2.0, 0.5};
    QVERIFY(doc2.project().train.loss.options.get_table("pos_weight") == listed);
    doc2.undoStack()->undo();
    QVERIFY(doc2.project().train.loss.options.get_table("pos_weight").empty());
}

QTEST_MAIN(TestClassWeights)
#include "test_class_weights.moc"
