#include <myelin/autograd.h>
#include <myelin/data/dataloader.h>
#include <myelin/data/sampler.h>
#include <myelin/dist/nccl.h>
#include <myelin/error.h>
#include <myelin/nn/layers.h>
#include <myelin/optim/optimizer.h>
#include <myelin/train/trainer.h>

#include "data_parallel.h"

#include <myelin/spec/components.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace myelin::train {

namespace {

std::vector<Tensor> state_tensors(Trainer& trainer) {
    std::vector<Tensor> out;
    for (const auto& [name, tensor] : trainer.model().state_dict())
        out.push_back(tensor);
    return out;
}

std::string joined(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& item : items)
        out += (out.empty() ? "" : ",") + item;
    return out;
}

} // namespace

DataParallel::DataParallel(std::shared_ptr<dist::Communicator> comm, int64_t batch_size,
                           double bucket_mb, int64_t check_every, bool overlap)
    : comm_(std::move(comm)), batch_size_(batch_size),
      bucket_bytes_(int64_t(std::llround(bucket_mb * 1024 * 1024))), check_every_(check_every),
      overlap_(overlap) {
    if (!(bucket_mb > 0) || !std::isfinite(bucket_mb))
        throw Error("the gradient bucket size must be a positive number of MB");
    hosts_ = comm_->allgather_string(dist::host_name());
}

std::vector<std::pair<std::string, std::string>> DataParallel::params() const {
    return {{"dist.world_size", std::to_string(comm_->size())},
            {"dist.backend", comm_->backend()},
            {"dist.hosts", joined(hosts_)},
            {"dist.global_batch", std::to_string(batch_size_ * comm_->size())}};
}

void DataParallel::on_run_start(Trainer& trainer) {
    // Every rank built the model from the same seed (and loaded the same checkpoint); the
    // broadcast makes rank 0's values everyone's whatever happened (issue 19: identical
    // parameters on every rank at all times).
    dist::broadcast_tensors(state_tensors(trainer), *comm_, 0);
    std::vector<Tensor> trained;
    for (const auto& group : trainer.optimizer().param_groups())
        for (const Tensor& p : group.params)
            trained.push_back(p);
    buckets_ = std::make_unique<dist::GradientBuckets>(trained, bucket_bytes_);
    // Overlap needs each hook call to be the step's last for its parameter: one micro-batch.
    overlap_ = overlap_ && trainer.spec().accumulation_steps == 1 && comm_->size() > 1;
    for (size_t k = 0; overlap_ && k < trained.size(); ++k)
        hooks_.push_back(trained[k].register_hook([this, k](const Tensor& incoming) {
            comm_->check_signals();
            if (armed_) buckets_->gradient_ready(k, incoming, *comm_);
            return Tensor();
        }));
    install_sync_batchnorm(trainer);
    char bytes[32];
    std::snprintf(bytes, sizeof bytes, "%.2f MB", double(buckets_->bytes()) / 1048576.0);
    trainer.report(LogMessage{
        LogLevel::Info, "data-parallel: " + std::to_string(comm_->size()) + " ranks over " +
                            comm_->backend() + " on " + joined(hosts_) + "; global batch " +
                            std::to_string(batch_size_) + " x " + std::to_string(comm_->size()) +
                            " = " + std::to_string(batch_size_ * comm_->size()) + "; gradients (" +
                            bytes + ") averaged in " + std::to_string(buckets_->bucket_count()) +
                            " bucket(s) per step" + (overlap_ ? ", overlapping backward" : "") +
                            "; validation and test sharded over the ranks"});
    if (trainer.spec().distributed.sync_batchnorm)
        trainer.report(LogMessage{LogLevel::Info,
                                  "sync_batchnorm: " + std::to_string(synced_.size()) +
                                      " BatchNorm layer(s) normalise by the statistics of all " +
                                      std::to_string(comm_->size()) + " ranks' batches"});
}

void DataParallel::install_sync_batchnorm(Trainer& trainer) {
    if (!trainer.spec().distributed.sync_batchnorm) return;
    // nn/ knows no communicator: each BatchNorm gets a function that sums its statistics over
    // the ranks (every rank runs the same layers in the same order, so the collectives match).
    std::shared_ptr<dist::Communicator> comm = comm_;
    for (const auto& [name, module] : trainer.model().named_modules())
        if (auto* bn = dynamic_cast<nn::BatchNormBase*>(module.get())) {
            bn->sync_stats = [comm](double* data, int64_t count) {
                comm->allreduce_sum(data, count, DType::Float64);
            };
            synced_.push_back(module);
        }
}

void DataParallel::before_step(Trainer&) {
    comm_->check_signals();
    step_samples_ = 0;
    buckets_->begin_step();
}

void DataParallel::after_forward(Trainer&, const ForwardPass& pass) {
    comm_->check_signals();
    step_samples_ += pass.batch.input.size(0);
    armed_ = overlap_ && buckets_->overlapped(); // the backward that follows is the step's
}

void DataParallel::after_backward(Trainer&) {
    armed_ = false;
    buckets_->finish(*comm_);
}

void DataParallel::after_optimizer_step(Trainer&, StepMetrics& metrics) {
    // The step loss over every rank's examples (a mean weighted by samples), and the global
    // throughput.
    double sums[2] = {metrics.loss * double(step_samples_), double(step_samples_)};
    comm_->allreduce_sum(sums, 2, DType::Float64);
    if (sums[1] > 0) metrics.loss = sums[0] / sums[1];
    metrics.samples_per_second *= double(comm_->size());
}

void DataParallel::agree_on_stop(Trainer& trainer) {
    // A stop asked on one rank (Ctrl-C, a signal) takes effect on every rank at the same point.
    // SIGTERM on every rank (Ctrl-C to mpirun, scancel) is a stop too; with a rank missing,
    // stop_signalled throws (a failure).
    int64_t stop = trainer.control().stop_requested() || comm_->stop_signalled() ? 1 : 0;
    comm_->allreduce_sum(&stop, 1, DType::Int64);
    if (stop > 0 && !trainer.control().stop_requested()) trainer.stop();
}

void DataParallel::after_step_reported(Trainer& trainer) {
    // The fault tests' hook (tests/dist): MYELIN_TEST_DIST_FAULT=RANK:STEP:throw|kill|perturb
    // makes that rank throw, die by SIGKILL, or change its first parameter after that step.
    if (const char* fault = std::getenv("MYELIN_TEST_DIST_FAULT")) {
        int rank = -1;
        long long step = -1;
        char how[8] = {};
        if (std::sscanf(fault, "%d:%lld:%7s", &rank, &step, how) == 3 && rank == comm_->rank() &&
            step == trainer.step()) {
            if (std::string(how) == "kill") std::raise(SIGKILL);
            if (std::string(how) == "perturb") {
                autograd::NoGradGuard no_grad;
                trainer.model().parameters().front().add_(1.0);
            } else {
                throw Error("injected failure (MYELIN_TEST_DIST_FAULT) after step " +
                            std::to_string(step));
            }
        }
    }
    agree_on_stop(trainer);
    check_parameters(trainer);
}

void DataParallel::check_parameters(Trainer& trainer) {
    if (check_every_ > 0 && trainer.step() % check_every_ == 0) {
        // Parameters, and with sync_batchnorm the buffers too (the running statistics are then
        // the same on every rank); without it BatchNorm's running statistics are each rank's
        // own (local statistics; rank 0's are the ones checkpointed).
        std::vector<std::string> names;
        std::vector<Tensor> tensors;
        for (const auto& [name, p] : trainer.model().named_parameters()) {
            names.push_back(name);
            tensors.push_back(p);
        }
        if (trainer.spec().distributed.sync_batchnorm)
            for (const auto& [name, b] : trainer.model().named_buffers()) {
                names.push_back(name);
                tensors.push_back(b);
            }
        const int64_t first = dist::first_divergent_tensor(tensors, *comm_);
        if (first >= 0)
            throw Error("--dist-check: after step " + std::to_string(trainer.step()) + " '" +
                        names[size_t(first)] + "' differs between ranks (first of " +
                        std::to_string(tensors.size()) + " tensors compared)");
    }
}

void DataParallel::on_epoch_end(Trainer& trainer, EpochEnd&) {
    agree_on_stop(trainer);
}

void DataParallel::reduce_epoch(RunningMean& loss,
                                std::optional<ClassificationMetrics>& classification) {
    double sums[2] = {loss.mean() * double(loss.total_weight()), double(loss.total_weight())};
    comm_->allreduce_sum(sums, 2, DType::Float64);
    loss.reset();
    if (sums[1] > 0) loss.add(sums[0] / sums[1], int64_t(sums[1]));
    if (classification) {
        std::vector<int64_t> counts = classification->raw_counts();
        comm_->allreduce_sum(counts.data(), int64_t(counts.size()), DType::Int64);
        classification->set_raw_counts(counts);
    }
}

int64_t DataParallel::shard_evaluation(data::DataLoaderOptions& options,
                                       const data::Dataset& dataset, bool classification) {
    evaluation_sharded_ = true;
    for (const spec::MetricKind& kind : spec::metric_kinds())
        if (kind.fits(classification)) evaluation_sharded_ = false;
    if (!evaluation_sharded_ || comm_->size() == 1) {
        evaluation_sharded_ = false;
        return std::numeric_limits<int64_t>::max();
    }
    const int64_t n = dataset.size(), world = comm_->size(), rank = comm_->rank();
    options.shuffle = false;
    options.sampler = std::make_shared<data::DistributedSampler>(
        std::make_shared<data::SequentialSampler>(n), int(world), int(rank), false);
    // Rank r's k-th example is position r + k*W of the padded order: real while < n.
    return rank < n ? (n - rank + world - 1) / world : 0;
}

void DataParallel::reduce_evaluation(RunningMean& loss,
                                     std::optional<ClassificationMetrics>& classification,
                                     std::optional<RegressionMetrics>& regression) {
    if (!evaluation_sharded_) return;
    evaluation_sharded_ = false;
    reduce_epoch(loss, classification);
    if (!regression) return;
    // Counts and error sums add; the targets' spread merges with Chan's formula around the
    // global mean.
    const RegressionMetrics::Sums mine = regression->sums();
    double first[4] = {double(mine.count), mine.abs_error_sum, mine.squared_error_sum,
                       double(mine.count) * mine.target_mean};
    comm_->allreduce_sum(first, 4, DType::Float64);
    RegressionMetrics::Sums all;
    all.count = int64_t(first[0]);
    all.abs_error_sum = first[1];
    all.squared_error_sum = first[2];
    all.target_mean = all.count > 0 ? first[3] / first[0] : 0.0;
    const double d = mine.target_mean - all.target_mean;
    double m2 = mine.count > 0 ? mine.target_m2 + double(mine.count) * d * d : 0.0;
    comm_->allreduce_sum(&m2, 1, DType::Float64);
    all.target_m2 = m2;
    regression->set_sums(all);
}

void DataParallel::on_run_end(Trainer& trainer, TrainResult& result) {
    armed_ = false;
    for (const auto& module : synced_)
        static_cast<nn::BatchNormBase&>(*module).sync_stats = nullptr;
    synced_.clear();
    for (auto& hook : hooks_)
        hook.remove();
    hooks_.clear();
    result.train_samples *= comm_->size(); // every rank trained as many (the shards are equal)
    if (!buckets_ || buckets_->timing().steps == 0) return;
    const auto& t = buckets_->timing();
    const double per_step = 1000.0 / double(t.steps);
    char text[256];
    std::snprintf(text, sizeof text,
                  "gradient averaging over %lld steps: after backward, pack %.3f ms, wait "
                  "%.3f ms, unpack %.3f ms per step; %lld of %lld bucket allreduces started "
                  "during backward (rank %d)",
                  (long long)t.steps, t.pack_seconds * per_step, t.wait_seconds * per_step,
                  t.unpack_seconds * per_step, (long long)t.buckets_started_in_backward,
                  (long long)(t.steps * int64_t(buckets_->bucket_count())), comm_->rank());
    trainer.report(LogMessage{LogLevel::Info, text});
}

} // namespace myelin::train

namespace myelin::train {

int Trainer::world_size() const {
    return data_parallel_ ? data_parallel_->comm().size() : 1;
}

std::vector<std::pair<std::string, std::string>> Trainer::distributed_params() const {
    if (!data_parallel_) return {};
    return data_parallel_->params();
}

void Trainer::setup_data_parallel(data::DataLoaderOptions& train_options) {
    if (options_.breakpoints)
        throw Error("training breakpoints are not available in a data-parallel run (each rank "
                    "would break on its own shard)");
    // GPU ranks: the gradients, parameters and buffers go over NCCL on this rank's GPU (host
    // values over the communicator it starts over). CUDA training is still refused before
    // this (check_training_backend), so this runs once it is not.
    if (!options_.device.is_cpu() && !options_.communicator->reaches(options_.device))
        options_.communicator = dist::start_nccl(options_.communicator, options_.device);
    const std::shared_ptr<dist::Communicator>& comm = options_.communicator;
    // Every rank draws the epoch's order from the same (seed, epoch) and takes its share.
    data::SamplerPtr order =
        train_options.shuffle
            ? data::SamplerPtr(std::make_shared<data::RandomSampler>(data_.train->size()))
            : data::SamplerPtr(std::make_shared<data::SequentialSampler>(data_.train->size()));
    train_options.sampler = std::make_shared<data::DistributedSampler>(
        order, comm->size(), comm->rank(), train_options.drop_last);
    train_options.shuffle = false;
    data_parallel_ =
        std::make_shared<DataParallel>(comm, project_.data.batch_size, options_.dist_bucket_mb,
                                       options_.dist_check_every, options_.dist_overlap);
    // Rank 0 resolved the resume target (a run in its store, or a file); every rank reads the
    // same checkpoint (a shared file system, or the same path on every node).
    options_.resume_from = comm->broadcast_string(options_.resume_from.string(), 0);
    int64_t fork = options_.fork ? 1 : 0; // a fork applies the project's optimizer options
    comm->broadcast(&fork, sizeof fork, 0);
    options_.fork = fork != 0;
}

} // namespace myelin::train
