// The schedules' options, each described once (optim/option_field.h): the schedule kinds'
// AttrDescs (spec/builtin_schedules.cpp) and the typed options a project builds follow from these
// tables. Names are PyTorch's; defaults are the members' initializers (scheduler.h).
#include <myelin/optim/scheduler.h>

#include <limits>

namespace myelin::optim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr const char* kGammaDoc = "Decay factor.";

// In each enum's order.
constexpr std::array<const char*, 2> kAnnealStrategyNames{"cos", "linear"};
constexpr std::array<const char*, 2> kModeNames{"min", "max"};
constexpr std::array<const char*, 2> kThresholdModeNames{"rel", "abs"};

} // namespace

const std::array<OptionField<StepLROptions>, 2> StepLROptions::fields{{
    {"step_size", &StepLROptions::step_size, "Steps between decays.", 1},
    {"gamma", &StepLROptions::gamma, kGammaDoc, 0.0},
}};

const std::array<OptionField<MultiStepLROptions>, 2> MultiStepLROptions::fields{{
    {"milestones", &MultiStepLROptions::milestones, "Steps at which to decay.", 0.0, kInf, false, 1,
     32},
    {"gamma", &MultiStepLROptions::gamma, kGammaDoc, 0.0},
}};

const std::array<OptionField<ExponentialLROptions>, 1> ExponentialLROptions::fields{{
    {"gamma", &ExponentialLROptions::gamma, kGammaDoc, 0.0},
}};

const std::array<OptionField<CosineAnnealingLROptions>, 2> CosineAnnealingLROptions::fields{{
    {"T_max", &CosineAnnealingLROptions::T_max, "Steps of the half cosine (0: the whole training).",
     0.0},
    {"eta_min", &CosineAnnealingLROptions::eta_min, "Final learning rate.", 0.0},
}};

const std::array<OptionField<CosineAnnealingWarmRestartsOptions>, 3>
    CosineAnnealingWarmRestartsOptions::fields{{
        {"T_0", &CosineAnnealingWarmRestartsOptions::T_0, "Steps until the first restart.", 1},
        {"T_mult", &CosineAnnealingWarmRestartsOptions::T_mult,
         "Factor growing the period after each restart.", 1},
        {"eta_min", &CosineAnnealingWarmRestartsOptions::eta_min, "Lowest learning rate.", 0.0},
    }};

const std::array<OptionField<OneCycleOptions>, 9> OneCycleOptions::fields{{
    {"max_lr", &OneCycleOptions::max_lr, "Peak learning rate.", 0.0, kInf, true},
    {"pct_start", &OneCycleOptions::pct_start, "Fraction of the cycle spent increasing.", 0.0, 1.0},
    {"anneal_strategy", enum_member<&OneCycleOptions::anneal_strategy>(kAnnealStrategyNames),
     "Annealing shape."},
    {"cycle_momentum", &OneCycleOptions::cycle_momentum,
     "Cycle momentum (or Adam's beta1) inversely."},
    {"base_momentum", &OneCycleOptions::base_momentum, "Lowest momentum.", 0.0},
    {"max_momentum", &OneCycleOptions::max_momentum, "Highest momentum.", 0.0},
    {"div_factor", &OneCycleOptions::div_factor, "Initial lr = max_lr / div_factor.", 0.0, kInf,
     true},
    {"final_div_factor", &OneCycleOptions::final_div_factor,
     "Final lr = initial lr / final_div_factor.", 0.0, kInf, true},
    {"three_phase", &OneCycleOptions::three_phase, "Use a third phase to anneal further."},
}};

const std::array<OptionField<LinearLROptions>, 3> LinearLROptions::fields{{
    {"start_factor", &LinearLROptions::start_factor, "Factor at the start.", 0.0, 1.0, true},
    {"end_factor", &LinearLROptions::end_factor, "Factor at the end.", 0.0, 1.0},
    {"total_iters", &LinearLROptions::total_iters, "Steps of the ramp.", 0.0},
}};

const std::array<OptionField<ConstantLROptions>, 2> ConstantLROptions::fields{{
    {"factor", &ConstantLROptions::factor, "Factor applied at first.", 0.0, 1.0},
    {"total_iters", &ConstantLROptions::total_iters, "Steps at the lowered lr.", 0.0},
}};

const std::array<OptionField<WarmupOptions>, 2> WarmupOptions::fields{{
    {"warmup", &WarmupOptions::warmup,
     "Warm up linearly for this many scheduler steps first (0: none).", 0.0},
    {"warmup_start_factor", &WarmupOptions::warmup_start_factor,
     "Warmup starts at lr times this factor.", 0.0, 1.0, true},
}};

const std::array<OptionField<ReduceLROnPlateauOptions>, 8> ReduceLROnPlateauOptions::fields{{
    {"mode", enum_member<&ReduceLROnPlateauOptions::mode>(kModeNames),
     "Whether lower or higher is better."},
    {"factor", &ReduceLROnPlateauOptions::factor, "Multiplier of the lr at each reduction.", 0.0,
     1.0, true},
    {"patience", &ReduceLROnPlateauOptions::patience, "Epochs without improvement before reducing.",
     0.0},
    {"threshold", &ReduceLROnPlateauOptions::threshold, "Minimal change counted as improvement.",
     0.0},
    {"threshold_mode", enum_member<&ReduceLROnPlateauOptions::threshold_mode>(kThresholdModeNames),
     "Relative or absolute threshold."},
    {"cooldown", &ReduceLROnPlateauOptions::cooldown, "Epochs to wait after a reduction.", 0.0},
    {"min_lr", &ReduceLROnPlateauOptions::min_lr, "Lowest learning rate.", 0.0},
    {"eps", &ReduceLROnPlateauOptions::eps, "Smaller changes of the lr are ignored.", 0.0},
}};

} // namespace myelin::optim
