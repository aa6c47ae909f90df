// The functional ops composed from tensor ops (their gradients come from those ops' rules) or
// with small dedicated backward rules: linear, bilinear, dropout, dropout2d, embedding, pad,
// upsample_nearest2d, one_hot, hardswish, prelu.
#include "autograd/function.h"
#include "backend/train_kernels.h"
#include "nn/functional_common.h"
#include "tensor/tensor_impl.h"

#include <myelin/autocast.h>
#include <myelin/generator.h>
#include <myelin/nn/functional.h>

#include <algorithm>

namespace myelin::nn::functional {

using autograd::Node;
using autograd::record;
using namespace myelin::nn::detail;

namespace {

Dims leading(const Tensor& t) {
    Dims d = t.shape();
    d.resize(d.size() - 1);
    return d;
}

Dims with_last(Dims d, int64_t last) {
    d.push_back(last);
    return d;
}

void check_p(const char* op, double p) {
    if (!(p >= 0.0 && p <= 1.0))
        throw Error(std::string(op) + ": dropout probability has to be between 0 and 1, but got " +
                    std::to_string(p));
}

// Dropout in one pass (kernels/dropout.h, through the device's training table): the output and
// a byte mask, which the backward multiplies the gradient by. The mask is a counter-based stream
// from one draw of the generator, so every device computes the same bits. Drawing the mask as
// bernoulli noise, scaling it and multiplying took three passes and two Mersenne Twister draws
// per element.
Tensor fused_dropout(const Tensor& x, double p, Generator& gen) {
    const Tensor xc = x.contiguous();
    const uint64_t seed = gen.next_u64();
    Tensor out = myelin::detail::make_tensor(x.shape(), x.dtype(), x.device());
    Tensor mask = myelin::detail::make_tensor(x.shape(), DType::UInt8, x.device());
    backend::train_kernels(myelin::detail::backend_for(xc), backend::Primitive::Dropout, xc.dtype())
        .dropout_forward(seed, p, myelin::detail::view_of(xc), myelin::detail::view_of(out),
                         myelin::detail::view_of(mask));
    if (autograd::needs_grad({&x}))
        record("NativeDropoutBackward0", {&x}, out, [seed, p, mask](const Tensor& g, const Node&) {
            const Tensor gc = g.contiguous();
            Tensor dx = myelin::detail::make_tensor(gc.shape(), gc.dtype(), gc.device());
            backend::train_kernels(myelin::detail::backend_for(gc), backend::Primitive::Dropout,
                                   gc.dtype())
                .dropout_backward(seed, p, myelin::detail::view_of(gc),
                                  myelin::detail::view_of(mask), myelin::detail::view_of(dx));
            return TensorList{dx};
        });
    return out;
}

} // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
    const char* op = "linear";
    require_floating(op, "input", x);
    require_same_dtype(op, "weight", weight, x);
    require_same_dtype(op, "bias", bias, x);
    if (weight.dim() != 2)
        shape_error(op, "expected weight [out_features, in_features] (2-D), got " +
                            weight.shape().str());
    if (x.dim() < 1 || x.size(-1) != weight.size(1))
        shape_error(op, "expected input [*, " + std::to_string(weight.size(1)) + "] (weight " +
                            weight.shape().str() + "), got " + x.shape().str());
    require_vector(op, "bias", bias, weight.size(0));
    // Autocast lowers only the product; the bias add (and its gradient) stays float32.
    if (const auto lower = autocast_dtype();
        lower && x.dtype() == DType::Float32 && x.numel() > 0) {
        const Tensor y = nn::detail::linear_lowered(x, weight, *lower);
        return bias.defined() ? y + bias : y;
    }
    if (nn::detail::linear_f32_applies(x, weight, bias))
        return nn::detail::linear_f32(x, weight, bias);
    const Tensor y = matmul(x, weight.t());
    return bias.defined() ? y + bias : y;
}

Tensor bilinear(const Tensor& x1, const Tensor& x2, const Tensor& weight, const Tensor& bias) {
    const char* op = "bilinear";
    require_floating(op, "input1", x1);
    require_same_dtype(op, "input2", x2, x1);
    require_same_dtype(op, "weight", weight, x1);
    require_same_dtype(op, "bias", bias, x1);
    if (weight.dim() != 3)
        shape_error(op, "expected weight [out_features, in1_features, in2_features] (3-D), got " +
                            weight.shape().str());
    const int64_t out = weight.size(0), in1 = weight.size(1), in2 = weight.size(2);
    if (x1.dim() < 1 || x1.size(-1) != in1)
        shape_error(op, "expected input1 [*, " + std::to_string(in1) + "] (weight " +
                            weight.shape().str() + "), got " + x1.shape().str());
    if (x2.dim() != x1.dim() || x2.size(-1) != in2 || !(leading(x2) == leading(x1)))
        shape_error(op, "expected input2 " + with_last(leading(x1), in2).str() + " (input1 " +
                            x1.shape().str() + ", weight " + weight.shape().str() + "), got " +
                            x2.shape().str());
    require_vector(op, "bias", bias, out);
    const Tensor a = x1.reshape({-1, in1}), c = x2.reshape({-1, in2});
    const int64_t B = a.size(0);
    // t[b, o, j] = sum_i a[b, i] W[o, i, j]; y[b, o] = sum_j t[b, o, j] c[b, j]
    const Tensor t = mm(a, weight.permute({1, 0, 2}).reshape({in1, out * in2})).view({B, out, in2});
    Tensor y = (t * c.unsqueeze(1)).sum({2});
    if (bias.defined()) y = y + bias;
    return y.reshape(with_last(leading(x1), out));
}

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
    check_p("dropout", p);
    require_floating("dropout", "input", x);
    if (!training || p == 0.0) return x;
    if (p == 1.0) return x * zeros_like(x);
    const bool fused = (x.dtype() == DType::Float32 || x.dtype() == DType::Float64) &&
                       myelin::detail::backend_for(x).train_kernels() != nullptr;
    if (fused) return fused_dropout(x, p, gen ? *gen : default_generator());
    Tensor noise =
        bernoulli(x.shape(), 1.0 - p, TensorOptions(x.dtype()).with_device(x.device()), gen);
    noise.div_(1.0 - p);
    return x * noise;
}

Tensor dropout2d(const Tensor& x, double p, bool training, Generator* gen) {
    check_p("dropout2d", p);
    require_floating("dropout2d", "input", x);
    if (x.dim() < 2)
        shape_error("dropout2d",
                    "expected input [N, C, ...] (at least 2-D), got " + x.shape().str());
    if (!training || p == 0.0) return x;
    if (p == 1.0) return x * zeros_like(x);
    Dims ns = Dims::filled(x.dim(), 1);
    ns[0] = x.size(0);
    ns[1] = x.size(1);
    Tensor noise = bernoulli(ns, 1.0 - p, TensorOptions(x.dtype()).with_device(x.device()), gen);
    noise.div_(1.0 - p);
    return x * noise;
}

Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx) {
    const char* op = "embedding";
    if (indices.dtype() != DType::Int64)
        throw DTypeError(std::string(op) + ": expected indices of dtype int64, got " +
                         dtype_name(indices.dtype()));
    require_floating(op, "weight", weight);
    myelin::detail::check_same_device(weight, indices, op);
    if (weight.dim() != 2)
        shape_error(op, "expected weight [num_embeddings, embedding_dim] (2-D), got " +
                            weight.shape().str());
    const int64_t num = weight.size(0), dim = weight.size(1);
    std::optional<int64_t> pad = padding_idx;
    if (pad) {
        if (*pad < -num || *pad >= num)
            throw IndexError(std::string(op) + ": padding_idx " + std::to_string(*pad) +
                             " is out of range for num_embeddings " + std::to_string(num));
        if (*pad < 0) *pad += num;
    }
    const Tensor idx = indices.detach().contiguous().reshape({-1});
    check_int_values(idx, 0, num - 1, std::nullopt, [&](const int64_t* ip, int64_t n) {
        for (int64_t i = 0; i < n; ++i)
            if (ip[i] < 0 || ip[i] >= num)
                throw IndexError(std::string(op) + ": index " + std::to_string(ip[i]) +
                                 " is out of range for num_embeddings " + std::to_string(num) +
                                 " (valid: 0 to " + std::to_string(num - 1) + ")");
    });
    Tensor y;
    {
        autograd::NoGradGuard no_grad;
        y = index_select(weight.detach(), 0, idx).reshape(with_last(indices.shape(), dim));
    }
    if (autograd::needs_grad({&weight}))
        record("EmbeddingBackward0", {&weight}, y,
               [idx, pad, ws = weight.shape()](const Tensor& grad, const Node&) {
                   Tensor g = grad.reshape({-1, ws[1]});
                   if (pad) g = g * ne(idx, static_cast<double>(*pad)).unsqueeze(1).to(g.dtype());
                   return TensorList{scatter_add(zeros(ws, g.options()), 0,
                                                 idx.unsqueeze(1).expand(g.shape()), g)};
               });
    return y;
}

Tensor pad(const Tensor& x, const std::vector<int64_t>& p, const std::string& mode, double value) {
    const char* op = "pad";
    if (p.size() % 2 != 0 || p.size() / 2 > static_cast<size_t>(x.dim()))
        shape_error(op, "expected an even number of pad values, at most 2 per dimension of input " +
                            x.shape().str() + ", got " + std::to_string(p.size()));
    const int n = static_cast<int>(p.size() / 2);
    if (mode == "constant") {
        // Negative pads crop first (a view); then copy into a tensor filled with `value`.
        Tensor cropped = x;
        Dims out = x.shape();
        for (int i = 0; i < n; ++i) {
            const int d = x.dim() - 1 - i;
            const int64_t l = p[2 * i], r = p[2 * i + 1];
            if (x.size(d) + l + r < 0)
                shape_error(op, "padding " + std::to_string(l) + ", " + std::to_string(r) +
                                    " of dim " + std::to_string(d) + " makes input " +
                                    x.shape().str() + " negative in size");
            const int64_t cl = std::max<int64_t>(0, -l), cr = std::max<int64_t>(0, -r);
            cropped = cropped.narrow(d, cl, std::max<int64_t>(0, x.size(d) - cl - cr));
            out[d] = x.size(d) + l + r;
        }
        Tensor y = full(out, value, TensorOptions(x.dtype()).with_device(x.device()));
        auto region = [n, p](Tensor t, const Dims& in) {
            for (int i = 0; i < n; ++i) {
                const int d = t.dim() - 1 - i;
                t = t.narrow(d, std::max<int64_t>(0, p[2 * i]), in[d]);
            }
            return t;
        };
        {
            autograd::NoGradGuard no_grad;
            if (cropped.numel() > 0) region(y, cropped.shape()).copy_(cropped.detach());
        }
        if (autograd::needs_grad({&cropped}))
            record("ConstantPadNdBackward0", {&cropped}, y,
                   [region, in = cropped.shape()](const Tensor& grad, const Node&) {
                       return TensorList{region(grad, in).contiguous()};
                   });
        return y;
    }
    const bool reflect = mode == "reflect", circular = mode == "circular";
    if (!reflect && !circular && mode != "replicate")
        throw Error(std::string(op) + ": unknown mode '" + mode +
                    "' (expected 'constant', 'reflect', 'replicate' or 'circular')");
    Tensor y = x;
    for (int i = 0; i < n; ++i) {
        const int d = x.dim() - 1 - i;
        const int64_t l = p[2 * i], r = p[2 * i + 1], L = x.size(d);
        if (l < 0 || r < 0)
            shape_error(op, mode + " padding must be non-negative, got " + std::to_string(l) +
                                ", " + std::to_string(r) + " for dim " + std::to_string(d));
        if (l == 0 && r == 0) continue;
        if (circular && (l > L || r > L))
            shape_error(op, "circular padding of " + std::to_string(std::max(l, r)) +
                                " needs dim " + std::to_string(d) +
                                " at least that large, got input " + x.shape().str());
        if (reflect ? (l >= L || r >= L) : L == 0)
            shape_error(op, mode + " padding (" + std::to_string(l) + ", " + std::to_string(r) +
                                ") must be " +
                                (reflect ? "smaller than" : "used with a non-empty") + " dim " +
                                std::to_string(d) + " of input " + x.shape().str());
        std::vector<int64_t> index(static_cast<size_t>(L + l + r));
        for (int64_t j = 0; j < L + l + r; ++j) {
            int64_t s = j - l;
            if (reflect) {
                if (s < 0) s = -s;
                if (s >= L) s = 2 * (L - 1) - s;
            } else if (circular) { // wraps around: the last rows pad the top
                s = (s + L) % L;
            } else {
                s = std::clamp<int64_t>(s, 0, L - 1);
            }
            index[static_cast<size_t>(j)] = s;
        }
        y = index_select(y, d, from_vector(index, {L + l + r}).to(x.device()));
    }
    return y;
}

namespace {
// An upsampling's input is [N, C, H, W] and its integer scale factors are at least 1.
void check_upsample(const char* op, const Tensor& x, std::array<int64_t, 2> s) {
    if (x.dim() != 4) shape_error(op, "expected input [N, C, H, W] (4-D), got " + x.shape().str());
    if (s[0] < 1 || s[1] < 1)
        shape_error(op, "expected scale factors >= 1, got (" + std::to_string(s[0]) + ", " +
                            std::to_string(s[1]) + ")");
}
} // namespace

Tensor upsample_nearest2d(const Tensor& x, std::array<int64_t, 2> s) {
    const char* op = "upsample_nearest2d";
    require_floating(op, "input", x);
    check_upsample(op, x, s);
    const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
    return x.reshape({N, C, H, 1, W, 1})
        .expand({N, C, H, s[0], W, s[1]})
        .reshape({N, C, H * s[0], W * s[1]});
}

namespace {

// Linear interpolation of x along `dim` to out = in * scale samples, with PyTorch's source
// coordinates computed in x's dtype (float32 or float64) as PyTorch's kernel does, so the
// weights match its bit for bit. Differentiable (index_select and element-wise ops).
template <typename T>
Tensor lerp_axis(const Tensor& x, int dim, int64_t scale, bool align_corners) {
    const int64_t in = x.size(dim), out = in * scale;
    std::vector<int64_t> lo(static_cast<size_t>(out)), hi(lo.size());
    std::vector<T> w_lo(lo.size()), w_hi(lo.size());
    const T step = align_corners
                       ? (out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0))
                       : T(1) / static_cast<T>(scale);
    for (int64_t d = 0; d < out; ++d) {
        const T src = align_corners ? step * static_cast<T>(d)
                                    : std::max(step * (static_cast<T>(d) + T(0.5)) - T(0.5), T(0));
        const auto i = static_cast<size_t>(d);
        lo[i] = std::min(static_cast<int64_t>(src), in - 1);
        hi[i] = lo[i] + (lo[i] < in - 1 ? 1 : 0);
        w_hi[i] = src - static_cast<T>(lo[i]);
        w_lo[i] = T(1) - w_hi[i];
    }
    Dims wshape = Dims::filled(x.dim(), 1);
    wshape[dim] = out;
    // Indices and weights are computed here, on the host, and go to x's device.
    const Device device = x.device();
    const Tensor a = index_select(x, dim, from_vector(lo, {out}).to(device));
    const Tensor b = index_select(x, dim, from_vector(hi, {out}).to(device));
    return a * from_vector(w_lo, wshape).to(device) + b * from_vector(w_hi, wshape).to(device);
}

} // namespace

Tensor upsample_bilinear2d(const Tensor& x, std::array<int64_t, 2> s, bool align_corners) {
    const char* op = "upsample_bilinear2d";
    require_f32_f64(op, "input", x);
    check_upsample(op, x, s);
    // Width first, then height: the order of PyTorch's h0 * (w0 * a + w1 * b) + h1 * (...).
    if (x.dtype() == DType::Float64)
        return lerp_axis<double>(lerp_axis<double>(x, 3, s[1], align_corners), 2, s[0],
                                 align_corners);
    return lerp_axis<float>(lerp_axis<float>(x, 3, s[1], align_corners), 2, s[0], align_corners);
}

Tensor one_hot(const Tensor& indices, int64_t num_classes) {
    const char* op = "one_hot";
    if (indices.dtype() != DType::Int64)
        throw DTypeError(std::string(op) + ": expected indices of dtype int64, got " +
                         dtype_name(indices.dtype()));
    const Tensor idx = indices.detach().to(kCPU).contiguous(); // counted on the host
    const int64_t* ip = idx.data<int64_t>();
    const int64_t count = idx.numel();
    if (num_classes == -1) {
        if (count == 0) shape_error(op, "can not infer the number of classes from an empty tensor");
        num_classes = *std::max_element(ip, ip + count) + 1;
    } else if (num_classes < 1) {
        shape_error(op, "expected num_classes >= 1 or -1, got " + std::to_string(num_classes));
    }
    for (int64_t i = 0; i < count; ++i)
        if (ip[i] < 0 || ip[i] >= num_classes)
            throw IndexError(std::string(op) + ": class value " + std::to_string(ip[i]) +
                             " is out of range for num_classes " + std::to_string(num_classes));
    Tensor y = zeros(with_last(indices.shape(), num_classes), DType::Int64);
    int64_t* yp = y.data<int64_t>();
    for (int64_t i = 0; i < count; ++i)
        yp[i * num_classes + ip[i]] = 1;
    return y.to(indices.device());
}

Tensor hardswish(const Tensor& x) {
    require_floating("hardswish", "input", x);
    Tensor y;
    {
        autograd::NoGradGuard no_grad;
        y = x.detach() * clamp(x.detach() + 3.0, 0.0, 6.0) / 6.0;
    }
    if (autograd::needs_grad({&x}))
        record("HardswishBackward0", {&x}, y,
               [sx = autograd::SavedTensor(x.detach())](const Tensor& grad, const Node& n) {
                   const Tensor xs = sx.unpack(n);
                   const Tensor d = where(lt(xs, -3.0), zeros_like(xs),
                                          where(le(xs, 3.0), xs / 3.0 + 0.5, ones_like(xs)));
                   return TensorList{grad * d};
               });
    return y;
}

Tensor prelu(const Tensor& x, const Tensor& weight) {
    const char* op = "prelu";
    require_floating(op, "input", x);
    require_same_dtype(op, "weight", weight, x);
    if (weight.dim() != 1)
        shape_error(op, "expected weight [1] or [C] (1-D), got " + weight.shape().str());
    Tensor w = weight;
    if (weight.numel() != 1) {
        if (x.dim() < 2 || x.size(1) != weight.numel())
            shape_error(op, "expected input [N, " + std::to_string(weight.numel()) +
                                ", ...] (weight " + weight.shape().str() + "), got " +
                                x.shape().str());
        Dims ws = Dims::filled(x.dim(), 1);
        ws[1] = weight.numel();
        w = weight.reshape(ws);
    }
    return where(gt(x, 0.0), x, w * x);
}

} // namespace myelin::nn::functional
