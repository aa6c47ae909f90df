// Layers with several output ports (LSTM: output, h_n, c_n; GRU / RNN: output, h_n): per-port
// shapes in the analysis, edges from a port that does not exist, build() routing each edge by its
// from_port (forward and backward), h_n equal to nn::LSTM's, and the project file's from_port.
#include "test_support.h"

#include <myelin/error.h>
#include <myelin/graph/analysis.h>
#include <myelin/graph/build.h>
#include <myelin/graph/model_spec.h>
#include <myelin/graph/registry.h>
#include <myelin/io/project.h>
#include <myelin/nn/recurrent.h>
#include <myelin/tensor.h>

#include "../support/graph_problems.h"

#include <QTest>

#include <fstream>
#include <sstream>

using namespace myelin;
using namespace myelin::graph;

namespace {

using I = int64_t;

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// tokens int64 [6] -> Embedding(10, 4) -> LSTM(4, 3, 2 layers, bidirectional): its h_n port ->
// Linear(12, 5) "from_h"; its output port -> SequenceLast -> Linear(6, 5) "from_seq"; Add of the
// two -> Output.
struct TwoHeads {
    ModelSpec spec;
    NodeId lstm = 0, from_h = 0, add = 0;
};
TwoHeads two_heads() {
    TwoHeads t;
    ModelSpec& s = t.spec;
    NodeId in = s.add_node("Input", "tokens",
                           {{"shape", std::vector<int64_t>{6}}, {"dtype", std::string("int64")}});
    NodeId emb =
        s.add_node("Embedding", "emb", {{"num_embeddings", I(10)}, {"embedding_dim", I(4)}});
    t.lstm = s.add_node("LSTM", "lstm",
                        {{"input_size", I(4)},
                         {"hidden_size", I(3)},
                         {"num_layers", I(2)},
                         {"bidirectional", true}});
    t.from_h = s.add_node("Linear", "from_h", {{"in_features", I(12)}, {"out_features", I(5)}});
    NodeId last = s.add_node("SequenceLast", "last");
    NodeId from_seq =
        s.add_node("Linear", "from_seq", {{"in_features", I(6)}, {"out_features", I(5)}});
    t.add = s.add_node("Add", "sum");
    NodeId out = s.add_node("Output");
    s.connect(in, emb);
    s.connect(emb, t.lstm);
    s.connect(t.lstm, t.from_h, 0, 1); // h_n
    s.connect(t.lstm, last);           // output (port 0)
    s.connect(last, from_seq);
    s.connect(t.from_h, t.add, 0);
    s.connect(from_seq, t.add, 1);
    s.connect(t.add, out);
    return t;
}

size_t index_of(const ModelSpec& spec, NodeId id) {
    for (size_t i = 0; i < spec.nodes.size(); ++i)
        if (spec.nodes[i].id == id) return i;
    return spec.nodes.size();
}

Tensor tokens() {
    return from_vector(std::vector<int64_t>{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8}, Dims{2, 6});
}

// Input float [5, 4] -> `kind` -> port `port` -> Output.
ModelSpec state_only(const char* kind, int port, int64_t layers, bool bidirectional) {
    ModelSpec s;
    NodeId in = s.add_node("Input", "x", {{"shape", std::vector<int64_t>{5, 4}}});
    NodeId rnn = s.add_node(kind, "rnn",
                            {{"input_size", I(4)},
                             {"hidden_size", I(3)},
                             {"num_layers", layers},
                             {"bidirectional", bidirectional}});
    NodeId out = s.add_node("Output");
    s.connect(in, rnn);
    s.connect(rnn, out, 0, port);
    return s;
}

} // namespace

class TestGraphMultiOutput : public QObject {
    Q_OBJECT

  private slots:
    void portsAndShapes();
    void buildsRunsForwardAndBackward();
    void statesEqualTheRecurrentModule();
    void badOutputPortIsANamedProblem();
    void kindWithSeveralOutputsNeedsAShapeRule();
    void projectKeepsFromPort();
    void oneLayerStateIsTheLastOutput();
    void malformedFromPortIsRefused();
};

void TestGraphMultiOutput::portsAndShapes() {
    TwoHeads t = two_heads();
    QCOMPARE(output_port_names(t.spec.node(t.lstm)),
             (std::vector<std::string>{"output", "h_n", "c_n"}));
    QCOMPARE(output_port_names(t.spec.node(t.from_h)), (std::vector<std::string>{"output"}));
    QCOMPARE(layer_kind("GRU").outputs, (std::vector<std::string>{"output", "h_n"}));
    QCOMPARE(layer_kind("RNN").outputs, (std::vector<std::string>{"output", "h_n"}));
    QVERIFY(output_port_names(t.spec.node(t.spec.nodes.back().id)).empty()); // Output

    Analysis a = analyze(t.spec, 2);
    // The c_n port is not used: no warning about it (PyTorch code drops states all the time).
    QVERIFY2(a.problems.empty(), qPrintable(problems_of(t.spec, a)));
    const NodeInfo& lstm = a.nodes[index_of(t.spec, t.lstm)];
    QCOMPARE(lstm.outputs.size(), size_t(3));
    QCOMPARE(lstm.output->shape, (Dims{2, 6, 6}));
    QCOMPARE(lstm.output_type(1)->shape, (Dims{2, 12}));
    QCOMPARE(lstm.output_type(2)->shape, (Dims{2, 12}));
    QVERIFY(lstm.output_type(3) == nullptr);
    QCOMPARE(a.nodes[index_of(t.spec, t.from_h)].output->shape, (Dims{2, 5}));
    QVERIFY(a.nodes[index_of(t.spec, t.from_h)].outputs.empty()); // one port: no copy
    // Parameters and FLOPs are the layer's, whatever ports are used.
    ModelSpec seq_only = state_only("LSTM", 0, 2, true), h_only = state_only("LSTM", 1, 2, true);
    QCOMPARE(analyze(h_only).total_params, analyze(seq_only).total_params);
    QCOMPARE(analyze(h_only).total_flops, analyze(seq_only).total_flops);
    // The summary names the extra ports.
    const std::string summary = format_summary(t.spec, a);
    QVERIFY2(summary.find("[2, 6, 6] · h_n [2, 12] · c_n [2, 12]") != std::string::npos,
             summary.c_str());

    // "last" keeps its meaning on port 0; the states do not change with it.
    t.spec.node(t.lstm).attrs.set("output", std::string("last"));
    Analysis last = analyze(t.spec, 2);
    QCOMPARE(last.nodes[index_of(t.spec, t.lstm)].output->shape, (Dims{2, 6}));
    QCOMPARE(last.nodes[index_of(t.spec, t.lstm)].output_type(1)->shape, (Dims{2, 12}));
}

void TestGraphMultiOutput::buildsRunsForwardAndBackward() {
    TwoHeads t = two_heads();
    auto model = build(t.spec);
    QCOMPARE(analyze(t.spec).total_params, model->num_parameters());
    Tensor y = (*model)(TensorList{tokens()});
    QCOMPARE(y.sizes(), (Dims{2, 5}));
    y.sum().backward();
    for (const auto& [name, p] : model->named_parameters())
        QVERIFY2(p.grad().defined(), name.c_str());

    // The from_h branch is Linear(h_n): recompute it from the children.
    auto lstm = model->child("lstm");
    auto emb = model->child("emb");
    TensorList states = lstm->outputs(TensorList{(*emb)(TensorList{tokens()})});
    QCOMPARE(states.size(), size_t(3));
    Tensor h_branch = (*model->child("from_h"))(TensorList{states[1]});
    Tensor seq_branch =
        (*model->child("from_seq"))(TensorList{(*model->child("last"))(TensorList{states[0]})});
    QVERIFY(allclose(y, add(h_branch, seq_branch), 1e-5, 1e-6));
}

void TestGraphMultiOutput::statesEqualTheRecurrentModule() {
    // Port 1 (and 2 for LSTM) of the graph against nn::LSTM / GRU / RNN with the same weights:
    // PyTorch's [L*D, N, H] made batch first [N, L*D*H].
    struct Case {
        const char* kind;
        int port;
        int64_t layers;
        bool bidirectional;
    };
    for (const Case& c :
         {Case{"LSTM", 1, 2, true}, Case{"LSTM", 2, 2, true}, Case{"LSTM", 1, 1, false},
          Case{"GRU", 1, 3, true}, Case{"RNN", 1, 2, false}}) {
        const QByteArray label = QByteArray(c.kind) + " port " + QByteArray::number(c.port);
        ModelSpec spec = state_only(c.kind, c.port, c.layers, c.bidirectional);
        Analysis a = analyze(spec, 2);
        QVERIFY2(a.ok(), qPrintable(problems_of(spec, a)));
        const int64_t directions = c.bidirectional ? 2 : 1;
        auto model = build(spec);
        model->eval();
        nn::RecurrentOptions options;
        options.num_layers = c.layers;
        options.bidirectional = c.bidirectional;
        options.batch_first = true;
        const std::string kind = c.kind;
        nn::ModulePtr reference =
            kind == "LSTM"  ? nn::ModulePtr(std::make_shared<nn::LSTM>(4, 3, options))
            : kind == "GRU" ? nn::ModulePtr(std::make_shared<nn::GRU>(4, 3, options))
                            : nn::ModulePtr(std::make_shared<nn::RNN>(4, 3, options));
        QVERIFY(reference->load_state_dict(model->child("rnn")->state_dict()).ok());
        reference->eval();
        Tensor x = randn(Dims{2, 5, 4});
        Tensor got = (*model)(TensorList{x});
        QCOMPARE(got.sizes(), (Dims{2, c.layers * directions * 3}));
        QCOMPARE(a.nodes[1].output_type(c.port)->shape, got.sizes());
        Tensor state = reference->outputs(TensorList{x})[size_t(c.port)]; // [L*D, N, H]
        Tensor expected = state.permute(Dims{1, 0, 2}).reshape(Dims{2, -1});
        QVERIFY2(allclose(got, expected, 1e-6, 1e-7), label.constData());
        // Row n, block k is the state of layer k / D, direction k % D.
        if (c.layers * directions > 1)
            QVERIFY2(allclose(got.select(0, 1).slice(0, 3, 6), state.select(0, 1).select(0, 1),
                              1e-6, 1e-7),
                     label.constData());
    }
}

void TestGraphMultiOutput::badOutputPortIsANamedProblem() {
    TwoHeads t = two_heads();
    t.spec.edges[2].from_port = 3; // lstm -> from_h from a fourth port
    Analysis a = analyze(t.spec);
    QVERIFY(!a.ok());
    const QString text = problems_of(t.spec, a);
    QVERIFY2(text.contains("lstm (LSTM), output 3: no such output port (LSTM has 3: output, h_n, "
                           "c_n), but the connection to from_h leaves from it"),
             qPrintable(text));
    QCOMPARE(a.problems.size(), size_t(1)); // from_h's input is not also "not connected"
    QCOMPARE(a.problems[0].node, t.lstm);
    QCOMPARE(a.problems[0].output_port, 3);
    QVERIFY_THROWS_EXCEPTION(Error, build(t.spec));
    // A second edge into the same input still counts the first one.
    ModelSpec twice = t.spec;
    twice.connect(twice.nodes[4].id, t.from_h); // last -> from_h
    QVERIFY2(problems_of(twice, analyze(twice))
                 .contains("from_h (Linear), input 0: has more than one incoming connection (from "
                           "lstm and last)"),
             qPrintable(problems_of(twice, analyze(twice))));

    t.spec.edges[2].from_port = -1;
    QVERIFY2(
        problems_of(t.spec, analyze(t.spec)).contains("lstm (LSTM): output port -1 does not exist"),
        qPrintable(problems_of(t.spec, analyze(t.spec))));

    // A single-output kind has port 0 only.
    TwoHeads u = two_heads();
    u.spec.edges[4].from_port = 1; // last -> from_seq
    QVERIFY2(problems_of(u.spec, analyze(u.spec))
                 .contains("last (SequenceLast), output 1: no such output port (SequenceLast has "
                           "1: output)"),
             qPrintable(problems_of(u.spec, analyze(u.spec))));

    // A problem about a named output port says its name.
    Problem p{Severity::Error, t.lstm, -1, "too large", 1};
    QCOMPARE(describe(t.spec, p), std::string("lstm (LSTM), output h_n: too large"));
}

void TestGraphMultiOutput::kindWithSeveralOutputsNeedsAShapeRule() {
    LayerKind k = layer_kind("Identity");
    k.name = "TwoWayIdentity";
    k.outputs = {"a", "b"};
    QVERIFY_THROWS_EXCEPTION(Error, check_layer_kind(k));
    try {
        check_layer_kind(k);
    } catch (const Error& e) {
        QVERIFY2(std::string(e.what()).find("infer_outputs") != std::string::npos, e.what());
    }
    k.infer_outputs = [](const Attrs&, std::span<const TensorType> in) {
        return std::vector<TensorType>{in[0], in[0]};
    };
    check_layer_kind(k); // accepted now
}

io::Project ports_project() {
    io::Project p = io::load_project(std::string(MYELIN_SOURCE_DIR) +
                                     "/resources/examples/word_language_lstm.myelin");
    p.name = "ports";
    p.model = two_heads().spec;
    return p;
}

void TestGraphMultiOutput::projectKeepsFromPort() {
    io::Project p = ports_project();
    const std::string text = io::serialize_project(p);
    QVERIFY2(text.find("\"from_port\": 1") != std::string::npos, text.c_str());
    QVERIFY2(text.find("\"format_version\": 2") != std::string::npos, text.c_str());
    io::Project back = io::parse_project(text, "ports.myelin");
    QVERIFY(back.model == p.model);
    QCOMPARE(back.model.edges[2].from_port, 1);
    QCOMPARE(QString::fromStdString(io::serialize_project(back)), QString::fromStdString(text));

    // Without an edge from a port other than 0: format 1 and no from_port key at all.
    p.model.edges[2].from_port = 0;
    p.model.node(two_heads().from_h).attrs.set("in_features", I(36));
    const std::string plain = io::serialize_project(p);
    QVERIFY(plain.find("from_port") == std::string::npos);
    QVERIFY(plain.find("\"format_version\": 1") != std::string::npos);

    // Every bundled example (written before output ports existed) stays byte for byte.
    for (const char* name :
         {"fashion_mlp.myelin", "fashion_cnn.myelin", "fashion_resnet.myelin",
          "tabular_regression.myelin", "word_language.myelin", "word_language_lstm.myelin"}) {
        const std::string path = std::string(MYELIN_SOURCE_DIR) + "/resources/examples/" + name;
        const std::string original = read_text(path);
        QVERIFY2(!original.empty(), name);
        QCOMPARE(QString::fromStdString(io::serialize_project(io::parse_project(original, name))),
                 QString::fromStdString(original));
    }
}

void TestGraphMultiOutput::oneLayerStateIsTheLastOutput() {
    // The word-language example (bidirectional 1-layer LSTM, output "last", with lengths) and the
    // same model with the Linear on h_n instead (the fuzz seed): h_n of one layer is the final
    // state of both directions, so with the same weights both give the same logits.
    const std::string root = MYELIN_SOURCE_DIR;
    io::Project last = io::load_project(root + "/resources/examples/word_language_lstm.myelin");
    io::Project h_n = io::load_project(root + "/tests/fuzz/corpus/project/lstm_h_n_port.myelin");
    QCOMPARE(h_n.format_version, 2);
    Analysis a = analyze(h_n.model, 2);
    QVERIFY2(a.ok(), qPrintable(problems_of(h_n.model, a)));
    auto expected_model = build(last.model);
    auto model = build(h_n.model);
    QVERIFY(model->load_state_dict(expected_model->state_dict()).ok());
    model->eval();
    expected_model->eval();
    std::vector<int64_t> tokens(48, 0); // row 0 full, row 1 nine tokens then padding
    for (int64_t t = 0; t < 24; ++t) {
        tokens[size_t(t)] = 1 + t % 7;
        if (t < 9) tokens[size_t(24 + t)] = 2 + t % 5;
    }
    Tensor padded = from_vector(tokens, Dims{2, 24});
    Tensor got = (*model)(TensorList{padded});
    QVERIFY(allclose(got, (*expected_model)(TensorList{padded}), 1e-5, 1e-6));
}

void TestGraphMultiOutput::malformedFromPortIsRefused() {
    io::Project p = ports_project();
    const std::string good = io::serialize_project(p);
    auto with = [&](const std::string& replacement) {
        std::string text = good;
        const std::string key = "\"from_port\": 1";
        text.replace(text.find(key), key.size(), "\"from_port\": " + replacement);
        try {
            io::parse_project(text, "p.myelin");
        } catch (const Error& e) {
            return QString::fromUtf8(e.what());
        }
        return QString();
    };
    const QString negative = with("-1"), fraction = with("1.5"), text = with("\"h_n\""),
                  beyond = with("7"), huge = with("99999999999");
    for (const QString& e : {negative, fraction, text, beyond, huge})
        QVERIFY2(e.startsWith("p.myelin:model.edges[2].from_port: "), qPrintable(e));
    QVERIFY2(negative.contains("expected an integer >= 0"), qPrintable(negative));
    QVERIFY2(fraction.contains("integer"), qPrintable(fraction));
    QVERIFY2(text.contains("integer"), qPrintable(text));
    QVERIFY2(beyond.contains("LSTM has 3 output port(s); there is no port 7"), qPrintable(beyond));
    QVERIFY2(huge.contains("there is no port 99999999999"), qPrintable(huge));

    // From a kind with one output (SequenceLast -> from_seq).
    p.model.edges[4].from_port = 1;
    try {
        io::parse_project(io::serialize_project(p), "p.myelin");
        QFAIL("a from_port beyond SequenceLast's one output was accepted");
    } catch (const Error& e) {
        QCOMPARE(QString::fromUtf8(e.what()),
                 QStringLiteral("p.myelin:model.edges[4].from_port: SequenceLast has 1 output "
                                "port(s); there is no port 1"));
    }
}

QTEST_GUILESS_MAIN(TestGraphMultiOutput)
#include "test_graph_multi_output.moc"
