#pragma once
// Adam's float update (kernels::adam_fast_element) without the CPU's slow path for denormals,
// giving the same bits.
//
// Why: the first moment of a weight whose gradient stays 0 (a pixel that is 0 in every image, a
// dead unit) decays by beta1 every step down through the denormal range; a float multiply or
// divide that reads or writes a denormal takes a microcode assist (about 20x per vector on a
// Xeon), so Adam's loop took 1.9x the CPU per step in a 2-epoch Fashion-MNIST MLP run (11% of
// its first layer's moments were denormal by then). PyTorch computes the same denormals (it does
// not flush them by default); so do we, but exactly and without the assist:
//  - a product or quotient of a tiny value (|x| < 2^-100) is computed in double, where every
//    such value is normal, and rounded to float by hand: double holds the exact product of two
//    floats, and a quotient rounded to double then to float is the correctly rounded float
//    quotient (53 >= 2 * 24 + 2, Figueroa 1995) — also when the float result is denormal, as
//    long as the divisor is below 2^29 (see div_tiny);
//  - a tiny addend of the first moment's fma is replaced by 2^-100 with its sign: next to a
//    product |c1 * g| >= 2^-48 (a multiple of 2^-95) either value only breaks a rounding tie,
//    the same way;
//  - additions read denormals at full speed and are left as they are.
// Only chunks whose other operands are ordinary take this path (tiny_path_fits); the rest run the
// plain loop, which is exact too, only slower on denormals.
#include "backend/kernels/optim_update.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace myelin::backend::adam_denormal {

inline constexpr float kTiny = 0x1p-100f;    // below this, products may leave the normal range
inline constexpr float kTinyStep = 0x1p-90f; // a step below this may divide into a denormal
inline constexpr float kMinGrad = 0x1p-36f;  // nonzero gradients at least this large
inline constexpr float kMinOneMinusBeta1 = 0x1p-12f; // so |(1 - beta1) * g| >= 2^-48
inline constexpr float kMinFactor = 0x1p-24f; // beta1, beta2, 1 - beta*, |step size| at least
inline constexpr float kMinBiasCorrection2 = 0x1p-8f;

inline bool tiny(float x) {
    return std::fabs(x) < kTiny;
}

// The float nearest to `exact` (a double holding the exact or correctly pre-rounded value),
// rounding half to even, without a float operation that meets a denormal: below 2^-126 the
// result is an integer multiple of 2^-149, rounded in double and assembled from its bits.
inline float round_to_float(double exact) {
    // Every operand below is kept out of the denormal range on every lane (the loop is
    // vectorised, so both sides of a choice are computed): the branch not taken sees 0.
    const bool below_normal = std::fabs(exact) < 0x1p-126;
    const float normal = static_cast<float>(below_normal ? 0.0 : exact); // normal, inf or NaN
    const double units = std::nearbyint(below_normal ? std::fabs(exact) * 0x1p149 : 0.0);
    const auto magnitude = static_cast<uint32_t>(static_cast<int32_t>(units)); // <= 2^23
    const auto sign = static_cast<uint32_t>(std::bit_cast<uint64_t>(exact) >> 63) << 31;
    const float denormal = std::bit_cast<float>(magnitude | sign); // 2^23: the smallest normal
    return below_normal ? denormal : normal;
}

// x as a double, exactly, without reading a denormal float in a float operation.
inline double widen(float x) {
    const uint32_t bits = std::bit_cast<uint32_t>(x);
    const bool subnormal = (bits & 0x7f800000u) == 0;
    const double normal = static_cast<double>(subnormal ? 0.0f : x);
    const double magnitude = static_cast<double>(bits & 0x007fffffu) * 0x1p-149;
    return subnormal ? std::copysign(magnitude, static_cast<double>(std::bit_cast<int32_t>(bits)))
                     : normal;
}

// fl(x * c) for a tiny x: the double product of two floats is exact, rounded once.
inline float mul_tiny(float x, float c) {
    return round_to_float(widen(x) * static_cast<double>(c));
}

// fl(x / d) for a tiny x and 0 < d < 2^29: the quotient rounded to double, then to float. In the
// normal range that is the correctly rounded quotient (Figueroa). Below it, the result is the
// integer nearest to Q = x / d / 2^-149; the double rounding could only go wrong if Q rounded to
// double landed on a half-integer that Q is not, but Q's distance from any half-integer it is not
// is at least 2^-30 (x is a multiple of 2^-149 and d < 2^29 a 24-bit float), more than the
// rounding error Q * 2^-53 < 2^-30.
inline float div_tiny(float x, float d) {
    return round_to_float(widen(x) / static_cast<double>(d));
}

// Whether the scalars allow the tiny path (else the plain loop runs).
template <bool kDecoupled> bool tiny_path_fits(const kernels::AdamArgs<float>& a) {
    auto factor_ok = [](float f) { return f == 0.0f || std::fabs(f) >= kMinFactor; };
    return a.beta1 >= kMinFactor && a.one_minus_beta1 >= kMinOneMinusBeta1 && factor_ok(a.beta2) &&
           a.beta2 <= 1.0f && a.one_minus_beta2 >= kMinFactor && a.one_minus_beta2 <= 1.0f &&
           a.one_minus_beta1 <= 1.0f && std::fabs(a.neg_step_size) >= kMinFactor &&
           a.bias_correction2_sqrt >= kMinBiasCorrection2 && a.eps >= kTiny && a.eps < 0x1p27f &&
           (!kDecoupled || factor_ok(a.decay_factor));
}

// Whether a chunk of n elements should take the tiny path and its other operands allow it: some
// sampled first moment is tiny and nonzero, no gradient, second moment or (decoupled) weight is
// nonzero and tiny, and the divisor stays below 2^29 (div_tiny's bound).
template <bool kDecoupled>
bool chunk_wants_tiny_path(const float* p, const float* g, const float* m, const float* v,
                           int64_t n) {
    // Which path is only a matter of speed (both are exact), so the moments are sampled: a
    // block at the start and one in the middle (an eighth of the chunk's cache lines; a full scan
    // cost a quarter of the update where no moment is tiny). Tiny moments come scattered
    // (columns of always-zero inputs, dead units), so the samples find them.
    constexpr int64_t kSample = 64;
    int any_tiny_moment = 0; // int, not bool: GCC vectorises the reduction
    for (int64_t start : {int64_t(0), n / 2}) {
        const int64_t end = std::min(n, start + kSample);
        for (int64_t i = start; i < end; ++i)
            any_tiny_moment |= int((m[i] != 0.0f) & tiny(m[i]));
    }
    if (any_tiny_moment == 0) return false;
    int other_tiny = 0;
    for (int64_t i = 0; i < n; ++i) {
        const float ga = std::fabs(g[i]);
        other_tiny |= int(((ga != 0.0f) & (ga < kMinGrad)) | ((v[i] != 0.0f) & tiny(v[i])));
        if constexpr (kDecoupled) other_tiny |= int((p[i] != 0.0f) & tiny(p[i]));
        // Large, infinite or NaN (fails the comparison): see below.
        other_tiny |= int(!(v[i] < 0x1p38f) | !(ga < 0x1p19f));
    }
    // With v < 2^38 and |g| < 2^19, v' <= v + g^2 < 2^39 (beta2, 1 - beta2 <= 1), so
    // sqrt(v') / bias_correction2 < 2^19.5 / 2^-8 and with eps < 2^27 the divisor is below 2^29.
    return other_tiny == 0;
}

// adam_fast_element over [0, n) with tiny first moments handled as above: the same bits.
template <bool kDecoupled>
void tiny_loop(float* __restrict p, const float* __restrict g, float* __restrict m,
               float* __restrict v, int64_t n, const kernels::AdamArgs<float>& a) {
    // A float multiply or divide below never reads a tiny operand: such lanes compute with 0 and
    // take the exact result from the double path. Both are computed on every lane and then
    // chosen, so the loop vectorises (GCC does not speculate a guarded operation that may trap).
    for (int64_t i = 0; i < n; ++i) {
        const float grad = g[i];
        float w = p[i];
        if constexpr (kDecoupled) w = w * a.decay_factor;
        const float m0 = m[i];
        const bool m0_tiny = tiny(m0);
        const float m0_scaled_exact = mul_tiny(m0, a.beta1);
        const float m0_scaled_native = (m0_tiny ? 0.0f : m0) * a.beta1;
        const float m_scaled = m0_tiny ? m0_scaled_exact : m0_scaled_native;
        const float stand_in = std::copysign(kTiny, m_scaled);
        const float addend = (m_scaled != 0.0f) & tiny(m_scaled) ? stand_in : m_scaled;
        // fma(c1, 0, x) is x + (c1 * 0); with a nonzero gradient the stand-in rounds the same.
        const float m1_no_grad = m_scaled + a.one_minus_beta1 * grad;
        const float m1_grad = kernels::add_alpha(addend, a.one_minus_beta1, grad);
        const float m1 = grad == 0.0f ? m1_no_grad : m1_grad;
        const float v1 = kernels::addcmul(v[i] * a.beta2, a.one_minus_beta2, grad, grad);
        const float denom = std::sqrt(v1) / a.bias_correction2_sqrt + a.eps;
        const bool m1_tiny = tiny(m1);
        const float step_exact = mul_tiny(m1, a.neg_step_size);
        const float step_native = a.neg_step_size * (m1_tiny ? 0.0f : m1);
        const float step = m1_tiny ? step_exact : step_native;
        const bool step_tiny = std::fabs(step) < kTinyStep;
        const float update_exact = div_tiny(step, denom);
        const float update_native = (step_tiny ? 0.0f : step) / denom;
        m[i] = m1;
        v[i] = v1;
        p[i] = w + (step_tiny ? update_exact : update_native);
    }
}

} // namespace myelin::backend::adam_denormal
