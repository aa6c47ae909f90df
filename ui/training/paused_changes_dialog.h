#pragma once
// "Change While Paused": the settings a paused run can take from its next step (train::RunEdits):
// the learning rate (its schedule scaled with it), gradient clipping, which layers train and
// their lr multipliers, and how often the run captures layer norms, summaries and feature maps.
// The graph and the data cannot change mid-run; the dialog says so.
#include <myelin/io/project.h>
#include <myelin/train/run_control.h>

#include <QDialog>

#include <optional>
#include <string>
#include <vector>

class QCheckBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace myelin::ui {

class PausedChangesDialog : public QDialog {
    Q_OBJECT

  public:
    // `lr`: the learning rate of the step the run paused after; `run`: the run's settings (the
    // project it trains, with the changes made while it ran: TrainingController::runSettings).
    PausedChangesDialog(int64_t step, double lr, const io::Project& run, QWidget* parent = nullptr);

    // What differs from the run's settings (empty when nothing does or a field is invalid).
    train::RunEdits edits() const;
    QLineEdit* learningRateField() const { return lr_; }
    QCheckBox* clipNormBox() const { return clipNormOn_; }
    QLineEdit* clipNormField() const { return clipNorm_; }
    // One row per layer with parameters: column 0 "trains" (checkable), column 1 the lr
    // multiplier (a QLineEdit cell widget).
    QTableWidget* layersTable() const { return layers_; }
    QSpinBox* summariesEveryBox() const { return summariesEvery_; }

  private:
    struct Layer {
        std::string module; // the key of RunEdits
        std::string label;  // as the canvas names the node
        bool frozen = false;
        double lrMultiplier = 1.0;
    };
    void validate();
    QWidget* makeLayersTable();
    QWidget* makeCaptureForm();
    std::optional<double> multiplierAt(int row) const;

    double lrBefore_;
    std::optional<double> clipNormBefore_, clipValueBefore_;
    std::vector<Layer> layersBefore_;
    spec::CaptureSpec captureBefore_;
    QLineEdit* lr_ = nullptr;
    QCheckBox* clipNormOn_ = nullptr;
    QLineEdit* clipNorm_ = nullptr;
    QCheckBox* clipValueOn_ = nullptr;
    QLineEdit* clipValue_ = nullptr;
    QTableWidget* layers_ = nullptr;
    QSpinBox* layerNormsEvery_ = nullptr;
    QSpinBox* summariesEvery_ = nullptr;
    QSpinBox* featureMapsEvery_ = nullptr;
    QLabel* problem_ = nullptr;
    QPushButton* apply_ = nullptr;
};

} // namespace myelin::ui
