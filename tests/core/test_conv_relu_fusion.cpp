// Conv2d followed by ReLU runs as one fused pass (oneDNN's ReLU post-op forward, ReLU's backward
// applied while the gradient is laid out for the convolution's backward), where nothing observes
// the pre-activation; with a 2x2 MaxPool2d after the ReLU, the three run as one (the pool reads
// the convolution's blocked output, its backward writes the blocked gradient). The fused path must
// give the same bits as the two ops, forward and every gradient, and a hook on the convolution must
// still see the pre-activation (and then the model runs unfused).
#include <myelin/autograd.h>
#include <myelin/generator.h>
#include <myelin/graph/build.h>
#include <myelin/io/project.h>
#include <myelin/nn/functional.h>
#include <myelin/nn/layers.h>
#include <myelin/tensor.h>

#include <QtTest>

#include <oneapi/dnnl/dnnl.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>

using namespace myelin;
namespace F = myelin::nn::functional;

namespace {

const std::filesystem::path kSource = MYELIN_SOURCE_DIR;

Tensor rnd(const Dims& shape, uint64_t seed) {
    Generator g(seed);
    return randn(shape, TensorOptions(DType::Float32), &g);
}

// Whether a and b have the same shape and the same bits (NaN payloads and the sign of 0 count).
bool same_bits(const Tensor& a, const Tensor& b) {
    if (a.defined() != b.defined()) return false;
    if (!a.defined()) return true;
    if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
    const Tensor ac = a.contiguous(), bc = b.contiguous();
    return std::memcmp(ac.data_ptr(), bc.data_ptr(), size_t(ac.numel()) * dtype_size(a.dtype())) ==
           0;
}

struct Pass {
    Tensor y, gx, gw, gb;
};

// Which fused op a comparison checks: conv2d_relu against conv2d then relu, or
// conv2d_relu_max_pool2d (2x2 pool) against conv2d, relu, max_pool2d.
enum class Fused { Relu, ReluPool };

// Forward, then (with `upstream`) backward of sum(y * upstream), fused or through the plain ops.
Pass run(Fused which, bool fused, const Tensor& x0, const Tensor& w0, const Tensor& b0,
         const F::Conv2dOptions& o, const Tensor& upstream) {
    Tensor x = x0.detach().requires_grad_(true), w = w0.detach().requires_grad_(true);
    Tensor b = b0.defined() ? b0.detach().requires_grad_(true) : Tensor();
    const F::Pool2dOptions window; // 2x2, stride 2
    Tensor y;
    if (which == Fused::Relu)
        y = fused ? F::conv2d_relu(x, w, b, o) : relu(F::conv2d(x, w, b, o));
    else
        y = fused ? F::conv2d_relu_max_pool2d(x, w, b, o, window)
                  : F::max_pool2d(relu(F::conv2d(x, w, b, o)), window);
    if (upstream.defined()) sum(y * upstream).backward();
    return {y.detach(), x.grad(), w.grad(), b.defined() ? b.grad() : Tensor()};
}

void compare(Fused which, const Dims& xs, const Dims& ws, bool bias, const F::Conv2dOptions& o,
             bool with_nan, float x_scale = 1.0f) {
    Tensor x = rnd(xs, 1) * x_scale, w = rnd(ws, 2) * 0.3f, b = bias ? rnd({ws[0]}, 3) : Tensor();
    if (with_nan) { // a NaN input: ReLU keeps the NaNs it spreads (PyTorch's) in both paths
        x = x.clone();
        x.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
    }
    const Tensor up = rnd(run(which, false, x, w, b, o, Tensor()).y.shape(), 4); // upstream grad
    const Pass a = run(which, false, x, w, b, o, up), f = run(which, true, x, w, b, o, up);
    QVERIFY2(same_bits(a.y, f.y), "forward differs");
    QVERIFY2(same_bits(a.gx, f.gx), "input gradient differs");
    QVERIFY2(same_bits(a.gw, f.gw), "weight gradient differs");
    QVERIFY2(same_bits(a.gb, f.gb), "bias gradient differs");
    if (with_nan) { // kept as PyTorch's ReLU keeps it, and its gradient passes
        if (which == Fused::Relu) QVERIFY(sum(ne(f.y, f.y).to(DType::Int64)).item<int64_t>() > 0);
        QVERIFY(sum(ne(f.gw, f.gw).to(DType::Int64)).item<int64_t>() > 0);
    }
    // Not vacuous: ReLU cut something (a whole window, with the pool), and the gradients are
    // not all zero.
    QVERIFY(sum(eq(a.y, 0.0).to(DType::Int64)).item<int64_t>() > 0);
    QVERIFY(sum(ne(a.gw, 0.0).to(DType::Int64)).item<int64_t>() > 0);
    QVERIFY(sum(ne(a.gx, 0.0).to(DType::Int64)).item<int64_t>() > 0);
}

// From AVX2 on, oneDNN's ReLU post-op gives our ReLU's bits and these shapes must fuse. Below it
// (SSE4.1, AVX) some of its kernels write -0 for a negative value, and the CPU backend refuses
// the fusion wherever its probe sees that (cpu_conv.cpp): there the node may be either, with the
// same values.
bool must_fuse() {
    const auto avx2 = unsigned(dnnl::cpu_isa::avx2);
    return (unsigned(dnnl::get_effective_cpu_isa()) & avx2) == avx2;
}

// `made_by` is the fused node's name where the fusion must happen, else it or the plain one's.
void check_node(const std::string& made_by, const char* fused, const char* plain) {
    if (must_fuse() || made_by != plain) QCOMPARE(QString::fromStdString(made_by), QString(fused));
}

void add_rows(int count) {
    QTest::addColumn<int>("which");
    for (int i = 0; i < count; ++i)
        QTest::newRow(qPrintable(QString::number(i))) << i;
}

F::Conv2dOptions pad(int64_t p, int64_t stride = 1) {
    F::Conv2dOptions o;
    o.padding = {p, p};
    o.stride = {stride, stride};
    return o;
}

// The fashion_cnn shape of layers: Conv2d-ReLU-MaxPool twice, then Linear.
std::shared_ptr<nn::Sequential> small_cnn() {
    manual_seed(7);
    nn::Conv2dOptions p1;
    p1.padding = 1;
    return std::make_shared<nn::Sequential>(
        std::make_shared<nn::Conv2d>(1, 16, 3, p1), std::make_shared<nn::ReLU>(),
        std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Conv2d>(16, 32, 3, p1),
        std::make_shared<nn::ReLU>(), std::make_shared<nn::Flatten>(),
        std::make_shared<nn::Linear>(32 * 7 * 7, 10));
}

struct ModelPass {
    Tensor y;
    std::vector<Tensor> grads;
};

ModelPass model_pass(nn::Module& model, const Tensor& x) {
    model.zero_grad();
    ModelPass p;
    p.y = model(x);
    sum(p.y * p.y).backward();
    for (const Tensor& t : model.parameters())
        p.grads.push_back(t.grad());
    p.y = p.y.detach();
    return p;
}

void compare_passes(const ModelPass& a, const ModelPass& b) {
    QVERIFY2(same_bits(a.y, b.y), "model output differs");
    QCOMPARE(a.grads.size(), b.grads.size());
    for (size_t i = 0; i < a.grads.size(); ++i)
        QVERIFY2(same_bits(a.grads[i], b.grads[i]),
                 qPrintable(QString("gradient of parameter %1 differs").arg(i)));
}

} // namespace

class TestConvReluFusion : public QObject {
    Q_OBJECT
  private slots:
    void fused_op_matches_conv_then_relu_data() { add_rows(8); }
    void fused_op_matches_conv_then_relu() {
        QFETCH(int, which);
        switch (which) {
        case 0: // fashion_cnn's first layer: direct convolution, 1 input channel
            return compare(Fused::Relu, {8, 1, 28, 28}, {32, 1, 3, 3}, true, pad(1), false);
        case 1: // its second: Winograd, 14x14 (the tail of 16-wide rows)
            return compare(Fused::Relu, {8, 32, 14, 14}, {64, 32, 3, 3}, true, pad(1), false);
        case 2: // no bias, strided, odd sizes
            return compare(Fused::Relu, {4, 16, 11, 9}, {32, 16, 3, 3}, false, pad(1, 2), false);
        case 3: // output channels not a multiple of 16: ReLU's backward in nchw, then reorder
            return compare(Fused::Relu, {4, 3, 10, 10}, {20, 3, 5, 5}, true, pad(2), false);
        case 4: // a NaN in the input
            return compare(Fused::Relu, {4, 16, 12, 12}, {16, 16, 3, 3}, true, pad(1), true);
        case 5:
            return compare(Fused::Relu, {4, 1, 12, 12}, {16, 1, 3, 3}, true, pad(0), true);
        case 6: // values near float's range: inf - inf could make a NaN, so no post-op
            return compare(Fused::Relu, {4, 16, 12, 12}, {16, 16, 3, 3}, true, pad(1), false,
                           1e36f);
        default: { // grouped
            F::Conv2dOptions o = pad(1);
            o.groups = 2;
            return compare(Fused::Relu, {4, 32, 9, 9}, {32, 16, 3, 3}, true, o, false);
        }
        }
    }

    void fused_pool_matches_conv_relu_pool_data() { add_rows(9); }
    void fused_pool_matches_conv_relu_pool() {
        QFETCH(int, which);
        switch (which) {
        case 0: // fashion_cnn's first stage: 28x28 -> 14x14 (rows of 14 windows)
            return compare(Fused::ReluPool, {8, 1, 28, 28}, {32, 1, 3, 3}, true, pad(1), false);
        case 1: // its second: Winograd, 14x14 -> 7x7
            return compare(Fused::ReluPool, {8, 32, 14, 14}, {64, 32, 3, 3}, true, pad(1), false);
        case 2: // odd height and width: the last row and column are in no window; no bias
            return compare(Fused::ReluPool, {4, 16, 11, 9}, {32, 16, 3, 3}, false, pad(1), false);
        case 3: // rows of more than 16 windows (36 -> 18)
            return compare(Fused::ReluPool, {2, 16, 40, 36}, {16, 16, 3, 3}, true, pad(1), false);
        case 4: // output channels not a multiple of 16: the nchw path
            return compare(Fused::ReluPool, {4, 3, 10, 10}, {20, 3, 5, 5}, true, pad(2), false);
        case 5: // a NaN in the input: no post-op, the ops' own NaN rules
            return compare(Fused::ReluPool, {4, 16, 12, 12}, {16, 16, 3, 3}, true, pad(1), true);
        case 6: // values near float's range
            return compare(Fused::ReluPool, {4, 16, 12, 12}, {16, 16, 3, 3}, true, pad(1), false,
                           1e36f);
        case 7: // 23 images of 100 KB of activation: passes of 10, 10 and 3 (kFusedPassBytes)
            return compare(Fused::ReluPool, {23, 1, 28, 28}, {32, 1, 3, 3}, true, pad(1), false);
        default: // strided convolution, 2x2 output (one window per plane)
            return compare(Fused::ReluPool, {3, 16, 8, 8}, {32, 16, 3, 3}, true, pad(1, 3), false);
        }
    }

    void fused_pool_is_one_node_and_falls_back_elsewhere() {
        Tensor x = rnd({2, 16, 8, 8}, 5).requires_grad_(true), w = rnd({16, 16, 3, 3}, 6);
        const F::Pool2dOptions window;
        const Tensor y = F::conv2d_relu_max_pool2d(x, w, Tensor(), pad(1), window);
        check_node(y.grad_fn()->name(), "ConvolutionReluMaxPoolBackward0",
                   "MaxPool2DWithIndicesBackward0");
        QCOMPARE(y.shape(), Dims({2, 16, 4, 4}));
        // float64, and pools other than 2x2 / stride 2: the three ops, the same values.
        const Tensor xd = x.detach().to(DType::Float64), wd = w.to(DType::Float64);
        QVERIFY(same_bits(F::conv2d_relu_max_pool2d(xd, wd, Tensor(), pad(1), window),
                          F::max_pool2d(relu(F::conv2d(xd, wd, Tensor(), pad(1))), window)));
        F::Pool2dOptions wide;
        wide.kernel_size = {3, 3};
        wide.stride = std::array<int64_t, 2>{1, 1};
        const Tensor z = F::conv2d_relu_max_pool2d(x, w, Tensor(), pad(1), wide);
        QCOMPARE(QString(z.grad_fn()->name()), QStringLiteral("MaxPool2DWithIndicesBackward0"));
        QVERIFY(same_bits(z, F::max_pool2d(relu(F::conv2d(x, w, Tensor(), pad(1))), wide)));
        // A pooled output changed in place before backward is refused, as any saved output.
        // (The plain pool saves its indices, not its output.)
        Tensor v = F::conv2d_relu_max_pool2d(x, w, Tensor(), pad(1), window);
        if (std::string(v.grad_fn()->name()) == "ConvolutionReluMaxPoolBackward0") {
            v.mul_(2.0);
            QVERIFY_THROWS_EXCEPTION(Error, sum(v).backward());
        }
    }

    void fused_op_is_one_node_and_float64_falls_back() {
        Tensor x = rnd({2, 16, 8, 8}, 5).requires_grad_(true), w = rnd({16, 16, 3, 3}, 6);
        const Tensor y = F::conv2d_relu(x, w, Tensor(), pad(1));
        check_node(y.grad_fn()->name(), "ConvolutionReluBackward0", "ReluBackward0");
        // float64 has no fused kernel: conv2d then relu, the same values as written out.
        const Tensor xd = x.detach().to(DType::Float64), wd = w.to(DType::Float64);
        QVERIFY(same_bits(F::conv2d_relu(xd, wd, Tensor(), pad(1)),
                          relu(F::conv2d(xd, wd, Tensor(), pad(1)))));
    }

    void sequential_fuses_and_matches_unfused() {
        auto model = small_cnn();
        const Tensor x = rnd({6, 1, 14, 14}, 9);
        // The second convolution's input: the first Conv2d-ReLU-MaxPool2d fused into one node,
        // except while the pool has a hook (next).
        std::string conv2_from;
        auto conv2_handle = model->children().at(3)->register_forward_hook(
            [&conv2_from](nn::Module&, const TensorList& in, const Tensor&) {
                conv2_from = in.at(0).grad_fn()->name();
                return Tensor();
            });
        const ModelPass all_fused = model_pass(*model, x);
        check_node(conv2_from, "ConvolutionReluMaxPoolBackward0", "MaxPool2DWithIndicesBackward0");
        conv2_handle.remove();
        std::string pooled_from; // which node made the max pool's input
        auto pool_handle = model->children().at(2)->register_forward_hook(
            [&pooled_from](nn::Module&, const TensorList& in, const Tensor&) {
                pooled_from = in.at(0).grad_fn()->name();
                return Tensor();
            });
        const ModelPass fused = model_pass(*model, x);
        check_node(pooled_from, "ConvolutionReluBackward0", "ReluBackward0");
        compare_passes(all_fused, fused);
        // A hook on the first convolution observes its pre-activation: that pair runs unfused.
        Tensor seen;
        auto conv = model->children().at(0);
        auto handle =
            conv->register_forward_hook([&seen](nn::Module&, const TensorList&, const Tensor& out) {
                seen = out.detach();
                return Tensor();
            });
        const ModelPass hooked = model_pass(*model, x);
        QCOMPARE(QString::fromStdString(pooled_from), QStringLiteral("ReluBackward0"));
        pool_handle.remove();
        compare_passes(fused, hooked);
        QVERIFY(seen.defined());
        auto& c = dynamic_cast<nn::Conv2d&>(*conv);
        QVERIFY2(same_bits(seen, F::conv2d(x, c.weight.detach(), c.bias.detach(), pad(1))),
                 "the hook did not see the convolution's own output");
        QVERIFY2(min(seen).item<float>() < 0.0f, "the hook saw the activation, not the conv");
        handle.remove();
        // A hook on the ReLU sees ReLU's output, unfused as well.
        auto relu_handle = model->children().at(4)->register_forward_hook(
            [&seen](nn::Module&, const TensorList&, const Tensor& out) {
                seen = out.detach();
                return Tensor();
            });
        const ModelPass relu_hooked = model_pass(*model, x);
        compare_passes(fused, relu_hooked);
        QVERIFY(min(seen).item<float>() == 0.0f);
        relu_handle.remove();
        compare_passes(fused, model_pass(*model, x));
    }

    void graph_model_fuses_and_matches_unfused() {
        const io::Project project =
            io::load_project(kSource / "resources/examples/fashion_cnn.myelin");
        auto model = graph::build(project.model);
        const Tensor x = rnd({4, 1, 28, 28}, 11);
        // Both Conv2d-ReLU-MaxPool2d stages run as one node each: what Flatten reads says so.
        std::string flattened_from;
        for (const auto& [name, layer] : model->named_children())
            if (layer->type_name() == "Flatten")
                layer->register_forward_hook(
                    [&flattened_from](nn::Module&, const TensorList& in, const Tensor&) {
                        flattened_from = in.at(0).grad_fn()->name();
                        return Tensor();
                    });
        const ModelPass fused = model_pass(*model, x);
        check_node(flattened_from, "ConvolutionReluMaxPoolBackward0",
                   "MaxPool2DWithIndicesBackward0");
        std::vector<HookHandle> hooks;
        int seen_negative = 0;
        for (const auto& [name, layer] : model->named_children())
            if (layer->type_name() == "Conv2d")
                hooks.push_back(layer->register_forward_hook(
                    [&seen_negative](nn::Module&, const TensorList&, const Tensor& out) {
                        seen_negative += min(out).item<float>() < 0.0f;
                        return Tensor();
                    }));
        QCOMPARE(hooks.size(), size_t(2));
        const ModelPass hooked = model_pass(*model, x);
        QCOMPARE(seen_negative, 2); // both convolutions' pre-activations were seen
        compare_passes(fused, hooked);
        for (auto& h : hooks)
            h.remove();
        compare_passes(fused, model_pass(*model, x));
    }
};

QTEST_APPLESS_MAIN(TestConvReluFusion)
#include "test_conv_relu_fusion.moc"
