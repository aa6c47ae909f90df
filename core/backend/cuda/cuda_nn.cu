// Pooling and normalisation kernels of the CUDA backend (cuda_nn.h), float32 and float64 over
// contiguous nchw Views. They follow the CPU loops (backend/cpu/cpu_pool.cpp, cpu_norm.cpp) rule
// for rule: the same windows (padding, dilation, ceil_mode), divisors, first-maximum ties and NaN
// propagation; statistics and sums in double. Gradients that several outputs add into one input
// (pool backward) are summed by one thread per plane in the CPU's order: deterministic, no
// atomics. Row and channel statistics use one block per row or channel and a tree reduction, so
// float32 sums differ from the CPU's sequential ones by rounding only. Not run here (no GPU).
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_nn.h"

#include <cmath>

namespace myelin::backend::cuda {

namespace {

template <typename F> void dispatch(DType t, F&& f) {
    if (t == DType::Float64)
        f(double{});
    else
        f(float{});
}

template <typename T> const T* in(const View& v) {
    return static_cast<const T*>(v.data);
}
template <typename T> const T* in(const View* v) {
    return v ? static_cast<const T*>(v->data) : nullptr;
}
template <typename T> T* out(const View& v) {
    return static_cast<T*>(v.data);
}
template <typename T> T* out(const View* v) {
    return v ? static_cast<T*>(v->data) : nullptr;
}

// --- pooling ----------------------------------------------------------------------------------

template <typename T>
__global__ void max_pool_forward_kernel(PoolGeometry g, const T* x, T* y, int64_t* idx) {
    const int64_t OHW = g.OH * g.OW;
    MYELIN_GRID_LOOP(o, g.planes * OHW) {
        const int64_t p = o / OHW, oh = (o % OHW) / g.OW, ow = o % g.OW;
        const T* xp = x + p * g.H * g.W;
        int64_t ih0 = oh * g.sh - g.ph;
        const int64_t ih1 = min(ih0 + (g.kh - 1) * g.dh + 1, g.H);
        while (ih0 < 0)
            ih0 += g.dh;
        int64_t iw0 = ow * g.sw - g.pw;
        const int64_t iw1 = min(iw0 + (g.kw - 1) * g.dw + 1, g.W);
        while (iw0 < 0)
            iw0 += g.dw;
        int64_t best = ih0 * g.W + iw0;
        T maxval = -INFINITY;
        for (int64_t ih = ih0; ih < ih1; ih += g.dh)
            for (int64_t iw = iw0; iw < iw1; iw += g.dw) {
                const int64_t i = ih * g.W + iw;
                const T v = xp[i];
                if (v > maxval || isnan(v)) {
                    maxval = v;
                    best = i;
                }
            }
        y[o] = maxval;
        if (idx) idx[o] = best;
    }
}

template <typename T>
__global__ void max_pool_backward_kernel(PoolGeometry g, const T* gy, const int64_t* idx, T* gx) {
    const int64_t HW = g.H * g.W, OHW = g.OH * g.OW;
    MYELIN_GRID_LOOP(p, g.planes) {
        T* gp = gx + p * HW;
        for (int64_t i = 0; i < HW; ++i)
            gp[i] = T(0);
        for (int64_t i = 0; i < OHW; ++i)
            gp[idx[p * OHW + i]] += gy[p * OHW + i];
    }
}

struct Window {
    int64_t h0, h1, w0, w1;
    double divisor;
};

// The window of output (oh, ow) and its divisor: an average pool's (as the CPU's avg_window) or
// an adaptive pool's (PyTorch's start/end indices).
__device__ Window window(const PoolGeometry& g, AvgDivisor d, bool adaptive, int64_t oh,
                         int64_t ow) {
    if (adaptive) {
        const int64_t h0 = (oh * g.H) / g.OH, h1 = ((oh + 1) * g.H + g.OH - 1) / g.OH;
        const int64_t w0 = (ow * g.W) / g.OW, w1 = ((ow + 1) * g.W + g.OW - 1) / g.OW;
        return {h0, h1, w0, w1, double((h1 - h0) * (w1 - w0))};
    }
    int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
    int64_t h1 = min(h0 + g.kh, g.H + g.ph), w1 = min(w0 + g.kw, g.W + g.pw);
    const int64_t pool_size = (h1 - h0) * (w1 - w0);
    h0 = max(h0, int64_t(0)), w0 = max(w0, int64_t(0));
    h1 = min(h1, g.H), w1 = min(w1, g.W);
    const int64_t inside = max(int64_t(0), h1 - h0) * max(int64_t(0), w1 - w0);
    const int64_t divisor = d.override_by         ? d.override_by
                            : d.count_include_pad ? pool_size
                                                  : inside;
    return {h0, h1, w0, w1, double(divisor)};
}

template <typename T>
__global__ void avg_pool_forward_kernel(PoolGeometry g, AvgDivisor d, bool adaptive, const T* x,
                                        T* y) {
    const int64_t OHW = g.OH * g.OW;
    MYELIN_GRID_LOOP(o, g.planes * OHW) {
        const int64_t p = o / OHW, oh = (o % OHW) / g.OW, ow = o % g.OW;
        const Window win = window(g, d, adaptive, oh, ow);
        if (win.h0 >= win.h1 || win.w0 >= win.w1) {
            y[o] = T(0);
            continue;
        }
        double acc = 0.0;
        for (int64_t ih = win.h0; ih < win.h1; ++ih)
            for (int64_t iw = win.w0; iw < win.w1; ++iw)
                acc += x[p * g.H * g.W + ih * g.W + iw];
        y[o] = static_cast<T>(acc / win.divisor);
    }
}

template <typename T>
__global__ void avg_pool_backward_kernel(PoolGeometry g, AvgDivisor d, bool adaptive, const T* gy,
                                         T* gx) {
    const int64_t HW = g.H * g.W, OHW = g.OH * g.OW;
    MYELIN_GRID_LOOP(p, g.planes) {
        T* gp = gx + p * HW;
        for (int64_t i = 0; i < HW; ++i)
            gp[i] = T(0);
        for (int64_t oh = 0; oh < g.OH; ++oh)
            for (int64_t ow = 0; ow < g.OW; ++ow) {
                const Window win = window(g, d, adaptive, oh, ow);
                if (win.h0 >= win.h1 || win.w0 >= win.w1) continue;
                const T v = static_cast<T>(gy[p * OHW + oh * g.OW + ow] / win.divisor);
                for (int64_t ih = win.h0; ih < win.h1; ++ih)
                    for (int64_t iw = win.w0; iw < win.w1; ++iw)
                        gp[ih * g.W + iw] += v;
            }
    }
}

// --- reductions in double over one block ------------------------------------------------------

// The sum of every thread's `v` in the block (kThreads threads), returned to all of them.
__device__ double block_sum(double v) {
    __shared__ double partial[kThreads];
    __syncthreads(); // the previous call's readers are done with `partial`
    partial[threadIdx.x] = v;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
        if (int(threadIdx.x) < half) partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    return partial[0];
}

// --- batch norm: x as [N, C, S], one block per channel ------------------------------------------

template <typename T>
__global__ void bn_stats_kernel(BatchNormGeometry g, const T* x, double* mean, double* var) {
    const int64_t c = blockIdx.x, M = g.N * g.S;
    double sum = 0.0;
    for (int64_t i = threadIdx.x; i < M; i += blockDim.x)
        sum += x[((i / g.S) * g.C + c) * g.S + i % g.S];
    const double m = block_sum(sum) / double(M);
    double sq = 0.0;
    for (int64_t i = threadIdx.x; i < M; i += blockDim.x) {
        const double d = x[((i / g.S) * g.C + c) * g.S + i % g.S] - m;
        sq += d * d;
    }
    const double v = block_sum(sq) / double(M);
    if (threadIdx.x == 0) mean[c] = m, var[c] = v;
}

template <typename T>
__global__ void bn_forward_kernel(BatchNormGeometry g, const T* x, const T* w, const T* b, T* y,
                                  const double* mean, const double* rstd) {
    MYELIN_GRID_LOOP(i, g.N * g.C * g.S) {
        const int64_t c = (i / g.S) % g.C;
        const double scale = rstd[c] * (w ? double(w[c]) : 1.0);
        const double shift = (b ? double(b[c]) : 0.0) - mean[c] * scale;
        y[i] = x[i] * static_cast<T>(scale) + static_cast<T>(shift);
    }
}

template <typename T>
__global__ void bn_backward_kernel(BatchNormGeometry g, const T* x, const T* w, const T* gy,
                                   const double* mean, const double* rstd, bool batch_stats, T* gx,
                                   T* gw, T* gb) {
    const int64_t c = blockIdx.x, M = g.N * g.S;
    double sum_g = 0.0, sum_gx = 0.0;
    for (int64_t i = threadIdx.x; i < M; i += blockDim.x) {
        const int64_t at = ((i / g.S) * g.C + c) * g.S + i % g.S;
        sum_g += gy[at];
        sum_gx += double(gy[at]) * (x[at] - mean[c]);
    }
    sum_g = block_sum(sum_g);
    sum_gx = block_sum(sum_gx);
    const double r = rstd[c];
    if (threadIdx.x == 0) {
        if (gw) gw[c] = static_cast<T>(sum_gx * r);
        if (gb) gb[c] = static_cast<T>(sum_g);
    }
    if (!gx) return;
    const double wc = w ? double(w[c]) : 1.0, mg = sum_g / double(M),
                 k = sum_gx * r * r / double(M);
    for (int64_t i = threadIdx.x; i < M; i += blockDim.x) {
        const int64_t at = ((i / g.S) * g.C + c) * g.S + i % g.S;
        gx[at] = batch_stats ? static_cast<T>((gy[at] - mg - (x[at] - mean[c]) * k) * r * wc)
                             : static_cast<T>(gy[at] * r * wc);
    }
}

// --- row norms: R rows of D, one block per row --------------------------------------------------

__device__ int64_t affine_index(const RowNormGeometry& g, int64_t r, int64_t j) {
    return g.groups == 0 ? j : (r % g.groups) * g.group_channels + j / g.spatial;
}

template <typename T>
__global__ void row_forward_kernel(RowNormGeometry g, const T* x, const T* w, const T* b, T* y,
                                   double* mean, double* rstd, double eps) {
    const int64_t r = blockIdx.x;
    const T* xp = x + r * g.D;
    double sum = 0.0;
    for (int64_t j = threadIdx.x; j < g.D; j += blockDim.x)
        sum += xp[j];
    const double m = block_sum(sum) / double(g.D);
    double sq = 0.0;
    for (int64_t j = threadIdx.x; j < g.D; j += blockDim.x) {
        const double d = xp[j] - m;
        sq += d * d;
    }
    const double rs = 1.0 / sqrt(block_sum(sq) / double(g.D) + eps);
    if (threadIdx.x == 0) mean[r] = m, rstd[r] = rs;
    for (int64_t j = threadIdx.x; j < g.D; j += blockDim.x) {
        double v = (xp[j] - m) * rs;
        const int64_t a = affine_index(g, r, j);
        if (w) v *= double(w[a]);
        if (b) v += double(b[a]);
        y[r * g.D + j] = static_cast<T>(v);
    }
}

template <typename T>
__global__ void row_backward_input_kernel(RowNormGeometry g, const T* x, const T* w, const T* gy,
                                          const double* mean, const double* rstd, T* gx) {
    const int64_t r = blockIdx.x;
    const double m = mean[r], rs = rstd[r];
    double sum_h = 0.0, sum_hx = 0.0;
    for (int64_t j = threadIdx.x; j < g.D; j += blockDim.x) {
        const int64_t at = r * g.D + j;
        const double h = w ? gy[at] * double(w[affine_index(g, r, j)]) : double(gy[at]);
        sum_h += h;
        sum_hx += h * (x[at] - m) * rs;
    }
    const double mh = block_sum(sum_h) / double(g.D), mhx = block_sum(sum_hx) / double(g.D);
    for (int64_t j = threadIdx.x; j < g.D; j += blockDim.x) {
        const int64_t at = r * g.D + j;
        const double h = w ? gy[at] * double(w[affine_index(g, r, j)]) : double(gy[at]);
        gx[at] = static_cast<T>((h - mh - (x[at] - m) * rs * mhx) * rs);
    }
}

// One thread per affine parameter a: the elements (r, j) with affine_index(r, j) == a.
template <typename T>
__global__ void row_backward_affine_kernel(RowNormGeometry g, int64_t P, const T* x, const T* gy,
                                           const double* mean, const double* rstd, double* gw,
                                           double* gb) {
    MYELIN_GRID_LOOP(a, P) {
        double sw = 0.0, sb = 0.0;
        // Layer norm: column a of every row. Group norm: channel a's `spatial` elements in the
        // rows of its group (one per sample).
        const int64_t first_row = g.groups == 0 ? 0 : a / g.group_channels;
        const int64_t row_step = g.groups == 0 ? 1 : g.groups;
        const int64_t j0 = g.groups == 0 ? a : (a % g.group_channels) * g.spatial;
        const int64_t count = g.groups == 0 ? 1 : g.spatial;
        for (int64_t r = first_row; r < g.R; r += row_step)
            for (int64_t j = j0; j < j0 + count; ++j) {
                const double gv = gy[r * g.D + j];
                sw += gv * (x[r * g.D + j] - mean[r]) * rstd[r];
                sb += gv;
            }
        gw[a] = sw;
        gb[a] = sb;
    }
}

} // namespace

void launch_max_pool_forward(const PoolGeometry& g, const View& x, const View& y,
                             const View* indices) {
    const int64_t n = g.planes * g.OH * g.OW;
    if (n == 0) return;
    dispatch(x.dtype, [&](auto z) {
        using T = decltype(z);
        max_pool_forward_kernel<T>
            <<<blocks_for(n), kThreads>>>(g, in<T>(x), out<T>(y), out<int64_t>(indices));
    });
    check_launch("max_pool2d forward");
}

void launch_max_pool_backward(const PoolGeometry& g, const View& grad_y, const View& indices,
                              const View& grad_x) {
    if (g.planes == 0) return;
    dispatch(grad_y.dtype, [&](auto z) {
        using T = decltype(z);
        max_pool_backward_kernel<T><<<blocks_for(g.planes), kThreads>>>(
            g, in<T>(grad_y), in<int64_t>(indices), out<T>(grad_x));
    });
    check_launch("max_pool2d backward");
}

void launch_avg_pool_forward(const PoolGeometry& g, AvgDivisor d, bool adaptive, const View& x,
                             const View& y) {
    const int64_t n = g.planes * g.OH * g.OW;
    if (n == 0) return;
    dispatch(x.dtype, [&](auto z) {
        using T = decltype(z);
        avg_pool_forward_kernel<T>
            <<<blocks_for(n), kThreads>>>(g, d, adaptive, in<T>(x), out<T>(y));
    });
    check_launch(adaptive ? "adaptive_avg_pool2d forward" : "avg_pool2d forward");
}

void launch_avg_pool_backward(const PoolGeometry& g, AvgDivisor d, bool adaptive,
                              const View& grad_y, const View& grad_x) {
    if (g.planes == 0) return;
    dispatch(grad_y.dtype, [&](auto z) {
        using T = decltype(z);
        avg_pool_backward_kernel<T>
            <<<blocks_for(g.planes), kThreads>>>(g, d, adaptive, in<T>(grad_y), out<T>(grad_x));
    });
    check_launch(adaptive ? "adaptive_avg_pool2d backward" : "avg_pool2d backward");
}

void launch_batch_norm_stats(const BatchNormGeometry& g, const View& x, const View& mean,
                             const View& var) {
    if (g.C == 0) return;
    dispatch(x.dtype, [&](auto z) {
        using T = decltype(z);
        bn_stats_kernel<T>
            <<<unsigned(g.C), kThreads>>>(g, in<T>(x), out<double>(mean), out<double>(var));
    });
    check_launch("batch_norm statistics");
}

void launch_batch_norm_forward(const BatchNormGeometry& g, const View& x, const View* w,
                               const View* b, const View& mean, const View& rstd, const View& y) {
    const int64_t n = g.N * g.C * g.S;
    if (n == 0) return;
    dispatch(x.dtype, [&](auto z) {
        using T = decltype(z);
        bn_forward_kernel<T><<<blocks_for(n), kThreads>>>(
            g, in<T>(x), in<T>(w), in<T>(b), out<T>(y), in<double>(mean), in<double>(rstd));
    });
    check_launch("batch_norm forward");
}

void launch_batch_norm_backward(const BatchNormGeometry& g, const View& x, const View* w,
                                const View& grad_y, const View& mean, const View& rstd,
                                bool batch_stats, const View* grad_x, const View* grad_w,
                                const View* grad_b) {
    if (g.C == 0) return;
    dispatch(x.dtype, [&](auto z) {
        using T = decltype(z);
        bn_backward_kernel<T><<<unsigned(g.C), kThreads>>>(
            g, in<T>(x), in<T>(w), in<T>(grad_y), in<double>(mean), in<double>(rstd), batch_stats,
            out<T>(grad_x), out<T>(grad_w), out<T>(grad_b));
    });
    check_launch("batch_norm backward");
}

void launch_row_norm_forward(const RowNormGeometry& g, const View& x, const View* w, const View* b,
                             double eps, const View& y, const View& mean, const View& rstd) {
    if (g.R == 0) return;
    dispatch(x.dtype, [&](auto z) {
        using T = decltype(z);
        row_forward_kernel<T><<<unsigned(g.R), kThreads>>>(
            g, in<T>(x), in<T>(w), in<T>(b), out<T>(y), out<double>(mean), out<double>(rstd), eps);
    });
    check_launch(g.groups ? "group_norm forward" : "layer_norm forward");
}

void launch_row_norm_backward_input(const RowNormGeometry& g, const View& x, const View* w,
                                    const View& grad_y, const View& mean, const View& rstd,
                                    const View& grad_x) {
    if (g.R == 0) return;
    dispatch(x.dtype, [&](auto z) {
        using T = decltype(z);
        row_backward_input_kernel<T><<<unsigned(g.R), kThreads>>>(g, in<T>(x), in<T>(w),
                                                                  in<T>(grad_y), in<double>(mean),
                                                                  in<double>(rstd), out<T>(grad_x));
    });
    check_launch(g.groups ? "group_norm backward" : "layer_norm backward");
}

void launch_row_norm_backward_affine(const RowNormGeometry& g, const View& x, const View& grad_y,
                                     const View& mean, const View& rstd, const View& grad_w,
                                     const View& grad_b) {
    const int64_t P = grad_w.numel();
    if (P == 0) return;
    dispatch(x.dtype, [&](auto z) {
        using T = decltype(z);
        row_backward_affine_kernel<T><<<blocks_for(P), kThreads>>>(
            g, P, in<T>(x), in<T>(grad_y), in<double>(mean), in<double>(rstd), out<double>(grad_w),
            out<double>(grad_b));
    });
    check_launch(g.groups ? "group_norm backward" : "layer_norm backward");
}

} // namespace myelin::backend::cuda
