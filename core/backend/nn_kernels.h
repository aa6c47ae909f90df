#pragma once
// The neural-network kernels of one device, beside the primitive table (backend.h): convolution,
// pooling and normalisation, forward and backward. nn/ keeps the geometry, the shape checks and
// the autograd records; a backend only runs these kernels over contiguous nchw Views described by
// the plain geometry structs below. Which entries a backend runs on which dtype is its
// supports(Primitive, dtype) (primitives.h names them), so an op it cannot run fails by name.
#include "backend/backend.h"
#include "backend/sequence_kernels.h"

#include <cstdint>

namespace myelin::backend {

// One 2-D convolution y = conv(x, w): x [N, C, H, W], w [O, C/G, KH, KW], bias [O],
// y [N, O, OH, OW]. conv1d is H = 1; conv_transpose2d runs this convolution backwards (its
// forward is backward-data). Right padding is whatever makes the output size exact: negative for
// a transposed convolution whose output_padding exceeds its padding.
struct ConvGeometry {
    int64_t N, C, H, W, O, KH, KW, OH, OW;
    int64_t sh, sw, dh, dw, ph, pw, G;
    bool bf16 = false; // float32 operands multiplied in bfloat16 (autocast), accumulated in float32
    // float32 operands multiplied in float16 (float16 autocast off the CPU, on a device that
    // supports(ConvForward, Float16): CUDA's cuDNN half convolutions on tensor cores, whose
    // outputs come back rounded to float16 as PyTorch's do, here before the bias is added in
    // float32), accumulated in float32. The CPU's kernels take it as the float32 kernels on
    // operands rounded to float16.
    bool f16 = false;
    int64_t phr() const { return (OH - 1) * sh + (KH - 1) * dh + 1 - H - ph; }
    int64_t pwr() const { return (OW - 1) * sw + (KW - 1) * dw + 1 - W - pw; }
    // Whether padding ph / pw on both sides gives exactly OH x OW (what libraries that pad
    // symmetrically, as cuDNN's legacy API, compute). Not so for padding='same' with an even
    // dilated kernel or a transposed convolution with output_padding >= stride.
    bool symmetric_padding() const {
        const int64_t eh = (KH - 1) * dh + 1, ew = (KW - 1) * dw + 1;
        return H + 2 * ph >= eh && W + 2 * pw >= ew && (H + 2 * ph - eh) / sh + 1 == OH &&
               (W + 2 * pw - ew) / sw + 1 == OW;
    }
};

// A 2-D pool over `planes` planes of H x W (N * C for nchw), output OH x OW. Adaptive pools use
// only planes, H, W, OH and OW.
struct PoolGeometry {
    int64_t planes, H, W, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw;
};

// How an average pool divides: by the window's size with or without padding, or by a fixed
// divisor_override (when not 0).
struct AvgDivisor {
    bool count_include_pad = true;
    int64_t override_by = 0;
};

// Batch norm: x seen as [N, C, S] (S: the product of the spatial dims).
struct BatchNormGeometry {
    int64_t N, C, S;
};

// Layer and group norm: x seen as R rows of D elements, each normalised on its own. The affine
// parameter of element j of row r is j (layer norm, groups == 0) or (r % groups) * group_channels
// + j / spatial (group norm: a row is one sample's group of channels, each of `spatial` values).
struct RowNormGeometry {
    int64_t R, D;
    int64_t groups = 0;
    int64_t group_channels = 0;
    int64_t spatial = 1;
};

class NnKernels {
  public:
    virtual ~NnKernels() = default;

    // Convolution (float32 or float64 Views, all contiguous). A null bias / grad_bias: none.
    virtual void conv_forward(const ConvGeometry& g, const View& x, const View& w, const View* bias,
                              const View& y) = 0;
    virtual void conv_backward_data(const ConvGeometry& g, const View& grad_y, const View& w,
                                    const View& grad_x) = 0;
    virtual void conv_backward_weights(const ConvGeometry& g, const View& x, const View& grad_y,
                                       const View& grad_w, const View* grad_bias) = 0;
    // Both backward passes of one convolution (grad_x, or grad_w and grad_bias, may be null): a
    // backend may share work between them (the CPU's oneDNN reorders grad_y once).
    virtual void conv_backward(const ConvGeometry& g, const View& x, const View& w,
                               const View& grad_y, const View* grad_x, const View* grad_w,
                               const View* grad_bias);
    // A convolution followed by ReLU, fused where conv_relu_fused(g) (float32 Views): forward
    // writes y = relu(conv(x)), the same bits as conv_forward then ReLU; backward takes the
    // gradient of that y and applies ReLU's backward (grad_y where y > 0, else 0) on its way into
    // both convolution passes, the same bits as ReLU's backward then conv_backward.
    virtual bool conv_relu_fused(const ConvGeometry&, bool /*has_bias*/) { return false; }
    virtual void conv_relu_forward(const ConvGeometry& g, const View& x, const View& w,
                                   const View* bias, const View& y);
    virtual void conv_relu_backward(const ConvGeometry& g, const View& x, const View& w,
                                    const View& y, const View& grad_y, const View* grad_x,
                                    const View* grad_w, const View* grad_bias);

    // Convolution, ReLU and a max pool whose window codes the backend keeps
    // (max_pool_uses_codes), fused where conv_relu_pool_fused (float32 Views; p pools the
    // convolution's output): forward writes the pool's output, the same bits as conv_relu_forward
    // then max_pool_forward, and `codes` (UInt8, the pooled output's size, in a layout of the
    // backend's choosing: what its backward needs), and the activation between them is never a
    // tensor; backward takes the gradient of the pooled output with the pooled output and codes,
    // the same bits as max_pool_backward then conv_relu_backward.
    virtual bool conv_relu_pool_fused(const ConvGeometry&, bool /*has_bias*/, const PoolGeometry&) {
        return false;
    }
    virtual void conv_relu_pool_forward(const ConvGeometry& g, const PoolGeometry& p, const View& x,
                                        const View& w, const View* bias, const View& pooled,
                                        const View& codes);
    virtual void conv_relu_pool_backward(const ConvGeometry& g, const PoolGeometry& p,
                                         const View& x, const View& w, const View& pooled,
                                         const View& codes, const View& grad_pooled,
                                         const View* grad_x, const View* grad_w,
                                         const View* grad_bias);

    // Max pool. A backend keeps what its backward needs in `indices` (Int64, PyTorch's flat
    // per-plane positions, y's shape) or, where max_pool_uses_codes(g), in `codes` (UInt8, one
    // window code per output: the CPU's 2x2 / stride-2 path). indices may be given with codes
    // (max_pool2d_with_indices) and is then written too.
    virtual bool max_pool_uses_codes(const PoolGeometry& g) const {
        (void)g;
        return false;
    }
    virtual void max_pool_forward(const PoolGeometry& g, const View& x, const View& y,
                                  const View* indices, const View* codes) = 0;
    virtual void max_pool_backward(const PoolGeometry& g, const View& grad_y, const View* indices,
                                   const View* codes, const View& grad_x) = 0;
    virtual void avg_pool_forward(const PoolGeometry& g, AvgDivisor d, const View& x,
                                  const View& y) = 0;
    virtual void avg_pool_backward(const PoolGeometry& g, AvgDivisor d, const View& grad_y,
                                   const View& grad_x) = 0;
    virtual void adaptive_avg_pool_forward(const PoolGeometry& g, const View& x, const View& y) = 0;
    virtual void adaptive_avg_pool_backward(const PoolGeometry& g, const View& grad_y,
                                            const View& grad_x) = 0;

    // Batch norm. mean, var and rstd are Float64 [C] on the device. stats: the batch's mean and
    // biased variance. forward: y = (x - mean) * rstd * w + b. backward: `batch_stats` when
    // mean/rstd came from this batch (they depend on x); any gradient may be null.
    virtual void batch_norm_stats(const BatchNormGeometry& g, const View& x, const View& mean,
                                  const View& var) = 0;
    virtual void batch_norm_forward(const BatchNormGeometry& g, const View& x, const View* w,
                                    const View* b, const View& mean, const View& rstd,
                                    const View& y) = 0;
    virtual void batch_norm_backward(const BatchNormGeometry& g, const View& x, const View* w,
                                     const View& grad_y, const View& mean, const View& rstd,
                                     bool batch_stats, const View* grad_x, const View* grad_w,
                                     const View* grad_b) = 0;

    // Layer / group norm. mean and rstd: Float64 [R], written by the forward. The affine
    // gradients are Float64 (one per affine parameter), both written.
    virtual void row_norm_forward(const RowNormGeometry& g, const View& x, const View* w,
                                  const View* b, double eps, const View& y, const View& mean,
                                  const View& rstd) = 0;
    virtual void row_norm_backward_input(const RowNormGeometry& g, const View& x, const View* w,
                                         const View& grad_y, const View& mean, const View& rstd,
                                         const View& grad_x) = 0;
    virtual void row_norm_backward_affine(const RowNormGeometry& g, const View& x,
                                          const View& grad_y, const View& mean, const View& rstd,
                                          const View& grad_w, const View& grad_b) = 0;

    // Sequence models (sequence_kernels.h), where supports(Recurrent / AttentionHeads / Matmul,
    // dtype). The defaults refuse by name: only called where the backend said yes.
    virtual void recurrent_forward(const RecurrentGeometry& g, const RecurrentWeights& w,
                                   const RecurrentForwardArgs& a, const RecurrentSaved& saved);
    virtual void recurrent_backward(const RecurrentGeometry& g, const RecurrentWeights& w,
                                    const RecurrentSaved& saved, const RecurrentBackwardArgs& a);
    virtual void head_gemm(const HeadGemmGeometry& g, const HeadOperand& a, const HeadOperand& b,
                           const HeadResult& c);
    // Softmax over each row of scores [rows, S] into P; with a dropout stream (else null) also
    // the dropped weights attn = P * keep / (1 - p) and the byte mask keep [rows, S], whose
    // element index is the flat index into [rows, S], as F::dropout's on that tensor. A row
    // holding NaN or only -inf comes out NaN, as the backend's softmax.
    virtual void attention_softmax(DType dtype, const void* scores, int64_t rows, int64_t S,
                                   void* P, const kernels::DropoutStream* drop, void* attn,
                                   uint8_t* keep);
    // The gradient of the scores from that of the (dropped) weights: through the mask (when drop
    // is not null), then the softmax's backward, dS = P * (dA - sum(P * dA)) per row.
    virtual void attention_softmax_backward(DType dtype, const void* P, const void* dattn,
                                            int64_t rows, int64_t S,
                                            const kernels::DropoutStream* drop, const uint8_t* keep,
                                            void* dS);
    // False when the backend declines this shape (the caller computes it otherwise; y is then
    // untouched).
    virtual bool matmul(const MatmulGeometry& g, const MatmulOperand& a, const MatmulOperand& b,
                        const void* bias, void* y);
};

// The NN kernels of `backend` for op `p` on `dtype`: throws DeviceError naming the op, the dtype
// and the device when the backend has no NN table or does not run that op on that dtype.
NnKernels& nn_kernels(Backend& backend, Primitive p, DType dtype);

} // namespace myelin::backend
