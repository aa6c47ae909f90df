#pragma once
// The Feature Maps view's two drawing widgets (private to inspect/feature_maps_view.cpp): the
// grid of channel tiles and the enlarged channel with its shade bar, and the small text and
// geometry helpers they share with the view.
#include "inspect/feature_maps_view.h"
#include "widgets/theme.h"

#include <QEvent>
#include <QHelpEvent>
#include <QImage>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWidget>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

namespace myelin::ui {

namespace feature_map_detail {

inline QString number(double v) {
    return std::isfinite(v) ? QString::number(v, 'g', 4) : QStringLiteral("—");
}

// `image` scaled by whole pixels where it fits (crisp squares), kept in proportion, centred.
inline QRect fitted(const QSize& image, const QRect& area) {
    if (image.isEmpty() || area.isEmpty()) return {};
    double scale =
        std::min(double(area.width()) / image.width(), double(area.height()) / image.height());
    if (scale >= 1) scale = std::floor(scale);
    const QSize size(std::max(1, int(image.width() * scale)),
                     std::max(1, int(image.height() * scale)));
    return QRect(area.x() + (area.width() - size.width()) / 2,
                 area.y() + (area.height() - size.height()) / 2, size.width(), size.height());
}

inline QString statsText(const train::ChannelStats& s) {
    QString text =
        QObject::tr("min %1 · max %2 · mean %3").arg(number(s.min), number(s.max), number(s.mean));
    if (s.nonfinite > 0) text += QObject::tr(" · %1 NaN/Inf").arg(s.nonfinite);
    return text;
}

} // namespace feature_map_detail

using feature_map_detail::fitted;
using feature_map_detail::number;
using feature_map_detail::statsText;

// ---- the grid of channels -------------------------------------------------------------------

struct ChannelTile {
    int channel = 0;
    QImage image;
    train::ChannelStats stats;
};

class ChannelGrid : public QWidget {
  public:
    explicit ChannelGrid(QWidget* parent) : QWidget(parent) {
        setObjectName(QStringLiteral("featureMapsGrid"));
        setMinimumSize(220, 180);
        setMouseTracking(true);
        setCursor(Qt::PointingHandCursor);
    }

    std::function<void(int)> onClick;

    void setTiles(std::vector<ChannelTile> tiles, int selected) {
        tiles_ = std::move(tiles);
        selected_ = selected;
        relayout();
        update();
    }
    void setSelected(int channel) {
        selected_ = channel;
        update();
    }
    const std::vector<ChannelTile>& tiles() const { return tiles_; }
    QRect rectOf(int channel) const {
        for (size_t i = 0; i < tiles_.size(); ++i)
            if (tiles_[i].channel == channel && i < rects_.size()) return rects_[i];
        return {};
    }
    QSize sizeHint() const override { return {640, 480}; }

  protected:
    void resizeEvent(QResizeEvent* event) override {
        QWidget::resizeEvent(event);
        relayout();
    }

    void paintEvent(QPaintEvent*) override {
        QPainter p(this);
        p.fillRect(rect(), colors::kSurface);
        QFont small = font();
        small.setPointSizeF(std::max(7.0, small.pointSizeF() - 1.5));
        p.setFont(small);
        const int label = QFontMetrics(small).height();
        for (size_t i = 0; i < tiles_.size() && i < rects_.size(); ++i) {
            const QRect& r = rects_[i];
            p.setPen(colors::kMutedText);
            p.drawText(QRect(r.x(), r.y() - label, r.width(), label),
                       Qt::AlignHCenter | Qt::AlignBottom, QString::number(tiles_[i].channel));
            p.drawImage(r, tiles_[i].image); // nearest neighbour: every value a crisp square
            p.setPen(QPen(tiles_[i].channel == selected_ ? colors::kAccent : colors::kBorder,
                          tiles_[i].channel == selected_ ? 3 : 1));
            p.setBrush(Qt::NoBrush);
            p.drawRect(r.adjusted(-1, -1, 0, 0));
        }
    }

    void mousePressEvent(QMouseEvent* event) override {
        const int channel = channelAt(event->position().toPoint());
        if (channel >= 0 && event->button() == Qt::LeftButton && onClick) onClick(channel);
    }

    bool event(QEvent* event) override {
        if (event->type() == QEvent::ToolTip) {
            auto* help = static_cast<QHelpEvent*>(event);
            const int channel = channelAt(help->pos());
            for (const auto& tile : tiles_)
                if (tile.channel == channel) {
                    QToolTip::showText(help->globalPos(),
                                       tr("Channel %1: %2 (click to enlarge)")
                                           .arg(channel)
                                           .arg(statsText(tile.stats)),
                                       this);
                    return true;
                }
            QToolTip::hideText();
            return true;
        }
        return QWidget::event(event);
    }

  private:
    int channelAt(const QPoint& pos) const {
        for (size_t i = 0; i < tiles_.size() && i < rects_.size(); ++i)
            if (rects_[i].adjusted(-3, -3, 3, 3).contains(pos)) return tiles_[i].channel;
        return -1;
    }

    // The column count that gives the largest tiles for the area; whole-pixel scaling when
    // the tiles are larger than the maps.
    void relayout() {
        rects_.clear();
        const int n = int(tiles_.size());
        if (n == 0 || tiles_[0].image.isNull()) return;
        QFont small = font();
        small.setPointSizeF(std::max(7.0, small.pointSizeF() - 1.5));
        const int label = QFontMetrics(small).height();
        const int gap = 8;
        const double mapW = tiles_[0].image.width(), mapH = tiles_[0].image.height();
        double best = 0;
        int columns = 1;
        for (int c = 1; c <= n; ++c) {
            const int rows = (n + c - 1) / c;
            const double w = (width() - gap * (c + 1)) / double(c);
            const double h = (height() - gap * (rows + 1)) / double(rows) - label;
            const double scale = std::min(w / mapW, h / mapH);
            if (scale > best) best = scale, columns = c;
        }
        if (best <= 0) return;
        if (best >= 1) best = std::floor(best);
        const int tileW = std::max(1, int(mapW * best)), tileH = std::max(1, int(mapH * best));
        const int rows = (n + columns - 1) / columns;
        const int usedW = columns * tileW + (columns - 1) * gap;
        const int usedH = rows * (tileH + label) + (rows - 1) * gap;
        const int x0 = std::max(gap, (width() - usedW) / 2);
        const int y0 = std::max(gap, (height() - usedH) / 2);
        for (int i = 0; i < n; ++i)
            rects_.emplace_back(x0 + (i % columns) * (tileW + gap),
                                y0 + (i / columns) * (tileH + label + gap) + label, tileW, tileH);
    }

    std::vector<ChannelTile> tiles_;
    std::vector<QRect> rects_;
    int selected_ = -1;
};

// ---- the enlarged channel -------------------------------------------------------------------

// The channel's image as large as fits, and under it the shade bar from min to max.
class ChannelPanel : public QWidget {
  public:
    explicit ChannelPanel(QWidget* parent) : QWidget(parent) {
        setObjectName(QStringLiteral("featureMapsEnlarged"));
        setMinimumSize(200, 200);
    }

    void showChannel(const QImage& image, const train::ChannelStats& stats,
                     const QString& caption) {
        image_ = image;
        stats_ = stats;
        caption_ = caption;
        update();
    }
    void clear(const QString& hint) {
        image_ = QImage();
        caption_ = hint;
        update();
    }
    const QString& caption() const { return caption_; }
    QSize sizeHint() const override { return {360, 420}; }

  protected:
    void paintEvent(QPaintEvent*) override {
        QPainter p(this);
        p.fillRect(rect(), colors::kSurface);
        const QRect inner = rect().adjusted(12, 10, -12, -10);
        const QFontMetrics metrics(font());
        const int line = metrics.height();
        p.setPen(image_.isNull() ? colors::kMutedText : colors::kText);
        const QRect captionRect =
            metrics.boundingRect(inner, Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, caption_);
        p.drawText(captionRect, Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, caption_);
        if (image_.isNull()) return;
        // Bar and its two numbers at the bottom; the image in between.
        const QRect barRect(inner.x(), inner.bottom() - line - 12, inner.width(), 10);
        const QRect imageArea(inner.x(), captionRect.bottom() + 8, inner.width(),
                              barRect.top() - captionRect.bottom() - 16);
        const QRect target = fitted(image_.size(), imageArea);
        p.drawImage(target, image_);
        p.setPen(colors::kBorder);
        p.drawRect(target.adjusted(-1, -1, 0, 0));
        for (int x = 0; x < barRect.width(); ++x) {
            p.setPen(QColor(FeatureMapsView::shade(double(x) / std::max(1, barRect.width() - 1))));
            p.drawLine(barRect.x() + x, barRect.top(), barRect.x() + x, barRect.bottom());
        }
        p.setPen(colors::kMutedText);
        const QRect numbers(inner.x(), barRect.bottom() + 2, inner.width(), line);
        p.drawText(numbers, Qt::AlignLeft | Qt::AlignTop, number(stats_.min));
        p.drawText(numbers, Qt::AlignRight | Qt::AlignTop, number(stats_.max));
    }

  private:
    QImage image_;
    train::ChannelStats stats_;
    QString caption_;
};

} // namespace myelin::ui
