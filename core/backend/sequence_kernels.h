#pragma once
// The sequence-model entries of a backend's NN table (nn_kernels.h): a whole recurrent layer
// (every time step of every direction) forward and backward, the per-head products and the
// softmax of multi-head attention, and a strided matrix product with a fused bias (linear).
// nn/ checks shapes, allocates the buffers below on the tensor's device and records the autograd
// nodes; a backend runs them where supports(Recurrent / AttentionHeads / Matmul, dtype) says so,
// and nn/ composes the layer from smaller ops elsewhere. Every pointer below addresses the
// backend's own memory, contiguous, of the geometry's dtype, unless its comment says otherwise.
#include <myelin/dtype.h>

#include <cstdint>

namespace myelin::kernels {
struct DropoutStream; // kernels/dropout.h
}

namespace myelin::backend {

// --- recurrent layers -------------------------------------------------------------------------

// PyTorch's cells: RNN with tanh or ReLU, LSTM (gates i, f, g, o), GRU (gates r, z, n).
enum class RecurrentCell : uint8_t { RnnTanh, RnnRelu, Lstm, Gru };

inline int64_t recurrent_gate_count(RecurrentCell cell) {
    return cell == RecurrentCell::Lstm ? 4 : cell == RecurrentCell::Gru ? 3 : 1;
}

// One layer of T steps over a batch of B, input size I, hidden size H, D directions.
// Rows: the layer's input x has T * B rows, in the order of the caller's layout: row(t, b) is
// t * B + b (time-major) or b * T + t (batch_first), so neither layout is ever transposed. Every
// per-row buffer (gates, saved states, the output) uses the same row order.
struct RecurrentGeometry {
    RecurrentCell cell = RecurrentCell::Lstm;
    DType dtype = DType::Float32;
    int64_t T = 0, B = 0, I = 0, H = 0;
    int D = 1;
    bool batch_first = false;
    const int64_t* lengths = nullptr; // host memory, [B], each in 1..T; null: every sequence T
    bool has_h0 = false; // false: the states start from zeros (the backward skips them)

    int64_t gates() const { return recurrent_gate_count(cell) * H; } // G: rows of W_ih
    int64_t rows() const { return T * B; }
    int64_t row(int64_t t, int64_t b) const { return batch_first ? b * T + t : t * B + b; }
    // A row of RecurrentSaved::xh: I + H + 1 values, the stride rounded up to 16 so every row
    // starts 64-byte aligned.
    int64_t xh_cols() const { return I + H + 1; }
    int64_t xh_stride() const { return (xh_cols() + 15) / 16 * 16; }
};

// One layer's parameters per direction (biases null without bias): w_ih [G, I], w_hh [G, H],
// b_ih, b_hh [G].
struct RecurrentWeights {
    const void* w_ih[2] = {nullptr, nullptr};
    const void* w_hh[2] = {nullptr, nullptr};
    const void* b_ih[2] = {nullptr, nullptr};
    const void* b_hh[2] = {nullptr, nullptr};
};

// What the forward keeps for the backward, each [D, rows, ...], allocated by the caller:
//   act   [D, rows, G]  the gate activations (LSTM i,f,g,o; GRU r,z,n; RNN the new state)
//   xh    [D, rows, xh_stride()]  per row [x_t | h_{t-1} | 1]: the step's input, the hidden state
//                       it started from and a one, side by side, so that one GEMM xh^T dG gives
//                       dW_ih, dW_hh and the bias gradient together (dG is read once)
//   cprev [D, rows, H]  LSTM: the cell state each step started from
//   tc    [D, rows, H]  LSTM: tanh of the new cell state
//   ghn   [D, rows, H]  GRU: W_hn h + b_hn
// Without a backward to follow (inference) only act is given; the others are null and not kept.
struct RecurrentSaved {
    void* act = nullptr;
    void* xh = nullptr;
    void* cprev = nullptr;
    void* tc = nullptr;
    void* ghn = nullptr;
};

// x [rows, I]; h0, c0 [D, B, H] or null (zeros); out [rows, D * H] (direction d in columns
// d*H .. d*H + H; padded positions written as zeros); hn, cn [D, B, H] (cn: LSTM only).
struct RecurrentForwardArgs {
    const void* x = nullptr;
    const void* h0 = nullptr;
    const void* c0 = nullptr;
    void* out = nullptr;
    void* hn = nullptr;
    void* cn = nullptr;
};

// The backward's inputs: dout [rows, D*H], dhn, dcn [D, B, H], each may be null (no gradient).
// Its results, null when not needed: dx [rows, I], dh0, dc0 [D, B, H], and per direction dw_ih
// [G, I], dw_hh [G, H], db_ih, db_hh [G]. Every result is overwritten, not accumulated.
struct RecurrentBackwardArgs {
    const void* dout = nullptr;
    const void* dhn = nullptr;
    const void* dcn = nullptr;
    void* dx = nullptr;
    void* dh0 = nullptr;
    void* dc0 = nullptr;
    void* dw_ih[2] = {nullptr, nullptr};
    void* dw_hh[2] = {nullptr, nullptr};
    void* db_ih[2] = {nullptr, nullptr};
    void* db_hh[2] = {nullptr, nullptr};
    // Host memory, when set: [D, T], the L2 norm over the batch of dL/dh_t per direction and time
    // step: the gradient reaching the hidden state of step t (from the next step, or h_n's) plus
    // the output's gradient at t, over the sequences with t < their length. Null: none.
    double* step_grad_norms = nullptr;
};

// --- attention --------------------------------------------------------------------------------

// Head matrices read and written in place: matrix n = (b, h) of an operand starts at
// p + b * sb + h * sh (in elements) and has row stride ld, so the heads of a projection
// [B, L, 3E] (or [L, B, 3E]) are addressed where the projection wrote them, and an output or
// gradient is written straight into the merged [.., E] / [.., 3E] layout: no split or merge copies.
struct HeadOperand {
    const void* p = nullptr;
    int64_t sb = 0, sh = 0, ld = 0;
    bool trans = false; // the stored matrix is op()'s transpose
};
struct HeadResult {
    void* p = nullptr;
    int64_t sb = 0, sh = 0, ld = 0;
};

// For every (b, h) of B x H: C = alpha * op(A) op(B) + beta * C, op(A) [M, K], op(B) [K, N],
// C [M, N]. K == 0 leaves beta * C (zeros when beta is 0).
struct HeadGemmGeometry {
    DType dtype = DType::Float32;
    int64_t B = 0, H = 0, M = 0, N = 0, K = 0;
    double alpha = 1.0, beta = 0.0;
};

// --- matrix product ---------------------------------------------------------------------------

// One operand of Matmul: element (i, k) at p[i * rs + k * cs]; rs or cs is 1.
struct MatmulOperand {
    const void* p = nullptr;
    int64_t rs = 0, cs = 0;
};

// y [M, N] (= or += with accumulate) a [M, K] @ b [K, N], plus bias [N] (may be null; only
// without accumulate) on every row; y's rows ldy apart; M, N, K > 0.
struct MatmulGeometry {
    DType dtype = DType::Float32;
    int64_t M = 0, N = 0, K = 0, ldy = 0;
    bool accumulate = false;
};

} // namespace myelin::backend
