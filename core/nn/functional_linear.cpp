// linear for float32 tensors on the device's Matmul entry (the CPU's: oneDNN's matmul,
// bench/bench_gemm_shapes.cpp: 10-30% faster than OpenBLAS's sgemm on the batch-128 products of
// an MLP, on one and two threads). Forward is one product with the bias fused; backward computes
// dx = g W and dW = g^T x as two more that read the transposes through strides (no copies) and db
// as the column sums of g.
#include "autograd/function.h"
#include "backend/backend.h"
#include "backend/nn_kernels.h"
#include "nn/functional_common.h"
#include "tensor/tensor_impl.h"

#include <string>

namespace myelin::nn::detail {

using autograd::Node;
using autograd::SavedTensor;
using myelin::detail::backend_for;
using myelin::detail::make_tensor;

namespace {

using backend::MatmulOperand;

// c [M, N] (row-major, contiguous) = a [M, K] @ b [K, N] (+ bias [N] on every row), float32.
void matmul(const Tensor& on, MatmulOperand a, MatmulOperand b, const void* bias, void* c,
            int64_t M, int64_t N, int64_t K) {
    backend::NnKernels& k = nn_table(on, backend::Primitive::Matmul);
    if (!k.matmul({DType::Float32, M, N, K, N, false}, a, b, bias, c))
        throw Error("linear: the " + backend_for(on).info().name + " backend has no matmul for " +
                    std::to_string(M) + " x " + std::to_string(K) + " @ " + std::to_string(K) +
                    " x " + std::to_string(N));
}

// A row-major [rows, cols] matrix with rows `ld` apart, or (transposed) its transpose read in
// place.
MatmulOperand operand(const void* p, int64_t ld, bool transposed) {
    return transposed ? MatmulOperand{p, 1, ld} : MatmulOperand{p, ld, 1};
}

// The weight [N, K] as oneDNN reads it: row-major, or the transpose of a row-major [K, N] (a
// tied or transposed weight); anything else is copied once.
Tensor plain_weight(const Tensor& w) {
    const bool row_major = w.stride(1) == 1 && w.stride(0) >= w.size(1);
    const bool col_major = w.stride(0) == 1 && w.stride(1) >= w.size(0);
    return row_major || col_major ? w : w.contiguous();
}

MatmulOperand weight_operand(const Tensor& w, bool as_transpose) {
    const bool col_major = w.stride(1) != 1;
    const int64_t ld = col_major ? w.stride(1) : w.stride(0);
    return operand(w.data_ptr(), ld, col_major != as_transpose);
}

} // namespace

bool linear_f32_applies(const Tensor& x, const Tensor& w, const Tensor& b) {
    const auto f32 = [](const Tensor& t) { return t.dtype() == DType::Float32; };
    if (!f32(x) || !f32(w) || (b.defined() && !f32(b)) || x.numel() == 0 || w.numel() == 0)
        return false;
    if (w.device() != x.device() || (b.defined() && b.device() != x.device()))
        return false; // the composed path names the mismatch
    return device_runs(x, backend::Primitive::Matmul);
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
    matmul(y, operand(xc.data_ptr(), K, false), weight_operand(wp, true),
           bc.defined() ? bc.data_ptr() : nullptr, y.data_ptr(), M, N, K);
    if (autograd::needs_grad({&x, &w, &b}))
        autograd::record(b.defined() ? "AddmmBackward0" : "MmBackward0", {&x, &w, &b}, y,
                         [sx = SavedTensor(x), sw = SavedTensor(w), in_shape = x.shape(), M, N,
                          K](const Tensor& grad, const Node& n) {
                             const Tensor g = grad.contiguous();
                             TensorList r(3);
                             if (n.needs_input_grad(0)) { // dx [M, K] = g [M, N] @ w [N, K]
                                 const Tensor wv = plain_weight(sw.unpack(n).detach());
                                 Tensor dx = make_tensor(in_shape, DType::Float32, g.device());
                                 matmul(g, operand(g.data_ptr(), N, false),
                                        weight_operand(wv, false), nullptr, dx.data_ptr(), M, K, N);
                                 r[0] = dx;
                             }
                             if (n.needs_input_grad(1)) { // dW [N, K] = g^T [N, M] @ x [M, K]
                                 const Tensor xv = sx.unpack(n).detach().contiguous();
                                 Tensor dw = make_tensor({N, K}, DType::Float32, g.device());
                                 matmul(g, operand(g.data_ptr(), N, true),
                                        operand(xv.data_ptr(), K, false), nullptr, dw.data_ptr(), N,
                                        K, M);
                                 r[1] = dw;
                             }
                             if (n.needs_input_grad(2)) r[2] = g.view({M, N}).sum({0});
                             return r;
                         });
    return y;
}

} // namespace myelin::nn::detail
