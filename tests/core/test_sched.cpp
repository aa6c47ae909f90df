// LR schedulers: 100-step lr (and OneCycle momentum) trajectories against PyTorch 1.13
// (tests/golden/optim.txt), lr_at closed forms against step(), state_dict round trips, errors.
#include "golden_optim_fixture.h"

#include <myelin/error.h>
#include <myelin/optim/optim.h>
#include <myelin/optim/scheduler.h>
#include <myelin/tensor.h>

#include <QtTest>

#include "test_support.h"

#include <cmath>
#include <limits>
#include <memory>

using namespace myelin;
using namespace myelin::optim;

namespace {

// Two groups with lr 0.1 and 0.01, as the generator.
std::unique_ptr<Optimizer> make_optimizer(const std::string& kind) {
    std::vector<ParamGroup> groups{{{zeros({2}).requires_grad_()}, {{"lr", 0.1}}},
                                   {{zeros({2}).requires_grad_()}, {{"lr", 0.01}}}};
    if (kind == "adam") return std::make_unique<Adam>(groups, AdamOptions{.lr = 0.1});
    return std::make_unique<SGD>(groups, SGDOptions{.lr = 0.1, .momentum = 0.9});
}

using Attrs = std::map<std::string, std::string>;

double num(const Attrs& a, const char* k, double fallback) {
    auto it = a.find(k);
    return it == a.end() ? fallback : golden::Case::parse_double(it->second);
}
int64_t inum(const Attrs& a, const char* k, int64_t fallback) {
    return static_cast<int64_t>(num(a, k, static_cast<double>(fallback)));
}
std::vector<int64_t> ilist(const Attrs& a, const char* k) {
    std::vector<int64_t> out;
    for (double v : golden::Case::parse_list(a.at(k)))
        out.push_back(static_cast<int64_t>(v));
    return out;
}

std::shared_ptr<LRScheduler> make_scheduler(Optimizer& opt, const std::string& type,
                                            const Attrs& a) {
    if (type == "steplr")
        return std::make_shared<StepLR>(opt, StepLROptions{.step_size = inum(a, "step_size", 1),
                                                           .gamma = num(a, "gamma", 0.1)});
    if (type == "multisteplr")
        return std::make_shared<MultiStepLR>(
            opt, MultiStepLROptions{.milestones = ilist(a, "milestones"),
                                    .gamma = num(a, "gamma", 0.1)});
    if (type == "exponential")
        return std::make_shared<ExponentialLR>(opt,
                                               ExponentialLROptions{.gamma = num(a, "gamma", 0.1)});
    if (type == "cosine")
        return std::make_shared<CosineAnnealingLR>(
            opt, CosineAnnealingLROptions{.T_max = inum(a, "T_max", 1),
                                          .eta_min = num(a, "eta_min", 0.0)});
    if (type == "warm_restarts")
        return std::make_shared<CosineAnnealingWarmRestarts>(
            opt, CosineAnnealingWarmRestartsOptions{.T_0 = inum(a, "T_0", 1),
                                                    .T_mult = inum(a, "T_mult", 1),
                                                    .eta_min = num(a, "eta_min", 0.0)});
    if (type == "linear")
        return std::make_shared<LinearLR>(
            opt, LinearLROptions{.start_factor = num(a, "start_factor", 1.0 / 3.0),
                                 .end_factor = num(a, "end_factor", 1.0),
                                 .total_iters = inum(a, "total_iters", 5)});
    if (type == "constant")
        return std::make_shared<ConstantLR>(
            opt, ConstantLROptions{.factor = num(a, "factor", 1.0 / 3.0),
                                   .total_iters = inum(a, "total_iters", 5)});
    if (type == "onecycle") {
        OneCycleOptions o;
        // One peak for all groups, or one per group.
        const std::vector<double> max_lr = golden::Case::parse_list(a.at("max_lr"));
        if (max_lr.size() == 1)
            o.max_lr = max_lr[0];
        else
            o.max_lr_per_group = max_lr;
        o.total_steps = inum(a, "total_steps", 0);
        o.epochs = inum(a, "epochs", 0);
        o.steps_per_epoch = inum(a, "steps_per_epoch", 0);
        o.pct_start = num(a, "pct_start", 0.3);
        if (a.count("anneal_strategy") && a.at("anneal_strategy") == "linear")
            o.anneal_strategy = AnnealStrategy::Linear;
        o.base_momentum = num(a, "base_momentum", 0.85);
        o.max_momentum = num(a, "max_momentum", 0.95);
        o.div_factor = num(a, "div_factor", 25.0);
        o.final_div_factor = num(a, "final_div_factor", 1e4);
        o.three_phase = num(a, "three_phase", 0.0) != 0.0;
        return std::make_shared<OneCycleLR>(opt, o);
    }
    throw std::runtime_error("unknown scheduler " + type);
}

std::shared_ptr<LRScheduler> make_case_scheduler(Optimizer& opt, const golden::Case& c) {
    const std::string type = c.attr("scheduler");
    if (type != "sequential") return make_scheduler(opt, type, c.attrs);
    std::vector<std::shared_ptr<LRScheduler>> subs;
    for (const auto& [t, a] : c.subs)
        subs.push_back(make_scheduler(opt, t, a));
    return std::make_shared<SequentialLR>(opt, subs, ilist(c.attrs, "milestones"));
}

QString check_lr(const golden::Case& c, const char* what, int step, int group, double actual,
                 double expected, double rtol) {
    if (golden::close(actual, expected, rtol, 1e-300)) return {};
    return QStringLiteral("%1 %2 step %3 group %4: %5, expected %6")
        .arg(QString::fromStdString(c.name), what)
        .arg(step)
        .arg(group)
        .arg(actual, 0, 'g', 17)
        .arg(expected, 0, 'g', 17);
}

} // namespace

class TestSched : public QObject {
    Q_OBJECT
  private slots:
    void golden_lr_trajectories() {
        const auto cases = golden::load("sched");
        QVERIFY2(cases.size() >= 19, "optim.txt holds too few scheduler cases");
        for (const auto& c : cases) {
            auto opt = make_optimizer(c.attr("optimizer"));
            auto sched = make_case_scheduler(*opt, c);
            const auto& lrs0 = c.lrs.at(0);
            for (size_t step = 0; step < lrs0.size(); ++step) {
                if (step > 0) {
                    opt->step();
                    sched->step();
                }
                for (int g = 0; g < 2; ++g) {
                    const double expected = c.lrs.at(g)[step];
                    QString err = check_lr(c, "step()", int(step), g, sched->get_last_lr()[g],
                                           expected, 1e-13);
                    QVERIFY2(err.isEmpty(), qPrintable(err));
                    err = check_lr(c, "group lr", int(step), g,
                                   opt->param_groups()[g].options.at("lr"), expected, 1e-13);
                    QVERIFY2(err.isEmpty(), qPrintable(err));
                    err = check_lr(c, "lr_at", int(step), g, sched->lr_at(int64_t(step), g),
                                   expected, 1e-12);
                    QVERIFY2(err.isEmpty(), qPrintable(err));
                    if (c.momentum.count(g)) {
                        const char* key = c.attr("optimizer") == "adam" ? "beta1" : "momentum";
                        const double m = opt->param_groups()[g].options.at(key);
                        err = check_lr(c, key, int(step), g, m, c.momentum.at(g)[step], 1e-13);
                        QVERIFY2(err.isEmpty(), qPrintable(err));
                        auto* one = dynamic_cast<OneCycleLR*>(sched.get());
                        QVERIFY(one);
                        err = check_lr(c, "momentum_at", int(step), g,
                                       one->momentum_at(int64_t(step), g), c.momentum.at(g)[step],
                                       1e-12);
                        QVERIFY2(err.isEmpty(), qPrintable(err));
                    }
                }
            }
        }
    }

    void golden_plateau() {
        const auto cases = golden::load("plateau");
        QCOMPARE(int(cases.size()), 4);
        for (const auto& c : cases) {
            auto opt = make_optimizer("sgd");
            ReduceLROnPlateauOptions o;
            if (c.has("mode") && c.attr("mode") == "max")
                o.mode = ReduceLROnPlateauOptions::Mode::Max;
            o.factor = c.num("factor", o.factor);
            o.patience = static_cast<int64_t>(c.num("patience", 10));
            o.threshold = c.num("threshold", o.threshold);
            if (c.has("threshold_mode") && c.attr("threshold_mode") == "abs")
                o.threshold_mode = ReduceLROnPlateauOptions::ThresholdMode::Abs;
            o.cooldown = static_cast<int64_t>(c.num("cooldown", 0));
            if (c.has("min_lr")) {
                const std::vector<double> min_lr = golden::Case::parse_list(c.attr("min_lr"));
                if (min_lr.size() == 1)
                    o.min_lr = min_lr[0];
                else
                    o.min_lr_per_group = min_lr;
            }
            o.eps = c.num("eps", o.eps);
            ReduceLROnPlateau sched(*opt, o);
            QCOMPARE(sched.get_last_lr()[0], 0.1);
            int reductions = 0;
            for (size_t i = 0; i < c.metrics.size(); ++i) {
                const double before = sched.get_last_lr()[0];
                sched.step(c.metrics[i]);
                reductions += sched.get_last_lr()[0] < before ? 1 : 0;
                for (int g = 0; g < 2; ++g) {
                    const QString err = check_lr(c, "plateau", int(i + 1), g,
                                                 sched.get_last_lr()[g], c.lrs.at(g)[i + 1], 1e-13);
                    QVERIFY2(err.isEmpty(), qPrintable(err));
                }
            }
            QVERIFY2(reductions > 0, qPrintable(QString::fromStdString(c.name)));
        }
    }

    void cosine_closed_form_matches_recursion() {
        // Including many periods past T_max, where the recursion keeps going.
        for (int64_t T : {1, 2, 3, 7, 10, 50, 97}) {
            for (double eta_min : {0.0, 1e-4, 0.03}) {
                auto opt = make_optimizer("sgd");
                CosineAnnealingLR sched(*opt, {.T_max = T, .eta_min = eta_min});
                for (int64_t step = 0; step <= 300; ++step) {
                    if (step > 0) sched.step();
                    for (int g = 0; g < 2; ++g) {
                        const double rec = sched.get_last_lr()[g];
                        const double closed = sched.lr_at(step, g);
                        QVERIFY2(golden::close(closed, rec, 1e-12, 1e-300),
                                 qPrintable(QStringLiteral("T_max %1 eta_min %2 step %3: closed %4 "
                                                           "recursive %5")
                                                .arg(T)
                                                .arg(eta_min)
                                                .arg(step)
                                                .arg(closed, 0, 'g', 17)
                                                .arg(rec, 0, 'g', 17)));
                    }
                }
            }
        }
    }

    void lr_at_is_side_effect_free() {
        auto opt = make_optimizer("sgd");
        StepLR sched(*opt, {.step_size = 3, .gamma = 0.5});
        QCOMPARE(sched.lr_at(7), 0.025);
        QCOMPARE(sched.lr_at(7, 1), 0.0025);
        QCOMPARE(sched.last_epoch(), int64_t(0));
        QCOMPARE(opt->param_groups()[0].options.at("lr"), 0.1);
        QVERIFY(error_of<Error>([&] {
                    sched.lr_at(1, 2);
                }).contains("parameter group 2 does not exist"));
        QVERIFY(error_of<Error>([&] { sched.lr_at(-1); }).contains("non-negative"));
    }

    void state_dict_round_trip() {
        // Step 37 times, save the optimizer and scheduler, restore both into fresh objects,
        // continue: identical lrs to an uninterrupted run.
        for (const auto& c : golden::load("sched")) {
            auto opt_a = make_optimizer(c.attr("optimizer"));
            auto sched_a = make_case_scheduler(*opt_a, c);
            for (int i = 0; i < 37; ++i)
                sched_a->step();
            const OptimizerStateDict opt_state = opt_a->state_dict();
            const SchedulerState sched_state = sched_a->state_dict();

            auto opt_b = make_optimizer(c.attr("optimizer"));
            auto sched_b = make_case_scheduler(*opt_b, c);
            opt_b->load_state_dict(opt_state);
            sched_b->load_state_dict(sched_state);
            QCOMPARE(sched_b->get_last_lr(), sched_a->get_last_lr());
            for (int i = 0; i < 40; ++i) {
                sched_a->step();
                sched_b->step();
                QVERIFY2(sched_a->get_last_lr() == sched_b->get_last_lr(),
                         qPrintable(QString::fromStdString(c.name) + " after resume step " +
                                    QString::number(i)));
            }
        }
        auto opt = make_optimizer("sgd");
        ReduceLROnPlateau plateau(*opt, {.patience = 1});
        for (double m : {1.0, 0.5, 0.6, 0.7})
            plateau.step(m);
        const SchedulerState s = plateau.state_dict();
        QCOMPARE(s.scalars.at("best"), 0.5);
        auto opt2 = make_optimizer("sgd");
        ReduceLROnPlateau plateau2(*opt2, {.patience = 1});
        plateau2.load_state_dict(s);
        QCOMPARE(plateau2.best(), 0.5);
        QCOMPARE(plateau2.last_epoch(), int64_t(4));
    }

    void errors() {
        auto opt = make_optimizer("sgd");
        auto a = std::make_shared<LinearLR>(*opt, LinearLROptions{});
        auto b = std::make_shared<ExponentialLR>(*opt, ExponentialLROptions{.gamma = 0.9});
        QString msg = error_of<Error>([&] { SequentialLR(*opt, {a, b}, {}); });
        QVERIFY2(
            msg.contains("number of schedulers 2 and the number of milestones to be equal to 0"),
            qPrintable(msg));
        auto other = make_optimizer("sgd");
        auto c = std::make_shared<ExponentialLR>(*other, ExponentialLROptions{.gamma = 0.9});
        msg = error_of<Error>([&] { SequentialLR(*opt, {a, c}, {5}); });
        QVERIFY2(msg.contains("same optimizer"), qPrintable(msg));
        OneCycleOptions o;
        o.max_lr = 0.1;
        o.total_steps = 3;
        OneCycleLR one(*opt, o);
        one.step();
        one.step();
        one.step();
        msg = error_of<Error>([&] { one.step(); });
        QVERIFY2(msg.contains("tried to step 4 times. The specified number of total steps is 3"),
                 qPrintable(msg));
        std::vector<ParamGroup> groups{{{zeros({1}).requires_grad_()}, {}}};
        Adagrad adagrad(groups);
        msg = error_of<Error>([&] { OneCycleLR(adagrad, o); });
        QVERIFY2(msg.contains("optimizer must support momentum"), qPrintable(msg));
        o.max_lr_per_group = {0.1, 0.2, 0.3}; // the optimizer has two groups
        msg = error_of<Error>([&] { OneCycleLR(*opt, o); });
        QVERIFY2(msg.contains("expected 2 values for max_lr_per_group, got 3"), qPrintable(msg));
        msg = error_of<Error>([&] { StepLR(*opt, {.step_size = 0}); });
        QVERIFY2(msg.contains("step_size must be positive"), qPrintable(msg));
        msg = error_of<Error>([&] { LinearLR(*opt, {.start_factor = 0.0}); });
        QVERIFY2(msg.contains("starting multiplicative factor"), qPrintable(msg));
    }

    // next_corner: where each closed form starts a new piece (what a plot must not step over).
    void cornersOfEachSchedule() {
        auto opt = make_optimizer("sgd");
        const auto corners = [](const LRScheduler& s, int64_t upto) {
            std::vector<int64_t> out;
            for (auto c = s.next_corner(-1); c && *c < upto; c = s.next_corner(*c))
                out.push_back(*c);
            return out;
        };
        using V = std::vector<int64_t>;
        QCOMPARE(corners(StepLR(*opt, {.step_size = 3}), 10), (V{3, 6, 9}));
        QCOMPARE(corners(MultiStepLR(*opt, {.milestones = {2, 5}}), 10), (V{2, 5}));
        QCOMPARE(corners(ExponentialLR(*opt, {.gamma = 0.9}), 10), V{});
        QCOMPARE(corners(CosineAnnealingWarmRestarts(*opt, {.T_0 = 2, .T_mult = 2}), 40),
                 (V{2, 6, 14, 30}));
        QCOMPARE(corners(LinearLR(*opt, {.total_iters = 4}), 10), V{4});
        // A warmup of 3 steps before StepLR(4): the milestone, then StepLR's drops from there.
        auto warmup = std::make_shared<LinearLR>(*opt, LinearLROptions{.total_iters = 3});
        auto steps = std::make_shared<StepLR>(*opt, StepLROptions{.step_size = 4});
        QCOMPARE(corners(SequentialLR(*opt, {warmup, steps}, {3}), 12), (V{3, 7, 11}));
        OneCycleOptions o;
        o.max_lr = 0.1;
        o.total_steps = 100;
        const OneCycleLR one(*opt, o);
        const V phases = corners(one, 100);
        QCOMPARE(phases.size(), size_t(1)); // two phases: the annealing starts after the peak
        const int64_t peak = phases[0] - 1;
        QCOMPARE(one.lr_at(peak), 0.1);
        QVERIFY(one.lr_at(peak - 1) < 0.1 && one.lr_at(peak + 1) < 0.1);
    }

    // lr_at far into a run (the Training page's preview asks at millions of steps): SGDR's
    // closed form, equal cycles and cycles that grow until they outlast any run.
    void warmRestartsAtLateSteps() {
        auto opt = make_optimizer("sgd");
        const double base = opt->param_groups()[0].options.at("lr");
        const auto sgdr = [&](int64_t t_cur, int64_t t_i) {
            return 0.001 + (base - 0.001) * (1 + std::cos(M_PI * double(t_cur) / double(t_i))) / 2;
        };
        CosineAnnealingWarmRestarts equal(*opt, {.T_0 = 7, .T_mult = 1, .eta_min = 0.001});
        for (int64_t step :
             {int64_t(0), int64_t(6), int64_t(7), int64_t(1000003), int64_t(1) << 40})
            QCOMPARE(equal.lr_at(step, 0), sgdr(step % 7, 7));
        CosineAnnealingWarmRestarts growing(*opt, {.T_0 = 3, .T_mult = 2, .eta_min = 0.001});
        QCOMPARE(growing.lr_at(3 + 6 + 12 + 5, 0), sgdr(5, 24)); // the fourth cycle
        // Past 2^62 the cycle length would overflow: the last cycle runs on.
        const double late = growing.lr_at(std::numeric_limits<int64_t>::max() - 1, 0);
        QVERIFY(std::isfinite(late) && late >= 0.001 && late <= base);
    }
};

QTEST_GUILESS_MAIN(TestSched)
#include "test_sched.moc"
