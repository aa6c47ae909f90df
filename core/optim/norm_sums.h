#pragma once
// Σ|x|^p of many tensors at once (internal to core): each sum is computed where its tensor is,
// by the device's training table (TrainKernels::norm_accumulate), into one Float64 table on that
// device, and the table is read back once. On a GPU that is one wait for all of them, where a
// read per tensor would stall the device once per parameter. clip_grad_norm_ and the gradient
// monitor's per-layer sums use it off the host.
#include <myelin/tensor.h>

#include <vector>

namespace myelin::optim::detail {

struct NormRequest {
    Tensor x;
    double p; // 2: Σx², 1: Σ|x|, 0: non-zeros, +inf: max |x| (NaN propagated), else Σ|x|^p
};

// The sums in request order, in double. The tensors share one device (DeviceError otherwise);
// non-float32/64 ones are widened to float64 first.
std::vector<double> norm_sums(const std::vector<NormRequest>& requests);

} // namespace myelin::optim::detail
