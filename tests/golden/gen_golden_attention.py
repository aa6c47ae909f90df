#!/usr/bin/python3
"""Generate Myelin's golden fixtures for the attention and sequence layers (nn/attention.h).

Run by hand with Debian's torch (1.13):

    /usr/bin/python3 tests/golden/gen_golden_attention.py

It rewrites tests/golden/attention_f32.txt and attention_f64.txt in the format of the nn fixtures
(the docstring of gen_golden_nn.py, whose case writer this script uses); tests/core/
test_nn_golden.cpp reads them with the nn fixtures. Masks and lengths are extra `in` lines with
rg 0 (dtype tags `bool` and `i64`).

PyTorch 1.13's MultiheadAttention, TransformerEncoderLayer and TransformerEncoder have "fast
paths" (native fused kernels, nested tensors) taken in eval mode when no gradient is needed.
Every case here runs forward with grad enabled and parameters that require grad, so PyTorch
takes its ordinary path (multi_head_attention_forward: baddbmm, softmax, bmm): the golden
numbers are the documented math. Dropout is 0 in the cases run in both modes; a case with
dropout > 0 runs in eval mode only (random streams differ from PyTorch's).

Kinds (factories in test_nn_golden.cpp / golden_attention_factories.h):
    MultiheadAttention       the module's own input convention: {x, key_padding}, {q, k, v}, ...
    MultiheadAttentionCall   MultiheadAttention called another way (opt `call`): qkv_attn (query,
                             key, value, attn_mask), q_kv (key is value), weights_avg /
                             weights_heads (x, key_padding -> the output and the attention
                             weights, flattened and concatenated)
    MultiheadAttentionNode   the editor's MultiheadAttention kind (core/graph/
                             registry_attention.cpp, built from the registry): self-attention
                             over {x [N, T, E]} or {x, lengths}, opt causal, with need_weights two
                             outputs (out 0: the output, out 1: the weights averaged over the heads
                             or per head), backward through both at once
    TransformerEncoderLayer, TransformerEncoder, SinusoidalPositionalEncoding,
    LearnedPositionalEncoding, SequenceLast, SequenceMeanPool
"""

import math
import os
import sys
import zlib

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_golden_nn as G  # noqa: E402

F32, F64, I64, BOOL = torch.float32, torch.float64, torch.int64, torch.bool
G.FX = {F32: G.Fixture("attention_f32.txt"), F64: G.Fixture("attention_f64.txt")}
U = G.U


# ----------------------------------------------------------------------------------------------
# Modules mirroring the C++ ones
class MultiheadAttention(nn.MultiheadAttention):
    """Myelin's input convention: {x}, {x, key_padding}, {q, k, v}, {q, k, v, key_padding},
    {q, k, v, key_padding, attn_mask}; key_padding may be int64 lengths."""

    def forward(self, *xs):
        if len(xs) <= 2:
            q = k = v = xs[0]
            kp = xs[1] if len(xs) == 2 else None
            am = None
        else:
            q, k, v = xs[:3]
            kp = xs[3] if len(xs) > 3 else None
            am = xs[4] if len(xs) > 4 else None
        kp = lengths_to_mask(kp, k.shape[1 if self.batch_first else 0])
        return super().forward(q, k, v, key_padding_mask=kp, attn_mask=am, need_weights=False)[0]


class MultiheadAttentionCall(nn.MultiheadAttention):
    def __init__(self, call, *args, **kw):
        super().__init__(*args, **kw)
        self.call = call

    def forward(self, *xs):
        if self.call == "qkv_attn":
            q, k, v, am = xs
            return super().forward(q, k, v, attn_mask=am, need_weights=False)[0]
        if self.call == "q_kv":
            q, kv = xs
            return super().forward(q, kv, kv, need_weights=False)[0]
        # The output and the weights in one tensor: every parameter gets a gradient.
        x, kp = xs
        avg = self.call == "weights_avg"
        out, w = super().forward(x, x, x, key_padding_mask=kp, need_weights=True,
                                 average_attn_weights=avg)
        return torch.cat([out.reshape(-1), w.reshape(-1)])


class SelfAttentionNode(nn.MultiheadAttention):
    """The editor kind: batch first, {x} or {x, lengths}, causal, the output and the weights."""

    def __init__(self, embed_dim, num_heads, causal, average):
        super().__init__(embed_dim, num_heads, batch_first=True)
        self.causal, self.average = causal, average

    def forward(self, x, lengths=None):
        steps = x.shape[1]
        mask = None
        if self.causal:
            mask = torch.triu(torch.full((steps, steps), float("-inf"), dtype=x.dtype), 1)
        return super().forward(x, x, x, key_padding_mask=lengths_to_mask(lengths, steps),
                               attn_mask=mask, need_weights=True,
                               average_attn_weights=self.average)


def lengths_to_mask(kp, length):
    if kp is None or kp.dtype != I64:
        return kp
    return torch.arange(length)[None, :] >= kp[:, None]


class TransformerEncoderLayer(nn.TransformerEncoderLayer):
    def forward(self, src, kp=None):
        dim = 1 if self.self_attn.batch_first else 0
        return super().forward(src, src_key_padding_mask=lengths_to_mask(kp, src.shape[dim]))


class TransformerEncoder(nn.TransformerEncoder):
    def forward(self, src, kp=None):
        dim = 1 if self.layers[0].self_attn.batch_first else 0
        return super().forward(src, src_key_padding_mask=lengths_to_mask(kp, src.shape[dim]))


class SinusoidalPositionalEncoding(nn.Module):
    """PyTorch's tutorial PositionalEncoding, batch first, the table computed in float64."""

    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        position = torch.arange(max_len, dtype=F64).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2, dtype=F64) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model, dtype=F64)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term[: d_model // 2])
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, x):
        return self.dropout(x + self.pe[: x.size(1)])


class LearnedPositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=512):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.pos_embedding = nn.Embedding(max_len, d_model)

    def forward(self, x):
        positions = torch.arange(x.size(1))
        return self.dropout(x + self.pos_embedding(positions))


class SequenceLast(nn.Module):
    def forward(self, x, lengths=None):
        if lengths is None:
            return x[:, -1]
        return x[torch.arange(x.size(0)), lengths - 1]


class SequenceMeanPool(nn.Module):
    def forward(self, x, lengths=None):
        if lengths is None:
            return x.mean(1)
        valid = (torch.arange(x.size(1))[None, :] < lengths[:, None]).to(x.dtype)
        valid = valid.reshape(list(valid.shape) + [1] * (x.dim() - 2))
        return (x * valid).sum(1) / lengths.to(x.dtype).reshape([-1] + [1] * (x.dim() - 2))


# ----------------------------------------------------------------------------------------------
# Inputs
def perturb(module):
    """Moves every parameter away from its initial value (biases start at 0, norms at 1, cloned
    encoder layers start equal), so a layer that ignores or mixes up a parameter fails."""
    G.randomize_state(module)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(U(p.shape, -0.2, 0.2).to(p.dtype))
    return module


def padding_mask(batch, length, valid):
    """bool [batch, length], True at steps >= valid[b] (every row keeps at least one key)."""
    return torch.arange(length)[None, :] >= torch.tensor(valid)[:, None]


def shifted_causal(length, source):
    """float [length, source]: 0 where j <= i + (source - length), -inf above."""
    i = torch.arange(length)[:, None]
    j = torch.arange(source)[None, :]
    return torch.zeros(length, source, dtype=F64).masked_fill(j > i + (source - length),
                                                              float("-inf"))


def case(base, kind, opts, mode, make, inputs):
    G.emit_case(base, kind, opts, mode, lambda: perturb(make()), inputs)


# ----------------------------------------------------------------------------------------------
# Cases
def mha_cases():
    E, H = 8, 2
    case("mha_self_key_padding_batch_first", "MultiheadAttention",
         {"embed_dim": E, "num_heads": H, "batch_first": True}, "both",
         lambda: MultiheadAttention(E, H, batch_first=True),
         lambda: [(U([3, 5, E]), 1), (padding_mask(3, 5, [5, 3, 1]), 0)])
    case("mha_self_lengths_batch_first", "MultiheadAttention",
         {"embed_dim": E, "num_heads": 4, "batch_first": True}, "both",
         lambda: MultiheadAttention(E, 4, batch_first=True),
         lambda: [(U([3, 4, E]), 1), (torch.tensor([2, 4, 1], dtype=I64), 0)])
    case("mha_self_unbatched", "MultiheadAttention", {"embed_dim": E, "num_heads": H}, "both",
         lambda: MultiheadAttention(E, H), lambda: [(U([5, E]), 1)])
    # Separate query, key and value (different source length) and a causal float mask.
    case("mha_qkv_causal_float_mask", "MultiheadAttentionCall",
         {"call": "qkv_attn", "embed_dim": E, "num_heads": H}, "both",
         lambda: MultiheadAttentionCall("qkv_attn", E, H),
         lambda: [(U([4, 2, E]), 1), (U([6, 2, E]), 1), (U([6, 2, E]), 1),
                  (shifted_causal(4, 6), 0)])
    # All five inputs: three separate tensors, bool key padding and a bool [L, S] mask.
    case("mha_five_inputs_bool_masks", "MultiheadAttention", {"embed_dim": E, "num_heads": H},
         "both", lambda: MultiheadAttention(E, H),
         lambda: [(U([5, 2, E]), 1), (U([5, 2, E]), 1), (U([5, 2, E]), 1),
                  (padding_mask(2, 5, [4, 5]), 0), (shifted_causal(5, 5) != 0, 0)])
    case("mha_q_kv_nobias", "MultiheadAttentionCall",
         {"call": "q_kv", "embed_dim": E, "num_heads": H, "bias": False, "batch_first": True},
         "both", lambda: MultiheadAttentionCall("q_kv", E, H, bias=False, batch_first=True),
         lambda: [(U([2, 3, E]), 1), (U([2, 5, E]), 1)])
    for call in ("weights_avg", "weights_heads"):
        case("mha_" + call, "MultiheadAttentionCall",
             {"call": call, "embed_dim": E, "num_heads": H, "batch_first": True}, "both",
             lambda call=call: MultiheadAttentionCall(call, E, H, batch_first=True),
             lambda: [(U([2, 4, E]), 1), (padding_mask(2, 4, [3, 4]), 0)])
    case("mha_dropout_eval", "MultiheadAttention",
         {"embed_dim": E, "num_heads": H, "dropout": 0.3}, "eval",
         lambda: MultiheadAttention(E, H, dropout=0.3), lambda: [(U([4, 2, E]), 1)])


def node_case(base, opts, make_inputs):
    """A MultiheadAttentionNode case: both outputs compared, backward through both (one random
    upstream gradient per output), in train and eval mode (dropout 0: the same numbers)."""
    for dt in (F32, F64):
        name = "%s_%s" % (base, G.TAG[dt])
        assert name not in G.NAMES, "duplicate case " + name
        G.NAMES.add(name)
        G.seed_for(base)
        module = perturb(SelfAttentionNode(opts["embed_dim"], opts["num_heads"],
                                           opts.get("causal", False),
                                           opts.get("average_attn_weights", True))).to(dt)
        raw = [(x.to(dt) if x.is_floating_point() else x, rg) for x, rg in make_inputs()]
        state = [(k, v.detach().clone()) for k, v in module.state_dict().items()]
        results = []
        for mode in ("train", "eval"):
            module.load_state_dict(dict(state))
            module.zero_grad(set_to_none=True)
            module.train(mode == "train")
            xs = [x.clone().requires_grad_(True) if rg else x for x, rg in raw]
            outs = list(module(*xs))
            gouts = [torch.randn(o.shape, dtype=F64, generator=torch.Generator().manual_seed(
                zlib.crc32(base.encode()) + 1 + k)).to(dt) for k, o in enumerate(outs)]
            torch.autograd.backward(outs, gouts)
            results.append(([o.detach().clone() for o in outs], gouts,
                             [x.grad for x, (_, rg) in zip(xs, raw) if rg],
                             [(k, p.grad) for k, p in module.named_parameters()]))
        for oa, ob in zip(results[0][0], results[1][0]):
            assert torch.equal(oa, ob), name + ": train/eval outputs differ in PyTorch"
        outs, gouts, in_grads, p_grads = results[0]
        fx = G.FX[dt]
        fx.count += 1
        lines = fx.lines
        lines += ["case " + name, "layer MultiheadAttentionNode"]
        lines += ["opt %s %s" % (k, G.fmt_opt(v)) for k, v in opts.items()]
        lines.append("mode both")
        lines += ["state %s %s" % (k, G.fmt_tensor(v)) for k, v in state]
        lines += ["in %d %s" % (int(rg), G.fmt_tensor(x)) for x, rg in raw]
        lines += ["out %d %s" % (k, G.fmt_tensor(o)) for k, o in enumerate(outs)]
        lines += ["gout %d %s" % (k, G.fmt_tensor(g)) for k, g in enumerate(gouts)]
        lines += ["grad %d %s" % (k, G.fmt_tensor(g)) for k, g in enumerate(in_grads)]
        for k, g in p_grads:
            assert g is not None, name + ": no grad for " + k
            lines.append("pgrad %s %s" % (k, G.fmt_tensor(g)))
        lines.append("end")


def node_cases():
    E = 8
    node_case("mha_node_weights_avg_lengths_causal",
              {"embed_dim": E, "num_heads": 2, "causal": True, "average_attn_weights": True},
              lambda: [(U([3, 5, E]), 1), (torch.tensor([5, 2, 4], dtype=I64), 0)])
    node_case("mha_node_weights_per_head_lengths",
              {"embed_dim": E, "num_heads": 4, "causal": False, "average_attn_weights": False},
              lambda: [(U([2, 4, E]), 1), (torch.tensor([3, 4], dtype=I64), 0)])
    node_case("mha_node_weights_avg_causal_no_lengths",
              {"embed_dim": E, "num_heads": 2, "causal": True, "average_attn_weights": True},
              lambda: [(U([2, 6, E]), 1)])


def encoder_cases():
    d, h, ff = 8, 2, 16
    case("encoder_layer_relu_post_norm", "TransformerEncoderLayer",
         {"d_model": d, "nhead": h, "dim_feedforward": ff}, "eval",
         lambda: TransformerEncoderLayer(d, h, ff), lambda: [(U([5, 3, d]), 1)])
    opts = {"d_model": d, "nhead": h, "dim_feedforward": ff, "dropout": 0.0,
            "activation": "gelu", "batch_first": True, "norm_first": True}
    case("encoder_layer_gelu_norm_first", "TransformerEncoderLayer", opts, "both",
         lambda: TransformerEncoderLayer(d, h, ff, 0.0, "gelu", batch_first=True,
                                         norm_first=True),
         lambda: [(U([3, 5, d]), 1), (padding_mask(3, 5, [5, 2, 4]), 0)])
    opts = {"d_model": d, "nhead": h, "dim_feedforward": ff, "dropout": 0.0,
            "layer_norm_eps": 1e-3, "batch_first": True}
    case("encoder_layer_eps_lengths", "TransformerEncoderLayer", opts, "both",
         lambda: TransformerEncoderLayer(d, h, ff, 0.0, layer_norm_eps=1e-3, batch_first=True),
         lambda: [(U([2, 4, d]), 1), (torch.tensor([3, 4], dtype=I64), 0)])

    def encoder(norm, batch_first=True, activation="relu"):
        def make():
            layer = nn.TransformerEncoderLayer(d, h, ff, 0.0, activation, batch_first=batch_first)
            return TransformerEncoder(layer, 2, nn.LayerNorm(d) if norm else None)
        return make

    opts = {"d_model": d, "nhead": h, "dim_feedforward": ff, "dropout": 0.0,
            "batch_first": True, "num_layers": 2, "norm": True}
    case("encoder_2_layers_norm_key_padding", "TransformerEncoder", opts, "both", encoder(True),
         lambda: [(U([3, 5, d]), 1), (padding_mask(3, 5, [5, 4, 2]), 0)])
    opts = {"d_model": d, "nhead": h, "dim_feedforward": ff, "dropout": 0.0,
            "activation": "gelu", "num_layers": 2, "norm": False}
    case("encoder_2_layers_lengths_seq_first", "TransformerEncoder", opts, "both",
         encoder(False, False, "gelu"),
         lambda: [(U([4, 2, d]), 1), (torch.tensor([4, 2], dtype=I64), 0)])

    # state_dict layout of a 2-layer encoder with a final norm (PyTorch's defaults otherwise).
    name = "state_dict_layout_transformer_encoder"
    G.NAMES.add(name)
    fx = G.FX[F32]
    fx.count += 1
    model = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32), 2, nn.LayerNorm(16))
    fx.lines += ["case " + name, "layer TransformerEncoder", "opt d_model 16", "opt nhead 4",
                 "opt dim_feedforward 32", "opt num_layers 2", "opt norm 1", "mode both"]
    for k, v in model.state_dict().items():
        fx.lines.append("key %s %s %s" % (k, G.TAG[v.dtype], G.fmt_shape(v.shape)))
    fx.lines.append("end")


def positional_cases():
    for d in (6, 7):
        case("sinusoidal_d%d" % d, "SinusoidalPositionalEncoding",
             {"d_model": d, "dropout": 0.0, "max_len": 10}, "both",
             lambda d=d: SinusoidalPositionalEncoding(d, 0.0, 10), lambda d=d: [(U([2, 5, d]), 1)])
    case("sinusoidal_default_max_len_eval", "SinusoidalPositionalEncoding", {"d_model": 4},
         "eval", lambda: SinusoidalPositionalEncoding(4), lambda: [(U([2, 3, 4]), 1)])
    case("learned_positional", "LearnedPositionalEncoding",
         {"d_model": 4, "dropout": 0.0, "max_len": 6}, "both",
         lambda: LearnedPositionalEncoding(4, 0.0, 6), lambda: [(U([2, 5, 4]), 1)])


def sequence_cases():
    for kind, cls in (("SequenceLast", SequenceLast), ("SequenceMeanPool", SequenceMeanPool)):
        low = "sequence_last" if kind == "SequenceLast" else "sequence_mean_pool"
        case(low + "_lengths", kind, {}, "both", cls,
             lambda: [(U([3, 5, 4]), 1), (torch.tensor([5, 1, 3], dtype=I64), 0)])
        case(low + "_4d_lengths", kind, {}, "both", cls,
             lambda: [(U([2, 3, 2, 2]), 1), (torch.tensor([2, 3], dtype=I64), 0)])
        case(low + "_no_lengths", kind, {}, "both", cls, lambda: [(U([2, 4, 3]), 1)])


def main():
    torch.set_num_threads(1)
    mha_cases()
    node_cases()
    encoder_cases()
    positional_cases()
    sequence_cases()
    total = 0
    for fx in G.FX.values():
        fx.write()
        with open(fx.path) as f:
            text = f.read()
        with open(fx.path, "w") as f:
            f.write(text.replace("gen_golden_nn.py (do not edit)",
                                 "gen_golden_attention.py (do not edit)", 1))
        size = os.path.getsize(fx.path)
        total += size
        print("%s: %d cases, %d bytes" % (os.path.basename(fx.path), fx.count, size))
    print("total %d bytes" % total)


if __name__ == "__main__":
    main()
