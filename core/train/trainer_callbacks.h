#pragma once
// The Trainer's built-in callbacks (internal to core/train): what a run does besides training,
// each on its hook points (callbacks.h). Trainer::add_builtin_callbacks adds them in the order
// they are declared here.
#include <myelin/autograd.h>
#include <myelin/data/dataset.h>
#include <myelin/io/project.h>
#include <myelin/nn/module.h>
#include <myelin/train/breakpoints.h>
#include <myelin/train/callbacks.h>

#include <filesystem>
#include <string>
#include <vector>

namespace myelin::train {

// "0042" for (42, 4): checkpoint file names sort by step and epoch.
std::string zero_padded(int64_t value, int width);

// Activation and gradient summaries (statistics + 64-bin histograms) of every captured layer
// on every `every`-th step, through forward and full backward hooks registered for that step
// only (a step without capture pays nothing), and the layers' weight summaries after it.
class SummaryCapture final : public TrainerCallback {
  public:
    void before_step(Trainer& trainer) override;
    void after_forward(Trainer& trainer, const ForwardPass& pass) override;
    void after_backward(Trainer& trainer) override;
    void after_step_reported(Trainer& trainer) override;
    void on_epoch_end(Trainer& trainer, EpochEnd& end) override;
    void on_run_end(Trainer& trainer, TrainResult& result) override;

  private:
    void remove_hooks();
    bool capturing_ = false;
    std::vector<HookHandle> hooks_;
};

// Training breakpoints (breakpoints.h): checks the set's conditions at every step; on a hit reports
// BreakpointFired and pauses the step or gives it up (StepAbandoned), as `action` says. Added
// before NonFiniteLossGuard, so a NaN meets the breakpoint before it fails the run.
std::shared_ptr<TrainerCallback> make_breakpoint_monitor(std::shared_ptr<const BreakpointSet> set,
                                                         BreakAction action);

// "; the first non-finite output is layer 3's (Linear)" for the layer NaN localisation found
// (Trainer::first_nonfinite_output), `none` when it found none.
std::string nonfinite_output_text(Trainer& trainer, const std::optional<std::string>& layer,
                                  const std::string& none);

// A loss that is NaN or infinite ends the run, naming the first layer whose output is not
// finite (the batch is run through the model again with forward hooks).
class NonFiniteLossGuard final : public TrainerCallback {
  public:
    void after_loss(Trainer& trainer, const ForwardPass& pass) override;
};

// Per-layer gradient norms every step: a non-finite one ends the run naming the layer; every
// `norms_every`-th step (0: never) the layers' grad norm, weight norm and update/weight ratio
// go into the step's metrics.
class GradientMonitor final : public TrainerCallback {
  public:
    void after_backward(Trainer& trainer) override;
    void after_optimizer_step(Trainer& trainer, StepMetrics& metrics) override;

  private:
    // The optimizer's update pass gathers the statistics (optim::StepStats): no pass of our own.
    void after_fused_step(Trainer& trainer, StepMetrics& metrics);
    // Gradient clipping changes the gradients before the step, and an optimizer from a plugin
    // may gather nothing: then the gradients are read here and the weights copied before the step.
    void measure_before_step(Trainer& trainer);
    void measure_after_step(Trainer& trainer, StepMetrics& metrics);

    bool norms_now_ = false; // this step reports per-layer statistics
    bool fused_ = false;     // this step's statistics come from the optimizer
    bool skipped_ = false;   // loss scaling skips this step (a gradient overflowed)
    std::vector<LayerStats> stats_;
    std::vector<std::vector<Tensor>> before_; // parameters before the step, per layer
};

// The probe examples every probe callback uses: the first FeatureMapProbe::kProbeExamples of
// validation, else of training, with the evaluation transform applied by one generator seeded
// with the project's seed (the same batch on every run of the project).
std::vector<data::Example> probe_examples(Trainer& trainer);

// Every `every`-th step, the activations of every captured layer on a fixed batch of probe
// examples (the first kProbeExamples of validation, else of training, with the evaluation
// transform), in eval mode; the first capture also reports the batch itself (layer "").
class FeatureMapProbe final : public TrainerCallback {
  public:
    static constexpr int64_t kProbeExamples = 4;
    void on_run_start(Trainer& trainer) override;
    void after_step_reported(Trainer& trainer) override;

  private:
    bool prepared_ = false; // probe_ taken (on the first step that probes)
    Tensor probe_;          // [examples, ...input shape]
    bool input_reported_ = false;
};

// Gradient through time, on the same cadence and probe examples as FeatureMapProbe (with their
// targets): every `every`-th step, when the model has recurrent layers, a forward and backward
// of the loss on the probe batch in eval mode records the norm of dL/dh_t per time step of each
// (nn/recurrent_gradients.h) and reports them as TimeGradientEvents. No optimizer step; the
// parameters' gradients are put aside and back, so the training trajectory is unchanged.
class TimeGradientProbe final : public TrainerCallback {
  public:
    void on_run_start(Trainer& trainer) override;
    void after_step_reported(Trainer& trainer) override;

  private:
    bool prepared_ = false; // probe_ taken (on the first step that probes)
    std::vector<std::pair<std::string, nn::ModulePtr>> layers_; // captured, with a recurrent layer
    data::Example probe_;                                       // undefined input: nothing to probe
};

// Validation every `every` optimizer steps, reported as EpochMetrics within the epoch.
class PeriodicValidation final : public TrainerCallback {
  public:
    explicit PeriodicValidation(int64_t every) : every_(every) {}
    void after_step_reported(Trainer& trainer) override;

  private:
    int64_t every_;
};

// Tracks the early-stopping metric (which also picks the best checkpoint) and ends the run when
// it stops improving (when early stopping is enabled).
class EarlyStoppingMonitor final : public TrainerCallback {
  public:
    void on_epoch_end(Trainer& trainer, EpochEnd& end) override;
};

// The best checkpoint (best.safetensors) and the periodic ones (epoch-NNNN.safetensors, every
// `every_epochs`, at the last epoch and when early stopping ends the run), keeping the newest
// `keep_last` periodic ones.
class CheckpointKeeper final : public TrainerCallback {
  public:
    explicit CheckpointKeeper(spec::CheckpointSpec spec) : spec_(std::move(spec)) {}
    void on_epoch_end(Trainer& trainer, EpochEnd& end) override;
    void on_run_end(Trainer& trainer, TrainResult& result) override;

  private:
    spec::CheckpointSpec spec_;
    std::filesystem::path best_, last_;
    std::vector<std::filesystem::path> periodic_;
};

} // namespace myelin::train
