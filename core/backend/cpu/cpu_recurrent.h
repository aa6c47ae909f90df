#pragma once
// The CPU's recurrent layer (sequence_kernels.h: NnKernels::recurrent_forward / _backward): the
// raw forward and backward of one layer (all its directions) over a whole sequence, on
// contiguous float32 / float64 buffers typed here; the geometry and the buffers' layout are
// sequence_kernels.h's.
#include "backend/sequence_kernels.h"

#include <cstdint>

namespace myelin::backend::cpu {

// One layer's parameters, per direction (biases null without bias).
template <typename T> struct TypedWeights {
    const T* w_ih[2] = {nullptr, nullptr}; // [G, I]
    const T* w_hh[2] = {nullptr, nullptr}; // [G, H]
    const T* b_ih[2] = {nullptr, nullptr}; // [G]
    const T* b_hh[2] = {nullptr, nullptr}; // [G]
};

// The saved buffers (RecurrentSaved's layout), typed.
template <typename T> struct TypedSaved {
    T* act = nullptr;
    T* xh = nullptr;
    T* cprev = nullptr;
    T* tc = nullptr;
    T* ghn = nullptr;
};

// x [rows, I]; h0, c0 [D, B, H] or null (zeros); out [rows, D * H] (direction d in columns
// d*H .. d*H + H; padded positions written as zeros); hn, cn [D, B, H].
template <typename T>
void recurrent_layer_forward(const RecurrentGeometry& s, const T* x, const TypedWeights<T>& w,
                             const T* h0, const T* c0, T* out, T* hn, T* cn,
                             const TypedSaved<T>& saved);

// Gradients of one layer. dout [rows, D*H], dhn, dcn [D, B, H] may be null (no gradient).
// Results may be null when not needed: dx [rows, I], dh0, dc0 [D, B, H], and per direction
// dw_ih [G, I], dw_hh [G, H], db_ih, db_hh [G]. Every result is overwritten, not accumulated.
template <typename T> struct TypedGrads {
    T* dx = nullptr;
    T* dh0 = nullptr;
    T* dc0 = nullptr;
    T* dw_ih[2] = {nullptr, nullptr};
    T* dw_hh[2] = {nullptr, nullptr};
    T* db_ih[2] = {nullptr, nullptr};
    T* db_hh[2] = {nullptr, nullptr};
    // When set: [D, T], the L2 norm over the batch of dL/dh_t per direction and time step
    // (RecurrentBackwardArgs::step_grad_norms). Null (the default) records nothing.
    double* step_grad_norms = nullptr;
};

template <typename T>
void recurrent_layer_backward(const RecurrentGeometry& s, const TypedWeights<T>& w,
                              const TypedSaved<T>& saved, const T* dout, const T* dhn, const T* dcn,
                              const TypedGrads<T>& grads);

} // namespace myelin::backend::cpu
