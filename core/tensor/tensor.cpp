// Tensor handles: metadata, autograd plumbing on the tensor, conversion and copies.
#include "autograd/function.h"
#include "tensor/tensor_impl.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace myelin {

using autograd::record;
using autograd::SavedTensor;

Storage::Storage(size_t bytes, Device dev) : nbytes(bytes), device(dev) {
    data = dev.is_cpu() && bytes <= kInlineBytes ? inline_data
                                                 : backend::get(dev.type).allocate(bytes);
}
Storage::~Storage() {
    if (data && data != inline_data) backend::get(device.type).deallocate(data, nbytes);
}

IntValueRange int_value_range(const int64_t* values, int64_t n) {
    IntValueRange r{values[0], values[0], values[0], values[0]};
    for (int64_t i = 1; i < n; ++i) {
        r.lowest = std::min(r.lowest, values[i]);
        r.highest = std::max(r.highest, values[i]);
    }
    r.next_lowest = r.highest;
    r.next_highest = r.lowest;
    for (int64_t i = 0; i < n; ++i) {
        if (values[i] > r.lowest) r.next_lowest = std::min(r.next_lowest, values[i]);
        if (values[i] < r.highest) r.next_highest = std::max(r.next_highest, values[i]);
    }
    return r;
}

void TensorImpl::refresh() {
    numel = shape.numel();
    int64_t expected = 1;
    contiguous = true;
    for (int i = shape.size() - 1; i >= 0; --i) {
        if (shape[i] != 1 && strides[i] != expected) {
            contiguous = false;
            break;
        }
        expected *= shape[i];
    }
}

namespace detail {

Dims contiguous_strides(const Dims& shape) {
    Dims strides = Dims::filled(shape.size(), 1);
    int64_t s = 1;
    for (int i = shape.size() - 1; i >= 0; --i) {
        strides[i] = s;
        s *= std::max<int64_t>(shape[i], 1);
    }
    return strides;
}

int wrap_dim(int dim, int ndim, const char* op) {
    const int n = std::max(ndim, 1); // a 0-d tensor accepts dim 0 and -1
    if (dim < -n || dim >= n)
        throw IndexError(std::string(op) +
                         ": dimension out of range (expected to be in range of [" +
                         std::to_string(-n) + ", " + std::to_string(n - 1) + "], but got " +
                         std::to_string(dim) + ")");
    return dim < 0 ? dim + n : dim;
}

Tensor make_tensor(const Dims& shape, DType dtype, Device device) {
    for (int64_t s : shape)
        if (s < 0) throw ShapeError("negative dimension in shape " + shape.str());
    auto impl = std::make_shared<TensorImpl>();
    impl->shape = shape;
    impl->strides = contiguous_strides(shape);
    impl->numel = shape.numel();
    impl->dtype = dtype;
    impl->device = device;
    impl->storage =
        std::make_shared<Storage>(static_cast<size_t>(impl->numel) * dtype_size(dtype), device);
    return Tensor(std::move(impl));
}

Tensor make_view(const Tensor& base, const Dims& shape, const Dims& strides, int64_t offset) {
    auto impl = std::make_shared<TensorImpl>();
    const TensorImpl& b = *base.impl();
    impl->storage = b.storage;
    impl->shape = shape;
    impl->strides = strides;
    impl->offset = offset;
    impl->dtype = b.dtype;
    impl->device = b.device;
    impl->refresh();
    return Tensor(std::move(impl));
}

Tensor make_alias(const Tensor& base, const Dims& shape, const Dims& strides, int64_t offset) {
    Tensor v = make_view(base, shape, strides, offset);
    const auto& b = base.impl()->view_base;
    v.impl()->view_base = b ? b : base.impl_ptr();
    return v;
}

backend::View view_of(const Tensor& t) {
    backend::View v;
    const TensorImpl& i = *t.impl();
    v.data = i.data();
    v.dtype = i.dtype;
    v.ndim = i.shape.size();
    for (int d = 0; d < v.ndim; ++d) {
        v.shape[d] = i.shape[d];
        v.strides[d] = i.strides[d];
    }
    return v;
}

backend::View broadcast_view(const Tensor& t, const Dims& out_shape) {
    backend::View v;
    const TensorImpl& i = *t.impl();
    v.data = i.data();
    v.dtype = i.dtype;
    v.ndim = out_shape.size();
    const int lead = out_shape.size() - i.shape.size();
    for (int d = 0; d < v.ndim; ++d) {
        v.shape[d] = out_shape[d];
        const int src = d - lead;
        v.strides[d] = (src < 0 || i.shape[src] == 1) ? 0 : i.strides[src];
    }
    return v;
}

backend::Backend& backend_for(const Tensor& t) {
    return backend::get(t.impl()->device.type);
}

backend::Backend& device_backend(const Device& d, const char* op) {
    const std::string where = std::string(op) + "(" + d.str() + "): ";
    if (!backend::find(d.type)) {
        try {
            backend::get(d.type);
        } catch (const DeviceError& e) { // names the device and why it is not usable
            throw DeviceError(where + e.what());
        }
    }
    // One device per backend in this version: another index would silently land on device 0.
    if (d.index != 0)
        throw DeviceError(where + "this version runs on " + Device(d.type, 0).str() + " only");
    return backend::get(d.type);
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
    if (!(a.impl()->device == b.impl()->device))
        throw DeviceError(std::string(op) + ": expected all tensors on the same device, got " +
                          a.device().str() + " and " + b.device().str());
}

void bump_version(const Tensor& t) {
    ++t.impl()->storage->version;
}

void note_int_bounds(const Tensor& t, int64_t lo, int64_t hi) {
    Storage& s = *t.impl()->storage;
    s.known_values = Storage::KnownIntValues{IntValueRange{lo, lo, hi, hi, true}, s.version};
}

std::optional<IntValueRange> known_int_values(const Tensor& t) {
    const Storage& s = *t.impl()->storage;
    if (t.dtype() != DType::Int64 || !s.known_values || s.known_values->version != s.version)
        return std::nullopt;
    return s.known_values->range;
}

DType compute_dtype(DType t) {
    switch (t) {
    case DType::Float16:
    case DType::BFloat16:
        return DType::Float32;
    case DType::UInt8:
    case DType::Bool:
        return DType::Int64;
    default:
        return t;
    }
}

Tensor sum_to(const Tensor& grad, const Dims& shape) {
    if (grad.shape() == shape) return grad;
    const int lead = grad.dim() - shape.size();
    Dims dims;
    for (int d = 0; d < grad.dim(); ++d) {
        const int src = d - lead;
        if (src < 0 || (shape[src] == 1 && grad.size(d) != 1)) dims.push_back(d);
    }
    Tensor r = dims.empty() ? grad : sum(grad, dims, true);
    return r.reshape(shape);
}

std::string describe(const Tensor& t) {
    return std::string(dtype_name(t.dtype())) + " " + t.shape().str();
}

} // namespace detail

using namespace detail;

// --- metadata ------------------------------------------------------------------------------------

static TensorImpl& checked(const std::shared_ptr<TensorImpl>& impl) {
    if (!impl) throw Error("this tensor is undefined (default-constructed Tensor)");
    return *impl;
}

const Dims& Tensor::shape() const {
    return checked(impl_).shape;
}
int64_t Tensor::size(int dim) const {
    return shape()[wrap_dim(dim, this->dim(), "size()")];
}
const Dims& Tensor::strides() const {
    return checked(impl_).strides;
}
int64_t Tensor::stride(int dim) const {
    return strides()[wrap_dim(dim, this->dim(), "stride()")];
}
int64_t Tensor::storage_offset() const {
    return checked(impl_).offset;
}
int Tensor::dim() const {
    return checked(impl_).shape.size();
}
int64_t Tensor::numel() const {
    return checked(impl_).numel;
}
DType Tensor::dtype() const {
    return checked(impl_).dtype;
}
Device Tensor::device() const {
    return checked(impl_).device;
}
TensorOptions Tensor::options() const {
    TensorOptions o;
    o.dtype = dtype();
    o.device = device();
    return o;
}
size_t Tensor::element_size() const {
    return dtype_size(dtype());
}
bool Tensor::is_contiguous() const {
    return checked(impl_).contiguous;
}
void* Tensor::data_ptr() const {
    return checked(impl_).data();
}
bool Tensor::shares_storage(const Tensor& o) const {
    return defined() && o.defined() && impl_->storage == o.impl_->storage;
}
uint32_t Tensor::version() const {
    return checked(impl_).storage->version;
}

// --- autograd on the tensor ----------------------------------------------------------------------

bool Tensor::requires_grad() const {
    return checked(impl_).requires_grad();
}

Tensor& Tensor::requires_grad_(bool on) {
    TensorImpl& i = checked(impl_);
    if (i.autograd && i.autograd->grad_fn) {
        if (!on)
            throw AutogradError(
                "you can only change requires_grad flags of leaf tensors; use detach() to get a "
                "tensor that does not require grad");
        return *this;
    }
    if (on && !is_floating(i.dtype))
        throw DTypeError(std::string("only floating point tensors can require gradients, got ") +
                         dtype_name(i.dtype));
    if (on || i.autograd) i.meta().requires_grad = on;
    return *this;
}

bool Tensor::is_leaf() const {
    const TensorImpl& i = checked(impl_);
    return !i.autograd || !i.autograd->grad_fn;
}

Tensor Tensor::grad() const {
    const TensorImpl& i = checked(impl_);
    return i.autograd && i.autograd->grad ? Tensor(i.autograd->grad) : Tensor();
}

void Tensor::set_grad(const Tensor& g) {
    TensorImpl& i = checked(impl_);
    if (g.defined() && !(g.shape() == i.shape))
        throw ShapeError("set_grad(): gradient shape " + g.shape().str() +
                         " does not match the tensor's shape " + i.shape.str());
    i.meta().grad = g.defined() ? g.impl_ptr() : nullptr;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
    const TensorImpl& i = checked(impl_);
    return i.autograd ? i.autograd->grad_fn : nullptr;
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
    autograd::run_backward(this, gradient.defined() ? &gradient : nullptr, 1, retain_graph);
}

void Tensor::retain_grad() const {
    TensorImpl& i = checked(impl_);
    if (!i.requires_grad())
        throw AutogradError("can't retain_grad on a tensor that has requires_grad=false");
    if (is_leaf() || i.autograd->retains_grad) return;
    i.autograd->retains_grad = true;
    std::weak_ptr<TensorImpl> weak = impl_;
    i.autograd->grad_fn->add_pre_hook([weak](const Tensor& g) {
        if (auto self = weak.lock()) {
            AutogradMeta& meta = self->meta();
            if (!meta.grad)
                meta.grad = g.clone().impl_ptr();
            else
                Tensor(meta.grad).add_(g);
        }
        return Tensor();
    });
}

bool Tensor::retains_grad() const {
    const TensorImpl& i = checked(impl_);
    return i.autograd && i.autograd->retains_grad;
}

Tensor Tensor::detach() const {
    const TensorImpl& i = checked(impl_);
    return make_view(*this, i.shape, i.strides, i.offset);
}

Tensor& Tensor::detach_() {
    TensorImpl& i = checked(impl_);
    if (i.autograd) {
        i.autograd->grad_fn.reset();
        i.autograd->requires_grad = false;
    }
    return *this;
}

HookHandle Tensor::register_hook(GradHook hook) const {
    TensorImpl& i = checked(impl_);
    if (!i.requires_grad())
        throw AutogradError("cannot register a hook on a tensor that doesn't require gradient");
    if (i.autograd->grad_fn) return i.autograd->grad_fn->add_pre_hook(hook);
    AutogradMeta& meta = *i.autograd;
    const uint64_t id = meta.next_hook_id++;
    meta.hooks.push_back({id, std::move(hook)});
    std::weak_ptr<TensorImpl> weak = impl_;
    return HookHandle([weak, id] {
        if (auto self = weak.lock()) {
            auto& hooks = self->meta().hooks;
            for (auto it = hooks.begin(); it != hooks.end(); ++it)
                if (it->id == id) {
                    hooks.erase(it);
                    return;
                }
        }
    });
}

// --- conversion ----------------------------------------------------------------------------------

namespace detail {
Tensor raw_convert(const Tensor& src, DType dtype) {
    Tensor out = make_tensor(src.shape(), dtype, src.device());
    backend_for(src).copy(view_of(src), view_of(out));
    return out;
}
} // namespace detail

Tensor Tensor::to(DType t) const {
    if (dtype() == t) return *this;
    Tensor out = raw_convert(*this, t);
    if (autograd::needs_grad({this}) && is_floating(t)) {
        record("ToCopyBackward0", {this}, out,
               [from = dtype()](const Tensor& g, const autograd::Node&) {
                   return TensorList{g.to(from)};
               });
    }
    return out;
}

Tensor Tensor::to(Device d) const {
    if (device() == d) return *this; // as PyTorch: the same tensor, no copy
    backend::Backend& dst_backend = device_backend(d, "to");
    backend::Backend& src_backend = backend_for(*this);
    const Tensor src = contiguous();
    Tensor out = make_tensor(shape(), dtype(), d);
    const size_t bytes = static_cast<size_t>(numel()) * element_size();
    if (d.is_cpu()) {
        src_backend.copy_to_host(out.data_ptr(), src.data_ptr(), bytes);
    } else if (src.device().is_cpu()) {
        dst_backend.copy_from_host(out.data_ptr(), src.data_ptr(), bytes);
        if (dtype() == DType::Int64 && numel() > 0)
            out.impl()->storage->known_values =
                Storage::KnownIntValues{int_value_range(src.data<int64_t>(), numel()), 0};
    } else {
        std::vector<char> host(bytes);
        src_backend.copy_to_host(host.data(), src.data_ptr(), bytes);
        dst_backend.copy_from_host(out.data_ptr(), host.data(), bytes);
    }
    if (autograd::needs_grad({this})) {
        record("ToCopyBackward0", {this}, out,
               [from = device()](const Tensor& g, const autograd::Node&) {
                   return TensorList{g.to(from)};
               });
    }
    return out;
}

Tensor Tensor::clone() const {
    Tensor out = raw_convert(*this, dtype());
    if (autograd::needs_grad({this}))
        record("CloneBackward0", {this}, out,
               [](const Tensor& g, const autograd::Node&) { return TensorList{g}; });
    return out;
}

Tensor Tensor::contiguous() const {
    return is_contiguous() ? *this : clone();
}

double Tensor::item() const {
    if (numel() != 1)
        throw Error("a Tensor with " + std::to_string(numel()) +
                    " elements cannot be converted to a scalar (item() needs exactly one)");
    const Tensor host = to(kCPU).detach();
    if (host.dtype() == DType::Int64) return static_cast<double>(*host.data<int64_t>());
    return *raw_convert(host, DType::Float64).data<double>();
}

template <typename T> static DType dtype_of() {
    if constexpr (std::is_same_v<T, float>)
        return DType::Float32;
    else if constexpr (std::is_same_v<T, double>)
        return DType::Float64;
    else if constexpr (std::is_same_v<T, int64_t>)
        return DType::Int64;
    else if constexpr (std::is_same_v<T, uint8_t>)
        return DType::UInt8;
    else
        return DType::Bool;
}

template <typename T> std::vector<T> Tensor::to_vector() const {
    const Tensor c = to(kCPU).detach().to(dtype_of<T>()).contiguous();
    std::vector<T> out(static_cast<size_t>(c.numel()));
    if (!out.empty()) {
        if constexpr (std::is_same_v<T, bool>) {
            const bool* p = c.data<bool>();
            for (size_t i = 0; i < out.size(); ++i)
                out[i] = p[i];
        } else {
            std::memcpy(out.data(), c.data_ptr(), out.size() * sizeof(T));
        }
    }
    return out;
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<uint8_t> Tensor::to_vector<uint8_t>() const;
template std::vector<bool> Tensor::to_vector<bool>() const;

} // namespace myelin
