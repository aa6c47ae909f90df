// Optimizers and gradient clipping: 20-step trajectories against PyTorch 1.13
// (tests/golden/optim.txt), parameter groups, skipping parameters without a gradient, zero_grad,
// state_dict layout and round trips (save, load into a fresh optimizer, continue: identical to an
// uninterrupted run), and error messages.
#include "golden_optim_fixture.h"

#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/optim/clip_grad.h>
#include <myelin/optim/optim.h>
#include <myelin/tensor.h>

#include <QtTest>

#include "test_support.h"

#include <memory>

using namespace myelin;
using namespace myelin::optim;

namespace {

// PyTorch vectorises its element-wise kernels with FMA where ours round twice (no -mfma in the
// default build), so values differ by a few ulp per step; over 20 steps that stays below this.
constexpr double kRtol = 1e-6;
constexpr double kAtol = 1e-7;

// Options of a golden case (group 0) and the overrides of group 1.
std::unique_ptr<Optimizer> make_optimizer(const golden::Case& c, const std::vector<Tensor>& p) {
    const std::string kind = c.attr("optimizer");
    Options group1;
    for (const auto& [k, v] : c.attrs)
        if (k.rfind("group1.", 0) == 0) group1[k.substr(7)] = golden::Case::parse_double(v);
    std::vector<ParamGroup> groups{ParamGroup{{p[0], p[2]}, {}}, ParamGroup{{p[1]}, group1}};
    auto flag = [&](const char* k) { return c.num(k, 0.0) != 0.0; };
    if (kind == "sgd") {
        SGDOptions o;
        o.lr = c.num("lr", 1e-3);
        o.momentum = c.num("momentum", 0.0);
        o.dampening = c.num("dampening", 0.0);
        o.weight_decay = c.num("weight_decay", 0.0);
        o.nesterov = flag("nesterov");
        o.maximize = flag("maximize");
        return std::make_unique<SGD>(groups, o);
    }
    if (kind == "adam" || kind == "adamw") {
        AdamOptions o = kind == "adam" ? AdamOptions{} : adamw_defaults();
        o.lr = c.num("lr", o.lr);
        o.beta1 = c.num("beta1", o.beta1);
        o.beta2 = c.num("beta2", o.beta2);
        o.eps = c.num("eps", o.eps);
        o.weight_decay = c.num("weight_decay", o.weight_decay);
        o.amsgrad = flag("amsgrad");
        o.maximize = flag("maximize");
        if (kind == "adam") return std::make_unique<Adam>(groups, o);
        return std::make_unique<AdamW>(groups, o);
    }
    if (kind == "rmsprop") {
        RMSpropOptions o;
        o.lr = c.num("lr", o.lr);
        o.alpha = c.num("alpha", o.alpha);
        o.eps = c.num("eps", o.eps);
        o.weight_decay = c.num("weight_decay", o.weight_decay);
        o.momentum = c.num("momentum", o.momentum);
        o.centered = flag("centered");
        o.maximize = flag("maximize");
        return std::make_unique<RMSprop>(groups, o);
    }
    if (kind == "adagrad") {
        AdagradOptions o;
        o.lr = c.num("lr", o.lr);
        o.lr_decay = c.num("lr_decay", o.lr_decay);
        o.weight_decay = c.num("weight_decay", o.weight_decay);
        o.initial_accumulator_value =
            c.num("initial_accumulator_value", o.initial_accumulator_value);
        o.eps = c.num("eps", o.eps);
        o.maximize = flag("maximize");
        return std::make_unique<Adagrad>(groups, o);
    }
    throw std::runtime_error("unknown optimizer " + kind);
}

struct Problem {
    std::vector<Tensor> params; // p0, p1, p2 (p2 never gets a gradient)
    Tensor A0, A1, C0, C1;
    void set_grads() {
        autograd::NoGradGuard guard;
        params[0].set_grad(A0 * (params[0].detach() - C0));
        params[1].set_grad(A1 * (params[1].detach() - C1));
    }
};

Problem problem_of(const golden::Case& c) {
    Problem p;
    for (const char* n : {"p0", "p1", "p2"})
        p.params.push_back(c.tensors.at(n).make().requires_grad_());
    p.A0 = c.tensors.at("A0").make();
    p.A1 = c.tensors.at("A1").make();
    p.C0 = c.tensors.at("C0").make();
    p.C1 = c.tensors.at("C1").make();
    return p;
}

void run_steps(Optimizer& opt, Problem& p, int steps) {
    for (int i = 0; i < steps; ++i) {
        opt.zero_grad();
        p.set_grads();
        opt.step();
    }
}

} // namespace

class TestOptim : public QObject {
    Q_OBJECT
  private slots:
    // The statistics the trainer's capture reads come from the update pass itself: they must
    // equal sums taken directly, and gathering them must not change a single bit of the update
    // (large parameters run on several threads and in chunks; odd sizes test the tails).
    void step_stats_exact_and_without_effect() {
        for (const char* kind : {"sgd", "adam", "adamw", "rmsprop", "adagrad"}) {
            for (DType dtype : {DType::Float32, DType::Float64}) {
                Generator gen(7);
                const TensorOptions o(dtype);
                std::vector<Tensor> plain{randn({300001}, o, &gen), randn({37}, o, &gen)};
                std::vector<Tensor> with_stats{plain[0].clone(), plain[1].clone()};
                std::vector<Tensor> squares_only{plain[0].clone(), plain[1].clone()};
                const std::vector<Tensor> grads{randn({300001}, o, &gen), randn({37}, o, &gen)};
                auto make = [&](std::vector<Tensor> params) -> std::unique_ptr<Optimizer> {
                    const std::string k = kind;
                    if (k == "sgd")
                        return std::make_unique<SGD>(params,
                                                     SGDOptions{.lr = 0.1, .momentum = 0.9});
                    if (k == "adam") return std::make_unique<Adam>(params, AdamOptions{});
                    if (k == "adamw") return std::make_unique<AdamW>(params, AdamOptions{});
                    if (k == "rmsprop") return std::make_unique<RMSprop>(params, RMSpropOptions{});
                    return std::make_unique<Adagrad>(params, AdagradOptions{});
                };
                auto a = make(plain), b = make(with_stats), c = make(squares_only);
                QVERIFY(b->supports_step_stats());
                b->collect_step_stats(true);
                c->collect_step_stats(true, false); // Σg² alone, as the trainer off norm steps
                for (int step = 0; step < 3; ++step) {
                    std::vector<Tensor> before;
                    for (size_t i = 0; i < 2; ++i) {
                        plain[i].set_grad(grads[i].clone());
                        with_stats[i].set_grad(grads[i].clone());
                        squares_only[i].set_grad(grads[i].clone());
                        before.push_back(with_stats[i].clone());
                    }
                    a->step();
                    b->step();
                    c->step();
                    QVERIFY(a->step_stats(plain[0]) == nullptr);
                    for (size_t i = 0; i < 2; ++i) {
                        QVERIFY2(equal(plain[i], with_stats[i]),
                                 qPrintable(QString("%1 %2: gathering statistics changed the "
                                                    "update of parameter %3")
                                                .arg(kind, dtype_name(dtype))
                                                .arg(i)));
                        const StepStats* s = b->step_stats(with_stats[i]);
                        QVERIFY(s != nullptr);
                        const Tensor g = grads[i].to(DType::Float64);
                        const Tensor w = before[i].to(DType::Float64);
                        const Tensor d = with_stats[i].to(DType::Float64) - w;
                        auto close = [](double x, double y) {
                            return std::abs(x - y) <= 1e-5 * std::abs(y) + 1e-12;
                        };
                        QVERIFY(close(s->grad_squares, (g * g).sum().item<double>()));
                        QVERIFY(close(s->grad_abs, g.abs().sum().item<double>()));
                        QVERIFY(close(s->grad_max_abs, max(g.abs()).item<double>()));
                        QVERIFY(close(s->weight_squares, (w * w).sum().item<double>()));
                        QVERIFY(close(s->update_squares, (d * d).sum().item<double>()));
                        QCOMPARE(s->count, g.numel());
                        // Σg² alone: the same update, the same sum, nothing else gathered.
                        QVERIFY(equal(plain[i], squares_only[i]));
                        const StepStats* q = c->step_stats(squares_only[i]);
                        QVERIFY(q != nullptr);
                        QCOMPARE(q->grad_squares, s->grad_squares);
                        QCOMPARE(q->count, s->count);
                        QCOMPARE(q->weight_squares, 0.0);
                        QCOMPARE(q->update_squares, 0.0);
                    }
                }
            }
        }
    }

    // A NaN anywhere in a gradient shows in its max|g| (and Σg²), wherever it lies: before, a
    // finite value after it in the same lane replaced it.
    void step_stats_keep_a_nan_gradient() {
        for (DType dtype : {DType::Float32, DType::Float64})
            for (int64_t at : {int64_t(0), int64_t(3), int64_t(70), int64_t(99)}) {
                Tensor w = zeros({100}, TensorOptions(dtype));
                std::vector<double> g(100, 0.5);
                g[size_t(at)] = std::nan("");
                w.set_grad(from_vector(g, {100}).to(dtype));
                SGD sgd({w}, SGDOptions{.lr = 0.1});
                sgd.collect_step_stats(true);
                sgd.step();
                const StepStats* s = sgd.step_stats(w);
                QVERIFY(s != nullptr);
                QVERIFY2(std::isnan(s->grad_max_abs), qPrintable(QString::number(at)));
                QVERIFY(std::isnan(s->grad_squares));
            }
    }

    void golden_trajectories() {
        const auto cases = golden::load("optim");
        QVERIFY2(cases.size() >= 20, "optim.txt holds too few optimizer cases");
        for (const auto& c : cases) {
            Problem p = problem_of(c);
            auto opt = make_optimizer(c, p.params);
            const int steps = static_cast<int>(c.num("steps", 20));
            run_steps(*opt, p, steps);
            for (const auto& [i, rec] : c.params) {
                const QString err = golden::compare(p.params[i], rec, kRtol, kAtol,
                                                    c.name + " param " + std::to_string(i));
                QVERIFY2(err.isEmpty(), qPrintable(err));
            }
            // State in PyTorch's layout: same keys and values for every parameter with state.
            const OptimizerStateDict sd = opt->state_dict();
            size_t expected_states = 0;
            for (const auto& [i, key, rec] : c.states) {
                ++expected_states;
                QVERIFY2(sd.state.count(i),
                         qPrintable(QString::fromStdString(c.name + ": no state for param " +
                                                           std::to_string(i))));
                QVERIFY2(sd.state.at(i).count(key),
                         qPrintable(QString::fromStdString(c.name + ": no state " + key)));
                const QString err = golden::compare(sd.state.at(i).at(key), rec, kRtol, kAtol,
                                                    c.name + " state " + key);
                QVERIFY2(err.isEmpty(), qPrintable(err));
            }
            size_t actual_states = 0;
            for (const auto& [i, st] : sd.state)
                for (const auto& kv : st)
                    actual_states += kv.second.defined() ? 1 : 0;
            QVERIFY2(actual_states == expected_states,
                     qPrintable(QString::fromStdString(c.name) + ": state entry count " +
                                QString::number(actual_states) + " vs " +
                                QString::number(expected_states)));
        }
    }

    void state_dict_round_trip() {
        // Save after 10 steps, load into a fresh optimizer over copies of the parameters,
        // continue 10 steps: bit-identical to 20 uninterrupted steps.
        for (const auto& c : golden::load("optim")) {
            Problem full = problem_of(c);
            auto opt_full = make_optimizer(c, full.params);
            run_steps(*opt_full, full, 20);

            Problem first = problem_of(c);
            auto opt_first = make_optimizer(c, first.params);
            run_steps(*opt_first, first, 10);
            const OptimizerStateDict saved = opt_first->state_dict();
            run_steps(*opt_first, first, 3); // later steps must not change `saved`

            Problem second = problem_of(c);
            auto opt_second = make_optimizer(c, second.params);
            {
                autograd::NoGradGuard guard;
                Problem at10 = problem_of(c);
                auto opt_at10 = make_optimizer(c, at10.params);
                run_steps(*opt_at10, at10, 10);
                for (size_t i = 0; i < 3; ++i)
                    second.params[i].copy_(at10.params[i]);
            }
            opt_second->load_state_dict(saved);
            run_steps(*opt_second, second, 10);
            for (size_t i = 0; i < 3; ++i)
                QVERIFY2(equal(second.params[i], full.params[i]),
                         qPrintable(QString::fromStdString(c.name + ": param " + std::to_string(i) +
                                                           " differs after the round trip")));
        }
    }

    void state_dict_layout() {
        Tensor a = zeros({2, 3}).requires_grad_(), b = zeros({4}).requires_grad_(),
               c = zeros({1}).requires_grad_();
        Adam adam(std::vector<ParamGroup>{{{a, b}, {}}, {{c}, {{"lr", 1e-4}}}},
                  AdamOptions{.lr = 1e-3, .amsgrad = true});
        a.set_grad(ones({2, 3}));
        c.set_grad(ones({1}));
        adam.step();
        adam.step();
        const OptimizerStateDict sd = adam.state_dict();
        QCOMPARE(int(sd.param_groups.size()), 2);
        QCOMPARE(sd.param_groups[0].params, (std::vector<int64_t>{0, 1}));
        QCOMPARE(sd.param_groups[1].params, (std::vector<int64_t>{2}));
        QCOMPARE(sd.param_groups[0].options.at("lr"), 1e-3);
        QCOMPARE(sd.param_groups[1].options.at("lr"), 1e-4);
        QCOMPARE(sd.param_groups[1].options.at("beta2"), 0.999);
        QCOMPARE(sd.param_groups[1].options.at("amsgrad"), 1.0);
        // b had no gradient: no state, unchanged (PyTorch skips it)
        QCOMPARE(int(sd.state.size()), 2);
        QVERIFY(sd.state.count(0) && sd.state.count(2) && !sd.state.count(1));
        const ParamState& s0 = sd.state.at(0);
        QCOMPARE(int(s0.size()), 4);
        QCOMPARE(s0.at("step").dim(), 0);
        QCOMPARE(s0.at("step").item(), 2.0);
        QCOMPARE(s0.at("exp_avg").shape(), (Dims{2, 3}));
        QVERIFY(s0.count("exp_avg_sq") && s0.count("max_exp_avg_sq"));
        QVERIFY(equal(b, zeros({4})));
    }

    void zero_grad_and_groups() {
        Tensor a = ones({3}).requires_grad_(), b = ones({3}).requires_grad_();
        SGD sgd(std::vector<ParamGroup>{{{a}, {}}, {{b}, {{"lr", 0.01}}}}, SGDOptions{.lr = 0.1});
        a.set_grad(ones({3}));
        b.set_grad(ones({3}));
        const uint32_t version = a.version();
        sgd.step();
        QVERIFY(a.version() != version); // in-place update visible to autograd's checks
        QVERIFY(allclose(a, full({3}, 0.9)));
        QVERIFY(allclose(b, full({3}, 0.99)));
        sgd.zero_grad();
        QVERIFY(!a.grad().defined() && !b.grad().defined());
        sgd.step(); // no gradients: nothing changes
        QVERIFY(allclose(a, full({3}, 0.9)));
        // A scheduler-style lr change applies on the next step.
        sgd.param_groups()[0].options["lr"] = 1.0;
        a.set_grad(ones({3}));
        sgd.step();
        QVERIFY(allclose(a, full({3}, -0.1)));
        // add_param_group
        Tensor c = ones({2}).requires_grad_();
        sgd.add_param_group({{c}, {{"momentum", 0.9}}});
        QCOMPARE(sgd.param_groups()[2].options.at("lr"), 0.1);
        QCOMPARE(sgd.param_groups()[2].options.at("momentum"), 0.9);
        // Non-contiguous parameter
        Tensor base = zeros({3, 2});
        Tensor nc = base.t().contiguous().t();
        QVERIFY(!nc.is_contiguous());
        nc.requires_grad_();
        Adam adam(std::vector<Tensor>{nc});
        nc.set_grad(ones({3, 2}));
        adam.step();
        QVERIFY(allclose(nc, full({3, 2}, -1e-3), 1e-5, 1e-9));
    }

    void errors() {
        Tensor a = ones({3}).requires_grad_();
        QString msg = error_of<Error>([&] {
            SGD(std::vector<ParamGroup>{{{a}, {{"lrr", 1.0}}}}, SGDOptions{});
        });
        QVERIFY2(msg.contains("unknown option 'lrr'"), qPrintable(msg));
        msg = error_of<Error>([&] { SGD(std::vector<Tensor>{a}, SGDOptions{.lr = -1.0}); });
        QVERIFY2(msg.contains("Invalid learning rate"), qPrintable(msg));
        msg = error_of<Error>(
            [&] { SGD(std::vector<Tensor>{a}, SGDOptions{.lr = 0.1, .nesterov = true}); });
        QVERIFY2(msg.contains("Nesterov momentum requires a momentum and zero dampening"),
                 qPrintable(msg));
        msg = error_of<Error>([&] { Adam(std::vector<Tensor>{a}, AdamOptions{.beta1 = 1.0}); });
        QVERIFY2(msg.contains("Invalid beta1 parameter"), qPrintable(msg));
        msg = error_of<Error>([&] { Adam(std::vector<ParamGroup>{{{a}, {}}, {{a}, {}}}); });
        QVERIFY2(msg.contains("more than one parameter group"), qPrintable(msg));
        msg = error_of<DTypeError>([&] { Adam(std::vector<Tensor>{zeros({2}, DType::Int64)}); });
        QVERIFY2(msg.contains("floating point"), qPrintable(msg));
        Adam one(std::vector<Tensor>{a});
        Tensor b = ones({4}).requires_grad_();
        Adam other(std::vector<ParamGroup>{{{a}, {}}, {{b}, {}}});
        msg = error_of<Error>([&] { one.load_state_dict(other.state_dict()); });
        QVERIFY2(msg.contains("2 parameter groups, the optimizer has 1"), qPrintable(msg));
        Tensor c = ones({5}).requires_grad_();
        Adam shaped(std::vector<Tensor>{c});
        c.set_grad(ones({5}));
        shaped.step();
        msg = error_of<ShapeError>([&] { one.load_state_dict(shaped.state_dict()); });
        QVERIFY2(msg.contains("state 'exp_avg' of parameter 0 has shape [5], the parameter [3]"),
                 qPrintable(msg));
    }

    void clip_grad_norm_golden() {
        const auto cases = golden::load("clip");
        QVERIFY(cases.size() >= 5);
        for (const auto& c : cases) {
            Tensor p0 = zeros({3, 4}).requires_grad_(), p1 = zeros({5}).requires_grad_(),
                   p2 = zeros({2}).requires_grad_();
            p0.set_grad(c.tensors.at("g0").make());
            p1.set_grad(c.tensors.at("g1").make());
            const double total =
                clip_grad_norm_({p0, p1, p2}, c.num("max_norm", 1.0), c.num("norm_type", 2.0));
            QVERIFY2(golden::close(total, c.total, 1e-6),
                     qPrintable(QString::fromStdString(c.name) + ": total " +
                                QString::number(total, 'g', 10) + " vs " +
                                QString::number(c.total, 'g', 10)));
            QString err = golden::compare(p0.grad(), c.grads.at("g0"), 1e-6, 1e-7, c.name + " g0");
            QVERIFY2(err.isEmpty(), qPrintable(err));
            err = golden::compare(p1.grad(), c.grads.at("g1"), 1e-6, 1e-7, c.name + " g1");
            QVERIFY2(err.isEmpty(), qPrintable(err));
            QVERIFY(!p2.grad().defined());
        }
    }

    void clip_grad_misc() {
        Tensor p = zeros({3}).requires_grad_();
        QCOMPARE(clip_grad_norm_({p}, 1.0), 0.0); // no gradients
        p.set_grad(tensor({1.0, NAN, 2.0}));
        const QString msg = error_of<Error>([&] { clip_grad_norm_({p}, 1.0, 2.0, true); });
        QVERIFY2(msg.contains("non-finite"), qPrintable(msg));
        QVERIFY(std::isnan(clip_grad_norm_({p}, 1.0)));
        p.set_grad(tensor({-3.0, 0.5, 2.0}));
        clip_grad_value_({p}, 1.0);
        QCOMPARE(p.grad().to_vector<float>(), (std::vector<float>{-1.0f, 0.5f, 1.0f}));
        // float64 gradients
        Tensor q = zeros({2}, DType::Float64).requires_grad_();
        q.set_grad(tensor({3.0, 4.0}, DType::Float64));
        QCOMPARE(clip_grad_norm_({q}, 1.0), 5.0);
        QVERIFY(allclose(q.grad(), tensor({0.6, 0.8}, DType::Float64), 1e-6, 0));
    }
};

QTEST_GUILESS_MAIN(TestOptim)
#include "test_optim.moc"
