#pragma once
// CUDA as the rest of the program sees it: whether the backend is compiled in, each usable
// device or why there is none, device names ("cpu", "cuda:N") and the checks a run makes before
// it starts. No CUDA header here: this compiles (and answers) in builds without the toolkit.
#include <myelin/device.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace myelin {

// One CUDA device as discovery found it.
struct GpuInfo {
    int index = 0;
    std::string name;      // "NVIDIA H100 80GB HBM3"
    int compute_major = 0; // compute capability, e.g. 9.0
    int compute_minor = 0;
    int64_t total_memory = 0; // bytes
    int64_t free_memory = 0;  // bytes, at discovery
    int multiprocessors = 0;
    std::string summary() const; // "NVIDIA H100 80GB HBM3 (compute 9.0, 79.1 GiB)"
};

// What this process can do with CUDA. Probed once, on first use; the reason is the runtime's
// own words ("CUDA driver version is insufficient for CUDA runtime version ...").
struct CudaStatus {
    bool compiled = false; // the CUDA backend is built into this library
    std::string build;     // "CUDA 13.0, architectures 80-real;90-real;90-virtual"
    std::vector<GpuInfo> devices;
    std::string reason; // why no device is usable; empty when devices is not empty
    bool usable() const { return !devices.empty(); }
};
const CudaStatus& cuda_status();

inline Device cuda_device(int index = 0) {
    return Device(DeviceType::CUDA, index);
}
// "cpu", "cuda" (= cuda:0) or "cuda:N"; throws Error naming the text otherwise.
Device parse_device(const std::string& text);

// Throws DeviceError naming the device and why it cannot be used ("device cuda:0 is not usable:
// <reason>"); returns for the CPU and for cuda:0 when it is present.
void check_device_usable(const Device& device);
// Why CUDA device `device` cannot be used where `count` CUDA devices are usable, or "" when it
// can: it must exist, and it must be cuda:0, the one device Tensor::to moves tensors to in this
// version (so the second GPU is refused where it is offered, not when training starts).
std::string cuda_index_refusal(const Device& device, size_t count);
// What a training run checks before anything is built: the device is usable, and training can
// run there (check_training_backend).
void check_training_device(const Device& device);
// The registered backend's side alone (what the Trainer checks): one is registered for the
// device, and it has the training kernels (optimizer steps, class losses, dropout, gradient
// norms) or its memory is host-addressable.
void check_training_backend(const Device& device);

// Lines for `myelin --version` and the studio: the CUDA backend (compiled in or not, and why),
// then each device or the reason no device is usable.
std::vector<std::string> describe_devices();

} // namespace myelin
