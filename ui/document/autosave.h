#pragma once
// Autosave: while the open project has unsaved changes, it is written every few seconds to a
// recovery file under QStandardPaths::AppLocalDataLocation/recovery (never over the project
// itself). A recovery file newer than its project — or of a project never saved — survives a
// crash and is offered at the next start. Saving, or closing with or without saving, removes it.
// A lock file per recovery file keeps a second running studio from offering another's work.
#include <QDateTime>
#include <QObject>
#include <QString>

#include <memory>
#include <vector>

class QLockFile;
class QTimer;

namespace myelin::ui {

class ProjectDocument;

class Autosave : public QObject {
    Q_OBJECT

  public:
    explicit Autosave(ProjectDocument* document, QObject* parent = nullptr);
    ~Autosave() override;

    static constexpr int kDefaultIntervalSeconds = 60;
    void setIntervalSeconds(int seconds);
    int intervalSeconds() const;

    static QString recoveryDirectory();
    // The recovery file of the open project (it exists only after a save with changes).
    QString recoveryPath() const;
    // Writes the recovery file now if the project has unsaved changes; false if it could not.
    bool saveNow();
    // Removes the open project's recovery file.
    void discard();

    struct Recovery {
        QString file;     // the recovery file (a project file)
        QString original; // the project it belongs to; empty for one never saved
        QDateTime saved;
    };
    // Recovery files left by a studio that did not close them, newest first. Files older than
    // their project are stale and removed.
    static std::vector<Recovery> pendingRecoveries();
    // Removes a recovery file (and its notes) after it was recovered or declined.
    static void remove(const QString& recoveryFile);

  private:
    void startSession();

    ProjectDocument* document_;
    QTimer* timer_ = nullptr;
    QString key_;
    std::unique_ptr<QLockFile> lock_;
};

} // namespace myelin::ui
