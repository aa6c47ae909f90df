#include "quant/quantized_recurrent.h"

#include <myelin/error.h>
#include <myelin/nn/recurrent.h>
#include <myelin/quant/kernels.h>

#include <cstring>

namespace myelin::quant::detail {

namespace {

Tensor one_minus(const Tensor& t) {
    return add(mul(t, -1.0), 1.0);
}

// One layer's and direction's parameters: PyTorch's names and values.
struct Cell {
    std::string suffix; // "_l0", "_l0_reverse"
    QuantizedWeight w_ih, w_hh;
    Tensor b_ih, b_hh; // undefined without bias
};

class DynamicRecurrent final : public nn::Module {
  public:
    DynamicRecurrent(const nn::RNNBase& shape, bool last_only, std::vector<Cell> cells)
        : Module(std::string("DynamicQuantized") + (shape.mode == nn::RecurrentMode::Lstm ? "LSTM"
                                                    : shape.mode == nn::RecurrentMode::Gru
                                                        ? "GRU"
                                                        : "RNN")),
          mode_(shape.mode), hidden_(shape.hidden_size), layers_(shape.num_layers),
          directions_(shape.bidirectional ? 2 : 1), last_only_(last_only),
          cells_(std::move(cells)) {
        for (const Cell& c : cells_) {
            for (const auto& [name, w] :
                 {std::pair{"weight_ih", &c.w_ih}, std::pair{"weight_hh", &c.w_hh}}) {
                Tensor bytes = empty(w->shape, DType::UInt8);
                std::memcpy(bytes.data_ptr(), w->values.data(), w->values.size());
                register_buffer(name + c.suffix, bytes);
                register_buffer(name + c.suffix + "_scale",
                                from_vector(w->scales, Dims{int64_t(w->scales.size())}));
                int8_names_.push_back(name + c.suffix);
            }
            if (c.b_ih.defined()) {
                register_buffer("bias_ih" + c.suffix, c.b_ih);
                register_buffer("bias_hh" + c.suffix, c.b_hh);
            }
        }
    }

    int num_inputs() const override { return -1; } // x, [lengths]
    int num_outputs() const override { return mode_ == nn::RecurrentMode::Lstm ? 3 : 2; }
    Tensor forward(const TensorList& inputs) override { return forward_outputs(inputs).at(0); }
    const std::vector<std::string>& int8_names() const { return int8_names_; }

    TensorList forward_outputs(const TensorList& inputs) override {
        if (inputs.empty() || inputs.size() > 2 || inputs[0].dim() != 3)
            throw Error(type_name() + ": expected the input sequence [N, T, F] and optionally "
                                      "the lengths");
        Tensor x = inputs[0].to(DType::Float32).contiguous();
        const int64_t n = x.size(0), steps = x.size(1);
        // valid[t]: [N, 1], 1 where step t is inside the sequence (all ones without lengths).
        std::vector<Tensor> valid;
        if (inputs.size() == 2) {
            const Tensor lengths = inputs[1].to(DType::Float32).reshape(Dims{n, 1});
            for (int64_t t = 0; t < steps; ++t)
                valid.push_back(lt(full(Dims{n, 1}, double(t)), lengths).to(DType::Float32));
        }
        TensorList h_n, c_n;
        for (int64_t layer = 0; layer < layers_; ++layer) {
            TensorList outputs;
            for (int64_t d = 0; d < directions_; ++d) {
                const Cell& cell = cells_[size_t(layer * directions_ + d)];
                Tensor h = zeros(Dims{n, hidden_}), c = zeros(Dims{n, hidden_});
                TensorList out;
                out.resize(size_t(steps));
                for (int64_t k = 0; k < steps; ++k) {
                    const int64_t t = d == 0 ? k : steps - 1 - k;
                    const Tensor gi =
                        dynamic_quantized_linear(x.select(1, t).contiguous(), cell.w_ih, cell.b_ih);
                    const Tensor gh = dynamic_quantized_linear(h, cell.w_hh, cell.b_hh);
                    auto [h_new, c_new] = step(gi, gh, h, c);
                    if (valid.empty()) {
                        h = h_new;
                        c = c_new;
                        out[size_t(t)] = h_new;
                    } else {
                        // Past a sequence's end the states stay and the output is 0, as
                        // pack_padded_sequence gives.
                        const Tensor& v = valid[size_t(t)];
                        h = add(mul(v, h_new), mul(one_minus(v), h));
                        if (c_new.defined()) c = add(mul(v, c_new), mul(one_minus(v), c));
                        out[size_t(t)] = mul(v, h_new);
                    }
                }
                outputs.push_back(stack(out, 1));
                h_n.push_back(h);
                if (mode_ == nn::RecurrentMode::Lstm) c_n.push_back(c);
            }
            x = directions_ == 1 ? outputs[0] : cat(outputs, 2).contiguous();
        }
        TensorList ports;
        if (last_only_) {
            const size_t top = size_t((layers_ - 1) * directions_);
            ports.push_back(directions_ == 1 ? h_n[top] : cat({h_n[top], h_n[top + 1]}, 1));
        } else {
            ports.push_back(x);
        }
        // [L*D, N, H] -> [N, L*D*H], as the editor's recurrent kinds hand on their states.
        auto batch_first = [&](const TensorList& states) {
            return stack(states, 1).reshape(Dims{n, int64_t(states.size()) * hidden_});
        };
        ports.push_back(batch_first(h_n));
        if (mode_ == nn::RecurrentMode::Lstm) ports.push_back(batch_first(c_n));
        return ports;
    }

  private:
    // One step from the input's and the state's gate pre-activations (PyTorch's gate order).
    std::pair<Tensor, Tensor> step(const Tensor& gi, const Tensor& gh, const Tensor& h,
                                   const Tensor& c) const {
        const int64_t H = hidden_;
        auto part = [&](const Tensor& g, int64_t k) { return g.narrow(1, k * H, H); };
        switch (mode_) {
        case nn::RecurrentMode::Lstm: {
            const Tensor g = add(gi, gh);
            const Tensor i = sigmoid(part(g, 0)), f = sigmoid(part(g, 1));
            const Tensor cell = tanh(part(g, 2)), o = sigmoid(part(g, 3));
            const Tensor c_new = add(mul(f, c), mul(i, cell));
            return {mul(o, tanh(c_new)), c_new};
        }
        case nn::RecurrentMode::Gru: {
            const Tensor r = sigmoid(add(part(gi, 0), part(gh, 0)));
            const Tensor z = sigmoid(add(part(gi, 1), part(gh, 1)));
            const Tensor candidate = tanh(add(part(gi, 2), mul(r, part(gh, 2))));
            return {add(mul(one_minus(z), candidate), mul(z, h)), Tensor()};
        }
        case nn::RecurrentMode::RnnRelu:
            return {relu(add(gi, gh)), Tensor()};
        case nn::RecurrentMode::RnnTanh:
            break;
        }
        return {tanh(add(gi, gh)), Tensor()};
    }

    nn::RecurrentMode mode_;
    int64_t hidden_, layers_, directions_;
    bool last_only_;
    std::vector<Cell> cells_;
    std::vector<std::string> int8_names_;
};

const nn::RNNBase& recurrent_of(const nn::Module& m) {
    const auto* r = dynamic_cast<const nn::RNNBase*>(&m);
    if (!r) throw Error("quantization: " + m.type_name() + " is not a recurrent layer");
    if (r->batch_first == false)
        throw Error("quantization: only batch-first recurrent layers have an int8 form");
    return *r;
}

std::vector<std::string> suffixes(const nn::RNNBase& r) {
    std::vector<std::string> out;
    for (int64_t layer = 0; layer < r.num_layers; ++layer)
        for (int d = 0; d < (r.bidirectional ? 2 : 1); ++d)
            out.push_back("_l" + std::to_string(layer) + (d ? "_reverse" : ""));
    return out;
}

} // namespace

bool is_recurrent_kind(const std::string& kind) {
    return kind == "LSTM" || kind == "GRU" || kind == "RNN";
}

std::shared_ptr<nn::Module> dynamic_recurrent(const nn::Module& float_module, bool last_only) {
    const nn::RNNBase& r = recurrent_of(float_module);
    auto param = [&](const std::string& name) {
        for (const auto& [n, p] : r.named_parameters(false))
            if (n == name) return p.detach().to(kCPU).to(DType::Float32).contiguous();
        return Tensor();
    };
    std::vector<Cell> cells;
    for (const std::string& s : suffixes(r)) {
        Cell c;
        c.suffix = s;
        c.w_ih = quantize_weight_per_tensor(param("weight_ih" + s));
        c.w_hh = quantize_weight_per_tensor(param("weight_hh" + s));
        if (r.bias) {
            c.b_ih = param("bias_ih" + s).clone();
            c.b_hh = param("bias_hh" + s).clone();
        }
        cells.push_back(std::move(c));
    }
    return std::make_shared<DynamicRecurrent>(r, last_only, std::move(cells));
}

std::shared_ptr<nn::Module> dynamic_recurrent(const nn::Module& float_module, bool last_only,
                                              const std::string& prefix,
                                              const nn::StateDict& tensors,
                                              const std::string& where) {
    const nn::RNNBase& r = recurrent_of(float_module);
    auto find = [&](const std::string& name) -> const Tensor* {
        for (const auto& [key, t] : tensors)
            if (key == prefix + name) return &t;
        return nullptr;
    };
    auto shape_of = [&](const std::string& name) {
        for (const auto& [n, p] : r.named_parameters(false))
            if (n == name) return p.sizes();
        return Dims{};
    };
    auto need = [&](const std::string& name, DType dtype, const Dims& shape) -> const Tensor& {
        const Tensor* t = find(name);
        if (!t || t->dtype() != dtype || t->sizes() != shape)
            throw Error(where + ": tensor '" + prefix + name + "' is missing or not " +
                        dtype_name(dtype) + " " + shape.str());
        return *t;
    };
    auto weight = [&](const std::string& name) {
        QuantizedWeight w;
        w.shape = shape_of(name);
        const Tensor& bytes = need(name, DType::UInt8, w.shape);
        w.values.resize(size_t(bytes.numel()));
        std::memcpy(w.values.data(), bytes.contiguous().data_ptr(), w.values.size());
        const Tensor scale = need(name + "_scale", DType::Float32, Dims{1}).contiguous();
        w.scales = {scale.data<float>()[0]};
        if (!(w.scales[0] > 0.0f) || !std::isfinite(w.scales[0]))
            throw Error(where + ": tensor '" + prefix + name + "_scale' holds " +
                        std::to_string(w.scales[0]) + " (a positive, finite scale is needed)");
        return w;
    };
    std::vector<Cell> cells;
    for (const std::string& s : suffixes(r)) {
        Cell c;
        c.suffix = s;
        c.w_ih = weight("weight_ih" + s);
        c.w_hh = weight("weight_hh" + s);
        if (r.bias) {
            c.b_ih = need("bias_ih" + s, DType::Float32, shape_of("bias_ih" + s)).clone();
            c.b_hh = need("bias_hh" + s, DType::Float32, shape_of("bias_hh" + s)).clone();
        }
        cells.push_back(std::move(c));
    }
    return std::make_shared<DynamicRecurrent>(r, last_only, std::move(cells));
}

std::vector<std::string> recurrent_int8_weights(const nn::Module& module) {
    const auto* r = dynamic_cast<const DynamicRecurrent*>(&module);
    return r ? r->int8_names() : std::vector<std::string>{};
}

} // namespace myelin::quant::detail
