#pragma once
// StoreSink: records a run's events in the run store — step metrics ("loss", "lr",
// "samples_per_second", "grad_norm/<layer>", ...), epoch metrics ("train_<name>", "val_<name>"),
// tensor summaries (histograms "activation/<layer>", ... and their mean, std, zero fraction and
// non-finite count; train/layer_inspection.h reads them back per layer), feature maps of the
// layers with [examples, channels, height, width] outputs and the probe examples when they are
// 4-d too, checkpoints (artifacts) and the final status. Cheap on the training thread: the store
// batches writes on its own thread.
#include <myelin/store/run_store.h>
#include <myelin/train/events.h>

namespace myelin::io {
struct Project;
}

namespace myelin::train {

class Trainer;
struct TrainResult;
struct TrainerOptions;

// The run-event kind of a layer frozen or unfrozen (its `layer`; message "frozen" or "training"):
// at step 0 for the layers frozen when the run starts, and at the step of a change made while
// paused (RunChanged::frozen).
inline constexpr const char* kFrozenEvent = "frozen";

class StoreSink final : public EventSink {
  public:
    StoreSink(store::RunStore& store, int64_t run) : store_(store), run_(run) {}
    void on_event(const Event& event) override;
    // The status the Finished event reported (Running until then).
    store::RunStatus final_status() const { return final_status_; }

  private:
    store::RunStore& store_;
    int64_t run_;
    std::string error_;
    store::RunStatus final_status_ = store::RunStatus::Running;
};

// What the CLI and the studio both record around a run, so their runs look the same in the
// store: the new run (name, project snapshot, device, and the thread count the Trainer will
// use: the options', else the project's, else the process default), the run's parameters once
// its trainer is built, and the test metrics ("test_<name>") after it finished.
store::RunInfo run_info(const io::Project& project, const TrainerOptions& options);
void record_run_params(store::RunStore& store, int64_t run, const Trainer& trainer,
                       const io::Project& project);
void record_test_metrics(store::RunStore& store, int64_t run, const TrainResult& result);

} // namespace myelin::train
