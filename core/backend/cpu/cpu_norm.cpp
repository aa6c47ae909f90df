// The CPU backend's normalisation kernels (nn_kernels.h): batch_norm (per channel over N and
// the spatial dims), layer_norm and group_norm (rows of one sample's normalised elements).
// Forward and backward are fused loops that keep statistics in double, so float32 agrees with
// PyTorch to rounding and float64 is exact enough for gradcheck.
#include "backend/cpu/cpu_nn.h"

#include <cmath>
#include <vector>

namespace myelin::backend {

namespace {

template <typename F> void dispatch(DType t, F&& f) {
    if (t == DType::Float32)
        f(float{});
    else
        f(double{});
}

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

template <typename T> const T* in(const View* v) {
    return v ? static_cast<const T*>(v->data) : nullptr;
}
template <typename T> T* out(const View* v) {
    return v ? static_cast<T*>(v->data) : nullptr;
}
const double* stats(const View& v) {
    return static_cast<const double*>(v.data);
}

// Calls f with the affine index function of `g`: layer norm's j, group norm's channel.
template <typename F> void with_affine_index(const RowNormGeometry& g, F&& f) {
    if (g.groups == 0) {
        f([](int64_t, int64_t j) { return j; });
    } else {
        const int64_t G = g.groups, Cg = g.group_channels, S = g.spatial;
        f([G, Cg, S](int64_t r, int64_t j) { return (r % G) * Cg + j / S; });
    }
}

} // namespace

void CpuNnKernels::batch_norm_stats(const BatchNormGeometry& g, const View& x, const View& mean,
                                    const View& var) {
    dispatch(x.dtype, [&](auto z) {
        using T = decltype(z);
        bn_stats(in<T>(&x), out<double>(&mean), out<double>(&var), g.N, g.C, g.S);
    });
}

void CpuNnKernels::batch_norm_forward(const BatchNormGeometry& g, const View& x, const View* w,
                                      const View* b, const View& mean, const View& rstd,
                                      const View& y) {
    dispatch(x.dtype, [&](auto z) {
        using T = decltype(z);
        bn_forward(in<T>(&x), in<T>(w), in<T>(b), out<T>(&y), stats(mean), stats(rstd), g.N, g.C,
                   g.S);
    });
}

void CpuNnKernels::batch_norm_backward(const BatchNormGeometry& g, const View& x, const View* w,
                                       const View& grad_y, const View& mean, const View& rstd,
                                       bool batch_stats, const View* grad_x, const View* grad_w,
                                       const View* grad_b) {
    dispatch(x.dtype, [&](auto z) {
        using T = decltype(z);
        bn_backward(in<T>(&x), in<T>(w), in<T>(&grad_y), stats(mean), stats(rstd), batch_stats, g.N,
                    g.C, g.S, out<T>(grad_x), out<T>(grad_w), out<T>(grad_b));
    });
}

void CpuNnKernels::row_norm_forward(const RowNormGeometry& g, const View& x, const View* w,
                                    const View* b, double eps, const View& y, const View& mean,
                                    const View& rstd) {
    with_affine_index(g, [&](auto affine_index) {
        dispatch(x.dtype, [&](auto z) {
            using T = decltype(z);
            row_forward(in<T>(&x), in<T>(w), in<T>(b), out<T>(&y), out<double>(&mean),
                        out<double>(&rstd), g.R, g.D, eps, affine_index);
        });
    });
}

void CpuNnKernels::row_norm_backward_input(const RowNormGeometry& g, const View& x, const View* w,
                                           const View& grad_y, const View& mean, const View& rstd,
                                           const View& grad_x) {
    with_affine_index(g, [&](auto affine_index) {
        dispatch(x.dtype, [&](auto z) {
            using T = decltype(z);
            row_backward_input(in<T>(&x), in<T>(w), in<T>(&grad_y), stats(mean), stats(rstd), g.R,
                               g.D, affine_index, out<T>(&grad_x));
        });
    });
}

void CpuNnKernels::row_norm_backward_affine(const RowNormGeometry& g, const View& x,
                                            const View& grad_y, const View& mean, const View& rstd,
                                            const View& grad_w, const View& grad_b) {
    const int64_t P = grad_w.numel(), R = g.R, D = g.D;
    double* gw = out<double>(&grad_w);
    double* gb = out<double>(&grad_b);
    for (int64_t a = 0; a < P; ++a)
        gw[a] = gb[a] = 0.0;
    const double* m = stats(mean);
    const double* rs = stats(rstd);
    with_affine_index(g, [&](auto affine_index) {
        dispatch(x.dtype, [&](auto z) {
            using T = decltype(z);
            const T* xp = in<T>(&x);
            const T* gp = in<T>(&grad_y);
            for (int64_t row = 0; row < R; ++row)
                for (int64_t j = 0; j < D; ++j) {
                    const int64_t a = affine_index(row, j);
                    const double gv = gp[row * D + j];
                    gw[a] += gv * (xp[row * D + j] - m[row]) * rs[row];
                    gb[a] += gv;
                }
        });
    });
}

} // namespace myelin::backend
