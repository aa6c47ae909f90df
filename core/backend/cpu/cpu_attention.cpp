// The CPU's attention kernels (cpu_attention.h): head_gemm runs one BLAS call per head, the
// heads split across threads; the softmax takes one pass per row, dropout included.
#include "backend/cpu/cpu_attention.h"

#include "backend/cpu/cpu_nn.h"

#include "backend/kernels/elementwise.h"

#include <cblas.h>
#include <omp.h>

#include <cmath>
#include <limits>

namespace myelin::backend::cpu {
namespace {

// Work below this many multiply-adds runs on one thread (as the CPU backend's grain).
constexpr int64_t kParallelWork = 32768;

inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                blasint(m), blasint(n), blasint(k), alpha, a, blasint(lda), b, blasint(ldb), beta,
                c, blasint(ldc));
}
inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                 int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                blasint(m), blasint(n), blasint(k), alpha, a, blasint(lda), b, blasint(ldb), beta,
                c, blasint(ldc));
}

} // namespace

template <typename T>
void head_gemm(int64_t B, int64_t H, int64_t M, int64_t N, int64_t K, T alpha,
               const TypedHead<T>& a, const TypedHead<T>& b, T beta, const TypedHeadResult<T>& c) {
    if (B == 0 || H == 0 || M == 0 || N == 0) return;
    const int64_t heads = B * H;
    auto one = [&](int64_t i) {
        const int64_t bi = i / H, hi = i % H;
        T* cm = c.p + bi * c.sb + hi * c.sh;
        if (K == 0) { // an empty sum: BLAS may leave C untouched
            for (int64_t r = 0; r < M; ++r)
                for (int64_t q = 0; q < N; ++q)
                    cm[r * c.ld + q] = beta == T(0) ? T(0) : beta * cm[r * c.ld + q];
            return;
        }
        gemm(a.trans, b.trans, M, N, K, alpha, a.p + bi * a.sb + hi * a.sh, a.ld,
             b.p + bi * b.sb + hi * b.sh, b.ld, beta, cm, c.ld);
    };
    const bool parallel = heads > 1 && heads * M * N * K >= kParallelWork &&
                          omp_get_max_threads() > 1 && !omp_in_parallel();
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t i = 0; i < heads; ++i)
        one(i);
}

template <typename T>
void attention_softmax(const T* scores, int64_t rows, int64_t S, T* P,
                       const kernels::DropoutStream* drop, T* attn, uint8_t* keep) {
    const T keep_scale = drop ? static_cast<T>(drop->keep_scale) : T(1);
#pragma omp parallel for schedule(static) if (rows * S >= kParallelWork)
    for (int64_t r = 0; r < rows; ++r) {
        const T* x = scores + r * S;
        T* p = P + r * S;
        T m = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : m)
        for (int64_t j = 0; j < S; ++j)
            m = x[j] > m ? x[j] : m;
        // NaN in the row, or a max of -inf / +inf, makes x - m NaN somewhere: the sum and so
        // the whole row become NaN.
        T sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < S; ++j) {
            const T e = kernels::fast_exp(x[j] - m);
            p[j] = e;
            sum += e;
        }
        const T inv = T(1) / sum;
        if (!drop) {
#pragma omp simd
            for (int64_t j = 0; j < S; ++j)
                p[j] *= inv;
            continue;
        }
        T* a = attn + r * S;
        uint8_t* k = keep + r * S;
#pragma omp simd
        for (int64_t j = 0; j < S; ++j) {
            const bool kept = drop->keep(static_cast<uint64_t>(r * S + j));
            const T v = p[j] * inv;
            p[j] = v;
            a[j] = v * (kept ? keep_scale : T(0));
            k[j] = kept;
        }
    }
}

template <typename T>
void attention_softmax_backward(const T* P, const T* dattn, int64_t rows, int64_t S,
                                const kernels::DropoutStream* drop, const uint8_t* keep, T* dS) {
    const T keep_scale = drop ? static_cast<T>(drop->keep_scale) : T(1);
#pragma omp parallel for schedule(static) if (rows * S >= kParallelWork)
    for (int64_t r = 0; r < rows; ++r) {
        const T* p = P + r * S;
        const T* g = dattn + r * S;
        T* d = dS + r * S;
        T dot = 0;
        if (drop) {
            const uint8_t* k = keep + r * S;
#pragma omp simd reduction(+ : dot)
            for (int64_t j = 0; j < S; ++j) {
                const T v = g[j] * (k[j] ? keep_scale : T(0));
                d[j] = v;
                dot += p[j] * v;
            }
        } else {
#pragma omp simd reduction(+ : dot)
            for (int64_t j = 0; j < S; ++j) {
                d[j] = g[j];
                dot += p[j] * g[j];
            }
        }
#pragma omp simd
        for (int64_t j = 0; j < S; ++j)
            d[j] = p[j] * (d[j] - dot);
    }
}

template void attention_softmax<float>(const float*, int64_t, int64_t, float*,
                                       const kernels::DropoutStream*, float*, uint8_t*);
template void attention_softmax<double>(const double*, int64_t, int64_t, double*,
                                        const kernels::DropoutStream*, double*, uint8_t*);
template void attention_softmax_backward<float>(const float*, const float*, int64_t, int64_t,
                                                const kernels::DropoutStream*, const uint8_t*,
                                                float*);
template void attention_softmax_backward<double>(const double*, const double*, int64_t, int64_t,
                                                 const kernels::DropoutStream*, const uint8_t*,
                                                 double*);
template void head_gemm<float>(int64_t, int64_t, int64_t, int64_t, int64_t, float,
                               const TypedHead<float>&, const TypedHead<float>&, float,
                               const TypedHeadResult<float>&);
template void head_gemm<double>(int64_t, int64_t, int64_t, int64_t, int64_t, double,
                                const TypedHead<double>&, const TypedHead<double>&, double,
                                const TypedHeadResult<double>&);

} // namespace myelin::backend::cpu

namespace myelin::backend {

namespace {

template <typename T>
void head_gemm_typed(const HeadGemmGeometry& g, const HeadOperand& a, const HeadOperand& b,
                     const HeadResult& c) {
    auto in = [](const HeadOperand& o) {
        return cpu::TypedHead<T>{static_cast<const T*>(o.p), o.sb, o.sh, o.ld, o.trans};
    };
    cpu::head_gemm<T>(g.B, g.H, g.M, g.N, g.K, T(g.alpha), in(a), in(b), T(g.beta),
                      {static_cast<T*>(c.p), c.sb, c.sh, c.ld});
}

} // namespace

void CpuNnKernels::head_gemm(const HeadGemmGeometry& g, const HeadOperand& a, const HeadOperand& b,
                             const HeadResult& c) {
    if (g.dtype == DType::Float64)
        head_gemm_typed<double>(g, a, b, c);
    else
        head_gemm_typed<float>(g, a, b, c);
}

void CpuNnKernels::attention_softmax(DType dtype, const void* scores, int64_t rows, int64_t S,
                                     void* P, const kernels::DropoutStream* drop, void* attn,
                                     uint8_t* keep) {
    if (dtype == DType::Float64)
        cpu::attention_softmax<double>(static_cast<const double*>(scores), rows, S,
                                       static_cast<double*>(P), drop, static_cast<double*>(attn),
                                       keep);
    else
        cpu::attention_softmax<float>(static_cast<const float*>(scores), rows, S,
                                      static_cast<float*>(P), drop, static_cast<float*>(attn),
                                      keep);
}

void CpuNnKernels::attention_softmax_backward(DType dtype, const void* P, const void* dattn,
                                              int64_t rows, int64_t S,
                                              const kernels::DropoutStream* drop,
                                              const uint8_t* keep, void* dS) {
    if (dtype == DType::Float64)
        cpu::attention_softmax_backward<double>(static_cast<const double*>(P),
                                                static_cast<const double*>(dattn), rows, S, drop,
                                                keep, static_cast<double*>(dS));
    else
        cpu::attention_softmax_backward<float>(static_cast<const float*>(P),
                                               static_cast<const float*>(dattn), rows, S, drop,
                                               keep, static_cast<float*>(dS));
}

} // namespace myelin::backend
