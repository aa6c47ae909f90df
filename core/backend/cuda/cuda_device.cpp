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
    cudaSetDevice(0);
    // Our kernels are compiled for compute 8.0 and 9.0 (+ PTX for newer): an older GPU cannot
    // run them, so it is listed as unusable rather than failing at the first kernel.
    bool any_old = false;
    for (const GpuInfo& gpu : status.devices)
        any_old |= gpu.compute_major < 8;
    if (any_old) {
        std::string names;
        for (const GpuInfo& gpu : status.devices)
            if (gpu.compute_major < 8) names += (names.empty() ? "" : ", ") + gpu.summary();
        status.reason = "this build's kernels need compute capability 8.0 or newer: " + names;
        status.devices.clear();
    }
    return status;
}

} // namespace myelin::backend::cuda
