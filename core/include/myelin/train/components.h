#pragma once
// Builds the choosable parts of a training spec — losses, optimizers, LR schedules — from a
// spec::Choice whose kind and options spec/components.h describes.
#include <myelin/spec/components.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace myelin {
class Tensor;
namespace nn {
class Loss;
}
namespace optim {
class Optimizer;
class LRScheduler;
class ReduceLROnPlateau;
struct ParamGroup;
struct SchedulerState;
} // namespace optim
} // namespace myelin

namespace myelin::train {

// Options missing from `choice` take their defaults. Throws myelin::Error for unknown kinds or
// invalid options (messages name the option). `context` is the data and model the loss runs on:
// class weights by name need the data's class names (Trainer::loss_context()).
std::shared_ptr<nn::Loss> make_loss(const spec::Choice& choice,
                                    const spec::LossContext& context = {});
std::unique_ptr<optim::Optimizer> make_optimizer(const spec::Choice& choice,
                                                 std::vector<optim::ParamGroup> groups);

// An LR schedule of either family: epoch/step-driven (LRScheduler, optionally after a linear
// warmup) or metric-driven (ReduceLROnPlateau).
class Schedule {
  public:
    // `steps` = how many times step() will run over the whole training (epochs, or optimizer
    // steps when the interval is "step"): OneCycleLR and CosineAnnealingLR's default T_max use it.
    Schedule(const spec::Choice& choice, optim::Optimizer& optimizer, int64_t steps);
    ~Schedule();
    Schedule(const Schedule&) = delete;
    Schedule& operator=(const Schedule&) = delete;

    bool needs_metric() const { return plateau_ != nullptr; }
    void step(std::optional<double> metric = std::nullopt); // metric required when needs_metric
    // The lr of group 0 after `step` steps, without side effects; nullopt for ReduceLROnPlateau.
    std::optional<double> lr_at(int64_t step) const;
    // The first step after `after` where the schedule's formula starts a new piece
    // (LRScheduler::next_corner, warmup included); nullopt for ReduceLROnPlateau.
    std::optional<int64_t> next_corner(int64_t after) const;
    optim::SchedulerState state_dict() const;
    void load_state_dict(const optim::SchedulerState& state);
    const std::string& kind() const { return kind_; }

  private:
    std::string kind_;
    std::shared_ptr<optim::LRScheduler> scheduler_;
    std::unique_ptr<optim::ReduceLROnPlateau> plateau_;
};

// Whether the project's schedule steps after every optimizer step (interval "step"; the
// metric-driven ReduceLROnPlateau always steps once per epoch, after validation).
bool schedules_per_step(const spec::TrainSpec& spec);
// How many times Schedule::step() runs over the whole training: optimizer steps when it
// schedules per step, else epochs.
int64_t schedule_steps(const spec::TrainSpec& spec, int64_t steps_per_epoch);

// An optimizer over one stand-in scalar parameter, for what only reads its options: the LR
// preview, and checking optimizer and scheduler options without a model. Throws as
// make_optimizer does.
std::unique_ptr<optim::Optimizer> make_preview_optimizer(const spec::Choice& optimizer);

// The learning rate (group 0) of a schedule over `steps` steps, at steps 0, stride, 2 stride, …
// (every step by default), computed on a preview optimizer: what the studio's LR preview plots.
// Empty for ReduceLROnPlateau.
std::vector<double> preview_lr(const spec::Choice& optimizer, const spec::Choice& scheduler,
                               int64_t steps, int64_t stride = 1);

} // namespace myelin::train
