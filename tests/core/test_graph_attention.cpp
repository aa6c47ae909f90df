// The attention layer kinds of the graph (registry_attention.cpp): MultiheadAttention and
// TransformerEncoder infer shapes and name what does not fit (num_heads that do not divide the
// width, a width other than the input's), have PyTorch's parameter names (a 2-layer
// nn.TransformerEncoder's state_dict keys, written out below from PyTorch 1.13) and exact
// parameter counts, count FLOPs as the kinds they are made of do, honour lengths and the causal
// mask, run forward and backward, and the bundled Transformer example loads, analyses and trains.
#include "test_support.h"

#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/graph/analysis.h>
#include <myelin/graph/build.h>
#include <myelin/graph/model_spec.h>
#include <myelin/graph/registry.h>
#include <myelin/io/project.h>
#include <myelin/nn/loss.h>
#include <myelin/optim/optim.h>
#include <myelin/tensor.h>

#include "../support/graph_problems.h"

#include <QTest>

#include <cmath>

using namespace myelin;
using namespace myelin::graph;

namespace {

using I = int64_t;

// Input float [T, width] -> `kind` with `attrs` -> Output.
ModelSpec single_layer(const char* kind, Attrs attrs, int64_t steps = 5, int64_t width = 16) {
    ModelSpec spec;
    NodeId in = spec.add_node("Input", "x", {{"shape", std::vector<int64_t>{steps, width}}});
    NodeId layer = spec.add_node(kind, "layer", std::move(attrs));
    NodeId out = spec.add_node("Output");
    spec.connect(in, layer);
    spec.connect(layer, out);
    return spec;
}

// Tokens [T] -> Embedding(20, 16) -> PositionalEncoding -> TransformerEncoder [<- lengths] ->
// SequenceMeanPool [<- lengths] -> Linear(16, 3) -> Output; without lengths when `masked` is false.
ModelSpec encoder_classifier(bool masked, int64_t steps = 6) {
    ModelSpec spec;
    const I ports = masked ? 2 : 1;
    NodeId in =
        spec.add_node("Input", "tokens",
                      {{"shape", std::vector<int64_t>{steps}}, {"dtype", std::string("int64")}});
    NodeId emb =
        spec.add_node("Embedding", "embed",
                      {{"num_embeddings", I(20)}, {"embedding_dim", I(16)}, {"padding_idx", I(0)}});
    NodeId pos = spec.add_node("PositionalEncoding", "position",
                               {{"d_model", I(16)}, {"max_len", I(8)}, {"dropout", 0.0}});
    NodeId enc = spec.add_node("TransformerEncoder", "encoder",
                               {{"num_layers", I(2)},
                                {"d_model", I(16)},
                                {"nhead", I(4)},
                                {"dim_feedforward", I(32)},
                                {"dropout", 0.0},
                                {"num_inputs", ports}});
    NodeId pool = spec.add_node("SequenceMeanPool", "pool", {{"num_inputs", ports}});
    NodeId head = spec.add_node("Linear", "head", {{"in_features", I(16)}, {"out_features", I(3)}});
    NodeId out = spec.add_node("Output");
    spec.connect(in, emb);
    spec.connect(emb, pos);
    spec.connect(pos, enc, 0);
    spec.connect(enc, pool, 0);
    spec.connect(pool, head);
    spec.connect(head, out);
    if (masked) {
        NodeId lengths = spec.add_node("PaddingLengths", "lengths");
        spec.connect(in, lengths);
        spec.connect(lengths, enc, 1);
        spec.connect(lengths, pool, 1);
    }
    return spec;
}

// Two padded token rows: lengths 4 and 6 (zeros are padding).
Tensor padded_tokens() {
    return from_vector(std::vector<int64_t>{3, 1, 4, 1, 0, 0, 5, 9, 2, 6, 5, 3}, Dims{2, 6});
}

// The id of the node called `name` and its index in spec.nodes.
std::pair<NodeId, size_t> node_named(const ModelSpec& spec, const std::string& name) {
    for (size_t i = 0; i < spec.nodes.size(); ++i)
        if (spec.nodes[i].name == name) return {spec.nodes[i].id, i};
    return {-1, 0};
}

double flops_of(const char* kind, const Attrs& given, const TensorType& input) {
    const LayerKind& k = layer_kind(kind);
    const Attrs a = with_defaults(k.attrs, given);
    const std::vector<TensorType> in{input};
    return k.flops(a, in, k.infer(a, in));
}

} // namespace

class TestGraphAttention : public QObject {
    Q_OBJECT

  private slots:
    void shapesAreInferred();
    void problemsNameTheMisfit();
    void parameterNamesArePyTorchs();
    void flopsAddUpFromTheParts();
    void lengthsIgnorePadding();
    void causalMaskHidesLaterSteps();
    void forwardAndBackwardRun();
    void weightsPortShowsWhereStepsLook();
    void transformerExampleTrains();
};

void TestGraphAttention::shapesAreInferred() {
    for (const char* kind : {"MultiheadAttention", "TransformerEncoder"}) {
        const Attrs attrs = std::string(kind) == "MultiheadAttention"
                                ? Attrs{{"embed_dim", I(16)}, {"num_heads", I(4)}}
                                : Attrs{{"d_model", I(16)}, {"nhead", I(4)}};
        ModelSpec spec = single_layer(kind, attrs);
        Analysis a = analyze(spec, 3);
        QVERIFY2(a.ok(), qPrintable(problems_of(spec, a)));
        QCOMPARE(a.nodes[1].output->shape, (Dims{3, 5, 16}));
        QVERIFY(a.nodes[1].params > 0);
        QVERIFY(a.nodes[1].flops > 0);
    }
    // With lengths from the tokens: both kinds have the second port.
    ModelSpec spec = encoder_classifier(true);
    Analysis a = analyze(spec, 2);
    QVERIFY2(a.ok(), qPrintable(problems_of(spec, a)));
    QCOMPARE(a.nodes[node_named(spec, "encoder").second].output->shape, (Dims{2, 6, 16}));
}

void TestGraphAttention::problemsNameTheMisfit() {
    ModelSpec heads =
        single_layer("MultiheadAttention", {{"embed_dim", I(16)}, {"num_heads", I(3)}});
    QVERIFY2(
        problems_of(heads, analyze(heads)).contains("num_heads 3 does not divide embed_dim 16"),
        qPrintable(problems_of(heads, analyze(heads))));
    ModelSpec nhead = single_layer("TransformerEncoder", {{"d_model", I(16)}, {"nhead", I(5)}});
    QVERIFY2(problems_of(nhead, analyze(nhead)).contains("nhead 5 does not divide d_model 16"),
             qPrintable(problems_of(nhead, analyze(nhead))));
    // The problem is on the layer's node.
    const Analysis a = analyze(nhead);
    QCOMPARE(a.problems.size(), size_t(1));
    QCOMPARE(a.problems[0].node, node_named(nhead, "layer").first);

    ModelSpec width = single_layer("MultiheadAttention", {{"embed_dim", I(32)}});
    QVERIFY2(problems_of(width, analyze(width))
                 .contains("embed_dim is 32 but the input's last "
                           "dimension is 16"),
             qPrintable(problems_of(width, analyze(width))));
    QVERIFY(problems_of(width, analyze(width)).contains("set embed_dim to 16"));

    // Tokens straight in: an Embedding is missing.
    ModelSpec tokens;
    NodeId in = tokens.add_node(
        "Input", "", {{"shape", std::vector<int64_t>{6}}, {"dtype", std::string("int64")}});
    NodeId enc = tokens.add_node("TransformerEncoder");
    NodeId out = tokens.add_node("Output");
    tokens.connect(in, enc);
    tokens.connect(enc, out);
    QVERIFY2(problems_of(tokens, analyze(tokens)).contains("tokens need an Embedding first"),
             qPrintable(problems_of(tokens, analyze(tokens))));
}

void TestGraphAttention::parameterNamesArePyTorchs() {
    // torch.nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, batch_first=True), 2,
    // norm=nn.LayerNorm(16)).state_dict(), PyTorch 1.13.
    const std::vector<std::pair<std::string, Dims>> expected = {
        {"layers.0.self_attn.in_proj_weight", {48, 16}},
        {"layers.0.self_attn.in_proj_bias", {48}},
        {"layers.0.self_attn.out_proj.weight", {16, 16}},
        {"layers.0.self_attn.out_proj.bias", {16}},
        {"layers.0.linear1.weight", {32, 16}},
        {"layers.0.linear1.bias", {32}},
        {"layers.0.linear2.weight", {16, 32}},
        {"layers.0.linear2.bias", {16}},
        {"layers.0.norm1.weight", {16}},
        {"layers.0.norm1.bias", {16}},
        {"layers.0.norm2.weight", {16}},
        {"layers.0.norm2.bias", {16}},
        {"layers.1.self_attn.in_proj_weight", {48, 16}},
        {"layers.1.self_attn.in_proj_bias", {48}},
        {"layers.1.self_attn.out_proj.weight", {16, 16}},
        {"layers.1.self_attn.out_proj.bias", {16}},
        {"layers.1.linear1.weight", {32, 16}},
        {"layers.1.linear1.bias", {32}},
        {"layers.1.linear2.weight", {16, 32}},
        {"layers.1.linear2.bias", {16}},
        {"layers.1.norm1.weight", {16}},
        {"layers.1.norm1.bias", {16}},
        {"layers.1.norm2.weight", {16}},
        {"layers.1.norm2.bias", {16}},
        {"norm.weight", {16}},
        {"norm.bias", {16}},
    };
    const LayerKind& encoder = layer_kind("TransformerEncoder");
    const Attrs attrs = with_defaults(encoder.attrs, {{"num_layers", I(2)},
                                                      {"d_model", I(16)},
                                                      {"nhead", I(4)},
                                                      {"dim_feedforward", I(32)},
                                                      {"norm", true}});
    auto module = encoder.build(attrs);
    const nn::StateDict state = module->state_dict();
    QCOMPARE(state.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        QCOMPARE(state[i].first, expected[i].first);
        QCOMPARE(state[i].second.sizes(), expected[i].second);
    }
    QCOMPARE(encoder.param_count(attrs), I(4480)); // sum(p.numel()) in PyTorch
    QCOMPARE(module->num_parameters(), encoder.param_count(attrs));
    // Without the final norm: two fewer tensors.
    const Attrs plain = with_defaults(encoder.attrs, {{"d_model", I(16)}, {"nhead", I(4)}});
    QCOMPARE(encoder.build(plain)->num_parameters(), encoder.param_count(plain));

    // torch.nn.MultiheadAttention(16, 4, batch_first=True): 1088 parameters.
    const LayerKind& attention = layer_kind("MultiheadAttention");
    for (bool bias : {true, false}) {
        const Attrs a = with_defaults(attention.attrs,
                                      {{"embed_dim", I(16)}, {"num_heads", I(4)}, {"bias", bias}});
        auto mha = attention.build(a);
        std::vector<std::string> names;
        for (const auto& [name, value] : mha->state_dict())
            names.push_back(name);
        const std::vector<std::string> want =
            bias ? std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight",
                                            "out_proj.bias"}
                 : std::vector<std::string>{"in_proj_weight", "out_proj.weight"};
        QCOMPARE(names, want);
        QCOMPARE(mha->num_parameters(), attention.param_count(a));
        if (bias) QCOMPARE(attention.param_count(a), I(1088));
    }
}

void TestGraphAttention::flopsAddUpFromTheParts() {
    // One encoder layer costs its attention plus what the kinds of its other parts count:
    // linear1, the activation, linear2, two residual additions and two LayerNorms.
    const TensorType x{Dims{2, 7, 16}, DType::Float32};
    const TensorType hidden{Dims{2, 7, 32}, DType::Float32};
    for (const char* activation : {"relu", "gelu"}) {
        const double attention =
            flops_of("MultiheadAttention", {{"embed_dim", I(16)}, {"num_heads", I(4)}}, x);
        const double parts =
            flops_of("Linear", {{"in_features", I(16)}, {"out_features", I(32)}}, x) +
            flops_of(std::string(activation) == "relu" ? "ReLU" : "GELU", {}, hidden) +
            flops_of("Linear", {{"in_features", I(32)}, {"out_features", I(16)}}, hidden) +
            2.0 * double(x.shape.numel()) +
            2.0 * flops_of("LayerNorm", {{"normalized_shape", std::vector<int64_t>{16}}}, x);
        const Attrs one = {{"num_layers", I(1)},
                           {"d_model", I(16)},
                           {"nhead", I(4)},
                           {"dim_feedforward", I(32)},
                           {"activation", std::string(activation)}};
        QCOMPARE(flops_of("TransformerEncoder", one, x), attention + parts);
        // The single-layer kind counts the same layer the same way.
        Attrs layer = one;
        layer.erase("num_layers");
        QCOMPARE(flops_of("TransformerEncoderLayer", layer, x), attention + parts);
        Attrs three = one;
        three.set("num_layers", I(3));
        three.set("norm", true);
        const double norm =
            flops_of("LayerNorm", {{"normalized_shape", std::vector<int64_t>{16}}}, x);
        QCOMPARE(flops_of("TransformerEncoder", three, x), 3 * (attention + parts) + norm);
    }
    // The attention: q, k, v and output projections (4 Linear(16, 16)), scores and weighted sum
    // (2 x 2 T E per step), softmax (5 per score, N H T^2 scores).
    const double projections =
        4 * flops_of("Linear", {{"in_features", I(16)}, {"out_features", I(16)}}, x);
    QCOMPARE(flops_of("MultiheadAttention", {{"embed_dim", I(16)}, {"num_heads", I(4)}}, x),
             projections + 2.0 * 2 * 7 * (2 * 7 * 16) + 5.0 * 2 * 4 * 7 * 7);
}

void TestGraphAttention::lengthsIgnorePadding() {
    // The padded row of the masked model equals the same row trimmed to its 4 tokens; the full
    // row equals the unmasked model's.
    auto masked = build(encoder_classifier(true));
    auto plain = build(encoder_classifier(false));
    auto trimmed = build(encoder_classifier(false, 4));
    plain->load_state_dict(masked->state_dict());
    trimmed->load_state_dict(masked->state_dict());
    for (auto* m : {masked.get(), plain.get(), trimmed.get()})
        m->eval();
    Tensor tokens = padded_tokens();
    Tensor y_masked = (*masked)(TensorList{tokens});
    Tensor y_plain = (*plain)(TensorList{tokens});
    QCOMPARE(y_masked.sizes(), (Dims{2, 3}));
    QVERIFY(allclose(y_masked.select(0, 1), y_plain.select(0, 1), 1e-5, 1e-6));
    QVERIFY(!allclose(y_masked.select(0, 0), y_plain.select(0, 0), 1e-5, 1e-6));
    Tensor short_row = tokens.select(0, 0).slice(0, 0, 4).reshape(Dims{1, 4});
    QVERIFY(allclose((*trimmed)(TensorList{short_row}).select(0, 0), y_masked.select(0, 0), 1e-5,
                     1e-5));
}

void TestGraphAttention::causalMaskHidesLaterSteps() {
    for (const char* kind : {"MultiheadAttention", "TransformerEncoder"}) {
        const LayerKind& k = layer_kind(kind);
        Attrs given = std::string(kind) == "MultiheadAttention"
                          ? Attrs{{"embed_dim", I(8)}, {"num_heads", I(2)}}
                          : Attrs{{"d_model", I(8)}, {"nhead", I(2)}, {"dropout", 0.0}};
        given.set("causal", true);
        auto causal = k.build(with_defaults(k.attrs, given));
        given.set("causal", false);
        auto full = k.build(with_defaults(k.attrs, given));
        full->load_state_dict(causal->state_dict());
        causal->eval();
        full->eval();
        Tensor x = randn(Dims{2, 5, 8});
        Tensor changed = x.clone();
        changed.select(1, 4).fill_(3.0); // only the last step differs
        Tensor a = (*causal)(TensorList{x}), b = (*causal)(TensorList{changed});
        QVERIFY2(allclose(a.slice(1, 0, 4), b.slice(1, 0, 4), 1e-5, 1e-6), kind);
        QVERIFY2(!allclose(a.select(1, 4), b.select(1, 4), 1e-5, 1e-6), kind);
        // Without the mask every step sees the change; step 0 attends to itself only.
        Tensor c = (*full)(TensorList{x}), d = (*full)(TensorList{changed});
        QVERIFY2(!allclose(c.select(1, 0), d.select(1, 0), 1e-5, 1e-6), kind);
        QVERIFY2(!allclose(a.select(1, 0), c.select(1, 0), 1e-5, 1e-6), kind);
    }
}

void TestGraphAttention::forwardAndBackwardRun() {
    ModelSpec spec = encoder_classifier(true);
    Analysis a = analyze(spec, 2);
    QVERIFY2(a.ok(), qPrintable(problems_of(spec, a)));
    auto model = build(spec);
    QCOMPARE(a.total_params, model->num_parameters());
    Tensor y = (*model)(TensorList{padded_tokens()});
    nn::functional::cross_entropy(y, from_vector(std::vector<int64_t>{0, 2}, Dims{2})).backward();
    for (const auto& [name, p] : model->named_parameters()) {
        QVERIFY2(p.grad().defined(), name.c_str());
        QVERIFY2(isfinite(p.grad()).to(DType::Float64).sum().item() == double(p.grad().numel()),
                 name.c_str());
    }
    // Every layer of the encoder learns: no parameter's gradient is all zero (padding_idx's
    // embedding row aside, the embedding as a whole too).
    for (const auto& [name, p] : model->named_parameters())
        QVERIFY2(p.grad().abs().sum().item() > 0, name.c_str());
}

// Tokens [6] -> Embedding(20, 8) -> MultiheadAttention(8, 2, lengths, `attrs`) -> Output from
// output port `port` (1: the weights).
ModelSpec attention_weights_model(Attrs attrs, int port = 1) {
    ModelSpec spec;
    NodeId in = spec.add_node(
        "Input", "tokens", {{"shape", std::vector<int64_t>{6}}, {"dtype", std::string("int64")}});
    NodeId emb =
        spec.add_node("Embedding", "embed",
                      {{"num_embeddings", I(20)}, {"embedding_dim", I(8)}, {"padding_idx", I(0)}});
    NodeId lengths = spec.add_node("PaddingLengths", "lengths");
    attrs.set("embed_dim", I(8));
    attrs.set("num_heads", I(2));
    attrs.set("num_inputs", I(2));
    NodeId attention = spec.add_node("MultiheadAttention", "attention", std::move(attrs));
    NodeId out = spec.add_node("Output");
    spec.connect(in, emb);
    spec.connect(in, lengths);
    spec.connect(emb, attention, 0);
    spec.connect(lengths, attention, 1);
    spec.connect(attention, out, 0, port);
    return spec;
}

void TestGraphAttention::weightsPortShowsWhereStepsLook() {
    // The port exists with need_weights only; averaged [N, T, T] or per head [N, H, T, T].
    ModelSpec averaged = attention_weights_model({{"need_weights", true}, {"causal", true}});
    const auto [attention, index] = node_named(averaged, "attention");
    QCOMPARE(output_port_names(averaged.node(attention)),
             (std::vector<std::string>{"output", "weights"}));
    Analysis a = analyze(averaged, 2);
    QVERIFY2(a.ok(), qPrintable(problems_of(averaged, a)));
    QCOMPARE(a.nodes[index].outputs.size(), size_t(2));
    QCOMPARE(a.nodes[index].outputs[0].shape, (Dims{2, 6, 8}));
    QCOMPARE(a.nodes[index].outputs[1].shape, (Dims{2, 6, 6}));
    ModelSpec per_head = attention_weights_model(
        {{"need_weights", true}, {"average_attn_weights", false}, {"causal", true}});
    Analysis h = analyze(per_head, 2);
    QVERIFY2(h.ok(), qPrintable(problems_of(per_head, h)));
    QCOMPARE(h.nodes[index].outputs[1].shape, (Dims{2, 2, 6, 6}));
    ModelSpec without = attention_weights_model({});
    QCOMPARE(output_port_names(without.node(attention)), (std::vector<std::string>{"output"}));
    QVERIFY2(problems_of(without, analyze(without)).contains("no such output port"),
             qPrintable(problems_of(without, analyze(without))));

    // Each row is a distribution over the keys the step may see: none after it (causal), none
    // at or after the sequence's length (padding).
    auto model = build(averaged);
    auto heads = build(per_head);
    heads->load_state_dict(model->state_dict());
    const Tensor tokens = padded_tokens(); // lengths 4 and 6
    const Tensor w = (*model)(TensorList{tokens});
    QCOMPARE(w.sizes(), (Dims{2, 6, 6}));
    const std::vector<float> v = w.contiguous().to_vector<float>();
    const int64_t lengths[] = {4, 6};
    for (int64_t b = 0; b < 2; ++b)
        for (int64_t i = 0; i < 6; ++i) {
            double sum = 0;
            for (int64_t j = 0; j < 6; ++j) {
                const float x = v[size_t((b * 6 + i) * 6 + j)];
                sum += x;
                if (j > i || j >= lengths[b])
                    QVERIFY2(x == 0.0f,
                             qPrintable(
                                 QString("w[%1,%2,%3] = %4").arg(b).arg(i).arg(j).arg(double(x))));
            }
            QVERIFY(std::abs(sum - 1.0) < 1e-5);
        }
    // The per-head weights average to the averaged ones.
    const Tensor per = (*heads)(TensorList{tokens});
    QCOMPARE(per.sizes(), (Dims{2, 2, 6, 6}));
    QVERIFY(allclose(per.mean(Dims{1}), w, 1e-5, 1e-6));

    // Port 0 beside the weights is the attention output of the fused path.
    ModelSpec output_only = attention_weights_model({{"causal", true}}, 0);
    ModelSpec output_with_weights =
        attention_weights_model({{"need_weights", true}, {"causal", true}}, 0);
    auto fused = build(output_only);
    auto unfused = build(output_with_weights);
    fused->load_state_dict(model->state_dict());
    unfused->load_state_dict(model->state_dict());
    QVERIFY(allclose((*fused)(TensorList{tokens}), (*unfused)(TensorList{tokens}), 1e-5, 1e-6));

    // The weights are differentiable: a loss on them reaches the query and key projections.
    Tensor loss = ((*model)(TensorList{tokens}) * randn(Dims{2, 6, 6})).sum();
    loss.backward();
    const Tensor g = model->named_parameters().at(1).second.grad(); // attention.in_proj_weight
    QCOMPARE(model->named_parameters().at(1).first, std::string("attention.in_proj_weight"));
    QVERIFY(g.defined());
    QVERIFY(g.narrow(0, 0, 16).abs().sum().item() > 0);  // W_q and W_k
    QVERIFY(g.narrow(0, 16, 8).abs().sum().item() == 0); // W_v does not change the weights
}

void TestGraphAttention::transformerExampleTrains() {
    const io::Project project =
        io::load_project(MYELIN_SOURCE_DIR "/resources/examples/word_language_transformer.myelin");
    Analysis a = analyze(project.model, 4);
    QVERIFY2(a.ok() && a.problems.empty(), qPrintable(problems_of(project.model, a)));
    const NodeId encoder = node_named(project.model, "encoder").first;
    QVERIFY(encoder >= 0);
    QCOMPARE(project.model.node(encoder).kind, std::string("TransformerEncoder"));
    auto model = build(project.model);
    QCOMPARE(a.total_params, model->num_parameters());
    bool has_attention = false;
    for (const auto& [name, p] : model->named_parameters())
        has_attention = has_attention || name == "encoder.layers.1.self_attn.in_proj_weight";
    QVERIFY(has_attention);

    // A few Adam steps on one fixed batch of padded words: the loss falls.
    Generator gen(7);
    Tensor tokens = randint(2, 60, Dims{16, 24}, DType::Int64, &gen);
    std::vector<int64_t> ids = tokens.to_vector<int64_t>(), labels;
    for (int64_t r = 0; r < 16; ++r) {
        for (int64_t t = 3 + r; t < 24; ++t) // lengths 3..18
            ids[size_t(r * 24 + t)] = 0;
        labels.push_back(r % 8);
    }
    tokens = from_vector(ids, Dims{16, 24});
    const Tensor target = from_vector(labels, Dims{16});
    optim::Adam adam(model->parameters(), optim::AdamOptions{.lr = 3e-3});
    double first = 0, last = 0;
    for (int step = 0; step < 12; ++step) {
        adam.zero_grad();
        Tensor loss = nn::functional::cross_entropy((*model)(TensorList{tokens}), target);
        loss.backward();
        adam.step();
        (step == 0 ? first : last) = loss.item();
        QVERIFY(std::isfinite(loss.item()));
    }
    QVERIFY2(last < 0.7 * first, qPrintable(QString("loss %1 -> %2").arg(first).arg(last)));
}

QTEST_GUILESS_MAIN(TestGraphAttention)
#include "test_graph_attention.moc"
