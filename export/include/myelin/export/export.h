#pragma once
// Exporting a trained model out of Myelin: ONNX (opset 17, for runtimes), a PyTorch .py file (the
// model's code with Myelin's state_dict names and a checkpoint loader), and a self-describing
// safetensors file (weights and what the model needs to be used: project, class names, input
// shape, preprocessing, run, step and metrics). A library of its own (myelin_export): the ONNX
// writer needs Debian's libonnx, which core must not depend on.
//
// Every export checks before it writes and writes a temporary file beside the target that is
// renamed over it only when complete: a failed export leaves nothing behind (an existing file at
// the target stays as it was). Errors are myelin::Error naming the layer, file or field.
#include <myelin/io/checkpoint.h>
#include <myelin/io/project.h>
#include <myelin/nn/module.h>
#include <myelin/quant/quantized_model.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace myelin::train {
struct Evaluation;
}

namespace myelin::exporters {

// A project's model with trained weights: what every format is written from.
struct ExportSource {
    io::Project project;
    nn::StateDict weights; // the model's state_dict (no optimizer state)
    io::CheckpointDescription description;
    io::TrainingPosition position;    // epoch, batch and step the weights were saved at
    std::filesystem::path checkpoint; // where the weights came from (empty: in memory)
    // An int8 checkpoint (myelin quantize): its plan with every layer's parameters read. The
    // weights are then the float values the int8 ones stand for (quant::dequantized_state), so
    // the float model's checks apply; the ONNX writer puts the int8 values back (QDQ).
    std::optional<quant::QuantizationPlan> quantization;
};

// Loads `checkpoint` with `project` (nullopt: the project the checkpoint carries) and checks that
// the weights fit the project's model (names and shapes; the message lists what does not fit).
// With a project, a plain safetensors file of state_dict tensors (no Myelin metadata) works too.
ExportSource load_export_source(const std::optional<io::Project>& project,
                                const std::filesystem::path& checkpoint);
// The same check for a source built in memory (tests, the studio): throws when the weights do
// not fit the project's model.
void check_export_source(const ExportSource& source);

enum class Format { Onnx, PyTorch, Safetensors };
// "onnx", "pytorch", "safetensors"; nullopt otherwise.
std::optional<Format> parse_format(std::string_view name);
const char* format_name(Format format);
// The usual file name ending: ".onnx", ".py", ".safetensors".
const char* format_extension(Format format);

struct OnnxOptions {
    int64_t opset = 17;
    std::string batch_dim = "batch"; // the symbolic batch dimension's name
};

// The ONNX model as serialized bytes, after onnx::checker::check_model and shape inference
// (whose inferred output shape must equal Myelin's). Throws naming the first layer that cannot
// be expressed ("layer 'pad' (Conv2d): padding_mode 'circular' has no ONNX opset 17 form").
std::string onnx_model_bytes(const ExportSource& source, const OnnxOptions& options = {});
void export_onnx(const ExportSource& source, const std::filesystem::path& out,
                 const OnnxOptions& options = {});
// What a runtime known to fall short cannot run in this model's ONNX file, one line per layer
// ("layer 'ln' (LayerNorm): OpenCV 4.6's DNN module has no LayerNormalization"); empty when
// OpenCV 4.6 (Debian 12's) runs it all. Files are correct ONNX either way; the studio's dialog
// and `myelin export` show these lines.
std::vector<std::string> onnx_runtime_notes(const ExportSource& source);
// Why `kind` cannot be exported to ONNX at all (empty: it can, for some attributes at least).
std::string onnx_unsupported_kind(std::string_view kind);

// One readable Python file: an nn.Module with exactly Myelin's state_dict names, the input shape,
// class names and preprocessing as constants, and load_checkpoint(path) reading safetensors with
// torch, json and struct only.
std::string pytorch_code(const ExportSource& source);
void export_pytorch(const ExportSource& source, const std::filesystem::path& out);

// The weights (no optimizer state) with the checkpoint's training position, project and
// description in __metadata__: `myelin eval --checkpoint FILE` opens it without the project.
// Beside it goes its model card, `out` with the extension .md (model_card_path).
void export_safetensors(const ExportSource& source, const std::filesystem::path& out);
// A Markdown page: architecture table, parameters, FLOPs, input and preprocessing, classes, data
// and training settings, run and step, metrics at that step.
// With `evaluation`, a section of test-set metrics, the confusion matrix and per-class scores;
// without, the card says the model was not evaluated and why (`not_evaluated`).
std::string model_card(const ExportSource& source, const train::Evaluation* evaluation = nullptr,
                       const std::string& not_evaluated = {});
std::filesystem::path model_card_path(const std::filesystem::path& safetensors);

// Dispatches on `format`.
void export_model(const ExportSource& source, Format format, const std::filesystem::path& out);

// Writes `bytes` to `out` through a temporary file in the same folder, renamed over `out` when
// complete; on failure nothing is left and the message names `out`.
void write_file_atomically(const std::filesystem::path& out, std::string_view bytes);

} // namespace myelin::exporters
