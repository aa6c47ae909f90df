// Autograd behaviour: leaves, grad_fn, accumulation, retain_graph, guards, hooks, in-place
// safety, anomaly mode, memory (no cycles) and gradcheck itself.
#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/tensor.h>

#include <QtTest>

#include "test_support.h"

using namespace myelin;
using autograd::live_node_count;

namespace {
Tensor leaf(std::initializer_list<double> v, DType t = DType::Float32) {
    return tensor(v, TensorOptions(t).with_requires_grad());
}
std::vector<float> values(const Tensor& t) {
    return t.to_vector<float>();
}
} // namespace

class TestAutograd : public QObject {
    Q_OBJECT
  private slots:
    void leaves_and_grad_fn() {
        Tensor x = leaf({1, 2, 3});
        QVERIFY(x.is_leaf());
        QVERIFY(!x.grad_fn());
        Tensor y = x * 2.0;
        QVERIFY(!y.is_leaf());
        QVERIFY(y.requires_grad());
        QCOMPARE(QString(y.grad_fn()->name()), QStringLiteral("MulBackward1"));
        QCOMPARE(QString((x + x).grad_fn()->name()), QStringLiteral("AddBackward0"));
        QCOMPARE(QString(x.sum().grad_fn()->name()), QStringLiteral("SumBackward1"));
        QCOMPARE(int(y.grad_fn()->next_edges().size()), 1);
        QCOMPARE(QString(y.grad_fn()->next_edges()[0].fn->name()),
                 QStringLiteral("AccumulateGrad"));
        Tensor c = ones({3});
        QVERIFY(!(c * 2.0).requires_grad());
        QVERIFY(
            error_of<DTypeError>([] { arange(3).requires_grad_(); }).contains("floating point"));
    }

    void backward_scalar_and_gradient() {
        Tensor x = leaf({1, 2, 3});
        (x * x).sum().backward();
        QCOMPARE(values(x.grad()), std::vector<float>({2, 4, 6}));
        Tensor w = leaf({1, 2});
        Tensor y = w * 3.0;
        y.backward(tensor({1, 10}));
        QCOMPARE(values(w.grad()), std::vector<float>({3, 30}));
        const QString msg = error_of<AutogradError>([&] { (w * 2.0).backward(); });
        QVERIFY2(msg.contains("scalar outputs"), qPrintable(msg));
        QVERIFY(error_of<AutogradError>([] {
                    ones({1}).sum().backward();
                }).contains("does not require grad"));
        QVERIFY(error_of<ShapeError>([&] {
                    (w * 2.0).backward(ones({3}));
                }).contains("gradient has shape [3]"));
    }

    void accumulation_and_retain_graph() {
        Tensor x = leaf({1, 2});
        Tensor loss = (x * x).sum();
        loss.backward({}, true);
        loss.backward();
        QCOMPARE(values(x.grad()), std::vector<float>({4, 8}));
        const QString msg = error_of<AutogradError>([&] { loss.backward(); });
        QVERIFY2(msg.contains("second time") && msg.contains("retain_graph"), qPrintable(msg));
        // a tensor used on two paths accumulates both contributions
        Tensor a = leaf({3});
        (a * a + a * 2.0).sum().backward();
        QCOMPARE(values(a.grad()), std::vector<float>({8}));
    }

    void retain_grad_on_non_leaf() {
        Tensor x = leaf({1, 2});
        Tensor h = x * 3.0;
        h.retain_grad();
        QVERIFY(h.retains_grad());
        (h * h).sum().backward();
        QCOMPARE(values(h.grad()), std::vector<float>({6, 12}));
        QCOMPARE(values(x.grad()), std::vector<float>({18, 36}));
        Tensor h2 = x * 1.0;
        (h2 * 1.0).sum().backward();
        QVERIFY(!h2.grad().defined()); // non-leaves keep no grad unless asked
    }

    void grad_mode_guards() {
        Tensor x = leaf({1});
        {
            autograd::NoGradGuard no_grad;
            QVERIFY(!(x * 2.0).requires_grad());
            {
                autograd::EnableGradGuard enable;
                QVERIFY((x * 2.0).requires_grad());
            }
            QVERIFY(!autograd::is_grad_enabled());
        }
        QVERIFY(autograd::is_grad_enabled());
        Tensor d = (x * 2.0).detach();
        QVERIFY(!d.requires_grad());
        QVERIFY(d.is_leaf());
        Tensor y = x * 2.0;
        QVERIFY(y.detach().shares_storage(y));
        QVERIFY(error_of<AutogradError>([&] { y.requires_grad_(false); }).contains("leaf"));
        x.requires_grad_(false);
        QVERIFY(!(x * 2.0).requires_grad());
    }

    void tensor_hooks() {
        Tensor x = leaf({1, 2});
        int calls = 0;
        HookHandle h = x.register_hook([&](const Tensor& g) {
            ++calls;
            return g * 2.0;
        });
        (x * 1.0).sum().backward();
        QCOMPARE(calls, 1);
        QCOMPARE(values(x.grad()), std::vector<float>({2, 2}));
        h.remove();
        x.set_grad({});
        (x * 1.0).sum().backward();
        QCOMPARE(calls, 1);
        QCOMPARE(values(x.grad()), std::vector<float>({1, 1}));
        // a hook on a non-leaf sees (and may replace) the gradient flowing into it
        Tensor y = x * 3.0;
        Tensor seen;
        y.register_hook([&](const Tensor& g) {
            seen = g.clone();
            return zeros_like(g);
        });
        x.set_grad({});
        (y * 5.0).sum().backward();
        QCOMPARE(values(seen), std::vector<float>({5, 5}));
        QCOMPARE(values(x.grad()), std::vector<float>({0, 0}));
    }

    void inplace_safety() {
        Tensor x = leaf({1, 2});
        Tensor y = x.exp();
        y.add_(1.0); // ExpBackward0 saved y; it is now stale
        const QString msg = error_of<AutogradError>([&] { y.sum().backward(); });
        QVERIFY2(msg.contains("modified by an inplace operation") && msg.contains("ExpBackward0") &&
                     msg.contains("version 1; expected version 0"),
                 qPrintable(msg));
        // in-place on a leaf that requires grad is refused
        QVERIFY(error_of<AutogradError>([&] { x.mul_(2.0); }).contains("leaf"));
        // ...but allowed under NoGradGuard (what optimizers do)
        {
            autograd::NoGradGuard no_grad;
            x.mul_(2.0);
        }
        QCOMPARE(values(x), std::vector<float>({2, 4}));
        // in-place on a non-leaf rebases its history and gradients stay right
        Tensor a = leaf({1, 2});
        Tensor z = a * 2.0;
        z.mul_(3.0);
        z.add_(a);
        z.sum().backward();
        QCOMPARE(values(a.grad()), std::vector<float>({7, 7}));
        QCOMPARE(values(z), std::vector<float>({7, 14}));
    }

    void inplace_through_views() {
        // writing into a slice of a tensor that does not require grad gives it a history
        Tensor w = leaf({1, 2, 3});
        Tensor y = zeros({2, 3});
        y.select(0, 1).copy_(w * 2.0);
        QVERIFY(y.requires_grad());
        QCOMPARE(QString(y.grad_fn()->name()), QStringLiteral("CopySlices"));
        (y * y).sum().backward();
        QCOMPARE(values(w.grad()), std::vector<float>({8, 16, 24}));
        // a view of a leaf that requires grad cannot be modified in place
        Tensor leaf_base = leaf({1, 2});
        QVERIFY(error_of<AutogradError>([&] {
                    leaf_base.narrow(0, 0, 1).mul_(2.0);
                }).contains("view of a leaf"));
    }

    void anomaly_mode_names_the_op() {
        Tensor x = leaf({0, 1}, DType::Float64);
        {
            autograd::DetectAnomalyGuard anomaly;
            Tensor y = sqrt(x).sum();
            const QString msg = error_of<AutogradError>([&] { y.backward(); });
            QVERIFY2(msg.contains("SqrtBackward0") && msg.contains("nan or inf"), qPrintable(msg));
        }
        Tensor y = sqrt(x).sum();
        y.backward(); // without anomaly mode the inf gradient is simply produced
        QVERIFY(std::isinf(x.grad().to_vector<double>()[0]));
    }

    void dropped_graphs_free_everything() {
        const int64_t baseline = live_node_count();
        std::weak_ptr<TensorImpl> hidden;
        {
            Tensor w1 = randn({8, 16}).requires_grad_();
            Tensor w2 = randn({16, 4}).requires_grad_();
            Tensor in = randn({32, 8});
            for (int step = 0; step < 3; ++step) {
                Tensor h = relu(matmul(in, w1));
                hidden = h.impl_ptr();
                Tensor logits = matmul(sigmoid(h), w2);
                Tensor loss = (log_softmax(logits, 1) * -1.0).mean();
                QVERIFY(live_node_count() > baseline + 5); // the graph is alive while referenced
                loss.backward({}, step == 1);              // with and without retain_graph
            }
            Tensor unused = exp(w1 * 2.0).sum(); // a graph dropped without backward
        }
        QCOMPARE(live_node_count(), baseline);
        QVERIFY(hidden.expired());
    }

    void product_gradients_keep_operand_layout() {
        // As in PyTorch: the gradient of a transposed operand (linear's weight.t()) is computed
        // transposed, so the leaf's gradient is contiguous with no transposing copy; values are
        // the same as for the plain layout.
        Tensor x = randn({5, 4}).requires_grad_(), w = randn({3, 4}).requires_grad_();
        Tensor g = randn({5, 3});
        (matmul(x, w.t()) * g).sum().backward();
        QVERIFY(w.grad().is_contiguous());
        Tensor w_plain = w.detach().t().contiguous().requires_grad_();
        Tensor x_plain = x.detach().requires_grad_();
        (matmul(x_plain, w_plain) * g).sum().backward();
        QVERIFY(allclose(w.grad(), w_plain.grad().t(), 1e-6, 1e-6));
        QVERIFY(allclose(x.grad(), x_plain.grad(), 1e-6, 1e-6));
        // and for a transposed left operand
        Tensor a = randn({4, 5}).requires_grad_();
        (matmul(a.t(), w_plain) * g).sum().backward();
        QVERIFY(a.grad().is_contiguous());
        QVERIFY(allclose(a.grad().t(), x_plain.grad(), 1e-6, 1e-6));
    }

    void dtype_conversion_gradients() {
        Tensor x = leaf({1, 2});
        Tensor y = x.to(DType::Float64) * 2.0;
        y.sum().backward();
        QCOMPARE(x.grad().dtype(), DType::Float32);
        QCOMPARE(values(x.grad()), std::vector<float>({2, 2}));
    }

    void max_with_indices_routes_gradient() {
        Tensor x = tensor({{1, 5, 2}, {7, 0, 3}}, TensorOptions().with_requires_grad());
        auto [v, i] = max(x, 1);
        v.sum().backward();
        QCOMPARE(values(x.grad()), std::vector<float>({0, 1, 0, 1, 0, 0}));
        QVERIFY(!i.requires_grad());
    }

    void gradcheck_detects_wrong_gradients() {
        Tensor x = randn({3}, DType::Float64).requires_grad_();
        auto good = autograd::gradcheck(
            [](const TensorList& in) { return TensorList{tanh(in[0]) * in[0]}; }, {x});
        QVERIFY2(good.ok, good.message.c_str());
        // A hook that doubles the gradient makes the analytical Jacobian wrong.
        auto bad = autograd::gradcheck(
            [](const TensorList& in) {
                Tensor y = in[0] * 3.0;
                if (autograd::is_grad_enabled())
                    y.register_hook([](const Tensor& g) { return g * 2.0; });
                return TensorList{y};
            },
            {x});
        QVERIFY(!bad.ok);
        QVERIFY(bad.message.find("analytical") != std::string::npos);
    }
};

QTEST_APPLESS_MAIN(TestAutograd)
#include "test_autograd.moc"
