// The raw recurrent layer loops (see recurrent_kernels.h). Per direction, LSTM and RNN run one
// GEMM per step, [x_t | h_{t-1} | 1] [W_ih | W_hh | b]^T into the step's gate rows, then one fused
// pass over the gates; GRU runs the input projection of all steps first and per step h W_hh^T
// into its own buffer (b_hn sits inside r * (...)). The backward walks the steps in reverse with
// one GEMM per step (dG W_hh into the previous state's gradient) and finishes with one GEMM
// xh^T dG for dW_ih, dW_hh and the bias together (GRU: one each) and one for dx. Every float32
// GEMM runs on oneDNN (recurrent_step_gemm.h). Without h0 the first step's zero state is skipped
// in the forward GEMM, the backward's last GEMM and dW_hh.
#include "nn/recurrent_kernels.h"

#include "nn/recurrent_step_gemm.h"
#include "nn/recurrent_step_norms.h"

#include "backend/kernels/elementwise.h"
#include "tensor/tensor_impl.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <type_traits>
#include <utility>

namespace myelin::nn::detail {
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

// --- activations -----------------------------------------------------------------------------

inline float sigmoid(float x) {
    return 1.0f / (1.0f + kernels::fast_expf(-x));
}
inline double sigmoid(double x) {
    return 1.0 / (1.0 + std::exp(-x));
}

// tanh in branch-free, vectorisable form (std::tanh does not vectorise): Cephes' tanhf, an odd
// polynomial below |x| = 0.625 and 1 - 2 / (exp(2|x|) + 1) above; about 2 ulp.
inline float tanh_act(float x) {
    const float ax = std::fabs(x);
    const float z = x * x;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    const float small = p * z * x + x;
    const float big = std::copysign(1.0f - 2.0f / (kernels::fast_expf(2.0f * ax) + 1.0f), x);
    return kernels::bit_select(ax < 0.625f, small, big);
}
inline double tanh_act(double x) {
    return std::tanh(x);
}

template <typename T> inline T relu_act(T x) {
    return x > T(0) ? x : T(0);
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
            const T v = relu_act(a[j]);
            a[j] = v;
            h[j] = v;
            o[j] = v;
        }
    } else {
        for (int64_t j = 0; j < H; ++j) {
            const T v = tanh_act(a[j]);
            a[j] = v;
            h[j] = v;
            o[j] = v;
        }
    }
}

template <typename T>
void lstm_step(int64_t H, T* R ai, T* R af, T* R ag, T* R ao, T* R h, T* R c, T* R o, T* R tc) {
    for (int64_t j = 0; j < H; ++j) {
        const T i = sigmoid(ai[j]);
        const T f = sigmoid(af[j]);
        const T g = tanh_act(ag[j]);
        const T og = sigmoid(ao[j]);
        const T cy = f * c[j] + i * g;
        const T t = tanh_act(cy);
        const T hy = og * t;
        ai[j] = i;
        af[j] = f;
        ag[j] = g;
        ao[j] = og;
        tc[j] = t;
        c[j] = cy;
        h[j] = hy;
        o[j] = hy;
    }
}

template <typename T>
void gru_step(int64_t H, T* R ar, T* R az, T* R an, const T* R ghr, const T* R ghz,
              const T* R ghn_in, const T* R b_hn, T* R h, T* R o, T* R ghn) {
    for (int64_t j = 0; j < H; ++j) {
        const T r = sigmoid(ar[j] + ghr[j]);
        const T z = sigmoid(az[j] + ghz[j]);
        const T hl = ghn_in[j] + (b_hn ? b_hn[j] : T(0));
        const T n = tanh_act(an[j] + r * hl);
        const T hy = n + z * (h[j] - n); // PyTorch's form
        ar[j] = r;
        az[j] = z;
        an[j] = n;
        ghn[j] = hl;
        h[j] = hy;
        o[j] = hy;
    }
}

template <typename T> struct StepForward {
    RecurrentMode mode;
    int64_t H;
    const T* b_hn; // GRU

    void operator()(T* a, const T* gh, T* h, T* c, T* o, T* tc, T* ghn) const {
        switch (mode) {
        case RecurrentMode::RnnTanh:
        case RecurrentMode::RnnRelu:
            rnn_step(mode == RecurrentMode::RnnRelu, H, a, h, o);
            break;
        case RecurrentMode::Lstm:
            lstm_step(H, a, a + H, a + 2 * H, a + 3 * H, h, c, o, tc);
            break;
        case RecurrentMode::Gru:
            gru_step(H, a, a + H, a + 2 * H, gh, gh + H, gh + 2 * H, b_hn, h, o, ghn);
            break;
        }
    }
};

template <typename T>
void forward_direction(const RecurrentLayerShape& s, int d, const T* x,
                       const RecurrentLayerWeights<T>& w, const T* h0, const T* c0, T* out, T* hn,
                       T* cn, const RecurrentSaved<T>& saved) {
    const int64_t H = s.H, G = s.gates(), rows = s.rows(), B = s.B, DH = s.D * H;
    const bool lstm = s.mode == RecurrentMode::Lstm, gru = s.mode == RecurrentMode::Gru;
    const RowMap rm{s.T, s.B, s.batch_first};
    T* act = saved.act + d * rows * G;
    const int64_t LX = s.xh_stride();
    T* xh = saved.xh + d * rows * LX;
    T* cprev = lstm ? saved.cprev + d * rows * H : nullptr;
    T* tcs = lstm ? saved.tc + d * rows * H : nullptr;
    T* ghns = gru ? saved.ghn + d * rows * H : nullptr;
#pragma omp parallel for if (rows * LX >= (1 << 16))
    for (int64_t r = 0; r < rows; ++r) { // x and the one; the steps fill in h_{t-1}
        std::memcpy(xh + r * LX, x + r * s.I, static_cast<size_t>(s.I) * sizeof(T));
        xh[r * LX + s.I + H] = T(1);
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
    const StepForward<T> step{s.mode, H, gru && bh ? bh + 2 * H : nullptr};
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
            std::memcpy(xh + row * LX + I, hb, sizeof(T) * size_t(H));
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
            if (lstm) std::memcpy(cprev + row * H, c.get() + b * H, sizeof(T) * size_t(H));
            T* o = out + row * DH + d * H;
            if (s.lengths && t >= s.lengths[b]) { // padded: the state carries over
                std::fill_n(o, H, T(0));
                continue;
            }
            step(a_t + b * rs * G, gru ? gh.get() + b * G : nullptr, hb,
                 lstm ? c.get() + b * H : nullptr, o, lstm ? tcs + row * H : nullptr,
                 gru ? ghns + row * H : nullptr);
        }
    }
    std::memcpy(hn + d * B * H, h.get(), static_cast<size_t>(state_bytes));
    if (lstm) std::memcpy(cn + d * B * H, c.get(), static_cast<size_t>(state_bytes));
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
        gx[j] = relu ? (a[j] > T(0) ? g : T(0)) : g * (T(1) - a[j] * a[j]);
        dh_prev[j] = T(0);
    }
}

template <typename T>
void lstm_step_back(int64_t H, const T* R ai, const T* R af, const T* R ag, const T* R ao,
                    const T* R dh, const T* R dy, const T* R cp, const T* R tc, T* R dc, T* R gi,
                    T* R gf, T* R gg, T* R go, T* R dh_prev) {
    for (int64_t j = 0; j < H; ++j) {
        const T g = dy ? dh[j] + dy[j] : dh[j];
        const T i = ai[j], f = af[j], gv = ag[j], o = ao[j];
        const T t = tc[j];
        const T dcy = dc[j] + g * o * (T(1) - t * t);
        gi[j] = dcy * gv * i * (T(1) - i);
        gf[j] = dcy * cp[j] * f * (T(1) - f);
        gg[j] = dcy * i * (T(1) - gv * gv);
        go[j] = g * t * o * (T(1) - o);
        dc[j] = dcy * f;
        dh_prev[j] = T(0);
    }
}

template <typename T>
void gru_step_back(int64_t H, const T* R ar, const T* R az, const T* R an, const T* R dh,
                   const T* R dy, const T* R hp, const T* R ghn, T* R gxr, T* R gxz, T* R gxn,
                   T* R ghr, T* R ghz, T* R ghnn, T* R dh_prev) {
    for (int64_t j = 0; j < H; ++j) {
        const T g = dy ? dh[j] + dy[j] : dh[j];
        const T r = ar[j], z = az[j], n = an[j];
        const T dnp = g * (T(1) - z) * (T(1) - n * n);
        const T drp = dnp * ghn[j] * r * (T(1) - r);
        const T dzp = g * (hp[j] - n) * z * (T(1) - z);
        gxr[j] = drp;
        gxz[j] = dzp;
        gxn[j] = dnp;
        ghr[j] = drp;
        ghz[j] = dzp;
        ghnn[j] = dnp * r;
        dh_prev[j] = g * z;
    }
}
#undef R

template <typename T> struct StepBackward {
    RecurrentMode mode;
    int64_t H;

    void operator()(const T* a, const T* dh, const T* dy, const T* hp, const T* cp, const T* tc,
                    const T* ghn, T* dc, T* gx, T* gh, T* dh_prev) const {
        switch (mode) {
        case RecurrentMode::RnnTanh:
        case RecurrentMode::RnnRelu:
            rnn_step_back(mode == RecurrentMode::RnnRelu, H, a, dh, dy, gx, dh_prev);
            break;
        case RecurrentMode::Lstm:
            lstm_step_back(H, a, a + H, a + 2 * H, a + 3 * H, dh, dy, cp, tc, dc, gx, gx + H,
                           gx + 2 * H, gx + 3 * H, dh_prev);
            break;
        case RecurrentMode::Gru:
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
inline RowRange state_rows(const RecurrentLayerShape& s, int d) {
    if (s.has_h0 || s.batch_first || s.T == 1) return {0, s.rows()};
    return d == 0 ? RowRange{s.B, s.rows()} : RowRange{0, s.rows() - s.B};
}

// dW_ih, dW_hh and the bias gradients of one direction from the pre-activation gradients dgx
// (input side) and dgh (hidden side; the same buffer except for GRU) over all rows.
template <typename T>
void weight_gradients(const RecurrentLayerShape& s, int d, const T* dgx, const T* dgh, const T* xh,
                      const RecurrentLayerGrads<T>& g) {
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
void backward_direction(const RecurrentLayerShape& s, int d, const RecurrentLayerWeights<T>& w,
                        const RecurrentSaved<T>& saved, const T* dout, const T* dhn, const T* dcn,
                        const RecurrentLayerGrads<T>& grads) {
    const int64_t H = s.H, G = s.gates(), rows = s.rows(), B = s.B, DH = s.D * H;
    const bool lstm = s.mode == RecurrentMode::Lstm, gru = s.mode == RecurrentMode::Gru;
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
    const StepBackward<T> step{s.mode, H};
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
void recurrent_layer_forward(const RecurrentLayerShape& s, const T* x,
                             const RecurrentLayerWeights<T>& w, const T* h0, const T* c0, T* out,
                             T* hn, T* cn, const RecurrentSaved<T>& saved) {
    for (int d = 0; d < s.D; ++d)
        forward_direction(s, d, x, w, h0, c0, out, hn, cn, saved);
}

template <typename T>
void recurrent_layer_backward(const RecurrentLayerShape& s, const RecurrentLayerWeights<T>& w,
                              const RecurrentSaved<T>& saved, const T* dout, const T* dhn,
                              const T* dcn, const RecurrentLayerGrads<T>& grads) {
    for (int d = 0; d < s.D; ++d)
        backward_direction(s, d, w, saved, dout, dhn, dcn, grads);
}

template void recurrent_layer_forward<float>(const RecurrentLayerShape&, const float*,
                                             const RecurrentLayerWeights<float>&, const float*,
                                             const float*, float*, float*, float*,
                                             const RecurrentSaved<float>&);
template void recurrent_layer_forward<double>(const RecurrentLayerShape&, const double*,
                                              const RecurrentLayerWeights<double>&, const double*,
                                              const double*, double*, double*, double*,
                                              const RecurrentSaved<double>&);
template void recurrent_layer_backward<float>(const RecurrentLayerShape&,
                                              const RecurrentLayerWeights<float>&,
                                              const RecurrentSaved<float>&, const float*,
                                              const float*, const float*,
                                              const RecurrentLayerGrads<float>&);
template void recurrent_layer_backward<double>(const RecurrentLayerShape&,
                                               const RecurrentLayerWeights<double>&,
                                               const RecurrentSaved<double>&, const double*,
                                               const double*, const double*,
                                               const RecurrentLayerGrads<double>&);

} // namespace myelin::nn::detail
