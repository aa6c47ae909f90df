// Multi-head attention (PyTorch 1.13's multi_head_attention_forward, without bias_k/v, zero
// attention and separate projection weights), its masks, and the sequence utilities.
//
// The hot path (multi_head_attention) records the attention between the in- and out-projections
// as ONE autograd node. Its GEMMs run per head on the projections' own memory (the backend's
// AttentionHeads entries, sequence_kernels.h):
// the scores are scale * Q K^T accumulated onto the additive mask (PyTorch's baddbmm), softmax is
// fused with dropout in one pass over each row, and each head's output is written into its
// columns of the merged [.., E] output, so the heads are never split or merged by copies. Its
// backward writes the gradient of the packed [.., 3E] projection directly, instead of three
// zero-filled slices that autograd would sum. The weights path
// (multi_head_attention_with_weights) composes the same math from differentiable tensor ops, and
// so does multi_head_attention on a device without those entries: bmm on the device's batched
// GEMM, its softmax and dropout (the same mask: one counter-based stream).
#include "autograd/function.h"
#include "backend/kernels/dropout.h"
#include "backend/nn_kernels.h"
#include "nn/functional_common.h"
#include "tensor/tensor_impl.h"

#include <myelin/autograd.h>
#include <myelin/generator.h>
#include <myelin/nn/attention.h>
#include <myelin/nn/functional.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace myelin::nn::functional {

using autograd::Node;
using namespace myelin::detail;
using backend::HeadOperand;
using backend::HeadResult;
using nn::detail::check_int_values;
using nn::detail::shape_error;

namespace {

constexpr const char* kOp = "multi_head_attention";
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------------------------
// Heads. A "sequence tensor" is [B, L, C] (batch first) or [L, B, C] with a unit stride in C;
// head h of a row is the columns off + h*Dh ... off + h*Dh + Dh - 1.

struct SeqLayout {
    int64_t batch = 0, len = 0;
    int64_t stride_b = 0, stride_l = 0;
};

SeqLayout seq_layout(const Tensor& t, bool batch_first) {
    const int b = batch_first ? 0 : 1, l = batch_first ? 1 : 0;
    return {t.size(b), t.size(l), t.stride(b), t.stride(l)};
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

// A mask where the attention runs (a causal mask is built on the host).
Tensor on(const Tensor& mask, const Device& device) {
    return mask.defined() ? mask.to(device) : mask;
}

// The one additive mask of an attention call: [B or 1, H or 1, L or 1, S], or undefined.
Tensor combined_mask(const AttentionMasks& masks, int64_t B, int64_t H, int64_t L, int64_t S,
                     DType dtype, const Device& device) {
    autograd::NoGradGuard no_grad;
    Tensor result;
    if (const Tensor kp = on(masks.key_padding_mask, device); kp.defined()) {
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
    if (const Tensor am = on(masks.attn_mask, device); am.defined()) {
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

// Where the heads of one operand live: columns off + h*Dh of a contiguous sequence tensor.
// Element `off` of t (any dtype, any device: only the address is computed).
void* element(const Tensor& t, int64_t off) {
    return static_cast<char*>(t.data_ptr()) + off * int64_t(t.element_size());
}
HeadOperand heads_of(const Tensor& t, bool batch_first, int64_t off, int64_t Dh,
                     bool trans = false) {
    const SeqLayout s = seq_layout(t, batch_first);
    return {element(t, off), s.stride_b, Dh, s.stride_l, trans};
}
HeadResult heads_into(Tensor& t, bool batch_first, int64_t off, int64_t Dh) {
    const SeqLayout s = seq_layout(t, batch_first);
    return {element(t, off), s.stride_b, Dh, s.stride_l};
}
// A contiguous [B*H, rows, cols] buffer as head matrices.
HeadOperand stacked(const Tensor& t, int64_t H, bool trans = false) {
    const int64_t m = t.size(1) * t.size(2);
    return {t.data_ptr(), H * m, m, t.size(2), trans};
}
HeadResult stacked_into(Tensor& t, int64_t H) {
    const int64_t m = t.size(1) * t.size(2);
    return {t.data_ptr(), H * m, m, t.size(2)};
}

// For every head (b, h): C = alpha * op(A) op(B) + beta * C, op(A) [M, K], op(B) [K, N].
void head_gemm(backend::NnKernels& k, DType dtype, int64_t B, int64_t H, int64_t M, int64_t N,
               int64_t K, double alpha, const HeadOperand& a, const HeadOperand& b, double beta,
               const HeadResult& c) {
    k.head_gemm({dtype, B, H, M, N, K, alpha, beta}, a, b, c);
}

// The forward: scores = mask + scale * Q K^T per head (Q, K, V read in place from the
// projections), softmax and dropout in one pass, then each head's A V written into its columns
// of the output.
Tensor attention_forward(const TensorList& src, const int* which, const int64_t* off,
                         const Dims3& d, bool batch_first, const Tensor& mask, double scale,
                         Tensor& P, Tensor& attn, Tensor& keep, kernels::DropoutStream& stream,
                         double dropout_p, bool training) {
    const int64_t N = d.B * d.H, L = d.L, S = d.S, H = d.H, Dh = d.Dh;
    const DType dt = src[0].dtype();
    const Device dev = src[0].device();
    auto in = [&](int i, bool trans = false) {
        return heads_of(src[static_cast<size_t>(which[i])], batch_first, off[i], Dh, trans);
    };
    backend::NnKernels& k = nn::detail::nn_table(src[0], backend::Primitive::AttentionHeads);
    Tensor scores = make_tensor({N, L, S}, dt, dev);
    if (mask.defined())
        backend_for(scores).copy(
            broadcast_view(mask, {d.B, H, L, S}),
            view_of(make_view(scores, {d.B, H, L, S}, contiguous_strides({d.B, H, L, S}), 0)));
    head_gemm(k, dt, d.B, H, L, S, Dh, scale, in(0), in(1, true), mask.defined() ? 1.0 : 0.0,
              stacked_into(scores, H));
    // softmax (and dropout) in one pass per row
    P = make_tensor({N, L, S}, dt, dev);
    attn = P;
    const bool drop = training && dropout_p > 0.0;
    if (drop) {
        // The default generator (its state is what checkpoints save) seeds the mask.
        stream = kernels::DropoutStream(default_generator().next_u64(), dropout_p);
        keep = make_tensor({N, L, S}, DType::UInt8, dev);
        attn = make_tensor({N, L, S}, dt, dev);
    }
    if (S > 0)
        k.attention_softmax(dt, scores.data_ptr(), N * L, S, P.data_ptr(), drop ? &stream : nullptr,
                            drop ? attn.data_ptr() : nullptr,
                            drop ? keep.data<uint8_t>() : nullptr);
    Tensor out = make_tensor(batch_first ? Dims{d.B, L, d.E} : Dims{L, d.B, d.E}, dt, dev);
    head_gemm(k, dt, d.B, H, L, Dh, S, 1.0, stacked(attn, H), in(2), 0.0,
              heads_into(out, batch_first, 0, Dh));
    return out;
}

// The backward, gradients written straight into the projections' layout. Every column of a
// source that needs a gradient belongs to one of q, k, v, so no buffer is zero-filled first.
struct AttentionSaved {
    std::vector<autograd::SavedTensor> src;
    std::vector<Dims> shapes;
    int which[3];
    int64_t off[3];
    Dims3 d;
    bool batch_first;
    double scale;
    Tensor P, attn, keep;
    kernels::DropoutStream stream{0, 0.0};
};

TensorList attention_backward(const AttentionSaved& a, const Tensor& grad, const Node& node) {
    const int64_t L = a.d.L, S = a.d.S, H = a.d.H, Dh = a.d.Dh, B = a.d.B;
    TensorList src;
    for (const autograd::SavedTensor& t : a.src)
        src.push_back(t.unpack(node));
    const Tensor g = grad.contiguous();
    auto in = [&](int i, bool trans = false) {
        return heads_of(src[static_cast<size_t>(a.which[i])], a.batch_first, a.off[i], Dh, trans);
    };
    const HeadOperand dO = heads_of(g, a.batch_first, 0, Dh);
    const DType dt = g.dtype();
    backend::NnKernels& k = nn::detail::nn_table(g, backend::Primitive::AttentionHeads);
    TensorList grads(src.size());
    auto out = [&](int i) -> std::optional<HeadResult> {
        const size_t s = static_cast<size_t>(a.which[i]);
        if (!node.needs_input_grad(s)) return std::nullopt;
        if (!grads[s].defined()) grads[s] = make_tensor(a.shapes[s], g.dtype(), g.device());
        return heads_into(grads[s], a.batch_first, a.off[i], Dh);
    };
    // dV = A^T dO; dA = dO V^T.
    if (auto dv = out(2))
        head_gemm(k, dt, B, H, S, Dh, L, 1.0, stacked(a.attn, H, true), dO, 0.0, *dv);
    Tensor dattn = make_tensor(a.P.shape(), g.dtype(), g.device());
    head_gemm(k, dt, B, H, L, S, Dh, 1.0, dO, in(2, true), 0.0, stacked_into(dattn, H));
    Tensor dS = make_tensor(a.P.shape(), g.dtype(), g.device());
    if (S > 0) // through the dropout mask, then the softmax
        k.attention_softmax_backward(dt, a.P.data_ptr(), dattn.data_ptr(), B * H * L, S,
                                     a.keep.defined() ? &a.stream : nullptr,
                                     a.keep.defined() ? a.keep.data<uint8_t>() : nullptr,
                                     dS.data_ptr());
    // scores = scale Q K^T: dQ = scale dS K, dK = scale dS^T Q.
    if (auto dq = out(0))
        head_gemm(k, dt, B, H, L, Dh, S, a.scale, stacked(dS, H), in(1), 0.0, *dq);
    if (auto dk = out(1))
        head_gemm(k, dt, B, H, S, Dh, L, a.scale, stacked(dS, H, true), in(0), 0.0, *dk);
    return grads;
}

// The attention node: projections -> merged attention output [.., E] in the query's layout.
Tensor attention_node(const Projection& proj, const Dims3& d, bool batch_first, const Tensor& mask,
                      double dropout_p, bool training) {
    auto saved = std::make_shared<AttentionSaved>();
    TensorList src;
    {
        autograd::NoGradGuard no_grad;
        for (const Tensor& s : proj.sources) // read in place (linear's outputs are contiguous)
            src.push_back(s.contiguous().detach());
    }
    std::copy_n(proj.which, 3, saved->which);
    std::copy_n(proj.off, 3, saved->off);
    saved->d = d;
    saved->batch_first = batch_first;
    saved->scale = 1.0 / std::sqrt(static_cast<double>(d.Dh));
    Tensor out;
    {
        autograd::NoGradGuard no_grad;
        out = attention_forward(src, proj.which, proj.off, d, batch_first, mask, saved->scale,
                                saved->P, saved->attn, saved->keep, saved->stream, dropout_p,
                                training);
    }
    if (!autograd::is_grad_enabled() || !autograd::any_requires_grad(proj.sources)) return out;
    for (const Tensor& s : src) {
        saved->src.emplace_back(s);
        saved->shapes.push_back(s.shape());
    }
    autograd::record_list(
        "MultiheadAttentionBackward0", proj.sources, out,
        [saved](const Tensor& g, const Node& node) { return attention_backward(*saved, g, node); });
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

// The attention composed from differentiable tensor ops (any device): the output and, with
// `want_weights`, the attention weights [B, H, L, S] (averaged over heads when `average`).
AttentionResult composed_attention(const Batched& in, const MultiheadAttentionParams& params,
                                   bool want_weights, bool average_attn_weights) {
    const Dims3 d = check_inputs(in.q, in.k, in.v, params);
    const Tensor mask = combined_mask(in.masks, d.B, d.H, d.L, d.S, in.q.dtype(), in.q.device());
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
    Tensor w;
    if (want_weights) {
        w = attn.view({d.B, d.H, d.L, d.S});
        if (average_attn_weights)
            w = w.numel() > 0
                    ? w.sum({1}) / static_cast<double>(d.H)
                    : zeros({d.B, d.L, d.S}, TensorOptions(w.dtype()).with_device(w.device()));
        if (in.unbatched) w = w.squeeze(0);
    }
    if (in.unbatched) out = out.squeeze(1);
    return {out, w};
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

Tensor padding_lengths(const Tensor& tokens) {
    if (tokens.dim() != 2)
        throw ShapeError("padding_lengths: expected tokens [batch, length], got " +
                         shape_of(tokens));
    const Tensor lengths = clamp(ne(tokens, 0.0).to(DType::Int64).sum(Dims{1}), 1.0, std::nullopt);
    note_int_bounds(lengths, 1, std::max<int64_t>(tokens.size(1), 1));
    return lengths;
}

Tensor padding_mask_from_lengths(const Tensor& lengths, int64_t max_len) {
    if (lengths.dtype() != DType::Int64 || lengths.dim() != 1)
        throw ShapeError("padding_mask_from_lengths: expected lengths int64 [batch], got " +
                         shape_of(lengths));
    check_int_values(lengths, 0, max_len, std::nullopt, [&](const int64_t* lens, int64_t n) {
        for (int64_t b = 0; b < n; ++b)
            if (lens[b] < 0 || lens[b] > max_len)
                throw IndexError("lengths[" + std::to_string(b) + "] = " + std::to_string(lens[b]) +
                                 " is outside [0, " + std::to_string(max_len) +
                                 "] (the sequence length)");
    });
    const Tensor steps = arange(static_cast<double>(max_len)).unsqueeze(0).to(DType::Int64);
    return ge(steps.to(lengths.device()), lengths.unsqueeze(1));
}

Tensor multi_head_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                            const MultiheadAttentionParams& given, const AttentionMasks& masks) {
    const Batched in = batch_inputs(query, key, value, masks);
    const MultiheadAttentionParams params = in.unbatched ? sequence_first(given) : given;
    // The fused node runs on the device's attention entries; elsewhere the composed ops.
    if (!nn::detail::device_runs(in.q, backend::Primitive::AttentionHeads))
        return composed_attention(in, params, false, false).output;
    const Dims3 d = check_inputs(in.q, in.k, in.v, params);
    const Tensor mask = combined_mask(in.masks, d.B, d.H, d.L, d.S, in.q.dtype(), in.q.device());
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
    return composed_attention(in, in.unbatched ? sequence_first(given) : given, true,
                              average_attn_weights);
}

// ---------------------------------------------------------------------------------------------
// Sequence utilities

namespace {

// Lengths int64 [B] within [1, T] for x [B, T, ...], checked without reading a device when
// their values came from the host (check_int_values).
void check_lengths(const char* op, const Tensor& x, const Tensor& lengths) {
    if (x.dim() < 2)
        shape_error(op, "expected a sequence [batch, length, ...] (at least 2-D), got " +
                            x.shape().str());
    const int64_t B = x.size(0), T = x.size(1);
    if (lengths.dtype() != DType::Int64 || lengths.dim() != 1 || lengths.size(0) != B)
        shape_error(op, "expected lengths int64 [" + std::to_string(B) + "] (one per sequence of " +
                            x.shape().str() + "), got " + shape_of(lengths));
    check_int_values(lengths, 1, T, std::nullopt, [&](const int64_t* lens, int64_t n) {
        for (int64_t b = 0; b < n; ++b)
            if (lens[b] < 1 || lens[b] > T)
                throw IndexError(std::string(op) + ": lengths[" + std::to_string(b) + "] = " +
                                 std::to_string(lens[b]) + " is outside [1, " + std::to_string(T) +
                                 "] (the sequence length of " + x.shape().str() + ")");
    });
}

} // namespace

Tensor sequence_last(const Tensor& x, const Tensor& lengths) {
    const char* op = "sequence_last";
    if (x.dim() < 2 || x.size(1) == 0)
        shape_error(op,
                    "expected a non-empty sequence [batch, length, ...], got " + x.shape().str());
    if (!lengths.defined()) return x.select(1, -1);
    check_lengths(op, x, lengths);
    const int64_t B = x.size(0), T = x.size(1);
    // Row b * T + lengths[b] - 1 of x seen as [B * T, ...], computed where the lengths are.
    const Tensor starts = arange(0.0, double(B * T), double(T)).to(DType::Int64);
    const Tensor index = starts.to(lengths.device()) + lengths.detach() - 1.0;
    note_int_bounds(index, 0, B * T - 1); // so a device's index_select need not read it back
    Dims flat = x.shape();
    flat.erase(1);
    flat[0] = B * T;
    return index_select(x.reshape(flat), 0, index.to(x.device()));
}

Tensor sequence_mean_pool(const Tensor& x, const Tensor& lengths) {
    const char* op = "sequence_mean_pool";
    if (x.dim() < 2 || x.size(1) == 0)
        shape_error(op,
                    "expected a non-empty sequence [batch, length, ...], got " + x.shape().str());
    nn::detail::require_floating(op, "input", x);
    if (!lengths.defined()) return x.mean({1});
    check_lengths(op, x, lengths);
    const int64_t B = x.size(0), T = x.size(1);
    // weights[b, t] = 1 / length_b on valid steps (in double, then x's dtype), computed where x
    // is: one batched product [B,1,T] x [B,T,F].
    const Tensor len = lengths.detach().to(x.device()).unsqueeze(1); // [B, 1]
    const Tensor steps = arange(double(T)).to(DType::Int64).to(x.device()).unsqueeze(0);
    const Tensor inverse = 1.0 / len.to(DType::Float64);
    const Tensor weights = where(lt(steps, len), inverse,
                                 zeros({1}, TensorOptions(DType::Float64).with_device(x.device())))
                               .to(x.dtype())
                               .unsqueeze(1);
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
