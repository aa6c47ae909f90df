#pragma once
// Reader for tests/golden/optim.txt (written by tests/golden/gen_golden_optim.py; the format is
// in the generator's docstring), shared by test_loss, test_optim and test_sched.
#include <myelin/tensor.h>

#include <QString>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#ifndef MYELIN_SOURCE_DIR
#error "golden_optim_fixture.h needs MYELIN_SOURCE_DIR (the repository root)"
#endif

namespace golden {

struct TensorRec {
    myelin::DType dtype = myelin::DType::Float32;
    bool requires_grad = false;
    myelin::Dims shape;
    std::vector<double> values;

    myelin::Tensor make() const {
        using namespace myelin;
        Tensor t;
        if (dtype == DType::Int64) {
            std::vector<int64_t> v(values.begin(), values.end());
            t = from_vector(v, shape);
        } else {
            t = from_vector(values, shape).to(dtype);
        }
        if (requires_grad) t.requires_grad_();
        return t;
    }
};

struct Case {
    std::string name, kind;
    std::map<std::string, std::string> attrs;
    std::map<std::string, TensorRec> tensors;
    TensorRec out;
    std::map<std::string, TensorRec> grads;
    std::map<int, TensorRec> params;
    std::vector<std::tuple<int, std::string, TensorRec>> states;
    std::vector<std::pair<std::string, std::map<std::string, std::string>>> subs;
    std::map<int, std::vector<double>> lrs, momentum;
    std::vector<double> metrics;
    double total = 0.0;

    bool has(const std::string& k) const { return attrs.count(k) > 0; }
    const std::string& attr(const std::string& k) const {
        auto it = attrs.find(k);
        if (it == attrs.end()) throw std::runtime_error(name + ": missing attr " + k);
        return it->second;
    }
    double num(const std::string& k, double fallback) const {
        return has(k) ? parse_double(attr(k)) : fallback;
    }
    static double parse_double(const std::string& s) {
        if (s == "inf") return INFINITY;
        if (s == "-inf") return -INFINITY;
        size_t used = 0;
        const double v = std::stod(s, &used);
        if (used != s.size()) throw std::runtime_error("bad number '" + s + "'");
        return v;
    }
    static std::vector<double> parse_list(const std::string& s) {
        if (s.size() < 2 || s.front() != '[' || s.back() != ']')
            throw std::runtime_error("bad list '" + s + "'");
        std::vector<double> out;
        std::stringstream ss(s.substr(1, s.size() - 2));
        std::string item;
        while (std::getline(ss, item, ','))
            if (!item.empty()) out.push_back(parse_double(item));
        return out;
    }
};

inline myelin::DType parse_dtype(const std::string& tag) {
    using myelin::DType;
    if (tag == "f32") return DType::Float32;
    if (tag == "f64") return DType::Float64;
    if (tag == "i64") return DType::Int64;
    throw std::runtime_error("unknown dtype " + tag);
}

inline myelin::Dims parse_shape(const std::string& s) {
    myelin::Dims d;
    for (double v : Case::parse_list(s))
        d.push_back(static_cast<int64_t>(v));
    return d;
}

inline std::vector<double> read_values(std::istringstream& in) {
    std::vector<double> v;
    std::string tok;
    while (in >> tok)
        v.push_back(Case::parse_double(tok));
    return v;
}

inline TensorRec read_tensor(std::istringstream& in, bool with_rg) {
    TensorRec r;
    std::string dt, shape;
    int rg = 0;
    in >> dt;
    if (with_rg) in >> rg;
    in >> shape;
    r.dtype = parse_dtype(dt);
    r.requires_grad = rg != 0;
    r.shape = parse_shape(shape);
    r.values = read_values(in);
    int64_t n = 1;
    for (int i = 0; i < r.shape.size(); ++i)
        n *= r.shape[i];
    if (static_cast<int64_t>(r.values.size()) != n)
        throw std::runtime_error("value count does not match shape " + shape);
    return r;
}

inline std::vector<Case> load(const std::string& kind_prefix) {
    const std::string path = std::string(MYELIN_SOURCE_DIR) + "/tests/golden/optim.txt";
    std::ifstream f(path);
    if (!f) throw std::runtime_error("cannot open " + path);
    std::vector<Case> cases;
    Case cur;
    bool open = false;
    std::string line;
    while (std::getline(f, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream in(line);
        std::string key;
        in >> key;
        if (key == "case") {
            cur = Case();
            in >> cur.name;
            open = true;
        } else if (!open) {
            throw std::runtime_error("record outside a case: " + line);
        } else if (key == "kind") {
            in >> cur.kind;
        } else if (key == "attr") {
            std::string k, v;
            in >> k >> v;
            cur.attrs[k] = v;
        } else if (key == "tensor") {
            std::string n;
            in >> n;
            cur.tensors[n] = read_tensor(in, true);
        } else if (key == "out") {
            cur.out = read_tensor(in, false);
        } else if (key == "grad") {
            std::string n;
            in >> n;
            cur.grads[n] = read_tensor(in, false);
        } else if (key == "param") {
            int i;
            in >> i;
            cur.params[i] = read_tensor(in, false);
        } else if (key == "state") {
            int i;
            std::string k;
            in >> i >> k;
            cur.states.emplace_back(i, k, read_tensor(in, false));
        } else if (key == "sub") {
            std::string type, kv;
            in >> type;
            std::map<std::string, std::string> m;
            while (in >> kv) {
                const auto eq = kv.find('=');
                m[kv.substr(0, eq)] = kv.substr(eq + 1);
            }
            cur.subs.emplace_back(type, m);
        } else if (key == "lrs" || key == "momentum") {
            int g;
            in >> g;
            (key == "lrs" ? cur.lrs : cur.momentum)[g] = read_values(in);
        } else if (key == "metrics") {
            cur.metrics = read_values(in);
        } else if (key == "total") {
            std::string v;
            in >> v;
            cur.total = Case::parse_double(v);
        } else if (key == "end") {
            if (cur.kind.rfind(kind_prefix, 0) == 0) cases.push_back(cur);
            open = false;
        } else {
            throw std::runtime_error("unknown record " + key);
        }
    }
    return cases;
}

// Empty when every element satisfies |a - e| <= atol + rtol |e| (shapes must match).
inline QString compare(const myelin::Tensor& actual, const TensorRec& expected, double rtol,
                       double atol, const std::string& what) {
    if (!actual.defined()) return QString::fromStdString(what + ": undefined tensor");
    if (actual.shape() != expected.shape)
        return QString::fromStdString(what + ": shape " + actual.shape().str() + ", expected " +
                                      expected.shape.str());
    const std::vector<double> a =
        actual.to(myelin::DType::Float64).contiguous().to_vector<double>();
    for (size_t i = 0; i < a.size(); ++i) {
        const double e = expected.values[i];
        if (std::isnan(e) && std::isnan(a[i])) continue;
        if (!(std::fabs(a[i] - e) <= atol + rtol * std::fabs(e)))
            return QString::fromStdString(what + ": element " + std::to_string(i)) +
                   QStringLiteral(" is %1, expected %2 (diff %3)")
                       .arg(a[i], 0, 'g', 17)
                       .arg(e, 0, 'g', 17)
                       .arg(std::fabs(a[i] - e), 0, 'g', 3);
    }
    return {};
}

inline bool close(double a, double e, double rtol, double atol = 0.0) {
    return std::fabs(a - e) <= atol + rtol * std::fabs(e);
}

} // namespace golden
