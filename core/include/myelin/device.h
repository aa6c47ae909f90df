#pragma once
// Devices and the compute backends registered for them.
#include <cstdint>
#include <string>
#include <vector>

namespace myelin {

enum class DeviceType : uint8_t { CPU = 0, CUDA = 1 };
inline constexpr int kNumDeviceTypes = 2;

struct Device {
    DeviceType type = DeviceType::CPU;
    int index = 0;

    constexpr Device() = default;
    constexpr Device(DeviceType t, int i = 0) : type(t), index(i) {}
    bool operator==(const Device&) const = default;
    bool is_cpu() const { return type == DeviceType::CPU; }
    bool is_cuda() const { return type == DeviceType::CUDA; }
    std::string str() const; // "cpu", "cuda:0"
};

inline constexpr Device kCPU{DeviceType::CPU, 0};

const char* device_type_name(DeviceType t);

// One registered backend as the studio's status bar and `myelin --version` show it.
struct BackendInfo {
    DeviceType type;
    std::string name;    // "CPU", "CUDA"
    std::string details; // "2 threads, AVX-512"
};

// Backends usable in this process (CPU always; CUDA only when built and a device is present).
std::vector<BackendInfo> available_backends();
// One line for status bars: "CPU (2 threads, AVX-512)" or "CPU (...) · CUDA (...)".
std::string backends_summary();
bool is_available(DeviceType t);

// Threads used by our loops, OpenBLAS and oneDNN (all share one OpenMP runtime).
void set_num_threads(int n);
int get_num_threads();

} // namespace myelin
