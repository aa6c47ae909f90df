// Gradient clipping, as torch.nn.utils.clip_grad_norm_ / clip_grad_value_ (PyTorch 1.13).
#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/optim/clip_grad.h>

#include "backend/train_kernels.h"
#include "optim/norm_sums.h"
#include "tensor/tensor_impl.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace myelin::optim {
namespace {

backend::TrainKernels& table(const Tensor& g) {
    return backend::train_kernels(myelin::detail::backend_for(g), backend::Primitive::GradNorm,
                                  g.dtype());
}

// The p-norm from its accumulated Σ|x|^p (max |x| for p = inf, the count for p = 0).
double norm_from_sum(double sum, double p) {
    if (std::isinf(p) || p == 0.0 || p == 1.0) return sum;
    if (p == 2.0) return std::sqrt(sum);
    return std::pow(sum, 1.0 / p);
}

} // namespace

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
    autograd::NoGradGuard guard;
    std::vector<Tensor> grads;
    bool all_f32 = true;
    for (const auto& p : params) {
        if (!p.defined()) continue;
        Tensor g = p.grad();
        if (!g.defined()) continue;
        if (g.dtype() != DType::Float32) all_f32 = false;
        grads.push_back(std::move(g));
    }
    if (grads.empty()) return 0.0;
    // PyTorch: the norm of the per-gradient norms (each rounded to the gradients' dtype).
    auto round = [&](double v) { return all_f32 ? static_cast<double>(static_cast<float>(v)) : v; };
    const bool is_inf = std::isinf(norm_type);
    // Every gradient's sum in one read of their device.
    std::vector<detail::NormRequest> requests;
    for (const auto& g : grads)
        requests.push_back({g, norm_type});
    const std::vector<double> sums = detail::norm_sums(requests);
    double total = 0.0;
    bool nan = false;
    for (double sum : sums) {
        const double n = round(norm_from_sum(sum, norm_type));
        if (std::isnan(n)) nan = true;
        if (is_inf)
            total = std::max(total, n);
        else if (norm_type == 0.0)
            total += n != 0.0 ? 1.0 : 0.0;
        else if (norm_type == 1.0)
            total += n;
        else if (norm_type == 2.0)
            total += n * n;
        else
            total += std::pow(n, norm_type);
    }
    if (!is_inf && norm_type != 0.0 && norm_type != 1.0)
        total = norm_type == 2.0 ? std::sqrt(total) : std::pow(total, 1.0 / norm_type);
    if (nan) total = std::numeric_limits<double>::quiet_NaN();
    total = round(total);
    if (error_if_nonfinite && !std::isfinite(total))
        throw Error("clip_grad_norm_: the total norm of order " + std::to_string(norm_type) +
                    " for gradients from `parameters` is non-finite, so it cannot be clipped. To "
                    "disable this error and scale the gradients by the non-finite norm anyway, "
                    "set error_if_nonfinite=false");
    // clip_coef = max_norm / (total + 1e-6), clamped to 1 (PyTorch computes it in the norm's
    // dtype, and max_norm / t as t.reciprocal() * max_norm).
    double coef;
    if (all_f32) {
        const float denom = static_cast<float>(total) + 1e-6f;
        const float c = (1.0f / denom) * static_cast<float>(max_norm);
        coef = std::isnan(c) ? c : std::min(c, 1.0f);
    } else {
        const double c = (1.0 / (total + 1e-6)) * max_norm;
        coef = std::isnan(c) ? c : std::min(c, 1.0);
    }
    for (auto& g : grads) {
        if (g.is_contiguous() && g.dtype() == DType::Float32) {
            table(g).scale_(myelin::detail::view_of(g), coef);
            myelin::detail::bump_version(g);
        } else {
            g.mul_(coef);
        }
    }
    return total;
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
    autograd::NoGradGuard guard;
    for (const auto& p : params) {
        if (!p.defined()) continue;
        Tensor g = p.grad();
        if (g.defined()) g.clamp_(-clip_value, clip_value);
    }
}

} // namespace myelin::optim
