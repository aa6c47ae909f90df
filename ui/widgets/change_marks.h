#pragma once
// Changes made while a run was paused (RunChanged; the store's run events of kind "change": a step
// and what changed), marked on a plot whose x axis is the optimizer step: a dashed line at the
// step with what changed written at its top. The training dock and the inspection views mark
// them alike, live and on a run shown again.
#include <QColor>
#include <QString>

#include <cstdint>
#include <vector>

class QCustomPlot;
class QCPAbstractItem;

namespace myelin::ui {

struct RunChange {
    int64_t step = 0;
    QString what; // "lr 0.001 -> 0.0001, froze fc1"
};

class ChangeMarks {
  public:
    explicit ChangeMarks(QCustomPlot* plot) : plot_(plot) {}
    ChangeMarks(const ChangeMarks&) = delete;
    ChangeMarks& operator=(const ChangeMarks&) = delete;

    // Replaces the marks drawn before (the plot is not replotted).
    void set(const std::vector<RunChange>& changes, const QColor& color);
    void add(const RunChange& change, const QColor& color);
    void clear();
    // The steps marked, in the order they were added.
    const std::vector<int64_t>& steps() const { return steps_; }

  private:
    QCustomPlot* plot_;
    std::vector<QCPAbstractItem*> items_;
    std::vector<int64_t> steps_;
};

} // namespace myelin::ui
