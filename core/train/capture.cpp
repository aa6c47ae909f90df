// Tensor summaries and norms for the trainer's capture. The values are read as float or double
// straight from host memory; everything else (other dtypes, strides, devices) is converted first.
// Work is split into fixed 64k-element chunks whose partial results are combined in chunk order:
// the split does not depend on the thread count, so neither do the results.
#include <myelin/error.h>
#include <myelin/tensor.h>
#include <myelin/train/capture.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

// No a * b + c contracted into an FMA: results (bin edges above all) are the same in a
// -march=native build, a portable one and numpy.
#pragma GCC optimize("fp-contract=off")

namespace myelin::train {

namespace {

constexpr int64_t kChunk = int64_t(1) << 16;

int64_t chunk_count(int64_t n) {
    return (n + kChunk - 1) / kChunk;
}

// Float32 and float64 are read in place; the rest are converted (int64 to float64, which is exact
// up to 2^53; half types, uint8 and bool to float32). Detached, so no autograd node is recorded.
Tensor host_values(const Tensor& x) {
    if (!x.defined()) throw Error("tensor capture: the tensor is undefined");
    const bool readable = x.device().is_cpu() && x.is_contiguous() &&
                          (x.dtype() == DType::Float32 || x.dtype() == DType::Float64);
    if (readable) return x;
    Tensor h = x.detach().to(kCPU);
    const DType wide =
        h.dtype() == DType::Float64 || h.dtype() == DType::Int64 ? DType::Float64 : DType::Float32;
    return h.to(wide).contiguous();
}

// Calls fn(begin, length, chunk_index) for every chunk, on the OpenMP team when there are several.
template <typename F> void for_each_chunk(int64_t n, F&& fn) {
    const int64_t chunks = chunk_count(n);
#pragma omp parallel for schedule(static) if (chunks > 1)
    for (int64_t c = 0; c < chunks; ++c) {
        const int64_t begin = c * kChunk;
        fn(begin, std::min(kChunk, n - begin), c);
    }
}

template <typename T> bool is_finite_value(T v) {
    return std::abs(v) <= std::numeric_limits<T>::max(); // false for NaN and ±Inf; vectorises
}

struct Moments {
    int64_t finite = 0;
    int64_t nan = 0;
    int64_t zero = 0;
    double sum = 0.0;
    double min = std::numeric_limits<double>::infinity();
    double max = -std::numeric_limits<double>::infinity();
};

// Both passes work on each value widened to double first, and count in doubles (exact far beyond
// a chunk's 64k): every lane of the vectorised loops is then a double, which GCC vectorises
// cleanly (float masks selecting double lanes, or bool-to-int64 counters, it does not, or badly).
// The common case, all values finite, takes one lean loop; a chunk holding NaN or Inf takes a
// second one for the NaN count and the finite-only min/max.
template <typename T> Moments first_pass(const T* x, int64_t n) {
    constexpr double inf = std::numeric_limits<double>::infinity();
    double finite = 0.0, zero = 0.0, sum = 0.0, lo = inf, hi = -inf;
#pragma omp simd reduction(+ : finite, zero, sum) reduction(min : lo) reduction(max : hi)
    for (int64_t i = 0; i < n; ++i) {
        const double v = static_cast<double>(x[i]);
        const bool fin = is_finite_value(v);
        finite += fin ? 1.0 : 0.0;
        zero += v == 0.0 ? 1.0 : 0.0;
        sum += fin ? v : 0.0;
        lo = std::min(lo, v); // Inf included (NaN is not): redone below when present
        hi = std::max(hi, v);
    }
    double nan = 0.0;
    if (finite != static_cast<double>(n)) {
        lo = inf;
        hi = -inf;
#pragma omp simd reduction(+ : nan) reduction(min : lo) reduction(max : hi)
        for (int64_t i = 0; i < n; ++i) {
            const double v = static_cast<double>(x[i]);
            const bool fin = is_finite_value(v);
            nan += v != v ? 1.0 : 0.0;
            lo = std::min(lo, fin ? v : inf);
            hi = std::max(hi, fin ? v : -inf);
        }
    }
    return {static_cast<int64_t>(finite),
            static_cast<int64_t>(nan),
            static_cast<int64_t>(zero),
            sum,
            lo,
            hi};
}

template <typename T> double squared_deviations(const T* x, int64_t n, double mean) {
    double m2 = 0.0;
#pragma omp simd reduction(+ : m2)
    for (int64_t i = 0; i < n; ++i) {
        const double v = static_cast<double>(x[i]);
        const double d = is_finite_value(v) ? v - mean : 0.0;
        m2 += d * d;
    }
    return m2;
}

// numpy.histogram's binning: each finite value goes to the bin k with edges[k] <= v <
// edges[k + 1] (the last bin also takes v == high), judged against the edges themselves, so a
// value on an edge lands in the bin that edge opens whatever the rounding.
template <typename T>
int64_t bin_against_edges(T raw, double scale, const double* edges, int64_t bins) {
    const double v = static_cast<double>(raw);
    int64_t k = std::min(static_cast<int64_t>((v - edges[0]) * scale), bins - 1);
    while (k > 0 && v < edges[k])
        --k;
    while (k + 1 < bins && v >= edges[k + 1])
        ++k;
    return k;
}

// The scaled offset (v - low) * scale gives the bin directly unless the value lies within
// rounding distance of an edge. A vectorised loop computes it a block at a time and flags those
// few values (-1) and the non-finite ones (`bins`, a slot that is never read); the scalar loop
// counts, placing flagged values against the edges.
template <typename T>
void bin_values(const T* x, int64_t n, const std::vector<double>& edges, int64_t* counts) {
    constexpr int64_t kBlock = 1024;
    const int64_t bins = static_cast<int64_t>(edges.size()) - 1;
    const double low = edges.front(), high = edges.back();
    const double scale = static_cast<double>(bins) / (high - low);
    // In bins: bounds the rounding of v - low, of the scaling and of the edges (generously).
    const double margin = 16.0 * std::numeric_limits<double>::epsilon() *
                          (std::max(std::abs(low), std::abs(high)) * scale + double(bins));
    const double off_centre_limit = 0.5 - margin;
    const double top = static_cast<double>(bins);
    int64_t index[kBlock];
    for (int64_t begin = 0; begin < n; begin += kBlock) {
        const int64_t length = std::min(kBlock, n - begin);
        const T* block = x + begin;
        // Written without branches or conditional arithmetic so that GCC vectorises it: min/max
        // keep the position in [0, bins] even for NaN and Inf, whose slot is chosen last.
#pragma omp simd
        for (int64_t i = 0; i < length; ++i) {
            const double v = static_cast<double>(block[i]);
            const double position = std::min(top, std::max(0.0, (v - low) * scale));
            const int64_t k = static_cast<int64_t>(position);
            const double off_centre = std::abs(position - static_cast<double>(k) - 0.5);
            const int64_t slot = off_centre > off_centre_limit ? -1 : k;
            index[i] = is_finite_value(v) ? slot : bins;
        }
        for (int64_t i = 0; i < length; ++i) {
            const int64_t k = index[i];
            ++counts[k >= 0 ? k : bin_against_edges(block[i], scale, edges.data(), bins)];
        }
    }
}

std::vector<double> equal_edges(double low, double high, int64_t bins) {
    std::vector<double> edges(static_cast<size_t>(bins) + 1);
    const double step = (high - low) / static_cast<double>(bins);
    for (int64_t k = 0; k < bins; ++k)
        edges[static_cast<size_t>(k)] = low + static_cast<double>(k) * step;
    edges.back() = high;
    return edges;
}

template <typename T> TensorSummary summarize_values(const T* x, int64_t n, int bins) {
    TensorSummary s;
    s.numel = n;
    s.histogram.assign(static_cast<size_t>(bins), 0);
    if (n == 0) return s;

    const int64_t chunks = chunk_count(n);
    std::vector<Moments> parts(static_cast<size_t>(chunks));
    for_each_chunk(n, [&](int64_t begin, int64_t length, int64_t c) {
        parts[static_cast<size_t>(c)] = first_pass(x + begin, length);
    });
    double sum = 0.0;
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const Moments& p : parts) {
        s.finite_count += p.finite;
        s.nan_count += p.nan;
        s.zero_count += p.zero;
        sum += p.sum;
        lo = std::min(lo, p.min);
        hi = std::max(hi, p.max);
    }
    s.inf_count = n - s.finite_count - s.nan_count;
    if (s.finite_count == 0) return s;

    s.mean = sum / static_cast<double>(s.finite_count);
    s.min = lo;
    s.max = hi;
    s.hist_low = s.min;
    s.hist_high = s.max;
    if (s.hist_low == s.hist_high) {
        s.hist_low -= 0.5;
        s.hist_high += 0.5;
    }
    const std::vector<double> edges = equal_edges(s.hist_low, s.hist_high, bins);

    // Histogram counts are integers, so per-thread tables add up the same in any order.
    const int threads = chunks > 1 ? omp_get_max_threads() : 1;
    const size_t slots = static_cast<size_t>(bins) + 1; // + the non-finite slot
    std::vector<int64_t> thread_counts(static_cast<size_t>(threads) * slots);
    std::vector<double> m2(static_cast<size_t>(chunks));
#pragma omp parallel num_threads(threads) if (chunks > 1)
    {
        int64_t* counts = thread_counts.data() + static_cast<size_t>(omp_get_thread_num()) * slots;
#pragma omp for schedule(static)
        for (int64_t c = 0; c < chunks; ++c) {
            const int64_t begin = c * kChunk;
            const int64_t length = std::min(kChunk, n - begin);
            m2[static_cast<size_t>(c)] = squared_deviations(x + begin, length, s.mean);
            bin_values(x + begin, length, edges, counts);
        }
    }
    double total_m2 = 0.0;
    for (double p : m2)
        total_m2 += p;
    s.std =
        s.finite_count > 1 ? std::sqrt(total_m2 / static_cast<double>(s.finite_count - 1)) : 0.0;
    for (size_t t = 0; t < static_cast<size_t>(threads); ++t)
        for (size_t b = 0; b < static_cast<size_t>(bins); ++b)
            s.histogram[b] += thread_counts[t * slots + b];
    return s;
}

template <typename T> double sum_of_squares_chunk(const T* x, int64_t n) {
    double s = 0.0;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i) {
        const double v = static_cast<double>(x[i]);
        s += v * v;
    }
    return s;
}

template <typename T> double sum_of_squares_values(const T* x, int64_t n) {
    if (n <= kChunk) return sum_of_squares_chunk(x, n);
    std::vector<double> parts(static_cast<size_t>(chunk_count(n)));
    for_each_chunk(n, [&](int64_t begin, int64_t length, int64_t c) {
        parts[static_cast<size_t>(c)] = sum_of_squares_chunk(x + begin, length);
    });
    double s = 0.0;
    for (double p : parts)
        s += p;
    return s;
}

template <typename T> UpdateSquares update_chunk(const T* before, const T* after, int64_t n) {
    double update = 0.0, weight = 0.0;
#pragma omp simd reduction(+ : update, weight)
    for (int64_t i = 0; i < n; ++i) {
        const double b = static_cast<double>(before[i]);
        const double d = static_cast<double>(after[i]) - b;
        update += d * d;
        weight += b * b;
    }
    return {update, weight};
}

template <typename T>
UpdateSquares update_squares_values(const T* before, const T* after, int64_t n) {
    if (n <= kChunk) return update_chunk(before, after, n);
    std::vector<UpdateSquares> parts(static_cast<size_t>(chunk_count(n)));
    for_each_chunk(n, [&](int64_t begin, int64_t length, int64_t c) {
        parts[static_cast<size_t>(c)] = update_chunk(before + begin, after + begin, length);
    });
    UpdateSquares total;
    for (const UpdateSquares& p : parts)
        total += p;
    return total;
}

} // namespace

std::vector<double> TensorSummary::bin_edges() const {
    if (histogram.empty()) return {};
    return equal_edges(hist_low, hist_high, static_cast<int64_t>(histogram.size()));
}

TensorSummary summarize(const Tensor& x, int bins) {
    if (bins < 1)
        throw Error("summarize: the histogram needs at least 1 bin, got " + std::to_string(bins));
    const Tensor h = host_values(x);
    if (h.dtype() == DType::Float64) return summarize_values(h.data<double>(), h.numel(), bins);
    return summarize_values(h.data<float>(), h.numel(), bins);
}

namespace {
template <typename T> MagnitudeStats magnitude_chunk(const T* x, int64_t n) {
    double squares = 0.0, abs_sum = 0.0, top = 0.0;
#pragma omp simd reduction(+ : squares, abs_sum) reduction(max : top)
    for (int64_t i = 0; i < n; ++i) {
        const double v = static_cast<double>(x[i]);
        squares += v * v;
        abs_sum += std::fabs(v);
        top = std::max(top, std::fabs(v));
    }
    return {squares, abs_sum, top, n};
}
template <typename T> MagnitudeStats magnitude_values(const T* x, int64_t n) {
    if (n <= kChunk) return magnitude_chunk(x, n);
    std::vector<MagnitudeStats> parts(static_cast<size_t>(chunk_count(n)));
    for_each_chunk(n, [&](int64_t begin, int64_t length, int64_t c) {
        parts[static_cast<size_t>(c)] = magnitude_chunk(x + begin, length);
    });
    MagnitudeStats s;
    for (const auto& p : parts)
        s += p;
    return s;
}
} // namespace

MagnitudeStats& MagnitudeStats::operator+=(const MagnitudeStats& other) {
    sum_squares += other.sum_squares;
    sum_abs += other.sum_abs;
    // A NaN anywhere makes the maximum NaN (std::max would drop it on one side).
    max_abs = std::isnan(other.max_abs) || std::isnan(max_abs) ? std::nan("")
                                                               : std::max(max_abs, other.max_abs);
    count += other.count;
    return *this;
}

MagnitudeStats magnitude_stats(const Tensor& x) {
    const Tensor h = host_values(x);
    if (h.dtype() == DType::Float64) return magnitude_values(h.data<double>(), h.numel());
    return magnitude_values(h.data<float>(), h.numel());
}

double sum_of_squares(const Tensor& x) {
    const Tensor h = host_values(x);
    if (h.dtype() == DType::Float64) return sum_of_squares_values(h.data<double>(), h.numel());
    return sum_of_squares_values(h.data<float>(), h.numel());
}

double l2_norm(const Tensor& x) {
    return std::sqrt(sum_of_squares(x));
}

double UpdateSquares::ratio() const {
    return weight > 0.0 ? std::sqrt(update / weight) : 0.0;
}

UpdateSquares update_squares(const Tensor& before, const Tensor& after) {
    if (!before.defined() || !after.defined())
        throw Error("update_squares: the weights before and after the step must be defined");
    if (!(before.shape() == after.shape()))
        throw ShapeError("update_squares: the weights before the step " + before.shape().str() +
                         " and after it " + after.shape().str() + " differ in shape");
    Tensor b = host_values(before), a = host_values(after);
    if (a.dtype() != b.dtype()) { // compare mixed precisions in the wider one
        a = a.detach().to(DType::Float64);
        b = b.detach().to(DType::Float64);
    }
    if (a.dtype() == DType::Float64)
        return update_squares_values(b.data<double>(), a.data<double>(), a.numel());
    return update_squares_values(b.data<float>(), a.data<float>(), a.numel());
}

Tensor snapshot(const Tensor& x) {
    if (!x.defined()) throw Error("snapshot: the tensor is undefined");
    const Tensor detached = x.detach();
    // A device-to-host copy is already fresh; on the host, clone() copies into a new buffer.
    return detached.device().is_cpu() ? detached.clone() : detached.to(kCPU);
}

} // namespace myelin::train
