#pragma once
// Resume or fork a recorded run from one of its checkpoints (Runs > Resume… / Fork…): the run's
// loss curve with a marker at every checkpoint (click one, or pick it from the list), then either
// resume the run from there or fork a new run from there with edits — learning rate, epochs,
// schedule, frozen layers, capture — shown as the list of changes the fork will record
// (io::project_changes, the same "fork.diff.*" parameters `myelin train --fork` records) before
// it starts. The fork trains the parent's project as it was recorded, plus the edits. Either
// trains on the device picked under the modes: the run's own, or the CPU where the run's cannot
// be used here (a GPU run resumed on a machine without one), with a note saying so.
#include <myelin/io/project.h>
#include <myelin/train/recorded_run.h>

#include <QDialog>
#include <QString>

#include <optional>
#include <vector>

class QButtonGroup;
class QComboBox;
class QCustomPlot;
class QDialogButtonBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QSpinBox;
class QTableWidget;

namespace myelin::ui {

class DevicePicker;

class ForkDialog : public QDialog {
    Q_OBJECT

  public:
    enum class Mode { Resume, Fork };

    // Reads run `run` of the store at `storePath`: its checkpoints, loss and recorded project.
    // Problems (no such run, a run still going, no checkpoint left, a project snapshot that
    // cannot be read) are said in the dialog, and it cannot be accepted.
    ForkDialog(const QString& storePath, qint64 run, Mode mode, QWidget* parent = nullptr);
    ~ForkDialog() override;

    Mode mode() const;
    void setMode(Mode mode);
    qint64 runId() const { return run_; }
    // Why the dialog cannot start anything; empty when it can.
    QString problem() const { return problem_; }

    // The chosen checkpoint: its optimizer step and file. Unset when there is none.
    std::optional<int64_t> checkpointStep() const;
    QString checkpointPath() const;
    // Selects the checkpoint written at `step` (false: there is none that still exists).
    bool selectCheckpoint(int64_t step);

    // Where the fork branches off (the run and the chosen checkpoint's step).
    train::ForkSource forkSource() const;
    // What to train: the run's recorded project, plus the edits when forking, on the chosen
    // device (training.device changed only when it differs from the recorded one).
    io::Project project() const;
    // The project file the run was trained from, and its folder (its data paths are relative
    // to it); empty when the store does not record it.
    QString projectPath() const { return projectPath_; }
    QString projectDirectory() const;
    // What the fork changes from the run's project, as it will be recorded.
    std::vector<io::ProjectChange> changes() const;

    // The edit fields (tests set them as a person would).
    QLineEdit* learningRateEdit() const { return learningRate_; }
    QSpinBox* epochsEdit() const { return epochs_; }
    QComboBox* scheduleEdit() const { return schedule_; }
    QListWidget* frozenLayersEdit() const { return frozen_; }
    QTableWidget* changesTable() const { return changesTable_; }
    DevicePicker* devicePicker() const { return device_; }

  private:
    struct Checkpoint {
        int64_t step = 0;
        int64_t epoch = -1;
        bool best = false;
        QString path;
        QString missing; // why the file cannot be used; empty when it can
    };

    void load(const QString& storePath);
    void buildEditors();
    void plotCheckpoints();
    void onCheckpointRowChanged(int row);
    void onPlotClicked(double step);
    void updateChanges();
    void updateAcceptable();

    qint64 run_ = 0;
    QString runName_;
    QString projectPath_;
    QString problem_;
    std::optional<io::Project> base_;
    std::vector<Checkpoint> checkpoints_;
    std::vector<double> lossSteps_, lossValues_;

    QLabel* header_ = nullptr;
    QLabel* problemLabel_ = nullptr;
    QCustomPlot* plot_ = nullptr;
    QListWidget* checkpointList_ = nullptr;
    QButtonGroup* modeGroup_ = nullptr;
    DevicePicker* device_ = nullptr;
    QLabel* deviceNote_ = nullptr;
    QString recordedDevice_; // the run's training.device as the picker names it
    QGroupBox* editsBox_ = nullptr;
    QLineEdit* learningRate_ = nullptr;
    QSpinBox* epochs_ = nullptr;
    QComboBox* schedule_ = nullptr;
    QListWidget* frozen_ = nullptr;
    QSpinBox* summariesEvery_ = nullptr;
    QSpinBox* featureMapsEvery_ = nullptr;
    QTableWidget* changesTable_ = nullptr;
    QLabel* changesNote_ = nullptr;
    QDialogButtonBox* buttons_ = nullptr;
};

} // namespace myelin::ui
