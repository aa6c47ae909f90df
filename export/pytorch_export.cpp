// The PyTorch code export: one .py file a person could have written. A chain of layers becomes an
// nn.Sequential subclass (its children named as Myelin names them, so state_dict keys match); a
// graph with branches or merges becomes an nn.Module with the layers as attributes and an
// explicit forward, one line per node in topological order.
#include <myelin/error.h>
#include <myelin/export/export.h>

#include "analysis_check.h"
#include <myelin/graph/analysis.h>
#include <myelin/version.h>

#include <cstdio>
#include <map>
#include <sstream>

namespace myelin::exporters {

namespace {

std::string py_bool(bool v) {
    return v ? "True" : "False";
}
std::string py_float(double v) {
    char text[40];
    std::snprintf(text, sizeof text, "%.9g", v);
    std::string s = text;
    if (s.find_first_of(".eni") == std::string::npos) s += ".0";
    return s;
}
std::string py_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out + "\"";
}
// 3 -> "3"; [3, 5] -> "(3, 5)".
std::string py_int_or_pair(const graph::Attrs& a, std::string_view name) {
    const auto& v = a.get_ints(name);
    if (v.size() == 1) return std::to_string(v[0]);
    return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ")";
}
std::string py_tuple(const std::vector<int64_t>& v) {
    std::string out = "(";
    for (size_t i = 0; i < v.size(); ++i)
        out += (i ? ", " : "") + std::to_string(v[i]);
    return out + (v.size() == 1 ? ",)" : ")");
}
std::string num(const graph::Attrs& a, std::string_view name) {
    return std::to_string(a.get_int(name));
}

// A constructor call: positional arguments, then keyword arguments that differ from PyTorch's
// defaults (the registry's defaults are PyTorch's), as a person would write it.
class Call {
  public:
    Call(std::string callee, const graph::Attrs& attrs, const graph::Attrs& defaults)
        : text_(std::move(callee) + "("), attrs_(attrs), defaults_(defaults) {}
    Call& pos(const std::string& value) {
        text_ += (first_ ? "" : ", ") + value;
        first_ = false;
        return *this;
    }
    // name=value unless the attribute `attr` (default: name) has its default value.
    Call& kw(const std::string& name, const std::string& value, std::string attr = {}) {
        if (attr.empty()) attr = name;
        if (defaults_.contains(attr) && attrs_.at(attr) == defaults_.at(attr)) return *this;
        return always(name, value);
    }
    Call& always(const std::string& name, const std::string& value) {
        return pos(name + "=" + value);
    }
    std::string str() const { return text_ + ")"; }

  private:
    std::string text_;
    bool first_ = true;
    const graph::Attrs& attrs_;
    const graph::Attrs& defaults_;
};

// The nn.Module constructor call of a layer node; empty for the merges (they are expressions).
std::string constructor(const graph::Node& node, const graph::Attrs& a, const graph::Attrs& d,
                        const std::string& what) {
    const std::string& k = node.kind;
    Call c("nn." + k, a, d);
    auto flag = [&](const char* name) { return c.kw(name, py_bool(a.get_bool(name))); };
    auto real = [&](const char* name) { return c.kw(name, py_float(a.get_float(name))); };
    if (k == "Linear") {
        c.pos(num(a, "in_features")).pos(num(a, "out_features"));
        return flag("bias").str();
    }
    if (k == "Bilinear") {
        c.pos(num(a, "in1_features")).pos(num(a, "in2_features")).pos(num(a, "out_features"));
        return flag("bias").str();
    }
    if (k == "Conv1d" || k == "Conv2d") {
        auto v = [&](const char* n) { return k == "Conv2d" ? py_int_or_pair(a, n) : num(a, n); };
        c.pos(num(a, "in_channels")).pos(num(a, "out_channels")).pos(v("kernel_size"));
        c.kw("stride", v("stride"));
        if (a.get_bool("same_padding"))
            c.always("padding", "\"same\"");
        else
            c.kw("padding", v("padding"));
        c.kw("dilation", v("dilation")).kw("groups", num(a, "groups"));
        flag("bias");
        return c.kw("padding_mode", py_string(a.get_string("padding_mode"))).str();
    }
    if (k == "ConvTranspose2d") {
        c.pos(num(a, "in_channels"))
            .pos(num(a, "out_channels"))
            .pos(py_int_or_pair(a, "kernel_size"));
        c.always("stride", py_int_or_pair(a, "stride"));
        c.kw("padding", py_int_or_pair(a, "padding"));
        c.kw("output_padding", py_int_or_pair(a, "output_padding"));
        c.kw("groups", num(a, "groups"));
        flag("bias");
        return c.kw("dilation", py_int_or_pair(a, "dilation")).str();
    }
    if (k == "MaxPool2d" || k == "AvgPool2d") {
        c.pos(py_int_or_pair(a, "kernel_size"));
        if (!a.is_none("stride")) c.always("stride", py_int_or_pair(a, "stride"));
        c.kw("padding", py_int_or_pair(a, "padding"));
        if (k == "MaxPool2d") c.kw("dilation", py_int_or_pair(a, "dilation"));
        flag("ceil_mode");
        if (k == "AvgPool2d") flag("count_include_pad");
        return c.str();
    }
    if (k == "AdaptiveAvgPool2d") return c.pos(py_int_or_pair(a, "output_size")).str();
    if (k == "BatchNorm1d" || k == "BatchNorm2d") {
        c.pos(num(a, "num_features"));
        real("eps");
        c.kw("momentum", a.is_none("momentum") ? "None" : py_float(a.get_float("momentum")));
        flag("affine");
        return flag("track_running_stats").str();
    }
    if (k == "LayerNorm") {
        c.pos(py_tuple(a.get_ints("normalized_shape")));
        real("eps");
        return flag("elementwise_affine").str();
    }
    if (k == "GroupNorm") {
        c.pos(num(a, "num_groups")).pos(num(a, "num_channels"));
        real("eps");
        return flag("affine").str();
    }
    if (k == "ReLU" || k == "SiLU" || k == "Sigmoid" || k == "Tanh" || k == "Hardswish" ||
        k == "Identity")
        return c.str();
    if (k == "LeakyReLU") return real("negative_slope").str();
    if (k == "PReLU")
        return c.kw("num_parameters", num(a, "num_parameters"))
            .kw("init", py_float(a.get_float("init")))
            .str();
    if (k == "ELU") return real("alpha").str();
    if (k == "GELU") return c.kw("approximate", py_string(a.get_string("approximate"))).str();
    if (k == "Softmax" || k == "LogSoftmax") return c.always("dim", num(a, "dim")).str();
    if (k == "Softplus")
        return real("beta").kw("threshold", py_float(a.get_float("threshold"))).str();
    if (k == "Dropout" || k == "Dropout2d") return real("p").str();
    if (k == "Flatten")
        return c.kw("start_dim", num(a, "start_dim")).kw("end_dim", num(a, "end_dim")).str();
    if (k == "Unflatten")
        return c.pos(num(a, "dim")).pos(py_tuple(a.get_ints("unflattened_size"))).str();
    if (k == "Upsample") {
        const auto& s = a.get_ints("scale_factor");
        const std::string factor =
            s.size() == 1 ? py_float(double(s[0]))
                          : "(" + py_float(double(s[0])) + ", " + py_float(double(s[1])) + ")";
        c.always("scale_factor", factor).always("mode", py_string(a.get_string("mode")));
        if (a.get_string("mode") == "bilinear")
            c.always("align_corners", py_bool(a.get_bool("align_corners")));
        return c.str();
    }
    if (k == "Embedding") {
        c.pos(num(a, "num_embeddings")).pos(num(a, "embedding_dim"));
        return c.kw("padding_idx", a.is_none("padding_idx") ? "None" : num(a, "padding_idx")).str();
    }
    if (k == "Add" || k == "Multiply" || k == "Concat") return {};
    throw Error(what +
                " cannot be exported to PyTorch code: no PyTorch form is known for layer "
                "kind '" +
                k + "'");
}

bool is_identifier(const std::string& s) {
    return graph::is_valid_node_name(s);
}

// How forward refers to a layer: self.conv1, or getattr(self, "3") for positional names.
std::string layer_ref(const std::string& module) {
    return is_identifier(module) ? "self." + module : "getattr(self, " + py_string(module) + ")";
}

const char* const kLoader = R"(

# --- weights ------------------------------------------------------------------------------------

_SAFETENSORS_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8, "BOOL": torch.bool,
}


def read_safetensors(path):
    """Tensors and __metadata__ of a safetensors file (its format: an 8-byte little-endian
    header length, a JSON header, then the bytes), with torch, json and struct only."""
    with open(path, "rb") as f:
        (header_size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_size))
        data = bytearray(f.read())
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        dtype = _SAFETENSORS_DTYPES[info["dtype"]]
        count = (end - begin) // torch.empty((), dtype=dtype).element_size()
        flat = torch.frombuffer(data, dtype=dtype, count=count, offset=begin) if count else torch.empty(0, dtype=dtype)
        tensors[name] = flat.reshape(info["shape"]).clone()
    return tensors, metadata


def load_checkpoint(path, model=None):
    """The model with the weights of a Myelin checkpoint (or exported safetensors file), in
    evaluation mode. Optimizer state in the file is skipped."""
    model = model if model is not None else Model()
    tensors, _ = read_safetensors(path)
    state = {k: v for k, v in tensors.items() if not k.startswith("optimizer.")}
    model.load_state_dict(state)
    return model.eval()


if __name__ == "__main__":
    import sys

    if len(sys.argv) != 2:
        sys.exit(f"usage: python3 {sys.argv[0]} CHECKPOINT.safetensors")
    model = load_checkpoint(sys.argv[1])
    print(model)
)";

} // namespace

namespace {

// A token as a Python string literal: quotes, backslashes and control characters escaped.
std::string py_token(const std::string& token) {
    std::string out = "\"";
    for (char c : token) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20 || u == 0x7F) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\x%02x", u);
            out += escaped;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

// A text model's vocabulary and Myelin's tokenisation (data/text.h), so the exported code turns
// text into the ids the model was trained on.
void write_text_encoding(std::ostream& py, const data::TextEncoding& e) {
    py << "\n# Text: the tokens and vocabulary the model was trained with (ids: <pad> 0, <unk> "
          "1).\nTOKEN_LEVEL = "
       << py_string(data::to_string(e.level)) << "\nLOWERCASE = " << py_bool(e.lowercase)
       << "\nMAX_LENGTH = " << e.max_length << "\nVOCABULARY = [";
    for (size_t i = 0; i < e.vocabulary.size(); ++i)
        py << (i ? ", " : "") << py_token(e.vocabulary[i]);
    py << "]\n_TOKEN_IDS = {t: i for i, t in enumerate(VOCABULARY)}\n\n\n"
          "def _is_punctuation(c):\n"
          "    o = ord(c)\n"
          "    if o < 0x80:\n"
          "        return 0x21 <= o <= 0x2F or 0x3A <= o <= 0x40 or 0x5B <= o <= 0x60 or "
          "0x7B <= o <= 0x7E\n"
          "    return ((0xA1 <= o <= 0xBF and o not in (0xAA, 0xB2, 0xB3, 0xB5, 0xB9, 0xBA)\n"
          "             and not 0xBC <= o <= 0xBE) or o in (0xD7, 0xF7)\n"
          "            or 0x2010 <= o <= 0x205E or 0x3001 <= o <= 0x3003)\n\n\n"
          "def tokenize(text):\n"
          "    \"\"\"Myelin's tokens: characters, or words (runs of letters and digits; each "
          "punctuation\n    mark is a token). Python's lower() equals Myelin's lower-casing on "
          "Latin, Greek and\n    Cyrillic letters.\"\"\"\n"
          "    if LOWERCASE:\n        text = text.lower()\n"
          "    if TOKEN_LEVEL == \"char\":\n        return list(text)\n"
          "    tokens, word = [], \"\"\n"
          "    for c in text:\n"
          "        if c.isspace() or _is_punctuation(c):\n"
          "            if word:\n                tokens.append(word)\n"
          "            word = \"\"\n"
          "            if not c.isspace():\n                tokens.append(c)\n"
          "        else:\n            word += c\n"
          "    if word:\n        tokens.append(word)\n"
          "    return tokens\n\n\n"
          "def encode(texts):\n"
          "    \"\"\"The model's input for a list of strings: int64 ids [len(texts), MAX_LENGTH], "
          "cut to\n    MAX_LENGTH tokens and padded with 0; unknown tokens are 1.\"\"\"\n"
          "    x = torch.zeros(len(texts), MAX_LENGTH, dtype=torch.int64)\n"
          "    for row, text in enumerate(texts):\n"
          "        for k, token in enumerate(tokenize(text)[:MAX_LENGTH]):\n"
          "            x[row, k] = _TOKEN_IDS.get(token, 1)\n"
          "    return x\n";
}

} // namespace

std::string pytorch_code(const ExportSource& source) {
    const graph::ModelSpec& spec = source.project.model;
    const graph::Analysis analysis = valid_analysis(source);
    std::map<graph::NodeId, size_t> index_of;
    for (size_t i = 0; i < spec.nodes.size(); ++i)
        index_of[spec.nodes[i].id] = i;

    // The layers in topological order with their constructor calls; a chain has one Input, and
    // each layer takes the one before it.
    struct Layer {
        size_t index;
        std::string module, ctor;
    };
    std::vector<Layer> layers;
    std::vector<size_t> inputs;
    bool chain = true;
    graph::NodeId previous = -1;
    std::string problems;
    for (size_t index : analysis.order) {
        const graph::Node& node = spec.nodes[index];
        if (!analysis.nodes[index].reachable) continue;
        if (node.kind == "Input") {
            inputs.push_back(index);
            chain = chain && inputs.size() == 1;
            previous = node.id;
            continue;
        }
        const auto in = spec.inputs_of(node.id);
        chain = chain && in.size() == 1 && in[0].from == previous;
        previous = node.id;
        if (node.kind == "Output") continue;
        const graph::LayerKind& kind = graph::layer_kind(node.kind);
        const std::string module = analysis.nodes[index].module_name;
        try {
            std::string ctor = constructor(node, graph::with_defaults(kind.attrs, node.attrs),
                                           graph::with_defaults(kind.attrs, {}),
                                           "layer '" + module + "' (" + node.kind + ")");
            chain = chain && !ctor.empty();
            layers.push_back({index, module, ctor});
        } catch (const Error& e) {
            problems += std::string("\n  ") + e.what();
        }
    }
    if (!problems.empty()) throw Error("the model cannot be exported to PyTorch code:" + problems);

    const auto& d = source.description;
    std::ostringstream py;
    py << "# " << (source.project.name.empty() ? "Model" : source.project.name)
       << ", exported by Myelin Studio " << version() << ".\n";
    if (!source.project.description.empty()) py << "# " << source.project.description << "\n";
    py << "#\n# Model() has exactly the state_dict names of the Myelin model, so\n"
          "# load_checkpoint(\"checkpoint.safetensors\") (below) loads its checkpoints.\n"
          "import json\nimport struct\nfrom collections import OrderedDict\n\n"
          "import torch\nfrom torch import nn\n\n";
    // Constants: what one example looks like and how it is prepared.
    std::vector<int64_t> shape = d.input_shape;
    if (shape.empty() && !inputs.empty())
        shape = spec.nodes[inputs[0]].attrs.contains("shape")
                    ? spec.nodes[inputs[0]].attrs.get_ints("shape")
                    : std::vector<int64_t>{};
    py << "# One example, without the batch dimension.\nINPUT_SHAPE = " << py_tuple(shape) << "\n";
    if (!d.class_names.empty()) {
        py << "CLASS_NAMES = [";
        for (size_t i = 0; i < d.class_names.size(); ++i)
            py << (i ? ", " : "") << py_string(d.class_names[i]);
        py << "]\n";
    }
    if (d.text_encoding) write_text_encoding(py, *d.text_encoding);
    py << "\n\ndef preprocess(x):\n    \"\"\"What the examples went through before the model "
          "(the project's deterministic transforms).\"\"\"\n";
    // The checkpoint's record of what ran; an older checkpoint has none: the project's transforms
    // (random augmentation is for training only).
    std::vector<spec::Choice> steps = d.preprocessing;
    if (steps.empty())
        for (const auto& t : source.project.data.transforms)
            if (t.kind.rfind("Random", 0) != 0) steps.push_back(t);
    for (const auto& t : steps) {
        const bool values = t.kind == "Normalize" && t.options.contains("mean") &&
                            !t.options.get_string("mean").empty();
        if (t.kind == "ScaleTo01") {
            py << "    if x.dtype == torch.uint8:\n        x = x.float() / 255.0\n";
        } else if (values) {
            py << "    mean = torch.tensor([" << t.options.get_string("mean") << "])\n"
               << "    std = torch.tensor([" << t.options.get_string("std") << "])\n"
               << "    shape = (-1,) + (1,) * (x.dim() - 2)  # per channel (dimension 1)\n"
               << "    x = (x - mean.view(shape)) / std.view(shape)\n";
        } else if (t.kind == "Normalize") {
            py << "    # Normalize: its mean and std were computed from the training data and this "
                  "checkpoint\n    # does not record them; apply them here.\n";
        } else {
            py << "    # " << t.kind
               << ": a transform this export cannot write out; apply it "
                  "here as the project does.\n";
        }
    }
    py << "    return x\n";

    if (chain) {
        py << "\n\nclass Model(nn.Sequential):\n    def __init__(self):\n"
              "        super().__init__(OrderedDict([\n";
        for (const auto& l : layers)
            py << "            (" << py_string(l.module) << ", " << l.ctor << "),\n";
        py << "        ]))\n";
    } else {
        py << "\n\nclass Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n";
        for (const auto& l : layers) {
            if (l.ctor.empty()) continue;
            if (is_identifier(l.module))
                py << "        self." << l.module << " = " << l.ctor << "\n";
            else
                py << "        self.add_module(" << py_string(l.module) << ", " << l.ctor << ")\n";
        }
        // forward: one variable per node output.
        std::map<graph::NodeId, std::string> var;
        std::string args;
        for (size_t i = 0; i < inputs.size(); ++i) {
            const graph::Node& n = spec.nodes[inputs[i]];
            var[n.id] =
                !n.name.empty() ? n.name : (inputs.size() == 1 ? "x" : "x" + std::to_string(i));
            args += ", " + var[n.id];
        }
        py << "\n    def forward(self" << args << "):\n";
        for (size_t index : analysis.order) {
            const graph::Node& node = spec.nodes[index];
            if (!analysis.nodes[index].reachable || node.kind == "Input") continue;
            std::vector<std::string> in;
            for (const auto& e : spec.inputs_of(node.id))
                in.push_back(var.at(e.from));
            if (node.kind == "Output") {
                py << "        return " << in.at(0) << "\n";
                continue;
            }
            const std::string module = analysis.nodes[index].module_name;
            const std::string v = is_identifier(module) ? module : "h" + module;
            std::string expr;
            if (node.kind == "Add" || node.kind == "Multiply") {
                for (size_t i = 0; i < in.size(); ++i)
                    expr += (i ? (node.kind == "Add" ? " + " : " * ") : "") + in[i];
            } else if (node.kind == "Concat") {
                expr = "torch.cat([";
                for (size_t i = 0; i < in.size(); ++i)
                    expr += (i ? ", " : "") + in[i];
                expr += "], dim=" +
                        std::to_string(
                            graph::with_defaults(graph::layer_kind("Concat").attrs, node.attrs)
                                .get_int("dim")) +
                        ")";
            } else {
                expr = layer_ref(module) + "(";
                for (size_t i = 0; i < in.size(); ++i)
                    expr += (i ? ", " : "") + in[i];
                expr += ")";
            }
            py << "        " << v << " = " << expr << "\n";
            var[node.id] = v;
        }
    }
    py << kLoader;
    return py.str();
}

void export_pytorch(const ExportSource& source, const std::filesystem::path& out) {
    check_export_source(source);
    write_file_atomically(out, pytorch_code(source));
}

} // namespace myelin::exporters
