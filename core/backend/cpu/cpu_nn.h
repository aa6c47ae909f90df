#pragma once
// The CPU backend's NN kernels (nn_kernels.h): convolution on oneDNN primitives cached by shape,
// with float64 (and geometries oneDNN cannot run) on reference loops that accumulate in double
// (cpu_conv.cpp); pooling on plain nchw loops with AVX-512 paths for the 2x2 max pool
// (cpu_pool.cpp); normalisation with statistics in double (cpu_norm.cpp); whole recurrent layers
// (cpu_recurrent.cpp), attention heads (cpu_attention.cpp) and oneDNN matmuls (cpu_matmul.cpp).
#include "backend/nn_kernels.h"

#include <cstddef>

namespace myelin::backend {

class CpuNnKernels final : public NnKernels {
  public:
    // cpu_conv.cpp
    void conv_forward(const ConvGeometry& g, const View& x, const View& w, const View* bias,
                      const View& y) override;
    void conv_backward_data(const ConvGeometry& g, const View& grad_y, const View& w,
                            const View& grad_x) override;
    void conv_backward_weights(const ConvGeometry& g, const View& x, const View& grad_y,
                               const View& grad_w, const View* grad_bias) override;
    void conv_backward(const ConvGeometry& g, const View& x, const View& w, const View& grad_y,
                       const View* grad_x, const View* grad_w, const View* grad_bias) override;
    bool conv_relu_fused(const ConvGeometry& g, bool has_bias) override;
    void conv_relu_forward(const ConvGeometry& g, const View& x, const View& w, const View* bias,
                           const View& y) override;
    void conv_relu_backward(const ConvGeometry& g, const View& x, const View& w, const View& y,
                            const View& grad_y, const View* grad_x, const View* grad_w,
                            const View* grad_bias) override;
    bool conv_relu_pool_fused(const ConvGeometry& g, bool has_bias, const PoolGeometry& p) override;
    void conv_relu_pool_forward(const ConvGeometry& g, const PoolGeometry& p, const View& x,
                                const View& w, const View* bias, const View& pooled,
                                const View& codes) override;
    void conv_relu_pool_backward(const ConvGeometry& g, const PoolGeometry& p, const View& x,
                                 const View& w, const View& pooled, const View& codes,
                                 const View& grad_pooled, const View* grad_x, const View* grad_w,
                                 const View* grad_bias) override;

    // cpu_pool.cpp
    bool max_pool_uses_codes(const PoolGeometry& g) const override;
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

    // cpu_norm.cpp
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

    // cpu_recurrent.cpp
    void recurrent_forward(const RecurrentGeometry& g, const RecurrentWeights& w,
                           const RecurrentForwardArgs& a, const RecurrentSaved& saved) override;
    void recurrent_backward(const RecurrentGeometry& g, const RecurrentWeights& w,
                            const RecurrentSaved& saved, const RecurrentBackwardArgs& a) override;

    // cpu_attention.cpp
    void head_gemm(const HeadGemmGeometry& g, const HeadOperand& a, const HeadOperand& b,
                   const HeadResult& c) override;
    void attention_softmax(DType dtype, const void* scores, int64_t rows, int64_t S, void* P,
                           const kernels::DropoutStream* drop, void* attn, uint8_t* keep) override;
    void attention_softmax_backward(DType dtype, const void* P, const void* dattn, int64_t rows,
                                    int64_t S, const kernels::DropoutStream* drop,
                                    const uint8_t* keep, void* dS) override;

    // cpu_matmul.cpp
    bool matmul(const MatmulGeometry& g, const MatmulOperand& a, const MatmulOperand& b,
                const void* bias, void* y) override;
};

// Host scratch memory from the CPU backend's allocator (the caching allocator for large blocks).
class HostScratch {
  public:
    explicit HostScratch(size_t bytes);
    ~HostScratch();
    HostScratch(const HostScratch&) = delete;
    HostScratch& operator=(const HostScratch&) = delete;
    void* data() const { return data_; }

  private:
    void* data_ = nullptr;
    size_t bytes_ = 0;
};

} // namespace myelin::backend
