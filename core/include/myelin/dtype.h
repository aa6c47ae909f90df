#pragma once
// Element types. Compute happens in float32/float64 (and int64 for integer math); float16 and
// bfloat16 are storage types converted on the fly.
#include <cstdint>
#include <cstring>

namespace myelin {

enum class DType : uint8_t { Float32, Float64, Float16, BFloat16, Int64, UInt8, Bool };
inline constexpr int kNumDTypes = 7;

const char* dtype_name(DType t); // "float32", ...
size_t dtype_size(DType t);
inline bool is_floating(DType t) {
    return t <= DType::BFloat16;
}
inline bool is_integral(DType t, bool include_bool = true) {
    return t == DType::Int64 || t == DType::UInt8 || (include_bool && t == DType::Bool);
}
// PyTorch's type promotion for two tensor operands.
DType promote_types(DType a, DType b);

// IEEE half, stored as bits; conversions round to nearest even like PyTorch.
struct Half {
    uint16_t bits = 0;
    Half() = default;
    Half(float f) : bits(from_float(f)) {}
    operator float() const { return to_float(bits); }
    static uint16_t from_float(float f);
    static float to_float(uint16_t h);
};

// bfloat16: the upper half of a float32, rounded to nearest even.
struct BFloat16 {
    uint16_t bits = 0;
    BFloat16() = default;
    BFloat16(float f) : bits(from_float(f)) {}
    operator float() const { return to_float(bits); }
    static uint16_t from_float(float f) {
        uint32_t u;
        std::memcpy(&u, &f, 4);
        if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0; // NaN stays NaN
        u += 0x7fffu + ((u >> 16) & 1u);
        return static_cast<uint16_t>(u >> 16);
    }
    static float to_float(uint16_t b) {
        uint32_t u = static_cast<uint32_t>(b) << 16;
        float f;
        std::memcpy(&f, &u, 4);
        return f;
    }
};

} // namespace myelin
