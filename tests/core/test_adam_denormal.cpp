// Adam's float update on denormal first moments (backend/cpu/adam_denormal.h): the CPU backend's
// kernel, which takes an exact double path for tiny values instead of the CPU's slow denormal
// handling, gives the same bits as the plain element rule (kernels::adam_fast_element, here
// compiled op by op without contraction) on adversarial data: denormal, tiny-normal and ordinary
// moments, zero, tiny and ordinary gradients, weights near zero, and several step scalars.
#include "backend/backend.h"
#include "backend/cpu/adam_denormal.h"
#include "backend/kernels/optim_update.h"
#include "backend/train_kernels.h"

#include <myelin/device.h>

#include <QtTest>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

using namespace myelin;

namespace {

struct Buffers {
    std::vector<float> p, g, m, v;
};

template <typename T> backend::View view(std::vector<T>& x) {
    backend::View out;
    out.data = x.data();
    out.dtype = std::is_same_v<T, double> ? DType::Float64 : DType::Float32;
    out.ndim = 1;
    out.shape[0] = int64_t(x.size());
    out.strides[0] = 1;
    return out;
}

// One value of a kind that exercises the paths: denormals (every magnitude, both signs), tiny
// normals around the thresholds (2^-126 .. 2^-88), zeros and ordinary values.
float moment(std::mt19937& rng) {
    std::uniform_int_distribution<int> kind(0, 9);
    std::uniform_real_distribution<float> unit(0.5f, 1.0f);
    const float sign = (rng() & 1) ? -1.0f : 1.0f;
    switch (kind(rng)) {
    case 0:
    case 1:
    case 2: // denormal: any of its 2^23 - 1 bit patterns
        return sign * std::bit_cast<float>(uint32_t(1 + rng() % 0x7fffffu));
    case 3:
    case 4: { // tiny normal near the path's thresholds
        std::uniform_int_distribution<int> e(-126, -88);
        return sign * std::ldexp(unit(rng), e(rng));
    }
    case 5:
        return sign * 0.0f;
    default: {
        std::uniform_int_distribution<int> e(-30, -2);
        return sign * std::ldexp(unit(rng), e(rng));
    }
    }
}

Buffers random_buffers(std::mt19937& rng, int64_t n, bool tiny_grads) {
    Buffers b;
    std::uniform_int_distribution<int> kind(0, 9), e(-20, 2), tiny_e(-60, -37);
    std::uniform_real_distribution<float> unit(0.5f, 1.0f);
    for (int64_t i = 0; i < n; ++i) {
        const float sign = (rng() & 1) ? -1.0f : 1.0f;
        b.p.push_back(sign * std::ldexp(unit(rng), e(rng)));
        const int k = kind(rng);
        b.g.push_back(k < 4                  ? 0.0f // a gradient that stays 0
                      : k == 4 && tiny_grads ? sign * std::ldexp(unit(rng), tiny_e(rng))
                                             : sign * std::ldexp(unit(rng), e(rng) - 8));
        b.m.push_back(moment(rng));
        b.v.push_back(k == 5 ? 0.0f : std::ldexp(unit(rng), e(rng) * 2 - 10));
    }
    return b;
}

template <bool kDecoupled> void reference(Buffers& b, const kernels::AdamArgs<float>& a) {
    for (int64_t i = 0; i < int64_t(b.p.size()); ++i)
        kernels::adam_fast_element<float, kDecoupled>(i, b.p.data(), b.g.data(), b.m.data(),
                                                      b.v.data(), a);
}

// The scalars torch.optim.Adam (AdamW when decoupled) computes for step `step` (1-based).
backend::AdamStep adam_scalars(int step, double lr = 1e-3, double beta1 = 0.9,
                               bool decoupled = false, double weight_decay = 0.0) {
    const double beta2 = 0.999;
    backend::AdamStep s;
    s.beta1 = beta1;
    s.one_minus_beta1 = 1.0 - beta1;
    s.beta2 = beta2;
    s.one_minus_beta2 = 1.0 - beta2;
    s.eps = 1e-8;
    s.weight_decay = decoupled ? 0.0 : weight_decay;
    s.decay_factor = decoupled ? 1.0 - lr * weight_decay : 1.0;
    s.bias_correction2_sqrt = std::sqrt(1.0 - std::pow(beta2, step));
    s.neg_step_size = -lr / (1.0 - std::pow(beta1, step));
    s.decoupled = decoupled;
    return s;
}

kernels::AdamArgs<float> float_args(const backend::AdamStep& s) {
    return {float(s.beta1),
            float(s.one_minus_beta1),
            float(s.beta2),
            float(s.one_minus_beta2),
            float(s.eps),
            float(s.weight_decay),
            float(s.decay_factor),
            float(s.bias_correction2_sqrt),
            float(s.neg_step_size),
            s.decoupled,
            s.amsgrad,
            s.maximize};
}

// Empty when x and y hold the same bits, else where and how they first differ.
QString difference(const char* what, const std::vector<float>& x, const std::vector<float>& y) {
    for (size_t i = 0; i < x.size(); ++i)
        if (std::bit_cast<uint32_t>(x[i]) != std::bit_cast<uint32_t>(y[i]))
            return QString("%1 differs at %2 of %3: %4 vs %5 (plain rule)")
                .arg(what)
                .arg(i)
                .arg(x.size())
                .arg(double(x[i]), 0, 'g', 9)
                .arg(double(y[i]), 0, 'g', 9);
    return {};
}

} // namespace

class TestAdamDenormal : public QObject {
    Q_OBJECT
  private slots:
    void kernel_equals_plain_rule_on_denormals_data() {
        QTest::addColumn<bool>("decoupled");
        QTest::addColumn<double>("lr");
        QTest::addColumn<double>("beta1");
        QTest::addColumn<int>("step");
        QTest::addColumn<bool>("tiny_grads");
        QTest::newRow("adam default, step 900") << false << 1e-3 << 0.9 << 900 << false;
        QTest::newRow("adam, step 1") << false << 1e-3 << 0.9 << 1 << false;
        QTest::newRow("adam, large lr") << false << 0.5 << 0.9 << 3 << false;
        QTest::newRow("adam, tiny lr") << false << 1e-8 << 0.9 << 50 << false;
        QTest::newRow("adam, beta1 0.999") << false << 1e-3 << 0.999 << 20 << false;
        QTest::newRow("adam, tiny gradients") << false << 1e-3 << 0.9 << 900 << true;
        QTest::newRow("adamw, step 900") << true << 1e-3 << 0.9 << 900 << false;
    }
    void kernel_equals_plain_rule_on_denormals() {
        QFETCH(bool, decoupled);
        QFETCH(double, lr);
        QFETCH(double, beta1);
        QFETCH(int, step);
        QFETCH(bool, tiny_grads);
        const backend::AdamStep s =
            adam_scalars(step, lr, beta1, decoupled, decoupled ? 1e-2 : 0.0);
        backend::TrainKernels& kernels = backend::train_kernels(
            *backend::find(DeviceType::CPU), backend::Primitive::OptimizerStep, DType::Float32);
        std::mt19937 rng(uint32_t(step) * 7919u + (decoupled ? 1u : 0u) + (tiny_grads ? 2u : 0u));
        // Sizes: under one chunk, several chunks with a tail, and one that splits over threads.
        for (int64_t n : {int64_t(37), int64_t(5000), int64_t(70001)}) {
            Buffers ours = random_buffers(rng, n, tiny_grads), plain = ours;
            const kernels::AdamArgs<float> a = float_args(s);
            if (decoupled)
                reference<true>(plain, a);
            else
                reference<false>(plain, a);
            backend::View w = view(ours.p), g = view(ours.g), m = view(ours.m), v = view(ours.v);
            // The trainer's statistics change no bit of the update.
            std::vector<double> sums(5);
            backend::UpdateStatsOut stats{view(sums), false};
            kernels.adam_step(s, w, g, m, v, nullptr, n == 5000 ? &stats : nullptr);
            for (const QString& d :
                 {difference("exp_avg", ours.m, plain.m), difference("exp_avg_sq", ours.v, plain.v),
                  difference("weight", ours.p, plain.p)})
                QVERIFY2(d.isEmpty(), qPrintable(d));
        }
    }

    // The tiny path itself (as this file compiles it), on a chunk that the kernel's choice sends
    // there: every element the same bits as the plain rule.
    void tiny_path_equals_plain_rule() {
        namespace ad = backend::adam_denormal;
        std::mt19937 rng(5);
        for (int step : {1, 10, 900}) {
            const backend::AdamStep s = adam_scalars(step);
            const kernels::AdamArgs<float> a = float_args(s);
            QVERIFY(ad::tiny_path_fits<false>(a));
            Buffers ours = random_buffers(rng, 1024, false), plain = ours;
            QVERIFY(ad::chunk_wants_tiny_path<false>(ours.p.data(), ours.g.data(), ours.m.data(),
                                                     ours.v.data(), 1024));
            ad::tiny_loop<false>(ours.p.data(), ours.g.data(), ours.m.data(), ours.v.data(), 1024,
                                 a);
            reference<false>(plain, a);
            for (const QString& d :
                 {difference("exp_avg", ours.m, plain.m), difference("exp_avg_sq", ours.v, plain.v),
                  difference("weight", ours.p, plain.p)})
                QVERIFY2(d.isEmpty(), qPrintable(QString("step %1: %2").arg(step).arg(d)));
        }
    }

    // With denormals flushed (set_flush_denormal) the kernel gives the flushed results, as the
    // plain rule does under the same mode: zeros, not the exact path's denormals.
    void flushed_mode_gives_flushed_results() {
        std::mt19937 rng(3);
        Buffers ours = random_buffers(rng, 5000, false), plain = ours;
        const backend::AdamStep s = adam_scalars(900);
        backend::TrainKernels& kernels = backend::train_kernels(
            *backend::find(DeviceType::CPU), backend::Primitive::OptimizerStep, DType::Float32);
        if (!set_flush_denormal(true)) QSKIP("this CPU has no flush-to-zero mode");
        reference<false>(plain, float_args(s));
        backend::View w = view(ours.p), g = view(ours.g), m = view(ours.m), v = view(ours.v);
        kernels.adam_step(s, w, g, m, v, nullptr, nullptr);
        set_flush_denormal(false);
        int64_t denormal = 0;
        for (float x : ours.m)
            denormal += x != 0.0f && std::fabs(x) < FLT_MIN ? 1 : 0;
        QCOMPARE(denormal, int64_t(0));
        for (const QString& d :
             {difference("exp_avg", ours.m, plain.m), difference("weight", ours.p, plain.p)})
            QVERIFY2(d.isEmpty(), qPrintable(d));
    }

    // Many steps of one buffer whose gradients stop: the first moments decay through the whole
    // denormal range, step by step, with the same bits as the plain rule, and then stay there:
    // k * 2^-149 times 0.9 rounds back to k for k <= 4, so IEEE arithmetic (PyTorch's too) keeps
    // them denormal for the rest of the run, and every later step meets them.
    void moments_decay_through_denormals_exactly() {
        const int64_t n = 4096;
        std::mt19937 rng(11);
        Buffers ours = random_buffers(rng, n, false);
        for (float& x : ours.m)
            x = std::ldexp(1.0f + float(rng() % 1000) / 1000.0f, -110 - int(rng() % 20));
        for (float& x : ours.g)
            x = 0.0f;
        Buffers plain = ours;
        backend::TrainKernels& kernels = backend::train_kernels(
            *backend::find(DeviceType::CPU), backend::Primitive::OptimizerStep, DType::Float32);
        for (int step = 1; step <= 400; ++step) {
            const backend::AdamStep s = adam_scalars(step);
            reference<false>(plain, float_args(s));
            backend::View w = view(ours.p), g = view(ours.g), m = view(ours.m), v = view(ours.v);
            kernels.adam_step(s, w, g, m, v, nullptr, nullptr);
            for (const QString& d :
                 {difference("exp_avg", ours.m, plain.m), difference("weight", ours.p, plain.p)})
                QVERIFY2(d.isEmpty(), qPrintable(QString("step %1: %2").arg(step).arg(d)));
        }
        int64_t stuck = 0;
        for (float x : ours.m)
            stuck += std::fabs(x) > 0.0f && std::fabs(x) <= 4 * std::bit_cast<float>(1u) ? 1 : 0;
        QCOMPARE(stuck, n);
    }
};

QTEST_APPLESS_MAIN(TestAdamDenormal)
#include "test_adam_denormal.moc"
