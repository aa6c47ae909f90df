// Module: registration, traversal, state_dict, mode/dtype/device changes and hooks.
#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/nn/module.h>

#include "autograd/function.h"
#include "tensor/tensor_impl.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace myelin::nn {

namespace {

std::string join_name(const std::string& prefix, const std::string& name) {
    return prefix.empty() ? name : prefix + "." + name;
}

// PyTorch's _addindent: every line but the first indented by `spaces`.
std::string add_indent(const std::string& s, int spaces) {
    std::string out;
    const std::string pad(static_cast<size_t>(spaces), ' ');
    for (char c : s) {
        out += c;
        if (c == '\n') out += pad;
    }
    return out;
}

// One module call's backward-hook bookkeeping, shared by the identity nodes around its inputs
// and its output (PyTorch's BackwardHook / BackwardHookFunction).
struct BackwardHookState {
    Module* module = nullptr;
    std::shared_ptr<Module> keep_alive; // the graph may outlive the caller's handle
    std::vector<BackwardHook> hooks;
    TensorList grad_inputs;         // one per forward input
    TensorList grad_outputs;        // one per output (Module::outputs() may give several)
    std::vector<int> wrapped_index; // forward input index of each input identity node
    size_t pending = 0;             // input identity nodes still to run in this backward pass
    uint64_t round_epoch = 0;       // the backward pass whose gradients are being collected

    void fire() {
        for (const auto& hook : hooks)
            hook(*module, grad_inputs, grad_outputs);
    }
};

// Identity node: passes the gradient through unchanged and reports it to the hook state. A Node of
// its own (not FunctionNode) because it must also see undefined gradients to keep its count.
class BackwardHookNode final : public autograd::Node {
  public:
    BackwardHookNode(std::shared_ptr<BackwardHookState> state, int input_slot)
        : state_(std::move(state)), input_slot_(input_slot) {}
    const char* name() const override { return "BackwardHookFunctionBackward"; }
    TensorList apply(Tensor&& grad) override {
        BackwardHookState& s = *state_;
        if (input_slot_ < 0) {
            // Output side: runs first in backward; the first output node of a backward pass
            // starts a new round of gradients (several outputs each have a node).
            if (s.round_epoch != engine_epoch) {
                s.round_epoch = engine_epoch;
                std::fill(s.grad_outputs.begin(), s.grad_outputs.end(), Tensor());
                std::fill(s.grad_inputs.begin(), s.grad_inputs.end(), Tensor());
                s.pending = s.wrapped_index.size();
            }
            s.grad_outputs[static_cast<size_t>(-1 - input_slot_)] = grad;
            if (s.wrapped_index.empty()) s.fire(); // no input needs a gradient: report now
        } else {
            s.grad_inputs[static_cast<size_t>(s.wrapped_index[static_cast<size_t>(input_slot_)])] =
                grad;
            if (s.pending > 0 && --s.pending == 0) s.fire();
        }
        return {std::move(grad)};
    }

  private:
    std::shared_ptr<BackwardHookState> state_;
    int input_slot_; // -1 - k: output k
};

// A new handle aliasing `t`'s data whose history is an identity node leading to `t`.
Tensor wrap_identity(const Tensor& t, std::shared_ptr<BackwardHookState> state, int slot) {
    Tensor alias = t.detach();
    auto node = std::make_shared<BackwardHookNode>(std::move(state), slot);
    node->mutable_next_edges().push_back(autograd::gradient_edge(t));
    autograd::set_history(alias, std::move(node));
    return alias;
}

template <typename Entries> void remove_hook(Entries& entries, uint64_t id) {
    std::erase_if(entries, [id](const auto& e) { return e.id == id; });
}

} // namespace

Module::Module(std::string type_name) : type_name_(std::move(type_name)) {}
Module::~Module() = default;

Tensor Module::operator()(const Tensor& x) {
    return (*this)(TensorList{x});
}

void Module::check_input_count(const TensorList& inputs) const {
    const int n = num_inputs();
    if (n >= 0 && static_cast<int>(inputs.size()) != n)
        throw Error(type_name_ + "(" + extra_repr() + "): expected " + std::to_string(n) +
                    " input" + (n == 1 ? "" : "s") + ", got " + std::to_string(inputs.size()));
}

Tensor Module::operator()(const TensorList& inputs) {
    check_input_count(inputs);
    if (forward_pre_hooks_.empty() && forward_hooks_.empty() && backward_hooks_.empty()) [[likely]]
        return forward(inputs);
    return run_forward(inputs);
}

TensorList Module::outputs(const TensorList& inputs) {
    check_input_count(inputs);
    if (forward_pre_hooks_.empty() && forward_hooks_.empty() && backward_hooks_.empty())
        return forward_outputs(inputs);
    return run_hooked(inputs, true);
}

Tensor Module::run_forward(const TensorList& inputs) {
    return run_hooked(inputs, false).at(0);
}

TensorList Module::run_hooked(const TensorList& given, bool all_outputs) {
    TensorList inputs = given;
    if (!forward_pre_hooks_.empty()) {
        const auto hooks = forward_pre_hooks_; // a hook may remove itself
        for (const auto& h : hooks) {
            TensorList replaced = h.fn(*this, inputs);
            if (!replaced.empty()) inputs = std::move(replaced);
        }
    }
    std::shared_ptr<BackwardHookState> state;
    if (!backward_hooks_.empty() && autograd::is_grad_enabled()) {
        state = std::make_shared<BackwardHookState>();
        state->module = this;
        state->keep_alive = weak_from_this().lock();
        for (const auto& h : backward_hooks_)
            state->hooks.push_back(h.fn);
        state->grad_inputs.resize(inputs.size());
        for (size_t i = 0; i < inputs.size(); ++i) {
            if (!inputs[i].defined() || !inputs[i].requires_grad()) continue;
            const int slot = static_cast<int>(state->wrapped_index.size());
            state->wrapped_index.push_back(static_cast<int>(i));
            inputs[i] = wrap_identity(inputs[i], state, slot);
        }
    }
    TensorList outs = all_outputs ? forward_outputs(inputs) : TensorList{forward(inputs)};
    if (outs.empty()) throw Error(type_name_ + "(" + extra_repr() + "): forward gave no output");
    if (!forward_hooks_.empty()) {
        const auto hooks = forward_hooks_;
        for (const auto& h : hooks) {
            Tensor replaced = h.fn(*this, inputs, outs[0]);
            if (replaced.defined()) outs[0] = std::move(replaced);
        }
    }
    if (state) {
        state->grad_outputs.resize(outs.size());
        for (size_t k = 0; k < outs.size(); ++k)
            if (outs[k].defined() && outs[k].requires_grad())
                outs[k] = wrap_identity(outs[k], state, -1 - static_cast<int>(k));
    }
    return outs;
}

// --- registration ------------------------------------------------------------------------------

void Module::check_new_name(const std::string& name, const char* what) const {
    if (name.empty() || name.find('.') != std::string::npos)
        throw Error(type_name_ + ": " + what + " name '" + name +
                    "' must be non-empty and contain no '.'");
    auto taken = [&](const auto& list, auto key) {
        return std::any_of(list.begin(), list.end(), [&](const auto& e) { return key(e) == name; });
    };
    if (taken(parameters_, [](const Slot& s) { return s.name; }) ||
        taken(buffers_, [](const Slot& s) { return s.name; }) ||
        taken(children_, [](const auto& c) { return c.first; }))
        throw Error(type_name_ + ": cannot register " + what + " '" + name +
                    "': the name is already taken");
}

Tensor& Module::register_parameter(const std::string& name, Tensor value, bool requires_grad) {
    check_new_name(name, "parameter");
    if (value.defined() && requires_grad != value.requires_grad())
        value.requires_grad_(requires_grad);
    parameters_.push_back({name, std::move(value), true});
    return parameters_.back().value;
}

Tensor& Module::register_buffer(const std::string& name, Tensor value, bool persistent) {
    check_new_name(name, "buffer");
    buffers_.push_back({name, std::move(value), persistent});
    return buffers_.back().value;
}

void Module::add_child(const std::string& name, ModulePtr module) {
    check_new_name(name, "module");
    if (!module) throw Error(type_name_ + ": cannot register a null module as '" + name + "'");
    children_.emplace_back(name, std::move(module));
}

void Module::replace_child(const std::string& name, ModulePtr module) {
    if (!module) throw Error(type_name_ + ": cannot put a null module in place of '" + name + "'");
    for (auto& [child_name, child] : children_)
        if (child_name == name) {
            child = std::move(module);
            return;
        }
    throw Error(type_name_ + " has no child module '" + name + "'");
}

Tensor& Module::param(const std::string& name) {
    for (auto& s : parameters_)
        if (s.name == name) return s.value;
    throw Error(type_name_ + " has no parameter '" + name + "'");
}

Tensor& Module::buffer(const std::string& name) {
    for (auto& s : buffers_)
        if (s.name == name) return s.value;
    throw Error(type_name_ + " has no buffer '" + name + "'");
}

ModulePtr Module::child(const std::string& name) const {
    for (const auto& [n, m] : children_)
        if (n == name) return m;
    throw Error(type_name_ + " has no submodule '" + name + "'");
}

// --- traversal ---------------------------------------------------------------------------------

void Module::collect_parameters(const std::string& prefix,
                                std::vector<std::pair<std::string, Tensor>>& out,
                                bool recurse) const {
    for (const auto& s : parameters_)
        if (s.value.defined()) out.emplace_back(join_name(prefix, s.name), s.value);
    if (!recurse) return;
    for (const auto& [name, m] : children_)
        m->collect_parameters(join_name(prefix, name), out, true);
}

void Module::collect_buffers(const std::string& prefix,
                             std::vector<std::pair<std::string, Tensor>>& out, bool recurse,
                             bool persistent_only) const {
    for (const auto& s : buffers_)
        if (s.value.defined() && (s.persistent || !persistent_only))
            out.emplace_back(join_name(prefix, s.name), s.value);
    if (!recurse) return;
    for (const auto& [name, m] : children_)
        m->collect_buffers(join_name(prefix, name), out, true, persistent_only);
}

void Module::collect_modules(const std::string& prefix,
                             std::vector<std::pair<std::string, ModulePtr>>& out) {
    for (const auto& [name, child] : children_) {
        const std::string path = join_name(prefix, name);
        const ModulePtr& m = child; // a lambda may not capture a structured binding (clang 14)
        // A module reachable twice is listed once, as PyTorch's memo does.
        if (std::none_of(out.begin(), out.end(), [&](const auto& e) { return e.second == m; })) {
            out.emplace_back(path, m);
            m->collect_modules(path, out);
        }
    }
}

namespace {
// Shared tensors (tied weights) are listed once, under their first name, as PyTorch does.
std::vector<std::pair<std::string, Tensor>> dedup(std::vector<std::pair<std::string, Tensor>> v) {
    std::unordered_set<const TensorImpl*> seen;
    std::erase_if(v, [&](const auto& e) { return !seen.insert(e.second.impl()).second; });
    return v;
}
} // namespace

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
    std::vector<std::pair<std::string, Tensor>> out;
    collect_parameters("", out, recurse);
    return dedup(std::move(out));
}

std::vector<Tensor> Module::parameters(bool recurse) const {
    std::vector<Tensor> out;
    for (auto& [name, t] : named_parameters(recurse))
        out.push_back(std::move(t));
    return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
    std::vector<std::pair<std::string, Tensor>> out;
    collect_buffers("", out, recurse, false);
    return dedup(std::move(out));
}

std::vector<Tensor> Module::buffers(bool recurse) const {
    std::vector<Tensor> out;
    for (auto& [name, t] : named_buffers(recurse))
        out.push_back(std::move(t));
    return out;
}

std::vector<std::pair<std::string, ModulePtr>> Module::named_children() const {
    return children_;
}

std::vector<ModulePtr> Module::children() const {
    std::vector<ModulePtr> out;
    out.reserve(children_.size());
    for (const auto& c : children_)
        out.push_back(c.second);
    return out;
}

std::vector<std::pair<std::string, ModulePtr>> Module::named_modules() {
    std::vector<std::pair<std::string, ModulePtr>> out;
    // Self is listed with a null-owning alias when not held by a shared_ptr.
    ModulePtr self = weak_from_this().lock();
    if (!self) self = ModulePtr(ModulePtr(), this);
    out.emplace_back("", self);
    collect_modules("", out);
    return out;
}

void Module::apply(const std::function<void(Module&)>& fn) {
    for (auto& c : children_)
        c.second->apply(fn);
    fn(*this);
}

// --- mode, device, dtype, gradients --------------------------------------------------------------

void Module::train(bool on) {
    training_ = on;
    on_train(on);
    for (auto& c : children_)
        c.second->train(on);
}

namespace {
void convert_in_place(Tensor& t, const std::function<Tensor(const Tensor&)>& convert) {
    if (!t.defined()) return;
    autograd::NoGradGuard no_grad;
    Tensor converted = convert(t);
    if (!converted.is_same(t)) set_data(t, converted);
    if (Tensor g = t.grad(); g.defined()) {
        Tensor cg = convert(g);
        if (!cg.is_same(g)) set_data(g, cg);
    }
}
} // namespace

void Module::to(Device device) {
    // An unusable device fails here, before any tensor has moved.
    myelin::detail::device_backend(device, (type_name_ + ".to").c_str());
    auto convert = [device](const Tensor& x) { return x.to(device); };
    apply([&](Module& m) {
        for (auto& s : m.parameters_)
            convert_in_place(s.value, convert);
        for (auto& s : m.buffers_)
            convert_in_place(s.value, convert);
    });
}

void Module::to(DType dtype) {
    if (!is_floating(dtype))
        throw DTypeError(type_name_ + ".to(): only floating point dtypes are allowed, got " +
                         dtype_name(dtype));
    auto convert = [dtype](const Tensor& x) { return x.is_floating_point() ? x.to(dtype) : x; };
    apply([&](Module& m) {
        for (auto& s : m.parameters_)
            convert_in_place(s.value, convert);
        for (auto& s : m.buffers_)
            convert_in_place(s.value, convert);
    });
}

void Module::zero_grad() {
    for (Tensor& p : parameters())
        p.set_grad(Tensor());
}

void Module::requires_grad_(bool on) {
    for (Tensor& p : parameters())
        p.requires_grad_(on);
}

int64_t Module::num_parameters(bool trainable_only) const {
    int64_t n = 0;
    for (const Tensor& p : parameters())
        if (!trainable_only || p.requires_grad()) n += p.numel();
    return n;
}

// --- hooks -------------------------------------------------------------------------------------

namespace {
// The remover must not dangle when the module dies first: hold it weakly when it is shared.
template <typename F> HookHandle make_handle(Module* self, F&& remove_from) {
    std::weak_ptr<Module> weak = self->weak_from_this();
    if (weak.expired()) return HookHandle([self, remove_from] { remove_from(*self); });
    return HookHandle([weak, remove_from] {
        if (auto m = weak.lock()) remove_from(*m);
    });
}
} // namespace

HookHandle Module::register_forward_pre_hook(ForwardPreHook hook) {
    const uint64_t id = next_hook_id_++;
    forward_pre_hooks_.push_back({id, std::move(hook)});
    return make_handle(this, [id](Module& m) { remove_hook(m.forward_pre_hooks_, id); });
}

HookHandle Module::register_forward_hook(ForwardHook hook) {
    const uint64_t id = next_hook_id_++;
    forward_hooks_.push_back({id, std::move(hook)});
    return make_handle(this, [id](Module& m) { remove_hook(m.forward_hooks_, id); });
}

HookHandle Module::register_full_backward_hook(BackwardHook hook) {
    const uint64_t id = next_hook_id_++;
    backward_hooks_.push_back({id, std::move(hook)});
    return make_handle(this, [id](Module& m) { remove_hook(m.backward_hooks_, id); });
}

// --- state -------------------------------------------------------------------------------------

StateDict Module::state_dict() const {
    // PyTorch's _save_to_state_dict order: own parameters, own persistent buffers, then children.
    // Tied tensors appear under every name, as in PyTorch.
    StateDict out;
    std::function<void(const Module&, const std::string&)> save = [&](const Module& m,
                                                                      const std::string& prefix) {
        for (const auto& s : m.parameters_)
            if (s.value.defined()) out.emplace_back(join_name(prefix, s.name), s.value);
        for (const auto& s : m.buffers_)
            if (s.value.defined() && s.persistent)
                out.emplace_back(join_name(prefix, s.name), s.value);
        for (const auto& [name, c] : m.children_)
            save(*c, join_name(prefix, name));
    };
    save(*this, "");
    return out;
}

std::string LoadStateDictResult::text() const {
    std::string what;
    for (const auto& k : missing_keys)
        what += "\n  missing: " + k;
    for (const auto& k : unexpected_keys)
        what += "\n  unexpected: " + k;
    for (const auto& k : shape_mismatches)
        what += "\n  shape: " + k;
    return what;
}

LoadStateDictResult Module::load_state_dict(const StateDict& state, bool strict) {
    const StateDict mine = state_dict();
    std::unordered_map<std::string, const Tensor*> given;
    given.reserve(state.size());
    for (const auto& [key, value] : state)
        given[key] = &value;

    LoadStateDictResult result;
    std::vector<std::pair<Tensor, const Tensor*>> copies;
    std::unordered_set<std::string> used;
    for (const auto& [key, target] : mine) {
        auto it = given.find(key);
        if (it == given.end()) {
            result.missing_keys.push_back(key);
            continue;
        }
        used.insert(key);
        const Tensor& src = *it->second;
        if (!src.defined() || !(src.shape() == target.shape())) {
            result.shape_mismatches.push_back(key + ": expected " + target.shape().str() +
                                              ", got " +
                                              (src.defined() ? src.shape().str() : "undefined"));
            continue;
        }
        copies.emplace_back(target, &src);
    }
    for (const auto& [key, value] : state)
        if (!used.count(key)) result.unexpected_keys.push_back(key);

    if (strict && !result.ok()) {
        // Nothing is copied: a failed strict load leaves the model as it was.
        std::string msg = "Error(s) in loading state_dict for " + type_name_ + ":";
        auto list = [&](const char* title, const std::vector<std::string>& keys) {
            if (keys.empty()) return;
            msg += std::string("\n\t") + title + ": ";
            for (size_t i = 0; i < keys.size(); ++i)
                msg += (i ? ", \"" : "\"") + keys[i] + "\"";
            msg += ".";
        };
        list("Missing key(s) in state_dict", result.missing_keys);
        list("Unexpected key(s) in state_dict", result.unexpected_keys);
        for (const auto& m : result.shape_mismatches)
            msg += "\n\tsize mismatch for " + m + ".";
        throw Error(msg);
    }
    autograd::NoGradGuard no_grad;
    for (auto& [target, src] : copies)
        target.copy_(*src);
    return result;
}

// --- printing ----------------------------------------------------------------------------------

std::string Module::str() const {
    std::vector<std::string> lines;
    const std::string extra = extra_repr();
    size_t extra_lines = 0;
    if (!extra.empty()) {
        size_t start = 0;
        for (;;) {
            const size_t nl = extra.find('\n', start);
            lines.push_back(extra.substr(start, nl - start));
            ++extra_lines;
            if (nl == std::string::npos) break;
            start = nl + 1;
        }
    }
    for (const auto& [name, m] : children_)
        lines.push_back("(" + name + "): " + add_indent(m->str(), 2));
    std::string s = type_name_ + "(";
    if (!lines.empty()) {
        if (extra_lines == 1 && children_.empty()) {
            s += lines[0];
        } else {
            s += "\n  ";
            for (size_t i = 0; i < lines.size(); ++i)
                s += (i ? "\n  " : "") + lines[i];
            s += "\n";
        }
    }
    return s + ")";
}

// --- set_data ----------------------------------------------------------------------------------

void set_data(Tensor& dst, const Tensor& src) {
    if (!dst.defined() || !src.defined()) throw Error("set_data(): both tensors must be defined");
    TensorImpl& d = *dst.impl();
    const TensorImpl& s = *src.impl();
    if (&d == &s) return;
    if (d.requires_grad() && !is_floating(s.dtype))
        throw DTypeError(std::string("set_data(): a tensor that requires grad cannot hold ") +
                         dtype_name(s.dtype) + " data");
    d.storage = s.storage;
    d.shape = s.shape;
    d.strides = s.strides;
    d.offset = s.offset;
    d.numel = s.numel;
    d.dtype = s.dtype;
    d.device = s.device;
    d.contiguous = s.contiguous;
    d.view_base = s.view_base;
}

} // namespace myelin::nn
