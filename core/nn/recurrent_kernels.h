#pragma once
// Internal: the raw forward and backward of one recurrent layer (all its directions) over a
// whole sequence, on contiguous float32 / float64 buffers. functional_recurrent.cpp validates,
// allocates and records the autograd node around them.
//
// Rows: the layer's input x has T * B rows, in the order of the caller's layout: row(t, b) is
// t * B + b (time-major) or b * T + t (batch_first), so neither layout is ever transposed. Every
// per-row buffer below (gates, saved states, the output) uses the same row order.
#include <myelin/nn/recurrent.h>

#include <cstdint>

namespace myelin::nn::detail {

struct RecurrentLayerShape {
    RecurrentMode mode = RecurrentMode::Lstm;
    int64_t T = 0, B = 0, I = 0, H = 0;
    int D = 1; // directions
    bool batch_first = false;
    const int64_t* lengths = nullptr; // [B], each in 1..T; null: every sequence has T steps
    bool has_h0 = false; // false: the states start from zeros (the backward skips them)

    int64_t gates() const { return recurrent_gate_count(mode) * H; } // G: columns of W_ih
    int64_t rows() const { return T * B; }
    // A row of RecurrentSaved::xh: I + H + 1 values, the stride rounded up to 16 so every row
    // starts 64-byte aligned.
    int64_t xh_cols() const { return I + H + 1; }
    int64_t xh_stride() const { return (xh_cols() + 15) / 16 * 16; }
};

// One layer's parameters, per direction (biases null without bias).
template <typename T> struct RecurrentLayerWeights {
    const T* w_ih[2] = {nullptr, nullptr}; // [G, I]
    const T* w_hh[2] = {nullptr, nullptr}; // [G, H]
    const T* b_ih[2] = {nullptr, nullptr}; // [G]
    const T* b_hh[2] = {nullptr, nullptr}; // [G]
};

// What the forward keeps for the backward, each [D, rows, ...]:
//   act   [D, rows, G]  the gate activations (LSTM i,f,g,o; GRU r,z,n; RNN the new state)
//   xh    [D, rows, xh_stride()]  per row [x_t | h_{t-1} | 1]: the step's input, the hidden state
//                       it started from and a one, side by side, so that one GEMM xh^T dG gives
//                       dW_ih, dW_hh and the bias gradient together (dG is read once)
//   cprev [D, rows, H]  LSTM: the cell state each step started from
//   tc    [D, rows, H]  LSTM: tanh of the new cell state
//   ghn   [D, rows, H]  GRU: W_hn h + b_hn
template <typename T> struct RecurrentSaved {
    T* act = nullptr;
    T* xh = nullptr;
    T* cprev = nullptr;
    T* tc = nullptr;
    T* ghn = nullptr;
};

// x [rows, I]; h0, c0 [D, B, H] or null (zeros); out [rows, D * H] (direction d in columns
// d*H .. d*H + H; padded positions written as zeros); hn, cn [D, B, H].
template <typename T>
void recurrent_layer_forward(const RecurrentLayerShape& s, const T* x,
                             const RecurrentLayerWeights<T>& w, const T* h0, const T* c0, T* out,
                             T* hn, T* cn, const RecurrentSaved<T>& saved);

// Gradients of one layer. dout [rows, D*H], dhn, dcn [D, B, H] may be null (no gradient).
// Results may be null when not needed: dx [rows, I], dh0, dc0 [D, B, H], and per direction
// dw_ih [G, I], dw_hh [G, H], db_ih, db_hh [G]. Every result is overwritten, not accumulated.
template <typename T> struct RecurrentLayerGrads {
    T* dx = nullptr;
    T* dh0 = nullptr;
    T* dc0 = nullptr;
    T* dw_ih[2] = {nullptr, nullptr};
    T* dw_hh[2] = {nullptr, nullptr};
    T* db_ih[2] = {nullptr, nullptr};
    T* db_hh[2] = {nullptr, nullptr};
    // When set: [D, T], the L2 norm over the batch of dL/dh_t per direction and time step
    // (recurrent_step_norms.h). Null (the default) records nothing.
    double* step_grad_norms = nullptr;
};

template <typename T>
void recurrent_layer_backward(const RecurrentLayerShape& s, const RecurrentLayerWeights<T>& w,
                              const RecurrentSaved<T>& saved, const T* dout, const T* dhn,
                              const T* dcn, const RecurrentLayerGrads<T>& grads);

} // namespace myelin::nn::detail
