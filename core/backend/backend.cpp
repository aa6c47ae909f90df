#include "backend/backend.h"

#include <myelin/cuda.h>
#include <myelin/error.h>

#ifdef MYELIN_WITH_CUDA_BACKEND
#include "backend/cuda_loader.h"
#endif

#include <array>
#include <string>

namespace myelin::backend {
namespace {
std::array<Backend*, kNumDeviceTypes>& registry() {
    static std::array<Backend*, kNumDeviceTypes> backends{};
    return backends;
}
} // namespace

Backend* find(DeviceType type) {
    extern void ensure_cpu_registered();
    ensure_cpu_registered();
#ifdef MYELIN_WITH_CUDA_BACKEND
    // Probing the driver costs a moment: only when someone asks for CUDA.
    if (type == DeviceType::CUDA) cuda_module::ensure_registered();
#endif
    return registry()[static_cast<int>(type)];
}

Backend& get(DeviceType type) {
    Backend* b = find(type);
    if (!b) {
        throw DeviceError(std::string("no ") + device_type_name(type) +
                          " backend is available in this process (" +
                          (type == DeviceType::CUDA ? cuda_status().reason : "not registered") +
                          ")");
    }
    return *b;
}

void Backend::require(Primitive p, DType dtype) const {
    if (!supports(p, dtype))
        throw DeviceError(std::string(primitive_name(p)) + " on " + dtype_name(dtype) +
                          " is not supported by the " + info().name + " backend (" +
                          info().details + ")");
}

void register_backend(DeviceType type, Backend* backend) {
    registry()[static_cast<int>(type)] = backend;
}

} // namespace myelin::backend
