// Every primitive of the backend table (backend.h) on every backend present, as ggml's
// test-backend-ops: the CPU backend against float64 references computed here, and each other
// backend (CUDA, when a device is present) against the CPU backend. Without a device the CUDA
// leg prints "CUDA: skipped (no device: <reason>)" and the CPU leg still checks every op.
#include "backend/backend.h"
#include "backend_ops_harness.h"

#include <myelin/cuda.h>
#include <myelin/error.h>

#include <QtTest>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

using namespace myelin;
using backend::Backend;
using backend::BinaryOp;
using backend::OpParams;
using backend::ReduceOp;
using backend::UnaryOp;
using backend::View;
using namespace backend_ops;

namespace {

struct UnaryCase {
    UnaryOp op;
    const char* name;
    double lo, hi;
    OpParams p;
    std::function<double(double, const OpParams&)> ref;
};

double sigmoid(double x) {
    return 1.0 / (1.0 + std::exp(-x));
}
double gelu(double x) {
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}
double gelu_tanh(double x) {
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}
double derivative(const std::function<double(double)>& f, double x) {
    const double h = 1e-6;
    return (f(x + h) - f(x - h)) / (2 * h);
}

std::vector<UnaryCase> unary_cases() {
    using U = UnaryOp;
    return {
        {U::Neg, "neg", -2, 2, {}, [](double x, auto&) { return -x; }},
        {U::Abs, "abs", -2, 2, {}, [](double x, auto&) { return std::abs(x); }},
        {U::Sign, "sign", -2, 2, {}, [](double x, auto&) { return double((x > 0) - (x < 0)); }},
        {U::Reciprocal, "reciprocal", 0.5, 2.5, {}, [](double x, auto&) { return 1 / x; }},
        {U::Square, "square", -2, 2, {}, [](double x, auto&) { return x * x; }},
        {U::Exp, "exp", -3, 3, {}, [](double x, auto&) { return std::exp(x); }},
        {U::Log, "log", 0.5, 2.5, {}, [](double x, auto&) { return std::log(x); }},
        {U::Log1p, "log1p", 0.5, 2.5, {}, [](double x, auto&) { return std::log1p(x); }},
        {U::Sqrt, "sqrt", 0.5, 2.5, {}, [](double x, auto&) { return std::sqrt(x); }},
        {U::Rsqrt, "rsqrt", 0.5, 2.5, {}, [](double x, auto&) { return 1 / std::sqrt(x); }},
        {U::Sin, "sin", -2, 2, {}, [](double x, auto&) { return std::sin(x); }},
        {U::Cos, "cos", -2, 2, {}, [](double x, auto&) { return std::cos(x); }},
        {U::Tanh, "tanh", -2, 2, {}, [](double x, auto&) { return std::tanh(x); }},
        {U::Sigmoid, "sigmoid", -4, 4, {}, [](double x, auto&) { return sigmoid(x); }},
        {U::Relu, "relu", -2, 2, {}, [](double x, auto&) { return x > 0 ? x : 0; }},
        {U::LeakyRelu,
         "leaky_relu",
         -2,
         2,
         {0.1, 0},
         [](double x, const OpParams& p) { return x > 0 ? x : p.a * x; }},
        {U::Elu,
         "elu",
         -2,
         2,
         {1.0, 0},
         [](double x, const OpParams& p) { return x > 0 ? x : p.a * std::expm1(x); }},
        {U::Gelu, "gelu", -3, 3, {}, [](double x, auto&) { return gelu(x); }},
        {U::GeluTanh, "gelu_tanh", -3, 3, {}, [](double x, auto&) { return gelu_tanh(x); }},
        {U::Silu, "silu", -4, 4, {}, [](double x, auto&) { return x * sigmoid(x); }},
        {U::Softplus,
         "softplus",
         -3,
         3,
         {1.0, 20.0},
         [](double x, auto&) { return std::log1p(std::exp(x)); }},
        {U::PowScalar,
         "pow_scalar",
         0.5,
         2.5,
         {2.5, 0},
         [](double x, const OpParams& p) { return std::pow(x, p.a); }},
        {U::RPowScalar,
         "rpow_scalar",
         -2,
         2,
         {1.7, 0},
         [](double x, const OpParams& p) { return std::pow(p.a, x); }},
        {U::AddScalar,
         "add_scalar",
         -2,
         2,
         {0.5, 0},
         [](double x, const OpParams& p) { return x + p.a; }},
        {U::MulScalar,
         "mul_scalar",
         -2,
         2,
         {1.5, 0},
         [](double x, const OpParams& p) { return x * p.a; }},
        {U::RSubScalar,
         "rsub_scalar",
         -2,
         2,
         {2.0, 0},
         [](double x, const OpParams& p) { return p.a - x; }},
        {U::RDivScalar,
         "rdiv_scalar",
         0.5,
         2.5,
         {3.0, 0},
         [](double x, const OpParams& p) { return p.a / x; }},
        {U::Clamp,
         "clamp",
         -2,
         2,
         {-0.5, 0.7},
         [](double x, const OpParams& p) { return std::min(std::max(x, p.a), p.b); }},
    };
}

struct BinaryCase {
    BinaryOp op;
    const char* name;
    double lo, hi; // of both operands
    OpParams p;
    std::function<double(double, double, const OpParams&)> ref;
};

std::vector<BinaryCase> binary_cases() {
    using B = BinaryOp;
    const auto grad = [](std::function<double(double)> f) {
        return [f](double g, double x, auto&) { return g * derivative(f, x); };
    };
    return {
        {B::Add,
         "add",
         -2,
         2,
         {1.5, 0},
         [](double a, double b, const OpParams& p) { return a + p.a * b; }},
        {B::Sub,
         "sub",
         -2,
         2,
         {0.5, 0},
         [](double a, double b, const OpParams& p) { return a - p.a * b; }},
        {B::Mul, "mul", -2, 2, {}, [](double a, double b, auto&) { return a * b; }},
        {B::Div, "div", 0.5, 2.5, {}, [](double a, double b, auto&) { return a / b; }},
        {B::Pow, "pow", 0.5, 2.5, {}, [](double a, double b, auto&) { return std::pow(a, b); }},
        {B::Maximum,
         "maximum",
         -2,
         2,
         {},
         [](double a, double b, auto&) { return std::max(a, b); }},
        {B::Minimum,
         "minimum",
         -2,
         2,
         {},
         [](double a, double b, auto&) { return std::min(a, b); }},
        {B::ReluBackward,
         "relu_backward",
         -2,
         2,
         {},
         [](double g, double x, auto&) { return x > 0 ? g : 0; }},
        {B::LeakyReluBackward,
         "leaky_relu_backward",
         -2,
         2,
         {0.1, 0},
         [](double g, double x, const OpParams& p) { return x > 0 ? g : g * p.a; }},
        {B::EluBackward,
         "elu_backward",
         -2,
         2,
         {1.0, 0},
         [](double g, double x, const OpParams& p) { return x > 0 ? g : g * p.a * std::exp(x); }},
        {B::GeluBackward, "gelu_backward", -2, 2, {}, grad(gelu)},
        {B::GeluTanhBackward, "gelu_tanh_backward", -2, 2, {}, grad(gelu_tanh)},
        {B::SiluBackward, "silu_backward", -2, 2, {}, grad([](double x) {
             return x * sigmoid(x);
         })},
        {B::SoftplusBackward,
         "softplus_backward",
         -2,
         2,
         {1.0, 20.0},
         [](double g, double x, auto&) { return g * sigmoid(x); }},
        {B::SigmoidBackward,
         "sigmoid_backward",
         0.05,
         0.95,
         {},
         [](double g, double y, auto&) { return g * (1 - y) * y; }},
        {B::TanhBackward,
         "tanh_backward",
         -0.95,
         0.95,
         {},
         [](double g, double y, auto&) { return g * (1 - y * y); }},
    };
}

} // namespace

namespace {
// A backend that runs nothing but float64 GEMMs: what require() says about the rest.
class GemmOnlyBackend final : public Backend {
  public:
    DeviceType type() const override { return DeviceType::CUDA; }
    BackendInfo info() const override { return {DeviceType::CUDA, "Test", "test:0"}; }
    bool supports(backend::Primitive p, DType t) const override {
        return p == backend::Primitive::BatchedGemm && t == DType::Float64;
    }
    void* allocate(size_t) override { return nullptr; }
    void deallocate(void*, size_t) override {}
    void copy_from_host(void*, const void*, size_t) override {}
    void copy_to_host(void*, const void*, size_t) override {}
    void copy(const View&, const View&) override {}
    void fill(const View&, double) override {}
    void unary(UnaryOp, const View&, const View&, const OpParams&) override {}
    void binary(BinaryOp, const View&, const View&, const View&, const OpParams&) override {}
    void where(const View&, const View&, const View&, const View&) override {}
    void reduce(ReduceOp, const View&, int, const View&, const View*, const OpParams&) override {}
    void softmax(const View&, int, bool, const View&) override {}
    void softmax_backward(const View&, const View&, int, bool, const View&) override {}
    void batched_gemm(const View&, const View&, const View&, bool) override {}
    void index_select(const View&, int, const View&, const View&) override {}
    void gather(const View&, int, const View&, const View&) override {}
    void scatter_add(const View&, int, const View&, const View&) override {}
    bool int_range(const View&, int64_t*, int64_t*) override { return false; }
};
} // namespace

class TestBackendOps : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() { report_cuda_leg(); }

    void unsupported_primitives_are_refused_by_name() {
        const Backend& cpu = backend::get(DeviceType::CPU);
        for (int p = 0; p < int(backend::Primitive::Count); ++p)
            QVERIFY(cpu.supports(backend::Primitive(p), DType::Float32));
        GemmOnlyBackend gemm_only;
        gemm_only.require(backend::Primitive::BatchedGemm, DType::Float64);
        QString message;
        try {
            gemm_only.require(backend::Primitive::BatchedGemm, DType::Float16);
        } catch (const DeviceError& e) {
            message = QString::fromStdString(e.what());
        }
        QCOMPARE(message, QStringLiteral("batched_gemm on float16 is not supported by the Test "
                                         "backend (test:0)"));
    }

    void unary() {
        int64_t checked = 0;
        for (const UnaryCase& c : unary_cases())
            for (DType t : {DType::Float32, DType::Float64}) {
                const Array x = make(t, {3, 5, 7}, values(c.lo, c.hi));
                const QString what = QStringLiteral("unary %1 (%2)").arg(c.name, dtype_name(t));
                // The derivative references use a central difference: looser there.
                checked += check_case(
                    what, {x, make(t, {3, 5, 7}, {})}, 1,
                    [&](Backend& b, std::vector<View>& v) { b.unary(c.op, v[0], v[1], c.p); },
                    [&](int64_t i) { return c.ref(x.get(i), c.p); }, rtol_for(t) * 4,
                    t == DType::Float64 ? 1e-13 : 1e-6);
            }
        // Integer ops and the predicates.
        const Array xi = make(DType::Int64, {40}, [](int64_t i) { return double(i - 20); });
        checked += check_case(
            "unary abs (int64)", {xi, make(DType::Int64, {40}, {})}, 1,
            [](Backend& b, std::vector<View>& v) { b.unary(UnaryOp::Abs, v[0], v[1], {}); },
            [&](int64_t i) { return std::abs(xi.get(i)); }, 0, 0);
        const double specials[] = {1.0,          -0.0, std::numeric_limits<double>::infinity(),
                                   std::nan(""), 0.0,  -3.5};
        const Array xs = make(DType::Float32, {6}, [&](int64_t i) { return specials[i]; });
        checked += check_case(
            "isfinite", {xs, make(DType::Bool, {6}, {})}, 1,
            [](Backend& b, std::vector<View>& v) { b.unary(UnaryOp::IsFinite, v[0], v[1], {}); },
            [&](int64_t i) { return std::isfinite(specials[i]) ? 1.0 : 0.0; }, 0, 0);
        checked += check_case(
            "logical_not", {xs, make(DType::Bool, {6}, {})}, 1,
            [](Backend& b, std::vector<View>& v) { b.unary(UnaryOp::LogicalNot, v[0], v[1], {}); },
            [&](int64_t i) { return specials[i] == 0.0 ? 1.0 : 0.0; }, 0, 0);
        QVERIFY(checked > 28 * 2 * 105);
    }

    void binary_with_broadcast() {
        int64_t checked = 0;
        for (const BinaryCase& c : binary_cases())
            for (DType t : {DType::Float32, DType::Float64}) {
                Array a = make(t, {4, 6}, values(c.lo, c.hi, 2));
                Array b = make(t, {1, 6}, values(c.lo, c.hi, 3));
                b.shape = {4, 6};
                b.strides = {0, 1}; // broadcast along dim 0
                const QString what = QStringLiteral("binary %1 (%2)").arg(c.name, dtype_name(t));
                checked += check_case(
                    what, {a, b, make(t, {4, 6}, {})}, 2,
                    [&](Backend& be, std::vector<View>& v) {
                        be.binary(c.op, v[0], v[1], v[2], c.p);
                    },
                    [&](int64_t i) { return c.ref(a.get(i), b.get(i), c.p); },
                    std::strstr(c.name, "backward") ? 1e-6 : rtol_for(t) * 4,
                    t == DType::Float64 ? 1e-9 : 2e-6);
            }
        // Comparisons give bool; values on a grid so that some are equal.
        const Array a = make(DType::Float32, {30}, [](int64_t i) { return double(i % 5) * 0.5; });
        const Array b = make(DType::Float32, {30}, [](int64_t i) { return double(i % 3) * 0.5; });
        const struct {
            BinaryOp op;
            const char* name;
            std::function<bool(double, double)> ref;
        } comparisons[] = {{BinaryOp::Eq, "eq", std::equal_to<double>()},
                           {BinaryOp::Ne, "ne", std::not_equal_to<double>()},
                           {BinaryOp::Lt, "lt", std::less<double>()},
                           {BinaryOp::Le, "le", std::less_equal<double>()},
                           {BinaryOp::Gt, "gt", std::greater<double>()},
                           {BinaryOp::Ge, "ge", std::greater_equal<double>()}};
        for (const auto& c : comparisons)
            checked += check_case(
                QString::fromLatin1(c.name), {a, b, make(DType::Bool, {30}, {})}, 2,
                [&](Backend& be, std::vector<View>& v) { be.binary(c.op, v[0], v[1], v[2], {}); },
                [&](int64_t i) { return c.ref(a.get(i), b.get(i)) ? 1.0 : 0.0; }, 0, 0);
        QVERIFY(checked > 16 * 2 * 24);
    }

    void copy_fill_where() {
        // A transposed float32 source converted to float64 and to int64.
        Array src = make(DType::Float32, {4, 3}, values(-5, 5));
        src.shape = {3, 4};
        src.strides = {1, 3};
        for (DType to : {DType::Float64, DType::Int64, DType::Float32})
            check_case(
                QStringLiteral("copy float32 (transposed) -> %1").arg(dtype_name(to)),
                {src, make(to, {3, 4}, {})}, 1,
                [](Backend& b, std::vector<View>& v) { b.copy(v[0], v[1]); },
                [&](int64_t i) {
                    const double v = double(float(src.get(i)));
                    return to == DType::Int64 ? std::trunc(v) : v;
                },
                0, 0);
        check_case(
            "fill", {make(DType::Float64, {5, 2}, {})}, 0,
            [](Backend& b, std::vector<View>& v) { b.fill(v[0], 0.125); },
            [](int64_t) { return 0.125; }, 0, 0);
        const Array cond = make(DType::Bool, {12}, [](int64_t i) { return double(i % 3 == 0); });
        const Array a = make(DType::Float32, {12}, values(0, 1, 4));
        const Array b = make(DType::Float32, {12}, values(-1, 0, 5));
        check_case(
            "where", {cond, a, b, make(DType::Float32, {12}, {})}, 3,
            [](Backend& be, std::vector<View>& v) { be.where(v[0], v[1], v[2], v[3]); },
            [&](int64_t i) { return cond.get(i) != 0 ? a.get(i) : b.get(i); }, 0, 0);
    }

    void reductions() {
        // [4, 3, 5] reduced over its last two dims (15 elements per row), the CPU's layout
        // (the front end permutes reduced dims to the end).
        for (DType t : {DType::Float32, DType::Float64}) {
            Array x = make(t, {4, 3, 5}, values(-2, 2, 6));
            x.set(17, std::nan("")); // row 1 holds a NaN: max/min/argmax propagate it
            const auto row = [&](int64_t r) {
                std::vector<double> v;
                for (int64_t k = 0; k < 15; ++k)
                    v.push_back(x.get(r * 15 + k));
                return v;
            };
            const struct {
                ReduceOp op;
                const char* name;
                OpParams p;
                std::function<double(const std::vector<double>&)> ref;
            } cases[] = {
                {ReduceOp::Sum,
                 "sum",
                 {},
                 [](auto& v) {
                     double s = 0;
                     for (double e : v)
                         s += e;
                     return s;
                 }},
                {ReduceOp::Mean,
                 "mean",
                 {},
                 [](auto& v) {
                     double s = 0;
                     for (double e : v)
                         s += e;
                     return s / double(v.size());
                 }},
                {ReduceOp::Max,
                 "max",
                 {},
                 [](auto& v) {
                     double m = v[0];
                     for (double e : v)
                         m = std::isnan(m) || std::isnan(e) ? std::nan("") : std::max(m, e);
                     return m;
                 }},
                {ReduceOp::Min,
                 "min",
                 {},
                 [](auto& v) {
                     double m = v[0];
                     for (double e : v)
                         m = std::isnan(m) || std::isnan(e) ? std::nan("") : std::min(m, e);
                     return m;
                 }},
                {ReduceOp::Var,
                 "var",
                 {1.0, 0},
                 [](auto& v) {
                     double s = 0, q = 0;
                     for (double e : v)
                         s += e;
                     const double mean = s / double(v.size());
                     for (double e : v)
                         q += (e - mean) * (e - mean);
                     return q / double(v.size() - 1);
                 }},
                {ReduceOp::Norm,
                 "norm2",
                 {2.0, 0},
                 [](auto& v) {
                     double q = 0;
                     for (double e : v)
                         q += e * e;
                     return std::sqrt(q);
                 }},
                {ReduceOp::LogSumExp,
                 "logsumexp",
                 {},
                 [](auto& v) {
                     double s = 0;
                     for (double e : v)
                         s += std::exp(e);
                     return std::log(s);
                 }},
            };
            for (const auto& c : cases) {
                const QString what = QStringLiteral("reduce %1 (%2)").arg(c.name, dtype_name(t));
                check_case(
                    what, {x, make(t, {4}, {})}, 1,
                    [&](Backend& b, std::vector<View>& v) {
                        b.reduce(c.op, v[0], 2, v[1], nullptr, c.p);
                    },
                    [&](int64_t r) { return c.ref(row(r)); }, t == DType::Float64 ? 1e-12 : 1e-5,
                    1e-6);
            }
            for (ReduceOp op : {ReduceOp::ArgMax, ReduceOp::ArgMin})
                check_case(
                    QStringLiteral("reduce arg%1 (%2)")
                        .arg(op == ReduceOp::ArgMax ? "max" : "min", dtype_name(t)),
                    {x, make(DType::Int64, {4}, {})}, 1,
                    [&](Backend& b, std::vector<View>& v) {
                        b.reduce(op, v[0], 2, v[1], nullptr, {});
                    },
                    [&](int64_t r) {
                        const std::vector<double> v = row(r);
                        int64_t best = 0;
                        for (int64_t k = 1; k < 15; ++k) {
                            if (std::isnan(v[size_t(best)])) break;
                            if (std::isnan(v[size_t(k)]) ||
                                (op == ReduceOp::ArgMax ? v[size_t(k)] > v[size_t(best)]
                                                        : v[size_t(k)] < v[size_t(best)]))
                                best = k;
                        }
                        return double(best);
                    },
                    0, 0);
        }
    }

    void softmax_forward_and_backward() {
        for (DType t : {DType::Float32, DType::Float64})
            for (bool log : {false, true})
                for (int dim : {1, 2}) { // [3, 4, 5]: a middle dim (strided rows) and the last
                    const Array x = make(t, {3, 4, 5}, values(-3, 3, 7));
                    const int64_t D = dim == 1 ? 4 : 5, inner = dim == 1 ? 5 : 1;
                    const auto at = [&](int64_t i, int64_t k) { // element k of i's softmax row
                        const int64_t o = i / (D * inner), j = i % inner;
                        return o * D * inner + k * inner + j;
                    };
                    const auto ref = [&](const Array& a, int64_t i) {
                        double m = -INFINITY, s = 0;
                        for (int64_t k = 0; k < D; ++k)
                            m = std::max(m, a.get(at(i, k)));
                        for (int64_t k = 0; k < D; ++k)
                            s += std::exp(a.get(at(i, k)) - m);
                        return log ? a.get(i) - m - std::log(s) : std::exp(a.get(i) - m) / s;
                    };
                    const QString what = QStringLiteral("%1 dim %2 (%3)")
                                             .arg(log ? "log_softmax" : "softmax")
                                             .arg(dim)
                                             .arg(dtype_name(t));
                    check_case(
                        what, {x, make(t, {3, 4, 5}, {})}, 1,
                        [&](Backend& b, std::vector<View>& v) { b.softmax(v[0], dim, log, v[1]); },
                        [&](int64_t i) { return ref(x, i); }, rtol_for(t) * 4, 1e-7);
                    // Backward from y = softmax(x) and an upstream gradient.
                    const Array y = make(t, {3, 4, 5}, [&](int64_t i) { return ref(x, i); });
                    const Array gy = make(t, {3, 4, 5}, values(-1, 1, 8));
                    check_case(
                        what + QStringLiteral(" backward"), {y, gy, make(t, {3, 4, 5}, {})}, 2,
                        [&](Backend& b, std::vector<View>& v) {
                            b.softmax_backward(v[0], v[1], dim, log, v[2]);
                        },
                        [&](int64_t i) {
                            double s = 0;
                            for (int64_t k = 0; k < D; ++k)
                                s += log ? gy.get(at(i, k)) : gy.get(at(i, k)) * y.get(at(i, k));
                            return log ? gy.get(i) - std::exp(y.get(i)) * s
                                       : y.get(i) * (gy.get(i) - s);
                        },
                        rtol_for(t) * 8, 1e-6);
                }
    }

    void batched_gemm() {
        const int64_t B = 2, M = 3, K = 4, N = 5;
        for (DType t : {DType::Float32, DType::Float64})
            for (bool b_transposed : {false, true})
                for (bool accumulate : {false, true}) {
                    const Array a = make(t, {B, M, K}, values(-1, 1, 9));
                    Array b = make(t, {B, K, N}, values(-1, 1, 10));
                    if (b_transposed) { // stored [B, N, K], viewed as [B, K, N]
                        b = make(t, {B, N, K}, values(-1, 1, 10));
                        b.shape = {B, K, N};
                        b.strides = {N * K, 1, K};
                    }
                    const Array c0 = make(t, {B, M, N}, values(-1, 1, 11));
                    check_case(
                        QStringLiteral("batched_gemm (%1%2%3)")
                            .arg(dtype_name(t), b_transposed ? ", b transposed" : "",
                                 accumulate ? ", accumulate" : ""),
                        {a, b, c0}, 2,
                        [&](Backend& be, std::vector<View>& v) {
                            be.batched_gemm(v[0], v[1], v[2], accumulate);
                        },
                        [&](int64_t i) {
                            const int64_t bi = i / (M * N), m = i / N % M, n = i % N;
                            double s = accumulate ? c0.get(i) : 0.0;
                            for (int64_t k = 0; k < K; ++k)
                                s += a.get((bi * M + m) * K + k) * b.get((bi * K + k) * N + n);
                            return s;
                        },
                        t == DType::Float64 ? 1e-12 : 1e-5, 1e-6);
                }
    }

    // Autocast's lowered products: float16 / bfloat16 operands into a float32 output (cuBLAS's
    // half GEMM on CUDA). Every product of two half values is exact in float32, so the float64
    // reference on the stored (rounded) operands is met to float32 rounding.
    void batched_gemm_half_operands() {
        const int64_t B = 2, M = 3, K = 40, N = 5;
        for (DType t : {DType::Float16, DType::BFloat16})
            for (bool b_transposed : {false, true}) {
                const Array a = make(t, {B, M, K}, values(-1, 1, 12));
                Array b = make(t, {B, K, N}, values(-1, 1, 13));
                if (b_transposed) {
                    b = make(t, {B, N, K}, values(-1, 1, 13));
                    b.shape = {B, K, N};
                    b.strides = {N * K, 1, K};
                }
                const Array c0 = make(DType::Float32, {B, M, N}, values(-1, 1, 14));
                check_case(
                    QStringLiteral("batched_gemm (%1 operands, float32 output%2)")
                        .arg(dtype_name(t), b_transposed ? ", b transposed" : ""),
                    {a, b, c0}, 2,
                    [&](Backend& be, std::vector<View>& v) {
                        be.batched_gemm(v[0], v[1], v[2], false);
                    },
                    [&](int64_t i) {
                        const int64_t bi = i / (M * N), m = i / N % M, n = i % N;
                        double s = 0.0;
                        for (int64_t k = 0; k < K; ++k)
                            s += a.get((bi * M + m) * K + k) * b.get((bi * K + k) * N + n);
                        return s;
                    },
                    1e-6, 1e-6);
            }
    }

    void index_ops() {
        const Array x = make(DType::Float32, {4, 5, 3}, values(-1, 1, 12));
        const Array index = make(DType::Int64, {3}, [](int64_t i) { return double((i * 3) % 5); });
        check_case(
            "index_select dim 1", {x, index, make(DType::Float32, {4, 3, 3}, {})}, 2,
            [](Backend& b, std::vector<View>& v) { b.index_select(v[0], 1, v[1], v[2]); },
            [&](int64_t i) {
                const int64_t o = i / 9, j = i / 3 % 3, k = i % 3;
                return x.get((o * 5 + int64_t(index.get(j))) * 3 + k);
            },
            0, 0);
        const Array gidx =
            make(DType::Int64, {4, 2, 3}, [](int64_t i) { return double(i * 7 % 5); });
        check_case(
            "gather dim 1", {x, gidx, make(DType::Float32, {4, 2, 3}, {})}, 2,
            [](Backend& b, std::vector<View>& v) { b.gather(v[0], 1, v[1], v[2]); },
            [&](int64_t i) {
                const int64_t o = i / 6, k = i % 3;
                return x.get((o * 5 + int64_t(gidx.get(i))) * 3 + k);
            },
            0, 0);
        // scatter_add: integer-valued sources so the sums are exact in any order.
        const Array self = make(DType::Float32, {4, 5, 3}, [](int64_t i) { return double(i % 4); });
        const Array src = make(DType::Float32, {4, 2, 3}, [](int64_t i) { return double(i % 9); });
        check_case(
            "scatter_add dim 1", {self, gidx, src}, 0,
            [](Backend& b, std::vector<View>& v) { b.scatter_add(v[0], 1, v[1], v[2]); },
            [&](int64_t i) {
                const int64_t o = i / 15, row = i / 3 % 5, k = i % 3;
                double s = self.get(i);
                for (int64_t j = 0; j < 2; ++j)
                    if (int64_t(gidx.get((o * 2 + j) * 3 + k)) == row)
                        s += src.get((o * 2 + j) * 3 + k);
                return s;
            },
            0, 0);
        // int_range: on every backend, the smallest and largest entry.
        const Array ints =
            make(DType::Int64, {50}, [](int64_t i) { return double(i * 37 % 101 - 40); });
        int64_t lo = 0, hi = 0;
        std::vector<Backend*> all = other_backends();
        all.insert(all.begin(), &backend::get(DeviceType::CPU));
        for (Backend* b : all) {
            run_on(*b, {ints}, [&](Backend& be, std::vector<View>& v) {
                QVERIFY(be.int_range(v[0], &lo, &hi));
            });
            QCOMPARE(lo, int64_t(-40));
            QCOMPARE(hi, int64_t(60));
        }
    }
};

QTEST_APPLESS_MAIN(TestBackendOps)
#include "test_backend_ops.moc"
