// Device discovery through the CUDA runtime. A machine without a driver or a GPU is the normal
// case here: every failure becomes the reason string, in the runtime's own words.
#include "backend/cuda/cuda_probe.h"

#include <cuda_runtime.h>

#include <string>

namespace myelin::backend::cuda {

namespace {
std::string runtime_error_text(cudaError_t error) {
    return std::string(cudaGetErrorString(error)) + " (" + cudaGetErrorName(error) + ")";
}
} // namespace

CudaStatus probe() {
    CudaStatus status;
    status.compiled = true;
    status.build = "CUDA " + std::to_string(CUDART_VERSION / 1000) + "." +
                   std::to_string(CUDART_VERSION % 1000 / 10) + ", architectures " +
                   MYELIN_CUDA_ARCHITECTURES;
    int count = 0;
    if (const cudaError_t error = cudaGetDeviceCount(&count); error != cudaSuccess) {
        status.reason = runtime_error_text(error);
        return status;
    }
    if (count == 0) {
        status.reason = "the CUDA runtime found no device";
        return status;
    }
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp props{};
        if (const cudaError_t error = cudaGetDeviceProperties(&props, i); error != cudaSuccess) {
            status.reason = "cuda:" + std::to_string(i) + ": " + runtime_error_text(error);
            status.devices.clear();
            return status;
        }
        GpuInfo gpu;
        gpu.index = i;
        gpu.name = props.name;
        gpu.compute_major = props.major;
        gpu.compute_minor = props.minor;
        gpu.total_memory = int64_t(props.totalGlobalMem);
        gpu.multiprocessors = props.multiProcessorCount;
        size_t free_bytes = 0, total_bytes = 0;
        if (cudaSetDevice(i) == cudaSuccess &&
            cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess)
            gpu.free_memory = int64_t(free_bytes);
        status.devices.push_back(gpu);
    }
    if (const cudaError_t error = cudaSetDevice(0); error != cudaSuccess) {
        status.reason = "cuda:0: " + runtime_error_text(error);
        status.devices.clear();
        return status;
    }
    // The kernels are compiled for the architectures of MYELIN_CUDA_ARCHITECTURES, the oldest
    // being MYELIN_CUDA_MIN_COMPUTE (80: compute 8.0): an older GPU cannot run them, so it is
    // listed as unusable rather than failing at the first kernel.
    constexpr int kMinCompute = MYELIN_CUDA_MIN_COMPUTE;
    std::string names;
    for (const GpuInfo& gpu : status.devices)
        if (gpu.compute_major * 10 + gpu.compute_minor < kMinCompute)
            names += (names.empty() ? "" : ", ") + gpu.summary();
    if (!names.empty()) {
        status.reason = "this build's kernels need compute capability " +
                        std::to_string(kMinCompute / 10) + "." + std::to_string(kMinCompute % 10) +
                        " or newer: " + names;
        status.devices.clear();
    }
    return status;
}

} // namespace myelin::backend::cuda
