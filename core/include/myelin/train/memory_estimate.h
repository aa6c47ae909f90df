#pragma once
// The memory pre-flight: what training a project needs, estimated from its graph, batch size,
// precision, optimizer and data source before anything is allocated or recorded, against what
// the chosen device has. `myelin check` prints it, `myelin train` and the studio's Train refuse a
// run that cannot fit (saying by how much and which batch size would), and the Model Summary
// shows it.
//
// The parts: weights, gradients (trainable parameters), optimizer state (the optimizer record's
// state_tensors_per_parameter), activations at the batch size (graph::analyze's output sizes,
// halved under 16-bit autocast) and what backward and the allocator's cache add to them, the data
// as its source holds it, the loader's batches in flight, and the runtime (libraries, threads).
// The factors were measured against peak RSS of the shipped examples (docs/architecture.md).
#include <myelin/device.h>
#include <myelin/io/project.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace myelin::train {

struct MemoryPart {
    std::string name;       // "weights", "optimizer state (Adam: 2 per parameter)", ...
    int64_t bytes = 0;      // at the estimate's batch size
    bool per_batch = false; // grows with the batch size (activations, loader batches)
    bool on_device = true;  // false: host memory whatever the device (data, runtime)
};

struct MemoryEstimate {
    int64_t batch_size = 0;
    Device device;
    std::vector<MemoryPart> parts;
    // The module and parameter count of the largest layer, for the advice.
    std::string largest_layer;
    int64_t largest_layer_params = 0;

    // On the device (host memory for the CPU), and on the host besides (for a GPU run).
    int64_t device_bytes() const;
    int64_t host_only_bytes() const;
    int64_t total_bytes() const { return device_bytes() + host_only_bytes(); }
};

// Throws Error when the model is invalid or the project's device is not known. `project_dir`
// resolves the data source's paths.
MemoryEstimate estimate_training_memory(const io::Project& project,
                                        const std::filesystem::path& project_dir,
                                        int64_t batch_size, const Device& device);

// What the device has free now: the host's available memory (MemAvailable, or less when the
// process's cgroup allows less); a GPU's free memory as discovery read it. `where` names it
// ("host", "cuda:0 (NVIDIA H200)").
struct MemoryAvailable {
    int64_t bytes = 0;
    std::string where;
};
MemoryAvailable available_memory(const Device& device);

enum class MemoryFit {
    Fits,
    Close,     // needs more than 80% of what is free: warned
    DoesNotFit // needs more than what is free: refused
};

struct MemoryVerdict {
    MemoryFit fit = MemoryFit::Fits;
    MemoryEstimate estimate;
    MemoryAvailable available;
    int64_t need = 0; // what is compared with `available` (device bytes, or all on the CPU)
    // The largest batch size whose estimate stays within 90% of what is free (capped at
    // 2^20); 0 when not even one example fits.
    int64_t largest_batch = 0;
    // One paragraph: need against free, by how much, and what would fit. Empty when it fits.
    std::string message;
};
MemoryVerdict check_training_memory(const io::Project& project,
                                    const std::filesystem::path& project_dir, int64_t batch_size,
                                    const Device& device);
// The same against a given amount of free memory (tests; what-if).
MemoryVerdict check_training_memory(const MemoryEstimate& estimate,
                                    const MemoryAvailable& available, const io::Project& project,
                                    const std::filesystem::path& project_dir);

// "1.20 GB", "55.00 MB", "812.00 kB" (graph::format_si: decimal units, as the summary).
std::string format_bytes(int64_t bytes);
// The estimate as lines "  weights  1.7 MB", then "  total  ..." (for `myelin check`).
std::vector<std::string> describe_memory(const MemoryEstimate& estimate);

} // namespace myelin::train
