#include "runs/checkpoint_picker.h"

#include "inspect/view_frame.h"

#include <myelin/error.h>
#include <myelin/store/run_store.h>

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QPushButton>

#include <filesystem>
#include <map>

namespace myelin::ui {

CheckpointPicker::CheckpointPicker(QWidget* parent) : QWidget(parent) {
    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    runBox_ = new QComboBox(this);
    runBox_->setObjectName(QStringLiteral("checkpointRun"));
    runBox_->setMinimumContentsLength(28);
    runBox_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    checkpointBox_ = new QComboBox(this);
    checkpointBox_->setObjectName(QStringLiteral("checkpointStep"));
    checkpointBox_->setMinimumContentsLength(16);
    auto* other = new QPushButton(tr("Other File…"), this);
    other->setObjectName(QStringLiteral("checkpointOtherFile"));
    connect(other, &QPushButton::clicked, this, [this] {
        const QString file = QFileDialog::getOpenFileName(this, tr("Choose a Checkpoint"),
                                                          QFileInfo(checkpointPath()).path(),
                                                          tr("Checkpoints (*.safetensors)"));
        if (!file.isEmpty()) chooseFile(file);
    });
    row->addWidget(runBox_, 3);
    row->addWidget(checkpointBox_, 2);
    row->addWidget(other);
    connect(runBox_, &QComboBox::currentIndexChanged, this, &CheckpointPicker::onRunChanged);
    connect(checkpointBox_, &QComboBox::currentIndexChanged, this, [this] {
        if (checkpointBox_->currentData().toString() != file_) file_.clear();
        emit changed();
    });
}

void CheckpointPicker::setStorePath(const QString& path) {
    storePath_ = path;
    reload();
}

void CheckpointPicker::reload() {
    const qint64 chosen = runId();
    runs_.clear();
    problem_.clear();
    QString error;
    if (const auto store = openStoreForReading(storePath_, &error)) {
        try {
            for (const auto& summary : store->list_runs()) {
                RunEntry entry;
                entry.id = summary.run.id;
                entry.name = QString::fromStdString(summary.run.name);
                entry.projectPath = QString::fromStdString(summary.run.project_path);
                // Per step the newest file that still exists; best.safetensors on its own (it
                // is listed at every step it was written and holds the last of them).
                std::map<int64_t, std::string> files;
                std::optional<store::Artifact> best;
                for (auto& a : store->artifacts(summary.run.id)) {
                    std::error_code ec;
                    if (a.kind != "checkpoint" || !std::filesystem::is_regular_file(a.path, ec))
                        continue;
                    if (a.path.filename() == "best.safetensors") {
                        if (!best || a.step > best->step) best = a;
                    } else {
                        files[a.step] = a.path.string();
                    }
                }
                if (best)
                    entry.checkpoints.push_back({tr("best (step %1)").arg(best->step),
                                                 QString::fromStdString(best->path.string()),
                                                 best->step});
                for (auto it = files.rbegin(); it != files.rend(); ++it)
                    entry.checkpoints.push_back({it == files.rbegin()
                                                     ? tr("last (step %1)").arg(it->first)
                                                     : tr("step %1").arg(it->first),
                                                 QString::fromStdString(it->second), it->first});
                if (entry.checkpoints.empty()) continue;
                entry.projectJson = store->run(summary.run.id).project_json;
                runs_.push_back(std::move(entry));
            }
        } catch (const Error& e) {
            problem_ = QString::fromUtf8(e.what());
        }
    } else {
        problem_ = error.isEmpty() ? tr("No runs recorded yet: train the model first.") : error;
    }
    if (problem_.isEmpty() && runs_.empty())
        problem_ = tr("No run has a checkpoint left: train the model first.");
    {
        const QSignalBlocker blocker(runBox_);
        runBox_->clear();
        for (const auto& run : runs_)
            runBox_->addItem(tr("#%1 %2").arg(run.id).arg(run.name), run.id);
        const int again = runBox_->findData(chosen);
        runBox_->setCurrentIndex(again >= 0 ? again : (runs_.empty() ? -1 : 0));
    }
    onRunChanged();
}

bool CheckpointPicker::selectRun(qint64 run) {
    const int index = runBox_->findData(run);
    if (index < 0) return false;
    runBox_->setCurrentIndex(index);
    return true;
}

void CheckpointPicker::onRunChanged() {
    file_.clear();
    {
        const QSignalBlocker blocker(checkpointBox_);
        checkpointBox_->clear();
        const int index = runBox_->currentIndex();
        if (index >= 0)
            for (const auto& c : runs_[size_t(index)].checkpoints)
                checkpointBox_->addItem(c.label, c.path);
    }
    emit changed();
}

void CheckpointPicker::chooseFile(const QString& path) {
    file_ = path;
    {
        const QSignalBlocker blocker(checkpointBox_);
        checkpointBox_->insertItem(0, QFileInfo(path).fileName(), path);
        checkpointBox_->setCurrentIndex(0);
    }
    emit changed();
}

qint64 CheckpointPicker::runId() const {
    if (!file_.isEmpty() || runBox_->currentIndex() < 0) return -1;
    return runBox_->currentData().toLongLong();
}

QString CheckpointPicker::runName() const {
    const int index = runBox_->currentIndex();
    return file_.isEmpty() && index >= 0 ? runs_[size_t(index)].name : QString();
}

QString CheckpointPicker::checkpointPath() const {
    return checkpointBox_->currentData().toString();
}

std::optional<int64_t> CheckpointPicker::checkpointStep() const {
    const int index = runBox_->currentIndex();
    if (!file_.isEmpty() || index < 0) return std::nullopt;
    const int row = checkpointBox_->currentIndex();
    const auto& list = runs_[size_t(index)].checkpoints;
    if (row < 0 || size_t(row) >= list.size()) return std::nullopt;
    return list[size_t(row)].step;
}

std::optional<io::Project> CheckpointPicker::runProject() const {
    const int index = runBox_->currentIndex();
    if (!file_.isEmpty() || index < 0 || runs_[size_t(index)].projectJson.empty())
        return std::nullopt;
    try {
        return io::parse_project(runs_[size_t(index)].projectJson,
                                 "run " + std::to_string(runs_[size_t(index)].id) +
                                     "'s recorded project");
    } catch (const Error&) {
        return std::nullopt;
    }
}

QString CheckpointPicker::runProjectDirectory() const {
    const int index = runBox_->currentIndex();
    if (!file_.isEmpty() || index < 0 || runs_[size_t(index)].projectPath.isEmpty()) return {};
    return QFileInfo(runs_[size_t(index)].projectPath).path();
}

} // namespace myelin::ui
