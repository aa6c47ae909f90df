#!/usr/bin/python3
"""Generate Myelin's golden fixture for int8 quantization (issue 38).

Run by hand with Debian's torch (1.13):

    /usr/bin/python3 tests/golden/gen_golden_quant.py

It rewrites tests/golden/quant.txt, which tests/core/test_quant_golden.cpp reads. The quantized
kernels run on PyTorch's 'onednn' engine (torch.backends.quantized.engine; the script refuses to
run on another). Cases:

    case <name>
    kind <observers|weight|quantize|linear|conv|pool|dynamic|fake_tensor|fake_channel>
    opt <key> <value>            ints, %.9g floats, or words
    t <name> <tensor>            a tensor; `in` may repeat (observer batches, in order)
    qp <name> <scale> <zp>       quantization parameters (scale %.9g as float32)
    end

A <tensor> is `<dtype> <shape> <values...>` with dtype f32 (%.9g), i64, u8 or i8 (integers).

observers:    t in (each batch, in order); for each observer kind K (minmax, moving-average,
              histogram, PyTorch's defaults): qp K (calculate_qparams after all batches) and
              t range_K f32 [2] (the observer's min_val, max_val)
weight:       opt scheme per_channel|per_tensor; t w (float); t values i8; t scales f32
quantize:     t x; qp q; t q u8 (torch.quantize_per_tensor); t dq f32 (dequantize)
linear/conv:  t x u8 + qp x; t w i8 + t scales f32 (per output channel); t bias f32; opt relu;
              conv: opt stride/padding/dilation (h w pairs as [a,b]) and groups; qp out;
              t out u8 (torch.ao.nn.quantized.Linear / LinearReLU / Conv2d / ConvReLU2d)
pool:         t x u8 + qp x; opt kernel/stride/padding [a,b]; t out u8 (F.max_pool2d)
dynamic:      t x f32; t w i8 + t scales f32 [1] (per tensor); t bias; t out f32
              (torch.ao.nn.quantized.dynamic.Linear: reduce_range activations, 'onednn')
fake_tensor:  t x; opt scale/zero_point/qmin/qmax; t out; t gout; t grad
fake_channel: t x; opt axis/qmin/qmax; t scales f32; t zero_points i64; t out; t gout; t grad
"""

import os
import zlib

import torch
import torch.nn.intrinsic.quantized as nniq
import torch.ao.nn.quantized as nnq
import torch.ao.nn.quantized.dynamic as nnqd
from torch.ao.quantization import (HistogramObserver, MinMaxObserver,
                                   MovingAverageMinMaxObserver, default_dynamic_qconfig,
                                   default_per_channel_weight_observer)

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINE = "onednn"

lines = []


def seed(name):
    torch.manual_seed(zlib.crc32(name.encode()))


def tensor(name, t, tag):
    t = t.detach().contiguous()
    shape = "[" + ",".join(str(s) for s in t.shape) + "]"
    flat = t.reshape(-1)
    if tag == "f32":
        vals = " ".join("%.9g" % v for v in flat.to(torch.float32).tolist())
    else:
        vals = " ".join(str(int(v)) for v in flat.to(torch.int64).tolist())
    lines.append("t %s %s %s %s" % (name, tag, shape, vals))


def qp(name, scale, zp):
    lines.append("qp %s %.9g %d" % (name, float(torch.tensor(float(scale), dtype=torch.float32)),
                                     int(zp)))


def opt(key, value):
    if isinstance(value, (list, tuple)):
        value = "[" + ",".join(str(v) for v in value) + "]"
    elif isinstance(value, float):
        value = "%.9g" % value
    lines.append("opt %s %s" % (key, value))


def begin(name, kind):
    seed(name)
    lines.append("case " + name)
    lines.append("kind " + kind)


def end():
    lines.append("end")


# ----------------------------------------------------------------------------------------------
OBSERVERS = {"minmax": MinMaxObserver, "moving-average": MovingAverageMinMaxObserver,
             "histogram": HistogramObserver}


def batches_for(name):
    seed("batches_" + name)
    if name == "growing":  # wider ranges every batch: histograms are merged
        return [torch.randn(200) * (1.0 + 0.7 * i) + 0.3 for i in range(4)]
    if name == "relu":  # one-sided, as after a ReLU
        return [torch.relu(torch.randn(256)) * (2.5 + i) for i in range(3)]
    if name == "small":  # inside (-1, 1): PyTorch's histc sees int() bounds 0, 0
        return [torch.rand(200) * 0.9 - 0.4 for _ in range(3)]
    if name == "shrinking":  # later batches inside the first's range
        return [torch.randn(200) * 4.0] + [torch.randn(200) * 0.5 for _ in range(3)]
    if name == "outliers":  # a few large values that the histogram search clips
        xs = []
        for i in range(3):
            x = torch.randn(250)
            x[i * 7] = 25.0 + i
            xs.append(x)
        return xs
    raise ValueError(name)


def observer_cases():
    for data in ("growing", "relu", "small", "shrinking", "outliers"):
        xs = batches_for(data)
        begin("observers_" + data, "observers")
        for x in xs:
            tensor("in", x, "f32")
        for kind, cls in OBSERVERS.items():
            obs = cls()
            for x in xs:
                obs(x)
            scale, zp = obs.calculate_qparams()
            qp(kind, scale.item(), zp.item())
            tensor("range_" + kind,
                   torch.stack([obs.min_val.reshape(()), obs.max_val.reshape(())]), "f32")
        end()


def per_channel_weight(w):
    obs = default_per_channel_weight_observer()
    obs(w)
    scales, zps = obs.calculate_qparams()
    assert int(zps.abs().max()) == 0
    q = torch.quantize_per_channel(w, scales.to(torch.double), zps.to(torch.int64), 0, torch.qint8)
    return q, scales.to(torch.float32)


def per_tensor_weight(w):
    obs = default_dynamic_qconfig.weight()
    obs(w)
    scale, zp = obs.calculate_qparams()
    q = torch.quantize_per_tensor(w, float(scale), int(zp), torch.qint8)
    return q, scale.to(torch.float32).reshape(1)


def weight_cases():
    for name, shape in (("linear", (7, 19)), ("conv", (6, 3, 3, 3)), ("wide", (3, 200))):
        for scheme in ("per_channel", "per_tensor"):
            begin("weight_%s_%s" % (name, scheme), "weight")
            w = torch.randn(*shape) * 0.2
            w[0].mul_(3.0)  # channels of different ranges
            if name == "conv":
                w[1].zero_()  # an all-zero channel: scale is eps
            opt("scheme", scheme)
            q, scales = per_channel_weight(w) if scheme == "per_channel" else per_tensor_weight(w)
            tensor("w", w, "f32")
            tensor("values", q.int_repr(), "i8")
            tensor("scales", scales, "f32")
            end()


def quantize_cases():
    begin("quantize_per_tensor", "quantize")
    x = torch.randn(257) * 3
    x[:16] = torch.arange(16, dtype=torch.float32) * 0.125 - 1.0  # ties at scale 0.25
    x[16] = 1e6
    x[17] = -1e6
    s, z = 0.25, 117
    tensor("x", x, "f32")
    qp("q", s, z)
    q = torch.quantize_per_tensor(x, s, z, torch.quint8)
    tensor("q", q.int_repr(), "u8")
    tensor("dq", q.dequantize(), "f32")
    end()


def minmax_qparams(x):
    obs = MinMaxObserver()
    obs(x)
    s, z = obs.calculate_qparams()
    return float(s), int(z)


def qinput(x):
    s, z = minmax_qparams(x)
    return torch.quantize_per_tensor(x, s, z, torch.quint8), s, z


def kernel_io(qx, q, scales, bias):
    tensor("x", qx.int_repr(), "u8")
    qp("x", qx.q_scale(), qx.q_zero_point())
    tensor("w", q.int_repr(), "i8")
    tensor("scales", scales, "f32")
    tensor("bias", bias, "f32")


def linear_cases():
    for name, (m, k, n) in (("small", (6, 19, 7)), ("large", (32, 200, 40))):
        for relu in (False, True):
            begin("linear_%s%s" % (name, "_relu" if relu else ""), "linear")
            x = torch.randn(m, k) * 1.5 + 0.2
            w = torch.randn(n, k) / k ** 0.5
            bias = torch.randn(n) * 0.3
            qx, _, _ = qinput(x)
            q, scales = per_channel_weight(w)
            y = torch.nn.functional.linear(qx.dequantize(), q.dequantize(), bias)
            if relu:
                y = torch.relu(y)
            so, zo = minmax_qparams(y)
            mod = nniq.LinearReLU(k, n) if relu else nnq.Linear(k, n)
            mod.set_weight_bias(q, bias)
            mod.scale, mod.zero_point = so, zo
            out = mod(qx)
            opt("relu", int(relu))
            kernel_io(qx, q, scales, bias)
            qp("out", so, zo)
            tensor("out", out.int_repr(), "u8")
            end()


def conv_cases():
    configs = [
        # name, N, C, H, W, O, k, stride, padding, dilation, groups, relu
        ("fashion1", 2, 1, 12, 12, 8, 3, 1, 1, 1, 1, True),
        ("fashion2", 2, 8, 6, 6, 16, 3, 1, 1, 1, 1, True),
        ("strided", 2, 3, 9, 9, 5, 3, 2, 0, 1, 1, False),
        ("dilated", 1, 4, 10, 8, 6, 3, 1, 2, 2, 1, False),
        ("grouped", 2, 4, 7, 7, 6, 3, 1, 1, 1, 2, True),
        ("rect", 1, 3, 8, 11, 4, (3, 1), (1, 2), (1, 0), 1, 1, False),
    ]
    for name, N, C, H, W, O, k, s, p, d, g, relu in configs:
        begin("conv_" + name, "conv")
        ks = k if isinstance(k, tuple) else (k, k)
        x = torch.randn(N, C, H, W) + 0.5
        w = torch.randn(O, C // g, *ks) / (C // g * ks[0] * ks[1]) ** 0.5
        bias = torch.randn(O) * 0.2
        qx, _, _ = qinput(x)
        q, scales = per_channel_weight(w)
        y = torch.nn.functional.conv2d(qx.dequantize(), q.dequantize(), bias, s, p, d, g)
        if relu:
            y = torch.relu(y)
        so, zo = minmax_qparams(y)
        cls = nniq.ConvReLU2d if relu else nnq.Conv2d
        mod = cls(C, O, ks, stride=s, padding=p, dilation=d, groups=g)
        mod.set_weight_bias(q, bias)
        mod.scale, mod.zero_point = so, zo
        out = mod(qx)
        pair = lambda v: list(v) if isinstance(v, tuple) else [v, v]  # noqa: E731
        opt("relu", int(relu))
        opt("stride", pair(s))
        opt("padding", pair(p))
        opt("dilation", pair(d))
        opt("groups", g)
        kernel_io(qx, q, scales, bias)
        qp("out", so, zo)
        tensor("out", out.int_repr(), "u8")
        end()


def pool_cases():
    for name, shape, k, s, p in (("k2s2", (2, 3, 8, 8), 2, 2, 0), ("k3s2p1", (2, 3, 7, 7), 3, 2, 1),
                                 ("odd", (1, 2, 7, 9), 2, 2, 0)):
        begin("pool_" + name, "pool")
        qx, _, _ = qinput(torch.randn(*shape))
        out = torch.nn.functional.max_pool2d(qx, k, s, p)
        tensor("x", qx.int_repr(), "u8")
        qp("x", qx.q_scale(), qx.q_zero_point())
        opt("kernel", [k, k])
        opt("stride", [s, s])
        opt("padding", [p, p])
        assert out.q_scale() == qx.q_scale() and out.q_zero_point() == qx.q_zero_point()
        tensor("out", out.int_repr(), "u8")
        end()


def dynamic_cases():
    for name, (m, k, n) in (("small", (5, 40, 7)), ("large", (16, 128, 32))):
        begin("dynamic_" + name, "dynamic")
        x = torch.randn(m, k) * 2 + 0.5
        w = torch.randn(n, k) / k ** 0.5
        bias = torch.randn(n) * 0.3
        q, scale = per_tensor_weight(w)
        mod = nnqd.Linear(k, n)
        mod.set_weight_bias(q, bias)
        out = mod(x)
        tensor("x", x, "f32")
        tensor("w", q.int_repr(), "i8")
        tensor("scales", scale, "f32")
        tensor("bias", bias, "f32")
        tensor("out", out, "f32")
        end()


def fake_cases():
    begin("fake_tensor_uint8", "fake_tensor")
    x = torch.randn(200) * 2
    x[:40] = torch.arange(40, dtype=torch.float32) * 0.125 - 2.5  # exact ties (scale 0.25)
    x[40], x[41] = 100.0, -100.0  # clamped: zero gradient
    x.requires_grad_(True)
    scale, zp, qmin, qmax = 0.25, 10, 0, 255
    y = torch.fake_quantize_per_tensor_affine(x, scale, zp, qmin, qmax)
    gout = torch.randn(200)
    (grad,) = torch.autograd.grad(y, x, gout)
    tensor("x", x, "f32")
    opt("scale", scale)
    opt("zero_point", zp)
    opt("qmin", qmin)
    opt("qmax", qmax)
    tensor("out", y, "f32")
    tensor("gout", gout, "f32")
    tensor("grad", grad, "f32")
    end()

    begin("fake_tensor_int8", "fake_tensor")
    x = (torch.randn(150) * 0.7).requires_grad_(True)
    scale, zp, qmin, qmax = 0.0123, 0, -128, 127
    y = torch.fake_quantize_per_tensor_affine(x, scale, zp, qmin, qmax)
    gout = torch.randn(150)
    (grad,) = torch.autograd.grad(y, x, gout)
    tensor("x", x, "f32")
    opt("scale", scale)
    opt("zero_point", zp)
    opt("qmin", qmin)
    opt("qmax", qmax)
    tensor("out", y, "f32")
    tensor("gout", gout, "f32")
    tensor("grad", grad, "f32")
    end()

    for name, shape, axis in (("axis0", (5, 30), 0), ("axis1", (3, 4, 10), 1)):
        begin("fake_channel_" + name, "fake_channel")
        x = torch.randn(*shape) * 0.5
        x.view(-1)[:8] = torch.tensor([0.5, 1.5, -0.5, 2.5, 7.0, -7.0, 0.25, 0.75])
        x.requires_grad_(True)
        n = shape[axis]
        scales = torch.rand(n) * 0.02 + 0.005
        scales[0] = 0.5  # exact ties for the first values
        zps = torch.zeros(n, dtype=torch.int32)
        qmin, qmax = -128, 127
        y = torch.fake_quantize_per_channel_affine(x, scales, zps, axis, qmin, qmax)
        gout = torch.randn(*shape)
        (grad,) = torch.autograd.grad(y, x, gout)
        tensor("x", x, "f32")
        opt("axis", axis)
        opt("qmin", qmin)
        opt("qmax", qmax)
        tensor("scales", scales, "f32")
        tensor("zero_points", zps, "i64")
        tensor("out", y, "f32")
        tensor("gout", gout, "f32")
        tensor("grad", grad, "f32")
        end()


def main():
    assert ENGINE in torch.backends.quantized.supported_engines, \
        torch.backends.quantized.supported_engines
    torch.backends.quantized.engine = ENGINE
    torch.set_num_threads(1)
    observer_cases()
    weight_cases()
    quantize_cases()
    linear_cases()
    conv_cases()
    pool_cases()
    dynamic_cases()
    fake_cases()
    cases = sum(1 for line in lines if line.startswith("case "))
    header = [
        "# Myelin quantization golden fixture, generated by tests/golden/gen_golden_quant.py "
        "(do not edit).",
        "# torch %s, quantized engine %s; format: see the docstring of "
        "tests/golden/gen_golden_quant.py" % (torch.__version__, ENGINE),
        "# cases %d" % cases,
    ]
    with open(os.path.join(HERE, "quant.txt"), "w") as f:
        f.write("\n".join(header + lines) + "\n")
    print("wrote %d cases to tests/golden/quant.txt" % cases)


if __name__ == "__main__":
    main()
