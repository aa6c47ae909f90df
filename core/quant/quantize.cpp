// Quantized tensors, int8 weights and fake quantization, rounding as ATen's quantize_val and
// fake-quantize kernels do (x * (1.0f / scale), nearbyint, then the zero point, then clamp).
#include "autograd/function.h"
#include "quant/layout.h"
#include "tensor/tensor_impl.h"

#include <myelin/error.h>
#include <myelin/quant/quantize.h>

#include <algorithm>
#include <cmath>
#include <string>

#pragma GCC optimize("fp-contract=off")

namespace myelin::quant {

using myelin::detail::make_tensor;

namespace {

Tensor float_cpu(const Tensor& x, const char* op) {
    if (!x.defined()) throw Error(std::string(op) + ": undefined tensor");
    if (x.dtype() != DType::Float32)
        throw DTypeError(std::string(op) + ": expected float32, got " + dtype_name(x.dtype()));
    if (!x.device().is_cpu()) throw DeviceError(std::string(op) + ": expected a CPU tensor");
    return x.detach().contiguous();
}

void check_scale(float scale, const char* op) {
    if (!(scale > 0.0f) || !std::isfinite(scale))
        throw Error(std::string(op) + ": the scale must be positive and finite, got " +
                    std::to_string(scale));
}

// min / max of each slice along dimension 0 (PerChannelMinMaxObserver's aminmax per channel).
void channel_ranges(const Tensor& c, std::vector<float>& lo, std::vector<float>& hi) {
    const int64_t channels = c.size(0), inner = c.numel() / std::max<int64_t>(channels, 1);
    const float* p = c.data<float>();
    lo.assign(size_t(channels), 0.0f);
    hi.assign(size_t(channels), 0.0f);
    for (int64_t ch = 0; ch < channels; ++ch) {
        const float* q = p + ch * inner;
        float a = q[0], b = q[0];
        for (int64_t i = 1; i < inner; ++i) {
            a = std::min(a, q[i]);
            b = std::max(b, q[i]);
        }
        lo[size_t(ch)] = a;
        hi[size_t(ch)] = b;
    }
}

QuantizedWeight quantize_weight(const Tensor& w, bool per_channel, const char* op) {
    const Tensor c = float_cpu(w, op);
    if (c.dim() < 1 || c.numel() == 0)
        throw ShapeError(std::string(op) +
                         ": expected a non-empty weight of at least 1 dimension, got " +
                         c.shape().str());
    QuantizedWeight q;
    q.shape = c.shape();
    std::vector<float> lo, hi;
    if (per_channel) {
        channel_ranges(c, lo, hi);
    } else {
        channel_ranges(c.reshape({1, c.numel()}), lo, hi);
    }
    for (size_t ch = 0; ch < lo.size(); ++ch)
        q.scales.push_back(symmetric_scale(lo[ch], hi[ch]));
    const int64_t inner = c.numel() / (per_channel ? c.size(0) : 1);
    const float* p = c.data<float>();
    q.values.resize(size_t(c.numel()));
    for (int64_t i = 0; i < c.numel(); ++i) {
        const float inv = 1.0f / q.scales[size_t(i / inner)];
        q.values[size_t(i)] = int8_t(quantize_value(p[i], inv, 0, kQInt8Min, kQInt8Max));
    }
    return q;
}

// The shared fake-quant loop: y and the mask of elements whose rounded value is in range.
void fake_quant_values(const float* x, float* y, uint8_t* mask, int64_t n, float scale, int32_t zp,
                       int64_t qmin, int64_t qmax) {
    const float inv = 1.0f / scale;
    for (int64_t i = 0; i < n; ++i) {
        // ATen: qval = int64(zp + nearbyint(x * inv)); out = (clamp(qval) - zp) * scale.
        const float r = float(zp) + std::nearbyint(x[i] * inv);
        // Out-of-range floats saturate far outside [qmin, qmax] (the cast itself would be UB).
        const int64_t qval = std::isnan(r) ? qmax + 1 : int64_t(std::clamp(r, -1e18f, 1e18f));
        const int64_t clamped = std::clamp(qval, qmin, qmax);
        y[i] = float(double(clamped - zp) * double(scale));
        mask[i] = qmin <= qval && qval <= qmax;
    }
}

// Records the straight-through estimator: grad * mask.
Tensor with_ste(const Tensor& x, Tensor y, const Tensor& mask, const char* name) {
    if (autograd::needs_grad({&x}))
        autograd::record(name, {&x}, y, [mask](const Tensor& grad, const autograd::Node&) {
            return TensorList{grad * mask};
        });
    return y;
}

} // namespace

int64_t quantize_value(float x, float inv_scale, int32_t zero_point, int64_t qmin, int64_t qmax) {
    const float r = std::nearbyint(x * inv_scale);
    if (std::isnan(r)) return std::clamp<int64_t>(zero_point, qmin, qmax);
    const float v = float(zero_point) + std::clamp(r, -1e18f, 1e18f);
    return std::clamp(int64_t(v), qmin, qmax);
}

QuantizedWeight quantize_weight_per_channel(const Tensor& w) {
    return quantize_weight(w, true, "quantize_weight_per_channel");
}

QuantizedWeight quantize_weight_per_tensor(const Tensor& w) {
    return quantize_weight(w, false, "quantize_weight_per_tensor");
}

Tensor dequantize_weight(const QuantizedWeight& w) {
    const int64_t n = w.shape.numel();
    if (int64_t(w.values.size()) != n || w.scales.empty())
        throw Error("dequantize_weight: " + std::to_string(w.values.size()) + " values for shape " +
                    w.shape.str());
    Tensor out = make_tensor(w.shape, DType::Float32, kCPU);
    float* o = out.data<float>();
    const int64_t inner = n / std::max<int64_t>(w.out_channels(), 1);
    for (int64_t i = 0; i < n; ++i)
        o[i] = float(w.values[size_t(i)]) * w.scale(i / inner);
    return out;
}

QTensor quantize_per_tensor(const Tensor& x, QParams q) {
    check_scale(q.scale, "quantize_per_tensor");
    const Tensor c = float_cpu(x, "quantize_per_tensor");
    Tensor out = make_tensor(c.shape(), DType::UInt8, kCPU);
    const float* p = c.data<float>();
    uint8_t* o = out.data<uint8_t>();
    const float inv = 1.0f / q.scale;
    const int64_t n = c.numel();
    // quantize_value's arithmetic in a form the compiler vectorizes: clamping before rounding
    // to the integer bounds changes nothing, and adding and taking away 1.5 * 2^23 rounds a
    // float of magnitude below 2^22 to the nearest integer, ties to even, as nearbyint does in
    // the default rounding mode. NaN becomes the zero point, as in quantize_value.
    const float low = float(kQUInt8Min - q.zero_point), high = float(kQUInt8Max - q.zero_point);
    constexpr float kRound = 12582912.0f;
    const int32_t zero_point = q.zero_point;
#pragma omp parallel for if (n > (1 << 16)) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        float y = p[i] * inv;
        y = y == y ? y : 0.0f;
        y = y < low ? low : (y > high ? high : y);
        o[i] = uint8_t(int32_t((y + kRound) - kRound) + zero_point);
    }
    return {out, q};
}

Tensor dequantize(const QTensor& x) {
    if (!x.data.defined() || x.data.dtype() != DType::UInt8)
        throw DTypeError("dequantize: expected a uint8 tensor");
    const float zp = float(x.q.zero_point), s = x.q.scale;
    const Tensor& d = x.data;
    if (!d.is_contiguous() && detail::channels_last(d)) {
        // The int8 convolutions' channels-last output written as NCHW in one pass: each
        // image's bytes (a few KB) stay in cache while its channels are written out in order,
        // through a table of the 256 values.
        const int64_t batch = d.size(0), channels = d.size(1), plane = d.size(2) * d.size(3);
        float table[256];
        for (int v = 0; v < 256; ++v)
            table[v] = (float(v) - zp) * s;
        Tensor out = make_tensor(d.shape(), DType::Float32, kCPU);
        const uint8_t* p = d.data<uint8_t>();
        float* o = out.data<float>();
#pragma omp parallel for if (d.numel() > (1 << 16)) schedule(static)
        for (int64_t n = 0; n < batch; ++n) {
            const uint8_t* in = p + n * plane * channels;
            float* to = o + n * channels * plane;
            for (int64_t c = 0; c < channels; ++c)
                for (int64_t i = 0; i < plane; ++i)
                    to[c * plane + i] = table[in[i * channels + c]];
        }
        return out;
    }
    const Tensor c = d.contiguous();
    Tensor out = make_tensor(c.shape(), DType::Float32, kCPU);
    const uint8_t* p = c.data<uint8_t>();
    float* o = out.data<float>();
    const int64_t n = c.numel();
#pragma omp parallel for if (n > (1 << 16)) schedule(static)
    for (int64_t i = 0; i < n; ++i)
        o[i] = (float(p[i]) - zp) * s;
    return out;
}

Tensor fake_quantize_per_tensor(const Tensor& x, float scale, int32_t zero_point, int64_t qmin,
                                int64_t qmax) {
    check_scale(scale, "fake_quantize_per_tensor");
    if (qmin > qmax || zero_point < qmin || zero_point > qmax)
        throw Error("fake_quantize_per_tensor: expected qmin <= zero_point <= qmax");
    const Tensor c = float_cpu(x, "fake_quantize_per_tensor");
    Tensor y = make_tensor(c.shape(), DType::Float32, kCPU);
    Tensor mask = make_tensor(c.shape(), DType::UInt8, kCPU);
    fake_quant_values(c.data<float>(), y.data<float>(), mask.data<uint8_t>(), c.numel(), scale,
                      zero_point, qmin, qmax);
    return with_ste(x, y, mask.to(DType::Float32), "FakeQuantizePerTensorAffineCachemaskBackward0");
}

Tensor fake_quantize_per_channel(const Tensor& x, const std::vector<float>& scales, int axis,
                                 int64_t qmin, int64_t qmax,
                                 const std::vector<int32_t>& zero_points) {
    const char* op = "fake_quantize_per_channel";
    const Tensor c = float_cpu(x, op);
    if (c.dim() < 1) throw ShapeError(std::string(op) + ": expected at least 1 dimension");
    axis = myelin::detail::wrap_dim(axis, c.dim(), op);
    const int64_t channels = c.size(axis);
    if (int64_t(scales.size()) != channels ||
        (!zero_points.empty() && int64_t(zero_points.size()) != channels))
        throw ShapeError(std::string(op) + ": expected " + std::to_string(channels) +
                         " scales (and zero points) for dimension " + std::to_string(axis) +
                         " of " + c.shape().str());
    for (size_t ch = 0; ch < scales.size(); ++ch) {
        check_scale(scales[ch], op);
        const int32_t zp = zero_points.empty() ? 0 : zero_points[ch];
        if (zp < qmin || zp > qmax) throw Error(std::string(op) + ": zero point out of range");
    }
    int64_t inner = 1;
    for (int d = axis + 1; d < c.dim(); ++d)
        inner *= c.size(d);
    const int64_t outer = c.numel() / std::max<int64_t>(channels * inner, 1);
    Tensor y = make_tensor(c.shape(), DType::Float32, kCPU);
    Tensor mask = make_tensor(c.shape(), DType::UInt8, kCPU);
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t ch = 0; ch < channels; ++ch) {
            const int64_t at = (o * channels + ch) * inner;
            fake_quant_values(c.data<float>() + at, y.data<float>() + at, mask.data<uint8_t>() + at,
                              inner, scales[size_t(ch)],
                              zero_points.empty() ? 0 : zero_points[size_t(ch)], qmin, qmax);
        }
    return with_ste(x, y, mask.to(DType::Float32),
                    "FakeQuantizePerChannelAffineCachemaskBackward0");
}

} // namespace myelin::quant
