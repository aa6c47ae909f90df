// Indexing, joining: index_select, gather, scatter_add, cat, stack.
#include "autograd/function.h"
#include "tensor/tensor_impl.h"

namespace myelin {

using autograd::Node;
using autograd::record;
using namespace detail;

namespace {

void check_index(const char* op, const Tensor& index, int64_t size, int dim) {
    if (index.dtype() != DType::Int64)
        throw DTypeError(std::string(op) + "(): expected an int64 index tensor, got " +
                         dtype_name(index.dtype()));
    if (const auto known = known_int_values(index); known && known->within(0, size - 1)) return;
    int64_t lo = 0, hi = 0;
    if (backend_for(index).int_range(view_of(index), &lo, &hi) && (lo < 0 || hi >= size))
        throw IndexError(std::string(op) + "(): index " + std::to_string(lo < 0 ? lo : hi) +
                         " is out of bounds for dimension " + std::to_string(dim) + " with size " +
                         std::to_string(size));
}

} // namespace

Tensor index_select(const Tensor& x, int dim, const Tensor& index) {
    dim = wrap_dim(dim, x.dim(), "index_select");
    if (index.dim() > 1)
        throw ShapeError("index_select(): index must be 0-D or 1-D, got shape " +
                         index.shape().str());
    check_same_device(x, index, "index_select");
    check_index("index_select", index, x.dim() ? x.size(dim) : 1, dim);
    const Tensor idx = index.reshape({-1}).contiguous();
    Dims shape = x.shape();
    if (x.dim()) shape[dim] = idx.numel();
    Tensor out = make_tensor(shape, x.dtype(), x.device());
    if (x.dim() == 0) {
        backend_for(x).copy(view_of(x), view_of(out));
    } else {
        backend_for(x).index_select(view_of(x), dim, view_of(idx), view_of(out));
    }
    if (autograd::needs_grad({&x}))
        record("IndexSelectBackward0", {&x}, out,
               [in = x.shape(), dim, idx](const Tensor& g, const Node&) {
                   if (in.size() == 0) return TensorList{g.reshape(in)};
                   Dims ishape = Dims::filled(g.dim(), 1);
                   ishape[dim] = idx.numel();
                   return TensorList{scatter_add(zeros(in, g.options()), dim,
                                                 idx.reshape(ishape).expand(g.shape()), g)};
               });
    return out;
}

Tensor gather(const Tensor& x, int dim, const Tensor& index) {
    dim = wrap_dim(dim, x.dim(), "gather");
    if (index.dim() != x.dim())
        throw ShapeError(
            "gather(): index tensor must have the same number of dimensions as input tensor (" +
            index.shape().str() + " vs " + x.shape().str() + ")");
    for (int d = 0; d < x.dim(); ++d)
        if (d != dim && index.size(d) > x.size(d))
            throw ShapeError("gather(): size of index " + index.shape().str() +
                             " exceeds the input's " + x.shape().str() + " at dimension " +
                             std::to_string(d));
    check_same_device(x, index, "gather");
    check_index("gather", index, x.dim() ? x.size(dim) : 1, dim);
    Tensor out = make_tensor(index.shape(), x.dtype(), x.device());
    backend_for(x).gather(view_of(x), dim, view_of(index), view_of(out));
    if (autograd::needs_grad({&x}))
        record("GatherBackward0", {&x}, out,
               [in = x.shape(), dim, index](const Tensor& g, const Node&) {
                   return TensorList{scatter_add(zeros(in, g.options()), dim, index, g)};
               });
    return out;
}

Tensor scatter_add(const Tensor& x, int dim, const Tensor& index, const Tensor& src) {
    dim = wrap_dim(dim, x.dim(), "scatter_add");
    if (index.dim() != x.dim() || src.dim() != x.dim())
        throw ShapeError("scatter_add(): index " + index.shape().str() + ", src " +
                         src.shape().str() + " and self " + x.shape().str() +
                         " must have the same number of dimensions");
    for (int d = 0; d < x.dim(); ++d)
        if (index.size(d) > src.size(d) || (d != dim && index.size(d) > x.size(d)))
            throw ShapeError("scatter_add(): expected index " + index.shape().str() +
                             " to be no larger than src " + src.shape().str() +
                             " and, apart from dimension " + std::to_string(dim) + ", self " +
                             x.shape().str());
    if (src.dtype() != x.dtype())
        throw DTypeError(
            std::string("scatter_add(): expected self and src to have the same dtype, got ") +
            dtype_name(x.dtype()) + " and " + dtype_name(src.dtype()));
    check_same_device(x, index, "scatter_add");
    check_same_device(x, src, "scatter_add");
    check_index("scatter_add", index, x.dim() ? x.size(dim) : 1, dim);
    Tensor out = raw_convert(x, x.dtype());
    // src is read through index's shape (PyTorch only uses src's leading sub-block).
    Dims starts;
    Tensor src_block = src.detach();
    for (int d = 0; d < x.dim(); ++d)
        src_block = src_block.narrow(d, 0, index.size(d));
    backend_for(x).scatter_add(view_of(out), dim, view_of(index), view_of(src_block));
    if (autograd::needs_grad({&x, &src}))
        record("ScatterAddBackward0", {&x, &src}, out,
               [dim, index, ss = src.shape()](const Tensor& g, const Node& n) {
                   TensorList r(2);
                   if (n.needs_input_grad(0)) r[0] = g;
                   if (n.needs_input_grad(1)) {
                       Tensor gs = gather(g, dim, index);
                       if (!(gs.shape() == ss)) {
                           Tensor full = zeros(ss, g.options());
                           Tensor block = full;
                           for (int d = 0; d < full.dim(); ++d)
                               block = block.narrow(d, 0, index.size(d));
                           block.copy_(gs);
                           gs = full;
                       }
                       r[1] = gs;
                   }
                   return r;
               });
    return out;
}

Tensor cat(const TensorList& tensors, int dim) {
    if (tensors.empty()) throw Error("cat(): expected a non-empty list of tensors");
    const Tensor& first = tensors[0];
    if (first.dim() == 0)
        throw ShapeError("cat(): zero-dimensional tensor (at position 0) cannot be concatenated");
    dim = wrap_dim(dim, first.dim(), "cat");
    DType rt = first.dtype();
    int64_t total = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const Tensor& t = tensors[i];
        if (t.dim() != first.dim())
            throw ShapeError("cat(): tensors must have the same number of dimensions: got " +
                             std::to_string(first.dim()) + " and " + std::to_string(t.dim()) +
                             " (tensor " + std::to_string(i) + ")");
        for (int d = 0; d < t.dim(); ++d)
            if (d != dim && t.size(d) != first.size(d))
                throw ShapeError("cat(): sizes of tensors must match except in dimension " +
                                 std::to_string(dim) + ". Expected size " +
                                 std::to_string(first.size(d)) + " but got size " +
                                 std::to_string(t.size(d)) + " for tensor number " +
                                 std::to_string(i) + " in the list");
        check_same_device(first, t, "cat");
        rt = promote_types(rt, t.dtype());
        total += t.size(dim);
    }
    Dims shape = first.shape();
    shape[dim] = total;
    Tensor out = make_tensor(shape, rt, first.device());
    int64_t offset = 0;
    std::vector<int64_t> sizes;
    std::vector<DType> dtypes;
    for (const Tensor& t : tensors) {
        dtypes.push_back(t.dtype());
        const Tensor part = make_view(out, t.shape(), out.strides(), offset * out.stride(dim));
        backend_for(out).copy(view_of(t), view_of(part));
        offset += t.size(dim);
        sizes.push_back(t.size(dim));
    }
    if (autograd::any_requires_grad(tensors))
        autograd::record_list("CatBackward0", tensors, out,
                              [dim, sizes, dtypes](const Tensor& g, const Node& n) {
                                  TensorList r(sizes.size());
                                  int64_t start = 0;
                                  for (size_t i = 0; i < sizes.size(); ++i) {
                                      if (n.needs_input_grad(i))
                                          r[i] = g.narrow(dim, start, sizes[i]).to(dtypes[i]);
                                      start += sizes[i];
                                  }
                                  return r;
                              });
    return out;
}

Tensor stack(const TensorList& tensors, int dim) {
    if (tensors.empty()) throw Error("stack(): expected a non-empty list of tensors");
    dim = wrap_dim(dim, tensors[0].dim() + 1, "stack");
    TensorList parts;
    for (size_t i = 0; i < tensors.size(); ++i) {
        if (!(tensors[i].shape() == tensors[0].shape()))
            throw ShapeError("stack(): expects each tensor to be equal size, but got " +
                             tensors[0].shape().str() + " at entry 0 and " +
                             tensors[i].shape().str() + " at entry " + std::to_string(i));
        parts.push_back(tensors[i].unsqueeze(dim));
    }
    return cat(parts, dim);
}

} // namespace myelin
