#include "document/model_edits.h"

#include <myelin/dtype.h>

#include <QCoreApplication>

#include <algorithm>
#include <optional>
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
    const NodeId id = spec.add_node(kind, {}, {}, snapToGrid(x), snapToGrid(y));
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
        y = snapToGrid((from.y + to.y) / 2);
    } else {
        // Make room: the target's row and everything below it move down one layer.
        for (Node& n : spec.nodes)
            if (n.y >= to.y - 1e-6) n.y += geometry::kLayerPitch;
    }
    const double x = snapToGrid((from.x + to.x) / 2);
    const NodeId id = spec.add_node(kind, name, attrs, x, y);
    spec.connect(edge.from, id, 0, edge.from_port);
    spec.connect(id, edge.to, edge.to_port);
    return id;
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
