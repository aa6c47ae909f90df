// The built-in LR schedules: options with PyTorch's defaults, and their factories.
#include "builtin_kinds.h"

#include <myelin/optim/scheduler.h>
#include <myelin/spec/option_fields.h>

#include <algorithm>

namespace myelin::spec::builtin {

using graph::AttrDesc;
using graph::Attrs;

std::vector<AttrDesc> warmup_options() {
    return described<optim::WarmupOptions>();
}

namespace {

// A step-driven kind whose options are its schedule's typed options `O`, with `finish` filling in
// what follows from the training's steps.
template <class Scheduler, class O, class Finish>
SchedulerKind schedule(std::string name, std::string doc, Finish finish) {
    return kind<SchedulerKind>(std::move(name), std::move(doc), described<O>(),
                               [finish](const Attrs& o, optim::Optimizer& opt, int64_t steps) {
                                   O options = read_options<O>(o);
                                   finish(options, steps);
                                   return std::make_shared<Scheduler>(opt, options);
                               });
}
template <class Scheduler, class O> SchedulerKind schedule(std::string name, std::string doc) {
    return schedule<Scheduler, O>(std::move(name), std::move(doc), [](O&, int64_t) {});
}

} // namespace

// Each schedule's options are its typed options' fields (optim/scheduler_options.cpp).
std::vector<SchedulerKind> schedulers() {
    using namespace optim;
    std::vector<SchedulerKind> kinds;
    kinds.push_back(schedule<StepLR, StepLROptions>(
        "StepLR", "Multiplies the lr by gamma every step_size steps."));
    kinds.push_back(schedule<MultiStepLR, MultiStepLROptions>(
        "MultiStepLR", "Multiplies the lr by gamma at each milestone."));
    kinds.push_back(schedule<ExponentialLR, ExponentialLROptions>(
        "ExponentialLR", "Multiplies the lr by gamma every step."));
    kinds.push_back(schedule<CosineAnnealingLR, CosineAnnealingLROptions>(
        "CosineAnnealingLR", "Cosine from lr down to eta_min over T_max steps.",
        [](CosineAnnealingLROptions& o, int64_t steps) {
            if (o.T_max <= 0) o.T_max = std::max<int64_t>(steps, 1);
        }));
    kinds.push_back(schedule<CosineAnnealingWarmRestarts, CosineAnnealingWarmRestartsOptions>(
        "CosineAnnealingWarmRestarts", "Cosine annealing restarting every T_0 (x T_mult) steps."));
    kinds.push_back(schedule<OneCycleLR, OneCycleOptions>(
        "OneCycleLR", "Warms up to max_lr then anneals far below the start (1cycle policy).",
        [](OneCycleOptions& o, int64_t steps) { o.total_steps = std::max<int64_t>(steps, 2); }));
    kinds.back().sets_lr_itself = true;
    kinds.push_back(schedule<LinearLR, LinearLROptions>(
        "LinearLR", "Changes the lr factor linearly over total_iters steps."));
    kinds.push_back(schedule<ConstantLR, ConstantLROptions>(
        "ConstantLR", "Scales the lr by factor for the first total_iters steps."));

    SchedulerKind plateau;
    plateau.name = "ReduceLROnPlateau";
    plateau.doc = "Lowers the lr when the validation metric stops improving.";
    plateau.options = described<ReduceLROnPlateauOptions>();
    plateau.build_metric_driven = [](const Attrs& o, Optimizer& opt) {
        return std::make_unique<ReduceLROnPlateau>(opt, read_options<ReduceLROnPlateauOptions>(o));
    };
    kinds.push_back(std::move(plateau));
    return kinds;
}

} // namespace myelin::spec::builtin
