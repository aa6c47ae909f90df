// Device names, CUDA discovery as the rest of the program sees it, and the usability check a run
// makes before it starts.
#include "backend/backend.h"

#include <myelin/cuda.h>
#include <myelin/error.h>

#ifdef MYELIN_WITH_CUDA_BACKEND
#include "backend/cuda_loader.h"
#endif

#include <charconv>
#include <cstdio>

namespace myelin {

Device parse_device(const std::string& text) {
    if (text == "cpu") return kCPU;
    if (text == "cuda") return cuda_device(0);
    if (text.rfind("cuda:", 0) == 0) {
        const char* first = text.data() + 5;
        const char* last = text.data() + text.size();
        int index = -1;
        const auto [end, ec] = std::from_chars(first, last, index);
        if (first != last && ec == std::errc() && end == last && index >= 0)
            return cuda_device(index);
    }
    throw Error("device '" + text + "': expected cpu, cuda or cuda:N (N = 0, 1, ...)");
}

std::string GpuInfo::summary() const {
    char memory[32];
    std::snprintf(memory, sizeof memory, "%.1f GiB", double(total_memory) / double(1 << 30));
    return name + " (compute " + std::to_string(compute_major) + "." +
           std::to_string(compute_minor) + ", " + memory + ")";
}

const CudaStatus& cuda_status() {
    static const CudaStatus status = [] {
#ifdef MYELIN_WITH_CUDA_BACKEND
        return backend::cuda_module::probe();
#else
        CudaStatus s;
        s.reason = "this build has no CUDA backend (built without the CUDA toolkit)";
        return s;
#endif
    }();
    return status;
}

std::string cuda_index_refusal(const Device& device, size_t count) {
    if (device.index < 0 || size_t(device.index) >= count)
        return "device " + device.str() + " does not exist: this machine has " +
               std::to_string(count) + " CUDA device(s)" +
               (count == 0   ? std::string()
                : count == 1 ? std::string(" (cuda:0)")
                             : " (cuda:0 to cuda:" + std::to_string(count - 1) + ")");
    if (device.index != 0)
        return "device " + device.str() + " is not usable: this version runs on " +
               cuda_device(0).str() + " only";
    return {};
}

void check_device_usable(const Device& device) {
    if (device.is_cpu()) return;
    const CudaStatus& status = cuda_status();
    if (!status.usable())
        throw DeviceError("device " + device.str() + " is not usable: " + status.reason);
    if (std::string refusal = cuda_index_refusal(device, status.devices.size()); !refusal.empty())
        throw DeviceError(refusal);
}

void check_training_device(const Device& device) {
    check_device_usable(device);
    check_training_backend(device);
}

void check_training_backend(const Device& device) {
    backend::Backend* b = backend::find(device.type);
    if (!b)
        throw DeviceError("training on " + device.str() + ": no " + device_type_name(device.type) +
                          " backend in this process (" + cuda_status().reason + ")");
    if (!b->host_addressable() && !b->train_kernels())
        throw DeviceError("training on " + device.str() + " is not available: the " +
                          b->info().name + " backend (" + b->info().details +
                          ") has no training kernels (optimizer steps, losses, dropout) in this "
                          "build");
}

std::vector<std::string> describe_devices() {
    const CudaStatus& status = cuda_status();
    std::vector<std::string> lines;
    if (!status.compiled) {
        lines.push_back("CUDA backend: not built (configured without the CUDA toolkit: none "
                        "found, or MYELIN_CUDA=OFF)");
        return lines;
    }
    lines.push_back("CUDA backend: compiled in (" + status.build + ")");
    if (!status.usable()) lines.push_back("  no usable CUDA device: " + status.reason);
    for (const GpuInfo& gpu : status.devices)
        lines.push_back("  cuda:" + std::to_string(gpu.index) + "  " + gpu.summary());
    return lines;
}

} // namespace myelin
