#pragma once
// Attention and sequence layers: PyTorch 1.13's MultiheadAttention, TransformerEncoderLayer and
// TransformerEncoder (same constructor arguments, defaults, parameter names, layouts and default
// initialisation, so state_dicts load in PyTorch by name), sinusoidal and learned positional
// encodings, and the sequence reductions a graph needs after an encoder (last valid step, mean
// over valid steps).
//
// Masks follow PyTorch: a bool key padding mask [B, S] is true where a key is padding (ignored);
// a bool attention mask [L, S] is true where attending is not allowed; float masks are added to
// the attention scores. Wherever a key padding mask is taken, int64 lengths [B] may be given
// instead (keys at positions >= length are ignored): what the graph editor's sequence inputs
// carry. Masks are constants: no gradient flows into them.
#include <myelin/nn/layers.h>
#include <myelin/nn/module.h>

#include <memory>
#include <string>

namespace myelin::nn {

namespace functional {

// PyTorch's Transformer.generate_square_subsequent_mask: float [size, size], 0 on and below the
// diagonal, -inf above it (position i attends to positions <= i).
Tensor causal_mask(int64_t size, DType dtype = DType::Float32);
// bool [B, max_len], true at steps >= lengths[b]. lengths: int64 [B], each in [0, max_len].
Tensor padding_mask_from_lengths(const Tensor& lengths, int64_t max_len);
// Each sequence's length from its tokens: int64 [N, T] -> int64 [N], the count of non-zero
// (non-padding) tokens, at least 1. Computed where the tokens are; the lengths then check
// against [1, T] without a read of the device.
Tensor padding_lengths(const Tensor& tokens);

struct AttentionMasks {
    // [B, S] bool (true = ignore the key) or float (added), or int64 lengths [B]; may be undefined
    Tensor key_padding_mask;
    // [L, S] or [B * num_heads, L, S], bool (true = not allowed) or float (added); may be undefined
    Tensor attn_mask;
};

struct MultiheadAttentionParams {
    int64_t num_heads = 1;
    Tensor in_proj_weight;  // [3E, E]: query, key and value projections stacked
    Tensor in_proj_bias;    // [3E] or undefined
    Tensor out_proj_weight; // [E, E]
    Tensor out_proj_bias;   // [E] or undefined
    double dropout = 0.0;   // on the attention weights, in training only
    bool training = true;
    bool batch_first = false; // inputs [B, L, E] instead of [L, B, E]
};

struct AttentionResult {
    Tensor output;  // like the query
    Tensor weights; // [B, L, S] averaged over heads, or [B, H, L, S]; unbatched: without B
};

// query [L, B, E] ([B, L, E] with batch_first; [L, E] unbatched), key and value [S, B, E].
// Self-attention (query, key and value the same tensor) projects with one GEMM. The attention
// itself is one autograd node over batched GEMMs of all B * H heads with a hand-written backward.
Tensor multi_head_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                            const MultiheadAttentionParams& params,
                            const AttentionMasks& masks = {});
// The same output and the attention weights (after dropout, as PyTorch returns them), both
// differentiable: composed of tensor ops, so slower; for need_weights.
AttentionResult multi_head_attention_with_weights(const Tensor& query, const Tensor& key,
                                                  const Tensor& value,
                                                  const MultiheadAttentionParams& params,
                                                  const AttentionMasks& masks = {},
                                                  bool average_attn_weights = true);

// x [B, T, ...] (batch first); lengths int64 [B] with each in [1, T], or undefined (all T).
// The output at each sequence's last valid step: [B, ...].
Tensor sequence_last(const Tensor& x, const Tensor& lengths = {});
// The mean over each sequence's valid steps: [B, ...].
Tensor sequence_mean_pool(const Tensor& x, const Tensor& lengths = {});

// The sinusoidal table [max_len, d_model] of "Attention Is All You Need" (PyTorch's tutorial
// PositionalEncoding): pe[pos, 2i] = sin(pos / 10000^(2i / d)), pe[pos, 2i + 1] = cos(same);
// computed in double, then converted.
Tensor sinusoidal_position_table(int64_t max_len, int64_t d_model, DType dtype = DType::Float32);

} // namespace functional

// --- MultiheadAttention ------------------------------------------------------------------------

struct MultiheadAttentionOptions {
    double dropout = 0.0; // on the attention weights, in training only
    bool bias = true;     // in_proj_bias and out_proj.bias
    bool batch_first = false;
};

// PyTorch's nn.MultiheadAttention (without add_bias_kv, add_zero_attn, kdim/vdim): parameters
// in_proj_weight [3E, E] (xavier_uniform), in_proj_bias [3E] (zeros), out_proj.weight [E, E]
// (Linear's init), out_proj.bias [E] (zeros).
class MultiheadAttention : public Module {
  public:
    MultiheadAttention(int64_t embed_dim, int64_t num_heads,
                       MultiheadAttentionOptions options = {});

    // The attention output only (PyTorch's need_weights=False). Inputs, by count:
    //   {x}                                   self-attention
    //   {x, key_padding}                      self-attention with a key padding mask or lengths
    //   {query, key, value}
    //   {query, key, value, key_padding}
    //   {query, key, value, key_padding, attn_mask}   (key_padding may be undefined)
    Tensor forward(const TensorList& inputs) override;
    int num_inputs() const override { return -1; }
    Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value,
                   const functional::AttentionMasks& masks = {});
    // Output and attention weights (PyTorch's need_weights=True).
    functional::AttentionResult forward_with_weights(const Tensor& query, const Tensor& key,
                                                     const Tensor& value,
                                                     const functional::AttentionMasks& masks = {},
                                                     bool average_attn_weights = true);
    void reset_parameters();

    const int64_t embed_dim;
    const int64_t num_heads;
    const int64_t head_dim;
    const MultiheadAttentionOptions options;
    Tensor in_proj_weight; // [3 * embed_dim, embed_dim]
    Tensor in_proj_bias;   // [3 * embed_dim] or undefined
    std::shared_ptr<Linear> out_proj;

  private:
    functional::MultiheadAttentionParams params() const;
    std::string describe() const;
};

// --- Transformer encoder -----------------------------------------------------------------------

struct TransformerEncoderLayerOptions {
    int64_t dim_feedforward = 2048;
    double dropout = 0.1;
    std::string activation = "relu"; // "relu" | "gelu"
    double layer_norm_eps = 1e-5;
    bool batch_first = false;
    bool norm_first = false; // pre-norm: x + sa(norm1(x)), x + ff(norm2(x))
};

// PyTorch's nn.TransformerEncoderLayer: children self_attn, linear1, dropout, linear2, norm1,
// norm2, dropout1, dropout2 (PyTorch's order and names).
class TransformerEncoderLayer : public Module {
  public:
    TransformerEncoderLayer(int64_t d_model, int64_t nhead,
                            TransformerEncoderLayerOptions options = {});
    // {src} or {src, src_key_padding} (bool / float mask [B, S], or int64 lengths [B]).
    Tensor forward(const TensorList& inputs) override;
    int num_inputs() const override { return -1; }
    // masks.attn_mask is PyTorch's src_mask, masks.key_padding_mask its src_key_padding_mask.
    Tensor forward(const Tensor& src, const functional::AttentionMasks& masks);

    const int64_t d_model;
    const int64_t nhead;
    const TransformerEncoderLayerOptions options;
    std::shared_ptr<MultiheadAttention> self_attn;
    std::shared_ptr<Linear> linear1, linear2;
    std::shared_ptr<Dropout> dropout, dropout1, dropout2;
    std::shared_ptr<LayerNorm> norm1, norm2;

  private:
    Tensor self_attention_block(const Tensor& x, const functional::AttentionMasks& masks);
    Tensor feed_forward_block(const Tensor& x);
};

// PyTorch's nn.TransformerEncoder: `num_layers` copies of `encoder_layer` (same configuration and
// the same initial parameter values, as PyTorch's deepcopy) as layers.0, layers.1, ..., then the
// optional final `norm`.
class TransformerEncoder : public Module {
  public:
    TransformerEncoder(const TransformerEncoderLayer& encoder_layer, int64_t num_layers,
                       std::shared_ptr<LayerNorm> norm = nullptr);
    // {src} or {src, src_key_padding} (bool / float mask [B, S], or int64 lengths [B]).
    Tensor forward(const TensorList& inputs) override;
    int num_inputs() const override { return -1; }
    Tensor forward(const Tensor& src, const functional::AttentionMasks& masks);

    const int64_t num_layers;
    std::shared_ptr<ModuleList> layers;
    std::shared_ptr<LayerNorm> norm; // may be null
};

// --- positional encodings ----------------------------------------------------------------------

// x [B, T, d_model] + the sinusoidal table's first T rows, then dropout (PyTorch's tutorial
// PositionalEncoding, batch first). The table is a non-persistent buffer `pe` [max_len, d_model]:
// not in the state_dict. T > max_len throws, naming both.
class SinusoidalPositionalEncoding : public Module {
  public:
    explicit SinusoidalPositionalEncoding(int64_t d_model, double dropout = 0.1,
                                          int64_t max_len = 5000);
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;

    const int64_t d_model;
    const double p;
    const int64_t max_len;
    Tensor pe; // [max_len, d_model]
};

// x [B, T, d_model] + a learned embedding of the positions 0..T-1, then dropout. Its one
// parameter is pos_embedding.weight [max_len, d_model] (an Embedding: normal(0, 1) init).
class LearnedPositionalEncoding : public Module {
  public:
    explicit LearnedPositionalEncoding(int64_t d_model, double dropout = 0.1,
                                       int64_t max_len = 512);
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;

    const int64_t d_model;
    const double p;
    const int64_t max_len;
    std::shared_ptr<Embedding> pos_embedding;
};

// --- sequence reductions -----------------------------------------------------------------------

// {x [B, T, ...]} or {x, lengths int64 [B]}: the output at each sequence's last valid step.
class SequenceLast : public Module {
  public:
    SequenceLast() : Module("SequenceLast") {}
    Tensor forward(const TensorList& inputs) override;
    int num_inputs() const override { return -1; }
};

// {x [B, T, ...]} or {x, lengths int64 [B]}: the mean over each sequence's valid steps.
class SequenceMeanPool : public Module {
  public:
    SequenceMeanPool() : Module("SequenceMeanPool") {}
    Tensor forward(const TensorList& inputs) override;
    int num_inputs() const override { return -1; }
};

} // namespace myelin::nn
