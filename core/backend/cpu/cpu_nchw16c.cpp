// nchw16c.h: layout-changing ReLU and max-pool kernels around oneDNN's blocked convolutions.
// Each has an AVX-512 path (16 channels are one register: a 16 x 16 transpose turns rows of one
// channel into vectors of 16 channels) and a scalar path with the same arithmetic.
#include "backend/cpu/nchw16c.h"
#include "backend/kernels/max_pool_2x2.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#include <immintrin.h>
#define MYELIN_NCHW16C_AVX512 1
#endif

namespace myelin::backend::nchw16c {

namespace {

#ifdef MYELIN_NCHW16C_AVX512
// r[i] lane j -> r[j] lane i (unpack pairs, then 4x4 blocks within 128-bit lanes, then lanes).
// (The maskz forms with every lane set: GCC 12 warns that the plain ones' undefined pass-through
// register may be used uninitialised.)
inline void transpose16(__m512 r[16]) {
    constexpr __mmask16 all = 0xFFFF;
    __m512 t[16];
    for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_maskz_unpacklo_ps(all, r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_maskz_unpackhi_ps(all, r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; ++i) {
        r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 4; ++j) {
            t[8 * i + j] = _mm512_maskz_shuffle_f32x4(all, r[8 * i + j], r[8 * i + 4 + j], 0x88);
            t[8 * i + 4 + j] =
                _mm512_maskz_shuffle_f32x4(all, r[8 * i + j], r[8 * i + 4 + j], 0xDD);
        }
    for (int j = 0; j < 8; ++j) {
        r[j] = _mm512_maskz_shuffle_f32x4(all, t[j], t[8 + j], 0x88);
        r[8 + j] = _mm512_maskz_shuffle_f32x4(all, t[j], t[8 + j], 0xDD);
    }
}

// (The maskz forms of conversions with every lane set, as in transpose16.)
constexpr __mmask16 all_lanes = 0xFFFF;

// The lanes [0, n) of 16.
inline __mmask16 first_lanes(int64_t n) {
    return static_cast<__mmask16>((1u << std::min<int64_t>(16, n)) - 1);
}

// cand replaces cur as a window's maximum: larger, or NaN (kernels::replaces_max, per lane).
inline __mmask16 replaces(__m512 cand, __m512 cur) {
    return static_cast<__mmask16>(_mm512_cmp_ps_mask(cand, cur, _CMP_GT_OQ) |
                                  _mm512_cmp_ps_mask(cand, cand, _CMP_UNORD_Q));
}
#endif

} // namespace

// ReLU's backward on the way into oneDNN's nChw16c layout: out = (y <= 0 ? 0 : gy: a NaN passes
// the gradient, as PyTorch's threshold_backward and our ReluBackward), gy and y nchw
// [N, C, HW] with C a multiple of 16, out [N, C/16, HW, 16]. The select is ReLU's backward
// (BinaryOp::ReluBackward); the layout change is a pure copy, as oneDNN's reorder. Each block of
// 16 channels is masked row by row (two sequential streams) into a per-thread buffer that stays in
// cache, then transposed 16 x 16 from there: reading the 32 rows side by side was slower.
void relu_backward_to_blocked(const float* gy, const float* y, float* out, int64_t N, int64_t C,
                              int64_t HW) {
    const int64_t blocks = N * (C / 16);
#pragma omp parallel if (blocks * HW * 16 > 32768)
    {
#ifdef MYELIN_NCHW16C_AVX512
        std::vector<float> rows(size_t(16 * HW));
#endif
#pragma omp for schedule(static)
        for (int64_t b = 0; b < blocks; ++b) {
            const float* g = gy + b * 16 * HW;
            const float* v = y + b * 16 * HW;
            float* o = out + b * 16 * HW;
#ifdef MYELIN_NCHW16C_AVX512
            float* t = rows.data();
            for (int64_t i = 0; i < 16 * HW; i += 16) {
                const __mmask16 lanes = first_lanes(16 * HW - i);
                const __m512 gv = _mm512_maskz_loadu_ps(lanes, g + i);
                const __m512 yv = _mm512_maskz_loadu_ps(lanes, v + i);
                const __mmask16 positive = _mm512_cmp_ps_mask(yv, _mm512_setzero_ps(), _CMP_NLE_UQ);
                _mm512_mask_storeu_ps(t + i, lanes, _mm512_maskz_mov_ps(positive, gv));
            }
            for (int64_t hw0 = 0; hw0 < HW; hw0 += 16) {
                const int64_t n = std::min<int64_t>(16, HW - hw0);
                const __mmask16 lanes = first_lanes(n);
                __m512 r[16];
                for (int c = 0; c < 16; ++c)
                    r[c] = _mm512_maskz_loadu_ps(lanes, t + c * HW + hw0);
                transpose16(r);
                if (n == 16)
                    for (int h = 0; h < 16; ++h)
                        _mm512_storeu_ps(o + (hw0 + h) * 16, r[h]);
                else
                    for (int64_t h = 0; h < n; ++h)
                        _mm512_storeu_ps(o + (hw0 + h) * 16, r[h]);
            }
#else
            for (int64_t hw = 0; hw < HW; ++hw)
                for (int64_t c = 0; c < 16; ++c)
                    o[hw * 16 + c] = relu_grad(g[c * HW + hw], v[c * HW + hw]);
#endif
        }
    }
}

// The pooled positions of a block of 16 channels (oh * OW + ow, rows one after another) are taken
// 16 at a time, in parallel: each chunk's windows are read as vectors of 16 channels (a, b: top
// pair; d, e: bottom pair), compared as kernels::max_window_2x2 compares them (the two pairs, then
// their winners), and the values transposed back to 16 consecutive positions of each channel's
// nchw plane, so that narrow rows (7 windows) fill a transpose as well as wide ones. The codes
// stay in block order: one byte per channel, a window's 16 bytes side by side.
void max_pool_2x2_from_blocked(const float* x, float* y, uint8_t* codes, const Pool2x2& p) {
    const int64_t blocks = p.N * (p.C / 16), plane = p.OH * p.OW, chunks = (plane + 15) / 16;
#pragma omp parallel for schedule(static) if (blocks * plane * 64 > 32768)
    for (int64_t t = 0; t < blocks * chunks; ++t) {
        const int64_t b = t / chunks, pos0 = (t % chunks) * 16;
        const int64_t n = std::min<int64_t>(16, plane - pos0);
        const float* in = x + b * p.H * p.W * 16;
        uint8_t* code_out = codes + (b * plane + pos0) * 16;
        int64_t oh = pos0 / p.OW, ow = pos0 % p.OW;
#ifdef MYELIN_NCHW16C_AVX512
        const __m128i one = _mm_set1_epi8(1), two = _mm_set1_epi8(2), four = _mm_set1_epi8(4);
        __m512 values[16];
        for (int64_t j = 0; j < 16; ++j) {
            if (j >= n) {
                values[j] = _mm512_setzero_ps();
                continue;
            }
            const float* top = in + (2 * oh * p.W + 2 * ow) * 16;
            const float* bottom = top + p.W * 16;
            const __m512 a = _mm512_loadu_ps(top), bv = _mm512_loadu_ps(top + 16);
            const __m512 d = _mm512_loadu_ps(bottom), e = _mm512_loadu_ps(bottom + 16);
            const __mmask16 right_top = replaces(bv, a), right_bottom = replaces(e, d);
            const __m512 upper = _mm512_mask_blend_ps(right_top, a, bv);
            const __m512 lower = _mm512_mask_blend_ps(right_bottom, d, e);
            const __mmask16 below = replaces(lower, upper);
            values[j] = _mm512_mask_blend_ps(below, upper, lower);
            const auto right =
                static_cast<__mmask16>((below & right_bottom) | (~below & right_top));
            const __mmask16 stops = _mm512_cmp_ps_mask(values[j], _mm512_setzero_ps(), _CMP_LE_OQ);
            const __m128i code = _mm_or_si128(
                _mm_or_si128(_mm_maskz_mov_epi8(right, one), _mm_maskz_mov_epi8(below, two)),
                _mm_maskz_mov_epi8(stops, four));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(code_out + j * 16), code);
            if (++ow == p.OW) ow = 0, ++oh;
        }
        transpose16(values);
        const __mmask16 lanes = first_lanes(n);
        for (int64_t c = 0; c < 16; ++c)
            _mm512_mask_storeu_ps(y + (b * 16 + c) * plane + pos0, lanes, values[c]);
#else
        for (int64_t j = 0; j < n; ++j) {
            const float* top = in + (2 * oh * p.W + 2 * ow) * 16;
            const float* bottom = top + p.W * 16;
            for (int64_t c = 0; c < 16; ++c) {
                uint8_t code = 0;
                const float v =
                    kernels::max_window_2x2(top[c], top[c + 16], bottom[c], bottom[c + 16], code);
                y[(b * 16 + c) * plane + pos0 + j] = v;
                code_out[j * 16 + c] = static_cast<uint8_t>(code | (v <= 0.0f ? 4 : 0));
            }
            if (++ow == p.OW) ow = 0, ++oh;
        }
#endif
    }
}

// The same chunks of 16 pooled positions: the gradient's 16 nchw planes are read 16 positions at
// a time and transposed into one vector of 16 channels per window; each window writes its four
// inputs' gradients (the winner's where ReLU passes it, zeros elsewhere) once. A row's odd last
// column is zeroed with its last window, an odd height's last row with the block's last window.
void relu_max_pool_2x2_backward_to_blocked(const float* grad_pooled, const uint8_t* codes,
                                           float* out, const Pool2x2& p) {
    const int64_t blocks = p.N * (p.C / 16), plane = p.OH * p.OW, chunks = (plane + 15) / 16;
#pragma omp parallel for schedule(static) if (blocks * plane * 64 > 32768)
    for (int64_t t = 0; t < blocks * chunks; ++t) {
        const int64_t b = t / chunks, pos0 = (t % chunks) * 16;
        const int64_t n = std::min<int64_t>(16, plane - pos0);
        float* block = out + b * p.H * p.W * 16;
        const uint8_t* code_in = codes + (b * plane + pos0) * 16;
        int64_t oh = pos0 / p.OW, ow = pos0 % p.OW;
#ifdef MYELIN_NCHW16C_AVX512
        const __mmask16 lanes = first_lanes(n);
        __m512 grad[16];
        for (int64_t c = 0; c < 16; ++c)
            grad[c] = _mm512_maskz_loadu_ps(lanes, grad_pooled + (b * 16 + c) * plane + pos0);
        transpose16(grad);
#endif
        for (int64_t j = 0; j < n; ++j) {
            float* top = block + (2 * oh * p.W + 2 * ow) * 16;
            float* bottom = top + p.W * 16;
#ifdef MYELIN_NCHW16C_AVX512
            const __m128i k = _mm_loadu_si128(reinterpret_cast<const __m128i*>(code_in + j * 16));
            const auto where = [&](char w) {
                return _mm512_maskz_mov_ps(_mm_cmpeq_epi8_mask(k, _mm_set1_epi8(w)), grad[j]);
            };
            _mm512_storeu_ps(top, where(0));
            _mm512_storeu_ps(top + 16, where(1));
            _mm512_storeu_ps(bottom, where(2));
            _mm512_storeu_ps(bottom + 16, where(3));
#else
            for (int64_t c = 0; c < 16; ++c) {
                const float g = grad_pooled[(b * 16 + c) * plane + pos0 + j];
                const int k = code_in[j * 16 + c];
                top[c] = k == 0 ? g : 0.0f;
                top[c + 16] = k == 1 ? g : 0.0f;
                bottom[c] = k == 2 ? g : 0.0f;
                bottom[c + 16] = k == 3 ? g : 0.0f;
            }
#endif
            if (ow == p.OW - 1 && p.W > 2 * p.OW) {
                std::fill(top + 32, top + 32 + (p.W - 2 * p.OW) * 16, 0.0f);
                std::fill(bottom + 32, bottom + 32 + (p.W - 2 * p.OW) * 16, 0.0f);
            }
            if (++ow == p.OW) ow = 0, ++oh;
        }
        if (pos0 + n == plane) std::fill(block + 2 * p.OH * p.W * 16, block + p.H * p.W * 16, 0.0f);
    }
}

// The CPU's nchw pool codes (cpu_pool.cpp) and values of the same pool -> the blocked codes above.
void codes_to_blocked(const uint8_t* plain, const float* pooled, uint8_t* blocked,
                      const Pool2x2& p) {
    const int64_t plane = p.OH * p.OW;
    for (int64_t n = 0; n < p.N; ++n)
        for (int64_t c = 0; c < p.C; ++c)
            for (int64_t pos = 0; pos < plane; ++pos) {
                const int64_t i = (n * p.C + c) * plane + pos;
                blocked[((n * (p.C / 16) + c / 16) * plane + pos) * 16 + c % 16] =
                    static_cast<uint8_t>(plain[i] | (pooled[i] <= 0.0f ? 4 : 0));
            }
}

// Blocked codes -> the nchw pool's codes, and the pooled gradient with ReLU's rule applied
// (0 where it stops the gradient), for cpu_pool.cpp's backward.
void codes_from_blocked(const uint8_t* blocked, const float* grad_pooled, uint8_t* plain,
                        float* relu_grad_pooled, const Pool2x2& p) {
    const int64_t plane = p.OH * p.OW;
    for (int64_t n = 0; n < p.N; ++n)
        for (int64_t c = 0; c < p.C; ++c)
            for (int64_t pos = 0; pos < plane; ++pos) {
                const int64_t i = (n * p.C + c) * plane + pos;
                const uint8_t k = blocked[((n * (p.C / 16) + c / 16) * plane + pos) * 16 + c % 16];
                plain[i] = k & 3;
                relu_grad_pooled[i] = (k & 4) ? 0.0f : grad_pooled[i];
            }
}

} // namespace myelin::backend::nchw16c
