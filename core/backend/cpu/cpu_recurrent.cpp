// The raw recurrent layer loops (see cpu_recurrent.h). Per direction, LSTM and RNN run one
// GEMM per step, [x_t | h_{t-1} | 1] [W_ih | W_hh | b]^T into the step's gate rows, then one fused
// pass over the gates; GRU runs the input projection of all steps first and per step h W_hh^T
// into its own buffer (b_hn sits inside r * (...)). The backward walks the steps in reverse with
// one GEMM per step (dG W_hh into the previous state's gradient) and finishes with one GEMM
// xh^T dG for dW_ih, dW_hh and the bias together (GRU: one each) and one for dx. Every float32
// GEMM runs on oneDNN (recurrent_step_gemm.h). Without h0 the first step's zero state is skipped
// in the forward GEMM, the backward's last GEMM and dW_hh.
#include "backend/cpu/cpu_recurrent.h"

#include "backend/cpu/cpu_nn.h"
#include "backend/cpu/cpu_step_gemm.h"

#include "backend/kernels/recurrent_cell.h"
#include "tensor/tensor_impl.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <type_traits>
#include <utility>

namespace myelin::backend::cpu {
namespace {

// --- BLAS (row-major) ----------------------------------------------------------------------------

// y (= or +=) a^T 1: the column sums of a [m, n], y with stride incy.
inline void column_sums(int64_t m, int64_t n, const float* a, const float* ones, float beta,
                        float* y, int64_t incy) {
    cblas_sgemv(CblasRowMajor, CblasTrans, blasint(m), blasint(n), 1.0f, a, blasint(n), ones, 1,
                beta, y, blasint(incy));
}
inline void column_sums(int64_t m, int64_t n, const double* a, const double* ones, double beta,
                        double* y, int64_t incy) {
    cblas_dgemv(CblasRowMajor, CblasTrans, blasint(m), blasint(n), 1.0, a, blasint(n), ones, 1,
                beta, y, blasint(incy));
}

// Per-step work is parallel over the batch once it is big enough to pay for the fork.
constexpr int64_t kParallelStep = 8192;

// Work buffers come from the tensor allocator, which keeps large blocks: a fresh 8 MB gate buffer
// per call would page-fault all of its pages in again.
template <typename T> struct Scratch {
    Tensor t;
    T* get() const { return t.data<T>(); }
    T& operator[](int64_t i) const { return get()[i]; }
};
template <typename T> Scratch<T> scratch(int64_t n) {
    constexpr DType dt = std::is_same_v<T, float> ? DType::Float32 : DType::Float64;
    return {::myelin::detail::make_tensor({std::max<int64_t>(n, 1)}, dt, kCPU)};
}

// The row of (t, b) and the row distance between consecutive b of one step.
struct RowMap {
    int64_t T, B;
    bool batch_first;
    int64_t first(int64_t t) const { return batch_first ? t : t * B; }
    int64_t stride() const { return batch_first ? T : 1; }
};

// --- forward ---------------------------------------------------------------------------------

// The fused gate pass of one step for one sequence of the batch. Every pointer addresses its own
// H (or gate) values, so they are marked __restrict: the loops vectorise.
#define R __restrict
template <typename T> void rnn_step(bool relu, int64_t H, T* R a, T* R h, T* R o) {
    if (relu) {
        for (int64_t j = 0; j < H; ++j) {
            const T v = kernels::rnn_unit(true, a[j]);
            a[j] = v;
            h[j] = v;
            o[j] = v;
        }
    } else {
        for (int64_t j = 0; j < H; ++j) {
            const T v = kernels::rnn_unit(false, a[j]);
            a[j] = v;
            h[j] = v;
            o[j] = v;
        }
    }
}

template <typename T>
void lstm_step(int64_t H, T* R ai, T* R af, T* R ag, T* R ao, T* R h, T* R c, T* R o, T* R tc) {
    for (int64_t j = 0; j < H; ++j) {
        const kernels::LstmUnit<T> u = kernels::lstm_unit(ai[j], af[j], ag[j], ao[j], c[j]);
        ai[j] = u.i;
        af[j] = u.f;
        ag[j] = u.g;
        ao[j] = u.o;
        tc[j] = u.tc;
        c[j] = u.c;
        h[j] = u.h;
        o[j] = u.h;
    }
}

template <typename T>
void gru_step(int64_t H, T* R ar, T* R az, T* R an, const T* R ghr, const T* R ghz,
              const T* R ghn_in, const T* R b_hn, T* R h, T* R o, T* R ghn) {
    for (int64_t j = 0; j < H; ++j) {
        const T hl = ghn_in[j] + (b_hn ? b_hn[j] : T(0));
        const kernels::GruUnit<T> u =
            kernels::gru_unit(ar[j], az[j], an[j], ghr[j], ghz[j], hl, h[j]);
        ar[j] = u.r;
        az[j] = u.z;
        an[j] = u.n;
        ghn[j] = hl;
        h[j] = u.h;
        o[j] = u.h;
    }
}

template <typename T> struct StepForward {
    RecurrentCell mode;
    int64_t H;
    const T* b_hn; // GRU

    void operator()(T* a, const T* gh, T* h, T* c, T* o, T* tc, T* ghn) const {
        switch (mode) {
        case RecurrentCell::RnnTanh:
        case RecurrentCell::RnnRelu:
            rnn_step(mode == RecurrentCell::RnnRelu, H, a, h, o);
            break;
        case RecurrentCell::Lstm:
            lstm_step(H, a, a + H, a + 2 * H, a + 3 * H, h, c, o, tc);
            break;
        case RecurrentCell::Gru:
            gru_step(H, a, a + H, a + 2 * H, gh, gh + H, gh + 2 * H, b_hn, h, o, ghn);
            break;
        }
    }
};

template <typename T>
void forward_direction(const RecurrentGeometry& s, int d, const T* x, const TypedWeights<T>& w,
                       const T* h0, const T* c0, T* out, T* hn, T* cn, const TypedSaved<T>& saved) {
    const int64_t H = s.H, G = s.gates(), rows = s.rows(), B = s.B, DH = s.D * H;
    const bool lstm = s.cell == RecurrentCell::Lstm, gru = s.cell == RecurrentCell::Gru;
    const RowMap rm{s.T, s.B, s.batch_first};
    T* act = saved.act + d * rows * G;
    const int64_t LX = s.xh_stride();
    // Without a backward to follow (inference) only act is given: xh and cprev are not kept,
    // and the cell's tanh(c) and GRU's W_hn h + b_hn go to one step's scratch rows.
    const bool keep = saved.xh != nullptr;
    T* xh = keep ? saved.xh + d * rows * LX : nullptr;
    T* cprev = keep && lstm ? saved.cprev + d * rows * H : nullptr;
    auto step_rows = scratch<T>(keep || (!lstm && !gru) ? 0 : B * H);
    T* tcs = !lstm ? nullptr : keep ? saved.tc + d * rows * H : step_rows.get();
    T* ghns = !gru ? nullptr : keep ? saved.ghn + d * rows * H : step_rows.get();
    if (keep) {
#pragma omp parallel for if (rows * LX >= (1 << 16))
        for (int64_t r = 0; r < rows; ++r) { // x and the one; the steps fill in h_{t-1}
            std::memcpy(xh + r * LX, x + r * s.I, static_cast<size_t>(s.I) * sizeof(T));
            xh[r * LX + s.I + H] = T(1);
        }
    }

    // LSTM and RNN: per step one GEMM gives the gate rows, [x_t | h_{t-1} | 1] [W_ih | W_hh | b]^T
    // with b = b_ih + b_hh, on the concatenated weights packed once. Its left operand is the
    // step's rows gathered densely into `in` (oneDNN's fastest kernel, brgemm, takes no row
    // padding; xh keeps its aligned stride for the weight gradients' GEMM).
    // GRU: the input projection of every step first (b_ih + b_hh without b_hn), then per step
    // h W_hh^T into its own buffer (b_hn sits inside r * (...)).
    const int64_t I = s.I, K = s.xh_cols();
    const T* bi = w.b_ih[d];
    const T* bh = w.b_hh[d];
    auto bias = scratch<T>(bi ? G : 0);
    for (int64_t j = 0; bi && j < G; ++j)
        bias[j] = bi[j] + (gru && j >= 2 * H ? T(0) : bh[j]);
    const T* b_sum = bi ? bias.get() : nullptr;
    auto w_cat = scratch<T>(gru ? 0 : G * K);
    for (int64_t j = 0; !gru && j < G; ++j) {
        std::copy_n(w.w_ih[d] + j * I, I, w_cat.get() + j * K);
        std::copy_n(w.w_hh[d] + j * H, H, w_cat.get() + j * K + I);
        w_cat[j * K + I + H] = b_sum ? b_sum[j] : T(0);
    }
    if (gru) sequence_gemm<T>(rows, G, I, {x, I, 1}, {w.w_ih[d], 1, I}, b_sum, act, G, false);

    auto h = scratch<T>(B * H);
    auto c = scratch<T>(lstm ? B * H : 0);
    auto gh = scratch<T>(gru ? B * G : 0);
    const int64_t state_bytes = B * H * static_cast<int64_t>(sizeof(T));
    if (h0)
        std::memcpy(h.get(), h0 + d * B * H, static_cast<size_t>(state_bytes));
    else
        std::fill_n(h.get(), B * H, T(0));
    if (lstm) {
        if (c0)
            std::memcpy(c.get(), c0 + d * B * H, static_cast<size_t>(state_bytes));
        else
            std::fill_n(c.get(), B * H, T(0));
    }
    const StepForward<T> step{s.cell, H, gru && bh ? bh + 2 * H : nullptr};
    const int64_t rs = rm.stride();
    auto in = scratch<T>(gru ? 0 : B * K);
    std::optional<StepGemm<T>> gates_xh, gates_x, gru_hh; // the first step without h0: x_t only
    if (gru) {
        gru_hh.emplace(B, G, H, H, G, StepWeights<T>{w.w_hh[d], H, true}, false);
    } else {
        gates_xh.emplace(B, G, K, K, rs * G, StepWeights<T>{w_cat.get(), K, true}, false);
        if (!h0) // x_t W_ih^T + b
            gates_x.emplace(B, G, I, K, rs * G, StepWeights<T>{w_cat.get(), K, true, b_sum}, false);
        for (int64_t b = 0; b < B; ++b)
            in[b * K + I + H] = T(1);
    }
    for (int64_t k = 0; k < s.T; ++k) {
        const int64_t t = d == 0 ? k : s.T - 1 - k;
        const int64_t r0 = rm.first(t);
        T* a_t = act + r0 * G;
        for (int64_t b = 0; b < B; ++b) { // h_{t-1} beside x_t
            const int64_t row = r0 + b * rs;
            const T* hb = h.get() + b * H;
            if (keep) std::memcpy(xh + row * LX + I, hb, sizeof(T) * size_t(H));
            if (gru) continue;
            std::memcpy(in.get() + b * K, x + row * I, sizeof(T) * size_t(I));
            std::memcpy(in.get() + b * K + I, hb, sizeof(T) * size_t(H));
        }
        const bool zero_state = k == 0 && !h0;
        if (!gru)
            (zero_state ? *gates_x : *gates_xh).run(in.get(), a_t);
        else if (!zero_state)
            gru_hh->run(h.get(), gh.get());
        else
            std::fill_n(gh.get(), B * G, T(0));
#pragma omp parallel for if (B * H * (G / H) >= kParallelStep)
        for (int64_t b = 0; b < B; ++b) {
            const int64_t row = r0 + b * rs;
            T* hb = h.get() + b * H;
            if (cprev) std::memcpy(cprev + row * H, c.get() + b * H, sizeof(T) * size_t(H));
            // Kept per row for the backward, else one step's scratch row per sequence.
            const int64_t at = keep ? row : b;
            T* o = out + row * DH + d * H;
            if (s.lengths && t >= s.lengths[b]) { // padded: the state carries over
                std::fill_n(o, H, T(0));
                continue;
            }
            step(a_t + b * rs * G, gru ? gh.get() + b * G : nullptr, hb,
                 lstm ? c.get() + b * H : nullptr, o, lstm ? tcs + at * H : nullptr,
                 gru ? ghns + at * H : nullptr);
        }
    }
    std::memcpy(hn + d * B * H, h.get(), static_cast<size_t>(state_bytes));
    if (lstm) std::memcpy(cn + d * B * H, c.get(), static_cast<size_t>(state_bytes));
}

// The L2 norm over the batch of the gradient reaching the hidden states of step t of direction
// d: dh [B, H] (from the next step, or h_n's) plus the output's gradient at t (dout [rows, D*H];
// null: none), over the sequences with t < their length.
template <typename T>
double step_gradient_norm(const RecurrentGeometry& s, int d, int64_t t, const T* dh,
                          const T* dout) {
    const int64_t H = s.H, DH = s.D * s.H;
    double squares = 0;
    for (int64_t b = 0; b < s.B; ++b) {
        if (s.lengths && t >= s.lengths[b]) continue; // padded: no gradient of its own
        const T* g = dh + b * H;
        const T* y = dout ? dout + s.row(t, b) * DH + d * H : nullptr;
        for (int64_t j = 0; j < H; ++j) {
            const double v = double(g[j]) + (y ? double(y[j]) : 0.0);
            squares += v * v;
        }
    }
    return std::sqrt(squares);
}

// --- backward --------------------------------------------------------------------------------

// One step's gate gradients for one sequence: dh the gradient reaching the new state (from later
// steps), dy the output's (may be null); writes the pre-activation gradients gx (input side) and
// gh (hidden side; GRU only, else gx serves both), the cell gradient carried back (LSTM, in
// place) and the part of the previous state's gradient that bypasses W_hh (GRU: dh * z; else 0).
template <typename T>
void rnn_step_back(bool relu, int64_t H, const T* R a, const T* R dh, const T* R dy, T* R gx,
                   T* R dh_prev) {
    for (int64_t j = 0; j < H; ++j) {
        const T g = dy ? dh[j] + dy[j] : dh[j];
        gx[j] = kernels::rnn_unit_backward(relu, g, a[j]);
        dh_prev[j] = T(0);
    }
}

template <typename T>
void lstm_step_back(int64_t H, const T* R ai, const T* R af, const T* R ag, const T* R ao,
                    const T* R dh, const T* R dy, const T* R cp, const T* R tc, T* R dc, T* R gi,
                    T* R gf, T* R gg, T* R go, T* R dh_prev) {
    for (int64_t j = 0; j < H; ++j) {
        const T g = dy ? dh[j] + dy[j] : dh[j];
        const kernels::LstmUnitGrad<T> d =
            kernels::lstm_unit_backward(g, ai[j], af[j], ag[j], ao[j], tc[j], cp[j], dc[j]);
        gi[j] = d.gi;
        gf[j] = d.gf;
        gg[j] = d.gg;
        go[j] = d.go;
        dc[j] = d.dc;
        dh_prev[j] = T(0);
    }
}

template <typename T>
void gru_step_back(int64_t H, const T* R ar, const T* R az, const T* R an, const T* R dh,
                   const T* R dy, const T* R hp, const T* R ghn, T* R gxr, T* R gxz, T* R gxn,
                   T* R ghr, T* R ghz, T* R ghnn, T* R dh_prev) {
    for (int64_t j = 0; j < H; ++j) {
        const T g = dy ? dh[j] + dy[j] : dh[j];
        const kernels::GruUnitGrad<T> d =
            kernels::gru_unit_backward(g, ar[j], az[j], an[j], hp[j], ghn[j]);
        gxr[j] = d.dr;
        gxz[j] = d.dz;
        gxn[j] = d.dn;
        ghr[j] = d.dr;
        ghz[j] = d.dz;
        ghnn[j] = d.dn * ar[j];
        dh_prev[j] = d.dh;
    }
}
#undef R

template <typename T> struct StepBackward {
    RecurrentCell mode;
    int64_t H;

    void operator()(const T* a, const T* dh, const T* dy, const T* hp, const T* cp, const T* tc,
                    const T* ghn, T* dc, T* gx, T* gh, T* dh_prev) const {
        switch (mode) {
        case RecurrentCell::RnnTanh:
        case RecurrentCell::RnnRelu:
            rnn_step_back(mode == RecurrentCell::RnnRelu, H, a, dh, dy, gx, dh_prev);
            break;
        case RecurrentCell::Lstm:
            lstm_step_back(H, a, a + H, a + 2 * H, a + 3 * H, dh, dy, cp, tc, dc, gx, gx + H,
                           gx + 2 * H, gx + 3 * H, dh_prev);
            break;
        case RecurrentCell::Gru:
            gru_step_back(H, a, a + H, a + 2 * H, dh, dy, hp, ghn, gx, gx + H, gx + 2 * H, gh,
                          gh + H, gh + 2 * H, dh_prev);
            break;
        }
    }
};

// dst [n, m] (rows ldd apart) = src [m, n] (rows lds apart) transposed, in 16 x 16 tiles: src's
// rows are 4 KB apart, and 32 of them would share one L1 set (5x slower).
template <typename T>
void transpose(const T* src, int64_t lds, int64_t m, int64_t n, T* dst, int64_t ldd) {
    constexpr int64_t kTile = 16;
    for (int64_t i0 = 0; i0 < m; i0 += kTile)
        for (int64_t j0 = 0; j0 < n; j0 += kTile)
            for (int64_t i = i0; i < std::min(m, i0 + kTile); ++i)
                for (int64_t j = j0; j < std::min(n, j0 + kTile); ++j)
                    dst[j * ldd + i] = src[i * lds + j];
}

// The rows [lo, hi) of a direction whose saved h_{t-1} may be nonzero. Without h0 the first step
// a direction runs starts from zeros; time-major, its B rows are one block at an end of the
// sequence, which dW_hh then leaves out.
struct RowRange {
    int64_t lo, hi;
};
inline RowRange state_rows(const RecurrentGeometry& s, int d) {
    if (s.has_h0 || s.batch_first || s.T == 1) return {0, s.rows()};
    return d == 0 ? RowRange{s.B, s.rows()} : RowRange{0, s.rows() - s.B};
}

// dW_ih, dW_hh and the bias gradients of one direction from the pre-activation gradients dgx
// (input side) and dgh (hidden side; the same buffer except for GRU) over all rows.
template <typename T>
void weight_gradients(const RecurrentGeometry& s, int d, const T* dgx, const T* dgh, const T* xh,
                      const TypedGrads<T>& g) {
    const int64_t G = s.gates(), H = s.H, I = s.I, rows = s.rows(), LX = s.xh_stride();
    const RowRange hr = state_rows(s, d);
    auto ones = scratch<T>(rows);
    std::fill_n(ones.get(), rows, T(1));
    if (dgx == dgh) {
        if (!g.dw_ih[d] && !g.dw_hh[d] && !g.db_ih[d] && !g.db_hh[d]) return;
        // One GEMM over [x | h | 1]: cat [C, G] = xh^T dG, rows dW_ih^T, dW_hh^T, the bias. In this
        // orientation (the transpose of dG^T xh) oneDNN runs it ~10% faster.
        const int64_t C = s.xh_cols();
        auto cat = scratch<T>(C * G);
        sequence_gemm<T>(C, G, hr.hi - hr.lo, {xh + hr.lo * LX, 1, LX}, {dgx + hr.lo * G, G, 1},
                         nullptr, cat.get(), G, false);
        if (hr.hi - hr.lo < rows) { // the rows left out: their x and their one
            const int64_t r0 = hr.lo == 0 ? hr.hi : 0;
            sequence_gemm<T>(I, G, s.B, {xh + r0 * LX, 1, LX}, {dgx + r0 * G, G, 1}, nullptr,
                             cat.get(), G, true);
            column_sums(s.B, G, dgx + r0 * G, ones.get(), T(1), cat.get() + (I + H) * G, 1);
        }
        if (g.dw_ih[d]) transpose(cat.get(), G, I, G, g.dw_ih[d], I);
        if (g.dw_hh[d]) transpose(cat.get() + I * G, G, H, G, g.dw_hh[d], H);
        if (g.db_ih[d]) std::copy_n(cat.get() + (I + H) * G, G, g.db_ih[d]);
        if (g.db_hh[d]) std::copy_n(cat.get() + (I + H) * G, G, g.db_hh[d]);
        return;
    }
    if (g.dw_hh[d])
        sequence_gemm<T>(G, H, hr.hi - hr.lo, {dgh + hr.lo * G, 1, G}, {xh + hr.lo * LX + I, LX, 1},
                         nullptr, g.dw_hh[d], H, false);
    if (g.dw_ih[d])
        sequence_gemm<T>(G, I, rows, {dgx, 1, G}, {xh, LX, 1}, nullptr, g.dw_ih[d], I, false);
    if (g.db_ih[d]) column_sums(rows, G, dgx, ones.get(), T(0), g.db_ih[d], 1);
    if (g.db_hh[d]) column_sums(rows, G, dgh, ones.get(), T(0), g.db_hh[d], 1);
}

template <typename T>
void backward_direction(const RecurrentGeometry& s, int d, const TypedWeights<T>& w,
                        const TypedSaved<T>& saved, const T* dout, const T* dhn, const T* dcn,
                        const TypedGrads<T>& grads) {
    const int64_t H = s.H, G = s.gates(), rows = s.rows(), B = s.B, DH = s.D * H;
    const bool lstm = s.cell == RecurrentCell::Lstm, gru = s.cell == RecurrentCell::Gru;
    const RowMap rm{s.T, s.B, s.batch_first};
    const T* act = saved.act + d * rows * G;
    const int64_t LX = s.xh_stride();
    const T* xh = saved.xh + d * rows * LX;
    const T* cprev = lstm ? saved.cprev + d * rows * H : nullptr;
    const T* tcs = lstm ? saved.tc + d * rows * H : nullptr;
    const T* ghns = gru ? saved.ghn + d * rows * H : nullptr;

    auto dgx = scratch<T>(rows * G);
    auto dgh_buf = scratch<T>(gru ? rows * G : 0);
    T* dgh = gru ? dgh_buf.get() : dgx.get();
    auto dh = scratch<T>(B * H);
    auto dh_next = scratch<T>(B * H);
    auto dc = scratch<T>(lstm ? B * H : 0);
    if (dhn)
        std::copy_n(dhn + d * B * H, B * H, dh.get());
    else
        std::fill_n(dh.get(), B * H, T(0));
    if (lstm) {
        if (dcn)
            std::copy_n(dcn + d * B * H, B * H, dc.get());
        else
            std::fill_n(dc.get(), B * H, T(0));
    }
    const StepBackward<T> step{s.cell, H};
    const int64_t rs = rm.stride();
    // dh_prev (+)= dG_t W_hh: added to what bypasses W_hh where anything does (GRU's dh * z, a
    // padded step's dh), else written (a sum post-op makes oneDNN's kernel ~7% slower).
    const bool bypass = gru || s.lengths;
    const StepGemm<T> hh(B, H, G, rs * G, H, StepWeights<T>{w.w_hh[d], H, false}, bypass);
    for (int64_t k = s.T - 1; k >= 0; --k) {
        const int64_t t = d == 0 ? k : s.T - 1 - k;
        const int64_t r0 = rm.first(t);
        if (grads.step_grad_norms) // the gradient reaching h_t, before the step consumes it
            grads.step_grad_norms[d * s.T + t] = step_gradient_norm(s, d, t, dh.get(), dout);
#pragma omp parallel for if (B * H * (G / H) >= kParallelStep)
        for (int64_t b = 0; b < B; ++b) {
            const int64_t row = r0 + b * rs;
            T* gx = dgx.get() + row * G;
            T* gh = dgh + row * G;
            T* dhb = dh.get() + b * H;
            T* nb = dh_next.get() + b * H;
            if (s.lengths && t >= s.lengths[b]) { // padded: gradients pass by unchanged
                std::fill_n(gx, G, T(0));
                if (gru) std::fill_n(gh, G, T(0));
                std::copy_n(dhb, H, nb);
                continue;
            }
            step(act + row * G, dhb, dout ? dout + row * DH + d * H : nullptr, xh + row * LX + s.I,
                 lstm ? cprev + row * H : nullptr, lstm ? tcs + row * H : nullptr,
                 gru ? ghns + row * H : nullptr, lstm ? dc.get() + b * H : nullptr, gx, gh, nb);
        }
        // d(previous state) (+)= dG_t W_hh; past the first step only when h0 wants a gradient.
        if (k > 0 || grads.dh0) hh.run(dgh + r0 * G, dh_next.get());
        std::swap(dh, dh_next);
    }
    if (grads.dh0) std::copy_n(dh.get(), B * H, grads.dh0 + d * B * H);
    if (lstm && grads.dc0) std::copy_n(dc.get(), B * H, grads.dc0 + d * B * H);
    weight_gradients(s, d, dgx.get(), dgh, xh, grads);
    if (grads.dx)
        sequence_gemm<T>(rows, s.I, G, {dgx.get(), G, 1}, {w.w_ih[d], s.I, 1}, nullptr, grads.dx,
                         s.I, d > 0);
}

} // namespace

template <typename T>
void recurrent_layer_forward(const RecurrentGeometry& s, const T* x, const TypedWeights<T>& w,
                             const T* h0, const T* c0, T* out, T* hn, T* cn,
                             const TypedSaved<T>& saved) {
    for (int d = 0; d < s.D; ++d)
        forward_direction(s, d, x, w, h0, c0, out, hn, cn, saved);
}

template <typename T>
void recurrent_layer_backward(const RecurrentGeometry& s, const TypedWeights<T>& w,
                              const TypedSaved<T>& saved, const T* dout, const T* dhn, const T* dcn,
                              const TypedGrads<T>& grads) {
    for (int d = 0; d < s.D; ++d)
        backward_direction(s, d, w, saved, dout, dhn, dcn, grads);
}

namespace {

template <typename T> TypedWeights<T> typed(const RecurrentWeights& w) {
    TypedWeights<T> t;
    for (int d = 0; d < 2; ++d) {
        t.w_ih[d] = static_cast<const T*>(w.w_ih[d]);
        t.w_hh[d] = static_cast<const T*>(w.w_hh[d]);
        t.b_ih[d] = static_cast<const T*>(w.b_ih[d]);
        t.b_hh[d] = static_cast<const T*>(w.b_hh[d]);
    }
    return t;
}

template <typename T> TypedSaved<T> typed(const RecurrentSaved& s) {
    return {static_cast<T*>(s.act), static_cast<T*>(s.xh), static_cast<T*>(s.cprev),
            static_cast<T*>(s.tc), static_cast<T*>(s.ghn)};
}

template <typename T> TypedGrads<T> typed(const RecurrentBackwardArgs& a) {
    TypedGrads<T> g;
    g.dx = static_cast<T*>(a.dx);
    g.dh0 = static_cast<T*>(a.dh0);
    g.dc0 = static_cast<T*>(a.dc0);
    for (int d = 0; d < 2; ++d) {
        g.dw_ih[d] = static_cast<T*>(a.dw_ih[d]);
        g.dw_hh[d] = static_cast<T*>(a.dw_hh[d]);
        g.db_ih[d] = static_cast<T*>(a.db_ih[d]);
        g.db_hh[d] = static_cast<T*>(a.db_hh[d]);
    }
    g.step_grad_norms = a.step_grad_norms;
    return g;
}

template <typename T>
void forward_typed(const RecurrentGeometry& g, const RecurrentWeights& w,
                   const RecurrentForwardArgs& a, const RecurrentSaved& saved) {
    recurrent_layer_forward<T>(g, static_cast<const T*>(a.x), typed<T>(w),
                               static_cast<const T*>(a.h0), static_cast<const T*>(a.c0),
                               static_cast<T*>(a.out), static_cast<T*>(a.hn), static_cast<T*>(a.cn),
                               typed<T>(saved));
}

template <typename T>
void backward_typed(const RecurrentGeometry& g, const RecurrentWeights& w,
                    const RecurrentSaved& saved, const RecurrentBackwardArgs& a) {
    recurrent_layer_backward<T>(g, typed<T>(w), typed<T>(saved), static_cast<const T*>(a.dout),
                                static_cast<const T*>(a.dhn), static_cast<const T*>(a.dcn),
                                typed<T>(a));
}

} // namespace

} // namespace myelin::backend::cpu

namespace myelin::backend {

void CpuNnKernels::recurrent_forward(const RecurrentGeometry& g, const RecurrentWeights& w,
                                     const RecurrentForwardArgs& a, const RecurrentSaved& saved) {
    if (g.dtype == DType::Float64)
        cpu::forward_typed<double>(g, w, a, saved);
    else
        cpu::forward_typed<float>(g, w, a, saved);
}

void CpuNnKernels::recurrent_backward(const RecurrentGeometry& g, const RecurrentWeights& w,
                                      const RecurrentSaved& saved, const RecurrentBackwardArgs& a) {
    if (g.dtype == DType::Float64)
        cpu::backward_typed<double>(g, w, saved, a);
    else
        cpu::backward_typed<float>(g, w, saved, a);
}

} // namespace myelin::backend
