// The PyTorch code export: one .py file a person could have written. A chain of layers becomes an
// nn.Sequential subclass (its children named as Myelin names them, so state_dict keys match); a
// graph with branches or merges becomes an nn.Module with the layers as attributes and an
// explicit forward, one line per node in topological order.
#include <myelin/error.h>
#include <myelin/export/export.h>
#include <myelin/export/layer_forms.h>

#include "analysis_check.h"
#include <myelin/graph/analysis.h>
#include <myelin/version.h>

#include <cstdio>
#include <map>
#include <sstream>

namespace myelin::exporters {

namespace {

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

    // The layers in topological order with their forms and constructor calls. A chain (an
    // nn.Sequential) has one Input, and each layer is a module called on the one before it.
    struct Layer {
        size_t index;
        PyLayer layer;
        const LayerForms* forms;
        std::string ctor;
    };
    std::vector<Layer> layers;
    std::vector<size_t> inputs;
    bool chain = true;
    graph::NodeId previous = -1;
    std::string problems;
    for (size_t index : analysis.order) {
        const graph::Node& node = spec.nodes[index];
        const graph::NodeInfo& info = analysis.nodes[index];
        if (!info.reachable) continue;
        if (node.kind == "Input") {
            inputs.push_back(index);
            chain = chain && inputs.size() == 1;
            previous = node.id;
            continue;
        }
        const auto in = spec.inputs_of(node.id);
        chain = chain && in.size() == 1 && in[0].from == previous && in[0].from_port == 0;
        previous = node.id;
        if (node.kind == "Output") continue;
        const graph::LayerKind& kind = graph::layer_kind(node.kind);
        const std::string what = "layer '" + info.module_name + "' (" + node.kind + ")";
        const LayerForms* forms = find_layer_forms(node.kind);
        if (!forms || !forms->refusal.empty()) {
            problems += "\n  " + what + ": " + layer_forms_missing(node.kind);
            continue;
        }
        PyLayer layer{node,
                      kind,
                      graph::with_defaults(kind.attrs, node.attrs),
                      graph::with_defaults(kind.attrs, {}),
                      info.module_name,
                      {},
                      info.outputs.empty() ? std::vector<graph::TensorType>{*info.output}
                                           : info.outputs};
        for (const auto& e : in)
            layer.input_types.push_back(
                *analysis.nodes[index_of.at(e.from)].output_type(e.from_port));
        try {
            std::string ctor = forms->pytorch_module ? forms->pytorch_module(layer) : "";
            chain = chain && !ctor.empty() && !forms->pytorch_forward && layer.outputs.size() == 1;
            layers.push_back({index, std::move(layer), forms, std::move(ctor)});
        } catch (const Error& e) {
            problems += "\n  " + what + ": " + e.what();
        }
    }
    if (!problems.empty()) throw Error("the model cannot be exported to PyTorch code:" + problems);

    // The model class first (the imports and helper definitions depend on what it uses).
    std::ostringstream model;
    if (chain) {
        model << "\n\nclass Model(nn.Sequential):\n    def __init__(self):\n"
                 "        super().__init__(OrderedDict([\n";
        for (const auto& l : layers)
            model << "            (" << py_string(l.layer.module_name) << ", " << l.ctor << "),\n";
        model << "        ]))\n";
    } else {
        model
            << "\n\nclass Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n";
        for (const auto& l : layers) {
            if (l.ctor.empty()) continue;
            if (is_identifier(l.layer.module_name))
                model << "        self." << l.layer.module_name << " = " << l.ctor << "\n";
            else
                model << "        self.add_module(" << py_string(l.layer.module_name) << ", "
                      << l.ctor << ")\n";
        }
        // forward: one variable per node output port.
        std::map<std::pair<graph::NodeId, int>, std::string> var;
        std::string args;
        for (size_t i = 0; i < inputs.size(); ++i) {
            const graph::Node& n = spec.nodes[inputs[i]];
            const std::string name =
                !n.name.empty() ? n.name : (inputs.size() == 1 ? "x" : "x" + std::to_string(i));
            var[{n.id, 0}] = name;
            args += ", " + name;
        }
        model << "\n    def forward(self" << args << "):\n";
        std::map<size_t, const Layer*> layer_at;
        for (const auto& l : layers)
            layer_at[l.index] = &l;
        for (size_t index : analysis.order) {
            const graph::Node& node = spec.nodes[index];
            if (!analysis.nodes[index].reachable || node.kind == "Input") continue;
            std::vector<std::string> in;
            for (const auto& e : spec.inputs_of(node.id))
                in.push_back(var.at({e.from, e.from_port}));
            if (node.kind == "Output") {
                model << "        return " << in.at(0) << "\n";
                continue;
            }
            const Layer& l = *layer_at.at(index);
            const std::string& module = l.layer.module_name;
            const std::string v = is_identifier(module) ? module : "h" + module;
            std::string expr;
            if (l.forms->pytorch_forward) {
                expr = l.forms->pytorch_forward(l.layer, layer_ref(module), in);
            } else {
                expr = layer_ref(module) + "(";
                for (size_t i = 0; i < in.size(); ++i)
                    expr += (i ? ", " : "") + in[i];
                expr += ")";
            }
            // Several output ports: one variable each, named after the port.
            const auto ports = l.layer.kind.output_ports(l.layer.attrs);
            std::string targets = v;
            var[{node.id, 0}] = v;
            for (size_t p = 1; p < ports.size(); ++p) {
                var[{node.id, int(p)}] = v + "_" + ports[p];
                targets += ", " + v + "_" + ports[p];
            }
            model << "        " << targets << " = " << expr << "\n";
        }
    }
    const std::string model_code = model.str();
    // The definitions the model uses, once each, in the order first met.
    std::vector<PyDefinition> definitions;
    for (const auto& l : layers)
        for (const PyDefinition& def : l.forms->pytorch_definitions) {
            bool seen = false;
            for (const auto& d : definitions)
                seen = seen || d.name == def.name;
            if (!seen && model_code.find(def.name + "(") != std::string::npos)
                definitions.push_back(def);
        }
    bool needs_math = false;
    for (const auto& def : definitions)
        needs_math = needs_math || def.code.find("math.") != std::string::npos;

    const auto& d = source.description;
    std::ostringstream py;
    py << "# " << (source.project.name.empty() ? "Model" : source.project.name)
       << ", exported by Myelin Studio " << version() << ".\n";
    if (!source.project.description.empty()) py << "# " << source.project.description << "\n";
    py << "#\n# Model() has exactly the state_dict names of the Myelin model, so\n"
          "# load_checkpoint(\"checkpoint.safetensors\") (below) loads its checkpoints.\n"
          "import json\n"
       << (needs_math ? "import math\n" : "")
       << "import struct\nfrom collections import OrderedDict\n\n"
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

    for (const auto& def : definitions)
        py << "\n\n" << def.code;
    py << model_code;
    py << kLoader;
    return py.str();
}

void export_pytorch(const ExportSource& source, const std::filesystem::path& out) {
    if (source.quantization)
        throw Error("PyTorch code for an int8 checkpoint is not written yet: export it to ONNX "
                    "(QDQ), or export the float checkpoint it was made from");
    check_export_source(source);
    write_file_atomically(out, pytorch_code(source));
}

} // namespace myelin::exporters
