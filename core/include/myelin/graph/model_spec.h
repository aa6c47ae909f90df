#pragma once
// ModelSpec: the model as the editor holds it — nodes (a layer kind with attributes) and edges
// (the output of one node into an input port of another). It is plain data: cheap to copy (the
// undo stack keeps snapshots), compared with ==, saved in the project file. analyze() checks and
// shape-infers it; build() turns it into an nn::Module.
#include <myelin/graph/attributes.h>

#include <cstdint>
#include <string>
#include <vector>

namespace myelin::graph {

using NodeId = int64_t;

struct Node {
    NodeId id = 0;
    std::string kind; // a LayerKind name
    std::string name; // module name in the built model; empty: its position ("0", "1", ...)
    Attrs attrs;      // every attribute of the kind (with_defaults fills missing ones)
    double x = 0;     // position on the editor's canvas
    double y = 0;
    bool frozen = false;        // parameters get requires_grad = false
    double lr_multiplier = 1.0; // the node's parameters form an optimizer group with lr * this
    bool operator==(const Node& other) const = default;
};

// `from_port` indexes the source's output ports (most kinds have one; LSTM has output, h_n and
// c_n), `to_port` the destination's input ports.
struct Edge {
    NodeId from = 0;
    NodeId to = 0;
    int to_port = 0;
    int from_port = 0;
    bool operator==(const Edge& other) const = default;
};

struct ModelSpec {
    std::vector<Node> nodes; // order is kept (stable topological tie-break, file order)
    std::vector<Edge> edges;

    const Node* find(NodeId id) const;
    Node* find(NodeId id);
    const Node& node(NodeId id) const; // throws Error when absent
    Node& node(NodeId id);
    NodeId next_id() const; // 1 + the largest id in use

    // Adds a node of `kind` with every attribute at its default (overridden by `attrs`).
    // Throws Error for an unknown kind.
    NodeId add_node(const std::string& kind, const std::string& name = {}, const Attrs& attrs = {},
                    double x = 0, double y = 0);
    void remove_node(NodeId id); // and its edges
    void connect(NodeId from, NodeId to, int to_port = 0, int from_port = 0);
    // Removes the edges from `from` (any output port) into input `to_port` of `to`.
    bool disconnect(NodeId from, NodeId to, int to_port);
    // Edges into `id` sorted by port; edges out of `id`.
    std::vector<Edge> inputs_of(NodeId id) const;
    std::vector<Edge> outputs_of(NodeId id) const;
    // The displayed name: the node's name, else "<kind> #<id>".
    std::string display_name(NodeId id) const;

    bool operator==(const ModelSpec& other) const = default;
};

// Number of input ports of `node` (fixed by its kind, or num_inputs for merge nodes);
// 0 for unknown kinds.
int input_port_count(const Node& node);
// The names of `node`'s output ports ({"output"} for most kinds, {} for Output and unknown kinds).
std::vector<std::string> output_port_names(const Node& node);

} // namespace myelin::graph
