// sync_batch_norm (myelin/nn/sync_batch_norm.h): batch_norm whose batch statistics and backward
// reductions are summed over the ranks of a data-parallel run through a StatsReducer. The
// normalisation itself is the device's batch-norm kernel (the same bits as batch_norm given the
// same statistics); the per-channel sums are plain loops in double here, so the ranks exchange
// (sum, sum of squares, count) once per forward and (sum dy, sum dy * (x - mean)) once per
// backward, as torch.nn.SyncBatchNorm does.
#include "autograd/function.h"
#include "backend/nn_kernels.h"
#include "nn/functional_common.h"
#include "tensor/tensor_impl.h"

#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/nn/sync_batch_norm.h>

#include <algorithm>
#include <vector>

namespace myelin::nn::functional {

using autograd::Node;
using autograd::record;
using autograd::SavedTensor;
using myelin::detail::make_tensor;
using myelin::detail::view_of;
using namespace myelin::nn::detail;

namespace {

template <typename F> void dispatch(DType t, F&& f) {
    if (t == DType::Float32)
        f(float{});
    else
        f(double{});
}

// Per channel of x [N, C, S]: sum and sum of squares (in `out`: C sums, then C squares).
template <typename T> void channel_sums(const T* x, int64_t N, int64_t C, int64_t S, double* out) {
#pragma omp parallel for if (N * C * S > 32768)
    for (int64_t c = 0; c < C; ++c) {
        double sum = 0.0, squares = 0.0;
        for (int64_t n = 0; n < N; ++n) {
            const T* xp = x + (n * C + c) * S;
            for (int64_t s = 0; s < S; ++s) {
                const double v = xp[s];
                sum += v;
                squares += v * v;
            }
        }
        out[c] = sum;
        out[C + c] = squares;
    }
}

// Per channel: sum(dy) and sum(dy * (x - mean)) (C of each in `out`).
template <typename T>
void gradient_sums(const T* x, const T* gy, const double* mean, int64_t N, int64_t C, int64_t S,
                   double* out) {
#pragma omp parallel for if (N * C * S > 32768)
    for (int64_t c = 0; c < C; ++c) {
        double sum_g = 0.0, sum_gx = 0.0;
        for (int64_t n = 0; n < N; ++n) {
            const T* xp = x + (n * C + c) * S;
            const T* gp = gy + (n * C + c) * S;
            for (int64_t s = 0; s < S; ++s) {
                sum_g += gp[s];
                sum_gx += static_cast<double>(gp[s]) * (xp[s] - mean[c]);
            }
        }
        out[c] = sum_g;
        out[C + c] = sum_gx;
    }
}

// dx from the global sums over M examples per channel (the batch_norm kernel's formula).
template <typename T>
void input_gradient(const T* x, const T* w, const T* gy, const double* mean, const double* rstd,
                    const double* sums, double M, int64_t N, int64_t C, int64_t S, T* gx) {
#pragma omp parallel for collapse(2) if (N * C * S > 32768)
    for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) {
            const double r = rstd[c], wc = w ? static_cast<double>(w[c]) : 1.0;
            const double mg = sums[c] / M, k = sums[C + c] * r * r / M;
            const T* xp = x + (n * C + c) * S;
            const T* gp = gy + (n * C + c) * S;
            T* op = gx + (n * C + c) * S;
            for (int64_t s = 0; s < S; ++s)
                op[s] = static_cast<T>((gp[s] - mg - (xp[s] - mean[c]) * k) * r * wc);
        }
}

} // namespace

Tensor sync_batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, double momentum, double eps,
                       const StatsReducer& reduce) {
    const char* op = "sync_batch_norm";
    require_f32_f64(op, "input", x);
    if (x.dim() < 2)
        shape_error(op, "expected input [N, C, ...] (at least 2-D), got " + x.shape().str());
    if (!x.device().is_cpu())
        throw Error("sync_batch_norm: synchronised BatchNorm runs on the CPU only; the input is "
                    "on " +
                    x.device().str());
    if (!reduce) throw Error("sync_batch_norm: no statistics reducer was given");
    const int64_t N = x.size(0), C = x.size(1), S = x.numel() / std::max<int64_t>(1, N * C);
    for (const auto& [t, name] :
         {std::pair{&weight, "weight"}, std::pair{&bias, "bias"},
          std::pair{&running_mean, "running_mean"}, std::pair{&running_var, "running_var"}}) {
        if (!t->defined()) continue;
        if (t->dim() != 1 || t->size(0) != C)
            shape_error(op, std::string("expected ") + name + " of shape [" + std::to_string(C) +
                                "] (C of input " + x.shape().str() + "), got " + t->shape().str());
        myelin::detail::check_same_device(x, *t, op);
    }
    require_same_dtype(op, "weight", weight, x);
    require_same_dtype(op, "bias", bias, x);
    const Tensor xc = x.detach().contiguous();
    const Tensor wc = weight.defined() ? weight.detach().contiguous() : Tensor();
    const Tensor bc = bias.defined() ? bias.detach().contiguous() : Tensor();

    // Every rank's (sum, sum of squares) per channel and its example count, summed.
    std::vector<double> sums(size_t(2 * C + 1), 0.0);
    dispatch(x.dtype(), [&](auto z) {
        using T = decltype(z);
        channel_sums(xc.data<T>(), N, C, S, sums.data());
    });
    sums[size_t(2 * C)] = static_cast<double>(N * S);
    reduce(sums.data(), 2 * C + 1);
    const double M = sums[size_t(2 * C)];
    if (M <= 1)
        shape_error(op, "expected more than 1 value per channel over all ranks when training, "
                        "got input " +
                            x.shape().str());
    Tensor mean = make_tensor({C}, DType::Float64, x.device());
    Tensor var = make_tensor({C}, DType::Float64, x.device());
    for (int64_t c = 0; c < C; ++c) {
        const double m = sums[size_t(c)] / M;
        mean.data<double>()[c] = m;
        var.data<double>()[c] = std::max(0.0, sums[size_t(C + c)] / M - m * m);
    }
    const Tensor rstd = rsqrt(var + eps);
    if (running_mean.defined() && running_var.defined()) {
        autograd::NoGradGuard no_grad;
        // As batch_norm: the unbiased variance over the global count, rounded as written.
        const Tensor unbiased =
            (var * M) / full({1}, M - 1.0, TensorOptions(x.device()).with_dtype(DType::Float64));
        const Tensor nm = mean * momentum + running_mean.to(DType::Float64) * (1.0 - momentum);
        const Tensor nv = unbiased * momentum + running_var.to(DType::Float64) * (1.0 - momentum);
        Tensor rm = running_mean, rv = running_var;
        rm.copy_(nm);
        rv.copy_(nv);
    }
    const backend::BatchNormGeometry g{N, C, S};
    Tensor y = make_tensor(x.shape(), x.dtype(), x.device());
    backend::View vw, vb;
    nn_table(x, backend::Primitive::BatchNorm)
        .batch_norm_forward(g, view_of(xc), optional_view(wc, vw), optional_view(bc, vb),
                            view_of(mean), view_of(rstd), view_of(y));
    if (autograd::needs_grad({&x, &weight, &bias}))
        record("SyncBatchNormBackward", {&x, &weight, &bias}, y,
               [sx = SavedTensor(xc), sw = wc.defined() ? SavedTensor(wc) : SavedTensor(), mean,
                rstd, M, g, reduce](const Tensor& grad, const Node& n) {
                   const Tensor gy = grad.contiguous();
                   const Tensor xs = sx.unpack(n), ws = sw.unpack(n);
                   TensorList r(3);
                   std::vector<double> local(size_t(2 * g.C), 0.0);
                   dispatch(xs.dtype(), [&](auto z) {
                       using T = decltype(z);
                       gradient_sums(xs.data<T>(), gy.data<T>(), mean.data<double>(), g.N, g.C, g.S,
                                     local.data());
                   });
                   const double* rs = rstd.data<double>();
                   // The weight and bias gradients from this rank's examples (the gradient
                   // averaging combines them), the input's from every rank's sums.
                   if (n.needs_input_grad(1)) r[1] = make_tensor({g.C}, xs.dtype(), xs.device());
                   if (n.needs_input_grad(2)) r[2] = make_tensor({g.C}, xs.dtype(), xs.device());
                   dispatch(xs.dtype(), [&](auto z) {
                       using T = decltype(z);
                       for (int64_t c = 0; c < g.C; ++c) {
                           if (r[1].defined())
                               r[1].data<T>()[c] = static_cast<T>(local[size_t(g.C + c)] * rs[c]);
                           if (r[2].defined()) r[2].data<T>()[c] = static_cast<T>(local[size_t(c)]);
                       }
                   });
                   std::vector<double> global = local;
                   reduce(global.data(), 2 * g.C);
                   if (n.needs_input_grad(0)) {
                       r[0] = make_tensor(xs.shape(), xs.dtype(), xs.device());
                       dispatch(xs.dtype(), [&](auto z) {
                           using T = decltype(z);
                           input_gradient(xs.data<T>(), ws.defined() ? ws.data<T>() : nullptr,
                                          gy.data<T>(), mean.data<double>(), rs, global.data(), M,
                                          g.N, g.C, g.S, r[0].data<T>());
                       });
                   }
                   return r;
               });
    return y;
}

} // namespace myelin::nn::functional
