#pragma once
// Module: PyTorch's nn.Module in C++. Ordered named parameters, buffers and children give dotted
// state_dict keys identical to PyTorch's; train/eval; forward pre-hooks, forward hooks and full
// backward hooks (what the studio uses to capture activations and gradients — free when none is
// registered).
#include <myelin/tensor.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace myelin::nn {

class Module;
using ModulePtr = std::shared_ptr<Module>;
using StateDict = std::vector<std::pair<std::string, Tensor>>; // ordered like PyTorch's

// May return replacement inputs (empty list: keep them).
using ForwardPreHook = std::function<TensorList(Module& module, const TensorList& inputs)>;
// May return a replacement output (undefined Tensor: keep it).
using ForwardHook =
    std::function<Tensor(Module& module, const TensorList& inputs, const Tensor& output)>;
// grad_input: one gradient per forward input (undefined where the input needs none);
// grad_output: the gradient of the output (one per output of Module::outputs()). Observes only.
using BackwardHook = std::function<void(Module& module, const TensorList& grad_input,
                                        const TensorList& grad_output)>;

// What load_state_dict found; with strict loading any problem throws an Error listing all of them.
struct LoadStateDictResult {
    std::vector<std::string> missing_keys;
    std::vector<std::string> unexpected_keys;
    std::vector<std::string> shape_mismatches; // "fc.weight: expected [10, 4], got [4, 10]"
    bool ok() const {
        return missing_keys.empty() && unexpected_keys.empty() && shape_mismatches.empty();
    }
    // Every problem on its own line ("\n  missing: fc.bias", ...); empty when ok().
    std::string text() const;
};

class Module : public std::enable_shared_from_this<Module> {
  public:
    explicit Module(std::string type_name);
    virtual ~Module();
    Module(const Module&) = delete;
    Module& operator=(const Module&) = delete;

    const std::string& type_name() const { return type_name_; }

    // Runs the hooks around forward(). Single-input modules take one tensor.
    Tensor operator()(const Tensor& x);
    Tensor operator()(const TensorList& inputs);
    virtual Tensor forward(const TensorList& inputs) = 0;
    // How many inputs forward() takes (-1: any number, e.g. Add, Concat).
    virtual int num_inputs() const { return 1; }

    // Modules with several outputs (RNN: the sequence and the final states) override these two;
    // forward() then returns output 0. outputs() runs the hooks like operator(): forward hooks
    // see (and may replace) output 0, backward hooks get one grad_output per output.
    virtual int num_outputs() const { return 1; }
    virtual TensorList forward_outputs(const TensorList& inputs) { return {forward(inputs)}; }
    TensorList outputs(const TensorList& inputs);

    // --- registration (names must be unique within this module and contain no '.') ---
    Tensor& register_parameter(const std::string& name, Tensor value, bool requires_grad = true);
    // persistent = false keeps the buffer out of state_dict (PyTorch's non-persistent buffers).
    Tensor& register_buffer(const std::string& name, Tensor value, bool persistent = true);
    template <typename M>
    std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
        add_child(name, module);
        return module;
    }
    void add_child(const std::string& name, ModulePtr module);
    // Puts `module` in place of the child called `name` (same name, same position): a layer
    // swapped for its quantized form. Throws Error when there is no such child.
    void replace_child(const std::string& name, ModulePtr module);

    // Direct access by local name (throws Error naming the module when absent).
    Tensor& param(const std::string& name);
    Tensor& buffer(const std::string& name);
    ModulePtr child(const std::string& name) const;

    // --- traversal (dotted names, registration order, like PyTorch) ---
    std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
    std::vector<Tensor> parameters(bool recurse = true) const;
    std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
    std::vector<Tensor> buffers(bool recurse = true) const;
    std::vector<std::pair<std::string, ModulePtr>> named_children() const;
    std::vector<ModulePtr> children() const;
    // Self first with name "", then every descendant with its dotted path.
    std::vector<std::pair<std::string, ModulePtr>> named_modules();
    void apply(const std::function<void(Module&)>& fn); // children first, then self

    // --- mode, device, dtype, gradients ---
    void train(bool on = true);
    void eval() { train(false); }
    bool is_training() const { return training_; }
    // Converts parameters and buffers in place (tensor handles held elsewhere stay valid);
    // to(dtype) converts floating point tensors only, as PyTorch.
    void to(Device device);
    void to(DType dtype);
    void zero_grad(); // sets every parameter's .grad to undefined (PyTorch's set_to_none=True)
    void requires_grad_(bool on = true); // freezing
    int64_t num_parameters(bool trainable_only = false) const;

    // --- hooks ---
    HookHandle register_forward_pre_hook(ForwardPreHook hook);
    HookHandle register_forward_hook(ForwardHook hook);
    HookHandle register_full_backward_hook(BackwardHook hook);
    // Whether any hook is registered (a fused path that skips this module's own call may run
    // only when nothing observes it).
    bool has_hooks() const {
        return !forward_pre_hooks_.empty() || !forward_hooks_.empty() || !backward_hooks_.empty();
    }

    // --- state ---
    StateDict state_dict() const;
    // Copies values into the existing tensors (shapes must match; dtypes convert).
    LoadStateDictResult load_state_dict(const StateDict& state, bool strict = true);

    // PyTorch-style repr: "Sequential(\n  (0): Linear(in_features=4, out_features=2, bias=True)\n)"
    std::string str() const;
    virtual std::string extra_repr() const { return {}; }

  protected:
    // Called by train(); layers with mode-dependent state may override.
    virtual void on_train(bool) {}

  private:
    struct Slot {
        std::string name;
        Tensor value;
        bool persistent = true;
    };
    template <typename H> struct HookEntry {
        uint64_t id;
        H fn;
    };
    Tensor run_forward(const TensorList& inputs);
    // The hooks around forward() (all_outputs false) or forward_outputs() (true).
    TensorList run_hooked(const TensorList& inputs, bool all_outputs);
    void check_input_count(const TensorList& inputs) const;
    void collect_parameters(const std::string& prefix,
                            std::vector<std::pair<std::string, Tensor>>& out, bool recurse) const;
    void collect_buffers(const std::string& prefix,
                         std::vector<std::pair<std::string, Tensor>>& out, bool recurse,
                         bool persistent_only) const;
    void collect_modules(const std::string& prefix,
                         std::vector<std::pair<std::string, ModulePtr>>& out);
    void check_new_name(const std::string& name, const char* what) const;

    std::string type_name_;
    bool training_ = true;
    std::vector<Slot> parameters_;
    std::vector<Slot> buffers_;
    std::vector<std::pair<std::string, ModulePtr>> children_;
    std::vector<HookEntry<ForwardPreHook>> forward_pre_hooks_;
    std::vector<HookEntry<ForwardHook>> forward_hooks_;
    std::vector<HookEntry<BackwardHook>> backward_hooks_;
    uint64_t next_hook_id_ = 0;
};

// Replaces the data of `dst` (storage, dtype, device, geometry) with `src`'s, keeping the handle
// and its autograd identity: what Module::to and optimizers' state loading need.
void set_data(Tensor& dst, const Tensor& src);

} // namespace myelin::nn
