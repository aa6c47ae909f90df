#include "eval/confusion_matrix_widget.h"

#include "widgets/theme.h"

#include <QMouseEvent>
#include <QPainter>

#include <algorithm>
#include <cmath>

namespace myelin::ui {

namespace {

constexpr int kPad = 8;

// From the surface (nothing) to the accent (the whole row): the theme's own tones.
QColor cellColor(double share) {
    const double t = std::clamp(share, 0.0, 1.0);
    const QColor& low = colors::kSurface;
    const QColor& high = colors::kAccent;
    const auto mix = [t](int a, int b) { return int(std::lround(a + (b - a) * t)); };
    QColor c = low;
    c.setRgb(mix(low.red(), high.red()), mix(low.green(), high.green()),
             mix(low.blue(), high.blue()));
    return c;
}

} // namespace

ConfusionMatrixWidget::ConfusionMatrixWidget(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("confusionMatrix"));
    setCursor(Qt::PointingHandCursor);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void ConfusionMatrixWidget::setMatrix(const train::ConfusionMatrix& matrix) {
    matrix_ = matrix;
    selectedTrue_ = selectedPredicted_ = -1;
    relayout();
    update();
}

void ConfusionMatrixWidget::setNormalized(bool normalized) {
    normalized_ = normalized;
    update();
}

void ConfusionMatrixWidget::selectCell(int trueClass, int predictedClass) {
    const int n = int(matrix_.num_classes);
    const bool valid = trueClass >= 0 && trueClass < n && predictedClass >= 0 && predictedClass < n;
    selectedTrue_ = valid ? trueClass : -1;
    selectedPredicted_ = valid ? predictedClass : -1;
    update();
}

std::optional<std::pair<int, int>> ConfusionMatrixWidget::selectedCell() const {
    if (selectedTrue_ < 0) return std::nullopt;
    return std::make_pair(selectedTrue_, selectedPredicted_);
}

double ConfusionMatrixWidget::share(int t, int p) const {
    int64_t total = 0;
    for (int64_t c = 0; c < matrix_.num_classes; ++c)
        total += matrix_.at(t, c);
    return total > 0 ? double(matrix_.at(t, p)) / double(total) : 0.0;
}

QString ConfusionMatrixWidget::cellText(int t, int p) const {
    if (t < 0 || p < 0 || t >= matrix_.num_classes || p >= matrix_.num_classes) return {};
    if (!normalized_) return QString::number(matrix_.at(t, p));
    const double s = share(t, p);
    return s == 0 ? QStringLiteral("0") : QString::number(s, 'f', 2);
}

QString ConfusionMatrixWidget::className(int c) const {
    return c < int(matrix_.class_names.size())
               ? QString::fromStdString(matrix_.class_names[size_t(c)])
               : QString::number(c);
}

QRect ConfusionMatrixWidget::cellRect(int t, int p) const {
    if (layout_.cell <= 0 || t < 0 || p < 0 || t >= matrix_.num_classes || p >= matrix_.num_classes)
        return {};
    return QRect(layout_.grid.x() + p * layout_.cell, layout_.grid.y() + t * layout_.cell,
                 layout_.cell, layout_.cell);
}

void ConfusionMatrixWidget::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    relayout();
}

void ConfusionMatrixWidget::relayout() {
    layout_ = {};
    const int n = int(matrix_.num_classes);
    if (n == 0) return;
    const QFontMetrics metrics(font());
    int names = 0;
    for (int c = 0; c < n; ++c)
        names = std::max(names, metrics.horizontalAdvance(className(c)));
    const int title = metrics.height();
    const int left = title + kPad + names + kPad;
    // Predicted names under the columns; drawn upwards when a column is too narrow for them.
    for (bool rotated : {false, true}) {
        const int bottom = (rotated ? names : metrics.height()) + kPad + title + kPad;
        const int cell = std::min((width() - left - kPad) / n, (height() - bottom - kPad) / n);
        if (cell <= 0) return;
        layout_.cell = cell;
        layout_.rotated = rotated;
        layout_.grid = QRect(left, kPad, cell * n, cell * n);
        if (rotated || names + 4 <= cell) return;
    }
}

int ConfusionMatrixWidget::widthForHeight(int height) const {
    const int n = int(matrix_.num_classes);
    if (n == 0) return 0;
    const QFontMetrics metrics(font());
    int names = 0;
    for (int c = 0; c < n; ++c)
        names = std::max(names, metrics.horizontalAdvance(className(c)));
    const int title = metrics.height();
    const int left = title + kPad + names + kPad;
    int cell = (height - metrics.height() - 2 * kPad - title - kPad) / n;
    if (names + 4 > cell) cell = (height - names - 2 * kPad - title - kPad) / n; // rotated
    return left + std::max(cell, 1) * n + kPad;
}

void ConfusionMatrixWidget::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), colors::kSurface);
    const int n = int(matrix_.num_classes);
    if (n == 0 || layout_.cell <= 0) return;
    const QRect& grid = layout_.grid;
    const int cell = layout_.cell;
    const QFontMetrics metrics(font());
    QFont cellFont = font();
    // Numbers shrink with the cells so that "1000" or "0.95" fits.
    const int widest = QFontMetrics(cellFont).horizontalAdvance(QStringLiteral("0000"));
    if (widest > cell - 6)
        cellFont.setPointSizeF(std::max(6.0, cellFont.pointSizeF() * (cell - 6) / widest));
    for (int t = 0; t < n; ++t)
        for (int c = 0; c < n; ++c) {
            const QRect r = cellRect(t, c);
            const double s = share(t, c);
            p.fillRect(r, cellColor(s));
            p.setPen(colors::kGridLine);
            p.drawRect(r.adjusted(0, 0, -1, -1));
            p.setFont(cellFont);
            p.setPen(s > 0.5                 ? colors::kTextOnColor
                     : matrix_.at(t, c) == 0 ? colors::kFaintText
                                             : colors::kText);
            p.drawText(r, Qt::AlignCenter, cellText(t, c));
        }
    p.setFont(font());
    if (selectedTrue_ >= 0) {
        p.setPen(QPen(colors::kWarning, 3));
        p.setBrush(Qt::NoBrush);
        p.drawRect(cellRect(selectedTrue_, selectedPredicted_).adjusted(1, 1, -2, -2));
    }
    p.setPen(colors::kBorder);
    p.drawRect(grid.adjusted(0, 0, -1, -1));

    // Class names: true classes right-aligned left of their rows, predicted under the columns.
    p.setPen(colors::kText);
    const int title = metrics.height();
    for (int t = 0; t < n; ++t)
        p.drawText(QRect(title + kPad, grid.y() + t * cell, grid.x() - title - 2 * kPad, cell),
                   Qt::AlignRight | Qt::AlignVCenter, className(t));
    int namesBottom = grid.bottom() + kPad / 2 + metrics.height();
    for (int c = 0; c < n; ++c) {
        const QString name = className(c);
        if (!layout_.rotated) {
            p.drawText(QRect(grid.x() + c * cell, grid.bottom() + kPad / 2, cell, metrics.height()),
                       Qt::AlignHCenter | Qt::AlignTop, name);
            continue;
        }
        const int w = metrics.horizontalAdvance(name);
        namesBottom = std::max(namesBottom, grid.bottom() + kPad / 2 + w);
        p.save();
        p.translate(grid.x() + c * cell + cell / 2 + metrics.ascent() / 2 - 1,
                    grid.bottom() + kPad / 2 + w);
        p.rotate(-90);
        p.drawText(0, 0, name);
        p.restore();
    }
    // Axis titles.
    p.setPen(colors::kMutedText);
    p.drawText(QRect(grid.x(), namesBottom + kPad / 2, grid.width(), title), Qt::AlignCenter,
               tr("Predicted class"));
    p.save();
    p.translate(0, grid.y() + grid.height() / 2);
    p.rotate(-90);
    p.drawText(QRect(-grid.height() / 2, 0, grid.height(), title), Qt::AlignCenter,
               tr("True class"));
    p.restore();
}

void ConfusionMatrixWidget::mousePressEvent(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton || layout_.cell <= 0) return;
    const QPoint pos = event->position().toPoint();
    if (!layout_.grid.contains(pos)) return;
    const int c = (pos.x() - layout_.grid.x()) / layout_.cell;
    const int t = (pos.y() - layout_.grid.y()) / layout_.cell;
    if (t >= matrix_.num_classes || c >= matrix_.num_classes) return;
    selectCell(t, c);
    emit cellClicked(t, c);
}

} // namespace myelin::ui
