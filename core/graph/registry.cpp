// Every node kind the editor offers: attributes (with PyTorch's defaults), shape rule, parameter
// count, FLOPs and module builder. Shape rules mirror the layers' own checks in core/nn so a spec
// that passes analysis builds and runs; tests/core/test_graph.cpp runs every kind to prove it.
// This file: the builders and shape rule helpers the kind tables share (graph/registry_parts.h),
// the Input and Output kinds and the lookup; the other kinds are in registry_conv.cpp,
// registry_norm.cpp, registry_activation.cpp and registry_structure.cpp.
#include "graph/registry_parts.h"

#include <myelin/error.h>
#include <myelin/graph/registry.h>
#include <myelin/nn/layers.h>

#include <algorithm>
#include <cmath>
#include <deque>

namespace myelin::graph {

std::string to_string(const TensorType& type) {
    std::string out = type.shape.str();
    if (type.dtype != DType::Float32) out += std::string(" ") + dtype_name(type.dtype);
    return out;
}

const char* to_string(Category category) {
    switch (category) {
    case Category::InputOutput:
        return "Inputs & Outputs";
    case Category::LinearConv:
        return "Linear & Convolution";
    case Category::Pooling:
        return "Pooling";
    case Category::Normalization:
        return "Normalization";
    case Category::Activation:
        return "Activations";
    case Category::Regularization:
        return "Regularization";
    case Category::Merge:
        return "Merge";
    case Category::Reshape:
        return "Reshape";
    case Category::Embedding:
        return "Embedding & Sequence";
    }
    return "?";
}

const AttrDesc* LayerKind::attr(std::string_view attr_name) const {
    for (const auto& a : attrs)
        if (a.name == attr_name) return &a;
    return nullptr;
}

std::vector<std::string> LayerKind::output_ports(const Attrs& attrs) const {
    if (!has_output) return {};
    return output_names ? output_names(attrs) : outputs;
}

std::vector<TensorType> LayerKind::infer_all(const Attrs& attrs,
                                             std::span<const TensorType> inputs) const {
    if (infer_outputs) return infer_outputs(attrs, inputs);
    return {infer(attrs, inputs)};
}

namespace detail {

LayerKind kind(std::string name, Category category, std::string doc) {
    LayerKind k;
    k.name = std::move(name);
    k.category = category;
    k.doc = std::move(doc);
    return k;
}

// --- attribute reading -------------------------------------------------------------------------

nn::Size2 size2(const Attrs& a, std::string_view name) {
    const auto& v = a.get_ints(name);
    return v.size() == 1 ? nn::Size2(v[0]) : nn::Size2(v[0], v[1]);
}
std::array<int64_t, 2> pair_of(const Attrs& a, std::string_view name) {
    return size2(a, name).arr();
}

// --- shape rule helpers ------------------------------------------------------------------------

[[noreturn]] void fail(const std::string& message) {
    throw ShapeError(message);
}

void require_float(const TensorType& t) {
    if (!is_floating(t.dtype))
        throw DTypeError(std::string("expected a floating point input, got ") +
                         dtype_name(t.dtype));
}
// `layout` such as "[N, C, H, W]".
void require_rank(const TensorType& t, int rank, const char* layout) {
    require_float(t);
    if (t.shape.size() != rank)
        fail("expected " + std::to_string(rank) + "-d input " + layout + ", got " + t.shape.str());
}
void require_channels(const TensorType& t, int64_t channels, const char* attr) {
    if (t.shape[1] != channels)
        fail("expected " + std::to_string(channels) + " channels (" + attr + "), got " +
             std::to_string(t.shape[1]) + " in " + t.shape.str());
}
int normalize_dim(int64_t dim, int rank, const char* attr) {
    if (dim < -rank || dim >= rank)
        fail(std::string(attr) + "=" + std::to_string(dim) + " is out of range for a " +
             std::to_string(rank) + "-d input");
    return int(dim < 0 ? dim + rank : dim);
}

TensorType same_as_input(const Attrs&, Inputs in) {
    require_float(in[0]);
    return in[0];
}
int64_t no_params(const Attrs&) {
    return 0;
}
// Element-wise cost: `per_element` operations per output element.
FlopsFn pointwise(double per_element) {
    return [per_element](const Attrs&, Inputs, const TensorType& out) {
        return per_element * double(out.shape.numel());
    };
}
double no_flops(const Attrs&, Inputs, const TensorType&) {
    return 0;
}

} // namespace detail

namespace {

using namespace detail;

std::vector<LayerKind> make_kinds() {
    std::vector<LayerKind> kinds;

    // --- inputs and outputs ---
    {
        LayerKind k = kind("Input", Category::InputOutput,
                           "A model input: one example's shape (without the batch dimension) "
                           "and dtype.");
        k.attrs = {attr::int_list("shape", {1, 28, 28},
                                  "Shape of one example, without the batch dimension.", 1, 6, 1),
                   attr::choice("dtype", "float32", {"float32", "int64"},
                                "float32 for features and images; int64 for token indices "
                                "(Embedding).")};
        k.summary_attrs = {"shape"};
        k.inputs = {};
        k.infer = [](const Attrs& a, Inputs in) {
            // The batch size comes in as the only "input" (see analysis.cpp).
            Dims shape{in.empty() ? 1 : in[0].shape[0]};
            for (int64_t v : a.get_ints("shape"))
                shape.push_back(v);
            return TensorType{shape,
                              a.get_string("dtype") == "int64" ? DType::Int64 : DType::Float32};
        };
        k.param_count = no_params;
        k.flops = no_flops;
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k = kind("Output", Category::InputOutput,
                           "The model's output (the logits or predictions the loss receives).");
        k.has_output = false;
        k.infer = [](const Attrs&, Inputs in) { return in[0]; };
        k.param_count = no_params;
        k.flops = no_flops;
        kinds.push_back(std::move(k));
    }

    // The other categories, each in palette order (registry_*.cpp).
    add_linear_conv_kinds(kinds);
    add_pooling_kinds(kinds);
    add_normalization_kinds(kinds);
    add_activation_kinds(kinds);
    add_regularization_kinds(kinds);
    add_merge_kinds(kinds);
    add_reshape_kinds(kinds);
    add_embedding_kinds(kinds);
    add_sequence_kinds(kinds);
    add_attention_kinds(kinds);
    return kinds;
}

} // namespace

namespace {

std::deque<LayerKind>& registered_kinds() {
    static std::deque<LayerKind> kinds = [] {
        auto k = make_kinds();
        std::stable_sort(k.begin(), k.end(), [](const LayerKind& a, const LayerKind& b) {
            return int(a.category) < int(b.category);
        });
        return std::deque<LayerKind>(std::make_move_iterator(k.begin()),
                                     std::make_move_iterator(k.end()));
    }();
    return kinds;
}

std::string lower(std::string_view text) {
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(), ::tolower);
    return out;
}

} // namespace

const std::deque<LayerKind>& layer_kinds() {
    return registered_kinds();
}

void check_layer_kind(const LayerKind& kind) {
    const std::string what = "layer kind '" + kind.name + "'";
    if (kind.name.empty()) throw Error("a layer kind needs a name");
    if (const LayerKind* taken = find_layer_kind(kind.name))
        throw Error(
            what + " is already registered " +
            (taken->origin.empty() ? std::string("(built in)") : "(by " + taken->origin + ")"));
    if (!kind.infer) throw Error(what + " has no shape rule (infer)");
    if (kind.has_output && !kind.build) throw Error(what + " has no module builder (build)");
    if (kind.has_output && kind.outputs.empty() && !kind.output_names)
        throw Error(what + " has no output port names (outputs)");
    if ((kind.outputs.size() > 1 || kind.output_names) && !kind.infer_outputs)
        throw Error(what +
                    " has several output ports but no rule for their shapes (infer_outputs)");
    for (const auto& a : kind.attrs) {
        if (a.name.empty()) throw Error(what + ": an attribute has no name");
        if (std::string why = a.check(a.default_value); !why.empty())
            throw Error(what + ": the default of attribute '" + a.name + "' " + why);
    }
}

void register_layer_kind(LayerKind kind) {
    check_layer_kind(kind);
    if (!kind.param_count) kind.param_count = [](const Attrs&) { return int64_t(0); };
    if (!kind.flops)
        kind.flops = [](const Attrs&, std::span<const TensorType>, const TensorType&) {
            return 0.0;
        };
    // Appended, never inserted: records must not move (pointers to them are kept). The palette
    // groups kinds by category itself.
    registered_kinds().push_back(std::move(kind));
}

const LayerKind* find_layer_kind(std::string_view name) {
    for (const auto& k : layer_kinds())
        if (k.name == name) return &k;
    return nullptr;
}

std::vector<std::string> similar_layer_kinds(std::string_view name) {
    std::vector<std::string> close;
    const std::string a = lower(name);
    for (const auto& k : layer_kinds()) {
        const std::string b = lower(k.name);
        if (a == b || (a.size() >= 3 && b.find(a) != std::string::npos)) close.push_back(k.name);
    }
    return close;
}

const LayerKind& layer_kind(std::string_view name) {
    if (const LayerKind* k = find_layer_kind(name)) return *k;
    std::string close;
    for (const auto& k : similar_layer_kinds(name))
        close += (close.empty() ? "" : ", ") + k;
    throw Error("unknown layer kind '" + std::string(name) + "'" +
                (close.empty() ? std::string() : " (did you mean " + close + "?)"));
}

} // namespace myelin::graph
