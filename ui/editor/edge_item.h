#pragma once
// A connection on the canvas: a cubic curve from an output port down to an input port, with an
// arrow head and the tensor shape it carries as a label (and, while a run is inspected, the
// statistics of that tensor at the inspected step).
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
    // The tensor shape it carries ("[N, 16]").
    void setLabel(const QString& text);
    QString label() const { return shape_; }
    // Statistics of the tensor at the inspected step ("μ 0.12 σ 0.98 · 44% zeros"), shown after
    // the shape; empty: none. `toolTip` says what they are.
    void setStats(const QString& text, const QString& toolTip);
    const QString& stats() const { return stats_; }

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
    void updateLabel();

    graph::Edge edge_;
    QPointF from_, to_;
    std::optional<double> lane_;
    QPainterPath path_;
    QString shape_, stats_;
    QString label_; // what is drawn: the shape, then the statistics
    bool hovered_ = false;
};

} // namespace myelin::ui
