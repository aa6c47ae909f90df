// An int8 checkpoint (myelin quantize) out of Myelin: the ONNX file in QDQ form (int8 weight
// initializers with their scales, QuantizeLinear / DequantizeLinear around the float ops with the
// calibrated parameters), the formats that refuse it, and `myelin quantize` on the command line.
#include <myelin/error.h>
#include <myelin/export/export.h>
#include <myelin/io/checkpoint.h>
#include <myelin/io/project.h>
#include <myelin/train/quantization.h>
#include <myelin/train/trainer.h>

#include <onnx/onnx_pb.h>

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "../support/stripes_project.h"

#include <cstring>
#include <filesystem>

using namespace myelin;

class TestExportQuantized : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    std::string folder_, project_;
    std::filesystem::path float_, int8_;

    static QString errorOf(const std::function<void()>& f) {
        try {
            f();
        } catch (const Error& e) {
            return QString::fromStdString(e.what());
        }
        return {};
    }

  private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        folder_ = dir_.path().toStdString();
        project_ = test::writeStripesProject(folder_, 2, 0);
        train::TrainerOptions options;
        options.project_dir = folder_;
        options.checkpoint_dir = folder_ + "/ck";
        train::Trainer trainer(io::load_project(project_), options);
        float_ = trainer.run().last_checkpoint;
        int8_ = folder_ + "/int8.safetensors";
        train::QuantizeOptions q;
        q.calibration_batches = 4;
        train::quantize_checkpoint(io::load_project(project_), folder_, float_, int8_, q);
    }

    void onnxIsQdq() {
        const exporters::ExportSource source = exporters::load_export_source(std::nullopt, int8_);
        QVERIFY(source.quantization.has_value());
        onnx::ModelProto model;
        QVERIFY(model.ParseFromString(exporters::onnx_model_bytes(source)));
        int quantize = 0, dequantize = 0;
        for (const auto& n : model.graph().node()) {
            quantize += n.op_type() == "QuantizeLinear";
            dequantize += n.op_type() == "DequantizeLinear";
        }
        // Input and output of both layers; their inputs, outputs and weights.
        QCOMPARE(quantize, 4);
        QCOMPARE(dequantize, 6);
        // The int8 weight is the checkpoint's, byte for byte, with its per-channel scales.
        const io::Checkpoint c = io::load_checkpoint(int8_);
        const Tensor* stored = nullptr;
        for (const auto& [name, t] : c.model)
            if (name == "conv.weight") stored = &t;
        QVERIFY(stored);
        bool found = false;
        for (const auto& init : model.graph().initializer())
            if (init.name() == "conv.weight_int8") {
                found = true;
                QCOMPARE(init.data_type(), int(onnx::TensorProto::INT8));
                QCOMPARE(init.raw_data().size(), size_t(stored->numel()));
                QCOMPARE(
                    std::memcmp(init.raw_data().data(), stored->data_ptr(), init.raw_data().size()),
                    0);
            }
        QVERIFY(found);
        bool has_plan = false;
        for (const auto& p : model.metadata_props())
            has_plan = has_plan || p.key() == "myelin.quantization";
        QVERIFY(has_plan);
    }

    void otherFormatsRefuseInt8() {
        const exporters::ExportSource source = exporters::load_export_source(std::nullopt, int8_);
        QVERIFY(errorOf([&] {
                    exporters::export_model(source, exporters::Format::PyTorch, folder_ + "/m.py");
                }).contains("ONNX"));
        QVERIFY(errorOf([&] {
                    exporters::export_model(source, exporters::Format::Safetensors,
                                            folder_ + "/m.safetensors");
                }).contains("already"));
        QVERIFY(!std::filesystem::exists(folder_ + "/m.py"));
        QVERIFY(!std::filesystem::exists(folder_ + "/m.safetensors"));
    }

    void commandLine() {
        auto run = [](const QStringList& args) {
            QProcess p;
            p.start(MYELIN_CLI_PATH, args);
            p.waitForFinished(300000);
            return std::make_tuple(p.exitCode(), QString(p.readAllStandardOutput()),
                                   QString(p.readAllStandardError()));
        };
        const QString out = QString::fromStdString(folder_ + "/cli_int8.safetensors");
        auto [code, text, err] = run({"quantize", QString::fromStdString(project_), "--checkpoint",
                                      QString::fromStdString(float_.string()), "-o", out,
                                      "--calibration-batches=3", "--observer", "minmax"});
        QVERIFY2(code == 0, qPrintable(err));
        QVERIFY2(text.contains("minmax observer, 3 calibration batch(es)"), qPrintable(text));
        QVERIFY(text.contains(QRegularExpression("int8 +conv +Conv2d .*ReLU fused")));
        QVERIFY(text.contains(QRegularExpression("int8 +fc +Linear")));
        auto [eval_code, eval_text, eval_err] = run({"eval", "--checkpoint", out});
        QVERIFY2(eval_code == 0, qPrintable(eval_err));
        QVERIFY(eval_text.contains("accuracy="));
        // Static-only options with --dynamic, an unknown observer: the command line is wrong.
        QCOMPARE(std::get<0>(run({"quantize", "--checkpoint", out, "-o", out, "--dynamic",
                                  "--observer", "minmax"})),
                 2);
        QCOMPARE(
            std::get<0>(run({"quantize", "--checkpoint", out, "-o", out, "--observer", "median"})),
            2);
        // An int8 checkpoint is not quantized again, and nothing is written.
        const QString again = QString::fromStdString(folder_ + "/again.safetensors");
        auto [again_code, again_text, again_err] =
            run({"quantize", "--checkpoint", out, "-o", again});
        QCOMPARE(again_code, 1);
        QVERIFY(again_err.contains("already quantized"));
        QVERIFY(!std::filesystem::exists(again.toStdString()));
    }
};

QTEST_GUILESS_MAIN(TestExportQuantized)
#include "test_export_quantized.moc"
