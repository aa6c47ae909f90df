// Convolution and pooling layers: Conv1d, Conv2d, ConvTranspose2d (with the padding modes of
// Conv1d / Conv2d), MaxPool2d, AvgPool2d, AdaptiveAvgPool2d.
#include "nn/layers_common.h"

#include <myelin/error.h>
#include <myelin/nn/functional.h>
#include <myelin/nn/layers.h>

namespace myelin::nn {

namespace F = functional;
using namespace detail;

namespace {

std::string tuple2(const Size2& s) {
    return "(" + std::to_string(s.h) + ", " + std::to_string(s.w) + ")";
}
// Printed the way it was given: "2" or "(3, 2)".
std::string as_given(const Size2& s) {
    return s.scalar ? std::to_string(s.h) : tuple2(s);
}
std::string tuple1(int64_t v) {
    return "(" + std::to_string(v) + ",)";
}

// Conv/pool output size along one dim (PyTorch's formula, floor or ceil mode).
int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
    const int64_t span = in + 2 * p - d * (k - 1) - 1;
    if (span < 0) return 0;
    int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    // PyTorch: the last window must start inside the input or the left padding.
    if (ceil_mode && (out - 1) * s >= in + p) --out;
    return out;
}

} // namespace

std::array<int64_t, 2> conv_padding_sides(int64_t kernel, int64_t dilation, int64_t padding,
                                          bool same) {
    const int64_t total = same ? dilation * (kernel - 1) : 2 * padding;
    return {total / 2, total - total / 2};
}

// --- padding modes of Conv1d / Conv2d ----------------------------------------------------------

namespace {

void check_padding_mode(const Module& m, const std::string& mode) {
    if (mode != "zeros" && mode != "reflect" && mode != "replicate" && mode != "circular")
        throw Error(m.type_name() +
                    ": padding_mode must be 'zeros', 'reflect', 'replicate' or 'circular', got '" +
                    mode + "'");
}

// x [N, C, H, W] padded explicitly (F::pad) for a convolution whose padding_mode is not zeros,
// as PyTorch does before convolving unpadded: each side gets padding (for 'same': total / 2
// before, the rest after).
Tensor pad_for_conv(const Module& m, const Tensor& x, Size2 k, Size2 d, Size2 p, bool same,
                    const std::string& mode) {
    const auto h = conv_padding_sides(k.h, d.h, p.h, same),
               w = conv_padding_sides(k.w, d.w, p.w, same);
    try {
        return F::pad(x, {w[0], w[1], h[0], h[1]}, mode);
    } catch (const ShapeError& e) { // padding that does not fit the input: name the layer
        throw ShapeError(m.type_name() + ": " + e.what());
    }
}

} // namespace

// --- Conv1d ------------------------------------------------------------------------------------

namespace {
void check_conv_args(const Module& m, int64_t in, int64_t out, int64_t groups, bool same,
                     bool strided) {
    require_positive(m, in, "in_channels");
    require_positive(m, out, "out_channels");
    require_positive(m, groups, "groups");
    if (in % groups != 0) throw Error(m.type_name() + ": in_channels must be divisible by groups");
    if (out % groups != 0)
        throw Error(m.type_name() + ": out_channels must be divisible by groups");
    if (same && strided)
        throw Error(m.type_name() + ": padding='same' is not supported for strided convolutions");
}
} // namespace

Conv1d::Conv1d(int64_t in, int64_t out, int64_t k, Conv1dOptions opts)
    : Module("Conv1d"), in_channels(in), out_channels(out), kernel_size(k), options(opts) {
    check_conv_args(*this, in, out, opts.groups, opts.same_padding, opts.stride != 1);
    require_positive(*this, k, "kernel_size");
    check_padding_mode(*this, opts.padding_mode);
    weight = register_parameter("weight", empty({out, in / opts.groups, k}));
    if (opts.bias) bias = register_parameter("bias", empty({out}));
    reset_parameters();
}

void Conv1d::reset_parameters() {
    reset_linear_like(weight, bias);
}

Tensor Conv1d::forward(const TensorList& inputs) {
    const Tensor& x = inputs[0];
    const std::string expected = "[N, " + std::to_string(in_channels) + ", L]";
    if ((x.dim() != 2 && x.dim() != 3) || x.size(-2) != in_channels) bad_input(*this, expected, x);
    const int64_t len = x.size(-1);
    if (!options.same_padding && pooled_size(len, kernel_size, options.stride, options.padding,
                                             options.dilation, false) <= 0)
        bad_input(*this, expected + " with L large enough for the kernel", x);
    F::Conv1dOptions o{options.stride, options.padding, options.dilation, options.groups,
                       options.same_padding};
    Tensor x3 = x.dim() == 2 ? x.unsqueeze(0) : x;
    if (options.padding_mode != "zeros") {
        x3 = pad_for_conv(*this, x3.unsqueeze(2), Size2(1, kernel_size), Size2(1, options.dilation),
                          Size2(0, options.padding), options.same_padding, options.padding_mode)
                 .squeeze(2);
        o.padding = 0;
        o.same_padding = false;
    }
    const Tensor y = F::conv1d(x3, weight, bias, o);
    return x.dim() == 2 ? y.squeeze(0) : y;
}

std::string Conv1d::extra_repr() const {
    std::string s = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                    ", kernel_size=" + tuple1(kernel_size) + ", stride=" + tuple1(options.stride);
    if (options.same_padding)
        s += ", padding=same";
    else if (options.padding != 0)
        s += ", padding=" + tuple1(options.padding);
    if (options.dilation != 1) s += ", dilation=" + tuple1(options.dilation);
    if (options.groups != 1) s += ", groups=" + std::to_string(options.groups);
    if (!bias.defined()) s += ", bias=False";
    if (options.padding_mode != "zeros") s += ", padding_mode=" + options.padding_mode;
    return s;
}

// --- Conv2d ------------------------------------------------------------------------------------

Conv2d::Conv2d(int64_t in, int64_t out, Size2 k, Conv2dOptions opts)
    : Module("Conv2d"), in_channels(in), out_channels(out), kernel_size(k), options(opts) {
    check_conv_args(*this, in, out, opts.groups, opts.same_padding, !(opts.stride == Size2(1)));
    require_positive(*this, std::min(k.h, k.w), "kernel_size");
    check_padding_mode(*this, opts.padding_mode);
    weight = register_parameter("weight", empty({out, in / opts.groups, k.h, k.w}));
    if (opts.bias) bias = register_parameter("bias", empty({out}));
    reset_parameters();
}

void Conv2d::reset_parameters() {
    reset_linear_like(weight, bias);
}

Tensor Conv2d::forward(const TensorList& inputs) {
    return run(inputs[0], false);
}

Tensor Conv2d::forward_relu(const Tensor& x) {
    return run(x, true);
}

Tensor fused_conv_relu(Module& conv, Module& relu, const Tensor& x) {
    auto* c = dynamic_cast<Conv2d*>(&conv);
    if (!c || !dynamic_cast<ReLU*>(&relu) || conv.has_hooks() || relu.has_hooks()) return {};
    return c->forward_relu(x);
}

Tensor fused_conv_relu_pool(Module& conv, Module& relu, Module& pool, const Tensor& x) {
    auto* c = dynamic_cast<Conv2d*>(&conv);
    auto* p = dynamic_cast<MaxPool2d*>(&pool);
    if (!c || !p || !dynamic_cast<ReLU*>(&relu) || conv.has_hooks() || relu.has_hooks() ||
        pool.has_hooks())
        return {};
    const MaxPool2dOptions& po = p->options;
    if (!(p->kernel_size == Size2(2) && p->stride == Size2(2) && po.padding == Size2(0) &&
          po.dilation == Size2(1) && !po.ceil_mode))
        return {};
    // The convolution's output must fill one window (else the layers report it, unfused).
    if ((x.dim() != 3 && x.dim() != 4) || x.size(-3) != c->in_channels) return {};
    const Conv2dOptions& o = c->options;
    const auto out_size = [&](int64_t in, int64_t k, int64_t s, int64_t pad, int64_t d) {
        return o.same_padding ? in : pooled_size(in, k, s, pad, d, false);
    };
    if (out_size(x.size(-2), c->kernel_size.h, o.stride.h, o.padding.h, o.dilation.h) < 2 ||
        out_size(x.size(-1), c->kernel_size.w, o.stride.w, o.padding.w, o.dilation.w) < 2)
        return {};
    return c->run(x, true, true);
}

Tensor Conv2d::run(const Tensor& x, bool relu, bool pool_2x2) {
    const std::string expected = "[N, " + std::to_string(in_channels) + ", H, W]";
    if ((x.dim() != 3 && x.dim() != 4) || x.size(-3) != in_channels) bad_input(*this, expected, x);
    const Conv2dOptions& o = options;
    if (!o.same_padding &&
        (pooled_size(x.size(-2), kernel_size.h, o.stride.h, o.padding.h, o.dilation.h, false) <=
             0 ||
         pooled_size(x.size(-1), kernel_size.w, o.stride.w, o.padding.w, o.dilation.w, false) <= 0))
        bad_input(*this, expected + " with H, W at least the (dilated) kernel size after padding",
                  x);
    F::Conv2dOptions fo{o.stride.arr(), o.padding.arr(), o.dilation.arr(), o.groups,
                        o.same_padding};
    const Tensor x4 = x.dim() == 3 ? x.unsqueeze(0) : x;
    const auto conv = [&](const Tensor& input) {
        if (pool_2x2) return F::conv2d_relu_max_pool2d(input, weight, bias, fo, F::Pool2dOptions{});
        return relu ? F::conv2d_relu(input, weight, bias, fo) : F::conv2d(input, weight, bias, fo);
    };
    Tensor y;
    if (o.padding_mode == "zeros") {
        y = conv(x4);
    } else {
        const Tensor padded = pad_for_conv(*this, x4, kernel_size, o.dilation, o.padding,
                                           o.same_padding, o.padding_mode);
        fo.padding = {0, 0};
        fo.same_padding = false;
        y = conv(padded);
    }
    return x.dim() == 3 ? y.squeeze(0) : y;
}

std::string Conv2d::extra_repr() const {
    std::string s = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                    ", kernel_size=" + tuple2(kernel_size) + ", stride=" + tuple2(options.stride);
    if (options.same_padding)
        s += ", padding=same";
    else if (!(options.padding == Size2(0)))
        s += ", padding=" + tuple2(options.padding);
    if (!(options.dilation == Size2(1))) s += ", dilation=" + tuple2(options.dilation);
    if (options.groups != 1) s += ", groups=" + std::to_string(options.groups);
    if (!bias.defined()) s += ", bias=False";
    if (options.padding_mode != "zeros") s += ", padding_mode=" + options.padding_mode;
    return s;
}

// --- ConvTranspose2d ---------------------------------------------------------------------------

ConvTranspose2d::ConvTranspose2d(int64_t in, int64_t out, Size2 k, ConvTranspose2dOptions opts)
    : Module("ConvTranspose2d"), in_channels(in), out_channels(out), kernel_size(k), options(opts) {
    check_conv_args(*this, in, out, opts.groups, false, false);
    require_positive(*this, std::min(k.h, k.w), "kernel_size");
    weight = register_parameter("weight", empty({in, out / opts.groups, k.h, k.w}));
    if (opts.bias) bias = register_parameter("bias", empty({out}));
    reset_parameters();
}

void ConvTranspose2d::reset_parameters() {
    reset_linear_like(weight, bias);
}

Tensor ConvTranspose2d::forward(const TensorList& inputs) {
    const Tensor& x = inputs[0];
    if ((x.dim() != 3 && x.dim() != 4) || x.size(-3) != in_channels)
        bad_input(*this, "[N, " + std::to_string(in_channels) + ", H, W]", x);
    const auto& o = options;
    F::ConvTranspose2dOptions fo{o.stride.arr(), o.padding.arr(), o.output_padding.arr(),
                                 o.dilation.arr(), o.groups};
    if (x.dim() == 3) return F::conv_transpose2d(x.unsqueeze(0), weight, bias, fo).squeeze(0);
    return F::conv_transpose2d(x, weight, bias, fo);
}

std::string ConvTranspose2d::extra_repr() const {
    const auto& o = options;
    std::string s = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                    ", kernel_size=" + tuple2(kernel_size) + ", stride=" + tuple2(o.stride);
    if (!(o.padding == Size2(0))) s += ", padding=" + tuple2(o.padding);
    if (!(o.dilation == Size2(1))) s += ", dilation=" + tuple2(o.dilation);
    if (!(o.output_padding == Size2(0))) s += ", output_padding=" + tuple2(o.output_padding);
    if (o.groups != 1) s += ", groups=" + std::to_string(o.groups);
    if (!bias.defined()) s += ", bias=False";
    return s;
}

// --- pooling -----------------------------------------------------------------------------------

namespace {
void check_pool_input(const Module& m, const Tensor& x, Size2 k, Size2 s, Size2 p, Size2 d,
                      bool ceil_mode) {
    if (x.dim() != 3 && x.dim() != 4) bad_input(m, "[N, C, H, W]", x);
    if (pooled_size(x.size(-2), k.h, s.h, p.h, d.h, ceil_mode) <= 0 ||
        pooled_size(x.size(-1), k.w, s.w, p.w, d.w, ceil_mode) <= 0)
        bad_input(m, "[N, C, H, W] with H, W at least the kernel size after padding", x);
}
F::Pool2dOptions pool_options(Size2 k, Size2 s, Size2 p, Size2 d, bool ceil, bool include_pad) {
    F::Pool2dOptions o;
    o.kernel_size = k.arr();
    o.stride = s.arr();
    o.padding = p.arr();
    o.dilation = d.arr();
    o.ceil_mode = ceil;
    o.count_include_pad = include_pad;
    return o;
}
void check_pool_args(const Module& m, Size2 k, Size2 s, Size2 p) {
    require_positive(m, std::min(k.h, k.w), "kernel_size");
    require_positive(m, std::min(s.h, s.w), "stride");
    if (p.h * 2 > k.h || p.w * 2 > k.w)
        throw Error(m.type_name() + ": padding should be at most half of the kernel size");
}
} // namespace

MaxPool2d::MaxPool2d(Size2 k, MaxPool2dOptions opts)
    : Module("MaxPool2d"), kernel_size(k), stride(opts.stride.value_or(k)), options(opts) {
    check_pool_args(*this, kernel_size, stride, opts.padding);
}

Tensor MaxPool2d::forward(const TensorList& inputs) {
    const Tensor& x = inputs[0];
    check_pool_input(*this, x, kernel_size, stride, options.padding, options.dilation,
                     options.ceil_mode);
    const auto o = pool_options(kernel_size, stride, options.padding, options.dilation,
                                options.ceil_mode, true);
    if (x.dim() == 3) return F::max_pool2d(x.unsqueeze(0), o).squeeze(0);
    return F::max_pool2d(x, o);
}

std::string MaxPool2d::extra_repr() const {
    return "kernel_size=" + as_given(kernel_size) + ", stride=" + as_given(stride) +
           ", padding=" + as_given(options.padding) + ", dilation=" + as_given(options.dilation) +
           ", ceil_mode=" + py_bool(options.ceil_mode);
}

AvgPool2d::AvgPool2d(Size2 k, AvgPool2dOptions opts)
    : Module("AvgPool2d"), kernel_size(k), stride(opts.stride.value_or(k)), options(opts) {
    check_pool_args(*this, kernel_size, stride, opts.padding);
    if (opts.divisor_override == 0) throw Error("AvgPool2d: divisor_override must not be zero");
}

Tensor AvgPool2d::forward(const TensorList& inputs) {
    const Tensor& x = inputs[0];
    check_pool_input(*this, x, kernel_size, stride, options.padding, Size2(1), options.ceil_mode);
    auto o = pool_options(kernel_size, stride, options.padding, Size2(1), options.ceil_mode,
                          options.count_include_pad);
    o.divisor_override = options.divisor_override;
    if (x.dim() == 3) return F::avg_pool2d(x.unsqueeze(0), o).squeeze(0);
    return F::avg_pool2d(x, o);
}

std::string AvgPool2d::extra_repr() const {
    return "kernel_size=" + as_given(kernel_size) + ", stride=" + as_given(stride) +
           ", padding=" + as_given(options.padding);
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(Size2 size) : Module("AdaptiveAvgPool2d"), output_size(size) {
    require_positive(*this, std::min(size.h, size.w), "output_size");
}

Tensor AdaptiveAvgPool2d::forward(const TensorList& inputs) {
    const Tensor& x = inputs[0];
    if (x.dim() != 3 && x.dim() != 4) bad_input(*this, "[N, C, H, W]", x);
    if (x.size(-1) == 0 || x.size(-2) == 0) bad_input(*this, "[N, C, H, W] with H, W > 0", x);
    if (x.dim() == 3) return F::adaptive_avg_pool2d(x.unsqueeze(0), output_size.arr()).squeeze(0);
    return F::adaptive_avg_pool2d(x, output_size.arr());
}

std::string AdaptiveAvgPool2d::extra_repr() const {
    return "output_size=" + as_given(output_size);
}

} // namespace myelin::nn
