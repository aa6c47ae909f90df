// 2-D pooling: max, average and adaptive average. Here: the geometry (PyTorch's output-size
// rules: ceil_mode, padding, dilation), the checks and the autograd records; the kernels are the
// NN-kernel table of the input's device (backend/nn_kernels.h). A max pool keeps what its backward
// needs as the backend asks: PyTorch's flat per-plane indices, or (the CPU's 2x2 / stride-2 path)
// a one-byte window code per output.
#include "autograd/function.h"
#include "backend/nn_kernels.h"
#include "nn/functional_common.h"
#include "tensor/tensor_impl.h"

#include <myelin/nn/functional.h>

#include <algorithm>

namespace myelin::nn::functional {

using autograd::Node;
using autograd::record;
using autograd::SavedTensor;
using myelin::detail::make_tensor;
using myelin::detail::view_of;
using namespace myelin::nn::detail;

namespace {

using PoolGeom = backend::PoolGeometry;
using backend::Primitive;

int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil) {
    const int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil ? stride - 1 : 0);
    int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
    if (ceil && (out - 1) * stride >= in + pad) --out;
    return out;
}

std::string pair(int64_t a, int64_t b) {
    std::string s = "(";
    s += std::to_string(a);
    s += ", ";
    s += std::to_string(b);
    s += ")";
    return s;
}

// Validates x ([N, C, H, W] or [C, H, W]) and the options; fills the geometry.
PoolGeom pool_geom(const char* op, const Tensor& x, const Pool2dOptions& o, bool use_dilation) {
    require_f32_f64(op, "input", x);
    if (x.dim() != 3 && x.dim() != 4)
        shape_error(op, "expected input [N, C, H, W] or [C, H, W], got " + x.shape().str());
    const auto k = o.kernel_size;
    const auto s = o.stride.value_or(k);
    const auto d = use_dilation ? o.dilation : std::array<int64_t, 2>{1, 1};
    if (k[0] < 1 || k[1] < 1 || s[0] < 1 || s[1] < 1 || d[0] < 1 || d[1] < 1)
        shape_error(op, "expected kernel_size, stride and dilation >= 1, got kernel_size " +
                            pair(k[0], k[1]) + ", stride " + pair(s[0], s[1]) + ", dilation " +
                            pair(d[0], d[1]));
    if (o.padding[0] < 0 || o.padding[1] < 0 || o.padding[0] > k[0] / 2 || o.padding[1] > k[1] / 2)
        shape_error(op, "pad should be at most half of the kernel size, got padding " +
                            pair(o.padding[0], o.padding[1]) + " and kernel_size " +
                            pair(k[0], k[1]));
    PoolGeom g{};
    const int nd = x.dim();
    g.H = x.size(nd - 2), g.W = x.size(nd - 1);
    g.planes = x.numel() / std::max<int64_t>(1, g.H * g.W);
    if (nd == 4)
        g.planes = x.size(0) * x.size(1);
    else
        g.planes = x.size(0);
    g.kh = k[0], g.kw = k[1], g.sh = s[0], g.sw = s[1], g.ph = o.padding[0], g.pw = o.padding[1];
    g.dh = d[0], g.dw = d[1];
    g.OH = pool_out(g.H, g.kh, g.ph, g.sh, g.dh, o.ceil_mode);
    g.OW = pool_out(g.W, g.kw, g.pw, g.sw, g.dw, o.ceil_mode);
    if (g.OH < 1 || g.OW < 1)
        shape_error(op, "input " + x.shape().str() + " is too small for kernel_size " +
                            pair(k[0], k[1]) + " (output would be " + std::to_string(g.OH) + "x" +
                            std::to_string(g.OW) + ")");
    return g;
}

Dims out_shape(const Tensor& x, int64_t OH, int64_t OW) {
    Dims s = x.shape();
    s[s.size() - 2] = OH;
    s[s.size() - 1] = OW;
    return s;
}

ValuesIndices max_pool_impl(const Tensor& x, const Pool2dOptions& o, bool want_indices) {
    const PoolGeom g =
        pool_geom(want_indices ? "max_pool2d_with_indices" : "max_pool2d", x, o, true);
    backend::NnKernels& k = nn_table(x, Primitive::MaxPool2d);
    const Tensor xc = x.detach().contiguous();
    const bool grad = autograd::needs_grad({&x});
    const Dims os = out_shape(x, g.OH, g.OW);
    const bool codes = k.max_pool_uses_codes(g);
    Tensor y = make_tensor(os, x.dtype(), x.device());
    Tensor idx =
        want_indices || (grad && !codes) ? make_tensor(os, DType::Int64, x.device()) : Tensor();
    Tensor code = codes ? make_tensor(os, DType::UInt8, x.device()) : Tensor();
    backend::View vi, vc;
    if (idx.defined()) vi = view_of(idx);
    if (code.defined()) vc = view_of(code);
    k.max_pool_forward(g, view_of(xc), view_of(y), idx.defined() ? &vi : nullptr,
                       code.defined() ? &vc : nullptr);
    if (grad)
        record("MaxPool2DWithIndicesBackward0", {&x}, y,
               [idx, code, g, in = x.shape()](const Tensor& grad, const Node&) {
                   const Tensor gy = grad.contiguous();
                   Tensor gx = make_tensor(in, gy.dtype(), gy.device());
                   backend::View vi, vc;
                   if (idx.defined()) vi = view_of(idx);
                   if (code.defined()) vc = view_of(code);
                   nn_table(gy, Primitive::MaxPool2d)
                       .max_pool_backward(g, view_of(gy), idx.defined() ? &vi : nullptr,
                                          code.defined() ? &vc : nullptr, view_of(gx));
                   return TensorList{gx};
               });
    return {y, idx};
}

} // namespace

Tensor max_pool2d(const Tensor& x, const Pool2dOptions& options) {
    return max_pool_impl(x, options, false).values;
}

ValuesIndices max_pool2d_with_indices(const Tensor& x, const Pool2dOptions& options) {
    return max_pool_impl(x, options, true);
}

Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& o) {
    const PoolGeom g = pool_geom("avg_pool2d", x, o, false);
    backend::NnKernels& k = nn_table(x, Primitive::AvgPool2d);
    const Tensor xc = x.detach().contiguous();
    Tensor y = make_tensor(out_shape(x, g.OH, g.OW), x.dtype(), x.device());
    if (o.divisor_override == 0) throw Error("avg_pool2d: divisor_override must not be zero");
    const backend::AvgDivisor d{o.count_include_pad, o.divisor_override.value_or(0)};
    k.avg_pool_forward(g, d, view_of(xc), view_of(y));
    if (autograd::needs_grad({&x}))
        record("AvgPool2DBackward0", {&x}, y,
               [g, d, in = x.shape()](const Tensor& grad, const Node&) {
                   const Tensor gy = grad.contiguous();
                   Tensor gx = make_tensor(in, gy.dtype(), gy.device());
                   nn_table(gy, Primitive::AvgPool2d)
                       .avg_pool_backward(g, d, view_of(gy), view_of(gx));
                   return TensorList{gx};
               });
    return y;
}

Tensor adaptive_avg_pool2d(const Tensor& x, std::array<int64_t, 2> output_size) {
    const char* op = "adaptive_avg_pool2d";
    require_f32_f64(op, "input", x);
    if (x.dim() != 3 && x.dim() != 4)
        shape_error(op, "expected input [N, C, H, W] or [C, H, W], got " + x.shape().str());
    if (output_size[0] < 1 || output_size[1] < 1)
        shape_error(op, "expected output_size >= 1, got " + pair(output_size[0], output_size[1]));
    const int nd = x.dim();
    PoolGeom g{};
    g.H = x.size(nd - 2), g.W = x.size(nd - 1);
    g.planes = nd == 4 ? x.size(0) * x.size(1) : x.size(0);
    g.OH = output_size[0], g.OW = output_size[1];
    if (g.H < 1 || g.W < 1)
        shape_error(op, "expected non-empty spatial dims, got input " + x.shape().str());
    backend::NnKernels& k = nn_table(x, Primitive::AdaptiveAvgPool2d);
    const Tensor xc = x.detach().contiguous();
    Tensor y = make_tensor(out_shape(x, g.OH, g.OW), x.dtype(), x.device());
    k.adaptive_avg_pool_forward(g, view_of(xc), view_of(y));
    if (autograd::needs_grad({&x}))
        record("AdaptiveAvgPool2DBackward0", {&x}, y,
               [g, in = x.shape()](const Tensor& grad, const Node&) {
                   const Tensor gy = grad.contiguous();
                   Tensor gx = make_tensor(in, gy.dtype(), gy.device());
                   nn_table(gy, Primitive::AdaptiveAvgPool2d)
                       .adaptive_avg_pool_backward(g, view_of(gy), view_of(gx));
                   return TensorList{gx};
               });
    return y;
}

} // namespace myelin::nn::functional
