// RunsBrowser: layout, loading the store off the GUI thread, refresh, selection and expansion.
// The actions (rename, tags, note, delete, export) are in runs_browser_actions.cpp.
#include "runs/runs_browser.h"

#include "runs/runs_browser_internal.h"
#include "widgets/theme.h"

#include <myelin/error.h>

#include <QAction>
#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QScrollBar>
#include <QStackedWidget>
#include <QTimer>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <functional>

namespace myelin::ui {

namespace {
constexpr int kRefreshMs = 1000;

double unixNow() {
    return double(QDateTime::currentMSecsSinceEpoch()) / 1000.0;
}

// Size and modification time: a store that failed to open is tried again when it changes.
QString fileStamp(const QString& path) {
    const QFileInfo info(path);
    return QStringLiteral("%1 %2").arg(info.size()).arg(info.lastModified().toMSecsSinceEpoch());
}

// The store's condition in words, before its message (which names the file and what to do).
QString problemHeadline(store::StoreProblem problem) {
    switch (problem) {
    case store::StoreProblem::Locked:
        return QStringLiteral("The run store is locked by another program.");
    case store::StoreProblem::ReadOnly:
        return QStringLiteral("The run store is read-only.");
    case store::StoreProblem::Damaged:
        return QStringLiteral("The run store is damaged.");
    case store::StoreProblem::Newer:
        return QStringLiteral("The run store was written by a newer version of Myelin.");
    case store::StoreProblem::None:
        break;
    }
    return QStringLiteral("Cannot show the runs.");
}

// Runs on a worker thread: opens the store when it is not open yet, tests its data version,
// and reads the runs when it changed (or when forced). A store that is read-only or locked is
// opened for reading; one that fails its checks is not written.
RunsLoad loadRuns(const QString& path, std::shared_ptr<store::RunStore> store,
                  std::optional<uint64_t> known, bool checkRunning, uint64_t generation,
                  std::chrono::milliseconds busyTimeout) {
    RunsLoad out;
    out.generation = generation;
    try {
        if (!store) {
            if (!QFileInfo::exists(path)) {
                out.missing = true;
                return out;
            }
            store::StoreOptions options;
            options.access = store::StoreAccess::ReadWriteIfAllowed;
            options.busy_timeout = busyTimeout;
            store = std::make_shared<store::RunStore>(
                store::RunStore::open(path.toStdString(), options));
        }
        out.store = store;
        if (checkRunning && store->condition() == store::StoreProblem::None) {
            try {
                store->mark_interrupted_runs(); // a run whose process died shows as interrupted
            } catch (const store::StoreError&) {
                // Locked by a writer: the next tick tries again.
            }
        }
        // Read before the runs: a commit in between is seen by the next tick.
        const uint64_t version = store->data_version();
        if (known && *known == version) {
            out.unchanged = true;
            return out;
        }
        out.version = version;
        out.records = readRunRecords(*store);
    } catch (const store::StoreError& e) {
        out.error = QString::fromStdString(e.what());
        out.problem = e.problem();
    } catch (const std::exception& e) {
        out.error = QString::fromStdString(e.what());
    }
    return out;
}
} // namespace

RunsBrowser::RunsBrowser(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("runsBrowser"));
    model_ = new RunTreeModel(this);
    proxy_ = new RunFilterProxy(this);
    proxy_->setSourceModel(model_);

    tree_ = new QTreeView;
    tree_->setObjectName(QStringLiteral("runsTree"));
    tree_->setModel(proxy_);
    tree_->setSortingEnabled(true);
    tree_->sortByColumn(RunTreeModel::StartedColumn, Qt::DescendingOrder);
    tree_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    tree_->setSelectionBehavior(QAbstractItemView::SelectRows);
    tree_->setUniformRowHeights(true); // 1,000 rows lay out without measuring each
    tree_->setAlternatingRowColors(true);
    tree_->setAllColumnsShowFocus(true);
    tree_->setContextMenuPolicy(Qt::CustomContextMenu);
    tree_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    QHeaderView* header = tree_->header();
    header->setStretchLastSection(true);
    header->setSectionsMovable(true);
    // Widths from the font, not from the rows (measuring 1,000 rows would cost each refresh).
    const QFontMetrics metrics(font());
    const auto width = [&](const QString& sample) {
        return metrics.horizontalAdvance(sample) + 18;
    };
    const int widths[] = {width(QStringLiteral("fashion_cnn dropout 0.3")) +
                              2 * tree_->indentation(),
                          width(QStringLiteral("0000")),
                          width(QStringLiteral("Interrupted")) + 16,
                          width(QStringLiteral("resumed at step 0000")),
                          width(QStringLiteral("2026-11-24 15:40")),
                          width(QStringLiteral("00 min 00 s")),
                          width(QStringLiteral("cpu · 16 threads"))};
    for (int c = 0; c < RunTreeModel::FirstMetricColumn; ++c)
        tree_->setColumnWidth(c, widths[c]);
    for (int c = RunTreeModel::FirstMetricColumn; c < RunTreeModel::TagsColumn; ++c)
        tree_->setColumnWidth(
            c, std::max(width(QStringLiteral("0.0000")),
                        width(model_->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString())));
    tree_->setColumnWidth(RunTreeModel::TagsColumn, width(QStringLiteral("baseline, lr-sweep")));

    buildActions();
    message_ = new QLabel;
    message_->setObjectName(QStringLiteral("runsMessage"));
    message_->setProperty("class", QStringLiteral("viewMessage"));
    message_->setWordWrap(true);
    message_->setAlignment(Qt::AlignCenter);
    message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    message_->setMargin(24);

    auto* listPage = new QWidget;
    auto* listLayout = new QVBoxLayout(listPage);
    listLayout->setContentsMargins(0, 0, 0, 0);
    listLayout->setSpacing(4);
    storeNote_ = new QLabel;
    storeNote_->setObjectName(QStringLiteral("runsStoreNote"));
    storeNote_->setWordWrap(true);
    storeNote_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    storeNote_->setVisible(false);
    setStyleProperty(storeNote_, "problem", true);
    listLayout->addWidget(storeNote_);
    scopeHint_ = new QLabel;
    scopeHint_->setObjectName(QStringLiteral("runsScopeHint"));
    scopeHint_->setVisible(false);
    connect(scopeHint_, &QLabel::linkActivated, this, [this] { allScope_->click(); });
    listLayout->addWidget(scopeHint_);
    listLayout->addWidget(tree_, 1);

    stack_ = new QStackedWidget;
    stack_->addWidget(message_);
    stack_->addWidget(listPage);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(8, 8, 8, 8);
    layout->setSpacing(6);
    controls_ = buildControls();
    layout->addWidget(controls_);
    layout->addWidget(stack_, 1);
    layout->addWidget(buildButtons());
    showMessage(QStringLiteral("No run store is open."), false);

    connect(tree_, &QTreeView::customContextMenuRequested, this, &RunsBrowser::contextMenu);
    connect(tree_->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
        updateActions();
        emitSelectionIfChanged();
    });
    connect(tree_, &QTreeView::expanded, this, [this](const QModelIndex& index) {
        if (!restoring_) collapsed_.erase(index.data(RunTreeModel::RunIdRole).toLongLong());
    });
    connect(tree_, &QTreeView::collapsed, this, [this](const QModelIndex& index) {
        if (!restoring_) collapsed_.insert(index.data(RunTreeModel::RunIdRole).toLongLong());
    });
    connect(proxy_, &QAbstractItemModel::modelAboutToBeReset, this, &RunsBrowser::saveViewState);
    connect(proxy_, &QAbstractItemModel::modelReset, this, &RunsBrowser::restoreViewState);
    // Rows the filters let in again get their expansion back.
    connect(proxy_, &QAbstractItemModel::rowsInserted, this, [this] {
        QMetaObject::invokeMethod(this, &RunsBrowser::applyExpansion, Qt::QueuedConnection);
    });

    loadWatcher_ = new QFutureWatcher<RunsLoad>(this);
    connect(loadWatcher_, &QFutureWatcherBase::finished, this, &RunsBrowser::loadFinished);
    deleteWatcher_ = new QFutureWatcher<DeleteOutcome>(this);
    connect(deleteWatcher_, &QFutureWatcherBase::finished, this, &RunsBrowser::deleteFinished);
    timer_ = new QTimer(this);
    timer_->setInterval(kRefreshMs);
    connect(timer_, &QTimer::timeout, this, &RunsBrowser::tick);
    updateActions();
}

RunsBrowser::~RunsBrowser() = default;

QWidget* RunsBrowser::buildControls() {
    auto* bar = new QWidget;
    auto* row = new QHBoxLayout(bar);
    row->setContentsMargins(0, 0, 0, 0);
    filter_ = new QLineEdit;
    filter_->setObjectName(QStringLiteral("runsFilter"));
    filter_->setPlaceholderText(QStringLiteral("Filter by name, tag or note"));
    filter_->setClearButtonEnabled(true);
    connect(filter_, &QLineEdit::textChanged, this, [this](const QString& text) {
        proxy_->setText(text);
        applyExpansion();
        updateCount();
    });
    statusFilter_ = new QComboBox;
    statusFilter_->setObjectName(QStringLiteral("runsStatusFilter"));
    statusFilter_->addItem(QStringLiteral("All statuses"), -1);
    for (int s = 0; s < 5; ++s)
        statusFilter_->addItem(statusText(store::RunStatus(s)), s);
    connect(statusFilter_, &QComboBox::currentIndexChanged, this, [this] {
        const int s = statusFilter_->currentData().toInt();
        proxy_->setStatus(s < 0 ? std::nullopt : std::optional(store::RunStatus(s)));
        applyExpansion();
        updateCount();
    });
    tagFilter_ = new QComboBox;
    tagFilter_->setObjectName(QStringLiteral("runsTagFilter"));
    tagFilter_->addItem(QStringLiteral("All tags"), QString());
    tagFilter_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    connect(tagFilter_, &QComboBox::currentIndexChanged, this, [this] {
        proxy_->setTag(tagFilter_->currentData().toString());
        applyExpansion();
        updateCount();
    });
    projectScope_ = new QToolButton;
    projectScope_->setObjectName(QStringLiteral("runsScopeProject"));
    projectScope_->setText(QStringLiteral("This project"));
    allScope_ = new QToolButton;
    allScope_->setObjectName(QStringLiteral("runsScopeAll"));
    allScope_->setText(QStringLiteral("All runs"));
    for (QToolButton* button : {projectScope_, allScope_}) {
        button->setCheckable(true);
        button->setAutoExclusive(true);
        button->setVisible(false);
    }
    projectScope_->setChecked(true);
    connect(projectScope_, &QToolButton::toggled, this, [this](bool on) {
        projectOnly_ = on;
        applyScope();
    });
    row->addWidget(filter_, 1);
    row->addWidget(statusFilter_);
    row->addWidget(tagFilter_);
    row->addSpacing(12);
    row->addWidget(projectScope_);
    row->addWidget(allScope_);
    return bar;
}

void RunsBrowser::buildActions() {
    auto make = [this](QAction*& action, const QString& text, const char* name,
                       const QString& tip) {
        action = new QAction(text, this);
        action->setObjectName(QLatin1String(name));
        action->setToolTip(tip);
        action->setProperty("usualTip", tip);
        tree_->addAction(action);
    };
    make(resumeAction_, QStringLiteral("Resume"), "resumeRunAction",
         QStringLiteral("Continue the run from its newest checkpoint"));
    make(forkAction_, QStringLiteral("Fork…"), "forkRunAction",
         QStringLiteral("Start a new run from one of this run's checkpoints"));
    make(evaluateAction_, QStringLiteral("Evaluate…"), "evaluateRunAction",
         QStringLiteral("Evaluate a checkpoint of this run on the test set"));
    make(renameAction_, QStringLiteral("Rename…"), "renameRunAction",
         QStringLiteral("Rename the selected run"));
    make(tagsAction_, QStringLiteral("Tags…"), "tagRunsAction",
         QStringLiteral("Set the tags of the selected runs"));
    make(noteAction_, QStringLiteral("Note…"), "noteRunAction",
         QStringLiteral("Write a note on the selected run"));
    make(deleteAction_, QStringLiteral("Delete…"), "deleteRunsAction",
         QStringLiteral("Delete the selected runs and their files"));
    make(exportAction_, QStringLiteral("Export CSV…"), "exportRunsAction",
         QStringLiteral("Save the listed runs as CSV, one line each"));
    renameAction_->setShortcut(QKeySequence(Qt::Key_F2));
    deleteAction_->setShortcut(QKeySequence::Delete);
    for (QAction* a : {renameAction_, deleteAction_})
        a->setShortcutContext(Qt::WidgetShortcut);
    const auto single = [this](void (RunsBrowser::*signal)(qint64)) {
        return [this, signal] {
            if (const RunRecord* r = singleSelected()) emit(this->*signal)(r->run.id);
        };
    };
    connect(resumeAction_, &QAction::triggered, this, single(&RunsBrowser::resumeRequested));
    connect(forkAction_, &QAction::triggered, this, single(&RunsBrowser::forkRequested));
    connect(evaluateAction_, &QAction::triggered, this, single(&RunsBrowser::evaluateRequested));
    connect(renameAction_, &QAction::triggered, this, &RunsBrowser::renameSelected);
    connect(tagsAction_, &QAction::triggered, this, &RunsBrowser::editTags);
    connect(noteAction_, &QAction::triggered, this, &RunsBrowser::editNote);
    connect(deleteAction_, &QAction::triggered, this, &RunsBrowser::deleteSelected);
    connect(exportAction_, &QAction::triggered, this, &RunsBrowser::exportListed);
}

QWidget* RunsBrowser::buildButtons() {
    auto* bar = new QWidget;
    auto* row = new QHBoxLayout(bar);
    row->setContentsMargins(0, 0, 0, 0);
    count_ = new QLabel;
    count_->setObjectName(QStringLiteral("runsCount"));
    statusLine_ = new QLabel;
    statusLine_->setObjectName(QStringLiteral("runsStatusLine"));
    statusLine_->setWordWrap(true);
    statusLine_->setVisible(false);
    row->addWidget(count_);
    row->addWidget(statusLine_, 1);
    row->addStretch();
    auto add = [&](QAction* action) {
        auto* button = new QToolButton;
        button->setDefaultAction(action);
        button->setToolButtonStyle(Qt::ToolButtonTextOnly);
        row->addWidget(button);
    };
    for (QAction* a : {resumeAction_, forkAction_, evaluateAction_})
        add(a);
    row->addSpacing(12);
    for (QAction* a : {renameAction_, tagsAction_, noteAction_, deleteAction_})
        add(a);
    row->addSpacing(12);
    add(exportAction_);
    return bar;
}

// ---- loading ----------------------------------------------------------------------------------

QString RunsBrowser::storeNote() const {
    if (stack_->currentIndex() == 0) return message_->text();
    return storeNote_->isHidden() ? QString() : storeNote_->text();
}

void RunsBrowser::setStorePath(const QString& path) {
    if (path == storePath_ && (store_ || loading_)) return;
    storePath_ = path;
    ++generation_;
    store_.reset();
    storeNote_->setVisible(false);
    version_.reset();
    loaded_ = false;
    failedFileStamp_.clear();
    model_->setRecords({});
    setStatusLine({});
    if (path.isEmpty()) {
        timer_->stop();
        showMessage(QStringLiteral("No run store is open."), false);
        return;
    }
    timer_->start();
    startLoad(true);
}

void RunsBrowser::setProjectPath(const QString& path) {
    projectPath_ = path;
    normalProject_ = normalProjectPath(path);
    projectScope_->setVisible(!normalProject_.empty());
    allScope_->setVisible(!normalProject_.empty());
    projectScope_->setToolTip(
        QStringLiteral("Only the runs trained from %1").arg(QDir::toNativeSeparators(path)));
    applyScope();
}

void RunsBrowser::applyScope() {
    proxy_->setProject(normalProject_, projectOnly_);
    applyExpansion();
    updateCount();
}

void RunsBrowser::refresh() {
    if (storePath_.isEmpty()) return;
    failedFileStamp_.clear(); // try a store that failed to open again
    startLoad(true);
}

void RunsBrowser::startLoad(bool force) {
    if (loading_) {
        reloadPending_ = reloadPending_ || force;
        return;
    }
    loading_ = true;
    const std::optional<uint64_t> known = force ? std::nullopt : version_;
    loadWatcher_->setFuture(QtConcurrent::run(loadRuns, storePath_, store_, known,
                                              model_->hasRunning(), generation_, busyTimeout_));
}

void RunsBrowser::tick() {
    if (model_->hasRunning()) model_->setNow(unixNow());
    if (loading_) return;
    if (!failedFileStamp_.isEmpty()) {
        // Opening failed: try again only when the file changed.
        if (fileStamp(storePath_) == failedFileStamp_) return;
        failedFileStamp_.clear();
    }
    startLoad(false);
}

void RunsBrowser::loadFinished() {
    loading_ = false;
    RunsLoad load = loadWatcher_->future().takeResult(); // moved, not copied
    if (load.generation == generation_) applyLoad(load);
    if (reloadPending_ || load.generation != generation_) {
        reloadPending_ = false;
        if (!storePath_.isEmpty()) startLoad(true);
    }
}

void RunsBrowser::applyLoad(RunsLoad& load) {
    if (load.missing) {
        showMessage(QStringLiteral("No runs yet. Runs trained in the studio or with "
                                   "“myelin train” are recorded in %1 and appear here.")
                        .arg(QDir::toNativeSeparators(storePath_)),
                    false);
        emit runsLoaded();
        return;
    }
    if (!load.error.isEmpty()) {
        if (!load.store) failedFileStamp_ = fileStamp(storePath_);
        if (loaded_)
            setStatusLine(QStringLiteral("Could not read the store: ") + load.error);
        else
            showMessage(problemHeadline(load.problem) + QStringLiteral("\n\n") + load.error, true);
        emit runsLoaded();
        return;
    }
    store_ = load.store;
    setStatusLine({});
    const store::StoreProblem condition = store_->condition();
    storeNote_->setVisible(condition != store::StoreProblem::None);
    storeNote_->setText(condition == store::StoreProblem::None
                            ? QString()
                            : problemHeadline(condition) + QLatin1Char(' ') +
                                  QString::fromStdString(store_->condition_message()));
    if (!load.unchanged) {
        version_ = load.version;
        model_->setNow(unixNow());
        model_->setRecords(std::move(load.records));
        loaded_ = true;
        updateTagChoices();
        updateColumns();
        applyExpansion();
        updateCount();
        updateActions();
    }
    stack_->setCurrentIndex(1);
    controls_->setEnabled(true);
    if (!load.unchanged) emit runsLoaded();
}

void RunsBrowser::showMessage(const QString& text, bool problem) {
    message_->setText(text);
    setStyleProperty(message_, "problem", problem);
    stack_->setCurrentIndex(0);
    controls_->setEnabled(false); // nothing to filter
    updateActions();
}

void RunsBrowser::setStatusLine(const QString& text) {
    statusLine_->setText(text);
    statusLine_->setVisible(!text.isEmpty());
}

// ---- what the list shows ----------------------------------------------------------------------

void RunsBrowser::updateCount() {
    int shown = 0;
    std::function<void(const QModelIndex&)> count = [&](const QModelIndex& parent) {
        const int rows = proxy_->rowCount(parent);
        shown += rows;
        for (int r = 0; r < rows; ++r)
            count(proxy_->index(r, 0, parent));
    };
    count({});
    const int total = model_->runCount();
    count_->setText(shown == total ? countText(total, "run", "runs")
                                   : QStringLiteral("%1 of %2 runs").arg(shown).arg(total));
    // "This project" with none of its runs: say so, and offer the others.
    const bool empty = projectOnly_ && !normalProject_.empty() && shown == 0 && total > 0 &&
                       filter_->text().isEmpty() && statusFilter_->currentIndex() == 0 &&
                       tagFilter_->currentIndex() == 0;
    scopeHint_->setVisible(empty);
    if (empty)
        scopeHint_->setText(QStringLiteral("No run of %1 in this store yet. "
                                           "<a href=\"all\">Show all %2 runs</a>")
                                .arg(QFileInfo(projectPath_).fileName().toHtmlEscaped())
                                .arg(total));
}

void RunsBrowser::updateTagChoices() {
    const QString current = tagFilter_->currentData().toString();
    const QStringList tags = model_->allTags();
    QStringList shown;
    for (int i = 1; i < tagFilter_->count(); ++i)
        shown << tagFilter_->itemData(i).toString();
    if (shown == tags) return;
    QSignalBlocker block(tagFilter_);
    tagFilter_->clear();
    tagFilter_->addItem(QStringLiteral("All tags"), QString());
    for (const QString& tag : tags)
        tagFilter_->addItem(tag, tag);
    const int keep = tagFilter_->findData(current);
    tagFilter_->setCurrentIndex(keep < 0 ? 0 : keep);
    if (keep < 0 && !current.isEmpty()) proxy_->setTag({}); // that tag is gone
}

void RunsBrowser::updateColumns() {
    for (size_t m = 0; m < kKeyMetrics.size(); ++m) {
        const bool hide = !model_->hasMetric(m);
        tree_->setColumnHidden(RunTreeModel::FirstMetricColumn + 2 * int(m), hide);
        tree_->setColumnHidden(RunTreeModel::FirstMetricColumn + 2 * int(m) + 1, hide);
    }
}

// ---- selection and expansion ------------------------------------------------------------------

QList<qint64> RunsBrowser::selectedRuns() const {
    std::set<qint64> selected;
    for (const QModelIndex& index : tree_->selectionModel()->selectedRows())
        selected.insert(index.data(RunTreeModel::RunIdRole).toLongLong());
    QList<qint64> runs; // in the order listed
    for (const RunRecord* record : listedRecords())
        if (selected.count(record->run.id)) runs << record->run.id;
    return runs;
}

void RunsBrowser::selectRuns(const QList<qint64>& runs) {
    QItemSelection selection;
    for (qint64 id : runs) {
        const QModelIndex index = proxy_->mapFromSource(model_->indexOf(id));
        if (index.isValid()) selection.select(index, index);
    }
    tree_->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect |
                                                   QItemSelectionModel::Rows);
    if (!selection.isEmpty())
        tree_->selectionModel()->setCurrentIndex(selection.indexes().first(),
                                                 QItemSelectionModel::NoUpdate);
}

const RunRecord* RunsBrowser::singleSelected() const {
    const QList<qint64> runs = selectedRuns();
    return runs.size() == 1 ? model_->recordOf(runs.front()) : nullptr;
}

void RunsBrowser::emitSelectionIfChanged() {
    if (restoring_) return;
    const QList<qint64> runs = selectedRuns();
    QList<qint64> sorted = runs, last = lastEmittedSelection_;
    std::sort(sorted.begin(), sorted.end());
    std::sort(last.begin(), last.end());
    if (sorted == last) return; // the same runs (a re-sort moves no selection)
    lastEmittedSelection_ = runs;
    emit selectionChanged(runs);
}

void RunsBrowser::saveViewState() {
    savedSelection_ = selectedRuns();
    const QModelIndex current = tree_->currentIndex();
    savedCurrent_ = current.isValid()
                        ? std::optional(current.data(RunTreeModel::RunIdRole).toLongLong())
                        : std::nullopt;
    savedScroll_ = tree_->verticalScrollBar()->value();
    restoring_ = true;
}

void RunsBrowser::restoreViewState() {
    restoring_ = true;
    applyExpansion();
    selectRuns(savedSelection_);
    if (savedCurrent_) {
        const QModelIndex current = proxy_->mapFromSource(model_->indexOf(*savedCurrent_));
        if (current.isValid())
            tree_->selectionModel()->setCurrentIndex(current, QItemSelectionModel::NoUpdate);
    }
    // After the view has laid the rows out again (its scroll range is not known before).
    QTimer::singleShot(
        0, this, [this, scroll = savedScroll_] { tree_->verticalScrollBar()->setValue(scroll); });
    restoring_ = false;
    emitSelectionIfChanged(); // only if a selected run is gone
    updateActions();
}

void RunsBrowser::applyExpansion() {
    const bool wasRestoring = restoring_;
    restoring_ = true;
    std::function<void(const QModelIndex&)> walk = [&](const QModelIndex& parent) {
        const int rows = proxy_->rowCount(parent);
        for (int r = 0; r < rows; ++r) {
            const QModelIndex index = proxy_->index(r, 0, parent);
            if (proxy_->rowCount(index) == 0) continue;
            const qint64 id = index.data(RunTreeModel::RunIdRole).toLongLong();
            tree_->setExpanded(index, !collapsed_.count(id));
            walk(index);
        }
    };
    walk({});
    restoring_ = wasRestoring;
}

std::vector<const RunRecord*> RunsBrowser::listedRecords() const {
    std::vector<const RunRecord*> out;
    std::function<void(const QModelIndex&)> walk = [&](const QModelIndex& parent) {
        for (int r = 0; r < proxy_->rowCount(parent); ++r) {
            const QModelIndex index = proxy_->index(r, 0, parent);
            out.push_back(model_->record(proxy_->mapToSource(index)));
            walk(index);
        }
    };
    walk({});
    return out;
}

void RunsBrowser::updateActions() {
    const QList<qint64> runs = selectedRuns();
    const RunRecord* one = runs.size() == 1 ? model_->recordOf(runs.front()) : nullptr;
    const bool open = store_ && stack_ && stack_->currentIndex() == 1;
    const bool running = one && one->run.status == store::RunStatus::Running;
    // A read-only store is never written: no new run (resume, fork), no change to a run.
    const bool writable = open && !store_->read_only();
    const QString readOnlyTip = QStringLiteral("The run store is read-only");
    for (QAction* a : {resumeAction_, forkAction_}) {
        a->setEnabled(writable && one && !running);
        a->setToolTip(running ? QStringLiteral("Run #%1 is still running").arg(one->run.id)
                      : open && !writable ? readOnlyTip
                                          : a->property("usualTip").toString());
    }
    for (QAction* a : {renameAction_, noteAction_, tagsAction_, deleteAction_})
        a->setToolTip(open && !writable ? readOnlyTip : a->property("usualTip").toString());
    evaluateAction_->setEnabled(open && one);
    renameAction_->setEnabled(writable && one);
    noteAction_->setEnabled(writable && one);
    tagsAction_->setEnabled(writable && !runs.isEmpty());
    deleteAction_->setEnabled(writable && !runs.isEmpty() && !deleting_);
    exportAction_->setEnabled(open && model_->runCount() > 0);
}

} // namespace myelin::ui
