#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/optim/grad_scaler.h>

#include <cmath>
#include <string>

namespace myelin::optim {

namespace {
void check_factor(const char* name, double value, bool above_one) {
    const bool ok = std::isfinite(value) && (above_one ? value > 1.0 : value > 0.0 && value < 1.0);
    if (!ok)
        throw Error(std::string("GradScaler: ") + name + " must be " +
                    (above_one ? "> 1" : "in (0, 1)") + ", got " + std::to_string(value));
}

// Whether every element of g is finite (false for inf/NaN anywhere).
bool all_finite(const Tensor& g) {
    return sum(logical_not(isfinite(g)).to(DType::Int64)).item<int64_t>() == 0;
}
} // namespace

GradScaler::GradScaler(const GradScalerOptions& options)
    : options_(options), scale_(float(options.init_scale)) {
    if (!(std::isfinite(options.init_scale) && options.init_scale > 0))
        throw Error("GradScaler: init_scale must be a finite number > 0, got " +
                    std::to_string(options.init_scale));
    check_factor("growth_factor", options.growth_factor, true);
    check_factor("backoff_factor", options.backoff_factor, false);
    if (options.growth_interval < 1)
        throw Error("GradScaler: growth_interval must be >= 1, got " +
                    std::to_string(options.growth_interval));
}

Tensor GradScaler::scale(const Tensor& loss) const {
    if (!options_.enabled) return loss;
    return loss * double(scale_);
}

void GradScaler::unscale_(Optimizer& optimizer) {
    if (!options_.enabled) return;
    PerOptimizer& state = iteration_[&optimizer];
    if (state.unscaled)
        throw Error("GradScaler: unscale_() has already been called on this optimizer since the "
                    "last update()");
    if (state.stepped) throw Error("GradScaler: unscale_() is being called after step()");
    autograd::NoGradGuard no_grad;
    // torch: inv_scale = float(1 / double(scale)); grads *= inv_scale in float32.
    const double inv_scale = double(float(1.0 / double(scale_)));
    bool found_inf = false;
    for (ParamGroup& group : optimizer.param_groups())
        for (Tensor& p : group.params) {
            Tensor g = p.grad();
            if (!g.defined()) continue;
            g.mul_(inv_scale);
            if (!found_inf && !all_finite(g)) found_inf = true;
        }
    state.unscaled = true;
    state.found_inf = found_inf;
}

bool GradScaler::step(Optimizer& optimizer) {
    if (!options_.enabled) {
        optimizer.step();
        return true;
    }
    if (iteration_[&optimizer].stepped)
        throw Error("GradScaler: step() has already been called since the last update()");
    if (!iteration_[&optimizer].unscaled) unscale_(optimizer);
    PerOptimizer& state = iteration_[&optimizer];
    state.stepped = true;
    if (state.found_inf) return false;
    optimizer.step();
    return true;
}

void GradScaler::update() {
    if (!options_.enabled) return;
    if (iteration_.empty())
        throw Error("GradScaler: update() without an inf check since the last update() (call "
                    "step() or unscale_() first)");
    bool found_inf = false;
    for (const auto& [optimizer, state] : iteration_)
        found_inf |= state.found_inf;
    iteration_.clear();
    // torch's _amp_update_scale_, in float32.
    if (found_inf) {
        scale_ = float(double(scale_) * options_.backoff_factor);
        growth_tracker_ = 0;
        return;
    }
    const int64_t successful = growth_tracker_ + 1;
    if (successful == options_.growth_interval) {
        const float grown = float(double(scale_) * options_.growth_factor);
        if (std::isfinite(grown)) scale_ = grown;
        growth_tracker_ = 0;
    } else {
        growth_tracker_ = successful;
    }
}

bool GradScaler::found_inf(const Optimizer& optimizer) const {
    const auto it = iteration_.find(&optimizer);
    return it != iteration_.end() && it->second.found_inf;
}

double GradScaler::get_scale() const {
    return options_.enabled ? double(scale_) : 1.0;
}

std::map<std::string, double> GradScaler::state_dict() const {
    if (!options_.enabled) return {};
    return {{"scale", double(scale_)},
            {"growth_factor", options_.growth_factor},
            {"backoff_factor", options_.backoff_factor},
            {"growth_interval", double(options_.growth_interval)},
            {"_growth_tracker", double(growth_tracker_)}};
}

void GradScaler::load_state_dict(const std::map<std::string, double>& state) {
    if (!options_.enabled) throw Error("GradScaler: load_state_dict() on a disabled scaler");
    if (state.empty())
        throw Error("GradScaler: the state_dict is empty (it was saved from a disabled scaler)");
    for (const char* key :
         {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"})
        if (!state.count(key))
            throw Error(std::string("GradScaler: the state_dict has no '") + key + "'");
    GradScalerOptions options = options_;
    options.init_scale = state.at("scale");
    options.growth_factor = state.at("growth_factor");
    options.backoff_factor = state.at("backoff_factor");
    options.growth_interval = int64_t(state.at("growth_interval"));
    const double tracker = state.at("_growth_tracker");
    if (!(tracker >= 0 && tracker == std::floor(tracker)))
        throw Error("GradScaler: _growth_tracker must be a whole number >= 0");
    GradScaler checked(options); // validates every value before anything changes
    options_ = options;
    scale_ = checked.scale_;
    growth_tracker_ = int64_t(tracker);
    iteration_.clear();
}

} // namespace myelin::optim
