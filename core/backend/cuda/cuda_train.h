#pragma once
// The CUDA backend's training table (train_kernels.h), on own kernels (cuda_train.cu) over the
// element and row functions the CPU runs (kernels/optim_update.h, class_loss.h, class_scores.h,
// dropout.h): optimizer updates one thread per element (compiled without FMA contraction, as the
// CPU's); the trainer's statistics as per-block sums in double added in block order by one
// thread into the caller's device row (deterministic, nothing read back); gradient norms the
// same, added on the host; class losses one thread per row with the totals added by one thread in
// row order; classifier scores one thread per row; dropout from the same counter-based stream
// (the CPU's mask bit for bit). Scratch
// memory comes from the device's caching allocator. Not run here (no GPU).
#include "backend/train_kernels.h"

namespace myelin::backend::cuda {

class CudaTrainKernels final : public TrainKernels {
  public:
    explicit CudaTrainKernels(Backend& device) : device_(device) {}

    void sgd_step(const SgdStep& a, const View& w, const View& g, const View* momentum,
                  const UpdateStatsOut* stats) override;
    void adam_step(const AdamStep& a, const View& w, const View& g, const View& exp_avg,
                   const View& exp_avg_sq, const View* max_exp_avg_sq,
                   const UpdateStatsOut* stats) override;
    void rmsprop_step(const RmspropStep& a, const View& w, const View& g, const View& square_avg,
                      const View* grad_avg, const View* momentum,
                      const UpdateStatsOut* stats) override;
    void adagrad_step(const AdagradStep& a, const View& w, const View& g, const View& sum,
                      const UpdateStatsOut* stats) override;
    void class_loss_forward(const ClassLossGeometry& p, const View& x, const View& target,
                            const View* weight, const View& out, const View& lse,
                            const View& denominators) override;
    void class_loss_backward(const ClassLossGeometry& p, const View& x, const View& target,
                             const View* weight, const View& lse, const View& denominators,
                             const View& grad_out, const View& grad_x) override;
    void class_scores(const View& x, const View& target, const View& out) override;
    void dropout_forward(uint64_t seed, double p, const View& x, const View& out,
                         const View& mask) override;
    void dropout_backward(uint64_t seed, double p, const View& grad, const View& mask,
                          const View& grad_x) override;
    void norm_accumulate(const View& x, double p, const View& out) override;
    void scale_(const View& x, double scale) override;

  private:
    Backend& device_;
};

} // namespace myelin::backend::cuda
