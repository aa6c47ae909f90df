#pragma once
// File > Export…: a recorded run's checkpoint (its best, its last, or any step; or a checkpoint
// file) written as ONNX, PyTorch code or self-describing safetensors, as `myelin export` does.
// Before anything is written the dialog says what will be (the files, and for ONNX which
// runtimes run the file); the export runs off the GUI thread, writes nothing when it fails, and
// the written file is read back before the dialog says it is done.
#include <QDialog>
#include <QFutureWatcher>
#include <QString>

class QButtonGroup;
class QLabel;
class QLineEdit;
class QPushButton;

namespace myelin::ui {

class CheckpointPicker;

class ExportDialog : public QDialog {
    Q_OBJECT

  public:
    // The runs of the store at `storePath` that have checkpoints are offered, `run` chosen first
    // (-1: the newest). `outputFolder`: where the file goes by default.
    ExportDialog(const QString& storePath, qint64 run, const QString& outputFolder,
                 QWidget* parent = nullptr);
    ~ExportDialog() override;

    // What a test sets as a person would.
    CheckpointPicker* picker() const { return picker_; }
    QLineEdit* outputEdit() const { return output_; }
    void setFormat(int format); // exporters::Format
    // The checkpoint file chosen; empty when there is none.
    QString checkpointPath() const;
    // Starts the export (the Export button); exportFinished tells how it ended.
    void startExport();
    // The last export's outcome in words (what was written, or why nothing was).
    QString outcome() const;

  signals:
    void exportFinished(bool ok);

  private:
    void onCheckpointChanged();
    void chooseOutput();
    void updatePlan();
    void onExportDone();

    QString outputFolder_;
    CheckpointPicker* picker_ = nullptr;
    QButtonGroup* formatGroup_ = nullptr;
    QLineEdit* output_ = nullptr;
    QLabel* plan_ = nullptr;
    QLabel* outcome_ = nullptr;
    QPushButton* exportButton_ = nullptr;
    QFutureWatcher<QString> watcher_; // the error text; empty when the export succeeded
    QString writtenPath_;
};

} // namespace myelin::ui
