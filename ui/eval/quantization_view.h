#pragma once
// Quantize a checkpoint to int8 and compare it with the float model (issue 38, item 4): the
// scheme (static, dynamic), the observer and the calibration batches (static only), then on a
// worker thread train::quantize_checkpoint writes `<name>.int8.safetensors` beside the float
// checkpoint (never over it) and train::evaluate_examples runs both on the project's test data,
// timed. Shown side by side: the metrics (accuracy, loss, macro F1, ... or a regression's), the
// share of examples predicted alike, the size of the model's tensors and of each file on disk,
// examples per second; per class the recall of each with its change; which layers became int8
// and which stayed float (and why); the confusion matrix of either model (the Float32 / Int8
// switch). Errors (an int8 checkpoint chosen, nothing to quantize, a checkpoint that does not
// fit) are said in words. Cancel stops calibration or evaluation between batches.
#include <myelin/train/evaluation.h>
#include <myelin/train/quantization.h>

#include <QFutureWatcher>
#include <QString>
#include <QWidget>

#include <memory>

class QButtonGroup;
class QCheckBox;
class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QSplitter;
class QTabWidget;
class QTableWidget;
class QTimer;

namespace myelin::io {
struct Project;
}

namespace myelin::ui {

class ConfusionMatrixWidget;

class QuantizationView : public QWidget {
    Q_OBJECT

  public:
    explicit QuantizationView(QWidget* parent = nullptr);
    ~QuantizationView() override; // cancels a running job and waits for it

    // Where the int8 checkpoint of `checkpoint` is written: "<stem>.int8.safetensors" beside it.
    static QString int8PathFor(const QString& checkpoint);

    // Quantizes `checkpointPath` (a float checkpoint of `project`, its data paths relative to
    // `projectDir`) with the options of the controls and evaluates both models, in the
    // background; finished() when done. Ignored while a job runs.
    void quantize(const io::Project& project, const QString& projectDir,
                  const QString& checkpointPath);
    void cancel();
    bool isRunning() const;
    // The Quantize button asks (quantizeRequested) only when a checkpoint is chosen and
    // nothing else blocks; `blockedReason` non-empty says why it cannot now (a run trains).
    void setCheckpointChosen(bool chosen);
    void setBlockedReason(const QString& reason);

    // What the view says instead of results (a prompt, an error, "cancelled"); empty with them.
    QString message() const;
    QString int8Path() const { return int8Path_; }
    // The last comparison that ran to its end; null before, after a failure or a cancel.
    const train::Evaluation* floatEvaluation() const { return float_.get(); }
    const train::Evaluation* int8Evaluation() const { return int8_.get(); }
    const train::QuantizeResult* result() const { return result_.get(); }

    // The confusion matrix of the int8 model (true) or of the float one.
    void showInt8Matrix(bool int8);
    bool showsInt8Matrix() const;

    QComboBox* schemeBox() const { return scheme_; }
    QComboBox* observerBox() const { return observer_; }
    QSpinBox* calibrationBox() const { return calibration_; }
    QPushButton* quantizeButton() const { return quantizeButton_; }
    QTableWidget* summaryTable() const { return summary_; }
    QTableWidget* perClassTable() const { return perClass_; }
    QTableWidget* layerTable() const { return layers_; }
    ConfusionMatrixWidget* confusionMatrix() const { return matrix_; }
    QTabWidget* detailTabs() const { return tabs_; }

  signals:
    void quantizeRequested(); // the Quantize button: the page calls quantize()
    void finished();          // results, an error or a cancel: see message()

  private:
    struct Job;
    struct Outcome {
        std::shared_ptr<train::QuantizeResult> result;
        std::shared_ptr<train::Evaluation> floatEval, int8Eval;
        double floatSeconds = 0, int8Seconds = 0;
        bool written = false; // the int8 file was written (also when cancelled after)
        QString error;
    };
    void onFinished();
    void updateProgress();
    void updateControls();
    void showMessage(const QString& text);
    void showResults();
    void fillSummary();
    void fillPerClass();
    void fillLayers();
    void showCellCounts(int trueClass, int predictedClass);

    std::shared_ptr<Job> job_;
    QFutureWatcher<Outcome>* watcher_ = nullptr;
    QTimer* progressTimer_ = nullptr;
    std::shared_ptr<const train::QuantizeResult> result_;
    std::shared_ptr<const train::Evaluation> float_, int8_;
    double floatSeconds_ = 0, int8Seconds_ = 0;
    QString checkpoint_, int8Path_;
    bool chosen_ = false, results_ = false;
    QString blocked_;

    QComboBox* scheme_ = nullptr;
    QComboBox* observer_ = nullptr;
    QSpinBox* calibration_ = nullptr;
    QPushButton* quantizeButton_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QPushButton* cancelButton_ = nullptr;
    QLabel* title_ = nullptr;
    QLabel* written_ = nullptr;
    QLabel* message_ = nullptr;
    QSplitter* resultsSplit_ = nullptr;
    QWidget* matrixPane_ = nullptr;
    QButtonGroup* which_ = nullptr;
    QCheckBox* normalized_ = nullptr;
    ConfusionMatrixWidget* matrix_ = nullptr;
    QLabel* cellNote_ = nullptr;
    QTableWidget* summary_ = nullptr;
    QLabel* sizeNote_ = nullptr;
    QTabWidget* tabs_ = nullptr;
    QTableWidget* perClass_ = nullptr;
    QTableWidget* layers_ = nullptr;
};

} // namespace myelin::ui
