#pragma once
// Synchronised batch normalisation (torch.nn.SyncBatchNorm's arithmetic, issue 19): in training
// the per-channel batch statistics are summed over every process of a data-parallel run before
// normalising, and so are the backward's two per-channel reductions, so N ranks with batch B
// normalise exactly as one process with batch N x B. nn/ knows nothing of processes: the caller
// (train::DataParallel) gives a StatsReducer that sums a buffer of doubles over the ranks.
#include <myelin/tensor.h>

#include <cstdint>
#include <functional>

namespace myelin::nn {

// Sums `count` doubles at `data` element-wise over every rank, in place (collective: every rank
// calls it in the same order).
using StatsReducer = std::function<void(double* data, int64_t count)>;

namespace functional {

// batch_norm in training with batch statistics over all ranks: input [N, C, ...] (float32 or
// float64, CPU), running statistics updated with the global count (may be undefined: not
// tracked), weight/bias optional. Calls `reduce` once in forward (sum, sum of squares, count per
// channel) and once in backward (sum of dy and of dy * (x - mean)). The weight and bias
// gradients are this rank's own (the data-parallel gradient averaging sums them).
Tensor sync_batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, double momentum, double eps,
                       const StatsReducer& reduce);

} // namespace functional
} // namespace myelin::nn
