#include "parameter_groups.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string_view>

namespace myelin::train::detail {

ParameterLayout parameter_layout(const graph::ModelSpec& spec, const graph::GraphModule& model) {
    std::map<double, size_t> group_of;
    ParameterLayout layout;
    for (const auto& node : spec.nodes) {
        const std::string& name = model.module_name(node.id);
        if (name.empty() || node.frozen) continue;
        const auto child = model.child(name);
        if (!child) continue;
        const auto params = child->named_parameters();
        if (params.empty()) continue;
        auto [it, fresh] = group_of.emplace(node.lr_multiplier, layout.names.size());
        if (fresh) {
            layout.names.emplace_back();
            layout.multipliers.push_back(node.lr_multiplier);
        }
        for (const auto& [param, tensor] : params)
            layout.names[it->second].push_back(name + "." + param);
    }
    return layout;
}

std::vector<optim::ParamGroup> parameter_groups(const ParameterLayout& layout,
                                                const graph::GraphModule& model) {
    std::map<std::string, Tensor> by_name;
    for (auto& [name, tensor] : model.named_parameters())
        by_name.emplace(name, tensor);
    std::vector<optim::ParamGroup> groups(layout.names.size());
    for (size_t g = 0; g < groups.size(); ++g)
        for (const auto& name : layout.names[g])
            groups[g].params.push_back(by_name.at(name));
    return groups;
}

optim::OptimizerStateDict remap_optimizer_state(const optim::OptimizerStateDict& saved,
                                                const std::vector<std::vector<std::string>>& before,
                                                const std::vector<std::vector<std::string>>& after,
                                                const std::vector<optim::ParamGroup>& current,
                                                size_t& kept) {
    std::map<std::string, std::pair<int64_t, size_t>> old; // name -> (global index, group)
    int64_t index = 0;
    for (size_t g = 0; g < before.size(); ++g)
        for (const auto& name : before[g])
            old[name] = {index++, g};
    optim::OptimizerStateDict out;
    index = 0;
    kept = 0;
    for (size_t g = 0; g < after.size(); ++g) {
        optim::OptimizerStateDict::Group group;
        group.options = g < current.size() ? current[g].options : optim::Options{};
        bool optionsTaken = false;
        for (const auto& name : after[g]) {
            if (auto it = old.find(name); it != old.end()) {
                const auto [i, oldGroup] = it->second;
                if (!optionsTaken && oldGroup < saved.param_groups.size()) {
                    group.options = saved.param_groups[oldGroup].options;
                    optionsTaken = true;
                }
                if (auto st = saved.state.find(i); st != saved.state.end()) {
                    out.state[index] = st->second;
                    ++kept;
                }
            }
            group.params.push_back(index++);
        }
        out.param_groups.push_back(std::move(group));
    }
    return out;
}

void scale_schedule_lrs(optim::SchedulerState& state, const std::vector<double>& factor) {
    for (const char* key : {"base_lrs", "_last_lr"})
        if (auto it = state.lists.find(key); it != state.lists.end())
            for (size_t g = 0; g < it->second.size() && g < factor.size(); ++g)
                it->second[g] *= factor[g];
    for (auto& child : state.children)
        scale_schedule_lrs(child, factor);
}

void regroup_schedule_state(optim::SchedulerState& state, const std::vector<double>& before,
                            const std::vector<double>& after) {
    // The per-group lists of our schedules (scheduler.cpp); ReduceLROnPlateau's min_lrs are one
    // option given to every group.
    for (const char* key : {"base_lrs", "_last_lr", "min_lrs"}) {
        auto it = state.lists.find(key);
        if (it == state.lists.end() || it->second.size() != before.size() || before.empty())
            continue;
        const double first = it->second.front();
        it->second.assign(after.size(), first);
        if (std::string_view(key) != "min_lrs")
            for (size_t g = 0; g < after.size(); ++g)
                it->second[g] = first / before.front() * after[g];
    }
    for (auto& child : state.children)
        regroup_schedule_state(child, before, after);
}

std::string format_number(double v) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.17g", v);
    for (int precision = 1; precision < 17; ++precision) { // the shortest text that reads back
        char shorter[32];
        std::snprintf(shorter, sizeof shorter, "%.*g", precision, v);
        if (std::strtod(shorter, nullptr) == v) return shorter;
    }
    return buffer;
}

} // namespace myelin::train::detail
