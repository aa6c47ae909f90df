// Training on a device whose memory the host cannot read (issue 17): the optimizers' steps, the
// class losses, dropout and gradient clipping reach the device through its training table
// (backend/train_kernels.h), never through a host pointer. Without a GPU the opaque test device
// (opaque_device.h: tagged pointers that crash any direct host read, CPU kernels behind them)
// holds the CUDA slot and every result is the CPU's bit for bit; with a GPU the same checks run
// on cuda:0 against the CPU within 1e-4 relative (the GEMMs and exp/log differ in the last bits).
#include <myelin/cuda.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/io/project.h>
#include <myelin/nn/attention.h>
#include <myelin/nn/functional.h>
#include <myelin/nn/loss.h>
#include <myelin/nn/recurrent.h>
#include <myelin/nn/recurrent_gradients.h>
#include <myelin/optim/clip_grad.h>
#include <myelin/optim/optim.h>
#include <myelin/pending_item.h>
#include <myelin/tensor.h>
#include <myelin/train/events.h>
#include <myelin/train/metrics.h>
#include <myelin/train/trainer.h>

#include <QTemporaryDir>
#include <QtTest>

#include "opaque_device.h"
#include "test_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>

using namespace myelin;

namespace {

constexpr Device kDevice{DeviceType::CUDA, 0};
const std::filesystem::path kExamples =
    std::filesystem::path(MYELIN_SOURCE_DIR) / "resources/examples";

// Bit for bit on the opaque device; within `rel` relative on a real GPU.
bool close(const Tensor& device_result, const Tensor& cpu_result, bool exact, double rel = 1e-4) {
    const Tensor a = device_result.to(kCPU).to(DType::Float64);
    const Tensor b = cpu_result.to(kCPU).to(DType::Float64);
    if (a.shape() != b.shape()) return false;
    if (exact) return equal(device_result.to(kCPU), cpu_result.to(kCPU));
    const double scale = std::max(1e-30, max(abs(b)).item());
    return max(abs(a - b)).item() <= rel * scale;
}

Tensor on(const Tensor& t, const Device& d) {
    return t.to(d).detach().requires_grad_(t.requires_grad());
}

struct OptimizerCase {
    const char* name;
    std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)> make;
};

std::vector<OptimizerCase> optimizer_cases() {
    using namespace optim;
    return {
        {"SGD momentum nesterov weight_decay",
         [](std::vector<Tensor> p) {
             SGDOptions o;
             o.lr = 0.05;
             o.momentum = 0.9;
             o.nesterov = true;
             o.weight_decay = 1e-3;
             return std::make_unique<SGD>(std::move(p), o);
         }},
        {"SGD dampening maximize",
         [](std::vector<Tensor> p) {
             SGDOptions o;
             o.lr = 0.05;
             o.momentum = 0.5;
             o.dampening = 0.3;
             o.maximize = true;
             return std::make_unique<SGD>(std::move(p), o);
         }},
        {"Adam amsgrad weight_decay",
         [](std::vector<Tensor> p) {
             AdamOptions o;
             o.lr = 0.01;
             o.amsgrad = true;
             o.weight_decay = 0.01;
             return std::make_unique<Adam>(std::move(p), o);
         }},
        {"Adam",
         [](std::vector<Tensor> p) {
             AdamOptions o;
             o.lr = 0.01;
             return std::make_unique<Adam>(std::move(p), o);
         }},
        {"AdamW",
         [](std::vector<Tensor> p) {
             AdamOptions o;
             o.lr = 0.01;
             o.weight_decay = 0.1;
             return std::make_unique<AdamW>(std::move(p), o);
         }},
        {"RMSprop centered momentum",
         [](std::vector<Tensor> p) {
             RMSpropOptions o;
             o.lr = 0.01;
             o.centered = true;
             o.momentum = 0.9;
             o.weight_decay = 1e-3;
             return std::make_unique<RMSprop>(std::move(p), o);
         }},
        {"Adagrad lr_decay",
         [](std::vector<Tensor> p) {
             AdagradOptions o;
             o.lr = 0.1;
             o.lr_decay = 0.01;
             o.initial_accumulator_value = 0.1;
             return std::make_unique<Adagrad>(std::move(p), o);
         }},
    };
}

// Where device[i] is further than `rel` (relative to 1 + max |cpu[i]|) from cpu[i] (both on the
// host; undefined pairs skipped): the first such value, named by `legend`; empty when none is.
QString first_difference(const TensorList& cpu, const TensorList& device, double rel,
                         const char* legend) {
    for (size_t i = 0; i < cpu.size(); ++i) {
        if (!cpu[i].defined()) continue;
        const double diff = max((device[i] - cpu[i]).abs()).item();
        if (!(diff <= rel * (1.0 + max(cpu[i].abs()).item())))
            return QString("value %1 (%2): |device - cpu| = %3").arg(i).arg(legend).arg(diff);
    }
    return {};
}

std::vector<double> step_losses(const std::string& example, const Device& device, int steps,
                                const std::string& precision = "float32",
                                std::vector<double>* grad_scales = nullptr) {
    const auto path = kExamples / (example + ".myelin");
    io::Project project = io::load_project(path);
    project.train.precision = *myelin::spec::setting_named<myelin::spec::Precision>(precision);
    train::TrainerOptions options;
    options.project_dir = path.parent_path();
    options.max_steps = steps;
    options.threads = 2;
    options.device = device;
    train::Trainer trainer(project, options);
    for (const Tensor& p : trainer.model().parameters())
        if (p.device() != device) throw Error("a parameter is not on " + device.str());
    std::vector<double> losses;
    train::CallbackSink sink([&](const train::Event& e) {
        if (auto* m = e.get<train::StepMetrics>()) {
            losses.push_back(m->loss);
            if (grad_scales) grad_scales->push_back(m->grad_scale.value_or(0.0));
        }
    });
    trainer.set_sink(&sink);
    const train::TrainResult result = trainer.run();
    if (!result.error.empty()) throw Error(example + " on " + device.str() + ": " + result.error);
    return losses;
}

} // namespace

class TestDeviceTraining : public QObject {
    Q_OBJECT

    opaque_device::OpaqueDevice* opaque_ = nullptr;
    bool exact_ = true; // the opaque device computes the CPU's bits

  private slots:
    void initTestCase() {
        opaque_ = opaque_device::register_if_no_gpu();
        exact_ = opaque_ != nullptr;
        if (opaque_)
            qInfo("CUDA: skipped (no device: %s); the opaque test device takes its slot",
                  cuda_status().reason.c_str());
        else
            qInfo("CUDA: %s", backend::get(DeviceType::CUDA).info().details.c_str());
    }

    void theOpaqueDeviceCrashesOnAHostRead() {
        if (!opaque_) QSKIP("a real CUDA device holds the slot");
        const Tensor t = ones({4}).to(kDevice);
        QCOMPARE(t.to(kCPU).sum().item(), 4.0); // through its copies: fine
        QVERIFY(!backend::get(DeviceType::CUDA).host_addressable());
        const pid_t child = ::fork();
        if (child == 0) {
            std::signal(SIGSEGV, SIG_DFL); // no test-framework crash report from the child
            std::signal(SIGBUS, SIG_DFL);
            volatile float v = *t.data<float>(); // a direct read: must not return
            (void)v;
            ::_exit(0);
        }
        int status = 0;
        QCOMPARE(::waitpid(child, &status, 0), child);
        QVERIFY2(WIFSIGNALED(status), "a host read of the device's memory did not crash");
    }

    void trainingIsAccepted() {
        check_training_backend(kDevice); // has the training table: no throw
    }

    // Off host memory the recurrent layers are composed from tensor ops step by step (the
    // CPU runs its fused kernels): outputs, final states and every gradient agree, in float64,
    // in every mode, both directions, both layouts, with and without lengths.
    void sequenceLayersOnTheDeviceAreTheCpus_data() {
        using nn::RecurrentMode;
        QTest::addColumn<int>("mode");
        QTest::addColumn<bool>("bidirectional");
        QTest::addColumn<bool>("batch_first");
        QTest::addColumn<bool>("lengths");
        const std::pair<RecurrentMode, const char*> modes[] = {{RecurrentMode::Lstm, "LSTM"},
                                                               {RecurrentMode::Gru, "GRU"},
                                                               {RecurrentMode::RnnTanh, "tanh"},
                                                               {RecurrentMode::RnnRelu, "relu"}};
        for (auto [mode, name] : modes)
            for (bool bi : {false, true})
                for (bool bf : {false, true})
                    for (bool len : {false, true})
                        QTest::addRow("%s%s%s%s", name, bi ? " bidirectional" : "",
                                      bf ? " batch_first" : "", len ? " lengths" : "")
                            << int(mode) << bi << bf << len;
    }
    void sequenceLayersOnTheDeviceAreTheCpus() {
        QFETCH(int, mode);
        QFETCH(bool, bidirectional);
        QFETCH(bool, batch_first);
        QFETCH(bool, lengths);
        nn::functional::RecurrentConfig cfg;
        cfg.mode = nn::RecurrentMode(mode);
        cfg.hidden_size = 6;
        cfg.num_layers = 2;
        cfg.bidirectional = bidirectional;
        cfg.batch_first = batch_first;
        const bool lstm = cfg.mode == nn::RecurrentMode::Lstm;
        const int64_t T = 5, B = 3, I = 4, H = 6, D = bidirectional ? 2 : 1;
        const int64_t G = nn::recurrent_gate_count(cfg.mode) * H;
        const TensorOptions f64(DType::Float64);
        manual_seed(11);
        TensorList inputs{randn(batch_first ? Dims{B, T, I} : Dims{T, B, I}, f64),
                          randn({2 * D, B, H}, f64), lstm ? randn({2 * D, B, H}, f64) : Tensor()};
        for (int64_t l = 0; l < 2; ++l)
            for (int64_t d = 0; d < D; ++d) {
                inputs.push_back(randn({G, l == 0 ? I : D * H}, f64) * 0.4);
                inputs.push_back(randn({G, H}, f64) * 0.4);
                inputs.push_back(randn({G}, f64) * 0.4);
                inputs.push_back(randn({G}, f64) * 0.4);
            }
        const Tensor lens = lengths ? from_vector(std::vector<int64_t>{5, 2, 4}, {3}) : Tensor();
        const Tensor g_out = randn({batch_first ? B : T, batch_first ? T : B, D * H}, f64);
        const Tensor g_h = randn({2 * D, B, H}, f64), g_c = randn({2 * D, B, H}, f64);

        // ... and the per-step gradient norms of the inspection's "gradient through time".
        std::map<std::pair<int64_t, int>, std::vector<double>> norms[2];
        auto run = [&](const Device& device) {
            TensorList leaves;
            for (const Tensor& t : inputs)
                leaves.push_back(t.defined() ? t.to(device).detach().requires_grad_(true) : t);
            const std::vector<Tensor> weights(leaves.begin() + 3, leaves.end());
            auto recorder = std::make_shared<nn::RecurrentGradientRecorder>();
            std::optional<nn::RecordRecurrentGradients> scope(std::in_place, recorder, "rnn");
            const nn::functional::RecurrentResult r =
                nn::functional::recurrent(leaves[0], leaves[1], leaves[2],
                                          lens.defined() ? lens.to(device) : lens, weights, cfg);
            scope.reset();
            Tensor loss = (r.output * g_out.to(device)).sum() + (r.h_n * g_h.to(device)).sum();
            if (lstm) loss = loss + (r.c_n * g_c.to(device)).sum();
            loss.backward();
            for (nn::RecurrentStepGradients& g : recorder->take())
                norms[device.is_cpu() ? 0 : 1][{g.layer, g.direction}] = g.norms;
            TensorList values{r.output.to(kCPU), r.h_n.to(kCPU), lstm ? r.c_n.to(kCPU) : Tensor()};
            for (const Tensor& t : leaves)
                values.push_back(t.defined() ? t.grad().to(kCPU) : t);
            return values;
        };
        const TensorList cpu = run(kCPU), device = run(kDevice);
        const QString difference =
            first_difference(cpu, device, 1e-12,
                             "0-2: output, h_n, c_n; then the gradients of x, h0, c0 and the "
                             "weights");
        QVERIFY2(difference.isEmpty(), qPrintable(difference));
        QCOMPARE(norms[0].size(), size_t(2 * D));
        QCOMPARE(norms[1].size(), norms[0].size());
        for (const auto& [key, cpu_norms] : norms[0]) {
            const std::vector<double>& dev = norms[1][key];
            QCOMPARE(dev.size(), size_t(T));
            for (size_t t = 0; t < size_t(T); ++t)
                QVERIFY2(std::abs(dev[t] - cpu_norms[t]) <= 1e-12 * (1.0 + cpu_norms[t]),
                         qPrintable(QString("layer %1 direction %2 step %3: %4 vs %5")
                                        .arg(key.first)
                                        .arg(key.second)
                                        .arg(t)
                                        .arg(dev[t])
                                        .arg(cpu_norms[t])));
        }
    }

    // Attention off host memory runs the composed ops (the CPU its fused node): the same
    // outputs and gradients with every mask kind, in both layouts, unbatched too.
    void attentionOnTheDeviceIsTheCpus_data() {
        QTest::addColumn<QString>("form");
        for (const char* form : {"self lengths causal", "cross bool mask", "separate float mask",
                                 "batch_first", "unbatched"})
            QTest::newRow(form) << QString(form);
    }
    void attentionOnTheDeviceIsTheCpus() {
        QFETCH(QString, form);
        const int64_t E = 8, B = 3, L = 4, S = form.startsWith("self") ? 4 : 5;
        const bool bf = form == "batch_first", unbatched = form == "unbatched";
        const TensorOptions f64(DType::Float64);
        manual_seed(12);
        auto seq = [&](int64_t len) {
            return unbatched ? randn({len, E}, f64)
                             : randn(bf ? Dims{B, len, E} : Dims{len, B, E}, f64);
        };
        const Tensor q = seq(L), k = form.startsWith("self") ? q : seq(S);
        const Tensor v = form.startsWith("separate") ? seq(S) : k;
        const TensorList params{randn({3 * E, E}, f64) * 0.3, randn({3 * E}, f64) * 0.3,
                                randn({E, E}, f64) * 0.3, randn({E}, f64) * 0.3};
        nn::functional::AttentionMasks masks;
        if (form.startsWith("self")) {
            masks.key_padding_mask = from_vector(std::vector<int64_t>{4, 2, 3}, {3});
            masks.attn_mask = nn::functional::causal_mask(L, DType::Float64);
        } else if (form.startsWith("cross")) {
            masks.key_padding_mask = gt(randn({B, S}), 0.8);
        } else if (form.startsWith("separate")) {
            masks.attn_mask = randn({L, S}, f64);
        }
        const Tensor g_out = randn(q.shape(), f64);

        auto run = [&](const Device& device) {
            TensorList leaves;
            for (const Tensor& t : TensorList{q, k, v})
                leaves.push_back(t.to(device).detach().requires_grad_(true));
            // the same tensor where the call shares one (self- and key-value attention)
            if (k.is_same(q)) leaves[1] = leaves[0];
            if (v.is_same(k)) leaves[2] = leaves[1];
            TensorList w;
            for (const Tensor& t : params)
                w.push_back(t.to(device).detach().requires_grad_(true));
            nn::functional::MultiheadAttentionParams p;
            p.num_heads = 2;
            p.in_proj_weight = w[0];
            p.in_proj_bias = w[1];
            p.out_proj_weight = w[2];
            p.out_proj_bias = w[3];
            p.batch_first = bf;
            nn::functional::AttentionMasks m = masks;
            if (m.key_padding_mask.defined()) m.key_padding_mask = m.key_padding_mask.to(device);
            const Tensor out =
                nn::functional::multi_head_attention(leaves[0], leaves[1], leaves[2], p, m);
            (out * g_out.to(device)).sum().backward();
            TensorList values{out.to(kCPU)};
            for (const Tensor& t : leaves)
                values.push_back(t.grad().to(kCPU));
            for (const Tensor& t : w)
                values.push_back(t.grad().to(kCPU));
            return values;
        };
        const TensorList cpu = run(kCPU), device = run(kDevice);
        const QString difference =
            first_difference(cpu, device, 1e-12,
                             "output; gradients of q, k, v, in_proj weight and bias, out_proj "
                             "weight and bias");
        QVERIFY2(difference.isEmpty(), qPrintable(difference));
    }

    void everyOptimizerStepIsTheCpus() {
        for (const OptimizerCase& c : optimizer_cases()) {
            manual_seed(5);
            const Tensor w0 = randn({37, 11}), b0 = randn({11});
            Tensor w[2] = {on(w0, kCPU).requires_grad_(true), on(w0, kDevice).requires_grad_(true)};
            Tensor b[2] = {on(b0, kCPU).requires_grad_(true), on(b0, kDevice).requires_grad_(true)};
            std::unique_ptr<optim::Optimizer> opt[2] = {c.make({w[0], b[0]}), c.make({w[1], b[1]})};
            opt[0]->collect_step_stats(true);
            opt[1]->collect_step_stats(true);
            for (int step = 0; step < 4; ++step) {
                manual_seed(100 + step);
                const Tensor gw = randn({37, 11}), gb = randn({11});
                for (int d = 0; d < 2; ++d) {
                    const Device dev = d == 0 ? kCPU : kDevice;
                    w[d].set_grad(gw.to(dev));
                    b[d].set_grad(gb.to(dev));
                    opt[d]->step();
                }
                QVERIFY2(close(w[1], w[0], exact_), c.name);
                QVERIFY2(close(b[1], b[0], exact_), c.name);
                const optim::StepStats* s0 = opt[0]->step_stats(w[0]);
                const optim::StepStats* s1 = opt[1]->step_stats(w[1]);
                QVERIFY2(s0 && s1, c.name);
                QCOMPARE(s1->count, s0->count);
                QVERIFY2(std::abs(s1->update_squares - s0->update_squares) <=
                             (exact_ ? 0.0 : 1e-4 * s0->update_squares),
                         c.name);
                QVERIFY2(std::abs(s1->grad_squares - s0->grad_squares) <=
                             (exact_ ? 0.0 : 1e-6 * s0->grad_squares),
                         c.name);
            }
            for (const auto& [key, t] : opt[1]->state(0, 0))
                if (key != "step") QVERIFY2(t.device() == kDevice, key.c_str());
        }
        if (opaque_) {
            for (const char* k : {"sgd_step", "adam_step", "rmsprop_step", "adagrad_step"})
                QVERIFY2(opaque_->train.calls[k] > 0, k);
        }
    }

    void classLossesAreTheCpus() {
        manual_seed(9);
        const Tensor x0 = randn({6, 5, 3}), weight = rand({5}) + 0.5;
        const Tensor target0 = from_vector(
            std::vector<int64_t>{0, 4, 2, 1, 3, 0, 2, 2, 4, 1, 0, 3, 3, 1, 0, 4, 2, 1}, {6, 3});
        const Tensor with_ignored = from_vector(
            std::vector<int64_t>{0, 4, 2, 1, -100, 0, 2, 2, 4, -100, 0, 3, 3, 1, 0, 4, 2, 1},
            {6, 3});
        struct Case {
            const char* name;
            std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)> loss;
        };
        const std::vector<Case> cases = {
            {"cross_entropy mean",
             [](const Tensor& x, const Tensor& t, const Tensor&) {
                 return nn::functional::cross_entropy(x, t, {});
             }},
            {"cross_entropy weights smoothing ignore_index",
             [&](const Tensor& x, const Tensor& t, const Tensor& w) {
                 nn::functional::CrossEntropyOptions o;
                 o.weight = w;
                 o.label_smoothing = 0.1;
                 o.ignore_index = -100;
                 (void)t;
                 return nn::functional::cross_entropy(x, with_ignored.to(x.device()), o);
             }},
            {"cross_entropy sum",
             [](const Tensor& x, const Tensor& t, const Tensor&) {
                 nn::functional::CrossEntropyOptions o;
                 o.reduction = nn::Reduction::Sum;
                 return nn::functional::cross_entropy(x, t, o);
             }},
            {"cross_entropy none smoothing",
             [](const Tensor& x, const Tensor& t, const Tensor&) {
                 nn::functional::CrossEntropyOptions o;
                 o.reduction = nn::Reduction::None;
                 o.label_smoothing = 0.2;
                 return square(nn::functional::cross_entropy(x, t, o)).sum();
             }},
            {"nll_loss weights",
             [](const Tensor& x, const Tensor& t, const Tensor& w) {
                 nn::functional::NllLossOptions o;
                 o.weight = w;
                 return nn::functional::nll_loss(log_softmax(x, 1), t, o);
             }},
            {"mse_loss",
             [](const Tensor& x, const Tensor&, const Tensor&) {
                 return nn::functional::mse_loss(x, x.detach() * 0.5 + 0.25);
             }},
            {"binary_cross_entropy_with_logits",
             [](const Tensor& x, const Tensor&, const Tensor&) {
                 return nn::functional::binary_cross_entropy_with_logits(x,
                                                                         sigmoid(x.detach() * 2.0));
             }},
        };
        for (const Case& c : cases) {
            Tensor loss[2], grad[2];
            for (int d = 0; d < 2; ++d) {
                const Device dev = d == 0 ? kCPU : kDevice;
                Tensor x = on(x0, dev).requires_grad_(true);
                loss[d] = c.loss(x, target0.to(dev), weight.to(dev));
                loss[d].backward();
                grad[d] = x.grad();
                QVERIFY2(loss[d].device() == dev && grad[d].device() == dev, c.name);
            }
            QVERIFY2(close(loss[1], loss[0], exact_), c.name);
            QVERIFY2(close(grad[1], grad[0], exact_), c.name);
        }
        if (opaque_) {
            QVERIFY(opaque_->train.calls["class_loss_forward"] >= 5);
            QVERIFY(opaque_->train.calls["class_loss_backward"] >= 5);
        }
        CHECK_ERROR(IndexError,
                    nn::functional::cross_entropy(x0.to(kDevice),
                                                  full({6, 3}, 7.0, DType::Int64).to(kDevice), {}),
                    "target 7 is out of bounds for 5 classes");
    }

    // Ops that build their index or weights on the host (pad's reflect / replicate / circular,
    // bilinear upsampling) send them to the input's device, and a product whose gradient is an
    // expanded operand (sum's backward: a 0 stride inside a matrix, which cuBLAS cannot read) is
    // copied first: forward and backward on the device are the CPU's. An index on another
    // device than its tensor is refused by name (it would be host memory read by a kernel).
    void hostBuiltIndicesAndExpandedOperandsOnTheDevice() {
        manual_seed(9);
        namespace F = nn::functional;
        const Tensor x = randn({2, 3, 5, 4}).requires_grad_(true);
        using Op = std::function<Tensor(const Tensor&, const Device&)>;
        const std::vector<std::pair<const char*, Op>> ops{
            {"reflect",
             [](const Tensor& t, const Device&) {
                 return F::pad(t, {2, 1, 1, 2}, "reflect");
             }},
            {"replicate",
             [](const Tensor& t, const Device&) {
                 return F::pad(t, {1, 3, 2, 0}, "replicate");
             }},
            {"circular",
             [](const Tensor& t, const Device&) {
                 return F::pad(t, {1, 1, 2, 2}, "circular");
             }},
            {"bilinear",
             [](const Tensor& t, const Device&) {
                 return F::upsample_bilinear2d(t, {2, 3}, false);
             }},
            {"matmul by a column",
             [](const Tensor& t, const Device& d) {
                 return matmul(t, ones({4, 1}).to(d));
             }},
            {"matmul of a row",
             [](const Tensor& t, const Device& d) {
                 return matmul(ones({1, 5}).to(d), t);
             }},
        };
        for (const auto& [name, op] : ops) {
            Tensor y[2], g[2];
            for (int d = 0; d < 2; ++d) {
                const Device device = d == 0 ? kCPU : kDevice;
                const Tensor xd = on(x, device);
                y[d] = op(xd, device);
                y[d].sum().backward(); // sum's gradient: an expand of one value
                g[d] = xd.grad();
            }
            QVERIFY2(close(y[1], y[0], exact_), name);
            QVERIFY2(close(g[1], g[0], exact_), name);
        }
        const Tensor xd = x.detach().to(kDevice);
        // A read for later of a tensor that is not one element: item()'s error, nothing read.
        CHECK_ERROR(Error, PendingItem{xd}, "120 elements cannot be converted to a scalar");
        const double sum = x.detach().sum().item();
        QVERIFY(std::abs(PendingItem{xd.sum()}.value() - sum) <= 1e-5 * (1 + std::abs(sum)));
        const Tensor cpu_index = from_vector(std::vector<int64_t>{0, 1}, {2});
        CHECK_ERROR(DeviceError, index_select(xd, 0, cpu_index), "index_select", "same device");
        CHECK_ERROR(DeviceError, F::embedding(cpu_index, randn({4, 3}).to(kDevice)), "embedding",
                    "same device");
    }

    // Gradient clipping and the per-layer norms it makes the monitor measure itself read the
    // device once each per step, whatever the number of parameters (a read per gradient, and a
    // copy of every gradient, before), and give the CPU's numbers.
    void clippingAndLayerNormsReadTheDeviceOnce() {
        if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist"))
            QSKIP("Fashion-MNIST not installed (Debian package dataset-fashion-mnist)");
        const auto path = kExamples / "fashion_mlp.myelin";
        const int steps = 6;
        std::vector<train::StepMetrics> metrics[2];
        int64_t reads = 0;
        for (int d = 0; d < 2; ++d) {
            io::Project project = io::load_project(path);
            project.train.clip_grad_norm = 0.5;
            project.train.capture.layer_norms = true;
            project.train.capture.layer_norms_every = 2;
            train::TrainerOptions options;
            options.project_dir = path.parent_path();
            options.max_steps = steps;
            options.threads = 2;
            options.device = d == 0 ? kCPU : kDevice;
            train::Trainer trainer(project, options);
            train::CallbackSink sink([&](const train::Event& e) {
                if (auto* m = e.get<train::StepMetrics>()) metrics[d].push_back(*m);
            });
            trainer.set_sink(&sink);
            const int64_t before = opaque_device::host_reads;
            const train::TrainResult result = trainer.run();
            QVERIFY2(result.error.empty(), result.error.c_str());
            if (d == 1) reads = opaque_device::host_reads - before;
        }
        QCOMPARE(int(metrics[1].size()), steps);
        QCOMPARE(metrics[1].size(), metrics[0].size());
        if (opaque_) {
            // Every step: the monitor's gradient sums and clip_grad_norm_'s norms; every second
            // step also the update sums after it.
            qInfo("%lld host reads in %d steps", (long long)reads, steps);
            QCOMPARE(reads, int64_t(2 * steps + steps / 2));
        }
        for (size_t i = 0; i < metrics[0].size(); ++i) {
            // Within float32's rounding: linear's GEMM is oneDNN's on the CPU, batched_gemm off
            // it, so gradients may differ in their last bits.
            const auto near = [](double a, double b) {
                return std::abs(a - b) <= 1e-5 * std::abs(b) + 1e-12;
            };
            QVERIFY(near(metrics[1][i].loss, metrics[0][i].loss));
            QCOMPARE(metrics[1][i].layers.size(), metrics[0][i].layers.size());
            QCOMPARE(metrics[0][i].layers.empty(), i % 2 == 0); // steps 2, 4, 6
            for (size_t l = 0; l < metrics[0][i].layers.size(); ++l) {
                const train::LayerStats &a = metrics[1][i].layers[l], &b = metrics[0][i].layers[l];
                QCOMPARE(a.layer, b.layer);
                QVERIFY2(near(a.grad_norm, b.grad_norm), a.layer.c_str());
                QVERIFY2(near(a.weight_norm, b.weight_norm), a.layer.c_str());
                QVERIFY2(near(a.update_ratio, b.update_ratio), a.layer.c_str());
                QVERIFY2(near(a.grad_mean_abs, b.grad_mean_abs), a.layer.c_str());
                QVERIFY2(near(a.grad_max_abs, b.grad_max_abs), a.layer.c_str());
            }
        }
    }

    // The project's GPU numerics (training.deterministic, training.allow_tf32) reach the device
    // when the trainer moves the model there; a CPU run leaves the device alone.
    void theProjectsGpuNumericsReachTheDevice() {
        if (!opaque_) QSKIP("a real GPU: its switches are not observable from here");
        const auto path = kExamples / "tabular_regression.myelin";
        for (int on = 1; on >= 0; --on) {
            io::Project project = io::load_project(path);
            project.train.deterministic = on == 1;
            project.train.allow_tf32 = on == 1;
            train::TrainerOptions options;
            options.project_dir = path.parent_path();
            options.device = kDevice;
            const train::Trainer trainer(project, options);
            QCOMPARE(opaque_device::deterministic, on == 1);
            QCOMPARE(opaque_device::allow_tf32, on == 1);
        }
        io::Project project = io::load_project(path);
        project.train.deterministic = true;
        train::TrainerOptions options;
        options.project_dir = path.parent_path();
        const train::Trainer on_cpu(project, options);
        QVERIFY(!opaque_device::deterministic);
    }

    // Dividing by a scalar off the host multiplies by its reciprocal (as PyTorch's CUDA kernel),
    // except where the reciprocal is not finite: x / 1e-310 is not x * inf. div_ and div agree.
    void scalarDivisionOnTheDevice() {
        const Tensor x =
            on(from_vector(std::vector<double>{1e-10, -2.5, 0.0, 1.0, 3.0}, {5}), kDevice);
        for (double v : {3.0, -0.5, 0.0, 1e-310, -1e-310}) {
            const Tensor out_of_place = (x / v).to(kCPU);
            Tensor in_place = x.clone();
            in_place.div_(v);
            const std::vector<double> a = out_of_place.to_vector<double>(),
                                      b = in_place.to(kCPU).to_vector<double>();
            for (size_t i = 0; i < a.size(); ++i) {
                const double expected = x.to(kCPU).to_vector<double>()[i] / v;
                const auto same = [](double p, double q) {
                    return (std::isnan(p) && std::isnan(q)) || p == q ||
                           std::abs(p - q) <= 1e-15 * std::abs(q);
                };
                QVERIFY2(
                    same(a[i], expected),
                    qPrintable(
                        QString("x[%1] / %2 = %3, not %4").arg(i).arg(v).arg(a[i]).arg(expected)));
                QVERIFY2(same(b[i], a[i]), qPrintable(QString("div_: x[%1] / %2 = %3, not %4")
                                                          .arg(i)
                                                          .arg(v)
                                                          .arg(b[i])
                                                          .arg(a[i])));
            }
        }
    }

    // A loss that blows up on the device fails the run as on the CPU: the NaN guard reads the
    // loss once the backward is queued, names the first non-finite layer, and no step of the
    // broken state is applied or saved. Capture is on, so its summaries stop at the bad step.
    void nonFiniteLossOnTheDeviceFailsAsOnTheCpu() {
        if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist"))
            QSKIP("Fashion-MNIST not installed (Debian package dataset-fashion-mnist)");
        const auto path = kExamples / "fashion_mlp.myelin";
        train::TrainResult results[2];
        int64_t gradient_summaries[2] = {0, 0};
        for (int d = 0; d < 2; ++d) {
            io::Project project = io::load_project(path);
            project.train.optimizer = {"SGD", {{"lr", 1e30}}};
            project.train.capture.summaries_every = 1;
            train::TrainerOptions options;
            options.project_dir = path.parent_path();
            options.max_steps = 20;
            options.threads = 2;
            options.device = d == 0 ? kCPU : kDevice;
            train::Trainer trainer(project, options);
            train::CallbackSink sink([&](const train::Event& e) {
                if (auto* s = e.get<train::TensorSummaryEvent>())
                    gradient_summaries[d] += s->kind == train::SummaryKind::Gradient;
            });
            trainer.set_sink(&sink);
            results[d] = trainer.run();
        }
        for (const train::TrainResult& r : results) {
            QCOMPARE(r.status, train::RunStatus::Failed);
            QVERIFY2(r.error.find("the loss became") != std::string::npos, r.error.c_str());
            QVERIFY2(r.error_module.has_value(), r.error.c_str());
        }
        qInfo("device: %s", results[1].error.c_str());
        if (exact_) {
            QCOMPARE(results[1].error, results[0].error);
            QCOMPARE(results[1].error_module, results[0].error_module);
            QCOMPARE(results[1].steps, results[0].steps);
            QCOMPARE(gradient_summaries[1], gradient_summaries[0]);
        }
    }

    // Evaluating on the device (the validation split of the MLP example, 47 batches) reads it
    // twice, whatever the number of batches: the batches' losses at the end, and the accuracy
    // counts when the metrics are read. The metrics are the CPU's.
    void evaluationReadsTheDeviceTwice() {
        if (!opaque_) QSKIP("counts the opaque device's reads");
        if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist"))
            QSKIP("Fashion-MNIST not installed (Debian package dataset-fashion-mnist)");
        const auto path = kExamples / "fashion_mlp.myelin";
        const io::Project project = io::load_project(path);
        train::MetricMap metrics[2];
        int64_t reads = 0;
        for (int d = 0; d < 2; ++d) {
            train::TrainerOptions options;
            options.project_dir = path.parent_path();
            options.threads = 2;
            options.device = d == 0 ? kCPU : kDevice;
            train::Trainer trainer(project, options);
            const int64_t before = opaque_device::host_reads;
            metrics[d] = trainer.evaluate(trainer.data().validation);
            reads = opaque_device::host_reads - before;
        }
        QCOMPARE(reads, int64_t(2));
        QCOMPARE(metrics[1].size(), metrics[0].size());
        for (const auto& [key, value] : metrics[0])
            QVERIFY2(std::abs(metrics[1].at(key) - value) <= 1e-6 * (1 + std::abs(value)),
                     key.c_str());
        QCOMPARE(metrics[1].at("accuracy"), metrics[0].at("accuracy"));
    }

    // ClassificationMetrics over logits on the device: scored there (the rows' predicted class
    // and rank of the target, NaN and ties by torch.argmax's rule) and counted from one read
    // when a result is asked for; the counts are the host's.
    void classificationMetricsOnTheDeviceAreTheHosts() {
        manual_seed(3);
        const int64_t C = 7;
        train::ClassificationMetrics host(C), device(C);
        const int64_t reads_before = opaque_device::host_reads;
        for (int batch = 0; batch < 6; ++batch) {
            Tensor logits = randn({9, C});
            if (batch == 1) logits = randint(0, 3, {9, C}).to(DType::Float32); // ties
            if (batch == 2) { // NaN rows: NaN ranks above every number
                logits = logits.clone();
                logits.data<float>()[3] = NAN;
                logits.data<float>()[C * 4] = NAN;
                logits.data<float>()[C * 4 + 5] = NAN;
            }
            const Tensor targets = randint(0, C, {9});
            host.update(logits, targets);
            device.update(on(logits, kDevice), on(targets, kDevice));
        }
        if (opaque_) QCOMPARE(opaque_device::host_reads, reads_before); // nothing read yet
        QCOMPARE(device.count(), host.count());
        if (opaque_) QCOMPARE(opaque_device::host_reads, reads_before + 1); // all in one read
        QCOMPARE(device.correct(), host.correct());
        QCOMPARE(device.top5_correct(), host.top5_correct());
        QCOMPARE(device.confusion_matrix().counts, host.confusion_matrix().counts);
        QVERIFY(host.correct() > 0 && host.top5_correct() > host.correct());

        // A label outside [0, C) fails the update and counts nothing.
        const Tensor bad = on(from_vector(std::vector<int64_t>{1, 7}, {2}), kDevice);
        CHECK_ERROR(Error, device.update(on(randn({2, C}), kDevice), bad), "out of bounds");
        QCOMPARE(device.count(), host.count());
    }

    // RegressionMetrics over predictions on the device: each batch's sums there, merged in
    // batch order from one read; the results are the host's to rounding (the device adds in
    // another order), a NaN propagates as on the host.
    void regressionMetricsOnTheDeviceAreTheHosts() {
        manual_seed(5);
        train::RegressionMetrics host, device;
        const int64_t reads_before = opaque_device::host_reads;
        for (int batch = 0; batch < 5; ++batch) {
            const Tensor predictions = randn({8, 1}) * 3.0 + 100.0; // a large mean: Chan's merge
            const Tensor targets = randn({8}) * 0.5 + 100.0;
            host.update(predictions, targets);
            device.update(on(predictions, kDevice), on(targets, kDevice));
        }
        if (opaque_) QCOMPARE(opaque_device::host_reads, reads_before);
        const train::MetricMap h = host.scalars(), d = device.scalars();
        if (opaque_) QCOMPARE(opaque_device::host_reads, reads_before + 1);
        QCOMPARE(device.count(), host.count());
        for (const auto& [key, value] : h)
            QVERIFY2(std::abs(d.at(key) - value) <= 1e-12 * (1 + std::abs(value)), key.c_str());
        Tensor bad = randn({3});
        bad.data<float>()[1] = NAN;
        device.update(on(bad, kDevice), on(randn({3}), kDevice));
        QVERIFY(std::isnan(device.mae()));
    }

    // Integer tensors copied from the host know their range, so the checks of targets, indices
    // and lengths need no read of the device; an in-place change forgets it, and a value out of
    // range is still caught.
    void hostRangesSpareTheReadAndStillCatchBadValues() {
        if (!opaque_) QSKIP("counts the opaque device's reads");
        const Tensor logits = on(randn({4, 5}), kDevice);
        const Tensor weight = on(randn({10, 3}), kDevice);
        const Tensor targets = on(from_vector(std::vector<int64_t>{0, 4, -100, 2}, {4}), kDevice);
        const Tensor indices = on(from_vector(std::vector<int64_t>{9, 0, 3}, {3}), kDevice);
        int64_t reads = opaque_device::host_reads;
        (void)nn::functional::cross_entropy(logits, targets); // -100: ignore_index
        (void)nn::functional::embedding(indices, weight);
        (void)index_select(weight, 0, indices);
        QCOMPARE(opaque_device::host_reads, reads);

        // -100 and -5: only -100 is the ignore_index.
        const Tensor two_negative =
            on(from_vector(std::vector<int64_t>{0, -5, -100, 2}, {4}), kDevice);
        CHECK_ERROR(IndexError, nn::functional::cross_entropy(logits, two_negative),
                    "target -5 is out of bounds for 5 classes");
        // Changed in place on the device: the range is no longer known, the check reads.
        Tensor shifted = on(from_vector(std::vector<int64_t>{0, 1, 2, 3}, {4}), kDevice);
        shifted.add_(2.0);
        reads = opaque_device::host_reads;
        CHECK_ERROR(IndexError, nn::functional::cross_entropy(logits, shifted),
                    "target 5 is out of bounds for 5 classes");
        QVERIFY(opaque_device::host_reads > reads);
        Tensor grown = indices.clone(); // computed on the device: unknown
        CHECK_ERROR(IndexError, nn::functional::embedding(grown + 1.0, weight), "index 10");
        // Lengths from the tokens (PaddingLengths) are bounded by construction.
        const Tensor tokens =
            on(from_vector(std::vector<int64_t>{3, 1, 0, 0, 0, 0, 2, 2, 2}, {3, 3}), kDevice);
        reads = opaque_device::host_reads;
        const Tensor lengths = nn::functional::padding_lengths(tokens);
        const Tensor x = on(randn({3, 3, 2}), kDevice);
        const Tensor pooled = nn::functional::sequence_mean_pool(x, lengths);
        const Tensor last = nn::functional::sequence_last(x, lengths);
        QCOMPARE(opaque_device::host_reads, reads);
        QCOMPARE(lengths.to(kCPU).to_vector<int64_t>(), (std::vector<int64_t>{2, 1, 3}));
        const Tensor xh = x.to(kCPU), lh = lengths.to(kCPU);
        QVERIFY(close(pooled, nn::functional::sequence_mean_pool(xh, lh), exact_));
        QVERIFY(close(last, nn::functional::sequence_last(xh, lh), exact_));
    }

    void dropoutAndClippingAreTheCpus() {
        const Tensor x0 = randn({64, 33});
        Tensor out[2], grad[2];
        double norms[2] = {0, 0};
        for (int d = 0; d < 2; ++d) {
            const Device dev = d == 0 ? kCPU : kDevice;
            Generator gen(77);
            Tensor x = on(x0, dev).requires_grad_(true);
            out[d] = nn::functional::dropout(x, 0.3, true, &gen);
            (out[d] * out[d]).sum().backward();
            norms[d] = optim::clip_grad_norm_({x}, 1.0, 2.0);
            grad[d] = x.grad();
        }
        QVERIFY(close(out[1], out[0], exact_));
        QVERIFY(close(grad[1], grad[0], exact_));
        QVERIFY(exact_ ? norms[1] == norms[0] : std::abs(norms[1] - norms[0]) <= 1e-4 * norms[0]);
        if (opaque_) {
            QVERIFY(opaque_->train.calls["dropout_forward"] > 0);
            QVERIFY(opaque_->train.calls["norm_accumulate"] > 0);
        }
    }

    // training.precision "float16" on the device: float16 autocast (linear on the half-operand
    // GEMM, the convolutions on half-rounded operands) with the gradient scaler at 65536. The
    // losses follow the float32 run closely without being it.
    void float16TrainsOnTheDevice() {
        if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist"))
            QSKIP("Fashion-MNIST not installed (Debian package dataset-fashion-mnist)");
        for (const char* example : {"fashion_mlp", "fashion_cnn"}) {
            std::vector<double> scales;
            const std::vector<double> half = step_losses(example, kDevice, 20, "float16", &scales);
            const std::vector<double> full = step_losses(example, kCPU, 20);
            QCOMPARE(half.size(), full.size());
            double worst = 0;
            for (size_t i = 0; i < half.size(); ++i) {
                QVERIFY(std::isfinite(half[i]));
                QCOMPARE(scales[i], 65536.0);
                worst = std::max(worst, std::abs(half[i] - full[i]) / std::abs(full[i]));
            }
            qInfo("%s in float16: largest relative loss difference from float32 %.2g", example,
                  worst);
            QVERIFY(worst > 0 && worst < 2e-2);
        }
    }

    // The shipped MLP and CNN examples (fashion_resnet adds BatchNorm, word_language an embedding
    // and dropout): 20 steps on the device against 20 on the CPU, every parameter on the device,
    // no host read of it anywhere.
    void twentyStepsOfTheExamplesAreTheCpus_data() {
        QTest::addColumn<QString>("example");
        QTest::newRow("fashion_mlp") << "fashion_mlp";
        QTest::newRow("fashion_cnn") << "fashion_cnn";
        QTest::newRow("fashion_resnet") << "fashion_resnet";
        QTest::newRow("word_language") << "word_language"; // embedding, dropout
        QTest::newRow("word_language_lstm") << "word_language_lstm";
        QTest::newRow("word_language_transformer") << "word_language_transformer";
    }
    void twentyStepsOfTheExamplesAreTheCpus() {
        QFETCH(QString, example);
        if (example.startsWith("fashion") &&
            !std::filesystem::exists("/usr/share/datasets/fashion-mnist"))
            QSKIP("Fashion-MNIST not installed (Debian package dataset-fashion-mnist)");
        if (example.startsWith("word_language") &&
            !std::filesystem::exists("/usr/share/dict/american-english"))
            QSKIP("the word lists are not installed (/usr/share/dict)");
        const int steps = example == "fashion_resnet" ? 4 : 20;
        const std::vector<double> cpu = step_losses(example.toStdString(), kCPU, steps);
        const int64_t reads_before = opaque_device::host_reads;
        const int64_t later_before = opaque_device::later_reads;
        const int64_t idle_before = opaque_device::later_reads_waited_idle;
        const std::vector<double> device = step_losses(example.toStdString(), kDevice, steps);
        if (opaque_) {
            // A step waits for the device once, for the optimizer's statistics of every parameter
            // at once. Its loss (the NaN guard and the step's metrics read it) is copied behind
            // the forward pass and waited for once the backward is queued: the device is not
            // idle meanwhile. Targets, indices and lengths that came from the host are known to
            // be in range, and the accuracy counts wait on the device until the epoch's metrics
            // are read.
            const int64_t reads = opaque_device::host_reads - reads_before;
            const int64_t later = opaque_device::later_reads - later_before;
            const int64_t idle = opaque_device::later_reads_waited_idle - idle_before;
            qInfo("%s: %lld host reads and %lld loss reads (%lld waited with the device idle) in "
                  "%d steps",
                  qPrintable(example), (long long)reads, (long long)later, (long long)idle, steps);
            QVERIFY2(reads <= steps, qPrintable(QString("%1 reads").arg(reads)));
            QCOMPARE(later, int64_t(steps)); // one micro-batch per step in the examples
            QCOMPARE(idle, int64_t(0));
        }
        QCOMPARE(int(cpu.size()), steps);
        QCOMPARE(device.size(), cpu.size());
        for (size_t i = 0; i < cpu.size(); ++i) {
            const double rel = std::abs(device[i] - cpu[i]) / std::abs(cpu[i]);
            QVERIFY2(rel <= 1e-4, qPrintable(QString("step %1: device %2, cpu %3")
                                                 .arg(i + 1)
                                                 .arg(device[i], 0, 'g', 17)
                                                 .arg(cpu[i], 0, 'g', 17)));
        }
        if (exact_) {
            int differing = 0;
            for (size_t i = 0; i < cpu.size(); ++i)
                differing += device[i] != cpu[i];
            qInfo("%s: %d of %d step losses differ in the last bits (linear's GEMM: oneDNN on "
                  "the CPU, the device's batched_gemm off it)",
                  qPrintable(example), differing, steps);
        }
    }
};

QTEST_GUILESS_MAIN(TestDeviceTraining)
#include "test_device_training.moc"
