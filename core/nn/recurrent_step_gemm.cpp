// StepGemm: oneDNN matmul on prepacked weights (float32), BLAS otherwise (see the header).
// dnnl_util.h first: it names myelin::detail as `detail`, which inside myelin::nn would find
// nn::detail once that is declared.
#include "nn/dnnl_util.h"

#include "nn/recurrent_step_gemm.h"

#include <cblas.h>

#include <type_traits>
#include <unordered_map>

namespace myelin::nn::detail {

namespace du = myelin::nn::dnnl_util;
using dnnl::memory;

struct StepMatmul {
    memory::desc a, w, y;
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul prim;
};

template <typename T> struct StepGemm<T>::Packed {
    std::shared_ptr<StepMatmul> prim;
    Tensor weights; // the reordered weights' bytes
};

namespace {

du::PrimitiveCache<StepMatmul>& step_cache() {
    static du::PrimitiveCache<StepMatmul> cache;
    return cache;
}

std::shared_ptr<StepMatmul> step_matmul(int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldy,
                                        bool accumulate) {
    return step_cache().get({M, N, K, lda, ldy, accumulate}, [&] {
        const auto f32 = memory::data_type::f32;
        auto e = std::make_shared<StepMatmul>();
        e->a = memory::desc({M, K}, f32, memory::dims{lda, 1});
        e->w = memory::desc({K, N}, f32, memory::format_tag::any);
        e->y = memory::desc({M, N}, f32, memory::dims{ldy, 1});
        dnnl::primitive_attr attr = du::user_scratchpad();
        if (accumulate) {
            dnnl::post_ops ops;
            ops.append_sum(1.0f);
            attr.set_post_ops(ops);
        }
        e->pd =
            dnnl::matmul::primitive_desc(dnnl::matmul::desc(e->a, e->w, e->y), attr, du::engine());
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
StepGemm<T>::StepGemm(int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldy, const T* w,
                      bool w_nk, bool accumulate)
    : M_(M), N_(N), K_(K), lda_(lda), ldy_(ldy), w_(w), w_nk_(w_nk), accumulate_(accumulate) {
    if constexpr (std::is_same_v<T, float>) {
        try {
            auto p = std::make_unique<Packed>();
            p->prim = step_matmul(M, N, K, lda, ldy, accumulate);
            const memory::desc& packed = p->prim->pd.weights_desc();
            p->weights =
                myelin::detail::make_tensor({int64_t(packed.get_size())}, DType::UInt8, kCPU);
            const memory::desc plain({K, N}, memory::data_type::f32,
                                     w_nk ? memory::dims{1, K} : memory::dims{N, 1});
            memory src(plain, du::engine(), const_cast<T*>(w));
            memory dst(packed, du::engine(), p->weights.data_ptr());
            dnnl::reorder(src, dst).execute(du::stream(), src, dst);
            du::stream().wait();
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
            const StepMatmul& e = *packed_->prim;
            std::unordered_map<int, memory> args{
                {DNNL_ARG_SRC, memory(e.a, du::engine(), const_cast<T*>(a))},
                {DNNL_ARG_WEIGHTS,
                 memory(e.pd.weights_desc(), du::engine(), packed_->weights.data_ptr())},
                {DNNL_ARG_DST, memory(e.y, du::engine(), y)}};
            const Tensor scratch = du::add_scratchpad(e.pd.scratchpad_desc(), args);
            e.prim.execute(du::stream(), args);
            du::stream().wait();
            return;
        }
    }
    blas(w_nk_, M_, N_, K_, a, lda_, w_, w_nk_ ? K_ : N_, accumulate_ ? T(1) : T(0), y, ldy_);
}

template class StepGemm<float>;
template class StepGemm<double>;

} // namespace myelin::nn::detail
