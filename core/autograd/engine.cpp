// The autograd graph and the backward engine: a dependency count over the reachable nodes, then
// a ready stack in topological order; gradients for each node's inputs collect in the node.
#include "autograd/function.h"

#include <atomic>
#include <cmath>
#include <sstream>

namespace myelin::autograd {

namespace {
thread_local bool g_grad_enabled = true;
std::atomic<bool> g_anomaly{false};
std::atomic<int64_t> g_live_nodes{0};
std::atomic<uint64_t> g_sequence{0};
std::atomic<uint64_t> g_epoch{0};
} // namespace

bool is_grad_enabled() { return g_grad_enabled; }
void set_grad_enabled(bool enabled) { g_grad_enabled = enabled; }
bool is_anomaly_enabled() { return g_anomaly.load(std::memory_order_relaxed); }
void set_detect_anomaly(bool enabled) { g_anomaly = enabled; }
int64_t live_node_count() { return g_live_nodes.load(); }

Node::Node() : sequence_nr_(g_sequence.fetch_add(1, std::memory_order_relaxed)) {
    g_live_nodes.fetch_add(1, std::memory_order_relaxed);
}
Node::~Node() { g_live_nodes.fetch_sub(1, std::memory_order_relaxed); }

HookHandle Node::add_pre_hook(uint32_t output_nr, GradHook hook) {
    const uint64_t id = next_hook_id_++;
    pre_hooks_.push_back({id, output_nr, std::move(hook)});
    // The handle must not keep the node alive (hooks often outlive a graph).
    return HookHandle([weak = weak_from_this(), id] {
        auto self = weak.lock();
        if (!self) return;
        auto& hooks = self->pre_hooks_;
        for (auto it = hooks.begin(); it != hooks.end(); ++it)
            if (it->id == id) {
                hooks.erase(it);
                return;
            }
    });
}

void Node::run_pre_hooks(TensorList& grads) {
    for (auto& h : pre_hooks_) {
        if (h.output_nr >= grads.size() || !grads[h.output_nr].defined()) continue;
        Tensor replaced = h.fn(grads[h.output_nr]);
        if (replaced.defined()) grads[h.output_nr] = std::move(replaced);
    }
}

void throw_released(const Node& node) {
    throw AutogradError(
        std::string("Trying to backward through the graph a second time (") + node.name() +
        "'s saved values were freed by the first backward). Pass retain_graph=true to the first "
        "backward() if you need to backward through the graph again.");
}

SavedTensor::SavedTensor(const Tensor& t, bool is_output)
    : data_(is_output ? t.detach() : t), version_(t.impl()->storage->version),
      is_output_(is_output) {
    if (t.impl()->autograd) {
        output_nr_ = t.impl()->autograd->output_nr;
        if (!is_output && t.impl()->autograd->grad_fn) producer_ = t.impl()->autograd->grad_fn->name();
    }
}

Tensor SavedTensor::unpack(const Node& owner) const {
    if (!data_.defined()) return data_;
    const uint32_t now = data_.impl()->storage->version;
    if (now != version_) {
        std::ostringstream msg;
        msg << "one of the variables needed for gradient computation has been modified by an "
               "inplace operation: ["
            << detail::describe(data_) << "], which is ";
        if (is_output_)
            msg << "output " << output_nr_ << " of " << owner.name();
        else if (producer_)
            msg << "output " << output_nr_ << " of " << producer_;
        else
            msg << "a leaf tensor";
        msg << ", is at version " << now << "; expected version " << version_
            << " instead. It was saved for " << owner.name()
            << ". Hint: use an out-of-place operation or clone() the tensor before modifying it.";
        throw AutogradError(msg.str());
    }
    return data_;
}

AccumulateGrad::AccumulateGrad(std::shared_ptr<TensorImpl> variable)
    : variable_(std::move(variable)) {
    set_num_outputs(1);
}

TensorList AccumulateGrad::apply(TensorList&& grads) {
    Tensor g = std::move(grads[0]);
    if (!g.defined()) return {};
    AutogradMeta& meta = variable_->meta();
    for (auto& h : meta.hooks) {
        Tensor replaced = h.fn(g);
        if (replaced.defined()) g = std::move(replaced);
    }
    if (!meta.grad) {
        // Steal the buffer when nobody else can see it; otherwise keep a private copy so a later
        // in-place accumulation never writes into another tensor's gradient.
        const bool exclusive = g.impl_ptr().use_count() == 1 &&
                               g.impl()->storage.use_count() == 1 && g.is_contiguous() &&
                               g.shape() == variable_->shape;
        meta.grad = exclusive ? g.impl_ptr() : g.clone().impl_ptr();
    } else {
        Tensor existing(meta.grad);
        existing.add_(g);
    }
    return {};
}

bool any_requires_grad(const TensorList& inputs) {
    if (!is_grad_enabled()) return false;
    for (const Tensor& t : inputs)
        if (t.defined() && t.impl()->requires_grad()) return true;
    return false;
}

static std::shared_ptr<Node> grad_accumulator(const Tensor& t) {
    AutogradMeta& meta = t.impl()->meta();
    if (auto acc = meta.grad_accumulator.lock()) return acc;
    auto acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
    meta.grad_accumulator = acc;
    return acc;
}

Edge gradient_edge(const Tensor& t) {
    if (!t.defined() || !t.impl()->requires_grad()) return {};
    const AutogradMeta& meta = *t.impl()->autograd;
    if (meta.grad_fn) return {meta.grad_fn, meta.output_nr};
    return {grad_accumulator(t), 0};
}

void set_history(Tensor& output, std::shared_ptr<Node> node) {
    AutogradMeta& meta = output.impl()->meta();
    meta.requires_grad = true;
    meta.grad_fn = std::move(node);
    meta.output_nr = 0;
}

namespace {

bool all_finite(const Tensor& t) {
    if (!t.is_floating_point()) return true;
    const Tensor finite = isfinite(t);
    const Tensor bad = logical_not(finite);
    return sum(bad.to(DType::Int64)).item<int64_t>() == 0;
}

void add_gradient(Node& node, uint32_t slot, Tensor&& g) {
    if (node.engine_grads.size() < node.num_outputs()) node.engine_grads.resize(node.num_outputs());
    Tensor& buffer = node.engine_grads[slot];
    if (!buffer.defined())
        buffer = std::move(g);
    else
        buffer = add(buffer, g); // out of place: the buffer may alias another gradient
}

} // namespace

void backward(const TensorList& outputs, const TensorList& grad_outputs, bool retain_graph) {
    if (!grad_outputs.empty() && grad_outputs.size() != outputs.size())
        throw AutogradError("backward(): got " + std::to_string(outputs.size()) + " outputs but " +
                            std::to_string(grad_outputs.size()) + " gradients");
    NoGradGuard no_grad; // gradients are plain values; no graph is built through backward
    const uint64_t epoch = g_epoch.fetch_add(1) + 1;

    std::vector<std::pair<Edge, Tensor>> roots;
    for (size_t i = 0; i < outputs.size(); ++i) {
        const Tensor& out = outputs[i];
        if (!out.defined() || !out.requires_grad())
            throw AutogradError("element " + std::to_string(i) +
                                " of tensors does not require grad and does not have a grad_fn");
        Tensor g = grad_outputs.empty() ? Tensor() : grad_outputs[i];
        if (!g.defined()) {
            if (out.numel() != 1)
                throw AutogradError("grad can be implicitly created only for scalar outputs; got "
                                    "an output of shape " +
                                    out.shape().str() + ": pass a gradient to backward()");
            g = ones_like(out);
        } else if (!(g.shape() == out.shape())) {
            throw ShapeError("backward(): gradient has shape " + g.shape().str() +
                             " but the output has shape " + out.shape().str());
        }
        roots.emplace_back(gradient_edge(out), std::move(g));
    }

    // Count, for every reachable node, how many edges lead into it.
    std::vector<Node*> stack;
    for (auto& [edge, g] : roots) {
        Node* n = edge.fn.get();
        if (n->engine_epoch != epoch) {
            n->engine_epoch = epoch;
            n->engine_dependencies = 0;
            n->engine_grads.clear();
            stack.push_back(n);
        }
    }
    std::vector<Node*> order;
    while (!stack.empty()) {
        Node* n = stack.back();
        stack.pop_back();
        for (const Edge& e : n->next_edges()) {
            Node* next = e.fn.get();
            if (!next) continue;
            if (next->engine_epoch != epoch) {
                next->engine_epoch = epoch;
                next->engine_dependencies = 0;
                next->engine_grads.clear();
                stack.push_back(next);
            }
            ++next->engine_dependencies;
        }
    }

    // Keep the root nodes alive for the whole pass.
    std::vector<std::shared_ptr<Node>> keep;
    for (auto& [edge, g] : roots) {
        keep.push_back(edge.fn);
        add_gradient(*edge.fn, edge.input_nr, std::move(g));
    }
    std::vector<Node*> ready;
    for (auto& [edge, g] : roots)
        if (edge.fn->engine_dependencies == 0 && edge.fn->engine_epoch == epoch) {
            edge.fn->engine_dependencies = -1; // queued once
            ready.push_back(edge.fn.get());
        }

    const bool anomaly = is_anomaly_enabled();
    while (!ready.empty()) {
        Node* n = ready.back();
        ready.pop_back();
        TensorList grads = std::move(n->engine_grads);
        n->engine_grads.clear();
        if (grads.size() < n->num_outputs()) grads.resize(n->num_outputs());
        if (n->has_pre_hooks()) n->run_pre_hooks(grads);
        TensorList input_grads = n->apply(std::move(grads));
        if (!retain_graph) n->release_saved();
        if (anomaly) {
            for (size_t i = 0; i < input_grads.size(); ++i)
                if (input_grads[i].defined() && !all_finite(input_grads[i]))
                    throw AutogradError(std::string("Function '") + n->name() +
                                        "' returned nan or inf values in its " +
                                        std::to_string(i) + "th output (detected by anomaly mode)");
        }
        const auto& edges = n->next_edges();
        for (size_t i = 0; i < edges.size(); ++i) {
            Node* next = edges[i].fn.get();
            if (!next) continue;
            if (i < input_grads.size() && input_grads[i].defined())
                add_gradient(*next, edges[i].input_nr, std::move(input_grads[i]));
            if (--next->engine_dependencies == 0) {
                next->engine_dependencies = -1;
                ready.push_back(next);
            }
        }
    }
}

} // namespace myelin::autograd
