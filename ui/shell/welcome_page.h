#pragma once
// The studio's start page, shown while no project is open: what Myelin Studio is, buttons to
// start a project, the recent projects, and the compute backends this process found.
#include <QStringList>
#include <QWidget>

class QLabel;
class QVBoxLayout;

namespace myelin::ui {

class WelcomePage : public QWidget {
    Q_OBJECT

  public:
    explicit WelcomePage(QWidget* parent = nullptr);

    // Shows a note (rich text) about the project file the studio was started with; an empty
    // text hides it.
    void setProjectNotice(const QString& text);
    // The recent project files, newest first (the section hides when empty).
    void setRecentFiles(const QStringList& paths);

  signals:
    void newProjectRequested();
    void openRequested();
    void recentFileRequested(const QString& path);

  private:
    // Brings the layouts up to date after a change while the page is hidden.
    void relayoutWhileHidden();

    QLabel* projectNotice_ = nullptr;
    QWidget* recentSection_ = nullptr;
    QVBoxLayout* recentList_ = nullptr;
};

} // namespace myelin::ui
