// Activation layers: ReLU, LeakyReLU, PReLU, ELU, GELU, SiLU, Sigmoid, Tanh, Hardswish, Softmax,
// LogSoftmax, Softplus.
#include "nn/layers_common.h"

#include <myelin/error.h>
#include <myelin/nn/functional.h>
#include <myelin/nn/layers.h>

#include <cmath>

namespace myelin::nn {

namespace F = functional;
using namespace detail;

namespace {

// PyTorch's reprs print Python ints where the default argument is an int (Softplus).
std::string py_number(double v) {
    if (std::nearbyint(v) == v && std::abs(v) < 1e15)
        return std::to_string(static_cast<int64_t>(v));
    return py_float(v);
}

} // namespace

// --- activations -------------------------------------------------------------------------------

Tensor ReLU::forward(const TensorList& inputs) {
    return relu(inputs[0]);
}

Tensor ReLU6::forward(const TensorList& inputs) {
    return clamp(inputs[0], 0.0, 6.0);
}

Tensor LeakyReLU::forward(const TensorList& inputs) {
    return leaky_relu(inputs[0], negative_slope);
}
std::string LeakyReLU::extra_repr() const {
    return "negative_slope=" + py_float(negative_slope);
}

PReLU::PReLU(int64_t n, double init_) : Module("PReLU"), num_parameters(n), init(init_) {
    require_positive(*this, n, "num_parameters");
    weight = register_parameter("weight", full({n}, init));
}

Tensor PReLU::forward(const TensorList& inputs) {
    const Tensor& x = inputs[0];
    if (num_parameters > 1 && (x.dim() < 2 || x.size(1) != num_parameters))
        bad_input(*this, "[N, " + std::to_string(num_parameters) + ", *]", x);
    return F::prelu(x, weight);
}
std::string PReLU::extra_repr() const {
    return "num_parameters=" + std::to_string(num_parameters);
}

Tensor ELU::forward(const TensorList& inputs) {
    return elu(inputs[0], alpha);
}
std::string ELU::extra_repr() const {
    return "alpha=" + py_float(alpha);
}

GELU::GELU(std::string approx) : Module("GELU"), approximate(std::move(approx)) {
    if (approximate != "none" && approximate != "tanh")
        throw Error("GELU: approximate must be 'none' or 'tanh', got '" + approximate + "'");
}
Tensor GELU::forward(const TensorList& inputs) {
    return gelu(inputs[0], approximate);
}
std::string GELU::extra_repr() const {
    return "approximate='" + approximate + "'";
}

Tensor SiLU::forward(const TensorList& inputs) {
    return silu(inputs[0]);
}
Tensor Sigmoid::forward(const TensorList& inputs) {
    return sigmoid(inputs[0]);
}
Tensor Tanh::forward(const TensorList& inputs) {
    return tanh(inputs[0]);
}
Tensor Hardswish::forward(const TensorList& inputs) {
    return F::hardswish(inputs[0]);
}

namespace {
void check_softmax_dim(const Module& m, const Tensor& x, int dim) {
    const int n = std::max(x.dim(), 1);
    if (dim < -n || dim >= n)
        bad_input(m,
                  "a tensor with dim " + std::to_string(dim) + " (at least " +
                      std::to_string(dim < 0 ? -dim : dim + 1) + " dims)",
                  x);
}
} // namespace

Tensor Softmax::forward(const TensorList& inputs) {
    check_softmax_dim(*this, inputs[0], dim);
    return softmax(inputs[0], dim);
}
std::string Softmax::extra_repr() const {
    return "dim=" + std::to_string(dim);
}

Tensor LogSoftmax::forward(const TensorList& inputs) {
    check_softmax_dim(*this, inputs[0], dim);
    return log_softmax(inputs[0], dim);
}
std::string LogSoftmax::extra_repr() const {
    return "dim=" + std::to_string(dim);
}

Tensor Softplus::forward(const TensorList& inputs) {
    return softplus(inputs[0], beta, threshold);
}
std::string Softplus::extra_repr() const {
    return "beta=" + py_number(beta) + ", threshold=" + py_number(threshold);
}

} // namespace myelin::nn
