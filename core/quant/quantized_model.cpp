#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/graph/registry.h>
#include <myelin/nn/layers.h>
#include <myelin/nn/recurrent.h>
#include <myelin/quant/quantized_model.h>

#include "quant/int8_storage.h"
#include "quant/quantized_recurrent.h"

#include <myelin/autograd.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <set>

namespace myelin::quant {

namespace {

using json = nlohmann::json;

// The child module of `model` that runs layer `module` (nullptr when there is none).
nn::Module* child_of(const graph::GraphModule& model, const std::string& module) {
    for (const auto& [name, child] : model.named_children())
        if (name == module) return child.get();
    return nullptr;
}

std::string reason_for(const std::string& kind, Scheme scheme) {
    if (detail::is_recurrent_kind(kind))
        return "static quantization has no int8 recurrent layer (dynamic quantization has: "
               "--dynamic)";
    if (kind == "Conv2d" && scheme == Scheme::Dynamic)
        return "dynamic quantization covers Linear layers (quantize_dynamic's default set)";
    if (kind == "BatchNorm1d" || kind == "BatchNorm2d" || kind == "LayerNorm")
        return "normalization runs in float32 (it is not folded into the layer before it)";
    if (kind == "Embedding") return "a table lookup: it stays float32";
    return "no int8 kernel for " + kind + ": it runs in float32";
}

} // namespace

std::string_view scheme_name(Scheme scheme) {
    return scheme == Scheme::Static ? "static" : "dynamic";
}

// --- the plan ----------------------------------------------------------------------------------

std::string QuantizationPlan::to_json() const {
    json j;
    j["scheme"] = std::string(scheme_name(scheme));
    if (scheme == Scheme::Static) {
        j["observer"] = std::string(observer_kind_name(observer));
        j["calibration_batches"] = calibration_batches;
        if (qat_epochs > 0) j["qat_epochs"] = qat_epochs;
    }
    json layers_json = json::array();
    for (const QuantizedLayer& l : layers) {
        json o{{"module", l.module}, {"kind", l.kind}};
        if (detail::is_recurrent_kind(l.kind)) o["last"] = l.last_only;
        if (scheme == Scheme::Static) {
            o["relu"] = l.relu;
            if (!l.relu_module.empty()) o["relu_module"] = l.relu_module;
            if (!l.pool_module.empty()) o["pool_module"] = l.pool_module;
            if (!l.bn_module.empty()) o["bn_module"] = l.bn_module;
            if (!l.output_to.empty()) o["output_to"] = l.output_to;
        }
        layers_json.push_back(std::move(o));
    }
    j["layers"] = std::move(layers_json);
    json floats = json::array();
    for (const FloatLayer& f : float_layers)
        floats.push_back({{"module", f.module}, {"kind", f.kind}, {"reason", f.reason}});
    j["float_layers"] = std::move(floats);
    return j.dump();
}

QuantizationPlan QuantizationPlan::from_json(const std::string& text, const std::string& where) {
    const std::string w = where + ": quantization";
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) {
        throw Error(w + ": not valid JSON: " + e.what());
    }
    auto string_of = [&](const json& o, const char* key, const std::string& at) {
        const auto it = o.find(key);
        if (it == o.end() || !it->is_string()) throw Error(at + "." + key + ": expected a string");
        return it->get<std::string>();
    };
    if (!j.is_object()) throw Error(w + ": expected an object");
    QuantizationPlan plan;
    const std::string scheme = string_of(j, "scheme", w);
    if (scheme == "static")
        plan.scheme = Scheme::Static;
    else if (scheme == "dynamic")
        plan.scheme = Scheme::Dynamic;
    else
        throw Error(w + ".scheme: '" + scheme + "' is not static or dynamic");
    if (plan.scheme == Scheme::Static) {
        const std::string observer = string_of(j, "observer", w);
        const auto kind = parse_observer_kind(observer);
        if (!kind) throw Error(w + ".observer: unknown observer '" + observer + "'");
        plan.observer = *kind;
        const auto batches = j.find("calibration_batches");
        if (batches == j.end() || !batches->is_number_integer() || batches->get<int64_t>() < 0)
            throw Error(w + ".calibration_batches: expected a count");
        plan.calibration_batches = batches->get<int64_t>();
        if (const auto qat = j.find("qat_epochs"); qat != j.end()) {
            if (!qat->is_number_integer() || qat->get<int64_t>() < 0)
                throw Error(w + ".qat_epochs: expected a count");
            plan.qat_epochs = qat->get<int64_t>();
        }
    }
    const auto layers = j.find("layers");
    if (layers == j.end() || !layers->is_array()) throw Error(w + ".layers: expected an array");
    for (size_t i = 0; i < layers->size(); ++i) {
        const json& o = (*layers)[i];
        const std::string at = w + ".layers[" + std::to_string(i) + "]";
        if (!o.is_object()) throw Error(at + ": expected an object");
        QuantizedLayer l;
        l.module = string_of(o, "module", at);
        l.kind = string_of(o, "kind", at);
        const bool dynamic_kind =
            plan.scheme == Scheme::Dynamic && detail::is_recurrent_kind(l.kind);
        if (l.kind != "Linear" && !dynamic_kind &&
            (l.kind != "Conv2d" || plan.scheme != Scheme::Static))
            throw Error(at + ".kind: '" + l.kind + "' has no " +
                        std::string(scheme_name(plan.scheme)) + " int8 form");
        if (const auto relu = o.find("relu"); relu != o.end()) {
            if (!relu->is_boolean()) throw Error(at + ".relu: expected true or false");
            l.relu = relu->get<bool>();
        }
        if (const auto last = o.find("last"); last != o.end()) {
            if (!last->is_boolean()) throw Error(at + ".last: expected true or false");
            l.last_only = last->get<bool>();
        }
        for (auto [key, field] :
             {std::pair{"relu_module", &l.relu_module}, std::pair{"pool_module", &l.pool_module},
              std::pair{"output_to", &l.output_to}, std::pair{"bn_module", &l.bn_module}})
            if (o.contains(key)) *field = string_of(o, key, at);
        if (!l.pool_module.empty() && (l.kind != "Conv2d" || l.relu_module.empty()))
            throw Error(at + ".pool_module: a max pool is fused only after a Conv2d's ReLU");
        plan.layers.push_back(std::move(l));
    }
    if (const auto floats = j.find("float_layers"); floats != j.end() && floats->is_array())
        for (size_t i = 0; i < floats->size(); ++i) {
            const std::string at = w + ".float_layers[" + std::to_string(i) + "]";
            const json& o = (*floats)[i];
            if (!o.is_object()) throw Error(at + ": expected an object");
            plan.float_layers.push_back(
                {string_of(o, "module", at), string_of(o, "kind", at), string_of(o, "reason", at)});
        }
    return plan;
}

QuantizationPlan plan_quantization(const graph::ModelSpec& spec, const graph::GraphModule& model,
                                   Scheme scheme, ObserverKind observer, bool fold_batch_norm) {
    QuantizationPlan plan;
    plan.scheme = scheme;
    plan.observer = observer;
    for (const graph::Node& node : spec.nodes) {
        const std::string& module = model.module_name(node.id);
        if (module.empty()) continue;
        const nn::Module* m = child_of(model, module);
        if (!m || m->named_parameters().empty()) continue;
        std::string reason;
        if (node.kind == "Linear") {
            // int8 for any batch shape: the kernel reads the last dimension.
        } else if (scheme == Scheme::Dynamic && detail::is_recurrent_kind(node.kind)) {
            const auto* r = dynamic_cast<const nn::RNNBase*>(m);
            if (!r || !r->batch_first) reason = "not built as a batch-first recurrent module";
        } else if (node.kind == "Conv2d" && scheme == Scheme::Static) {
            const auto* conv = dynamic_cast<const nn::Conv2d*>(m);
            if (!conv)
                reason = "not built as a Conv2d module";
            else if (conv->options.padding_mode != "zeros")
                reason = "padding_mode '" + conv->options.padding_mode +
                         "' (the int8 convolution pads with zeros)";
            else if (conv->options.same_padding &&
                     ((conv->kernel_size.h - 1) * conv->options.dilation.h % 2 ||
                      (conv->kernel_size.w - 1) * conv->options.dilation.w % 2))
                reason = "padding='same' with an even kernel pads one side more (the int8 "
                         "convolution pads both sides alike)";
        } else {
            reason = reason_for(node.kind, scheme);
        }
        if (!reason.empty()) {
            plan.float_layers.push_back({module, node.kind, reason});
            continue;
        }
        QuantizedLayer layer;
        layer.module = module;
        layer.kind = node.kind;
        if (detail::is_recurrent_kind(node.kind))
            layer.last_only = node.attrs.get_string("output") == "last";
        if (scheme == Scheme::Static) {
            std::vector<graph::Edge> out = spec.outputs_of(node.id);
            if (fold_batch_norm && node.kind == "Conv2d" && out.size() == 1) {
                const auto* bn = dynamic_cast<const nn::BatchNorm2d*>(
                    child_of(model, model.module_name(out[0].to)));
                if (bn && bn->track_running_stats) {
                    layer.bn_module = model.module_name(out[0].to);
                    out = spec.outputs_of(out[0].to);
                }
            }
            layer.relu = out.size() == 1 && spec.node(out[0].to).kind == "ReLU";
            if (layer.relu) {
                const graph::NodeId relu = out[0].to;
                layer.relu_module = model.module_name(relu);
                const std::vector<graph::Edge> after = spec.outputs_of(relu);
                const auto* pool = after.size() == 1 ? dynamic_cast<const nn::MaxPool2d*>(child_of(
                                                           model, model.module_name(after[0].to)))
                                                     : nullptr;
                if (node.kind == "Conv2d" && pool && !pool->options.ceil_mode)
                    layer.pool_module = model.module_name(after[0].to);
            }
        }
        plan.layers.push_back(std::move(layer));
    }
    // A folded BatchNorm is part of its convolution, not a float layer.
    for (const QuantizedLayer& layer : plan.layers)
        if (!layer.bn_module.empty())
            std::erase_if(plan.float_layers,
                          [&](const FloatLayer& f) { return f.module == layer.bn_module; });
    // Consecutive int8 layers (through identities and Flatten only) hand on uint8 values.
    if (scheme == Scheme::Static) {
        std::map<graph::NodeId, std::string> planned;
        for (const QuantizedLayer& layer : plan.layers)
            planned[model.node_of_module(layer.module)] = layer.module;
        for (QuantizedLayer& layer : plan.layers) {
            const std::string& last = !layer.pool_module.empty()   ? layer.pool_module
                                      : !layer.relu_module.empty() ? layer.relu_module
                                      : !layer.bn_module.empty()   ? layer.bn_module
                                                                   : layer.module;
            graph::NodeId at = model.node_of_module(last);
            std::vector<graph::Edge> out = spec.outputs_of(at);
            while (out.size() == 1 && spec.node(out[0].to).kind == "Flatten")
                out = spec.outputs_of(out[0].to);
            if (out.size() == 1 && out[0].to_port == 0 && planned.count(out[0].to))
                layer.output_to = planned[out[0].to];
        }
    }
    if (plan.layers.empty())
        throw Error(std::string("no layer of this model has a ") +
                    std::string(scheme_name(scheme)) + " int8 form (Linear" +
                    (scheme == Scheme::Static ? " and Conv2d" : "") + " layers do)");
    return plan;
}

// --- calibration -------------------------------------------------------------------------------

void share_handed_on_parameters(QuantizationPlan& plan) {
    for (const QuantizedLayer& from : plan.layers)
        if (!from.output_to.empty())
            for (QuantizedLayer& to : plan.layers)
                if (to.module == from.output_to) to.input = from.output;
}

void calibrate(graph::GraphModule& model, QuantizationPlan& plan,
               const std::function<bool(TensorList& inputs)>& next_batch) {
    if (plan.scheme != Scheme::Static) return;
    struct Watch {
        std::unique_ptr<Observer> input, output;
    };
    std::vector<Watch> watches(plan.layers.size());
    // The hooks come off however calibration ends.
    struct Handles {
        std::vector<HookHandle> list;
        ~Handles() {
            for (HookHandle& h : list)
                h.remove();
        }
    } handles;
    for (size_t i = 0; i < plan.layers.size(); ++i) {
        QuantizedLayer& layer = plan.layers[i];
        nn::Module* m = child_of(model, layer.module);
        if (!m) throw Error("quantization: the model has no layer '" + layer.module + "'");
        watches[i].input = make_observer(plan.observer);
        watches[i].output = make_observer(plan.observer);
        Watch* w = &watches[i];
        const bool relu = layer.relu;
        // With a folded BatchNorm the layer's output is the BatchNorm's (in evaluation mode the
        // two compute the folded convolution).
        nn::Module* out = layer.bn_module.empty() ? m : child_of(model, layer.bn_module);
        if (!out) throw Error("quantization: the model has no layer '" + layer.bn_module + "'");
        handles.list.push_back(m->register_forward_hook(
            [w](nn::Module&, const TensorList& inputs, const Tensor&) -> Tensor {
                w->input->observe(inputs[0].to(DType::Float32).contiguous());
                return Tensor();
            }));
        handles.list.push_back(out->register_forward_hook(
            [w, relu](nn::Module&, const TensorList&, const Tensor& output) -> Tensor {
                // The fused ReLU's output: the same values a ReLU module would give.
                Tensor y = output.to(DType::Float32).contiguous();
                w->output->observe(relu ? clamp(y, 0.0, std::nullopt) : y);
                return Tensor();
            }));
    }
    const bool was_training = model.is_training();
    model.eval();
    int64_t batches = 0;
    try {
        autograd::NoGradGuard no_grad;
        TensorList inputs;
        while (next_batch(inputs)) {
            model(inputs);
            ++batches;
            inputs.clear();
        }
    } catch (...) {
        model.train(was_training);
        throw;
    }
    model.train(was_training);
    if (batches == 0) throw Error("quantization: no calibration batch (the data is empty)");
    plan.calibration_batches = batches;
    for (size_t i = 0; i < plan.layers.size(); ++i) {
        plan.layers[i].input = watches[i].input->qparams();
        plan.layers[i].output = watches[i].output->qparams();
    }
    share_handed_on_parameters(plan);
}

// --- the swap ----------------------------------------------------------------------------------

namespace {

Tensor bias_copy(const Tensor& bias) {
    return bias.defined() ? bias.detach().to(DType::Float32).contiguous().clone() : Tensor();
}

Conv2dOptions conv_options(const nn::Conv2d& conv) {
    Conv2dOptions o;
    for (int d = 0; d < 2; ++d) {
        o.stride[d] = conv.options.stride.arr()[d];
        o.dilation[d] = conv.options.dilation.arr()[d];
        o.padding[d] = conv.options.same_padding
                           ? (conv.kernel_size.arr()[d] - 1) * o.dilation[d] / 2
                           : conv.options.padding.arr()[d];
    }
    o.groups = conv.options.groups;
    return o;
}

// Puts layer `layer`'s int8 module in `model`: the layer swapped, and the fused ReLU and max
// pool made identities (the int8 layer does their work).
void install(graph::GraphModule& model, const QuantizationPlan& plan, const QuantizedLayer& layer,
             QuantizedWeight weight, Tensor bias, const std::string& where) {
    const Scheme scheme = plan.scheme;
    Int8Output hand_on = Int8Output::Float;
    for (const QuantizedLayer& to : plan.layers)
        if (!layer.output_to.empty() && to.module == layer.output_to)
            hand_on =
                to.kind == "Conv2d" ? Int8Output::UInt8ChannelsLast : Int8Output::UInt8Contiguous;
    const nn::Module* m = child_of(model, layer.module);
    auto fused = [&](const std::string& name, const char* what) -> nn::Module* {
        nn::Module* f = name.empty() ? nullptr : child_of(model, name);
        if (!name.empty() && !f)
            throw Error(where + ": the quantization plan fuses " + what + " '" + name +
                        "', which the model does not have");
        return f;
    };
    nn::Module* relu = fused(layer.relu_module, "the ReLU");
    nn::Module* pool_module = fused(layer.pool_module, "the max pool");
    nn::Module* bn = fused(layer.bn_module, "the BatchNorm");
    if (relu && !dynamic_cast<nn::ReLU*>(relu))
        throw Error(where + ": layer '" + layer.relu_module + "' is not a ReLU");
    if (bn && !dynamic_cast<nn::BatchNormBase*>(bn))
        throw Error(where + ": layer '" + layer.bn_module + "' is not a BatchNorm");
    if (layer.kind == "Linear" && !dynamic_cast<const nn::Linear*>(m))
        throw Error(where + ": layer '" + layer.module + "' is not a Linear");
    std::shared_ptr<nn::Module> int8;
    const bool is_static = scheme == Scheme::Static;
    if (layer.kind == "Linear") {
        int8 = std::make_shared<QuantizedLinear>(
            std::move(weight), std::move(bias),
            is_static ? std::optional<QParams>(layer.input) : std::nullopt,
            is_static ? std::optional<QParams>(layer.output) : std::nullopt, layer.relu);
        static_cast<QuantizedLinear&>(*int8).set_output(hand_on);
    } else {
        const auto* conv = dynamic_cast<const nn::Conv2d*>(m);
        if (!conv) throw Error(where + ": layer '" + layer.module + "' is not a Conv2d");
        std::optional<FusedMaxPool> pool;
        if (pool_module) {
            const auto* p = dynamic_cast<const nn::MaxPool2d*>(pool_module);
            if (!p || p->options.ceil_mode)
                throw Error(where + ": layer '" + layer.pool_module +
                            "' is not a MaxPool2d without ceil_mode");
            pool = FusedMaxPool{p->kernel_size.arr(), p->stride.arr(), p->options.padding.arr(),
                                p->options.dilation.arr()};
        }
        int8 = std::make_shared<QuantizedConv2d>(std::move(weight), std::move(bias),
                                                 conv_options(*conv), layer.input, layer.output,
                                                 layer.relu, pool);
        static_cast<QuantizedConv2d&>(*int8).set_output(hand_on);
    }
    model.replace_layer(model.node_of_module(layer.module), int8);
    for (const std::string& name : {layer.bn_module, layer.relu_module, layer.pool_module})
        if (!name.empty())
            model.replace_layer(model.node_of_module(name), std::make_shared<nn::Identity>());
}

} // namespace

namespace {

// BatchNorm (evaluation mode) folded into the convolution before it: with s = gamma /
// sqrt(running_var + eps), w' = w * s per output channel and b' = (b - running_mean) * s + beta.
void fold_batch_norm(const nn::Module& module, Tensor& w, Tensor& bias) {
    const auto* bn = dynamic_cast<const nn::BatchNormBase*>(&module);
    if (!bn || !bn->track_running_stats)
        throw Error("quantization: '" + module.type_name() +
                    "' is not a BatchNorm with running "
                    "statistics");
    auto host = [](const Tensor& t) { return t.detach().to(kCPU).to(DType::Float64).contiguous(); };
    const int64_t channels = w.size(0);
    const Tensor mean = host(bn->running_mean), var = host(bn->running_var);
    const Tensor gamma = bn->affine ? host(bn->weight) : full(Dims{channels}, 1.0, DType::Float64);
    const Tensor beta = bn->affine ? host(bn->bias) : zeros(Dims{channels}, DType::Float64);
    const Tensor b = bias.defined() ? host(bias) : zeros(Dims{channels}, DType::Float64);
    Tensor folded_w = w.to(DType::Float64).contiguous();
    Tensor folded_b = zeros(Dims{channels}, DType::Float64);
    const int64_t per_channel = folded_w.numel() / channels;
    double* fw = folded_w.data<double>();
    for (int64_t c = 0; c < channels; ++c) {
        const double s = gamma.data<double>()[c] / std::sqrt(var.data<double>()[c] + bn->eps);
        for (int64_t i = 0; i < per_channel; ++i)
            fw[c * per_channel + i] *= s;
        folded_b.data<double>()[c] =
            (b.data<double>()[c] - mean.data<double>()[c]) * s + beta.data<double>()[c];
    }
    w = folded_w.to(DType::Float32).contiguous();
    bias = folded_b.to(DType::Float32).contiguous();
}

} // namespace

void quantize_model(graph::GraphModule& model, const QuantizationPlan& plan) {
    for (const QuantizedLayer& layer : plan.layers) {
        nn::Module* m = child_of(model, layer.module);
        if (!m) throw Error("quantization: the model has no layer '" + layer.module + "'");
        if (detail::is_recurrent_kind(layer.kind)) {
            model.replace_layer(model.node_of_module(layer.module),
                                detail::dynamic_recurrent(*m, layer.last_only));
            continue;
        }
        Tensor w = m->param("weight").detach().to(kCPU).to(DType::Float32).contiguous();
        Tensor bias;
        for (const auto& [name, p] : m->named_parameters(false))
            if (name == "bias") bias = bias_copy(p);
        if (!layer.bn_module.empty()) fold_batch_norm(*child_of(model, layer.bn_module), w, bias);
        QuantizedWeight qw = plan.scheme == Scheme::Static ? quantize_weight_per_channel(w)
                                                           : quantize_weight_per_tensor(w);
        install(model, plan, layer, std::move(qw), std::move(bias), "quantization");
    }
}

QuantizedState quantized_state(const graph::GraphModule& model) {
    QuantizedState state;
    state.tensors = model.state_dict();
    for (const auto& [name, child] : model.named_children())
        if (dynamic_cast<const QuantizedLinear*>(child.get()) ||
            dynamic_cast<const QuantizedConv2d*>(child.get()))
            state.int8_names.push_back(name + ".weight");
        else
            for (const std::string& local : detail::recurrent_int8_weights(*child))
                state.int8_names.push_back(name + "." + local);
    return state;
}

namespace {

const Tensor* find_tensor(const nn::StateDict& tensors, const std::string& name) {
    for (const auto& [key, t] : tensors)
        if (key == name) return &t;
    return nullptr;
}

// The int8 values of layer `module` (checked against its scales by read_parameters).
const Tensor& int8_values(const nn::StateDict& tensors, const std::string& module,
                          const std::string& where) {
    const Tensor* t = find_tensor(tensors, module + ".weight");
    if (!t || t->dtype() != DType::UInt8)
        throw Error(where + ": the int8 weight '" + module + ".weight' is missing");
    return *t;
}

} // namespace

void read_parameters(QuantizationPlan& plan, const nn::StateDict& tensors,
                     const std::string& where) {
    auto need = [&](const std::string& name, const Dims& shape) -> const Tensor& {
        const Tensor* t = find_tensor(tensors, name);
        if (!t) throw Error(where + ": the quantized layer's tensor '" + name + "' is missing");
        if (t->sizes() != shape)
            throw Error(where + ": tensor '" + name + "' is " + t->sizes().str() + ", expected " +
                        shape.str());
        return *t;
    };
    auto qparams = [&](const std::string& prefix) {
        QParams q{float(need(prefix + "_scale", Dims{}).item<double>()),
                  int32_t(need(prefix + "_zero_point", Dims{}).item<double>())};
        if (!(q.scale > 0.0f) || !std::isfinite(q.scale) || q.zero_point < kQUInt8Min ||
            q.zero_point > kQUInt8Max)
            throw Error(where + ": '" + prefix + "' has scale " + std::to_string(q.scale) +
                        " and zero point " + std::to_string(q.zero_point) +
                        " (a positive scale and a zero point in [0, 255] are needed)");
        return q;
    };
    for (QuantizedLayer& layer : plan.layers) {
        if (detail::is_recurrent_kind(layer.kind)) continue; // checked as the layer is built
        const std::string p = layer.module + ".";
        const Tensor& values = int8_values(tensors, layer.module, where);
        const int64_t out = values.dim() > 0 ? values.size(0) : 0;
        const Tensor* scales = find_tensor(tensors, p + "weight_scale");
        if (!scales || scales->dim() != 1 || (scales->size(0) != 1 && scales->size(0) != out))
            throw Error(where + ": tensor '" + p + "weight_scale' must be [" + std::to_string(out) +
                        "] (per channel) or [1] (per tensor)");
        const Tensor s = scales->to(DType::Float32).contiguous();
        layer.weight_scales.assign(s.data<float>(), s.data<float>() + s.numel());
        for (float v : layer.weight_scales)
            if (!(v > 0.0f) || !std::isfinite(v))
                throw Error(where + ": tensor '" + p + "weight_scale' holds " + std::to_string(v) +
                            " (scales must be positive and finite)");
        if (plan.scheme == Scheme::Static) {
            layer.input = qparams(p + "input");
            layer.output = qparams(p + "output");
        }
    }
}

nn::StateDict dequantized_state(const QuantizationPlan& plan, const nn::StateDict& tensors) {
    std::map<std::string, const QuantizedLayer*> by_weight;
    std::set<std::string> left_out;
    std::map<std::string, const Tensor*> recurrent_scales; // int8 weight -> its scale [1]
    for (const QuantizedLayer& layer : plan.layers) {
        if (detail::is_recurrent_kind(layer.kind)) {
            const std::string p = layer.module + ".";
            for (const auto& [name, t] : tensors)
                if (name.starts_with(p) && name.ends_with("_scale")) {
                    left_out.insert(name);
                    recurrent_scales[name.substr(0, name.size() - 6)] = &t;
                }
            continue;
        }
        by_weight[layer.module + ".weight"] = &layer;
        for (const char* part : {"weight_scale", "input_scale", "input_zero_point", "output_scale",
                                 "output_zero_point"})
            left_out.insert(layer.module + "." + part);
    }
    nn::StateDict out;
    for (const auto& [name, t] : tensors) {
        if (left_out.count(name)) continue;
        if (const auto r = recurrent_scales.find(name); r != recurrent_scales.end()) {
            out.emplace_back(name, dequantize_weight(detail::weight_from_bytes(
                                       t, {float(r->second->item<double>())})));
            continue;
        }
        const auto it = by_weight.find(name);
        if (it == by_weight.end()) {
            out.emplace_back(name, t);
            continue;
        }
        out.emplace_back(
            name, dequantize_weight(detail::weight_from_bytes(t, it->second->weight_scales)));
    }
    return out;
}

void load_quantized(graph::GraphModule& model, const QuantizationPlan& given,
                    const nn::StateDict& tensors, const std::string& where,
                    const graph::ModelSpec* spec) {
    if (spec) {
        const QuantizationPlan expected = plan_quantization(
            *spec, model, given.scheme, ObserverKind::MinMax, given.qat_epochs == 0);
        auto shape = [](const QuantizedLayer& l) {
            return l.module + "|" + l.kind + "|" + l.bn_module + "|" +
                   (l.relu ? l.relu_module : std::string("-")) + "|" + l.pool_module + "|" +
                   l.output_to + "|" + (l.last_only ? "last" : "");
        };
        bool same = expected.layers.size() == given.layers.size();
        for (size_t i = 0; same && i < given.layers.size(); ++i)
            same = shape(expected.layers[i]) == shape(given.layers[i]);
        if (!same)
            throw Error(where + ": its quantization plan does not fit the project's model (the "
                                "int8 layers, or what is fused into them, differ from what "
                                "quantizing this model gives)");
    }
    QuantizationPlan plan = given;
    read_parameters(plan, tensors, where);
    for (const QuantizedLayer& layer : plan.layers) {
        nn::Module* m = child_of(model, layer.module);
        if (!m)
            throw Error(where + ": the quantization plan names layer '" + layer.module +
                        "', which the project's model does not have");
        if (detail::is_recurrent_kind(layer.kind)) {
            model.replace_layer(
                model.node_of_module(layer.module),
                detail::dynamic_recurrent(*m, layer.last_only, layer.module + ".", tensors, where));
            continue;
        }
        const Tensor& values = int8_values(tensors, layer.module, where);
        const Dims shape = m->param("weight").sizes();
        if (values.sizes() != shape)
            throw Error(where + ": tensor '" + layer.module + ".weight' is " +
                        values.sizes().str() + ", the layer's weight is " + shape.str());
        QuantizedWeight w = detail::weight_from_bytes(values, layer.weight_scales);
        Tensor bias;
        if (!layer.bn_module.empty()) { // the folded bias, whether or not the layer had one
            const Tensor* b = find_tensor(tensors, layer.module + ".bias");
            if (!b || b->sizes() != Dims{shape[0]})
                throw Error(where + ": the folded bias '" + layer.module + ".bias' is missing or " +
                            "not [" + std::to_string(shape[0]) + "]");
            bias = b->to(DType::Float32).contiguous().clone();
        }
        for (const auto& [name, param] : m->named_parameters(false))
            if (name == "bias") {
                const Tensor* b = find_tensor(tensors, layer.module + ".bias");
                if (!b || b->sizes() != param.sizes())
                    throw Error(where + ": the bias '" + layer.module + ".bias' is missing or " +
                                "not " + param.sizes().str());
                bias = b->to(DType::Float32).contiguous().clone();
            }
        install(model, plan, layer, std::move(w), std::move(bias), where);
    }
    const nn::LoadStateDictResult r = model.load_state_dict(tensors, false);
    if (!r.ok())
        throw Error(where + ": the quantized checkpoint does not fit the model:" + r.text());
}

int64_t state_bytes(const nn::StateDict& state) {
    int64_t bytes = 0;
    for (const auto& [name, t] : state)
        bytes += t.numel() * int64_t(t.element_size());
    return bytes;
}

graph::ModelSpec folded_spec(const graph::ModelSpec& spec, const QuantizationPlan& plan) {
    bool any = false;
    for (const QuantizedLayer& layer : plan.layers)
        any = any || !layer.bn_module.empty();
    if (!any) return spec;
    // Module names as the built model gives them (a node's name, else its position).
    const std::string generator = default_generator().get_state();
    const std::shared_ptr<graph::GraphModule> model = graph::build(spec);
    default_generator().set_state(generator);
    graph::ModelSpec out = spec;
    for (const QuantizedLayer& layer : plan.layers) {
        if (layer.bn_module.empty()) continue;
        const graph::NodeId conv = model->node_of_module(layer.module);
        const graph::NodeId bn = model->node_of_module(layer.bn_module);
        out.node(conv).attrs.set("bias", true);
        for (const graph::Edge& e : out.outputs_of(bn))
            out.connect(conv, e.to, e.to_port, 0);
        out.remove_node(bn);
    }
    return out;
}

} // namespace myelin::quant
