#include "editor/graph_scene.h"

#include "document/model_edits.h"
#include "document/project_document.h"
#include "editor/edge_item.h"
#include "editor/feedback_item.h"
#include "editor/node_item.h"
#include "widgets/theme.h"

#include <QFontMetricsF>
#include <QGraphicsPathItem>
#include <QGraphicsProxyWidget>
#include <QGraphicsSceneDragDropEvent>
#include <QGraphicsSceneMouseEvent>
#include <QKeyEvent>
#include <QLineEdit>
#include <QMimeData>
#include <QPainter>
#include <QScopedValueRollback>
#include <QTimer>

#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_set>
#include <utility>

namespace myelin::ui {

namespace {

// The in-place name editor: Escape cancels.
class RenameLineEdit : public QLineEdit {
  public:
    std::function<void()> onEscape;

  protected:
    void keyPressEvent(QKeyEvent* event) override {
        if (event->key() == Qt::Key_Escape && onEscape) {
            onEscape();
            return;
        }
        QLineEdit::keyPressEvent(event);
    }
};

constexpr int kFeedbackMs = 4000;
constexpr double kLaneGap = 30;

// Liang-Barsky: whether segment a-b enters `rect`.
bool segmentHitsRect(QPointF a, QPointF b, const QRectF& rect) {
    double t0 = 0, t1 = 1;
    const double dx = b.x() - a.x(), dy = b.y() - a.y();
    const double p[4] = {-dx, dx, -dy, dy};
    const double q[4] = {a.x() - rect.left(), rect.right() - a.x(), a.y() - rect.top(),
                         rect.bottom() - a.y()};
    for (int i = 0; i < 4; ++i) {
        if (p[i] == 0) {
            if (q[i] < 0) return false;
            continue;
        }
        const double t = q[i] / p[i];
        if (p[i] < 0)
            t0 = std::max(t0, t);
        else
            t1 = std::min(t1, t);
        if (t0 > t1) return false;
    }
    return true;
}

} // namespace

GraphScene::GraphScene(ProjectDocument* document, QObject* parent)
    : QGraphicsScene(parent), document_(document) {
    setItemIndexMethod(QGraphicsScene::BspTreeIndex);
    feedback_ = new FeedbackItem;
    feedback_->hide();
    addItem(feedback_);
    feedbackTimer_ = new QTimer(this);
    feedbackTimer_->setSingleShot(true);
    connect(feedbackTimer_, &QTimer::timeout, this, [this] { feedback_->hide(); });

    connect(document_, &ProjectDocument::modelChanged, this, &GraphScene::syncFromDocument);
    connect(document_, &ProjectDocument::projectReplaced, this, [this] {
        endRename();
        highlightedNode_ = nullptr;
        connectFrom_ = -1;
        delete connectPath_;
        connectPath_ = nullptr;
        // Out of the maps before they are deleted: deleting a selected item emits
        // selectionChanged, whose slots ask for the selection through the maps, which would
        // still hold the items already deleted (a crash found by the monkey test, seed 41).
        const auto edges = std::exchange(edges_, {});
        edgesOfNode_.clear();
        const auto nodes = std::exchange(nodes_, {});
        for (const auto& [key, edge] : edges)
            delete edge;
        for (const auto& [id, node] : nodes)
            delete node;
        feedback_->hide();
    });
    syncFromDocument(false);
}

GraphScene::~GraphScene() {
    // The base class deletes the (selected) items after this: nobody listens any more.
    blockSignals(true);
}

void GraphScene::setBadges(const std::unordered_map<graph::NodeId, NodeBadge>& badges) {
    for (const auto& [id, item] : nodes_) {
        const auto it = badges.find(id);
        item->setBadge(it == badges.end() ? std::nullopt : std::optional<NodeBadge>(it->second));
    }
    // An edge carries its source's output: it shows that output's statistics (captured for
    // output port 0 only: an edge from h_n shows none).
    for (const auto& [key, edge] : edges_) {
        const auto it = badges.find(edge->edge().from);
        if (it == badges.end() || edge->edge().from_port != 0)
            edge->setStats({}, {});
        else
            edge->setStats(it->second.edgeText, it->second.edgeToolTip);
    }
}

NodeItem* GraphScene::nodeItem(graph::NodeId id) const {
    auto it = nodes_.find(id);
    return it == nodes_.end() ? nullptr : it->second;
}

EdgeItem* GraphScene::edgeItem(const graph::Edge& edge) const {
    auto it = edges_.find({edge.from, edge.to, edge.to_port, edge.from_port});
    return it == edges_.end() ? nullptr : it->second;
}

std::vector<graph::NodeId> GraphScene::selectedNodeIds() const {
    std::vector<graph::NodeId> ids;
    for (const graph::Node& node : document_->spec().nodes)
        if (NodeItem* item = nodeItem(node.id); item != nullptr && item->isSelected())
            ids.push_back(node.id);
    return ids;
}

std::vector<graph::Edge> GraphScene::selectedEdges() const {
    std::vector<graph::Edge> out;
    for (const graph::Edge& edge : document_->spec().edges)
        if (EdgeItem* item = edgeItem(edge); item != nullptr && item->isSelected())
            out.push_back(edge);
    return out;
}

void GraphScene::selectNodes(const std::vector<graph::NodeId>& ids) {
    QSignalBlocker blocker(this);
    clearSelection();
    for (graph::NodeId id : ids)
        if (NodeItem* item = nodeItem(id)) item->setSelected(true);
    blocker.unblock();
    emit selectionChanged();
}

QRectF GraphScene::nodesBoundingRect() const {
    QRectF bounds;
    for (const auto& [id, item] : nodes_)
        bounds = bounds.united(item->sceneBoundingRect());
    return bounds;
}

graph::NodeId GraphScene::addLayer(const QString& kind, QPointF scenePos) {
    const std::string kindName = kind.toStdString();
    if (graph::find_layer_kind(kindName) == nullptr || !document_->isOpen()) return -1;
    graph::ModelSpec spec = document_->spec();
    const QPointF topLeft = snappedNodePosition(scenePos - QPointF(geometry::kNodeWidth / 2, 20));
    const graph::NodeId id = spec.add_node(kindName, {}, {}, topLeft.x(), topLeft.y());
    document_->applyEdit(spec, tr("Add %1").arg(kind));
    selectNodes({id});
    return id;
}

QString GraphScene::connectionFeedback() const {
    return feedback_->isVisible() ? feedback_->text() : QString();
}

void GraphScene::showFeedback(const QString& text, QPointF scenePos) {
    feedback_->setText(text);
    feedback_->setPos(scenePos + QPointF(14, 14));
    feedback_->show();
    feedbackTimer_->start(kFeedbackMs);
}

QPointF GraphScene::snappedNodePosition(QPointF pos) const {
    if (!snapToGrid_ || syncing_) return pos;
    return {std::round(pos.x() / geometry::kGrid) * geometry::kGrid,
            std::round(pos.y() / geometry::kGrid) * geometry::kGrid};
}

void GraphScene::nodeItemMoved(NodeItem* item) {
    if (syncing_) return;
    auto it = edgesOfNode_.find(item->id());
    if (it == edgesOfNode_.end()) return;
    for (EdgeItem* edge : it->second)
        updateEdgeGeometry(edge);
}

void GraphScene::syncFromDocument(bool layoutOnly) {
    syncing_ = true;
    const graph::ModelSpec& spec = document_->spec();
    const graph::Analysis& analysis = document_->analysis();
    // Where every card was: edges are re-routed only where cards moved, grew or went away
    // (routing all of them made an edit of a 500-node graph miss the frame).
    std::unordered_map<graph::NodeId, QRectF> cardsBefore;
    for (const auto& [id, item] : nodes_)
        cardsBefore.emplace(id, item->sceneBoundingRect());
    std::unordered_set<const EdgeItem*> newEdges;

    if (!layoutOnly) {
        std::unordered_map<graph::NodeId, std::vector<graph::Problem>> problems;
        for (const graph::Problem& p : analysis.problems)
            if (p.node >= 0) problems[p.node].push_back(p);
        std::unordered_map<graph::NodeId, const graph::NodeInfo*> infos;
        std::unordered_set<graph::NodeId> present;
        std::unordered_map<graph::NodeId, std::vector<bool>> inputsTaken;
        std::unordered_map<graph::NodeId, std::vector<bool>> outputsTaken;
        for (const graph::Edge& e : spec.edges) {
            if (e.from_port >= 0) {
                auto& taken = outputsTaken[e.from];
                if (taken.size() <= size_t(e.from_port)) taken.resize(size_t(e.from_port) + 1);
                taken[size_t(e.from_port)] = true;
            }
            if (e.to_port < 0) continue;
            auto& taken = inputsTaken[e.to];
            if (taken.size() <= size_t(e.to_port)) taken.resize(size_t(e.to_port) + 1, false);
            taken[size_t(e.to_port)] = true;
        }
        for (size_t i = 0; i < spec.nodes.size(); ++i) {
            const graph::Node& node = spec.nodes[i];
            const graph::NodeInfo* info = i < analysis.nodes.size() ? &analysis.nodes[i] : nullptr;
            infos[node.id] = info;
            present.insert(node.id);
            NodeItem*& item = nodes_[node.id];
            if (item == nullptr) {
                item = new NodeItem(node.id);
                addItem(item);
            }
            NodeContent content;
            content.node = node;
            if (info != nullptr) {
                content.output = info->output;
                content.outputs = info->outputs;
                content.params = info->params;
            }
            if (auto found = problems.find(node.id); found != problems.end())
                content.problems = found->second;
            content.inputConnected = inputsTaken[node.id];
            content.inputConnected.resize(size_t(std::max(0, graph::input_port_count(node))),
                                          false);
            content.outputConnected = outputsTaken[node.id];
            item->setContent(std::move(content));
        }
        for (auto it = nodes_.begin(); it != nodes_.end();) {
            if (present.count(it->first)) {
                ++it;
                continue;
            }
            if (it->second == highlightedNode_) highlightedNode_ = nullptr; // undo mid-drag
            NodeItem* gone = it->second;
            it = nodes_.erase(it); // first: see projectReplaced
            delete gone;
        }

        std::map<EdgeKey, EdgeItem*> next;
        for (const graph::Edge& edge : spec.edges) {
            if (!nodes_.count(edge.from) || !nodes_.count(edge.to)) continue;
            const EdgeKey key{edge.from, edge.to, edge.to_port, edge.from_port};
            if (next.count(key)) continue; // a duplicate edge is reported by the analysis
            EdgeItem* item = nullptr;
            if (auto it = edges_.find(key); it != edges_.end()) {
                item = it->second;
                edges_.erase(it);
            } else {
                item = new EdgeItem(edge);
                addItem(item);
                newEdges.insert(item);
            }
            const graph::NodeInfo* source = infos[edge.from];
            const graph::TensorType* type =
                source != nullptr ? source->output_type(edge.from_port) : nullptr;
            item->setLabel(type != nullptr ? formatShape(*type) : QString());
            next[key] = item;
        }
        const auto stale = std::exchange(edges_, std::move(next));
        edgesOfNode_.clear();
        for (auto& [key, item] : edges_) {
            edgesOfNode_[std::get<0>(key)].push_back(item);
            edgesOfNode_[std::get<1>(key)].push_back(item);
        }
        for (const auto& [key, item] : stale) // after the maps are right: see projectReplaced
            delete item;
    }

    for (const graph::Node& node : spec.nodes)
        if (NodeItem* item = nodeItem(node.id);
            item != nullptr && item->pos() != QPointF(node.x, node.y))
            item->setPos(node.x, node.y);
    std::unordered_set<graph::NodeId> changedCards;
    std::vector<QRectF> changedAreas;
    for (const auto& [id, item] : nodes_) {
        const QRectF now = item->sceneBoundingRect();
        const auto before = cardsBefore.find(id);
        if (before != cardsBefore.end() && before->second == now) continue;
        changedCards.insert(id);
        changedAreas.push_back(now);
        if (before != cardsBefore.end()) changedAreas.push_back(before->second);
    }
    for (const auto& [id, rect] : cardsBefore)
        if (nodes_.count(id) == 0) changedAreas.push_back(rect);
    for (auto& [key, item] : edges_) {
        bool reroute = newEdges.count(item) > 0 || changedCards.count(std::get<0>(key)) > 0 ||
                       changedCards.count(std::get<1>(key)) > 0;
        const QRectF area = item->sceneBoundingRect();
        for (size_t i = 0; i < changedAreas.size() && !reroute; ++i)
            reroute = area.intersects(changedAreas[i]);
        if (reroute) updateEdgeGeometry(item);
    }

    // Room to pan around the model.
    setSceneRect(nodesBoundingRect().adjusted(-1500, -1000, 1500, 1000));
    syncing_ = false;
}

void GraphScene::updateEdgeGeometry(EdgeItem* edge) {
    NodeItem* from = nodeItem(edge->edge().from);
    NodeItem* to = nodeItem(edge->edge().to);
    if (from == nullptr || to == nullptr) return;
    const int port = std::clamp(edge->edge().to_port, 0, std::max(0, to->inputCount() - 1));
    const int fromPort =
        std::clamp(edge->edge().from_port, 0, std::max(0, from->outputCount() - 1));
    const QPointF a = from->portScenePos({true, fromPort});
    const QPointF b = to->portScenePos({false, port});
    // A long edge whose direct curve would run through other cards (a residual connection)
    // takes a lane to the right of them.
    std::optional<double> lane;
    if (b.y() - a.y() > 120) {
        auto obstacles = [&](const QRectF& area) {
            std::vector<QRectF> rects;
            for (QGraphicsItem* item : items(area, Qt::IntersectsItemBoundingRect))
                if (item->type() == NodeItem::Type && item != from && item != to)
                    rects.push_back(item->sceneBoundingRect());
            return rects;
        };
        const QRectF band = QRectF(a, b).normalized().adjusted(-1, 10, 1, -10);
        double right = -1e300;
        for (const QRectF& rect : obstacles(band))
            if (segmentHitsRect(a, b, rect)) right = std::max(right, rect.right());
        if (right > -1e300) {
            double x = right + kLaneGap;
            for (int tries = 0; tries < 32; ++tries) {
                double blocked = -1e300;
                for (const QRectF& rect :
                     obstacles(QRectF(x - 1, a.y() + 30, 2, b.y() - a.y() - 60)))
                    blocked = std::max(blocked, rect.right());
                if (blocked <= -1e300) break;
                x = blocked + kLaneGap;
            }
            lane = x;
        }
    }
    edge->setEndpoints(a, b, lane);
}

NodeItem* GraphScene::nodeItemAt(QPointF scenePos) const {
    for (QGraphicsItem* item : items(scenePos))
        if (item->type() == NodeItem::Type) return static_cast<NodeItem*>(item);
    return nullptr;
}

std::optional<GraphScene::ConnectTarget> GraphScene::connectTargetAt(QPointF scenePos) const {
    const QRectF reach(scenePos - QPointF(12, 12), QSizeF(24, 24));
    for (QGraphicsItem* item : items(reach)) {
        if (item->type() != NodeItem::Type) continue;
        auto* node = static_cast<NodeItem*>(item);
        if (auto port = node->portAt(scenePos); port && !port->output)
            return ConnectTarget{node, port->index};
    }
    // Released on a card: its first free input (or input 0, whose refusal explains why not).
    NodeItem* node = nodeItemAt(scenePos);
    if (node == nullptr || node->id() == connectFrom_) return std::nullopt;
    const graph::ModelSpec& spec = document_->spec();
    for (int port = 0; port < node->inputCount(); ++port) {
        const bool taken = std::any_of(spec.edges.begin(), spec.edges.end(), [&](const auto& e) {
            return e.to == node->id() && e.to_port == port;
        });
        if (!taken) return ConnectTarget{node, port};
    }
    return ConnectTarget{node, 0};
}

void GraphScene::clearConnectHighlight() {
    if (highlightedNode_ != nullptr) highlightedNode_->setHighlightedPort(std::nullopt, true);
    highlightedNode_ = nullptr;
}

void GraphScene::updateConnectDrag(QPointF scenePos) {
    NodeItem* from = nodeItem(connectFrom_);
    if (from == nullptr) return;
    const std::optional<ConnectTarget> target = connectTargetAt(scenePos);
    const QPointF end = target && target->node->inputCount() > 0
                            ? target->node->portScenePos({false, target->port})
                            : scenePos;
    connectPath_->setPath(EdgeItem::curve(from->portScenePos({true, connectFromPort_}), end));
    clearConnectHighlight();
    if (!target) {
        feedback_->hide();
        return;
    }
    const QString refusal = connectionRefusal(document_->spec(), connectFrom_, target->node->id(),
                                              target->port, connectFromPort_);
    if (target->node->inputCount() > 0) {
        target->node->setHighlightedPort(PortRef{false, target->port}, refusal.isEmpty());
        highlightedNode_ = target->node;
    }
    if (refusal.isEmpty())
        feedback_->hide();
    else
        showFeedback(refusal, scenePos);
}

void GraphScene::finishConnectDrag(QPointF scenePos) {
    const std::optional<ConnectTarget> target = connectTargetAt(scenePos);
    const graph::NodeId from = connectFrom_;
    const int fromPort = connectFromPort_;
    connectFrom_ = -1;
    delete connectPath_;
    connectPath_ = nullptr;
    clearConnectHighlight();
    if (!target) {
        feedback_->hide();
        return;
    }
    const graph::NodeId to = target->node->id();
    const QString refusal = connectionRefusal(document_->spec(), from, to, target->port, fromPort);
    if (!refusal.isEmpty()) {
        showFeedback(refusal, scenePos);
        emit statusMessage(refusal);
        return;
    }
    feedback_->hide();
    graph::ModelSpec spec = document_->spec();
    spec.connect(from, to, target->port, fromPort);
    QString source = nodeLabel(spec, from);
    if (NodeItem* item = nodeItem(from); item != nullptr && item->outputCount() > 1)
        source += QStringLiteral(" (%1)").arg(item->outputName(fromPort));
    QString text = tr("Connect %1 → %2").arg(source, nodeLabel(spec, to));
    if (target->node->inputCount() > 1) text += tr(" (input %1)").arg(target->port);
    document_->applyEdit(spec, text);
}

void GraphScene::commitMoves() {
    // A commit can shrink the scene rect; a view scrolled to its end then scrolls, and replays
    // the drag's last mouse move, which moves the cards and commits again, without end while
    // the moved cards bound the scene (all selected, dragged away from the scrolled edge). The
    // replayed move still moves the cards; the next move or the release commits it.
    if (committingMoves_) return;
    const QScopedValueRollback committing(committingMoves_, true);
    std::vector<std::pair<graph::NodeId, QPointF>> positions;
    bool changed = false;
    for (graph::NodeId id : selectedNodeIds()) {
        const QPointF pos = nodeItem(id)->pos();
        const graph::Node& node = document_->spec().node(id);
        changed = changed || pos != QPointF(node.x, node.y);
        positions.emplace_back(id, pos);
    }
    if (changed) document_->moveNodes(positions, dragId_);
}

void GraphScene::mousePressEvent(QGraphicsSceneMouseEvent* event) {
    if (event->button() == Qt::LeftButton) {
        NodeItem* node = nodeItemAt(event->scenePos());
        if (node == nullptr) {
            // The output port sticks out below the card; look for it within reach too.
            for (QGraphicsItem* item :
                 items(QRectF(event->scenePos() - QPointF(12, 12), QSizeF(24, 24))))
                if (item->type() == NodeItem::Type) node = static_cast<NodeItem*>(item);
        }
        if (node != nullptr) {
            const std::optional<PortRef> port = node->portAt(event->scenePos());
            if (port && port->output && node->hasOutput()) {
                connectFrom_ = node->id();
                connectFromPort_ = port->index;
                connectPath_ = addPath(QPainterPath(), QPen(colors::kAccent, 2, Qt::DashLine));
                connectPath_->setZValue(3);
                updateConnectDrag(event->scenePos());
                event->accept();
                return;
            }
        }
    }
    QGraphicsScene::mousePressEvent(event);
    if (event->button() == Qt::LeftButton && mouseGrabberItem() != nullptr &&
        mouseGrabberItem()->type() == NodeItem::Type) {
        moveDragActive_ = true;
        ++dragId_;
    }
}

void GraphScene::mouseMoveEvent(QGraphicsSceneMouseEvent* event) {
    if (connectPath_ != nullptr) {
        updateConnectDrag(event->scenePos());
        event->accept();
        return;
    }
    QGraphicsScene::mouseMoveEvent(event);
    if (moveDragActive_) commitMoves();
}

void GraphScene::mouseReleaseEvent(QGraphicsSceneMouseEvent* event) {
    if (connectPath_ != nullptr && event->button() == Qt::LeftButton) {
        finishConnectDrag(event->scenePos());
        event->accept();
        return;
    }
    QGraphicsScene::mouseReleaseEvent(event);
    if (moveDragActive_ && event->button() == Qt::LeftButton) {
        commitMoves();
        moveDragActive_ = false;
    }
}

void GraphScene::mouseDoubleClickEvent(QGraphicsSceneMouseEvent* event) {
    if (NodeItem* node = nodeItemAt(event->scenePos())) {
        if (node->titleRect().contains(node->mapFromScene(event->scenePos()))) {
            beginRename(node->id());
            event->accept();
            return;
        }
    }
    QGraphicsScene::mouseDoubleClickEvent(event);
}

void GraphScene::dragEnterEvent(QGraphicsSceneDragDropEvent* event) {
    const bool ours = document_->isOpen() && event->mimeData()->hasFormat(kLayerKindMimeType);
    event->setAccepted(ours);
    if (ours) event->acceptProposedAction();
}

void GraphScene::dragMoveEvent(QGraphicsSceneDragDropEvent* event) {
    dragEnterEvent(event);
}

void GraphScene::dragLeaveEvent(QGraphicsSceneDragDropEvent* event) {
    event->accept();
}

void GraphScene::dropEvent(QGraphicsSceneDragDropEvent* event) {
    if (!event->mimeData()->hasFormat(kLayerKindMimeType)) {
        event->ignore();
        return;
    }
    const QString kind = QString::fromUtf8(event->mimeData()->data(kLayerKindMimeType));
    if (addLayer(kind, event->scenePos()) < 0) {
        event->ignore();
        return;
    }
    event->setDropAction(Qt::CopyAction);
    event->accept();
}

void GraphScene::drawBackground(QPainter* painter, const QRectF& rect) {
    painter->fillRect(rect, colors::kCanvas);
    const double zoom = painter->worldTransform().m11();
    const double step = geometry::kGrid * (zoom < 0.5 ? 5 : 1);
    const double left = std::floor(rect.left() / step) * step;
    const double top = std::floor(rect.top() / step) * step;
    QVector<QLineF> minor, major;
    for (double x = left; x < rect.right(); x += step)
        (std::fmod(std::abs(x), geometry::kGrid * 5) < 0.5 ? major : minor)
            << QLineF(x, rect.top(), x, rect.bottom());
    for (double y = top; y < rect.bottom(); y += step)
        (std::fmod(std::abs(y), geometry::kGrid * 5) < 0.5 ? major : minor)
            << QLineF(rect.left(), y, rect.right(), y);
    painter->setPen(QPen(colors::kGridLine, 0));
    painter->drawLines(minor);
    painter->setPen(QPen(colors::kGridLine.darker(106), 0));
    painter->drawLines(major);
}

void GraphScene::beginRename(graph::NodeId id) {
    endRename();
    NodeItem* item = nodeItem(id);
    const graph::Node* node = document_->spec().find(id);
    if (item == nullptr || node == nullptr) return;
    auto* edit = new RenameLineEdit;
    edit->setObjectName(QStringLiteral("renameEditor"));
    edit->setText(QString::fromStdString(node->name));
    edit->setPlaceholderText(tr("name (empty: unnamed)"));
    edit->setToolTip(tr("Letters, digits and '_', not starting with a digit. Enter renames, "
                        "Escape cancels."));
    edit->onEscape = [this] { endRename(); };
    renameProxy_ = addWidget(edit);
    renameProxy_->setZValue(10);
    const QRectF title = item->titleRect();
    renameProxy_->setPos(item->mapToScene(title.topLeft()));
    renameProxy_->resize(title.size());
    renameEdit_ = edit;
    renameNode_ = id;
    connect(edit, &QLineEdit::returnPressed, this, &GraphScene::commitRename);
    connect(edit, &QLineEdit::editingFinished, this, [this] {
        // Focus left the field: keep a valid name, drop an invalid one.
        if (renameEdit_ != nullptr && !renameEdit_->hasFocus()) {
            commitRename();
            endRename();
        }
    });
    edit->selectAll();
    setFocusItem(renameProxy_);
    edit->setFocus();
}

QLineEdit* GraphScene::renameEditor() const {
    return renameEdit_;
}

void GraphScene::commitRename() {
    if (renameEdit_ == nullptr) return;
    const graph::NodeId id = renameNode_;
    graph::ModelSpec spec = document_->spec();
    graph::Node* node = spec.find(id);
    if (node == nullptr) {
        endRename();
        return;
    }
    const std::string name = renameEdit_->text().trimmed().toStdString();
    const QPointF below = renameProxy_->scenePos() + QPointF(0, renameProxy_->size().height());
    if (!name.empty() && !graph::is_valid_node_name(name)) {
        showFeedback(tr("'%1' is not a valid name: use letters, digits and '_', not starting "
                        "with a digit")
                         .arg(QString::fromStdString(name)),
                     below - QPointF(14, 8));
        return;
    }
    for (const graph::Node& other : spec.nodes)
        if (!name.empty() && other.id != id && other.name == name) {
            showFeedback(
                tr("'%1' is already the name of another node").arg(QString::fromStdString(name)),
                below - QPointF(14, 8));
            return;
        }
    const QString before = nodeLabel(spec, id);
    endRename();
    if (node->name == name) return;
    node->name = name;
    feedback_->hide();
    document_->applyEdit(
        spec, name.empty() ? tr("Clear the name of %1").arg(before)
                           : tr("Rename %1 to %2").arg(before, QString::fromStdString(name)));
}

void GraphScene::endRename() {
    if (renameProxy_ == nullptr) return;
    QGraphicsProxyWidget* proxy = renameProxy_;
    renameProxy_ = nullptr;
    renameEdit_ = nullptr;
    renameNode_ = -1;
    proxy->hide();
    proxy->deleteLater(); // may be inside one of the editor's own signals
}

} // namespace myelin::ui
