#pragma once
// Trainer: runs a project's training spec — zero_grad, forward, loss, backward over accumulated
// micro-batches, clipping, optimizer step, scheduler step — with validation, early stopping,
// checkpoints, capture through module hooks, NaN/Inf detection and resume. run() is a short
// loop over epochs and optimizer steps; everything beyond training itself hangs on its hook
// points as TrainerCallbacks (callbacks.h). Everything it reports goes out as train::Events to
// one sink (an EventQueue when another thread consumes them).
//
// Threading: run() blocks on the calling (training) thread. Stop and pause go through the
// run's RunControl (run_control.h), which any thread may hold and use at any time, before,
// during or after run(); stop() finishes the current optimizer step and writes a checkpoint
// before run() returns. progress() may be called from any thread.
#include <myelin/device.h>
#include <myelin/graph/build.h>
#include <myelin/io/project.h>
#include <myelin/optim/grad_scaler.h>
#include <myelin/spec/components.h>
#include <myelin/train/breakpoints.h>
#include <myelin/train/callbacks.h>
#include <myelin/train/data_setup.h>
#include <myelin/train/events.h>
#include <myelin/train/metrics.h>
#include <myelin/train/run_control.h>

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace myelin::nn {
class Loss;
}
namespace myelin::optim {
class Optimizer;
}
namespace myelin::data {
class DataLoader;
struct DataLoaderOptions;
} // namespace myelin::data
namespace myelin::io {
struct Checkpoint;
}
namespace myelin::dist {
class Communicator;
}

namespace myelin::train {

class Schedule;
class EarlyStopping;
class DataParallel;
namespace detail {
struct ParameterLayout;
}

struct TrainerOptions {
    std::filesystem::path project_dir = "."; // data paths are relative to it
    std::filesystem::path checkpoint_dir;    // empty: no checkpoint files are written
    std::optional<int64_t> epochs;           // override the project's
    std::optional<uint64_t> seed;            // override the project's
    std::optional<double> lr;                // override the project's optimizer lr
    int threads = 0;                         // 0: the project's setting, else the default
    bool flush_denormal = false;             // true: as the project's training.flush_denormal
    std::filesystem::path resume_from;       // a checkpoint to continue from
    // resume_from is a fork's branch point: the optimizer options this project (with the
    // overrides) sets differently from the checkpoint's project take effect there, lr by scaling
    // every group's lr and the schedule's base lrs by new / old (the schedule goes on from the
    // same position). False (a resume): the checkpoint's options go on, with a warning when the
    // project sets them differently, since the optimizer's state carries them.
    bool fork = false;
    // Weights to start from (transfer learning): a safetensors file of state_dict tensors, e.g.
    // exported from PyTorch. Tensors are matched by name; missing and unexpected names are
    // reported as warnings, a shape mismatch is an error.
    std::filesystem::path init_weights;
    std::string run_name;
    int64_t run_id = 0;    // the store's run, recorded in checkpoints (0: none)
    int64_t max_steps = 0; // stop (as by stop()) after this many optimizer steps; 0: no limit
    // Stop / pause requests; shared with whoever asks (null: the Trainer makes its own).
    std::shared_ptr<RunControl> control;
    // Training breakpoints (breakpoints.h), which the holder may change while the run goes
    // (null: none, and none can be set later), and what a hit does: Pause holds the step until
    // resumed; Stop gives the step up and stops with a checkpoint before it.
    std::shared_ptr<BreakpointSet> breakpoints;
    BreakAction on_break = BreakAction::Stop;
    // Text sources: encode with this (a checkpoint's) instead of a vocabulary built from the
    // training split (evaluation of a checkpoint uses the vocabulary it was trained with).
    std::optional<data::TextEncoding> text_encoding;
    // Data-parallel training (issue 19, train/data_parallel.h): this process is one rank of
    // communicator->size(), each training on its shard of every epoch with the project's batch
    // size; gradients are averaged in buckets of dist_bucket_mb MB; every dist_check_every
    // optimizer steps (0: never) every parameter is compared across ranks. Every rank constructs
    // its Trainer and runs it (the constructor and run() are collective); only rank 0 should
    // have a sink and a checkpoint_dir. Null: one process, exactly as without.
    std::shared_ptr<dist::Communicator> communicator;
    double dist_bucket_mb = 25;
    int64_t dist_check_every = 0;
    bool dist_overlap = true; // start allreduces from gradient hooks during backward
    // BatchNorm statistics over every rank (training.distributed.sync_batchnorm; true here
    // turns it on whatever the project says: myelin train --sync-batchnorm).
    bool dist_sync_batchnorm = false;

    // Where the model (its parameters, buffers, gradients and optimizer state) and each batch
    // live. A device the run cannot use is refused by the constructor (check_training_backend:
    // CUDA in this version). Checkpoints are written from host copies. The CLI and the studio
    // set it with training_device() (the project's training.device, or --device).
    Device device = kCPU;
    // Loss scaling with these options whatever training.precision says (training.precision
    // "float16" scales with the defaults, torch.cuda.amp.GradScaler's): the float16 path's
    // scaler with float32 compute, for tests on the CPU. Unset: as the precision says.
    std::optional<optim::GradScalerOptions> grad_scaler;
};

struct TrainResult {
    RunStatus status = RunStatus::Finished;
    std::string error;                       // when failed
    std::optional<std::string> error_module; // where a NaN/Inf first appeared
    int64_t epochs_completed = 0;
    int64_t steps = 0;
    MetricMap train;      // last epoch's
    MetricMap validation; // last validation
    MetricMap test;       // after training, when the data has a test part
    std::filesystem::path last_checkpoint;
    std::filesystem::path best_checkpoint;
    bool early_stopped = false;
    // Wall time of the training loops (every epoch's batches, steps, callbacks and events; not
    // validation, test or checkpoints at epoch ends) and the examples they trained on: what a
    // PyTorch loop timed around its `for batch in loader` measures.
    double train_seconds = 0;
    int64_t train_samples = 0;
};

// The project as a Trainer with these options trains it: the overrides (epochs, seed, lr,
// threads) written into its training spec. What checkpoints record and forks compare.
io::Project effective_project(const io::Project& project, const TrainerOptions& options);

// The device a run of `project` trains on: `requested` (the CLI's --device) or else the
// project's training.device. Throws Error saying why when training cannot run there (the device
// is absent or its backend cannot train: check_training_device) or when training.precision does
// not fit it (check_precision). The CLI and the studio call it before a run is created.
Device training_device(const io::Project& project, std::optional<Device> requested = std::nullopt);
// Throws Error naming training.precision when `precision` cannot train on `device`: "float16"
// needs a CUDA device (PyTorch's CPU autocast is bfloat16, which "bfloat16" gives) whose
// autocast supports it.
void check_precision(spec::Precision precision, const Device& device);

// Why a checkpoint's model tensors do not fit the project's model, one "missing: / unexpected: /
// shape: ..." line each; empty when they fit. Builds the model (the default generator is left as
// it was), so a fork is refused before anything is recorded.
std::string checkpoint_model_mismatch(const io::Project& project, const io::Checkpoint& checkpoint);

// Optimizer steps in `micro_batches` batches, `accumulation_steps` batches per step (a last,
// shorter group is a step too): steps per epoch, and how far into an epoch a run is.
inline int64_t optimizer_steps(int64_t micro_batches, int64_t accumulation_steps) {
    return (micro_batches + accumulation_steps - 1) / accumulation_steps;
}

class Trainer {
  public:
    // Builds the model (seeded), the data, loss, optimizer and schedule, and loads the resume
    // checkpoint. Throws myelin::Error naming the problem (invalid model, data that does not fit
    // the model's input or the loss, unreadable checkpoint, ...).
    Trainer(const io::Project& project, TrainerOptions options);
    ~Trainer();
    Trainer(const Trainer&) = delete;
    Trainer& operator=(const Trainer&) = delete;

    // Where events go (not owned; set before run()). Null: nowhere.
    void set_sink(EventSink* sink) { sink_ = sink; }

    // Trains to the end (or until stopped, early-stopped or failed). Failures of the run itself
    // (bad data, a NaN, a callback's error) are in the result and in an Error event; run()
    // throws only what the sink throws (e.g. a store that cannot be written).
    TrainResult run();

    // Hooks into run(), called after the built-in callbacks in the order added (before run()).
    void add_callback(std::shared_ptr<TrainerCallback> callback);

    // The run's stop / pause requests (shared with TrainerOptions::control when given).
    RunControl& control() { return *control_; }
    const std::shared_ptr<RunControl>& shared_control() const { return control_; }
    void pause() { control_->pause(); }
    void resume() { control_->resume(); }
    void stop() { control_->stop(); }
    bool paused() const { return control_->paused(); }
    Progress progress() const;

    graph::GraphModule& model() { return *model_; }
    optim::Optimizer& optimizer() { return *optimizer_; }
    const io::Project& project() const { return project_; }
    const DataSplits& data() const { return data_; }
    const spec::TrainSpec& spec() const { return spec_; }
    const TrainerOptions& options() const { return options_; }
    // What the loss was built with: the data's class names, the model's outputs per example and
    // floating dtype (class weights by name become a tensor in class order from it).
    const spec::LossContext& loss_context() const { return loss_context_; }
    const nn::Loss& loss() const { return *loss_; }
    int64_t steps_per_epoch() const { return steps_per_epoch_; }
    // Ranks training together (1 without a communicator) and what the run records about them
    // (dist.world_size, dist.backend, dist.hosts, dist.global_batch; empty alone).
    int world_size() const;
    std::vector<std::pair<std::string, std::string>> distributed_params() const;
    // Loss and metrics of the model on `dataset` (eval mode, no grad, eval transforms); fills
    // `confusion` for classification when given.
    MetricMap evaluate(const data::DatasetPtr& dataset, ConfusionMatrix* confusion = nullptr);
    // The model's outputs for every example of `dataset`, in order, stacked (eval mode, no grad,
    // eval transforms); `targets` receives the stacked targets when given.
    Tensor predict(const data::DatasetPtr& dataset, Tensor* targets = nullptr);

    // --- for callbacks, at the hook points ---
    // Sends an event to the sink. (Not "emit": a Qt program that includes this header defines
    // emit as a macro.)
    void report(Event event);
    int64_t epoch() const { return epoch_; } // 0-based, the epoch being trained
    int64_t step() const { return step_; }   // optimizer steps done
    // The layers capture, norms and feature maps cover (training.capture.layers; all top-level
    // layers when empty), in forward order.
    const std::vector<std::pair<std::string, nn::ModulePtr>>& captured_layers() const {
        return layers_;
    }
    // The dtype forward passes autocast to (training.precision), or none.
    std::optional<DType> autocast_dtype() const;
    // Loss scaling (training.precision "float16" or TrainerOptions::grad_scaler), or null.
    const optim::GradScaler* grad_scaler() const { return scaler_.get(); }
    // With loss scaling, from after_backward on: a gradient of this step is inf/NaN once
    // unscaled, so the optimizer step is skipped and the scale backs off. Callbacks that read
    // gradients leave this step's alone (an overflow is expected there, not a failure).
    bool gradients_overflowed() const { return overflowed_; }
    // The mean training loss of the epoch so far.
    double epoch_loss() const { return epoch_loss_.mean(); }
    // A metric by its name in the project ("val_loss", "train_accuracy"); throws Error naming
    // the metrics there are when it is unknown.
    double metric_value(const std::string& name, const MetricMap& train,
                        const MetricMap& validation) const;
    EarlyStopping& early_stopping() { return *early_stopping_; }
    // Writes a checkpoint of the whole training state as `file_name` in the checkpoint folder,
    // at position (epoch, batch_in_epoch, step()); empty when the run writes no checkpoints.
    std::filesystem::path save_checkpoint(const std::string& file_name, int64_t epoch,
                                          int64_t batch_in_epoch);
    // Runs `batch` through the model again and names the first layer whose output is not
    // finite (NaN localisation).
    std::optional<std::string> first_nonfinite_output(const data::Example& batch);
    // Excludes the time since the last step from the step-time average (after a validation).
    void restart_step_timer();
    // Reports "paused at step N" and blocks while the run control is paused (and not stopped).
    void wait_while_paused();

  private:
    // The constructor's steps, in its order.
    void check_options(); // the options against each other, the device and the precision
    void check_data_fits_model();
    void setup_loss();
    void setup_optimizer(); // parameter groups by lr multiplier, frozen layers left out
    void setup_train_loader();
    void load_starting_state(); // initial weights, or a resume's or fork's checkpoint
    spec::LossContext make_loss_context() const;
    // Shards the training data, gathers the ranks and takes rank 0's resume checkpoint
    // (data_parallel.cpp; collective).
    void setup_data_parallel(data::DataLoaderOptions& train_options);
    void load_resume_checkpoint();
    // options.device: moves the model and the optimizer's state there (after any checkpoint
    // was loaded); on_device() moves one batch.
    void move_to_device();
    data::Example on_device(const data::Example& batch) const;
    // After the checkpoint's optimizer state is loaded: applies (fork) or adopts (resume) the
    // options the checkpoint's project sets differently; may scale `checkpoint.scheduler`.
    void reconcile_optimizer_options(io::Checkpoint& checkpoint, const std::string& where);
    // A checkpoint write failed (io::WriteError: a full disk): the run ends stopped, saying
    // which checkpoint it can be resumed from.
    void stop_after_write_failure(const std::exception& e);
    // Applies what RunControl::request_edits asked for, before the next optimizer step, and
    // reports it (RunChanged); an edit that cannot apply is reported as a warning instead.
    void apply_pending_edits();
    // Freezes / unfreezes layers and sets lr multipliers (by module name) from the next step on:
    // the optimizer is laid out anew (relayout_optimizer). Returns what changed, as text ("froze
    // conv1, fc2 lr x1 -> x0.1") and the layers whose frozen state changed in `changed`; what
    // cannot change is reported as a warning.
    std::string change_layer_training(const std::map<std::string, bool>& frozen,
                                      const std::map<std::string, double>& multipliers,
                                      std::vector<std::pair<std::string, bool>>& changed);
    // After project_.model's frozen flags or lr multipliers changed (`before` was in force): the
    // optimizer's groups laid out anew, each parameter trained before and after keeping its
    // state, each group's lr the first group's per unit multiplier times its own, and the
    // schedule rebuilt with its state moved along. Returns how many parameters kept state.
    size_t relayout_optimizer(const detail::ParameterLayout& before);
    // layers_ from spec_.capture.layers (every top-level layer when empty).
    void select_captured_layers();
    // Each parameter group's options as `optimizer` gives them (stand-in parameters).
    std::vector<std::map<std::string, double>> group_options(const spec::Choice& optimizer) const;
    void load_initial_weights();
    void add_builtin_callbacks();
    // One epoch from first_batch_; returns the micro-batch it stopped at (the epoch's size when
    // it ran to its end).
    int64_t train_epoch();
    // One optimizer step over micro-batches [micro, last); returns the next micro-batch.
    int64_t train_step(int64_t micro, int64_t last);
    void forward_backward(const data::Example& batch, int64_t group_samples, double& group_loss);
    // Loss scaling (trainer_precision.cpp): the scaler as the precision and the options ask;
    // the gradients unscaled once per step (after data-parallel averaging, before anything else
    // reads them); clipping and the optimizer step, skipped when a gradient overflowed, then
    // the scale's update.
    void setup_loss_scaling();
    void unscale_gradients();
    void clip_and_step(StepMetrics& metrics);
    void restore_loss_scaling(const io::Checkpoint& checkpoint, const std::string& where);
    // Validation, schedule, epoch metrics, on_epoch_end; true when the run ends here.
    bool end_epoch();
    void stop_mid_epoch(int64_t micro);
    void test_metrics();
    void fail(const std::exception& e); // marks the result failed and reports the error

    io::Project project_;
    spec::TrainSpec spec_;
    TrainerOptions options_;
    std::shared_ptr<RunControl> control_;
    std::shared_ptr<graph::GraphModule> model_;
    DataSplits data_;
    spec::LossContext loss_context_;
    std::shared_ptr<nn::Loss> loss_;
    std::unique_ptr<optim::Optimizer> optimizer_;
    std::filesystem::path last_written_checkpoint_; // the newest checkpoint written
    int64_t last_written_step_ = 0;
    std::unique_ptr<Schedule> schedule_;
    std::unique_ptr<EarlyStopping> early_stopping_;
    std::unique_ptr<data::DataLoader> train_loader_;
    std::vector<std::pair<std::string, nn::ModulePtr>> layers_; // captured layers, forward order
    std::vector<std::shared_ptr<TrainerCallback>> callbacks_;
    std::vector<Tensor> parameters_;           // for clipping
    std::vector<double> group_lr_multipliers_; // per optimizer group
    int64_t micro_batches_per_epoch_ = 0;
    int64_t steps_per_epoch_ = 0;
    bool sum_reduction_ = false;
    std::shared_ptr<DataParallel> data_parallel_; // null: one process
    std::unique_ptr<optim::GradScaler> scaler_;   // null: no loss scaling
    bool unscaled_ = false;                       // this step's gradients are unscaled
    bool overflowed_ = false;                     // ... and one of them is inf/NaN
    int64_t examples_per_epoch_ = 0;              // this rank's shard

    // Position (what a checkpoint records).
    int64_t epoch_ = 0;
    int64_t first_batch_ = 0;
    int64_t step_ = 0;
    std::vector<LogMessage> init_messages_; // reported when run() starts
    TrainResult result_;
    int64_t metrics_step_ = -1; // the step result_.train / validation were measured at

    // The epoch in progress.
    RunningMean epoch_loss_;
    std::optional<ClassificationMetrics> epoch_classification_;
    std::optional<ProgressTracker> tracker_;

    EventSink* sink_ = nullptr;
    mutable std::mutex progress_mutex_;
    Progress progress_;

    // Issue 41, runs that end on a fault of the machine (trainer_endings.cpp):
    // A device error off the CPU (out of memory, a failed kernel, a lost device): the run ends
    // stopped, naming the device, resumable from the last checkpoint (none is written: the
    // state since may be half-updated, the device unreadable).
    void stop_after_device_fault(const std::exception& e);
    // "it can be resumed from epoch-0002.safetensors (step 40)", or why it cannot.
    std::string resume_hint() const;
    // The first failure of the run store a sink threw: report() keeps it and stops the run at the
    // next step (a stop checkpoint, resumable), and the run ends saying why.
    std::optional<std::string> store_failure_;
};

} // namespace myelin::train
