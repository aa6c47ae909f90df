#pragma once
// Recurrent layers: PyTorch's nn.RNN (tanh / relu), nn.LSTM and nn.GRU with the same constructor
// arguments, parameter names, shapes, order, initialisation and gate order (LSTM i,f,g,o; GRU
// r,z,n with n = tanh(W_in x + b_in + r * (W_hn h + b_hn))), so a state_dict loads in PyTorch.
//
// Inputs (Module::outputs / forward): x [T, B, I] ([B, T, I] with batch_first, [T, I] unbatched),
// then optionally h0 [L*D, B, H] (LSTM: h0 and c0), then optionally lengths (int64 [B], each in
// 1..T): the packed-sequence semantics without the packed type. Steps at or after a sequence's
// length leave its state unchanged (h_n is the state at its last valid step; the reverse
// direction starts there), its padded output positions are zero and pass no gradient: what
// pack_padded_sequence -> RNN -> pad_packed_sequence gives in PyTorch (enforce_sorted=False).
// An undefined tensor stands for an absent h0 / c0 (zeros) or lengths (every sequence full).
//
// Outputs: the sequence output [T, B, D*H] (batch_first: [B, T, D*H]), h_n [L*D, B, H] and, for
// LSTM, c_n. forward() returns the sequence output only.
//
// Each layer runs as one autograd node over the whole sequence: the input projection of all time
// steps is one GEMM per direction, each step one GEMM h W_hh^T plus fused gate code; backward
// does one GEMM per step for the hidden-state gradient and single GEMMs over all steps for the
// weight and input gradients.
#include <myelin/nn/module.h>

#include <cstdint>
#include <string>
#include <vector>

namespace myelin {
class Generator;
}

namespace myelin::nn {

enum class RecurrentMode { RnnTanh, RnnRelu, Lstm, Gru };

// "RNN_TANH", "RNN_RELU", "LSTM", "GRU" (PyTorch's mode strings).
const char* recurrent_mode_name(RecurrentMode mode);
// Gates per hidden unit: 1 (RNN), 4 (LSTM), 3 (GRU).
int64_t recurrent_gate_count(RecurrentMode mode);

struct RecurrentOptions {
    int64_t num_layers = 1;
    bool bias = true;
    bool batch_first = false;
    double dropout = 0.0; // on the outputs of every layer but the last, in training mode only
    bool bidirectional = false;
};

namespace functional {

struct RecurrentConfig {
    RecurrentMode mode = RecurrentMode::Lstm;
    int64_t hidden_size = 0;
    int64_t num_layers = 1;
    bool bias = true;
    bool batch_first = false;
    bool bidirectional = false;
    double dropout = 0.0;
    bool training = false;
    Generator* generator = nullptr; // dropout's generator; the default one when null
};

struct RecurrentResult {
    Tensor output; // [T, B, D*H] ([B, T, D*H] batch_first; [T, D*H] unbatched)
    Tensor h_n;    // [L*D, B, H] ([L*D, H] unbatched)
    Tensor c_n;    // LSTM only
};

// weights: PyTorch's _flat_weights order: for each layer, for each direction, weight_ih,
// weight_hh and (with bias) bias_ih, bias_hh. h0 / c0 / lengths may be undefined. float32 or
// float64; every floating tensor must have x's dtype.
RecurrentResult recurrent(const Tensor& x, const Tensor& h0, const Tensor& c0,
                          const Tensor& lengths, const std::vector<Tensor>& weights,
                          const RecurrentConfig& config);

} // namespace functional

// What RNN, LSTM and GRU share (PyTorch's RNNBase).
class RNNBase : public Module {
  public:
    RNNBase(const std::string& type_name, RecurrentMode mode, int64_t input_size,
            int64_t hidden_size, const RecurrentOptions& options);

    int num_inputs() const override { return -1; } // x, [h0, [c0]], [lengths]
    int num_outputs() const override { return mode == RecurrentMode::Lstm ? 3 : 2; }
    TensorList forward_outputs(const TensorList& inputs) override;
    Tensor forward(const TensorList& inputs) override { return forward_outputs(inputs).at(0); }
    std::string extra_repr() const override;
    // uniform(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) over every parameter, in order.
    void reset_parameters();
    // The parameters in PyTorch's _flat_weights order (handles to the registered tensors).
    const std::vector<Tensor>& flat_weights() const { return flat_weights_; }

    const RecurrentMode mode;
    const int64_t input_size;
    const int64_t hidden_size;
    const int64_t num_layers;
    const bool bias;
    const bool batch_first;
    const double dropout;
    const bool bidirectional;
    Generator* generator = nullptr; // dropout's generator; the default one when null

  private:
    std::vector<Tensor> flat_weights_;
};

// nonlinearity "tanh" or "relu".
class RNN : public RNNBase {
  public:
    RNN(int64_t input_size, int64_t hidden_size, const RecurrentOptions& options = {},
        const std::string& nonlinearity = "tanh");
    const std::string nonlinearity;
};

class LSTM : public RNNBase {
  public:
    LSTM(int64_t input_size, int64_t hidden_size, const RecurrentOptions& options = {});
};

class GRU : public RNNBase {
  public:
    GRU(int64_t input_size, int64_t hidden_size, const RecurrentOptions& options = {});
};

} // namespace myelin::nn
