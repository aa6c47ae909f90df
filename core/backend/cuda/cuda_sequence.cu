// The CUDA backend's sequence entries (sequence_kernels.h), float32 and float64.
//
// A recurrent layer runs, per direction, one cuBLAS GEMM for the input projection of every step
// (x W_ih^T into the saved gate buffer), then per step one GEMM h W_hh^T and one fused cell
// kernel (kernels/recurrent_cell.h, the CPU loops' element math) that adds the biases, applies
// the gates, writes the new states, the output and what the backward keeps: two launches a step.
// The backward runs per step one fused kernel (the gate gradients, the cell gradient carried
// back) and one GEMM dG_t W_hh into the previous state's gradient, then the weight gradients over
// the whole sequence as four GEMMs (dW_ih, dW_hh, the two bias sums) and dx as one. The buffers'
// layout is the CPU's (RecurrentSaved), so either backend's forward pairs with its own backward.
//
// Attention: each head product is one strided-batched cuBLAS GEMM per batch entry over the H
// heads; the softmax (dropout fused, the same counter-based mask as the CPU's) and its backward
// run one thread per row. Not run here (no GPU): the GPU kit (docs/gpu.md) checks them against
// the CPU.
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_nn.h"
#include "backend/kernels/dropout.h"
#include "backend/kernels/recurrent_cell.h"

#include <cublas_v2.h>

#include <climits>
#include <cmath>
#include <mutex>
#include <string>
#include <vector>

namespace myelin::backend::cuda {

namespace {

void check_blas(cublasStatus_t status, const char* what) {
    if (status != CUBLAS_STATUS_SUCCESS)
        throw DeviceError(std::string("cuBLAS ") + what + " failed (status " +
                          std::to_string(int(status)) + ")");
}

void check_cuda(cudaError_t error, const char* what) {
    if (error != cudaSuccess)
        throw DeviceError(std::string("CUDA ") + what + ": " + cudaGetErrorString(error));
}

// The sequence kernels' own cuBLAS handle (default stream, default math: no TF32, as exact as
// PyTorch's recurrent layers with allow_tf32 off), created on first use.
cublasHandle_t blas() {
    static std::once_flag once;
    static cublasHandle_t handle = nullptr;
    std::call_once(once, [] { check_blas(cublasCreate(&handle), "create"); });
    return handle;
}

int as_int(int64_t v) {
    if (v > INT_MAX) throw DeviceError("a recurrent or attention size beyond 2^31 - 1 on CUDA");
    return int(v);
}

// Row-major C [M, N] (rows ldc apart) = alpha * op(A) op(B) + beta * C, op(A) [M, K], op(B)
// [K, N]; A stored [M, K] (or [K, M] when ta) with rows lda apart, B likewise. cuBLAS is
// column-major: C^T = op(B)^T op(A)^T, B first.
template <typename T>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
          const T* B, int64_t ldb, T beta, T* C, int64_t ldc, int64_t batch = 1,
          int64_t stride_a = 0, int64_t stride_b = 0, int64_t stride_c = 0) {
    const cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if constexpr (std::is_same_v<T, float>)
        check_blas(cublasSgemmStridedBatched(blas(), ob, oa, as_int(N), as_int(M), as_int(K),
                                             &alpha, B, as_int(ldb), stride_b, A, as_int(lda),
                                             stride_a, &beta, C, as_int(ldc), stride_c,
                                             as_int(batch)),
                   "sgemm");
    else
        check_blas(cublasDgemmStridedBatched(blas(), ob, oa, as_int(N), as_int(M), as_int(K),
                                             &alpha, B, as_int(ldb), stride_b, A, as_int(lda),
                                             stride_a, &beta, C, as_int(ldc), stride_c,
                                             as_int(batch)),
                   "dgemm");
}

template <typename T> __global__ void fill_kernel(T* p, int64_t n, T value) {
    MYELIN_GRID_LOOP(i, n) p[i] = value;
}
template <typename T> void fill(T* p, int64_t n, T value) {
    if (n == 0) return;
    fill_kernel<T><<<blocks_for(n), kThreads>>>(p, n, value);
    check_launch("recurrent fill");
}
template <typename T> void copy(T* dst, const T* src, int64_t n) {
    if (n)
        check_cuda(cudaMemcpyAsync(dst, src, size_t(n) * sizeof(T), cudaMemcpyDeviceToDevice),
                   "copy");
}

// --- recurrent layers ----------------------------------------------------------------------------

// What every step kernel of one direction reads.
template <typename T> struct Direction {
    RecurrentCell cell;
    int64_t T_, B, I, H, G, LX, DH;
    int d;
    bool batch_first;
    const int64_t* lengths; // device memory, or null
    T* act;
    T* xh;
    T* cprev; // LSTM
    T* tc;    // LSTM
    T* ghn;   // GRU
    const T* b_ih;
    const T* b_hh;

    __device__ int64_t row(int64_t t, int64_t b) const {
        return batch_first ? b * T_ + t : t * B + b;
    }
    __device__ bool padded(int64_t t, int64_t b) const { return lengths && t >= lengths[b]; }
    __device__ T bias(int64_t q, int64_t j, bool hidden_too) const {
        T v = b_ih ? b_ih[q * H + j] : T(0);
        if (hidden_too && b_hh) v += b_hh[q * H + j];
        return v;
    }
};

// x into the first I columns of xh and the one after h's columns, for every row.
template <typename T>
__global__ void fill_xh_kernel(int64_t rows, int64_t I, int64_t H, int64_t LX, const T* x, T* xh) {
    MYELIN_GRID_LOOP(i, rows * (I + 1)) {
        const int64_t r = i / (I + 1), k = i % (I + 1);
        xh[r * LX + (k < I ? k : I + H)] = k < I ? x[r * I + k] : T(1);
    }
}

// One step t: gh [B, G] = h W_hh^T (null: a zero state), h / c [B, H] the states, updated.
template <typename T>
__global__ void cell_forward_kernel(Direction<T> s, int64_t t, const T* gh, T* h, T* c, T* out) {
    MYELIN_GRID_LOOP(i, s.B * s.H) {
        const int64_t b = i / s.H, j = i % s.H, r = s.row(t, b);
        if (s.xh) s.xh[r * s.LX + s.I + j] = h[i]; // the state this step starts from
        if (s.cprev) s.cprev[r * s.H + j] = c[i];
        T* o = out + r * s.DH + s.d * s.H + j;
        if (s.padded(t, b)) { // the state carries over
            *o = T(0);
            continue;
        }
        T* a = s.act + r * s.G;
        auto hidden = [&](int64_t q) { return gh ? gh[b * s.G + q * s.H + j] : T(0); };
        switch (s.cell) {
        case RecurrentCell::Lstm: {
            T pre[4];
            for (int q = 0; q < 4; ++q)
                pre[q] = a[q * s.H + j] + s.bias(q, j, true) + hidden(q);
            const kernels::LstmUnit<T> u = kernels::lstm_unit(pre[0], pre[1], pre[2], pre[3], c[i]);
            a[j] = u.i;
            a[s.H + j] = u.f;
            a[2 * s.H + j] = u.g;
            a[3 * s.H + j] = u.o;
            if (s.tc) s.tc[r * s.H + j] = u.tc;
            c[i] = u.c;
            h[i] = u.h;
            *o = u.h;
            break;
        }
        case RecurrentCell::Gru: {
            const T hn = hidden(2) + (s.b_hh ? s.b_hh[2 * s.H + j] : T(0));
            const kernels::GruUnit<T> u = kernels::gru_unit(
                a[j] + s.bias(0, j, true), a[s.H + j] + s.bias(1, j, true),
                a[2 * s.H + j] + s.bias(2, j, false), hidden(0), hidden(1), hn, h[i]);
            a[j] = u.r;
            a[s.H + j] = u.z;
            a[2 * s.H + j] = u.n;
            if (s.ghn) s.ghn[r * s.H + j] = hn;
            h[i] = u.h;
            *o = u.h;
            break;
        }
        default: {
            const T v = kernels::rnn_unit(s.cell == RecurrentCell::RnnRelu,
                                          a[j] + s.bias(0, j, true) + hidden(0));
            a[j] = v;
            h[i] = v;
            *o = v;
            break;
        }
        }
    }
}

// One step t backward: dh [B, H] the gradient reaching the new state; writes the gate gradients
// (dgx; dgh for GRU's hidden side, else dgh == dgx), dc (LSTM, in place) and dh_next, the part of
// the previous state's gradient that bypasses W_hh (the GEMM adds the rest).
template <typename T>
__global__ void cell_backward_kernel(Direction<T> s, int64_t t, const T* dout, const T* dh, T* dc,
                                     T* dgx, T* dgh, T* dh_next) {
    MYELIN_GRID_LOOP(i, s.B * s.H) {
        const int64_t b = i / s.H, j = i % s.H, r = s.row(t, b);
        const int gates = int(s.G / s.H);
        T* gx = dgx + r * s.G;
        T* gh = dgh + r * s.G;
        if (s.padded(t, b)) { // gradients pass by unchanged
            for (int q = 0; q < gates; ++q) {
                gx[q * s.H + j] = T(0);
                gh[q * s.H + j] = T(0);
            }
            dh_next[i] = dh[i];
            continue;
        }
        const T g = dout ? dh[i] + dout[r * s.DH + s.d * s.H + j] : dh[i];
        const T* a = s.act + r * s.G;
        switch (s.cell) {
        case RecurrentCell::Lstm: {
            const kernels::LstmUnitGrad<T> d =
                kernels::lstm_unit_backward(g, a[j], a[s.H + j], a[2 * s.H + j], a[3 * s.H + j],
                                            s.tc[r * s.H + j], s.cprev[r * s.H + j], dc[i]);
            gx[j] = d.gi;
            gx[s.H + j] = d.gf;
            gx[2 * s.H + j] = d.gg;
            gx[3 * s.H + j] = d.go;
            dc[i] = d.dc;
            dh_next[i] = T(0);
            break;
        }
        case RecurrentCell::Gru: {
            const kernels::GruUnitGrad<T> d = kernels::gru_unit_backward(
                g, a[j], a[s.H + j], a[2 * s.H + j], s.xh[r * s.LX + s.I + j], s.ghn[r * s.H + j]);
            gx[j] = d.dr;
            gx[s.H + j] = d.dz;
            gx[2 * s.H + j] = d.dn;
            gh[j] = d.dr;
            gh[s.H + j] = d.dz;
            gh[2 * s.H + j] = d.dn * a[j];
            dh_next[i] = d.dh;
            break;
        }
        default:
            gx[j] = kernels::rnn_unit_backward(s.cell == RecurrentCell::RnnRelu, g, a[j]);
            dh_next[i] = T(0);
            break;
        }
    }
}

// The squared L2 norm over the valid sequences of dh + the output's gradient at step t, into
// *norm (one block, a tree over the threads' partial sums in double).
template <typename T>
__global__ void step_norm_kernel(Direction<T> s, int64_t t, const T* dh, const T* dout,
                                 double* norm) {
    __shared__ double partial[kThreads];
    double sum = 0;
    for (int64_t i = threadIdx.x; i < s.B * s.H; i += blockDim.x) {
        const int64_t b = i / s.H, j = i % s.H;
        if (s.padded(t, b)) continue;
        const double v =
            double(dh[i]) + (dout ? double(dout[s.row(t, b) * s.DH + s.d * s.H + j]) : 0.0);
        sum += v * v;
    }
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
        if (int(threadIdx.x) < half) partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) *norm = partial[0];
}

template <typename T>
Direction<T> direction(const RecurrentGeometry& g, int d, const RecurrentWeights& w,
                       const RecurrentSaved& saved, const int64_t* lengths) {
    const int64_t rows = g.rows(), G = g.gates(), H = g.H, LX = g.xh_stride();
    auto at = [&](void* p, int64_t per_row) {
        return p ? static_cast<T*>(p) + d * rows * per_row : nullptr;
    };
    return {g.cell,
            g.T,
            g.B,
            g.I,
            H,
            G,
            LX,
            g.D * H,
            d,
            g.batch_first,
            lengths,
            at(saved.act, G),
            at(saved.xh, LX),
            at(saved.cprev, H),
            at(saved.tc, H),
            at(saved.ghn, H),
            static_cast<const T*>(w.b_ih[d]),
            static_cast<const T*>(w.b_hh[d])};
}

// The lengths in device memory (null without them), for the step kernels.
class DeviceLengths {
  public:
    DeviceLengths(Backend& device, const RecurrentGeometry& g)
        : scratch_(device, g.lengths ? size_t(g.B) * sizeof(int64_t) : 0) {
        if (g.lengths)
            check_cuda(cudaMemcpy(scratch_.as<int64_t>(), g.lengths, size_t(g.B) * sizeof(int64_t),
                                  cudaMemcpyHostToDevice),
                       "copy of the sequence lengths");
    }
    const int64_t* get() const { return scratch_.as<int64_t>(); }

  private:
    Scratch scratch_;
};

template <typename T>
void recurrent_forward_typed(Backend& device, const RecurrentGeometry& g, const RecurrentWeights& w,
                             const RecurrentForwardArgs& args, const RecurrentSaved& saved) {
    const int64_t rows = g.rows(), B = g.B, H = g.H, G = g.gates(), I = g.I;
    const bool lstm = g.cell == RecurrentCell::Lstm;
    const DeviceLengths lengths(device, g);
    Scratch h(device, size_t(B * H) * sizeof(T)), c(device, lstm ? size_t(B * H) * sizeof(T) : 0),
        gh(device, size_t(B * G) * sizeof(T));
    const T* x = static_cast<const T*>(args.x);
    for (int d = 0; d < g.D; ++d) {
        const Direction<T> s = direction<T>(g, d, w, saved, lengths.get());
        if (s.xh) { // kept for the backward only
            fill_xh_kernel<T><<<blocks_for(rows * (I + 1)), kThreads>>>(rows, I, H, s.LX, x, s.xh);
            check_launch("recurrent input rows");
        }
        // act [rows, G] = x W_ih^T: every step's input projection at once.
        gemm<T>(false, true, rows, G, I, T(1), x, I, static_cast<const T*>(w.w_ih[d]), I, T(0),
                s.act, G);
        const T* h0 = static_cast<const T*>(args.h0);
        const T* c0 = static_cast<const T*>(args.c0);
        if (h0)
            copy(h.as<T>(), h0 + d * B * H, B * H);
        else
            fill(h.as<T>(), B * H, T(0));
        if (lstm) {
            if (c0)
                copy(c.as<T>(), c0 + d * B * H, B * H);
            else
                fill(c.as<T>(), B * H, T(0));
        }
        for (int64_t k = 0; k < g.T; ++k) {
            const int64_t t = d == 0 ? k : g.T - 1 - k;
            const bool zero_state = k == 0 && !h0;
            if (!zero_state) // gh [B, G] = h W_hh^T
                gemm<T>(false, true, B, G, H, T(1), h.as<T>(), H, static_cast<const T*>(w.w_hh[d]),
                        H, T(0), gh.as<T>(), G);
            cell_forward_kernel<T>
                <<<blocks_for(B * H), kThreads>>>(s, t, zero_state ? nullptr : gh.as<T>(),
                                                  h.as<T>(), c.as<T>(), static_cast<T*>(args.out));
            check_launch("recurrent cell");
        }
        copy(static_cast<T*>(args.hn) + d * B * H, h.as<T>(), B * H);
        if (lstm) copy(static_cast<T*>(args.cn) + d * B * H, c.as<T>(), B * H);
    }
}

template <typename T>
void recurrent_backward_typed(Backend& device, const RecurrentGeometry& g,
                              const RecurrentWeights& w, const RecurrentSaved& saved,
                              const RecurrentBackwardArgs& args) {
    const int64_t rows = g.rows(), B = g.B, H = g.H, G = g.gates(), I = g.I;
    const bool lstm = g.cell == RecurrentCell::Lstm, gru = g.cell == RecurrentCell::Gru;
    const DeviceLengths lengths(device, g);
    Scratch dgx(device, size_t(rows * G) * sizeof(T)),
        dgh_buf(device, gru ? size_t(rows * G) * sizeof(T) : 0),
        dh(device, size_t(B * H) * sizeof(T)), dh_next(device, size_t(B * H) * sizeof(T)),
        dc(device, lstm ? size_t(B * H) * sizeof(T) : 0), ones(device, size_t(rows) * sizeof(T)),
        norms(device, args.step_grad_norms ? size_t(g.D * g.T) * sizeof(double) : 0);
    fill(ones.as<T>(), rows, T(1));
    T* dgh = gru ? dgh_buf.as<T>() : dgx.as<T>();
    const T* dout = static_cast<const T*>(args.dout);
    const int64_t rs = g.batch_first ? g.T : 1; // rows between consecutive b of one step
    for (int d = 0; d < g.D; ++d) {
        const Direction<T> s = direction<T>(g, d, w, saved, lengths.get());
        T* cur = dh.as<T>();
        T* next = dh_next.as<T>();
        if (args.dhn)
            copy(cur, static_cast<const T*>(args.dhn) + d * B * H, B * H);
        else
            fill(cur, B * H, T(0));
        if (lstm) {
            if (args.dcn)
                copy(dc.as<T>(), static_cast<const T*>(args.dcn) + d * B * H, B * H);
            else
                fill(dc.as<T>(), B * H, T(0));
        }
        for (int64_t k = g.T - 1; k >= 0; --k) {
            const int64_t t = d == 0 ? k : g.T - 1 - k;
            if (args.step_grad_norms) {
                step_norm_kernel<T>
                    <<<1, kThreads>>>(s, t, cur, dout, norms.as<double>() + d * g.T + t);
                check_launch("recurrent step norm");
            }
            cell_backward_kernel<T><<<blocks_for(B * H), kThreads>>>(s, t, dout, cur, dc.as<T>(),
                                                                     dgx.as<T>(), dgh, next);
            check_launch("recurrent cell backward");
            // next += dG_t W_hh: the step's gate rows (rs * G apart) times W_hh [G, H].
            const int64_t r0 = g.batch_first ? t : t * B;
            if (k > 0 || args.dh0)
                gemm<T>(false, false, B, H, G, T(1), dgh + r0 * G, rs * G,
                        static_cast<const T*>(w.w_hh[d]), H, T(1), next, H);
            std::swap(cur, next);
        }
        if (args.dh0) copy(static_cast<T*>(args.dh0) + d * B * H, cur, B * H);
        if (lstm && args.dc0) copy(static_cast<T*>(args.dc0) + d * B * H, dc.as<T>(), B * H);
        // dW_ih [G, I] = dgx^T x; dW_hh [G, H] = dgh^T h_prev (rows from a zero state add 0);
        // the biases' gradients are the column sums.
        if (args.dw_ih[d])
            gemm<T>(true, false, G, I, rows, T(1), dgx.as<T>(), G, s.xh, s.LX, T(0),
                    static_cast<T*>(args.dw_ih[d]), I);
        if (args.dw_hh[d])
            gemm<T>(true, false, G, H, rows, T(1), dgh, G, s.xh + I, s.LX, T(0),
                    static_cast<T*>(args.dw_hh[d]), H);
        if (args.db_ih[d])
            gemm<T>(false, false, 1, G, rows, T(1), ones.as<T>(), rows, dgx.as<T>(), G, T(0),
                    static_cast<T*>(args.db_ih[d]), G);
        if (args.db_hh[d])
            gemm<T>(false, false, 1, G, rows, T(1), ones.as<T>(), rows, dgh, G, T(0),
                    static_cast<T*>(args.db_hh[d]), G);
        if (args.dx) // dx [rows, I] (+)= dgx W_ih
            gemm<T>(false, false, rows, I, G, T(1), dgx.as<T>(), G,
                    static_cast<const T*>(w.w_ih[d]), I, d > 0 ? T(1) : T(0),
                    static_cast<T*>(args.dx), I);
    }
    if (args.step_grad_norms) {
        std::vector<double> squares(size_t(g.D * g.T));
        check_cuda(cudaMemcpy(squares.data(), norms.as<double>(), squares.size() * sizeof(double),
                              cudaMemcpyDeviceToHost),
                   "copy of the step gradient norms");
        for (size_t i = 0; i < squares.size(); ++i)
            args.step_grad_norms[i] = std::sqrt(squares[i]);
    }
}

// --- attention -----------------------------------------------------------------------------------

template <typename T> __global__ void scale_heads_kernel(HeadGemmGeometry g, HeadResult c) {
    MYELIN_GRID_LOOP(i, g.B * g.H * g.M * g.N) {
        const int64_t q = i % g.N, r = (i / g.N) % g.M, n = i / (g.N * g.M);
        T* p = static_cast<T*>(c.p) + (n / g.H) * c.sb + (n % g.H) * c.sh + r * c.ld + q;
        *p = g.beta == 0.0 ? T(0) : T(g.beta) * *p;
    }
}

template <typename T>
void head_gemm_typed(const HeadGemmGeometry& g, const HeadOperand& a, const HeadOperand& b,
                     const HeadResult& c) {
    if (g.B == 0 || g.H == 0 || g.M == 0 || g.N == 0) return;
    if (g.K == 0) { // an empty sum: cuBLAS may leave C untouched
        scale_heads_kernel<T><<<blocks_for(g.B * g.H * g.M * g.N), kThreads>>>(g, c);
        check_launch("attention heads");
        return;
    }
    for (int64_t n = 0; n < g.B; ++n)
        gemm<T>(a.trans, b.trans, g.M, g.N, g.K, T(g.alpha), static_cast<const T*>(a.p) + n * a.sb,
                a.ld, static_cast<const T*>(b.p) + n * b.sb, b.ld, T(g.beta),
                static_cast<T*>(c.p) + n * c.sb, c.ld, g.H, a.sh, b.sh, c.sh);
}

template <typename T>
__global__ void attention_softmax_kernel(const T* scores, int64_t rows, int64_t S, T* P,
                                         kernels::DropoutStream drop, bool dropping, T* attn,
                                         uint8_t* keep) {
    MYELIN_GRID_LOOP(r, rows) {
        const T* x = scores + r * S;
        T* p = P + r * S;
        T m = -INFINITY;
        for (int64_t j = 0; j < S; ++j)
            m = x[j] > m ? x[j] : m;
        // NaN in the row, or a max of -inf / +inf, makes x - m NaN somewhere: the whole row too.
        T sum = 0;
        for (int64_t j = 0; j < S; ++j) {
            const T e = kernels::fast_exp(T(x[j] - m));
            p[j] = e;
            sum += e;
        }
        const T inv = T(1) / sum;
        const T keep_scale = T(drop.keep_scale);
        for (int64_t j = 0; j < S; ++j) {
            const T v = p[j] * inv;
            p[j] = v;
            if (!dropping) continue;
            const bool kept = drop.keep(uint64_t(r * S + j));
            attn[r * S + j] = v * (kept ? keep_scale : T(0));
            keep[r * S + j] = kept;
        }
    }
}

template <typename T>
__global__ void attention_softmax_backward_kernel(const T* P, const T* dattn, int64_t rows,
                                                  int64_t S, kernels::DropoutStream drop,
                                                  bool dropping, const uint8_t* keep, T* dS) {
    MYELIN_GRID_LOOP(r, rows) {
        const T* p = P + r * S;
        const T* g = dattn + r * S;
        T* d = dS + r * S;
        const T keep_scale = T(drop.keep_scale);
        T dot = 0;
        for (int64_t j = 0; j < S; ++j) {
            const T v = dropping ? g[j] * (keep[r * S + j] ? keep_scale : T(0)) : g[j];
            d[j] = v;
            dot += p[j] * v;
        }
        for (int64_t j = 0; j < S; ++j)
            d[j] = p[j] * (d[j] - dot);
    }
}

} // namespace

void CudaNnKernels::recurrent_forward(const RecurrentGeometry& g, const RecurrentWeights& w,
                                      const RecurrentForwardArgs& a, const RecurrentSaved& saved) {
    if (g.dtype == DType::Float64)
        recurrent_forward_typed<double>(device_, g, w, a, saved);
    else
        recurrent_forward_typed<float>(device_, g, w, a, saved);
}

void CudaNnKernels::recurrent_backward(const RecurrentGeometry& g, const RecurrentWeights& w,
                                       const RecurrentSaved& saved,
                                       const RecurrentBackwardArgs& a) {
    if (g.dtype == DType::Float64)
        recurrent_backward_typed<double>(device_, g, w, saved, a);
    else
        recurrent_backward_typed<float>(device_, g, w, saved, a);
}

void CudaNnKernels::head_gemm(const HeadGemmGeometry& g, const HeadOperand& a, const HeadOperand& b,
                              const HeadResult& c) {
    if (g.dtype == DType::Float64)
        head_gemm_typed<double>(g, a, b, c);
    else
        head_gemm_typed<float>(g, a, b, c);
}

void CudaNnKernels::attention_softmax(DType dtype, const void* scores, int64_t rows, int64_t S,
                                      void* P, const kernels::DropoutStream* drop, void* attn,
                                      uint8_t* keep) {
    const kernels::DropoutStream stream = drop ? *drop : kernels::DropoutStream(0, 0.0);
    if (rows == 0 || S == 0) return;
    if (dtype == DType::Float64)
        attention_softmax_kernel<double><<<blocks_for(rows), kThreads>>>(
            static_cast<const double*>(scores), rows, S, static_cast<double*>(P), stream,
            drop != nullptr, static_cast<double*>(attn), keep);
    else
        attention_softmax_kernel<float><<<blocks_for(rows), kThreads>>>(
            static_cast<const float*>(scores), rows, S, static_cast<float*>(P), stream,
            drop != nullptr, static_cast<float*>(attn), keep);
    check_launch("attention softmax");
}

void CudaNnKernels::attention_softmax_backward(DType dtype, const void* P, const void* dattn,
                                               int64_t rows, int64_t S,
                                               const kernels::DropoutStream* drop,
                                               const uint8_t* keep, void* dS) {
    const kernels::DropoutStream stream = drop ? *drop : kernels::DropoutStream(0, 0.0);
    if (rows == 0 || S == 0) return;
    if (dtype == DType::Float64)
        attention_softmax_backward_kernel<double><<<blocks_for(rows), kThreads>>>(
            static_cast<const double*>(P), static_cast<const double*>(dattn), rows, S, stream,
            drop != nullptr, keep, static_cast<double*>(dS));
    else
        attention_softmax_backward_kernel<float><<<blocks_for(rows), kThreads>>>(
            static_cast<const float*>(P), static_cast<const float*>(dattn), rows, S, stream,
            drop != nullptr, keep, static_cast<float*>(dS));
    check_launch("attention softmax backward");
}

} // namespace myelin::backend::cuda
