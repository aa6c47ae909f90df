#pragma once
// int8 quantization, the numerics (issue 38): quantization parameters computed as PyTorch's
// torch.ao.quantization computes them, the observers that collect them during calibration,
// int8 weights (per output channel or per tensor, symmetric), quantized tensors, and fake
// quantization for quantization-aware training. The kernels that run on these are in
// quant/kernels.h.
//
// Conventions (PyTorch's 'onednn' qconfig): activations are quint8 in [0, 255] with an affine
// scale and zero point, reduce_range off; weights are qint8 in [-128, 127], symmetric (zero
// point 0). Rounding is PyTorch's: q = clamp(nearbyint(x * (1 / scale)) + zero_point), with
// 1 / scale in float32 (ties to even).
#include <myelin/tensor.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

namespace myelin::quant {

inline constexpr int64_t kQUInt8Min = 0, kQUInt8Max = 255;
inline constexpr int64_t kQInt8Min = -128, kQInt8Max = 127;

// Per-tensor affine quantization parameters: x ~ (q - zero_point) * scale.
struct QParams {
    float scale = 1.0f;
    int32_t zero_point = 0;
    bool operator==(const QParams&) const = default;
};

// ---------------------------------------------------------------------------------------------
// Quantization parameters from a range

// UniformQuantizationObserverBase._calculate_qparams, per_tensor_affine: the range widened to
// hold 0, scale = (max - min) / (qmax - qmin) in float32 (at least FLT_EPSILON), zero point
// qmin - round(min / scale) clamped. An empty range (min = +inf, max = -inf) gives {1, 0}.
QParams affine_qparams(float min, float max, int64_t qmin = kQUInt8Min, int64_t qmax = kQUInt8Max);
// The same for per_tensor_symmetric / per_channel_symmetric on qint8: scale =
// max(-min, max, 0) / ((qmax - qmin) / 2), at least FLT_EPSILON; the zero point is 0.
float symmetric_scale(float min, float max, int64_t qmin = kQInt8Min, int64_t qmax = kQInt8Max);
// ATen's ChooseQuantizationParams (what dynamic quantization uses for each batch of
// activations): double intermediates, the zero point nudged from the side with less error;
// reduce_range halves [qmin, qmax] (PyTorch's dynamic linear passes reduce_range = true).
QParams choose_qparams(float min, float max, int64_t qmin = kQUInt8Min, int64_t qmax = kQUInt8Max,
                       bool reduce_range = false);

// ---------------------------------------------------------------------------------------------
// Observers (activations, per tensor, quint8 [0, 255]). observe() takes float32 CPU tensors of
// any shape; empty tensors are ignored, as PyTorch does.

enum class ObserverKind { MinMax, MovingAverageMinMax, Histogram };

// "minmax", "moving-average", "histogram".
std::string_view observer_kind_name(ObserverKind kind);
std::optional<ObserverKind> parse_observer_kind(std::string_view name);
const std::vector<ObserverKind>& observer_kinds();

class Observer {
  public:
    virtual ~Observer() = default;
    virtual ObserverKind kind() const = 0;
    virtual void observe(const Tensor& x) = 0;
    // The parameters for what was observed so far ({1, 0} before any observation).
    virtual QParams qparams() const = 0;
    // The running range (+inf / -inf before any observation).
    float min() const { return min_; }
    float max() const { return max_; }

  protected:
    float min_ = std::numeric_limits<float>::infinity();
    float max_ = -std::numeric_limits<float>::infinity();
};

// torch.ao.quantization.MinMaxObserver: the running min and max of everything observed.
class MinMaxObserver final : public Observer {
  public:
    ObserverKind kind() const override { return ObserverKind::MinMax; }
    void observe(const Tensor& x) override;
    QParams qparams() const override;
};

// MovingAverageMinMaxObserver: min += c * (batch_min - min) (likewise max), from the first
// batch's own range; float32 at every step, as PyTorch's tensor arithmetic.
class MovingAverageMinMaxObserver final : public Observer {
  public:
    explicit MovingAverageMinMaxObserver(float averaging_constant = 0.01f)
        : averaging_constant_(averaging_constant) {}
    ObserverKind kind() const override { return ObserverKind::MovingAverageMinMax; }
    void observe(const Tensor& x) override;
    QParams qparams() const override;

  private:
    float averaging_constant_;
};

// HistogramObserver as in PyTorch 1.13: a 2048-bin histogram of everything observed (batches
// over a wider range are merged by upsampling the old histogram upsample_rate times onto the
// new range), then qparams() runs the L2-norm search (_non_linear_param_search) for the range
// that minimises the quantization error and computes affine parameters from it. PyTorch 1.13's
// quirks are kept on purpose, for identical results: torch.histc is called with the range
// truncated to integers (int(min), int(max)) while the histogram is recorded as covering the
// real range.
class HistogramObserver final : public Observer {
  public:
    explicit HistogramObserver(int64_t bins = 2048, int64_t upsample_rate = 128);
    ObserverKind kind() const override { return ObserverKind::Histogram; }
    void observe(const Tensor& x) override;
    QParams qparams() const override;
    const std::vector<float>& histogram() const { return histogram_; }
    // The range the search picks (before the affine parameters are computed from it).
    std::pair<float, float> search_range() const;

  private:
    double quantization_error(int64_t start_bin, int64_t end_bin) const;
    int64_t bins_, upsample_rate_;
    std::vector<float> histogram_;
};

// An observer of `kind` with PyTorch's default settings.
std::unique_ptr<Observer> make_observer(ObserverKind kind);

// ---------------------------------------------------------------------------------------------
// int8 weights

namespace detail {
struct PackedWeights; // oneDNN's reordered copies of a weight (quant/onednn_kernels.cpp)
}

// Symmetric qint8 weights: w ~ values * scale, zero points all 0. `scales` has one entry per
// output channel (dimension 0; per_channel_symmetric) or a single entry (per_tensor_symmetric).
// The kernels reorder `values` into oneDNN's layouts once and keep them in `packed` (shared by
// copies): treat values, shape and scales as fixed once a kernel has used the weight, or call
// reset_packed() after changing them.
struct QuantizedWeight {
    std::vector<int8_t> values; // row-major in `shape`
    Dims shape;                 // Linear [out, in]; Conv2d [out, in / groups, kh, kw]
    std::vector<float> scales;
    mutable std::shared_ptr<detail::PackedWeights> packed;

    int64_t out_channels() const { return shape.empty() ? 0 : shape[0]; }
    bool per_channel() const { return scales.size() != 1 || out_channels() == 1; }
    float scale(int64_t channel) const { return scales.size() == 1 ? scales[0] : scales[channel]; }
    void reset_packed() { packed.reset(); }
};

// PerChannelMinMaxObserver(qint8, per_channel_symmetric), PyTorch's default per-channel weight
// observer (the 'onednn' / 'fbgemm' qconfigs), then torch.quantize_per_channel along dim 0.
// w: float32, at least 1-D.
QuantizedWeight quantize_weight_per_channel(const Tensor& w);
// MinMaxObserver(qint8, per_tensor_symmetric): the weight observer of default_dynamic_qconfig,
// which quantize_dynamic uses for Linear/LSTM/GRU unless told otherwise.
QuantizedWeight quantize_weight_per_tensor(const Tensor& w);
// The float32 weight the int8 one stands for (values * scale).
Tensor dequantize_weight(const QuantizedWeight& w);

// ---------------------------------------------------------------------------------------------
// Quantized tensors

// A quint8 tensor: `data` is DType::UInt8 in the float tensor's shape, stored contiguously, or
// (4-D, as the convolution and pooling kernels return it) channels-last: NCHW shape with NHWC
// strides, oneDNN's int8 layout, so conv -> pool -> conv never reorders. .contiguous() gives
// NCHW; every function here takes either.
struct QTensor {
    Tensor data;
    QParams q;
};

// torch.quantize_per_tensor(x, scale, zero_point, torch.quint8). x: float32.
QTensor quantize_per_tensor(const Tensor& x, QParams q);
// (q - zero_point) * scale as float32, in x's shape.
Tensor dequantize(const QTensor& x);

// One element, the rounding every quantizer here shares (quantize_val in ATen): clamp(
// nearbyint(x * inv_scale) + zero_point, qmin, qmax) with inv_scale = 1.0f / scale.
int64_t quantize_value(float x, float inv_scale, int32_t zero_point, int64_t qmin, int64_t qmax);

// ---------------------------------------------------------------------------------------------
// Fake quantization (QAT), autograd ops on float32 tensors with the straight-through estimator:
// forward (clamp(nearbyint(x / s) + zp, qmin, qmax) - zp) * s, as
// torch.fake_quantize_per_tensor_affine; backward passes the gradient where
// qmin <= nearbyint(x / s) + zp <= qmax and gives 0 elsewhere.
Tensor fake_quantize_per_tensor(const Tensor& x, float scale, int32_t zero_point, int64_t qmin,
                                int64_t qmax);
// torch.fake_quantize_per_channel_affine: one scale (and zero point; all 0 when empty) per
// index of dimension `axis`.
Tensor fake_quantize_per_channel(const Tensor& x, const std::vector<float>& scales, int axis,
                                 int64_t qmin, int64_t qmax,
                                 const std::vector<int32_t>& zero_points = {});

} // namespace myelin::quant
