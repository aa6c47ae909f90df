// The kernels that change layout to and from oneDNN's nChw16c inside a ReLU or max-pool pass
// (backend/cpu/nchw16c.h), checked bit for bit against the plain ops they stand for: the 2x2 max
// pool's values and winners against max_pool2d_with_indices, the fused backwards against
// max_pool2d's autograd and ReLU's gradient rule. Both copies run: the library's (AVX-512 where
// the build has it) and the scalar path compiled into this test (nchw16c_portable.cpp).
#include "backend/cpu/nchw16c.h"

#include <myelin/autograd.h>
#include <myelin/generator.h>
#include <myelin/nn/functional.h>
#include <myelin/tensor.h>

#include <QtTest>

#include <cstring>
#include <limits>
#include <vector>

using namespace myelin;
namespace F = myelin::nn::functional;
namespace blocked = myelin::backend::nchw16c;

namespace nchw16c_test {
void portable_max_pool_2x2(const float* x, float* y, uint8_t* codes, int64_t N, int64_t C,
                           int64_t H, int64_t W);
void portable_relu_max_pool_2x2_backward(const float* grad_pooled, const uint8_t* codes, float* out,
                                         int64_t N, int64_t C, int64_t H, int64_t W);
void portable_relu_backward(const float* gy, const float* y, float* out, int64_t N, int64_t C,
                            int64_t HW);
} // namespace nchw16c_test

namespace {

// nchw [N, C, H, W] -> [N, C/16, H, W, 16] and back.
std::vector<float> to_blocked(const Tensor& t) {
    const Tensor c = t.contiguous();
    const int64_t N = c.size(0), C = c.size(1), HW = c.size(2) * c.size(3);
    const float* p = c.data<float>();
    std::vector<float> out(size_t(c.numel()));
    for (int64_t n = 0; n < N; ++n)
        for (int64_t ch = 0; ch < C; ++ch)
            for (int64_t i = 0; i < HW; ++i)
                out[size_t(((n * (C / 16) + ch / 16) * HW + i) * 16 + ch % 16)] =
                    p[(n * C + ch) * HW + i];
    return out;
}

bool same_bits(const float* a, const float* b, size_t n) {
    return std::memcmp(a, b, n * sizeof(float)) == 0;
}

// Activations with what makes a pool's choice hard: ties (ReLU's zeros, repeated values), -0,
// NaNs (the last in scan order must win), infinities.
Tensor hard_activation(const Dims& shape, uint64_t seed) {
    Generator g(seed);
    Tensor x = relu(randn(shape, TensorOptions(DType::Float32), &g)).contiguous().clone();
    float* p = x.data<float>();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (int64_t i = 0; i < x.numel(); i += 7)
        p[i] = p[i + 1 < x.numel() ? i + 1 : i]; // equal neighbours
    for (int64_t i = 3; i < x.numel(); i += 97)
        p[i] = nan;
    for (int64_t i = 4; i < x.numel(); i += 101)
        p[i] = -0.0f;
    for (int64_t i = 5; i < x.numel(); i += 211)
        p[i] = std::numeric_limits<float>::infinity();
    if (x.numel() > 4) p[0] = p[1] = nan; // two NaNs in one window
    return x;
}

using PoolFn = void (*)(const float*, float*, uint8_t*, int64_t, int64_t, int64_t, int64_t);
using BackwardFn = void (*)(const float*, const uint8_t*, float*, int64_t, int64_t, int64_t,
                            int64_t);

void library_pool(const float* x, float* y, uint8_t* c, int64_t N, int64_t C, int64_t H,
                  int64_t W) {
    blocked::max_pool_2x2_from_blocked(x, y, c, {N, C, H, W, H / 2, W / 2});
}
void library_backward(const float* g, const uint8_t* c, float* out, int64_t N, int64_t C, int64_t H,
                      int64_t W) {
    blocked::relu_max_pool_2x2_backward_to_blocked(g, c, out, {N, C, H, W, H / 2, W / 2});
}

// codes_to_blocked / codes_from_blocked against the nchw pool's codes (from max_pool2d's indices)
// and the blocked kernel's codes.
void check_code_conversions(const std::vector<uint8_t>& codes, const std::vector<float>& y,
                            const int64_t* idx, const Dims& shape) {
    const int64_t N = shape[0], C = shape[1], H = shape[2], W = shape[3];
    const blocked::Pool2x2 p{N, C, H, W, H / 2, W / 2};
    std::vector<uint8_t> plain(codes.size());
    for (size_t i = 0; i < plain.size(); ++i) {
        const int64_t pos = int64_t(i) % (p.OH * p.OW);
        const int64_t row = idx[i] / W - 2 * (pos / p.OW), col = idx[i] % W - 2 * (pos % p.OW);
        plain[i] = uint8_t(row * 2 + col);
    }
    std::vector<uint8_t> converted(codes.size());
    blocked::codes_to_blocked(plain.data(), y.data(), converted.data(), p);
    QVERIFY2(converted == codes, "codes_to_blocked");

    Generator g(7);
    Tensor up = randn({int64_t(y.size())}, TensorOptions(DType::Float32), &g).contiguous().clone();
    up.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
    std::vector<uint8_t> back(codes.size());
    std::vector<float> masked(codes.size());
    blocked::codes_from_blocked(codes.data(), up.data<float>(), back.data(), masked.data(), p);
    QVERIFY2(back == plain, "codes_from_blocked: plain codes");
    std::vector<float> want(codes.size());
    for (size_t i = 0; i < want.size(); ++i)
        want[i] = blocked::relu_grad(up.data<float>()[i], y[i]);
    QVERIFY2(same_bits(masked.data(), want.data(), want.size()), "codes_from_blocked: gradient");
}

void check_pool(PoolFn pool, BackwardFn backward, const Dims& shape) {
    const int64_t N = shape[0], C = shape[1], H = shape[2], W = shape[3];
    const Tensor a = hard_activation(shape, uint64_t(H * 131 + W));
    const std::vector<float> a_blocked = to_blocked(a);
    const int64_t pooled_count = N * C * (H / 2) * (W / 2);
    std::vector<float> y(static_cast<size_t>(pooled_count));
    std::vector<uint8_t> codes(static_cast<size_t>(pooled_count));
    pool(a_blocked.data(), y.data(), codes.data(), N, C, H, W);

    // Values and winners: max_pool2d_with_indices (PyTorch's rules).
    const F::Pool2dOptions window;
    Tensor input = a.detach().requires_grad_(true);
    const ValuesIndices ref = F::max_pool2d_with_indices(input, window);
    QVERIFY2(same_bits(y.data(), ref.values.contiguous().data<float>(), y.size()), "pooled values");
    // Codes in block order: bits 0-1 the winner, bit 2 where ReLU stops the gradient (y <= 0).
    const int64_t* idx = ref.indices.contiguous().data<int64_t>();
    const int64_t plane = (H / 2) * (W / 2);
    for (int64_t i = 0; i < pooled_count; ++i) {
        const int64_t pos = i % plane, ch = (i / plane) % C, n = i / plane / C;
        const int64_t ow = pos % (W / 2), oh = pos / (W / 2);
        const int c = codes[size_t(((n * (C / 16) + ch / 16) * plane + pos) * 16 + ch % 16)];
        const int64_t expected = (2 * oh + ((c >> 1) & 1)) * W + 2 * ow + (c & 1);
        if (idx[i] != expected || (c >> 2) != (y[size_t(i)] <= 0.0f ? 1 : 0))
            QFAIL(qPrintable(QString("window %1: code %2, max_pool2d's index %3, value %4")
                                 .arg(i)
                                 .arg(c)
                                 .arg(idx[i])
                                 .arg(double(y[size_t(i)]))));
    }
    if (pool != nchw16c_test::portable_max_pool_2x2) check_code_conversions(codes, y, idx, shape);

    // Backward: the pool's gradient, then ReLU's rule at the activation, laid out blocked.
    Generator g(99);
    Tensor up = randn(ref.values.shape(), TensorOptions(DType::Float32), &g).contiguous().clone();
    up.data<float>()[1] = std::numeric_limits<float>::quiet_NaN(); // passes where it wins
    sum(F::max_pool2d(input, window) * up).backward();
    const Tensor pool_grad = input.grad().contiguous();
    Tensor expected = pool_grad.clone();
    float* e = expected.data<float>();
    const float* av = a.data<float>();
    for (int64_t i = 0; i < expected.numel(); ++i)
        e[i] = blocked::relu_grad(pool_grad.data<float>()[i], av[i]);
    const std::vector<float> expected_blocked = to_blocked(expected);
    std::vector<float> out(expected_blocked.size(), 123.0f); // every element must be written
    backward(up.data<float>(), codes.data(), out.data(), N, C, H, W);
    QVERIFY2(same_bits(out.data(), expected_blocked.data(), out.size()), "blocked gradient");
}

} // namespace

class TestNchw16c : public QObject {
    Q_OBJECT
  private slots:
    void max_pool_matches_plain_ops_data() {
        QTest::addColumn<bool>("portable");
        QTest::addColumn<int>("h");
        QTest::addColumn<int>("w");
        for (bool portable : {false, true})
            for (auto [h, w] : {std::pair{28, 28}, {14, 14}, {11, 9}, {8, 40}, {2, 2}, {5, 35}})
                QTest::addRow("%s %dx%d", portable ? "scalar" : "library", h, w)
                    << portable << h << w;
    }
    void max_pool_matches_plain_ops() {
        QFETCH(bool, portable);
        QFETCH(int, h);
        QFETCH(int, w);
        if (portable)
            check_pool(nchw16c_test::portable_max_pool_2x2,
                       nchw16c_test::portable_relu_max_pool_2x2_backward, {3, 32, h, w});
        else
            check_pool(library_pool, library_backward, {3, 32, h, w});
    }

    void relu_backward_matches_rule() {
        const Tensor y = hard_activation({2, 32, 5, 7}, 5);
        Generator g(6);
        const Tensor gy = randn(y.shape(), TensorOptions(DType::Float32), &g).contiguous();
        Tensor expected = gy.clone();
        for (int64_t i = 0; i < expected.numel(); ++i)
            expected.data<float>()[i] = blocked::relu_grad(gy.data<float>()[i], y.data<float>()[i]);
        const std::vector<float> want = to_blocked(expected);
        std::vector<float> lib(want.size()), portable(want.size());
        blocked::relu_backward_to_blocked(gy.data<float>(), y.data<float>(), lib.data(), 2, 32, 35);
        nchw16c_test::portable_relu_backward(gy.data<float>(), y.data<float>(), portable.data(), 2,
                                             32, 35);
        QVERIFY(same_bits(lib.data(), want.data(), want.size()));
        QVERIFY(same_bits(portable.data(), want.data(), want.size()));
    }
};

QTEST_APPLESS_MAIN(TestNchw16c)
#include "test_nchw16c.moc"
