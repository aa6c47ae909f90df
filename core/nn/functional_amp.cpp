// linear under bfloat16 autocast: y = bf16(x) @ bf16(w)^T with float32 accumulation and output,
// on oneDNN's bf16 matmul (Debian's OpenBLAS 0.3.21 is built without sbgemm). Forward saves the
// bf16 operands (half the memory of float32); backward rounds the output gradient to bf16 and
// returns float32 gradients, so float32 parameters get float32 .grad.
#include "autograd/function.h"
#include "nn/dnnl_util.h"
#include "nn/functional_common.h"
#include "tensor/tensor_impl.h"

#include <myelin/nn/functional.h>

namespace myelin::nn::detail {

using autograd::Node;
using autograd::SavedTensor;
using dnnl::memory;
using myelin::detail::make_tensor;
namespace du = myelin::nn::dnnl_util;

namespace {

struct MatmulEntry {
    memory::desc a, b, c;
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul prim;
};

du::PrimitiveCache<MatmulEntry>& matmul_cache() {
    static du::PrimitiveCache<MatmulEntry> cache;
    return cache;
}

// The primitive for c [M, N] f32 = a [M, K] @ b [K, N], a and b bf16; `ta` means a is stored
// as [K, M], `tb` that b is stored as [N, K] (both row-major): no transposed copies.
std::shared_ptr<MatmulEntry> matmul_entry(int64_t M, int64_t K, int64_t N, bool ta, bool tb) {
    return matmul_cache().get({M, K, N, ta, tb}, [&] {
        using tag = memory::format_tag;
        const auto bf16 = memory::data_type::bf16;
        auto e = std::make_shared<MatmulEntry>();
        e->a = memory::desc({M, K}, bf16, ta ? tag::ba : tag::ab);
        e->b = memory::desc({K, N}, bf16, tb ? tag::ba : tag::ab);
        e->c = memory::desc({M, N}, memory::data_type::f32, tag::ab);
        e->pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(e->a, e->b, e->c),
                                             du::user_scratchpad(), du::engine());
        e->prim = dnnl::matmul(e->pd);
        return e;
    });
}

// a, b: contiguous bf16 tensors laid out as matmul_entry describes. Without oneDNN bf16 the
// float32 product of the widened operands is the same up to summation order (bf16 x bf16 is
// exact in float32).
Tensor mm(const Tensor& a, bool ta, const Tensor& b, bool tb, int64_t M, int64_t K, int64_t N) {
    if (!du::bf16_supported()) {
        autograd::NoGradGuard no_grad;
        const Tensor af = a.to(DType::Float32), bf = b.to(DType::Float32);
        return matmul(ta ? af.t() : af, tb ? bf.t() : bf).contiguous();
    }
    Tensor c = make_tensor({M, N}, DType::Float32, a.device());
    auto e = matmul_entry(M, K, N, ta, tb);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, du::memory_of(e->a, a)},
                                         {DNNL_ARG_WEIGHTS, du::memory_of(e->b, b)},
                                         {DNNL_ARG_DST, du::memory_of(e->c, c)}};
    const Tensor scratch = du::add_scratchpad(e->pd.scratchpad_desc(), args);
    e->prim.execute(du::stream(), args);
    du::stream().wait();
    return c;
}

} // namespace

Tensor linear_bf16(const Tensor& x, const Tensor& w) {
    const int64_t K = w.size(1), N = w.size(0), M = x.numel() / K;
    // Rounded to nearest even (BFloat16::from_float), like PyTorch's casts.
    const Tensor xb = x.detach().contiguous().to(DType::BFloat16).view({M, K});
    const Tensor wb = w.detach().contiguous().to(DType::BFloat16);
    Dims out_shape = x.shape();
    out_shape[out_shape.size() - 1] = N;
    Tensor y = mm(xb, false, wb, true, M, K, N).view(out_shape);
    if (autograd::needs_grad({&x, &w}))
        autograd::record("MmBackward0", {&x, &w}, y,
                         [sx = SavedTensor(xb), sw = SavedTensor(wb), in_shape = x.shape(), M, K,
                          N](const Tensor& grad, const Node& n) {
                             const Tensor gy = grad.contiguous().to(DType::BFloat16).view({M, N});
                             TensorList r(2);
                             // dx [M, K] = gy [M, N] @ w [N, K]; dw [N, K] = gy^T [N, M] @ x [M,
                             // K].
                             if (n.needs_input_grad(0))
                                 r[0] = mm(gy, false, sw.unpack(n), false, M, N, K).view(in_shape);
                             if (n.needs_input_grad(1))
                                 r[1] = mm(gy, true, sx.unpack(n), false, N, M, K);
                             return r;
                         });
    return y;
}

} // namespace myelin::nn::detail
