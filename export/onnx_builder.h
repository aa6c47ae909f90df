#pragma once
// Internal to the ONNX writer: OnnxGraph over ONNX's protobuf GraphProto (unique value names,
// initializers as raw_data, nodes with attributes). The per-kind lowerings that call it are the
// export forms (layer_forms.h).
#include <myelin/export/layer_forms.h>

#include <onnx/onnx_pb.h>

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

  private:
    onnx::GraphProto& graph_;
    std::set<std::string> used_;
    int nodes_ = 0;
};

} // namespace myelin::exporters::detail
