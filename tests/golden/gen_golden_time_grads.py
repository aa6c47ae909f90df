#!/usr/bin/python3
"""Golden per-time-step gradient norms of recurrent layers (the "gradient through time" sink).

Run by hand with Debian's torch (1.13):

    /usr/bin/python3 tests/golden/gen_golden_time_grads.py

It rewrites tests/golden/time_grads_f32.txt and time_grads_f64.txt, which
tests/core/test_time_gradients.cpp reads. For each case, an nn.LSTM / nn.GRU / nn.RNN runs over a
padded batch with lengths; the loss is sum(out * gout0) + sum(h_n * gout1) [+ sum(c_n * gout2)].
The expected norms come from an unfused per-step loop over the module's own weights, written
here: every step's hidden state h_t (per layer of the stack, per direction) is a tensor whose
.grad is kept (retain_grad), so its gradient is the whole dL/dh_t — from the output at t and from
the next step (for the last valid step: from h_n). The norm at t is the L2 norm over the batch of
that gradient, counting only the sequences with t < length (a padded step has no gradient of its
own; a step padded in every sequence reads 0). The loop's outputs are checked against the module
run through pack_padded_sequence, so the loop is the module.

Format, one item per line:

    case <name>
    kind LSTM|GRU|RNN_TANH
    opt <input_size> <hidden_size> <num_layers> <bidirectional 0|1>
    state <key> <shape> <values>     the module's state_dict, in order
    x <shape> <values>               the input [T, B, I] (time-major)
    lengths <shape> <values>         int64 [B]
    gout <k> <shape> <values>        the loss's weight on output k
    norms <layer> <direction> <shape> <values>   [T]
    end
"""

import os
import zlib

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

HERE = os.path.dirname(os.path.abspath(__file__))
F32, F64 = torch.float32, torch.float64


def fmt_shape(shape):
    return "[" + ",".join(str(int(s)) for s in shape) + "]"


def fmt(t):
    flat = t.detach().reshape(-1).tolist()
    if t.dtype == F32:
        vals = ["%.9g" % v for v in flat]
    elif t.dtype == F64:
        vals = ["%.17g" % v for v in flat]
    else:
        vals = ["%d" % v for v in flat]
    return " ".join([fmt_shape(t.shape)] + vals)


def cell(kind, x, h, c, w_ih, w_hh, b_ih, b_hh):
    gi = x @ w_ih.t() + b_ih
    gh = h @ w_hh.t() + b_hh
    if kind == "LSTM":
        i, f, g, o = (gi + gh).chunk(4, 1)
        i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
        c2 = f * c + i * g
        return o * c2.tanh(), c2
    if kind == "GRU":
        ir, iz, in_ = gi.chunk(3, 1)
        hr, hz, hn = gh.chunk(3, 1)
        r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
        n = (in_ + r * hn).tanh()
        return (1 - z) * n + z * h, None
    return (gi + gh).tanh(), None


def unrolled(kind, module, x, lengths):
    """The module over x [T, B, I] with lengths, one step at a time: (out, h_n, c_n, states)
    where states[(layer, direction)][t] is h_t of that layer and direction (grads retained)."""
    T, B, _ = x.shape
    H, L = module.hidden_size, module.num_layers
    D = 2 if module.bidirectional else 1
    valid = [(torch.tensor(lengths) > t).unsqueeze(1) for t in range(T)]  # [B, 1] per step
    states, hns, cns = {}, [], []
    layer_in = x
    for l in range(L):
        outs = []
        for d in range(D):
            sfx = "_l%d%s" % (l, "_reverse" if d else "")
            w = [getattr(module, n + sfx) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
            h = torch.zeros(B, H, dtype=x.dtype)
            c = torch.zeros(B, H, dtype=x.dtype)
            ys = [None] * T
            hs = [None] * T
            for t in (range(T) if d == 0 else range(T - 1, -1, -1)):
                h2, c2 = cell(kind, layer_in[t], h, c, *w)
                h = torch.where(valid[t], h2, h)
                if c2 is not None:
                    c = torch.where(valid[t], c2, c)
                h.retain_grad()
                hs[t] = h
                ys[t] = torch.where(valid[t], h, torch.zeros_like(h))
            states[(l, d)] = hs
            outs.append(torch.stack(ys))
            hns.append(h)
            cns.append(c)
        layer_in = torch.cat(outs, 2)
    return layer_in, torch.stack(hns), torch.stack(cns), states


def emit(lines, name, kind, I, H, L, bidir, T, lengths, dt):
    torch.manual_seed(zlib.crc32(name.encode()))
    cls = {"LSTM": nn.LSTM, "GRU": nn.GRU, "RNN_TANH": nn.RNN}[kind]
    module = cls(I, H, num_layers=L, bidirectional=bidir).to(F64)
    B = len(lengths)
    x = (torch.rand(T, B, I, dtype=F64) * 4 - 2).to(dt)
    module = module.to(dt)
    lens = torch.tensor(lengths, dtype=torch.int64)
    lstm = kind == "LSTM"

    packed = pack_padded_sequence(x, lens, enforce_sorted=False)
    out_p, hid = module(packed)
    ref_out, _ = pad_packed_sequence(out_p, total_length=T)
    ref = [ref_out] + (list(hid) if lstm else [hid])

    cell_kind = "RNN" if kind == "RNN_TANH" else kind
    out, hn, cn, states = unrolled(cell_kind, module, x, lengths)
    mine = [out, hn] + ([cn] if lstm else [])
    tol = 1e-5 if dt == F32 else 1e-12
    for a, b in zip(mine, ref):
        assert torch.allclose(a, b, rtol=tol, atol=tol), name + ": the loop is not the module"

    gen = torch.Generator().manual_seed(zlib.crc32(name.encode()) + 1)
    gouts = [torch.randn(o.shape, dtype=F64, generator=gen).to(dt) for o in mine]
    loss = sum((o * g).sum() for o, g in zip(mine, gouts))
    loss.backward()

    lines.append("case " + name)
    lines.append("kind " + kind)
    lines.append("opt %d %d %d %d" % (I, H, L, 1 if bidir else 0))
    for k, v in module.state_dict().items():
        lines.append("state %s %s" % (k, fmt(v)))
    lines.append("x " + fmt(x))
    lines.append("lengths " + fmt(lens))
    for k, g in enumerate(gouts):
        lines.append("gout %d %s" % (k, fmt(g)))
    D = 2 if bidir else 1
    for l in range(L):
        for d in range(D):
            norms = []
            for t in range(T):
                g = states[(l, d)][t].grad.to(F64)
                mask = (lens > t).to(F64).unsqueeze(1)
                norms.append(float(((g * mask) ** 2).sum().sqrt()))
            lines.append("norms %d %d %s" % (l, d, fmt(torch.tensor(norms, dtype=F64))))
    lines.append("end")


def main():
    for dt, tag in ((F32, "f32"), (F64, "f64")):
        lines = []
        cases = [
            ("lstm_bidir_2layers_lengths", "LSTM", 3, 4, 2, True, 6, [6, 3, 5]),
            ("gru_bidir_2layers_lengths", "GRU", 3, 4, 2, True, 6, [4, 6, 1]),
            ("lstm_1layer_full", "LSTM", 2, 3, 1, False, 5, [5, 5]),
            ("rnn_tanh_bidir_lengths", "RNN_TANH", 3, 3, 1, True, 5, [2, 5, 3]),
        ]
        for name, kind, I, H, L, bidir, T, lengths in cases:
            emit(lines, name + "_" + tag, kind, I, H, L, bidir, T, lengths, dt)
        header = [
            "# Myelin per-time-step gradient norms, generated by "
            "tests/golden/gen_golden_time_grads.py (do not edit).",
            "# torch %s; format: see that script's docstring" % torch.__version__,
            "# cases %d" % len(cases),
        ]
        with open(os.path.join(HERE, "time_grads_%s.txt" % tag), "w") as f:
            f.write("\n".join(header + lines) + "\n")


if __name__ == "__main__":
    main()
