// Normalisation: batch_norm (per channel over N and the spatial dims), layer_norm (per row over
// the trailing normalized_shape) and group_norm (per sample and channel group). Here: the checks,
// the running statistics and the autograd records; the kernels (fused loops with statistics in
// double on the CPU) are the NN-kernel table of the input's device (backend/nn_kernels.h). The
// statistics are Float64 tensors on the input's device.
#include "autograd/function.h"
#include "backend/nn_kernels.h"
#include "nn/functional_common.h"
#include "tensor/tensor_impl.h"

#include <myelin/nn/functional.h>

#include <algorithm>

namespace myelin::nn::functional {

using autograd::Node;
using autograd::record;
using autograd::SavedTensor;
using myelin::detail::make_tensor;
using myelin::detail::view_of;
using namespace myelin::nn::detail;

namespace {

using backend::Primitive;

Tensor stats_tensor(int64_t n, const Tensor& x) {
    return make_tensor({n}, DType::Float64, x.device());
}

// 1 / sqrt(var + eps), element by element in double.
Tensor inverse_std(const Tensor& var, double eps) {
    return rsqrt(var + eps);
}

} // namespace

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
    const char* op = "batch_norm";
    require_f32_f64(op, "input", x);
    if (x.dim() < 2)
        shape_error(op, "expected input [N, C, ...] (at least 2-D), got " + x.shape().str());
    const int64_t N = x.size(0), C = x.size(1), S = x.numel() / std::max<int64_t>(1, N * C);
    for (const auto& [t, name] :
         {std::pair{&weight, "weight"}, std::pair{&bias, "bias"},
          std::pair{&running_mean, "running_mean"}, std::pair{&running_var, "running_var"}}) {
        if (!t->defined()) continue;
        if (t->dim() != 1 || t->size(0) != C)
            shape_error(op, std::string("expected ") + name + " of shape [" + std::to_string(C) +
                                "] (C of input " + x.shape().str() + "), got " + t->shape().str());
        require_floating(op, name, *t);
        myelin::detail::check_same_device(x, *t, op);
    }
    require_same_dtype(op, "weight", weight, x);
    require_same_dtype(op, "bias", bias, x);
    if (running_mean.defined() != running_var.defined())
        throw Error("batch_norm: running_mean and running_var must both be given or both omitted");
    const bool use_batch_stats = training || !running_mean.defined();
    if (use_batch_stats && N * S <= 1)
        shape_error(op, "expected more than 1 value per channel when training, got input " +
                            x.shape().str());
    backend::NnKernels& k = nn_table(x, Primitive::BatchNorm);
    const backend::BatchNormGeometry g{N, C, S};
    const Tensor xc = x.detach().contiguous();
    const Tensor wc = weight.defined() ? weight.detach().contiguous() : Tensor();
    const Tensor bc = bias.defined() ? bias.detach().contiguous() : Tensor();
    Tensor mean, rstd;
    if (use_batch_stats) {
        mean = stats_tensor(C, x);
        const Tensor var = stats_tensor(C, x);
        k.batch_norm_stats(g, view_of(xc), view_of(mean), view_of(var));
        rstd = inverse_std(var, eps);
        if (training && running_mean.defined()) {
            autograd::NoGradGuard no_grad;
            const double M = static_cast<double>(N * S);
            // var * M / (M - 1), rounded as written (a scalar divisor would be a reciprocal).
            const Tensor unbiased =
                (var * M) /
                full({1}, M - 1.0, TensorOptions(x.device()).with_dtype(DType::Float64));
            const Tensor nm = mean * momentum + running_mean.to(DType::Float64) * (1.0 - momentum);
            const Tensor nv =
                unbiased * momentum + running_var.to(DType::Float64) * (1.0 - momentum);
            Tensor rm = running_mean, rv = running_var;
            rm.copy_(nm);
            rv.copy_(nv);
        }
    } else {
        // Copies: the backward reads these after later steps may have updated the buffers.
        mean = myelin::detail::raw_convert(running_mean.detach(), DType::Float64);
        rstd = inverse_std(running_var.detach().to(DType::Float64), eps);
    }
    Tensor y = make_tensor(x.shape(), x.dtype(), x.device());
    backend::View vw, vb;
    k.batch_norm_forward(g, view_of(xc), optional_view(wc, vw), optional_view(bc, vb),
                         view_of(mean), view_of(rstd), view_of(y));
    if (autograd::needs_grad({&x, &weight, &bias}))
        record("NativeBatchNormBackward0", {&x, &weight, &bias}, y,
               [sx = SavedTensor(xc), sw = wc.defined() ? SavedTensor(wc) : SavedTensor(), mean,
                rstd, use_batch_stats, g](const Tensor& grad, const Node& n) {
                   const Tensor gy = grad.contiguous();
                   const Tensor xs = sx.unpack(n), ws = sw.unpack(n);
                   TensorList r(3);
                   if (n.needs_input_grad(0))
                       r[0] = make_tensor(xs.shape(), xs.dtype(), xs.device());
                   if (n.needs_input_grad(1)) r[1] = make_tensor({g.C}, xs.dtype(), xs.device());
                   if (n.needs_input_grad(2)) r[2] = make_tensor({g.C}, xs.dtype(), xs.device());
                   backend::View vw, vgx, vgw, vgb;
                   nn_table(xs, Primitive::BatchNorm)
                       .batch_norm_backward(g, view_of(xs), optional_view(ws, vw), view_of(gy),
                                            view_of(mean), view_of(rstd), use_batch_stats,
                                            optional_view(r[0], vgx), optional_view(r[1], vgw),
                                            optional_view(r[2], vgb));
                   return r;
               });
    return y;
}

namespace {

// Shared by layer_norm and group_norm: R rows of D elements, affine parameters indexed as
// RowNormGeometry says; the weight/bias gradients reduce g * xhat / g over all (r, j) per index.
Tensor row_norm(const char* node, Primitive p, const Tensor& x, const Tensor& weight,
                const Tensor& bias, const backend::RowNormGeometry& g, double eps) {
    backend::NnKernels& k = nn_table(x, p);
    const Tensor xc = x.detach().contiguous();
    const Tensor wc = weight.defined() ? weight.detach().contiguous() : Tensor();
    const Tensor bc = bias.defined() ? bias.detach().contiguous() : Tensor();
    const Tensor mean = stats_tensor(g.R, x), rstd = stats_tensor(g.R, x);
    Tensor y = make_tensor(x.shape(), x.dtype(), x.device());
    backend::View vw, vb;
    k.row_norm_forward(g, view_of(xc), optional_view(wc, vw), optional_view(bc, vb), eps,
                       view_of(y), view_of(mean), view_of(rstd));
    if (autograd::needs_grad({&x, &weight, &bias}))
        record(
            node, {&x, &weight, &bias}, y,
            [sx = SavedTensor(xc), sw = wc.defined() ? SavedTensor(wc) : SavedTensor(), mean, rstd,
             g, p, wshape = weight.defined() ? weight.shape() : Dims(),
             bshape = bias.defined() ? bias.shape() : Dims()](const Tensor& grad, const Node& n) {
                const Tensor gy = grad.contiguous();
                const Tensor xs = sx.unpack(n), ws = sw.unpack(n);
                backend::NnKernels& k = nn_table(xs, p);
                TensorList r(3);
                if (n.needs_input_grad(0)) {
                    r[0] = make_tensor(xs.shape(), xs.dtype(), xs.device());
                    backend::View vw;
                    k.row_norm_backward_input(g, view_of(xs), optional_view(ws, vw), view_of(gy),
                                              view_of(mean), view_of(rstd), view_of(r[0]));
                }
                if (n.needs_input_grad(1) || n.needs_input_grad(2)) {
                    const int64_t P = n.needs_input_grad(1) ? wshape.numel() : bshape.numel();
                    const Tensor gw = stats_tensor(P, xs), gb = stats_tensor(P, xs);
                    k.row_norm_backward_affine(g, view_of(xs), view_of(gy), view_of(mean),
                                               view_of(rstd), view_of(gw), view_of(gb));
                    if (n.needs_input_grad(1)) r[1] = gw.view(wshape).to(xs.dtype());
                    if (n.needs_input_grad(2)) r[2] = gb.view(bshape).to(xs.dtype());
                }
                return r;
            });
    return y;
}

} // namespace

Tensor layer_norm(const Tensor& x, const Dims& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
    const char* op = "layer_norm";
    require_f32_f64(op, "input", x);
    const int k = normalized_shape.size();
    bool ok = k >= 1 && k <= x.dim();
    for (int i = 0; ok && i < k; ++i)
        ok = x.size(x.dim() - k + i) == normalized_shape[i];
    if (!ok)
        shape_error(op, "expected input [*, " +
                            normalized_shape.str().substr(1, normalized_shape.str().size() - 2) +
                            "] (normalized_shape " + normalized_shape.str() + "), got " +
                            x.shape().str());
    for (const auto& [t, name] : {std::pair{&weight, "weight"}, std::pair{&bias, "bias"}}) {
        if (t->defined() && !(t->shape() == normalized_shape))
            shape_error(op, std::string("expected ") + name + " of shape " +
                                normalized_shape.str() + " (normalized_shape), got " +
                                t->shape().str());
        require_same_dtype(op, name, *t, x);
    }
    const int64_t D = normalized_shape.numel();
    const int64_t R = D ? x.numel() / D : 0;
    return row_norm("NativeLayerNormBackward0", Primitive::LayerNorm, x, weight, bias, {R, D}, eps);
}

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
    const char* op = "group_norm";
    require_f32_f64(op, "input", x);
    if (x.dim() < 2)
        shape_error(op, "expected input [N, C, ...] (at least 2-D), got " + x.shape().str());
    const int64_t N = x.size(0), C = x.size(1);
    if (num_groups < 1 || C % num_groups != 0)
        shape_error(op, "expected input [N, C, ...] with C divisible by num_groups = " +
                            std::to_string(num_groups) + ", got " + x.shape().str());
    for (const auto& [t, name] : {std::pair{&weight, "weight"}, std::pair{&bias, "bias"}}) {
        require_vector(op, name, *t, C);
        require_same_dtype(op, name, *t, x);
    }
    const int64_t S = x.numel() / std::max<int64_t>(1, N * C);
    const int64_t G = num_groups, Cg = C / G;
    return row_norm("NativeGroupNormBackward0", Primitive::GroupNorm, x, weight, bias,
                    {N * G, Cg * S, G, Cg, S}, eps);
}

} // namespace myelin::nn::functional
