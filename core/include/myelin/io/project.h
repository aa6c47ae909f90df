#pragma once
// The project file (*.myelin): one JSON document holding the model graph, the data spec, the
// training spec and a free "ui" object the studio owns. Loading checks every field and reports
// the file with line:column (malformed JSON) or the JSON path of the bad field (e.g.
// "model.nodes[3].attrs.kernel_size") and what was expected. Saving is deterministic, so
// save -> load -> save gives the same bytes.
#include <myelin/error.h>
#include <myelin/graph/attributes.h>
#include <myelin/graph/model_spec.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace myelin::io {

// The version this build writes; files with a larger format_version are refused.
inline constexpr int kProjectFormatVersion = 1;

// A named component with options, e.g. {"Adam", {lr: 0.001}}: loss, optimizer, scheduler, data
// source, transform. The kinds and their options are described in train/components.h.
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
    std::string mode = "min"; // "min" | "max"
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
    int64_t feature_maps_every = 500; // activations of one fixed validation sample; 0: off
    std::vector<std::string> layers;  // module names; empty: every layer
    bool operator==(const CaptureSpec& other) const = default;
};

struct TrainSpec {
    Choice loss{"CrossEntropyLoss", {}};
    Choice optimizer{"Adam", {}};
    std::optional<Choice> scheduler;
    std::string scheduler_interval = "epoch"; // "epoch" | "step": when scheduler.step() runs
    std::string plateau_metric = "val_loss";  // ReduceLROnPlateau's metric
    int64_t epochs = 10;
    int64_t accumulation_steps = 1;       // micro-batches per optimizer step
    std::optional<double> clip_grad_norm; // max total L2 norm
    std::optional<double> clip_grad_value;
    // "float32", or "bfloat16": forward passes under bf16 autocast (myelin/autocast.h).
    std::string precision = "float32";
    uint64_t seed = 0;
    int64_t validate_every_steps = 0; // 0: once per epoch
    int threads = 0;                  // 0: the machine's default
    EarlyStoppingSpec early_stopping;
    CheckpointSpec checkpoints;
    CaptureSpec capture;
    bool operator==(const TrainSpec& other) const = default;
};

struct Project {
    int format_version = kProjectFormatVersion;
    std::string name;
    std::string description;
    graph::ModelSpec model;
    DataSpec data;
    TrainSpec train;
    std::string ui_json = "{}"; // the studio's object, kept verbatim (compact JSON text)
    bool operator==(const Project& other) const = default;
};

// Every load error: where (file, line/column or JSON path) and what was expected.
class ProjectError : public Error {
  public:
    ProjectError(std::string file, std::string location, std::string message);
    const std::string& file() const { return file_; }
    const std::string& location() const { return location_; } // "12:5" or "model.nodes[3].kind"
    const std::string& reason() const { return reason_; }

  private:
    std::string file_, location_, reason_;
};

// Parse and check a project. `source_name` names the text in messages (usually its path).
Project parse_project(std::string_view json_text, const std::string& source_name = "<project>");
Project load_project(const std::filesystem::path& path);
std::string serialize_project(const Project& project);
// Writes to a temporary file in the same folder, then renames it over `path`: a failed save
// leaves the previous file intact.
void save_project(const Project& project, const std::filesystem::path& path);

} // namespace myelin::io
