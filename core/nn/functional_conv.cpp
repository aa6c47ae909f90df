// Convolutions: conv2d, conv1d (as conv2d with H = 1) and conv_transpose2d (the adjoint of
// conv2d: its forward is conv2d's backward-data). Here: the geometry, the checks and the autograd
// records; the kernels (oneDNN and reference loops on the CPU, cuDNN on CUDA) are the NN-kernel
// table of the operands' device (backend/nn_kernels.h). Under bfloat16 autocast on the CPU float32
// operands are multiplied in bf16 by oneDNN and accumulated and written in float32; under float16
// autocast on a device with half convolutions (CUDA's cuDNN) its kernels multiply in float16
// (ConvGeometry::f16); otherwise (float16 on the CPU, bfloat16 off it) the float32 kernels run on
// operands rounded to the lower dtype (the same products, exact in float32), the output's gradient
// rounded too.
#include "autograd/function.h"
#include "backend/nn_kernels.h"
#include "nn/functional_common.h"
#include "tensor/tensor_impl.h"

#include <myelin/autocast.h>
#include <myelin/nn/functional.h>

namespace myelin::nn::functional {

using autograd::Node;
using autograd::record;
using autograd::SavedTensor;
using myelin::detail::make_tensor;
using myelin::detail::view_of;
using namespace myelin::nn::detail;

namespace {

using Geom = backend::ConvGeometry;
using backend::Primitive;

// The device's kernel table for conv pass `p`, refusing by name what it cannot run (autocast
// asks for bfloat16 or float16 products).
backend::NnKernels& kernels(const Tensor& t, Primitive p, const Geom& g) {
    return nn_table(t, p, g.bf16 ? DType::BFloat16 : g.f16 ? DType::Float16 : t.dtype());
}

Tensor forward_raw(const Tensor& x, const Tensor& w, const Tensor& b, const Geom& g) {
    backend::NnKernels& k = kernels(x, Primitive::ConvForward, g);
    Tensor y = make_tensor({g.N, g.O, g.OH, g.OW}, x.dtype(), x.device());
    backend::View vb;
    k.conv_forward(g, view_of(x), view_of(w), optional_view(b, vb), view_of(y));
    return y;
}

Tensor backward_data_raw(const Tensor& gy, const Tensor& w, const Geom& g) {
    backend::NnKernels& k = kernels(gy, Primitive::ConvBackwardData, g);
    Tensor gx = make_tensor({g.N, g.C, g.H, g.W}, gy.dtype(), gy.device());
    k.conv_backward_data(g, view_of(gy), view_of(w), view_of(gx));
    return gx;
}

Tensor backward_weights_raw(const Tensor& x, const Tensor& gy, const Geom& g) {
    backend::NnKernels& k = kernels(x, Primitive::ConvBackwardWeights, g);
    Tensor gw = make_tensor({g.O, g.C / g.G, g.KH, g.KW}, x.dtype(), x.device());
    k.conv_backward_weights(g, view_of(x), view_of(gy), view_of(gw), nullptr);
    return gw;
}

void check_common(const char* op, const Tensor& x, const Tensor& w, const Tensor& b) {
    require_f32_f64(op, "input", x);
    require_same_dtype(op, "weight", w, x);
    require_same_dtype(op, "bias", b, x);
    myelin::detail::check_same_device(x, w, op);
    if (b.defined()) myelin::detail::check_same_device(x, b, op);
}

std::string ints(std::initializer_list<int64_t> v) {
    std::string s = "(";
    for (int64_t x : v)
        s += (s.size() > 1 ? ", " : "") + std::to_string(x);
    return s + ")";
}

// Whether this call multiplies in bf16 on oneDNN's kernels: bfloat16 autocast is on, the operands
// are float32 (float64 stays float64, as in PyTorch's autocast, which only lowers float32) and
// on the CPU.
bool autocast_bf16(const Tensor& x) {
    return x.dtype() == DType::Float32 && autocast_dtype() == DType::BFloat16 &&
           x.device().is_cpu();
}

// Whether this call multiplies in float16 on the device's own kernels (cuDNN's half
// convolutions): float16 autocast is on, the operands are float32, off the CPU, on a device that
// has them.
bool autocast_f16(const Tensor& x) {
    return x.dtype() == DType::Float32 && autocast_dtype() == DType::Float16 &&
           !x.device().is_cpu() &&
           myelin::detail::backend_for(x).supports(Primitive::ConvForward, DType::Float16);
}

// The lower dtype of an autocast no kernel here lowers (float16 on the CPU or a device without
// half convolutions; bfloat16 off the CPU), for float32 operands; nullopt otherwise.
std::optional<DType> emulated_autocast(const Tensor& x) {
    const std::optional<DType> lower = autocast_dtype();
    if (!lower || x.dtype() != DType::Float32 || autocast_bf16(x) || autocast_f16(x))
        return std::nullopt;
    return lower;
}

// Whether the plain float32 kernels run this call, unchanged by autocast: what the fused
// conv-ReLU(-pool) kernels compute.
bool plain_float32(const Tensor& x) {
    return x.dtype() == DType::Float32 && !autocast_dtype();
}

// `conv(x', w')` on x and w rounded to `lower`, with autocast off inside, its output's gradient
// rounded on the way back.
template <typename Conv>
Tensor with_rounded_operands(const Tensor& x, const Tensor& w, DType lower, Conv&& conv) {
    AutocastGuard off(std::nullopt);
    return round_gradient(conv(round_operand(x, lower), round_operand(w, lower)), lower);
}

// What conv2d_relu_max_pool2d keeps for its backward: the pooled output, each window's code and
// the pool's geometry.
struct SavedPool {
    SavedTensor pooled;
    Tensor codes;
    backend::PoolGeometry geom;
};

// Both backward passes of conv2d: the input gradient when asked, and the weight gradient when
// the weight's or the bias's is asked (the bias gradient comes with it). With `sy` (conv2d_relu's
// saved output y), ReLU's backward is fused into both passes; with `pool`, gy is the pooled
// output's gradient and the pool's and ReLU's backwards are.
TensorList conv2d_backward(const Tensor& gy, const SavedTensor& sx, const SavedTensor& sw,
                           const Geom& g, const Node& n, const SavedTensor* sy = nullptr,
                           const SavedPool* pool = nullptr) {
    const bool want_x = n.needs_input_grad(0);
    const bool want_w = n.needs_input_grad(1) || n.needs_input_grad(2);
    TensorList r(3);
    backend::NnKernels* k = nullptr;
    if (want_x) k = &kernels(gy, Primitive::ConvBackwardData, g);
    if (want_w) k = &kernels(gy, Primitive::ConvBackwardWeights, g);
    if (!k) return r;
    const Tensor ys = sy ? sy->unpack(n) : Tensor();
    const Tensor ws = want_x ? sw.unpack(n) : Tensor();
    const Tensor xs = want_w ? sx.unpack(n) : Tensor();
    if (want_x) r[0] = make_tensor({g.N, g.C, g.H, g.W}, gy.dtype(), gy.device());
    const Tensor gw =
        want_w ? make_tensor({g.O, g.C / g.G, g.KH, g.KW}, gy.dtype(), gy.device()) : Tensor();
    if (n.needs_input_grad(2)) r[2] = make_tensor({g.O}, gy.dtype(), gy.device());
    backend::View vx, vw, vgx, vgw, vgb;
    if (xs.defined()) vx = view_of(xs);
    if (ws.defined()) vw = view_of(ws);
    if (pool)
        k->conv_relu_pool_backward(g, pool->geom, vx, vw, view_of(pool->pooled.unpack(n)),
                                   view_of(pool->codes), view_of(gy), optional_view(r[0], vgx),
                                   optional_view(gw, vgw), optional_view(r[2], vgb));
    else if (sy)
        k->conv_relu_backward(g, vx, vw, view_of(ys), view_of(gy), optional_view(r[0], vgx),
                              optional_view(gw, vgw), optional_view(r[2], vgb));
    else
        k->conv_backward(g, vx, vw, view_of(gy), optional_view(r[0], vgx), optional_view(gw, vgw),
                         optional_view(r[2], vgb));
    if (n.needs_input_grad(1)) r[1] = gw;
    return r;
}

// The differentiable conv2d on validated, 4-D operands.
Tensor conv2d_impl(const Tensor& x, const Tensor& w, const Tensor& b, Geom g) {
    if (const auto lower = emulated_autocast(x))
        return with_rounded_operands(x, w, *lower, [&](const Tensor& xr, const Tensor& wr) {
            return conv2d_impl(xr, wr, b, g);
        });
    g.bf16 = autocast_bf16(x);
    g.f16 = autocast_f16(x);
    const Tensor xc = x.detach().contiguous(), wc = w.detach().contiguous();
    const Tensor bc = b.defined() ? b.detach().contiguous() : Tensor();
    Tensor y = forward_raw(xc, wc, bc, g);
    if (autograd::needs_grad({&x, &w, &b}))
        record("ConvolutionBackward0", {&x, &w, &b}, y,
               [sx = SavedTensor(xc), sw = SavedTensor(wc), g](const Tensor& grad, const Node& n) {
                   return conv2d_backward(grad.contiguous(), sx, sw, g, n);
               });
    return y;
}

// Validates and fills the geometry of conv2d(x [N, C, H, W], w [O, C/G, KH, KW]).
Geom conv_geom(const char* op, const Tensor& x, const Tensor& w, const Tensor& b,
               std::array<int64_t, 2> stride, std::array<int64_t, 2> padding,
               std::array<int64_t, 2> dilation, int64_t groups, bool same, bool is_1d) {
    const char* in_layout = is_1d ? "[N, C, L]" : "[N, C, H, W]";
    const char* w_layout = is_1d ? "[O, C/groups, k]" : "[O, C/groups, kh, kw]";
    const Tensor x4 = is_1d && x.dim() == 3 ? x.unsqueeze(2) : x;
    const Tensor w4 = is_1d && w.dim() == 3 ? w.unsqueeze(2) : w;
    require_dim(op, "input", x, is_1d ? 3 : 4, in_layout);
    require_dim(op, "weight", w, is_1d ? 3 : 4, w_layout);
    if (groups < 1) shape_error(op, "expected groups >= 1, got " + std::to_string(groups));
    for (int i = 0; i < 2; ++i) {
        if (stride[i] < 1 || dilation[i] < 1 || padding[i] < 0)
            shape_error(op, "expected stride >= 1, dilation >= 1 and padding >= 0, got stride " +
                                ints({stride[0], stride[1]}) + ", padding " +
                                ints({padding[0], padding[1]}) + ", dilation " +
                                ints({dilation[0], dilation[1]}));
    }
    Geom g{};
    g.N = x4.size(0), g.C = x4.size(1), g.H = x4.size(2), g.W = x4.size(3);
    g.O = w4.size(0), g.KH = w4.size(2), g.KW = w4.size(3);
    g.G = groups;
    if (g.O % groups != 0)
        shape_error(op,
                    "expected weight " + w.shape().str() +
                        " to have out_channels divisible by groups = " + std::to_string(groups));
    if (g.C != w4.size(1) * groups)
        shape_error(op, std::string("expected input ") + in_layout + " with C = " +
                            std::to_string(w4.size(1) * groups) + " (weight " + w.shape().str() +
                            (groups > 1 ? ", groups " + std::to_string(groups) : std::string()) +
                            "), got " + x.shape().str());
    require_vector(op, "bias", b, g.O);
    g.sh = stride[0], g.sw = stride[1], g.dh = dilation[0], g.dw = dilation[1];
    int64_t total_h = 2 * padding[0], total_w = 2 * padding[1];
    if (same) {
        if (g.sh != 1 || g.sw != 1)
            shape_error(op, "padding='same' is not supported for strided convolutions");
        total_h = g.dh * (g.KH - 1), total_w = g.dw * (g.KW - 1);
        g.ph = total_h / 2, g.pw = total_w / 2;
    } else {
        g.ph = padding[0], g.pw = padding[1];
    }
    const int64_t eh = g.dh * (g.KH - 1) + 1, ew = g.dw * (g.KW - 1) + 1;
    if (g.H + total_h < eh || g.W + total_w < ew)
        shape_error(
            op, "input " + x.shape().str() + " (padded " +
                    (is_1d ? std::to_string(g.W + total_w)
                           : std::to_string(g.H + total_h) + "x" + std::to_string(g.W + total_w)) +
                    ") is smaller than the dilated kernel (" +
                    (is_1d ? std::to_string(ew) : std::to_string(eh) + "x" + std::to_string(ew)) +
                    ")");
    g.OH = (g.H + total_h - eh) / g.sh + 1;
    g.OW = (g.W + total_w - ew) / g.sw + 1;
    if (g.N == 0 || g.C == 0 || g.O == 0)
        shape_error(op, "empty input or weight is not supported, got input " + x.shape().str() +
                            " and weight " + w.shape().str());
    return g;
}

// The checks and geometry of conv2d(x, weight, bias, o).
Geom conv2d_geom(const Tensor& x, const Tensor& weight, const Tensor& bias,
                 const Conv2dOptions& o) {
    check_common("conv2d", x, weight, bias);
    return conv_geom("conv2d", x, weight, bias, o.stride, o.padding, o.dilation, o.groups,
                     o.same_padding, false);
}

} // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions& o) {
    return conv2d_impl(x, weight, bias, conv2d_geom(x, weight, bias, o));
}

Tensor conv2d_relu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                   const Conv2dOptions& o) {
    const Geom g = conv2d_geom(x, weight, bias, o);
    backend::NnKernels* k = nullptr;
    if (plain_float32(x)) {
        k = &kernels(x, Primitive::ConvForward, g);
        if (!k->conv_relu_fused(g, bias.defined())) k = nullptr;
    }
    if (!k) return relu(conv2d_impl(x, weight, bias, g));
    const Tensor xc = x.detach().contiguous(), wc = weight.detach().contiguous();
    const Tensor bc = bias.defined() ? bias.detach().contiguous() : Tensor();
    Tensor y = make_tensor({g.N, g.O, g.OH, g.OW}, x.dtype(), x.device());
    backend::View vb;
    k->conv_relu_forward(g, view_of(xc), view_of(wc), optional_view(bc, vb), view_of(y));
    if (autograd::needs_grad({&x, &weight, &bias}))
        record("ConvolutionReluBackward0", {&x, &weight, &bias}, y,
               [sx = SavedTensor(xc), sw = SavedTensor(wc), sy = SavedTensor(y, true),
                g](const Tensor& grad, const Node& n) {
                   return conv2d_backward(grad.contiguous(), sx, sw, g, n, &sy);
               });
    return y;
}

Tensor conv2d_relu_max_pool2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
                              const Conv2dOptions& o, const Pool2dOptions& pool) {
    const Geom g = conv2d_geom(x, weight, bias, o);
    const std::array<int64_t, 2> two{2, 2}, zero{0, 0}, one{1, 1};
    const bool window_2x2 = pool.kernel_size == two && pool.stride.value_or(two) == two &&
                            pool.padding == zero && pool.dilation == one && !pool.ceil_mode &&
                            g.OH >= 2 && g.OW >= 2;
    const backend::PoolGeometry pg{.planes = g.N * g.O,
                                   .H = g.OH,
                                   .W = g.OW,
                                   .OH = g.OH / 2,
                                   .OW = g.OW / 2,
                                   .kh = 2,
                                   .kw = 2,
                                   .sh = 2,
                                   .sw = 2,
                                   .ph = 0,
                                   .pw = 0,
                                   .dh = 1,
                                   .dw = 1};
    backend::NnKernels* k = nullptr;
    if (window_2x2 && plain_float32(x)) {
        k = &kernels(x, Primitive::ConvForward, g);
        if (!k->conv_relu_pool_fused(g, bias.defined(), pg)) k = nullptr;
    }
    if (!k) return max_pool2d(conv2d_relu(x, weight, bias, o), pool);
    const Tensor xc = x.detach().contiguous(), wc = weight.detach().contiguous();
    const Tensor bc = bias.defined() ? bias.detach().contiguous() : Tensor();
    Tensor y = make_tensor({g.N, g.O, pg.OH, pg.OW}, x.dtype(), x.device());
    Tensor codes = make_tensor({g.N, g.O, pg.OH, pg.OW}, DType::UInt8, x.device());
    backend::View vb;
    k->conv_relu_pool_forward(g, pg, view_of(xc), view_of(wc), optional_view(bc, vb), view_of(y),
                              view_of(codes));
    if (autograd::needs_grad({&x, &weight, &bias}))
        record("ConvolutionReluMaxPoolBackward0", {&x, &weight, &bias}, y,
               [sx = SavedTensor(xc), sw = SavedTensor(wc),
                sp = SavedPool{SavedTensor(y, true), codes, pg},
                g](const Tensor& grad, const Node& n) {
                   return conv2d_backward(grad.contiguous(), sx, sw, g, n, nullptr, &sp);
               });
    return y;
}

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv1dOptions& o) {
    check_common("conv1d", x, weight, bias);
    const Geom g = conv_geom("conv1d", x, weight, bias, {1, o.stride}, {0, o.padding},
                             {1, o.dilation}, o.groups, o.same_padding, true);
    return conv2d_impl(x.unsqueeze(2), weight.unsqueeze(2), bias, g).squeeze(2);
}

Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
                        const ConvTranspose2dOptions& o) {
    const char* op = "conv_transpose2d";
    check_common(op, x, weight, bias);
    require_dim(op, "input", x, 4, "[N, C, H, W]");
    require_dim(op, "weight", weight, 4, "[C, O/groups, kh, kw]");
    const int64_t groups = o.groups;
    if (groups < 1) shape_error(op, "expected groups >= 1, got " + std::to_string(groups));
    if (x.size(1) != weight.size(0))
        shape_error(op, "expected input [N, C, H, W] with C = " + std::to_string(weight.size(0)) +
                            " (weight " + weight.shape().str() + "), got " + x.shape().str());
    if (weight.size(0) % groups != 0)
        shape_error(op, "expected weight " + weight.shape().str() +
                            " to have in_channels divisible by groups = " + std::to_string(groups));
    for (int i = 0; i < 2; ++i)
        if (o.stride[i] < 1 || o.dilation[i] < 1 || o.padding[i] < 0 || o.output_padding[i] < 0 ||
            (o.output_padding[i] >= o.stride[i] && o.output_padding[i] >= o.dilation[i]))
            shape_error(op, "invalid stride " + ints({o.stride[0], o.stride[1]}) + ", padding " +
                                ints({o.padding[0], o.padding[1]}) + ", output_padding " +
                                ints({o.output_padding[0], o.output_padding[1]}) + " or dilation " +
                                ints({o.dilation[0], o.dilation[1]}) +
                                " (output_padding must be smaller than stride or dilation)");
    // As a convolution: its input is our output [N, O, OH, OW], its output is our input.
    Geom g{};
    g.N = x.size(0), g.O = x.size(1), g.OH = x.size(2), g.OW = x.size(3);
    g.C = weight.size(1) * groups, g.KH = weight.size(2), g.KW = weight.size(3), g.G = groups;
    g.sh = o.stride[0], g.sw = o.stride[1], g.dh = o.dilation[0], g.dw = o.dilation[1];
    g.ph = o.padding[0], g.pw = o.padding[1];
    g.bf16 = autocast_bf16(x);
    g.f16 = autocast_f16(x);
    g.H = (g.OH - 1) * g.sh - 2 * g.ph + g.dh * (g.KH - 1) + o.output_padding[0] + 1;
    g.W = (g.OW - 1) * g.sw - 2 * g.pw + g.dw * (g.KW - 1) + o.output_padding[1] + 1;
    require_vector(op, "bias", bias, g.C);
    if (g.H <= 0 || g.W <= 0)
        shape_error(op, "output size would be " + std::to_string(g.H) + "x" + std::to_string(g.W) +
                            " for input " + x.shape().str() + ", which is too small");
    if (g.N == 0 || g.C == 0 || g.O == 0)
        shape_error(op, "empty input or weight is not supported, got input " + x.shape().str() +
                            " and weight " + weight.shape().str());
    if (const auto lower = emulated_autocast(x)) { // the bias add stays an ordinary float32 op
        const Tensor y =
            with_rounded_operands(x, weight, *lower, [&](const Tensor& xr, const Tensor& wr) {
                return conv_transpose2d(xr, wr, Tensor(), o);
            });
        return bias.defined() ? y + bias.view({1, g.C, 1, 1}) : y;
    }
    const Tensor xc = x.detach().contiguous(), wc = weight.detach().contiguous();
    Tensor y = backward_data_raw(xc, wc, g);
    if (bias.defined()) {
        const Tensor bc = bias.detach().contiguous();
        autograd::NoGradGuard ng;
        y.add_(bc.view({1, g.C, 1, 1}));
    }
    if (autograd::needs_grad({&x, &weight, &bias}))
        record("ConvolutionBackward0", {&x, &weight, &bias}, y,
               [sx = SavedTensor(xc), sw = SavedTensor(wc), g](const Tensor& grad, const Node& n) {
                   const Tensor gy = grad.contiguous();
                   TensorList r(3);
                   if (n.needs_input_grad(0)) r[0] = forward_raw(gy, sw.unpack(n), {}, g);
                   if (n.needs_input_grad(1)) r[1] = backward_weights_raw(gy, sx.unpack(n), g);
                   if (n.needs_input_grad(2)) r[2] = gy.sum({0, 2, 3});
                   return r;
               });
    return y;
}

} // namespace myelin::nn::functional
