// functional::recurrent: checks the inputs, then runs the layers one after the other, each as one
// autograd node over the whole sequence (the backend's Recurrent entries, sequence_kernels.h; on
// a device without them, composed from tensor ops step by step), with dropout between them. A
// layer's node produces one flat tensor holding its output, h_n and c_n; the three are views of it,
// so one node serves every output the caller uses.
#include "autograd/function.h"
#include "backend/nn_kernels.h"
#include "nn/functional_common.h"
#include "nn/recurrent_step_norms.h"
#include "tensor/tensor_impl.h"

#include <myelin/autograd.h>
#include <myelin/nn/functional.h>
#include <myelin/nn/recurrent.h>

#include <cmath>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace myelin::nn {

const char* recurrent_mode_name(RecurrentMode mode) {
    switch (mode) {
    case RecurrentMode::RnnTanh:
        return "RNN_TANH";
    case RecurrentMode::RnnRelu:
        return "RNN_RELU";
    case RecurrentMode::Lstm:
        return "LSTM";
    case RecurrentMode::Gru:
        return "GRU";
    }
    return "?";
}

namespace {

// The backend's name for a cell (its kernels and gate counts are keyed by it).
backend::RecurrentCell cell_of(RecurrentMode mode) {
    switch (mode) {
    case RecurrentMode::RnnTanh:
        return backend::RecurrentCell::RnnTanh;
    case RecurrentMode::RnnRelu:
        return backend::RecurrentCell::RnnRelu;
    case RecurrentMode::Lstm:
        return backend::RecurrentCell::Lstm;
    case RecurrentMode::Gru:
        break;
    }
    return backend::RecurrentCell::Gru;
}

} // namespace

int64_t recurrent_gate_count(RecurrentMode mode) {
    return backend::recurrent_gate_count(cell_of(mode));
}

namespace functional {

using autograd::Node;
using autograd::SavedTensor;
using backend::RecurrentGeometry;
using detail::shape_error;

namespace {

std::string op_name(RecurrentMode mode) {
    switch (mode) {
    case RecurrentMode::Lstm:
        return "LSTM";
    case RecurrentMode::Gru:
        return "GRU";
    default:
        return "RNN";
    }
}

struct LayerOutputs {
    Tensor out; // [rows, D*H]
    Tensor hn;  // [D, B, H]
    Tensor cn;  // LSTM
};

// The buffers a layer's forward keeps for its backward (see RecurrentSaved).
struct SavedBuffers {
    Tensor act, xh, cprev, tc, ghn;
    std::shared_ptr<const detail::StepGradientSink> sink; // per-step gradient norms; null: none
    backend::RecurrentSaved raw() const {
        auto p = [](const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; };
        return {p(act), p(xh), p(cprev), p(tc), p(ghn)};
    }
};

backend::RecurrentWeights raw_weights(const TensorList& params, int D, bool bias) {
    backend::RecurrentWeights w;
    const size_t per = bias ? 4 : 2;
    for (int d = 0; d < D; ++d) {
        const size_t k = static_cast<size_t>(d) * per;
        w.w_ih[d] = params[k].data_ptr();
        w.w_hh[d] = params[k + 1].data_ptr();
        if (bias) {
            w.b_ih[d] = params[k + 2].data_ptr();
            w.b_hh[d] = params[k + 3].data_ptr();
        }
    }
    return w;
}

const void* ptr_or_null(const Tensor& t) {
    return t.defined() ? t.data_ptr() : nullptr;
}

TensorList layer_backward(const RecurrentGeometry& s, const Tensor& grad, const Tensor& x,
                          const TensorList& params, bool bias, const SavedBuffers& saved,
                          const Node& node) {
    const int D = s.D;
    const int64_t rows = s.rows(), state = D * s.B * s.H;
    const bool lstm = s.cell == backend::RecurrentCell::Lstm;
    const Tensor g = grad.contiguous();
    // g holds dout, dh_n and dc_n one after the other (the forward's flat output).
    const Tensor flat_g = g.view({-1});
    const TensorOptions opts = x.options();
    TensorList result(3 + params.size());
    backend::RecurrentBackwardArgs args;
    args.dout = flat_g.data_ptr();
    args.dhn = flat_g.narrow(0, rows * D * s.H, state).data_ptr();
    if (lstm) args.dcn = flat_g.narrow(0, rows * D * s.H + state, state).data_ptr();
    if (node.needs_input_grad(0)) {
        result[0] = empty({rows, s.I}, opts);
        args.dx = result[0].data_ptr();
    }
    if (node.needs_input_grad(1)) {
        result[1] = empty({D, s.B, s.H}, opts);
        args.dh0 = result[1].data_ptr();
    }
    if (lstm && node.needs_input_grad(2)) {
        result[2] = empty({D, s.B, s.H}, opts);
        args.dc0 = result[2].data_ptr();
    }
    const size_t per = bias ? 4 : 2;
    for (int d = 0; d < D; ++d) {
        void** slots[4] = {&args.dw_ih[d], &args.dw_hh[d], &args.db_ih[d], &args.db_hh[d]};
        for (size_t j = 0; j < per; ++j) {
            const size_t k = static_cast<size_t>(d) * per + j;
            if (!node.needs_input_grad(3 + k)) continue;
            result[3 + k] = empty(params[k].shape(), opts);
            *slots[j] = result[3 + k].data_ptr();
        }
    }
    std::vector<double> step_norms(saved.sink ? size_t(D * s.T) : 0);
    if (saved.sink) args.step_grad_norms = step_norms.data();
    detail::nn_table(x, backend::Primitive::Recurrent)
        .recurrent_backward(s, raw_weights(params, D, bias), saved.raw(), args);
    if (saved.sink) detail::report_step_gradients(*saved.sink, s, step_norms);
    return result;
}

// One layer, all directions: x [rows, I] contiguous, h0 / c0 [D, B, H] or undefined, params the
// layer's weights in _flat_weights order.
LayerOutputs run_layer(const RecurrentGeometry& s, const Tensor& x, const Tensor& h0,
                       const Tensor& c0, const TensorList& params, bool bias,
                       const std::shared_ptr<std::vector<int64_t>>& lengths, int64_t layer) {
    const int D = s.D;
    const int64_t rows = s.rows(), H = s.H, G = s.gates(), state = D * s.B * H;
    const bool lstm = s.cell == backend::RecurrentCell::Lstm,
               gru = s.cell == backend::RecurrentCell::Gru;
    const TensorOptions opts = x.options();
    Tensor flat = empty({rows * D * H + state * (lstm ? 2 : 1)}, opts);
    TensorList inputs{x, h0, c0};
    inputs.insert(inputs.end(), params.begin(), params.end());
    const bool backward = autograd::any_requires_grad(inputs) && autograd::is_grad_enabled();
    SavedBuffers saved;
    saved.sink = detail::step_gradient_sink(layer);
    saved.act = empty({D * rows * G}, opts); // the gates, also the kernel's working rows
    if (backward) { // what only the backward reads (inference writes none of it)
        saved.xh = empty({D * rows * s.xh_stride()}, opts);
        if (lstm) {
            saved.cprev = empty({D * rows * H}, opts);
            saved.tc = empty({D * rows * H}, opts);
        }
        if (gru) saved.ghn = empty({D * rows * H}, opts);
    }

    const Tensor xv = x.detach();
    const Tensor h0v = h0.defined() ? h0.detach().contiguous() : Tensor();
    const Tensor c0v = c0.defined() ? c0.detach().contiguous() : Tensor();
    TensorList pv;
    for (const Tensor& p : params)
        pv.push_back(p.detach().contiguous());
    RecurrentGeometry shape = s;
    shape.lengths = lengths ? lengths->data() : nullptr;
    shape.has_h0 = h0.defined();
    backend::RecurrentForwardArgs args;
    args.x = xv.data_ptr();
    args.h0 = ptr_or_null(h0v);
    args.c0 = ptr_or_null(c0v);
    args.out = flat.data_ptr();
    args.hn = flat.narrow(0, rows * D * H, state).data_ptr();
    if (lstm) args.cn = flat.narrow(0, rows * D * H + state, state).data_ptr();
    detail::nn_table(x, backend::Primitive::Recurrent)
        .recurrent_forward(shape, raw_weights(pv, D, bias), args, saved.raw());

    if (backward) {
        std::vector<SavedTensor> saved_params;
        for (const Tensor& p : pv)
            saved_params.emplace_back(p);
        autograd::record_list("RecurrentLayerBackward0", inputs, flat,
                              [s = shape, bias, saved, lengths, sx = SavedTensor(xv),
                               saved_params](const Tensor& grad, const Node& node) {
                                  RecurrentGeometry sh = s;
                                  sh.lengths = lengths ? lengths->data() : nullptr;
                                  const Tensor xs = sx.unpack(node);
                                  TensorList ps;
                                  for (const SavedTensor& p : saved_params)
                                      ps.push_back(p.unpack(node));
                                  return layer_backward(sh, grad, xs, ps, bias, saved, node);
                              });
    }
    LayerOutputs r;
    r.out = flat.narrow(0, 0, rows * D * H).view({rows, D * H});
    r.hn = flat.narrow(0, rows * D * H, state).view({D, s.B, H});
    if (lstm) r.cn = flat.narrow(0, rows * D * H + state, state).view({D, s.B, H});
    return r;
}

// One layer, all directions, composed from differentiable tensor ops step by step: what runs on
// a device whose memory the host cannot read (CUDA). The same equations as the kernels
// (PyTorch's): x W_ih^T + b_ih for every step in one product, then per step h W_hh^T + b_hh; with
// lengths, a step past a sequence's end leaves its state as it was and outputs zeros, so the
// reverse direction starts at each sequence's last step. `valid` [T, B, 1] bool, or undefined.
// With a sink (RecordRecurrentGradients), a hook on every step's hidden state takes the norm of
// the whole gradient reaching it over the sequences still going (the kernels' step norms) and
// the last one of the layer reports them.
LayerOutputs run_layer_composed(const RecurrentGeometry& s, const Tensor& x, const Tensor& h0,
                                const Tensor& c0, const TensorList& params, bool bias,
                                const Tensor& valid,
                                const std::shared_ptr<const detail::StepGradientSink>& sink) {
    const int64_t T = s.T, B = s.B, H = s.H, G = s.gates();
    const size_t per = bias ? 4 : 2;
    const bool lstm = s.cell == backend::RecurrentCell::Lstm;
    const TensorOptions opts = x.options();
    struct StepNorms {
        std::mutex mutex;
        std::vector<double> norms;
        int64_t pending = 0;
    };
    std::shared_ptr<StepNorms> step_norms;
    if (sink && autograd::is_grad_enabled()) {
        step_norms = std::make_shared<StepNorms>();
        step_norms->norms.assign(size_t(s.D * T), 0.0);
    }
    TensorList outs, hns, cns;
    for (int d = 0; d < s.D; ++d) {
        const Tensor& w_ih = params[d * per];
        const Tensor& w_hh = params[d * per + 1];
        const Tensor b_ih = bias ? params[d * per + 2] : Tensor();
        const Tensor b_hh = bias ? params[d * per + 3] : Tensor();
        const Tensor xg = linear(x, w_ih, b_ih);
        const Tensor steps = s.batch_first ? xg.view({B, T, G}) : xg.view({T, B, G});
        const Tensor zero = zeros({B, H}, opts); // initial states and padded outputs
        Tensor h = h0.defined() ? h0.select(0, d) : zero;
        Tensor c = !lstm ? Tensor() : c0.defined() ? c0.select(0, d) : zero;
        TensorList out(static_cast<size_t>(T));
        for (int64_t k = 0; k < T; ++k) {
            const int64_t t = d == 0 ? k : T - 1 - k;
            const Tensor xt = steps.select(s.batch_first ? 1 : 0, t); // [B, G]
            const Tensor ht = linear(h, w_hh, b_hh);
            const Tensor v = valid.defined() ? valid.select(0, t) : Tensor(); // [B, 1]
            auto gate = [&](const Tensor& g, int64_t i) { return g.narrow(1, i * H, H); };
            Tensor h_new, c_new;
            switch (s.cell) {
            case backend::RecurrentCell::Lstm: {
                const Tensor g = xt + ht;
                c_new = sigmoid(gate(g, 1)) * c + sigmoid(gate(g, 0)) * tanh(gate(g, 2));
                h_new = sigmoid(gate(g, 3)) * tanh(c_new);
                break;
            }
            case backend::RecurrentCell::Gru: {
                const Tensor r = sigmoid(gate(xt, 0) + gate(ht, 0));
                const Tensor z = sigmoid(gate(xt, 1) + gate(ht, 1));
                const Tensor n = tanh(gate(xt, 2) + r * gate(ht, 2));
                h_new = n + z * (h - n);
                break;
            }
            case backend::RecurrentCell::RnnTanh:
                h_new = tanh(xt + ht);
                break;
            case backend::RecurrentCell::RnnRelu:
                h_new = relu(xt + ht);
                break;
            }
            if (v.defined()) {
                h_new = where(v, h_new, h);
                if (lstm) c_new = where(v, c_new, c);
                out[static_cast<size_t>(t)] = where(v, h_new, zero);
            } else {
                out[static_cast<size_t>(t)] = h_new;
            }
            if (step_norms && h_new.requires_grad()) {
                ++step_norms->pending;
                h_new.register_hook(
                    [step_norms, sink, s, v, at = size_t(d * T + t)](const Tensor& g) {
                        double norm = 0;
                        {
                            autograd::NoGradGuard no_grad;
                            const Tensor counted = v.defined() ? where(v, g, zeros_like(g)) : g;
                            norm = std::sqrt((counted * counted).sum().to(DType::Float64).item());
                        }
                        std::lock_guard<std::mutex> lock(step_norms->mutex);
                        step_norms->norms[at] = norm;
                        if (--step_norms->pending == 0)
                            detail::report_step_gradients(*sink, s, step_norms->norms);
                        return Tensor();
                    });
            }
            h = h_new;
            c = c_new;
        }
        outs.push_back(stack(out, s.batch_first ? 1 : 0).reshape({T * B, H}));
        hns.push_back(h);
        if (lstm) cns.push_back(c);
    }
    LayerOutputs r;
    r.out = s.D == 1 ? outs[0] : cat(outs, 1);
    r.hn = stack(hns, 0);
    if (lstm) r.cn = stack(cns, 0);
    return r;
}

void check_state(const std::string& op, const char* name, const Tensor& t, const Tensor& x,
                 int64_t LD, int64_t B, int64_t H, bool batched) {
    if (!t.defined()) return;
    detail::require_same_dtype(op.c_str(), name, t, x);
    const Dims want = batched ? Dims{LD, B, H} : Dims{LD, H};
    if (t.shape() != want)
        shape_error(op.c_str(), std::string("expected ") + name + " of shape " + want.str() +
                                    " ([num_layers * num_directions, " +
                                    (batched ? "batch, " : "") + "hidden_size]), got " +
                                    t.shape().str());
}

} // namespace

RecurrentResult recurrent(const Tensor& x_in, const Tensor& h0_in, const Tensor& c0_in,
                          const Tensor& lengths, const std::vector<Tensor>& weights,
                          const RecurrentConfig& cfg) {
    const std::string op = op_name(cfg.mode);
    const char* opc = op.c_str();
    const bool lstm = cfg.mode == RecurrentMode::Lstm;
    const int D = cfg.bidirectional ? 2 : 1;
    const int64_t L = cfg.num_layers, H = cfg.hidden_size, G = recurrent_gate_count(cfg.mode) * H;
    if (!x_in.defined()) throw Error(op + ": the input is undefined");
    detail::require_f32_f64(opc, "input", x_in);
    if (x_in.dim() != 2 && x_in.dim() != 3)
        shape_error(
            opc, std::string("expected input ") +
                     (cfg.batch_first ? "[batch, seq, input_size]" : "[seq, batch, input_size]") +
                     " (3-D) or unbatched [seq, input_size] (2-D), got " + x_in.shape().str());
    if (L < 1 || H < 1) throw Error(op + ": num_layers and hidden_size must be positive");
    const bool batched = x_in.dim() == 3;
    const int batch_dim = cfg.batch_first ? 0 : 1;
    const Tensor x = batched ? x_in : x_in.unsqueeze(batch_dim);
    const int64_t T = x.size(cfg.batch_first ? 1 : 0), B = x.size(batch_dim), I = x.size(2);
    if (T == 0 || B == 0 || I == 0)
        shape_error(opc, "expected a non-empty input (sequence length, batch and input_size > "
                         "0), got " +
                             x_in.shape().str());

    // Weights: PyTorch's _flat_weights order and shapes.
    const size_t per = cfg.bias ? 4 : 2;
    if (weights.size() != static_cast<size_t>(L * D) * per)
        throw Error(op + ": expected " + std::to_string(L * D * static_cast<int64_t>(per)) +
                    " weight tensors, got " + std::to_string(weights.size()));
    for (int64_t l = 0; l < L; ++l)
        for (int d = 0; d < D; ++d)
            for (size_t j = 0; j < per; ++j) {
                const Tensor& w = weights[static_cast<size_t>(l * D + d) * per + j];
                static const char* const names[] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
                const std::string name =
                    std::string(names[j]) + "_l" + std::to_string(l) + (d == 1 ? "_reverse" : "");
                const int64_t in = j == 0 ? (l == 0 ? I : D * H) : H;
                const Dims want = j < 2 ? Dims{G, in} : Dims{G};
                if (!w.defined() || w.shape() != want)
                    shape_error(opc, "expected " + name + " of shape " + want.str() + ", got " +
                                         (w.defined() ? w.shape().str() : "none") +
                                         (j == 0 && l == 0
                                              ? " (input_size " + std::to_string(I) +
                                                    " from the input " + x_in.shape().str() + ")"
                                              : ""));
                detail::require_same_dtype(opc, name.c_str(), w, x);
            }

    // Initial states.
    if (!lstm && c0_in.defined()) throw Error(op + ": takes no c0 (only LSTM has a cell state)");
    if (lstm && h0_in.defined() != c0_in.defined())
        throw Error(op + ": expected both h0 and c0, or neither");
    check_state(op, "h0", h0_in, x, L * D, B, H, batched);
    check_state(op, "c0", c0_in, x, L * D, B, H, batched);
    const Tensor h0 = h0_in.defined() && !batched ? h0_in.unsqueeze(1) : h0_in;
    const Tensor c0 = c0_in.defined() && !batched ? c0_in.unsqueeze(1) : c0_in;

    // Lengths.
    std::shared_ptr<std::vector<int64_t>> lens;
    if (lengths.defined()) {
        if (lengths.dtype() != DType::Int64)
            throw DTypeError(op + ": expected lengths of dtype int64, got " +
                             dtype_name(lengths.dtype()));
        if (lengths.dim() != 1 || lengths.size(0) != B)
            shape_error(opc, "expected lengths of shape [" + std::to_string(B) +
                                 "] (one per sequence of the batch), got " + lengths.shape().str());
        detail::check_int_values(lengths, 1, T, std::nullopt, [&](const int64_t* n, int64_t count) {
            for (int64_t b = 0; b < count; ++b)
                if (n[b] < 1 || n[b] > T)
                    throw Error(op + ": lengths[" + std::to_string(b) + "] is " +
                                std::to_string(n[b]) + ", expected 1 to the sequence length " +
                                std::to_string(T));
        });
    }

    RecurrentGeometry s;
    s.cell = cell_of(cfg.mode);
    s.dtype = x.dtype();
    s.T = T;
    s.B = B;
    s.H = H;
    s.D = D;
    s.batch_first = cfg.batch_first;
    const int64_t rows = T * B;
    Tensor layer_in = x.contiguous().view({rows, I});
    // The device's Recurrent entries take the lengths in host memory; without them the layers
    // are composed from device ops, the lengths a mask on the device.
    const bool fused = detail::device_runs(x, backend::Primitive::Recurrent);
    Tensor valid; // [T, B, 1]: step t is within sequence b
    if (lengths.defined() && fused) {
        const Tensor lc = lengths.detach().to(kCPU).contiguous();
        lens = std::make_shared<std::vector<int64_t>>(lc.data<int64_t>(), lc.data<int64_t>() + B);
    } else if (lengths.defined()) {
        const Tensor steps = arange(static_cast<double>(T)).unsqueeze(1).to(DType::Int64);
        valid = lt(steps.to(x.device()), lengths.detach().to(x.device()).unsqueeze(0)).unsqueeze(2);
    }
    TensorList hns, cns;
    Tensor out;
    for (int64_t l = 0; l < L; ++l) {
        s.I = l == 0 ? I : D * H;
        const TensorList params(weights.begin() + static_cast<std::ptrdiff_t>(l * D * per),
                                weights.begin() + static_cast<std::ptrdiff_t>((l + 1) * D * per));
        const Tensor h0l = h0.defined() ? h0.narrow(0, l * D, D) : Tensor();
        const Tensor c0l = c0.defined() ? c0.narrow(0, l * D, D) : Tensor();
        LayerOutputs r = fused ? run_layer(s, layer_in, h0l, c0l, params, cfg.bias, lens, l)
                               : run_layer_composed(s, layer_in, h0l, c0l, params, cfg.bias, valid,
                                                    detail::step_gradient_sink(l));
        hns.push_back(r.hn);
        if (lstm) cns.push_back(r.cn);
        out = r.out;
        if (l + 1 < L && cfg.training && cfg.dropout > 0.0)
            layer_in = dropout(r.out, cfg.dropout, true, cfg.generator);
        else
            layer_in = r.out;
    }
    RecurrentResult result;
    result.output = out.view(cfg.batch_first ? Dims{B, T, D * H} : Dims{T, B, D * H});
    result.h_n = L == 1 ? hns[0] : cat(hns, 0);
    if (lstm) result.c_n = L == 1 ? cns[0] : cat(cns, 0);
    if (!batched) {
        result.output = result.output.squeeze(batch_dim);
        result.h_n = result.h_n.squeeze(1);
        if (lstm) result.c_n = result.c_n.squeeze(1);
    }
    return result;
}

} // namespace functional
} // namespace myelin::nn
