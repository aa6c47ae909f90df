// Every node kind the editor offers: attributes (with PyTorch's defaults), shape rule, parameter
// count, FLOPs and module builder. Shape rules mirror the layers' own checks in core/nn so a spec
// that passes analysis builds and runs; tests/core/test_graph.cpp runs every kind to prove it.
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
        return "Embedding";
    }
    return "?";
}

const AttrDesc* LayerKind::attr(std::string_view attr_name) const {
    for (const auto& a : attrs)
        if (a.name == attr_name) return &a;
    return nullptr;
}

namespace {

using Inputs = std::span<const TensorType>;

AttrDesc desc(std::string name, AttrType type, AttrValue def, std::string doc) {
    AttrDesc d;
    d.name = std::move(name);
    d.type = type;
    d.default_value = std::move(def);
    d.doc = std::move(doc);
    return d;
}
LayerKind kind(std::string name, Category category, std::string doc) {
    LayerKind k;
    k.name = std::move(name);
    k.category = category;
    k.doc = std::move(doc);
    return k;
}

// --- attribute descriptions --------------------------------------------------------------------

AttrDesc int_attr(std::string name, int64_t def, std::string doc, std::optional<double> min = 1,
                  std::optional<double> max = std::nullopt) {
    AttrDesc d = desc(std::move(name), AttrType::Int, def, std::move(doc));
    d.min = min;
    d.max = max;
    return d;
}
AttrDesc float_attr(std::string name, double def, std::string doc,
                    std::optional<double> min = std::nullopt,
                    std::optional<double> max = std::nullopt) {
    AttrDesc d = desc(std::move(name), AttrType::Float, def, std::move(doc));
    d.min = min;
    d.max = max;
    return d;
}
AttrDesc bool_attr(std::string name, bool def, std::string doc) {
    return desc(std::move(name), AttrType::Bool, def, std::move(doc));
}
AttrDesc enum_attr(std::string name, std::string def, std::vector<std::string> choices,
                   std::string doc) {
    AttrDesc d = desc(std::move(name), AttrType::Enum, std::move(def), std::move(doc));
    d.choices = std::move(choices);
    return d;
}
// An int or a pair of ints (kernel_size = 3 or [3, 5]).
AttrDesc pair_attr(std::string name, int64_t def, std::string doc, double min = 1) {
    AttrDesc d =
        desc(std::move(name), AttrType::IntList, std::vector<int64_t>{def}, std::move(doc));
    d.min = min;
    return d;
}
AttrDesc list_attr(std::string name, std::vector<int64_t> def, std::string doc, int min_size,
                   int max_size, std::optional<double> min = 1) {
    AttrDesc d = desc(std::move(name), AttrType::IntList, std::move(def), std::move(doc));
    d.min = min;
    d.list_min_size = min_size;
    d.list_max_size = max_size;
    return d;
}
AttrDesc nullable(AttrDesc d) {
    d.nullable = true;
    d.default_value = std::monostate{};
    return d;
}

const AttrDesc kBias = bool_attr("bias", true, "Learn an additive bias.");
const AttrDesc kPaddingMode =
    enum_attr("padding_mode", "zeros", {"zeros", "reflect", "replicate", "circular"},
              "What the padding holds: zeros, the border mirrored (reflect), the edge repeated "
              "(replicate) or the opposite side (circular).");
AttrDesc num_inputs_attr() {
    return int_attr("num_inputs", 2, "Number of input ports.", 2, 16);
}

// --- attribute reading -------------------------------------------------------------------------

nn::Size2 size2(const Attrs& a, std::string_view name) {
    const auto& v = a.get_ints(name);
    return v.size() == 1 ? nn::Size2(v[0]) : nn::Size2(v[0], v[1]);
}
std::array<int64_t, 2> pair_of(const Attrs& a, std::string_view name) {
    return size2(a, name).arr();
}
std::optional<double> momentum_of(const Attrs& a) {
    if (a.is_none("momentum")) return std::nullopt;
    return a.get_float("momentum");
}

// --- shape rule helpers ------------------------------------------------------------------------

[[noreturn]] void fail(const std::string& message) {
    throw ShapeError(message);
}

// A convolution's reflect padding must be smaller than the input along each padded dimension,
// circular padding at most as large (it wraps the opposite side around once), as in PyTorch.
// One entry per spatial dimension: kernel, dilation, padding, input size, name.
struct PaddedDim {
    int64_t k, d, p, size;
    const char* name;
};
void require_padding_fits(const Attrs& a, std::initializer_list<PaddedDim> dims) {
    const std::string mode = a.get_string("padding_mode");
    if (mode != "reflect" && mode != "circular") return;
    for (const PaddedDim& dim : dims) {
        const int64_t side =
            nn::conv_padding_sides(dim.k, dim.d, dim.p, a.get_bool("same_padding"))[1];
        if (mode == "reflect" ? side >= dim.size : side > dim.size)
            fail(mode + " padding of " + std::to_string(side) + " needs an input " + dim.name +
                 (mode == "reflect" ? " above " : " of at least ") + std::to_string(side) +
                 ", got " + std::to_string(dim.size));
    }
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

// Sliding-window output length (convolution and pooling), PyTorch's formula.
int64_t window_out(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation,
                   bool ceil_mode, const char* axis) {
    int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1;
    int64_t out = (span < 0 ? -1 : (ceil_mode ? (span + stride - 1) / stride : span / stride)) + 1;
    if (ceil_mode && out > 0 && (out - 1) * stride >= in + pad) --out;
    if (out <= 0)
        fail(std::string("input ") + axis + " " + std::to_string(in) + " is too small for kernel " +
             std::to_string(kernel) +
             (dilation > 1 ? " dilation " + std::to_string(dilation) : "") +
             (pad ? " with padding " + std::to_string(pad) : "") + ": the output would be empty");
    return out;
}
void require_pool_padding(std::array<int64_t, 2> kernel, std::array<int64_t, 2> pad) {
    for (int i = 0; i < 2; ++i)
        if (pad[i] > kernel[i] / 2)
            fail("padding " + std::to_string(pad[i]) + " must be at most half of kernel_size " +
                 std::to_string(kernel[i]));
}
void require_divisible(int64_t value, int64_t groups, const char* what) {
    if (value % groups != 0)
        fail(std::string(what) + " " + std::to_string(value) + " must be divisible by groups " +
             std::to_string(groups));
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

template <typename M> BuildFn simple() {
    return [](const Attrs&) { return std::make_shared<M>(); };
}

// --- the kinds ---------------------------------------------------------------------------------

LayerKind activation(std::string name, std::string doc, double cost, BuildFn build,
                     std::vector<AttrDesc> attrs = {}) {
    LayerKind k = kind(std::move(name), Category::Activation, std::move(doc));
    k.attrs = std::move(attrs);
    for (const auto& a : k.attrs)
        k.summary_attrs.push_back(a.name);
    k.infer = same_as_input;
    k.param_count = no_params;
    k.flops = pointwise(cost);
    k.build = std::move(build);
    return k;
}

LayerKind merge(std::string name, std::string doc, std::vector<AttrDesc> attrs, InferFn infer,
                BuildFn build) {
    LayerKind k = kind(std::move(name), Category::Merge, std::move(doc));
    k.attrs = std::move(attrs);
    k.summary_attrs = {"num_inputs"};
    k.variadic = true;
    k.inputs = {};
    k.infer = std::move(infer);
    k.param_count = no_params;
    k.flops = [](const Attrs& a, Inputs, const TensorType& out) {
        return double(a.get_int("num_inputs") - 1) * double(out.shape.numel());
    };
    k.build = std::move(build);
    return k;
}

TensorType broadcast_all(const Attrs&, Inputs in) {
    Dims shape = in[0].shape;
    for (size_t i = 1; i < in.size(); ++i) {
        const Dims& b = in[i].shape;
        int rank = std::max(shape.size(), b.size());
        Dims out = Dims::filled(rank, 1);
        for (int d = 0; d < rank; ++d) {
            int ia = d - (rank - shape.size()), ib = d - (rank - b.size());
            int64_t x = ia >= 0 ? shape[ia] : 1, y = ib >= 0 ? b[ib] : 1;
            if (x != y && x != 1 && y != 1)
                fail("inputs must have broadcastable shapes, got " + in[0].shape.str() +
                     (i > 1 ? " (and earlier inputs)" : "") + " and " + b.str() + " at input " +
                     std::to_string(i));
            out[d] = x == 1 ? y : x;
        }
        shape = out;
    }
    for (const auto& t : in)
        require_float(t);
    return {shape, in[0].dtype};
}

std::vector<LayerKind> make_kinds() {
    std::vector<LayerKind> kinds;

    // --- inputs and outputs ---
    {
        LayerKind k = kind("Input", Category::InputOutput,
                           "A model input: one example's shape (without the batch dimension) "
                           "and dtype.");
        k.attrs = {list_attr("shape", {1, 28, 28},
                             "Shape of one example, without the batch dimension.", 1, 6),
                   enum_attr("dtype", "float32", {"float32", "int64"},
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

    // --- linear and convolution ---
    {
        LayerKind k =
            kind("Linear", Category::LinearConv, "y = x W^T + b over the last dimension.");
        k.attrs = {int_attr("in_features", 128, "Size of each input sample (last dimension)."),
                   int_attr("out_features", 10, "Size of each output sample."), kBias};
        k.summary_attrs = {"in_features", "out_features"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_float(in[0]);
            const Dims& s = in[0].shape;
            int64_t n = a.get_int("in_features");
            if (s.size() < 2 || s.back() != n)
                fail("expected input [N, *, " + std::to_string(n) +
                     "] (in_features=" + std::to_string(n) + "), got " + s.str() +
                     (s.size() > 2 ? "; insert a Flatten before this layer" : ""));
            Dims out = s;
            out[out.size() - 1] = a.get_int("out_features");
            return TensorType{out, in[0].dtype};
        };
        k.param_count = [](const Attrs& a) {
            int64_t o = a.get_int("out_features");
            return a.get_int("in_features") * o + (a.get_bool("bias") ? o : 0);
        };
        k.flops = [](const Attrs& a, Inputs, const TensorType& out) {
            return 2.0 * double(a.get_int("in_features")) * double(out.shape.numel());
        };
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::Linear>(a.get_int("in_features"), a.get_int("out_features"),
                                                a.get_bool("bias"));
        };
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k =
            kind("Bilinear", Category::LinearConv, "y = x1^T A x2 + b: combines two inputs.");
        k.attrs = {int_attr("in1_features", 16, "Size of each first-input sample."),
                   int_attr("in2_features", 16, "Size of each second-input sample."),
                   int_attr("out_features", 16, "Size of each output sample."), kBias};
        k.summary_attrs = {"in1_features", "in2_features", "out_features"};
        k.inputs = {"input1", "input2"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_float(in[0]);
            require_float(in[1]);
            int64_t n1 = a.get_int("in1_features"), n2 = a.get_int("in2_features");
            const Dims &s1 = in[0].shape, &s2 = in[1].shape;
            if (s1.size() < 2 || s1.back() != n1)
                fail("expected input1 [N, *, " + std::to_string(n1) + "], got " + s1.str());
            if (s2.size() != s1.size() || s2.back() != n2)
                fail("expected input2 [N, *, " + std::to_string(n2) +
                     "] with input1's leading "
                     "dimensions, got " +
                     s2.str());
            for (int d = 0; d + 1 < s1.size(); ++d)
                if (s1[d] != s2[d])
                    fail("inputs must agree in all but the last dimension, got " + s1.str() +
                         " and " + s2.str());
            Dims out = s1;
            out[out.size() - 1] = a.get_int("out_features");
            return TensorType{out, in[0].dtype};
        };
        k.param_count = [](const Attrs& a) {
            int64_t o = a.get_int("out_features");
            return a.get_int("in1_features") * a.get_int("in2_features") * o +
                   (a.get_bool("bias") ? o : 0);
        };
        k.flops = [](const Attrs& a, Inputs, const TensorType& out) {
            return 2.0 * double(a.get_int("in1_features") * a.get_int("in2_features")) *
                   double(out.shape.numel());
        };
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::Bilinear>(a.get_int("in1_features"),
                                                  a.get_int("in2_features"),
                                                  a.get_int("out_features"), a.get_bool("bias"));
        };
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k = kind("Conv1d", Category::LinearConv, "1-d convolution over [N, C, L].");
        k.attrs = {int_attr("in_channels", 1, "Channels of the input."),
                   int_attr("out_channels", 16, "Channels produced (number of filters)."),
                   int_attr("kernel_size", 3, "Length of the filter."),
                   int_attr("stride", 1, "Step of the filter."),
                   int_attr("padding", 0, "Zeros added on both sides.", 0),
                   bool_attr("same_padding", false,
                             "Pad so the output has the input's length (PyTorch's "
                             "padding='same'; needs stride 1). Overrides padding."),
                   kPaddingMode,
                   int_attr("dilation", 1, "Spacing between filter taps."),
                   int_attr("groups", 1, "Blocked connections from input to output channels."),
                   kBias};
        k.summary_attrs = {"out_channels", "kernel_size", "stride"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_rank(in[0], 3, "[N, C, L]");
            int64_t cin = a.get_int("in_channels"), g = a.get_int("groups");
            require_channels(in[0], cin, "in_channels");
            require_divisible(cin, g, "in_channels");
            require_divisible(a.get_int("out_channels"), g, "out_channels");
            int64_t len = in[0].shape[2];
            require_padding_fits(a, {{a.get_int("kernel_size"), a.get_int("dilation"),
                                      a.get_int("padding"), len, "length"}});
            if (a.get_bool("same_padding")) {
                if (a.get_int("stride") != 1) fail("same_padding needs stride 1");
            } else {
                len = window_out(len, a.get_int("kernel_size"), a.get_int("stride"),
                                 a.get_int("padding"), a.get_int("dilation"), false, "length");
            }
            return TensorType{Dims{in[0].shape[0], a.get_int("out_channels"), len}, in[0].dtype};
        };
        k.param_count = [](const Attrs& a) {
            int64_t o = a.get_int("out_channels");
            return o * (a.get_int("in_channels") / a.get_int("groups")) * a.get_int("kernel_size") +
                   (a.get_bool("bias") ? o : 0);
        };
        k.flops = [](const Attrs& a, Inputs, const TensorType& out) {
            return 2.0 * double(out.shape.numel()) *
                   double(a.get_int("in_channels") / a.get_int("groups") *
                          a.get_int("kernel_size"));
        };
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::Conv1d>(
                a.get_int("in_channels"), a.get_int("out_channels"), a.get_int("kernel_size"),
                nn::Conv1dOptions{.stride = a.get_int("stride"),
                                  .padding = a.get_int("padding"),
                                  .dilation = a.get_int("dilation"),
                                  .groups = a.get_int("groups"),
                                  .bias = a.get_bool("bias"),
                                  .same_padding = a.get_bool("same_padding"),
                                  .padding_mode = a.get_string("padding_mode")});
        };
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k = kind("Conv2d", Category::LinearConv, "2-d convolution over [N, C, H, W].");
        k.attrs = {int_attr("in_channels", 1, "Channels of the input."),
                   int_attr("out_channels", 16, "Channels produced (number of filters)."),
                   pair_attr("kernel_size", 3, "Filter size: one int or [height, width]."),
                   pair_attr("stride", 1, "Step of the filter."),
                   pair_attr("padding", 0, "Zeros added on each side.", 0),
                   bool_attr("same_padding", false,
                             "Pad so the output has the input's height and width (PyTorch's "
                             "padding='same'; needs stride 1). Overrides padding."),
                   kPaddingMode,
                   pair_attr("dilation", 1, "Spacing between filter taps."),
                   int_attr("groups", 1, "Blocked connections from input to output channels."),
                   kBias};
        k.summary_attrs = {"out_channels", "kernel_size", "stride", "padding"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_rank(in[0], 4, "[N, C, H, W]");
            int64_t cin = a.get_int("in_channels"), g = a.get_int("groups");
            require_channels(in[0], cin, "in_channels");
            require_divisible(cin, g, "in_channels");
            require_divisible(a.get_int("out_channels"), g, "out_channels");
            int64_t h = in[0].shape[2], w = in[0].shape[3];
            const auto k2 = pair_of(a, "kernel_size"), d2 = pair_of(a, "dilation"),
                       p2 = pair_of(a, "padding");
            require_padding_fits(
                a, {{k2[0], d2[0], p2[0], h, "height"}, {k2[1], d2[1], p2[1], w, "width"}});
            if (a.get_bool("same_padding")) {
                if (pair_of(a, "stride") != std::array<int64_t, 2>{1, 1})
                    fail("same_padding needs stride 1");
            } else {
                auto k2 = pair_of(a, "kernel_size"), s = pair_of(a, "stride"),
                     p = pair_of(a, "padding"), d = pair_of(a, "dilation");
                h = window_out(h, k2[0], s[0], p[0], d[0], false, "height");
                w = window_out(w, k2[1], s[1], p[1], d[1], false, "width");
            }
            return TensorType{Dims{in[0].shape[0], a.get_int("out_channels"), h, w}, in[0].dtype};
        };
        k.param_count = [](const Attrs& a) {
            auto k2 = pair_of(a, "kernel_size");
            int64_t o = a.get_int("out_channels");
            return o * (a.get_int("in_channels") / a.get_int("groups")) * k2[0] * k2[1] +
                   (a.get_bool("bias") ? o : 0);
        };
        k.flops = [](const Attrs& a, Inputs, const TensorType& out) {
            auto k2 = pair_of(a, "kernel_size");
            return 2.0 * double(out.shape.numel()) *
                   double(a.get_int("in_channels") / a.get_int("groups") * k2[0] * k2[1]);
        };
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::Conv2d>(
                a.get_int("in_channels"), a.get_int("out_channels"), size2(a, "kernel_size"),
                nn::Conv2dOptions{.stride = size2(a, "stride"),
                                  .padding = size2(a, "padding"),
                                  .dilation = size2(a, "dilation"),
                                  .groups = a.get_int("groups"),
                                  .bias = a.get_bool("bias"),
                                  .same_padding = a.get_bool("same_padding"),
                                  .padding_mode = a.get_string("padding_mode")});
        };
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k = kind("ConvTranspose2d", Category::LinearConv,
                           "Transposed 2-d convolution (learned upsampling) over [N, C, H, W].");
        k.attrs = {int_attr("in_channels", 16, "Channels of the input."),
                   int_attr("out_channels", 16, "Channels produced."),
                   pair_attr("kernel_size", 2, "Filter size: one int or [height, width]."),
                   pair_attr("stride", 2, "Upsampling step."),
                   pair_attr("padding", 0, "Implicit padding removed from each side.", 0),
                   pair_attr("output_padding", 0,
                             "Extra size added to one side of the output (less than stride "
                             "or dilation).",
                             0),
                   int_attr("groups", 1, "Blocked connections from input to output channels."),
                   kBias,
                   pair_attr("dilation", 1, "Spacing between filter taps.")};
        k.summary_attrs = {"out_channels", "kernel_size", "stride"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_rank(in[0], 4, "[N, C, H, W]");
            int64_t cin = a.get_int("in_channels"), g = a.get_int("groups");
            require_channels(in[0], cin, "in_channels");
            require_divisible(cin, g, "in_channels");
            require_divisible(a.get_int("out_channels"), g, "out_channels");
            auto k2 = pair_of(a, "kernel_size"), s = pair_of(a, "stride"),
                 p = pair_of(a, "padding"), op = pair_of(a, "output_padding"),
                 d = pair_of(a, "dilation");
            Dims out{in[0].shape[0], a.get_int("out_channels"), 0, 0};
            for (int i = 0; i < 2; ++i) {
                if (op[i] >= s[i] && op[i] >= d[i])
                    fail("output_padding " + std::to_string(op[i]) +
                         " must be smaller than stride or dilation");
                out[2 + i] =
                    (in[0].shape[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (k2[i] - 1) + op[i] + 1;
                if (out[2 + i] <= 0)
                    fail("padding " + std::to_string(p[i]) + " leaves an empty output for input " +
                         in[0].shape.str());
            }
            return TensorType{out, in[0].dtype};
        };
        k.param_count = [](const Attrs& a) {
            auto k2 = pair_of(a, "kernel_size");
            int64_t o = a.get_int("out_channels");
            return a.get_int("in_channels") * (o / a.get_int("groups")) * k2[0] * k2[1] +
                   (a.get_bool("bias") ? o : 0);
        };
        k.flops = [](const Attrs& a, Inputs in, const TensorType&) {
            auto k2 = pair_of(a, "kernel_size");
            return 2.0 * double(in[0].shape.numel()) *
                   double(a.get_int("out_channels") / a.get_int("groups") * k2[0] * k2[1]);
        };
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::ConvTranspose2d>(
                a.get_int("in_channels"), a.get_int("out_channels"), size2(a, "kernel_size"),
                nn::ConvTranspose2dOptions{.stride = size2(a, "stride"),
                                           .padding = size2(a, "padding"),
                                           .output_padding = size2(a, "output_padding"),
                                           .groups = a.get_int("groups"),
                                           .bias = a.get_bool("bias"),
                                           .dilation = size2(a, "dilation")});
        };
        kinds.push_back(std::move(k));
    }

    // --- pooling ---
    {
        LayerKind k =
            kind("MaxPool2d", Category::Pooling, "Maximum over sliding windows of [N, C, H, W].");
        k.attrs = {pair_attr("kernel_size", 2, "Window size: one int or [height, width]."),
                   nullable(pair_attr("stride", 2, "Window step; None: kernel_size.")),
                   pair_attr("padding", 0, "Implicit -inf padding on each side.", 0),
                   pair_attr("dilation", 1, "Spacing between window elements."),
                   bool_attr("ceil_mode", false, "Round the output size up instead of down.")};
        k.summary_attrs = {"kernel_size", "stride"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_rank(in[0], 4, "[N, C, H, W]");
            auto k2 = pair_of(a, "kernel_size"), p = pair_of(a, "padding"),
                 d = pair_of(a, "dilation");
            auto s = a.is_none("stride") ? k2 : pair_of(a, "stride");
            require_pool_padding(k2, p);
            bool ceil = a.get_bool("ceil_mode");
            Dims out = in[0].shape;
            out[2] = window_out(out[2], k2[0], s[0], p[0], d[0], ceil, "height");
            out[3] = window_out(out[3], k2[1], s[1], p[1], d[1], ceil, "width");
            return TensorType{out, in[0].dtype};
        };
        k.param_count = no_params;
        k.flops = [](const Attrs& a, Inputs, const TensorType& out) {
            auto k2 = pair_of(a, "kernel_size");
            return double(out.shape.numel() * k2[0] * k2[1]);
        };
        k.build = [](const Attrs& a) {
            nn::MaxPool2dOptions o{.stride = std::nullopt,
                                   .padding = size2(a, "padding"),
                                   .dilation = size2(a, "dilation"),
                                   .ceil_mode = a.get_bool("ceil_mode")};
            if (!a.is_none("stride")) o.stride = size2(a, "stride");
            return std::make_shared<nn::MaxPool2d>(size2(a, "kernel_size"), o);
        };
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k =
            kind("AvgPool2d", Category::Pooling, "Average over sliding windows of [N, C, H, W].");
        k.attrs = {
            pair_attr("kernel_size", 2, "Window size: one int or [height, width]."),
            nullable(pair_attr("stride", 2, "Window step; None: kernel_size.")),
            pair_attr("padding", 0, "Implicit zero padding on each side.", 0),
            bool_attr("ceil_mode", false, "Round the output size up instead of down."),
            bool_attr("count_include_pad", true, "Count padding zeros in the average's divisor.")};
        k.summary_attrs = {"kernel_size", "stride"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_rank(in[0], 4, "[N, C, H, W]");
            auto k2 = pair_of(a, "kernel_size"), p = pair_of(a, "padding");
            auto s = a.is_none("stride") ? k2 : pair_of(a, "stride");
            require_pool_padding(k2, p);
            bool ceil = a.get_bool("ceil_mode");
            Dims out = in[0].shape;
            out[2] = window_out(out[2], k2[0], s[0], p[0], 1, ceil, "height");
            out[3] = window_out(out[3], k2[1], s[1], p[1], 1, ceil, "width");
            return TensorType{out, in[0].dtype};
        };
        k.param_count = no_params;
        k.flops = [](const Attrs& a, Inputs, const TensorType& out) {
            auto k2 = pair_of(a, "kernel_size");
            return double(out.shape.numel() * k2[0] * k2[1]);
        };
        k.build = [](const Attrs& a) {
            nn::AvgPool2dOptions o{.stride = std::nullopt,
                                   .padding = size2(a, "padding"),
                                   .ceil_mode = a.get_bool("ceil_mode"),
                                   .count_include_pad = a.get_bool("count_include_pad")};
            if (!a.is_none("stride")) o.stride = size2(a, "stride");
            return std::make_shared<nn::AvgPool2d>(size2(a, "kernel_size"), o);
        };
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k = kind("AdaptiveAvgPool2d", Category::Pooling,
                           "Average pooling to a fixed output size (1 = global average).");
        k.attrs = {pair_attr("output_size", 1, "Output height and width: one int or a pair.")};
        k.summary_attrs = {"output_size"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_rank(in[0], 4, "[N, C, H, W]");
            auto o = pair_of(a, "output_size");
            return TensorType{Dims{in[0].shape[0], in[0].shape[1], o[0], o[1]}, in[0].dtype};
        };
        k.param_count = no_params;
        k.flops = [](const Attrs&, Inputs in, const TensorType&) {
            return double(in[0].shape.numel());
        };
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::AdaptiveAvgPool2d>(size2(a, "output_size"));
        };
        kinds.push_back(std::move(k));
    }

    // --- normalization ---
    auto batch_norm = [](std::string name, std::string doc, bool two_d) {
        LayerKind k = kind(std::move(name), Category::Normalization, std::move(doc));
        AttrDesc momentum = float_attr("momentum", 0.1,
                                       "Running statistics update factor; None: cumulative "
                                       "average.",
                                       0.0, 1.0);
        momentum.nullable = true;
        k.attrs = {int_attr("num_features", 16, "Channels C of the input."),
                   float_attr("eps", 1e-5, "Added to the variance for stability.", 0.0), momentum,
                   bool_attr("affine", true, "Learn a per-channel scale and shift."),
                   bool_attr("track_running_stats", true,
                             "Keep running mean and variance for evaluation.")};
        k.summary_attrs = {"num_features"};
        k.infer = [two_d](const Attrs& a, Inputs in) {
            require_float(in[0]);
            int rank = in[0].shape.size();
            if (two_d ? rank != 4 : (rank != 2 && rank != 3))
                fail(std::string("expected ") +
                     (two_d ? "4-d input [N, C, H, W]" : "2-d or 3-d input [N, C] or [N, C, L]") +
                     ", got " + in[0].shape.str());
            require_channels(in[0], a.get_int("num_features"), "num_features");
            return in[0];
        };
        k.param_count = [](const Attrs& a) {
            return a.get_bool("affine") ? 2 * a.get_int("num_features") : 0;
        };
        k.flops = pointwise(4);
        k.build = [two_d](const Attrs& a) -> std::shared_ptr<nn::Module> {
            if (two_d)
                return std::make_shared<nn::BatchNorm2d>(
                    a.get_int("num_features"), a.get_float("eps"), momentum_of(a),
                    a.get_bool("affine"), a.get_bool("track_running_stats"));
            return std::make_shared<nn::BatchNorm1d>(a.get_int("num_features"), a.get_float("eps"),
                                                     momentum_of(a), a.get_bool("affine"),
                                                     a.get_bool("track_running_stats"));
        };
        return k;
    };
    kinds.push_back(batch_norm(
        "BatchNorm1d", "Batch normalization over [N, C] or [N, C, L] (per channel).", false));
    kinds.push_back(
        batch_norm("BatchNorm2d", "Batch normalization over [N, C, H, W] (per channel).", true));
    {
        LayerKind k = kind("LayerNorm", Category::Normalization,
                           "Normalizes over the trailing dimensions given by normalized_shape.");
        k.attrs = {list_attr("normalized_shape", {128},
                             "The trailing dimensions to normalize over.", 1, 4),
                   float_attr("eps", 1e-5, "Added to the variance for stability.", 0.0),
                   bool_attr("elementwise_affine", true, "Learn a scale and shift per element.")};
        k.summary_attrs = {"normalized_shape"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_float(in[0]);
            const auto& ns = a.get_ints("normalized_shape");
            const Dims& s = in[0].shape;
            bool ok = s.size() > int(ns.size());
            for (size_t i = 0; ok && i < ns.size(); ++i)
                ok = s[s.size() - int(ns.size()) + int(i)] == ns[i];
            if (!ok)
                fail("expected input [N, *, " + Dims(ns).str().substr(1) +
                     " (normalized_shape), got " + s.str());
            return in[0];
        };
        k.param_count = [](const Attrs& a) {
            return a.get_bool("elementwise_affine")
                       ? 2 * Dims(a.get_ints("normalized_shape")).numel()
                       : 0;
        };
        k.flops = pointwise(5);
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::LayerNorm>(Dims(a.get_ints("normalized_shape")),
                                                   a.get_float("eps"),
                                                   a.get_bool("elementwise_affine"));
        };
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k = kind("GroupNorm", Category::Normalization,
                           "Normalizes groups of channels of [N, C, *].");
        k.attrs = {int_attr("num_groups", 4, "Groups the channels are divided into."),
                   int_attr("num_channels", 16, "Channels C of the input."),
                   float_attr("eps", 1e-5, "Added to the variance for stability.", 0.0),
                   bool_attr("affine", true, "Learn a per-channel scale and shift.")};
        k.summary_attrs = {"num_groups", "num_channels"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_float(in[0]);
            if (in[0].shape.size() < 2) fail("expected input [N, C, *], got " + in[0].shape.str());
            require_channels(in[0], a.get_int("num_channels"), "num_channels");
            if (a.get_int("num_channels") % a.get_int("num_groups") != 0)
                fail("num_channels " + std::to_string(a.get_int("num_channels")) +
                     " must be divisible by num_groups " + std::to_string(a.get_int("num_groups")));
            return in[0];
        };
        k.param_count = [](const Attrs& a) {
            return a.get_bool("affine") ? 2 * a.get_int("num_channels") : 0;
        };
        k.flops = pointwise(5);
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::GroupNorm>(a.get_int("num_groups"),
                                                   a.get_int("num_channels"), a.get_float("eps"),
                                                   a.get_bool("affine"));
        };
        kinds.push_back(std::move(k));
    }

    // --- activations ---
    kinds.push_back(activation("ReLU", "max(0, x).", 1, simple<nn::ReLU>()));
    kinds.push_back(activation("LeakyReLU", "x for x > 0, negative_slope * x otherwise.", 1,
                               [](const Attrs& a) {
                                   return std::make_shared<nn::LeakyReLU>(
                                       a.get_float("negative_slope"));
                               },
                               {float_attr("negative_slope", 0.01, "Slope for negative inputs.")}));
    {
        LayerKind k = activation(
            "PReLU", "LeakyReLU with a learned slope (one, or one per channel).", 1,
            [](const Attrs& a) {
                return std::make_shared<nn::PReLU>(a.get_int("num_parameters"),
                                                   a.get_float("init"));
            },
            {int_attr("num_parameters", 1, "1, or the number of channels (dimension 1)."),
             float_attr("init", 0.25, "Initial slope.")});
        k.infer = [](const Attrs& a, Inputs in) {
            require_float(in[0]);
            int64_t n = a.get_int("num_parameters");
            if (n > 1 && (in[0].shape.size() < 2 || in[0].shape[1] != n))
                fail("num_parameters=" + std::to_string(n) + " needs input [N, " +
                     std::to_string(n) + ", *], got " + in[0].shape.str());
            return in[0];
        };
        k.param_count = [](const Attrs& a) { return a.get_int("num_parameters"); };
        kinds.push_back(std::move(k));
    }
    kinds.push_back(
        activation("ELU", "x for x > 0, alpha * (exp(x) - 1) otherwise.", 3,
                   [](const Attrs& a) { return std::make_shared<nn::ELU>(a.get_float("alpha")); },
                   {float_attr("alpha", 1.0, "Saturation value for negative inputs.")}));
    kinds.push_back(activation(
        "GELU", "x * Phi(x), the Gaussian error linear unit.", 8,
        [](const Attrs& a) { return std::make_shared<nn::GELU>(a.get_string("approximate")); },
        {enum_attr("approximate", "none", {"none", "tanh"},
                   "Exact (erf) or the tanh approximation.")}));
    kinds.push_back(activation("SiLU", "x * sigmoid(x) (swish).", 4, simple<nn::SiLU>()));
    kinds.push_back(activation("Sigmoid", "1 / (1 + exp(-x)).", 4, simple<nn::Sigmoid>()));
    kinds.push_back(activation("Tanh", "Hyperbolic tangent.", 4, simple<nn::Tanh>()));
    {
        auto softmax_like = [](std::string name, std::string doc, bool log) {
            LayerKind k = activation(
                std::move(name), std::move(doc), 5,
                [log](const Attrs& a) -> std::shared_ptr<nn::Module> {
                    int dim = int(a.get_int("dim"));
                    if (log) return std::make_shared<nn::LogSoftmax>(dim);
                    return std::make_shared<nn::Softmax>(dim);
                },
                {int_attr("dim", -1, "Dimension the probabilities sum over (-1: the last).",
                          std::nullopt)});
            k.infer = [](const Attrs& a, Inputs in) {
                require_float(in[0]);
                normalize_dim(a.get_int("dim"), in[0].shape.size(), "dim");
                return in[0];
            };
            return k;
        };
        kinds.push_back(softmax_like("Softmax", "exp(x) normalized to sum to 1 along dim.", false));
        kinds.push_back(softmax_like("LogSoftmax", "log(softmax(x)), numerically stable.", true));
    }
    kinds.push_back(activation(
        "Softplus", "log(1 + exp(beta * x)) / beta; linear above threshold.", 4,
        [](const Attrs& a) {
            return std::make_shared<nn::Softplus>(a.get_float("beta"), a.get_float("threshold"));
        },
        {float_attr("beta", 1.0, "Sharpness.", 0.0), float_attr("threshold", 20.0,
                                                                "Above beta * x > threshold the "
                                                                "output is x.")}));
    kinds.back().attrs[0].min_exclusive = true;
    kinds.push_back(activation("Hardswish", "x * relu6(x + 3) / 6.", 3, simple<nn::Hardswish>()));

    // --- regularization ---
    {
        LayerKind k = kind("Dropout", Category::Regularization,
                           "Zeroes elements with probability p while training; scales the rest "
                           "by 1 / (1 - p).");
        k.attrs = {float_attr("p", 0.5, "Probability of zeroing an element.", 0.0, 1.0)};
        k.summary_attrs = {"p"};
        k.infer = same_as_input;
        k.param_count = no_params;
        k.flops = pointwise(1);
        k.build = [](const Attrs& a) { return std::make_shared<nn::Dropout>(a.get_float("p")); };
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k = kind("Dropout2d", Category::Regularization,
                           "Zeroes whole channels of [N, C, H, W] with probability p while "
                           "training.");
        k.attrs = {float_attr("p", 0.5, "Probability of zeroing a channel.", 0.0, 1.0)};
        k.summary_attrs = {"p"};
        k.infer = [](const Attrs&, Inputs in) {
            require_rank(in[0], 4, "[N, C, H, W]");
            return in[0];
        };
        k.param_count = no_params;
        k.flops = pointwise(1);
        k.build = [](const Attrs& a) { return std::make_shared<nn::Dropout2d>(a.get_float("p")); };
        kinds.push_back(std::move(k));
    }

    // --- merge ---
    kinds.push_back(merge("Add", "Sum of the inputs (broadcasting), e.g. a residual connection.",
                          {num_inputs_attr()}, broadcast_all, simple<nn::Add>()));
    kinds.push_back(merge("Multiply", "Element-wise product of the inputs (broadcasting).",
                          {num_inputs_attr()}, broadcast_all, simple<nn::Multiply>()));
    {
        LayerKind k = merge(
            "Concat", "Concatenation of the inputs along dim; other dimensions must match.",
            {num_inputs_attr(), int_attr("dim", 1,
                                         "Dimension to concatenate along "
                                         "(1: channels).",
                                         std::nullopt)},
            [](const Attrs& a, Inputs in) {
                int rank = in[0].shape.size();
                int dim = normalize_dim(a.get_int("dim"), rank, "dim");
                Dims out = in[0].shape;
                for (size_t i = 1; i < in.size(); ++i) {
                    const Dims& s = in[i].shape;
                    bool ok = s.size() == rank;
                    for (int d = 0; ok && d < rank; ++d)
                        ok = d == dim || s[d] == out[d];
                    if (!ok)
                        fail("input " + std::to_string(i) + " has shape " + s.str() +
                             "; it must match " + in[0].shape.str() + " in every dimension but " +
                             std::to_string(dim));
                    out[dim] += s[dim];
                }
                for (const auto& t : in)
                    if (t.dtype != in[0].dtype) throw DTypeError("inputs must share one dtype");
                return TensorType{out, in[0].dtype};
            },
            [](const Attrs& a) { return std::make_shared<nn::Concat>(int(a.get_int("dim"))); });
        k.summary_attrs = {"dim"};
        k.flops = no_flops;
        kinds.push_back(std::move(k));
    }

    // --- reshape ---
    {
        LayerKind k = kind("Flatten", Category::Reshape,
                           "Merges dimensions start_dim..end_dim into one (keeps the batch).");
        k.attrs = {
            int_attr("start_dim", 1, "First dimension to merge.", std::nullopt),
            int_attr("end_dim", -1, "Last dimension to merge (-1: the last).", std::nullopt)};
        k.infer = [](const Attrs& a, Inputs in) {
            const Dims& s = in[0].shape;
            int start = normalize_dim(a.get_int("start_dim"), s.size(), "start_dim");
            int end = normalize_dim(a.get_int("end_dim"), s.size(), "end_dim");
            if (start > end) fail("start_dim must not come after end_dim");
            Dims out;
            for (int d = 0; d < start; ++d)
                out.push_back(s[d]);
            int64_t merged = 1;
            for (int d = start; d <= end; ++d)
                merged *= s[d];
            out.push_back(merged);
            for (int d = end + 1; d < s.size(); ++d)
                out.push_back(s[d]);
            return TensorType{out, in[0].dtype};
        };
        k.param_count = no_params;
        k.flops = no_flops;
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::Flatten>(int(a.get_int("start_dim")),
                                                 int(a.get_int("end_dim")));
        };
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k = kind("Unflatten", Category::Reshape,
                           "Splits dimension dim into unflattened_size (one entry may be -1).");
        k.attrs = {int_attr("dim", 1, "Dimension to split.", std::nullopt),
                   list_attr("unflattened_size", {1, 28, 28}, "The new dimensions.", 1, 6, -1)};
        k.summary_attrs = {"unflattened_size"};
        k.infer = [](const Attrs& a, Inputs in) {
            const Dims& s = in[0].shape;
            int dim = normalize_dim(a.get_int("dim"), s.size(), "dim");
            Dims sizes(a.get_ints("unflattened_size"));
            int64_t known = 1;
            int inferred = -1;
            for (int i = 0; i < sizes.size(); ++i) {
                if (sizes[i] == -1) {
                    if (inferred >= 0) fail("only one entry of unflattened_size can be -1");
                    inferred = i;
                } else if (sizes[i] <= 0) {
                    fail("unflattened_size entries must be positive or -1");
                } else {
                    known *= sizes[i];
                }
            }
            if (inferred >= 0 && s[dim] % known == 0) sizes[inferred] = s[dim] / known;
            if (sizes.numel() != s[dim] || (inferred >= 0 && s[dim] % known != 0))
                fail("unflattened_size " + Dims(a.get_ints("unflattened_size")).str() +
                     " does not multiply to dimension " + std::to_string(dim) + " of " + s.str());
            if (s.size() - 1 + sizes.size() > kMaxDims) fail("too many dimensions");
            Dims out;
            for (int d = 0; d < s.size(); ++d) {
                if (d == dim)
                    for (int64_t v : sizes)
                        out.push_back(v);
                else
                    out.push_back(s[d]);
            }
            return TensorType{out, in[0].dtype};
        };
        k.param_count = no_params;
        k.flops = no_flops;
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::Unflatten>(int(a.get_int("dim")),
                                                   Dims(a.get_ints("unflattened_size")));
        };
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k = kind("Identity", Category::Reshape, "Passes its input through unchanged.");
        k.infer = [](const Attrs&, Inputs in) { return in[0]; };
        k.param_count = no_params;
        k.flops = no_flops;
        k.build = simple<nn::Identity>();
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k = kind("Upsample", Category::Reshape,
                           "Upsampling of [N, C, H, W] by integer factors (nearest or bilinear).");
        k.attrs = {pair_attr("scale_factor", 2, "Height and width multipliers."),
                   enum_attr("mode", "nearest", {"nearest", "bilinear"}, "Interpolation."),
                   bool_attr("align_corners", false,
                             "Bilinear only: line up the corner pixels of input and output "
                             "instead of the pixel centres.")};
        k.summary_attrs = {"scale_factor"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_rank(in[0], 4, "[N, C, H, W]");
            if (a.get_bool("align_corners") && a.get_string("mode") == "nearest")
                fail("align_corners needs mode bilinear");
            auto s = pair_of(a, "scale_factor");
            Dims out = in[0].shape;
            out[2] *= s[0];
            out[3] *= s[1];
            return TensorType{out, in[0].dtype};
        };
        k.param_count = no_params;
        k.flops = no_flops;
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::Upsample>(size2(a, "scale_factor"), a.get_string("mode"),
                                                  a.get_bool("align_corners"));
        };
        kinds.push_back(std::move(k));
    }

    // --- embedding ---
    {
        LayerKind k = kind("Embedding", Category::Embedding,
                           "Looks up a learned vector for each int64 index.");
        AttrDesc padding = int_attr("padding_idx", 0,
                                    "Index whose vector stays zero and gets no gradient "
                                    "(negative counts from the end); None: no padding.",
                                    std::nullopt);
        k.attrs = {int_attr("num_embeddings", 1000, "Size of the vocabulary."),
                   int_attr("embedding_dim", 64, "Size of each vector."), nullable(padding)};
        k.summary_attrs = {"num_embeddings", "embedding_dim"};
        k.infer = [](const Attrs& a, Inputs in) {
            if (in[0].dtype != DType::Int64)
                throw DTypeError(std::string("expected int64 indices, got ") +
                                 dtype_name(in[0].dtype) + " (set the Input's dtype to int64)");
            if (auto p = a.get_optional_int("padding_idx")) {
                int64_t n = a.get_int("num_embeddings");
                if (*p < -n || *p >= n)
                    fail("padding_idx " + std::to_string(*p) + " is out of range for " +
                         std::to_string(n) + " embeddings");
            }
            Dims out = in[0].shape;
            if (out.size() >= kMaxDims) fail("too many dimensions");
            out.push_back(a.get_int("embedding_dim"));
            return TensorType{out, DType::Float32};
        };
        k.param_count = [](const Attrs& a) {
            return a.get_int("num_embeddings") * a.get_int("embedding_dim");
        };
        k.flops = no_flops;
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::Embedding>(a.get_int("num_embeddings"),
                                                   a.get_int("embedding_dim"),
                                                   a.get_optional_int("padding_idx"));
        };
        kinds.push_back(std::move(k));
    }
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
