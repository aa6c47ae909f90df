// GradScaler against torch.cuda.amp.GradScaler's documented behaviour, with sequences worked out
// by hand: the loss scaled by 65536, gradients unscaled before the step, a step with inf/NaN
// gradients skipped and the scale halved, the scale doubled after growth_interval finite steps
// in a row (not past float32's range), torch's state_dict keys, and the misuse torch refuses.
#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/optim/grad_scaler.h>
#include <myelin/optim/optim.h>

#include <QtTest>

#include <cmath>
#include <limits>

using namespace myelin;
using optim::GradScaler;
using optim::GradScalerOptions;

namespace {

// w (2 values) with an SGD of lr 1: loss = sum(w * c) has gradient c.
struct Setup {
    Tensor w = tensor({1.0, 2.0}, TensorOptions{}.with_requires_grad());
    optim::SGD sgd{{w}, optim::SGDOptions{.lr = 1.0}};

    // One iteration: backward of the scaled loss with gradient c, step, update. Returns whether
    // the optimizer stepped.
    bool iterate(GradScaler& scaler, double c0, double c1) {
        sgd.zero_grad();
        const Tensor c = tensor({c0, c1});
        scaler.scale(sum(w * c)).backward();
        const bool stepped = scaler.step(sgd);
        scaler.update();
        return stepped;
    }
    double w0() const { return w.detach().narrow(0, 0, 1).item(); }
};

template <typename F> QString error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

} // namespace

class TestGradScaler : public QObject {
    Q_OBJECT
  private slots:
    void defaults_are_torchs() {
        GradScaler scaler;
        QCOMPARE(scaler.get_scale(), 65536.0);
        const auto state = scaler.state_dict();
        QCOMPARE(state.size(), size_t(5));
        QCOMPARE(state.at("scale"), 65536.0);
        QCOMPARE(state.at("growth_factor"), 2.0);
        QCOMPARE(state.at("backoff_factor"), 0.5);
        QCOMPARE(state.at("growth_interval"), 2000.0);
        QCOMPARE(state.at("_growth_tracker"), 0.0);
        QCOMPARE(scaler.scale(scalar_tensor(3.0)).item(), 3.0 * 65536);
    }

    void gradients_are_unscaled_before_the_step() {
        Setup s;
        GradScaler scaler;
        s.sgd.zero_grad();
        scaler.scale(sum(s.w * tensor({0.25, -3.0}))).backward();
        QCOMPARE(s.w.grad().narrow(0, 0, 1).item(), 0.25 * 65536); // scaled by backward
        scaler.unscale_(s.sgd);
        QCOMPARE(s.w.grad().narrow(0, 0, 1).item(), 0.25);
        QCOMPARE(s.w.grad().narrow(0, 1, 1).item(), -3.0);
        QVERIFY(scaler.step(s.sgd)); // already unscaled: not divided again
        scaler.update();
        QCOMPARE(s.w0(), 1.0 - 0.25);
        QCOMPARE(scaler.get_scale(), 65536.0);
        QCOMPARE(scaler.growth_tracker(), int64_t(1));
    }

    void a_step_with_inf_or_nan_is_skipped_and_the_scale_backs_off() {
        Setup s;
        GradScaler scaler;
        QVERIFY(s.iterate(scaler, 1.0, 1.0)); // w0: 1 -> 0, tracker 1
        QCOMPARE(s.w0(), 0.0);
        const double inf = std::numeric_limits<double>::infinity();
        QVERIFY(!s.iterate(scaler, inf, 1.0)); // skipped: w unchanged
        QCOMPARE(s.w0(), 0.0);
        QCOMPARE(scaler.get_scale(), 32768.0);
        QCOMPARE(scaler.growth_tracker(), int64_t(0));
        QVERIFY(!s.iterate(scaler, 1.0, std::nan(""))); // NaN in the other element
        QCOMPARE(scaler.get_scale(), 16384.0);
        QVERIFY(s.iterate(scaler, 2.0, 0.0));
        QCOMPARE(s.w0(), -2.0);
        QCOMPARE(scaler.get_scale(), 16384.0);
        QCOMPARE(scaler.growth_tracker(), int64_t(1));
    }

    void the_scale_grows_after_growth_interval_finite_steps() {
        Setup s;
        GradScaler scaler(GradScalerOptions{.growth_interval = 3});
        // Hand-computed: (scale, tracker) after each update.
        // finite: (65536,1) (65536,2) (131072,0); inf: (65536,0); finite x3: (131072,0).
        s.iterate(scaler, 1, 1);
        s.iterate(scaler, 1, 1);
        QCOMPARE(scaler.get_scale(), 65536.0);
        QCOMPARE(scaler.growth_tracker(), int64_t(2));
        s.iterate(scaler, 1, 1);
        QCOMPARE(scaler.get_scale(), 131072.0);
        QCOMPARE(scaler.growth_tracker(), int64_t(0));
        s.iterate(scaler, INFINITY, 1);
        QCOMPARE(scaler.get_scale(), 65536.0);
        for (int i = 0; i < 2; ++i)
            s.iterate(scaler, 1, 1);
        QCOMPARE(scaler.get_scale(), 65536.0); // an overflow restarted the count
        s.iterate(scaler, 1, 1);
        QCOMPARE(scaler.get_scale(), 131072.0);
    }

    void default_interval_is_2000_steps() {
        Setup s;
        GradScaler scaler;
        for (int i = 0; i < 1999; ++i)
            s.iterate(scaler, 0.0, 0.0);
        QCOMPARE(scaler.get_scale(), 65536.0);
        QCOMPARE(scaler.growth_tracker(), int64_t(1999));
        s.iterate(scaler, 0.0, 0.0);
        QCOMPARE(scaler.get_scale(), 131072.0);
        QCOMPARE(scaler.growth_tracker(), int64_t(0));
    }

    void growth_stops_at_float32s_range() {
        Setup s;
        GradScaler scaler(
            GradScalerOptions{.init_scale = std::ldexp(1.0, 127), .growth_interval = 1});
        s.iterate(scaler, 0.0, 0.0); // 2^128 is inf in float32: the scale stays, tracker resets
        QCOMPARE(scaler.get_scale(), std::ldexp(1.0, 127));
        QCOMPARE(scaler.growth_tracker(), int64_t(0));
    }

    void state_dict_round_trips() {
        Setup s;
        GradScaler scaler(GradScalerOptions{.growth_interval = 10});
        s.iterate(scaler, 1, 1);
        s.iterate(scaler, INFINITY, 1);
        s.iterate(scaler, 1, 1);
        GradScaler restored;
        restored.load_state_dict(scaler.state_dict());
        QCOMPARE(restored.state_dict(), scaler.state_dict());
        QCOMPARE(restored.get_scale(), 32768.0);
        QCOMPARE(restored.growth_tracker(), int64_t(1));
        auto bad = scaler.state_dict();
        bad.erase("_growth_tracker");
        QVERIFY(error_of([&] { restored.load_state_dict(bad); }).contains("_growth_tracker"));
        bad = scaler.state_dict();
        bad["backoff_factor"] = 2.0;
        QVERIFY(error_of([&] { restored.load_state_dict(bad); }).contains("backoff_factor"));
        QCOMPARE(restored.get_scale(), 32768.0); // a refused load changed nothing
    }

    void disabled_scaler_passes_through() {
        Setup s;
        GradScaler scaler(GradScalerOptions{.enabled = false});
        QCOMPARE(scaler.get_scale(), 1.0);
        QVERIFY(scaler.state_dict().empty());
        QVERIFY(s.iterate(scaler, 0.5, 0.5));
        QCOMPARE(s.w0(), 0.5);
    }

    void misuse_is_refused_as_torch_does() {
        Setup s;
        GradScaler scaler;
        s.sgd.zero_grad();
        scaler.scale(sum(s.w * tensor({1.0, 1.0}))).backward();
        scaler.unscale_(s.sgd);
        QVERIFY(error_of([&] { scaler.unscale_(s.sgd); }).contains("already been called"));
        scaler.step(s.sgd);
        QVERIFY(error_of([&] { scaler.step(s.sgd); }).contains("step() has already been called"));
        scaler.update();
        QVERIFY(error_of([&] { scaler.update(); }).contains("without an inf check"));
        QVERIFY(error_of([] {
                    GradScaler(GradScalerOptions{.growth_factor = 0.5});
                }).contains("growth_factor must be > 1"));
        QVERIFY(error_of([] {
                    GradScaler(GradScalerOptions{.init_scale = 0});
                }).contains("init_scale"));
    }
};

QTEST_APPLESS_MAIN(TestGradScaler)
#include "test_grad_scaler.moc"
