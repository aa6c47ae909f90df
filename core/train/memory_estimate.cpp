// The memory pre-flight (train/memory_estimate.h). The factors below were measured: peak RSS of
// `myelin train --epochs 1` on the shipped examples against the parts (docs/architecture.md,
// "Memory pre-flight").
#include <myelin/train/memory_estimate.h>

#include <myelin/cuda.h>
#include <myelin/error.h>
#include <myelin/graph/analysis.h>
#include <myelin/spec/components.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace myelin::train {

namespace {

// The process before any model or data: libraries, their threads and buffers (a training run of
// the 769-parameter tabular example peaks at 26 MB).
constexpr int64_t kHostRuntimeBytes = 25'000'000;
// A CUDA context with cuBLAS and cuDNN workspaces (PyTorch's is of this size on recent GPUs;
// not measured here: no GPU has run this code yet, docs/gpu.md).
constexpr int64_t kCudaRuntimeBytes = 600'000'000;
// What backward, evaluation and the caching allocator add to the saved activations over a run:
// gradients of the same sizes flowing back, oneDNN's reorders and workspaces, the validation
// pass's blocks and freed blocks kept for reuse. Fitted to one-epoch runs of fashion_cnn (batch
// 128 and 512) and fashion_resnet (32 and 128), whose peaks hold 2.2 to 3.3 times the outputs.
constexpr double kBackwardFactor = 1.5;
// Batches the loader holds: each worker's prefetched batches and the one in use, twice (the
// stacked batch and its transformed copy).
constexpr int64_t kLoaderBatchesPerWorker = 2;

int64_t file_or_folder_bytes(const std::filesystem::path& path) {
    std::error_code error;
    if (std::filesystem::is_regular_file(path, error))
        return int64_t(std::filesystem::file_size(path, error));
    int64_t total = 0;
    if (std::filesystem::is_directory(path, error))
        for (const auto& entry : std::filesystem::recursive_directory_iterator(path, error))
            if (entry.is_regular_file(error)) total += int64_t(entry.file_size(error));
    return total;
}

int64_t data_bytes(const spec::DataSpec& data, const std::filesystem::path& dir) {
    const spec::DataSourceKind* kind =
        spec::find_component(spec::data_source_kinds(), data.source.kind);
    if (!kind) return 0;
    const graph::Attrs options = graph::with_defaults(kind->options, data.source.options);
    const spec::SourceContext context(kind->name, dir);
    try {
        if (kind->memory_bytes) return kind->memory_bytes(options, context);
        int64_t total = 0;
        for (const graph::AttrDesc& d : kind->options)
            if (d.path != graph::AttrDesc::Path::None && options.contains(d.name))
                total += file_or_folder_bytes(context.path(options, d.name.c_str()));
        return total;
    } catch (const Error&) {
        return 0; // a source that cannot say (a missing file): the run's own check will
    }
}

int optimizer_state_tensors(const spec::Choice& optimizer) {
    const spec::OptimizerKind* kind = spec::find_component(spec::optimizer_kinds(), optimizer.kind);
    if (!kind || !kind->state_tensors_per_parameter) return 2;
    return kind->state_tensors_per_parameter(
        graph::with_defaults(kind->options, optimizer.options));
}

// The host's MemAvailable (bytes), or 0 when /proc/meminfo cannot be read.
int64_t host_available() {
    std::ifstream meminfo("/proc/meminfo");
    std::string line;
    int64_t available = 0;
    while (std::getline(meminfo, line))
        if (line.rfind("MemAvailable:", 0) == 0) {
            std::istringstream(line.substr(13)) >> available;
            available *= 1024;
        }
    // A cgroup (v2) limit below it: what this process may use.
    std::ifstream max_file("/sys/fs/cgroup/memory.max"),
        current_file("/sys/fs/cgroup/memory.current");
    std::string max_text;
    int64_t current = 0;
    if (max_file >> max_text && max_text != "max" && current_file >> current) {
        const int64_t limit = std::stoll(max_text);
        if (limit > current) available = std::min(available, limit - current);
    }
    return available;
}

} // namespace

int64_t MemoryEstimate::device_bytes() const {
    int64_t total = 0;
    for (const MemoryPart& p : parts)
        total += p.on_device || device.is_cpu() ? p.bytes : 0;
    return total;
}

int64_t MemoryEstimate::host_only_bytes() const {
    if (device.is_cpu()) return 0;
    int64_t total = 0;
    for (const MemoryPart& p : parts)
        total += p.on_device ? 0 : p.bytes;
    return total;
}

MemoryEstimate estimate_training_memory(const io::Project& project,
                                        const std::filesystem::path& project_dir,
                                        int64_t batch_size, const Device& device) {
    if (batch_size < 1)
        throw Error("the batch size must be at least 1, got " + std::to_string(batch_size));
    const graph::Analysis analysis = graph::analyze(project.model, batch_size);
    if (!analysis.ok())
        throw Error("the model is invalid (" + std::to_string(analysis.error_count()) +
                    " error(s)): see `myelin check`");
    MemoryEstimate e;
    e.batch_size = batch_size;
    e.device = device;
    for (size_t i = 0; i < analysis.nodes.size(); ++i)
        if (analysis.nodes[i].params > e.largest_layer_params) {
            e.largest_layer_params = analysis.nodes[i].params;
            e.largest_layer = analysis.nodes[i].module_name;
        }
    constexpr int64_t kFloat = 4; // parameters, their gradients and state are float32
    const spec::TrainSpec& t = project.train;
    const int state = optimizer_state_tensors(t.optimizer);
    e.parts.push_back({"weights", analysis.total_params * kFloat, false, true});
    e.parts.push_back({"gradients", analysis.trainable_params * kFloat, false, true});
    e.parts.push_back(
        {"optimizer state (" + t.optimizer.kind + ": " + std::to_string(state) + " per parameter)",
         analysis.trainable_params * kFloat * state, false, true});
    const bool half = t.precision != spec::Precision::Float32;
    const double activations = double(analysis.total_activation_bytes) * (half ? 0.5 : 1.0);
    e.parts.push_back({"activations saved for backward", int64_t(activations), true, true});
    e.parts.push_back(
        {"backward and the allocator's cache", int64_t(activations * kBackwardFactor), true, true});
    // The loader's batches, as float32 examples of the Input's shape.
    int64_t example = kFloat;
    for (const graph::Node& n : project.model.nodes)
        if (n.kind == "Input" && n.attrs.contains("shape"))
            for (int64_t d : n.attrs.get_ints("shape"))
                example *= d;
    const int64_t workers = std::max<int64_t>(0, project.data.num_workers) + 1;
    e.parts.push_back(
        {"loader batches", workers * kLoaderBatchesPerWorker * batch_size * example, true, false});
    e.parts.push_back({"data (" + project.data.source.kind + ")",
                       data_bytes(project.data, project_dir), false, false});
    e.parts.push_back({"runtime", kHostRuntimeBytes, false, false});
    if (device.is_cuda())
        e.parts.push_back({"CUDA context and library workspaces", kCudaRuntimeBytes, false, true});
    return e;
}

MemoryAvailable available_memory(const Device& device) {
    if (device.is_cuda()) {
        const CudaStatus& cuda = cuda_status();
        for (const GpuInfo& gpu : cuda.devices)
            if (gpu.index == device.index)
                return {gpu.free_memory, device.str() + " (" + gpu.name + ")"};
        return {0, device.str() + " (not usable: " + cuda.reason + ")"};
    }
    return {host_available(), "this machine"};
}

std::string format_bytes(int64_t bytes) {
    return graph::format_si(double(bytes), "B"); // as the analysis summary writes sizes
}

std::vector<std::string> describe_memory(const MemoryEstimate& e) {
    std::vector<std::string> lines;
    size_t width = 5;
    for (const MemoryPart& p : e.parts)
        width = std::max(width, p.name.size());
    auto line = [&](const std::string& name, int64_t bytes) {
        std::string text = "  " + name + std::string(width - name.size() + 2, ' ');
        lines.push_back(text + format_bytes(bytes));
    };
    for (const MemoryPart& p : e.parts)
        line(p.name, p.bytes);
    if (e.device.is_cpu()) {
        line("total", e.total_bytes());
    } else {
        line("on " + e.device.str(), e.device_bytes());
        line("on the host", e.host_only_bytes());
    }
    return lines;
}

namespace {

int64_t need_of(const MemoryEstimate& e) {
    return e.device.is_cpu() ? e.total_bytes() : e.device_bytes();
}

int64_t largest_batch_within(const io::Project& project, const std::filesystem::path& dir,
                             const Device& device, int64_t budget) {
    // Every part is constant or linear in the batch size: two estimates give both.
    const int64_t one = need_of(estimate_training_memory(project, dir, 1, device));
    const int64_t two = need_of(estimate_training_memory(project, dir, 2, device));
    const int64_t per_example = std::max<int64_t>(1, two - one);
    const int64_t fixed = one - per_example;
    if (budget < fixed + per_example) return 0;
    return std::min<int64_t>(int64_t(1) << 20, (budget - fixed) / per_example);
}

} // namespace

MemoryVerdict check_training_memory(const MemoryEstimate& estimate,
                                    const MemoryAvailable& available, const io::Project& project,
                                    const std::filesystem::path& project_dir) {
    MemoryVerdict v;
    v.estimate = estimate;
    v.available = available;
    v.need = need_of(estimate);
    if (available.bytes <= 0) return v; // unknown: nothing to compare with
    v.largest_batch = largest_batch_within(project, project_dir, estimate.device,
                                           int64_t(0.9 * double(available.bytes)));
    const std::string need = format_bytes(v.need), have = format_bytes(available.bytes);
    std::string advice;
    if (v.largest_batch >= 1) {
        advice = "a batch size of " + std::to_string(v.largest_batch) + " fits";
    } else {
        const int64_t state =
            estimate.parts[0].bytes + estimate.parts[1].bytes + estimate.parts[2].bytes;
        advice = "no batch size fits: the weights, gradients and optimizer state alone need " +
                 format_bytes(state);
        if (!estimate.largest_layer.empty())
            advice += "; the largest layer, '" + estimate.largest_layer + "', has " +
                      std::to_string(estimate.largest_layer_params) + " parameters";
    }
    if (v.need > available.bytes) {
        v.fit = MemoryFit::DoesNotFit;
        v.message = "training at batch size " + std::to_string(estimate.batch_size) +
                    " needs about " + need + " but " + available.where + " has " + have +
                    " free: " + format_bytes(v.need - available.bytes) + " more than there is; " +
                    advice +
                    " (`myelin check PROJECT --batch-size N` "
                    "shows the parts)";
    } else if (double(v.need) > 0.8 * double(available.bytes)) {
        v.fit = MemoryFit::Close;
        v.message = "training at batch size " + std::to_string(estimate.batch_size) +
                    " needs about " + need + " of the " + have + " free on " + available.where +
                    ": other programs' memory could stop it; " + advice;
    }
    return v;
}

MemoryVerdict check_training_memory(const io::Project& project,
                                    const std::filesystem::path& project_dir, int64_t batch_size,
                                    const Device& device) {
    return check_training_memory(estimate_training_memory(project, project_dir, batch_size, device),
                                 available_memory(device), project, project_dir);
}

} // namespace myelin::train
