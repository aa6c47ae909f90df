#pragma once
// Edits of a graph::ModelSpec that the editor turns into undoable commands. Plain functions on
// plain data (no widgets), so each edit is easy to test and the commands stay snapshots.
#include "document/graph_layout.h"

#include <myelin/graph/analysis.h>

#include <QPointF>
#include <QString>

#include <string>
#include <vector>

namespace myelin::ui {

// The node's name as messages and undo texts show it ("conv1", "Conv2d #2").
QString nodeLabel(const graph::ModelSpec& spec, graph::NodeId id);

// Why an edge from output port `fromPort` of `from` into input `port` of `to` is refused; empty
// when allowed.
QString connectionRefusal(const graph::ModelSpec& spec, graph::NodeId from, graph::NodeId to,
                          int port, int fromPort = 0);

// `base` if no node uses it, else base_2, base_3, ...; empty stays empty (unnamed node).
std::string uniqueName(const graph::ModelSpec& spec, const std::string& base);

// The nodes `ids` (in model order) and the edges among them.
graph::ModelSpec extractNodes(const graph::ModelSpec& spec, const std::vector<graph::NodeId>& ids);

// Adds `fragment`'s nodes with fresh ids, names made unique and positions shifted by `offset`,
// and its edges between them. Returns the new ids in fragment order.
std::vector<graph::NodeId> pasteFragment(graph::ModelSpec& spec, const graph::ModelSpec& fragment,
                                         QPointF offset);

void removeNodes(graph::ModelSpec& spec, const std::vector<graph::NodeId>& ids);

// Adds a node of `kind` below `after` and connects after -> new node when both have the ports.
graph::NodeId addNodeAfter(graph::ModelSpec& spec, const std::string& kind, graph::NodeId after);

// Whether a node of this kind can sit on an edge (one input, one output).
bool canInsertOnEdge(const graph::LayerKind& kind);
// Replaces `edge` by edge.from -> new node -> edge.to, placing the new node between the two and
// moving the lower rows down when there is no room. `name` may be empty.
graph::NodeId insertOnEdge(graph::ModelSpec& spec, const graph::Edge& edge, const std::string& kind,
                           const std::string& name = {}, const graph::Attrs& attrs = {});

// A one-command repair for a node's shape problem.
struct QuickFix {
    QString text; // the menu entry and the undo text
    graph::ModelSpec result;
};
// The quick-fixes that apply to node `id` given its analysis (empty when none applies), from
// what its LayerKind says: Flatten before a layer with input_features_attr fed a feature map, or
// that attribute set from the inferred input; input_channels_attr set from the input's channels;
// a 1x1 Conv2d projection so the inputs of an elementwise_inputs merge (Add) agree in channels.
std::vector<QuickFix> quickFixes(const graph::ModelSpec& spec, const graph::Analysis& analysis,
                                 graph::NodeId id);

// "[N, 32, 28, 28]": a tensor type with the batch dimension written N (the canvas is
// independent of the batch size); " int64" appended for non-float32 types.
QString formatShape(const graph::TensorType& type);

} // namespace myelin::ui
