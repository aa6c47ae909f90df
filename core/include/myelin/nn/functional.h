#pragma once
// Stateless neural-network ops (torch.nn.functional). Convolution, pooling and normalisation run
// on oneDNN primitives on CPU (forward and backward); the rest are composed from tensor ops or
// have their own kernels. Every function validates shapes and names itself in its errors.
#include <myelin/tensor.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace myelin::nn::functional {

// y = x @ weight^T + bias; weight [out, in], x [..., in].
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});
// y = x1^T A x2 + b; weight [out, in1, in2].
Tensor bilinear(const Tensor& x1, const Tensor& x2, const Tensor& weight, const Tensor& bias = {});

// Convolution. padding "same" is expressed with same_padding = true (stride must be 1).
struct Conv2dOptions {
    std::array<int64_t, 2> stride{1, 1};
    std::array<int64_t, 2> padding{0, 0};
    std::array<int64_t, 2> dilation{1, 1};
    int64_t groups = 1;
    bool same_padding = false;
};
// x [N, C, H, W], weight [O, C/groups, kh, kw], bias [O]
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
              const Conv2dOptions& options = {});
// relu(conv2d(...)) in one pass where the device fuses the two (one autograd node; the same
// bits, forward and backward, as the two ops); conv2d then relu elsewhere.
Tensor conv2d_relu(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
                   const Conv2dOptions& options = {});
struct Conv1dOptions {
    int64_t stride = 1;
    int64_t padding = 0;
    int64_t dilation = 1;
    int64_t groups = 1;
    bool same_padding = false;
};
// x [N, C, L], weight [O, C/groups, k], bias [O]
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
              const Conv1dOptions& options = {});
struct ConvTranspose2dOptions {
    std::array<int64_t, 2> stride{1, 1};
    std::array<int64_t, 2> padding{0, 0};
    std::array<int64_t, 2> output_padding{0, 0};
    std::array<int64_t, 2> dilation{1, 1};
    int64_t groups = 1;
};
// x [N, C, H, W], weight [C, O/groups, kh, kw] (PyTorch's layout), bias [O]
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
                        const ConvTranspose2dOptions& options = {});

struct Pool2dOptions {
    std::array<int64_t, 2> kernel_size{2, 2};
    std::optional<std::array<int64_t, 2>> stride; // defaults to kernel_size
    std::array<int64_t, 2> padding{0, 0};
    std::array<int64_t, 2> dilation{1, 1}; // max_pool2d only
    bool ceil_mode = false;
    bool count_include_pad = true; // avg_pool2d only
    // avg_pool2d only: divide every window's sum by this instead of its size (must not be 0)
    std::optional<int64_t> divisor_override;
};
Tensor max_pool2d(const Tensor& x, const Pool2dOptions& options);
// max_pool2d(relu(conv2d(...))) in one autograd node where the device fuses the three (a 2x2 /
// stride-2 pool: the activation between them is never a tensor; the same bits, forward and
// backward); the ops one after another elsewhere.
Tensor conv2d_relu_max_pool2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
                              const Conv2dOptions& options, const Pool2dOptions& pool);
// Values and the flat (h * W + w) index of each maximum within its input plane, as PyTorch.
ValuesIndices max_pool2d_with_indices(const Tensor& x, const Pool2dOptions& options);
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& options);
Tensor adaptive_avg_pool2d(const Tensor& x, std::array<int64_t, 2> output_size);

// Batch norm over dim 1 of [N, C, ...]. In training mode uses batch statistics and updates the
// running stats in place (momentum like PyTorch: running = (1 - m) * running + m * batch, with
// the unbiased batch variance); in eval mode uses the running stats.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum = 0.1,
                  double eps = 1e-5);
Tensor layer_norm(const Tensor& x, const Dims& normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);

// Zeroes elements with probability p and scales the rest by 1/(1-p) when training.
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true, Generator* gen = nullptr);
// Zeroes whole channels of [N, C, ...].
Tensor dropout2d(const Tensor& x, double p = 0.5, bool training = true, Generator* gen = nullptr);

// indices: int64 of any shape; weight [num_embeddings, dim]; rows at padding_idx get no gradient.
Tensor embedding(const Tensor& indices, const Tensor& weight,
                 std::optional<int64_t> padding_idx = std::nullopt);
// pad = {left, right, top, bottom, ...} from the last dim backwards, as torch.nn.functional.pad;
// mode "constant" (value), "reflect", "replicate" or "circular" (wraps around; pads at most the
// dimension's size).
Tensor pad(const Tensor& x, const std::vector<int64_t>& pad, const std::string& mode = "constant",
           double value = 0.0);
// Nearest-neighbour upsampling of [N, C, H, W] by integer scale factors.
Tensor upsample_nearest2d(const Tensor& x, std::array<int64_t, 2> scale_factor);
// PyTorch's bilinear interpolation (align_corners false: half-pixel centres, clamped at 0;
// true: the corner pixels of input and output line up).
Tensor upsample_bilinear2d(const Tensor& x, std::array<int64_t, 2> scale_factor,
                           bool align_corners = false);
// int64 indices -> int64 one-hot with a trailing dim of num_classes (-1: max + 1).
Tensor one_hot(const Tensor& indices, int64_t num_classes = -1);

// Activations not in tensor.h.
Tensor hardswish(const Tensor& x);
Tensor prelu(const Tensor& x, const Tensor& weight); // weight [1] or [C] over dim 1

} // namespace myelin::nn::functional
