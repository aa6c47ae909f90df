#include "document/autosave.h"

#include "document/project_document.h"

#include <myelin/io/project.h>

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLockFile>
#include <QStandardPaths>
#include <QTimer>
#include <QUuid>

#include <algorithm>

namespace myelin::ui {

namespace {

QString originPath(const QString& recoveryFile) {
    return recoveryFile + QStringLiteral(".origin");
}
QString lockPath(const QString& recoveryFile) {
    return recoveryFile + QStringLiteral(".lock");
}

} // namespace

Autosave::Autosave(ProjectDocument* document, QObject* parent)
    : QObject(parent), document_(document) {
    timer_ = new QTimer(this);
    timer_->setInterval(kDefaultIntervalSeconds * 1000);
    connect(timer_, &QTimer::timeout, this, &Autosave::saveNow);
    timer_->start();

    // A new project (or a new file name) starts a new recovery file; the old one goes.
    connect(document_, &ProjectDocument::projectReplaced, this, [this] {
        discard();
        startSession();
    });
    connect(document_, &ProjectDocument::filePathChanged, this, [this] {
        discard();
        startSession();
    });
    connect(document_, &ProjectDocument::dirtyChanged, this, [this](bool dirty) {
        if (!dirty) discard();
    });
    startSession();
}

Autosave::~Autosave() = default;

void Autosave::setIntervalSeconds(int seconds) {
    timer_->setInterval(std::max(1, seconds) * 1000);
}

int Autosave::intervalSeconds() const {
    return timer_->interval() / 1000;
}

QString Autosave::recoveryDirectory() {
    return QDir(QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation))
        .filePath(QStringLiteral("recovery"));
}

void Autosave::startSession() {
    lock_.reset();
    const QString path = document_->filePath();
    // One file per project path (a crash then a second crash keep one file), or a fresh one.
    key_ =
        path.isEmpty()
            ? QStringLiteral("untitled-") + QUuid::createUuid().toString(QUuid::WithoutBraces)
            : QString::fromLatin1(QCryptographicHash::hash(path.toUtf8(), QCryptographicHash::Sha1)
                                      .toHex()
                                      .left(16));
}

QString Autosave::recoveryPath() const {
    return QDir(recoveryDirectory()).filePath(key_ + QStringLiteral(".myelin"));
}

bool Autosave::saveNow() {
    if (!document_->isDirty()) return true;
    const QString file = recoveryPath();
    if (!QDir().mkpath(QFileInfo(file).absolutePath())) return false;
    if (!lock_) {
        lock_ = std::make_unique<QLockFile>(lockPath(file));
        lock_->setStaleLockTime(0);
        if (!lock_->tryLock(0)) {
            lock_.reset();
            return false;
        }
    }
    try {
        io::save_project(document_->project(), file.toStdString());
    } catch (const Error&) {
        return false;
    }
    QFile origin(originPath(file));
    if (!origin.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
    origin.write(document_->filePath().toUtf8());
    return true;
}

void Autosave::discard() {
    if (key_.isEmpty()) return;
    const QString file = recoveryPath();
    QFile::remove(file);
    QFile::remove(originPath(file));
    lock_.reset(); // unlocks and removes the lock file
}

void Autosave::remove(const QString& recoveryFile) {
    QFile::remove(recoveryFile);
    QFile::remove(originPath(recoveryFile));
}

std::vector<Autosave::Recovery> Autosave::pendingRecoveries() {
    std::vector<Recovery> found;
    const QDir dir(recoveryDirectory());
    for (const QFileInfo& info : dir.entryInfoList({QStringLiteral("*.myelin")}, QDir::Files)) {
        const QString file = info.absoluteFilePath();
        QLockFile lock(lockPath(file));
        lock.setStaleLockTime(0);
        if (!lock.tryLock(0)) continue; // a running studio owns it
        Recovery recovery{file, QString(), info.lastModified()};
        QFile origin(originPath(file));
        if (origin.open(QIODevice::ReadOnly))
            recovery.original = QString::fromUtf8(origin.readAll());
        const QFileInfo project(recovery.original);
        if (!recovery.original.isEmpty() && project.exists() &&
            project.lastModified() >= recovery.saved) {
            lock.unlock();
            remove(file); // the project was saved after this autosave
            continue;
        }
        found.push_back(recovery);
    }
    std::sort(found.begin(), found.end(),
              [](const Recovery& a, const Recovery& b) { return a.saved > b.saved; });
    return found;
}

} // namespace myelin::ui
