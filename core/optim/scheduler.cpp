// Learning-rate schedulers (PyTorch 1.13 torch.optim.lr_scheduler).
#include <myelin/error.h>
#include <myelin/optim/scheduler.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <utility>

namespace myelin::optim {
namespace {

constexpr double kPi = std::numbers::pi;

// Python's a % b for b > 0.
int64_t py_mod(int64_t a, int64_t b) {
    const int64_t r = a % b;
    return r < 0 ? r + b : r;
}

void require(bool ok, const std::string& message) {
    if (!ok) throw Error(message);
}

} // namespace

// --- base ------------------------------------------------------------------------------------
LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(&optimizer) {
    for (auto& g : optimizer.param_groups()) {
        g.options.emplace("initial_lr", g.options.at("lr")); // setdefault
        base_lrs_.push_back(g.options.at("initial_lr"));
    }
}

void LRScheduler::initial_step() {
    step_count_ = 0;
    step();
}

double LRScheduler::group_lr(size_t g) const {
    return optimizer_->param_groups()[g].options.at("lr");
}

double LRScheduler::base_lr(size_t group) const {
    if (group >= base_lrs_.size())
        throw Error(std::string(name()) + ": parameter group " + std::to_string(group) +
                    " does not exist (the optimizer has " + std::to_string(base_lrs_.size()) + ")");
    return base_lrs_[group];
}

void LRScheduler::check_step(int64_t step) const {
    if (step < 0)
        throw Error(std::string(name()) + ".lr_at: step must be non-negative, got " +
                    std::to_string(step));
}

void LRScheduler::apply_lrs(const std::vector<double>& lrs) {
    auto& groups = optimizer_->param_groups();
    for (size_t g = 0; g < groups.size() && g < lrs.size(); ++g)
        groups[g].options["lr"] = lrs[g];
    last_lr_.clear();
    for (const auto& g : groups)
        last_lr_.push_back(g.options.at("lr"));
}

std::vector<double> LRScheduler::lr_at_all_groups(int64_t step) const {
    std::vector<double> out;
    for (size_t g = 0; g < base_lrs_.size(); ++g)
        out.push_back(lr_at(step, g));
    return out;
}

void LRScheduler::step() {
    ++step_count_;
    ++last_epoch_;
    apply_lrs(get_lr());
}

void LRScheduler::step_epoch(int64_t epoch) {
    ++step_count_;
    last_epoch_ = epoch;
    std::vector<double> lrs = closed_form_lr();
    apply_lrs(lrs.empty() ? get_lr() : lrs);
}

SchedulerState LRScheduler::state_dict() const {
    SchedulerState s;
    s.scalars["last_epoch"] = static_cast<double>(last_epoch_);
    s.scalars["_step_count"] = static_cast<double>(step_count_);
    s.lists["base_lrs"] = base_lrs_;
    s.lists["_last_lr"] = last_lr_;
    return s;
}

void LRScheduler::load_state_dict(const SchedulerState& s) {
    auto scalar = [&](const char* key) {
        auto it = s.scalars.find(key);
        if (it == s.scalars.end())
            throw Error(std::string(name()) + ".load_state_dict: missing '" + key + "'");
        return it->second;
    };
    auto list = [&](const char* key) {
        auto it = s.lists.find(key);
        if (it == s.lists.end())
            throw Error(std::string(name()) + ".load_state_dict: missing '" + key + "'");
        return it->second;
    };
    std::vector<double> base = list("base_lrs");
    if (base.size() != base_lrs_.size())
        throw Error(std::string(name()) + ".load_state_dict: state has " +
                    std::to_string(base.size()) + " parameter groups, the optimizer has " +
                    std::to_string(base_lrs_.size()));
    last_epoch_ = static_cast<int64_t>(scalar("last_epoch"));
    step_count_ = static_cast<int64_t>(scalar("_step_count"));
    base_lrs_ = std::move(base);
    last_lr_ = list("_last_lr");
}

// --- StepLR ----------------------------------------------------------------------------------
StepLR::StepLR(Optimizer& optimizer, const StepLROptions& options)
    : LRScheduler(optimizer), step_size_(options.step_size), gamma_(options.gamma) {
    require(step_size_ > 0,
            "StepLR: step_size must be positive, got " + std::to_string(step_size_));
    initial_step();
}
std::vector<double> StepLR::get_lr() {
    std::vector<double> out;
    for (size_t g = 0; g < base_lrs_.size(); ++g)
        out.push_back(last_epoch_ == 0 || last_epoch_ % step_size_ != 0 ? group_lr(g)
                                                                        : group_lr(g) * gamma_);
    return out;
}
std::vector<double> StepLR::closed_form_lr() const {
    return lr_at_all_groups(last_epoch_);
}
double StepLR::lr_at(int64_t step, size_t group) const {
    check_step(step);
    return base_lr(group) * std::pow(gamma_, static_cast<double>(step / step_size_));
}

// --- MultiStepLR -----------------------------------------------------------------------------
MultiStepLR::MultiStepLR(Optimizer& optimizer, const MultiStepLROptions& options)
    : LRScheduler(optimizer), milestones_(options.milestones), gamma_(options.gamma) {
    std::sort(milestones_.begin(), milestones_.end());
    initial_step();
}
std::vector<double> MultiStepLR::get_lr() {
    const auto count = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
    std::vector<double> out;
    for (size_t g = 0; g < base_lrs_.size(); ++g)
        out.push_back(count == 0 ? group_lr(g)
                                 : group_lr(g) * std::pow(gamma_, static_cast<double>(count)));
    return out;
}
std::vector<double> MultiStepLR::closed_form_lr() const {
    return lr_at_all_groups(last_epoch_);
}
double MultiStepLR::lr_at(int64_t step, size_t group) const {
    check_step(step);
    const auto passed =
        std::upper_bound(milestones_.begin(), milestones_.end(), step) - milestones_.begin();
    return base_lr(group) * std::pow(gamma_, static_cast<double>(passed));
}

// --- ExponentialLR ---------------------------------------------------------------------------
ExponentialLR::ExponentialLR(Optimizer& optimizer, const ExponentialLROptions& options)
    : LRScheduler(optimizer), gamma_(options.gamma) {
    initial_step();
}
std::vector<double> ExponentialLR::get_lr() {
    std::vector<double> out;
    for (size_t g = 0; g < base_lrs_.size(); ++g)
        out.push_back(last_epoch_ == 0 ? group_lr(g) : group_lr(g) * gamma_);
    return out;
}
std::vector<double> ExponentialLR::closed_form_lr() const {
    return lr_at_all_groups(last_epoch_);
}
double ExponentialLR::lr_at(int64_t step, size_t group) const {
    check_step(step);
    return base_lr(group) * std::pow(gamma_, static_cast<double>(step));
}

// --- CosineAnnealingLR -----------------------------------------------------------------------
CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, const CosineAnnealingLROptions& options)
    : LRScheduler(optimizer), T_max_(options.T_max), eta_min_(options.eta_min) {
    require(T_max_ > 0, "CosineAnnealingLR: T_max must be positive, got " + std::to_string(T_max_));
    initial_step();
}
std::vector<double> CosineAnnealingLR::get_lr() {
    std::vector<double> out;
    const double T = static_cast<double>(T_max_);
    const double e = static_cast<double>(last_epoch_);
    for (size_t g = 0; g < base_lrs_.size(); ++g) {
        const double lr = group_lr(g), base = base_lrs_[g];
        if (last_epoch_ == 0)
            out.push_back(lr);
        else if (step_count_ == 1 && last_epoch_ > 0)
            out.push_back(eta_min_ + (base - eta_min_) * (1.0 + std::cos(e * kPi / T)) / 2.0);
        else if (py_mod(last_epoch_ - 1 - T_max_, 2 * T_max_) == 0)
            out.push_back(lr + (base - eta_min_) * (1.0 - std::cos(kPi / T)) / 2.0);
        else
            out.push_back((1.0 + std::cos(kPi * e / T)) / (1.0 + std::cos(kPi * (e - 1.0) / T)) *
                              (lr - eta_min_) +
                          eta_min_);
    }
    return out;
}
std::vector<double> CosineAnnealingLR::closed_form_lr() const {
    return lr_at_all_groups(last_epoch_);
}
double CosineAnnealingLR::lr_at(int64_t step, size_t group) const {
    check_step(step);
    const double base = base_lr(group);
    return eta_min_ +
           (base - eta_min_) *
               (1.0 + std::cos(kPi * static_cast<double>(step) / static_cast<double>(T_max_))) /
               2.0;
}

// --- CosineAnnealingWarmRestarts -------------------------------------------------------------
CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(
    Optimizer& optimizer, const CosineAnnealingWarmRestartsOptions& options)
    : LRScheduler(optimizer), T_0_(options.T_0), T_mult_(options.T_mult), eta_min_(options.eta_min),
      T_i_(static_cast<double>(options.T_0)), T_cur_(-1.0) {
    require(T_0_ > 0, "CosineAnnealingWarmRestarts: expected a positive integer T_0, got " +
                          std::to_string(T_0_));
    require(T_mult_ >= 1, "CosineAnnealingWarmRestarts: expected an integer T_mult >= 1, got " +
                              std::to_string(T_mult_));
    initial_step();
}
std::vector<double> CosineAnnealingWarmRestarts::get_lr() {
    std::vector<double> out;
    for (double base : base_lrs_)
        out.push_back(eta_min_ + (base - eta_min_) * (1.0 + std::cos(kPi * T_cur_ / T_i_)) / 2.0);
    return out;
}
void CosineAnnealingWarmRestarts::step() {
    if (last_epoch_ < 0) {
        step_epoch(0);
        return;
    }
    ++step_count_;
    ++last_epoch_;
    T_cur_ += 1.0;
    if (T_cur_ >= T_i_) {
        T_cur_ -= T_i_;
        T_i_ *= static_cast<double>(T_mult_);
    }
    apply_lrs(get_lr());
}
void CosineAnnealingWarmRestarts::step_epoch(int64_t epoch) {
    ++step_count_;
    if (epoch >= T_0_) {
        if (T_mult_ == 1) {
            T_cur_ = static_cast<double>(epoch % T_0_);
        } else {
            int64_t start = 0, len = T_0_;
            while (epoch >= start + len) {
                start += len;
                len *= T_mult_;
            }
            T_cur_ = static_cast<double>(epoch - start);
            T_i_ = static_cast<double>(len);
        }
    } else {
        T_i_ = static_cast<double>(T_0_);
        T_cur_ = static_cast<double>(epoch);
    }
    last_epoch_ = epoch;
    apply_lrs(get_lr());
}
CosineAnnealingWarmRestarts::Cycle CosineAnnealingWarmRestarts::cycle_at(int64_t step) const {
    // Equal cycles: no walk (walking them one by one made a late step cost step / T_0 turns).
    if (T_mult_ == 1) return {step - step % T_0_, T_0_};
    // Cycles grow geometrically: at most 63 of them before the length would overflow.
    Cycle c{0, T_0_};
    while (step - c.start >= c.length) {
        c.start += c.length;
        if (c.length > std::numeric_limits<int64_t>::max() / T_mult_)
            return {c.start, std::numeric_limits<int64_t>::max()};
        c.length *= T_mult_;
    }
    return c;
}

double CosineAnnealingWarmRestarts::lr_at(int64_t step, size_t group) const {
    check_step(step);
    const double base = base_lr(group);
    const Cycle c = cycle_at(step);
    const double t_cur = static_cast<double>(step - c.start);
    return eta_min_ +
           (base - eta_min_) * (1.0 + std::cos(kPi * t_cur / static_cast<double>(c.length))) / 2.0;
}
SchedulerState CosineAnnealingWarmRestarts::state_dict() const {
    SchedulerState s = LRScheduler::state_dict();
    s.scalars["T_i"] = T_i_;
    s.scalars["T_cur"] = T_cur_;
    return s;
}
void CosineAnnealingWarmRestarts::load_state_dict(const SchedulerState& s) {
    LRScheduler::load_state_dict(s);
    if (!s.scalars.count("T_i") || !s.scalars.count("T_cur"))
        throw Error("CosineAnnealingWarmRestarts.load_state_dict: missing 'T_i' or 'T_cur'");
    T_i_ = s.scalars.at("T_i");
    T_cur_ = s.scalars.at("T_cur");
}

// --- OneCycleLR ------------------------------------------------------------------------------
OneCycleLR::OneCycleLR(Optimizer& optimizer, const OneCycleOptions& options)
    : LRScheduler(optimizer), options_(options) {
    const char* who = "OneCycleLR: ";
    if (options.total_steps > 0) {
        total_steps_ = options.total_steps;
    } else {
        require(options.epochs > 0 && options.steps_per_epoch > 0,
                std::string(who) + "you must define either total_steps OR (epochs AND "
                                   "steps_per_epoch), all positive");
        total_steps_ = options.epochs * options.steps_per_epoch;
    }
    require(options.pct_start >= 0.0 && options.pct_start <= 1.0,
            std::string(who) + "expected pct_start in [0, 1], got " +
                std::to_string(options.pct_start));
    const double T = static_cast<double>(total_steps_);
    const double ps = options.pct_start;
    if (options.three_phase)
        phases_ = {{ps * T - 1.0, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
                   {2.0 * ps * T - 2.0, "max_lr", "initial_lr", "base_momentum", "max_momentum"},
                   {T - 1.0, "initial_lr", "min_lr", "max_momentum", "max_momentum"}};
    else
        phases_ = {{ps * T - 1.0, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
                   {T - 1.0, "max_lr", "min_lr", "base_momentum", "max_momentum"}};

    auto& groups = optimizer.param_groups();
    const std::vector<double>& per_group = options.max_lr_per_group;
    require(per_group.empty() || per_group.size() == groups.size(),
            std::string(who) + "expected " + std::to_string(groups.size()) +
                " values for max_lr_per_group, got " + std::to_string(per_group.size()));
    const Options& defaults = optimizer.defaults();
    if (options.cycle_momentum) {
        require(defaults.count("momentum") || defaults.count("beta1"),
                std::string(who) + "optimizer must support momentum with `cycle_momentum` "
                                   "option enabled");
        use_beta1_ = defaults.count("beta1") > 0;
    }
    for (size_t g = 0; g < groups.size(); ++g) {
        Options& o = groups[g].options;
        const double max_lr = per_group.empty() ? options.max_lr : per_group[g];
        o["initial_lr"] = max_lr / options.div_factor;
        o["max_lr"] = max_lr;
        o["min_lr"] = o["initial_lr"] / options.final_div_factor;
        if (options.cycle_momentum) {
            o[use_beta1_ ? "beta1" : "momentum"] = options.max_momentum;
            o["max_momentum"] = options.max_momentum;
            o["base_momentum"] = options.base_momentum;
        }
        base_lrs_[g] = o["initial_lr"];
        initial_groups_.push_back(o);
    }
    initial_step();
}

double OneCycleLR::anneal(double start, double end, double pct) const {
    if (options_.anneal_strategy == AnnealStrategy::Cos) {
        const double cos_out = std::cos(kPi * pct) + 1.0;
        return end + (start - end) / 2.0 * cos_out;
    }
    return (end - start) * pct + start;
}

std::pair<double, double> OneCycleLR::values_at(int64_t step, const Options& group) const {
    if (step > total_steps_)
        throw Error("OneCycleLR: tried to step " + std::to_string(step) +
                    " times. The specified number of total steps is " +
                    std::to_string(total_steps_));
    const double s = static_cast<double>(step);
    double start_step = 0.0;
    for (size_t i = 0; i < phases_.size(); ++i) {
        const Phase& ph = phases_[i];
        if (s <= ph.end_step || i == phases_.size() - 1) {
            const double pct = (s - start_step) / (ph.end_step - start_step);
            const double lr = anneal(group.at(ph.start_lr), group.at(ph.end_lr), pct);
            const double m = options_.cycle_momentum ? anneal(group.at(ph.start_momentum),
                                                              group.at(ph.end_momentum), pct)
                                                     : 0.0;
            return {lr, m};
        }
        start_step = ph.end_step;
    }
    return {0.0, 0.0};
}

std::vector<double> OneCycleLR::get_lr() {
    std::vector<double> out;
    for (auto& g : optimizer_->param_groups()) {
        const auto [lr, m] = values_at(last_epoch_, g.options);
        out.push_back(lr);
        if (options_.cycle_momentum) g.options[use_beta1_ ? "beta1" : "momentum"] = m;
    }
    return out;
}

double OneCycleLR::lr_at(int64_t step, size_t group) const {
    check_step(step);
    (void)base_lr(group);
    return values_at(step, initial_groups_[group]).first;
}

double OneCycleLR::momentum_at(int64_t step, size_t group) const {
    check_step(step);
    (void)base_lr(group);
    if (!options_.cycle_momentum) throw Error("OneCycleLR.momentum_at: cycle_momentum is off");
    return values_at(step, initial_groups_[group]).second;
}

// --- LinearLR --------------------------------------------------------------------------------
LinearLR::LinearLR(Optimizer& optimizer, const LinearLROptions& options)
    : LRScheduler(optimizer), start_factor_(options.start_factor), end_factor_(options.end_factor),
      total_iters_(options.total_iters) {
    require(start_factor_ > 0.0 && start_factor_ <= 1.0,
            "LinearLR: starting multiplicative factor expected to be greater than 0 and less or "
            "equal to 1, got " +
                std::to_string(start_factor_));
    require(end_factor_ >= 0.0 && end_factor_ <= 1.0,
            "LinearLR: ending multiplicative factor expected to be between 0 and 1, got " +
                std::to_string(end_factor_));
    require(total_iters_ > 0, "LinearLR: total_iters must be positive");
    initial_step();
}
std::vector<double> LinearLR::get_lr() {
    std::vector<double> out;
    const double d = end_factor_ - start_factor_;
    for (size_t g = 0; g < base_lrs_.size(); ++g) {
        const double lr = group_lr(g);
        if (last_epoch_ == 0)
            out.push_back(lr * start_factor_);
        else if (last_epoch_ > total_iters_)
            out.push_back(lr);
        else
            out.push_back(lr * (1.0 + d / (static_cast<double>(total_iters_) * start_factor_ +
                                           static_cast<double>(last_epoch_ - 1) * d)));
    }
    return out;
}
std::vector<double> LinearLR::closed_form_lr() const {
    return lr_at_all_groups(last_epoch_);
}
double LinearLR::lr_at(int64_t step, size_t group) const {
    check_step(step);
    return base_lr(group) * (start_factor_ + (end_factor_ - start_factor_) *
                                                 static_cast<double>(std::min(total_iters_, step)) /
                                                 static_cast<double>(total_iters_));
}

// --- ConstantLR ------------------------------------------------------------------------------
ConstantLR::ConstantLR(Optimizer& optimizer, const ConstantLROptions& options)
    : LRScheduler(optimizer), factor_(options.factor), total_iters_(options.total_iters) {
    require(factor_ >= 0.0 && factor_ <= 1.0,
            "ConstantLR: constant multiplicative factor expected to be between 0 and 1, got " +
                std::to_string(factor_));
    initial_step();
}
std::vector<double> ConstantLR::get_lr() {
    std::vector<double> out;
    for (size_t g = 0; g < base_lrs_.size(); ++g) {
        const double lr = group_lr(g);
        if (last_epoch_ == 0)
            out.push_back(lr * factor_);
        else if (last_epoch_ != total_iters_)
            out.push_back(lr);
        else
            out.push_back(lr * (1.0 / factor_));
    }
    return out;
}
std::vector<double> ConstantLR::closed_form_lr() const {
    return lr_at_all_groups(last_epoch_);
}
double ConstantLR::lr_at(int64_t step, size_t group) const {
    check_step(step);
    return base_lr(group) * (factor_ + (step >= total_iters_ ? 1.0 : 0.0) * (1.0 - factor_));
}

// --- SequentialLR ----------------------------------------------------------------------------
SequentialLR::SequentialLR(Optimizer& optimizer,
                           std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler(optimizer), schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
    require(!schedulers_.empty(), "SequentialLR: expects at least one scheduler");
    for (size_t i = 0; i < schedulers_.size(); ++i)
        require(schedulers_[i] && &schedulers_[i]->optimizer() == &optimizer,
                "SequentialLR: expects all schedulers to belong to the same optimizer, but got "
                "scheduler at index " +
                    std::to_string(i) + " bound to a different one");
    require(milestones_.size() + 1 == schedulers_.size(),
            "SequentialLR: expects number of schedulers provided to be one more than the number "
            "of milestone points, but got number of schedulers " +
                std::to_string(schedulers_.size()) +
                " and the number of milestones to be equal to " +
                std::to_string(milestones_.size()));
    last_epoch_ = 0;
    // Reset learning rates back to initial values, "undo" the wrapped schedulers' initial steps,
    // and perform the initial step of the first one only (PyTorch 1.13).
    for (auto& g : optimizer.param_groups())
        g.options["lr"] = g.options.at("initial_lr");
    for (auto& s : schedulers_)
        --s->last_epoch_;
    schedulers_[0]->initial_step();
    last_lr_ = schedulers_[0]->get_last_lr();
}

void SequentialLR::step() {
    ++last_epoch_;
    const size_t idx =
        static_cast<size_t>(std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) -
                            milestones_.begin());
    auto& s = schedulers_[idx];
    if (idx > 0 && milestones_[idx - 1] == last_epoch_)
        s->step_epoch(0);
    else
        s->step();
    last_lr_ = s->get_last_lr();
}

double SequentialLR::lr_at(int64_t step, size_t group) const {
    check_step(step);
    (void)base_lr(group);
    const size_t idx = static_cast<size_t>(
        std::upper_bound(milestones_.begin(), milestones_.end(), step) - milestones_.begin());
    const int64_t local = idx == 0 ? step : step - milestones_[idx - 1];
    return schedulers_[idx]->lr_at(local, group);
}

SchedulerState SequentialLR::state_dict() const {
    SchedulerState s = LRScheduler::state_dict();
    s.lists["_milestones"] = std::vector<double>(milestones_.begin(), milestones_.end());
    for (const auto& c : schedulers_)
        s.children.push_back(c->state_dict());
    return s;
}

void SequentialLR::load_state_dict(const SchedulerState& s) {
    if (s.children.size() != schedulers_.size())
        throw Error("SequentialLR.load_state_dict: state has " + std::to_string(s.children.size()) +
                    " schedulers, this one wraps " + std::to_string(schedulers_.size()));
    LRScheduler::load_state_dict(s);
    for (size_t i = 0; i < schedulers_.size(); ++i)
        schedulers_[i]->load_state_dict(s.children[i]);
}

// --- ReduceLROnPlateau -----------------------------------------------------------------------
ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, const ReduceLROnPlateauOptions& options)
    : optimizer_(&optimizer), options_(options) {
    require(options.factor < 1.0, "ReduceLROnPlateau: factor should be < 1.0");
    const auto& groups = optimizer.param_groups();
    const std::vector<double>& per_group = options.min_lr_per_group;
    require(per_group.empty() || per_group.size() == groups.size(),
            "ReduceLROnPlateau: expected " + std::to_string(groups.size()) +
                " values for min_lr_per_group, got " + std::to_string(per_group.size()));
    for (size_t g = 0; g < groups.size(); ++g)
        min_lrs_.push_back(per_group.empty() ? options.min_lr : per_group[g]);
    best_ = options.mode == ReduceLROnPlateauOptions::Mode::Min
                ? std::numeric_limits<double>::infinity()
                : -std::numeric_limits<double>::infinity();
    for (const auto& g : groups)
        last_lr_.push_back(g.options.at("lr"));
}

bool ReduceLROnPlateau::is_better(double a, double best) const {
    using M = ReduceLROnPlateauOptions::Mode;
    using T = ReduceLROnPlateauOptions::ThresholdMode;
    const double th = options_.threshold;
    if (options_.mode == M::Min)
        return options_.threshold_mode == T::Rel ? a < best * (1.0 - th) : a < best - th;
    return options_.threshold_mode == T::Rel ? a > best * (th + 1.0) : a > best + th;
}

void ReduceLROnPlateau::step(double metric) {
    last_epoch_ += 1;
    if (is_better(metric, best_)) {
        best_ = metric;
        num_bad_epochs_ = 0;
    } else {
        ++num_bad_epochs_;
    }
    if (cooldown_counter_ > 0) {
        --cooldown_counter_;
        num_bad_epochs_ = 0;
    }
    auto& groups = optimizer_->param_groups();
    if (num_bad_epochs_ > options_.patience) {
        for (size_t g = 0; g < groups.size(); ++g) {
            const double old_lr = groups[g].options.at("lr");
            const double new_lr = std::max(old_lr * options_.factor, min_lrs_[g]);
            if (old_lr - new_lr > options_.eps) groups[g].options["lr"] = new_lr;
        }
        cooldown_counter_ = options_.cooldown;
        num_bad_epochs_ = 0;
    }
    last_lr_.clear();
    for (const auto& g : groups)
        last_lr_.push_back(g.options.at("lr"));
}

SchedulerState ReduceLROnPlateau::state_dict() const {
    SchedulerState s;
    s.scalars["best"] = best_;
    s.scalars["num_bad_epochs"] = static_cast<double>(num_bad_epochs_);
    s.scalars["cooldown_counter"] = static_cast<double>(cooldown_counter_);
    s.scalars["last_epoch"] = static_cast<double>(last_epoch_);
    s.lists["min_lrs"] = min_lrs_;
    s.lists["_last_lr"] = last_lr_;
    return s;
}

void ReduceLROnPlateau::load_state_dict(const SchedulerState& s) {
    for (const char* key : {"best", "num_bad_epochs", "cooldown_counter", "last_epoch"})
        if (!s.scalars.count(key))
            throw Error(std::string("ReduceLROnPlateau.load_state_dict: missing '") + key + "'");
    best_ = s.scalars.at("best");
    num_bad_epochs_ = static_cast<int64_t>(s.scalars.at("num_bad_epochs"));
    cooldown_counter_ = static_cast<int64_t>(s.scalars.at("cooldown_counter"));
    last_epoch_ = static_cast<int64_t>(s.scalars.at("last_epoch"));
    if (s.lists.count("_last_lr")) last_lr_ = s.lists.at("_last_lr");
}

// --- corners: where each closed form starts a new piece ---------------------------------------

namespace {

// The first multiple of `period` (> 0) after `after` (>= -1).
std::optional<int64_t> next_multiple(int64_t after, int64_t period) {
    if (period <= 0) return std::nullopt;
    const int64_t k = after < 0 ? 0 : after / period;
    if (k >= std::numeric_limits<int64_t>::max() / period - 1) return std::nullopt;
    return (k + 1) * period;
}

std::optional<int64_t> after_or_none(int64_t at, int64_t after) {
    return at > after ? std::optional<int64_t>(at) : std::nullopt;
}

} // namespace

std::optional<int64_t> StepLR::next_corner(int64_t after) const {
    return next_multiple(after, step_size_);
}

std::optional<int64_t> MultiStepLR::next_corner(int64_t after) const {
    const auto it = std::upper_bound(milestones_.begin(), milestones_.end(), after);
    return it == milestones_.end() ? std::nullopt : std::optional<int64_t>(*it);
}

std::optional<int64_t> CosineAnnealingLR::next_corner(int64_t after) const {
    return next_multiple(after, T_max_); // the cosine turns back at every multiple of T_max
}

std::optional<int64_t> CosineAnnealingWarmRestarts::next_corner(int64_t after) const {
    const Cycle c = cycle_at(std::max<int64_t>(after, 0)); // the next restart ends it
    if (c.length > std::numeric_limits<int64_t>::max() - c.start) return std::nullopt;
    return c.start + c.length;
}

std::optional<int64_t> OneCycleLR::next_corner(int64_t after) const {
    // Phase i ends at its end_step; the next starts one step later (the last one runs to the end).
    for (size_t i = 0; i + 1 < phases_.size(); ++i) {
        const int64_t start = static_cast<int64_t>(std::floor(phases_[i].end_step)) + 1;
        if (start > after) return start;
    }
    return std::nullopt;
}

std::optional<int64_t> LinearLR::next_corner(int64_t after) const {
    return after_or_none(total_iters_, after);
}

std::optional<int64_t> ConstantLR::next_corner(int64_t after) const {
    return after_or_none(total_iters_, after);
}

std::optional<int64_t> SequentialLR::next_corner(int64_t after) const {
    // The next milestone, or before it a corner of the schedule running at `after`.
    const size_t idx = static_cast<size_t>(
        std::upper_bound(milestones_.begin(), milestones_.end(), after) - milestones_.begin());
    const int64_t start = idx == 0 ? 0 : milestones_[idx - 1];
    std::optional<int64_t> next =
        idx < milestones_.size() ? std::optional<int64_t>(milestones_[idx]) : std::nullopt;
    if (const auto inner = schedulers_[idx]->next_corner(after - start)) {
        if (*inner <= std::numeric_limits<int64_t>::max() - start &&
            (!next || start + *inner < *next))
            next = start + *inner;
    }
    return next;
}

} // namespace myelin::optim
