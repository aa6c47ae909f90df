// Golden parity of the nn layers with PyTorch: every layer of myelin/nn/layers.h (and three small
// models) is built with the constructor options of a fixture case, loaded with PyTorch's
// parameters and buffers through strict load_state_dict (which also checks the state_dict names
// and shapes), run forward in train and/or eval mode and backward with PyTorch's grad_output;
// the output, the input gradients, the parameter gradients and (BatchNorm in train mode) the
// running statistics after the forward are compared with PyTorch's. Fixtures:
// tests/golden/nn_f32.txt and nn_f64.txt, written by tests/golden/gen_golden_nn.py (format in its
// docstring and in tests/golden/README.md).
#include "golden_attention_factories.h"
#include "golden_support.h"

#include <QtTest>

#include <myelin/autograd.h>
#include <myelin/nn/layers.h>
#include <myelin/nn/module.h>
#include <myelin/nn/recurrent.h>
#include <myelin/tensor.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
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

using golden::compareMeta;
using golden::extractValues;
using golden::FixtureError;
using golden::makeTensor;
using golden::Mismatches;
using golden::parseIntList;
using golden::parseNumber;
using golden::TensorData;
using golden::Tolerance;

namespace {

// A truncated or missing fixture must fail, not pass vacuously.
constexpr int kMinCasesF32 = 130;
constexpr int kMinCasesF64 = 130;
const char* const kFixtureFiles[] = {"nn_f32.txt", "nn_f64.txt", "attention_f32.txt",
                                     "attention_f64.txt"};
// Recurrent layers (gen_golden_recurrent.py): several outputs, a lengths input.
constexpr int kMinRecurrentCasesF32 = 20;
constexpr int kMinRecurrentCasesF64 = 20;
const char* const kRecurrentFixtureFiles[] = {"recurrent_f32.txt", "recurrent_f64.txt"};

// ---------------------------------------------------------------------------------------------
// Fixture model and parser

DType parseDType(const std::string& tag) {
    if (tag == "f32") return DType::Float32;
    if (tag == "f64") return DType::Float64;
    if (tag == "i64") return DType::Int64;
    if (tag == "bool") return DType::Bool; // masks
    throw FixtureError("unknown dtype tag '" + tag + "'");
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
    golden::parseValues(tok, first, static_cast<size_t>(expectedCount), t);
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
    // Layers with several outputs ("out <k>", "gout <k>"); out / gout then hold output 0.
    std::map<int, TensorData> outs, gouts;
    bool isLayout() const { return !keys.empty(); }
    // The floating dtype the module runs in (what Module::to converts to).
    DType dtype() const { return out ? out->dtype : DType::Float32; }
};

void validate(const Case& c) {
    if (c.kind.empty()) throw FixtureError("case without 'layer'");
    if (c.mode != "train" && c.mode != "eval" && c.mode != "both")
        throw FixtureError("case without a valid 'mode'");
    if (c.isLayout()) {
        if (c.out || !c.inputs.empty()) throw FixtureError("layout case with in/out lines");
        return;
    }
    if (!c.out || !c.gout || c.inputs.empty()) throw FixtureError("case needs in, out and gout");
    if (c.outs.size() != c.gouts.size()) throw FixtureError("one 'gout <k>' per 'out <k>'");
    for (size_t k = 0; k < c.inputs.size(); ++k)
        if ((c.inputs[k].rg != 0) != (c.grads.count(static_cast<int>(k)) != 0))
            throw FixtureError("input " + std::to_string(k) +
                               ": 'grad' line must be present exactly when rg is 1");
}

// The nn-suite lines of a case (layer, opt, mode, state, in, view, out, gout, grad, pgrad,
// after, key); false for any other.
bool parseCaseLine(Case& c, const std::vector<std::string>& tok, const std::string&) {
    const std::string& kw = tok[0];
    if (kw == "layer" && tok.size() == 2) {
        c.kind = tok[1];
    } else if (kw == "opt" && tok.size() == 3) {
        c.opts.set(tok[1], tok[2]);
    } else if (kw == "mode" && tok.size() == 2) {
        c.mode = tok[1];
    } else if (kw == "state" && tok.size() >= 4) {
        c.state.emplace_back(tok[1], parseTensor(tok, 2));
    } else if (kw == "in" && tok.size() >= 4) {
        const int rg = static_cast<int>(parseNumber<int64_t>(tok[1]));
        if (rg != 0 && rg != 1) throw FixtureError("bad rg");
        c.inputs.push_back({rg, parseTensor(tok, 2), std::nullopt});
    } else if (kw == "view" && tok.size() == 4 && tok[1] == "transpose") {
        if (c.inputs.empty() || c.inputs.back().transpose)
            throw FixtureError("'view' needs one 'in' line before it");
        c.inputs.back().transpose = {static_cast<int>(parseNumber<int64_t>(tok[2])),
                                     static_cast<int>(parseNumber<int64_t>(tok[3]))};
    } else if ((kw == "out" || kw == "gout") && tok.size() >= 5 && tok[1] != "f32" &&
               tok[1] != "f64" && tok[1] != "i64") {
        const int k = static_cast<int>(parseNumber<int64_t>(tok[1]));
        auto& slot = kw == "out" ? c.outs : c.gouts;
        if (k != static_cast<int>(slot.size()))
            throw FixtureError("outputs must be numbered 0, 1, ...");
        slot[k] = parseTensor(tok, 2);
        if (k == 0) (kw == "out" ? c.out : c.gout) = slot[k];
    } else if (kw == "out" && tok.size() >= 3) {
        c.out = parseTensor(tok, 1);
    } else if (kw == "gout" && tok.size() >= 3) {
        c.gout = parseTensor(tok, 1);
    } else if (kw == "grad" && tok.size() >= 4) {
        c.grads[static_cast<int>(parseNumber<int64_t>(tok[1]))] = parseTensor(tok, 2);
    } else if (kw == "pgrad" && tok.size() >= 4) {
        c.pgrads.emplace_back(tok[1], parseTensor(tok, 2));
    } else if (kw == "after" && tok.size() >= 4) {
        c.after.emplace_back(tok[1], parseTensor(tok, 2));
    } else if (kw == "key" && tok.size() == 4) {
        c.keys.push_back({tok[1], parseDType(tok[2]), Dims(parseIntList(tok[3]))});
    } else {
        return false;
    }
    return true;
}

std::vector<Case> parseFile(const std::string& path, const std::string& label) {
    return golden::parseFixtureFile<Case>(path, label, parseCaseLine, validate);
}

using Fixtures = golden::Fixtures<Case>;

const Fixtures& fixtures() {
    static const Fixtures fx = [] {
        Fixtures all = golden::loadFixtures<Case>(kFixtureFiles, parseFile);
        Fixtures rec = golden::loadFixtures<Case>(kRecurrentFixtureFiles, parseFile);
        for (auto& c : rec.cases)
            all.cases.push_back(std::move(c));
        all.perFile.insert(rec.perFile.begin(), rec.perFile.end());
        all.errors.insert(all.errors.end(), rec.errors.begin(), rec.errors.end());
        return all;
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
        if (o.has("padding_mode")) c.padding_mode = o.str("padding_mode");
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
        if (o.has("padding_mode")) c.padding_mode = o.str("padding_mode");
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
        if (o.has("divisor_override")) c.divisor_override = o.i("divisor_override");
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
                                         o.has("mode") ? o.str("mode") : std::string("nearest"),
                                         o.b("align_corners", false));
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
    auto recurrentOptions = [](const Opts& o) {
        nn::RecurrentOptions r;
        r.num_layers = o.i("num_layers", 1);
        r.bias = o.b("bias", true);
        r.batch_first = o.b("batch_first", false);
        r.dropout = o.d("dropout", 0.0);
        r.bidirectional = o.b("bidirectional", false);
        return r;
    };
    t["RNN"] = [recurrentOptions](const Opts& o) {
        return make_shared<nn::RNN>(o.i("input_size"), o.i("hidden_size"), recurrentOptions(o),
                                    o.has("nonlinearity") ? o.str("nonlinearity") : "tanh");
    };
    t["LSTM"] = [recurrentOptions](const Opts& o) {
        return make_shared<nn::LSTM>(o.i("input_size"), o.i("hidden_size"), recurrentOptions(o));
    };
    t["GRU"] = [recurrentOptions](const Opts& o) {
        return make_shared<nn::GRU>(o.i("input_size"), o.i("hidden_size"), recurrentOptions(o));
    };
    t["MLP"] = [](const Opts&) -> nn::ModulePtr { return makeMlp(); };
    t["CNN"] = [](const Opts&) -> nn::ModulePtr { return makeCnn(); };
    t["ResBlock"] = [](const Opts&) -> nn::ModulePtr { return make_shared<ResBlock>(4); };
    golden_attention::addFactories(t);
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
bool isAccumulatingKind(const std::string& kind) {
    static const std::set<std::string> kinds = {
        "Linear",    "Bilinear",          "Conv1d",      "Conv2d",      "ConvTranspose2d",
        "AvgPool2d", "AdaptiveAvgPool2d", "BatchNorm1d", "BatchNorm2d", "LayerNorm",
        "GroupNorm", "Softmax",           "LogSoftmax",  "MLP",         "CNN",
        "ResBlock"};
    return kinds.count(kind) != 0 || golden_attention::isAttentionKind(kind);
}

// The recurrent layers accumulate over the input, the hidden state and the time steps.
bool isRecurrentKind(const std::string& kind) {
    return kind == "RNN" || kind == "LSTM" || kind == "GRU";
}

Tolerance tolerance(DType dtype, bool accumulates) {
    if (!myelin::is_floating(dtype)) return {0.0, 0.0}; // indices, num_batches_tracked: exact
    if (dtype == DType::Float64)
        return accumulates ? Tolerance{1e-9, 1e-10} : Tolerance{1e-10, 1e-12};
    return accumulates ? Tolerance{1e-5, 1e-5} : Tolerance{1e-5, 1e-6};
}

// Empty when `actual` matches `expected`, else a description naming the first differing
// elements (flat and multi-dimensional index, expected and actual). A non-finite actual value
// never matches (unlike test_golden, an expected NaN or infinity is not special-cased); a
// sampled ('every') expectation checks only its samples.
std::string compareTensor(const std::string& what, const Tensor& actual, const TensorData& expected,
                          Tolerance tol) {
    if (std::string meta = compareMeta(what, actual, expected); !meta.empty()) return meta;
    const std::vector<double> got = extractValues(actual);
    if (static_cast<int64_t>(got.size()) != expected.shape.numel())
        return what + ": read " + std::to_string(got.size()) + " values";
    Mismatches bad;
    for (size_t s = 0; s < expected.values.size(); ++s) {
        const size_t k = s * static_cast<size_t>(expected.every);
        const double e = expected.values[s];
        const double g = got[k];
        if (!golden::withinTolerance(g, e, tol)) bad.add(expected.shape, k, e, g, std::isfinite(g));
    }
    if (bad.empty()) return {};
    return bad.report(what, expected, expected.values.size(), expected.every > 1, tol);
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
        // Several outputs: all of them are compared, and backward runs over all at once.
        TensorList outs;
        if (!c.outs.empty()) {
            outs = m->outputs(inputs);
            if (outs.size() != c.outs.size())
                problems += "\n  " + std::to_string(outs.size()) + " outputs, PyTorch has " +
                            std::to_string(c.outs.size());
        }
        Tensor out = !c.outs.empty()      ? outs.at(0)
                     : inputs.size() == 1 ? (*m)(inputs[0])
                                          : (*m)(inputs);
        const bool acc = isAccumulatingKind(c.kind) || isRecurrentKind(c.kind);
        std::string msg = compareTensor("output", out, *c.out, tolerance(c.out->dtype, acc));
        if (!msg.empty()) problems += "\n  " + msg;
        for (size_t k = 1; k < c.outs.size() && k < outs.size(); ++k) {
            msg = compareTensor("output " + std::to_string(k), outs[k], c.outs.at(int(k)),
                                tolerance(c.outs.at(int(k)).dtype, acc));
            if (!msg.empty()) problems += "\n  " + msg;
        }
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
        if (!c.outs.empty()) {
            TensorList gouts;
            for (size_t k = 0; k < outs.size() && k < c.gouts.size(); ++k)
                gouts.push_back(makeTensor(c.gouts.at(int(k))));
            outs.resize(gouts.size());
            myelin::autograd::backward(outs, gouts);
        } else {
            out.backward(makeTensor(*c.gout));
        }

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
    const int f32 = fx.count("nn_f32.txt");
    const int f64 = fx.count("nn_f64.txt");
    QVERIFY2(f32 >= kMinCasesF32, qPrintable(QStringLiteral("nn_f32.txt has %1 cases, expected "
                                                            ">= %2 (run gen_golden_nn.py)")
                                                 .arg(f32)
                                                 .arg(kMinCasesF32)));
    QVERIFY2(f64 >= kMinCasesF64, qPrintable(QStringLiteral("nn_f64.txt has %1 cases, expected "
                                                            ">= %2")
                                                 .arg(f64)
                                                 .arg(kMinCasesF64)));
    for (const auto& [file, minimum] :
         {std::pair{kRecurrentFixtureFiles[0], kMinRecurrentCasesF32},
          std::pair{kRecurrentFixtureFiles[1], kMinRecurrentCasesF64}})
        QVERIFY2(fx.count(file) >= minimum,
                 qPrintable(QStringLiteral("%1 has %2 cases, expected >= %3 (run "
                                           "gen_golden_recurrent.py)")
                                .arg(file)
                                .arg(fx.count(file))
                                .arg(minimum)));
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
        for (const char* file : {"nn_f32.txt", "nn_f64.txt"})
            QVERIFY2(kindsPerFile[file].count(kind),
                     qPrintable(QString::fromStdString(kind + " has no case in " + file)));
    for (const char* file : golden_attention::kFiles) {
        QVERIFY2(fx.count(file) >= golden_attention::kMinCases,
                 qPrintable(QStringLiteral("%1 has %2 cases, expected >= %3 (run "
                                           "gen_golden_attention.py)")
                                .arg(file)
                                .arg(fx.count(file))
                                .arg(golden_attention::kMinCases)));
        for (const auto& kind : golden_attention::requiredKinds())
            QVERIFY2(kindsPerFile[file].count(kind),
                     qPrintable(QString::fromStdString(kind + " has no case in " + file)));
    }
    for (const std::string kind : {"RNN", "LSTM", "GRU"})
        for (const char* file : kRecurrentFixtureFiles)
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
