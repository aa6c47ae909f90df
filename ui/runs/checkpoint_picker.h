#pragma once
// Choose a checkpoint of a recorded run: a list of the store's runs that wrote checkpoints whose
// files still exist (newest first), and that run's checkpoints — its best, its last, then every
// other step — or a checkpoint file picked from disk ("Other File…"). Used by the Evaluate tab
// and the Export dialog.
#include <myelin/io/project.h>

#include <QString>
#include <QWidget>

#include <optional>
#include <vector>

class QComboBox;
class QLabel;

namespace myelin::ui {

class CheckpointPicker : public QWidget {
    Q_OBJECT

  public:
    explicit CheckpointPicker(QWidget* parent = nullptr);

    // Reads the store's runs (again); keeps the chosen run when it is still listed.
    void setStorePath(const QString& path);
    void reload();
    // Chooses run `run` (false: it has no checkpoint left, or is not in the store).
    bool selectRun(qint64 run);

    QComboBox* runBox() const { return runBox_; }
    QComboBox* checkpointBox() const { return checkpointBox_; }
    // The chosen run (-1: none, or a file from disk) and checkpoint file (empty: none).
    qint64 runId() const;
    QString runName() const;
    QString checkpointPath() const;
    std::optional<int64_t> checkpointStep() const;
    // The project the chosen run was trained with, and the folder its data paths are relative
    // to (the project file's, where the store records it); unset for a file from disk, or a
    // run whose project cannot be read (`problem()` says why).
    std::optional<io::Project> runProject() const;
    QString runProjectDirectory() const;
    // Why nothing can be chosen (no store yet, no run with a checkpoint, a store that cannot be
    // read); empty when something can.
    QString problem() const { return problem_; }
    // Chooses a file from disk as the checkpoint (what "Other File…" does after its dialog).
    void chooseFile(const QString& path);

  signals:
    void changed();

  private:
    struct Checkpoint {
        QString label;
        QString path;
        int64_t step = 0;
    };
    struct RunEntry {
        qint64 id = -1;
        QString name;
        std::string projectJson;
        QString projectPath;
        std::vector<Checkpoint> checkpoints;
    };

    void onRunChanged();

    QString storePath_;
    QString problem_;
    std::vector<RunEntry> runs_;
    QString file_; // a file chosen from disk
    QComboBox* runBox_ = nullptr;
    QComboBox* checkpointBox_ = nullptr;
};

} // namespace myelin::ui
