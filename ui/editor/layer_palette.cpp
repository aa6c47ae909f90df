#include "editor/layer_palette.h"

#include "editor/graph_scene.h"
#include "widgets/theme.h"

#include <myelin/graph/registry.h>

#include <QLineEdit>
#include <QMimeData>
#include <QPainter>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <vector>

namespace myelin::ui {

namespace {

constexpr int kKindRole = Qt::UserRole + 1;

// A rounded swatch in the category's colour.
QIcon categoryIcon(graph::Category category) {
    QPixmap pixmap(28, 28);
    pixmap.setDevicePixelRatio(2);
    pixmap.fill(Qt::transparent);
    QPainter painter(&pixmap);
    painter.setRenderHint(QPainter::Antialiasing);
    painter.setPen(Qt::NoPen);
    painter.setBrush(categoryColor(category));
    painter.drawRoundedRect(QRectF(2, 2, 10, 10), 3, 3);
    return QIcon(pixmap);
}

// Drags carry the kind's name in our mime type.
class PaletteTree : public QTreeWidget {
  public:
    using QTreeWidget::QTreeWidget;

  protected:
    QStringList mimeTypes() const override {
        return {QString::fromLatin1(GraphScene::kLayerKindMimeType)};
    }
    QMimeData* mimeData(const QList<QTreeWidgetItem*>& items) const override {
        for (QTreeWidgetItem* item : items)
            if (const QString kind = item->data(0, kKindRole).toString(); !kind.isEmpty())
                return LayerPalette::mimeDataForKind(kind);
        return nullptr;
    }
    Qt::DropActions supportedDropActions() const override { return Qt::CopyAction; }
};

} // namespace

LayerPalette::LayerPalette(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("layerPalette"));

    search_ = new QLineEdit(this);
    search_->setObjectName(QStringLiteral("paletteSearch"));
    search_->setPlaceholderText(tr("Search layers"));
    search_->setClearButtonEnabled(true);
    connect(search_, &QLineEdit::textChanged, this, &LayerPalette::setFilter);

    tree_ = new PaletteTree(this);
    tree_->setObjectName(QStringLiteral("paletteTree"));
    tree_->setHeaderHidden(true);
    tree_->setRootIsDecorated(true);
    tree_->setIndentation(14);
    tree_->setDragEnabled(true);
    tree_->setDragDropMode(QAbstractItemView::DragOnly);
    tree_->setDefaultDropAction(Qt::CopyAction);
    tree_->setSelectionMode(QAbstractItemView::SingleSelection);
    tree_->setIconSize(QSize(14, 14));
    tree_->setUniformRowHeights(true);
    // Styled (the studio sheet's item padding) before the items are added, as the uniform row
    // height is measured once.
    tree_->ensurePolished();

    QFont categoryFont = tree_->font();
    categoryFont.setBold(true);
    // By category (plugin kinds come after the built-in ones in the registry, so group here).
    std::vector<const graph::LayerKind*> ordered;
    for (const graph::LayerKind& kind : graph::layer_kinds())
        ordered.push_back(&kind);
    std::stable_sort(ordered.begin(), ordered.end(),
                     [](const graph::LayerKind* a, const graph::LayerKind* b) {
                         return int(a->category) < int(b->category);
                     });
    QTreeWidgetItem* category = nullptr;
    int currentCategory = -1;
    for (const graph::LayerKind* kind : ordered) {
        if (int(kind->category) != currentCategory) {
            currentCategory = int(kind->category);
            category =
                new QTreeWidgetItem(tree_, {QString::fromLatin1(graph::to_string(kind->category))});
            category->setFlags(Qt::ItemIsEnabled);
            category->setFont(0, categoryFont);
            category->setForeground(0, colors::kMutedText);
        }
        const QString name = QString::fromStdString(kind->name);
        auto* item = new QTreeWidgetItem(category, {name});
        item->setData(0, kKindRole, name);
        item->setIcon(0, categoryIcon(kind->category));
        QString tip =
            QStringLiteral("<b>%1</b><br>%2")
                .arg(name.toHtmlEscaped(), QString::fromStdString(kind->doc).toHtmlEscaped());
        if (!kind->origin.empty())
            tip += QStringLiteral("<br><i>%1</i>")
                       .arg(tr("From the plugin %1")
                                .arg(QString::fromStdString(kind->origin).toHtmlEscaped()));
        item->setToolTip(0, tip);
        item->setStatusTip(0, QString::fromStdString(kind->doc));
        item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsDragEnabled);
    }
    tree_->expandAll();
    connect(tree_, &QTreeWidget::itemDoubleClicked, this,
            [this](QTreeWidgetItem* item) { activate(item); });
    connect(tree_, &QTreeWidget::itemActivated, this,
            [this](QTreeWidgetItem* item) { activate(item); });

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(8, 8, 8, 0);
    layout->setSpacing(6);
    layout->addWidget(search_);
    layout->addWidget(tree_, 1);
}

void LayerPalette::activate(QTreeWidgetItem* item) {
    const QString kind = item != nullptr ? item->data(0, kKindRole).toString() : QString();
    if (!kind.isEmpty()) emit kindActivated(kind);
}

void LayerPalette::setFilter(const QString& text) {
    if (search_->text() != text) search_->setText(text); // comes back here through textChanged
    const QString needle = text.trimmed();
    for (int c = 0; c < tree_->topLevelItemCount(); ++c) {
        QTreeWidgetItem* category = tree_->topLevelItem(c);
        bool anyVisible = false;
        for (int k = 0; k < category->childCount(); ++k) {
            QTreeWidgetItem* item = category->child(k);
            const graph::LayerKind* kind =
                graph::find_layer_kind(item->data(0, kKindRole).toString().toStdString());
            const bool match =
                needle.isEmpty() || item->text(0).contains(needle, Qt::CaseInsensitive) ||
                (kind != nullptr &&
                 QString::fromStdString(kind->doc).contains(needle, Qt::CaseInsensitive));
            item->setHidden(!match);
            anyVisible = anyVisible || match;
        }
        category->setHidden(!anyVisible);
    }
    tree_->expandAll();
}

QStringList LayerPalette::visibleKinds() const {
    QStringList kinds;
    for (int c = 0; c < tree_->topLevelItemCount(); ++c) {
        QTreeWidgetItem* category = tree_->topLevelItem(c);
        if (category->isHidden()) continue;
        for (int k = 0; k < category->childCount(); ++k)
            if (!category->child(k)->isHidden())
                kinds << category->child(k)->data(0, kKindRole).toString();
    }
    return kinds;
}

QMimeData* LayerPalette::mimeDataForKind(const QString& kind) {
    auto* mime = new QMimeData;
    mime->setData(GraphScene::kLayerKindMimeType, kind.toUtf8());
    mime->setText(kind);
    return mime;
}

} // namespace myelin::ui
