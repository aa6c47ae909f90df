// Shared pieces of the golden-value tests (test_golden.cpp: tensor ops, test_nn_golden.cpp: nn
// layers): the fixture line format both generators write, the tensor values in them, and the
// tolerance-based comparison with its mismatch report. Header-only; not a test itself.
// What differs between the two suites (dtype tags, case layout, tolerances, which non-finite
// values may match) stays in each test.
#pragma once

#include <myelin/tensor.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace golden {

// Any malformed fixture: the parser prefixes "<file>:<line>: " so the message points at it.
struct FixtureError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Strict number parsing: the whole token must be consumed, so "1.5x" or "" is an error.
template <typename T> T parseNumber(const std::string& s) {
    T value{};
    const char* first = s.data();
    const char* last = s.data() + s.size();
    auto [ptr, ec] = std::from_chars(first, last, value);
    if (ec != std::errc() || ptr != last) throw FixtureError("bad number '" + s + "'");
    return value;
}

// "[a,b,c]" (shapes, dims lists); "[]" is the empty list.
inline std::vector<int64_t> parseIntList(const std::string& s) {
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

// Fixture lines are whitespace-separated tokens.
inline std::vector<std::string> splitTokens(const std::string& line) {
    std::vector<std::string> tok;
    std::istringstream in(line);
    std::string s;
    while (in >> s)
        tok.push_back(s);
    return tok;
}

// Values are kept as double: float32/16 values widen exactly, and the integers in the fixtures
// are small enough to be exact too.
// every > 1 (nn fixtures only): only the values at flat indices 0, every, 2 * every, ... are
// known (expected gradients of large weights); values then holds those samples.
struct TensorData {
    myelin::DType dtype = myelin::DType::Float32;
    myelin::Dims shape;
    std::vector<double> values;
    int64_t every = 1;
};

// Reads the value tokens tok[first..] of `t` (whose dtype and shape are set): exactly
// `expectedCount` of them, as double for float64, float for the other floating dtypes (so they
// round as the tensor will), integers otherwise.
inline void parseValues(const std::vector<std::string>& tok, size_t first, size_t expectedCount,
                        TensorData& t) {
    if (tok.size() - first != expectedCount)
        throw FixtureError("expected " + std::to_string(expectedCount) + " values for shape " +
                           t.shape.str() + ", got " + std::to_string(tok.size() - first));
    t.values.reserve(expectedCount);
    for (size_t k = first; k < tok.size(); ++k) {
        if (t.dtype == myelin::DType::Float64)
            t.values.push_back(parseNumber<double>(tok[k]));
        else if (myelin::is_floating(t.dtype))
            t.values.push_back(static_cast<double>(parseNumber<float>(tok[k])));
        else
            t.values.push_back(static_cast<double>(parseNumber<int64_t>(tok[k])));
    }
}

// The block structure both fixture formats share: '#' comments and blank lines, then
// "case <name>" ... "end" blocks. `onLine(cur, tok, line)` handles the suite's own lines and
// returns false for a line it does not know (reported as malformed); `onEnd(cur)` validates a
// finished case. Every FixtureError is prefixed with "<label>:<line>: ".
template <typename Case, typename OnLine, typename OnEnd>
std::vector<Case> parseFixtureFile(const std::string& path, const std::string& label, OnLine onLine,
                                   OnEnd onEnd) {
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
            if (onLine(*cur, tok, line)) continue;
            if (kw == "end" && tok.size() == 1) {
                onEnd(*cur);
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

// All cases of a suite's fixture files; a file that fails to parse counts 0 cases and adds its
// error, so the test reports it instead of aborting.
template <typename Case> struct Fixtures {
    std::vector<Case> cases;
    std::map<std::string, int> perFile; // label -> case count
    std::vector<std::string> errors;
    int count(const std::string& file) const { return perFile.count(file) ? perFile.at(file) : 0; }
};

// Parses tests/golden/<file> for each file with `parseFile(path, label)`.
template <typename Case, typename Files, typename ParseFn>
Fixtures<Case> loadFixtures(const Files& files, ParseFn parseFile) {
    Fixtures<Case> f;
    for (const char* file : files) {
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
}

// A fixture tensor as a Myelin tensor of the same dtype (contiguous, no grad).
inline myelin::Tensor makeTensor(const TensorData& d) {
    using myelin::DType;
    if (d.every != 1) throw FixtureError("a sampled ('every') tensor cannot be an input");
    const size_t n = d.values.size();
    switch (d.dtype) {
    case DType::Float32: {
        std::vector<float> v(d.values.begin(), d.values.end());
        return myelin::from_vector(v, d.shape, myelin::TensorOptions(DType::Float32));
    }
    case DType::Float64:
        return myelin::from_vector(d.values, d.shape, myelin::TensorOptions(DType::Float64));
    case DType::Float16: {
        std::vector<myelin::Half> v;
        for (double x : d.values)
            v.emplace_back(static_cast<float>(x));
        return myelin::from_blob(v.data(), DType::Float16, d.shape, DType::Float16);
    }
    case DType::BFloat16: {
        std::vector<myelin::BFloat16> v;
        for (double x : d.values)
            v.emplace_back(static_cast<float>(x));
        return myelin::from_blob(v.data(), DType::BFloat16, d.shape, DType::BFloat16);
    }
    case DType::Int64: {
        std::vector<int64_t> v;
        v.reserve(n);
        for (double x : d.values)
            v.push_back(static_cast<int64_t>(x));
        return myelin::from_vector(v, d.shape, myelin::TensorOptions(DType::Int64));
    }
    case DType::UInt8: {
        std::vector<uint8_t> v;
        for (double x : d.values)
            v.push_back(static_cast<uint8_t>(x));
        return myelin::from_blob(v.data(), DType::UInt8, d.shape, DType::UInt8);
    }
    case DType::Bool: {
        auto v = std::make_unique<bool[]>(n == 0 ? 1 : n);
        for (size_t k = 0; k < n; ++k)
            v[k] = d.values[k] != 0.0;
        return myelin::from_blob(v.get(), DType::Bool, d.shape, DType::Bool);
    }
    }
    throw FixtureError("unhandled dtype");
}

// A tensor's values in flat (row-major) order as double, exact for every dtype (half types
// widen through float32; to_vector reads non-contiguous tensors in logical order).
inline std::vector<double> extractValues(const myelin::Tensor& t) {
    using myelin::DType;
    std::vector<double> out;
    switch (t.dtype()) {
    case DType::Float32:
        for (float v : t.to_vector<float>())
            out.push_back(v);
        break;
    case DType::Float64:
        out = t.to_vector<double>();
        break;
    case DType::Float16:
    case DType::BFloat16:
        for (float v : t.to(DType::Float32).to_vector<float>())
            out.push_back(v);
        break;
    case DType::Int64:
        for (int64_t v : t.to_vector<int64_t>())
            out.push_back(static_cast<double>(v));
        break;
    case DType::UInt8:
        for (uint8_t v : t.to_vector<uint8_t>())
            out.push_back(v);
        break;
    case DType::Bool:
        for (bool v : t.to_vector<bool>())
            out.push_back(v ? 1.0 : 0.0);
        break;
    }
    return out;
}

// Round-trip precision, so a reported value is the exact double compared.
inline std::string fmtValue(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

// Flat index -> "[i,j,k]" in `shape`, to locate a mismatch in the report.
inline std::string multiIndex(const myelin::Dims& shape, size_t flat) {
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

// An element matches when |actual - expected| <= atol + rtol * |expected| (torch.allclose).
struct Tolerance {
    double rtol;
    double atol;
};

// The finite-value test of Tolerance; a non-finite actual value never matches here.
inline bool withinTolerance(double actual, double expected, Tolerance tol) {
    return std::isfinite(actual) &&
           std::fabs(actual - expected) <= tol.atol + tol.rtol * std::fabs(expected);
}

// The checks before the values: defined, same dtype, same shape. Empty when all hold, else
// the message for the first that fails.
inline std::string compareMeta(const std::string& what, const myelin::Tensor& actual,
                               const TensorData& expected) {
    if (!actual.defined()) return what + ": undefined tensor";
    if (actual.dtype() != expected.dtype)
        return what + ": dtype " + myelin::dtype_name(actual.dtype()) + ", expected " +
               myelin::dtype_name(expected.dtype);
    if (!(actual.shape() == expected.shape))
        return what + ": shape " + actual.shape().str() + ", expected " + expected.shape.str();
    return {};
}

// Collects the differing elements of one comparison: their count, the largest finite
// difference and the first four, then formats the report.
class Mismatches {
  public:
    // Records element `flat`; `diffIsFinite` says whether |actual - expected| counts towards the
    // reported max |diff|.
    void add(const myelin::Dims& shape, size_t flat, double expected, double actual,
             bool diffIsFinite) {
        ++bad_;
        if (diffIsFinite) worst_ = std::max(worst_, std::fabs(actual - expected));
        if (bad_ <= 4)
            detail_ += "\n    element " + std::to_string(flat) + " " + multiIndex(shape, flat) +
                       ": expected " + fmtValue(expected) + ", actual " + fmtValue(actual);
    }
    bool empty() const { return bad_ == 0; }
    // "<what> (<dtype> <shape>): N of M [sampled] elements differ (rtol, atol, max |diff|)"
    // followed by the recorded elements.
    std::string report(const std::string& what, const TensorData& expected, size_t checked,
                       bool sampled, Tolerance tol) const {
        return what + " (" + myelin::dtype_name(expected.dtype) + " " + expected.shape.str() +
               "): " + std::to_string(bad_) + " of " + std::to_string(checked) +
               (sampled ? " sampled" : "") + " elements differ (rtol " + fmtValue(tol.rtol) +
               ", atol " + fmtValue(tol.atol) + ", max |diff| " + fmtValue(worst_) + ")" + detail_;
    }

  private:
    int bad_ = 0;
    double worst_ = 0.0;
    std::string detail_;
};

} // namespace golden
