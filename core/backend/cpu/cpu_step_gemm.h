#pragma once
// Internal: the GEMM a recurrent layer runs at every time step with the same weights,
// y [M, N] (= or +=) a [M, K] @ op(w) (+ bias). OpenBLAS packs the weights again at every call; for
// float32 this runs oneDNN's matmul on weights reordered once into its blocked layout (about 1.3x
// faster per step at batch 64, hidden 256); float64 (no oneDNN matmul) calls BLAS.
// sequence_gemm: the GEMMs over all steps at once, also on oneDNN for float32.
#include "backend/cpu/cpu_matmul.h"

#include <cstdint>
#include <memory>

namespace myelin::backend::cpu {

// The weights of a StepGemm: w stored [N, K] row-major (nk: op(w) = w^T) or [K, N], its rows ld
// apart; bias [N] (or null) added to every row of y, only where y is not accumulated.
template <typename T> struct StepWeights {
    const T* w;
    int64_t ld;
    bool nk;
    const T* bias = nullptr;
};

template <typename T> class StepGemm {
  public:
    // lda / ldy: the row strides of a and y. w and bias must stay valid while the object lives.
    StepGemm(int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldy, StepWeights<T> w,
             bool accumulate);
    ~StepGemm();
    StepGemm(const StepGemm&) = delete;
    StepGemm& operator=(const StepGemm&) = delete;
    void run(const T* a, T* y) const; // one thread at a time: it re-points cached arguments

  private:
    struct Packed;
    int64_t M_, N_, K_, lda_, ldy_;
    StepWeights<T> w_;
    bool accumulate_;
    std::unique_ptr<Packed> packed_; // float32 on oneDNN; null: BLAS
};

// y [M, N] (= or += with accumulate) a [M, K] @ b [K, N], plus bias [N] (may be null; only
// without accumulate) on every row; y's rows ldy apart. float32 runs oneDNN's matmul (cached per
// shape; 5-10% faster than OpenBLAS for the weight gradients over a whole sequence, where the
// 2048-long reduction streams from memory), float64 BLAS.
template <typename T>
void sequence_gemm(int64_t M, int64_t N, int64_t K, GemmOperand<T> a, GemmOperand<T> b,
                   const T* bias, T* y, int64_t ldy, bool accumulate);

} // namespace myelin::backend::cpu
