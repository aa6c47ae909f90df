// The CPU backend's class losses, dropout and gradient norms (train_kernels.h): serial loops
// over the row functions of kernels/class_loss.h (totals added in row order, in double), the
// counter-based dropout of kernels/dropout.h, clip_grad_norm_'s per-gradient accumulation.
#include "backend/cpu/cpu_train.h"
#include "backend/kernels/class_loss.h"
#include "backend/kernels/class_scores.h"
#include "backend/kernels/dropout.h"

#include <myelin/error.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace myelin::backend {
namespace {

template <typename T> const T* cptr(const View* v) {
    return v ? static_cast<const T*>(v->data) : nullptr;
}

template <typename T>
void class_forward(const ClassLossGeometry& p, const View& x, const View& target,
                   const View* weight, const View& out, const View& lse_view,
                   const View& den_view) {
    const T* xp = static_cast<const T*>(x.data);
    const int64_t* t = static_cast<const int64_t*>(target.data);
    const T* w = cptr<T>(weight);
    T* o = static_cast<T*>(out.data);
    double* lse = static_cast<double*>(lse_view.data);
    double* den = static_cast<double*>(den_view.data);
    double nll_total = 0.0, smooth_total = 0.0, weight_total = 0.0;
    double unused = 0.0;
    for (int64_t r = 0, R = p.rows(); r < R; ++r) {
        const kernels::ClassRowTerms terms =
            kernels::class_row_forward<T>(xp, t, w, p, r, p.logits ? lse + r : &unused);
        if (p.reduction == 0) o[r] = static_cast<T>(kernels::class_row_loss(terms, p));
        nll_total += terms.nll;
        smooth_total += terms.smooth;
        weight_total += terms.weight;
    }
    den[0] = weight_total;
    den[1] = weight_total;
    if (p.reduction != 0)
        o[0] =
            static_cast<T>(kernels::class_reduced_loss(nll_total, smooth_total, weight_total, p));
}

template <typename T> void class_scores_rows(const View& x, const View& target, const View& out) {
    const int64_t rows = x.shape[0], classes = x.shape[1];
    const T* xp = static_cast<const T*>(x.data);
    const int64_t* t = static_cast<const int64_t*>(target.data);
    int64_t* o = static_cast<int64_t*>(out.data);
    for (int64_t r = 0; r < rows; ++r) {
        const kernels::RowScore s = kernels::score_row(xp + r * classes, classes, t[r]);
        o[2 * r] = s.predicted;
        o[2 * r + 1] = s.above_target;
    }
}

template <typename T>
void class_backward(const ClassLossGeometry& p, const View& x, const View& target,
                    const View* weight, const View& lse, const View& den, const View& grad_out,
                    const View& grad_x) {
    const T* xp = static_cast<const T*>(x.data);
    const int64_t* t = static_cast<const int64_t*>(target.data);
    const T* w = cptr<T>(weight);
    const double wsum_all = kernels::class_weight_sum(w, p.c);
    for (int64_t r = 0, R = p.rows(); r < R; ++r)
        kernels::class_row_backward<T>(
            xp, t, w, p, static_cast<const double*>(lse.data), static_cast<const double*>(den.data),
            wsum_all, static_cast<const T*>(grad_out.data), static_cast<T*>(grad_x.data), r);
}

} // namespace

void CpuTrainKernels::class_loss_forward(const ClassLossGeometry& p, const View& x,
                                         const View& target, const View* weight, const View& out,
                                         const View& lse, const View& denominators) {
    if (x.dtype == DType::Float64)
        class_forward<double>(p, x, target, weight, out, lse, denominators);
    else
        class_forward<float>(p, x, target, weight, out, lse, denominators);
}

void CpuTrainKernels::class_loss_backward(const ClassLossGeometry& p, const View& x,
                                          const View& target, const View* weight, const View& lse,
                                          const View& denominators, const View& grad_out,
                                          const View& grad_x) {
    if (x.dtype == DType::Float64)
        class_backward<double>(p, x, target, weight, lse, denominators, grad_out, grad_x);
    else
        class_backward<float>(p, x, target, weight, lse, denominators, grad_out, grad_x);
}

void CpuTrainKernels::class_scores(const View& x, const View& target, const View& out) {
    if (x.dtype == DType::Float64)
        class_scores_rows<double>(x, target, out);
    else
        class_scores_rows<float>(x, target, out);
}

void CpuTrainKernels::dropout_forward(uint64_t seed, double p, const View& x, const View& out,
                                      const View& mask) {
    const kernels::DropoutStream stream(seed, p);
    auto* m = static_cast<uint8_t*>(mask.data);
    if (x.dtype == DType::Float64)
        kernels::dropout_forward(stream, static_cast<const double*>(x.data), x.numel(),
                                 static_cast<double*>(out.data), m);
    else
        kernels::dropout_forward(stream, static_cast<const float*>(x.data), x.numel(),
                                 static_cast<float*>(out.data), m);
}

void CpuTrainKernels::dropout_backward(uint64_t seed, double p, const View& grad, const View& mask,
                                       const View& grad_x) {
    const kernels::DropoutStream stream(seed, p);
    const auto* m = static_cast<const uint8_t*>(mask.data);
    if (grad.dtype == DType::Float64)
        kernels::dropout_backward(stream, static_cast<const double*>(grad.data), m, grad.numel(),
                                  static_cast<double*>(grad_x.data));
    else
        kernels::dropout_backward(stream, static_cast<const float*>(grad.data), m, grad.numel(),
                                  static_cast<float*>(grad_x.data));
}

void CpuTrainKernels::norm_accumulate(const View& x, double p, const View& out) {
    const int64_t n = x.numel();
    const bool is_inf = std::isinf(p);
    double acc = 0.0;
    auto run = [&](auto* d) {
        for (int64_t i = 0; i < n; ++i) {
            const double a = std::fabs(static_cast<double>(d[i]));
            if (is_inf)
                acc = std::isnan(a) || std::isnan(acc) ? std::numeric_limits<double>::quiet_NaN()
                                                       : std::max(acc, a);
            else if (p == 2.0)
                acc += a * a;
            else if (p == 1.0)
                acc += a;
            else if (p == 0.0)
                acc += a != 0.0 ? 1.0 : 0.0;
            else
                acc += std::pow(a, p);
        }
    };
    if (x.dtype == DType::Float64)
        run(static_cast<const double*>(x.data));
    else
        run(static_cast<const float*>(x.data));
    *static_cast<double*>(out.data) = acc;
}

void CpuTrainKernels::scale_(const View& x, double scale) {
    const int64_t n = x.numel();
    if (x.dtype == DType::Float64) {
        auto* d = static_cast<double*>(x.data);
        for (int64_t i = 0; i < n; ++i)
            d[i] = d[i] * scale;
        return;
    }
    auto* d = static_cast<float*>(x.data);
    const float cf = static_cast<float>(scale);
    for (int64_t i = 0; i < n; ++i)
        d[i] = d[i] * cf;
}

} // namespace myelin::backend
