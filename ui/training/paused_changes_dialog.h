#pragma once
// "Change While Paused": the settings a paused run can take from its next step (train::RunEdits):
// the learning rate (its schedule scaled with it) and gradient clipping. The graph and the data
// cannot change mid-run; the dialog says so.
#include <myelin/train/run_control.h>

#include <QDialog>

#include <optional>

class QCheckBox;
class QLabel;
class QLineEdit;
class QPushButton;

namespace myelin::ui {

class PausedChangesDialog : public QDialog {
    Q_OBJECT

  public:
    // `lr`: the learning rate of the step the run paused after; `clipNorm` / `clipValue`: the
    // run's clipping.
    PausedChangesDialog(int64_t step, double lr, std::optional<double> clipNorm,
                        std::optional<double> clipValue, QWidget* parent = nullptr);

    // What differs from the run's settings (empty when nothing does or a field is invalid).
    train::RunEdits edits() const;
    QLineEdit* learningRateField() const { return lr_; }
    QCheckBox* clipNormBox() const { return clipNormOn_; }
    QLineEdit* clipNormField() const { return clipNorm_; }

  private:
    void validate();

    double lrBefore_;
    std::optional<double> clipNormBefore_, clipValueBefore_;
    QLineEdit* lr_ = nullptr;
    QCheckBox* clipNormOn_ = nullptr;
    QLineEdit* clipNorm_ = nullptr;
    QCheckBox* clipValueOn_ = nullptr;
    QLineEdit* clipValue_ = nullptr;
    QLabel* problem_ = nullptr;
    QPushButton* apply_ = nullptr;
};

} // namespace myelin::ui
