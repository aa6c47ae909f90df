#pragma once
// RunControl: the stop / pause requests of one training run, shared (std::shared_ptr) by whoever
// asks (the studio's controller on the GUI thread, the CLI's Ctrl-C handler) and the Trainer
// that honours them between optimizer steps. The asker holds the control, never the Trainer: a
// request made before the Trainer exists, or after it is gone, is safe and simply remembered.
#include <myelin/spec/training.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace myelin::train {

// Settings a run takes at its next optimizer step (the studio's "Change" while paused). What can
// change mid-run: the learning rate (the first parameter group's; the others keep their ratios,
// and a schedule is scaled with it, so it goes on from here), gradient clipping, which layers
// train and their lr multipliers (the optimizer's groups are rebuilt; a parameter trained before
// and after keeps its state) and what is captured. The graph, the data and the optimizer's kind
// cannot.
struct RunEdits {
    std::optional<double> lr;
    std::optional<std::optional<double>> clip_grad_norm; // a max norm, or off (inner nullopt)
    std::optional<std::optional<double>> clip_grad_value;
    std::map<std::string, bool> frozen;          // by module name: frozen from here on, or not
    std::map<std::string, double> lr_multiplier; // by module name
    std::optional<spec::CaptureSpec> capture;
    bool empty() const {
        return !lr && !clip_grad_norm && !clip_grad_value && frozen.empty() &&
               lr_multiplier.empty() && !capture;
    }
};

class RunControl {
  public:
    void stop();   // finish the current optimizer step, write a checkpoint, end the run
    void pause();  // wait before the next optimizer step
    void resume(); // go on after pause()

    bool stop_requested() const { return stop_; }
    bool paused() const { return paused_; }

    // Blocks while paused, until resumed or stopped. Returns whether it waited.
    bool wait_while_paused();

    // Edits for the next optimizer step, merged into any not yet taken (a later value wins).
    void request_edits(const RunEdits& edits);
    // The pending edits, taken (the Trainer's, before each step).
    std::optional<RunEdits> take_edits();

  private:
    std::mutex edits_mutex_;
    std::optional<RunEdits> edits_;
    std::atomic<bool> stop_{false};
    std::atomic<bool> paused_{false};
    std::mutex mutex_;
    std::condition_variable changed_;
};

} // namespace myelin::train
