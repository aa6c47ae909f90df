#pragma once
// The layer palette: every layer kind of the registry, grouped by category in registry order,
// with a search box filtering by name and documentation. Kinds are dragged onto the canvas
// (GraphScene::kLayerKindMimeType) or double-clicked to add after the selected node.
#include <QStringList>
#include <QWidget>

class QLineEdit;
class QMimeData;
class QTreeWidget;
class QTreeWidgetItem;

namespace myelin::ui {

class LayerPalette : public QWidget {
    Q_OBJECT

  public:
    explicit LayerPalette(QWidget* parent = nullptr);

    QLineEdit* searchBox() const { return search_; }
    QTreeWidget* tree() const { return tree_; }
    // Shows the kinds whose name or documentation contains `text` (case-insensitive).
    void setFilter(const QString& text);
    // The kinds currently listed, in order.
    QStringList visibleKinds() const;
    // What dragging `kind` carries.
    static QMimeData* mimeDataForKind(const QString& kind);

  signals:
    // A kind was double-clicked (or Enter pressed on it).
    void kindActivated(const QString& kind);

  private:
    void activate(QTreeWidgetItem* item);

    QLineEdit* search_ = nullptr;
    QTreeWidget* tree_ = nullptr;
};

} // namespace myelin::ui
