// The int8 kernels' front: argument checks, the requantization constants, the plain C++
// reference of every kernel (the same arithmetic as oneDNN's, element by element through
// requantize_u8 / requantize_f32), and the choice between oneDNN and the reference.
#include "quant/layout.h"
#include "quant/onednn_kernels.h"
#include "tensor/tensor_impl.h"

#include <myelin/error.h>
#include <myelin/quant/kernels.h>

#include <algorithm>
#include <cmath>
#include <string>

#pragma GCC optimize("fp-contract=off")

namespace myelin::quant {

using myelin::detail::make_tensor;

namespace {

thread_local bool t_last_onednn = false;

void check_qtensor(const QTensor& x, const char* op) {
    if (!x.data.defined() || x.data.dtype() != DType::UInt8 || !x.data.device().is_cpu())
        throw DTypeError(std::string(op) + ": expected a quint8 (uint8 CPU) tensor");
    if (!(x.q.scale > 0.0f) || x.q.zero_point < 0 || x.q.zero_point > 255)
        throw Error(std::string(op) + ": bad input quantization (scale " +
                    std::to_string(x.q.scale) + ", zero point " + std::to_string(x.q.zero_point) +
                    ")");
}

void check_weight(const QuantizedWeight& w, int dims, const char* op) {
    if (w.shape.size() != dims || int64_t(w.values.size()) != w.shape.numel() ||
        w.shape.numel() == 0)
        throw ShapeError(std::string(op) + ": expected a " + std::to_string(dims) +
                         "-D int8 weight, got shape " + w.shape.str() + " with " +
                         std::to_string(w.values.size()) + " values");
    if (w.scales.size() != 1 && int64_t(w.scales.size()) != w.out_channels())
        throw ShapeError(std::string(op) + ": expected 1 or " + std::to_string(w.out_channels()) +
                         " weight scales, got " + std::to_string(w.scales.size()));
}

// The 4-D input's bytes as oneDNN reads them (NCHW or NHWC, no copy when either) and the flag.
std::pair<Tensor, bool> activation_4d(const Tensor& t) {
    if (detail::channels_last(t)) return {t, true};
    return {t.contiguous(), false};
}

// An NCHW-shaped tensor stored NHWC (the 4-D kernels' output on oneDNN).
Tensor make_nhwc(const Dims& nchw, DType dtype) {
    return make_tensor({nchw[0], nchw[2], nchw[3], nchw[1]}, dtype, kCPU).permute({0, 3, 1, 2});
}

// The output as a quint8 or float32 tensor of `shape`.
Tensor make_output(const Dims& shape, const Requantization& r) {
    return make_tensor(shape, r.out_zero_point ? DType::UInt8 : DType::Float32, kCPU);
}

// One accumulator of output channel c into y's element i.
inline void store(void* y, int64_t i, int64_t c, int32_t acc, const Requantization& r) {
    if (r.out_zero_point)
        static_cast<uint8_t*>(y)[i] = requantize_u8(acc, r.bias[size_t(c)], r.multiplier[size_t(c)],
                                                    r.relu, *r.out_zero_point);
    else
        static_cast<float*>(y)[i] =
            requantize_f32(acc, r.bias[size_t(c)], r.multiplier[size_t(c)], r.relu);
}

void reference_linear(const uint8_t* x, int64_t M, int64_t K, int32_t zp, const QuantizedWeight& w,
                      const Requantization& r, void* y) {
    const int64_t N = w.out_channels();
#pragma omp parallel for schedule(static) if (M * N * K > (1 << 18))
    for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
            const uint8_t* xr = x + m * K;
            const int8_t* wr = w.values.data() + n * K;
            int32_t acc = 0;
            for (int64_t k = 0; k < K; ++k)
                acc += (int32_t(xr[k]) - zp) * int32_t(wr[k]);
            store(y, m * N + n, n, acc, r);
        }
}

void reference_conv2d(const uint8_t* x, const Dims& xs, int32_t zp, const QuantizedWeight& w,
                      const Conv2dOptions& o, const Dims& ys, const Requantization& r, void* y) {
    const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
    const int64_t O = ys[1], OH = ys[2], OW = ys[3];
    const int64_t KH = w.shape[2], KW = w.shape[3], G = o.groups, CG = C / G, OG = O / G;
#pragma omp parallel for collapse(2)                                                               \
    schedule(static) if (N * O * OH * OW * CG * KH * KW > (1 << 18))
    for (int64_t n = 0; n < N; ++n)
        for (int64_t oc = 0; oc < O; ++oc) {
            const int64_t g = oc / OG;
            const int8_t* wk = w.values.data() + oc * CG * KH * KW;
            for (int64_t oh = 0; oh < OH; ++oh)
                for (int64_t ow = 0; ow < OW; ++ow) {
                    int32_t acc = 0;
                    for (int64_t c = 0; c < CG; ++c) {
                        const uint8_t* xc = x + ((n * C) + g * CG + c) * H * W;
                        for (int64_t kh = 0; kh < KH; ++kh) {
                            const int64_t ih = oh * o.stride[0] - o.padding[0] + kh * o.dilation[0];
                            if (ih < 0 || ih >= H) continue; // padding holds the zero point
                            for (int64_t kw = 0; kw < KW; ++kw) {
                                const int64_t iw =
                                    ow * o.stride[1] - o.padding[1] + kw * o.dilation[1];
                                if (iw < 0 || iw >= W) continue;
                                acc += (int32_t(xc[ih * W + iw]) - zp) *
                                       int32_t(wk[(c * KH + kh) * KW + kw]);
                            }
                        }
                    }
                    store(y, ((n * O + oc) * OH + oh) * OW + ow, oc, acc, r);
                }
        }
}

void reference_max_pool2d(const uint8_t* x, const Dims& xs, const Dims& ys,
                          std::array<int64_t, 2> k, std::array<int64_t, 2> s,
                          std::array<int64_t, 2> p, std::array<int64_t, 2> d, uint8_t* y) {
    const int64_t NC = xs[0] * xs[1], H = xs[2], W = xs[3], OH = ys[2], OW = ys[3];
#pragma omp parallel for schedule(static) if (NC * OH * OW > (1 << 16))
    for (int64_t nc = 0; nc < NC; ++nc)
        for (int64_t oh = 0; oh < OH; ++oh)
            for (int64_t ow = 0; ow < OW; ++ow) {
                int v = 0; // every window holds at least one element (checked by the caller)
                for (int64_t kh = 0; kh < k[0]; ++kh) {
                    const int64_t ih = oh * s[0] - p[0] + kh * d[0];
                    if (ih < 0 || ih >= H) continue;
                    for (int64_t kw = 0; kw < k[1]; ++kw) {
                        const int64_t iw = ow * s[1] - p[1] + kw * d[1];
                        if (iw >= 0 && iw < W) v = std::max<int>(v, x[(nc * H + ih) * W + iw]);
                    }
                }
                y[(nc * OH + oh) * OW + ow] = uint8_t(v);
            }
}

// Runs `onednn` unless the path says otherwise, else `reference`; records which ran.
template <typename OneDnn, typename Reference>
void dispatch(KernelPath path, const char* op, OneDnn&& onednn, Reference&& reference) {
    if (path != KernelPath::Reference && onednn()) {
        t_last_onednn = true;
        return;
    }
    if (path == KernelPath::OneDnn)
        throw Error(std::string(op) + ": oneDNN has no int8 primitive for this shape");
    reference();
    t_last_onednn = false;
}

Tensor linear_impl(const QTensor& x, const QuantizedWeight& w, const Tensor& bias, bool relu,
                   std::optional<QParams> out, KernelPath path) {
    const char* op = "quantized_linear";
    check_qtensor(x, op);
    check_weight(w, 2, op);
    const int64_t K = w.shape[1], N = w.shape[0];
    if (x.data.dim() < 1 || x.data.size(-1) != K)
        throw ShapeError(std::string(op) + ": expected input [..., " + std::to_string(K) +
                         "], got " + x.data.shape().str());
    const Requantization r = make_requantization(x.q.scale, w, bias, relu, out);
    const Tensor xc = x.data.contiguous();
    const int64_t M = xc.numel() / K;
    Dims shape = xc.shape();
    shape[shape.size() - 1] = N;
    Tensor y = make_output(shape, r);
    if (M == 0) return y;
    const uint8_t* xp = xc.data<uint8_t>();
    dispatch(
        path, op,
        [&] { return detail::onednn_linear(xp, M, K, x.q.zero_point, w, r, y.data_ptr(), false); },
        [&] { reference_linear(xp, M, K, x.q.zero_point, w, r, y.data_ptr()); });
    return y;
}

Tensor conv_impl(const QTensor& x, const QuantizedWeight& w, const Tensor& bias,
                 const Conv2dOptions& o, bool relu, std::optional<QParams> out, KernelPath path) {
    const char* op = "quantized_conv2d";
    check_qtensor(x, op);
    check_weight(w, 4, op);
    if (x.data.dim() != 4)
        throw ShapeError(std::string(op) + ": expected NCHW input, got " + x.data.shape().str());
    const auto [xc, nhwc] = activation_4d(x.data);
    const int64_t G = o.groups, O = w.shape[0];
    if (G < 1 || xc.size(1) % G != 0 || O % G != 0 || w.shape[1] * G != xc.size(1))
        throw ShapeError(std::string(op) + ": input " + xc.shape().str() + " does not fit weight " +
                         w.shape.str() + " with " + std::to_string(G) + " groups");
    Dims ys{xc.size(0), O, 0, 0};
    for (int i = 0; i < 2; ++i) {
        if (o.stride[i] < 1 || o.dilation[i] < 1 || o.padding[i] < 0)
            throw Error(std::string(op) + ": bad stride, padding or dilation");
        const int64_t extent = o.dilation[i] * (w.shape[2 + i] - 1) + 1;
        const int64_t span = xc.size(2 + i) + 2 * o.padding[i] - extent;
        if (span < 0)
            throw ShapeError(std::string(op) + ": kernel larger than the padded input " +
                             xc.shape().str());
        ys[2 + i] = span / o.stride[i] + 1;
    }
    const Requantization r = make_requantization(x.q.scale, w, bias, relu, out);
    const DType out_type = r.out_zero_point ? DType::UInt8 : DType::Float32;
    if (ys.numel() == 0) return make_tensor(ys, out_type, kCPU);
    Tensor y = make_nhwc(ys, out_type);
    dispatch(
        path, op,
        [&] {
            return detail::onednn_conv2d(xc.data<uint8_t>(), xc.shape(), nhwc, x.q.zero_point, w, o,
                                         ys, r, y.data_ptr());
        },
        [&] {
            const Tensor plain = xc.contiguous();
            y = make_output(ys, r);
            reference_conv2d(plain.data<uint8_t>(), plain.shape(), x.q.zero_point, w, o, ys, r,
                             y.data_ptr());
        });
    return y;
}

} // namespace

Requantization make_requantization(float x_scale, const QuantizedWeight& w, const Tensor& bias,
                                   bool relu, std::optional<QParams> out, bool round_bias) {
    const int64_t N = w.out_channels();
    if (bias.defined() && (bias.dtype() != DType::Float32 || bias.numel() != N))
        throw ShapeError("quantized kernels: expected a float32 bias of " + std::to_string(N) +
                         " values, got " + myelin::detail::describe(bias));
    if (out && (!(out->scale > 0.0f) || out->zero_point < 0 || out->zero_point > 255))
        throw Error("quantized kernels: bad output quantization");
    Requantization r;
    r.relu = relu;
    if (out) r.out_zero_point = out->zero_point;
    const std::vector<float> b = bias.defined() ? bias.detach().contiguous().to_vector<float>()
                                                : std::vector<float>(size_t(N), 0.0f);
    for (int64_t c = 0; c < N; ++c) {
        const float acc_scale = x_scale * w.scale(c);
        const float in_acc = b[size_t(c)] / acc_scale;
        r.bias.push_back(round_bias ? std::nearbyint(in_acc) : in_acc);
        r.multiplier.push_back(out ? acc_scale / out->scale : acc_scale);
    }
    return r;
}

QTensor quantized_linear(const QTensor& x, const QuantizedWeight& w, const Tensor& bias, bool relu,
                         QParams out, KernelPath path) {
    return {linear_impl(x, w, bias, relu, out, path), out};
}

Tensor quantized_linear_f32(const QTensor& x, const QuantizedWeight& w, const Tensor& bias,
                            bool relu, KernelPath path) {
    return linear_impl(x, w, bias, relu, std::nullopt, path);
}

QTensor quantized_conv2d(const QTensor& x, const QuantizedWeight& w, const Tensor& bias,
                         const Conv2dOptions& options, bool relu, QParams out, KernelPath path) {
    return {conv_impl(x, w, bias, options, relu, out, path), out};
}

Tensor quantized_conv2d_f32(const QTensor& x, const QuantizedWeight& w, const Tensor& bias,
                            const Conv2dOptions& options, bool relu, KernelPath path) {
    return conv_impl(x, w, bias, options, relu, std::nullopt, path);
}

QTensor quantized_max_pool2d(const QTensor& x, std::array<int64_t, 2> kernel,
                             std::array<int64_t, 2> stride, std::array<int64_t, 2> padding,
                             std::array<int64_t, 2> dilation, KernelPath path) {
    const char* op = "quantized_max_pool2d";
    check_qtensor(x, op);
    if (x.data.dim() != 4)
        throw ShapeError(std::string(op) + ": expected NCHW input, got " + x.data.shape().str());
    const auto [xc, nhwc] = activation_4d(x.data);
    Dims ys{xc.size(0), xc.size(1), 0, 0};
    for (int i = 0; i < 2; ++i) {
        if (kernel[i] < 1 || stride[i] < 1 || dilation[i] < 1 || padding[i] < 0 ||
            2 * padding[i] > kernel[i])
            throw Error(std::string(op) + ": bad kernel, stride, padding or dilation");
        const int64_t span = xc.size(2 + i) + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1;
        if (span < 0)
            throw ShapeError(std::string(op) + ": window larger than the input " +
                             xc.shape().str());
        ys[2 + i] = span / stride[i] + 1;
    }
    if (ys.numel() == 0) return {make_tensor(ys, DType::UInt8, kCPU), x.q};
    Tensor y = make_nhwc(ys, DType::UInt8);
    dispatch(
        path, op,
        [&] {
            return detail::onednn_max_pool2d(xc.data<uint8_t>(), xc.shape(), nhwc, ys, kernel,
                                             stride, padding, dilation, y.data<uint8_t>());
        },
        [&] {
            const Tensor plain = xc.contiguous();
            y = make_tensor(ys, DType::UInt8, kCPU);
            reference_max_pool2d(plain.data<uint8_t>(), plain.shape(), ys, kernel, stride, padding,
                                 dilation, y.data<uint8_t>());
        });
    return {y, x.q};
}

Tensor dynamic_quantized_linear(const Tensor& x, const QuantizedWeight& w, const Tensor& bias,
                                bool relu, KernelPath path) {
    const char* op = "dynamic_quantized_linear";
    if (!x.defined() || x.dtype() != DType::Float32 || !x.device().is_cpu())
        throw DTypeError(std::string(op) + ": expected a float32 CPU input");
    check_weight(w, 2, op);
    const Tensor xc = x.detach().contiguous();
    float lo = 0.0f, hi = 0.0f; // an empty input: any parameters do
    if (xc.numel() > 0) {
        const float* p = xc.data<float>();
        lo = hi = p[0];
        for (int64_t i = 1; i < xc.numel(); ++i) {
            lo = std::min(lo, p[i]);
            hi = std::max(hi, p[i]);
        }
    }
    const QParams q = choose_qparams(lo, hi, kQUInt8Min, kQUInt8Max, /*reduce_range=*/true);
    const QTensor xq = quantize_per_tensor(xc, q);
    const int64_t K = w.shape[1], N = w.shape[0];
    if (xc.dim() < 1 || xc.size(-1) != K)
        throw ShapeError(std::string(op) + ": expected input [..., " + std::to_string(K) +
                         "], got " + xc.shape().str());
    const Requantization r = make_requantization(q.scale, w, bias, relu, std::nullopt, false);
    const int64_t M = xc.numel() / K;
    Dims shape = xc.shape();
    shape[shape.size() - 1] = N;
    Tensor y = make_output(shape, r);
    if (M == 0) return y;
    const uint8_t* xp = xq.data.data<uint8_t>();
    dispatch(
        path, op,
        [&] { return detail::onednn_linear(xp, M, K, q.zero_point, w, r, y.data_ptr(), true); },
        [&] { reference_linear(xp, M, K, q.zero_point, w, r, y.data_ptr()); });
    return y;
}

bool last_kernel_used_onednn() {
    return t_last_onednn;
}

} // namespace myelin::quant
