#include <myelin/error.h>
#include <myelin/graph/model_spec.h>
#include <myelin/graph/registry.h>

#include <algorithm>

namespace myelin::graph {

const Node* ModelSpec::find(NodeId id) const {
    for (const auto& n : nodes)
        if (n.id == id) return &n;
    return nullptr;
}
Node* ModelSpec::find(NodeId id) {
    for (auto& n : nodes)
        if (n.id == id) return &n;
    return nullptr;
}
const Node& ModelSpec::node(NodeId id) const {
    if (const Node* n = find(id)) return *n;
    throw Error("model has no node with id " + std::to_string(id));
}
Node& ModelSpec::node(NodeId id) {
    if (Node* n = find(id)) return *n;
    throw Error("model has no node with id " + std::to_string(id));
}

NodeId ModelSpec::next_id() const {
    NodeId next = 1;
    for (const auto& n : nodes)
        next = std::max(next, n.id + 1);
    return next;
}

NodeId ModelSpec::add_node(const std::string& kind, const std::string& name, const Attrs& attrs,
                           double x, double y) {
    const LayerKind& k = layer_kind(kind);
    Node n;
    n.id = next_id();
    n.kind = kind;
    n.name = name;
    n.attrs = with_defaults(k.attrs, attrs);
    n.x = x;
    n.y = y;
    nodes.push_back(std::move(n));
    return nodes.back().id;
}

void ModelSpec::remove_node(NodeId id) {
    std::erase_if(nodes, [id](const Node& n) { return n.id == id; });
    std::erase_if(edges, [id](const Edge& e) { return e.from == id || e.to == id; });
}

void ModelSpec::connect(NodeId from, NodeId to, int to_port, int from_port) {
    edges.push_back({from, to, to_port, from_port});
}

bool ModelSpec::disconnect(NodeId from, NodeId to, int to_port) {
    return std::erase_if(edges, [&](const Edge& e) {
               return e.from == from && e.to == to && e.to_port == to_port;
           }) > 0;
}

std::vector<Edge> ModelSpec::inputs_of(NodeId id) const {
    std::vector<Edge> out;
    for (const auto& e : edges)
        if (e.to == id) out.push_back(e);
    std::stable_sort(out.begin(), out.end(),
                     [](const Edge& a, const Edge& b) { return a.to_port < b.to_port; });
    return out;
}

std::vector<Edge> ModelSpec::outputs_of(NodeId id) const {
    std::vector<Edge> out;
    for (const auto& e : edges)
        if (e.from == id) out.push_back(e);
    return out;
}

std::string ModelSpec::display_name(NodeId id) const {
    const Node* n = find(id);
    std::string out;
    if (n && !n->name.empty()) return n->name;
    if (n) out = n->kind + ' ';
    out += '#';
    out += std::to_string(id); // appended piecewise: GCC 12 -O3 misreports a chained '+'
    return out;
}

int input_port_count(const Node& node) {
    const LayerKind* k = find_layer_kind(node.kind);
    if (!k) return 0;
    if (k->variadic) {
        const AttrValue* v = node.attrs.find("num_inputs");
        const int64_t* n = v ? std::get_if<int64_t>(v) : nullptr;
        if (n) return int(std::clamp<int64_t>(*n, 0, 64));
        // Unset: the kind's default (2 where the kind does not describe the attribute).
        const AttrDesc* desc = k->attr("num_inputs");
        const int64_t* def = desc ? std::get_if<int64_t>(&desc->default_value) : nullptr;
        return def ? int(std::clamp<int64_t>(*def, 0, 64)) : 2;
    }
    return int(k->inputs.size());
}

std::vector<std::string> output_port_names(const Node& node) {
    const LayerKind* k = find_layer_kind(node.kind);
    if (!k) return {};
    if (!k->output_names) return k->has_output ? k->outputs : std::vector<std::string>{};
    try {
        return k->output_ports(with_defaults(k->attrs, node.attrs));
    } catch (const Error&) { // attributes of the wrong type: analysis reports them
        return k->outputs;
    }
}

} // namespace myelin::graph
