// build(): layer nodes become children of a GraphModule (named after the nodes, or by position),
// and forward() replays a precomputed plan: value slots per node output, freed after their last
// use so intermediate activations live no longer than autograd needs them.
#include <myelin/error.h>
#include <myelin/graph/analysis.h>
#include <myelin/graph/build.h>
#include <myelin/graph/registry.h>
#include <myelin/nn/layers.h>

#include <algorithm>
#include <unordered_map>

namespace myelin::graph {

Tensor GraphModule::forward(const TensorList& inputs) {
    if (inputs.size() != input_slots_.size())
        throw Error("GraphModule: expected " + std::to_string(input_slots_.size()) +
                    " input(s), got " + std::to_string(inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i) {
        const Dims& declared = input_shapes_[i];
        const Tensor& x = inputs[i];
        bool ok = x.dim() == declared.size() + 1;
        for (int d = 0; ok && d < declared.size(); ++d)
            ok = x.size(d + 1) == declared[d];
        if (!ok) {
            Dims expected{-1};
            for (int64_t v : declared)
                expected.push_back(v);
            throw ShapeError("model input " + std::to_string(i) + ": expected [N" +
                             declared.str().substr(1).insert(0, declared.empty() ? "" : ", ") +
                             ", got " + x.sizes().str());
        }
    }
    std::vector<Tensor> slots(static_cast<size_t>(slot_count_));
    for (size_t i = 0; i < inputs.size(); ++i)
        slots[size_t(input_slots_[i])] = inputs[i];
    TensorList args;
    for (size_t i = 0; i < steps_.size(); ++i) {
        const Step& step = steps_[i];
        if (step.relu_follows) {
            const Step& relu = steps_[i + 1];
            const Tensor& in = slots[size_t(step.input_slots[0])];
            if (step.pool_follows) {
                const Step& pool = steps_[i + 2];
                Tensor fused =
                    nn::fused_conv_relu_pool(*step.module, *relu.module, *pool.module, in);
                if (fused.defined()) {
                    slots[size_t(pool.output_slot)] = std::move(fused);
                    for (const Step* done : {&step, &relu, &pool})
                        for (int s : done->release_after)
                            slots[size_t(s)] = Tensor();
                    i += 2;
                    continue;
                }
            }
            Tensor fused = nn::fused_conv_relu(*step.module, *relu.module, in);
            if (fused.defined()) {
                slots[size_t(relu.output_slot)] = std::move(fused);
                for (const Step* done : {&step, &relu})
                    for (int s : done->release_after)
                        slots[size_t(s)] = Tensor();
                ++i;
                continue;
            }
        }
        args.clear();
        for (int s : step.input_slots)
            args.push_back(slots[size_t(s)]);
        if (step.output_count == 1) {
            slots[size_t(step.output_slot)] = step.module ? (*step.module)(args) : args[0];
        } else {
            TensorList outs = step.module->outputs(args);
            if (outs.size() < size_t(step.output_count))
                throw Error("GraphModule: layer " + module_name(step.node) + " returned " +
                            std::to_string(outs.size()) + " outputs; its kind has " +
                            std::to_string(step.output_count));
            for (int k = 0; k < step.output_count; ++k)
                slots[size_t(step.output_slot + k)] = std::move(outs[size_t(k)]);
        }
        for (int s : step.release_after)
            slots[size_t(s)] = Tensor();
    }
    return std::move(slots[size_t(output_slot_)]);
}

void GraphModule::replace_layer(NodeId node, nn::ModulePtr module) {
    const std::string& name = module_name(node);
    if (name.empty()) throw Error("node " + std::to_string(node) + " is not a layer node");
    replace_child(name, module);
    for (Step& step : steps_)
        if (step.node == node) step.module = module.get();
}

const std::string& GraphModule::module_name(NodeId node) const {
    static const std::string none;
    for (const auto& [id, name] : names_)
        if (id == node) return name;
    return none;
}

NodeId GraphModule::node_of_module(const std::string& module_name) const {
    for (const auto& [id, name] : names_)
        if (name == module_name) return id;
    return -1;
}

std::shared_ptr<GraphModule> build(const ModelSpec& spec) {
    Analysis analysis = analyze(spec);
    if (!analysis.ok()) {
        std::string message = "the model cannot be built:";
        for (const auto& p : analysis.problems)
            if (p.severity == Severity::Error) message += "\n  " + describe(spec, p);
        throw Error(message);
    }
    std::shared_ptr<GraphModule> module(new GraphModule());
    std::unordered_map<NodeId, int> slot_of; // node id -> slot of its output port 0
    std::vector<int> last_use;               // per slot: index of the last step reading it
    std::vector<int> made_by;                // per slot: the step writing it, or -1
    for (size_t i : analysis.order) {
        const Node& node = spec.nodes[i];
        const LayerKind& kind = layer_kind(node.kind);
        // One slot per output port: port k of the node lives in slot + k.
        const int output_count = std::max<int>(1, int(analysis.nodes[i].outputs.size()));
        int slot = module->slot_count_;
        module->slot_count_ += output_count;
        last_use.resize(size_t(module->slot_count_), -1);
        made_by.resize(size_t(module->slot_count_), -1);
        slot_of[node.id] = slot;
        if (node.kind == "Input") {
            module->input_nodes_.push_back(node.id);
            module->input_slots_.push_back(slot);
            Dims shape(node.attrs.get_ints("shape"));
            module->input_shapes_.push_back(shape);
            continue;
        }
        GraphModule::Step step{.node = node.id,
                               .module = nullptr,
                               .input_slots = {},
                               .output_slot = slot,
                               .release_after = {},
                               .output_count = output_count};
        for (const Edge& e : spec.inputs_of(node.id))
            step.input_slots.push_back(slot_of.at(e.from) + e.from_port);
        if (kind.build) {
            Attrs scratch = with_defaults(kind.attrs, node.attrs);
            nn::ModulePtr layer = kind.build(scratch);
            const std::string& name = analysis.nodes[i].module_name;
            if (node.frozen) layer->requires_grad_(false);
            step.module = layer.get();
            module->add_child(name, std::move(layer));
            module->names_.emplace_back(node.id, name);
        } else {
            module->output_slot_ = slot;
        }
        // Only what feeds the Output runs; unused layers still exist (their parameters are in
        // the state_dict the user sees in the summary).
        if (!analysis.nodes[i].reachable) continue;
        int step_index = int(module->steps_.size());
        for (int s : step.input_slots)
            last_use[size_t(s)] = step_index;
        for (int k = 0; k < output_count; ++k)
            made_by[size_t(slot + k)] = step_index;
        module->steps_.push_back(std::move(step));
    }
    // Conv2d -> ReLU pairs whose pre-activation nothing else reads may run fused ...
    auto& steps = module->steps_;
    for (size_t k = 0; k + 1 < steps.size(); ++k) {
        const auto& conv = steps[k];
        const auto& relu = steps[k + 1];
        steps[k].relu_follows =
            conv.module && relu.module && conv.output_count == 1 && relu.output_count == 1 &&
            conv.input_slots.size() == 1 && relu.input_slots.size() == 1 &&
            relu.input_slots[0] == conv.output_slot && conv.output_slot != module->output_slot_ &&
            last_use[size_t(conv.output_slot)] == int(k + 1) &&
            dynamic_cast<nn::Conv2d*>(conv.module) && dynamic_cast<nn::ReLU*>(relu.module);
    }
    // ... and of those, the ones whose activation only a MaxPool2d reads.
    for (size_t k = 0; k + 2 < steps.size(); ++k) {
        const auto& relu = steps[k + 1];
        const auto& pool = steps[k + 2];
        steps[k].pool_follows = steps[k].relu_follows && pool.module && pool.output_count == 1 &&
                                pool.input_slots.size() == 1 &&
                                pool.input_slots[0] == relu.output_slot &&
                                relu.output_slot != module->output_slot_ &&
                                last_use[size_t(relu.output_slot)] == int(k + 2) &&
                                dynamic_cast<nn::MaxPool2d*>(pool.module);
    }
    // Free each slot after its last reader (never the Output's); an output port nobody reads
    // (an LSTM's c_n) right after the step that made it.
    for (size_t s = 0; s < last_use.size(); ++s) {
        const int after = last_use[s] >= 0 ? last_use[s] : made_by[s];
        if (after >= 0 && int(s) != module->output_slot_)
            module->steps_[size_t(after)].release_after.push_back(int(s));
    }
    return module;
}

} // namespace myelin::graph
