// The CUDA backend's training kernels (cuda_train.h). The arithmetic is the CPU's: the element
// functions of kernels/optim_update.h (this file is compiled with --fmad=false, so no multiply-add
// is contracted that the CPU's -ffp-contract=off loop does not contract), the row functions of
// kernels/class_loss.h and the dropout stream of kernels/dropout.h. Sums (statistics, norms,
// loss totals) are in double, per block, added in block order on the host or by one thread in
// row order: deterministic. Not run here (no GPU).
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_train.h"
#include "backend/kernels/class_loss.h"
#include "backend/kernels/class_scores.h"
#include "backend/kernels/dropout.h"
#include "backend/kernels/optim_update.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace myelin::backend::cuda {
namespace {

using namespace kernels;

constexpr int kSumBlocks = 128;
constexpr int kSums = 5; // Σg², Σ|g|, max|g|, Σw², Σ(Δw)²

void check(cudaError_t error, const char* what) {
    if (error != cudaSuccess)
        throw DeviceError(std::string("CUDA ") + what + ": " + cudaGetErrorString(error));
}

template <typename F> void dispatch(DType t, F&& f) {
    if (t == DType::Float64)
        f(double{});
    else
        f(float{});
}

template <typename T> T* ptr(const View& v) {
    return static_cast<T*>(v.data);
}
template <typename T> T* ptr(const View* v) {
    return v ? static_cast<T*>(v->data) : nullptr;
}

unsigned sum_blocks(int64_t n) {
    const unsigned b = blocks_for(n);
    return b < kSumBlocks ? (b ? b : 1) : kSumBlocks;
}

// --- optimizer updates ------------------------------------------------------------------------

template <typename T> SgdArgs<T> args(const SgdStep& s) {
    return {T(s.lr),    T(s.momentum), T(s.dampening_c), T(s.weight_decay),
            s.nesterov, s.maximize,    s.first};
}
template <typename T> AdamArgs<T> args(const AdamStep& s) {
    return {T(s.beta1),         T(s.one_minus_beta1), T(s.beta2),        T(s.one_minus_beta2),
            T(s.eps),           T(s.weight_decay),    T(s.decay_factor), T(s.bias_correction2_sqrt),
            T(s.neg_step_size), s.decoupled,          s.amsgrad,         s.maximize};
}
template <typename T> RmsArgs<T> args(const RmspropStep& s) {
    return {T(s.alpha),    T(s.one_minus_alpha), T(s.eps),   T(s.weight_decay),
            T(s.momentum), T(s.neg_lr),          s.centered, s.maximize};
}
template <typename T> AdagradArgs<T> args(const AdagradStep& s) {
    return {T(s.weight_decay), T(s.eps), T(s.neg_clr), s.maximize};
}

template <typename T>
__global__ void sgd_kernel(T* p, const T* g, T* buf, int64_t n, SgdArgs<T> a) {
    MYELIN_GRID_LOOP(i, n) sgd_element(i, p, g, buf, a);
}
template <typename T>
__global__ void adam_kernel(T* p, const T* g, T* m, T* v, T* vmax, int64_t n, AdamArgs<T> a) {
    if (adam_is_fast(a)) {
        if (a.decoupled) {
            MYELIN_GRID_LOOP(i, n) adam_fast_element<T, true>(i, p, g, m, v, a);
        } else {
            MYELIN_GRID_LOOP(i, n) adam_fast_element<T, false>(i, p, g, m, v, a);
        }
        return;
    }
    MYELIN_GRID_LOOP(i, n) adam_element(i, p, g, m, v, vmax, a);
}
template <typename T>
__global__ void rmsprop_kernel(T* p, const T* g, T* sq, T* ga, T* buf, int64_t n, RmsArgs<T> a) {
    MYELIN_GRID_LOOP(i, n) rmsprop_element(i, p, g, sq, ga, buf, a);
}
template <typename T>
__global__ void adagrad_kernel(T* p, const T* g, T* sum, int64_t n, AdagradArgs<T> a) {
    MYELIN_GRID_LOOP(i, n) adagrad_element(i, p, g, sum, a);
}

// Tree reduction of kThreads values in shared memory: sums, or a max that propagates NaN.
__device__ void block_sum(double* s) {
    for (int width = kThreads / 2; width > 0; width /= 2) {
        __syncthreads();
        if (int(threadIdx.x) < width) s[threadIdx.x] += s[threadIdx.x + width];
    }
    __syncthreads();
}
__device__ double nan_max(double a, double b) {
    return a != a || b != b ? NAN : (a > b ? a : b);
}
__device__ void block_max(double* s) {
    for (int width = kThreads / 2; width > 0; width /= 2) {
        __syncthreads();
        if (int(threadIdx.x) < width)
            s[threadIdx.x] = nan_max(s[threadIdx.x], s[threadIdx.x + width]);
    }
    __syncthreads();
}

// The trainer's statistics of one update, per block: partial[block * kSums + k] (the weight
// sums 0 without `before`).
template <typename T>
__global__ void update_stats_kernel(const T* g, const T* before, const T* after, int64_t n,
                                    double* partial) {
    __shared__ double s[kSums][kThreads];
    double gs = 0.0, ga = 0.0, gm = 0.0, ws = 0.0, us = 0.0;
    MYELIN_GRID_LOOP(i, n) {
        const double gv = double(g[i]), wv = before ? double(before[i]) : 0.0;
        const double a = fabs(gv);
        gs += gv * gv;
        ga += a;
        gm = a > gm || a != a ? a : gm; // a NaN stays (the CPU's rule, step_update.h)
        ws += wv * wv;
        const double d = before ? double(after[i] - before[i]) : 0.0;
        us += d * d;
    }
    s[0][threadIdx.x] = gs;
    s[1][threadIdx.x] = ga;
    s[2][threadIdx.x] = gm;
    s[3][threadIdx.x] = ws;
    s[4][threadIdx.x] = us;
    block_sum(s[0]);
    block_sum(s[1]);
    block_max(s[2]);
    block_sum(s[3]);
    block_sum(s[4]);
    if (threadIdx.x == 0)
        for (int k = 0; k < kSums; ++k)
            partial[blockIdx.x * kSums + k] = s[k][0];
}

// Adds the per-block partials into sums[kSums] in block order, by one thread (deterministic).
__global__ void total_stats_kernel(const double* partial, unsigned blocks, double* sums) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    double t[kSums] = {0.0, 0.0, 0.0, 0.0, 0.0};
    for (unsigned b = 0; b < blocks; ++b) {
        const double* s = partial + size_t(b) * kSums;
        t[0] += s[0];
        t[1] += s[1];
        t[2] = nan_max(t[2], s[2]);
        t[3] += s[3];
        t[4] += s[4];
    }
    for (int k = 0; k < kSums; ++k)
        sums[k] = t[k];
}

// Runs `launch()` (the update) on w; with stats, keeps w's values before it (unless only Σg² is
// asked for) and sums into the request's device view after it. Nothing is read back here: the
// optimizer reads every parameter's sums at once after the step. Scratch returns to the caching
// allocator at scope exit while the kernels may still be queued, which is safe on the one stream.
template <typename T, typename Launch>
void run_update(Backend& device, const View& w, const View& g, const UpdateStatsOut* stats,
                const Launch& launch) {
    const int64_t n = w.numel();
    if (n == 0) {
        if (stats)
            check(cudaMemsetAsync(stats->sums.data, 0, kSums * sizeof(double), nullptr),
                  "optimizer statistics");
        return;
    }
    if (!stats) {
        launch();
        check_launch("optimizer step");
        return;
    }
    const bool weights = !stats->grad_squares_only;
    Scratch before(device, weights ? size_t(n) * sizeof(T) : 0);
    if (weights)
        check(cudaMemcpyAsync(before.as<T>(), w.data, size_t(n) * sizeof(T),
                              cudaMemcpyDeviceToDevice, nullptr),
              "optimizer step (saving the weights)");
    launch();
    check_launch("optimizer step");
    const unsigned blocks = sum_blocks(n);
    Scratch partial(device, size_t(blocks) * kSums * sizeof(double));
    update_stats_kernel<T>
        <<<blocks, kThreads>>>(ptr<T>(g), before.as<T>(), ptr<T>(w), n, partial.as<double>());
    check_launch("optimizer statistics");
    total_stats_kernel<<<1, 1>>>(partial.as<double>(), blocks, ptr<double>(stats->sums));
    check_launch("optimizer statistics (totals)");
}

// --- class losses -----------------------------------------------------------------------------

template <typename T>
__global__ void class_rows_kernel(const T* x, const int64_t* t, const T* w, ClassLossGeometry p,
                                  int64_t rows, double* lse, double* terms, T* out) {
    MYELIN_GRID_LOOP(r, rows) {
        double unused = 0.0;
        const ClassRowTerms row = class_row_forward<T>(x, t, w, p, r, p.logits ? lse + r : &unused);
        terms[3 * r] = row.nll;
        terms[3 * r + 1] = row.smooth;
        terms[3 * r + 2] = row.weight;
        if (p.reduction == 0) out[r] = T(class_row_loss(row, p));
    }
}
// The totals in row order (the CPU's), by one thread.
template <typename T>
__global__ void class_total_kernel(const double* terms, int64_t rows, ClassLossGeometry p, T* out,
                                   double* denominators) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    double nll = 0.0, smooth = 0.0, weight = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
        nll += terms[3 * r];
        smooth += terms[3 * r + 1];
        weight += terms[3 * r + 2];
    }
    denominators[0] = weight;
    denominators[1] = weight;
    if (p.reduction != 0) out[0] = T(class_reduced_loss(nll, smooth, weight, p));
}
// One thread per row.
template <typename T>
__global__ void class_scores_kernel(const T* x, const int64_t* t, int64_t rows, int64_t classes,
                                    int64_t* out) {
    MYELIN_GRID_LOOP(r, rows) {
        const RowScore s = score_row(x + r * classes, classes, t[r]);
        out[2 * r] = s.predicted;
        out[2 * r + 1] = s.above_target;
    }
}
template <typename T>
__global__ void class_backward_kernel(const T* x, const int64_t* t, const T* w, ClassLossGeometry p,
                                      int64_t rows, const double* lse, const double* denominators,
                                      const T* g, T* gx) {
    MYELIN_GRID_LOOP(r, rows) {
        const double wsum_all = class_weight_sum(w, p.c);
        class_row_backward<T>(x, t, w, p, lse, denominators, wsum_all, g, gx, r);
    }
}

// --- dropout, norms ---------------------------------------------------------------------------

template <typename T>
__global__ void dropout_forward_kernel(DropoutStream s, const T* x, int64_t n, T* out,
                                       uint8_t* mask) {
    const T scale = T(s.keep_scale);
    MYELIN_GRID_LOOP(i, n) {
        const bool keep = s.keep(uint64_t(i));
        out[i] = x[i] * (keep ? scale : T(0));
        mask[i] = keep;
    }
}
template <typename T>
__global__ void dropout_backward_kernel(T scale, const T* g, const uint8_t* mask, int64_t n,
                                        T* dx) {
    MYELIN_GRID_LOOP(i, n) dx[i] = g[i] * (mask[i] ? scale : T(0));
}

// mode: 0 max |x| (p = inf), 1 Σx², 2 Σ|x|, 3 non-zeros, 4 Σ|x|^p.
template <typename T>
__global__ void norm_kernel(const T* x, int64_t n, int mode, double p, double* partial) {
    __shared__ double s[kThreads];
    double acc = 0.0;
    MYELIN_GRID_LOOP(i, n) {
        const double a = fabs(double(x[i]));
        if (mode == 0)
            acc = nan_max(acc, a);
        else if (mode == 1)
            acc += a * a;
        else if (mode == 2)
            acc += a;
        else if (mode == 3)
            acc += a != 0.0 ? 1.0 : 0.0;
        else
            acc += pow(a, p);
    }
    s[threadIdx.x] = acc;
    if (mode == 0)
        block_max(s);
    else
        block_sum(s);
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

template <typename T> __global__ void scale_kernel(T* x, int64_t n, T scale) {
    MYELIN_GRID_LOOP(i, n) x[i] = x[i] * scale;
}

} // namespace

void CudaTrainKernels::sgd_step(const SgdStep& s, const View& w, const View& g,
                                const View* momentum, const UpdateStatsOut* stats) {
    dispatch(w.dtype, [&](auto zero) {
        using T = decltype(zero);
        const int64_t n = w.numel();
        run_update<T>(device_, w, g, stats, [&] {
            sgd_kernel<T><<<blocks_for(n), kThreads>>>(ptr<T>(w), ptr<T>(g), ptr<T>(momentum), n,
                                                       args<T>(s));
        });
    });
}

void CudaTrainKernels::adam_step(const AdamStep& s, const View& w, const View& g,
                                 const View& exp_avg, const View& exp_avg_sq,
                                 const View* max_exp_avg_sq, const UpdateStatsOut* stats) {
    dispatch(w.dtype, [&](auto zero) {
        using T = decltype(zero);
        const int64_t n = w.numel();
        run_update<T>(device_, w, g, stats, [&] {
            adam_kernel<T><<<blocks_for(n), kThreads>>>(ptr<T>(w), ptr<T>(g), ptr<T>(exp_avg),
                                                        ptr<T>(exp_avg_sq), ptr<T>(max_exp_avg_sq),
                                                        n, args<T>(s));
        });
    });
}

void CudaTrainKernels::rmsprop_step(const RmspropStep& s, const View& w, const View& g,
                                    const View& square_avg, const View* grad_avg,
                                    const View* momentum, const UpdateStatsOut* stats) {
    dispatch(w.dtype, [&](auto zero) {
        using T = decltype(zero);
        const int64_t n = w.numel();
        run_update<T>(device_, w, g, stats, [&] {
            rmsprop_kernel<T><<<blocks_for(n), kThreads>>>(ptr<T>(w), ptr<T>(g), ptr<T>(square_avg),
                                                           ptr<T>(grad_avg), ptr<T>(momentum), n,
                                                           args<T>(s));
        });
    });
}

void CudaTrainKernels::adagrad_step(const AdagradStep& s, const View& w, const View& g,
                                    const View& sum, const UpdateStatsOut* stats) {
    dispatch(w.dtype, [&](auto zero) {
        using T = decltype(zero);
        const int64_t n = w.numel();
        run_update<T>(device_, w, g, stats, [&] {
            adagrad_kernel<T>
                <<<blocks_for(n), kThreads>>>(ptr<T>(w), ptr<T>(g), ptr<T>(sum), n, args<T>(s));
        });
    });
}

void CudaTrainKernels::class_loss_forward(const ClassLossGeometry& p, const View& x,
                                          const View& target, const View* weight, const View& out,
                                          const View& lse, const View& denominators) {
    const int64_t rows = p.rows();
    Scratch terms(device_, size_t(rows > 0 ? rows : 1) * 3 * sizeof(double));
    dispatch(x.dtype, [&](auto zero) {
        using T = decltype(zero);
        if (rows > 0) {
            class_rows_kernel<T><<<blocks_for(rows), kThreads>>>(
                ptr<T>(x), ptr<int64_t>(target), ptr<T>(weight), p, rows, ptr<double>(lse),
                terms.as<double>(), ptr<T>(out));
            check_launch("class loss (rows)");
        }
        class_total_kernel<T>
            <<<1, 1>>>(terms.as<double>(), rows, p, ptr<T>(out), ptr<double>(denominators));
        check_launch("class loss (totals)");
    });
}

void CudaTrainKernels::class_loss_backward(const ClassLossGeometry& p, const View& x,
                                           const View& target, const View* weight, const View& lse,
                                           const View& denominators, const View& grad_out,
                                           const View& grad_x) {
    const int64_t rows = p.rows();
    if (rows == 0) return;
    dispatch(x.dtype, [&](auto zero) {
        using T = decltype(zero);
        class_backward_kernel<T><<<blocks_for(rows), kThreads>>>(
            ptr<T>(x), ptr<int64_t>(target), ptr<T>(weight), p, rows, ptr<double>(lse),
            ptr<double>(denominators), ptr<T>(grad_out), ptr<T>(grad_x));
        check_launch("class loss backward");
    });
}

void CudaTrainKernels::class_scores(const View& x, const View& target, const View& out) {
    const int64_t rows = x.shape[0], classes = x.shape[1];
    if (rows == 0) return;
    dispatch(x.dtype, [&](auto zero) {
        using T = decltype(zero);
        class_scores_kernel<T><<<blocks_for(rows), kThreads>>>(ptr<T>(x), ptr<int64_t>(target),
                                                               rows, classes, ptr<int64_t>(out));
        check_launch("class scores");
    });
}

void CudaTrainKernels::dropout_forward(uint64_t seed, double p, const View& x, const View& out,
                                       const View& mask) {
    const DropoutStream stream(seed, p);
    const int64_t n = x.numel();
    if (n == 0) return;
    dispatch(x.dtype, [&](auto zero) {
        using T = decltype(zero);
        dropout_forward_kernel<T>
            <<<blocks_for(n), kThreads>>>(stream, ptr<T>(x), n, ptr<T>(out), ptr<uint8_t>(mask));
        check_launch("dropout");
    });
}

void CudaTrainKernels::dropout_backward(uint64_t seed, double p, const View& grad, const View& mask,
                                        const View& grad_x) {
    const DropoutStream stream(seed, p);
    const int64_t n = grad.numel();
    if (n == 0) return;
    dispatch(grad.dtype, [&](auto zero) {
        using T = decltype(zero);
        dropout_backward_kernel<T><<<blocks_for(n), kThreads>>>(
            T(stream.keep_scale), ptr<T>(grad), ptr<uint8_t>(mask), n, ptr<T>(grad_x));
        check_launch("dropout backward");
    });
}

// The per-block partials added (or maxed) in block order by one thread, into out: the same total
// on every run, and nothing read back here.
__global__ void norm_total_kernel(const double* partial, unsigned blocks, int mode, double* out) {
    double acc = 0.0;
    for (unsigned b = 0; b < blocks; ++b)
        acc = mode == 0 ? nan_max(acc, partial[b]) : acc + partial[b];
    *out = acc;
}

void CudaTrainKernels::norm_accumulate(const View& x, double p, const View& out) {
    const int64_t n = x.numel();
    if (n == 0) {
        check(cudaMemsetAsync(out.data, 0, sizeof(double), nullptr), "gradient norm"); // +0.0
        return;
    }
    const int mode = std::isinf(p) ? 0 : p == 2.0 ? 1 : p == 1.0 ? 2 : p == 0.0 ? 3 : 4;
    const unsigned blocks = sum_blocks(n);
    Scratch partial(device_, size_t(blocks) * sizeof(double));
    dispatch(x.dtype, [&](auto zero) {
        using T = decltype(zero);
        norm_kernel<T><<<blocks, kThreads>>>(ptr<T>(x), n, mode, p, partial.as<double>());
        check_launch("gradient norm");
    });
    norm_total_kernel<<<1, 1>>>(partial.as<double>(), blocks, mode, static_cast<double*>(out.data));
    check_launch("gradient norm total");
}

void CudaTrainKernels::scale_(const View& x, double scale) {
    const int64_t n = x.numel();
    if (n == 0) return;
    dispatch(x.dtype, [&](auto zero) {
        using T = decltype(zero);
        scale_kernel<T><<<blocks_for(n), kThreads>>>(ptr<T>(x), n, T(scale));
        check_launch("gradient scale");
    });
}

} // namespace myelin::backend::cuda
