// Float32 linear on the CPU runs on oneDNN's matmul with its own backward
// (core/nn/functional_linear.cpp). Checked against the float64 path (BLAS, composed ops) on
// MLP-sized products at 1 and 2 threads (cached primitives reused), a transposed (tied) weight,
// no bias, an input without gradient and a non-contiguous 3-D input; and exactly on small
// integers.
#include <myelin/autograd.h>
#include <myelin/device.h>
#include <myelin/generator.h>
#include <myelin/nn/functional.h>
#include <myelin/tensor.h>

#include <QtTest>

#include <algorithm>
#include <functional>
#include <string>

using namespace myelin;
namespace F = myelin::nn::functional;

namespace {

using Linear = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;

Tensor leaf(const Dims& shape, uint64_t seed, DType t, bool grad) {
    Generator g(seed);
    Tensor x = randn(shape, TensorOptions(DType::Float64), &g).to(t);
    if (grad) x.requires_grad_();
    return x;
}

// Largest |difference| of the forward and of each gradient between float32 and float64, each
// relative to the float64 values' largest magnitude (at least 1).
double worst_difference(const Linear& f, const Dims& xs, const Dims& ws, bool bias, bool x_grad) {
    double worst = 0;
    Tensor y64, y32;
    Tensor in[2][3];
    const DType types[2] = {DType::Float64, DType::Float32};
    for (int k = 0; k < 2; ++k) {
        in[k][0] = leaf(xs, 1, types[k], x_grad);
        in[k][1] = leaf(ws, 2, types[k], true);
        if (bias) in[k][2] = leaf({ws[0]}, 3, types[k], true);
    }
    y64 = f(in[0][0], in[0][1], in[0][2]);
    y32 = f(in[1][0], in[1][1], in[1][2]);
    const auto rel = [](const Tensor& a32, const Tensor& a64) {
        const double scale = std::max(1.0, max(abs(a64)).item());
        return max(abs(a32.to(DType::Float64) - a64)).item() / scale;
    };
    worst = rel(y32, y64);
    const Tensor w = leaf(y64.shape(), 99, DType::Float64, false);
    (y64 * w).sum().backward();
    (y32 * w.to(DType::Float32)).sum().backward();
    for (int i = 0; i < 3; ++i) {
        if (!in[0][i].defined() || !in[0][i].requires_grad()) continue;
        if (!in[1][i].grad().defined()) return 1e9;
        worst = std::max(worst, rel(in[1][i].grad(), in[0][i].grad()));
    }
    return worst;
}

} // namespace

class TestNnLinear : public QObject {
    Q_OBJECT
  private slots:
    void againstFloat64() {
        const Linear plain = [](const Tensor& x, const Tensor& w, const Tensor& b) {
            return F::linear(x, w, b);
        };
        const int threads = get_num_threads();
        for (int t : {1, 2}) {
            set_num_threads(t);
            for (int repeat = 0; repeat < 2; ++repeat)
                QVERIFY(worst_difference(plain, {128, 784}, {256, 784}, true, true) < 1e-4);
        }
        set_num_threads(threads);
        QVERIFY(worst_difference(plain, {7, 5}, {3, 5}, false, true) < 1e-5);
        QVERIFY(worst_difference(plain, {7, 5}, {3, 5}, true, false) < 1e-5);
        const Linear tied = [](const Tensor& x, const Tensor& w, const Tensor& b) {
            return F::linear(x, w.t().contiguous().t(), b); // [N, K] stored as [K, N]
        };
        QVERIFY(worst_difference(tied, {6, 4}, {9, 4}, true, true) < 1e-5);
        const Linear strided = [](const Tensor& x, const Tensor& w, const Tensor& b) {
            return F::linear(x.transpose(0, 1), w, b);
        };
        QVERIFY(worst_difference(strided, {3, 2, 5}, {4, 5}, true, true) < 1e-5);
    }

    // Exact on small integers (every product and sum is representable).
    void exactValues() {
        const Tensor x = tensor({{1, 2, 3}, {4, 5, 6}}).requires_grad_();
        const Tensor w = tensor({{1, 0, -1}, {2, 1, 0}}).requires_grad_();
        const Tensor b = tensor({10, 20}).requires_grad_();
        const Tensor y = F::linear(x, w, b);
        QCOMPARE(std::string(y.grad_fn()->name()), std::string("AddmmBackward0"));
        QCOMPARE(y.to_vector<float>(), std::vector<float>({8, 24, 8, 33}));
        (y * tensor({{1, 2}, {3, 4}})).sum().backward();
        QCOMPARE(x.grad().to_vector<float>(), std::vector<float>({5, 2, -1, 11, 4, -3}));
        QCOMPARE(w.grad().to_vector<float>(), std::vector<float>({13, 17, 21, 18, 24, 30}));
        QCOMPARE(b.grad().to_vector<float>(), std::vector<float>({4, 6}));
    }
};

QTEST_APPLESS_MAIN(TestNnLinear)
#include "test_nn_linear.moc"
