#pragma once
// Internal to the CPU reduction and softmax kernels (cpu_reduce.cpp, cpu_softmax.cpp): what both
// share. The target_clones macro, NaN-aware comparisons, the vectorisable building blocks
// (compensated lane sums, lane extremes, exp), the column chunk width and the thread count.
// Everything is in an unnamed namespace: each kernel file compiles its own copy with its flags.
#include "backend/cpu/cpu_backend.h"
#include "backend/kernels/elementwise.h"

#include <myelin/error.h>

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

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

// Outputs per column task: wide enough that each reduced row is read in long contiguous runs,
// small enough that the lane accumulators stay in L1.
constexpr int kChunk = 1024;

int thread_count(int64_t work) {
    return work >= kParallelGrain ? omp_get_max_threads() : 1;
}

} // namespace
} // namespace myelin::backend
