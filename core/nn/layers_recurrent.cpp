// RNN, LSTM and GRU modules: PyTorch's RNNBase parameters (names, shapes, order, init) and
// argument handling around functional::recurrent.
#include "nn/layers_common.h"

#include <myelin/error.h>
#include <myelin/nn/init.h>
#include <myelin/nn/recurrent.h>

#include <cmath>
#include <string>

namespace myelin::nn {

using namespace myelin::nn::detail;

namespace {

RecurrentMode rnn_mode(const std::string& nonlinearity) {
    if (nonlinearity == "tanh") return RecurrentMode::RnnTanh;
    if (nonlinearity == "relu") return RecurrentMode::RnnRelu;
    throw Error("RNN: unknown nonlinearity '" + nonlinearity + "' (expected 'tanh' or 'relu')");
}

} // namespace

RNNBase::RNNBase(const std::string& type_name, RecurrentMode mode_, int64_t input_size_,
                 int64_t hidden_size_, const RecurrentOptions& o)
    : Module(type_name), mode(mode_), input_size(input_size_), hidden_size(hidden_size_),
      num_layers(o.num_layers), bias(o.bias), batch_first(o.batch_first), dropout(o.dropout),
      bidirectional(o.bidirectional) {
    require_positive(*this, input_size, "input_size");
    require_positive(*this, hidden_size, "hidden_size");
    require_positive(*this, num_layers, "num_layers");
    if (!(dropout >= 0.0 && dropout <= 1.0))
        throw Error(type_name +
                    ": dropout should be a number in range [0, 1] representing the "
                    "probability of an element being zeroed, got " +
                    py_float(dropout));
    const int64_t gates = recurrent_gate_count(mode) * hidden_size;
    const int D = bidirectional ? 2 : 1;
    for (int64_t l = 0; l < num_layers; ++l) {
        const int64_t in = l == 0 ? input_size : hidden_size * D;
        for (int d = 0; d < D; ++d) {
            const std::string suffix = "_l" + std::to_string(l) + (d == 1 ? "_reverse" : "");
            flat_weights_.push_back(register_parameter("weight_ih" + suffix, empty({gates, in})));
            flat_weights_.push_back(
                register_parameter("weight_hh" + suffix, empty({gates, hidden_size})));
            if (bias) {
                flat_weights_.push_back(register_parameter("bias_ih" + suffix, empty({gates})));
                flat_weights_.push_back(register_parameter("bias_hh" + suffix, empty({gates})));
            }
        }
    }
    reset_parameters();
}

void RNNBase::reset_parameters() {
    const double stdv = 1.0 / std::sqrt(static_cast<double>(hidden_size));
    for (Tensor& w : flat_weights_)
        init::uniform_(w, -stdv, stdv);
}

TensorList RNNBase::forward_outputs(const TensorList& inputs) {
    const bool lstm = mode == RecurrentMode::Lstm;
    const std::string self = type_name() + "(" + extra_repr() + ")";
    if (inputs.empty() || !inputs[0].defined())
        throw Error(self + ": expected the input sequence as the first input");
    // After x: the states (h0, and c0 for LSTM), then the int64 lengths; an undefined tensor
    // holds a state's place, and the lengths may follow x directly.
    Tensor h0, c0, lengths;
    const size_t max_inputs = lstm ? 4 : 3;
    if (inputs.size() > max_inputs)
        throw Error(self + ": expected at most " + std::to_string(max_inputs) + " inputs (input, " +
                    (lstm ? "h0, c0, " : "h0, ") + "lengths), got " +
                    std::to_string(inputs.size()));
    size_t k = 1;
    auto is_lengths = [](const Tensor& t) { return t.defined() && t.dtype() == DType::Int64; };
    if (k < inputs.size() && !is_lengths(inputs[k])) h0 = inputs[k++];
    if (lstm && k < inputs.size() && !is_lengths(inputs[k])) c0 = inputs[k++];
    if (k < inputs.size()) lengths = inputs[k++];
    if (k != inputs.size() || (lengths.defined() && !is_lengths(lengths)))
        throw Error(self + ": expected inputs (input, " + (lstm ? "h0, c0, " : "h0, ") +
                    "lengths) with the lengths last and of dtype int64");

    functional::RecurrentConfig cfg;
    cfg.mode = mode;
    cfg.hidden_size = hidden_size;
    cfg.num_layers = num_layers;
    cfg.bias = bias;
    cfg.batch_first = batch_first;
    cfg.bidirectional = bidirectional;
    cfg.dropout = dropout;
    cfg.training = is_training();
    cfg.generator = generator;
    const functional::RecurrentResult r =
        functional::recurrent(inputs[0], h0, c0, lengths, flat_weights_, cfg);
    if (lstm) return {r.output, r.h_n, r.c_n};
    return {r.output, r.h_n};
}

std::string RNNBase::extra_repr() const {
    std::string s = std::to_string(input_size) + ", " + std::to_string(hidden_size);
    if (num_layers != 1) s += ", num_layers=" + std::to_string(num_layers);
    if (!bias) s += ", bias=False";
    if (batch_first) s += ", batch_first=True";
    if (dropout != 0.0) s += ", dropout=" + py_float(dropout);
    if (bidirectional) s += ", bidirectional=True";
    return s;
}

RNN::RNN(int64_t input_size, int64_t hidden_size, const RecurrentOptions& options,
         const std::string& nonlinearity_)
    : RNNBase("RNN", rnn_mode(nonlinearity_), input_size, hidden_size, options),
      nonlinearity(nonlinearity_) {}

LSTM::LSTM(int64_t input_size, int64_t hidden_size, const RecurrentOptions& options)
    : RNNBase("LSTM", RecurrentMode::Lstm, input_size, hidden_size, options) {}

GRU::GRU(int64_t input_size, int64_t hidden_size, const RecurrentOptions& options)
    : RNNBase("GRU", RecurrentMode::Gru, input_size, hidden_size, options) {}

} // namespace myelin::nn
