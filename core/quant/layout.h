#pragma once
// Internal to quant/: the layout the int8 convolution and pooling kernels hand back.
#include <myelin/tensor.h>

namespace myelin::quant::detail {

// Whether a 4-D tensor is stored channels-last (NHWC) densely: NCHW shape, NHWC strides.
inline bool channels_last(const Tensor& t) {
    if (t.dim() != 4) return false;
    const int64_t C = t.size(1), H = t.size(2), W = t.size(3);
    return t.stride(1) == 1 && t.stride(3) == C && t.stride(2) == W * C && t.stride(0) == H * W * C;
}

} // namespace myelin::quant::detail
