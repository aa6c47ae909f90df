// Layers: parameters, PyTorch's default initialisation, input checks and repr. The math lives in
// nn::functional and the tensor ops; a layer only validates, chooses arguments and calls them.
// This file: the helpers every layer file shares (nn/layers_common.h), Linear, Bilinear and
// Embedding. The other layers: layers_conv.cpp (convolution, pooling), layers_norm.cpp
// (normalisation, dropout), layers_activation.cpp, layers_structure.cpp (reshape, merge nodes,
// containers).
#include "nn/layers_common.h"

#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/nn/functional.h>
#include <myelin/nn/init.h>
#include <myelin/nn/layers.h>

#include <charconv>
#include <cmath>

namespace myelin::nn {

namespace F = functional;

namespace {

std::string layer_name(const Module& m) {
    return m.type_name() + "(" + m.extra_repr() + ")";
}

} // namespace

namespace detail {

// Python's repr of a float: shortest round-trip digits, fixed notation for exponents in
// [-4, 16), otherwise "1e-05" style (what PyTorch's reprs show).
std::string py_float(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    const std::string s(buf, res.ptr);
    const size_t e = s.find('e');
    const int exp = std::stoi(s.substr(e + 1));
    std::string mantissa = s.substr(0, e);
    const bool negative = mantissa[0] == '-';
    std::string digits;
    for (char c : mantissa)
        if (c >= '0' && c <= '9') digits += c;
    std::string out = negative ? "-" : "";
    if (exp >= -4 && exp < 16) {
        if (exp >= 0) {
            if (digits.size() < static_cast<size_t>(exp + 1)) digits.resize(exp + 1, '0');
            out += digits.substr(0, exp + 1) + ".";
            out += digits.size() > static_cast<size_t>(exp + 1) ? digits.substr(exp + 1) : "0";
        } else {
            out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
        }
        return out;
    }
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    const int a = std::abs(exp);
    return out + "e" + (exp < 0 ? "-" : "+") + (a < 10 ? "0" : "") + std::to_string(a);
}

const char* py_bool(bool b) {
    return b ? "True" : "False";
}

[[noreturn]] void bad_input(const Module& m, const std::string& expected, const std::string& got) {
    throw ShapeError(layer_name(m) + ": expected input " + expected + ", got " + got);
}
[[noreturn]] void bad_input(const Module& m, const std::string& expected, const Tensor& x) {
    bad_input(m, expected, x.shape().str());
}

void require_positive(const Module& m, int64_t v, const char* what) {
    if (v <= 0)
        throw Error(m.type_name() + ": " + what + " must be positive, got " + std::to_string(v));
}

// The kaiming_uniform_(a=sqrt(5)) + uniform bias init that Linear and Conv layers share.
void reset_linear_like(Tensor& weight, Tensor& bias) {
    init::kaiming_uniform_(weight, std::sqrt(5.0));
    if (bias.defined()) {
        const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
        const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
        init::uniform_(bias, -bound, bound);
    }
}

std::string dims_tuple(const Dims& d) {
    std::string s = "(";
    for (int i = 0; i < d.size(); ++i)
        s += (i ? ", " : "") + std::to_string(d[i]);
    return s + (d.size() == 1 ? ",)" : ")");
}

} // namespace detail

using namespace detail;

// --- Linear ------------------------------------------------------------------------------------

Linear::Linear(int64_t in, int64_t out, bool with_bias)
    : Module("Linear"), in_features(in), out_features(out) {
    require_positive(*this, in, "in_features");
    require_positive(*this, out, "out_features");
    weight = register_parameter("weight", empty({out, in}));
    if (with_bias) bias = register_parameter("bias", empty({out}));
    reset_parameters();
}

void Linear::reset_parameters() {
    reset_linear_like(weight, bias);
}

Tensor Linear::forward(const TensorList& inputs) {
    const Tensor& x = inputs[0];
    if (x.dim() < 1 || x.size(-1) != in_features)
        bad_input(*this, "[..., " + std::to_string(in_features) + "]", x);
    return F::linear(x, weight, bias);
}

std::string Linear::extra_repr() const {
    return "in_features=" + std::to_string(in_features) +
           ", out_features=" + std::to_string(out_features) + ", bias=" + py_bool(bias.defined());
}

// --- Bilinear ----------------------------------------------------------------------------------

Bilinear::Bilinear(int64_t in1, int64_t in2, int64_t out, bool with_bias)
    : Module("Bilinear"), in1_features(in1), in2_features(in2), out_features(out) {
    require_positive(*this, in1, "in1_features");
    require_positive(*this, in2, "in2_features");
    require_positive(*this, out, "out_features");
    weight = register_parameter("weight", empty({out, in1, in2}));
    if (with_bias) bias = register_parameter("bias", empty({out}));
    reset_parameters();
}

void Bilinear::reset_parameters() {
    const double bound = 1.0 / std::sqrt(static_cast<double>(in1_features));
    init::uniform_(weight, -bound, bound);
    if (bias.defined()) init::uniform_(bias, -bound, bound);
}

Tensor Bilinear::forward(const TensorList& inputs) {
    const Tensor& a = inputs[0];
    const Tensor& b = inputs[1];
    const bool ok = a.dim() >= 1 && b.dim() == a.dim() && a.size(-1) == in1_features &&
                    b.size(-1) == in2_features &&
                    Dims(std::span(a.shape().begin(), a.shape().end() - 1)) ==
                        Dims(std::span(b.shape().begin(), b.shape().end() - 1));
    if (!ok)
        bad_input(*this,
                  "[..., " + std::to_string(in1_features) + "] and [..., " +
                      std::to_string(in2_features) + "] with equal leading dims",
                  a.shape().str() + " and " + b.shape().str());
    return F::bilinear(a, b, weight, bias);
}

std::string Bilinear::extra_repr() const {
    return "in1_features=" + std::to_string(in1_features) +
           ", in2_features=" + std::to_string(in2_features) +
           ", out_features=" + std::to_string(out_features) + ", bias=" + py_bool(bias.defined());
}

// --- Embedding ---------------------------------------------------------------------------------

namespace {
std::optional<int64_t> normalize_padding_idx(int64_t n, std::optional<int64_t> idx) {
    if (!idx) return idx;
    if (*idx >= n || *idx < -n)
        throw Error("Embedding: padding_idx " + std::to_string(*idx) +
                    " must be within num_embeddings (" + std::to_string(n) + ")");
    return *idx < 0 ? *idx + n : *idx;
}
} // namespace

Embedding::Embedding(int64_t n, int64_t dim, std::optional<int64_t> pad)
    : Module("Embedding"), num_embeddings(n), embedding_dim(dim),
      padding_idx(normalize_padding_idx(n, pad)) {
    require_positive(*this, n, "num_embeddings");
    require_positive(*this, dim, "embedding_dim");
    weight = register_parameter("weight", empty({n, dim}));
    reset_parameters();
}

void Embedding::reset_parameters() {
    init::normal_(weight);
    if (padding_idx) {
        autograd::NoGradGuard no_grad;
        weight.select(0, *padding_idx).fill_(0.0);
    }
}

Tensor Embedding::forward(const TensorList& inputs) {
    const Tensor& idx = inputs[0];
    if (idx.dtype() != DType::Int64)
        throw DTypeError(layer_name(*this) + ": expected int64 indices, got " +
                         dtype_name(idx.dtype()) + " " + idx.shape().str());
    return F::embedding(idx, weight, padding_idx);
}

std::string Embedding::extra_repr() const {
    std::string s = std::to_string(num_embeddings) + ", " + std::to_string(embedding_dim);
    if (padding_idx) s += ", padding_idx=" + std::to_string(*padding_idx);
    return s;
}

} // namespace myelin::nn
