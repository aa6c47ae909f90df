// Factories of the training spec's components (their descriptions: spec/components.cpp).
#include <myelin/error.h>
#include <myelin/nn/loss.h>
#include <myelin/optim/optim.h>
#include <myelin/optim/scheduler.h>
#include <myelin/tensor.h>
#include <myelin/train/components.h>

#include <cmath>

namespace myelin::train {

using graph::Attrs;
using spec::checked_options;
using spec::find_component;
using spec::optimizer_kinds;
using spec::scheduler_kinds;

std::shared_ptr<nn::Loss> make_loss(const spec::Choice& c) {
    Attrs o = checked_options(spec::loss_kinds(), c, "loss");
    nn::Reduction red = nn::parse_reduction(o.get_string("reduction"));
    const std::string& k = c.kind;
    if (k == "CrossEntropyLoss") {
        nn::functional::CrossEntropyOptions options;
        options.ignore_index = o.get_int("ignore_index");
        options.label_smoothing = o.get_float("label_smoothing");
        options.reduction = red;
        return std::make_shared<nn::CrossEntropyLoss>(options);
    }
    if (k == "NLLLoss") {
        nn::functional::NllLossOptions options;
        options.ignore_index = o.get_int("ignore_index");
        options.reduction = red;
        return std::make_shared<nn::NLLLoss>(options);
    }
    if (k == "BCEWithLogitsLoss") {
        nn::functional::BCEWithLogitsOptions options;
        options.reduction = red;
        return std::make_shared<nn::BCEWithLogitsLoss>(options);
    }
    if (k == "BCELoss") return std::make_shared<nn::BCELoss>(Tensor(), red);
    if (k == "MSELoss") return std::make_shared<nn::MSELoss>(red);
    if (k == "L1Loss") return std::make_shared<nn::L1Loss>(red);
    if (k == "SmoothL1Loss") return std::make_shared<nn::SmoothL1Loss>(red, o.get_float("beta"));
    if (k == "HuberLoss") return std::make_shared<nn::HuberLoss>(red, o.get_float("delta"));
    return std::make_shared<nn::KLDivLoss>(red, o.get_bool("log_target"));
}

std::unique_ptr<optim::Optimizer> make_optimizer(const spec::Choice& c,
                                                 std::vector<optim::ParamGroup> groups) {
    Attrs o = checked_options(optimizer_kinds(), c, "optimizer");
    const std::string& k = c.kind;
    if (k == "Adam" || k == "AdamW") {
        optim::AdamOptions a;
        a.lr = o.get_float("lr");
        a.beta1 = o.get_float("beta1");
        a.beta2 = o.get_float("beta2");
        a.eps = o.get_float("eps");
        a.weight_decay = o.get_float("weight_decay");
        a.amsgrad = o.get_bool("amsgrad");
        a.maximize = o.get_bool("maximize");
        if (k == "AdamW") return std::make_unique<optim::AdamW>(std::move(groups), a);
        return std::make_unique<optim::Adam>(std::move(groups), a);
    }
    if (k == "SGD") {
        optim::SGDOptions s;
        s.lr = o.get_float("lr");
        s.momentum = o.get_float("momentum");
        s.dampening = o.get_float("dampening");
        s.weight_decay = o.get_float("weight_decay");
        s.nesterov = o.get_bool("nesterov");
        s.maximize = o.get_bool("maximize");
        return std::make_unique<optim::SGD>(std::move(groups), s);
    }
    if (k == "RMSprop") {
        optim::RMSpropOptions r;
        r.lr = o.get_float("lr");
        r.alpha = o.get_float("alpha");
        r.eps = o.get_float("eps");
        r.weight_decay = o.get_float("weight_decay");
        r.momentum = o.get_float("momentum");
        r.centered = o.get_bool("centered");
        r.maximize = o.get_bool("maximize");
        return std::make_unique<optim::RMSprop>(std::move(groups), r);
    }
    optim::AdagradOptions a;
    a.lr = o.get_float("lr");
    a.lr_decay = o.get_float("lr_decay");
    a.weight_decay = o.get_float("weight_decay");
    a.initial_accumulator_value = o.get_float("initial_accumulator_value");
    a.eps = o.get_float("eps");
    a.maximize = o.get_bool("maximize");
    return std::make_unique<optim::Adagrad>(std::move(groups), a);
}

namespace {

std::shared_ptr<optim::LRScheduler> make_lr_scheduler(const std::string& k, const Attrs& o,
                                                      optim::Optimizer& opt, int64_t steps) {
    using namespace optim;
    if (k == "StepLR")
        return std::make_shared<StepLR>(opt, o.get_int("step_size"), o.get_float("gamma"));
    if (k == "MultiStepLR")
        return std::make_shared<MultiStepLR>(opt, o.get_ints("milestones"), o.get_float("gamma"));
    if (k == "ExponentialLR") return std::make_shared<ExponentialLR>(opt, o.get_float("gamma"));
    if (k == "CosineAnnealingLR") {
        int64_t t_max = o.get_int("T_max") > 0 ? o.get_int("T_max") : std::max<int64_t>(steps, 1);
        return std::make_shared<CosineAnnealingLR>(opt, t_max, o.get_float("eta_min"));
    }
    if (k == "CosineAnnealingWarmRestarts")
        return std::make_shared<CosineAnnealingWarmRestarts>(
            opt, o.get_int("T_0"), o.get_int("T_mult"), o.get_float("eta_min"));
    if (k == "OneCycleLR") {
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
    }
    if (k == "LinearLR")
        return std::make_shared<LinearLR>(opt, o.get_float("start_factor"),
                                          o.get_float("end_factor"), o.get_int("total_iters"));
    return std::make_shared<ConstantLR>(opt, o.get_float("factor"), o.get_int("total_iters"));
}

} // namespace

Schedule::Schedule(const spec::Choice& c, optim::Optimizer& opt, int64_t steps) : kind_(c.kind) {
    Attrs o = checked_options(scheduler_kinds(), c, "scheduler");
    if (c.kind == "ReduceLROnPlateau") {
        optim::ReduceLROnPlateauOptions p;
        p.mode = o.get_string("mode") == "max" ? optim::ReduceLROnPlateauOptions::Mode::Max
                                               : optim::ReduceLROnPlateauOptions::Mode::Min;
        p.factor = o.get_float("factor");
        p.patience = o.get_int("patience");
        p.threshold = o.get_float("threshold");
        p.threshold_mode = o.get_string("threshold_mode") == "abs"
                               ? optim::ReduceLROnPlateauOptions::ThresholdMode::Abs
                               : optim::ReduceLROnPlateauOptions::ThresholdMode::Rel;
        p.cooldown = o.get_int("cooldown");
        p.min_lr = {o.get_float("min_lr")};
        p.eps = o.get_float("eps");
        plateau_ = std::make_unique<optim::ReduceLROnPlateau>(opt, p);
        return;
    }
    int64_t warmup = o.get_int("warmup");
    if (warmup <= 0) {
        scheduler_ = make_lr_scheduler(c.kind, o, opt, steps);
        return;
    }
    // PyTorch's recipe: LinearLR(start_factor, 1.0, warmup) then the schedule, via SequentialLR.
    auto ramp =
        std::make_shared<optim::LinearLR>(opt, o.get_float("warmup_start_factor"), 1.0, warmup);
    auto main = make_lr_scheduler(c.kind, o, opt, std::max<int64_t>(steps - warmup, 1));
    scheduler_ = std::make_shared<optim::SequentialLR>(
        opt, std::vector<std::shared_ptr<optim::LRScheduler>>{ramp, main},
        std::vector<int64_t>{warmup});
}

Schedule::~Schedule() = default;

void Schedule::step(std::optional<double> metric) {
    if (plateau_) {
        if (!metric) throw Error("ReduceLROnPlateau needs a metric value to step");
        plateau_->step(*metric);
    } else {
        scheduler_->step();
    }
}

std::optional<double> Schedule::lr_at(int64_t step) const {
    if (plateau_) return std::nullopt;
    return scheduler_->lr_at(step);
}

optim::SchedulerState Schedule::state_dict() const {
    return plateau_ ? plateau_->state_dict() : scheduler_->state_dict();
}

void Schedule::load_state_dict(const optim::SchedulerState& state) {
    if (plateau_)
        plateau_->load_state_dict(state);
    else
        scheduler_->load_state_dict(state);
}

std::unique_ptr<optim::Optimizer> make_preview_optimizer(const spec::Choice& optimizer) {
    // One scalar parameter stands in for the model: schedules only read group options.
    std::vector<optim::ParamGroup> groups(1);
    groups[0].params.push_back(zeros({1}).requires_grad_());
    return make_optimizer(optimizer, std::move(groups));
}

std::vector<double> preview_lr(const spec::Choice& optimizer, const spec::Choice& scheduler,
                               int64_t steps, int64_t stride) {
    auto opt = make_preview_optimizer(optimizer);
    Schedule schedule(scheduler, *opt, steps);
    std::vector<double> lrs;
    if (schedule.needs_metric()) return lrs;
    stride = std::max<int64_t>(stride, 1);
    lrs.reserve(size_t(std::max<int64_t>((steps + stride - 1) / stride, 0)));
    for (int64_t s = 0; s < steps; s += stride)
        lrs.push_back(*schedule.lr_at(s));
    return lrs;
}

bool schedules_per_step(const spec::TrainSpec& spec) {
    return spec.scheduler && spec.scheduler->kind != "ReduceLROnPlateau" &&
           spec.scheduler_interval == "step";
}

int64_t schedule_steps(const spec::TrainSpec& spec, int64_t steps_per_epoch) {
    return schedules_per_step(spec) ? steps_per_epoch * spec.epochs : spec.epochs;
}

} // namespace myelin::train
