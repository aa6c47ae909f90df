// ONNX import: every shipped example the exporter writes (and two models using every kind the
// importer maps back) exported with fresh weights, imported again and run: the same outputs in
// evaluation within 1e-5, the same layer kinds, PyTorch-style state_dict names. Graphs written
// here with ONNX's protobuf as PyTorch writes them (grouped, dilated Conv, BatchNormalization,
// Clip, GlobalAveragePool, Flatten, Gemm; a dynamic-batch flatten, MatMul + Add, x * sigmoid(x))
// against the numbers computed by hand. Refusals (an op without a layer, Clip(0, 6), malformed
// and truncated files) name what is wrong and write nothing; `myelin import` end to end.
#include "cli_process.h"
#include "export_test_models.h"

#include <myelin/error.h>
#include <myelin/export/import.h>
#include <myelin/io/checkpoint.h>
#include <myelin/io/safetensors.h>
#include <myelin/tensor.h>

#include <onnx/onnx_pb.h>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <random>

using namespace myelin;
using namespace export_test;

namespace {

// max |a - b| / max(1, max |a|).
double relative_difference(const Tensor& expected, const Tensor& got) {
    const Tensor a = expected.contiguous().to(DType::Float64).contiguous();
    const Tensor b = got.contiguous().to(DType::Float64).contiguous();
    if (a.sizes() != b.sizes()) return INFINITY;
    double diff = 0, scale = 1;
    for (int64_t i = 0; i < a.numel(); ++i) {
        diff = std::max(diff, std::abs(a.data<double>()[i] - b.data<double>()[i]));
        scale = std::max(scale, std::abs(a.data<double>()[i]));
    }
    return diff / scale;
}

// The imported model's output in evaluation, its weights loaded strictly.
Tensor imported_forward(const exporters::ImportedModel& m, const TensorList& inputs) {
    auto model = graph::build(m.project.model);
    model->load_state_dict(m.weights);
    model->eval();
    autograd::NoGradGuard no_grad;
    return (*model)(inputs).contiguous();
}

std::vector<std::string> layer_kinds_of(const graph::ModelSpec& spec, bool drop_identities) {
    std::vector<std::string> kinds;
    for (const graph::Node& n : spec.nodes)
        if (!drop_identities ||
            (n.kind != "Dropout" && n.kind != "Dropout2d" && n.kind != "Identity"))
            kinds.push_back(n.kind);
    std::sort(kinds.begin(), kinds.end());
    return kinds;
}

const graph::Node& node_of_kind(const graph::ModelSpec& spec, const std::string& kind) {
    for (const graph::Node& n : spec.nodes)
        if (n.kind == kind) return n;
    throw Error("no " + kind + " node");
}

const Tensor* find_weight(const nn::StateDict& state, const std::string& name) {
    for (const auto& [n, t] : state)
        if (n == name) return &t;
    return nullptr;
}

// Importable image layers: every kind the importer maps back on [N, C, H, W], with the padding
// modes (Pad in front of the Conv), 'same' padding, a residual Add, a product and a Concat.
graph::ModelSpec image_model() {
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
                            {"groups", I(2)}});
    auto dil = s.add_node("Conv2d", "dil",
                          {{"in_channels", I(8)},
                           {"out_channels", I(8)},
                           {"kernel_size", I(3)},
                           {"padding", I(2)},
                           {"dilation", I(2)},
                           {"bias", false},
                           {"padding_mode", std::string("replicate")}});
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
    auto avg = s.add_node(
        "AvgPool2d", "avg",
        {{"kernel_size", I(3)}, {"stride", I(2)}, {"padding", I(1)}, {"count_include_pad", false}});
    auto silu = s.add_node("SiLU", "silu");
    auto hswish = s.add_node("Hardswish", "hswish");
    auto mul = s.add_node("Multiply", "gate");
    auto drop2d = s.add_node("Dropout2d", "drop2d", {{"p", F(0.3)}});
    auto cat = s.add_node("Concat", "cat", {{"num_inputs", I(3)}, {"dim", I(1)}});
    auto sig = s.add_node("Sigmoid", "sig");
    auto tanh = s.add_node("Tanh", "tanh");
    auto gap = s.add_node("AdaptiveAvgPool2d", "gap", {{"output_size", I(1)}});
    auto flat = s.add_node("Flatten", "flat");
    auto fc = s.add_node("Linear", "fc", {{"in_features", I(12)}, {"out_features", I(10)}});
    auto logsoft = s.add_node("LogSoftmax", "logsoft", {{"dim", I(1)}});
    auto out = s.add_node("Output");
    s.connect(in, conv);
    s.connect(conv, bn);
    s.connect(bn, relu);
    s.connect(relu, same);
    s.connect(same, dil);
    s.connect(dil, leaky);
    s.connect(leaky, add, 0);
    s.connect(relu, add, 1);
    s.connect(add, pool);
    s.connect(pool, up);
    s.connect(up, prelu);
    s.connect(prelu, elu);
    s.connect(elu, avg);
    s.connect(avg, silu);
    s.connect(silu, hswish);
    s.connect(hswish, mul, 0);
    s.connect(silu, mul, 1);
    s.connect(mul, drop2d);
    s.connect(drop2d, cat, 0);
    s.connect(silu, cat, 1);
    s.connect(avg, cat, 2);
    s.connect(cat, sig);
    s.connect(sig, tanh);
    s.connect(tanh, gap);
    s.connect(gap, flat);
    s.connect(flat, fc);
    s.connect(fc, logsoft);
    s.connect(logsoft, out);
    return s;
}

// Importable vector and sequence layers: Conv1d, BatchNorm1d, Softplus, Linear on 3-d input
// (MatMul + Add), LayerNorm, Dropout, Identity, Multiply, Unflatten, Softmax, LogSoftmax.
graph::ModelSpec vector_model() {
    graph::ModelSpec s;
    auto in = s.add_node("Input", "", {{"shape", L({4, 16})}});
    auto conv = s.add_node("Conv1d", "conv",
                           {{"in_channels", I(4)},
                            {"out_channels", I(6)},
                            {"kernel_size", I(3)},
                            {"stride", I(2)},
                            {"padding", I(2)},
                            {"dilation", I(2)}});
    auto bn = s.add_node("BatchNorm1d", "bn", {{"num_features", I(6)}});
    auto softplus = s.add_node("Softplus", "softplus");
    auto per_step =
        s.add_node("Linear", "per_step", {{"in_features", I(8)}, {"out_features", I(5)}});
    auto ln = s.add_node("LayerNorm", "ln", {{"normalized_shape", L({5})}, {"eps", F(1e-4)}});
    auto tanh = s.add_node("Tanh", "tanh");
    auto flat = s.add_node("Flatten", "flat");
    auto fc = s.add_node("Linear", "fc", {{"in_features", I(30)}, {"out_features", I(12)}});
    auto bn1 = s.add_node("BatchNorm1d", "bn1", {{"num_features", I(12)}});
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
    s.connect(bn, softplus);
    s.connect(softplus, per_step);
    s.connect(per_step, ln);
    s.connect(ln, tanh);
    s.connect(tanh, flat);
    s.connect(flat, fc);
    s.connect(fc, bn1);
    s.connect(bn1, drop);
    s.connect(drop, ident);
    s.connect(ident, gate, 0);
    s.connect(bn1, gate, 1);
    s.connect(gate, fc2);
    s.connect(fc2, unflat);
    s.connect(unflat, soft);
    s.connect(soft, flat2);
    s.connect(flat2, logsoft);
    s.connect(logsoft, out);
    return s;
}

// Tokens through an Embedding, LayerNorm, a per-step Linear and the sequence reductions
// (x[:, -1] as Gather, the mean over steps as ReduceMean).
graph::ModelSpec sequence_model() {
    graph::ModelSpec s;
    auto in = s.add_node("Input", "tokens", {{"shape", L({9})}, {"dtype", std::string("int64")}});
    auto emb = s.add_node("Embedding", "emb", {{"num_embeddings", I(30)}, {"embedding_dim", I(8)}});
    auto ln = s.add_node("LayerNorm", "ln", {{"normalized_shape", L({8})}});
    auto per_step =
        s.add_node("Linear", "per_step", {{"in_features", I(8)}, {"out_features", I(6)}});
    auto act = s.add_node("ReLU", "act");
    auto last = s.add_node("SequenceLast", "last");
    auto mean = s.add_node("SequenceMeanPool", "mean");
    auto cat = s.add_node("Concat", "cat", {{"num_inputs", I(2)}, {"dim", I(1)}});
    auto fc = s.add_node("Linear", "fc", {{"in_features", I(12)}, {"out_features", I(4)}});
    auto out = s.add_node("Output");
    s.connect(in, emb);
    s.connect(emb, ln);
    s.connect(ln, per_step);
    s.connect(per_step, act);
    s.connect(act, last);
    s.connect(act, mean);
    s.connect(last, cat, 0);
    s.connect(mean, cat, 1);
    s.connect(cat, fc);
    s.connect(fc, out);
    return s;
}

// Recurrent layers as Myelin's exporter writes them: a bidirectional LSTM (its sequence and its
// c_n port), a GRU whose final state is its output, an RNN with ReLU, no lengths.
graph::ModelSpec recurrent_model() {
    graph::ModelSpec s;
    auto in = s.add_node("Input", "tokens", {{"shape", L({10})}, {"dtype", std::string("int64")}});
    auto emb = s.add_node("Embedding", "emb", {{"num_embeddings", I(30)}, {"embedding_dim", I(8)}});
    auto lstm = s.add_node("LSTM", "lstm",
                           {{"input_size", I(8)}, {"hidden_size", I(6)}, {"bidirectional", true}});
    auto gru =
        s.add_node("GRU", "gru",
                   {{"input_size", I(12)}, {"hidden_size", I(5)}, {"output", std::string("last")}});
    auto rnn = s.add_node(
        "RNN", "rnn",
        {{"input_size", I(12)}, {"hidden_size", I(4)}, {"nonlinearity", std::string("relu")}});
    auto mean = s.add_node("SequenceMeanPool", "mean");
    auto cat = s.add_node("Concat", "cat", {{"num_inputs", I(3)}, {"dim", I(1)}});
    auto fc = s.add_node("Linear", "fc", {{"in_features", I(21)}, {"out_features", I(3)}});
    auto out = s.add_node("Output");
    s.connect(in, emb);
    s.connect(emb, lstm);
    s.connect(lstm, gru);
    s.connect(lstm, rnn);
    s.connect(rnn, mean);
    s.connect(gru, cat, 0);
    s.connect(mean, cat, 1);
    s.connect(lstm, cat, 2, 2); // c_n
    s.connect(cat, fc);
    s.connect(fc, out);
    return s;
}

// --- ONNX graphs written by hand, as torch.onnx.export writes them ------------------------------

class OnnxWriter {
  public:
    OnnxWriter() {
        model_.set_ir_version(8);
        model_.set_producer_name("pytorch");
        model_.set_producer_version("1.13.1");
        auto* opset = model_.add_opset_import();
        opset->set_domain("");
        opset->set_version(17);
        model_.mutable_graph()->set_name("main_graph");
    }
    onnx::GraphProto& graph() { return *model_.mutable_graph(); }

    void input(const std::string& name, const std::vector<int64_t>& dims,
               int elem = onnx::TensorProto::FLOAT) {
        value(graph().add_input(), name, dims, elem);
    }
    void output(const std::string& name, const std::vector<int64_t>& dims) {
        value(graph().add_output(), name, dims, onnx::TensorProto::FLOAT);
    }
    // A float initializer holding `t`.
    void init(const std::string& name, const Tensor& t) {
        onnx::TensorProto* p = graph().add_initializer();
        fill(p, name, t);
    }
    void init_ints(const std::string& name, const std::vector<int64_t>& v, bool scalar = false) {
        onnx::TensorProto* p = graph().add_initializer();
        p->set_name(name);
        p->set_data_type(onnx::TensorProto::INT64);
        if (!scalar) p->add_dims(int64_t(v.size()));
        for (int64_t x : v)
            p->add_int64_data(x);
    }
    onnx::NodeProto& node(const std::string& op, const std::string& name,
                          const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs) {
        onnx::NodeProto* n = graph().add_node();
        n->set_op_type(op);
        n->set_name(name);
        for (const auto& i : inputs)
            n->add_input(i);
        for (const auto& o : outputs)
            n->add_output(o);
        return *n;
    }
    static void attr(onnx::NodeProto& n, const std::string& name, int64_t v) {
        auto* a = n.add_attribute();
        a->set_name(name);
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(v);
    }
    static void attr(onnx::NodeProto& n, const std::string& name, float v) {
        auto* a = n.add_attribute();
        a->set_name(name);
        a->set_type(onnx::AttributeProto::FLOAT);
        a->set_f(v);
    }
    static void attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
        auto* a = n.add_attribute();
        a->set_name(name);
        a->set_type(onnx::AttributeProto::INTS);
        for (int64_t x : v)
            a->add_ints(x);
    }
    static void attr_tensor(onnx::NodeProto& n, const std::vector<int64_t>& v, bool scalar) {
        auto* a = n.add_attribute();
        a->set_name("value");
        a->set_type(onnx::AttributeProto::TENSOR);
        auto* t = a->mutable_t();
        t->set_data_type(onnx::TensorProto::INT64);
        if (!scalar) t->add_dims(int64_t(v.size()));
        for (int64_t x : v)
            t->add_int64_data(x);
    }
    std::string bytes() const { return model_.SerializeAsString(); }

  private:
    static void value(onnx::ValueInfoProto* v, const std::string& name,
                      const std::vector<int64_t>& dims, int elem) {
        v->set_name(name);
        auto* t = v->mutable_type()->mutable_tensor_type();
        t->set_elem_type(elem);
        for (size_t i = 0; i < dims.size(); ++i) {
            auto* d = t->mutable_shape()->add_dim();
            if (i == 0)
                d->set_dim_param("batch");
            else
                d->set_dim_value(dims[i]);
        }
    }
    static void fill(onnx::TensorProto* p, const std::string& name, const Tensor& t) {
        const Tensor c = t.contiguous();
        p->set_name(name);
        p->set_data_type(onnx::TensorProto::FLOAT);
        for (int64_t d : c.sizes())
            p->add_dims(d);
        p->set_raw_data(c.data<char>(), size_t(c.numel()) * 4);
    }
    onnx::ModelProto model_;
};

// A small CNN head: grouped dilated Conv, BatchNormalization, Clip (min 0, or [0, clip_max]),
// GlobalAveragePool, Flatten, Gemm with the weight as [in, out] (transB=0).
struct HeadModel {
    Tensor conv_w, conv_b, scale, shift, mean, var, fc_w, fc_b;
    float eps = 1e-3f;

    HeadModel() {
        default_generator().manual_seed(11);
        conv_w = randn({6, 2, 3, 3}) * 0.4;
        conv_b = randn({6}) * 0.1;
        scale = rand({6}) + 0.5;
        shift = randn({6}) * 0.2;
        mean = randn({6}) * 0.2;
        var = rand({6}) + 0.5;
        fc_w = randn({6, 3});
        fc_b = randn({3});
    }

    std::string bytes(std::optional<float> clip_max = std::nullopt) const {
        OnnxWriter w;
        w.input("x", {1, 4, 7, 7});
        w.output("y", {1, 3});
        w.init("features.0.weight", conv_w);
        w.init("features.0.bias", conv_b);
        w.init("features.1.weight", scale);
        w.init("features.1.bias", shift);
        w.init("features.1.running_mean", mean);
        w.init("features.1.running_var", var);
        w.init("classifier.weight", fc_w);
        w.init("classifier.bias", fc_b);
        w.init("onnx::Clip_min", from_vector(std::vector<float>{0.0f}, Dims{}));
        if (clip_max) w.init("onnx::Clip_max", from_vector(std::vector<float>{*clip_max}, Dims{}));
        auto& conv = w.node("Conv", "/features/features.0/Conv",
                            {"x", "features.0.weight", "features.0.bias"}, {"c"});
        OnnxWriter::attr(conv, "group", int64_t(2));
        OnnxWriter::attr(conv, "dilations", std::vector<int64_t>{2, 2});
        OnnxWriter::attr(conv, "pads", std::vector<int64_t>{2, 2, 2, 2});
        OnnxWriter::attr(conv, "strides", std::vector<int64_t>{1, 1});
        OnnxWriter::attr(conv, "kernel_shape", std::vector<int64_t>{3, 3});
        auto& bn = w.node("BatchNormalization", "/features/features.1/BatchNormalization",
                          {"c", "features.1.weight", "features.1.bias", "features.1.running_mean",
                           "features.1.running_var"},
                          {"b"});
        OnnxWriter::attr(bn, "epsilon", eps);
        OnnxWriter::attr(bn, "momentum", 0.9f);
        w.node("Clip", "/features/features.2/Clip",
               {"b", "onnx::Clip_min", clip_max ? "onnx::Clip_max" : ""}, {"r"});
        w.node("GlobalAveragePool", "/pool/GlobalAveragePool", {"r"}, {"g"});
        auto& flat = w.node("Flatten", "/Flatten", {"g"}, {"f"});
        OnnxWriter::attr(flat, "axis", int64_t(1));
        auto& gemm = w.node("Gemm", "/classifier/Gemm",
                            {"f", "classifier.weight", "classifier.bias"}, {"y"});
        OnnxWriter::attr(gemm, "alpha", 1.0f);
        OnnxWriter::attr(gemm, "beta", 1.0f);
        OnnxWriter::attr(gemm, "transB", int64_t(0));
        return w.bytes();
    }

    // The same computed with plain loops in double.
    Tensor expected(const Tensor& input) const {
        const Tensor x = input.contiguous().to(DType::Float64).contiguous();
        auto f64 = [](const Tensor& t) { return t.contiguous().to(DType::Float64).contiguous(); };
        const Tensor cw = f64(conv_w), cb = f64(conv_b), sc = f64(scale), sh = f64(shift),
                     mu = f64(mean), va = f64(var), fw = f64(fc_w), fb = f64(fc_b);
        const double* X = x.data<double>();
        const int64_t n = x.size(0), h = 7, wd = 7;
        std::vector<double> out(size_t(n * 3));
        for (int64_t b = 0; b < n; ++b) {
            std::vector<double> pooled(6, 0.0);
            for (int64_t o = 0; o < 6; ++o) {
                const int64_t group = o / 3;
                for (int64_t i = 0; i < h; ++i)
                    for (int64_t j = 0; j < wd; ++j) {
                        double acc = cb.data<double>()[o];
                        for (int64_t c = 0; c < 2; ++c)
                            for (int64_t ki = 0; ki < 3; ++ki)
                                for (int64_t kj = 0; kj < 3; ++kj) {
                                    const int64_t yi = i + 2 * ki - 2, xj = j + 2 * kj - 2;
                                    if (yi < 0 || yi >= h || xj < 0 || xj >= wd) continue;
                                    const int64_t ch = group * 2 + c;
                                    acc += X[((b * 4 + ch) * h + yi) * wd + xj] *
                                           cw.data<double>()[((o * 2 + c) * 3 + ki) * 3 + kj];
                                }
                        double v = (acc - mu.data<double>()[o]) /
                                       std::sqrt(va.data<double>()[o] + double(eps)) *
                                       sc.data<double>()[o] +
                                   sh.data<double>()[o];
                        pooled[size_t(o)] += std::max(v, 0.0) / double(h * wd);
                    }
            }
            for (int64_t k = 0; k < 3; ++k) {
                double acc = fb.data<double>()[k];
                for (int64_t c = 0; c < 6; ++c)
                    acc += pooled[size_t(c)] * fw.data<double>()[c * 3 + k];
                out[size_t(b * 3 + k)] = acc;
            }
        }
        return from_vector(out, Dims{n, 3});
    }
};

// x.view(x.size(0), -1) with a dynamic batch (Shape, Gather, Unsqueeze, Concat, Reshape), a
// Linear as MatMul + Add (bias first, as PyTorch writes it), then x * sigmoid(x).
struct FlattenSwishModel {
    Tensor w, b;
    FlattenSwishModel() {
        default_generator().manual_seed(12);
        w = randn({18, 5}) * 0.3;
        b = randn({5});
    }
    std::string bytes() const {
        OnnxWriter o;
        o.input("x", {1, 2, 3, 3});
        o.output("y", {1, 5});
        o.init("fc.weight_t", w);
        o.init("fc.bias", b);
        o.init_ints("minus_one", {-1});
        o.node("Shape", "/Shape", {"x"}, {"s"});
        OnnxWriter::attr_tensor(o.node("Constant", "/Constant", {}, {"zero"}), {0}, true);
        auto& gather = o.node("Gather", "/Gather", {"s", "zero"}, {"n"});
        OnnxWriter::attr(gather, "axis", int64_t(0));
        OnnxWriter::attr_tensor(o.node("Constant", "/Constant_1", {}, {"axes"}), {0}, false);
        o.node("Unsqueeze", "/Unsqueeze", {"n", "axes"}, {"n1"});
        auto& concat = o.node("Concat", "/Concat", {"n1", "minus_one"}, {"shape"});
        OnnxWriter::attr(concat, "axis", int64_t(0));
        o.node("Reshape", "/Reshape", {"x", "shape"}, {"flat"});
        o.node("MatMul", "/fc/MatMul", {"flat", "fc.weight_t"}, {"mm"});
        o.node("Add", "/fc/Add", {"fc.bias", "mm"}, {"lin"});
        o.node("Sigmoid", "/act/Sigmoid", {"lin"}, {"sig"});
        o.node("Mul", "/act/Mul", {"lin", "sig"}, {"y"});
        return o.bytes();
    }
    Tensor expected(const Tensor& input) const {
        const Tensor x = input.contiguous().to(DType::Float64).contiguous();
        const Tensor W = w.contiguous().to(DType::Float64).contiguous();
        const Tensor B = b.contiguous().to(DType::Float64).contiguous();
        const int64_t n = x.size(0);
        std::vector<double> out(size_t(n * 5));
        for (int64_t r = 0; r < n; ++r)
            for (int64_t k = 0; k < 5; ++k) {
                double acc = B.data<double>()[k];
                for (int64_t c = 0; c < 18; ++c)
                    acc += x.data<double>()[r * 18 + c] * W.data<double>()[c * 5 + k];
                out[size_t(r * 5 + k)] = acc / (1.0 + std::exp(-acc));
            }
        return from_vector(out, Dims{n, 5});
    }
};

// A batch-first LSTM or GRU as torch.onnx.export writes it: Transpose to time-major, the weights
// in ONNX's gate order (as generated initializer names), zero initial states built from the
// input's batch size (Shape, Gather, Unsqueeze, Concat, ConstantOfShape), then back to batch
// first (one direction: Squeeze; two: Transpose and Reshape). LSTM: y = out[:, -1] + h_n[-1];
// GRU (bidirectional): y = out.mean(1). The reference is Myelin's own layer with the same
// (PyTorch-order) weights.
struct RecurrentModel {
    std::string op;
    bool bidirectional;
    int64_t steps = 5, features = 3, hidden = 4;
    graph::ModelSpec reference;
    nn::StateDict weights; // the reference's, PyTorch's gate order

    RecurrentModel(std::string op_, bool bidirectional_)
        : op(std::move(op_)), bidirectional(bidirectional_) {
        auto in = reference.add_node("Input", "", {{"shape", L({steps, features})}});
        auto rnn = reference.add_node(op, "rnn",
                                      {{"input_size", I(features)},
                                       {"hidden_size", I(hidden)},
                                       {"bidirectional", bidirectional}});
        auto out = reference.add_node("Output");
        reference.connect(in, rnn);
        if (op == "LSTM") {
            auto last = reference.add_node("SequenceLast", "last");
            auto add = reference.add_node("Add", "sum");
            reference.connect(rnn, last);
            reference.connect(last, add, 0);
            reference.connect(rnn, add, 1, 1); // h_n
            reference.connect(add, out);
        } else {
            auto mean = reference.add_node("SequenceMeanPool", "mean");
            reference.connect(rnn, mean);
            reference.connect(mean, out);
        }
        default_generator().manual_seed(21);
        weights = graph::build(reference)->state_dict();
    }

    Tensor onnx_order(const Tensor& t) const {
        const std::vector<int64_t> order =
            op == "LSTM" ? std::vector<int64_t>{0, 3, 1, 2} : std::vector<int64_t>{1, 0, 2};
        TensorList parts;
        for (int64_t g : order)
            parts.push_back(t.narrow(0, g * hidden, hidden));
        return cat(parts, 0).contiguous();
    }

    std::string bytes(bool with_lengths = false, int linear_before_reset = 1) const {
        OnnxWriter o;
        const int64_t dirs = bidirectional ? 2 : 1;
        o.input("x", {1, steps, features});
        o.output("y", {1, op == "LSTM" ? hidden : dirs * hidden});
        TensorList w, r, b;
        for (int64_t d = 0; d < dirs; ++d) {
            const std::string suffix = d ? "_l0_reverse" : "_l0";
            w.push_back(onnx_order(*find_weight(weights, "rnn.weight_ih" + suffix)));
            r.push_back(onnx_order(*find_weight(weights, "rnn.weight_hh" + suffix)));
            b.push_back(cat({onnx_order(*find_weight(weights, "rnn.bias_ih" + suffix)),
                             onnx_order(*find_weight(weights, "rnn.bias_hh" + suffix))},
                            0));
        }
        o.init("onnx::" + op + "_101", stack(w, 0));
        o.init("onnx::" + op + "_102", stack(r, 0));
        o.init("onnx::" + op + "_103", stack(b, 0));
        o.init_ints("state_lead", {dirs});
        o.init_ints("state_tail", {hidden});
        auto& t = o.node("Transpose", "/rnn/Transpose", {"x"}, {"xt"});
        OnnxWriter::attr(t, "perm", std::vector<int64_t>{1, 0, 2});
        o.node("Shape", "/Shape", {"x"}, {"s"});
        OnnxWriter::attr_tensor(o.node("Constant", "/Constant", {}, {"zero"}), {0}, true);
        auto& gather = o.node("Gather", "/Gather", {"s", "zero"}, {"n"});
        OnnxWriter::attr(gather, "axis", int64_t(0));
        OnnxWriter::attr_tensor(o.node("Constant", "/Constant_1", {}, {"axes"}), {0}, false);
        o.node("Unsqueeze", "/Unsqueeze", {"n", "axes"}, {"n1"});
        auto& concat = o.node("Concat", "/Concat", {"state_lead", "n1", "state_tail"}, {"shape"});
        OnnxWriter::attr(concat, "axis", int64_t(0));
        o.node("ConstantOfShape", "/ConstantOfShape", {"shape"}, {"h0"});
        if (with_lengths) o.init_ints("lengths", {steps});
        std::vector<std::string> in{"xt",
                                    "onnx::" + op + "_101",
                                    "onnx::" + op + "_102",
                                    "onnx::" + op + "_103",
                                    with_lengths ? "lengths" : "",
                                    "h0"};
        if (op == "LSTM") in.push_back("h0");
        std::vector<std::string> outs{"Y", "Y_h"};
        if (op == "LSTM") outs.push_back("Y_c");
        auto& rnn = o.node(op, "/rnn/" + op, in, outs);
        OnnxWriter::attr(rnn, "hidden_size", hidden);
        if (bidirectional) {
            auto* a = rnn.add_attribute();
            a->set_name("direction");
            a->set_type(onnx::AttributeProto::STRING);
            a->set_s("bidirectional");
        }
        if (op == "GRU") OnnxWriter::attr(rnn, "linear_before_reset", int64_t(linear_before_reset));
        if (!bidirectional) {
            OnnxWriter::attr_tensor(o.node("Constant", "/Constant_2", {}, {"axis1"}), {1}, false);
            o.node("Squeeze", "/rnn/Squeeze", {"Y", "axis1"}, {"y_tnh"});
        } else {
            auto& tr = o.node("Transpose", "/rnn/Transpose_1", {"Y"}, {"y_tndh"});
            OnnxWriter::attr(tr, "perm", std::vector<int64_t>{0, 2, 1, 3});
            o.init_ints("join", {0, 0, -1});
            o.node("Reshape", "/rnn/Reshape", {"y_tndh", "join"}, {"y_tnh"});
        }
        auto& back = o.node("Transpose", "/rnn/Transpose_2", {"y_tnh"}, {"seq"});
        OnnxWriter::attr(back, "perm", std::vector<int64_t>{1, 0, 2});
        if (op == "LSTM") {
            OnnxWriter::attr_tensor(o.node("Constant", "/Constant_3", {}, {"minus_one"}), {-1},
                                    true);
            auto& last = o.node("Gather", "/Gather_1", {"seq", "minus_one"}, {"last"});
            OnnxWriter::attr(last, "axis", int64_t(1));
            auto& h = o.node("Gather", "/Gather_2", {"Y_h", "minus_one"}, {"h"});
            OnnxWriter::attr(h, "axis", int64_t(0));
            o.node("Add", "/Add", {"last", "h"}, {"y"});
        } else {
            auto& mean = o.node("ReduceMean", "/ReduceMean", {"seq"}, {"y"});
            OnnxWriter::attr(mean, "axes", std::vector<int64_t>{1});
            OnnxWriter::attr(mean, "keepdims", int64_t(0));
        }
        return o.bytes();
    }

    Tensor expected(const Tensor& x) const {
        auto model = graph::build(reference);
        model->load_state_dict(weights);
        model->eval();
        autograd::NoGradGuard no_grad;
        return (*model)({x}).contiguous();
    }
};

// Input -> Relu -> `op` -> Output, the op named "/weird/<op>" at position 1.
std::string unknown_op_bytes(const std::string& op) {
    OnnxWriter o;
    o.input("x", {1, 5});
    o.output("y", {1, 5});
    o.node("Relu", "/relu/Relu", {"x"}, {"r"});
    o.node(op, "/weird/" + op, {"r"}, {"e"});
    o.node("Relu", "/relu_1/Relu", {"e"}, {"y"});
    return o.bytes();
}

// Runs a test body, failing the test (not the whole run) on an exception.
void guarded(const std::function<void()>& body) {
    try {
        body();
    } catch (const std::exception& e) {
        QFAIL(e.what());
    }
}

void write_bytes(const QString& path, const std::string& bytes) {
    std::ofstream f(path.toStdString(), std::ios::binary);
    f.write(bytes.data(), std::streamsize(bytes.size()));
}

QStringList folder_entries(const QString& path) {
    return QDir(path).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot);
}

} // namespace

class TestImportOnnx : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;

    // Imports `bytes` expecting a refusal whose message contains every one of `parts`.
    void expect_refusal(const std::string& bytes, const std::string& source,
                        const std::vector<std::string>& parts) {
        try {
            exporters::import_onnx(bytes, source);
            QFAIL(qPrintable("no refusal for " + q(source)));
        } catch (const Error& e) {
            const std::string message = e.what();
            for (const std::string& part : parts)
                QVERIFY2(message.find(part) != std::string::npos,
                         qPrintable("'" + q(part) + "' not in: " + q(message)));
        }
    }

  private slots:
    void initTestCase() { QVERIFY(dir_.isValid()); }

    void round_trip_data() {
        QTest::addColumn<QString>("name");
        for (const char* name :
             {"fashion_mlp", "fashion_cnn", "fashion_resnet", "tabular_regression", "word_language",
              "word_language_lstm", "word_language_transformer", "image_model", "vector_model",
              "sequence_model", "recurrent_model"})
            QTest::newRow(name) << QString(name);
    }

    // Exported with fresh weights, imported: same outputs, same kinds (less the layers that are
    // the identity in evaluation), every weight under the built model's names.
    void round_trip() {
        QFETCH(QString, name);
        try {
            check_round_trip(name.toStdString());
        } catch (const std::exception& e) {
            QFAIL(e.what());
        }
    }

  private:
    void check_round_trip(const std::string& n) {
        const QString name = q(n);
        io::Project project;
        if (n == "image_model")
            project = project_of(image_model(), n);
        else if (n == "vector_model")
            project = project_of(vector_model(), n);
        else if (n == "sequence_model")
            project = project_of(sequence_model(), n);
        else if (n == "recurrent_model")
            project = project_of(recurrent_model(), n);
        else
            project = io::load_project(example_path(n));
        const exporters::ExportSource source = fresh_source(project);
        const std::string bytes = exporters::onnx_model_bytes(source);
        const exporters::ImportedModel imported = exporters::import_onnx(bytes, n + ".onnx");

        const graph::Analysis analysis = graph::analyze(imported.project.model, 1);
        QVERIFY2(analysis.ok(),
                 qPrintable(q(graph::format_summary(imported.project.model, analysis))));
        for (const graph::Node& node : imported.project.model.nodes) {
            const graph::LayerKind* kind = graph::find_layer_kind(node.kind);
            QVERIFY(kind && kind->origin.empty());
        }
        // The Transformer encoder comes back as its parts (LayerNorm, MultiheadAttention, Add,
        // Linear, ReLU): ONNX has no op for it, so the file holds the parts.
        const bool as_parts = n == "word_language_transformer";
        if (as_parts) {
            const std::vector<std::string> kinds = layer_kinds_of(imported.project.model, false);
            for (const char* kind :
                 {"PositionalEncoding", "MultiheadAttention", "SequenceMeanPool"})
                QVERIFY2(std::count(kinds.begin(), kinds.end(), kind) > 0, kind);
        } else {
            QCOMPARE(layer_kinds_of(imported.project.model, false),
                     layer_kinds_of(source.project.model, true));
            QCOMPARE(imported.weights.size(), source.weights.size());
        }
        // Named nodes keep their names, so the state_dict is the same.
        bool all_named = true;
        for (const graph::Node& node : source.project.model.nodes)
            all_named =
                all_named && (node.kind == "Input" || node.kind == "Output" || !node.name.empty());
        if (all_named && !as_parts)
            for (const auto& [key, tensor] : source.weights) {
                const Tensor* got = find_weight(imported.weights, key);
                QVERIFY2(got, qPrintable("no " + q(key)));
                if (key.find("num_batches_tracked") == std::string::npos)
                    QVERIFY2(relative_difference(tensor, *got) == 0.0, qPrintable(q(key)));
            }
        // The layout puts every node on its own spot.
        std::set<std::pair<double, double>> spots;
        for (const graph::Node& node : imported.project.model.nodes)
            QVERIFY(spots.insert({node.x, node.y}).second);

        const graph::Node& in = node_of_kind(source.project.model, "Input");
        Dims shape{5};
        for (int64_t d : in.attrs.get_ints("shape"))
            shape.push_back(d);
        default_generator().manual_seed(3);
        Tensor x;
        if (in.attrs.get_string("dtype") == "int64")
            x = padded_tokens(
                5, shape[1],
                node_of_kind(source.project.model, "Embedding").attrs.get_int("num_embeddings"));
        else
            x = randn(shape);
        const Tensor expected = myelin_forward(source, {x});
        const Tensor got = imported_forward(imported, {x});
        const double diff = relative_difference(expected, got);
        QVERIFY2(diff <= 1e-5, qPrintable(name + ": relative difference " + QString::number(diff)));
    }

  private slots:
    // A graph as PyTorch writes it, against the numbers computed by hand; the names are the
    // initializers' modules, the attributes those of the ONNX nodes.
    void hand_built_cnn_head() {
        guarded([&] {
            const HeadModel head;
            const exporters::ImportedModel m = exporters::import_onnx(head.bytes(), "head.onnx");
            const graph::ModelSpec& spec = m.project.model;
            std::vector<std::string> kinds;
            for (const graph::Node& n : spec.nodes)
                kinds.push_back(n.kind);
            QCOMPARE(kinds, (std::vector<std::string>{"Input", "Conv2d", "BatchNorm2d", "ReLU",
                                                      "AdaptiveAvgPool2d", "Flatten", "Linear",
                                                      "Output"}));
            const graph::Node& conv = node_of_kind(spec, "Conv2d");
            QCOMPARE(conv.name, std::string("features_0"));
            QCOMPARE(conv.attrs.get_int("groups"), int64_t(2));
            QCOMPARE(conv.attrs.get_ints("dilation"), (std::vector<int64_t>{2}));
            QCOMPARE(conv.attrs.get_ints("padding"), (std::vector<int64_t>{2}));
            QCOMPARE(conv.attrs.get_int("in_channels"), int64_t(4));
            const graph::Node& bn = node_of_kind(spec, "BatchNorm2d");
            QCOMPARE(bn.name, std::string("features_1"));
            QVERIFY(std::abs(bn.attrs.get_float("eps") - 1e-3) < 1e-9);
            QVERIFY(std::abs(bn.attrs.get_float("momentum") - 0.1) < 1e-6);
            QCOMPARE(node_of_kind(spec, "Input").attrs.get_ints("shape"),
                     (std::vector<int64_t>{4, 7, 7}));
            QCOMPARE(node_of_kind(spec, "Linear").name, std::string("classifier"));
            std::vector<std::string> names;
            for (const auto& [key, t] : m.weights)
                names.push_back(key);
            QCOMPARE(names, (std::vector<std::string>{
                                "features_0.weight", "features_0.bias", "features_1.weight",
                                "features_1.bias", "features_1.running_mean",
                                "features_1.running_var", "features_1.num_batches_tracked",
                                "classifier.weight", "classifier.bias"}));
            // Gemm's [in, out] weight is stored as Linear's [out, in].
            QCOMPARE(find_weight(m.weights, "classifier.weight")->sizes(), (Dims{3, 6}));
            QVERIFY(!m.notes.empty()); // Clip(min=0) as ReLU
            default_generator().manual_seed(5);
            const Tensor x = randn({4, 4, 7, 7});
            const double diff = relative_difference(head.expected(x), imported_forward(m, {x}));
            QVERIFY2(diff <= 1e-5, qPrintable(QString::number(diff)));
        });
    }

    void hand_built_dynamic_flatten_swish() {
        guarded([&] {
            const FlattenSwishModel model;
            const exporters::ImportedModel m = exporters::import_onnx(model.bytes(), "swish.onnx");
            std::vector<std::string> kinds;
            for (const graph::Node& n : m.project.model.nodes)
                kinds.push_back(n.kind);
            QCOMPARE(kinds,
                     (std::vector<std::string>{"Input", "Flatten", "Linear", "SiLU", "Output"}));
            const graph::Node& fc = node_of_kind(m.project.model, "Linear");
            QCOMPARE(fc.name, std::string("fc"));
            QVERIFY(fc.attrs.get_bool("bias"));
            QVERIFY(find_weight(m.weights, "fc.bias"));
            default_generator().manual_seed(6);
            const Tensor x = randn({3, 2, 3, 3});
            const double diff = relative_difference(model.expected(x), imported_forward(m, {x}));
            QVERIFY2(diff <= 1e-5, qPrintable(QString::number(diff)));
        });
    }

    void recurrent_layers_as_pytorch_writes_them_data() {
        QTest::addColumn<QString>("op");
        QTest::addColumn<bool>("bidirectional");
        QTest::newRow("LSTM") << QString("LSTM") << false;
        QTest::newRow("GRU bidirectional") << QString("GRU") << true;
    }

    void recurrent_layers_as_pytorch_writes_them() {
        QFETCH(QString, op);
        QFETCH(bool, bidirectional);
        guarded([&] {
            const RecurrentModel model(op.toStdString(), bidirectional);
            const exporters::ImportedModel m = exporters::import_onnx(model.bytes(), "rnn.onnx");
            QCOMPARE(layer_kinds_of(m.project.model, false),
                     layer_kinds_of(model.reference, false));
            // The layer is named from the node's scope; its weights in PyTorch's gate order.
            for (const auto& [key, tensor] : model.weights) {
                const Tensor* got = find_weight(m.weights, key);
                QVERIFY2(got, qPrintable("no " + q(key)));
                QVERIFY2(relative_difference(tensor, *got) == 0.0, qPrintable(q(key)));
            }
            default_generator().manual_seed(8);
            const Tensor x = randn({4, model.steps, model.features});
            const double diff = relative_difference(model.expected(x), imported_forward(m, {x}));
            QVERIFY2(diff <= 1e-5, qPrintable(QString::number(diff)));
            // What Myelin's layers do not do is refused with the reason.
            expect_refusal(model.bytes(true), "lengths.onnx",
                           {"'/rnn/" + op.toStdString() + "'", "sequence_lens"});
            if (op == "GRU")
                expect_refusal(model.bytes(false, 0), "reset.onnx",
                               {"'/rnn/GRU'", "linear_before_reset"});
        });
    }

    void refuses_an_op_without_a_layer() {
        guarded([&] {
            expect_refusal(unknown_op_bytes("Erf"), "erf.onnx",
                           {"erf.onnx", "'/weird/Erf'", "Erf", "position 1", "no layer"});
            // Through the file functions: nothing is written.
            const QString folder = dir_.filePath("refused");
            QVERIFY(QDir().mkpath(folder));
            const QString file = folder + "/erf.onnx";
            write_bytes(file, unknown_op_bytes("Erf"));
            try {
                const auto m = exporters::import_onnx_file(file.toStdString());
                exporters::write_imported_model(m, (folder + "/p.myelin").toStdString(),
                                                (folder + "/p.safetensors").toStdString());
                QFAIL("imported");
            } catch (const Error& e) {
                QVERIFY(std::string(e.what()).find("'/weird/Erf'") != std::string::npos);
            }
            QCOMPARE(folder_entries(folder), QStringList{"erf.onnx"});
        });
    }

    // Each unsupported node is named, in one message.
    void refuses_every_unsupported_node_at_once() {
        guarded([&] {
            OnnxWriter o;
            o.input("x", {1, 5});
            o.output("y", {1, 5});
            o.node("Erf", "first", {"x"}, {"a"});
            o.node("Relu", "fine", {"a"}, {"b"});
            o.node("Sqrt", "second", {"b"}, {"y"});
            expect_refusal(o.bytes(), "two.onnx",
                           {"2 nodes", "'first' (Erf, position 0", "'second' (Sqrt, position 2"});
        });
    }

    // Clip(0, 6) is ReLU6 (MobileNet's); other bounds have no layer and are refused.
    void imports_relu6_and_refuses_other_clips() {
        guarded([&] {
            const exporters::ImportedModel m =
                exporters::import_onnx(HeadModel().bytes(6.0f), "relu6.onnx");
            bool relu6 = false;
            for (const graph::Node& n : m.project.model.nodes)
                relu6 = relu6 || n.kind == "ReLU6";
            QVERIFY(relu6);
            expect_refusal(HeadModel().bytes(4.0f), "clip4.onnx",
                           {"clip4.onnx", "'/features/features.2/Clip'", "Clip", "position 2",
                            "max=4", "Hardtanh"});
        });
    }

    void refuses_unimported_layouts() {
        guarded([&] {
            // A transpose that is not a layout change of a recurrent layer.
            OnnxWriter o;
            o.input("x", {1, 3, 4});
            o.output("y", {1, 4, 3});
            auto& t = o.node("Transpose", "/Transpose", {"x"}, {"y"});
            OnnxWriter::attr(t, "perm", std::vector<int64_t>{0, 2, 1});
            expect_refusal(o.bytes(), "t.onnx", {"'/Transpose'", "position 0", "no layer"});
        });
    }

    void refuses_malformed_files() {
        guarded([&] {
            expect_refusal("", "empty.onnx", {"empty.onnx", "empty"});
            std::mt19937 random(1);
            std::string noise(4096, '\0');
            for (char& c : noise)
                c = char(random() & 0xff);
            expect_refusal(noise, "noise.onnx", {"noise.onnx", "ONNX"});
            const std::string good = exporters::onnx_model_bytes(
                fresh_source(io::load_project(example_path("fashion_cnn"))));
            for (double fraction : {0.01, 0.3, 0.5, 0.9, 0.999})
                expect_refusal(good.substr(0, size_t(double(good.size()) * fraction)), "cut.onnx",
                               {"cut.onnx", "ONNX"});
            // A model that parses but is no valid ONNX (a node reads an undefined value).
            OnnxWriter o;
            o.input("x", {1, 5});
            o.output("y", {1, 5});
            o.node("Relu", "r", {"missing"}, {"y"});
            expect_refusal(o.bytes(), "dangling.onnx", {"dangling.onnx", "not a valid ONNX model"});
        });
    }

    // The files: the project loads as it was imported, naming the checkpoint as its initial
    // weights; the checkpoint holds the weights under the same names (what --init-weights
    // reads) and carries the project.
    void writes_project_and_checkpoint() {
        guarded([&] {
            const exporters::ImportedModel m =
                exporters::import_onnx(HeadModel().bytes(), "head.onnx");
            const QString folder = dir_.filePath("written");
            QVERIFY(QDir().mkpath(folder));
            const std::string project = (folder + "/head.myelin").toStdString();
            const std::string checkpoint = exporters::default_import_checkpoint(project).string();
            QCOMPARE(q(checkpoint), folder + "/head.safetensors");
            exporters::write_imported_model(m, project, checkpoint);
            io::Project expected = m.project;
            expected.train.init_weights = "head.safetensors"; // beside it: by its name
            expected.format_version = 6;                      // the version that holds init_weights
            QCOMPARE(io::load_project(project), expected);
            const io::SafetensorsFile file = io::load_safetensors(checkpoint);
            QCOMPARE(file.tensors.size(), m.weights.size());
            auto model = graph::build(io::load_project(project).model);
            QVERIFY(model->load_state_dict(file.tensors, true).ok());
            const io::Checkpoint c = io::load_checkpoint(checkpoint);
            QCOMPARE(q(c.project_json), q(io::serialize_project(expected)));
            QCOMPARE(c.description.input_shape, (std::vector<int64_t>{4, 7, 7}));
            // The exporters take it as a checkpoint that carries its project.
            const exporters::ExportSource source =
                exporters::load_export_source(std::nullopt, checkpoint);
            QCOMPARE(source.weights.size(), m.weights.size());
            QCOMPARE(folder_entries(folder), (QStringList{"head.myelin", "head.safetensors"}));
        });
    }

    void cli_import() {
        guarded([&] {
            const QString folder = dir_.filePath("cli");
            QVERIFY(QDir().mkpath(folder));
            write_bytes(folder + "/resnet.onnx",
                        exporters::onnx_model_bytes(
                            fresh_source(io::load_project(example_path("fashion_resnet")))));
            CliResult r = runCliProcess(
                {"import", folder + "/resnet.onnx", "-o", folder + "/resnet.myelin"}, 300000);
            QVERIFY2(r.exitCode == 0, qPrintable(r.err));
            QVERIFY2(r.out.contains("wrote " + folder + "/resnet.safetensors"), qPrintable(r.out));
            QVERIFY(QFile::exists(folder + "/resnet.myelin"));
            const auto project = io::load_project((folder + "/resnet.myelin").toStdString());
            QVERIFY(graph::analyze(project.model, 1).ok());
            // --checkpoint elsewhere.
            r = runCliProcess({"import", folder + "/resnet.onnx", "-o", folder + "/second.myelin",
                               "--checkpoint", folder + "/weights.safetensors"},
                              300000);
            QVERIFY2(r.exitCode == 0, qPrintable(r.err));
            QVERIFY(QFile::exists(folder + "/weights.safetensors"));
            QVERIFY(!QFile::exists(folder + "/second.safetensors"));
            // A refusal: exit 1, the node named, nothing written.
            write_bytes(folder + "/erf.onnx", unknown_op_bytes("Erf"));
            r = runCliProcess({"import", folder + "/erf.onnx", "-o", folder + "/erf.myelin"},
                              300000);
            QCOMPARE(r.exitCode, 1);
            QVERIFY2(r.err.contains("'/weird/Erf' (Erf, position 1"), qPrintable(r.err));
            QVERIFY(!QFile::exists(folder + "/erf.myelin"));
            QVERIFY(!QFile::exists(folder + "/erf.safetensors"));
            // A bad command line.
            r = runCliProcess({"import", folder + "/erf.onnx"}, 300000);
            QCOMPARE(r.exitCode, 2);
            QCOMPARE(folder_entries(folder),
                     (QStringList{"erf.onnx", "resnet.myelin", "resnet.onnx", "resnet.safetensors",
                                  "second.myelin", "weights.safetensors"}));
        });
    }
};

QTEST_GUILESS_MAIN(TestImportOnnx)
#include "test_import_onnx.moc"
