// The built-in LR schedules: options with PyTorch's defaults, and their factories.
#include "builtin_kinds.h"

#include <myelin/optim/scheduler.h>

#include <algorithm>

namespace myelin::spec::builtin {

using graph::AttrDesc;
using graph::Attrs;
using namespace graph::attr;

std::vector<AttrDesc> warmup_options() {
    return {integer("warmup", 0, "Warm up linearly for this many scheduler steps first (0: none).",
                    0.0),
            exclusive(number("warmup_start_factor", 0.1, "Warmup starts at lr times this factor.",
                             0.0, 1.0))};
}

namespace {

AttrDesc gamma(double def) {
    return number("gamma", def, "Decay factor.", 0.0);
}

} // namespace

std::vector<SchedulerKind> schedulers() {
    using namespace optim;
    std::vector<SchedulerKind> kinds;
    kinds.push_back(kind<SchedulerKind>(
        "StepLR", "Multiplies the lr by gamma every step_size steps.",
        {integer("step_size", 10, "Steps between decays.", 1), gamma(0.1)},
        [](const Attrs& o, Optimizer& opt, int64_t) {
            return std::make_shared<StepLR>(opt, o.get_int("step_size"), o.get_float("gamma"));
        }));
    kinds.push_back(kind<SchedulerKind>(
        "MultiStepLR", "Multiplies the lr by gamma at each milestone.",
        {int_list("milestones", {30, 80}, "Steps at which to decay.", 1, 32, 0.0), gamma(0.1)},
        [](const Attrs& o, Optimizer& opt, int64_t) {
            return std::make_shared<MultiStepLR>(opt, o.get_ints("milestones"),
                                                 o.get_float("gamma"));
        }));
    kinds.push_back(kind<SchedulerKind>("ExponentialLR", "Multiplies the lr by gamma every step.",
                                        {gamma(0.95)}, [](const Attrs& o, Optimizer& opt, int64_t) {
                                            return std::make_shared<ExponentialLR>(
                                                opt, o.get_float("gamma"));
                                        }));
    kinds.push_back(kind<SchedulerKind>(
        "CosineAnnealingLR", "Cosine from lr down to eta_min over T_max steps.",
        {integer("T_max", 0, "Steps of the half cosine (0: the whole training).", 0.0),
         number("eta_min", 0.0, "Final learning rate.", 0.0)},
        [](const Attrs& o, Optimizer& opt, int64_t steps) {
            int64_t t_max =
                o.get_int("T_max") > 0 ? o.get_int("T_max") : std::max<int64_t>(steps, 1);
            return std::make_shared<CosineAnnealingLR>(opt, t_max, o.get_float("eta_min"));
        }));
    kinds.push_back(kind<SchedulerKind>(
        "CosineAnnealingWarmRestarts", "Cosine annealing restarting every T_0 (x T_mult) steps.",
        {integer("T_0", 10, "Steps until the first restart.", 1),
         integer("T_mult", 1, "Factor growing the period after each restart.", 1),
         number("eta_min", 0.0, "Lowest learning rate.", 0.0)},
        [](const Attrs& o, Optimizer& opt, int64_t) {
            return std::make_shared<CosineAnnealingWarmRestarts>(
                opt, o.get_int("T_0"), o.get_int("T_mult"), o.get_float("eta_min"));
        }));
    kinds.push_back(kind<SchedulerKind>(
        "OneCycleLR", "Warms up to max_lr then anneals far below the start (1cycle policy).",
        {exclusive(number("max_lr", 1e-2, "Peak learning rate.", 0.0)),
         number("pct_start", 0.3, "Fraction of the cycle spent increasing.", 0.0, 1.0),
         choice("anneal_strategy", "cos", {"cos", "linear"}, "Annealing shape."),
         flag("cycle_momentum", true, "Cycle momentum (or Adam's beta1) inversely."),
         number("base_momentum", 0.85, "Lowest momentum.", 0.0),
         number("max_momentum", 0.95, "Highest momentum.", 0.0),
         exclusive(number("div_factor", 25.0, "Initial lr = max_lr / div_factor.", 0.0)),
         exclusive(
             number("final_div_factor", 1e4, "Final lr = initial lr / final_div_factor.", 0.0)),
         flag("three_phase", false, "Use a third phase to anneal further.")},
        [](const Attrs& o, Optimizer& opt, int64_t steps) {
            OneCycleOptions c;
            c.max_lr = {o.get_float("max_lr")};
            c.total_steps = std::max<int64_t>(steps, 2);
            c.pct_start = o.get_float("pct_start");
            c.anneal_strategy = o.get_string("anneal_strategy") == "linear" ? AnnealStrategy::Linear
                                                                            : AnnealStrategy::Cos;
            c.cycle_momentum = o.get_bool("cycle_momentum");
            c.base_momentum = o.get_float("base_momentum");
            c.max_momentum = o.get_float("max_momentum");
            c.div_factor = o.get_float("div_factor");
            c.final_div_factor = o.get_float("final_div_factor");
            c.three_phase = o.get_bool("three_phase");
            return std::make_shared<OneCycleLR>(opt, c);
        }));
    kinds.back().sets_lr_itself = true;
    kinds.push_back(kind<SchedulerKind>(
        "LinearLR", "Changes the lr factor linearly over total_iters steps.",
        {exclusive(number("start_factor", 1.0 / 3.0, "Factor at the start.", 0.0, 1.0)),
         number("end_factor", 1.0, "Factor at the end.", 0.0, 1.0),
         integer("total_iters", 5, "Steps of the ramp.", 0.0)},
        [](const Attrs& o, Optimizer& opt, int64_t) {
            return std::make_shared<LinearLR>(opt, o.get_float("start_factor"),
                                              o.get_float("end_factor"), o.get_int("total_iters"));
        }));
    kinds.push_back(kind<SchedulerKind>(
        "ConstantLR", "Scales the lr by factor for the first total_iters steps.",
        {number("factor", 1.0 / 3.0, "Factor applied at first.", 0.0, 1.0),
         integer("total_iters", 5, "Steps at the lowered lr.", 0.0)},
        [](const Attrs& o, Optimizer& opt, int64_t) {
            return std::make_shared<ConstantLR>(opt, o.get_float("factor"),
                                                o.get_int("total_iters"));
        }));

    SchedulerKind plateau;
    plateau.name = "ReduceLROnPlateau";
    plateau.doc = "Lowers the lr when the validation metric stops improving.";
    plateau.options = {
        choice("mode", "min", {"min", "max"}, "Whether lower or higher is better."),
        exclusive(number("factor", 0.1, "Multiplier of the lr at each reduction.", 0.0, 1.0)),
        integer("patience", 10, "Epochs without improvement before reducing.", 0.0),
        number("threshold", 1e-4, "Minimal change counted as improvement.", 0.0),
        choice("threshold_mode", "rel", {"rel", "abs"}, "Relative or absolute threshold."),
        integer("cooldown", 0, "Epochs to wait after a reduction.", 0.0),
        number("min_lr", 0.0, "Lowest learning rate.", 0.0),
        number("eps", 1e-8, "Smaller changes of the lr are ignored.", 0.0)};
    plateau.build_metric_driven = [](const Attrs& o, Optimizer& opt) {
        ReduceLROnPlateauOptions p;
        p.mode = o.get_string("mode") == "max" ? ReduceLROnPlateauOptions::Mode::Max
                                               : ReduceLROnPlateauOptions::Mode::Min;
        p.factor = o.get_float("factor");
        p.patience = o.get_int("patience");
        p.threshold = o.get_float("threshold");
        p.threshold_mode = o.get_string("threshold_mode") == "abs"
                               ? ReduceLROnPlateauOptions::ThresholdMode::Abs
                               : ReduceLROnPlateauOptions::ThresholdMode::Rel;
        p.cooldown = o.get_int("cooldown");
        p.min_lr = {o.get_float("min_lr")};
        p.eps = o.get_float("eps");
        return std::make_unique<ReduceLROnPlateau>(opt, p);
    };
    kinds.push_back(std::move(plateau));
    return kinds;
}

} // namespace myelin::spec::builtin
