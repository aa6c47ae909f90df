#pragma once
// Training breakpoints: conditions checked at every optimizer step, after the gradients are
// complete and before the optimizer step, so a run held at a breakpoint still has the weights
// from before the step that tripped it.
//
//   nonfinite          the loss or a layer's gradient is NaN or infinite
//   grad-spike=K       a layer's gradient norm exceeds K x the median of its last 50 norms
//                      (once it has 10)
//   dead=F             a layer's output is more than F (0..1) exact zeros (dead ReLU units)
//   loss-above=V[@N]   the step's loss exceeds V (from step N on; default 0)
//
// Each condition holds a run once per layer (a loss that stays above its line does not stop
// every later step). Written as `myelin train --break-on nonfinite,grad-spike=10,dead=0.9`. When
// one fires, the trainer reports a BreakpointFired event (the store records it as a run event) and
// then, as TrainerOptions::on_break says, pauses in the middle of the step until resumed (the
// studio: resuming finishes the step exactly as it would have run) or abandons the step and stops
// with a checkpoint of the position before it (the CLI: resuming from it runs that step again).
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace myelin::train {

struct BreakCondition {
    enum class Kind { NonFinite, GradSpike, Dead, LossAbove };
    Kind kind = Kind::NonFinite;
    double threshold = 0;  // K, F or V
    int64_t from_step = 0; // loss-above: checked from this step on
    bool operator==(const BreakCondition&) const = default;
};

enum class BreakAction { Pause, Stop };

// The conditions of one run, shared (std::shared_ptr) by whoever edits them and the trainer,
// which takes a copy at the start of every optimizer step: the studio can change them while the
// run goes.
class BreakpointSet {
  public:
    BreakpointSet() = default;
    explicit BreakpointSet(std::vector<BreakCondition> conditions)
        : conditions_(std::move(conditions)) {}
    void set(std::vector<BreakCondition> conditions);
    std::vector<BreakCondition> conditions() const;

  private:
    mutable std::mutex mutex_;
    std::vector<BreakCondition> conditions_;
};

// "nonfinite,grad-spike=10" -> conditions. Throws Error naming the bad item and what is
// expected ("grad-spike needs a factor above 1, as grad-spike=10").
std::vector<BreakCondition> parse_break_conditions(std::string_view text);
// The condition as parse_break_conditions reads it ("grad-spike=10").
std::string format_break_condition(const BreakCondition& condition);

} // namespace myelin::train
