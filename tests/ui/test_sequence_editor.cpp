// The sequence layer kinds in the editor: the LSTM example opens without problems, the LSTM card
// has its two ports (input, lengths), and its screenshot.
#include "document/project_document.h"
#include "editor/graph_scene.h"
#include "editor/graph_view.h"
#include "editor/model_editor.h"
#include "editor/node_item.h"
#include "shell/main_window.h"
#include "ui_test_support.h"
#include "widgets/theme.h"

#include <myelin/graph/analysis.h>

#include <QApplication>
#include <QTemporaryDir>
#include <QtTest>

using myelin::graph::ModelSpec;
using myelin::graph::NodeId;
using myelin::test::examplePath;
using myelin::test::nodeOfKind;

class TestSequenceEditor : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase() {
        myelin::test::isolateStudioSettings(home_);
        myelin::ui::applyStudioTheme(*qApp);
    }

    void lstmExampleOpensCleanly() {
        myelin::ui::MainWindow window;
        window.resize(1400, 900);
        window.show();
        QVERIFY(window.openProject(examplePath("word_language_lstm")));
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        const ModelSpec& spec = window.document()->spec();
        QVERIFY(myelin::graph::analyze(spec).ok());
        auto& scene = *window.editor()->scene();
        const NodeId lstm = nodeOfKind(spec, "LSTM");
        const NodeId lengths = nodeOfKind(spec, "PaddingLengths");
        QVERIFY(lstm >= 0 && lengths >= 0);
        QCOMPARE(scene.nodeItem(lstm)->inputCount(), 2);
        QCOMPARE(scene.nodeItem(lengths)->inputCount(), 1);
        for (const auto& n : spec.nodes)
            QVERIFY2(!scene.nodeItem(n.id)->hasError(), n.kind.c_str());

        scene.selectNodes({lstm});
        QApplication::processEvents();
        window.editor()->view()->showModel();
        myelin::test::saveScreenshot(window, QStringLiteral("editor_lstm.png"));
    }

  private:
    QTemporaryDir home_;
};

QTEST_MAIN(TestSequenceEditor)
#include "test_sequence_editor.moc"
