// The int8 kernels on oneDNN: matmul (linear) and convolution on u8 activations with a runtime
// zero point and s8 weights, per-channel output scales, f32 bias in accumulator units, ReLU as
// a post-op and the output zero point, all runtime arguments, so one cached primitive serves
// every call of a shape (dynamic quantization changes the input's parameters every batch).
// Activations come NCHW or channels-last and leave channels-last (NHWC, oneDNN's int8 layout:
// a conv -> pool -> conv chain never changes layout). Weights are reordered into the primitive's
// layout (with oneDNN's zero-point compensation) once per weight and kept in
// QuantizedWeight::packed; primitives are cached per shape and thread count like the backend's
// (backend/cpu/dnnl_util.h).
#include "quant/onednn_kernels.h"

#include "backend/cpu/dnnl_util.h"

#include <omp.h>

#include <bit>
#include <mutex>
#include <unordered_map>

namespace myelin::quant {

// oneDNN's copies of one weight, one per layout a primitive asked for.
struct detail::PackedWeights {
    std::mutex mutex;
    std::vector<std::pair<dnnl::memory::desc, dnnl::memory>> layouts;
};

namespace detail {

namespace du = myelin::backend::dnnl_util;
using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

namespace {

// The attributes every int8 primitive here shares: user scratchpad, per-channel output scales
// (`scales`, or runtime ones when null), the runtime source zero point, ReLU, and the runtime
// output zero point for a u8 output.
dnnl::primitive_attr int8_attr(bool relu, bool u8_out, const std::vector<float>* scales) {
    dnnl::primitive_attr attr = du::user_scratchpad();
    attr.set_output_scales(1 << 1, scales ? *scales : std::vector<float>{DNNL_RUNTIME_F32_VAL});
    attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    if (u8_out) attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
    if (relu) {
        dnnl::post_ops ops;
        ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
        attr.set_post_ops(ops);
    }
    return attr;
}

// The weight in `want`'s layout, reordered from its plain layout `plain` the first time.
memory packed_weights(const QuantizedWeight& w, const memory::desc& plain,
                      const memory::desc& want) {
    static std::mutex create;
    {
        std::lock_guard<std::mutex> lock(create);
        if (!w.packed) w.packed = std::make_shared<PackedWeights>();
    }
    PackedWeights& p = *w.packed;
    std::lock_guard<std::mutex> lock(p.mutex);
    for (const auto& [desc, mem] : p.layouts)
        if (desc == want) return mem;
    memory src(plain, du::engine(), const_cast<int8_t*>(w.values.data()));
    memory dst(want, du::engine());
    dnnl::reorder(src, dst).execute(du::stream(), src, dst);
    du::stream().wait();
    p.layouts.emplace_back(want, dst);
    return dst;
}

// The runtime arguments: per-channel scales, zero points, bias.
struct RuntimeArgs {
    memory scales, src_zp, dst_zp, bias;
};

RuntimeArgs runtime_args(const Requantization& r, const int32_t* x_zp, const memory::desc& bias_md,
                         bool runtime_scales) {
    const auto N = memory::dim(r.multiplier.size());
    RuntimeArgs a;
    if (runtime_scales)
        a.scales = du::memory_at(memory::desc({N}, dt::f32, tag::x),
                                 const_cast<float*>(r.multiplier.data()));
    a.src_zp = du::memory_at(memory::desc({1}, dt::s32, tag::x), const_cast<int32_t*>(x_zp));
    if (r.out_zero_point)
        a.dst_zp = du::memory_at(memory::desc({1}, dt::s32, tag::x),
                                 const_cast<int32_t*>(&*r.out_zero_point));
    a.bias = du::memory_at(bias_md, const_cast<float*>(r.bias.data()));
    return a;
}

void add_runtime_args(std::unordered_map<int, memory>& args, const RuntimeArgs& a) {
    if (a.scales) args.emplace(DNNL_ARG_ATTR_OUTPUT_SCALES, a.scales);
    args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, a.src_zp);
    if (a.dst_zp) args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, a.dst_zp);
    args.emplace(DNNL_ARG_BIAS, a.bias);
}

// Scratchpad bytes for one execution (held by the caller until it has finished).
std::vector<uint8_t> add_scratchpad(const memory::desc& desc,
                                    std::unordered_map<int, memory>& args) {
    std::vector<uint8_t> buffer(desc.get_size());
    if (!buffer.empty()) args.emplace(DNNL_ARG_SCRATCHPAD, du::memory_at(desc, buffer.data()));
    return buffer;
}

struct MatmulEntry {
    memory::desc src, weights_plain, bias, dst;
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul prim;
};

struct ConvEntry {
    memory::desc src_plain, weights_plain, bias, dst_plain;
    dnnl::convolution_forward::primitive_desc pd;
    dnnl::convolution_forward prim;
    // Reorders into and out of the primitive's activation layouts when they are not NCHW.
    std::optional<dnnl::reorder> to_src, from_dst;
};

struct PoolEntry {
    memory::desc src_plain, dst_plain;
    dnnl::pooling_v2_forward::primitive_desc pd;
    dnnl::pooling_v2_forward prim;
    std::optional<dnnl::reorder> to_src;
};

memory::dims dims2(std::array<int64_t, 2> v) {
    return {v[0], v[1]};
}

} // namespace

bool onednn_linear(const uint8_t* x, int64_t M, int64_t K, int32_t x_zp, const QuantizedWeight& w,
                   const Requantization& r, void* y, bool runtime_scales) {
    const int64_t N = w.out_channels();
    const du::TeamSize team(M * N * K < du::kSerialMacs ? 1 : omp_get_max_threads());
    const int threads = omp_get_max_threads();
    const bool u8_out = r.out_zero_point.has_value();
    // Fixed output scales get oneDNN 2.6's brgemm kernels (VNNI); runtime ones only its older
    // int8 gemm, which dynamic quantization (new input scale every call) has to use.
    du::PrimitiveCache<MatmulEntry>::Key key{M, N, K, r.relu, u8_out, threads, runtime_scales};
    if (!runtime_scales)
        for (float m : r.multiplier)
            key.push_back(int64_t(std::bit_cast<uint32_t>(m)));
    std::shared_ptr<MatmulEntry> e;
    try {
        static du::PrimitiveCache<MatmulEntry> cache;
        e = cache.get(key, [&] {
            auto m = std::make_shared<MatmulEntry>();
            m->src = memory::desc({M, K}, dt::u8, tag::ab);
            // w [N, K] row-major is the [K, N] operand read transposed.
            m->weights_plain = memory::desc({K, N}, dt::s8, tag::ba);
            m->bias = memory::desc({1, N}, dt::f32, tag::ab);
            m->dst = memory::desc({M, N}, u8_out ? dt::u8 : dt::f32, tag::ab);
            const memory::desc weights_any({K, N}, dt::s8, tag::any);
            m->pd = dnnl::matmul::primitive_desc(
                dnnl::matmul::desc(m->src, weights_any, m->bias, m->dst),
                int8_attr(r.relu, u8_out, runtime_scales ? nullptr : &r.multiplier), du::engine());
            m->prim = dnnl::matmul(m->pd);
            return m;
        });
    } catch (const dnnl::error&) {
        return false;
    }
    const memory weights = packed_weights(w, e->weights_plain, e->pd.weights_desc());
    const RuntimeArgs ra = runtime_args(r, &x_zp, e->bias, runtime_scales);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, du::memory_at(e->src, const_cast<uint8_t*>(x))},
        {DNNL_ARG_WEIGHTS, weights},
        {DNNL_ARG_DST, du::memory_at(e->dst, y)}};
    add_runtime_args(args, ra);
    const auto scratch = add_scratchpad(e->pd.scratchpad_desc(), args);
    e->prim.execute(du::stream(), args);
    du::stream().wait();
    return true;
}

bool onednn_conv2d(const uint8_t* x, const Dims& xs, bool x_nhwc, int32_t x_zp,
                   const QuantizedWeight& w, const Conv2dOptions& o, const Dims& ys,
                   const Requantization& r, void* y) {
    const int64_t G = o.groups, O = ys[1], C = xs[1], KH = w.shape[2], KW = w.shape[3];
    const int threads = omp_get_max_threads();
    const bool u8_out = r.out_zero_point.has_value();
    // oneDNN 2.6's int8 convolutions take no runtime output scales: they are part of the
    // primitive, and of its key (a layer's scales are fixed once it is quantized).
    du::PrimitiveCache<ConvEntry>::Key key{xs[0],
                                           C,
                                           xs[2],
                                           xs[3],
                                           O,
                                           KH,
                                           KW,
                                           o.stride[0],
                                           o.stride[1],
                                           o.padding[0],
                                           o.padding[1],
                                           o.dilation[0],
                                           o.dilation[1],
                                           G,
                                           r.relu,
                                           u8_out,
                                           threads,
                                           x_nhwc};
    for (float m : r.multiplier)
        key.push_back(int64_t(std::bit_cast<uint32_t>(m)));
    std::shared_ptr<ConvEntry> e;
    try {
        static du::PrimitiveCache<ConvEntry> cache;
        e = cache.get(key, [&] {
            auto c = std::make_shared<ConvEntry>();
            const memory::dims src_dims(xs.begin(), xs.end()), dst_dims(ys.begin(), ys.end());
            const dt dst_type = u8_out ? dt::u8 : dt::f32;
            c->src_plain = memory::desc(src_dims, dt::u8, x_nhwc ? tag::nhwc : tag::nchw);
            c->dst_plain = memory::desc(dst_dims, dst_type, tag::nhwc);
            c->weights_plain = G == 1 ? memory::desc({O, C, KH, KW}, dt::s8, tag::oihw)
                                      : memory::desc({G, O / G, C / G, KH, KW}, dt::s8, tag::goihw);
            c->bias = memory::desc({O}, dt::f32, tag::x);
            const memory::desc weights_any(c->weights_plain.dims(), dt::s8, tag::any);
            // oneDNN counts dilation from 0 (PyTorch's dilation - 1).
            const memory::dims dilation{o.dilation[0] - 1, o.dilation[1] - 1};
            c->pd = dnnl::convolution_forward::primitive_desc(
                dnnl::convolution_forward::desc(
                    dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                    memory::desc(src_dims, dt::u8, tag::any), weights_any, c->bias,
                    memory::desc(dst_dims, dst_type, tag::any), dims2(o.stride), dilation,
                    dims2(o.padding), dims2(o.padding)),
                int8_attr(r.relu, u8_out, &r.multiplier), du::engine());
            c->prim = dnnl::convolution_forward(c->pd);
            if (c->pd.src_desc() != c->src_plain)
                c->to_src = dnnl::reorder(dnnl::reorder::primitive_desc(
                    du::engine(), c->src_plain, du::engine(), c->pd.src_desc()));
            if (c->pd.dst_desc() != c->dst_plain)
                c->from_dst = dnnl::reorder(dnnl::reorder::primitive_desc(
                    du::engine(), c->pd.dst_desc(), du::engine(), c->dst_plain));
            return c;
        });
    } catch (const dnnl::error&) {
        return false;
    }
    const memory weights = packed_weights(w, e->weights_plain, e->pd.weights_desc());
    memory src = du::memory_at(e->src_plain, const_cast<uint8_t*>(x));
    memory dst = du::memory_at(e->dst_plain, y);
    dnnl::stream& s = du::stream();
    if (e->to_src) {
        memory blocked(e->pd.src_desc(), du::engine());
        e->to_src->execute(s, src, blocked);
        src = blocked;
    }
    memory out = e->from_dst ? memory(e->pd.dst_desc(), du::engine()) : dst;
    const RuntimeArgs ra = runtime_args(r, &x_zp, e->bias, false);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, out}};
    add_runtime_args(args, ra);
    const auto scratch = add_scratchpad(e->pd.scratchpad_desc(), args);
    e->prim.execute(s, args);
    if (e->from_dst) e->from_dst->execute(s, out, dst);
    s.wait();
    return true;
}

bool onednn_max_pool2d(const uint8_t* x, const Dims& xs, bool x_nhwc, const Dims& ys,
                       std::array<int64_t, 2> kernel, std::array<int64_t, 2> stride,
                       std::array<int64_t, 2> padding, std::array<int64_t, 2> dilation,
                       uint8_t* y) {
    const int threads = omp_get_max_threads();
    std::shared_ptr<PoolEntry> e;
    try {
        static du::PrimitiveCache<PoolEntry> cache;
        e = cache.get(
            {xs[0], xs[1], xs[2], xs[3], kernel[0], kernel[1], stride[0], stride[1], padding[0],
             padding[1], dilation[0], dilation[1], threads, x_nhwc},
            [&] {
                auto p = std::make_shared<PoolEntry>();
                const memory::dims src_dims(xs.begin(), xs.end()), dst_dims(ys.begin(), ys.end());
                p->src_plain = memory::desc(src_dims, dt::u8, x_nhwc ? tag::nhwc : tag::nchw);
                p->dst_plain = memory::desc(dst_dims, dt::u8, tag::nhwc);
                // oneDNN's u8 pooling is a JIT kernel on channels-last (on NCHW, the reference).
                const memory::desc src_nhwc(src_dims, dt::u8, tag::nhwc);
                const memory::desc dst_nhwc(dst_dims, dt::u8, tag::nhwc);
                // Padding on the right as far as the floor-mode output reaches.
                memory::dims pad_r(2);
                for (int i = 0; i < 2; ++i)
                    pad_r[size_t(i)] = (ys[2 + i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) +
                                       1 - xs[2 + i] - padding[i];
                p->pd = dnnl::pooling_v2_forward::primitive_desc(
                    dnnl::pooling_v2_forward::desc(
                        dnnl::prop_kind::forward_inference, dnnl::algorithm::pooling_max, src_nhwc,
                        dst_nhwc, dims2(stride), dims2(kernel), {dilation[0] - 1, dilation[1] - 1},
                        dims2(padding), pad_r),
                    du::user_scratchpad(), du::engine());
                p->prim = dnnl::pooling_v2_forward(p->pd);
                if (!x_nhwc)
                    p->to_src = dnnl::reorder(dnnl::reorder::primitive_desc(
                        du::engine(), p->src_plain, du::engine(), src_nhwc));
                return p;
            });
    } catch (const dnnl::error&) {
        return false;
    }
    dnnl::stream& s = du::stream();
    memory src = du::memory_at(e->src_plain, const_cast<uint8_t*>(x));
    if (e->to_src) {
        memory src_nhwc(e->pd.src_desc(), du::engine());
        e->to_src->execute(s, src, src_nhwc);
        src = src_nhwc;
    }
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src},
                                         {DNNL_ARG_DST, du::memory_at(e->dst_plain, y)}};
    const auto scratch = add_scratchpad(e->pd.scratchpad_desc(), args);
    e->prim.execute(s, args);
    s.wait();
    return true;
}

} // namespace detail
} // namespace myelin::quant
