#pragma once
// Float32 matrix products on oneDNN's matmul (NnKernels::matmul, which linear runs; the recurrent
// layers' whole-sequence GEMMs): operands by strides (transposes without copies), the bias fused,
// an optional accumulation, primitives cached per shape and thread count. And bfloat16 products
// into float32 (autocast's lowered linear, through batched_gemm).
#include <cstdint>

namespace myelin::backend::cpu {

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

// c [M, N] float32 (contiguous) = a [M, K] @ b [K, N], a and b bfloat16 (uint16_t bits) by
// strides. False when oneDNN has no bf16 matmul here (AVX-512 is needed) or declines the
// layout; c is then untouched.
bool onednn_matmul_bf16(int64_t M, int64_t N, int64_t K, GemmOperand<uint16_t> a,
                        GemmOperand<uint16_t> b, float* c);

} // namespace myelin::backend::cpu
