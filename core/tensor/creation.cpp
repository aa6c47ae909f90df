// Factories and random ops (one Mersenne Twister generator, seeded like torch.manual_seed).
#include "autograd/function.h"
#include "tensor/tensor_impl.h"

#include <myelin/generator.h>

#include <cmath>
#include <cstring>
#include <sstream>

namespace myelin {

using namespace detail;

// --- generator
// -------------------------------------------------------------------------------------

void Generator::manual_seed(uint64_t seed) {
    seed_ = seed;
    engine_.seed(static_cast<std::mt19937::result_type>(seed));
    has_cached_normal_ = false;
}

std::string Generator::get_state() const {
    std::ostringstream os;
    os.precision(17);
    os << "mt19937 " << seed_ << ' ' << has_cached_normal_ << ' ' << cached_normal_ << ' '
       << engine_;
    return os.str();
}

void Generator::set_state(const std::string& state) {
    std::istringstream is(state);
    std::string tag;
    uint64_t seed = 0;
    bool has = false;
    double cached = 0;
    std::mt19937 engine;
    is >> tag >> seed >> has >> cached >> engine;
    if (tag != "mt19937" || is.fail())
        throw Error("Generator::set_state(): not a generator state written by get_state()");
    seed_ = seed;
    has_cached_normal_ = has;
    cached_normal_ = cached;
    engine_ = engine;
}

uint64_t Generator::next_u64() {
    const uint64_t hi = next_u32();
    return (hi << 32) | next_u32();
}
float Generator::uniform_float() {
    return static_cast<float>(next_u32() & ((1u << 24) - 1)) * (1.0f / (1u << 24));
}
double Generator::uniform_double() {
    return static_cast<double>(next_u64() & ((uint64_t{1} << 53) - 1)) *
           (1.0 / (uint64_t{1} << 53));
}
double Generator::normal() {
    if (has_cached_normal_) {
        has_cached_normal_ = false;
        return cached_normal_;
    }
    const double u1 = 1.0 - uniform_double(); // (0, 1]: log stays finite
    const double u2 = uniform_double();
    const double r = std::sqrt(-2.0 * std::log(u1));
    cached_normal_ = r * std::sin(2.0 * M_PI * u2);
    has_cached_normal_ = true;
    return r * std::cos(2.0 * M_PI * u2);
}
uint64_t Generator::below(uint64_t n) {
    if (n == 0) return 0;
    // Rejection sampling: no modulo bias.
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t v;
    do
        v = next_u64();
    while (v >= limit);
    return v % n;
}

Generator& default_generator() {
    static Generator gen;
    return gen;
}
void manual_seed(uint64_t seed) {
    default_generator().manual_seed(seed);
}

// --- factories
// ---------------------------------------------------------------------------------------

namespace {
Tensor finish(Tensor t, const TensorOptions& opts) {
    if (opts.requires_grad) t.requires_grad_(true);
    return t;
}
Tensor filled(const Dims& shape, double v, const TensorOptions& opts) {
    Tensor t = make_tensor(shape, opts.dtype, opts.device);
    backend_for(t).fill(view_of(t), v);
    return finish(t, opts);
}
// Builds on the CPU, then moves to the requested device.
Tensor host_then_device(Tensor host, const TensorOptions& opts) {
    if (!opts.device.is_cpu()) host = host.to(opts.device);
    return finish(host, opts);
}
} // namespace

Tensor empty(const Dims& shape, TensorOptions opts) {
    return finish(make_tensor(shape, opts.dtype, opts.device), opts);
}
Tensor zeros(const Dims& shape, TensorOptions opts) {
    return filled(shape, 0.0, opts);
}
Tensor ones(const Dims& shape, TensorOptions opts) {
    return filled(shape, 1.0, opts);
}
Tensor full(const Dims& shape, double value, TensorOptions opts) {
    return filled(shape, value, opts);
}
Tensor scalar_tensor(double value, TensorOptions opts) {
    return filled({}, value, opts);
}
Tensor empty_like(const Tensor& t) {
    return empty(t.shape(), t.options());
}
Tensor zeros_like(const Tensor& t) {
    return zeros(t.shape(), t.options());
}
Tensor ones_like(const Tensor& t) {
    return ones(t.shape(), t.options());
}
Tensor full_like(const Tensor& t, double value) {
    return full(t.shape(), value, t.options());
}
Tensor rand_like(const Tensor& t, Generator* gen) {
    return rand(t.shape(), t.options(), gen);
}
Tensor randn_like(const Tensor& t, Generator* gen) {
    return randn(t.shape(), t.options(), gen);
}

Tensor arange(double end, std::optional<TensorOptions> opts) {
    return arange(0.0, end, 1.0, opts);
}

Tensor arange(double start, double end, double step, std::optional<TensorOptions> opts) {
    if (step == 0) throw Error("arange(): step must be nonzero");
    if ((end - start) / step < 0)
        throw Error("arange(): upper bound and larger bound inconsistent with step sign");
    const bool integral =
        std::floor(start) == start && std::floor(end) == end && std::floor(step) == step;
    TensorOptions o = opts.value_or(TensorOptions(integral ? DType::Int64 : DType::Float32));
    const int64_t n = static_cast<int64_t>(std::ceil((end - start) / step));
    Tensor host = make_tensor({n}, DType::Float64, kCPU);
    double* p = host.data<double>();
    for (int64_t i = 0; i < n; ++i)
        p[i] = start + static_cast<double>(i) * step;
    return host_then_device(raw_convert(host, o.dtype), o);
}

Tensor linspace(double start, double end, int64_t steps, TensorOptions opts) {
    if (steps < 0) throw Error("linspace(): number of steps must be non-negative");
    Tensor host = make_tensor({steps}, DType::Float64, kCPU);
    double* p = host.data<double>();
    const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
    // Symmetric evaluation from both ends, as PyTorch does, so the last value is exactly `end`.
    const int64_t half = steps / 2;
    if (steps == 1) p[0] = start;
    for (int64_t i = 0; i < steps && steps > 1; ++i)
        p[i] = i < half ? start + step * static_cast<double>(i)
                        : end - step * static_cast<double>(steps - 1 - i);
    return host_then_device(raw_convert(host, opts.dtype), opts);
}

Tensor eye(int64_t n, int64_t m, TensorOptions opts) {
    if (m < 0) m = n;
    Tensor host = make_tensor({n, m}, DType::Float64, kCPU);
    double* p = host.data<double>();
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j)
            p[i * m + j] = i == j ? 1.0 : 0.0;
    return host_then_device(raw_convert(host, opts.dtype), opts);
}

Tensor from_blob(const void* data, DType src_dtype, const Dims& shape, TensorOptions opts) {
    Tensor host = make_tensor(shape, src_dtype, kCPU);
    if (host.numel())
        std::memcpy(host.data_ptr(), data,
                    static_cast<size_t>(host.numel()) * dtype_size(src_dtype));
    if (opts.dtype != src_dtype) host = raw_convert(host, opts.dtype);
    return host_then_device(host, opts);
}

template <typename T>
static Tensor from_values(const std::vector<T>& v, DType src, const Dims& shape,
                          TensorOptions opts) {
    if (static_cast<int64_t>(v.size()) != shape.numel())
        throw ShapeError("from_vector(): " + std::to_string(v.size()) +
                         " values cannot fill shape " + shape.str());
    return from_blob(v.data(), src, shape, opts);
}
Tensor from_vector(const std::vector<float>& v, const Dims& shape, TensorOptions opts) {
    return from_values(v, DType::Float32, shape, opts);
}
Tensor from_vector(const std::vector<double>& v, const Dims& shape, TensorOptions opts) {
    return from_values(v, DType::Float64, shape, opts);
}
Tensor from_vector(const std::vector<int64_t>& v, const Dims& shape, TensorOptions opts) {
    return from_values(v, DType::Int64, shape, opts);
}

Tensor tensor(std::initializer_list<double> values, TensorOptions opts) {
    return from_vector(std::vector<double>(values), {static_cast<int64_t>(values.size())}, opts);
}

Tensor tensor(std::initializer_list<std::initializer_list<double>> rows, TensorOptions opts) {
    std::vector<double> flat;
    const int64_t cols = rows.size() ? static_cast<int64_t>(rows.begin()->size()) : 0;
    for (const auto& row : rows) {
        if (static_cast<int64_t>(row.size()) != cols)
            throw ShapeError("tensor(): expected rows of equal length " + std::to_string(cols) +
                             ", got " + std::to_string(row.size()));
        flat.insert(flat.end(), row.begin(), row.end());
    }
    return from_vector(flat, {static_cast<int64_t>(rows.size()), cols}, opts);
}

// --- random
// ------------------------------------------------------------------------------------------

namespace {
Generator& pick(Generator* gen) {
    return gen ? *gen : default_generator();
}

template <typename Fill>
Tensor random_tensor(const Dims& shape, const TensorOptions& opts, Fill&& fill) {
    const bool f32 = opts.dtype != DType::Float64;
    Tensor host = make_tensor(shape, f32 ? DType::Float32 : DType::Float64, kCPU);
    const int64_t n = host.numel();
    if (f32) {
        float* p = host.data<float>();
        for (int64_t i = 0; i < n; ++i)
            p[i] = static_cast<float>(fill(true));
    } else {
        double* p = host.data<double>();
        for (int64_t i = 0; i < n; ++i)
            p[i] = fill(false);
    }
    if (host.dtype() != opts.dtype) host = raw_convert(host, opts.dtype);
    return host_then_device(host, opts);
}

void require_floating(const char* op, DType t) {
    if (!is_floating(t))
        throw DTypeError(std::string(op) + ": expected a floating point dtype, got " +
                         dtype_name(t));
}
} // namespace

Tensor rand(const Dims& shape, TensorOptions opts, Generator* gen) {
    require_floating("rand", opts.dtype);
    Generator& g = pick(gen);
    return random_tensor(shape, opts,
                         [&g](bool f32) { return f32 ? g.uniform_float() : g.uniform_double(); });
}

Tensor randn(const Dims& shape, TensorOptions opts, Generator* gen) {
    require_floating("randn", opts.dtype);
    Generator& g = pick(gen);
    return random_tensor(shape, opts, [&g](bool) { return g.normal(); });
}

Tensor randint(int64_t low, int64_t high, const Dims& shape, TensorOptions opts, Generator* gen) {
    if (high <= low)
        throw Error("randint(): expected low < high, got low=" + std::to_string(low) +
                    ", high=" + std::to_string(high));
    Generator& g = pick(gen);
    Tensor host = make_tensor(shape, DType::Int64, kCPU);
    int64_t* p = host.data<int64_t>();
    const uint64_t range = static_cast<uint64_t>(high - low);
    for (int64_t i = 0; i < host.numel(); ++i)
        p[i] = low + static_cast<int64_t>(g.below(range));
    if (opts.dtype != DType::Int64) host = raw_convert(host, opts.dtype);
    return host_then_device(host, opts);
}

Tensor randperm(int64_t n, TensorOptions opts, Generator* gen) {
    if (n < 0) throw Error("randperm(): n must be non-negative, got " + std::to_string(n));
    Generator& g = pick(gen);
    Tensor host = make_tensor({n}, DType::Int64, kCPU);
    int64_t* p = host.data<int64_t>();
    for (int64_t i = 0; i < n; ++i)
        p[i] = i;
    for (int64_t i = n - 1; i > 0; --i)
        std::swap(p[i], p[g.below(static_cast<uint64_t>(i + 1))]); // Fisher-Yates
    if (opts.dtype != DType::Int64) host = raw_convert(host, opts.dtype);
    return host_then_device(host, opts);
}

Tensor bernoulli(const Tensor& probabilities, Generator* gen) {
    require_floating("bernoulli", probabilities.dtype());
    Generator& g = pick(gen);
    const Tensor p = raw_convert(probabilities.to(kCPU).detach(), DType::Float64);
    Tensor host = make_tensor(p.shape(), DType::Float64, kCPU);
    const double* pp = p.data<double>();
    double* out = host.data<double>();
    for (int64_t i = 0; i < host.numel(); ++i) {
        if (!(pp[i] >= 0.0 && pp[i] <= 1.0))
            throw Error("bernoulli(): expected all probabilities in [0, 1], got " +
                        std::to_string(pp[i]) + " at flat index " + std::to_string(i));
        out[i] = g.uniform_double() < pp[i] ? 1.0 : 0.0;
    }
    TensorOptions o = probabilities.options();
    return host_then_device(raw_convert(host, o.dtype), o);
}

Tensor bernoulli(const Dims& shape, double p, TensorOptions opts, Generator* gen) {
    if (!(p >= 0.0 && p <= 1.0))
        throw Error("bernoulli(): expected p in [0, 1], got " + std::to_string(p));
    Generator& g = pick(gen);
    return random_tensor(shape, opts, [&g, p](bool) { return g.uniform_double() < p ? 1.0 : 0.0; });
}

Tensor& Tensor::uniform_(double from, double to, Generator* gen) {
    Generator& g = pick(gen);
    const Tensor r =
        random_tensor(shape(), TensorOptions(dtype()).with_device(device()), [&](bool f32) {
            return from + (to - from) * (f32 ? g.uniform_float() : g.uniform_double());
        });
    autograd::NoGradGuard no_grad;
    return copy_(r);
}

Tensor& Tensor::normal_(double mean, double std, Generator* gen) {
    Generator& g = pick(gen);
    const Tensor r = random_tensor(shape(), TensorOptions(dtype()).with_device(device()),
                                   [&](bool) { return mean + std * g.normal(); });
    autograd::NoGradGuard no_grad;
    return copy_(r);
}

// --- comparisons of whole tensors
// -------------------------------------------------------------------

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
    autograd::NoGradGuard no_grad;
    const Tensor x = raw_convert(a, DType::Float64), y = raw_convert(b, DType::Float64);
    const Dims shape = broadcast_shapes(x.shape(), y.shape());
    const Tensor xe = x.expand(shape).contiguous(), ye = y.expand(shape).contiguous();
    const double* p = xe.data<double>();
    const double* q = ye.data<double>();
    for (int64_t i = 0; i < xe.numel(); ++i) {
        if (std::isnan(p[i]) || std::isnan(q[i])) return false;
        if (p[i] == q[i]) continue;
        if (std::abs(p[i] - q[i]) > atol + rtol * std::abs(q[i])) return false;
    }
    return true;
}

bool equal(const Tensor& a, const Tensor& b) {
    if (!(a.shape() == b.shape())) return false;
    autograd::NoGradGuard no_grad;
    return sum(ne(a, b).to(DType::Int64)).item<int64_t>() == 0;
}

} // namespace myelin
