// View ops: new geometry over the same storage, each with its backward.
#include "autograd/function.h"
#include "tensor/tensor_impl.h"

#include <algorithm>
#include <numeric>

namespace myelin {

using autograd::Node;
using autograd::record;
using namespace detail;

namespace {

// Resolves one -1 entry and checks the element count.
Dims infer_shape(const Dims& requested, int64_t numel, const char* op) {
    Dims shape = requested;
    int infer = -1;
    int64_t known = 1;
    for (int i = 0; i < shape.size(); ++i) {
        if (shape[i] == -1) {
            if (infer >= 0) throw ShapeError(std::string(op) + ": only one dimension can be -1");
            infer = i;
        } else if (shape[i] < 0) {
            throw ShapeError(std::string(op) + ": invalid shape dimension " +
                             std::to_string(shape[i]) + " in " + requested.str());
        } else {
            known *= shape[i];
        }
    }
    if (infer >= 0) {
        if (known == 0 || numel % known != 0)
            throw ShapeError(std::string(op) + ": shape " + requested.str() +
                             " is invalid for input of size " + std::to_string(numel));
        shape[infer] = numel / known;
    } else if (known != numel) {
        throw ShapeError(std::string(op) + ": shape " + requested.str() +
                         " is invalid for input of size " + std::to_string(numel));
    }
    return shape;
}

// Strides for viewing (shape, strides) as new_shape without copying, if possible (PyTorch's
// computeStride): each run of new dims must map onto a run of old dims that is contiguous.
bool view_strides(const Dims& shape, const Dims& strides, const Dims& new_shape, Dims& out) {
    out = Dims::filled(new_shape.size(), 1);
    if (shape.numel() == 0 || shape.size() == 0) {
        out = contiguous_strides(new_shape);
        return true;
    }
    int view_d = new_shape.size() - 1;
    int64_t chunk_base_stride = strides.size() ? strides.back() : 1;
    int64_t tensor_numel = 1;
    int64_t view_numel = 1;
    for (int d = shape.size() - 1; d >= 0; --d) {
        tensor_numel *= shape[d];
        if (d == 0 || (shape[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
            while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
                out[view_d] = view_numel * chunk_base_stride;
                view_numel *= new_shape[view_d];
                --view_d;
            }
            if (view_numel != tensor_numel) return false;
            if (d > 0) {
                chunk_base_stride = strides[d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

Tensor reshape_backward(const Tensor& g, const Dims& shape) {
    return g.reshape(shape);
}

} // namespace

Tensor Tensor::view(const Dims& requested) const {
    const Dims shape = infer_shape(requested, numel(), "view");
    Dims st;
    if (!view_strides(this->shape(), strides(), shape, st))
        throw ShapeError("view size " + requested.str() +
                         " is not compatible with input tensor's size and stride (" +
                         this->shape().str() + ", " + strides().str() + "); use reshape() instead");
    Tensor out = make_alias(*this, shape, st, storage_offset());
    if (autograd::needs_grad({this}))
        record("ViewBackward0", {this}, out, [in = this->shape()](const Tensor& g, const Node&) {
            return TensorList{reshape_backward(g, in)};
        });
    return out;
}

Tensor Tensor::reshape(const Dims& requested) const {
    const Dims shape = infer_shape(requested, numel(), "reshape");
    Dims st;
    if (view_strides(this->shape(), strides(), shape, st)) return view(shape);
    return clone().view(shape);
}

Tensor Tensor::permute(const Dims& order) const {
    const int n = dim();
    if (order.size() != n)
        throw ShapeError("permute: number of dims in " + order.str() +
                         " doesn't match the tensor's " + std::to_string(n) + " dims");
    Dims shape = Dims::filled(n, 0), st = Dims::filled(n, 0), inverse = Dims::filled(n, 0);
    bool seen[kMaxDims] = {};
    for (int i = 0; i < n; ++i) {
        const int d = wrap_dim(static_cast<int>(order[i]), n, "permute");
        if (seen[d]) throw ShapeError("permute: repeated dim in " + order.str());
        seen[d] = true;
        shape[i] = this->shape()[d];
        st[i] = strides()[d];
        inverse[d] = i;
    }
    Tensor out = make_alias(*this, shape, st, storage_offset());
    if (autograd::needs_grad({this}))
        record("PermuteBackward0", {this}, out,
               [inverse](const Tensor& g, const Node&) { return TensorList{g.permute(inverse)}; });
    return out;
}

Tensor Tensor::transpose(int d0, int d1) const {
    const int n = dim();
    if (n == 0) return *this;
    d0 = wrap_dim(d0, n, "transpose");
    d1 = wrap_dim(d1, n, "transpose");
    Dims shape = this->shape(), st = strides();
    std::swap(shape[d0], shape[d1]);
    std::swap(st[d0], st[d1]);
    Tensor out = make_alias(*this, shape, st, storage_offset());
    if (autograd::needs_grad({this}))
        record("TransposeBackward0", {this}, out,
               [d0, d1](const Tensor& g, const Node&) { return TensorList{g.transpose(d0, d1)}; });
    return out;
}

Tensor Tensor::t() const {
    if (dim() > 2)
        throw ShapeError("t() expects a tensor with <= 2 dimensions, but got " +
                         std::to_string(dim()) + "; use transpose(dim0, dim1)");
    return dim() < 2 ? *this : transpose(0, 1);
}

static Tensor reshape_view(const Tensor& x, const Dims& shape, const Dims& st, const char* name) {
    Tensor out = make_alias(x, shape, st, x.storage_offset());
    if (autograd::needs_grad({&x}))
        record(name, {&x}, out, [in = x.shape()](const Tensor& g, const Node&) {
            return TensorList{g.reshape(in)};
        });
    return out;
}

Tensor Tensor::squeeze() const {
    Dims shape, st;
    for (int d = 0; d < dim(); ++d)
        if (this->shape()[d] != 1) {
            shape.push_back(this->shape()[d]);
            st.push_back(strides()[d]);
        }
    return reshape_view(*this, shape, st, "SqueezeBackward0");
}

Tensor Tensor::squeeze(int d) const {
    d = wrap_dim(d, dim(), "squeeze");
    if (dim() == 0 || shape()[d] != 1)
        return reshape_view(*this, shape(), strides(), "SqueezeBackward1");
    Dims shape = this->shape(), st = strides();
    shape.erase(d);
    st.erase(d);
    return reshape_view(*this, shape, st, "SqueezeBackward1");
}

Tensor Tensor::unsqueeze(int d) const {
    d = wrap_dim(d, dim() + 1, "unsqueeze");
    Dims shape = this->shape(), st = strides();
    const int64_t s = d < dim() ? st[d] * shape[d] : 1;
    shape.insert(d, 1);
    st.insert(d, s);
    return reshape_view(*this, shape, st, "UnsqueezeBackward0");
}

Tensor Tensor::flatten(int start_dim, int end_dim) const {
    if (dim() == 0) return reshape({1});
    start_dim = wrap_dim(start_dim, dim(), "flatten");
    end_dim = wrap_dim(end_dim, dim(), "flatten");
    if (start_dim > end_dim)
        throw ShapeError("flatten() has invalid args: start_dim cannot come after end_dim");
    if (start_dim == end_dim) return *this;
    Dims shape;
    for (int d = 0; d < start_dim; ++d)
        shape.push_back(this->shape()[d]);
    int64_t n = 1;
    for (int d = start_dim; d <= end_dim; ++d)
        n *= this->shape()[d];
    shape.push_back(n);
    for (int d = end_dim + 1; d < dim(); ++d)
        shape.push_back(this->shape()[d]);
    return reshape(shape);
}

Tensor Tensor::unflatten(int d, const Dims& sizes) const {
    d = wrap_dim(d, dim(), "unflatten");
    const Dims inner = infer_shape(sizes, shape()[d], "unflatten");
    Dims shape;
    for (int i = 0; i < d; ++i)
        shape.push_back(this->shape()[i]);
    for (int64_t s : inner)
        shape.push_back(s);
    for (int i = d + 1; i < dim(); ++i)
        shape.push_back(this->shape()[i]);
    return view(shape);
}

Tensor Tensor::expand(const Dims& requested) const {
    const int n = requested.size();
    if (n < dim())
        throw ShapeError("expand: the number of sizes provided (" + std::to_string(n) +
                         ") must be greater or equal to the number of dimensions in the tensor (" +
                         std::to_string(dim()) + ")");
    Dims shape = Dims::filled(n, 0), st = Dims::filled(n, 0);
    const int lead = n - dim();
    for (int i = n - 1; i >= 0; --i) {
        const int src = i - lead;
        int64_t want = requested[i];
        if (src < 0) {
            if (want < 0) throw ShapeError("expand: -1 is not allowed in a leading, new dimension");
            shape[i] = want;
            st[i] = 0;
            continue;
        }
        const int64_t have = this->shape()[src];
        if (want == -1) want = have;
        if (have == want) {
            shape[i] = have;
            st[i] = strides()[src];
        } else if (have == 1) {
            shape[i] = want;
            st[i] = 0;
        } else {
            throw ShapeError("expand: the expanded size of the tensor (" + std::to_string(want) +
                             ") must match the existing size (" + std::to_string(have) +
                             ") at non-singleton dimension " + std::to_string(i) +
                             ". Target sizes: " + requested.str() +
                             ". Tensor sizes: " + this->shape().str());
        }
    }
    Tensor out = make_alias(*this, shape, st, storage_offset());
    if (autograd::needs_grad({this}))
        record("ExpandBackward0", {this}, out, [in = this->shape()](const Tensor& g, const Node&) {
            return TensorList{sum_to(g, in)};
        });
    return out;
}

// Backward of any slice-like view: zeros of the input's shape with the view's region = grad.
static TensorList slice_backward(const Tensor& g, const Dims& in_shape, int d, int64_t start,
                                 int64_t end, int64_t step) {
    Tensor gx = zeros(in_shape, g.options());
    gx.slice(d, start, end, step).copy_(g);
    return {gx};
}

Tensor Tensor::narrow(int d, int64_t start, int64_t length) const {
    d = wrap_dim(d, dim(), "narrow");
    const int64_t size = shape()[d];
    if (start < 0) start += size;
    if (start < 0 || length < 0 || start + length > size)
        throw IndexError("narrow: start (" + std::to_string(start) + ") + length (" +
                         std::to_string(length) + ") exceeds dimension size (" +
                         std::to_string(size) + ") of dim " + std::to_string(d));
    return slice(d, start, start + length, 1);
}

Tensor Tensor::slice(int d, std::optional<int64_t> start_opt, std::optional<int64_t> end_opt,
                     int64_t step) const {
    d = wrap_dim(d, dim(), "slice");
    if (step <= 0) throw IndexError("slice: step must be positive, got " + std::to_string(step));
    const int64_t size = shape()[d];
    int64_t start = start_opt.value_or(0), end = end_opt.value_or(size);
    if (start < 0) start += size;
    if (end < 0) end += size;
    start = std::clamp<int64_t>(start, 0, size);
    end = std::clamp<int64_t>(end, start, size);
    Dims shape = this->shape(), st = strides();
    shape[d] = (end - start + step - 1) / step;
    st[d] *= step;
    Tensor out = make_alias(*this, shape, st, storage_offset() + start * strides()[d]);
    if (autograd::needs_grad({this}))
        record("SliceBackward0", {this}, out,
               [in = this->shape(), d, start, end, step](const Tensor& g, const Node&) {
                   return slice_backward(g, in, d, start, end, step);
               });
    return out;
}

Tensor Tensor::select(int d, int64_t index) const {
    if (dim() == 0) throw IndexError("select() cannot be applied to a 0-dim tensor");
    d = wrap_dim(d, dim(), "select");
    const int64_t size = shape()[d];
    if (index < -size || index >= size)
        throw IndexError("select(): index " + std::to_string(index) +
                         " is out of range for dimension " + std::to_string(d) + " with size " +
                         std::to_string(size));
    if (index < 0) index += size;
    Dims shape = this->shape(), st = strides();
    shape.erase(d);
    st.erase(d);
    Tensor out = make_alias(*this, shape, st, storage_offset() + index * strides()[d]);
    if (autograd::needs_grad({this}))
        record("SelectBackward0", {this}, out,
               [in = this->shape(), d, index](const Tensor& g, const Node&) {
                   return slice_backward(g.unsqueeze(d), in, d, index, index + 1, 1);
               });
    return out;
}

std::vector<Tensor> Tensor::split(int64_t split_size, int d) const {
    return myelin::split(*this, split_size, d);
}
std::vector<Tensor> Tensor::chunk(int64_t chunks, int d) const {
    return myelin::chunk(*this, chunks, d);
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int d) {
    d = wrap_dim(d, x.dim(), "split");
    if (split_size <= 0 && x.size(d) > 0)
        throw ShapeError("split: split_size must be positive, got " + std::to_string(split_size));
    std::vector<Tensor> parts;
    const int64_t size = x.size(d);
    for (int64_t start = 0; start < size; start += split_size)
        parts.push_back(x.narrow(d, start, std::min(split_size, size - start)));
    if (parts.empty()) parts.push_back(x.narrow(d, 0, 0));
    return parts;
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int d) {
    d = wrap_dim(d, x.dim(), "split");
    const int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
    if (total != x.size(d))
        throw ShapeError("split_with_sizes expects split_sizes to sum exactly to " +
                         std::to_string(x.size(d)) + " (input tensor's size at dimension " +
                         std::to_string(d) + "), but got sizes summing to " +
                         std::to_string(total));
    std::vector<Tensor> parts;
    int64_t start = 0;
    for (int64_t s : sizes) {
        parts.push_back(x.narrow(d, start, s));
        start += s;
    }
    return parts;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int d) {
    if (chunks <= 0)
        throw ShapeError("chunk expects `chunks` to be greater than 0, got " +
                         std::to_string(chunks));
    d = wrap_dim(d, x.dim(), "chunk");
    const int64_t size = x.size(d);
    const int64_t split_size = std::max<int64_t>((size + chunks - 1) / chunks, 1);
    return split(x, split_size, d);
}

} // namespace myelin
