// The ONNX writer: the model's graph in topological order as opset 17 nodes (onnx_layers.cpp), a
// symbolic batch dimension on inputs and output, weights as raw_data initializers; then ONNX's own
// checker and strict shape inference, whose output shape must equal Myelin's, before any byte is
// written.
#include "onnx_builder.h"

#include <myelin/error.h>
#include <myelin/export/export.h>

#include "analysis_check.h"
#include <myelin/generator.h>
#include <myelin/graph/analysis.h>
#include <myelin/graph/build.h>
#include <myelin/version.h>

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <cstring>
#include <map>

namespace myelin::exporters {

namespace detail {

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

std::string OnnxBuilder::unique(const std::string& base) {
    std::string name = base.empty() ? "value" : base;
    for (int i = 1; used_.count(name); ++i)
        name = base + "_" + std::to_string(i);
    used_.insert(name);
    return name;
}

std::string OnnxBuilder::initializer(const std::string& name, const Tensor& t) {
    const bool integer = t.dtype() == DType::Int64;
    const Tensor values = t.contiguous().to(integer ? DType::Int64 : DType::Float32).contiguous();
    onnx::TensorProto* init = graph_.add_initializer();
    init->set_name(unique(name));
    init->set_data_type(integer ? onnx::TensorProto::INT64 : onnx::TensorProto::FLOAT);
    for (int64_t d : values.sizes())
        init->add_dims(d);
    // Raw little-endian bytes (the only byte order Myelin runs on).
    init->set_raw_data(values.data<char>(), size_t(values.numel()) * (integer ? 8 : 4));
    return init->name();
}

std::string OnnxBuilder::ints(const std::string& name, const std::vector<int64_t>& values) {
    return initializer(name, from_vector(values, Dims{int64_t(values.size())}));
}

std::string OnnxBuilder::floats(const std::string& name, const std::vector<float>& values,
                                const std::vector<int64_t>& shape) {
    int64_t count = 1;
    for (int64_t d : shape)
        count *= d;
    std::vector<float> filled =
        values.size() == 1 ? std::vector<float>(size_t(count), values[0]) : values;
    return initializer(name, from_vector(filled, Dims(shape)));
}

std::string OnnxBuilder::op(const std::string& op_type, const std::vector<std::string>& inputs,
                            const std::string& output_hint, const std::vector<OnnxAttr>& attrs) {
    onnx::NodeProto* node = graph_.add_node();
    node->set_op_type(op_type);
    node->set_name(op_type + "_" + std::to_string(nodes_++));
    for (const auto& in : inputs)
        node->add_input(in);
    const std::string out = unique(output_hint);
    node->add_output(out);
    for (const OnnxAttr& a : attrs) {
        onnx::AttributeProto* p = node->add_attribute();
        p->set_name(a.name);
        switch (a.type) {
        case OnnxAttr::Type::Int:
            p->set_type(onnx::AttributeProto::INT);
            p->set_i(a.i);
            break;
        case OnnxAttr::Type::Float:
            p->set_type(onnx::AttributeProto::FLOAT);
            p->set_f(a.f);
            break;
        case OnnxAttr::Type::String:
            p->set_type(onnx::AttributeProto::STRING);
            p->set_s(a.s);
            break;
        case OnnxAttr::Type::Ints:
            p->set_type(onnx::AttributeProto::INTS);
            for (int64_t v : a.ints)
                p->add_ints(v);
            break;
        }
    }
    return out;
}

std::string LayerContext::what() const {
    return "layer '" + module_name + "' (" + kind.name + ")";
}

const Tensor& LayerContext::weight(const std::string& name) const {
    auto it = weights.find(name);
    if (it == weights.end()) throw Error(what() + " has no tensor '" + name + "'");
    return it->second;
}

} // namespace detail

namespace {

using namespace detail;

void set_type(onnx::ValueInfoProto* value, const graph::TensorType& type,
              const std::string& batch_dim) {
    auto* tensor = value->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(type.dtype == DType::Int64 ? onnx::TensorProto::INT64
                                                     : onnx::TensorProto::FLOAT);
    auto* shape = tensor->mutable_shape();
    for (int d = 0; d < type.shape.size(); ++d) {
        auto* dim = shape->add_dim();
        if (d == 0)
            dim->set_dim_param(batch_dim);
        else
            dim->set_dim_value(type.shape[d]);
    }
}

// JSON text of a list of strings (metadata for runtimes that show it).
std::string json_strings(const std::vector<std::string>& items) {
    std::string out = "[";
    for (size_t i = 0; i < items.size(); ++i) {
        out += i ? ", \"" : "\"";
        for (char c : items[i]) {
            if (c == '"' || c == '\\') out += '\\';
            if (static_cast<unsigned char>(c) >= 0x20) out += c;
        }
        out += '"';
    }
    return out + "]";
}

void add_metadata(onnx::ModelProto& model, const std::string& key, const std::string& value) {
    auto* p = model.add_metadata_props();
    p->set_key(key);
    p->set_value(value);
}

} // namespace

std::string onnx_unsupported_kind(std::string_view kind) {
    if (has_lowering(kind) || kind == "Input" || kind == "Output") return {};
    return "no ONNX form is known for layer kind '" + std::string(kind) + "'";
}

std::vector<std::string> onnx_runtime_notes(const ExportSource& source) {
    // Found by running every kind through OpenCV 4.6 (tests/export/test_export_onnx.cpp).
    static const std::map<std::string, std::string, std::less<>> opencv_4_6 = {
        {"LayerNorm", "OpenCV 4.6's DNN module has no LayerNormalization"},
        {"Embedding", "OpenCV 4.6's DNN module cannot Gather with indices from a model input"},
        {"Bilinear", "OpenCV 4.6's DNN module runs its MatMul form with a batch of 1 only"},
        {"BatchNorm", "without running statistics it normalises with the batch's statistics, "
                      "which OpenCV 4.6's DNN module computes per example (right for a batch "
                      "of 1 only)"},
    };
    const graph::ModelSpec& spec = source.project.model;
    const graph::Analysis analysis = graph::analyze(spec, 1);
    std::vector<std::string> notes;
    for (size_t index : analysis.order) {
        const graph::Node& node = spec.nodes[index];
        const bool batch_statistics =
            (node.kind == "BatchNorm1d" || node.kind == "BatchNorm2d") &&
            !graph::with_defaults(graph::layer_kind(node.kind).attrs, node.attrs)
                 .get_bool("track_running_stats");
        auto it = opencv_4_6.find(batch_statistics ? "BatchNorm" : node.kind);
        if (it != opencv_4_6.end() && analysis.nodes[index].reachable)
            notes.push_back("layer '" + analysis.nodes[index].module_name + "' (" + node.kind +
                            "): " + it->second);
    }
    return notes;
}

std::string onnx_model_bytes(const ExportSource& source, const OnnxOptions& options) {
    const graph::ModelSpec& spec = source.project.model;
    const graph::Analysis analysis = valid_analysis(source);
    // Every kind first, so the message names each layer that has no ONNX form at once.
    std::string unexportable;
    for (size_t index : analysis.order) {
        const graph::Node& node = spec.nodes[index];
        if (!analysis.nodes[index].reachable) continue;
        if (auto why = onnx_unsupported_kind(node.kind); !why.empty())
            unexportable +=
                "\n  layer '" + analysis.nodes[index].module_name + "' (" + node.kind + "): " + why;
    }
    if (!unexportable.empty()) throw Error("the model cannot be exported to ONNX:" + unexportable);

    std::shared_ptr<graph::GraphModule> module;
    {
        const std::string generator = default_generator().get_state();
        module = graph::build(spec);
        default_generator().set_state(generator);
    }
    const auto loaded = module->load_state_dict(source.weights, false);
    if (!loaded.ok()) check_export_source(source); // throws with the list

    onnx::ModelProto model;
    model.set_ir_version(onnx::IR_VERSION);
    model.set_producer_name("Myelin Studio");
    model.set_producer_version(version());
    model.set_doc_string(source.project.description);
    auto* opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(options.opset);
    onnx::GraphProto* graph = model.mutable_graph();
    graph->set_name(source.project.name.empty() ? "model" : source.project.name);
    OnnxBuilder b(*graph);

    std::map<graph::NodeId, size_t> index_of;
    for (size_t i = 0; i < spec.nodes.size(); ++i)
        index_of[spec.nodes[i].id] = i;
    std::map<graph::NodeId, std::string> value_of;
    int input_count = 0;
    for (const graph::Node& n : spec.nodes)
        input_count += n.kind == "Input";
    std::string output_name;
    graph::TensorType output_type;
    for (size_t index : analysis.order) {
        const graph::Node& node = spec.nodes[index];
        const graph::NodeInfo& info = analysis.nodes[index];
        if (!info.reachable) continue;
        if (node.kind == "Input") {
            const std::string name =
                b.unique(!node.name.empty()
                             ? node.name
                             : (input_count == 1 ? "input" : "input_" + std::to_string(node.id)));
            set_type(graph->add_input(), *info.output, options.batch_dim);
            graph->mutable_input(graph->input_size() - 1)->set_name(name);
            value_of[node.id] = name;
            continue;
        }
        const auto inputs = spec.inputs_of(node.id);
        if (node.kind == "Output") {
            output_type = *analysis.nodes[index_of.at(inputs.at(0).from)].output;
            output_name = b.op("Identity", {value_of.at(inputs.at(0).from)}, "output");
            set_type(graph->add_output(), output_type, options.batch_dim);
            graph->mutable_output(graph->output_size() - 1)->set_name(output_name);
            continue;
        }
        const graph::LayerKind& kind = graph::layer_kind(node.kind);
        LayerContext layer{node,
                           kind,
                           graph::with_defaults(kind.attrs, node.attrs),
                           info.module_name,
                           {},
                           {},
                           {},
                           *info.output};
        for (const auto& [name, tensor] : module->child(info.module_name)->state_dict())
            layer.weights[name] = tensor;
        for (const auto& e : inputs) {
            layer.inputs.push_back(value_of.at(e.from));
            layer.input_types.push_back(*analysis.nodes[index_of.at(e.from)].output);
        }
        value_of[node.id] = lower_layer(b, layer);
    }
    if (output_name.empty()) throw Error("the model has no Output node");

    add_metadata(model, "myelin.project", source.project.name);
    if (source.description.run_id > 0)
        add_metadata(model, "myelin.run_id", std::to_string(source.description.run_id));
    add_metadata(model, "myelin.step", std::to_string(source.position.step));
    if (!source.description.class_names.empty())
        add_metadata(model, "myelin.class_names", json_strings(source.description.class_names));

    try {
        onnx::checker::check_model(model);
        onnx::ShapeInferenceOptions strict(true, 1, false);
        onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), strict);
    } catch (const std::exception& e) {
        throw Error("the ONNX model failed ONNX's checks (nothing was written): " +
                    std::string(e.what()));
    }
    // The inferred shape of the output's producer must be Myelin's.
    for (const auto& value : model.graph().value_info()) {
        if (value.name() != model.graph().node(model.graph().node_size() - 1).input(0)) continue;
        const auto& shape = value.type().tensor_type().shape();
        bool same = shape.dim_size() == output_type.shape.size();
        for (int d = 1; same && d < shape.dim_size(); ++d)
            same = shape.dim(d).has_dim_value() && shape.dim(d).dim_value() == output_type.shape[d];
        if (!same)
            throw Error("ONNX's shape inference disagrees with Myelin on the output shape " +
                        graph::to_string(output_type) + " (nothing was written)");
    }
    return model.SerializeAsString();
}

void export_onnx(const ExportSource& source, const std::filesystem::path& out,
                 const OnnxOptions& options) {
    write_file_atomically(out, onnx_model_bytes(source, options));
}

} // namespace myelin::exporters
