#pragma once
// Evaluation of a checkpoint (issue 14, item 5): evaluate() loads the checkpoint into the
// project's model and runs train::evaluate_examples over the test part of the data (else the
// validation part) on a worker thread, with a progress bar and Cancel; the window stays
// responsive. Then it shows the metrics and, for classification, the confusion matrix (counts
// or row-normalised; clicking a cell lists its examples as thumbnails with their
// probabilities), the per-class precision / recall / F1 table and the examples of highest
// loss; for regression, predicted against true values with the y = x line, and the histogram
// of the residuals. A checkpoint that is missing or does not fit the model is said in words.
#include <myelin/data/dataset.h>
#include <myelin/train/evaluation.h>

#include <QFutureWatcher>
#include <QString>
#include <QWidget>

#include <atomic>
#include <memory>
#include <vector>

class QCheckBox;
class QCustomPlot;
class QLabel;
class QListWidget;
class QProgressBar;
class QPushButton;
class QSplitter;
class QStackedWidget;
class QTabWidget;
class QTableWidget;
class QTimer;

namespace myelin::io {
struct Project;
}

namespace myelin::ui {

class ConfusionMatrixWidget;

class EvaluationView : public QWidget {
    Q_OBJECT

  public:
    explicit EvaluationView(QWidget* parent = nullptr);
    ~EvaluationView() override; // cancels a running evaluation and waits for it

    // Evaluates `checkpointPath` with `project` (data paths relative to `projectDir`) in the
    // background; a running evaluation is cancelled first. finished() when it is done.
    void evaluate(const io::Project& project, const QString& projectDir,
                  const QString& checkpointPath);
    void cancel();
    // What the view says before any evaluation: choose a checkpoint, or (one is chosen) press
    // Evaluate. Results, a running evaluation or its error stay as they are.
    void setCheckpointChosen(bool chosen);
    bool isRunning() const;

    // The last evaluation that ran to its end; null before, and after a failure or Cancel.
    const train::Evaluation* evaluation() const { return evaluation_.get(); }
    // What the view says instead of results (an error, "cancelled"); empty when it shows them.
    QString message() const;
    QString metricsText() const;

    // Row-normalised cells (the toggle above the matrix).
    void setNormalized(bool normalized);
    // Selects a cell and lists its examples, as a click on it does.
    void showCell(int trueClass, int predictedClass);
    const std::vector<int64_t>& listedExamples() const { return listed_; }

    ConfusionMatrixWidget* confusionMatrix() const { return matrix_; }
    QListWidget* cellList() const { return cellList_; }
    QTableWidget* perClassTable() const { return perClass_; }
    QTableWidget* topLossTable() const { return topLoss_; }
    QCustomPlot* scatterPlot() const { return scatter_; }
    QCustomPlot* residualPlot() const { return residuals_; }
    QTabWidget* detailTabs() const { return tabs_; }

  signals:
    void finished(); // results, an error or a cancel: see evaluation() and message()
    // An example was double-clicked (in a cell's list or the top losses): "try this one".
    void exampleActivated(qint64 index);

  private:
    struct Job;
    struct Outcome {
        std::shared_ptr<train::Evaluation> evaluation;
        data::DatasetPtr dataset;
        QString error;
    };
    void onFinished();
    void updateProgress();
    void showMessage(const QString& text);
    void showResults();
    bool waiting_ = true; // nothing evaluated or running yet: the message is the prompt
    void fillPerClass();
    void fillTopLosses();
    void fillRegression();
    QIcon thumbnail(int64_t example) const;
    QString exampleCaption(int64_t example) const;

    std::shared_ptr<Job> job_;
    QFutureWatcher<Outcome>* watcher_ = nullptr;
    QTimer* progressTimer_ = nullptr;
    std::shared_ptr<const train::Evaluation> evaluation_;
    data::DatasetPtr dataset_;
    QString checkpointName_;
    std::vector<int64_t> listed_;

    QLabel* title_ = nullptr;
    QLabel* metrics_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QPushButton* cancelButton_ = nullptr;
    QStackedWidget* stack_ = nullptr;
    QLabel* message_ = nullptr;
    QWidget* classificationPage_ = nullptr;
    QSplitter* split_ = nullptr;
    QWidget* regressionPage_ = nullptr;
    QCheckBox* normalized_ = nullptr;
    ConfusionMatrixWidget* matrix_ = nullptr;
    QTabWidget* tabs_ = nullptr;
    QLabel* cellTitle_ = nullptr;
    QLabel* cellHint_ = nullptr;
    QListWidget* cellList_ = nullptr;
    QTableWidget* perClass_ = nullptr;
    QTableWidget* topLoss_ = nullptr;
    QTableWidget* regressionTopLoss_ = nullptr;
    QCustomPlot* scatter_ = nullptr;
    QCustomPlot* residuals_ = nullptr;
};

} // namespace myelin::ui
