#pragma once
// The bubble beside the cursor on the editor's canvas that says why a connection or a name was
// refused. It keeps its size at any zoom.
#include "widgets/theme.h"

#include <QFontMetricsF>
#include <QGraphicsItem>
#include <QPainter>

#include <cmath>

namespace myelin::ui {

class FeedbackItem : public QGraphicsItem {
  public:
    FeedbackItem() {
        setFlag(ItemIgnoresTransformations);
        setZValue(20);
        setAcceptedMouseButtons(Qt::NoButton);
    }

    void setText(const QString& text) {
        prepareGeometryChange();
        text_ = text;
        const QFontMetricsF metrics(font());
        const QRectF bounds =
            metrics.boundingRect(QRectF(0, 0, kMaxWidth, 1000), Qt::TextWordWrap, text_);
        size_ = QSizeF(std::ceil(bounds.width()) + 2 * kPadding,
                       std::ceil(bounds.height()) + 2 * kPadding);
    }
    QString text() const { return text_; }

    QRectF boundingRect() const override {
        return QRectF(QPointF(0, 0), size_).adjusted(-1, -1, 1, 3);
    }

    void paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) override {
        painter->setRenderHint(QPainter::Antialiasing);
        const QRectF box(QPointF(0, 0), size_);
        painter->setPen(Qt::NoPen);
        painter->setBrush(colors::kCalloutShadow);
        painter->drawRoundedRect(box.translated(0, 2), 6, 6);
        painter->setPen(QPen(colors::kError, 1));
        painter->setBrush(colors::kErrorSoft);
        painter->drawRoundedRect(box, 6, 6);
        painter->setFont(font());
        painter->setPen(colors::kText);
        painter->drawText(box.adjusted(kPadding, kPadding, -kPadding, -kPadding),
                          Qt::TextWordWrap | Qt::AlignLeft | Qt::AlignVCenter, text_);
    }

  private:
    static QFont font() {
        QFont f;
        f.setPointSizeF(9);
        return f;
    }
    static constexpr double kMaxWidth = 300;
    static constexpr double kPadding = 8;
    QString text_;
    QSizeF size_;
};

} // namespace myelin::ui
