// Quantization parameters and observers, computed step by step as PyTorch 1.13's
// torch/ao/quantization/observer.py computes them with float32 tensors (each operation rounded
// to float32; Python scalars in an expression with a float32 tensor are rounded to float32
// first) and ATen's ChooseQuantizationParams (double intermediates).
#include "tensor/tensor_impl.h"

#include <myelin/error.h>
#include <myelin/quant/quantize.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

// Each float32 operation rounds on its own, as PyTorch's separate tensor ops do: no fused
// multiply-adds (the core is built with -march=native, where GCC would contract a * b + c).
#pragma GCC optimize("fp-contract=off")

namespace myelin::quant {

namespace {

// torch.round / nearbyint: ties to even (the default rounding mode).
float round_even(float v) {
    return std::nearbyint(v);
}

// The float32 values of a float32 CPU tensor (contiguous copy when needed).
Tensor float_input(const Tensor& x, const char* op) {
    if (!x.defined()) throw Error(std::string(op) + ": undefined tensor");
    if (x.dtype() != DType::Float32)
        throw DTypeError(std::string(op) + ": expected float32, got " + dtype_name(x.dtype()));
    if (!x.device().is_cpu()) throw DeviceError(std::string(op) + ": expected a CPU tensor");
    return x.detach().contiguous();
}

// torch.aminmax (NaN propagates).
std::pair<float, float> aminmax(const Tensor& c) {
    const float* p = c.data<float>();
    float lo = p[0], hi = p[0];
    for (int64_t i = 1, n = c.numel(); i < n; ++i) {
        if (std::isnan(p[i]) || std::isnan(lo)) {
            lo = hi = NAN;
            break;
        }
        lo = std::min(lo, p[i]);
        hi = std::max(hi, p[i]);
    }
    return {lo, hi};
}

bool uninitialized(float lo, float hi) {
    return std::isinf(lo) && lo > 0 && std::isinf(hi) && hi < 0;
}

// torch.histc(x, bins, min, max) on the CPU (ATen's histogramdd with linear bin search and a
// local correction against float32 linspace edges). A degenerate range takes x's own, then
// widens by 1 on each side; values outside the range are not counted.
std::vector<float> histc(const Tensor& x, int64_t bins, double lo, double hi) {
    const float* p = x.data<float>();
    const int64_t n = x.numel();
    if (lo == hi) {
        const auto [a, b] = aminmax(x);
        lo = a;
        hi = b;
    }
    if (lo == hi) {
        lo -= 1;
        hi += 1;
    }
    // at::linspace in float32: the first half from start, the second from end.
    std::vector<float> edges(size_t(bins + 1));
    const float start = float(lo), end = float(hi);
    const float step = (end - start) / float(bins);
    const int64_t halfway = (bins + 1) / 2;
    for (int64_t i = 0; i <= bins; ++i)
        edges[size_t(i)] = i < halfway ? start + step * float(i) : end - step * float(bins - i);
    const float left = edges.front(), right = edges.back();
    std::vector<float> hist(size_t(bins), 0.0f);
    for (int64_t i = 0; i < n; ++i) {
        const float e = p[i];
        if (!(e >= left && e <= right)) continue;
        int64_t pos = int64_t((e - left) * float(bins) / (right - left));
        const int64_t pos_min = std::max<int64_t>(0, pos - 1);
        const int64_t pos_max = std::min<int64_t>(pos + 2, bins + 1);
        pos = std::upper_bound(edges.begin() + pos_min, edges.begin() + pos_max, e) -
              edges.begin() - 1;
        if (pos == bins) pos -= 1;
        hist[size_t(pos)] += 1.0f;
    }
    return hist;
}

// Python's int() of a float: truncation toward zero.
double py_int(float v) {
    return std::trunc(double(v));
}

// torch.div(a, b, rounding_mode='floor') for float32 (ATen's div_floor).
float div_floor(float a, float b) {
    if (b == 0.0f) return a / b;
    const float mod = std::fmod(a, b);
    float div = (a - mod) / b;
    if (mod != 0.0f && (b < 0.0f) != (mod < 0.0f)) div -= 1.0f;
    if (div == 0.0f) return std::copysign(0.0f, a / b);
    float floordiv = std::floor(div);
    if (div - floordiv > 0.5f) floordiv += 1.0f;
    return floordiv;
}

// HistogramObserver._get_norm: density * (end^3 - begin^3) / 3, in float32.
float l2_norm(float begin, float end, float density) {
    const float e3 = end * end * end;
    const float b3 = begin * begin * begin;
    return density * ((e3 - b3) / 3.0f);
}

} // namespace

// ---------------------------------------------------------------------------------------------

QParams affine_qparams(float min, float max, int64_t qmin, int64_t qmax) {
    if (uninitialized(min, max)) return {1.0f, 0};
    if (!(min <= max))
        throw Error("affine_qparams: min " + std::to_string(min) + " is greater than max " +
                    std::to_string(max));
    const float min_neg = std::min(min, 0.0f);
    const float max_pos = std::max(max, 0.0f);
    float scale = (max_pos - min_neg) / float(qmax - qmin);
    scale = std::max(scale, FLT_EPSILON);
    int64_t zp = qmin - int64_t(round_even(min_neg / scale));
    zp = std::clamp(zp, qmin, qmax);
    return {scale, int32_t(zp)};
}

float symmetric_scale(float min, float max, int64_t qmin, int64_t qmax) {
    if (uninitialized(min, max)) return 1.0f;
    const float min_neg = std::min(min, 0.0f);
    const float max_pos = std::max(std::max(max, 0.0f), -min_neg);
    const float scale = max_pos / float(double(qmax - qmin) / 2);
    return std::max(scale, FLT_EPSILON);
}

QParams choose_qparams(float min, float max, int64_t qmin, int64_t qmax, bool reduce_range) {
    if (!(min <= max)) throw Error("choose_qparams: min should be less than or equal to max");
    if (reduce_range) {
        qmin /= 2;
        qmax /= 2;
    }
    min = std::min(min, 0.0f);
    max = std::max(max, 0.0f);
    double scale = (double(max) - min) / double(qmax - qmin);
    if (float(scale) == 0.0f || std::isinf(1.0f / float(scale))) scale = 0.1;
    constexpr float kSmallScale = 6.1e-5f; // ATen's SMALL_SCALE_THRESHOLD
    if (scale < kSmallScale) {
        const float org_scale = float(scale);
        scale = kSmallScale;
        if (min == 0.0f) {
            max = kSmallScale * float(qmax - qmin);
        } else if (max == 0.0f) {
            min = -kSmallScale * float(qmax - qmin);
        } else {
            const float amplifier = kSmallScale / org_scale;
            min *= amplifier;
            max *= amplifier;
        }
    }
    const double zp_from_min = double(qmin) - min / scale;
    const double zp_from_max = double(qmax) - max / scale;
    // ATen compares these "errors" (sic: a difference of absolute values).
    const double zp_from_min_error = std::abs(double(qmin)) - std::abs(min / scale);
    const double zp_from_max_error = std::abs(double(qmax)) - std::abs(max / scale);
    const double initial = zp_from_min_error < zp_from_max_error ? zp_from_min : zp_from_max;
    int32_t zp = 0;
    if (initial < double(qmin))
        zp = int32_t(qmin);
    else if (initial > double(qmax))
        zp = int32_t(qmax);
    else
        zp = int32_t(std::nearbyint(initial));
    return {float(scale), zp};
}

// ---------------------------------------------------------------------------------------------

std::string_view observer_kind_name(ObserverKind kind) {
    switch (kind) {
    case ObserverKind::MinMax:
        return "minmax";
    case ObserverKind::MovingAverageMinMax:
        return "moving-average";
    case ObserverKind::Histogram:
        return "histogram";
    }
    return "minmax";
}

std::optional<ObserverKind> parse_observer_kind(std::string_view name) {
    for (ObserverKind k : observer_kinds())
        if (observer_kind_name(k) == name) return k;
    return std::nullopt;
}

const std::vector<ObserverKind>& observer_kinds() {
    static const std::vector<ObserverKind> kinds = {
        ObserverKind::MinMax, ObserverKind::MovingAverageMinMax, ObserverKind::Histogram};
    return kinds;
}

std::unique_ptr<Observer> make_observer(ObserverKind kind) {
    switch (kind) {
    case ObserverKind::MinMax:
        return std::make_unique<MinMaxObserver>();
    case ObserverKind::MovingAverageMinMax:
        return std::make_unique<MovingAverageMinMaxObserver>();
    case ObserverKind::Histogram:
        return std::make_unique<HistogramObserver>();
    }
    throw Error("make_observer: unknown observer kind");
}

void MinMaxObserver::observe(const Tensor& x) {
    if (x.numel() == 0) return;
    const auto [lo, hi] = aminmax(float_input(x, "MinMaxObserver"));
    // torch.min / torch.max of two tensors propagate NaN.
    min_ = std::isnan(lo) || std::isnan(min_) ? NAN : std::min(lo, min_);
    max_ = std::isnan(hi) || std::isnan(max_) ? NAN : std::max(hi, max_);
}

QParams MinMaxObserver::qparams() const {
    return affine_qparams(min_, max_);
}

void MovingAverageMinMaxObserver::observe(const Tensor& x) {
    if (x.numel() == 0) return;
    const auto [lo, hi] = aminmax(float_input(x, "MovingAverageMinMaxObserver"));
    if (uninitialized(min_, max_)) {
        min_ = lo;
        max_ = hi;
        return;
    }
    const float dmin = lo - min_, dmax = hi - max_;
    const float smin = averaging_constant_ * dmin, smax = averaging_constant_ * dmax;
    min_ = min_ + smin;
    max_ = max_ + smax;
}

QParams MovingAverageMinMaxObserver::qparams() const {
    return affine_qparams(min_, max_);
}

// ---------------------------------------------------------------------------------------------

HistogramObserver::HistogramObserver(int64_t bins, int64_t upsample_rate)
    : bins_(bins), upsample_rate_(upsample_rate), histogram_(size_t(bins), 0.0f) {
    if (bins < 1 || upsample_rate < 1)
        throw Error("HistogramObserver: bins and upsample_rate must be positive");
}

void HistogramObserver::observe(const Tensor& input) {
    if (input.numel() == 0) return;
    const Tensor x = float_input(input, "HistogramObserver");
    const auto [new_min, new_max] = aminmax(x);
    if (!std::isfinite(new_min) || !std::isfinite(new_max))
        throw Error("HistogramObserver: the input has NaN or infinite values");
    if (uninitialized(min_, max_) || min_ == max_) {
        min_ = new_min;
        max_ = new_max;
        histogram_ = histc(x, bins_, py_int(min_), py_int(max_));
        return;
    }
    float cmin = std::min(new_min, min_);
    float cmax = std::max(new_max, max_);
    // _adjust_min_max: a common grid whose step divides both ranges.
    const float hist_bin_width = (max_ - min_) / float(bins_ * upsample_rate_);
    const float span = float(bins_) * hist_bin_width;
    const int64_t downsample_rate = int64_t(std::ceil((cmax - cmin) / span));
    const float e = float(downsample_rate) * span - (cmax - cmin);
    cmax = cmax + e;
    const int64_t start_idx = int64_t(round_even((min_ - cmin) / hist_bin_width));

    std::vector<float> combined = histc(x, bins_, py_int(cmin), py_int(cmax));
    if (cmin == min_ && cmax == max_) {
        for (int64_t i = 0; i < bins_; ++i)
            combined[size_t(i)] += histogram_[size_t(i)];
    } else {
        // _combine_histograms: the old histogram upsampled (each bin repeated upsample_rate
        // times) at start_idx on a grid of bins * downsample_rate cells, summed (double) over
        // every downsample_rate cells, divided by upsample_rate. Cells outside the upsampled
        // range are zero, so the running sum only moves inside it.
        const int64_t cells = bins_ * downsample_rate;
        const int64_t up_begin = start_idx,
                      up_end = std::min(start_idx + bins_ * upsample_rate_, cells);
        double running = 0.0;
        int64_t pos = 0;       // next cell to add
        float previous = 0.0f; // the shifted integral, a float32 tensor in PyTorch
        for (int64_t k = 0; k < bins_; ++k) {
            const int64_t last = (k + 1) * downsample_rate - 1;
            for (int64_t c = std::max(pos, up_begin); c <= std::min(last, up_end - 1); ++c)
                running += double(histogram_[size_t((c - up_begin) / upsample_rate_)]);
            pos = last + 1;
            const double interpolated = (running - double(previous)) / double(upsample_rate_);
            combined[size_t(k)] += float(interpolated);
            previous = float(running);
        }
    }
    histogram_ = std::move(combined);
    min_ = cmin;
    max_ = cmax;
}

double HistogramObserver::quantization_error(int64_t start_bin, int64_t end_bin) const {
    const int64_t dst_nbins = 256; // 2 ** bits of quint8
    const double bin_width = (double(max_) - double(min_)) / double(bins_);
    const double dst_bin_width = bin_width * double(end_bin - start_bin + 1) / double(dst_nbins);
    if (dst_bin_width == 0.0) return 0.0;
    const float bw = float(bin_width), dbw = float(dst_bin_width);
    const float half = float(dst_bin_width / 2), neg_half = float(-dst_bin_width / 2);
    const float middle_norm_unit = (half * half * half - neg_half * neg_half * neg_half) / 3.0f;
    double total = 0.0;
    for (int64_t i = 0; i < bins_; ++i) {
        const float begin = float(i - start_bin) * bw;
        const float end = begin + bw;
        const float dst_begin = std::clamp(div_floor(begin, dbw), 0.0f, float(dst_nbins - 1));
        const float dst_begin_center = (dst_begin + 0.5f) * dbw;
        const float dst_end = std::clamp(div_floor(end, dbw), 0.0f, float(dst_nbins - 1));
        const float density = histogram_[size_t(i)] / bw;
        float norm = 0.0f;
        norm += l2_norm(begin - dst_begin_center, half, density);
        norm += (dst_end - dst_begin - 1.0f) * (density * middle_norm_unit);
        const float dst_end_center = dst_end * dbw + half;
        norm += l2_norm(neg_half, end - dst_end_center, density);
        total += double(norm);
    }
    // norm.sum() is a float32 reduction.
    return double(float(total));
}

std::pair<float, float> HistogramObserver::search_range() const {
    const float bin_width = (max_ - min_) / float(bins_);
    double sum = 0.0;
    std::vector<float> csum(static_cast<size_t>(bins_));
    for (int64_t i = 0; i < bins_; ++i) { // torch.cumsum accumulates float32 in double
        sum += double(histogram_[size_t(i)]);
        csum[size_t(i)] = float(sum);
    }
    const double total = double(float(sum));
    const double stepsize = 1e-5;
    double alpha = 0.0, beta = 1.0;
    int64_t start_bin = 0, end_bin = bins_ - 1;
    double norm_min = INFINITY;
    while (alpha < beta) {
        const double next_alpha = alpha + stepsize;
        const double next_beta = beta - stepsize;
        // The comparisons against a Python float run in float32.
        const float lo_bound = float(next_alpha * total), hi_bound = float(next_beta * total);
        int64_t l = start_bin, r = end_bin;
        while (l < end_bin && csum[size_t(l)] < lo_bound)
            ++l;
        while (r > start_bin && csum[size_t(r)] > hi_bound)
            --r;
        int64_t next_start = start_bin, next_end = end_bin;
        if (l - start_bin > end_bin - r) {
            next_start = l;
            alpha = next_alpha;
        } else {
            next_end = r;
            beta = next_beta;
        }
        if (next_start == start_bin && next_end == end_bin) continue;
        const double norm = quantization_error(next_start, next_end);
        if (norm > norm_min) break;
        norm_min = norm;
        start_bin = next_start;
        end_bin = next_end;
    }
    const float lo = min_ + bin_width * float(start_bin);
    const float hi = min_ + bin_width * float(end_bin + 1);
    return {lo, hi};
}

QParams HistogramObserver::qparams() const {
    if (uninitialized(min_, max_)) return {1.0f, 0};
    const auto [lo, hi] = search_range();
    return affine_qparams(lo, hi);
}

} // namespace myelin::quant
