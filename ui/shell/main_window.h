#pragma once
// The studio's main window: the welcome page while no project is open, the model editor with its
// docks (layer palette left, inspector right, problems and model summary below) once one is;
// the File menu (new from the example gallery, open, recent files, save, autosave recovery), the
// Edit menu of the editor, and the status bar.
#include <QByteArray>
#include <QElapsedTimer>
#include <QMainWindow>
#include <QString>
#include <QTimer>

#include <vector>

class QAction;
class QDockWidget;
class QLabel;
class QMenu;
class QProgressBar;
class QStackedWidget;
class QTabWidget;
class QToolBar;
class QUndoStack;

namespace myelin::train {
struct BreakpointFired;
struct LayerBadge;
} // namespace myelin::train

namespace myelin::io {
struct Project;
}

namespace myelin::ui {

struct TrainingStartOptions;
class Autosave;
class DataPage;
class LayerPalette;
class ModelEditor;
class ModelSummaryPanel;
class NodeInspector;
class ProblemsPanel;
class ProjectDocument;
class TrainingController;
class TrainingDock;
class TrainingPage;
class GradientFlowView;
class DistributionsView;
class FeatureMapsView;
class TimeGradientsView;
class RunsBrowser;
class RunsCompareView;
class EvaluatePage;
class WelcomePage;

class MainWindow : public QMainWindow {
    Q_OBJECT

  public:
    // projectPath: the project file the studio was started with; may be empty or missing.
    explicit MainWindow(const QString& projectPath = QString(), QWidget* parent = nullptr);
    ~MainWindow() override;

    // Every change to the open project goes through this stack (Edit > Undo / Redo).
    QUndoStack* undoStack() const;
    // The open project's file; empty when none is open or it was never saved.
    QString projectPath() const;

    // Reads runs from this store from now on (Runs, Evaluate and the inspection tabs) and records
    // new runs in it — e.g. the store a cluster run wrote. Refused while a run trains; a file that
    // is not a run store is refused with a message naming it. True when it was taken.
    bool openRunStore(const QString& path);

    ProjectDocument* document() const { return document_; }
    ModelEditor* editor() const { return editor_; }
    LayerPalette* palette() const { return palette_; }
    NodeInspector* inspector() const { return inspector_; }
    ProblemsPanel* problemsPanel() const { return problems_; }
    ModelSummaryPanel* summaryPanel() const { return summary_; }
    Autosave* autosave() const { return autosave_; }
    DataPage* dataPage() const { return dataPage_; }
    TrainingPage* trainingPage() const { return trainingPage_; }
    GradientFlowView* gradientFlowView() const { return gradientFlow_; }
    DistributionsView* distributionsView() const { return distributions_; }
    FeatureMapsView* featureMapsView() const { return featureMaps_; }
    TimeGradientsView* timeGradientsView() const { return timeGradients_; }
    RunsBrowser* runsBrowser() const { return runsBrowser_; }
    RunsCompareView* runsCompareView() const { return runsCompare_; }
    EvaluatePage* evaluatePage() const { return evaluatePage_; }
    TrainingController* trainingController() const { return training_; }
    TrainingDock* trainingDock() const { return trainingDock_; }
    // The Model / Data / Training tabs of an open project.
    QTabWidget* workspaceTabs() const { return workspaceTabs_; }
    // Why editing is locked (a training run is going); empty when it is not.
    QString editingLockReason() const { return lockReason_; }

    // Opens a project file. A file that cannot be read shows its error (with the line or the
    // field) in a message box and leaves the open project as it was. Unsaved changes are
    // offered for saving first. A shipped example (exampleDirectory()) opens as an untitled
    // copy, as File > New makes it. True when `path` is now open.
    bool openProject(const QString& path);
    // File > Import Model…: `onnx` as a project written to `projectPath` (and its weights beside
    // it, the project's initial weights), then opened. False (with a message box naming the
    // node or file) when it cannot be imported; nothing is written then.
    bool importModel(const QString& onnx, const QString& projectPath);
    // A new untitled project: an empty model, or a copy of the example at `examplePath`.
    bool newProject(const QString& examplePath = QString());
    // Save to the project's file (asks for one when it has none); Save As to `path` (asks when
    // empty). False when nothing was saved.
    bool saveProject();
    bool saveProjectAs(const QString& path = QString());
    // Back to the welcome page (after offering to save).
    bool closeProject();
    // Offers the autosaved changes a studio that did not close properly left behind.
    void offerRecovery();

  public slots:
    // Train > Start: trains the open project on a worker thread (after checking that the model
    // is valid), recorded in the run store; the live view shows it. False when nothing started.
    bool startTraining();
    void pauseTraining();
    void resumeTraining();
    void stopTraining();
    // Runs > Resume… / Fork…: the fork dialog on run `run` of the store (pick a checkpoint, and
    // for a fork its edits), then the run it asks for, trained and shown like Train's. False
    // when nothing started (cancelled, refused, or a run is already going).
    bool resumeRun(qint64 run);
    bool forkRun(qint64 run);
    // Runs > Evaluate: the Evaluate tab on run `run`'s best (else last) checkpoint.
    void evaluateRun(qint64 run);
    // File > Export…: a run's checkpoint as ONNX, PyTorch code or safetensors.
    void showExportDialog();
    void showOpenRunStoreDialog();
    void showBackendsDialog();
    // Train > Breakpoints…: the conditions that pause the runs started here.
    void showBreakpointsDialog();
    void showImportDialog();
    // While a run is paused: the learning rate and clipping it takes from its next step.
    void changeWhilePaused();
    void showAboutDialog();
    void showNewProjectDialog();
    void showOpenDialog();

  protected:
    void changeEvent(QEvent* event) override;
    void closeEvent(QCloseEvent* event) override;

  private:
    QString exampleCopyMessage(const QString& fileName) const;
    // Lays out a just-opened model whose positions hide edges behind nodes (not an undoable
    // edit); true when it did.
    bool arrangeLayersIfNeeded();
    void createDocks();
    void createMenus();
    void createStatusBar();
    void createTraining();
    // The Runs and Evaluate tabs (main_window_runs.cpp).
    void createRuns();
    // The run store's views read it when first shown, and the open project when it changes.
    void updateRunsViews();
    // The editing docks step aside for the Runs and Evaluate tabs and come back after.
    void arrangeDocksForPage();
    bool resumeOrForkRun(qint64 run, bool fork);
    // Starts `project` (data paths relative to `dataDir`) with the stored breakpoints, locks
    // editing and shows the live view.
    bool startRun(const io::Project& project, const QString& dataDir, TrainingStartOptions options);
    void updateTrainingActions();
    // Model, data and training edits are refused while a run trains a snapshot of them.
    void setEditingLocked(bool locked);
    void onTrainingError(const QString& message, const QString& module);
    void onBreakpoint(const train::BreakpointFired& breakpoint);
    void showLayerBadges(const std::vector<train::LayerBadge>& badges);
    void applyLayerBadges();
    void openAtStartup(const QString& path);
    void showProject(bool open);
    void updateTitle();
    void updateRecentMenu();
    void addRecentFile(const QString& path);
    // Unsaved changes: ask to save them. False when the person cancels.
    bool maybeSave();
    void showProjectError(const QString& text);

    // How long a status bar message stays.
    static constexpr int kStatusMs = 5000;

    ProjectDocument* document_ = nullptr;
    Autosave* autosave_ = nullptr;
    QStackedWidget* pages_ = nullptr;
    QWidget* workspace_ = nullptr;
    QTabWidget* workspaceTabs_ = nullptr;
    QLabel* lockBanner_ = nullptr;
    DataPage* dataPage_ = nullptr;
    TrainingPage* trainingPage_ = nullptr;
    GradientFlowView* gradientFlow_ = nullptr;
    static constexpr qint64 kBadgeIntervalMs = 1000;
    std::vector<train::LayerBadge> pendingBadges_;
    QElapsedTimer badgeClock_;
    QTimer badgeTimer_;
    DistributionsView* distributions_ = nullptr;
    FeatureMapsView* featureMaps_ = nullptr;
    TimeGradientsView* timeGradients_ = nullptr; // tab shown for runs with recurrent layers
    RunsBrowser* runsBrowser_ = nullptr;
    RunsCompareView* runsCompare_ = nullptr;
    QWidget* runsPage_ = nullptr;
    EvaluatePage* evaluatePage_ = nullptr;
    QByteArray dockStateBeforeRuns_; // the docks as they were before Runs / Evaluate hid them
    // arrangeDocksForPage() waits for a dock drag to end.
    bool dockArrangePending_ = false;
    QAction* exportAction_ = nullptr;
    TrainingController* training_ = nullptr;
    TrainingDock* trainingDock_ = nullptr;
    QDockWidget* trainingDockWidget_ = nullptr;
    QToolBar* trainToolBar_ = nullptr;
    QAction* trainAction_ = nullptr;
    QAction* pauseAction_ = nullptr;
    QAction* importAction_ = nullptr;
    QAction* changeAction_ = nullptr;
    QAction* resumeAction_ = nullptr;
    QAction* stopAction_ = nullptr;
    QAction* newAction_ = nullptr;
    QAction* openAction_ = nullptr;
    QAction* undoAction_ = nullptr;
    QAction* redoAction_ = nullptr;
    QProgressBar* trainProgress_ = nullptr;
    QLabel* trainStatus_ = nullptr;
    QString lockReason_;

    WelcomePage* welcomePage_ = nullptr;
    ModelEditor* editor_ = nullptr;
    LayerPalette* palette_ = nullptr;
    NodeInspector* inspector_ = nullptr;
    ProblemsPanel* problems_ = nullptr;
    ModelSummaryPanel* summary_ = nullptr;
    QDockWidget* paletteDock_ = nullptr;
    QDockWidget* inspectorDock_ = nullptr;
    QDockWidget* problemsDock_ = nullptr;
    QDockWidget* summaryDock_ = nullptr;
    QLabel* backendsLabel_ = nullptr;
    QAction* fullScreenAction_ = nullptr;
    QAction* saveAction_ = nullptr;
    QAction* saveAsAction_ = nullptr;
    QAction* closeAction_ = nullptr;
    QMenu* recentMenu_ = nullptr;
};

} // namespace myelin::ui
