// Batched GEMM on OpenBLAS. Each matrix operand is described to BLAS as row-major (unit stride
// in its last dim) or transposed (unit stride in its first dim); size-1 dims, whose strides are
// arbitrary, are normalised first, and anything BLAS cannot describe (a 0 stride inside a
// matrix, overlapping rows) is copied to a packed buffer.
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_matmul.h"

#include <myelin/error.h>

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace myelin::backend {
namespace {

// How BLAS sees one rows x cols matrix: element (r, c) lives at r * ld + c (row-major) or at
// c * ld + r (column-major, i.e. the transpose of a row-major matrix).
struct MatLayout {
    bool ok = false; // false: BLAS cannot address it in place
    bool col_major = false;
    int64_t ld = 1;
};

MatLayout mat_layout_any(int64_t rows, int64_t cols, int64_t s_r, int64_t s_c) {
    if (rows <= 1 && cols <= 1) return {true, false, 1};
    // A size-1 dim never moves the pointer, so its stride is whatever suits BLAS.
    if (rows == 1) {
        if (s_c == 1) return {true, false, std::max<int64_t>(1, cols)};
        if (s_c >= 1) return {true, true, s_c};
    }
    if (cols == 1) {
        if (s_r == 1) return {true, true, std::max<int64_t>(1, rows)};
        if (s_r >= 1) return {true, false, s_r};
    }
    if (s_c == 1 && s_r >= std::max<int64_t>(1, cols)) return {true, false, s_r};
    if (s_r == 1 && s_c >= std::max<int64_t>(1, rows)) return {true, true, s_c};
    return {};
}

MatLayout mat_layout(int64_t rows, int64_t cols, int64_t s_r, int64_t s_c) {
    const MatLayout l = mat_layout_any(rows, cols, s_r, s_c);
    return l.ld <= std::numeric_limits<blasint>::max() ? l : MatLayout{}; // BLAS ld is 32-bit
}

// Copies a strided rows x cols matrix into a packed row-major buffer.
template <typename T>
void pack(const T* src, int64_t rows, int64_t cols, int64_t s_r, int64_t s_c, T* dst) {
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
            dst[r * cols + c] = src[r * s_r + c * s_c];
}

inline void gemm_call(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m,
                      int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                      int64_t ldb, float beta, float* c, int64_t ldc) {
    cblas_sgemm(order, ta, tb, blasint(m), blasint(n), blasint(k), 1.0f, a, blasint(lda), b,
                blasint(ldb), beta, c, blasint(ldc));
}
inline void gemm_call(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m,
                      int64_t n, int64_t k, const double* a, int64_t lda, const double* b,
                      int64_t ldb, double beta, double* c, int64_t ldc) {
    cblas_dgemm(order, ta, tb, blasint(m), blasint(n), blasint(k), 1.0, a, blasint(lda), b,
                blasint(ldb), beta, c, blasint(ldc));
}

// Below this many multiply-adds per matrix, batches run in parallel with one BLAS thread each
// (the OpenMP build of OpenBLAS runs single-threaded inside a parallel region).
constexpr int64_t kSmallGemm = 64 * 64 * 64;

template <typename T>
void batched_gemm_impl(const View& a, const View& b, const View& c, bool acc) {
    const int64_t B = c.shape[0], M = c.shape[1], N = c.shape[2], K = a.shape[2];
    if (B == 0 || M == 0 || N == 0) return;
    T* cp = static_cast<T*>(c.data);
    const MatLayout lc = mat_layout(M, N, c.strides[1], c.strides[2]);
    if (K == 0) { // an empty sum: c = 0 (or unchanged when accumulating)
        if (!acc)
            for (int64_t i = 0; i < B; ++i)
                for (int64_t r = 0; r < M; ++r)
                    for (int64_t q = 0; q < N; ++q)
                        cp[i * c.strides[0] + r * c.strides[1] + q * c.strides[2]] = T(0);
        return;
    }

    const T* ap = static_cast<const T*>(a.data);
    const T* bp = static_cast<const T*>(b.data);
    int64_t sa = B > 1 ? a.strides[0] : 0, sb = B > 1 ? b.strides[0] : 0;
    int64_t sc = c.strides[0];
    MatLayout la = mat_layout(M, K, a.strides[1], a.strides[2]);
    MatLayout lb = mat_layout(K, N, b.strides[1], b.strides[2]);

    // Operands BLAS cannot address are packed (once when broadcast over the batch).
    std::vector<T> a_buf, b_buf;
    auto pack_operand = [&](const T* p, const View& v, int64_t rows, int64_t cols, int64_t& s,
                            std::vector<T>& buf, MatLayout& l) {
        const int64_t count = s == 0 ? 1 : B;
        buf.resize(static_cast<size_t>(count * rows * cols));
        for (int64_t i = 0; i < count; ++i)
            pack(p + i * s, rows, cols, v.strides[1], v.strides[2], buf.data() + i * rows * cols);
        s = s == 0 ? 0 : rows * cols;
        l = {true, false, std::max<int64_t>(1, cols)};
        return static_cast<const T*>(buf.data());
    };
    if (!la.ok) ap = pack_operand(ap, a, M, K, sa, a_buf, la);
    if (!lb.ok) bp = pack_operand(bp, b, K, N, sb, b_buf, lb);

    const T beta = acc ? T(1) : T(0);
    // BLAS writes C in its own order; a column-major C is the transpose: C^T = B^T A^T.
    auto one = [&](const T* am, const T* bm, T* cm, int64_t m) {
        if (!lc.col_major) {
            gemm_call(CblasRowMajor, la.col_major ? CblasTrans : CblasNoTrans,
                      lb.col_major ? CblasTrans : CblasNoTrans, m, N, K, am, la.ld, bm, lb.ld, beta,
                      cm, lc.ld);
        } else {
            gemm_call(CblasColMajor, la.col_major ? CblasNoTrans : CblasTrans,
                      lb.col_major ? CblasNoTrans : CblasTrans, m, N, K, am, la.ld, bm, lb.ld, beta,
                      cm, lc.ld);
        }
    };

    // A batch of row-major A over one shared B with C rows following each other is a single
    // (B*M) x K GEMM: the usual Linear layer over a [batch, seq, features] input.
    if (B > 1 && sb == 0 && !la.col_major && !lc.col_major && sa == M * la.ld && sc == M * lc.ld) {
        one(ap, bp, cp, B * M);
        return;
    }
    if (B > 1 && M * N * K < kSmallGemm && B * M * N * K >= kParallelGrain &&
        omp_get_max_threads() > 1) {
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < B; ++i)
            one(ap + i * sa, bp + i * sb, cp + i * sc, M);
        return;
    }
    for (int64_t i = 0; i < B; ++i)
        one(ap + i * sa, bp + i * sb, cp + i * sc, M);
}

std::string shape_str(const View& v) {
    std::string s = "[";
    for (int d = 0; d < v.ndim; ++d) {
        if (d) s += ", ";
        s += std::to_string(v.shape[d]);
    }
    return s + "]";
}

// Autocast's bfloat16 products on oneDNN's bf16 matmul (Debian's OpenBLAS 0.3.21 is built
// without sbgemm), one matrix at a time; false where it does not apply (the caller widens).
bool bf16_matmul(const View& a, const View& b, const View& c, bool accumulate) {
    const int64_t batch = c.shape[0], M = c.shape[1], N = c.shape[2], K = a.shape[2];
    const auto unit = [](const View& v) { return v.strides[1] == 1 || v.strides[2] == 1; };
    // Anything else, mismatched shapes included, goes the widening way (which names them).
    if (a.dtype != DType::BFloat16 || accumulate || c.ndim != 3 || !c.is_contiguous() || !unit(a) ||
        !unit(b) || M == 0 || N == 0 || K == 0 || a.shape[0] != batch || b.shape[0] != batch ||
        a.shape[1] != M || b.shape[1] != K || b.shape[2] != N)
        return false;
    for (int64_t i = 0; i < batch; ++i) {
        const auto* ap = static_cast<const uint16_t*>(a.data) + i * a.strides[0];
        const auto* bp = static_cast<const uint16_t*>(b.data) + i * b.strides[0];
        if (!cpu::onednn_matmul_bf16(M, N, K, {ap, a.strides[1], a.strides[2]},
                                     {bp, b.strides[1], b.strides[2]},
                                     static_cast<float*>(c.data) + i * M * N))
            return false; // the same for every matrix: none is written
    }
    return true;
}

} // namespace

void CpuBackend::batched_gemm(const View& a, const View& b, const View& c, bool accumulate) {
    // Autocast's lowered products: float16 / bfloat16 operands, float32 output. A product of two
    // such values is exact in float32, so the float32 GEMM of the widened operands gives it.
    const bool half_operands = a.dtype == DType::Float16 || a.dtype == DType::BFloat16;
    if (half_operands && b.dtype == a.dtype && c.dtype == DType::Float32 && a.ndim == 3 &&
        b.ndim == 3) {
        if (bf16_matmul(a, b, c, accumulate)) return;
        std::vector<float> wide_a(size_t(a.numel())), wide_b(size_t(b.numel()));
        const View fa = contiguous_view(wide_a.data(), DType::Float32, a.shape, a.ndim);
        const View fb = contiguous_view(wide_b.data(), DType::Float32, b.shape, b.ndim);
        copy(a, fa);
        copy(b, fb);
        return batched_gemm(fa, fb, c, accumulate);
    }
    if (a.dtype != b.dtype || a.dtype != c.dtype)
        throw DTypeError(std::string("batched_gemm(): operand dtypes differ (") +
                         dtype_name(a.dtype) + ", " + dtype_name(b.dtype) + ", " +
                         dtype_name(c.dtype) + ")");
    if (a.dtype != DType::Float32 && a.dtype != DType::Float64)
        throw DTypeError(std::string("batched_gemm(): dtype ") + dtype_name(a.dtype) +
                         " is not supported (expected float32 or float64)");
    if (a.ndim != 3 || b.ndim != 3 || c.ndim != 3 || a.shape[0] != c.shape[0] ||
        b.shape[0] != c.shape[0] || a.shape[1] != c.shape[1] || b.shape[2] != c.shape[2] ||
        a.shape[2] != b.shape[1])
        throw ShapeError("batched_gemm(): shapes " + shape_str(a) + " @ " + shape_str(b) + " -> " +
                         shape_str(c) + " do not match [B, M, K] @ [B, K, N] -> [B, M, N]");
    const int64_t M = c.shape[1], N = c.shape[2];
    // BLAS takes 32-bit sizes (the batch may be fused into M, so check the product too).
    constexpr int64_t kBlasMax = std::numeric_limits<blasint>::max();
    if (c.shape[0] * M > kBlasMax || N > kBlasMax || a.shape[2] > kBlasMax)
        throw ShapeError("batched_gemm(): matrix dimensions " + shape_str(a) + " @ " +
                         shape_str(b) + " exceed the BLAS limit of " + std::to_string(kBlasMax));
    if (c.numel() > 0) {
        if (!mat_layout(M, N, c.strides[1], c.strides[2]).ok)
            throw ShapeError("batched_gemm(): the output matrices must be row- or column-major");
        if (c.shape[0] > 1 && c.strides[0] == 0)
            throw ShapeError("batched_gemm(): the output cannot be broadcast over the batch");
    }
    if (a.dtype == DType::Float32)
        batched_gemm_impl<float>(a, b, c, accumulate);
    else
        batched_gemm_impl<double>(a, b, c, accumulate);
}

} // namespace myelin::backend
