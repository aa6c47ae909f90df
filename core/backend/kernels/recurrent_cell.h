#pragma once
// The element math of PyTorch's recurrent cells, forward and backward, shared by the CPU's fused
// gate loops (cpu_recurrent.cpp) and the CUDA step kernels (cuda_sequence.cu): each function is
// one hidden unit of one sequence, so the CPU tests cover the CUDA math too.
#include "backend/kernels/elementwise.h"

#include <cmath>

namespace myelin::kernels {

MYELIN_HD float cell_sigmoid(float x) {
    return 1.0f / (1.0f + fast_expf(-x));
}
MYELIN_HD double cell_sigmoid(double x) {
    return 1.0 / (1.0 + exp(-x));
}

// tanh in branch-free, vectorisable form (std::tanh does not vectorise): Cephes' tanhf, an odd
// polynomial below |x| = 0.625 and 1 - 2 / (exp(2|x|) + 1) above; about 2 ulp.
MYELIN_HD float cell_tanh(float x) {
    const float ax = fabsf(x);
    const float z = x * x;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    const float small = p * z * x + x;
    const float big = copysignf(1.0f - 2.0f / (fast_expf(2.0f * ax) + 1.0f), x);
    return bit_select(ax < 0.625f, small, big);
}
MYELIN_HD double cell_tanh(double x) {
    return tanh(x);
}

template <typename T> MYELIN_HD T cell_relu(T x) {
    return x > T(0) ? x : T(0);
}

// --- forward: gate pre-activations in, activations and states out ---------------------------

template <typename T> struct LstmUnit {
    T i, f, g, o; // the gates' activations
    T c, tc, h;   // the new cell state, its tanh, the new hidden state
};
// a*: the gates' pre-activations (x W_ih^T + h W_hh^T + both biases); c: the previous cell state.
template <typename T> MYELIN_HD LstmUnit<T> lstm_unit(T ai, T af, T ag, T ao, T c) {
    LstmUnit<T> u;
    u.i = cell_sigmoid(ai);
    u.f = cell_sigmoid(af);
    u.g = cell_tanh(ag);
    u.o = cell_sigmoid(ao);
    u.c = u.f * c + u.i * u.g;
    u.tc = cell_tanh(u.c);
    u.h = u.o * u.tc;
    return u;
}

template <typename T> struct GruUnit { T r, z, n, h; };
// xr, xz, xn: the input side's pre-activations (b_ih and, for r and z, b_hh included); hr, hz:
// the hidden side's; hn: W_hn h + b_hn (inside r * (...)); h: the previous state.
template <typename T> MYELIN_HD GruUnit<T> gru_unit(T xr, T xz, T xn, T hr, T hz, T hn, T h) {
    GruUnit<T> u;
    u.r = cell_sigmoid(xr + hr);
    u.z = cell_sigmoid(xz + hz);
    u.n = cell_tanh(xn + u.r * hn);
    u.h = u.n + u.z * (h - u.n); // PyTorch's form
    return u;
}

template <typename T> MYELIN_HD T rnn_unit(bool relu, T a) {
    return relu ? cell_relu(a) : cell_tanh(a);
}

// --- backward: g is the gradient reaching the new hidden state (from later steps and the output)

template <typename T> struct LstmUnitGrad {
    T gi, gf, gg, go; // the pre-activations' gradients
    T dc;             // the gradient carried to the previous cell state
};
// i, f, gv, o: the gates' activations; tc: tanh of the new cell state; cp: the previous cell
// state; dc: the gradient reaching the new cell state from the next step.
template <typename T>
MYELIN_HD LstmUnitGrad<T> lstm_unit_backward(T g, T i, T f, T gv, T o, T tc, T cp, T dc) {
    const T dcy = dc + g * o * (T(1) - tc * tc);
    LstmUnitGrad<T> r;
    r.gi = dcy * gv * i * (T(1) - i);
    r.gf = dcy * cp * f * (T(1) - f);
    r.gg = dcy * i * (T(1) - gv * gv);
    r.go = g * tc * o * (T(1) - o);
    r.dc = dcy * f;
    return r;
}

template <typename T> struct GruUnitGrad {
    T dr, dz, dn; // the pre-activations' gradients (the hidden side's n gradient is dn * r)
    T dh;         // the part of the previous state's gradient that bypasses W_hh
};
// r, z, n: the gates' activations; hp: the previous state; hn: W_hn h + b_hn.
template <typename T> MYELIN_HD GruUnitGrad<T> gru_unit_backward(T g, T r, T z, T n, T hp, T hn) {
    GruUnitGrad<T> d;
    d.dn = g * (T(1) - z) * (T(1) - n * n);
    d.dr = d.dn * hn * r * (T(1) - r);
    d.dz = g * (hp - n) * z * (T(1) - z);
    d.dh = g * z;
    return d;
}

// a: the new state (the activation's output).
template <typename T> MYELIN_HD T rnn_unit_backward(bool relu, T g, T a) {
    return relu ? (a > T(0) ? g : T(0)) : g * (T(1) - a * a);
}

} // namespace myelin::kernels
