// linear under autocast: y = half(x) @ half(w)^T with float32 accumulation and output: bfloat16
// on the CPU on oneDNN's bf16 matmul (Debian's OpenBLAS 0.3.21 is built without sbgemm), float16
// (and bfloat16 elsewhere) on the device's batched GEMM over half operands (cuBLAS on CUDA).
// Forward saves the half operands (half the memory of float32); backward rounds the output
// gradient to the lower dtype and returns float32 gradients, so float32 parameters get float32
// .grad. And the two casts with which convolutions emulate the lowered product.
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
using myelin::detail::view_of;
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

// c [M, N] float32 = a @ b on the device's batched GEMM, a and b float16 / bfloat16 tensors laid
// out as matmul_entry describes.
Tensor half_mm(const Tensor& a, bool ta, const Tensor& b, bool tb, int64_t M, int64_t K,
               int64_t N) {
    using myelin::detail::make_view;
    const Tensor av = make_view(a, {1, M, K}, ta ? Dims{M * K, 1, M} : Dims{M * K, K, 1}, 0);
    const Tensor bv = make_view(b, {1, K, N}, tb ? Dims{K * N, 1, K} : Dims{K * N, N, 1}, 0);
    Tensor c = make_tensor({M, N}, DType::Float32, a.device());
    myelin::detail::backend_for(a).batched_gemm(view_of(av), view_of(bv),
                                                view_of(c.view({1, M, N})), false);
    return c;
}

} // namespace

Tensor linear_lowered(const Tensor& x, const Tensor& w, DType lower) {
    if (lower == DType::BFloat16 && x.device().is_cpu()) return linear_bf16(x, w);
    const int64_t K = w.size(1), N = w.size(0), M = x.numel() / K;
    Tensor xh, wh;
    {
        autograd::NoGradGuard no_grad;
        xh = x.detach().contiguous().to(lower).view({M, K});
        wh = w.detach().contiguous().to(lower);
    }
    Dims out_shape = x.shape();
    out_shape[out_shape.size() - 1] = N;
    Tensor y = half_mm(xh, false, wh, true, M, K, N).view(out_shape);
    if (autograd::needs_grad({&x, &w}))
        autograd::record(
            "MmBackward0", {&x, &w}, y,
            [sx = SavedTensor(xh), sw = SavedTensor(wh), in_shape = x.shape(), M, K, N,
             lower](const Tensor& grad, const Node& n) {
                const Tensor gy = grad.contiguous().to(lower).view({M, N});
                TensorList r(2);
                if (n.needs_input_grad(0))
                    r[0] = half_mm(gy, false, sw.unpack(n), false, M, N, K).view(in_shape);
                if (n.needs_input_grad(1)) r[1] = half_mm(gy, true, sx.unpack(n), false, N, M, K);
                return r;
            });
    return y;
}

Tensor round_operand(const Tensor& t, DType lower) {
    Tensor out;
    {
        autograd::NoGradGuard no_grad;
        out = t.detach().to(lower).to(DType::Float32);
    }
    if (autograd::needs_grad({&t}))
        autograd::record("AutocastOperandBackward0", {&t}, out,
                         [](const Tensor& g, const Node&) { return TensorList{g}; });
    return out;
}

Tensor round_gradient(const Tensor& y, DType lower) {
    if (!autograd::needs_grad({&y})) return y;
    Tensor out = y.detach();
    autograd::record("AutocastOutputBackward0", {&y}, out, [lower](const Tensor& g, const Node&) {
        return TensorList{g.to(lower).to(DType::Float32)};
    });
    return out;
}

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
