// RunsBrowser's actions: the context menu, rename, tags, note, delete (asking first, on a worker
// thread: it hashes artifact files) and CSV export. Every dialog is opened window-modal with
// open(), so nothing blocks in a nested event loop, and carries an object name.
#include "runs/runs_browser.h"

#include "runs/runs_browser_internal.h"

#include <myelin/error.h>

#include <QAction>
#include <QDateTime>
#include <QDir>
#include <QDirIterator>
#include <QFileDialog>
#include <QFutureWatcher>
#include <QInputDialog>
#include <QLocale>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSaveFile>
#include <QTreeView>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <set>

namespace myelin::ui {

namespace {
// At most this many runs or files are named in a question; the rest are counted.
constexpr int kListedInQuestion = 8;

QString runLabel(const store::Run& run) {
    return QStringLiteral("#%1 %2").arg(run.id).arg(QString::fromStdString(run.name));
}

// "a, b ,, c" -> {"a", "b", "c"}: the tags as typed, spaces around each dropped.
std::vector<std::string> parseTags(const QString& text) {
    std::vector<std::string> tags;
    for (const QString& part : text.split(QLatin1Char(','))) {
        const QString tag = part.trimmed();
        if (!tag.isEmpty()) tags.push_back(tag.toStdString());
    }
    return tags;
}

QString listed(const QStringList& items) {
    QStringList shown = items.mid(0, kListedInQuestion);
    if (items.size() > kListedInQuestion)
        shown << QStringLiteral("… and %1 more").arg(items.size() - kListedInQuestion);
    return shown.join(QLatin1Char('\n'));
}

DeleteOutcome deleteRuns(const std::shared_ptr<store::RunStore>& store, const QList<qint64>& runs) {
    DeleteOutcome out;
    for (qint64 id : runs) {
        try {
            const store::DeleteResult result = store->delete_run(id);
            out.deleted << id;
            out.removedFiles += int(result.removed_files.size());
            for (const auto& kept : result.kept_files)
                out.keptFiles << QString::fromStdString(kept);
        } catch (const std::exception& e) {
            out.refused << QString::fromStdString(e.what());
        }
    }
    return out;
}
} // namespace

void RunsBrowser::showError(const QString& title, const QString& text) {
    auto* box = new QMessageBox(QMessageBox::Warning, title, text, QMessageBox::Ok, this);
    box->setObjectName(QStringLiteral("runsErrorBox"));
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
}

void RunsBrowser::contextMenu(const QPoint& position) {
    if (!tree_->indexAt(position).isValid()) return;
    auto* menu = new QMenu(this);
    menu->setObjectName(QStringLiteral("runsContextMenu"));
    menu->setAttribute(Qt::WA_DeleteOnClose);
    menu->addActions({resumeAction_, forkAction_, evaluateAction_});
    menu->addSeparator();
    menu->addActions({renameAction_, tagsAction_, noteAction_});
    menu->addSeparator();
    menu->addActions({deleteAction_, exportAction_});
    menu->popup(tree_->viewport()->mapToGlobal(position));
}

void RunsBrowser::renameSelected() {
    const RunRecord* record = singleSelected();
    if (!record || !store_) return;
    const qint64 id = record->run.id;
    auto* dialog = new QInputDialog(this);
    dialog->setObjectName(QStringLiteral("renameRunDialog"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowTitle(QStringLiteral("Rename run"));
    dialog->setLabelText(QStringLiteral("New name of run #%1:").arg(id));
    dialog->setTextValue(QString::fromStdString(record->run.name));
    connect(dialog, &QInputDialog::textValueSelected, this, [this, id](const QString& text) {
        try {
            store_->rename_run(id, text.trimmed().toStdString());
        } catch (const Error& e) {
            showError(QStringLiteral("Rename run"), QString::fromStdString(e.what()));
        }
        refresh();
    });
    dialog->open();
}

void RunsBrowser::editTags() {
    const QList<qint64> runs = selectedRuns();
    if (runs.isEmpty() || !store_) return;
    // The tags every selected run has: the ones the dialog edits (others stay on their runs).
    std::set<std::string> shared;
    bool first = true;
    for (qint64 id : runs) {
        const RunRecord* r = model_->recordOf(id);
        if (!r) continue;
        const std::set<std::string> tags(r->run.tags.begin(), r->run.tags.end());
        if (first) {
            shared = tags;
        } else {
            std::set<std::string> both;
            std::set_intersection(shared.begin(), shared.end(), tags.begin(), tags.end(),
                                  std::inserter(both, both.begin()));
            shared = std::move(both);
        }
        first = false;
    }
    auto* dialog = new QInputDialog(this);
    dialog->setObjectName(QStringLiteral("runTagsDialog"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowTitle(QStringLiteral("Tags"));
    dialog->setLabelText(
        runs.size() == 1
            ? QStringLiteral("Tags of run #%1, separated by commas:").arg(runs.front())
            : QStringLiteral("Tags of the %1 selected runs, separated by commas\n(tags only some "
                             "of them have stay as they are):")
                  .arg(runs.size()));
    dialog->setTextValue(tagsText(std::vector<std::string>(shared.begin(), shared.end())));
    connect(
        dialog, &QInputDialog::textValueSelected, this, [this, runs, shared](const QString& text) {
            const std::vector<std::string> typed = parseTags(text);
            try {
                for (qint64 id : runs) {
                    const RunRecord* r = model_->recordOf(id);
                    std::set<std::string> tags(typed.begin(), typed.end());
                    if (r)
                        for (const auto& tag : r->run.tags)
                            if (!shared.count(tag)) tags.insert(tag);
                    // The first run checks the typed tags: bad ones change no run.
                    store_->set_run_tags(id, std::vector<std::string>(tags.begin(), tags.end()));
                }
            } catch (const Error& e) {
                showError(QStringLiteral("Tags"), QString::fromStdString(e.what()));
            }
            refresh();
        });
    dialog->open();
}

void RunsBrowser::editNote() {
    const RunRecord* record = singleSelected();
    if (!record || !store_) return;
    const qint64 id = record->run.id;
    auto* dialog = new QInputDialog(this);
    dialog->setObjectName(QStringLiteral("runNoteDialog"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setOption(QInputDialog::UsePlainTextEditForTextInput);
    dialog->setWindowTitle(QStringLiteral("Note"));
    dialog->setLabelText(QStringLiteral("Note on run #%1:").arg(id));
    dialog->setTextValue(QString::fromStdString(record->run.note));
    connect(dialog, &QInputDialog::textValueSelected, this, [this, id](const QString& text) {
        try {
            store_->set_run_note(id, text.trimmed().toStdString());
        } catch (const Error& e) {
            showError(QStringLiteral("Note"), QString::fromStdString(e.what()));
        }
        refresh();
    });
    dialog->open();
}

void RunsBrowser::deleteSelected() {
    const QList<qint64> runs = selectedRuns();
    if (runs.isEmpty() || !store_ || deleting_) return;
    const std::set<qint64> doomed(runs.begin(), runs.end());
    QStringList names, files, running;
    qint64 bytes = 0;
    int folderFiles = 0;
    for (qint64 id : runs) {
        const RunRecord* r = model_->recordOf(id);
        if (!r) continue;
        names << runLabel(r->run) + QStringLiteral(" (%1)").arg(statusText(r->run.status));
        if (r->run.status == store::RunStatus::Running) running << QStringLiteral("#%1").arg(id);
        const QString folder = QString::fromStdString(store_->artifact_folder(id).string());
        if (QFileInfo(folder).isDir()) {
            files << QDir::toNativeSeparators(folder) + QStringLiteral(" (folder)");
            for (QDirIterator it(folder, QDir::Files | QDir::Hidden | QDir::System,
                                 QDirIterator::Subdirectories);
                 it.hasNext();) {
                it.next();
                bytes += it.fileInfo().size();
                ++folderFiles;
            }
        }
        try {
            for (const store::Artifact& a : store_->artifacts(id)) {
                const QString path = QString::fromStdString(a.path.string());
                if (!path.startsWith(folder + QLatin1Char('/')) && QFileInfo::exists(path)) {
                    files << QDir::toNativeSeparators(path);
                    bytes += QFileInfo(path).size();
                }
            }
        } catch (const Error&) {
            // The question still names the folder; delete_run decides for itself.
        }
    }
    int children = 0;
    for (const RunRecord* r : listedRecords())
        if (r->run.parent_run && doomed.count(*r->run.parent_run) && !doomed.count(r->run.id))
            ++children;

    QString text = runs.size() == 1 ? QStringLiteral("Delete run %1 and its files?").arg(names[0])
                                    : QStringLiteral("Delete these %1 runs and their files?\n%2")
                                          .arg(runs.size())
                                          .arg(listed(names));
    QString details;
    if (files.isEmpty())
        details = QStringLiteral("No files of these runs are left on disk.");
    else
        details = QStringLiteral("These go (%1 in the run folders, %2):\n%3")
                      .arg(countText(folderFiles, "file", "files"),
                           QLocale().formattedDataSize(bytes), listed(files));
    details += QStringLiteral("\n\nFiles another run still uses are kept.");
    if (children > 0)
        details += QStringLiteral("\n%1 branched from them stay%2, without a parent.")
                       .arg(countText(children, "run", "runs"),
                            children == 1 ? QStringLiteral("s") : QString());
    if (!running.isEmpty())
        details += QStringLiteral("\n%1 %2 still running: the store refuses to delete a run "
                                  "whose process is alive.")
                       .arg(running.join(QStringLiteral(", ")),
                            running.size() == 1 ? QStringLiteral("is") : QStringLiteral("are"));
    auto* box = new QMessageBox(QMessageBox::Warning, QStringLiteral("Delete runs"), text,
                                QMessageBox::Cancel, this);
    box->setObjectName(QStringLiteral("deleteRunsBox"));
    box->setInformativeText(details);
    QPushButton* confirm = box->addButton(QStringLiteral("Delete"), QMessageBox::DestructiveRole);
    confirm->setObjectName(QStringLiteral("deleteRunsConfirm"));
    box->setDefaultButton(QMessageBox::Cancel);
    connect(box, &QMessageBox::finished, this, [this, box, confirm, runs] {
        const bool go = box->clickedButton() == confirm;
        box->deleteLater();
        if (go) startDelete(runs);
    });
    box->open();
}

void RunsBrowser::startDelete(const QList<qint64>& runs) {
    if (deleting_ || !store_) return;
    deleting_ = true;
    updateActions();
    setStatusLine(QStringLiteral("Deleting…"));
    deleteWatcher_->setFuture(QtConcurrent::run(deleteRuns, store_, runs));
}

void RunsBrowser::deleteFinished() {
    deleting_ = false;
    const DeleteOutcome outcome = deleteWatcher_->result();
    setStatusLine({});
    updateActions();
    if (!outcome.refused.isEmpty() || !outcome.keptFiles.isEmpty()) {
        QStringList parts;
        if (!outcome.refused.isEmpty())
            parts << QStringLiteral("Not deleted:\n") + outcome.refused.join(QLatin1Char('\n'));
        if (!outcome.keptFiles.isEmpty())
            parts << QStringLiteral("Files kept:\n") + listed(outcome.keptFiles);
        showError(QStringLiteral("Delete runs"), parts.join(QStringLiteral("\n\n")));
    }
    refresh();
}

void RunsBrowser::exportListed() {
    auto* dialog = new QFileDialog(this, QStringLiteral("Export runs as CSV"));
    dialog->setObjectName(QStringLiteral("exportRunsDialog"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setAcceptMode(QFileDialog::AcceptSave);
    dialog->setNameFilter(QStringLiteral("CSV files (*.csv)"));
    dialog->setDefaultSuffix(QStringLiteral("csv"));
    dialog->selectFile(QStringLiteral("runs.csv"));
    connect(dialog, &QFileDialog::fileSelected, this, [this](const QString& path) {
        QString error;
        if (!exportCsv(path, &error)) showError(QStringLiteral("Export CSV"), error);
    });
    dialog->open();
}

bool RunsBrowser::exportCsv(const QString& path, QString* error) const {
    const QByteArray csv =
        runsCsv(listedRecords(), double(QDateTime::currentMSecsSinceEpoch()) / 1000.0);
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(csv) != csv.size() || !file.commit()) {
        if (error)
            *error = QStringLiteral("Cannot write %1: %2")
                         .arg(QDir::toNativeSeparators(path), file.errorString());
        return false;
    }
    return true;
}

} // namespace myelin::ui
