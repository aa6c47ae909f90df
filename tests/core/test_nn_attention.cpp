// nn/attention.h beyond the golden parity of test_nn_golden: gradcheck in float64 (attention with
// masks through the fused node and through the weights path, the encoder layer, the sequence
// reductions), the fused node against the composed path, masked keys having no influence,
// dropout only in training, PyTorch's deep-copy semantics of TransformerEncoder, hooks inside the
// encoder layer, and the messages for bad input.
#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/nn/attention.h>
#include <myelin/tensor.h>

#include <QtTest>

#include "test_support.h"

#include <cmath>
#include <limits>

using namespace myelin;
namespace nn = myelin::nn;
namespace F = myelin::nn::functional;

namespace {

Tensor rnd(const Dims& shape, uint64_t seed, DType t = DType::Float64, bool grad = true) {
    Generator g(seed);
    Tensor x = randn(shape, TensorOptions(t), &g);
    if (grad) x.requires_grad_();
    return x;
}

// A float64 module whose zero-initialised biases get random values (so their gradients matter).
template <typename M> std::shared_ptr<M> f64(std::shared_ptr<M> m, uint64_t seed) {
    m->to(DType::Float64);
    Generator g(seed);
    autograd::NoGradGuard ng;
    for (auto& [name, p] : m->named_parameters())
        p.add_(randn(p.shape(), TensorOptions(DType::Float64), &g), 0.1);
    return m;
}

Tensor bool_mask(const Dims& shape, const std::vector<int64_t>& ones) {
    std::vector<double> v(static_cast<size_t>(shape.numel()), 0.0);
    for (int64_t i : ones)
        v[static_cast<size_t>(i)] = 1.0;
    return from_vector(v, shape).to(DType::Bool);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
    return amax(abs(a.detach() - b.detach())).item();
}

} // namespace

class TestNnAttention : public QObject {
    Q_OBJECT

  private slots:
    void gradcheckSelfAttentionWithMasks() {
        auto mha = f64(std::make_shared<nn::MultiheadAttention>(
                           6, 2, nn::MultiheadAttentionOptions{.batch_first = true}),
                       1);
        const Tensor x = rnd({2, 4, 6}, 2);
        // key padding: batch 1 ignores its last two keys; a float mask with a causal -inf part.
        const Tensor kpm = bool_mask({2, 4}, {6, 7});
        const Tensor am = F::causal_mask(4, DType::Float64) + rnd({4, 4}, 3, DType::Float64, false);
        auto fn = [&](const TensorList& in) {
            return TensorList{mha->forward(in[0], in[0], in[0], {kpm, am})};
        };
        GRADCHECK(fn, x, mha->in_proj_weight, mha->in_proj_bias, mha->out_proj->weight);
    }

    void gradcheckSeparateQueryKeyValue() {
        auto mha = f64(std::make_shared<nn::MultiheadAttention>(4, 2), 4);
        const Tensor q = rnd({3, 2, 4}, 5), k = rnd({5, 2, 4}, 6), v = rnd({5, 2, 4}, 7);
        const Tensor lengths = from_vector(std::vector<int64_t>{5, 2}, {2});
        auto fn = [&](const TensorList& in) {
            return TensorList{mha->forward(in[0], in[1], in[2], {lengths, {}})};
        };
        GRADCHECK(fn, q, k, v, mha->in_proj_weight);
        // key is value: the packed key/value projection.
        auto kv = [&](const TensorList& in) {
            return TensorList{mha->forward(in[0], in[1], in[1])};
        };
        GRADCHECK(kv, q, k, mha->in_proj_bias);
    }

    void gradcheckWeightsPath() {
        auto mha = f64(std::make_shared<nn::MultiheadAttention>(4, 2), 8);
        const Tensor x = rnd({3, 2, 4}, 9);
        const Tensor kpm = bool_mask({2, 3}, {2});
        for (bool average : {true, false}) {
            auto fn = [&](const TensorList& in) {
                auto r = mha->forward_with_weights(in[0], in[0], in[0], {kpm, {}}, average);
                return TensorList{r.output, r.weights};
            };
            GRADCHECK(fn, x, mha->in_proj_weight);
        }
    }

    // The fused node and the composed weights path compute the same output and gradients; the
    // large shape runs the head split / merge loops on the OpenMP team.
    void fusedMatchesComposed_data() {
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("length");
        QTest::addColumn<int>("embed");
        QTest::newRow("small") << 3 << 5 << 8;
        QTest::newRow("parallel") << 8 << 64 << 64;
    }
    void fusedMatchesComposed() {
        QFETCH(int, batch);
        QFETCH(int, length);
        QFETCH(int, embed);
        const int64_t B = batch, L = length, E = embed;
        auto mha = f64(std::make_shared<nn::MultiheadAttention>(
                           E, 4, nn::MultiheadAttentionOptions{.batch_first = true}),
                       10);
        const Tensor kpm = bool_mask({B, L}, {L - 1, 2 * L - 2, 2 * L - 1});
        const Tensor am = bool_mask({L, L}, {1, 2, 3});
        TensorList grads[2];
        Tensor outs[2];
        for (int path = 0; path < 2; ++path) {
            const Tensor x = rnd({B, L, E}, 11);
            outs[path] = path == 0 ? mha->forward(x, x, x, {kpm, am})
                                   : mha->forward_with_weights(x, x, x, {kpm, am}).output;
            mha->zero_grad();
            outs[path].backward(rnd({B, L, E}, 12, DType::Float64, false));
            grads[path] = {x.grad(), mha->in_proj_weight.grad(), mha->in_proj_bias.grad(),
                           mha->out_proj->weight.grad()};
        }
        QVERIFY(max_abs_diff(outs[0], outs[1]) < 1e-12);
        for (size_t k = 0; k < grads[0].size(); ++k)
            QVERIFY2(max_abs_diff(grads[0][k], grads[1][k]) < 1e-11, std::to_string(k).c_str());
    }

    // Self-attention (one projection GEMM) equals the same values passed as three tensors.
    void selfAttentionEqualsSeparateInputs() {
        auto mha = f64(std::make_shared<nn::MultiheadAttention>(6, 3), 13);
        const Tensor x = rnd({4, 2, 6}, 14, DType::Float64, false);
        const Tensor a = mha->forward(x, x, x);
        const Tensor b = mha->forward(x.clone(), x.clone(), x.clone());
        QVERIFY(max_abs_diff(a, b) < 1e-13);
        QVERIFY(max_abs_diff(a, (*mha)(x)) == 0.0);
    }

    // A 3-D attention mask [B * H, L, S] holding the same 2-D mask per head gives its result.
    void attentionMask3dEquals2d() {
        auto mha = f64(std::make_shared<nn::MultiheadAttention>(4, 2), 26);
        const Tensor x = rnd({3, 2, 4}, 27, DType::Float64, false);
        const Tensor am = F::causal_mask(3, DType::Float64);
        const Tensor am3 = am.unsqueeze(0).expand({4, 3, 3}).contiguous();
        QVERIFY(max_abs_diff(mha->forward(x, x, x, {{}, am}), mha->forward(x, x, x, {{}, am3})) <
                1e-14);
        CHECK_ERROR(ShapeError, mha->forward(x, x, x, {{}, am3.narrow(0, 0, 3)}), "[4, 3, 3]",
                    "[3, 3, 3]");
    }

    // Unbatched [L, E] inputs are one sequence whatever batch_first says (as PyTorch).
    void unbatchedIgnoresBatchFirst() {
        for (bool batch_first : {false, true}) {
            auto mha = f64(std::make_shared<nn::MultiheadAttention>(
                               4, 2, nn::MultiheadAttentionOptions{.batch_first = batch_first}),
                           24);
            const Tensor x = rnd({5, 4}, 25, DType::Float64, false);
            const Tensor batched =
                mha->forward(x.unsqueeze(batch_first ? 0 : 1), x.unsqueeze(batch_first ? 0 : 1),
                             x.unsqueeze(batch_first ? 0 : 1));
            const Tensor one = (*mha)(x);
            QVERIFY(one.shape() == (Dims{5, 4}));
            QVERIFY(max_abs_diff(one, batched.squeeze(batch_first ? 0 : 1)) < 1e-13);
            const auto r = mha->forward_with_weights(x, x, x);
            QVERIFY(r.weights.shape() == (Dims{5, 5}));
            QVERIFY(max_abs_diff(r.output, one) < 1e-13);
        }
    }

    // A padded key changes nothing and gets weight 0; the masked causal part too.
    void maskedKeysHaveNoInfluence() {
        auto mha = f64(std::make_shared<nn::MultiheadAttention>(
                           4, 2, nn::MultiheadAttentionOptions{.batch_first = true}),
                       15);
        Tensor x = rnd({2, 5, 4}, 16, DType::Float64, false);
        const Tensor lengths = from_vector(std::vector<int64_t>{5, 3}, {2});
        // Key/value from x, queries fixed: change only batch 1's padded steps of the keys.
        Tensor kv = x.clone();
        const Tensor before = mha->forward(x, kv, kv, {lengths, {}});
        {
            autograd::NoGradGuard ng;
            kv.select(0, 1).narrow(0, 3, 2).fill_(100.0);
        }
        const Tensor after = mha->forward(x, kv, kv, {lengths, {}});
        QVERIFY(max_abs_diff(before, after) < 1e-12);
        const auto r =
            mha->forward_with_weights(x, x, x, {lengths, F::causal_mask(5, DType::Float64)});
        const Tensor w = r.weights; // [2, 5, 5]
        QCOMPARE(w.select(0, 1).narrow(1, 3, 2).abs().sum().item(), 0.0);
        QCOMPARE(w.select(0, 0).select(0, 1).narrow(0, 2, 3).abs().sum().item(), 0.0);
        QVERIFY(std::abs(w.select(0, 1).select(0, 4).sum().item() - 1.0) < 1e-12);
    }

    void dropoutOnlyInTraining() {
        auto mha = std::make_shared<nn::MultiheadAttention>(
            8, 2, nn::MultiheadAttentionOptions{.dropout = 0.5});
        const Tensor x = rnd({6, 3, 8}, 17, DType::Float32, false);
        mha->eval();
        const Tensor e1 = (*mha)(x), e2 = (*mha)(x);
        QVERIFY(equal(e1, e2));
        mha->train();
        const Tensor t1 = (*mha)(x);
        QVERIFY(max_abs_diff(t1, e1) > 1e-3);
        // Training weights: dropped entries are 0, kept ones scaled by 2.
        const Tensor w = mha->forward_with_weights(x, x, x, {}, false).weights;
        QVERIFY(eq(w, 0.0).sum().item() > 0);
        QVERIFY(amax(w).item() <= 2.0 + 1e-6);
    }

    // Reseeded before every call, training-mode dropout draws the same mask: a fixed function
    // whose gradient (through the kept weights only) gradcheck can verify.
    void gradcheckAttentionDropout() {
        auto mha = f64(std::make_shared<nn::MultiheadAttention>(
                           4, 2, nn::MultiheadAttentionOptions{.dropout = 0.4}),
                       22);
        mha->train();
        const Tensor x = rnd({3, 2, 4}, 23);
        auto fn = [&](const TensorList& in) {
            manual_seed(7);
            return TensorList{mha->forward(in[0], in[0], in[0])};
        };
        GRADCHECK(fn, x, mha->in_proj_weight);
        manual_seed(7);
        const Tensor a = mha->forward(x, x, x);
        manual_seed(8);
        QVERIFY(max_abs_diff(a, mha->forward(x, x, x)) > 1e-6); // another draw, another mask
    }

    void causalAndLengthMasks() {
        const Tensor c = F::causal_mask(3);
        const float inf = std::numeric_limits<float>::infinity();
        QVERIFY(c.to_vector<float>() == (std::vector<float>{0, -inf, -inf, 0, 0, -inf, 0, 0, 0}));
        const Tensor m =
            F::padding_mask_from_lengths(from_vector(std::vector<int64_t>{2, 0, 3}, {3}), 3);
        QVERIFY(m.to_vector<bool>() ==
                (std::vector<bool>{false, false, true, true, true, true, false, false, false}));
        CHECK_ERROR(IndexError,
                    F::padding_mask_from_lengths(from_vector(std::vector<int64_t>{4}, {1}), 3),
                    "lengths[0] = 4", "[0, 3]");
    }

    void gradcheckEncoderLayer() {
        for (bool norm_first : {false, true}) {
            nn::TransformerEncoderLayerOptions o;
            o.dim_feedforward = 6;
            o.dropout = 0.0;
            o.activation = norm_first ? "gelu" : "relu";
            o.batch_first = true;
            o.norm_first = norm_first;
            auto layer = f64(std::make_shared<nn::TransformerEncoderLayer>(4, 2, o), 18);
            const Tensor x = rnd({2, 3, 4}, 19);
            const Tensor kpm = bool_mask({2, 3}, {5});
            auto fn = [&](const TensorList& in) {
                return TensorList{layer->forward(in[0], {kpm, {}})};
            };
            GRADCHECK(fn, x, layer->self_attn->in_proj_weight, layer->linear1->weight,
                      layer->norm1->weight, layer->norm2->bias);
        }
    }

    void gradcheckSequenceReductions() {
        const Tensor x = rnd({3, 4, 2}, 20);
        const Tensor lengths = from_vector(std::vector<int64_t>{4, 1, 2}, {3});
        auto last = [&](const TensorList& in) {
            return TensorList{F::sequence_last(in[0], lengths)};
        };
        auto mean = [&](const TensorList& in) {
            return TensorList{F::sequence_mean_pool(in[0], lengths)};
        };
        GRADCHECK(last, x);
        GRADCHECK(mean, x);
        // Values: batch 1 has one valid step.
        const Tensor l = F::sequence_last(x, lengths), m = F::sequence_mean_pool(x, lengths);
        QVERIFY(max_abs_diff(l.select(0, 1), x.select(0, 1).select(0, 0)) == 0.0);
        QVERIFY(max_abs_diff(m.select(0, 2), x.select(0, 2).narrow(0, 0, 2).mean({0})) < 1e-15);
    }

    // PyTorch deep-copies the layer: every copy starts with the prototype's values.
    void encoderCopiesTheLayer() {
        nn::TransformerEncoderLayer proto(8, 2, {.dim_feedforward = 16});
        nn::TransformerEncoder enc(proto, 3, std::make_shared<nn::LayerNorm>(Dims{8}));
        const auto sd = enc.state_dict();
        QCOMPARE(sd.size(), size_t(3 * 12 + 2));
        QCOMPARE(QString::fromStdString(sd.front().first),
                 QStringLiteral("layers.0.self_attn.in_proj_weight"));
        QCOMPARE(QString::fromStdString(sd.back().first), QStringLiteral("norm.bias"));
        for (int i = 0; i < 3; ++i) {
            auto layer = enc.layers->at<nn::TransformerEncoderLayer>(i);
            QVERIFY(equal(layer->self_attn->in_proj_weight, proto.self_attn->in_proj_weight));
            QVERIFY(!layer->self_attn->in_proj_weight.is_same(proto.self_attn->in_proj_weight));
        }
        // In-projection init: xavier_uniform bound sqrt(6 / (8 + 24)); biases zero.
        QVERIFY(amax(proto.self_attn->in_proj_weight.abs()).item() <= std::sqrt(6.0 / 32.0));
        QCOMPARE(proto.self_attn->in_proj_bias.abs().sum().item(), 0.0);
        QCOMPARE(proto.self_attn->out_proj->bias.abs().sum().item(), 0.0);
    }

    // The encoder layer calls its children through their call operator: their hooks run.
    void hooksInsideTheEncoderLayer() {
        nn::TransformerEncoderLayer layer(4, 2, {.dim_feedforward = 8, .dropout = 0.0});
        int calls = 0;
        Dims seen;
        layer.self_attn->register_forward_hook(
            [&](nn::Module&, const TensorList&, const Tensor& out) {
                ++calls;
                seen = out.shape();
                return Tensor();
            });
        (void)layer(rnd({3, 2, 4}, 21, DType::Float32, false));
        QCOMPARE(calls, 1);
        QVERIFY(seen == (Dims{3, 2, 4}));
    }

    void positionalEncodings() {
        nn::SinusoidalPositionalEncoding pe(4, 0.0, 10);
        QVERIFY(pe.state_dict().empty()); // non-persistent table
        const Tensor x = zeros({1, 3, 4});
        const std::vector<float> y = pe(x).to_vector<float>();
        // pos 1: sin(1), cos(1), sin(1 / 100), cos(1 / 100)
        QVERIFY(std::abs(y[4] - std::sin(1.0)) < 1e-6);
        QVERIFY(std::abs(y[5] - std::cos(1.0)) < 1e-6);
        QVERIFY(std::abs(y[6] - std::sin(0.01)) < 1e-6);
        QVERIFY(std::abs(y[7] - std::cos(0.01)) < 1e-6);
        nn::LearnedPositionalEncoding learned(4, 0.0, 6);
        const auto sd = learned.state_dict();
        QCOMPARE(sd.size(), size_t(1));
        QCOMPARE(QString::fromStdString(sd[0].first), QStringLiteral("pos_embedding.weight"));
        QVERIFY(sd[0].second.shape() == (Dims{6, 4}));
    }

    // Empty batches and sequences give empty outputs (no crash), forward and backward.
    void emptyShapes() {
        nn::MultiheadAttention mha(4, 2);
        for (const Dims& shape : {Dims{0, 2, 4}, Dims{3, 0, 4}}) {
            const Tensor x = zeros(shape).requires_grad_();
            const Tensor y = mha(x);
            QVERIFY(y.shape() == shape);
            y.sum().backward();
            QVERIFY(x.grad().shape() == shape);
            const auto r = mha.forward_with_weights(x, x, x);
            QVERIFY(r.output.shape() == shape);
            (r.output.sum() + r.weights.sum()).backward();
        }
        const Tensor none = mha.forward(zeros({2, 1, 4}), zeros({0, 1, 4}), zeros({0, 1, 4}));
        QVERIFY(none.shape() == (Dims{2, 1, 4}));
    }

    void badInput() {
        CHECK_ERROR(Error, nn::MultiheadAttention(10, 3), "embed_dim 10", "num_heads 3");
        nn::MultiheadAttention mha(4, 2, {.batch_first = true});
        const Tensor x = zeros({2, 3, 4});
        CHECK_ERROR(ShapeError, mha(TensorList{x, zeros({2, 4}).to(DType::Bool)}),
                    "MultiheadAttention(embed_dim=4, num_heads=2, batch_first=True)",
                    "key_padding_mask [2, 3]", "bool [2, 4]");
        CHECK_ERROR(IndexError, mha(TensorList{x, from_vector(std::vector<int64_t>{3, 7}, {2})}),
                    "lengths[1] = 7");
        CHECK_ERROR(ShapeError, mha(TensorList{zeros({2, 3, 5})}), "embed_dim 4", "[2, 3, 5]");
        CHECK_ERROR(ShapeError, mha(TensorList{x, x, x, Tensor(), zeros({3, 2})}),
                    "attn_mask [3, 3]");
        CHECK_ERROR(Error, mha(TensorList{x, x, x, x, x, x}), "expected 1 to 5 inputs");
        nn::SinusoidalPositionalEncoding pe(4, 0.1, 10);
        CHECK_ERROR(ShapeError, pe(zeros({2, 12, 4})), "sequence length 12", "max_len 10");
        nn::LearnedPositionalEncoding learned(4, 0.1, 5);
        CHECK_ERROR(ShapeError, learned(zeros({2, 6, 4})), "sequence length 6", "max_len 5");
        nn::SequenceLast last;
        CHECK_ERROR(
            IndexError,
            last(TensorList{zeros({2, 3, 4}), from_vector(std::vector<int64_t>{0, 2}, {2})}),
            "SequenceLast", "lengths[0] = 0", "[1, 3]");
        nn::SequenceMeanPool pool;
        CHECK_ERROR(
            ShapeError,
            pool(TensorList{zeros({2, 3, 4}), from_vector(std::vector<int64_t>{1, 2, 3}, {3})}),
            "lengths int64 [2]");
        CHECK_ERROR(Error, nn::TransformerEncoderLayer(4, 2, {.activation = "tanh"}),
                    "relu or gelu");
        nn::TransformerEncoderLayer layer(4, 2);
        CHECK_ERROR(ShapeError, layer(zeros({3, 2, 5})), "TransformerEncoderLayer", "[3, 2, 5]");
    }
};

QTEST_APPLESS_MAIN(TestNnAttention)
#include "test_nn_attention.moc"
