#pragma once
// Validation and shape inference over a whole ModelSpec. Every problem is attached to the node
// (and port) it concerns so the editor can show it on the node. Fast enough to run on every edit:
// one topological pass with index arrays (see bench/bench_graph.cpp for a 500-node graph).
#include <myelin/graph/model_spec.h>
#include <myelin/graph/registry.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace myelin::graph {

enum class Severity { Error, Warning };

struct Problem {
    Severity severity = Severity::Error;
    NodeId node = -1; // -1: the model as a whole (e.g. "no Output node")
    int port = -1;    // input port, when the problem is about one
    std::string message;
    int output_port = -1; // output port, when the problem is about one
    bool operator==(const Problem& other) const = default;
};
// "conv1 (Conv2d), input 0: expected 4-d [N, C, H, W] input, got [1, 784]";
// "lstm1 (LSTM), output h_n: ..." for a problem about an output port.
std::string describe(const ModelSpec& spec, const Problem& problem);

struct NodeInfo {
    std::optional<TensorType> output; // port 0; unset when the node or something upstream failed
    // Every output port's type (outputs[0] == *output) for a node with several output ports;
    // empty otherwise.
    std::vector<TensorType> outputs;
    // The type of output port `port`; nullptr when unknown or no such port.
    const TensorType* output_type(int port) const {
        if (port == 0) return output ? &*output : nullptr;
        return port > 0 && size_t(port) < outputs.size() ? &outputs[size_t(port)] : nullptr;
    }
    int64_t params = 0;           // all parameters (also when frozen)
    double flops = 0;             // for the analysed batch size
    int64_t activation_bytes = 0; // size of the output tensors
    bool reachable = true;        // false: no path to an Output node (not executed)
    // The child module's name in the built model: the node's name, or its position among the
    // layer nodes in topological order ("0", "1", ...); empty for Input and Output.
    std::string module_name;
};

struct Analysis {
    int64_t batch_size = 1;
    std::vector<Problem> problems;
    std::vector<NodeInfo> nodes; // parallel to spec.nodes
    std::vector<size_t> order;   // topological order (indices into spec.nodes); partial on cycles
    int64_t total_params = 0;
    int64_t trainable_params = 0; // excluding frozen nodes
    double total_flops = 0;
    int64_t total_activation_bytes = 0;

    bool ok() const; // no Error problems
    std::vector<Problem> problems_of(NodeId node, const ModelSpec& spec) const;
    size_t error_count() const;
    // The node a module or parameter name belongs to ("fc1", "fc1.weight", "block.conv"): the
    // node whose module name is it or a dotted prefix of it; -1 when none.
    NodeId node_of_module(const ModelSpec& spec, std::string_view name) const;
};

// Checks structure (unknown kinds, attributes, names, edges, ports, cycles, unconnected inputs,
// dangling outputs, Input/Output nodes), then infers every shape with the given batch size.
Analysis analyze(const ModelSpec& spec, int64_t batch_size = 1);

// Names a valid node may have: a Python identifier (so exported code and state_dict keys work).
bool is_valid_node_name(const std::string& name);

} // namespace myelin::graph

namespace myelin::graph {

// A torchinfo-like text table: one row per node in topological order (name, kind, output shape,
// params, FLOPs), then the totals, then every problem. What `myelin check` prints.
std::string format_summary(const ModelSpec& spec, const Analysis& analysis);
// 1234567 -> "1,234,567"; 2.5e9 -> "2.50 G" (FLOPs, bytes).
std::string format_count(int64_t value);
std::string format_si(double value, const char* unit = "");

} // namespace myelin::graph
