// CPU reductions (sum, mean, max/min with indices, var, norm, logsumexp) and softmax.
//
// reduce() normalises x into kept dims (the output, row-major) and reduced dims, both with
// size-1 dims dropped and mergeable neighbours coalesced, then picks one of two loops:
//   * rows:    each output reduces its block in runs along the innermost reduced dim, with a
//              vectorisable loop when that dim is contiguous (the common "reduce the last dims");
//   * columns: the innermost reduced dim is strided but a kept dim is contiguous (e.g. the bias
//              gradient, a sum over the batch): whole rows are folded into an output-sized
//              accumulator ("lanes") instead of striding down each column.
// Every op is a small class with a mergeable State, so a block can be split across threads and
// the partial results combined in a fixed order (deterministic for a given thread count).
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/strided_counter.h"
#include "backend/kernels/elementwise.h"

#include <myelin/error.h>

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

// Hot loops are compiled twice, for baseline x86-64 and for x86-64-v3 (AVX2 + FMA), and picked
// at load time by the CPU; the helpers they call are forced inline so they get the wide code
// too. Sums use a fixed number of lanes whatever the vector width, so the two versions differ
// only where g++ contracts a*b+c into an FMA (last-bit differences, as between PyTorch builds).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(MYELIN_NO_CLONES)
#define MYELIN_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define MYELIN_CLONES
#endif
#define MYELIN_INLINE [[gnu::always_inline]] inline

namespace myelin::backend {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const char* reduce_name(ReduceOp op) {
    switch (op) {
    case ReduceOp::Sum:
        return "sum";
    case ReduceOp::Mean:
        return "mean";
    case ReduceOp::Max:
        return "max";
    case ReduceOp::Min:
        return "min";
    case ReduceOp::ArgMax:
        return "argmax";
    case ReduceOp::ArgMin:
        return "argmin";
    case ReduceOp::Var:
        return "var";
    case ReduceOp::Norm:
        return "norm";
    case ReduceOp::LogSumExp:
        return "logsumexp";
    default:
        return "reduce";
    }
}

[[noreturn]] void throw_dtype(const char* op, DType t, const char* supported) {
    throw DTypeError(std::string(op) + "(): dtype " + dtype_name(t) + " is not supported (" +
                     supported + ")");
}

template <typename T> inline bool is_nan(T v) {
    if constexpr (std::is_floating_point_v<T>)
        return v != v;
    else
        return false;
}

// v replaces the current extreme m: strictly better, or the first NaN (NaN wins and sticks).
template <bool Max, typename T> inline bool better(T v, T m) {
    return !is_nan(m) && ((Max ? v > m : v < m) || is_nan(v));
}

// ---------------------------------------------------------------------------------------------
// Vectorisable building blocks. Independent lanes let the compiler keep several vector
// accumulators in flight without reassociating a single sum (no -ffast-math needed).

// 32 lanes: 8 AVX2 accumulators of doubles, enough to hide the add latency.
constexpr int kLanes = 32;

// Sum of f(i) over [lo, hi) in double. Blocks of kBlock elements use kLanes accumulators;
// block sums are combined with Neumaier compensation, so the rounding error stays at that of
// one block (float64 sums must match PyTorch to 1e-10) instead of growing with n.
template <typename F> MYELIN_INLINE double cascade_sum(int64_t lo, int64_t hi, const F& f) {
    constexpr int64_t kBlock = 2048;
    double sum = 0.0, comp = 0.0;
    for (int64_t b = lo; b < hi; b += kBlock) {
        const int64_t e = std::min(hi, b + kBlock);
        double x = 0.0;
        int64_t i = b;
        if (e - b >= kLanes) {
            // Lanes start from the first kLanes elements: no zeroing (which g++ turns into a
            // slow rep stos).
            double acc[kLanes];
#pragma omp simd
            for (int l = 0; l < kLanes; ++l)
                acc[l] = f(b + l);
            for (i = b + kLanes; i + kLanes <= e; i += kLanes) {
#pragma omp simd
                for (int l = 0; l < kLanes; ++l)
                    acc[l] += f(i + l);
            }
            // Pairwise tree over the lanes.
#pragma GCC unroll 8
            for (int w = kLanes / 2; w > 0; w /= 2) {
#pragma GCC unroll 32
                for (int l = 0; l < w; ++l)
                    acc[l] += acc[l + w];
            }
            x = acc[0];
        }
        for (; i < e; ++i) // the tail, or a whole short run (tiny rows)
            x += f(i);
        if (b == lo) {
            sum = x;
            continue;
        }
        const double t = sum + x;
        if (std::isfinite(t)) comp += std::abs(sum) >= std::abs(x) ? (sum - t) + x : (x - t) + sum;
        sum = t;
    }
    return sum + comp;
}

// Max (or min) of f(i) over [0, n), n >= 1; a NaN anywhere makes the result NaN.
template <bool Max, typename V, typename F> MYELIN_INLINE V lane_extreme(int64_t n, const F& f) {
    if (n < kLanes) {
        V r = f(0);
        for (int64_t i = 1; i < n; ++i)
            if (better<Max>(f(i), r)) r = f(i);
        return r;
    }
    V m[kLanes];
    for (int l = 0; l < kLanes; ++l)
        m[l] = f(0);
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
        for (int l = 0; l < kLanes; ++l) {
            const V v = f(i + l);
            // Once a lane holds NaN both tests fail for ordinary v, so NaN sticks.
            m[l] = ((Max ? v > m[l] : v < m[l]) || is_nan(v)) ? v : m[l];
        }
    }
    V r = m[0];
#pragma GCC unroll 32
    for (int l = 1; l < kLanes; ++l)
        if (better<Max>(m[l], r)) r = m[l];
    for (; i < n; ++i)
        if (better<Max>(f(i), r)) r = f(i);
    return r;
}

// c ? a : b through bit masks. A plain ?: lets the compiler move arithmetic into a conditional
// block, which under the default -ftrapping-math stops the vectoriser.
MYELIN_INLINE float select(bool c, float a, float b) {
    const uint32_t m = 0u - static_cast<uint32_t>(c);
    return std::bit_cast<float>((std::bit_cast<uint32_t>(a) & m) |
                                (std::bit_cast<uint32_t>(b) & ~m));
}

template <typename T> MYELIN_INLINE T exp_t(T x) {
    if constexpr (std::is_same_v<T, float>)
        return kernels::fast_expf(x);
    else
        return std::exp(x);
}

// ---------------------------------------------------------------------------------------------
// Iteration helpers.

// x split into kept dims (the output, row-major) and reduced dims; size-1 dims dropped and
// neighbours merged where the strides allow it.
struct Layout {
    int nk = 0, nr = 0;
    int64_t ks[kMaxDims] = {}, kst[kMaxDims] = {};
    int64_t rs[kMaxDims] = {}, rst[kMaxDims] = {};
    int64_t K = 1, R = 1; // number of outputs, elements per output
};

// Appends dim (size, stride) to the list, merging it into the previous (outer) dim when the
// pair is equivalent to one dim; flat row-major order is preserved either way.
void push_dim(int& n, int64_t* sh, int64_t* st, int64_t size, int64_t stride) {
    if (size == 1) return;
    if (n > 0 && st[n - 1] == stride * size) {
        sh[n - 1] *= size;
        st[n - 1] = stride;
        return;
    }
    sh[n] = size;
    st[n] = stride;
    ++n;
}

Layout make_layout(const View& x, int reduced_dims, bool reorder_reduced) {
    Layout L;
    const int nkeep = x.ndim - reduced_dims;
    for (int d = 0; d < nkeep; ++d) {
        L.K *= x.shape[d];
        push_dim(L.nk, L.ks, L.kst, x.shape[d], x.strides[d]);
    }
    int order[kMaxDims];
    int nred = 0;
    for (int d = nkeep; d < x.ndim; ++d) {
        L.R *= x.shape[d];
        order[nred++] = d;
    }
    if (reorder_reduced) {
        // When no index is reported the order of the reduced dims is free: put the smallest
        // stride innermost (broadcast 0-stride dims outermost) so runs are as contiguous as
        // possible.
        auto key = [&](int d) {
            const int64_t s = x.strides[d] < 0 ? -x.strides[d] : x.strides[d];
            return s == 0 ? std::numeric_limits<int64_t>::max() : s;
        };
        std::stable_sort(order, order + nred, [&](int a, int b) { return key(a) > key(b); });
    }
    for (int i = 0; i < nred; ++i)
        push_dim(L.nr, L.rs, L.rst, x.shape[order[i]], x.strides[order[i]]);
    return L;
}

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

// Outputs per column task: wide enough that each reduced row is read in long contiguous runs,
// small enough that the lane accumulators stay in L1.
constexpr int kChunk = 1024;

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

// ---------------------------------------------------------------------------------------------
// Drivers.

int thread_count(int64_t work) {
    return work >= kParallelGrain ? omp_get_max_threads() : 1;
}

// Reduces flat positions [lo, hi) (hi > lo) of the block at `base` into one state.
template <typename T, typename Op>
MYELIN_INLINE typename Op::State reduce_span(const Op& op, const Layout& L, const T* base,
                                             int64_t lo, int64_t hi) {
    const int64_t n_in = L.rs[L.nr - 1];
    const int64_t s_in = L.rst[L.nr - 1];
    if (L.nr == 1) return op.segment(base + lo * s_in, hi - lo, s_in, lo);
    Counter<1> outer{L.nr - 1, L.rs, {L.rst}};
    outer.seek(lo / n_in);
    int64_t in = lo % n_in;
    int64_t pos = lo;
    typename Op::State st{};
    bool first = true;
    while (pos < hi) {
        const int64_t len = std::min(n_in - in, hi - pos);
        const auto part = op.segment(base + outer.off[0] + in * s_in, len, s_in, pos);
        if (first)
            st = part;
        else
            op.merge(st, part);
        first = false;
        pos += len;
        in = 0;
        outer.next();
    }
    return st;
}

template <typename Op> struct Partial {
    int64_t k = -1; // output, or -1 for an unused slot
    typename Op::State st{};
};

// Reduces flat (output, position) range [g0, g1): outputs covered whole are stored, the (at most
// two) cut at the ends go to partials[0..1].
template <typename T, typename Op>
MYELIN_CLONES void rows_range(const Op& op, const Layout& L, const T* x, int64_t g0, int64_t g1,
                              Partial<Op>* partials) {
    const int64_t R = L.R;
    Counter<1> kept{L.nk, L.ks, {L.kst}};
    int64_t k = g0 / R;
    kept.seek(k);
    int np = 0;
    while (g0 < g1) {
        const int64_t r0 = g0 - k * R;
        const int64_t r1 = std::min(R, g1 - k * R);
        const auto st = reduce_span(op, L, x + kept.off[0], r0, r1);
        if (r0 == 0 && r1 == R)
            op.store(k, st);
        else
            partials[np++] = {k, st};
        g0 = (k + 1) * R;
        ++k;
        kept.next();
    }
}

// Row loop: threads split the flat (output, position) space evenly; outputs covered by one
// thread are stored directly, split ones are merged afterwards in thread order.
template <typename T, typename Op> void reduce_rows(const Op& op, const Layout& L, const T* x) {
    const int64_t total = L.K * L.R;
    const int nt = static_cast<int>(std::min<int64_t>(thread_count(total), total));
    if (nt <= 1) {
        rows_range<T, Op>(op, L, x, 0, total, nullptr);
        return;
    }
    std::vector<Partial<Op>> parts(2 * static_cast<size_t>(nt));
#pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num();
        const int n = omp_get_num_threads();
        const int64_t g0 = total / n * t + std::min<int64_t>(t, total % n);
        const int64_t g1 = g0 + total / n + (t < total % n ? 1 : 0);
        rows_range<T, Op>(op, L, x, g0, g1, &parts[2 * size_t(t)]);
    }
    for (size_t i = 0; i < parts.size();) {
        if (parts[i].k < 0) {
            ++i;
            continue;
        }
        auto st = parts[i].st;
        size_t j = i + 1;
        for (; j < parts.size() && (parts[j].k < 0 || parts[j].k == parts[i].k); ++j)
            if (parts[j].k == parts[i].k) op.merge(st, parts[j].st);
        op.store(parts[i].k, st);
        i = j;
    }
}

// Folds reduced rows [r0, r1) (r1 > r0) of n side-by-side outputs at p into lanes.
template <typename T, typename Op>
MYELIN_CLONES void fold_rows(const Op& op, const Layout& L, const T* p, int n, int64_t r0,
                             int64_t r1, typename Op::Lanes& lanes) {
    Counter<1> rows{L.nr, L.rs, {L.rst}};
    rows.seek(r0);
    op.lanes_begin(lanes, p + rows.off[0], n, r0);
    int64_t r = r0 + 1;
    if constexpr (requires(const T* const* q) { op.lanes_step4(lanes, q, n); }) {
        for (; r + 4 <= r1; r += 4) {
            const T* q[4];
            for (int u = 0; u < 4; ++u) {
                rows.next();
                q[u] = p + rows.off[0];
            }
            op.lanes_step4(lanes, q, n);
        }
    }
    for (; r < r1; ++r) {
        rows.next();
        op.lanes_step(lanes, p + rows.off[0], n, r);
    }
}

// Column loop over kept dim `c` (unit stride): tasks are (other kept position, chunk of c).
template <typename T, typename Op>
void reduce_columns(const Op& op, const Layout& L, const T* x, int c) {
    // Output strides of the (simplified, contiguous) kept shape.
    int64_t ost[kMaxDims];
    for (int d = L.nk - 1; d >= 0; --d)
        ost[d] = d == L.nk - 1 ? 1 : ost[d + 1] * L.ks[d + 1];
    // The other kept dims, in order.
    int no = 0;
    int64_t osh[kMaxDims], oxs[kMaxDims], oos[kMaxDims];
    for (int d = 0; d < L.nk; ++d) {
        if (d == c) continue;
        osh[no] = L.ks[d];
        oxs[no] = L.kst[d];
        oos[no] = ost[d];
        ++no;
    }
    const int64_t width = L.ks[c];
    const int64_t chunks = (width + kChunk - 1) / kChunk;
    int64_t n_outer = 1;
    for (int d = 0; d < no; ++d)
        n_outer *= osh[d];
    const int64_t tasks = n_outer * chunks;
    const int64_t R = L.R;
    const int nt = thread_count(L.K * R);

    auto task_origin = [&](int64_t t, int64_t& xoff, int64_t& ooff, int64_t& j0, int& n) {
        Counter<2> o{no, osh, {oxs, oos}};
        o.seek(t / chunks);
        j0 = (t % chunks) * kChunk;
        n = static_cast<int>(std::min<int64_t>(kChunk, width - j0));
        xoff = o.off[0] + j0;
        ooff = o.off[1] + j0 * ost[c];
    };

    auto whole_task = [&](int64_t t) {
        int64_t xoff, ooff, j0;
        int n;
        task_origin(t, xoff, ooff, j0, n);
        typename Op::Lanes lanes;
        fold_rows<T, Op>(op, L, x + xoff, n, 0, R, lanes);
        for (int j = 0; j < n; ++j)
            op.store(ooff + j * ost[c], op.lanes_state(lanes, j));
    };
    // Splitting one task's rows costs a merge buffer and a second pass over the outputs: only
    // worth it for larger inputs (the [128, 256] bias gradient is faster on one thread).
    const bool split_rows = tasks < nt && R >= 2 * nt && L.K * R >= 4 * kParallelGrain;
    if (nt <= 1 || (tasks < 2 && !split_rows)) {
        for (int64_t t = 0; t < tasks; ++t)
            whole_task(t);
        return;
    }
    if (!split_rows) {
#pragma omp parallel for schedule(static) num_threads(nt)
        for (int64_t t = 0; t < tasks; ++t)
            whole_task(t);
        return;
    }
    // Few tasks but many rows: split the rows of each task across threads, merge in order.
    std::vector<typename Op::State> parts(static_cast<size_t>(nt) * kChunk);
    for (int64_t t = 0; t < tasks; ++t) {
        int64_t xoff, ooff, j0;
        int n;
        task_origin(t, xoff, ooff, j0, n);
        int used = nt;
#pragma omp parallel num_threads(nt)
        {
            const int tid = omp_get_thread_num();
            const int nth = omp_get_num_threads();
#pragma omp single
            used = nth;
            const int64_t r0 = R * tid / nth, r1 = R * (tid + 1) / nth;
            typename Op::Lanes lanes;
            fold_rows<T, Op>(op, L, x + xoff, n, r0, r1, lanes);
            for (int j = 0; j < n; ++j)
                parts[size_t(tid) * kChunk + j] = op.lanes_state(lanes, j);
        }
        for (int j = 0; j < n; ++j) {
            auto st = parts[size_t(j)];
            for (int p = 1; p < used; ++p)
                op.merge(st, parts[size_t(p) * kChunk + j]);
            op.store(ooff + j * ost[c], st);
        }
    }
}

template <typename T, typename Op> void run_reduce(const Op& op, const Layout& L, const View& x) {
    if (L.K == 0) return;
    if (L.R == 0) {
        for (int64_t k = 0; k < L.K; ++k)
            op.store(k, Op::empty());
        return;
    }
    const T* data = static_cast<const T*>(x.data);
    if (L.nr == 0) { // every output reduces one element
        Layout one = L;
        one.nr = 1;
        one.rs[0] = 1;
        one.rst[0] = 1;
        reduce_rows(op, one, data);
        return;
    }
    if (L.rst[L.nr - 1] != 1) {
        // Strided innermost reduced dim: fold whole rows when a kept dim is contiguous and
        // wide enough to fill vector lanes.
        for (int c = L.nk - 1; c >= 0; --c) {
            if (L.kst[c] == 1 && L.ks[c] >= 8) {
                reduce_columns(op, L, data, c);
                return;
            }
        }
    }
    reduce_rows(op, L, data);
}

void check_out(const char* name, const View& x, int reduced_dims, const View& out) {
    if (reduced_dims < 0 || reduced_dims > x.ndim)
        throw ShapeError(std::string(name) + "(): cannot reduce " + std::to_string(reduced_dims) +
                         " dims of a " + std::to_string(x.ndim) + "-d tensor");
    bool ok = out.ndim == x.ndim - reduced_dims && out.is_contiguous();
    for (int d = 0; ok && d < out.ndim; ++d)
        ok = out.shape[d] == x.shape[d];
    if (!ok)
        throw ShapeError(std::string(name) +
                         "(): output must be contiguous with the kept dims of the input");
}

// vals / idx: where Max/Min/ArgMax/ArgMin write values and indices (either may be null).
template <typename T>
void reduce_typed(ReduceOp op, const View& x, int reduced_dims, const View& out, void* vals,
                  int64_t* idx, const OpParams& p) {
    const bool is_minmax = op == ReduceOp::Max || op == ReduceOp::Min || op == ReduceOp::ArgMax ||
                           op == ReduceOp::ArgMin;
    // Without an index to report, the order of the reduced dims is free.
    const Layout L = make_layout(x, reduced_dims, !(is_minmax && idx));
    switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Mean: {
        SumOp<T> s;
        s.mean = op == ReduceOp::Mean;
        s.count = L.R;
        s.out = out.data;
        s.out_dtype = out.dtype;
        return run_reduce<T>(s, L, x);
    }
    case ReduceOp::Max:
    case ReduceOp::ArgMax:
        return run_reduce<T>(MinMaxOp<T, true>{vals, idx}, L, x);
    case ReduceOp::Min:
    case ReduceOp::ArgMin:
        return run_reduce<T>(MinMaxOp<T, false>{vals, idx}, L, x);
    default:
        break;
    }
    if constexpr (std::is_floating_point_v<T>) {
        T* o = static_cast<T*>(out.data);
        switch (op) {
        case ReduceOp::Var:
            return run_reduce<T>(VarOp<T>{p.a, o}, L, x);
        case ReduceOp::Norm: {
            NormOp<T> n;
            n.p = p.a;
            n.out = o;
            if (p.a == 2.0)
                n.kind = NormKind::Two;
            else if (p.a == 1.0)
                n.kind = NormKind::One;
            else if (p.a == 0.0)
                n.kind = NormKind::Zero;
            else if (p.a == kInf)
                n.kind = NormKind::Inf;
            else if (p.a == -kInf)
                n.kind = NormKind::NegInf;
            else
                n.kind = NormKind::P;
            return run_reduce<T>(n, L, x);
        }
        case ReduceOp::LogSumExp:
            return run_reduce<T>(LogSumExpOp<T>{o}, L, x);
        default:
            break;
        }
    }
    throw Error(std::string(reduce_name(op)) + "(): unsupported reduce op for dtype " +
                dtype_name(x.dtype));
}

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

void CpuBackend::reduce(ReduceOp op, const View& x, int reduced_dims, const View& out,
                        const View* indices, const OpParams& p) {
    const char* name = reduce_name(op);
    check_out(name, x, reduced_dims, out);
    const bool is_arg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
    const bool is_minmax = is_arg || op == ReduceOp::Max || op == ReduceOp::Min;
    if (indices) {
        if (indices->dtype != DType::Int64)
            throw DTypeError(std::string(name) + "(): indices must be int64, got " +
                             dtype_name(indices->dtype));
        bool ok = indices->ndim == out.ndim && indices->is_contiguous();
        for (int d = 0; ok && d < out.ndim; ++d)
            ok = indices->shape[d] == out.shape[d];
        if (!ok)
            throw ShapeError(std::string(name) +
                             "(): indices must be contiguous with the output's shape");
    }
    const bool int_ok = op == ReduceOp::Sum || op == ReduceOp::Mean || is_minmax;
    const bool dtype_ok = x.dtype == DType::Float32 || x.dtype == DType::Float64 ||
                          (x.dtype == DType::Int64 && int_ok);
    if (!dtype_ok)
        throw_dtype(name, x.dtype,
                    int_ok ? "expected float32, float64 or int64" : "expected float32 or float64");

    // Where results go. ArgMax/ArgMin: an int64 `out` receives the indices (also copied to
    // `indices` when that is a separate view); otherwise `out` receives the values and
    // `indices` (required) the indices. An int64 mean may be written as float32/float64.
    void* vals = nullptr;
    int64_t* idx = indices ? static_cast<int64_t*>(indices->data) : nullptr;
    int64_t* idx_copy = nullptr;
    DType want = x.dtype;
    if (is_arg && (out.dtype == DType::Int64 || !indices)) {
        want = DType::Int64;
        if (idx && idx != out.data) idx_copy = idx;
        idx = static_cast<int64_t*>(out.data);
    } else if (is_minmax) {
        vals = out.data;
    } else if (op == ReduceOp::Mean && x.dtype == DType::Int64 && is_floating(out.dtype)) {
        want = out.dtype == DType::Float64 ? DType::Float64 : DType::Float32;
    }
    if (out.dtype != want)
        throw DTypeError(std::string(name) + "(): output dtype " + dtype_name(out.dtype) +
                         " does not match the expected " + dtype_name(want));

    int64_t R = 1;
    for (int d = x.ndim - reduced_dims; d < x.ndim; ++d)
        R *= x.shape[d];
    if (R == 0) {
        if (is_minmax)
            throw IndexError(std::string(name) + "(): cannot reduce over a zero-size dimension");
        if (op == ReduceOp::Norm && std::isinf(p.a))
            throw IndexError(std::string("norm(): cannot compute the ") +
                             (p.a > 0 ? "inf" : "-inf") + " norm over a zero-size dimension");
    }

    switch (x.dtype) {
    case DType::Float32:
        reduce_typed<float>(op, x, reduced_dims, out, vals, idx, p);
        break;
    case DType::Float64:
        reduce_typed<double>(op, x, reduced_dims, out, vals, idx, p);
        break;
    default:
        reduce_typed<int64_t>(op, x, reduced_dims, out, vals, idx, p);
        break;
    }
    if (idx_copy) std::memcpy(idx_copy, idx, sizeof(int64_t) * size_t(out.numel()));
}

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
