#include "editor/graph_view.h"

#include "editor/graph_scene.h"
#include "editor/node_item.h"

#include <QContextMenuEvent>
#include <QGestureEvent>
#include <QNativeGestureEvent>
#include <QPinchGesture>
#include <QScrollBar>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace myelin::ui {

namespace {
constexpr double kMinZoom = 0.15;
constexpr double kMaxZoom = 3.0;
} // namespace

GraphView::GraphView(GraphScene* scene, QWidget* parent)
    : QGraphicsView(scene, parent), graphScene_(scene) {
    setObjectName(QStringLiteral("graphView"));
    setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
    setDragMode(QGraphicsView::RubberBandDrag);
    setRubberBandSelectionMode(Qt::IntersectsItemShape);
    setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
    setResizeAnchor(QGraphicsView::AnchorViewCenter);
    setViewportUpdateMode(QGraphicsView::SmartViewportUpdate);
    setFrameShape(QFrame::NoFrame);
    setAcceptDrops(true);
    setFocusPolicy(Qt::StrongFocus);
    viewport()->grabGesture(Qt::PinchGesture);
}

double GraphView::zoom() const {
    return transform().m11();
}

void GraphView::zoomBy(double factor, QPoint viewportAnchor) {
    const double target = std::clamp(zoom() * factor, kMinZoom, kMaxZoom);
    factor = target / zoom();
    if (std::abs(factor - 1) < 1e-9) return;
    const QPointF before = mapToScene(viewportAnchor);
    const ViewportAnchor anchor = transformationAnchor();
    setTransformationAnchor(QGraphicsView::NoAnchor);
    scale(factor, factor);
    // Keep the scene point under the anchor where it was.
    const QPointF drift = mapFromScene(before) - QPointF(viewportAnchor);
    horizontalScrollBar()->setValue(horizontalScrollBar()->value() + int(std::round(drift.x())));
    verticalScrollBar()->setValue(verticalScrollBar()->value() + int(std::round(drift.y())));
    setTransformationAnchor(anchor);
}

void GraphView::zoomBy(double factor) {
    zoomBy(factor, viewport()->rect().center());
}

void GraphView::fitAll() {
    const QRectF bounds = graphScene_->nodesBoundingRect();
    if (bounds.isEmpty()) {
        resetTransform();
        centerOn(0, 0);
        return;
    }
    fitInView(bounds.adjusted(-40, -40, 40, 40), Qt::KeepAspectRatio);
    if (zoom() > 1.0) {
        resetTransform();
        centerOn(bounds.center());
    } else if (zoom() < kMinZoom) {
        setTransform(QTransform::fromScale(kMinZoom, kMinZoom));
        centerOn(bounds.center());
    }
}

void GraphView::showModel() {
    constexpr double kReadable = 0.8;
    constexpr double kMargin = 40;
    const QRectF bounds = graphScene_->nodesBoundingRect();
    fitAll();
    if (bounds.isEmpty() || zoom() >= kReadable) return;
    setTransform(QTransform::fromScale(kReadable, kReadable));
    const QSizeF visible = QSizeF(viewport()->size()) / kReadable;
    centerOn(bounds.center().x(), bounds.top() - kMargin + visible.height() / 2);
}

void GraphView::centerOnNode(graph::NodeId id) {
    if (NodeItem* item = graphScene_->nodeItem(id)) centerOn(item);
}

bool GraphView::viewportEvent(QEvent* event) {
    if (event->type() == QEvent::Gesture) {
        auto* gesture = static_cast<QGestureEvent*>(event);
        if (auto* pinch = static_cast<QPinchGesture*>(gesture->gesture(Qt::PinchGesture))) {
            if (pinch->changeFlags().testFlag(QPinchGesture::ScaleFactorChanged))
                zoomBy(pinch->scaleFactor(), mapFromGlobal(pinch->centerPoint().toPoint()));
            gesture->accept(pinch);
            return true;
        }
    }
    if (event->type() == QEvent::NativeGesture) {
        auto* native = static_cast<QNativeGestureEvent*>(event);
        if (native->gestureType() == Qt::ZoomNativeGesture) {
            zoomBy(1 + native->value(), native->position().toPoint());
            return true;
        }
    }
    return QGraphicsView::viewportEvent(event);
}

void GraphView::wheelEvent(QWheelEvent* event) {
    // Shift+wheel scrolls sideways; the plain and Ctrl wheel zoom around the cursor.
    if (event->modifiers().testFlag(Qt::ShiftModifier)) {
        QGraphicsView::wheelEvent(event);
        return;
    }
    const double steps = event->angleDelta().y() / 120.0;
    if (steps == 0) {
        QGraphicsView::wheelEvent(event);
        return;
    }
    zoomBy(std::pow(1.15, steps), event->position().toPoint());
    event->accept();
}

void GraphView::keyPressEvent(QKeyEvent* event) {
    if (event->key() == Qt::Key_Space && !event->isAutoRepeat() &&
        scene()->focusItem() == nullptr) {
        spaceHeld_ = true;
        viewport()->setCursor(Qt::OpenHandCursor);
        event->accept();
        return;
    }
    QGraphicsView::keyPressEvent(event);
}

void GraphView::keyReleaseEvent(QKeyEvent* event) {
    if (event->key() == Qt::Key_Space && !event->isAutoRepeat() && spaceHeld_) {
        spaceHeld_ = false;
        if (!panning_) viewport()->unsetCursor();
        event->accept();
        return;
    }
    QGraphicsView::keyReleaseEvent(event);
}

void GraphView::mousePressEvent(QMouseEvent* event) {
    if (event->button() == Qt::MiddleButton || (event->button() == Qt::LeftButton && spaceHeld_)) {
        panning_ = true;
        panLast_ = event->position().toPoint();
        viewport()->setCursor(Qt::ClosedHandCursor);
        event->accept();
        return;
    }
    QGraphicsView::mousePressEvent(event);
}

void GraphView::mouseMoveEvent(QMouseEvent* event) {
    if (panning_) {
        const QPoint delta = event->position().toPoint() - panLast_;
        panLast_ = event->position().toPoint();
        horizontalScrollBar()->setValue(horizontalScrollBar()->value() - delta.x());
        verticalScrollBar()->setValue(verticalScrollBar()->value() - delta.y());
        event->accept();
        return;
    }
    QGraphicsView::mouseMoveEvent(event);
}

void GraphView::mouseReleaseEvent(QMouseEvent* event) {
    if (panning_ && (event->button() == Qt::MiddleButton || event->button() == Qt::LeftButton)) {
        panning_ = false;
        if (spaceHeld_)
            viewport()->setCursor(Qt::OpenHandCursor);
        else
            viewport()->unsetCursor();
        event->accept();
        return;
    }
    QGraphicsView::mouseReleaseEvent(event);
}

void GraphView::contextMenuEvent(QContextMenuEvent* event) {
    emit contextMenuRequested(mapToScene(event->pos()), event->globalPos());
    event->accept();
}

} // namespace myelin::ui
