// Tensor::to(Device) and Module::to(Device): the same device is a no-op returning the same
// storage (as PyTorch); an unusable device is a clear error naming the reason, before anything
// moves; a usable one moves values, parameters, buffers and gradients and gives the same results
// there. Without a GPU a host-backed test device stands in the CUDA slot (host_backed_device.h);
// with one, the moves go to cuda:0.
#include <myelin/cuda.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/nn/layers.h>
#include <myelin/tensor.h>

#include <QtTest>

#include "host_backed_device.h"
#include "test_support.h"

using namespace myelin;

namespace {

constexpr Device kCuda{DeviceType::CUDA, 0};

Tensor rnd(const Dims& shape, uint64_t seed) {
    Generator g(seed);
    return randn(shape, TensorOptions(DType::Float32), &g);
}

nn::Conv2dOptions conv_options() {
    nn::Conv2dOptions o;
    o.padding = 1;
    return o;
}

std::shared_ptr<nn::Sequential> small_cnn() {
    manual_seed(7); // the same initial weights on every call
    return std::make_shared<nn::Sequential>(
        std::make_shared<nn::Conv2d>(2, 4, nn::Size2(3), conv_options()),
        std::make_shared<nn::BatchNorm2d>(4), std::make_shared<nn::ReLU>(),
        std::make_shared<nn::MaxPool2d>(nn::Size2(2)), std::make_shared<nn::Flatten>(),
        std::make_shared<nn::Linear>(4 * 3 * 3, 3));
}

// Every parameter, buffer and defined gradient of m is on `device`.
bool all_on(const nn::Module& m, Device device) {
    for (const Tensor& p : m.parameters()) {
        if (!(p.device() == device)) return false;
        if (p.grad().defined() && !(p.grad().device() == device)) return false;
    }
    for (const Tensor& b : m.buffers())
        if (!(b.device() == device)) return false;
    return true;
}

} // namespace

class TestDeviceTransfer : public QObject {
    Q_OBJECT

    bool real_cuda_ = false;

  private slots:
    void theSameDeviceIsANoOp() {
        const Tensor x = rnd({3, 4}, 1);
        const Tensor y = x.to(kCPU);
        QVERIFY(y.is_same(x));
        QCOMPARE(y.data_ptr(), x.data_ptr());
        auto m = small_cnn();
        const Tensor w = m->parameters().front();
        const void* before = w.data_ptr();
        m->to(kCPU);
        QCOMPARE(m->parameters().front().data_ptr(), before);
    }

    void anUnusableDeviceIsAClearErrorAndMovesNothing() {
        if (backend::find(DeviceType::CUDA)) QSKIP("a CUDA device is usable here");
        const std::string reason = cuda_status().reason;
        QVERIFY(!reason.empty());
        CHECK_ERROR(DeviceError, rnd({2}, 2).to(kCuda), "to(cuda:0): ", reason.c_str());
        auto m = small_cnn();
        const void* before = m->parameters().front().data_ptr();
        CHECK_ERROR(DeviceError, m->to(kCuda), "Sequential.to(cuda:0): ", reason.c_str());
        QVERIFY(all_on(*m, kCPU));
        QCOMPARE(m->parameters().front().data_ptr(), before);
    }

    void registerTheTestDevice() {
        real_cuda_ = backend::find(DeviceType::CUDA) != nullptr;
        if (!real_cuda_) {
            test_device::register_if_no_gpu();
            qInfo("CUDA: skipped (no device: %s); a host-backed test device stands in",
                  cuda_status().reason.c_str());
        }
        QVERIFY(backend::find(DeviceType::CUDA) != nullptr);
    }

    void tensorsMoveAndComeBackExactly() {
        const Tensor x = rnd({5, 7}, 3);
        const Tensor d = x.to(kCuda);
        QVERIFY(d.device() == kCuda);
        QVERIFY(!d.is_same(x));
        QVERIFY(equal(d.to(kCPU), x));
        // Strided sources arrive contiguous with the same values.
        const Tensor t = x.t().to(kCuda);
        QVERIFY(equal(t.to(kCPU), x.t().contiguous()));
        // Gradients flow back across the move to the CPU leaf.
        Tensor leaf = x.detach().requires_grad_();
        (leaf.to(kCuda) * 3.0).sum().backward();
        QVERIFY(leaf.grad().device() == kCPU);
        QVERIFY(equal(leaf.grad(), full({5, 7}, 3.0)));
        // cuda:1 would silently be cuda:0: refused by name.
        CHECK_ERROR(DeviceError, x.to(Device(DeviceType::CUDA, 1)), "to(cuda:1)", "cuda:0 only");
    }

    void modulesMoveParametersBuffersAndGradients() {
        auto cpu_model = small_cnn();
        auto model = small_cnn();
        const Tensor x = rnd({2, 2, 6, 6}, 4);
        (*model)(x).sum().backward(); // gradients and updated running statistics to move
        (*cpu_model)(x).sum().backward();
        // Handles held elsewhere (an optimizer's) must follow the move.
        const std::vector<Tensor> held = model->parameters();
        model->to(kCuda);
        QVERIFY(all_on(*model, kCuda));
        for (const Tensor& p : held)
            QVERIFY(p.device() == kCuda && p.grad().device() == kCuda);
        const auto moved = model->named_parameters(), kept = cpu_model->named_parameters();
        for (size_t i = 0; i < kept.size(); ++i) {
            QVERIFY(equal(moved[i].second.to(kCPU), kept[i].second));
            QVERIFY(equal(moved[i].second.grad().to(kCPU), kept[i].second.grad()));
        }
        const auto moved_buffers = model->buffers(), kept_buffers = cpu_model->buffers();
        for (size_t i = 0; i < kept_buffers.size(); ++i)
            QVERIFY(equal(moved_buffers[i].to(kCPU), kept_buffers[i]));
        // The same step there: the same output (bit for bit on the test device; within
        // rounding on a GPU).
        model->zero_grad();
        cpu_model->zero_grad();
        const Tensor y = (*model)(x.to(kCuda));
        const Tensor want = (*cpu_model)(x);
        QVERIFY(y.device() == kCuda);
        if (real_cuda_)
            QVERIFY(allclose(y.to(kCPU), want, 1e-4, 1e-4));
        else
            QVERIFY(equal(y.to(kCPU), want));
        y.sum().backward();
        QVERIFY(all_on(*model, kCuda));
        // And back.
        model->to(kCPU);
        QVERIFY(all_on(*model, kCPU));
    }
};

QTEST_GUILESS_MAIN(TestDeviceTransfer)
#include "test_device_transfer.moc"
