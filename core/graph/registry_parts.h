#pragma once
// Internal to the layer registry (core/graph/registry*.cpp): the kind builder, the attribute
// readers and shape rule helpers the kind tables share (defined in registry.cpp), and one function
// per category that appends that category's kinds, in palette order, to the list registry.cpp's
// make_kinds() builds.
#include <myelin/graph/registry.h>
#include <myelin/nn/layers.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace myelin::nn {
struct TransformerEncoderLayerOptions;
}

namespace myelin::graph::detail {

using Inputs = std::span<const TensorType>;

LayerKind kind(std::string name, Category category, std::string doc);

// --- attribute reading -------------------------------------------------------------------------

nn::Size2 size2(const Attrs& a, std::string_view name);
std::array<int64_t, 2> pair_of(const Attrs& a, std::string_view name);

// --- shape rule helpers ------------------------------------------------------------------------

// Throws ShapeError.
[[noreturn]] void fail(const std::string& message);
void require_float(const TensorType& t);
// `layout` such as "[N, C, H, W]".
void require_rank(const TensorType& t, int rank, const char* layout);
void require_channels(const TensorType& t, int64_t channels, const char* attr);
int normalize_dim(int64_t dim, int rank, const char* attr);

// The sequence kinds' optional second port (registry_sequence.cpp): the `num_inputs` attribute
// whose doc ends with what happens `after_length`; port 0 a float [N, T, features] (`layout`),
// port 1, when present, int64 lengths [N]; the input's last dimension equal to an attribute.
AttrDesc lengths_port_attr(const char* after_length);
void require_sequence(Inputs in, const char* layout);
void require_last_dim(const TensorType& t, int64_t expected, const char* attr_name);

// One Transformer encoder layer (registry_attention.cpp), shared by the TransformerEncoderLayer
// and TransformerEncoder kinds: its parameter count, FLOPs on [n, t, e] and nn options.
int64_t encoder_layer_params(int64_t e, int64_t f);
double encoder_layer_flops(double n, double t, double e, double heads, double f, bool gelu);
nn::TransformerEncoderLayerOptions encoder_layer_options(const Attrs& a);

TensorType same_as_input(const Attrs&, Inputs in);
int64_t no_params(const Attrs&);
// Element-wise cost: `per_element` operations per output element.
FlopsFn pointwise(double per_element);
double no_flops(const Attrs&, Inputs, const TensorType&);

template <typename M> BuildFn simple() {
    return [](const Attrs&) { return std::make_shared<M>(); };
}

// --- the kinds of each category, appended in palette order --------------------------------------

void add_linear_conv_kinds(std::vector<LayerKind>& kinds);    // registry_conv.cpp
void add_pooling_kinds(std::vector<LayerKind>& kinds);        // registry_conv.cpp
void add_normalization_kinds(std::vector<LayerKind>& kinds);  // registry_norm.cpp
void add_activation_kinds(std::vector<LayerKind>& kinds);     // registry_activation.cpp
void add_regularization_kinds(std::vector<LayerKind>& kinds); // registry_norm.cpp
void add_merge_kinds(std::vector<LayerKind>& kinds);          // registry_structure.cpp
void add_reshape_kinds(std::vector<LayerKind>& kinds);        // registry_structure.cpp
void add_embedding_kinds(std::vector<LayerKind>& kinds);      // registry_structure.cpp
void add_sequence_kinds(std::vector<LayerKind>& kinds);       // registry_sequence.cpp
void add_attention_kinds(std::vector<LayerKind>& kinds);      // registry_attention.cpp

} // namespace myelin::graph::detail
