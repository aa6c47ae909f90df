// The table of export forms: the built-in kinds' records (forms_*.cpp), then each loaded
// plugin's, found through its second entry point the first time a kind is looked up after the
// plugin was loaded. Also what the forms share: attribute values, the Python text helpers and
// PyCall.
#include "forms_parts.h"

#include <myelin/error.h>
#include <myelin/plugin/loader.h>

#include <dlfcn.h>

#include <cstdio>
#include <mutex>
#include <set>

namespace myelin::exporters {

OnnxAttr attr_int(std::string name, int64_t value) {
    OnnxAttr a;
    a.name = std::move(name);
    a.type = OnnxAttr::Type::Int;
    a.i = value;
    return a;
}
OnnxAttr attr_float(std::string name, double value) {
    OnnxAttr a;
    a.name = std::move(name);
    a.type = OnnxAttr::Type::Float;
    a.f = float(value);
    return a;
}
OnnxAttr attr_string(std::string name, std::string value) {
    OnnxAttr a;
    a.name = std::move(name);
    a.type = OnnxAttr::Type::String;
    a.s = std::move(value);
    return a;
}
OnnxAttr attr_ints(std::string name, std::vector<int64_t> value) {
    OnnxAttr a;
    a.name = std::move(name);
    a.type = OnnxAttr::Type::Ints;
    a.ints = std::move(value);
    return a;
}
OnnxAttr attr_strings(std::string name, std::vector<std::string> value) {
    OnnxAttr a;
    a.name = std::move(name);
    a.type = OnnxAttr::Type::Strings;
    a.strings = std::move(value);
    return a;
}

std::string OnnxGraph::ints(const std::string& name, const std::vector<int64_t>& values) {
    return initializer(name, from_vector(values, Dims{int64_t(values.size())}));
}

std::string OnnxGraph::floats(const std::string& name, const std::vector<float>& values,
                              const std::vector<int64_t>& shape) {
    int64_t count = 1;
    for (int64_t d : shape)
        count *= d;
    std::vector<float> filled =
        values.size() == 1 ? std::vector<float>(size_t(count), values[0]) : values;
    return initializer(name, from_vector(filled, Dims(shape)));
}

std::string OnnxGraph::op(const std::string& op_type, const std::vector<std::string>& inputs,
                          const std::string& output_hint, const std::vector<OnnxAttr>& attrs) {
    return ops(op_type, inputs, {output_hint}, attrs).at(0);
}

std::string OnnxLayer::what() const {
    return "layer '" + module_name + "' (" + kind.name + ")";
}

const Tensor& OnnxLayer::weight(const std::string& name) const {
    auto it = weights.find(name);
    if (it == weights.end()) throw Error(what() + " has no tensor '" + name + "'");
    return it->second;
}

void OnnxLayer::refuse(const std::string& why) const {
    throw Error(what() + " cannot be exported to ONNX: " + why);
}

std::string PyLayer::what() const {
    return "layer '" + module_name + "' (" + kind.name + ")";
}

// --- Python text
// ----------------------------------------------------------------------------------

std::string py_bool(bool v) {
    return v ? "True" : "False";
}
std::string py_float(double v) {
    char text[40];
    std::snprintf(text, sizeof text, "%.9g", v);
    std::string s = text;
    if (s.find_first_of(".eni") == std::string::npos) s += ".0";
    return s;
}
std::string py_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out + "\"";
}
std::string py_tuple(const std::vector<int64_t>& v) {
    std::string out = "(";
    for (size_t i = 0; i < v.size(); ++i)
        out += (i ? ", " : "") + std::to_string(v[i]);
    return out + (v.size() == 1 ? ",)" : ")");
}
std::string py_int(const graph::Attrs& a, std::string_view name) {
    return std::to_string(a.get_int(name));
}
std::string py_int_or_pair(const graph::Attrs& a, std::string_view name) {
    const auto& v = a.get_ints(name);
    if (v.size() == 1) return std::to_string(v[0]);
    return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ")";
}

PyCall::PyCall(std::string callee, const PyLayer& layer)
    : text_(std::move(callee) + "("), layer_(layer) {}

PyCall& PyCall::pos(const std::string& value) {
    text_ += (first_ ? "" : ", ") + value;
    first_ = false;
    return *this;
}
PyCall& PyCall::kw(const std::string& name, const std::string& value, std::string attr) {
    if (attr.empty()) attr = name;
    if (layer_.defaults.contains(attr) && layer_.attrs.at(attr) == layer_.defaults.at(attr))
        return *this;
    return always(name, value);
}
PyCall& PyCall::always(const std::string& name, const std::string& value) {
    return pos(name + "=" + value);
}
PyCall& PyCall::flag(const std::string& name) {
    return kw(name, py_bool(layer_.attrs.get_bool(name)));
}
PyCall& PyCall::real(const std::string& name) {
    return kw(name, py_float(layer_.attrs.get_float(name)));
}

// --- the table ----------------------------------------------------------------------------------

void FormsRegistry::add(const std::string& kind, LayerForms forms) {
    records.emplace_back(kind, std::move(forms));
}

namespace {

void check_record(const std::string& kind, const LayerForms& forms) {
    if (kind.empty()) throw Error("export forms without a kind name");
    const bool some = forms.onnx || forms.pytorch_module || forms.pytorch_forward;
    if (!some && forms.refusal.empty())
        throw Error("the export forms of layer kind '" + kind +
                    "' have neither an ONNX nor a PyTorch form, nor a refusal saying why");
    if (some && (!forms.onnx || (!forms.pytorch_module && !forms.pytorch_forward)))
        throw Error("the export forms of layer kind '" + kind +
                    "' need both an ONNX lowering and a PyTorch form (or a refusal alone)");
}

struct Table {
    std::mutex mutex;
    detail::FormsTable forms;
    std::set<std::string> plugin_files_seen;
    std::map<std::string, std::string> plugin_problems; // kind -> why its plugin's forms failed
};

Table& table() {
    static Table* t = [] {
        auto* made = new Table; // never destroyed: plugins' std::function targets live in them
        detail::add_linear_conv_forms(made->forms);
        detail::add_norm_activation_forms(made->forms);
        detail::add_structure_forms(made->forms);
        detail::add_sequence_forms(made->forms);
        detail::add_attention_forms(made->forms);
        return made;
    }();
    return *t;
}

// Each plugin loaded since the last look: its second entry point's records, all or none.
void take_plugin_forms(Table& t) {
    using Version = int (*)();
    using Fill = void (*)(FormsRegistry&);
    for (const plugin::PluginInfo& info : plugin::plugin_report().loaded) {
        if (!t.plugin_files_seen.insert(info.path).second) continue;
        // The plugin is loaded already: RTLD_NOLOAD finds it without loading anything.
        void* handle = dlopen(info.path.c_str(), RTLD_NOW | RTLD_NOLOAD);
        if (!handle) continue;
        auto version =
            reinterpret_cast<Version>(dlsym(handle, "myelin_plugin_export_forms_version"));
        auto fill = reinterpret_cast<Fill>(dlsym(handle, "myelin_plugin_export_forms"));
        if (!version || !fill) continue; // no export forms: its kinds say so when exported
        auto blame = [&](const std::string& why) {
            for (const std::string& k : info.kinds)
                if (k.rfind("layer ", 0) == 0) t.plugin_problems[k.substr(6)] = why;
        };
        if (version() != MYELIN_PLUGIN_EXPORT_FORMS_VERSION) {
            blame("its plugin " + info.path + " gives export forms of version " +
                  std::to_string(version()) + ", this build reads version " +
                  std::to_string(MYELIN_PLUGIN_EXPORT_FORMS_VERSION));
            continue;
        }
        FormsRegistry registry;
        try {
            fill(registry);
            for (const auto& [kind, forms] : registry.records) {
                check_record(kind, forms);
                if (t.forms.count(kind))
                    throw Error("layer kind '" + kind + "' already has export forms");
            }
        } catch (const std::exception& e) {
            blame("the export forms of its plugin " + info.path + " were refused: " + e.what());
            continue;
        }
        for (auto& [kind, forms] : registry.records)
            t.forms.emplace(kind, std::move(forms));
    }
}

} // namespace

void register_layer_forms(const std::string& kind, LayerForms forms) {
    check_record(kind, forms);
    Table& t = table();
    std::lock_guard lock(t.mutex);
    if (!t.forms.emplace(kind, std::move(forms)).second)
        throw Error("layer kind '" + kind + "' already has export forms");
}

const LayerForms* find_layer_forms(std::string_view kind) {
    Table& t = table();
    std::lock_guard lock(t.mutex);
    take_plugin_forms(t);
    auto it = t.forms.find(kind);
    // Records are never removed, and std::map's nodes do not move: the pointer stays valid.
    return it == t.forms.end() ? nullptr : &it->second;
}

std::string layer_forms_missing(std::string_view kind) {
    if (kind == "Input" || kind == "Output") return {};
    const LayerForms* forms = find_layer_forms(kind);
    if (forms) return forms->refusal;
    {
        Table& t = table();
        std::lock_guard lock(t.mutex);
        if (auto it = t.plugin_problems.find(std::string(kind)); it != t.plugin_problems.end())
            return "no export form is known for layer kind '" + std::string(kind) +
                   "': " + it->second;
    }
    const graph::LayerKind* known = graph::find_layer_kind(kind);
    const std::string origin =
        known && !known->origin.empty()
            ? " (from " + known->origin +
                  ", which has no export forms: see MYELIN_PLUGIN_EXPORT_FORMS "
                  "in myelin/export/layer_forms.h)"
            : "";
    return "no export form is known for layer kind '" + std::string(kind) + "'" + origin;
}

namespace detail {

std::vector<int64_t> pair(const graph::Attrs& a, std::string_view name) {
    const auto& v = a.get_ints(name);
    return v.size() == 1 ? std::vector<int64_t>{v[0], v[0]} : std::vector<int64_t>{v[0], v[1]};
}

std::string state_name(const OnnxLayer& l, const std::string& what) {
    return l.module_name + "." + what;
}

std::vector<int64_t> reshape_target(const graph::TensorType& out) {
    std::vector<int64_t> shape(out.shape.begin(), out.shape.end());
    shape[0] = 0;
    return shape;
}

OnnxLowering single(std::function<std::string(OnnxGraph&, const OnnxLayer&)> lower) {
    return [lower = std::move(lower)](OnnxGraph& g, const OnnxLayer& l) {
        return std::vector<std::string>{lower(g, l)};
    };
}

OnnxLowering simple_op(const char* op,
                       std::function<std::vector<OnnxAttr>(const OnnxLayer&)> attrs) {
    return [op, attrs = std::move(attrs)](OnnxGraph& g, const OnnxLayer& l) {
        return std::vector<std::string>{
            g.op(op, l.inputs, l.module_name, attrs ? attrs(l) : std::vector<OnnxAttr>{})};
    };
}

std::string linear_value(OnnxGraph& g, const std::string& x, int64_t rank, const Tensor& w,
                         const Tensor& bias, const std::string& weight_name,
                         const std::string& bias_name, const std::string& output) {
    if (rank == 2) {
        std::vector<std::string> in{x, g.initializer(weight_name, w)};
        if (bias.defined()) in.push_back(g.initializer(bias_name, bias));
        return g.op("Gemm", in, output, {attr_int("transB", 1)});
    }
    const std::string wt = g.initializer(weight_name + "_transposed", w.t().contiguous());
    std::string y = g.op("MatMul", {x, wt}, output + (bias.defined() ? "_matmul" : ""));
    if (!bias.defined()) return y;
    return g.op("Add", {y, g.initializer(bias_name, bias)}, output);
}

std::string scalar_int(OnnxGraph& g, const std::string& name, int64_t value) {
    return g.initializer(name, from_vector(std::vector<int64_t>{value}, Dims{}));
}

std::string valid_steps(OnnxGraph& g, const OnnxLayer& l, const std::string& lengths,
                        int64_t steps) {
    std::vector<int64_t> positions(static_cast<size_t>(steps));
    for (int64_t t = 0; t < steps; ++t)
        positions[size_t(t)] = t;
    const std::string row =
        g.initializer(l.name("positions"), from_vector(positions, Dims{1, steps}));
    const std::string column =
        g.op("Unsqueeze", {lengths, g.ints(l.name("lengths_axis"), {1})}, l.name("lengths_column"));
    return g.op("Less", {row, column}, l.name("valid"));
}

PyModuleForm py_plain(std::string callee) {
    return [callee = std::move(callee)](const PyLayer& l) {
        return (callee.empty() ? "nn." + l.kind.name : callee) + "()";
    };
}

} // namespace detail

} // namespace myelin::exporters
