#pragma once
// Internal: validation helpers shared by the functional ops (messages name the op, the expected
// and the actual shape or dtype).
#include "backend/nn_kernels.h"
#include "tensor/tensor_impl.h"

#include <optional>
#include <string>

namespace myelin::nn::detail {

// The NN table of t's device for op `p` on `dtype` (t's own by default): refuses by name what
// the device does not run (backend::nn_kernels).
inline backend::NnKernels& nn_table(const Tensor& t, backend::Primitive p, DType dtype) {
    return backend::nn_kernels(myelin::detail::backend_for(t), p, dtype);
}
inline backend::NnKernels& nn_table(const Tensor& t, backend::Primitive p) {
    return nn_table(t, p, t.dtype());
}
// Whether t's device has an NN table that runs `p` on t's dtype: where it does not, the op is
// composed from the device's primitive ops instead (recurrent layers, attention, linear).
inline bool device_runs(const Tensor& t, backend::Primitive p) {
    backend::Backend& device = myelin::detail::backend_for(t);
    return device.nn_kernels() != nullptr && device.supports(p, t.dtype());
}

// y = x @ w^T with operands in `lower` (float16 or bfloat16), float32 accumulation and output
// (linear under autocast) on the device's batched GEMM (functional_amp.cpp).
Tensor linear_lowered(const Tensor& x, const Tensor& w, DType lower);
// Convolutions under autocast where no kernel lowers them: t rounded to `lower` (nearest even)
// and back to float32, the gradient passed through as it is; and y itself with its gradient
// rounded to `lower` on the way back (as a lowered output's would be).
Tensor round_operand(const Tensor& t, DType lower);
Tensor round_gradient(const Tensor& y, DType lower);

// y = x @ w^T + b on the device's Matmul entry (bias fused) with its own backward; applies to
// non-empty float32 operands on a device that has it (functional_linear.cpp).
bool linear_f32_applies(const Tensor& x, const Tensor& w, const Tensor& b);
Tensor linear_f32(const Tensor& x, const Tensor& w, const Tensor& b);

// Runs check(values, count) over the values of the int64 tensor `t` on the host (a copy when t
// lives on a device), unless they are known to lie in [lo, hi] (`reserved` aside) without
// reading them: a device tensor copied from the host (myelin::detail::known_int_values). So a
// training step on a device checks its indices, targets and lengths without waiting for it.
template <typename Check>
void check_int_values(const Tensor& t, int64_t lo, int64_t hi, std::optional<int64_t> reserved,
                      const Check& check) {
    if (const auto known = myelin::detail::known_int_values(t);
        known && known->within(lo, hi, reserved))
        return;
    const Tensor c = t.contiguous();
    const Tensor h = c.to(kCPU); // itself on the CPU
    check(h.data<int64_t>(), h.numel());
}

// The View of an optional tensor (a bias, a gradient not asked for): nullptr when undefined, else
// `slot` holds the View.
inline const backend::View* optional_view(const Tensor& t, backend::View& slot) {
    if (!t.defined()) return nullptr;
    slot = myelin::detail::view_of(t);
    return &slot;
}

[[noreturn]] inline void shape_error(const char* op, const std::string& msg) {
    throw ShapeError(std::string(op) + ": " + msg);
}

// float32 or float64 (what the kernels of these ops compute in).
inline void require_f32_f64(const char* op, const char* what, const Tensor& t) {
    if (t.dtype() != DType::Float32 && t.dtype() != DType::Float64)
        throw DTypeError(std::string(op) + ": expected " + what +
                         " of dtype float32 or float64, got " + dtype_name(t.dtype()));
}

inline void require_floating(const char* op, const char* what, const Tensor& t) {
    if (!t.is_floating_point())
        throw DTypeError(std::string(op) + ": expected " + what +
                         " of a floating point dtype, got " + dtype_name(t.dtype()));
}

// `t` (when defined) has the same dtype as `x`.
inline void require_same_dtype(const char* op, const char* what, const Tensor& t, const Tensor& x) {
    if (t.defined() && t.dtype() != x.dtype())
        throw DTypeError(std::string(op) + ": expected " + what + " to have the input's dtype " +
                         dtype_name(x.dtype()) + ", got " + dtype_name(t.dtype()));
}

inline void require_dim(const char* op, const char* what, const Tensor& t, int ndim,
                        const char* layout) {
    if (t.dim() != ndim)
        shape_error(op, std::string("expected ") + what + " " + layout + " (" +
                            std::to_string(ndim) + "-D), got " + t.shape().str());
}

// Bias (when defined): 1-D of size n.
inline void require_vector(const char* op, const char* what, const Tensor& t, int64_t n) {
    if (t.defined() && (t.dim() != 1 || t.size(0) != n))
        shape_error(op, std::string("expected ") + what + " of shape [" + std::to_string(n) +
                            "], got " + t.shape().str());
}

} // namespace myelin::nn::detail
