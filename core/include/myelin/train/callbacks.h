#pragma once
// The Trainer's hook points. Trainer::run is a short loop — epochs, optimizer steps, each step's
// micro-batches — and everything else a run does hangs on these points as a TrainerCallback:
// capture of activation / gradient / weight summaries, per-layer norms, NaN localisation, feature
// maps, mid-epoch validation, early stopping and checkpoint keeping are the built-in ones
// (trainer_callbacks.cpp); the studio's inspection views and breakpoints add their own with
// Trainer::add_callback. Events go out through Trainer::report (to the sink: the store, the
// studio's queue, the CLI's printer).
//
// Order within one optimizer step (accumulation_steps micro-batches):
//   before_step -> [forward, after_forward, backward, after_loss] x micro-batches
//   -> after_backward -> clipping, optimizer step, schedule -> after_optimizer_step
//   -> StepMetrics reported -> after_step_reported
// and at the end of every epoch, after its EpochMetrics were reported: on_epoch_end.
// Callbacks run in the order they were added, built-ins first, on the training thread. A
// callback that throws fails the run with its message (TrainingFailure names a layer).
#include <myelin/error.h>
#include <myelin/pending_item.h>
#include <myelin/tensor.h>
#include <myelin/train/events.h>

#include <optional>
#include <string>

namespace myelin::data {
struct Example;
}

namespace myelin::train {

class Trainer;
struct TrainResult;

// A failure a callback detected, with the layer it points at (shown on that node in the editor).
class TrainingFailure : public Error {
  public:
    TrainingFailure(const std::string& message, std::optional<std::string> module)
        : Error(message), module_(std::move(module)) {}
    const std::optional<std::string>& module() const { return module_; }

  private:
    std::optional<std::string> module_;
};

// Thrown by a callback to give up the optimizer step under way: nothing of it is applied (the
// optimizer does not step, step() does not count it) and the run stops with a checkpoint of the
// position before it, so resuming runs that step again. (BatchNorm running statistics updated
// by the step's forward passes stay updated, as they would in PyTorch.)
struct StepAbandoned {};

// One micro-batch's forward pass, seen by after_forward (before its backward) and after_loss.
struct ForwardPass {
    const data::Example& batch;
    const Tensor& output;
    const Tensor& loss;
    const PendingItem& loss_read;
    // loss.item(). Free in after_loss; in after_forward, off the host, it waits for the device
    // to finish the forward pass before the backward is queued.
    double loss_value() const { return loss_read.value(); }
};

// The end of an epoch, seen by on_epoch_end. Callbacks read the metrics and may set the flags.
struct EpochEnd {
    const EpochMetrics& metrics;
    bool last_epoch = false;
    bool is_best = false;    // set by early stopping (it tracks the best metric)
    bool stop = false;       // end the run after this epoch (early stopping)
    std::string stop_reason; // logged when stop is set
};

class TrainerCallback {
  public:
    virtual ~TrainerCallback() = default;

    // run() starts (after RunStarted was reported) and ends (before Finished is reported).
    virtual void on_run_start(Trainer&) {}
    virtual void on_run_end(Trainer&, TrainResult&) {}

    // Optimizer step Trainer::step() + 1 is about to run its first micro-batch (gradients are
    // zero); the place to register module hooks for it.
    virtual void before_step(Trainer&) {}
    virtual void after_forward(Trainer&, const ForwardPass&) {}
    // The micro-batch's backward is queued (on the host: done) and its loss value read: the
    // place to act on the value (a non-finite loss, a loss above a line). The loss is read from
    // a device while it runs the backward, so the device does not wait for the host's reading.
    virtual void after_loss(Trainer&, const ForwardPass&) {}
    // The step's gradients are complete: before clipping and the optimizer step.
    virtual void after_backward(Trainer&) {}
    // Parameters updated, step() counts the step; `metrics` are about to be reported.
    virtual void after_optimizer_step(Trainer&, StepMetrics& metrics) { (void)metrics; }
    // The step's StepMetrics were reported.
    virtual void after_step_reported(Trainer&) {}
    virtual void on_epoch_end(Trainer&, EpochEnd&) {}
};

} // namespace myelin::train
