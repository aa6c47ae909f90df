#pragma once
// Element-wise math shared by the CPU and CUDA backends: each functor is a pure function of its
// operands, callable from host and device code, so the CPU tests cover the CUDA math too.
#include "backend/backend.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#ifdef __CUDACC__
#define MYELIN_HD __host__ __device__ inline
#else
#define MYELIN_HD inline
#endif

namespace myelin::kernels {

using backend::OpParams;

// Bits of a float as int and back (memcpy: valid in host and device code, folds to a move).
MYELIN_HD int32_t float_bits(float f) {
    int32_t i;
    std::memcpy(&i, &f, sizeof i);
    return i;
}
MYELIN_HD float bits_float(int32_t i) {
    float f;
    std::memcpy(&f, &i, sizeof f);
    return f;
}
// c ? a : b through bit masks: a plain ?: lets the compiler move arithmetic into a conditional
// block, which under the default -ftrapping-math stops the vectoriser.
MYELIN_HD float bit_select(bool c, float a, float b) {
    const int32_t m = -static_cast<int32_t>(c);
    return bits_float((float_bits(a) & m) | (float_bits(b) & ~m));
}

// exp for float in branch-free, vectorisable form (std::exp does not vectorise without
// -ffast-math, which we refuse): Cephes polynomial after Cody-Waite range reduction. At most
// 0.99 ulp over the float range, overflow to inf, gradual underflow, NaN passed through.
MYELIN_HD float fast_expf(float x) {
    float xc = bit_select(x > -104.0f, x, -104.0f); // also maps NaN to a finite value
    xc = bit_select(xc < 88.8f, xc, 88.8f);
    // Round x*log2(e) to nearest with the 1.5*2^23 trick (exact under default rounding).
    const float fn = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    const int n = static_cast<int>(fn);
    const float r = (xc - fn * 0.693359375f) - fn * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    // 2^n in two factors so n down to -150 (subnormal results) needs no special case.
    const int n1 = n >> 1;
    const int n2 = n - n1;
    return bit_select(x != x, x, p * bits_float((n1 + 127) << 23) * bits_float((n2 + 127) << 23));
}
MYELIN_HD double fast_exp(double x) {
    return std::exp(x);
}
MYELIN_HD float fast_exp(float x) {
    return fast_expf(x);
}

// OP is a template argument so each loop instantiation folds the switch and vectorises.
template <backend::UnaryOp OP, typename T> MYELIN_HD T apply_unary(T x, const OpParams& p) {
    using U = backend::UnaryOp;
    constexpr T kSqrt1_2 = T(0.70710678118654752440);
    constexpr T kSqrt2OverPi = T(0.79788456080286535588);
    switch (OP) {
    case U::Neg:
        return -x;
    case U::Abs:
        return x < T(0) ? -x : x;
    case U::Sign:
        return T((x > T(0)) - (x < T(0)));
    case U::Reciprocal:
        return T(1) / x;
    case U::Square:
        return x * x;
    case U::Exp:
        return fast_exp(x);
    case U::Log:
        return std::log(x);
    case U::Log1p:
        return std::log1p(x);
    case U::Sqrt:
        return std::sqrt(x);
    case U::Rsqrt:
        return T(1) / std::sqrt(x);
    case U::Sin:
        return std::sin(x);
    case U::Cos:
        return std::cos(x);
    case U::Tanh:
        return std::tanh(x);
    case U::Sigmoid:
        return T(1) / (T(1) + fast_exp(-x));
    case U::Relu: // PyTorch's clamp_min(x, 0): NaN and -0.0 pass through
        return x < T(0) ? T(0) : x;
    case U::LeakyRelu:
        return x > T(0) ? x : x * T(p.a);
    case U::Elu:
        return x > T(0) ? x : T(p.a) * std::expm1(x);
    case U::Gelu:
        return T(0.5) * x * (T(1) + std::erf(x * kSqrt1_2));
    case U::GeluTanh: {
        const T inner = kSqrt2OverPi * (x + T(0.044715) * x * x * x);
        return T(0.5) * x * (T(1) + std::tanh(inner));
    }
    case U::Silu:
        return x / (T(1) + fast_exp(-x));
    case U::Softplus: {
        const T bx = x * T(p.a);
        return bx > T(p.b) ? x : std::log1p(std::exp(bx)) / T(p.a);
    }
    case U::PowScalar:
        return std::pow(x, T(p.a));
    case U::RPowScalar:
        return std::pow(T(p.a), x);
    case U::AddScalar:
        return x + T(p.a);
    case U::MulScalar:
        return x * T(p.a);
    case U::DivScalar:
        return x / T(p.a);
    case U::RSubScalar:
        return T(p.a) - x;
    case U::RDivScalar:
        return T(p.a) / x;
    case U::Clamp: {
        // NaN stays NaN (PyTorch), so compare in the order that keeps it.
        T y = x < T(p.a) ? T(p.a) : x;
        return y > T(p.b) ? T(p.b) : y;
    }
    default:
        return x;
    }
}

// Integer unary math (the subset PyTorch keeps integral).
template <backend::UnaryOp OP> MYELIN_HD int64_t apply_unary_int(int64_t x, const OpParams& p) {
    using U = backend::UnaryOp;
    switch (OP) {
    case U::Neg:
        return -x;
    case U::Abs:
        return x < 0 ? -x : x;
    case U::Sign:
        return (x > 0) - (x < 0);
    case U::Square:
        return x * x;
    case U::Relu:
        return x > 0 ? x : 0;
    case U::AddScalar:
        return x + static_cast<int64_t>(p.a);
    case U::MulScalar:
        return x * static_cast<int64_t>(p.a);
    case U::RSubScalar:
        return static_cast<int64_t>(p.a) - x;
    case U::Clamp: {
        const double y = static_cast<double>(x) < p.a ? p.a : static_cast<double>(x);
        return static_cast<int64_t>(y > p.b ? p.b : y);
    }
    default:
        return x;
    }
}

template <typename T> MYELIN_HD T gelu_grad(T x) {
    constexpr T kSqrt1_2 = T(0.70710678118654752440);
    constexpr T kInvSqrt2Pi = T(0.39894228040143267794);
    const T cdf = T(0.5) * (T(1) + std::erf(x * kSqrt1_2));
    const T pdf = kInvSqrt2Pi * std::exp(T(-0.5) * x * x);
    return cdf + x * pdf;
}

template <typename T> MYELIN_HD T gelu_tanh_grad(T x) {
    constexpr T kBeta = T(0.79788456080286535588); // sqrt(2/pi)
    constexpr T kKappa = T(0.044715);
    const T x_sq = x * x;
    const T inner = kBeta * (x + kKappa * x_sq * x);
    const T t = std::tanh(inner);
    const T left = T(0.5) * x;
    const T right = T(1) + t;
    const T left_derivative = T(0.5) * right;
    const T right_derivative = (T(1) - t * t) * kBeta * (T(1) + T(3) * kKappa * x_sq);
    return left_derivative + left * right_derivative;
}

// Binary ops on the compute type. Comparisons return 0/1 in T (the loop stores them as bool).
template <backend::BinaryOp OP, typename T> MYELIN_HD T apply_binary(T a, T b, const OpParams& p) {
    using B = backend::BinaryOp;
    switch (OP) {
    case B::Add:
        return a + T(p.a) * b;
    case B::Sub:
        return a - T(p.a) * b;
    case B::Mul:
        return a * b;
    case B::Div:
        return a / b;
    case B::Pow:
        return std::pow(a, b);
    case B::Maximum:
        return (a != a || b != b) ? a + b : (a > b ? a : b);
    case B::Minimum:
        return (a != a || b != b) ? a + b : (a < b ? a : b);
    case B::Eq:
        return a == b;
    case B::Ne:
        return a != b;
    case B::Lt:
        return a < b;
    case B::Le:
        return a <= b;
    case B::Gt:
        return a > b;
    case B::Ge:
        return a >= b;
    case B::ReluBackward: // PyTorch's threshold_backward: a NaN input passes the gradient
        return b <= T(0) ? T(0) : a;
    case B::LeakyReluBackward:
        return b > T(0) ? a : a * T(p.a);
    case B::EluBackward:
        return b > T(0) ? a : a * T(p.a) * std::exp(b);
    case B::GeluBackward:
        return a * gelu_grad(b);
    case B::GeluTanhBackward:
        return a * gelu_tanh_grad(b);
    case B::SiluBackward: {
        const T s = T(1) / (T(1) + fast_exp(-b));
        return a * s * (T(1) + b * (T(1) - s));
    }
    case B::SoftplusBackward: {
        const T z = std::exp(b * T(p.a));
        return b * T(p.a) > T(p.b) ? a : a * z / (z + T(1));
    }
    case B::SigmoidBackward:
        return a * (T(1) - b) * b;
    case B::TanhBackward:
        return a * (T(1) - b * b);
    default:
        return a;
    }
}

template <backend::BinaryOp OP>
MYELIN_HD int64_t apply_binary_int(int64_t a, int64_t b, const OpParams& p) {
    using B = backend::BinaryOp;
    switch (OP) {
    case B::Add:
        return a + static_cast<int64_t>(p.a) * b;
    case B::Sub:
        return a - static_cast<int64_t>(p.a) * b;
    case B::Mul:
        return a * b;
    case B::Maximum:
        return a > b ? a : b;
    case B::Minimum:
        return a < b ? a : b;
    case B::Eq:
        return a == b;
    case B::Ne:
        return a != b;
    case B::Lt:
        return a < b;
    case B::Le:
        return a <= b;
    case B::Gt:
        return a > b;
    case B::Ge:
        return a >= b;
    default:
        return a;
    }
}

} // namespace myelin::kernels
