#pragma once
// The specs a project holds besides its model graph: where the data comes from and how it is
// batched (DataSpec), and how the model is trained (TrainSpec), each choosable part a Choice of
// a kind described in spec/components.h. Plain values: io reads and writes them, train consumes
// them, the studio edits them.
#include <myelin/graph/attributes.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace myelin::spec {

// Settings with a fixed set of values: an enum each, and one table of the words the project file,
// the CLI and the studio use for them. setting_names(E{}) is the table; name_of and setting_named
// read it.
enum class Precision : uint8_t {
    Float32,  // plain float32
    BFloat16, // forward passes under bf16 autocast (myelin/autocast.h)
    Float16,  // float16 autocast with loss scaling (optim/grad_scaler.h), on a CUDA device only
};
enum class ScheduleInterval : uint8_t { Epoch, Step }; // when scheduler.step() runs
enum class MetricMode : uint8_t { Min, Max };          // whether lower or higher is better

template <class E> struct SettingName {
    E value;
    const char* name;
};
inline constexpr std::array<SettingName<Precision>, 3> kPrecisionNames{
    {{Precision::Float32, "float32"},
     {Precision::BFloat16, "bfloat16"},
     {Precision::Float16, "float16"}}};
inline constexpr std::array<SettingName<ScheduleInterval>, 2> kScheduleIntervalNames{
    {{ScheduleInterval::Epoch, "epoch"}, {ScheduleInterval::Step, "step"}}};
inline constexpr std::array<SettingName<MetricMode>, 2> kMetricModeNames{
    {{MetricMode::Min, "min"}, {MetricMode::Max, "max"}}};
constexpr const auto& setting_names(Precision) {
    return kPrecisionNames;
}
constexpr const auto& setting_names(ScheduleInterval) {
    return kScheduleIntervalNames;
}
constexpr const auto& setting_names(MetricMode) {
    return kMetricModeNames;
}

template <class E> const char* name_of(E value) {
    for (const auto& n : setting_names(E{}))
        if (n.value == value) return n.name;
    return "?";
}
// The value named `name`; none when no value is.
template <class E> std::optional<E> setting_named(std::string_view name) {
    for (const auto& n : setting_names(E{}))
        if (name == n.name) return n.value;
    return std::nullopt;
}
// Every word of E, in the table's order.
template <class E> std::vector<std::string> setting_words() {
    std::vector<std::string> words;
    for (const auto& n : setting_names(E{}))
        words.emplace_back(n.name);
    return words;
}

// A named component with options, e.g. {"Adam", {lr: 0.001}}: loss, optimizer, scheduler, data
// source, transform. The kinds and their options are described in spec/components.h.
struct Choice {
    std::string kind;
    graph::Attrs options;
    bool operator==(const Choice& other) const = default;
};

struct DataSpec {
    // Where the examples come from: kind "fashion-mnist", "idx", "csv", "npy" or "image-folder"
    // with its options (paths relative to the project file's folder).
    Choice source{"fashion-mnist", {}};
    double validation_fraction = 0.1; // split off the training set (seeded)
    std::vector<Choice> transforms;   // applied in order on the loader threads (training set)
    int64_t batch_size = 128;
    int num_workers = 2;
    bool shuffle = true;
    bool drop_last = false;
    bool operator==(const DataSpec& other) const = default;
};

struct EarlyStoppingSpec {
    bool enabled = false;
    std::string metric = "val_loss";
    MetricMode mode = MetricMode::Min;
    int64_t patience = 5;
    double min_delta = 0.0;
    bool operator==(const EarlyStoppingSpec& other) const = default;
};

struct CheckpointSpec {
    int64_t every_epochs = 1; // 0: only at the end (and on stop)
    bool keep_best = true;    // also keep the best by the early-stopping metric
    int64_t keep_last = 2;    // older periodic checkpoints are deleted
    bool operator==(const CheckpointSpec& other) const = default;
};

// What the trainer captures with module hooks (and how often, in optimizer steps).
struct CaptureSpec {
    bool layer_norms = true;          // grad norm, weight norm, update/weight ratio per layer
    int64_t layer_norms_every = 1;    // every N steps
    int64_t summaries_every = 100;    // activation + gradient summaries and histograms; 0: off
    int64_t feature_maps_every = 500; // activations of 4 fixed validation examples; 0: off
    std::vector<std::string> layers;  // module names; empty: every layer
    bool operator==(const CaptureSpec& other) const = default;
};

// Data-parallel runs (issue 19; a single process ignores it). Written only when not default.
struct DistributedSpec {
    // BatchNorm's batch statistics (and its backward's reductions) over every rank's examples,
    // as torch.nn.SyncBatchNorm; off: each rank normalises by its own batch (PyTorch DDP's).
    bool sync_batchnorm = false;
    bool operator==(const DistributedSpec& other) const = default;
};

struct TrainSpec {
    Choice loss{"CrossEntropyLoss", {}};
    Choice optimizer{"Adam", {}};
    std::optional<Choice> scheduler;
    ScheduleInterval scheduler_interval = ScheduleInterval::Epoch;
    std::string plateau_metric = "val_loss"; // ReduceLROnPlateau's metric
    int64_t epochs = 10;
    int64_t accumulation_steps = 1;       // micro-batches per optimizer step
    std::optional<double> clip_grad_norm; // max total L2 norm
    std::optional<double> clip_grad_value;
    Precision precision = Precision::Float32;
    // Where training runs: "cpu", "cuda" (= cuda:0) or "cuda:N". The file holds the key only when
    // it is not "cpu". The CLI's --device overrides it.
    std::string device = "cpu";
    uint64_t seed = 0;
    int64_t validate_every_steps = 0; // 0: once per epoch
    int threads = 0;                  // 0: the machine's default
    // Denormals flushed to zero while training (set_flush_denormal in myelin/device.h); off, as
    // PyTorch's default. The file holds the key only when on. The CLI's --flush-denormal sets it.
    bool flush_denormal = false;
    // On a GPU: deterministic kernels only, so a rerun of the project is bit-identical (cuDNN's
    // deterministic convolution algorithms, an ordered scatter_add; as
    // torch.use_deterministic_algorithms), and TF32 tensor-core math in float32 products
    // (faster, about 1e-3 relative; as torch.backends.cuda.matmul.allow_tf32). Both off, as
    // PyTorch's defaults for matmul; the CPU is always deterministic and has no TF32. The file
    // holds each key only when on.
    bool deterministic = false;
    bool allow_tf32 = false;
    // Weights a fresh run starts from (a safetensors state_dict: an imported model's, a
    // checkpoint's), relative to the project's folder; names or shapes that do not fit keep their
    // initialisation, with a warning (a replaced head). Empty: the layers' own initialisation.
    // A resume or fork starts from its checkpoint instead. The CLI's --init-weights overrides it.
    std::string init_weights;
    EarlyStoppingSpec early_stopping;
    CheckpointSpec checkpoints;
    CaptureSpec capture;
    DistributedSpec distributed;
    bool operator==(const TrainSpec& other) const = default;
};

} // namespace myelin::spec
