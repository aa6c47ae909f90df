// Golden parity of int8 quantization (quant/quantize.h, quant/kernels.h) with PyTorch 1.13 on
// its 'onednn' quantized engine: observer parameters after several batches, int8 weights and
// their scales, quantize / dequantize, the quantized Linear / Conv2d (with and without ReLU)
// outputs, quantized max pooling, dynamic quantization's Linear and fake quantization forward
// and backward. Fixture: tests/golden/quant.txt, written by tests/golden/gen_golden_quant.py
// (format in its docstring).
#include "golden_support.h"

#include <QtTest>

#include <myelin/autograd.h>
#include <myelin/quant/kernels.h>
#include <myelin/quant/quantize.h>
#include <myelin/tensor.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#ifndef MYELIN_SOURCE_DIR
#error "test_quant_golden needs MYELIN_SOURCE_DIR (the repository root) to find tests/golden/"
#endif

using myelin::Dims;
using myelin::DType;
using myelin::Tensor;
namespace quant = myelin::quant;
using golden::FixtureError;
using golden::parseIntList;
using golden::parseNumber;
using golden::TensorData;

namespace {

constexpr int kMinCases = 31; // a truncated fixture must fail, not pass vacuously

struct QP {
    double scale;
    int64_t zero_point;
};

struct Case {
    std::string name, file, kind;
    int line = 0;
    std::map<std::string, std::string> opts;
    std::vector<std::pair<std::string, TensorData>> tensors; // in file order ("in" repeats)
    std::map<std::string, QP> qps;

    const TensorData& t(const std::string& key) const {
        for (const auto& [k, v] : tensors)
            if (k == key) return v;
        throw FixtureError(name + ": no tensor '" + key + "'");
    }
    std::vector<const TensorData*> all(const std::string& key) const {
        std::vector<const TensorData*> out;
        for (const auto& [k, v] : tensors)
            if (k == key) out.push_back(&v);
        return out;
    }
    const QP& q(const std::string& key) const {
        if (!qps.count(key)) throw FixtureError(name + ": no qparams '" + key + "'");
        return qps.at(key);
    }
    quant::QParams qparams(const std::string& key) const {
        return {float(q(key).scale), int32_t(q(key).zero_point)};
    }
    int64_t i(const std::string& key) const {
        if (!opts.count(key)) throw FixtureError(name + ": no option '" + key + "'");
        return parseNumber<int64_t>(opts.at(key));
    }
    double d(const std::string& key) const { return parseNumber<double>(opts.at(key)); }
    std::array<int64_t, 2> pair(const std::string& key) const {
        const auto v = parseIntList(opts.at(key));
        if (v.size() != 2) throw FixtureError(name + ": option '" + key + "' needs two values");
        return {v[0], v[1]};
    }
    std::string where() const { return file + ":" + std::to_string(line) + " " + name; }
};

TensorData parseTensor(const std::vector<std::string>& tok, size_t pos) {
    if (tok.size() < pos + 2) throw FixtureError("tensor needs a dtype and a shape");
    TensorData t;
    const std::string& tag = tok[pos];
    if (tag == "f32")
        t.dtype = DType::Float32;
    else if (tag == "u8")
        t.dtype = DType::UInt8;
    else if (tag == "i8" || tag == "i64")
        t.dtype = DType::Int64;
    else
        throw FixtureError("unknown dtype tag '" + tag + "'");
    t.shape = Dims(parseIntList(tok[pos + 1]));
    golden::parseValues(tok, pos + 2, size_t(t.shape.numel()), t);
    return t;
}

std::vector<Case> parseFile(const std::string& path, const std::string& label) {
    return golden::parseFixtureFile<Case>(
        path, label,
        [](Case& c, const std::vector<std::string>& tok, const std::string&) {
            const std::string& kw = tok[0];
            if (kw == "kind" && tok.size() == 2) {
                c.kind = tok[1];
            } else if (kw == "opt" && tok.size() == 3) {
                c.opts[tok[1]] = tok[2];
            } else if (kw == "t" && tok.size() >= 4) {
                c.tensors.emplace_back(tok[1], parseTensor(tok, 2));
            } else if (kw == "qp" && tok.size() == 4) {
                c.qps[tok[1]] = {parseNumber<double>(tok[2]), parseNumber<int64_t>(tok[3])};
            } else {
                return false;
            }
            return true;
        },
        [](Case& c) {
            if (c.kind.empty()) throw FixtureError("case without a kind");
        });
}

const golden::Fixtures<Case>& fixtures() {
    static const auto f =
        golden::loadFixtures<Case>(std::vector<const char*>{"quant.txt"}, parseFile);
    return f;
}

std::vector<const Case*> casesOf(const std::string& kind) {
    std::vector<const Case*> out;
    for (const Case& c : fixtures().cases)
        if (c.kind == kind) out.push_back(&c);
    return out;
}

Tensor floats(const TensorData& d) {
    return golden::makeTensor(d);
}

quant::QTensor qtensor(const TensorData& d, quant::QParams q) {
    if (d.dtype != DType::UInt8) throw FixtureError("expected a u8 tensor");
    return {golden::makeTensor(d), q};
}

quant::QuantizedWeight weight(const TensorData& values, const TensorData& scales) {
    quant::QuantizedWeight w;
    w.shape = values.shape;
    for (double v : values.values)
        w.values.push_back(int8_t(v));
    for (double s : scales.values)
        w.scales.push_back(float(s));
    return w;
}

bool relativeClose(double actual, double expected, double rtol) {
    return std::fabs(actual - expected) <= rtol * std::fabs(expected);
}

// Quantized outputs against PyTorch's: every element within 2 quanta, at least 99% within 1.
QString compareQuanta(const std::string& what, const Tensor& actual, const TensorData& expected) {
    const std::string meta = golden::compareMeta(what, actual, expected);
    if (!meta.empty()) return QString::fromStdString(meta);
    const auto a = golden::extractValues(actual);
    size_t within1 = 0, exact = 0, worst = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        const auto diff = size_t(std::fabs(a[i] - expected.values[i]));
        worst = std::max(worst, diff);
        within1 += diff <= 1;
        exact += diff == 0;
    }
    if (exact != a.size())
        qInfo("%s: %zu of %zu elements one quantum off", what.c_str(), a.size() - exact, a.size());
    if (worst <= 2 && double(within1) >= 0.99 * double(a.size())) return {};
    return QString::fromStdString(what + ": " + std::to_string(a.size() - within1) + " of " +
                                  std::to_string(a.size()) + " elements more than 1 quantum off, " +
                                  "worst " + std::to_string(worst));
}

QString compareExact(const std::string& what, const Tensor& actual, const TensorData& expected) {
    const std::string meta = golden::compareMeta(what, actual, expected);
    if (!meta.empty()) return QString::fromStdString(meta);
    const auto a = golden::extractValues(actual);
    golden::Mismatches m;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i] != expected.values[i]) m.add(expected.shape, i, expected.values[i], a[i], true);
    if (m.empty()) return {};
    return QString::fromStdString(m.report(what, expected, a.size(), false, {0.0, 0.0}));
}

#define CHECK_EMPTY(expr)                                                                          \
    do {                                                                                           \
        const QString msg_ = (expr);                                                               \
        QVERIFY2(msg_.isEmpty(), qPrintable(msg_));                                                \
    } while (0)

} // namespace

class TestQuantGolden : public QObject {
    Q_OBJECT

  private slots:
    void fixtureLoads() {
        const auto& f = fixtures();
        QVERIFY2(f.errors.empty(), f.errors.empty() ? "" : f.errors.front().c_str());
        QVERIFY2(f.count("quant.txt") >= kMinCases,
                 qPrintable(QString("quant.txt has %1 cases").arg(f.count("quant.txt"))));
    }

    // MinMax and MovingAverageMinMax: the running range bit for bit, the scale within 1e-6
    // relative, the zero point exactly. Histogram: the merged range bit for bit as well; the
    // search picks its bins from float32 L2 norms that PyTorch sums in another order (a
    // vectorised cascade), so where two candidate ranges' norms tie to the last bits the pick
    // may differ by a step: the scale is held within 0.2% (a few of the 2048 bins of the range)
    // and the zero point within 1.
    void observers() {
        const auto cases = casesOf("observers");
        QVERIFY(cases.size() >= 5);
        for (const Case* c : cases) {
            for (quant::ObserverKind kind : quant::observer_kinds()) {
                const std::string name(quant::observer_kind_name(kind));
                const std::string what = c->where() + " " + name;
                auto obs = quant::make_observer(kind);
                for (const TensorData* in : c->all("in"))
                    obs->observe(floats(*in));
                const TensorData& range = c->t("range_" + name);
                QVERIFY2(double(obs->min()) == range.values[0] &&
                             double(obs->max()) == range.values[1],
                         qPrintable(QString::fromStdString(what) +
                                    QString(": range %1 %2, expected %3 %4")
                                        .arg(obs->min(), 0, 'g', 9)
                                        .arg(obs->max(), 0, 'g', 9)
                                        .arg(range.values[0], 0, 'g', 9)
                                        .arg(range.values[1], 0, 'g', 9)));
                const quant::QParams q = obs->qparams();
                const QP& want = c->q(name);
                const bool histogram = kind == quant::ObserverKind::Histogram;
                if (histogram && !(q.scale == float(want.scale) && q.zero_point == want.zero_point))
                    qInfo("%s: scale %.9g zero point %d, PyTorch %.9g %d", what.c_str(),
                          double(q.scale), q.zero_point, want.scale, int(want.zero_point));
                const bool ok = histogram ? relativeClose(q.scale, want.scale, 2e-3) &&
                                                std::abs(q.zero_point - want.zero_point) <= 1
                                          : relativeClose(q.scale, want.scale, 1e-6) &&
                                                q.zero_point == want.zero_point;
                QVERIFY2(ok, qPrintable(QString::fromStdString(what) +
                                        QString(": scale %1 zero point %2, expected %3 %4")
                                            .arg(q.scale, 0, 'g', 9)
                                            .arg(q.zero_point)
                                            .arg(want.scale, 0, 'g', 9)
                                            .arg(want.zero_point)));
            }
        }
    }

    void observerNames() {
        for (quant::ObserverKind kind : quant::observer_kinds()) {
            const auto parsed = quant::parse_observer_kind(quant::observer_kind_name(kind));
            QVERIFY(parsed && *parsed == kind);
            QCOMPARE(quant::make_observer(kind)->kind(), kind);
        }
        QCOMPARE(quant::observer_kind_name(quant::ObserverKind::MovingAverageMinMax),
                 std::string_view("moving-average"));
        QVERIFY(!quant::parse_observer_kind("percentile"));
        QCOMPARE(quant::MinMaxObserver().qparams(), (quant::QParams{1.0f, 0}));
    }

    // Scales within 1e-6 relative; int8 values exact, except where x / scale is a tie that
    // rounds the other way (none expected: counted and held at 0.5% of the values at most).
    void weights() {
        const auto cases = casesOf("weight");
        QVERIFY(cases.size() >= 6);
        for (const Case* c : cases) {
            const Tensor w = floats(c->t("w"));
            const bool per_channel = c->opts.at("scheme") == "per_channel";
            const quant::QuantizedWeight q = per_channel ? quant::quantize_weight_per_channel(w)
                                                         : quant::quantize_weight_per_tensor(w);
            const TensorData& scales = c->t("scales");
            QCOMPARE(q.scales.size(), scales.values.size());
            for (size_t i = 0; i < q.scales.size(); ++i)
                QVERIFY2(relativeClose(q.scales[i], scales.values[i], 1e-6),
                         qPrintable(QString::fromStdString(c->where()) +
                                    QString(": scale %1 = %2, expected %3")
                                        .arg(i)
                                        .arg(q.scales[i], 0, 'g', 9)
                                        .arg(scales.values[i], 0, 'g', 9)));
            const TensorData& values = c->t("values");
            QVERIFY(q.shape == values.shape);
            size_t ties = 0;
            for (size_t i = 0; i < q.values.size(); ++i) {
                const double diff = std::fabs(double(q.values[i]) - values.values[i]);
                QVERIFY2(diff <= 1, qPrintable(QString::fromStdString(c->where()) +
                                               QString(": value %1 off by %2").arg(i).arg(diff)));
                ties += diff == 1;
            }
            QVERIFY2(
                double(ties) <= 0.005 * double(q.values.size()),
                qPrintable(QString::fromStdString(c->where()) + QString(": %1 ties").arg(ties)));
            if (ties) qInfo("%s: %zu values differ by one (ties)", c->where().c_str(), ties);
            // The float weight the int8 one stands for.
            const Tensor back = quant::dequantize_weight(q);
            QVERIFY(back.shape() == w.shape());
        }
    }

    void quantizeDequantize() {
        const auto cases = casesOf("quantize");
        QVERIFY(!cases.empty());
        for (const Case* c : cases) {
            const quant::QTensor q = quant::quantize_per_tensor(floats(c->t("x")), c->qparams("q"));
            CHECK_EMPTY(compareExact(c->where() + " q", q.data, c->t("q")));
            CHECK_EMPTY(compareExact(c->where() + " dq", quant::dequantize(q), c->t("dq")));
        }
    }

    // Quantized Linear / Conv2d: oneDNN and the reference each within PyTorch's quanta (rule in
    // compareQuanta), and within one quantum of each other.
    void linearAndConv() {
        int checked = 0;
        for (const char* kind : {"linear", "conv"}) {
            for (const Case* c : casesOf(kind)) {
                const quant::QTensor x = qtensor(c->t("x"), c->qparams("x"));
                const quant::QuantizedWeight w = weight(c->t("w"), c->t("scales"));
                const Tensor bias = floats(c->t("bias"));
                const bool relu = c->i("relu") != 0;
                const quant::QParams out = c->qparams("out");
                auto run = [&](quant::KernelPath path) {
                    if (c->kind == "linear")
                        return quant::quantized_linear(x, w, bias, relu, out, path);
                    quant::Conv2dOptions o;
                    o.stride = c->pair("stride");
                    o.padding = c->pair("padding");
                    o.dilation = c->pair("dilation");
                    o.groups = c->i("groups");
                    return quant::quantized_conv2d(x, w, bias, o, relu, out, path);
                };
                const quant::QTensor fast = run(quant::KernelPath::OneDnn);
                QVERIFY(quant::last_kernel_used_onednn());
                QCOMPARE(fast.q, out);
                const quant::QTensor ref = run(quant::KernelPath::Reference);
                CHECK_EMPTY(compareQuanta(c->where() + " oneDNN", fast.data, c->t("out")));
                CHECK_EMPTY(compareQuanta(c->where() + " reference", ref.data, c->t("out")));
                const auto a = golden::extractValues(fast.data),
                           b = golden::extractValues(ref.data);
                const auto differ = std::count_if(a.begin(), a.end(), [&](const double& v) {
                    return v != b[size_t(&v - a.data())];
                });
                if (differ)
                    qInfo("%s: oneDNN and the reference differ on %td of %zu", c->where().c_str(),
                          differ, a.size());
                for (size_t i = 0; i < a.size(); ++i)
                    QVERIFY2(
                        std::fabs(a[i] - b[i]) <= 1,
                        qPrintable(
                            QString::fromStdString(c->where()) +
                            QString(": oneDNN %1, reference %2 at %3").arg(a[i]).arg(b[i]).arg(i)));
                // A second call reuses the packed weight and the cached primitive.
                QVERIFY(myelin::equal(run(quant::KernelPath::OneDnn).data, fast.data));
                ++checked;
            }
        }
        QVERIFY(checked >= 10);
    }

    void maxPool() {
        const auto cases = casesOf("pool");
        QVERIFY(cases.size() >= 3);
        for (const Case* c : cases) {
            const quant::QTensor x = qtensor(c->t("x"), c->qparams("x"));
            for (auto path : {quant::KernelPath::Auto, quant::KernelPath::Reference}) {
                const quant::QTensor y = quant::quantized_max_pool2d(
                    x, c->pair("kernel"), c->pair("stride"), c->pair("padding"), {1, 1}, path);
                QCOMPARE(y.q, x.q);
                CHECK_EMPTY(compareExact(c->where(), y.data, c->t("out")));
            }
        }
    }

    // Dynamic Linear: the activations' parameters come from the batch, so a tie rounded the
    // other way moves an output by at most one activation quantum times the largest |weight|;
    // everything else is float32 rounding.
    void dynamicLinear() {
        const auto cases = casesOf("dynamic");
        QVERIFY(cases.size() >= 2);
        for (const Case* c : cases) {
            const Tensor x = floats(c->t("x"));
            const quant::QuantizedWeight w = weight(c->t("w"), c->t("scales"));
            QVERIFY(!w.per_channel());
            const auto xs = x.to_vector<float>();
            const auto [lo, hi] = std::minmax_element(xs.begin(), xs.end());
            const quant::QParams q = quant::choose_qparams(*lo, *hi, 0, 255, true);
            double wmax = 0;
            for (int8_t v : w.values)
                wmax = std::max(wmax, std::fabs(double(v)) * w.scales[0]);
            const golden::Tolerance tol{1e-5, 1.01 * q.scale * wmax + 1e-5};
            for (auto path : {quant::KernelPath::OneDnn, quant::KernelPath::Reference}) {
                const Tensor y =
                    quant::dynamic_quantized_linear(x, w, floats(c->t("bias")), false, path);
                const TensorData& want = c->t("out");
                CHECK_EMPTY(QString::fromStdString(golden::compareMeta(c->where(), y, want)));
                const auto a = golden::extractValues(y);
                golden::Mismatches m;
                for (size_t i = 0; i < a.size(); ++i)
                    if (!golden::withinTolerance(a[i], want.values[i], tol))
                        m.add(want.shape, i, want.values[i], a[i], true);
                QVERIFY2(m.empty(), m.report(c->where(), want, a.size(), false, tol).c_str());
            }
        }
    }

    // Fake quantization: forward and the straight-through gradient bit for bit.
    void fakeQuantize() {
        int checked = 0;
        for (const char* kind : {"fake_tensor", "fake_channel"}) {
            for (const Case* c : casesOf(kind)) {
                Tensor x = floats(c->t("x")).requires_grad_();
                Tensor y;
                if (c->kind == "fake_tensor") {
                    y = quant::fake_quantize_per_tensor(x, float(c->d("scale")),
                                                        int32_t(c->i("zero_point")), c->i("qmin"),
                                                        c->i("qmax"));
                } else {
                    std::vector<float> scales;
                    for (double s : c->t("scales").values)
                        scales.push_back(float(s));
                    std::vector<int32_t> zps;
                    for (double z : c->t("zero_points").values)
                        zps.push_back(int32_t(z));
                    y = quant::fake_quantize_per_channel(x, scales, int(c->i("axis")), c->i("qmin"),
                                                         c->i("qmax"), zps);
                }
                CHECK_EMPTY(compareExact(c->where() + " forward", y.detach(), c->t("out")));
                y.backward(floats(c->t("gout")));
                CHECK_EMPTY(compareExact(c->where() + " grad", x.grad(), c->t("grad")));
                ++checked;
            }
        }
        QVERIFY(checked >= 4);
    }
};

QTEST_GUILESS_MAIN(TestQuantGolden)
#include "test_quant_golden.moc"
