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

bool is_grad_enabled() {
    return g_grad_enabled;
}
void set_grad_enabled(bool enabled) {
    g_grad_enabled = enabled;
}
bool is_anomaly_enabled() {
    return g_anomaly.load(std::memory_order_relaxed);
}
void set_detect_anomaly(bool enabled) {
    g_anomaly = enabled;
}
int64_t live_node_count() {
    return g_live_nodes.load();
}

Node::Node() : sequence_nr_(g_sequence.fetch_add(1, std::memory_order_relaxed)) {
    g_live_nodes.fetch_add(1, std::memory_order_relaxed);
}
Node::~Node() {
    g_live_nodes.fetch_sub(1, std::memory_order_relaxed);
}

HookHandle Node::add_pre_hook(GradHook hook) {
    const uint64_t id = next_hook_id_++;
    pre_hooks_.push_back({id, std::move(hook)});
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

void Node::run_pre_hooks(Tensor& grad) {
    for (auto& h : pre_hooks_) {
        if (!grad.defined()) return;
        Tensor replaced = h.fn(grad);
        if (replaced.defined()) grad = std::move(replaced);
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
        if (!is_output && t.impl()->autograd->grad_fn)
            producer_ = t.impl()->autograd->grad_fn->name();
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
    : variable_(std::move(variable)) {}

TensorList AccumulateGrad::apply(Tensor&& grad) {
    Tensor g = std::move(grad);
    if (!g.defined()) return {};
    AutogradMeta& meta = variable_->meta();
    for (auto& h : meta.hooks) {
        Tensor replaced = h.fn(g);
        if (replaced.defined()) g = std::move(replaced);
    }
    if (!meta.grad) {
        // Steal the buffer when nobody else can see it; otherwise keep a private copy so a later
        // in-place accumulation never writes into another tensor's gradient. A view whose root
        // base nobody else holds (a transposed product, as linear's weight gradient is) owns
        // its buffer too: drop the root first.
        if (g.impl_ptr().use_count() == 1 && g.impl()->view_base &&
            g.impl()->view_base.use_count() == 1)
            g.impl()->view_base.reset();
        const bool exclusive = g.impl_ptr().use_count() == 1 &&
                               g.impl()->storage.use_count() == 1 && g.is_contiguous() &&
                               g.shape() == variable_->shape;
        meta.grad = exclusive ? g.impl_ptr() : g.clone().impl_ptr();
    } else {
        Tensor existing(meta.grad);
        if (existing.dtype() == g.dtype() && existing.shape() == g.shape() &&
            existing.device() == g.device() && !g.shares_storage(existing)) {
            // The common case: one kernel call, no promotion or autograd bookkeeping.
            detail::backend_for(existing).binary(backend::BinaryOp::Add, detail::view_of(existing),
                                                 detail::view_of(g), detail::view_of(existing),
                                                 {1.0, 0.0});
            detail::bump_version(existing);
        } else {
            existing.add_(g);
        }
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
    return sum(logical_not(isfinite(t)).to(DType::Int64)).item<int64_t>() == 0;
}

void add_gradient(Node& node, Tensor&& g) {
    if (!node.engine_grad.defined())
        node.engine_grad = std::move(g);
    else
        node.engine_grad = add(node.engine_grad, g); // out of place: it may alias another gradient
}

// Scratch vectors reused across backward calls on this thread (no allocation per call).
struct EngineScratch {
    std::vector<Node*> stack;
    std::vector<Node*> ready;
    std::vector<std::shared_ptr<Node>> roots;
};

} // namespace

void run_backward(const Tensor* outputs, const Tensor* grad_outputs, size_t n, bool retain_graph) {
    NoGradGuard no_grad; // gradients are plain values; no graph is built through backward
    const uint64_t epoch = g_epoch.fetch_add(1, std::memory_order_relaxed) + 1;
    thread_local EngineScratch scratch;
    // A hook may itself call backward: use this frame's own scratch when nested.
    EngineScratch local;
    static thread_local int depth = 0;
    EngineScratch& s = depth == 0 ? scratch : local;
    ++depth;
    struct DepthGuard {
        EngineScratch& s;
        ~DepthGuard() {
            --depth;
            s.stack.clear();
            s.ready.clear();
            s.roots.clear();
        }
    } guard{s};

    for (size_t i = 0; i < n; ++i) {
        const Tensor& out = outputs[i];
        if (!out.defined() || !out.requires_grad())
            throw AutogradError("element " + std::to_string(i) +
                                " of tensors does not require grad and does not have a grad_fn");
        const Tensor& given = grad_outputs ? grad_outputs[i] : Tensor();
        if (given.defined() && !(given.shape() == out.shape()))
            throw ShapeError("backward(): gradient has shape " + given.shape().str() +
                             " but the output has shape " + out.shape().str());
        if (!given.defined() && out.numel() != 1)
            throw AutogradError("grad can be implicitly created only for scalar outputs; got an "
                                "output of shape " +
                                out.shape().str() + ": pass a gradient to backward()");
        s.roots.push_back(gradient_edge(out).fn);
    }

    // Count, for every reachable node, how many edges lead into it.
    for (const auto& root : s.roots) {
        Node* r = root.get();
        if (r->engine_epoch != epoch) {
            r->engine_epoch = epoch;
            r->engine_dependencies = 0;
            r->engine_grad = Tensor();
            s.stack.push_back(r);
        }
    }
    while (!s.stack.empty()) {
        Node* node = s.stack.back();
        s.stack.pop_back();
        for (const Edge& e : node->next_edges()) {
            Node* next = e.fn.get();
            if (!next) continue;
            if (next->engine_epoch != epoch) {
                next->engine_epoch = epoch;
                next->engine_dependencies = 0;
                next->engine_grad = Tensor();
                s.stack.push_back(next);
            }
            ++next->engine_dependencies;
        }
    }

    for (size_t i = 0; i < n; ++i) {
        const Tensor& given = grad_outputs ? grad_outputs[i] : Tensor();
        add_gradient(*s.roots[i], given.defined() ? Tensor(given) : ones_like(outputs[i]));
    }
    for (const auto& root : s.roots)
        if (root->engine_dependencies == 0) {
            root->engine_dependencies = -1; // queued once
            s.ready.push_back(root.get());
        }

    const bool anomaly = is_anomaly_enabled();
    while (!s.ready.empty()) {
        Node* node = s.ready.back();
        s.ready.pop_back();
        Tensor grad = std::move(node->engine_grad);
        node->engine_grad = Tensor();
        if (node->has_pre_hooks()) node->run_pre_hooks(grad);
        TensorList input_grads = node->apply(std::move(grad));
        if (!retain_graph) node->release_saved();
        if (anomaly) {
            for (size_t i = 0; i < input_grads.size(); ++i)
                if (input_grads[i].defined() && !all_finite(input_grads[i]))
                    throw AutogradError(std::string("Function '") + node->name() +
                                        "' returned nan or inf values in its " + std::to_string(i) +
                                        "th output (detected by anomaly mode)");
        }
        const auto& edges = node->next_edges();
        for (size_t i = 0; i < edges.size(); ++i) {
            Node* next = edges[i].fn.get();
            if (!next) continue;
            if (i < input_grads.size() && input_grads[i].defined())
                add_gradient(*next, std::move(input_grads[i]));
            if (--next->engine_dependencies == 0) {
                next->engine_dependencies = -1;
                s.ready.push_back(next);
            }
        }
    }
}

void backward(const TensorList& outputs, const TensorList& grad_outputs, bool retain_graph) {
    if (!grad_outputs.empty() && grad_outputs.size() != outputs.size())
        throw AutogradError("backward(): got " + std::to_string(outputs.size()) + " outputs but " +
                            std::to_string(grad_outputs.size()) + " gradients");
    run_backward(outputs.data(), grad_outputs.empty() ? nullptr : grad_outputs.data(),
                 outputs.size(), retain_graph);
}

} // namespace myelin::autograd
