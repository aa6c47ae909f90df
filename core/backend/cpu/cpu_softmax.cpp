// CPU softmax and log-softmax, forward and backward, over one dim of a contiguous tensor: rows
// (the dim is innermost) or columns of [D, inner] slabs, in parallel over slabs and chunks.
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_reduce_kernels.h"

#include <myelin/error.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace myelin::backend {
namespace {

// ---------------------------------------------------------------------------------------------
// Softmax over dim of a contiguous tensor, seen as [outer, D, inner].

template <typename T> MYELIN_CLONES void softmax_row(const T* x, T* y, int64_t D, bool log) {
    const T m = lane_extreme<true, T>(D, [x](int64_t i) { return x[i]; });
    // exp into y first: a plain vector loop, then a separate sum (faster than fusing the two).
#pragma omp simd
    for (int64_t i = 0; i < D; ++i)
        y[i] = exp_t<T>(x[i] - m);
    const double s = cascade_sum(0, D, [y](int64_t i) { return double(y[i]); });
    if (log) {
        const T ls = static_cast<T>(std::log(s));
#pragma omp simd
        for (int64_t i = 0; i < D; ++i)
            y[i] = (x[i] - m) - ls;
    } else {
        const T inv = static_cast<T>(1.0 / s);
#pragma omp simd
        for (int64_t i = 0; i < D; ++i)
            y[i] *= inv;
    }
}

// inner > 1: columns of a [D, inner] slab, n at a time starting at column j0.
template <typename T>
MYELIN_CLONES void softmax_cols(const T* x, T* y, int64_t D, int64_t inner, int64_t j0, int n,
                                bool log) {
    T m[kChunk];
    double s[kChunk];
    x += j0;
    y += j0;
    for (int j = 0; j < n; ++j)
        m[j] = x[j];
    for (int64_t d = 1; d < D; ++d) {
        const T* row = x + d * inner;
        for (int j = 0; j < n; ++j)
            m[j] = (row[j] > m[j] || is_nan(row[j])) ? row[j] : m[j];
    }
    for (int j = 0; j < n; ++j)
        s[j] = 0.0;
    for (int64_t d = 0; d < D; ++d) {
        const T* row = x + d * inner;
        T* out = y + d * inner;
#pragma omp simd
        for (int j = 0; j < n; ++j) {
            const T e = exp_t<T>(row[j] - m[j]);
            if (!log) out[j] = e;
            s[j] += double(e);
        }
    }
    if (log) {
        T ls[kChunk];
        for (int j = 0; j < n; ++j)
            ls[j] = static_cast<T>(std::log(s[j]));
        for (int64_t d = 0; d < D; ++d) {
            const T* row = x + d * inner;
            T* out = y + d * inner;
#pragma omp simd
            for (int j = 0; j < n; ++j)
                out[j] = (row[j] - m[j]) - ls[j];
        }
    } else {
        T inv[kChunk];
        for (int j = 0; j < n; ++j)
            inv[j] = static_cast<T>(1.0 / s[j]);
        for (int64_t d = 0; d < D; ++d) {
            T* out = y + d * inner;
#pragma omp simd
            for (int j = 0; j < n; ++j)
                out[j] *= inv[j];
        }
    }
}

// softmax:     gx = y * (gy - sum(gy * y))
// log_softmax: gx = gy - exp(y) * sum(gy)
template <typename T>
MYELIN_CLONES void softmax_backward_row(const T* y, const T* gy, T* gx, int64_t D, bool log) {
    if (log) {
        const T s = static_cast<T>(cascade_sum(0, D, [gy](int64_t i) { return double(gy[i]); }));
#pragma omp simd
        for (int64_t i = 0; i < D; ++i)
            gx[i] = gy[i] - exp_t<T>(y[i]) * s;
    } else {
        const T dot =
            static_cast<T>(cascade_sum(0, D, [y, gy](int64_t i) { return double(gy[i] * y[i]); }));
#pragma omp simd
        for (int64_t i = 0; i < D; ++i)
            gx[i] = y[i] * (gy[i] - dot);
    }
}

template <typename T>
MYELIN_CLONES void softmax_backward_cols(const T* y, const T* gy, T* gx, int64_t D, int64_t inner,
                                         int64_t j0, int n, bool log) {
    double s[kChunk];
    y += j0;
    gy += j0;
    gx += j0;
    for (int j = 0; j < n; ++j)
        s[j] = 0.0;
    for (int64_t d = 0; d < D; ++d) {
        const T* yr = y + d * inner;
        const T* gr = gy + d * inner;
#pragma omp simd
        for (int j = 0; j < n; ++j)
            s[j] += double(log ? gr[j] : gr[j] * yr[j]);
    }
    T st[kChunk];
    for (int j = 0; j < n; ++j)
        st[j] = static_cast<T>(s[j]);
    for (int64_t d = 0; d < D; ++d) {
        const T* yr = y + d * inner;
        const T* gr = gy + d * inner;
        T* out = gx + d * inner;
        if (log) {
#pragma omp simd
            for (int j = 0; j < n; ++j)
                out[j] = gr[j] - exp_t<T>(yr[j]) * st[j];
        } else {
#pragma omp simd
            for (int j = 0; j < n; ++j)
                out[j] = yr[j] * (gr[j] - st[j]);
        }
    }
}

struct SoftmaxShape {
    int64_t outer = 1, D = 1, inner = 1;
};

SoftmaxShape softmax_shape(const char* name, const View& x, int dim,
                           std::initializer_list<const View*> others) {
    const int nd = x.ndim == 0 ? 1 : x.ndim; // a 0-d tensor acts as [1]
    if (dim < 0 || dim >= nd)
        throw IndexError(std::string(name) + "(): dim " + std::to_string(dim) +
                         " is out of range for a " + std::to_string(x.ndim) + "-d tensor");
    if (x.dtype != DType::Float32 && x.dtype != DType::Float64)
        throw_dtype(name, x.dtype, "expected float32 or float64");
    if (!x.is_contiguous()) throw ShapeError(std::string(name) + "(): input must be contiguous");
    for (const View* v : others) {
        bool ok = v->dtype == x.dtype && v->ndim == x.ndim && v->is_contiguous();
        for (int d = 0; ok && d < x.ndim; ++d)
            ok = v->shape[d] == x.shape[d];
        if (!ok)
            throw ShapeError(
                std::string(name) +
                "(): all operands must be contiguous with the input's shape and dtype");
    }
    SoftmaxShape s;
    for (int d = 0; d < x.ndim; ++d) {
        if (d < dim)
            s.outer *= x.shape[d];
        else if (d == dim)
            s.D = x.shape[d];
        else
            s.inner *= x.shape[d];
    }
    return s;
}

// Runs body(o, j0, n) over every (outer slice, column chunk), in parallel when large.
template <typename F> void for_each_slab(const SoftmaxShape& s, const F& body) {
    const int64_t chunks = s.inner == 1 ? 1 : (s.inner + kChunk - 1) / kChunk;
    const int64_t tasks = s.outer * chunks;
    const int nt = thread_count(s.outer * s.D * s.inner);
    auto one = [&](int64_t t) {
        const int64_t o = t / chunks;
        const int64_t j0 = (t % chunks) * kChunk;
        body(o, j0, static_cast<int>(std::min<int64_t>(kChunk, s.inner - j0)));
    };
    if (nt <= 1 || tasks < 2) {
        for (int64_t t = 0; t < tasks; ++t)
            one(t);
        return;
    }
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t t = 0; t < tasks; ++t)
        one(t);
}

template <typename T>
void softmax_impl(const View& x, const SoftmaxShape& s, bool log, const View& out) {
    const T* xp = static_cast<const T*>(x.data);
    T* yp = static_cast<T*>(out.data);
    const int64_t slab = s.D * s.inner;
    for_each_slab(s, [&](int64_t o, int64_t j0, int n) {
        if (s.inner == 1)
            softmax_row(xp + o * slab, yp + o * slab, s.D, log);
        else
            softmax_cols(xp + o * slab, yp + o * slab, s.D, s.inner, j0, n, log);
    });
}

template <typename T>
void softmax_backward_impl(const View& y, const View& gy, const SoftmaxShape& s, bool log,
                           const View& gx) {
    const T* yp = static_cast<const T*>(y.data);
    const T* gp = static_cast<const T*>(gy.data);
    T* xp = static_cast<T*>(gx.data);
    const int64_t slab = s.D * s.inner;
    for_each_slab(s, [&](int64_t o, int64_t j0, int n) {
        const int64_t b = o * slab;
        if (s.inner == 1)
            softmax_backward_row(yp + b, gp + b, xp + b, s.D, log);
        else
            softmax_backward_cols(yp + b, gp + b, xp + b, s.D, s.inner, j0, n, log);
    });
}

} // namespace

void CpuBackend::softmax(const View& x, int dim, bool log, const View& out) {
    const char* name = log ? "log_softmax" : "softmax";
    const SoftmaxShape s = softmax_shape(name, x, dim, {&out});
    if (s.outer * s.D * s.inner == 0) return;
    if (x.dtype == DType::Float32)
        softmax_impl<float>(x, s, log, out);
    else
        softmax_impl<double>(x, s, log, out);
}

void CpuBackend::softmax_backward(const View& y, const View& grad_y, int dim, bool log,
                                  const View& grad_x) {
    const char* name = log ? "log_softmax_backward" : "softmax_backward";
    const SoftmaxShape s = softmax_shape(name, y, dim, {&grad_y, &grad_x});
    if (s.outer * s.D * s.inner == 0) return;
    if (y.dtype == DType::Float32)
        softmax_backward_impl<float>(y, grad_y, s, log, grad_x);
    else
        softmax_backward_impl<double>(y, grad_y, s, log, grad_x);
}

} // namespace myelin::backend
