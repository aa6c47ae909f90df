#pragma once
// RecordedRun: one training run recorded in the run store, started the same way by the CLI
// (`myelin train`) and the studio (Train): the run is created in the store before anything can
// fail (so a failed setup is recorded too), resumes from a run or a checkpoint with its lineage
// (parent run, parent checkpoint), records its parameters once the Trainer is built, writes its
// events through a StoreSink beside the caller's sink, and records its test metrics and final
// status when it ends.
#include <myelin/store/run_store.h>
#include <myelin/train/trainer.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace myelin::train {

struct RecordedRunOptions {
    std::string store_path; // the run store (store::default_store_path() for the default)
    // Continue from a run id in the store (its newest checkpoint) or a checkpoint file; empty:
    // a fresh run.
    std::string resume;
    std::filesystem::path checkpoint_dir; // empty: <the run's artifact folder>/checkpoints
};

// A resume target: a run id (its newest checkpoint that still exists) or a checkpoint path.
// Sets `parent_run` for a run id. Throws Error naming what is missing.
std::filesystem::path resolve_resume(const std::string& what, store::RunStore& store,
                                     std::optional<int64_t>& parent_run);

class RecordedRun {
  public:
    // Opens the store, resolves the resume target and creates the run. Throws Error (the store
    // cannot be opened, the resume target does not exist); then no run was created.
    RecordedRun(const io::Project& project, TrainerOptions options, RecordedRunOptions run);
    ~RecordedRun();
    RecordedRun(const RecordedRun&) = delete;
    RecordedRun& operator=(const RecordedRun&) = delete;

    int64_t id() const { return id_; }
    const std::string& store_path() const { return store_path_; }
    const TrainerOptions& trainer_options() const { return options_; }

    // Builds the Trainer and records the run's parameters. On failure the run is recorded as
    // failed with the reason, and the Error is rethrown.
    Trainer& prepare();
    Trainer& trainer() { return *trainer_; }

    // Trains (prepare() first), sending events to the store and to `sink` (may be null), and
    // records the test metrics. The store's failures propagate (see fail()).
    TrainResult run(EventSink* sink);

    // Records the run as failed with `message` when the caller could not go on (e.g. the store
    // failed during run()); best effort, never throws.
    void fail(const std::string& message) noexcept;

  private:
    io::Project project_;
    TrainerOptions options_;
    std::string store_path_;
    std::optional<store::RunStore> store_;
    int64_t id_ = -1;
    std::unique_ptr<Trainer> trainer_;
};

} // namespace myelin::train
