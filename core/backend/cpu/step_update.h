#pragma once
// The threading of the CPU optimizers' element-wise updates, and the statistics they gather
// (UpdateStatsOut).
// An update kernel is a serial loop over a range, `update(begin, count)`; run_update splits
// [0, n) into one contiguous range per thread (as `omp parallel for schedule(static)` did), so
// every element gets the same arithmetic whether or not statistics are gathered, and on any
// thread count.
//
// With statistics, each thread walks its range in chunks small enough to stay in the L1/L2 cache:
// it sums the chunk's gradient and weights, keeps a copy of the weights on the stack, runs the
// update on the chunk and sums the change. The sums read data the update is about to touch or
// has just touched, so the trainer's per-layer norms and update ratios cost no pass over memory
// and no copy of the model. With `grad_squares_only` (the trainer's steps without layer norms,
// where Σg² is only the non-finite check) it sums g² alone: no copy, no second read of the weights.
#include "backend/train_kernels.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace myelin::backend::step_update {

// Below this many elements a thread team costs more than it saves.
constexpr int64_t kParallelElements = 1 << 16;

// Per-lane partial sums of one chunk: independent lanes, so the loops vectorise without
// reassociating a single accumulator (this file is compiled without -ffast-math).
// One thread's statistics of an update, in double (UpdateStatsOut's five sums).
struct Sums {
    double grad_squares = 0.0, grad_abs = 0.0, grad_max_abs = 0.0, weight_squares = 0.0,
           update_squares = 0.0;
};

// The larger, or NaN when either is: a NaN gradient shows in max|g| wherever it is.
inline double nan_max(double a, double b) {
    if (a != a) return a;
    if (b != b) return b;
    return b > a ? b : a;
}

template <typename T> struct LaneSums {
    static constexpr int kLanes = 64 / int(sizeof(T));
    T grad_squares[kLanes] = {};
    T grad_abs[kLanes] = {};
    T grad_max[kLanes] = {};
    T weight_squares[kLanes] = {};
    T update_squares[kLanes] = {};

    void add_before(const T* __restrict g, const T* __restrict w, int64_t count) {
        int64_t i = 0;
        for (; i + kLanes <= count; i += kLanes)
            for (int j = 0; j < kLanes; ++j) {
                const T gv = g[i + j], wv = w[i + j], ga = std::abs(gv);
                grad_squares[j] += gv * gv;
                grad_abs[j] += ga;
                grad_max[j] = ga > grad_max[j] || ga != ga ? ga : grad_max[j]; // NaN stays
                weight_squares[j] += wv * wv;
            }
        for (int j = 0; i < count; ++i, ++j) {
            const T gv = g[i], wv = w[i], ga = std::abs(gv);
            grad_squares[j] += gv * gv;
            grad_abs[j] += ga;
            grad_max[j] = ga > grad_max[j] || ga != ga ? ga : grad_max[j];
            weight_squares[j] += wv * wv;
        }
    }
    void add_grad_squares(const T* __restrict g, int64_t count) {
        int64_t i = 0;
        for (; i + kLanes <= count; i += kLanes)
            for (int j = 0; j < kLanes; ++j)
                grad_squares[j] += g[i + j] * g[i + j];
        for (int j = 0; i < count; ++i, ++j)
            grad_squares[j] += g[i] * g[i];
    }
    void add_change(const T* __restrict before, const T* __restrict after, int64_t count) {
        int64_t i = 0;
        for (; i + kLanes <= count; i += kLanes)
            for (int j = 0; j < kLanes; ++j) {
                const T d = after[i + j] - before[i + j];
                update_squares[j] += d * d;
            }
        for (int j = 0; i < count; ++i, ++j) {
            const T d = after[i] - before[i];
            update_squares[j] += d * d;
        }
    }
    // Adds the lanes into `out` (double) and clears them.
    void flush(Sums& out) {
        for (int j = 0; j < kLanes; ++j) {
            out.grad_squares += double(grad_squares[j]);
            out.grad_abs += double(grad_abs[j]);
            out.grad_max_abs = nan_max(out.grad_max_abs, double(grad_max[j]));
            out.weight_squares += double(weight_squares[j]);
            out.update_squares += double(update_squares[j]);
        }
        *this = LaneSums();
    }
};

// [begin, begin + count) of thread `t` of `threads` over n elements.
inline void thread_range(int64_t n, int t, int threads, int64_t& begin, int64_t& count) {
    const int64_t base = n / threads, extra = n % threads;
    begin = int64_t(t) * base + std::min<int64_t>(t, extra);
    count = base + (t < extra ? 1 : 0);
}

// Runs `update(begin, count)` over [0, n) of the weights `w` with gradient `g`; writes the
// statistics to stats->sums (host memory) when stats is not null (the per-thread sums are added
// in thread order, so the statistics are deterministic too).
template <typename T, typename Update>
void run_update(T* w, const T* g, int64_t n, const UpdateStatsOut* stats, const Update& update) {
    if (!stats) {
#pragma omp parallel if (n >= kParallelElements)
        {
            int64_t begin = 0, count = 0;
            thread_range(n, omp_get_thread_num(), omp_get_num_threads(), begin, count);
            if (count > 0) update(begin, count);
        }
        return;
    }
    constexpr int64_t kChunk = 2048;
    const bool grad_squares_only = stats->grad_squares_only;
    const bool parallel = n >= kParallelElements;
    std::vector<Sums> parts(size_t(parallel ? omp_get_max_threads() : 1));
#pragma omp parallel if (parallel)
    {
        int64_t begin = 0, count = 0;
        const int t = omp_get_thread_num();
        thread_range(n, t, omp_get_num_threads(), begin, count);
        LaneSums<T> lanes;
        alignas(64) T saved[kChunk];
        for (int64_t c = begin; c < begin + count; c += kChunk) {
            const int64_t len = std::min(kChunk, begin + count - c);
            if (grad_squares_only) { // Σg² alone: no copy of the weights, no second read
                lanes.add_grad_squares(g + c, len);
                update(c, len);
            } else {
                lanes.add_before(g + c, w + c, len);
                std::copy(w + c, w + c + len, saved);
                update(c, len);
                lanes.add_change(saved, w + c, len);
            }
            lanes.flush(parts[size_t(t)]);
        }
    }
    Sums total;
    for (const Sums& part : parts) {
        total.grad_squares += part.grad_squares;
        total.grad_abs += part.grad_abs;
        total.grad_max_abs = nan_max(total.grad_max_abs, part.grad_max_abs);
        total.weight_squares += part.weight_squares;
        total.update_squares += part.update_squares;
    }
    double* out = static_cast<double*>(stats->sums.data);
    out[0] = total.grad_squares;
    out[1] = total.grad_abs;
    out[2] = total.grad_max_abs;
    out[3] = total.weight_squares;
    out[4] = total.update_squares;
}

} // namespace myelin::backend::step_update
