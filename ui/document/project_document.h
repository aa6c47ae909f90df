#pragma once
// The open project as the studio edits it: the io::Project, where it is saved, its undo history
// and the analysis (shape inference and validation) of its current model. Every change is a
// command on the undo stack that swaps whole snapshots (the ModelSpec, or the data and training
// specs); a model change re-runs graph::analyze before modelChanged() is emitted.
#include <myelin/graph/analysis.h>
#include <myelin/io/project.h>

#include <QObject>
#include <QPointF>
#include <QString>

#include <utility>
#include <vector>

class QUndoStack;

namespace myelin::ui {

class ProjectDocument : public QObject {
    Q_OBJECT

  public:
    explicit ProjectDocument(QObject* parent = nullptr);

    // False until a project is opened or created, and after close().
    bool isOpen() const { return open_; }
    const io::Project& project() const { return project_; }
    const graph::ModelSpec& spec() const { return project_.model; }
    // The analysis of spec() with batch size 1.
    const graph::Analysis& analysis() const { return analysis_; }
    QUndoStack* undoStack() const { return undoStack_; }
    // Where Save writes; empty for a project that was never saved.
    QString filePath() const { return filePath_; }
    // The file name, or the project's name (or "Untitled") before the first save.
    QString displayName() const;
    // The folder the project's relative data paths are read from: the project file's; for an
    // untitled copy of an example, the example's; else the current directory. The Data page's
    // preview and a training run both read the data from here.
    QString dataDirectory() const;
    // Changed since it was opened or last saved.
    bool isDirty() const;

    // A locked document refuses every edit (while a training run uses it); undo and redo are
    // the caller's to disable.
    void setLocked(bool locked) { locked_ = locked; }
    bool isLocked() const { return locked_; }

    // Replaces the open project; the undo history starts empty. `dirty`: it holds changes not in
    // `path` (a recovered autosave).
    // `untitledDataDirectory`: where an untitled project's data paths point (the folder of the
    // example it was copied from); ignored once the project has a file.
    void open(io::Project project, const QString& path, bool dirty = false,
              const QString& untitledDataDirectory = QString());
    void close();
    // Writes the project to `path` (atomically), which becomes the file path. Throws
    // myelin::Error when the file cannot be written.
    void saveAs(const QString& path);

    // One undoable edit replacing the model with `after`; nothing happens when it equals the
    // current model.
    void applyEdit(const graph::ModelSpec& after, const QString& text);
    // Node positions from a drag; calls with the same dragId merge into one "Move" command.
    void moveNodes(const std::vector<std::pair<graph::NodeId, QPointF>>& positions, int dragId);
    // One undoable edit of the data spec (Data page) or the training spec (Training page).
    // Edits with the same non-empty `mergeKey` in a row merge into one command (a spin box
    // stepped ten times is one undo). Nothing happens when `after` equals the current spec.
    void applyDataEdit(const spec::DataSpec& after, const QString& text,
                       const QString& mergeKey = QString());
    void applyTrainEdit(const spec::TrainSpec& after, const QString& text,
                        const QString& mergeKey = QString());
    // Positions set without history (the automatic arrangement of a file just opened).
    void setLayoutWithoutUndo(const graph::ModelSpec& arranged);

  signals:
    // The model changed (edit, undo, redo); analysis() is already updated. layoutOnly: only
    // positions changed, so the analysis is the previous one.
    void modelChanged(bool layoutOnly);
    // The data spec / training spec changed (edit, undo, redo, or a project was opened).
    void dataSpecChanged();
    void trainSpecChanged();
    // A different project (or none) replaced the previous one.
    void projectReplaced();
    void dirtyChanged(bool dirty);
    void filePathChanged(const QString& path);

  private:
    friend class ModelCommand;
    friend class SettingsCommand;
    void setSettings(const spec::DataSpec& data, const spec::TrainSpec& train);
    void setModel(const graph::ModelSpec& spec, bool layoutOnly);
    void updateDirty();

    io::Project project_;
    graph::Analysis analysis_;
    QUndoStack* undoStack_ = nullptr;
    QString filePath_;
    QString untitledDataDirectory_;
    bool open_ = false;
    bool unsavedOnOpen_ = false;
    bool lastDirty_ = false;
    bool locked_ = false;
};

} // namespace myelin::ui
