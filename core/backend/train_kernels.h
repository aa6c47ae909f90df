#pragma once
// A device's training-kernel table, beside the primitives (backend.h) and the NN kernels
// (nn_kernels.h): the fused optimizer updates (with the statistics the trainer records per
// parameter), the class-index losses (cross-entropy / NLL with class weights, label smoothing and
// ignore_index), dropout from a counter-based stream and the per-gradient norms of
// clip_grad_norm_. The front ends (optim/, nn/loss.cpp, nn/functional.cpp) check, allocate and
// record autograd; they hand the table contiguous `View`s and never touch a pointer, so training
// runs on a device whose memory the host cannot read. The arithmetic lives once in
// kernels/optim_update.h, kernels/class_loss.h and kernels/dropout.h (MYELIN_HD), so the CPU
// tests cover the math the CUDA kernels run.
#include "backend/backend.h"
#include "backend/primitives.h"

#include <cstdint>

namespace myelin::backend {

// Where an update writes the statistics the trainer records for its parameter (optim::StepStats,
// whose header backend/ cannot include) when the caller asks for them: `sums`, a contiguous
// Float64 [5] view in the device's memory: Σg², Σ|g|, max |g|, Σw² before the step and
// Σ(w_after − w_before)², in double (a non-finite gradient shows in Σg²). With
// `grad_squares_only` only Σg² is asked for (a kernel may fill the rest anyway). On a GPU they
// stay there until the optimizer reads every parameter's at once, after the whole step: the step
// never waits for the device parameter by parameter.
struct UpdateStatsOut {
    View sums;
    bool grad_squares_only = false;
};

// The optimizers' scalars in double, as the front end computes them (PyTorch's Python float
// math); a float32 kernel rounds each to float once, as PyTorch's CPU kernels do.
struct SgdStep {
    double lr = 0.0, momentum = 0.0, dampening_c = 1.0, weight_decay = 0.0;
    bool nesterov = false, maximize = false, first = false; // first: the buffer starts as d
};
struct AdamStep {
    double beta1 = 0.0, one_minus_beta1 = 0.0, beta2 = 0.0, one_minus_beta2 = 0.0, eps = 0.0,
           weight_decay = 0.0, decay_factor = 1.0, bias_correction2_sqrt = 1.0, neg_step_size = 0.0;
    bool decoupled = false, amsgrad = false, maximize = false;
};
struct RmspropStep {
    double alpha = 0.0, one_minus_alpha = 0.0, eps = 0.0, weight_decay = 0.0, momentum = 0.0,
           neg_lr = 0.0;
    bool centered = false, maximize = false;
};
struct AdagradStep {
    double weight_decay = 0.0, eps = 0.0, neg_clr = 0.0;
    bool maximize = false;
};

// A class-index loss over x [N, C, S...] seen as rows r = n * S + s of C classes (stride S).
struct ClassLossGeometry {
    int64_t n = 1, c = 1, s = 1;
    bool logits = true; // cross_entropy (logits) or nll_loss (log-probabilities)
    double smoothing = 0.0;
    int64_t ignore_index = -100;
    int reduction = 1; // 0 none, 1 mean, 2 sum
    int64_t rows() const { return n * s; }
};

class TrainKernels {
  public:
    virtual ~TrainKernels() = default;

    // Optimizer updates in place. w (the parameter), g (its gradient) and the state views are
    // contiguous, of one dtype (Float32 or Float64) and one numel; a null state view is an absent
    // buffer. `stats`, when not null, says where to write the update's statistics.
    virtual void sgd_step(const SgdStep& a, const View& w, const View& g, const View* momentum,
                          const UpdateStatsOut* stats) = 0;
    virtual void adam_step(const AdamStep& a, const View& w, const View& g, const View& exp_avg,
                           const View& exp_avg_sq, const View* max_exp_avg_sq,
                           const UpdateStatsOut* stats) = 0;
    virtual void rmsprop_step(const RmspropStep& a, const View& w, const View& g,
                              const View& square_avg, const View* grad_avg, const View* momentum,
                              const UpdateStatsOut* stats) = 0;
    virtual void adagrad_step(const AdagradStep& a, const View& w, const View& g, const View& sum,
                              const UpdateStatsOut* stats) = 0;

    // Class-index cross-entropy / NLL. x: contiguous [N, C, S...] (Float32/64), target: Int64
    // [rows] (entries checked), weight: [C] of x's dtype or null. out: [rows] (reduction none) or
    // a scalar; lse: Float64 [rows] (the rows' log-sum-exp, logits only); denominators: Float64
    // [2] (the mean's denominators: Σ target weights, twice).
    virtual void class_loss_forward(const ClassLossGeometry& p, const View& x, const View& target,
                                    const View* weight, const View& out, const View& lse,
                                    const View& denominators) = 0;
    // grad_x (x's shape) from the upstream gradient grad_out (out's shape).
    virtual void class_loss_backward(const ClassLossGeometry& p, const View& x, const View& target,
                                     const View* weight, const View& lse, const View& denominators,
                                     const View& grad_out, const View& grad_x) = 0;

    // Classifier scores (kernels/class_scores.h), for the training metrics of a run whose
    // logits stay on the device: x [N, C] contiguous (Float32/64), target Int64 [N] in [0, C);
    // out Int64 [N, 2]: each row's predicted class and how many classes rank above its target.
    virtual void class_scores(const View& x, const View& target, const View& out) = 0;

    // Dropout (kernels/dropout.h) over contiguous x / out (Float32/64) and a UInt8 mask.
    virtual void dropout_forward(uint64_t seed, double p, const View& x, const View& out,
                                 const View& mask) = 0;
    virtual void dropout_backward(uint64_t seed, double p, const View& grad, const View& mask,
                                  const View& grad_x) = 0;

    // Σ|x|^p over a contiguous Float32/64 x in double (p = 2: squares, 1: abs, 0: non-zeros,
    // +inf: max |x| with NaN propagated), written to `out` (one Float64 element on x's device):
    // a device keeps it there, so a caller that needs many (clip_grad_norm_'s per-gradient
    // norms, the gradient monitor's per-layer sums) reads them all with one wait.
    virtual void norm_accumulate(const View& x, double p, const View& out) = 0;
    // x *= scale in x's dtype (float32: the scale rounded to float first), in place.
    virtual void scale_(const View& x, double scale) = 0;
};

// The backend's training table for primitive `p` on `dtype`; throws DeviceError naming the
// op, the dtype and the device when it has none or does not support it.
TrainKernels& train_kernels(Backend& backend, Primitive p, DType dtype);

} // namespace myelin::backend
