// In-place ops. Each bumps the storage's version counter, which invalidates any value saved for
// backward from this storage. Under grad mode on a non-leaf, the tensor's history is rebased
// onto the out-of-place form of the op (computed on a clone so saved values stay valid).
#include "autograd/function.h"
#include "tensor/tensor_impl.h"

#include <cmath>
#include <functional>

namespace myelin {

using backend::BinaryOp;
using backend::UnaryOp;
using namespace detail;

namespace {

bool can_cast(DType from, DType to) {
    if (is_floating(from) && !is_floating(to)) return false;
    if (from != DType::Bool && to == DType::Bool) return false;
    return true;
}

void check_cast(const char* op, DType result, DType self) {
    if (!can_cast(result, self))
        throw DTypeError(std::string(op) + ": result type " + dtype_name(result) +
                         " can't be cast to the desired output type " + dtype_name(self));
}

bool recording(const Tensor& self, const Tensor* other) {
    if (!autograd::is_grad_enabled()) return false;
    return self.requires_grad() || (other && other->defined() && other->requires_grad());
}

void check_not_leaf(const Tensor& self, const char* op) {
    if (autograd::is_grad_enabled() && self.is_leaf() && self.requires_grad())
        throw AutogradError(std::string("a leaf tensor that requires grad is being used in an "
                                        "in-place operation (") +
                            op + "); wrap it in NoGradGuard or use the out-of-place form");
}

// The region of a base-shaped contiguous tensor `t` that `view` covers within `base`.
Tensor region(const Tensor& t, const Dims& shape, const Dims& strides, int64_t offset) {
    return make_view(t, shape, strides, offset);
}

// In-place write through a view: the base's history becomes CopySlices(old base, result) and
// the view becomes a view of the new base (PyTorch's CopySlices / AsStridedBackward).
void rebase_view(Tensor& self, const Tensor& result, const char* op) {
    Tensor base(self.impl()->view_base);
    if (base.is_leaf() && base.requires_grad())
        throw AutogradError(std::string("a view of a leaf tensor that requires grad is being used "
                                        "in an in-place operation (") +
                            op + ")");
    if (!base.is_contiguous())
        throw AutogradError(std::string(op) +
                            ": in-place modification of a view of a non-contiguous tensor that "
                            "requires grad is not supported; call contiguous() on the base first");
    const Dims shape = self.shape(), strides = self.strides();
    const int64_t offset = self.storage_offset() - base.storage_offset();
    autograd::record("CopySlices", {&base, &result}, base,
                     [shape, strides, offset](const Tensor& g, const autograd::Node& n) {
                         TensorList r(2);
                         const Tensor gc = g.contiguous();
                         if (n.needs_input_grad(1))
                             r[1] = region(gc, shape, strides, offset).clone();
                         if (n.needs_input_grad(0)) {
                             Tensor gb = g.clone();
                             region(gb, shape, strides, offset).zero_();
                             r[0] = gb;
                         }
                         return r;
                     });
    Tensor view_of_new_base = self;
    autograd::record(
        "AsStridedBackward0", {&base}, view_of_new_base,
        [bs = base.shape(), shape, strides, offset](const Tensor& g, const autograd::Node&) {
            Tensor gb = zeros(bs, g.options());
            region(gb, shape, strides, offset).copy_(g);
            return TensorList{gb};
        });
}

// Writes the data with `raw` and, when recording, gives self the history of graph(clone(self)).
Tensor& apply_inplace(Tensor& self, const Tensor* other, const char* op,
                      const std::function<Tensor(const Tensor&)>& graph,
                      const std::function<void()>& raw) {
    if (recording(self, other) && self.impl()->view_base) {
        const Tensor r = graph(self.clone());
        {
            autograd::NoGradGuard no_grad;
            raw();
        }
        rebase_view(self, r, op);
    } else if (recording(self, other)) {
        check_not_leaf(self, op);
        const Tensor r = graph(self.clone());
        {
            autograd::NoGradGuard no_grad;
            raw();
        }
        AutogradMeta& meta = self.impl()->meta();
        meta.requires_grad = true;
        meta.grad_fn = r.grad_fn();
        meta.output_nr = 0;
    } else {
        raw();
    }
    bump_version(self);
    return self;
}

// self = result of an out-of-place computation (shape checked against self).
void assign(Tensor& self, const Tensor& value, const char* op) {
    if (!(broadcast_shapes(value.shape(), self.shape()) == self.shape()))
        throw ShapeError(std::string(op) + ": output with shape " + self.shape().str() +
                         " doesn't match the broadcast shape " +
                         broadcast_shapes(value.shape(), self.shape()).str());
    backend_for(self).copy(broadcast_view(value, self.shape()), view_of(self));
}

bool kernel_can_write(const Tensor& self, DType compute) {
    return self.dtype() == compute &&
           (compute == DType::Float32 || compute == DType::Float64 || compute == DType::Int64);
}

Tensor& binary_inplace(Tensor& self, const Tensor& other, const char* op, BinaryOp kind,
                       double alpha, Tensor (*out_of_place)(const Tensor&, const Tensor&, double)) {
    const DType rt = result_type(self, other);
    check_cast(op, (kind == BinaryOp::Div && !is_floating(rt)) ? DType::Float32 : rt, self.dtype());
    const Dims shape = broadcast_shapes(self.shape(), other.shape());
    if (!(shape == self.shape()))
        throw ShapeError(std::string(op) + ": output with shape " + self.shape().str() +
                         " doesn't match the broadcast shape " + shape.str());
    return apply_inplace(
        self, &other, op, [&](const Tensor& c) { return out_of_place(c, other, alpha); },
        [&] {
            const DType ct = compute_dtype(self.dtype());
            // Write straight into self unless other overlaps self's memory in another layout.
            const bool alias =
                other.shares_storage(self) && !(other.strides() == self.strides() &&
                                                other.storage_offset() == self.storage_offset());
            if (kernel_can_write(self, ct) && !alias) {
                const Tensor oc = other.dtype() == ct ? other : raw_convert(other, ct);
                backend_for(self).binary(kind, view_of(self), broadcast_view(oc, shape),
                                         view_of(self), {alpha, 0});
            } else {
                assign(self, out_of_place(self.detach(), other.detach(), alpha), op);
            }
        });
}

Tensor& scalar_inplace(Tensor& self, const char* op, UnaryOp kind, double s,
                       const std::function<Tensor(const Tensor&)>& out_of_place) {
    check_cast(op, scalar_result_type(self.dtype(), s), self.dtype());
    return apply_inplace(self, nullptr, op, out_of_place, [&] {
        if (kernel_can_write(self, compute_dtype(self.dtype())))
            backend_for(self).unary(kind, view_of(self), view_of(self), {s, 0});
        else
            assign(self, out_of_place(self.detach()), op);
    });
}

} // namespace

Tensor& Tensor::add_(const Tensor& other, double alpha) {
    return binary_inplace(
        *this, other, "add_", BinaryOp::Add, alpha,
        [](const Tensor& a, const Tensor& b, double al) { return add(a, b, al); });
}
Tensor& Tensor::sub_(const Tensor& other, double alpha) {
    return binary_inplace(
        *this, other, "sub_", BinaryOp::Sub, alpha,
        [](const Tensor& a, const Tensor& b, double al) { return sub(a, b, al); });
}
Tensor& Tensor::mul_(const Tensor& other) {
    return binary_inplace(*this, other, "mul_", BinaryOp::Mul, 1.0,
                          [](const Tensor& a, const Tensor& b, double) { return mul(a, b); });
}
Tensor& Tensor::div_(const Tensor& other) {
    return binary_inplace(*this, other, "div_", BinaryOp::Div, 1.0,
                          [](const Tensor& a, const Tensor& b, double) { return div(a, b); });
}
Tensor& Tensor::add_(double v) {
    return scalar_inplace(*this, "add_", UnaryOp::AddScalar, v,
                          [v](const Tensor& c) { return add(c, v); });
}
Tensor& Tensor::sub_(double v) {
    return scalar_inplace(*this, "sub_", UnaryOp::AddScalar, -v,
                          [v](const Tensor& c) { return sub(c, v); });
}
Tensor& Tensor::mul_(double v) {
    return scalar_inplace(*this, "mul_", UnaryOp::MulScalar, v,
                          [v](const Tensor& c) { return mul(c, v); });
}
Tensor& Tensor::div_(double v) {
    if (!is_floating(dtype()))
        throw DTypeError(
            std::string("div_: result type float32 can't be cast to the desired output type ") +
            dtype_name(dtype()));
    const auto out_of_place = [v](const Tensor& c) { return div(c, v); };
    // As div(): a true division on the CPU and where the reciprocal is not finite (0, a
    // subnormal), a product with the reciprocal elsewhere.
    if (device().is_cpu() || !std::isfinite(1.0 / v))
        return scalar_inplace(*this, "div_", UnaryOp::DivScalar, v, out_of_place);
    return scalar_inplace(*this, "div_", UnaryOp::MulScalar, 1.0 / v, out_of_place);
}

Tensor& Tensor::clamp_(std::optional<double> lo, std::optional<double> hi) {
    if (!lo && !hi) throw Error("clamp_: at least one of min or max must be given");
    const double a = lo.value_or(-INFINITY), b = hi.value_or(INFINITY);
    return apply_inplace(
        *this, nullptr, "clamp_", [lo, hi](const Tensor& c) { return clamp(c, lo, hi); },
        [&] {
            if (kernel_can_write(*this, compute_dtype(dtype())))
                backend_for(*this).unary(UnaryOp::Clamp, view_of(*this), view_of(*this), {a, b});
            else
                assign(*this, clamp(detach(), lo, hi), "clamp_");
        });
}

Tensor& Tensor::zero_() {
    return fill_(0.0);
}

Tensor& Tensor::fill_(double value) {
    return apply_inplace(
        *this, nullptr, "fill_", [](const Tensor& c) { return mul(c, 0.0); },
        [&] { backend_for(*this).fill(view_of(*this), value); });
}

Tensor& Tensor::copy_(const Tensor& src) {
    const Tensor source = src.device() == device() ? src : src.to(device());
    return apply_inplace(
        *this, &src, "copy_", [&](const Tensor& c) { return add(mul(c, 0.0), source.to(dtype())); },
        [&] {
            const bool alias = source.shares_storage(*this);
            assign(*this, alias ? source.detach().clone() : source.detach(), "copy_");
        });
}

} // namespace myelin
