// The ONNX importer: one pass over graph.node (ONNX keeps it in topological order) that turns
// each node into a Myelin layer, folds it into the layer before it, or evaluates it when it only
// computes a shape. Every ONNX value is one of: a constant (initializer, Constant node), a
// shape computed from a tensor's shape (a list of ints where the batch size is kBatch, for the
// Shape -> Gather -> Concat -> Reshape chains of a dynamic batch), a tensor some layer computes
// (a node and output port with its Myelin type), a tensor padded by a Pad node that only a
// convolution may read, a layout change (Transpose, Squeeze, Reshape) of a computed tensor that
// must be undone or read by a recurrent layer (ONNX's LSTM is time-major, Myelin's batch first),
// or zeros (a recurrent layer's initial state). Types come from the registry's own shape rules,
// so a layer that does not fit is refused at the node that made it.
#include <myelin/export/import.h>

#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/graph/analysis.h>
#include <myelin/graph/build.h>
#include <myelin/graph/registry.h>
#include <myelin/io/checkpoint.h>
#include <myelin/io/project.h>
#include <myelin/nn/attention.h>
#include <myelin/nn/layers.h>
#include <myelin/tensor.h>

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>

namespace myelin::exporters {

namespace {

using graph::Attrs;
using graph::AttrValue;
using graph::TensorType;

// The batch size inside a shape computed from a tensor.
constexpr int64_t kBatch = std::numeric_limits<int64_t>::min();
// The opsets whose semantics this importer follows (Softmax's axis, Clip's and Unsqueeze's
// inputs changed at 11 and 13; libonnx 1.12 checks files up to 17).
constexpr int64_t kMinOpset = 13;

struct Port {
    graph::NodeId node = 0;
    int port = 0;
    TensorType type;
    bool same(const Port& o) const { return node == o.node && port == o.port; }
};

struct Value {
    enum class Kind {
        Constant,
        Ints,
        Tensor,
        Padded,
        View,
        Zeros,
        Lengths,
        Pattern
    } kind = Kind::Constant;
    Tensor constant;           // Constant
    std::vector<int64_t> ints; // Ints (kBatch: the batch size)
    bool scalar = false;       // Ints of rank 0
    Port port;                 // Tensor; Padded: the tensor before the padding
    std::vector<int64_t> pads; // Padded: ONNX pads, every dimension's begin, then every end
    std::string pad_mode;      // Padded: "constant", "reflect" or "edge"
    std::string pad_node;      // Padded: the Pad node, for messages
    // View: `port` seen through layout changes (Transpose, Reshape, Squeeze) around a recurrent
    // layer. The port's dimensions are made of atoms (`atoms`: their sizes, atom 0 the batch;
    // `layout`: each dimension's atoms); `groups` are the atoms of each dimension of the value.
    std::vector<int64_t> atoms;
    std::vector<std::vector<int>> layout, groups;
    std::string view_node; // View: the node that made the last layout change, for messages
    // Lengths: each sequence's length computed from the token ids `port` [N, T], as
    // PaddingLengths does it, one step at a time: tokens == 0, != 0, their count, clamped to 1.
    enum class Stage { PaddingMask, TokenMask, Counts, Lengths } stage = Stage::PaddingMask;
    // Pattern: one step of a form written out in several ONNX ops that Myelin has one layer for
    // (self-attention as Myelin and PyTorch write it, the key padding mask, the masked mean over
    // a sequence's steps), followed op by op (Importer::op_pattern_step). `step` names it; `port`
    // is the tensor it started from, `tokens` the token ids whose lengths mask it, `q`/`k`/`v`
    // an attention's projections (Linear outputs) and `scale` the queries' factor.
    std::string step;
    Port tokens, q, k, v;
    double scale = 1.0;
    int64_t heads = 0;
    bool masked = false;
};

// A computed tensor as a view of itself: one atom per dimension.
Value view_of(const Port& p) {
    Value v;
    v.kind = Value::Kind::View;
    v.port = p;
    for (int d = 0; d < p.type.shape.size(); ++d) {
        v.atoms.push_back(p.type.shape[d]);
        v.layout.push_back({d});
    }
    v.groups = v.layout;
    return v;
}

// Each dimension's atoms without those of size 1, which do not change the layout (the batch
// atom stays: its size is the batch's).
std::vector<std::vector<int>> significant(const std::vector<std::vector<int>>& groups,
                                          const std::vector<int64_t>& atoms) {
    std::vector<std::vector<int>> out;
    for (const auto& g : groups) {
        out.emplace_back();
        for (int a : g)
            if (a == 0 || atoms[size_t(a)] != 1) out.back().push_back(a);
    }
    return out;
}

// The sizes a Reshape to `target` gives an input of `in` (its batch dimension `batch`): 0
// copies the input's dimension (unless allow_zero), -1 takes the rest, kBatch is the batch.
std::optional<std::vector<int64_t>> reshape_sizes(const std::vector<int64_t>& target,
                                                  const std::vector<int64_t>& in, int64_t batch,
                                                  bool allow_zero) {
    std::vector<int64_t> out;
    int64_t known = 1, numel = 1;
    int infer = -1;
    for (int64_t d : in)
        numel *= d;
    for (size_t i = 0; i < target.size(); ++i) {
        int64_t v = target[i];
        if (v == kBatch) v = batch;
        if (v == 0 && !allow_zero) {
            if (i >= in.size()) return std::nullopt;
            v = in[i];
        }
        if (v == -1) {
            if (infer >= 0) return std::nullopt;
            infer = int(i);
        } else if (v < 0) {
            return std::nullopt;
        } else {
            known *= v;
        }
        out.push_back(v);
    }
    if (infer >= 0) {
        if (known == 0 || numel % known) return std::nullopt;
        out[size_t(infer)] = numel / known;
    } else if (known != numel) {
        return std::nullopt;
    }
    return out;
}

Value tensor_value(const Port& p) {
    Value v;
    v.kind = Value::Kind::Tensor;
    v.port = p;
    return v;
}

Value constant_value(const Tensor& t) {
    Value v;
    v.constant = t;
    return v;
}

Value ints_value(std::vector<int64_t> ints, bool scalar = false) {
    Value v;
    v.kind = Value::Kind::Ints;
    v.ints = std::move(ints);
    v.scalar = scalar;
    return v;
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
    std::string out;
    for (size_t i = 0; i < items.size(); ++i)
        out += (i ? separator : "") + items[i];
    return out;
}

std::string list_text(const std::vector<int64_t>& v) {
    std::vector<std::string> items;
    for (int64_t x : v)
        items.push_back(x == kBatch ? std::string("batch") : std::to_string(x));
    return "[" + join(items, ", ") + "]";
}

std::string lower(std::string s) {
    for (char& c : s)
        c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// A node name from text: letters, digits and '_' only.
std::string sanitize(const std::string& text) {
    std::string out;
    for (char c : text)
        out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    while (!out.empty() && out.back() == '_')
        out.pop_back();
    size_t start = 0;
    while (start < out.size() && out[start] == '_')
        ++start;
    return out.substr(start);
}

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, std::string_view name) {
    for (const auto& a : n.attribute())
        if (a.name() == name) return &a;
    return nullptr;
}

int64_t attr_int(const onnx::NodeProto& n, std::string_view name, int64_t fallback) {
    const auto* a = find_attr(n, name);
    return a ? a->i() : fallback;
}

double attr_float(const onnx::NodeProto& n, std::string_view name, double fallback) {
    const auto* a = find_attr(n, name);
    return a ? double(a->f()) : fallback;
}

std::string attr_string(const onnx::NodeProto& n, std::string_view name, std::string fallback) {
    const auto* a = find_attr(n, name);
    return a ? a->s() : fallback;
}

std::vector<int64_t> attr_ints(const onnx::NodeProto& n, std::string_view name,
                               std::vector<int64_t> fallback) {
    const auto* a = find_attr(n, name);
    if (!a) return fallback;
    return {a->ints().begin(), a->ints().end()};
}

// An int or an [h, w] pair: the registry's int_or_pair attributes.
AttrValue int_or_pair(const std::vector<int64_t>& v) {
    if (v.size() == 2 && v[0] == v[1]) return std::vector<int64_t>{v[0]};
    return v;
}

// An ONNX tensor (initializer or Constant) as a Myelin tensor: float32 for floating point data,
// int64 for integers. Sizes are checked against the data before anything is copied.
Tensor tensor_of(const onnx::TensorProto& t, const std::string& where) {
    if (t.data_location() == onnx::TensorProto::EXTERNAL || t.external_data_size() > 0)
        throw Error(where + ": its data is in an external file; only self-contained ONNX files "
                            "are imported (save with all tensors inside the model)");
    if (t.has_segment()) throw Error(where + ": segmented tensors are not supported");
    if (t.dims_size() > kMaxDims)
        throw Error(where + ": " + std::to_string(t.dims_size()) + " dimensions (at most " +
                    std::to_string(kMaxDims) + ")");
    Dims shape;
    int64_t count = 1;
    for (int64_t d : t.dims()) {
        if (d < 0 || (d > 0 && count > (int64_t(1) << 40) / d))
            throw Error(where + ": invalid dimension " + std::to_string(d));
        shape.push_back(d);
        count *= d;
    }
    auto check_count = [&](int64_t given, const char* field) {
        if (given != count)
            throw Error(where + ": " + field + " holds " + std::to_string(given) +
                        " values, its shape " + shape.str() + " needs " + std::to_string(count));
    };
    const std::string& raw = t.raw_data();
    const bool has_raw = t.has_raw_data();
    switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
        if (has_raw) {
            check_count(int64_t(raw.size() / 4), "raw_data");
            if (raw.size() % 4) throw Error(where + ": raw_data is not a whole number of floats");
            return from_blob(raw.data(), DType::Float32, shape);
        }
        check_count(t.float_data_size(), "float_data");
        return from_blob(t.float_data().data(), DType::Float32, shape);
    case onnx::TensorProto::DOUBLE: {
        std::vector<double> v;
        if (has_raw) {
            check_count(int64_t(raw.size() / 8), "raw_data");
            if (raw.size() % 8) throw Error(where + ": raw_data is not a whole number of doubles");
            v.resize(raw.size() / 8);
            std::memcpy(v.data(), raw.data(), raw.size());
        } else {
            check_count(t.double_data_size(), "double_data");
            v.assign(t.double_data().begin(), t.double_data().end());
        }
        return from_vector(v, shape).to(DType::Float32).contiguous();
    }
    case onnx::TensorProto::INT64:
        if (has_raw) {
            check_count(int64_t(raw.size() / 8), "raw_data");
            if (raw.size() % 8) throw Error(where + ": raw_data is not a whole number of int64s");
            return from_blob(raw.data(), DType::Int64, shape, DType::Int64);
        }
        check_count(t.int64_data_size(), "int64_data");
        return from_blob(t.int64_data().data(), DType::Int64, shape, DType::Int64);
    case onnx::TensorProto::INT32: {
        std::vector<int64_t> v;
        if (has_raw) {
            check_count(int64_t(raw.size() / 4), "raw_data");
            if (raw.size() % 4) throw Error(where + ": raw_data is not a whole number of int32s");
            std::vector<int32_t> narrow(raw.size() / 4);
            std::memcpy(narrow.data(), raw.data(), raw.size());
            v.assign(narrow.begin(), narrow.end());
        } else {
            check_count(t.int32_data_size(), "int32_data");
            v.assign(t.int32_data().begin(), t.int32_data().end());
        }
        return from_vector(v, shape);
    }
    default:
        throw Error(where + ": element type " +
                    onnx::TensorProto_DataType_Name(onnx::TensorProto_DataType(t.data_type())) +
                    " is not imported (float32, float64, int64 and int32 are)");
    }
}

// The ONNX ops this importer reads; every other op is refused before anything is built.
const std::set<std::string, std::less<>>& supported_ops() {
    static const std::set<std::string, std::less<>> ops = [] {
        std::set<std::string, std::less<>> names;
        std::istringstream list(
            "Add AveragePool BatchNormalization Cast Clip Concat Constant ConstantOfShape Conv "
            "ConvTranspose Div Dropout Elu Equal Expand Flatten GRU Gather Gemm "
            "GlobalAveragePool HardSwish Identity LSTM LayerNormalization LeakyRelu Less "
            "LogSoftmax MatMul Max MaxPool Mul Not PRelu Pad RNN ReduceMean ReduceSum Relu "
            "Reshape Shape Sigmoid Slice Softmax Softplus Squeeze Tanh Transpose Unsqueeze Where");
        for (std::string op; list >> op;)
            names.insert(op);
        return names;
    }();
    return ops;
}

// Why an op outside supported_ops() is refused.
std::string unsupported_reason(const std::string& op) {
    return "Myelin has no layer for ONNX's " + op;
}

class Importer {
  public:
    Importer(const onnx::ModelProto& model, std::string source)
        : model_(model), graph_(model.graph()), source_(std::move(source)) {}

    ImportedModel run();

  private:
    const onnx::ModelProto& model_;
    const onnx::GraphProto& graph_;
    std::string source_;
    graph::ModelSpec spec_;
    std::map<std::string, Value> values_;
    std::map<std::string, int> uses_;       // how many node inputs and graph outputs read a value
    std::map<std::string, Tensor> weights_; // "<module>.<state name>"
    std::set<std::string> names_;
    std::vector<std::string> notes_;
    int64_t static_batch_ = -1; // the input's batch size when the file fixes it
    // What each layer node was made from (the folds look back at it).
    struct Made {
        std::string kind;
        std::vector<Port> inputs;
        bool bias_pending = false; // a Linear from a MatMul: an Add may still give its bias
        std::vector<TensorType> outputs;
    };
    std::map<graph::NodeId, Made> made_;
    // The node being converted.
    int index_ = -1;
    const onnx::NodeProto* node_ = nullptr;

    std::string node_text(int index, const onnx::NodeProto& n) const {
        return (n.name().empty() ? std::string("node") : "node '" + n.name() + "'") + " (" +
               n.op_type() + ", position " + std::to_string(index) + " in graph.node)";
    }
    [[noreturn]] void refuse(const std::string& why) const {
        throw Error(source_ + ": " + node_text(index_, *node_) + ": " + why);
    }
    void note(const std::string& what) {
        notes_.push_back(node_text(index_, *node_) + ": " + what);
    }

    // --- inputs and outputs of the current node ---
    bool has_input(int i) const { return i < node_->input_size() && !node_->input(i).empty(); }
    const std::string& input_name(int i) const { return node_->input(i); }
    const Value& input(int i) const {
        if (!has_input(i)) refuse("input " + std::to_string(i) + " is missing");
        auto it = values_.find(node_->input(i));
        if (it == values_.end())
            refuse("input '" + node_->input(i) + "' is not defined before this node");
        return it->second;
    }
    Port tensor_input(int i) const {
        const Value& v = input(i);
        if (v.kind == Value::Kind::Tensor) return v.port;
        if (v.kind == Value::Kind::Padded)
            refuse("reads the output of the Pad node '" + v.pad_node +
                   "': Myelin pads only inside a convolution, so a Pad is imported only in "
                   "front of a Conv");
        if (v.kind == Value::Kind::Pattern)
            refuse("reads an intermediate value of " +
                   std::string(v.step == "scaled" || v.step == "split" || v.step == "heads_qv" ||
                                       v.step == "heads_k" || v.step == "scores" ||
                                       v.step == "probs" || v.step == "context" ||
                                       v.step == "context_t" || v.step == "merged"
                                   ? "a self-attention"
                                   : "a sequence mask") +
                   " ('" + v.step + "') in a way Myelin has no layer for");
        if (v.kind == Value::Kind::Lengths)
            refuse("reads the sequence lengths (or their padding mask) computed from the token "
                   "ids '" +
                   input_name(i) +
                   "': Myelin takes lengths only as a recurrent "
                   "layer's sequence_lens");
        if (v.kind == Value::Kind::View)
            refuse("reads a layout change (Transpose, Reshape, Squeeze) made by " + v.view_node +
                   " that Myelin has no layer for: layout changes are imported only where they "
                   "undo each other around a recurrent layer");
        refuse("input " + std::to_string(i) + " ('" + input_name(i) +
               "') is a constant; Myelin's layers take a computed tensor here");
    }
    Tensor constant_input(int i) const {
        const Value& v = input(i);
        if (v.kind == Value::Kind::Constant) return v.constant;
        if (v.kind == Value::Kind::Ints) {
            if (std::find(v.ints.begin(), v.ints.end(), kBatch) == v.ints.end())
                return from_vector(v.ints, v.scalar ? Dims{} : Dims{int64_t(v.ints.size())});
            refuse("input " + std::to_string(i) + " ('" + input_name(i) +
                   "') depends on the batch size; a constant is needed here");
        }
        refuse("input " + std::to_string(i) + " ('" + input_name(i) +
               "') is computed; a constant (an initializer) is needed here");
    }
    Tensor float_constant(int i) const {
        Tensor t = constant_input(i);
        return t.dtype() == DType::Float32 ? t : t.to(DType::Float32).contiguous();
    }
    // Ints of a constant or shape value (rank 0 or 1).
    std::vector<int64_t> ints_input(int i, bool* scalar = nullptr) const {
        const Value& v = input(i);
        if (v.kind == Value::Kind::Ints) {
            if (scalar) *scalar = v.scalar;
            return v.ints;
        }
        if (v.kind != Value::Kind::Constant || v.constant.dtype() != DType::Int64 ||
            v.constant.dim() > 1)
            refuse("input " + std::to_string(i) + " ('" + input_name(i) +
                   "') must be a constant list of integers");
        if (scalar) *scalar = v.constant.dim() == 0;
        const Tensor c = v.constant.contiguous();
        return {c.data<int64_t>(), c.data<int64_t>() + c.numel()};
    }
    void set_output(int i, Value v) {
        if (i < node_->output_size() && !node_->output(i).empty())
            values_[node_->output(i)] = std::move(v);
    }
    // Refuses when an output from `from` on is read: the import gives only the first ones.
    void only_outputs_below(int from, const std::string& why) const {
        for (int i = from; i < node_->output_size(); ++i)
            if (!node_->output(i).empty() && uses_.count(node_->output(i)))
                refuse("its output " + std::to_string(i) + " ('" + node_->output(i) +
                       "') is used: " + why);
    }
    // The ONNX value `name`'s readers.
    int uses(const std::string& name) const {
        auto it = uses_.find(name);
        return it == uses_.end() ? 0 : it->second;
    }

    // --- building ---
    std::string weight_hint(int input) const;
    std::string scope_hint() const;
    std::string unique_name(const std::string& hint, const std::string& kind);
    Port add_layer(const std::string& kind, Attrs attrs, const std::vector<Port>& inputs,
                   const std::string& hint,
                   const std::vector<std::pair<std::string, Tensor>>& weights = {});
    void layer_output(const std::string& kind, Attrs attrs = {}) {
        set_output(
            0, tensor_value(add_layer(kind, std::move(attrs), {tensor_input(0)}, scope_hint())));
    }
    bool fold_bias(const Port& p, const Tensor& bias, const std::string& onnx_name);

    void convert(); // the current node
    void op_conv();
    void op_conv_transpose();
    void op_batch_norm();
    void op_pool(bool max);
    void op_add();
    void op_mul();
    void op_concat();
    void op_reshape(const std::vector<int64_t>& target, bool allow_zero);
    void op_gemm();
    void op_matmul();
    void op_gather();
    void op_reduce_mean();
    void op_recurrent();
    // Equal / Not / ReduceSum / Max (and Clip) on the way from token ids to their lengths.
    bool op_lengths_step();
    // A step of a Value::Kind::Pattern form; false: the node is not one.
    bool op_pattern_step();
    Value pattern(const std::string& step, const Value& from) const {
        Value v = from;
        v.kind = Value::Kind::Pattern;
        v.step = step;
        return v;
    }
    bool is_step(int i, const char* step) const {
        return has_input(i) && input(i).kind == Value::Kind::Pattern && input(i).step == step;
    }
    void finish_attention(const Value& merged);
    void drop_layer(graph::NodeId node);
    Port padding_lengths_of(const Port& tokens);
    std::map<std::pair<graph::NodeId, int>, Port> padding_lengths_; // by token port
    void view_reshape(const Value& v, const std::vector<int64_t>& target, bool allow_zero);
    // Sets output `i` to the view, or to the tensor it shows when it undoes every change.
    void set_view(int i, Value v) {
        v.view_node = node_text(index_, *node_);
        if (significant(v.groups, v.atoms) == significant(v.layout, v.atoms))
            return set_output(i, tensor_value(v.port));
        set_output(i, std::move(v));
    }
    bool is_zero(int i) const;
    void op_layer_norm();
    void op_clip();
    void op_prelu();
    void op_pad();
    void op_constant();

    void add_input();
    void add_output();
    void lay_out();
    nn::StateDict collect_weights(const graph::GraphModule& model) const;
};

// The module a weight belongs to, from its initializer's name when it is a state_dict name
// ("layer1.0.conv1.weight" -> "layer1_0_conv1"); empty for generated names ("onnx::Conv_193").
std::string Importer::weight_hint(int input) const {
    if (!has_input(input)) return scope_hint();
    const std::string& name = input_name(input);
    const size_t dot = name.rfind('.');
    if (name.find("::") != std::string::npos || name.find('/') != std::string::npos ||
        dot == std::string::npos || dot == 0)
        return scope_hint();
    return name.substr(0, dot);
}

// PyTorch names nodes by module scope: "/layer1/layer1.0/conv1/Conv" -> "layer1.0.conv1" (a
// component that the next one extends, "layer1" before "layer1.0", is dropped).
std::string Importer::scope_hint() const {
    const std::string& name = node_->name();
    if (name.empty() || name[0] != '/') return {};
    std::vector<std::string> parts;
    std::stringstream in(name.substr(1));
    for (std::string part; std::getline(in, part, '/');)
        parts.push_back(part);
    if (!parts.empty()) parts.pop_back(); // the op ("Conv", "Relu_1")
    std::vector<std::string> kept;
    for (size_t i = 0; i < parts.size(); ++i)
        if (i + 1 == parts.size() || parts[i + 1].rfind(parts[i] + ".", 0) != 0)
            kept.push_back(parts[i]);
    return join(kept, ".");
}

std::string Importer::unique_name(const std::string& hint, const std::string& kind) {
    std::string base = sanitize(hint);
    if (base.empty())
        base = lower(kind);
    else if (std::isdigit(static_cast<unsigned char>(base[0])))
        base = lower(kind) + "_" + base;
    std::string name = base;
    for (int i = 1; names_.count(name); ++i)
        name = base + "_" + std::to_string(i);
    names_.insert(name);
    return name;
}

Port Importer::add_layer(const std::string& kind, Attrs attrs, const std::vector<Port>& inputs,
                         const std::string& hint,
                         const std::vector<std::pair<std::string, Tensor>>& weights) {
    const graph::LayerKind& k = graph::layer_kind(kind);
    const auto problems = graph::check_attrs(k.attrs, attrs);
    if (!problems.empty()) refuse("as a " + kind + ": " + join(problems, "; "));
    const Attrs full = graph::with_defaults(k.attrs, attrs);
    std::vector<TensorType> types;
    for (const Port& p : inputs)
        types.push_back(p.type);
    std::vector<TensorType> outputs;
    try {
        outputs = k.infer_all(full, types);
    } catch (const Error& e) {
        refuse("as a " + kind + " it does not fit its input: " + e.what());
    }
    const std::string name = unique_name(hint, kind);
    const graph::NodeId id = spec_.add_node(kind, name, attrs);
    for (size_t i = 0; i < inputs.size(); ++i)
        spec_.connect(inputs[i].node, id, int(i), inputs[i].port);
    for (const auto& [state, tensor] : weights)
        weights_[name + "." + state] = tensor.contiguous();
    made_[id] = {kind, inputs, false, outputs};
    return {id, 0, outputs.at(0)};
}

// --- ops
// ------------------------------------------------------------------------------------------

void Importer::convert() {
    const std::string& op = node_->op_type();
    if (op == "Constant") return op_constant();
    if (op_pattern_step()) return;
    if (op == "Identity") return set_output(0, input(0));
    if (op == "Dropout") {
        only_outputs_below(1, "Dropout's mask has no Myelin form");
        if (input(0).kind == Value::Kind::Tensor)
            note("left out: dropout is the identity in evaluation (add a Dropout layer to "
                 "fine-tune with it)");
        return set_output(0, input(0));
    }
    if (op == "Cast") {
        const int64_t to = attr_int(*node_, "to", 0);
        const Value& v = input(0);
        const bool to_int = to == onnx::TensorProto::INT64 || to == onnx::TensorProto::INT32;
        const bool to_float = to == onnx::TensorProto::FLOAT || to == onnx::TensorProto::DOUBLE;
        if ((v.kind == Value::Kind::Ints && to_int) || v.kind == Value::Kind::Zeros ||
            v.kind == Value::Kind::Lengths)
            return set_output(0, v);
        if (v.kind == Value::Kind::Constant && (to_int || to_float))
            return set_output(
                0,
                constant_value(v.constant.to(to_int ? DType::Int64 : DType::Float32).contiguous()));
        if (v.kind == Value::Kind::Tensor &&
            ((to_int && v.port.type.dtype == DType::Int64) ||
             (to == onnx::TensorProto::FLOAT && v.port.type.dtype == DType::Float32)))
            return set_output(0, v);
        refuse("Myelin has no layer that changes a tensor's element type");
    }
    if (op == "Shape") {
        const Value& v = input(0);
        std::vector<int64_t> dims;
        if (v.kind == Value::Kind::Tensor) {
            dims = v.port.type.shape.vec();
            dims[0] = kBatch;
        } else if (v.kind == Value::Kind::Constant) {
            dims = v.constant.sizes().vec();
        } else {
            refuse("the shape of a shape is not imported");
        }
        const int64_t rank = int64_t(dims.size());
        auto clamp = [&](int64_t d) { return std::clamp(d < 0 ? d + rank : d, int64_t(0), rank); };
        const int64_t start = clamp(attr_int(*node_, "start", 0));
        const int64_t end = clamp(attr_int(*node_, "end", rank));
        return set_output(0, ints_value(std::vector<int64_t>(dims.begin() + start,
                                                             dims.begin() + std::max(start, end))));
    }
    if (op == "Unsqueeze" || op == "Squeeze") {
        const Value& v = input(0);
        const std::vector<int64_t> axes = has_input(1) ? ints_input(1) : std::vector<int64_t>{};
        if (v.kind == Value::Kind::Zeros) return set_output(0, v);
        if (v.kind == Value::Kind::Tensor || v.kind == Value::Kind::View) {
            // Dimensions of size 1 added or removed: a view (the states of a one-directional
            // recurrent layer).
            Value view = v.kind == Value::Kind::View ? v : view_of(v.port);
            const int rank = int(view.groups.size()) + (op == "Unsqueeze" ? int(axes.size()) : 0);
            std::vector<int64_t> listed;
            for (int64_t a : axes)
                listed.push_back(a < 0 ? a + rank : a);
            std::sort(listed.begin(), listed.end());
            if (op == "Unsqueeze") {
                for (int64_t a : listed) {
                    if (a < 0 || a > int64_t(view.groups.size())) refuse("axis out of range");
                    view.groups.insert(view.groups.begin() + a, std::vector<int>{});
                }
            } else {
                const auto sig = significant(view.groups, view.atoms);
                std::vector<std::vector<int>> kept;
                for (int d = 0; d < int(view.groups.size()); ++d) {
                    const bool unit = sig[size_t(d)].empty();
                    const bool named =
                        std::find(listed.begin(), listed.end(), int64_t(d)) != listed.end();
                    if (named && !unit)
                        refuse("dimension " + std::to_string(d) + " does not have size 1");
                    if (!(named || (listed.empty() && unit)))
                        kept.push_back(view.groups[size_t(d)]);
                }
                view.groups = kept;
            }
            return set_view(0, view);
        }
        if (v.kind == Value::Kind::Ints) {
            // A scalar made a 1-element list and back: the steps of a computed shape.
            const bool axis0 =
                axes.empty() || (axes.size() == 1 && (axes[0] == 0 || axes[0] == -1));
            if (op == "Unsqueeze" && v.scalar && axis0) return set_output(0, ints_value(v.ints));
            if (op == "Squeeze" && !v.scalar && v.ints.size() == 1 && axis0)
                return set_output(0, ints_value(v.ints, true));
            refuse("this change of rank of a computed shape is not imported");
        }
        if (v.kind == Value::Kind::Constant) {
            std::vector<int64_t> shape = v.constant.sizes().vec();
            if (op == "Unsqueeze") {
                const int64_t rank = int64_t(shape.size() + axes.size());
                std::vector<int64_t> sorted;
                for (int64_t a : axes)
                    sorted.push_back(a < 0 ? a + rank : a);
                std::sort(sorted.begin(), sorted.end());
                for (int64_t a : sorted) {
                    if (a < 0 || a > int64_t(shape.size())) refuse("axis out of range");
                    shape.insert(shape.begin() + a, 1);
                }
            } else {
                std::vector<int64_t> kept;
                const int64_t rank = int64_t(shape.size());
                for (int64_t d = 0; d < rank; ++d) {
                    const bool listed =
                        axes.empty() ? shape[size_t(d)] == 1
                                     : std::find_if(axes.begin(), axes.end(), [&](int64_t a) {
                                           return (a < 0 ? a + rank : a) == d;
                                       }) != axes.end();
                    if (!listed) kept.push_back(shape[size_t(d)]);
                }
                shape = kept;
            }
            return set_output(0, constant_value(v.constant.reshape(Dims(shape)).contiguous()));
        }
        refuse("a " + op + " of this value is not imported");
    }
    if (op == "Transpose") {
        const Value& v = input(0);
        std::vector<int64_t> perm = attr_ints(*node_, "perm", {});
        bool identity = true;
        for (size_t i = 0; i < perm.size(); ++i)
            identity = identity && perm[i] == int64_t(i);
        if (identity && !perm.empty()) return set_output(0, v);
        if (v.kind == Value::Kind::Constant && v.constant.dim() == int(perm.size()))
            return set_output(0, constant_value(v.constant.permute(Dims(perm)).contiguous()));
        if (v.kind == Value::Kind::Tensor || v.kind == Value::Kind::View) {
            // Kept as a view: a recurrent layer reads it, or a later change undoes it.
            Value view = v.kind == Value::Kind::View ? v : view_of(v.port);
            std::vector<int64_t> sorted = perm;
            std::sort(sorted.begin(), sorted.end());
            for (size_t i = 0; i < sorted.size(); ++i)
                if (sorted[i] != int64_t(i) || sorted.size() != view.groups.size())
                    refuse("perm " + list_text(perm) + " is not a permutation of the " +
                           std::to_string(view.groups.size()) + " dimensions");
            std::vector<std::vector<int>> groups;
            for (int64_t d : perm)
                groups.push_back(view.groups[size_t(d)]);
            view.groups = groups;
            return set_view(0, view);
        }
        refuse("Myelin has no layer that permutes dimensions (perm " + list_text(perm) + ")");
    }
    if (op == "Conv") return op_conv();
    if (op == "ConvTranspose") return op_conv_transpose();
    if (op == "BatchNormalization") return op_batch_norm();
    if (op == "MaxPool") return op_pool(true);
    if (op == "AveragePool") return op_pool(false);
    if (op == "GlobalAveragePool") {
        const Port x = tensor_input(0);
        if (x.type.shape.size() != 4)
            refuse("Myelin's global average pooling (AdaptiveAvgPool2d) takes [N, C, H, W], got " +
                   x.type.shape.str());
        return layer_output("AdaptiveAvgPool2d", {{"output_size", std::vector<int64_t>{1}}});
    }
    if (op == "Relu") return layer_output("ReLU");
    if (op == "Sigmoid") return layer_output("Sigmoid");
    if (op == "Tanh") return layer_output("Tanh");
    if (op == "HardSwish") return layer_output("Hardswish");
    if (op == "Softplus") return layer_output("Softplus");
    if (op == "LeakyRelu")
        return layer_output("LeakyReLU", {{"negative_slope", attr_float(*node_, "alpha", 0.01)}});
    if (op == "Elu") return layer_output("ELU", {{"alpha", attr_float(*node_, "alpha", 1.0)}});
    if (op == "Softmax" || op == "LogSoftmax")
        return layer_output(op, {{"dim", attr_int(*node_, "axis", -1)}});
    if (op == "Equal" || op == "Not" || op == "ReduceSum" || op == "Max" || op == "Clip")
        if (op_lengths_step()) return;
    if (op == "Less" || op == "Where" || op == "Div")
        refuse(op + " is imported only inside the forms Myelin has a layer for: a key padding "
                    "mask (Less / Where from each sequence's length) and the masked mean over a "
                    "sequence's steps (SequenceMeanPool with lengths)");
    if (op == "Equal" || op == "Not" || op == "ReduceSum" || op == "Max")
        refuse(op + " is imported only on the way from token ids to each sequence's length "
                    "(PaddingLengths: (tokens != 0).sum(dim=1).clamp(min=1)); Myelin has no "
                    "layer for it elsewhere");
    if (op == "Clip") return op_clip();
    if (op == "PRelu") return op_prelu();
    if (op == "Add") return op_add();
    if (op == "Mul") return op_mul();
    if (op == "Concat") return op_concat();
    if (op == "Flatten") {
        const Port x = tensor_input(0);
        const int64_t rank = x.type.shape.size();
        int64_t axis = attr_int(*node_, "axis", 1);
        if (axis < 0) axis += rank;
        if (axis != 1 || rank < 2)
            refuse("Flatten with axis " + std::to_string(axis) + " of a rank-" +
                   std::to_string(rank) +
                   " tensor merges the batch dimension; Myelin's Flatten keeps it (axis 1)");
        return layer_output("Flatten", {{"start_dim", int64_t(1)}, {"end_dim", int64_t(-1)}});
    }
    if (op == "Reshape") {
        if (input(0).kind == Value::Kind::View)
            return view_reshape(input(0), ints_input(1), attr_int(*node_, "allowzero", 0) != 0);
        return op_reshape(ints_input(1), attr_int(*node_, "allowzero", 0) != 0);
    }
    if (op == "Gemm") return op_gemm();
    if (op == "MatMul") return op_matmul();
    if (op == "Gather") return op_gather();
    if (op == "ReduceMean") return op_reduce_mean();
    if (op == "LSTM" || op == "GRU" || op == "RNN") return op_recurrent();
    if (op == "ConstantOfShape") {
        const auto* value = find_attr(*node_, "value");
        const Tensor fill = value
                                ? tensor_of(value->t(), source_ + ": " + node_text(index_, *node_))
                                : zeros(Dims{1});
        if (fill.numel() != 1 || fill.to(DType::Float64).contiguous().data<double>()[0] != 0.0)
            refuse("only zeros are imported (a recurrent layer's initial state)");
        ints_input(0);
        Value z;
        z.kind = Value::Kind::Zeros;
        return set_output(0, z);
    }
    if (op == "Expand" || op == "Slice") {
        // Zeros stay zeros: the initial states PyTorch builds for a dynamic batch.
        if (is_zero(0)) {
            Value z;
            z.kind = Value::Kind::Zeros;
            return set_output(0, z);
        }
        refuse(op + " is imported only on zeros (a recurrent layer's initial state): Myelin has "
                    "no layer for it");
    }
    if (op == "LayerNormalization") return op_layer_norm();
    if (op == "Pad") return op_pad();
    refuse(unsupported_reason(op));
}

void Importer::op_constant() {
    const onnx::AttributeProto* a = nullptr;
    for (const auto& attr : node_->attribute())
        a = &attr;
    if (!a || node_->attribute_size() != 1) refuse("a Constant needs exactly one attribute");
    const std::string what = source_ + ": " + node_text(index_, *node_);
    if (a->name() == "value") return set_output(0, constant_value(tensor_of(a->t(), what)));
    if (a->name() == "value_float")
        return set_output(0, constant_value(from_vector(std::vector<float>{a->f()}, Dims{})));
    if (a->name() == "value_floats")
        return set_output(0, constant_value(from_vector(
                                 std::vector<float>(a->floats().begin(), a->floats().end()),
                                 Dims{int64_t(a->floats_size())})));
    if (a->name() == "value_int")
        return set_output(0, constant_value(from_vector(std::vector<int64_t>{a->i()}, Dims{})));
    if (a->name() == "value_ints")
        return set_output(
            0, constant_value(from_vector(std::vector<int64_t>(a->ints().begin(), a->ints().end()),
                                          Dims{int64_t(a->ints_size())})));
    refuse("a Constant's '" + a->name() + "' is not imported");
}

// Conv -> Conv1d / Conv2d. Pads must be the same on both sides of each dimension, or PyTorch's
// 'same' split with stride 1; a Pad node in front gives the padding mode.
void Importer::op_conv() {
    const Value& in = input(0);
    if (in.kind != Value::Kind::Tensor && in.kind != Value::Kind::Padded) tensor_input(0);
    const Port x = in.port;
    const Tensor w = float_constant(1);
    const int spatial = w.dim() - 2;
    if (spatial != 1 && spatial != 2)
        refuse("a " + std::to_string(spatial) + "-d convolution (weight " + w.sizes().str() +
               "): Myelin has Conv1d and Conv2d");
    if (int(x.type.shape.size()) != spatial + 2)
        refuse("input " + x.type.shape.str() + " does not fit a " + std::to_string(spatial) +
               "-d convolution");
    std::vector<int64_t> kernel(w.sizes().begin() + 2, w.sizes().end());
    if (attr_ints(*node_, "kernel_shape", kernel) != kernel)
        refuse("kernel_shape " + list_text(attr_ints(*node_, "kernel_shape", {})) +
               " does not match the weight " + w.sizes().str());
    const std::vector<int64_t> ones(size_t(spatial), 1);
    const auto strides = attr_ints(*node_, "strides", ones);
    const auto dilations = attr_ints(*node_, "dilations", ones);
    std::vector<int64_t> pads = attr_ints(*node_, "pads", std::vector<int64_t>(2 * spatial, 0));
    const std::string auto_pad = attr_string(*node_, "auto_pad", "NOTSET");
    bool same = false;
    if (auto_pad == "SAME_UPPER") {
        same = true;
        pads.assign(pads.size(), 0);
    } else if (auto_pad == "VALID") {
        pads.assign(pads.size(), 0);
    } else if (auto_pad != "NOTSET") {
        refuse("auto_pad " + auto_pad + " has no Myelin form (NOTSET, VALID, SAME_UPPER do)");
    }
    std::string mode = "zeros";
    if (in.kind == Value::Kind::Padded) {
        // The Pad's spatial pads (its batch and channel pads are 0: checked by op_pad).
        const int rank = spatial + 2;
        for (int i = 0; i < spatial; ++i) {
            const int64_t b = in.pads[size_t(2 + i)], e = in.pads[size_t(rank + 2 + i)];
            if (in.pad_mode == "constant") {
                pads[size_t(i)] += b;
                pads[size_t(spatial + i)] += e;
            } else {
                if (pads[size_t(i)] || pads[size_t(spatial + i)] || same)
                    refuse("pads both in the Pad node '" + in.pad_node + "' (mode " + in.pad_mode +
                           ") and in the Conv");
                pads[size_t(i)] = b;
                pads[size_t(spatial + i)] = e;
            }
        }
        if (in.pad_mode != "constant") mode = in.pad_mode == "reflect" ? "reflect" : "replicate";
    }
    std::vector<int64_t> padding(size_t(spatial), 0);
    for (int i = 0; i < spatial && !same; ++i) {
        const int64_t b = pads[size_t(i)], e = pads[size_t(spatial + i)];
        if (b == e) {
            padding[size_t(i)] = b;
            continue;
        }
        // PyTorch's padding='same': the odd one after, stride 1.
        bool is_same =
            std::all_of(strides.begin(), strides.end(), [](int64_t s) { return s == 1; });
        for (int j = 0; is_same && j < spatial; ++j) {
            const auto sides =
                nn::conv_padding_sides(kernel[size_t(j)], dilations[size_t(j)], 0, true);
            is_same = sides[0] == pads[size_t(j)] && sides[1] == pads[size_t(spatial + j)];
        }
        if (!is_same)
            refuse("pads " + list_text(pads) +
                   " differ between the sides of a dimension; Myelin's convolutions pad both "
                   "sides alike, or as padding='same' with stride 1");
        same = true;
    }
    Attrs a;
    a.set("in_channels", x.type.shape[1]);
    a.set("out_channels", w.size(0));
    a.set("groups", attr_int(*node_, "group", 1));
    a.set("bias", has_input(2));
    a.set("padding_mode", mode);
    a.set("same_padding", same);
    if (spatial == 1) {
        a.set("kernel_size", kernel[0]);
        a.set("stride", strides[0]);
        a.set("padding", padding[0]);
        a.set("dilation", dilations[0]);
    } else {
        a.set("kernel_size", int_or_pair(kernel));
        a.set("stride", int_or_pair(strides));
        a.set("padding", int_or_pair(padding));
        a.set("dilation", int_or_pair(dilations));
    }
    std::vector<std::pair<std::string, Tensor>> weights{{"weight", w}};
    if (has_input(2)) weights.emplace_back("bias", float_constant(2));
    set_output(0, tensor_value(add_layer(spatial == 1 ? "Conv1d" : "Conv2d", a, {x}, weight_hint(1),
                                         weights)));
}

void Importer::op_conv_transpose() {
    const Port x = tensor_input(0);
    const Tensor w = float_constant(1);
    if (w.dim() != 4 || x.type.shape.size() != 4)
        refuse("Myelin's transposed convolution is 2-d (ConvTranspose2d); weight " +
               w.sizes().str() + ", input " + x.type.shape.str());
    if (find_attr(*node_, "output_shape"))
        refuse("output_shape is not imported (give pads and output_padding)");
    if (attr_string(*node_, "auto_pad", "NOTSET") != "NOTSET")
        refuse("auto_pad is not imported (give pads)");
    const std::vector<int64_t> kernel{w.size(2), w.size(3)};
    const auto pads = attr_ints(*node_, "pads", {0, 0, 0, 0});
    if (pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3])
        refuse("pads " + list_text(pads) + " differ between the sides of a dimension");
    const int64_t groups = attr_int(*node_, "group", 1);
    Attrs a;
    a.set("in_channels", x.type.shape[1]);
    a.set("out_channels", w.size(1) * groups);
    a.set("kernel_size", int_or_pair(kernel));
    a.set("stride", int_or_pair(attr_ints(*node_, "strides", {1, 1})));
    a.set("padding", int_or_pair({pads[0], pads[1]}));
    a.set("output_padding", int_or_pair(attr_ints(*node_, "output_padding", {0, 0})));
    a.set("groups", groups);
    a.set("bias", has_input(2));
    a.set("dilation", int_or_pair(attr_ints(*node_, "dilations", {1, 1})));
    std::vector<std::pair<std::string, Tensor>> weights{{"weight", w}};
    if (has_input(2)) weights.emplace_back("bias", float_constant(2));
    set_output(0, tensor_value(add_layer("ConvTranspose2d", a, {x}, weight_hint(1), weights)));
}

// BatchNormalization in its evaluation form: the running statistics are the layer's.
void Importer::op_batch_norm() {
    const Port x = tensor_input(0);
    if (attr_int(*node_, "training_mode", 0) != 0)
        refuse("training_mode=1 (statistics of the batch) is not imported; export the model in "
               "evaluation mode");
    only_outputs_below(1, "the running statistics' updates are training outputs");
    const int64_t rank = x.type.shape.size();
    if (rank < 2 || rank > 4)
        refuse("Myelin's batch norms take [N, C], [N, C, L] or [N, C, H, W], got " +
               x.type.shape.str());
    // ONNX's momentum weighs the old statistics, PyTorch's the new batch.
    const double momentum = 1.0 - attr_float(*node_, "momentum", 0.9);
    Attrs a{{"num_features", x.type.shape[1]},
            {"eps", attr_float(*node_, "epsilon", 1e-5)},
            {"momentum", std::clamp(momentum, 0.0, 1.0)}};
    set_output(
        0, tensor_value(add_layer(rank == 4 ? "BatchNorm2d" : "BatchNorm1d", a, {x}, weight_hint(1),
                                  {{"weight", float_constant(1)},
                                   {"bias", float_constant(2)},
                                   {"running_mean", float_constant(3)},
                                   {"running_var", float_constant(4)}})));
}

void Importer::op_pool(bool max) {
    const Port x = tensor_input(0);
    const std::string kind = max ? "MaxPool2d" : "AvgPool2d";
    if (x.type.shape.size() != 4)
        refuse("Myelin's pooling is 2-d (" + kind + " takes [N, C, H, W]), got " +
               x.type.shape.str());
    if (max) only_outputs_below(1, "MaxPool's indices have no Myelin form");
    const std::string auto_pad = attr_string(*node_, "auto_pad", "NOTSET");
    if (auto_pad != "NOTSET" && auto_pad != "VALID")
        refuse("auto_pad " + auto_pad + " is not imported (give pads)");
    const auto kernel = attr_ints(*node_, "kernel_shape", {});
    if (kernel.size() != 2) refuse("kernel_shape must have 2 entries");
    auto pads = attr_ints(*node_, "pads", {0, 0, 0, 0});
    if (auto_pad == "VALID") pads = {0, 0, 0, 0};
    if (pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3])
        refuse("pads " + list_text(pads) + " differ between the sides of a dimension");
    Attrs a{{"kernel_size", int_or_pair(kernel)},
            {"stride", int_or_pair(attr_ints(*node_, "strides", {1, 1}))},
            {"padding", int_or_pair({pads[0], pads[1]})},
            {"ceil_mode", attr_int(*node_, "ceil_mode", 0) != 0}};
    if (max) {
        a.set("dilation", int_or_pair(attr_ints(*node_, "dilations", {1, 1})));
    } else {
        if (attr_ints(*node_, "dilations", {1, 1}) != std::vector<int64_t>{1, 1})
            refuse("a dilated average pooling has no Myelin form");
        a.set("count_include_pad", attr_int(*node_, "count_include_pad", 0) != 0);
    }
    set_output(0, tensor_value(add_layer(kind, a, {x}, scope_hint())));
}

// A constant added to a Linear made from a MatMul that nothing else reads is its bias.
bool Importer::fold_bias(const Port& p, const Tensor& bias, const std::string& onnx_name) {
    auto it = made_.find(p.node);
    if (it == made_.end() || !it->second.bias_pending || p.port != 0 || uses(onnx_name) != 1)
        return false;
    const int64_t out = p.type.shape.back();
    if (bias.numel() != out || (bias.dim() > 0 && bias.size(bias.dim() - 1) != out) ||
        bias.dim() > int(p.type.shape.size()))
        return false;
    graph::Node& node = spec_.node(p.node);
    const Tensor b = bias.to(DType::Float32).reshape(Dims{out}).contiguous();
    if (it->second.kind == "MultiheadAttention") { // out_proj's bias (in_proj's came with it)
        weights_[node.name + ".out_proj.bias"] = b;
        it->second.bias_pending = false;
        return true;
    }
    node.attrs.set("bias", true);
    weights_[node.name + ".bias"] = b;
    it->second.bias_pending = false;
    return true;
}

void Importer::op_add() {
    const Value& a = input(0);
    const Value& b = input(1);
    using K = Value::Kind;
    if (a.kind == K::Tensor && b.kind == K::Tensor)
        return set_output(0, tensor_value(add_layer("Add", {{"num_inputs", int64_t(2)}},
                                                    {a.port, b.port}, scope_hint())));
    for (int i = 0; i < 2; ++i) {
        const Value& t = i == 0 ? a : b;
        const Value& c = i == 0 ? b : a;
        if (t.kind == K::Tensor && c.kind == K::Constant) {
            if (fold_bias(t.port, c.constant, input_name(i))) return set_output(0, t);
            refuse("adds a constant " + c.constant.sizes().str() +
                   " to a computed tensor: Myelin has no layer for that (a constant is imported "
                   "only as the bias of a Linear made from a MatMul)");
        }
    }
    refuse("adds values that are not both computed tensors (shape arithmetic is not imported)");
}

void Importer::op_mul() {
    const Value& a = input(0);
    const Value& b = input(1);
    if (a.kind != Value::Kind::Tensor || b.kind != Value::Kind::Tensor)
        refuse("multiplies by a constant: Myelin has no layer for that (Multiply takes computed "
               "tensors)");
    // x * Sigmoid(x) is SiLU when nothing else reads the Sigmoid.
    for (int i = 0; i < 2; ++i) {
        const Port& s = i == 0 ? a.port : b.port;
        const Port& x = i == 0 ? b.port : a.port;
        auto it = made_.find(s.node);
        if (it != made_.end() && it->second.kind == "Sigmoid" && it->second.inputs[0].same(x) &&
            uses(input_name(i)) == 1 && spec_.outputs_of(s.node).empty()) {
            const std::string hint = spec_.node(s.node).name;
            spec_.remove_node(s.node);
            made_.erase(it);
            names_.erase(hint);
            return set_output(0, tensor_value(add_layer("SiLU", {}, {x}, scope_hint())));
        }
    }
    set_output(0, tensor_value(add_layer("Multiply", {{"num_inputs", int64_t(2)}}, {a.port, b.port},
                                         scope_hint())));
}

void Importer::op_concat() {
    const int n = node_->input_size();
    bool all_ints = true, all_tensors = true;
    for (int i = 0; i < n; ++i) {
        const Value& v = input(i);
        all_tensors = all_tensors && v.kind == Value::Kind::Tensor;
        all_ints = all_ints && (v.kind == Value::Kind::Ints ||
                                (v.kind == Value::Kind::Constant &&
                                 v.constant.dtype() == DType::Int64 && v.constant.dim() == 1));
    }
    bool all_zero = true;
    for (int i = 0; i < n; ++i)
        all_zero = all_zero && is_zero(i);
    if (all_zero) {
        Value z;
        z.kind = Value::Kind::Zeros;
        return set_output(0, z);
    }
    if (all_ints) {
        std::vector<int64_t> joined;
        for (int i = 0; i < n; ++i) {
            const auto part = ints_input(i);
            joined.insert(joined.end(), part.begin(), part.end());
        }
        return set_output(0, ints_value(joined));
    }
    if (!all_tensors)
        refuse("concatenates constants with computed tensors: Myelin's Concat takes computed "
               "tensors");
    if (n == 1) return set_output(0, input(0));
    if (n > 16) refuse(std::to_string(n) + " inputs; Myelin's Concat takes at most 16");
    std::vector<Port> ports;
    for (int i = 0; i < n; ++i)
        ports.push_back(input(i).port);
    set_output(0, tensor_value(add_layer(
                      "Concat", {{"num_inputs", int64_t(n)}, {"dim", attr_int(*node_, "axis", 1)}},
                      ports, scope_hint())));
}

// Reshape to a constant (or computed) shape: a Flatten or Unflatten of the input, or nothing.
// Tried with two batch sizes so that a dimension that follows the batch is told apart.
void Importer::op_reshape(const std::vector<int64_t>& given, bool allow_zero) {
    const Port x = tensor_input(0);
    std::vector<int64_t> target = given;
    // A file exported with a fixed batch size repeats it here.
    if (static_batch_ > 0 && !target.empty() && target[0] == static_batch_) target[0] = kBatch;
    const Dims& in = x.type.shape;
    const int rank = in.size();
    auto with_batch = [&](int64_t batch) {
        std::vector<int64_t> s = in.vec();
        s[0] = batch;
        return s;
    };
    const auto out2 = reshape_sizes(target, with_batch(2), 2, allow_zero);
    const auto out3 = reshape_sizes(target, with_batch(3), 3, allow_zero);
    if (!out2 || !out3)
        refuse("the shape " + list_text(given) + " does not fit the input " + in.str());
    auto matches = [&](const std::function<std::vector<int64_t>(std::vector<int64_t>)>& f) {
        return f(with_batch(2)) == *out2 && f(with_batch(3)) == *out3;
    };
    if (matches([](std::vector<int64_t> s) { return s; }))
        return set_output(0, input(0)); // a reshape that changes nothing
    // Flatten(start, end), keeping the batch where possible.
    for (int start : {1, 0})
        for (int end = start; end < rank; ++end) {
            auto flatten = [&](std::vector<int64_t> s) {
                std::vector<int64_t> o(s.begin(), s.begin() + start);
                int64_t merged = 1;
                for (int d = start; d <= end; ++d)
                    merged *= s[size_t(d)];
                o.push_back(merged);
                o.insert(o.end(), s.begin() + end + 1, s.end());
                return o;
            };
            if (end > start && matches(flatten))
                return layer_output("Flatten", {{"start_dim", int64_t(start)},
                                                {"end_dim", int64_t(end == rank - 1 ? -1 : end)}});
        }
    // Unflatten(dim, sizes) of a dimension after the batch.
    const int extra = int(out2->size()) - rank;
    for (int d = 1; extra > 0 && d < rank; ++d) {
        const std::vector<int64_t> sizes(out2->begin() + d, out2->begin() + d + extra + 1);
        auto unflatten = [&](std::vector<int64_t> s) {
            std::vector<int64_t> o(s.begin(), s.begin() + d);
            o.insert(o.end(), sizes.begin(), sizes.end());
            o.insert(o.end(), s.begin() + d + 1, s.end());
            return o;
        };
        if (matches(unflatten))
            return layer_output("Unflatten", {{"dim", int64_t(d)}, {"unflattened_size", sizes}});
    }
    refuse("reshaping " + in.str() + " to " + list_text(given) +
           " is neither a flatten nor a split of one dimension: Myelin has no general reshape "
           "layer");
}

// Gemm -> Linear: y = alpha * A B' + beta * C with B the weight (transB=1, PyTorch's layout) or
// its transpose.
void Importer::op_gemm() {
    const Port x = tensor_input(0);
    if (attr_int(*node_, "transA", 0) != 0) refuse("transA=1 is not imported");
    if (x.type.shape.size() != 2) refuse("Gemm takes a 2-d input, got " + x.type.shape.str());
    Tensor w = float_constant(1);
    if (w.dim() != 2) refuse("the weight must be 2-d, got " + w.sizes().str());
    if (attr_int(*node_, "transB", 0) == 0) w = w.t().contiguous();
    const double alpha = attr_float(*node_, "alpha", 1.0), beta = attr_float(*node_, "beta", 1.0);
    if (alpha != 1.0) w = (w * alpha).contiguous();
    const int64_t out = w.size(0);
    std::vector<std::pair<std::string, Tensor>> weights{{"weight", w}};
    if (has_input(2)) {
        Tensor c = float_constant(2);
        if (c.numel() == 1 && out > 1) c = full(Dims{out}, double(c.contiguous().data<float>()[0]));
        if (c.numel() != out || (c.dim() == 2 && c.size(0) != 1))
            refuse("the bias C " + c.sizes().str() + " is not one value per output (" +
                   std::to_string(out) + ")");
        if (beta != 1.0) c = c * beta;
        weights.emplace_back("bias", c.reshape(Dims{out}).contiguous());
    }
    const Attrs a{{"in_features", w.size(1)}, {"out_features", out}, {"bias", has_input(2)}};
    set_output(0, tensor_value(add_layer("Linear", a, {x}, weight_hint(1), weights)));
}

// MatMul by a constant [in, out] -> Linear without bias; an Add right after may give the bias.
void Importer::op_matmul() {
    if (input(0).kind != Value::Kind::Tensor || input(1).kind != Value::Kind::Constant)
        refuse("only a computed tensor times a constant weight (a Linear) is imported; Myelin "
               "has no layer that multiplies two computed tensors");
    const Port x = tensor_input(0);
    const Tensor w = float_constant(1);
    if (w.dim() != 2) refuse("the weight must be 2-d, got " + w.sizes().str());
    if (x.type.shape.size() < 2) refuse("input " + x.type.shape.str() + " has no features");
    const Attrs a{{"in_features", w.size(0)}, {"out_features", w.size(1)}, {"bias", false}};
    const Port p = add_layer("Linear", a, {x}, weight_hint(1), {{"weight", w.t().contiguous()}});
    made_[p.node].bias_pending = true;
    set_output(0, tensor_value(p));
}

void Importer::op_gather() {
    const Value& data = input(0);
    const Value& indices = input(1);
    int64_t axis = attr_int(*node_, "axis", 0);
    // A constant table read at computed token ids: an embedding.
    if (data.kind == Value::Kind::Constant && indices.kind == Value::Kind::Tensor &&
        data.constant.dtype() == DType::Float32) {
        if (axis != 0 || data.constant.dim() != 2)
            refuse("a lookup in a constant " + data.constant.sizes().str() + " along axis " +
                   std::to_string(axis) +
                   " is imported only as an Embedding (a 2-d table, axis 0)");
        if (indices.port.type.dtype != DType::Int64)
            refuse("an embedding's indices must be int64, got " +
                   graph::to_string(indices.port.type));
        const Tensor& table = data.constant;
        const Attrs a{{"num_embeddings", table.size(0)},
                      {"embedding_dim", table.size(1)},
                      {"padding_idx", std::monostate{}}};
        note("Embedding imported without a padding index (ONNX does not record it); set "
             "padding_idx if one token is padding");
        return set_output(0, tensor_value(add_layer("Embedding", a, {indices.port}, weight_hint(0),
                                                    {{"weight", table}})));
    }
    // Picking dimensions of a computed shape (x.size(0) -> batch).
    if (data.kind == Value::Kind::Ints ||
        (data.kind == Value::Kind::Constant && data.constant.dtype() == DType::Int64 &&
         data.constant.dim() == 1)) {
        if (axis != 0) refuse("axis must be 0 for a list of integers");
        const std::vector<int64_t> list = ints_input(0);
        bool scalar = false;
        const std::vector<int64_t> picks = ints_input(1, &scalar);
        std::vector<int64_t> out;
        for (int64_t i : picks) {
            const int64_t n = int64_t(list.size());
            if (i < -n || i >= n) refuse("index " + std::to_string(i) + " is out of range");
            out.push_back(list[size_t(i < 0 ? i + n : i)]);
        }
        return set_output(0, ints_value(out, scalar));
    }
    // h_n[-1] of one layer and direction: a dimension of size 1 picked.
    if (data.kind == Value::Kind::View && indices.kind != Value::Kind::Tensor) {
        bool scalar = false;
        const std::vector<int64_t> picks = ints_input(1, &scalar);
        Value view = data;
        if (axis < 0) axis += int64_t(view.groups.size());
        if (scalar && picks.size() == 1 && (picks[0] == 0 || picks[0] == -1) && axis >= 0 &&
            axis < int64_t(view.groups.size()) &&
            significant(view.groups, view.atoms)[size_t(axis)].empty()) {
            view.groups.erase(view.groups.begin() + axis);
            return set_view(0, view);
        }
        refuse("picks from a recurrent layer's states along a dimension of size > 1 (e.g. "
               "h_n[-1] of a bidirectional or stacked layer): Myelin has no layer for that");
    }
    // x[:, -1] of a sequence [N, T, F]: its last step.
    if (data.kind == Value::Kind::Tensor && indices.kind != Value::Kind::Tensor &&
        data.port.type.shape.size() == 3) {
        bool scalar = false;
        const std::vector<int64_t> picks = ints_input(1, &scalar);
        const int64_t steps = data.port.type.shape[1];
        if (axis < 0) axis += 3;
        if (axis == 1 && scalar && picks.size() == 1 && (picks[0] == -1 || picks[0] == steps - 1))
            return set_output(
                0, tensor_value(add_layer("SequenceLast", {}, {data.port}, scope_hint())));
    }
    refuse("Gather is imported as an Embedding (a constant 2-d table read at computed int64 "
           "indices), as a sequence's last step (x[:, -1] of [N, T, F]) or on shapes");
}

// The mean over a sequence's steps (SequenceMeanPool) or a feature map's positions (global
// average pooling).
void Importer::op_reduce_mean() {
    const Port x = tensor_input(0);
    const int rank = x.type.shape.size();
    std::vector<int64_t> axes = attr_ints(*node_, "axes", {});
    for (int64_t& a : axes)
        if (a < 0) a += rank;
    std::sort(axes.begin(), axes.end());
    const bool keep = attr_int(*node_, "keepdims", 1) != 0;
    if (rank == 3 && axes == std::vector<int64_t>{1} && !keep)
        return set_output(0, tensor_value(add_layer("SequenceMeanPool", {}, {x}, scope_hint())));
    if (rank == 4 && axes == std::vector<int64_t>{2, 3}) {
        Port p = add_layer("AdaptiveAvgPool2d", {{"output_size", std::vector<int64_t>{1}}}, {x},
                           scope_hint());
        if (!keep)
            p = add_layer("Flatten", {{"start_dim", int64_t(1)}, {"end_dim", int64_t(-1)}}, {p},
                          scope_hint());
        return set_output(0, tensor_value(p));
    }
    refuse("a mean over axes " + list_text(axes) + " of " + x.type.shape.str() +
           (keep ? " keeping them" : "") +
           ": Myelin has means over a sequence's steps ([N, T, F], axis 1) and over a feature "
           "map's positions ([N, C, H, W], axes 2 and 3)");
}

void Importer::op_layer_norm() {
    const Port x = tensor_input(0);
    only_outputs_below(1, "LayerNormalization's mean and inverse deviation have no Myelin form");
    const int rank = x.type.shape.size();
    int64_t axis = attr_int(*node_, "axis", -1);
    if (axis < 0) axis += rank;
    if (axis < 1 || axis >= rank)
        refuse("axis " + std::to_string(attr_int(*node_, "axis", -1)) + " of " +
               x.type.shape.str() +
               ": Myelin's LayerNorm normalises trailing dimensions after "
               "the batch");
    const std::vector<int64_t> normalized(x.type.shape.begin() + axis, x.type.shape.end());
    const Tensor scale = float_constant(1);
    if (scale.sizes().vec() != normalized)
        refuse("the scale " + scale.sizes().str() + " is not the normalized shape " +
               list_text(normalized));
    const Tensor bias = has_input(2) ? float_constant(2) : zeros(Dims(normalized));
    if (bias.sizes().vec() != normalized)
        refuse("the bias " + bias.sizes().str() + " is not the normalized shape " +
               list_text(normalized));
    const Attrs a{{"normalized_shape", normalized},
                  {"eps", attr_float(*node_, "epsilon", 1e-5)},
                  {"elementwise_affine", true}};
    set_output(0, tensor_value(add_layer("LayerNorm", a, {x}, weight_hint(1),
                                         {{"weight", scale}, {"bias", bias}})));
}

// A Reshape of a view: each new dimension must be whole atoms in order (merged, or size 1).
void Importer::view_reshape(const Value& v, const std::vector<int64_t>& given, bool allow_zero) {
    std::vector<int64_t> target = given;
    if (static_batch_ > 0 && !target.empty() && target[0] == static_batch_) target[0] = kBatch;
    auto regroup = [&](int64_t batch) -> std::optional<std::vector<std::vector<int>>> {
        auto size_of = [&](int a) { return a == 0 ? batch : v.atoms[size_t(a)]; };
        std::vector<int64_t> current;
        std::vector<int> sequence;
        for (const auto& g : significant(v.groups, v.atoms)) {
            int64_t n = 1;
            for (int a : g) {
                n *= size_of(a);
                sequence.push_back(a);
            }
            current.push_back(n);
        }
        const auto sizes = reshape_sizes(target, current, batch, allow_zero);
        if (!sizes) return std::nullopt;
        std::vector<std::vector<int>> groups;
        size_t k = 0;
        for (int64_t want : *sizes) {
            std::vector<int> g;
            int64_t n = 1;
            while (n < want && k < sequence.size()) {
                n *= size_of(sequence[k]);
                g.push_back(sequence[k++]);
            }
            if (n != want) return std::nullopt;
            groups.push_back(g);
        }
        if (k != sequence.size()) return std::nullopt;
        return groups;
    };
    const auto g2 = regroup(2), g3 = regroup(3);
    if (!g2 || !g3 || *g2 != *g3)
        refuse("reshaping the layout change made by " + v.view_node + " to " + list_text(given) +
               " splits or reorders its dimensions: Myelin has no layer for that");
    Value out = v;
    out.groups = *g2;
    set_view(0, out);
}

// An initial state of zeros: absent, built from ConstantOfShape, or a constant of zeros.
bool Importer::is_zero(int i) const {
    if (!has_input(i)) return true;
    const Value& v = input(i);
    if (v.kind == Value::Kind::Zeros) return true;
    if (v.kind != Value::Kind::Constant || !is_floating(v.constant.dtype())) return false;
    const Tensor c = v.constant.to(DType::Float64).contiguous();
    for (int64_t k = 0; k < c.numel(); ++k)
        if (c.data<double>()[k] != 0.0) return false;
    return true;
}

// LSTM / GRU / RNN on a time-major view of a batch-first sequence -> one layer of Myelin's kind.
// ONNX's gate blocks (LSTM i o f c, GRU z r h) become PyTorch's (i f g o, r z n); B splits into
// bias_ih and bias_hh. The outputs are views of the layer's ports: Y [T, D, N, H] of port 0
// ([N, T, D*H]), Y_h and Y_c [D, N, H] of ports h_n and c_n ([N, D*H]).
void Importer::op_recurrent() {
    const std::string op = node_->op_type();
    const Value& xv = input(0);
    std::optional<Port> sequence;
    if (xv.kind == Value::Kind::View && xv.groups.size() == 3) {
        Value batch_first = xv;
        std::swap(batch_first.groups[0], batch_first.groups[1]);
        if (significant(batch_first.groups, batch_first.atoms) ==
            significant(batch_first.layout, batch_first.atoms))
            sequence = batch_first.port;
    }
    if (!sequence || sequence->type.shape.size() != 3)
        refuse("X must be a batch-first sequence [N, T, F] transposed to time-major (perm [1, 0, "
               "2]), as PyTorch writes a batch_first layer; Myelin's sequences are batch first");
    const Port x = *sequence;
    if (attr_int(*node_, "layout", 0) != 0) refuse("layout=1 is not imported");
    for (const char* a : {"clip", "activation_alpha", "activation_beta", "input_forget"})
        if (find_attr(*node_, a) &&
            !(std::string(a) == "input_forget" && attr_int(*node_, "input_forget", 0) == 0))
            refuse(std::string("the attribute '") + a + "' has no Myelin form");
    const std::string direction = attr_string(*node_, "direction", "forward");
    if (direction != "forward" && direction != "bidirectional")
        refuse("direction '" + direction + "' has no Myelin form (forward and bidirectional do)");
    const int64_t dirs = direction == "bidirectional" ? 2 : 1;
    const Tensor w = float_constant(1), r = float_constant(2);
    const int64_t gates = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
    const int64_t hidden = r.dim() == 3 ? r.size(2) : 0;
    const int64_t features = x.type.shape[2];
    if (w.dim() != 3 || w.sizes() != Dims{dirs, gates * hidden, features} ||
        r.sizes() != Dims{dirs, gates * hidden, hidden} ||
        attr_int(*node_, "hidden_size", hidden) != hidden)
        refuse("weights W " + w.sizes().str() + " and R " + r.sizes().str() +
               " do not fit hidden_size " + std::to_string(attr_int(*node_, "hidden_size", 0)) +
               " on " + std::to_string(features) + " features");
    std::optional<Port> lengths;
    if (has_input(4)) {
        const Value& v = input(4);
        if (v.kind != Value::Kind::Lengths || v.stage != Value::Stage::Lengths)
            refuse("sequence_lens is imported only when computed from the token ids as "
                   "PaddingLengths does it ((tokens != 0).sum(dim=1).clamp(min=1)); Myelin's "
                   "recurrent layers take each sequence's length from PaddingLengths");
        lengths = padding_lengths_of(v.port);
    }
    for (int i : {5, 6})
        if (!is_zero(i))
            refuse("its initial state (input " + std::to_string(i) +
                   ") is not zeros: Myelin's recurrent layers start from zeros");
    std::vector<std::string> expected;
    std::string nonlinearity = "tanh";
    const auto activations = find_attr(*node_, "activations");
    if (op == "LSTM") expected = {"Sigmoid", "Tanh", "Tanh"};
    if (op == "GRU") expected = {"Sigmoid", "Tanh"};
    if (op == "RNN") {
        expected = {"Tanh"};
        if (activations && activations->strings_size() > 0 && activations->strings(0) == "Relu") {
            expected = {"Relu"};
            nonlinearity = "relu";
        }
    }
    if (activations) {
        std::vector<std::string> given(activations->strings().begin(),
                                       activations->strings().end());
        std::vector<std::string> full;
        for (int64_t d = 0; d < dirs; ++d)
            full.insert(full.end(), expected.begin(), expected.end());
        if (given != full && given != expected)
            refuse("activations other than PyTorch's have no Myelin form");
    }
    if (op == "GRU" && attr_int(*node_, "linear_before_reset", 0) != 1)
        refuse("linear_before_reset=0 (the reset gate applied before the recurrent weights) is "
               "not PyTorch's GRU; Myelin's GRU is PyTorch's (linear_before_reset=1)");
    // PyTorch's gate block j is ONNX's block order[j].
    const std::vector<int64_t> order = op == "LSTM"  ? std::vector<int64_t>{0, 2, 3, 1}
                                       : op == "GRU" ? std::vector<int64_t>{1, 0, 2}
                                                     : std::vector<int64_t>{0};
    auto reorder = [&](const Tensor& t) {
        TensorList parts;
        for (int64_t g : order)
            parts.push_back(t.narrow(0, g * hidden, hidden));
        return cat(parts, 0).contiguous();
    };
    const bool bias = has_input(3);
    Tensor b;
    if (bias) {
        b = float_constant(3);
        if (b.sizes() != Dims{dirs, 2 * gates * hidden})
            refuse("B " + b.sizes().str() + " does not fit " + std::to_string(dirs) +
                   " direction(s) of " + std::to_string(gates) + " gates of " +
                   std::to_string(hidden));
    }
    std::vector<std::pair<std::string, Tensor>> weights;
    for (int64_t d = 0; d < dirs; ++d) {
        const std::string suffix = d == 1 ? "_l0_reverse" : "_l0";
        weights.emplace_back("weight_ih" + suffix, reorder(w.select(0, d)));
        weights.emplace_back("weight_hh" + suffix, reorder(r.select(0, d)));
        if (bias) {
            const Tensor bd = b.select(0, d);
            weights.emplace_back("bias_ih" + suffix, reorder(bd.narrow(0, 0, gates * hidden)));
            weights.emplace_back("bias_hh" + suffix,
                                 reorder(bd.narrow(0, gates * hidden, gates * hidden)));
        }
    }
    Attrs a{{"input_size", features},
            {"hidden_size", hidden},
            {"bidirectional", dirs == 2},
            {"bias", bias}};
    if (op == "RNN") a.set("nonlinearity", nonlinearity);
    std::vector<Port> inputs{x};
    if (lengths) {
        a.set("num_inputs", int64_t(2));
        inputs.push_back(*lengths);
    }
    const Port p = add_layer(op, a, inputs, weight_hint(1), weights);
    const std::vector<TensorType>& types = made_[p.node].outputs;
    // Atoms of port 0: N, T, D, H; of the state ports: N, D, H.
    Value y;
    y.kind = Value::Kind::View;
    y.port = p;
    y.atoms = {1, x.type.shape[1], dirs, hidden};
    y.layout = {{0}, {1}, {2, 3}};
    y.groups = {{1}, {2}, {0}, {3}};
    set_view(0, y);
    for (int port = 1; port < int(types.size()); ++port) {
        Value state;
        state.kind = Value::Kind::View;
        state.port = {p.node, port, types[size_t(port)]};
        state.atoms = {1, dirs, hidden};
        state.layout = {{0}, {1, 2}};
        state.groups = {{1}, {0}, {2}};
        set_view(port, state);
    }
}

// The lengths of token-id sequences, (tokens != 0).sum(dim=1).clamp(min=1) as PyTorch and
// Myelin's own export write it, is followed op by op (Value::Kind::Lengths) and becomes one
// PaddingLengths layer when a recurrent layer reads it as sequence_lens. False: the node is not
// such a step (the caller handles or refuses it).
bool Importer::op_lengths_step() {
    const std::string& op = node_->op_type();
    using Stage = Value::Stage;
    auto constant_is = [&](int i, double want) {
        if (!has_input(i)) return false;
        const Value& v = input(i);
        if (v.kind != Value::Kind::Constant && v.kind != Value::Kind::Ints) return false;
        const Tensor c = constant_input(i);
        return c.numel() == 1 && c.to(DType::Float64).contiguous().data<double>()[0] == want;
    };
    auto emit = [&](const Port& tokens, Stage stage) {
        Value v;
        v.kind = Value::Kind::Lengths;
        v.port = tokens;
        v.stage = stage;
        set_output(0, std::move(v));
        return true;
    };
    if (op == "Equal") {
        for (int side : {0, 1}) {
            if (!has_input(side) || input(side).kind != Value::Kind::Tensor) continue;
            const Port tokens = input(side).port;
            if (tokens.type.dtype == DType::Int64 && tokens.type.shape.size() == 2 &&
                constant_is(1 - side, 0.0))
                return emit(tokens, Stage::PaddingMask);
        }
        return false;
    }
    const Value& v = input(0);
    if (v.kind != Value::Kind::Lengths) return false;
    if (op == "Not" && (v.stage == Stage::PaddingMask || v.stage == Stage::TokenMask))
        return emit(v.port, v.stage == Stage::PaddingMask ? Stage::TokenMask : Stage::PaddingMask);
    if (op == "ReduceSum" && v.stage == Stage::TokenMask) {
        const std::vector<int64_t> axes =
            has_input(1) ? ints_input(1) : attr_ints(*node_, "axes", {});
        if (axes.size() == 1 && (axes[0] == 1 || axes[0] == -1) &&
            attr_int(*node_, "keepdims", 1) == 0)
            return emit(v.port, Stage::Counts);
        refuse("a count of the non-padding tokens is imported over the steps (axis 1, "
               "keepdims=0) only");
    }
    if (v.stage == Stage::Counts &&
        ((op == "Max" && node_->input_size() == 2 && constant_is(1, 1.0)) ||
         (op == "Clip" && constant_is(1, 1.0) && !has_input(2))))
        return emit(v.port, Stage::Lengths);
    refuse(op + " of sequence lengths: only (tokens != 0).sum(dim=1).clamp(min=1) is imported "
                "(Myelin's PaddingLengths)");
}

void Importer::drop_layer(graph::NodeId node) {
    const std::string name = spec_.node(node).name;
    for (auto it = weights_.begin(); it != weights_.end();)
        it = it->first.rfind(name + ".", 0) == 0 ? weights_.erase(it) : std::next(it);
    spec_.remove_node(node);
    made_.erase(node);
    names_.erase(name);
}

// Self-attention written out (as Myelin's export and PyTorch's nn.MultiheadAttention write it):
// three projections of the same x, the queries scaled by 1/sqrt(head_dim), each split into
// heads [N, H, T, d] (the keys transposed to [N, H, d, T]), the scores (plus the key padding
// mask), softmax, the weighted values merged back to [N, T, E] and the output projection. The
// three projection layers made on the way are replaced by one MultiheadAttention.
void Importer::finish_attention(const Value& merged) {
    const Tensor w_out = float_constant(1); // [E, E] as x @ w: out_proj.weight transposed
    const Made& mq = made_.at(merged.q.node);
    const Made& mk = made_.at(merged.k.node);
    const Made& mv = made_.at(merged.v.node);
    const Port x = mq.inputs.at(0);
    if (!mk.inputs.at(0).same(x) || !mv.inputs.at(0).same(x))
        refuse("the attention's queries, keys and values are projections of different tensors: "
               "Myelin's MultiheadAttention is self-attention");
    const int64_t e = x.type.shape.back();
    const int64_t heads = merged.heads, head_dim = e / std::max<int64_t>(heads, 1);
    if (w_out.dim() != 2 || w_out.size(0) != e || w_out.size(1) != e)
        refuse("the output projection " + w_out.sizes().str() + " is not [" + std::to_string(e) +
               ", " + std::to_string(e) + "]");
    if (std::abs(merged.scale * std::sqrt(double(head_dim)) - 1.0) > 1e-5)
        refuse("the queries are scaled by " + std::to_string(merged.scale) + ", not 1/sqrt(" +
               std::to_string(head_dim) + ") as scaled dot-product attention does");
    auto weight = [&](const Port& p) { return weights_.at(spec_.node(p.node).name + ".weight"); };
    auto bias = [&](const Port& p) {
        const auto it = weights_.find(spec_.node(p.node).name + ".bias");
        return it != weights_.end() ? it->second : zeros(Dims{e});
    };
    const Tensor in_w = cat({weight(merged.q), weight(merged.k), weight(merged.v)}, 0).contiguous();
    const Tensor in_b = cat({bias(merged.q), bias(merged.k), bias(merged.v)}, 0).contiguous();
    for (const Port& p : {merged.q, merged.k, merged.v})
        if (!spec_.outputs_of(p.node).empty())
            refuse("an attention projection is also read elsewhere");
    const std::string hint = scope_hint();
    for (const Port& p : {merged.q, merged.k, merged.v})
        drop_layer(p.node);
    Attrs a{{"embed_dim", e},
            {"num_heads", heads},
            {"bias", true},
            {"dropout", 0.0},
            {"num_inputs", int64_t(merged.masked ? 2 : 1)}};
    std::vector<Port> inputs{x};
    if (merged.masked) inputs.push_back(padding_lengths_of(merged.tokens));
    const Port p = add_layer("MultiheadAttention", a, inputs, hint,
                             {{"in_proj_weight", in_w},
                              {"in_proj_bias", in_b},
                              {"out_proj.weight", w_out.t().contiguous()},
                              {"out_proj.bias", zeros(Dims{e})}});
    made_[p.node].bias_pending = true; // the Add after it gives out_proj's bias
    set_output(0, tensor_value(p));
}

bool Importer::op_pattern_step() {
    const std::string& op = node_->op_type();
    using K = Value::Kind;
    auto is_tensor = [&](int i) { return has_input(i) && input(i).kind == K::Tensor; };
    auto is_constant = [&](int i) {
        return has_input(i) && (input(i).kind == K::Constant || input(i).kind == K::Ints);
    };
    auto scalar_of = [&](int i) -> std::optional<double> {
        if (!is_constant(i)) return std::nullopt;
        const Tensor c = constant_input(i);
        if (c.numel() != 1) return std::nullopt;
        return c.to(DType::Float64).contiguous().data<double>()[0];
    };
    // A Linear (made from MatMul) on a sequence [N, T, E], read only here.
    auto projection = [&](int i) {
        if (!is_tensor(i)) return false;
        const Port& p = input(i).port;
        const auto it = made_.find(p.node);
        return it != made_.end() && it->second.kind == "Linear" && p.type.shape.size() == 3 &&
               uses(input_name(i)) == 1;
    };
    auto axes = [&]() { return has_input(1) ? ints_input(1) : attr_ints(*node_, "axes", {}); };
    auto emit = [&](Value v) {
        set_output(0, std::move(v));
        return true;
    };

    if (op == "Mul") {
        for (int i : {0, 1}) {
            // The queries scaled before their heads are split.
            if (projection(i) && scalar_of(1 - i)) {
                Value v = pattern("scaled", input(i));
                v.scale = *scalar_of(1 - i);
                return emit(v);
            }
            // A sequence's values times its valid-step mask [N, T, 1].
            if (is_tensor(i) && input(i).port.type.shape.size() == 3 &&
                is_step(1 - i, "valid_mask")) {
                Value v = pattern("masked_values", input(i));
                v.tokens = input(1 - i).tokens;
                return emit(v);
            }
        }
        return false;
    }
    if (op == "Reshape") {
        const std::vector<int64_t> shape = ints_input(1);
        if ((projection(0) || is_step(0, "scaled")) && shape.size() == 4) {
            const Value& from = input(0);
            const auto& s = from.port.type.shape;
            if (shape[1] == s[1] && shape[2] > 0 && shape[2] * shape[3] == s[2]) {
                Value v = pattern("split", from);
                v.heads = shape[2];
                if (from.kind == K::Tensor) v.scale = 1.0;
                return emit(v);
            }
        }
        if (is_step(0, "context_t") && shape.size() == 3) return emit(pattern("merged", input(0)));
        return false;
    }
    if (op == "Transpose") {
        const std::vector<int64_t> perm = attr_ints(*node_, "perm", {});
        if (is_step(0, "split") && perm == std::vector<int64_t>{0, 2, 1, 3})
            return emit(pattern("heads_qv", input(0)));
        if (is_step(0, "split") && perm == std::vector<int64_t>{0, 2, 3, 1})
            return emit(pattern("heads_k", input(0)));
        if (is_step(0, "context") && perm == std::vector<int64_t>{0, 2, 1, 3})
            return emit(pattern("context_t", input(0)));
        return false;
    }
    if (op == "MatMul") {
        if (is_step(0, "heads_qv") && is_step(1, "heads_k")) {
            Value v = pattern("scores", input(0));
            v.q = input(0).port;
            v.k = input(1).port;
            if (input(1).heads != v.heads || input(1).scale != 1.0)
                refuse("the keys are split into other heads than the queries, or scaled");
            return emit(v);
        }
        if (is_step(0, "probs") && is_step(1, "heads_qv")) {
            if (input(1).scale != 1.0 || input(1).heads != input(0).heads)
                refuse("the values are scaled or split into other heads than the queries");
            Value v = pattern("context", input(0));
            v.v = input(1).port;
            return emit(v);
        }
        if (is_step(0, "merged")) {
            finish_attention(input(0));
            return true;
        }
        return false;
    }
    if (op == "Add") {
        for (int i : {0, 1}) {
            if (is_step(i, "scores") && is_step(1 - i, "key_mask") && !input(i).masked) {
                Value v = input(i);
                v.masked = true;
                v.tokens = input(1 - i).tokens;
                return emit(v);
            }
            // The fixed sinusoidal table added to [N, T, E]: PositionalEncoding.
            if (is_tensor(i) && input(1 - i).kind == K::Constant) {
                const Port& x = input(i).port;
                const Tensor table = input(1 - i).constant;
                if (x.type.shape.size() != 3 || table.dim() != 2 ||
                    table.sizes() != Dims{x.type.shape[1], x.type.shape[2]})
                    continue;
                const Tensor expected =
                    nn::functional::sinusoidal_position_table(table.size(0), table.size(1));
                const double diff =
                    max(abs(sub(table.to(DType::Float32), expected))).item<double>();
                if (diff > 1e-5) continue;
                const Attrs a{{"d_model", table.size(1)},
                              {"encoding", std::string("sinusoidal")},
                              {"max_len", table.size(0)},
                              {"dropout", 0.0}};
                return emit(tensor_value(add_layer("PositionalEncoding", a, {x}, scope_hint())));
            }
        }
        return false;
    }
    if (op == "Softmax" && is_step(0, "scores")) {
        const int64_t axis = attr_int(*node_, "axis", -1);
        if (axis != -1 && axis != 3) refuse("attention's softmax must be over the keys (axis -1)");
        return emit(pattern("probs", input(0)));
    }
    if (op == "Unsqueeze") {
        const std::vector<int64_t> a = axes();
        if (has_input(0) && input(0).kind == K::Lengths &&
            input(0).stage == Value::Stage::Lengths && a == std::vector<int64_t>{1}) {
            Value v = pattern("lengths_column", input(0));
            v.tokens = input(0).port;
            return emit(v);
        }
        if (is_step(0, "key_bias") && a == std::vector<int64_t>{1, 2})
            return emit(pattern("key_mask", input(0)));
        if (is_step(0, "valid_weights") &&
            (a == std::vector<int64_t>{2} || a == std::vector<int64_t>{-1}))
            return emit(pattern("valid_mask", input(0)));
        return false;
    }
    if (op == "Less" && is_constant(0) && is_step(1, "lengths_column")) {
        // positions [1, T] = 0, 1, ..., T-1 against each length: valid[n, t] = t < length[n].
        const Tensor positions = constant_input(0).to(DType::Float64).contiguous();
        bool counting = positions.dim() == 2 && positions.size(0) == 1;
        for (int64_t t = 0; counting && t < positions.numel(); ++t)
            counting = positions.data<double>()[t] == double(t);
        if (!counting) refuse("compares lengths with something other than the step positions");
        return emit(pattern("valid_steps", input(1)));
    }
    if (op == "Where" && is_step(0, "valid_steps")) {
        const auto yes = scalar_of(1), no = scalar_of(2);
        if (!yes || !no || *yes != 0.0 || !(std::isinf(*no) && *no < 0))
            refuse("a key padding mask is imported as Where(valid, 0, -inf) only");
        return emit(pattern("key_bias", input(0)));
    }
    if (op == "Cast") {
        if (is_step(0, "valid_steps")) return emit(pattern("valid_weights", input(0)));
        if (is_step(0, "lengths_column")) return emit(pattern("count", input(0)));
        return false;
    }
    if (op == "ReduceSum" && is_step(0, "masked_values")) {
        if (axes() != std::vector<int64_t>{1} || attr_int(*node_, "keepdims", 1) != 0)
            refuse("a masked sum is imported over the steps (axis 1, keepdims=0) only");
        return emit(pattern("masked_sum", input(0)));
    }
    if (op == "Div" && is_step(0, "masked_sum") && is_step(1, "count")) {
        const Value& sum = input(0);
        const Port lengths = padding_lengths_of(sum.tokens);
        return emit(tensor_value(add_layer("SequenceMeanPool", {{"num_inputs", int64_t(2)}},
                                           {sum.port, lengths}, scope_hint())));
    }
    return false;
}

Port Importer::padding_lengths_of(const Port& tokens) {
    const auto key = std::make_pair(tokens.node, tokens.port);
    auto it = padding_lengths_.find(key);
    if (it != padding_lengths_.end()) return it->second;
    return padding_lengths_[key] = add_layer("PaddingLengths", {}, {tokens}, "lengths");
}

// Clip(0, none) is ReLU, Clip(0, 6) ReLU6; Myelin has no general clamp layer (Hardtanh).
void Importer::op_clip() {
    auto bound = [&](int i) -> std::optional<double> {
        if (!has_input(i)) return std::nullopt;
        const Tensor t = float_constant(i);
        if (t.numel() != 1) refuse("its bound " + std::to_string(i) + " is not a single value");
        const double v = t.contiguous().data<float>()[0];
        if (std::isinf(v)) return std::nullopt;
        return v;
    };
    const auto low = bound(1), high = bound(2);
    if (low && *low == 0.0 && !high) {
        note("Clip(min=0) imported as ReLU");
        return layer_output("ReLU");
    }
    if (low && *low == 0.0 && high && *high == 6.0) return layer_output("ReLU6");
    auto text = [](const std::optional<double>& v) {
        if (!v) return std::string("none");
        std::ostringstream s;
        s << *v;
        return s.str();
    };
    refuse("Clip(min=" + text(low) + ", max=" + text(high) +
           "): Myelin has no clamp layer for these bounds (no Hardtanh); Clip(0, none) is "
           "imported as ReLU and Clip(0, 6) as ReLU6");
}

void Importer::op_prelu() {
    const Port x = tensor_input(0);
    const Tensor slope = float_constant(1);
    const int64_t n = slope.numel();
    bool per_channel = n > 1 && x.type.shape.size() >= 2 && x.type.shape[1] == n;
    for (int d = 1; per_channel && d < slope.dim(); ++d)
        per_channel = slope.size(d) == 1;
    if (n != 1 && !per_channel)
        refuse("a slope of shape " + slope.sizes().str() + " for input " + x.type.shape.str() +
               ": Myelin's PReLU has one slope, or one per channel");
    set_output(0, tensor_value(add_layer("PReLU", {{"num_parameters", n}}, {x}, weight_hint(1),
                                         {{"weight", slope.reshape(Dims{n})}})));
}

// A Pad is kept as a pending value that a Conv folds into its padding.
void Importer::op_pad() {
    const Port x = tensor_input(0);
    const std::string mode = attr_string(*node_, "mode", "constant");
    if (mode != "constant" && mode != "reflect" && mode != "edge")
        refuse("mode " + mode + " has no Myelin form");
    if (has_input(3)) refuse("the axes input is not imported");
    const std::vector<int64_t> pads = ints_input(1);
    const int rank = x.type.shape.size();
    if (int(pads.size()) != 2 * rank) refuse("pads " + list_text(pads) + " do not fit the input");
    if (pads[0] || pads[1] || pads[size_t(rank)] || pads[size_t(rank + 1)] ||
        std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p < 0; }))
        refuse("pads " + list_text(pads) +
               ": only non-negative padding of the spatial dimensions is imported");
    if (mode == "constant" && has_input(2)) {
        const Tensor value = float_constant(2);
        if (value.numel() != 1 || value.contiguous().data<float>()[0] != 0.0f)
            refuse("padding with a value other than 0 has no Myelin form");
    }
    Value v;
    v.kind = Value::Kind::Padded;
    v.port = x;
    v.pads = pads;
    v.pad_mode = mode;
    v.pad_node = node_->name().empty() ? "#" + std::to_string(index_) : node_->name();
    set_output(0, v);
}

// --- the graph ----------------------------------------------------------------------------------

void Importer::add_input() {
    std::set<std::string> initializers;
    for (const auto& t : graph_.initializer())
        initializers.insert(t.name());
    std::vector<const onnx::ValueInfoProto*> inputs;
    for (const auto& v : graph_.input())
        if (!initializers.count(v.name())) inputs.push_back(&v);
    if (inputs.size() != 1) {
        std::vector<std::string> names;
        for (const auto* v : inputs)
            names.push_back("'" + v->name() + "'");
        throw Error(source_ + ": the graph has " + std::to_string(inputs.size()) + " inputs" +
                    (names.empty() ? std::string() : " (" + join(names, ", ") + ")") +
                    "; Myelin imports models with exactly one input");
    }
    const onnx::ValueInfoProto& in = *inputs[0];
    const std::string what = source_ + ": graph input '" + in.name() + "'";
    if (!in.type().has_tensor_type()) throw Error(what + " is not a tensor");
    const auto& type = in.type().tensor_type();
    DType dtype;
    if (type.elem_type() == onnx::TensorProto::FLOAT)
        dtype = DType::Float32;
    else if (type.elem_type() == onnx::TensorProto::INT64)
        dtype = DType::Int64;
    else
        throw Error(what + " has element type " +
                    onnx::TensorProto_DataType_Name(onnx::TensorProto_DataType(type.elem_type())) +
                    "; Myelin's inputs are float32 or int64");
    if (!type.has_shape() || type.shape().dim_size() < 2)
        throw Error(what + " needs a shape with a batch dimension and at least one more");
    if (type.shape().dim_size() > 7)
        throw Error(what + " has " + std::to_string(type.shape().dim_size()) +
                    " dimensions; Myelin's inputs have at most 6 besides the batch");
    std::vector<int64_t> shape;
    for (int d = 0; d < type.shape().dim_size(); ++d) {
        const auto& dim = type.shape().dim(d);
        if (d == 0) {
            if (dim.has_dim_value()) static_batch_ = dim.dim_value();
            continue;
        }
        if (!dim.has_dim_value() || dim.dim_value() <= 0)
            throw Error(what + ": dimension " + std::to_string(d) + " is " +
                        (dim.has_dim_param() ? "symbolic ('" + dim.dim_param() + "')"
                                             : std::string("unknown")) +
                        "; Myelin's Input needs a fixed size for every dimension but the batch "
                        "(export with only the batch dynamic)");
        shape.push_back(dim.dim_value());
    }
    std::string name = sanitize(in.name());
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) name = "input";
    names_.insert(name);
    const graph::NodeId id = spec_.add_node(
        "Input", name,
        {{"shape", shape}, {"dtype", std::string(dtype == DType::Int64 ? "int64" : "float32")}});
    Dims full{1};
    for (int64_t d : shape)
        full.push_back(d);
    values_[in.name()] = tensor_value({id, 0, {full, dtype}});
}

void Importer::add_output() {
    if (graph_.output_size() != 1)
        throw Error(source_ + ": the graph has " + std::to_string(graph_.output_size()) +
                    " outputs; Myelin imports models with exactly one output");
    const onnx::ValueInfoProto& out = graph_.output(0);
    const std::string what = source_ + ": graph output '" + out.name() + "'";
    auto it = values_.find(out.name());
    if (it == values_.end()) throw Error(what + " is not computed by any node");
    if (it->second.kind == Value::Kind::View)
        throw Error(what + " is a layout change made by " + it->second.view_node +
                    " that Myelin has no layer for");
    if (it->second.kind != Value::Kind::Tensor)
        throw Error(what + " is a constant or a shape, not a tensor the model computes");
    const Port p = it->second.port;
    // The file's declared shape (static dimensions after the batch) must be Myelin's.
    if (out.type().has_tensor_type() && out.type().tensor_type().has_shape()) {
        const auto& shape = out.type().tensor_type().shape();
        bool same = shape.dim_size() == int(p.type.shape.size());
        for (int d = 1; same && d < shape.dim_size(); ++d)
            same = !shape.dim(d).has_dim_value() || shape.dim(d).dim_value() == p.type.shape[d];
        if (!same) {
            std::vector<int64_t> declared;
            for (const auto& dim : shape.dim())
                declared.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
            throw Error(what + " is declared as " + list_text(declared) +
                        " (-1: not fixed), the imported model gives " + p.type.shape.str());
        }
    }
    const graph::NodeId id = spec_.add_node("Output");
    spec_.connect(p.node, id, 0, p.port);
}

// Rows by depth (longest path from the input), side by side within a row.
void Importer::lay_out() {
    std::map<graph::NodeId, int> depth;
    std::map<int, int> row_count;
    for (graph::Node& n : spec_.nodes) {
        int d = 0;
        for (const graph::Edge& e : spec_.inputs_of(n.id))
            d = std::max(d, depth[e.from] + 1);
        depth[n.id] = d;
        n.x = 240.0 * row_count[d]++;
        n.y = 100.0 * d;
    }
}

nn::StateDict Importer::collect_weights(const graph::GraphModule& model) const {
    nn::StateDict state;
    std::set<std::string> used;
    for (const auto& [name, initial] : model.state_dict()) {
        auto it = weights_.find(name);
        if (it == weights_.end()) {
            // ONNX has no counterpart: num_batches_tracked keeps its initial value.
            if (name.size() < 20 || name.compare(name.size() - 20, 20, ".num_batches_tracked"))
                throw Error(source_ + ": no weight in the file for the imported model's '" + name +
                            "'");
            state.emplace_back(name, initial.contiguous());
            continue;
        }
        if (it->second.sizes() != initial.sizes())
            throw Error(source_ + ": the weight for '" + name + "' is " + it->second.sizes().str() +
                        ", the imported layer needs " + initial.sizes().str());
        state.emplace_back(name, it->second.to(initial.dtype()).contiguous());
        used.insert(name);
    }
    for (const auto& [name, tensor] : weights_)
        if (!used.count(name))
            throw Error(source_ + ": the imported model has no place for the weight '" + name +
                        "'");
    return state;
}

ImportedModel Importer::run() {
    int64_t opset = -1;
    for (const auto& o : model_.opset_import())
        if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
    if (opset < kMinOpset)
        throw Error(source_ + ": opset " +
                    (opset < 0 ? std::string("(none)") : std::to_string(opset)) +
                    "; this importer reads opset " + std::to_string(kMinOpset) +
                    " to 17 (export with opset_version=17)");

    // Every op Myelin has no form for, listed at once before anything is built.
    std::vector<std::string> refused;
    for (int i = 0; i < graph_.node_size(); ++i) {
        const onnx::NodeProto& n = graph_.node(i);
        if (!n.domain().empty() && n.domain() != "ai.onnx")
            refused.push_back(node_text(i, n) + ": ops of domain '" + n.domain() +
                              "' are not imported");
        else if (!supported_ops().count(n.op_type()))
            refused.push_back(node_text(i, n) + ": " + unsupported_reason(n.op_type()));
    }
    if (refused.size() == 1) throw Error(source_ + ": " + refused[0]);
    if (!refused.empty())
        throw Error(source_ + ": " + std::to_string(refused.size()) +
                    " nodes cannot be imported:\n  " + join(refused, "\n  "));

    for (const auto& n : graph_.node())
        for (const auto& in : n.input())
            if (!in.empty()) ++uses_[in];
    for (const auto& out : graph_.output())
        ++uses_[out.name()];
    for (const auto& t : graph_.initializer())
        values_[t.name()] =
            constant_value(tensor_of(t, source_ + ": initializer '" + t.name() + "'"));
    add_input();
    for (index_ = 0; index_ < graph_.node_size(); ++index_) {
        node_ = &graph_.node(index_);
        try {
            convert();
        } catch (const Error& e) {
            const std::string message = e.what();
            if (message.rfind(source_ + ": ", 0) == 0) throw;
            refuse(message);
        }
    }
    add_output();
    lay_out();

    const graph::Analysis analysis = graph::analyze(spec_, 1);
    if (!analysis.ok()) {
        std::string problems;
        for (const auto& p : analysis.problems)
            if (p.severity == graph::Severity::Error)
                problems += "\n  " + graph::describe(spec_, p);
        throw Error(source_ + ": the imported graph does not check:" + problems);
    }
    ImportedModel result;
    {
        // Building initialises weights from the default generator: leave its state as it was.
        const std::string generator = default_generator().get_state();
        auto model = graph::build(spec_);
        default_generator().set_state(generator);
        result.weights = collect_weights(*model);
    }
    const std::string stem = std::filesystem::path(source_).stem().string();
    result.project.name = stem.empty() ? "imported model" : stem;
    std::string producer = model_.producer_name();
    if (!model_.producer_version().empty()) producer += " " + model_.producer_version();
    result.project.description =
        "Imported from " + std::filesystem::path(source_).filename().string() + " (ONNX opset " +
        std::to_string(opset) + (producer.empty() ? std::string() : ", written by " + producer) +
        ").";
    result.project.model = std::move(spec_);
    // As the project file will load: the data and training choices with their defaults filled.
    result.project = io::parse_project(io::serialize_project(result.project), source_);
    result.notes = std::move(notes_);
    return result;
}

} // namespace

ImportedModel import_onnx(std::string_view bytes, const std::string& source_name) {
    if (bytes.empty()) throw Error(source_name + ": the file is empty, not an ONNX model");
    onnx::ModelProto model;
    if (bytes.size() > size_t(std::numeric_limits<int>::max()) ||
        !model.ParseFromArray(bytes.data(), int(bytes.size())))
        throw Error(source_name + ": not an ONNX model (its bytes do not parse as an ONNX "
                                  "ModelProto: damaged, truncated or another format)");
    if (!model.has_graph() || model.graph().node_size() == 0)
        throw Error(source_name + ": not an ONNX model (it holds no graph nodes)");
    try {
        onnx::checker::check_model(model);
    } catch (const std::exception& e) {
        throw Error(source_name + ": not a valid ONNX model: " + std::string(e.what()));
    }
    return Importer(model, source_name).run();
}

ImportedModel import_onnx_file(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw Error(file.string() + ": cannot open: " + std::strerror(errno));
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (in.bad()) throw Error(file.string() + ": cannot read: " + std::strerror(errno));
    return import_onnx(bytes.str(), file.string());
}

std::filesystem::path default_import_checkpoint(const std::filesystem::path& project) {
    std::filesystem::path p = project;
    return p.replace_extension(".safetensors");
}

void write_imported_model(const ImportedModel& model, const std::filesystem::path& project,
                          const std::filesystem::path& checkpoint) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::weakly_canonical(project, ec) == fs::weakly_canonical(checkpoint, ec))
        throw Error(project.string() + ": the project and the checkpoint would be the same file");
    // The project starts its runs from the imported weights (training.init_weights, relative to
    // its folder when the checkpoint is in it or below).
    io::Project written = model.project;
    const fs::path project_dir = fs::absolute(project, ec).parent_path();
    const fs::path relative = fs::absolute(checkpoint, ec).lexically_relative(project_dir);
    written.train.init_weights = !relative.empty() && *relative.begin() != ".."
                                     ? relative.string()
                                     : fs::absolute(checkpoint, ec).string();
    io::Checkpoint c;
    c.model = model.weights;
    c.project_json = io::serialize_project(written);
    c.description.project_dir = fs::absolute(project, ec).parent_path().string();
    for (const graph::Node& n : model.project.model.nodes)
        if (n.kind == "Input") c.description.input_shape = n.attrs.get_ints("shape");
    // The checkpoint goes to a temporary name first, renamed once the project is written.
    std::random_device random;
    const fs::path temp = checkpoint.parent_path() / ("." + checkpoint.filename().string() +
                                                      ".import-" + std::to_string(random()));
    try {
        io::save_checkpoint(temp, c);
    } catch (const Error& e) {
        fs::remove(temp, ec);
        throw Error(checkpoint.string() + ": cannot write the checkpoint: " + e.what());
    }
    const bool project_existed = fs::exists(project, ec);
    try {
        io::save_project(written, project);
    } catch (const std::exception& e) {
        fs::remove(temp, ec);
        throw Error(project.string() + ": cannot write the project: " + e.what());
    }
    fs::rename(temp, checkpoint, ec);
    if (ec) {
        std::error_code ignored;
        fs::remove(temp, ignored);
        if (!project_existed) fs::remove(project, ignored);
        throw Error(checkpoint.string() + ": cannot write the checkpoint: " + ec.message());
    }
}

} // namespace myelin::exporters
