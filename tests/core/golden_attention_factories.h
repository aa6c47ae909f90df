#pragma once
// test_nn_golden's factories for the attention and sequence layers (nn/attention.h), whose
// fixtures tests/golden/attention_f32.txt / attention_f64.txt are written by
// tests/golden/gen_golden_attention.py (the PyTorch side of every kind below is defined there).
#include <myelin/graph/attributes.h>
#include <myelin/graph/registry.h>
#include <myelin/nn/attention.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace golden_attention {

namespace nn = myelin::nn;
using myelin::Tensor;
using myelin::TensorList;

inline const char* const kFiles[] = {"attention_f32.txt", "attention_f64.txt"};
constexpr int kMinCases = 20; // per file: a truncated fixture must fail

// Kinds that must have cases in both attention files.
inline const std::vector<std::string>& requiredKinds() {
    static const std::vector<std::string> kinds = {
        "MultiheadAttention",        "MultiheadAttentionCall", "MultiheadAttentionNode",
        "TransformerEncoderLayer",   "TransformerEncoder",     "SinusoidalPositionalEncoding",
        "LearnedPositionalEncoding", "SequenceLast",           "SequenceMeanPool"};
    return kinds;
}

// All of them sum over many terms (GEMMs, softmax, layer norm, means): accumulation tolerances.
inline bool isAttentionKind(const std::string& kind) {
    const auto& k = requiredKinds();
    return std::find(k.begin(), k.end(), kind) != k.end();
}

// MultiheadAttention called another way than its TensorList convention (gen_golden_attention.py's
// MultiheadAttentionCall): the module's own parameters and names, a different forward.
class MultiheadAttentionCall : public nn::MultiheadAttention {
  public:
    MultiheadAttentionCall(std::string call, int64_t e, int64_t h, nn::MultiheadAttentionOptions o)
        : MultiheadAttention(e, h, o), call_(std::move(call)) {}
    Tensor forward(const TensorList& in) override {
        if (call_ == "qkv_attn")
            return MultiheadAttention::forward(in[0], in[1], in[2], {{}, in[3]});
        if (call_ == "q_kv") return MultiheadAttention::forward(in[0], in[1], in[1]);
        // The output and the weights, flattened and concatenated.
        const auto r =
            forward_with_weights(in[0], in[0], in[0], {in[1], {}}, call_ == "weights_avg");
        return myelin::cat({r.output.reshape({-1}), r.weights.reshape({-1})});
    }

  private:
    std::string call_;
};

template <typename Opts>
void addFactories(std::map<std::string, std::function<nn::ModulePtr(const Opts&)>>& t) {
    using std::make_shared;
    auto mhaOptions = [](const Opts& o) {
        return nn::MultiheadAttentionOptions{.dropout = o.d("dropout", 0.0),
                                             .bias = o.b("bias", true),
                                             .batch_first = o.b("batch_first", false)};
    };
    t["MultiheadAttention"] = [mhaOptions](const Opts& o) -> nn::ModulePtr {
        return make_shared<nn::MultiheadAttention>(o.i("embed_dim"), o.i("num_heads"),
                                                   mhaOptions(o));
    };
    t["MultiheadAttentionCall"] = [mhaOptions](const Opts& o) -> nn::ModulePtr {
        return make_shared<MultiheadAttentionCall>(o.str("call"), o.i("embed_dim"),
                                                   o.i("num_heads"), mhaOptions(o));
    };
    // The editor's kind, built by the registry as the graph builds it (need_weights on: two
    // outputs, the output and the weights).
    t["MultiheadAttentionNode"] = [](const Opts& o) -> nn::ModulePtr {
        namespace graph = myelin::graph;
        const graph::LayerKind& kind = graph::layer_kind("MultiheadAttention");
        const graph::Attrs given{{"embed_dim", o.i("embed_dim")},
                                 {"num_heads", o.i("num_heads")},
                                 {"causal", o.b("causal", false)},
                                 {"need_weights", true},
                                 {"average_attn_weights", o.b("average_attn_weights", true)}};
        return kind.build(graph::with_defaults(kind.attrs, given));
    };
    auto layer = [](const Opts& o) {
        nn::TransformerEncoderLayerOptions c;
        c.dim_feedforward = o.i("dim_feedforward", 2048);
        c.dropout = o.d("dropout", 0.1);
        if (o.has("activation")) c.activation = o.str("activation");
        c.layer_norm_eps = o.d("layer_norm_eps", 1e-5);
        c.batch_first = o.b("batch_first", false);
        c.norm_first = o.b("norm_first", false);
        return make_shared<nn::TransformerEncoderLayer>(o.i("d_model"), o.i("nhead"), c);
    };
    t["TransformerEncoderLayer"] = [layer](const Opts& o) -> nn::ModulePtr { return layer(o); };
    t["TransformerEncoder"] = [layer](const Opts& o) -> nn::ModulePtr {
        auto norm =
            o.b("norm", false) ? make_shared<nn::LayerNorm>(myelin::Dims{o.i("d_model")}) : nullptr;
        return make_shared<nn::TransformerEncoder>(*layer(o), o.i("num_layers"), norm);
    };
    t["SinusoidalPositionalEncoding"] = [](const Opts& o) -> nn::ModulePtr {
        return make_shared<nn::SinusoidalPositionalEncoding>(o.i("d_model"), o.d("dropout", 0.1),
                                                             o.i("max_len", 5000));
    };
    t["LearnedPositionalEncoding"] = [](const Opts& o) -> nn::ModulePtr {
        return make_shared<nn::LearnedPositionalEncoding>(o.i("d_model"), o.d("dropout", 0.1),
                                                          o.i("max_len", 512));
    };
    t["SequenceLast"] = [](const Opts&) -> nn::ModulePtr {
        return make_shared<nn::SequenceLast>();
    };
    t["SequenceMeanPool"] = [](const Opts&) -> nn::ModulePtr {
        return make_shared<nn::SequenceMeanPool>();
    };
}

} // namespace golden_attention
