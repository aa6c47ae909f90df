#pragma once
// build(spec): the ModelSpec as an nn::Module that runs the DAG in topological order. Its
// children are the layer nodes, named after the nodes (or by position "0", "1", ... when unnamed,
// which gives a chain exactly nn.Sequential's state_dict keys), so hooks and state_dict names are
// the user's names.
#include <myelin/graph/model_spec.h>
#include <myelin/nn/module.h>

#include <memory>
#include <string>
#include <vector>

namespace myelin::graph {

class GraphModule : public nn::Module {
  public:
    // Inputs in the order of the spec's Input nodes; returns the Output node's tensor.
    Tensor forward(const TensorList& inputs) override;
    int num_inputs() const override { return int(input_nodes_.size()); }

    // The module name of a layer node ("conv1", "3") and back; -1 / "" when not a layer node.
    const std::string& module_name(NodeId node) const;
    NodeId node_of_module(const std::string& module_name) const;
    // Runs `module` for layer node `node` from now on (its child of the same name is replaced):
    // a Linear swapped for its int8 form. The fused conv-ReLU paths check the module's type
    // when they run, so a replaced Conv2d simply runs unfused. Throws Error for a non-layer node.
    void replace_layer(NodeId node, nn::ModulePtr module);
    const std::vector<NodeId>& input_nodes() const { return input_nodes_; }
    // Input shapes without the batch dimension, as declared by the Input nodes.
    const std::vector<Dims>& input_shapes() const { return input_shapes_; }

  private:
    friend std::shared_ptr<GraphModule> build(const ModelSpec& spec);
    GraphModule() : Module("GraphModule") {}

    struct Step {
        NodeId node;
        nn::Module* module;             // null: copies its single input (Output)
        std::vector<int> input_slots;   // value slots of the inputs, by port
        int output_slot;                // of output port 0; port k is output_slot + k
        std::vector<int> release_after; // slots whose last use is this step
        int output_count = 1;           // > 1: runs module->outputs() (LSTM: output, h_n, c_n)
        // The next step is a ReLU reading only this step's output, which nothing else reads:
        // both may run as one fused pass (nn::fused_conv_relu) when neither has hooks.
        bool relu_follows = false;
        // With relu_follows: the step after the ReLU is a MaxPool2d, the only reader of the
        // ReLU's output; the three may run as one (nn::fused_conv_relu_pool).
        bool pool_follows = false;
    };
    std::vector<Step> steps_;
    std::vector<NodeId> input_nodes_;
    std::vector<Dims> input_shapes_;
    std::vector<int> input_slots_;
    int output_slot_ = -1;
    int slot_count_ = 0;
    std::vector<std::pair<NodeId, std::string>> names_;
};

// Throws myelin::Error listing every error problem (describe()) when the spec is invalid.
std::shared_ptr<GraphModule> build(const ModelSpec& spec);

} // namespace myelin::graph
