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

} // namespace

Analysis analyze(const ModelSpec& spec, int64_t batch_size) {
    Analysis result;
    result.batch_size = batch_size;
    const size_t n = spec.nodes.size();
    result.nodes.resize(n);
    auto problem = [&](NodeId node, int port, std::string message,
                       Severity severity = Severity::Error) {
        result.problems.push_back({severity, node, port, std::move(message)});
    };
    if (batch_size < 1) throw Error("analyze: batch_size must be at least 1");

    // --- nodes: ids, kinds, names, attributes ---
    std::unordered_map<NodeId, size_t> index;
    index.reserve(n * 2);
    std::vector<const LayerKind*> kinds(n, nullptr);
    std::vector<bool> attrs_ok(n, false);
    std::unordered_map<std::string, NodeId> names;
    size_t input_count = 0, output_count = 0;
    for (size_t i = 0; i < n; ++i) {
        const Node& node = spec.nodes[i];
        if (!index.emplace(node.id, i).second) {
            problem(node.id, -1, "duplicate node id " + std::to_string(node.id));
            continue;
        }
        kinds[i] = find_layer_kind(node.kind);
        if (!kinds[i]) {
            std::string close;
            for (const auto& k : similar_layer_kinds(node.kind))
                close += (close.empty() ? "" : ", ") + k;
            problem(node.id, -1,
                    "unknown layer kind '" + node.kind + "'" +
                        (close.empty() ? ": not built in and no loaded plugin adds it (`myelin "
                                         "plugins` lists the loaded plugins)"
                                       : " (did you mean " + close + "?)"));
            continue;
        }
        if (node.kind == "Input") ++input_count;
        if (node.kind == "Output") ++output_count;
        if (!node.name.empty()) {
            if (!is_valid_node_name(node.name))
                problem(node.id, -1,
                        "name '" + node.name +
                            "' must start with a letter or '_' and contain only letters, digits "
                            "and '_'");
            else if (auto [it, fresh] = names.emplace(node.name, node.id); !fresh)
                problem(node.id, -1, "name '" + node.name + "' is already used by another node");
        }
        auto attr_problems = check_attrs(kinds[i]->attrs, node.attrs);
        for (auto& m : attr_problems)
            problem(node.id, -1, std::move(m));
        attrs_ok[i] = attr_problems.empty();
        if (!(node.lr_multiplier >= 0) || !std::isfinite(node.lr_multiplier))
            problem(node.id, -1, "lr multiplier must be a number >= 0");
    }
    if (input_count == 0) problem(-1, -1, "the model has no Input node");
    if (output_count == 0) problem(-1, -1, "the model has no Output node");
    if (output_count > 1)
        problem(-1, -1,
                "the model has " + std::to_string(output_count) +
                    " Output nodes; it must have exactly one");

    // --- edges and ports ---
    // Per node, per input port: the source's index, or -1 (not connected), or -2 - the source's
    // index (from an output port the source does not have: reported on the source); and the
    // source's output port (empty: all 0).
    std::vector<std::vector<int>> port_sources(n), source_ports(n);
    std::vector<std::vector<size_t>> successors(n);
    std::vector<int> output_counts(n, 0);
    for (size_t i = 0; i < n; ++i)
        if (kinds[i]) {
            port_sources[i].assign(size_t(input_port_count(spec.nodes[i])), -1);
            output_counts[i] = kinds[i]->output_names ? int(output_port_names(spec.nodes[i]).size())
                               : kinds[i]->has_output ? int(kinds[i]->outputs.size())
                                                      : 0;
        }
    for (const Edge& e : spec.edges) {
        auto from = index.find(e.from), to = index.find(e.to);
        if (to == index.end()) {
            problem(e.from, -1, "connected to a missing node " + std::to_string(e.to));
            continue;
        }
        if (from == index.end()) {
            problem(e.to, e.to_port, "connected from a missing node " + std::to_string(e.from));
            continue;
        }
        size_t f = from->second, t = to->second;
        if (kinds[f] && !kinds[f]->has_output) {
            problem(e.from, -1, "an Output node has no output to connect from");
            continue;
        }
        if (!kinds[t]) continue;
        auto& ports = port_sources[t];
        if (e.to_port < 0 || size_t(e.to_port) >= ports.size()) {
            problem(e.to, e.to_port,
                    ports.empty() ? spec.nodes[t].kind + " takes no inputs"
                                  : "no such input (it has " + std::to_string(ports.size()) + ")");
            continue;
        }
        if (const int taken = ports[size_t(e.to_port)]; taken != -1) {
            const size_t earlier = size_t(taken >= 0 ? taken : -2 - taken);
            problem(e.to, e.to_port,
                    "has more than one incoming connection (from " +
                        spec.display_name(spec.nodes[earlier].id) + " and " +
                        spec.display_name(e.from) + "); it takes one");
            continue;
        }
        if (kinds[f] && (e.from_port < 0 || e.from_port >= output_counts[f])) {
            std::string names;
            for (const auto& name : output_port_names(spec.nodes[f]))
                names += (names.empty() ? "" : ", ") + name;
            // Named by describe() ("lstm1 (LSTM), output 3: ..."); a negative port in the text.
            const bool named = e.from_port >= 0;
            result.problems.push_back(
                {Severity::Error, e.from, -1,
                 (named ? std::string("no such output port")
                        : "output port " + std::to_string(e.from_port) + " does not exist") +
                     " (" + spec.nodes[f].kind + " has " + std::to_string(output_counts[f]) + ": " +
                     names + "), but the connection to " + spec.display_name(e.to) +
                     " leaves from it",
                 named ? e.from_port : -1});
            ports[size_t(e.to_port)] = -2 - int(f);
            continue;
        }
        ports[size_t(e.to_port)] = int(f);
        if (e.from_port != 0) { // filled only for such edges: most graphs never need it
            source_ports[t].resize(ports.size(), 0);
            source_ports[t][size_t(e.to_port)] = e.from_port;
        }
        successors[f].push_back(t);
    }
    for (size_t i = 0; i < n; ++i)
        for (size_t p = 0; p < port_sources[i].size(); ++p)
            if (port_sources[i][p] == -1)
                problem(spec.nodes[i].id, int(p), "input is not connected");

    // --- topological order (stable), cycles ---
    std::vector<int> pending(n, 0);
    for (size_t i = 0; i < n; ++i)
        for (int s : port_sources[i])
            pending[i] += s >= 0;
    std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
    for (size_t i = 0; i < n; ++i)
        if (pending[i] == 0) ready.push(i);
    result.order.reserve(n);
    while (!ready.empty()) {
        size_t i = ready.top();
        ready.pop();
        result.order.push_back(i);
        for (size_t s : successors[i])
            if (--pending[s] == 0) ready.push(s);
    }
    if (result.order.size() < n) {
        for (size_t i = 0; i < n; ++i)
            if (pending[i] > 0)
                problem(spec.nodes[i].id, -1,
                        "is part of a cycle (a layer's output feeds back "
                        "into its own input)");
    }

    // --- reachability: what feeds the Output ---
    std::vector<bool> reachable(n, false);
    std::vector<size_t> stack;
    for (size_t i = 0; i < n; ++i)
        if (kinds[i] && !kinds[i]->has_output) {
            reachable[i] = true;
            stack.push_back(i);
        }
    while (!stack.empty()) {
        size_t i = stack.back();
        stack.pop_back();
        for (int s : port_sources[i])
            if (s >= 0 && !reachable[size_t(s)]) {
                reachable[size_t(s)] = true;
                stack.push_back(size_t(s));
            }
    }
    for (size_t i = 0; i < n; ++i) {
        result.nodes[i].reachable = reachable[i];
        if (!reachable[i] && kinds[i] && output_count > 0)
            problem(spec.nodes[i].id, -1, "output is not used (no path to the Output node)",
                    Severity::Warning);
    }

    // --- module names: the node's own, or its position among layers in topological order ---
    int position = 0;
    for (size_t i : result.order)
        if (kinds[i] && kinds[i]->build) {
            const std::string& name = spec.nodes[i].name;
            result.nodes[i].module_name = name.empty() ? std::to_string(position) : name;
            ++position;
        }

    // --- shapes, parameters, FLOPs ---
    std::vector<TensorType> inputs;
    Attrs scratch;
    for (size_t i : result.order) {
        const Node& node = spec.nodes[i];
        const LayerKind* kind = kinds[i];
        if (!kind || !attrs_ok[i]) continue;
        const Attrs& attrs = effective_attrs(node, *kind, scratch);
        NodeInfo& info = result.nodes[i];
        try {
            info.params = kind->param_count(attrs);
        } catch (const Error&) {
        }
        inputs.clear();
        bool inputs_known = true;
        if (node.kind == "Input") inputs.push_back({Dims{batch_size}, DType::Float32});
        for (size_t p = 0; p < port_sources[i].size(); ++p) {
            const int s = port_sources[i][p];
            const TensorType* type = s < 0 ? nullptr
                                           : result.nodes[size_t(s)].output_type(
                                                 source_ports[i].empty() ? 0 : source_ports[i][p]);
            if (!type) {
                inputs_known = false;
                break;
            }
            inputs.push_back(*type);
        }
        if (!inputs_known) continue;
        try {
            if (!kind->infer_outputs) {
                TensorType out = kind->infer(attrs, inputs);
                info.flops = kind->flops(attrs, inputs, out);
                info.activation_bytes =
                    kind->has_output ? out.shape.numel() * int64_t(dtype_size(out.dtype)) : 0;
                info.output = std::move(out);
                continue;
            }
            std::vector<TensorType> outs = kind->infer_outputs(attrs, inputs);
            if (outs.size() != size_t(output_counts[i]) || outs.empty())
                throw Error("the shape rule of " + node.kind + " gave " +
                            std::to_string(outs.size()) + " output type(s) for " +
                            std::to_string(output_counts[i]) + " output port(s)");
            info.flops = kind->flops(attrs, inputs, outs[0]);
            for (const TensorType& out : outs)
                info.activation_bytes += out.shape.numel() * int64_t(dtype_size(out.dtype));
            info.output = outs[0];
            if (outs.size() > 1) info.outputs = std::move(outs);
        } catch (const Error& e) {
            problem(node.id, -1, e.what());
        }
    }
    for (size_t i = 0; i < n; ++i) {
        const NodeInfo& info = result.nodes[i];
        result.total_params += info.params;
        if (!spec.nodes[i].frozen) result.trainable_params += info.params;
        if (info.reachable) {
            result.total_flops += info.flops;
            result.total_activation_bytes += info.activation_bytes;
        }
    }
    return result;
}

} // namespace myelin::graph
