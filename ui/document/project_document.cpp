#include "document/project_document.h"

#include "document/model_edits.h"

#include <QDir>
#include <QFileInfo>
#include <QUndoCommand>
#include <QUndoStack>

#include <filesystem>

namespace myelin::ui {

// Swaps whole model snapshots: a ModelSpec is small plain data, so storing both sides is simpler
// and safer than inverse operations. Moves of one drag merge into a single command.
class ModelCommand : public QUndoCommand {
  public:
    static constexpr int kMoveId = 0x4d4f5645; // "MOVE"

    ModelCommand(ProjectDocument* document, graph::ModelSpec before, graph::ModelSpec after,
                 const QString& text, int dragId = -1)
        : document_(document), before_(std::move(before)), after_(std::move(after)),
          dragId_(dragId) {
        setText(text);
    }

    int id() const override { return dragId_ >= 0 ? kMoveId : -1; }

    bool mergeWith(const QUndoCommand* other) override {
        const auto* move = static_cast<const ModelCommand*>(other);
        if (move->dragId_ != dragId_) return false;
        after_ = move->after_;
        setText(move->text());
        setObsolete(after_ == before_); // dragged back to where it started
        return true;
    }

    void redo() override { document_->setModel(after_, dragId_ >= 0); }
    void undo() override { document_->setModel(before_, dragId_ >= 0); }

  private:
    ProjectDocument* document_;
    graph::ModelSpec before_, after_;
    int dragId_;
};

// Swaps the data and training specs (the Data and Training pages' edits). Consecutive changes
// of the same field (typing in one spin box) merge into one command.
class SettingsCommand : public QUndoCommand {
  public:
    static constexpr int kSettingsId = 0x53455453; // "SETS"

    SettingsCommand(ProjectDocument* document, std::pair<spec::DataSpec, spec::TrainSpec> before,
                    std::pair<spec::DataSpec, spec::TrainSpec> after, const QString& text,
                    QString mergeKey)
        : document_(document), before_(std::move(before)), after_(std::move(after)),
          mergeKey_(std::move(mergeKey)) {
        setText(text);
    }

    int id() const override { return mergeKey_.isEmpty() ? -1 : kSettingsId; }

    bool mergeWith(const QUndoCommand* other) override {
        const auto* next = static_cast<const SettingsCommand*>(other);
        if (next->mergeKey_ != mergeKey_) return false;
        after_ = next->after_;
        setText(next->text());
        setObsolete(after_ == before_);
        return true;
    }

    void redo() override { document_->setSettings(after_.first, after_.second); }
    void undo() override { document_->setSettings(before_.first, before_.second); }

  private:
    ProjectDocument* document_;
    std::pair<spec::DataSpec, spec::TrainSpec> before_, after_;
    QString mergeKey_;
};

ProjectDocument::ProjectDocument(QObject* parent) : QObject(parent) {
    undoStack_ = new QUndoStack(this);
    undoStack_->setObjectName(QStringLiteral("undoStack"));
    connect(undoStack_, &QUndoStack::cleanChanged, this, &ProjectDocument::updateDirty);
    analysis_ = graph::analyze(project_.model);
}

QString ProjectDocument::displayName() const {
    if (!filePath_.isEmpty()) return QFileInfo(filePath_).fileName();
    if (!project_.name.empty()) return QString::fromStdString(project_.name);
    return tr("Untitled");
}

QString ProjectDocument::dataDirectory() const {
    if (!filePath_.isEmpty()) return QFileInfo(filePath_).absolutePath();
    if (!untitledDataDirectory_.isEmpty()) return untitledDataDirectory_;
    return QDir::currentPath();
}

bool ProjectDocument::isDirty() const {
    return open_ && (unsavedOnOpen_ || !undoStack_->isClean());
}

void ProjectDocument::open(io::Project project, const QString& path, bool dirty,
                           const QString& untitledDataDirectory) {
    undoStack_->clear();
    project_ = std::move(project);
    untitledDataDirectory_ = untitledDataDirectory;
    open_ = true;
    unsavedOnOpen_ = dirty;
    const QString previousPath = filePath_;
    filePath_ = path.isEmpty() ? QString() : QFileInfo(path).absoluteFilePath();
    analysis_ = graph::analyze(project_.model);
    emit projectReplaced();
    emit modelChanged(false);
    emit dataSpecChanged();
    emit trainSpecChanged();
    if (filePath_ != previousPath) emit filePathChanged(filePath_);
    updateDirty();
}

void ProjectDocument::close() {
    undoStack_->clear();
    project_ = io::Project{};
    open_ = false;
    unsavedOnOpen_ = false;
    const bool hadPath = !filePath_.isEmpty();
    filePath_.clear();
    untitledDataDirectory_.clear();
    analysis_ = graph::analyze(project_.model);
    emit projectReplaced();
    emit modelChanged(false);
    emit dataSpecChanged();
    emit trainSpecChanged();
    if (hadPath) emit filePathChanged(filePath_);
    updateDirty();
}

void ProjectDocument::saveAs(const QString& path) {
    const QString absolute = QFileInfo(path).absoluteFilePath();
    io::save_project(project_, std::filesystem::path(absolute.toStdString()));
    unsavedOnOpen_ = false;
    undoStack_->setClean();
    if (absolute != filePath_) {
        filePath_ = absolute;
        emit filePathChanged(filePath_);
    }
    updateDirty();
}

void ProjectDocument::applyEdit(const graph::ModelSpec& after, const QString& text) {
    if (!open_ || locked_ || after == project_.model) return;
    undoStack_->push(new ModelCommand(this, project_.model, after, text));
}

void ProjectDocument::moveNodes(const std::vector<std::pair<graph::NodeId, QPointF>>& positions,
                                int dragId) {
    if (!open_ || locked_) return;
    graph::ModelSpec after = project_.model;
    int moved = 0;
    graph::NodeId single = -1;
    for (const auto& [id, pos] : positions) {
        graph::Node* node = after.find(id);
        if (node == nullptr || (node->x == pos.x() && node->y == pos.y())) continue;
        node->x = pos.x();
        node->y = pos.y();
        single = id;
        ++moved;
    }
    if (moved == 0) return;
    const QString text = positions.size() == 1 ? tr("Move %1").arg(nodeLabel(after, single))
                                               : tr("Move %1 nodes").arg(positions.size());
    undoStack_->push(new ModelCommand(this, project_.model, std::move(after), text, dragId));
}

void ProjectDocument::applyDataEdit(const spec::DataSpec& after, const QString& text,
                                    const QString& mergeKey) {
    if (!open_ || locked_ || after == project_.data) return;
    undoStack_->push(new SettingsCommand(this, {project_.data, project_.train},
                                         {after, project_.train}, text, mergeKey));
}

void ProjectDocument::applyTrainEdit(const spec::TrainSpec& after, const QString& text,
                                     const QString& mergeKey) {
    if (!open_ || locked_ || after == project_.train) return;
    undoStack_->push(new SettingsCommand(this, {project_.data, project_.train},
                                         {project_.data, after}, text, mergeKey));
}

void ProjectDocument::setSettings(const spec::DataSpec& data, const spec::TrainSpec& train) {
    const bool dataChanged = !(data == project_.data);
    const bool trainChanged = !(train == project_.train);
    project_.data = data;
    project_.train = train;
    if (dataChanged) emit dataSpecChanged();
    if (trainChanged) emit trainSpecChanged();
}

void ProjectDocument::setLayoutWithoutUndo(const graph::ModelSpec& arranged) {
    setModel(arranged, true);
}

void ProjectDocument::setModel(const graph::ModelSpec& spec, bool layoutOnly) {
    project_.model = spec;
    if (!layoutOnly) analysis_ = graph::analyze(project_.model);
    emit modelChanged(layoutOnly);
}

void ProjectDocument::updateDirty() {
    const bool dirty = isDirty();
    if (dirty == lastDirty_) return;
    lastDirty_ = dirty;
    emit dirtyChanged(dirty);
}

} // namespace myelin::ui
