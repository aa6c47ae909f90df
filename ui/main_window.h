#pragma once
// The studio's main window: menus, the central page, and the status bar.
#include <QMainWindow>
#include <QString>

class QAction;
class QLabel;
class QUndoStack;

namespace myelin::ui {

class WelcomePage;

class MainWindow : public QMainWindow {
    Q_OBJECT

  public:
    // projectPath: the project file the studio was started with; may be empty or missing.
    explicit MainWindow(const QString& projectPath = QString(), QWidget* parent = nullptr);

    // Every change to the open project goes through this stack (Edit > Undo / Redo).
    QUndoStack* undoStack() const { return undoStack_; }
    // The project file shown in the title; empty when none was given or it does not exist.
    QString projectPath() const { return projectPath_; }

  public slots:
    void showBackendsDialog();
    void showAboutDialog();

  protected:
    void changeEvent(QEvent* event) override;

  private:
    void createMenus();
    void createStatusBar();
    void setProject(const QString& path);

    QUndoStack* undoStack_ = nullptr;
    WelcomePage* welcomePage_ = nullptr;
    QLabel* backendsLabel_ = nullptr;
    QAction* fullScreenAction_ = nullptr;
    QString projectPath_;
};

} // namespace myelin::ui
