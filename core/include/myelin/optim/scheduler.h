#pragma once
// Learning-rate schedulers with PyTorch 1.13's semantics. A scheduler is bound to an optimizer
// (which must outlive it): construction sets "initial_lr" in every group (if absent) and performs
// PyTorch's initial step, so get_last_lr() is the lr of step 0; every step() advances one step
// and writes the new lr into the groups. step() uses PyTorch's recursive ("chainable") form, so
// values match PyTorch step by step.
//
// lr_at(step, group) is the lr after `step` calls to step() from construction, computed from the
// closed form without touching the optimizer: what the studio plots before training. For the
// recursive schedules it agrees with step() to ~1e-12 relative.
//
// Each schedule takes its typed options (StepLROptions, ...), whose `fields` describe every
// option once (optim/option_field.h): the schedule kinds' AttrDescs (the project file, `myelin
// check`, the studio's forms) and the typed options a project's values build follow from them.
// The defaults are the project's when an option is left out: PyTorch's where it has one.
#include <myelin/optim/optimizer.h>
#include <myelin/optim/option_field.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace myelin::optim {

// PyTorch's scheduler state_dict: scalars ("last_epoch", "_step_count", "T_cur", "best", ...),
// lists ("base_lrs", "_last_lr") and, for SequentialLR, the wrapped schedulers' states.
struct SchedulerState {
    std::map<std::string, double> scalars;
    std::map<std::string, std::vector<double>> lists;
    std::vector<SchedulerState> children;
};

class LRScheduler {
  public:
    virtual ~LRScheduler() = default;
    LRScheduler(const LRScheduler&) = delete;
    LRScheduler& operator=(const LRScheduler&) = delete;

    virtual const char* name() const = 0; // PyTorch's class name
    virtual void step();
    const std::vector<double>& get_last_lr() const { return last_lr_; }
    int64_t last_epoch() const { return last_epoch_; }
    const std::vector<double>& base_lrs() const { return base_lrs_; }
    Optimizer& optimizer() const { return *optimizer_; }

    // Side-effect free closed form (see above). Throws Error for a bad group or negative step.
    virtual double lr_at(int64_t step, size_t group = 0) const = 0;
    // The first step s > after at which lr_at's formula starts a new piece (a drop, a restart,
    // a phase, the end of a ramp, where a cosine turns): what a plot of the schedule must not
    // step over. nullopt when none is left, or the schedule is one smooth piece (or does not
    // say: the default, as for a plugin's).
    virtual std::optional<int64_t> next_corner(int64_t after) const {
        (void)after;
        return std::nullopt;
    }

    virtual SchedulerState state_dict() const;
    // Restores the step counters and learning-rate bookkeeping (not the optimizer's lrs, which
    // the optimizer's own state dict carries). Hyperparameters come from construction.
    virtual void load_state_dict(const SchedulerState& state);

  protected:
    explicit LRScheduler(Optimizer& optimizer);
    // PyTorch's get_lr(): the chainable form, reading the groups' current lrs.
    virtual std::vector<double> get_lr() = 0;
    // PyTorch's _get_closed_form_lr(), used by step(epoch); empty when there is none.
    virtual std::vector<double> closed_form_lr() const { return {}; }
    // lr_at(step, g) for every group: the closed form of the schedules that have one.
    std::vector<double> lr_at_all_groups(int64_t step) const;
    // PyTorch's deprecated step(epoch) (SequentialLR calls step(0) at milestones).
    virtual void step_epoch(int64_t epoch);
    // Call at the end of every derived constructor.
    void initial_step();
    void apply_lrs(const std::vector<double>& lrs);
    double group_lr(size_t g) const;
    double base_lr(size_t group) const; // with the group range check
    void check_step(int64_t step) const;

    Optimizer* optimizer_;
    std::vector<double> base_lrs_;
    std::vector<double> last_lr_;
    int64_t last_epoch_ = -1;
    int64_t step_count_ = 0;

    friend class SequentialLR;
};

struct StepLROptions {
    int64_t step_size = 10;
    double gamma = 0.1;
    static const std::array<OptionField<StepLROptions>, 2> fields;
};

// lr = base * gamma^(floor(epoch / step_size))
class StepLR final : public LRScheduler {
  public:
    StepLR(Optimizer& optimizer, const StepLROptions& options);
    const char* name() const override { return "StepLR"; }
    double lr_at(int64_t step, size_t group = 0) const override;
    std::optional<int64_t> next_corner(int64_t after) const override;

  protected:
    std::vector<double> get_lr() override;
    std::vector<double> closed_form_lr() const override;

  private:
    int64_t step_size_;
    double gamma_;
};

struct MultiStepLROptions {
    std::vector<int64_t> milestones{30, 80};
    double gamma = 0.1;
    static const std::array<OptionField<MultiStepLROptions>, 2> fields;
};

// lr = base * gamma^(number of milestones <= epoch)
class MultiStepLR final : public LRScheduler {
  public:
    MultiStepLR(Optimizer& optimizer, const MultiStepLROptions& options);
    const char* name() const override { return "MultiStepLR"; }
    double lr_at(int64_t step, size_t group = 0) const override;
    std::optional<int64_t> next_corner(int64_t after) const override;

  protected:
    std::vector<double> get_lr() override;
    std::vector<double> closed_form_lr() const override;

  private:
    std::vector<int64_t> milestones_; // sorted, duplicates kept (PyTorch's Counter)
    double gamma_;
};

struct ExponentialLROptions {
    double gamma = 0.95;
    static const std::array<OptionField<ExponentialLROptions>, 1> fields;
};

// lr = base * gamma^epoch
class ExponentialLR final : public LRScheduler {
  public:
    ExponentialLR(Optimizer& optimizer, const ExponentialLROptions& options);
    const char* name() const override { return "ExponentialLR"; }
    double lr_at(int64_t step, size_t group = 0) const override;

  protected:
    std::vector<double> get_lr() override;
    std::vector<double> closed_form_lr() const override;

  private:
    double gamma_;
};

struct CosineAnnealingLROptions {
    int64_t T_max = 0; // 0: the whole training, which the kind fills in (the schedule needs > 0)
    double eta_min = 0.0;
    static const std::array<OptionField<CosineAnnealingLROptions>, 2> fields;
};

// lr = eta_min + (base - eta_min) (1 + cos(pi epoch / T_max)) / 2; step() uses PyTorch's
// recursive form (so it also continues past T_max the way PyTorch does).
class CosineAnnealingLR final : public LRScheduler {
  public:
    CosineAnnealingLR(Optimizer& optimizer, const CosineAnnealingLROptions& options);
    const char* name() const override { return "CosineAnnealingLR"; }
    double lr_at(int64_t step, size_t group = 0) const override;
    std::optional<int64_t> next_corner(int64_t after) const override;

  protected:
    std::vector<double> get_lr() override;
    std::vector<double> closed_form_lr() const override;

  private:
    int64_t T_max_;
    double eta_min_;
};

struct CosineAnnealingWarmRestartsOptions {
    int64_t T_0 = 10;
    int64_t T_mult = 1;
    double eta_min = 0.0;
    static const std::array<OptionField<CosineAnnealingWarmRestartsOptions>, 3> fields;
};

// SGDR: cosine from base to eta_min over T_i steps, then restart with T_i *= T_mult.
class CosineAnnealingWarmRestarts final : public LRScheduler {
  public:
    CosineAnnealingWarmRestarts(Optimizer& optimizer,
                                const CosineAnnealingWarmRestartsOptions& options);
    const char* name() const override { return "CosineAnnealingWarmRestarts"; }
    void step() override;
    double lr_at(int64_t step, size_t group = 0) const override;
    std::optional<int64_t> next_corner(int64_t after) const override;
    SchedulerState state_dict() const override;
    void load_state_dict(const SchedulerState& state) override;

  protected:
    std::vector<double> get_lr() override;
    void step_epoch(int64_t epoch) override;

  private:
    // The restart cycle holding `step`: its first step and its length (the largest int64 for a
    // cycle that outlasts any run, where T_mult's growth would overflow).
    struct Cycle {
        int64_t start, length;
    };
    Cycle cycle_at(int64_t step) const;

    int64_t T_0_, T_mult_;
    double eta_min_;
    double T_i_, T_cur_;
};

enum class AnnealStrategy { Cos, Linear };

struct OneCycleOptions {
    double max_lr = 1e-2;                   // every group's peak...
    std::vector<double> max_lr_per_group{}; // ...or, when given, one per group
    int64_t total_steps = 0;                // or epochs * steps_per_epoch when 0
    int64_t epochs = 0;
    int64_t steps_per_epoch = 0;
    double pct_start = 0.3;
    AnnealStrategy anneal_strategy = AnnealStrategy::Cos;
    bool cycle_momentum = true; // SGD/RMSprop "momentum", Adam/AdamW "beta1"
    double base_momentum = 0.85;
    double max_momentum = 0.95;
    double div_factor = 25.0;
    double final_div_factor = 1e4;
    bool three_phase = false;
    // A project's options: the steps come from the training, a per-group peak from no file.
    static const std::array<OptionField<OneCycleOptions>, 9> fields;
};

// The 1cycle policy. Sets initial_lr = max_lr / div_factor, max_lr and min_lr = initial_lr /
// final_div_factor in every group (and max_momentum / base_momentum when cycling momentum).
class OneCycleLR final : public LRScheduler {
  public:
    OneCycleLR(Optimizer& optimizer, const OneCycleOptions& options);
    const char* name() const override { return "OneCycleLR"; }
    double lr_at(int64_t step, size_t group = 0) const override;
    std::optional<int64_t> next_corner(int64_t after) const override;
    // The momentum (or beta1) the schedule sets at `step` (needs cycle_momentum).
    double momentum_at(int64_t step, size_t group = 0) const;
    int64_t total_steps() const { return total_steps_; }

  protected:
    std::vector<double> get_lr() override;

  private:
    struct Phase {
        double end_step;
        const char* start_lr;
        const char* end_lr;
        const char* start_momentum;
        const char* end_momentum;
    };
    // (lr, momentum) at a step, from a group's option values.
    std::pair<double, double> values_at(int64_t step, const Options& group) const;
    double anneal(double start, double end, double pct) const;

    OneCycleOptions options_;
    int64_t total_steps_ = 0;
    std::vector<Phase> phases_;
    bool use_beta1_ = false;
    std::vector<Options> initial_groups_; // the groups' schedule values, for lr_at
};

struct LinearLROptions {
    double start_factor = 1.0 / 3.0;
    double end_factor = 1.0;
    int64_t total_iters = 5;
    static const std::array<OptionField<LinearLROptions>, 3> fields;
};

// lr = base * (start_factor + (end_factor - start_factor) min(epoch, total_iters) / total_iters)
class LinearLR final : public LRScheduler {
  public:
    LinearLR(Optimizer& optimizer, const LinearLROptions& options);
    const char* name() const override { return "LinearLR"; }
    double lr_at(int64_t step, size_t group = 0) const override;
    std::optional<int64_t> next_corner(int64_t after) const override;

  protected:
    std::vector<double> get_lr() override;
    std::vector<double> closed_form_lr() const override;

  private:
    double start_factor_, end_factor_;
    int64_t total_iters_;
};

struct ConstantLROptions {
    double factor = 1.0 / 3.0;
    int64_t total_iters = 5;
    static const std::array<OptionField<ConstantLROptions>, 2> fields;
};

// lr = base * factor until total_iters, then base.
class ConstantLR final : public LRScheduler {
  public:
    ConstantLR(Optimizer& optimizer, const ConstantLROptions& options);
    const char* name() const override { return "ConstantLR"; }
    double lr_at(int64_t step, size_t group = 0) const override;
    std::optional<int64_t> next_corner(int64_t after) const override;

  protected:
    std::vector<double> get_lr() override;
    std::vector<double> closed_form_lr() const override;

  private:
    double factor_;
    int64_t total_iters_;
};

// Runs schedulers one after another: schedulers[i] from milestones[i-1] on (restarted at its
// step 0 there). All must be bound to `optimizer` (constructed before this, as in PyTorch).
class SequentialLR final : public LRScheduler {
  public:
    SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                 std::vector<int64_t> milestones);
    const char* name() const override { return "SequentialLR"; }
    void step() override;
    double lr_at(int64_t step, size_t group = 0) const override;
    std::optional<int64_t> next_corner(int64_t after) const override;
    SchedulerState state_dict() const override;
    void load_state_dict(const SchedulerState& state) override;

  protected:
    std::vector<double> get_lr() override { return last_lr_; }

  private:
    std::vector<std::shared_ptr<LRScheduler>> schedulers_;
    std::vector<int64_t> milestones_;
};

// The linear warmup every step-driven schedule kind offers before itself: LinearLR from
// warmup_start_factor x lr to lr over `warmup` steps, then the schedule (SequentialLR).
struct WarmupOptions {
    int64_t warmup = 0; // none
    double warmup_start_factor = 0.1;
    static const std::array<OptionField<WarmupOptions>, 2> fields;
};

struct ReduceLROnPlateauOptions {
    enum class Mode { Min, Max } mode = Mode::Min;
    double factor = 0.1;
    int64_t patience = 10;
    double threshold = 1e-4;
    enum class ThresholdMode { Rel, Abs } threshold_mode = ThresholdMode::Rel;
    int64_t cooldown = 0;
    double min_lr = 0.0;                    // every group's floor...
    std::vector<double> min_lr_per_group{}; // ...or, when given, one per group
    double eps = 1e-8;
    // A project's options (a per-group floor is no file's).
    static const std::array<OptionField<ReduceLROnPlateauOptions>, 8> fields;
};

// Lowers the lr by `factor` when the metric has not improved for `patience` steps. Depends on
// the metric, so it has no lr_at.
class ReduceLROnPlateau {
  public:
    ReduceLROnPlateau(Optimizer& optimizer, const ReduceLROnPlateauOptions& options = {});
    const char* name() const { return "ReduceLROnPlateau"; }
    void step(double metric);
    const std::vector<double>& get_last_lr() const { return last_lr_; }
    int64_t last_epoch() const { return last_epoch_; }
    double best() const { return best_; }
    int64_t num_bad_epochs() const { return num_bad_epochs_; }
    bool in_cooldown() const { return cooldown_counter_ > 0; }
    SchedulerState state_dict() const;
    void load_state_dict(const SchedulerState& state);

  private:
    bool is_better(double a, double best) const;

    Optimizer* optimizer_;
    ReduceLROnPlateauOptions options_;
    std::vector<double> min_lrs_;
    std::vector<double> last_lr_;
    double best_;
    int64_t num_bad_epochs_ = 0;
    int64_t cooldown_counter_ = 0;
    int64_t last_epoch_ = 0;
};

} // namespace myelin::optim
