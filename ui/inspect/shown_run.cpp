#include "inspect/shown_run.h"

#include "inspect/view_frame.h"

#include <myelin/store/run_store.h>

#include <QTimer>

namespace myelin::ui {

ShownRun::ShownRun(QObject* owner, int pollMs) : poll_(new QTimer(owner)) {
    poll_->setInterval(pollMs);
}

void ShownRun::setPoll(std::function<void()> poll) {
    QObject::connect(poll_, &QTimer::timeout, poll_, std::move(poll));
}

ShownRun::~ShownRun() = default;

bool ShownRun::open(const QString& path, QString* error) {
    if (store_ && path == path_) return true;
    path_ = path;
    store_ = openStoreForReading(path, error);
    return store_ != nullptr;
}

void ShownRun::show(int64_t run, bool live) {
    run_ = run;
    live_ = live;
    if (live)
        poll_->start();
    else
        poll_->stop();
}

bool ShownRun::finish() {
    if (!live_) return false;
    live_ = false;
    poll_->stop();
    return true;
}

void ShownRun::stopPolling() {
    poll_->stop();
}

} // namespace myelin::ui
