// The sequence models' entries of every backend's NN table (nn_kernels.h, sequence_kernels.h),
// as test_backend_ops does for the primitive table: the CPU against float64 references computed
// here, each other backend (CUDA, when a device is present) against the CPU. Without a device the
// CUDA leg prints "CUDA: skipped (no device: <reason>)" and the CPU leg still checks every entry.
#include "backend/backend.h"
#include "backend/nn_kernels.h"
#include "backend_ops_harness.h"

#include <myelin/cuda.h>
#include <myelin/error.h>

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <vector>

using namespace myelin;
using backend::Backend;
using backend::View;
using namespace backend_ops;

namespace {

// The sequence entries run through the device's NN table (nn_kernels.h), asked by name.
backend::NnKernels& table(Backend& be, backend::Primitive p, DType t) {
    return backend::nn_kernels(be, p, t);
}

// A float64 LSTM / GRU / tanh-RNN layer, one direction, time-major, from the equations:
// out[t * B + b][j] for x [T*B, I], w_ih [G, I], w_hh [G, H], biases [G], h0 [B, H], c0 [B, H].
std::vector<double> recurrent_reference(backend::RecurrentCell cell, int64_t T, int64_t B,
                                        int64_t I, int64_t H, const Array& x, const Array& w_ih,
                                        const Array& w_hh, const Array& b_ih, const Array& b_hh,
                                        const Array& h0, const Array& c0) {
    const int64_t G = backend::recurrent_gate_count(cell) * H;
    std::vector<double> h(size_t(B * H)), c(size_t(B * H)), out(size_t(T * B * H));
    for (int64_t i = 0; i < B * H; ++i) {
        h[size_t(i)] = h0.get(i);
        c[size_t(i)] = c0.get(i);
    }
    const auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
    for (int64_t t = 0; t < T; ++t) {
        std::vector<double> nh = h;
        for (int64_t b = 0; b < B; ++b) {
            std::vector<double> gx(static_cast<size_t>(G)), gh(static_cast<size_t>(G));
            for (int64_t q = 0; q < G; ++q) {
                gx[size_t(q)] = b_ih.get(q);
                gh[size_t(q)] = b_hh.get(q);
                for (int64_t k = 0; k < I; ++k)
                    gx[size_t(q)] += w_ih.get(q * I + k) * x.get((t * B + b) * I + k);
                for (int64_t k = 0; k < H; ++k)
                    gh[size_t(q)] += w_hh.get(q * H + k) * h[size_t(b * H + k)];
            }
            for (int64_t j = 0; j < H; ++j) {
                const size_t at = size_t(b * H + j);
                const auto pre = [&](int64_t q) {
                    return gx[size_t(q * H + j)] + gh[size_t(q * H + j)];
                };
                if (cell == backend::RecurrentCell::Lstm) {
                    c[at] = sig(pre(1)) * c[at] + sig(pre(0)) * std::tanh(pre(2));
                    nh[at] = sig(pre(3)) * std::tanh(c[at]);
                } else if (cell == backend::RecurrentCell::Gru) {
                    const double r = sig(pre(0)), z = sig(pre(1));
                    const double n = std::tanh(gx[size_t(2 * H + j)] + r * gh[size_t(2 * H + j)]);
                    nh[at] = (1 - z) * n + z * h[at];
                } else {
                    nh[at] = std::tanh(pre(0));
                }
                out[size_t((t * B + b) * H + j)] = nh[at];
            }
        }
        h = nh;
    }
    return out;
}

} // namespace

class TestBackendOpsSequence : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase() { report_cuda_leg(); }

    // A whole recurrent layer (NnKernels::recurrent_forward): the CPU against the equations in
    // float64, CUDA (one GEMM and one fused cell kernel a step) against the CPU; then the
    // backward's input gradient, CUDA against the CPU.
    void recurrent_layer() {
        using backend::RecurrentCell;
        const int64_t T = 4, B = 3, I = 5, H = 6;
        for (DType t : {DType::Float32, DType::Float64})
            for (RecurrentCell cell :
                 {RecurrentCell::Lstm, RecurrentCell::Gru, RecurrentCell::RnnTanh}) {
                backend::RecurrentGeometry g;
                g.cell = cell;
                g.dtype = t;
                g.T = T, g.B = B, g.I = I, g.H = H;
                g.has_h0 = true;
                const int64_t G = g.gates(), rows = g.rows();
                // x, w_ih, w_hh, b_ih, b_hh, h0, c0 | out, hn, cn, act, xh, cprev, tc, ghn |
                // dx (the backward's, from d out = 1)
                const std::vector<Array> in = {make(t, {rows, I}, values(-1, 1, 1)),
                                               make(t, {G, I}, values(-0.5, 0.5, 2)),
                                               make(t, {G, H}, values(-0.5, 0.5, 3)),
                                               make(t, {G}, values(-0.2, 0.2, 4)),
                                               make(t, {G}, values(-0.2, 0.2, 5)),
                                               make(t, {B, H}, values(-1, 1, 6)),
                                               make(t, {B, H}, values(-1, 1, 7)),
                                               make(t, {rows, H}, {}),
                                               make(t, {B, H}, {}),
                                               make(t, {B, H}, {}),
                                               make(t, {rows, G}, {}),
                                               make(t, {rows, g.xh_stride()}, {}),
                                               make(t, {rows, H}, {}),
                                               make(t, {rows, H}, {}),
                                               make(t, {rows, H}, {}),
                                               make(t, {rows, H}, values(1, 1)),
                                               make(t, {rows, I}, {})};
                const std::vector<double> want = recurrent_reference(
                    cell, T, B, I, H, in[0], in[1], in[2], in[3], in[4], in[5], in[6]);
                auto forward = [&](Backend& be, std::vector<View>& v, bool backward) {
                    backend::RecurrentWeights w;
                    w.w_ih[0] = v[1].data, w.w_hh[0] = v[2].data;
                    w.b_ih[0] = v[3].data, w.b_hh[0] = v[4].data;
                    const bool lstm = cell == RecurrentCell::Lstm;
                    const backend::RecurrentSaved saved{
                        v[10].data, v[11].data, lstm ? v[12].data : nullptr,
                        lstm ? v[13].data : nullptr,
                        cell == RecurrentCell::Gru ? v[14].data : nullptr};
                    backend::NnKernels& k = table(be, backend::Primitive::Recurrent, t);
                    k.recurrent_forward(g, w,
                                        {v[0].data, v[5].data, lstm ? v[6].data : nullptr,
                                         v[7].data, v[8].data, lstm ? v[9].data : nullptr},
                                        saved);
                    if (!backward) return;
                    backend::RecurrentBackwardArgs a;
                    a.dout = v[15].data;
                    a.dx = v[16].data;
                    k.recurrent_backward(g, w, saved, a);
                };
                const QString name =
                    QStringLiteral("recurrent %1 (%2)").arg(int(cell)).arg(QString(dtype_name(t)));
                check_case(
                    name, in, 7, [&](Backend& be, std::vector<View>& v) { forward(be, v, false); },
                    [&](int64_t i) { return want[size_t(i)]; }, t == DType::Float64 ? 1e-12 : 2e-5,
                    1e-6);
                // dx: checked on CUDA against the CPU; on the CPU only that it is finite and
                // not all zero (test_nn_recurrent checks the CPU's gradients against PyTorch).
                const std::vector<Array> cpu =
                    run_on(backend::get(DeviceType::CPU), in,
                           [&](Backend& be, std::vector<View>& v) { forward(be, v, true); });
                double sum = 0;
                for (int64_t i = 0; i < cpu[16].numel(); ++i)
                    sum += std::abs(cpu[16].get(i));
                QVERIFY(std::isfinite(sum) && sum > 0);
                check_case(
                    name + QStringLiteral(" backward"), in, 16,
                    [&](Backend& be, std::vector<View>& v) { forward(be, v, true); },
                    [&](int64_t i) { return cpu[16].get(i); }, 0, 0);
            }
    }

    // Inference keeps nothing for a backward (RecurrentSaved: act only): the same outputs and
    // states, bit for bit, as a forward that keeps everything; with lengths, both directions,
    // batch-first rows, on every backend.
    void recurrent_inference_keeps_nothing() {
        using backend::RecurrentCell;
        const int64_t T = 5, B = 3, I = 4, H = 6;
        const std::vector<int64_t> lengths = {5, 2, 4};
        for (RecurrentCell cell :
             {RecurrentCell::Lstm, RecurrentCell::Gru, RecurrentCell::RnnRelu}) {
            backend::RecurrentGeometry g;
            g.cell = cell;
            g.T = T, g.B = B, g.I = I, g.H = H, g.D = 2;
            g.batch_first = true;
            g.lengths = lengths.data();
            const int64_t G = g.gates(), rows = g.rows();
            const DType t = DType::Float32;
            // x, w_ih, w_hh (both directions) | out, hn, cn | act, xh, cprev, tc, ghn
            const std::vector<Array> in = {make(t, {rows, I}, values(-1, 1, 1)),
                                           make(t, {2, G, I}, values(-0.5, 0.5, 2)),
                                           make(t, {2, G, H}, values(-0.5, 0.5, 3)),
                                           make(t, {rows, 2 * H}, {}),
                                           make(t, {2, B, H}, {}),
                                           make(t, {2, B, H}, {}),
                                           make(t, {2, rows, G}, {}),
                                           make(t, {2, rows, g.xh_stride()}, {}),
                                           make(t, {2, rows, H}, {}),
                                           make(t, {2, rows, H}, {}),
                                           make(t, {2, rows, H}, {})};
            const auto run = [&](Backend& be, bool keep) {
                return run_on(be, in, [&](Backend& b, std::vector<View>& v) {
                    backend::RecurrentWeights w;
                    for (int d = 0; d < 2; ++d) {
                        w.w_ih[d] = static_cast<float*>(v[1].data) + d * G * I;
                        w.w_hh[d] = static_cast<float*>(v[2].data) + d * G * H;
                    }
                    const bool lstm = cell == RecurrentCell::Lstm;
                    backend::RecurrentSaved saved{v[6].data};
                    if (keep)
                        saved = {v[6].data, v[7].data, lstm ? v[8].data : nullptr,
                                 lstm ? v[9].data : nullptr,
                                 cell == RecurrentCell::Gru ? v[10].data : nullptr};
                    table(b, backend::Primitive::Recurrent, t)
                        .recurrent_forward(g, w,
                                           {v[0].data, nullptr, nullptr, v[3].data, v[4].data,
                                            lstm ? v[5].data : nullptr},
                                           saved);
                });
            };
            std::vector<Backend*> all{&backend::get(DeviceType::CPU)};
            for (Backend* other : other_backends())
                all.push_back(other);
            for (Backend* be : all) {
                const std::vector<Array> kept = run(*be, true), lean = run(*be, false);
                for (size_t k : {size_t(3), size_t(4), size_t(5)})
                    QVERIFY2(kept[k].bytes == lean[k].bytes,
                             qPrintable(QStringLiteral("%1, cell %2, output %3")
                                            .arg(QString::fromStdString(be->info().name))
                                            .arg(int(cell))
                                            .arg(k)));
            }
        }
    }

    // Attention's per-head products and its softmax (NnKernels::head_gemm, attention_softmax):
    // the CPU against plain loops, CUDA (strided-batched cuBLAS) against the CPU.
    void attention_heads() {
        const int64_t B = 2, H = 3, M = 4, N = 5, K = 6;
        for (DType t : {DType::Float32, DType::Float64}) {
            // a stored [B, H, K, M] (transposed), b [B, H, K, N], c [B, H, M, N] accumulated.
            const std::vector<Array> in = {make(t, {B * H * K * M}, values(-1, 1, 1)),
                                           make(t, {B * H * K * N}, values(-1, 1, 2)),
                                           make(t, {B * H * M * N}, values(-1, 1, 3))};
            const double alpha = 0.5, beta = 1.0;
            check_case(
                QStringLiteral("head_gemm (%1)").arg(QString(dtype_name(t))), in, 2,
                [&](Backend& be, std::vector<View>& v) {
                    table(be, backend::Primitive::AttentionHeads, t)
                        .head_gemm({t, B, H, M, N, K, alpha, beta},
                                   {v[0].data, H * K * M, K * M, M, true},
                                   {v[1].data, H * K * N, K * N, N, false},
                                   {v[2].data, H * M * N, M * N, N});
                },
                [&](int64_t i) {
                    const int64_t n = i / (M * N), r = i / N % M, q = i % N;
                    double sum = 0;
                    for (int64_t k = 0; k < K; ++k)
                        sum += in[0].get(n * K * M + k * M + r) * in[1].get(n * K * N + k * N + q);
                    return alpha * sum + beta * in[2].get(i);
                },
                t == DType::Float64 ? 1e-12 : 1e-5, 1e-6);
            const int64_t rows = 7, S = 9;
            const std::vector<Array> sm = {make(t, {rows, S}, values(-3, 3, 4)),
                                           make(t, {rows, S}, {})};
            check_case(
                QStringLiteral("attention_softmax (%1)").arg(QString(dtype_name(t))), sm, 1,
                [&](Backend& be, std::vector<View>& v) {
                    table(be, backend::Primitive::AttentionHeads, t)
                        .attention_softmax(t, v[0].data, rows, S, v[1].data, nullptr, nullptr,
                                           nullptr);
                },
                [&](int64_t i) {
                    const int64_t r = i / S;
                    double m = -INFINITY, sum = 0;
                    for (int64_t j = 0; j < S; ++j)
                        m = std::max(m, sm[0].get(r * S + j));
                    for (int64_t j = 0; j < S; ++j)
                        sum += std::exp(sm[0].get(r * S + j) - m);
                    return std::exp(sm[0].get(i) - m) / sum;
                },
                t == DType::Float64 ? 1e-12 : 1e-5, 1e-7);
        }
    }
};

QTEST_APPLESS_MAIN(TestBackendOpsSequence)
#include "test_backend_ops_sequence.moc"
