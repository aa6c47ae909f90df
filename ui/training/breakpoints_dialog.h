#pragma once
// Train > Breakpoints…: the conditions that pause a run started from the studio at the step
// where one holds (train/breakpoints.h), as check boxes with their thresholds. They belong to
// the person, not the project: kept in the settings, written as `myelin train --break-on` reads
// them ("nonfinite,grad-spike=10"), and given to every run the studio starts — and to the run
// going, from its next step.
#include <myelin/train/breakpoints.h>

#include <QDialog>
#include <QString>

#include <vector>

class QCheckBox;
class QDoubleSpinBox;
class QSpinBox;

namespace myelin::ui {

// The stored conditions (empty: none), and storing them. Text that does not read as conditions
// (edited by hand) counts as none.
std::vector<train::BreakCondition> storedBreakpoints();
void storeBreakpoints(const std::vector<train::BreakCondition>& conditions);
// "nonfinite,grad-spike=10"; empty for none.
QString breakpointsText(const std::vector<train::BreakCondition>& conditions);

class BreakpointsDialog : public QDialog {
    Q_OBJECT

  public:
    explicit BreakpointsDialog(const std::vector<train::BreakCondition>& conditions,
                               QWidget* parent = nullptr);
    std::vector<train::BreakCondition> conditions() const;

  private:
    QCheckBox* nonFinite_ = nullptr;
    QCheckBox* gradSpike_ = nullptr;
    QDoubleSpinBox* spikeFactor_ = nullptr;
    QCheckBox* dead_ = nullptr;
    QDoubleSpinBox* deadPercent_ = nullptr;
    QCheckBox* lossAbove_ = nullptr;
    QDoubleSpinBox* lossValue_ = nullptr;
    QSpinBox* lossFromStep_ = nullptr;
};

} // namespace myelin::ui
