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
                const auto lanes =
                    static_cast<__mmask16>((1u << std::min<int64_t>(16, 16 * HW - i)) - 1);
                const __m512 gv = _mm512_maskz_loadu_ps(lanes, g + i);
                const __m512 yv = _mm512_maskz_loadu_ps(lanes, v + i);
                const __mmask16 positive = _mm512_cmp_ps_mask(yv, _mm512_setzero_ps(), _CMP_NLE_UQ);
                _mm512_mask_storeu_ps(t + i, lanes, _mm512_maskz_mov_ps(positive, gv));
            }
            for (int64_t hw0 = 0; hw0 < HW; hw0 += 16) {
                const int64_t n = std::min<int64_t>(16, HW - hw0);
                const auto lanes = static_cast<__mmask16>((1u << n) - 1);
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

// Rows of the output (one per block of 16 channels and output row oh) run in parallel. A row's
// windows are read as vectors of 16 channels (a, b: top pair; d, e: bottom pair), compared as
// kernels::max_window_2x2 compares them (the two pairs, then their winners), and transposed back to
// one row per channel; the codes travel through the transpose as floats 0-3.
void max_pool_2x2_from_blocked(const float* x, float* y, uint8_t* codes, const Pool2x2& p) {
    const int64_t blocks = p.N * (p.C / 16), rows = blocks * p.OH, plane = p.OH * p.OW;
#pragma omp parallel for schedule(static) if (rows * p.OW * 64 > 32768)
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t b = r / p.OH, oh = r % p.OH;
        const float* top = x + (b * p.H + 2 * oh) * p.W * 16;
        const float* bottom = top + p.W * 16;
        // Channel c of this block: output row at out_row + c * plane.
        const int64_t out_row = b * 16 * plane + oh * p.OW;
#ifdef MYELIN_NCHW16C_AVX512
        const __m512 one = _mm512_set1_ps(1.0f), two = _mm512_set1_ps(2.0f);
        for (int64_t ow0 = 0; ow0 < p.OW; ow0 += 16) {
            const int64_t n = std::min<int64_t>(16, p.OW - ow0);
            __m512 values[16], code[16];
            for (int64_t j = 0; j < 16; ++j) {
                if (j >= n) {
                    values[j] = code[j] = _mm512_setzero_ps();
                    continue;
                }
                const int64_t at = 2 * (ow0 + j) * 16;
                const __m512 a = _mm512_loadu_ps(top + at), bv = _mm512_loadu_ps(top + at + 16);
                const __m512 d = _mm512_loadu_ps(bottom + at),
                             e = _mm512_loadu_ps(bottom + at + 16);
                const __mmask16 right_top = replaces(bv, a), right_bottom = replaces(e, d);
                const __m512 upper = _mm512_mask_blend_ps(right_top, a, bv);
                const __m512 lower = _mm512_mask_blend_ps(right_bottom, d, e);
                const __mmask16 below = replaces(lower, upper);
                values[j] = _mm512_mask_blend_ps(below, upper, lower);
                const auto right =
                    static_cast<__mmask16>((below & right_bottom) | (~below & right_top));
                code[j] =
                    _mm512_add_ps(_mm512_maskz_mov_ps(right, one), _mm512_maskz_mov_ps(below, two));
            }
            transpose16(values);
            transpose16(code);
            const __mmask16 lanes = first_lanes(n);
            for (int64_t c = 0; c < 16; ++c) {
                const int64_t o = out_row + c * plane + ow0;
                _mm512_mask_storeu_ps(y + o, lanes, values[c]);
                const __m512i code32 = _mm512_maskz_cvttps_epi32(all_lanes, code[c]);
                _mm_mask_storeu_epi8(codes + o, lanes,
                                     _mm512_maskz_cvtepi32_epi8(all_lanes, code32));
            }
        }
#else
        for (int64_t ow = 0; ow < p.OW; ++ow)
            for (int64_t c = 0; c < 16; ++c) {
                const int64_t at = 2 * ow * 16 + c, o = out_row + c * plane + ow;
                y[o] = kernels::max_window_2x2(top[at], top[at + 16], bottom[at], bottom[at + 16],
                                               codes[o]);
            }
#endif
    }
}

// Per block of 16 channels and output row oh: the two input rows 2 oh and 2 oh + 1 are written
// whole, once (the winners' gradients, zeros elsewhere, an odd width's last column zero); an odd
// height's last row is zeroed with the block's last output row.
void relu_max_pool_2x2_backward_to_blocked(const float* grad_pooled, const float* pooled,
                                           const uint8_t* codes, float* out, const Pool2x2& p) {
    const int64_t blocks = p.N * (p.C / 16), rows = blocks * p.OH, plane = p.OH * p.OW;
#pragma omp parallel for schedule(static) if (rows * p.W * 32 > 32768)
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t b = r / p.OH, oh = r % p.OH;
        float* top = out + (b * p.H + 2 * oh) * p.W * 16;
        float* bottom = top + p.W * 16;
        const int64_t in_row = b * 16 * plane + oh * p.OW;
#ifdef MYELIN_NCHW16C_AVX512
        for (int64_t ow0 = 0; ow0 < p.OW; ow0 += 16) {
            const int64_t n = std::min<int64_t>(16, p.OW - ow0);
            const __mmask16 lanes = first_lanes(n);
            // Rows of 16 windows per channel (the gradient where ReLU passes it, and the codes'
            // bits), transposed into one vector of 16 channels per window.
            __m512 grad[16], code[16];
            for (int64_t c = 0; c < 16; ++c) {
                const int64_t i = in_row + c * plane + ow0;
                const __m512 v = _mm512_maskz_loadu_ps(lanes, pooled + i);
                const __mmask16 passes = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_NLE_UQ);
                grad[c] = _mm512_maskz_loadu_ps(passes & lanes, grad_pooled + i);
                code[c] = _mm512_castsi512_ps(
                    _mm512_maskz_cvtepu8_epi32(all_lanes, _mm_maskz_loadu_epi8(lanes, codes + i)));
            }
            transpose16(grad);
            transpose16(code);
            for (int64_t j = 0; j < n; ++j) {
                const __m512i k = _mm512_castps_si512(code[j]);
                const auto where = [&](int w) {
                    return _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(k, _mm512_set1_epi32(w)),
                                               grad[j]);
                };
                const int64_t o = 2 * (ow0 + j) * 16;
                _mm512_storeu_ps(top + o, where(0));
                _mm512_storeu_ps(top + o + 16, where(1));
                _mm512_storeu_ps(bottom + o, where(2));
                _mm512_storeu_ps(bottom + o + 16, where(3));
            }
        }
#else
        for (int64_t ow = 0; ow < p.OW; ++ow)
            for (int64_t c = 0; c < 16; ++c) {
                const int64_t i = in_row + c * plane + ow;
                const float g = relu_grad(grad_pooled[i], pooled[i]);
                const int k = codes[i];
                const int64_t o = 2 * ow * 16 + c;
                top[o] = k == 0 ? g : 0.0f;
                top[o + 16] = k == 1 ? g : 0.0f;
                bottom[o] = k == 2 ? g : 0.0f;
                bottom[o + 16] = k == 3 ? g : 0.0f;
            }
#endif
        std::fill(top + 2 * p.OW * 16, top + p.W * 16, 0.0f);
        std::fill(bottom + 2 * p.OW * 16, bottom + p.W * 16, 0.0f);
        if (oh == p.OH - 1)
            std::fill(out + (b * p.H + 2 * p.OH) * p.W * 16, out + (b + 1) * p.H * p.W * 16, 0.0f);
    }
}

} // namespace myelin::backend::nchw16c
