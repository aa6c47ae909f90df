// Builds the training spec's components through their kinds' factories (spec/components.h).
#include <myelin/error.h>
#include <myelin/nn/loss.h>
#include <myelin/optim/optim.h>
#include <myelin/optim/scheduler.h>
#include <myelin/spec/option_fields.h>
#include <myelin/tensor.h>
#include <myelin/train/components.h>

#include <cmath>

namespace myelin::train {

using graph::Attrs;
using spec::checked_options;

std::shared_ptr<nn::Loss> make_loss(const spec::Choice& c, const spec::LossContext& context) {
    const spec::LossKind& kind = spec::kind_of(spec::loss_kinds(), c, "loss");
    return kind.build(checked_options(kind, c), context);
}

std::unique_ptr<optim::Optimizer> make_optimizer(const spec::Choice& c,
                                                 std::vector<optim::ParamGroup> groups) {
    const spec::OptimizerKind& kind = spec::kind_of(spec::optimizer_kinds(), c, "optimizer");
    return kind.build(checked_options(kind, c), std::move(groups));
}

Schedule::Schedule(const spec::Choice& c, optim::Optimizer& opt, int64_t steps) : kind_(c.kind) {
    const spec::SchedulerKind& kind = spec::kind_of(spec::scheduler_kinds(), c, "scheduler");
    Attrs o = checked_options(kind, c);
    if (kind.metric_driven()) {
        plateau_ = kind.build_metric_driven(o, opt);
        return;
    }
    const auto warmup = spec::read_options<optim::WarmupOptions>(o);
    if (warmup.warmup <= 0) {
        scheduler_ = kind.build(o, opt, steps);
        return;
    }
    // PyTorch's recipe: LinearLR(start_factor, 1.0, warmup) then the schedule, via SequentialLR.
    auto ramp = std::make_shared<optim::LinearLR>(
        opt, optim::LinearLROptions{.start_factor = warmup.warmup_start_factor,
                                    .end_factor = 1.0,
                                    .total_iters = warmup.warmup});
    auto main = kind.build(o, opt, std::max<int64_t>(steps - warmup.warmup, 1));
    scheduler_ = std::make_shared<optim::SequentialLR>(
        opt, std::vector<std::shared_ptr<optim::LRScheduler>>{ramp, main},
        std::vector<int64_t>{warmup.warmup});
}

Schedule::~Schedule() = default;

void Schedule::step(std::optional<double> metric) {
    if (plateau_) {
        if (!metric) throw Error(kind_ + " needs a metric value to step");
        plateau_->step(*metric);
    } else {
        scheduler_->step();
    }
}

std::optional<double> Schedule::lr_at(int64_t step) const {
    if (plateau_) return std::nullopt;
    return scheduler_->lr_at(step);
}

std::optional<int64_t> Schedule::next_corner(int64_t after) const {
    return plateau_ ? std::nullopt : scheduler_->next_corner(after);
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
    return spec.scheduler && !spec::schedule_is_metric_driven(spec.scheduler->kind) &&
           spec.scheduler_interval == spec::ScheduleInterval::Step;
}

int64_t schedule_steps(const spec::TrainSpec& spec, int64_t steps_per_epoch) {
    return schedules_per_step(spec) ? steps_per_epoch * spec.epochs : spec.epochs;
}

} // namespace myelin::train
