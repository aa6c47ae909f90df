#pragma once
// Optimizer base: parameter groups with their own options, per-parameter state, zero_grad and
// state_dict/load_state_dict in PyTorch's layout:
//   {"state": {param_index: {"step": ..., "exp_avg": ..., ...}},
//    "param_groups": [{"lr": ..., ..., "params": [indices]}]}
// Parameter indices count over all groups in order, as in PyTorch.
//
// Options are doubles keyed by PyTorch's names ("lr", "momentum", "weight_decay", ...); booleans
// are 0 / 1. PyTorch's "betas" tuple is stored as "beta1" and "beta2". Schedulers add their own
// keys to a group ("initial_lr", "max_lr", ...) exactly as PyTorch does.
#include <myelin/tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace myelin::optim {

using Options = std::map<std::string, double>;
using ParamState = std::map<std::string, Tensor>; // "step" is a 0-dim float32 tensor

// What one step did to one parameter, gathered by the update pass itself (it reads the gradient
// and the weights anyway): the trainer's per-layer capture costs no extra pass over memory and
// no copy of the weights. Sums in double; Inf/NaN in the gradient propagate into grad_squares.
struct StepStats {
    double grad_squares = 0.0;   // Σg²
    double grad_abs = 0.0;       // Σ|g|
    double grad_max_abs = 0.0;   // max |g|
    double weight_squares = 0.0; // Σw² before the step
    double update_squares = 0.0; // Σ(w_after − w_before)²
    int64_t count = 0;
};

struct ParamGroup {
    std::vector<Tensor> params;
    // Overrides of the optimizer's defaults (e.g. {"lr", 1e-4} for a backbone). The optimizer
    // fills in every other default, so after construction this holds the group's full options.
    Options options;
};

struct OptimizerStateDict {
    struct Group {
        Options options;
        std::vector<int64_t> params; // global parameter indices
    };
    std::map<int64_t, ParamState> state; // only parameters that have state
    std::vector<Group> param_groups;
};

class Optimizer {
  public:
    virtual ~Optimizer() = default;
    Optimizer(const Optimizer&) = delete;
    Optimizer& operator=(const Optimizer&) = delete;

    virtual const char* name() const = 0; // PyTorch's class name: "Adam"

    // One update of every parameter that has a gradient (parameters whose .grad is undefined are
    // skipped). Runs under NoGradGuard, in place.
    void step();
    // Sets every parameter's .grad to undefined (PyTorch's set_to_none=True).
    void zero_grad();

    // Whether this optimizer's update pass can gather StepStats (the built-in ones can; an
    // optimizer from a plugin may not, and the trainer then measures the step itself).
    virtual bool supports_step_stats() const { return false; }
    // Gather StepStats during the following step() calls (off by default). Numerics of the
    // update are the same either way. `magnitudes` false: only grad_squares (and count), which is
    // all the trainer's non-finite check needs on a step without layer norms; the update then
    // reads no weight twice.
    void collect_step_stats(bool on, bool magnitudes = true) {
        collect_stats_ = on;
        collect_magnitudes_ = magnitudes;
    }
    // The last step()'s statistics of `param` (null when none were gathered for it: not
    // collecting, no gradient, or not one of this optimizer's parameters).
    const StepStats* step_stats(const Tensor& param) const;

    std::vector<ParamGroup>& param_groups() { return groups_; }
    const std::vector<ParamGroup>& param_groups() const { return groups_; }
    const Options& defaults() const { return defaults_; }
    // Adds a group (options default to the optimizer's defaults; its state starts empty).
    void add_param_group(ParamGroup group);

    // The state of one parameter (empty until its first step, except Adagrad's).
    ParamState& state(size_t group, size_t index) { return state_.at(group).at(index); }

    // Deep copies (later steps do not change a saved dict).
    OptimizerStateDict state_dict() const;
    // Groups must match in number and sizes (throws Error naming the mismatch). Options are
    // replaced by the saved ones; state tensors are copied and converted to the parameter's
    // dtype (except "step").
    void load_state_dict(const OptimizerStateDict& dict);

  protected:
    Optimizer(std::vector<ParamGroup> groups, Options defaults);
    // Updates the parameters of one group that have a gradient; `state` is parallel to params.
    virtual void step_group(ParamGroup& group, std::vector<ParamState>& state) = 0;
    // Optimizers whose state exists before the first step (Adagrad) fill it here.
    virtual void init_state(const ParamGroup&, const Tensor&, ParamState&) {}
    // Validates a group's options (throws Error with PyTorch's message).
    virtual void check_options(const Options&) const {}
    // Call at the end of a derived constructor (virtuals are not available in the base's).
    void finish_construction();

    static double get(const Options& options, const char* key);
    // Where step_group's update of `param` writes its statistics this step: a Float64 [5] row
    // (Σg², Σ|g|, max|g|, Σw², Σ(Δw)²) on param's device; undefined when not collecting. step()
    // reads every row back at once, after the whole step, into step_stats().
    Tensor stats_row(const Tensor& param);
    // Whether this step gathers only grad_squares (collect_step_stats(true, false)).
    bool stats_grad_squares_only() const { return !collect_magnitudes_; }

  private:
    std::vector<ParamGroup> groups_;
    std::vector<std::vector<ParamState>> state_;
    Options defaults_;
    bool collect_stats_ = false;
    bool collect_magnitudes_ = true;
    std::unordered_map<const void*, StepStats> stats_; // by parameter impl, the last step's
    // This step's rows: one table on the first parameter's device (a parameter elsewhere gets
    // a row of its own), and which parameter each row is.
    struct StatsRow {
        const void* param;
        int64_t count;
        int64_t table_row; // -1: its own row
        Tensor own_row;
    };
    void publish_stats();
    Tensor stats_table_;
    int64_t stats_rows_used_ = 0;
    std::vector<StatsRow> pending_stats_;
};

} // namespace myelin::optim
