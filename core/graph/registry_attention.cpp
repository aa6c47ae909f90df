// Layer kinds for attention (listed in the Embedding category, after the sequence kinds):
// MultiheadAttention (self-attention) and a whole TransformerEncoder stack. Both are batch first,
// [N, T, E] -> [N, T, E], with PyTorch's parameter names so a checkpoint loads into
// nn.MultiheadAttention / nn.TransformerEncoder by name. Like the sequence kinds, each has a
// "num_inputs" attribute (1 or 2): with 2, port 1 ("lengths") takes int64 [N] and keys at steps
// >= a sequence's length are not attended (PyTorch's key_padding_mask); "causal" adds PyTorch's
// square subsequent mask (step i attends to steps <= i). MultiheadAttention with "need_weights"
// has a second output port, "weights": the attention weights, averaged over the heads [N, T, T]
// (PyTorch's average_attn_weights) or per head [N, num_heads, T, T].
#include "graph/registry_parts.h"

#include <myelin/error.h>
#include <myelin/graph/registry.h>
#include <myelin/nn/attention.h>
#include <myelin/tensor.h>

#include <string>

namespace myelin::graph::detail {

namespace {

namespace F = nn::functional;

// The masks of a graph node's inputs {x} or {x, lengths}: lengths become the key padding
// mask, and a causal layer adds the subsequent mask for the sequence's length.
F::AttentionMasks node_masks(const TensorList& inputs, bool causal) {
    if (inputs.empty() || inputs.size() > 2)
        throw Error("expected {sequence} or {sequence, lengths}, got " +
                    std::to_string(inputs.size()) + " inputs");
    F::AttentionMasks masks;
    if (inputs.size() == 2) masks.key_padding_mask = inputs[1];
    if (causal) masks.attn_mask = F::causal_mask(inputs[0].size(1), inputs[0].dtype());
    return masks;
}

// What the weights port gives: nothing (need_weights off), or the weights averaged over the
// heads or per head.
enum class WeightsPort { None, Averaged, PerHead };

// nn::MultiheadAttention as self-attention over one batch-first sequence (and its lengths).
// With a weights port, outputs() runs the path that keeps the weights (PyTorch's
// need_weights=True); forward() alone stays on the fused path.
class EditorSelfAttention : public nn::MultiheadAttention {
  public:
    EditorSelfAttention(int64_t embed_dim, int64_t num_heads,
                        const nn::MultiheadAttentionOptions& options, bool causal,
                        WeightsPort weights)
        : MultiheadAttention(embed_dim, num_heads, options), causal_(causal), weights_(weights) {}
    using MultiheadAttention::forward;
    Tensor forward(const TensorList& inputs) override {
        const Tensor& x = inputs.at(0);
        return MultiheadAttention::forward(x, x, x, node_masks(inputs, causal_));
    }
    int num_outputs() const override { return weights_ == WeightsPort::None ? 1 : 2; }
    TensorList forward_outputs(const TensorList& inputs) override {
        if (weights_ == WeightsPort::None) return {forward(inputs)};
        const Tensor& x = inputs.at(0);
        F::AttentionResult r = forward_with_weights(x, x, x, node_masks(inputs, causal_),
                                                    weights_ == WeightsPort::Averaged);
        return {std::move(r.output), std::move(r.weights)};
    }

  private:
    bool causal_;
    WeightsPort weights_;
};

WeightsPort weights_port(const Attrs& a) {
    if (!a.get_bool("need_weights")) return WeightsPort::None;
    return a.get_bool("average_attn_weights") ? WeightsPort::Averaged : WeightsPort::PerHead;
}

// nn::TransformerEncoder with the causal option (PyTorch's mask argument).
class EditorTransformerEncoder : public nn::TransformerEncoder {
  public:
    EditorTransformerEncoder(const nn::TransformerEncoderLayer& layer, int64_t num_layers,
                             std::shared_ptr<nn::LayerNorm> norm, bool causal)
        : TransformerEncoder(layer, num_layers, std::move(norm)), causal_(causal) {}
    using TransformerEncoder::forward;
    Tensor forward(const TensorList& inputs) override {
        return TransformerEncoder::forward(inputs.at(0), node_masks(inputs, causal_));
    }

  private:
    bool causal_;
};

AttrDesc causal_attr() {
    return attr::flag("causal", false,
                      "Each step attends only to itself and earlier steps (PyTorch's "
                      "generate_square_subsequent_mask).");
}

// Port 0: float [N, T, width] with width == the attribute `width_attr`; port 1, when present,
// int64 lengths [N]. Throws with what to change.
void require_sequence_of_width(Inputs in, const char* width_attr, int64_t width) {
    const std::string layout = std::string("[N, T, ") + width_attr + "]";
    require_sequence(in, layout.c_str());
    require_last_dim(in[0], width, width_attr);
}

void require_heads_divide(int64_t width, int64_t heads, const char* width_attr,
                          const char* heads_attr) {
    if (width % heads != 0)
        fail(std::string(heads_attr) + " " + std::to_string(heads) + " does not divide " +
             width_attr + " " + std::to_string(width) + " (each head gets " + width_attr + " / " +
             heads_attr + " features)");
}

LayerKind attention_kind(std::string name, std::string doc) {
    LayerKind k = kind(std::move(name), Category::Embedding, std::move(doc));
    k.inputs = {"input", "lengths"};
    k.variadic = true;
    return k;
}

// --- parameter and FLOP counts, shared by both kinds ---------------------------------------------

// in_proj_weight [3E, E], out_proj.weight [E, E], and with bias in_proj_bias [3E], out_proj.bias
// [E].
int64_t attention_params(int64_t e, bool bias) {
    return 4 * e * e + (bias ? 4 * e : 0);
}

// One self-attention over [N, T, E] (a multiply-add counts 2, as Linear's count): the q, k, v
// projections (3 E^2 per step), the scores Q K^T and the weighted sum of V (T E each per step;
// all T keys, as the batched GEMMs compute them under a mask too), softmax (5 per score: max,
// subtract, exp, sum, divide; N H T^2 scores) and the output projection (E^2 per step).
double attention_flops(double n, double t, double e, double heads) {
    return 2.0 * n * t * (3 * e * e) + 2.0 * n * t * (2 * t * e) + 5.0 * n * heads * t * t +
           2.0 * n * t * (e * e);
}

} // namespace

// One encoder layer: attention, linear1 and linear2 (2 E F per step each), the activation on
// [N, T, F] (ReLU 1, GELU 8 per element, as the activation kinds count), two residual additions
// and two LayerNorms (5 per element, as the LayerNorm kind counts).
double encoder_layer_flops(double n, double t, double e, double heads, double f, bool gelu) {
    const double steps = n * t;
    return attention_flops(n, t, e, heads) + 2.0 * steps * (2 * e * f) +
           (gelu ? 8.0 : 1.0) * steps * f + 2.0 * steps * e + 2.0 * 5.0 * steps * e;
}

// Per layer: the attention, linear1 [F, E] + [F], linear2 [E, F] + [E], norm1 and norm2 [E] + [E].
int64_t encoder_layer_params(int64_t e, int64_t f) {
    return attention_params(e, true) + f * e + f + e * f + e + 4 * e;
}

// nn::TransformerEncoderLayer's options from a kind's attributes (batch first).
nn::TransformerEncoderLayerOptions encoder_layer_options(const Attrs& a) {
    nn::TransformerEncoderLayerOptions options;
    options.dim_feedforward = a.get_int("dim_feedforward");
    options.dropout = a.get_float("dropout");
    options.activation = a.get_string("activation");
    options.layer_norm_eps = a.get_float("layer_norm_eps");
    options.batch_first = true;
    options.norm_first = a.get_bool("norm_first");
    return options;
}

void add_attention_kinds(std::vector<LayerKind>& kinds) {
    {
        LayerKind k = attention_kind(
            "MultiheadAttention",
            "Self-attention over [N, T, embed_dim]: queries, keys and values are the input "
            "(PyTorch's nn.MultiheadAttention, batch first). With lengths, padded steps are not "
            "attended; causal: no step attends to a later one. need_weights adds the output "
            "port weights: the attention weights, averaged over the heads unless asked per "
            "head.");
        k.attrs = {attr::integer("embed_dim", 32,
                                 "Features per step; must equal the input's last dimension.", 1),
                   attr::integer("num_heads", 4, "Attention heads; must divide embed_dim.", 1),
                   attr::number("dropout", 0.0, "Dropout on the attention weights (training only).",
                                0.0, 1.0),
                   attr::flag("bias", true, "Learn in_proj_bias and out_proj.bias."),
                   causal_attr(),
                   lengths_port_attr("keys after it are not attended."),
                   attr::flag("need_weights", false,
                              "A second output port, weights: how much each step attends to "
                              "each step (PyTorch's need_weights; a slower, unfused path)."),
                   attr::flag("average_attn_weights", true,
                              "weights averaged over the heads [N, T, T]; off: per head "
                              "[N, num_heads, T, T].")};
        k.summary_attrs = {"embed_dim", "num_heads"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_sequence_of_width(in, "embed_dim", a.get_int("embed_dim"));
            require_heads_divide(a.get_int("embed_dim"), a.get_int("num_heads"), "embed_dim",
                                 "num_heads");
            return in[0];
        };
        k.output_names = [](const Attrs& a) {
            return a.get_bool("need_weights") ? std::vector<std::string>{"output", "weights"}
                                              : std::vector<std::string>{"output"};
        };
        k.infer_outputs = [infer = k.infer](const Attrs& a, Inputs in) {
            std::vector<TensorType> types{infer(a, in)};
            if (!a.get_bool("need_weights")) return types;
            const int64_t n = in[0].shape[0], t = in[0].shape[1];
            types.push_back({a.get_bool("average_attn_weights")
                                 ? Dims{n, t, t}
                                 : Dims{n, a.get_int("num_heads"), t, t},
                             in[0].dtype});
            return types;
        };
        k.param_count = [](const Attrs& a) {
            return attention_params(a.get_int("embed_dim"), a.get_bool("bias"));
        };
        k.flops = [](const Attrs& a, Inputs in, const TensorType&) {
            return attention_flops(double(in[0].shape[0]), double(in[0].shape[1]),
                                   double(a.get_int("embed_dim")), double(a.get_int("num_heads")));
        };
        k.build = [](const Attrs& a) {
            nn::MultiheadAttentionOptions options;
            options.dropout = a.get_float("dropout");
            options.bias = a.get_bool("bias");
            options.batch_first = true;
            return std::make_shared<EditorSelfAttention>(a.get_int("embed_dim"),
                                                         a.get_int("num_heads"), options,
                                                         a.get_bool("causal"), weights_port(a));
        };
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k = attention_kind(
            "TransformerEncoder",
            "num_layers TransformerEncoderLayers (self-attention then a feed-forward block, "
            "each with a skip connection and LayerNorm), then an optional final LayerNorm "
            "(PyTorch's nn.TransformerEncoder, batch first: layers.0.self_attn..., norm). With "
            "lengths, padded steps are not attended; causal: no step attends to a later one.");
        k.attrs = {
            attr::integer("num_layers", 2, "Stacked encoder layers.", 1, 64),
            attr::integer("d_model", 64,
                          "Features per step; must equal the input's last "
                          "dimension.",
                          1),
            attr::integer("nhead", 4, "Attention heads; must divide d_model.", 1),
            attr::integer("dim_feedforward", 256, "Width of each feed-forward block.", 1),
            attr::number("dropout", 0.1, "Dropout probability (training only).", 0.0, 1.0),
            attr::choice("activation", "relu", {"relu", "gelu"}, "Feed-forward activation."),
            attr::flag("norm_first", false, "LayerNorm before each block (pre-norm)."),
            attr::exclusive(attr::number("layer_norm_eps", 1e-5, "LayerNorm's epsilon.", 0.0)),
            attr::flag("norm", false,
                       "A final LayerNorm after the last layer (PyTorch's norm argument; usual "
                       "with norm_first)."),
            causal_attr(),
            lengths_port_attr("keys after it are not attended.")};
        k.summary_attrs = {"num_layers", "d_model", "nhead"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_sequence_of_width(in, "d_model", a.get_int("d_model"));
            require_heads_divide(a.get_int("d_model"), a.get_int("nhead"), "d_model", "nhead");
            return in[0];
        };
        k.param_count = [](const Attrs& a) {
            const int64_t e = a.get_int("d_model");
            return a.get_int("num_layers") * encoder_layer_params(e, a.get_int("dim_feedforward")) +
                   (a.get_bool("norm") ? 2 * e : 0);
        };
        k.flops = [](const Attrs& a, Inputs in, const TensorType&) {
            const double n = double(in[0].shape[0]), t = double(in[0].shape[1]);
            const double e = double(a.get_int("d_model"));
            const double layer = encoder_layer_flops(n, t, e, double(a.get_int("nhead")),
                                                     double(a.get_int("dim_feedforward")),
                                                     a.get_string("activation") == "gelu");
            return double(a.get_int("num_layers")) * layer +
                   (a.get_bool("norm") ? 5.0 * n * t * e : 0.0);
        };
        k.build = [](const Attrs& a) {
            const nn::TransformerEncoderLayerOptions options = encoder_layer_options(a);
            const int64_t d_model = a.get_int("d_model");
            const nn::TransformerEncoderLayer layer(d_model, a.get_int("nhead"), options);
            std::shared_ptr<nn::LayerNorm> norm;
            if (a.get_bool("norm"))
                norm = std::make_shared<nn::LayerNorm>(Dims{d_model}, options.layer_norm_eps);
            return std::make_shared<EditorTransformerEncoder>(
                layer, a.get_int("num_layers"), std::move(norm), a.get_bool("causal"));
        };
        kinds.push_back(std::move(k));
    }
}

} // namespace myelin::graph::detail
