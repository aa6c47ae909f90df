#pragma once
// Data-parallel training over a dist::Communicator (issue 19), on the Trainer's hook points:
// parameters and buffers broadcast from rank 0 when the run starts (after a resume too), the
// step's gradients averaged in buckets at after_backward (before clipping, so clipping sees the
// global norm; once per optimizer step, so accumulation communicates once), the step loss and
// the epoch's training metrics summed over ranks (every rank reports the global numbers; only
// rank 0 has a sink), stop requests agreed on at the end of each step and epoch (so every rank
// stops at the same step), and the optional parameter check. Validation and test run in full
// on every rank: identical results, so early stopping and plateau schedules decide the same
// everywhere with no communication.
#include <myelin/data/dataloader.h>
#include <myelin/dist/communicator.h>
#include <myelin/dist/tensor_collectives.h>
#include <myelin/train/callbacks.h>
#include <myelin/train/metrics.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace myelin::train {

class DataParallel final : public TrainerCallback {
  public:
    // Collective (every rank constructs one in the same order): gathers the ranks' host names.
    // overlap: start each bucket's allreduce from the parameters' gradient hooks while backward
    // runs (with accumulation_steps 1; else, and when off, after backward).
    DataParallel(std::shared_ptr<dist::Communicator> comm, int64_t batch_size, double bucket_mb,
                 int64_t check_every, bool overlap);

    dist::Communicator& comm() { return *comm_; }
    // What the run records: dist.world_size, dist.backend, dist.hosts, dist.global_batch.
    std::vector<std::pair<std::string, std::string>> params() const;
    // Sums the epoch's loss and classification counts over the ranks (collective).
    void reduce_epoch(RunningMean& loss, std::optional<ClassificationMetrics>& classification);
    // Validation and test: each rank evaluates its shard (positions r, r+W, ... of the dataset
    // in order; the DistributedSampler pads the last round by wrapping, and the padding is not
    // counted): sets options.sampler and returns how many of this rank's examples are real.
    // Where a registered metric kind fits the task (its value cannot be combined across ranks)
    // every rank evaluates everything and nothing is reduced. Then reduce_evaluation combines
    // the ranks' loss, classification counts and regression sums (collective).
    int64_t shard_evaluation(data::DataLoaderOptions& options, const data::Dataset& dataset,
                             bool classification);
    void reduce_evaluation(RunningMean& loss, std::optional<ClassificationMetrics>& classification,
                           std::optional<RegressionMetrics>& regression);

    void on_run_start(Trainer& trainer) override;
    void before_step(Trainer&) override;
    void after_forward(Trainer&, const ForwardPass& pass) override;
    void after_backward(Trainer& trainer) override;
    void after_optimizer_step(Trainer& trainer, StepMetrics& metrics) override;
    void after_step_reported(Trainer& trainer) override;
    void on_epoch_end(Trainer& trainer, EpochEnd& end) override;
    void on_run_end(Trainer& trainer, TrainResult& result) override;

  private:
    void agree_on_stop(Trainer& trainer);
    void check_parameters(Trainer& trainer);       // --dist-check, every check_every_ steps
    void install_sync_batchnorm(Trainer& trainer); // training.distributed.sync_batchnorm

    std::shared_ptr<dist::Communicator> comm_;
    int64_t batch_size_;
    int64_t bucket_bytes_;
    int64_t check_every_;
    std::vector<std::string> hosts_;
    std::unique_ptr<dist::GradientBuckets> buckets_;
    int64_t step_samples_ = 0;
    bool overlap_ = false;
    bool armed_ = false;              // between the step's last forward and the end of its backward
    bool evaluation_sharded_ = false; // the evaluation under way
    std::vector<HookHandle> hooks_;
    std::vector<std::shared_ptr<nn::Module>> synced_; // BatchNorm layers given sync_stats
};

} // namespace myelin::train
