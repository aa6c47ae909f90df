#pragma once
// A word-wrapped label whose preferred height is the one its current width needs. QLabel's own
// size hint picks a narrow "pleasant" width for short texts, which makes form rows in a scroll
// area taller than their text.
#include <QLabel>
#include <QResizeEvent>

#include <algorithm>

namespace myelin::ui {

class WrappedLabel : public QLabel {
  public:
    using QLabel::QLabel;
    QSize sizeHint() const override {
        const int w = std::max(width(), minimumSizeHint().width());
        return {w, heightForWidth(w)};
    }

  protected:
    void resizeEvent(QResizeEvent* event) override {
        QLabel::resizeEvent(event);
        if (event->oldSize().width() != width()) updateGeometry();
    }
};

} // namespace myelin::ui
