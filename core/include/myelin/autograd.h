#pragma once
// Define-by-run autograd: nodes, grad-mode guards, anomaly mode and gradcheck.
#include <myelin/tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace myelin::autograd {

class Node;

struct Edge {
    std::shared_ptr<Node> fn;
    uint32_t input_nr = 0; // the producer's output index (always 0 today: one output per node)
    bool valid() const { return fn != nullptr; }
};

// A recorded operation with one forward output (ops with several outputs record one node per
// differentiable output). apply() receives the gradient of that output and returns one gradient
// per next edge (undefined where no gradient flows).
class Node : public std::enable_shared_from_this<Node> {
  public:
    Node();
    virtual ~Node();
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;

    virtual const char* name() const = 0; // "AddBackward0", "AccumulateGrad"
    virtual TensorList apply(Tensor&& grad_output) = 0;
    // Frees saved tensors after a backward pass without retain_graph.
    virtual void release_saved() {}

    const std::vector<Edge>& next_edges() const { return next_edges_; }
    std::vector<Edge>& mutable_next_edges() { return next_edges_; }
    uint64_t sequence_nr() const { return sequence_nr_; }

    // Hooks on the output's gradient (non-leaf Tensor::register_hook, retain_grad).
    HookHandle add_pre_hook(GradHook hook);
    bool has_pre_hooks() const { return !pre_hooks_.empty(); }
    void run_pre_hooks(Tensor& grad);

    // True when next edge i leads somewhere, i.e. input i needs a gradient.
    bool needs_input_grad(size_t i) const {
        return i < next_edges_.size() && next_edges_[i].fn != nullptr;
    }

    // Engine scratch space: valid only during one backward pass.
    Tensor engine_grad;
    int engine_dependencies = 0;
    uint64_t engine_epoch = 0;

  private:
    struct PreHook {
        uint64_t id;
        GradHook fn;
    };
    std::vector<Edge> next_edges_;
    std::vector<PreHook> pre_hooks_;
    uint64_t next_hook_id_ = 0;
    uint64_t sequence_nr_;
};

// --- grad mode -------------------------------------------------------------------------------
bool is_grad_enabled();
void set_grad_enabled(bool enabled);

class GradModeGuard {
  public:
    explicit GradModeGuard(bool enabled) : previous_(is_grad_enabled()) {
        set_grad_enabled(enabled);
    }
    ~GradModeGuard() { set_grad_enabled(previous_); }
    GradModeGuard(const GradModeGuard&) = delete;
    GradModeGuard& operator=(const GradModeGuard&) = delete;

  private:
    bool previous_;
};
struct NoGradGuard : GradModeGuard {
    NoGradGuard() : GradModeGuard(false) {}
};
struct EnableGradGuard : GradModeGuard {
    EnableGradGuard() : GradModeGuard(true) {}
};

// --- anomaly mode: backward names the op whose gradient first became NaN/Inf ---------------------
bool is_anomaly_enabled();
void set_detect_anomaly(bool enabled);
class DetectAnomalyGuard {
  public:
    DetectAnomalyGuard() : previous_(is_anomaly_enabled()) { set_detect_anomaly(true); }
    ~DetectAnomalyGuard() { set_detect_anomaly(previous_); }
    DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
    DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

  private:
    bool previous_;
};

// Computes d(outputs)/d(inputs) contracted with grad_outputs; accumulates into leaves' .grad.
void backward(const TensorList& outputs, const TensorList& grad_outputs = {},
              bool retain_graph = false);

// --- gradcheck -------------------------------------------------------------------------------
struct GradcheckResult {
    bool ok = true;
    std::string message; // which input, which element, analytical vs numerical
};
// Compares analytical gradients of fn (float64 inputs that require grad) with central finite
// differences, like torch.autograd.gradcheck. Every output is checked.
GradcheckResult gradcheck(const std::function<TensorList(const TensorList&)>& fn,
                          const TensorList& inputs, double eps = 1e-6, double atol = 1e-5,
                          double rtol = 1e-3);

// Live autograd node count (for leak tests: a dropped graph returns to the previous count).
int64_t live_node_count();

} // namespace myelin::autograd
