// Convolutions: conv2d, conv1d (as conv2d with H = 1) and conv_transpose2d (the adjoint of
// conv2d: its forward is conv2d's backward-data). float32 runs on oneDNN primitives (forward,
// backward data, backward weights), cached by shape; float64 (gradcheck, f64 golden tests) runs
// on straightforward loops that accumulate in double. Activations stay nchw (the contract);
// weights go to whatever format oneDNN picks for the primitive. Under bfloat16 autocast the
// same primitives take bf16 operands (src, weights, diff_dst: rounded to nearest even by the
// reorders that already convert layouts) and write float32 (dst, diff_src, diff_weights).
#include "autograd/function.h"
#include "nn/dnnl_util.h"
#include "nn/functional_common.h"
#include "tensor/tensor_impl.h"

#include <myelin/autocast.h>
#include <myelin/nn/functional.h>

#include <mutex>

namespace myelin::nn::functional {

using autograd::Node;
using autograd::record;
using autograd::SavedTensor;
using myelin::detail::make_tensor;
using namespace myelin::nn::detail;

namespace {

// The geometry of one 2-D convolution y = conv(x, w): x [N, C, H, W], w [O, C/G, KH, KW],
// y [N, O, OH, OW]. Right padding is whatever makes the output size exact.
struct Geom {
    int64_t N, C, H, W, O, KH, KW, OH, OW;
    int64_t sh, sw, dh, dw, ph, pw, G;
    bool bf16 = false; // multiply in bfloat16 (autocast), accumulate and write float32
    int64_t phr() const { return (OH - 1) * sh + (KH - 1) * dh + 1 - H - ph; }
    int64_t pwr() const { return (OW - 1) * sw + (KW - 1) * dw + 1 - W - pw; }
};

// --- reference loops (float64, and float32 where oneDNN cannot run the geometry) -------------

template <typename T> void ref_forward(const T* x, const T* w, const T* b, T* y, const Geom& g) {
    const int64_t Cg = g.C / g.G, Og = g.O / g.G;
#pragma omp parallel for collapse(2) if (g.N * g.O * g.OH * g.OW > 4096)
    for (int64_t n = 0; n < g.N; ++n)
        for (int64_t o = 0; o < g.O; ++o) {
            const int64_t grp = o / Og;
            T* yp = y + (n * g.O + o) * g.OH * g.OW;
            for (int64_t oh = 0; oh < g.OH; ++oh)
                for (int64_t ow = 0; ow < g.OW; ++ow) {
                    double acc = b ? static_cast<double>(b[o]) : 0.0;
                    for (int64_t c = 0; c < Cg; ++c) {
                        const T* xp = x + (n * g.C + grp * Cg + c) * g.H * g.W;
                        const T* wp = w + (o * Cg + c) * g.KH * g.KW;
                        for (int64_t kh = 0; kh < g.KH; ++kh) {
                            const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
                            if (ih < 0 || ih >= g.H) continue;
                            for (int64_t kw = 0; kw < g.KW; ++kw) {
                                const int64_t iw = ow * g.sw - g.pw + kw * g.dw;
                                if (iw < 0 || iw >= g.W) continue;
                                acc += static_cast<double>(xp[ih * g.W + iw]) * wp[kh * g.KW + kw];
                            }
                        }
                    }
                    yp[oh * g.OW + ow] = static_cast<T>(acc);
                }
        }
}

template <typename T> void ref_backward_data(const T* gy, const T* w, T* gx, const Geom& g) {
    const int64_t Cg = g.C / g.G, Og = g.O / g.G;
#pragma omp parallel for collapse(2) if (g.N * g.C * g.H * g.W > 4096)
    for (int64_t n = 0; n < g.N; ++n)
        for (int64_t ci = 0; ci < g.C; ++ci) {
            const int64_t grp = ci / Cg, c = ci % Cg;
            T* gxp = gx + (n * g.C + ci) * g.H * g.W;
            for (int64_t ih = 0; ih < g.H; ++ih)
                for (int64_t iw = 0; iw < g.W; ++iw) {
                    double acc = 0.0;
                    for (int64_t kh = 0; kh < g.KH; ++kh) {
                        const int64_t th = ih + g.ph - kh * g.dh;
                        if (th < 0 || th % g.sh) continue;
                        const int64_t oh = th / g.sh;
                        if (oh >= g.OH) continue;
                        for (int64_t kw = 0; kw < g.KW; ++kw) {
                            const int64_t tw = iw + g.pw - kw * g.dw;
                            if (tw < 0 || tw % g.sw) continue;
                            const int64_t ow = tw / g.sw;
                            if (ow >= g.OW) continue;
                            for (int64_t oo = 0; oo < Og; ++oo) {
                                const int64_t o = grp * Og + oo;
                                acc += static_cast<double>(
                                           gy[((n * g.O + o) * g.OH + oh) * g.OW + ow]) *
                                       w[((o * Cg + c) * g.KH + kh) * g.KW + kw];
                            }
                        }
                    }
                    gxp[ih * g.W + iw] = static_cast<T>(acc);
                }
        }
}

template <typename T>
void ref_backward_weights(const T* x, const T* gy, T* gw, T* gb, const Geom& g) {
    const int64_t Cg = g.C / g.G, Og = g.O / g.G;
#pragma omp parallel for collapse(2) if (g.O * Cg * g.N * g.OH * g.OW > 4096)
    for (int64_t o = 0; o < g.O; ++o)
        for (int64_t c = 0; c < Cg; ++c) {
            const int64_t ci = (o / Og) * Cg + c;
            for (int64_t kh = 0; kh < g.KH; ++kh)
                for (int64_t kw = 0; kw < g.KW; ++kw) {
                    double acc = 0.0;
                    for (int64_t n = 0; n < g.N; ++n) {
                        const T* xp = x + (n * g.C + ci) * g.H * g.W;
                        const T* gp = gy + (n * g.O + o) * g.OH * g.OW;
                        for (int64_t oh = 0; oh < g.OH; ++oh) {
                            const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
                            if (ih < 0 || ih >= g.H) continue;
                            for (int64_t ow = 0; ow < g.OW; ++ow) {
                                const int64_t iw = ow * g.sw - g.pw + kw * g.dw;
                                if (iw < 0 || iw >= g.W) continue;
                                acc += static_cast<double>(gp[oh * g.OW + ow]) * xp[ih * g.W + iw];
                            }
                        }
                    }
                    gw[((o * Cg + c) * g.KH + kh) * g.KW + kw] = static_cast<T>(acc);
                }
        }
    if (gb)
        for (int64_t o = 0; o < g.O; ++o) {
            double acc = 0.0;
            for (int64_t n = 0; n < g.N; ++n) {
                const T* gp = gy + (n * g.O + o) * g.OH * g.OW;
                for (int64_t i = 0; i < g.OH * g.OW; ++i)
                    acc += gp[i];
            }
            gb[o] = static_cast<T>(acc);
        }
}

// --- oneDNN (float32) ------------------------------------------------------------------------

using dnnl::memory;
namespace du = myelin::nn::dnnl_util;

struct ConvEntry {
    memory::desc src, dst, user_w, bias; // user formats: nchw activations, (g)oihw weights
    memory::desc any_src, any_dst;       // forward src and dst as the primitives are created
    // The multiplied operands (src, weights, diff_dst) are `lo` (f32, or bf16 under autocast);
    // dst, diff_src, diff_weights and bias are always f32.
    memory::data_type lo = memory::data_type::f32;
    memory::desc any(const memory::dims& d, memory::data_type t) const {
        return memory::desc(d, t, memory::format_tag::any);
    }
    memory::dims strides, dilates, pad_l, pad_r;
    dnnl::convolution_forward::primitive_desc fwd_pd;
    dnnl::convolution_forward fwd;
    std::once_flag bd_once, bw_once;
    dnnl::convolution_backward_data::primitive_desc bd_pd;
    dnnl::convolution_backward_data bd;
    dnnl::convolution_backward_weights::primitive_desc bw_pd;
    dnnl::convolution_backward_weights bw;
    bool has_bias = false;
};

du::PrimitiveCache<ConvEntry>& conv_cache() {
    static du::PrimitiveCache<ConvEntry> cache;
    return cache;
}

// Float32 3x3 stride-1 convolutions with channels in multiples of 16 run Winograd F(4x4, 3x3)
// where oneDNN has it (AVX-512): 1.3-1.5x faster than the direct kernels in every pass of a
// CNN's inner layers. (oneDNN would also take a first layer's 1 or 3 channels, padded to 16, and
// run 5x slower.) Everything else, and bf16, runs direct convolution.
template <typename MakePd> auto with_algorithm(const Geom& g, MakePd&& make) {
    if (!g.bf16 && g.G == 1 && g.C % 16 == 0 && g.O % 16 == 0 && g.KH == 3 && g.KW == 3 &&
        g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1) {
        try {
            return make(dnnl::algorithm::convolution_winograd);
        } catch (const dnnl::error&) { // not for this geometry or CPU
        }
    }
    return make(dnnl::algorithm::convolution_direct);
}

std::shared_ptr<ConvEntry> conv_entry(const Geom& g, bool has_bias) {
    const std::vector<int64_t> key{g.N,  g.C,  g.H,  g.W,  g.O,  g.KH, g.KW, g.OH,     g.OW,
                                   g.sh, g.sw, g.dh, g.dw, g.ph, g.pw, g.G,  has_bias, g.bf16};
    return conv_cache().get(key, [&] {
        auto e = std::make_shared<ConvEntry>();
        using tag = memory::format_tag;
        const auto f32 = memory::data_type::f32;
        e->lo = g.bf16 ? memory::data_type::bf16 : f32;
        e->has_bias = has_bias;
        e->src = memory::desc({g.N, g.C, g.H, g.W}, f32, tag::nchw);
        e->dst = memory::desc({g.N, g.O, g.OH, g.OW}, f32, tag::nchw);
        e->user_w = g.G == 1
                        ? memory::desc({g.O, g.C, g.KH, g.KW}, f32, tag::oihw)
                        : memory::desc({g.G, g.O / g.G, g.C / g.G, g.KH, g.KW}, f32, tag::goihw);
        const memory::desc any_w = e->any(e->user_w.dims(), e->lo);
        e->bias = memory::desc({g.O}, f32, tag::x);
        // Activations: let oneDNN pick (blocked nChw8c/16c gets the direct JIT kernels, far
        // faster than the gemm-based nchw ones); inputs and outputs are reordered at the edges.
        e->any_src = e->any(e->src.dims(), e->lo);
        e->any_dst = e->any(e->dst.dims(), f32);
        e->strides = {g.sh, g.sw};
        e->dilates = {g.dh - 1, g.dw - 1};
        e->pad_l = {g.ph, g.pw};
        e->pad_r = {g.phr(), g.pwr()};
        e->fwd_pd = with_algorithm(g, [&](dnnl::algorithm algo) {
            const auto fd =
                has_bias
                    ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algo,
                                                      e->any_src, any_w, e->bias, e->any_dst,
                                                      e->strides, e->dilates, e->pad_l, e->pad_r)
                    : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algo,
                                                      e->any_src, any_w, e->any_dst, e->strides,
                                                      e->dilates, e->pad_l, e->pad_r);
            return dnnl::convolution_forward::primitive_desc(fd, du::user_scratchpad(),
                                                             du::engine());
        });
        e->fwd = dnnl::convolution_forward(e->fwd_pd);
        return e;
    });
}

// `t`'s data as a memory of format `want` (reordered into a scratch memory when it differs).
memory input_as(const memory::desc& want, const memory::desc& have, const Tensor& t) {
    memory user = du::memory_of(have, t);
    if (want == have) return user;
    memory m(want, du::engine());
    dnnl::reorder(user, m).execute(du::stream(), user, m);
    return m;
}

// The output gradient as diff_dst of format `want`; `cache` (optional) shares one reorder
// between backward-data and backward-weights.
memory diff_dst_as(const memory::desc& want, const memory::desc& have, const Tensor& gy,
                   memory* cache) {
    if (cache && *cache && cache->get_desc() == want) return *cache;
    memory m = input_as(want, have, gy);
    if (cache) *cache = m;
    return m;
}

// An output memory of format `want` that ends up in tensor `t` (format `have`); call finish().
struct OutputMem {
    memory user, mem;
    OutputMem(const memory::desc& want, const memory::desc& have, const Tensor& t)
        : user(du::memory_of(have, t)), mem(want == have ? user : memory(want, du::engine())) {}
    void finish() {
        if (mem.get() != user.get()) dnnl::reorder(mem, user).execute(du::stream(), mem, user);
    }
};

// oneDNN needs right padding >= 0 (conv_transpose2d with output_padding > padding has less).
bool onednn_ok(const Tensor& t, const Geom& g) {
    return t.dtype() == DType::Float32 && g.phr() >= 0 && g.pwr() >= 0 &&
           (!g.bf16 || du::bf16_supported());
}

// Where oneDNN cannot run a bf16 geometry: the float32 path on operands rounded to bf16 gives the
// same values (bf16 products are exact in float32).
Tensor round_bf16(const Tensor& t) {
    return t.to(DType::BFloat16).to(DType::Float32);
}
Geom as_f32(Geom g) {
    g.bf16 = false;
    return g;
}

Tensor forward_raw(const Tensor& x, const Tensor& w, const Tensor& b, const Geom& g) {
    if (g.bf16 && !onednn_ok(x, g)) return forward_raw(round_bf16(x), round_bf16(w), b, as_f32(g));
    Tensor y = make_tensor({g.N, g.O, g.OH, g.OW}, x.dtype(), x.device());
    if (onednn_ok(x, g)) {
        auto e = conv_entry(g, b.defined());
        memory src = input_as(e->fwd_pd.src_desc(), e->src, x);
        memory wm = input_as(e->fwd_pd.weights_desc(), e->user_w, w);
        OutputMem dst(e->fwd_pd.dst_desc(), e->dst, y);
        std::unordered_map<int, memory> args{
            {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, dst.mem}};
        if (b.defined()) args.emplace(DNNL_ARG_BIAS, du::memory_of(e->bias, b));
        const Tensor scratch = du::add_scratchpad(e->fwd_pd.scratchpad_desc(), args);
        e->fwd.execute(du::stream(), args);
        dst.finish();
        du::stream().wait();
    } else if (x.dtype() == DType::Float32) {
        ref_forward(x.data<float>(), w.data<float>(), b.defined() ? b.data<float>() : nullptr,
                    y.data<float>(), g);
    } else {
        ref_forward(x.data<double>(), w.data<double>(), b.defined() ? b.data<double>() : nullptr,
                    y.data<double>(), g);
    }
    return y;
}

Tensor backward_data_raw(const Tensor& gy, const Tensor& w, const Geom& g,
                         memory* dd_cache = nullptr) {
    if (g.bf16 && !onednn_ok(gy, g))
        return backward_data_raw(round_bf16(gy), round_bf16(w), as_f32(g));
    Tensor gx = make_tensor({g.N, g.C, g.H, g.W}, gy.dtype(), gy.device());
    if (onednn_ok(gy, g)) {
        auto e = conv_entry(g, false);
        std::call_once(e->bd_once, [&] {
            const auto f32 = memory::data_type::f32;
            e->bd_pd = with_algorithm(g, [&](dnnl::algorithm algo) {
                const dnnl::convolution_backward_data::desc d(
                    algo, e->any(e->src.dims(), f32), e->any(e->user_w.dims(), e->lo),
                    e->any(e->dst.dims(), e->lo), e->strides, e->dilates, e->pad_l, e->pad_r);
                return dnnl::convolution_backward_data::primitive_desc(d, du::user_scratchpad(),
                                                                       du::engine(), e->fwd_pd);
            });
            e->bd = dnnl::convolution_backward_data(e->bd_pd);
        });
        memory dd = diff_dst_as(e->bd_pd.diff_dst_desc(), e->dst, gy, dd_cache);
        memory wm = input_as(e->bd_pd.weights_desc(), e->user_w, w);
        OutputMem ds(e->bd_pd.diff_src_desc(), e->src, gx);
        std::unordered_map<int, memory> args{
            {DNNL_ARG_DIFF_DST, dd}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DIFF_SRC, ds.mem}};
        const Tensor scratch = du::add_scratchpad(e->bd_pd.scratchpad_desc(), args);
        e->bd.execute(du::stream(), args);
        ds.finish();
        du::stream().wait();
    } else if (gy.dtype() == DType::Float32) {
        ref_backward_data(gy.data<float>(), w.data<float>(), gx.data<float>(), g);
    } else {
        ref_backward_data(gy.data<double>(), w.data<double>(), gx.data<double>(), g);
    }
    return gx;
}

// Weight gradient [O, C/G, KH, KW] and, when `gb` is given, the bias gradient [O].
Tensor backward_weights_raw(const Tensor& x, const Tensor& gy, const Geom& g, Tensor* gb,
                            memory* dd_cache = nullptr) {
    if (g.bf16 && !onednn_ok(x, g))
        return backward_weights_raw(round_bf16(x), round_bf16(gy), as_f32(g), gb);
    Tensor gw = make_tensor({g.O, g.C / g.G, g.KH, g.KW}, x.dtype(), x.device());
    if (gb) *gb = make_tensor({g.O}, x.dtype(), x.device());
    if (onednn_ok(x, g)) {
        auto e = conv_entry(g, gb != nullptr);
        std::call_once(e->bw_once, [&] {
            const memory::desc any_w = e->any(e->user_w.dims(), memory::data_type::f32);
            const memory::desc any_dd = e->any(e->dst.dims(), e->lo);
            e->bw_pd = with_algorithm(g, [&](dnnl::algorithm algo) {
                const auto d =
                    e->has_bias
                        ? dnnl::convolution_backward_weights::desc(algo, e->any_src, any_w, e->bias,
                                                                   any_dd, e->strides, e->dilates,
                                                                   e->pad_l, e->pad_r)
                        : dnnl::convolution_backward_weights::desc(algo, e->any_src, any_w, any_dd,
                                                                   e->strides, e->dilates, e->pad_l,
                                                                   e->pad_r);
                return dnnl::convolution_backward_weights::primitive_desc(d, du::user_scratchpad(),
                                                                          du::engine(), e->fwd_pd);
            });
            e->bw = dnnl::convolution_backward_weights(e->bw_pd);
        });
        memory src = input_as(e->bw_pd.src_desc(), e->src, x);
        memory dd = diff_dst_as(e->bw_pd.diff_dst_desc(), e->dst, gy, dd_cache);
        OutputMem dw(e->bw_pd.diff_weights_desc(), e->user_w, gw);
        std::unordered_map<int, memory> args{
            {DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, dd}, {DNNL_ARG_DIFF_WEIGHTS, dw.mem}};
        if (gb) args.emplace(DNNL_ARG_DIFF_BIAS, du::memory_of(e->bias, *gb));
        const Tensor scratch = du::add_scratchpad(e->bw_pd.scratchpad_desc(), args);
        e->bw.execute(du::stream(), args);
        dw.finish();
        du::stream().wait();
    } else if (x.dtype() == DType::Float32) {
        ref_backward_weights(x.data<float>(), gy.data<float>(), gw.data<float>(),
                             gb ? gb->data<float>() : nullptr, g);
    } else {
        ref_backward_weights(x.data<double>(), gy.data<double>(), gw.data<double>(),
                             gb ? gb->data<double>() : nullptr, g);
    }
    return gw;
}

void check_common(const char* op, const Tensor& x, const Tensor& w, const Tensor& b) {
    require_f32_f64(op, "input", x);
    require_same_dtype(op, "weight", w, x);
    require_same_dtype(op, "bias", b, x);
    myelin::detail::check_same_device(x, w, op);
    if (!x.device().is_cpu())
        throw DeviceError(std::string(op) + ": only CPU tensors are supported for now, got " +
                          x.device().str());
}

std::string ints(std::initializer_list<int64_t> v) {
    std::string s = "(";
    for (int64_t x : v)
        s += (s.size() > 1 ? ", " : "") + std::to_string(x);
    return s + ")";
}

// Whether this call multiplies in bf16: autocast is on and the operands are float32 (float64
// stays float64, as in PyTorch's autocast, which only lowers float32).
bool autocast_bf16(const Tensor& x) {
    return x.dtype() == DType::Float32 && autocast_dtype() == DType::BFloat16;
}

// The differentiable conv2d on validated, 4-D operands.
Tensor conv2d_impl(const Tensor& x, const Tensor& w, const Tensor& b, Geom g) {
    g.bf16 = autocast_bf16(x);
    const Tensor xc = x.detach().contiguous(), wc = w.detach().contiguous();
    const Tensor bc = b.defined() ? b.detach().contiguous() : Tensor();
    Tensor y = forward_raw(xc, wc, bc, g);
    if (autograd::needs_grad({&x, &w, &b}))
        record("ConvolutionBackward0", {&x, &w, &b}, y,
               [sx = SavedTensor(xc), sw = SavedTensor(wc), g](const Tensor& grad, const Node& n) {
                   const Tensor gy = grad.contiguous();
                   TensorList r(3);
                   memory dd; // gy reordered once for both backward primitives
                   if (n.needs_input_grad(0)) r[0] = backward_data_raw(gy, sw.unpack(n), g, &dd);
                   if (n.needs_input_grad(1) || n.needs_input_grad(2)) {
                       Tensor gb;
                       Tensor gw = backward_weights_raw(sx.unpack(n), gy, g,
                                                        n.needs_input_grad(2) ? &gb : nullptr, &dd);
                       if (n.needs_input_grad(1)) r[1] = gw;
                       r[2] = gb;
                   }
                   return r;
               });
    return y;
}

// Validates and fills the geometry of conv2d(x [N, C, H, W], w [O, C/G, KH, KW]).
Geom conv_geom(const char* op, const Tensor& x, const Tensor& w, const Tensor& b,
               std::array<int64_t, 2> stride, std::array<int64_t, 2> padding,
               std::array<int64_t, 2> dilation, int64_t groups, bool same, bool is_1d) {
    const char* in_layout = is_1d ? "[N, C, L]" : "[N, C, H, W]";
    const char* w_layout = is_1d ? "[O, C/groups, k]" : "[O, C/groups, kh, kw]";
    const Tensor x4 = is_1d && x.dim() == 3 ? x.unsqueeze(2) : x;
    const Tensor w4 = is_1d && w.dim() == 3 ? w.unsqueeze(2) : w;
    require_dim(op, "input", x, is_1d ? 3 : 4, in_layout);
    require_dim(op, "weight", w, is_1d ? 3 : 4, w_layout);
    if (groups < 1) shape_error(op, "expected groups >= 1, got " + std::to_string(groups));
    for (int i = 0; i < 2; ++i) {
        if (stride[i] < 1 || dilation[i] < 1 || padding[i] < 0)
            shape_error(op, "expected stride >= 1, dilation >= 1 and padding >= 0, got stride " +
                                ints({stride[0], stride[1]}) + ", padding " +
                                ints({padding[0], padding[1]}) + ", dilation " +
                                ints({dilation[0], dilation[1]}));
    }
    Geom g{};
    g.N = x4.size(0), g.C = x4.size(1), g.H = x4.size(2), g.W = x4.size(3);
    g.O = w4.size(0), g.KH = w4.size(2), g.KW = w4.size(3);
    g.G = groups;
    if (g.O % groups != 0)
        shape_error(op,
                    "expected weight " + w.shape().str() +
                        " to have out_channels divisible by groups = " + std::to_string(groups));
    if (g.C != w4.size(1) * groups)
        shape_error(op, std::string("expected input ") + in_layout + " with C = " +
                            std::to_string(w4.size(1) * groups) + " (weight " + w.shape().str() +
                            (groups > 1 ? ", groups " + std::to_string(groups) : std::string()) +
                            "), got " + x.shape().str());
    require_vector(op, "bias", b, g.O);
    g.sh = stride[0], g.sw = stride[1], g.dh = dilation[0], g.dw = dilation[1];
    int64_t total_h = 2 * padding[0], total_w = 2 * padding[1];
    if (same) {
        if (g.sh != 1 || g.sw != 1)
            shape_error(op, "padding='same' is not supported for strided convolutions");
        total_h = g.dh * (g.KH - 1), total_w = g.dw * (g.KW - 1);
        g.ph = total_h / 2, g.pw = total_w / 2;
    } else {
        g.ph = padding[0], g.pw = padding[1];
    }
    const int64_t eh = g.dh * (g.KH - 1) + 1, ew = g.dw * (g.KW - 1) + 1;
    if (g.H + total_h < eh || g.W + total_w < ew)
        shape_error(
            op, "input " + x.shape().str() + " (padded " +
                    (is_1d ? std::to_string(g.W + total_w)
                           : std::to_string(g.H + total_h) + "x" + std::to_string(g.W + total_w)) +
                    ") is smaller than the dilated kernel (" +
                    (is_1d ? std::to_string(ew) : std::to_string(eh) + "x" + std::to_string(ew)) +
                    ")");
    g.OH = (g.H + total_h - eh) / g.sh + 1;
    g.OW = (g.W + total_w - ew) / g.sw + 1;
    if (g.N == 0 || g.C == 0 || g.O == 0)
        shape_error(op, "empty input or weight is not supported, got input " + x.shape().str() +
                            " and weight " + w.shape().str());
    return g;
}

} // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions& o) {
    check_common("conv2d", x, weight, bias);
    const Geom g = conv_geom("conv2d", x, weight, bias, o.stride, o.padding, o.dilation, o.groups,
                             o.same_padding, false);
    return conv2d_impl(x, weight, bias, g);
}

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv1dOptions& o) {
    check_common("conv1d", x, weight, bias);
    const Geom g = conv_geom("conv1d", x, weight, bias, {1, o.stride}, {0, o.padding},
                             {1, o.dilation}, o.groups, o.same_padding, true);
    return conv2d_impl(x.unsqueeze(2), weight.unsqueeze(2), bias, g).squeeze(2);
}

Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
                        const ConvTranspose2dOptions& o) {
    const char* op = "conv_transpose2d";
    check_common(op, x, weight, bias);
    require_dim(op, "input", x, 4, "[N, C, H, W]");
    require_dim(op, "weight", weight, 4, "[C, O/groups, kh, kw]");
    const int64_t groups = o.groups;
    if (groups < 1) shape_error(op, "expected groups >= 1, got " + std::to_string(groups));
    if (x.size(1) != weight.size(0))
        shape_error(op, "expected input [N, C, H, W] with C = " + std::to_string(weight.size(0)) +
                            " (weight " + weight.shape().str() + "), got " + x.shape().str());
    if (weight.size(0) % groups != 0)
        shape_error(op, "expected weight " + weight.shape().str() +
                            " to have in_channels divisible by groups = " + std::to_string(groups));
    for (int i = 0; i < 2; ++i)
        if (o.stride[i] < 1 || o.dilation[i] < 1 || o.padding[i] < 0 || o.output_padding[i] < 0 ||
            (o.output_padding[i] >= o.stride[i] && o.output_padding[i] >= o.dilation[i]))
            shape_error(op, "invalid stride " + ints({o.stride[0], o.stride[1]}) + ", padding " +
                                ints({o.padding[0], o.padding[1]}) + ", output_padding " +
                                ints({o.output_padding[0], o.output_padding[1]}) + " or dilation " +
                                ints({o.dilation[0], o.dilation[1]}) +
                                " (output_padding must be smaller than stride or dilation)");
    // As a convolution: its input is our output [N, O, OH, OW], its output is our input.
    Geom g{};
    g.N = x.size(0), g.O = x.size(1), g.OH = x.size(2), g.OW = x.size(3);
    g.C = weight.size(1) * groups, g.KH = weight.size(2), g.KW = weight.size(3), g.G = groups;
    g.sh = o.stride[0], g.sw = o.stride[1], g.dh = o.dilation[0], g.dw = o.dilation[1];
    g.ph = o.padding[0], g.pw = o.padding[1];
    g.bf16 = autocast_bf16(x);
    g.H = (g.OH - 1) * g.sh - 2 * g.ph + g.dh * (g.KH - 1) + o.output_padding[0] + 1;
    g.W = (g.OW - 1) * g.sw - 2 * g.pw + g.dw * (g.KW - 1) + o.output_padding[1] + 1;
    require_vector(op, "bias", bias, g.C);
    if (g.H <= 0 || g.W <= 0)
        shape_error(op, "output size would be " + std::to_string(g.H) + "x" + std::to_string(g.W) +
                            " for input " + x.shape().str() + ", which is too small");
    if (g.N == 0 || g.C == 0 || g.O == 0)
        shape_error(op, "empty input or weight is not supported, got input " + x.shape().str() +
                            " and weight " + weight.shape().str());
    const Tensor xc = x.detach().contiguous(), wc = weight.detach().contiguous();
    Tensor y = backward_data_raw(xc, wc, g);
    if (bias.defined()) {
        const Tensor bc = bias.detach().contiguous();
        autograd::NoGradGuard ng;
        y.add_(bc.view({1, g.C, 1, 1}));
    }
    if (autograd::needs_grad({&x, &weight, &bias}))
        record("ConvolutionBackward0", {&x, &weight, &bias}, y,
               [sx = SavedTensor(xc), sw = SavedTensor(wc), g](const Tensor& grad, const Node& n) {
                   const Tensor gy = grad.contiguous();
                   TensorList r(3);
                   if (n.needs_input_grad(0)) r[0] = forward_raw(gy, sw.unpack(n), {}, g);
                   if (n.needs_input_grad(1))
                       r[1] = backward_weights_raw(gy, sx.unpack(n), g, nullptr);
                   if (n.needs_input_grad(2)) r[2] = gy.sum({0, 2, 3});
                   return r;
               });
    return y;
}

} // namespace myelin::nn::functional
