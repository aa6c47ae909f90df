#pragma once
// Loss scaling for float16 training, as torch.cuda.amp.GradScaler (PyTorch 2.x): the loss is
// multiplied by a scale before backward so small float16 gradients do not flush to zero; the
// gradients are divided by it before the optimizer step, a step whose gradients hold inf/NaN
// is skipped, and the scale follows the overflows: times backoff_factor after a skipped step,
// times growth_factor after growth_interval finite steps in a row. The scale is a float32, as
// torch's; the logic is host code and device-agnostic (the gradients may live on any device).
//
//     Tensor loss = scaler.scale(loss_fn(model(x), y));
//     loss.backward();
//     scaler.unscale_(opt);        // optional: before clipping gradients
//     scaler.step(opt);            // skipped when a gradient is inf/NaN
//     scaler.update();
#include <myelin/optim/optimizer.h>
#include <myelin/tensor.h>

#include <cstdint>
#include <map>
#include <string>

namespace myelin::optim {

struct GradScalerOptions {
    double init_scale = 65536.0; // 2^16
    double growth_factor = 2.0;
    double backoff_factor = 0.5;
    int64_t growth_interval = 2000;
    bool enabled = true; // false: every call passes through (scale 1, steps always taken)
};

class GradScaler {
  public:
    explicit GradScaler(const GradScalerOptions& options = {});

    // loss * scale (the loss itself when disabled).
    Tensor scale(const Tensor& loss) const;
    // Divides the gradients of the optimizer's parameters by the scale, in place, and records
    // whether any is inf/NaN. Once per optimizer between update()s.
    void unscale_(Optimizer& optimizer);
    // Unscales if not done yet, then steps the optimizer unless a gradient was inf/NaN.
    // Returns whether the optimizer stepped.
    bool step(Optimizer& optimizer);
    // Adjusts the scale from this iteration's steps (backoff on inf/NaN, growth after
    // growth_interval finite ones) and starts the next iteration.
    void update();

    // Whether unscale_() found an inf/NaN gradient of `optimizer` this iteration (its step() will
    // be skipped); false before unscale_() and when disabled.
    bool found_inf(const Optimizer& optimizer) const;
    double get_scale() const; // 1.0 when disabled
    int64_t growth_tracker() const { return growth_tracker_; }
    bool is_enabled() const { return options_.enabled; }

    // torch's keys: scale, growth_factor, backoff_factor, growth_interval, _growth_tracker
    // (empty when disabled, as torch's).
    std::map<std::string, double> state_dict() const;
    void load_state_dict(const std::map<std::string, double>& state);

  private:
    struct PerOptimizer {
        bool unscaled = false;
        bool stepped = false;
        bool found_inf = false;
    };

    GradScalerOptions options_;
    float scale_;
    int64_t growth_tracker_ = 0;
    std::map<const Optimizer*, PerOptimizer> iteration_;
};

} // namespace myelin::optim
