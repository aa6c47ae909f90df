#pragma once
// Internal to the ONNX writer: a small builder over ONNX's protobuf GraphProto (unique value
// names, initializers as raw_data, nodes with attributes) and the per-layer lowering
// (onnx_layers.cpp) that onnx_export.cpp calls in topological order.
#include <myelin/graph/model_spec.h>
#include <myelin/graph/registry.h>
#include <myelin/nn/module.h>
#include <myelin/tensor.h>

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace myelin::exporters::detail {

// An ONNX attribute value: int, float, string or a list of ints.
struct OnnxAttr {
    std::string name;
    enum class Type { Int, Float, String, Ints } type = Type::Int;
    int64_t i = 0;
    float f = 0;
    std::string s;
    std::vector<int64_t> ints;
};
OnnxAttr attr_int(std::string name, int64_t value);
OnnxAttr attr_float(std::string name, double value);
OnnxAttr attr_string(std::string name, std::string value);
OnnxAttr attr_ints(std::string name, std::vector<int64_t> value);

class OnnxBuilder {
  public:
    explicit OnnxBuilder(onnx::GraphProto& graph) : graph_(graph) {}

    // A value name not used yet, from `base` ("conv1", "conv1_1", ...).
    std::string unique(const std::string& base);
    // A float32 (or int64) initializer holding `t`'s values, named `name` (made unique).
    std::string initializer(const std::string& name, const Tensor& t);
    // A 1-d int64 initializer (shapes, axes, pads).
    std::string ints(const std::string& name, const std::vector<int64_t>& values);
    // A float32 initializer of `shape` filled with `values` (one value: broadcast to the shape).
    std::string floats(const std::string& name, const std::vector<float>& values,
                       const std::vector<int64_t>& shape);
    // Adds a node; returns its (single) output's name, made unique from `output_hint`.
    std::string op(const std::string& op_type, const std::vector<std::string>& inputs,
                   const std::string& output_hint, const std::vector<OnnxAttr>& attrs = {});

  private:
    onnx::GraphProto& graph_;
    std::set<std::string> used_;
    int nodes_ = 0;
};

// One layer node to lower: its attributes (defaults filled in), module name and weights, the
// ONNX values of its inputs and their Myelin types, and its output type.
struct LayerContext {
    const graph::Node& node;
    const graph::LayerKind& kind;
    graph::Attrs attrs;
    std::string module_name;
    std::map<std::string, Tensor> weights; // the module's state_dict ("weight", "running_mean")
    std::vector<std::string> inputs;
    std::vector<graph::TensorType> input_types;
    graph::TensorType output;

    // "layer 'conv1' (Conv2d)" for messages.
    std::string what() const;
    const Tensor& weight(const std::string& name) const; // throws naming the layer
    bool has_weight(const std::string& name) const { return weights.count(name) > 0; }
};

// Adds the nodes computing the layer; returns the ONNX value holding its output. Throws
// myelin::Error naming the layer when it has no ONNX form.
std::string lower_layer(OnnxBuilder& b, const LayerContext& layer);
bool has_lowering(std::string_view kind);

} // namespace myelin::exporters::detail
