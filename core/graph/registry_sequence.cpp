// Layer kinds for sequences (listed in the Embedding category, after Embedding): PaddingLengths,
// the recurrent layers (RNN, LSTM, GRU), PositionalEncoding, TransformerEncoderLayer and the
// reductions SequenceLast and SequenceMeanPool. Everything is batch first: [N, T, features].
//
// The graph has no optional input ports, so the kinds that may take each sequence's length have
// a "num_inputs" attribute (1 or 2): with 2, port 1 ("lengths") takes int64 [N], e.g. from
// PaddingLengths. The recurrent kinds have several output ports: output, h_n (and c_n).
#include "graph/registry_parts.h"

#include <myelin/error.h>
#include <myelin/graph/registry.h>
#include <myelin/nn/attention.h>
#include <myelin/nn/recurrent.h>
#include <myelin/tensor.h>

#include <string>

namespace myelin::graph::detail {

namespace {

// The recurrent layer of the editor. Port 0 is the whole sequence or each sequence's final
// state (h_n of the top layer, both directions concatenated), which with lengths is the state at
// its last valid step. Ports h_n (and c_n for LSTM) are PyTorch's final states made batch first,
// [L*D, N, H] -> [N, L*D*H], so a Linear can take them.
class EditorRecurrent : public nn::RNNBase {
  public:
    EditorRecurrent(const std::string& type_name, nn::RecurrentMode mode, int64_t input_size,
                    int64_t hidden_size, const nn::RecurrentOptions& options, bool last_only)
        : RNNBase(type_name, mode, input_size, hidden_size, options), last_only_(last_only) {}

    // num_outputs() is RNNBase's: 3 for LSTM (output, h_n, c_n), else 2 (output, h_n).
    TensorList forward_outputs(const TensorList& inputs) override {
        TensorList outs = RNNBase::forward_outputs(inputs);
        TensorList ports{port0(outs)};
        for (size_t k = 1; k < outs.size(); ++k) {
            const Tensor& state = outs[k]; // [L * D, N, H]
            ports.push_back(state.permute(Dims{1, 0, 2})
                                .reshape(Dims{state.size(1), state.size(0) * state.size(2)}));
        }
        return ports;
    }
    Tensor forward(const TensorList& inputs) override {
        return port0(RNNBase::forward_outputs(inputs));
    }

  private:
    Tensor port0(const TensorList& outs) const {
        if (!last_only_) return outs[0];
        const Tensor& h_n = outs[1]; // [L * D, N, H]
        const int64_t directions = bidirectional ? 2 : 1;
        const int64_t top = (num_layers - 1) * directions;
        if (directions == 1) return h_n.select(0, top);
        return cat({h_n.select(0, top), h_n.select(0, top + 1)}, 1);
    }

    bool last_only_;
};

// int64 tokens [N, T] -> int64 [N]: the count of non-zero (non-padding) tokens, at least 1.
class PaddingLengths : public nn::Module {
  public:
    PaddingLengths() : Module("PaddingLengths") {}
    Tensor forward(const TensorList& inputs) override {
        return nn::functional::padding_lengths(inputs.at(0));
    }
};

LayerKind sequence_kind(std::string name, std::string doc) {
    LayerKind k = kind(std::move(name), Category::Embedding, std::move(doc));
    k.inputs = {"input", "lengths"};
    k.variadic = true;
    return k;
}

LayerKind recurrent(std::string name, nn::RecurrentMode mode, std::string doc) {
    LayerKind k = sequence_kind(name, std::move(doc));
    k.recurrent = true;
    k.attrs = {attr::integer("input_size", 32, "Features per step of the input.", 1),
               attr::integer("hidden_size", 64, "Features of the hidden state.", 1),
               attr::integer("num_layers", 1, "Stacked recurrent layers.", 1, 16),
               attr::flag("bidirectional", false,
                          "Also run the sequence backwards; outputs are concatenated."),
               attr::number("dropout", 0.0,
                            "Dropout on the outputs of every layer but the last (training only).",
                            0.0, 1.0),
               attr::flag("bias", true, "Learn the bias vectors."),
               attr::choice("output", "sequence", {"sequence", "last"},
                            "sequence: every step's output [N, T, D*H]. last: each sequence's "
                            "final state [N, D*H] (the state at its last valid step)."),
               lengths_port_attr("steps after it are ignored.")};
    if (mode == nn::RecurrentMode::RnnTanh)
        k.attrs.push_back(
            attr::choice("nonlinearity", "tanh", {"tanh", "relu"}, "The cell's activation."));
    k.summary_attrs = {"hidden_size", "output"};
    k.infer = [](const Attrs& a, Inputs in) {
        require_sequence(in, "[N, T, input_size]");
        require_last_dim(in[0], a.get_int("input_size"), "input_size");
        const int64_t features = a.get_int("hidden_size") * (a.get_bool("bidirectional") ? 2 : 1);
        const Dims& s = in[0].shape;
        if (a.get_string("output") == "last") return TensorType{Dims{s[0], features}, in[0].dtype};
        return TensorType{Dims{s[0], s[1], features}, in[0].dtype};
    };
    // Port 0 as above; h_n (and c_n) batch first: [N, num_layers * directions * hidden_size].
    k.outputs = mode == nn::RecurrentMode::Lstm ? std::vector<std::string>{"output", "h_n", "c_n"}
                                                : std::vector<std::string>{"output", "h_n"};
    k.infer_outputs = [infer = k.infer, states = k.outputs.size() - 1](const Attrs& a, Inputs in) {
        std::vector<TensorType> types{infer(a, in)};
        const int64_t width = a.get_int("num_layers") * (a.get_bool("bidirectional") ? 2 : 1) *
                              a.get_int("hidden_size");
        for (size_t k = 0; k < states; ++k)
            types.push_back({Dims{in[0].shape[0], width}, in[0].dtype});
        return types;
    };
    const int64_t gates = nn::recurrent_gate_count(mode);
    // Per layer and direction: W_ih [G*H, in], W_hh [G*H, H], and b_ih, b_hh [G*H].
    k.param_count = [gates](const Attrs& a) {
        const int64_t h = a.get_int("hidden_size"), layers = a.get_int("num_layers");
        const int64_t dirs = a.get_bool("bidirectional") ? 2 : 1;
        int64_t total = 0;
        for (int64_t l = 0; l < layers; ++l) {
            const int64_t in = l == 0 ? a.get_int("input_size") : dirs * h;
            total += dirs * (gates * h * (in + h) + (a.get_bool("bias") ? 2 * gates * h : 0));
        }
        return total;
    };
    k.flops = [gates](const Attrs& a, Inputs in, const TensorType&) {
        const int64_t h = a.get_int("hidden_size"), layers = a.get_int("num_layers");
        const int64_t dirs = a.get_bool("bidirectional") ? 2 : 1;
        const double steps = double(in[0].shape[0]) * double(in[0].shape[1]);
        double total = 0;
        for (int64_t l = 0; l < layers; ++l) {
            const int64_t width = l == 0 ? a.get_int("input_size") : dirs * h;
            total += 2.0 * steps * double(dirs * gates * h * (width + h));
        }
        return total;
    };
    k.build = [name, mode](const Attrs& a) {
        nn::RecurrentOptions options;
        options.num_layers = a.get_int("num_layers");
        options.bias = a.get_bool("bias");
        options.batch_first = true;
        options.dropout = a.get_float("dropout");
        options.bidirectional = a.get_bool("bidirectional");
        nn::RecurrentMode actual = mode;
        if (mode == nn::RecurrentMode::RnnTanh && a.get_string("nonlinearity") == "relu")
            actual = nn::RecurrentMode::RnnRelu;
        return std::make_shared<EditorRecurrent>(name, actual, a.get_int("input_size"),
                                                 a.get_int("hidden_size"), options,
                                                 a.get_string("output") == "last");
    };
    return k;
}

LayerKind reduction(std::string name, std::string doc, BuildFn build) {
    LayerKind k = sequence_kind(std::move(name), std::move(doc));
    k.attrs = {lengths_port_attr("steps after it are ignored.")};
    k.infer = [](const Attrs&, Inputs in) {
        require_sequence(in, "[N, T, features]");
        const Dims& s = in[0].shape;
        return TensorType{Dims{s[0], s[2]}, in[0].dtype};
    };
    k.param_count = no_params;
    k.flops = no_flops;
    k.build = std::move(build);
    return k;
}

} // namespace

AttrDesc lengths_port_attr(const char* after_length) {
    return attr::integer("num_inputs", 1,
                         std::string("1: the sequence only. 2: a second port takes each sequence's "
                                     "length (int64 [N], e.g. from PaddingLengths); ") +
                             after_length,
                         1, 2);
}

// Port 0 must be a float [N, T, features]; port 1, when present, int64 lengths [N].
void require_sequence(Inputs in, const char* layout) {
    if (in[0].dtype == DType::Int64)
        throw DTypeError("expected a float sequence " + std::string(layout) +
                         ", got int64 (tokens need an Embedding first)");
    require_float(in[0]);
    require_rank(in[0], 3, layout);
    if (in.size() > 1) {
        const TensorType& lengths = in[1];
        if (lengths.dtype != DType::Int64)
            throw DTypeError(std::string("the lengths input must be int64, got ") +
                             dtype_name(lengths.dtype));
        if (lengths.shape.size() != 1 || lengths.shape[0] != in[0].shape[0])
            fail("the lengths input must be [N] = [" + std::to_string(in[0].shape[0]) + "], got " +
                 lengths.shape.str());
    }
}

void require_last_dim(const TensorType& t, int64_t expected, const char* attr_name) {
    int64_t got = t.shape[t.shape.size() - 1];
    if (got != expected)
        fail(std::string(attr_name) + " is " + std::to_string(expected) +
             " but the input's last dimension is " + std::to_string(got) + " (input " +
             t.shape.str() + "); set " + attr_name + " to " + std::to_string(got));
}

void add_sequence_kinds(std::vector<LayerKind>& kinds) {
    {
        LayerKind k = kind("PaddingLengths", Category::Embedding,
                           "Each sequence's length: the count of its non-zero (non-padding) "
                           "int64 tokens [N, T] -> int64 [N], at least 1.");
        k.infer = [](const Attrs&, Inputs in) {
            if (in[0].dtype != DType::Int64)
                throw DTypeError(std::string("expected int64 tokens [N, T], got ") +
                                 dtype_name(in[0].dtype));
            if (in[0].shape.size() != 2)
                fail("expected int64 tokens [N, T], got " + in[0].shape.str());
            return TensorType{Dims{in[0].shape[0]}, DType::Int64};
        };
        k.param_count = no_params;
        k.flops = no_flops;
        k.build = simple<PaddingLengths>();
        kinds.push_back(std::move(k));
    }
    // PyTorch's final states are [L*D, N, H]; the ports are batch first so a Linear takes them.
    const std::string states_doc =
        " h_n[n, k*H + j] is PyTorch's h_n[k, n, j] with k = layer * directions + direction "
        "(h_n.permute(1, 0, 2).reshape(N, -1)).";
    kinds.push_back(recurrent("LSTM", nn::RecurrentMode::Lstm,
                              "Long short-term memory over [N, T, input_size] (PyTorch's "
                              "nn.LSTM, batch first). Outputs: output, and the final states h_n "
                              "and c_n as [N, num_layers * directions * hidden_size];" +
                                  states_doc + " c_n likewise."));
    kinds.push_back(recurrent("GRU", nn::RecurrentMode::Gru,
                              "Gated recurrent unit over [N, T, input_size] (PyTorch's nn.GRU, "
                              "batch first). Outputs: output, and the final state h_n as [N, "
                              "num_layers * directions * hidden_size];" +
                                  states_doc));
    kinds.push_back(recurrent("RNN", nn::RecurrentMode::RnnTanh,
                              "Elman recurrent layer over [N, T, input_size] (PyTorch's nn.RNN, "
                              "batch first). Outputs: output, and the final state h_n as [N, "
                              "num_layers * directions * hidden_size];" +
                                  states_doc));
    {
        LayerKind k = kind("PositionalEncoding", Category::Embedding,
                           "Adds each step's position to [N, T, d_model]: a fixed sinusoidal "
                           "table or a learned embedding; then dropout.");
        k.attrs = {attr::integer("d_model", 32, "Features per step.", 1),
                   attr::choice("encoding", "sinusoidal", {"sinusoidal", "learned"},
                                "sinusoidal: fixed sin/cos table. learned: a trained vector "
                                "per position."),
                   attr::integer("max_len", 512, "Longest sequence it accepts.", 1),
                   attr::number("dropout", 0.1, "Dropout after the addition.", 0.0, 1.0)};
        k.summary_attrs = {"encoding"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_sequence(in, "[N, T, d_model]");
            require_last_dim(in[0], a.get_int("d_model"), "d_model");
            if (in[0].shape[1] > a.get_int("max_len"))
                fail("the sequence has " + std::to_string(in[0].shape[1]) +
                     " steps but max_len is " + std::to_string(a.get_int("max_len")));
            return in[0];
        };
        k.param_count = [](const Attrs& a) {
            return a.get_string("encoding") == "learned"
                       ? a.get_int("max_len") * a.get_int("d_model")
                       : int64_t(0);
        };
        k.flops = pointwise(1);
        k.build = [](const Attrs& a) -> nn::ModulePtr {
            if (a.get_string("encoding") == "learned")
                return std::make_shared<nn::LearnedPositionalEncoding>(
                    a.get_int("d_model"), a.get_float("dropout"), a.get_int("max_len"));
            return std::make_shared<nn::SinusoidalPositionalEncoding>(
                a.get_int("d_model"), a.get_float("dropout"), a.get_int("max_len"));
        };
        kinds.push_back(std::move(k));
    }
    {
        LayerKind k =
            sequence_kind("TransformerEncoderLayer",
                          "Self-attention then a feed-forward block, each with a "
                          "skip connection and LayerNorm (PyTorch's nn.TransformerEncoderLayer, "
                          "batch first). With lengths, padded steps are not attended.");
        k.attrs = {
            attr::integer("d_model", 32, "Features per step.", 1),
            attr::integer("nhead", 4, "Attention heads; must divide d_model.", 1),
            attr::integer("dim_feedforward", 128, "Width of the feed-forward block.", 1),
            attr::number("dropout", 0.1, "Dropout probability.", 0.0, 1.0),
            attr::choice("activation", "relu", {"relu", "gelu"}, "Feed-forward activation."),
            attr::flag("norm_first", false, "LayerNorm before each block (pre-norm)."),
            attr::exclusive(attr::number("layer_norm_eps", 1e-5, "LayerNorm's epsilon.", 0.0)),
            lengths_port_attr("steps after it are ignored.")};
        k.summary_attrs = {"d_model", "nhead"};
        k.infer = [](const Attrs& a, Inputs in) {
            require_sequence(in, "[N, T, d_model]");
            require_last_dim(in[0], a.get_int("d_model"), "d_model");
            if (a.get_int("d_model") % a.get_int("nhead") != 0)
                fail("nhead " + std::to_string(a.get_int("nhead")) + " does not divide d_model " +
                     std::to_string(a.get_int("d_model")));
            return in[0];
        };
        // in_proj [3E, E] + [3E], out_proj [E, E] + [E], linear1 [F, E] + [F], linear2 [E, F] +
        // [E], norm1 and norm2 [E] + [E].
        k.param_count = [](const Attrs& a) {
            return encoder_layer_params(a.get_int("d_model"), a.get_int("dim_feedforward"));
        };
        k.flops = [](const Attrs& a, Inputs in, const TensorType&) {
            return encoder_layer_flops(double(in[0].shape[0]), double(in[0].shape[1]),
                                       double(a.get_int("d_model")), double(a.get_int("nhead")),
                                       double(a.get_int("dim_feedforward")),
                                       a.get_string("activation") == "gelu");
        };
        k.build = [](const Attrs& a) {
            return std::make_shared<nn::TransformerEncoderLayer>(
                a.get_int("d_model"), a.get_int("nhead"), encoder_layer_options(a));
        };
        kinds.push_back(std::move(k));
    }
    kinds.push_back(reduction("SequenceLast",
                              "Each sequence's output at its last valid step: [N, T, F] -> [N, F].",
                              simple<nn::SequenceLast>()));
    kinds.push_back(reduction("SequenceMeanPool",
                              "The mean over each sequence's valid steps: [N, T, F] -> [N, F].",
                              simple<nn::SequenceMeanPool>()));
}

} // namespace myelin::graph::detail
