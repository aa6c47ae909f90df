// Attention and sequence layers (nn/attention.h): MultiheadAttention, TransformerEncoderLayer,
// TransformerEncoder, the positional encodings and the sequence reductions. The math is in
// functional_attention.cpp; a layer validates, holds PyTorch's parameters and calls it.
#include "nn/layers_common.h"

#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/nn/attention.h>
#include <myelin/nn/functional.h>
#include <myelin/nn/init.h>

#include <string>

namespace myelin::nn {

namespace F = functional;
using namespace detail;

namespace {

// Re-throws an error of the functional op with the layer's description in front, keeping its type.
template <typename Fn> auto named(const std::string& who, Fn&& fn) {
    try {
        return fn();
    } catch (const ShapeError& e) {
        throw ShapeError(who + ": " + e.what());
    } catch (const DTypeError& e) {
        throw DTypeError(who + ": " + e.what());
    } catch (const IndexError& e) {
        throw IndexError(who + ": " + e.what());
    }
}

// The second input of a self-attention layer: a key padding mask or lengths (undefined: none).
F::AttentionMasks key_padding(const TensorList& inputs, size_t index) {
    F::AttentionMasks m;
    if (inputs.size() > index) m.key_padding_mask = inputs[index];
    return m;
}

} // namespace

// --- MultiheadAttention ------------------------------------------------------------------------

MultiheadAttention::MultiheadAttention(int64_t e, int64_t h, MultiheadAttentionOptions o)
    : Module("MultiheadAttention"), embed_dim(e), num_heads(h), head_dim(h > 0 ? e / h : 0),
      options(o) {
    require_positive(*this, e, "embed_dim");
    require_positive(*this, h, "num_heads");
    if (e % h != 0)
        throw Error("MultiheadAttention: embed_dim " + std::to_string(e) +
                    " must be divisible by num_heads " + std::to_string(h));
    if (o.dropout < 0.0 || o.dropout > 1.0)
        throw Error("MultiheadAttention: dropout must be in [0, 1], got " + py_float(o.dropout));
    // PyTorch's registration order: in_proj_weight, in_proj_bias, then the out_proj child.
    in_proj_weight = register_parameter("in_proj_weight", empty({3 * e, e}));
    if (o.bias) in_proj_bias = register_parameter("in_proj_bias", empty({3 * e}));
    out_proj = register_module("out_proj", std::make_shared<Linear>(e, e, o.bias));
    reset_parameters();
}

void MultiheadAttention::reset_parameters() {
    init::xavier_uniform_(in_proj_weight);
    if (in_proj_bias.defined()) init::constant_(in_proj_bias, 0.0);
    if (out_proj->bias.defined()) init::constant_(out_proj->bias, 0.0);
}

F::MultiheadAttentionParams MultiheadAttention::params() const {
    F::MultiheadAttentionParams p;
    p.num_heads = num_heads;
    p.in_proj_weight = in_proj_weight;
    p.in_proj_bias = in_proj_bias;
    p.out_proj_weight = out_proj->weight;
    p.out_proj_bias = out_proj->bias;
    p.dropout = options.dropout;
    p.training = is_training();
    p.batch_first = options.batch_first;
    return p;
}

std::string MultiheadAttention::describe() const {
    return "MultiheadAttention(embed_dim=" + std::to_string(embed_dim) +
           ", num_heads=" + std::to_string(num_heads) +
           ", batch_first=" + py_bool(options.batch_first) + ")";
}

Tensor MultiheadAttention::forward(const TensorList& in) {
    switch (in.size()) {
    case 1:
        return forward(in[0], in[0], in[0]);
    case 2:
        return forward(in[0], in[0], in[0], key_padding(in, 1));
    case 3:
        return forward(in[0], in[1], in[2]);
    case 4:
        return forward(in[0], in[1], in[2], key_padding(in, 3));
    case 5:
        return forward(in[0], in[1], in[2], {in[3], in[4]});
    default:
        throw Error(describe() +
                    ": expected 1 to 5 inputs ({x}, {x, key_padding}, {query, key, "
                    "value}, + key_padding, + attn_mask), got " +
                    std::to_string(in.size()));
    }
}

Tensor MultiheadAttention::forward(const Tensor& q, const Tensor& k, const Tensor& v,
                                   const F::AttentionMasks& masks) {
    return named(describe(), [&] { return F::multi_head_attention(q, k, v, params(), masks); });
}

F::AttentionResult MultiheadAttention::forward_with_weights(const Tensor& q, const Tensor& k,
                                                            const Tensor& v,
                                                            const F::AttentionMasks& masks,
                                                            bool average_attn_weights) {
    return named(describe(), [&] {
        return F::multi_head_attention_with_weights(q, k, v, params(), masks, average_attn_weights);
    });
}

// --- TransformerEncoderLayer -------------------------------------------------------------------

TransformerEncoderLayer::TransformerEncoderLayer(int64_t dm, int64_t nh,
                                                 TransformerEncoderLayerOptions o)
    : Module("TransformerEncoderLayer"), d_model(dm), nhead(nh), options(o) {
    require_positive(*this, o.dim_feedforward, "dim_feedforward");
    if (o.activation != "relu" && o.activation != "gelu")
        throw Error("TransformerEncoderLayer: activation should be relu or gelu, not '" +
                    o.activation + "'");
    // PyTorch's order of children (and so of the state_dict).
    self_attn = register_module(
        "self_attn",
        std::make_shared<MultiheadAttention>(
            dm, nh, MultiheadAttentionOptions{.dropout = o.dropout, .batch_first = o.batch_first}));
    linear1 = register_module("linear1", std::make_shared<Linear>(dm, o.dim_feedforward));
    dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout));
    linear2 = register_module("linear2", std::make_shared<Linear>(o.dim_feedforward, dm));
    norm1 = register_module("norm1", std::make_shared<LayerNorm>(Dims{dm}, o.layer_norm_eps));
    norm2 = register_module("norm2", std::make_shared<LayerNorm>(Dims{dm}, o.layer_norm_eps));
    dropout1 = register_module("dropout1", std::make_shared<Dropout>(o.dropout));
    dropout2 = register_module("dropout2", std::make_shared<Dropout>(o.dropout));
}

Tensor TransformerEncoderLayer::forward(const TensorList& in) {
    if (in.empty() || in.size() > 2)
        throw Error("TransformerEncoderLayer: expected {src} or {src, src_key_padding}, got " +
                    std::to_string(in.size()) + " inputs");
    return forward(in[0], key_padding(in, 1));
}

Tensor TransformerEncoderLayer::self_attention_block(const Tensor& x,
                                                     const F::AttentionMasks& masks) {
    // Through the child's call operator (its hooks run), as PyTorch's self.self_attn(x, x, x).
    return (*dropout1)((*self_attn)(TensorList{x, x, x, masks.key_padding_mask, masks.attn_mask}));
}

Tensor TransformerEncoderLayer::feed_forward_block(const Tensor& x) {
    Tensor h = (*linear1)(x);
    h = options.activation == "gelu" ? gelu(h) : relu(h);
    return (*dropout2)((*linear2)((*dropout)(h)));
}

Tensor TransformerEncoderLayer::forward(const Tensor& src, const F::AttentionMasks& masks) {
    if ((src.dim() != 2 && src.dim() != 3) || src.size(-1) != d_model)
        bad_input(*this,
                  std::string(options.batch_first ? "[batch, length, " : "[length, batch, ") +
                      std::to_string(d_model) + "] (or unbatched [length, " +
                      std::to_string(d_model) + "])",
                  src);
    Tensor x = src;
    if (options.norm_first) {
        x = x + self_attention_block((*norm1)(x), masks);
        return x + feed_forward_block((*norm2)(x));
    }
    x = (*norm1)(x + self_attention_block(x, masks));
    return (*norm2)(x + feed_forward_block(x));
}

// --- TransformerEncoder ------------------------------------------------------------------------

TransformerEncoder::TransformerEncoder(const TransformerEncoderLayer& proto, int64_t n,
                                       std::shared_ptr<LayerNorm> final_norm)
    : Module("TransformerEncoder"), num_layers(n), norm(std::move(final_norm)) {
    require_positive(*this, n, "num_layers");
    layers = register_module("layers", std::make_shared<ModuleList>());
    const StateDict initial = proto.state_dict();
    for (int64_t i = 0; i < n; ++i) {
        auto layer =
            std::make_shared<TransformerEncoderLayer>(proto.d_model, proto.nhead, proto.options);
        layer->to(proto.self_attn->in_proj_weight.dtype());
        layer->to(proto.self_attn->in_proj_weight.device());
        layer->load_state_dict(initial); // PyTorch deep-copies the prototype: equal initial values
        layer->train(proto.is_training());
        layers->push_back(layer);
    }
    if (norm) register_module("norm", norm);
}

Tensor TransformerEncoder::forward(const TensorList& in) {
    if (in.empty() || in.size() > 2)
        throw Error("TransformerEncoder: expected {src} or {src, src_key_padding}, got " +
                    std::to_string(in.size()) + " inputs");
    return forward(in[0], key_padding(in, 1));
}

Tensor TransformerEncoder::forward(const Tensor& src, const F::AttentionMasks& masks) {
    F::AttentionMasks m = masks;
    // Lengths become one bool mask here instead of once per layer.
    if (m.key_padding_mask.defined() && m.key_padding_mask.dtype() == DType::Int64) {
        const auto& first = layers->at<TransformerEncoderLayer>(0);
        const int len_dim = first->options.batch_first ? 1 : 0;
        const int64_t len = src.dim() == 3 ? src.size(len_dim) : src.size(0);
        m.key_padding_mask = named("TransformerEncoder", [&] {
            return F::padding_mask_from_lengths(m.key_padding_mask, len);
        });
    }
    Tensor x = src;
    for (const auto& layer : *layers)
        x = std::static_pointer_cast<TransformerEncoderLayer>(layer)->forward(x, m);
    return norm ? (*norm)(x) : x;
}

// --- positional encodings ----------------------------------------------------------------------

namespace {

void check_sequence(const Module& m, const Tensor& x, int64_t d_model, int64_t max_len) {
    if (x.dim() != 3 || x.size(2) != d_model)
        bad_input(m, "[batch, length, " + std::to_string(d_model) + "]", x);
    if (x.size(1) > max_len)
        throw ShapeError(m.type_name() + ": sequence length " + std::to_string(x.size(1)) +
                         " of input " + x.shape().str() + " exceeds max_len " +
                         std::to_string(max_len));
}

void check_dropout(const Module& m, double p) {
    if (p < 0.0 || p > 1.0)
        throw Error(m.type_name() + ": dropout must be in [0, 1], got " + py_float(p));
}

} // namespace

SinusoidalPositionalEncoding::SinusoidalPositionalEncoding(int64_t dm, double dropout_p, int64_t ml)
    : Module("SinusoidalPositionalEncoding"), d_model(dm), p(dropout_p), max_len(ml) {
    require_positive(*this, dm, "d_model");
    require_positive(*this, ml, "max_len");
    check_dropout(*this, dropout_p);
    pe = register_buffer("pe", F::sinusoidal_position_table(ml, dm), /*persistent=*/false);
}

Tensor SinusoidalPositionalEncoding::forward(const TensorList& in) {
    const Tensor& x = in[0];
    check_sequence(*this, x, d_model, max_len);
    // The buffer was built in float32; a float64 module recomputes its rows exactly.
    const Tensor table = pe.dtype() == DType::Float64
                             ? F::sinusoidal_position_table(x.size(1), d_model, DType::Float64)
                             : pe.narrow(0, 0, x.size(1));
    return F::dropout(x + table.to(x.device()), p, is_training());
}

std::string SinusoidalPositionalEncoding::extra_repr() const {
    return "d_model=" + std::to_string(d_model) + ", dropout=" + py_float(p) +
           ", max_len=" + std::to_string(max_len);
}

LearnedPositionalEncoding::LearnedPositionalEncoding(int64_t dm, double dropout_p, int64_t ml)
    : Module("LearnedPositionalEncoding"), d_model(dm), p(dropout_p), max_len(ml) {
    require_positive(*this, dm, "d_model");
    require_positive(*this, ml, "max_len");
    check_dropout(*this, dropout_p);
    pos_embedding = register_module("pos_embedding", std::make_shared<Embedding>(ml, dm));
}

Tensor LearnedPositionalEncoding::forward(const TensorList& in) {
    const Tensor& x = in[0];
    check_sequence(*this, x, d_model, max_len);
    // The first T rows of the table: an embedding of positions 0..T-1 without the index tensor.
    return F::dropout(x + pos_embedding->weight.narrow(0, 0, x.size(1)), p, is_training());
}

std::string LearnedPositionalEncoding::extra_repr() const {
    return "d_model=" + std::to_string(d_model) + ", dropout=" + py_float(p) +
           ", max_len=" + std::to_string(max_len);
}

// --- sequence reductions -----------------------------------------------------------------------

namespace {
void check_sequence_inputs(const Module& m, const TensorList& in) {
    if (in.empty() || in.size() > 2)
        throw Error(m.type_name() + ": expected {sequence} or {sequence, lengths}, got " +
                    std::to_string(in.size()) + " inputs");
}
} // namespace

Tensor SequenceLast::forward(const TensorList& in) {
    check_sequence_inputs(*this, in);
    return named(type_name(),
                 [&] { return F::sequence_last(in[0], in.size() > 1 ? in[1] : Tensor()); });
}

Tensor SequenceMeanPool::forward(const TensorList& in) {
    check_sequence_inputs(*this, in);
    return named(type_name(),
                 [&] { return F::sequence_mean_pool(in[0], in.size() > 1 ? in[1] : Tensor()); });
}

} // namespace myelin::nn
