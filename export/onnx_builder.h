#pragma once
// Internal to the ONNX writer: OnnxGraph over ONNX's protobuf GraphProto (unique value names,
// initializers as raw_data, nodes with attributes). The per-kind lowerings that call it are the
// export forms (layer_forms.h).
#include <myelin/export/layer_forms.h>

#include <onnx/onnx_pb.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace myelin::exporters::detail {

class OnnxBuilder final : public OnnxGraph {
  public:
    explicit OnnxBuilder(onnx::GraphProto& graph) : graph_(graph) {}

    std::string unique(const std::string& base) override;
    std::string initializer(const std::string& name, const Tensor& t) override;
    std::vector<std::string> ops(const std::string& op_type, const std::vector<std::string>& inputs,
                                 const std::vector<std::string>& output_hints,
                                 const std::vector<OnnxAttr>& attrs = {}) override;
    using OnnxGraph::op;

    // An int8 model's QDQ form: the initializers with these names are written as int8 values
    // (weight / scale, which gives the int8 value back) with a DequantizeLinear in front; the
    // scales are per output channel (axis 0; axis 1 for a "_transposed" weight) or one.
    std::map<std::string, std::vector<float>> int8_weights;
    // QuantizeLinear then DequantizeLinear of `x` with uint8 parameters (static quantization).
    std::string fake_quantize(const std::string& x, float scale, int32_t zero_point,
                              const std::string& hint);
    // DynamicQuantizeLinear then DequantizeLinear (dynamic quantization's activations).
    std::string dynamic_fake_quantize(const std::string& x, const std::string& hint);

  private:
    std::string raw_initializer(const std::string& name, int data_type, const Dims& dims,
                                const void* bytes, size_t size);
    std::string int8_weight(const std::string& name, const Tensor& t,
                            const std::vector<float>& scales);

    onnx::GraphProto& graph_;
    std::set<std::string> used_;
    int nodes_ = 0;
};

} // namespace myelin::exporters::detail
