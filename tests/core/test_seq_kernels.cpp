// The kernels behind the sequence models' training speed (issue 18): the counter-based dropout
// stream (kept fraction, values, gradient, reproducible from the seed and independent of the
// thread count), attention's per-head GEMMs on the projections' memory against the composed
// weights path (sequence-first and batch-first, cross-attention with other key lengths, masks,
// float32 and float64, and training-mode dropout, whose mask both paths draw alike).
#include <myelin/autograd.h>
#include <myelin/device.h>
#include <myelin/generator.h>
#include <myelin/nn/attention.h>
#include <myelin/nn/functional.h>
#include <myelin/nn/recurrent.h>
#include <myelin/tensor.h>

#include <QtTest>

#include "backend/kernels/dropout.h"
#include "test_support.h"

#include <cmath>
#include <vector>

using namespace myelin;
namespace nn = myelin::nn;
namespace F = myelin::nn::functional;

namespace {

Tensor rnd(const Dims& shape, uint64_t seed, DType t = DType::Float64, bool grad = true) {
    Generator g(seed);
    Tensor x = randn(shape, TensorOptions(t), &g);
    if (grad) x.requires_grad_();
    return x;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
    return amax(abs(a.detach().to(DType::Float64) - b.detach().to(DType::Float64))).item();
}

} // namespace

class TestSeqKernels : public QObject {
    Q_OBJECT

  private slots:
    // Each element is kept with probability 1 - p, independently: over 2^20 elements the kept
    // fraction is within 5 standard deviations, and neighbouring elements are uncorrelated.
    void dropoutStreamStatistics_data() {
        QTest::addColumn<double>("p");
        QTest::newRow("0.1") << 0.1;
        QTest::newRow("0.5") << 0.5;
        QTest::newRow("0.9") << 0.9;
    }
    void dropoutStreamStatistics() {
        QFETCH(double, p);
        const kernels::DropoutStream s(12345, p);
        const int64_t n = int64_t(1) << 20;
        int64_t kept = 0, both = 0;
        bool prev = false;
        for (int64_t i = 0; i < n; ++i) {
            const bool k = s.keep(static_cast<uint64_t>(i));
            kept += k;
            both += k && prev;
            prev = k;
        }
        const double q = 1.0 - p, sd = std::sqrt(n * q * p);
        QVERIFY2(std::abs(kept - n * q) < 5 * sd, std::to_string(kept).c_str());
        QVERIFY2(std::abs(both - n * q * q) < 5 * std::sqrt(n * q * q * (1 - q * q)),
                 std::to_string(both).c_str());
    }

    // Values are 0 or x / (1 - p); the gradient is the same mask times 1 / (1 - p); the same
    // seed gives the same mask, for one thread or two, float32 or float64.
    void dropoutValuesGradientAndThreads_data() {
        QTest::addColumn<int>("dtype");
        QTest::newRow("float32") << int(DType::Float32);
        QTest::newRow("float64") << int(DType::Float64);
    }
    void dropoutValuesGradientAndThreads() {
        QFETCH(int, dtype);
        const DType dt = static_cast<DType>(dtype);
        const int before = get_num_threads();
        const Tensor x = (rnd({300, 500}, 3, dt, false).abs() + 0.5).requires_grad_();
        Tensor y[2];
        for (int t = 0; t < 2; ++t) {
            set_num_threads(t + 1);
            Generator g(99);
            y[t] = F::dropout(x, 0.3, true, &g);
        }
        set_num_threads(before);
        QVERIFY(equal(y[0], y[1]));
        const Tensor ratio = y[0].detach() / x.detach();
        const Tensor kept = gt(ratio, 0.5);
        QVERIFY(max_abs_diff(ratio * kept.to(dt), kept.to(dt) / 0.7) < 1e-6);
        QVERIFY(max_abs_diff(ratio * logical_not(kept).to(dt), zeros({300, 500})) == 0.0);
        const Tensor g = rnd({300, 500}, 4, dt, false);
        y[0].backward(g);
        QVERIFY(max_abs_diff(x.grad(), g * kept.to(dt) / 0.7) < 1e-6);
        Generator other(100);
        QVERIFY(!equal(F::dropout(x, 0.3, true, &other), y[0]));
    }

    // The fused attention node (heads read and written in place) against the weights path,
    // composed from differentiable tensor ops, in every layout the GEMM strides depend on.
    void attentionMatchesComposed_data() {
        QTest::addColumn<bool>("batch_first");
        QTest::addColumn<bool>("cross");
        QTest::addColumn<bool>("masks");
        QTest::addColumn<double>("dropout");
        QTest::addColumn<int>("dtype");
        const int f32 = int(DType::Float32), f64 = int(DType::Float64);
        QTest::newRow("seq-first self") << false << false << false << 0.0 << f64;
        QTest::newRow("batch-first self masks") << true << false << true << 0.0 << f64;
        QTest::newRow("seq-first cross masks") << false << true << true << 0.0 << f64;
        QTest::newRow("batch-first cross") << true << true << false << 0.0 << f64;
        QTest::newRow("self dropout") << true << false << false << 0.3 << f64;
        QTest::newRow("cross dropout masks") << false << true << true << 0.2 << f64;
        QTest::newRow("float32 self dropout") << true << false << true << 0.1 << f32;
    }
    void attentionMatchesComposed() {
        QFETCH(bool, batch_first);
        QFETCH(bool, cross);
        QFETCH(bool, masks);
        QFETCH(double, dropout);
        QFETCH(int, dtype);
        const DType dt = static_cast<DType>(dtype);
        const int64_t B = 3, L = 7, S = cross ? 5 : 7, E = 16, H = 4;
        auto mha = std::make_shared<nn::MultiheadAttention>(
            E, H, nn::MultiheadAttentionOptions{.dropout = dropout, .batch_first = batch_first});
        mha->to(dt);
        {
            autograd::NoGradGuard ng;
            Generator g(5);
            for (auto& [name, p] : mha->named_parameters())
                p.add_(randn(p.shape(), TensorOptions(dt), &g), 0.1);
        }
        mha->train(dropout > 0.0);
        auto seq = [&](int64_t len, uint64_t seed) {
            return rnd(batch_first ? Dims{B, len, E} : Dims{len, B, E}, seed, dt);
        };
        F::AttentionMasks m;
        if (masks) {
            std::vector<double> kp(static_cast<size_t>(B * S), 0.0);
            kp[static_cast<size_t>(S - 1)] = kp[static_cast<size_t>(2 * S - 2)] = 1.0;
            m.key_padding_mask = from_vector(kp, {B, S}).to(DType::Bool);
            m.attn_mask = rnd({L, S}, 6, dt, false);
        }
        Tensor outs[2];
        TensorList grads[2];
        for (int path = 0; path < 2; ++path) {
            const Tensor q = seq(L, 7);
            const Tensor kv = cross ? seq(S, 8) : q;
            manual_seed(42); // both paths draw the dropout mask from this state
            outs[path] = path == 0 ? mha->forward(q, kv, kv, m)
                                   : mha->forward_with_weights(q, kv, kv, m).output;
            mha->zero_grad();
            outs[path].backward(seq(L, 9).detach());
            grads[path] = {q.grad(), mha->in_proj_weight.grad(), mha->in_proj_bias.grad(),
                           mha->out_proj->weight.grad()};
            if (cross) grads[path].push_back(kv.grad());
        }
        const double tol = dt == DType::Float64 ? 1e-11 : 1e-4;
        QVERIFY2(max_abs_diff(outs[0], outs[1]) < tol,
                 std::to_string(max_abs_diff(outs[0], outs[1])).c_str());
        for (size_t k = 0; k < grads[0].size(); ++k)
            QVERIFY2(max_abs_diff(grads[0][k], grads[1][k]) < tol, std::to_string(k).c_str());
    }
};

QTEST_MAIN(TestSeqKernels)
#include "test_seq_kernels.moc"
