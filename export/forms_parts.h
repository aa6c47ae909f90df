#pragma once
// Inside the exporters: what the built-in kinds' forms (forms_*.cpp) share, and the functions
// that add each family's records.
#include <myelin/export/layer_forms.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace myelin::exporters::detail {

using FormsTable = std::map<std::string, LayerForms, std::less<>>;

void add_linear_conv_forms(FormsTable& table);     // forms_conv.cpp
void add_norm_activation_forms(FormsTable& table); // forms_activation.cpp
void add_structure_forms(FormsTable& table);       // forms_structure.cpp
void add_sequence_forms(FormsTable& table);        // forms_sequence.cpp
void add_attention_forms(FormsTable& table);       // forms_attention.cpp

// [k] -> {k, k}; [h, w] as it is.
std::vector<int64_t> pair(const graph::Attrs& a, std::string_view name);
// "<module>.<what>": an initializer under its state_dict name.
std::string state_name(const OnnxLayer& l, const std::string& what);
// A constant shape for Reshape: the batch (dimension 0) as 0, the other dimensions static.
std::vector<int64_t> reshape_target(const graph::TensorType& out);
// A lowering with one output port.
OnnxLowering single(std::function<std::string(OnnxGraph&, const OnnxLayer&)> lower);
// `op` on the layer's inputs, its output named after the module.
OnnxLowering simple_op(const char* op,
                       std::function<std::vector<OnnxAttr>(const OnnxLayer&)> attrs = {});
// x [.., in] @ W^T + b with `w` [out, in] and `bias` (may be empty): Gemm for 2-d inputs,
// MatMul (+ Add) otherwise; the initializers named `weight_name` ("<...>.weight").
std::string linear_value(OnnxGraph& g, const std::string& x, int64_t rank, const Tensor& w,
                         const Tensor& bias, const std::string& weight_name,
                         const std::string& bias_name, const std::string& output);
// 0.5 x (1 + erf(x / sqrt 2)) or the tanh approximation, as ONNX nodes named from `out`.
std::string gelu_value(OnnxGraph& g, const std::string& x, bool tanh, const std::string& out);
// A rank-0 int64 constant.
std::string scalar_int(OnnxGraph& g, const std::string& name, int64_t value);
// valid[n, t] = t < lengths[n] as bool [N, T], from the layer's int64 `lengths` value [N].
std::string valid_steps(OnnxGraph& g, const OnnxLayer& l, const std::string& lengths,
                        int64_t steps);
// The OpenCV 4.6 note of the kinds whose ONNX form has LayerNormalization.
std::string no_layer_normalization(const graph::Attrs&);
// A module constructed from its attributes with nothing to add: "nn.<Kind>()".
PyModuleForm py_plain(std::string callee = {});

} // namespace myelin::exporters::detail
