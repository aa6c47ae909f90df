#pragma once
// The step scrubber under the canvas: which recorded step of the inspected run the canvas
// badges and the inspection views show. Dragging it moves them all to a step; "Live" keeps them
// on the newest step while a run records. It holds no run data: the shell feeds it the step
// range of the run the views show (setSteps) and acts on its requests.
#include <QWidget>

#include <cstdint>

class QCheckBox;
class QLabel;
class QSlider;

namespace myelin::ui {

class StepScrubber : public QWidget {
    Q_OBJECT

  public:
    explicit StepScrubber(QWidget* parent = nullptr);

    // The inspected run's recorded steps run from `first` to `last`; `selected` is the step
    // shown; `following`: it moves to the newest step as rows arrive. `run` < 0 hides it.
    void setSteps(int64_t run, int64_t selected, int64_t first, int64_t last, bool following);

    int64_t step() const;
    bool following() const;

  signals:
    // The user moved the scrubber to `step` (the views pick the nearest recorded step).
    void stepRequested(qint64 step);
    void followRequested(bool follow);

  private:
    void updateLabel();

    QSlider* slider_ = nullptr;
    QLabel* label_ = nullptr;
    QCheckBox* live_ = nullptr;
    int64_t run_ = -1;
};

} // namespace myelin::ui
