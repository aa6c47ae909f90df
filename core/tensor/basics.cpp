// Dims, dtypes, devices, version: the small vocabulary types.
#include <myelin/device.h>
#include <myelin/dims.h>
#include <myelin/dtype.h>
#include <myelin/error.h>
#include <myelin/version.h>

#include "backend/backend.h"

#include <cblas.h>
#include <omp.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include <algorithm>
#include <cstring>

namespace myelin {

// --- Dims ----------------------------------------------------------------------------------------

void Dims::assign(const int64_t* p, size_t n) {
    if (n > static_cast<size_t>(kMaxDims))
        throw ShapeError("tensors support at most " + std::to_string(kMaxDims) +
                         " dimensions, got " + std::to_string(n));
    n_ = static_cast<int>(n);
    std::copy(p, p + n, v_);
}
Dims Dims::filled(int n, int64_t value) {
    Dims d;
    d.resize(n, value);
    return d;
}
void Dims::push_back(int64_t x) {
    if (n_ >= kMaxDims)
        throw ShapeError("tensors support at most " + std::to_string(kMaxDims) + " dimensions");
    v_[n_++] = x;
}
void Dims::insert(int pos, int64_t x) {
    if (n_ >= kMaxDims)
        throw ShapeError("tensors support at most " + std::to_string(kMaxDims) + " dimensions");
    for (int i = n_; i > pos; --i)
        v_[i] = v_[i - 1];
    v_[pos] = x;
    ++n_;
}
void Dims::erase(int pos) {
    for (int i = pos; i + 1 < n_; ++i)
        v_[i] = v_[i + 1];
    --n_;
}
void Dims::resize(int n, int64_t fill) {
    if (n > kMaxDims)
        throw ShapeError("tensors support at most " + std::to_string(kMaxDims) + " dimensions");
    for (int i = n_; i < n; ++i)
        v_[i] = fill;
    n_ = n;
}
int64_t Dims::numel() const {
    int64_t p = 1;
    for (int i = 0; i < n_; ++i)
        p *= v_[i];
    return p;
}
std::string Dims::str() const {
    std::string s = "[";
    for (int i = 0; i < n_; ++i)
        s += (i ? ", " : "") + std::to_string(v_[i]);
    return s + "]";
}
bool Dims::operator==(const Dims& o) const {
    return n_ == o.n_ && std::equal(v_, v_ + n_, o.v_);
}

// --- dtypes --------------------------------------------------------------------------------------

const char* dtype_name(DType t) {
    switch (t) {
    case DType::Float32:
        return "float32";
    case DType::Float64:
        return "float64";
    case DType::Float16:
        return "float16";
    case DType::BFloat16:
        return "bfloat16";
    case DType::Int64:
        return "int64";
    case DType::UInt8:
        return "uint8";
    case DType::Bool:
        return "bool";
    }
    return "unknown";
}

size_t dtype_size(DType t) {
    switch (t) {
    case DType::Float64:
    case DType::Int64:
        return 8;
    case DType::Float32:
        return 4;
    case DType::Float16:
    case DType::BFloat16:
        return 2;
    case DType::UInt8:
    case DType::Bool:
        return 1;
    }
    return 1;
}

DType promote_types(DType a, DType b) {
    if (a == b) return a;
    const auto rank = [](DType t) {
        switch (t) {
        case DType::Bool:
            return 0;
        case DType::UInt8:
            return 1;
        case DType::Int64:
            return 2;
        case DType::Float16:
        case DType::BFloat16:
            return 3;
        case DType::Float32:
            return 4;
        case DType::Float64:
            return 5;
        }
        return 0;
    };
    // float16 with bfloat16 has no common 16-bit type: PyTorch gives float32.
    if ((a == DType::Float16 && b == DType::BFloat16) ||
        (a == DType::BFloat16 && b == DType::Float16))
        return DType::Float32;
    return rank(a) >= rank(b) ? a : b;
}

uint16_t Half::from_float(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7fffffffu;
    if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u); // overflow -> inf
    if (abs < 0x38800000u) { // subnormal half (or zero): round to nearest even in 2^-24 units
        float a;
        std::memcpy(&a, &abs, 4);
        const float scaled = a * 16777216.0f; // 2^24
        uint32_t m = static_cast<uint32_t>(scaled);
        const float rem = scaled - static_cast<float>(m);
        if (rem > 0.5f || (rem == 0.5f && (m & 1u))) ++m;
        return static_cast<uint16_t>(sign | m);
    }
    // normal: rebias exponent, round mantissa to nearest even
    uint32_t h = ((abs - 0x38000000u) >> 13);
    const uint32_t rem = abs & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
}

float Half::to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { // subnormal
            const float v = static_cast<float>(man) * (1.0f / 16777216.0f);
            std::memcpy(&bits, &v, 4);
            bits |= sign;
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

// --- devices -------------------------------------------------------------------------------------

const char* device_type_name(DeviceType t) {
    return t == DeviceType::CPU ? "CPU" : "CUDA";
}

std::string Device::str() const {
    return type == DeviceType::CPU ? "cpu" : "cuda:" + std::to_string(index);
}

std::vector<BackendInfo> available_backends() {
    std::vector<BackendInfo> out;
    for (int t = 0; t < kNumDeviceTypes; ++t)
        if (backend::Backend* b = backend::find(static_cast<DeviceType>(t)))
            out.push_back(b->info());
    return out;
}

std::string backends_summary() {
    std::string s;
    for (const BackendInfo& b : available_backends())
        s += (s.empty() ? "" : " · ") + b.name + " (" + b.details + ")";
    return s;
}

bool is_available(DeviceType t) {
    return backend::find(t) != nullptr;
}

MemoryStats memory_stats(DeviceType t) {
    backend::Backend* b = backend::find(t);
    return b ? b->memory_stats() : MemoryStats{};
}

void reset_peak_memory_stats(DeviceType t) {
    if (backend::Backend* b = backend::find(t)) b->reset_peak_memory_stats();
}

void empty_cache(DeviceType t) {
    if (backend::Backend* b = backend::find(t)) b->empty_cache();
}

void set_num_threads(int n) {
    if (n < 1)
        throw Error("set_num_threads(): expected a positive thread count, got " +
                    std::to_string(n));
    omp_set_num_threads(n);
    openblas_set_num_threads(n);
}

int get_num_threads() {
    return omp_get_max_threads();
}

#if defined(__x86_64__) || defined(__i386__)
namespace {
constexpr unsigned kFlushToZero = 1u << 15, kDenormalsAreZero = 1u << 6; // MXCSR bits
constexpr unsigned kFlushDenormal = kFlushToZero | kDenormalsAreZero;
void set_flush_denormal_here(bool on) {
    const unsigned csr = _mm_getcsr();
    _mm_setcsr(on ? csr | kFlushDenormal : csr & ~kFlushDenormal);
}
} // namespace

bool set_flush_denormal(bool on) {
    set_flush_denormal_here(on);
    // MXCSR is per thread: the team's threads set their own (threads started later inherit the
    // starting thread's, which is set above).
#pragma omp parallel
    set_flush_denormal_here(on);
    return true;
}

bool flush_denormal() {
    return (_mm_getcsr() & kFlushDenormal) == kFlushDenormal;
}
#else
bool set_flush_denormal(bool) {
    return false;
}

bool flush_denormal() {
    return false;
}
#endif

const char* version() {
    return MYELIN_VERSION_STRING;
}

} // namespace myelin
