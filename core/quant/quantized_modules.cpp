// The int8 modules QuantizedLinear and QuantizedConv2d (quant/quantized_model.h): what their
// forward does with a float32 or a handed-on uint8 input, and what it hands on.
#include <myelin/error.h>
#include <myelin/quant/quantized_model.h>

#include "quant/int8_storage.h"
#include "quant/layout.h"

#include <sstream>

namespace myelin::quant {

namespace {

// A contiguous float32 CPU copy-free view of `x` where possible.
Tensor float_input(const Tensor& x, const char* layer) {
    if (!x.device().is_cpu())
        throw Error(std::string(layer) + ": int8 layers run on the CPU; the input is on " +
                    x.device().str());
    return (x.dtype() == DType::Float32 ? x : x.to(DType::Float32)).contiguous();
}

// A layer's input as quint8: the values the int8 layer before it handed on (UInt8, already with
// this layer's input parameters), or float32 values quantized here.
QTensor quantized_input(const Tensor& x, QParams q, const char* layer) {
    if (x.dtype() == DType::UInt8) return {x, q};
    return quantize_per_tensor(float_input(x, layer), q);
}

// What a layer hands on (Int8Output): a channels-last result of the convolution kernels made
// contiguous by one pass over each image's bytes (cheaper than the generic strided copy).
Tensor handed_on(const QTensor& y, Int8Output output) {
    if (output == Int8Output::Float) return dequantize(y);
    const Tensor& d = y.data;
    if (output == Int8Output::UInt8ChannelsLast) return d;
    if (!detail::channels_last(d)) return d.contiguous();
    const int64_t batch = d.size(0), channels = d.size(1), plane = d.size(2) * d.size(3);
    Tensor out = empty(d.shape(), DType::UInt8);
    const uint8_t* p = d.data<uint8_t>();
    uint8_t* o = out.data<uint8_t>();
#pragma omp parallel for if (d.numel() > (1 << 16)) schedule(static)
    for (int64_t n = 0; n < batch; ++n)
        for (int64_t c = 0; c < channels; ++c)
            for (int64_t i = 0; i < plane; ++i)
                o[(n * channels + c) * plane + i] = p[(n * plane + i) * channels + c];
    return out;
}

Tensor scalar_float(float v) {
    return full(Dims{}, double(v), DType::Float32);
}
Tensor scalar_int(int64_t v) {
    return full(Dims{}, double(v), DType::Int64);
}

} // namespace

// --- the int8 modules --------------------------------------------------------------------------

QuantizedLinear::QuantizedLinear(QuantizedWeight weight, Tensor bias, std::optional<QParams> input,
                                 std::optional<QParams> output, bool relu)
    : Module("QuantizedLinear"), weight_(std::move(weight)), bias_(std::move(bias)), input_(input),
      output_(output), relu_(relu) {
    if (input_.has_value() != output_.has_value())
        throw Error("QuantizedLinear: give both activation parameters (static) or none (dynamic)");
    register_buffer("weight", detail::int8_bytes(weight_));
    register_buffer("weight_scale",
                    from_vector(weight_.scales, Dims{int64_t(weight_.scales.size())}));
    if (bias_.defined()) register_buffer("bias", bias_);
    if (input_) {
        register_buffer("input_scale", scalar_float(input_->scale));
        register_buffer("input_zero_point", scalar_int(input_->zero_point));
        register_buffer("output_scale", scalar_float(output_->scale));
        register_buffer("output_zero_point", scalar_int(output_->zero_point));
    }
}

Tensor QuantizedLinear::forward(const TensorList& inputs) {
    if (!input_)
        return dynamic_quantized_linear(float_input(inputs[0], "QuantizedLinear"), weight_, bias_,
                                        relu_);
    const QTensor x = quantized_input(inputs[0], *input_, "QuantizedLinear");
    const QTensor y = quantized_linear(x, weight_, bias_, relu_, *output_);
    return handed_on(y, has_hooks() ? Int8Output::Float : int8_output_);
}

std::string QuantizedLinear::extra_repr() const {
    std::ostringstream s;
    s << "in_features=" << weight_.shape[1] << ", out_features=" << weight_.shape[0]
      << (input_ ? ", static" : ", dynamic") << (relu_ ? ", relu" : "");
    return s.str();
}

QuantizedConv2d::QuantizedConv2d(QuantizedWeight weight, Tensor bias, const Conv2dOptions& options,
                                 QParams input, QParams output, bool relu,
                                 std::optional<FusedMaxPool> pool)
    : Module("QuantizedConv2d"), weight_(std::move(weight)), bias_(std::move(bias)),
      options_(options), input_(input), output_(output), relu_(relu), pool_(pool) {
    register_buffer("weight", detail::int8_bytes(weight_));
    register_buffer("weight_scale",
                    from_vector(weight_.scales, Dims{int64_t(weight_.scales.size())}));
    if (bias_.defined()) register_buffer("bias", bias_);
    register_buffer("input_scale", scalar_float(input_.scale));
    register_buffer("input_zero_point", scalar_int(input_.zero_point));
    register_buffer("output_scale", scalar_float(output_.scale));
    register_buffer("output_zero_point", scalar_int(output_.zero_point));
}

Tensor QuantizedConv2d::forward(const TensorList& inputs) {
    QTensor y = quantized_conv2d(quantized_input(inputs[0], input_, "QuantizedConv2d"), weight_,
                                 bias_, options_, relu_, output_);
    if (pool_)
        y = quantized_max_pool2d(y, pool_->kernel, pool_->stride, pool_->padding, pool_->dilation);
    return handed_on(y, has_hooks() ? Int8Output::Float : int8_output_);
}

std::string QuantizedConv2d::extra_repr() const {
    std::ostringstream s;
    s << weight_.shape[1] * options_.groups << ", " << weight_.shape[0] << ", kernel_size=("
      << weight_.shape[2] << ", " << weight_.shape[3] << "), stride=(" << options_.stride[0] << ", "
      << options_.stride[1] << ")" << (relu_ ? ", relu" : "") << (pool_ ? ", max_pool" : "");
    return s.str();
}

} // namespace myelin::quant
