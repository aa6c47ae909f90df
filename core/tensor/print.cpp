// Printing in PyTorch's format: tensor([[1.0000, 2.5000],
//                                       [3.0000, 4.0000]], requires_grad=True)
#include "autograd/function.h"
#include "tensor/tensor_impl.h"

#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>

namespace myelin {

using namespace detail;

namespace {

constexpr int64_t kThreshold = 1000; // summarise above this many elements
constexpr int64_t kEdgeItems = 3;
constexpr int kLineWidth = 80;

struct Formatter {
    enum class Mode { Int, IntFloat, Fixed, Sci, Bool } mode = Mode::Fixed;
    int width = 1;

    std::string format(double v) const {
        char buf[64];
        if (mode == Mode::Bool) return v != 0.0 ? "True" : "False";
        if (std::isnan(v)) return "nan";
        if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
        switch (mode) {
        case Mode::Int:
            std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
            break;
        case Mode::IntFloat:
            std::snprintf(buf, sizeof buf, "%.0f.", v);
            break;
        case Mode::Fixed:
            std::snprintf(buf, sizeof buf, "%.4f", v);
            break;
        case Mode::Sci:
            std::snprintf(buf, sizeof buf, "%.4e", v);
            break;
        default:
            break;
        }
        return buf;
    }
};

// Picks the mode PyTorch would: integers as "1.", sci when the dynamic range is large.
Formatter make_formatter(const std::vector<double>& values, DType dtype) {
    Formatter f;
    if (dtype == DType::Bool)
        f.mode = Formatter::Mode::Bool;
    else if (!is_floating(dtype))
        f.mode = Formatter::Mode::Int;
    else {
        bool all_int = true;
        double max_abs = 0, min_abs = INFINITY;
        bool any = false;
        for (double v : values) {
            if (!std::isfinite(v)) continue;
            any = true;
            if (std::floor(v) != v) all_int = false;
            const double a = std::abs(v);
            max_abs = std::max(max_abs, a);
            if (a != 0) min_abs = std::min(min_abs, a);
        }
        if (!any)
            f.mode = Formatter::Mode::Fixed;
        else if (all_int)
            f.mode = max_abs > 1e8 ? Formatter::Mode::Sci : Formatter::Mode::IntFloat;
        else if (min_abs != INFINITY &&
                 (max_abs / min_abs > 1000.0 || max_abs > 1e8 || min_abs < 1e-4))
            f.mode = Formatter::Mode::Sci;
        else
            f.mode = Formatter::Mode::Fixed;
    }
    for (double v : values)
        f.width = std::max<int>(f.width, static_cast<int>(f.format(v).size()));
    return f;
}

struct Printer {
    const std::vector<double>& data; // contiguous values
    const Dims& shape;
    const Formatter& fmt;
    bool summarize;

    // Index positions to print along a dim of size n (with a gap marker -1).
    std::vector<int64_t> positions(int64_t n) const {
        std::vector<int64_t> p;
        if (summarize && n > 2 * kEdgeItems) {
            for (int64_t i = 0; i < kEdgeItems; ++i)
                p.push_back(i);
            p.push_back(-1);
            for (int64_t i = n - kEdgeItems; i < n; ++i)
                p.push_back(i);
        } else {
            for (int64_t i = 0; i < n; ++i)
                p.push_back(i);
        }
        return p;
    }

    void print(std::ostream& os, int dim, int64_t offset, int indent) const {
        const int ndim = shape.size();
        int64_t stride = 1;
        for (int d = dim + 1; d < ndim; ++d)
            stride *= shape[d];
        os << '[';
        const auto pos = positions(shape[dim]);
        if (dim == ndim - 1) {
            const int per_line = std::max(1, (kLineWidth - indent) / (fmt.width + 2));
            int on_line = 0;
            for (size_t k = 0; k < pos.size(); ++k) {
                if (k) {
                    os << ',';
                    if (++on_line >= per_line) {
                        os << '\n' << std::string(indent, ' ');
                        on_line = 0;
                    } else {
                        os << ' ';
                    }
                }
                if (pos[k] < 0) {
                    os << "...";
                    continue;
                }
                const std::string s = fmt.format(data[offset + pos[k]]);
                os << std::string(fmt.width - s.size(), ' ') << s;
            }
        } else {
            for (size_t k = 0; k < pos.size(); ++k) {
                if (k) {
                    os << ',' << std::string(ndim - dim - 1, '\n') << std::string(indent + 1, ' ');
                }
                if (pos[k] < 0) {
                    os << "...";
                    continue;
                }
                print(os, dim + 1, offset + pos[k] * stride, indent + 1);
            }
        }
        os << ']';
    }
};

} // namespace

std::string Tensor::str() const {
    if (!defined()) return "tensor(undefined)";
    autograd::NoGradGuard no_grad;
    const Tensor host = to(kCPU).detach();
    std::vector<double> values;
    if (host.dtype() == DType::Int64) {
        for (int64_t v : host.to_vector<int64_t>())
            values.push_back(static_cast<double>(v));
    } else {
        values = host.to_vector<double>();
    }
    const bool summarize = numel() > kThreshold;
    std::vector<double> shown = values;
    if (summarize) { // the formatter sees only what is printed, like PyTorch
        shown.clear();
        const int64_t n = static_cast<int64_t>(values.size());
        for (int64_t i = 0; i < std::min<int64_t>(n, kEdgeItems); ++i)
            shown.push_back(values[i]);
        for (int64_t i = std::max<int64_t>(0, n - kEdgeItems); i < n; ++i)
            shown.push_back(values[i]);
    }
    const Formatter fmt = make_formatter(shown, dtype());
    std::ostringstream os;
    os << "tensor(";
    if (dim() == 0) {
        os << fmt.format(values[0]);
    } else if (numel() == 0) {
        os << "[]";
    } else {
        Printer{values, shape(), fmt, summarize}.print(os, 0, 0, 7);
    }
    if (numel() == 0 && dim() != 1) os << ", size=" << shape().str();
    const bool default_dtype =
        dtype() == DType::Float32 || dtype() == DType::Int64 || dtype() == DType::Bool;
    if (!default_dtype) os << ", dtype=" << dtype_name(dtype());
    if (!device().is_cpu()) os << ", device='" << device().str() << "'";
    if (const auto fn = grad_fn())
        os << ", grad_fn=<" << fn->name() << '>';
    else if (requires_grad())
        os << ", requires_grad=True";
    os << ')';
    return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
    return os << t.str();
}

} // namespace myelin
