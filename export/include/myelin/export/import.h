#pragma once
// Bringing a model into Myelin: an ONNX file (opset 13 to 17, as PyTorch's torch.onnx.export
// writes it, or Myelin's own exporter) becomes a project whose graph holds only Myelin's
// ordinary layer kinds, and a checkpoint of the file's weights under the state_dict names of the
// built model ("conv1.weight", "bn1.running_mean"), ready for `myelin train --init-weights` and
// for fine-tuning (replace the head, freeze the backbone, per-layer learning rates).
//
// Each ONNX node becomes one layer (Conv -> Conv2d, Gemm -> Linear, ...), or folds into one
// (a MatMul's bias Add, x * Sigmoid(x) as SiLU, a Pad in front of a Conv), or disappears
// (Identity, Dropout, constant shape arithmetic). An op with no Myelin layer is refused naming
// the node, its op type and its position in graph.node, and nothing is written. Shapes are
// checked with Myelin's own shape rules as the graph is built, and the result must pass
// graph::analyze.
#include <myelin/io/project.h>
#include <myelin/nn/module.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace myelin::exporters {

struct ImportedModel {
    io::Project project; // the model laid out top to bottom; data and training at defaults
    // The built model's whole state_dict in its order: the file's weights, and what ONNX does
    // not hold at its initial value (BatchNorm's num_batches_tracked).
    nn::StateDict weights;
    // What the import changed that a person may want to know, one line each ("node 'drop'
    // (Dropout): left out: it is the identity in evaluation").
    std::vector<std::string> notes;
};

// `bytes`: a serialized onnx.ModelProto; `source_name` names it in messages (its path) and
// gives the project's name (its stem). Throws myelin::Error.
ImportedModel import_onnx(std::string_view bytes, const std::string& source_name = "<onnx>");
ImportedModel import_onnx_file(const std::filesystem::path& file);

// `project` with the extension .safetensors: where `myelin import` puts the weights by default.
std::filesystem::path default_import_checkpoint(const std::filesystem::path& project);

// Writes the project file and the checkpoint (the weights with the project and input shape in
// its metadata, as a training checkpoint at step 0 without optimizer state). The project names
// the checkpoint as its training.init_weights, so its runs start from the imported weights. The checkpoint is
// written under a temporary name, then the project (atomically), then the checkpoint renamed
// into place; a failure removes what this call wrote, so no half-written pair is left (only a
// failure of that last rename leaves a replaced project file replaced).
void write_imported_model(const ImportedModel& model, const std::filesystem::path& project,
                          const std::filesystem::path& checkpoint);

} // namespace myelin::exporters
