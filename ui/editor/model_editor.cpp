#include "editor/model_editor.h"
#include "editor/step_scrubber.h"

#include "document/project_document.h"
#include "editor/edge_item.h"
#include "editor/graph_scene.h"
#include "editor/graph_view.h"
#include "editor/node_item.h"
#include "widgets/theme.h"

#include <myelin/io/json_limits.h>
#include <myelin/io/project.h>

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QFont>
#include <QGuiApplication>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMenu>
#include <QMimeData>
#include <QVBoxLayout>

#include <algorithm>
#include <functional>
#include <map>

namespace myelin::ui {

namespace {

constexpr double kPasteStep = 40;

QString countText(size_t count, const QString& one, const QString& many) {
    return count == 1 ? one : many.arg(count);
}

// One submenu per category (in registry order) listing the kinds `accept` allows.
void addKindMenus(QMenu* menu, const std::function<bool(const graph::LayerKind&)>& accept,
                  const std::function<void(const QString&)>& chosen) {
    std::map<int, QMenu*> byCategory;
    for (const graph::LayerKind& kind : graph::layer_kinds()) {
        if (!accept(kind)) continue;
        QMenu*& sub = byCategory[int(kind.category)];
        if (sub == nullptr)
            sub = menu->addMenu(QString::fromLatin1(graph::to_string(kind.category)));
        const QString name = QString::fromStdString(kind.name);
        QAction* action = sub->addAction(name, menu, [chosen, name] { chosen(name); });
        action->setToolTip(QString::fromStdString(kind.doc));
        action->setObjectName(QStringLiteral("kind_") + name);
    }
    menu->setToolTipsVisible(true);
}

} // namespace

ModelEditor::ModelEditor(ProjectDocument* document, QWidget* parent)
    : QWidget(parent), document_(document) {
    setObjectName(QStringLiteral("modelEditor"));
    scene_ = new GraphScene(document_, this);
    view_ = new GraphView(scene_, this);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(view_);
    scrubber_ = new StepScrubber(this);
    layout->addWidget(scrubber_);

    using E = ModelEditor;
    cutAction_ = makeAction(tr("Cu&t"), "actionCut", QKeySequence::Cut, &E::cut);
    copyAction_ = makeAction(tr("&Copy"), "actionCopy", QKeySequence::Copy, &E::copy);
    pasteAction_ = makeAction(tr("&Paste"), "actionPaste", QKeySequence::Paste, &E::paste);
    duplicateAction_ = makeAction(tr("D&uplicate"), "actionDuplicate",
                                  QKeySequence(Qt::CTRL | Qt::Key_D), &E::duplicate);
    deleteAction_ =
        makeAction(tr("&Delete"), "actionDelete", QKeySequence::Delete, &E::deleteSelection);
    renameAction_ =
        makeAction(tr("&Rename…"), "actionRename", QKeySequence(Qt::Key_F2), &E::renameSelected);
    disconnectAction_ =
        makeAction(tr("Dis&connect"), "actionDisconnect",
                   QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_K), &E::disconnectSelection);
    arrangeAction_ = makeAction(tr("&Arrange Layers"), "actionArrangeLayers",
                                QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_L), &E::arrangeLayers);
    arrangeAction_->setStatusTip(tr("Lay the model out top to bottom, layer by layer"));
    fitAction_ =
        makeAction(tr("&Fit to Window"), "actionFit", QKeySequence(Qt::Key_F), &E::fitToWindow);

    selectAllAction_ = new QAction(tr("Select &All"), this);
    selectAllAction_->setObjectName(QStringLiteral("actionSelectAll"));
    selectAllAction_->setShortcut(QKeySequence::SelectAll);
    selectAllAction_->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    addAction(selectAllAction_);
    connect(selectAllAction_, &QAction::triggered, this, [this] {
        for (QGraphicsItem* item : scene_->items())
            if (item->type() == NodeItem::Type || item->type() == EdgeItem::Type)
                item->setSelected(true);
    });
    zoomInAction_ = new QAction(tr("Zoom &In"), this);
    zoomInAction_->setObjectName(QStringLiteral("actionZoomIn"));
    zoomInAction_->setShortcuts({QKeySequence::ZoomIn, QKeySequence(Qt::CTRL | Qt::Key_Equal)});
    connect(zoomInAction_, &QAction::triggered, this, [this] { view_->zoomBy(1.25); });
    zoomOutAction_ = new QAction(tr("Zoom &Out"), this);
    zoomOutAction_->setObjectName(QStringLiteral("actionZoomOut"));
    zoomOutAction_->setShortcut(QKeySequence::ZoomOut);
    connect(zoomOutAction_, &QAction::triggered, this, [this] { view_->zoomBy(0.8); });
    zoomResetAction_ = new QAction(tr("Actual &Size"), this);
    zoomResetAction_->setObjectName(QStringLiteral("actionZoomReset"));
    zoomResetAction_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
    connect(zoomResetAction_, &QAction::triggered, this,
            [this] { view_->zoomBy(1 / view_->zoom()); });
    snapAction_ = new QAction(tr("S&nap to Grid"), this);
    snapAction_->setObjectName(QStringLiteral("actionSnapToGrid"));
    snapAction_->setCheckable(true);
    snapAction_->setChecked(scene_->snapToGrid());
    connect(snapAction_, &QAction::toggled, scene_, &GraphScene::setSnapToGrid);

    connect(view_, &GraphView::contextMenuRequested, this, &ModelEditor::showContextMenu);
    connect(scene_, &GraphScene::statusMessage, this, &ModelEditor::statusMessage);
    connect(scene_, &QGraphicsScene::selectionChanged, this, &ModelEditor::updateActions);
    connect(document_, &ProjectDocument::modelChanged, this, &ModelEditor::updateActions);
    connect(document_, &ProjectDocument::projectReplaced, this, [this] {
        pasteCount_ = 0;
        updateActions();
    });
    connect(QGuiApplication::clipboard(), &QClipboard::dataChanged, this,
            &ModelEditor::updateActions);
    updateActions();
}

QAction* ModelEditor::makeAction(const QString& text, const char* objectName,
                                 const QKeySequence& shortcut, void (ModelEditor::*slot)()) {
    auto* action = new QAction(text, this);
    action->setObjectName(QString::fromLatin1(objectName));
    action->setShortcut(shortcut);
    // Active while the canvas (or anything inside the editor) has focus, so Delete or F typed
    // into the inspector or the palette never edits the model.
    action->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    addAction(action);
    connect(action, &QAction::triggered, this, slot);
    return action;
}

void ModelEditor::addEditActions(QMenu* menu) {
    menu->addActions({cutAction_, copyAction_, pasteAction_, duplicateAction_, deleteAction_});
    menu->addSeparator();
    menu->addActions({renameAction_, disconnectAction_, selectAllAction_});
    menu->addSeparator();
    menu->addAction(arrangeAction_);
}

void ModelEditor::addViewActions(QMenu* menu) {
    menu->addActions({zoomInAction_, zoomOutAction_, zoomResetAction_, fitAction_});
    menu->addSeparator();
    menu->addAction(snapAction_);
}

void ModelEditor::setEditingLocked(bool locked) {
    locked_ = locked;
    view_->setInteractive(!locked);
    view_->setAcceptDrops(!locked);
    updateActions();
}

void ModelEditor::updateActions() {
    const bool open = document_->isOpen() && !locked_;
    const size_t nodes = open ? scene_->selectedNodeIds().size() : 0;
    const size_t edges = open ? scene_->selectedEdges().size() : 0;
    const QMimeData* clip = QGuiApplication::clipboard()->mimeData();
    const bool clipboardHasNodes = clip != nullptr && clip->hasFormat(kClipboardMimeType);
    cutAction_->setEnabled(nodes > 0);
    copyAction_->setEnabled(nodes > 0);
    duplicateAction_->setEnabled(nodes > 0);
    deleteAction_->setEnabled(nodes + edges > 0);
    renameAction_->setEnabled(nodes == 1);
    bool anyConnection = edges > 0;
    if (!anyConnection && nodes > 0)
        for (graph::NodeId id : scene_->selectedNodeIds())
            anyConnection = anyConnection || !document_->spec().inputs_of(id).empty() ||
                            !document_->spec().outputs_of(id).empty();
    disconnectAction_->setEnabled(anyConnection);
    pasteAction_->setEnabled(open && clipboardHasNodes);
    for (QAction* action : {selectAllAction_, arrangeAction_, snapAction_})
        action->setEnabled(open);
    // Looking around stays possible while editing is locked.
    for (QAction* action : {zoomInAction_, zoomOutAction_, zoomResetAction_, fitAction_})
        action->setEnabled(document_->isOpen());
    arrangeAction_->setEnabled(open && !document_->spec().nodes.empty());
}

QByteArray ModelEditor::fragmentToJson(const graph::ModelSpec& fragment) {
    // The project writer knows how each attribute is written; keep only its "model" object.
    io::Project project;
    project.model = fragment;
    const std::string text = io::serialize_project(project);
    const QJsonObject root = QJsonDocument::fromJson(QByteArray::fromStdString(text)).object();
    return QJsonDocument(root.value(QStringLiteral("model")).toObject())
        .toJson(QJsonDocument::Indented);
}

std::optional<graph::ModelSpec> ModelEditor::fragmentFromJson(const QByteArray& json) {
    // Another program wrote the clipboard: refuse deep nesting before Qt's recursive parse.
    if (!io::json_nesting_problem(std::string_view(json.constData(), size_t(json.size()))).empty())
        return std::nullopt;
    const QJsonDocument fragment = QJsonDocument::fromJson(json);
    if (!fragment.isObject() || !fragment.object().contains(QStringLiteral("nodes")))
        return std::nullopt;
    // Wrap it in a default project so the project reader checks every field and attribute.
    QJsonObject root =
        QJsonDocument::fromJson(QByteArray::fromStdString(io::serialize_project({}))).object();
    root.insert(QStringLiteral("model"), fragment.object());
    try {
        return io::parse_project(QJsonDocument(root).toJson(QJsonDocument::Compact).toStdString(),
                                 "clipboard")
            .model;
    } catch (const Error&) {
        return std::nullopt;
    }
}

void ModelEditor::copy() {
    const std::vector<graph::NodeId> ids = scene_->selectedNodeIds();
    if (ids.empty()) return;
    const QByteArray json = fragmentToJson(extractNodes(document_->spec(), ids));
    auto* mime = new QMimeData;
    mime->setData(kClipboardMimeType, json);
    mime->setText(QString::fromUtf8(json));
    QGuiApplication::clipboard()->setMimeData(mime);
    pasteCount_ = 0;
    emit statusMessage(countText(ids.size(), tr("Copied 1 node"), tr("Copied %1 nodes")));
}

void ModelEditor::cut() {
    if (scene_->selectedNodeIds().empty()) return;
    copy();
    removeSelection(tr("Cut"));
}

void ModelEditor::paste() {
    const QMimeData* mime = QGuiApplication::clipboard()->mimeData();
    if (mime == nullptr || !mime->hasFormat(kClipboardMimeType) || !document_->isOpen()) return;
    const std::optional<graph::ModelSpec> fragment =
        fragmentFromJson(mime->data(kClipboardMimeType));
    if (!fragment || fragment->nodes.empty()) {
        emit statusMessage(tr("The clipboard holds no layers this version can read"));
        return;
    }
    ++pasteCount_;
    const double step = kPasteStep * pasteCount_;
    pasteFragment(*fragment, QPointF(step, step), tr("Paste"));
}

void ModelEditor::duplicate() {
    const std::vector<graph::NodeId> ids = scene_->selectedNodeIds();
    if (ids.empty()) return;
    pasteFragment(extractNodes(document_->spec(), ids), QPointF(kPasteStep, kPasteStep),
                  tr("Duplicate"));
}

void ModelEditor::pasteFragment(const graph::ModelSpec& fragment, QPointF offset,
                                const QString& verb) {
    graph::ModelSpec spec = document_->spec();
    const std::vector<graph::NodeId> added = myelin::ui::pasteFragment(spec, fragment, offset);
    const QString what =
        added.size() == 1 ? nodeLabel(spec, added.front()) : tr("%1 nodes").arg(added.size());
    document_->applyEdit(spec, QStringLiteral("%1 %2").arg(verb, what));
    scene_->selectNodes(added);
}

void ModelEditor::removeSelection(const QString& verb) {
    const std::vector<graph::NodeId> ids = scene_->selectedNodeIds();
    // With nodes selected, only they (and their own edges) go: a rubber band also catches edges
    // that merely pass through it.
    const std::vector<graph::Edge> edges =
        ids.empty() ? scene_->selectedEdges() : std::vector<graph::Edge>{};
    if (ids.empty() && edges.empty()) return;
    graph::ModelSpec spec = document_->spec();
    QString what;
    if (!ids.empty())
        what = ids.size() == 1 ? nodeLabel(spec, ids.front()) : tr("%1 nodes").arg(ids.size());
    else
        what = edges.size() == 1
                   ? tr("connection %1 → %2")
                         .arg(nodeLabel(spec, edges[0].from), nodeLabel(spec, edges[0].to))
                   : tr("%1 connections").arg(edges.size());
    for (const graph::Edge& e : edges)
        std::erase(spec.edges, e);
    removeNodes(spec, ids);
    document_->applyEdit(spec, QStringLiteral("%1 %2").arg(verb, what));
}

void ModelEditor::deleteSelection() {
    removeSelection(tr("Delete"));
}

void ModelEditor::renameSelected() {
    const std::vector<graph::NodeId> ids = scene_->selectedNodeIds();
    if (ids.size() != 1) return;
    view_->ensureVisible(scene_->nodeItem(ids.front()));
    view_->setFocus();
    scene_->beginRename(ids.front());
}

void ModelEditor::disconnectSelection() {
    graph::ModelSpec spec = document_->spec();
    std::vector<graph::Edge> edges = scene_->selectedEdges();
    if (edges.empty())
        for (graph::NodeId id : scene_->selectedNodeIds()) {
            for (const graph::Edge& e : spec.inputs_of(id))
                edges.push_back(e);
            for (const graph::Edge& e : spec.outputs_of(id))
                if (std::find(edges.begin(), edges.end(), e) == edges.end()) edges.push_back(e);
        }
    if (edges.empty()) return;
    for (const graph::Edge& e : edges)
        std::erase(spec.edges, e);
    document_->applyEdit(
        spec, edges.size() == 1
                  ? tr("Disconnect %1 → %2")
                        .arg(nodeLabel(spec, edges[0].from), nodeLabel(spec, edges[0].to))
                  : tr("Disconnect %1 connections").arg(edges.size()));
}

void ModelEditor::arrangeLayers() {
    graph::ModelSpec spec = document_->spec();
    myelin::ui::arrangeLayers(spec);
    document_->applyEdit(spec, tr("Arrange layers"));
    view_->showModel();
}

void ModelEditor::fitToWindow() {
    view_->fitAll();
}

graph::NodeId ModelEditor::addLayerAfterSelection(const QString& kind) {
    if (!document_->isOpen() || graph::find_layer_kind(kind.toStdString()) == nullptr) return -1;
    const std::vector<graph::NodeId> selected = scene_->selectedNodeIds();
    if (selected.empty())
        return scene_->addLayer(kind, view_->mapToScene(view_->viewport()->rect().center()));
    graph::ModelSpec spec = document_->spec();
    const graph::NodeId after = selected.back();
    const graph::NodeId id = addNodeAfter(spec, kind.toStdString(), after);
    document_->applyEdit(spec, tr("Add %1 after %2").arg(kind, nodeLabel(spec, after)));
    scene_->selectNodes({id});
    if (NodeItem* item = scene_->nodeItem(id)) view_->ensureVisible(item);
    return id;
}

void ModelEditor::focusNode(graph::NodeId id) {
    if (scene_->nodeItem(id) == nullptr) return;
    scene_->selectNodes({id});
    view_->centerOnNode(id);
}

std::vector<QuickFix> ModelEditor::quickFixesFor(graph::NodeId id) const {
    return quickFixes(document_->spec(), document_->analysis(), id);
}

QMenu* ModelEditor::createContextMenu(QPointF scenePos, QWidget* parent) {
    auto* menu = new QMenu(parent);
    menu->setObjectName(QStringLiteral("canvasContextMenu"));
    NodeItem* node = nullptr;
    EdgeItem* edge = nullptr;
    for (QGraphicsItem* item : scene_->items(scenePos)) {
        if (item->type() == NodeItem::Type) {
            node = static_cast<NodeItem*>(item);
            break;
        }
        if (item->type() == EdgeItem::Type && edge == nullptr) edge = static_cast<EdgeItem*>(item);
    }

    if (node != nullptr) {
        const graph::NodeId id = node->id();
        if (!node->isSelected()) scene_->selectNodes({id});
        for (const QuickFix& fix : quickFixesFor(id)) {
            QAction* action = menu->addAction(fix.text);
            action->setObjectName(QStringLiteral("quickFix"));
            QFont bold = action->font();
            bold.setBold(true);
            action->setFont(bold);
            const graph::ModelSpec result = fix.result;
            const QString text = fix.text;
            connect(action, &QAction::triggered, this,
                    [this, result, text] { document_->applyEdit(result, text); });
        }
        if (!menu->isEmpty()) menu->addSeparator();
        menu->addActions({renameAction_, duplicateAction_});
        menu->addSeparator();
        menu->addActions({cutAction_, copyAction_, deleteAction_});

        const graph::ModelSpec& spec = document_->spec();
        std::vector<graph::Edge> connections = spec.inputs_of(id);
        for (const graph::Edge& e : spec.outputs_of(id))
            connections.push_back(e);
        if (!connections.empty()) {
            menu->addSeparator();
            QMenu* disconnect = menu->addMenu(tr("Disconnect"));
            disconnect->setObjectName(QStringLiteral("disconnectMenu"));
            for (const graph::Edge& e : connections) {
                const QString text = e.to == id ? tr("From %1").arg(nodeLabel(spec, e.from))
                                                : tr("To %1").arg(nodeLabel(spec, e.to));
                disconnect->addAction(text, this, [this, e] {
                    graph::ModelSpec changed = document_->spec();
                    std::erase(changed.edges, e);
                    document_->applyEdit(
                        changed, tr("Disconnect %1 → %2")
                                     .arg(nodeLabel(changed, e.from), nodeLabel(changed, e.to)));
                });
            }
            if (connections.size() > 1) {
                disconnect->addSeparator();
                disconnect->addAction(tr("All Connections"), this,
                                      &ModelEditor::disconnectSelection);
            }
        }
    } else if (edge != nullptr) {
        const graph::Edge e = edge->edge();
        scene_->clearSelection();
        edge->setSelected(true);
        QMenu* insert = menu->addMenu(tr("Insert Layer Here"));
        insert->setObjectName(QStringLiteral("insertLayerMenu"));
        addKindMenus(insert, canInsertOnEdge, [this, e](const QString& kind) {
            graph::ModelSpec spec = document_->spec();
            if (spec.find(e.from) == nullptr || spec.find(e.to) == nullptr) return;
            const graph::NodeId id = insertOnEdge(spec, e, kind.toStdString());
            document_->applyEdit(spec,
                                 tr("Insert %1 between %2 and %3")
                                     .arg(kind, nodeLabel(spec, e.from), nodeLabel(spec, e.to)));
            scene_->selectNodes({id});
        });
        menu->addSeparator();
        menu->addAction(tr("Disconnect"), this, &ModelEditor::disconnectSelection)
            ->setObjectName(QStringLiteral("disconnectEdge"));
    } else {
        QMenu* add = menu->addMenu(tr("Add Layer"));
        add->setObjectName(QStringLiteral("addLayerMenu"));
        addKindMenus(
            add, [](const graph::LayerKind&) { return true; },
            [this, scenePos](const QString& kind) { scene_->addLayer(kind, scenePos); });
        if (pasteAction_->isEnabled()) {
            QAction* pasteHere = menu->addAction(tr("Paste Here"));
            connect(pasteHere, &QAction::triggered, this, [this, scenePos] {
                const QMimeData* mime = QGuiApplication::clipboard()->mimeData();
                if (mime == nullptr) return;
                const auto fragment = fragmentFromJson(mime->data(kClipboardMimeType));
                if (!fragment || fragment->nodes.empty()) return;
                double left = fragment->nodes.front().x, top = fragment->nodes.front().y;
                for (const graph::Node& n : fragment->nodes) {
                    left = std::min(left, n.x);
                    top = std::min(top, n.y);
                }
                const QPointF at = scene_->snappedNodePosition(scenePos);
                pasteFragment(*fragment, at - QPointF(left, top), tr("Paste"));
            });
        }
        menu->addSeparator();
        menu->addActions({selectAllAction_, arrangeAction_, fitAction_});
    }
    return menu;
}

void ModelEditor::showContextMenu(QPointF scenePos, QPoint globalPos) {
    if (locked_) return;
    if (!document_->isOpen()) return;
    QMenu* menu = createContextMenu(scenePos, this);
    menu->setAttribute(Qt::WA_DeleteOnClose);
    menu->popup(globalPos);
}

} // namespace myelin::ui
