// GPU ranks over NCCL (issue 19): a CPU process never maps NCCL; start_nccl refuses what it
// cannot do by name; where a CUDA device is usable, a one-rank NCCL communicator reduces device
// buffers and the gradient buckets of parameters on the GPU. The GPU checks skip with the reason
// where NCCL was not found at configure time or no CUDA device is usable.
#include <myelin/cuda.h>
#include <myelin/dist/communicator.h>
#include <myelin/dist/nccl.h>
#include <myelin/dist/tensor_collectives.h>
#include <myelin/error.h>
#include <myelin/tensor.h>

#include <QFile>
#include <QtTest>

using namespace myelin;

namespace {

bool mapped(const char* library) {
    QFile maps("/proc/self/maps");
    return maps.open(QIODevice::ReadOnly) && maps.readAll().contains(library);
}

} // namespace

class TestDistNccl : public QObject {
    Q_OBJECT

  private slots:
    void cpuWorkMapsNoNccl();
    void refusalsNameTheReason();
    void oneRankReducesDeviceBuffers();
};

void TestDistNccl::cpuWorkMapsNoNccl() {
    auto comm = dist::make_single_process_communicator();
    Tensor p = ones({3}).requires_grad_();
    p.set_grad(full({3}, 2.0));
    dist::GradientBuckets({p}, 1 << 20).average(*comm);
    QVERIFY(comm->reaches(kCPU));
    QVERIFY(!comm->reaches(cuda_device(0)));
    QVERIFY(!mapped("libnccl"));
    QVERIFY(!mapped("libmyelin_nccl"));
}

void TestDistNccl::refusalsNameTheReason() {
    auto comm = dist::make_single_process_communicator();
    try {
        dist::start_nccl(comm, kCPU);
        QFAIL("NCCL started on the CPU");
    } catch (const Error& e) {
        QVERIFY2(std::string(e.what()).find("cpu is not one") != std::string::npos, e.what());
    }
    if (dist::nccl_built()) return;
    try {
        dist::start_nccl(comm, cuda_device(0));
        QFAIL("NCCL started in a build without it");
    } catch (const Error& e) {
        QVERIFY2(std::string(e.what()).find("has no NCCL") != std::string::npos, e.what());
    }
}

void TestDistNccl::oneRankReducesDeviceBuffers() {
    if (!dist::nccl_built())
        QSKIP("NCCL not found at configure time (needs the CUDA backend and nccl.h/libnccl)");
    if (!cuda_status().usable())
        QSKIP(qPrintable("no usable CUDA device: " + QString::fromStdString(cuda_status().reason)));
    auto comm = dist::start_nccl(dist::make_single_process_communicator(), cuda_device(0), 30);
    QVERIFY2(comm->backend().rfind("nccl ", 0) == 0, comm->backend().c_str());
    QVERIFY(comm->reaches(cuda_device(0)));
    QVERIFY(mapped("libmyelin_nccl"));
    Tensor t = full({5}, 3.0, TensorOptions(cuda_device(0)));
    comm->allreduce_sum(t.data_ptr(), 5, DType::Float32); // one rank: unchanged
    QCOMPARE(t.to(kCPU).to_vector<float>(), (std::vector<float>(5, 3.0f)));
    double host[2] = {1.5, 2.5}; // host memory goes over the communicator below
    comm->allreduce_sum(host, 2, DType::Float64);
    QCOMPARE(host[1], 2.5);
    Tensor p = ones({4}, TensorOptions(cuda_device(0))).requires_grad_();
    p.set_grad(full({4}, 2.0, TensorOptions(cuda_device(0))));
    dist::GradientBuckets buckets({p}, 1 << 20);
    buckets.average(*comm);
    QCOMPARE(p.grad().to(kCPU).to_vector<float>(), (std::vector<float>(4, 2.0f)));
    dist::broadcast_tensors({p}, *comm, 0);
    QCOMPARE(dist::first_divergent_tensor({p}, *comm), int64_t(-1));
}

QTEST_GUILESS_MAIN(TestDistNccl)
#include "test_dist_nccl.moc"
