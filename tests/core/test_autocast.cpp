// Autocast on CPU: the guard nests, restores and is per thread; linear, conv1d, conv2d and
// conv_transpose2d under bfloat16 autocast (oneDNN's bf16 kernels) and under float16 autocast
// (linear on the backend's half-operand GEMM, convolutions on rounded operands: what CUDA runs)
// equal, exactly, the float64 computation on operands rounded to the lower dtype (round to
// nearest even, ties included) for the output and every gradient, are within tolerance of
// float32, and leave float32 .grad; with autocast off (or float64 operands) results are
// bit-identical to the float32 path. The trainer with precision "bfloat16" learns, and its losses
// differ from the float32 run but stay close.
#include <myelin/autocast.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/io/project.h>
#include <myelin/nn/functional.h>
#include <myelin/nn/layers.h>
#include <myelin/tensor.h>
#include <myelin/train/trainer.h>

#include <QTemporaryDir>
#include <QtTest>

#include "../support/device_line.h"
#include "../support/stripes_project.h"
#include "test_support.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <thread>

using namespace myelin;
namespace F = myelin::nn::functional;

namespace {

std::vector<double> values(const Tensor& t) {
    const Tensor c = t.detach().contiguous().to(DType::Float64);
    return std::vector<double>(c.data<double>(), c.data<double>() + c.numel());
}

bool bit_equal(const Tensor& a, const Tensor& b) {
    if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
    const Tensor ac = a.contiguous(), bc = b.contiguous();
    return std::memcmp(ac.data_ptr(), bc.data_ptr(), ac.numel() * dtype_size(ac.dtype())) == 0;
}

double max_abs(const std::vector<double>& v) {
    double m = 0;
    for (double x : v)
        m = std::max(m, std::abs(x));
    return m;
}

// max |a - b| / max |b|
double rel_diff(const Tensor& a, const Tensor& b) {
    const auto va = values(a), vb = values(b);
    double d = 0;
    for (size_t i = 0; i < va.size(); ++i)
        d = std::max(d, std::abs(va[i] - vb[i]));
    return d / max_abs(vb);
}

Tensor round_to(const Tensor& t, DType lower) {
    return t.detach().to(lower).to(DType::Float32);
}
Tensor round_bf16(const Tensor& t) {
    return round_to(t, DType::BFloat16);
}

// float32 values whose bf16 (or float16) rounding lands on multiples of 1/16 below 16 in
// magnitude (the noise and ties are in units of the lower dtype's last place): products
// of two are multiples of 2^-8 below 256, so every sum in these tests (< 2^16 in magnitude) is
// exact in float32 whatever the summation order, and the bf16 computation has one right answer.
// Off-grid noise (a quarter ulp) and exact ties (half an ulp, for |v| >= 8) make the rounding
// do real work; with `exact` the values are the grid values themselves.
Tensor grid(const Dims& shape, std::mt19937& rng, bool exact = false,
            DType lower = DType::BFloat16) {
    const int bits = lower == DType::Float16 ? 10 : 7; // explicit significand bits
    std::uniform_int_distribution<int> k(-255, 255);
    std::uniform_real_distribution<float> u(-0.9f, 0.9f);
    Tensor t = zeros(shape);
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) {
        const float v = float(k(rng)) / 16.0f;
        if (exact || v == 0.0f) {
            p[i] = v;
            continue;
        }
        const float ulp = std::ldexp(1.0f, std::ilogb(v) - bits);
        if (std::abs(v) >= 8.0f && i % 5 == 0)
            p[i] = v + (i % 10 == 0 ? 0.5f : -0.5f) * ulp; // a tie: to even, still on the grid
        else
            p[i] = v + u(rng) * 0.25f * ulp;
    }
    return t;
}

// One autocast case: `op` on (x, w, b); x and w are rounded to bf16 by autocast, b stays f32.
// `gy_rounded_for_bias`: the bias gradient comes from the bf16 output gradient (conv, fused in
// oneDNN) rather than the float32 one (linear: the bias add is an ordinary float32 op).
using Op = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;

// `transformed`: the float32 kernels run Winograd (3x3, 16-channel multiples), whose transforms
// round: the products are the lowered ones, but equal only within 1e-5 of the largest value.
void check_exact(const Op& op, const Dims& xs, const Dims& ws, const Dims& bs,
                 bool gy_rounded_for_bias, unsigned seed, DType lower = DType::BFloat16,
                 bool transformed = false) {
    auto same = [transformed](const Tensor& a, const Tensor& b) {
        if (!transformed) return values(a) == values(b);
        const double d = rel_diff(a, b);
        if (d > 0) qInfo("Winograd: max error %.2g of the largest value", d);
        return d <= 1e-5;
    };
    std::mt19937 rng(seed);
    const Tensor x0 = grid(xs, rng, false, lower), w0 = grid(ws, rng, false, lower),
                 b0 = grid(bs, rng, true);
    Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_(),
           b = b0.clone().requires_grad_();
    Tensor y;
    {
        AutocastGuard amp(lower);
        y = op(x, w, b);
    }
    QCOMPARE(y.dtype(), DType::Float32);
    const Tensor gy = grid(y.shape(), rng, false, lower);
    (y * gy).sum().backward();

    Tensor x64 = round_to(x0, lower).to(DType::Float64).requires_grad_(),
           w64 = round_to(w0, lower).to(DType::Float64).requires_grad_(),
           b64 = b0.to(DType::Float64).requires_grad_();
    const Tensor y64 = op(x64, w64, b64);
    const Tensor gy64 = round_to(gy, lower).to(DType::Float64);
    (y64 * gy64).sum().backward();

    QVERIFY2(same(y, y64), qPrintable(QString("case %1: output").arg(seed)));
    QCOMPARE(x.grad().dtype(), DType::Float32);
    QCOMPARE(w.grad().dtype(), DType::Float32);
    QCOMPARE(b.grad().dtype(), DType::Float32);
    QVERIFY2(same(x.grad(), x64.grad()), qPrintable(QString("case %1: input grad").arg(seed)));
    QVERIFY2(same(w.grad(), w64.grad()), qPrintable(QString("case %1: weight grad").arg(seed)));
    if (gy_rounded_for_bias) {
        QVERIFY2(same(b.grad(), b64.grad()), qPrintable(QString("case %1: bias grad").arg(seed)));
    } else {
        Tensor bb = b0.to(DType::Float64).requires_grad_();
        (op(x64.detach(), w64.detach(), bb) * gy.to(DType::Float64)).sum().backward();
        QVERIFY(allclose(b.grad().to(DType::Float64), bb.grad(), 1e-6, 1e-6));
    }

    // The float32 computation on the unrounded operands gives something else.
    const Tensor y32 = op(x0, w0, b0);
    QVERIFY(values(y32) != values(y));
}

// `op` on random normal operands: autocast within bf16 tolerance of float32 for the output and
// every gradient, but not equal; float32 .grad.
void check_close(const Op& op, const Dims& xs, const Dims& ws, const Dims& bs) {
    manual_seed(3);
    const Tensor x0 = randn(xs), w0 = randn(ws), b0 = randn(bs);
    auto run = [&](bool amp) {
        Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_(),
               b = b0.clone().requires_grad_();
        Tensor y;
        {
            AutocastGuard guard(amp ? std::optional<DType>(DType::BFloat16) : std::nullopt);
            y = op(x, w, b);
        }
        manual_seed(4);
        (y * randn(y.shape())).sum().backward();
        return std::vector<Tensor>{y.detach(), x.grad(), w.grad(), b.grad()};
    };
    const auto lo = run(true), hi = run(false);
    for (size_t i = 0; i < lo.size(); ++i) {
        QCOMPARE(lo[i].dtype(), DType::Float32);
        const double d = rel_diff(lo[i], hi[i]);
        QVERIFY2(d < 1e-2, qPrintable(QString("tensor %1: rel diff %2").arg(i).arg(d)));
        if (i < 3) QVERIFY2(d > 0, qPrintable(QString("tensor %1 unchanged").arg(i)));
    }
}

Tensor conv2d_op(const Tensor& x, const Tensor& w, const Tensor& b) {
    return F::conv2d(x, w, b, {.stride = {1, 1}, .padding = {1, 1}});
}
Tensor conv2d_strided_op(const Tensor& x, const Tensor& w, const Tensor& b) {
    return F::conv2d(x, w, b, {.stride = {2, 2}, .padding = {1, 0}, .dilation = {1, 2}});
}
Tensor conv1d_op(const Tensor& x, const Tensor& w, const Tensor& b) {
    return F::conv1d(x, w, b, {.padding = 2});
}
Tensor conv_t_op(const Tensor& x, const Tensor& w, const Tensor& b) {
    return F::conv_transpose2d(x, w, b, {.stride = {2, 2}, .padding = {1, 1}});
}
// output_padding > padding: oneDNN cannot run it, the rounding fallback does.
Tensor conv_t_fallback_op(const Tensor& x, const Tensor& w, const Tensor& b) {
    return F::conv_transpose2d(x, w, b, {.stride = {2, 2}, .output_padding = {1, 1}});
}
Tensor linear_op(const Tensor& x, const Tensor& w, const Tensor& b) {
    return F::linear(x, w, b);
}

// 3 classes of noisy 1x8x8 images (tests/support/stripes_project.h) and a CNN with BatchNorm.
io::Project cnn_project(const std::string& dir) {
    if (!myelin::test::writeStripesData(dir)) qFatal("cannot write the data into %s", dir.c_str());

    io::Project p;
    p.name = "cnn";
    auto& m = p.model;
    auto in = m.add_node("Input", "", {{"shape", std::vector<int64_t>{1, 8, 8}}});
    auto conv = m.add_node("Conv2d", "conv",
                           {{"in_channels", int64_t(1)},
                            {"out_channels", int64_t(8)},
                            {"kernel_size", int64_t(3)},
                            {"padding", int64_t(1)}});
    auto bn = m.add_node("BatchNorm2d", "bn", {{"num_features", int64_t(8)}});
    auto act = m.add_node("ReLU", "act");
    auto pool = m.add_node("MaxPool2d", "pool", {{"kernel_size", int64_t(2)}});
    auto flat = m.add_node("Flatten", "flat");
    auto fc =
        m.add_node("Linear", "fc", {{"in_features", int64_t(128)}, {"out_features", int64_t(3)}});
    auto out = m.add_node("Output");
    m.connect(in, conv);
    m.connect(conv, bn);
    m.connect(bn, act);
    m.connect(act, pool);
    m.connect(pool, flat);
    m.connect(flat, fc);
    m.connect(fc, out);
    p.data.source = {"npy",
                     {{"features", std::string("x.npy")},
                      {"targets", std::string("y.npy")},
                      {"task", std::string("classification")},
                      {"test_fraction", 0.2}}};
    p.data.validation_fraction = 0.2;
    p.data.batch_size = 16;
    p.data.num_workers = 0;
    p.train.loss = {"CrossEntropyLoss", {}};
    p.train.optimizer = {"SGD", {{"lr", 0.05}, {"momentum", 0.9}}};
    p.train.epochs = 3;
    p.train.seed = 2;
    return p;
}

struct Run {
    std::vector<double> losses;
    train::TrainResult result;
};

Run train_cnn(io::Project p, const std::string& dir, const std::string& precision) {
    p.train.precision = *myelin::spec::setting_named<myelin::spec::Precision>(precision);
    train::TrainerOptions o;
    o.project_dir = dir;
    train::Trainer trainer(p, o);
    Run r;
    train::CallbackSink sink([&](const train::Event& e) {
        if (auto* m = e.get<train::StepMetrics>()) r.losses.push_back(m->loss);
    });
    trainer.set_sink(&sink);
    r.result = trainer.run();
    return r;
}

} // namespace

class TestAutocast : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase() { myelin::test::print_cuda_device(); }

    void guardNestsRestoresAndIsPerThread();
    void roundsToNearestEven();
    void linearMatchesBf16Reference();
    void convMatchesBf16Reference();
    void float16MatchesReference();
    void closeToFloat32();
    void offIsBitIdentical();
    void backwardUsesForwardsChoice();
    void modulesKeepFloat32Grads();
    void projectAcceptsBfloat16();
    void trainerLearnsInBfloat16();
};

void TestAutocast::guardNestsRestoresAndIsPerThread() {
    QVERIFY(!autocast_dtype());
    {
        AutocastGuard outer;
        QCOMPARE(autocast_dtype(), std::optional<DType>(DType::BFloat16));
        {
            AutocastGuard off(std::nullopt);
            QVERIFY(!autocast_dtype());
            {
                AutocastGuard inner(DType::BFloat16);
                QCOMPARE(autocast_dtype(), std::optional<DType>(DType::BFloat16));
            }
            QVERIFY(!autocast_dtype());
        }
        QCOMPARE(autocast_dtype(), std::optional<DType>(DType::BFloat16));
        std::optional<DType> other{DType::Float64};
        std::thread([&] { other = autocast_dtype(); }).join();
        QVERIFY(!other); // thread-local: a DataLoader worker never sees the trainer's state
    }
    QVERIFY(!autocast_dtype());
    QVERIFY(error_of<DTypeError>([] {
                AutocastGuard g(DType::Float64);
            }).contains("expected bfloat16 or float16"));
    {
        AutocastGuard half(DType::Float16);
        QCOMPARE(autocast_dtype(), std::optional<DType>(DType::Float16));
    }
    QVERIFY(!autocast_dtype());
}

void TestAutocast::roundsToNearestEven() {
    // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to the even 1. 1 + 3 * 2^-8 is halfway
    // between 1 + 2^-7 (odd) and 1 + 2^-6 (even): up.
    const float t1 = 1.0f + std::ldexp(1.0f, -8), t2 = 1.0f + 3 * std::ldexp(1.0f, -8);
    const Tensor r = from_vector(std::vector<float>{t1, -t1, t2, 1.0f + std::ldexp(1.0f, -9)}, {4})
                         .to(DType::BFloat16)
                         .to(DType::Float32);
    QVERIFY(values(r) == (std::vector<double>{1.0, -1.0, 1.0 + std::ldexp(1.0, -6), 1.0}));
    // The convolution's own rounding (oneDNN's reorders) agrees: a 1x1 convolution by 1.
    Tensor x = from_vector(std::vector<float>{t1, -t1, t2, 3.14159f}, {1, 1, 2, 2});
    AutocastGuard amp;
    const Tensor y = F::conv2d(x, ones({1, 1, 1, 1}));
    QVERIFY(values(y) == values(round_bf16(x)));
    QVERIFY(values(F::linear(x.view({4, 1}), ones({1, 1}))) == values(round_bf16(x)));
}

void TestAutocast::linearMatchesBf16Reference() {
    check_exact(linear_op, {9, 40}, {7, 40}, {7}, false, 1);
    // Leading dims are flattened and restored.
    check_exact([](const Tensor& x, const Tensor& w,
                   const Tensor& b) { return F::linear(x, w, b).sum({0}); },
                {2, 3, 24}, {5, 24}, {5}, false, 2);
}

void TestAutocast::convMatchesBf16Reference() {
    check_exact(conv2d_op, {2, 3, 7, 7}, {4, 3, 3, 3}, {4}, true, 3);
    check_exact(conv2d_op, {2, 16, 6, 6}, {16, 16, 3, 3}, {16}, true, 4); // blocked JIT kernels
    check_exact(conv2d_strided_op, {2, 8, 9, 9}, {8, 8, 3, 3}, {8}, true, 5);
    check_exact(
        [](const Tensor& x, const Tensor& w, const Tensor& b) {
            return F::conv2d(x, w, b, {.padding = {1, 1}, .groups = 2});
        },
        {2, 8, 5, 5}, {8, 4, 3, 3}, {8}, true, 6);
    check_exact(conv1d_op, {2, 4, 11}, {6, 4, 5}, {6}, true, 7);
    // conv_transpose2d: the bias is added in float32 after the product (its gradient is the sum
    // of the float32 output gradient), as linear's.
    check_exact(conv_t_op, {2, 8, 4, 4}, {8, 4, 3, 3}, {4}, false, 8);
    check_exact(conv_t_fallback_op, {1, 4, 3, 3}, {4, 2, 3, 3}, {2}, false, 9);
}

// float16 autocast on the CPU runs what CUDA runs: linear on the backend's GEMM over half
// operands (cuBLAS's tensor cores there), convolutions on operands rounded to half. Exact against
// float64 on half-rounded operands, ties included (within 1e-5 of the largest value where the
// float32 convolution is a Winograd one); values bfloat16 keeps but float16 rounds.
void TestAutocast::float16MatchesReference() {
    const DType f16 = DType::Float16;
    check_exact(linear_op, {9, 40}, {7, 40}, {7}, false, 11, f16);
    check_exact([](const Tensor& x, const Tensor& w,
                   const Tensor& b) { return F::linear(x, w, b).sum({0}); },
                {2, 3, 24}, {5, 24}, {5}, false, 12, f16);
    check_exact(conv2d_op, {2, 3, 7, 7}, {4, 3, 3, 3}, {4}, true, 13, f16);
    check_exact(conv2d_op, {2, 16, 6, 6}, {16, 16, 3, 3}, {16}, true, 14, f16, true);
    check_exact(conv1d_op, {2, 4, 11}, {6, 4, 5}, {6}, true, 15, f16);
    check_exact(conv_t_op, {2, 8, 4, 4}, {8, 4, 3, 3}, {4}, false, 16, f16);
    // The fused Conv2d-ReLU(-MaxPool) blocks take the rounded path too (the bias inside).
    check_exact(
        [](const Tensor& x, const Tensor& w, const Tensor& b) {
            return F::conv2d_relu_max_pool2d(x, w, b, {.padding = {1, 1}}, {});
        },
        {2, 16, 6, 6}, {16, 16, 3, 3}, {16}, true, 17, f16, true);
    // A value bfloat16 keeps but float16 rounds: 1 + 2^-11 (a tie, to even: 1) and 1 + 3 * 2^-11
    // (up to 1 + 2^-9).
    const float t1 = 1.0f + std::ldexp(1.0f, -11), t2 = 1.0f + 3 * std::ldexp(1.0f, -11);
    const Tensor x = from_vector(std::vector<float>{t1, t2}, {2, 1});
    AutocastGuard amp(f16);
    QVERIFY(values(F::linear(x, ones({1, 1}))) ==
            (std::vector<double>{1.0, 1.0 + std::ldexp(1.0, -9)}));
    QVERIFY(values(F::conv2d(x.view({1, 1, 2, 1}), ones({1, 1, 1, 1}))) ==
            (std::vector<double>{1.0, 1.0 + std::ldexp(1.0, -9)}));
}

void TestAutocast::closeToFloat32() {
    check_close(linear_op, {32, 100}, {20, 100}, {20});
    check_close(conv2d_op, {4, 16, 10, 10}, {32, 16, 3, 3}, {32});
    check_close(conv1d_op, {4, 8, 20}, {8, 8, 5}, {8});
    check_close(conv_t_op, {2, 16, 6, 6}, {16, 8, 3, 3}, {8});
}

void TestAutocast::offIsBitIdentical() {
    manual_seed(5);
    const Tensor x = randn({4, 16, 10, 10}), w = randn({32, 16, 3, 3}), b = randn({32});
    const Tensor xl = randn({8, 50}), wl = randn({10, 50}), bl = randn({10});
    const Tensor y = conv2d_op(x, w, b), yl = linear_op(xl, wl, bl);
    {
        AutocastGuard on;
        AutocastGuard off(std::nullopt);
        QVERIFY(bit_equal(conv2d_op(x, w, b), y));
        QVERIFY(bit_equal(linear_op(xl, wl, bl), yl));
    }
    QVERIFY(bit_equal(conv2d_op(x, w, b), y)); // the bf16 primitives do not disturb the cache
    // float64 is never lowered (autocast only lowers float32, like PyTorch's).
    const Tensor x64 = x.to(DType::Float64), w64 = w.to(DType::Float64);
    const Tensor y64 = conv2d_op(x64, w64, b.to(DType::Float64));
    AutocastGuard on;
    const Tensor y64_amp = conv2d_op(x64, w64, b.to(DType::Float64));
    QCOMPARE(y64_amp.dtype(), DType::Float64);
    QVERIFY(bit_equal(y64_amp, y64));
    QVERIFY(
        bit_equal(linear_op(xl.to(DType::Float64), wl.to(DType::Float64), bl.to(DType::Float64)),
                  linear_op(xl.to(DType::Float64), wl.to(DType::Float64), bl.to(DType::Float64))));
}

void TestAutocast::backwardUsesForwardsChoice() {
    // Backward follows what forward did, whatever the autocast state is when it runs.
    manual_seed(6);
    const Tensor x0 = randn({2, 8, 6, 6}), w0 = randn({8, 8, 3, 3});
    auto grads = [&](bool amp_forward, bool amp_backward) {
        Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_();
        Tensor loss;
        {
            AutocastGuard g(amp_forward ? std::optional<DType>(DType::BFloat16) : std::nullopt);
            loss = (F::conv2d(x, w) * F::conv2d(x, w)).sum();
        }
        AutocastGuard g(amp_backward ? std::optional<DType>(DType::BFloat16) : std::nullopt);
        loss.backward();
        return std::vector<Tensor>{x.grad(), w.grad()};
    };
    const auto a = grads(true, false), b = grads(true, true), c = grads(false, true),
               d = grads(false, false);
    QVERIFY(bit_equal(a[0], b[0]) && bit_equal(a[1], b[1]));
    QVERIFY(bit_equal(c[0], d[0]) && bit_equal(c[1], d[1]));
    QVERIFY(!bit_equal(a[1], d[1]));
}

void TestAutocast::modulesKeepFloat32Grads() {
    manual_seed(7);
    nn::Conv2d conv(3, 8, {3, 3});
    nn::Linear fc(8 * 6 * 6, 4);
    Tensor out;
    {
        AutocastGuard amp;
        out = fc(conv(randn({2, 3, 8, 8})).flatten(1));
    }
    QCOMPARE(out.dtype(), DType::Float32);
    out.sum().backward();
    for (nn::Module* m : {static_cast<nn::Module*>(&conv), static_cast<nn::Module*>(&fc)})
        for (const auto& [name, p] : m->named_parameters()) {
            QCOMPARE(p.dtype(), DType::Float32);
            QVERIFY2(p.grad().defined(), name.c_str());
            QCOMPARE(p.grad().dtype(), DType::Float32);
        }
}

void TestAutocast::projectAcceptsBfloat16() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("p.myelin").toStdString();
    io::Project p = cnn_project(dir.path().toStdString());
    p.train.precision = myelin::spec::Precision::BFloat16;
    io::save_project(p, path);
    QVERIFY(io::load_project(path).train.precision == myelin::spec::Precision::BFloat16);
    p.train.precision = myelin::spec::Precision::Float32;
    io::save_project(p, path);
    QVERIFY(io::load_project(path).train.precision == myelin::spec::Precision::Float32);
}

void TestAutocast::trainerLearnsInBfloat16() {
    QTemporaryDir dir;
    const std::string d = dir.path().toStdString();
    const io::Project p = cnn_project(d);
    const Run f32 = train_cnn(p, d, "float32"), bf16 = train_cnn(p, d, "bfloat16");
    QCOMPARE(bf16.result.status, train::RunStatus::Finished);
    QCOMPARE(bf16.losses.size(), f32.losses.size());
    QVERIFY(bf16.losses.size() > 20);
    auto mean = [](const std::vector<double>& v, size_t from, size_t to) {
        double s = 0;
        for (size_t i = from; i < to; ++i)
            s += v[i];
        return s / double(to - from);
    };
    const size_t n = bf16.losses.size();
    QVERIFY2(mean(bf16.losses, n - 5, n) < 0.5 * mean(bf16.losses, 0, 5),
             qPrintable(QString("%1 -> %2").arg(bf16.losses.front()).arg(bf16.losses.back())));
    // bf16 was used: the first step's loss already differs; yet the runs stay close.
    QVERIFY(bf16.losses[0] != f32.losses[0]);
    QVERIFY2(std::abs(bf16.losses[0] - f32.losses[0]) < 1e-2 * f32.losses[0],
             qPrintable(QString("%1 vs %2").arg(bf16.losses[0]).arg(f32.losses[0])));
    QVERIFY(std::abs(mean(bf16.losses, n - 5, n) - mean(f32.losses, n - 5, n)) <
            0.1 + 0.2 * mean(f32.losses, n - 5, n));
    QVERIFY(bf16.result.test.at("accuracy") > 0.8);
    QVERIFY(std::abs(bf16.result.test.at("accuracy") - f32.result.test.at("accuracy")) <= 0.1);
}

QTEST_GUILESS_MAIN(TestAutocast)
#include "test_autocast.moc"
