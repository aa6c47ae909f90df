// linear for float32 CPU tensors on oneDNN's matmul (bench/bench_gemm_shapes.cpp: 10-30% faster
// than OpenBLAS's sgemm on the batch-128 products of an MLP, on one and two threads). Forward is
// one primitive with the bias fused; backward computes dx = g W and dW = g^T x as two more
// primitives that read the transposes through strides (no copies) and db as the column sums of g.
// The products are nn/onednn_matmul.h's (shared with the recurrent layers' sequence GEMMs).
#include "autograd/function.h"
#include "backend/backend.h"
#include "nn/functional_common.h"
#include "nn/onednn_matmul.h"
#include "tensor/tensor_impl.h"

#include <string>

namespace myelin::nn::detail {

using autograd::Node;
using autograd::SavedTensor;
using myelin::detail::make_tensor;

namespace {

// c [M, N] (row-major, contiguous) = a [M, K] @ b [K, N] (+ bias [N] on every row).
void matmul(GemmOperand<float> a, GemmOperand<float> b, const float* bias, float* c, int64_t M,
            int64_t N, int64_t K) {
    if (!onednn_matmul(M, N, K, a, b, bias, c, N, false))
        throw Error("linear: oneDNN has no matmul for " + std::to_string(M) + " x " +
                    std::to_string(K) + " @ " + std::to_string(K) + " x " + std::to_string(N));
}

// A row-major [rows, cols] matrix with rows `ld` apart, or (transposed) its transpose read in
// place.
GemmOperand<float> operand(const float* p, int64_t ld, bool transposed) {
    return transposed ? GemmOperand<float>{p, 1, ld} : GemmOperand<float>{p, ld, 1};
}

// The weight [N, K] as oneDNN reads it: row-major, or the transpose of a row-major [K, N] (a
// tied or transposed weight); anything else is copied once.
Tensor plain_weight(const Tensor& w) {
    const bool row_major = w.stride(1) == 1 && w.stride(0) >= w.size(1);
    const bool col_major = w.stride(0) == 1 && w.stride(1) >= w.size(0);
    return row_major || col_major ? w : w.contiguous();
}

GemmOperand<float> weight_operand(const Tensor& w, bool as_transpose) {
    const bool col_major = w.stride(1) != 1;
    const int64_t ld = col_major ? w.stride(1) : w.stride(0);
    return operand(w.data<float>(), ld, col_major != as_transpose);
}

} // namespace

bool linear_f32_applies(const Tensor& x, const Tensor& w, const Tensor& b) {
    // oneDNN reads host memory: the CPU's, or that of a host-backed device (the test device
    // that stands in for a GPU), which then computes the CPU's bits.
    const auto cpu_f32 = [](const Tensor& t) {
        if (t.dtype() != DType::Float32) return false;
        if (t.device().is_cpu()) return true;
        const backend::Backend* b = backend::find(t.device().type);
        return b != nullptr && b->host_addressable();
    };
    return cpu_f32(x) && cpu_f32(w) && (!b.defined() || cpu_f32(b)) && x.numel() > 0 &&
           w.numel() > 0;
}

Tensor linear_f32(const Tensor& x, const Tensor& w, const Tensor& b) {
    const int64_t K = w.size(1), N = w.size(0), M = x.numel() / K;
    const Tensor xc = x.detach().contiguous();
    const Tensor wp = plain_weight(w.detach());
    const Tensor bc = b.defined() ? b.detach().contiguous() : Tensor();
    Dims out_shape = x.shape();
    out_shape[out_shape.size() - 1] = N;
    Tensor y = make_tensor(out_shape, DType::Float32, x.device());
    // y [M, N] = x [M, K] @ w^T [K, N] + b
    matmul(operand(xc.data<float>(), K, false), weight_operand(wp, true),
           bc.defined() ? bc.data<float>() : nullptr, y.data<float>(), M, N, K);
    if (autograd::needs_grad({&x, &w, &b}))
        autograd::record(
            b.defined() ? "AddmmBackward0" : "MmBackward0", {&x, &w, &b}, y,
            [sx = SavedTensor(x), sw = SavedTensor(w), in_shape = x.shape(), M, N,
             K](const Tensor& grad, const Node& n) {
                const Tensor g = grad.contiguous();
                TensorList r(3);
                if (n.needs_input_grad(0)) { // dx [M, K] = g [M, N] @ w [N, K]
                    const Tensor wv = plain_weight(sw.unpack(n).detach());
                    Tensor dx = make_tensor(in_shape, DType::Float32, g.device());
                    matmul(operand(g.data<float>(), N, false), weight_operand(wv, false), nullptr,
                           dx.data<float>(), M, K, N);
                    r[0] = dx;
                }
                if (n.needs_input_grad(1)) { // dW [N, K] = g^T [N, M] @ x [M, K]
                    const Tensor xv = sx.unpack(n).detach().contiguous();
                    Tensor dw = make_tensor({N, K}, DType::Float32, g.device());
                    matmul(operand(g.data<float>(), N, true), operand(xv.data<float>(), K, false),
                           nullptr, dw.data<float>(), N, K, M);
                    r[1] = dw;
                }
                if (n.needs_input_grad(2)) r[2] = g.view({M, N}).sum({0});
                return r;
            });
    return y;
}

} // namespace myelin::nn::detail
