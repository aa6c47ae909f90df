#pragma once
// Parameter initialisation (torch.nn.init): same names, arguments, defaults and formulas. Every
// function fills the tensor in place under no-grad, draws from `gen` (the default generator when
// null) and returns the tensor.
#include <myelin/tensor.h>

#include <optional>
#include <string>
#include <utility>

namespace myelin::nn::init {

enum class FanMode { FanIn, FanOut };

// torch.nn.init.calculate_gain: "linear", "conv1d/2d/3d", "conv_transpose1d/2d/3d", "sigmoid"
// -> 1; "tanh" -> 5/3; "relu" -> sqrt(2); "leaky_relu" -> sqrt(2 / (1 + slope^2)) with slope
// `param` (0.01 when absent); "selu" -> 3/4. Anything else throws Error.
double calculate_gain(const std::string& nonlinearity, std::optional<double> param = std::nullopt);
// torch.nn.init._calculate_fan_in_and_fan_out: {size(1) * receptive field, size(0) * receptive
// field}; throws ShapeError for tensors with fewer than 2 dimensions.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);

Tensor& uniform_(Tensor& tensor, double a = 0.0, double b = 1.0, Generator* gen = nullptr);
Tensor& normal_(Tensor& tensor, double mean = 0.0, double std = 1.0, Generator* gen = nullptr);
// Normal(mean, std) truncated to [a, b] by inverse-CDF sampling, as PyTorch.
Tensor& trunc_normal_(Tensor& tensor, double mean = 0.0, double std = 1.0, double a = -2.0,
                      double b = 2.0, Generator* gen = nullptr);
Tensor& constant_(Tensor& tensor, double value);
Tensor& zeros_(Tensor& tensor);
Tensor& ones_(Tensor& tensor);
Tensor& xavier_uniform_(Tensor& tensor, double gain = 1.0, Generator* gen = nullptr);
Tensor& xavier_normal_(Tensor& tensor, double gain = 1.0, Generator* gen = nullptr);
Tensor& kaiming_uniform_(Tensor& tensor, double a = 0.0, FanMode mode = FanMode::FanIn,
                         const std::string& nonlinearity = "leaky_relu", Generator* gen = nullptr);
Tensor& kaiming_normal_(Tensor& tensor, double a = 0.0, FanMode mode = FanMode::FanIn,
                        const std::string& nonlinearity = "leaky_relu", Generator* gen = nullptr);
// A (semi-)orthogonal matrix over the tensor flattened to [size(0), numel / size(0)], scaled by
// gain: QR of a standard normal matrix with the signs of R's diagonal folded in, as PyTorch.
Tensor& orthogonal_(Tensor& tensor, double gain = 1.0, Generator* gen = nullptr);

} // namespace myelin::nn::init
