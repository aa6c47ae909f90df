#pragma once
// Shared pieces of the CUDA kernels: strided geometry passed by value, element loads and stores
// that convert between the stored dtypes exactly as the CPU backend's `convert` does, launch
// sizes and error checks.
#include "backend/backend.h"

#include <myelin/error.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace myelin::backend::cuda {

#define MYELIN_GRID_LOOP(i, n)                                                                     \
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);                      \
         i += int64_t(gridDim.x) * blockDim.x)

inline constexpr int kMaxOperands = 4;
inline constexpr int kThreads = 256;

// Up to four operands over one shape: element i's offset in operand o, in elements.
struct Geometry {
    int ndim = 0;
    int64_t numel = 1;
    int64_t shape[kMaxDims] = {};
    int64_t strides[kMaxOperands][kMaxDims] = {};

    __device__ int64_t offset(int op, int64_t i) const {
        int64_t off = 0;
        for (int d = ndim - 1; d >= 0; --d) {
            const int64_t coord = i % shape[d];
            i /= shape[d];
            off += coord * strides[op][d];
        }
        return off;
    }
};

// The geometry of views that all have views[0]'s shape (inputs broadcast with 0 strides).
inline Geometry make_geometry(std::initializer_list<const View*> views) {
    Geometry g;
    const View& first = **views.begin();
    g.ndim = first.ndim;
    for (int d = 0; d < first.ndim; ++d) {
        g.shape[d] = first.shape[d];
        g.numel *= first.shape[d];
    }
    int op = 0;
    for (const View* v : views) {
        for (int d = 0; d < first.ndim; ++d)
            g.strides[op][d] = v->strides[d];
        ++op;
    }
    return g;
}

inline unsigned blocks_for(int64_t n) {
    const int64_t blocks = (n + kThreads - 1) / kThreads;
    return unsigned(blocks < 65535 * 32 ? blocks : 65535 * 32); // grid-stride loops cover the rest
}

// Device scratch memory from the backend's caching allocator, returned on scope exit (work is
// ordered on the default stream, so a later user of a freed block waits for this one's work).
class Scratch {
  public:
    Scratch(Backend& device, size_t bytes)
        : device_(device), bytes_(bytes), data_(bytes ? device.allocate(bytes) : nullptr) {}
    ~Scratch() {
        if (data_) device_.deallocate(data_, bytes_);
    }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    template <typename T> T* as() const { return static_cast<T*>(data_); }

  private:
    Backend& device_;
    size_t bytes_;
    void* data_;
};

inline void check_launch(const char* what) {
    const cudaError_t error = cudaGetLastError();
    if (error != cudaSuccess)
        throw DeviceError(std::string("CUDA ") + what + ": " + cudaGetErrorString(error));
}

// Loads as the CPU converts: integer and bool sources as int64, floating ones as double
// (exact for every floating dtype).
__device__ inline bool stored_as_int(DType t) {
    return t == DType::Int64 || t == DType::UInt8 || t == DType::Bool;
}
__device__ inline int64_t load_int(const char* p, DType t) {
    switch (t) {
    case DType::Int64:
        return *reinterpret_cast<const int64_t*>(p);
    case DType::UInt8:
        return *reinterpret_cast<const uint8_t*>(p);
    default:
        return *reinterpret_cast<const bool*>(p);
    }
}
__device__ inline double load_float(const char* p, DType t) {
    switch (t) {
    case DType::Float32:
        return *reinterpret_cast<const float*>(p);
    case DType::Float64:
        return *reinterpret_cast<const double*>(p);
    case DType::Float16:
        return __half2float(*reinterpret_cast<const __half*>(p));
    case DType::BFloat16:
        return __bfloat162float(*reinterpret_cast<const __nv_bfloat16*>(p));
    default:
        return double(load_int(p, t));
    }
}
// Stores v into dtype t as the CPU converts: v is a double holding a floating source's value or
// an int64 holding an integer or bool one. Half types go through float first, as the CPU's
// Half(float(v)); bool is "nonzero" (for a double: in float or in double, as the CPU's).
template <typename V> __device__ inline void store_value(char* p, DType t, V v) {
    switch (t) {
    case DType::Float32:
        *reinterpret_cast<float*>(p) = float(v);
        break;
    case DType::Float64:
        *reinterpret_cast<double*>(p) = double(v);
        break;
    case DType::Float16:
        *reinterpret_cast<__half*>(p) = __float2half_rn(float(v));
        break;
    case DType::BFloat16:
        *reinterpret_cast<__nv_bfloat16*>(p) = __float2bfloat16_rn(float(v));
        break;
    case DType::Int64:
        *reinterpret_cast<int64_t*>(p) = int64_t(v);
        break;
    case DType::UInt8:
        *reinterpret_cast<uint8_t*>(p) = uint8_t(int64_t(v));
        break;
    case DType::Bool:
        *reinterpret_cast<bool*>(p) = float(v) != 0.0f || v != V(0);
        break;
    }
}

inline size_t element_size(DType t) {
    return dtype_size(t);
}

} // namespace myelin::backend::cuda
