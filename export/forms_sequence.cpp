// Export forms of the sequence kinds: PaddingLengths, LSTM, GRU, RNN, PositionalEncoding,
// SequenceLast and SequenceMeanPool (the attention kinds are in forms_attention.cpp).
//
// ONNX: the recurrent layers are ONNX's LSTM / GRU / RNN nodes, one per stacked layer, on
// time-major input (layout 0: onnxruntime runs no batch-first layout), with PyTorch's gate
// blocks reordered (LSTM i f g o -> i o f c, GRU r z n -> z r h with linear_before_reset=1) and
// the lengths as sequence_lens. PyTorch: nn.LSTM / nn.GRU / nn.RNN themselves (so the
// checkpoint loads strictly), with the lengths through pack_padded_sequence, in small helper
// functions written once into the file.
#include "forms_parts.h"

#include <myelin/nn/attention.h>

namespace myelin::exporters::detail {

namespace {

// --- shared ONNX pieces -------------------------------------------------------------------------

// --- PaddingLengths -----------------------------------------------------------------------------

// The count of non-zero tokens per row, at least 1.
std::string padding_lengths(OnnxGraph& g, const OnnxLayer& l) {
    const std::string zero = scalar_int(g, l.name("zero"), 0);
    std::string t = g.op("Equal", {l.inputs[0], zero}, l.name("is_padding"));
    t = g.op("Not", {t}, l.name("is_token"));
    t = g.op("Cast", {t}, l.name("token_counts"), {attr_int("to", 7 /* INT64 */)});
    t = g.op("ReduceSum", {t, g.ints(l.name("steps_axis"), {1})}, l.name("counts"),
             {attr_int("keepdims", 0)});
    return g.op("Max", {t, scalar_int(g, l.name("one"), 1)}, l.module_name);
}

// --- recurrent layers ---------------------------------------------------------------------------

struct RecurrentFacts {
    const char* onnx_op;
    std::vector<int64_t> gate_order; // ONNX's gate blocks as PyTorch's block indices
};

RecurrentFacts recurrent_facts(const std::string& kind) {
    if (kind == "LSTM") return {"LSTM", {0, 3, 1, 2}}; // i f g o -> i o f c
    if (kind == "GRU") return {"GRU", {1, 0, 2}};      // r z n -> z r h
    return {"RNN", {0}};
}

// `w` [G*H, ...] with its G gate blocks in `order`.
Tensor reorder_gates(const Tensor& w, const std::vector<int64_t>& order) {
    const int64_t block = w.size(0) / int64_t(order.size());
    TensorList parts;
    for (int64_t g : order)
        parts.push_back(w.narrow(0, g * block, block));
    return cat(parts, 0).contiguous();
}

std::vector<std::string> recurrent(OnnxGraph& g, const OnnxLayer& l) {
    const graph::Attrs& a = l.attrs;
    const RecurrentFacts facts = recurrent_facts(l.kind.name);
    const int64_t hidden = a.get_int("hidden_size"), layers = a.get_int("num_layers");
    const int64_t directions = a.get_bool("bidirectional") ? 2 : 1;
    const int64_t steps = l.input_types[0].shape[1];
    const bool bias = a.get_bool("bias");
    std::string lengths;
    if (l.inputs.size() > 1)
        lengths =
            g.op("Cast", {l.inputs[1]}, l.name("sequence_lens"), {attr_int("to", 6 /* INT32 */)});
    std::vector<OnnxAttr> attrs{
        attr_int("hidden_size", hidden),
        attr_string("direction", directions == 2 ? "bidirectional" : "forward")};
    if (l.kind.name == "GRU") attrs.push_back(attr_int("linear_before_reset", 1));
    // Tanh is RNN's default activation (OpenCV 4.6 reads no list-of-strings attribute, though it
    // has no RNN either).
    if (l.kind.name == "RNN" && a.get_string("nonlinearity") == "relu")
        attrs.push_back(
            attr_strings("activations", std::vector<std::string>(size_t(directions), "Relu")));

    std::string x =
        g.op("Transpose", {l.inputs[0]}, l.name("time_major"), {attr_ints("perm", {1, 0, 2})});
    std::vector<std::string> h_states, c_states;
    std::string y_h_top;
    for (int64_t layer = 0; layer < layers; ++layer) {
        const std::string suffix = "_l" + std::to_string(layer);
        TensorList w, r, b;
        for (int64_t d = 0; d < directions; ++d) {
            const std::string s = suffix + (d == 1 ? "_reverse" : "");
            w.push_back(reorder_gates(l.weight("weight_ih" + s), facts.gate_order));
            r.push_back(reorder_gates(l.weight("weight_hh" + s), facts.gate_order));
            if (bias)
                b.push_back(cat({reorder_gates(l.weight("bias_ih" + s), facts.gate_order),
                                 reorder_gates(l.weight("bias_hh" + s), facts.gate_order)},
                                0));
        }
        const std::string m = state_name(l, "layer" + std::to_string(layer));
        std::vector<std::string> in{x, g.initializer(m + "_W", stack(w, 0)),
                                    g.initializer(m + "_R", stack(r, 0)),
                                    bias ? g.initializer(m + "_B", stack(b, 0)) : std::string()};
        if (!lengths.empty()) in.push_back(lengths);
        std::vector<std::string> hints{l.name("y" + suffix), l.name("y_h" + suffix)};
        if (l.kind.name == "LSTM") hints.push_back(l.name("y_c" + suffix));
        const std::vector<std::string> out = g.ops(facts.onnx_op, in, hints, attrs);
        h_states.push_back(out[1]);
        if (out.size() > 2) c_states.push_back(out[2]);
        y_h_top = out[1];
        // Y [T, D, N, H] -> [T, N, D * H]: the next layer's input.
        x = g.op("Transpose", {out[0]}, l.name("y_steps" + suffix),
                 {attr_ints("perm", {0, 2, 1, 3})});
        x = g.op("Reshape",
                 {x, g.ints(l.name("y_shape" + suffix), {steps, 0, directions * hidden})},
                 l.name("y_joined" + suffix));
    }
    // [L*D, N, H] -> [N, L*D*H]: PyTorch's final states made batch first.
    auto batch_first_states = [&](const std::vector<std::string>& states, const std::string& port) {
        std::string t = states.size() == 1 ? states[0]
                                           : g.op("Concat", states, l.name(port + "_layers"),
                                                  {attr_int("axis", 0)});
        t = g.op("Transpose", {t}, l.name(port + "_batch_first"), {attr_ints("perm", {1, 0, 2})});
        return g.op("Reshape", {t, g.ints(l.name(port + "_shape"), {0, -1})},
                    l.module_name + "_" + port);
    };
    std::vector<std::string> ports;
    if (a.get_string("output") == "last") {
        // The top layer's final state, both directions side by side: [D, N, H] -> [N, D * H].
        std::string t = g.op("Transpose", {y_h_top}, l.name("last_batch_first"),
                             {attr_ints("perm", {1, 0, 2})});
        ports.push_back(g.op("Reshape", {t, g.ints(l.name("last_shape"), {0, directions * hidden})},
                             l.module_name));
    } else {
        ports.push_back(g.op("Transpose", {x}, l.module_name, {attr_ints("perm", {1, 0, 2})}));
    }
    ports.push_back(l.wants(1) ? batch_first_states(h_states, "h_n") : std::string());
    if (l.kind.name == "LSTM")
        ports.push_back(l.wants(2) ? batch_first_states(c_states, "c_n") : std::string());
    return ports;
}

// --- PositionalEncoding --------------------------------------------------------------------------

std::string positional_encoding(OnnxGraph& g, const OnnxLayer& l) {
    const int64_t steps = l.input_types[0].shape[1], d_model = l.attrs.get_int("d_model");
    if (l.attrs.get_string("encoding") == "learned") {
        const std::string table =
            g.initializer(state_name(l, "pos_embedding.weight"), l.weight("pos_embedding.weight"));
        const std::string rows = g.op("Slice",
                                      {table, g.ints(l.name("start"), {0}),
                                       g.ints(l.name("end"), {steps}), g.ints(l.name("axis"), {0})},
                                      l.name("positions"));
        return g.op("Add", {l.inputs[0], rows}, l.module_name);
    }
    // The fixed table's first T rows, as Myelin computes them.
    const Tensor table = nn::functional::sinusoidal_position_table(steps, d_model);
    return g.op("Add", {l.inputs[0], g.initializer(l.name("table"), table)}, l.module_name);
}

// --- sequence reductions ------------------------------------------------------------------------

std::string sequence_last(OnnxGraph& g, const OnnxLayer& l) {
    const int64_t steps = l.input_types[0].shape[1], features = l.input_types[0].shape[2];
    if (l.inputs.size() == 1)
        return g.op("Gather", {l.inputs[0], scalar_int(g, l.name("last_step"), steps - 1)},
                    l.module_name, {attr_int("axis", 1)});
    // x[n, lengths[n] - 1, :]: GatherElements with the index repeated over the features.
    std::string index = g.op("Sub", {l.inputs[1], scalar_int(g, l.name("one"), 1)}, l.name("last"));
    index = g.op("Reshape", {index, g.ints(l.name("index_shape"), {-1, 1, 1})}, l.name("index"));
    index = g.op("Expand", {index, g.ints(l.name("index_expanded_shape"), {1, 1, features})},
                 l.name("index_per_feature"));
    const std::string picked =
        g.op("GatherElements", {l.inputs[0], index}, l.name("picked"), {attr_int("axis", 1)});
    return g.op("Squeeze", {picked, g.ints(l.name("steps_axis"), {1})}, l.module_name);
}

std::string sequence_mean(OnnxGraph& g, const OnnxLayer& l) {
    if (l.inputs.size() == 1)
        return g.op("ReduceMean", {l.inputs[0]}, l.module_name,
                    {attr_ints("axes", {1}), attr_int("keepdims", 0)});
    const int64_t steps = l.input_types[0].shape[1];
    std::string mask = g.op("Cast", {valid_steps(g, l, l.inputs[1], steps)}, l.name("weights"),
                            {attr_int("to", 1 /* FLOAT */)});
    mask = g.op("Unsqueeze", {mask, g.ints(l.name("features_axis"), {2})}, l.name("mask"));
    std::string t = g.op("Mul", {l.inputs[0], mask}, l.name("valid_values"));
    t = g.op("ReduceSum", {t, g.ints(l.name("sum_axis"), {1})}, l.name("sums"),
             {attr_int("keepdims", 0)});
    std::string count =
        g.op("Unsqueeze", {l.inputs[1], g.ints(l.name("count_axis"), {1})}, l.name("count"));
    count = g.op("Cast", {count}, l.name("count_float"), {attr_int("to", 1 /* FLOAT */)});
    return g.op("Div", {t, count}, l.module_name);
}

// --- PyTorch ------------------------------------------------------------------------------------

const PyDefinition kPaddingLengths{"padding_lengths", R"(def padding_lengths(tokens):
    """Each sequence's length: its count of non-zero (non-padding) tokens, at least 1."""
    return (tokens != 0).sum(dim=1).clamp(min=1)
)"};

const PyDefinition kRecurrentPorts{"recurrent_ports",
                                   R"(def recurrent_ports(rnn, x, lengths=None, last=False):
    """A batch-first nn.LSTM / nn.GRU / nn.RNN as Myelin's layer: (output, h_n[, c_n]). With
    lengths, the steps after each sequence's end are skipped and output zeros. output is every
    step's output, or with last=True each sequence's final state (both directions side by side);
    the states are batch first, [N, num_layers * directions * hidden_size]."""
    steps = x.size(1)
    if lengths is not None:
        x = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
    output, states = rnn(x)
    if lengths is not None:
        output, _ = nn.utils.rnn.pad_packed_sequence(output, batch_first=True, total_length=steps)
    states = states if isinstance(states, tuple) else (states,)
    if last:
        directions = 2 if rnn.bidirectional else 1
        h_n = states[0]
        output = torch.cat([h_n[h_n.size(0) - directions + d] for d in range(directions)], dim=1)
    return (output,) + tuple(s.permute(1, 0, 2).reshape(s.size(1), -1) for s in states)
)"};

const PyDefinition kSinusoidal{"SinusoidalPositionalEncoding",
                               R"(class SinusoidalPositionalEncoding(nn.Module):
    """x + a fixed sin/cos table of the step positions (not in the state_dict), then dropout."""

    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
        div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model, dtype=torch.float64)
        pe[:, 0::2] = torch.sin(position * div)
        pe[:, 1::2] = torch.cos(position * div)[:, : d_model // 2]
        self.register_buffer("pe", pe.float(), persistent=False)

    def forward(self, x):
        return self.dropout(x + self.pe[: x.size(1)])
)"};

const PyDefinition kLearned{"LearnedPositionalEncoding",
                            R"(class LearnedPositionalEncoding(nn.Module):
    """x + a learned vector per step position, then dropout."""

    def __init__(self, d_model, dropout=0.1, max_len=512):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.pos_embedding = nn.Embedding(max_len, d_model)

    def forward(self, x):
        return self.dropout(x + self.pos_embedding.weight[: x.size(1)])
)"};

const PyDefinition kSequenceLast{"sequence_last", R"(def sequence_last(x, lengths=None):
    """Each sequence's output at its last valid step: [N, T, F] -> [N, F]."""
    if lengths is None:
        return x[:, -1]
    return x[torch.arange(x.size(0), device=x.device), lengths - 1]
)"};

const PyDefinition kSequenceMean{"sequence_mean", R"(def sequence_mean(x, lengths=None):
    """The mean over each sequence's valid steps: [N, T, F] -> [N, F]."""
    if lengths is None:
        return x.mean(dim=1)
    valid = torch.arange(x.size(1), device=x.device).unsqueeze(0) < lengths.unsqueeze(1)
    return (x * valid.unsqueeze(2).to(x.dtype)).sum(dim=1) / lengths.unsqueeze(1).to(x.dtype)
)"};

std::string call(const std::string& function, const std::vector<std::string>& in) {
    std::string expr = function + "(";
    for (size_t i = 0; i < in.size(); ++i)
        expr += (i ? ", " : "") + in[i];
    return expr + ")";
}

LayerForms recurrent_forms(std::string kind) {
    LayerForms f;
    f.onnx = recurrent;
    f.pytorch_module = [](const PyLayer& l) {
        const graph::Attrs& a = l.attrs;
        PyCall c("nn." + l.kind.name, l);
        c.pos(py_int(a, "input_size")).pos(py_int(a, "hidden_size"));
        c.kw("num_layers", py_int(a, "num_layers"));
        if (l.kind.name == "RNN") c.kw("nonlinearity", py_string(a.get_string("nonlinearity")));
        c.flag("bias").always("batch_first", "True").real("dropout");
        return c.flag("bidirectional").str();
    };
    f.pytorch_forward = [](const PyLayer& l, const std::string& module,
                           const std::vector<std::string>& in) {
        std::vector<std::string> args{module, in[0]};
        if (in.size() > 1) args.push_back("lengths=" + in[1]);
        if (l.attrs.get_string("output") == "last") args.push_back("last=True");
        return call("recurrent_ports", args);
    };
    f.pytorch_definitions = {kRecurrentPorts};
    // Found by running each through OpenCV 4.6 (its GRU parser requires an initial state input,
    // which a symbolic batch cannot have as a constant).
    f.opencv_note = [kind = std::move(kind)](const graph::Attrs&) -> std::string {
        if (kind == "LSTM")
            return "OpenCV 4.6's DNN module runs ONNX's LSTM with a batch of 1 only";
        if (kind == "GRU")
            return "OpenCV 4.6's DNN module cannot read an ONNX GRU without an initial state";
        return "OpenCV 4.6's DNN module has no RNN";
    };
    return f;
}

LayerForms reduction_forms(OnnxLowering onnx, const PyDefinition& helper) {
    LayerForms f;
    f.onnx = std::move(onnx);
    f.pytorch_forward = [name = helper.name](const PyLayer&, const std::string&,
                                             const std::vector<std::string>& in) {
        return call(name, in);
    };
    f.pytorch_definitions = {helper};
    return f;
}

} // namespace

void add_sequence_forms(FormsTable& table) {
    table["PaddingLengths"] = reduction_forms(single(padding_lengths), kPaddingLengths);
    table["PaddingLengths"].opencv_note = [](const graph::Attrs&) {
        return std::string(
            "OpenCV 4.6's DNN module cannot compare int64 tokens from a model input");
    };
    for (const char* kind : {"LSTM", "GRU", "RNN"})
        table[kind] = recurrent_forms(kind);
    LayerForms positional;
    positional.onnx = single(positional_encoding);
    positional.pytorch_module = [](const PyLayer& l) {
        const bool learned = l.attrs.get_string("encoding") == "learned";
        return PyCall(learned ? "LearnedPositionalEncoding" : "SinusoidalPositionalEncoding", l)
            .pos(py_int(l.attrs, "d_model"))
            .always("dropout", py_float(l.attrs.get_float("dropout")))
            .always("max_len", py_int(l.attrs, "max_len"))
            .str();
    };
    positional.pytorch_definitions = {kSinusoidal, kLearned};
    table["PositionalEncoding"] = std::move(positional);
    table["SequenceLast"] = reduction_forms(single(sequence_last), kSequenceLast);
    table["SequenceMeanPool"] = reduction_forms(single(sequence_mean), kSequenceMean);
}

} // namespace myelin::exporters::detail
