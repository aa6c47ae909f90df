#include "editor/edge_item.h"

#include "widgets/theme.h"

#include <QFontDatabase>
#include <QFontMetricsF>
#include <QPainter>
#include <QPainterPathStroker>
#include <QStyleOptionGraphicsItem>

#include <cmath>

namespace myelin::ui {

namespace {

QFont labelFont() {
    QFont font = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    font.setPointSizeF(7.5);
    return font;
}

constexpr double kArrowLength = 7;
constexpr double kPortRadius = 5;
// Below this zoom shape labels on edges are left out.
constexpr double kLabelLevelOfDetail = 0.5;

} // namespace

EdgeItem::EdgeItem(const graph::Edge& edge) : edge_(edge) {
    setFlags(ItemIsSelectable);
    setAcceptHoverEvents(true);
    setZValue(0);
}

QPainterPath EdgeItem::curve(QPointF from, QPointF to) {
    // Leave downwards and arrive from above; an edge going up loops wider so it stays readable.
    const double dy = to.y() - from.y();
    const double pull = dy >= 0 ? std::max(30.0, dy / 2) : std::max(80.0, -dy / 2);
    QPainterPath path(from);
    path.cubicTo(from + QPointF(0, pull), to - QPointF(0, pull + kPortRadius), to);
    return path;
}

QPainterPath EdgeItem::detour(QPointF from, QPointF to, double laneX) {
    constexpr double kTurn = 50;
    const QPointF top(laneX, from.y() + kTurn);
    const QPointF bottom(laneX, to.y() - kTurn);
    QPainterPath path(from);
    path.cubicTo(from + QPointF(0, kTurn * 0.7), top - QPointF(0, kTurn * 0.7), top);
    path.lineTo(bottom);
    path.cubicTo(bottom + QPointF(0, kTurn * 0.7), to - QPointF(0, kTurn * 0.7 + kPortRadius), to);
    return path;
}

void EdgeItem::setEndpoints(QPointF from, QPointF to, std::optional<double> laneX) {
    if (from == from_ && to == to_ && laneX == lane_ && !path_.isEmpty()) return;
    prepareGeometryChange();
    from_ = from;
    to_ = to;
    lane_ = laneX;
    path_ = laneX ? detour(from, to, *laneX) : curve(from, to);
}

void EdgeItem::setLabel(const QString& text) {
    shape_ = text;
    updateLabel();
}

void EdgeItem::setStats(const QString& text, const QString& toolTip) {
    stats_ = text;
    setToolTip(toolTip);
    updateLabel();
}

void EdgeItem::updateLabel() {
    const QString text =
        stats_.isEmpty() || shape_.isEmpty() ? shape_ : shape_ + QStringLiteral(" · ") + stats_;
    if (text == label_) return;
    prepareGeometryChange();
    label_ = text;
}

QRectF EdgeItem::labelRect() const {
    if (label_.isEmpty()) return {};
    const QFontMetricsF metrics(labelFont());
    const QSizeF size(metrics.horizontalAdvance(label_) + 10, metrics.height() + 2);
    // Between cards stacked close together there is no room; the source card shows the shape.
    if (!lane_ && to_.y() - from_.y() < size.height() + 8) return {};
    // Beside the curve's midpoint, so the label needs no vertical room between the nodes.
    const QPointF mid = path_.pointAtPercent(0.5);
    return QRectF(QPointF(mid.x() + 7, mid.y() - size.height() / 2), size);
}

QRectF EdgeItem::boundingRect() const {
    return path_.boundingRect().adjusted(-8, -8, 8, 8).united(labelRect());
}

QPainterPath EdgeItem::shape() const {
    QPainterPathStroker stroker;
    stroker.setWidth(12);
    QPainterPath hit = stroker.createStroke(path_);
    if (!labelRect().isEmpty()) hit.addRect(labelRect());
    return hit;
}

void EdgeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
    painter->setRenderHint(QPainter::Antialiasing);
    const bool selected = option->state.testFlag(QStyle::State_Selected);
    const QColor color =
        selected ? colors::kAccent : (hovered_ ? colors::kEdge.darker(130) : colors::kEdge);
    painter->setPen(QPen(color, selected ? 2.6 : 1.6, Qt::SolidLine, Qt::RoundCap));
    painter->setBrush(Qt::NoBrush);
    painter->drawPath(path_);

    // Arrow head just above the input port, pointing along the curve's end.
    const QPointF tip = to_ - QPointF(0, kPortRadius + 1);
    const double angle = std::atan2(tip.y() - path_.pointAtPercent(0.97).y(),
                                    tip.x() - path_.pointAtPercent(0.97).x());
    const QPointF left =
        tip - QPointF(std::cos(angle - 0.45), std::sin(angle - 0.45)) * kArrowLength;
    const QPointF right =
        tip - QPointF(std::cos(angle + 0.45), std::sin(angle + 0.45)) * kArrowLength;
    painter->setPen(Qt::NoPen);
    painter->setBrush(color);
    painter->drawPolygon(QPolygonF({tip, left, right}));

    // Zoomed far out the shape label would be unreadable: leave it out.
    if (QStyleOptionGraphicsItem::levelOfDetailFromTransform(painter->worldTransform()) <
        kLabelLevelOfDetail)
        return;
    if (const QRectF rect = labelRect(); !rect.isEmpty()) {
        painter->setPen(QPen(selected ? colors::kAccent : colors::kBorder, 1));
        painter->setBrush(colors::kEdgeLabelBackground);
        painter->drawRoundedRect(rect, 4, 4);
        painter->setFont(labelFont());
        painter->setPen(selected ? colors::kAccent : colors::kMutedText);
        painter->drawText(rect, Qt::AlignCenter, label_);
    }
}

void EdgeItem::hoverEnterEvent(QGraphicsSceneHoverEvent* event) {
    hovered_ = true;
    update();
    QGraphicsItem::hoverEnterEvent(event);
}

void EdgeItem::hoverLeaveEvent(QGraphicsSceneHoverEvent* event) {
    hovered_ = false;
    update();
    QGraphicsItem::hoverLeaveEvent(event);
}

} // namespace myelin::ui
