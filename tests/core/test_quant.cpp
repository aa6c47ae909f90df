// int8 kernels and quantization helpers beyond the PyTorch fixtures (test_quant_golden.cpp):
// oneDNN against the reference on random shapes (quantized and float32 outputs, ReLU, groups,
// strides, batch sizes the primitive cache has not seen), the weight packed once and reused,
// the float32 outputs against float math on the dequantized operands, the qparams helpers'
// edge cases, fake quantization's autograd behaviour and the argument checks.
#include "test_support.h"

#include <QtTest>

#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/nn/functional.h>
#include <myelin/quant/kernels.h>
#include <myelin/quant/quantize.h>
#include <myelin/tensor.h>

#include <cfloat>
#include <cmath>

using myelin::DType;
using myelin::Tensor;
namespace quant = myelin::quant;
namespace F = myelin::nn::functional;

namespace {

quant::QTensor randomQ(const myelin::Dims& shape, quant::QParams q, myelin::Generator& gen) {
    Tensor x = myelin::randn(shape, {}, &gen) * 1.3 + 0.4;
    return quant::quantize_per_tensor(x, q);
}

// The largest |a - b| over two tensors of the same shape.
double maxDiff(const Tensor& a, const Tensor& b) {
    return myelin::amax(myelin::abs(a.to(DType::Float32) - b.to(DType::Float32))).item();
}

} // namespace

class TestQuant : public QObject {
    Q_OBJECT

  private slots:
    void qparamsEdgeCases() {
        // All-zero range: scale is FLT_EPSILON, the zero point qmin.
        const quant::QParams z = quant::affine_qparams(0.0f, 0.0f);
        QCOMPARE(z.scale, FLT_EPSILON);
        QCOMPARE(z.zero_point, 0);
        // The range always holds 0.
        const quant::QParams pos = quant::affine_qparams(2.0f, 4.0f);
        QCOMPARE(pos.zero_point, 0);
        QCOMPARE(pos.scale, 4.0f / 255.0f);
        const quant::QParams neg = quant::affine_qparams(-4.0f, -1.0f);
        QCOMPARE(neg.zero_point, 255);
        QCOMPARE(quant::symmetric_scale(-2.55f, 1.0f), 2.55f / 127.5f);
        QCOMPARE(quant::symmetric_scale(0.0f, 0.0f), FLT_EPSILON);
        // ChooseQuantizationParams: reduce_range halves the range; tiny ranges get 6.1e-5 steps.
        const quant::QParams dyn = quant::choose_qparams(-1.0f, 3.0f, 0, 255, true);
        QCOMPARE(dyn.scale, float(4.0 / 127.0));
        QCOMPARE(dyn.zero_point, 32);
        QCOMPARE(quant::choose_qparams(0.0f, 0.0f).scale, 0.1f);
        QCOMPARE(quant::choose_qparams(0.0f, 1e-6f).scale, 6.1e-5f);
    }

    void quantizeRounding() {
        // Ties to even through x * (1 / scale), clamped to [0, 255].
        const Tensor x = myelin::tensor({-0.375, -0.125, 0.125, 0.375, 1e9, -1e9});
        const quant::QTensor q = quant::quantize_per_tensor(x, {0.25f, 10});
        QCOMPARE(q.data.to_vector<uint8_t>(), (std::vector<uint8_t>{8, 10, 10, 12, 255, 0}));
        QCOMPARE(quant::dequantize(q).to_vector<float>(),
                 (std::vector<float>{-0.5f, 0.0f, 0.0f, 0.5f, 61.25f, -2.5f}));
    }

    // oneDNN and the reference agree within one quantum (and the float32 outputs to float32
    // rounding) over shapes, ReLU and output kinds.
    void linearMatchesReference() {
        myelin::Generator gen(7);
        for (int64_t M : {1, 3, 64, 257})
            for (int64_t K : {1, 16, 77})
                for (bool relu : {false, true}) {
                    const int64_t N = 9;
                    const quant::QTensor x = randomQ({M, K}, {0.02f, 100}, gen);
                    const Tensor wf = myelin::randn({N, K}, {}, &gen) * 0.3;
                    const quant::QuantizedWeight w = quant::quantize_weight_per_channel(wf);
                    const Tensor bias = myelin::randn({N}, {}, &gen);
                    const quant::QParams out{0.05f, 70};
                    const auto a =
                        quant::quantized_linear(x, w, bias, relu, out, quant::KernelPath::OneDnn);
                    const auto b = quant::quantized_linear(x, w, bias, relu, out,
                                                           quant::KernelPath::Reference);
                    QVERIFY2(maxDiff(a.data, b.data) <= 1,
                             qPrintable(QString("M %1 K %2").arg(M).arg(K)));
                    const Tensor fa =
                        quant::quantized_linear_f32(x, w, bias, relu, quant::KernelPath::OneDnn);
                    const Tensor fb =
                        quant::quantized_linear_f32(x, w, bias, relu, quant::KernelPath::Reference);
                    QVERIFY(myelin::allclose(fa, fb, 1e-5, 1e-5));
                    // ... and float math on the dequantized operands (the bias rounded to whole
                    // accumulator units: at most half a unit x_scale * w_scale off).
                    Tensor ref = F::linear(quant::dequantize(x), quant::dequantize_weight(w), bias);
                    if (relu) ref = myelin::relu(ref);
                    QVERIFY(myelin::allclose(fa, ref, 1e-4, 1e-3));
                }
        // A 3-D input keeps its leading dimensions.
        const quant::QTensor x3 = randomQ({2, 3, 16}, {0.02f, 100}, gen);
        const auto w = quant::quantize_weight_per_channel(myelin::randn({5, 16}, {}, &gen));
        QVERIFY(quant::quantized_linear(x3, w, Tensor(), false, {0.1f, 128}).data.shape() ==
                myelin::Dims({2, 3, 5}));
    }

    void convMatchesReference() {
        myelin::Generator gen(11);
        struct Shape {
            int64_t N, C, H, W, O, k, stride, pad, dil, groups;
        };
        for (const Shape& s :
             {Shape{4, 1, 28, 28, 32, 3, 1, 1, 1, 1}, Shape{3, 32, 14, 14, 64, 3, 1, 1, 1, 1},
              Shape{2, 6, 9, 7, 4, 3, 2, 0, 1, 2}, Shape{1, 3, 10, 10, 6, 5, 1, 3, 2, 3},
              Shape{2, 8, 5, 5, 8, 1, 1, 0, 1, 8}})
            for (bool relu : {false, true}) {
                const quant::QTensor x = randomQ({s.N, s.C, s.H, s.W}, {0.03f, 60}, gen);
                const Tensor wf = myelin::randn({s.O, s.C / s.groups, s.k, s.k}, {}, &gen) * 0.2;
                const auto w = quant::quantize_weight_per_channel(wf);
                const Tensor bias = myelin::randn({s.O}, {}, &gen) * 0.1;
                quant::Conv2dOptions o;
                o.stride = {s.stride, s.stride};
                o.padding = {s.pad, s.pad};
                o.dilation = {s.dil, s.dil};
                o.groups = s.groups;
                const quant::QParams out{0.04f, 90};
                const auto a =
                    quant::quantized_conv2d(x, w, bias, o, relu, out, quant::KernelPath::OneDnn);
                const auto b =
                    quant::quantized_conv2d(x, w, bias, o, relu, out, quant::KernelPath::Reference);
                QVERIFY(a.data.shape() == b.data.shape());
                QVERIFY2(maxDiff(a.data, b.data) <= 1,
                         qPrintable(QString("C %1 O %2").arg(s.C).arg(s.O)));
                const Tensor fa =
                    quant::quantized_conv2d_f32(x, w, bias, o, relu, quant::KernelPath::OneDnn);
                const Tensor fb =
                    quant::quantized_conv2d_f32(x, w, bias, o, relu, quant::KernelPath::Reference);
                QVERIFY(myelin::allclose(fa, fb, 1e-5, 1e-5));
            }
    }

    // conv -> pool -> conv on oneDNN passes channels-last tensors along; the same chain on the
    // reference (NCHW throughout) gives the same values within a quantum.
    void channelsLastChain() {
        myelin::Generator gen(13);
        const quant::QTensor x = randomQ({2, 3, 12, 12}, {0.03f, 60}, gen);
        const auto w1 =
            quant::quantize_weight_per_channel(myelin::randn({8, 3, 3, 3}, {}, &gen) * 0.3);
        const auto w2 =
            quant::quantize_weight_per_channel(myelin::randn({4, 8, 3, 3}, {}, &gen) * 0.2);
        quant::Conv2dOptions o;
        o.padding = {1, 1};
        auto chain = [&](quant::KernelPath path) {
            auto h = quant::quantized_conv2d(x, w1, Tensor(), o, true, {0.05f, 0}, path);
            h = quant::quantized_max_pool2d(h, {2, 2}, {2, 2}, {0, 0}, {1, 1}, path);
            return quant::quantized_conv2d(h, w2, Tensor(), o, false, {0.05f, 128}, path);
        };
        const auto fast = chain(quant::KernelPath::OneDnn);
        const auto ref = chain(quant::KernelPath::Reference);
        QVERIFY(fast.data.shape() == myelin::Dims({2, 4, 6, 6}));
        QVERIFY(!fast.data.is_contiguous()); // channels-last
        QVERIFY(ref.data.is_contiguous());
        QVERIFY(maxDiff(fast.data, ref.data) <= 1);
        QVERIFY(myelin::equal(quant::dequantize(fast),
                              quant::dequantize({fast.data.contiguous(), fast.q})));
    }

    // The weight is reordered once per layout and shared by copies of the QuantizedWeight.
    void weightPackedOnce() {
        myelin::Generator gen(3);
        const auto w = quant::quantize_weight_per_channel(myelin::randn({16, 32}, {}, &gen));
        QVERIFY(!w.packed);
        const quant::QTensor x = randomQ({8, 32}, {0.02f, 100}, gen);
        const auto first = quant::quantized_linear(x, w, Tensor(), false, {0.1f, 128});
        QVERIFY(w.packed);
        const auto packed = w.packed;
        const quant::QuantizedWeight copy = w;
        const auto second = quant::quantized_linear(x, copy, Tensor(), false, {0.1f, 128});
        QVERIFY(copy.packed == packed);
        QVERIFY(myelin::equal(first.data, second.data));
    }

    void maxPoolMatchesReference() {
        myelin::Generator gen(5);
        for (auto [k, s, p] : {std::array<int64_t, 3>{2, 2, 0}, {3, 2, 1}, {3, 1, 1}, {2, 1, 0}}) {
            const quant::QTensor x = randomQ({3, 5, 11, 9}, {0.05f, 30}, gen);
            const auto a = quant::quantized_max_pool2d(x, {k, k}, {s, s}, {p, p});
            const auto b = quant::quantized_max_pool2d(x, {k, k}, {s, s}, {p, p}, {1, 1},
                                                       quant::KernelPath::Reference);
            QVERIFY(myelin::equal(a.data, b.data));
            // Max pooling commutes with the quantization.
            F::Pool2dOptions po;
            po.kernel_size = {k, k};
            po.stride = std::array<int64_t, 2>{s, s};
            po.padding = {p, p};
            const Tensor f = F::max_pool2d(quant::dequantize(x), po);
            QVERIFY(myelin::equal(quant::dequantize(a), f));
        }
    }

    void dynamicLinear() {
        myelin::Generator gen(9);
        const Tensor x = myelin::randn({12, 40}, {}, &gen) * 2.0;
        const Tensor wf = myelin::randn({10, 40}, {}, &gen) * 0.2;
        const Tensor bias = myelin::randn({10}, {}, &gen);
        for (const auto& w :
             {quant::quantize_weight_per_tensor(wf), quant::quantize_weight_per_channel(wf)}) {
            const Tensor a =
                quant::dynamic_quantized_linear(x, w, bias, false, quant::KernelPath::OneDnn);
            const Tensor b =
                quant::dynamic_quantized_linear(x, w, bias, false, quant::KernelPath::Reference);
            QVERIFY(myelin::allclose(a, b, 1e-5, 1e-5));
            // Close to the float product: within a few activation quanta per output.
            QVERIFY(maxDiff(a, F::linear(x, wf, bias)) < 0.3);
        }
    }

    void fakeQuantAutograd() {
        Tensor x = myelin::tensor({-3.0, -0.26, 0.0, 0.12, 0.13, 2.0}).requires_grad_();
        const Tensor y = quant::fake_quantize_per_tensor(x, 0.25f, 4, 0, 15);
        QCOMPARE(y.to_vector<float>(),
                 (std::vector<float>{-1.0f, -0.25f, 0.0f, 0.0f, 0.25f, 2.0f}));
        QVERIFY(y.requires_grad());
        y.sum().backward();
        // -3 / 0.25 + 4 = -8 is below qmin: no gradient there.
        QCOMPARE(x.grad().to_vector<float>(), (std::vector<float>{0, 1, 1, 1, 1, 1}));
        {
            myelin::autograd::NoGradGuard guard;
            QVERIFY(!quant::fake_quantize_per_tensor(x, 0.25f, 4, 0, 15).requires_grad());
        }
        Tensor w = myelin::tensor({{0.1, -0.2, 0.3}, {1.0, 2.0, 3.0}}).requires_grad_();
        const Tensor yw = quant::fake_quantize_per_channel(w, {0.1f, 0.01f}, 0, -128, 127);
        QCOMPARE(yw.to_vector<float>(),
                 (std::vector<float>{0.1f, -0.2f, 0.3f, 1.0f, 1.27f, 1.27f}));
        yw.sum().backward();
        QCOMPARE(w.grad().to_vector<float>(), (std::vector<float>{1, 1, 1, 1, 0, 0}));
    }

    void argumentChecks() {
        myelin::Generator gen(1);
        const auto w = quant::quantize_weight_per_channel(myelin::randn({4, 8}, {}, &gen));
        const quant::QTensor bad = randomQ({2, 7}, {0.1f, 0}, gen);
        CHECK_ERROR(myelin::ShapeError, quant::quantized_linear(bad, w, Tensor(), false, {0.1f, 0}),
                    "quantized_linear", "[..., 8]");
        const quant::QTensor floatData{myelin::zeros({2, 8}), {0.1f, 0}};
        CHECK_ERROR(myelin::DTypeError, quant::quantized_linear_f32(floatData, w, Tensor(), false),
                    "quint8");
        CHECK_ERROR(myelin::ShapeError,
                    quant::quantized_linear_f32(randomQ({2, 8}, {0.1f, 0}, gen), w,
                                                myelin::zeros({3}), false),
                    "bias");
        CHECK_ERROR(myelin::Error, quant::quantize_per_tensor(myelin::zeros({2}), {0.0f, 0}),
                    "scale");
        CHECK_ERROR(myelin::ShapeError,
                    quant::fake_quantize_per_channel(myelin::zeros({2, 3}), {1.0f}, 1, 0, 255),
                    "3 scales");
        const auto w4 = quant::quantize_weight_per_channel(myelin::randn({4, 3, 3, 3}, {}, &gen));
        CHECK_ERROR(myelin::ShapeError,
                    quant::quantized_conv2d_f32(randomQ({1, 2, 5, 5}, {0.1f, 0}, gen), w4, Tensor(),
                                                {}, false),
                    "does not fit");
    }
};

QTEST_GUILESS_MAIN(TestQuant)
#include "test_quant.moc"
