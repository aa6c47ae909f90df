#pragma once
// Training checkpoints: one safetensors file holding the model's state_dict under PyTorch's
// names (so `model.load_state_dict(...)` works on the file's tensors without the "optimizer."
// ones), the optimizer state under "optimizer.state.<param index>.<name>", and in __metadata__ the
// optimizer's groups, the scheduler state, the position in training (epoch, batch, step), the
// random generator state, early stopping and the project snapshot; and what makes the file
// self-describing (CheckpointDescription: each under its own __metadata__ key, as JSON text).
// Written atomically (temporary file, fsync, rename); reading validates the file (safetensors.h)
// and every metadata field.
#include <myelin/data/text.h>
#include <myelin/nn/module.h>
#include <myelin/optim/optimizer.h>
#include <myelin/optim/scheduler.h>
#include <myelin/spec/training.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace myelin::io {

inline constexpr const char* kCheckpointFormat = "myelin-checkpoint-1";

struct TrainingPosition {
    int64_t epoch = 0;          // the epoch to continue in
    int64_t batch_in_epoch = 0; // its next batch (0: the epoch starts fresh)
    int64_t step = 0;           // optimizer steps done
    // Data-parallel ranks that wrote it: batch_in_epoch counts each rank's batches, so a resume
    // with another world size maps it to its own (train/data_parallel.cpp).
    int64_t world_size = 1;
    bool operator==(const TrainingPosition& o) const = default;
};

// What a checkpoint says about the model so `myelin eval`, the exporters and the studio can use
// it without the project file. Every field is optional (older checkpoints have none of them).
// Metadata keys: project_dir, run_id, step, class_names, input_shape, preprocessing, metrics,
// metrics_step, text_encoding.
struct CheckpointDescription {
    std::string project_dir;              // absolute folder the project's data paths resolve in
    int64_t run_id = 0;                   // the run in the store; 0: not recorded
    std::vector<std::string> class_names; // classification: index -> name
    std::vector<int64_t> input_shape;     // one example after preprocessing (no batch dimension)
    // The deterministic transforms in order (Normalize with its mean and std filled in).
    std::vector<spec::Choice> preprocessing;
    // The latest epoch's metrics as the store names them ("train_loss", "val_accuracy"), and the
    // step they were measured at (the checkpoint's step unless it was written mid-epoch).
    std::vector<std::pair<std::string, double>> metrics;
    int64_t metrics_step = -1;
    // Text sources: the tokenisation and vocabulary the model was trained with, as JSON
    // {"level": "char"|"word", "lowercase": bool, "max_length": n, "vocabulary": [tokens]}.
    std::optional<data::TextEncoding> text_encoding;
    bool operator==(const CheckpointDescription& o) const = default;
};

struct Checkpoint {
    nn::StateDict model;
    std::string optimizer_kind; // "Adam"; empty: no optimizer state (e.g. weights only)
    optim::OptimizerStateDict optimizer;
    std::optional<optim::SchedulerState> scheduler;
    TrainingPosition position;
    std::string generator_state; // default_generator().get_state()
    // Early stopping: best value so far, epochs without improvement, updates.
    std::optional<double> best_metric;
    int64_t bad_epochs = 0;
    int64_t early_stopping_updates = 0;
    std::string project_json; // the project the run was started from
    // Loss scaling's state (optim::GradScaler::state_dict(), PyTorch's names: scale,
    // growth_factor, backoff_factor, growth_interval, _growth_tracker); empty without it.
    std::map<std::string, double> grad_scaler;
    CheckpointDescription description;
    // An int8 model (myelin quantize): the plan as JSON (quant/quantized_model.h reads it; empty
    // for a float checkpoint) and the names of the `model` tensors that are int8 values held as
    // UInt8 bytes (written with safetensors' "I8" tag).
    std::string quantization;
    std::vector<std::string> int8_tensors;
};

void save_checkpoint(const std::filesystem::path& path, const Checkpoint& checkpoint);
// Throws myelin::Error naming the file and the bad field.
Checkpoint load_checkpoint(const std::filesystem::path& path);

} // namespace myelin::io
