// linear under autocast: y = half(x) @ half(w)^T with float32 accumulation and output, on the
// device's batched GEMM over half operands (the CPU: oneDNN's bf16 matmul where it has one;
// CUDA: cuBLAS).
// Forward saves the half operands (half the memory of float32); backward rounds the output
// gradient to the lower dtype and returns float32 gradients, so float32 parameters get float32
// .grad. And the two casts with which convolutions emulate the lowered product.
#include "autograd/function.h"
#include "nn/functional_common.h"
#include "tensor/tensor_impl.h"

#include <myelin/nn/functional.h>

namespace myelin::nn::detail {

using autograd::Node;
using autograd::SavedTensor;
using myelin::detail::make_tensor;
using myelin::detail::view_of;

namespace {

// c [M, N] float32 = a @ b on the device's batched GEMM, a and b float16 / bfloat16 contiguous
// tensors; `ta` means a is stored as [K, M], `tb` that b is stored as [N, K]: no transposed
// copies.
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

} // namespace myelin::nn::detail
