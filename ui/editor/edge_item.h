#pragma once
// A connection on the canvas: a cubic curve from an output port down to an input port, with an
// arrow head and the tensor shape it carries as a label.
#include <myelin/graph/model_spec.h>

#include <QGraphicsItem>
#include <QPainterPath>

#include <optional>

namespace myelin::ui {

class EdgeItem : public QGraphicsItem {
  public:
    enum { Type = UserType + 2 };

    explicit EdgeItem(const graph::Edge& edge);

    const graph::Edge& edge() const { return edge_; }
    int type() const override { return Type; }

    // The curve between the ports; with `laneX`, it leaves the direct way and runs down the
    // vertical lane at that x (around nodes that sit between the two ports).
    void setEndpoints(QPointF from, QPointF to, std::optional<double> laneX = std::nullopt);
    void setLabel(const QString& text);
    QString label() const { return label_; }

    // The curve from an output port at `from` to an input port at `to` (also used while a
    // connection is being dragged).
    static QPainterPath curve(QPointF from, QPointF to);
    static QPainterPath detour(QPointF from, QPointF to, double laneX);

    QRectF boundingRect() const override;
    QPainterPath shape() const override;
    void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

  protected:
    void hoverEnterEvent(QGraphicsSceneHoverEvent* event) override;
    void hoverLeaveEvent(QGraphicsSceneHoverEvent* event) override;

  private:
    QRectF labelRect() const;

    graph::Edge edge_;
    QPointF from_, to_;
    std::optional<double> lane_;
    QPainterPath path_;
    QString label_;
    bool hovered_ = false;
};

} // namespace myelin::ui
