// The CPU backend's 2-D pooling (nn_kernels.h): max (with PyTorch's flat per-plane indices,
// which double as the backward workspace, except for the common 2x2 / stride-2 window, which
// keeps a one-byte code), average and adaptive average. Plain nchw loops, one OpenMP task per
// plane or row: these ops are memory-bound, and the loops reproduce PyTorch's window and divisor
// rules exactly (ceil_mode, padding, count_include_pad, divisor_override, NaN propagation).
#include "backend/cpu/cpu_nn.h"
#include "backend/kernels/elementwise.h"
#include "backend/kernels/max_pool_2x2.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#include <immintrin.h>
#define MYELIN_POOL_AVX512 1
#endif

namespace myelin::backend {

namespace {

using PoolGeom = PoolGeometry;
using kernels::max_window_2x2;
using kernels::select_value;

constexpr int64_t kParallelWork = 16384;

// The common 2x2 / stride 2 window, unpadded. Each window's winner is kept as a one-byte code
// (bit 0: right column, bit 1: bottom row) instead of an int64 index: an eighth of the memory,
// and a backward that writes every input gradient once, densely, instead of zeroing and
// scattering. Rows are compared pairwise first, then the two row winners: the same result as
// PyTorch's scan (a, b, then the bottom row), where the first maximum wins ties and a NaN
// replaces the running maximum, so the last NaN in scan order wins. Branch-free (on real
// activations the comparisons are coin flips): the compiler vectorises wide rows, and the
// AVX-512 versions below take the short ones of small images.
bool is_2x2(const PoolGeom& g) {
    return g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0 &&
           g.dh == 1 && g.dw == 1 && 2 * g.OH <= g.H && 2 * g.OW <= g.W;
}

// One output row of the 2x2 pool: a, b from the top input row, d, e from the bottom one.
template <typename T>
void max_row_2x2(const T* __restrict r0, const T* __restrict r1, T* __restrict y,
                 uint8_t* __restrict code, int64_t OW) {
    for (int64_t ow = 0; ow < OW; ++ow)
        y[ow] = max_window_2x2(r0[2 * ow], r0[2 * ow + 1], r1[2 * ow], r1[2 * ow + 1], code[ow]);
}

template <typename T>
void max_row_backward_2x2(const T* __restrict gy, const uint8_t* __restrict code, T* __restrict g0,
                          T* __restrict g1, int64_t OW) {
    for (int64_t ow = 0; ow < OW; ++ow) {
        const T v = gy[ow];
        const uint8_t c = code[ow];
        g0[2 * ow] = select_value(c == 0, v, T(0));
        g0[2 * ow + 1] = select_value(c == 1, v, T(0));
        g1[2 * ow] = select_value(c == 2, v, T(0));
        g1[2 * ow + 1] = select_value(c == 3, v, T(0));
    }
}

#ifdef MYELIN_POOL_AVX512
// The same two rows with AVX-512, 16 outputs at a time. Rows of pooled activations are short
// (14 or 7 outputs for a 28x28 image), too short for the compiler's vectorised loop, so the
// tails are handled with masks instead: masked-off lanes are neither read nor written.
struct Lanes16 {
    __mmask16 out, in_lo, in_hi; // outputs, and the 32 inputs of two rows' pairs split in two
    explicit Lanes16(int64_t n) {
        out = static_cast<__mmask16>((1u << n) - 1);
        in_lo = static_cast<__mmask16>(n >= 8 ? 0xFFFFu : (1u << (2 * n)) - 1);
        in_hi = static_cast<__mmask16>(n > 8 ? (1u << (2 * n - 16)) - 1 : 0u);
    }
};

inline __m512i lane_index(int first, int step, int mix) { // lanes first, first + step, ...
    alignas(64) int32_t v[16];
    for (int i = 0; i < 16; ++i)
        v[i] = mix ? (i % 2 ? 16 : 0) + first + i / 2 : first + step * i;
    return _mm512_load_si512(v);
}

template <>
void max_row_2x2<float>(const float* __restrict r0, const float* __restrict r1, float* __restrict y,
                        uint8_t* __restrict code, int64_t OW) {
    static const __m512i even = lane_index(0, 2, 0), odd = lane_index(1, 2, 0);
    const auto larger = [](__m512 cand, __m512 cur) { // PyTorch's cand > cur || isnan(cand)
        return static_cast<__mmask16>(_mm512_cmp_ps_mask(cand, cur, _CMP_GT_OQ) |
                                      _mm512_cmp_ps_mask(cand, cand, _CMP_UNORD_Q));
    };
    for (int64_t ow = 0; ow < OW; ow += 16) {
        const Lanes16 m(std::min<int64_t>(16, OW - ow));
        __m512 left[2], right[2];
        const float* rows[2] = {r0 + 2 * ow, r1 + 2 * ow};
        for (int r = 0; r < 2; ++r) {
            const __m512 lo = _mm512_maskz_loadu_ps(m.in_lo, rows[r]);
            const __m512 hi = _mm512_maskz_loadu_ps(m.in_hi, rows[r] + 16);
            left[r] = _mm512_permutex2var_ps(lo, even, hi);
            right[r] = _mm512_permutex2var_ps(lo, odd, hi);
        }
        const __mmask16 right_top = larger(right[0], left[0]),
                        right_bottom = larger(right[1], left[1]);
        const __m512 top = _mm512_mask_blend_ps(right_top, left[0], right[0]);
        const __m512 bottom = _mm512_mask_blend_ps(right_bottom, left[1], right[1]);
        const __mmask16 below = larger(bottom, top);
        _mm512_mask_storeu_ps(y + ow, m.out, _mm512_mask_blend_ps(below, top, bottom));
        const auto bit0 = static_cast<__mmask16>((below & right_bottom) | (~below & right_top));
        const __m128i c = _mm_add_epi8(_mm_maskz_mov_epi8(bit0, _mm_set1_epi8(1)),
                                       _mm_maskz_mov_epi8(below, _mm_set1_epi8(2)));
        _mm_mask_storeu_epi8(code + ow, m.out, c);
    }
}

template <>
void max_row_backward_2x2<float>(const float* __restrict gy, const uint8_t* __restrict code,
                                 float* __restrict g0, float* __restrict g1, int64_t OW) {
    static const __m512i lo_pairs = lane_index(0, 0, 1), hi_pairs = lane_index(8, 0, 1);
    for (int64_t ow = 0; ow < OW; ow += 16) {
        const Lanes16 m(std::min<int64_t>(16, OW - ow));
        const __m512 v = _mm512_maskz_loadu_ps(m.out, gy + ow);
        const __m512i c = _mm512_maskz_cvtepu8_epi32(m.out, _mm_maskz_loadu_epi8(m.out, code + ow));
        const auto at = [&](int k) {
            return _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(c, _mm512_set1_epi32(k)), v);
        };
        float* rows[2] = {g0 + 2 * ow, g1 + 2 * ow};
        for (int r = 0; r < 2; ++r) {
            const __m512 left = at(2 * r), right = at(2 * r + 1);
            _mm512_mask_storeu_ps(rows[r], m.in_lo, _mm512_permutex2var_ps(left, lo_pairs, right));
            _mm512_mask_storeu_ps(rows[r] + 16, m.in_hi,
                                  _mm512_permutex2var_ps(left, hi_pairs, right));
        }
    }
}
#endif

template <typename T> void max_forward_2x2(const T* x, T* y, uint8_t* code, const PoolGeom& g) {
    const int64_t H = g.H, W = g.W, OH = g.OH, OW = g.OW, rows = g.planes * OH;
#pragma omp parallel for schedule(static) if (rows * OW * 4 > kParallelWork)
    for (int64_t r = 0; r < rows; ++r) {
        const T* r0 = x + (r / OH) * H * W + 2 * (r % OH) * W;
        max_row_2x2(r0, r0 + W, y + r * OW, code + r * OW, OW);
    }
}

// PyTorch's flat per-plane indices from the window codes (for max_pool2d_with_indices).
void indices_from_codes(const uint8_t* code, int64_t* idx, const PoolGeom& g) {
    const int64_t OH = g.OH, OW = g.OW, rows = g.planes * OH;
#pragma omp parallel for schedule(static) if (rows * OW > kParallelWork)
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t base = 2 * (r % OH) * g.W;
        for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t c = code[r * OW + ow];
            idx[r * OW + ow] = base + 2 * ow + (c & 1) + (c >> 1) * g.W;
        }
    }
}

template <typename T>
void max_backward_2x2(const T* gy, const uint8_t* code, T* gx, const PoolGeom& g) {
    const int64_t H = g.H, W = g.W, OH = g.OH, OW = g.OW;
#pragma omp parallel for schedule(static) if (g.planes * H * W > kParallelWork)
    for (int64_t p = 0; p < g.planes; ++p) {
        T* plane = gx + p * H * W;
        for (int64_t oh = 0; oh < OH; ++oh) {
            T* g0 = plane + 2 * oh * W;
            const int64_t r = p * OH + oh;
            max_row_backward_2x2(gy + r * OW, code + r * OW, g0, g0 + W, OW);
            for (int64_t w = 2 * OW; w < W; ++w) // an odd width's last column is in no window
                g0[w] = g0[W + w] = T(0);
        }
        for (int64_t i = 2 * OH * W; i < H * W; ++i) // likewise an odd height's last row
            plane[i] = T(0);
    }
}

template <typename T> void max_forward(const T* x, T* y, int64_t* idx, const PoolGeom& g) {
    const int64_t HW = g.H * g.W, OHW = g.OH * g.OW;
#pragma omp parallel for if (g.planes * OHW * g.kh * g.kw > kParallelWork)
    for (int64_t p = 0; p < g.planes; ++p) {
        const T* xp = x + p * HW;
        for (int64_t oh = 0; oh < g.OH; ++oh) {
            int64_t ih0 = oh * g.sh - g.ph;
            const int64_t ih1 = std::min(ih0 + (g.kh - 1) * g.dh + 1, g.H);
            while (ih0 < 0)
                ih0 += g.dh;
            for (int64_t ow = 0; ow < g.OW; ++ow) {
                int64_t iw0 = ow * g.sw - g.pw;
                const int64_t iw1 = std::min(iw0 + (g.kw - 1) * g.dw + 1, g.W);
                while (iw0 < 0)
                    iw0 += g.dw;
                int64_t best = ih0 * g.W + iw0;
                T maxval = -std::numeric_limits<T>::infinity();
                for (int64_t ih = ih0; ih < ih1; ih += g.dh)
                    for (int64_t iw = iw0; iw < iw1; iw += g.dw) {
                        const int64_t i = ih * g.W + iw;
                        const T v = xp[i];
                        if (v > maxval || std::isnan(v)) {
                            maxval = v;
                            best = i;
                        }
                    }
                y[p * OHW + oh * g.OW + ow] = maxval;
                if (idx) idx[p * OHW + oh * g.OW + ow] = best;
            }
        }
    }
}

template <typename T> void max_backward(const T* gy, const int64_t* idx, T* gx, const PoolGeom& g) {
    const int64_t HW = g.H * g.W, OHW = g.OH * g.OW;
#pragma omp parallel for if (g.planes * OHW > kParallelWork)
    for (int64_t p = 0; p < g.planes; ++p) {
        T* gp = gx + p * HW;
        for (int64_t i = 0; i < HW; ++i)
            gp[i] = T(0);
        const T* gyp = gy + p * OHW;
        const int64_t* ip = idx + p * OHW;
        for (int64_t i = 0; i < OHW; ++i)
            gp[ip[i]] += gyp[i];
    }
}

// The window [h0, h1) x [w0, w1) of output (oh, ow) of an average pool, and its divisor.
struct AvgWindow {
    int64_t h0, h1, w0, w1;
    double divisor;
};

AvgWindow avg_window(const PoolGeom& g, int64_t oh, int64_t ow, AvgDivisor d) {
    int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
    int64_t h1 = std::min(h0 + g.kh, g.H + g.ph), w1 = std::min(w0 + g.kw, g.W + g.pw);
    const int64_t pool_size = (h1 - h0) * (w1 - w0);
    h0 = std::max<int64_t>(h0, 0), w0 = std::max<int64_t>(w0, 0);
    h1 = std::min(h1, g.H), w1 = std::min(w1, g.W);
    const int64_t inside = std::max<int64_t>(0, h1 - h0) * std::max<int64_t>(0, w1 - w0);
    const int64_t divisor = d.override_by         ? d.override_by
                            : d.count_include_pad ? pool_size
                                                  : inside;
    return {h0, h1, w0, w1, static_cast<double>(divisor)};
}

template <typename T> void avg_forward(const T* x, T* y, const PoolGeom& g, AvgDivisor d) {
    const int64_t HW = g.H * g.W, OHW = g.OH * g.OW;
#pragma omp parallel for if (g.planes * OHW * g.kh * g.kw > kParallelWork)
    for (int64_t p = 0; p < g.planes; ++p)
        for (int64_t oh = 0; oh < g.OH; ++oh)
            for (int64_t ow = 0; ow < g.OW; ++ow) {
                const AvgWindow win = avg_window(g, oh, ow, d);
                T& out = y[p * OHW + oh * g.OW + ow];
                if (win.h0 >= win.h1 || win.w0 >= win.w1) {
                    out = T(0);
                    continue;
                }
                double acc = 0.0;
                for (int64_t ih = win.h0; ih < win.h1; ++ih)
                    for (int64_t iw = win.w0; iw < win.w1; ++iw)
                        acc += x[p * HW + ih * g.W + iw];
                out = static_cast<T>(acc / win.divisor);
            }
}

template <typename T> void avg_backward(const T* gy, T* gx, const PoolGeom& g, AvgDivisor d) {
    const int64_t HW = g.H * g.W, OHW = g.OH * g.OW;
#pragma omp parallel for if (g.planes * OHW * g.kh * g.kw > kParallelWork)
    for (int64_t p = 0; p < g.planes; ++p) {
        T* gp = gx + p * HW;
        for (int64_t i = 0; i < HW; ++i)
            gp[i] = T(0);
        for (int64_t oh = 0; oh < g.OH; ++oh)
            for (int64_t ow = 0; ow < g.OW; ++ow) {
                const AvgWindow win = avg_window(g, oh, ow, d);
                if (win.h0 >= win.h1 || win.w0 >= win.w1) continue;
                const T v = static_cast<T>(gy[p * OHW + oh * g.OW + ow] / win.divisor);
                for (int64_t ih = win.h0; ih < win.h1; ++ih)
                    for (int64_t iw = win.w0; iw < win.w1; ++iw)
                        gp[ih * g.W + iw] += v;
            }
    }
}

int64_t start_index(int64_t a, int64_t b, int64_t c) {
    return (a * c) / b;
}
int64_t end_index(int64_t a, int64_t b, int64_t c) {
    return ((a + 1) * c + b - 1) / b;
}

template <typename T> void adaptive_forward(const T* x, T* y, const PoolGeom& g) {
    const int64_t HW = g.H * g.W, OHW = g.OH * g.OW;
#pragma omp parallel for if (g.planes * HW > kParallelWork)
    for (int64_t p = 0; p < g.planes; ++p)
        for (int64_t oh = 0; oh < g.OH; ++oh) {
            const int64_t h0 = start_index(oh, g.OH, g.H), h1 = end_index(oh, g.OH, g.H);
            for (int64_t ow = 0; ow < g.OW; ++ow) {
                const int64_t w0 = start_index(ow, g.OW, g.W), w1 = end_index(ow, g.OW, g.W);
                double acc = 0.0;
                for (int64_t ih = h0; ih < h1; ++ih)
                    for (int64_t iw = w0; iw < w1; ++iw)
                        acc += x[p * HW + ih * g.W + iw];
                y[p * OHW + oh * g.OW + ow] =
                    static_cast<T>(acc / static_cast<double>((h1 - h0) * (w1 - w0)));
            }
        }
}

template <typename T> void adaptive_backward(const T* gy, T* gx, const PoolGeom& g) {
    const int64_t HW = g.H * g.W, OHW = g.OH * g.OW;
#pragma omp parallel for if (g.planes * HW > kParallelWork)
    for (int64_t p = 0; p < g.planes; ++p) {
        T* gp = gx + p * HW;
        for (int64_t i = 0; i < HW; ++i)
            gp[i] = T(0);
        for (int64_t oh = 0; oh < g.OH; ++oh) {
            const int64_t h0 = start_index(oh, g.OH, g.H), h1 = end_index(oh, g.OH, g.H);
            for (int64_t ow = 0; ow < g.OW; ++ow) {
                const int64_t w0 = start_index(ow, g.OW, g.W), w1 = end_index(ow, g.OW, g.W);
                const T v = static_cast<T>(gy[p * OHW + oh * g.OW + ow] /
                                           static_cast<double>((h1 - h0) * (w1 - w0)));
                for (int64_t ih = h0; ih < h1; ++ih)
                    for (int64_t iw = w0; iw < w1; ++iw)
                        gp[ih * g.W + iw] += v;
            }
        }
    }
}

// Dispatches a templated kernel on float32 / float64.
template <typename F> void dispatch(DType t, F&& f) {
    if (t == DType::Float32)
        f(float{});
    else
        f(double{});
}

template <typename T> const T* in(const View& v) {
    return static_cast<const T*>(v.data);
}
template <typename T> T* out(const View& v) {
    return static_cast<T*>(v.data);
}

} // namespace

bool CpuNnKernels::max_pool_uses_codes(const PoolGeometry& g) const {
    return is_2x2(g);
}

void CpuNnKernels::max_pool_forward(const PoolGeometry& g, const View& x, const View& y,
                                    const View* indices, const View* codes) {
    dispatch(x.dtype, [&](auto z) {
        using T = decltype(z);
        if (codes) {
            max_forward_2x2(in<T>(x), out<T>(y), out<uint8_t>(*codes), g);
            if (indices) indices_from_codes(in<uint8_t>(*codes), out<int64_t>(*indices), g);
        } else {
            max_forward(in<T>(x), out<T>(y), indices ? out<int64_t>(*indices) : nullptr, g);
        }
    });
}

void CpuNnKernels::max_pool_backward(const PoolGeometry& g, const View& grad_y, const View* indices,
                                     const View* codes, const View& grad_x) {
    dispatch(grad_y.dtype, [&](auto z) {
        using T = decltype(z);
        if (codes)
            max_backward_2x2(in<T>(grad_y), in<uint8_t>(*codes), out<T>(grad_x), g);
        else
            max_backward(in<T>(grad_y), in<int64_t>(*indices), out<T>(grad_x), g);
    });
}

void CpuNnKernels::avg_pool_forward(const PoolGeometry& g, AvgDivisor d, const View& x,
                                    const View& y) {
    dispatch(x.dtype, [&](auto z) {
        using T = decltype(z);
        avg_forward(in<T>(x), out<T>(y), g, d);
    });
}

void CpuNnKernels::avg_pool_backward(const PoolGeometry& g, AvgDivisor d, const View& grad_y,
                                     const View& grad_x) {
    dispatch(grad_y.dtype, [&](auto z) {
        using T = decltype(z);
        avg_backward(in<T>(grad_y), out<T>(grad_x), g, d);
    });
}

void CpuNnKernels::adaptive_avg_pool_forward(const PoolGeometry& g, const View& x, const View& y) {
    dispatch(x.dtype, [&](auto z) {
        using T = decltype(z);
        adaptive_forward(in<T>(x), out<T>(y), g);
    });
}

void CpuNnKernels::adaptive_avg_pool_backward(const PoolGeometry& g, const View& grad_y,
                                              const View& grad_x) {
    dispatch(grad_y.dtype, [&](auto z) {
        using T = decltype(z);
        adaptive_backward(in<T>(grad_y), out<T>(grad_x), g);
    });
}

} // namespace myelin::backend
