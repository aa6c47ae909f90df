// Golden parity of the nn layers with PyTorch: every layer of myelin/nn/layers.h (and three small
// models) is built with the constructor options of a fixture case, loaded with PyTorch's
// parameters and buffers through strict load_state_dict (which also checks the state_dict names
// and shapes), run forward in train and/or eval mode and backward with PyTorch's grad_output;
// the output, the input gradients, the parameter gradients and (BatchNorm in train mode) the
// running statistics after the forward are compared with PyTorch's. Fixtures:
// tests/golden/nn_f32.txt and nn_f64.txt, written by tests/golden/gen_golden_nn.py (format in its
// docstring and in tests/golden/README.md).
#include <QtTest>

#include <myelin/autograd.h>
#include <myelin/nn/layers.h>
#include <myelin/nn/module.h>
#include <myelin/tensor.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef MYELIN_SOURCE_DIR
#error "test_nn_golden needs MYELIN_SOURCE_DIR (the repository root) to find tests/golden/"
#endif

using myelin::Dims;
using myelin::DType;
using myelin::Tensor;
using myelin::TensorList;
namespace nn = myelin::nn;
using std::make_shared;

namespace {

// A truncated or missing fixture must fail, not pass vacuously.
constexpr int kMinCasesF32 = 130;
constexpr int kMinCasesF64 = 130;
const char* const kFixtureFiles[] = {"nn_f32.txt", "nn_f64.txt"};

// ---------------------------------------------------------------------------------------------
// Fixture model and parser

struct FixtureError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

template <typename T> T parseNumber(const std::string& s) {
    T value{};
    const char* first = s.data();
    const char* last = s.data() + s.size();
    auto [ptr, ec] = std::from_chars(first, last, value);
    if (ec != std::errc() || ptr != last) throw FixtureError("bad number '" + s + "'");
    return value;
}

DType parseDType(const std::string& tag) {
    if (tag == "f32") return DType::Float32;
    if (tag == "f64") return DType::Float64;
    if (tag == "i64") return DType::Int64;
    throw FixtureError("unknown dtype tag '" + tag + "'");
}

std::vector<int64_t> parseIntList(const std::string& s) {
    if (s.size() < 2 || s.front() != '[' || s.back() != ']')
        throw FixtureError("bad list '" + s + "'");
    std::vector<int64_t> out;
    const std::string body = s.substr(1, s.size() - 2);
    size_t pos = 0;
    while (!body.empty() && pos <= body.size()) {
        size_t comma = body.find(',', pos);
        if (comma == std::string::npos) comma = body.size();
        out.push_back(parseNumber<int64_t>(body.substr(pos, comma - pos)));
        pos = comma + 1;
    }
    return out;
}

// Constructor options of a case ("opt <key> <value>"); absent keys take the C++ defaults, which
// must equal PyTorch's (the generator writes only what it passes to the PyTorch constructor).
class Opts {
  public:
    void set(const std::string& key, const std::string& value) { values_[key] = value; }
    bool has(const std::string& key) const { return values_.count(key) != 0; }
    const std::string& str(const std::string& key) const {
        auto it = values_.find(key);
        if (it == values_.end()) throw FixtureError("missing option '" + key + "'");
        return it->second;
    }
    double d(const std::string& key) const { return parseNumber<double>(str(key)); }
    double d(const std::string& key, double def) const { return has(key) ? d(key) : def; }
    int64_t i(const std::string& key) const { return parseNumber<int64_t>(str(key)); }
    int64_t i(const std::string& key, int64_t def) const { return has(key) ? i(key) : def; }
    int dim(const std::string& key, int def) const {
        return static_cast<int>(has(key) ? i(key) : def);
    }
    bool b(const std::string& key, bool def) const { return has(key) ? i(key) != 0 : def; }
    Dims dims(const std::string& key) const { return Dims(parseIntList(str(key))); }
    // An int (both dims) or a list [h,w], as PyTorch's _pair arguments.
    nn::Size2 size2(const std::string& key) const {
        const std::string& s = str(key);
        if (!s.empty() && s.front() == '[') {
            auto v = parseIntList(s);
            if (v.size() != 2) throw FixtureError("option '" + key + "' needs two sizes");
            return nn::Size2(v[0], v[1]);
        }
        return nn::Size2(parseNumber<int64_t>(s));
    }
    nn::Size2 size2(const std::string& key, int64_t def) const {
        return has(key) ? size2(key) : nn::Size2(def);
    }
    std::optional<double> optD(const std::string& key, std::optional<double> def) const {
        if (!has(key)) return def;
        if (str(key) == "none") return std::nullopt;
        return d(key);
    }
    std::optional<int64_t> optI(const std::string& key) const {
        if (!has(key) || str(key) == "none") return std::nullopt;
        return i(key);
    }
    bool samePadding() const { return has("padding") && str("padding") == "same"; }

  private:
    std::map<std::string, std::string> values_;
};

// Values are kept as double: float32 values widen exactly, indices are small integers.
// every > 1: only the values at flat indices 0, every, 2 * every, ... are known (expected
// gradients of large weights); values then holds those samples.
struct TensorData {
    DType dtype = DType::Float32;
    Dims shape;
    std::vector<double> values;
    int64_t every = 1;
};

// The exact pseudo-random values of gen_golden_nn.py's gen_values(): a 32-bit integer hash of
// (seed, index) mapped to [-scale, scale). Every step is exact (integers below 2^64, 2u - 1 in
// double) except the one multiplication by scale, which rounds the same way as in PyTorch.
std::vector<double> genValues(int64_t numel, uint64_t seed, double scale, DType dtype) {
    constexpr uint64_t m32 = 0xFFFFFFFFull;
    std::vector<double> out(static_cast<size_t>(numel));
    for (int64_t k = 0; k < numel; ++k) {
        uint64_t x = (static_cast<uint64_t>(k) * 0x9E3779B1ull + seed * 0x85EBCA77ull) & m32;
        x ^= x >> 16;
        x = (x * 0x045D9F3Bull) & m32;
        x ^= x >> 16;
        const double u = static_cast<double>(x >> 8) / 16777216.0;
        const double v = (2.0 * u - 1.0) * scale;
        out[static_cast<size_t>(k)] =
            dtype == DType::Float32 ? static_cast<double>(static_cast<float>(v)) : v;
    }
    return out;
}

// Parses "<dtype> <shape> (<values...> | gen <seed> <scale> | every <k> <values...>)" starting
// at tok[pos].
TensorData parseTensor(const std::vector<std::string>& tok, size_t pos) {
    if (tok.size() < pos + 2) throw FixtureError("tensor needs a dtype and a shape");
    TensorData t;
    t.dtype = parseDType(tok[pos]);
    t.shape = Dims(parseIntList(tok[pos + 1]));
    const int64_t numel = t.shape.numel();
    size_t first = pos + 2;
    if (tok.size() > first && tok[first] == "gen") {
        if (tok.size() != first + 3) throw FixtureError("'gen' takes a seed and a scale");
        t.values = genValues(numel, parseNumber<uint64_t>(tok[first + 1]),
                             parseNumber<double>(tok[first + 2]), t.dtype);
        return t;
    }
    int64_t expectedCount = numel;
    if (tok.size() > first && tok[first] == "every") {
        if (tok.size() < first + 2) throw FixtureError("'every' needs a step");
        t.every = parseNumber<int64_t>(tok[first + 1]);
        if (t.every < 1) throw FixtureError("bad 'every' step");
        expectedCount = (numel + t.every - 1) / t.every;
        first += 2;
    }
    if (static_cast<int64_t>(tok.size() - first) != expectedCount)
        throw FixtureError("expected " + std::to_string(expectedCount) + " values for shape " +
                           t.shape.str() + ", got " + std::to_string(tok.size() - first));
    t.values.reserve(static_cast<size_t>(expectedCount));
    for (size_t k = first; k < tok.size(); ++k) {
        if (t.dtype == DType::Float64)
            t.values.push_back(parseNumber<double>(tok[k]));
        else if (t.dtype == DType::Float32)
            t.values.push_back(static_cast<double>(parseNumber<float>(tok[k])));
        else
            t.values.push_back(static_cast<double>(parseNumber<int64_t>(tok[k])));
    }
    return t;
}

struct KeySpec {
    std::string name;
    DType dtype;
    Dims shape;
};

struct InputSpec {
    int rg = 0; // 1: the (viewed) input is a leaf that requires grad
    TensorData data;
    std::optional<std::pair<int, int>> transpose; // "view transpose d0 d1": non-contiguous input
};

struct Case {
    std::string name;
    std::string kind;
    std::string mode; // train | eval | both
    std::string file;
    int line = 0;
    Opts opts;
    std::vector<std::pair<std::string, TensorData>> state;
    std::vector<InputSpec> inputs;
    std::optional<TensorData> out;
    std::optional<TensorData> gout;
    std::map<int, TensorData> grads;
    std::vector<std::pair<std::string, TensorData>> pgrads;
    std::vector<std::pair<std::string, TensorData>> after;
    std::vector<KeySpec> keys; // state-dict layout cases
    bool isLayout() const { return !keys.empty(); }
    // The floating dtype the module runs in (what Module::to converts to).
    DType dtype() const { return out ? out->dtype : DType::Float32; }
};

std::vector<std::string> splitTokens(const std::string& line) {
    std::vector<std::string> tok;
    std::istringstream in(line);
    std::string s;
    while (in >> s)
        tok.push_back(s);
    return tok;
}

void validate(const Case& c) {
    if (c.kind.empty()) throw FixtureError("case without 'layer'");
    if (c.mode != "train" && c.mode != "eval" && c.mode != "both")
        throw FixtureError("case without a valid 'mode'");
    if (c.isLayout()) {
        if (c.out || !c.inputs.empty()) throw FixtureError("layout case with in/out lines");
        return;
    }
    if (!c.out || !c.gout || c.inputs.empty()) throw FixtureError("case needs in, out and gout");
    for (size_t k = 0; k < c.inputs.size(); ++k)
        if ((c.inputs[k].rg != 0) != (c.grads.count(static_cast<int>(k)) != 0))
            throw FixtureError("input " + std::to_string(k) +
                               ": 'grad' line must be present exactly when rg is 1");
}

std::vector<Case> parseFile(const std::string& path, const std::string& label) {
    std::ifstream in(path);
    if (!in) throw FixtureError("cannot open " + path);
    std::vector<Case> cases;
    std::optional<Case> cur;
    std::string line;
    int lineNo = 0;
    while (std::getline(in, line)) {
        ++lineNo;
        try {
            if (line.empty() || line[0] == '#') continue;
            const auto tok = splitTokens(line);
            const std::string& kw = tok[0];
            if (kw == "case") {
                if (cur) throw FixtureError("'case' before 'end'");
                if (tok.size() != 2) throw FixtureError("'case' takes one name");
                cur = Case{};
                cur->name = tok[1];
                cur->file = label;
                cur->line = lineNo;
                continue;
            }
            if (!cur) throw FixtureError("'" + kw + "' outside a case");
            if (kw == "layer" && tok.size() == 2) {
                cur->kind = tok[1];
            } else if (kw == "opt" && tok.size() == 3) {
                cur->opts.set(tok[1], tok[2]);
            } else if (kw == "mode" && tok.size() == 2) {
                cur->mode = tok[1];
            } else if (kw == "state" && tok.size() >= 4) {
                cur->state.emplace_back(tok[1], parseTensor(tok, 2));
            } else if (kw == "in" && tok.size() >= 4) {
                const int rg = static_cast<int>(parseNumber<int64_t>(tok[1]));
                if (rg != 0 && rg != 1) throw FixtureError("bad rg");
                cur->inputs.push_back({rg, parseTensor(tok, 2), std::nullopt});
            } else if (kw == "view" && tok.size() == 4 && tok[1] == "transpose") {
                if (cur->inputs.empty() || cur->inputs.back().transpose)
                    throw FixtureError("'view' needs one 'in' line before it");
                cur->inputs.back().transpose = {static_cast<int>(parseNumber<int64_t>(tok[2])),
                                                static_cast<int>(parseNumber<int64_t>(tok[3]))};
            } else if (kw == "out" && tok.size() >= 3) {
                cur->out = parseTensor(tok, 1);
            } else if (kw == "gout" && tok.size() >= 3) {
                cur->gout = parseTensor(tok, 1);
            } else if (kw == "grad" && tok.size() >= 4) {
                cur->grads[static_cast<int>(parseNumber<int64_t>(tok[1]))] = parseTensor(tok, 2);
            } else if (kw == "pgrad" && tok.size() >= 4) {
                cur->pgrads.emplace_back(tok[1], parseTensor(tok, 2));
            } else if (kw == "after" && tok.size() >= 4) {
                cur->after.emplace_back(tok[1], parseTensor(tok, 2));
            } else if (kw == "key" && tok.size() == 4) {
                cur->keys.push_back({tok[1], parseDType(tok[2]), Dims(parseIntList(tok[3]))});
            } else if (kw == "end" && tok.size() == 1) {
                validate(*cur);
                cases.push_back(std::move(*cur));
                cur.reset();
            } else {
                throw FixtureError("malformed '" + kw + "' line");
            }
        } catch (const FixtureError& e) {
            throw FixtureError(label + ":" + std::to_string(lineNo) + ": " + e.what());
        }
    }
    if (cur) throw FixtureError(label + ": unterminated case " + cur->name);
    return cases;
}

struct Fixtures {
    std::vector<Case> cases;
    std::map<std::string, int> perFile;
    std::vector<std::string> errors;
};

const Fixtures& fixtures() {
    static const Fixtures fx = [] {
        Fixtures f;
        for (const char* file : kFixtureFiles) {
            const std::string path = std::string(MYELIN_SOURCE_DIR) + "/tests/golden/" + file;
            try {
                auto cases = parseFile(path, file);
                f.perFile[file] = static_cast<int>(cases.size());
                for (auto& c : cases)
                    f.cases.push_back(std::move(c));
            } catch (const std::exception& e) {
                f.errors.push_back(e.what());
                f.perFile[file] = 0;
            }
        }
        return f;
    }();
    return fx;
}

// ---------------------------------------------------------------------------------------------
// Models of the whole-model cases (the PyTorch definitions are in gen_golden_nn.py).

std::shared_ptr<nn::Sequential> makeMlp() {
    return make_shared<nn::Sequential>(make_shared<nn::Flatten>(),
                                       make_shared<nn::Linear>(784, 256), make_shared<nn::ReLU>(),
                                       make_shared<nn::Linear>(256, 128), make_shared<nn::ReLU>(),
                                       make_shared<nn::Linear>(128, 10));
}

std::shared_ptr<nn::Sequential> makeCnn() {
    return make_shared<nn::Sequential>(
        make_shared<nn::Conv2d>(1, 8, 3, nn::Conv2dOptions{.padding = 1}),
        make_shared<nn::BatchNorm2d>(8), make_shared<nn::ReLU>(), make_shared<nn::MaxPool2d>(2),
        make_shared<nn::Conv2d>(8, 16, 3, nn::Conv2dOptions{.padding = 1}),
        make_shared<nn::BatchNorm2d>(16), make_shared<nn::ReLU>(),
        make_shared<nn::AdaptiveAvgPool2d>(1), make_shared<nn::Flatten>(),
        make_shared<nn::Linear>(16, 10));
}

// ResNet's basic block: conv-bn-relu-conv-bn, plus the identity through an Add node, then ReLU.
class ResBlock : public nn::Module {
  public:
    explicit ResBlock(int64_t c) : Module("ResBlock") {
        const nn::Conv2dOptions conv{.padding = 1, .bias = false};
        conv1 = register_module("conv1", make_shared<nn::Conv2d>(c, c, 3, conv));
        bn1 = register_module("bn1", make_shared<nn::BatchNorm2d>(c));
        relu1 = register_module("relu1", make_shared<nn::ReLU>());
        conv2 = register_module("conv2", make_shared<nn::Conv2d>(c, c, 3, conv));
        bn2 = register_module("bn2", make_shared<nn::BatchNorm2d>(c));
        add = register_module("add", make_shared<nn::Add>());
        relu2 = register_module("relu2", make_shared<nn::ReLU>());
    }
    Tensor forward(const TensorList& inputs) override {
        const Tensor& x = inputs[0];
        Tensor y = (*bn2)((*conv2)((*relu1)((*bn1)((*conv1)(x)))));
        return (*relu2)((*add)(TensorList{x, y}));
    }

    std::shared_ptr<nn::Conv2d> conv1, conv2;
    std::shared_ptr<nn::BatchNorm2d> bn1, bn2;
    std::shared_ptr<nn::ReLU> relu1, relu2;
    std::shared_ptr<nn::Add> add;
};

// ---------------------------------------------------------------------------------------------
// The layer table: fixture kind -> construction through layers.h with the case's options.

using Factory = std::function<nn::ModulePtr(const Opts&)>;

std::map<std::string, Factory> buildFactories() {
    std::map<std::string, Factory> t;
    t["Linear"] = [](const Opts& o) {
        return make_shared<nn::Linear>(o.i("in_features"), o.i("out_features"), o.b("bias", true));
    };
    t["Bilinear"] = [](const Opts& o) {
        return make_shared<nn::Bilinear>(o.i("in1_features"), o.i("in2_features"),
                                         o.i("out_features"), o.b("bias", true));
    };
    t["Conv1d"] = [](const Opts& o) {
        nn::Conv1dOptions c;
        c.stride = o.i("stride", 1);
        c.same_padding = o.samePadding();
        c.padding = c.same_padding ? 0 : o.i("padding", 0);
        c.dilation = o.i("dilation", 1);
        c.groups = o.i("groups", 1);
        c.bias = o.b("bias", true);
        return make_shared<nn::Conv1d>(o.i("in_channels"), o.i("out_channels"), o.i("kernel_size"),
                                       c);
    };
    t["Conv2d"] = [](const Opts& o) {
        nn::Conv2dOptions c;
        c.stride = o.size2("stride", 1);
        c.same_padding = o.samePadding();
        c.padding = c.same_padding ? nn::Size2(0) : o.size2("padding", 0);
        c.dilation = o.size2("dilation", 1);
        c.groups = o.i("groups", 1);
        c.bias = o.b("bias", true);
        return make_shared<nn::Conv2d>(o.i("in_channels"), o.i("out_channels"),
                                       o.size2("kernel_size"), c);
    };
    t["ConvTranspose2d"] = [](const Opts& o) {
        nn::ConvTranspose2dOptions c;
        c.stride = o.size2("stride", 1);
        c.padding = o.size2("padding", 0);
        c.output_padding = o.size2("output_padding", 0);
        c.groups = o.i("groups", 1);
        c.bias = o.b("bias", true);
        c.dilation = o.size2("dilation", 1);
        return make_shared<nn::ConvTranspose2d>(o.i("in_channels"), o.i("out_channels"),
                                                o.size2("kernel_size"), c);
    };
    t["MaxPool2d"] = [](const Opts& o) {
        nn::MaxPool2dOptions c;
        if (o.has("stride")) c.stride = o.size2("stride");
        c.padding = o.size2("padding", 0);
        c.dilation = o.size2("dilation", 1);
        c.ceil_mode = o.b("ceil_mode", false);
        return make_shared<nn::MaxPool2d>(o.size2("kernel_size"), c);
    };
    t["AvgPool2d"] = [](const Opts& o) {
        nn::AvgPool2dOptions c;
        if (o.has("stride")) c.stride = o.size2("stride");
        c.padding = o.size2("padding", 0);
        c.ceil_mode = o.b("ceil_mode", false);
        c.count_include_pad = o.b("count_include_pad", true);
        return make_shared<nn::AvgPool2d>(o.size2("kernel_size"), c);
    };
    t["AdaptiveAvgPool2d"] = [](const Opts& o) {
        return make_shared<nn::AdaptiveAvgPool2d>(o.size2("output_size"));
    };
    t["BatchNorm1d"] = [](const Opts& o) {
        return make_shared<nn::BatchNorm1d>(o.i("num_features"), o.d("eps", 1e-5),
                                            o.optD("momentum", 0.1), o.b("affine", true),
                                            o.b("track_running_stats", true));
    };
    t["BatchNorm2d"] = [](const Opts& o) {
        return make_shared<nn::BatchNorm2d>(o.i("num_features"), o.d("eps", 1e-5),
                                            o.optD("momentum", 0.1), o.b("affine", true),
                                            o.b("track_running_stats", true));
    };
    t["LayerNorm"] = [](const Opts& o) {
        return make_shared<nn::LayerNorm>(o.dims("normalized_shape"), o.d("eps", 1e-5),
                                          o.b("elementwise_affine", true));
    };
    t["GroupNorm"] = [](const Opts& o) {
        return make_shared<nn::GroupNorm>(o.i("num_groups"), o.i("num_channels"), o.d("eps", 1e-5),
                                          o.b("affine", true));
    };
    t["Dropout"] = [](const Opts& o) { return make_shared<nn::Dropout>(o.d("p", 0.5)); };
    t["Dropout2d"] = [](const Opts& o) { return make_shared<nn::Dropout2d>(o.d("p", 0.5)); };
    t["Embedding"] = [](const Opts& o) {
        return make_shared<nn::Embedding>(o.i("num_embeddings"), o.i("embedding_dim"),
                                          o.optI("padding_idx"));
    };
    t["Flatten"] = [](const Opts& o) {
        return make_shared<nn::Flatten>(o.dim("start_dim", 1), o.dim("end_dim", -1));
    };
    t["Unflatten"] = [](const Opts& o) {
        return make_shared<nn::Unflatten>(o.dim("dim", 0), o.dims("unflattened_size"));
    };
    t["Identity"] = [](const Opts&) { return make_shared<nn::Identity>(); };
    t["Upsample"] = [](const Opts& o) {
        return make_shared<nn::Upsample>(o.size2("scale_factor"),
                                         o.has("mode") ? o.str("mode") : std::string("nearest"));
    };
    t["ReLU"] = [](const Opts&) { return make_shared<nn::ReLU>(); };
    t["LeakyReLU"] = [](const Opts& o) {
        return o.has("negative_slope") ? make_shared<nn::LeakyReLU>(o.d("negative_slope"))
                                       : make_shared<nn::LeakyReLU>();
    };
    t["PReLU"] = [](const Opts& o) {
        return make_shared<nn::PReLU>(o.i("num_parameters", 1), o.d("init", 0.25));
    };
    t["ELU"] = [](const Opts& o) {
        return o.has("alpha") ? make_shared<nn::ELU>(o.d("alpha")) : make_shared<nn::ELU>();
    };
    t["GELU"] = [](const Opts& o) {
        return o.has("approximate") ? make_shared<nn::GELU>(o.str("approximate"))
                                    : make_shared<nn::GELU>();
    };
    t["SiLU"] = [](const Opts&) { return make_shared<nn::SiLU>(); };
    t["Sigmoid"] = [](const Opts&) { return make_shared<nn::Sigmoid>(); };
    t["Tanh"] = [](const Opts&) { return make_shared<nn::Tanh>(); };
    t["Softmax"] = [](const Opts& o) { return make_shared<nn::Softmax>(o.dim("dim", 0)); };
    t["LogSoftmax"] = [](const Opts& o) { return make_shared<nn::LogSoftmax>(o.dim("dim", 0)); };
    t["Softplus"] = [](const Opts& o) {
        if (o.has("threshold"))
            return make_shared<nn::Softplus>(o.d("beta", 1.0), o.d("threshold"));
        if (o.has("beta")) return make_shared<nn::Softplus>(o.d("beta"));
        return make_shared<nn::Softplus>();
    };
    t["Hardswish"] = [](const Opts&) { return make_shared<nn::Hardswish>(); };
    t["Add"] = [](const Opts&) { return make_shared<nn::Add>(); };
    t["Multiply"] = [](const Opts&) { return make_shared<nn::Multiply>(); };
    t["Concat"] = [](const Opts& o) { return make_shared<nn::Concat>(o.dim("dim", 1)); };
    t["MLP"] = [](const Opts&) -> nn::ModulePtr { return makeMlp(); };
    t["CNN"] = [](const Opts&) -> nn::ModulePtr { return makeCnn(); };
    t["ResBlock"] = [](const Opts&) -> nn::ModulePtr { return make_shared<ResBlock>(4); };
    return t;
}

const std::map<std::string, Factory>& factories() {
    static const auto t = buildFactories();
    return t;
}

// ---------------------------------------------------------------------------------------------
// Tolerances. An element passes when |actual - expected| <= atol + rtol * |expected|.
//
// Element-wise layers (activations, shape layers, max pooling, merge nodes, embedding lookup)
// compute each output from one or a few inputs with the same formulas: float32 rtol 1e-5
// (~100 ulp, room for a different exp/erf/tanh implementation, e.g. Myelin's vectorised
// fast_expf) with atol 1e-6 for values near 0; float64 rtol 1e-10 / atol 1e-12.
//
// Accumulating layers (linear, bilinear, convolutions, average pooling, normalisation, softmax,
// whole models) and every gradient that sums over several output elements (parameter gradients
// summed over the batch, input gradients of pooling/broadcasting): the summation order is
// implementation-defined (PyTorch's vectorised/blocked loops, oneDNN's and OpenBLAS's blocking,
// Myelin's double accumulators), so the rounding error scales with the sum of the terms'
// magnitudes (up to ~10-50 here) times the unit roundoff, not with the result, which may cancel to
// near 0: float32 rtol 1e-5 / atol 1e-5; float64 rtol 1e-9 / atol 1e-10 (the normalisations
// divide by a batch standard deviation, which amplifies those differences).
struct Tolerance {
    double rtol;
    double atol;
};

bool isAccumulatingKind(const std::string& kind) {
    static const std::set<std::string> kinds = {
        "Linear",    "Bilinear",          "Conv1d",      "Conv2d",      "ConvTranspose2d",
        "AvgPool2d", "AdaptiveAvgPool2d", "BatchNorm1d", "BatchNorm2d", "LayerNorm",
        "GroupNorm", "Softmax",           "LogSoftmax",  "MLP",         "CNN",
        "ResBlock"};
    return kinds.count(kind) != 0;
}

Tolerance tolerance(DType dtype, bool accumulates) {
    if (!myelin::is_floating(dtype)) return {0.0, 0.0}; // indices, num_batches_tracked: exact
    if (dtype == DType::Float64)
        return accumulates ? Tolerance{1e-9, 1e-10} : Tolerance{1e-10, 1e-12};
    return accumulates ? Tolerance{1e-5, 1e-5} : Tolerance{1e-5, 1e-6};
}

// ---------------------------------------------------------------------------------------------
// Tensors in and out

Tensor makeTensor(const TensorData& d) {
    if (d.every != 1) throw FixtureError("a sampled ('every') tensor cannot be an input");
    switch (d.dtype) {
    case DType::Float32: {
        std::vector<float> v(d.values.begin(), d.values.end());
        return myelin::from_vector(v, d.shape, myelin::TensorOptions(DType::Float32));
    }
    case DType::Float64:
        return myelin::from_vector(d.values, d.shape, myelin::TensorOptions(DType::Float64));
    case DType::Int64: {
        std::vector<int64_t> v;
        v.reserve(d.values.size());
        for (double x : d.values)
            v.push_back(static_cast<int64_t>(x));
        return myelin::from_vector(v, d.shape, myelin::TensorOptions(DType::Int64));
    }
    default:
        break;
    }
    throw FixtureError("unhandled dtype");
}

std::vector<double> extractValues(const Tensor& t) {
    std::vector<double> out;
    const Tensor c = t.contiguous();
    switch (c.dtype()) {
    case DType::Float32:
        for (float v : c.to_vector<float>())
            out.push_back(v);
        break;
    case DType::Float64:
        out = c.to_vector<double>();
        break;
    case DType::Int64:
        for (int64_t v : c.to_vector<int64_t>())
            out.push_back(static_cast<double>(v));
        break;
    default:
        for (float v : c.to(DType::Float32).to_vector<float>())
            out.push_back(v);
        break;
    }
    return out;
}

std::string fmtValue(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

std::string multiIndex(const Dims& shape, size_t flat) {
    if (shape.empty()) return "[]";
    std::vector<int64_t> idx(static_cast<size_t>(shape.size()));
    for (int d = shape.size() - 1; d >= 0; --d) {
        idx[static_cast<size_t>(d)] = static_cast<int64_t>(flat) % shape[d];
        flat /= static_cast<size_t>(shape[d]);
    }
    std::string s = "[";
    for (size_t k = 0; k < idx.size(); ++k) {
        if (k) s += ',';
        s += std::to_string(idx[k]);
    }
    return s + "]";
}

// Empty when `actual` matches `expected`, else a description naming the first differing
// elements (flat and multi-dimensional index, expected and actual).
std::string compareTensor(const std::string& what, const Tensor& actual, const TensorData& expected,
                          Tolerance tol) {
    if (!actual.defined()) return what + ": undefined tensor";
    if (actual.dtype() != expected.dtype)
        return what + ": dtype " + myelin::dtype_name(actual.dtype()) + ", expected " +
               myelin::dtype_name(expected.dtype);
    if (!(actual.shape() == expected.shape))
        return what + ": shape " + actual.shape().str() + ", expected " + expected.shape.str();
    const std::vector<double> got = extractValues(actual);
    if (static_cast<int64_t>(got.size()) != expected.shape.numel())
        return what + ": read " + std::to_string(got.size()) + " values";
    int bad = 0;
    double worst = 0.0;
    std::string detail;
    for (size_t s = 0; s < expected.values.size(); ++s) {
        const size_t k = s * static_cast<size_t>(expected.every);
        const double e = expected.values[s];
        const double g = got[k];
        const bool ok = std::isfinite(g) && std::fabs(g - e) <= tol.atol + tol.rtol * std::fabs(e);
        if (ok) continue;
        ++bad;
        if (std::isfinite(g)) worst = std::max(worst, std::fabs(g - e));
        if (bad <= 4)
            detail += "\n    element " + std::to_string(k) + " " + multiIndex(expected.shape, k) +
                      ": expected " + fmtValue(e) + ", actual " + fmtValue(g);
    }
    if (bad == 0) return {};
    return what + " (" + myelin::dtype_name(expected.dtype) + " " + expected.shape.str() +
           "): " + std::to_string(bad) + " of " + std::to_string(expected.values.size()) +
           (expected.every > 1 ? " sampled" : "") + " elements differ (rtol " + fmtValue(tol.rtol) +
           ", atol " + fmtValue(tol.atol) + ", max |diff| " + fmtValue(worst) + ")" + detail;
}

std::string caseHeader(const Case& c, const std::string& mode) {
    return c.name + " [" + c.kind + ", mode " + mode + ", " + c.file + ":" +
           std::to_string(c.line) + "]";
}

std::string describeState(const nn::StateDict& sd) {
    std::string s;
    for (const auto& [k, v] : sd)
        s += "\n      " + k + " " + myelin::dtype_name(v.dtype()) + " " + v.shape().str();
    return s;
}

// Builds the module of a case in the case's dtype; throws with the layer's own message.
nn::ModulePtr buildModule(const Case& c) {
    auto it = factories().find(c.kind);
    if (it == factories().end()) throw FixtureError("layer kind '" + c.kind + "' not in the table");
    nn::ModulePtr m = it->second(c.opts);
    if (c.dtype() == DType::Float64) m->to(DType::Float64);
    return m;
}

// The layer's state_dict against the fixture's (PyTorch's) keys, order, dtypes and shapes.
std::string compareStateLayout(const nn::StateDict& sd, const std::vector<KeySpec>& expected) {
    bool same = sd.size() == expected.size();
    for (size_t k = 0; same && k < sd.size(); ++k)
        same = sd[k].first == expected[k].name && sd[k].second.dtype() == expected[k].dtype &&
               sd[k].second.shape() == expected[k].shape;
    if (same) return {};
    std::string want;
    for (const auto& e : expected)
        want += "\n      " + e.name + " " + myelin::dtype_name(e.dtype) + " " + e.shape.str();
    return "\n  state_dict differs from PyTorch's\n    Myelin:" + describeState(sd) +
           "\n    PyTorch:" + want;
}

std::vector<KeySpec> keysOf(const Case& c) {
    if (c.isLayout()) return c.keys;
    std::vector<KeySpec> out;
    for (const auto& [k, t] : c.state)
        out.push_back({k, t.dtype, t.shape});
    return out;
}

// Runs one case in one mode; returns the problems found (empty: pass).
std::string runCase(const Case& c, const std::string& mode) {
    std::string problems;
    std::string stage = "constructing the layer";
    try {
        nn::ModulePtr m = buildModule(c);

        stage = "state_dict";
        problems += compareStateLayout(m->state_dict(), keysOf(c));

        stage = "load_state_dict (strict)";
        nn::StateDict sd;
        for (const auto& [k, t] : c.state)
            sd.emplace_back(k, makeTensor(t));
        m->load_state_dict(sd, true);
        if (!problems.empty()) return problems;

        stage = "forward";
        m->train(mode == "train");
        TensorList inputs, leaves;
        for (size_t k = 0; k < c.inputs.size(); ++k) {
            const InputSpec& spec = c.inputs[k];
            Tensor x = makeTensor(spec.data);
            if (spec.transpose) {
                x = x.transpose(spec.transpose->first, spec.transpose->second);
                if (x.is_contiguous())
                    problems += "\n  input " + std::to_string(k) +
                                " is contiguous after its transpose (PyTorch: non-contiguous)";
                x = x.detach();
            }
            if (spec.rg) x.requires_grad_(true);
            inputs.push_back(x);
            leaves.push_back(spec.rg ? x : Tensor());
        }
        Tensor out = inputs.size() == 1 ? (*m)(inputs[0]) : (*m)(inputs);
        const bool acc = isAccumulatingKind(c.kind);
        std::string msg = compareTensor("output", out, *c.out, tolerance(c.out->dtype, acc));
        if (!msg.empty()) problems += "\n  " + msg;
        if (out.defined() && !out.requires_grad()) problems += "\n  output does not require grad";

        stage = "buffers after the forward";
        const auto buffers = m->named_buffers();
        std::map<std::string, Tensor> bufferByName(buffers.begin(), buffers.end());
        if (!c.after.empty()) {
            for (const auto& [k, expected] : c.after) {
                auto it = bufferByName.find(k);
                if (it == bufferByName.end()) {
                    problems += "\n  buffer " + k + " missing";
                    continue;
                }
                // Running stats average the batch statistics: accumulations.
                msg = compareTensor("buffer " + k + " after forward", it->second, expected,
                                    tolerance(expected.dtype, true));
                if (!msg.empty()) problems += "\n  " + msg;
            }
        } else {
            // Eval mode (and stateless layers): buffers must keep their loaded values exactly.
            for (const auto& [k, t] : c.state) {
                auto it = bufferByName.find(k);
                if (it == bufferByName.end()) continue;
                msg = compareTensor("buffer " + k + " (must not change)", it->second, t, {0, 0});
                if (!msg.empty()) problems += "\n  " + msg;
            }
        }
        if (!out.defined()) return problems;

        // Backward even when the forward differs: the gradients help locate the bug.
        stage = "backward";
        out.backward(makeTensor(*c.gout));

        stage = "comparing gradients";
        int64_t outNumel = c.out->shape.numel();
        for (const auto& [k, expected] : c.grads) {
            const Tensor g = leaves.at(static_cast<size_t>(k)).grad();
            const std::string what = "grad of input " + std::to_string(k);
            if (!g.defined()) {
                problems += "\n  " + what + ": undefined (no gradient reached the input)";
                continue;
            }
            const bool gacc = acc || expected.shape.numel() < outNumel;
            msg = compareTensor(what, g, expected, tolerance(expected.dtype, gacc));
            if (!msg.empty()) problems += "\n  " + msg;
        }
        const auto params = m->named_parameters();
        if (params.size() != c.pgrads.size()) {
            problems += "\n  " + std::to_string(params.size()) + " parameters, PyTorch has " +
                        std::to_string(c.pgrads.size());
        } else {
            for (size_t k = 0; k < params.size(); ++k) {
                const auto& [name, expected] = c.pgrads[k];
                if (params[k].first != name) {
                    problems += "\n  parameter " + std::to_string(k) + " is " + params[k].first +
                                ", PyTorch's is " + name;
                    continue;
                }
                const Tensor g = params[k].second.grad();
                const std::string what = "grad of parameter " + name;
                if (!g.defined()) {
                    problems += "\n  " + what + ": undefined (no gradient reached it)";
                    continue;
                }
                const bool gacc = acc || expected.shape.numel() < outNumel;
                msg = compareTensor(what, g, expected, tolerance(expected.dtype, gacc));
                if (!msg.empty()) problems += "\n  " + msg;
            }
        }
    } catch (const std::exception& e) {
        problems += "\n  exception during " + stage + ": " + e.what();
    }
    return problems;
}

// Layer kinds the issue asks for: each must have cases in both fixture files.
const std::vector<std::string>& requiredKinds() {
    static const std::vector<std::string> kinds = {"Linear",
                                                   "Bilinear",
                                                   "Conv1d",
                                                   "Conv2d",
                                                   "ConvTranspose2d",
                                                   "MaxPool2d",
                                                   "AvgPool2d",
                                                   "AdaptiveAvgPool2d",
                                                   "BatchNorm1d",
                                                   "BatchNorm2d",
                                                   "LayerNorm",
                                                   "GroupNorm",
                                                   "Dropout",
                                                   "Dropout2d",
                                                   "Embedding",
                                                   "Flatten",
                                                   "Unflatten",
                                                   "Identity",
                                                   "Upsample",
                                                   "ReLU",
                                                   "LeakyReLU",
                                                   "PReLU",
                                                   "ELU",
                                                   "GELU",
                                                   "SiLU",
                                                   "Sigmoid",
                                                   "Tanh",
                                                   "Softmax",
                                                   "LogSoftmax",
                                                   "Softplus",
                                                   "Hardswish",
                                                   "Add",
                                                   "Concat",
                                                   "Multiply",
                                                   "MLP",
                                                   "CNN",
                                                   "ResBlock"};
    return kinds;
}

} // namespace

// ---------------------------------------------------------------------------------------------

class TestNnGolden : public QObject {
    Q_OBJECT

  private slots:
    void fixturesLoaded();
    void layer_data();
    void layer();
    void stateDictLayout_data();
    void stateDictLayout();
};

void TestNnGolden::fixturesLoaded() {
    const Fixtures& fx = fixtures();
    for (const auto& e : fx.errors)
        qWarning("%s", e.c_str());
    QVERIFY2(fx.errors.empty(), fx.errors.empty() ? "" : fx.errors.front().c_str());
    const int f32 = fx.perFile.count("nn_f32.txt") ? fx.perFile.at("nn_f32.txt") : 0;
    const int f64 = fx.perFile.count("nn_f64.txt") ? fx.perFile.at("nn_f64.txt") : 0;
    QVERIFY2(f32 >= kMinCasesF32, qPrintable(QStringLiteral("nn_f32.txt has %1 cases, expected "
                                                            ">= %2 (run gen_golden_nn.py)")
                                                 .arg(f32)
                                                 .arg(kMinCasesF32)));
    QVERIFY2(f64 >= kMinCasesF64, qPrintable(QStringLiteral("nn_f64.txt has %1 cases, expected "
                                                            ">= %2")
                                                 .arg(f64)
                                                 .arg(kMinCasesF64)));
    std::set<std::string> names;
    std::map<std::string, std::set<std::string>> kindsPerFile;
    for (const auto& c : fx.cases) {
        QVERIFY2(names.insert(c.name).second,
                 qPrintable("duplicate case " + QString::fromStdString(c.name)));
        QVERIFY2(factories().count(c.kind),
                 qPrintable(QString::fromStdString(c.name + ": unknown layer " + c.kind)));
        if (!c.isLayout()) kindsPerFile[c.file].insert(c.kind);
    }
    for (const auto& kind : requiredKinds())
        for (const char* file : kFixtureFiles)
            QVERIFY2(kindsPerFile[file].count(kind),
                     qPrintable(QString::fromStdString(kind + " has no case in " + file)));
}

void TestNnGolden::layer_data() {
    QTest::addColumn<int>("index");
    QTest::addColumn<QString>("mode");
    const auto& cases = fixtures().cases;
    // Without rows Qt aborts the run; fixturesLoaded() reports why there are none.
    if (cases.empty()) QTest::newRow("no-fixtures") << -1 << QString();
    for (size_t k = 0; k < cases.size(); ++k) {
        const Case& c = cases[k];
        if (c.isLayout()) continue;
        if (c.mode == "both") {
            for (const char* m : {"train", "eval"})
                QTest::newRow((c.name + "/" + m).c_str()) << static_cast<int>(k) << QString(m);
        } else {
            QTest::newRow((c.name + "/" + c.mode).c_str())
                << static_cast<int>(k) << QString::fromStdString(c.mode);
        }
    }
}

void TestNnGolden::layer() {
    QFETCH(int, index);
    QFETCH(QString, mode);
    QVERIFY2(index >= 0, "no fixture cases were loaded");
    const Case& c = fixtures().cases.at(static_cast<size_t>(index));
    const std::string m = mode.toStdString();
    const std::string problems = runCase(c, m);
    QVERIFY2(problems.empty(), qPrintable(QString::fromStdString(caseHeader(c, m) + problems)));
}

void TestNnGolden::stateDictLayout_data() {
    QTest::addColumn<int>("index");
    const auto& cases = fixtures().cases;
    bool any = false;
    for (size_t k = 0; k < cases.size(); ++k) {
        if (!cases[k].isLayout()) continue;
        QTest::newRow(cases[k].name.c_str()) << static_cast<int>(k);
        any = true;
    }
    // Without rows Qt aborts the run; fixturesLoaded() reports why there are none.
    if (!any) QTest::newRow("no-fixtures") << -1;
}

// The models' state_dict keys, dtypes and shapes, in order, equal PyTorch's.
void TestNnGolden::stateDictLayout() {
    QFETCH(int, index);
    QVERIFY2(index >= 0, "no state-dict layout case was loaded");
    const Case& c = fixtures().cases.at(static_cast<size_t>(index));
    std::string problems;
    try {
        problems = compareStateLayout(buildModule(c)->state_dict(), c.keys);
    } catch (const std::exception& e) {
        problems = "\n  exception: " + std::string(e.what());
    }
    QVERIFY2(problems.empty(), qPrintable(QString::fromStdString(caseHeader(c, "-") + problems)));
}

QTEST_APPLESS_MAIN(TestNnGolden)
#include "test_nn_golden.moc"
