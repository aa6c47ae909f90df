// The CPU element-wise loops' paths against plain scalar loops: lengths around the thread split
// (one thread below two grains of 32768 elements, one contiguous share per thread above, cut on
// 64-element boundaries), odd tails, strided and broadcast operands, 1 vs 2 threads giving the
// same bits, and ReLU's NaN / -0.0 handling as PyTorch's (clamp_min, threshold_backward).
#include <myelin/tensor.h>

#include <QtTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace myelin;

namespace {

std::vector<float> pattern(int64_t n, float scale, float shift) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        v[static_cast<size_t>(i)] = std::sin(static_cast<float>(i) * scale) * 3.0f + shift;
    return v;
}

// Bit-for-bit equality (NaN equals NaN with the same bits, -0.0 differs from 0.0).
bool same_bits(float a, float b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}

// Restores the thread count a test changed.
struct ThreadsGuard {
    int saved = get_num_threads();
    ~ThreadsGuard() { set_num_threads(saved); }
};

// Lengths that hit every split: under one grain, exactly two grains (the first parallel size),
// odd tails, a share boundary that is not a multiple of 64, and several shares.
const int64_t kLengths[] = {1,     15,    17,         1000,   32767, 65535,
                            65536, 65537, 65536 + 63, 131071, 200003};

} // namespace

class TestElementwisePaths : public QObject {
    Q_OBJECT
  private slots:
    // set_flush_denormal (torch.set_flush_denormal): off by default, IEEE denormals kept; on, the
    // calling thread and its OpenMP team flush a denormal product to 0; off again restores them.
    void flush_denormal_is_opt_in_on_every_team_thread() {
        ThreadsGuard guard;
        set_num_threads(2);
        const int64_t n = 200003; // several shares: both team threads multiply
        const Tensor tiny = full({n}, 1e-39f), half = full({n}, 0.5f);
        QVERIFY(!flush_denormal());
        auto all_zero = [](const std::vector<float>& v) {
            for (float x : v)
                if (x != 0.0f) return false;
            return true;
        };
        auto none_zero = [](const std::vector<float>& v) {
            for (float x : v)
                if (!(x > 0.0f)) return false;
            return true;
        };
        QVERIFY(none_zero(mul(tiny, half).to_vector<float>())); // IEEE: 5e-40, a denormal
        if (!set_flush_denormal(true)) QSKIP("this CPU has no flush-to-zero mode");
        QVERIFY(flush_denormal());
        QVERIFY(all_zero(mul(tiny, half).to_vector<float>()));
        QVERIFY(all_zero(add(tiny, full({n}, 0.0f)).to_vector<float>())); // inputs read as 0
        QVERIFY(set_flush_denormal(false));
        QVERIFY(!flush_denormal());
        QVERIFY(none_zero(mul(tiny, half).to_vector<float>()));
    }
    void contiguous_binary_and_unary_match_scalar_loops() {
        ThreadsGuard guard;
        for (int threads : {1, 2}) {
            set_num_threads(threads);
            for (int64_t n : kLengths) {
                const auto av = pattern(n, 0.37f, 0.1f), bv = pattern(n, 0.11f, -0.2f);
                const Tensor a = from_vector(av, {n}), b = from_vector(bv, {n});
                const auto sum = add(a, b).to_vector<float>();
                const auto prod = mul(a, b).to_vector<float>();
                const auto rel = relu(a).to_vector<float>();
                for (int64_t i = 0; i < n; ++i) {
                    const size_t k = static_cast<size_t>(i);
                    QVERIFY2(
                        same_bits(sum[k], av[k] + bv[k]),
                        qPrintable(QString("add n=%1 i=%2 threads=%3").arg(n).arg(i).arg(threads)));
                    QVERIFY2(same_bits(prod[k], av[k] * bv[k]),
                             qPrintable(QString("mul n=%1 i=%2").arg(n).arg(i)));
                    QVERIFY2(same_bits(rel[k], av[k] < 0.0f ? 0.0f : av[k]),
                             qPrintable(QString("relu n=%1 i=%2").arg(n).arg(i)));
                }
            }
        }
    }

    void strided_and_broadcast_operands_match_scalar_loops() {
        ThreadsGuard guard;
        for (int threads : {1, 2}) {
            set_num_threads(threads);
            // [rows, cols] + [cols] (bias-like broadcast) and a transposed (strided) operand.
            for (int64_t rows : {3, 129, 300}) {
                const int64_t cols = 257;
                const auto xv = pattern(rows * cols, 0.013f, 0.0f), bv = pattern(cols, 0.7f, 0.5f);
                const Tensor x = from_vector(xv, {rows, cols});
                const Tensor bias = from_vector(bv, {cols});
                const auto y = add(x, bias).to_vector<float>();
                const auto xt = pattern(rows * cols, 0.029f, 0.3f);
                const Tensor t = from_vector(xt, {cols, rows}).t(); // [rows, cols], strided
                const auto z = mul(x, t).to_vector<float>();
                const auto rz = relu(t).to_vector<float>();
                for (int64_t r = 0; r < rows; ++r)
                    for (int64_t c = 0; c < cols; ++c) {
                        const size_t k = static_cast<size_t>(r * cols + c);
                        const float tv = xt[static_cast<size_t>(c * rows + r)];
                        QVERIFY(same_bits(y[k], xv[k] + bv[static_cast<size_t>(c)]));
                        QVERIFY(same_bits(z[k], xv[k] * tv));
                        QVERIFY(same_bits(rz[k], tv < 0.0f ? 0.0f : tv));
                    }
            }
            // A scalar broadcast over a long contiguous run (zero-stride operand).
            const int64_t n = 65536 + 17;
            const auto xv = pattern(n, 0.21f, 0.0f);
            const auto y = mul(from_vector(xv, {n}), from_vector(std::vector<float>{2.5f}, {1}))
                               .to_vector<float>();
            for (int64_t i = 0; i < n; ++i)
                QVERIFY(same_bits(y[static_cast<size_t>(i)], xv[static_cast<size_t>(i)] * 2.5f));
        }
    }

    void large_misaligned_and_in_place_operands_match_scalar_loops() {
        // Operands larger than the last-level cache (3 x 16 MB), an input whose data starts 12
        // bytes past a cache line, and an in-place product into such a view.
        ThreadsGuard guard;
        const int64_t n = (int64_t(4) << 20) + 37;
        const auto av = pattern(n + 3, 0.0007f, 0.2f), bv = pattern(n, 0.0013f, -0.1f);
        const Tensor a = from_vector(av, {n + 3}).narrow(0, 3, n); // data 12 bytes past a line
        const Tensor b = from_vector(bv, {n});
        for (int threads : {1, 2}) {
            set_num_threads(threads);
            const auto sum = add(a, b).to_vector<float>();
            const auto rel = relu(a).to_vector<float>();
            Tensor inplace = from_vector(av, {n + 3}).narrow(0, 3, n);
            inplace.mul_(b);
            const auto prod = inplace.to_vector<float>();
            for (int64_t i = 0; i < n; ++i) {
                const size_t k = static_cast<size_t>(i);
                const float x = av[k + 3], y = bv[k];
                if (!same_bits(sum[k], x + y) || !same_bits(rel[k], x < 0.0f ? 0.0f : x) ||
                    !same_bits(prod[k], x * y))
                    QFAIL(qPrintable(QString("element %1 (threads %2)").arg(i).arg(threads)));
            }
        }
    }

    void one_and_two_threads_give_the_same_bits() {
        ThreadsGuard guard;
        const int64_t n = 3 * 65537; // odd, and [3, 65537] below
        const Tensor a = from_vector(pattern(n, 0.05f, 0.0f), {n});
        const Tensor b = from_vector(pattern(n, 0.03f, 1.0f), {n});
        std::vector<std::vector<float>> results[2];
        for (int threads : {1, 2}) {
            set_num_threads(threads);
            auto& r = results[threads - 1];
            r.push_back(add(a, b, 0.5).to_vector<float>());
            r.push_back(div(a, b).to_vector<float>());
            r.push_back(exp(a).to_vector<float>());
            r.push_back(sigmoid(b).to_vector<float>());
            r.push_back(
                relu(a.reshape({3, -1}).narrow(1, 1, 65536)).contiguous().to_vector<float>());
        }
        for (size_t k = 0; k < results[0].size(); ++k)
            QVERIFY2(std::memcmp(results[0][k].data(), results[1][k].data(),
                                 results[0][k].size() * sizeof(float)) == 0,
                     qPrintable(QString("result %1 differs between 1 and 2 threads").arg(k)));
    }

    void relu_passes_nan_and_negative_zero_like_pytorch() {
        // torch.relu(tensor([nan, -1, 2, -0.0])) == [nan, 0, 2, -0.0]; the gradient at NaN passes
        // (threshold_backward: x <= 0 ? 0 : g), at -0.0 and negatives it is 0.
        const float nan = std::numeric_limits<float>::quiet_NaN();
        for (int64_t n : {int64_t(5), int64_t(65536 + 5)}) { // one thread and split paths
            std::vector<float> xv(static_cast<size_t>(n), 1.0f);
            xv[0] = nan;
            xv[1] = -1.0f;
            xv[2] = 2.0f;
            xv[3] = -0.0f;
            xv.back() = nan;
            Tensor x = from_vector(xv, {n}).requires_grad_();
            const Tensor y = relu(x);
            const auto yv = y.to_vector<float>();
            QVERIFY(std::isnan(yv[0]));
            QCOMPARE(yv[1], 0.0f);
            QCOMPARE(yv[2], 2.0f);
            QVERIFY(yv[3] == 0.0f && std::signbit(yv[3]));
            QVERIFY(std::isnan(yv.back()));
            y.backward(full({n}, 3.0));
            const auto g = x.grad().to_vector<float>();
            QCOMPARE(g[0], 3.0f);
            QCOMPARE(g[1], 0.0f);
            QCOMPARE(g[2], 3.0f);
            QCOMPARE(g[3], 0.0f);
            QCOMPARE(g.back(), 3.0f);
        }
    }
};

QTEST_APPLESS_MAIN(TestElementwisePaths)
#include "test_elementwise_paths.moc"
