// Export forms of the attention kinds: MultiheadAttention (self-attention), TransformerEncoderLayer
// and TransformerEncoder. ONNX opset 17 has no attention op: the heads are written out as
// MatMul / Softmax over [N, heads, T, head_dim], with the key padding (from the lengths) and the
// causal mask as an additive -inf mask, and LayerNormalization (opset 17 has it). PyTorch:
// nn.MultiheadAttention and nn.TransformerEncoder(Layer) themselves, batch first, whose
// state_dict names are Myelin's.
#include "forms_parts.h"

#include <myelin/nn/attention.h>

#include <cmath>
#include <limits>

namespace myelin::exporters::detail {

namespace {

// The additive mask [N or 1, 1, T, T] (or [N, 1, 1, T]): -inf where a key is padding (steps at
// or after the length on port 1) or later than the query (causal); empty when there is none.
std::string attention_mask(OnnxGraph& g, const OnnxLayer& l, bool causal) {
    const int64_t steps = l.input_types[0].shape[1];
    std::string mask;
    if (l.inputs.size() > 1) {
        const std::string valid = valid_steps(g, l, l.inputs[1], steps);
        mask = g.op("Where",
                    {valid, g.floats(l.name("zero"), {0.0f}, {}),
                     g.floats(l.name("minus_inf"), {-std::numeric_limits<float>::infinity()}, {})},
                    l.name("key_padding"));
        mask = g.op("Unsqueeze", {mask, g.ints(l.name("mask_axes"), {1, 2})}, l.name("key_mask"));
    }
    if (causal) {
        const std::string later =
            g.initializer(l.name("causal_mask"), nn::functional::causal_mask(steps));
        mask = mask.empty() ? later : g.op("Add", {mask, later}, l.name("mask"));
    }
    return mask;
}

struct AttentionValues {
    std::string output, weights;
};

// Self-attention of x [N, T, E] with the weights under `prefix` ("self_attn.", or "" for the
// MultiheadAttention kind): PyTorch's in_proj split in q, k, v, the scaled scores, the mask,
// softmax, the weighted values and out_proj.
AttentionValues attention(OnnxGraph& g, const OnnxLayer& l, const std::string& x,
                          const std::string& prefix, int64_t heads, const std::string& mask,
                          bool want_weights, bool average, const std::string& out) {
    const int64_t steps = l.input_types[0].shape[1];
    const Tensor& in_w = l.weight(prefix + "in_proj_weight"); // [3E, E]
    const int64_t e = in_w.size(1), head_dim = e / heads;
    const bool bias = l.has_weight(prefix + "in_proj_bias");
    auto projected = [&](int64_t which, const char* part) {
        const std::string name = state_name(l, prefix + "in_proj_weight_" + part);
        return linear_value(g, x, 3, in_w.narrow(0, which * e, e),
                            bias ? l.weight(prefix + "in_proj_bias").narrow(0, which * e, e)
                                 : Tensor(),
                            name, state_name(l, prefix + "in_proj_bias_" + part), out + "_" + part);
    };
    // [N, T, E] -> [N, T, heads, head_dim] -> perm.
    const std::string heads_shape = g.ints(out + "_heads_shape", {0, steps, heads, head_dim});
    auto split_heads = [&](const std::string& v, const char* part, std::vector<int64_t> perm) {
        const std::string t = g.op("Reshape", {v, heads_shape}, out + "_" + part + "_heads");
        return g.op("Transpose", {t}, out + "_" + part + "_by_head", {attr_ints("perm", perm)});
    };
    std::string q = projected(0, "q");
    q = g.op("Mul", {q, g.floats(out + "_scale", {float(1.0 / std::sqrt(double(head_dim)))}, {})},
             out + "_q_scaled");
    const std::string qh = split_heads(q, "q", {0, 2, 1, 3});                 // [N, H, T, d]
    const std::string kh = split_heads(projected(1, "k"), "k", {0, 2, 3, 1}); // [N, H, d, T]
    const std::string vh = split_heads(projected(2, "v"), "v", {0, 2, 1, 3}); // [N, H, T, d]
    std::string scores = g.op("MatMul", {qh, kh}, out + "_scores");
    if (!mask.empty()) scores = g.op("Add", {scores, mask}, out + "_masked_scores");
    const std::string attn =
        g.op("Softmax", {scores}, out + "_weights_by_head", {attr_int("axis", -1)});
    std::string ctx = g.op("MatMul", {attn, vh}, out + "_context_by_head");
    ctx = g.op("Transpose", {ctx}, out + "_context_heads", {attr_ints("perm", {0, 2, 1, 3})});
    ctx = g.op("Reshape", {ctx, g.ints(out + "_context_shape", {0, steps, e})}, out + "_context");
    AttentionValues values;
    values.output = linear_value(
        g, ctx, 3, l.weight(prefix + "out_proj.weight"),
        l.has_weight(prefix + "out_proj.bias") ? l.weight(prefix + "out_proj.bias") : Tensor(),
        state_name(l, prefix + "out_proj.weight"), state_name(l, prefix + "out_proj.bias"), out);
    if (want_weights)
        values.weights = average ? g.op("ReduceMean", {attn}, out + "_weights",
                                        {attr_ints("axes", {1}), attr_int("keepdims", 0)})
                                 : g.op("Identity", {attn}, out + "_weights");
    return values;
}

std::string layer_norm_value(OnnxGraph& g, const OnnxLayer& l, const std::string& x,
                             const std::string& prefix, double eps, const std::string& out) {
    return g.op("LayerNormalization",
                {x, g.initializer(state_name(l, prefix + "weight"), l.weight(prefix + "weight")),
                 g.initializer(state_name(l, prefix + "bias"), l.weight(prefix + "bias"))},
                out, {attr_int("axis", -1), attr_float("epsilon", eps)});
}

// One encoder layer (weights under `prefix`: "layers.0." or ""), post-norm or pre-norm as
// PyTorch's TransformerEncoderLayer.
std::string encoder_layer(OnnxGraph& g, const OnnxLayer& l, std::string x,
                          const std::string& prefix, const std::string& mask,
                          const std::string& out) {
    const graph::Attrs& a = l.attrs;
    const double eps = a.get_float("layer_norm_eps");
    const bool gelu = a.get_string("activation") == "gelu";
    auto norm = [&](const std::string& v, const char* which) {
        return layer_norm_value(g, l, v, prefix + which + ".", eps, out + "_" + which);
    };
    auto self_attention = [&](const std::string& v) {
        return attention(g, l, v, prefix + "self_attn.", a.get_int("nhead"), mask, false, false,
                         out + "_attention")
            .output;
    };
    auto feed_forward = [&](const std::string& v) {
        auto linear = [&](const std::string& in, const char* which) {
            const std::string p = prefix + which + ".";
            return linear_value(g, in, 3, l.weight(p + "weight"), l.weight(p + "bias"),
                                state_name(l, p + "weight"), state_name(l, p + "bias"),
                                out + "_" + which);
        };
        std::string h = linear(v, "linear1");
        h = gelu ? gelu_value(g, h, false, out + "_gelu") : g.op("Relu", {h}, out + "_relu");
        return linear(h, "linear2");
    };
    if (a.get_bool("norm_first")) {
        x = g.op("Add", {x, self_attention(norm(x, "norm1"))}, out + "_attention_residual");
        return g.op("Add", {x, feed_forward(norm(x, "norm2"))}, out);
    }
    x = norm(g.op("Add", {x, self_attention(x)}, out + "_attention_residual"), "norm1");
    const std::string sum = g.op("Add", {x, feed_forward(x)}, out + "_feed_forward_residual");
    return layer_norm_value(g, l, sum, prefix + "norm2.", eps, out);
}

// --- PyTorch ------------------------------------------------------------------------------------

const PyDefinition kPaddingMask{"padding_mask", R"(def padding_mask(lengths, steps):
    """True at each sequence's steps at or after its length: PyTorch's key_padding_mask."""
    return torch.arange(steps, device=lengths.device).unsqueeze(0) >= lengths.unsqueeze(1)
)"};

const PyDefinition kCausalMask{"causal_mask", R"(def causal_mask(steps):
    """True above the diagonal: step i attends to steps <= i only."""
    return torch.ones(steps, steps, dtype=torch.bool).triu(1)
)"};

std::string encoder_layer_call(const PyLayer& l) {
    const graph::Attrs& a = l.attrs;
    return PyCall("nn.TransformerEncoderLayer", l)
        .pos(py_int(a, "d_model"))
        .pos(py_int(a, "nhead"))
        .always("dim_feedforward", py_int(a, "dim_feedforward"))
        .always("dropout", py_float(a.get_float("dropout")))
        .kw("activation", py_string(a.get_string("activation")))
        .kw("layer_norm_eps", py_float(a.get_float("layer_norm_eps")))
        .always("batch_first", "True")
        .flag("norm_first")
        .str();
}

// The keyword arguments for the masks: `padding` (the key padding mask's keyword) from the
// lengths input, `causal_keyword` from the causal attribute.
std::string mask_arguments(const PyLayer& l, const std::vector<std::string>& in,
                           const char* padding, const char* causal_keyword) {
    std::string args;
    const std::string steps = in[0] + ".size(1)";
    if (l.attrs.contains("causal") && l.attrs.get_bool("causal"))
        args += std::string(", ") + causal_keyword + "=causal_mask(" + steps + ")";
    if (in.size() > 1)
        args += std::string(", ") + padding + "=padding_mask(" + in[1] + ", " + steps + ")";
    return args;
}

} // namespace

void add_attention_forms(FormsTable& table) {
    LayerForms mha;
    mha.onnx = [](OnnxGraph& g, const OnnxLayer& l) {
        const graph::Attrs& a = l.attrs;
        const bool weights = a.get_bool("need_weights");
        const AttentionValues v =
            attention(g, l, l.inputs[0], "", a.get_int("num_heads"),
                      attention_mask(g, l, a.get_bool("causal")), weights && l.wants(1),
                      a.get_bool("average_attn_weights"), l.module_name);
        if (!weights) return std::vector<std::string>{v.output};
        return std::vector<std::string>{v.output, v.weights};
    };
    mha.pytorch_module = [](const PyLayer& l) {
        return PyCall("nn.MultiheadAttention", l)
            .pos(py_int(l.attrs, "embed_dim"))
            .pos(py_int(l.attrs, "num_heads"))
            .real("dropout")
            .flag("bias")
            .always("batch_first", "True")
            .str();
    };
    mha.pytorch_forward = [](const PyLayer& l, const std::string& module,
                             const std::vector<std::string>& in) {
        const std::string& x = in[0];
        std::string call = module + "(" + x + ", " + x + ", " + x +
                           mask_arguments(l, in, "key_padding_mask", "attn_mask");
        if (!l.attrs.get_bool("need_weights")) return call + ", need_weights=False)[0]";
        return call + ", need_weights=True, average_attn_weights=" +
               py_bool(l.attrs.get_bool("average_attn_weights")) + ")";
    };
    mha.pytorch_definitions = {kPaddingMask, kCausalMask};
    table["MultiheadAttention"] = std::move(mha);

    LayerForms layer;
    layer.onnx = single([](OnnxGraph& g, const OnnxLayer& l) {
        return encoder_layer(g, l, l.inputs[0], "", attention_mask(g, l, false), l.module_name);
    });
    layer.pytorch_module = encoder_layer_call;
    layer.pytorch_forward = [](const PyLayer& l, const std::string& module,
                               const std::vector<std::string>& in) {
        return module + "(" + in[0] + mask_arguments(l, in, "src_key_padding_mask", "src_mask") +
               ")";
    };
    layer.pytorch_definitions = {kPaddingMask};
    layer.opencv_note = no_layer_normalization;
    table["TransformerEncoderLayer"] = std::move(layer);

    LayerForms encoder;
    encoder.onnx = single([](OnnxGraph& g, const OnnxLayer& l) {
        const std::string mask = attention_mask(g, l, l.attrs.get_bool("causal"));
        std::string x = l.inputs[0];
        const int64_t layers = l.attrs.get_int("num_layers");
        const bool norm = l.attrs.get_bool("norm");
        for (int64_t i = 0; i < layers; ++i)
            x = encoder_layer(g, l, x, "layers." + std::to_string(i) + ".", mask,
                              i + 1 == layers && !norm ? l.module_name
                                                       : l.name("layer" + std::to_string(i)));
        if (!norm) return x;
        return layer_norm_value(g, l, x, "norm.", l.attrs.get_float("layer_norm_eps"),
                                l.module_name);
    });
    encoder.pytorch_module = [](const PyLayer& l) {
        const graph::Attrs& a = l.attrs;
        // nested tensors (PyTorch's fast path for padded batches) would zero the padded steps'
        // outputs, which Myelin computes.
        PyCall c("nn.TransformerEncoder", l);
        c.pos(encoder_layer_call(l)).pos(py_int(a, "num_layers"));
        if (a.get_bool("norm"))
            c.always("norm", "nn.LayerNorm(" + py_int(a, "d_model") +
                                 ", eps=" + py_float(a.get_float("layer_norm_eps")) + ")");
        return c.always("enable_nested_tensor", "False").str();
    };
    encoder.pytorch_forward = [](const PyLayer& l, const std::string& module,
                                 const std::vector<std::string>& in) {
        return module + "(" + in[0] + mask_arguments(l, in, "src_key_padding_mask", "mask") + ")";
    };
    encoder.pytorch_definitions = {kPaddingMask, kCausalMask};
    encoder.opencv_note = no_layer_normalization;
    table["TransformerEncoder"] = std::move(encoder);
}

} // namespace myelin::exporters::detail
