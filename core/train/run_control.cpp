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

void RunControl::request_edits(const RunEdits& edits) {
    std::lock_guard lock(edits_mutex_);
    RunEdits merged = edits_.value_or(RunEdits{});
    if (edits.lr) merged.lr = edits.lr;
    if (edits.clip_grad_norm) merged.clip_grad_norm = edits.clip_grad_norm;
    if (edits.clip_grad_value) merged.clip_grad_value = edits.clip_grad_value;
    for (const auto& [name, frozen] : edits.frozen)
        merged.frozen[name] = frozen;
    for (const auto& [name, multiplier] : edits.lr_multiplier)
        merged.lr_multiplier[name] = multiplier;
    if (edits.capture) merged.capture = edits.capture;
    if (!merged.empty()) edits_ = merged;
}

std::optional<RunEdits> RunControl::take_edits() {
    std::lock_guard lock(edits_mutex_);
    std::optional<RunEdits> taken;
    taken.swap(edits_);
    return taken;
}

} // namespace myelin::train
