// Optimizer base: groups, state, zero_grad, state_dict.
#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/optim/optimizer.h>

#include <set>
#include <string>
#include <utility>

namespace myelin::optim {

Optimizer::Optimizer(std::vector<ParamGroup> groups, Options defaults)
    : defaults_(std::move(defaults)) {
    for (auto& g : groups) {
        for (const auto& [key, value] : g.options) {
            (void)value;
            if (!defaults_.count(key))
                throw Error("optimizer: unknown option '" + key + "' in a parameter group");
        }
        groups_.push_back(std::move(g));
    }
}

void Optimizer::finish_construction() {
    std::vector<ParamGroup> groups = std::move(groups_);
    groups_.clear();
    for (auto& g : groups)
        add_param_group(std::move(g));
}

void Optimizer::add_param_group(ParamGroup group) {
    if (group.params.empty())
        throw Error(std::string(name()) + ": a parameter group has no parameters");
    std::set<const void*> seen;
    for (const auto& g : groups_)
        for (const auto& p : g.params)
            seen.insert(p.impl());
    for (const auto& p : group.params) {
        if (!p.defined()) throw Error(std::string(name()) + ": a parameter is undefined");
        if (!p.is_floating_point())
            throw DTypeError(std::string(name()) +
                             ": can only optimize floating point tensors, got " +
                             dtype_name(p.dtype()));
        if (!seen.insert(p.impl()).second)
            throw Error(std::string(name()) +
                        ": some parameters appear in more than one parameter group");
    }
    for (const auto& [key, value] : defaults_)
        group.options.emplace(key, value);
    check_options(group.options);
    std::vector<ParamState> states(group.params.size());
    for (size_t i = 0; i < group.params.size(); ++i)
        init_state(group, group.params[i], states[i]);
    groups_.push_back(std::move(group));
    state_.push_back(std::move(states));
}

double Optimizer::get(const Options& options, const char* key) {
    auto it = options.find(key);
    if (it == options.end()) throw Error(std::string("optimizer: missing option '") + key + "'");
    return it->second;
}

void Optimizer::step() {
    autograd::NoGradGuard guard;
    stats_.clear();
    stats_table_ = Tensor();
    stats_rows_used_ = 0;
    pending_stats_.clear();
    for (size_t g = 0; g < groups_.size(); ++g)
        step_group(groups_[g], state_[g]);
    publish_stats();
}

Tensor Optimizer::stats_row(const Tensor& param) {
    if (!collect_stats_) return Tensor();
    const TensorOptions doubles = TensorOptions(DType::Float64).with_device(param.device());
    if (!stats_table_.defined()) {
        size_t rows = 0;
        for (const auto& g : groups_)
            rows += g.params.size();
        stats_table_ = empty({int64_t(rows), 5}, doubles);
    }
    if (param.device() == stats_table_.device() && stats_rows_used_ < stats_table_.size(0)) {
        pending_stats_.push_back({param.impl(), param.numel(), stats_rows_used_, Tensor()});
        return stats_table_[stats_rows_used_++];
    }
    Tensor own = empty({5}, doubles);
    pending_stats_.push_back({param.impl(), param.numel(), -1, own});
    return own;
}

void Optimizer::publish_stats() {
    if (pending_stats_.empty()) return;
    // One read of the table: the step's one wait for the device (a stray row adds its own).
    const Tensor table = stats_rows_used_
                             ? stats_table_.narrow(0, 0, stats_rows_used_).to(kCPU).contiguous()
                             : Tensor();
    for (const StatsRow& r : pending_stats_) {
        const Tensor own = r.table_row < 0 ? r.own_row.to(kCPU).contiguous() : Tensor();
        const double* d =
            r.table_row < 0 ? own.data<double>() : table.data<double>() + 5 * r.table_row;
        stats_[r.param] = StepStats{d[0], d[1], d[2], d[3], d[4], r.count};
    }
    pending_stats_.clear();
}

const StepStats* Optimizer::step_stats(const Tensor& param) const {
    auto it = stats_.find(param.impl());
    return it == stats_.end() ? nullptr : &it->second;
}

void Optimizer::zero_grad() {
    for (auto& g : groups_)
        for (auto& p : g.params)
            if (p.grad().defined()) p.set_grad(Tensor());
}

OptimizerStateDict Optimizer::state_dict() const {
    OptimizerStateDict dict;
    int64_t index = 0;
    for (size_t g = 0; g < groups_.size(); ++g) {
        OptimizerStateDict::Group group;
        group.options = groups_[g].options;
        for (size_t i = 0; i < groups_[g].params.size(); ++i, ++index) {
            group.params.push_back(index);
            const ParamState& s = state_[g][i];
            if (s.empty()) continue;
            ParamState copy;
            for (const auto& [key, t] : s)
                copy.emplace(key, t.detach().clone());
            dict.state.emplace(index, std::move(copy));
        }
        dict.param_groups.push_back(std::move(group));
    }
    return dict;
}

void Optimizer::load_state_dict(const OptimizerStateDict& dict) {
    const std::string who = std::string(name()) + ".load_state_dict: ";
    if (dict.param_groups.size() != groups_.size())
        throw Error(who + "loaded state dict has " + std::to_string(dict.param_groups.size()) +
                    " parameter groups, the optimizer has " + std::to_string(groups_.size()));
    for (size_t g = 0; g < groups_.size(); ++g)
        if (dict.param_groups[g].params.size() != groups_[g].params.size())
            throw Error(who + "parameter group " + std::to_string(g) + " has " +
                        std::to_string(dict.param_groups[g].params.size()) +
                        " parameters in the loaded state dict, " +
                        std::to_string(groups_[g].params.size()) + " in the optimizer");
    // Validate every state tensor before changing anything.
    std::vector<std::vector<ParamState>> states(groups_.size());
    for (size_t g = 0; g < groups_.size(); ++g) {
        states[g].resize(groups_[g].params.size());
        for (size_t i = 0; i < groups_[g].params.size(); ++i) {
            const int64_t saved_index = dict.param_groups[g].params[i];
            auto it = dict.state.find(saved_index);
            if (it == dict.state.end()) continue;
            const Tensor& p = groups_[g].params[i];
            for (const auto& [key, t] : it->second) {
                if (!t.defined()) continue;
                if (key == "step") {
                    states[g][i].emplace(key, t.detach().to(DType::Float32).clone());
                    continue;
                }
                if (t.shape() != p.shape())
                    throw ShapeError(who + "state '" + key + "' of parameter " +
                                     std::to_string(saved_index) + " has shape " + t.shape().str() +
                                     ", the parameter " + p.shape().str());
                Tensor copy = t.detach().to(p.dtype()).contiguous();
                if (copy.is_same(t) || copy.shares_storage(t)) copy = copy.clone();
                states[g][i].emplace(key, std::move(copy));
            }
        }
    }
    for (size_t g = 0; g < groups_.size(); ++g) {
        groups_[g].options = dict.param_groups[g].options;
        state_[g] = std::move(states[g]);
    }
}

} // namespace myelin::optim
