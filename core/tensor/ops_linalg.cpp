// matmul / mm / bmm. Everything lowers to one differentiable batched product of 3-D operands
// whose matrices are row- or column-major views (a transposed operand is never copied).
#include "autograd/function.h"
#include "backend/gemm_layout.h"
#include "tensor/tensor_impl.h"

namespace myelin {

using autograd::Node;
using autograd::record;
using autograd::SavedTensor;
using namespace detail;

namespace {

std::string shape2(const Tensor& t) {
    std::string s;
    for (int d = 0; d < t.dim(); ++d)
        s += (d ? "x" : "") + std::to_string(t.size(d));
    return s;
}

DType check_dtypes(const char* op, const Tensor& a, const Tensor& b) {
    if (a.dtype() != b.dtype())
        throw DTypeError(std::string(op) +
                         ": expected both operands to have the same dtype, but got " +
                         dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()));
    if (!is_floating(a.dtype()))
        throw DTypeError(std::string(op) + ": only floating point dtypes are supported, got " +
                         dtype_name(a.dtype()));
    check_same_device(a, b, op);
    return a.dtype();
}

// A 3-D operand every backend's GEMM can read (backend/gemm_layout.h); an operand repeated
// along a matrix dim (stride 0: sum's gradient is an expand) is copied.
Tensor gemm_ready(const Tensor& t, DType compute) {
    Tensor c = t.dtype() == compute ? t : raw_convert(t, compute);
    const bool readable = backend::gemm_layout(c.size(1), c.size(2), c.stride(1), c.stride(2)) !=
                          backend::GemmLayout::Neither;
    return readable ? c : raw_convert(c, compute);
}

// Whether t's matrices are stored column-major (a transposed view, like linear's weight.t()).
bool column_major(const Tensor& t) {
    return t.stride(1) == 1 && t.stride(2) != 1 && t.size(1) != 1 && t.size(2) != 1;
}

// c[B,M,N] = a[B,M,K] @ b[B,K,N] with autograd; batch dims of a or b may have stride 0.
Tensor batched_product(const Tensor& a, const Tensor& b) {
    const DType rt = a.dtype();
    const DType ct = compute_dtype(rt);
    const Tensor ac = gemm_ready(a, ct), bc = gemm_ready(b, ct);
    Tensor out = make_tensor({a.size(0), a.size(1), b.size(2)}, ct, a.device());
    backend_for(a).batched_gemm(view_of(ac), view_of(bc), view_of(out), false);
    if (ct != rt) out = raw_convert(out, rt);
    if (autograd::needs_grad({&a, &b}))
        record("BmmBackward0", {&a, &b}, out,
               [sa = SavedTensor(a), sb = SavedTensor(b), a_col = column_major(a),
                b_col = column_major(b)](const Tensor& g, const Node& n) {
                   // Each gradient comes out in its operand's memory order, as in PyTorch: a
                   // column-major operand gets (b g^T)^T / (g^T a)^T, so linear's weight
                   // gradient is contiguous without a transposing copy.
                   TensorList r(2);
                   if (n.needs_input_grad(0)) {
                       const Tensor B = sb.unpack(n);
                       r[0] = a_col ? batched_product(B, g.transpose(1, 2)).transpose(1, 2)
                                    : batched_product(g, B.transpose(1, 2));
                   }
                   if (n.needs_input_grad(1)) {
                       const Tensor A = sa.unpack(n);
                       r[1] = b_col ? batched_product(g.transpose(1, 2), A).transpose(1, 2)
                                    : batched_product(A.transpose(1, 2), g);
                   }
                   return r;
               });
    return out;
}

} // namespace

Tensor mm(const Tensor& a, const Tensor& b) {
    if (a.dim() != 2 || b.dim() != 2)
        throw ShapeError("mm: expected 2-D tensors, got " + std::to_string(a.dim()) + "-D and " +
                         std::to_string(b.dim()) + "-D");
    check_dtypes("mm", a, b);
    if (a.size(1) != b.size(0))
        throw ShapeError("mm: mat1 and mat2 shapes cannot be multiplied (" + shape2(a) + " and " +
                         shape2(b) + ")");
    return batched_product(a.unsqueeze(0), b.unsqueeze(0)).squeeze(0);
}

Tensor bmm(const Tensor& a, const Tensor& b) {
    if (a.dim() != 3 || b.dim() != 3)
        throw ShapeError("bmm: expected 3-D tensors, got " + std::to_string(a.dim()) + "-D and " +
                         std::to_string(b.dim()) + "-D");
    check_dtypes("bmm", a, b);
    if (a.size(0) != b.size(0) || a.size(2) != b.size(1))
        throw ShapeError("bmm: batch1 and batch2 shapes cannot be multiplied (" + shape2(a) +
                         " and " + shape2(b) + ")");
    return batched_product(a, b);
}

Tensor matmul(const Tensor& a, const Tensor& b) {
    check_dtypes("matmul", a, b);
    if (a.dim() == 0 || b.dim() == 0)
        throw ShapeError("matmul: both arguments need at least 1 dimension, got " +
                         std::to_string(a.dim()) + "-D and " + std::to_string(b.dim()) + "-D");
    const int64_t k_a = a.size(-1);
    const int64_t k_b = b.dim() == 1 ? b.size(0) : b.size(-2);
    if (k_a != k_b)
        throw ShapeError("matmul: shapes cannot be multiplied (" + shape2(a) + " and " + shape2(b) +
                         "): " + std::to_string(k_a) + " != " + std::to_string(k_b));
    if (a.dim() == 1 && b.dim() == 1) return mm(a.unsqueeze(0), b.unsqueeze(1)).reshape({});
    if (a.dim() == 2 && b.dim() == 1) return mm(a, b.unsqueeze(1)).squeeze(1);
    if (a.dim() == 1 && b.dim() == 2) return mm(a.unsqueeze(0), b).squeeze(0);
    if (a.dim() == 2 && b.dim() == 2) return mm(a, b);
    // [..., M, K] @ [K, N]: fold the batch into M for one big GEMM.
    if (b.dim() <= 2 && a.dim() >= 3) {
        const Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
        Dims out_shape = a.shape();
        out_shape[out_shape.size() - 1] = b2.size(1);
        Tensor r = mm(a.reshape({-1, k_a}), b2).reshape(out_shape);
        return b.dim() == 1 ? r.squeeze(-1) : r;
    }
    // General: broadcast batch dims, then one batched product.
    const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
    const Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
    Dims batch_a, batch_b;
    for (int d = 0; d < a2.dim() - 2; ++d)
        batch_a.push_back(a2.size(d));
    for (int d = 0; d < b2.dim() - 2; ++d)
        batch_b.push_back(b2.size(d));
    Dims batch;
    try {
        batch = broadcast_shapes(batch_a, batch_b);
    } catch (const ShapeError& e) {
        throw ShapeError(std::string("matmul: batch dimensions do not broadcast: ") + e.what());
    }
    const int64_t m = a2.size(-2), n = b2.size(-1), nb = batch.numel();
    Dims ea = batch, eb = batch;
    ea.push_back(m);
    ea.push_back(k_a);
    eb.push_back(k_a);
    eb.push_back(n);
    const Tensor a3 = a2.expand(ea).reshape({nb, m, k_a});
    const Tensor b3 = b2.expand(eb).reshape({nb, k_a, n});
    Dims out_shape = batch;
    out_shape.push_back(m);
    out_shape.push_back(n);
    Tensor r = batched_product(a3, b3).reshape(out_shape);
    if (a.dim() == 1) r = r.squeeze(-2);
    if (b.dim() == 1) r = r.squeeze(-1);
    return r;
}

Tensor Tensor::matmul(const Tensor& other) const {
    return myelin::matmul(*this, other);
}

} // namespace myelin
