// torch.nn.init in C++: the formulas are PyTorch's; sampling uses the tensor's own uniform_ and
// normal_ (device-side) except where an inverse CDF or a QR is needed (host, float64).
#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/nn/init.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace myelin::nn::init {

namespace {

void check_defined(const Tensor& t, const char* fn) {
    if (!t.defined()) throw Error(std::string("nn::init::") + fn + "(): tensor is undefined");
    if (!t.is_floating_point())
        throw DTypeError(std::string("nn::init::") + fn +
                         "(): expected a floating point tensor, got " + dtype_name(t.dtype()));
}

double fan_for(const Tensor& t, FanMode mode) {
    const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
    return static_cast<double>(mode == FanMode::FanIn ? fan_in : fan_out);
}

// Writes host float64 values into `t` (any dtype/device/layout) without recording autograd.
void assign_host(Tensor& t, const std::vector<double>& values) {
    Tensor src = from_vector(values, t.shape()).to(t.dtype());
    t.copy_(src);
}

// Inverse error function: a rational first guess refined by Newton steps on std::erf (double).
double erfinv(double y) {
    if (y <= -1.0) return -INFINITY;
    if (y >= 1.0) return INFINITY;
    const double a = 0.147;
    const double ln = std::log(1.0 - y * y);
    const double t1 = 2.0 / (M_PI * a) + ln / 2.0;
    double x = std::copysign(std::sqrt(std::sqrt(t1 * t1 - ln / a) - t1), y);
    for (int i = 0; i < 3; ++i) {
        const double err = std::erf(x) - y;
        x -= err / (2.0 / std::sqrt(M_PI) * std::exp(-x * x));
    }
    return x;
}

} // namespace

double calculate_gain(const std::string& nonlinearity, std::optional<double> param) {
    static const char* const linear_fns[] = {
        "linear",           "conv1d",           "conv2d",           "conv3d",
        "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "sigmoid"};
    for (const char* name : linear_fns)
        if (nonlinearity == name) return 1.0;
    if (nonlinearity == "tanh") return 5.0 / 3.0;
    if (nonlinearity == "relu") return std::sqrt(2.0);
    if (nonlinearity == "leaky_relu") {
        const double slope = param.value_or(0.01);
        return std::sqrt(2.0 / (1.0 + slope * slope));
    }
    if (nonlinearity == "selu") return 3.0 / 4.0;
    throw Error("nn::init::calculate_gain(): unsupported nonlinearity " + nonlinearity);
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
    if (tensor.dim() < 2)
        throw ShapeError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions, got shape " +
                         tensor.shape().str());
    int64_t receptive = 1;
    for (int d = 2; d < tensor.dim(); ++d)
        receptive *= tensor.size(d);
    return {tensor.size(1) * receptive, tensor.size(0) * receptive};
}

Tensor& uniform_(Tensor& tensor, double a, double b, Generator* gen) {
    check_defined(tensor, "uniform_");
    autograd::NoGradGuard no_grad;
    return tensor.uniform_(a, b, gen);
}

Tensor& normal_(Tensor& tensor, double mean, double std, Generator* gen) {
    check_defined(tensor, "normal_");
    autograd::NoGradGuard no_grad;
    return tensor.normal_(mean, std, gen);
}

Tensor& trunc_normal_(Tensor& tensor, double mean, double std, double a, double b, Generator* gen) {
    check_defined(tensor, "trunc_normal_");
    if (!(a < b)) throw Error("nn::init::trunc_normal_(): expected a < b");
    autograd::NoGradGuard no_grad;
    auto norm_cdf = [](double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; };
    const double l = norm_cdf((a - mean) / std);
    const double u = norm_cdf((b - mean) / std);
    Generator& g = gen ? *gen : default_generator();
    std::vector<double> values(static_cast<size_t>(tensor.numel()));
    for (double& v : values) {
        // Uniform on [2l - 1, 2u - 1], then the inverse CDF of the standard normal.
        const double p = (2 * l - 1) + (2 * u - 2 * l) * g.uniform_double();
        v = std::clamp(erfinv(p) * std * std::sqrt(2.0) + mean, a, b);
    }
    assign_host(tensor, values);
    return tensor;
}

Tensor& constant_(Tensor& tensor, double value) {
    check_defined(tensor, "constant_");
    autograd::NoGradGuard no_grad;
    return tensor.fill_(value);
}

Tensor& zeros_(Tensor& tensor) {
    return constant_(tensor, 0.0);
}
Tensor& ones_(Tensor& tensor) {
    return constant_(tensor, 1.0);
}

Tensor& xavier_uniform_(Tensor& tensor, double gain, Generator* gen) {
    check_defined(tensor, "xavier_uniform_");
    const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
    const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
    const double bound = std::sqrt(3.0) * std;
    return uniform_(tensor, -bound, bound, gen);
}

Tensor& xavier_normal_(Tensor& tensor, double gain, Generator* gen) {
    check_defined(tensor, "xavier_normal_");
    const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
    const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
    return normal_(tensor, 0.0, std, gen);
}

Tensor& kaiming_uniform_(Tensor& tensor, double a, FanMode mode, const std::string& nonlinearity,
                         Generator* gen) {
    check_defined(tensor, "kaiming_uniform_");
    if (tensor.numel() == 0) return tensor; // PyTorch warns and leaves it
    const double std = calculate_gain(nonlinearity, a) / std::sqrt(fan_for(tensor, mode));
    const double bound = std::sqrt(3.0) * std;
    return uniform_(tensor, -bound, bound, gen);
}

Tensor& kaiming_normal_(Tensor& tensor, double a, FanMode mode, const std::string& nonlinearity,
                        Generator* gen) {
    check_defined(tensor, "kaiming_normal_");
    if (tensor.numel() == 0) return tensor;
    const double std = calculate_gain(nonlinearity, a) / std::sqrt(fan_for(tensor, mode));
    return normal_(tensor, 0.0, std, gen);
}

Tensor& orthogonal_(Tensor& tensor, double gain, Generator* gen) {
    check_defined(tensor, "orthogonal_");
    if (tensor.dim() < 2)
        throw ShapeError("nn::init::orthogonal_(): only tensors with 2 or more dimensions are "
                         "supported, got shape " +
                         tensor.shape().str());
    if (tensor.numel() == 0) return tensor;
    const int64_t rows = tensor.size(0);
    const int64_t cols = tensor.numel() / rows;
    Generator& g = gen ? *gen : default_generator();
    // Draw [rows, cols] like PyTorch, then orthonormalise the columns of the tall orientation.
    std::vector<double> a(static_cast<size_t>(rows * cols));
    for (double& v : a)
        v = g.normal();
    const bool wide = rows < cols;
    const int64_t m = wide ? cols : rows; // the tall orientation [m, n]
    const int64_t n = wide ? rows : cols;
    // Columns of the tall matrix stored contiguously (q[j * m + i]) so the loops stream memory.
    std::vector<double> q(a.size());
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
            const double v = a[static_cast<size_t>(r * cols + c)];
            q[static_cast<size_t>(wide ? r * m + c : c * m + r)] = v;
        }
    // Modified Gram-Schmidt: Q with R's diagonal positive, which is exactly PyTorch's
    // q * sign(diag(r)) from Householder QR.
    for (int64_t j = 0; j < n; ++j) {
        double* qj = q.data() + j * m;
        for (int pass = 0; pass < 2; ++pass) // re-orthogonalise once for float64 accuracy
            for (int64_t k = 0; k < j; ++k) {
                const double* qk = q.data() + k * m;
                double dot = 0;
                for (int64_t i = 0; i < m; ++i)
                    dot += qk[i] * qj[i];
                for (int64_t i = 0; i < m; ++i)
                    qj[i] -= dot * qk[i];
            }
        double norm = 0;
        for (int64_t i = 0; i < m; ++i)
            norm += qj[i] * qj[i];
        norm = std::sqrt(norm);
        if (norm == 0) throw Error("nn::init::orthogonal_(): degenerate random matrix");
        for (int64_t i = 0; i < m; ++i)
            qj[i] /= norm;
    }
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
            a[static_cast<size_t>(r * cols + c)] =
                q[static_cast<size_t>(wide ? r * m + c : c * m + r)];
    for (double& v : a)
        v *= gain;
    autograd::NoGradGuard no_grad;
    assign_host(tensor, a);
    return tensor;
}

} // namespace myelin::nn::init
