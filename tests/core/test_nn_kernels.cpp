// The NN-kernel table (core/backend/nn_kernels.h): nn/'s convolution, pooling and normalisation
// reach the table of their operands' device, and a device that lacks an op refuses it by name.
// Where no GPU is present a host-memory test device takes the CUDA slot (its primitives and NN
// kernels forward to the CPU's, counted): every op, forward and backward, must give the CPU's
// results bit for bit through it. With a GPU the same ops run on CUDA against the CPU.
#include "host_backed_device.h"

#include <myelin/autocast.h>
#include <myelin/cuda.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/nn/functional.h>
#include <myelin/tensor.h>

#include <QtTest>

#include "test_support.h"

#include <functional>
#include <string>

using namespace myelin;
namespace F = myelin::nn::functional;
using backend::Backend;
using backend::Primitive;
using test_device::CountingKernels;
using test_device::HostBackedDevice;
using test_device::kTestDevice;

namespace {

Tensor rnd(const Dims& shape, uint64_t seed, DType t = DType::Float32) {
    Generator g(seed);
    return randn(shape, TensorOptions(t), &g);
}

// One NN op over leaf inputs: its output (summed with fixed weights by the caller for backward).
struct NnCase {
    const char* name;
    std::function<Tensor(const TensorList&)> fn;
    TensorList inputs; // on the CPU; undefined entries stay undefined
};

std::vector<NnCase> nn_cases(DType t) {
    F::Conv2dOptions strided;
    strided.stride = {2, 1}, strided.padding = {1, 2}, strided.dilation = {1, 2};
    F::Conv2dOptions padded;
    padded.padding = {1, 1};
    F::Conv2dOptions grouped;
    grouped.groups = 2, grouped.padding = {1, 1};
    F::ConvTranspose2dOptions transposed;
    transposed.stride = {2, 2}, transposed.padding = {1, 1}, transposed.output_padding = {1, 0};
    F::Conv1dOptions conv1;
    conv1.padding = 1;
    F::Pool2dOptions max2; // the CPU's 2x2 window-code path
    F::Pool2dOptions max3; // the indices path: 3x3, dilated, padded, ceil_mode
    max3.kernel_size = {3, 3}, max3.stride = {{2, 2}}, max3.padding = {1, 1};
    max3.dilation = {1, 2}, max3.ceil_mode = true;
    F::Pool2dOptions avg;
    avg.kernel_size = {3, 2}, avg.stride = {{2, 1}}, avg.padding = {1, 1};
    avg.ceil_mode = true, avg.count_include_pad = false;
    return {
        {"conv2d",
         [=](const TensorList& v) { return F::conv2d(v[0], v[1], v[2], strided); },
         {rnd({2, 3, 9, 8}, 1, t), rnd({4, 3, 3, 2}, 2, t), rnd({4}, 3, t)}},
        {"conv2d grouped",
         [=](const TensorList& v) { return F::conv2d(v[0], v[1], Tensor(), grouped); },
         {rnd({2, 4, 6, 6}, 4, t), rnd({6, 2, 3, 3}, 5, t)}},
        {"conv2d 16 channels (Winograd on AVX-512)",
         [=](const TensorList& v) { return F::conv2d(v[0], v[1], v[2], padded); },
         {rnd({2, 16, 8, 8}, 6, t), rnd({16, 16, 3, 3}, 7, t), rnd({16}, 8, t)}},
        {"conv1d",
         [=](const TensorList& v) { return F::conv1d(v[0], v[1], v[2], conv1); },
         {rnd({2, 3, 11}, 9, t), rnd({5, 3, 3}, 10, t), rnd({5}, 11, t)}},
        {"conv_transpose2d",
         [=](const TensorList& v) { return F::conv_transpose2d(v[0], v[1], v[2], transposed); },
         {rnd({2, 4, 5, 5}, 12, t), rnd({4, 3, 3, 3}, 13, t), rnd({3}, 14, t)}},
        {"max_pool2d 2x2",
         [=](const TensorList& v) { return F::max_pool2d(v[0], max2); },
         {rnd({2, 3, 9, 8}, 15, t)}},
        {"max_pool2d 3x3 dilated",
         [=](const TensorList& v) { return F::max_pool2d(v[0], max3); },
         {rnd({2, 3, 11, 12}, 16, t)}},
        {"avg_pool2d",
         [=](const TensorList& v) { return F::avg_pool2d(v[0], avg); },
         {rnd({2, 3, 7, 6}, 17, t)}},
        {"adaptive_avg_pool2d",
         [=](const TensorList& v) {
             return F::adaptive_avg_pool2d(v[0], {3, 4});
         },
         {rnd({2, 3, 7, 9}, 18, t)}},
        {"batch_norm training",
         [](const TensorList& v) {
             Tensor rm = zeros({3}, TensorOptions(v[0].dtype()).with_device(v[0].device()));
             Tensor rv = ones({3}, TensorOptions(v[0].dtype()).with_device(v[0].device()));
             const Tensor y = F::batch_norm(v[0], rm, rv, v[1], v[2], true, 0.1, 1e-5);
             // The updated running statistics are compared too.
             return y + rm.view({1, 3, 1, 1}) + rv.view({1, 3, 1, 1});
         },
         {rnd({4, 3, 5, 5}, 19, t), rnd({3}, 20, t), rnd({3}, 21, t)}},
        {"batch_norm eval",
         [](const TensorList& v) {
             const Tensor rm = v[3].detach(), rv = v[4].detach().abs() + 0.5;
             return F::batch_norm(v[0], rm, rv, v[1], v[2], false, 0.1, 1e-5);
         },
         {rnd({4, 3, 5}, 22, t), rnd({3}, 23, t), rnd({3}, 24, t), rnd({3}, 25, t),
          rnd({3}, 26, t)}},
        {"layer_norm",
         [](const TensorList& v) {
             return F::layer_norm(v[0], {4, 5}, v[1], v[2], 1e-5);
         },
         {rnd({3, 2, 4, 5}, 27, t), rnd({4, 5}, 28, t), rnd({4, 5}, 29, t)}},
        {"group_norm",
         [](const TensorList& v) { return F::group_norm(v[0], 3, v[1], v[2], 1e-5); },
         {rnd({2, 6, 4, 3}, 30, t), rnd({6}, 31, t), rnd({6}, 32, t)}},
    };
}

// The case's output and input gradients on `device` (inputs copied there), back on the CPU.
TensorList run_case(const NnCase& c, Device device) {
    TensorList leaves;
    for (const Tensor& t : c.inputs) {
        Tensor l = t.to(device).detach();
        if (t.is_floating_point()) l.requires_grad_();
        leaves.push_back(l);
    }
    const Tensor y = c.fn(leaves);
    const Tensor weights = rnd(y.shape(), 99, y.dtype()).to(device);
    (y * weights).sum().backward();
    TensorList out{y.detach().to(kCPU)};
    for (const Tensor& l : leaves)
        out.push_back(l.grad().defined() ? l.grad().to(kCPU) : Tensor());
    return out;
}

} // namespace

class TestNnKernels : public QObject {
    Q_OBJECT

    bool real_cuda_ = false;
    HostBackedDevice* test_device_ = nullptr;
    CountingKernels* counting_ = nullptr;

  private slots:
    void initTestCase() {
        real_cuda_ = backend::find(DeviceType::CUDA) != nullptr;
        if (real_cuda_) {
            qInfo("CUDA: %s", backend::get(DeviceType::CUDA).info().details.c_str());
            return;
        }
        qInfo("CUDA: skipped (no device: %s); a host-backed test device takes its slot",
              cuda_status().reason.c_str());
        test_device_ = test_device::register_if_no_gpu(&counting_);
    }

    void theCpuTableCoversEveryNnOp() {
        Backend& cpu = backend::get(DeviceType::CPU);
        QVERIFY(cpu.nn_kernels() != nullptr);
        const std::vector<std::string> names = {
            "conv_forward", "conv_backward_data", "conv_backward_weights",
            "max_pool2d",   "avg_pool2d",         "adaptive_avg_pool2d",
            "batch_norm",   "layer_norm",         "group_norm",
            "recurrent",    "attention_heads"};
        for (size_t i = 0; i < names.size(); ++i) {
            const auto p = Primitive(int(Primitive::ConvForward) + int(i));
            QCOMPARE(std::string(backend::primitive_name(p)), names[i]);
            for (DType t : {DType::Float32, DType::Float64})
                QVERIFY(&backend::nn_kernels(cpu, p, t) == cpu.nn_kernels());
            // supports() states the dtypes: integers and booleans are never an NN op's.
            QVERIFY(!cpu.supports(p, DType::Int64));
            QVERIFY(!cpu.supports(p, DType::Bool));
        }
        // linear's float32 product on oneDNN; float64 products take batched_gemm.
        QCOMPARE(std::string(backend::primitive_name(Primitive::Matmul)), std::string("matmul"));
        QVERIFY(&backend::nn_kernels(cpu, Primitive::Matmul, DType::Float32) == cpu.nn_kernels());
        QVERIFY(!cpu.supports(Primitive::Matmul, DType::Float64));
        bool refused = false;
        try {
            backend::nn_kernels(cpu, Primitive::Recurrent, DType::Float16);
        } catch (const DeviceError& e) {
            refused = std::string(e.what()).find("recurrent on float16") != std::string::npos;
        }
        QVERIFY(refused);
        QCOMPARE(int(Primitive::Matmul) + 1,
                 int(Primitive::OptimizerStep)); // then the training table
    }

    void symmetricPaddingIsWhatPaddingBothSidesGives() {
        // 5x5 input, 3x3 kernel, padding 1: 5x5 output either way.
        backend::ConvGeometry g{1, 1, 5, 5, 1, 3, 3, 5, 5, 1, 1, 1, 1, 1, 1, 1};
        QVERIFY(g.symmetric_padding());
        QCOMPARE(g.phr(), int64_t(1));
        // padding='same' with a 2x2 kernel: 0 on the left, 1 on the right.
        backend::ConvGeometry same{1, 1, 5, 5, 1, 2, 2, 5, 5, 1, 1, 1, 1, 0, 0, 1};
        QVERIFY(!same.symmetric_padding());
        QCOMPARE(same.phr(), int64_t(1));
        // Stride 2 over 6 with a 3 kernel, padding 1: one row of padding goes unused (3 rows).
        backend::ConvGeometry strided{1, 1, 6, 6, 1, 3, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1};
        QVERIFY(strided.symmetric_padding());
        QCOMPARE(strided.phr(), int64_t(0));
        // A transposed convolution with output_padding 1 over stride 2: fine; 2 over 2 (allowed
        // with dilation 3) is not.
        backend::ConvGeometry tp{1, 1, 10, 10, 1, 3, 3, 5, 5, 2, 2, 1, 1, 1, 1, 1};
        QVERIFY(tp.symmetric_padding());
        backend::ConvGeometry tp2{1, 1, 15, 15, 1, 3, 3, 5, 5, 2, 2, 3, 3, 1, 1, 1};
        QVERIFY(!tp2.symmetric_padding());
    }

    void everyOpRunsOnItsDevicesTableWithTheCpusValues() {
        if (real_cuda_) QSKIP("a real CUDA device holds the slot: cudaMatchesTheCpu checks it");
        for (DType t : {DType::Float32, DType::Float64})
            for (const NnCase& c : nn_cases(t)) {
                counting_->calls.clear();
                const TensorList want = run_case(c, kCPU);
                QVERIFY2(counting_->calls.empty(), c.name);
                const TensorList got = run_case(c, kTestDevice);
                QVERIFY2(!counting_->calls.empty(), c.name);
                QCOMPARE(got.size(), want.size());
                for (size_t i = 0; i < got.size(); ++i) {
                    QCOMPARE(got[i].defined(), want[i].defined());
                    if (want[i].defined())
                        QVERIFY2(equal(got[i], want[i]),
                                 qPrintable(QString("%1 (%2): output %3 differs")
                                                .arg(c.name, dtype_name(t))
                                                .arg(i)));
                }
            }
        // Both backward passes of a convolution go through the fused entry.
        counting_->calls.clear();
        run_case(nn_cases(DType::Float32).front(), kTestDevice);
        QCOMPARE(counting_->calls["conv_forward"], 1);
        QCOMPARE(counting_->calls["conv_backward"], 1);
    }

    void aDeviceWithoutTheOpRefusesItByName() {
        if (real_cuda_) QSKIP("a real CUDA device holds the slot");
        const Tensor x = rnd({1, 2, 5, 5}, 40).to(kTestDevice);
        const Tensor w = rnd({3, 2, 3, 3}, 41).to(kTestDevice);
        test_device_->table = nullptr;
        CHECK_ERROR(DeviceError, F::conv2d(x, w),
                    "conv_forward on float32 is not supported by the Test backend (test:0): it "
                    "has no NN kernels in this build");
        CHECK_ERROR(DeviceError, F::max_pool2d(x, {}), "max_pool2d on float32");
        CHECK_ERROR(DeviceError, F::layer_norm(x, {5}), "layer_norm on float32");
        CHECK_ERROR(DeviceError, F::group_norm(x, 1), "group_norm on float32");
        CHECK_ERROR(DeviceError, F::batch_norm(x, {}, {}, {}, {}, true, 0.1, 1e-5),
                    "batch_norm on float32");
        test_device_->table = counting_;
        // Off the CPU, autocast asks no device for bfloat16 kernels: the float32 ones run on
        // operands rounded to bf16, so a device without them convolves with the same values.
        test_device_->refuse_bf16 = true;
        Tensor y;
        {
            AutocastGuard bf16;
            y = F::conv2d(x, w);
        }
        const Tensor rounded = F::conv2d(x.to(DType::BFloat16).to(DType::Float32),
                                         w.to(DType::BFloat16).to(DType::Float32));
        QCOMPARE(max((y - rounded).abs()).item(), 0.0);
        QVERIFY(max((y - F::conv2d(x, w)).abs()).item() > 0);
        test_device_->refuse_bf16 = false;
        // Operands on different devices: named before any kernel runs.
        CHECK_ERROR(DeviceError, F::conv2d(x, w.to(kCPU)), "conv2d", "same device");
    }

    // Float16 autocast on a device with half convolutions (CUDA's cuDNN): its kernels get
    // float32 operands asking for float16 products (ConvGeometry::f16) in every pass. A
    // device without them gets operands rounded to float16 instead; the CPU's kernels give
    // both the same values: the float32 convolution of the rounded operands, the output's
    // gradient rounded too.
    void float16AutocastAsksTheDeviceForHalfConvolutions() {
        if (real_cuda_)
            QSKIP("a real CUDA device holds the slot: float16TrainsOnTheDevice "
                  "(test_device_training) runs its half convolutions");
        const Tensor xg = rnd({2, 2, 5, 5}, 42), wg = rnd({3, 2, 3, 3}, 43), bg = rnd({3}, 44);
        const Tensor gy = rnd({2, 3, 3, 3}, 45).to(kTestDevice);
        TensorList results[2];
        int f16_calls[2] = {0, 0};
        for (int refuse = 0; refuse < 2; ++refuse) {
            test_device_->refuse_f16 = refuse == 1;
            counting_->calls.clear();
            Tensor xd = xg.to(kTestDevice).requires_grad_(true),
                   wd = wg.to(kTestDevice).requires_grad_(true),
                   bd = bg.to(kTestDevice).requires_grad_(true);
            Tensor out;
            {
                AutocastGuard half(DType::Float16);
                out = F::conv2d(xd, wd, bd);
            }
            (out * gy).sum().backward(); // out's gradient is gy
            results[refuse] = {out.detach().to(kCPU), xd.grad().to(kCPU), wd.grad().to(kCPU),
                               bd.grad().to(kCPU)};
            f16_calls[refuse] = counting_->calls["f16"];
        }
        test_device_->refuse_f16 = false;
        QCOMPARE(f16_calls[0], 2); // forward, and the fused backward
        QCOMPARE(f16_calls[1], 0);
        for (size_t i = 0; i < results[0].size(); ++i)
            QVERIFY2(equal(results[0][i], results[1][i]), qPrintable(QString::number(i)));
        const auto round = [](const Tensor& t) { return t.to(DType::Float16).to(DType::Float32); };
        QVERIFY(equal(results[0][0], F::conv2d(round(xg), round(wg), bg)));
        QVERIFY(max((results[0][0] - F::conv2d(xg, wg, bg)).abs()).item() > 0);
    }

    // Float16 autocast's convolutions on cuDNN's half kernels (tensor cores) against the CPU's
    // float32 convolution of the rounded operands: the device also rounds its outputs and the
    // weight gradient to float16 (as PyTorch's autocast does), so they agree to float16's
    // precision, not bit for bit.
    void cudaHalfConvolutionsMatchTheCpu() {
        if (!real_cuda_)
            QSKIP("no CUDA device: float16AutocastAsksTheDeviceForHalfConvolutions "
                  "checked what the device is asked");
        if (!backend::get(DeviceType::CUDA).supports(Primitive::ConvForward, DType::Float16))
            QSKIP("the CUDA backend was built without cuDNN: no half convolutions");
        const Tensor x = rnd({4, 16, 12, 12}, 50), w = rnd({32, 16, 3, 3}, 51), b = rnd({32}, 52);
        const Tensor gy = rnd({4, 32, 10, 10}, 53);
        TensorList results[2];
        const Device devices[2] = {kCPU, Device(DeviceType::CUDA, 0)};
        for (int d = 0; d < 2; ++d) {
            Tensor xd = x.to(devices[d]).requires_grad_(true),
                   wd = w.to(devices[d]).requires_grad_(true),
                   bd = b.to(devices[d]).requires_grad_(true);
            Tensor out;
            {
                AutocastGuard half(DType::Float16);
                out = F::conv2d(xd, wd, bd);
            }
            (out * gy.to(devices[d])).sum().backward();
            results[d] = {out.detach().to(kCPU), xd.grad().to(kCPU), wd.grad().to(kCPU),
                          bd.grad().to(kCPU)};
        }
        const char* names[] = {"output", "input gradient", "weight gradient", "bias gradient"};
        for (size_t i = 0; i < results[0].size(); ++i) {
            const double scale = max(results[0][i].abs()).item();
            const double diff = max((results[1][i] - results[0][i]).abs()).item();
            qInfo("%s: largest difference %.3g (of values up to %.3g)", names[i], diff, scale);
            QVERIFY2(diff <= 2e-3 * scale, names[i]);
        }
    }

    void cudaMatchesTheCpu() {
        if (!real_cuda_) QSKIP("no CUDA device: the test device above stood in for it");
        for (DType t : {DType::Float32, DType::Float64})
            for (const NnCase& c : nn_cases(t)) {
                const TensorList want = run_case(c, kCPU);
                TensorList got;
                try {
                    got = run_case(c, Device(DeviceType::CUDA, 0));
                } catch (const DeviceError& e) {
                    qInfo("%s on CUDA: refused (%s)", c.name, e.what());
                    continue;
                }
                const double tol = t == DType::Float64 ? 1e-10 : 1e-4;
                for (size_t i = 0; i < got.size(); ++i)
                    if (want[i].defined())
                        QVERIFY2(allclose(got[i], want[i], tol, tol),
                                 qPrintable(QString("%1 (%2): output %3 differs on CUDA")
                                                .arg(c.name, dtype_name(t))
                                                .arg(i)));
            }
    }
};

QTEST_GUILESS_MAIN(TestNnKernels)
#include "test_nn_kernels.moc"
