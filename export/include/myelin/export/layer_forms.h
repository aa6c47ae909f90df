#pragma once
// A layer kind's export forms, in one record per kind: its ONNX lowering (opset 17 nodes) and
// its PyTorch form (the nn.Module constructor, the forward expression and the Python
// definitions that expression needs). The ONNX writer and the PyTorch code writer both find a
// kind's record here by its name; a kind that cannot be exported has a refusal that says why
// instead. The built-in kinds' records are in export/forms_*.cpp, next to each other by family;
// a plugin adds its kinds' records through its second entry point (MYELIN_PLUGIN_EXPORT_FORMS
// below), so core and its plugin interface stay free of ONNX.
//
// The ONNX side is written against OnnxGraph, a builder that hides ONNX's protobuf types.
#include <myelin/graph/model_spec.h>
#include <myelin/graph/registry.h>
#include <myelin/tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace myelin::exporters {

// --- ONNX ---------------------------------------------------------------------------------------

// An ONNX attribute value: int, float, string, or a list of ints or strings.
struct OnnxAttr {
    std::string name;
    enum class Type { Int, Float, String, Ints, Strings } type = Type::Int;
    int64_t i = 0;
    float f = 0;
    std::string s;
    std::vector<int64_t> ints;
    std::vector<std::string> strings;
};
OnnxAttr attr_int(std::string name, int64_t value);
OnnxAttr attr_float(std::string name, double value);
OnnxAttr attr_string(std::string name, std::string value);
OnnxAttr attr_ints(std::string name, std::vector<int64_t> value);
OnnxAttr attr_strings(std::string name, std::vector<std::string> value);

// The graph being written. Value names are unique ("conv1", "conv1_1", ...); an empty input
// name is ONNX's "optional input not given".
class OnnxGraph {
  public:
    virtual ~OnnxGraph() = default;
    // A value name not used yet, from `base`.
    virtual std::string unique(const std::string& base) = 0;
    // An initializer holding `t`'s values (float32, or int64 for integer tensors) named `name`
    // (made unique).
    virtual std::string initializer(const std::string& name, const Tensor& t) = 0;
    // A 1-d int64 initializer (shapes, axes, pads).
    std::string ints(const std::string& name, const std::vector<int64_t>& values);
    // A float32 initializer of `shape` filled with `values` (one value: broadcast to the shape).
    std::string floats(const std::string& name, const std::vector<float>& values,
                       const std::vector<int64_t>& shape);
    // Adds a node with one output per hint; returns the outputs' names.
    virtual std::vector<std::string> ops(const std::string& op_type,
                                         const std::vector<std::string>& inputs,
                                         const std::vector<std::string>& output_hints,
                                         const std::vector<OnnxAttr>& attrs = {}) = 0;
    // A node with a single output.
    std::string op(const std::string& op_type, const std::vector<std::string>& inputs,
                   const std::string& output_hint, const std::vector<OnnxAttr>& attrs = {});
};

// One layer node to lower: its attributes (defaults filled in), module name and weights, the
// ONNX values of its inputs and their Myelin types, and its output ports' types.
struct OnnxLayer {
    const graph::Node& node;
    const graph::LayerKind& kind;
    graph::Attrs attrs;
    std::string module_name;
    std::map<std::string, Tensor> weights; // the module's state_dict ("weight", "running_mean")
    std::vector<std::string> inputs;
    std::vector<graph::TensorType> input_types;
    std::vector<graph::TensorType> outputs; // port 0 first
    std::vector<bool> used;                 // per output port: does an edge take it?

    const graph::TensorType& output() const { return outputs.at(0); }
    bool wants(size_t port) const { return port < used.size() && used[port]; }
    // "layer 'conv1' (Conv2d)" for messages.
    std::string what() const;
    const Tensor& weight(const std::string& name) const; // throws naming the layer
    bool has_weight(const std::string& name) const { return weights.count(name) > 0; }
    // A value name for something this layer computes: "<module>_<what>".
    std::string name(const std::string& what) const { return module_name + "_" + what; }
    // Throws myelin::Error "<what()> cannot be exported to ONNX: <why>".
    [[noreturn]] void refuse(const std::string& why) const;
};

// The nodes computing the layer; returns one ONNX value per output port, port 0 first (an
// empty name for a port no edge takes).
using OnnxLowering = std::function<std::vector<std::string>(OnnxGraph&, const OnnxLayer&)>;

// --- PyTorch ------------------------------------------------------------------------------------

// One layer node as the PyTorch code writer sees it.
struct PyLayer {
    const graph::Node& node;
    const graph::LayerKind& kind;
    graph::Attrs attrs;    // with defaults filled in
    graph::Attrs defaults; // the kind's defaults (PyTorch's)
    std::string module_name;
    std::vector<graph::TensorType> input_types;
    std::vector<graph::TensorType> outputs; // port 0 first

    std::string what() const; // "layer 'lstm' (LSTM)"
};

// Python text helpers for the forms.
std::string py_bool(bool v);
std::string py_float(double v); // "0.1", "1.0", "1e-05"
std::string py_string(const std::string& s);
std::string py_tuple(const std::vector<int64_t>& v); // "(3,)", "(3, 5)"
std::string py_int(const graph::Attrs& a, std::string_view name);
// 3 -> "3"; [3, 5] -> "(3, 5)".
std::string py_int_or_pair(const graph::Attrs& a, std::string_view name);

// A constructor call as a person writes it: positional arguments, then keyword arguments that
// differ from the defaults (the registry's defaults are PyTorch's).
class PyCall {
  public:
    PyCall(std::string callee, const PyLayer& layer);
    PyCall& pos(const std::string& value);
    // name=value unless the attribute `attr` (default: name) has its default value.
    PyCall& kw(const std::string& name, const std::string& value, std::string attr = {});
    PyCall& always(const std::string& name, const std::string& value);
    // kw(name, True/False) and kw(name, <float>) from the attribute of the same name.
    PyCall& flag(const std::string& name);
    PyCall& real(const std::string& name);
    std::string str() const { return text_ + ")"; }

  private:
    std::string text_;
    bool first_ = true;
    const PyLayer& layer_;
};

// A top-level Python definition the generated file needs (a helper function or class), written
// once however many layers use it; `name` identifies it.
struct PyDefinition {
    std::string name;
    std::string code;
};

// The constructor expression of the layer's module ("nn.Linear(784, 128)"); empty for a kind
// computed by an expression alone (Add, Concat). Its state_dict names must be Myelin's.
using PyModuleForm = std::function<std::string(const PyLayer&)>;
// The forward expression from the module's reference ("self.lstm", or getattr(self, "3")) and
// the input expressions. A kind with several output ports gives a tuple of them, port 0 first.
using PyForwardForm = std::function<std::string(const PyLayer&, const std::string& module,
                                                const std::vector<std::string>& inputs)>;

// --- the record ---------------------------------------------------------------------------------

struct LayerForms {
    OnnxLowering onnx = {};
    PyModuleForm pytorch_module = {};
    // Null: `module(inputs...)`, and a chain of such layers is an nn.Sequential.
    PyForwardForm pytorch_forward = {};
    std::vector<PyDefinition> pytorch_definitions = {};
    // What OpenCV 4.6's DNN module (Debian 12's) cannot run of this layer's ONNX form, found by
    // running it there ("runs with a batch of 1 only"); empty, or null: it runs.
    std::function<std::string(const graph::Attrs&)> opencv_note = {};
    // A kind that cannot be exported: why (then the forms above are empty).
    std::string refusal = {};
};

// Adds `kind`'s forms; throws myelin::Error when the kind already has forms, or has neither
// forms nor a refusal.
void register_layer_forms(const std::string& kind, LayerForms forms);
// The forms of `kind` (built-in, or from a loaded plugin's second entry point); nullptr when
// none are known. A kind's forms may still refuse particular attributes (ONNX has no
// adaptive pooling whose windows differ in size) when the lowering runs.
const LayerForms* find_layer_forms(std::string_view kind);
// Why `kind` cannot be exported: its refusal, or that no forms are known for it (naming the
// plugin it came from); empty when it has forms. Input and Output need none.
std::string layer_forms_missing(std::string_view kind);

// What a plugin's second entry point fills.
class FormsRegistry {
  public:
    void add(const std::string& kind, LayerForms forms);
    std::vector<std::pair<std::string, LayerForms>> records;
};

} // namespace myelin::exporters

#define MYELIN_PLUGIN_EXPORT_FORMS_VERSION 1
// A plugin's optional second entry point, in the file that adds its kinds' export forms:
//
//     static void add_forms(myelin::exporters::FormsRegistry& registry) {
//         registry.add("SqueezeExcitation", {.onnx = ..., .pytorch_module = ...});
//     }
//     MYELIN_PLUGIN_EXPORT_FORMS(add_forms)
//
// Such a plugin links libmyelin_export. The exporters look the entry point up in every loaded
// plugin and take its records all or none.
#define MYELIN_PLUGIN_EXPORT_FORMS(register_function)                                              \
    extern "C" __attribute__((visibility("default"))) int myelin_plugin_export_forms_version() {   \
        return MYELIN_PLUGIN_EXPORT_FORMS_VERSION;                                                 \
    }                                                                                              \
    extern "C" __attribute__((visibility("default"))) void myelin_plugin_export_forms(             \
        myelin::exporters::FormsRegistry& registry) {                                              \
        register_function(registry);                                                               \
    }
