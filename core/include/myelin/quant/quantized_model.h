#pragma once
// A trained float model made int8 (issue 38): which layers can be, the calibration of their
// activation ranges, the swap of Linear / Conv2d modules for int8 ones, and the tensors a
// quantized checkpoint stores. The numerics and kernels are quant/quantize.h and quant/kernels.h.
//
// Static quantization (PyTorch's prepare / calibrate / convert with the 'onednn' qconfig):
// every Linear and Conv2d gets per-channel symmetric int8 weights; its input and output (after a
// ReLU that reads only it, which is fused) get per-tensor quint8 parameters from observers that
// watch N calibration batches. Between layers the values stay float32: each int8 layer quantizes
// its input with its own calibrated parameters and dequantizes its requantized output, which
// gives PyTorch's numbers at each int8 layer (the layers between, pooling and flattening, commute
// with the quantization). Dynamic quantization (quantize_dynamic): Linear layers with per-tensor
// int8 weights, their inputs quantized per batch from the batch's own range.
#include <myelin/graph/build.h>
#include <myelin/graph/model_spec.h>
#include <myelin/quant/kernels.h>
#include <myelin/quant/quantize.h>

#include <functional>
#include <string>
#include <vector>

namespace myelin::quant {

enum class Scheme { Static, Dynamic };
std::string_view scheme_name(Scheme scheme); // "static", "dynamic"

// One layer run in int8.
struct QuantizedLayer {
    std::string module;     // the node's module name in the built model ("fc1", "3")
    std::string kind;       // "Linear" or "Conv2d"; dynamic also "LSTM", "GRU", "RNN"
    bool last_only = false; // a recurrent layer whose port 0 is each sequence's final state
    // Static Conv2d: the BatchNorm2d that is its only reader (running statistics), folded into
    // its weights and bias as PyTorch's fuse_modules does; it then runs as the identity.
    std::string bn_module;
    bool relu = false;       // static: the ReLU after it (or after its BatchNorm) is fused ...
    std::string relu_module; // ... which then runs as the identity
    // Static Conv2d with a fused ReLU: the MaxPool2d after that ReLU (its only reader) runs on
    // the int8 values inside the layer (max commutes with the quantization); empty: none.
    std::string pool_module;
    // Static: the int8 layer that reads this one's output (through identities and Flatten
    // only). Its input parameters are this layer's output parameters, so the values can pass
    // between the two as uint8 (PyTorch's eager int8 model does the same); empty: none.
    std::string output_to;
    QParams input;  // static: calibrated parameters of the layer's input ...
    QParams output; // ... and of its output (after the fused ReLU)
    // The weight's scales per output channel (or one: per tensor); not in the plan's JSON (the
    // checkpoint's tensors hold them): read_parameters fills them.
    std::vector<float> weight_scales;
};

// A layer with weights that stays float, and why.
struct FloatLayer {
    std::string module, kind, reason;
};

struct QuantizationPlan {
    Scheme scheme = Scheme::Static;
    ObserverKind observer = ObserverKind::Histogram; // static only
    int64_t calibration_batches = 0;                 // static: batches the observers saw
    int64_t qat_epochs = 0; // static: epochs of quantization-aware training after calibration
    std::vector<QuantizedLayer> layers;
    std::vector<FloatLayer> float_layers;

    std::string to_json() const;
    // Throws Error naming `where` and the field that is wrong.
    static QuantizationPlan from_json(const std::string& text, const std::string& where);
};

// The layers of `spec` (built as `model`) that `scheme` runs in int8, before calibration, and
// every other layer that has weights with the reason it stays float. Throws Error when no layer
// can be quantized.
// `fold_batch_norm` false keeps a convolution's BatchNorm float (quantization-aware training
// trains the convolution as it is).
QuantizationPlan plan_quantization(const graph::ModelSpec& spec, const graph::GraphModule& model,
                                   Scheme scheme, ObserverKind observer = ObserverKind::Histogram,
                                   bool fold_batch_norm = true);

// `spec` as the int8 model computes it: each folded BatchNorm removed, its convolution given a
// bias (the folded one). What the exporters write a quantized checkpoint from.
graph::ModelSpec folded_spec(const graph::ModelSpec& spec, const QuantizationPlan& plan);

// Static: runs batches through the float model (evaluation mode, no gradients) while one
// observer per planned layer input and output watches; `next_batch` fills the model's inputs and
// returns false when there are no more. Fills the plan's parameters and calibration_batches.
// Throws Error when no batch came.
void calibrate(graph::GraphModule& model, QuantizationPlan& plan,
               const std::function<bool(TensorList& inputs)>& next_batch);

// Gives each layer that reads an int8 layer's uint8 values (output_to) that layer's output
// parameters as its input parameters (calibrate and QAT call it).
void share_handed_on_parameters(QuantizationPlan& plan);

// Swaps each planned layer of `model` (its float weights in place) for its int8 module.
void quantize_model(graph::GraphModule& model, const QuantizationPlan& plan);

// A quantized model's state as its checkpoint holds it (state_dict order): int8 weights as
// UInt8 bytes of the int8 values (their names listed in int8_names; safetensors tags them "I8"),
// weight scales, activation parameters, and the float tensors of every other layer.
struct QuantizedState {
    nn::StateDict tensors;
    std::vector<std::string> int8_names;
};
QuantizedState quantized_state(const graph::GraphModule& model);

// A quantized checkpoint's tensors into a model freshly built from its project: the planned
// layers become int8 modules made from the stored values, the rest is loaded strictly. Throws
// Error naming what is missing or does not fit (`where`: the file).
// With `spec` (the model's own description), the plan must also be the one this code plans for
// it (the same layers, fusions and uint8 hand-ons): a plan edited by hand or damaged is refused
// rather than run.
void load_quantized(graph::GraphModule& model, const QuantizationPlan& plan,
                    const nn::StateDict& tensors, const std::string& where,
                    const graph::ModelSpec* spec = nullptr);

// Fills each planned layer's activation parameters (static) and weight scales from a quantized
// checkpoint's tensors, checking them (`where`: the file, for messages).
void read_parameters(QuantizationPlan& plan, const nn::StateDict& tensors,
                     const std::string& where);
// The float tensors the quantized ones stand for: each int8 weight as value x scale under the
// layer's own name, its scale and activation tensors left out; the other tensors as they are.
// What the float model loads to show what the int8 one computes (the ONNX writer starts there).
nn::StateDict dequantized_state(const QuantizationPlan& plan, const nn::StateDict& tensors);

// Bytes the model's tensors take as stored (int8 weights one byte per value).
int64_t state_bytes(const nn::StateDict& state);

// A MaxPool2d run on int8 values inside a QuantizedConv2d.
struct FusedMaxPool {
    std::array<int64_t, 2> kernel{2, 2}, stride{2, 2}, padding{0, 0}, dilation{1, 1};
};

// What an int8 module hands on: float32 values (the default), or its quint8 values as a UInt8
// tensor (their parameters are the reading int8 layer's input parameters), channels-last for a
// convolution reading it, or contiguous for a Flatten on the way to a Linear.
enum class Int8Output { Float, UInt8ChannelsLast, UInt8Contiguous };

// The int8 modules. Their state_dict: weight (UInt8 bytes of int8 values, the float weight's
// shape), weight_scale [out] (or [1]: per tensor), bias (float32, when the layer has one) and,
// static only, input_scale / input_zero_point / output_scale / output_zero_point (rank 0).
class QuantizedLinear : public nn::Module {
  public:
    // Static (with activation parameters) or dynamic (without).
    QuantizedLinear(QuantizedWeight weight, Tensor bias, std::optional<QParams> input,
                    std::optional<QParams> output, bool relu);
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;
    const QuantizedWeight& weight() const { return weight_; }
    // A UInt8 input holds quint8 values with this layer's input parameters (from the int8 layer
    // before it); a float32 input is quantized here. With hooks the output is float32.
    void set_output(Int8Output output) { int8_output_ = output; }

  private:
    QuantizedWeight weight_;
    Tensor bias_;
    std::optional<QParams> input_, output_;
    bool relu_;
    Int8Output int8_output_ = Int8Output::Float;
};

class QuantizedConv2d : public nn::Module {
  public:
    QuantizedConv2d(QuantizedWeight weight, Tensor bias, const Conv2dOptions& options,
                    QParams input, QParams output, bool relu,
                    std::optional<FusedMaxPool> pool = std::nullopt);
    Tensor forward(const TensorList& inputs) override;
    std::string extra_repr() const override;
    const QuantizedWeight& weight() const { return weight_; }
    void set_output(Int8Output output) { int8_output_ = output; } // as QuantizedLinear's

  private:
    QuantizedWeight weight_;
    Tensor bias_;
    Int8Output int8_output_ = Int8Output::Float;
    Conv2dOptions options_;
    QParams input_, output_;
    bool relu_;
    std::optional<FusedMaxPool> pool_;
};

} // namespace myelin::quant
