// PyTorch code and safetensors exports. The generated .py is run with /usr/bin/python3 when
// python3-torch is importable (skipped with a message otherwise): it loads the checkpoint with
// its own loader and its outputs must equal Myelin's on the same inputs. The exported
// safetensors carries the project and the description, so it loads without the project.
#include "export_test_models.h"

#include <myelin/error.h>
#include <myelin/export/layer_forms.h>
#include <myelin/io/checkpoint.h>
#include <myelin/io/safetensors.h>
#include <myelin/plugin/loader.h>
#include <myelin/tensor.h>

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

using namespace myelin;
using namespace export_test;

namespace {

const char* const kPython = "/usr/bin/python3";

// Loads the generated module, its checkpoint, runs inputs.bin ([N, ...] float32 or int64) and
// writes outputs.bin (float32).
const char* const kHarness = R"(
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("exported", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
model = module.load_checkpoint(sys.argv[2])
shape = [int(v) for v in sys.argv[5].split(",")]
dtype = torch.int64 if sys.argv[6] == "int64" else torch.float32
x = torch.frombuffer(bytearray(open(sys.argv[3], "rb").read()), dtype=dtype).reshape(shape)
with torch.no_grad():
    y = model(x).float().contiguous()
open(sys.argv[4], "wb").write(y.numpy().tobytes())
print("outputs", list(y.shape))
)";

bool torch_importable() {
    QProcess p;
    p.start(kPython, {"-c", "import torch"});
    return p.waitForFinished(60000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
}

void write_bytes(const QString& path, const Tensor& t) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    const Tensor c = t.contiguous();
    f.write(c.data<char>(), qint64(c.numel()) * (c.dtype() == DType::Int64 ? 8 : 4));
}

} // namespace

class TestExportCode : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;

    // Exports `source` as .py and a checkpoint, runs them in Python and compares with Myelin.
    void compare_with_torch(const exporters::ExportSource& source, const Tensor& x,
                            const QString& name) {
        if (!torch_importable())
            QSKIP("python3-torch is not importable by /usr/bin/python3; the generated code was "
                  "not run");
        const QString py = dir_.filePath(name + ".py"), ckpt = dir_.filePath(name + ".safetensors");
        exporters::export_pytorch(source, py.toStdString());
        io::Checkpoint c;
        c.model = source.weights;
        c.optimizer_kind = "";
        io::save_checkpoint(ckpt.toStdString(), c);
        const QString harness = dir_.filePath("harness.py"), in = dir_.filePath(name + ".in"),
                      out = dir_.filePath(name + ".out");
        QFile h(harness);
        QVERIFY(h.open(QIODevice::WriteOnly));
        h.write(kHarness);
        h.close();
        write_bytes(in, x);
        QStringList shape;
        for (int64_t d : x.sizes())
            shape << QString::number(d);
        QProcess p;
        p.start(kPython, {harness, py, ckpt, in, out, shape.join(","),
                          x.dtype() == DType::Int64 ? "int64" : "float32"});
        QVERIFY(p.waitForFinished(120000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        qInfo("%s: %s", qPrintable(name), p.readAllStandardOutput().trimmed().constData());
        const Tensor expected = myelin_forward(source, {x}).to(DType::Float32).contiguous();
        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray bytes = f.readAll();
        QCOMPARE(qint64(bytes.size()), qint64(expected.numel()) * 4);
        const float* got = reinterpret_cast<const float*>(bytes.constData());
        double diff = 0, scale = 1;
        for (int64_t i = 0; i < expected.numel(); ++i) {
            diff = std::max(diff, std::abs(double(got[i]) - expected.data<float>()[i]));
            scale = std::max(scale, double(std::abs(expected.data<float>()[i])));
        }
        qInfo("%s: max relative difference to Myelin %.3g", qPrintable(name), diff / scale);
        QVERIFY2(diff / scale <= 1e-5, qPrintable(name));
    }

  private slots:
    void initTestCase() { QVERIFY(dir_.isValid()); }

    void chainIsSequentialWithStateDictNames() {
        auto source = fresh_source(io::load_project(example_path("fashion_cnn")));
        source.description.class_names = {"T-shirt/top", "Trouser"};
        source.description.preprocessing = {
            {"ScaleTo01", {}},
            {"Normalize", {{"mean", std::string("0.286")}, {"std", std::string("0.353")}}}};
        const QString code = QString::fromStdString(exporters::pytorch_code(source));
        QVERIFY(code.contains("class Model(nn.Sequential):"));
        QVERIFY(code.contains("INPUT_SHAPE = (1, 28, 28)"));
        QVERIFY(code.contains("CLASS_NAMES = [\"T-shirt/top\", \"Trouser\"]"));
        QVERIFY(code.contains("torch.tensor([0.286])"));
        QVERIFY(code.contains("def load_checkpoint(path, model=None):"));
        QVERIFY(!code.contains("import safetensors"));
        for (const auto& [name, tensor] : source.weights) {
            const std::string module = name.substr(0, name.rfind('.'));
            QVERIFY2(code.contains(q("(\"" + module + "\", nn.")), name.c_str());
        }
    }

    void graphWithBranchesHasExplicitForward() {
        auto source = fresh_source(io::load_project(example_path("fashion_resnet")));
        const QString code = QString::fromStdString(exporters::pytorch_code(source));
        QVERIFY(code.contains("class Model(nn.Module):"));
        QVERIFY(code.contains("    def forward(self, image):")); // the Input node's name
        QVERIFY(code.contains(" + "));
    }

    void fashionExamplesRunInPyTorch_data() {
        QTest::addColumn<QString>("example");
        QTest::newRow("mlp") << "fashion_mlp";
        QTest::newRow("cnn") << "fashion_cnn";
        QTest::newRow("resnet") << "fashion_resnet";
    }
    void fashionExamplesRunInPyTorch() {
        QFETCH(QString, example);
        auto source = fresh_source(io::load_project(example_path(example.toStdString())));
        default_generator().manual_seed(3);
        compare_with_torch(source, rand({4, 1, 28, 28}), example);
    }

    // The word-language example: its int64 ids through the exported model, and the exported
    // encode() giving Myelin's ids for char and word tokens (non-ASCII, punctuation, quotes).
    void textModelEncodesLikeMyelin() {
        auto source = fresh_source(io::load_project(example_path("word_language")));
        data::TextEncoding e;
        e.lowercase = true;
        e.max_length = 24;
        e.vocabulary = {"<pad>", "<unk>", "a", "\"", "\\", "ä", "é", "å", "s", "t", "e", "r"};
        source.description.text_encoding = e;
        const QString code = QString::fromStdString(exporters::pytorch_code(source));
        QVERIFY(code.contains("MAX_LENGTH = 24"));
        QVERIFY(code.contains("def encode(texts):"));
        const Tensor ids =
            from_vector(data::TextEncoder(e).encode("Straße \"é\\Å"), {1, 24}, DType::Int64);
        compare_with_torch(source, ids.expand({2, 24}).contiguous(), "word_language");

        const std::vector<std::string> texts = {"Straße \"é\\Å", "tärta, rast!", "", "x"};
        for (data::TokenLevel level : {data::TokenLevel::Char, data::TokenLevel::Word}) {
            e.level = level;
            e.max_length = 5;
            e.vocabulary = {"<pad>", "<unk>", "a", "\"", "ä", "é", "å", ",", "!", "rast", "s"};
            source.description.text_encoding = e;
            const QString py = dir_.filePath("text.py");
            exporters::export_pytorch(source, py.toStdString());
            QString expected;
            for (const auto& text : texts) {
                QStringList row;
                for (int64_t id : data::TextEncoder(e).encode(text))
                    row << QString::number(id);
                expected += "[" + row.join(", ") + "]";
            }
            QProcess p;
            p.start(kPython, {"-c",
                              "import importlib.util, sys\n"
                              "spec = importlib.util.spec_from_file_location('m', sys.argv[1])\n"
                              "m = importlib.util.module_from_spec(spec)\n"
                              "spec.loader.exec_module(m)\n"
                              "texts = ['Straße \"é\\\\Å', 'tärta, rast!', '', 'x']\n"
                              "print(''.join(str(r) for r in m.encode(texts).tolist()))",
                              py});
            QVERIFY(p.waitForFinished(120000));
            QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
            QCOMPARE(QString::fromUtf8(p.readAllStandardOutput()).trimmed(), expected);
        }
    }

    void everyLayerRunsInPyTorch() {
        default_generator().manual_seed(4);
        compare_with_torch(fresh_source(project_of(image_layers_model(), "image")),
                           rand({3, 3, 12, 12}), "image_layers");
        compare_with_torch(fresh_source(project_of(vector_layers_model(), "vector")),
                           rand({3, 4, 16}), "vector_layers");
        compare_with_torch(fresh_source(project_of(bilinear_model(), "bilinear")), rand({3, 12}),
                           "bilinear");
        compare_with_torch(fresh_source(project_of(batch_statistics_model(), "stats")),
                           rand({3, 6, 8}), "batch_statistics");
        compare_with_torch(fresh_source(project_of(layer_norm_model(), "ln")), rand({3, 5, 16}),
                           "layer_norm");
        compare_with_torch(fresh_source(project_of(embedding_model(), "emb")),
                           randint(0, 20, {3, 7}), "embedding");
        compare_with_torch(relu6_source(), rand({3, 12}), "relu6");
    }

    void safetensorsDescribesItself() {
        auto source = fresh_source(io::load_project(example_path("fashion_cnn")));
        source.description.class_names = {"a", "b"};
        source.description.run_id = 12;
        source.description.project_dir = "/data/projects";
        source.description.metrics = {{"train_loss", 0.5}, {"val_accuracy", 0.875}};
        source.description.metrics_step = 40;
        source.description.preprocessing = {{"ScaleTo01", {}}};
        const std::string out = dir_.filePath("weights.safetensors").toStdString();
        exporters::export_safetensors(source, out);
        const io::SafetensorsHeader header = io::read_safetensors_header(out);
        for (const char* key : {"project", "class_names", "input_shape", "preprocessing", "run_id",
                                "step", "metrics", "project_dir"})
            QVERIFY2(header.metadata_value(key).has_value(), key);
        QCOMPARE(*header.metadata_value("class_names"), std::string("[\"a\",\"b\"]"));
        QCOMPARE(*header.metadata_value("input_shape"), std::string("[1,28,28]"));
        QCOMPARE(*header.metadata_value("step"), std::string("42"));
        for (const auto& t : header.tensors)
            QVERIFY2(t.name.rfind("optimizer.", 0) != 0, t.name.c_str());
        // The model card beside it.
        QFile card(dir_.filePath("weights.md"));
        QVERIFY(card.open(QIODevice::ReadOnly));
        const QString md = card.readAll();
        for (const char* part :
             {"# Fashion-MNIST CNN", "## Architecture", "| 8 | 7 | Linear |", "421,642 parameters",
              "run 12, step 42", "| val_accuracy | 0.8750 |", "At step 40", "- `ScaleTo01`", "1. b",
              "optimizer: `Adam`",
              "Not evaluated: the weights were not read from a checkpoint file"})
            QVERIFY2(md.contains(part), part);
        // Read back: the description round-trips, and the file opens without the project.
        const io::Checkpoint c = io::load_checkpoint(out);
        QVERIFY(c.description == source.description);
        auto again = exporters::load_export_source(std::nullopt, out);
        QCOMPARE(again.project.name, source.project.name);
        QCOMPARE(again.weights.size(), source.weights.size());
    }

    void failedExportLeavesExistingFileAlone() {
        io::Project p = project_of(image_layers_model(), "bad");
        p.model.nodes.back().kind = "NoSuchLayer";
        auto source = fresh_source(io::load_project(example_path("fashion_mlp")));
        source.project = p;
        const QString out = dir_.filePath("kept.py");
        QFile f(out);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("previous");
        f.close();
        QVERIFY_THROWS_EXCEPTION(Error, exporters::export_pytorch(source, out.toStdString()));
        QFile again(out);
        QVERIFY(again.open(QIODevice::ReadOnly));
        QCOMPARE(again.readAll(), QByteArray("previous"));
    }

    // The three word-language examples (embedding + MLP, LSTM with lengths, Transformer with
    // lengths) on padded token batches.
    void wordLanguageExamplesRunInPyTorch_data() {
        QTest::addColumn<QString>("example");
        QTest::newRow("mlp") << "word_language";
        QTest::newRow("lstm") << "word_language_lstm";
        QTest::newRow("transformer") << "word_language_transformer";
    }
    void wordLanguageExamplesRunInPyTorch() {
        QFETCH(QString, example);
        auto source = fresh_source(io::load_project(example_path(example.toStdString())));
        default_generator().manual_seed(5);
        compare_with_torch(source, padded_tokens(6, 24, 128), example);
    }

    void everySequenceLayerRunsInPyTorch() {
        auto source = fresh_source(project_of(sequence_layers_model(), "sequence"));
        default_generator().manual_seed(6);
        compare_with_torch(source, padded_tokens(5, 12, 30), "sequence_layers");
    }

    // PyTorch's own modules (so the checkpoint loads strictly), the lengths through
    // pack_padded_sequence, and one variable per output port named after it.
    void sequenceLayersUsePyTorchModules() {
        auto source = fresh_source(project_of(sequence_layers_model(), "sequence"));
        const QString code = QString::fromStdString(exporters::pytorch_code(source));
        for (const char* part :
             {"self.gru = nn.GRU(8, 6, num_layers=2, batch_first=True, bidirectional=True)",
              "self.rnn = nn.RNN(12, 5, nonlinearity=\"relu\", batch_first=True)",
              "self.lstm = nn.LSTM(8, 4, batch_first=True, bidirectional=True)",
              "self.mha = nn.MultiheadAttention(12, 3, batch_first=True)",
              "self.pos = LearnedPositionalEncoding(8, dropout=0.0, max_len=16)",
              "gru, gru_h_n = recurrent_ports(self.gru, pos, lengths=len)",
              "rnn, rnn_h_n = recurrent_ports(self.rnn, gru, last=True)",
              "lstm, lstm_h_n, lstm_c_n = recurrent_ports(self.lstm, pos, lengths=len)",
              "mha, mha_weights = self.mha(gru, gru, gru, attn_mask=causal_mask(gru.size(1)), "
              "key_padding_mask=padding_mask(len, gru.size(1)), need_weights=True, "
              "average_attn_weights=False)",
              "pack_padded_sequence", "enable_nested_tensor=False", "def sequence_last(",
              "def sequence_mean(", "def padding_lengths(", "class LearnedPositionalEncoding("})
            QVERIFY2(code.contains(part), part);
        // Definitions the model does not use are left out.
        QVERIFY(!code.contains("class SinusoidalPositionalEncoding("));
        QVERIFY(!code.contains("import math"));
    }

    // The example plugin's second entry point gives SqueezeExcitation's forms: the plugin's
    // project exports, and the code runs in PyTorch.
    void pluginKindExportsThroughItsForms() {
        plugin::LoadReport report =
            plugin::load_plugin(std::string(MYELIN_EXAMPLE_PLUGIN_DIR) + "/myelin_example.so");
        QVERIFY2(report.problems.empty(),
                 report.problems.empty() ? "" : report.problems[0].message.c_str());
        QVERIFY(exporters::find_layer_forms("SqueezeExcitation") != nullptr);
        const std::string project =
            std::string(std::getenv("MYELIN_SOURCE_DIR")) + "/plugins/example/fashion_se.myelin";
        auto source = fresh_source(io::load_project(project));
        const QString code = QString::fromStdString(exporters::pytorch_code(source));
        QVERIFY(code.contains("class SqueezeExcitation(nn.Module):"));
        default_generator().manual_seed(8);
        compare_with_torch(source, rand({3, 1, 28, 28}), "fashion_se");
    }
};

QTEST_GUILESS_MAIN(TestExportCode)
#include "test_export_code.moc"
