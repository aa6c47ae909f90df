#pragma once
// The live training view: what the running (or last) run reports, as it happens — a header with
// the run, its state, epoch, step, throughput and ETA; QCustomPlot curves of the loss (every
// step, the epoch's mean, validation), of accuracy (or R² for regression) per epoch, and of the
// learning rate; and the run's log (checkpoints, warnings, errors). The header also names the
// device the run computes on and its tensor memory (allocator stats). Fed by a TrainingController's
// signals, which arrive at most ~30 times a second; each batch replots once.
#include "widgets/change_marks.h"

#include <myelin/train/events.h>

#include <QElapsedTimer>
#include <QString>
#include <QWidget>

#include <memory>
#include <optional>
#include <vector>

class QCustomPlot;
class QCPGraph;
class QLabel;
class QPlainTextEdit;

namespace myelin::ui {

class TrainingController;

// "CPU · tensors 84 MB · peak 120 MB" (peakOnly: "CPU · peak 120 MB", for a finished run whose
// tensors are freed): where a run computes and the memory its tensors hold, from the device's
// caching allocator (process-wide, as torch.cuda.memory_allocated), which counts blocks of 64 KiB
// and up ("CPU · tensors < 64 KiB" when none was). Training runs on the CPU in this build
// (the CUDA backend cannot train yet).
QString deviceMemoryText(bool peakOnly = false);
// deviceMemoryText() for a run in the studio; "CPU  ·  2 processes (mpirun)" for a run in other
// processes, whose memory the studio does not see.
QString runPlaceText(const TrainingController& controller);

class TrainingDock : public QWidget {
    Q_OBJECT

  public:
    explicit TrainingDock(TrainingController* controller, QWidget* parent = nullptr);

    QCustomPlot* lossPlot() const { return lossPlot_; }
    QCustomPlot* accuracyPlot() const { return accuracyPlot_; }
    QCustomPlot* lrPlot() const { return lrPlot_; }
    // Points on the per-step training loss curve; on the validation loss curve.
    int stepLossPoints() const;
    int validationLossPoints() const;
    QString headerText() const;
    QString deviceText() const;
    // The state badge: "Training", "Paused", ..., or how the last run ended ("Finished").
    QString stateBadgeText() const;
    // The learning rate of the last step shown (0 before the first).
    double lastLearningRate() const;
    // Steps where the run's settings changed (each a dashed line on the loss and lr plots).
    const std::vector<int64_t>& changeSteps() const { return changeMarks_.front()->steps(); }
    QString logText() const;

  private:
    void clear(); // a new run starts from clean plots
    void onStep(const train::StepMetrics& metrics);
    void onEpoch(const train::EpochMetrics& metrics);
    void onProgress(const train::Progress& progress);
    void appendLog(const QString& text, const QString& color = QString());
    void updateHeader();
    void replot();    // soon: after this drain of events, at most every kMinReplotMs
    void drawPlots(); // now

    TrainingController* controller_;
    QLabel* stateLabel_ = nullptr;
    QLabel* runLabel_ = nullptr;
    QLabel* statsLabel_ = nullptr;
    QLabel* deviceLabel_ = nullptr;
    QCustomPlot* lossPlot_ = nullptr;
    QCustomPlot* accuracyPlot_ = nullptr;
    QCustomPlot* lrPlot_ = nullptr;
    QCPGraph* stepLoss_ = nullptr;
    QCPGraph* epochLoss_ = nullptr;
    QCPGraph* validationLoss_ = nullptr;
    QCPGraph* trainScore_ = nullptr;
    QCPGraph* validationScore_ = nullptr;
    QCPGraph* learningRate_ = nullptr;
    QPlainTextEdit* log_ = nullptr;
    QString runName_;
    QString scoreMetric_; // "accuracy", "r2" or empty until the first epoch says which
    std::optional<train::RunStatus> lastStatus_; // how the last run ended, until the next starts
    std::vector<std::unique_ptr<ChangeMarks>> changeMarks_; // on the loss and lr plots
    train::Progress progress_;
    bool dirty_ = false;
    QElapsedTimer sinceReplot_; // the plots redraw at most every kMinReplotMs while a run streams
    qint64 lastDrawMs_ = 0;     // how long the last frame took to draw
};

// "1:23:45", "4:05", "12 s"; "—" when unknown (negative).
QString formatDuration(double seconds);
// Where a run is: "epoch 2/10  ·  step 120/422" (the step part once steps per epoch are known).
QString progressText(const train::Progress& progress);

} // namespace myelin::ui
