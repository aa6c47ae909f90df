#pragma once
// The optimizers' per-element updates, shared by the CPU loops (backend/cpu/cpu_train.cpp) and
// the CUDA kernels (backend/cuda/cuda_train.cu). Each line mirrors one PyTorch 1.13 single-tensor
// op in the same order and precision:
//   x.add(y, alpha=a) -> fma(a, y, x);  x.addcmul_(y, z, value=v) -> fma(v * y, z, x);
//   x.addcdiv_(y, z, value=v) -> x + v * y / z (no fused form).
// PyTorch's CPU kernels (built with FMA) round add/addcmul that way, so trajectories match to
// the ulp. Every other multiply-add must not be contracted: the CPU file is compiled with
// -ffp-contract=off and nvcc with --fmad=false for this file's kernels.
#include "backend/kernels/elementwise.h" // MYELIN_HD

#include <cmath>
#include <cstdint>

namespace myelin::kernels {

template <typename T> MYELIN_HD T add_alpha(T x, T alpha, T y) {
    return std::fma(alpha, y, x);
}
template <typename T> MYELIN_HD T addcmul(T x, T value, T y, T z) {
    return std::fma(value * y, z, x);
}
template <typename T> MYELIN_HD T max_of(T a, T b) {
    return a < b ? b : a; // std::max's rule: a unless b is larger
}

// The scalars of one step, rounded to the parameter's dtype (backend::SgdStep etc. in double).
template <typename T> struct SgdArgs {
    T lr, momentum, dampening_c, weight_decay;
    bool nesterov, maximize, first;
};
template <typename T> struct AdamArgs {
    T beta1, one_minus_beta1, beta2, one_minus_beta2, eps, weight_decay, decay_factor,
        bias_correction2_sqrt, neg_step_size;
    bool decoupled, amsgrad, maximize;
};
template <typename T> struct RmsArgs {
    T alpha, one_minus_alpha, eps, weight_decay, momentum, neg_lr;
    bool centered, maximize;
};
template <typename T> struct AdagradArgs {
    T weight_decay, eps, neg_clr;
    bool maximize;
};

// Element i of each update; a null state pointer is an absent buffer.
template <typename T>
MYELIN_HD void sgd_element(int64_t i, T* __restrict p, const T* __restrict g, T* __restrict buf,
                           const SgdArgs<T>& a) {
    T d = a.maximize ? -g[i] : g[i];
    if (a.weight_decay != T(0)) d = add_alpha(d, a.weight_decay, p[i]);
    if (buf) {
        if (a.first) {
            buf[i] = d;
        } else {
            buf[i] = buf[i] * a.momentum;
            buf[i] = add_alpha(buf[i], a.dampening_c, d);
        }
        d = a.nesterov ? add_alpha(d, a.momentum, buf[i]) : buf[i];
    }
    p[i] = add_alpha(p[i], -a.lr, d);
}

// Adam's common configurations (no amsgrad, no maximize; L2 decay only when set) without
// per-element branches, so the CPU loop vectorises. Same operations, same rounding as
// adam_element.
template <typename T> MYELIN_HD bool adam_is_fast(const AdamArgs<T>& a) {
    return !a.amsgrad && !a.maximize && (a.decoupled || a.weight_decay == T(0));
}
template <typename T, bool kDecoupled>
MYELIN_HD void adam_fast_element(int64_t i, T* __restrict p, const T* __restrict g, T* __restrict m,
                                 T* __restrict v, const AdamArgs<T>& a) {
    T grad = g[i];
    if constexpr (kDecoupled) p[i] = p[i] * a.decay_factor;
    m[i] = add_alpha(m[i] * a.beta1, a.one_minus_beta1, grad);
    v[i] = addcmul(v[i] * a.beta2, a.one_minus_beta2, grad, grad);
    const T denom = std::sqrt(v[i]) / a.bias_correction2_sqrt + a.eps;
    p[i] = p[i] + a.neg_step_size * m[i] / denom;
}
template <typename T>
MYELIN_HD void adam_element(int64_t i, T* __restrict p, const T* __restrict g, T* __restrict m,
                            T* __restrict v, T* __restrict vmax, const AdamArgs<T>& a) {
    T grad = a.maximize ? -g[i] : g[i];
    if (a.decoupled)
        p[i] = p[i] * a.decay_factor;
    else if (a.weight_decay != T(0))
        grad = add_alpha(grad, a.weight_decay, p[i]);
    m[i] = m[i] * a.beta1;
    m[i] = add_alpha(m[i], a.one_minus_beta1, grad);
    v[i] = v[i] * a.beta2;
    v[i] = addcmul(v[i], a.one_minus_beta2, grad, grad);
    T second = v[i];
    if (a.amsgrad) {
        vmax[i] = max_of(vmax[i], v[i]);
        second = vmax[i];
    }
    const T denom = std::sqrt(second) / a.bias_correction2_sqrt + a.eps;
    p[i] = p[i] + a.neg_step_size * m[i] / denom;
}

template <typename T>
MYELIN_HD void rmsprop_element(int64_t i, T* __restrict p, const T* __restrict g, T* __restrict sq,
                               T* __restrict ga, T* __restrict buf, const RmsArgs<T>& a) {
    T grad = a.maximize ? -g[i] : g[i];
    if (a.weight_decay != T(0)) grad = add_alpha(grad, a.weight_decay, p[i]);
    sq[i] = sq[i] * a.alpha;
    sq[i] = addcmul(sq[i], a.one_minus_alpha, grad, grad);
    T avg;
    if (a.centered) {
        ga[i] = ga[i] * a.alpha;
        ga[i] = add_alpha(ga[i], a.one_minus_alpha, grad);
        avg = std::sqrt(addcmul(sq[i], T(-1), ga[i], ga[i]));
    } else {
        avg = std::sqrt(sq[i]);
    }
    avg = avg + a.eps;
    if (buf) {
        buf[i] = buf[i] * a.momentum;
        buf[i] = buf[i] + T(1) * grad / avg;
        p[i] = add_alpha(p[i], a.neg_lr, buf[i]);
    } else {
        p[i] = p[i] + a.neg_lr * grad / avg;
    }
}

template <typename T>
MYELIN_HD void adagrad_element(int64_t i, T* __restrict p, const T* __restrict g, T* __restrict sum,
                               const AdagradArgs<T>& a) {
    T grad = a.maximize ? -g[i] : g[i];
    if (a.weight_decay != T(0)) grad = add_alpha(grad, a.weight_decay, p[i]);
    sum[i] = addcmul(sum[i], T(1), grad, grad);
    const T std_ = std::sqrt(sum[i]) + a.eps;
    p[i] = p[i] + a.neg_clr * grad / std_;
}

} // namespace myelin::kernels
