#pragma once
// Float32 matrix products on oneDNN's matmul for nn's own kernels (linear, the recurrent layers'
// whole-sequence GEMMs): operands by strides (transposes without copies), the bias fused, an
// optional accumulation, primitives cached per shape and thread count.
#include <cstdint>

namespace myelin::nn::detail {

// One GEMM operand: element (i, k) at p[i * rs + k * cs]; rs or cs is 1.
template <typename T> struct GemmOperand {
    const T* p;
    int64_t rs, cs;
};

// y [M, N] (= or += with accumulate) a [M, K] @ b [K, N], plus bias [N] (may be null; only
// without accumulate) on every row; y's rows ldy apart; M, N, K > 0. Products below 2^18
// multiply-adds run on the calling thread alone. False when oneDNN declines the shape (the
// caller computes it otherwise); y is then untouched.
bool onednn_matmul(int64_t M, int64_t N, int64_t K, GemmOperand<float> a, GemmOperand<float> b,
                   const float* bias, float* y, int64_t ldy, bool accumulate);

} // namespace myelin::nn::detail
