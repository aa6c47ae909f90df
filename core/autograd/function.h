#pragma once
// Internal: how ops record themselves in the autograd graph.
#include "tensor/tensor_impl.h"

#include <optional>
#include <utility>

namespace myelin::autograd {

// A tensor saved for backward, with the storage version it had when saved. Outputs of the
// recording node are saved as detached aliases so the graph never holds a cycle.
class SavedTensor {
  public:
    SavedTensor() = default;
    explicit SavedTensor(const Tensor& t, bool is_output = false);
    // Throws AutogradError (naming `owner`) when the tensor was modified in place since saving.
    Tensor unpack(const Node& owner) const;

  private:
    Tensor data_;
    uint32_t version_ = 0;
    uint32_t output_nr_ = 0;
    const char* producer_ = nullptr; // grad_fn name of the saved tensor, for messages
    bool is_output_ = false;
};

[[noreturn]] void throw_released(const Node& node);

// A node whose backward is a lambda `TensorList(const Tensor& grad, const Node& self)` returning
// one gradient per input (undefined where none is needed). Every op here has one output.
template <typename F> class FunctionNode final : public Node {
  public:
    FunctionNode(const char* name, F&& fn) : name_(name), fn_(std::move(fn)) {}
    const char* name() const override { return name_; }
    TensorList apply(Tensor&& grad) override {
        if (!fn_) throw_released(*this);
        if (!grad.defined()) return TensorList(next_edges().size());
        return (*fn_)(grad, *this);
    }
    void release_saved() override { fn_.reset(); }

  private:
    const char* name_;
    std::optional<F> fn_;
};

// The node that accumulates into a leaf's .grad (running the leaf's hooks first).
class AccumulateGrad final : public Node {
  public:
    explicit AccumulateGrad(std::shared_ptr<TensorImpl> variable);
    const char* name() const override { return "AccumulateGrad"; }
    TensorList apply(Tensor&& grad) override;
    const std::shared_ptr<TensorImpl>& variable() const { return variable_; }

  private:
    std::shared_ptr<TensorImpl> variable_;
};

// True when grad mode is on and any input requires grad.
inline bool needs_grad(std::initializer_list<const Tensor*> inputs) {
    if (!is_grad_enabled()) return false;
    for (const Tensor* t : inputs)
        if (t->defined() && t->impl()->requires_grad()) return true;
    return false;
}
bool any_requires_grad(const TensorList& inputs);

Edge gradient_edge(const Tensor& t);
// backward() over raw arrays (grad_outputs may be null: implicit ones for scalars).
void run_backward(const Tensor* outputs, const Tensor* grad_outputs, size_t n, bool retain_graph);
// Makes `output` a non-leaf produced by `node` (output_nr 0).
void set_history(Tensor& output, std::shared_ptr<Node> node);

template <typename F>
void record(const char* name, std::initializer_list<const Tensor*> inputs, Tensor& output, F&& fn) {
    auto node = std::make_shared<FunctionNode<std::decay_t<F>>>(name, std::forward<F>(fn));
    auto& edges = node->mutable_next_edges();
    edges.reserve(inputs.size());
    for (const Tensor* t : inputs)
        edges.push_back(gradient_edge(*t));
    set_history(output, std::move(node));
}

template <typename F>
void record_list(const char* name, const TensorList& inputs, Tensor& output, F&& fn) {
    auto node = std::make_shared<FunctionNode<std::decay_t<F>>>(name, std::forward<F>(fn));
    auto& edges = node->mutable_next_edges();
    edges.reserve(inputs.size());
    for (const Tensor& t : inputs)
        edges.push_back(gradient_edge(t));
    set_history(output, std::move(node));
}

} // namespace myelin::autograd
