// RNN / LSTM / GRU beyond the golden parity of test_nn_golden (recurrent_f32/f64.txt):
// gradcheck in float64 with lengths (every input, state and weight), the padded-step rules,
// dropout between layers by its mask rule (the same generator draws reproduce it), the
// multi-output Module API with hooks, parameters and repr, and the error messages.
#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/nn/functional.h>
#include <myelin/nn/recurrent.h>
#include <myelin/tensor.h>

#include <QtTest>

#include "test_support.h"

#include <cmath>
#include <memory>
#include <vector>

using namespace myelin;
namespace nn = myelin::nn;
namespace F = myelin::nn::functional;

namespace {

Tensor rnd(const Dims& shape, uint64_t seed, DType t = DType::Float64, bool grad = true) {
    Generator g(seed);
    Tensor x = randn(shape, TensorOptions(t), &g) * 0.7;
    x = x.detach();
    if (grad) x.requires_grad_();
    return x;
}

// Layer weights in _flat_weights order for `cfg`, float64 leaves requiring grad.
TensorList makeWeights(const F::RecurrentConfig& cfg, int64_t input, uint64_t seed) {
    TensorList w;
    const int D = cfg.bidirectional ? 2 : 1;
    const int64_t G = nn::recurrent_gate_count(cfg.mode) * cfg.hidden_size;
    for (int64_t l = 0; l < cfg.num_layers; ++l)
        for (int d = 0; d < D; ++d) {
            const int64_t in = l == 0 ? input : D * cfg.hidden_size;
            w.push_back(rnd({G, in}, seed++));
            w.push_back(rnd({G, cfg.hidden_size}, seed++));
            if (cfg.bias) {
                w.push_back(rnd({G}, seed++));
                w.push_back(rnd({G}, seed++));
            }
        }
    return w;
}

TensorList asList(const F::RecurrentResult& r) {
    return r.c_n.defined() ? TensorList{r.output, r.h_n, r.c_n} : TensorList{r.output, r.h_n};
}

double maxAbs(const Tensor& t) {
    return t.numel() == 0 ? 0.0 : max(abs(t.detach())).item<double>();
}

} // namespace

class TestNnRecurrent : public QObject {
    Q_OBJECT

  private slots:
    void gradcheckWithLengths_data() {
        QTest::addColumn<int>("mode");
        QTest::addColumn<bool>("bidirectional");
        QTest::addColumn<bool>("batchFirst");
        QTest::addColumn<int>("layers");
        QTest::newRow("rnn_tanh") << int(nn::RecurrentMode::RnnTanh) << true << false << 2;
        QTest::newRow("rnn_relu") << int(nn::RecurrentMode::RnnRelu) << false << true << 1;
        QTest::newRow("lstm") << int(nn::RecurrentMode::Lstm) << true << true << 2;
        QTest::newRow("gru") << int(nn::RecurrentMode::Gru) << true << false << 2;
    }

    // Every input: x, h0, c0 and each weight, through lengths with padded steps.
    void gradcheckWithLengths() {
        QFETCH(int, mode);
        QFETCH(bool, bidirectional);
        QFETCH(bool, batchFirst);
        QFETCH(int, layers);
        F::RecurrentConfig cfg;
        cfg.mode = static_cast<nn::RecurrentMode>(mode);
        cfg.hidden_size = 2;
        cfg.num_layers = layers;
        cfg.bidirectional = bidirectional;
        cfg.batch_first = batchFirst;
        const int64_t T = 4, B = 3, I = 2, D = bidirectional ? 2 : 1;
        const bool lstm = cfg.mode == nn::RecurrentMode::Lstm;
        TensorList inputs{rnd(batchFirst ? Dims{B, T, I} : Dims{T, B, I}, 1),
                          rnd({layers * D, B, 2}, 2)};
        if (lstm) inputs.push_back(rnd({layers * D, B, 2}, 3));
        const size_t firstWeight = inputs.size();
        for (const Tensor& w : makeWeights(cfg, I, 10))
            inputs.push_back(w);
        const Tensor lengths = from_vector(std::vector<int64_t>{2, 4, 1}, {B});
        auto fn = [&](const TensorList& in) {
            const TensorList w(in.begin() + static_cast<std::ptrdiff_t>(firstWeight), in.end());
            return asList(F::recurrent(in[0], in[1], lstm ? in[2] : Tensor(), lengths, w, cfg));
        };
        const auto r = autograd::gradcheck(fn, inputs);
        QVERIFY2(r.ok, r.message.c_str());
    }

    // Padded positions are zero and pass no gradient; h_n is the state at each sequence's last
    // valid step (forward) and at step 0 (reverse, which starts at the last valid step).
    void paddedSteps() {
        nn::GRU gru(3, 4, {.bidirectional = true});
        gru.to(DType::Float64);
        const int64_t T = 5, B = 3, H = 4;
        const std::vector<int64_t> lens{3, 5, 1};
        Tensor x = rnd({T, B, 3}, 4);
        const TensorList outs = gru.outputs({x, from_vector(std::vector<int64_t>(lens), {B})});
        const Tensor out = outs[0], hn = outs[1];
        (out * full(out.shape(), 1.5, TensorOptions(DType::Float64))).sum().backward();
        for (int64_t b = 0; b < B; ++b) {
            const int64_t n = lens[static_cast<size_t>(b)];
            for (int64_t t = n; t < T; ++t) {
                QCOMPARE(maxAbs(out.select(0, t).select(0, b)), 0.0);
                QCOMPARE(maxAbs(x.grad().select(0, t).select(0, b)), 0.0);
            }
            QVERIFY(maxAbs(x.grad().select(0, n - 1).select(0, b)) > 0.0);
            const Tensor last = out.select(0, n - 1).select(0, b).narrow(0, 0, H);
            QCOMPARE(maxAbs(hn.select(0, 0).select(0, b) - last), 0.0);
            const Tensor first = out.select(0, 0).select(0, b).narrow(0, H, H);
            QCOMPARE(maxAbs(hn.select(0, 1).select(0, b) - first), 0.0);
        }
        // Every sequence at full length equals no lengths at all.
        const Tensor full_lengths = from_vector(std::vector<int64_t>{T, T, T}, {B});
        const Tensor a = gru.outputs({x, full_lengths})[0];
        const Tensor c = gru(x);
        QCOMPARE(maxAbs(a - c), 0.0);
    }

    // Dropout between layers in training mode: the same draws from a generator seeded alike,
    // applied by hand between two one-layer LSTMs with the same weights, give the same numbers;
    // the last layer's output gets none. Eval mode applies none.
    void dropoutBetweenLayers() {
        nn::LSTM two(3, 4, {.num_layers = 2, .dropout = 0.5});
        nn::LSTM first(3, 4), second(4, 4);
        {
            autograd::NoGradGuard no_grad;
            for (size_t k = 0; k < 4; ++k) {
                Tensor a = first.flat_weights()[k], b = second.flat_weights()[k];
                a.copy_(two.flat_weights()[k]);
                b.copy_(two.flat_weights()[4 + k]);
            }
        }
        const Tensor x = rnd({6, 5, 3}, 5, DType::Float32, false);
        Generator g1(42), g2(42);
        two.generator = &g1;
        two.train();
        const TensorList got = two.outputs({x});
        const TensorList y0 = first.outputs({x});
        const Tensor dropped = F::dropout(y0[0], 0.5, true, &g2);
        const TensorList y1 = second.outputs({dropped});
        QVERIFY(maxAbs(dropped - y0[0]) > 0.0); // the mask did something
        QVERIFY(allclose(got[0], y1[0], 1e-6, 1e-6));
        QVERIFY(allclose(got[1], cat({y0[1], y1[1]}, 0), 1e-6, 1e-6));
        QVERIFY(allclose(got[2], cat({y0[2], y1[2]}, 0), 1e-6, 1e-6));
        // A second training forward draws new masks.
        QVERIFY(maxAbs(two.outputs({x})[0] - got[0]) > 0.0);
        // Half the units dropped on average: the second layer's input had about half its
        // elements zeroed (the mask is Bernoulli(0.5) over 6 * 5 * 4 = 120 elements).
        const double zeros = eq(dropped, 0.0).to(DType::Float64).sum().item<double>();
        QVERIFY2(zeros > 30 && zeros < 90, qPrintable(QString::number(zeros)));

        two.eval();
        const TensorList e = two.outputs({x});
        const TensorList e1 = second.outputs({first.outputs({x})[0]});
        QVERIFY(allclose(e[0], e1[0], 1e-6, 1e-6));
    }

    // The multi-output Module API: forward() is output 0; outputs() runs the hooks; a backward
    // hook gets one grad_output per output (undefined for an output the loss does not use).
    void outputsAndHooks() {
        nn::LSTM lstm(3, 4, {.batch_first = true});
        QCOMPARE(lstm.num_outputs(), 3);
        QCOMPARE(nn::GRU(3, 4).num_outputs(), 2);
        const Tensor x = rnd({2, 5, 3}, 6, DType::Float32, true);
        QCOMPARE(lstm(x).shape(), (Dims{2, 5, 4}));

        int forwardCalls = 0, backwardCalls = 0;
        TensorList gradOut, gradIn;
        auto h1 =
            lstm.register_forward_hook([&](nn::Module&, const TensorList&, const Tensor& out) {
                ++forwardCalls;
                return out * 2.0; // replaces output 0 only
            });
        auto h2 = lstm.register_full_backward_hook(
            [&](nn::Module&, const TensorList& gi, const TensorList& go) {
                ++backwardCalls;
                gradIn = gi;
                gradOut = go;
            });
        const TensorList outs = lstm.outputs({x});
        QCOMPARE(outs.size(), size_t(3));
        QCOMPARE(forwardCalls, 1);
        (outs[0].sum() + outs[1].sum()).backward();
        QCOMPARE(backwardCalls, 1);
        QCOMPARE(gradOut.size(), size_t(3));
        QVERIFY(gradOut[0].defined() && gradOut[1].defined());
        QVERIFY(!gradOut[2].defined());
        QCOMPARE(gradOut[1].shape(), (Dims{1, 2, 4}));
        QCOMPARE(gradIn.size(), size_t(1));
        QVERIFY(gradIn[0].defined());
        QCOMPARE(gradIn[0].shape(), x.shape());
        h1.remove();
        h2.remove();
        QVERIFY(allclose(lstm(x) * 2.0, outs[0], 1e-6, 1e-6));
    }

    void parametersAndRepr() {
        nn::GRU gru(5, 8, {.num_layers = 2, .batch_first = true, .bidirectional = true});
        QCOMPARE(gru.str(),
                 std::string("GRU(5, 8, num_layers=2, batch_first=True, bidirectional=True)"));
        QCOMPARE(nn::RNN(2, 3, {.bias = false, .dropout = 0.25}, "relu").str(),
                 std::string("RNN(2, 3, bias=False, dropout=0.25)"));
        const auto params = gru.named_parameters();
        QCOMPARE(params.size(), size_t(16));
        QCOMPARE(params[0].first, std::string("weight_ih_l0"));
        QCOMPARE(params[4].first, std::string("weight_ih_l0_reverse"));
        QCOMPARE(params[8].second.shape(), (Dims{24, 16}));
        const double bound = 1.0 / std::sqrt(8.0);
        for (const auto& [name, p] : params) {
            QVERIFY2(maxAbs(p) <= bound, name.c_str());
            QVERIFY2(maxAbs(p) > bound * 0.5, name.c_str()); // drawn, not constant
        }
        QCOMPARE(gru.num_parameters(),
                 int64_t(2 * (24 * 5 + 24 * 8 + 48) + 2 * (24 * 16 + 24 * 8 + 48)));
    }

    // Under no-grad the same numbers come out, with no graph.
    void noGrad() {
        nn::RNN rnn(3, 4, {.num_layers = 2});
        const Tensor x = rnd({4, 2, 3}, 7, DType::Float32, false);
        const Tensor a = rnn(x);
        QVERIFY(a.requires_grad());
        autograd::NoGradGuard no_grad;
        const Tensor b = rnn(x);
        QVERIFY(!b.requires_grad());
        QCOMPARE(maxAbs(a - b), 0.0);
    }

    void errors() {
        nn::LSTM lstm(3, 4, {.num_layers = 2});
        const Tensor x = rnd({5, 2, 3}, 8, DType::Float32, false);
        CHECK_ERROR(ShapeError, lstm(rnd({5, 2, 4}, 9, DType::Float32, false)),
                    "LSTM: expected weight_ih_l0 of shape [16, 4], got [16, 3]", "input_size 4");
        CHECK_ERROR(ShapeError,
                    lstm(rnd({5, 3}, 9, DType::Float32, false).unsqueeze(0).unsqueeze(0)),
                    "expected input [seq, batch, input_size]", "[1, 1, 5, 3]");
        const Tensor h0 = zeros({2, 2, 4});
        CHECK_ERROR(Error, lstm.outputs({x, h0}), "expected both h0 and c0");
        CHECK_ERROR(ShapeError, lstm.outputs({x, zeros({1, 2, 4}), zeros({1, 2, 4})}),
                    "expected h0 of shape [2, 2, 4]", "got [1, 2, 4]");
        CHECK_ERROR(Error, lstm.outputs({x, from_vector(std::vector<int64_t>{0, 5}, {2})}),
                    "lengths[0] is 0, expected 1 to the sequence length 5");
        CHECK_ERROR(Error, lstm.outputs({x, from_vector(std::vector<int64_t>{2, 6}, {2})}),
                    "lengths[1] is 6");
        CHECK_ERROR(ShapeError, lstm.outputs({x, from_vector(std::vector<int64_t>{2, 3, 4}, {3})}),
                    "expected lengths of shape [2]", "got [3]");
        CHECK_ERROR(Error, lstm.outputs({x, h0, h0, h0, h0}), "expected at most 4 inputs");
        CHECK_ERROR(DTypeError, lstm(x.to(DType::Int64)), "expected input of dtype float32");
        CHECK_ERROR(DTypeError, lstm(x.to(DType::Float64)), "weight_ih_l0", "float64");
        CHECK_ERROR(ShapeError, lstm(zeros({0, 2, 3})), "non-empty input");
        CHECK_ERROR(Error, nn::GRU(3, 4).outputs({x, zeros({1, 2, 4}), zeros({1, 2, 4})}),
                    "expected inputs (input, h0, lengths)");
        CHECK_ERROR(Error, nn::RNN(3, 4, {}, "sigmoid"), "unknown nonlinearity 'sigmoid'");
        CHECK_ERROR(Error, nn::GRU(3, 4, {.dropout = 1.5}), "dropout should be a number in range");
        CHECK_ERROR(Error, nn::GRU(3, 0), "hidden_size");
        // A failed call changes nothing: the layer still works.
        QCOMPARE(lstm(x).shape(), (Dims{5, 2, 4}));
    }
};

QTEST_APPLESS_MAIN(TestNnRecurrent)
#include "test_nn_recurrent.moc"
