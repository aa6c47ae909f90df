#pragma once
// The optimizer's parameter groups as the Trainer lays them out (one group per distinct lr
// multiplier, in node order; frozen layers and layers without parameters left out, as
// filter(lambda p: p.requires_grad, ...) in PyTorch), and what moves optimizer and schedule state
// from one layout to another: a fork that freezes, unfreezes or changes lr multipliers, and a
// paused run changed the same way. Internal to core/train.
#include <myelin/graph/build.h>
#include <myelin/graph/model_spec.h>
#include <myelin/optim/optimizer.h>
#include <myelin/optim/scheduler.h>

#include <string>
#include <vector>

namespace myelin::train::detail {

struct ParameterLayout {
    std::vector<std::vector<std::string>> names; // per group: "module.parameter"
    std::vector<double> multipliers;             // per group
    bool operator==(const ParameterLayout& other) const = default;
};

ParameterLayout parameter_layout(const graph::ModelSpec& spec, const graph::GraphModule& model);

// The layout's groups with `model`'s tensors (options left to the optimizer's defaults).
std::vector<optim::ParamGroup> parameter_groups(const ParameterLayout& layout,
                                                const graph::GraphModule& model);

// `saved` (laid out as `before`) moved to the layout `after` by parameter name: a parameter
// trained before and after keeps its state and its group's options; one trained only now (a
// layer unfrozen) starts fresh in its group's current options (`current`). Sets `kept` to the
// number of parameters whose state carried over.
optim::OptimizerStateDict remap_optimizer_state(const optim::OptimizerStateDict& saved,
                                                const std::vector<std::vector<std::string>>& before,
                                                const std::vector<std::vector<std::string>>& after,
                                                const std::vector<optim::ParamGroup>& current,
                                                size_t& kept);

// Multiplies a schedule state's learning rates of group g by factor[g] (SequentialLR's children
// too), so a chainable schedule goes on from the scaled lr.
void scale_schedule_lrs(optim::SchedulerState& state, const std::vector<double>& factor);

// A schedule state laid out for groups with lr multipliers `before` moved to groups with
// `after`: each per-group learning-rate list (base_lrs, _last_lr) becomes the first group's value
// per unit multiplier times the new group's; other per-group lists take the first group's value.
void regroup_schedule_state(optim::SchedulerState& state, const std::vector<double>& before,
                            const std::vector<double>& after);

// The shortest text that reads back as `v` ("0.001", not "0.0010000000000000002").
std::string format_number(double v);

} // namespace myelin::train::detail
