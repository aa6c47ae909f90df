// Losses: PyTorch 1.13's formulas. Class-index cross_entropy / nll_loss are one fused kernel
// (forward and backward); the rest are compositions of differentiable tensor ops.
#include <myelin/error.h>
#include <myelin/nn/loss.h>

#include "autograd/function.h"
#include "backend/train_kernels.h"
#include "nn/functional_common.h"
#include "tensor/tensor_impl.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace myelin::nn {

const char* reduction_name(Reduction r) {
    switch (r) {
    case Reduction::None:
        return "none";
    case Reduction::Mean:
        return "mean";
    case Reduction::Sum:
        return "sum";
    case Reduction::BatchMean:
        return "batchmean";
    }
    return "?";
}

Reduction parse_reduction(const std::string& name) {
    if (name == "none") return Reduction::None;
    if (name == "mean") return Reduction::Mean;
    if (name == "sum") return Reduction::Sum;
    if (name == "batchmean") return Reduction::BatchMean;
    throw Error("unknown reduction '" + name + "': expected none, mean, sum or batchmean");
}

namespace functional {
namespace {

using autograd::Node;
using autograd::SavedTensor;

std::string describe(const Tensor& t) {
    return std::string(dtype_name(t.dtype())) + " " + t.shape().str();
}

void require_float(const char* op, const char* what, const Tensor& t) {
    if (!t.defined()) throw Error(std::string(op) + ": " + what + " is undefined");
    if (!t.is_floating_point())
        throw DTypeError(std::string(op) + ": expected a floating point " + what + ", got " +
                         describe(t));
}

void require_plain_reduction(const char* op, Reduction r) {
    if (r == Reduction::BatchMean)
        throw Error(std::string(op) + ": reduction 'batchmean' is only valid for kl_div");
}

Tensor reduce(const Tensor& loss, Reduction r) {
    switch (r) {
    case Reduction::None:
        return loss;
    case Reduction::Sum:
        return loss.sum();
    case Reduction::Mean:
        return loss.mean();
    case Reduction::BatchMean:
        break;
    }
    throw Error("reduction 'batchmean' is only valid for kl_div");
}

void require_broadcastable(const char* op, const Tensor& a, const Tensor& b) {
    try {
        (void)broadcast_shapes(a.shape(), b.shape());
    } catch (const ShapeError&) {
        throw ShapeError(std::string(op) + ": target shape " + b.shape().str() +
                         " does not broadcast to the input shape " + a.shape().str());
    }
}

// ---------------------------------------------------------------------------------------------
// Class-index losses: input [N, C, d...] viewed as [N, C, S], target [N, d...] viewed as [N*S].

struct ClassLayout {
    int64_t n = 1, c = 1, s = 1;
    int64_t rows() const { return n * s; }
};

std::string symbolic_input(int dim) {
    if (dim == 1) return "[C]";
    std::string s = "[N, C";
    for (int d = 2; d < dim; ++d)
        s += ", d" + std::to_string(d - 1);
    return s + "]";
}
std::string symbolic_target(int dim) {
    if (dim == 1) return "[]";
    std::string s = "[N";
    for (int d = 2; d < dim; ++d)
        s += ", d" + std::to_string(d - 1);
    return s + "]";
}
Dims index_target_shape(const Tensor& input) {
    Dims shape;
    if (input.dim() == 1) return shape;
    for (int d = 0; d < input.dim(); ++d)
        if (d != 1) shape.push_back(input.size(d));
    return shape;
}

ClassLayout class_layout(const Tensor& input) {
    ClassLayout l;
    if (input.dim() == 1) {
        l.c = input.size(0);
        return l;
    }
    l.n = input.size(0);
    l.c = input.size(1);
    for (int d = 2; d < input.dim(); ++d)
        l.s *= input.size(d);
    return l;
}

// Throws the messages the brief promises; `allow_probabilities`: float targets of the input's
// shape are valid (cross_entropy).
void check_class_target(const char* op, const Tensor& input, const Tensor& target,
                        bool allow_probabilities) {
    require_float(op, "input", input);
    if (input.dim() < 1)
        throw ShapeError(std::string(op) +
                         ": expected input of shape [C], [N, C] or [N, C, d1, ...], got " +
                         describe(input));
    if (!target.defined()) throw Error(std::string(op) + ": target is undefined");
    const Dims expected = index_target_shape(input);
    const std::string what = std::string(op) + ": expected int64 class indices of shape " +
                             symbolic_target(input.dim()) + " for input " +
                             symbolic_input(input.dim()) + " = " + input.shape().str();
    if (target.dtype() == DType::Int64) {
        if (target.shape() != expected)
            throw ShapeError(what +
                             (allow_probabilities
                                  ? " (or float probabilities of shape " + input.shape().str() + ")"
                                  : std::string()) +
                             ", got " + describe(target));
        return;
    }
    if (allow_probabilities && target.is_floating_point() && target.shape() == input.shape())
        return;
    if (target.shape() == expected) throw DTypeError(what + ", got " + describe(target));
    if (allow_probabilities)
        throw ShapeError(what + " or float probabilities of shape " + input.shape().str() +
                         ", got " + describe(target));
    throw ShapeError(what + ", got " + describe(target));
}

Tensor check_weight(const char* op, const Tensor& weight, int64_t classes) {
    if (!weight.defined()) return weight;
    require_float(op, "weight", weight);
    if (weight.dim() != 1 || weight.size(0) != classes)
        throw ShapeError(std::string(op) + ": expected weight of shape [C] = [" +
                         std::to_string(classes) + "], got " + describe(weight));
    return weight;
}

void check_targets_in_range(const char* op, const int64_t* t, int64_t rows, int64_t classes,
                            int64_t ignore_index) {
    for (int64_t r = 0; r < rows; ++r)
        if (t[r] != ignore_index && (t[r] < 0 || t[r] >= classes))
            throw IndexError(std::string(op) + ": target " + std::to_string(t[r]) +
                             " is out of bounds for " + std::to_string(classes) + " classes");
}

struct ClassLossParams {
    ClassLayout l;
    bool logits = true; // cross_entropy (logits) vs nll_loss (log-probabilities)
    double smoothing = 0.0;
    int64_t ignore_index = -100;
    Reduction reduction = Reduction::Mean;

    backend::ClassLossGeometry geometry() const {
        backend::ClassLossGeometry g;
        g.n = l.n;
        g.c = l.c;
        g.s = l.s;
        g.logits = logits;
        g.smoothing = smoothing;
        g.ignore_index = ignore_index;
        g.reduction = reduction == Reduction::None ? 0 : reduction == Reduction::Sum ? 2 : 1;
        return g;
    }
};

// The fused forward and backward run on x's device through its training table
// (backend/train_kernels.h; the row math in backend/kernels/class_loss.h). The row log-sum-exps
// and the mean's denominators are Float64 tensors on that device, saved for the backward.
Tensor class_loss_fused(const char* node_name, const Tensor& input, const Tensor& xc,
                        const Tensor& tc, const Tensor& wc, const ClassLossParams& p,
                        const Dims& target_shape) {
    const int64_t R = p.l.rows();
    const TensorOptions on_device = TensorOptions(xc.dtype()).with_device(xc.device());
    const TensorOptions doubles = TensorOptions(DType::Float64).with_device(xc.device());
    const Tensor lse = empty({p.logits ? R : 0}, doubles);
    const Tensor den = zeros({2}, doubles);
    Tensor out =
        p.reduction == Reduction::None ? empty(target_shape, on_device) : empty({}, on_device);
    backend::TrainKernels& table = backend::train_kernels(
        myelin::detail::backend_for(xc), backend::Primitive::ClassLoss, xc.dtype());
    const backend::ClassLossGeometry geometry = p.geometry();
    backend::View w_view;
    if (wc.defined()) w_view = myelin::detail::view_of(wc);
    table.class_loss_forward(geometry, myelin::detail::view_of(xc), myelin::detail::view_of(tc),
                             wc.defined() ? &w_view : nullptr, myelin::detail::view_of(out),
                             myelin::detail::view_of(lse), myelin::detail::view_of(den));
    if (autograd::needs_grad({&input})) {
        autograd::record(
            node_name, {&input}, out,
            [sx = SavedTensor(xc), tc, wc, geometry, lse, den](const Tensor& g, const Node& node) {
                const Tensor xv = sx.unpack(node);
                const Tensor gc = g.to(xv.dtype()).contiguous();
                Tensor gx = empty(xv.shape(), TensorOptions(xv.dtype()).with_device(xv.device()));
                backend::View wv;
                if (wc.defined()) wv = myelin::detail::view_of(wc);
                backend::train_kernels(myelin::detail::backend_for(xv),
                                       backend::Primitive::ClassLoss, xv.dtype())
                    .class_loss_backward(geometry, myelin::detail::view_of(xv),
                                         myelin::detail::view_of(tc), wc.defined() ? &wv : nullptr,
                                         myelin::detail::view_of(lse), myelin::detail::view_of(den),
                                         myelin::detail::view_of(gc), myelin::detail::view_of(gx));
                return TensorList{gx};
            });
    }
    return out;
}

Tensor class_loss(const char* op, const char* node_name, const Tensor& input, const Tensor& target,
                  const Tensor& weight, ClassLossParams p) {
    require_plain_reduction(op, p.reduction);
    const DType dt = input.dtype();
    if (dt == DType::Float16 || dt == DType::BFloat16)
        return class_loss(op, node_name, input.to(DType::Float32), target,
                          weight.defined() ? weight.to(DType::Float32) : weight, p)
            .to(dt);
    p.l = class_layout(input);
    check_weight(op, weight, p.l.c);
    myelin::detail::check_same_device(input, target, op);
    const Tensor tc = target.contiguous();
    detail::check_int_values(tc, 0, p.l.c - 1, p.ignore_index, [&](const int64_t* t, int64_t n) {
        check_targets_in_range(op, t, n, p.l.c, p.ignore_index);
    });
    const Tensor xc = input.is_contiguous() ? input : input.contiguous();
    Tensor wc = weight.defined() ? weight.detach().to(dt).contiguous() : Tensor();
    if (wc.defined() && wc.device() != xc.device()) wc = wc.to(xc.device());
    return class_loss_fused(node_name, input, xc, tc, wc, p, target.shape());
}

// Shape of the weight broadcast over the class dim of an input of `dim` dims.
Tensor class_dim_view(const Tensor& weight, int dim) {
    if (dim == 1) return weight;
    Dims shape;
    for (int d = 0; d < dim; ++d)
        shape.push_back(d == 1 ? weight.size(0) : 1);
    return weight.view(shape);
}

} // namespace

// ---------------------------------------------------------------------------------------------

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
    require_float("mse_loss", "input", input);
    require_float("mse_loss", "target", target);
    require_plain_reduction("mse_loss", reduction);
    require_broadcastable("mse_loss", input, target);
    return reduce(square(input - target), reduction);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
    require_float("l1_loss", "input", input);
    require_float("l1_loss", "target", target);
    require_plain_reduction("l1_loss", reduction);
    require_broadcastable("l1_loss", input, target);
    return reduce(abs(input - target), reduction);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction, double beta) {
    require_float("smooth_l1_loss", "input", input);
    require_float("smooth_l1_loss", "target", target);
    require_plain_reduction("smooth_l1_loss", reduction);
    require_broadcastable("smooth_l1_loss", input, target);
    if (beta < 0.0)
        throw Error("smooth_l1_loss: beta must be non-negative, got " + std::to_string(beta));
    if (beta == 0.0) return l1_loss(input, target, reduction);
    const Tensor d = input - target;
    const Tensor ad = abs(d);
    return reduce(where(lt(ad, beta), square(d) * (0.5 / beta), ad - 0.5 * beta), reduction);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction, double delta) {
    require_float("huber_loss", "input", input);
    require_float("huber_loss", "target", target);
    require_plain_reduction("huber_loss", reduction);
    require_broadcastable("huber_loss", input, target);
    if (delta <= 0.0)
        throw Error("huber_loss: delta must be positive, got " + std::to_string(delta));
    const Tensor d = input - target;
    const Tensor ad = abs(d);
    return reduce(where(lt(ad, delta), square(d) * 0.5, (ad - 0.5 * delta) * delta), reduction);
}

Tensor cross_entropy(const Tensor& input, const Tensor& target,
                     const CrossEntropyOptions& options) {
    const char* op = "cross_entropy";
    check_class_target(op, input, target, true);
    if (options.label_smoothing < 0.0 || options.label_smoothing > 1.0)
        throw Error("cross_entropy: label_smoothing must be in [0, 1], got " +
                    std::to_string(options.label_smoothing));
    require_plain_reduction(op, options.reduction);
    const int64_t classes = input.dim() == 1 ? input.size(0) : input.size(1);
    check_weight(op, options.weight, classes);
    if (target.dtype() == DType::Int64) {
        ClassLossParams p;
        p.logits = true;
        p.smoothing = options.label_smoothing;
        p.ignore_index = options.ignore_index;
        p.reduction = options.reduction;
        return class_loss(op, "CrossEntropyLossBackward0", input, target, options.weight, p);
    }
    // Probability targets (PyTorch's cross_entropy_loss_prob_target).
    const int class_dim = input.dim() == 1 ? 0 : 1;
    const Tensor logp = log_softmax(input, class_dim);
    Tensor t = target;
    if (options.label_smoothing > 0.0)
        t = t * (1.0 - options.label_smoothing) +
            options.label_smoothing / static_cast<double>(classes);
    Tensor prod = logp * t;
    if (options.weight.defined()) prod = prod * class_dim_view(options.weight, input.dim());
    switch (options.reduction) {
    case Reduction::None:
        return -sum(prod, {class_dim});
    case Reduction::Sum:
        return -prod.sum();
    default: {
        const double rows = static_cast<double>(input.numel() / classes);
        return -prod.sum() / rows;
    }
    }
}

Tensor nll_loss(const Tensor& input, const Tensor& target, const NllLossOptions& options) {
    const char* op = "nll_loss";
    check_class_target(op, input, target, false);
    ClassLossParams p;
    p.logits = false;
    p.ignore_index = options.ignore_index;
    p.reduction = options.reduction;
    return class_loss(op, "NllLossBackward0", input, target, options.weight, p);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            Reduction reduction) {
    const char* op = "binary_cross_entropy";
    require_float(op, "input", input);
    require_float(op, "target", target);
    require_plain_reduction(op, reduction);
    if (target.shape() != input.shape())
        throw ShapeError("binary_cross_entropy: expected a target of the input's shape " +
                         input.shape().str() + ", got " + describe(target));
    if (weight.defined()) {
        require_float(op, "weight", weight);
        require_broadcastable(op, input, weight);
    }
    const Tensor w = weight.defined() ? weight.detach() : Tensor();
    Tensor out;
    {
        autograd::NoGradGuard guard;
        const Tensor bad = logical_not(ge(input, 0.0) * le(input, 1.0));
        if (bad.numel() && sum(bad.to(DType::Int64)).item() > 0)
            throw Error("binary_cross_entropy: all elements of input should be between 0 and 1");
        const Tensor log_x = clamp(log(input), -100.0, std::nullopt);
        const Tensor log_1mx = clamp(log(rsub(input, 1.0)), -100.0, std::nullopt);
        Tensor loss = -(target * log_x + rsub(target, 1.0) * log_1mx);
        if (w.defined()) loss = loss * w;
        out = reduce(loss, reduction);
        if (out.is_same(loss)) out = loss.detach();
    }
    if (autograd::needs_grad({&input, &target})) {
        // PyTorch's formulas: d/dx = w (x - y) / max(x (1 - x), 1e-12) (finite at 0 and 1),
        // d/dy = w (log(1 - x) - log(x)) with both logs clamped at -100.
        const int64_t numel = input.numel();
        autograd::record("BinaryCrossEntropyBackward0", {&input, &target}, out,
                         [sx = SavedTensor(input), sy = SavedTensor(target), w, reduction,
                          numel](const Tensor& g, const Node& node) {
                             const Tensor x = sx.unpack(node), y = sy.unpack(node);
                             Tensor ge_ =
                                 reduction == Reduction::Mean ? g / static_cast<double>(numel) : g;
                             ge_ = ge_.expand(x.shape());
                             if (w.defined()) ge_ = ge_ * w;
                             TensorList grads(2);
                             if (node.needs_input_grad(0))
                                 grads[0] =
                                     ge_ * (x - y) / clamp(rsub(x, 1.0) * x, 1e-12, std::nullopt);
                             if (node.needs_input_grad(1))
                                 grads[1] = ge_ * (clamp(log(rsub(x, 1.0)), -100.0, std::nullopt) -
                                                   clamp(log(x), -100.0, std::nullopt));
                             return grads;
                         });
    }
    return out;
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BCEWithLogitsOptions& options) {
    const char* op = "binary_cross_entropy_with_logits";
    require_float(op, "input", input);
    require_float(op, "target", target);
    require_plain_reduction(op, options.reduction);
    if (target.shape() != input.shape())
        throw ShapeError(
            "binary_cross_entropy_with_logits: expected a target of the input's shape " +
            input.shape().str() + ", got " + describe(target));
    if (options.weight.defined()) {
        require_float(op, "weight", options.weight);
        require_broadcastable(op, input, options.weight);
    }
    // PyTorch 1.13: max_val = (-x).clamp_min(0);
    // loss = (1 - y) x + log_weight (log(exp(-max_val) + exp(-x - max_val)) + max_val)
    const Tensor max_val = relu(-input);
    const Tensor softplus_neg = log(exp(-max_val) + exp(-input - max_val)) + max_val;
    Tensor loss;
    if (options.pos_weight.defined()) {
        require_float(op, "pos_weight", options.pos_weight);
        require_broadcastable(op, input, options.pos_weight);
        const Tensor log_weight = (options.pos_weight - 1.0) * target + 1.0;
        loss = rsub(target, 1.0) * input + log_weight * softplus_neg;
    } else {
        loss = rsub(target, 1.0) * input + softplus_neg;
    }
    if (options.weight.defined()) loss = loss * options.weight;
    return reduce(loss, options.reduction);
}

Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction, bool log_target) {
    const char* op = "kl_div";
    require_float(op, "input", input);
    require_float(op, "target", target);
    require_broadcastable(op, input, target);
    Tensor loss;
    if (log_target) {
        loss = exp(target) * (target - input);
    } else {
        // xlogy(t, t) - t * x, with 0 log 0 = 0 (and no NaN gradient at t = 0).
        const Tensor positive = gt(target, 0.0);
        const Tensor safe = where(positive, target, ones_like(target));
        loss = target * log(safe) - target * input;
    }
    if (reduction == Reduction::BatchMean) {
        if (input.dim() == 0) return loss.sum();
        return loss.sum() / static_cast<double>(input.size(0));
    }
    return reduce(loss, reduction);
}

Tensor cosine_embedding_loss(const Tensor& x1, const Tensor& x2, const Tensor& target,
                             double margin, Reduction reduction) {
    const char* op = "cosine_embedding_loss";
    require_float(op, "x1", x1);
    require_float(op, "x2", x2);
    require_plain_reduction(op, reduction);
    if (x1.shape() != x2.shape() || (x1.dim() != 1 && x1.dim() != 2))
        throw ShapeError("cosine_embedding_loss: expected x1 and x2 of the same shape [N, D] or "
                         "[D], got " +
                         x1.shape().str() + " and " + x2.shape().str());
    const Dims expected = x1.dim() == 2 ? Dims{x1.size(0)} : Dims{};
    if (!target.defined() || target.shape() != expected)
        throw ShapeError("cosine_embedding_loss: expected a target of shape " + expected.str() +
                         " (1 or -1 per pair), got " +
                         (target.defined() ? describe(target) : std::string("undefined")));
    const int d = x1.dim() == 1 ? 0 : 1;
    constexpr double kEps = 1e-12;
    const Tensor prod_sum = sum(x1 * x2, {d});
    const Tensor mag1 = sum(x1 * x1, {d}) + kEps;
    const Tensor mag2 = sum(x2 * x2, {d}) + kEps;
    const Tensor cos = prod_sum / sqrt(mag1 * mag2);
    const Tensor zero = zeros_like(cos);
    const Tensor pos = rsub(cos, 1.0);
    const Tensor neg = clamp(cos - margin, 0.0, std::nullopt);
    const Tensor out = where(eq(target, 1.0), pos, zero) + where(eq(target, -1.0), neg, zero);
    return reduce(out, reduction);
}

Tensor margin_ranking_loss(const Tensor& x1, const Tensor& x2, const Tensor& target, double margin,
                           Reduction reduction) {
    const char* op = "margin_ranking_loss";
    require_float(op, "x1", x1);
    require_float(op, "x2", x2);
    require_plain_reduction(op, reduction);
    if (!target.defined()) throw Error("margin_ranking_loss: target is undefined");
    if (x1.dim() != x2.dim() || x1.dim() != target.dim())
        throw ShapeError("margin_ranking_loss: expected x1, x2 and target of the same number of "
                         "dimensions, got " +
                         x1.shape().str() + ", " + x2.shape().str() + " and " +
                         target.shape().str());
    return reduce(clamp(-target * (x1 - x2) + margin, 0.0, std::nullopt), reduction);
}

Tensor class_scores(const Tensor& logits, const Tensor& target) {
    const char* op = "class_scores";
    require_float(op, "logits", logits);
    if (logits.dim() != 2)
        throw ShapeError(std::string(op) + ": expected logits [N, C], got " + logits.shape().str());
    if (target.dtype() != DType::Int64)
        throw DTypeError(std::string(op) + ": expected int64 targets, got " +
                         dtype_name(target.dtype()));
    const int64_t rows = logits.size(0), classes = logits.size(1);
    if (target.dim() != 1 || target.size(0) != rows)
        throw ShapeError(std::string(op) + ": expected target [" + std::to_string(rows) +
                         "], got " + target.shape().str());
    myelin::detail::check_same_device(logits, target, op);
    const Tensor x =
        (logits.dtype() == DType::Float64 ? logits.detach() : logits.detach().to(DType::Float32))
            .contiguous();
    const Tensor t = target.detach().contiguous();
    detail::check_int_values(t, 0, classes - 1, std::nullopt, [&](const int64_t* v, int64_t n) {
        check_targets_in_range(op, v, n, classes,
                               /*ignore_index=*/0); // 0 is a class: checked or not, fine
    });
    Tensor out = empty({rows, 2}, TensorOptions(DType::Int64).with_device(x.device()));
    if (rows > 0)
        backend::train_kernels(myelin::detail::backend_for(x), backend::Primitive::ClassScores,
                               x.dtype())
            .class_scores(myelin::detail::view_of(x), myelin::detail::view_of(t),
                          myelin::detail::view_of(out));
    return out;
}

} // namespace functional

// --- classes ---------------------------------------------------------------------------------
Tensor MSELoss::forward(const Tensor& input, const Tensor& target) const {
    return functional::mse_loss(input, target, reduction_);
}
Tensor L1Loss::forward(const Tensor& input, const Tensor& target) const {
    return functional::l1_loss(input, target, reduction_);
}
Tensor SmoothL1Loss::forward(const Tensor& input, const Tensor& target) const {
    return functional::smooth_l1_loss(input, target, reduction_, beta_);
}
Tensor HuberLoss::forward(const Tensor& input, const Tensor& target) const {
    return functional::huber_loss(input, target, reduction_, delta_);
}

} // namespace myelin::nn
