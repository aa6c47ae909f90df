// Each layer kind as ONNX opset 17 nodes. Weights become initializers under their state_dict
// names ("conv1.weight"); derived constants (transposed or reshaped weights, shapes, axes) get
// names that say what they are. Shapes handed to Reshape are constant int64 lists where 0 keeps
// the (symbolic) batch dimension and -1 takes the rest: OpenCV 4.6 mis-evaluates the
// Shape -> Gather -> Concat -> Reshape chains PyTorch's exporter writes.
#include "onnx_builder.h"

#include <myelin/error.h>
#include <myelin/nn/layers.h>

#include <cmath>
#include <functional>
#include <string_view>

namespace myelin::exporters::detail {

namespace {

using Lower = std::function<std::string(OnnxBuilder&, const LayerContext&)>;

[[noreturn]] void refuse(const LayerContext& l, const std::string& why) {
    throw Error(l.what() + " cannot be exported to ONNX: " + why);
}

std::vector<int64_t> pair(const graph::Attrs& a, std::string_view name) {
    const auto& v = a.get_ints(name);
    return v.size() == 1 ? std::vector<int64_t>{v[0], v[0]} : std::vector<int64_t>{v[0], v[1]};
}

std::string name_of(const LayerContext& l, const std::string& what) {
    return l.module_name + "." + what;
}

// A constant shape for Reshape: the batch (dimension 0) as 0, the other dimensions static.
std::vector<int64_t> reshape_target(const graph::TensorType& out) {
    std::vector<int64_t> shape(out.shape.begin(), out.shape.end());
    shape[0] = 0;
    return shape;
}

// x [.., in] @ W^T (+ b): Gemm for 2-d inputs (every runtime has it), MatMul otherwise.
std::string linear(OnnxBuilder& b, const LayerContext& l) {
    const Tensor& w = l.weight("weight");
    const std::string x = l.inputs[0];
    if (l.input_types[0].shape.size() == 2) {
        std::vector<std::string> in{x, b.initializer(name_of(l, "weight"), w)};
        if (l.has_weight("bias")) in.push_back(b.initializer(name_of(l, "bias"), l.weight("bias")));
        return b.op("Gemm", in, l.module_name, {attr_int("transB", 1)});
    }
    const std::string wt = b.initializer(name_of(l, "weight_transposed"), w.t().contiguous());
    std::string y = b.op("MatMul", {x, wt}, l.module_name + "_matmul");
    if (!l.has_weight("bias")) return y;
    return b.op("Add", {y, b.initializer(name_of(l, "bias"), l.weight("bias"))}, l.module_name);
}

// y[k] = x1 A[k] x2 + b[k]: x1 @ A' ([in1, out * in2]) -> [.., out, in2], times x2, summed.
std::string bilinear(OnnxBuilder& b, const LayerContext& l) {
    const Tensor& w = l.weight("weight"); // [out, in1, in2]
    const int64_t out = w.size(0), in1 = w.size(1), in2 = w.size(2);
    const Tensor a = w.permute({1, 0, 2}).contiguous().reshape({in1, out * in2});
    std::string t = b.op("MatMul", {l.inputs[0], b.initializer(name_of(l, "weight_as_matrix"), a)},
                         l.module_name + "_x1A");
    std::vector<int64_t> shape = reshape_target(l.output);
    shape.back() = out;
    shape.push_back(in2);
    t = b.op("Reshape", {t, b.ints(l.module_name + "_shape", shape)}, l.module_name + "_x1A_3d");
    // Times x2 as [.., 1, in2], summed over in2 by a MatMul with a column of ones (OpenCV 4.6
    // runs no opset 13 ReduceSum, and no MatMul of two computed values with a batch > 1);
    // positive axes (it refuses negative ones here).
    const int64_t rank = l.input_types[1].shape.size();
    const std::string x2 =
        b.op("Unsqueeze", {l.inputs[1], b.ints(l.module_name + "_axis", {rank - 1})},
             l.module_name + "_x2");
    t = b.op("Mul", {t, x2}, l.module_name + "_products");
    t = b.op("MatMul", {t, b.floats(l.module_name + "_ones", {1.0f}, {in2, 1})},
             l.module_name + "_sums");
    t = b.op("Reshape", {t, b.ints(l.module_name + "_out_shape", reshape_target(l.output))},
             l.has_weight("bias") ? l.module_name + "_sum" : l.module_name);
    if (!l.has_weight("bias")) return t;
    return b.op("Add", {t, b.initializer(name_of(l, "bias"), l.weight("bias"))}, l.module_name);
}

// Conv1d / Conv2d: explicit pads (padding='same' as PyTorch splits it); reflect / replicate
// padding as a Pad node in front, circular as slices of the opposite sides concatenated.
std::string convolution(OnnxBuilder& b, const LayerContext& l, int spatial) {
    const graph::Attrs& a = l.attrs;
    std::vector<int64_t> k, s, p, d;
    if (spatial == 1) {
        k = {a.get_int("kernel_size")}, s = {a.get_int("stride")}, p = {a.get_int("padding")},
        d = {a.get_int("dilation")};
    } else {
        k = pair(a, "kernel_size"), s = pair(a, "stride"), p = pair(a, "padding"),
        d = pair(a, "dilation");
    }
    std::vector<int64_t> begin, end;
    for (int i = 0; i < spatial; ++i) {
        auto sides = nn::conv_padding_sides(k[i], d[i], p[i], a.get_bool("same_padding"));
        begin.push_back(sides[0]);
        end.push_back(sides[1]);
    }
    std::string x = l.inputs[0];
    const std::string mode = a.get_string("padding_mode");
    std::vector<int64_t> pads = begin;
    pads.insert(pads.end(), end.begin(), end.end());
    if (mode == "circular") {
        // Pad's 'wrap' mode is opset 19: each side is the slice of the opposite side,
        // concatenated (constant, positive bounds: the spatial sizes are static).
        for (int i = 0; i < spatial; ++i) {
            const int64_t axis = 2 + i, size = l.input_types[0].shape[2 + i];
            const std::string m = l.module_name + "_wrap" + std::to_string(i);
            std::vector<std::string> parts;
            if (begin[i] > 0)
                parts.push_back(b.op("Slice",
                                     {x, b.ints(m + "_tail_start", {size - begin[i]}),
                                      b.ints(m + "_tail_end", {size}), b.ints(m + "_axis", {axis})},
                                     m + "_tail"));
            parts.push_back(x);
            if (end[i] > 0)
                parts.push_back(
                    b.op("Slice",
                         {x, b.ints(m + "_head_start", {0}), b.ints(m + "_head_end", {end[i]}),
                          b.ints(m + "_head_axis", {axis})},
                         m + "_head"));
            if (parts.size() > 1) x = b.op("Concat", parts, m, {attr_int("axis", axis)});
        }
        pads.assign(pads.size(), 0);
    } else if (mode != "zeros") {
        std::vector<int64_t> full(2, 0);
        full.insert(full.end(), begin.begin(), begin.end());
        full.push_back(0);
        full.push_back(0);
        full.insert(full.end(), end.begin(), end.end());
        x = b.op("Pad", {x, b.ints(l.module_name + "_pads", full)}, l.module_name + "_padded",
                 {attr_string("mode", mode == "reflect" ? "reflect" : "edge")});
        pads.assign(pads.size(), 0);
    }
    std::vector<std::string> in{x, b.initializer(name_of(l, "weight"), l.weight("weight"))};
    if (l.has_weight("bias")) in.push_back(b.initializer(name_of(l, "bias"), l.weight("bias")));
    return b.op("Conv", in, l.module_name,
                {attr_ints("kernel_shape", k), attr_ints("strides", s), attr_ints("pads", pads),
                 attr_ints("dilations", d), attr_int("group", a.get_int("groups"))});
}

std::string conv_transpose(OnnxBuilder& b, const LayerContext& l) {
    const graph::Attrs& a = l.attrs;
    auto p = pair(a, "padding");
    std::vector<std::string> in{l.inputs[0],
                                b.initializer(name_of(l, "weight"), l.weight("weight"))};
    if (l.has_weight("bias")) in.push_back(b.initializer(name_of(l, "bias"), l.weight("bias")));
    return b.op(
        "ConvTranspose", in, l.module_name,
        {attr_ints("kernel_shape", pair(a, "kernel_size")), attr_ints("strides", pair(a, "stride")),
         attr_ints("pads", {p[0], p[1], p[0], p[1]}),
         attr_ints("output_padding", pair(a, "output_padding")),
         attr_ints("dilations", pair(a, "dilation")), attr_int("group", a.get_int("groups"))});
}

std::string pool(OnnxBuilder& b, const LayerContext& l, bool max) {
    const graph::Attrs& a = l.attrs;
    auto k = pair(a, "kernel_size"), p = pair(a, "padding");
    auto s = a.is_none("stride") ? k : pair(a, "stride");
    std::vector<OnnxAttr> attrs{attr_ints("kernel_shape", k), attr_ints("strides", s),
                                attr_ints("pads", {p[0], p[1], p[0], p[1]}),
                                attr_int("ceil_mode", a.get_bool("ceil_mode") ? 1 : 0)};
    if (max) {
        auto d = pair(a, "dilation");
        if (d != std::vector<int64_t>{1, 1}) attrs.push_back(attr_ints("dilations", d));
        return b.op("MaxPool", {l.inputs[0]}, l.module_name, attrs);
    }
    attrs.push_back(attr_int("count_include_pad", a.get_bool("count_include_pad") ? 1 : 0));
    return b.op("AveragePool", {l.inputs[0]}, l.module_name, attrs);
}

std::string adaptive_avg_pool(OnnxBuilder& b, const LayerContext& l) {
    const auto o = pair(l.attrs, "output_size");
    const int64_t h = l.input_types[0].shape[2], w = l.input_types[0].shape[3];
    if (o[0] == 1 && o[1] == 1) return b.op("GlobalAveragePool", {l.inputs[0]}, l.module_name);
    if (h % o[0] != 0 || w % o[1] != 0)
        refuse(l, "output_size [" + std::to_string(o[0]) + ", " + std::to_string(o[1]) +
                      "] does not divide the input's " + std::to_string(h) + "x" +
                      std::to_string(w) +
                      ": its windows differ in size, and this exporter writes one AveragePool "
                      "(one window size); choose an output_size that divides the input");
    const std::vector<int64_t> k{h / o[0], w / o[1]};
    return b.op("AveragePool", {l.inputs[0]}, l.module_name,
                {attr_ints("kernel_shape", k), attr_ints("strides", k)});
}

// Per-channel scale and shift: the module's, or ones and zeros when it has none.
std::pair<std::string, std::string> affine(OnnxBuilder& b, const LayerContext& l,
                                           const std::vector<int64_t>& shape) {
    if (l.has_weight("weight"))
        return {b.initializer(name_of(l, "weight"), l.weight("weight").reshape(Dims(shape))),
                b.initializer(name_of(l, "bias"), l.weight("bias").reshape(Dims(shape)))};
    return {b.floats(l.module_name + "_ones", {1.0f}, shape),
            b.floats(l.module_name + "_zeros", {0.0f}, shape)};
}

// With running statistics, BatchNormalization (the evaluation form). Without them PyTorch
// normalises with the batch's own statistics even in evaluation: mean and (biased) variance
// over every dimension but the channels.
std::string batch_norm(OnnxBuilder& b, const LayerContext& l) {
    const int64_t c = l.attrs.get_int("num_features");
    const std::string m = l.module_name;
    const double eps = l.attrs.get_float("eps");
    if (l.has_weight("running_mean")) {
        auto [scale, shift] = affine(b, l, {c});
        return b.op("BatchNormalization",
                    {l.inputs[0], scale, shift,
                     b.initializer(name_of(l, "running_mean"), l.weight("running_mean")),
                     b.initializer(name_of(l, "running_var"), l.weight("running_var"))},
                    m, {attr_float("epsilon", eps)});
    }
    const int rank = l.input_types[0].shape.size();
    std::vector<int64_t> axes{0}, shape{c};
    for (int d = 2; d < rank; ++d) {
        axes.push_back(d);
        shape.push_back(1);
    }
    const std::string x = l.inputs[0];
    const std::string mean = b.op("ReduceMean", {x}, m + "_mean", {attr_ints("axes", axes)});
    const std::string centred = b.op("Sub", {x, mean}, m + "_centred");
    const std::string squares = b.op("Mul", {centred, centred}, m + "_squares");
    std::string t = b.op("ReduceMean", {squares}, m + "_var", {attr_ints("axes", axes)});
    t = b.op("Add", {t, b.floats(m + "_eps", {float(eps)}, {})}, m + "_var_eps");
    t = b.op("Sqrt", {t}, m + "_std");
    t = b.op("Div", {centred, t}, m + "_normalized");
    if (!l.has_weight("weight")) return t;
    auto [scale, shift] = affine(b, l, shape);
    t = b.op("Mul", {t, scale}, m + "_scaled");
    return b.op("Add", {t, shift}, m);
}

std::string layer_norm(OnnxBuilder& b, const LayerContext& l) {
    const auto& ns = l.attrs.get_ints("normalized_shape");
    auto [scale, shift] = affine(b, l, ns);
    return b.op(
        "LayerNormalization", {l.inputs[0], scale, shift}, l.module_name,
        {attr_int("axis", -int64_t(ns.size())), attr_float("epsilon", l.attrs.get_float("eps"))});
}

// GroupNormalization is opset 18: groups as InstanceNormalization over [N, G, rest], then the
// per-channel scale and shift.
std::string group_norm(OnnxBuilder& b, const LayerContext& l) {
    const int64_t g = l.attrs.get_int("num_groups"), c = l.attrs.get_int("num_channels");
    const std::string m = l.module_name;
    std::string t =
        b.op("Reshape", {l.inputs[0], b.ints(m + "_grouped_shape", {0, g, -1})}, m + "_grouped");
    t = b.op(
        "InstanceNormalization",
        {t, b.floats(m + "_group_ones", {1.0f}, {g}), b.floats(m + "_group_zeros", {0.0f}, {g})},
        m + "_normalized", {attr_float("epsilon", l.attrs.get_float("eps"))});
    t = b.op("Reshape", {t, b.ints(m + "_shape", reshape_target(l.output))}, m + "_ungrouped");
    if (!l.has_weight("weight")) return t;
    std::vector<int64_t> shape{c};
    for (int i = 2; i < l.output.shape.size(); ++i)
        shape.push_back(1);
    auto [scale, shift] = affine(b, l, shape);
    t = b.op("Mul", {t, scale}, m + "_scaled");
    return b.op("Add", {t, shift}, m);
}

std::string prelu(OnnxBuilder& b, const LayerContext& l) {
    const Tensor& w = l.weight("weight");
    std::vector<int64_t> shape{w.numel()};
    // The slope broadcasts from the right: one per channel needs [C, 1, ...] for [N, C, ...].
    for (int i = 2; w.numel() > 1 && i < l.input_types[0].shape.size(); ++i)
        shape.push_back(1);
    return b.op("PRelu", {l.inputs[0], b.initializer(name_of(l, "weight"), w.reshape(Dims(shape)))},
                l.module_name);
}

// GELU arrives in opset 20: 0.5 x (1 + erf(x / sqrt 2)), or the tanh approximation.
std::string gelu(OnnxBuilder& b, const LayerContext& l) {
    const std::string x = l.inputs[0], m = l.module_name;
    std::string inner;
    if (l.attrs.get_string("approximate") == "tanh") {
        std::string cube = b.op("Mul", {x, x}, m + "_x2");
        cube = b.op("Mul", {cube, x}, m + "_x3");
        cube = b.op("Mul", {cube, b.floats(m + "_c", {0.044715f}, {})}, m + "_cx3");
        std::string sum = b.op("Add", {x, cube}, m + "_sum");
        sum =
            b.op("Mul", {sum, b.floats(m + "_sqrt_2_over_pi", {float(std::sqrt(2.0 / M_PI))}, {})},
                 m + "_scaled");
        inner = b.op("Tanh", {sum}, m + "_tanh");
    } else {
        std::string scaled =
            b.op("Div", {x, b.floats(m + "_sqrt2", {float(std::sqrt(2.0))}, {})}, m + "_scaled");
        inner = b.op("Erf", {scaled}, m + "_erf");
    }
    std::string t = b.op("Add", {inner, b.floats(m + "_one", {1.0f}, {})}, m + "_plus1");
    t = b.op("Mul", {x, t}, m + "_times_x");
    return b.op("Mul", {t, b.floats(m + "_half", {0.5f}, {})}, m);
}

// Softplus(beta x) / beta; above the threshold PyTorch returns x, which log(1 + e^(beta x)) /
// beta equals in float32 there (the difference is below e^-20).
std::string softplus(OnnxBuilder& b, const LayerContext& l) {
    const double beta = l.attrs.get_float("beta");
    if (beta == 1.0) return b.op("Softplus", {l.inputs[0]}, l.module_name);
    const std::string beta_value = b.floats(l.module_name + "_beta", {float(beta)}, {});
    std::string t = b.op("Mul", {l.inputs[0], beta_value}, l.module_name + "_scaled");
    t = b.op("Softplus", {t}, l.module_name + "_softplus");
    return b.op("Div", {t, beta_value}, l.module_name);
}

std::string chain(OnnxBuilder& b, const LayerContext& l, const char* op) {
    std::string t = l.inputs[0];
    for (size_t i = 1; i < l.inputs.size(); ++i)
        t = b.op(op, {t, l.inputs[i]},
                 i + 1 == l.inputs.size() ? l.module_name : l.module_name + "_partial");
    return t;
}

std::string flatten_like(OnnxBuilder& b, const LayerContext& l, int merged_from, int merged_to) {
    // Dimensions before the merged range as they are (0 for the batch), the merged one as -1
    // when it takes the batch, else static; every other one static.
    std::vector<int64_t> shape;
    const Dims& in = l.input_types[0].shape;
    for (int d = 0; d < merged_from; ++d)
        shape.push_back(d == 0 ? 0 : in[d]);
    int64_t merged = 1;
    for (int d = merged_from; d <= merged_to; ++d)
        merged *= in[d];
    shape.push_back(merged_from == 0 ? -1 : merged);
    for (int d = merged_to + 1; d < in.size(); ++d)
        shape.push_back(in[d]);
    // The usual flatten [N, rest] reads best as [0, -1].
    if (merged_from == 1 && merged_to == in.size() - 1) shape = {0, -1};
    return b.op("Reshape", {l.inputs[0], b.ints(l.module_name + "_shape", shape)}, l.module_name);
}

std::string flatten(OnnxBuilder& b, const LayerContext& l) {
    const int rank = l.input_types[0].shape.size();
    auto norm = [&](int64_t d) { return int(d < 0 ? d + rank : d); };
    return flatten_like(b, l, norm(l.attrs.get_int("start_dim")), norm(l.attrs.get_int("end_dim")));
}

std::string unflatten(OnnxBuilder& b, const LayerContext& l) {
    std::vector<int64_t> shape(l.output.shape.begin(), l.output.shape.end());
    const int rank = l.input_types[0].shape.size();
    const int64_t dim =
        l.attrs.get_int("dim") < 0 ? l.attrs.get_int("dim") + rank : l.attrs.get_int("dim");
    if (dim == 0)
        shape[0] = -1; // the batch is split: the first part takes what is left
    else
        shape[0] = 0;
    return b.op("Reshape", {l.inputs[0], b.ints(l.module_name + "_shape", shape)}, l.module_name);
}

std::string upsample(OnnxBuilder& b, const LayerContext& l) {
    const auto s = pair(l.attrs, "scale_factor");
    const std::string scales =
        b.floats(l.module_name + "_scales", {1.0f, 1.0f, float(s[0]), float(s[1])}, {4});
    const std::string roi = b.floats(l.module_name + "_roi", {}, {0});
    if (l.attrs.get_string("mode") == "nearest")
        return b.op("Resize", {l.inputs[0], roi, scales}, l.module_name,
                    {attr_string("mode", "nearest"),
                     attr_string("coordinate_transformation_mode", "asymmetric"),
                     attr_string("nearest_mode", "floor")});
    return b.op(
        "Resize", {l.inputs[0], roi, scales}, l.module_name,
        {attr_string("mode", "linear"),
         attr_string("coordinate_transformation_mode",
                     l.attrs.get_bool("align_corners") ? "align_corners" : "pytorch_half_pixel")});
}

std::string simple(OnnxBuilder& b, const LayerContext& l, const char* op,
                   std::vector<OnnxAttr> attrs = {}) {
    return b.op(op, l.inputs, l.module_name, attrs);
}

const std::map<std::string, Lower, std::less<>>& lowerings() {
    static const std::map<std::string, Lower, std::less<>> table = {
        {"Linear", linear},
        {"Bilinear", bilinear},
        {"Conv1d", [](OnnxBuilder& b, const LayerContext& l) { return convolution(b, l, 1); }},
        {"Conv2d", [](OnnxBuilder& b, const LayerContext& l) { return convolution(b, l, 2); }},
        {"ConvTranspose2d", conv_transpose},
        {"MaxPool2d", [](OnnxBuilder& b, const LayerContext& l) { return pool(b, l, true); }},
        {"AvgPool2d", [](OnnxBuilder& b, const LayerContext& l) { return pool(b, l, false); }},
        {"AdaptiveAvgPool2d", adaptive_avg_pool},
        {"BatchNorm1d", batch_norm},
        {"BatchNorm2d", batch_norm},
        {"LayerNorm", layer_norm},
        {"GroupNorm", group_norm},
        {"ReLU", [](OnnxBuilder& b, const LayerContext& l) { return simple(b, l, "Relu"); }},
        {"LeakyReLU",
         [](OnnxBuilder& b, const LayerContext& l) {
             return simple(b, l, "LeakyRelu",
                           {attr_float("alpha", l.attrs.get_float("negative_slope"))});
         }},
        {"PReLU", prelu},
        {"ELU",
         [](OnnxBuilder& b, const LayerContext& l) {
             return simple(b, l, "Elu", {attr_float("alpha", l.attrs.get_float("alpha"))});
         }},
        {"GELU", gelu},
        {"SiLU",
         [](OnnxBuilder& b, const LayerContext& l) {
             std::string s = b.op("Sigmoid", l.inputs, l.module_name + "_sigmoid");
             return b.op("Mul", {l.inputs[0], s}, l.module_name);
         }},
        {"Sigmoid", [](OnnxBuilder& b, const LayerContext& l) { return simple(b, l, "Sigmoid"); }},
        {"Tanh", [](OnnxBuilder& b, const LayerContext& l) { return simple(b, l, "Tanh"); }},
        {"Softmax",
         [](OnnxBuilder& b, const LayerContext& l) {
             return simple(b, l, "Softmax", {attr_int("axis", l.attrs.get_int("dim"))});
         }},
        {"LogSoftmax",
         [](OnnxBuilder& b, const LayerContext& l) {
             return simple(b, l, "LogSoftmax", {attr_int("axis", l.attrs.get_int("dim"))});
         }},
        {"Softplus", softplus},
        {"Hardswish",
         [](OnnxBuilder& b, const LayerContext& l) { return simple(b, l, "HardSwish"); }},
        // Evaluation form: dropout is the identity.
        {"Dropout", [](OnnxBuilder& b, const LayerContext& l) { return simple(b, l, "Identity"); }},
        {"Dropout2d",
         [](OnnxBuilder& b, const LayerContext& l) { return simple(b, l, "Identity"); }},
        {"Identity",
         [](OnnxBuilder& b, const LayerContext& l) { return simple(b, l, "Identity"); }},
        {"Add", [](OnnxBuilder& b, const LayerContext& l) { return chain(b, l, "Add"); }},
        {"Multiply", [](OnnxBuilder& b, const LayerContext& l) { return chain(b, l, "Mul"); }},
        {"Concat",
         [](OnnxBuilder& b, const LayerContext& l) {
             return simple(b, l, "Concat", {attr_int("axis", l.attrs.get_int("dim"))});
         }},
        {"Flatten", flatten},
        {"Unflatten", unflatten},
        {"Upsample", upsample},
        {"Embedding",
         [](OnnxBuilder& b, const LayerContext& l) {
             return b.op("Gather",
                         {b.initializer(name_of(l, "weight"), l.weight("weight")), l.inputs[0]},
                         l.module_name, {attr_int("axis", 0)});
         }},
    };
    return table;
}

} // namespace

std::string lower_layer(OnnxBuilder& b, const LayerContext& layer) {
    const auto& table = lowerings();
    auto it = table.find(layer.kind.name);
    if (it == table.end())
        refuse(layer, "no ONNX form is known for layer kind '" + layer.kind.name + "'" +
                          (layer.kind.origin.empty() ? "" : " (from " + layer.kind.origin + ")"));
    return it->second(b, layer);
}

bool has_lowering(std::string_view kind) {
    return lowerings().count(kind) > 0;
}

} // namespace myelin::exporters::detail
