#pragma once
// Dropout masks from a counter-based stream: element i keeps its value when the upper 32 bits of
// SplitMix64(seed + (i + 1) * golden gamma) fall below (1 - p) * 2^32. The generator is drawn
// once per call (the seed), so a mask costs a few vector instructions per element instead of two
// Mersenne Twister draws, any slice of it can be computed on its own (the loops vectorise and
// split across threads), and the result does not depend on the thread count.
#include "backend/kernels/elementwise.h" // MYELIN_HD

#include <cmath>
#include <cstdint>

namespace myelin::kernels {

struct DropoutStream {
    uint64_t seed = 0;
    uint64_t threshold = 0; // keep when the 32-bit draw is below it; 2^32 keeps all
    double keep_scale = 1.0;

    DropoutStream(uint64_t s, double p)
        : seed(s), threshold(static_cast<uint64_t>(std::ldexp(1.0 - p, 32))),
          keep_scale(p < 1.0 ? 1.0 / (1.0 - p) : 0.0) {}

    // Whether element i is kept (SplitMix64's output function on the i-th counter value).
    MYELIN_HD bool keep(uint64_t i) const {
        uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ULL;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        z ^= z >> 31;
        return (z >> 32) < threshold;
    }
};

#ifndef __CUDACC__ // the CPU loops (the CUDA kernels call keep() per element)
// Enough elements per thread to pay for the OpenMP team.
inline constexpr int64_t kDropoutParallel = 65536;

// out[i] = x[i] * keep_scale when kept, else x[i] * 0 (as PyTorch's x * mask: NaN stays NaN);
// mask[i] = 1 when kept, else 0.
template <typename T>
void dropout_forward(const DropoutStream& s, const T* x, int64_t n, T* out, uint8_t* mask) {
    const T scale = static_cast<T>(s.keep_scale);
#pragma omp parallel for schedule(static) if (n >= kDropoutParallel)
    for (int64_t c = 0; c < n; c += 4096) {
        const int64_t end = c + 4096 < n ? c + 4096 : n;
#pragma omp simd
        for (int64_t i = c; i < end; ++i) {
            const bool k = s.keep(static_cast<uint64_t>(i));
            out[i] = x[i] * (k ? scale : T(0));
            mask[i] = k;
        }
    }
}

// dx[i] = g[i] * keep_scale where mask[i], else g[i] * 0.
template <typename T>
void dropout_backward(const DropoutStream& s, const T* g, const uint8_t* mask, int64_t n, T* dx) {
    const T scale = static_cast<T>(s.keep_scale);
#pragma omp parallel for simd schedule(static) if (n >= kDropoutParallel)
    for (int64_t i = 0; i < n; ++i)
        dx[i] = g[i] * (mask[i] ? scale : T(0));
}
#endif

} // namespace myelin::kernels
