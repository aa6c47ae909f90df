#include "document/model_edits.h"

#include <myelin/dtype.h>

#include <QCoreApplication>
#include <QRectF>

#include <algorithm>
#include <cmath>
#include <optional>
#include <queue>
#include <unordered_map>
#include <unordered_set>

namespace myelin::ui {

using graph::Edge;
using graph::ModelSpec;
using graph::Node;
using graph::NodeId;

namespace {

QString tr(const char* text) {
    return QCoreApplication::translate("ModelEdits", text);
}

QString portName(const Node& node, int port) {
    const graph::LayerKind* kind = graph::find_layer_kind(node.kind);
    if (kind && port >= 0 && size_t(port) < kind->inputs.size())
        return QString::fromStdString(kind->inputs[size_t(port)]);
    return tr("input %1").arg(port);
}

// Whether a path of edges leads from `from` to `to`.
bool reaches(const ModelSpec& spec, NodeId from, NodeId to) {
    std::unordered_map<NodeId, std::vector<NodeId>> successors;
    for (const Edge& e : spec.edges)
        successors[e.from].push_back(e.to);
    std::unordered_set<NodeId> seen{from};
    std::vector<NodeId> stack{from};
    while (!stack.empty()) {
        NodeId n = stack.back();
        stack.pop_back();
        if (n == to) return true;
        for (NodeId s : successors[n])
            if (seen.insert(s).second) stack.push_back(s);
    }
    return false;
}

double snap(double value) {
    return std::round(value / geometry::kGrid) * geometry::kGrid;
}

std::string derivedName(const Node& anchor, const ModelSpec& spec, const char* suffix) {
    if (anchor.name.empty()) return {};
    return uniqueName(spec, anchor.name + suffix);
}

std::optional<graph::TensorType> inputType(const ModelSpec& spec, const graph::Analysis& analysis,
                                           const Edge& edge) {
    for (size_t i = 0; i < spec.nodes.size() && i < analysis.nodes.size(); ++i)
        if (spec.nodes[i].id == edge.from) {
            const graph::TensorType* type = analysis.nodes[i].output_type(edge.from_port);
            return type ? std::optional<graph::TensorType>(*type) : std::nullopt;
        }
    return std::nullopt;
}

} // namespace

QString nodeLabel(const ModelSpec& spec, NodeId id) {
    return QString::fromStdString(spec.display_name(id));
}

QString connectionRefusal(const ModelSpec& spec, NodeId from, NodeId to, int port, int fromPort) {
    const Node* source = spec.find(from);
    const Node* target = spec.find(to);
    if (source == nullptr || target == nullptr) return tr("That node no longer exists");
    if (from == to) return tr("A layer cannot feed its own input");
    const graph::LayerKind* sourceKind = graph::find_layer_kind(source->kind);
    if (sourceKind != nullptr && !sourceKind->has_output)
        return tr("%1 is the model's output: it has no output to connect from")
            .arg(nodeLabel(spec, from));
    if (const int outputs = int(graph::output_port_names(*source).size());
        sourceKind != nullptr && (fromPort < 0 || fromPort >= outputs))
        return tr("%1 has no output %2").arg(nodeLabel(spec, from)).arg(fromPort);
    const int ports = graph::input_port_count(*target);
    if (ports == 0)
        return target->kind == "Input"
                   ? tr("%1 is an Input node: it takes no inputs").arg(nodeLabel(spec, to))
                   : tr("%1 takes no inputs").arg(nodeLabel(spec, to));
    if (port < 0 || port >= ports)
        return tr("%1 has no input %2").arg(nodeLabel(spec, to)).arg(port);
    for (const Edge& e : spec.edges)
        if (e.to == to && e.to_port == port)
            return tr("%1 of %2 is already connected (from %3); disconnect it first")
                .arg(portName(*target, port), nodeLabel(spec, to), nodeLabel(spec, e.from));
    if (reaches(spec, to, from))
        return tr("That would make a cycle: %1 already feeds %2")
            .arg(nodeLabel(spec, to), nodeLabel(spec, from));
    return {};
}

std::string uniqueName(const ModelSpec& spec, const std::string& base) {
    if (base.empty()) return {};
    auto used = [&spec](const std::string& name) {
        return std::any_of(spec.nodes.begin(), spec.nodes.end(),
                           [&name](const Node& n) { return n.name == name; });
    };
    if (!used(base)) return base;
    // "conv1_2" copied again becomes "conv1_3", not "conv1_2_2".
    std::string root = base;
    const size_t underscore = base.rfind('_');
    if (underscore != std::string::npos && underscore + 1 < base.size() &&
        std::all_of(base.begin() + long(underscore) + 1, base.end(),
                    [](char c) { return c >= '0' && c <= '9'; }))
        root = base.substr(0, underscore);
    for (int i = 2;; ++i) {
        std::string candidate = root + "_" + std::to_string(i);
        if (!used(candidate)) return candidate;
    }
}

ModelSpec extractNodes(const ModelSpec& spec, const std::vector<NodeId>& ids) {
    const std::unordered_set<NodeId> wanted(ids.begin(), ids.end());
    ModelSpec out;
    for (const Node& n : spec.nodes)
        if (wanted.count(n.id)) out.nodes.push_back(n);
    for (const Edge& e : spec.edges)
        if (wanted.count(e.from) && wanted.count(e.to)) out.edges.push_back(e);
    return out;
}

std::vector<NodeId> pasteFragment(ModelSpec& spec, const ModelSpec& fragment, QPointF offset) {
    std::unordered_map<NodeId, NodeId> fresh;
    std::vector<NodeId> added;
    for (const Node& original : fragment.nodes) {
        Node copy = original;
        copy.id = spec.next_id();
        copy.name = uniqueName(spec, original.name);
        copy.x = original.x + offset.x();
        copy.y = original.y + offset.y();
        fresh[original.id] = copy.id;
        added.push_back(copy.id);
        spec.nodes.push_back(std::move(copy));
    }
    for (const Edge& e : fragment.edges) {
        auto from = fresh.find(e.from), to = fresh.find(e.to);
        if (from != fresh.end() && to != fresh.end())
            spec.edges.push_back({from->second, to->second, e.to_port, e.from_port});
    }
    return added;
}

void removeNodes(ModelSpec& spec, const std::vector<NodeId>& ids) {
    for (NodeId id : ids)
        spec.remove_node(id);
}

NodeId addNodeAfter(ModelSpec& spec, const std::string& kind, NodeId after) {
    const Node* anchor = spec.find(after);
    double x = 0, y = 0;
    bool anchorHasOutput = false;
    if (anchor != nullptr) {
        const graph::LayerKind* anchorKind = graph::find_layer_kind(anchor->kind);
        anchorHasOutput = anchorKind != nullptr && anchorKind->has_output;
        // Beside the anchor's other consumers, one row below it.
        x = anchor->x + geometry::kColumnPitch * double(spec.outputs_of(after).size());
        y = anchor->y + geometry::kLayerPitch;
    }
    const NodeId id = spec.add_node(kind, {}, {}, snap(x), snap(y));
    if (anchorHasOutput && graph::input_port_count(spec.node(id)) > 0) spec.connect(after, id, 0);
    return id;
}

bool canInsertOnEdge(const graph::LayerKind& kind) {
    return kind.has_output && !kind.variadic && kind.inputs.size() == 1;
}

NodeId insertOnEdge(ModelSpec& spec, const Edge& edge, const std::string& kind,
                    const std::string& name, const graph::Attrs& attrs) {
    const Node from = spec.node(edge.from);
    const Node to = spec.node(edge.to);
    spec.disconnect(edge.from, edge.to, edge.to_port);
    double y = to.y;
    if (to.y - from.y >= 2 * geometry::kLayerPitch) {
        y = snap((from.y + to.y) / 2);
    } else {
        // Make room: the target's row and everything below it move down one layer.
        for (Node& n : spec.nodes)
            if (n.y >= to.y - 1e-6) n.y += geometry::kLayerPitch;
    }
    const double x = snap((from.x + to.x) / 2);
    const NodeId id = spec.add_node(kind, name, attrs, x, y);
    spec.connect(edge.from, id, 0, edge.from_port);
    spec.connect(id, edge.to, edge.to_port);
    return id;
}

void arrangeLayers(ModelSpec& spec) {
    const size_t n = spec.nodes.size();
    if (n == 0) return;
    std::unordered_map<NodeId, size_t> index;
    for (size_t i = 0; i < n; ++i)
        index.emplace(spec.nodes[i].id, i);

    // Stable topological order; nodes on cycles follow in model order.
    std::vector<std::vector<size_t>> preds(n), succs(n);
    std::vector<std::pair<size_t, size_t>> links;
    // Where along its source's card each link leaves, in slots (-0.4 .. 0.4; 0 for one output
    // port), so consumers of an LSTM's output, h_n and c_n line up with those ports.
    std::vector<double> portOffsets;
    for (const Edge& e : spec.edges) {
        auto f = index.find(e.from), t = index.find(e.to);
        if (f == index.end() || t == index.end() || f->second == t->second) continue;
        links.emplace_back(f->second, t->second);
        const size_t ports =
            std::max<size_t>(1, graph::output_port_names(spec.nodes[f->second]).size());
        portOffsets.push_back(0.8 * ((double(e.from_port) + 1) / double(ports + 1) - 0.5));
    }
    std::vector<int> pending(n, 0);
    for (auto [f, t] : links) {
        succs[f].push_back(t);
        preds[t].push_back(f);
        ++pending[t];
    }
    std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
    for (size_t i = 0; i < n; ++i)
        if (pending[i] == 0) ready.push(i);
    std::vector<size_t> order;
    std::vector<bool> placed(n, false);
    while (!ready.empty()) {
        size_t i = ready.top();
        ready.pop();
        order.push_back(i);
        placed[i] = true;
        for (size_t s : succs[i])
            if (--pending[s] == 0) ready.push(s);
    }
    for (size_t i = 0; i < n; ++i)
        if (!placed[i]) order.push_back(i);
    std::vector<size_t> rank(n);
    for (size_t k = 0; k < n; ++k)
        rank[order[k]] = k;

    // Longest-path layers over forward edges (back edges of a cycle are ignored).
    std::vector<int> layer(n, 0);
    for (size_t i : order)
        for (size_t s : succs[i])
            if (rank[s] > rank[i]) layer[s] = std::max(layer[s], layer[i] + 1);
    // Sources sit just above their first consumer (a second input joins where it is used).
    for (size_t i = 0; i < n; ++i) {
        bool source = std::none_of(preds[i].begin(), preds[i].end(),
                                   [&](size_t p) { return rank[p] < rank[i]; });
        int first = INT32_MAX;
        for (size_t s : succs[i])
            if (rank[s] > rank[i]) first = std::min(first, layer[s]);
        if (source && first != INT32_MAX) layer[i] = std::max(0, first - 1);
    }

    // Vertices: the nodes, then one dummy per layer a long edge crosses.
    struct Vertex {
        int layer = 0;
        bool real = true;
        double x = 0;
        double key = 0;
        std::vector<size_t> up, down;
        std::vector<double> upOffsets; // parallel to up: the port offset of each link
    };
    std::vector<Vertex> vs(n);
    for (size_t i = 0; i < n; ++i) {
        vs[i].layer = layer[i];
        vs[i].x = spec.nodes[i].x;
    }
    auto link = [&vs](size_t a, size_t b, double offset) {
        vs[a].down.push_back(b);
        vs[b].up.push_back(a);
        vs[b].upOffsets.push_back(offset);
    };
    for (size_t k = 0; k < links.size(); ++k) {
        const auto [f, t] = links[k];
        if (layer[t] <= layer[f]) continue;
        size_t previous = f;
        for (int l = layer[f] + 1; l < layer[t]; ++l) {
            Vertex dummy;
            dummy.layer = l;
            dummy.real = false;
            dummy.x = (spec.nodes[f].x + spec.nodes[t].x) / 2;
            vs.push_back(dummy);
            link(previous, vs.size() - 1, portOffsets[k]);
            previous = vs.size() - 1;
        }
        link(previous, t, portOffsets[k]);
    }
    int layerCount = 0;
    for (const Vertex& v : vs)
        layerCount = std::max(layerCount, v.layer + 1);
    std::vector<std::vector<size_t>> layers(static_cast<size_t>(layerCount));
    for (size_t v = 0; v < vs.size(); ++v)
        layers[size_t(vs[v].layer)].push_back(v);
    // Start from the current left-to-right order, so a layout the person arranged is respected.
    for (auto& row : layers)
        std::stable_sort(row.begin(), row.end(),
                         [&vs](size_t a, size_t b) { return vs[a].x < vs[b].x; });

    // Order within layers: barycenter sweeps down and up.
    std::vector<double> slot(vs.size(), 0);
    auto numberSlots = [&](const std::vector<size_t>& row) {
        for (size_t k = 0; k < row.size(); ++k)
            slot[row[k]] = double(k);
    };
    for (const auto& row : layers)
        numberSlots(row);
    auto sortByBarycenter = [&](std::vector<size_t>& row, bool useUp) {
        for (size_t v : row) {
            const auto& neighbours = useUp ? vs[v].up : vs[v].down;
            if (neighbours.empty()) {
                vs[v].key = slot[v];
                continue;
            }
            double sum = 0;
            for (size_t k = 0; k < neighbours.size(); ++k)
                sum += slot[neighbours[k]] + (useUp ? vs[v].upOffsets[k] : 0.0);
            vs[v].key = sum / double(neighbours.size());
        }
        std::stable_sort(row.begin(), row.end(),
                         [&vs](size_t a, size_t b) { return vs[a].key < vs[b].key; });
        numberSlots(row);
    };
    for (int sweep = 0; sweep < 6; ++sweep) {
        for (int l = 1; l < layerCount; ++l)
            sortByBarycenter(layers[size_t(l)], true);
        for (int l = layerCount - 2; l >= 0; --l)
            sortByBarycenter(layers[size_t(l)], false);
    }

    // x: each vertex pulled towards its neighbours' mean, keeping order and separation.
    constexpr double kGap = 40;
    auto halfWidth = [&vs](size_t v) { return vs[v].real ? geometry::kNodeWidth / 2 : 0.0; };
    auto separation = [&](size_t a, size_t b) { return halfWidth(a) + halfWidth(b) + kGap; };
    for (auto& row : layers) {
        double width = 0;
        for (size_t k = 1; k < row.size(); ++k)
            width += separation(row[k - 1], row[k]);
        double x = -width / 2;
        for (size_t k = 0; k < row.size(); ++k) {
            if (k > 0) x += separation(row[k - 1], row[k]);
            vs[row[k]].x = x;
        }
    }
    auto place = [&](std::vector<size_t>& row, bool useUp) {
        const size_t m = row.size();
        if (m == 0) return;
        std::vector<double> desired(m), left(m), right(m);
        for (size_t k = 0; k < m; ++k) {
            // Real neighbours decide where a node goes, so a chain stays one straight column and
            // the long edges beside it bend around it; dummies follow their edge.
            const auto& neighbours = useUp ? vs[row[k]].up : vs[row[k]].down;
            double sum = 0, count = 0;
            for (int pass = 0; pass < 2 && count == 0; ++pass)
                for (size_t u : neighbours)
                    if (pass == 1 || vs[u].real || !vs[row[k]].real) {
                        sum += vs[u].x;
                        ++count;
                    }
            desired[k] = count == 0 ? vs[row[k]].x : sum / count;
        }
        left[0] = desired[0];
        for (size_t k = 1; k < m; ++k)
            left[k] = std::max(desired[k], left[k - 1] + separation(row[k - 1], row[k]));
        right[m - 1] = desired[m - 1];
        for (size_t k = m - 1; k-- > 0;)
            right[k] = std::min(desired[k], right[k + 1] - separation(row[k], row[k + 1]));
        for (size_t k = 0; k < m; ++k)
            vs[row[k]].x = (left[k] + right[k]) / 2;
    };
    for (int pass = 0; pass < 4; ++pass) {
        for (int l = 1; l < layerCount; ++l)
            place(layers[size_t(l)], true);
        for (int l = layerCount - 2; l >= 0; --l)
            place(layers[size_t(l)], false);
    }

    double shift = 0;
    if (!layers.empty() && !layers[0].empty()) {
        for (size_t v : layers[0])
            shift += vs[v].x;
        shift /= double(layers[0].size());
    }
    for (size_t i = 0; i < n; ++i) {
        spec.nodes[i].x = snap(vs[i].x - shift - geometry::kNodeWidth / 2);
        spec.nodes[i].y = double(layer[i]) * geometry::kLayerPitch;
    }
}

bool layoutNeedsArranging(const ModelSpec& spec) {
    using namespace geometry;
    auto rectOf = [](const Node& n) { return QRectF(n.x, n.y, kNodeWidth, kNodeHeight); };
    for (size_t i = 0; i < spec.nodes.size(); ++i)
        for (size_t j = i + 1; j < spec.nodes.size(); ++j)
            if (rectOf(spec.nodes[i]).intersects(rectOf(spec.nodes[j]))) return true;
    return false;
}

std::vector<QuickFix> quickFixes(const ModelSpec& spec, const graph::Analysis& analysis,
                                 NodeId id) {
    std::vector<QuickFix> fixes;
    const Node* node = spec.find(id);
    if (node == nullptr) return fixes;
    const bool hasError =
        std::any_of(analysis.problems.begin(), analysis.problems.end(), [id](const auto& p) {
            return p.node == id && p.severity == graph::Severity::Error;
        });
    if (!hasError) return fixes;
    const std::vector<Edge> inputs = spec.inputs_of(id);
    const QString label = nodeLabel(spec, id);

    auto setAttr = [&](const char* attr, int64_t value) {
        QuickFix fix;
        fix.text = tr("Set %1 of %2 to %3").arg(QString::fromLatin1(attr), label).arg(value);
        fix.result = spec;
        fix.result.node(id).attrs.set(attr, value);
        fixes.push_back(std::move(fix));
    };

    // What each check needs to know about the kind is in the registry (plugin kinds too).
    const graph::LayerKind* kind = graph::find_layer_kind(node->kind);
    if (kind == nullptr) return fixes;
    const std::string& featuresAttr = kind->input_features_attr;
    if (!featuresAttr.empty() && node->attrs.contains(featuresAttr) && !inputs.empty() &&
        inputs[0].to_port == 0) {
        if (auto in = inputType(spec, analysis, inputs[0])) {
            if (in->shape.size() > 2) {
                QuickFix fix;
                fix.text = tr("Insert Flatten before %1").arg(label);
                fix.result = spec;
                insertOnEdge(fix.result, inputs[0], "Flatten",
                             derivedName(*node, fix.result, "_flatten"));
                fixes.push_back(std::move(fix));
            } else if (in->shape.size() == 2 &&
                       in->shape.back() != node->attrs.get_int(featuresAttr)) {
                setAttr(featuresAttr.c_str(), in->shape.back());
            }
        }
    }

    // Layers whose channel count must equal dimension 1 of their input.
    const std::string& channelsAttr = kind->input_channels_attr;
    if (!channelsAttr.empty() && !inputs.empty() && node->attrs.contains(channelsAttr))
        if (auto in = inputType(spec, analysis, inputs[0]))
            if (in->shape.size() >= 2 && in->shape[1] != node->attrs.get_int(channelsAttr))
                setAttr(channelsAttr.c_str(), in->shape[1]);

    if (kind->elementwise_inputs && inputs.size() >= 2) {
        std::vector<graph::TensorType> types;
        for (const Edge& e : inputs) {
            auto t = inputType(spec, analysis, e);
            if (!t || t->shape.size() != 4) return fixes;
            types.push_back(*t);
        }
        size_t target = 0;
        for (size_t k = 1; k < types.size(); ++k)
            if (types[k].shape[1] > types[target].shape[1]) target = k;
        const graph::TensorType& want = types[target];
        bool channelsDiffer = false;
        for (const auto& t : types)
            channelsDiffer = channelsDiffer || t.shape[1] != want.shape[1];
        if (channelsDiffer) {
            QuickFix fix;
            fix.result = spec;
            QStringList changes;
            for (size_t k = 0; k < types.size(); ++k) {
                const graph::TensorType& t = types[k];
                if (t.shape[1] == want.shape[1]) continue;
                // A strided projection also matches a smaller feature map, as ResNet's does.
                int64_t stride = 1;
                if (t.shape[2] % want.shape[2] == 0 && t.shape[3] % want.shape[3] == 0 &&
                    t.shape[2] / want.shape[2] == t.shape[3] / want.shape[3])
                    stride = t.shape[2] / want.shape[2];
                graph::Attrs attrs{{"in_channels", t.shape[1]},
                                   {"out_channels", want.shape[1]},
                                   {"kernel_size", std::vector<int64_t>{1}},
                                   {"stride", std::vector<int64_t>{stride}},
                                   {"bias", false}};
                insertOnEdge(fix.result, inputs[k], "Conv2d",
                             derivedName(*node, fix.result, "_proj"), attrs);
                changes << tr("%1 → %2 channels").arg(t.shape[1]).arg(want.shape[1]);
            }
            fix.text = tr("Insert a 1×1 Conv2d before %1 (%2)").arg(label, changes.join(", "));
            fixes.push_back(std::move(fix));
        }
    }
    return fixes;
}

QString formatShape(const graph::TensorType& type) {
    QString out = QStringLiteral("[");
    for (int d = 0; d < type.shape.size(); ++d) {
        if (d > 0) out += QStringLiteral(", ");
        out += d == 0 ? QStringLiteral("N") : QString::number(type.shape[d]);
    }
    out += QLatin1Char(']');
    if (type.dtype != DType::Float32)
        out += QLatin1Char(' ') + QString::fromLatin1(dtype_name(type.dtype));
    return out;
}

} // namespace myelin::ui
