// Normalisation: batch_norm (per channel over N and the spatial dims), layer_norm (per row over
// the trailing normalized_shape) and group_norm (per sample and channel group). Forward and
// backward are fused loops that keep statistics in double, so float32 agrees with PyTorch to
// rounding and float64 is exact enough for gradcheck.
#include "autograd/function.h"
#include "nn/functional_common.h"
#include "tensor/tensor_impl.h"

#include <myelin/nn/functional.h>

#include <cmath>
#include <memory>
#include <vector>

namespace myelin::nn::functional {

using autograd::Node;
using autograd::record;
using autograd::SavedTensor;
using myelin::detail::make_tensor;
using namespace myelin::nn::detail;

namespace {

template <typename F> void dispatch(DType t, F&& f) {
    if (t == DType::Float32)
        f(float{});
    else
        f(double{});
}

using Stats = std::shared_ptr<std::vector<double>>; // mean then rstd, per group

// --- batch norm: x viewed as [N, C, S] ------------------------------------------------------

template <typename T>
void bn_forward(const T* x, const T* w, const T* b, T* y, const double* mean, const double* rstd,
                int64_t N, int64_t C, int64_t S) {
#pragma omp parallel for collapse(2) if (N * C * S > 32768)
    for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) {
            const double scale = rstd[c] * (w ? static_cast<double>(w[c]) : 1.0);
            const double shift = (b ? static_cast<double>(b[c]) : 0.0) - mean[c] * scale;
            const T* xp = x + (n * C + c) * S;
            T* yp = y + (n * C + c) * S;
            const T sc = static_cast<T>(scale), sh = static_cast<T>(shift);
            for (int64_t s = 0; s < S; ++s)
                yp[s] = xp[s] * sc + sh;
        }
}

template <typename T>
void bn_stats(const T* x, double* mean, double* var, int64_t N, int64_t C, int64_t S) {
#pragma omp parallel for if (N * C * S > 32768)
    for (int64_t c = 0; c < C; ++c) {
        double sum = 0.0;
        for (int64_t n = 0; n < N; ++n) {
            const T* xp = x + (n * C + c) * S;
            for (int64_t s = 0; s < S; ++s)
                sum += xp[s];
        }
        const double m = sum / static_cast<double>(N * S);
        double sq = 0.0;
        for (int64_t n = 0; n < N; ++n) {
            const T* xp = x + (n * C + c) * S;
            for (int64_t s = 0; s < S; ++s) {
                const double d = xp[s] - m;
                sq += d * d;
            }
        }
        mean[c] = m;
        var[c] = sq / static_cast<double>(N * S);
    }
}

// Gradients of batch norm. `training`: mean/rstd are batch statistics (they depend on x).
template <typename T>
void bn_backward(const T* x, const T* w, const T* gy, const double* mean, const double* rstd,
                 bool training, int64_t N, int64_t C, int64_t S, T* gx, T* gw, T* gb) {
#pragma omp parallel for if (N * C * S > 32768)
    for (int64_t c = 0; c < C; ++c) {
        double sum_g = 0.0, sum_gx = 0.0; // sum(g), sum(g * (x - mean))
        for (int64_t n = 0; n < N; ++n) {
            const T* xp = x + (n * C + c) * S;
            const T* gp = gy + (n * C + c) * S;
            for (int64_t s = 0; s < S; ++s) {
                sum_g += gp[s];
                sum_gx += static_cast<double>(gp[s]) * (xp[s] - mean[c]);
            }
        }
        const double r = rstd[c];
        if (gw) gw[c] = static_cast<T>(sum_gx * r);
        if (gb) gb[c] = static_cast<T>(sum_g);
        if (!gx) continue;
        const double wc = w ? static_cast<double>(w[c]) : 1.0;
        const double M = static_cast<double>(N * S);
        for (int64_t n = 0; n < N; ++n) {
            const T* xp = x + (n * C + c) * S;
            const T* gp = gy + (n * C + c) * S;
            T* op = gx + (n * C + c) * S;
            if (training) {
                const double mg = sum_g / M, k = sum_gx * r * r / M;
                for (int64_t s = 0; s < S; ++s)
                    op[s] = static_cast<T>((gp[s] - mg - (xp[s] - mean[c]) * k) * r * wc);
            } else {
                for (int64_t s = 0; s < S; ++s)
                    op[s] = static_cast<T>(gp[s] * r * wc);
            }
        }
    }
}

// --- row norms (layer_norm, group_norm): x viewed as [R, D]; the affine parameter of element
// j of row r is at affine_index(r, j). ----------------------------------------------------------

template <typename T, typename A>
void row_forward(const T* x, const T* w, const T* b, T* y, double* mean, double* rstd, int64_t R,
                 int64_t D, double eps, A affine_index) {
#pragma omp parallel for if (R * D > 32768)
    for (int64_t r = 0; r < R; ++r) {
        const T* xp = x + r * D;
        T* yp = y + r * D;
        // The row sums vectorise (simd reductions: partial sums per lane, in double).
        double sum = 0.0;
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < D; ++j)
            sum += xp[j];
        const double m = sum / static_cast<double>(D);
        double sq = 0.0;
#pragma omp simd reduction(+ : sq)
        for (int64_t j = 0; j < D; ++j) {
            const double d = xp[j] - m;
            sq += d * d;
        }
        const double rs = 1.0 / std::sqrt(sq / static_cast<double>(D) + eps);
        mean[r] = m;
        rstd[r] = rs;
        for (int64_t j = 0; j < D; ++j) {
            double v = (xp[j] - m) * rs;
            if (w || b) {
                const int64_t a = affine_index(r, j);
                if (w) v *= static_cast<double>(w[a]);
                if (b) v += static_cast<double>(b[a]);
            }
            yp[j] = static_cast<T>(v);
        }
    }
}

template <typename T, typename A>
void row_backward_input(const T* x, const T* w, const T* gy, const double* mean, const double* rstd,
                        int64_t R, int64_t D, A affine_index, T* gx) {
#pragma omp parallel for if (R * D > 32768)
    for (int64_t r = 0; r < R; ++r) {
        const T* xp = x + r * D;
        const T* gp = gy + r * D;
        T* op = gx + r * D;
        const double m = mean[r], rs = rstd[r];
        double sum_h = 0.0, sum_hx = 0.0; // h = g * w
#pragma omp simd reduction(+ : sum_h, sum_hx)
        for (int64_t j = 0; j < D; ++j) {
            const double h = w ? gp[j] * static_cast<double>(w[affine_index(r, j)]) : gp[j];
            sum_h += h;
            sum_hx += h * (xp[j] - m) * rs;
        }
        const double mh = sum_h / static_cast<double>(D), mhx = sum_hx / static_cast<double>(D);
        for (int64_t j = 0; j < D; ++j) {
            const double h = w ? gp[j] * static_cast<double>(w[affine_index(r, j)]) : gp[j];
            op[j] = static_cast<T>((h - mh - (xp[j] - m) * rs * mhx) * rs);
        }
    }
}

template <typename T> T* ptr(const Tensor& t) {
    return t.defined() ? t.data<T>() : nullptr;
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
    }
    require_same_dtype(op, "weight", weight, x);
    require_same_dtype(op, "bias", bias, x);
    if (running_mean.defined() != running_var.defined())
        throw Error("batch_norm: running_mean and running_var must both be given or both omitted");
    const bool use_batch_stats = training || !running_mean.defined();
    if (use_batch_stats && N * S <= 1)
        shape_error(op, "expected more than 1 value per channel when training, got input " +
                            x.shape().str());
    const Tensor xc = x.detach().contiguous();
    const Tensor wc = weight.defined() ? weight.detach().contiguous() : Tensor();
    const Tensor bc = bias.defined() ? bias.detach().contiguous() : Tensor();
    auto stats = std::make_shared<std::vector<double>>(2 * C); // mean, rstd
    double* mean = stats->data();
    double* rstd = stats->data() + C;
    if (use_batch_stats) {
        std::vector<double> var(C);
        dispatch(x.dtype(), [&](auto z) {
            using T = decltype(z);
            bn_stats(xc.data<T>(), mean, var.data(), N, C, S);
        });
        for (int64_t c = 0; c < C; ++c)
            rstd[c] = 1.0 / std::sqrt(var[c] + eps);
        if (training && running_mean.defined()) {
            const double M = static_cast<double>(N * S);
            std::vector<double> unbiased(C);
            for (int64_t c = 0; c < C; ++c)
                unbiased[c] = var[c] * M / (M - 1.0);
            const Tensor bm = from_vector(std::vector<double>(mean, mean + C), {C});
            const Tensor bv = from_vector(unbiased, {C});
            autograd::NoGradGuard no_grad;
            const Tensor nm = bm * momentum + running_mean.to(DType::Float64) * (1.0 - momentum);
            const Tensor nv = bv * momentum + running_var.to(DType::Float64) * (1.0 - momentum);
            Tensor rm = running_mean, rv = running_var;
            rm.copy_(nm);
            rv.copy_(nv);
        }
    } else {
        const Tensor rm = running_mean.detach().to(DType::Float64).contiguous();
        const Tensor rv = running_var.detach().to(DType::Float64).contiguous();
        for (int64_t c = 0; c < C; ++c) {
            mean[c] = rm.data<double>()[c];
            rstd[c] = 1.0 / std::sqrt(rv.data<double>()[c] + eps);
        }
    }
    Tensor y = make_tensor(x.shape(), x.dtype(), x.device());
    dispatch(x.dtype(), [&](auto z) {
        using T = decltype(z);
        bn_forward(xc.data<T>(), ptr<T>(wc), ptr<T>(bc), y.data<T>(), mean, rstd, N, C, S);
    });
    if (autograd::needs_grad({&x, &weight, &bias}))
        record("NativeBatchNormBackward0", {&x, &weight, &bias}, y,
               [sx = SavedTensor(xc), sw = wc.defined() ? SavedTensor(wc) : SavedTensor(), stats,
                use_batch_stats, N, C, S](const Tensor& grad, const Node& n) {
                   const Tensor gy = grad.contiguous();
                   const Tensor xs = sx.unpack(n), ws = sw.unpack(n);
                   TensorList r(3);
                   if (n.needs_input_grad(0))
                       r[0] = make_tensor(xs.shape(), xs.dtype(), xs.device());
                   if (n.needs_input_grad(1)) r[1] = make_tensor({C}, xs.dtype(), xs.device());
                   if (n.needs_input_grad(2)) r[2] = make_tensor({C}, xs.dtype(), xs.device());
                   dispatch(xs.dtype(), [&](auto z) {
                       using T = decltype(z);
                       bn_backward(xs.data<T>(), ptr<T>(ws), gy.data<T>(), stats->data(),
                                   stats->data() + C, use_batch_stats, N, C, S, ptr<T>(r[0]),
                                   ptr<T>(r[1]), ptr<T>(r[2]));
                   });
                   return r;
               });
    return y;
}

namespace {

// Shared by layer_norm and group_norm: R rows of D elements, affine parameters indexed by
// affine_index(r, j); the weight/bias gradients reduce g * xhat / g over all (r, j) per index.
template <typename A>
Tensor row_norm(const char* node, const Tensor& x, const Tensor& weight, const Tensor& bias,
                int64_t R, int64_t D, double eps, A affine_index) {
    const Tensor xc = x.detach().contiguous();
    const Tensor wc = weight.defined() ? weight.detach().contiguous() : Tensor();
    const Tensor bc = bias.defined() ? bias.detach().contiguous() : Tensor();
    auto stats = std::make_shared<std::vector<double>>(2 * R);
    Tensor y = make_tensor(x.shape(), x.dtype(), x.device());
    dispatch(x.dtype(), [&](auto z) {
        using T = decltype(z);
        row_forward(xc.data<T>(), ptr<T>(wc), ptr<T>(bc), y.data<T>(), stats->data(),
                    stats->data() + R, R, D, eps, affine_index);
    });
    if (autograd::needs_grad({&x, &weight, &bias}))
        record(
            node, {&x, &weight, &bias}, y,
            [sx = SavedTensor(xc), sw = wc.defined() ? SavedTensor(wc) : SavedTensor(), stats, R, D,
             affine_index, wshape = weight.defined() ? weight.shape() : Dims(),
             bshape = bias.defined() ? bias.shape() : Dims()](const Tensor& grad, const Node& n) {
                const Tensor gy = grad.contiguous();
                const Tensor xs = sx.unpack(n), ws = sw.unpack(n);
                const double* mean = stats->data();
                const double* rstd = stats->data() + R;
                TensorList r(3);
                if (n.needs_input_grad(0)) {
                    r[0] = make_tensor(xs.shape(), xs.dtype(), xs.device());
                    dispatch(xs.dtype(), [&](auto z) {
                        using T = decltype(z);
                        row_backward_input(xs.data<T>(), ptr<T>(ws), gy.data<T>(), mean, rstd, R, D,
                                           affine_index, r[0].data<T>());
                    });
                }
                if (n.needs_input_grad(1) || n.needs_input_grad(2)) {
                    const int64_t P = n.needs_input_grad(1) ? wshape.numel() : bshape.numel();
                    std::vector<double> gw(P, 0.0), gb(P, 0.0);
                    dispatch(xs.dtype(), [&](auto z) {
                        using T = decltype(z);
                        const T* xp = xs.data<T>();
                        const T* gp = gy.data<T>();
                        for (int64_t row = 0; row < R; ++row)
                            for (int64_t j = 0; j < D; ++j) {
                                const int64_t a = affine_index(row, j);
                                const double g = gp[row * D + j];
                                gw[a] += g * (xp[row * D + j] - mean[row]) * rstd[row];
                                gb[a] += g;
                            }
                    });
                    if (n.needs_input_grad(1)) r[1] = from_vector(gw, wshape).to(xs.dtype());
                    if (n.needs_input_grad(2)) r[2] = from_vector(gb, bshape).to(xs.dtype());
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
    return row_norm("NativeLayerNormBackward0", x, weight, bias, R, D, eps,
                    [](int64_t, int64_t j) { return j; });
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
    return row_norm("NativeGroupNormBackward0", x, weight, bias, N * G, Cg * S, eps,
                    [G, Cg, S](int64_t r, int64_t j) { return (r % G) * Cg + j / S; });
}

} // namespace myelin::nn::functional
