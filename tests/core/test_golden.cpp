// Golden-value parity with PyTorch: every op of tensor.h, forward and backward, on fixtures
// written by tests/golden/gen_golden.py (format and tolerances: tests/golden/README.md), plus
// gradcheck on every float64 case with a gradient.
#include "golden_support.h"

#include <QtTest>

#include <myelin/autograd.h>
#include <myelin/tensor.h>

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#ifndef MYELIN_SOURCE_DIR
#error "test_golden needs MYELIN_SOURCE_DIR (the repository root) to find tests/golden/"
#endif

using myelin::Dims;
using myelin::DType;
using myelin::Tensor;
using myelin::TensorList;

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

// Minimum case counts per file: a truncated or missing fixture must fail, not pass vacuously.
constexpr int kMinCasesF32 = 550;
constexpr int kMinCasesF64 = 500;
const char* const kFixtureFiles[] = {"ops_f32.txt", "ops_f64.txt"};

// ---------------------------------------------------------------------------------------------
// Fixture model and parser

DType parseDType(const std::string& tag) {
    if (tag == "f32") return DType::Float32;
    if (tag == "f64") return DType::Float64;
    if (tag == "f16") return DType::Float16;
    if (tag == "bf16") return DType::BFloat16;
    if (tag == "i64") return DType::Int64;
    if (tag == "u8") return DType::UInt8;
    if (tag == "bool") return DType::Bool;
    throw FixtureError("unknown dtype tag '" + tag + "'");
}

class Attrs {
  public:
    void set(const std::string& key, const std::string& value) { values_[key] = value; }
    bool has(const std::string& key) const { return values_.count(key) != 0; }
    const std::string& str(const std::string& key) const {
        auto it = values_.find(key);
        if (it == values_.end()) throw FixtureError("missing attribute '" + key + "'");
        return it->second;
    }
    double d(const std::string& key) const { return parseNumber<double>(str(key)); }
    int64_t i(const std::string& key) const { return parseNumber<int64_t>(str(key)); }
    int dim(const std::string& key) const { return static_cast<int>(i(key)); }
    bool b(const std::string& key) const { return i(key) != 0; }
    std::vector<int64_t> ints(const std::string& key) const { return parseIntList(str(key)); }
    Dims dims(const std::string& key) const { return Dims(ints(key)); }
    DType dtype(const std::string& key) const { return parseDType(str(key)); }
    std::optional<double> optD(const std::string& key) const {
        if (str(key) == "none") return std::nullopt;
        return d(key);
    }
    std::optional<int64_t> optI(const std::string& key) const {
        if (str(key) == "none") return std::nullopt;
        return i(key);
    }
    std::optional<int> optDim(const std::string& key) const {
        auto v = optI(key);
        if (!v) return std::nullopt;
        return static_cast<int>(*v);
    }

  private:
    std::map<std::string, std::string> values_;
};

struct ViewStep {
    std::string kind;
    std::vector<std::optional<int64_t>> args; // nullopt for "none"
    std::string text;
};

struct InputSpec {
    TensorData data;
    int rg = 0; // 0 none, 1 the viewed tensor is the leaf, 2 the base is the leaf
    std::vector<ViewStep> recipe;
};

struct OutputSpec {
    TensorData data;
    bool requiresGrad = false;
};

struct Case {
    std::string name;
    std::string op;
    std::string file;
    int line = 0;
    Attrs attrs;
    std::vector<InputSpec> inputs;
    std::vector<OutputSpec> outputs;
    std::map<int, TensorData> gouts;                // by output index
    std::map<int, std::optional<TensorData>> grads; // by input index; nullopt = "none"
};

// Parses "<dtype> <shape> <values...>" starting at tokens[pos].
TensorData parseTensor(const std::vector<std::string>& tok, size_t pos) {
    if (tok.size() < pos + 2) throw FixtureError("tensor needs a dtype and a shape");
    TensorData t;
    t.dtype = parseDType(tok[pos]);
    t.shape = Dims(parseIntList(tok[pos + 1]));
    golden::parseValues(tok, pos + 2, static_cast<size_t>(t.shape.numel()), t);
    return t;
}

// The op-suite lines of a case (op, attr, in, view, out, gout, grad); false for any other.
bool parseCaseLine(Case& c, const std::vector<std::string>& tok, const std::string& line) {
    const std::string& kw = tok[0];
    if (kw == "op" && tok.size() == 2) {
        c.op = tok[1];
    } else if (kw == "attr" && tok.size() == 3) {
        c.attrs.set(tok[1], tok[2]);
    } else if (kw == "in" && tok.size() >= 4) {
        InputSpec spec;
        spec.rg = static_cast<int>(parseNumber<int64_t>(tok[2]));
        if (spec.rg < 0 || spec.rg > 2) throw FixtureError("bad rg");
        std::vector<std::string> t2{tok[1]};
        t2.insert(t2.end(), tok.begin() + 3, tok.end());
        spec.data = parseTensor(t2, 0);
        c.inputs.push_back(std::move(spec));
    } else if (kw == "view" && tok.size() >= 2) {
        if (c.inputs.empty()) throw FixtureError("'view' before any 'in'");
        ViewStep step;
        step.kind = tok[1];
        step.text = line.substr(5);
        for (size_t k = 2; k < tok.size(); ++k) {
            if (tok[k] == "none")
                step.args.push_back(std::nullopt);
            else
                step.args.push_back(parseNumber<int64_t>(tok[k]));
        }
        c.inputs.back().recipe.push_back(std::move(step));
    } else if (kw == "out" && tok.size() >= 4) {
        OutputSpec spec;
        spec.requiresGrad = parseNumber<int64_t>(tok[2]) != 0;
        std::vector<std::string> t2{tok[1]};
        t2.insert(t2.end(), tok.begin() + 3, tok.end());
        spec.data = parseTensor(t2, 0);
        c.outputs.push_back(std::move(spec));
    } else if (kw == "gout" && tok.size() >= 3) {
        c.gouts[static_cast<int>(parseNumber<int64_t>(tok[1]))] = parseTensor(tok, 2);
    } else if (kw == "grad" && tok.size() >= 3) {
        const int k = static_cast<int>(parseNumber<int64_t>(tok[1]));
        if (tok[2] == "none")
            c.grads[k] = std::nullopt;
        else
            c.grads[k] = parseTensor(tok, 2);
    } else {
        return false;
    }
    return true;
}

// At 'end': an op, at least one output, and gradients only where they can exist.
void validate(const Case& c) {
    if (c.op.empty()) throw FixtureError("case without 'op'");
    if (c.outputs.empty()) throw FixtureError("case without 'out'");
    for (const auto& [k, g] : c.gouts) {
        if (k < 0 || k >= static_cast<int>(c.outputs.size()) || !c.outputs[k].requiresGrad)
            throw FixtureError("gout for output " + std::to_string(k) +
                               " that does not require grad");
    }
    for (const auto& [k, g] : c.grads) {
        if (k < 0 || k >= static_cast<int>(c.inputs.size()) || c.inputs[k].rg == 0)
            throw FixtureError("grad for input " + std::to_string(k) +
                               " that does not require grad");
    }
}

std::vector<Case> parseFile(const std::string& path, const std::string& label) {
    return golden::parseFixtureFile<Case>(path, label, parseCaseLine, validate);
}

using Fixtures = golden::Fixtures<Case>;

const Fixtures& fixtures() {
    static const Fixtures fx = golden::loadFixtures<Case>(kFixtureFiles, parseFile);
    return fx;
}

// ---------------------------------------------------------------------------------------------
// Building tensors

int64_t arg(const ViewStep& s, size_t k) {
    if (k >= s.args.size() || !s.args[k]) throw FixtureError("bad view recipe '" + s.text + "'");
    return *s.args[k];
}

Dims argDims(const ViewStep& s, size_t from) {
    Dims d;
    for (size_t k = from; k < s.args.size(); ++k)
        d.push_back(arg(s, k));
    return d;
}

Tensor applyStep(const Tensor& t, const ViewStep& s) {
    if (s.kind == "transpose")
        return t.transpose(static_cast<int>(arg(s, 0)), static_cast<int>(arg(s, 1)));
    if (s.kind == "permute") return t.permute(argDims(s, 0));
    if (s.kind == "t") return t.t();
    if (s.kind == "slice") {
        if (s.args.size() != 4) throw FixtureError("bad view recipe '" + s.text + "'");
        return t.slice(static_cast<int>(arg(s, 0)), s.args[1], s.args[2], arg(s, 3));
    }
    if (s.kind == "expand") return t.expand(argDims(s, 0));
    if (s.kind == "select") return t.select(static_cast<int>(arg(s, 0)), arg(s, 1));
    if (s.kind == "narrow") return t.narrow(static_cast<int>(arg(s, 0)), arg(s, 1), arg(s, 2));
    throw FixtureError("unknown view recipe '" + s.text + "'");
}

Tensor applyRecipe(Tensor t, const std::vector<ViewStep>& recipe) {
    for (const auto& s : recipe)
        t = applyStep(t, s);
    return t;
}

std::string recipeText(const std::vector<ViewStep>& recipe) {
    std::string out;
    for (const auto& s : recipe) {
        if (!out.empty()) out += " | ";
        out += s.text;
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// The op table: op name -> call through the public API only.

using OpFn = std::function<TensorList(const TensorList&, const Attrs&)>;

using Args = const TensorList&;
using Attr = const Attrs&;

std::map<std::string, OpFn> buildOpTable() {
    namespace my = myelin;
    std::map<std::string, OpFn> t;
    // --- element-wise binary (default alpha when the fixture has none) ---
    t["add"] = [](Args in, Attr a) -> TensorList {
        return {a.has("alpha") ? my::add(in[0], in[1], a.d("alpha")) : my::add(in[0], in[1])};
    };
    t["sub"] = [](Args in, Attr a) -> TensorList {
        return {a.has("alpha") ? my::sub(in[0], in[1], a.d("alpha")) : my::sub(in[0], in[1])};
    };
    t["mul"] = [](Args in, Attr) -> TensorList { return {my::mul(in[0], in[1])}; };
    t["div"] = [](Args in, Attr) -> TensorList { return {my::div(in[0], in[1])}; };
    t["pow"] = [](Args in, Attr) -> TensorList { return {my::pow(in[0], in[1])}; };
    t["maximum"] = [](Args in, Attr) -> TensorList { return {my::maximum(in[0], in[1])}; };
    t["minimum"] = [](Args in, Attr) -> TensorList { return {my::minimum(in[0], in[1])}; };
    t["op_add"] = [](Args in, Attr) -> TensorList { return {in[0] + in[1]}; };
    t["op_sub"] = [](Args in, Attr) -> TensorList { return {in[0] - in[1]}; };
    t["op_mul"] = [](Args in, Attr) -> TensorList { return {in[0] * in[1]}; };
    t["op_div"] = [](Args in, Attr) -> TensorList { return {in[0] / in[1]}; };
    // --- tensor-scalar ---
    t["add_scalar"] = [](Args in, Attr a) -> TensorList { return {my::add(in[0], a.d("other"))}; };
    t["sub_scalar"] = [](Args in, Attr a) -> TensorList { return {my::sub(in[0], a.d("other"))}; };
    t["rsub_scalar"] = [](Args in, Attr a) -> TensorList {
        return {my::rsub(in[0], a.d("other"))};
    };
    t["mul_scalar"] = [](Args in, Attr a) -> TensorList { return {my::mul(in[0], a.d("other"))}; };
    t["div_scalar"] = [](Args in, Attr a) -> TensorList { return {my::div(in[0], a.d("other"))}; };
    t["op_add_s"] = [](Args in, Attr a) -> TensorList { return {in[0] + a.d("other")}; };
    t["op_sub_s"] = [](Args in, Attr a) -> TensorList { return {in[0] - a.d("other")}; };
    t["op_mul_s"] = [](Args in, Attr a) -> TensorList { return {in[0] * a.d("other")}; };
    t["op_div_s"] = [](Args in, Attr a) -> TensorList { return {in[0] / a.d("other")}; };
    t["op_radd"] = [](Args in, Attr a) -> TensorList { return {a.d("other") + in[0]}; };
    t["op_rsub"] = [](Args in, Attr a) -> TensorList { return {a.d("other") - in[0]}; };
    t["op_rmul"] = [](Args in, Attr a) -> TensorList { return {a.d("other") * in[0]}; };
    t["op_rdiv"] = [](Args in, Attr a) -> TensorList { return {a.d("other") / in[0]}; };
    t["op_neg"] = [](Args in, Attr) -> TensorList { return {-in[0]}; };
    t["pow_scalar"] = [](Args in, Attr a) -> TensorList {
        return {my::pow(in[0], a.d("exponent"))};
    };
    t["pow_scalar_base"] = [](Args in, Attr a) -> TensorList {
        return {my::pow(a.d("base"), in[0])};
    };
    // --- element-wise unary ---
    t["neg"] = [](Args in, Attr) -> TensorList { return {my::neg(in[0])}; };
    t["abs"] = [](Args in, Attr) -> TensorList { return {my::abs(in[0])}; };
    t["sign"] = [](Args in, Attr) -> TensorList { return {my::sign(in[0])}; };
    t["reciprocal"] = [](Args in, Attr) -> TensorList { return {my::reciprocal(in[0])}; };
    t["square"] = [](Args in, Attr) -> TensorList { return {my::square(in[0])}; };
    t["exp"] = [](Args in, Attr) -> TensorList { return {my::exp(in[0])}; };
    t["log"] = [](Args in, Attr) -> TensorList { return {my::log(in[0])}; };
    t["log1p"] = [](Args in, Attr) -> TensorList { return {my::log1p(in[0])}; };
    t["sqrt"] = [](Args in, Attr) -> TensorList { return {my::sqrt(in[0])}; };
    t["rsqrt"] = [](Args in, Attr) -> TensorList { return {my::rsqrt(in[0])}; };
    t["sin"] = [](Args in, Attr) -> TensorList { return {my::sin(in[0])}; };
    t["cos"] = [](Args in, Attr) -> TensorList { return {my::cos(in[0])}; };
    t["tanh"] = [](Args in, Attr) -> TensorList { return {my::tanh(in[0])}; };
    t["sigmoid"] = [](Args in, Attr) -> TensorList { return {my::sigmoid(in[0])}; };
    t["relu"] = [](Args in, Attr) -> TensorList { return {my::relu(in[0])}; };
    t["leaky_relu"] = [](Args in, Attr a) -> TensorList {
        return {a.has("negative_slope") ? my::leaky_relu(in[0], a.d("negative_slope"))
                                        : my::leaky_relu(in[0])};
    };
    t["elu"] = [](Args in, Attr a) -> TensorList {
        return {a.has("alpha") ? my::elu(in[0], a.d("alpha")) : my::elu(in[0])};
    };
    t["gelu"] = [](Args in, Attr a) -> TensorList {
        return {a.has("approximate") ? my::gelu(in[0], a.str("approximate")) : my::gelu(in[0])};
    };
    t["silu"] = [](Args in, Attr) -> TensorList { return {my::silu(in[0])}; };
    t["softplus"] = [](Args in, Attr a) -> TensorList {
        if (a.has("threshold")) return {my::softplus(in[0], a.d("beta"), a.d("threshold"))};
        if (a.has("beta")) return {my::softplus(in[0], a.d("beta"))};
        return {my::softplus(in[0])};
    };
    t["clamp"] = [](Args in, Attr a) -> TensorList {
        return {my::clamp(in[0], a.optD("min"), a.optD("max"))};
    };
    // --- comparisons, masks ---
    t["eq"] = [](Args in, Attr) -> TensorList { return {my::eq(in[0], in[1])}; };
    t["ne"] = [](Args in, Attr) -> TensorList { return {my::ne(in[0], in[1])}; };
    t["lt"] = [](Args in, Attr) -> TensorList { return {my::lt(in[0], in[1])}; };
    t["le"] = [](Args in, Attr) -> TensorList { return {my::le(in[0], in[1])}; };
    t["gt"] = [](Args in, Attr) -> TensorList { return {my::gt(in[0], in[1])}; };
    t["ge"] = [](Args in, Attr) -> TensorList { return {my::ge(in[0], in[1])}; };
    t["eq_scalar"] = [](Args in, Attr a) -> TensorList { return {my::eq(in[0], a.d("other"))}; };
    t["ne_scalar"] = [](Args in, Attr a) -> TensorList { return {my::ne(in[0], a.d("other"))}; };
    t["lt_scalar"] = [](Args in, Attr a) -> TensorList { return {my::lt(in[0], a.d("other"))}; };
    t["le_scalar"] = [](Args in, Attr a) -> TensorList { return {my::le(in[0], a.d("other"))}; };
    t["gt_scalar"] = [](Args in, Attr a) -> TensorList { return {my::gt(in[0], a.d("other"))}; };
    t["ge_scalar"] = [](Args in, Attr a) -> TensorList { return {my::ge(in[0], a.d("other"))}; };
    t["isfinite"] = [](Args in, Attr) -> TensorList { return {my::isfinite(in[0])}; };
    t["logical_not"] = [](Args in, Attr) -> TensorList { return {my::logical_not(in[0])}; };
    t["where"] = [](Args in, Attr) -> TensorList { return {my::where(in[0], in[1], in[2])}; };
    t["masked_fill"] = [](Args in, Attr a) -> TensorList {
        return {my::masked_fill(in[0], in[1], a.d("value"))};
    };
    // --- reductions (an empty dims list without keepdim also exercises the defaults) ---
    t["sum"] = [](Args in, Attr a) -> TensorList {
        if (a.ints("dims").empty() && !a.b("keepdim")) return {my::sum(in[0])};
        return {my::sum(in[0], a.dims("dims"), a.b("keepdim"))};
    };
    t["mean"] = [](Args in, Attr a) -> TensorList {
        if (a.ints("dims").empty() && !a.b("keepdim")) return {my::mean(in[0])};
        return {my::mean(in[0], a.dims("dims"), a.b("keepdim"))};
    };
    t["var"] = [](Args in, Attr a) -> TensorList {
        return {my::var(in[0], a.dims("dims"), a.d("correction"), a.b("keepdim"))};
    };
    t["std"] = [](Args in, Attr a) -> TensorList {
        return {my::std(in[0], a.dims("dims"), a.d("correction"), a.b("keepdim"))};
    };
    t["amax"] = [](Args in, Attr a) -> TensorList {
        if (a.ints("dims").empty() && !a.b("keepdim")) return {my::amax(in[0])};
        return {my::amax(in[0], a.dims("dims"), a.b("keepdim"))};
    };
    t["amin"] = [](Args in, Attr a) -> TensorList {
        if (a.ints("dims").empty() && !a.b("keepdim")) return {my::amin(in[0])};
        return {my::amin(in[0], a.dims("dims"), a.b("keepdim"))};
    };
    t["max_all"] = [](Args in, Attr) -> TensorList { return {my::max(in[0])}; };
    t["min_all"] = [](Args in, Attr) -> TensorList { return {my::min(in[0])}; };
    t["max_dim"] = [](Args in, Attr a) -> TensorList {
        auto r = my::max(in[0], a.dim("dim"), a.b("keepdim"));
        return {r.values, r.indices};
    };
    t["min_dim"] = [](Args in, Attr a) -> TensorList {
        auto r = my::min(in[0], a.dim("dim"), a.b("keepdim"));
        return {r.values, r.indices};
    };
    t["argmax"] = [](Args in, Attr a) -> TensorList {
        if (!a.optDim("dim") && !a.b("keepdim")) return {my::argmax(in[0])};
        return {my::argmax(in[0], a.optDim("dim"), a.b("keepdim"))};
    };
    t["argmin"] = [](Args in, Attr a) -> TensorList {
        if (!a.optDim("dim") && !a.b("keepdim")) return {my::argmin(in[0])};
        return {my::argmin(in[0], a.optDim("dim"), a.b("keepdim"))};
    };
    t["logsumexp"] = [](Args in, Attr a) -> TensorList {
        return {my::logsumexp(in[0], a.dims("dims"), a.b("keepdim"))};
    };
    t["softmax"] = [](Args in, Attr a) -> TensorList { return {my::softmax(in[0], a.dim("dim"))}; };
    t["log_softmax"] = [](Args in, Attr a) -> TensorList {
        return {my::log_softmax(in[0], a.dim("dim"))};
    };
    t["norm"] = [](Args in, Attr a) -> TensorList {
        return {my::norm(in[0], a.d("p"), a.dims("dims"), a.b("keepdim"))};
    };
    t["norm_default"] = [](Args in, Attr) -> TensorList { return {my::norm(in[0])}; };
    // --- linear algebra ---
    t["matmul"] = [](Args in, Attr) -> TensorList { return {my::matmul(in[0], in[1])}; };
    t["mm"] = [](Args in, Attr) -> TensorList { return {my::mm(in[0], in[1])}; };
    t["bmm"] = [](Args in, Attr) -> TensorList { return {my::bmm(in[0], in[1])}; };
    // --- indexing, joining, splitting ---
    t["index_select"] = [](Args in, Attr a) -> TensorList {
        return {my::index_select(in[0], a.dim("dim"), in[1])};
    };
    t["gather"] = [](Args in, Attr a) -> TensorList {
        return {my::gather(in[0], a.dim("dim"), in[1])};
    };
    t["scatter_add"] = [](Args in, Attr a) -> TensorList {
        return {my::scatter_add(in[0], a.dim("dim"), in[1], in[2])};
    };
    t["cat"] = [](Args in, Attr a) -> TensorList { return {my::cat(in, a.dim("dim"))}; };
    t["stack"] = [](Args in, Attr a) -> TensorList { return {my::stack(in, a.dim("dim"))}; };
    t["split"] = [](Args in, Attr a) -> TensorList {
        return my::split(in[0], a.i("split_size"), a.dim("dim"));
    };
    t["split_sizes"] = [](Args in, Attr a) -> TensorList {
        return my::split(in[0], a.ints("sizes"), a.dim("dim"));
    };
    t["chunk"] = [](Args in, Attr a) -> TensorList {
        return my::chunk(in[0], a.i("chunks"), a.dim("dim"));
    };
    // --- views ---
    t["view"] = [](Args in, Attr a) -> TensorList { return {in[0].view(a.dims("shape"))}; };
    t["reshape"] = [](Args in, Attr a) -> TensorList { return {in[0].reshape(a.dims("shape"))}; };
    t["permute"] = [](Args in, Attr a) -> TensorList { return {in[0].permute(a.dims("order"))}; };
    t["transpose"] = [](Args in, Attr a) -> TensorList {
        return {in[0].transpose(a.dim("d0"), a.dim("d1"))};
    };
    t["t"] = [](Args in, Attr) -> TensorList { return {in[0].t()}; };
    t["squeeze"] = [](Args in, Attr) -> TensorList { return {in[0].squeeze()}; };
    t["squeeze_dim"] = [](Args in, Attr a) -> TensorList { return {in[0].squeeze(a.dim("dim"))}; };
    t["unsqueeze"] = [](Args in, Attr a) -> TensorList { return {in[0].unsqueeze(a.dim("dim"))}; };
    t["flatten"] = [](Args in, Attr a) -> TensorList {
        if (a.i("start") == 0 && a.i("end") == -1) return {in[0].flatten()};
        return {in[0].flatten(a.dim("start"), a.dim("end"))};
    };
    t["unflatten"] = [](Args in, Attr a) -> TensorList {
        return {in[0].unflatten(a.dim("dim"), a.dims("sizes"))};
    };
    t["expand"] = [](Args in, Attr a) -> TensorList { return {in[0].expand(a.dims("shape"))}; };
    t["expand_as"] = [](Args in, Attr) -> TensorList { return {in[0].expand_as(in[1])}; };
    t["narrow"] = [](Args in, Attr a) -> TensorList {
        return {in[0].narrow(a.dim("dim"), a.i("start"), a.i("length"))};
    };
    t["slice"] = [](Args in, Attr a) -> TensorList {
        return {in[0].slice(a.dim("dim"), a.optI("start"), a.optI("end"), a.i("step"))};
    };
    t["select"] = [](Args in, Attr a) -> TensorList {
        return {in[0].select(a.dim("dim"), a.i("index"))};
    };
    t["index_op"] = [](Args in, Attr a) -> TensorList { return {in[0][a.i("index")]}; };
    // --- conversion / copies ---
    t["to"] = [](Args in, Attr a) -> TensorList { return {in[0].to(a.dtype("dtype"))}; };
    t["to_same"] = [](Args in, Attr) -> TensorList { return {in[0].to(in[0].dtype())}; };
    t["contiguous"] = [](Args in, Attr) -> TensorList { return {in[0].contiguous()}; };
    t["clone"] = [](Args in, Attr) -> TensorList { return {in[0].clone()}; };
    t["detach"] = [](Args in, Attr) -> TensorList { return {in[0].detach()}; };
    // --- in place, on a clone (autograd sees a modified non-leaf) ---
    t["iadd"] = [](Args in, Attr a) -> TensorList {
        Tensor y = in[0].clone();
        y.add_(in[1], a.d("alpha"));
        return {y};
    };
    t["isub"] = [](Args in, Attr a) -> TensorList {
        Tensor y = in[0].clone();
        y.sub_(in[1], a.d("alpha"));
        return {y};
    };
    t["imul"] = [](Args in, Attr) -> TensorList {
        Tensor y = in[0].clone();
        y.mul_(in[1]);
        return {y};
    };
    t["idiv"] = [](Args in, Attr) -> TensorList {
        Tensor y = in[0].clone();
        y.div_(in[1]);
        return {y};
    };
    t["op_iadd"] = [](Args in, Attr) -> TensorList {
        Tensor y = in[0].clone();
        y += in[1];
        return {y};
    };
    t["op_isub"] = [](Args in, Attr) -> TensorList {
        Tensor y = in[0].clone();
        y -= in[1];
        return {y};
    };
    t["op_imul"] = [](Args in, Attr) -> TensorList {
        Tensor y = in[0].clone();
        y *= in[1];
        return {y};
    };
    t["op_idiv"] = [](Args in, Attr) -> TensorList {
        Tensor y = in[0].clone();
        y /= in[1];
        return {y};
    };
    t["copy_"] = [](Args in, Attr) -> TensorList {
        Tensor y = in[0].clone();
        y.copy_(in[1]);
        return {y};
    };
    t["iadd_s"] = [](Args in, Attr a) -> TensorList {
        Tensor y = in[0].clone();
        y.add_(a.d("value"));
        return {y};
    };
    t["isub_s"] = [](Args in, Attr a) -> TensorList {
        Tensor y = in[0].clone();
        y.sub_(a.d("value"));
        return {y};
    };
    t["imul_s"] = [](Args in, Attr a) -> TensorList {
        Tensor y = in[0].clone();
        y.mul_(a.d("value"));
        return {y};
    };
    t["idiv_s"] = [](Args in, Attr a) -> TensorList {
        Tensor y = in[0].clone();
        y.div_(a.d("value"));
        return {y};
    };
    t["fill_"] = [](Args in, Attr a) -> TensorList {
        Tensor y = in[0].clone();
        y.fill_(a.d("value"));
        return {y};
    };
    t["zero_"] = [](Args in, Attr) -> TensorList {
        Tensor y = in[0].clone();
        y.zero_();
        return {y};
    };
    t["clamp_"] = [](Args in, Attr a) -> TensorList {
        Tensor y = in[0].clone();
        y.clamp_(a.optD("min"), a.optD("max"));
        return {y};
    };
    t["imul_s_view"] = [](Args in, Attr a) -> TensorList {
        Tensor y = in[0].clone();
        y.select(a.dim("dim"), a.i("index")).mul_(a.d("value"));
        return {y};
    };
    // --- method forms ---
    t["m_sum"] = [](Args in, Attr) -> TensorList { return {in[0].sum()}; };
    t["m_sum_dims"] = [](Args in, Attr a) -> TensorList {
        return {in[0].sum(a.dims("dims"), a.b("keepdim"))};
    };
    t["m_mean"] = [](Args in, Attr) -> TensorList { return {in[0].mean()}; };
    t["m_mean_dims"] = [](Args in, Attr a) -> TensorList {
        return {in[0].mean(a.dims("dims"), a.b("keepdim"))};
    };
    t["m_exp"] = [](Args in, Attr) -> TensorList { return {in[0].exp()}; };
    t["m_log"] = [](Args in, Attr) -> TensorList { return {in[0].log()}; };
    t["m_abs"] = [](Args in, Attr) -> TensorList { return {in[0].abs()}; };
    t["m_sqrt"] = [](Args in, Attr) -> TensorList { return {in[0].sqrt()}; };
    t["m_neg"] = [](Args in, Attr) -> TensorList { return {in[0].neg()}; };
    t["m_relu"] = [](Args in, Attr) -> TensorList { return {in[0].relu()}; };
    t["m_sigmoid"] = [](Args in, Attr) -> TensorList { return {in[0].sigmoid()}; };
    t["m_tanh"] = [](Args in, Attr) -> TensorList { return {in[0].tanh()}; };
    t["m_pow"] = [](Args in, Attr a) -> TensorList { return {in[0].pow(a.d("exponent"))}; };
    t["m_matmul"] = [](Args in, Attr) -> TensorList { return {in[0].matmul(in[1])}; };
    t["m_softmax"] = [](Args in, Attr a) -> TensorList { return {in[0].softmax(a.dim("dim"))}; };
    t["m_log_softmax"] = [](Args in, Attr a) -> TensorList {
        return {in[0].log_softmax(a.dim("dim"))};
    };
    t["m_argmax"] = [](Args in, Attr a) -> TensorList {
        if (!a.optDim("dim") && !a.b("keepdim")) return {in[0].argmax()};
        return {in[0].argmax(a.optDim("dim"), a.b("keepdim"))};
    };
    t["m_split"] = [](Args in, Attr a) -> TensorList {
        return in[0].split(a.i("split_size"), a.dim("dim"));
    };
    t["m_chunk"] = [](Args in, Attr a) -> TensorList {
        return in[0].chunk(a.i("chunks"), a.dim("dim"));
    };
    // --- creation (forward only) ---
    t["zeros"] = [](Args, Attr a) -> TensorList {
        return {my::zeros(a.dims("shape"), a.dtype("dtype"))};
    };
    t["ones"] = [](Args, Attr a) -> TensorList {
        return {my::ones(a.dims("shape"), a.dtype("dtype"))};
    };
    t["full"] = [](Args, Attr a) -> TensorList {
        return {my::full(a.dims("shape"), a.d("value"), a.dtype("dtype"))};
    };
    t["scalar_tensor"] = [](Args, Attr a) -> TensorList {
        return {my::scalar_tensor(a.d("value"), a.dtype("dtype"))};
    };
    t["arange_end"] = [](Args, Attr a) -> TensorList { return {my::arange(a.d("end"))}; };
    t["arange"] = [](Args, Attr a) -> TensorList {
        return {my::arange(a.d("start"), a.d("end"), a.d("step"))};
    };
    t["arange_opts"] = [](Args, Attr a) -> TensorList {
        return {
            my::arange(a.d("start"), a.d("end"), a.d("step"), my::TensorOptions(a.dtype("dtype")))};
    };
    t["linspace"] = [](Args, Attr a) -> TensorList {
        return {my::linspace(a.d("start"), a.d("end"), a.i("steps"), a.dtype("dtype"))};
    };
    t["eye"] = [](Args, Attr a) -> TensorList {
        return {my::eye(a.i("n"), a.i("m"), a.dtype("dtype"))};
    };
    t["zeros_like"] = [](Args in, Attr) -> TensorList { return {my::zeros_like(in[0])}; };
    t["ones_like"] = [](Args in, Attr) -> TensorList { return {my::ones_like(in[0])}; };
    t["full_like"] = [](Args in, Attr a) -> TensorList {
        return {my::full_like(in[0], a.d("value"))};
    };
    t["allclose"] = [](Args in, Attr a) -> TensorList {
        const bool r = my::allclose(in[0], in[1], a.d("rtol"), a.d("atol"));
        return {my::scalar_tensor(r ? 1.0 : 0.0, DType::Bool)};
    };
    t["equal"] = [](Args in, Attr) -> TensorList {
        return {my::scalar_tensor(my::equal(in[0], in[1]) ? 1.0 : 0.0, DType::Bool)};
    };
    return t;
}

const std::map<std::string, OpFn>& opTable() {
    static const std::map<std::string, OpFn> table = buildOpTable();
    return table;
}

// ---------------------------------------------------------------------------------------------
// Comparison

// Ops whose float32 results are sums of many terms: the summation order is implementation
// defined, so the rounding error scales with sum(|terms|) * 2^-24 (terms here are O(1), 10-50 of
// them), not with the result. See tests/golden/README.md.
bool isAccumulatingOp(const std::string& op) {
    static const std::set<std::string> ops = {
        "sum", "mean", "var",      "std",   "logsumexp",  "norm",   "norm_default", "matmul",
        "mm",  "bmm",  "m_matmul", "m_sum", "m_sum_dims", "m_mean", "m_mean_dims"};
    return ops.count(op) != 0;
}

// PyTorch's own float32 gradients of these carry rounding noise (x - mean, x / norm).
bool hasNoisyF32Grad(const std::string& op) {
    return op == "var" || op == "std" || op == "norm" || op == "norm_default";
}

Tolerance tolerance(const Case& c, DType dtype, bool isGrad, bool gradAccumulates) {
    if (!myelin::is_floating(dtype)) return {0.0, 0.0};
    if (dtype == DType::Float16 || dtype == DType::BFloat16) {
        // Only produced by to(): conversion rounding is exact (RNE). Gradients flowing back
        // through to() are exact conversions too.
        return {0.0, 0.0};
    }
    if (dtype == DType::Float64) return {1e-10, 1e-12};
    // float32
    if (isAccumulatingOp(c.op)) return {1e-5, 1e-5};
    if (isGrad && (gradAccumulates || hasNoisyF32Grad(c.op))) return {1e-5, 1e-5};
    return {1e-5, 1e-6};
}

// Returns an empty string when `actual` matches `expected`, else a description of the mismatch.
// A NaN expects NaN and an infinity the same infinity (ops of non-finite inputs).
std::string compareTensor(const std::string& what, const Tensor& actual, const TensorData& expected,
                          Tolerance tol) {
    if (std::string meta = compareMeta(what, actual, expected); !meta.empty()) return meta;
    const std::vector<double> got = extractValues(actual);
    if (got.size() != expected.values.size())
        return what + ": to_vector gave " + std::to_string(got.size()) + " values for " +
               std::to_string(expected.values.size()) + " elements";
    Mismatches bad;
    for (size_t k = 0; k < got.size(); ++k) {
        const double e = expected.values[k];
        const double g = got[k];
        bool ok;
        if (std::isnan(e))
            ok = std::isnan(g);
        else if (std::isinf(e))
            ok = g == e;
        else
            ok = golden::withinTolerance(g, e, tol);
        if (!ok) bad.add(expected.shape, k, e, g, std::isfinite(g) && std::isfinite(e));
    }
    if (bad.empty()) return {};
    return bad.report(what, expected, got.size(), false, tol);
}

std::string caseHeader(const Case& c) {
    return c.name + " [op " + c.op + ", " + c.file + ":" + std::to_string(c.line) + "]";
}

struct BuiltInputs {
    TensorList tensors; // what the op receives
    TensorList leaves;  // per input: the tensor whose .grad() is checked (undefined when rg 0)
};

BuiltInputs buildInputs(const Case& c, std::string& problems) {
    BuiltInputs b;
    for (size_t k = 0; k < c.inputs.size(); ++k) {
        const InputSpec& spec = c.inputs[k];
        Tensor base = makeTensor(spec.data);
        if (spec.rg == 2) base.requires_grad_(true);
        Tensor t = applyRecipe(base, spec.recipe);
        if (!spec.recipe.empty() && t.is_contiguous())
            problems += "\n  input " + std::to_string(k) + " is contiguous after '" +
                        recipeText(spec.recipe) + "' (PyTorch: non-contiguous)";
        Tensor leaf;
        if (spec.rg == 1) {
            t = t.detach();
            t.requires_grad_(true);
            leaf = t;
        } else if (spec.rg == 2) {
            leaf = base;
        }
        b.tensors.push_back(t);
        b.leaves.push_back(leaf);
    }
    return b;
}

// Whether the gradient of an input sums over several output elements: the leaf (whose shape is
// the expected gradient's) has fewer elements than the outputs together (broadcasting, expand
// in the graph, reductions).
bool gradAccumulates(const Case& c, const TensorData& expectedGrad) {
    int64_t outNumel = 0;
    for (const auto& o : c.outputs)
        outNumel += o.data.shape.numel();
    return expectedGrad.shape.numel() < outNumel;
}

bool isGradcheckCandidate(const Case& c) {
    if (c.file != "ops_f64.txt" || c.gouts.empty()) return false;
    bool anyLeaf = false;
    for (const auto& in : c.inputs) {
        if (in.rg == 0) continue;
        anyLeaf = true;
        if (in.data.dtype != DType::Float64) return false;
    }
    if (!anyLeaf) return false;
    for (const auto& [k, g] : c.gouts)
        if (g.dtype != DType::Float64) return false;
    // Finite differences of a non-finite output are NaN (masked_fill with -inf): such cases are
    // checked against PyTorch's gradient in golden() only, as torch.autograd.gradcheck would
    // fail on them too.
    for (const auto& o : c.outputs)
        for (double v : o.data.values)
            if (!std::isfinite(v)) return false;
    return true;
}

} // namespace

// ---------------------------------------------------------------------------------------------

class TestGolden : public QObject {
    Q_OBJECT

  private slots:
    void fixturesLoaded();
    void golden_data();
    void golden();
    void gradcheck_data();
    void gradcheck();
};

void TestGolden::fixturesLoaded() {
    const Fixtures& fx = fixtures();
    for (const auto& e : fx.errors)
        qWarning("%s", e.c_str());
    QVERIFY2(fx.errors.empty(), fx.errors.empty() ? "" : fx.errors.front().c_str());
    const int f32 = fx.count("ops_f32.txt");
    const int f64 = fx.count("ops_f64.txt");
    QVERIFY2(f32 >= kMinCasesF32,
             qPrintable(QStringLiteral("ops_f32.txt has %1 cases, expected >= %2 (run "
                                       "tests/golden/gen_golden.py)")
                            .arg(f32)
                            .arg(kMinCasesF32)));
    QVERIFY2(
        f64 >= kMinCasesF64,
        qPrintable(
            QStringLiteral("ops_f64.txt has %1 cases, expected >= %2").arg(f64).arg(kMinCasesF64)));

    // Every fixture op is in the table, every table op has a case, names are unique.
    std::set<std::string> names, used;
    for (const auto& c : fx.cases) {
        QVERIFY2(names.insert(c.name).second,
                 qPrintable("duplicate case " + QString::fromStdString(c.name)));
        QVERIFY2(opTable().count(c.op),
                 qPrintable(QString::fromStdString(caseHeader(c)) + ": op not in the table"));
        used.insert(c.op);
    }
    for (const auto& [op, fn] : opTable())
        QVERIFY2(used.count(op),
                 qPrintable("op " + QString::fromStdString(op) + " has no golden case"));
}

void TestGolden::golden_data() {
    QTest::addColumn<int>("index");
    const auto& cases = fixtures().cases;
    for (size_t k = 0; k < cases.size(); ++k)
        QTest::newRow(cases[k].name.c_str()) << static_cast<int>(k);
}

void TestGolden::golden() {
    QFETCH(int, index);
    const Case& c = fixtures().cases.at(static_cast<size_t>(index));
    auto it = opTable().find(c.op);
    QVERIFY2(it != opTable().end(), qPrintable(QString::fromStdString(c.op) + ": unknown op"));

    std::string problems;
    std::string stage = "building inputs";
    try {
        BuiltInputs in = buildInputs(c, problems);

        stage = "forward";
        TensorList outs = it->second(in.tensors, c.attrs);
        if (outs.size() != c.outputs.size()) {
            problems += "\n  forward returned " + std::to_string(outs.size()) +
                        " outputs, expected " + std::to_string(c.outputs.size());
        } else {
            for (size_t k = 0; k < outs.size(); ++k) {
                const std::string what = "output " + std::to_string(k);
                const Tolerance tol = tolerance(c, c.outputs[k].data.dtype, false, false);
                std::string msg = compareTensor(what, outs[k], c.outputs[k].data, tol);
                if (!msg.empty()) problems += "\n  " + msg;
                if (outs[k].defined() && outs[k].requires_grad() != c.outputs[k].requiresGrad)
                    problems += "\n  " + what + ": requires_grad " +
                                (outs[k].requires_grad() ? "true" : "false") + ", expected " +
                                (c.outputs[k].requiresGrad ? "true" : "false");
            }
        }

        if (!c.gouts.empty() && problems.empty()) {
            stage = "backward";
            TensorList roots, grads;
            for (const auto& [k, g] : c.gouts) {
                roots.push_back(outs[static_cast<size_t>(k)]);
                grads.push_back(makeTensor(g));
            }
            // One root: Tensor::backward(gradient); several: autograd::backward.
            if (roots.size() == 1)
                roots[0].backward(grads[0]);
            else
                myelin::autograd::backward(roots, grads);

            stage = "comparing gradients";
            for (const auto& [k, expected] : c.grads) {
                const Tensor& leaf = in.leaves[static_cast<size_t>(k)];
                const Tensor g = leaf.grad();
                const std::string what = "grad of input " + std::to_string(k);
                if (!expected) {
                    // PyTorch gives no gradient: accept none or zeros.
                    if (g.defined()) {
                        for (double v : extractValues(g))
                            if (v != 0.0) {
                                problems += "\n  " + what + ": expected none or zeros";
                                break;
                            }
                    }
                    continue;
                }
                if (!g.defined()) {
                    problems += "\n  " + what + ": undefined (no gradient reached the leaf)";
                    continue;
                }
                const Tolerance tol =
                    tolerance(c, expected->dtype, true, gradAccumulates(c, *expected));
                std::string msg = compareTensor(what, g, *expected, tol);
                if (!msg.empty()) problems += "\n  " + msg;
            }
        }
    } catch (const std::exception& e) {
        problems += "\n  exception during " + stage + ": " + e.what();
    }
    QVERIFY2(problems.empty(), qPrintable(QString::fromStdString(caseHeader(c) + problems)));
}

void TestGolden::gradcheck_data() {
    QTest::addColumn<int>("index");
    const auto& cases = fixtures().cases;
    for (size_t k = 0; k < cases.size(); ++k)
        if (isGradcheckCandidate(cases[k]))
            QTest::newRow(cases[k].name.c_str()) << static_cast<int>(k);
}

// gradcheck's leaves are the contiguous base tensors; the view recipe runs inside the checked
// function, so the op still sees non-contiguous inputs while finite differences never perturb
// aliased (expanded) memory. Only float64 outputs are returned (indices are not differentiable).
void TestGolden::gradcheck() {
    QFETCH(int, index);
    const Case& c = fixtures().cases.at(static_cast<size_t>(index));
    const OpFn& op = opTable().at(c.op);
    std::string problems;
    try {
        TensorList leaves;
        std::vector<int> leafOf(c.inputs.size(), -1);
        TensorList constants(c.inputs.size());
        for (size_t k = 0; k < c.inputs.size(); ++k) {
            const InputSpec& spec = c.inputs[k];
            Tensor base = makeTensor(spec.data);
            if (spec.rg == 0) {
                constants[k] = applyRecipe(base, spec.recipe);
            } else {
                base.requires_grad_(true);
                leafOf[k] = static_cast<int>(leaves.size());
                leaves.push_back(base);
            }
        }
        auto fn = [&](const TensorList& xs) {
            TensorList args;
            for (size_t k = 0; k < c.inputs.size(); ++k)
                args.push_back(leafOf[k] < 0 ? constants[k]
                                             : applyRecipe(xs[static_cast<size_t>(leafOf[k])],
                                                           c.inputs[k].recipe));
            TensorList outs = op(args, c.attrs), floats;
            for (const auto& o : outs)
                if (o.dtype() == DType::Float64) floats.push_back(o);
            return floats;
        };
        auto r = myelin::autograd::gradcheck(fn, leaves);
        if (!r.ok) problems = "\n  gradcheck failed: " + r.message;
    } catch (const std::exception& e) {
        problems = "\n  exception: " + std::string(e.what());
    }
    QVERIFY2(problems.empty(), qPrintable(QString::fromStdString(caseHeader(c) + problems)));
}

QTEST_APPLESS_MAIN(TestGolden)
#include "test_golden.moc"
