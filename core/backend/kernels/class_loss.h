#pragma once
// Class-index cross-entropy / NLL per row (PyTorch 1.13's formulas, in double), shared by the
// CPU loops (backend/cpu/cpu_train_loss.cpp) and the CUDA kernels (backend/cuda/cuda_train.cu).
// Row r of x [N, C, S...] is n = r / S, s = r % S, its classes at stride S.
#include "backend/kernels/elementwise.h" // MYELIN_HD
#include "backend/train_kernels.h"

#include <cmath>
#include <cstdint>

namespace myelin::kernels {

using backend::ClassLossGeometry;

// A row's contribution to the loss: its NLL and smoothing terms (weighted) and its target's
// weight (0 for an ignored row).
struct ClassRowTerms {
    double nll = 0.0, smooth = 0.0, weight = 0.0;
};

// Forward of row r; writes the row's log-sum-exp into *lse (logits only).
template <typename T>
MYELIN_HD ClassRowTerms class_row_forward(const T* x, const int64_t* t, const T* w,
                                          const ClassLossGeometry& p, int64_t r, double* lse) {
    const int64_t C = p.c, S = p.s;
    const double ls = p.smoothing;
    const int64_t n = r / S, s = r % S;
    const T* row = x + n * C * S + s;
    const int64_t target = t[r];
    ClassRowTerms out;
    if (p.logits) {
        double m = -INFINITY;
        for (int64_t c = 0; c < C; ++c) {
            const double v = static_cast<double>(row[c * S]);
            m = m < v ? v : m;
        }
        double se = 0.0;
        for (int64_t c = 0; c < C; ++c)
            se += std::exp(static_cast<double>(row[c * S]) - m);
        *lse = m + std::log(se);
    }
    if (target != p.ignore_index) {
        const double wt = w ? static_cast<double>(w[target]) : 1.0;
        const double off = p.logits ? *lse : 0.0;
        out.nll = -(static_cast<double>(row[target * S]) - off) * wt;
        out.weight = wt;
        if (ls > 0.0) {
            for (int64_t c = 0; c < C; ++c)
                out.smooth -=
                    (static_cast<double>(row[c * S]) - off) * (w ? static_cast<double>(w[c]) : 1.0);
        }
    }
    return out;
}

// The per-row loss of reduction none.
MYELIN_HD double class_row_loss(const ClassRowTerms& terms, const ClassLossGeometry& p) {
    return (1.0 - p.smoothing) * terms.nll + p.smoothing / static_cast<double>(p.c) * terms.smooth;
}

// The reduced loss (sum or mean) from the totals over the rows, added in row order.
MYELIN_HD double class_reduced_loss(double nll_total, double smooth_total, double weight_total,
                                    const ClassLossGeometry& p) {
    const double ls = p.smoothing;
    const double smooth_den = weight_total; // PyTorch 1.13: non-ignored targets (weighted)
    if (p.reduction == 2)
        return (1.0 - ls) * nll_total + ls / static_cast<double>(p.c) * smooth_total;
    return (1.0 - ls) * (nll_total / weight_total) +
           (ls > 0.0 ? ls / static_cast<double>(p.c) * (smooth_total / smooth_den) : 0.0);
}

// Σ of the class weights (C when unweighted).
template <typename T> MYELIN_HD double class_weight_sum(const T* w, int64_t C) {
    double wsum_all = 0.0;
    for (int64_t c = 0; c < C; ++c)
        wsum_all += w ? static_cast<double>(w[c]) : 1.0;
    return wsum_all;
}

// Backward of row r: grad_x's row from the upstream gradient g (per row for none, else g[0]).
template <typename T>
MYELIN_HD void class_row_backward(const T* x, const int64_t* t, const T* w,
                                  const ClassLossGeometry& p, const double* lse,
                                  const double* denominators, double wsum_all, const T* g, T* gx,
                                  int64_t r) {
    const int64_t C = p.c, S = p.s;
    const double ls = p.smoothing;
    const bool none = p.reduction == 0;
    const double g0 = none ? 0.0 : static_cast<double>(g[0]);
    const double nll_scale = p.reduction == 1 ? 1.0 / denominators[0] : 1.0;
    const double smooth_scale = p.reduction == 1 ? 1.0 / denominators[1] : 1.0;
    const int64_t n = r / S, s = r % S;
    const int64_t base = n * C * S + s;
    T* grow = gx + base;
    const int64_t target = t[r];
    if (target == p.ignore_index) {
        for (int64_t c = 0; c < C; ++c)
            grow[c * S] = T(0);
        return;
    }
    const double gr = none ? static_cast<double>(g[r]) : g0;
    const double wt = w ? static_cast<double>(w[target]) : 1.0;
    const double a = gr * (1.0 - ls) * wt * nll_scale;
    if (!p.logits) {
        for (int64_t c = 0; c < C; ++c)
            grow[c * S] = T(0);
        grow[target * S] = static_cast<T>(-a);
        return;
    }
    const double b = gr * ls / static_cast<double>(C) * smooth_scale;
    const T* row = x + base;
    for (int64_t c = 0; c < C; ++c) {
        const double pc = std::exp(static_cast<double>(row[c * S]) - lse[r]);
        double v = a * (pc - (c == target ? 1.0 : 0.0));
        if (ls > 0.0) v += b * (pc * wsum_all - (w ? static_cast<double>(w[c]) : 1.0));
        grow[c * S] = static_cast<T>(v);
    }
}

} // namespace myelin::kernels
