#pragma once
// Internal to quant/: dynamic int8 recurrent layers (LSTM, GRU, RNN), as PyTorch's
// quantize_dynamic makes them: each weight matrix per-tensor symmetric int8, each step's input
// and hidden state quantized on the fly from their own range (dynamic_quantized_linear), the
// gates and states in float32. Same ports as the editor's recurrent kinds: the sequence (or each
// sequence's final state), then h_n (and c_n) batch first; lengths skip a sequence's padding.
#include <myelin/nn/module.h>
#include <myelin/quant/quantize.h>

#include <memory>
#include <string>
#include <vector>

namespace myelin::quant::detail {

bool is_recurrent_kind(const std::string& kind); // "LSTM", "GRU", "RNN"

// From the float layer `float_module` (an nn::RNNBase; `last_only`: port 0 is each sequence's
// final state, the kind's output "last").
std::shared_ptr<nn::Module> dynamic_recurrent(const nn::Module& float_module, bool last_only);

// From a quantized checkpoint's tensors under `prefix` ("lstm."), shaped as `float_module`'s.
// Throws Error naming `where` and the tensor that is missing or does not fit.
std::shared_ptr<nn::Module> dynamic_recurrent(const nn::Module& float_module, bool last_only,
                                              const std::string& prefix,
                                              const nn::StateDict& tensors,
                                              const std::string& where);

// The local names of the int8 weights of a module made by dynamic_recurrent (empty for any other
// module); each has a "<name>_scale" [1] beside it.
std::vector<std::string> recurrent_int8_weights(const nn::Module& module);

} // namespace myelin::quant::detail
