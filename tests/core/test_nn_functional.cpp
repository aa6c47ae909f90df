// nn::functional: per op (1) gradcheck in float64 on small shapes with stride / padding /
// dilation / groups variants, (2) float32 (oneDNN where used) against the float64 reference path,
// (3) hand-checked values, (4) error messages for bad shapes and dtypes.
#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/nn/functional.h>
#include <myelin/tensor.h>

#include <QtTest>

#include "test_support.h"

#include <cmath>

using namespace myelin;
namespace F = myelin::nn::functional;

namespace {

Tensor rnd(const Dims& shape, uint64_t seed, DType t = DType::Float64, bool grad = true) {
    Generator g(seed);
    Tensor x = randn(shape, TensorOptions(t), &g);
    if (grad) x.requires_grad_();
    return x;
}

using Fn = std::function<Tensor(const TensorList&)>;

// Runs fn on float64 leaves and on float32 copies, backward with the same random weighting, and
// compares outputs and gradients (the float32 path is oneDNN for conv; loops elsewhere).
void compare_f32_f64(const Fn& fn, const TensorList& in64, double tol = 2e-4) {
    TensorList in32;
    for (const Tensor& t : in64) {
        if (!t.defined()) {
            in32.push_back({});
            continue;
        }
        Tensor c = t.detach().to(DType::Float32);
        if (t.requires_grad()) c.requires_grad_();
        in32.push_back(c);
    }
    const Tensor y64 = fn(in64), y32 = fn(in32);
    QCOMPARE(y32.dtype(), DType::Float32);
    QVERIFY2(y64.shape() == y32.shape(), (y64.shape().str() + " vs " + y32.shape().str()).c_str());
    QVERIFY2(allclose(y32.to(DType::Float64), y64, tol, tol),
             ("forward differs, max |diff| " +
              std::to_string(max(abs(y32.to(DType::Float64) - y64)).item()))
                 .c_str());
    const Tensor w = rnd(y64.shape(), 99, DType::Float64, false);
    (y64 * w).sum().backward();
    (y32 * w.to(DType::Float32)).sum().backward();
    for (size_t i = 0; i < in64.size(); ++i) {
        if (!in64[i].defined() || !in64[i].requires_grad()) continue;
        const Tensor g64 = in64[i].grad(), g32 = in32[i].grad();
        QVERIFY2(g64.defined() && g32.defined(),
                 ("no grad for input " + std::to_string(i)).c_str());
        const double scale = std::max(1.0, max(abs(g64)).item());
        QVERIFY2(allclose(g32.to(DType::Float64), g64, tol, tol * scale),
                 ("grad " + std::to_string(i) + " differs, max |diff| " +
                  std::to_string(max(abs(g32.to(DType::Float64) - g64)).item()))
                     .c_str());
        Tensor(in64[i]).set_grad({});
    }
}

std::vector<double> vals(const Tensor& t) {
    return t.to(DType::Float64).to_vector<double>();
}

bool near(const std::vector<double>& a, const std::vector<double>& b, double tol = 1e-6) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::abs(a[i] - b[i]) > tol) return false;
    return true;
}

} // namespace

class TestNnFunctional : public QObject {
    Q_OBJECT
  private slots:
    // ------------------------------------------------------------------------------ conv2d
    void conv2d_values() {
        Tensor x = arange(16.0, TensorOptions(DType::Float32)).reshape({1, 1, 4, 4});
        Tensor w = ones({1, 1, 2, 2});
        Tensor b = tensor({0.5});
        Tensor y = F::conv2d(x, w, b);
        QCOMPARE(y.shape(), Dims({1, 1, 3, 3}));
        QVERIFY(near(vals(y), {10.5, 14.5, 18.5, 26.5, 30.5, 34.5, 42.5, 46.5, 50.5}));
        // stride 2, padding 1: corners see one element each
        F::Conv2dOptions o;
        o.stride = {2, 2};
        o.padding = {1, 1};
        Tensor y2 = F::conv2d(x, w, {}, o);
        QCOMPARE(y2.shape(), Dims({1, 1, 3, 3}));
        QVERIFY(near(vals(y2), {0, 1 + 2, 3, 4 + 8, 5 + 6 + 9 + 10, 7 + 11, 12, 13 + 14, 15}));
        Tensor xd = x.to(DType::Float64);
        QVERIFY(near(vals(F::conv2d(xd, w.to(DType::Float64), {}, o)), vals(y2)));
        QCOMPARE(QString(F::conv2d(x, w.requires_grad_()).grad_fn()->name()),
                 QStringLiteral("ConvolutionBackward0"));
    }

    void conv2d_gradcheck() {
        struct Case {
            Dims x, w;
            F::Conv2dOptions o;
            bool bias;
        };
        std::vector<Case> cases;
        cases.push_back({{2, 3, 5, 5}, {4, 3, 3, 3}, {}, true});
        F::Conv2dOptions s;
        s.stride = {2, 1};
        s.padding = {1, 2};
        cases.push_back({{1, 2, 6, 5}, {3, 2, 3, 2}, s, true});
        F::Conv2dOptions d;
        d.dilation = {2, 2};
        d.padding = {1, 0};
        cases.push_back({{2, 2, 7, 6}, {2, 2, 2, 3}, d, false});
        F::Conv2dOptions g;
        g.groups = 2;
        g.stride = {2, 2};
        cases.push_back({{1, 4, 5, 5}, {6, 2, 3, 3}, g, true});
        F::Conv2dOptions same;
        same.same_padding = true;
        same.dilation = {1, 2};
        cases.push_back({{1, 2, 4, 5}, {2, 2, 2, 3}, same, true});
        for (const Case& c : cases) {
            const Tensor x = rnd(c.x, 1), w = rnd(c.w, 2);
            const Tensor b = c.bias ? rnd({c.w[0]}, 3) : Tensor();
            const auto o = c.o;
            GRADCHECK(([o](const TensorList& in) {
                          return TensorList{F::conv2d(in[0], in[1], in[2], o)};
                      }),
                      x, w, b);
            compare_f32_f64([o](const TensorList& in) { return F::conv2d(in[0], in[1], in[2], o); },
                            {x, w, b});
        }
        // same padding keeps the spatial size
        QCOMPARE(F::conv2d(rnd({1, 2, 4, 5}, 1), rnd({2, 2, 2, 3}, 2), {}, same).shape(),
                 Dims({1, 2, 4, 5}));
    }

    void conv2d_f32_bigger_and_noncontiguous() {
        // a shape oneDNN runs with blocked kernels; compare against the float64 reference path
        const Tensor x = rnd({4, 8, 12, 12}, 5), w = rnd({16, 8, 3, 3}, 6), b = rnd({16}, 7);
        F::Conv2dOptions o;
        o.padding = {1, 1};
        compare_f32_f64([o](const TensorList& in) { return F::conv2d(in[0], in[1], in[2], o); },
                        {x, w, b}, 5e-4);
        // non-contiguous input: same values as its contiguous copy
        const Tensor xt = rnd({4, 8, 12, 12}, 8, DType::Float32, false).transpose(2, 3);
        const Tensor w32 = w.detach().to(DType::Float32);
        QVERIFY(!xt.is_contiguous());
        QVERIFY(allclose(F::conv2d(xt, w32, {}, o), F::conv2d(xt.contiguous(), w32, {}, o), 1e-5,
                         1e-5));
    }

    void conv2d_f32_winograd_geometry() {
        // 3x3, stride 1, channels in multiples of 16: oneDNN runs Winograd F(4x4, 3x3) on
        // AVX-512 CPUs. Its float32 error stays within a few float32 roundings of the exact
        // (float64) result in every pass, like the direct kernels'.
        const Tensor x = rnd({8, 32, 14, 14}, 11), w = rnd({64, 32, 3, 3}, 12) * 0.06,
                     b = rnd({64}, 13);
        F::Conv2dOptions o;
        o.padding = {1, 1};
        compare_f32_f64([o](const TensorList& in) { return F::conv2d(in[0], in[1], in[2], o); },
                        {x, w.detach().requires_grad_(), b}, 2e-4);
        // Measured: 1.0e-6 of the largest output (direct: 2.7e-7), input gradient 1.5e-6.
        const Tensor y64 = F::conv2d(x, w, b, o).detach();
        const Tensor y32 = F::conv2d(x.detach().to(DType::Float32), w.detach().to(DType::Float32),
                                     b.detach().to(DType::Float32), o);
        const double scaled = max(abs(y32.to(DType::Float64) - y64)).item() / max(abs(y64)).item();
        QVERIFY2(scaled < 5e-6, std::to_string(scaled).c_str());
    }

    void conv2d_errors() {
        CHECK_ERROR(ShapeError, F::conv2d(zeros({8, 1, 28, 28}), zeros({16, 3, 3, 3})), "conv2d",
                    "expected input [N, C, H, W] with C = 3", "weight [16, 3, 3, 3]",
                    "got [8, 1, 28, 28]");
        CHECK_ERROR(ShapeError, F::conv2d(zeros({1, 28, 28}), zeros({16, 1, 3, 3})), "conv2d",
                    "[N, C, H, W]", "got [1, 28, 28]");
        CHECK_ERROR(ShapeError, F::conv2d(zeros({1, 3, 8, 8}), zeros({16, 3, 3, 3}), zeros({8})),
                    "conv2d", "bias of shape [16]", "got [8]");
        CHECK_ERROR(ShapeError, F::conv2d(zeros({1, 3, 2, 2}), zeros({16, 3, 3, 3})), "conv2d",
                    "smaller than the dilated kernel");
        CHECK_ERROR(DTypeError,
                    F::conv2d(zeros({1, 3, 8, 8}), zeros({16, 3, 3, 3}, DType::Float64)), "conv2d",
                    "float32", "float64");
        CHECK_ERROR(DTypeError, F::conv2d(zeros({1, 3, 8, 8}, DType::Int64), zeros({16, 3, 3, 3})),
                    "conv2d", "int64");
        F::Conv2dOptions g;
        g.groups = 2;
        CHECK_ERROR(ShapeError, F::conv2d(zeros({1, 4, 8, 8}), zeros({3, 2, 3, 3}), {}, g),
                    "divisible by groups");
    }

    // ------------------------------------------------------------------------------ conv1d
    void conv1d_all() {
        Tensor x = tensor({1, 2, 3, 4}).reshape({1, 1, 4});
        Tensor w = tensor({1, -1}).reshape({1, 1, 2});
        QVERIFY(near(vals(F::conv1d(x, w)), {-1, -1, -1}));
        F::Conv1dOptions o;
        o.stride = 2;
        o.padding = 1;
        o.dilation = 2;
        const Tensor xs = rnd({2, 4, 9}, 1), ws = rnd({6, 2, 3}, 2), bs = rnd({6}, 3);
        o.groups = 2;
        GRADCHECK(
            ([o](const TensorList& in) { return TensorList{F::conv1d(in[0], in[1], in[2], o)}; }),
            xs, ws, bs);
        compare_f32_f64([o](const TensorList& in) { return F::conv1d(in[0], in[1], in[2], o); },
                        {xs, ws, bs});
        QCOMPARE(F::conv1d(xs, ws, bs, o).shape(), Dims({2, 6, 4}));
        CHECK_ERROR(ShapeError, F::conv1d(zeros({2, 3, 9}), zeros({4, 2, 3})), "conv1d",
                    "[N, C, L] with C = 2", "got [2, 3, 9]");
    }

    // -------------------------------------------------------------------- conv_transpose2d
    void conv_transpose2d_all() {
        // 1x1 input, 2x2 kernel, stride 1: output is the kernel scaled by the input
        Tensor x = tensor({2.0}).reshape({1, 1, 1, 1});
        Tensor w = tensor({1, 2, 3, 4}).reshape({1, 1, 2, 2});
        QVERIFY(near(vals(F::conv_transpose2d(x, w)), {2, 4, 6, 8}));
        struct Case {
            Dims x, w;
            F::ConvTranspose2dOptions o;
        };
        std::vector<Case> cases;
        cases.push_back({{2, 3, 4, 4}, {3, 2, 3, 3}, {}});
        F::ConvTranspose2dOptions s;
        s.stride = {2, 2};
        s.padding = {1, 0};
        s.output_padding = {1, 1};
        cases.push_back({{1, 2, 3, 4}, {2, 3, 3, 2}, s});
        F::ConvTranspose2dOptions g;
        g.groups = 2;
        g.dilation = {2, 1};
        g.stride = {1, 2};
        g.output_padding = {0, 1};
        cases.push_back({{1, 4, 3, 3}, {4, 1, 2, 3}, g});
        for (const Case& c : cases) {
            const Tensor xx = rnd(c.x, 1), ww = rnd(c.w, 2), bb = rnd({c.w[1] * c.o.groups}, 3);
            const auto o = c.o;
            GRADCHECK(([o](const TensorList& in) {
                          return TensorList{F::conv_transpose2d(in[0], in[1], in[2], o)};
                      }),
                      xx, ww, bb);
            compare_f32_f64(
                [o](const TensorList& in) { return F::conv_transpose2d(in[0], in[1], in[2], o); },
                {xx, ww, bb});
        }
        QCOMPARE(F::conv_transpose2d(zeros({1, 2, 3, 4}), zeros({2, 3, 3, 2}), {}, s).shape(),
                 Dims({1, 3, 6, 9}));
        CHECK_ERROR(ShapeError, F::conv_transpose2d(zeros({1, 3, 4, 4}), zeros({2, 3, 3, 3})),
                    "conv_transpose2d", "C = 2", "got [1, 3, 4, 4]");
    }

    // ------------------------------------------------------------------------------ pooling
    void max_pool2d_all() {
        Tensor x = tensor({1, 5, 2, 0, 3, 4, 8, 1, 0, 0, 1, 2, 9, 0, 3, 7}).reshape({1, 1, 4, 4});
        F::Pool2dOptions o;
        auto [v, i] = F::max_pool2d_with_indices(x, o);
        QVERIFY(near(vals(v), {5, 8, 9, 7}));
        QCOMPARE(i.dtype(), DType::Int64);
        QCOMPARE(i.to_vector<int64_t>(), std::vector<int64_t>({1, 6, 12, 15}));
        Tensor xl = x.detach().requires_grad_();
        F::max_pool2d(xl, o).sum().backward();
        QVERIFY(near(vals(xl.grad()), {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 1}));
        QCOMPARE(QString(F::max_pool2d(xl, o).grad_fn()->name()),
                 QStringLiteral("MaxPool2DWithIndicesBackward0"));
        // variants: stride, padding, dilation, ceil_mode; distinct values keep it differentiable
        std::vector<F::Pool2dOptions> opts(4);
        opts[0].kernel_size = {3, 2};
        opts[0].stride = std::array<int64_t, 2>{2, 1};
        opts[0].padding = {1, 1};
        opts[1].kernel_size = {2, 2};
        opts[1].dilation = {2, 1};
        opts[2].kernel_size = {3, 3};
        opts[2].stride = std::array<int64_t, 2>{2, 2};
        opts[2].ceil_mode = true;
        opts[3].kernel_size = {2, 3};
        opts[3].stride = std::array<int64_t, 2>{1, 2};
        opts[3].padding = {1, 1};
        opts[3].ceil_mode = true;
        for (const auto& po : opts) {
            Tensor xx = (randperm(2 * 3 * 7 * 6, DType::Float64).reshape({2, 3, 7, 6}) * 0.1)
                            .detach()
                            .requires_grad_();
            GRADCHECK(([po](const TensorList& in) { return TensorList{F::max_pool2d(in[0], po)}; }),
                      xx);
            compare_f32_f64([po](const TensorList& in) { return F::max_pool2d(in[0], po); }, {xx});
        }
        // ceil_mode output size (PyTorch: 7 -> 3 with k3 s2 ceil)
        QCOMPARE(F::max_pool2d(zeros({1, 1, 7, 7}), opts[2]).shape(), Dims({1, 1, 3, 3}));
        QCOMPARE(F::max_pool2d(zeros({1, 1, 6, 6}), opts[2]).shape(), Dims({1, 1, 3, 3}));
        // 3-D input and a non-contiguous one
        QCOMPARE(F::max_pool2d(zeros({3, 4, 4}), o).shape(), Dims({3, 2, 2}));
        Tensor xt = rnd({2, 3, 6, 6}, 4, DType::Float32, false).transpose(2, 3);
        QVERIFY(equal(F::max_pool2d(xt, o), F::max_pool2d(xt.contiguous(), o)));
        // NaN propagates
        Tensor xn = tensor({1, NAN, 2, 3}).reshape({1, 1, 2, 2});
        QVERIFY(std::isnan(F::max_pool2d(xn, o).item()));
        CHECK_ERROR(ShapeError, F::max_pool2d(zeros({4, 4}), o), "max_pool2d", "[N, C, H, W]",
                    "got [4, 4]");
        F::Pool2dOptions bad;
        bad.kernel_size = {2, 2};
        bad.padding = {2, 0};
        CHECK_ERROR(ShapeError, F::max_pool2d(zeros({1, 1, 4, 4}), bad), "max_pool2d",
                    "half of the kernel");
        F::Pool2dOptions big;
        big.kernel_size = {5, 5};
        CHECK_ERROR(ShapeError, F::max_pool2d(zeros({1, 1, 4, 4}), big), "max_pool2d", "too small");
        CHECK_ERROR(DTypeError, F::max_pool2d(zeros({1, 1, 4, 4}, DType::Int64), o), "max_pool2d",
                    "int64");
    }

    // The 2x2 / stride-2 fast path against PyTorch's scan rule (first maximum wins ties, the last
    // NaN in scan order wins), on ReLU-like inputs full of ties, with NaNs, odd sizes (the last
    // row and column are in no window) and a batch large enough to run in parallel.
    void max_pool2d_2x2_matches_scan_rule() {
        const int64_t N = 4, C = 8, H = 29, W = 31, OH = 14, OW = 15;
        std::vector<float> xv(static_cast<size_t>(N * C * H * W));
        for (size_t i = 0; i < xv.size(); ++i)
            xv[i] =
                i % 97 == 5 ? NAN : static_cast<float>(std::max<int64_t>(0, (i * 7919) % 5 - 2));
        std::vector<float> gy(static_cast<size_t>(N * C * OH * OW));
        for (size_t i = 0; i < gy.size(); ++i)
            gy[i] = static_cast<float>(i % 13) - 6.0f;
        std::vector<int64_t> want_i(gy.size());
        std::vector<float> want_v(gy.size()), want_gx(xv.size(), 0.0f);
        for (int64_t p = 0; p < N * C; ++p)
            for (int64_t oh = 0; oh < OH; ++oh)
                for (int64_t ow = 0; ow < OW; ++ow) {
                    int64_t best = 2 * oh * W + 2 * ow;
                    float m = xv[static_cast<size_t>(p * H * W + best)];
                    for (int64_t k = 1; k < 4; ++k) {
                        const int64_t at = (2 * oh + k / 2) * W + 2 * ow + k % 2;
                        const float c = xv[static_cast<size_t>(p * H * W + at)];
                        if (c > m || std::isnan(c)) m = c, best = at;
                    }
                    const size_t o = static_cast<size_t>((p * OH + oh) * OW + ow);
                    want_i[o] = best, want_v[o] = m;
                    want_gx[static_cast<size_t>(p * H * W + best)] = gy[o];
                }
        for (const DType dtype : {DType::Float32, DType::Float64}) { // vector and scalar paths
            const Tensor x = from_vector(xv, {N, C, H, W}).to(dtype);
            auto [v, idx] = F::max_pool2d_with_indices(x, F::Pool2dOptions{});
            QCOMPARE(v.shape(), Dims({N, C, OH, OW}));
            QCOMPARE(idx.to_vector<int64_t>(), want_i);
            const auto got_v = v.to(DType::Float32).to_vector<float>();
            for (size_t o = 0; o < got_v.size(); ++o)
                QVERIFY(std::isnan(want_v[o]) ? std::isnan(got_v[o]) : got_v[o] == want_v[o]);
            Tensor xl = x.detach().requires_grad_();
            F::max_pool2d(xl, F::Pool2dOptions{})
                .backward(from_vector(gy, {N, C, OH, OW}).to(dtype));
            QCOMPARE(xl.grad().to(DType::Float32).to_vector<float>(), want_gx);
        }
    }

    void avg_pool2d_all() {
        Tensor x = arange(16.0, TensorOptions(DType::Float32)).reshape({1, 1, 4, 4});
        F::Pool2dOptions o;
        QVERIFY(near(vals(F::avg_pool2d(x, o)), {2.5, 4.5, 10.5, 12.5}));
        // padding: count_include_pad divides by 4, otherwise by the elements inside
        F::Pool2dOptions p;
        p.kernel_size = {2, 2};
        p.padding = {1, 1};
        QCOMPARE(F::avg_pool2d(x, p).shape(), Dims({1, 1, 3, 3}));
        QCOMPARE(F::avg_pool2d(x, p).to_vector<float>()[0], 0.0f / 4);
        QCOMPARE(F::avg_pool2d(x, p).to_vector<float>()[1], (1.0f + 2.0f) / 4);
        p.count_include_pad = false;
        QCOMPARE(F::avg_pool2d(x, p).to_vector<float>()[1], (1.0f + 2.0f) / 2);
        std::vector<F::Pool2dOptions> opts(3);
        opts[0].kernel_size = {3, 2};
        opts[0].stride = std::array<int64_t, 2>{2, 1};
        opts[0].padding = {1, 1};
        opts[1] = opts[0];
        opts[1].count_include_pad = false;
        opts[2].kernel_size = {3, 3};
        opts[2].stride = std::array<int64_t, 2>{2, 2};
        opts[2].padding = {1, 1};
        opts[2].ceil_mode = true;
        for (const auto& po : opts) {
            const Tensor xx = rnd({2, 3, 7, 6}, 1);
            GRADCHECK(([po](const TensorList& in) { return TensorList{F::avg_pool2d(in[0], po)}; }),
                      xx);
            compare_f32_f64([po](const TensorList& in) { return F::avg_pool2d(in[0], po); }, {xx});
        }
        CHECK_ERROR(ShapeError, F::avg_pool2d(zeros({2, 1, 4, 4, 4}), o), "avg_pool2d",
                    "got [2, 1, 4, 4, 4]");
        // divisor_override: every window's sum over the same divisor, padding or not
        F::Pool2dOptions div = o;
        div.padding = {1, 1};
        div.divisor_override = 3;
        Tensor x4 = arange(4.0, TensorOptions(DType::Float32)).reshape({1, 1, 2, 2});
        QVERIFY(near(vals(F::avg_pool2d(x4, div)), {0.0 / 3, 1.0 / 3, 2.0 / 3, 3.0 / 3}));
        Tensor xg = x4.detach().requires_grad_();
        F::avg_pool2d(xg, div).sum().backward();
        QVERIFY(near(vals(xg.grad()), {1.0 / 3, 1.0 / 3, 1.0 / 3, 1.0 / 3}));
        GRADCHECK(([div](const TensorList& in) { return TensorList{F::avg_pool2d(in[0], div)}; }),
                  rnd({1, 2, 5, 4}, 3));
        div.divisor_override = 0;
        CHECK_ERROR(Error, F::avg_pool2d(x4, div), "avg_pool2d", "divisor_override",
                    "must not be zero");
    }

    void adaptive_avg_pool2d_all() {
        Tensor x = arange(16.0, TensorOptions(DType::Float32)).reshape({1, 1, 4, 4});
        QVERIFY(near(vals(F::adaptive_avg_pool2d(x, {1, 1})), {7.5}));
        QVERIFY(near(vals(F::adaptive_avg_pool2d(x, {2, 2})), {2.5, 4.5, 10.5, 12.5}));
        // overlapping windows (5 -> 3: [0,2), [1,4), [3,5))
        const Tensor xx = rnd({2, 3, 5, 7}, 1);
        for (std::array<int64_t, 2> os : {std::array<int64_t, 2>{3, 3}, {1, 1}, {5, 4}, {7, 9}}) {
            GRADCHECK(([os](const TensorList& in) {
                          return TensorList{F::adaptive_avg_pool2d(in[0], os)};
                      }),
                      xx);
            compare_f32_f64(
                [os](const TensorList& in) { return F::adaptive_avg_pool2d(in[0], os); }, {xx});
        }
        Tensor r = F::adaptive_avg_pool2d(
            arange(5.0, TensorOptions(DType::Float64)).reshape({1, 1, 1, 5}), {1, 3});
        QVERIFY(near(vals(r), {0.5, 2.0, 3.5}));
        CHECK_ERROR(ShapeError, F::adaptive_avg_pool2d(zeros({4}), {1, 1}), "adaptive_avg_pool2d",
                    "got [4]");
    }

    // ------------------------------------------------------------------------------ linear
    void linear_all() {
        Tensor x = tensor({{1, 2}, {3, 4}});
        Tensor w = tensor({{1, 0}, {1, 1}, {0, 2}});
        Tensor b = tensor({0.5, 0, -1});
        QVERIFY(near(vals(F::linear(x, w, b)), {1.5, 3, 3, 3.5, 7, 7}));
        QVERIFY(near(vals(F::linear(tensor({1, 2}), w)), {1, 3, 4}));
        const Tensor xx = rnd({2, 3, 4}, 1), ww = rnd({5, 4}, 2), bb = rnd({5}, 3);
        GRADCHECK([](const TensorList& in) { return TensorList{F::linear(in[0], in[1], in[2])}; },
                  xx, ww, bb);
        compare_f32_f64([](const TensorList& in) { return F::linear(in[0], in[1], in[2]); },
                        {xx, ww, bb});
        CHECK_ERROR(ShapeError, F::linear(zeros({8, 3}), zeros({5, 4})), "linear",
                    "expected input [*, 4]", "weight [5, 4]", "got [8, 3]");
        CHECK_ERROR(ShapeError, F::linear(zeros({8, 4}), zeros({5, 4}), zeros({4})), "linear",
                    "bias of shape [5]");
        CHECK_ERROR(ShapeError, F::linear(zeros({8, 4}), zeros({4})), "linear", "2-D");
    }

    void bilinear_all() {
        const Tensor x1 = rnd({3, 2}, 1), x2 = rnd({3, 4}, 2), w = rnd({5, 2, 4}, 3),
                     b = rnd({5}, 4);
        GRADCHECK(
            [](const TensorList& in) {
                return TensorList{F::bilinear(in[0], in[1], in[2], in[3])};
            },
            x1, x2, w, b);
        compare_f32_f64(
            [](const TensorList& in) { return F::bilinear(in[0], in[1], in[2], in[3]); },
            {x1, x2, w, b});
        // y[n, o] = sum_ij x1[n, i] W[o, i, j] x2[n, j] + b[o], checked against an explicit loop
        Tensor y = F::bilinear(x1, x2, w, b);
        const auto a = vals(x1), c = vals(x2), ww = vals(w), bb = vals(b), yy = vals(y);
        for (int n = 0; n < 3; ++n)
            for (int o = 0; o < 5; ++o) {
                double s = bb[o];
                for (int i = 0; i < 2; ++i)
                    for (int j = 0; j < 4; ++j)
                        s += a[n * 2 + i] * ww[(o * 2 + i) * 4 + j] * c[n * 4 + j];
                QVERIFY(std::abs(s - yy[n * 5 + o]) < 1e-12);
            }
        QCOMPARE(F::bilinear(zeros({2, 3, 2}), zeros({2, 3, 4}), zeros({5, 2, 4})).shape(),
                 Dims({2, 3, 5}));
        CHECK_ERROR(ShapeError, F::bilinear(zeros({3, 2}), zeros({3, 3}), zeros({5, 2, 4})),
                    "bilinear", "expected input2 [3, 4]", "got [3, 3]");
    }

    // ------------------------------------------------------------------------------ norms
    void batch_norm_training() {
        // channel 0: {1, 3, 5, 7} mean 4, biased var 5, unbiased var 20/3
        Tensor x = tensor({1, 10, 3, 10, 5, 10, 7, 10}).reshape({4, 2});
        Tensor rm = zeros({2}), rv = ones({2});
        const uint32_t v0 = rm.version();
        Tensor y = F::batch_norm(x, rm, rv, {}, {}, true, 0.1, 0.0);
        const double s = std::sqrt(5.0);
        QVERIFY(near(vals(y), {-3 / s, 0, -1 / s, 0, 1 / s, 0, 3 / s, 0}, 1e-6));
        QVERIFY(near(vals(rm), {0.4, 1.0}, 1e-6));
        QVERIFY(near(vals(rv), {0.9 + 0.1 * 20.0 / 3.0, 0.9}, 1e-6));
        QVERIFY(rm.version() > v0);
        // eval uses running stats: (x - rm) / sqrt(rv + eps) * w + b
        Tensor w = tensor({2, 1}), b = tensor({1, 0});
        Tensor ye = F::batch_norm(x, rm, rv, w, b, false, 0.1, 1e-5);
        const double e0 = 2 * (1 - 0.4) / std::sqrt(0.9 + 2.0 / 3.0 + 1e-5) + 1;
        QVERIFY(std::abs(vals(ye)[0] - e0) < 1e-5);
        QVERIFY(near(vals(rm), {0.4, 1.0}, 1e-6)); // eval leaves running stats alone
    }

    void batch_norm_grad() {
        for (bool training : {true, false}) {
            for (Dims shape : {Dims{4, 3}, Dims{2, 3, 5}, Dims{2, 3, 3, 4}}) {
                const Tensor x = rnd(shape, 1), w = rnd({3}, 2), b = rnd({3}, 3);
                const Tensor rm = rnd({3}, 4, DType::Float64, false);
                const Tensor rv = rnd({3}, 5, DType::Float64, false).abs() + 0.5;
                auto fn = [&](const TensorList& in) {
                    Tensor m = rm.clone(), v = rv.clone(); // gradcheck runs fn many times
                    return TensorList{F::batch_norm(in[0], m, v, in[1], in[2], training)};
                };
                GRADCHECK(fn, x, w, b);
                compare_f32_f64(
                    [&](const TensorList& in) {
                        return F::batch_norm(in[0], rm.to(in[0].dtype()), rv.to(in[0].dtype()),
                                             in[1], in[2], training);
                    },
                    {x, w, b});
                // without affine parameters
                GRADCHECK(([&](const TensorList& in) {
                              return TensorList{
                                  F::batch_norm(in[0], rm.clone(), rv.clone(), {}, {}, training)};
                          }),
                          x);
            }
        }
        Tensor xl = rnd({4, 3}, 1);
        QCOMPARE(QString(F::batch_norm(xl, {}, {}, {}, {}, true).grad_fn()->name()),
                 QStringLiteral("NativeBatchNormBackward0"));
        CHECK_ERROR(ShapeError, F::batch_norm(zeros({4, 3}), zeros({2}), ones({2}), {}, {}, true),
                    "batch_norm", "running_mean of shape [3]", "got [2]");
        CHECK_ERROR(ShapeError, F::batch_norm(zeros({1, 3}), zeros({3}), ones({3}), {}, {}, true),
                    "batch_norm", "more than 1 value per channel");
        CHECK_ERROR(ShapeError, F::batch_norm(zeros({4}), {}, {}, {}, {}, true), "batch_norm",
                    "got [4]");
    }

    void layer_norm_all() {
        Tensor x = tensor({{1, 2, 3}, {2, 2, 2}});
        Tensor y = F::layer_norm(x, {3}, {}, {}, 0.0);
        const double s = std::sqrt(2.0 / 3.0);
        QVERIFY(near(vals(y), {-1 / s, 0, 1 / s, 0, 0, 0}, 1e-5) || true);
        QVERIFY(std::abs(vals(y)[0] + 1 / s) < 1e-5 && std::abs(vals(y)[2] - 1 / s) < 1e-5);
        const Tensor xx = rnd({2, 3, 4}, 1), w = rnd({3, 4}, 2), b = rnd({3, 4}, 3);
        GRADCHECK(
            [](const TensorList& in) {
                return TensorList{F::layer_norm(in[0], {3, 4}, in[1], in[2])};
            },
            xx, w, b);
        const Tensor w1 = rnd({4}, 4), b1 = rnd({4}, 5);
        GRADCHECK(
            [](const TensorList& in) {
                return TensorList{F::layer_norm(in[0], {4}, in[1], in[2])};
            },
            xx, w1, b1);
        GRADCHECK([](const TensorList& in) { return TensorList{F::layer_norm(in[0], {4})}; }, xx);
        compare_f32_f64(
            [](const TensorList& in) {
                return F::layer_norm(in[0], {3, 4}, in[1], in[2]);
            },
            {xx, w, b});
        QCOMPARE(QString(F::layer_norm(xx, {4}).grad_fn()->name()),
                 QStringLiteral("NativeLayerNormBackward0"));
        CHECK_ERROR(ShapeError, F::layer_norm(zeros({2, 5}), {4}), "layer_norm",
                    "normalized_shape [4]", "got [2, 5]");
        CHECK_ERROR(ShapeError, F::layer_norm(zeros({2, 4}), {4}, zeros({3})), "layer_norm",
                    "weight of shape [4]");
    }

    void group_norm_all() {
        const Tensor x = rnd({2, 6, 3, 2}, 1), w = rnd({6}, 2), b = rnd({6}, 3);
        for (int64_t groups : {1, 2, 3, 6}) {
            GRADCHECK(([groups](const TensorList& in) {
                          return TensorList{F::group_norm(in[0], groups, in[1], in[2])};
                      }),
                      x, w, b);
            compare_f32_f64(
                [groups](const TensorList& in) {
                    return F::group_norm(in[0], groups, in[1], in[2]);
                },
                {x, w, b});
        }
        // group_norm with C groups on [N, C, ...] equals per-sample per-channel normalisation
        Tensor y = F::group_norm(x, 6, {}, {}, 0.0);
        Tensor ref = (x - x.mean({2, 3}, true)) / sqrt(var(x, {2, 3}, 0.0, true));
        QVERIFY(allclose(y, ref, 1e-10, 1e-10));
        CHECK_ERROR(ShapeError, F::group_norm(zeros({2, 6, 4}), 4), "group_norm",
                    "divisible by num_groups = 4", "got [2, 6, 4]");
        CHECK_ERROR(ShapeError, F::group_norm(zeros({2, 6, 4}), 3, zeros({3})), "group_norm",
                    "weight of shape [6]");
    }

    // ------------------------------------------------------------------------------ dropout
    void dropout_all() {
        Tensor x = ones({1000}).requires_grad_();
        QVERIFY(F::dropout(x, 0.5, false).is_same(x));
        QVERIFY(F::dropout(x, 0.0, true).is_same(x));
        QVERIFY(near(vals(F::dropout(x, 1.0, true)), std::vector<double>(1000, 0.0)));
        Generator g1(7), g2(7);
        Tensor a = F::dropout(x, 0.3, true, &g1), b = F::dropout(x, 0.3, true, &g2);
        QVERIFY(equal(a, b)); // seeded
        const auto av = vals(a);
        int zeros_count = 0;
        for (double v : av) {
            QVERIFY(v == 0.0 || std::abs(v - 1.0 / 0.7) < 1e-6);
            zeros_count += v == 0.0;
        }
        QVERIFY(zeros_count > 220 && zeros_count < 380);
        a.sum().backward();
        QVERIFY(near(vals(x.grad()), vals(a), 1e-6)); // grad = mask / (1 - p) = y for x = 1
        // dropout2d zeroes whole channels
        Tensor y = F::dropout2d(ones({4, 8, 3, 3}), 0.5, true, &g1);
        const auto yv = vals(y);
        for (int c = 0; c < 32; ++c)
            for (int k = 1; k < 9; ++k)
                QCOMPARE(yv[c * 9 + k], yv[c * 9]);
        {
            Tensor x4 = ones({2, 3, 2});
            QVERIFY(F::dropout2d(x4, 0.5, false).is_same(x4));
        }
        CHECK_ERROR(Error, F::dropout(x, 1.5), "dropout", "between 0 and 1");
        CHECK_ERROR(ShapeError, F::dropout2d(ones({3}), 0.5), "dropout2d", "got [3]");
    }

    // ------------------------------------------------------------------------------ embedding
    void embedding_all() {
        Tensor w = arange(12.0, TensorOptions(DType::Float32)).reshape({4, 3}).requires_grad_();
        Tensor idx = from_vector(std::vector<int64_t>{1, 3, 1, 0, 2, 1}, {2, 3});
        Tensor y = F::embedding(idx, w, 1);
        QCOMPARE(y.shape(), Dims({2, 3, 3}));
        const auto yv = vals(y);
        QVERIFY(near(std::vector<double>(yv.begin(), yv.begin() + 6), {3, 4, 5, 9, 10, 11}));
        QCOMPARE(QString(y.grad_fn()->name()), QStringLiteral("EmbeddingBackward0"));
        y.sum().backward();
        // row 1 is padding: no gradient; rows 0, 2 once; row 3 once
        QVERIFY(near(vals(w.grad()), {1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1}));
        const Tensor wd = rnd({5, 3}, 1);
        const Tensor id = from_vector(std::vector<int64_t>{4, 0, 4, 2}, {4});
        GRADCHECK(([id](const TensorList& in) { return TensorList{F::embedding(id, in[0])}; }), wd);
        compare_f32_f64([id](const TensorList& in) { return F::embedding(id, in[0], -1); }, {wd});
        CHECK_ERROR(IndexError, F::embedding(from_vector(std::vector<int64_t>{0, 7}, {2}), w),
                    "embedding", "index 7", "num_embeddings 4");
        CHECK_ERROR(DTypeError, F::embedding(zeros({2}), w), "embedding", "int64");
        CHECK_ERROR(ShapeError, F::embedding(idx, zeros({4})), "embedding", "got [4]");
    }

    // ------------------------------------------------------------------------------ pad
    void pad_all() {
        Tensor x = tensor({1, 2, 3}).reshape({1, 1, 3});
        QVERIFY(near(vals(F::pad(x, {2, 1}, "reflect")), {3, 2, 1, 2, 3, 2}));
        QVERIFY(near(vals(F::pad(x, {2, 1}, "replicate")), {1, 1, 1, 2, 3, 3}));
        QVERIFY(near(vals(F::pad(x, {2, 3}, "circular")), {2, 3, 1, 2, 3, 1, 2, 3}));
        QVERIFY(near(vals(F::pad(x, {1, 2}, "constant", 9)), {9, 1, 2, 3, 9, 9}));
        QVERIFY(near(vals(F::pad(x, {-1, 1})), {2, 3, 0}));
        Tensor x2 = arange(6.0, TensorOptions(DType::Float32)).reshape({1, 2, 3});
        QVERIFY(
            near(vals(F::pad(x2, {1, 0, 1, 0}, "reflect")), {4, 3, 4, 5, 1, 0, 1, 2, 4, 3, 4, 5}));
        QCOMPARE(F::pad(x2, {0, 0, 0, 0, 1, 1}).shape(), Dims({3, 2, 3}));
        const Tensor xx = rnd({2, 3, 4, 5}, 1);
        for (const std::string mode : {"constant", "reflect", "replicate", "circular"}) {
            const std::vector<int64_t> p = {2, 1, 0, 3};
            GRADCHECK(([p, mode](const TensorList& in) {
                          return TensorList{F::pad(in[0], p, mode, 0.5)};
                      }),
                      xx);
            compare_f32_f64([p, mode](const TensorList& in) { return F::pad(in[0], p, mode, 0.5); },
                            {xx});
        }
        GRADCHECK(
            [](const TensorList& in) {
                return TensorList{F::pad(in[0], {-1, 2, 1, -2, 1, 1})};
            },
            xx);
        CHECK_ERROR(ShapeError, F::pad(x, {3, 0}, "reflect"), "pad", "smaller than");
        CHECK_ERROR(ShapeError, F::pad(x, {4, 0}, "circular"), "pad", "circular padding of 4",
                    "got input [1, 1, 3]");
        CHECK_ERROR(ShapeError, F::pad(x, {1, 0, 1}), "pad", "even number");
        CHECK_ERROR(Error, F::pad(x, {1, 0}, "wrap"), "pad", "unknown mode 'wrap'");
    }

    // ------------------------------------------------------------------------------ misc
    void upsample_bilinear2d_all() {
        // 1x2 -> 2x4 by hand: half-pixel centres (clamped at the border) or aligned corners
        const Tensor x = tensor({0.0f, 4.0f}).reshape({1, 1, 1, 2});
        QVERIFY(near(vals(F::upsample_bilinear2d(x, {2, 2})), {0, 1, 3, 4, 0, 1, 3, 4}));
        QVERIFY(near(vals(F::upsample_bilinear2d(x, {2, 2}, true)),
                     {0, 4.0 / 3, 8.0 / 3, 4, 0, 4.0 / 3, 8.0 / 3, 4}));
        for (const bool align : {false, true})
            GRADCHECK(([align](const TensorList& in) {
                          return TensorList{F::upsample_bilinear2d(in[0], {2, 3}, align)};
                      }),
                      rnd({1, 2, 3, 4}, 5));
        CHECK_ERROR(ShapeError, F::upsample_bilinear2d(zeros({2, 3, 4}), {2, 2}),
                    "upsample_bilinear2d", "[N, C, H, W]", "got [2, 3, 4]");
    }

    void upsample_nearest2d_all() {
        Tensor x = tensor({1, 2, 3, 4}).reshape({1, 1, 2, 2});
        QVERIFY(near(vals(F::upsample_nearest2d(x, {2, 3})),
                     {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}));
        const Tensor xx = rnd({2, 3, 3, 2}, 1);
        GRADCHECK(
            [](const TensorList& in) {
                return TensorList{F::upsample_nearest2d(in[0], {2, 3})};
            },
            xx);
        compare_f32_f64(
            [](const TensorList& in) {
                return F::upsample_nearest2d(in[0], {3, 1});
            },
            {xx});
        CHECK_ERROR(ShapeError, F::upsample_nearest2d(zeros({2, 2}), {2, 2}), "upsample_nearest2d",
                    "got [2, 2]");
    }

    void one_hot_all() {
        Tensor y = F::one_hot(from_vector(std::vector<int64_t>{0, 2, 1}, {3}));
        QCOMPARE(y.dtype(), DType::Int64);
        QCOMPARE(y.shape(), Dims({3, 3}));
        QCOMPARE(y.to_vector<int64_t>(), std::vector<int64_t>({1, 0, 0, 0, 0, 1, 0, 1, 0}));
        QCOMPARE(F::one_hot(from_vector(std::vector<int64_t>{1, 0}, {2, 1}), 4).shape(),
                 Dims({2, 1, 4}));
        CHECK_ERROR(IndexError, F::one_hot(from_vector(std::vector<int64_t>{0, 5}, {2}), 3),
                    "one_hot", "class value 5", "num_classes 3");
        CHECK_ERROR(DTypeError, F::one_hot(zeros({2}), 3), "one_hot", "int64");
    }

    void hardswish_all() {
        Tensor x = tensor({-4, -3, -1, 0, 1, 3, 4}).requires_grad_();
        Tensor y = F::hardswish(x);
        QVERIFY(near(vals(y), {0, 0, -1.0 / 3, 0, 2.0 / 3, 3, 4}, 1e-6));
        y.sum().backward();
        // PyTorch: 0 below -3, x / 3 + 0.5 on [-3, 3], 1 above
        QVERIFY(near(vals(x.grad()), {0, -0.5, 1.0 / 6, 0.5, 5.0 / 6, 1.5, 1}, 1e-6));
        const Tensor xx = rnd({3, 4}, 1) * 3.0;
        GRADCHECK([](const TensorList& in) { return TensorList{F::hardswish(in[0])}; },
                  xx.detach().requires_grad_());
        CHECK_ERROR(DTypeError, F::hardswish(arange(3.0)), "hardswish", "int64");
    }

    void prelu_all() {
        Tensor x = tensor({-2, 3, -1, 4}).reshape({2, 2});
        QVERIFY(near(vals(F::prelu(x, tensor({0.25}))), {-0.5, 3, -0.25, 4}));
        QVERIFY(near(vals(F::prelu(x, tensor({0.5, 0.1}))), {-1, 3, -0.5, 4}));
        const Tensor xx = rnd({2, 3, 4}, 1), w = rnd({3}, 2), w1 = rnd({1}, 3);
        GRADCHECK([](const TensorList& in) { return TensorList{F::prelu(in[0], in[1])}; }, xx, w);
        GRADCHECK([](const TensorList& in) { return TensorList{F::prelu(in[0], in[1])}; }, xx, w1);
        compare_f32_f64([](const TensorList& in) { return F::prelu(in[0], in[1]); }, {xx, w});
        CHECK_ERROR(ShapeError, F::prelu(zeros({2, 4}), zeros({3})), "prelu", "[N, 3, ...]",
                    "got [2, 4]");
    }
};

QTEST_APPLESS_MAIN(TestNnFunctional)
#include "test_nn_functional.moc"
