#pragma once
// Where nodes sit on the canvas: the geometry the layout shares with the node items, and the
// layered layout of a whole model (Arrange Layers, and a file opened without usable positions).
#include <myelin/graph/model_spec.h>

namespace myelin::ui {

// Canvas geometry the layout shares with the node items (scene units). Node::x/y is the top-left
// corner of a node.
namespace geometry {
inline constexpr double kNodeWidth = 220;
inline constexpr double kNodeHeight = 76; // with two lines of attributes
inline constexpr double kGrid = 20;
inline constexpr double kLayerPitch = 120;  // vertical distance between layers in a layout
inline constexpr double kColumnPitch = 280; // horizontal distance between nodes of a layer
} // namespace geometry

// `value` rounded to the canvas grid.
double snapToGrid(double value);

// Top-to-bottom layered layout: longest-path layers, order within a layer by barycenter sweeps
// (long edges take a slot in the layers they cross, so they run beside the nodes, not through
// them), positions snapped to the grid, the first layer centred on x = 0.
void arrangeLayers(graph::ModelSpec& spec);
// Whether the stored positions are unusable: nodes overlap (a file written without positions,
// every node at 0, 0). Such a model is laid out when it is opened.
bool layoutNeedsArranging(const graph::ModelSpec& spec);

} // namespace myelin::ui
