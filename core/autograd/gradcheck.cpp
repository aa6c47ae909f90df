// Finite-difference gradient check (float64), like torch.autograd.gradcheck: the Jacobian from
// backward (one one-hot gradient per output element) against central differences.
#include "autograd/function.h"

#include <cmath>
#include <sstream>

namespace myelin::autograd {

GradcheckResult gradcheck(const std::function<TensorList(const TensorList&)>& fn,
                          const TensorList& inputs, double eps, double atol, double rtol) {
    std::vector<size_t> checked;
    for (size_t i = 0; i < inputs.size(); ++i) {
        const Tensor& x = inputs[i];
        if (!x.defined() || !x.requires_grad()) continue;
        if (x.dtype() != DType::Float64 || !x.is_contiguous() || !x.is_leaf() ||
            !x.device().is_cpu())
            return {false, "gradcheck: input " + std::to_string(i) +
                               " must be a contiguous float64 CPU leaf tensor, got " +
                               detail::describe(x)};
        checked.push_back(i);
    }
    if (checked.empty()) return {false, "gradcheck: no input requires grad"};

    const TensorList outputs = fn(inputs);
    for (size_t o = 0; o < outputs.size(); ++o) {
        const Tensor& out = outputs[o];
        if (!out.defined() || !out.is_floating_point()) continue;
        const int64_t n_out = out.numel();
        // Analytical Jacobian rows.
        std::vector<std::vector<double>> analytical(checked.size());
        for (size_t c = 0; c < checked.size(); ++c)
            analytical[c].assign(static_cast<size_t>(inputs[checked[c]].numel() * n_out), 0.0);
        if (out.requires_grad()) {
            for (int64_t k = 0; k < n_out; ++k) {
                for (size_t c : checked) {
                    Tensor x = inputs[c];
                    x.set_grad({});
                }
                Tensor onehot = zeros(out.shape(), out.options());
                {
                    NoGradGuard ng;
                    onehot.reshape({-1}).narrow(0, k, 1).fill_(1.0);
                }
                backward({out}, {onehot}, true);
                for (size_t c = 0; c < checked.size(); ++c) {
                    const Tensor g = inputs[checked[c]].grad();
                    if (!g.defined()) continue;
                    const std::vector<double> gv = g.to_vector<double>();
                    for (size_t j = 0; j < gv.size(); ++j)
                        analytical[c][j * n_out + k] = gv[j];
                }
            }
        }
        // Numerical Jacobian, column by column.
        for (size_t c = 0; c < checked.size(); ++c) {
            const Tensor& x = inputs[checked[c]];
            double* p = x.data<double>();
            for (int64_t j = 0; j < x.numel(); ++j) {
                const double orig = p[j];
                std::vector<double> plus, minus;
                {
                    NoGradGuard ng;
                    p[j] = orig + eps;
                    plus = fn(inputs)[o].to_vector<double>();
                    p[j] = orig - eps;
                    minus = fn(inputs)[o].to_vector<double>();
                    p[j] = orig;
                }
                for (int64_t k = 0; k < n_out; ++k) {
                    const double numerical = (plus[k] - minus[k]) / (2 * eps);
                    const double a = analytical[c][static_cast<size_t>(j * n_out + k)];
                    if (!(std::abs(a - numerical) <= atol + rtol * std::abs(numerical))) {
                        std::ostringstream msg;
                        msg << "gradcheck: Jacobian mismatch for output " << o << " element " << k
                            << " with respect to input " << checked[c] << " element " << j
                            << ": analytical " << a << ", numerical " << numerical;
                        return {false, msg.str()};
                    }
                }
            }
        }
    }
    for (size_t c : checked) {
        Tensor x = inputs[c];
        x.set_grad({});
    }
    return {};
}

} // namespace myelin::autograd
