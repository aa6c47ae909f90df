// 2-D pooling: max (with PyTorch's flat per-plane indices, which double as the backward
// workspace), average and adaptive average. Plain nchw loops, one OpenMP task per plane: these
// ops are memory-bound, and the loops reproduce PyTorch's window and divisor rules exactly
// (ceil_mode, padding, count_include_pad, NaN propagation).
#include "autograd/function.h"
#include "backend/kernels/elementwise.h"
#include "nn/functional_common.h"
#include "tensor/tensor_impl.h"

#include <myelin/nn/functional.h>

#include <cmath>
#include <limits>

namespace myelin::nn::functional {

using autograd::Node;
using autograd::record;
using autograd::SavedTensor;
using myelin::detail::make_tensor;
using namespace myelin::nn::detail;

namespace {

struct PoolGeom {
    int64_t planes, H, W, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw;
};

constexpr int64_t kParallelWork = 16384;

int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil) {
    const int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil ? stride - 1 : 0);
    int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
    if (ceil && (out - 1) * stride >= in + pad) --out;
    return out;
}

std::string pair(int64_t a, int64_t b) {
    std::string s = "(";
    s += std::to_string(a);
    s += ", ";
    s += std::to_string(b);
    s += ")";
    return s;
}

// Validates x ([N, C, H, W] or [C, H, W]) and the options; fills the geometry.
PoolGeom pool_geom(const char* op, const Tensor& x, const Pool2dOptions& o, bool use_dilation) {
    require_f32_f64(op, "input", x);
    if (x.dim() != 3 && x.dim() != 4)
        shape_error(op, "expected input [N, C, H, W] or [C, H, W], got " + x.shape().str());
    const auto k = o.kernel_size;
    const auto s = o.stride.value_or(k);
    const auto d = use_dilation ? o.dilation : std::array<int64_t, 2>{1, 1};
    if (k[0] < 1 || k[1] < 1 || s[0] < 1 || s[1] < 1 || d[0] < 1 || d[1] < 1)
        shape_error(op, "expected kernel_size, stride and dilation >= 1, got kernel_size " +
                            pair(k[0], k[1]) + ", stride " + pair(s[0], s[1]) + ", dilation " +
                            pair(d[0], d[1]));
    if (o.padding[0] < 0 || o.padding[1] < 0 || o.padding[0] > k[0] / 2 || o.padding[1] > k[1] / 2)
        shape_error(op, "pad should be at most half of the kernel size, got padding " +
                            pair(o.padding[0], o.padding[1]) + " and kernel_size " +
                            pair(k[0], k[1]));
    PoolGeom g{};
    const int nd = x.dim();
    g.H = x.size(nd - 2), g.W = x.size(nd - 1);
    g.planes = x.numel() / std::max<int64_t>(1, g.H * g.W);
    if (nd == 4)
        g.planes = x.size(0) * x.size(1);
    else
        g.planes = x.size(0);
    g.kh = k[0], g.kw = k[1], g.sh = s[0], g.sw = s[1], g.ph = o.padding[0], g.pw = o.padding[1];
    g.dh = d[0], g.dw = d[1];
    g.OH = pool_out(g.H, g.kh, g.ph, g.sh, g.dh, o.ceil_mode);
    g.OW = pool_out(g.W, g.kw, g.pw, g.sw, g.dw, o.ceil_mode);
    if (g.OH < 1 || g.OW < 1)
        shape_error(op, "input " + x.shape().str() + " is too small for kernel_size " +
                            pair(k[0], k[1]) + " (output would be " + std::to_string(g.OH) + "x" +
                            std::to_string(g.OW) + ")");
    return g;
}

Dims out_shape(const Tensor& x, int64_t OH, int64_t OW) {
    Dims s = x.shape();
    s[s.size() - 2] = OH;
    s[s.size() - 1] = OW;
    return s;
}

// The common 2x2 / stride 2 window fully inside the input, unrolled (same NaN rule: a NaN
// replaces the running maximum, so the last NaN in scan order wins, as in PyTorch).
template <typename T> bool max_forward_2x2(const T* x, T* y, int64_t* idx, const PoolGeom& g) {
    if (g.kh != 2 || g.kw != 2 || g.sh != 2 || g.sw != 2 || g.ph != 0 || g.pw != 0 || g.dh != 1 ||
        g.dw != 1 || 2 * g.OH > g.H || 2 * g.OW > g.W)
        return false;
    const int64_t H = g.H, W = g.W, OH = g.OH, OW = g.OW, planes = g.planes;
    const int64_t HW = H * W, OHW = OH * OW;
    // Branch-free steps (on real activations the comparisons are coin flips): a mask select for
    // the value, an integer select for the index, so the row loop vectorises.
    const auto step = [](T v, T& m, int64_t cand, int64_t& best) {
        const bool take = (v > m) | (v != v);
        if constexpr (std::is_same_v<T, float>)
            m = myelin::kernels::bit_select(take, v, m);
        else
            m = take ? v : m;
        best = take ? cand : best;
    };
#pragma omp parallel for if (planes * OHW * 4 > kParallelWork)
    for (int64_t p = 0; p < planes; ++p) {
        for (int64_t oh = 0; oh < OH; ++oh) {
            const T* r0 = x + p * HW + 2 * oh * W;
            const T* r1 = r0 + W;
            T* yo = y + p * OHW + oh * OW;
            int64_t* io = idx ? idx + p * OHW + oh * OW : nullptr;
            const int64_t base = 2 * oh * W;
            for (int64_t ow = 0; ow < OW; ++ow) {
                const int64_t c = 2 * ow;
                T m = r0[c];
                int64_t best = base + c;
                step(r0[c + 1], m, base + c + 1, best);
                step(r1[c], m, base + W + c, best);
                step(r1[c + 1], m, base + W + c + 1, best);
                yo[ow] = m;
                if (io) io[ow] = best;
            }
        }
    }
    return true;
}

template <typename T> void max_forward(const T* x, T* y, int64_t* idx, const PoolGeom& g) {
    if (max_forward_2x2(x, y, idx, g)) return;
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
AvgWindow avg_window(const PoolGeom& g, int64_t oh, int64_t ow, bool count_include_pad) {
    int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
    int64_t h1 = std::min(h0 + g.kh, g.H + g.ph), w1 = std::min(w0 + g.kw, g.W + g.pw);
    const int64_t pool_size = (h1 - h0) * (w1 - w0);
    h0 = std::max<int64_t>(h0, 0), w0 = std::max<int64_t>(w0, 0);
    h1 = std::min(h1, g.H), w1 = std::min(w1, g.W);
    const int64_t inside = std::max<int64_t>(0, h1 - h0) * std::max<int64_t>(0, w1 - w0);
    return {h0, h1, w0, w1, static_cast<double>(count_include_pad ? pool_size : inside)};
}

template <typename T>
void avg_forward(const T* x, T* y, const PoolGeom& g, bool count_include_pad) {
    const int64_t HW = g.H * g.W, OHW = g.OH * g.OW;
#pragma omp parallel for if (g.planes * OHW * g.kh * g.kw > kParallelWork)
    for (int64_t p = 0; p < g.planes; ++p)
        for (int64_t oh = 0; oh < g.OH; ++oh)
            for (int64_t ow = 0; ow < g.OW; ++ow) {
                const AvgWindow win = avg_window(g, oh, ow, count_include_pad);
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

template <typename T>
void avg_backward(const T* gy, T* gx, const PoolGeom& g, bool count_include_pad) {
    const int64_t HW = g.H * g.W, OHW = g.OH * g.OW;
#pragma omp parallel for if (g.planes * OHW * g.kh * g.kw > kParallelWork)
    for (int64_t p = 0; p < g.planes; ++p) {
        T* gp = gx + p * HW;
        for (int64_t i = 0; i < HW; ++i)
            gp[i] = T(0);
        for (int64_t oh = 0; oh < g.OH; ++oh)
            for (int64_t ow = 0; ow < g.OW; ++ow) {
                const AvgWindow win = avg_window(g, oh, ow, count_include_pad);
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

ValuesIndices max_pool_impl(const Tensor& x, const Pool2dOptions& o, bool want_indices) {
    const PoolGeom g =
        pool_geom(want_indices ? "max_pool2d_with_indices" : "max_pool2d", x, o, true);
    const Tensor xc = x.detach().contiguous();
    const bool grad = autograd::needs_grad({&x});
    const Dims os = out_shape(x, g.OH, g.OW);
    Tensor y = make_tensor(os, x.dtype(), x.device());
    Tensor idx = want_indices || grad ? make_tensor(os, DType::Int64, x.device()) : Tensor();
    dispatch(x.dtype(), [&](auto z) {
        using T = decltype(z);
        max_forward(xc.data<T>(), y.data<T>(), idx.defined() ? idx.data<int64_t>() : nullptr, g);
    });
    if (grad)
        record("MaxPool2DWithIndicesBackward0", {&x}, y,
               [idx, g, in = x.shape()](const Tensor& grad, const Node&) {
                   const Tensor gy = grad.contiguous();
                   Tensor gx = make_tensor(in, gy.dtype(), gy.device());
                   dispatch(gy.dtype(), [&](auto z) {
                       using T = decltype(z);
                       max_backward(gy.data<T>(), idx.data<int64_t>(), gx.data<T>(), g);
                   });
                   return TensorList{gx};
               });
    return {y, idx};
}

} // namespace

Tensor max_pool2d(const Tensor& x, const Pool2dOptions& options) {
    return max_pool_impl(x, options, false).values;
}

ValuesIndices max_pool2d_with_indices(const Tensor& x, const Pool2dOptions& options) {
    return max_pool_impl(x, options, true);
}

Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& o) {
    const PoolGeom g = pool_geom("avg_pool2d", x, o, false);
    const Tensor xc = x.detach().contiguous();
    Tensor y = make_tensor(out_shape(x, g.OH, g.OW), x.dtype(), x.device());
    const bool cip = o.count_include_pad;
    dispatch(x.dtype(), [&](auto z) {
        using T = decltype(z);
        avg_forward(xc.data<T>(), y.data<T>(), g, cip);
    });
    if (autograd::needs_grad({&x}))
        record("AvgPool2DBackward0", {&x}, y,
               [g, cip, in = x.shape()](const Tensor& grad, const Node&) {
                   const Tensor gy = grad.contiguous();
                   Tensor gx = make_tensor(in, gy.dtype(), gy.device());
                   dispatch(gy.dtype(), [&](auto z) {
                       using T = decltype(z);
                       avg_backward(gy.data<T>(), gx.data<T>(), g, cip);
                   });
                   return TensorList{gx};
               });
    return y;
}

Tensor adaptive_avg_pool2d(const Tensor& x, std::array<int64_t, 2> output_size) {
    const char* op = "adaptive_avg_pool2d";
    require_f32_f64(op, "input", x);
    if (x.dim() != 3 && x.dim() != 4)
        shape_error(op, "expected input [N, C, H, W] or [C, H, W], got " + x.shape().str());
    if (output_size[0] < 1 || output_size[1] < 1)
        shape_error(op, "expected output_size >= 1, got " + pair(output_size[0], output_size[1]));
    const int nd = x.dim();
    PoolGeom g{};
    g.H = x.size(nd - 2), g.W = x.size(nd - 1);
    g.planes = nd == 4 ? x.size(0) * x.size(1) : x.size(0);
    g.OH = output_size[0], g.OW = output_size[1];
    if (g.H < 1 || g.W < 1)
        shape_error(op, "expected non-empty spatial dims, got input " + x.shape().str());
    const Tensor xc = x.detach().contiguous();
    Tensor y = make_tensor(out_shape(x, g.OH, g.OW), x.dtype(), x.device());
    dispatch(x.dtype(), [&](auto z) {
        using T = decltype(z);
        adaptive_forward(xc.data<T>(), y.data<T>(), g);
    });
    if (autograd::needs_grad({&x}))
        record("AdaptiveAvgPool2DBackward0", {&x}, y,
               [g, in = x.shape()](const Tensor& grad, const Node&) {
                   const Tensor gy = grad.contiguous();
                   Tensor gx = make_tensor(in, gy.dtype(), gy.device());
                   dispatch(gy.dtype(), [&](auto z) {
                       using T = decltype(z);
                       adaptive_backward(gy.data<T>(), gx.data<T>(), g);
                   });
                   return TensorList{gx};
               });
    return y;
}

} // namespace myelin::nn::functional
