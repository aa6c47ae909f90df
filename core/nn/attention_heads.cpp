// head_gemm (see attention_heads.h): one BLAS call per head, the heads split across threads.
#include "nn/attention_heads.h"

#include <cblas.h>
#include <omp.h>

namespace myelin::nn::detail {
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
               const HeadOperand<T>& a, const HeadOperand<T>& b, T beta, const HeadResult<T>& c) {
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

template void head_gemm<float>(int64_t, int64_t, int64_t, int64_t, int64_t, float,
                               const HeadOperand<float>&, const HeadOperand<float>&, float,
                               const HeadResult<float>&);
template void head_gemm<double>(int64_t, int64_t, int64_t, int64_t, int64_t, double,
                                const HeadOperand<double>&, const HeadOperand<double>&, double,
                                const HeadResult<double>&);

} // namespace myelin::nn::detail
