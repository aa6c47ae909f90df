// Model graphs: the layer registry, validation (every structural problem on the right node and
// port), shape inference on every layer kind checked against the built module actually running,
// the failing cases with their messages, and build() — PyTorch's nn.Sequential state_dict names
// for unnamed chains, node names otherwise, execution order, freezing and hooks.
#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/graph/analysis.h>
#include <myelin/graph/build.h>
#include <myelin/graph/registry.h>
#include <myelin/io/project.h>
#include <myelin/nn/layers.h>
#include <myelin/tensor.h>

#include <QtTest>

#include "test_support.h"

#include <set>
#include <sstream>

using namespace myelin;
using namespace myelin::graph;

namespace {

std::string example_path(const char* name) {
    return std::string(MYELIN_SOURCE_DIR) + "/resources/examples/" + name;
}

// Input(s) of the given shapes -> one node of `kind` -> Output.
struct SingleLayer {
    ModelSpec spec;
    NodeId layer = 0;
};
SingleLayer single_layer(const std::string& kind, const Attrs& attrs,
                         const std::vector<std::vector<int64_t>>& input_shapes,
                         const std::string& input_dtype = "float32") {
    SingleLayer s;
    std::vector<NodeId> inputs;
    for (const auto& shape : input_shapes)
        inputs.push_back(s.spec.add_node("Input", "", {{"shape", shape}, {"dtype", input_dtype}}));
    s.layer = s.spec.add_node(kind, "", attrs);
    for (size_t i = 0; i < inputs.size(); ++i)
        s.spec.connect(inputs[i], s.layer, int(i));
    NodeId out = s.spec.add_node("Output");
    s.spec.connect(s.layer, out);
    return s;
}

bool has_problem(const Analysis& a, NodeId node, const std::string& needle, int port = -2) {
    for (const auto& p : a.problems)
        if (p.node == node && (port == -2 || p.port == port) &&
            p.message.find(needle) != std::string::npos)
            return true;
    return false;
}

QString all_problems(const ModelSpec& spec, const Analysis& a) {
    QString out;
    for (const auto& p : a.problems)
        out += QString::fromStdString(describe(spec, p)) + "\n";
    return out;
}

struct KindCase {
    const char* kind;
    Attrs attrs;
    std::vector<std::vector<int64_t>> inputs; // without batch
    const char* dtype = "float32";
};

// At least one working configuration of every kind (and the interesting options).
std::vector<KindCase> kind_cases() {
    using V = std::vector<int64_t>;
    using I = int64_t;
    return {
        {"Linear", {}, {{128}}},
        {"Linear",
         {{"in_features", int64_t(5)}, {"out_features", int64_t(3)}, {"bias", false}},
         {{4, 5}}},
        {"Bilinear", {}, {{16}, {16}}},
        {"Conv1d", {}, {{1, 20}}},
        {"Conv1d",
         {{"in_channels", int64_t(4)},
          {"groups", int64_t(2)},
          {"same_padding", true},
          {"kernel_size", int64_t(5)}},
         {{4, 9}}},
        {"Conv2d", {}, {{1, 12, 12}}},
        {"Conv2d",
         {{"in_channels", int64_t(2)},
          {"out_channels", int64_t(4)},
          {"kernel_size", V{3, 2}},
          {"stride", V{2, 1}},
          {"padding", V{1, 0}},
          {"dilation", V{1, 2}},
          {"groups", int64_t(2)}},
         {{2, 9, 8}}},
        {"Conv2d", {{"same_padding", true}, {"kernel_size", int64_t(4)}}, {{1, 7, 6}}},
        {"ConvTranspose2d", {}, {{16, 5, 5}}},
        {"ConvTranspose2d",
         {{"in_channels", int64_t(4)},
          {"out_channels", int64_t(2)},
          {"kernel_size", int64_t(3)},
          {"stride", int64_t(2)},
          {"padding", int64_t(1)},
          {"output_padding", int64_t(1)}},
         {{4, 4, 3}}},
        {"MaxPool2d", {}, {{3, 8, 8}}},
        {"MaxPool2d",
         {{"kernel_size", int64_t(3)},
          {"stride", int64_t(2)},
          {"padding", int64_t(1)},
          {"ceil_mode", true}},
         {{2, 7, 8}}},
        {"AvgPool2d", {}, {{3, 8, 8}}},
        {"AvgPool2d",
         {{"kernel_size", int64_t(3)},
          {"stride", int64_t(2)},
          {"padding", int64_t(1)},
          {"ceil_mode", true},
          {"count_include_pad", false}},
         {{2, 6, 5}}},
        {"AdaptiveAvgPool2d", {{"output_size", V{2, 3}}}, {{3, 7, 9}}},
        {"BatchNorm1d", {}, {{16}}},
        {"BatchNorm1d", {{"num_features", int64_t(3)}, {"momentum", std::monostate{}}}, {{3, 5}}},
        {"BatchNorm2d", {}, {{16, 4, 4}}},
        {"LayerNorm", {}, {{128}}},
        {"LayerNorm", {{"normalized_shape", V{3, 4}}}, {{2, 3, 4}}},
        {"GroupNorm", {}, {{16, 3, 3}}},
        {"Dropout", {}, {{10}}},
        {"Dropout2d", {}, {{4, 5, 5}}},
        {"Embedding",
         {{"num_embeddings", int64_t(10)}, {"padding_idx", int64_t(0)}},
         {{6}},
         "int64"},
        {"Flatten", {}, {{2, 3, 4}}},
        {"Flatten", {{"start_dim", int64_t(2)}}, {{2, 3, 4}}},
        {"Unflatten", {}, {{784}}},
        {"Unflatten", {{"unflattened_size", V{2, -1}}}, {{6, 5}}},
        {"Identity", {}, {{5}}},
        {"Upsample", {}, {{2, 3, 3}}},
        {"ReLU", {}, {{3, 5}}},
        {"ReLU6", {}, {{3, 5}}},
        {"LeakyReLU", {{"negative_slope", 0.2}}, {{3, 5}}},
        {"PReLU", {}, {{3, 5}}},
        {"PReLU", {{"num_parameters", int64_t(3)}}, {{3, 5}}},
        {"ELU", {}, {{3, 5}}},
        {"GELU", {{"approximate", std::string("tanh")}}, {{3, 5}}},
        {"SiLU", {}, {{3, 5}}},
        {"Sigmoid", {}, {{3, 5}}},
        {"Tanh", {}, {{3, 5}}},
        {"Softmax", {}, {{7}}},
        {"LogSoftmax", {{"dim", int64_t(1)}}, {{7, 2}}},
        {"Softplus", {}, {{3, 5}}},
        {"Hardswish", {}, {{3, 5}}},
        {"Add", {}, {{4, 5}, {4, 5}}},
        {"Add", {{"num_inputs", int64_t(3)}}, {{4, 5}, {1, 5}, {4, 1}}},
        {"Multiply", {}, {{4, 5}, {4, 1}}},
        {"Concat", {}, {{2, 5}, {3, 5}}},
        {"Concat", {{"num_inputs", int64_t(3)}, {"dim", int64_t(-1)}}, {{2, 5}, {2, 1}, {2, 2}}},
        // Sequences [T, features] (lengths ports: test_graph_sequence).
        {"PaddingLengths", {}, {{6}}, "int64"},
        {"LSTM", {{"input_size", I(4)}, {"hidden_size", I(3)}}, {{5, 4}}},
        {"LSTM",
         {{"input_size", I(4)},
          {"hidden_size", I(3)},
          {"num_layers", I(2)},
          {"bidirectional", true},
          {"output", std::string("last")}},
         {{5, 4}}},
        {"GRU",
         {{"input_size", I(4)}, {"hidden_size", I(3)}, {"output", std::string("last")}},
         {{5, 4}}},
        {"RNN",
         {{"input_size", I(4)},
          {"hidden_size", I(3)},
          {"bias", false},
          {"nonlinearity", std::string("relu")}},
         {{5, 4}}},
        {"PositionalEncoding", {{"d_model", I(4)}}, {{5, 4}}},
        {"PositionalEncoding",
         {{"d_model", I(4)}, {"encoding", std::string("learned")}, {"max_len", I(8)}},
         {{5, 4}}},
        {"TransformerEncoderLayer",
         {{"d_model", I(4)}, {"nhead", I(2)}, {"dim_feedforward", I(8)}},
         {{5, 4}}},
        {"SequenceLast", {}, {{5, 4}}},
        {"SequenceMeanPool", {}, {{5, 4}}},
        {"MultiheadAttention", {{"embed_dim", I(4)}, {"num_heads", I(2)}}, {{5, 4}}},
        {"MultiheadAttention",
         {{"embed_dim", I(4)}, {"num_heads", I(2)}, {"bias", false}, {"causal", true}},
         {{5, 4}}},
        {"TransformerEncoder",
         {{"num_layers", I(2)}, {"d_model", I(4)}, {"nhead", I(2)}, {"dim_feedforward", I(8)}},
         {{5, 4}}},
        {"TransformerEncoder",
         {{"num_layers", I(1)},
          {"d_model", I(4)},
          {"nhead", I(2)},
          {"dim_feedforward", I(8)},
          {"norm_first", true},
          {"norm", true},
          {"activation", std::string("gelu")},
          {"causal", true}},
         {{5, 4}}},
    };
}

} // namespace

class TestGraph : public QObject {
    Q_OBJECT

  private slots:
    void registryIsConsistent();
    void everyKindInfersWhatTheModuleComputes();
    void shapeErrorsNameTheExpectation();
    void structuralProblems();
    void cyclesAreReported();
    void attributesAreChecked();
    void buildGivesSequentialNames();
    void buildRunsTheDagInOrder();
    void buildResNetExample();
    void frozenNodesAndUnusedNodes();
    void hooksSeeNodeNames();
    void buildRefusesInvalidSpecs();
    void summaryTable();
};

void TestGraph::registryIsConsistent() {
    std::set<std::string> names;
    std::set<std::string> kinds_covered;
    for (const auto& c : kind_cases())
        kinds_covered.insert(c.kind);
    for (const LayerKind& k : layer_kinds()) {
        QVERIFY2(names.insert(k.name).second, k.name.c_str());
        QVERIFY2(!k.doc.empty(), k.name.c_str());
        QVERIFY(k.infer && k.param_count && k.flops);
        const bool io = k.name == "Input" || k.name == "Output";
        QVERIFY2(bool(k.build) != io, k.name.c_str());
        if (!io) QVERIFY2(kinds_covered.count(k.name), ("no test case for " + k.name).c_str());
        for (const auto& a : k.attrs) {
            QVERIFY2(a.check(a.default_value).empty(), (k.name + "." + a.name).c_str());
            QVERIFY2(!a.doc.empty(), (k.name + "." + a.name).c_str());
        }
        for (const auto& s : k.summary_attrs)
            QVERIFY2(k.attr(s), (k.name + "." + s).c_str());
        if (k.variadic) QVERIFY(k.attr("num_inputs"));
    }
    // Palette order: grouped by category.
    for (size_t i = 1; i < layer_kinds().size(); ++i)
        QVERIFY(int(layer_kinds()[i - 1].category) <= int(layer_kinds()[i].category));
    // Every layer and merge node of the nn issue is a kind.
    for (const char* kind : {"Linear",
                             "Bilinear",
                             "Conv1d",
                             "Conv2d",
                             "ConvTranspose2d",
                             "MaxPool2d",
                             "AvgPool2d",
                             "AdaptiveAvgPool2d",
                             "BatchNorm1d",
                             "BatchNorm2d",
                             "LayerNorm",
                             "GroupNorm",
                             "Dropout",
                             "Dropout2d",
                             "Embedding",
                             "Flatten",
                             "Unflatten",
                             "Identity",
                             "Upsample",
                             "ReLU",
                             "LeakyReLU",
                             "PReLU",
                             "ELU",
                             "GELU",
                             "SiLU",
                             "Sigmoid",
                             "Tanh",
                             "Softmax",
                             "LogSoftmax",
                             "Softplus",
                             "Hardswish",
                             "Add",
                             "Concat",
                             "Multiply"})
        QVERIFY2(find_layer_kind(kind), kind);
    QCOMPARE(error_of<Error>([] { layer_kind("conv2D"); }),
             QStringLiteral("unknown layer kind 'conv2D' (did you mean Conv2d?)"));
}

void TestGraph::everyKindInfersWhatTheModuleComputes() {
    const int64_t batch = 3;
    for (const KindCase& c : kind_cases()) {
        const QByteArray label =
            QByteArray(c.kind) + " " + QByteArray::fromStdString(format_value(c.inputs[0]));
        SingleLayer s = single_layer(c.kind, c.attrs, c.inputs, c.dtype);
        Analysis a = analyze(s.spec, batch);
        QVERIFY2(a.ok(), qPrintable(label + ": " + all_problems(s.spec, a)));
        size_t index = 0;
        while (s.spec.nodes[index].id != s.layer)
            ++index;
        const NodeInfo& info = a.nodes[index];
        QVERIFY2(info.output.has_value(), label.constData());

        auto model = build(s.spec);
        TensorList inputs;
        for (const auto& shape : c.inputs) {
            Dims full{batch};
            for (int64_t v : shape)
                full.push_back(v);
            inputs.push_back(std::string(c.dtype) == "int64" ? randint(0, 10, full) : randn(full));
        }
        Tensor y = (*model)(inputs);
        QVERIFY2(y.sizes() == info.output->shape,
                 qPrintable(label + ": inferred " +
                            QString::fromStdString(to_string(*info.output)) + ", module gave " +
                            QString::fromStdString(y.sizes().str())));
        QCOMPARE(y.dtype(), info.output->dtype);
        QCOMPARE(info.params, model->num_parameters());
        QCOMPARE(a.total_params, model->num_parameters());
        QVERIFY(info.flops >= 0);
        int64_t bytes = y.numel() * int64_t(dtype_size(y.dtype())); // + LSTM's h_n, c_n, ...
        for (size_t p = 1; p < info.outputs.size(); ++p)
            bytes += info.outputs[p].shape.numel() * int64_t(dtype_size(info.outputs[p].dtype));
        QCOMPARE(info.activation_bytes, bytes);
    }
}

void TestGraph::shapeErrorsNameTheExpectation() {
    struct Bad {
        const char* kind;
        Attrs attrs;
        std::vector<std::vector<int64_t>> inputs;
        const char* message;
        const char* dtype = "float32";
    };
    using V = std::vector<int64_t>;
    const std::vector<Bad> cases = {
        {"Linear",
         {{"in_features", int64_t(784)}},
         {{1, 28, 28}},
         "expected input [N, *, 784] (in_features=784), got [2, 1, 28, 28]; insert a Flatten"},
        {"Linear", {{"in_features", int64_t(10)}}, {{12}}, "got [2, 12]"},
        {"Conv2d", {}, {{784}}, "expected 4-d input [N, C, H, W], got [2, 784]"},
        {"Conv2d",
         {{"in_channels", int64_t(3)}},
         {{1, 8, 8}},
         "expected 3 channels (in_channels), got 1"},
        {"Conv2d",
         {{"kernel_size", int64_t(5)}},
         {{1, 3, 8}},
         "input height 3 is too small for kernel 5"},
        {"Conv2d",
         {{"in_channels", int64_t(3)}, {"groups", int64_t(2)}},
         {{3, 8, 8}},
         "in_channels 3 must be divisible by groups 2"},
        {"Conv2d",
         {{"same_padding", true}, {"stride", int64_t(2)}},
         {{1, 8, 8}},
         "same_padding needs stride 1"},
        {"Conv2d",
         {{"padding", int64_t(3)}, {"padding_mode", std::string("reflect")}},
         {{1, 3, 8}},
         "reflect padding of 3 needs an input height above 3, got 3"},
        {"Conv2d",
         {{"padding", int64_t(4)}, {"padding_mode", std::string("circular")}},
         {{1, 8, 3}},
         "circular padding of 4 needs an input width of at least 4, got 3"},
        {"Upsample", {{"align_corners", true}}, {{1, 4, 4}}, "align_corners needs mode bilinear"},
        {"Conv1d", {}, {{1, 2, 3}}, "expected 3-d input [N, C, L]"},
        {"Conv1d",
         {{"same_padding", true},
          {"kernel_size", int64_t(9)},
          {"padding_mode", std::string("reflect")}},
         {{1, 4}},
         "reflect padding of 4 needs an input length above 4, got 4"},
        {"MaxPool2d",
         {{"kernel_size", int64_t(2)}, {"padding", int64_t(2)}},
         {{1, 8, 8}},
         "padding 2 must be at most half of kernel_size 2"},
        {"AvgPool2d", {{"kernel_size", int64_t(4)}}, {{1, 2, 8}}, "too small"},
        {"BatchNorm2d", {{"num_features", int64_t(8)}}, {{16, 4, 4}}, "expected 8 channels"},
        {"BatchNorm1d", {}, {{16, 4, 4}}, "expected 2-d or 3-d input"},
        {"LayerNorm", {{"normalized_shape", V{4}}}, {{3, 5}}, "(normalized_shape), got [2, 3, 5]"},
        {"GroupNorm",
         {{"num_groups", int64_t(3)}},
         {{16, 2, 2}},
         "must be divisible by num_groups 3"},
        {"Embedding", {}, {{4}}, "expected int64 indices, got float32"},
        {"Dropout2d", {}, {{4}}, "expected 4-d input"},
        {"Softmax", {{"dim", int64_t(3)}}, {{4}}, "dim=3 is out of range for a 2-d input"},
        {"Flatten",
         {{"start_dim", int64_t(2)}, {"end_dim", int64_t(1)}},
         {{4, 5}},
         "start_dim must not come after end_dim"},
        {"Unflatten", {{"unflattened_size", V{3, 5}}}, {{16}}, "does not multiply to dimension 1"},
        {"PReLU",
         {{"num_parameters", int64_t(4)}},
         {{3}},
         "num_parameters=4 needs input [N, 4, *]"},
        {"Add", {}, {{4, 5}, {3, 5}}, "broadcastable shapes, got [2, 4, 5] and [2, 3, 5]"},
        {"Concat", {}, {{2, 5}, {3, 4}}, "input 1 has shape [2, 3, 4]; it must match [2, 2, 5]"},
        {"Bilinear", {}, {{16}, {8}}, "expected input2 [N, *, 16]"},
        {"ConvTranspose2d",
         {{"output_padding", int64_t(2)}},
         {{16, 3, 3}},
         "output_padding 2 must be smaller than stride or dilation"},
    };
    for (const Bad& b : cases) {
        SingleLayer s = single_layer(b.kind, b.attrs, b.inputs, b.dtype);
        Analysis a = analyze(s.spec, 2);
        QVERIFY2(has_problem(a, s.layer, b.message),
                 qPrintable(QString(b.kind) + " wanted '" + b.message + "', got:\n" +
                            all_problems(s.spec, a)));
        QCOMPARE(a.error_count(), size_t(1)); // no cascade onto the Output
        size_t index = 0;
        while (s.spec.nodes[index].id != s.layer)
            ++index;
        QVERIFY(!a.nodes[index].output);
    }
    // describe() names the node and kind.
    SingleLayer s = single_layer("Linear", {{"in_features", int64_t(3)}}, {{4}});
    s.spec.node(s.layer).name = "fc1";
    Analysis a = analyze(s.spec);
    QCOMPARE(QString::fromStdString(describe(s.spec, a.problems.at(0))),
             QStringLiteral("fc1 (Linear): expected input [N, *, 3] (in_features=3), got [1, 4]"));
}

void TestGraph::structuralProblems() {
    ModelSpec spec;
    NodeId in = spec.add_node("Input", "", {{"shape", std::vector<int64_t>{4}}});
    NodeId add = spec.add_node("Add", "sum");
    NodeId relu = spec.add_node("ReLU", "act");
    NodeId dead = spec.add_node("Tanh", "dead");
    NodeId out = spec.add_node("Output");
    spec.connect(in, add, 0); // port 1 left unconnected
    spec.connect(add, relu);
    spec.connect(in, relu); // second edge into a single port
    spec.connect(relu, out);
    spec.connect(in, dead);     // dead's output goes nowhere
    spec.connect(relu, in);     // Input takes no inputs
    spec.connect(relu, add, 5); // no such port
    spec.connect(out, dead);    // Output has no output
    spec.connect(relu, 99);     // missing node
    Analysis a = analyze(spec);
    QVERIFY(!a.ok());
    QVERIFY2(has_problem(a, add, "input is not connected", 1), qPrintable(all_problems(spec, a)));
    QVERIFY(
        has_problem(a, relu, "has more than one incoming connection (from sum and Input #1)", 0));
    QVERIFY(has_problem(a, in, "Input takes no inputs"));
    QVERIFY(has_problem(a, add, "no such input (it has 2)", 5));
    QVERIFY(has_problem(a, out, "an Output node has no output"));
    QVERIFY(has_problem(a, relu, "connected to a missing node 99"));
    bool dead_warning = false;
    for (const auto& p : a.problems)
        if (p.node == dead && p.severity == Severity::Warning &&
            p.message.find("no path to the Output") != std::string::npos)
            dead_warning = true;
    QVERIFY(dead_warning);

    ModelSpec empty;
    Analysis e = analyze(empty);
    QVERIFY(has_problem(e, -1, "the model has no Input node"));
    QVERIFY(has_problem(e, -1, "the model has no Output node"));

    ModelSpec two;
    NodeId i2 = two.add_node("Input");
    two.connect(i2, two.add_node("Output"));
    two.connect(i2, two.add_node("Output"));
    QVERIFY(has_problem(analyze(two), -1, "2 Output nodes; it must have exactly one"));

    ModelSpec names;
    NodeId n_in = names.add_node("Input", "x");
    NodeId n_a = names.add_node("Identity", "x");
    NodeId n_b = names.add_node("Identity", "1abc");
    NodeId n_c = names.add_node("Identity", "a.b");
    NodeId n_out = names.add_node("Output");
    names.connect(n_in, n_a);
    names.connect(n_a, n_b);
    names.connect(n_b, n_c);
    names.connect(n_c, n_out);
    Analysis na = analyze(names);
    QVERIFY(has_problem(na, n_a, "name 'x' is already used by another node"));
    QVERIFY(has_problem(na, n_b, "name '1abc' must start with a letter"));
    QVERIFY(has_problem(na, n_c, "name 'a.b' must start with a letter"));

    ModelSpec unknown;
    Node conv3d;
    conv3d.id = 7;
    conv3d.kind = "Conv3d";
    unknown.nodes.push_back(conv3d);
    QVERIFY(has_problem(analyze(unknown), 7, "unknown layer kind 'Conv3d'"));
}

void TestGraph::cyclesAreReported() {
    ModelSpec spec;
    NodeId in = spec.add_node("Input", "", {{"shape", std::vector<int64_t>{4}}});
    NodeId add = spec.add_node("Add", "a");
    NodeId relu = spec.add_node("ReLU", "b");
    NodeId out = spec.add_node("Output");
    spec.connect(in, add, 0);
    spec.connect(relu, add, 1);
    spec.connect(add, relu);
    spec.connect(relu, out);
    Analysis a = analyze(spec);
    QVERIFY(has_problem(a, add, "part of a cycle"));
    QVERIFY(has_problem(a, relu, "part of a cycle"));
    QVERIFY(!has_problem(a, in, "part of a cycle"));
    QCOMPARE(a.order.size(), size_t(1)); // only the Input could be ordered
}

void TestGraph::attributesAreChecked() {
    SingleLayer s = single_layer("Conv2d",
                                 {{"out_channels", int64_t(0)},
                                  {"kernel_size", std::vector<int64_t>{3, 3, 3}},
                                  {"bias", int64_t(1)}},
                                 {{1, 8, 8}});
    s.spec.node(s.layer).attrs.set("colour", std::string("red"));
    Analysis a = analyze(s.spec);
    QVERIFY2(has_problem(a, s.layer, "out_channels: must be an integer >= 1, got 0"),
             qPrintable(all_problems(s.spec, a)));
    QVERIFY(has_problem(
        a, s.layer, "kernel_size: must be an integer or a pair of integers >= 1, got [3, 3, 3]"));
    QVERIFY(has_problem(a, s.layer, "bias: must be true or false, got 1"));
    QVERIFY(has_problem(a, s.layer, "colour: unknown attribute (known: in_channels"));

    SingleLayer d = single_layer("Dropout", {{"p", 1.5}}, {{4}});
    QVERIFY(has_problem(analyze(d.spec), d.layer, "p: must be a number >= 0 and <= 1, got 1.5"));
    SingleLayer g = single_layer("GELU", {{"approximate", std::string("fast")}}, {{4}});
    QVERIFY(has_problem(analyze(g.spec), g.layer, "must be one of none, tanh, got \"fast\""));
    // Missing attributes take their defaults (specs built in code may omit them).
    SingleLayer m = single_layer("Linear", {}, {{128}});
    m.spec.node(m.layer).attrs = Attrs{{"out_features", int64_t(3)}};
    Analysis ma = analyze(m.spec);
    QVERIFY(ma.ok());
    QCOMPARE(ma.total_params, int64_t(128 * 3 + 3));
}

void TestGraph::buildGivesSequentialNames() {
    // PyTorch: nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
    //                        nn.ReLU(), nn.Linear(128, 10)).state_dict() keys and shapes.
    const std::vector<std::pair<std::string, std::vector<int64_t>>> torch_keys = {
        {"1.weight", {256, 784}}, {"1.bias", {256}},       {"3.weight", {128, 256}},
        {"3.bias", {128}},        {"5.weight", {10, 128}}, {"5.bias", {10}}};
    io::Project p = io::load_project(example_path("fashion_mlp.myelin"));
    auto model = build(p.model);
    auto sd = model->state_dict();
    QCOMPARE(sd.size(), torch_keys.size());
    for (size_t i = 0; i < sd.size(); ++i) {
        QCOMPARE(QString::fromStdString(sd[i].first), QString::fromStdString(torch_keys[i].first));
        QCOMPARE(sd[i].second.sizes().vec(), torch_keys[i].second);
    }
    // CNN of torch_baseline.py: Conv2d at 0 and 3, Linear at 7 and 9.
    io::Project cnn = io::load_project(example_path("fashion_cnn.myelin"));
    QStringList keys;
    for (const auto& [k, v] : build(cnn.model)->state_dict())
        keys << QString::fromStdString(k);
    QCOMPARE(keys, QStringList({"0.weight", "0.bias", "3.weight", "3.bias", "7.weight", "7.bias",
                                "9.weight", "9.bias"}));
}

void TestGraph::buildRunsTheDagInOrder() {
    // The graph built from the MLP example computes what an nn::Sequential with its weights does.
    io::Project p = io::load_project(example_path("fashion_mlp.myelin"));
    auto model = build(p.model);
    auto seq = std::make_shared<nn::Sequential>(
        std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(784, 256),
        std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(256, 128),
        std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(128, 10));
    QVERIFY(seq->load_state_dict(model->state_dict()).ok());
    Tensor x = randn({4, 1, 28, 28});
    Tensor a = (*model)(x), b = (*seq)(x);
    QCOMPARE(a.sizes(), Dims({4, 10}));
    QVERIFY(allclose(a, b, 0, 0));
    // A wrongly shaped model input names the declared shape.
    QCOMPARE(error_of<ShapeError>([&] {
                 (*model)(randn({4, 784}));
             }),
             QStringLiteral("model input 0: expected [N, 1, 28, 28], got [4, 784]"));
}

void TestGraph::buildResNetExample() {
    io::Project p = io::load_project(example_path("fashion_resnet.myelin"));
    Analysis a = analyze(p.model, 8);
    QVERIFY2(a.ok(), qPrintable(all_problems(p.model, a)));
    auto model = build(p.model);
    QCOMPARE(model->num_parameters(), a.total_params);
    auto sd = model->state_dict();
    QCOMPARE(QString::fromStdString(sd.front().first), QStringLiteral("stem.weight"));
    std::set<std::string> keys;
    for (const auto& [k, v] : sd)
        keys.insert(k);
    for (const char* k : {"stem_bn.weight", "stem_bn.running_mean", "stem_bn.num_batches_tracked",
                          "block1_conv1.weight", "block2_proj.weight", "block2_proj_bn.running_var",
                          "fc.weight", "fc.bias"})
        QVERIFY2(keys.count(k), k);
    QVERIFY(!keys.count("stem.bias")); // bias=False
    Tensor x = randn({8, 1, 28, 28});
    Tensor y = (*model)(x);
    QCOMPARE(y.sizes(), Dims({8, 10}));
    y.sum().backward();
    for (const auto& [name, param] : model->named_parameters())
        QVERIFY2(param.grad().defined(), name.c_str());
    // Skip connection really adds: the block output equals relu(bn2(...) + input) — checked by
    // zeroing the residual branch's last BatchNorm: the block becomes relu(input).
    model->eval();
    auto bn2 = std::dynamic_pointer_cast<nn::BatchNorm2d>(model->child("block1_bn2"));
    QVERIFY(bn2);
    {
        autograd::NoGradGuard no_grad;
        bn2->weight.zero_();
        bn2->bias.zero_();
    }
    Tensor captured_in, captured_out;
    model->child("stem_relu")
        ->register_forward_hook([&](nn::Module&, const TensorList&, const Tensor& out) {
            captured_in = out.detach();
            return Tensor();
        });
    model->child("block1_out")
        ->register_forward_hook([&](nn::Module&, const TensorList&, const Tensor& out) {
            captured_out = out.detach();
            return Tensor();
        });
    (*model)(x);
    QVERIFY(allclose(captured_out, captured_in, 0, 0)); // relu(relu(s)) == relu(s)
}

void TestGraph::frozenNodesAndUnusedNodes() {
    ModelSpec spec;
    NodeId in = spec.add_node("Input", "", {{"shape", std::vector<int64_t>{4}}});
    NodeId fc1 =
        spec.add_node("Linear", "fc1", {{"in_features", int64_t(4)}, {"out_features", int64_t(3)}});
    NodeId fc2 =
        spec.add_node("Linear", "fc2", {{"in_features", int64_t(3)}, {"out_features", int64_t(2)}});
    NodeId side = spec.add_node("Linear", "side",
                                {{"in_features", int64_t(4)}, {"out_features", int64_t(5)}});
    NodeId out = spec.add_node("Output");
    spec.connect(in, fc1);
    spec.connect(fc1, fc2);
    spec.connect(fc2, out);
    spec.connect(in, side);
    spec.node(fc1).frozen = true;
    Analysis a = analyze(spec);
    QVERIFY(a.ok()); // the unused branch is only a warning
    // Module and parameter names lead back to their nodes (a run's error names a module).
    QCOMPARE(a.node_of_module(spec, "fc2"), fc2);
    QCOMPARE(a.node_of_module(spec, "fc1.weight"), fc1);
    QCOMPARE(a.node_of_module(spec, "side.bias"), side);
    QCOMPARE(a.node_of_module(spec, "fc"), NodeId(-1));
    QCOMPARE(a.node_of_module(spec, "fc10"), NodeId(-1));
    QCOMPARE(a.node_of_module(spec, ""), NodeId(-1));
    QCOMPARE(a.total_params, int64_t(15 + 8 + 25));
    QCOMPARE(a.trainable_params, int64_t(8 + 25));
    auto model = build(spec);
    QVERIFY(!model->child("fc1")->param("weight").requires_grad());
    QVERIFY(model->child("fc2")->param("weight").requires_grad());
    QCOMPARE(model->num_parameters(true), int64_t(8 + 25));
    int side_calls = 0;
    model->child("side")->register_forward_hook([&](nn::Module&, const TensorList&, const Tensor&) {
        ++side_calls;
        return Tensor();
    });
    QCOMPARE((*model)(randn({2, 4})).sizes(), Dims({2, 2}));
    QCOMPARE(side_calls, 0); // not on the path to the Output: not executed
    QCOMPARE(model->node_of_module("fc2"), fc2);
    QCOMPARE(QString::fromStdString(model->module_name(fc1)), QStringLiteral("fc1"));
    QCOMPARE(model->node_of_module("nope"), NodeId(-1));
}

void TestGraph::hooksSeeNodeNames() {
    io::Project p = io::load_project(example_path("fashion_cnn.myelin"));
    auto model = build(p.model);
    std::vector<std::string> seen;
    for (const auto& [name, child] : model->named_children())
        child->register_forward_hook(
            [&seen, name = name](nn::Module&, const TensorList&, const Tensor&) {
                seen.push_back(name);
                return Tensor();
            });
    (*model)(randn({2, 1, 28, 28}));
    QCOMPARE(seen, (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}));
}

void TestGraph::buildRefusesInvalidSpecs() {
    SingleLayer s = single_layer("Linear", {{"in_features", int64_t(3)}}, {{4}});
    QString message = error_of<Error>([&] { build(s.spec); });
    QVERIFY2(
        message.startsWith("the model cannot be built:\n  Linear #2: expected input [N, *, 3]"),
        qPrintable(message));
}

void TestGraph::summaryTable() {
    io::Project p = io::load_project(example_path("fashion_cnn.myelin"));
    Analysis a = analyze(p.model, 128);
    QCOMPARE(a.total_params, int64_t(421642));
    // Per sample: conv1 2*28*28*32*9, conv2 2*14*14*64*288, fc 2*3136*128 + 2*128*10 (+ cheap ops).
    double macs2 = 2.0 * (28 * 28 * 32 * 9 + 14 * 14 * 64 * 288 + 3136 * 128 + 128 * 10);
    QVERIFY(a.total_flops > 128 * macs2 && a.total_flops < 128 * macs2 * 1.05);
    std::string table = format_summary(p.model, a);
    bool fc_row = false;
    std::istringstream lines(table);
    for (std::string line; std::getline(lines, line);)
        fc_row = fc_row || (line.starts_with("7 ") && line.find("Linear") != std::string::npos &&
                            line.find("[128, 128]") != std::string::npos &&
                            line.find("401,536") != std::string::npos);
    QVERIFY2(fc_row, table.c_str());
    QVERIFY(table.find("421,642 parameters (421,642 trainable)") != std::string::npos);
    QCOMPARE(format_count(1234567), std::string("1,234,567"));
    QCOMPARE(format_si(2.5e9, "FLOPs"), std::string("2.50 GFLOPs"));
}

QTEST_GUILESS_MAIN(TestGraph)
#include "test_graph.moc"
