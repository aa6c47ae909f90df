#pragma once
// The canvas's view: zoom (wheel, Ctrl+wheel, pinch), pan (middle button, or Space + drag),
// fit (F), rubber-band selection, and the context-menu request the editor answers.
#include <myelin/graph/model_spec.h>

#include <QGraphicsView>

namespace myelin::ui {

class GraphScene;

class GraphView : public QGraphicsView {
    Q_OBJECT

  public:
    explicit GraphView(GraphScene* scene, QWidget* parent = nullptr);

    double zoom() const;
    // Multiplies the zoom (clamped to a readable range), keeping `viewportAnchor` in place.
    void zoomBy(double factor, QPoint viewportAnchor);
    void zoomBy(double factor);
    // The whole model in view (never magnified beyond 100%).
    void fitAll();
    // The view for a model just opened: all of it when it fits at a readable zoom, otherwise
    // its top at that zoom.
    void showModel();
    // Scrolls so the node is in the middle.
    void centerOnNode(graph::NodeId id);

  signals:
    void contextMenuRequested(QPointF scenePos, QPoint globalPos);

  protected:
    bool viewportEvent(QEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;
    void keyReleaseEvent(QKeyEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void contextMenuEvent(QContextMenuEvent* event) override;

  private:
    GraphScene* graphScene_;
    bool spaceHeld_ = false;
    bool panning_ = false;
    QPoint panLast_;
};

} // namespace myelin::ui
