#pragma once
// Gradient clipping (torch.nn.utils.clip_grad_norm_ / clip_grad_value_). Parameters whose .grad
// is undefined are skipped.
#include <myelin/tensor.h>

#include <vector>

namespace myelin::optim {

// Scales all gradients by min(1, max_norm / (total_norm + 1e-6)), where total_norm is the
// norm_type-norm of all gradients viewed as one vector (norm_type = inf: the largest |g|).
// Returns total_norm (before clipping). With error_if_nonfinite a NaN/Inf total norm throws
// myelin::Error instead of scaling. Computed in float32 like PyTorch for float32 gradients.
double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// Clamps every gradient element into [-clip_value, clip_value].
void clip_grad_value_(const std::vector<Tensor>& params, double clip_value);

} // namespace myelin::optim
