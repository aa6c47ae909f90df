// Normalisation and dropout layers: BatchNorm1d / BatchNorm2d, LayerNorm, GroupNorm, Dropout,
// Dropout2d.
#include "nn/layers_common.h"

#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/nn/functional.h>
#include <myelin/nn/init.h>
#include <myelin/nn/layers.h>
#include <myelin/nn/sync_batch_norm.h>

namespace myelin::nn {

namespace F = functional;
using namespace detail;

// --- BatchNorm ---------------------------------------------------------------------------------

BatchNormBase::BatchNormBase(std::string type_name, int64_t n, double eps_,
                             std::optional<double> momentum_, bool affine_, bool track)
    : Module(std::move(type_name)), num_features(n), eps(eps_), momentum(momentum_),
      affine(affine_), track_running_stats(track) {
    require_positive(*this, n, "num_features");
    if (affine) {
        weight = register_parameter("weight", empty({n}));
        bias = register_parameter("bias", empty({n}));
    }
    if (track) {
        running_mean = register_buffer("running_mean", zeros({n}));
        running_var = register_buffer("running_var", ones({n}));
        num_batches_tracked =
            register_buffer("num_batches_tracked", zeros({}, TensorOptions(DType::Int64)));
    }
    reset_parameters();
}

void BatchNormBase::reset_running_stats() {
    if (!track_running_stats) return;
    init::zeros_(running_mean);
    init::ones_(running_var);
    autograd::NoGradGuard no_grad;
    num_batches_tracked.zero_();
}

void BatchNormBase::reset_parameters() {
    reset_running_stats();
    if (affine) {
        init::ones_(weight);
        init::zeros_(bias);
    }
}

Tensor BatchNormBase::forward(const TensorList& inputs) {
    const Tensor& x = inputs[0];
    check_input(x);
    // PyTorch's _BatchNorm.forward: the update factor, and which statistics normalise.
    double factor = momentum.value_or(0.0);
    if (is_training() && track_running_stats) {
        {
            autograd::NoGradGuard no_grad;
            num_batches_tracked.add_(1.0);
        }
        if (!momentum) factor = 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
    }
    if (is_training() && sync_stats)
        return F::sync_batch_norm(x, running_mean, running_var, weight, bias, factor, eps,
                                  sync_stats);
    const bool use_batch_stats = is_training() || !track_running_stats;
    const bool pass_stats = !is_training() || track_running_stats;
    return F::batch_norm(x, pass_stats ? running_mean : Tensor(),
                         pass_stats ? running_var : Tensor(), weight, bias, use_batch_stats, factor,
                         eps);
}

std::string BatchNormBase::extra_repr() const {
    return std::to_string(num_features) + ", eps=" + py_float(eps) +
           ", momentum=" + (momentum ? py_float(*momentum) : std::string("None")) +
           ", affine=" + py_bool(affine) + ", track_running_stats=" + py_bool(track_running_stats);
}

BatchNorm1d::BatchNorm1d(int64_t n, double eps, std::optional<double> momentum, bool affine,
                         bool track)
    : BatchNormBase("BatchNorm1d", n, eps, momentum, affine, track) {}

void BatchNorm1d::check_input(const Tensor& x) const {
    if ((x.dim() != 2 && x.dim() != 3) || x.size(1) != num_features) {
        const std::string c = std::to_string(num_features);
        bad_input(*this, "[N, " + c + "] or [N, " + c + ", L]", x);
    }
}

BatchNorm2d::BatchNorm2d(int64_t n, double eps, std::optional<double> momentum, bool affine,
                         bool track)
    : BatchNormBase("BatchNorm2d", n, eps, momentum, affine, track) {}

void BatchNorm2d::check_input(const Tensor& x) const {
    if (x.dim() != 4 || x.size(1) != num_features)
        bad_input(*this, "[N, " + std::to_string(num_features) + ", H, W]", x);
}

// --- LayerNorm / GroupNorm ---------------------------------------------------------------------

LayerNorm::LayerNorm(Dims shape, double eps_, bool affine)
    : Module("LayerNorm"), normalized_shape(shape), eps(eps_), elementwise_affine(affine) {
    if (shape.empty()) throw Error("LayerNorm: normalized_shape must not be empty");
    for (int64_t d : shape)
        require_positive(*this, d, "normalized_shape entries");
    if (affine) {
        weight = register_parameter("weight", empty(shape));
        bias = register_parameter("bias", empty(shape));
    }
    reset_parameters();
}

void LayerNorm::reset_parameters() {
    if (!elementwise_affine) return;
    init::ones_(weight);
    init::zeros_(bias);
}

Tensor LayerNorm::forward(const TensorList& inputs) {
    const Tensor& x = inputs[0];
    const int n = normalized_shape.size();
    bool ok = x.dim() >= n;
    for (int i = 0; ok && i < n; ++i)
        ok = x.size(x.dim() - n + i) == normalized_shape[i];
    if (!ok) {
        std::string s = "[...";
        for (int64_t d : normalized_shape)
            s += ", " + std::to_string(d);
        bad_input(*this, s + "]", x);
    }
    return F::layer_norm(x, normalized_shape, weight, bias, eps);
}

std::string LayerNorm::extra_repr() const {
    return dims_tuple(normalized_shape) + ", eps=" + py_float(eps) +
           ", elementwise_affine=" + py_bool(elementwise_affine);
}

GroupNorm::GroupNorm(int64_t groups, int64_t channels, double eps_, bool affine_)
    : Module("GroupNorm"), num_groups(groups), num_channels(channels), eps(eps_), affine(affine_) {
    require_positive(*this, groups, "num_groups");
    require_positive(*this, channels, "num_channels");
    if (channels % groups != 0)
        throw Error("GroupNorm: num_channels (" + std::to_string(channels) +
                    ") must be divisible by num_groups (" + std::to_string(groups) + ")");
    if (affine) {
        weight = register_parameter("weight", empty({channels}));
        bias = register_parameter("bias", empty({channels}));
    }
    reset_parameters();
}

void GroupNorm::reset_parameters() {
    if (!affine) return;
    init::ones_(weight);
    init::zeros_(bias);
}

Tensor GroupNorm::forward(const TensorList& inputs) {
    const Tensor& x = inputs[0];
    if (x.dim() < 2 || x.size(1) != num_channels)
        bad_input(*this, "[N, " + std::to_string(num_channels) + ", *]", x);
    return F::group_norm(x, num_groups, weight, bias, eps);
}

std::string GroupNorm::extra_repr() const {
    return std::to_string(num_groups) + ", " + std::to_string(num_channels) +
           ", eps=" + py_float(eps) + ", affine=" + py_bool(affine);
}

// --- Dropout -----------------------------------------------------------------------------------

namespace {
void check_probability(const Module& m, double p) {
    if (!(p >= 0.0 && p <= 1.0))
        throw Error(m.type_name() + ": dropout probability has to be between 0 and 1, but got " +
                    py_float(p));
}
} // namespace

Dropout::Dropout(double p_) : Module("Dropout"), p(p_) {
    check_probability(*this, p);
}

Tensor Dropout::forward(const TensorList& inputs) {
    return F::dropout(inputs[0], p, is_training(), generator);
}

std::string Dropout::extra_repr() const {
    return "p=" + py_float(p) + ", inplace=False";
}

Dropout2d::Dropout2d(double p_) : Module("Dropout2d"), p(p_) {
    check_probability(*this, p);
}

Tensor Dropout2d::forward(const TensorList& inputs) {
    const Tensor& x = inputs[0];
    if (x.dim() != 3 && x.dim() != 4) bad_input(*this, "[N, C, H, W] or [C, H, W]", x);
    // Unbatched [C, H, W] drops whole channels too: treat it as a batch of one.
    if (x.dim() == 3) return F::dropout2d(x.unsqueeze(0), p, is_training(), generator).squeeze(0);
    return F::dropout2d(x, p, is_training(), generator);
}

std::string Dropout2d::extra_repr() const {
    return "p=" + py_float(p) + ", inplace=False";
}

} // namespace myelin::nn
