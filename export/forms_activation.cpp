// Export forms of the normalisation and activation kinds: BatchNorm1d/2d, LayerNorm, GroupNorm,
// ReLU, LeakyReLU, PReLU, ELU, GELU, SiLU, Sigmoid, Tanh, Softmax, LogSoftmax, Softplus,
// Hardswish. ONNX opset 17 has no GELU or GroupNormalization: those are written out in the ops
// it has.
#include "forms_parts.h"

#include <cmath>

namespace myelin::exporters::detail {

namespace {

// Per-channel scale and shift: the module's, or ones and zeros when it has none.
std::pair<std::string, std::string> affine(OnnxGraph& b, const OnnxLayer& l,
                                           const std::vector<int64_t>& shape) {
    if (l.has_weight("weight"))
        return {b.initializer(state_name(l, "weight"), l.weight("weight").reshape(Dims(shape))),
                b.initializer(state_name(l, "bias"), l.weight("bias").reshape(Dims(shape)))};
    return {b.floats(l.name("ones"), {1.0f}, shape), b.floats(l.name("zeros"), {0.0f}, shape)};
}

// With running statistics, BatchNormalization (the evaluation form). Without them PyTorch
// normalises with the batch's own statistics even in evaluation: mean and (biased) variance
// over every dimension but the channels.
std::string batch_norm(OnnxGraph& b, const OnnxLayer& l) {
    const int64_t c = l.attrs.get_int("num_features");
    const double eps = l.attrs.get_float("eps");
    if (l.has_weight("running_mean")) {
        auto [scale, shift] = affine(b, l, {c});
        return b.op("BatchNormalization",
                    {l.inputs[0], scale, shift,
                     b.initializer(state_name(l, "running_mean"), l.weight("running_mean")),
                     b.initializer(state_name(l, "running_var"), l.weight("running_var"))},
                    l.module_name, {attr_float("epsilon", eps)});
    }
    const int rank = l.input_types[0].shape.size();
    std::vector<int64_t> axes{0}, shape{c};
    for (int d = 2; d < rank; ++d) {
        axes.push_back(d);
        shape.push_back(1);
    }
    const std::string x = l.inputs[0];
    const std::string mean = b.op("ReduceMean", {x}, l.name("mean"), {attr_ints("axes", axes)});
    const std::string centred = b.op("Sub", {x, mean}, l.name("centred"));
    const std::string squares = b.op("Mul", {centred, centred}, l.name("squares"));
    std::string t = b.op("ReduceMean", {squares}, l.name("var"), {attr_ints("axes", axes)});
    t = b.op("Add", {t, b.floats(l.name("eps"), {float(eps)}, {})}, l.name("var_eps"));
    t = b.op("Sqrt", {t}, l.name("std"));
    t = b.op("Div", {centred, t}, l.name("normalized"));
    if (!l.has_weight("weight")) return t;
    auto [scale, shift] = affine(b, l, shape);
    t = b.op("Mul", {t, scale}, l.name("scaled"));
    return b.op("Add", {t, shift}, l.module_name);
}

std::string layer_norm(OnnxGraph& b, const OnnxLayer& l) {
    const auto& ns = l.attrs.get_ints("normalized_shape");
    auto [scale, shift] = affine(b, l, ns);
    return b.op(
        "LayerNormalization", {l.inputs[0], scale, shift}, l.module_name,
        {attr_int("axis", -int64_t(ns.size())), attr_float("epsilon", l.attrs.get_float("eps"))});
}

// GroupNormalization is opset 18: groups as InstanceNormalization over [N, G, rest], then the
// per-channel scale and shift.
std::string group_norm(OnnxGraph& b, const OnnxLayer& l) {
    const int64_t g = l.attrs.get_int("num_groups"), c = l.attrs.get_int("num_channels");
    std::string t = b.op("Reshape", {l.inputs[0], b.ints(l.name("grouped_shape"), {0, g, -1})},
                         l.name("grouped"));
    t = b.op("InstanceNormalization",
             {t, b.floats(l.name("group_ones"), {1.0f}, {g}),
              b.floats(l.name("group_zeros"), {0.0f}, {g})},
             l.name("normalized"), {attr_float("epsilon", l.attrs.get_float("eps"))});
    t = b.op("Reshape", {t, b.ints(l.name("shape"), reshape_target(l.output()))},
             l.name("ungrouped"));
    if (!l.has_weight("weight")) return t;
    std::vector<int64_t> shape{c};
    for (int i = 2; i < l.output().shape.size(); ++i)
        shape.push_back(1);
    auto [scale, shift] = affine(b, l, shape);
    t = b.op("Mul", {t, scale}, l.name("scaled"));
    return b.op("Add", {t, shift}, l.module_name);
}

std::string prelu(OnnxGraph& b, const OnnxLayer& l) {
    const Tensor& w = l.weight("weight");
    std::vector<int64_t> shape{w.numel()};
    // The slope broadcasts from the right: one per channel needs [C, 1, ...] for [N, C, ...].
    for (int i = 2; w.numel() > 1 && i < l.input_types[0].shape.size(); ++i)
        shape.push_back(1);
    return b.op("PRelu",
                {l.inputs[0], b.initializer(state_name(l, "weight"), w.reshape(Dims(shape)))},
                l.module_name);
}

} // namespace

// GELU arrives in opset 20: 0.5 x (1 + erf(x / sqrt 2)), or the tanh approximation. Shared with
// the Transformer's feed-forward block.
std::string gelu_value(OnnxGraph& b, const std::string& x, bool tanh, const std::string& out) {
    std::string inner;
    if (tanh) {
        std::string cube = b.op("Mul", {x, x}, out + "_x2");
        cube = b.op("Mul", {cube, x}, out + "_x3");
        cube = b.op("Mul", {cube, b.floats(out + "_c", {0.044715f}, {})}, out + "_cx3");
        std::string sum = b.op("Add", {x, cube}, out + "_sum");
        sum = b.op("Mul",
                   {sum, b.floats(out + "_sqrt_2_over_pi", {float(std::sqrt(2.0 / M_PI))}, {})},
                   out + "_scaled");
        inner = b.op("Tanh", {sum}, out + "_tanh");
    } else {
        std::string scaled = b.op("Div", {x, b.floats(out + "_sqrt2", {float(std::sqrt(2.0))}, {})},
                                  out + "_scaled");
        inner = b.op("Erf", {scaled}, out + "_erf");
    }
    std::string t = b.op("Add", {inner, b.floats(out + "_one", {1.0f}, {})}, out + "_plus1");
    t = b.op("Mul", {x, t}, out + "_times_x");
    return b.op("Mul", {t, b.floats(out + "_half", {0.5f}, {})}, out);
}

namespace {

// Softplus(beta x) / beta; above the threshold PyTorch returns x, which log(1 + e^(beta x)) /
// beta equals in float32 there (the difference is below e^-20).
std::string softplus(OnnxGraph& b, const OnnxLayer& l) {
    const double beta = l.attrs.get_float("beta");
    if (beta == 1.0) return b.op("Softplus", {l.inputs[0]}, l.module_name);
    const std::string beta_value = b.floats(l.name("beta"), {float(beta)}, {});
    std::string t = b.op("Mul", {l.inputs[0], beta_value}, l.name("scaled"));
    t = b.op("Softplus", {t}, l.name("softplus"));
    return b.op("Div", {t, beta_value}, l.module_name);
}

std::string py_batch_norm(const PyLayer& l) {
    const graph::Attrs& a = l.attrs;
    PyCall c("nn." + l.kind.name, l);
    c.pos(py_int(a, "num_features"));
    c.real("eps");
    c.kw("momentum", a.is_none("momentum") ? "None" : py_float(a.get_float("momentum")));
    c.flag("affine");
    return c.flag("track_running_stats").str();
}

LayerForms plain(const char* onnx_op) {
    return {.onnx = simple_op(onnx_op), .pytorch_module = py_plain()};
}

LayerForms softmax_like(const char* onnx_op) {
    return {.onnx = simple_op(onnx_op,
                              [](const OnnxLayer& l) {
                                  return std::vector<OnnxAttr>{
                                      attr_int("axis", l.attrs.get_int("dim"))};
                              }),
            .pytorch_module = [](const PyLayer& l) {
                return PyCall("nn." + l.kind.name, l).always("dim", py_int(l.attrs, "dim")).str();
            }};
}

} // namespace

std::string no_layer_normalization(const graph::Attrs&) {
    return "OpenCV 4.6's DNN module has no LayerNormalization";
}

void add_norm_activation_forms(FormsTable& table) {
    // Found by running every kind through OpenCV 4.6 (tests/export/test_export_onnx.cpp).
    auto batch_statistics_note = [](const graph::Attrs& a) -> std::string {
        if (a.get_bool("track_running_stats")) return {};
        return "without running statistics it normalises with the batch's statistics, which "
               "OpenCV 4.6's DNN module computes per example (right for a batch of 1 only)";
    };
    for (const char* kind : {"BatchNorm1d", "BatchNorm2d"})
        table[kind] = {.onnx = single(batch_norm),
                       .pytorch_module = py_batch_norm,
                       .opencv_note = batch_statistics_note};
    table["LayerNorm"] = {.onnx = single(layer_norm),
                          .pytorch_module =
                              [](const PyLayer& l) {
                                  return PyCall("nn.LayerNorm", l)
                                      .pos(py_tuple(l.attrs.get_ints("normalized_shape")))
                                      .real("eps")
                                      .flag("elementwise_affine")
                                      .str();
                              },
                          .opencv_note = no_layer_normalization};
    table["GroupNorm"] = {.onnx = single(group_norm), .pytorch_module = [](const PyLayer& l) {
                              return PyCall("nn.GroupNorm", l)
                                  .pos(py_int(l.attrs, "num_groups"))
                                  .pos(py_int(l.attrs, "num_channels"))
                                  .real("eps")
                                  .flag("affine")
                                  .str();
                          }};
    table["ReLU"] = plain("Relu");
    // Clip with constant bounds (opset 11 on: inputs, not attributes).
    table["ReLU6"] = {.onnx = single([](OnnxGraph& g, const OnnxLayer& l) {
                          return g.op("Clip",
                                      {l.inputs[0], g.floats(l.name("min"), {0.0f}, {}),
                                       g.floats(l.name("max"), {6.0f}, {})},
                                      l.module_name);
                      }),
                      .pytorch_module = py_plain(),
                      .opencv_note = [](const graph::Attrs&) {
                          return std::string("OpenCV 4.6's DNN module reads Clip only with its "
                                             "bounds as attributes (opset 10), not as the inputs "
                                             "of opset 11 on");
                      }};
    table["Sigmoid"] = plain("Sigmoid");
    table["Tanh"] = plain("Tanh");
    table["Hardswish"] = plain("HardSwish");
    table["LeakyReLU"] = {.onnx = simple_op("LeakyRelu",
                                            [](const OnnxLayer& l) {
                                                return std::vector<OnnxAttr>{attr_float(
                                                    "alpha", l.attrs.get_float("negative_slope"))};
                                            }),
                          .pytorch_module = [](const PyLayer& l) {
                              return PyCall("nn.LeakyReLU", l).real("negative_slope").str();
                          }};
    table["PReLU"] = {.onnx = single(prelu), .pytorch_module = [](const PyLayer& l) {
                          return PyCall("nn.PReLU", l)
                              .kw("num_parameters", py_int(l.attrs, "num_parameters"))
                              .real("init")
                              .str();
                      }};
    table["ELU"] = {
        .onnx = simple_op("Elu",
                          [](const OnnxLayer& l) {
                              return std::vector<OnnxAttr>{
                                  attr_float("alpha", l.attrs.get_float("alpha"))};
                          }),
        .pytorch_module = [](const PyLayer& l) { return PyCall("nn.ELU", l).real("alpha").str(); }};
    table["GELU"] = {.onnx = single([](OnnxGraph& g, const OnnxLayer& l) {
                         return gelu_value(g, l.inputs[0],
                                           l.attrs.get_string("approximate") == "tanh",
                                           l.module_name);
                     }),
                     .pytorch_module = [](const PyLayer& l) {
                         return PyCall("nn.GELU", l)
                             .kw("approximate", py_string(l.attrs.get_string("approximate")))
                             .str();
                     }};
    table["SiLU"] = {.onnx = single([](OnnxGraph& g, const OnnxLayer& l) {
                         std::string s = g.op("Sigmoid", l.inputs, l.name("sigmoid"));
                         return g.op("Mul", {l.inputs[0], s}, l.module_name);
                     }),
                     .pytorch_module = py_plain()};
    table["Softmax"] = softmax_like("Softmax");
    table["LogSoftmax"] = softmax_like("LogSoftmax");
    table["Softplus"] = {.onnx = single(softplus), .pytorch_module = [](const PyLayer& l) {
                             return PyCall("nn.Softplus", l)
                                 .real("beta")
                                 .kw("threshold", py_float(l.attrs.get_float("threshold")))
                                 .str();
                         }};
}

} // namespace myelin::exporters::detail
