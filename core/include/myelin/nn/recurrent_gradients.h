#pragma once
// Gradient through time: the per-time-step gradient norms of recurrent layers (RNN, LSTM, GRU),
// what the inspection's "Gradient through time" view plots to show vanishing or exploding
// gradients along a sequence.
//
// A recurrent layer runs as one autograd node over the whole sequence, so no hook can see the
// gradient of one step's hidden state; its backward records it instead, when asked. While a
// RecordRecurrentGradients scope is alive on a thread, every recurrent layer forwarded on that
// thread remembers the scope's recorder and label; when that forward's backward runs (on
// whichever thread), it adds one RecurrentStepGradients per layer of the stack and direction:
// for every time step t, the L2 norm over the batch of dL/dh_t, the whole gradient reaching the
// hidden state h_t (from the output at t and from the next step; at the last step, from h_n).
// Steps at or past a sequence's length (the lengths input) carry no gradient of that sequence:
// it counts nothing there, and a step padded in every sequence reads 0.
//
// Without a scope nothing is recorded and nothing is paid beyond a null test per call and per
// step.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace myelin::nn {

struct RecurrentStepGradients {
    std::string label;         // the scope's label (the module's name, for the trainer)
    int64_t layer = 0;         // layer of the stack, 0 first
    int direction = 0;         // 0 forward, 1 reverse
    std::vector<double> norms; // [T], indexed by time step (not by the order processed)
};

// Collects what backward passes record; safe to add to from several threads.
class RecurrentGradientRecorder {
  public:
    void add(RecurrentStepGradients gradients);
    // What was recorded since the last take(), in the order recorded.
    std::vector<RecurrentStepGradients> take();

  private:
    std::mutex mutex_;
    std::vector<RecurrentStepGradients> recorded_;
};

// Installs `recorder` under `label` for the recurrent layers forwarded on this thread while the
// scope lives. Scopes nest: the innermost applies, and the outer one is back when it ends.
class RecordRecurrentGradients {
  public:
    RecordRecurrentGradients(std::shared_ptr<RecurrentGradientRecorder> recorder,
                             std::string label);
    ~RecordRecurrentGradients();
    RecordRecurrentGradients(const RecordRecurrentGradients&) = delete;
    RecordRecurrentGradients& operator=(const RecordRecurrentGradients&) = delete;

    struct Target {
        std::shared_ptr<RecurrentGradientRecorder> recorder;
        std::string label;
    };
    // This thread's innermost scope's target; null when none is installed.
    static const Target* current();

  private:
    Target target_;
    const Target* previous_ = nullptr;
};

} // namespace myelin::nn
