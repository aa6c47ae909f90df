// Multi-head attention (PyTorch 1.13's multi_head_attention_forward, without bias_k/v, zero
// attention and separate projection weights), its masks, and the sequence utilities.
//
// The hot path (multi_head_attention) records the attention between the in- and out-projections
// as ONE autograd node: heads are split straight from the projections' memory into [B*H, L, Dh]
// buffers, the scores are one batched GEMM over all B*H heads that accumulates onto the additive
// mask (PyTorch's baddbmm), softmax is the backend's kernel, and the merged output is written in
// the query's layout. Its backward writes the gradient of the packed [.., 3E] projection
// directly, instead of three zero-filled slices that autograd would sum. The weights path
// (multi_head_attention_with_weights) composes the same math from differentiable tensor ops.
#include "autograd/function.h"
#include "backend/kernels/dropout.h"
#include "nn/functional_common.h"
#include "tensor/tensor_impl.h"

#include <myelin/autograd.h>
#include <myelin/generator.h>
#include <myelin/nn/attention.h>
#include <myelin/nn/functional.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace myelin::nn::functional {

using autograd::Node;
using namespace myelin::detail;
using nn::detail::shape_error;

namespace {

constexpr const char* kOp = "multi_head_attention";
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------------------------
// Head split / merge. A "sequence tensor" is [B, L, C] (batch first) or [L, B, C] with a unit
// stride in C; a head tensor is contiguous [B*H, L, Dh], head h of a row being the columns
// off + h*Dh ... off + h*Dh + Dh - 1.

struct SeqLayout {
    int64_t batch = 0, len = 0;
    int64_t stride_b = 0, stride_l = 0;
};

SeqLayout seq_layout(const Tensor& t, bool batch_first) {
    const int b = batch_first ? 0 : 1, l = batch_first ? 1 : 0;
    return {t.size(b), t.size(l), t.stride(b), t.stride(l)};
}

// Parallel over (b, h) when the copy is large enough to pay for the OpenMP team.
constexpr int64_t kParallelElements = 32768;

template <typename T>
void split_loop(const T* src, SeqLayout s, int64_t off, int64_t H, int64_t Dh, T scale, T* dst) {
    const int64_t B = s.batch, L = s.len;
#pragma omp parallel for collapse(2) if (B * H * L * Dh >= kParallelElements)
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h) {
            T* out = dst + (b * H + h) * L * Dh;
            const T* in = src + b * s.stride_b + off + h * Dh;
            for (int64_t l = 0; l < L; ++l) {
                const T* row = in + l * s.stride_l;
#pragma omp simd
                for (int64_t d = 0; d < Dh; ++d)
                    out[l * Dh + d] = row[d] * scale;
            }
        }
}

template <typename T>
void merge_loop(const T* src, SeqLayout s, int64_t off, int64_t H, int64_t Dh, T scale, T* dst) {
    const int64_t B = s.batch, L = s.len;
#pragma omp parallel for collapse(2) if (B * H * L * Dh >= kParallelElements)
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h) {
            const T* in = src + (b * H + h) * L * Dh;
            T* out = dst + b * s.stride_b + off + h * Dh;
            for (int64_t l = 0; l < L; ++l) {
                T* row = out + l * s.stride_l;
#pragma omp simd
                for (int64_t d = 0; d < Dh; ++d)
                    row[d] = in[l * Dh + d] * scale;
            }
        }
}

// Columns [off, off + H*Dh) of `src` as heads [B*H, L, Dh], multiplied by scale.
Tensor split_heads(Tensor src, bool batch_first, int64_t off, int64_t H, int64_t Dh, double scale) {
    if (src.stride(2) != 1) src = src.contiguous();
    const SeqLayout s = seq_layout(src, batch_first);
    Tensor out = make_tensor({s.batch * H, s.len, Dh}, src.dtype(), src.device());
    if (src.dtype() == DType::Float64)
        split_loop(src.data<double>(), s, off, H, Dh, scale, out.data<double>());
    else
        split_loop(src.data<float>(), s, off, H, Dh, static_cast<float>(scale), out.data<float>());
    return out;
}

// Writes heads [B*H, L, Dh] (times scale) into columns [off, off + H*Dh) of `dst`, a contiguous
// sequence tensor.
void merge_heads(const Tensor& heads, Tensor& dst, bool batch_first, int64_t off, int64_t H,
                 int64_t Dh, double scale) {
    const SeqLayout s = seq_layout(dst, batch_first);
    if (dst.dtype() == DType::Float64)
        merge_loop(heads.data<double>(), s, off, H, Dh, scale, dst.data<double>());
    else
        merge_loop(heads.data<float>(), s, off, H, Dh, static_cast<float>(scale),
                   dst.data<float>());
}

// ---------------------------------------------------------------------------------------------
// Masks

std::string shape_of(const Tensor& t) {
    return std::string(dtype_name(t.dtype())) + " " + t.shape().str();
}

// A bool mask as 0 / -inf in `dtype`; a float mask converted.
Tensor additive(const Tensor& mask, DType dtype) {
    if (mask.dtype() == DType::Bool)
        return masked_fill(zeros(mask.shape(), TensorOptions(dtype).with_device(mask.device())),
                           mask, kNegInf);
    return mask.dtype() == dtype ? mask : mask.to(dtype);
}

// The one additive mask of an attention call: [B or 1, H or 1, L or 1, S], or undefined.
Tensor combined_mask(const AttentionMasks& masks, int64_t B, int64_t H, int64_t L, int64_t S,
                     DType dtype) {
    autograd::NoGradGuard no_grad;
    Tensor result;
    if (const Tensor& kp = masks.key_padding_mask; kp.defined()) {
        Tensor m;
        if (kp.dtype() == DType::Int64) {
            if (kp.dim() != 1 || kp.size(0) != B)
                shape_error(kOp, "expected lengths int64 [" + std::to_string(B) +
                                     "] (one per sequence), got " + shape_of(kp));
            m = padding_mask_from_lengths(kp, S);
        } else {
            if (kp.dtype() != DType::Bool && !kp.is_floating_point())
                throw DTypeError(std::string(kOp) +
                                 ": key_padding_mask must be bool, float or int64 lengths, got " +
                                 shape_of(kp));
            if (kp.dim() != 2 || kp.size(0) != B || kp.size(1) != S)
                shape_error(kOp, "expected key_padding_mask [" + std::to_string(B) + ", " +
                                     std::to_string(S) + "] (batch, source length), got " +
                                     shape_of(kp));
            m = kp;
        }
        result = additive(m, dtype).reshape({B, 1, 1, S});
    }
    if (const Tensor& am = masks.attn_mask; am.defined()) {
        if (am.dtype() != DType::Bool && !am.is_floating_point())
            throw DTypeError(std::string(kOp) + ": attn_mask must be bool or float, got " +
                             shape_of(am));
        Tensor m;
        if (am.dim() == 2 && am.size(0) == L && am.size(1) == S)
            m = additive(am, dtype).reshape({1, 1, L, S});
        else if (am.dim() == 3 && am.size(0) == B * H && am.size(1) == L && am.size(2) == S)
            m = additive(am, dtype).reshape({B, H, L, S});
        else
            shape_error(kOp, "expected attn_mask [" + std::to_string(L) + ", " + std::to_string(S) +
                                 "] or [" + std::to_string(B * H) + ", " + std::to_string(L) +
                                 ", " + std::to_string(S) +
                                 "] (batch * heads, target, source), got " + shape_of(am));
        result = result.defined() ? m + result : m;
    }
    return result.defined() ? result.contiguous().detach() : result; // masks are constants
}

// ---------------------------------------------------------------------------------------------
// Checks and in-projection

struct Dims3 {
    int64_t B, L, S, E, H, Dh;
};

Dims3 check_inputs(const Tensor& q, const Tensor& k, const Tensor& v,
                   const MultiheadAttentionParams& p) {
    nn::detail::require_f32_f64(kOp, "query", q);
    nn::detail::require_same_dtype(kOp, "key", k, q);
    nn::detail::require_same_dtype(kOp, "value", v, q);
    nn::detail::require_same_dtype(kOp, "in_proj_weight", p.in_proj_weight, q);
    nn::detail::require_same_dtype(kOp, "out_proj_weight", p.out_proj_weight, q);
    const char* layout =
        p.batch_first ? "[batch, length, embed_dim]" : "[length, batch, embed_dim]";
    if (q.dim() != 3 || k.dim() != 3 || v.dim() != 3)
        shape_error(kOp, std::string("expected query, key and value ") + layout + " (3-D), got " +
                             q.shape().str() + ", " + k.shape().str() + ", " + v.shape().str());
    const int b = p.batch_first ? 0 : 1, l = p.batch_first ? 1 : 0;
    const int64_t E = p.out_proj_weight.defined() ? p.out_proj_weight.size(0) : q.size(2);
    if (p.num_heads <= 0 || E % p.num_heads != 0)
        shape_error(kOp, "embed_dim " + std::to_string(E) + " is not divisible by num_heads " +
                             std::to_string(p.num_heads));
    if (!p.in_proj_weight.defined() || p.in_proj_weight.dim() != 2 ||
        p.in_proj_weight.size(0) != 3 * E || p.in_proj_weight.size(1) != E)
        shape_error(kOp, "expected in_proj_weight [" + std::to_string(3 * E) + ", " +
                             std::to_string(E) + "], got " +
                             (p.in_proj_weight.defined() ? p.in_proj_weight.shape().str()
                                                         : std::string("none")));
    nn::detail::require_vector(kOp, "in_proj_bias", p.in_proj_bias, 3 * E);
    if (p.out_proj_weight.dim() != 2 || p.out_proj_weight.size(1) != E)
        shape_error(kOp, "expected out_proj_weight [" + std::to_string(E) + ", " +
                             std::to_string(E) + "], got " + p.out_proj_weight.shape().str());
    nn::detail::require_vector(kOp, "out_proj_bias", p.out_proj_bias, E);
    if (q.size(2) != E || k.size(2) != E || v.size(2) != E)
        shape_error(kOp, "expected query, key and value with embed_dim " + std::to_string(E) +
                             " in the last dim, got " + q.shape().str() + ", " + k.shape().str() +
                             ", " + v.shape().str());
    if (k.shape() != v.shape())
        shape_error(kOp, "key " + k.shape().str() + " and value " + v.shape().str() +
                             " must have the same shape");
    if (k.size(b) != q.size(b))
        shape_error(kOp, "query and key have different batch sizes: " + q.shape().str() + " and " +
                             k.shape().str() + " " + layout);
    return {q.size(b), q.size(l), k.size(l), E, p.num_heads, E / p.num_heads};
}

// The projections, and where q, k and v live in them: sources[which[i]], columns from off[i].
struct Projection {
    TensorList sources;
    int which[3] = {0, 0, 0};
    int64_t off[3] = {0, 0, 0};
};

Projection project(const Tensor& q, const Tensor& k, const Tensor& v,
                   const MultiheadAttentionParams& p, int64_t E) {
    const Tensor& w = p.in_proj_weight;
    const Tensor& bias = p.in_proj_bias;
    auto rows = [&](int64_t first, int64_t n) {
        return std::pair{w.narrow(0, first, n),
                         bias.defined() ? bias.narrow(0, first, n) : Tensor()};
    };
    Projection r;
    if (q.is_same(k) && k.is_same(v)) { // self-attention: one GEMM
        r.sources = {linear(q, w, bias)};
        r.off[1] = E;
        r.off[2] = 2 * E;
    } else if (k.is_same(v)) {
        auto [wq, bq] = rows(0, E);
        auto [wkv, bkv] = rows(E, 2 * E);
        r.sources = {linear(q, wq, bq), linear(k, wkv, bkv)};
        r.which[1] = r.which[2] = 1;
        r.off[2] = E;
    } else {
        for (int i = 0; i < 3; ++i) {
            auto [wi, bi] = rows(i * E, E);
            r.sources.push_back(linear(i == 0 ? q : i == 1 ? k : v, wi, bi));
            r.which[i] = i;
        }
    }
    return r;
}

// ---------------------------------------------------------------------------------------------
// The attention node: projections -> merged attention output [.., E] in the query's layout.

Tensor attention_node(const Projection& proj, const Dims3& d, bool batch_first, const Tensor& mask,
                      double dropout_p, bool training) {
    const int64_t N = d.B * d.H, L = d.L, S = d.S, H = d.H, Dh = d.Dh;
    const double scale = 1.0 / std::sqrt(static_cast<double>(Dh));
    const Tensor& q_src = proj.sources[static_cast<size_t>(proj.which[0])];
    const DType dt = q_src.dtype();
    const Device dev = q_src.device();
    Tensor Q, K, V, P, attn, keep; // keep: the dropout mask (bytes), when dropout ran
    kernels::DropoutStream stream(0, 0.0);
    Tensor out;
    {
        autograd::NoGradGuard no_grad;
        Q = split_heads(q_src, batch_first, proj.off[0], H, Dh, scale);
        K = split_heads(proj.sources[static_cast<size_t>(proj.which[1])], batch_first, proj.off[1],
                        H, Dh, 1.0);
        V = split_heads(proj.sources[static_cast<size_t>(proj.which[2])], batch_first, proj.off[2],
                        H, Dh, 1.0);
        // scores = mask + Q K^T (one batched GEMM accumulating onto the broadcast mask)
        Tensor scores = make_tensor({N, L, S}, dt, dev);
        if (mask.defined())
            backend_for(scores).copy(
                broadcast_view(mask, {d.B, H, L, S}),
                view_of(make_view(scores, {d.B, H, L, S}, contiguous_strides({d.B, H, L, S}), 0)));
        const Tensor kt = make_view(K, {N, Dh, S}, {S * Dh, 1, Dh}, 0);
        backend_for(scores).batched_gemm(view_of(Q), view_of(kt), view_of(scores), mask.defined());
        P = make_tensor({N, L, S}, dt, dev);
        if (P.numel() > 0) backend_for(P).softmax(view_of(scores), 2, false, view_of(P));
        attn = P;
        if (training && dropout_p > 0.0) {
            // The default generator (its state is what checkpoints save) seeds the mask.
            stream = kernels::DropoutStream(default_generator().next_u64(), dropout_p);
            keep = make_tensor({N, L, S}, DType::UInt8, dev);
            attn = make_tensor({N, L, S}, dt, dev);
            if (dt == DType::Float64)
                kernels::dropout_forward(stream, P.data<double>(), P.numel(), attn.data<double>(),
                                         keep.data<uint8_t>());
            else
                kernels::dropout_forward(stream, P.data<float>(), P.numel(), attn.data<float>(),
                                         keep.data<uint8_t>());
        }
        const Tensor heads = bmm(attn, V);
        Dims out_shape = batch_first ? Dims{d.B, L, d.E} : Dims{L, d.B, d.E};
        out = make_tensor(out_shape, dt, dev);
        merge_heads(heads, out, batch_first, 0, H, Dh, 1.0);
    }
    if (!autograd::is_grad_enabled() || !autograd::any_requires_grad(proj.sources)) return out;

    std::vector<Dims> source_shapes;
    for (const Tensor& s : proj.sources)
        source_shapes.push_back(s.shape());
    autograd::record_list(
        "MultiheadAttentionBackward0", proj.sources, out,
        [Q, K, V, P, attn, keep, stream, which = std::vector<int>(proj.which, proj.which + 3),
         off = std::vector<int64_t>(proj.off, proj.off + 3), source_shapes, batch_first, H, Dh,
         scale](const Tensor& g, const Node& node) {
            const Tensor dO = split_heads(g, batch_first, 0, H, Dh, 1.0);
            Tensor dattn = bmm(dO, V.transpose(1, 2));
            const Tensor dV = bmm(attn.transpose(1, 2), dO);
            if (keep.defined()) { // through the dropout mask, in place (dattn is ours)
                if (dattn.dtype() == DType::Float64)
                    kernels::dropout_backward(stream, dattn.data<double>(), keep.data<uint8_t>(),
                                              dattn.numel(), dattn.data<double>());
                else
                    kernels::dropout_backward(stream, dattn.data<float>(), keep.data<uint8_t>(),
                                              dattn.numel(), dattn.data<float>());
            }
            Tensor dS = make_tensor(P.shape(), P.dtype(), P.device());
            if (P.numel() > 0) // empty batches or sequences: nothing to differentiate
                backend_for(P).softmax_backward(view_of(P), view_of(dattn), 2, false, view_of(dS));
            const Tensor dQ = bmm(dS, K);                 // times scale on merge
            const Tensor dK = bmm(dS.transpose(1, 2), Q); // Q is already scaled
            TensorList grads(source_shapes.size());
            const Tensor* parts[3] = {&dQ, &dK, &dV};
            for (int i = 0; i < 3; ++i) {
                const size_t s = static_cast<size_t>(which[static_cast<size_t>(i)]);
                if (!node.needs_input_grad(s)) continue;
                if (!grads[s].defined())
                    grads[s] = make_tensor(source_shapes[s], P.dtype(), P.device());
                merge_heads(*parts[i], grads[s], batch_first, off[static_cast<size_t>(i)], H, Dh,
                            i == 0 ? scale : 1.0);
            }
            return grads;
        });
    return out;
}

// Unbatched inputs ([L, E]) run as a batch of one in the sequence-first layout.
struct Batched {
    Tensor q, k, v;
    AttentionMasks masks;
    bool unbatched = false;
};

Batched batch_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionMasks& m) {
    if (q.dim() != 2) return {q, k, v, m, false};
    Batched r{q.unsqueeze(1), k.is_same(q) ? Tensor() : k.unsqueeze(1), Tensor(), m, true};
    if (!r.k.defined()) r.k = r.q;
    r.v = v.is_same(k) ? r.k : v.unsqueeze(1);
    const Tensor& kp = m.key_padding_mask;
    if (kp.defined() && kp.dim() == 1 && kp.dtype() != DType::Int64)
        r.masks.key_padding_mask = kp.unsqueeze(0);
    return r;
}

// batch_first does not apply to unbatched inputs (PyTorch ignores it too).
MultiheadAttentionParams sequence_first(MultiheadAttentionParams p) {
    p.batch_first = false;
    return p;
}

} // namespace

// ---------------------------------------------------------------------------------------------

Tensor causal_mask(int64_t size, DType dtype) {
    if (size < 0)
        throw Error("causal_mask: size must not be negative, got " + std::to_string(size));
    if (!is_floating(dtype))
        throw DTypeError(std::string("causal_mask: expected a floating dtype, got ") +
                         dtype_name(dtype));
    const Tensor i = arange(static_cast<double>(size)).unsqueeze(1);
    const Tensor j = arange(static_cast<double>(size)).unsqueeze(0);
    return masked_fill(zeros({size, size}, dtype), gt(j, i), kNegInf);
}

Tensor padding_mask_from_lengths(const Tensor& lengths, int64_t max_len) {
    if (lengths.dtype() != DType::Int64 || lengths.dim() != 1)
        throw ShapeError("padding_mask_from_lengths: expected lengths int64 [batch], got " +
                         shape_of(lengths));
    const std::vector<int64_t> lens = lengths.contiguous().to_vector<int64_t>();
    for (size_t b = 0; b < lens.size(); ++b)
        if (lens[b] < 0 || lens[b] > max_len)
            throw IndexError("lengths[" + std::to_string(b) + "] = " + std::to_string(lens[b]) +
                             " is outside [0, " + std::to_string(max_len) +
                             "] (the sequence length)");
    const Tensor steps = arange(static_cast<double>(max_len)).unsqueeze(0);
    return ge(steps, lengths.unsqueeze(1));
}

Tensor multi_head_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                            const MultiheadAttentionParams& given, const AttentionMasks& masks) {
    const Batched in = batch_inputs(query, key, value, masks);
    const MultiheadAttentionParams params = in.unbatched ? sequence_first(given) : given;
    const Dims3 d = check_inputs(in.q, in.k, in.v, params);
    const Tensor mask = combined_mask(in.masks, d.B, d.H, d.L, d.S, in.q.dtype());
    const Projection proj = project(in.q, in.k, in.v, params, d.E);
    const Tensor heads =
        attention_node(proj, d, params.batch_first, mask, params.dropout, params.training);
    const Tensor out = linear(heads, params.out_proj_weight, params.out_proj_bias);
    return in.unbatched ? out.squeeze(1) : out;
}

AttentionResult multi_head_attention_with_weights(const Tensor& query, const Tensor& key,
                                                  const Tensor& value,
                                                  const MultiheadAttentionParams& given,
                                                  const AttentionMasks& masks,
                                                  bool average_attn_weights) {
    const Batched in = batch_inputs(query, key, value, masks);
    const MultiheadAttentionParams params = in.unbatched ? sequence_first(given) : given;
    const Dims3 d = check_inputs(in.q, in.k, in.v, params);
    const Tensor mask = combined_mask(in.masks, d.B, d.H, d.L, d.S, in.q.dtype());
    const Projection proj = project(in.q, in.k, in.v, params, d.E);
    const bool bf = params.batch_first;
    // [.., E] columns from off -> [B*H, len, Dh] with differentiable ops.
    auto heads = [&](int i, int64_t len) {
        const Tensor cols =
            proj.sources[static_cast<size_t>(proj.which[i])].narrow(2, proj.off[i], d.E);
        const Tensor t = bf ? cols.reshape({d.B, len, d.H, d.Dh}).permute({0, 2, 1, 3})
                            : cols.reshape({len, d.B, d.H, d.Dh}).permute({1, 2, 0, 3});
        return t.reshape({d.B * d.H, len, d.Dh});
    };
    const Tensor q = heads(0, d.L) / std::sqrt(static_cast<double>(d.Dh));
    const Tensor k = heads(1, d.S), v = heads(2, d.S);
    Tensor scores = bmm(q, k.transpose(1, 2));
    if (mask.defined())
        scores = (scores.view({d.B, d.H, d.L, d.S}) + mask).view({d.B * d.H, d.L, d.S});
    // (core's softmax refuses empty tensors: an empty batch or sequence has nothing to normalise)
    Tensor attn = scores.numel() > 0 ? softmax(scores, -1) : scores;
    attn = dropout(attn, params.dropout, params.training);
    const Tensor o = bmm(attn, v).view({d.B, d.H, d.L, d.Dh});
    const Tensor merged = (bf ? o.permute({0, 2, 1, 3}) : o.permute({2, 0, 1, 3}))
                              .reshape(bf ? Dims{d.B, d.L, d.E} : Dims{d.L, d.B, d.E});
    Tensor out = linear(merged, params.out_proj_weight, params.out_proj_bias);
    Tensor w = attn.view({d.B, d.H, d.L, d.S});
    if (average_attn_weights)
        w = w.numel() > 0
                ? w.sum({1}) / static_cast<double>(d.H)
                : zeros({d.B, d.L, d.S}, TensorOptions(w.dtype()).with_device(w.device()));
    if (in.unbatched) {
        out = out.squeeze(1);
        w = w.squeeze(0);
    }
    return {out, w};
}

// ---------------------------------------------------------------------------------------------
// Sequence utilities

namespace {

std::vector<int64_t> checked_lengths(const char* op, const Tensor& x, const Tensor& lengths) {
    if (x.dim() < 2)
        shape_error(op, "expected a sequence [batch, length, ...] (at least 2-D), got " +
                            x.shape().str());
    const int64_t B = x.size(0), T = x.size(1);
    if (lengths.dtype() != DType::Int64 || lengths.dim() != 1 || lengths.size(0) != B)
        shape_error(op, "expected lengths int64 [" + std::to_string(B) + "] (one per sequence of " +
                            x.shape().str() + "), got " + shape_of(lengths));
    std::vector<int64_t> lens = lengths.contiguous().to_vector<int64_t>();
    for (size_t b = 0; b < lens.size(); ++b)
        if (lens[b] < 1 || lens[b] > T)
            throw IndexError(std::string(op) + ": lengths[" + std::to_string(b) + "] = " +
                             std::to_string(lens[b]) + " is outside [1, " + std::to_string(T) +
                             "] (the sequence length of " + x.shape().str() + ")");
    return lens;
}

} // namespace

Tensor sequence_last(const Tensor& x, const Tensor& lengths) {
    const char* op = "sequence_last";
    if (x.dim() < 2 || x.size(1) == 0)
        shape_error(op,
                    "expected a non-empty sequence [batch, length, ...], got " + x.shape().str());
    if (!lengths.defined()) return x.select(1, -1);
    const std::vector<int64_t> lens = checked_lengths(op, x, lengths);
    const int64_t T = x.size(1);
    std::vector<int64_t> rows(lens.size());
    for (size_t b = 0; b < lens.size(); ++b)
        rows[b] = static_cast<int64_t>(b) * T + lens[b] - 1;
    Dims flat = x.shape();
    flat.erase(1);
    flat[0] = x.size(0) * T;
    const Tensor index = from_vector(rows, {static_cast<int64_t>(rows.size())});
    return index_select(x.reshape(flat), 0, index.to(x.device()));
}

Tensor sequence_mean_pool(const Tensor& x, const Tensor& lengths) {
    const char* op = "sequence_mean_pool";
    if (x.dim() < 2 || x.size(1) == 0)
        shape_error(op,
                    "expected a non-empty sequence [batch, length, ...], got " + x.shape().str());
    nn::detail::require_floating(op, "input", x);
    if (!lengths.defined()) return x.mean({1});
    const std::vector<int64_t> lens = checked_lengths(op, x, lengths);
    const int64_t B = x.size(0), T = x.size(1);
    // weights[b, t] = 1 / length_b on valid steps: one batched product [B,1,T] x [B,T,F].
    std::vector<double> w(static_cast<size_t>(B * T), 0.0);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < lens[static_cast<size_t>(b)]; ++t)
            w[static_cast<size_t>(b * T + t)] =
                1.0 / static_cast<double>(lens[static_cast<size_t>(b)]);
    const Tensor weights = from_vector(w, {B, 1, T}).to(x.dtype()).to(x.device());
    Dims out_shape = x.shape();
    out_shape.erase(1);
    return bmm(weights, x.reshape({B, T, -1})).reshape(out_shape);
}

Tensor sinusoidal_position_table(int64_t max_len, int64_t d_model, DType dtype) {
    if (max_len <= 0 || d_model <= 0)
        throw Error("sinusoidal_position_table: max_len and d_model must be positive, got " +
                    std::to_string(max_len) + " and " + std::to_string(d_model));
    std::vector<double> pe(static_cast<size_t>(max_len * d_model));
    for (int64_t i = 0; 2 * i < d_model; ++i) {
        const double div = std::exp(static_cast<double>(2 * i) *
                                    (-std::log(10000.0) / static_cast<double>(d_model)));
        for (int64_t pos = 0; pos < max_len; ++pos) {
            const double a = static_cast<double>(pos) * div;
            pe[static_cast<size_t>(pos * d_model + 2 * i)] = std::sin(a);
            if (2 * i + 1 < d_model)
                pe[static_cast<size_t>(pos * d_model + 2 * i + 1)] = std::cos(a);
        }
    }
    return from_vector(pe, {max_len, d_model}).to(dtype);
}

} // namespace myelin::nn::functional
