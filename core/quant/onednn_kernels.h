#pragma once
// Internal: the oneDNN side of quant/kernels.h (onednn_kernels.cpp). Each returns false when
// oneDNN has no primitive for the shape (the caller then runs the reference); outputs are
// quint8 when r.out_zero_point is set, else float32, plain row-major (linear) or NHWC (conv, pool).
#include <myelin/quant/kernels.h>

namespace myelin::quant::detail {

// y [M, N] from x [M, K] (quint8, zero point x_zp) and w [N, K]. runtime_scales: the output
// scales are passed at each call instead of being built into the (cached) primitive.
bool onednn_linear(const uint8_t* x, int64_t M, int64_t K, int32_t x_zp, const QuantizedWeight& w,
                   const Requantization& r, void* y, bool runtime_scales);

// y [N, O, OH, OW] from x [N, C, H, W] (stored NCHW, or NHWC with x_nhwc) and
// w [O, C / groups, kh, kw]; y is stored NHWC.
bool onednn_conv2d(const uint8_t* x, const Dims& x_shape, bool x_nhwc, int32_t x_zp,
                   const QuantizedWeight& w, const Conv2dOptions& o, const Dims& y_shape,
                   const Requantization& r, void* y);

// y [N, C, OH, OW] = max over windows of x [N, C, H, W] (uint8; stored as for onednn_conv2d).
bool onednn_max_pool2d(const uint8_t* x, const Dims& x_shape, bool x_nhwc, const Dims& y_shape,
                       std::array<int64_t, 2> kernel, std::array<int64_t, 2> stride,
                       std::array<int64_t, 2> padding, std::array<int64_t, 2> dilation, uint8_t* y);

} // namespace myelin::quant::detail
