// Layers: parameters, PyTorch's default initialisation, input checks and repr. The math lives in
// nn::functional and the tensor ops; a layer only validates, chooses arguments and calls them.
#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/nn/functional.h>
#include <myelin/nn/init.h>
#include <myelin/nn/layers.h>

#include <charconv>
#include <cmath>

namespace myelin::nn {

namespace F = functional;

namespace {

// Python's repr of a float: shortest round-trip digits, fixed notation for exponents in
// [-4, 16), otherwise "1e-05" style (what PyTorch's reprs show).
std::string py_float(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    const std::string s(buf, res.ptr);
    const size_t e = s.find('e');
    const int exp = std::stoi(s.substr(e + 1));
    std::string mantissa = s.substr(0, e);
    const bool negative = mantissa[0] == '-';
    std::string digits;
    for (char c : mantissa)
        if (c >= '0' && c <= '9') digits += c;
    std::string out = negative ? "-" : "";
    if (exp >= -4 && exp < 16) {
        if (exp >= 0) {
            if (digits.size() < static_cast<size_t>(exp + 1)) digits.resize(exp + 1, '0');
            out += digits.substr(0, exp + 1) + ".";
            out += digits.size() > static_cast<size_t>(exp + 1) ? digits.substr(exp + 1) : "0";
        } else {
            out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
        }
        return out;
    }
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    const int a = std::abs(exp);
    return out + "e" + (exp < 0 ? "-" : "+") + (a < 10 ? "0" : "") + std::to_string(a);
}

// PyTorch's reprs print Python ints where the default argument is an int (Softplus).
std::string py_number(double v) {
    if (std::nearbyint(v) == v && std::abs(v) < 1e15)
        return std::to_string(static_cast<int64_t>(v));
    return py_float(v);
}

const char* py_bool(bool b) {
    return b ? "True" : "False";
}
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

std::string layer_name(const Module& m) {
    return m.type_name() + "(" + m.extra_repr() + ")";
}

[[noreturn]] void bad_input(const Module& m, const std::string& expected, const std::string& got) {
    throw ShapeError(layer_name(m) + ": expected input " + expected + ", got " + got);
}
[[noreturn]] void bad_input(const Module& m, const std::string& expected, const Tensor& x) {
    bad_input(m, expected, x.shape().str());
}

void require_positive(const Module& m, int64_t v, const char* what) {
    if (v <= 0)
        throw Error(m.type_name() + ": " + what + " must be positive, got " + std::to_string(v));
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

// The kaiming_uniform_(a=sqrt(5)) + uniform bias init that Linear and Conv layers share.
void reset_linear_like(Tensor& weight, Tensor& bias) {
    init::kaiming_uniform_(weight, std::sqrt(5.0));
    if (bias.defined()) {
        const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
        const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
        init::uniform_(bias, -bound, bound);
    }
}

std::string dims_tuple(const Dims& d) {
    std::string s = "(";
    for (int i = 0; i < d.size(); ++i)
        s += (i ? ", " : "") + std::to_string(d[i]);
    return s + (d.size() == 1 ? ",)" : ")");
}

} // namespace

// --- Linear ------------------------------------------------------------------------------------

Linear::Linear(int64_t in, int64_t out, bool with_bias)
    : Module("Linear"), in_features(in), out_features(out) {
    require_positive(*this, in, "in_features");
    require_positive(*this, out, "out_features");
    weight = register_parameter("weight", empty({out, in}));
    if (with_bias) bias = register_parameter("bias", empty({out}));
    reset_parameters();
}

void Linear::reset_parameters() {
    reset_linear_like(weight, bias);
}

Tensor Linear::forward(const TensorList& inputs) {
    const Tensor& x = inputs[0];
    if (x.dim() < 1 || x.size(-1) != in_features)
        bad_input(*this, "[..., " + std::to_string(in_features) + "]", x);
    return F::linear(x, weight, bias);
}

std::string Linear::extra_repr() const {
    return "in_features=" + std::to_string(in_features) +
           ", out_features=" + std::to_string(out_features) + ", bias=" + py_bool(bias.defined());
}

// --- Bilinear ----------------------------------------------------------------------------------

Bilinear::Bilinear(int64_t in1, int64_t in2, int64_t out, bool with_bias)
    : Module("Bilinear"), in1_features(in1), in2_features(in2), out_features(out) {
    require_positive(*this, in1, "in1_features");
    require_positive(*this, in2, "in2_features");
    require_positive(*this, out, "out_features");
    weight = register_parameter("weight", empty({out, in1, in2}));
    if (with_bias) bias = register_parameter("bias", empty({out}));
    reset_parameters();
}

void Bilinear::reset_parameters() {
    const double bound = 1.0 / std::sqrt(static_cast<double>(in1_features));
    init::uniform_(weight, -bound, bound);
    if (bias.defined()) init::uniform_(bias, -bound, bound);
}

Tensor Bilinear::forward(const TensorList& inputs) {
    const Tensor& a = inputs[0];
    const Tensor& b = inputs[1];
    const bool ok = a.dim() >= 1 && b.dim() == a.dim() && a.size(-1) == in1_features &&
                    b.size(-1) == in2_features &&
                    Dims(std::span(a.shape().begin(), a.shape().end() - 1)) ==
                        Dims(std::span(b.shape().begin(), b.shape().end() - 1));
    if (!ok)
        bad_input(*this,
                  "[..., " + std::to_string(in1_features) + "] and [..., " +
                      std::to_string(in2_features) + "] with equal leading dims",
                  a.shape().str() + " and " + b.shape().str());
    return F::bilinear(a, b, weight, bias);
}

std::string Bilinear::extra_repr() const {
    return "in1_features=" + std::to_string(in1_features) +
           ", in2_features=" + std::to_string(in2_features) +
           ", out_features=" + std::to_string(out_features) + ", bias=" + py_bool(bias.defined());
}

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
    const Tensor& x = inputs[0];
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
    Tensor y;
    if (o.padding_mode == "zeros") {
        y = F::conv2d(x4, weight, bias, fo);
    } else {
        fo.padding = {0, 0};
        fo.same_padding = false;
        y = F::conv2d(pad_for_conv(*this, x4, kernel_size, o.dilation, o.padding, o.same_padding,
                                   o.padding_mode),
                      weight, bias, fo);
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

// --- BatchNorm ---------------------------------------------------------------------------------

BatchNormBase::BatchNormBase(std::string type_name, int64_t n, double eps_,
                             std::optional<double> momentum_, bool affine_, bool track)
    : Module(std::move(type_name)), num_features(n), eps(eps_), momentum(momentum_),
      affine(affine_), track_running_stats(track) {
    require_positive(*this, n, "num_features");
    if (affine) {
        weight = register_parameter("weight", empty({n}));
        bias = register_parameter("bias", empty({n}));
    }
    if (track) {
        running_mean = register_buffer("running_mean", zeros({n}));
        running_var = register_buffer("running_var", ones({n}));
        num_batches_tracked =
            register_buffer("num_batches_tracked", zeros({}, TensorOptions(DType::Int64)));
    }
    reset_parameters();
}

void BatchNormBase::reset_running_stats() {
    if (!track_running_stats) return;
    init::zeros_(running_mean);
    init::ones_(running_var);
    autograd::NoGradGuard no_grad;
    num_batches_tracked.zero_();
}

void BatchNormBase::reset_parameters() {
    reset_running_stats();
    if (affine) {
        init::ones_(weight);
        init::zeros_(bias);
    }
}

Tensor BatchNormBase::forward(const TensorList& inputs) {
    const Tensor& x = inputs[0];
    check_input(x);
    // PyTorch's _BatchNorm.forward: the update factor, and which statistics normalise.
    double factor = momentum.value_or(0.0);
    if (is_training() && track_running_stats) {
        {
            autograd::NoGradGuard no_grad;
            num_batches_tracked.add_(1.0);
        }
        if (!momentum) factor = 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
    }
    const bool use_batch_stats = is_training() || !track_running_stats;
    const bool pass_stats = !is_training() || track_running_stats;
    return F::batch_norm(x, pass_stats ? running_mean : Tensor(),
                         pass_stats ? running_var : Tensor(), weight, bias, use_batch_stats, factor,
                         eps);
}

std::string BatchNormBase::extra_repr() const {
    return std::to_string(num_features) + ", eps=" + py_float(eps) +
           ", momentum=" + (momentum ? py_float(*momentum) : std::string("None")) +
           ", affine=" + py_bool(affine) + ", track_running_stats=" + py_bool(track_running_stats);
}

BatchNorm1d::BatchNorm1d(int64_t n, double eps, std::optional<double> momentum, bool affine,
                         bool track)
    : BatchNormBase("BatchNorm1d", n, eps, momentum, affine, track) {}

void BatchNorm1d::check_input(const Tensor& x) const {
    if ((x.dim() != 2 && x.dim() != 3) || x.size(1) != num_features) {
        const std::string c = std::to_string(num_features);
        bad_input(*this, "[N, " + c + "] or [N, " + c + ", L]", x);
    }
}

BatchNorm2d::BatchNorm2d(int64_t n, double eps, std::optional<double> momentum, bool affine,
                         bool track)
    : BatchNormBase("BatchNorm2d", n, eps, momentum, affine, track) {}

void BatchNorm2d::check_input(const Tensor& x) const {
    if (x.dim() != 4 || x.size(1) != num_features)
        bad_input(*this, "[N, " + std::to_string(num_features) + ", H, W]", x);
}

// --- LayerNorm / GroupNorm ---------------------------------------------------------------------

LayerNorm::LayerNorm(Dims shape, double eps_, bool affine)
    : Module("LayerNorm"), normalized_shape(shape), eps(eps_), elementwise_affine(affine) {
    if (shape.empty()) throw Error("LayerNorm: normalized_shape must not be empty");
    for (int64_t d : shape)
        require_positive(*this, d, "normalized_shape entries");
    if (affine) {
        weight = register_parameter("weight", empty(shape));
        bias = register_parameter("bias", empty(shape));
    }
    reset_parameters();
}

void LayerNorm::reset_parameters() {
    if (!elementwise_affine) return;
    init::ones_(weight);
    init::zeros_(bias);
}

Tensor LayerNorm::forward(const TensorList& inputs) {
    const Tensor& x = inputs[0];
    const int n = normalized_shape.size();
    bool ok = x.dim() >= n;
    for (int i = 0; ok && i < n; ++i)
        ok = x.size(x.dim() - n + i) == normalized_shape[i];
    if (!ok) {
        std::string s = "[...";
        for (int64_t d : normalized_shape)
            s += ", " + std::to_string(d);
        bad_input(*this, s + "]", x);
    }
    return F::layer_norm(x, normalized_shape, weight, bias, eps);
}

std::string LayerNorm::extra_repr() const {
    return dims_tuple(normalized_shape) + ", eps=" + py_float(eps) +
           ", elementwise_affine=" + py_bool(elementwise_affine);
}

GroupNorm::GroupNorm(int64_t groups, int64_t channels, double eps_, bool affine_)
    : Module("GroupNorm"), num_groups(groups), num_channels(channels), eps(eps_), affine(affine_) {
    require_positive(*this, groups, "num_groups");
    require_positive(*this, channels, "num_channels");
    if (channels % groups != 0)
        throw Error("GroupNorm: num_channels (" + std::to_string(channels) +
                    ") must be divisible by num_groups (" + std::to_string(groups) + ")");
    if (affine) {
        weight = register_parameter("weight", empty({channels}));
        bias = register_parameter("bias", empty({channels}));
    }
    reset_parameters();
}

void GroupNorm::reset_parameters() {
    if (!affine) return;
    init::ones_(weight);
    init::zeros_(bias);
}

Tensor GroupNorm::forward(const TensorList& inputs) {
    const Tensor& x = inputs[0];
    if (x.dim() < 2 || x.size(1) != num_channels)
        bad_input(*this, "[N, " + std::to_string(num_channels) + ", *]", x);
    return F::group_norm(x, num_groups, weight, bias, eps);
}

std::string GroupNorm::extra_repr() const {
    return std::to_string(num_groups) + ", " + std::to_string(num_channels) +
           ", eps=" + py_float(eps) + ", affine=" + py_bool(affine);
}

// --- Dropout -----------------------------------------------------------------------------------

namespace {
void check_probability(const Module& m, double p) {
    if (!(p >= 0.0 && p <= 1.0))
        throw Error(m.type_name() + ": dropout probability has to be between 0 and 1, but got " +
                    py_float(p));
}
} // namespace

Dropout::Dropout(double p_) : Module("Dropout"), p(p_) {
    check_probability(*this, p);
}

Tensor Dropout::forward(const TensorList& inputs) {
    return F::dropout(inputs[0], p, is_training(), generator);
}

std::string Dropout::extra_repr() const {
    return "p=" + py_float(p) + ", inplace=False";
}

Dropout2d::Dropout2d(double p_) : Module("Dropout2d"), p(p_) {
    check_probability(*this, p);
}

Tensor Dropout2d::forward(const TensorList& inputs) {
    const Tensor& x = inputs[0];
    if (x.dim() != 3 && x.dim() != 4) bad_input(*this, "[N, C, H, W] or [C, H, W]", x);
    // Unbatched [C, H, W] drops whole channels too: treat it as a batch of one.
    if (x.dim() == 3) return F::dropout2d(x.unsqueeze(0), p, is_training(), generator).squeeze(0);
    return F::dropout2d(x, p, is_training(), generator);
}

std::string Dropout2d::extra_repr() const {
    return "p=" + py_float(p) + ", inplace=False";
}

// --- Embedding ---------------------------------------------------------------------------------

namespace {
std::optional<int64_t> normalize_padding_idx(int64_t n, std::optional<int64_t> idx) {
    if (!idx) return idx;
    if (*idx >= n || *idx < -n)
        throw Error("Embedding: padding_idx " + std::to_string(*idx) +
                    " must be within num_embeddings (" + std::to_string(n) + ")");
    return *idx < 0 ? *idx + n : *idx;
}
} // namespace

Embedding::Embedding(int64_t n, int64_t dim, std::optional<int64_t> pad)
    : Module("Embedding"), num_embeddings(n), embedding_dim(dim),
      padding_idx(normalize_padding_idx(n, pad)) {
    require_positive(*this, n, "num_embeddings");
    require_positive(*this, dim, "embedding_dim");
    weight = register_parameter("weight", empty({n, dim}));
    reset_parameters();
}

void Embedding::reset_parameters() {
    init::normal_(weight);
    if (padding_idx) {
        autograd::NoGradGuard no_grad;
        weight.select(0, *padding_idx).fill_(0.0);
    }
}

Tensor Embedding::forward(const TensorList& inputs) {
    const Tensor& idx = inputs[0];
    if (idx.dtype() != DType::Int64)
        throw DTypeError(layer_name(*this) + ": expected int64 indices, got " +
                         dtype_name(idx.dtype()) + " " + idx.shape().str());
    return F::embedding(idx, weight, padding_idx);
}

std::string Embedding::extra_repr() const {
    std::string s = std::to_string(num_embeddings) + ", " + std::to_string(embedding_dim);
    if (padding_idx) s += ", padding_idx=" + std::to_string(*padding_idx);
    return s;
}

// --- Flatten / Unflatten / Upsample -------------------------------------------------------------

Flatten::Flatten(int start, int end) : Module("Flatten"), start_dim(start), end_dim(end) {}

Tensor Flatten::forward(const TensorList& inputs) {
    const Tensor& x = inputs[0];
    const int n = std::max(x.dim(), 1);
    const int s = start_dim < 0 ? start_dim + n : start_dim;
    const int e = end_dim < 0 ? end_dim + n : end_dim;
    if (s < 0 || s >= n || e < 0 || e >= n || s > e) {
        const int need = std::max(
            {start_dim < 0 ? -start_dim : start_dim + 1, end_dim < 0 ? -end_dim : end_dim + 1, 1});
        bad_input(*this, "a tensor with at least " + std::to_string(need) + " dims", x);
    }
    return x.flatten(start_dim, end_dim);
}

std::string Flatten::extra_repr() const {
    return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
}

Unflatten::Unflatten(int d, Dims sizes) : Module("Unflatten"), dim(d), unflattened_size(sizes) {
    if (sizes.empty()) throw Error("Unflatten: unflattened_size must not be empty");
    int inferred = 0;
    for (int64_t v : sizes) {
        if (v == -1)
            ++inferred;
        else
            require_positive(*this, v, "unflattened_size entries");
    }
    if (inferred > 1) throw Error("Unflatten: only one size can be -1");
}

Tensor Unflatten::forward(const TensorList& inputs) {
    const Tensor& x = inputs[0];
    const int d = dim < 0 ? dim + x.dim() : dim;
    int64_t known = 1;
    bool infer = false;
    for (int64_t v : unflattened_size) {
        if (v == -1)
            infer = true;
        else
            known *= v;
    }
    const bool fits =
        d >= 0 && d < x.dim() && (infer ? x.size(d) % known == 0 : x.size(d) == known);
    if (!fits)
        bad_input(*this,
                  "a tensor whose dim " + std::to_string(dim) + " has " +
                      (infer ? "a multiple of " : "") + std::to_string(known) + " elements",
                  x);
    return x.unflatten(d, unflattened_size);
}

std::string Unflatten::extra_repr() const {
    return "dim=" + std::to_string(dim) + ", unflattened_size=" + dims_tuple(unflattened_size);
}

Upsample::Upsample(Size2 scale, const std::string& mode_, bool align)
    : Module("Upsample"), scale_factor(scale), mode(mode_), align_corners(align) {
    require_positive(*this, std::min(scale.h, scale.w), "scale_factor");
    if (mode != "nearest" && mode != "bilinear")
        throw Error("Upsample: mode '" + mode + "' is not supported ('nearest' or 'bilinear')");
    if (align_corners && mode == "nearest")
        throw Error("Upsample: align_corners can only be set with mode 'bilinear'");
}

Tensor Upsample::forward(const TensorList& inputs) {
    const Tensor& x = inputs[0];
    if (x.dim() != 4) bad_input(*this, "[N, C, H, W]", x);
    if (mode == "bilinear") return F::upsample_bilinear2d(x, scale_factor.arr(), align_corners);
    return F::upsample_nearest2d(x, scale_factor.arr());
}

std::string Upsample::extra_repr() const {
    const std::string s = scale_factor.scalar
                              ? py_float(static_cast<double>(scale_factor.h))
                              : "(" + py_float(static_cast<double>(scale_factor.h)) + ", " +
                                    py_float(static_cast<double>(scale_factor.w)) + ")";
    return "scale_factor=" + s + ", mode=" + mode;
}

// --- activations -------------------------------------------------------------------------------

Tensor ReLU::forward(const TensorList& inputs) {
    return relu(inputs[0]);
}

Tensor LeakyReLU::forward(const TensorList& inputs) {
    return leaky_relu(inputs[0], negative_slope);
}
std::string LeakyReLU::extra_repr() const {
    return "negative_slope=" + py_float(negative_slope);
}

PReLU::PReLU(int64_t n, double init_) : Module("PReLU"), num_parameters(n), init(init_) {
    require_positive(*this, n, "num_parameters");
    weight = register_parameter("weight", full({n}, init));
}

Tensor PReLU::forward(const TensorList& inputs) {
    const Tensor& x = inputs[0];
    if (num_parameters > 1 && (x.dim() < 2 || x.size(1) != num_parameters))
        bad_input(*this, "[N, " + std::to_string(num_parameters) + ", *]", x);
    return F::prelu(x, weight);
}
std::string PReLU::extra_repr() const {
    return "num_parameters=" + std::to_string(num_parameters);
}

Tensor ELU::forward(const TensorList& inputs) {
    return elu(inputs[0], alpha);
}
std::string ELU::extra_repr() const {
    return "alpha=" + py_float(alpha);
}

GELU::GELU(std::string approx) : Module("GELU"), approximate(std::move(approx)) {
    if (approximate != "none" && approximate != "tanh")
        throw Error("GELU: approximate must be 'none' or 'tanh', got '" + approximate + "'");
}
Tensor GELU::forward(const TensorList& inputs) {
    return gelu(inputs[0], approximate);
}
std::string GELU::extra_repr() const {
    return "approximate='" + approximate + "'";
}

Tensor SiLU::forward(const TensorList& inputs) {
    return silu(inputs[0]);
}
Tensor Sigmoid::forward(const TensorList& inputs) {
    return sigmoid(inputs[0]);
}
Tensor Tanh::forward(const TensorList& inputs) {
    return tanh(inputs[0]);
}
Tensor Hardswish::forward(const TensorList& inputs) {
    return F::hardswish(inputs[0]);
}

namespace {
void check_softmax_dim(const Module& m, const Tensor& x, int dim) {
    const int n = std::max(x.dim(), 1);
    if (dim < -n || dim >= n)
        bad_input(m,
                  "a tensor with dim " + std::to_string(dim) + " (at least " +
                      std::to_string(dim < 0 ? -dim : dim + 1) + " dims)",
                  x);
}
} // namespace

Tensor Softmax::forward(const TensorList& inputs) {
    check_softmax_dim(*this, inputs[0], dim);
    return softmax(inputs[0], dim);
}
std::string Softmax::extra_repr() const {
    return "dim=" + std::to_string(dim);
}

Tensor LogSoftmax::forward(const TensorList& inputs) {
    check_softmax_dim(*this, inputs[0], dim);
    return log_softmax(inputs[0], dim);
}
std::string LogSoftmax::extra_repr() const {
    return "dim=" + std::to_string(dim);
}

Tensor Softplus::forward(const TensorList& inputs) {
    return softplus(inputs[0], beta, threshold);
}
std::string Softplus::extra_repr() const {
    return "beta=" + py_number(beta) + ", threshold=" + py_number(threshold);
}

// --- merge nodes -------------------------------------------------------------------------------

namespace {
std::string shapes_of(const TensorList& inputs) {
    std::string s;
    for (size_t i = 0; i < inputs.size(); ++i)
        s += (i ? ", " : "") + inputs[i].shape().str();
    return s;
}
void check_broadcastable(const Module& m, const TensorList& inputs) {
    if (inputs.empty()) bad_input(m, "at least one tensor", "no inputs");
    Dims shape = inputs[0].shape();
    for (size_t i = 1; i < inputs.size(); ++i) {
        const Dims& o = inputs[i].shape();
        const int n = std::max(shape.size(), o.size());
        Dims out = Dims::filled(n, 1);
        for (int k = 0; k < n; ++k) {
            const int ia = k - (n - shape.size());
            const int ib = k - (n - o.size());
            const int64_t a = ia >= 0 ? shape[ia] : 1;
            const int64_t b = ib >= 0 ? o[ib] : 1;
            if (a != b && a != 1 && b != 1)
                bad_input(m, "shapes that broadcast together", shapes_of(inputs));
            out[k] = a == 1 ? b : a;
        }
        shape = out;
    }
}
} // namespace

Tensor Add::forward(const TensorList& inputs) {
    check_broadcastable(*this, inputs);
    Tensor out = inputs[0];
    for (size_t i = 1; i < inputs.size(); ++i)
        out = add(out, inputs[i]);
    return out;
}

Tensor Multiply::forward(const TensorList& inputs) {
    check_broadcastable(*this, inputs);
    Tensor out = inputs[0];
    for (size_t i = 1; i < inputs.size(); ++i)
        out = mul(out, inputs[i]);
    return out;
}

Tensor Concat::forward(const TensorList& inputs) {
    if (inputs.empty()) bad_input(*this, "at least one tensor", "no inputs");
    const Tensor& first = inputs[0];
    const int n = first.dim();
    const int d = dim < 0 ? dim + n : dim;
    bool ok = d >= 0 && d < n;
    for (size_t i = 1; ok && i < inputs.size(); ++i) {
        ok = inputs[i].dim() == n;
        for (int k = 0; ok && k < n; ++k)
            ok = k == d || inputs[i].size(k) == first.size(k);
    }
    if (!ok)
        bad_input(*this,
                  "tensors with equal sizes except in dim " + std::to_string(dim) +
                      (d >= 0 && d < n ? "" : " (out of range)"),
                  shapes_of(inputs));
    return cat(inputs, d);
}
std::string Concat::extra_repr() const {
    return "dim=" + std::to_string(dim);
}

// --- containers --------------------------------------------------------------------------------

namespace {
ModulePtr at_index(const Module& m, const std::vector<ModulePtr>& v, int64_t index) {
    const auto n = static_cast<int64_t>(v.size());
    const int64_t i = index < 0 ? index + n : index;
    if (i < 0 || i >= n)
        throw IndexError(m.type_name() + ": index " + std::to_string(index) +
                         " is out of range for " + std::to_string(n) + " modules");
    return v[static_cast<size_t>(i)];
}
} // namespace

Sequential::Sequential(const std::vector<ModulePtr>& modules) : Module("Sequential") {
    for (const auto& m : modules)
        push_back(m);
}

Sequential::Sequential(const std::vector<std::pair<std::string, ModulePtr>>& named)
    : Module("Sequential") {
    for (const auto& [name, m] : named)
        push_back(name, m);
}

void Sequential::push_back(ModulePtr module) {
    push_back(std::to_string(modules_.size()), std::move(module));
}

void Sequential::push_back(const std::string& name, ModulePtr module) {
    add_child(name, module);
    modules_.push_back(std::move(module));
}

ModulePtr Sequential::operator[](int64_t index) const {
    return at_index(*this, modules_, index);
}

int Sequential::num_inputs() const {
    return modules_.empty() ? 1 : modules_[0]->num_inputs();
}

Tensor Sequential::forward(const TensorList& inputs) {
    if (modules_.empty()) return inputs[0];
    Tensor x = (*modules_[0])(inputs);
    for (size_t i = 1; i < modules_.size(); ++i)
        x = (*modules_[i])(x);
    return x;
}

ModuleList::ModuleList(const std::vector<ModulePtr>& modules) : Module("ModuleList") {
    for (const auto& m : modules)
        push_back(m);
}

void ModuleList::push_back(ModulePtr module) {
    add_child(std::to_string(modules_.size()), module);
    modules_.push_back(std::move(module));
}

ModulePtr ModuleList::operator[](int64_t index) const {
    return at_index(*this, modules_, index);
}

Tensor ModuleList::forward(const TensorList&) {
    throw Error("ModuleList has no forward(): call its modules");
}

ModuleDict::ModuleDict(const std::vector<std::pair<std::string, ModulePtr>>& modules)
    : Module("ModuleDict") {
    for (const auto& [k, m] : modules)
        insert(k, m);
}

void ModuleDict::insert(const std::string& key, ModulePtr module) {
    add_child(key, module);
}

ModulePtr ModuleDict::operator[](const std::string& key) const {
    return child(key);
}

bool ModuleDict::contains(const std::string& key) const {
    for (const auto& [k, m] : named_children())
        if (k == key) return true;
    return false;
}

std::vector<std::string> ModuleDict::keys() const {
    std::vector<std::string> out;
    for (const auto& [k, m] : named_children())
        out.push_back(k);
    return out;
}

Tensor ModuleDict::forward(const TensorList&) {
    throw Error("ModuleDict has no forward(): call its modules");
}

} // namespace myelin::nn
