#pragma once
// int8 kernels (issue 38): linear, 2-D convolution and max pooling on quantized tensors, run by
// oneDNN's int8 primitives (u8 activations with a zero point, s8 weights per output channel,
// s32 accumulation, f32 bias, ReLU fused; VNNI / AVX-512 where the CPU has them), with a plain
// C++ reference that computes the same arithmetic (tests, and shapes oneDNN refuses). The
// quantized types are in quant/quantize.h.
//
// Arithmetic of one output element of channel c (PyTorch's 'onednn' engine, oneDNN 2.x):
//   acc  = sum (x_q - x_zp) * w_q                              exact, int32
//   b    = nearbyint(bias[c] / (x_scale * w_scale[c]))         the bias in accumulator units
//   y    = (acc + b) * m[c], then max(y, 0) with ReLU           float32
// with m[c] = x_scale * w_scale[c] / out_scale and out_q = clamp(nearbyint(y) + out_zp, 0, 255)
// for a quantized output, or m[c] = x_scale * w_scale[c] and y itself for a float32 output.
#include <myelin/quant/quantize.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <optional>

namespace myelin::quant {

// Which implementation runs a kernel: Auto is oneDNN, the reference where oneDNN has no
// primitive for the shape; OneDnn throws instead of falling back (tests); Reference is the
// plain loops.
enum class KernelPath { Auto, OneDnn, Reference };

// The per-channel requantization constants of one kernel call (see the top of this file).
struct Requantization {
    std::vector<float> bias;               // per output channel, in accumulator units
    std::vector<float> multiplier;         // per output channel
    std::optional<int32_t> out_zero_point; // set: quint8 output
    bool relu = false;
};

// The constants for x_scale, w's scales, an optional bias (float32 [out] or undefined) and an
// optional output quantization. round_bias false keeps the bias exact (dynamic quantization's
// float bias) instead of rounding it to whole accumulator units (the static kernels' s32 bias).
Requantization make_requantization(float x_scale, const QuantizedWeight& w, const Tensor& bias,
                                   bool relu, std::optional<QParams> out, bool round_bias = true);

// One accumulator to its float32 value (no output quantization) ...
inline float requantize_f32(int32_t acc, float bias, float multiplier, bool relu) {
    float y = (static_cast<float>(acc) + bias) * multiplier;
    return relu && !(y > 0.0f) ? 0.0f : y;
}
// ... or to quint8 (oneDNN's order: scale, ReLU, zero point, round to nearest even, saturate).
inline uint8_t requantize_u8(int32_t acc, float bias, float multiplier, bool relu,
                             int32_t out_zero_point) {
    const float y =
        requantize_f32(acc, bias, multiplier, relu) + static_cast<float>(out_zero_point);
    const float r = std::nearbyint(y);
    return static_cast<uint8_t>(r < 0.0f ? 0.0f : (r > 255.0f ? 255.0f : r));
}

struct Conv2dOptions {
    std::array<int64_t, 2> stride{1, 1};
    std::array<int64_t, 2> padding{0, 0};
    std::array<int64_t, 2> dilation{1, 1};
    int64_t groups = 1;
};

// y = x @ w^T + bias over the last dimension of x ([..., in] -> [..., out]), quantized with
// `out` (torch.ao.nn.quantized.Linear / LinearReLU) ...
QTensor quantized_linear(const QTensor& x, const QuantizedWeight& w, const Tensor& bias, bool relu,
                         QParams out, KernelPath path = KernelPath::Auto);
// ... or as float32 (the dequantized product, without rounding to an output quantum).
Tensor quantized_linear_f32(const QTensor& x, const QuantizedWeight& w, const Tensor& bias,
                            bool relu, KernelPath path = KernelPath::Auto);

// 2-D convolution of NCHW x with w [O, C / groups, kh, kw], zero padding (the zero point),
// quantized with `out` (torch.ao.nn.quantized.Conv2d / ConvReLU2d) or as float32. x may be
// stored channels-last; on oneDNN the output is (NCHW shape, NHWC strides: see QTensor).
QTensor quantized_conv2d(const QTensor& x, const QuantizedWeight& w, const Tensor& bias,
                         const Conv2dOptions& options, bool relu, QParams out,
                         KernelPath path = KernelPath::Auto);
Tensor quantized_conv2d_f32(const QTensor& x, const QuantizedWeight& w, const Tensor& bias,
                            const Conv2dOptions& options, bool relu,
                            KernelPath path = KernelPath::Auto);

// Max pooling of NCHW x (floor mode, padding never selected), on the quint8 values: the output
// keeps x's parameters (max commutes with the monotone quantization) and, on oneDNN, is stored
// channels-last like the convolution's.
QTensor quantized_max_pool2d(const QTensor& x, std::array<int64_t, 2> kernel,
                             std::array<int64_t, 2> stride, std::array<int64_t, 2> padding = {0, 0},
                             std::array<int64_t, 2> dilation = {1, 1},
                             KernelPath path = KernelPath::Auto);

// Dynamic quantization's linear (torch.ao.nn.quantized.dynamic.Linear on the 'onednn' engine):
// x (float32) is quantized per call to quint8 with choose_qparams(min(x), max(x), 0, 255,
// reduce_range = true), multiplied with the int8 weight (per tensor or per channel) and
// returned as float32 with the float bias added.
Tensor dynamic_quantized_linear(const Tensor& x, const QuantizedWeight& w, const Tensor& bias,
                                bool relu = false, KernelPath path = KernelPath::Auto);

// Whether the last kernel call on this thread ran on oneDNN (false: the reference). For tests
// and benchmarks.
bool last_kernel_used_onednn();

} // namespace myelin::quant
