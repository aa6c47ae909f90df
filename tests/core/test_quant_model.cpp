// A trained model made int8 (quant/quantized_model.h, train/quantization.h): the plan, the
// calibration, the checkpoint it writes, its evaluation, and what is refused.
#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/graph/build.h>
#include <myelin/io/checkpoint.h>
#include <myelin/io/project.h>
#include <myelin/io/safetensors.h>
#include <myelin/nn/layers.h>
#include <myelin/quant/quantized_model.h>
#include <myelin/train/evaluation.h>
#include <myelin/train/quantization.h>
#include <myelin/train/trainer.h>

#include <QTemporaryDir>
#include <QtTest>

#include "../support/stripes_project.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>

using namespace myelin;

namespace {

struct Trained {
    std::string folder, file;
    std::filesystem::path checkpoint;
};

// The stripes CNN (conv -> ReLU -> pool -> flatten -> fc) trained for three epochs.
Trained trainStripes(const QTemporaryDir& dir) {
    Trained t;
    t.folder = dir.path().toStdString();
    t.file = test::writeStripesProject(t.folder, 3, 0);
    train::TrainerOptions options;
    options.project_dir = t.folder;
    options.checkpoint_dir = t.folder + "/ck";
    train::Trainer trainer(io::load_project(t.file), options);
    t.checkpoint = trainer.run().last_checkpoint;
    return t;
}

// `t`'s checkpoint quantized (static, 2 calibration batches) into int8.safetensors beside it.
std::filesystem::path quantizeStripes(const Trained& t) {
    const std::filesystem::path int8 = t.folder + "/int8.safetensors";
    train::QuantizeOptions options;
    options.calibration_batches = 2;
    train::quantize_checkpoint(io::load_project(t.file), t.folder, t.checkpoint, int8, options);
    return int8;
}

train::Evaluation evaluate(const Trained& t, const std::filesystem::path& checkpoint) {
    auto trainer = train::trainer_for_checkpoint(io::load_project(t.file), t.folder, checkpoint);
    return train::evaluate_examples(*trainer, train::evaluation_dataset(*trainer));
}

template <typename F> QString errorOf(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

} // namespace

class TestQuantModel : public QObject {
    Q_OBJECT

  private slots:
    void staticQuantizationEvaluatesLikeTheFloatModel() {
        QTemporaryDir dir;
        const Trained t = trainStripes(dir);
        QVERIFY(std::filesystem::exists(t.checkpoint));
        const std::filesystem::path int8 = t.folder + "/int8.safetensors";
        train::QuantizeOptions options;
        options.calibration_batches = 6;
        std::vector<int64_t> progress;
        options.progress = [&](int64_t done, int64_t) { progress.push_back(done); };
        const train::QuantizeResult r = train::quantize_checkpoint(
            io::load_project(t.file), t.folder, t.checkpoint, int8, options);

        QCOMPARE(progress.size(), size_t(6));
        QCOMPARE(r.plan.calibration_batches, int64_t(6));
        QCOMPARE(r.plan.layers.size(), size_t(2));
        QCOMPARE(r.plan.layers[0].module, std::string("conv"));
        QVERIFY(r.plan.layers[0].relu);                  // the ReLU after it is fused
        QCOMPARE(r.plan.layers[0].output.zero_point, 0); // observed after the ReLU
        QCOMPARE(r.plan.layers[1].module, std::string("fc"));
        QVERIFY(!r.plan.layers[1].relu);
        QVERIFY(r.plan.float_layers.empty());
        QVERIFY(r.int8_bytes < r.float_bytes / 2);

        // The file: int8 weights tagged I8, the plan, no optimizer state.
        const io::Checkpoint saved = io::load_checkpoint(int8);
        QCOMPARE(saved.int8_tensors, (std::vector<std::string>{"conv.weight", "fc.weight"}));
        QVERIFY(!saved.quantization.empty());
        QVERIFY(saved.optimizer_kind.empty());
        QVERIFY(!saved.project_json.empty());

        const train::Evaluation f = evaluate(t, t.checkpoint);
        const train::Evaluation q = evaluate(t, int8);
        QCOMPARE(q.size, f.size);
        int64_t same = 0;
        for (size_t i = 0; i < f.predicted.size(); ++i)
            same += f.predicted[i] == q.predicted[i];
        QVERIFY2(same >= f.size * 9 / 10, qPrintable(QString("%1 of %2").arg(same).arg(f.size)));
        double largest = 0, scale = 0;
        for (size_t i = 0; i < f.outputs.size(); ++i) {
            largest = std::max(largest, double(std::abs(f.outputs[i] - q.outputs[i])));
            scale = std::max(scale, double(std::abs(f.outputs[i])));
        }
        QVERIFY2(
            largest <= 0.1 * scale,
            qPrintable(QString("int8 logits differ by %1 (largest %2)").arg(largest).arg(scale)));
        // Evaluating again gives the same numbers (same machine, same kernels).
        QCOMPARE(evaluate(t, int8).outputs, q.outputs);
        QCOMPARE(r.plan.layers[0].output_to, std::string("fc")); // through the pool and Flatten
        QVERIFY(r.plan.layers[1].input == r.plan.layers[0].output);

        // conv hands fc its uint8 values; a hook on conv (an inspection) makes it hand on
        // float32 instead, which fc quantizes back to the same values: the same logits.
        auto trainer = train::trainer_for_checkpoint(io::load_project(t.file), t.folder, int8);
        graph::GraphModule& model = trainer->model();
        const Tensor x = randn(Dims{5, 1, 8, 8});
        const Tensor handed_uint8 = model(x);
        HookHandle hook = model.child("conv")->register_forward_hook(
            [](nn::Module&, const TensorList&, const Tensor& y) {
                if (y.dtype() != DType::Float32) throw Error("a hook saw non-float values");
                return Tensor();
            });
        const Tensor handed_float = model(x);
        hook.remove();
        QCOMPARE(handed_float.dtype(), DType::Float32);
        QVERIFY(equal(handed_uint8, handed_float));
    }

    void int8CheckpointsCannotTrainOrBeQuantizedAgain() {
        QTemporaryDir dir;
        const Trained t = trainStripes(dir);
        const std::filesystem::path int8 = quantizeStripes(t);

        QVERIFY(errorOf([&] {
                    train::quantize_checkpoint(io::load_project(t.file), t.folder, int8,
                                               t.folder + "/again.safetensors", {});
                }).contains("already quantized"));
        QVERIFY(!std::filesystem::exists(t.folder + "/again.safetensors"));

        train::TrainerOptions resume;
        resume.project_dir = t.folder;
        resume.resume_from = int8;
        QVERIFY(errorOf([&] {
                    train::Trainer trainer(io::load_project(t.file), resume);
                    trainer.run();
                }).contains("cannot be trained on"));
        train::TrainerOptions init;
        init.project_dir = t.folder;
        init.init_weights = int8;
        QVERIFY(errorOf([&] {
                    train::Trainer trainer(io::load_project(t.file), init);
                    trainer.run();
                }).contains("int8"));

        // int8 tensors without a plan that reads them are refused.
        io::Checkpoint c = io::load_checkpoint(int8);
        c.quantization.clear();
        io::save_checkpoint(t.folder + "/no_plan.safetensors", c);
        QVERIFY(errorOf([&] {
                    io::load_checkpoint(t.folder + "/no_plan.safetensors");
                }).contains("'conv.weight' is int8"));
        // A damaged scale is named.
        c = io::load_checkpoint(int8);
        for (auto& [name, tensor] : c.model)
            if (name == "fc.input_scale") tensor = full(Dims{}, -1.0);
        io::save_checkpoint(t.folder + "/bad_scale.safetensors", c);
        QVERIFY(errorOf([&] {
                    evaluate(t, t.folder + "/bad_scale.safetensors");
                }).contains("fc.input"));
    }

    // Damaged int8 checkpoints: a plan edited or broken, scales and zero points out of range.
    // Each is refused with an Error naming the file, or (for a harmless byte change in the
    // JSON) evaluates: never a crash, never a model silently rewired.
    void damagedInt8CheckpointsAreRefused() {
        QTemporaryDir dir;
        const Trained t = trainStripes(dir);
        const std::filesystem::path int8 = quantizeStripes(t);
        const io::Checkpoint good = io::load_checkpoint(int8);
        const std::string damaged = t.folder + "/damaged.safetensors";
        auto outcome = [&](const io::Checkpoint& c) {
            io::save_checkpoint(damaged, c);
            return errorOf([&] { evaluate(t, damaged); });
        };
        auto with_plan = [&](const std::string& from, const std::string& to) {
            io::Checkpoint c = good;
            const size_t at = c.quantization.find(from);
            if (at == std::string::npos) throw std::runtime_error("no '" + from + "' in the plan");
            c.quantization.replace(at, from.size(), to);
            return c;
        };
        for (const auto& [from, to] :
             {std::pair<std::string, std::string>{"\"output_to\":\"fc\"", "\"output_to\":\"conv\""},
              {"\"relu\":true", "\"relu\":false"},
              {"\"relu_module\":\"act\"", "\"relu_module\":\"fc\""},
              {"\"pool_module\":\"pool\"", "\"pool_module\":\"act\""},
              {"\"kind\":\"Conv2d\"", "\"kind\":\"Linear\""},
              {"\"module\":\"fc\"", "\"module\":\"nowhere\""},
              {"\"scheme\":\"static\"", "\"scheme\":\"dynamic\""},
              {"\"observer\":\"histogram\"", "\"observer\":\"median\""}}) {
            const QString message = outcome(with_plan(from, to));
            QVERIFY2(message.contains("damaged.safetensors"),
                     qPrintable(QString::fromStdString(from + " -> " + to) + ": " + message));
        }
        for (const auto& [tensor, value] : {std::pair<std::string, double>{"conv.input_scale", 0.0},
                                            {"conv.input_scale", std::nan("")},
                                            {"conv.output_zero_point", 300.0},
                                            {"fc.input_scale", -1.0}}) {
            io::Checkpoint c = good;
            for (auto& [name, t] : c.model)
                if (name == tensor) t = full(t.sizes(), value, t.dtype());
            QVERIFY2(
                outcome(c).contains(QString::fromStdString(tensor.substr(0, tensor.find('_')))),
                tensor.c_str());
        }
        {
            io::Checkpoint c = good;
            for (auto& [name, t] : c.model)
                if (name == "conv.weight_scale") t = zeros(t.sizes());
            QVERIFY(outcome(c).contains("weight_scale"));
        }
        // Any single byte of the plan changed: refused or evaluated, nothing else.
        std::mt19937 rng(7);
        for (int trial = 0; trial < 60; ++trial) {
            io::Checkpoint c = good;
            const size_t at = rng() % c.quantization.size();
            c.quantization[at] = char(32 + rng() % 95);
            const QString message = outcome(c);
            QVERIFY2(message.isEmpty() || message.contains("damaged.safetensors"),
                     qPrintable(message));
        }
    }

    void dynamicQuantizationCoversLinearLayers() {
        QTemporaryDir dir;
        const Trained t = trainStripes(dir);
        const std::filesystem::path int8 = t.folder + "/dynamic.safetensors";
        train::QuantizeOptions options;
        options.scheme = quant::Scheme::Dynamic;
        const train::QuantizeResult r = train::quantize_checkpoint(
            io::load_project(t.file), t.folder, t.checkpoint, int8, options);
        QCOMPARE(r.plan.layers.size(), size_t(1));
        QCOMPARE(r.plan.layers[0].module, std::string("fc"));
        QCOMPARE(r.plan.float_layers.size(), size_t(1));
        QCOMPARE(r.plan.float_layers[0].module, std::string("conv"));
        QVERIFY(QString::fromStdString(r.plan.float_layers[0].reason).contains("dynamic"));
        const train::Evaluation f = evaluate(t, t.checkpoint);
        const train::Evaluation q = evaluate(t, int8);
        int64_t same = 0;
        for (size_t i = 0; i < f.predicted.size(); ++i)
            same += f.predicted[i] == q.predicted[i];
        QVERIFY(same >= f.size * 9 / 10);
    }

    // QAT: training with fake quantization from the float weights, then the PTQ conversion.
    void quantizationAwareTraining() {
        QTemporaryDir dir;
        const Trained t = trainStripes(dir);
        const std::filesystem::path ptq = t.folder + "/ptq.safetensors";
        const std::filesystem::path qat = t.folder + "/qat.safetensors";
        train::QuantizeOptions options;
        options.calibration_batches = 4;
        train::quantize_checkpoint(io::load_project(t.file), t.folder, t.checkpoint, ptq, options);
        options.qat_epochs = 1;
        options.qat_lr = 0.01;
        const train::QuantizeResult r = train::quantize_checkpoint(
            io::load_project(t.file), t.folder, t.checkpoint, qat, options);
        QCOMPARE(r.plan.qat_epochs, int64_t(1));
        QCOMPARE(r.plan.observer, quant::ObserverKind::MovingAverageMinMax);
        QCOMPARE(r.plan.calibration_batches, int64_t(4));
        QCOMPARE(quant::QuantizationPlan::from_json(r.plan.to_json(), "f").qat_epochs, int64_t(1));
        // The same layers and the same kind of file as PTQ, with trained weights.
        const io::Checkpoint a = io::load_checkpoint(ptq), b = io::load_checkpoint(qat);
        QCOMPARE(b.int8_tensors, a.int8_tensors);
        QCOMPARE(b.model.size(), a.model.size());
        bool changed = false;
        for (size_t i = 0; i < a.model.size(); ++i) {
            QCOMPARE(b.model[i].first, a.model[i].first);
            QCOMPARE(b.model[i].second.sizes(), a.model[i].second.sizes());
            if (a.model[i].first == "fc.weight")
                changed = std::memcmp(a.model[i].second.data_ptr(), b.model[i].second.data_ptr(),
                                      size_t(a.model[i].second.numel())) != 0;
        }
        QVERIFY(changed);
        const train::Evaluation f = evaluate(t, t.checkpoint);
        const train::Evaluation q = evaluate(t, qat);
        QVERIFY2(q.metrics.at("accuracy") >= f.metrics.at("accuracy") - 0.1,
                 qPrintable(QString("QAT %1, float %2")
                                .arg(q.metrics.at("accuracy"))
                                .arg(f.metrics.at("accuracy"))));
        // Dynamic quantization has no QAT.
        options.scheme = quant::Scheme::Dynamic;
        QVERIFY(errorOf([&] {
                    train::quantize_checkpoint(io::load_project(t.file), t.folder, t.checkpoint,
                                               t.folder + "/x.safetensors", options);
                }).contains("static"));
    }

    // quantize_dynamic's recurrent layers: int8 weights, each step's activations quantized on
    // the fly; the lengths skip padding; the state reads back into a fresh model.
    void dynamicRecurrentLayers_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<bool>("bidirectional");
        QTest::newRow("LSTM") << "LSTM" << true;
        QTest::newRow("GRU") << "GRU" << false;
        QTest::newRow("RNN") << "RNN" << true;
    }
    void dynamicRecurrentLayers() {
        QFETCH(QString, kind);
        QFETCH(bool, bidirectional);
        graph::ModelSpec spec;
        const auto in = spec.add_node(
            "Input", "", {{"shape", std::vector<int64_t>{7}}, {"dtype", std::string("int64")}});
        const auto emb = spec.add_node(
            "Embedding", "emb", {{"num_embeddings", int64_t(20)}, {"embedding_dim", int64_t(6)}});
        const auto lengths = spec.add_node("PaddingLengths", "lengths");
        const auto rnn = spec.add_node(kind.toStdString(), "rnn",
                                       {{"input_size", int64_t(6)},
                                        {"hidden_size", int64_t(5)},
                                        {"num_layers", int64_t(2)},
                                        {"bidirectional", bidirectional},
                                        {"output", std::string("last")},
                                        {"num_inputs", int64_t(2)}});
        const int64_t features = bidirectional ? 10 : 5;
        const auto fc = spec.add_node("Linear", "fc",
                                      {{"in_features", features}, {"out_features", int64_t(3)}});
        const auto out = spec.add_node("Output");
        spec.connect(in, emb);
        spec.connect(in, lengths);
        spec.connect(emb, rnn);
        spec.connect(lengths, rnn, 1);
        spec.connect(rnn, fc);
        spec.connect(fc, out);
        default_generator().manual_seed(5);
        auto model = graph::build(spec);
        model->eval();
        // Rows with padding (0) after their words, one of them all padding.
        std::vector<int64_t> tokens(4 * 7, 0);
        for (int64_t r = 0; r < 3; ++r)
            for (int64_t t = 0; t < 7 - 2 * r; ++t)
                tokens[size_t(r * 7 + t)] = 1 + (r * 7 + t * 3) % 19;
        const Tensor x = from_vector(tokens, Dims{4, 7});
        const Tensor expected = (*model)(x);

        const quant::QuantizationPlan plan =
            quant::plan_quantization(spec, *model, quant::Scheme::Dynamic);
        QCOMPARE(plan.layers.size(), size_t(2));
        QCOMPARE(plan.layers[0].kind, kind.toStdString());
        QVERIFY(plan.layers[0].last_only);
        quant::quantize_model(*model, plan);
        const Tensor got = (*model)(x);
        QCOMPARE(got.sizes(), expected.sizes());
        const double scale = max(abs(expected)).item<double>();
        const double diff = max(abs(sub(got, expected))).item<double>();
        QVERIFY2(diff <= 0.05 * scale + 1e-3,
                 qPrintable(QString("int8 %1 differs by %2 (outputs up to %3)")
                                .arg(kind)
                                .arg(diff)
                                .arg(scale)));

        const quant::QuantizedState state = quant::quantized_state(*model);
        QCOMPARE(state.int8_names.size(), size_t((bidirectional ? 8 : 4) + 1));
        auto fresh = graph::build(spec);
        fresh->eval();
        quant::load_quantized(*fresh, quant::QuantizationPlan::from_json(plan.to_json(), "f"),
                              state.tensors, "f");
        QVERIFY(equal((*fresh)(x), got));
    }

    // A convolution's BatchNorm is folded into its int8 weights and bias (fuse_modules), the
    // ReLU after the BatchNorm fused; the export's spec loses the BatchNorm.
    void batchNormIsFolded() {
        try {
            checkBatchNormFolding();
        } catch (const std::exception& e) {
            QFAIL(e.what());
        }
    }

  private:
    void checkBatchNormFolding() {
        graph::ModelSpec spec;
        const auto in = spec.add_node("Input", "", {{"shape", std::vector<int64_t>{2, 6, 6}}});
        const auto conv = spec.add_node("Conv2d", "conv",
                                        {{"in_channels", int64_t(2)},
                                         {"out_channels", int64_t(4)},
                                         {"kernel_size", int64_t(3)},
                                         {"padding", int64_t(1)},
                                         {"bias", false}});
        const auto bn = spec.add_node("BatchNorm2d", "bn", {{"num_features", int64_t(4)}});
        const auto relu = spec.add_node("ReLU", "act");
        const auto flat = spec.add_node("Flatten", "flat");
        const auto fc = spec.add_node(
            "Linear", "fc", {{"in_features", int64_t(144)}, {"out_features", int64_t(3)}});
        const auto out = spec.add_node("Output");
        for (auto [a, b] :
             {std::pair{in, conv}, {conv, bn}, {bn, relu}, {relu, flat}, {flat, fc}, {fc, out}})
            spec.connect(a, b);
        // The same float model twice: one quantized with the BatchNorm folded, one with it left
        // float. Folding must cost no more than the int8 rounding does.
        auto make = [&] {
            default_generator().manual_seed(9);
            auto m = graph::build(spec);
            auto& norm = dynamic_cast<nn::BatchNorm2d&>(*m->child("bn"));
            autograd::NoGradGuard no_grad;
            norm.running_mean.copy_(
                from_vector(std::vector<float>{0.3f, -0.2f, 0.1f, 0.5f}, Dims{4}));
            norm.running_var.copy_(
                from_vector(std::vector<float>{0.5f, 2.0f, 1.5f, 0.8f}, Dims{4}));
            norm.weight.copy_(from_vector(std::vector<float>{1.2f, 0.7f, -0.9f, 1.1f}, Dims{4}));
            norm.bias.copy_(from_vector(std::vector<float>{0.1f, 0.2f, -0.3f, 0.05f}, Dims{4}));
            m->eval();
            return m;
        };
        auto model = make(), unfolded = make();
        default_generator().manual_seed(10);
        const Tensor x = randn(Dims{8, 2, 6, 6});
        TensorList batches;
        for (int i = 0; i < 4; ++i)
            batches.push_back(randn(Dims{8, 2, 6, 6}));
        const Tensor expected = (*model)(x);
        auto quantized = [&](graph::GraphModule& m, bool fold) {
            quant::QuantizationPlan plan = quant::plan_quantization(
                spec, m, quant::Scheme::Static, quant::ObserverKind::MinMax, fold);
            size_t next = 0;
            quant::calibrate(m, plan, [&](TensorList& inputs) {
                if (next == batches.size()) return false;
                inputs.push_back(batches[next++]);
                return true;
            });
            quant::quantize_model(m, plan);
            return plan;
        };
        const quant::QuantizationPlan plan = quantized(*model, true);
        QCOMPARE(plan.layers[0].bn_module, std::string("bn"));
        QVERIFY(plan.layers[0].relu);
        QVERIFY(plan.float_layers.empty());
        const quant::QuantizationPlan kept = quantized(*unfolded, false);
        QVERIFY(kept.layers[0].bn_module.empty());
        QCOMPARE(kept.float_layers.size(), size_t(1));
        const Tensor got = (*model)(x);
        const double folded_error = max(abs(sub(got, expected))).item<double>();
        const double kept_error = max(abs(sub((*unfolded)(x), expected))).item<double>();
        QVERIFY2(
            folded_error <= 2 * kept_error + 1e-3,
            qPrintable(
                QString("folded %1, BatchNorm kept float %2").arg(folded_error).arg(kept_error)));

        const quant::QuantizedState state = quant::quantized_state(*model);
        for (const auto& [name, t] : state.tensors)
            QVERIFY2(name.rfind("bn.", 0) != 0, name.c_str());
        auto fresh = graph::build(spec);
        fresh->eval();
        quant::load_quantized(*fresh, quant::QuantizationPlan::from_json(plan.to_json(), "f"),
                              state.tensors, "f");
        QVERIFY(equal((*fresh)(x), got));

        const graph::ModelSpec folded = quant::folded_spec(spec, plan);
        QCOMPARE(folded.nodes.size(), spec.nodes.size() - 1);
        for (const graph::Node& node : folded.nodes) {
            QVERIFY(node.kind != "BatchNorm2d");
            if (node.kind == "Conv2d") QVERIFY(node.attrs.get_bool("bias"));
        }
    }

  private slots:
    void planSaysWhatStaysFloat() {
        graph::ModelSpec spec;
        const auto in = spec.add_node(
            "Input", "", {{"shape", std::vector<int64_t>{6}}, {"dtype", std::string("int64")}});
        const auto emb = spec.add_node(
            "Embedding", "emb", {{"num_embeddings", int64_t(20)}, {"embedding_dim", int64_t(4)}});
        const auto lstm = spec.add_node("LSTM", "lstm",
                                        {{"input_size", int64_t(4)},
                                         {"hidden_size", int64_t(5)},
                                         {"output", std::string("last")}});
        const auto fc = spec.add_node("Linear", "fc",
                                      {{"in_features", int64_t(5)}, {"out_features", int64_t(3)}});
        const auto out = spec.add_node("Output");
        spec.connect(in, emb);
        spec.connect(emb, lstm);
        spec.connect(lstm, fc);
        spec.connect(fc, out);
        auto model = graph::build(spec);
        const quant::QuantizationPlan plan =
            quant::plan_quantization(spec, *model, quant::Scheme::Static);
        QCOMPARE(plan.layers.size(), size_t(1));
        QCOMPARE(plan.float_layers.size(), size_t(2));
        QCOMPARE(plan.float_layers[0].kind, std::string("Embedding"));
        QCOMPARE(plan.float_layers[1].kind, std::string("LSTM"));
        QVERIFY(QString::fromStdString(plan.float_layers[1].reason).contains("recurrent"));

        // The plan's JSON reads back; a broken one is refused naming the field.
        const quant::QuantizationPlan back =
            quant::QuantizationPlan::from_json(plan.to_json(), "f");
        QCOMPARE(back.to_json(), plan.to_json());
        QVERIFY(errorOf([] { quant::QuantizationPlan::from_json("{}", "f"); }).contains("scheme"));
        QVERIFY(errorOf([] {
                    quant::QuantizationPlan::from_json(
                        R"({"scheme":"dynamic","layers":[{"module":"a","kind":"Conv2d"}]})", "f");
                }).contains("layers[0].kind"));
        QVERIFY(errorOf([] {
                    quant::QuantizationPlan::from_json("[1,", "f");
                }).contains("not valid JSON"));
    }
};

QTEST_GUILESS_MAIN(TestQuantModel)
#include "test_quant_model.moc"
