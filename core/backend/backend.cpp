#include "backend/backend.h"

#include <myelin/error.h>

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
    return registry()[static_cast<int>(type)];
}

Backend& get(DeviceType type) {
    Backend* b = find(type);
    if (!b) {
        throw DeviceError(std::string("no ") + device_type_name(type) +
                          " backend is available in this process (" +
                          (type == DeviceType::CUDA ? "built without CUDA or no CUDA device found"
                                                    : "not registered") +
                          ")");
    }
    return *b;
}

void register_backend(DeviceType type, Backend* backend) {
    registry()[static_cast<int>(type)] = backend;
}

} // namespace myelin::backend
