#pragma once
// Float32 kernels that change layout between nchw tensors and oneDNN's nChw16c blocked layout
// ([N, C/16, H, W, 16], C a multiple of 16) inside a pass the step makes anyway, so that the
// layout change costs no pass of its own: ReLU's backward, and ReLU with a 2x2 / stride-2 max pool
// around a convolution (cpu_nchw16c.cpp). Each gives the bits of the plain ops it fuses.
#include "backend/kernels/elementwise.h"

#include <cstdint>

namespace myelin::backend::nchw16c {

// ReLU's gradient from its output y, the element-wise rule (BinaryOp::ReluBackward) every path
// shares: 0 where y <= 0, else g (a NaN y passes the gradient, as PyTorch's threshold_backward).
inline float relu_grad(float g, float y) {
    return kernels::apply_binary<BinaryOp::ReluBackward>(g, y, {});
}

// out [N, C/16, HW, 16] = relu_grad(gy, y), gy and y nchw [N, C, HW].
void relu_backward_to_blocked(const float* gy, const float* y, float* out, int64_t N, int64_t C,
                              int64_t HW);

// Sizes of a 2x2 / stride-2 max pool over an N x C x H x W activation: OH = H / 2, OW = W / 2
// (an odd last row or column is in no window).
struct Pool2x2 {
    int64_t N, C, H, W, OH, OW;
};

// The max pool of a blocked activation x [N, C/16, H, W, 16] into nchw y [N, C, OH, OW]: the
// values of cpu_pool.cpp's 2x2 pool of the same activation in nchw (the first maximum wins ties;
// the last NaN in scan order wins). codes, in block order [N, C/16, OH, OW, 16], say for each
// output where its winner is (bit 0: right column, bit 1: bottom row) and, bit 2, that ReLU
// stops its gradient (y <= 0): all its backward needs.
void max_pool_2x2_from_blocked(const float* x, float* y, uint8_t* codes, const Pool2x2& p);

// The gradient reaching a ReLU's input through relu then the 2x2 max pool, laid out for the
// convolution before them: out [N, C/16, H, W, 16] holds relu_grad(grad_pooled, pooled) at each
// window's winner and 0 everywhere else, from the codes above (the winner's ReLU output is the
// pooled value). This is max_pool_backward then ReLU's backward, bit for bit, without either
// tensor.
void relu_max_pool_2x2_backward_to_blocked(const float* grad_pooled, const uint8_t* codes,
                                           float* out, const Pool2x2& p);

// Between those codes and cpu_pool.cpp's nchw codes (C a multiple of 16), for the paths where
// oneDNN does not use nChw16c: plain codes and pooled values -> blocked codes; blocked codes ->
// plain codes and grad_pooled with ReLU's rule applied.
void codes_to_blocked(const uint8_t* plain, const float* pooled, uint8_t* blocked,
                      const Pool2x2& p);
void codes_from_blocked(const uint8_t* blocked, const float* grad_pooled, uint8_t* plain,
                        float* relu_grad_pooled, const Pool2x2& p);

} // namespace myelin::backend::nchw16c
