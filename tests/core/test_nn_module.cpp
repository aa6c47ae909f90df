// nn::Module and the layers: state_dict keys and shapes against PyTorch, strict/non-strict
// loading, round trips, train/eval, dtype conversion that keeps handles, freezing, forward and
// backward hooks (checked against an independent pass), default init statistics, reprs and the
// messages for wrongly shaped input.
#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/nn/functional.h>
#include <myelin/nn/init.h>
#include <myelin/nn/layers.h>
#include <myelin/nn/module.h>
#include <myelin/tensor.h>

#include <QtTest>

#include "test_support.h"

#include <cmath>
#include <map>

using namespace myelin;
using std::make_shared;
namespace F = myelin::nn::functional;

namespace {

using KeyShapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

KeyShapes key_shapes(const nn::StateDict& sd) {
    KeyShapes out;
    for (const auto& [k, v] : sd)
        out.emplace_back(k, v.shape().vec());
    return out;
}

QStringList keys_of(const std::vector<std::pair<std::string, Tensor>>& named) {
    QStringList out;
    for (const auto& [k, v] : named)
        out << QString::fromStdString(k);
    return out;
}

QString repr(const nn::Module& m) {
    return QString::fromStdString(m.str());
}

std::shared_ptr<nn::Sequential> make_mlp() {
    return make_shared<nn::Sequential>(make_shared<nn::Linear>(784, 256), make_shared<nn::ReLU>(),
                                       make_shared<nn::Dropout>(0.2),
                                       make_shared<nn::Linear>(256, 128), make_shared<nn::ReLU>(),
                                       make_shared<nn::Linear>(128, 10));
}

std::shared_ptr<nn::Sequential> make_cnn() {
    return make_shared<nn::Sequential>(
        make_shared<nn::Conv2d>(1, 16, 3, nn::Conv2dOptions{.padding = 1}),
        make_shared<nn::BatchNorm2d>(16), make_shared<nn::ReLU>(), make_shared<nn::MaxPool2d>(2),
        make_shared<nn::Conv2d>(16, 32, 3, nn::Conv2dOptions{.padding = 1}),
        make_shared<nn::BatchNorm2d>(32), make_shared<nn::ReLU>(),
        make_shared<nn::AdaptiveAvgPool2d>(1), make_shared<nn::Flatten>(),
        make_shared<nn::Linear>(32, 10));
}

// A ResNet basic block, registered in the same order as the PyTorch reference.
struct Block : nn::Module {
    std::shared_ptr<nn::Conv2d> conv1, conv2;
    std::shared_ptr<nn::BatchNorm2d> bn1, bn2;
    std::shared_ptr<nn::Sequential> shortcut;
    Block(int64_t cin, int64_t cout, int64_t stride) : Module("Block") {
        conv1 = register_module(
            "conv1",
            make_shared<nn::Conv2d>(
                cin, cout, 3, nn::Conv2dOptions{.stride = stride, .padding = 1, .bias = false}));
        bn1 = register_module("bn1", make_shared<nn::BatchNorm2d>(cout));
        conv2 = register_module(
            "conv2",
            make_shared<nn::Conv2d>(cout, cout, 3, nn::Conv2dOptions{.padding = 1, .bias = false}));
        bn2 = register_module("bn2", make_shared<nn::BatchNorm2d>(cout));
        shortcut = register_module(
            "shortcut", make_shared<nn::Sequential>(
                            make_shared<nn::Conv2d>(
                                cin, cout, 1, nn::Conv2dOptions{.stride = stride, .bias = false}),
                            make_shared<nn::BatchNorm2d>(cout)));
    }
    Tensor forward(const TensorList& in) override {
        Tensor h = relu((*bn1)((*conv1)(in[0])));
        h = (*bn2)((*conv2)(h));
        return relu(h + (*shortcut)(in[0]));
    }
};

// Own parameter and buffers registered after the children: state_dict still lists them first.
struct Net : nn::Module {
    std::shared_ptr<nn::Conv2d> stem;
    std::shared_ptr<Block> block;
    std::shared_ptr<nn::Linear> head;
    Tensor alpha;
    Net() : Module("Net") {
        stem = register_module("stem",
                               make_shared<nn::Conv2d>(3, 8, 3, nn::Conv2dOptions{.padding = 1}));
        block = register_module("block", make_shared<Block>(8, 16, 2));
        head = register_module("head", make_shared<nn::Linear>(16, 10));
        alpha = register_parameter("alpha", ones({1}));
        register_buffer("steps", zeros({2}));
        register_buffer("scratch", zeros({3}), /*persistent=*/false);
    }
    Tensor forward(const TensorList& in) override {
        Tensor h = (*block)((*stem)(in[0]));
        h = F::adaptive_avg_pool2d(h, {1, 1}).flatten(1);
        return (*head)(h)*alpha;
    }
};

// Sample statistics of a tensor's values (float64 on the host).
struct Stats {
    double mean = 0, std = 0, min = 0, max = 0;
};
Stats stats(const Tensor& t) {
    const auto v = t.to(DType::Float64).contiguous().to_vector<double>();
    Stats s{0, 0, v[0], v[0]};
    for (double x : v) {
        s.mean += x;
        s.min = std::min(s.min, x);
        s.max = std::max(s.max, x);
    }
    s.mean /= static_cast<double>(v.size());
    for (double x : v)
        s.std += (x - s.mean) * (x - s.mean);
    s.std = std::sqrt(s.std / static_cast<double>(v.size() - 1));
    return s;
}

bool close(double a, double b, double rel) {
    return std::abs(a - b) <= rel * std::abs(b);
}

} // namespace

class TestNnModule : public QObject {
    Q_OBJECT
  private slots:
    void init() { manual_seed(0); }

    // Expected lists printed by torch 1.13 (tests' reference script: for k, v in
    // model.state_dict().items(): print(k, tuple(v.shape))) for the same three models.
    void state_dict_keys_match_pytorch() {
        const KeyShapes mlp = {{"0.weight", {256, 784}}, {"0.bias", {256}},
                               {"3.weight", {128, 256}}, {"3.bias", {128}},
                               {"5.weight", {10, 128}},  {"5.bias", {10}}};
        QVERIFY(key_shapes(make_mlp()->state_dict()) == mlp);

        const KeyShapes cnn = {{"0.weight", {16, 1, 3, 3}},
                               {"0.bias", {16}},
                               {"1.weight", {16}},
                               {"1.bias", {16}},
                               {"1.running_mean", {16}},
                               {"1.running_var", {16}},
                               {"1.num_batches_tracked", {}},
                               {"4.weight", {32, 16, 3, 3}},
                               {"4.bias", {32}},
                               {"5.weight", {32}},
                               {"5.bias", {32}},
                               {"5.running_mean", {32}},
                               {"5.running_var", {32}},
                               {"5.num_batches_tracked", {}},
                               {"9.weight", {10, 32}},
                               {"9.bias", {10}}};
        QVERIFY(key_shapes(make_cnn()->state_dict()) == cnn);

        const KeyShapes resnet = {{"alpha", {1}},
                                  {"steps", {2}},
                                  {"stem.weight", {8, 3, 3, 3}},
                                  {"stem.bias", {8}},
                                  {"block.conv1.weight", {16, 8, 3, 3}},
                                  {"block.bn1.weight", {16}},
                                  {"block.bn1.bias", {16}},
                                  {"block.bn1.running_mean", {16}},
                                  {"block.bn1.running_var", {16}},
                                  {"block.bn1.num_batches_tracked", {}},
                                  {"block.conv2.weight", {16, 16, 3, 3}},
                                  {"block.bn2.weight", {16}},
                                  {"block.bn2.bias", {16}},
                                  {"block.bn2.running_mean", {16}},
                                  {"block.bn2.running_var", {16}},
                                  {"block.bn2.num_batches_tracked", {}},
                                  {"block.shortcut.0.weight", {16, 8, 1, 1}},
                                  {"block.shortcut.1.weight", {16}},
                                  {"block.shortcut.1.bias", {16}},
                                  {"block.shortcut.1.running_mean", {16}},
                                  {"block.shortcut.1.running_var", {16}},
                                  {"block.shortcut.1.num_batches_tracked", {}},
                                  {"head.weight", {10, 16}},
                                  {"head.bias", {10}}};
        auto net = make_shared<Net>();
        QVERIFY(key_shapes(net->state_dict()) == resnet);
        QCOMPARE(net->state_dict()[9].second.dtype(), DType::Int64);
    }

    void traversal() {
        auto net = make_shared<Net>();
        QCOMPARE(keys_of(net->named_parameters()).mid(0, 4),
                 QStringList({"alpha", "stem.weight", "stem.bias", "block.conv1.weight"}));
        QCOMPARE(keys_of(net->named_parameters(false)), QStringList({"alpha"}));
        // named_buffers includes the non-persistent buffer; state_dict does not
        QCOMPARE(keys_of(net->named_buffers(false)), QStringList({"steps", "scratch"}));
        QCOMPARE(int(net->buffers().size()), 2 + 3 * 3);
        QStringList mods;
        for (const auto& [name, m] : net->named_modules())
            mods << QString::fromStdString(name);
        QCOMPARE(mods, QStringList({"", "stem", "block", "block.conv1", "block.bn1", "block.conv2",
                                    "block.bn2", "block.shortcut", "block.shortcut.0",
                                    "block.shortcut.1", "head"}));
        QCOMPARE(int(net->children().size()), 3);
        QVERIFY(net->child("head") == net->head);
        QVERIFY(net->param("alpha").is_same(net->alpha));
        QCOMPARE(net->buffer("steps").numel(), int64_t(2));
        // PyTorch: 8*3*9+8 + 16*8*9 + 2*16 + 16*16*9 + 2*16 + 16*8 + 2*16 + 16*10+10 + 1
        QCOMPARE(net->num_parameters(), int64_t(224 + 1152 + 32 + 2304 + 32 + 128 + 32 + 170 + 1));
        // tied weights are listed once by named_parameters but under both keys by state_dict
        auto a = make_shared<nn::Linear>(4, 4);
        auto seq = make_shared<nn::Sequential>(a, a);
        QCOMPARE(keys_of(seq->named_parameters()), QStringList({"0.weight", "0.bias"}));
        QCOMPARE(int(seq->state_dict().size()), 4);
        QCOMPARE(int(seq->named_modules().size()), 2);
        // apply: children first, then self
        QStringList order;
        net->block->apply([&](nn::Module& m) { order << QString::fromStdString(m.type_name()); });
        QCOMPARE(order.last(), QStringLiteral("Block"));
        QCOMPARE(order.first(), QStringLiteral("Conv2d"));
    }

    void registration_errors() {
        nn::Sequential s;
        s.push_back(make_shared<nn::ReLU>());
        QVERIFY(
            error_of<Error>([&] { s.register_buffer("0", zeros({1})); }).contains("already taken"));
        QVERIFY(error_of<Error>([&] { s.register_parameter("a.b", zeros({1})); }).contains("'.'"));
        QVERIFY(error_of<Error>([&] {
                    nn::Upsample(2, "nearest", true);
                }).contains("align_corners can only be set with mode 'bilinear'"));
        QVERIFY(error_of<Error>([&] { nn::Upsample(2, "bicubic"); }).contains("'bicubic'"));
        QVERIFY(error_of<Error>([&] {
                    nn::Conv2d(1, 1, 3, nn::Conv2dOptions{.padding_mode = "mirror"});
                }).contains("padding_mode must be 'zeros', 'reflect', 'replicate' or 'circular'"));
        QVERIFY(error_of<ShapeError>([&] {
                    nn::Conv2d c(1, 1, 3,
                                 nn::Conv2dOptions{.padding = 3, .padding_mode = "circular"});
                    c(zeros({1, 1, 2, 2}));
                }).contains("circular padding of 3"));
        QVERIFY(error_of<Error>([&] {
                    s.param("nope");
                }).contains("Sequential has no parameter 'nope'"));
        QVERIFY(error_of<Error>([&] { s.child("x"); }).contains("no submodule 'x'"));
    }

    void strict_load_lists_every_problem() {
        auto net = make_shared<Net>();
        nn::StateDict sd = make_shared<Net>()->state_dict();
        std::erase_if(sd, [](const auto& e) {
            return e.first == "alpha" || e.first == "block.bn1.running_var";
        });
        for (auto& [k, v] : sd)
            if (k == "head.weight") v = zeros({16, 10});
        sd.emplace_back("bogus", zeros({1}));
        sd.emplace_back("block.extra", zeros({2}));
        const Tensor before = net->stem->weight.clone();
        const QString msg = error_of<Error>([&] { net->load_state_dict(sd); });
        for (const char* s :
             {"Error(s) in loading state_dict for Net", "Missing key(s)", "\"alpha\"",
              "\"block.bn1.running_var\"", "Unexpected key(s)", "\"bogus\"", "\"block.extra\"",
              "size mismatch for head.weight: expected [10, 16], got [16, 10]"})
            QVERIFY2(msg.contains(s), qPrintable(msg + " lacks " + s));
        QVERIFY(equal(net->stem->weight, before)); // a failed strict load changes nothing

        const auto res = net->load_state_dict(sd, /*strict=*/false);
        QVERIFY(!res.ok());
        QCOMPARE(res.missing_keys, std::vector<std::string>({"alpha", "block.bn1.running_var"}));
        QCOMPARE(res.unexpected_keys, std::vector<std::string>({"bogus", "block.extra"}));
        QCOMPARE(int(res.shape_mismatches.size()), 1);
        QVERIFY(!equal(net->stem->weight, before)); // the matching entries were copied
    }

    void round_trip_gives_equal_outputs() {
        auto a = make_cnn();
        Tensor x = randn({4, 1, 12, 12});
        (*a)(x); // training step: running stats and num_batches_tracked change
        a->eval();
        const Tensor ya = (*a)(x);
        manual_seed(123);
        auto b = make_cnn();
        b->eval();
        QVERIFY(!allclose((*b)(x), ya));
        // a float64 copy of the state converts back on load
        nn::StateDict sd = a->state_dict();
        for (auto& [k, v] : sd)
            if (v.is_floating_point()) v = v.to(DType::Float64);
        QVERIFY(b->load_state_dict(sd).ok());
        QVERIFY(equal((*b)(x), ya));
        QCOMPARE(b->state_dict()[6].second.item<int64_t>(), int64_t(1));
        QCOMPARE(b->state_dict()[0].second.dtype(), DType::Float32);
        // loading copies into the existing tensors
        const Tensor w = std::static_pointer_cast<nn::Conv2d>((*b)[0])->weight;
        QVERIFY(w.is_same(b->parameters()[0]));
    }

    void train_eval_propagate() {
        auto net = make_shared<Net>();
        QVERIFY(net->is_training() && net->block->bn1->is_training());
        net->eval();
        for (const auto& [name, m] : net->named_modules())
            QVERIFY2(!m->is_training(), name.c_str());
        net->train();
        for (const auto& [name, m] : net->named_modules())
            QVERIFY(m->is_training());
        auto drop = make_shared<nn::Dropout>(0.5);
        Tensor x = ones({1000});
        QVERIFY(!equal((*drop)(x), x));
        drop->eval();
        QVERIFY(equal((*drop)(x), x));
    }

    void batch_norm_running_stats() {
        auto bn = make_shared<nn::BatchNorm1d>(3);
        Tensor x1 = randn({8, 3}), x2 = randn({8, 3}) + 2.0;
        (*bn)(x1);
        (*bn)(x2);
        QCOMPARE(bn->num_batches_tracked.item<int64_t>(), int64_t(2));
        Tensor expected = (x1.mean({0}) * 0.1) * 0.9 + x2.mean({0}) * 0.1;
        QVERIFY(allclose(bn->running_mean, expected, 1e-5, 1e-6));
        bn->eval();
        (*bn)(x1);
        QCOMPARE(bn->num_batches_tracked.item<int64_t>(), int64_t(2));
        Tensor y = (*bn)(x1);
        Tensor ref = (x1 - bn->running_mean) / sqrt(bn->running_var + 1e-5);
        QVERIFY(allclose(y, ref, 1e-5, 1e-5));
        // momentum = None: cumulative average of the batch statistics
        auto cum = make_shared<nn::BatchNorm1d>(3, 1e-5, std::nullopt);
        (*cum)(x1);
        (*cum)(x2);
        QVERIFY(allclose(cum->running_mean, (x1.mean({0}) + x2.mean({0})) * 0.5, 1e-5, 1e-6));
        QVERIFY(allclose(cum->running_var, (var(x1, {0}) + var(x2, {0})) * 0.5, 1e-5, 1e-6));
        // without running stats: no buffers, batch statistics in eval too
        auto plain = make_shared<nn::BatchNorm2d>(2, 1e-5, 0.1, false, false);
        QVERIFY(plain->state_dict().empty());
        plain->eval();
        Tensor z = (*plain)(randn({4, 2, 3, 3}));
        QVERIFY(allclose(z.mean({0, 2, 3}), zeros({2}), 1e-5, 1e-5));
    }

    void to_float64_keeps_handles() {
        auto net = make_cnn();
        Tensor x = randn({2, 1, 8, 8});
        (*net)(x).sum().backward();
        const std::vector<Tensor> params = net->parameters();
        const Tensor first = params[0];
        const Tensor before = first.clone();
        net->to(DType::Float64);
        for (const Tensor& p : params) {
            QCOMPARE(p.dtype(), DType::Float64);
            QVERIFY(p.requires_grad() && p.is_leaf());
            QCOMPARE(p.grad().dtype(), DType::Float64);
        }
        QVERIFY(first.is_same(net->parameters()[0]));
        QVERIFY(allclose(first.to(DType::Float32), before));
        QCOMPARE(net->state_dict()[6].second.dtype(), DType::Int64); // num_batches_tracked stays
        QCOMPARE(net->state_dict()[4].second.dtype(), DType::Float64);
        net->zero_grad();
        Tensor y = (*net)(x.to(DType::Float64));
        QCOMPARE(y.dtype(), DType::Float64);
        y.sum().backward();
        QCOMPARE(first.grad().dtype(), DType::Float64); // gradients reach the same handles
        QVERIFY(error_of<DTypeError>([&] { net->to(DType::Int64); }).contains("floating point"));
        net->to(kCPU);
        QVERIFY(first.is_same(net->parameters()[0]));
    }

    void zero_grad_and_freezing() {
        auto net = make_mlp();
        Tensor x = randn({3, 784});
        (*net)(x).sum().backward();
        for (const Tensor& p : net->parameters())
            QVERIFY(p.grad().defined());
        net->zero_grad();
        for (const Tensor& p : net->parameters())
            QVERIFY(!p.grad().defined());
        const int64_t total = 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10;
        QCOMPARE(net->num_parameters(), total);
        (*net)[0]->requires_grad_(false);
        QCOMPARE(net->num_parameters(true), total - (784 * 256 + 256));
        QCOMPARE(net->num_parameters(), total);
        (*net)(x).sum().backward();
        QVERIFY(!net->at<nn::Linear>(0)->weight.grad().defined());
        QVERIFY(net->at<nn::Linear>(3)->weight.grad().defined());
        net->requires_grad_();
        QCOMPARE(net->num_parameters(true), total);
    }

    // Forward and backward hooks on every module of a CNN see exactly what an independent pass
    // (the same ops called directly, intermediate gradients via retain_grad) computes.
    void hooks_see_exact_activations_and_gradients() {
        auto conv = make_shared<nn::Conv2d>(2, 4, 3, nn::Conv2dOptions{.padding = 1});
        auto relu_m = make_shared<nn::ReLU>();
        auto pool = make_shared<nn::MaxPool2d>(2);
        auto flat = make_shared<nn::Flatten>();
        auto fc = make_shared<nn::Linear>(4 * 4 * 4, 3);
        auto net = make_shared<nn::Sequential>(conv, relu_m, pool, flat, fc);
        std::map<std::string, Tensor> in, out, gin, gout;
        std::map<std::string, int> calls;
        std::vector<HookHandle> handles;
        for (const auto& [name, m] : net->named_modules()) {
            const std::string n = name.empty() ? "net" : name;
            handles.push_back(m->register_forward_hook(
                [&, n](nn::Module&, const TensorList& inputs, const Tensor& output) {
                    in[n] = inputs[0];
                    out[n] = output;
                    ++calls[n];
                    return Tensor();
                }));
            handles.push_back(m->register_full_backward_hook(
                [&, n](nn::Module&, const TensorList& grad_input, const TensorList& grad_output) {
                    QCOMPARE(int(grad_input.size()), 1);
                    QCOMPARE(int(grad_output.size()), 1);
                    gin[n] = grad_input[0];
                    gout[n] = grad_output[0];
                    ++calls[n + ".backward"];
                }));
        }
        Tensor x = randn({2, 2, 8, 8}).requires_grad_();
        Tensor g = randn({2, 3});
        Tensor y = (*net)(x);
        (y * g).sum().backward();
        const TensorList param_grads = [&] {
            TensorList v;
            for (const Tensor& p : net->parameters())
                v.push_back(p.grad());
            return v;
        }();

        // the independent pass
        net->zero_grad();
        Tensor x2 = x.detach().requires_grad_();
        Tensor a0 = F::conv2d(x2, conv->weight, conv->bias, {.padding = {1, 1}});
        Tensor a1 = relu(a0);
        F::Pool2dOptions po;
        Tensor a2 = F::max_pool2d(a1, po);
        Tensor a3 = a2.flatten(1);
        Tensor a4 = F::linear(a3, fc->weight, fc->bias);
        for (Tensor* t : {&a0, &a1, &a2, &a3})
            t->retain_grad();
        (a4 * g).sum().backward();

        QVERIFY(equal(y, a4));
        const std::vector<std::tuple<std::string, Tensor, Tensor, Tensor, Tensor>> expect = {
            {"0", x2, a0, x2.grad(), a0.grad()}, {"1", a0, a1, a0.grad(), a1.grad()},
            {"2", a1, a2, a1.grad(), a2.grad()}, {"3", a2, a3, a2.grad(), a3.grad()},
            {"4", a3, a4, a3.grad(), g},         {"net", x2, a4, x2.grad(), g}};
        for (const auto& [n, xin, xout, gi, go] : expect) {
            QVERIFY2(calls[n] == 1 && calls[n + ".backward"] == 1, n.c_str());
            QVERIFY2(equal(in[n], xin), n.c_str());
            QVERIFY2(equal(out[n], xout), n.c_str());
            QVERIFY2(equal(gin[n], gi), n.c_str());
            QVERIFY2(equal(gout[n], go), n.c_str());
        }
        // hooks leave the parameters' gradients untouched
        const TensorList params = net->parameters();
        for (size_t i = 0; i < params.size(); ++i)
            QVERIFY(equal(params[i].grad(), param_grads[i]));

        // removal stops them
        for (auto& h : handles)
            h.remove();
        (*net)(x).sum().backward();
        QCOMPARE(calls["0"], 1);
        QCOMPARE(calls["0.backward"], 1);
    }

    void hook_variants() {
        auto lin = make_shared<nn::Linear>(3, 2);
        // input that needs no gradient: the hook still fires, grad_input undefined (PyTorch)
        int fired = 0;
        Tensor seen_go;
        auto h = lin->register_full_backward_hook(
            [&](nn::Module& m, const TensorList& gi, const TensorList& go) {
                QCOMPARE(QString::fromStdString(m.type_name()), QStringLiteral("Linear"));
                QVERIFY(!gi[0].defined());
                seen_go = go[0];
                ++fired;
            });
        Tensor g = tensor({{1, 2}, {3, 4}});
        (*lin)(ones({2, 3})).backward(g);
        QCOMPARE(fired, 1);
        QVERIFY(equal(seen_go, g));
        // under no-grad nothing is wrapped and nothing fires
        {
            autograd::NoGradGuard no_grad;
            QVERIFY(!(*lin)(ones({2, 3})).requires_grad());
        }
        h.remove();
        h.remove(); // idempotent

        // pre-hook replaces the input, forward hook replaces the output
        auto relu_m = make_shared<nn::ReLU>();
        auto pre = relu_m->register_forward_pre_hook(
            [](nn::Module&, const TensorList& inputs) { return TensorList{inputs[0] * -1.0}; });
        auto post = relu_m->register_forward_hook(
            [](nn::Module&, const TensorList&, const Tensor& out) { return out * 2.0; });
        QCOMPARE((*relu_m)(tensor({-1, 2})).to_vector<float>(), std::vector<float>({2, 0}));
        pre.remove();
        QCOMPARE((*relu_m)(tensor({-1, 2})).to_vector<float>(), std::vector<float>({0, 4}));
        post.remove();
        QCOMPARE((*relu_m)(tensor({-1, 2})).to_vector<float>(), std::vector<float>({0, 2}));

        // multi-input module: one gradient per input, broadcasting undone
        auto add = make_shared<nn::Add>();
        TensorList gi_add;
        add->register_full_backward_hook(
            [&](nn::Module&, const TensorList& gi, const TensorList&) { gi_add = gi; });
        Tensor a = ones({2, 3}).requires_grad_(), b = ones({3}).requires_grad_();
        Tensor c = ones({3}); // needs no gradient
        (*add)({a, c, b}).sum().backward();
        QCOMPARE(int(gi_add.size()), 3);
        QVERIFY(equal(gi_add[0], ones({2, 3})));
        QVERIFY(!gi_add[1].defined());
        QVERIFY(equal(gi_add[2], full({3}, 2.0)));

        // a handle outliving its module is harmless
        HookHandle orphan;
        {
            auto tmp = make_shared<nn::Tanh>();
            orphan = tmp->register_forward_hook(
                [](nn::Module&, const TensorList&, const Tensor&) { return Tensor(); });
        }
        orphan.remove();
    }

    void default_init_statistics() {
        // Linear(1000, 1000): kaiming_uniform_(a=sqrt(5)) is U(-1/sqrt(1000), 1/sqrt(1000))
        auto lin = make_shared<nn::Linear>(1000, 1000);
        const double b = 1.0 / std::sqrt(1000.0);
        Stats s = stats(lin->weight);
        QVERIFY(s.max <= b * (1 + 1e-6) && s.min >= -b * (1 + 1e-6));
        QVERIFY(s.max > 0.999 * b && s.min < -0.999 * b);
        QVERIFY(std::abs(s.mean) < 5 * b / std::sqrt(3.0) / 1000); // 5 sigma of the mean
        QVERIFY2(close(s.std, b / std::sqrt(3.0), 3e-3), qPrintable(QString::number(s.std)));
        s = stats(lin->bias);
        QVERIFY(s.max <= b * (1 + 1e-6) && s.min >= -b * (1 + 1e-6) && s.max > 0.9 * b);
        // Conv2d(64, 128, 3): fan_in = 576
        auto conv = make_shared<nn::Conv2d>(64, 128, 3);
        const double cb = 1.0 / 24.0;
        s = stats(conv->weight);
        QVERIFY(s.max <= cb * (1 + 1e-6) && s.min >= -cb * (1 + 1e-6) && s.max > 0.999 * cb);
        QVERIFY(close(s.std, cb / std::sqrt(3.0), 5e-3));
        s = stats(conv->bias);
        QVERIFY(s.max <= cb * (1 + 1e-6) && s.min >= -cb * (1 + 1e-6));
        // ConvTranspose2d(16, 8, 4): weight [16, 8, 4, 4], fan_in = size(1) * 16 = 128
        auto convt = make_shared<nn::ConvTranspose2d>(16, 8, 4);
        s = stats(convt->weight);
        QVERIFY(s.max <= 1 / std::sqrt(128.0) * (1 + 1e-6) && s.max > 0.99 / std::sqrt(128.0));
        // Bilinear: U(-1/sqrt(in1), 1/sqrt(in1)) for weight and bias
        auto bil = make_shared<nn::Bilinear>(25, 40, 200);
        s = stats(bil->weight);
        QVERIFY(s.max <= 0.2 * (1 + 1e-6) && s.max > 0.199 && s.min >= -0.2 * (1 + 1e-6));
        // Embedding: N(0, 1) with the padding row zeroed
        auto emb = make_shared<nn::Embedding>(1000, 100, 3);
        s = stats(emb->weight);
        QVERIFY(std::abs(s.mean) < 5e-3 && close(s.std, 1.0, 5e-3));
        QVERIFY(equal(emb->weight[3], zeros({100})));
        // normalisation layers and PReLU
        auto bn = make_shared<nn::BatchNorm2d>(5);
        QVERIFY(equal(bn->weight, ones({5})) && equal(bn->bias, zeros({5})));
        QVERIFY(equal(bn->running_mean, zeros({5})) && equal(bn->running_var, ones({5})));
        QCOMPARE(bn->num_batches_tracked.dtype(), DType::Int64);
        QCOMPARE(bn->num_batches_tracked.dim(), 0);
        QCOMPARE(bn->num_batches_tracked.item<int64_t>(), int64_t(0));
        QVERIFY(!bn->running_mean.requires_grad() && bn->weight.requires_grad());
        auto ln = make_shared<nn::LayerNorm>(Dims{4, 5});
        QVERIFY(equal(ln->weight, ones({4, 5})) && equal(ln->bias, zeros({4, 5})));
        auto gn = make_shared<nn::GroupNorm>(2, 6);
        QVERIFY(equal(gn->weight, ones({6})) && equal(gn->bias, zeros({6})));
        auto pr = make_shared<nn::PReLU>(4);
        QVERIFY(equal(pr->weight, full({4}, 0.25)));
        // the init seed makes models reproducible
        manual_seed(7);
        auto m1 = make_mlp();
        manual_seed(7);
        auto m2 = make_mlp();
        for (size_t i = 0; i < m1->parameters().size(); ++i)
            QVERIFY(equal(m1->parameters()[i], m2->parameters()[i]));
    }

    void init_functions() {
        using namespace nn::init;
        QCOMPARE(calculate_gain("linear"), 1.0);
        QCOMPARE(calculate_gain("conv2d"), 1.0);
        QCOMPARE(calculate_gain("sigmoid"), 1.0);
        QCOMPARE(calculate_gain("tanh"), 5.0 / 3.0);
        QCOMPARE(calculate_gain("relu"), std::sqrt(2.0));
        QCOMPARE(calculate_gain("leaky_relu"), std::sqrt(2.0 / (1 + 0.01 * 0.01)));
        QCOMPARE(calculate_gain("leaky_relu", 0.2), std::sqrt(2.0 / 1.04));
        QCOMPARE(calculate_gain("selu"), 0.75);
        QVERIFY(error_of<Error>([] { calculate_gain("swish"); }).contains("swish"));
        QCOMPARE(calculate_fan_in_and_fan_out(empty({8, 4, 3, 3})),
                 std::make_pair(int64_t(36), int64_t(72)));
        QCOMPARE(calculate_fan_in_and_fan_out(empty({10, 20})),
                 std::make_pair(int64_t(20), int64_t(10)));
        QVERIFY(error_of<ShapeError>([] {
                    calculate_fan_in_and_fan_out(empty({5}));
                }).contains("fewer than 2"));

        Tensor w = empty({300, 500});
        xavier_uniform_(w, 2.0);
        const double xb = 2.0 * std::sqrt(6.0 / 800.0);
        Stats s = stats(w);
        QVERIFY(s.max <= xb * (1 + 1e-6) && s.max > 0.999 * xb &&
                close(s.std, xb / std::sqrt(3.0), 5e-3));
        xavier_normal_(w);
        QVERIFY(close(stats(w).std, std::sqrt(2.0 / 800.0), 5e-3));
        Tensor k = empty({256, 512});
        kaiming_normal_(k, 0.0, FanMode::FanOut, "relu");
        QVERIFY(close(stats(k).std, std::sqrt(2.0) / 16.0, 5e-3));
        kaiming_uniform_(k, 0.0, FanMode::FanIn, "relu");
        s = stats(k);
        const double kb = std::sqrt(3.0) * std::sqrt(2.0) / std::sqrt(512.0);
        QVERIFY(s.max <= kb * (1 + 1e-6) && s.max > 0.999 * kb);
        uniform_(k, -3.0, -1.0);
        s = stats(k);
        QVERIFY(s.min >= -3.0 && s.max < -1.0 && close(s.mean, -2.0, 2e-3));
        normal_(k, 5.0, 2.0);
        s = stats(k);
        QVERIFY(close(s.mean, 5.0, 2e-3) && close(s.std, 2.0, 5e-3));
        constant_(k, 1.5);
        QVERIFY(equal(k, full({256, 512}, 1.5)));
        zeros_(k);
        QVERIFY(equal(k, zeros({256, 512})));
        ones_(k);
        QVERIFY(equal(k, ones({256, 512})));

        // truncated normal on [-2, 2]: every value inside, std of the truncated distribution
        Tensor t = empty({200000});
        trunc_normal_(t);
        s = stats(t);
        QVERIFY(s.min >= -2.0 && s.max <= 2.0 && s.max > 1.99);
        QVERIFY(std::abs(s.mean) < 0.01);
        QVERIFY2(close(s.std, 0.879626, 5e-3), qPrintable(QString::number(s.std)));
        trunc_normal_(t, 1.0, 0.5, 0.0, 1.5);
        s = stats(t);
        QVERIFY(s.min >= 0.0 && s.max <= 1.5);

        // orthogonal: rows orthonormal when wide, columns when tall; gain scales
        for (const Dims& shape : {Dims{20, 50}, Dims{50, 20}, Dims{8, 4, 3, 3}}) {
            Tensor q = empty(shape);
            orthogonal_(q, 2.0);
            Tensor m = q.reshape({shape[0], -1});
            Tensor gram = shape[0] <= m.size(1) ? matmul(m, m.t()) : matmul(m.t(), m);
            QVERIFY2(allclose(gram, eye(gram.size(0)) * 4.0, 0, 1e-5), shape.str().c_str());
        }
        QVERIFY(error_of<ShapeError>([] {
                    Tensor v = empty({3});
                    orthogonal_(v);
                }).contains("2 or more dimensions"));

        // explicit generators make init reproducible and independent of the default stream
        Generator g1(42), g2(42);
        Tensor a = empty({4, 4}), b = empty({4, 4});
        kaiming_uniform_(a, 0.0, FanMode::FanIn, "leaky_relu", &g1);
        kaiming_uniform_(b, 0.0, FanMode::FanIn, "leaky_relu", &g2);
        QVERIFY(equal(a, b));
        // parameters that require grad are filled under no-grad
        Tensor p = empty({3, 3}).requires_grad_();
        xavier_uniform_(p);
        QVERIFY(p.is_leaf() && !p.grad_fn());
    }

    // Expected strings printed by torch 1.13 for the same constructor calls.
    void reprs_match_pytorch() {
        using namespace nn;
        const std::vector<std::pair<ModulePtr, const char*>> cases = {
            {make_shared<Linear>(4, 2), "Linear(in_features=4, out_features=2, bias=True)"},
            {make_shared<Linear>(4, 2, false), "Linear(in_features=4, out_features=2, bias=False)"},
            {make_shared<Bilinear>(2, 3, 4),
             "Bilinear(in1_features=2, in2_features=3, out_features=4, bias=True)"},
            {make_shared<Conv1d>(2, 4, 3), "Conv1d(2, 4, kernel_size=(3,), stride=(1,))"},
            {make_shared<Conv1d>(
                 2, 4, 3,
                 Conv1dOptions{
                     .stride = 2, .padding = 1, .dilation = 2, .groups = 2, .bias = false}),
             "Conv1d(2, 4, kernel_size=(3,), stride=(2,), padding=(1,), dilation=(2,), groups=2, "
             "bias=False)"},
            {make_shared<Conv2d>(3, 8, 3), "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1))"},
            {make_shared<Conv2d>(3, 8, Size2(3, 5), Conv2dOptions{.stride = 2, .padding = 1}),
             "Conv2d(3, 8, kernel_size=(3, 5), stride=(2, 2), padding=(1, 1))"},
            {make_shared<Conv2d>(3, 8, 3, Conv2dOptions{.same_padding = true}),
             "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=same)"},
            {make_shared<Conv2d>(
                 3, 8, 3, Conv2dOptions{.padding = 1, .bias = false, .padding_mode = "reflect"}),
             "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False, "
             "padding_mode=reflect)"},
            {make_shared<ConvTranspose2d>(8, 4, 2, ConvTranspose2dOptions{.stride = 2}),
             "ConvTranspose2d(8, 4, kernel_size=(2, 2), stride=(2, 2))"},
            {make_shared<ConvTranspose2d>(
                 8, 4, 3,
                 ConvTranspose2dOptions{
                     .stride = 2, .padding = 1, .output_padding = 1, .groups = 2, .bias = false}),
             "ConvTranspose2d(8, 4, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), "
             "output_padding=(1, 1), groups=2, bias=False)"},
            {make_shared<MaxPool2d>(2),
             "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"},
            {make_shared<MaxPool2d>(Size2(3, 2),
                                    MaxPool2dOptions{.stride = 1, .padding = 1, .ceil_mode = true}),
             "MaxPool2d(kernel_size=(3, 2), stride=1, padding=1, dilation=1, ceil_mode=True)"},
            {make_shared<AvgPool2d>(2), "AvgPool2d(kernel_size=2, stride=2, padding=0)"},
            {make_shared<AvgPool2d>(3, AvgPool2dOptions{.stride = 2,
                                                        .padding = 1,
                                                        .ceil_mode = true,
                                                        .count_include_pad = false}),
             "AvgPool2d(kernel_size=3, stride=2, padding=1)"},
            {make_shared<AdaptiveAvgPool2d>(1), "AdaptiveAvgPool2d(output_size=1)"},
            {make_shared<AdaptiveAvgPool2d>(Size2(2, 3)), "AdaptiveAvgPool2d(output_size=(2, 3))"},
            {make_shared<BatchNorm1d>(10),
             "BatchNorm1d(10, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"},
            {make_shared<BatchNorm2d>(16, 1e-3, std::nullopt, false, false),
             "BatchNorm2d(16, eps=0.001, momentum=None, affine=False, track_running_stats=False)"},
            {make_shared<LayerNorm>(Dims{10}),
             "LayerNorm((10,), eps=1e-05, elementwise_affine=True)"},
            {make_shared<LayerNorm>(Dims{4, 5}, 1e-6, false),
             "LayerNorm((4, 5), eps=1e-06, elementwise_affine=False)"},
            {make_shared<GroupNorm>(2, 8), "GroupNorm(2, 8, eps=1e-05, affine=True)"},
            {make_shared<GroupNorm>(4, 8, 1e-4, false),
             "GroupNorm(4, 8, eps=0.0001, affine=False)"},
            {make_shared<Dropout>(), "Dropout(p=0.5, inplace=False)"},
            {make_shared<Dropout>(0.2), "Dropout(p=0.2, inplace=False)"},
            {make_shared<Dropout2d>(0.1), "Dropout2d(p=0.1, inplace=False)"},
            {make_shared<Embedding>(10, 3), "Embedding(10, 3)"},
            {make_shared<Embedding>(10, 3, 0), "Embedding(10, 3, padding_idx=0)"},
            {make_shared<Embedding>(10, 3, -1), "Embedding(10, 3, padding_idx=9)"},
            {make_shared<Flatten>(), "Flatten(start_dim=1, end_dim=-1)"},
            {make_shared<Flatten>(0, 2), "Flatten(start_dim=0, end_dim=2)"},
            {make_shared<Unflatten>(1, Dims{2, 5}), "Unflatten(dim=1, unflattened_size=(2, 5))"},
            {make_shared<Identity>(), "Identity()"},
            {make_shared<Upsample>(2), "Upsample(scale_factor=2.0, mode=nearest)"},
            {make_shared<Upsample>(2, "bilinear", true),
             "Upsample(scale_factor=2.0, mode=bilinear)"},
            {make_shared<Upsample>(Size2(2, 3)), "Upsample(scale_factor=(2.0, 3.0), mode=nearest)"},
            {make_shared<ReLU>(), "ReLU()"},
            {make_shared<LeakyReLU>(), "LeakyReLU(negative_slope=0.01)"},
            {make_shared<LeakyReLU>(0.2), "LeakyReLU(negative_slope=0.2)"},
            {make_shared<PReLU>(), "PReLU(num_parameters=1)"},
            {make_shared<PReLU>(8), "PReLU(num_parameters=8)"},
            {make_shared<ELU>(), "ELU(alpha=1.0)"},
            {make_shared<ELU>(0.5), "ELU(alpha=0.5)"},
            {make_shared<GELU>(), "GELU(approximate='none')"},
            {make_shared<GELU>("tanh"), "GELU(approximate='tanh')"},
            {make_shared<SiLU>(), "SiLU()"},
            {make_shared<Sigmoid>(), "Sigmoid()"},
            {make_shared<Tanh>(), "Tanh()"},
            {make_shared<Softmax>(1), "Softmax(dim=1)"},
            {make_shared<LogSoftmax>(-1), "LogSoftmax(dim=-1)"},
            {make_shared<Softplus>(), "Softplus(beta=1, threshold=20)"},
            {make_shared<Softplus>(2, 10), "Softplus(beta=2, threshold=10)"},
            {make_shared<Hardswish>(), "Hardswish()"},
            {make_shared<ModuleList>(
                 std::vector<ModulePtr>{make_shared<ReLU>(), make_shared<Tanh>()}),
             "ModuleList(\n  (0): ReLU()\n  (1): Tanh()\n)"},
            {make_shared<ModuleDict>(
                 std::vector<std::pair<std::string, ModulePtr>>{{"a", make_shared<ReLU>()}}),
             "ModuleDict(\n  (a): ReLU()\n)"},
            {make_shared<Sequential>(), "Sequential()"},
            // merge nodes (no PyTorch counterpart)
            {make_shared<Add>(), "Add()"},
            {make_shared<Multiply>(), "Multiply()"},
            {make_shared<Concat>(1), "Concat(dim=1)"},
        };
        for (const auto& [m, expected] : cases)
            QCOMPARE(repr(*m), QString(expected));

        QCOMPARE(repr(*make_cnn()),
                 QStringLiteral(
                     "Sequential(\n"
                     "  (0): Conv2d(1, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
                     "  (1): BatchNorm2d(16, eps=1e-05, momentum=0.1, affine=True, "
                     "track_running_stats=True)\n"
                     "  (2): ReLU()\n"
                     "  (3): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, "
                     "ceil_mode=False)\n"
                     "  (4): Conv2d(16, 32, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
                     "  (5): BatchNorm2d(32, eps=1e-05, momentum=0.1, affine=True, "
                     "track_running_stats=True)\n"
                     "  (6): ReLU()\n"
                     "  (7): AdaptiveAvgPool2d(output_size=1)\n"
                     "  (8): Flatten(start_dim=1, end_dim=-1)\n"
                     "  (9): Linear(in_features=32, out_features=10, bias=True)\n"
                     ")"));
        QCOMPARE(repr(*make_shared<Net>()),
                 QStringLiteral(
                     "Net(\n"
                     "  (stem): Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
                     "  (block): Block(\n"
                     "    (conv1): Conv2d(8, 16, kernel_size=(3, 3), stride=(2, 2), padding=(1, "
                     "1), bias=False)\n"
                     "    (bn1): BatchNorm2d(16, eps=1e-05, momentum=0.1, affine=True, "
                     "track_running_stats=True)\n"
                     "    (conv2): Conv2d(16, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, "
                     "1), bias=False)\n"
                     "    (bn2): BatchNorm2d(16, eps=1e-05, momentum=0.1, affine=True, "
                     "track_running_stats=True)\n"
                     "    (shortcut): Sequential(\n"
                     "      (0): Conv2d(8, 16, kernel_size=(1, 1), stride=(2, 2), bias=False)\n"
                     "      (1): BatchNorm2d(16, eps=1e-05, momentum=0.1, affine=True, "
                     "track_running_stats=True)\n"
                     "    )\n"
                     "  )\n"
                     "  (head): Linear(in_features=16, out_features=10, bias=True)\n"
                     ")"));
    }

    void bad_input_messages() {
        using namespace nn;
        QCOMPARE(
            error_of<ShapeError>([] {
                (*make_shared<Linear>(784, 10))(zeros({128, 1, 28, 28}));
            }),
            QStringLiteral("Linear(in_features=784, out_features=10, bias=True): expected input "
                           "[..., 784], got [128, 1, 28, 28]"));
        // each layer type: the message names the layer, what it expects and what it got
        const std::vector<std::tuple<ModulePtr, TensorList, const char*>> cases = {
            {make_shared<Bilinear>(2, 3, 4),
             {zeros({5, 2}), zeros({5, 4})},
             "[..., 2] and [..., 3]"},
            {make_shared<Conv1d>(2, 4, 3), {zeros({1, 3, 10})}, "[N, 2, L]"},
            {make_shared<Conv1d>(2, 4, 3), {zeros({1, 2, 2})}, "L large enough"},
            {make_shared<Conv2d>(3, 8, 3), {zeros({1, 1, 28, 28})}, "[N, 3, H, W]"},
            {make_shared<Conv2d>(3, 8, 5),
             {zeros({1, 3, 4, 4})},
             "at least the (dilated) kernel size"},
            {make_shared<ConvTranspose2d>(8, 4, 2), {zeros({1, 4, 5, 5})}, "[N, 8, H, W]"},
            {make_shared<MaxPool2d>(2), {zeros({4, 10})}, "[N, C, H, W]"},
            {make_shared<MaxPool2d>(4), {zeros({1, 1, 3, 3})}, "at least the kernel size"},
            {make_shared<AvgPool2d>(2), {zeros({10})}, "[N, C, H, W]"},
            {make_shared<AdaptiveAvgPool2d>(1), {zeros({2, 3})}, "[N, C, H, W]"},
            {make_shared<BatchNorm1d>(16), {zeros({4, 8})}, "[N, 16] or [N, 16, L]"},
            {make_shared<BatchNorm2d>(16), {zeros({4, 16})}, "[N, 16, H, W]"},
            {make_shared<LayerNorm>(Dims{4, 5}), {zeros({2, 5, 4})}, "[..., 4, 5]"},
            {make_shared<GroupNorm>(2, 8), {zeros({2, 6, 3})}, "[N, 8, *]"},
            {make_shared<Dropout2d>(), {zeros({2, 6})}, "[N, C, H, W] or [C, H, W]"},
            {make_shared<Flatten>(2, 3), {zeros({2, 6})}, "at least 4 dims"},
            {make_shared<Unflatten>(1, Dims{2, 5}), {zeros({2, 6})}, "dim 1 has 10 elements"},
            {make_shared<Upsample>(2), {zeros({2, 6, 3})}, "[N, C, H, W]"},
            {make_shared<PReLU>(8), {zeros({2, 6, 3})}, "[N, 8, *]"},
            {make_shared<Softmax>(2), {zeros({2, 6})}, "dim 2"},
            {make_shared<LogSoftmax>(-3), {zeros({2, 6})}, "dim -3"},
            {make_shared<Add>(),
             {zeros({2, 3}), zeros({4})},
             "shapes that broadcast together, got [2, 3], [4]"},
            {make_shared<Multiply>(),
             {zeros({2, 3}), zeros({2, 2})},
             "shapes that broadcast together"},
            {make_shared<Concat>(1),
             {zeros({2, 3}), zeros({3, 3})},
             "equal sizes except in dim 1, got [2, 3], [3, 3]"},
        };
        for (const auto& [m, inputs, expected] : cases) {
            const QString msg = error_of<ShapeError>([&] { (*m)(inputs); });
            const QString name = QString::fromStdString(m->type_name() + "(" + m->extra_repr() +
                                                        "): expected input ");
            QVERIFY2(msg.startsWith(name) && msg.contains(expected), qPrintable(msg));
        }
        // wrong dtype and wrong input count
        QVERIFY(error_of<DTypeError>([] {
                    (*make_shared<Embedding>(10, 3))(zeros({4}));
                }).contains("Embedding(10, 3): expected int64 indices, got float32 [4]"));
        QVERIFY(error_of<Error>([] {
                    (*make_shared<Linear>(2, 2))(TensorList{zeros({2}), zeros({2})});
                }).contains("expected 1 input, got 2"));
        // constructor arguments are checked too
        QVERIFY(error_of<Error>([] { GroupNorm(3, 8); }).contains("divisible"));
        QVERIFY(error_of<Error>([] {
                    Conv2d(3, 8, 3, Conv2dOptions{.stride = 2, .same_padding = true});
                }).contains("strided"));
        QVERIFY(error_of<Error>([] { Dropout(1.5); }).contains("between 0 and 1"));
    }

    void layers_forward() {
        using namespace nn;
        // a few values checked by hand; the golden tests compare the functional ops with PyTorch
        auto lin = make_shared<Linear>(2, 1);
        {
            autograd::NoGradGuard no_grad;
            lin->weight.copy_(tensor({{1, 2}}));
            lin->bias.fill_(0.5);
        }
        QCOMPARE((*lin)(tensor({{1, 1}, {2, 0}})).to_vector<float>(),
                 std::vector<float>({3.5f, 2.5f}));
        QCOMPARE((*make_shared<Flatten>())(zeros({2, 3, 4})).shape(), Dims({2, 12}));
        QCOMPARE((*make_shared<Unflatten>(1, Dims{3, -1}))(zeros({2, 12})).shape(),
                 Dims({2, 3, 4}));
        QCOMPARE((*make_shared<Concat>(0))({ones({1, 2}), zeros({2, 2})}).shape(), Dims({3, 2}));
        QVERIFY(
            equal((*make_shared<Add>())({ones({2, 2}), ones({2}), ones({1})}), full({2, 2}, 3.0)));
        QVERIFY(
            equal((*make_shared<Multiply>())({full({2}, 2.0), full({2}, 3.0)}), full({2}, 6.0)));
        Tensor x = tensor({-1, 0.5});
        QVERIFY(equal((*make_shared<Identity>())(x), x));
        QVERIFY(allclose((*make_shared<LeakyReLU>(0.1))(x), tensor({-0.1, 0.5})));
        QVERIFY(allclose((*make_shared<Softmax>(0))(x).sum(), tensor({1}).sum()));
        QCOMPARE((*make_shared<Conv2d>(3, 8, 3, Conv2dOptions{.same_padding = true}))(
                     zeros({1, 3, 7, 5}))
                     .shape(),
                 Dims({1, 8, 7, 5}));
        QCOMPARE((*make_shared<Conv2d>(3, 8, 3))(zeros({3, 7, 5})).shape(),
                 Dims({8, 5, 3})); // unbatched
        QCOMPARE((*make_shared<ConvTranspose2d>(8, 4, 2, ConvTranspose2dOptions{.stride = 2}))(
                     zeros({1, 8, 3, 3}))
                     .shape(),
                 Dims({1, 4, 6, 6}));
        QCOMPARE((*make_shared<MaxPool2d>(2))(zeros({1, 2, 7, 7})).shape(), Dims({1, 2, 3, 3}));
        QCOMPARE((*make_shared<AvgPool2d>(3, AvgPool2dOptions{.stride = 2, .padding = 1}))(
                     zeros({1, 2, 7, 7}))
                     .shape(),
                 Dims({1, 2, 4, 4}));
        QCOMPARE((*make_shared<AdaptiveAvgPool2d>(Size2(2, 3)))(zeros({1, 2, 7, 7})).shape(),
                 Dims({1, 2, 2, 3}));
    }

    void more_layers_forward() {
        using namespace nn;
        QCOMPARE(
            (*make_shared<Conv1d>(2, 4, 3, Conv1dOptions{.padding = 1}))(zeros({5, 2, 9})).shape(),
            Dims({5, 4, 9}));
        QCOMPARE((*make_shared<Bilinear>(2, 3, 4))({zeros({5, 2}), zeros({5, 3})}).shape(),
                 Dims({5, 4}));
        auto emb = make_shared<Embedding>(10, 3, 0);
        Tensor e = (*emb)(from_vector(std::vector<int64_t>{0, 4, 0}, {3}));
        QCOMPARE(e.shape(), Dims({3, 3}));
        QVERIFY(equal(e[0], zeros({3})) && equal(e[1], emb->weight[4]));
        QCOMPARE((*make_shared<Upsample>(Size2(2, 3)))(zeros({1, 2, 3, 4})).shape(),
                 Dims({1, 2, 6, 12}));
        Tensor x = randn({4, 6, 5});
        Tensor ln = (*make_shared<LayerNorm>(Dims{5}))(x);
        QVERIFY(allclose(ln.mean({-1}), zeros({4, 6}), 0, 1e-5));
        Tensor gn = (*make_shared<GroupNorm>(3, 6))(x);
        QVERIFY(allclose(gn.reshape({4, 3, 10}).mean({-1}), zeros({4, 3}), 0, 1e-5));
        auto pr = make_shared<PReLU>();
        QVERIFY(allclose((*pr)(tensor({-4, 2})), tensor({-1, 2})));
        auto d2 = make_shared<Dropout2d>(0.5);
        Tensor y = (*d2)(ones({8, 16, 3, 3}));
        // whole channels are either dropped or scaled by 2
        Tensor per_channel = amax(y, {2, 3}) - amin(y, {2, 3});
        QVERIFY(equal(per_channel, zeros({8, 16})));
        for (const auto& act : std::vector<ModulePtr>{
                 make_shared<ELU>(), make_shared<GELU>("tanh"), make_shared<SiLU>(),
                 make_shared<Softplus>(), make_shared<Hardswish>(), make_shared<Sigmoid>(),
                 make_shared<Tanh>(), make_shared<LogSoftmax>(1)})
            QCOMPARE((*act)(x).shape(), x.shape());
        QVERIFY(allclose((*make_shared<Hardswish>())(tensor({-4, 0, 1, 4})),
                         tensor({0, 0, 2.0 / 3.0, 4})));
    }

    void containers() {
        using namespace nn;
        auto seq = make_shared<Sequential>();
        seq->push_back(make_shared<Linear>(4, 3));
        seq->append(make_shared<ReLU>());
        QCOMPARE(int(seq->size()), 2);
        QVERIFY(seq->at<Linear>(0) && !seq->at<Linear>(1));
        QVERIFY((*seq)[-1] == (*seq)[1]);
        QVERIFY(error_of<IndexError>([&] { (*seq)[2]; }).contains("out of range"));
        QCOMPARE((*seq)(ones({2, 4})).shape(), Dims({2, 3}));
        QCOMPARE((*make_shared<Sequential>())(ones({2})).shape(), Dims({2})); // empty: identity
        auto named = make_shared<Sequential>(std::vector<std::pair<std::string, ModulePtr>>{
            {"fc", make_shared<Linear>(2, 2)}, {"act", make_shared<Tanh>()}});
        QCOMPARE(keys_of(named->state_dict()), QStringList({"fc.weight", "fc.bias"}));
        auto list = make_shared<ModuleList>();
        list->push_back(make_shared<Linear>(2, 2));
        list->push_back(make_shared<Linear>(2, 2, false));
        QCOMPARE(keys_of(list->state_dict()), QStringList({"0.weight", "0.bias", "1.weight"}));
        QVERIFY(error_of<Error>([&] { (*list)(ones({2})); }).contains("no forward"));
        int n = 0;
        for (const auto& m : *list)
            n += m ? 1 : 0;
        QCOMPARE(n, 2);
        auto dict = make_shared<ModuleDict>();
        dict->insert("enc", make_shared<Linear>(2, 2));
        QVERIFY(dict->contains("enc") && !dict->contains("dec"));
        QVERIFY(dict->at<Linear>("enc"));
        QCOMPARE(dict->keys(), std::vector<std::string>({"enc"}));
        QVERIFY(error_of<Error>([&] {
                    dict->insert("enc", make_shared<ReLU>());
                }).contains("already taken"));
    }
};

QTEST_APPLESS_MAIN(TestNnModule)
#include "test_nn_module.moc"
