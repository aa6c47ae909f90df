#pragma once
// One layer on the canvas: a card with the node's name, kind, key attributes, output shape and
// parameter count, input ports on its top edge and the output ports on its bottom edge (named
// on the card when there are several: LSTM's output, h_n, c_n). A node with an error turns red
// and shows the message on the card. Positions are the model's Node::x/y
// (the card's top-left corner).
#include <myelin/graph/analysis.h>
#include <myelin/train/layer_inspection.h>

#include <QColor>
#include <QGraphicsItem>
#include <QStringList>

#include <optional>
#include <vector>

namespace myelin::ui {

// Everything a card shows; a card whose content did not change is not laid out again.
struct NodeContent {
    graph::Node node;                        // position zeroed: moving does not change the card
    std::optional<graph::TensorType> output; // port 0
    std::vector<graph::TensorType> outputs;  // every port's, when there are several
    int64_t params = 0;
    std::vector<graph::Problem> problems;
    std::vector<bool> inputConnected;
    std::vector<bool> outputConnected; // by output port
    bool operator==(const NodeContent& other) const = default;
};

// The health badge beside a card during and after a run (train::LayerBadge): a sparkline of
// the layer's gradient norm so far and one line of text, framed in the health's colour.
struct NodeBadge {
    QColor color;
    QString text;              // "0.42 · 44% zeros"
    QString toolTip;           // the health and why
    std::vector<double> spark; // gradient norms, oldest first (log scale when drawn)
    QString edgeText;          // the output's statistics for its outgoing edges; may be empty
    QString edgeToolTip;
    train::LayerHealth health = train::LayerHealth::Unknown;
    bool operator==(const NodeBadge& other) const = default;
};
NodeBadge nodeBadge(const train::LayerBadge& badge);

struct PortRef {
    bool output = false;
    int index = 0; // input or output port index
    bool operator==(const PortRef& other) const = default;
};

class NodeItem : public QGraphicsItem {
  public:
    enum { Type = UserType + 1 };

    explicit NodeItem(graph::NodeId id);

    graph::NodeId id() const { return id_; }
    int type() const override { return Type; }

    // Refreshes what the card shows.
    void setContent(NodeContent content);
    // Shows (or with nullopt removes) the health badge to the right of the card.
    void setBadge(std::optional<NodeBadge> badge);
    const std::optional<NodeBadge>& badge() const { return badge_; }

    int inputCount() const { return inputCount_; }
    int outputCount() const { return int(outputNames_.size()); }
    bool hasOutput() const { return !outputNames_.empty(); }
    // The output port's name ("h_n") and inferred shape ("[N, 128]", "?" when unknown).
    QString outputName(int port) const { return outputNames_.value(port); }
    QString outputShape(int port) const;
    QPointF portScenePos(PortRef port) const;
    // The port within reach of `scenePos`, if any.
    std::optional<PortRef> portAt(QPointF scenePos) const;
    // Marks a port while a connection is dragged over it (nullopt clears).
    void setHighlightedPort(std::optional<PortRef> port, bool acceptable);

    bool hasError() const { return severity_ == Severity::Error; }
    // The problem message shown on the card (empty when none).
    QString shownProblem() const { return problem_; }
    QString title() const { return title_; }
    QRectF titleRect() const;

    QRectF boundingRect() const override;
    QPainterPath shape() const override;
    void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

  protected:
    QVariant itemChange(GraphicsItemChange change, const QVariant& value) override;
    void hoverMoveEvent(QGraphicsSceneHoverEvent* event) override;
    void hoverLeaveEvent(QGraphicsSceneHoverEvent* event) override;

  private:
    enum class Severity { None, Warning, Error };
    QRectF cardRect() const { return QRectF(0, 0, width_, height_); }
    QRectF badgeRect() const;
    void paintBadge(QPainter* painter) const;
    QPointF portPos(PortRef port) const;

    graph::NodeId id_;
    QString title_, tag_, shapeText_, paramsText_, problem_, cardToolTip_;
    QStringList portNames_, outputNames_;
    QStringList attrLines_, problemLines_;
    QColor color_;
    Severity severity_ = Severity::None;
    int inputCount_ = 1;
    NodeContent content_;
    bool hasContent_ = false;
    double width_ = 0, height_ = 0;
    std::optional<PortRef> hovered_, highlighted_;
    bool highlightOk_ = true;
    std::optional<NodeBadge> badge_;
};

} // namespace myelin::ui
