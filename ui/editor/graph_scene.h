#pragma once
// The canvas's scene: one NodeItem per model node and one EdgeItem per edge, kept in step with
// the ProjectDocument (the model is the truth; items are rebuilt from it after every change).
// It turns gestures into document edits: dragging nodes (one merged Move command per drag),
// dragging from an output port (any of a node's) to an input port (Connect with that from_port,
// or the reason it is refused beside the cursor), dropping a layer kind from the palette, and
// renaming a node in place.
#include <myelin/graph/model_spec.h>

#include <QGraphicsScene>
#include <QPointer>

#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

class QGraphicsPathItem;
class QLineEdit;
class QGraphicsProxyWidget;
class QTimer;

namespace myelin::ui {

class EdgeItem;
class FeedbackItem;
class NodeItem;
struct NodeBadge;
class ProjectDocument;
struct PortRef;

class GraphScene : public QGraphicsScene {
    Q_OBJECT

  public:
    // The mime type of a palette drag: the layer kind's name as UTF-8.
    static constexpr const char* kLayerKindMimeType = "application/x-myelin-layer-kind";

    explicit GraphScene(ProjectDocument* document, QObject* parent = nullptr);
    ~GraphScene() override;

    ProjectDocument* document() const { return document_; }
    NodeItem* nodeItem(graph::NodeId id) const;
    // Health badges of a run by node (train::LayerBadge via nodeBadge); nodes not in `badges`
    // lose theirs. An empty map removes them all.
    void setBadges(const std::unordered_map<graph::NodeId, NodeBadge>& badges);
    EdgeItem* edgeItem(const graph::Edge& edge) const;
    // Selected nodes in model order; selected edges.
    std::vector<graph::NodeId> selectedNodeIds() const;
    std::vector<graph::Edge> selectedEdges() const;
    void selectNodes(const std::vector<graph::NodeId>& ids);
    // The bounding rectangle of every node (empty when there is none).
    QRectF nodesBoundingRect() const;

    bool snapToGrid() const { return snapToGrid_; }
    void setSnapToGrid(bool on) { snapToGrid_ = on; }

    // Adds a node of `kind` centred horizontally on `scenePos` (one "Add <kind>" command) and
    // selects it. Returns its id, or -1 for an unknown kind.
    graph::NodeId addLayer(const QString& kind, QPointF scenePos);

    // The reason shown beside the cursor for the last refused connection, while it is shown.
    QString connectionFeedback() const;
    // Shows `text` in the feedback bubble at `scenePos` for a few seconds.
    void showFeedback(const QString& text, QPointF scenePos);

    // Edits the node's name in place (Enter commits, Escape cancels). Names are checked as they
    // would be on save; an invalid one is explained beside the field and not committed.
    void beginRename(graph::NodeId id);
    QLineEdit* renameEditor() const;

    // Called by NodeItem.
    QPointF snappedNodePosition(QPointF pos) const;
    void nodeItemMoved(NodeItem* item);

  signals:
    void statusMessage(const QString& text);

  protected:
    void mousePressEvent(QGraphicsSceneMouseEvent* event) override;
    void mouseMoveEvent(QGraphicsSceneMouseEvent* event) override;
    void mouseReleaseEvent(QGraphicsSceneMouseEvent* event) override;
    void mouseDoubleClickEvent(QGraphicsSceneMouseEvent* event) override;
    void dragEnterEvent(QGraphicsSceneDragDropEvent* event) override;
    void dragMoveEvent(QGraphicsSceneDragDropEvent* event) override;
    void dragLeaveEvent(QGraphicsSceneDragDropEvent* event) override;
    void dropEvent(QGraphicsSceneDragDropEvent* event) override;
    void drawBackground(QPainter* painter, const QRectF& rect) override;

  private:
    using EdgeKey = std::tuple<graph::NodeId, graph::NodeId, int, int>; // from, to, ports
    struct ConnectTarget {
        NodeItem* node = nullptr;
        int port = 0;
    };

    void syncFromDocument(bool layoutOnly);
    void updateEdgeGeometry(EdgeItem* edge);
    NodeItem* nodeItemAt(QPointF scenePos) const;
    std::optional<ConnectTarget> connectTargetAt(QPointF scenePos) const;
    void updateConnectDrag(QPointF scenePos);
    void finishConnectDrag(QPointF scenePos);
    void clearConnectHighlight();
    void commitMoves();
    void commitRename();
    void endRename();

    ProjectDocument* document_;
    std::unordered_map<graph::NodeId, NodeItem*> nodes_;
    std::map<EdgeKey, EdgeItem*> edges_;
    std::unordered_map<graph::NodeId, std::vector<EdgeItem*>> edgesOfNode_;
    bool syncing_ = false;
    bool snapToGrid_ = true;

    // A move drag in progress: its id merges its Move commands.
    bool moveDragActive_ = false;
    int dragId_ = 0;
    bool committingMoves_ = false; // see commitMoves

    // A connection drag in progress.
    graph::NodeId connectFrom_ = -1;
    int connectFromPort_ = 0;
    QGraphicsPathItem* connectPath_ = nullptr;
    NodeItem* highlightedNode_ = nullptr;

    FeedbackItem* feedback_ = nullptr;
    QTimer* feedbackTimer_ = nullptr;

    QGraphicsProxyWidget* renameProxy_ = nullptr;
    QPointer<QLineEdit> renameEdit_;
    graph::NodeId renameNode_ = -1;
};

} // namespace myelin::ui
