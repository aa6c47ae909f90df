#pragma once
// The CPU backend's training table (train_kernels.h): optimizer updates (cpu_train.cpp, no FMA
// contraction), class losses, dropout and gradient norms (cpu_train_loss.cpp).
#include "backend/train_kernels.h"

namespace myelin::backend {

class CpuTrainKernels final : public TrainKernels {
  public:
    // cpu_train.cpp
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

    // cpu_train_loss.cpp
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
};

} // namespace myelin::backend
