// Export forms of the linear, convolution and pooling kinds: Linear, Bilinear, Conv1d, Conv2d,
// ConvTranspose2d, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d. Weights become ONNX initializers
// under their state_dict names ("conv1.weight"); derived constants (transposed or reshaped
// weights, shapes, axes) get names that say what they are.
#include "forms_parts.h"

#include <myelin/nn/layers.h>

namespace myelin::exporters::detail {

namespace {

std::string linear(OnnxGraph& g, const OnnxLayer& l) {
    return linear_value(g, l.inputs[0], int64_t(l.input_types[0].shape.size()), l.weight("weight"),
                        l.has_weight("bias") ? l.weight("bias") : Tensor(), state_name(l, "weight"),
                        state_name(l, "bias"), l.module_name);
}

// y[k] = x1 A[k] x2 + b[k]: x1 @ A' ([in1, out * in2]) -> [.., out, in2], times x2, summed.
std::string bilinear(OnnxGraph& b, const OnnxLayer& l) {
    const Tensor& w = l.weight("weight"); // [out, in1, in2]
    const int64_t out = w.size(0), in1 = w.size(1), in2 = w.size(2);
    const Tensor a = w.permute({1, 0, 2}).contiguous().reshape({in1, out * in2});
    std::string t =
        b.op("MatMul", {l.inputs[0], b.initializer(state_name(l, "weight_as_matrix"), a)},
             l.name("x1A"));
    std::vector<int64_t> shape = reshape_target(l.output());
    shape.back() = out;
    shape.push_back(in2);
    t = b.op("Reshape", {t, b.ints(l.name("shape"), shape)}, l.name("x1A_3d"));
    // Times x2 as [.., 1, in2], summed over in2 by a MatMul with a column of ones (OpenCV 4.6
    // runs no opset 13 ReduceSum, and no MatMul of two computed values with a batch > 1);
    // positive axes (it refuses negative ones here).
    const int64_t rank = l.input_types[1].shape.size();
    const std::string x2 =
        b.op("Unsqueeze", {l.inputs[1], b.ints(l.name("axis"), {rank - 1})}, l.name("x2"));
    t = b.op("Mul", {t, x2}, l.name("products"));
    t = b.op("MatMul", {t, b.floats(l.name("ones"), {1.0f}, {in2, 1})}, l.name("sums"));
    t = b.op("Reshape", {t, b.ints(l.name("out_shape"), reshape_target(l.output()))},
             l.has_weight("bias") ? l.name("sum") : l.module_name);
    if (!l.has_weight("bias")) return t;
    return b.op("Add", {t, b.initializer(state_name(l, "bias"), l.weight("bias"))}, l.module_name);
}

// Conv1d / Conv2d: explicit pads (padding='same' as PyTorch splits it); reflect / replicate
// padding as a Pad node in front, circular as slices of the opposite sides concatenated.
std::string convolution(OnnxGraph& b, const OnnxLayer& l, int spatial) {
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
            const std::string m = l.name("wrap" + std::to_string(i));
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
        x = b.op("Pad", {x, b.ints(l.name("pads"), full)}, l.name("padded"),
                 {attr_string("mode", mode == "reflect" ? "reflect" : "edge")});
        pads.assign(pads.size(), 0);
    }
    std::vector<std::string> in{x, b.initializer(state_name(l, "weight"), l.weight("weight"))};
    if (l.has_weight("bias")) in.push_back(b.initializer(state_name(l, "bias"), l.weight("bias")));
    return b.op("Conv", in, l.module_name,
                {attr_ints("kernel_shape", k), attr_ints("strides", s), attr_ints("pads", pads),
                 attr_ints("dilations", d), attr_int("group", a.get_int("groups"))});
}

std::string conv_transpose(OnnxGraph& b, const OnnxLayer& l) {
    const graph::Attrs& a = l.attrs;
    auto p = pair(a, "padding");
    std::vector<std::string> in{l.inputs[0],
                                b.initializer(state_name(l, "weight"), l.weight("weight"))};
    if (l.has_weight("bias")) in.push_back(b.initializer(state_name(l, "bias"), l.weight("bias")));
    return b.op(
        "ConvTranspose", in, l.module_name,
        {attr_ints("kernel_shape", pair(a, "kernel_size")), attr_ints("strides", pair(a, "stride")),
         attr_ints("pads", {p[0], p[1], p[0], p[1]}),
         attr_ints("output_padding", pair(a, "output_padding")),
         attr_ints("dilations", pair(a, "dilation")), attr_int("group", a.get_int("groups"))});
}

std::string pool(OnnxGraph& b, const OnnxLayer& l, bool max) {
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

std::string adaptive_avg_pool(OnnxGraph& b, const OnnxLayer& l) {
    const auto o = pair(l.attrs, "output_size");
    const int64_t h = l.input_types[0].shape[2], w = l.input_types[0].shape[3];
    if (o[0] == 1 && o[1] == 1) return b.op("GlobalAveragePool", {l.inputs[0]}, l.module_name);
    if (h % o[0] != 0 || w % o[1] != 0)
        l.refuse("output_size [" + std::to_string(o[0]) + ", " + std::to_string(o[1]) +
                 "] does not divide the input's " + std::to_string(h) + "x" + std::to_string(w) +
                 ": its windows differ in size, and this exporter writes one AveragePool "
                 "(one window size); choose an output_size that divides the input");
    const std::vector<int64_t> k{h / o[0], w / o[1]};
    return b.op("AveragePool", {l.inputs[0]}, l.module_name,
                {attr_ints("kernel_shape", k), attr_ints("strides", k)});
}

std::string py_conv(const PyLayer& l) {
    const graph::Attrs& a = l.attrs;
    const bool two_d = l.kind.name == "Conv2d";
    auto v = [&](const char* n) { return two_d ? py_int_or_pair(a, n) : py_int(a, n); };
    PyCall c("nn." + l.kind.name, l);
    c.pos(py_int(a, "in_channels")).pos(py_int(a, "out_channels")).pos(v("kernel_size"));
    c.kw("stride", v("stride"));
    if (a.get_bool("same_padding"))
        c.always("padding", "\"same\"");
    else
        c.kw("padding", v("padding"));
    c.kw("dilation", v("dilation")).kw("groups", py_int(a, "groups"));
    c.flag("bias");
    return c.kw("padding_mode", py_string(a.get_string("padding_mode"))).str();
}

std::string py_pool(const PyLayer& l) {
    const graph::Attrs& a = l.attrs;
    PyCall c("nn." + l.kind.name, l);
    c.pos(py_int_or_pair(a, "kernel_size"));
    if (!a.is_none("stride")) c.always("stride", py_int_or_pair(a, "stride"));
    c.kw("padding", py_int_or_pair(a, "padding"));
    if (l.kind.name == "MaxPool2d") c.kw("dilation", py_int_or_pair(a, "dilation"));
    c.flag("ceil_mode");
    if (l.kind.name == "AvgPool2d") c.flag("count_include_pad");
    return c.str();
}

} // namespace

void add_linear_conv_forms(FormsTable& table) {
    table["Linear"] = {.onnx = single(linear), .pytorch_module = [](const PyLayer& l) {
                           return PyCall("nn.Linear", l)
                               .pos(py_int(l.attrs, "in_features"))
                               .pos(py_int(l.attrs, "out_features"))
                               .flag("bias")
                               .str();
                       }};
    table["Bilinear"] = {.onnx = single(bilinear),
                         .pytorch_module =
                             [](const PyLayer& l) {
                                 return PyCall("nn.Bilinear", l)
                                     .pos(py_int(l.attrs, "in1_features"))
                                     .pos(py_int(l.attrs, "in2_features"))
                                     .pos(py_int(l.attrs, "out_features"))
                                     .flag("bias")
                                     .str();
                             },
                         .opencv_note =
                             [](const graph::Attrs&) {
                                 return std::string("OpenCV 4.6's DNN module runs its MatMul form "
                                                    "with a batch of 1 only");
                             }};
    table["Conv1d"] = {
        .onnx = single([](OnnxGraph& g, const OnnxLayer& l) { return convolution(g, l, 1); }),
        .pytorch_module = py_conv};
    table["Conv2d"] = {
        .onnx = single([](OnnxGraph& g, const OnnxLayer& l) { return convolution(g, l, 2); }),
        .pytorch_module = py_conv};
    table["ConvTranspose2d"] = {.onnx = single(conv_transpose),
                                .pytorch_module = [](const PyLayer& l) {
                                    const graph::Attrs& a = l.attrs;
                                    PyCall c("nn.ConvTranspose2d", l);
                                    c.pos(py_int(a, "in_channels"))
                                        .pos(py_int(a, "out_channels"))
                                        .pos(py_int_or_pair(a, "kernel_size"));
                                    c.always("stride", py_int_or_pair(a, "stride"));
                                    c.kw("padding", py_int_or_pair(a, "padding"));
                                    c.kw("output_padding", py_int_or_pair(a, "output_padding"));
                                    c.kw("groups", py_int(a, "groups"));
                                    c.flag("bias");
                                    return c.kw("dilation", py_int_or_pair(a, "dilation")).str();
                                }};
    table["MaxPool2d"] = {
        .onnx = single([](OnnxGraph& g, const OnnxLayer& l) { return pool(g, l, true); }),
        .pytorch_module = py_pool};
    table["AvgPool2d"] = {
        .onnx = single([](OnnxGraph& g, const OnnxLayer& l) { return pool(g, l, false); }),
        .pytorch_module = py_pool};
    table["AdaptiveAvgPool2d"] = {.onnx = single(adaptive_avg_pool),
                                  .pytorch_module = [](const PyLayer& l) {
                                      return PyCall("nn.AdaptiveAvgPool2d", l)
                                          .pos(py_int_or_pair(l.attrs, "output_size"))
                                          .str();
                                  }};
}

} // namespace myelin::exporters::detail
