#include "quant/quantized_recurrent.h"

#include "quant/int8_storage.h"

#include <myelin/error.h>
#include <myelin/nn/recurrent.h>
#include <myelin/quant/kernels.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace myelin::quant::detail {

namespace {

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
                register_buffer(name + c.suffix, int8_bytes(*w));
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
        const int64_t n = x.size(0), steps = x.size(1), H = hidden_;
        // Each sequence's length (all steps without lengths).
        std::vector<int64_t> length(size_t(n), steps);
        if (inputs.size() == 2) {
            const Tensor l = inputs[1].to(kCPU).to(DType::Int64).contiguous();
            if (l.numel() != n) throw Error(type_name() + ": expected one length per sequence");
            for (int64_t r = 0; r < n; ++r)
                length[size_t(r)] = l.data<int64_t>()[r];
        }
        TensorList h_n, c_n;
        for (int64_t layer = 0; layer < layers_; ++layer) {
            TensorList outputs;
            for (int64_t d = 0; d < directions_; ++d) {
                const Cell& cell = cells_[size_t(layer * directions_ + d)];
                Tensor h = zeros(Dims{n, H}), c = zeros(Dims{n, H});
                Tensor out = zeros(Dims{n, steps, H});
                // Every step's input projection in one product (their activations quantized
                // together); the state's, which depends on the step before, one step at a time.
                const Tensor gi = dynamic_quantized_linear(x.reshape(Dims{n * steps, x.size(2)}),
                                                           cell.w_ih, cell.b_ih)
                                      .contiguous();
                const int64_t gates = gi.size(1);
                for (int64_t k = 0; k < steps; ++k) {
                    const int64_t t = d == 0 ? k : steps - 1 - k;
                    const Tensor gh =
                        dynamic_quantized_linear(h, cell.w_hh, cell.b_hh).contiguous();
                    step(gi.data<float>() + t * gates, steps * gates, gh.data<float>(),
                         h.data<float>(), c.data<float>(), out.data<float>() + t * H, steps * H, n,
                         t, length);
                }
                outputs.push_back(out);
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
    // One step of every sequence, in place, from the input's and the state's gate
    // pre-activations (row r of gi at gi + r * gi_stride; gh [N, G*H]; PyTorch's gate order): the
    // new state in h (and c), the output at out + row * out_stride. A sequence past its length
    // keeps its state and outputs 0, as pack_padded_sequence gives. Plain loops: at these sizes the
    // work is a few thousand multiply-adds, less than a dozen tensor ops would cost to dispatch.
    void step(const float* gi, int64_t gi_stride, const float* gh, float* h, float* c, float* out,
              int64_t out_stride, int64_t n, int64_t t, const std::vector<int64_t>& length) const {
        const int64_t H = hidden_;
        const int64_t G = mode_ == nn::RecurrentMode::Lstm  ? 4
                          : mode_ == nn::RecurrentMode::Gru ? 3
                                                            : 1;
        auto sigmoid = [](float v) { return 1.0f / (1.0f + std::exp(-v)); };
        for (int64_t r = 0; r < n; ++r) {
            if (t >= length[size_t(r)]) continue; // state kept, output stays 0
            const float* a = gi + r * gi_stride;
            const float* b = gh + r * G * H;
            float* hr = h + r * H;
            float* o = out + r * out_stride;
            for (int64_t j = 0; j < H; ++j) {
                float value;
                switch (mode_) {
                case nn::RecurrentMode::Lstm: {
                    const float i = sigmoid(a[j] + b[j]), f = sigmoid(a[H + j] + b[H + j]);
                    const float g = std::tanh(a[2 * H + j] + b[2 * H + j]);
                    const float og = sigmoid(a[3 * H + j] + b[3 * H + j]);
                    float& cell = c[r * H + j];
                    cell = f * cell + i * g;
                    value = og * std::tanh(cell);
                    break;
                }
                case nn::RecurrentMode::Gru: {
                    const float rg = sigmoid(a[j] + b[j]), z = sigmoid(a[H + j] + b[H + j]);
                    const float candidate = std::tanh(a[2 * H + j] + rg * b[2 * H + j]);
                    value = (1.0f - z) * candidate + z * hr[j];
                    break;
                }
                case nn::RecurrentMode::RnnRelu:
                    value = std::max(a[j] + b[j], 0.0f);
                    break;
                default:
                    value = std::tanh(a[j] + b[j]);
                }
                hr[j] = value;
                o[j] = value;
            }
        }
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
        const Tensor scale = need(name + "_scale", DType::Float32, Dims{1}).contiguous();
        QuantizedWeight w =
            weight_from_bytes(need(name, DType::UInt8, shape_of(name)), {scale.data<float>()[0]});
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
