#pragma once
// RunControl: the stop / pause requests of one training run, shared (std::shared_ptr) by whoever
// asks (the studio's controller on the GUI thread, the CLI's Ctrl-C handler) and the Trainer
// that honours them between optimizer steps. The asker holds the control, never the Trainer: a
// request made before the Trainer exists, or after it is gone, is safe and simply remembered.
#include <atomic>
#include <condition_variable>
#include <mutex>

namespace myelin::train {

class RunControl {
  public:
    void stop();   // finish the current optimizer step, write a checkpoint, end the run
    void pause();  // wait before the next optimizer step
    void resume(); // go on after pause()

    bool stop_requested() const { return stop_; }
    bool paused() const { return paused_; }

    // Blocks while paused, until resumed or stopped. Returns whether it waited.
    bool wait_while_paused();

  private:
    std::atomic<bool> stop_{false};
    std::atomic<bool> paused_{false};
    std::mutex mutex_;
    std::condition_variable changed_;
};

} // namespace myelin::train
