#include "widgets/change_marks.h"

#include <qcustomplot.h>

namespace myelin::ui {

namespace {
// Longer texts are cut at the top of the line (the dock's log and the runs comparison's notes
// have them whole).
constexpr int kLabelCharacters = 48;
} // namespace

void ChangeMarks::set(const std::vector<RunChange>& changes, const QColor& color) {
    clear();
    for (const RunChange& change : changes)
        add(change, color);
}

void ChangeMarks::add(const RunChange& change, const QColor& color) {
    auto* line = new QCPItemStraightLine(plot_);
    line->point1->setCoords(double(change.step), 0);
    line->point2->setCoords(double(change.step), 1);
    line->setPen(QPen(color, 1, Qt::DashLine));
    auto* label = new QCPItemText(plot_);
    label->position->setTypeX(QCPItemPosition::ptPlotCoords);
    label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    label->position->setCoords(double(change.step), 0.02);
    label->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
    label->setClipToAxisRect(true);
    QString text = change.what;
    if (text.size() > kLabelCharacters) text = text.left(kLabelCharacters - 1) + QChar(0x2026);
    label->setText(QStringLiteral(" ") + text);
    label->setColor(color);
    QFont font = plot_->font();
    font.setPointSizeF(font.pointSizeF() * 0.85);
    label->setFont(font);
    items_.push_back(line);
    items_.push_back(label);
    steps_.push_back(change.step);
}

void ChangeMarks::clear() {
    for (QCPAbstractItem* item : items_)
        plot_->removeItem(item);
    items_.clear();
    steps_.clear();
}

} // namespace myelin::ui
