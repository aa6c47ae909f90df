#pragma once
// The CPU's attention kernels (sequence_kernels.h: NnKernels::head_gemm, attention_softmax and
// its backward), typed: head matrices as sequence_kernels.h's HeadOperand / HeadResult.
#include "backend/kernels/dropout.h"

#include <cstdint>

namespace myelin::backend::cpu {

template <typename T> struct TypedHead {
    const T* p = nullptr;
    int64_t sb = 0, sh = 0, ld = 0;
    bool trans = false; // the stored matrix is op()'s transpose
};

template <typename T> struct TypedHeadResult {
    T* p = nullptr;
    int64_t sb = 0, sh = 0, ld = 0;
};

// For every (b, h): C = alpha * op(A) op(B) + beta * C, op(A) [M, K], op(B) [K, N], C [M, N].
// Parallel over the heads once the work pays for the thread team (BLAS then runs single-threaded
// per head). K == 0 leaves beta * C (zeros when beta is 0).
template <typename T>
void head_gemm(int64_t B, int64_t H, int64_t M, int64_t N, int64_t K, T alpha,
               const TypedHead<T>& a, const TypedHead<T>& b, T beta, const TypedHeadResult<T>& c);

// Softmax over each row of scores [rows, S] into P; with a dropout stream (else null) also the
// dropped weights attn = P * keep / (1 - p) and the byte mask keep, in the same pass over the row
// while it sits in cache. A row holding NaN or only -inf comes out NaN, as the backend's softmax.
// The mask's element index is the flat index into [rows, S], as F::dropout's on that tensor.
template <typename T>
void attention_softmax(const T* scores, int64_t rows, int64_t S, T* P,
                       const kernels::DropoutStream* drop, T* attn, uint8_t* keep);

// The gradient of the scores from the gradient of the (dropped) weights: dA through the mask
// (when drop is not null), then the softmax's backward, dS = P * (dA - sum(P * dA)) per row.
template <typename T>
void attention_softmax_backward(const T* P, const T* dattn, int64_t rows, int64_t S,
                                const kernels::DropoutStream* drop, const uint8_t* keep, T* dS);

} // namespace myelin::backend::cpu
