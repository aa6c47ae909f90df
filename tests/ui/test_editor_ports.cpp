// Layers with several output ports in the editor: the LSTM card has one output port per output
// (output, h_n, c_n) with its name and shape; dragging from h_n makes an edge with from_port 1
// (undo removes it); copy/paste and insert-on-edge keep from_port; the inspector and the problems
// panel name the ports; screenshot editor_lstm_ports.
#include "document/model_edits.h"
#include "document/project_document.h"
#include "editor/edge_item.h"
#include "editor/graph_scene.h"
#include "editor/graph_view.h"
#include "editor/model_editor.h"
#include "editor/node_item.h"
#include "shell/main_window.h"
#include "ui_test_support.h"
#include "widgets/theme.h"

#include <myelin/graph/analysis.h>

#include <QApplication>
#include <QLabel>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QUndoStack>
#include <QtTest>

#include <algorithm>

using myelin::graph::Edge;
using myelin::graph::ModelSpec;
using myelin::graph::NodeId;
using myelin::test::examplePath;
using myelin::test::nodeOfKind;

namespace {

bool hasEdge(const ModelSpec& spec, const Edge& edge) {
    return std::find(spec.edges.begin(), spec.edges.end(), edge) != spec.edges.end();
}

} // namespace

class TestEditorPorts : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase() {
        myelin::test::isolateStudioSettings(home_);
        myelin::ui::applyStudioTheme(*qApp);
    }

    void dragFromTheStatePort() {
        myelin::ui::MainWindow window;
        window.resize(1400, 900);
        window.show();
        QVERIFY(window.openProject(examplePath("word_language_lstm")));
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        auto& doc = *window.document();
        auto& scene = *window.editor()->scene();
        auto& view = *window.editor()->view();
        const NodeId lstm = nodeOfKind(doc.spec(), "LSTM");
        const NodeId linear = nodeOfKind(doc.spec(), "Linear");
        QVERIFY(lstm >= 0 && linear >= 0);

        // One port per output, named, each with its shape.
        myelin::ui::NodeItem* card = scene.nodeItem(lstm);
        QCOMPARE(card->outputCount(), 3);
        QCOMPARE(card->outputName(1), QStringLiteral("h_n"));
        QCOMPARE(card->outputName(2), QStringLiteral("c_n"));
        QCOMPARE(card->outputShape(0), QStringLiteral("[N, 128]")); // output "last"
        QCOMPARE(card->outputShape(1), QStringLiteral("[N, 128]"));
        QCOMPARE(scene.nodeItem(linear)->outputCount(), 1);
        const QPointF p0 = card->portScenePos({true, 0}), p1 = card->portScenePos({true, 1});
        QVERIFY(p1.x() > p0.x() + 20);
        QCOMPARE(p1.y(), p0.y());

        // Free the Linear's input, then drag from h_n (port 1) to it.
        ModelSpec spec = doc.spec();
        spec.disconnect(lstm, linear, 0);
        doc.applyEdit(spec, QStringLiteral("Disconnect"));
        const QPointF start = card->portScenePos({true, 1});
        const QPointF end = scene.nodeItem(linear)->portScenePos({false, 0});
        view.centerOn((start + end) / 2);
        QApplication::processEvents();
        QWidget* viewport = view.viewport();
        // Hovering the port says its name and shape.
        QTest::mouseMove(viewport, view.mapFromScene(start));
        QApplication::processEvents();
        QVERIFY2(card->toolTip().contains(QStringLiteral("h_n [N, 128]")),
                 qPrintable(card->toolTip()));
        QTest::mousePress(viewport, Qt::LeftButton, Qt::NoModifier, view.mapFromScene(start));
        QTest::mouseMove(viewport, view.mapFromScene((start * 2 + end) / 3));
        QTest::mouseMove(viewport, view.mapFromScene((start + end * 2) / 3));
        QTest::mouseMove(viewport, view.mapFromScene(end));
        QTest::mouseRelease(viewport, Qt::LeftButton, Qt::NoModifier, view.mapFromScene(end));
        const Edge fromState{lstm, linear, 0, 1};
        QVERIFY(hasEdge(doc.spec(), fromState));
        QVERIFY(myelin::graph::analyze(doc.spec()).ok());
        QVERIFY2(doc.undoStack()->undoText().contains(QStringLiteral("(h_n)")),
                 qPrintable(doc.undoStack()->undoText()));
        QVERIFY(scene.edgeItem(fromState) != nullptr);
        QCOMPARE(scene.edgeItem(fromState)->label(), QStringLiteral("[N, 128]"));
        doc.undoStack()->undo();
        QVERIFY(!hasEdge(doc.spec(), fromState));
        QVERIFY(scene.edgeItem(fromState) == nullptr);
        doc.undoStack()->redo();
        QVERIFY(hasEdge(doc.spec(), fromState));

        // The inspector's shape section lists every port.
        scene.selectNodes({lstm});
        QApplication::processEvents();
        auto* outputs = window.findChild<QLabel*>(QStringLiteral("inspectorOutput"));
        QVERIFY(outputs != nullptr);
        QVERIFY2(outputs->text().contains(QStringLiteral("h_n <tt>[N, 128]</tt>")) &&
                     outputs->text().contains(QStringLiteral("c_n <tt>[N, 128]</tt>")),
                 qPrintable(outputs->text()));

        // Copy and paste (through the clipboard's JSON) keep the port; so does undo of the paste.
        scene.selectNodes({lstm, linear});
        window.editor()->copy();
        window.editor()->paste();
        const auto pasted = scene.selectedNodeIds();
        QCOMPARE(pasted.size(), size_t(2));
        const NodeId pastedLstm = doc.spec().node(pasted[0]).kind == "LSTM" ? pasted[0] : pasted[1];
        const NodeId pastedLinear = pastedLstm == pasted[0] ? pasted[1] : pasted[0];
        QVERIFY(hasEdge(doc.spec(), Edge{pastedLstm, pastedLinear, 0, 1}));
        doc.undoStack()->undo();
        QVERIFY(doc.spec().find(pastedLstm) == nullptr);
        QVERIFY(hasEdge(doc.spec(), fromState));
        // Inserting a layer on the edge keeps the port on the edge into the new layer.
        ModelSpec inserted = doc.spec();
        const NodeId dropout = myelin::ui::insertOnEdge(inserted, fromState, "Dropout");
        QVERIFY(hasEdge(inserted, Edge{lstm, dropout, 0, 1}));
        QVERIFY(myelin::graph::analyze(inserted).ok());
        // A port the LSTM does not have is refused when connecting.
        QVERIFY(myelin::ui::connectionRefusal(inserted, lstm, dropout, 0, 3)
                    .contains(QStringLiteral("has no output 3")));

        // The problems panel names an output port the source lacks.
        ModelSpec broken = doc.spec();
        for (Edge& e : broken.edges)
            if (e == fromState) e.from_port = 5;
        doc.applyEdit(broken, QStringLiteral("Break"));
        auto* problems = window.findChild<QTreeWidget*>(QStringLiteral("problemsList"));
        QVERIFY(problems != nullptr);
        bool named = false;
        for (int i = 0; i < problems->topLevelItemCount(); ++i) {
            const QTreeWidgetItem* row = problems->topLevelItem(i);
            if (row->text(0).endsWith(QStringLiteral(", output 5")) &&
                row->text(1).contains(QStringLiteral("no such output port")))
                named = true;
        }
        QVERIFY(named);
        QVERIFY(scene.nodeItem(lstm)->shownProblem().startsWith(QStringLiteral("output 5: ")));
    }

    // Every port in use, each with its own shape: the sequence output pooled into one head,
    // h_n into another, their sum the logits.
    void screenshotOfAllPorts() {
        myelin::ui::MainWindow window;
        window.resize(1400, 1150);
        window.show();
        QVERIFY(window.openProject(examplePath("word_language_lstm")));
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        auto& doc = *window.document();
        ModelSpec spec = doc.spec();
        const NodeId lstm = nodeOfKind(spec, "LSTM");
        const NodeId linear = nodeOfKind(spec, "Linear");
        const NodeId output = nodeOfKind(spec, "Output");
        spec.node(lstm).name = "lstm";
        spec.node(lstm).attrs.set("output", std::string("sequence"));
        spec.node(lstm).attrs.set("num_layers", int64_t(2));
        spec.node(linear).name = "from_states";
        spec.node(linear).attrs.set("in_features", int64_t(256));
        spec.disconnect(lstm, linear, 0);
        spec.disconnect(linear, output, 0);
        spec.connect(lstm, linear, 0, 1); // h_n
        const NodeId pool = spec.add_node("SequenceMeanPool", "pool");
        const NodeId head =
            spec.add_node("Linear", "from_sequence",
                          {{"in_features", int64_t(128)}, {"out_features", int64_t(8)}});
        const NodeId sum = spec.add_node("Add", "logits");
        spec.connect(lstm, pool, 0);
        spec.connect(pool, head);
        spec.connect(linear, sum, 0);
        spec.connect(head, sum, 1);
        spec.connect(sum, output);
        myelin::ui::arrangeLayers(spec);
        doc.applyEdit(spec, QStringLiteral("Two heads"));
        const auto analysis = myelin::graph::analyze(doc.spec());
        QVERIFY(analysis.ok());
        QVERIFY(analysis.problems.empty()); // c_n unused: no warning

        auto& scene = *window.editor()->scene();
        myelin::ui::NodeItem* card = scene.nodeItem(lstm);
        QCOMPARE(card->outputShape(0), QStringLiteral("[N, 24, 128]"));
        QCOMPARE(card->outputShape(1), QStringLiteral("[N, 256]"));
        QCOMPARE(card->outputShape(2), QStringLiteral("[N, 256]"));
        // The layout puts the consumer of port 0 left of the consumer of h_n (no crossing).
        QVERIFY(doc.spec().node(pool).x < doc.spec().node(linear).x);
        scene.selectNodes({lstm});
        window.editor()->view()->showModel();
        QApplication::processEvents();
        myelin::test::saveScreenshot(window, QStringLiteral("editor_lstm_ports.png"));
    }

  private:
    QTemporaryDir home_;
};

QTEST_MAIN(TestEditorPorts)
#include "test_editor_ports.moc"
