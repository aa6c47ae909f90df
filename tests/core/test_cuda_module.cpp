// The CUDA backend is a module the core loads only when CUDA is asked for
// (backend/cuda_loader.cpp): a process that computes on the CPU must not map the CUDA runtime's
// libraries (cuBLAS and cuDNN cost every process 0.25 s and 230 MB when they were linked into the
// core), and the first question about CUDA loads the module and answers with the runtime's own
// reason.
#include <myelin/cuda.h>
#include <myelin/device.h>
#include <myelin/tensor.h>

#include <QtTest>

#include <fstream>
#include <sstream>
#include <string>

using namespace myelin;

namespace {

std::string mapped_files() {
    std::ifstream maps("/proc/self/maps");
    std::stringstream text;
    text << maps.rdbuf();
    return text.str();
}

} // namespace

class TestCudaModule : public QObject {
    Q_OBJECT

  private slots:
    void cpuWorkLoadsNoCudaLibrary() {
        const Tensor a = ones({64, 64});
        const Tensor b = matmul(a, a).sum();
        QCOMPARE(b.item<float>(), 64.0f * 64.0f * 64.0f);
        const std::string maps = mapped_files();
        QVERIFY2(maps.find("libmyelin_cuda") == std::string::npos, "the CUDA module was loaded");
        QVERIFY2(maps.find("libcublas") == std::string::npos, "cuBLAS was loaded");
        QVERIFY2(maps.find("libcudnn") == std::string::npos, "cuDNN was loaded");
    }

    void askingAboutCudaLoadsTheModule() {
        const CudaStatus& status = cuda_status();
        if (!status.compiled) QSKIP("this build has no CUDA backend");
        QVERIFY2(status.build != "module not loaded", status.reason.c_str());
        QVERIFY(mapped_files().find("libmyelin_cuda.so") != std::string::npos);
        // Usable or not, the answer is the runtime's: devices, or a reason.
        QVERIFY(status.usable() || !status.reason.empty());
        qInfo("CUDA: %s",
              status.usable() ? status.devices.front().summary().c_str() : status.reason.c_str());
    }
};

QTEST_APPLESS_MAIN(TestCudaModule)
#include "test_cuda_module.moc"
