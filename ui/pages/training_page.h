#pragma once
// The Training page: loss, optimizer and LR schedule (kinds and options from core's component
// registry, edited with AttrRows), run settings, early stopping, checkpoints and what the hooks
// capture, next to a live preview of the learning rate over the whole run (the schedule's
// closed form at a bounded set of steps, lr_preview_sampling.h). Every committed change is one
// undoable edit of the project's TrainSpec; the page shows the document's spec again after every
// change, so undo and redo update it.
#include "widgets/attr_editor.h"

#include <myelin/io/project.h>
#include <myelin/train/components.h>

#include <QPointer>
#include <QWidget>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

class QCheckBox;
class QComboBox;
class QCPItemText;
class QCPItemTracer;
class QCustomPlot;
class QDoubleSpinBox;
class QEvent;
class QFormLayout;
class QLabel;
class QLineEdit;
class QMouseEvent;
class QPushButton;
class QScrollArea;
class QShowEvent;
class QSpinBox;
class QStackedWidget;

namespace myelin::ui {

class ClassCountsLoader;
class LrFinderDialog;
class ClassWeightsEditor;
class DevicePicker;
class ProjectDocument;

class TrainingPage : public QWidget {
    Q_OBJECT

  public:
    explicit TrainingPage(ProjectDocument* document, QWidget* parent = nullptr);
    ~TrainingPage() override;

    // While a run trains on the spec: every editor is disabled and `reason` shows in a banner.
    void setEditingLocked(bool locked, const QString& reason = QString());
    bool isEditingLocked() const { return locked_; }

    // The learning rate of each preview point (empty for ReduceLROnPlateau or an invalid spec)
    // and its x: the epoch or optimizer step, counting from 1. Every step up to 2,000 steps;
    // a longer run at most 2,000 of them, with the schedule's corners (lr_preview_sampling.h).
    const std::vector<double>& previewValues() const { return previewLr_; }
    const std::vector<double>& previewPositions() const { return previewX_; }
    // The message under the plot when the optimizer or schedule cannot be built; empty when fine.
    QString previewError() const;
    // Optimizer steps per epoch the preview assumes for a per-step schedule: computed from the
    // data spec where the training-set size is known without reading files (Fashion-MNIST),
    // otherwise the value set in the preview's "assume" field.
    int64_t previewStepsPerEpoch() const;
    bool stepsPerEpochKnown() const;
    // The class-weights table of a loss with weights by class name (CrossEntropyLoss, NLLLoss);
    // nullptr for other losses. Its classes come from classCounts().
    ClassWeightsEditor* classWeightsEditor() const { return classWeights_; }
    ClassCountsLoader* classCounts() const { return classCounts_; }

    // "Processes on this machine" in the Run section: a studio setting (remembered, not part of
    // the project). The shell shows it when it can launch a multi-process run (mpirun and the
    // CLI are there); hidden, processes() is 1. More than 1: a data-parallel run in that many
    // processes, the threads split between them.
    void setProcessesAvailable(bool available, int maxProcesses);
    int processes() const;

    // "Find learning rate…": opens the range test's dialog (null before, or once it closed);
    // a suggestion it applies is one undoable edit of the optimizer's lr.
    void findLearningRate();
    // Where the range test is recorded (the studio's run store); unset or empty: not recorded.
    void setRunStorePath(std::function<QString()> storePath) { storePath_ = std::move(storePath); }
    LrFinderDialog* lrFinderDialog() const;

  protected:
    bool eventFilter(QObject* watched, QEvent* event) override; // hides the hover on leave
    void showEvent(QShowEvent* event) override; // the data's classes are read once shown

  private:
    // One of the three component choices (loss, optimizer, scheduler): kind combo, the kind's
    // documentation and its options form in a container the form is rebuilt in.
    struct Component {
        spec::Family family = spec::Family::Loss;
        bool optional = false; // the scheduler: "None" first
        QComboBox* kind = nullptr;
        QLabel* doc = nullptr;
        QWidget* container = nullptr; // "lossOptions", "optimizerOptions", "schedulerOptions"
        QWidget* form = nullptr;      // rebuilt when the kind changes
        AttrRows rows;
        std::string shownKind;
        bool built = false;
        std::function<std::optional<spec::Choice>(const spec::TrainSpec&)> get;
        std::function<void(spec::TrainSpec&, std::optional<spec::Choice>)> set;
        QString what; // "loss", "optimizer", "LR schedule" in undo texts
    };

    void buildUi();
    // The settings column, one section (heading and form) after the other, and the options
    // forms of the component choices (training_page_settings.cpp).
    QWidget* buildSettings();
    void buildScheduleSection(QFormLayout* form);
    void buildRunSection(QFormLayout* form);
    void buildEarlyStoppingSection(QFormLayout* form);
    void buildCheckpointSection(QFormLayout* form);
    void buildCaptureSection(QFormLayout* form);
    void buildComponent(Component& c, QFormLayout* form, const QString& objectName);
    void rebuildOptions(Component& c, const std::optional<spec::Choice>& choice);
    // The learning-rate preview: plot, notes and assumed steps (training_page_lr_preview.cpp).
    QWidget* buildPreview();
    void updatePreview();
    void showHover(QMouseEvent* event);
    void refresh();
    void refreshMetricCombos(const spec::TrainSpec& t);
    void updateEnabled();
    void updateOverview();

    // The document's spec with `change` applied, committed as one undo step. Changes that core
    // cannot build (optimizer or schedule options it rejects) are refused and explained under
    // the plot (and under `field` when given) unless the current spec is not buildable either.
    bool commit(const std::function<void(spec::TrainSpec&)>& change, const QString& text,
                const QString& mergeKey = QString(), const AttrRow* field = nullptr);
    void commitKind(Component& c);
    void commitOption(Component& c, const AttrRow& row, const graph::AttrValue& value);
    void commitSeed();
    void commitCaptureLayers();
    // Shows the loss's class weights and asks for the data's classes when the loss has them.
    void refreshClassWeights(const spec::TrainSpec& t);

    // The metrics the trainer records for this project (val_* only with a validation split).
    QStringList availableMetrics() const;
    std::optional<int64_t> knownStepsPerEpoch() const;
    // What stops core from building `t`'s optimizer and schedule; empty when it builds.
    QString buildError(const spec::TrainSpec& t) const;
    int64_t previewSteps(const spec::TrainSpec& t) const;

    ProjectDocument* document_;
    QPushButton* findLr_ = nullptr;
    QPointer<LrFinderDialog> lrFinder_;
    std::function<QString()> storePath_;
    bool locked_ = false;
    QString lockReason_;

    QLabel* banner_ = nullptr;
    QScrollArea* scroll_ = nullptr;
    QWidget* settings_ = nullptr;

    Component loss_, optimizer_, scheduler_;
    QComboBox* interval_ = nullptr;
    QComboBox* plateauMetric_ = nullptr;
    QLabel* plateauMetricWarning_ = nullptr;
    QLabel* plateauMetricLabel_ = nullptr;
    QFormLayout* scheduleForm_ = nullptr;

    QSpinBox* epochs_ = nullptr;
    QSpinBox* accumulation_ = nullptr;
    QCheckBox* clipNormEnabled_ = nullptr;
    QDoubleSpinBox* clipNorm_ = nullptr;
    QCheckBox* clipValueEnabled_ = nullptr;
    QDoubleSpinBox* clipValue_ = nullptr;
    QComboBox* precision_ = nullptr;
    QCheckBox* flushDenormal_ = nullptr; // training.flush_denormal
    QCheckBox* deterministic_ = nullptr; // training.deterministic
    QCheckBox* allowTf32_ = nullptr;     // training.allow_tf32
    QLineEdit* seed_ = nullptr;
    QLineEdit* initWeights_ = nullptr;
    QLabel* seedError_ = nullptr;
    QSpinBox* validateEvery_ = nullptr;
    QSpinBox* threads_ = nullptr;
    QSpinBox* processes_ = nullptr; // shown only when setProcessesAvailable(true, ...)
    QLabel* processesNote_ = nullptr;
    bool processesAvailable_ = false;
    void buildProcessesRow();
    void updateProcessesNote();
    DevicePicker* device_ = nullptr; // training.device (widgets/device_picker.h)

    QCheckBox* esEnabled_ = nullptr;
    QComboBox* esMetric_ = nullptr;
    QLabel* esMetricWarning_ = nullptr;
    QComboBox* esMode_ = nullptr;
    QSpinBox* esPatience_ = nullptr;
    QDoubleSpinBox* esMinDelta_ = nullptr;

    QSpinBox* ckEvery_ = nullptr;
    QCheckBox* ckKeepBest_ = nullptr;
    QSpinBox* ckKeepLast_ = nullptr;

    QCheckBox* capNorms_ = nullptr;
    QSpinBox* capNormsEvery_ = nullptr;
    QSpinBox* capSummaries_ = nullptr;
    QSpinBox* capFeatureMaps_ = nullptr;
    QLineEdit* capLayers_ = nullptr;
    QLabel* capLayersError_ = nullptr;

    QLabel* previewSummary_ = nullptr;
    QStackedWidget* previewStack_ = nullptr;
    QCustomPlot* plot_ = nullptr;
    QCPItemTracer* tracer_ = nullptr;
    QCPItemText* hoverText_ = nullptr;
    QLabel* previewNote_ = nullptr;
    QLabel* plateauNote_ = nullptr;
    QLabel* previewError_ = nullptr;
    QLabel* stepsInfo_ = nullptr;
    QWidget* assumeRow_ = nullptr;
    QSpinBox* assumedSteps_ = nullptr;
    QLabel* overview_ = nullptr;

    ClassCountsLoader* classCounts_ = nullptr;
    ClassWeightsEditor* classWeights_ = nullptr; // in the loss's options form
    std::string classWeightsOption_;             // the option it edits ("weight")

    std::vector<double> previewX_, previewLr_;
    QString refusedError_; // a refused edit's reason, shown until the next document change
};

} // namespace myelin::ui
