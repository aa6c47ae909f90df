#pragma once
// Shared by the export tests: example projects with fresh weights (no training needed: the
// exporters must reproduce any weights), models that use every exportable layer kind, and
// Myelin's own forward pass to compare with.
#include <myelin/autograd.h>
#include <myelin/export/export.h>
#include <myelin/generator.h>
#include <myelin/graph/analysis.h>
#include <myelin/graph/build.h>
#include <myelin/io/project.h>

#include <QString>

#include <cstdlib>
#include <string>

namespace export_test {

using namespace myelin;

inline std::string example_path(const std::string& name) {
    const char* root = std::getenv("MYELIN_SOURCE_DIR");
    return std::string(root ? root : ".") + "/resources/examples/" + name + ".myelin";
}

inline graph::AttrValue I(int64_t v) {
    return v;
}
inline graph::AttrValue F(double v) {
    return v;
}
inline graph::AttrValue L(std::vector<int64_t> v) {
    return v;
}

// Fresh weights (seeded); batch norm statistics and affine parameters moved away from their
// initial 0 / 1 so the evaluation form is really tested.
inline exporters::ExportSource fresh_source(io::Project project, uint64_t seed = 7) {
    default_generator().manual_seed(seed);
    auto model = graph::build(project.model);
    exporters::ExportSource source;
    for (auto& [name, tensor] : model->state_dict()) {
        Tensor t = tensor;
        auto ends = [&](const char* suffix) {
            return name.size() >= std::strlen(suffix) &&
                   name.compare(name.size() - std::strlen(suffix), std::string::npos, suffix) == 0;
        };
        if (ends("running_var")) t = rand(t.sizes()) + 0.5;
        if (ends("running_mean")) t = randn(t.sizes()) * 0.2;
        if ((ends("norm.weight") || ends("bn.weight") || ends("bn1.weight") || ends("gn.weight") ||
             ends("ln.weight")) &&
            is_floating(t.dtype()))
            t = rand(t.sizes()) + 0.5;
        if ((ends("bn.bias") || ends("gn.bias") || ends("ln.bias") || ends("bn1.bias")))
            t = randn(t.sizes()) * 0.1;
        source.weights.emplace_back(name, t.contiguous());
    }
    const graph::Analysis analysis = graph::analyze(project.model, 1);
    for (size_t i = 0; i < project.model.nodes.size(); ++i)
        if (project.model.nodes[i].kind == "Input")
            for (int64_t d : project.model.nodes[i].attrs.get_ints("shape"))
                source.description.input_shape.push_back(d);
    source.project = std::move(project);
    source.position.step = 42;
    return source;
}

// Myelin's output for `inputs` in evaluation mode.
inline Tensor myelin_forward(const exporters::ExportSource& source, const TensorList& inputs) {
    auto model = graph::build(source.project.model);
    model->load_state_dict(source.weights);
    model->eval();
    autograd::NoGradGuard no_grad;
    return (*model)(inputs).contiguous();
}

// A project whose model is `spec` (data and training left at their defaults).
inline io::Project project_of(graph::ModelSpec spec, const std::string& name) {
    io::Project p;
    p.name = name;
    p.model = std::move(spec);
    return p;
}

// Image layers: every convolution, pooling, normalisation and activation kind that works on
// [N, C, H, W], with residual, concatenation and product merges.
inline graph::ModelSpec image_layers_model() {
    graph::ModelSpec s;
    auto in = s.add_node("Input", "", {{"shape", L({3, 12, 12})}});
    auto conv = s.add_node("Conv2d", "conv",
                           {{"in_channels", I(3)},
                            {"out_channels", I(8)},
                            {"kernel_size", I(3)},
                            {"padding", I(1)},
                            {"padding_mode", std::string("reflect")}});
    auto bn = s.add_node("BatchNorm2d", "bn", {{"num_features", I(8)}});
    auto relu = s.add_node("ReLU", "relu");
    auto same = s.add_node("Conv2d", "same",
                           {{"in_channels", I(8)},
                            {"out_channels", I(8)},
                            {"kernel_size", L({2, 3})},
                            {"same_padding", true},
                            {"padding_mode", std::string("replicate")},
                            {"groups", I(2)}});
    auto wrap = s.add_node("Conv2d", "wrap",
                           {{"in_channels", I(8)},
                            {"out_channels", I(8)},
                            {"kernel_size", L({3, 2})},
                            {"same_padding", true},
                            {"padding_mode", std::string("circular")}});
    auto gn = s.add_node("GroupNorm", "gn", {{"num_groups", I(2)}, {"num_channels", I(8)}});
    auto leaky = s.add_node("LeakyReLU", "leaky", {{"negative_slope", F(0.1)}});
    auto add = s.add_node("Add", "residual");
    auto pool = s.add_node("MaxPool2d", "pool",
                           {{"kernel_size", I(3)}, {"stride", I(2)}, {"padding", I(1)}});
    auto up = s.add_node("ConvTranspose2d", "up",
                         {{"in_channels", I(8)},
                          {"out_channels", I(4)},
                          {"kernel_size", I(3)},
                          {"stride", I(2)},
                          {"padding", I(1)},
                          {"output_padding", I(1)}});
    auto prelu = s.add_node("PReLU", "prelu", {{"num_parameters", I(4)}});
    auto elu = s.add_node("ELU", "elu", {{"alpha", F(0.7)}});
    auto nearest = s.add_node("Upsample", "nearest", {{"scale_factor", I(2)}});
    auto avg = s.add_node(
        "AvgPool2d", "avg",
        {{"kernel_size", I(3)}, {"stride", I(2)}, {"padding", I(1)}, {"count_include_pad", false}});
    auto silu = s.add_node("SiLU", "silu");
    auto hswish = s.add_node("Hardswish", "hswish");
    auto mul = s.add_node("Multiply", "gate");
    auto drop2d = s.add_node("Dropout2d", "drop2d", {{"p", F(0.3)}});
    auto bilinear = s.add_node("Upsample", "smooth",
                               {{"scale_factor", I(2)}, {"mode", std::string("bilinear")}});
    auto cat = s.add_node("Concat", "cat", {{"num_inputs", I(3)}, {"dim", I(1)}});
    auto sig = s.add_node("Sigmoid", "sig");
    auto adaptive = s.add_node("AdaptiveAvgPool2d", "adaptive", {{"output_size", I(4)}});
    auto flat = s.add_node("Flatten", "flat");
    auto fc = s.add_node("Linear", "fc", {{"in_features", I(192)}, {"out_features", I(10)}});
    auto out = s.add_node("Output");
    s.connect(in, conv);
    s.connect(conv, bn);
    s.connect(bn, relu);
    s.connect(relu, same);
    s.connect(same, wrap);
    s.connect(wrap, gn);
    s.connect(gn, leaky);
    s.connect(leaky, add, 0);
    s.connect(relu, add, 1);
    s.connect(add, pool);
    s.connect(pool, up);
    s.connect(up, prelu);
    s.connect(prelu, elu);
    s.connect(elu, nearest);
    s.connect(nearest, avg);
    s.connect(avg, silu);
    s.connect(silu, hswish);
    s.connect(hswish, mul, 0);
    s.connect(silu, mul, 1);
    s.connect(mul, drop2d);
    s.connect(drop2d, bilinear);
    s.connect(bilinear, cat, 0);
    s.connect(bilinear, cat, 1);
    s.connect(nearest, cat, 2);
    s.connect(cat, sig);
    s.connect(sig, adaptive);
    s.connect(adaptive, flat);
    s.connect(flat, fc);
    s.connect(fc, out);
    return s;
}

// Vector and sequence layers: Conv1d, BatchNorm1d, Linear on 3-d input, Unflatten, the
// remaining activations, Dropout, Identity, Softmax / LogSoftmax.
inline graph::ModelSpec vector_layers_model() {
    graph::ModelSpec s;
    auto in = s.add_node("Input", "", {{"shape", L({4, 16})}});
    auto conv = s.add_node("Conv1d", "conv",
                           {{"in_channels", I(4)},
                            {"out_channels", I(6)},
                            {"kernel_size", I(3)},
                            {"stride", I(2)},
                            {"padding", I(2)},
                            {"dilation", I(2)},
                            {"padding_mode", std::string("circular")}});
    auto bn = s.add_node("BatchNorm1d", "bn", {{"num_features", I(6)}});
    auto gelu = s.add_node("GELU", "gelu");
    auto per_step =
        s.add_node("Linear", "per_step", {{"in_features", I(8)}, {"out_features", I(5)}});
    auto tanh_gelu = s.add_node("GELU", "gelu_tanh", {{"approximate", std::string("tanh")}});
    auto flat = s.add_node("Flatten", "flat");
    auto fc = s.add_node("Linear", "fc", {{"in_features", I(30)}, {"out_features", I(12)}});
    auto bn1 = s.add_node("BatchNorm1d", "bn1", {{"num_features", I(12)}, {"affine", false}});
    auto tanh = s.add_node("Tanh", "tanh");
    auto softplus = s.add_node("Softplus", "softplus", {{"beta", F(2.0)}});
    auto drop = s.add_node("Dropout", "drop", {{"p", F(0.2)}});
    auto ident = s.add_node("Identity", "ident");
    auto gate = s.add_node("Multiply", "gate");
    auto fc2 = s.add_node("Linear", "fc2", {{"in_features", I(12)}, {"out_features", I(6)}});
    auto unflat =
        s.add_node("Unflatten", "unflat", {{"dim", I(1)}, {"unflattened_size", L({2, 3})}});
    auto soft = s.add_node("Softmax", "soft", {{"dim", I(-1)}});
    auto flat2 = s.add_node("Flatten", "flat2");
    auto logsoft = s.add_node("LogSoftmax", "logsoft", {{"dim", I(1)}});
    auto out = s.add_node("Output");
    s.connect(in, conv);
    s.connect(conv, bn);
    s.connect(bn, gelu);
    s.connect(gelu, per_step);
    s.connect(per_step, tanh_gelu);
    s.connect(tanh_gelu, flat);
    s.connect(flat, fc);
    s.connect(fc, bn1);
    s.connect(bn1, tanh);
    s.connect(tanh, softplus);
    s.connect(softplus, drop);
    s.connect(drop, ident);
    s.connect(ident, gate, 0);
    s.connect(tanh, gate, 1);
    s.connect(gate, fc2);
    s.connect(fc2, unflat);
    s.connect(unflat, soft);
    s.connect(soft, flat2);
    s.connect(flat2, logsoft);
    s.connect(logsoft, out);
    return s;
}

// Batch norm without running statistics: normalised with the batch's own, also in evaluation.
inline graph::ModelSpec batch_statistics_model() {
    graph::ModelSpec s;
    auto in = s.add_node("Input", "", {{"shape", L({6, 8})}});
    auto bn =
        s.add_node("BatchNorm1d", "bn", {{"num_features", I(6)}, {"track_running_stats", false}});
    auto flat = s.add_node("Flatten", "flat");
    auto fc = s.add_node("Linear", "fc", {{"in_features", I(48)}, {"out_features", I(3)}});
    auto out = s.add_node("Output");
    s.connect(in, bn);
    s.connect(bn, flat);
    s.connect(flat, fc);
    s.connect(fc, out);
    return s;
}

// Bilinear over two different inputs.
inline graph::ModelSpec bilinear_model() {
    graph::ModelSpec s;
    auto in = s.add_node("Input", "", {{"shape", L({12})}});
    auto fc = s.add_node("Linear", "fc", {{"in_features", I(12)}, {"out_features", I(9)}});
    auto bil =
        s.add_node("Bilinear", "bil",
                   {{"in1_features", I(12)}, {"in2_features", I(9)}, {"out_features", I(6)}});
    auto out = s.add_node("Output");
    s.connect(in, fc);
    s.connect(in, bil, 0);
    s.connect(fc, bil, 1);
    s.connect(bil, out);
    return s;
}

// Kinds OpenCV 4.6 cannot run (LayerNormalization, int64 Gather indices): checked by ONNX only.
inline graph::ModelSpec layer_norm_model() {
    graph::ModelSpec s;
    auto in = s.add_node("Input", "", {{"shape", L({5, 16})}});
    auto ln = s.add_node("LayerNorm", "ln", {{"normalized_shape", L({16})}});
    auto fc = s.add_node("Linear", "fc", {{"in_features", I(16)}, {"out_features", I(3)}});
    auto out = s.add_node("Output");
    s.connect(in, ln);
    s.connect(ln, fc);
    s.connect(fc, out);
    return s;
}

inline graph::ModelSpec embedding_model() {
    graph::ModelSpec s;
    auto in = s.add_node("Input", "tokens", {{"shape", L({7})}, {"dtype", std::string("int64")}});
    auto emb = s.add_node("Embedding", "emb", {{"num_embeddings", I(20)}, {"embedding_dim", I(8)}});
    auto flat = s.add_node("Flatten", "flat");
    auto fc = s.add_node("Linear", "fc", {{"in_features", I(56)}, {"out_features", I(4)}});
    auto out = s.add_node("Output");
    s.connect(in, emb);
    s.connect(emb, flat);
    s.connect(flat, fc);
    s.connect(fc, out);
    return s;
}

// Every sequence kind with each of its options the exporters write differently: GRU (two
// layers, both directions, lengths) and its h_n port, RNN (relu, last output, no lengths), LSTM
// (lengths) and its c_n port, MultiheadAttention (causal, lengths, per-head weights port),
// TransformerEncoderLayer (GELU, post-norm), a causal one-layer TransformerEncoder, learned
// positions, SequenceLast and SequenceMeanPool with and without lengths.
inline graph::ModelSpec sequence_layers_model() {
    graph::ModelSpec s;
    const std::string t = "int64";
    auto in = s.add_node("Input", "tokens", {{"shape", L({12})}, {"dtype", t}});
    auto emb =
        s.add_node("Embedding", "emb",
                   {{"num_embeddings", I(30)}, {"embedding_dim", I(8)}, {"padding_idx", I(0)}});
    auto len = s.add_node("PaddingLengths", "len");
    auto pos = s.add_node("PositionalEncoding", "pos",
                          {{"d_model", I(8)},
                           {"encoding", std::string("learned")},
                           {"max_len", I(16)},
                           {"dropout", F(0.0)}});
    auto gru = s.add_node("GRU", "gru",
                          {{"input_size", I(8)},
                           {"hidden_size", I(6)},
                           {"num_layers", I(2)},
                           {"bidirectional", true},
                           {"num_inputs", I(2)}});
    auto rnn = s.add_node("RNN", "rnn",
                          {{"input_size", I(12)},
                           {"hidden_size", I(5)},
                           {"nonlinearity", std::string("relu")},
                           {"output", std::string("last")}});
    auto lstm = s.add_node("LSTM", "lstm",
                           {{"input_size", I(8)},
                            {"hidden_size", I(4)},
                            {"bidirectional", true},
                            {"num_inputs", I(2)}});
    auto mha = s.add_node("MultiheadAttention", "mha",
                          {{"embed_dim", I(12)},
                           {"num_heads", I(3)},
                           {"causal", true},
                           {"num_inputs", I(2)},
                           {"need_weights", true},
                           {"average_attn_weights", false}});
    auto layer = s.add_node("TransformerEncoderLayer", "layer",
                            {{"d_model", I(12)},
                             {"nhead", I(2)},
                             {"dim_feedforward", I(16)},
                             {"activation", std::string("gelu")},
                             {"num_inputs", I(2)}});
    auto encoder = s.add_node("TransformerEncoder", "encoder",
                              {{"num_layers", I(1)},
                               {"d_model", I(8)},
                               {"nhead", I(2)},
                               {"dim_feedforward", I(16)},
                               {"causal", true}});
    auto last = s.add_node("SequenceLast", "last", {{"num_inputs", I(2)}});
    auto last_step = s.add_node("SequenceLast", "last_step");
    auto mean = s.add_node("SequenceMeanPool", "mean");
    auto valid_mean = s.add_node("SequenceMeanPool", "valid_mean", {{"num_inputs", I(2)}});
    auto weights = s.add_node("Flatten", "weights");
    auto attention_fc =
        s.add_node("Linear", "attention_fc", {{"in_features", I(432)}, {"out_features", I(4)}});
    auto cat = s.add_node("Concat", "cat", {{"num_inputs", I(8)}, {"dim", I(1)}});
    auto fc = s.add_node("Linear", "fc", {{"in_features", I(85)}, {"out_features", I(5)}});
    auto out = s.add_node("Output");
    s.connect(in, emb);
    s.connect(in, len);
    s.connect(emb, pos);
    s.connect(pos, gru);
    s.connect(len, gru, 1);
    s.connect(gru, rnn);
    s.connect(pos, lstm);
    s.connect(len, lstm, 1);
    s.connect(gru, mha);
    s.connect(len, mha, 1);
    s.connect(mha, layer);
    s.connect(len, layer, 1);
    s.connect(pos, encoder);
    s.connect(layer, last);
    s.connect(len, last, 1);
    s.connect(gru, last_step);
    s.connect(layer, mean);
    s.connect(encoder, valid_mean);
    s.connect(len, valid_mean, 1);
    s.connect(mha, weights, 0, 1);
    s.connect(weights, attention_fc);
    s.connect(last, cat, 0);         // 12
    s.connect(last_step, cat, 1);    // 12
    s.connect(mean, cat, 2);         // 12
    s.connect(valid_mean, cat, 3);   // 8
    s.connect(rnn, cat, 4);          // 5
    s.connect(lstm, cat, 5, 2);      // c_n: 8
    s.connect(gru, cat, 6, 1);       // h_n: 24
    s.connect(attention_fc, cat, 7); // 4
    s.connect(cat, fc);
    s.connect(fc, out);
    return s;
}

// Tokens [n, steps] in [1, vocabulary) with each row cut to a random length >= 1 by padding
// zeros, the first row full and the second of length 1.
inline Tensor padded_tokens(int64_t n, int64_t steps, int64_t vocabulary) {
    Tensor x = randint(1, vocabulary, {n, steps}).contiguous();
    int64_t* ids = x.data<int64_t>();
    const Tensor lengths = randint(1, steps + 1, {n}).contiguous();
    for (int64_t row = 0; row < n; ++row) {
        const int64_t length = row == 0 ? steps : row == 1 ? 1 : lengths.data<int64_t>()[row];
        for (int64_t t = length; t < steps; ++t)
            ids[row * steps + t] = 0;
    }
    return x;
}

// ReLU6 (ONNX Clip with bound inputs, which OpenCV 4.6 does not read): between two Linears whose
// outputs are scaled so some values pass 6.
inline graph::ModelSpec relu6_model() {
    graph::ModelSpec s;
    auto in = s.add_node("Input", "", {{"shape", L({12})}});
    auto fc = s.add_node("Linear", "fc", {{"in_features", I(12)}, {"out_features", I(16)}});
    auto relu6 = s.add_node("ReLU6", "relu6");
    auto head = s.add_node("Linear", "head", {{"in_features", I(16)}, {"out_features", I(4)}});
    auto out = s.add_node("Output");
    s.connect(in, fc);
    s.connect(fc, relu6);
    s.connect(relu6, head);
    s.connect(head, out);
    return s;
}

// relu6_model's source with its first Linear scaled by 20, so the clamp at 6 is reached.
inline exporters::ExportSource relu6_source() {
    exporters::ExportSource source = fresh_source(project_of(relu6_model(), "relu6"));
    for (auto& [name, t] : source.weights)
        if (name == "fc.weight") t = (t * 20.0).contiguous();
    return source;
}

inline QString q(const std::string& s) {
    return QString::fromStdString(s);
}

} // namespace export_test
