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

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

namespace myelin::exporters {

namespace detail {

std::string OnnxBuilder::unique(const std::string& base) {
    std::string name = base.empty() ? "value" : base;
    for (int i = 1; used_.count(name); ++i)
        name = base + "_" + std::to_string(i);
    used_.insert(name);
    return name;
}

std::string OnnxBuilder::raw_initializer(const std::string& name, int data_type, const Dims& dims,
                                         const void* bytes, size_t size) {
    onnx::TensorProto* init = graph_.add_initializer();
    init->set_name(unique(name));
    init->set_data_type(data_type);
    for (int64_t d : dims)
        init->add_dims(d);
    init->set_raw_data(bytes, size);
    return init->name();
}

std::string OnnxBuilder::int8_weight(const std::string& name, const Tensor& t,
                                     const std::vector<float>& scales) {
    const Tensor w = t.contiguous().to(DType::Float32).contiguous();
    const bool transposed = name.ends_with("_transposed");
    const int64_t channels = int64_t(scales.size());
    const int64_t axis = transposed ? w.dim() - 1 : 0;
    if (channels != 1 && (w.dim() < 1 || w.size(axis) != channels))
        throw Error("int8 weight '" + name + "': " + std::to_string(channels) +
                    " scales for a weight of shape " + w.sizes().str());
    // Channel of element i: along dimension 0, or the last one of a transposed [in, out] weight.
    const int64_t inner = channels == 1 || transposed ? 1 : w.numel() / channels;
    std::string values(size_t(w.numel()), '\0');
    const float* data = w.data<float>();
    for (int64_t i = 0; i < w.numel(); ++i) {
        const int64_t c = channels == 1 ? 0 : transposed ? i % channels : i / inner;
        const float q = std::nearbyint(data[i] / scales[size_t(c)]);
        values[size_t(i)] = char(int8_t(std::clamp(q, -128.0f, 127.0f)));
    }
    const std::string q = raw_initializer(name + "_int8", onnx::TensorProto::INT8, w.sizes(),
                                          values.data(), values.size());
    const Dims scale_dims = channels == 1 ? Dims{} : Dims{channels};
    const std::string s = raw_initializer(name + "_scale", onnx::TensorProto::FLOAT, scale_dims,
                                          scales.data(), scales.size() * sizeof(float));
    const std::string zeros(scales.size(), '\0');
    const std::string z = raw_initializer(name + "_zero_point", onnx::TensorProto::INT8, scale_dims,
                                          zeros.data(), zeros.size());
    std::vector<OnnxAttr> attrs;
    if (channels != 1) attrs.push_back(attr_int("axis", axis));
    return op("DequantizeLinear", {q, s, z}, name, attrs);
}

std::string OnnxBuilder::fake_quantize(const std::string& x, float scale, int32_t zero_point,
                                       const std::string& hint) {
    const std::string s =
        raw_initializer(hint + "_scale", onnx::TensorProto::FLOAT, Dims{}, &scale, sizeof scale);
    const uint8_t zp = uint8_t(zero_point);
    const std::string z =
        raw_initializer(hint + "_zero_point", onnx::TensorProto::UINT8, Dims{}, &zp, 1);
    const std::string q = op("QuantizeLinear", {x, s, z}, hint + "_quantized");
    return op("DequantizeLinear", {q, s, z}, hint + "_dequantized");
}

std::string OnnxBuilder::dynamic_fake_quantize(const std::string& x, const std::string& hint) {
    const std::vector<std::string> q = ops(
        "DynamicQuantizeLinear", {x}, {hint + "_quantized", hint + "_scale", hint + "_zero_point"});
    return op("DequantizeLinear", q, hint + "_dequantized");
}

std::string OnnxBuilder::initializer(const std::string& name, const Tensor& t) {
    if (const auto it = int8_weights.find(name); it != int8_weights.end())
        return int8_weight(name, t, it->second);
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

std::vector<std::string> OnnxBuilder::ops(const std::string& op_type,
                                          const std::vector<std::string>& inputs,
                                          const std::vector<std::string>& output_hints,
                                          const std::vector<OnnxAttr>& attrs) {
    onnx::NodeProto* node = graph_.add_node();
    node->set_op_type(op_type);
    node->set_name(op_type + "_" + std::to_string(nodes_++));
    for (const auto& in : inputs)
        node->add_input(in);
    std::vector<std::string> outputs;
    for (const auto& hint : output_hints) {
        outputs.push_back(unique(hint));
        node->add_output(outputs.back());
    }
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
        case OnnxAttr::Type::Strings:
            p->set_type(onnx::AttributeProto::STRINGS);
            for (const std::string& v : a.strings)
                p->add_strings(v);
            break;
        }
    }
    return outputs;
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
    return layer_forms_missing(kind);
}

std::vector<std::string> onnx_runtime_notes(const ExportSource& source) {
    const graph::ModelSpec& spec = source.project.model;
    const graph::Analysis analysis = graph::analyze(spec, 1);
    std::vector<std::string> notes;
    for (size_t index : analysis.order) {
        const graph::Node& node = spec.nodes[index];
        const LayerForms* forms = find_layer_forms(node.kind);
        if (!forms || !forms->opencv_note || !analysis.nodes[index].reachable) continue;
        const std::string note = forms->opencv_note(
            graph::with_defaults(graph::layer_kind(node.kind).attrs, node.attrs));
        if (!note.empty())
            notes.push_back("layer '" + analysis.nodes[index].module_name + "' (" + node.kind +
                            "): " + note);
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
    // An int8 model: its layers' weights as int8 initializers, their inputs and outputs through
    // QuantizeLinear / DequantizeLinear with the calibrated parameters (QDQ, which onnxruntime
    // runs with its int8 kernels).
    std::map<std::string, const quant::QuantizedLayer*> int8_layers;
    if (source.quantization)
        for (const quant::QuantizedLayer& layer : source.quantization->layers) {
            // ONNX has no dynamic int8 recurrent op outside com.microsoft: a recurrent layer is
            // written with its weights' float values (int8 value x scale).
            if (layer.kind != "Linear" && layer.kind != "Conv2d") continue;
            int8_layers[layer.module] = &layer;
            b.int8_weights[layer.module + ".weight"] = layer.weight_scales;
            b.int8_weights[layer.module + ".weight_transposed"] = layer.weight_scales;
        }

    std::map<graph::NodeId, size_t> index_of;
    for (size_t i = 0; i < spec.nodes.size(); ++i)
        index_of[spec.nodes[i].id] = i;
    // The ONNX value of each (node, output port) an edge takes.
    std::map<std::pair<graph::NodeId, int>, std::string> value_of;
    auto type_of = [&](const graph::Edge& e) {
        return *analysis.nodes[index_of.at(e.from)].output_type(e.from_port);
    };
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
            value_of[{node.id, 0}] = name;
            continue;
        }
        const auto inputs = spec.inputs_of(node.id);
        if (node.kind == "Output") {
            const graph::Edge& e = inputs.at(0);
            output_type = type_of(e);
            output_name = b.op("Identity", {value_of.at({e.from, e.from_port})}, "output");
            set_type(graph->add_output(), output_type, options.batch_dim);
            graph->mutable_output(graph->output_size() - 1)->set_name(output_name);
            continue;
        }
        const graph::LayerKind& kind = graph::layer_kind(node.kind);
        OnnxLayer layer{node,
                        kind,
                        graph::with_defaults(kind.attrs, node.attrs),
                        info.module_name,
                        {},
                        {},
                        {},
                        info.outputs.empty() ? std::vector<graph::TensorType>{*info.output}
                                             : info.outputs,
                        {}};
        layer.used.assign(layer.outputs.size(), false);
        for (const graph::Edge& e : spec.edges)
            if (e.from == node.id && size_t(e.from_port) < layer.used.size())
                layer.used[size_t(e.from_port)] = true;
        for (const auto& [name, tensor] : module->child(info.module_name)->state_dict())
            layer.weights[name] = tensor;
        for (const auto& e : inputs) {
            layer.inputs.push_back(value_of.at({e.from, e.from_port}));
            layer.input_types.push_back(type_of(e));
        }
        const auto int8 = int8_layers.find(info.module_name);
        const bool is_static =
            source.quantization && source.quantization->scheme == quant::Scheme::Static;
        if (int8 != int8_layers.end())
            layer.inputs[0] =
                is_static
                    ? b.fake_quantize(layer.inputs[0], int8->second->input.scale,
                                      int8->second->input.zero_point, info.module_name + "_input")
                    : b.dynamic_fake_quantize(layer.inputs[0], info.module_name + "_input");
        std::vector<std::string> ports = find_layer_forms(node.kind)->onnx(b, layer);
        // The output's parameters were observed after a fused ReLU: quantizing the value before
        // it with them clamps negatives to the zero point, which is that ReLU.
        if (int8 != int8_layers.end() && is_static)
            ports[0] =
                b.fake_quantize(ports[0], int8->second->output.scale,
                                int8->second->output.zero_point, info.module_name + "_output");
        for (size_t port = 0; port < ports.size(); ++port)
            if (layer.wants(port)) {
                if (ports[port].empty())
                    throw Error(layer.what() + ": its ONNX form gives no value for output port " +
                                std::to_string(port) + ", which an edge takes");
                value_of[{node.id, int(port)}] = ports[port];
            }
    }
    if (output_name.empty()) throw Error("the model has no Output node");

    add_metadata(model, "myelin.project", source.project.name);
    if (source.description.run_id > 0)
        add_metadata(model, "myelin.run_id", std::to_string(source.description.run_id));
    add_metadata(model, "myelin.step", std::to_string(source.position.step));
    if (source.quantization)
        add_metadata(model, "myelin.quantization", source.quantization->to_json());
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
