#pragma once
// The runs browser: every run of a store as a tree (resumed and forked runs under their parent,
// with the step they branched at), with status, times, device, best and last key metrics, tags
// and note; sorted by any column, filtered by text, status, tag and project; rename, tags, note,
// delete (asking first) and CSV export of the listed runs. The store is re-read by itself when it
// changed (a run started by the CLI appears within a second); reads run off the GUI thread.
#include <QList>
#include <QString>
#include <QWidget>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>

class QAction;
class QComboBox;
class QLabel;
class QLineEdit;
class QStackedWidget;
class QTimer;
class QToolButton;
class QTreeView;
template <typename T> class QFutureWatcher;

namespace myelin::store {
class RunStore;
}

namespace myelin::ui {

class RunFilterProxy;
class RunTreeModel;
struct RunRecord;
struct RunsLoad;
struct DeleteOutcome;

class RunsBrowser : public QWidget {
    Q_OBJECT

  public:
    explicit RunsBrowser(QWidget* parent = nullptr);
    ~RunsBrowser() override;

    // The run store to show (its file need not exist yet: the browser waits for it). A store
    // that cannot be opened (damaged, newer schema, locked against readers) shows what is wrong
    // in place of the list; one that is read-only, or whose write lock another program holds,
    // is listed under a note saying so (storeNote()), and a read-only one is never written.
    void setStorePath(const QString& path);
    QString storePath() const { return storePath_; }
    // How long an open waits for another program's lock before calling the store locked
    // (the store's busy timeout; tests make it short).
    void setBusyTimeout(std::chrono::milliseconds timeout) { busyTimeout_ = timeout; }
    // The note above the list (read-only, locked), or the message in its place; empty: none.
    QString storeNote() const;
    // The open project's file (empty: none): its runs are listed alone ("This project") or
    // first ("All runs").
    void setProjectPath(const QString& path);
    QString projectPath() const { return projectPath_; }

    QList<qint64> selectedRuns() const; // ids, in the order shown
    void selectRuns(const QList<qint64>& runs);
    // Writes the listed runs (what the filters let through, in the order shown) as CSV, one line
    // per run. False with `error` set when the file cannot be written.
    bool exportCsv(const QString& path, QString* error) const;

  public slots:
    // Re-reads the store now (the timer does it by itself when the store changed).
    void refresh();

  signals:
    void selectionChanged(QList<qint64> runs);
    void resumeRequested(qint64 run);
    void forkRequested(qint64 run);
    void evaluateRequested(qint64 run);
    // A read of the store was applied (the tree shows it), or the store's state (missing, cannot
    // be opened) is shown instead. Not emitted when a check found the store unchanged.
    void runsLoaded();

  private:
    void buildActions();
    QWidget* buildControls();
    QWidget* buildButtons();
    void startLoad(bool force);
    void loadFinished();
    void applyLoad(RunsLoad& load);
    void tick();
    void showMessage(const QString& text, bool problem);
    void setStatusLine(const QString& text);
    void updateCount();
    void updateTagChoices();
    void updateColumns();
    void updateActions();
    void applyScope();
    void saveViewState();
    void restoreViewState();
    void applyExpansion();
    void emitSelectionIfChanged();
    std::vector<const RunRecord*> listedRecords() const;
    const RunRecord* singleSelected() const;

    // Actions (runs_browser_actions.cpp).
    void contextMenu(const QPoint& position);
    void renameSelected();
    void editTags();
    void editNote();
    void deleteSelected();
    void startDelete(const QList<qint64>& runs);
    void deleteFinished();
    void exportListed();
    void showError(const QString& title, const QString& text);

    QString storePath_;
    QString projectPath_;
    std::chrono::milliseconds busyTimeout_{5000};
    std::string normalProject_;
    std::shared_ptr<store::RunStore> store_;
    uint64_t generation_ = 0; // a new store path drops the loads of the old one
    std::optional<uint64_t> version_;
    bool loading_ = false;
    bool reloadPending_ = false;
    bool loaded_ = false;     // a list is shown
    QString failedFileStamp_; // the store file (size, time) that could not be opened
    bool projectOnly_ = true;
    bool deleting_ = false;

    std::set<qint64> collapsed_; // runs whose children the person folded away
    QList<qint64> savedSelection_;
    std::optional<qint64> savedCurrent_;
    int savedScroll_ = 0;
    bool restoring_ = false;
    QList<qint64> lastEmittedSelection_;

    RunTreeModel* model_ = nullptr;
    RunFilterProxy* proxy_ = nullptr;
    QStackedWidget* stack_ = nullptr;
    QLabel* message_ = nullptr;
    QLabel* storeNote_ = nullptr; // read-only or locked, above the list
    QWidget* controls_ = nullptr; // the filter bar
    QTreeView* tree_ = nullptr;
    QLineEdit* filter_ = nullptr;
    QComboBox* statusFilter_ = nullptr;
    QComboBox* tagFilter_ = nullptr;
    QToolButton* projectScope_ = nullptr;
    QToolButton* allScope_ = nullptr;
    QLabel* scopeHint_ = nullptr;
    QLabel* count_ = nullptr;
    QLabel* statusLine_ = nullptr;
    QTimer* timer_ = nullptr;
    QFutureWatcher<RunsLoad>* loadWatcher_ = nullptr;
    QFutureWatcher<DeleteOutcome>* deleteWatcher_ = nullptr;

    QAction* resumeAction_ = nullptr;
    QAction* forkAction_ = nullptr;
    QAction* evaluateAction_ = nullptr;
    QAction* renameAction_ = nullptr;
    QAction* tagsAction_ = nullptr;
    QAction* noteAction_ = nullptr;
    QAction* deleteAction_ = nullptr;
    QAction* exportAction_ = nullptr;
};

} // namespace myelin::ui
