#include <myelin/train/run_control.h>

namespace myelin::train {

void RunControl::stop() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    changed_.notify_all();
}

void RunControl::pause() {
    std::lock_guard lock(mutex_);
    paused_ = true;
}

void RunControl::resume() {
    {
        std::lock_guard lock(mutex_);
        paused_ = false;
    }
    changed_.notify_all();
}

bool RunControl::wait_while_paused() {
    std::unique_lock lock(mutex_);
    if (!paused_ || stop_) return false;
    changed_.wait(lock, [&] { return !paused_ || stop_; });
    return true;
}

} // namespace myelin::train
