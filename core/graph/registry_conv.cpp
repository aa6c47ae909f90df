// Layer kinds of the Linear & Convolution and Pooling categories, with their shape rule helpers
// (padding that fits, sliding-window output sizes).
#include "graph/registry_parts.h"

#include <myelin/error.h>
#include <myelin/graph/registry.h>
#include <myelin/nn/layers.h>

#include <array>
#include <initializer_list>
#include <string>

namespace myelin::graph::detail {

namespace {

const AttrDesc kBias = attr::flag("bias", true, "Learn an additive bias.");
const AttrDesc kPaddingMode =
    attr::choice("padding_mode", "zeros", {"zeros", "reflect", "replicate", "circular"},
                 "What the padding holds: zeros, the border mirrored (reflect), the edge repeated "
                 "(replicate) or the opposite side (circular).");

// A convolution's reflect padding must be smaller than the input along each padded dimension,
// circular padding at most as large (it wraps the opposite side around once), as in PyTorch.
// One entry per spatial dimension: kernel, dilation, padding, input size, name.
struct PaddedDim {
    int64_t k, d, p, size;
    const char* name;
};
void require_padding_fits(const Attrs& a, std::initializer_list<PaddedDim> dims) {
    const std::string mode = a.get_string("padding_mode");
    if (mode != "reflect" && mode != "circular") return;
    for (const PaddedDim& dim : dims) {
        const int64_t side =
            nn::conv_padding_sides(dim.k, dim.d, dim.p, a.get_bool("same_padding"))[1];
        if (mode == "reflect" ? side >= dim.size : side > dim.size)
            fail(mode + " padding of " + std::to_string(side) + " needs an input " + dim.name +
                 (mode == "reflect" ? " above " : " of at least ") + std::to_string(side) +
                 ", got " + std::to_string(dim.size));
    }
}

// Sliding-window output length (convolution and pooling), PyTorch's formula.
int64_t window_out(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation,
                   bool ceil_mode, const char* axis) {
    int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1;
    int64_t out = (span < 0 ? -1 : (ceil_mode ? (span + stride - 1) / stride : span / stride)) + 1;
    if (ceil_mode && out > 0 && (out - 1) * stride >= in + pad) --out;
    if (out <= 0)
        fail(std::string("input ") + axis + " " + std::to_string(in) + " is too small for kernel " +
             std::to_string(kernel) +
             (dilation > 1 ? " dilation " + std::to_string(dilation) : "") +
             (pad ? " with padding " + std::to_string(pad) : "") + ": the output would be empty");
    return out;
}
void require_pool_padding(std::array<int64_t, 2> kernel, std::array<int64_t, 2> pad) {
    for (int i = 0; i < 2; ++i)
        if (pad[i] > kernel[i] / 2)
            fail("padding " + std::to_string(pad[i]) + " must be at most half of kernel_size " +
                 std::to_string(kernel[i]));
}
void require_divisible(int64_t value, int64_t groups, const char* what) {
    if (value % groups != 0)
        fail(std::string(what) + " " + std::to_string(value) + " must be divisible by groups " +
             std::to_string(groups));
}

} // namespace

void add_linear_conv_kinds(std::vector<LayerKind>& kinds) {
    {
        LayerKind k =
            kind("Linear", Category::LinearConv, "y = x W^T + b over the last dimension.");
        k.input_features_attr = "in_features";
        k.attrs = {
            attr::integer("in_features", 128, "Size of each input sample (last dimension).", 1),
            attr::integer("out_features", 10, "Size of each output sample.", 1), kBias};
        k.summary_attrs = {"in_features", "out_features"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_float(in[0]);
            const Dims& s = in[0].shape;
            int64_t n = a.get_int("in_features");
            if (s.size() < 2 || s.back() != n)
                fail("expected input [N, *, " + std::to_string(n) +
                     "] (in_features=" + std::to_string(n) + "), got " + s.str() +
                     (s.size() > 2 ? "; insert a Flatten before this layer" : ""));
            Dims out = s;
            out[out.size() - 1] = a.get_int("out_features");
            return TensorType{out, in[0].dtype};
        };
        k.param_count = [](const Attrs& a) {
            int64_t o = a.get_int("out_features");
            return a.get_int("in_features") * o + (a.get_bool("bias") ? o : 0);
        };
        k.flops = [](const Attrs& a, Inputs, const TensorType& out) {
            return 2.0 * double(a.get_int("in_features")) * double(out.shape.numel());
        };
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::Linear>(a.get_int("in_features"), a.get_int("out_features"),
                                                a.get_bool("bias"));
        };
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k =
            kind("Bilinear", Category::LinearConv, "y = x1^T A x2 + b: combines two inputs.");
        k.attrs = {attr::integer("in1_features", 16, "Size of each first-input sample.", 1),
                   attr::integer("in2_features", 16, "Size of each second-input sample.", 1),
                   attr::integer("out_features", 16, "Size of each output sample.", 1), kBias};
        k.summary_attrs = {"in1_features", "in2_features", "out_features"};
        k.inputs = {"input1", "input2"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_float(in[0]);
            require_float(in[1]);
            int64_t n1 = a.get_int("in1_features"), n2 = a.get_int("in2_features");
            const Dims &s1 = in[0].shape, &s2 = in[1].shape;
            if (s1.size() < 2 || s1.back() != n1)
                fail("expected input1 [N, *, " + std::to_string(n1) + "], got " + s1.str());
            if (s2.size() != s1.size() || s2.back() != n2)
                fail("expected input2 [N, *, " + std::to_string(n2) +
                     "] with input1's leading "
                     "dimensions, got " +
                     s2.str());
            for (int d = 0; d + 1 < s1.size(); ++d)
                if (s1[d] != s2[d])
                    fail("inputs must agree in all but the last dimension, got " + s1.str() +
                         " and " + s2.str());
            Dims out = s1;
            out[out.size() - 1] = a.get_int("out_features");
            return TensorType{out, in[0].dtype};
        };
        k.param_count = [](const Attrs& a) {
            int64_t o = a.get_int("out_features");
            return a.get_int("in1_features") * a.get_int("in2_features") * o +
                   (a.get_bool("bias") ? o : 0);
        };
        k.flops = [](const Attrs& a, Inputs, const TensorType& out) {
            return 2.0 * double(a.get_int("in1_features") * a.get_int("in2_features")) *
                   double(out.shape.numel());
        };
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::Bilinear>(a.get_int("in1_features"),
                                                  a.get_int("in2_features"),
                                                  a.get_int("out_features"), a.get_bool("bias"));
        };
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k = kind("Conv1d", Category::LinearConv, "1-d convolution over [N, C, L].");
        k.input_channels_attr = "in_channels";
        k.attrs = {
            attr::integer("in_channels", 1, "Channels of the input.", 1),
            attr::integer("out_channels", 16, "Channels produced (number of filters).", 1),
            attr::integer("kernel_size", 3, "Length of the filter.", 1),
            attr::integer("stride", 1, "Step of the filter.", 1),
            attr::integer("padding", 0, "Zeros added on both sides.", 0),
            attr::flag("same_padding", false,
                       "Pad so the output has the input's length (PyTorch's "
                       "padding='same'; needs stride 1). Overrides padding."),
            kPaddingMode,
            attr::integer("dilation", 1, "Spacing between filter taps.", 1),
            attr::integer("groups", 1, "Blocked connections from input to output channels.", 1),
            kBias};
        k.summary_attrs = {"out_channels", "kernel_size", "stride"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_rank(in[0], 3, "[N, C, L]");
            int64_t cin = a.get_int("in_channels"), g = a.get_int("groups");
            require_channels(in[0], cin, "in_channels");
            require_divisible(cin, g, "in_channels");
            require_divisible(a.get_int("out_channels"), g, "out_channels");
            int64_t len = in[0].shape[2];
            require_padding_fits(a, {{a.get_int("kernel_size"), a.get_int("dilation"),
                                      a.get_int("padding"), len, "length"}});
            if (a.get_bool("same_padding")) {
                if (a.get_int("stride") != 1) fail("same_padding needs stride 1");
            } else {
                len = window_out(len, a.get_int("kernel_size"), a.get_int("stride"),
                                 a.get_int("padding"), a.get_int("dilation"), false, "length");
            }
            return TensorType{Dims{in[0].shape[0], a.get_int("out_channels"), len}, in[0].dtype};
        };
        k.param_count = [](const Attrs& a) {
            int64_t o = a.get_int("out_channels");
            return o * (a.get_int("in_channels") / a.get_int("groups")) * a.get_int("kernel_size") +
                   (a.get_bool("bias") ? o : 0);
        };
        k.flops = [](const Attrs& a, Inputs, const TensorType& out) {
            return 2.0 * double(out.shape.numel()) *
                   double(a.get_int("in_channels") / a.get_int("groups") *
                          a.get_int("kernel_size"));
        };
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::Conv1d>(
                a.get_int("in_channels"), a.get_int("out_channels"), a.get_int("kernel_size"),
                nn::Conv1dOptions{.stride = a.get_int("stride"),
                                  .padding = a.get_int("padding"),
                                  .dilation = a.get_int("dilation"),
                                  .groups = a.get_int("groups"),
                                  .bias = a.get_bool("bias"),
                                  .same_padding = a.get_bool("same_padding"),
                                  .padding_mode = a.get_string("padding_mode")});
        };
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k = kind("Conv2d", Category::LinearConv, "2-d convolution over [N, C, H, W].");
        k.input_channels_attr = "in_channels";
        k.attrs = {
            attr::integer("in_channels", 1, "Channels of the input.", 1),
            attr::integer("out_channels", 16, "Channels produced (number of filters).", 1),
            attr::int_or_pair("kernel_size", 3, "Filter size: one int or [height, width]."),
            attr::int_or_pair("stride", 1, "Step of the filter."),
            attr::int_or_pair("padding", 0, "Zeros added on each side.", 0),
            attr::flag("same_padding", false,
                       "Pad so the output has the input's height and width (PyTorch's "
                       "padding='same'; needs stride 1). Overrides padding."),
            kPaddingMode,
            attr::int_or_pair("dilation", 1, "Spacing between filter taps."),
            attr::integer("groups", 1, "Blocked connections from input to output channels.", 1),
            kBias};
        k.summary_attrs = {"out_channels", "kernel_size", "stride", "padding"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_rank(in[0], 4, "[N, C, H, W]");
            int64_t cin = a.get_int("in_channels"), g = a.get_int("groups");
            require_channels(in[0], cin, "in_channels");
            require_divisible(cin, g, "in_channels");
            require_divisible(a.get_int("out_channels"), g, "out_channels");
            int64_t h = in[0].shape[2], w = in[0].shape[3];
            const auto k2 = pair_of(a, "kernel_size"), d2 = pair_of(a, "dilation"),
                       p2 = pair_of(a, "padding");
            require_padding_fits(
                a, {{k2[0], d2[0], p2[0], h, "height"}, {k2[1], d2[1], p2[1], w, "width"}});
            if (a.get_bool("same_padding")) {
                if (pair_of(a, "stride") != std::array<int64_t, 2>{1, 1})
                    fail("same_padding needs stride 1");
            } else {
                auto k2 = pair_of(a, "kernel_size"), s = pair_of(a, "stride"),
                     p = pair_of(a, "padding"), d = pair_of(a, "dilation");
                h = window_out(h, k2[0], s[0], p[0], d[0], false, "height");
                w = window_out(w, k2[1], s[1], p[1], d[1], false, "width");
            }
            return TensorType{Dims{in[0].shape[0], a.get_int("out_channels"), h, w}, in[0].dtype};
        };
        k.param_count = [](const Attrs& a) {
            auto k2 = pair_of(a, "kernel_size");
            int64_t o = a.get_int("out_channels");
            return o * (a.get_int("in_channels") / a.get_int("groups")) * k2[0] * k2[1] +
                   (a.get_bool("bias") ? o : 0);
        };
        k.flops = [](const Attrs& a, Inputs, const TensorType& out) {
            auto k2 = pair_of(a, "kernel_size");
            return 2.0 * double(out.shape.numel()) *
                   double(a.get_int("in_channels") / a.get_int("groups") * k2[0] * k2[1]);
        };
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::Conv2d>(
                a.get_int("in_channels"), a.get_int("out_channels"), size2(a, "kernel_size"),
                nn::Conv2dOptions{.stride = size2(a, "stride"),
                                  .padding = size2(a, "padding"),
                                  .dilation = size2(a, "dilation"),
                                  .groups = a.get_int("groups"),
                                  .bias = a.get_bool("bias"),
                                  .same_padding = a.get_bool("same_padding"),
                                  .padding_mode = a.get_string("padding_mode")});
        };
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k = kind("ConvTranspose2d", Category::LinearConv,
                           "Transposed 2-d convolution (learned upsampling) over [N, C, H, W].");
        k.input_channels_attr = "in_channels";
        k.attrs = {
            attr::integer("in_channels", 16, "Channels of the input.", 1),
            attr::integer("out_channels", 16, "Channels produced.", 1),
            attr::int_or_pair("kernel_size", 2, "Filter size: one int or [height, width]."),
            attr::int_or_pair("stride", 2, "Upsampling step."),
            attr::int_or_pair("padding", 0, "Implicit padding removed from each side.", 0),
            attr::int_or_pair("output_padding", 0,
                              "Extra size added to one side of the output (less than stride "
                              "or dilation).",
                              0),
            attr::integer("groups", 1, "Blocked connections from input to output channels.", 1),
            kBias,
            attr::int_or_pair("dilation", 1, "Spacing between filter taps.")};
        k.summary_attrs = {"out_channels", "kernel_size", "stride"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_rank(in[0], 4, "[N, C, H, W]");
            int64_t cin = a.get_int("in_channels"), g = a.get_int("groups");
            require_channels(in[0], cin, "in_channels");
            require_divisible(cin, g, "in_channels");
            require_divisible(a.get_int("out_channels"), g, "out_channels");
            auto k2 = pair_of(a, "kernel_size"), s = pair_of(a, "stride"),
                 p = pair_of(a, "padding"), op = pair_of(a, "output_padding"),
                 d = pair_of(a, "dilation");
            Dims out{in[0].shape[0], a.get_int("out_channels"), 0, 0};
            for (int i = 0; i < 2; ++i) {
                if (op[i] >= s[i] && op[i] >= d[i])
                    fail("output_padding " + std::to_string(op[i]) +
                         " must be smaller than stride or dilation");
                out[2 + i] =
                    (in[0].shape[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (k2[i] - 1) + op[i] + 1;
                if (out[2 + i] <= 0)
                    fail("padding " + std::to_string(p[i]) + " leaves an empty output for input " +
                         in[0].shape.str());
            }
            return TensorType{out, in[0].dtype};
        };
        k.param_count = [](const Attrs& a) {
            auto k2 = pair_of(a, "kernel_size");
            int64_t o = a.get_int("out_channels");
            return a.get_int("in_channels") * (o / a.get_int("groups")) * k2[0] * k2[1] +
                   (a.get_bool("bias") ? o : 0);
        };
        k.flops = [](const Attrs& a, Inputs in, const TensorType&) {
            auto k2 = pair_of(a, "kernel_size");
            return 2.0 * double(in[0].shape.numel()) *
                   double(a.get_int("out_channels") / a.get_int("groups") * k2[0] * k2[1]);
        };
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::ConvTranspose2d>(
                a.get_int("in_channels"), a.get_int("out_channels"), size2(a, "kernel_size"),
                nn::ConvTranspose2dOptions{.stride = size2(a, "stride"),
                                           .padding = size2(a, "padding"),
                                           .output_padding = size2(a, "output_padding"),
                                           .groups = a.get_int("groups"),
                                           .bias = a.get_bool("bias"),
                                           .dilation = size2(a, "dilation")});
        };
        kinds.push_back(std::move(k));
    }
}

void add_pooling_kinds(std::vector<LayerKind>& kinds) {
    {
        LayerKind k =
            kind("MaxPool2d", Category::Pooling, "Maximum over sliding windows of [N, C, H, W].");
        k.attrs = {
            attr::int_or_pair("kernel_size", 2, "Window size: one int or [height, width]."),
            attr::nullable(attr::int_or_pair("stride", 2, "Window step; None: kernel_size.")),
            attr::int_or_pair("padding", 0, "Implicit -inf padding on each side.", 0),
            attr::int_or_pair("dilation", 1, "Spacing between window elements."),
            attr::flag("ceil_mode", false, "Round the output size up instead of down.")};
        k.summary_attrs = {"kernel_size", "stride"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_rank(in[0], 4, "[N, C, H, W]");
            auto k2 = pair_of(a, "kernel_size"), p = pair_of(a, "padding"),
                 d = pair_of(a, "dilation");
            auto s = a.is_none("stride") ? k2 : pair_of(a, "stride");
            require_pool_padding(k2, p);
            bool ceil = a.get_bool("ceil_mode");
            Dims out = in[0].shape;
            out[2] = window_out(out[2], k2[0], s[0], p[0], d[0], ceil, "height");
            out[3] = window_out(out[3], k2[1], s[1], p[1], d[1], ceil, "width");
            return TensorType{out, in[0].dtype};
        };
        k.param_count = no_params;
        k.flops = [](const Attrs& a, Inputs, const TensorType& out) {
            auto k2 = pair_of(a, "kernel_size");
            return double(out.shape.numel() * k2[0] * k2[1]);
        };
        k.build = [](const Attrs& a) {
            nn::MaxPool2dOptions o{.stride = std::nullopt,
                                   .padding = size2(a, "padding"),
                                   .dilation = size2(a, "dilation"),
                                   .ceil_mode = a.get_bool("ceil_mode")};
            if (!a.is_none("stride")) o.stride = size2(a, "stride");
            return std::make_shared<nn::MaxPool2d>(size2(a, "kernel_size"), o);
        };
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k =
            kind("AvgPool2d", Category::Pooling, "Average over sliding windows of [N, C, H, W].");
        k.attrs = {
            attr::int_or_pair("kernel_size", 2, "Window size: one int or [height, width]."),
            attr::nullable(attr::int_or_pair("stride", 2, "Window step; None: kernel_size.")),
            attr::int_or_pair("padding", 0, "Implicit zero padding on each side.", 0),
            attr::flag("ceil_mode", false, "Round the output size up instead of down."),
            attr::flag("count_include_pad", true, "Count padding zeros in the average's divisor.")};
        k.summary_attrs = {"kernel_size", "stride"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_rank(in[0], 4, "[N, C, H, W]");
            auto k2 = pair_of(a, "kernel_size"), p = pair_of(a, "padding");
            auto s = a.is_none("stride") ? k2 : pair_of(a, "stride");
            require_pool_padding(k2, p);
            bool ceil = a.get_bool("ceil_mode");
            Dims out = in[0].shape;
            out[2] = window_out(out[2], k2[0], s[0], p[0], 1, ceil, "height");
            out[3] = window_out(out[3], k2[1], s[1], p[1], 1, ceil, "width");
            return TensorType{out, in[0].dtype};
        };
        k.param_count = no_params;
        k.flops = [](const Attrs& a, Inputs, const TensorType& out) {
            auto k2 = pair_of(a, "kernel_size");
            return double(out.shape.numel() * k2[0] * k2[1]);
        };
        k.build = [](const Attrs& a) {
            nn::AvgPool2dOptions o{.stride = std::nullopt,
                                   .padding = size2(a, "padding"),
                                   .ceil_mode = a.get_bool("ceil_mode"),
                                   .count_include_pad = a.get_bool("count_include_pad")};
            if (!a.is_none("stride")) o.stride = size2(a, "stride");
            return std::make_shared<nn::AvgPool2d>(size2(a, "kernel_size"), o);
        };
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k = kind("AdaptiveAvgPool2d", Category::Pooling,
                           "Average pooling to a fixed output size (1 = global average).");
        k.attrs = {
            attr::int_or_pair("output_size", 1, "Output height and width: one int or a pair.")};
        k.summary_attrs = {"output_size"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_rank(in[0], 4, "[N, C, H, W]");
            auto o = pair_of(a, "output_size");
            return TensorType{Dims{in[0].shape[0], in[0].shape[1], o[0], o[1]}, in[0].dtype};
        };
        k.param_count = no_params;
        k.flops = [](const Attrs&, Inputs in, const TensorType&) {
            return double(in[0].shape.numel());
        };
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::AdaptiveAvgPool2d>(size2(a, "output_size"));
        };
        kinds.push_back(std::move(k));
    }
}

} // namespace myelin::graph::detail
