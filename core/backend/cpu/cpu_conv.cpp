// The CPU backend's convolutions (nn_kernels.h): float32 runs on oneDNN primitives (forward,
// backward data, backward weights), cached by shape; float64 (gradcheck, f64 golden tests) runs
// on straightforward loops that accumulate in double. Activations stay nchw (the contract);
// weights go to whatever format oneDNN picks for the primitive. Under bfloat16 autocast the
// same primitives take bf16 operands (src, weights, diff_dst: rounded to nearest even by the
// reorders that already convert layouts) and write float32 (dst, diff_src, diff_weights).
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_nn.h"
#include "backend/cpu/dnnl_util.h"
#include "backend/cpu/nchw16c.h"
#include "backend/kernels/elementwise.h"

#include <myelin/dtype.h>
#include <myelin/error.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <vector>

namespace myelin::backend {

namespace {

using Geom = ConvGeometry;

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
namespace du = myelin::backend::dnnl_util;

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
    dnnl::algorithm algo = dnnl::algorithm::convolution_direct; // of fwd_pd
    // The forward with ReLU as a post-op (conv followed by ReLU, nothing observing the
    // pre-activation). Used only when oneDNN runs it with the same implementation and formats as
    // `fwd`: then the convolution's values are those of `fwd`. oneDNN's ReLU, max(v, 0), maps a
    // NaN to 0 where ours (PyTorch's clamp_min) keeps it, so the post-op runs only where no NaN
    // can arise (relu_post_op_exact).
    std::once_flag relu_once;
    bool relu_ok = false;
    dnnl::convolution_forward::primitive_desc fwd_relu_pd;
    dnnl::convolution_forward fwd_relu;
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

dnnl::convolution_forward::primitive_desc forward_pd(const ConvEntry& e, dnnl::algorithm algo,
                                                     const dnnl::primitive_attr& attr) {
    const memory::desc any_w = e.any(e.user_w.dims(), e.lo);
    const auto fd = e.has_bias
                        ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algo,
                                                          e.any_src, any_w, e.bias, e.any_dst,
                                                          e.strides, e.dilates, e.pad_l, e.pad_r)
                        : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algo,
                                                          e.any_src, any_w, e.any_dst, e.strides,
                                                          e.dilates, e.pad_l, e.pad_r);
    return dnnl::convolution_forward::primitive_desc(fd, attr, du::engine());
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
            e->algo = algo;
            return forward_pd(*e, algo, du::user_scratchpad());
        });
        e->fwd = dnnl::convolution_forward(e->fwd_pd);
        return e;
    });
}

// Adds a scratchpad of `desc`'s size to `args` (none when it needs none); the buffer must live
// until the execution has finished.
std::unique_ptr<HostScratch> add_scratchpad(const memory::desc& desc,
                                            std::unordered_map<int, memory>& args) {
    const size_t bytes = desc.get_size();
    if (bytes == 0) return nullptr;
    auto buffer = std::make_unique<HostScratch>(bytes);
    args.emplace(DNNL_ARG_SCRATCHPAD, du::memory_at(desc, buffer->data()));
    return buffer;
}

// Whether the ReLU post-op writes +0 for a negative value, as our ReLU (PyTorch's clamp_min)
// does: oneDNN's SSE4.1 kernels compute alpha * v (alpha 0), which is -0, where the AVX2 and
// AVX-512 ones give +0. Run once per geometry on x = 1, w = -1, bias = -1: every output is
// negative (or 0 for a window entirely in the padding) before the ReLU, so any -0 is the
// post-op's. Filling whole buffers covers blocked formats' padding too.
bool relu_post_op_gives_positive_zero(const ConvEntry& e, const dnnl::convolution_forward& fwd,
                                      const dnnl::convolution_forward::primitive_desc& pd) {
    const auto filled = [](const memory::desc& d, float value) {
        memory m(d, du::engine());
        auto* p = static_cast<float*>(m.get_data_handle());
        std::fill(p, p + d.get_size() / sizeof(float), value);
        return m;
    };
    memory dst = filled(pd.dst_desc(), 1.0f);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, filled(pd.src_desc(), 1.0f)},
                                         {DNNL_ARG_WEIGHTS, filled(pd.weights_desc(), -1.0f)},
                                         {DNNL_ARG_DST, dst}};
    if (e.has_bias) args.emplace(DNNL_ARG_BIAS, filled(e.bias, -1.0f));
    const auto scratch = add_scratchpad(pd.scratchpad_desc(), args);
    fwd.execute(du::stream(), args);
    du::stream().wait();
    const auto* out = static_cast<const uint32_t*>(dst.get_data_handle());
    const size_t n = pd.dst_desc().get_size() / sizeof(float);
    return std::none_of(out, out + n, [](uint32_t bits) { return bits == 0x80000000u; });
}

// The entry's forward with ReLU fused, when oneDNN runs it as it runs the plain forward.
bool relu_forward_ready(ConvEntry& e) {
    std::call_once(e.relu_once, [&] {
        if (e.lo != memory::data_type::f32) return;
        dnnl::post_ops ops;
        ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
        dnnl::primitive_attr attr = du::user_scratchpad();
        attr.set_post_ops(ops);
        try {
            auto pd = forward_pd(e, e.algo, attr);
            if (pd.impl_info_str() != e.fwd_pd.impl_info_str() ||
                pd.src_desc() != e.fwd_pd.src_desc() ||
                pd.weights_desc() != e.fwd_pd.weights_desc() ||
                pd.dst_desc() != e.fwd_pd.dst_desc())
                return;
            dnnl::convolution_forward fwd(pd);
            if (!relu_post_op_gives_positive_zero(e, fwd, pd)) return;
            e.fwd_relu_pd = pd;
            e.fwd_relu = std::move(fwd);
            e.relu_ok = true;
        } catch (const dnnl::error&) { // no post-op for this implementation
        }
    });
    return e.relu_ok;
}

// `t`'s data as a memory of format `want` (reordered into a scratch memory when it differs).
memory input_as(const memory::desc& want, const memory::desc& have, void* data) {
    memory user = du::memory_at(have, data);
    if (want == have) return user;
    memory m(want, du::engine());
    dnnl::reorder(user, m).execute(du::stream(), user, m);
    return m;
}

// The output gradient as diff_dst of format `want`; `cache` (optional) shares one reorder
// between backward-data and backward-weights.
memory diff_dst_as(const memory::desc& want, const memory::desc& have, void* gy, memory* cache) {
    if (cache && *cache && cache->get_desc() == want) return *cache;
    memory m = input_as(want, have, gy);
    if (cache) *cache = m;
    return m;
}

// An output memory of format `want` that ends up in tensor `t` (format `have`); call finish().
struct OutputMem {
    memory user, mem;
    OutputMem(const memory::desc& want, const memory::desc& have, void* data)
        : user(du::memory_at(have, data)), mem(want == have ? user : memory(want, du::engine())) {}
    void finish() {
        if (mem.get() != user.get()) dnnl::reorder(mem, user).execute(du::stream(), mem, user);
    }
};

// oneDNN needs right padding >= 0 (conv_transpose2d with output_padding > padding has less).
bool onednn_ok(const View& t, const Geom& g) {
    return t.dtype == DType::Float32 && g.phr() >= 0 && g.pwr() >= 0 &&
           (!g.bf16 || du::bf16_supported());
}

Geom as_f32(Geom g) {
    g.bf16 = g.f16 = false;
    return g;
}

// Where oneDNN cannot run a bf16 geometry, and for float16 products (ConvGeometry::f16, which
// oneDNN does not run here): the float32 path on operands rounded to the lower dtype gives the
// same values (the products are exact in float32). The rounding is the CPU backend's dtype
// conversion, as Tensor::to(lower).to(Float32) does it.
bool rounds_operands(const View& x, const Geom& g) {
    return g.f16 || (g.bf16 && !onednn_ok(x, g));
}

class Rounded {
  public:
    Rounded(const View& v, const Geom& g)
        : half_(size_t(v.numel()) * 2), f32_(size_t(v.numel()) * 4), view_(v) {
        View half = v;
        half.data = half_.data();
        half.dtype = g.f16 ? DType::Float16 : DType::BFloat16;
        view_.data = f32_.data();
        Backend& cpu = get(DeviceType::CPU);
        cpu.copy(v, half);
        cpu.copy(half, view_);
    }
    const View& view() const { return view_; }

  private:
    HostScratch half_, f32_;
    View view_;
};

template <typename T> const T* cptr(const View* v) {
    return v ? static_cast<const T*>(v->data) : nullptr;
}
template <typename T> T* ptr(const View* v) {
    return v ? static_cast<T*>(v->data) : nullptr;
}

// The largest |v| of `n` floats, or +inf when one is NaN or infinite.
float max_abs_or_inf(const float* p, int64_t n) {
    // On the bits of |v|: for non-negative floats their order is the integers' order, and every
    // NaN and inf lies at or above inf's bits, so one integer max (which GCC vectorises; a float
    // max it does not, for NaN's sake) finds both the largest magnitude and any non-finite value.
    uint32_t largest = 0;
#pragma omp parallel for schedule(static) reduction(max : largest) if (n > 262144)
    for (int64_t i = 0; i < n; ++i) {
        const uint32_t magnitude = std::bit_cast<uint32_t>(p[i]) & 0x7fffffffu;
        largest = magnitude > largest ? magnitude : largest;
    }
    const uint32_t inf_bits = std::bit_cast<uint32_t>(std::numeric_limits<float>::infinity());
    return largest >= inf_bits ? std::numeric_limits<float>::infinity()
                               : std::bit_cast<float>(largest);
}

// Whether conv(x, w) + b cannot produce a NaN: every operand finite and every sum bounded far
// below FLT_MAX (the margin covers Winograd's transforms, which scale tiles by up to ~10^3), so
// no inf - inf. Then ReLU as oneDNN's post-op gives our ReLU's bits. Reads x once (a fraction of
// the convolution's own traffic).
bool relu_post_op_exact(const View& x, const View& w, const View* b, const Geom& g) {
    const double mx = max_abs_or_inf(static_cast<const float*>(x.data), x.numel());
    const double mw = max_abs_or_inf(static_cast<const float*>(w.data), w.numel());
    const double mb = b ? max_abs_or_inf(static_cast<const float*>(b->data), b->numel()) : 0.0;
    const double terms = double(g.C / g.G) * double(g.KH) * double(g.KW);
    const double bound = mb + terms * mx * mw; // inf when an operand is not finite
    return bound < 1e-8 * double(std::numeric_limits<float>::max());
}

// `relu`: with ReLU fused (only where relu_forward_ready). `keep_layout`: y is left in the
// primitive's dst format (a scratch buffer for a kernel that reads that layout), not nchw.
void forward_raw(const View& x, const View& w, const View* b, const View& y, const Geom& g,
                 bool relu = false, bool keep_layout = false) {
    if (rounds_operands(x, g)) {
        const Rounded xr(x, g), wr(w, g);
        return forward_raw(xr.view(), wr.view(), b, y, as_f32(g));
    }
    if (onednn_ok(x, g)) {
        auto e = conv_entry(g, b != nullptr);
        if (relu && !relu_forward_ready(*e)) throw Error("conv_relu_forward: not fused here");
        const auto& pd = relu ? e->fwd_relu_pd : e->fwd_pd;
        memory src = input_as(pd.src_desc(), e->src, x.data);
        memory wm = input_as(pd.weights_desc(), e->user_w, w.data);
        OutputMem dst(pd.dst_desc(), keep_layout ? pd.dst_desc() : e->dst, y.data);
        std::unordered_map<int, memory> args{
            {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, dst.mem}};
        if (b) args.emplace(DNNL_ARG_BIAS, du::memory_at(e->bias, b->data));
        const auto scratch = add_scratchpad(pd.scratchpad_desc(), args);
        (relu ? e->fwd_relu : e->fwd).execute(du::stream(), args);
        dst.finish();
        du::stream().wait();
    } else if (x.dtype == DType::Float32) {
        ref_forward(cptr<float>(&x), cptr<float>(&w), cptr<float>(b), ptr<float>(&y), g);
    } else {
        ref_forward(cptr<double>(&x), cptr<double>(&w), cptr<double>(b), ptr<double>(&y), g);
    }
}

// The entry with its backward-data primitive.
std::shared_ptr<ConvEntry> backward_data_entry(const Geom& g) {
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
    return e;
}

// The entry with its backward-weights primitive.
std::shared_ptr<ConvEntry> backward_weights_entry(const Geom& g, bool has_bias) {
    auto e = conv_entry(g, has_bias);
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
    return e;
}

void backward_data_raw(const View& gy, const View& w, const View& gx, const Geom& g,
                       memory* dd_cache = nullptr) {
    if (rounds_operands(gy, g)) {
        const Rounded gyr(gy, g), wr(w, g);
        return backward_data_raw(gyr.view(), wr.view(), gx, as_f32(g));
    }
    if (onednn_ok(gy, g)) {
        auto e = backward_data_entry(g);
        memory dd = diff_dst_as(e->bd_pd.diff_dst_desc(), e->dst, gy.data, dd_cache);
        memory wm = input_as(e->bd_pd.weights_desc(), e->user_w, w.data);
        OutputMem ds(e->bd_pd.diff_src_desc(), e->src, gx.data);
        std::unordered_map<int, memory> args{
            {DNNL_ARG_DIFF_DST, dd}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DIFF_SRC, ds.mem}};
        const auto scratch = add_scratchpad(e->bd_pd.scratchpad_desc(), args);
        e->bd.execute(du::stream(), args);
        ds.finish();
        du::stream().wait();
    } else if (gy.dtype == DType::Float32) {
        ref_backward_data(cptr<float>(&gy), cptr<float>(&w), ptr<float>(&gx), g);
    } else {
        ref_backward_data(cptr<double>(&gy), cptr<double>(&w), ptr<double>(&gx), g);
    }
}

// Weight gradient [O, C/G, KH, KW] and, when `gb` is given, the bias gradient [O].
void backward_weights_raw(const View& x, const View& gy, const View& gw, const View* gb,
                          const Geom& g, memory* dd_cache = nullptr) {
    if (rounds_operands(x, g)) {
        const Rounded xr(x, g), gyr(gy, g);
        return backward_weights_raw(xr.view(), gyr.view(), gw, gb, as_f32(g));
    }
    if (onednn_ok(x, g)) {
        auto e = backward_weights_entry(g, gb != nullptr);
        memory src = input_as(e->bw_pd.src_desc(), e->src, x.data);
        memory dd = diff_dst_as(e->bw_pd.diff_dst_desc(), e->dst, gy.data, dd_cache);
        OutputMem dw(e->bw_pd.diff_weights_desc(), e->user_w, gw.data);
        std::unordered_map<int, memory> args{
            {DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, dd}, {DNNL_ARG_DIFF_WEIGHTS, dw.mem}};
        if (gb) args.emplace(DNNL_ARG_DIFF_BIAS, du::memory_at(e->bias, gb->data));
        const auto scratch = add_scratchpad(e->bw_pd.scratchpad_desc(), args);
        e->bw.execute(du::stream(), args);
        dw.finish();
        du::stream().wait();
    } else if (x.dtype == DType::Float32) {
        ref_backward_weights(cptr<float>(&x), cptr<float>(&gy), ptr<float>(&gw), ptr<float>(gb), g);
    } else {
        ref_backward_weights(cptr<double>(&x), cptr<double>(&gy), ptr<double>(&gw), ptr<double>(gb),
                             g);
    }
}

// --- convolution followed by ReLU ----------------------------------------------------------

// The fused path runs where oneDNN runs the plain float32 forward with ReLU as a post-op on the
// same implementation (relu_forward_ready).
bool conv_relu_ok(const Geom& g, bool has_bias) {
    if (g.bf16 || g.f16 || g.phr() < 0 || g.pwr() < 0) return false;
    try {
        return relu_forward_ready(*conv_entry(g, has_bias));
    } catch (const dnnl::error&) {
        return false;
    }
}

// A float32 View of the convolution's output shape [N, O, OH, OW], nchw, over `data`.
View output_view(const Geom& g, void* data) {
    const int64_t shape[4] = {g.N, g.O, g.OH, g.OW};
    return contiguous_view(data, DType::Float32, shape, 4);
}

// The oneDNN layout of an output gradient both backward primitives take directly.
memory::desc blocked_output(const Geom& g) {
    return memory::desc({g.N, g.O, g.OH, g.OW}, memory::data_type::f32,
                        memory::format_tag::nChw16c);
}

// Both backward passes of a convolution whose output gradient `fill` writes: fill(true, out) in
// nChw16c where both primitives take that layout (then no reorder), fill(false, out) nchw
// otherwise (reordered as usual). The ReLU and pool backwards fused before the convolution's
// write it there, so it is built once, in the layout the primitives read.
template <typename Fill>
void conv_backward_filled(const View& x, const View& w, const View* gx, const View* gw,
                          const View* gb, const Geom& g, Fill&& fill) {
    std::shared_ptr<ConvEntry> bd = gx ? backward_data_entry(g) : nullptr;
    std::shared_ptr<ConvEntry> bw = gw ? backward_weights_entry(g, gb != nullptr) : nullptr;
    if (!bd && !bw) return;
    const memory::desc blocked = blocked_output(g);
    const bool direct = g.O % 16 == 0 && (!bd || bd->bd_pd.diff_dst_desc() == blocked) &&
                        (!bw || bw->bw_pd.diff_dst_desc() == blocked);
    HostScratch grad(size_t(g.N * g.O * g.OH * g.OW) * sizeof(float));
    auto* gp = static_cast<float*>(grad.data());
    fill(direct, gp);
    memory dd;
    if (direct) dd = du::memory_at(blocked, gp);
    const View gy = output_view(g, gp);
    if (gx) backward_data_raw(gy, w, *gx, g, &dd);
    if (gw) backward_weights_raw(x, gy, *gw, gb, g, &dd);
}

void conv_relu_backward_raw(const View& x, const View& w, const View& y, const View& gy,
                            const View* gx, const View* gw, const View* gb, const Geom& g) {
    conv_backward_filled(x, w, gx, gw, gb, g, [&](bool blocked, float* out) {
        if (blocked)
            return nchw16c::relu_backward_to_blocked(static_cast<const float*>(gy.data),
                                                     static_cast<const float*>(y.data), out, g.N,
                                                     g.O, g.OH * g.OW);
        get(DeviceType::CPU).binary(BinaryOp::ReluBackward, gy, y, output_view(g, out), {});
    });
}

} // namespace

HostScratch::HostScratch(size_t bytes) : bytes_(bytes) {
    if (bytes_) data_ = get(DeviceType::CPU).allocate(bytes_);
}
HostScratch::~HostScratch() {
    if (data_) get(DeviceType::CPU).deallocate(data_, bytes_);
}

NnKernels* CpuBackend::nn_kernels() {
    // Never destroyed, as the backend itself: static tensors may run kernels during exit.
    static auto* kernels = new CpuNnKernels;
    return kernels;
}

void CpuNnKernels::conv_forward(const ConvGeometry& g, const View& x, const View& w,
                                const View* bias, const View& y) {
    forward_raw(x, w, bias, y, g);
}

void CpuNnKernels::conv_backward_data(const ConvGeometry& g, const View& grad_y, const View& w,
                                      const View& grad_x) {
    backward_data_raw(grad_y, w, grad_x, g);
}

void CpuNnKernels::conv_backward_weights(const ConvGeometry& g, const View& x, const View& grad_y,
                                         const View& grad_w, const View* grad_bias) {
    backward_weights_raw(x, grad_y, grad_w, grad_bias, g);
}

bool CpuNnKernels::conv_relu_fused(const ConvGeometry& g, bool has_bias) {
    return conv_relu_ok(g, has_bias);
}

void CpuNnKernels::conv_relu_forward(const ConvGeometry& g, const View& x, const View& w,
                                     const View* bias, const View& y) {
    if (!onednn_ok(x, g) || g.bf16 || g.f16)
        throw Error("conv_relu_forward: not fused for this input");
    if (relu_post_op_exact(x, w, bias, g)) return forward_raw(x, w, bias, y, g, true);
    // A NaN may arise: the plain convolution, then ReLU keeping NaN and -0 (PyTorch's).
    forward_raw(x, w, bias, y, g);
    auto* v = static_cast<float*>(y.data);
    const int64_t count = y.numel();
#pragma omp parallel for schedule(static) if (count > 32768)
    for (int64_t i = 0; i < count; ++i)
        v[i] = kernels::apply_unary<UnaryOp::Relu>(v[i], {});
}

void CpuNnKernels::conv_relu_backward(const ConvGeometry& g, const View& x, const View& w,
                                      const View& y, const View& grad_y, const View* grad_x,
                                      const View* grad_w, const View* grad_bias) {
    conv_relu_backward_raw(x, w, y, grad_y, grad_x, grad_w, grad_bias, g);
}

// The blocked activation one pass of the fused Conv2d-ReLU-MaxPool2d forward writes: what the
// two cores' L2 caches (1 MiB each on the Zen 5 here) hold beside the pass's input.
constexpr int64_t kFusedPassBytes = int64_t(1) << 20;

// Conv2d-ReLU-MaxPool2d(2): the pool reads oneDNN's blocked output directly (no reorder to
// nchw, no ReLU output tensor), and its backward writes the blocked gradient the convolution's
// backward reads (no nchw gradient, no separate ReLU pass).
bool CpuNnKernels::conv_relu_pool_fused(const ConvGeometry& g, bool has_bias,
                                        const PoolGeometry& p) {
    return max_pool_uses_codes(p) && p.planes == g.N * g.O && p.H == g.OH && p.W == g.OW &&
           conv_relu_ok(g, has_bias);
}

// codes: nchw16c's blocked codes where O is a multiple of 16 (whichever way the forward ran),
// else the nchw pool's.
void CpuNnKernels::conv_relu_pool_forward(const ConvGeometry& g, const PoolGeometry& p,
                                          const View& x, const View& w, const View* bias,
                                          const View& pooled, const View& codes) {
    const nchw16c::Pool2x2 sizes{g.N, g.O, g.OH, g.OW, p.OH, p.OW};
    auto* code_bytes = static_cast<uint8_t*>(codes.data);
    // The batch in passes of about kFusedPassBytes of blocked activation, which stays in the
    // cores' caches between the convolution's write and the pool's read: the whole batch's goes
    // to memory and back (fashion_cnn's first block writes 25 MB at batch 256; evaluation ran
    // 1.4x faster at batch 64 than at 256 before). Every image is the same computation in any
    // pass (test_conv_relu_fusion holds the fused block to the separate ops' bits).
    const int64_t image_floats = g.O * g.OH * g.OW;
    const int64_t per_pass =
        std::clamp<int64_t>(kFusedPassBytes / (image_floats * int64_t(sizeof(float))), 1, g.N);
    const auto pass_geometry = [&](int64_t n) {
        ConvGeometry gp = g;
        gp.N = n;
        return gp;
    };
    const auto blocked_fused = [&](const ConvGeometry& gp) {
        auto e = conv_entry(gp, bias != nullptr);
        return relu_forward_ready(*e) && e->fwd_relu_pd.dst_desc() == blocked_output(gp);
    };
    const int64_t tail = g.N % per_pass;
    if (g.O % 16 == 0 && blocked_fused(pass_geometry(per_pass)) &&
        (tail == 0 || blocked_fused(pass_geometry(tail))) && relu_post_op_exact(x, w, bias, g)) {
        HostScratch activation(size_t(per_pass * image_floats) * sizeof(float));
        const int64_t image_in = g.C * g.H * g.W, image_pooled = g.O * p.OH * p.OW;
        for (int64_t n0 = 0; n0 < g.N; n0 += per_pass) {
            const ConvGeometry gp = pass_geometry(std::min(per_pass, g.N - n0));
            View xp = x;
            xp.data = static_cast<float*>(x.data) + n0 * image_in;
            xp.shape[0] = gp.N;
            const View y = output_view(gp, activation.data());
            forward_raw(xp, w, bias, y, gp, true, true);
            nchw16c::max_pool_2x2_from_blocked(static_cast<const float*>(y.data),
                                               static_cast<float*>(pooled.data) + n0 * image_pooled,
                                               code_bytes + n0 * image_pooled,
                                               {gp.N, g.O, g.OH, g.OW, p.OH, p.OW});
        }
        return;
    }
    HostScratch activation(size_t(g.N * image_floats) * sizeof(float));
    const View y = output_view(g, activation.data());
    conv_relu_forward(g, x, w, bias, y);
    if (g.O % 16 != 0) return max_pool_forward(p, y, pooled, nullptr, &codes);
    HostScratch plain(size_t(codes.numel()));
    View plain_codes = codes;
    plain_codes.data = plain.data();
    max_pool_forward(p, y, pooled, nullptr, &plain_codes);
    nchw16c::codes_to_blocked(static_cast<const uint8_t*>(plain.data()),
                              static_cast<const float*>(pooled.data), code_bytes, sizes);
}

void CpuNnKernels::conv_relu_pool_backward(const ConvGeometry& g, const PoolGeometry& p,
                                           const View& x, const View& w, const View& pooled,
                                           const View& codes, const View& grad_pooled,
                                           const View* grad_x, const View* grad_w,
                                           const View* grad_bias) {
    const auto* gp = static_cast<const float*>(grad_pooled.data);
    const auto* cp = static_cast<const uint8_t*>(codes.data);
    const nchw16c::Pool2x2 sizes{g.N, g.O, g.OH, g.OW, p.OH, p.OW};
    conv_backward_filled(x, w, grad_x, grad_w, grad_bias, g, [&](bool blocked, float* out) {
        if (blocked) return nchw16c::relu_max_pool_2x2_backward_to_blocked(gp, cp, out, sizes);
        // ReLU's backward on the pooled gradient (a winner's ReLU output is the pooled value;
        // every other input's gradient is 0 either way), then the pool's backward, with the nchw
        // pool's codes (converted from the blocked ones where O is a multiple of 16).
        HostScratch masked(size_t(grad_pooled.numel()) * sizeof(float));
        View masked_view = grad_pooled;
        masked_view.data = masked.data();
        HostScratch plain(g.O % 16 == 0 ? size_t(codes.numel()) : 0);
        View pool_codes = codes;
        if (g.O % 16 != 0) {
            get(DeviceType::CPU)
                .binary(BinaryOp::ReluBackward, grad_pooled, pooled, masked_view, {});
        } else {
            pool_codes.data = plain.data();
            nchw16c::codes_from_blocked(cp, gp, static_cast<uint8_t*>(plain.data()),
                                        static_cast<float*>(masked.data()), sizes);
        }
        max_pool_backward(p, masked_view, nullptr, &pool_codes, output_view(g, out));
    });
}

void CpuNnKernels::conv_backward(const ConvGeometry& g, const View& x, const View& w,
                                 const View& grad_y, const View* grad_x, const View* grad_w,
                                 const View* grad_bias) {
    memory dd; // grad_y reordered once for both backward primitives
    if (grad_x) backward_data_raw(grad_y, w, *grad_x, g, &dd);
    if (grad_w) backward_weights_raw(x, grad_y, *grad_w, grad_bias, g, &dd);
}

} // namespace myelin::backend
