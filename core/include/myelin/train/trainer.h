#pragma once
// Trainer: runs a project's training spec — zero_grad, forward, loss, backward over accumulated
// micro-batches, clipping, optimizer step, scheduler step — with validation, early stopping,
// checkpoints, capture through module hooks, NaN/Inf detection and resume. Everything it reports
// goes out as train::Events to one sink (an EventQueue when another thread consumes them).
//
// Threading: run() blocks on the calling (training) thread. pause(), resume(), stop() and
// progress() may be called from any thread at any time; stop() finishes the current optimizer
// step and writes a checkpoint before run() returns.
#include <myelin/graph/build.h>
#include <myelin/io/project.h>
#include <myelin/train/data_setup.h>
#include <myelin/train/events.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
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
}

namespace myelin::train {

class Schedule;
class EarlyStopping;

struct TrainerOptions {
    std::filesystem::path project_dir = "."; // data paths are relative to it
    std::filesystem::path checkpoint_dir;    // empty: no checkpoint files are written
    std::optional<int64_t> epochs;           // override the project's
    std::optional<uint64_t> seed;            // override the project's
    int threads = 0;                         // 0: the project's setting, else the default
    std::filesystem::path resume_from;       // a checkpoint to continue from
    // Weights to start from (transfer learning): a safetensors file of state_dict tensors, e.g.
    // exported from PyTorch. Tensors are matched by name; missing and unexpected names are
    // reported as warnings, a shape mismatch is an error.
    std::filesystem::path init_weights;
    std::string run_name;
    int64_t max_steps = 0; // stop (as by stop()) after this many optimizer steps; 0: no limit
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
};

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

    // Trains to the end (or until stopped, early-stopped or failed). Never throws for failures of
    // the run itself: they are in the result and in an Error event.
    TrainResult run();

    void pause();
    void resume();
    void stop();
    bool paused() const { return paused_; }
    Progress progress() const;

    graph::GraphModule& model() { return *model_; }
    const DataSplits& data() const { return data_; }
    const io::TrainSpec& spec() const { return spec_; }
    int64_t steps_per_epoch() const { return steps_per_epoch_; }
    // Loss and metrics of the model on `dataset` (eval mode, no grad, eval transforms); fills
    // `confusion` for classification when given.
    MetricMap evaluate(const data::DatasetPtr& dataset, ConfusionMatrix* confusion = nullptr);
    // The model's outputs for every example of `dataset`, in order, stacked (eval mode, no grad,
    // eval transforms); `targets` receives the stacked targets when given.
    Tensor predict(const data::DatasetPtr& dataset, Tensor* targets = nullptr);

  private:
    struct Capture;
    // Not "emit": a Qt program that includes this header defines emit as a macro.
    void report(Event event);
    void check_data_fits_model();
    void load_resume_checkpoint();
    void load_initial_weights();
    std::filesystem::path save_checkpoint(const std::string& file_name, int64_t epoch,
                                          int64_t batch_in_epoch);
    std::optional<std::string> first_nonfinite_output(const data::Example& batch);
    double metric_value(const std::string& name, const MetricMap& train,
                        const MetricMap& validation) const;
    void wait_while_paused();

    io::Project project_;
    io::TrainSpec spec_;
    TrainerOptions options_;
    std::shared_ptr<graph::GraphModule> model_;
    DataSplits data_;
    std::shared_ptr<nn::Loss> loss_;
    std::unique_ptr<optim::Optimizer> optimizer_;
    std::unique_ptr<Schedule> schedule_;
    std::unique_ptr<EarlyStopping> early_stopping_;
    std::unique_ptr<data::DataLoader> train_loader_;
    std::vector<std::pair<std::string, nn::ModulePtr>> layers_; // captured layers, forward order
    int64_t micro_batches_per_epoch_ = 0;
    int64_t steps_per_epoch_ = 0;
    bool sum_reduction_ = false;

    // Position (what a checkpoint records).
    int64_t epoch_ = 0;
    int64_t first_batch_ = 0;
    int64_t step_ = 0;
    std::optional<double> best_metric_;
    std::vector<std::filesystem::path> periodic_checkpoints_;
    std::vector<std::string> init_warnings_; // reported when run() starts
    TrainResult result_;

    EventSink* sink_ = nullptr;
    std::atomic<bool> stop_{false};
    std::atomic<bool> paused_{false};
    std::mutex pause_mutex_;
    std::condition_variable pause_cv_;
    mutable std::mutex progress_mutex_;
    Progress progress_;
};

} // namespace myelin::train
