// Reductions, softmax and norms. The front end moves reduced dims last (a View permutation, no
// copy) and the backend reduces the trailing block.
#include "autograd/function.h"
#include "tensor/tensor_impl.h"

#include <cmath>

namespace myelin {

using autograd::Node;
using autograd::record;
using autograd::SavedTensor;
using backend::ReduceOp;
using namespace detail;

namespace {

struct Reduction {
    bool reduced[kMaxDims] = {};
    int count = 0;    // number of reduced dims
    int64_t size = 1; // number of elements reduced into each output
    Dims out_shape;   // without keepdim
    Dims keep_shape;  // with keepdim
};

Reduction plan(const Tensor& x, const Dims& dims, const char* op) {
    Reduction r;
    const int n = x.dim();
    if (dims.empty()) {
        for (int d = 0; d < n; ++d)
            r.reduced[d] = true;
    } else {
        for (int64_t d : dims) {
            const int w = wrap_dim(static_cast<int>(d), n, op);
            if (n == 0) continue;
            if (r.reduced[w])
                throw ShapeError(std::string(op) + ": dim " + std::to_string(w) +
                                 " appears multiple times in the list of dims");
            r.reduced[w] = true;
        }
    }
    for (int d = 0; d < n; ++d) {
        if (r.reduced[d]) {
            ++r.count;
            r.size *= x.size(d);
            r.keep_shape.push_back(1);
        } else {
            r.out_shape.push_back(x.size(d));
            r.keep_shape.push_back(x.size(d));
        }
    }
    return r;
}

// Runs the backend reduction; returns values (and indices when asked) shaped per keepdim.
Tensor reduce_raw(ReduceOp op, const Tensor& x, const Reduction& r, bool keepdim, DType compute,
                  DType out_dtype, backend::OpParams p = {}, Tensor* indices = nullptr) {
    const Tensor xc = x.dtype() == compute ? x : raw_convert(x, compute);
    backend::View v = view_of(xc);
    int k = 0;
    for (int pass = 0; pass < 2; ++pass)
        for (int d = 0; d < x.dim(); ++d)
            if (r.reduced[d] == (pass == 1)) {
                v.shape[k] = x.size(d);
                v.strides[k] = xc.stride(d);
                ++k;
            }
    const bool arg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
    Tensor out = make_tensor(r.out_shape, arg ? DType::Int64 : compute, x.device());
    Tensor idx;
    backend::View idx_view;
    if (indices) {
        idx = make_tensor(r.out_shape, DType::Int64, x.device());
        idx_view = view_of(idx);
    }
    backend_for(x).reduce(op, v, r.count, view_of(out), indices ? &idx_view : nullptr, p);
    if (!arg && out.dtype() != out_dtype) out = raw_convert(out, out_dtype);
    if (keepdim) {
        out = make_view(out, r.keep_shape, contiguous_strides(r.keep_shape), 0);
        if (indices) idx = make_view(idx, r.keep_shape, contiguous_strides(r.keep_shape), 0);
    }
    if (indices) *indices = idx;
    return out;
}

// A gradient of the reduced shape broadcast back over the input's shape.
Tensor expand_back(const Tensor& g, const Dims& in_shape, const Dims& keep_shape) {
    return g.reshape(keep_shape).expand(in_shape);
}

void require_float(const Tensor& x, const char* op) {
    if (!x.is_floating_point())
        throw DTypeError(
            std::string(op) +
            "(): could not infer output dtype. Input dtype must be a floating point dtype, got " +
            dtype_name(x.dtype()));
}

// values/indices style reductions share: gradient flows to positions equal to the result,
// divided evenly among ties (PyTorch's amax/amin/max() backward).
TensorList evenly_distribute(const Tensor& g, const Tensor& x, const Tensor& result,
                             const Reduction& r) {
    const Dims in = x.shape();
    const Tensor mask = eq(x, expand_back(result, in, r.keep_shape)).to(g.dtype());
    const Tensor count = sum(
        mask,
        [&] {
            Dims d;
            for (int i = 0; i < x.dim(); ++i)
                if (r.reduced[i]) d.push_back(i);
            return d;
        }(),
        true);
    return {expand_back(g, in, r.keep_shape) * mask / count};
}

Dims reduced_dims(const Reduction& r, int ndim) {
    Dims d;
    for (int i = 0; i < ndim; ++i)
        if (r.reduced[i]) d.push_back(i);
    return d;
}

} // namespace

Tensor sum(const Tensor& x, const Dims& dims, bool keepdim) {
    const Reduction r = plan(x, dims, "sum");
    const DType rt = is_floating(x.dtype()) ? x.dtype() : DType::Int64;
    Tensor out = reduce_raw(ReduceOp::Sum, x, r, keepdim, compute_dtype(rt), rt);
    if (autograd::needs_grad({&x}))
        record("SumBackward1", {&x}, out,
               [in = x.shape(), ks = r.keep_shape](const Tensor& g, const Node&) {
                   return TensorList{expand_back(g, in, ks)};
               });
    return out;
}

Tensor mean(const Tensor& x, const Dims& dims, bool keepdim) {
    require_float(x, "mean");
    const Reduction r = plan(x, dims, "mean");
    Tensor out = reduce_raw(ReduceOp::Mean, x, r, keepdim, compute_dtype(x.dtype()), x.dtype());
    if (autograd::needs_grad({&x}))
        record("MeanBackward1", {&x}, out,
               [in = x.shape(), ks = r.keep_shape, n = r.size](const Tensor& g, const Node&) {
                   return TensorList{expand_back(g / static_cast<double>(n), in, ks)};
               });
    return out;
}

Tensor Tensor::sum() const {
    return myelin::sum(*this);
}
Tensor Tensor::sum(const Dims& dims, bool keepdim) const {
    return myelin::sum(*this, dims, keepdim);
}
Tensor Tensor::mean() const {
    return myelin::mean(*this);
}
Tensor Tensor::mean(const Dims& dims, bool keepdim) const {
    return myelin::mean(*this, dims, keepdim);
}

Tensor var(const Tensor& x, const Dims& dims, double correction, bool keepdim) {
    require_float(x, "var");
    const Reduction r = plan(x, dims, "var");
    Tensor out = reduce_raw(ReduceOp::Var, x, r, keepdim, compute_dtype(x.dtype()), x.dtype(),
                            {correction, 0});
    if (autograd::needs_grad({&x}))
        record("VarBackward0", {&x}, out,
               [sx = SavedTensor(x), r, correction](const Tensor& g, const Node& n) {
                   const Tensor xv = sx.unpack(n);
                   const Tensor centered = xv - mean(xv, reduced_dims(r, xv.dim()), true);
                   const double denom = std::max(0.0, static_cast<double>(r.size) - correction);
                   return TensorList{expand_back(g, xv.shape(), r.keep_shape) * centered *
                                     (2.0 / denom)};
               });
    return out;
}

Tensor std(const Tensor& x, const Dims& dims, double correction, bool keepdim) {
    require_float(x, "std");
    const Reduction r = plan(x, dims, "std");
    Tensor v = reduce_raw(ReduceOp::Var, x, r, keepdim, compute_dtype(x.dtype()), x.dtype(),
                          {correction, 0});
    Tensor out = unary_raw(backend::UnaryOp::Sqrt, v, compute_dtype(x.dtype()), x.dtype());
    if (autograd::needs_grad({&x}))
        record("StdBackward0", {&x}, out,
               [sx = SavedTensor(x), so = SavedTensor(out, true), r, correction](const Tensor& g,
                                                                                 const Node& n) {
                   const Tensor xv = sx.unpack(n);
                   const Tensor centered = xv - mean(xv, reduced_dims(r, xv.dim()), true);
                   const double denom = std::max(0.0, static_cast<double>(r.size) - correction);
                   const Tensor s = expand_back(so.unpack(n), xv.shape(), r.keep_shape);
                   return TensorList{expand_back(g, xv.shape(), r.keep_shape) * centered /
                                     (s * denom)};
               });
    return out;
}

static Tensor extreme(const Tensor& x, const Dims& dims, bool keepdim, bool is_max,
                      const char* name, const char* node) {
    const Reduction r = plan(x, dims, name);
    if (r.size == 0 && x.numel() == 0)
        throw IndexError(std::string(name) + "(): expected a non-empty tensor to reduce");
    const DType ct = compute_dtype(x.dtype());
    Tensor out = reduce_raw(is_max ? ReduceOp::Max : ReduceOp::Min, x, r, keepdim, ct, x.dtype());
    if (autograd::needs_grad({&x}))
        record(
            node, {&x}, out,
            [sx = SavedTensor(x), so = SavedTensor(out, true), r](const Tensor& g, const Node& n) {
                return evenly_distribute(g, sx.unpack(n), so.unpack(n), r);
            });
    return out;
}

Tensor amax(const Tensor& x, const Dims& dims, bool keepdim) {
    return extreme(x, dims, keepdim, true, "amax", "AmaxBackward0");
}
Tensor amin(const Tensor& x, const Dims& dims, bool keepdim) {
    return extreme(x, dims, keepdim, false, "amin", "AminBackward0");
}
Tensor max(const Tensor& x) {
    return extreme(x, {}, false, true, "max", "MaxBackward1");
}
Tensor min(const Tensor& x) {
    return extreme(x, {}, false, false, "min", "MinBackward1");
}

static ValuesIndices extreme_dim(const Tensor& x, int dim, bool keepdim, bool is_max) {
    const char* name = is_max ? "max" : "min";
    const Reduction r = plan(x, {dim}, name);
    if (r.size == 0)
        throw IndexError(std::string(name) + "(): cannot reduce over a zero-size dimension");
    Tensor idx;
    Tensor out = reduce_raw(is_max ? ReduceOp::Max : ReduceOp::Min, x, r, keepdim,
                            compute_dtype(x.dtype()), x.dtype(), {}, &idx);
    if (autograd::needs_grad({&x})) {
        const int d = wrap_dim(dim, x.dim(), name);
        record(is_max ? "MaxBackward0" : "MinBackward0", {&x}, out,
               [in = x.shape(), idx, d, ks = r.keep_shape](const Tensor& g, const Node&) {
                   if (in.size() == 0) return TensorList{g.reshape(in)};
                   return TensorList{
                       scatter_add(zeros(in, g.options()), d, idx.reshape(ks), g.reshape(ks))};
               });
    }
    return {out, idx};
}

ValuesIndices max(const Tensor& x, int dim, bool keepdim) {
    return extreme_dim(x, dim, keepdim, true);
}
ValuesIndices min(const Tensor& x, int dim, bool keepdim) {
    return extreme_dim(x, dim, keepdim, false);
}

static Tensor arg_extreme(const Tensor& x, std::optional<int> dim, bool keepdim, bool is_max) {
    const char* name = is_max ? "argmax" : "argmin";
    if (x.numel() == 0) throw IndexError(std::string(name) + "(): expected a non-empty tensor");
    const ReduceOp op = is_max ? ReduceOp::ArgMax : ReduceOp::ArgMin;
    if (!dim) {
        const Tensor flat = x.detach().reshape({-1});
        Tensor out = reduce_raw(op, flat, plan(flat, {0}, name), false, compute_dtype(x.dtype()),
                                DType::Int64);
        return keepdim ? out.reshape(Dims::filled(x.dim(), 1)) : out;
    }
    return reduce_raw(op, x.detach(), plan(x, {*dim}, name), keepdim, compute_dtype(x.dtype()),
                      DType::Int64);
}

Tensor argmax(const Tensor& x, std::optional<int> dim, bool keepdim) {
    return arg_extreme(x, dim, keepdim, true);
}
Tensor argmin(const Tensor& x, std::optional<int> dim, bool keepdim) {
    return arg_extreme(x, dim, keepdim, false);
}
Tensor Tensor::argmax(std::optional<int> dim, bool keepdim) const {
    return myelin::argmax(*this, dim, keepdim);
}

Tensor logsumexp(const Tensor& x, const Dims& dims, bool keepdim) {
    const DType rt = is_floating(x.dtype()) ? x.dtype() : DType::Float32;
    const Reduction r = plan(x, dims, "logsumexp");
    Tensor out = reduce_raw(ReduceOp::LogSumExp, x, r, keepdim, compute_dtype(rt), rt);
    if (autograd::needs_grad({&x}))
        record(
            "LogsumexpBackward0", {&x}, out,
            [sx = SavedTensor(x), so = SavedTensor(out, true), r](const Tensor& g, const Node& n) {
                const Tensor xv = sx.unpack(n);
                const Dims in = xv.shape();
                return TensorList{expand_back(g, in, r.keep_shape) *
                                  exp(xv - expand_back(so.unpack(n), in, r.keep_shape))};
            });
    return out;
}

static Tensor softmax_impl(const Tensor& x, int dim, bool log) {
    const char* name = log ? "log_softmax" : "softmax";
    const DType rt = is_floating(x.dtype()) ? x.dtype() : DType::Float32;
    const DType ct = compute_dtype(rt);
    if (x.dim() == 0) {
        wrap_dim(dim, 0, name);
        return log ? zeros_like(x).to(rt) : ones_like(x).to(rt);
    }
    const int d = wrap_dim(dim, x.dim(), name);
    const Tensor xc = x.dtype() == ct && x.is_contiguous() ? x : raw_convert(x, ct);
    Tensor out = make_tensor(x.shape(), ct, x.device());
    backend_for(x).softmax(view_of(xc), d, log, view_of(out));
    if (ct != rt) out = raw_convert(out, rt);
    if (autograd::needs_grad({&x}))
        record(log ? "LogSoftmaxBackward0" : "SoftmaxBackward0", {&x}, out,
               [so = SavedTensor(out, true), d, log, ct](const Tensor& g, const Node& n) {
                   const Tensor y = so.unpack(n);
                   const Tensor yc = y.dtype() == ct && y.is_contiguous() ? y : raw_convert(y, ct);
                   const Tensor gc = g.dtype() == ct && g.is_contiguous() ? g : raw_convert(g, ct);
                   Tensor gx = make_tensor(y.shape(), ct, y.device());
                   backend_for(y).softmax_backward(view_of(yc), view_of(gc), d, log, view_of(gx));
                   return TensorList{gx.dtype() == g.dtype() ? gx : raw_convert(gx, g.dtype())};
               });
    return out;
}

Tensor softmax(const Tensor& x, int dim) {
    return softmax_impl(x, dim, false);
}
Tensor log_softmax(const Tensor& x, int dim) {
    return softmax_impl(x, dim, true);
}
Tensor Tensor::softmax(int dim) const {
    return myelin::softmax(*this, dim);
}
Tensor Tensor::log_softmax(int dim) const {
    return myelin::log_softmax(*this, dim);
}

Tensor norm(const Tensor& x, double p, const Dims& dims, bool keepdim) {
    require_float(x, "norm");
    const Reduction r = plan(x, dims, "norm");
    Tensor out =
        reduce_raw(ReduceOp::Norm, x, r, keepdim, compute_dtype(x.dtype()), x.dtype(), {p, 0});
    if (autograd::needs_grad({&x}))
        record("NormBackward1", {&x}, out,
               [sx = SavedTensor(x), so = SavedTensor(out, true), r, p](const Tensor& g,
                                                                        const Node& n) {
                   const Tensor xv = sx.unpack(n);
                   const Dims in = xv.shape();
                   const Tensor ge_ = expand_back(g, in, r.keep_shape);
                   const Tensor nv = expand_back(so.unpack(n), in, r.keep_shape);
                   if (p == 0.0) return TensorList{zeros_like(xv)};
                   if (p == 1.0) return TensorList{ge_ * sign(xv)};
                   if (std::isinf(p)) {
                       const Tensor ax = abs(xv);
                       const Tensor mask = eq(ax, nv).to(g.dtype());
                       const Tensor count = sum(mask, reduced_dims(r, xv.dim()), true);
                       return TensorList{ge_ * sign(xv) * mask / count};
                   }
                   // x |x|^(p-2) / ||x||^(p-1), zero where the norm is zero
                   const Tensor safe = where(eq(nv, 0.0), ones_like(nv), nv);
                   Tensor grad =
                       p == 2.0 ? xv / safe : xv * pow(abs(xv), p - 2.0) / pow(safe, p - 1.0);
                   grad = where(eq(nv, 0.0), zeros_like(grad), grad);
                   return TensorList{ge_ * grad};
               });
    return out;
}

} // namespace myelin
