// Losses: values and input gradients against PyTorch 1.13 (tests/golden/optim.txt), gradcheck of
// the fused cross-entropy / nll kernels, error messages, and the class wrappers.
#include "golden_optim_fixture.h"

#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/nn/loss.h>
#include <myelin/tensor.h>

#include <QtTest>

#include "test_support.h"

#include <memory>
#include <set>

using namespace myelin;
namespace F = myelin::nn::functional;
using nn::Reduction;

namespace {

Tensor run_loss(const golden::Case& c, const std::map<std::string, Tensor>& t) {
    const std::string loss = c.attr("loss");
    const Reduction red = nn::parse_reduction(c.attr("reduction"));
    auto get = [&](const char* n) {
        auto it = t.find(n);
        return it == t.end() ? Tensor() : it->second;
    };
    const Tensor x = get("input"), y = get("target");
    if (loss == "mse_loss") return F::mse_loss(x, y, red);
    if (loss == "l1_loss") return F::l1_loss(x, y, red);
    if (loss == "smooth_l1_loss") return F::smooth_l1_loss(x, y, red, c.num("beta", 1.0));
    if (loss == "huber_loss") return F::huber_loss(x, y, red, c.num("delta", 1.0));
    if (loss == "cross_entropy") {
        F::CrossEntropyOptions o;
        o.weight = get("weight");
        o.ignore_index = static_cast<int64_t>(c.num("ignore_index", -100));
        o.reduction = red;
        o.label_smoothing = c.num("label_smoothing", 0.0);
        return F::cross_entropy(x, y, o);
    }
    if (loss == "nll_loss") {
        F::NllLossOptions o;
        o.weight = get("weight");
        o.ignore_index = static_cast<int64_t>(c.num("ignore_index", -100));
        o.reduction = red;
        return F::nll_loss(x, y, o);
    }
    if (loss == "binary_cross_entropy") return F::binary_cross_entropy(x, y, get("weight"), red);
    if (loss == "binary_cross_entropy_with_logits") {
        F::BCEWithLogitsOptions o;
        o.weight = get("weight");
        o.pos_weight = get("pos_weight");
        o.reduction = red;
        return F::binary_cross_entropy_with_logits(x, y, o);
    }
    if (loss == "kl_div") return F::kl_div(x, y, red, c.num("log_target", 0.0) != 0.0);
    if (loss == "cosine_embedding_loss")
        return F::cosine_embedding_loss(get("x1"), get("x2"), get("target"), c.num("margin", 0.0),
                                        red);
    if (loss == "margin_ranking_loss")
        return F::margin_ranking_loss(get("x1"), get("x2"), get("target"), c.num("margin", 0.0),
                                      red);
    throw std::runtime_error("unknown loss " + loss);
}

} // namespace

class TestLoss : public QObject {
    Q_OBJECT
  private slots:
    void golden_values_and_gradients() {
        const auto cases = golden::load("loss");
        QVERIFY2(cases.size() >= 100, "optim.txt holds too few loss cases");
        std::set<std::string> covered;
        for (const auto& c : cases) {
            std::map<std::string, Tensor> t;
            for (const auto& [name, rec] : c.tensors)
                if (name != "gout") t[name] = rec.make();
            Tensor out;
            try {
                out = run_loss(c, t);
            } catch (const std::exception& e) {
                QFAIL(qPrintable(QString::fromStdString(c.name + ": threw " + e.what())));
            }
            covered.insert(c.attr("loss"));
            QString err = golden::compare(out, c.out, 1e-5, 1e-6, c.name + " value");
            QVERIFY2(err.isEmpty(), qPrintable(err));
            if (c.tensors.count("gout"))
                out.backward(c.tensors.at("gout").make());
            else
                out.backward();
            for (const auto& [name, rec] : c.grads) {
                err = golden::compare(t.at(name).grad().defined() ? t.at(name).grad()
                                                                  : zeros_like(t.at(name)),
                                      rec, 1e-4, 1e-6, c.name + " grad of " + name);
                QVERIFY2(err.isEmpty(), qPrintable(err));
            }
        }
        QCOMPARE(int(covered.size()), 11); // every loss of loss.h
    }

    void fused_cross_entropy_gradcheck() {
        manual_seed(7);
        const Tensor w = rand({5}, DType::Float64) + 0.5;
        for (Reduction red : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
            for (double ls : {0.0, 0.2}) {
                for (bool weighted : {false, true}) {
                    const Tensor x = randn({4, 5, 3}, DType::Float64).requires_grad_();
                    Tensor t = randint(0, 5, {4, 3});
                    F::CrossEntropyOptions o;
                    o.reduction = red;
                    o.label_smoothing = ls;
                    o.ignore_index = 2;
                    if (weighted) o.weight = w;
                    auto r = autograd::gradcheck(
                        [&](const TensorList& in) {
                            Tensor l = F::cross_entropy(in[0], t, o);
                            return TensorList{red == Reduction::None ? (l * l).sum() : l};
                        },
                        {x});
                    QVERIFY2(r.ok, r.message.c_str());
                    F::NllLossOptions n;
                    n.reduction = red;
                    n.ignore_index = 1;
                    if (weighted) n.weight = w;
                    r = autograd::gradcheck(
                        [&](const TensorList& in) {
                            Tensor l = F::nll_loss(in[0], t, n);
                            return TensorList{red == Reduction::None ? (l * l).sum() : l};
                        },
                        {x});
                    QVERIFY2(r.ok, r.message.c_str());
                }
            }
        }
    }

    void composed_losses_gradcheck() {
        manual_seed(11);
        const Tensor x = (rand({3, 4}, DType::Float64) * 0.8 + 0.1).requires_grad_();
        const Tensor y = rand({3, 4}, DType::Float64).requires_grad_();
        auto r = autograd::gradcheck(
            [](const TensorList& in) { return TensorList{F::binary_cross_entropy(in[0], in[1])}; },
            {x, y});
        QVERIFY2(r.ok, r.message.c_str());
        const Tensor z = randn({3, 4}, DType::Float64).requires_grad_();
        F::BCEWithLogitsOptions o;
        o.pos_weight = rand({4}, DType::Float64) + 0.5;
        r = autograd::gradcheck(
            [&](const TensorList& in) {
                return TensorList{F::binary_cross_entropy_with_logits(in[0], in[1], o)};
            },
            {z, y});
        QVERIFY2(r.ok, r.message.c_str());
    }

    void cross_entropy_matches_composition() {
        // The fused kernel equals -log_softmax(x)[target] averaged, on a [128, 10] batch.
        manual_seed(3);
        Tensor x = randn({128, 10}).requires_grad_();
        const Tensor t = randint(0, 10, {128});
        const Tensor fused = F::cross_entropy(x, t);
        const Tensor ref = -gather(log_softmax(x, 1), 1, t.unsqueeze(1)).mean();
        QVERIFY(allclose(fused, ref, 1e-6, 1e-6));
        fused.backward();
        const Tensor g1 = x.grad().clone();
        x.set_grad(Tensor());
        ref.backward();
        QVERIFY(allclose(g1, x.grad(), 1e-5, 1e-7));
        QCOMPARE(QString(fused.grad_fn()->name()), QStringLiteral("CrossEntropyLossBackward0"));
        // float64 and float16 inputs
        QCOMPARE(F::cross_entropy(x.detach().to(DType::Float64), t).dtype(), DType::Float64);
        QCOMPARE(F::cross_entropy(x.detach().to(DType::Float16), t).dtype(), DType::Float16);
        // all targets ignored: 0 / 0 = nan, as PyTorch
        F::CrossEntropyOptions o;
        o.ignore_index = 0;
        QVERIFY(std::isnan(F::cross_entropy(x.detach(), zeros({128}, DType::Int64), o).item()));
    }

    void error_messages() {
        const Tensor x = randn({128, 10});
        QString msg = error_of<DTypeError>([&] { F::cross_entropy(x, zeros({128})); });
        QCOMPARE(msg, QStringLiteral("cross_entropy: expected int64 class indices of shape [N] for "
                                     "input [N, C] = [128, 10], got float32 [128]"));
        msg = error_of<ShapeError>([&] { F::cross_entropy(x, zeros({64}, DType::Int64)); });
        QVERIFY2(msg.contains("expected int64 class indices of shape [N] for input [N, C] = "
                              "[128, 10]") &&
                     msg.contains("got int64 [64]"),
                 qPrintable(msg));
        msg = error_of<ShapeError>([&] { F::cross_entropy(x, zeros({128, 5})); });
        QVERIFY2(msg.contains("float probabilities of shape [128, 10], got float32 [128, 5]"),
                 qPrintable(msg));
        msg = error_of<ShapeError>([&] {
            F::cross_entropy(randn({2, 3, 4, 5}), zeros({2, 4}, DType::Int64));
        });
        QVERIFY2(msg.contains("shape [N, d1, d2] for input [N, C, d1, d2] = [2, 3, 4, 5]"),
                 qPrintable(msg));
        msg = error_of<IndexError>([&] { F::cross_entropy(x, full({128}, 12, DType::Int64)); });
        QVERIFY2(msg.contains("target 12 is out of bounds for 10 classes"), qPrintable(msg));
        F::CrossEntropyOptions o;
        o.weight = ones({9});
        msg = error_of<ShapeError>([&] { F::cross_entropy(x, zeros({128}, DType::Int64), o); });
        QVERIFY2(msg.contains("expected weight of shape [C] = [10], got float32 [9]"),
                 qPrintable(msg));
        msg = error_of<DTypeError>([&] { F::nll_loss(x, zeros({128})); });
        QVERIFY2(msg.startsWith("nll_loss: expected int64 class indices"), qPrintable(msg));
        msg = error_of<DTypeError>([&] {
            F::cross_entropy(zeros({4, 3}, DType::Int64), zeros({4}, DType::Int64));
        });
        QVERIFY2(msg.contains("expected a floating point input, got int64 [4, 3]"),
                 qPrintable(msg));
        msg = error_of<ShapeError>([&] { F::mse_loss(randn({4, 3}), randn({4, 2})); });
        QVERIFY2(msg.contains(
                     "mse_loss: target shape [4, 2] does not broadcast to the input shape [4, 3]"),
                 qPrintable(msg));
        msg = error_of<ShapeError>([&] { F::binary_cross_entropy(rand({4}), rand({4, 1})); });
        QVERIFY2(msg.contains("expected a target of the input's shape [4]"), qPrintable(msg));
        msg = error_of<Error>([&] { F::binary_cross_entropy(full({2}, 1.5), rand({2})); });
        QVERIFY2(msg.contains("between 0 and 1"), qPrintable(msg));
        msg = error_of<Error>([&] { F::mse_loss(randn({2}), randn({2}), Reduction::BatchMean); });
        QVERIFY2(msg.contains("only valid for kl_div"), qPrintable(msg));
        msg = error_of<Error>([] { nn::parse_reduction("average"); });
        QVERIFY2(msg.contains("expected none, mean, sum or batchmean"), qPrintable(msg));
    }

    void classes() {
        manual_seed(5);
        const Tensor x = randn({6, 4});
        const Tensor t = randint(0, 4, {6});
        F::CrossEntropyOptions o;
        o.label_smoothing = 0.1;
        o.reduction = Reduction::Sum;
        std::unique_ptr<nn::Loss> loss = std::make_unique<nn::CrossEntropyLoss>(o);
        QCOMPARE(QString(loss->name()), QStringLiteral("CrossEntropyLoss"));
        QVERIFY(equal((*loss)(x, t), F::cross_entropy(x, t, o)));
        const Tensor y = randn({6, 4});
        QVERIFY(equal(nn::MSELoss()(x, y), F::mse_loss(x, y)));
        QVERIFY(equal(nn::SmoothL1Loss(Reduction::Sum, 0.5)(x, y),
                      F::smooth_l1_loss(x, y, Reduction::Sum, 0.5)));
        QVERIFY(equal(nn::HuberLoss(Reduction::None, 0.5)(x, y),
                      F::huber_loss(x, y, Reduction::None, 0.5)));
        QVERIFY(equal(nn::L1Loss()(x, y), F::l1_loss(x, y)));
        QCOMPARE(QString(nn::reduction_name(Reduction::BatchMean)), QStringLiteral("batchmean"));
    }
};

QTEST_GUILESS_MAIN(TestLoss)
#include "test_loss.moc"
