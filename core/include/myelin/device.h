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

// A device allocator's state (the CPU's caching allocator for blocks of 64 KiB and more; smaller
// ones come from malloc and are not counted). Bytes are size-class bytes.
struct MemoryStats {
    int64_t allocated_bytes = 0;      // in use by tensors
    int64_t reserved_bytes = 0;       // taken from the system: in use + cached for reuse
    int64_t peak_allocated_bytes = 0; // since the start or reset_peak_memory_stats()
    int64_t peak_reserved_bytes = 0;
    int64_t cached_blocks = 0;
    int64_t requests = 0;             // allocations through the cache
    int64_t cache_hits = 0;           // of those, served from it
    int64_t provider_allocations = 0; // of those, taken from the system
};
MemoryStats memory_stats(DeviceType t = DeviceType::CPU);
void reset_peak_memory_stats(DeviceType t = DeviceType::CPU);
// Returns cached, unused blocks to the system (PyTorch's torch.cuda.empty_cache()).
void empty_cache(DeviceType t = DeviceType::CPU);

// Threads used by our loops, OpenBLAS and oneDNN (all share one OpenMP runtime).
void set_num_threads(int n);
int get_num_threads();

// Denormal floats (below FLT_MIN / DBL_MIN) flushed to zero, as torch.set_flush_denormal(): on,
// such results become 0 and such inputs read as 0 (x86's FTZ and DAZ) on the calling thread and
// its OpenMP team. Off by default, as in PyTorch, so results follow IEEE exactly; on, a float
// multiply or divide that meets a denormal no longer takes the CPU's slow path (about 20x per
// vector on a Xeon; Adam's first moment of a gradient that stays 0 decays through denormals).
// Returns false, changing nothing, where the CPU has no such mode.
bool set_flush_denormal(bool on);
bool flush_denormal(); // the calling thread's mode

} // namespace myelin
