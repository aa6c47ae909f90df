#pragma once
// SGD, Adam, AdamW, RMSprop, Adagrad: PyTorch 1.13's single-tensor (foreach=False) update
// formulas in the same order of operations, each step one fused loop per parameter over float32
// (or float64) data. Options structs hold PyTorch's defaults; a ParamGroup may override any of
// them by name ("lr", "momentum", "beta1", "amsgrad", ...).
#include <myelin/optim/optimizer.h>
#include <myelin/optim/option_field.h>

#include <array>

namespace myelin::optim {

// Each options struct lists its `fields` (optim/option_field.h): to_map(), the project file's
// optimizer options, the CLI's and the studio's descriptions (spec::OptimizerKind::options) and
// reading a project's options into the typed struct all follow from them.
struct SGDOptions {
    // PyTorch 1.13 requires an lr for SGD (2.x defaults to 1e-3); the studio has offered 1e-2.
    double lr = 1e-2;
    double momentum = 0.0;
    double dampening = 0.0;
    double weight_decay = 0.0;
    bool nesterov = false;
    bool maximize = false;
    static const std::array<OptionField<SGDOptions>, 6> fields;
    Options to_map() const { return options_map(*this); }
};

class SGD final : public Optimizer {
  public:
    SGD(std::vector<Tensor> params, const SGDOptions& options);
    SGD(std::vector<ParamGroup> groups, const SGDOptions& options);
    const char* name() const override { return "SGD"; }
    bool supports_step_stats() const override { return true; }

  protected:
    void step_group(ParamGroup& group, std::vector<ParamState>& state) override;
    void check_options(const Options& options) const override;
};

struct AdamOptions {
    double lr = 1e-3;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double weight_decay = 0.0; // Adam: L2 added to the gradient; AdamW: decoupled
    bool amsgrad = false;
    bool maximize = false;
    static const std::array<OptionField<AdamOptions>, 7> fields;
    Options to_map() const { return options_map(*this); }
};

class Adam : public Optimizer {
  public:
    Adam(std::vector<Tensor> params, const AdamOptions& options = {});
    Adam(std::vector<ParamGroup> groups, const AdamOptions& options = {});
    const char* name() const override { return "Adam"; }
    bool supports_step_stats() const override { return true; }

  protected:
    Adam(std::vector<ParamGroup> groups, const AdamOptions& options, bool decoupled);
    void step_group(ParamGroup& group, std::vector<ParamState>& state) override;
    void check_options(const Options& options) const override;

  private:
    bool decoupled_ = false;
};

// AdamOptions with PyTorch's AdamW default weight_decay = 1e-2.
inline AdamOptions adamw_defaults() {
    AdamOptions o;
    o.weight_decay = 1e-2;
    return o;
}

class AdamW final : public Adam {
  public:
    AdamW(std::vector<Tensor> params, const AdamOptions& options = adamw_defaults());
    AdamW(std::vector<ParamGroup> groups, const AdamOptions& options = adamw_defaults());
    const char* name() const override { return "AdamW"; }
};

struct RMSpropOptions {
    double lr = 1e-2;
    double alpha = 0.99;
    double eps = 1e-8;
    double weight_decay = 0.0;
    double momentum = 0.0;
    bool centered = false;
    bool maximize = false;
    static const std::array<OptionField<RMSpropOptions>, 7> fields;
    Options to_map() const { return options_map(*this); }
};

class RMSprop final : public Optimizer {
  public:
    RMSprop(std::vector<Tensor> params, const RMSpropOptions& options = {});
    RMSprop(std::vector<ParamGroup> groups, const RMSpropOptions& options = {});
    const char* name() const override { return "RMSprop"; }
    bool supports_step_stats() const override { return true; }

  protected:
    void step_group(ParamGroup& group, std::vector<ParamState>& state) override;
    void check_options(const Options& options) const override;
};

struct AdagradOptions {
    double lr = 1e-2;
    double lr_decay = 0.0;
    double weight_decay = 0.0;
    double initial_accumulator_value = 0.0;
    double eps = 1e-10;
    bool maximize = false;
    static const std::array<OptionField<AdagradOptions>, 6> fields;
    Options to_map() const { return options_map(*this); }
};

class Adagrad final : public Optimizer {
  public:
    Adagrad(std::vector<Tensor> params, const AdagradOptions& options = {});
    Adagrad(std::vector<ParamGroup> groups, const AdagradOptions& options = {});
    const char* name() const override { return "Adagrad"; }
    bool supports_step_stats() const override { return true; }

  protected:
    void step_group(ParamGroup& group, std::vector<ParamState>& state) override;
    void init_state(const ParamGroup& group, const Tensor& param, ParamState& state) override;
    void check_options(const Options& options) const override;
};

} // namespace myelin::optim
