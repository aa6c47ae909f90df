// The visual model editor driven offscreen the way a person uses it: palette drops onto the
// canvas, port drags, inspector edits, context-menu quick-fixes, clipboard, undo/redo, and the
// project files; screenshots of the editor land in the artifacts folder.
#include "document/autosave.h"
#include "document/model_edits.h"
#include "document/project_document.h"
#include "editor/edge_item.h"
#include "editor/graph_scene.h"
#include "editor/graph_view.h"
#include "editor/layer_palette.h"
#include "editor/model_editor.h"
#include "editor/model_summary_panel.h"
#include "editor/node_inspector.h"
#include "editor/node_item.h"
#include "editor/problems_panel.h"
#include "shell/main_window.h"
#include "ui_test_support.h"
#include "widgets/theme.h"

#include <myelin/graph/analysis.h>
#include <myelin/io/project.h>

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QMessageBox>
#include <QMimeData>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QUndoStack>
#include <QtTest>

#include <algorithm>
#include <map>
#include <set>

using myelin::graph::Edge;
using myelin::graph::ModelSpec;
using myelin::graph::Node;
using myelin::graph::NodeId;
using myelin::ui::MainWindow;

using myelin::test::artifactsDir;
using myelin::test::examplePath;
using myelin::test::saveScreenshot;

namespace {

myelin::io::Project loadExample(const char* name) {
    return myelin::io::load_project(examplePath(name).toStdString());
}

// The window with the editor showing, at a size where the canvas is big enough to work in.
struct Studio {
    MainWindow window;
    Studio() {
        window.resize(1400, 900);
        window.show();
    }
    myelin::ui::ProjectDocument& doc() { return *window.document(); }
    myelin::ui::ModelEditor& editor() { return *window.editor(); }
    myelin::ui::GraphScene& scene() { return *window.editor()->scene(); }
    myelin::ui::GraphView& view() { return *window.editor()->view(); }
    const ModelSpec& spec() { return window.document()->spec(); }
    myelin::ui::NodeItem* item(NodeId id) { return scene().nodeItem(id); }
    QPoint toView(QPointF scenePos) { return view().mapFromScene(scenePos); }
};

// A palette drag dropped on the canvas at `scenePos`: the view receives enter, move and drop
// with the palette's mime data. Returns the new node's id.
NodeId dropKind(Studio& s, const QString& kind, QPointF scenePos) {
    s.view().centerOn(scenePos);
    const QPoint at = s.toView(scenePos);
    std::unique_ptr<QMimeData> mime(myelin::ui::LayerPalette::mimeDataForKind(kind));
    QDragEnterEvent enter(at, Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(s.view().viewport(), &enter);
    if (!enter.isAccepted()) return -1;
    QDragMoveEvent move(at, Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(s.view().viewport(), &move);
    QDropEvent drop(QPointF(at), Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(s.view().viewport(), &drop);
    if (!drop.isAccepted()) return -1;
    const auto selected = s.scene().selectedNodeIds();
    return selected.size() == 1 ? selected.front() : -1;
}

// Press on `from`'s output port, move across, release on input `port` of `to`.
void dragConnection(Studio& s, NodeId from, NodeId to, int port) {
    const QPointF start = s.item(from)->portScenePos({true, 0});
    // A node without inputs (Input) has no port to aim at: release on its card.
    const QPointF end = s.item(to)->inputCount() > 0 ? s.item(to)->portScenePos({false, port})
                                                     : s.item(to)->sceneBoundingRect().center();
    s.view().centerOn((start + end) / 2);
    QWidget* viewport = s.view().viewport();
    QTest::mousePress(viewport, Qt::LeftButton, Qt::NoModifier, s.toView(start));
    QTest::mouseMove(viewport, s.toView((start * 2 + end) / 3));
    QTest::mouseMove(viewport, s.toView((start + end * 2) / 3));
    QTest::mouseMove(viewport, s.toView(end));
    QTest::mouseRelease(viewport, Qt::LeftButton, Qt::NoModifier, s.toView(end));
}

// Sets an attribute through its inspector editor, as a person would.
void editAttribute(myelin::ui::NodeInspector& inspector, const myelin::graph::AttrDesc& desc,
                   const myelin::graph::AttrValue& value) {
    const QString name = QString::fromStdString(desc.name);
    QWidget* editor = inspector.attributeEditor(name);
    QVERIFY2(editor != nullptr, qPrintable(name));
    auto* none = inspector.findChild<QCheckBox*>(QStringLiteral("attrNone_") + name);
    if (std::holds_alternative<std::monostate>(value)) {
        QVERIFY(none != nullptr);
        none->setChecked(true);
        return;
    }
    if (none != nullptr && none->isChecked()) none->setChecked(false);
    if (auto* box = qobject_cast<QCheckBox*>(editor)) {
        box->setChecked(std::get<bool>(value));
    } else if (auto* spin = qobject_cast<QSpinBox*>(editor)) {
        QTest::keyClick(spin, Qt::Key_A, Qt::ControlModifier);
        QTest::keyClicks(spin, QString::number(std::get<int64_t>(value)));
        QTest::keyClick(spin, Qt::Key_Return);
    } else if (auto* dspin = qobject_cast<QDoubleSpinBox*>(editor)) {
        dspin->setValue(std::get<double>(value));
        emit dspin->editingFinished();
    } else if (auto* combo = qobject_cast<QComboBox*>(editor)) {
        combo->setCurrentText(QString::fromStdString(std::get<std::string>(value)));
    } else if (auto* edit = qobject_cast<QLineEdit*>(editor)) {
        QStringList parts;
        for (int64_t v : std::get<std::vector<int64_t>>(value))
            parts << QString::number(v);
        edit->clear();
        QTest::keyClicks(edit, parts.join(QStringLiteral(", ")));
        QTest::keyClick(edit, Qt::Key_Return);
    } else {
        QFAIL(qPrintable(QStringLiteral("no editor type for ") + name));
    }
}

void rename(myelin::ui::NodeInspector& inspector, const QString& name) {
    QLineEdit* edit = inspector.nameEditor();
    QVERIFY(edit != nullptr);
    edit->clear();
    QTest::keyClicks(edit, name);
    QTest::keyClick(edit, Qt::Key_Return);
}

// Equal in everything but ids and positions: kinds, names, attributes, training options, and
// the edges under the node correspondence given by model order.
void compareModels(const ModelSpec& actual, const ModelSpec& expected) {
    QCOMPARE(actual.nodes.size(), expected.nodes.size());
    std::map<NodeId, NodeId> toExpected;
    for (size_t i = 0; i < actual.nodes.size(); ++i) {
        const Node& a = actual.nodes[i];
        const Node& e = expected.nodes[i];
        QCOMPARE(QString::fromStdString(a.kind), QString::fromStdString(e.kind));
        QCOMPARE(QString::fromStdString(a.name), QString::fromStdString(e.name));
        QVERIFY2(a.attrs == e.attrs, qPrintable(QString::fromStdString(a.kind)));
        QCOMPARE(a.frozen, e.frozen);
        QCOMPARE(a.lr_multiplier, e.lr_multiplier);
        toExpected[a.id] = e.id;
    }
    std::set<std::tuple<NodeId, NodeId, int>> actualEdges, expectedEdges;
    for (const Edge& edge : actual.edges)
        actualEdges.insert({toExpected.at(edge.from), toExpected.at(edge.to), edge.to_port});
    for (const Edge& edge : expected.edges)
        expectedEdges.insert({edge.from, edge.to, edge.to_port});
    QVERIFY(actualEdges == expectedEdges);
}

NodeId findNode(const ModelSpec& spec, const std::string& kind, int occurrence = 0) {
    for (const Node& n : spec.nodes)
        if (n.kind == kind && occurrence-- == 0) return n.id;
    return -1;
}

NodeId findNamed(const ModelSpec& spec, const std::string& name) {
    for (const Node& n : spec.nodes)
        if (n.name == name) return n.id;
    return -1;
}

bool hasErrorOn(const myelin::graph::Analysis& analysis, NodeId id) {
    return std::any_of(analysis.problems.begin(), analysis.problems.end(), [id](const auto& p) {
        return p.node == id && p.severity == myelin::graph::Severity::Error;
    });
}

QAction* quickFixAction(Studio& s, NodeId id, QMenu*& menu) {
    menu = s.editor().createContextMenu(s.item(id)->sceneBoundingRect().center(), &s.window);
    for (QAction* action : menu->actions())
        if (action->objectName() == QLatin1String("quickFix")) return action;
    return nullptr;
}

} // namespace

class TestModelEditor : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase();
    void init();
    void buildFashionCnnThroughTheUi();
    void paletteFiltersAndDoubleClickAddsAfterSelection();
    void invalidConnectionsAreRefusedWithTheReason();
    void inspectorShowsInvalidInputWithoutCommitting();
    void flattenQuickFix();
    void inFeaturesQuickFix();
    void addChannelQuickFix();
    void copyPasteKeepsInternalEdges();
    void deleteDuplicateDisconnectInsertRename();
    void dragMovesMergeIntoOneCommand();
    void keyboardShortcutsOnTheCanvas();
    void arrangeLayersIsUndoable();
    void saveThenOpenGivesTheSameGraph();
    void malformedProjectKeepsTheCurrentOne();
    void exampleOpensAsAnUntitledCopy();
    void autosaveWritesARecoveryFile();
    void problemsAndSummaryPanels();
    void screenshots();
};

void TestModelEditor::initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("MyelinTest"));
    QCoreApplication::setApplicationName(QStringLiteral("test_model_editor"));
    QSettings().clear();
    myelin::ui::applyStudioTheme(*qApp);
    QVERIFY2(QFileInfo::exists(examplePath("fashion_cnn")), qPrintable(examplePath("fashion_cnn")));
    // File > New finds the gallery here also when the test runs outside ctest.
    qputenv("MYELIN_EXAMPLES_DIR", QFileInfo(examplePath("fashion_cnn")).absolutePath().toUtf8());
}

void TestModelEditor::init() {
    QDir(myelin::ui::Autosave::recoveryDirectory()).removeRecursively();
}

void TestModelEditor::buildFashionCnnThroughTheUi() {
    const ModelSpec expected = loadExample("fashion_cnn").model;
    Studio s;
    QVERIFY(s.window.newProject());
    QVERIFY(QTest::qWaitForWindowExposed(&s.window));
    QVERIFY(s.spec().nodes.empty());
    auto& inspector = *s.window.inspector();

    // Palette drops, one row per layer, then the attributes that differ from the defaults.
    std::map<NodeId, NodeId> built; // expected id -> built id
    double y = 0;
    for (const Node& node : expected.nodes) {
        const NodeId id = dropKind(s, QString::fromStdString(node.kind), QPointF(110, y + 20));
        QVERIFY2(id >= 0, node.kind.c_str());
        built[node.id] = id;
        y += 140;
        QCOMPARE(inspector.node(), id); // the drop selects the new node
        const myelin::graph::LayerKind& kind = myelin::graph::layer_kind(node.kind);
        for (const myelin::graph::AttrDesc& desc : kind.attrs) {
            const myelin::graph::AttrValue& want = node.attrs.at(desc.name);
            if (s.spec().node(id).attrs.at(desc.name) == want) continue;
            editAttribute(inspector, desc, want);
            QVERIFY2(s.spec().node(id).attrs.at(desc.name) == want, desc.name.c_str());
        }
        if (!node.name.empty()) rename(inspector, QString::fromStdString(node.name));
    }
    QCOMPARE(s.doc().undoStack()->text(0), QStringLiteral("Add Input"));

    // Port drags.
    for (const Edge& edge : expected.edges) {
        dragConnection(s, built[edge.from], built[edge.to], edge.to_port);
        QVERIFY2(std::count(s.spec().edges.begin(), s.spec().edges.end(),
                            Edge{built[edge.from], built[edge.to], edge.to_port}) == 1,
                 qPrintable(QStringLiteral("edge %1 -> %2").arg(edge.from).arg(edge.to)));
    }
    compareModels(s.spec(), expected);
    QVERIFY(s.doc().analysis().ok());
    QCOMPARE(s.doc().undoStack()->undoText(), QStringLiteral("Connect Linear #11 → Output #12"));
    QVERIFY(s.doc().isDirty());
    QVERIFY(s.window.windowTitle().endsWith(QLatin1Char('*')));

    // Readable undo texts for each kind of edit.
    QStringList texts;
    for (int i = 0; i < s.doc().undoStack()->count(); ++i)
        texts << s.doc().undoStack()->text(i);
    QVERIFY(texts.contains(QStringLiteral("Add Conv2d")));
    QVERIFY(texts.contains(QStringLiteral("Change out_channels of Conv2d #2 to 32")));
    QVERIFY(texts.contains(QStringLiteral("Change padding of Conv2d #2 to 1")));
    QVERIFY(texts.contains(QStringLiteral("Connect Input #1 → Conv2d #2")));
    auto* undo = s.window.findChild<QAction*>(QStringLiteral("actionUndo"));
    QCOMPARE(undo->text(), QStringLiteral("&Undo Connect Linear #11 → Output #12"));

    // Undo back to empty, redo forward to the same model.
    const ModelSpec complete = s.spec();
    while (s.doc().undoStack()->canUndo())
        undo->trigger();
    QVERIFY(s.spec().nodes.empty());
    QVERIFY(s.spec().edges.empty());
    QVERIFY(s.scene().nodesBoundingRect().isEmpty());
    QVERIFY(!s.doc().isDirty());
    auto* redo = s.window.findChild<QAction*>(QStringLiteral("actionRedo"));
    while (s.doc().undoStack()->canRedo())
        redo->trigger();
    QVERIFY(s.spec() == complete);
    QVERIFY(s.item(built[expected.nodes.back().id]) != nullptr);
}

void TestModelEditor::paletteFiltersAndDoubleClickAddsAfterSelection() {
    Studio s;
    auto& palette = *s.window.palette();
    const QStringList all = palette.visibleKinds();
    QCOMPARE(all.size(), qsizetype(myelin::graph::layer_kinds().size()));
    QCOMPARE(all.first(), QStringLiteral("Input"));
    palette.setFilter(QStringLiteral("conv"));
    QVERIFY(palette.visibleKinds().contains(QStringLiteral("Conv2d")));
    QVERIFY(palette.visibleKinds().contains(QStringLiteral("ConvTranspose2d")));
    QVERIFY(!palette.visibleKinds().contains(QStringLiteral("ReLU")));
    palette.setFilter(QStringLiteral("residual")); // matches Add's documentation
    QCOMPARE(palette.visibleKinds(), QStringList{QStringLiteral("Add")});
    palette.setFilter(QString());
    QCOMPARE(palette.visibleKinds(), all);

    s.window.document()->open(loadExample("fashion_mlp"), QString());
    const NodeId input = findNode(s.spec(), "Input");
    s.scene().selectNodes({input});
    // Double-click in the palette: a node after the selection, connected to it.
    QTreeWidget* tree = palette.tree();
    QTreeWidgetItem* relu =
        tree->findItems(QStringLiteral("Dropout"), Qt::MatchExactly | Qt::MatchRecursive).value(0);
    QVERIFY(relu != nullptr);
    emit tree->itemDoubleClicked(relu, 0);
    const NodeId added = s.scene().selectedNodeIds().at(0);
    QCOMPARE(QString::fromStdString(s.spec().node(added).kind), QStringLiteral("Dropout"));
    QVERIFY(std::count(s.spec().edges.begin(), s.spec().edges.end(), Edge{input, added, 0}) == 1);
    QCOMPARE(s.doc().undoStack()->undoText(), QStringLiteral("Add Dropout after Input #1"));
}

void TestModelEditor::invalidConnectionsAreRefusedWithTheReason() {
    Studio s;
    s.doc().open(loadExample("fashion_cnn"), QString());
    QVERIFY(QTest::qWaitForWindowExposed(&s.window));
    const ModelSpec before = s.spec();
    const int commands = s.doc().undoStack()->count();
    const NodeId input = findNode(s.spec(), "Input");
    const NodeId conv1 = findNode(s.spec(), "Conv2d", 0);
    const NodeId relu1 = findNode(s.spec(), "ReLU", 0);
    const NodeId conv2 = findNode(s.spec(), "Conv2d", 1);

    // Into an Input node.
    dragConnection(s, relu1, input, 0);
    QVERIFY2(s.scene().connectionFeedback().contains(QStringLiteral("Input node")),
             qPrintable(s.scene().connectionFeedback()));
    // Into a port that already has its connection.
    dragConnection(s, relu1, conv2, 0);
    QVERIFY2(s.scene().connectionFeedback().contains(QStringLiteral("already connected")),
             qPrintable(s.scene().connectionFeedback()));
    QVERIFY(s.spec() == before);
    QCOMPARE(s.doc().undoStack()->count(), commands);

    // A cycle: free conv1's input, then feed it from its own successor.
    s.doc().applyEdit(
        [&] {
            ModelSpec spec = s.spec();
            spec.disconnect(input, conv1, 0);
            return spec;
        }(),
        QStringLiteral("Disconnect"));
    const ModelSpec freed = s.spec();
    dragConnection(s, relu1, conv1, 0);
    QVERIFY2(s.scene().connectionFeedback().contains(QStringLiteral("cycle")),
             qPrintable(s.scene().connectionFeedback()));
    QVERIFY(s.spec() == freed);

    // From the Output: it has no output port; the reason is the same the scene would give.
    const NodeId output = findNode(s.spec(), "Output");
    QVERIFY(!s.item(output)->hasOutput());
    QVERIFY(myelin::ui::connectionRefusal(s.spec(), output, conv1, 0)
                .contains(QStringLiteral("no output")));

    // A valid one goes through.
    dragConnection(s, input, conv1, 0);
    QVERIFY(s.scene().connectionFeedback().isEmpty());
    QVERIFY(s.spec().edges.size() == before.edges.size());
}

void TestModelEditor::inspectorShowsInvalidInputWithoutCommitting() {
    Studio s;
    s.doc().open(loadExample("fashion_cnn"), QString());
    const NodeId conv1 = findNode(s.spec(), "Conv2d");
    s.scene().selectNodes({conv1});
    auto& inspector = *s.window.inspector();
    QCOMPARE(inspector.node(), conv1);
    auto* kernel =
        qobject_cast<QLineEdit*>(inspector.attributeEditor(QStringLiteral("kernel_size")));
    QVERIFY(kernel != nullptr);
    QCOMPARE(kernel->text(), QStringLiteral("3"));
    QCOMPARE(kernel->toolTip(),
             QString::fromStdString(myelin::graph::layer_kind("Conv2d").attr("kernel_size")->doc));
    const int commands = s.doc().undoStack()->count();

    kernel->setText(QStringLiteral("3, x"));
    QTest::keyClick(kernel, Qt::Key_Return);
    QVERIFY(!inspector.attributeError(QStringLiteral("kernel_size")).isEmpty());
    kernel->setText(QStringLiteral("0"));
    QTest::keyClick(kernel, Qt::Key_Return);
    QVERIFY2(
        inspector.attributeError(QStringLiteral("kernel_size")).contains(QStringLiteral(">= 1")),
        qPrintable(inspector.attributeError(QStringLiteral("kernel_size"))));
    kernel->setText(QStringLiteral("1, 2, 3"));
    QTest::keyClick(kernel, Qt::Key_Return);
    QVERIFY(!inspector.attributeError(QStringLiteral("kernel_size")).isEmpty());
    QCOMPARE(s.doc().undoStack()->count(), commands);

    kernel->setText(QStringLiteral("5"));
    QTest::keyClick(kernel, Qt::Key_Return);
    QVERIFY(inspector.attributeError(QStringLiteral("kernel_size")).isEmpty());
    QCOMPARE(s.doc().undoStack()->undoText(),
             QStringLiteral("Change kernel_size of Conv2d #2 to 5"));
    kernel->setText(QStringLiteral("3, 5"));
    QTest::keyClick(kernel, Qt::Key_Return);
    QVERIFY(s.spec().node(conv1).attrs.get_ints("kernel_size") == (std::vector<int64_t>{3, 5}));

    // A number outside a spin box's range is explained while typed and never committed.
    auto* outChannels =
        qobject_cast<QSpinBox*>(inspector.attributeEditor(QStringLiteral("out_channels")));
    QVERIFY(outChannels != nullptr);
    QCOMPARE(outChannels->minimum(), 1);
    const int before = s.doc().undoStack()->count();
    QTest::keyClick(outChannels, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClick(outChannels, Qt::Key_0);
    QVERIFY2(
        inspector.attributeError(QStringLiteral("out_channels")).contains(QStringLiteral(">= 1")),
        qPrintable(inspector.attributeError(QStringLiteral("out_channels"))));
    QTest::keyClick(outChannels, Qt::Key_Return);
    QCOMPARE(s.doc().undoStack()->count(), before);
    QCOMPARE(s.spec().node(conv1).attrs.get_int("out_channels"), int64_t(32));

    // Names: invalid and duplicate names are explained, not committed.
    auto* nameError = inspector.findChild<QLabel*>(QStringLiteral("inspectorNameError"));
    rename(inspector, QStringLiteral("1conv"));
    QVERIFY(nameError->isVisibleTo(&inspector));
    QVERIFY(s.spec().node(conv1).name.empty());
    rename(inspector, QStringLiteral("conv1"));
    QVERIFY(!nameError->isVisibleTo(&inspector));
    QCOMPARE(s.doc().undoStack()->undoText(), QStringLiteral("Rename Conv2d #2 to conv1"));

    // Training options.
    auto* frozen = inspector.findChild<QCheckBox*>(QStringLiteral("inspectorFrozen"));
    frozen->setChecked(true);
    QVERIFY(s.spec().node(conv1).frozen);
    QCOMPARE(s.doc().undoStack()->undoText(), QStringLiteral("Freeze conv1"));
    auto* lr = inspector.findChild<QDoubleSpinBox*>(QStringLiteral("inspectorLrMultiplier"));
    lr->setValue(0.1);
    QCOMPARE(s.spec().node(conv1).lr_multiplier, 0.1);

    // Enumerations and nullable values on another kind.
    const NodeId pool = findNode(s.spec(), "MaxPool2d");
    s.scene().selectNodes({pool});
    auto* strideNone = inspector.findChild<QCheckBox*>(QStringLiteral("attrNone_stride"));
    QVERIFY(strideNone != nullptr);
    QVERIFY(strideNone->isChecked());
    editAttribute(inspector, *myelin::graph::layer_kind("MaxPool2d").attr("stride"),
                  std::vector<int64_t>{2});
    QVERIFY(s.spec().node(pool).attrs.get_ints("stride") == std::vector<int64_t>{2});
    strideNone->setChecked(true);
    QVERIFY(s.spec().node(pool).attrs.is_none("stride"));
}

void TestModelEditor::flattenQuickFix() {
    Studio s;
    s.doc().open(loadExample("fashion_cnn"), QString());
    QVERIFY(QTest::qWaitForWindowExposed(&s.window));
    const NodeId pool2 = findNode(s.spec(), "MaxPool2d", 1);
    const NodeId flatten = findNode(s.spec(), "Flatten");
    const NodeId fc1 = findNode(s.spec(), "Linear", 0);
    s.scene().selectNodes({flatten});
    s.editor().deleteSelection();
    QCOMPARE(s.doc().undoStack()->undoText(), QStringLiteral("Delete Flatten #8"));
    dragConnection(s, pool2, fc1, 0);

    // The error is on the Linear, and only there; the card turns red with the message.
    QVERIFY(hasErrorOn(s.doc().analysis(), fc1));
    for (const Node& n : s.spec().nodes)
        if (n.id != fc1) QVERIFY2(!s.item(n.id)->hasError(), n.kind.c_str());
    QVERIFY(s.item(fc1)->hasError());
    QVERIFY2(s.item(fc1)->shownProblem().contains(QStringLiteral("Flatten")),
             qPrintable(s.item(fc1)->shownProblem()));
    QVERIFY(s.item(fc1)->toolTip().contains(QStringLiteral("[1, 64, 7, 7]")));

    QMenu* menu = nullptr;
    QAction* fix = quickFixAction(s, fc1, menu);
    QVERIFY(fix != nullptr);
    QCOMPARE(fix->text(), QStringLiteral("Insert Flatten before Linear #9"));
    fix->trigger();
    delete menu;
    QVERIFY(!hasErrorOn(s.doc().analysis(), fc1));
    QVERIFY(!s.item(fc1)->hasError());
    QVERIFY(s.doc().analysis().ok());
    QCOMPARE(s.doc().undoStack()->undoText(), QStringLiteral("Insert Flatten before Linear #9"));
    // One command: undo brings the error back.
    s.doc().undoStack()->undo();
    QVERIFY(s.item(fc1)->hasError());
}

void TestModelEditor::inFeaturesQuickFix() {
    Studio s;
    s.doc().open(loadExample("fashion_cnn"), QString());
    const NodeId fc1 = findNode(s.spec(), "Linear", 0);
    const NodeId conv2 = findNode(s.spec(), "Conv2d", 1);
    s.scene().selectNodes({fc1});
    editAttribute(*s.window.inspector(), *myelin::graph::layer_kind("Linear").attr("in_features"),
                  int64_t(100));
    QVERIFY(s.item(fc1)->hasError());
    QMenu* menu = nullptr;
    QAction* fix = quickFixAction(s, fc1, menu);
    QVERIFY(fix != nullptr);
    QCOMPARE(fix->text(), QStringLiteral("Set in_features of Linear #9 to 3136"));
    fix->trigger();
    delete menu;
    QVERIFY(s.doc().analysis().ok());

    // The same for a convolution's channels.
    s.scene().selectNodes({conv2});
    editAttribute(*s.window.inspector(), *myelin::graph::layer_kind("Conv2d").attr("in_channels"),
                  int64_t(7));
    QVERIFY(s.item(conv2)->hasError());
    fix = quickFixAction(s, conv2, menu);
    QVERIFY(fix != nullptr);
    QCOMPARE(fix->text(), QStringLiteral("Set in_channels of Conv2d #5 to 32"));
    fix->trigger();
    delete menu;
    QVERIFY(s.doc().analysis().ok());
}

void TestModelEditor::addChannelQuickFix() {
    Studio s;
    s.doc().open(loadExample("fashion_resnet"), QString());
    const NodeId pool = findNamed(s.spec(), "pool1");
    const NodeId add = findNamed(s.spec(), "block2_add");
    s.scene().selectNodes(
        {findNamed(s.spec(), "block2_proj"), findNamed(s.spec(), "block2_proj_bn")});
    s.editor().deleteSelection();
    QCOMPARE(s.doc().undoStack()->undoText(), QStringLiteral("Delete 2 nodes"));
    dragConnection(s, pool, add, 1);
    QVERIFY(hasErrorOn(s.doc().analysis(), add));
    QVERIFY(s.item(add)->hasError());

    QMenu* menu = nullptr;
    QAction* fix = quickFixAction(s, add, menu);
    QVERIFY(fix != nullptr);
    QCOMPARE(fix->text(),
             QStringLiteral("Insert a 1×1 Conv2d before block2_add (32 → 64 channels)"));
    fix->trigger();
    delete menu;
    QVERIFY(s.doc().analysis().ok());
    const NodeId proj = findNamed(s.spec(), "block2_add_proj");
    QVERIFY(proj >= 0);
    const auto& attrs = s.spec().node(proj).attrs;
    QCOMPARE(attrs.get_int("in_channels"), int64_t(32));
    QCOMPARE(attrs.get_int("out_channels"), int64_t(64));
    QVERIFY(attrs.get_ints("kernel_size") == std::vector<int64_t>{1});
    QVERIFY(!s.item(add)->hasError());
}

void TestModelEditor::copyPasteKeepsInternalEdges() {
    Studio s;
    s.doc().open(loadExample("fashion_resnet"), QString());
    const std::vector<NodeId> block = {findNamed(s.spec(), "block1_conv1"),
                                       findNamed(s.spec(), "block1_bn1"),
                                       findNamed(s.spec(), "block1_relu1")};
    s.scene().selectNodes(block);
    s.editor().copy();
    const QMimeData* clip = QGuiApplication::clipboard()->mimeData();
    QVERIFY(clip->hasFormat(myelin::ui::ModelEditor::kClipboardMimeType));
    const auto fragment = myelin::ui::ModelEditor::fragmentFromJson(
        clip->data(myelin::ui::ModelEditor::kClipboardMimeType));
    QVERIFY(fragment.has_value());
    QCOMPARE(fragment->nodes.size(), size_t(3));
    QCOMPARE(fragment->edges.size(), size_t(2)); // only the edges among the three
    // Another program's clipboard nesting a million levels deep is refused, not parsed.
    const QByteArray deep = QByteArray(1000000, '[') + QByteArray(1000000, ']');
    QVERIFY(!myelin::ui::ModelEditor::fragmentFromJson(deep).has_value());

    const size_t nodes = s.spec().nodes.size(), edges = s.spec().edges.size();
    s.window.findChild<QAction*>(QStringLiteral("actionPaste"))->trigger();
    QCOMPARE(s.doc().undoStack()->undoText(), QStringLiteral("Paste 3 nodes"));
    QCOMPARE(s.spec().nodes.size(), nodes + 3);
    QCOMPARE(s.spec().edges.size(), edges + 2);
    const std::vector<NodeId> pasted = s.scene().selectedNodeIds();
    QCOMPARE(pasted.size(), size_t(3));
    // Same kinds and attributes, fresh unique names, the two edges between the copies.
    QCOMPARE(s.spec().node(pasted[0]).name, std::string("block1_conv1_2"));
    QVERIFY(s.spec().node(pasted[0]).attrs == s.spec().node(block[0]).attrs);
    QVERIFY(std::count(s.spec().edges.begin(), s.spec().edges.end(),
                       Edge{pasted[0], pasted[1], 0}) == 1);
    QVERIFY(std::count(s.spec().edges.begin(), s.spec().edges.end(),
                       Edge{pasted[1], pasted[2], 0}) == 1);
    QCOMPARE(s.spec().inputs_of(pasted[0]).size(), size_t(0));
    QCOMPARE(s.spec().node(pasted[0]).x, s.spec().node(block[0]).x + 40);

    // Cut removes, paste brings them back with their edge.
    s.scene().selectNodes(pasted);
    s.window.findChild<QAction*>(QStringLiteral("actionCut"))->trigger();
    QCOMPARE(s.spec().nodes.size(), nodes);
    QCOMPARE(s.doc().undoStack()->undoText(), QStringLiteral("Cut 3 nodes"));
    s.editor().paste();
    QCOMPARE(s.spec().nodes.size(), nodes + 3);
    QCOMPARE(s.spec().edges.size(), edges + 2);
}

void TestModelEditor::deleteDuplicateDisconnectInsertRename() {
    Studio s;
    s.doc().open(loadExample("fashion_cnn"), QString());
    QVERIFY(QTest::qWaitForWindowExposed(&s.window));
    const NodeId conv1 = findNode(s.spec(), "Conv2d");
    const NodeId relu1 = findNode(s.spec(), "ReLU");
    const NodeId input = findNode(s.spec(), "Input");

    // Duplicate.
    s.scene().selectNodes({conv1});
    s.window.findChild<QAction*>(QStringLiteral("actionDuplicate"))->trigger();
    QCOMPARE(s.doc().undoStack()->undoText(), QStringLiteral("Duplicate Conv2d #13"));
    s.doc().undoStack()->undo();

    // Rename in place on the canvas.
    s.scene().selectNodes({conv1});
    s.window.findChild<QAction*>(QStringLiteral("actionRename"))->trigger();
    QLineEdit* inPlace = s.scene().renameEditor();
    QVERIFY(inPlace != nullptr);
    inPlace->setText(QStringLiteral("bad name"));
    QTest::keyClick(inPlace, Qt::Key_Return);
    QVERIFY(s.scene().connectionFeedback().contains(QStringLiteral("not a valid name")));
    QVERIFY(s.spec().node(conv1).name.empty());
    inPlace->setText(QStringLiteral("features"));
    QTest::keyClick(inPlace, Qt::Key_Return);
    QCOMPARE(s.spec().node(conv1).name, std::string("features"));
    QCOMPARE(s.doc().undoStack()->undoText(), QStringLiteral("Rename Conv2d #2 to features"));

    // Insert a layer on an edge from its context menu.
    const Edge edge{conv1, relu1, 0};
    myelin::ui::EdgeItem* edgeItem = s.scene().edgeItem(edge);
    QVERIFY(edgeItem != nullptr);
    const QPointF onEdge = edgeItem->shape().boundingRect().center();
    QMenu* menu = s.editor().createContextMenu(onEdge, &s.window);
    auto* insert = menu->findChild<QMenu*>(QStringLiteral("insertLayerMenu"));
    QVERIFY(insert != nullptr);
    QAction* bn = insert->findChild<QAction*>(QStringLiteral("kind_BatchNorm2d"));
    QVERIFY(bn != nullptr);
    QVERIFY(insert->findChild<QAction*>(QStringLiteral("kind_Add")) == nullptr); // two inputs
    bn->trigger();
    delete menu;
    QCOMPARE(s.doc().undoStack()->undoText(),
             QStringLiteral("Insert BatchNorm2d between features and ReLU #3"));
    const NodeId inserted = findNode(s.spec(), "BatchNorm2d");
    QVERIFY(std::count(s.spec().edges.begin(), s.spec().edges.end(), Edge{conv1, inserted, 0}) ==
            1);
    QVERIFY(std::count(s.spec().edges.begin(), s.spec().edges.end(), Edge{inserted, relu1, 0}) ==
            1);
    QVERIFY(hasErrorOn(s.doc().analysis(), inserted)); // num_features 16 != 32 channels
    QVERIFY(!s.editor().quickFixesFor(inserted).empty());

    // Disconnect an edge, delete a node (its edges go with it).
    s.scene().selectNodes({input});
    s.window.findChild<QAction*>(QStringLiteral("actionDisconnect"))->trigger();
    QCOMPARE(s.doc().undoStack()->undoText(), QStringLiteral("Disconnect Input #1 → features"));
    QVERIFY(s.spec().outputs_of(input).empty());
    s.scene().selectNodes({relu1});
    s.window.findChild<QAction*>(QStringLiteral("actionDelete"))->trigger();
    QVERIFY(s.spec().find(relu1) == nullptr);
    QVERIFY(s.spec().outputs_of(inserted).empty());
}

void TestModelEditor::dragMovesMergeIntoOneCommand() {
    Studio s;
    s.doc().open(loadExample("fashion_cnn"), QString());
    QVERIFY(QTest::qWaitForWindowExposed(&s.window));
    const NodeId conv1 = findNode(s.spec(), "Conv2d");
    const int commands = s.doc().undoStack()->count();
    const QPointF grab = s.item(conv1)->sceneBoundingRect().center() + QPointF(40, 0);
    s.view().centerOn(grab);
    QWidget* viewport = s.view().viewport();
    const double zoom = s.view().zoom();
    QTest::mousePress(viewport, Qt::LeftButton, Qt::NoModifier, s.toView(grab));
    for (int step = 1; step <= 6; ++step)
        QTest::mouseMove(viewport, s.toView(grab + QPointF(step * 13 / zoom, step * 7 / zoom)));
    QTest::mouseRelease(viewport, Qt::LeftButton, Qt::NoModifier,
                        s.toView(grab + QPointF(78 / zoom, 42 / zoom)));
    QCOMPARE(s.doc().undoStack()->count(), commands + 1);
    QCOMPARE(s.doc().undoStack()->undoText(), QStringLiteral("Move Conv2d #2"));
    const Node& moved = s.spec().node(conv1);
    QVERIFY(moved.x != 0 || moved.y != 100);
    QCOMPARE(std::fmod(moved.x, 20.0), 0.0); // snapped to the grid
    QCOMPARE(std::fmod(moved.y, 20.0), 0.0);
    QCOMPARE(s.item(conv1)->pos(), QPointF(moved.x, moved.y));
    s.doc().undoStack()->undo();
    QCOMPARE(s.item(conv1)->pos(), QPointF(0, 100));
}

void TestModelEditor::keyboardShortcutsOnTheCanvas() {
    Studio s;
    s.doc().open(loadExample("fashion_cnn"), QString());
    QVERIFY(QTest::qWaitForWindowExposed(&s.window));
    s.window.activateWindow();
    s.view().setFocus();
    QTRY_VERIFY(s.view().hasFocus());
    const NodeId relu = findNode(s.spec(), "ReLU");
    const size_t count = s.spec().nodes.size();

    s.scene().selectNodes({relu});
    QTest::keyClick(&s.view(), Qt::Key_D, Qt::ControlModifier); // duplicate
    QCOMPARE(s.spec().nodes.size(), count + 1);
    QTest::keyClick(&s.view(), Qt::Key_Delete); // the duplicate is selected
    QCOMPARE(s.spec().nodes.size(), count);
    s.scene().selectNodes({relu});
    QTest::keyClick(&s.view(), Qt::Key_C, Qt::ControlModifier);
    QTest::keyClick(&s.view(), Qt::Key_V, Qt::ControlModifier);
    QCOMPARE(s.spec().nodes.size(), count + 1);
    QTest::keyClick(&s.view(), Qt::Key_Z, Qt::ControlModifier);
    QCOMPARE(s.spec().nodes.size(), count);
    s.scene().selectNodes({relu});
    QTest::keyClick(&s.view(), Qt::Key_F2);
    QVERIFY(s.scene().renameEditor() != nullptr);
    QTest::keyClick(s.scene().renameEditor(), Qt::Key_Escape);
    QVERIFY(s.scene().renameEditor() == nullptr);
    const double before = s.view().zoom();
    s.view().setFocus();
    QTest::keyClick(&s.view(), Qt::Key_Minus, Qt::ControlModifier);
    QVERIFY(s.view().zoom() < before);

    // Typing into the inspector does not edit the canvas.
    auto* name = s.window.inspector()->nameEditor();
    QVERIFY(name != nullptr);
    name->setFocus();
    QTest::keyClick(name, Qt::Key_Delete);
    QCOMPARE(s.spec().nodes.size(), count);
}

void TestModelEditor::arrangeLayersIsUndoable() {
    Studio s;
    myelin::io::Project project = loadExample("fashion_resnet");
    QVERIFY(!myelin::ui::layoutNeedsArranging(project.model)); // one column: usable as it is
    s.doc().open(project, QString());
    s.window.findChild<QAction*>(QStringLiteral("actionArrangeLayers"))->trigger();
    QCOMPARE(s.doc().undoStack()->undoText(), QStringLiteral("Arrange layers"));
    QVERIFY(!myelin::ui::layoutNeedsArranging(s.spec()));
    // Layers run top to bottom: every edge points down; a chain stays in one column.
    for (const Edge& e : s.spec().edges)
        QVERIFY(s.spec().node(e.to).y > s.spec().node(e.from).y);
    QCOMPARE(s.spec().node(findNamed(s.spec(), "block1_conv1")).x,
             s.spec().node(findNamed(s.spec(), "block1_bn2")).x);
    // The residual edge runs in a lane beside the block, not through it.
    const Edge skip{findNamed(s.spec(), "stem_relu"), findNamed(s.spec(), "block1_add"), 1};
    const QRectF conv = s.item(findNamed(s.spec(), "block1_conv1"))->sceneBoundingRect();
    QVERIFY(!s.scene().edgeItem(skip)->shape().intersects(conv));
    s.doc().undoStack()->undo();
    QVERIFY(s.spec() == project.model);

    // A file without positions (every node at 0, 0) is laid out when it is opened.
    QTemporaryDir dir;
    myelin::io::Project unplaced = project;
    for (Node& n : unplaced.model.nodes)
        n.x = n.y = 0;
    QVERIFY(myelin::ui::layoutNeedsArranging(unplaced.model));
    const QString path = dir.filePath(QStringLiteral("unplaced.myelin"));
    myelin::io::save_project(unplaced, path.toStdString());
    QVERIFY(s.window.openProject(path));
    QVERIFY(!myelin::ui::layoutNeedsArranging(s.spec()));
    QVERIFY(!s.doc().isDirty());
}

void TestModelEditor::saveThenOpenGivesTheSameGraph() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("cnn.myelin"));
    ModelSpec saved;
    {
        Studio s;
        QVERIFY(s.window.newProject(examplePath("fashion_cnn")));
        QCOMPARE(s.window.windowTitle(), QStringLiteral("Myelin Studio — Fashion-MNIST CNN"));
        s.scene().selectNodes({findNode(s.spec(), "Linear")});
        rename(*s.window.inspector(), QStringLiteral("fc1"));
        QVERIFY(s.window.windowTitle().endsWith(QLatin1Char('*')));
        QVERIFY(s.window.saveProjectAs(path));
        QCOMPARE(s.window.windowTitle(), QStringLiteral("Myelin Studio — cnn.myelin"));
        QVERIFY(!s.doc().isDirty());
        saved = s.spec();
    }
    Studio s;
    QVERIFY(s.window.openProject(path));
    QVERIFY(s.spec() == saved);
    QCOMPARE(s.window.projectPath(), QFileInfo(path).absoluteFilePath());
    QVERIFY(!s.doc().isDirty());
    QCOMPARE(s.scene().items().count() > int(saved.nodes.size() + saved.edges.size()), true);
    // Recent files remember it.
    QVERIFY(QSettings()
                .value(QStringLiteral("recentFiles"))
                .toStringList()
                .contains(QFileInfo(path).absoluteFilePath()));
}

// A shipped example opens as an untitled copy, from File > Open and from the command line
// (./run.sh): Save asks where, and the example's file is never written (issue 41: a stray Ctrl+S
// among random input wrote four nodes into resources/examples/fashion_cnn.myelin).
void TestModelEditor::exampleOpensAsAnUntitledCopy() {
    const QString example = examplePath("fashion_cnn");
    QFile file(example);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray shipped = file.readAll();
    file.close();
    QTemporaryDir dir;
    {
        Studio s;
        QVERIFY(s.window.openProject(example));
        QVERIFY(s.doc().isOpen());
        QVERIFY(s.window.projectPath().isEmpty());
        QCOMPARE(s.doc().dataDirectory(), QFileInfo(example).absolutePath());
        QVERIFY2(s.window.statusBar()->currentMessage().contains(QStringLiteral("untitled copy")),
                 qPrintable(s.window.statusBar()->currentMessage()));
        saveScreenshot(s.window, QStringLiteral("editor_example_untitled_copy.png"));
        s.scene().selectNodes({findNode(s.spec(), "ReLU")});
        s.editor().deleteSelection();
        const QString kept = dir.filePath(QStringLiteral("mine.myelin"));
        QVERIFY(s.window.saveProjectAs(kept));
        QCOMPARE(s.window.projectPath(), QFileInfo(kept).absoluteFilePath());
    }
    {
        MainWindow w(example); // as ./run.sh starts the studio
        QVERIFY(w.projectPath().isEmpty());
        QVERIFY(w.document()->isOpen());
    }
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(file.readAll(), shipped);
}

void TestModelEditor::malformedProjectKeepsTheCurrentOne() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString broken = dir.filePath(QStringLiteral("broken.myelin"));
    // Valid JSON, but a node with an unknown attribute.
    myelin::io::Project bad = loadExample("fashion_mlp");
    std::string text = myelin::io::serialize_project(bad);
    const std::string from = "\"out_features\"";
    text.replace(text.find(from), from.size(), "\"out_feature\"");
    QFile file(broken);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(QByteArray::fromStdString(text));
    file.close();

    // A copy of the example: the shipped one opens untitled (exampleOpensAsAnUntitledCopy).
    const QString project = dir.filePath(QStringLiteral("fashion_cnn.myelin"));
    QVERIFY(QFile::copy(examplePath("fashion_cnn"), project));
    Studio s;
    QVERIFY(s.window.openProject(project));
    s.scene().selectNodes({findNode(s.spec(), "ReLU")});
    s.editor().deleteSelection();
    const ModelSpec current = s.spec();
    const QString title = s.window.windowTitle();

    QVERIFY(!s.window.openProject(broken));
    auto* box = s.window.findChild<QMessageBox*>(QStringLiteral("projectErrorBox"));
    QVERIFY(box != nullptr);
    QTRY_VERIFY(box->isVisible());
    QVERIFY2(box->informativeText().contains(QStringLiteral("broken.myelin:model.nodes[")),
             qPrintable(box->informativeText()));
    QVERIFY2(box->informativeText().contains(QStringLiteral("out_feature")),
             qPrintable(box->informativeText()));
    saveScreenshot(*box, QStringLiteral("editor_open_error.png"));
    box->close();
    QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
    QVERIFY(s.window.findChild<QMessageBox*>(QStringLiteral("projectErrorBox")) == nullptr);
    QVERIFY(s.spec() == current);
    QCOMPARE(s.window.windowTitle(), title);
    QCOMPARE(QFileInfo(s.window.projectPath()).fileName(), QStringLiteral("fashion_cnn.myelin"));
    QVERIFY(s.doc().isDirty());

    // Malformed JSON: the line and column.
    QFile json(broken);
    QVERIFY(json.open(QIODevice::WriteOnly | QIODevice::Truncate));
    json.write("{\n  \"format_version\": 1,\n  \"model\": {\"nodes\": [,]}\n}\n");
    json.close();
    QVERIFY(!s.window.openProject(broken));
    box = s.window.findChild<QMessageBox*>(QStringLiteral("projectErrorBox"));
    QVERIFY(box != nullptr);
    QVERIFY2(box->informativeText().contains(QStringLiteral("broken.myelin:3:")),
             qPrintable(box->informativeText()));
    box->close();
    QVERIFY(s.spec() == current);
}

void TestModelEditor::autosaveWritesARecoveryFile() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("mlp.myelin"));
    myelin::io::save_project(loadExample("fashion_mlp"), path.toStdString());
    QString recoveryFile;
    ModelSpec edited;
    {
        Studio s;
        QVERIFY(s.window.openProject(path));
        auto* autosave = s.window.autosave();
        QVERIFY(autosave->saveNow()); // clean: nothing to write
        QVERIFY(!QFileInfo::exists(autosave->recoveryPath()));
        s.scene().selectNodes({findNode(s.spec(), "ReLU")});
        s.editor().deleteSelection();
        QVERIFY(autosave->saveNow());
        QVERIFY(QFileInfo::exists(autosave->recoveryPath()));
        // The recovery file holds the edited model, and the project file is untouched.
        QVERIFY(myelin::io::load_project(autosave->recoveryPath().toStdString()).model == s.spec());
        QVERIFY(myelin::io::load_project(path.toStdString()).model ==
                loadExample("fashion_mlp").model);
        // This running studio owns it: not offered as a crash leftover.
        QVERIFY(myelin::ui::Autosave::pendingRecoveries().empty());
        // Saving the project removes it.
        QVERIFY(s.window.saveProject());
        QVERIFY(!QFileInfo::exists(autosave->recoveryPath()));

        // An edit, an autosave, then a "crash": the window goes without being closed.
        s.scene().selectNodes({findNode(s.spec(), "ReLU")});
        s.editor().deleteSelection();
        QVERIFY(autosave->saveNow());
        recoveryFile = autosave->recoveryPath();
        edited = s.spec();
    }
    auto pending = myelin::ui::Autosave::pendingRecoveries();
    QCOMPARE(pending.size(), size_t(1));
    QCOMPARE(pending[0].file, recoveryFile);
    QCOMPARE(pending[0].original, QFileInfo(path).absoluteFilePath());
    QVERIFY(myelin::io::load_project(recoveryFile.toStdString()).model == edited);

    // A project saved after the autosave makes it stale: removed, not offered.
    QFile aged(recoveryFile);
    QVERIFY(aged.open(QIODevice::Append));
    QVERIFY(aged.setFileTime(QDateTime::currentDateTime().addSecs(-3600),
                             QFileDevice::FileModificationTime));
    aged.close();
    QVERIFY(myelin::ui::Autosave::pendingRecoveries().empty());
    QVERIFY(!QFileInfo::exists(recoveryFile));
}

void TestModelEditor::problemsAndSummaryPanels() {
    Studio s;
    s.doc().open(loadExample("fashion_cnn"), QString());
    auto& problems = *s.window.problemsPanel();
    QCOMPARE(problems.errorCount(), 0);
    const NodeId fc2 = findNode(s.spec(), "Linear", 1);
    s.scene().selectNodes({fc2});
    editAttribute(*s.window.inspector(), *myelin::graph::layer_kind("Linear").attr("in_features"),
                  int64_t(64));
    QCOMPARE(problems.errorCount(), 1);
    QTreeWidgetItem* row = problems.list()->topLevelItem(0);
    QCOMPARE(row->text(0), QStringLiteral("Linear #11"));
    QVERIFY(row->text(1).contains(QStringLiteral("in_features=64")));
    auto* dock = s.window.findChild<QDockWidget*>(QStringLiteral("problemsDock"));
    QCOMPARE(dock->windowTitle(), QStringLiteral("Problems (1)"));
    // Clicking the problem selects its node.
    s.scene().clearSelection();
    emit problems.list()->itemClicked(row, 0);
    QVERIFY(s.scene().selectedNodeIds() == std::vector<NodeId>{fc2});
    s.doc().undoStack()->undo();
    QCOMPARE(problems.errorCount(), 0);

    // The summary: one row per node in order, then the totals, for the chosen batch size.
    auto& summary = *s.window.summaryPanel();
    QCOMPARE(summary.batchSizeBox()->value(), 128); // the project's batch size
    QTableWidget* table = summary.table();
    QCOMPARE(table->rowCount(), int(s.spec().nodes.size()) + 1);
    QCOMPARE(table->item(1, 1)->text(), QStringLiteral("Conv2d"));
    QCOMPARE(table->item(1, 2)->text(), QStringLiteral("[128, 32, 28, 28]"));
    QCOMPARE(table->item(1, 3)->text(), QStringLiteral("320"));
    const int last = table->rowCount() - 1;
    QCOMPARE(table->item(last, 0)->text(), QStringLiteral("Total"));
    QCOMPARE(table->item(last, 3)->text(),
             QString::fromStdString(myelin::graph::format_count(s.doc().analysis().total_params)));
    summary.batchSizeBox()->setValue(1);
    QCOMPARE(table->item(1, 2)->text(), QStringLiteral("[1, 32, 28, 28]"));
}

void TestModelEditor::screenshots() {
    // The editor with the CNN.
    {
        Studio s;
        QVERIFY(s.window.openProject(examplePath("fashion_cnn")));
        QVERIFY(QTest::qWaitForWindowExposed(&s.window));
        const NodeId conv2 = findNode(s.spec(), "Conv2d", 1);
        s.scene().selectNodes({conv2});
        QApplication::processEvents();
        s.view().showModel();
        saveScreenshot(s.window, QStringLiteral("editor_fashion_cnn.png"));
        saveScreenshot(*s.window.inspector(), QStringLiteral("editor_inspector_conv2d.png"));
        auto* summaryDock = s.window.findChild<QDockWidget*>(QStringLiteral("summaryDock"));
        summaryDock->raise();
        QApplication::processEvents();
        saveScreenshot(*summaryDock, QStringLiteral("editor_model_summary.png"));
    }
    // File > New: the example gallery.
    {
        Studio s;
        s.window.findChild<QAction*>(QStringLiteral("actionNew"))->trigger();
        auto* dialog = s.window.findChild<QDialog*>(QStringLiteral("newProjectDialog"));
        QVERIFY(dialog != nullptr);
        QVERIFY(QTest::qWaitForWindowExposed(dialog));
        auto* list = dialog->findChild<QListWidget*>(QStringLiteral("exampleList"));
        QCOMPARE(list->count(), 8); // empty + the seven examples
        saveScreenshot(*dialog, QStringLiteral("new_project_dialog.png"));
        list->setCurrentRow(2);
        dialog->accept();
        QVERIFY(s.doc().isOpen());
        QVERIFY(s.doc().filePath().isEmpty()); // an untitled copy, never the example itself
        QVERIFY(!s.spec().nodes.empty());
    }
    // The ResNet after Arrange Layers: residual edges in lanes beside their blocks.
    {
        Studio s;
        QVERIFY(s.window.openProject(examplePath("fashion_resnet")));
        QVERIFY(QTest::qWaitForWindowExposed(&s.window));
        s.window.findChild<QAction*>(QStringLiteral("actionArrangeLayers"))->trigger();
        QApplication::processEvents();
        s.view().showModel();
        saveScreenshot(s.window, QStringLiteral("editor_fashion_resnet.png"));
    }
    // A node with a shape error: the CNN without its Flatten.
    {
        Studio s;
        QVERIFY(s.window.openProject(examplePath("fashion_cnn")));
        QVERIFY(QTest::qWaitForWindowExposed(&s.window));
        const NodeId pool2 = findNode(s.spec(), "MaxPool2d", 1);
        const NodeId fc1 = findNode(s.spec(), "Linear", 0);
        s.scene().selectNodes({findNode(s.spec(), "Flatten")});
        s.editor().deleteSelection();
        dragConnection(s, pool2, fc1, 0);
        s.scene().selectNodes({fc1});
        QApplication::processEvents();
        s.view().resetTransform();
        s.view().centerOn(s.item(fc1));
        saveScreenshot(s.window, QStringLiteral("editor_shape_error.png"));
    }
}

QTEST_MAIN(TestModelEditor)
#include "test_model_editor.moc"
