#pragma once
// Internal to cpu_reduce.cpp: the reduction ops (sum and mean, max / min with their indices,
// variance, vector norms, logsumexp), each a small class with a mergeable State that the row and
// column loops of cpu_reduce.cpp drive.
#include "backend/cpu/cpu_reduce_kernels.h"

#include <myelin/error.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace myelin::backend {
namespace {

// ---------------------------------------------------------------------------------------------
// Ops. Each provides:
//   State segment(p, n, stride, first)  reduce n elements p[0], p[stride], ...; `first` is the
//                                       flat index of p[0] within the reduced block
//   merge(a, b)                         a = a followed by b
//   empty()                             the result of an empty reduction
//   store(k, state)                     write output k (and its index)
//   Lanes, lanes_begin/step/state       the column loop: n outputs side by side, one reduced
//                                       position (`row`) at a time, p contiguous over outputs;
//                                       optionally lanes_step4, four rows at a time
// Lane arrays hold kChunk outputs; they live on the stack of the thread that owns them.

template <typename T> struct SumOp {
    static constexpr bool kInt = std::is_integral_v<T>;
    using Acc = std::conditional_t<kInt, uint64_t, double>; // unsigned: wraps like PyTorch
    struct State {
        Acc s = 0;
        Acc c = 0; // Neumaier compensation when merging partial sums (floating only)
    };

    bool mean = false;
    int64_t count = 0; // elements per output, for the mean
    void* out = nullptr;
    DType out_dtype = DType::Float32;

    MYELIN_INLINE State segment(const T* p, int64_t n, int64_t stride, int64_t) const {
        if constexpr (kInt) {
            Acc s = 0;
            for (int64_t i = 0; i < n; ++i)
                s += static_cast<Acc>(p[i * stride]);
            return {s, 0};
        } else if (stride == 1) {
            return {cascade_sum(0, n, [p](int64_t i) { return double(p[i]); }), 0};
        } else {
            return strided(p, n, stride);
        }
    }
    // Strided runs are rare and bound by their scattered loads: compiled once, not per clone.
    [[gnu::noinline]] static State strided(const T* p, int64_t n, int64_t stride) {
        return {cascade_sum(0, n, [p, stride](int64_t i) { return double(p[i * stride]); }), 0};
    }
    static void merge(State& a, const State& b) {
        if constexpr (kInt) {
            a.s += b.s;
        } else {
            const double t = a.s + b.s;
            // The rounding error of the addition (skipped once the sum is inf or NaN).
            if (std::isfinite(t))
                a.c += std::abs(a.s) >= std::abs(b.s) ? (a.s - t) + b.s : (b.s - t) + a.s;
            a.c += b.c;
            a.s = t;
        }
    }
    static State empty() { return {}; }
    void store(int64_t k, const State& st) const {
        if constexpr (kInt) {
            const auto sum = static_cast<int64_t>(st.s);
            if (!mean) {
                static_cast<int64_t*>(out)[k] = sum;
            } else if (out_dtype == DType::Int64) {
                // Integer mean: truncates toward zero; an empty mean has no integer value.
                if (count == 0) throw Error("mean(): cannot take the int64 mean of zero elements");
                static_cast<int64_t*>(out)[k] = sum / count;
            } else if (out_dtype == DType::Float64) {
                static_cast<double*>(out)[k] = double(sum) / double(count);
            } else {
                static_cast<float*>(out)[k] = float(double(sum) / double(count));
            }
        } else {
            const double v = st.s + st.c;
            static_cast<T*>(out)[k] = static_cast<T>(mean ? v / double(count) : v);
        }
    }

    // Columns: a second accumulator level every kFlush rows keeps float64 error small.
    static constexpr int kFlush = 128;
    struct Lanes {
        Acc total[kChunk];
        Acc block[kChunk];
        int rows;
    };
    MYELIN_INLINE void lanes_begin(Lanes& L, const T* p, int n, int64_t) const {
#pragma omp simd
        for (int j = 0; j < n; ++j) {
            L.total[j] = 0;
            L.block[j] = static_cast<Acc>(p[j]);
        }
        L.rows = 1;
    }
    MYELIN_INLINE void lanes_step(Lanes& L, const T* p, int n, int64_t) const {
#pragma omp simd
        for (int j = 0; j < n; ++j)
            L.block[j] += static_cast<Acc>(p[j]);
        if (++L.rows >= kFlush) {
#pragma omp simd
            for (int j = 0; j < n; ++j) {
                L.total[j] += L.block[j];
                L.block[j] = 0;
            }
            L.rows = 0;
        }
    }
    // Four rows per pass: one load/store of the accumulators instead of four.
    MYELIN_INLINE void lanes_step4(Lanes& L, const T* const* p, int n) const {
        const T *p0 = p[0], *p1 = p[1], *p2 = p[2], *p3 = p[3];
#pragma omp simd
        for (int j = 0; j < n; ++j)
            L.block[j] += (static_cast<Acc>(p0[j]) + static_cast<Acc>(p1[j])) +
                          (static_cast<Acc>(p2[j]) + static_cast<Acc>(p3[j]));
        L.rows += 4;
        if (L.rows >= kFlush) {
#pragma omp simd
            for (int j = 0; j < n; ++j) {
                L.total[j] += L.block[j];
                L.block[j] = 0;
            }
            L.rows = 0;
        }
    }
    State lanes_state(const Lanes& L, int j) const {
        State s{L.total[j], 0};
        merge(s, State{L.block[j], 0});
        return s;
    }
};

// Max / Min / ArgMax / ArgMin: value and first index of the extreme; NaN wins at its first
// position.
template <typename T, bool Max> struct MinMaxOp {
    struct State {
        T v;
        int64_t i;
    };

    void* out = nullptr;    // values, or nullptr for argmax/argmin
    int64_t* idx = nullptr; // indices, or nullptr

    MYELIN_INLINE static State segment(const T* p, int64_t n, int64_t stride, int64_t first) {
        if (stride != 1) {
            State s{p[0], first};
            for (int64_t i = 1; i < n; ++i)
                if (better<Max>(p[i * stride], s.v)) s = {p[i * stride], first + i};
            return s;
        }
        // Vectorised extreme per block; only the block that holds the winner is searched for
        // its first position. The first NaN ends the scan.
        constexpr int64_t kBlock = 512;
        T best = p[0];
        int64_t best_block = 0;
        for (int64_t b = 0; b < n; b += kBlock) {
            const int64_t len = std::min(kBlock, n - b);
            const T* q = p + b;
            const T m = lane_extreme<Max, T>(len, [q](int64_t i) { return q[i]; });
            if (b == 0 || better<Max>(m, best)) {
                best = m;
                best_block = b;
                if (is_nan(m)) break;
            }
        }
        int64_t i = best_block;
        if (is_nan(best)) {
            while (!is_nan(p[i]))
                ++i;
        } else {
            while (p[i] != best)
                ++i;
        }
        return {best, first + i};
    }
    static void merge(State& a, const State& b) {
        if (better<Max>(b.v, a.v)) a = b;
    }
    static State empty() { return {T(0), 0}; } // never stored: empty max throws earlier
    void store(int64_t k, const State& st) const {
        if (out) static_cast<T*>(out)[k] = st.v;
        if (idx) idx[k] = st.i;
    }

    struct Lanes {
        T v[kChunk];
        int64_t i[kChunk];
    };
    MYELIN_INLINE static void lanes_begin(Lanes& L, const T* p, int n, int64_t row) {
        for (int j = 0; j < n; ++j) {
            L.v[j] = p[j];
            L.i[j] = row;
        }
    }
    MYELIN_INLINE static void lanes_step(Lanes& L, const T* p, int n, int64_t row) {
        for (int j = 0; j < n; ++j) {
            if (better<Max>(p[j], L.v[j])) {
                L.v[j] = p[j];
                L.i[j] = row;
            }
        }
    }
    static State lanes_state(const Lanes& L, int j) { return {L.v[j], L.i[j]}; }
};

// Variance with a correction: two passes per run, runs merged with Chan et al.'s formula.
template <typename T> struct VarOp {
    struct State {
        int64_t n;
        double mean;
        double m2;
    };

    double correction = 1.0;
    T* out = nullptr;

    MYELIN_INLINE static State segment(const T* p, int64_t n, int64_t stride, int64_t) {
        if (stride == 1) return two_pass(n, [p](int64_t i) { return double(p[i]); });
        return strided(p, n, stride);
    }
    [[gnu::noinline]] static State strided(const T* p, int64_t n, int64_t stride) {
        return two_pass(n, [p, stride](int64_t i) { return double(p[i * stride]); });
    }
    template <typename F> MYELIN_INLINE static State two_pass(int64_t n, const F& f) {
        const double mean = cascade_sum(0, n, f) / double(n);
        const double m2 = cascade_sum(0, n, [&](int64_t i) {
            const double d = f(i) - mean;
            return d * d;
        });
        return State{n, mean, m2};
    }
    static void merge(State& a, const State& b) {
        if (b.n == 0) return;
        if (a.n == 0) {
            a = b;
            return;
        }
        const double n = double(a.n + b.n);
        const double delta = b.mean - a.mean;
        a.mean += delta * (double(b.n) / n);
        a.m2 += b.m2 + delta * delta * (double(a.n) * double(b.n) / n);
        a.n += b.n;
    }
    static State empty() { return {0, 0.0, 0.0}; }
    void store(int64_t k, const State& st) const {
        // PyTorch divides by max(0, N - correction): x/0 gives inf or NaN.
        const double denom = std::max(0.0, double(st.n) - correction);
        out[k] = static_cast<T>(st.m2 / denom);
    }

    // Columns: Welford's update, one reduced row at a time (the count is shared by all lanes).
    struct Lanes {
        double mean[kChunk];
        double m2[kChunk];
        int64_t n;
    };
    MYELIN_INLINE static void lanes_begin(Lanes& L, const T* p, int n, int64_t) {
#pragma omp simd
        for (int j = 0; j < n; ++j) {
            L.mean[j] = double(p[j]);
            L.m2[j] = 0.0;
        }
        L.n = 1;
    }
    MYELIN_INLINE static void lanes_step(Lanes& L, const T* p, int n, int64_t) {
        const double inv = 1.0 / double(++L.n);
#pragma omp simd
        for (int j = 0; j < n; ++j) {
            const double x = double(p[j]);
            const double d = x - L.mean[j];
            L.mean[j] += d * inv;
            L.m2[j] += d * (x - L.mean[j]);
        }
    }
    static State lanes_state(const Lanes& L, int j) {
        return {L.n, L.mean[j], L.m2[j]};
    }
};

// Vector norms. Sums and extremes of |x| accumulate in double (x^2 of a float cannot
// overflow there, so no scaling is needed).
enum class NormKind { Two, One, Zero, P, Inf, NegInf };

template <typename T> struct NormOp {
    using State = double;

    NormKind kind = NormKind::Two;
    double p = 2.0;
    T* out = nullptr;

    MYELIN_INLINE State segment(const T* x, int64_t n, int64_t stride, int64_t) const {
        if (stride == 1) return reduce_run(n, [x](int64_t i) { return double(x[i]); });
        return strided(x, n, stride);
    }
    [[gnu::noinline]] State strided(const T* x, int64_t n, int64_t stride) const {
        return reduce_run(n, [x, stride](int64_t i) { return double(x[i * stride]); });
    }
    // The common norms (2, 1, inf) get inlined wide code; the rest is compiled once.
    template <typename F> MYELIN_INLINE double reduce_run(int64_t n, const F& f) const {
        switch (kind) {
        case NormKind::Two:
            return cascade_sum(0, n, [&](int64_t i) { return f(i) * f(i); });
        case NormKind::One:
            return cascade_sum(0, n, [&](int64_t i) { return std::abs(f(i)); });
        case NormKind::Inf:
            return lane_extreme<true, double>(n, [&](int64_t i) { return std::abs(f(i)); });
        default:
            return rare(n, f);
        }
    }
    template <typename F> [[gnu::noinline]] double rare(int64_t n, const F& f) const {
        switch (kind) {
        case NormKind::Zero:
            return cascade_sum(0, n, [&](int64_t i) { return f(i) != 0.0 ? 1.0 : 0.0; });
        case NormKind::P:
            return cascade_sum(0, n, [&](int64_t i) { return std::pow(std::abs(f(i)), p); });
        case NormKind::NegInf:
            return lane_extreme<false, double>(n, [&](int64_t i) { return std::abs(f(i)); });
        default:
            return 0.0;
        }
    }
    void merge(State& a, const State& b) const {
        if (kind == NormKind::Inf) {
            if (better<true>(b, a)) a = b;
        } else if (kind == NormKind::NegInf) {
            if (better<false>(b, a)) a = b;
        } else {
            a += b;
        }
    }
    static State empty() { return 0.0; } // inf norms of empty input throw earlier
    void store(int64_t k, const State& s) const {
        double v = s;
        if (kind == NormKind::Two)
            v = std::sqrt(s);
        else if (kind == NormKind::P)
            v = std::pow(s, 1.0 / p);
        out[k] = static_cast<T>(v);
    }

    struct Lanes {
        double acc[kChunk];
    };
    MYELIN_INLINE void lanes_begin(Lanes& L, const T* x, int n, int64_t) const {
        if (kind == NormKind::Inf || kind == NormKind::NegInf) {
            for (int j = 0; j < n; ++j)
                L.acc[j] = std::abs(double(x[j]));
        } else {
            for (int j = 0; j < n; ++j)
                L.acc[j] = 0.0;
            lanes_step(L, x, n, 0);
        }
    }
    MYELIN_INLINE void lanes_step(Lanes& L, const T* x, int n, int64_t) const {
        double* acc = L.acc;
        switch (kind) {
        case NormKind::Two:
#pragma omp simd
            for (int j = 0; j < n; ++j)
                acc[j] += double(x[j]) * double(x[j]);
            break;
        case NormKind::One:
#pragma omp simd
            for (int j = 0; j < n; ++j)
                acc[j] += std::abs(double(x[j]));
            break;
        case NormKind::Zero:
#pragma omp simd
            for (int j = 0; j < n; ++j)
                acc[j] += x[j] != T(0) ? 1.0 : 0.0;
            break;
        case NormKind::P:
            for (int j = 0; j < n; ++j)
                acc[j] += std::pow(std::abs(double(x[j])), p);
            break;
        case NormKind::Inf:
            for (int j = 0; j < n; ++j)
                if (better<true>(std::abs(double(x[j])), acc[j])) acc[j] = std::abs(double(x[j]));
            break;
        case NormKind::NegInf:
            for (int j = 0; j < n; ++j)
                if (better<false>(std::abs(double(x[j])), acc[j])) acc[j] = std::abs(double(x[j]));
            break;
        }
    }
    static State lanes_state(const Lanes& L, int j) {
        return L.acc[j];
    }
};

// log(sum(exp(x))) as (m, s) with sum(exp(x)) = s * exp(m). m = -inf: every element is -inf
// (or none); m = +inf: the result is inf; m = NaN: a NaN was seen.
template <typename T> struct LogSumExpOp {
    struct State {
        double m;
        double s;
    };

    T* out = nullptr;

    MYELIN_INLINE static State segment(const T* p, int64_t n, int64_t stride, int64_t) {
        if (stride == 1) return run(n, [p](int64_t i) { return p[i]; });
        return strided(p, n, stride);
    }
    [[gnu::noinline]] static State strided(const T* p, int64_t n, int64_t stride) {
        return run(n, [p, stride](int64_t i) { return p[i * stride]; });
    }
    template <typename F> MYELIN_INLINE static State run(int64_t n, const F& f) {
        const T m = lane_extreme<true, T>(n, f);
        if (is_nan(m) || std::isinf(m)) return special(m);
        const double s = cascade_sum(0, n, [&](int64_t i) { return double(exp_t<T>(f(i) - m)); });
        return {double(m), s};
    }
    static State special(double m) {
        if (m == -kInf) return {-kInf, 0.0};
        if (m == kInf) return {kInf, 1.0};
        return {kNaN, kNaN};
    }
    static void merge(State& a, const State& b) {
        if (is_nan(a.m) || is_nan(b.m)) {
            a = {kNaN, kNaN};
            return;
        }
        const double m = std::max(a.m, b.m);
        if (std::isinf(m)) {
            a = special(m);
            return;
        }
        a.s = a.s * std::exp(a.m - m) + b.s * std::exp(b.m - m);
        a.m = m;
    }
    static State empty() { return {-kInf, 0.0}; }
    void store(int64_t k, const State& st) const {
        out[k] = static_cast<T>(std::isinf(st.m) || is_nan(st.m) ? st.m : st.m + std::log(st.s));
    }

    // Columns: the online (running max) form, one element per lane at a time.
    struct Lanes {
        double m[kChunk];
        double s[kChunk];
    };
    MYELIN_INLINE static void lanes_begin(Lanes& L, const T* p, int n, int64_t) {
        for (int j = 0; j < n; ++j) {
            L.m[j] = -kInf;
            L.s[j] = 0.0;
        }
        lanes_step(L, p, n, 0);
    }
    MYELIN_INLINE static void lanes_step(Lanes& L, const T* p, int n, int64_t) {
        for (int j = 0; j < n; ++j) {
            const double x = double(p[j]);
            double& m = L.m[j];
            double& s = L.s[j];
            if (x > m) {
                s = (std::isinf(x) ? 0.0 : s * std::exp(m - x)) + 1.0;
                m = x;
            } else if (is_nan(x)) {
                m = kNaN;
            } else if (x != -kInf && m != kInf) {
                s += std::exp(x - m);
            }
        }
    }
    static State lanes_state(const Lanes& L, int j) {
        const double m = L.m[j];
        if (is_nan(m) || std::isinf(m)) return special(m);
        return {m, L.s[j]};
    }
};

} // namespace
} // namespace myelin::backend
