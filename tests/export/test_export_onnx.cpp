// ONNX export: fashion_mlp, fashion_cnn, fashion_resnet and models using every exportable layer
// kind, with fresh (seeded) weights, run by OpenCV's DNN module (C++) and compared with Myelin's
// forward: max |difference| <= 1e-5 of the output's scale. Every file passes ONNX's checker
// (read back from disk). Refusals (an unexportable layer, weights that do not fit, an unwritable
// path) name what is wrong and leave no file.
#include "export_test_models.h"

#include <myelin/error.h>
#include <myelin/io/checkpoint.h>
#include <myelin/io/safetensors.h>
#include <myelin/nn/layers.h>
#include <myelin/plugin/loader.h>
#include <myelin/tensor.h>

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <opencv2/core/utils/logger.hpp>
#include <opencv2/dnn.hpp>

#include <QDir>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>

using namespace myelin;
using namespace export_test;

namespace {

onnx::ModelProto read_model(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    onnx::ModelProto model;
    if (!model.ParseFromIstream(&f)) throw Error("cannot parse " + path);
    return model;
}

// OpenCV's output for a float input [N, ...].
Tensor opencv_forward(const std::string& path, const Tensor& input) {
    cv::dnn::Net net = cv::dnn::readNetFromONNX(path);
    std::vector<int> dims(input.sizes().begin(), input.sizes().end());
    Tensor x = input.contiguous();
    cv::Mat blob(int(dims.size()), dims.data(), CV_32F, x.data<float>());
    net.setInput(blob);
    cv::Mat out = net.forward();
    Dims shape;
    for (int i = 0; i < out.dims; ++i)
        shape.push_back(out.size[i]);
    return from_blob(out.ptr<float>(), DType::Float32, shape);
}

// max |a - b| / max(1, max |a|).
double relative_difference(const Tensor& expected, const Tensor& got) {
    const Tensor a = expected.contiguous().to(DType::Float64).contiguous();
    const Tensor b = got.contiguous().to(DType::Float64).contiguous();
    if (a.numel() != b.numel()) return INFINITY;
    double diff = 0, scale = 1;
    for (int64_t i = 0; i < a.numel(); ++i) {
        diff = std::max(diff, std::abs(a.data<double>()[i] - b.data<double>()[i]));
        scale = std::max(scale, std::abs(a.data<double>()[i]));
    }
    return diff / scale;
}

// Runs an ONNX file with onnxruntime through its Node.js package (onnxruntime-node ships a CPU
// libonnxruntime.so): MODEL INPUT SHAPE DTYPE OUTPUT.
const char* const kOrtScript = R"(
const ort = require("onnxruntime-node");
const fs = require("fs");
(async () => {
  const [model, input, shapeText, dtype, output] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model);
  const bytes = fs.readFileSync(input);
  const data = dtype === "int64"
    ? new BigInt64Array(bytes.buffer, bytes.byteOffset, bytes.length / 8)
    : new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
  const feeds = {};
  feeds[session.inputNames[0]] = new ort.Tensor(dtype, data, shapeText.split(",").map(Number));
  const out = (await session.run(feeds))[session.outputNames[0]];
  fs.writeFileSync(output, Buffer.from(out.data.buffer, out.data.byteOffset, out.data.byteLength));
  console.log("onnxruntime " + ort.env.versions.common);
})().catch((e) => { console.error(String(e)); process.exit(1); });
)";

bool folder_is_empty(const QString& path) {
    return QDir(path).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot).isEmpty();
}

} // namespace

class TestExportOnnx : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;

    std::string path(const char* name) { return dir_.filePath(name).toStdString(); }

    // Exports, checks the file with ONNX's checker, runs it with OpenCV and compares.
    void compare_with_opencv(const exporters::ExportSource& source, const Dims& input_shape,
                             const char* file, std::vector<int64_t> batches = {1, 5}) {
        const std::string out = path(file);
        exporters::export_onnx(source, out);
        onnx::ModelProto model = read_model(out);
        onnx::checker::check_model(model);
        QCOMPARE(model.opset_import(0).version(), int64_t(17));
        QCOMPARE(model.graph().input(0).type().tensor_type().shape().dim(0).dim_param(),
                 std::string("batch"));
        for (int64_t batch : batches) {
            Dims shape{batch};
            for (int64_t d : input_shape)
                shape.push_back(d);
            default_generator().manual_seed(uint64_t(batch));
            const Tensor x = rand(shape);
            const Tensor expected = myelin_forward(source, {x});
            Tensor got;
            try {
                got = opencv_forward(out, x);
            } catch (const std::exception& e) {
                QFAIL(qPrintable(QString("%1: OpenCV: %2").arg(file, e.what())));
            }
            QCOMPARE(got.numel(), expected.numel());
            const double diff = relative_difference(expected, got);
            qInfo("%s, batch %lld: max relative difference %.3g", file, (long long)batch, diff);
            QVERIFY2(diff <= 1e-5, qPrintable(QString("%1: %2").arg(file).arg(diff)));
        }
    }

    // onnxruntime's output for `x` ([N, ...] float32 or int64), or a failure.
    Tensor onnxruntime_forward(const QString& modules, const std::string& model, const Tensor& x) {
        const QString script = dir_.filePath("run_onnx.js"), in = dir_.filePath("ort.in"),
                      out = dir_.filePath("ort.out");
        QFile js(script);
        if (!js.exists() && js.open(QIODevice::WriteOnly)) js.write(kOrtScript);
        js.close();
        QFile input(in);
        if (!input.open(QIODevice::WriteOnly)) return {};
        const Tensor c = x.contiguous();
        input.write(c.data<char>(), qint64(c.numel()) * (c.dtype() == DType::Int64 ? 8 : 4));
        input.close();
        QStringList shape;
        for (int64_t d : x.sizes())
            shape << QString::number(d);
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("NODE_PATH", modules);
        p.setProcessEnvironment(env);
        p.start("node", {script, q(model), in, shape.join(","),
                         x.dtype() == DType::Int64 ? "int64" : "float32", out});
        if (!p.waitForFinished(120000) || p.exitCode() != 0) {
            qWarning("onnxruntime: %s", p.readAllStandardError().constData());
            return {};
        }
        ort_version_ = p.readAllStandardOutput().trimmed();
        QFile result(out);
        if (!result.open(QIODevice::ReadOnly)) return {};
        const QByteArray bytes = result.readAll();
        return from_blob(bytes.constData(), DType::Float32, Dims{int64_t(bytes.size() / 4)});
    }
    QByteArray ort_version_;

  private slots:
    void initTestCase() { QVERIFY(dir_.isValid()); }

    void fashionExamples_data() {
        QTest::addColumn<QString>("example");
        QTest::newRow("mlp") << "fashion_mlp";
        QTest::newRow("cnn") << "fashion_cnn";
        QTest::newRow("resnet") << "fashion_resnet";
    }
    void fashionExamples() {
        QFETCH(QString, example);
        auto source = fresh_source(io::load_project(example_path(example.toStdString())));
        compare_with_opencv(source, {1, 28, 28}, qPrintable(example + ".onnx"));
    }

    void everyImageLayer() {
        auto source = fresh_source(project_of(image_layers_model(), "image layers"));
        compare_with_opencv(source, {3, 12, 12}, "image_layers.onnx");
    }

    void everyVectorLayer() {
        auto source = fresh_source(project_of(vector_layers_model(), "vector layers"));
        compare_with_opencv(source, {4, 16}, "vector_layers.onnx");
    }

    // OpenCV 4.6 computes ReduceMean over the batch per example: right for a batch of one.
    void batchStatisticsBatchOfOne() {
        auto source = fresh_source(project_of(batch_statistics_model(), "batch statistics"));
        compare_with_opencv(source, {6, 8}, "batch_statistics.onnx", {1});
        QCOMPARE(exporters::onnx_runtime_notes(source).size(), size_t(1));
    }

    // OpenCV 4.6 runs the Bilinear form (MatMul, Unsqueeze, Mul) with a batch of one only.
    void bilinearBatchOfOne() {
        auto source = fresh_source(project_of(bilinear_model(), "bilinear"));
        compare_with_opencv(source, {12}, "bilinear.onnx", {1});
    }

    // Not run by OpenCV 4.6 (no LayerNormalization; int64 inputs): written, checked, and the
    // inferred shapes must be Myelin's (export_onnx does that itself).
    void checkedOnly() {
        for (auto [spec, file] : {std::pair{layer_norm_model(), "layer_norm.onnx"},
                                  std::pair{embedding_model(), "embedding.onnx"},
                                  std::pair{relu6_model(), "relu6.onnx"}}) {
            auto source = fresh_source(project_of(spec, file));
            exporters::export_onnx(source, path(file));
            onnx::checker::check_model(read_model(path(file)));
        }
        // Which runtimes cannot run them is said, and true: OpenCV refuses each file.
        for (auto [spec, file, kind] :
             {std::tuple{layer_norm_model(), "layer_norm.onnx", "LayerNorm"},
              std::tuple{embedding_model(), "embedding.onnx", "Embedding"},
              std::tuple{relu6_model(), "relu6.onnx", "ReLU6"}}) {
            const auto notes = exporters::onnx_runtime_notes(fresh_source(project_of(spec, file)));
            QCOMPARE(notes.size(), size_t(1));
            QVERIFY2(QString::fromStdString(notes[0]).contains(kind), notes[0].c_str());
            const auto level =
                cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_SILENT);
            QVERIFY_THROWS_EXCEPTION(cv::Exception, cv::dnn::readNetFromONNX(path(file)));
            cv::utils::logging::setLogLevel(level);
        }
        QVERIFY(exporters::onnx_runtime_notes(
                    fresh_source(io::load_project(example_path("fashion_resnet"))))
                    .empty());
        const onnx::ModelProto ln = read_model(path("layer_norm.onnx"));
        bool found = false;
        for (const auto& node : ln.graph().node())
            found = found || node.op_type() == "LayerNormalization";
        QVERIFY(found);
    }

    // Each sequence kind on a float sequence [N, 6, 8] (no tokens, which OpenCV cannot take):
    // what OpenCV 4.6 runs matches Myelin, and what the notes say it cannot run it refuses, so
    // the ONNX forms of LSTM, attention, positions and the reductions are checked here too.
    void sequenceKindsInOpenCV_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QVariantMap>("attrs");
        QTest::addColumn<int>("features"); // of the layer's output, flattened
        QTest::addColumn<QString>("runs"); // "all", "batch 1", "no"
        auto row = [](const char* name, const char* kind, QVariantMap attrs, int features,
                      const char* runs) {
            QTest::newRow(name) << kind << attrs << features << runs;
        };
        row("lstm", "LSTM", {{"input_size", 8}, {"hidden_size", 4}}, 24, "batch 1");
        row("lstm_last_bidirectional", "LSTM",
            {{"input_size", 8}, {"hidden_size", 4}, {"bidirectional", true}, {"output", "last"}}, 8,
            "batch 1");
        row("lstm_two_layers", "LSTM", {{"input_size", 8}, {"hidden_size", 4}, {"num_layers", 2}},
            24, "batch 1");
        row("gru", "GRU", {{"input_size", 8}, {"hidden_size", 4}}, 24, "no");
        row("rnn", "RNN", {{"input_size", 8}, {"hidden_size", 4}}, 24, "no");
        row("sinusoidal", "PositionalEncoding", {{"d_model", 8}}, 48, "all");
        row("learned", "PositionalEncoding",
            {{"d_model", 8}, {"encoding", "learned"}, {"max_len", 10}}, 48, "all");
        row("attention", "MultiheadAttention", {{"embed_dim", 8}, {"num_heads", 2}}, 48, "all");
        row("causal_attention", "MultiheadAttention",
            {{"embed_dim", 8}, {"num_heads", 2}, {"causal", true}}, 48, "all");
        row("encoder_layer", "TransformerEncoderLayer",
            {{"d_model", 8}, {"nhead", 2}, {"dim_feedforward", 16}}, 48, "no");
        row("encoder", "TransformerEncoder",
            {{"d_model", 8}, {"nhead", 2}, {"dim_feedforward", 16}, {"num_layers", 1}}, 48, "no");
        row("last", "SequenceLast", {}, 8, "all");
        row("mean", "SequenceMeanPool", {}, 8, "all");
    }
    void sequenceKindsInOpenCV() {
        QFETCH(QString, kind);
        QFETCH(QVariantMap, attrs);
        QFETCH(int, features);
        QFETCH(QString, runs);
        graph::ModelSpec s;
        graph::Attrs a;
        for (auto it = attrs.begin(); it != attrs.end(); ++it) {
            const QVariant& v = it.value();
            if (v.typeId() == QMetaType::Bool)
                a.set(it.key().toStdString(), v.toBool());
            else if (v.typeId() == QMetaType::Int)
                a.set(it.key().toStdString(), int64_t(v.toInt()));
            else
                a.set(it.key().toStdString(), v.toString().toStdString());
        }
        const auto in = s.add_node("Input", "", {{"shape", L({6, 8})}});
        const auto layer = s.add_node(kind.toStdString(), "seq", a);
        const auto flat = s.add_node("Flatten", "flat");
        const auto fc =
            s.add_node("Linear", "fc", {{"in_features", I(features)}, {"out_features", I(3)}});
        const auto out = s.add_node("Output");
        s.connect(in, layer);
        s.connect(layer, flat);
        s.connect(flat, fc);
        s.connect(fc, out);
        const auto source = fresh_source(project_of(s, kind.toStdString()));
        const std::string file =
            ("seq_" + QString(QTest::currentDataTag()) + ".onnx").toStdString();
        const auto notes = exporters::onnx_runtime_notes(source);
        if (runs == "all") {
            QVERIFY(notes.empty());
            compare_with_opencv(source, {6, 8}, file.c_str());
            return;
        }
        QCOMPARE(notes.size(), size_t(1));
        if (runs == "batch 1") {
            QVERIFY2(QString::fromStdString(notes[0]).contains("batch of 1"), notes[0].c_str());
            compare_with_opencv(source, {6, 8}, file.c_str(), {1});
            return;
        }
        exporters::export_onnx(source, path(file.c_str()));
        const auto level = cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_SILENT);
        QVERIFY_THROWS_EXCEPTION(cv::Exception, cv::dnn::readNetFromONNX(path(file.c_str())));
        cv::utils::logging::setLogLevel(level);
    }

    // By hand: every model, also those OpenCV 4.6 cannot run, with onnxruntime. Set
    // MYELIN_ONNXRUNTIME_NODE_MODULES to a node_modules folder holding onnxruntime-node
    // (`npm install --ignore-scripts onnxruntime-node`; its CPU library is in the package).
    void everyModelInOnnxruntime() {
        const QString modules = qEnvironmentVariable("MYELIN_ONNXRUNTIME_NODE_MODULES");
        if (modules.isEmpty())
            QSKIP("MYELIN_ONNXRUNTIME_NODE_MODULES is not set: onnxruntime was not run");
        struct Case {
            exporters::ExportSource source;
            Dims shape;
            int64_t vocabulary; // 0: float input; else padded int64 tokens below it
            const char* file;
        };
        std::vector<Case> cases;
        for (const char* example : {"fashion_mlp", "fashion_cnn", "fashion_resnet"})
            cases.push_back(
                {fresh_source(io::load_project(example_path(example))), {1, 28, 28}, 0, example});
        cases.push_back(
            {fresh_source(project_of(image_layers_model(), "i")), {3, 12, 12}, 0, "image_layers"});
        cases.push_back(
            {fresh_source(project_of(vector_layers_model(), "v")), {4, 16}, 0, "vector_layers"});
        cases.push_back({fresh_source(project_of(bilinear_model(), "b")), {12}, 0, "bilinear"});
        cases.push_back({fresh_source(project_of(batch_statistics_model(), "s")),
                         {6, 8},
                         0,
                         "batch_statistics"});
        cases.push_back(
            {fresh_source(project_of(layer_norm_model(), "l")), {5, 16}, 0, "layer_norm"});
        cases.push_back({fresh_source(project_of(embedding_model(), "e")), {7}, 20, "embedding"});
        cases.push_back({relu6_source(), {12}, 0, "relu6"});
        for (const char* example :
             {"word_language", "word_language_lstm", "word_language_transformer"})
            cases.push_back(
                {fresh_source(io::load_project(example_path(example))), {24}, 128, example});
        // The example plugin's kind, exported through the plugin's forms.
        if (plugin::load_plugin(std::string(MYELIN_EXAMPLE_PLUGIN_DIR) + "/myelin_example.so")
                .problems.empty())
            cases.push_back(
                {fresh_source(io::load_project(std::string(std::getenv("MYELIN_SOURCE_DIR")) +
                                               "/plugins/example/fashion_se.myelin")),
                 {1, 28, 28},
                 0,
                 "fashion_se"});
        cases.push_back(
            {fresh_source(project_of(sequence_layers_model(), "q")), {12}, 30, "sequence_layers"});
        for (const Case& c : cases) {
            const std::string file = path((std::string(c.file) + "_ort.onnx").c_str());
            exporters::export_onnx(c.source, file);
            Dims shape{5};
            for (int64_t d : c.shape)
                shape.push_back(d);
            default_generator().manual_seed(9);
            const Tensor x = c.vocabulary ? padded_tokens(5, shape[1], c.vocabulary) : rand(shape);
            const Tensor got = onnxruntime_forward(modules, file, x);
            QVERIFY2(got.defined(), c.file);
            const double diff = relative_difference(myelin_forward(c.source, {x}), got);
            qInfo("%s, %s, batch 5: max relative difference %.3g", c.file, ort_version_.constData(),
                  diff);
            QVERIFY2(diff <= 1e-5, c.file);
        }
    }

    // The sequence kinds as ONNX's own recurrent ops on time-major input: the gate blocks
    // reordered, GRU with linear_before_reset, the lengths as int32 sequence_lens; every file
    // passes the checker and strict shape inference (in the exporter) with Myelin's output
    // shape. Their numbers are compared in onnxruntime above (by hand) and in PyTorch
    // (test_export_code).
    void sequenceModelsAreOnnxRecurrentOps() {
        auto source = fresh_source(project_of(sequence_layers_model(), "sequence"));
        const std::string file = path("sequence_layers.onnx");
        exporters::export_onnx(source, file);
        onnx::ModelProto model = read_model(file);
        onnx::checker::check_model(model);
        std::map<std::string, int> ops;
        for (const auto& node : model.graph().node()) {
            ++ops[node.op_type()];
            auto attr = [&](const char* name) -> const onnx::AttributeProto* {
                for (const auto& a : node.attribute())
                    if (a.name() == name) return &a;
                return nullptr;
            };
            if (node.op_type() == "GRU") {
                QVERIFY(attr("linear_before_reset") && attr("linear_before_reset")->i() == 1);
                QCOMPARE(attr("direction")->s(), std::string("bidirectional"));
                QCOMPARE(node.input_size(), 5); // X, W, R, B, sequence_lens
            }
            if (node.op_type() == "RNN") {
                QCOMPARE(attr("activations")->strings(0), std::string("Relu"));
                QCOMPARE(node.input_size(), 4); // no lengths
            }
        }
        QCOMPARE(ops["GRU"], 2); // one node per stacked layer
        QCOMPARE(ops["LSTM"], 1);
        QCOMPARE(ops["RNN"], 1);
        QCOMPARE(ops["LayerNormalization"], 4); // two encoder layers, two norms each
        QCOMPARE(ops["GatherElements"], 1);     // SequenceLast with lengths
        QCOMPARE(model.graph().output(0).type().tensor_type().shape().dim(1).dim_value(),
                 int64_t(5));
        // LSTM weights: PyTorch's i f g o blocks as ONNX's i o f c.
        const Tensor w_ih = [&] {
            for (const auto& [name, t] : source.weights)
                if (name == "lstm.weight_ih_l0") return t;
            return Tensor();
        }();
        QVERIFY(w_ih.defined());
        for (const auto& init : model.graph().initializer()) {
            if (init.name() != "lstm.layer0_W") continue;
            QCOMPARE(init.dims(0), int64_t(2)); // both directions
            const float* onnx_w = reinterpret_cast<const float*>(init.raw_data().data());
            const int64_t block = 4 * 8; // hidden 4 rows of input 8
            const int64_t order[] = {0, 3, 1, 2};
            for (int g = 0; g < 4; ++g)
                for (int64_t k = 0; k < block; ++k)
                    QCOMPARE(onnx_w[g * block + k],
                             w_ih.contiguous().data<float>()[order[g] * block + k]);
        }
        for (const char* example :
             {"word_language", "word_language_lstm", "word_language_transformer"}) {
            const std::string out = path((std::string(example) + ".onnx").c_str());
            exporters::export_onnx(fresh_source(io::load_project(example_path(example))), out);
            onnx::checker::check_model(read_model(out));
        }
    }

    // The example plugin's SqueezeExcitation, exported through the plugin's second entry
    // point, run by OpenCV (batch 1: OpenCV 4.6 fails on its broadcast Mul of [N, C, 1, 1] by
    // [N, C, H, W] for N > 1; onnxruntime runs any batch, above).
    void pluginKindRunsInOpenCV() {
        plugin::LoadReport report =
            plugin::load_plugin(std::string(MYELIN_EXAMPLE_PLUGIN_DIR) + "/myelin_example.so");
        QVERIFY2(report.problems.empty(),
                 report.problems.empty() ? "" : report.problems[0].message.c_str());
        const std::string project =
            std::string(std::getenv("MYELIN_SOURCE_DIR")) + "/plugins/example/fashion_se.myelin";
        compare_with_opencv(fresh_source(io::load_project(project)), {1, 28, 28}, "fashion_se.onnx",
                            {1});
    }

    void weightsAreRawInitializersWithStateDictNames() {
        auto source = fresh_source(io::load_project(example_path("fashion_cnn")));
        const std::string bytes = exporters::onnx_model_bytes(source);
        onnx::ModelProto model;
        QVERIFY(model.ParseFromString(bytes));
        std::set<std::string> names;
        for (const auto& init : model.graph().initializer()) {
            names.insert(init.name());
            QVERIFY2(init.has_raw_data(), init.name().c_str());
        }
        for (const auto& [name, tensor] : source.weights)
            QVERIFY2(names.count(name), name.c_str());
        // Flatten is a Reshape to the constant [0, -1]: no Shape / Gather chain.
        for (const auto& node : model.graph().node())
            QVERIFY(node.op_type() != "Shape" && node.op_type() != "Gather");
    }

    // A kind the exporter knows no ONNX form for (as a plugin's would be): named, nothing written.
    void unexportableLayerIsNamedAndNothingIsWritten() {
        graph::LayerKind kind;
        kind.name = "TestOnlyMystery";
        kind.category = graph::Category::Activation;
        kind.origin = "test_export_onnx";
        kind.infer = [](const graph::Attrs&, std::span<const graph::TensorType> in) {
            return in[0];
        };
        kind.build = [](const graph::Attrs&) { return std::make_shared<nn::Identity>(); };
        graph::register_layer_kind(kind);
        io::Project p = io::load_project(example_path("fashion_mlp"));
        graph::ModelSpec& s = p.model;
        const graph::Edge last = s.edges.back();
        s.disconnect(last.from, last.to, last.to_port);
        const graph::NodeId mystery = s.add_node("TestOnlyMystery", "mystery");
        s.connect(last.from, mystery);
        s.connect(mystery, last.to, last.to_port);
        auto source = fresh_source(p);
        QTemporaryDir empty;
        const std::string out = empty.filePath("model.onnx").toStdString();
        try {
            exporters::export_onnx(source, out);
            QFAIL("a layer with no ONNX form was exported");
        } catch (const Error& e) {
            const QString message = e.what();
            QVERIFY2(message.contains("layer 'mystery' (TestOnlyMystery)"), e.what());
            QVERIFY2(message.contains("no export form is known for layer kind 'TestOnlyMystery' "
                                      "(from test_export_onnx"),
                     e.what());
        }
        QVERIFY(folder_is_empty(empty.path()));
        QVERIFY(!exporters::onnx_unsupported_kind("TestOnlyMystery").empty());
        QVERIFY(exporters::onnx_unsupported_kind("Conv2d").empty());
        // The PyTorch code export refuses it the same way.
        QVERIFY_THROWS_EXCEPTION(Error, exporters::pytorch_code(source));
    }

    void checkpointThatDoesNotFitIsRefused() {
        auto mlp = fresh_source(io::load_project(example_path("fashion_mlp")));
        io::Checkpoint c;
        c.model = mlp.weights;
        c.project_json = io::serialize_project(mlp.project);
        const std::string checkpoint = path("mlp.safetensors");
        io::save_checkpoint(checkpoint, c);
        QTemporaryDir empty;
        try {
            exporters::load_export_source(io::load_project(example_path("fashion_cnn")),
                                          checkpoint);
            QFAIL("the MLP's weights were taken for the CNN");
        } catch (const Error& e) {
            const QString message = e.what();
            QVERIFY2(message.contains("do not fit the model"), e.what());
            QVERIFY2(message.contains("missing: ") && message.contains("unexpected: "), e.what());
        }
        QVERIFY(folder_is_empty(empty.path()));
        // A plain safetensors file of weights (no Myelin metadata) exports with its project.
        const std::string plain = path("plain.safetensors");
        io::save_safetensors(plain, mlp.weights);
        auto from_plain = exporters::load_export_source(mlp.project, plain);
        QCOMPARE(from_plain.weights.size(), mlp.weights.size());
        // Without a project the checkpoint's own is used, and it fits.
        auto own = exporters::load_export_source(std::nullopt, checkpoint);
        QCOMPARE(own.project.name, mlp.project.name);
    }

    void unwritablePathIsRefused() {
        auto source = fresh_source(io::load_project(example_path("fashion_mlp")));
        QTemporaryDir folder;
        const std::string missing = folder.filePath("no/such/folder/model.onnx").toStdString();
        try {
            exporters::export_onnx(source, missing);
            QFAIL("wrote into a folder that does not exist");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("does not exist"), e.what());
        }
        // A target that is a folder: refused, the folder untouched.
        QVERIFY(QDir(folder.path()).mkdir("taken.onnx"));
        try {
            exporters::export_onnx(source, folder.filePath("taken.onnx").toStdString());
            QFAIL("wrote over a folder");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("is a folder"), e.what());
        }
        QCOMPARE(
            QDir(folder.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
            QStringList{"taken.onnx"});
    }
};

QTEST_GUILESS_MAIN(TestExportOnnx)
#include "test_export_onnx.moc"
