#pragma once
// The CUDA backend's NN kernels (nn_kernels.h), built when cuDNN's headers and library are found
// (MYELIN_CUDNN): convolutions on cuDNN (cuda_nn.cpp: the legacy API, algorithm chosen per
// shape by cuDNN's heuristics and cached, workspace from the device's caching allocator, TF32 off
// unless allowed, deterministic algorithms on request; under float16 autocast half convolutions
// on tensor cores, ConvGeometry::f16); pooling and normalisation on own kernels
// (cuda_nn.cu) that follow the CPU loops' rules exactly (PyTorch's windows, ceil_mode, dilation,
// divisor_override, first-maximum ties and NaN; statistics in double), as PyTorch's own CUDA
// kernels do where cuDNN's pooling and batch norm differ. Not run here (no GPU).
#include "backend/nn_kernels.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace myelin::backend::cuda {

class CudaNnKernels final : public NnKernels {
  public:
    explicit CudaNnKernels(Backend& device);
    ~CudaNnKernels() override;

    // cuda_nn.cpp
    void conv_forward(const ConvGeometry& g, const View& x, const View& w, const View* bias,
                      const View& y) override;
    void conv_backward_data(const ConvGeometry& g, const View& grad_y, const View& w,
                            const View& grad_x) override;
    void conv_backward_weights(const ConvGeometry& g, const View& x, const View& grad_y,
                               const View& grad_w, const View* grad_bias) override;
    // TF32 tensor-core math in float32 convolutions (off: as exact as PyTorch's with
    // torch.backends.cudnn.allow_tf32 = False); deterministic algorithms only (bit-identical
    // reruns, as torch.backends.cudnn.deterministic).
    void set_allow_tf32(bool allow);
    void set_deterministic(bool deterministic);

    // cuda_nn.cu (through the launch_* functions below)
    void max_pool_forward(const PoolGeometry& g, const View& x, const View& y, const View* indices,
                          const View* codes) override;
    void max_pool_backward(const PoolGeometry& g, const View& grad_y, const View* indices,
                           const View* codes, const View& grad_x) override;
    void avg_pool_forward(const PoolGeometry& g, AvgDivisor d, const View& x,
                          const View& y) override;
    void avg_pool_backward(const PoolGeometry& g, AvgDivisor d, const View& grad_y,
                           const View& grad_x) override;
    void adaptive_avg_pool_forward(const PoolGeometry& g, const View& x, const View& y) override;
    void adaptive_avg_pool_backward(const PoolGeometry& g, const View& grad_y,
                                    const View& grad_x) override;
    void batch_norm_stats(const BatchNormGeometry& g, const View& x, const View& mean,
                          const View& var) override;
    void batch_norm_forward(const BatchNormGeometry& g, const View& x, const View* w, const View* b,
                            const View& mean, const View& rstd, const View& y) override;
    void batch_norm_backward(const BatchNormGeometry& g, const View& x, const View* w,
                             const View& grad_y, const View& mean, const View& rstd,
                             bool batch_stats, const View* grad_x, const View* grad_w,
                             const View* grad_b) override;
    void row_norm_forward(const RowNormGeometry& g, const View& x, const View* w, const View* b,
                          double eps, const View& y, const View& mean, const View& rstd) override;
    void row_norm_backward_input(const RowNormGeometry& g, const View& x, const View* w,
                                 const View& grad_y, const View& mean, const View& rstd,
                                 const View& grad_x) override;
    void row_norm_backward_affine(const RowNormGeometry& g, const View& x, const View& grad_y,
                                  const View& mean, const View& rstd, const View& grad_w,
                                  const View& grad_b) override;

    // cuda_sequence.cu: recurrent layers (per step one cuBLAS GEMM and one fused cell kernel)
    // and attention heads (strided-batched cuBLAS GEMMs, a softmax with dropout fused).
    void recurrent_forward(const RecurrentGeometry& g, const RecurrentWeights& w,
                           const RecurrentForwardArgs& a, const RecurrentSaved& saved) override;
    void recurrent_backward(const RecurrentGeometry& g, const RecurrentWeights& w,
                            const RecurrentSaved& saved, const RecurrentBackwardArgs& a) override;
    void head_gemm(const HeadGemmGeometry& g, const HeadOperand& a, const HeadOperand& b,
                   const HeadResult& c) override;
    void attention_softmax(DType dtype, const void* scores, int64_t rows, int64_t S, void* P,
                           const kernels::DropoutStream* drop, void* attn, uint8_t* keep) override;
    void attention_softmax_backward(DType dtype, const void* P, const void* dattn, int64_t rows,
                                    int64_t S, const kernels::DropoutStream* drop,
                                    const uint8_t* keep, void* dS) override;

  private:
    struct ConvPlan; // cuDNN descriptors and the chosen algorithms of one geometry
    std::shared_ptr<ConvPlan> plan(const ConvGeometry& g, DType dtype);
    void* handle(); // cudnnHandle_t, created on first use

    Backend& device_;
    void* cudnn_ = nullptr;
    bool allow_tf32_ = false;
    bool deterministic_ = false;
    std::mutex mutex_;
    std::map<std::vector<int64_t>, std::shared_ptr<ConvPlan>> plans_;
};

// cuda_nn.cu: pooling and normalisation launches on the default stream (float32 / float64).
void launch_max_pool_forward(const PoolGeometry& g, const View& x, const View& y,
                             const View* indices);
void launch_max_pool_backward(const PoolGeometry& g, const View& grad_y, const View& indices,
                              const View& grad_x);
void launch_avg_pool_forward(const PoolGeometry& g, AvgDivisor d, bool adaptive, const View& x,
                             const View& y);
void launch_avg_pool_backward(const PoolGeometry& g, AvgDivisor d, bool adaptive,
                              const View& grad_y, const View& grad_x);
void launch_batch_norm_stats(const BatchNormGeometry& g, const View& x, const View& mean,
                             const View& var);
void launch_batch_norm_forward(const BatchNormGeometry& g, const View& x, const View* w,
                               const View* b, const View& mean, const View& rstd, const View& y);
void launch_batch_norm_backward(const BatchNormGeometry& g, const View& x, const View* w,
                                const View& grad_y, const View& mean, const View& rstd,
                                bool batch_stats, const View* grad_x, const View* grad_w,
                                const View* grad_b);
void launch_row_norm_forward(const RowNormGeometry& g, const View& x, const View* w, const View* b,
                             double eps, const View& y, const View& mean, const View& rstd);
void launch_row_norm_backward_input(const RowNormGeometry& g, const View& x, const View* w,
                                    const View& grad_y, const View& mean, const View& rstd,
                                    const View& grad_x);
void launch_row_norm_backward_affine(const RowNormGeometry& g, const View& x, const View& grad_y,
                                     const View& mean, const View& rstd, const View& grad_w,
                                     const View& grad_b);

} // namespace myelin::backend::cuda
