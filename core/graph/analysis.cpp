// One pass over the spec: structure checks, a stable topological order (Kahn, ties broken by
// file order), reachability from the Output, then shape inference in order. Index arrays
// instead of maps keep a 500-node graph far below a frame (bench/bench_graph.cpp).
#include <myelin/error.h>
#include <myelin/graph/analysis.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <queue>
#include <unordered_map>

namespace myelin::graph {

bool Analysis::ok() const {
    return error_count() == 0;
}

NodeId Analysis::node_of_module(const ModelSpec& spec, std::string_view name) const {
    for (size_t i = 0; i < spec.nodes.size() && i < nodes.size(); ++i) {
        const std::string& module = nodes[i].module_name;
        if (module.empty() || !name.starts_with(module)) continue;
        if (name.size() == module.size() || name[module.size()] == '.') return spec.nodes[i].id;
    }
    return -1;
}

size_t Analysis::error_count() const {
    return size_t(std::count_if(problems.begin(), problems.end(),
                                [](const Problem& p) { return p.severity == Severity::Error; }));
}

std::vector<Problem> Analysis::problems_of(NodeId node, const ModelSpec&) const {
    std::vector<Problem> out;
    for (const auto& p : problems)
        if (p.node == node) out.push_back(p);
    return out;
}

std::string describe(const ModelSpec& spec, const Problem& problem) {
    std::string out = problem.severity == Severity::Warning ? "warning: " : "";
    if (problem.node >= 0) {
        const Node* n = spec.find(problem.node);
        out += spec.display_name(problem.node);
        if (n && !n->name.empty()) out += " (" + n->kind + ")";
        if (problem.port >= 0) out += ", input " + std::to_string(problem.port);
        if (problem.output_port >= 0) {
            const auto names = n ? output_port_names(*n) : std::vector<std::string>{};
            out += ", output " + (size_t(problem.output_port) < names.size()
                                      ? names[size_t(problem.output_port)]
                                      : std::to_string(problem.output_port));
        }
        out += ": ";
    }
    return out + problem.message;
}

bool is_valid_node_name(const std::string& name) {
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
}

namespace {

// The node's attributes with defaults filled in: the node's own when already complete and in
// order (the usual case: add_node and the project loader fill them), otherwise a copy.
const Attrs& effective_attrs(const Node& node, const LayerKind& kind, Attrs& scratch) {
    const auto& items = node.attrs.items();
    bool complete = items.size() == kind.attrs.size();
    for (size_t i = 0; complete && i < items.size(); ++i)
        complete = items[i].first == kind.attrs[i].name;
    if (complete) return node.attrs;
    scratch = with_defaults(kind.attrs, node.attrs);
    return scratch;
}

// What the phases of one analysis share: the spec, the result they fill, and index arrays by
// the nodes' positions in the spec.
struct Pass {
    Pass(const ModelSpec& spec, Analysis& result)
        : spec(spec), result(result), n(spec.nodes.size()), kinds(n, nullptr), attrs_ok(n, false),
          port_sources(n), source_ports(n), successors(n), output_counts(n, 0) {}

    void problem(NodeId node, int port, std::string message, Severity severity = Severity::Error) {
        result.problems.push_back({severity, node, port, std::move(message)});
    }

    const ModelSpec& spec;
    Analysis& result;
    const size_t n;
    std::unordered_map<NodeId, size_t> index; // node id -> position
    std::vector<const LayerKind*> kinds;      // nullptr: unknown kind or duplicate id
    std::vector<bool> attrs_ok;
    size_t output_count = 0; // Output nodes
    // Per node, per input port: the source's index, or -1 (not connected), or -2 - the source's
    // index (from an output port the source does not have: reported on the source); and the
    // source's output port (empty: all 0).
    std::vector<std::vector<int>> port_sources, source_ports;
    std::vector<std::vector<size_t>> successors;
    std::vector<int> output_counts; // output ports per node
};

// Ids, kinds, names, attributes; one Input and one Output.
void check_nodes(Pass& pass) {
    const ModelSpec& spec = pass.spec;
    pass.index.reserve(pass.n * 2);
    std::unordered_map<std::string, NodeId> names;
    size_t input_count = 0;
    for (size_t i = 0; i < pass.n; ++i) {
        const Node& node = spec.nodes[i];
        if (!pass.index.emplace(node.id, i).second) {
            pass.problem(node.id, -1, "duplicate node id " + std::to_string(node.id));
            continue;
        }
        pass.kinds[i] = find_layer_kind(node.kind);
        if (!pass.kinds[i]) {
            std::string close;
            for (const auto& k : similar_layer_kinds(node.kind))
                close += (close.empty() ? "" : ", ") + k;
            pass.problem(node.id, -1,
                         "unknown layer kind '" + node.kind + "'" +
                             (close.empty()
                                  ? ": not built in and no loaded plugin adds it (`myelin "
                                    "plugins` lists the loaded plugins)"
                                  : " (did you mean " + close + "?)"));
            continue;
        }
        if (node.kind == "Input") ++input_count;
        if (node.kind == "Output") ++pass.output_count;
        if (!node.name.empty()) {
            if (!is_valid_node_name(node.name))
                pass.problem(node.id, -1,
                             "name '" + node.name +
                                 "' must start with a letter or '_' and contain only letters, "
                                 "digits and '_'");
            else if (auto [it, fresh] = names.emplace(node.name, node.id); !fresh)
                pass.problem(node.id, -1,
                             "name '" + node.name + "' is already used by another node");
        }
        auto attr_problems = check_attrs(pass.kinds[i]->attrs, node.attrs);
        for (auto& m : attr_problems)
            pass.problem(node.id, -1, std::move(m));
        pass.attrs_ok[i] = attr_problems.empty();
        if (!(node.lr_multiplier >= 0) || !std::isfinite(node.lr_multiplier))
            pass.problem(node.id, -1, "lr multiplier must be a number >= 0");
    }
    if (input_count == 0) pass.problem(-1, -1, "the model has no Input node");
    if (pass.output_count == 0) pass.problem(-1, -1, "the model has no Output node");
    if (pass.output_count > 1)
        pass.problem(-1, -1,
                     "the model has " + std::to_string(pass.output_count) +
                         " Output nodes; it must have exactly one");
}

// The edges into the nodes' ports: missing nodes, ports out of range, two edges into one port,
// edges out of Output or from an output port the source lacks.
void connect_edges(Pass& pass) {
    const ModelSpec& spec = pass.spec;
    const auto& kinds = pass.kinds;
    for (size_t i = 0; i < pass.n; ++i)
        if (kinds[i]) {
            pass.port_sources[i].assign(size_t(input_port_count(spec.nodes[i])), -1);
            pass.output_counts[i] = kinds[i]->output_names
                                        ? int(output_port_names(spec.nodes[i]).size())
                                    : kinds[i]->has_output ? int(kinds[i]->outputs.size())
                                                           : 0;
        }
    for (const Edge& e : spec.edges) {
        auto from = pass.index.find(e.from), to = pass.index.find(e.to);
        if (to == pass.index.end()) {
            pass.problem(e.from, -1, "connected to a missing node " + std::to_string(e.to));
            continue;
        }
        if (from == pass.index.end()) {
            pass.problem(e.to, e.to_port,
                         "connected from a missing node " + std::to_string(e.from));
            continue;
        }
        size_t f = from->second, t = to->second;
        if (kinds[f] && !kinds[f]->has_output) {
            pass.problem(e.from, -1, "an Output node has no output to connect from");
            continue;
        }
        if (!kinds[t]) continue;
        auto& ports = pass.port_sources[t];
        if (e.to_port < 0 || size_t(e.to_port) >= ports.size()) {
            pass.problem(e.to, e.to_port,
                         ports.empty()
                             ? spec.nodes[t].kind + " takes no inputs"
                             : "no such input (it has " + std::to_string(ports.size()) + ")");
            continue;
        }
        if (const int taken = ports[size_t(e.to_port)]; taken != -1) {
            const size_t earlier = size_t(taken >= 0 ? taken : -2 - taken);
            pass.problem(e.to, e.to_port,
                         "has more than one incoming connection (from " +
                             spec.display_name(spec.nodes[earlier].id) + " and " +
                             spec.display_name(e.from) + "); it takes one");
            continue;
        }
        const int source_outputs = pass.output_counts[f];
        if (kinds[f] && (e.from_port < 0 || e.from_port >= source_outputs)) {
            std::string names;
            for (const auto& name : output_port_names(spec.nodes[f]))
                names += (names.empty() ? "" : ", ") + name;
            // Named by describe() ("lstm1 (LSTM), output 3: ..."); a negative port in the text.
            const bool named = e.from_port >= 0;
            pass.result.problems.push_back(
                {Severity::Error, e.from, -1,
                 (named ? std::string("no such output port")
                        : "output port " + std::to_string(e.from_port) + " does not exist") +
                     " (" + spec.nodes[f].kind + " has " + std::to_string(source_outputs) + ": " +
                     names + "), but the connection to " + spec.display_name(e.to) +
                     " leaves from it",
                 named ? e.from_port : -1});
            ports[size_t(e.to_port)] = -2 - int(f);
            continue;
        }
        ports[size_t(e.to_port)] = int(f);
        if (e.from_port != 0) { // filled only for such edges: most graphs never need it
            pass.source_ports[t].resize(ports.size(), 0);
            pass.source_ports[t][size_t(e.to_port)] = e.from_port;
        }
        pass.successors[f].push_back(t);
    }
}

void report_unconnected_inputs(Pass& pass) {
    for (size_t i = 0; i < pass.n; ++i)
        for (size_t p = 0; p < pass.port_sources[i].size(); ++p)
            if (pass.port_sources[i][p] == -1)
                pass.problem(pass.spec.nodes[i].id, int(p), "input is not connected");
}

// A stable topological order (Kahn, ties broken by file order); every node left over is part
// of a cycle.
void order_topologically(Pass& pass) {
    const size_t n = pass.n;
    std::vector<int> pending(n, 0);
    for (size_t i = 0; i < n; ++i)
        for (int s : pass.port_sources[i])
            pending[i] += s >= 0;
    std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
    for (size_t i = 0; i < n; ++i)
        if (pending[i] == 0) ready.push(i);
    std::vector<size_t>& order = pass.result.order;
    order.reserve(n);
    while (!ready.empty()) {
        size_t i = ready.top();
        ready.pop();
        order.push_back(i);
        for (size_t s : pass.successors[i])
            if (--pending[s] == 0) ready.push(s);
    }
    if (order.size() < n) {
        for (size_t i = 0; i < n; ++i)
            if (pending[i] > 0)
                pass.problem(pass.spec.nodes[i].id, -1,
                             "is part of a cycle (a layer's output feeds back "
                             "into its own input)");
    }
}

// What feeds the Output; the rest are warnings and are not executed.
void mark_reachable(Pass& pass) {
    const size_t n = pass.n;
    std::vector<bool> reachable(n, false);
    std::vector<size_t> stack;
    for (size_t i = 0; i < n; ++i)
        if (pass.kinds[i] && !pass.kinds[i]->has_output) {
            reachable[i] = true;
            stack.push_back(i);
        }
    while (!stack.empty()) {
        size_t i = stack.back();
        stack.pop_back();
        for (int s : pass.port_sources[i])
            if (s >= 0 && !reachable[size_t(s)]) {
                reachable[size_t(s)] = true;
                stack.push_back(size_t(s));
            }
    }
    for (size_t i = 0; i < n; ++i) {
        pass.result.nodes[i].reachable = reachable[i];
        if (!reachable[i] && pass.kinds[i] && pass.output_count > 0)
            pass.problem(pass.spec.nodes[i].id, -1,
                         "output is not used (no path to the Output node)", Severity::Warning);
    }
}

// Module names: the node's own, or its position among layers in topological order.
void name_modules(Pass& pass) {
    int position = 0;
    for (size_t i : pass.result.order)
        if (pass.kinds[i] && pass.kinds[i]->build) {
            const std::string& name = pass.spec.nodes[i].name;
            pass.result.nodes[i].module_name = name.empty() ? std::to_string(position) : name;
            ++position;
        }
}

// The types arriving at node i's inputs (an Input node's batch first); false when one of them
// is unknown because of an upstream problem, which then is the only one reported.
bool known_inputs(const Pass& pass, size_t i, std::vector<TensorType>& inputs) {
    inputs.clear();
    if (pass.spec.nodes[i].kind == "Input")
        inputs.push_back({Dims{pass.result.batch_size}, DType::Float32});
    const std::vector<int>& sources = pass.port_sources[i];
    const std::vector<int>& source_ports = pass.source_ports[i];
    for (size_t p = 0; p < sources.size(); ++p) {
        const int s = sources[p];
        const TensorType* type = s < 0 ? nullptr
                                       : pass.result.nodes[size_t(s)].output_type(
                                             source_ports.empty() ? 0 : source_ports[p]);
        if (!type) return false;
        inputs.push_back(*type);
    }
    return true;
}

// Node i's output type(s), FLOPs and activation size from its shape rule; throws Error.
void infer_node(const Pass& pass, size_t i, const Attrs& attrs,
                const std::vector<TensorType>& inputs, NodeInfo& info) {
    const Node& node = pass.spec.nodes[i];
    const LayerKind* kind = pass.kinds[i];
    if (!kind->infer_outputs) {
        TensorType out = kind->infer(attrs, inputs);
        info.flops = kind->flops(attrs, inputs, out);
        info.activation_bytes =
            kind->has_output ? out.shape.numel() * int64_t(dtype_size(out.dtype)) : 0;
        info.output = std::move(out);
        return;
    }
    std::vector<TensorType> outs = kind->infer_outputs(attrs, inputs);
    if (outs.size() != size_t(pass.output_counts[i]) || outs.empty())
        throw Error("the shape rule of " + node.kind + " gave " + std::to_string(outs.size()) +
                    " output type(s) for " + std::to_string(pass.output_counts[i]) +
                    " output port(s)");
    info.flops = kind->flops(attrs, inputs, outs[0]);
    for (const TensorType& out : outs)
        info.activation_bytes += out.shape.numel() * int64_t(dtype_size(out.dtype));
    info.output = outs[0];
    if (outs.size() > 1) info.outputs = std::move(outs);
}

// Shapes, parameters and FLOPs, node by node in order.
void infer_shapes(Pass& pass) {
    std::vector<TensorType> inputs;
    Attrs scratch;
    for (size_t i : pass.result.order) {
        const Node& node = pass.spec.nodes[i];
        const LayerKind* kind = pass.kinds[i];
        if (!kind || !pass.attrs_ok[i]) continue;
        const Attrs& attrs = effective_attrs(node, *kind, scratch);
        NodeInfo& info = pass.result.nodes[i];
        try {
            info.params = kind->param_count(attrs);
        } catch (const Error&) {
        }
        if (!known_inputs(pass, i, inputs)) continue;
        try {
            infer_node(pass, i, attrs, inputs, info);
        } catch (const Error& e) {
            pass.problem(node.id, -1, e.what());
        }
    }
}

// The model's parameters (all and trainable) and, of what is executed, FLOPs and activations.
void add_up_totals(Analysis& result, const ModelSpec& spec) {
    for (size_t i = 0; i < result.nodes.size(); ++i) {
        const NodeInfo& info = result.nodes[i];
        result.total_params += info.params;
        if (!spec.nodes[i].frozen) result.trainable_params += info.params;
        if (info.reachable) {
            result.total_flops += info.flops;
            result.total_activation_bytes += info.activation_bytes;
        }
    }
}

} // namespace

Analysis analyze(const ModelSpec& spec, int64_t batch_size) {
    Analysis result;
    result.batch_size = batch_size;
    result.nodes.resize(spec.nodes.size());
    if (batch_size < 1) throw Error("analyze: batch_size must be at least 1");
    Pass pass(spec, result);
    check_nodes(pass);
    connect_edges(pass);
    report_unconnected_inputs(pass);
    order_topologically(pass);
    mark_reachable(pass);
    name_modules(pass);
    infer_shapes(pass);
    add_up_totals(result, spec);
    return result;
}

} // namespace myelin::graph
