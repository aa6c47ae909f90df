#pragma once
// The layer registry: one description per node kind (name, category, ports, attributes, shape
// rule, parameter count, FLOPs, and how to build the nn::Module). The editor's palette and
// inspector, shape inference, validation, build() and the exporters all read it. A new layer
// kind is one entry here, plus its export forms (ONNX and PyTorch) in one record in
// export/forms_*.cpp: core stays free of ONNX, and tests/export/test_export_forms fails while a
// built-in kind has no forms.
#include <myelin/dims.h>
#include <myelin/dtype.h>
#include <myelin/graph/attributes.h>

#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace myelin::nn {
class Module;
}

namespace myelin::graph {

// What flows along an edge: the full shape (batch first) and the dtype.
struct TensorType {
    Dims shape;
    DType dtype = DType::Float32;
    bool operator==(const TensorType& other) const = default;
};
std::string to_string(const TensorType& type); // "[1, 32, 14, 14]" (+ " int64" when not f32)

enum class Category {
    InputOutput,
    LinearConv,
    Pooling,
    Normalization,
    Activation,
    Regularization,
    Merge,
    Reshape,
    Embedding,
};
const char* to_string(Category category); // "Linear & Convolution", ...

// The per-kind functions get the node's attributes with defaults filled in and checked.
using InferFn = std::function<TensorType(const Attrs&, std::span<const TensorType> inputs)>;
using ParamCountFn = std::function<int64_t(const Attrs&)>;
// Floating point operations of one forward pass (a multiply-add counts 2).
using FlopsFn = std::function<double(const Attrs&, std::span<const TensorType> inputs,
                                     const TensorType& output)>;
using BuildFn = std::function<std::shared_ptr<nn::Module>(const Attrs&)>;
// A kind with several output ports (LSTM: output, h_n, c_n) gives one type per port, port 0
// first; its module's forward_outputs() returns the tensors in the same order.
using InferOutputsFn =
    std::function<std::vector<TensorType>(const Attrs&, std::span<const TensorType> inputs)>;
using OutputNamesFn = std::function<std::vector<std::string>(const Attrs&)>;

struct LayerKind {
    std::string name; // "Conv2d": also the PyTorch class name where one exists
    Category category = Category::Activation;
    std::string doc;
    std::vector<AttrDesc> attrs;
    std::vector<std::string> summary_attrs; // shown on the node in the editor
    // Input ports: fixed names, or variadic (port count = the "num_inputs" attribute; ports
    // that have an entry here are named by it: LSTM's "input", "lengths").
    std::vector<std::string> inputs = {"input"};
    bool variadic = false;
    bool has_output = true; // false only for Output
    // Output ports (when has_output): fixed names, port 0 first, or a function of the
    // attributes when set. More than one needs infer_outputs.
    std::vector<std::string> outputs = {"output"};
    OutputNamesFn output_names;
    InferFn infer; // port 0's type; throws ShapeError / DTypeError with what was expected
    // Every port's type, for a kind with several output ports (infer stays port 0's rule).
    InferOutputsFn infer_outputs;
    ParamCountFn param_count;
    FlopsFn flops;
    BuildFn build; // null for Input and Output
    // Facts the editor's quick-fixes use (so they apply to plugin kinds too):
    // the attribute that must equal dimension 1 (channels) of input 0 ("in_channels"),
    std::string input_channels_attr;
    // the attribute that must equal the last dimension of a 2-d input 0 ("in_features"; a
    // feature map needs a Flatten first),
    std::string input_features_attr;
    // the inputs combine element by element (Add): feature maps must agree in channels.
    bool elementwise_inputs = false;
    // A recurrent layer (LSTM, GRU, RNN): the inspection's gradients-through-time view lists it.
    bool recurrent = false;
    // Where the kind comes from: empty for built-in kinds, else the plugin file that added it.
    std::string origin;

    const AttrDesc* attr(std::string_view attr_name) const;
    // The output port names for these attributes (empty when the kind has no output).
    std::vector<std::string> output_ports(const Attrs& attrs) const;
    // Every output port's type: infer_outputs when set, else {infer}.
    std::vector<TensorType> infer_all(const Attrs& attrs, std::span<const TensorType> inputs) const;
};

// Every kind: the built-in ones in palette order (by category, then a sensible order within
// it), then those registered later (plugins) in registration order. Records never move once
// registered, so pointers to them stay valid.
const std::deque<LayerKind>& layer_kinds();
// Throws myelin::Error naming the kind when it could not be registered: the name is empty or
// taken (saying by whom), it has no shape rule, no builder (unless it has no output), several
// output ports without infer_outputs, or an attribute's default does not fit its description.
void check_layer_kind(const LayerKind& kind);
// Adds a kind (a plugin's) after check_layer_kind; a missing param_count or flops counts 0.
// Register before editing or training starts: not synchronised with readers on other threads.
void register_layer_kind(LayerKind kind);
// nullptr when unknown.
const LayerKind* find_layer_kind(std::string_view name);
// Known kinds whose name resembles `name` (case, substring): "did you mean" lists.
std::vector<std::string> similar_layer_kinds(std::string_view name);
// Like find_layer_kind but throws myelin::Error listing close names.
const LayerKind& layer_kind(std::string_view name);

} // namespace myelin::graph
