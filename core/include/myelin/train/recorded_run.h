#pragma once
// RecordedRun: one training run recorded in the run store, started the same way by the CLI
// (`myelin train`) and the studio (Train): the run is created in the store before anything can
// fail (so a failed setup is recorded too), resumes from a run or a checkpoint with its lineage
// (parent run, parent checkpoint) or forks a run (a new run from one of its checkpoints, with
// edits that are recorded), records its parameters once the Trainer is built, writes its
// events through a StoreSink beside the caller's sink, and records its test metrics and final
// status when it ends.
#include <myelin/store/run_store.h>
#include <myelin/train/trainer.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace myelin::train {

// Where a fork branches off: run `run`'s checkpoint written at optimizer step `step` (unset:
// its newest checkpoint).
struct ForkSource {
    int64_t run = 0;
    std::optional<int64_t> step;
    bool operator==(const ForkSource& other) const = default;
};

// "RUN" or "RUN@STEP" (non-negative integers). Throws Error naming the text.
ForkSource parse_fork_source(std::string_view text);
// "RUN@STEP", or "RUN" without a step.
std::string to_string(const ForkSource& source);

struct RecordedRunOptions {
    std::string store_path; // the run store (store::default_store_path() for the default)
    // Continue from a run id in the store (its newest checkpoint) or a checkpoint file; empty:
    // a fresh run.
    std::string resume;
    // Fork: a new run whose parent is fork->run, continuing from its checkpoint at fork->step
    // with this project and these options. What they change from the project the checkpoint was
    // trained with is recorded as parameters "fork.diff.<JSON path>" = "<before> -> <after>",
    // the branch point as "fork.from" = "RUN@STEP". Excludes `resume`.
    std::optional<ForkSource> fork;
    std::filesystem::path checkpoint_dir; // empty: <the run's artifact folder>/checkpoints
    // The project file being trained, recorded with the run (the studio lists a project's runs
    // by it); empty for a project that was never saved.
    std::filesystem::path project_path;
};

// A resume target: a run id (its newest checkpoint that still exists) or a checkpoint path.
// Sets `parent_run` for a run id, and for a checkpoint file a run of the store wrote. Throws Error
// naming what is missing, or when the run is still running.
std::filesystem::path resolve_resume(const std::string& what, store::RunStore& store,
                                     std::optional<int64_t>& parent_run);

// A checkpoint artifact of a run and whether its file still holds what the run wrote there:
// `problem` is empty when it does, else "deleted" or "overwritten since" (best.safetensors is
// listed at every step it was written and holds only the last).
struct CheckpointFile {
    store::Artifact artifact;
    std::string problem;
};
// The run's checkpoint artifacts, newest first (by step, then by when they were listed); each
// file is hashed once. What a fork (and the studio's fork dialog) may branch from.
std::vector<CheckpointFile> checkpoint_files(const store::RunStore& store, int64_t run);

// A fork's branch point: the checkpoint file of `source` that still exists (the newest of
// that step). Throws Error for an unknown run, a run still running, a step no checkpoint was
// written at (listing the steps there are) and checkpoint files that were deleted.
struct ForkPoint {
    int64_t run = 0;
    int64_t step = 0;
    std::filesystem::path checkpoint;
};
ForkPoint resolve_fork(const ForkSource& source, store::RunStore& store);

class RecordedRun {
  public:
    // Opens the store, resolves the resume target or the fork's branch point and creates the
    // run. Throws Error (the store cannot be opened, the resume target does not exist, a fork is
    // refused: see resolve_fork, and a checkpoint that does not fit the project's model); then
    // no run was created.
    RecordedRun(const io::Project& project, TrainerOptions options, RecordedRunOptions run);
    ~RecordedRun();
    RecordedRun(const RecordedRun&) = delete;
    RecordedRun& operator=(const RecordedRun&) = delete;

    int64_t id() const { return id_; }
    const std::string& store_path() const { return store_path_; }
    const TrainerOptions& trainer_options() const { return options_; }
    // A fork's branch point and what it changes (the parameters recorded); unset / empty
    // otherwise.
    const std::optional<ForkPoint>& fork_point() const { return fork_point_; }
    const std::vector<io::ProjectChange>& fork_changes() const { return fork_changes_; }

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
    std::optional<ForkPoint> fork_point_;
    std::vector<io::ProjectChange> fork_changes_;
    std::unique_ptr<Trainer> trainer_;
};

} // namespace myelin::train
