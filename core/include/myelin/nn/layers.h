#pragma once
// Layers and containers with PyTorch's names, constructor arguments, defaults, attribute names,
// parameter layouts, default initialisation and repr. Create them with std::make_shared:
//
//   auto net = std::make_shared<nn::Sequential>(
//       std::make_shared<nn::Conv2d>(1, 16, 3, nn::Conv2dOptions{.padding = 1}),
//       std::make_shared<nn::BatchNorm2d>(16), std::make_shared<nn::ReLU>(),
//       std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Flatten>(),
//       std::make_shared<nn::Linear>(16 * 14 * 14, 10));
//   Tensor logits = (*net)(images);
//
// Parameter and buffer members (weight, bias, running_mean, ...) are handles to the registered
// tensors: change their values in place (copy_, init::*), never assign a new tensor to them.
// Wrongly shaped input throws ShapeError naming the layer, the expected and the actual shape.
#include <myelin/nn/module.h>
#include <myelin/nn/sync_batch_norm.h>

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace myelin {
class Generator;
}

namespace myelin::nn {

// A pair of sizes given as one int (both dims) or two: kernel_size = 3 or {3, 5}.
struct Size2 {
    int64_t h = 0;
    int64_t w = 0;
    bool scalar = false; // given as one int: repr prints it the way it was given, as PyTorch
    Size2(int64_t v) : h(v), w(v), scalar(true) {}
    Size2(int64_t a, int64_t b) : h(a), w(b) {}
    std::array<int64_t, 2> arr() const { return {h, w}; }
    bool operator==(const Size2& o) const { return h == o.h && w == o.w; }
};

// --- linear ------------------------------------------------------------------------------------

class Linear : public Module {
  public:
    Linear(int64_t in_features, int64_t out_features, bool bias = true);
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;
    void reset_parameters();

    const int64_t in_features;
    const int64_t out_features;
    Tensor weight; // [out_features, in_features]
    Tensor bias;   // [out_features] or undefined
};

// y = x1^T A x2 + b over inputs (x1 [..., in1], x2 [..., in2]).
class Bilinear : public Module {
  public:
    Bilinear(int64_t in1_features, int64_t in2_features, int64_t out_features, bool bias = true);
    Tensor forward(const TensorList& inputs) override;
    int num_inputs() const override { return 2; }
    std::string extra_repr() const override;
    void reset_parameters();

    const int64_t in1_features;
    const int64_t in2_features;
    const int64_t out_features;
    Tensor weight; // [out, in1, in2]
    Tensor bias;   // [out] or undefined
};

// --- convolution -------------------------------------------------------------------------------

// The padding a convolution adds before and after one dimension: `padding` on both sides, or for
// padding='same' the total dilation * (kernel - 1) split with the odd one after (PyTorch's rule).
std::array<int64_t, 2> conv_padding_sides(int64_t kernel, int64_t dilation, int64_t padding,
                                          bool same);

struct Conv1dOptions {
    int64_t stride = 1;
    int64_t padding = 0;
    int64_t dilation = 1;
    int64_t groups = 1;
    bool bias = true;
    bool same_padding = false; // PyTorch's padding="same" (stride must be 1)
    // What the padding holds: "zeros", "reflect", "replicate" or "circular" (PyTorch's names)
    std::string padding_mode = "zeros";
};

class Conv1d : public Module {
  public:
    Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
           Conv1dOptions options = {});
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;
    void reset_parameters();

    const int64_t in_channels;
    const int64_t out_channels;
    const int64_t kernel_size;
    const Conv1dOptions options;
    Tensor weight; // [out, in / groups, k]
    Tensor bias;
};

struct Conv2dOptions {
    Size2 stride = 1;
    Size2 padding = 0;
    Size2 dilation = 1;
    int64_t groups = 1;
    bool bias = true;
    bool same_padding = false; // PyTorch's padding="same" (stride must be 1)
    // What the padding holds: "zeros", "reflect", "replicate" or "circular" (PyTorch's names)
    std::string padding_mode = "zeros";
};

class Conv2d : public Module {
  public:
    Conv2d(int64_t in_channels, int64_t out_channels, Size2 kernel_size,
           Conv2dOptions options = {});
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;
    void reset_parameters();

    const int64_t in_channels;
    const int64_t out_channels;
    const Size2 kernel_size;
    const Conv2dOptions options;
    Tensor weight; // [out, in / groups, kh, kw]
    Tensor bias;
    // relu(forward(x)) in one pass where the device fuses the two (same bits as the two layers).
    Tensor forward_relu(const Tensor& x);

  private:
    // `pool_2x2`: with ReLU and a 2x2 / stride-2 max pool after it, fused.
    Tensor run(const Tensor& x, bool relu, bool pool_2x2 = false);
    friend Tensor fused_conv_relu_pool(Module&, Module&, Module&, const Tensor&);
};

// ReLU(Conv2d(x)) in one fused pass when `conv` is a Conv2d, `relu` a ReLU and neither has hooks
// (nothing observes the pre-activation); an undefined tensor otherwise (run the two layers).
// Sequential and graph models call it for each Conv2d directly followed by a ReLU.
Tensor fused_conv_relu(Module& conv, Module& relu, const Tensor& x);
// MaxPool2d(ReLU(Conv2d(x))) in one fused pass (F::conv2d_relu_max_pool2d) when `pool` is a 2x2 /
// stride-2 MaxPool2d, none of the three has hooks and the convolution's output is at least 2x2;
// an undefined tensor otherwise. Tried before fused_conv_relu.
Tensor fused_conv_relu_pool(Module& conv, Module& relu, Module& pool, const Tensor& x);

struct ConvTranspose2dOptions {
    Size2 stride = 1;
    Size2 padding = 0;
    Size2 output_padding = 0;
    int64_t groups = 1;
    bool bias = true;
    Size2 dilation = 1;
};

class ConvTranspose2d : public Module {
  public:
    ConvTranspose2d(int64_t in_channels, int64_t out_channels, Size2 kernel_size,
                    ConvTranspose2dOptions options = {});
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;
    void reset_parameters();

    const int64_t in_channels;
    const int64_t out_channels;
    const Size2 kernel_size;
    const ConvTranspose2dOptions options;
    Tensor weight; // [in, out / groups, kh, kw] (PyTorch's layout)
    Tensor bias;
};

// --- pooling -----------------------------------------------------------------------------------

struct MaxPool2dOptions {
    std::optional<Size2> stride; // defaults to kernel_size
    Size2 padding = 0;
    Size2 dilation = 1;
    bool ceil_mode = false;
};

class MaxPool2d : public Module {
  public:
    explicit MaxPool2d(Size2 kernel_size, MaxPool2dOptions options = {});
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;

    const Size2 kernel_size;
    const Size2 stride;
    const MaxPool2dOptions options;
};

struct AvgPool2dOptions {
    std::optional<Size2> stride; // defaults to kernel_size
    Size2 padding = 0;
    bool ceil_mode = false;
    bool count_include_pad = true;
    std::optional<int64_t> divisor_override = std::nullopt; // divide by it, not the window size
};

class AvgPool2d : public Module {
  public:
    explicit AvgPool2d(Size2 kernel_size, AvgPool2dOptions options = {});
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;

    const Size2 kernel_size;
    const Size2 stride;
    const AvgPool2dOptions options;
};

class AdaptiveAvgPool2d : public Module {
  public:
    explicit AdaptiveAvgPool2d(Size2 output_size);
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;

    const Size2 output_size;
};

// --- normalisation -----------------------------------------------------------------------------

// Shared by BatchNorm1d and BatchNorm2d. momentum = nullopt: cumulative moving average
// (factor 1 / num_batches_tracked), as PyTorch's momentum=None.
class BatchNormBase : public Module {
  public:
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;
    void reset_running_stats();
    void reset_parameters();

    const int64_t num_features;
    const double eps;
    const std::optional<double> momentum;
    const bool affine;
    const bool track_running_stats;
    Tensor weight, bias;                                   // [C] when affine
    Tensor running_mean, running_var, num_batches_tracked; // when track_running_stats
    // Set by data-parallel training with sync_batchnorm (train::DataParallel): in training the
    // batch statistics are summed over the ranks through it (sync_batch_norm.h); empty: local.
    StatsReducer sync_stats;

  protected:
    BatchNormBase(std::string type_name, int64_t num_features, double eps,
                  std::optional<double> momentum, bool affine, bool track_running_stats);
    virtual void check_input(const Tensor& x) const = 0;
};

class BatchNorm1d : public BatchNormBase {
  public:
    explicit BatchNorm1d(int64_t num_features, double eps = 1e-5,
                         std::optional<double> momentum = 0.1, bool affine = true,
                         bool track_running_stats = true);

  protected:
    void check_input(const Tensor& x) const override; // [N, C] or [N, C, L]
};

class BatchNorm2d : public BatchNormBase {
  public:
    explicit BatchNorm2d(int64_t num_features, double eps = 1e-5,
                         std::optional<double> momentum = 0.1, bool affine = true,
                         bool track_running_stats = true);

  protected:
    void check_input(const Tensor& x) const override; // [N, C, H, W]
};

class LayerNorm : public Module {
  public:
    explicit LayerNorm(Dims normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;
    void reset_parameters();

    const Dims normalized_shape;
    const double eps;
    const bool elementwise_affine;
    Tensor weight, bias; // normalized_shape, when elementwise_affine
};

class GroupNorm : public Module {
  public:
    GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;
    void reset_parameters();

    const int64_t num_groups;
    const int64_t num_channels;
    const double eps;
    const bool affine;
    Tensor weight, bias; // [C] when affine
};

// --- dropout -----------------------------------------------------------------------------------

class Dropout : public Module {
  public:
    explicit Dropout(double p = 0.5);
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;

    const double p;
    Generator* generator = nullptr; // the default generator when null
};

// Zeroes whole channels of [N, C, H, W] (or [C, H, W]).
class Dropout2d : public Module {
  public:
    explicit Dropout2d(double p = 0.5);
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;

    const double p;
    Generator* generator = nullptr;
};

// --- embedding ---------------------------------------------------------------------------------

class Embedding : public Module {
  public:
    // A negative padding_idx counts from the end, as PyTorch.
    Embedding(int64_t num_embeddings, int64_t embedding_dim,
              std::optional<int64_t> padding_idx = std::nullopt);
    Tensor forward(const TensorList& inputs) override; // int64 indices of any shape
    std::string extra_repr() const override;
    void reset_parameters();

    const int64_t num_embeddings;
    const int64_t embedding_dim;
    const std::optional<int64_t> padding_idx;
    Tensor weight; // [num_embeddings, embedding_dim]
};

// --- shape -------------------------------------------------------------------------------------

class Flatten : public Module {
  public:
    explicit Flatten(int start_dim = 1, int end_dim = -1);
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;

    const int start_dim;
    const int end_dim;
};

class Unflatten : public Module {
  public:
    Unflatten(int dim, Dims unflattened_size);
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;

    const int dim;
    const Dims unflattened_size;
};

class Identity : public Module {
  public:
    Identity() : Module("Identity") {}
    Tensor forward(const TensorList& inputs) override { return inputs[0]; }
};

// Nearest-neighbour upsampling of [N, C, H, W] by integer scale factors.
class Upsample : public Module {
  public:
    // mode "nearest" or "bilinear"; align_corners only for "bilinear"
    explicit Upsample(Size2 scale_factor, const std::string& mode = "nearest",
                      bool align_corners = false);
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;

    const Size2 scale_factor;
    const std::string mode;
    const bool align_corners;
};

// --- activations (element-wise; any input shape) -----------------------------------------------

class ReLU : public Module {
  public:
    ReLU() : Module("ReLU") {}
    Tensor forward(const TensorList& inputs) override;
};

// min(max(0, x), 6): MobileNet's activation (PyTorch's nn.ReLU6).
class ReLU6 : public Module {
  public:
    ReLU6() : Module("ReLU6") {}
    Tensor forward(const TensorList& inputs) override;
};

class LeakyReLU : public Module {
  public:
    explicit LeakyReLU(double negative_slope = 0.01)
        : Module("LeakyReLU"), negative_slope(negative_slope) {}
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;
    const double negative_slope;
};

// One learnable slope (num_parameters = 1) or one per channel (dim 1 of the input).
class PReLU : public Module {
  public:
    explicit PReLU(int64_t num_parameters = 1, double init = 0.25);
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;
    const int64_t num_parameters;
    const double init;
    Tensor weight; // [num_parameters]
};

class ELU : public Module {
  public:
    explicit ELU(double alpha = 1.0) : Module("ELU"), alpha(alpha) {}
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;
    const double alpha;
};

class GELU : public Module {
  public:
    explicit GELU(std::string approximate = "none"); // "none" | "tanh"
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;
    const std::string approximate;
};

class SiLU : public Module {
  public:
    SiLU() : Module("SiLU") {}
    Tensor forward(const TensorList& inputs) override;
};

class Sigmoid : public Module {
  public:
    Sigmoid() : Module("Sigmoid") {}
    Tensor forward(const TensorList& inputs) override;
};

class Tanh : public Module {
  public:
    Tanh() : Module("Tanh") {}
    Tensor forward(const TensorList& inputs) override;
};

class Softmax : public Module {
  public:
    explicit Softmax(int dim) : Module("Softmax"), dim(dim) {}
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;
    const int dim;
};

class LogSoftmax : public Module {
  public:
    explicit LogSoftmax(int dim) : Module("LogSoftmax"), dim(dim) {}
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;
    const int dim;
};

class Softplus : public Module {
  public:
    explicit Softplus(double beta = 1.0, double threshold = 20.0)
        : Module("Softplus"), beta(beta), threshold(threshold) {}
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;
    const double beta;
    const double threshold;
};

class Hardswish : public Module {
  public:
    Hardswish() : Module("Hardswish") {}
    Tensor forward(const TensorList& inputs) override;
};

// --- merge nodes (graph editor): N inputs -> one output ----------------------------------------

// Sum of all inputs (broadcasting).
class Add : public Module {
  public:
    Add() : Module("Add") {}
    Tensor forward(const TensorList& inputs) override;
    int num_inputs() const override { return -1; }
};

// Elementwise product of all inputs (broadcasting).
class Multiply : public Module {
  public:
    Multiply() : Module("Multiply") {}
    Tensor forward(const TensorList& inputs) override;
    int num_inputs() const override { return -1; }
};

// Concatenation along dim; all other dims must match.
class Concat : public Module {
  public:
    explicit Concat(int dim = 1) : Module("Concat"), dim(dim) {}
    Tensor forward(const TensorList& inputs) override;
    int num_inputs() const override { return -1; }
    std::string extra_repr() const override;
    const int dim;
};

// --- containers --------------------------------------------------------------------------------

// Runs its modules in order; children are named "0", "1", ... (or given names).
class Sequential : public Module {
  public:
    Sequential() : Module("Sequential") {}
    template <typename... M>
    requires(sizeof...(M) > 0) explicit Sequential(std::shared_ptr<M>... modules)
        : Module("Sequential") {
        (push_back(std::move(modules)), ...);
    }
    explicit Sequential(const std::vector<ModulePtr>& modules);
    explicit Sequential(const std::vector<std::pair<std::string, ModulePtr>>& named_modules);

    Tensor forward(const TensorList& inputs) override;
    int num_inputs() const override;

    void push_back(ModulePtr module);
    void append(ModulePtr module) { push_back(std::move(module)); }
    void push_back(const std::string& name, ModulePtr module);
    // Negative indices count from the end; out of range throws IndexError.
    ModulePtr operator[](int64_t index) const;
    template <typename M> std::shared_ptr<M> at(int64_t index) const {
        return std::dynamic_pointer_cast<M>((*this)[index]);
    }
    size_t size() const { return modules_.size(); }
    bool empty() const { return modules_.empty(); }
    auto begin() const { return modules_.begin(); }
    auto end() const { return modules_.end(); }

  private:
    std::vector<ModulePtr> modules_;
};

// Holds modules (named "0", "1", ...) without a forward of its own.
class ModuleList : public Module {
  public:
    ModuleList() : Module("ModuleList") {}
    explicit ModuleList(const std::vector<ModulePtr>& modules);
    Tensor forward(const TensorList& inputs) override; // throws: call the members instead
    int num_inputs() const override { return -1; }

    void push_back(ModulePtr module);
    void append(ModulePtr module) { push_back(std::move(module)); }
    ModulePtr operator[](int64_t index) const;
    template <typename M> std::shared_ptr<M> at(int64_t index) const {
        return std::dynamic_pointer_cast<M>((*this)[index]);
    }
    size_t size() const { return modules_.size(); }
    bool empty() const { return modules_.empty(); }
    auto begin() const { return modules_.begin(); }
    auto end() const { return modules_.end(); }

  private:
    std::vector<ModulePtr> modules_;
};

// Holds modules by name, in insertion order, without a forward of its own.
class ModuleDict : public Module {
  public:
    ModuleDict() : Module("ModuleDict") {}
    explicit ModuleDict(const std::vector<std::pair<std::string, ModulePtr>>& modules);
    Tensor forward(const TensorList& inputs) override; // throws: call the members instead
    int num_inputs() const override { return -1; }

    // Inserting an existing key throws (names are unique among a module's children).
    void insert(const std::string& key, ModulePtr module);
    ModulePtr operator[](const std::string& key) const; // throws Error when absent
    template <typename M> std::shared_ptr<M> at(const std::string& key) const {
        return std::dynamic_pointer_cast<M>((*this)[key]);
    }
    bool contains(const std::string& key) const;
    std::vector<std::string> keys() const;
    size_t size() const { return named_children().size(); }
};

} // namespace myelin::nn
