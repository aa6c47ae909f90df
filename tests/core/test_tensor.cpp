// Tensor basics: creation, views, dtypes, broadcasting, indexing, printing, random, errors.
#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/tensor.h>

#include <QtTest>

#include "../support/device_line.h"
#include "test_support.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

using namespace myelin;

namespace {
std::vector<float> values(const Tensor& t) {
    return t.to_vector<float>();
}
} // namespace

class TestTensor : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() { myelin::test::print_cuda_device(); }

    void creation() {
        QCOMPARE(zeros({2, 3}).shape(), Dims({2, 3}));
        QCOMPARE(values(ones({3})), std::vector<float>({1, 1, 1}));
        QCOMPARE(values(full({2}, 2.5)), std::vector<float>({2.5f, 2.5f}));
        QCOMPARE(arange(4).dtype(), DType::Int64);
        QCOMPARE(arange(4).to_vector<int64_t>(), std::vector<int64_t>({0, 1, 2, 3}));
        QCOMPARE(arange(0, 1, 0.25).dtype(), DType::Float32);
        QCOMPARE(values(arange(0, 1, 0.25)), std::vector<float>({0, 0.25f, 0.5f, 0.75f}));
        QCOMPARE(values(linspace(0, 1, 5)), std::vector<float>({0, 0.25f, 0.5f, 0.75f, 1}));
        QCOMPARE(values(eye(2, 3)), std::vector<float>({1, 0, 0, 0, 1, 0}));
        QCOMPARE(zeros_like(ones({2, 2}, DType::Float64)).dtype(), DType::Float64);
        QCOMPARE(values(tensor({{1, 2}, {3, 4}})), std::vector<float>({1, 2, 3, 4}));
        QCOMPARE(scalar_tensor(3).dim(), 0);
        QCOMPARE(scalar_tensor(3).item(), 3.0);
        QCOMPARE(empty({0, 3}).numel(), int64_t(0));
        QVERIFY(ones({2}, TensorOptions().with_requires_grad()).requires_grad());
        QVERIFY(error_of<ShapeError>([] {
                    from_vector(std::vector<float>{1, 2, 3}, {2, 2});
                }).contains("cannot fill shape [2, 2]"));
    }

    void views_share_storage() {
        Tensor x = arange(12, TensorOptions(DType::Float32)).view({3, 4});
        Tensor t = x.t();
        QVERIFY(t.shares_storage(x));
        QVERIFY(!t.is_contiguous());
        QCOMPARE(t.strides(), Dims({1, 4}));
        Tensor c = t.contiguous();
        QVERIFY(!c.shares_storage(x));
        QVERIFY(c.is_contiguous());
        QVERIFY(x.contiguous().shares_storage(x)); // no copy when already contiguous
        QCOMPARE(values(c), std::vector<float>({0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
        // writes through a view are visible in the base
        x.select(1, 2).fill_(-1);
        QCOMPARE(values(x.select(1, 2)), std::vector<float>({-1, -1, -1}));
        QCOMPARE(x[1][2].item(), -1.0);
    }

    void view_ops() {
        Tensor x = arange(24, TensorOptions(DType::Float32)).view({2, 3, 4});
        QCOMPARE(x.permute({2, 0, 1}).shape(), Dims({4, 2, 3}));
        QCOMPARE(x.transpose(0, 2).shape(), Dims({4, 3, 2}));
        QCOMPARE(x.unsqueeze(1).shape(), Dims({2, 1, 3, 4}));
        QCOMPARE(x.unsqueeze(-1).shape(), Dims({2, 3, 4, 1}));
        QCOMPARE(x.unsqueeze(1).squeeze(1).shape(), Dims({2, 3, 4}));
        QCOMPARE(ones({1, 3, 1}).squeeze().shape(), Dims({3}));
        QCOMPARE(x.flatten().shape(), Dims({24}));
        QCOMPARE(x.flatten(1).shape(), Dims({2, 12}));
        QCOMPARE(x.flatten(1).unflatten(1, {3, -1}).shape(), Dims({2, 3, 4}));
        QCOMPARE(x.reshape({-1, 6}).shape(), Dims({4, 6}));
        QCOMPARE(values(x.narrow(2, 1, 2).select(0, 0).select(0, 0)), std::vector<float>({1, 2}));
        QCOMPARE(values(arange(10, TensorOptions(DType::Float32)).slice(0, 1, 8, 3)),
                 std::vector<float>({1, 4, 7}));
        QCOMPARE(values(arange(10, TensorOptions(DType::Float32)).slice(0, -3, std::nullopt)),
                 std::vector<float>({7, 8, 9}));
        Tensor e = tensor({1, 2, 3}).unsqueeze(0).expand({4, 3});
        QCOMPARE(e.strides(), Dims({0, 1}));
        QVERIFY(!e.is_contiguous());
        QCOMPARE(e.contiguous().sum().item(), 24.0);
        // a transposed tensor cannot be viewed flat, but reshape copies
        QVERIFY(error_of<ShapeError>([&] { x.transpose(0, 1).view({-1}); }).contains("reshape"));
        QCOMPARE(x.transpose(0, 1).reshape({-1}).numel(), int64_t(24));
        QVERIFY(error_of<ShapeError>([&] {
                    x.view({5, -1});
                }).contains("invalid for input of size 24"));
        QVERIFY(error_of<ShapeError>([&] {
                    tensor({1, 2}).expand({3, 3});
                }).contains("must match the existing size (2)"));
    }

    void split_cat_stack() {
        Tensor x = arange(10, TensorOptions(DType::Float32));
        auto parts = x.split(4);
        QCOMPARE(int(parts.size()), 3);
        QCOMPARE(parts[2].numel(), int64_t(2));
        auto chunks = x.chunk(3);
        QCOMPARE(int(chunks.size()), 3);
        QCOMPARE(chunks[0].numel(), int64_t(4));
        QVERIFY(equal(cat(parts), x));
        auto sized = split(x, std::vector<int64_t>{3, 7});
        QCOMPARE(sized[1].numel(), int64_t(7));
        QCOMPARE(stack({x, x}, 1).shape(), Dims({10, 2}));
        QVERIFY(error_of<ShapeError>([&] {
                    cat({ones({2, 3}), ones({2, 4})}, 0);
                }).contains("Expected size 3 but got size 4"));
        QVERIFY(error_of<ShapeError>([&] {
                    stack({ones({2}), ones({3})});
                }).contains("equal size"));
    }

    void broadcasting_and_promotion() {
        Tensor a = ones({3, 1}), b = arange(4, TensorOptions(DType::Float32));
        QCOMPARE((a + b).shape(), Dims({3, 4}));
        QCOMPARE(broadcast_shapes({2, 1, 4}, {3, 1}), Dims({2, 3, 4}));
        const QString msg = error_of<ShapeError>([] { add(ones({2, 3}), ones({4})); });
        QVERIFY2(msg.contains("add") && msg.contains("[2, 3]") && msg.contains("[4]"),
                 qPrintable(msg));
        QCOMPARE((ones({2}) + ones({2}, DType::Float64)).dtype(), DType::Float64);
        QCOMPARE((arange(3) + ones({3})).dtype(), DType::Float32);
        QCOMPARE((arange(3) + 1.0).dtype(), DType::Int64);
        QCOMPARE((arange(3) + 0.5).dtype(), DType::Float32);
        QCOMPARE((arange(3) / 2.0).dtype(), DType::Float32);
        // a 0-dim tensor does not promote a dimensioned one of the same category (PyTorch)
        QCOMPARE((ones({2}) * scalar_tensor(2, DType::Float64)).dtype(), DType::Float32);
        QCOMPARE(gt(tensor({1, 5}), 2.0).dtype(), DType::Bool);
        QCOMPARE(gt(tensor({1, 5}), 2.0).to_vector<bool>(), std::vector<bool>({false, true}));
    }

    void dtype_conversions() {
        Tensor x = tensor({1.5, -2.25, 65504, 1e-3});
        QCOMPARE(values(x.to(DType::Float16).to(DType::Float32))[0], 1.5f);
        QCOMPARE(values(x.to(DType::Float16).to(DType::Float32))[2], 65504.0f);
        QVERIFY(std::abs(values(x.to(DType::Float16).to(DType::Float32))[3] - 1e-3f) < 1e-6f);
        QCOMPARE(values(x.to(DType::BFloat16).to(DType::Float32))[1], -2.25f);
        QCOMPARE(x.to(DType::Int64).to_vector<int64_t>()[1], int64_t(-2)); // truncation
        QCOMPARE(x.to(DType::Bool).to_vector<bool>()[0], true);
        QCOMPARE(tensor({0, 300}).to(DType::UInt8).to_vector<uint8_t>()[1], uint8_t(300 % 256));
        // half precision math computes in float32 and stores half
        Tensor h = ones({4}, DType::Float16) * 3.0;
        QCOMPARE(h.dtype(), DType::Float16);
        QCOMPARE(sum(h).item(), 12.0);
        QCOMPARE(exp(zeros({2}, DType::BFloat16)).to_vector<float>()[0], 1.0f);
    }

    void reductions() {
        Tensor x = tensor({{1, 2, 3}, {4, 5, 6}});
        QCOMPARE(sum(x).item(), 21.0);
        QCOMPARE(values(sum(x, {0})), std::vector<float>({5, 7, 9}));
        QCOMPARE(sum(x, {1}, true).shape(), Dims({2, 1}));
        QCOMPARE(values(mean(x, {-1})), std::vector<float>({2, 5}));
        QCOMPARE(var(x, {1}).to_vector<float>()[0], 1.0f);
        QCOMPARE(var(x, {1}, 0.0).to_vector<float>()[0], 2.0f / 3.0f);
        auto [v, i] = max(x, 1);
        QCOMPARE(values(v), std::vector<float>({3, 6}));
        QCOMPARE(i.to_vector<int64_t>(), std::vector<int64_t>({2, 2}));
        QCOMPARE(argmax(x).item<int64_t>(), int64_t(5));
        QCOMPARE(argmin(x, 0).to_vector<int64_t>(), std::vector<int64_t>({0, 0, 0}));
        QCOMPARE(sum(arange(5)).dtype(), DType::Int64);
        QCOMPARE(sum(gt(x, 2.0)).item<int64_t>(), int64_t(4));
        QVERIFY(error_of<DTypeError>([] { mean(arange(4)); }).contains("floating point"));
        QVERIFY(error_of<IndexError>([&] { sum(x, {2}); }).contains("dimension out of range"));
        QVERIFY(error_of<IndexError>([] { max(empty({0, 3}), 0); }).contains("zero-size"));
        QCOMPARE(values(softmax(zeros({2, 4}), 1))[0], 0.25f);
    }

    void indexing() {
        Tensor x = arange(12, TensorOptions(DType::Float32)).view({3, 4});
        Tensor idx = from_vector(std::vector<int64_t>{2, 0}, {2});
        QCOMPARE(values(index_select(x, 0, idx)), std::vector<float>({8, 9, 10, 11, 0, 1, 2, 3}));
        Tensor g = gather(x, 1, from_vector(std::vector<int64_t>{3, 0, 1}, {3, 1}));
        QCOMPARE(values(g), std::vector<float>({3, 4, 9}));
        Tensor s = scatter_add(zeros({2, 3}), 1,
                               from_vector(std::vector<int64_t>{0, 0, 2, 1}, {2, 2}), ones({2, 2}));
        QCOMPARE(values(s), std::vector<float>({2, 0, 0, 0, 1, 1}));
        Tensor m = masked_fill(x, gt(x, 9.0), -1);
        QCOMPARE(values(m).back(), -1.0f);
        QCOMPARE(values(where(gt(x, 5.0), x, zeros({}))).front(), 0.0f);
        // bad indices name the op, the index and the size
        QString msg = error_of<IndexError>(
            [&] { index_select(x, 0, from_vector(std::vector<int64_t>{3}, {1})); });
        QVERIFY2(msg.contains("index 3 is out of bounds for dimension 0 with size 3"),
                 qPrintable(msg));
        msg = error_of<IndexError>([&] { x.select(1, 4); });
        QVERIFY2(msg.contains("index 4 is out of range"), qPrintable(msg));
        msg = error_of<IndexError>([&] {
            gather(x, 1, from_vector(std::vector<int64_t>{-1}, {1, 1}));
        });
        QVERIFY2(msg.contains("gather") && msg.contains("-1"), qPrintable(msg));
        msg = error_of<DTypeError>([&] { index_select(x, 0, tensor({0})); });
        QVERIFY2(msg.contains("int64"), qPrintable(msg));
        QVERIFY(error_of<DTypeError>([&] { where(x, x, x); }).contains("bool"));
    }

    void matmul_shapes_and_errors() {
        Tensor a = ones({2, 3}), b = ones({3, 4});
        QCOMPARE(matmul(a, b).shape(), Dims({2, 4}));
        QCOMPARE(matmul(ones({5, 2, 3}), b).shape(), Dims({5, 2, 4}));
        QCOMPARE(matmul(ones({5, 1, 2, 3}), ones({4, 3, 6})).shape(), Dims({5, 4, 2, 6}));
        QCOMPARE(matmul(ones({3}), ones({3})).dim(), 0);
        QCOMPARE(matmul(ones({3}), ones({3})).item(), 3.0);
        QCOMPARE(bmm(ones({2, 2, 3}), ones({2, 3, 1})).shape(), Dims({2, 2, 1}));
        QString msg = error_of<ShapeError>([&] { mm(a, a); });
        QVERIFY2(msg.contains("2x3 and 2x3"), qPrintable(msg));
        msg = error_of<DTypeError>([&] { matmul(a, ones({3, 4}, DType::Float64)); });
        QVERIFY2(msg.contains("float32") && msg.contains("float64"), qPrintable(msg));
        QCOMPARE(values(mm(tensor({{1, 2}, {3, 4}}), tensor({{1, 2}, {3, 4}}).t())),
                 std::vector<float>({5, 11, 11, 25}));
    }

    // x / s divides (PyTorch's CPU div_true_kernel); x * (1 / s) would differ in the last bit.
    // The expected bits are torch 1.13's: torch.tensor([1, 2, 3, 7, 10, 0.1]) / 3.0 and / 255.0.
    void division_by_a_scalar_matches_pytorch() {
        const Tensor x = tensor({1.0, 2.0, 3.0, 7.0, 10.0, 0.1});
        const std::vector<float> by3 = {0x1.555556p-2f, 0x1.555556p-1f, 1.0f,
                                        0x1.2aaaaap+1f, 0x1.aaaaaap+1f, 0x1.111112p-5f};
        const std::vector<float> by255 = {0x1.010102p-8f, 0x1.010102p-7f, 0x1.818182p-7f,
                                          0x1.c1c1c2p-6f, 0x1.414142p-5f, 0x1.9b34cep-12f};
        QCOMPARE(values(x / 3.0), by3);
        QCOMPARE(values(div(x, 255.0)), by255);
        Tensor y = x.clone();
        y.div_(255.0);
        QCOMPARE(values(y), by255);
        QVERIFY(values(x * (1.0 / 3.0)) != by3); // not vacuous: the product differs
        // Its gradient divides too (DivBackward1), and 1 / 0 stays IEEE.
        Tensor w = x.clone().requires_grad_(true);
        sum(w / 3.0).backward();
        QCOMPARE(values(w.grad())[0], 1.0f / 3.0f);
        QCOMPARE(values(x / 0.0)[0], std::numeric_limits<float>::infinity());
        QVERIFY(std::isnan(values(zeros({1}) / 0.0)[0]));
    }

    void inplace_and_versions() {
        Tensor x = zeros({3});
        const uint32_t v0 = x.version();
        x.add_(1);
        x.mul_(tensor({1, 2, 3}));
        x.sub_(tensor({1, 1, 1}), 2.0);
        x.div_(2.0);
        x.clamp_(0.0, std::nullopt);
        QCOMPARE(values(x), std::vector<float>({0, 0, 0.5f}));
        QCOMPARE(x.version(), v0 + 5);
        Tensor view = x.narrow(0, 0, 2);
        view.fill_(7);
        QCOMPARE(x.version(), v0 + 6); // views share the counter
        x.copy_(tensor({1, 2, 3}));
        QCOMPARE(values(x), std::vector<float>({1, 2, 3}));
        x.zero_();
        QCOMPARE(sum(x).item(), 0.0);
        Tensor i = arange(3);
        QVERIFY(error_of<DTypeError>([&] { i.add_(ones({3})); }).contains("can't be cast"));
        QVERIFY(error_of<ShapeError>([&] {
                    Tensor y = ones({3});
                    y.add_(ones({2, 3}));
                }).contains("doesn't match the broadcast shape"));
        // overlapping in-place: x += x.flip-ish view must read the old values
        Tensor z = arange(4, TensorOptions(DType::Float32));
        z.add_(z.slice(0, std::nullopt, std::nullopt).contiguous());
        QCOMPARE(values(z), std::vector<float>({0, 2, 4, 6}));
    }

    void printing() {
        QCOMPARE(QString::fromStdString(tensor({1, 2, 3}).str()),
                 QStringLiteral("tensor([1., 2., 3.])"));
        QCOMPARE(QString::fromStdString(
                     tensor({{1.5, 2}, {3, 4}}, TensorOptions().with_requires_grad()).str()),
                 QStringLiteral(
                     "tensor([[1.5000, 2.0000],\n        [3.0000, 4.0000]], requires_grad=True)"));
        QCOMPARE(QString::fromStdString(scalar_tensor(2.5).str()),
                 QStringLiteral("tensor(2.5000)"));
        QCOMPARE(QString::fromStdString(arange(3).str()), QStringLiteral("tensor([0, 1, 2])"));
        QCOMPARE(QString::fromStdString(gt(arange(2), 0.0).str()),
                 QStringLiteral("tensor([False,  True])"));
        QCOMPARE(QString::fromStdString(tensor({0.5}, DType::Float64).str()),
                 QStringLiteral("tensor([0.5000], dtype=float64)"));
        QCOMPARE(QString::fromStdString(tensor({1e-5, 1}).str()),
                 QStringLiteral("tensor([1.0000e-05, 1.0000e+00])"));
        Tensor a = ones({2}, TensorOptions().with_requires_grad());
        QCOMPARE(QString::fromStdString((a + a).str()),
                 QStringLiteral("tensor([2., 2.], grad_fn=<AddBackward0>)"));
        QCOMPARE(QString::fromStdString(zeros({0}).str()), QStringLiteral("tensor([])"));
        const std::string big = arange(2000).str();
        QVERIFY(big.find("...") != std::string::npos);
        QVERIFY(big.size() < 100);
        QVERIFY(error_of<Error>([] { ones({2}).item(); }).contains("2 elements"));
    }

    void generator_reproducible_and_restorable() {
        manual_seed(42);
        Tensor a = randn({5});
        manual_seed(42);
        Tensor b = randn({5});
        QVERIFY(equal(a, b));
        Generator g(7);
        const std::string state = g.get_state();
        Tensor r1 = rand({4}, {}, &g);
        g.set_state(state);
        Tensor r2 = rand({4}, {}, &g);
        QVERIFY(equal(r1, r2));
        QVERIFY(error_of<Error>([&] { g.set_state("garbage"); }).contains("get_state"));
        Tensor u = rand({10000}, {}, &g);
        QVERIFY(amin(u).item() >= 0.0 && amax(u).item() < 1.0);
        QVERIFY(std::abs(mean(u).item() - 0.5) < 0.02);
        Tensor n = randn({10000}, DType::Float64, &g);
        QVERIFY(std::abs(mean(n).item()) < 0.05);
        QVERIFY(std::abs(myelin::std(n).item() - 1.0) < 0.05);
        Tensor p = randperm(50, DType::Int64, &g);
        std::vector<int64_t> pv = p.to_vector<int64_t>();
        std::sort(pv.begin(), pv.end());
        std::vector<int64_t> expected(50);
        std::iota(expected.begin(), expected.end(), 0);
        QCOMPARE(pv, expected);
        Tensor ri = randint(3, 6, {1000}, DType::Int64, &g);
        QCOMPARE(amin(ri).item<int64_t>(), int64_t(3));
        QCOMPARE(amax(ri).item<int64_t>(), int64_t(5));
        QCOMPARE(sum(bernoulli({100}, 1.0, {}, &g)).item(), 100.0);
        QCOMPARE(sum(bernoulli(zeros({100}), &g)).item(), 0.0);
        QVERIFY(error_of<Error>([&] { bernoulli(full({2}, 1.5), &g); }).contains("[0, 1]"));
    }

    void threads_and_backends() {
        const int before = get_num_threads();
        set_num_threads(1);
        QCOMPARE(get_num_threads(), 1);
        set_num_threads(before);
        QVERIFY(QString::fromStdString(backends_summary()).startsWith("CPU ("));
        QVERIFY(is_available(DeviceType::CPU));
        // The CUDA slot exists in the dispatch table; asking for an absent device is a clear error.
        if (!is_available(DeviceType::CUDA)) {
            const QString msg =
                error_of<DeviceError>([] { ones({2}).to(Device(DeviceType::CUDA)); });
            QVERIFY2(msg.contains("CUDA"), qPrintable(msg));
        }
    }

    void large_elementwise_parallel_matches_serial() {
        // Large enough for the parallel path; compare against a small-slice evaluation.
        Tensor x = randn({300000});
        Tensor y = sigmoid(x) * x + relu(x);
        Tensor head = x.narrow(0, 0, 100);
        QVERIFY(allclose(y.narrow(0, 0, 100), sigmoid(head) * head + relu(head)));
        Tensor tail = x.narrow(0, 299900, 100);
        QVERIFY(allclose(y.narrow(0, 299900, 100), sigmoid(tail) * tail + relu(tail)));
        QVERIFY(std::abs(sum(x).item() - sum(x.to(DType::Float64)).item()) < 1e-2);
    }
};

QTEST_APPLESS_MAIN(TestTensor)
#include "test_tensor.moc"
