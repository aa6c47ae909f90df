#pragma once
// The Evaluate tab: pick a run's checkpoint (or a file), then "Test set" evaluates it on the
// project's test data (metrics, confusion matrix with its examples, per-class scores, highest
// losses; regression plots) and "One example" runs one example through it, layer by layer.
// An example double-clicked in the evaluation opens in "One example". "Quantize" makes an int8
// copy of the checkpoint and compares it with the float one (QuantizationView).
#include <myelin/io/project.h>

#include <QString>
#include <QWidget>

#include <optional>

class QLabel;
class QPushButton;
class QTabWidget;

namespace myelin::ui {

class CheckpointPicker;
class EvaluationView;
class QuantizationView;
class SingleExampleView;

class EvaluatePage : public QWidget {
    Q_OBJECT

  public:
    explicit EvaluatePage(QWidget* parent = nullptr);

    void setStorePath(const QString& path);
    // The open project: used for a checkpoint file from disk, or a run whose recorded project
    // cannot be read. `dataDir`: the folder its data paths are relative to.
    void setOpenProject(const std::optional<io::Project>& project, const QString& dataDir);
    // Evaluation is refused while a run trains (both would share the process's random state).
    void setTrainingActive(bool active);

    CheckpointPicker* picker() const { return picker_; }
    EvaluationView* evaluationView() const { return evaluation_; }
    SingleExampleView* singleExampleView() const { return single_; }
    QuantizationView* quantizationView() const { return quantization_; }
    QTabWidget* tabs() const { return tabs_; }

  public slots:
    // Evaluates the chosen checkpoint (the Evaluate button).
    void evaluate();
    // Chooses run `run`'s best checkpoint (else its last) and evaluates it.
    bool evaluateRun(qint64 run);
    // Runs test example `index` through the chosen checkpoint in "One example".
    void showExample(qint64 index);
    // Quantizes the chosen checkpoint and compares it with the float one (the Quantize tab's
    // button).
    void quantize();

  private:
    // The project and data folder to evaluate the chosen checkpoint with; unset (with the
    // reason shown) when there is none.
    bool chosenModel(io::Project& project, QString& dataDir);
    void updateState();

    CheckpointPicker* picker_ = nullptr;
    QPushButton* evaluateButton_ = nullptr;
    QLabel* note_ = nullptr;
    QTabWidget* tabs_ = nullptr;
    EvaluationView* evaluation_ = nullptr;
    SingleExampleView* single_ = nullptr;
    QuantizationView* quantization_ = nullptr;
    std::optional<io::Project> openProject_;
    QString openDataDir_;
    QString singleModelKey_; // the checkpoint SingleExampleView holds
    bool trainingActive_ = false;
};

} // namespace myelin::ui
