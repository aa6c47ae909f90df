#pragma once
// `myelin quantize` and the studio's Quantize action: a float checkpoint of a project made an
// int8 checkpoint (quant/quantized_model.h), which `myelin eval`, the studio's Evaluate tab and
// the ONNX exporter read like any other checkpoint.
#include <myelin/io/project.h>
#include <myelin/quant/quantized_model.h>

#include <filesystem>
#include <functional>
#include <optional>

namespace myelin::train {

struct QuantizeOptions {
    quant::Scheme scheme = quant::Scheme::Static;
    quant::ObserverKind observer = quant::ObserverKind::Histogram;
    int64_t calibration_batches = 32; // static: the training split's first batches
    int threads = 0;                  // 0: all
    // Quantization-aware training (static only): after calibration, this many epochs of the
    // project's training with every planned layer's weights, input and output fake-quantized
    // (straight-through estimator) and moving-average observers following the ranges; then the
    // same conversion as post-training quantization. 0: none.
    int64_t qat_epochs = 0;
    std::optional<double> qat_lr; // the optimizer's lr for those epochs (default: the project's)
    // Called after each calibration batch (done, of); may be empty.
    std::function<void(int64_t done, int64_t total)> progress;
};

struct QuantizeResult {
    quant::QuantizationPlan plan;
    int64_t float_bytes = 0; // the model's tensors before ...
    int64_t int8_bytes = 0;  // ... and after
};

// Reads `checkpoint` (a float checkpoint of `project`; its data paths resolve in
// `project_dir`), quantizes its model and writes the int8 checkpoint to `out` (atomically:
// nothing is left there on failure). The new checkpoint keeps the original's project, position
// and description, so it evaluates and exports without the project file. Throws Error for an
// already quantized checkpoint, a model with no layer to quantize, or a model not on the CPU.
QuantizeResult quantize_checkpoint(const io::Project& project,
                                   const std::filesystem::path& project_dir,
                                   const std::filesystem::path& checkpoint,
                                   const std::filesystem::path& out,
                                   const QuantizeOptions& options);

} // namespace myelin::train
