// StepGemm: oneDNN matmul on prepacked weights (float32), BLAS otherwise (see the header).
#include "backend/cpu/dnnl_scratch.h"

#include "backend/cpu/cpu_step_gemm.h"

#include <cblas.h>

#include <algorithm>
#include <type_traits>
#include <unordered_map>

namespace myelin::backend::cpu {

namespace du = myelin::backend::dnnl_util;
using dnnl::memory;

struct StepMatmul {
    memory::desc a, w, bias, y;
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul prim;
};

template <typename T> struct StepGemm<T>::Packed {
    std::shared_ptr<StepMatmul> prim;
    Tensor weights; // the reordered weights' bytes
    // The execution's arguments, made once: run() only points a and y at the step's rows (new
    // memory objects and a scratchpad per call cost 2-3% of a 64 x 256 x 1024 product).
    std::unordered_map<int, memory> args;
    memory a, y;
    Tensor scratch;
};

namespace {

du::PrimitiveCache<StepMatmul>& step_cache() {
    static du::PrimitiveCache<StepMatmul> cache;
    return cache;
}

std::shared_ptr<StepMatmul> step_matmul(int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldy,
                                        bool bias, bool accumulate) {
    return step_cache().get({M, N, K, lda, ldy, bias, accumulate}, [&] {
        const auto f32 = memory::data_type::f32;
        auto e = std::make_shared<StepMatmul>();
        e->a = memory::desc({M, K}, f32, memory::dims{lda, 1});
        e->w = memory::desc({K, N}, f32, memory::format_tag::any);
        e->y = memory::desc({M, N}, f32, memory::dims{ldy, 1});
        if (bias) e->bias = memory::desc({1, N}, f32, memory::dims{N, 1});
        dnnl::primitive_attr attr = du::user_scratchpad();
        if (accumulate) {
            dnnl::post_ops ops;
            ops.append_sum(1.0f);
            attr.set_post_ops(ops);
        }
        e->pd = dnnl::matmul::primitive_desc(bias ? dnnl::matmul::desc(e->a, e->w, e->bias, e->y)
                                                  : dnnl::matmul::desc(e->a, e->w, e->y),
                                             attr, du::engine());
        e->prim = dnnl::matmul(e->pd);
        return e;
    });
}

inline void blas(bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                 const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, tb ? CblasTrans : CblasNoTrans, blasint(m), blasint(n),
                blasint(k), 1.0f, a, blasint(lda), b, blasint(ldb), beta, c, blasint(ldc));
}
inline void blas(bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
                 const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, tb ? CblasTrans : CblasNoTrans, blasint(m), blasint(n),
                blasint(k), 1.0, a, blasint(lda), b, blasint(ldb), beta, c, blasint(ldc));
}

} // namespace

template <typename T>
StepGemm<T>::StepGemm(int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldy, StepWeights<T> w,
                      bool accumulate)
    : M_(M), N_(N), K_(K), lda_(lda), ldy_(ldy), w_(w), accumulate_(accumulate) {
    if constexpr (std::is_same_v<T, float>) {
        try {
            auto p = std::make_unique<Packed>();
            p->prim = step_matmul(M, N, K, lda, ldy, w.bias != nullptr, accumulate);
            const memory::desc& packed = p->prim->pd.weights_desc();
            p->weights =
                myelin::detail::make_tensor({int64_t(packed.get_size())}, DType::UInt8, kCPU);
            const memory::desc plain({K, N}, memory::data_type::f32,
                                     w.nk ? memory::dims{1, w.ld} : memory::dims{w.ld, 1});
            memory src(plain, du::engine(), const_cast<T*>(w.w));
            memory dst(packed, du::engine(), p->weights.data_ptr());
            dnnl::reorder(src, dst).execute(du::stream(), src, dst);
            du::stream().wait();
            T* any = const_cast<T*>(w.w); // run() points a and y at the step's rows
            p->a = memory(p->prim->a, du::engine(), any);
            p->y = memory(p->prim->y, du::engine(), any);
            p->args = {{DNNL_ARG_SRC, p->a}, {DNNL_ARG_WEIGHTS, dst}, {DNNL_ARG_DST, p->y}};
            if (w.bias)
                p->args.emplace(DNNL_ARG_BIAS,
                                memory(p->prim->bias, du::engine(), const_cast<T*>(w.bias)));
            p->scratch = du::add_scratchpad(p->prim->pd.scratchpad_desc(), p->args);
            packed_ = std::move(p);
        } catch (const dnnl::error&) {
            packed_.reset(); // no such matmul here: BLAS
        }
    }
}

template <typename T> StepGemm<T>::~StepGemm() = default;

template <typename T> void StepGemm<T>::run(const T* a, T* y) const {
    if constexpr (std::is_same_v<T, float>) {
        if (packed_) {
            Packed& p = *packed_;
            p.a.set_data_handle(const_cast<T*>(a));
            p.y.set_data_handle(y);
            p.prim->prim.execute(du::stream(), p.args);
            du::stream().wait();
            return;
        }
    }
    if (w_.bias && !accumulate_)
        for (int64_t i = 0; i < M_; ++i)
            std::copy_n(w_.bias, N_, y + i * ldy_);
    blas(w_.nk, M_, N_, K_, a, lda_, w_.w, w_.ld, accumulate_ || w_.bias ? T(1) : T(0), y, ldy_);
}

template class StepGemm<float>;
template class StepGemm<double>;

namespace {

// The BLAS form of sequence_gemm (float64, and float32 where oneDNN declines).
template <typename T>
void sequence_blas(int64_t M, int64_t N, int64_t K, GemmOperand<T> a, GemmOperand<T> b,
                   const T* bias, T* y, int64_t ldy, bool accumulate) {
    if (bias && !accumulate)
        for (int64_t i = 0; i < M; ++i)
            std::copy_n(bias, N, y + i * ldy);
    const bool ta = a.cs != 1, tb = b.cs != 1;
    const auto t = [](bool tr) { return tr ? CblasTrans : CblasNoTrans; };
    const T beta = accumulate || bias ? T(1) : T(0);
    if constexpr (std::is_same_v<T, float>)
        cblas_sgemm(CblasRowMajor, t(ta), t(tb), blasint(M), blasint(N), blasint(K), 1.0f, a.p,
                    blasint(ta ? a.cs : a.rs), b.p, blasint(tb ? b.cs : b.rs), beta, y,
                    blasint(ldy));
    else
        cblas_dgemm(CblasRowMajor, t(ta), t(tb), blasint(M), blasint(N), blasint(K), 1.0, a.p,
                    blasint(ta ? a.cs : a.rs), b.p, blasint(tb ? b.cs : b.rs), beta, y,
                    blasint(ldy));
}

} // namespace

template <typename T>
void sequence_gemm(int64_t M, int64_t N, int64_t K, GemmOperand<T> a, GemmOperand<T> b,
                   const T* bias, T* y, int64_t ldy, bool accumulate) {
    if (M == 0 || N == 0) return;
    if (K == 0) { // nothing to multiply: y is the bias, zeros, or unchanged
        if (!accumulate)
            for (int64_t i = 0; i < M; ++i)
                for (int64_t j = 0; j < N; ++j)
                    y[i * ldy + j] = bias ? bias[j] : T(0);
        return;
    }
    if constexpr (std::is_same_v<T, float>) {
        if (onednn_matmul(M, N, K, a, b, bias, y, ldy, accumulate)) return;
    }
    sequence_blas(M, N, K, a, b, bias, y, ldy, accumulate);
}

template void sequence_gemm<float>(int64_t, int64_t, int64_t, GemmOperand<float>,
                                   GemmOperand<float>, const float*, float*, int64_t, bool);
template void sequence_gemm<double>(int64_t, int64_t, int64_t, GemmOperand<double>,
                                    GemmOperand<double>, const double*, double*, int64_t, bool);

} // namespace myelin::backend::cpu
