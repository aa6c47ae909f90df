#!/usr/bin/python3
"""Generate Myelin's golden fixtures for the neural-network layers (torch.nn modules).

Run by hand with Debian's torch (1.13):

    /usr/bin/python3 tests/golden/gen_golden_nn.py

It rewrites tests/golden/nn_f32.txt and tests/golden/nn_f64.txt, which
tests/core/test_nn_golden.cpp reads. Every case builds one PyTorch module (or one of three small
models) with deterministic parameters, runs it forward in the given mode and backward with a
random grad_output, and records everything the C++ side needs to rebuild and check it:

    case <name>                          unique across both files; ends in _f32 / _f64
    layer <kind>                         factory key in test_nn_golden.cpp (PyTorch class name,
                                         or MLP / CNN / ResBlock for the whole models)
    opt <key> <value>                    constructor options: ints, %.17g doubles, [a,b] lists,
                                         strings, `none` = nullopt, 0/1 bools
    mode <train|eval|both>               both: the module is mode-independent; the test runs it in
                                         train and in eval mode against the same numbers (the
                                         generator asserts PyTorch agrees in both modes)
    state <key> <tensor>                 every state_dict entry, in PyTorch's order (parameters
                                         and persistent buffers), loaded with strict
                                         load_state_dict
    in <rg> <tensor>                     forward inputs in call order; rg 1 = leaf requiring grad
    view transpose <d0> <d1>             optional, after an `in`: the layer gets that input
                                         transposed (non-contiguous); with rg 1 the transposed
                                         view is the leaf, so its grad has the transposed shape
    out <tensor>                         expected forward output
    gout <tensor>                        grad_output (random normal)
    grad <in#> <tensor>                  expected gradient of input <in#> (each input with rg 1)
    pgrad <key> <tensor>                 expected .grad of each parameter (named_parameters order)
    after <key> <tensor>                 buffers after the forward (BatchNorm in train mode)
    key <key> <dtype> <shape>            state-dict-layout cases only (no in/out): the keys,
                                         dtypes and shapes of the model's state_dict, in order
    end

A <tensor> is `<dtype> <shape>` followed by one of
    <values...>                          all values, row-major (%.9g for f32, %.17g for f64)
    gen <seed> <scale>                   values computed by a formula both sides evaluate
                                         exactly (integer hash, see gen_values); used for the
                                         large weights and inputs of the whole-model cases
    every <k> <values...>                expected values at flat indices 0, k, 2k, ... only (the
                                         gradients of large weights: k is a prime so the samples
                                         sweep rows and columns)

Every case reseeds torch's generator from a CRC-32 of its base name (without the dtype suffix):
the output is deterministic, the f32 and f64 variants share the same data (the f32 one rounded),
and adding a case leaves the others unchanged.
"""

import math
import os
import zlib

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
F32, F64, I64 = torch.float32, torch.float64, torch.int64
TAG = {F32: "f32", F64: "f64", I64: "i64", torch.bool: "bool"}
MAX_FULL = 1200  # tensors with more elements are written as `gen` (inputs) or `every` (results)


# ----------------------------------------------------------------------------------------------
# Exact pseudo-random values shared with the C++ side (test_nn_golden.cpp: genValues).
def gen_values(numel, seed, scale, dtype):
    """value[i] = scale * (2 * u - 1), u = h(seed, i) / 2^24 with a 32-bit integer hash.

    All integer steps stay below 2^63; 2u - 1 is exact in double and the multiplication by
    scale rounds once, so C++ computes bit-identical doubles (then rounds to float32 alike)."""
    assert 0 <= seed < 2**20
    i = torch.arange(numel, dtype=I64)
    m32 = 2**32
    x = (i * 0x9E3779B1 + seed * 0x85EBCA77) % m32
    x = x ^ (x >> 16)
    x = (x * 0x045D9F3B) % m32
    x = x ^ (x >> 16)
    u = (x >> 8).to(F64) / float(2**24)
    return ((2.0 * u - 1.0) * scale).to(dtype)


class Gen:
    """A tensor produced by gen_values; written as `gen <seed> <scale>`."""

    def __init__(self, shape, seed, scale):
        self.shape, self.seed, self.scale = list(shape), seed, scale

    def tensor(self, dtype):
        n = 1
        for s in self.shape:
            n *= s
        return gen_values(n, self.seed, self.scale, dtype).reshape(self.shape)


# ----------------------------------------------------------------------------------------------
# Formatting
def fmt_shape(shape):
    return "[" + ",".join(str(int(s)) for s in shape) + "]"


def fmt_values(t):
    flat = t.detach().reshape(-1)
    if t.dtype == F32:
        return ["%.9g" % v for v in flat.tolist()]
    if t.dtype == F64:
        return ["%.17g" % v for v in flat.tolist()]
    return ["%d" % v for v in flat.tolist()]


def sample_step(numel):
    """A prime step giving at most ~MAX_FULL samples."""
    k = max(2, numel // MAX_FULL + 1)
    while any(k % p == 0 for p in range(2, int(math.isqrt(k)) + 1)):
        k += 1
    return k


def fmt_tensor(t, gen=None):
    head = [TAG[t.dtype], fmt_shape(t.shape)]
    if gen is not None:
        return " ".join(head + ["gen", str(gen.seed), "%.17g" % gen.scale])
    if t.numel() > MAX_FULL:
        k = sample_step(t.numel())
        return " ".join(head + ["every", str(k)] + fmt_values(t.reshape(-1)[::k]))
    return " ".join(head + fmt_values(t))


def fmt_opt(v):
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "%.17g" % v
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(str(int(x)) for x in v) + "]"
    assert isinstance(v, str) and " " not in v and v, v
    return v


class Fixture:
    def __init__(self, filename):
        self.path = os.path.join(HERE, filename)
        self.lines = []
        self.count = 0

    def write(self):
        header = [
            "# Myelin nn golden fixtures, generated by tests/golden/gen_golden_nn.py (do not edit).",
            "# torch %s; format: see the docstring of tests/golden/gen_golden_nn.py"
            % torch.__version__,
            "# cases %d" % self.count,
        ]
        with open(self.path, "w") as f:
            f.write("\n".join(header + self.lines) + "\n")


FX = {F32: Fixture("nn_f32.txt"), F64: Fixture("nn_f64.txt")}
NAMES = set()


def seed_for(name):
    torch.manual_seed(zlib.crc32(name.encode()))


# ----------------------------------------------------------------------------------------------
# Merge nodes: PyTorch has no modules for them; these compute the equivalents.
class Add(nn.Module):
    def forward(self, *xs):
        out = xs[0]
        for x in xs[1:]:
            out = out + x
        return out


class Multiply(nn.Module):
    def forward(self, *xs):
        out = xs[0]
        for x in xs[1:]:
            out = out * x
        return out


class Concat(nn.Module):
    def __init__(self, dim=1):
        super().__init__()
        self.dim = dim

    def forward(self, *xs):
        return torch.cat(xs, self.dim)


class ResBlock(nn.Module):
    """conv-bn-relu-conv-bn plus the identity through an Add node, then ReLU (ResNet's basic
    block). test_nn_golden.cpp builds the same children in the same order."""

    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        self.add = Add()
        self.relu2 = nn.ReLU()

    def forward(self, x):
        y = self.bn2(self.conv2(self.relu1(self.bn1(self.conv1(x)))))
        return self.relu2(self.add(x, y))


def make_mlp():
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(784, 256),
        nn.ReLU(),
        nn.Linear(256, 128),
        nn.ReLU(),
        nn.Linear(128, 10),
    )


def make_cnn():
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, 10),
    )


MODELS = {"MLP": make_mlp, "CNN": make_cnn, "ResBlock": lambda: ResBlock(4)}


# ----------------------------------------------------------------------------------------------
# Value generators (float64; cast per dtype)
def U(shape, lo=-2.0, hi=2.0):
    return torch.rand(shape, dtype=F64) * (hi - lo) + lo


def away(shape, points=(0.0,), margin=0.1, lo=-3.0, hi=3.0):
    """U(lo, hi) pushed at least `margin` away from each kink in `points`."""
    t = U(shape, lo, hi)
    for p in points:
        close = (t - p).abs() < margin
        t[close] = p + 2 * margin * torch.where(t[close] >= p, 1.0, -1.0).to(F64)
    return t


def distinct(shape, lo=-2.0, hi=2.0):
    """Pairwise distinct values, gaps >= 0.4 * (hi - lo) / n: no ties for max pooling."""
    n = 1
    for s in shape:
        n *= s
    perm = torch.randperm(n).to(F64)
    v = lo + (perm + 0.2 + 0.6 * torch.rand(n, dtype=F64)) / n * (hi - lo)
    return v.reshape(shape)


def randomize_state(module):
    """Non-trivial values for parameters PyTorch initialises to constants (norm affine, BN
    running stats), so a layer that ignores them fails."""
    with torch.no_grad():
        for name, m in module.named_modules():
            if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.LayerNorm, nn.GroupNorm)):
                if getattr(m, "weight", None) is not None:
                    m.weight.copy_(U(m.weight.shape, 0.5, 1.5))
                    m.bias.copy_(U(m.bias.shape, -0.5, 0.5))
            if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)) and m.track_running_stats:
                m.running_mean.copy_(U(m.running_mean.shape, -0.5, 0.5))
                m.running_var.copy_(U(m.running_var.shape, 0.5, 2.0))
                m.num_batches_tracked.fill_(3)


# ----------------------------------------------------------------------------------------------
# Emitting one case
def emit_case(base, kind, opts, mode, make_module, make_inputs, dtypes=(F32, F64), gens=None):
    """make_module() -> nn.Module (float64, default init under the case's seed);
    make_inputs() -> [(float64 or int64 tensor | Gen, rg)]. gens: {state key: Gen} for
    parameters written as formulas."""
    gens = gens or {}
    for dt in dtypes:
        name = "%s_%s" % (base, TAG[dt])
        assert name not in NAMES, "duplicate case " + name
        NAMES.add(name)
        seed_for(base)
        module = make_module().to(F64)
        with torch.no_grad():
            for key, g in gens.items():
                module.get_parameter(key).copy_(g.tensor(F64))
        raw_inputs = make_inputs()
        # Round everything once to the case dtype (the f64 case sees the same data).
        module = module.to(dt)
        inputs = []  # (base tensor, rg, Gen or None, transpose dims or None)
        for entry in raw_inputs:
            x, rg = entry[0], entry[1]
            tr = entry[2] if len(entry) > 2 else None
            if isinstance(x, Gen):
                inputs.append((x.tensor(dt), rg, x, tr))
            elif x.dtype in (I64, torch.bool):  # indices, lengths and masks keep their dtype
                inputs.append((x, rg, None, tr))
            else:
                inputs.append((x.to(dt), rg, None, tr))
        state = [(k, v.detach().clone()) for k, v in module.state_dict().items()]

        modes = ["train", "eval"] if mode == "both" else [mode]
        results = []
        for m in modes:
            module.load_state_dict(dict(state))
            module.zero_grad(set_to_none=True)
            module.train(m == "train")
            xs = []
            for x, rg, _, tr in inputs:
                x = x.clone()
                if tr is not None:
                    x = x.transpose(*tr)
                    assert not x.is_contiguous(), name
                if rg:
                    x = x.detach().requires_grad_(True)
                xs.append(x)
            out = module(*xs)
            g = torch.randn(out.shape, dtype=F64, generator=torch.Generator().manual_seed(
                zlib.crc32(base.encode()) + 1)).to(dt)
            out.backward(g)
            results.append(
                (
                    out.detach().clone(),
                    g,
                    [x.grad for x in xs],
                    [(k, p.grad) for k, p in module.named_parameters()],
                    [(k, v.detach().clone()) for k, v in module.named_buffers()],
                )
            )
        if len(results) == 2:
            a, b = results
            assert torch.equal(a[0], b[0]), name + ": train/eval outputs differ in PyTorch"
            for ga, gb in zip(a[2], b[2]):
                assert (ga is None) == (gb is None) and (ga is None or torch.equal(ga, gb)), name
        out, g, in_grads, p_grads, buffers_after = results[0]

        fx = FX[dt]
        fx.count += 1
        L = fx.lines
        L.append("case " + name)
        L.append("layer " + kind)
        for k, v in opts.items():
            L.append("opt %s %s" % (k, fmt_opt(v)))
        L.append("mode " + mode)
        for k, v in state:
            L.append("state %s %s" % (k, fmt_tensor(v, gens.get(k))))
        for x, rg, gen, tr in inputs:
            L.append("in %d %s" % (rg, fmt_tensor(x, gen)))
            if tr is not None:
                L.append("view transpose %d %d" % tr)
        L.append("out " + fmt_tensor(out))
        L.append("gout " + fmt_tensor(g))
        for k, ((x, rg, _, _), gx) in enumerate(zip(inputs, in_grads)):
            if rg:
                assert gx is not None, name
                L.append("grad %d %s" % (k, fmt_tensor(gx)))
        for k, gp in p_grads:
            assert gp is not None, name + ": no grad for " + k
            L.append("pgrad %s %s" % (k, fmt_tensor(gp)))
        if mode == "train" and any(True for _ in buffers_after):
            for k, v in buffers_after:
                L.append("after %s %s" % (k, fmt_tensor(v)))
        L.append("end")


def emit_layout(kind):
    """State-dict layout of a whole model: keys, dtypes and shapes, in order."""
    name = "state_dict_layout_" + kind
    assert name not in NAMES
    NAMES.add(name)
    fx = FX[F32]
    fx.count += 1
    model = MODELS[kind]()
    fx.lines.append("case " + name)
    fx.lines.append("layer " + kind)
    fx.lines.append("mode both")
    for k, v in model.state_dict().items():
        fx.lines.append("key %s %s %s" % (k, TAG[v.dtype], fmt_shape(v.shape)))
    fx.lines.append("end")


def layer(base, kind, opts, ctor, inputs, mode="both"):
    emit_case(base, kind, opts, mode, ctor, inputs)


# ----------------------------------------------------------------------------------------------
# The cases
def linear_cases():
    for bias in (True, False):
        b = "bias" if bias else "nobias"
        layer("linear_%s" % b, "Linear", {"in_features": 5, "out_features": 3, "bias": bias},
              lambda: nn.Linear(5, 3, bias=bias), lambda: [(U([4, 5]), 1)])
    layer("linear_3d_input", "Linear", {"in_features": 4, "out_features": 3, "bias": True},
          lambda: nn.Linear(4, 3), lambda: [(U([2, 3, 4]), 1)])
    for bias in (True, False):
        b = "bias" if bias else "nobias"
        layer("bilinear_%s" % b, "Bilinear",
              {"in1_features": 3, "in2_features": 4, "out_features": 2, "bias": bias},
              lambda: nn.Bilinear(3, 4, 2, bias=bias),
              lambda: [(U([5, 3]), 1), (U([5, 4]), 1)])


def conv1d_cases():
    specs = [
        ("basic", 3, 4, 3, {}, [2, 3, 9]),
        ("stride2", 3, 4, 3, {"stride": 2}, [2, 3, 9]),
        ("padding", 3, 4, 3, {"padding": 2}, [2, 3, 7]),
        ("dilation", 3, 4, 3, {"dilation": 2, "padding": 1}, [2, 3, 9]),
        ("groups", 4, 6, 3, {"groups": 2}, [2, 4, 7]),
        ("nobias", 3, 4, 3, {"bias": False}, [2, 3, 8]),
        ("same", 3, 4, 3, {"padding": "same"}, [2, 3, 8]),
        ("same_even_dilated", 2, 3, 4, {"padding": "same", "dilation": 2}, [2, 2, 9]),
        ("reflect", 3, 4, 3, {"padding": 2, "padding_mode": "reflect"}, [2, 3, 7]),
        ("circular_same", 2, 3, 4, {"padding": "same", "padding_mode": "circular"}, [2, 2, 9]),
    ]
    for tag, cin, cout, k, o, shape in specs:
        opts = {"in_channels": cin, "out_channels": cout, "kernel_size": k}
        opts.update(o)
        layer("conv1d_" + tag, "Conv1d", opts,
              lambda cin=cin, cout=cout, k=k, o=o: nn.Conv1d(cin, cout, k, **o),
              lambda shape=shape: [(U(shape), 1)])


def conv2d_cases():
    specs = [
        ("basic", 2, 3, 3, {}, [2, 2, 5, 5]),
        ("stride2", 2, 3, 3, {"stride": 2}, [2, 2, 7, 7]),
        ("stride_rect", 2, 3, (2, 3), {"stride": (2, 1)}, [2, 2, 6, 6]),
        ("padding", 2, 3, 3, {"padding": 1}, [2, 2, 5, 5]),
        ("padding_rect", 2, 3, 3, {"padding": (1, 2), "stride": 2}, [2, 2, 5, 6]),
        ("dilation", 2, 3, 3, {"dilation": 2, "padding": 1}, [2, 2, 7, 7]),
        ("groups", 4, 6, 3, {"groups": 2, "padding": 1}, [2, 4, 4, 4]),
        ("depthwise", 3, 3, 3, {"groups": 3}, [2, 3, 5, 5]),
        ("nobias", 2, 3, 3, {"bias": False}, [2, 2, 5, 5]),
        ("same", 2, 3, 3, {"padding": "same"}, [2, 2, 5, 5]),
        ("same_even_kernel", 2, 3, (2, 4), {"padding": "same"}, [2, 2, 5, 6]),
        ("same_dilated", 2, 2, 3, {"padding": "same", "dilation": 2}, [1, 2, 6, 6]),
        ("reflect", 2, 3, 3, {"padding": (1, 2), "padding_mode": "reflect"}, [2, 2, 5, 6]),
        ("replicate_stride2", 2, 3, 3, {"padding": 1, "stride": 2, "padding_mode": "replicate"},
         [2, 2, 5, 5]),
        ("circular", 2, 3, (3, 2), {"padding": (1, 2), "padding_mode": "circular"}, [1, 2, 4, 5]),
        ("same_even_circular", 2, 3, (2, 4), {"padding": "same", "padding_mode": "circular"},
         [1, 2, 5, 6]),
    ]
    for tag, cin, cout, k, o, shape in specs:
        opts = {"in_channels": cin, "out_channels": cout, "kernel_size": k}
        opts.update(o)
        layer("conv2d_" + tag, "Conv2d", opts,
              lambda cin=cin, cout=cout, k=k, o=o: nn.Conv2d(cin, cout, k, **o),
              lambda shape=shape: [(U(shape), 1)])


def conv_transpose2d_cases():
    specs = [
        ("basic", 3, 2, 3, {}, [2, 3, 3, 3]),
        ("stride2", 3, 2, 3, {"stride": 2}, [2, 3, 3, 3]),
        ("padding", 3, 2, 3, {"stride": 2, "padding": 1}, [2, 3, 3, 3]),
        ("output_padding", 3, 2, 3, {"stride": 2, "padding": 1, "output_padding": 1},
         [2, 3, 3, 3]),
        ("rect", 2, 3, (2, 3), {"stride": (2, 1), "padding": (0, 1)}, [1, 2, 3, 4]),
        ("groups", 4, 6, 2, {"stride": 2, "groups": 2}, [1, 4, 2, 3]),
        ("nobias", 3, 2, 3, {"stride": 2, "bias": False}, [2, 3, 2, 2]),
    ]
    for tag, cin, cout, k, o, shape in specs:
        opts = {"in_channels": cin, "out_channels": cout, "kernel_size": k}
        opts.update(o)
        layer("conv_transpose2d_" + tag, "ConvTranspose2d", opts,
              lambda cin=cin, cout=cout, k=k, o=o: nn.ConvTranspose2d(cin, cout, k, **o),
              lambda shape=shape: [(U(shape), 1)])


def pool_cases():
    max_specs = [
        ("k2", 2, {}, [2, 2, 4, 4]),
        ("k3_s2", 3, {"stride": 2}, [2, 2, 7, 7]),
        ("k3_s2_p1", 3, {"stride": 2, "padding": 1}, [2, 2, 6, 6]),
        ("k2_ceil", 2, {"ceil_mode": True}, [2, 2, 5, 5]),
        ("k3_s2_p1_ceil", 3, {"stride": 2, "padding": 1, "ceil_mode": True}, [1, 2, 6, 6]),
        ("rect", (2, 3), {"stride": (1, 2)}, [1, 2, 4, 7]),
        ("dilation", 2, {"stride": 1, "dilation": 2}, [1, 2, 5, 5]),
    ]
    for tag, k, o, shape in max_specs:
        opts = {"kernel_size": k}
        opts.update(o)
        layer("maxpool2d_" + tag, "MaxPool2d", opts, lambda k=k, o=o: nn.MaxPool2d(k, **o),
              lambda shape=shape: [(distinct(shape), 1)])
    avg_specs = [
        ("k2", 2, {}, [2, 2, 4, 4]),
        ("k3_s2_p1_incl", 3, {"stride": 2, "padding": 1}, [2, 2, 6, 6]),
        ("k3_s2_p1_excl", 3, {"stride": 2, "padding": 1, "count_include_pad": False},
         [2, 2, 6, 6]),
        ("k2_ceil", 2, {"ceil_mode": True}, [2, 2, 5, 5]),
        ("k3_s2_p1_ceil_incl", 3, {"stride": 2, "padding": 1, "ceil_mode": True}, [1, 2, 6, 6]),
        ("k3_s2_p1_ceil_excl", 3,
         {"stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False},
         [1, 2, 6, 6]),
        ("rect", (2, 3), {"stride": (1, 2), "padding": (1, 1)}, [1, 2, 4, 7]),
        ("k3_s2_p1_ceil_div5", 3,
         {"stride": 2, "padding": 1, "ceil_mode": True, "divisor_override": 5}, [1, 2, 6, 6]),
    ]
    for tag, k, o, shape in avg_specs:
        opts = {"kernel_size": k}
        opts.update(o)
        layer("avgpool2d_" + tag, "AvgPool2d", opts, lambda k=k, o=o: nn.AvgPool2d(k, **o),
              lambda shape=shape: [(U(shape), 1)])
    ada_specs = [
        ("divisible", (3, 3), [2, 2, 6, 6]),
        ("nondivisible", (4, 4), [2, 2, 6, 6]),
        ("rect_nondivisible", (2, 3), [1, 3, 5, 7]),
        ("global", 1, [2, 3, 4, 5]),
        ("upsizing", (5, 4), [1, 2, 3, 3]),
    ]
    for tag, size, shape in ada_specs:
        layer("adaptive_avgpool2d_" + tag, "AdaptiveAvgPool2d", {"output_size": size},
              lambda size=size: nn.AdaptiveAvgPool2d(size), lambda shape=shape: [(U(shape), 1)])


def norm_cases():
    def bn(cls, c, **kw):
        def make():
            m = cls(c, **kw)
            randomize_state(m)
            return m

        return make

    specs = [
        # (tag, class, kind, C, kwargs, input shape)
        ("1d_nc", nn.BatchNorm1d, "BatchNorm1d", 4, {}, [6, 4]),
        ("1d_ncl", nn.BatchNorm1d, "BatchNorm1d", 3, {}, [3, 3, 5]),
        ("1d_noaffine", nn.BatchNorm1d, "BatchNorm1d", 4, {"affine": False}, [5, 4]),
        ("1d_momentum", nn.BatchNorm1d, "BatchNorm1d", 3, {"momentum": 0.3}, [4, 3, 2]),
        ("2d", nn.BatchNorm2d, "BatchNorm2d", 3, {}, [3, 3, 3, 3]),
        ("2d_noaffine", nn.BatchNorm2d, "BatchNorm2d", 3, {"affine": False}, [2, 3, 3, 4]),
        ("2d_momentum", nn.BatchNorm2d, "BatchNorm2d", 2, {"momentum": 0.5}, [3, 2, 3, 3]),
        ("2d_momentum_none", nn.BatchNorm2d, "BatchNorm2d", 2, {"momentum": None},
         [3, 2, 3, 3]),
        ("2d_eps", nn.BatchNorm2d, "BatchNorm2d", 2, {"eps": 1e-2}, [2, 2, 3, 3]),
        ("2d_no_running_stats", nn.BatchNorm2d, "BatchNorm2d", 2,
         {"track_running_stats": False}, [2, 2, 3, 3]),
    ]
    for tag, cls, kind, c, kw, shape in specs:
        opts = {"num_features": c}
        opts.update(kw)
        for mode in ("train", "eval"):
            emit_case("batchnorm%s_%s" % (tag, mode), kind, opts, mode, bn(cls, c, **kw),
                      lambda shape=shape: [(U(shape), 1)])

    def affine(m):
        randomize_state(m)
        return m

    ln_specs = [
        ("last", [5], {}, [3, 5]),
        ("last2", [3, 4], {}, [2, 3, 4]),
        ("noaffine", [4], {"elementwise_affine": False}, [2, 3, 4]),
        ("eps", [6], {"eps": 1e-2}, [2, 6]),
    ]
    for tag, ns, kw, shape in ln_specs:
        opts = {"normalized_shape": ns}
        opts.update(kw)
        layer("layernorm_" + tag, "LayerNorm", opts,
              lambda ns=ns, kw=kw: affine(nn.LayerNorm(ns, **kw)),
              lambda shape=shape: [(U(shape), 1)])
    gn_specs = [
        ("g2", 2, 4, {}, [2, 4, 3, 3]),
        ("g1", 1, 4, {}, [2, 4, 2, 3]),
        ("g_eq_c", 4, 4, {}, [3, 4, 5]),
        ("noaffine", 3, 6, {"affine": False}, [2, 6, 2, 2]),
        ("eps", 2, 4, {"eps": 1e-2}, [2, 4, 3]),
    ]
    for tag, g, c, kw, shape in gn_specs:
        opts = {"num_groups": g, "num_channels": c}
        opts.update(kw)
        layer("groupnorm_" + tag, "GroupNorm", opts,
              lambda g=g, c=c, kw=kw: affine(nn.GroupNorm(g, c, **kw)),
              lambda shape=shape: [(U(shape), 1)])


def misc_cases():
    # Dropout: random streams differ from PyTorch's, so train mode is checked with p = 0 only.
    for cls, kind, shape in ((nn.Dropout, "Dropout", [3, 5]), (nn.Dropout2d, "Dropout2d",
                                                                [2, 3, 2, 2])):
        low = kind.lower()
        emit_case(low + "_eval", kind, {"p": 0.5}, "eval", lambda cls=cls: cls(0.5),
                  lambda shape=shape: [(U(shape), 1)])
        emit_case(low + "_p0_train", kind, {"p": 0.0}, "train", lambda cls=cls: cls(0.0),
                  lambda shape=shape: [(U(shape), 1)])

    # Embedding: repeated indices (the weight gradient accumulates); padding rows get none.
    idx = lambda: torch.tensor([[1, 2, 4, 2, 0], [3, 9, 2, 2, 7]], dtype=I64)
    layer("embedding", "Embedding", {"num_embeddings": 10, "embedding_dim": 4},
          lambda: nn.Embedding(10, 4), lambda: [(idx(), 0)])
    layer("embedding_padding_idx", "Embedding",
          {"num_embeddings": 10, "embedding_dim": 3, "padding_idx": 2},
          lambda: nn.Embedding(10, 3, padding_idx=2), lambda: [(idx(), 0)])
    layer("embedding_padding_idx_negative", "Embedding",
          {"num_embeddings": 10, "embedding_dim": 3, "padding_idx": -1},
          lambda: nn.Embedding(10, 3, padding_idx=-1), lambda: [(idx(), 0)])
    layer("embedding_1d_indices", "Embedding", {"num_embeddings": 6, "embedding_dim": 2},
          lambda: nn.Embedding(6, 2),
          lambda: [(torch.tensor([5, 0, 5, 1], dtype=I64), 0)])

    # Shape layers.
    layer("flatten_default", "Flatten", {}, lambda: nn.Flatten(), lambda: [(U([2, 3, 4]), 1)])
    layer("flatten_start0", "Flatten", {"start_dim": 0}, lambda: nn.Flatten(0),
          lambda: [(U([2, 3, 2]), 1)])
    layer("flatten_mid", "Flatten", {"start_dim": 1, "end_dim": 2}, lambda: nn.Flatten(1, 2),
          lambda: [(U([2, 3, 2, 2]), 1)])
    layer("unflatten", "Unflatten", {"dim": 1, "unflattened_size": [2, 3]},
          lambda: nn.Unflatten(1, (2, 3)), lambda: [(U([4, 6]), 1)])
    layer("unflatten_last", "Unflatten", {"dim": -1, "unflattened_size": [2, 2]},
          lambda: nn.Unflatten(-1, (2, 2)), lambda: [(U([2, 3, 4]), 1)])
    layer("identity", "Identity", {}, lambda: nn.Identity(), lambda: [(U([3, 4]), 1)])
    layer("upsample_nearest_2", "Upsample", {"scale_factor": 2, "mode": "nearest"},
          lambda: nn.Upsample(scale_factor=2, mode="nearest"), lambda: [(U([2, 2, 2, 3]), 1)])
    for align in (False, True):
        layer("upsample_bilinear_2x3" + ("_align" if align else ""), "Upsample",
              {"scale_factor": [2, 3], "mode": "bilinear", "align_corners": int(align)},
              lambda align=align: nn.Upsample(scale_factor=(2.0, 3.0), mode="bilinear",
                                              align_corners=align),
              lambda: [(U([2, 2, 3, 4]), 1)])
    layer("upsample_nearest_2x3", "Upsample", {"scale_factor": [2, 3], "mode": "nearest"},
          lambda: nn.Upsample(scale_factor=(2.0, 3.0), mode="nearest"),
          lambda: [(U([1, 2, 2, 2]), 1)])


def activation_cases():
    specs = [
        # (name, kind, opts, ctor, input builder)
        ("relu", "ReLU", {}, lambda: nn.ReLU(), lambda: away([3, 5])),
        ("leaky_relu", "LeakyReLU", {}, lambda: nn.LeakyReLU(), lambda: away([3, 5])),
        ("leaky_relu_0.2", "LeakyReLU", {"negative_slope": 0.2}, lambda: nn.LeakyReLU(0.2),
         lambda: away([3, 5])),
        ("elu", "ELU", {}, lambda: nn.ELU(), lambda: away([3, 5])),
        ("elu_alpha", "ELU", {"alpha": 0.5}, lambda: nn.ELU(0.5), lambda: away([3, 5])),
        ("gelu", "GELU", {}, lambda: nn.GELU(), lambda: U([3, 5], -4, 4)),
        ("gelu_tanh", "GELU", {"approximate": "tanh"}, lambda: nn.GELU(approximate="tanh"),
         lambda: U([3, 5], -4, 4)),
        ("silu", "SiLU", {}, lambda: nn.SiLU(), lambda: U([3, 5], -5, 5)),
        ("sigmoid", "Sigmoid", {}, lambda: nn.Sigmoid(), lambda: U([3, 5], -5, 5)),
        ("tanh", "Tanh", {}, lambda: nn.Tanh(), lambda: U([3, 5], -3, 3)),
        ("softmax_dim1", "Softmax", {"dim": 1}, lambda: nn.Softmax(1), lambda: U([3, 5], -3, 3)),
        ("softmax_dim0_3d", "Softmax", {"dim": 0}, lambda: nn.Softmax(0),
         lambda: U([3, 2, 4], -3, 3)),
        ("softmax_dim_neg1", "Softmax", {"dim": -1}, lambda: nn.Softmax(-1),
         lambda: U([2, 3, 4], -3, 3)),
        ("log_softmax_dim1", "LogSoftmax", {"dim": 1}, lambda: nn.LogSoftmax(1),
         lambda: U([3, 5], -3, 3)),
        ("log_softmax_dim_neg1", "LogSoftmax", {"dim": -1}, lambda: nn.LogSoftmax(-1),
         lambda: U([2, 3, 4], -3, 3)),
        ("softplus", "Softplus", {}, lambda: nn.Softplus(), lambda: U([3, 5], -5, 5)),
        # beta 2, threshold 1: beta * x > threshold switches to the identity for x > 0.5.
        ("softplus_beta_threshold", "Softplus", {"beta": 2.0, "threshold": 1.0},
         lambda: nn.Softplus(2.0, 1.0), lambda: away([3, 5], (0.5,), 0.05)),
        ("hardswish", "Hardswish", {}, lambda: nn.Hardswish(),
         lambda: away([4, 5], (-3.0, 3.0), 0.1, -4.5, 4.5)),
    ]
    for name, kind, opts, ctor, build in specs:
        layer(name, kind, opts, ctor, lambda build=build: [(build(), 1)])

    def prelu(n, init=0.25):
        def make():
            m = nn.PReLU(n, init)
            with torch.no_grad():
                m.weight.copy_(U([n], 0.05, 0.5))
            return m

        return make

    layer("prelu_1", "PReLU", {"num_parameters": 1}, prelu(1), lambda: [(away([3, 4]), 1)])
    layer("prelu_channels", "PReLU", {"num_parameters": 3}, prelu(3),
          lambda: [(away([2, 3, 4]), 1)])
    layer("prelu_channels_2d", "PReLU", {"num_parameters": 4}, prelu(4),
          lambda: [(away([3, 4]), 1)])
    layer("prelu_channels_4d", "PReLU", {"num_parameters": 2, "init": 0.1}, prelu(2, 0.1),
          lambda: [(away([2, 2, 2, 3]), 1)])


def merge_cases():
    layer("add_2", "Add", {}, lambda: Add(), lambda: [(U([3, 4]), 1), (U([3, 4]), 1)])
    layer("add_3", "Add", {}, lambda: Add(),
          lambda: [(U([2, 3]), 1), (U([2, 3]), 1), (U([2, 3]), 1)])
    layer("add_broadcast", "Add", {}, lambda: Add(), lambda: [(U([2, 3, 4]), 1), (U([4]), 1)])
    layer("multiply_2", "Multiply", {}, lambda: Multiply(),
          lambda: [(U([3, 4]), 1), (U([3, 4]), 1)])
    layer("multiply_3", "Multiply", {}, lambda: Multiply(),
          lambda: [(U([2, 3]), 1), (U([2, 3]), 1), (U([2, 3]), 1)])
    layer("multiply_broadcast", "Multiply", {}, lambda: Multiply(),
          lambda: [(U([2, 3, 1]), 1), (U([1, 4]), 1)])
    layer("concat_dim1", "Concat", {"dim": 1}, lambda: Concat(1),
          lambda: [(U([2, 3]), 1), (U([2, 2]), 1)])
    layer("concat_dim0_3", "Concat", {"dim": 0}, lambda: Concat(0),
          lambda: [(U([1, 3]), 1), (U([2, 3]), 1), (U([1, 3]), 1)])
    layer("concat_channels_4d", "Concat", {"dim": 1}, lambda: Concat(1),
          lambda: [(U([2, 1, 2, 2]), 1), (U([2, 3, 2, 2]), 1)])
    layer("concat_dim_neg1", "Concat", {"dim": -1}, lambda: Concat(-1),
          lambda: [(U([2, 2, 3]), 1), (U([2, 2, 1]), 1)])


def noncontiguous_cases():
    """Layers fed a transposed (non-contiguous) input, as after a permute in a graph."""
    T = lambda shape, a, b, gen=U: lambda: [(gen(shape), 1, (a, b))]
    layer("noncontig_linear", "Linear", {"in_features": 4, "out_features": 3},
          lambda: nn.Linear(4, 3), T([4, 3], 0, 1))
    layer("noncontig_conv2d", "Conv2d",
          {"in_channels": 2, "out_channels": 3, "kernel_size": 3, "padding": 1},
          lambda: nn.Conv2d(2, 3, 3, padding=1), T([2, 2, 5, 4], 2, 3))
    layer("noncontig_conv1d", "Conv1d", {"in_channels": 3, "out_channels": 2, "kernel_size": 2},
          lambda: nn.Conv1d(3, 2, 2), T([2, 5, 3], 1, 2))
    layer("noncontig_conv_transpose2d", "ConvTranspose2d",
          {"in_channels": 3, "out_channels": 2, "kernel_size": 2, "stride": 2},
          lambda: nn.ConvTranspose2d(3, 2, 2, stride=2), T([3, 2, 2, 3], 0, 1))
    layer("noncontig_maxpool2d", "MaxPool2d", {"kernel_size": 2},
          lambda: nn.MaxPool2d(2), T([2, 2, 4, 6], 2, 3, distinct))
    layer("noncontig_avgpool2d", "AvgPool2d", {"kernel_size": 2, "stride": 1},
          lambda: nn.AvgPool2d(2, stride=1), T([2, 2, 3, 4], 2, 3))
    layer("noncontig_adaptive_avgpool2d", "AdaptiveAvgPool2d", {"output_size": [2, 3]},
          lambda: nn.AdaptiveAvgPool2d((2, 3)), T([1, 2, 5, 4], 2, 3))
    for mode in ("train", "eval"):
        def bn():
            m = nn.BatchNorm2d(3)
            randomize_state(m)
            return m

        emit_case("noncontig_batchnorm2d_" + mode, "BatchNorm2d", {"num_features": 3}, mode, bn,
                  T([3, 2, 3, 3], 0, 1))
    def ln():
        m = nn.LayerNorm([4])
        randomize_state(m)
        return m

    layer("noncontig_layernorm", "LayerNorm", {"normalized_shape": [4]}, ln, T([2, 4, 3], 1, 2))
    def gn():
        m = nn.GroupNorm(2, 4)
        randomize_state(m)
        return m

    layer("noncontig_groupnorm", "GroupNorm", {"num_groups": 2, "num_channels": 4}, gn,
          T([4, 2, 3], 0, 1))
    layer("noncontig_softmax", "Softmax", {"dim": -1}, lambda: nn.Softmax(-1), T([4, 3], 0, 1))
    layer("noncontig_log_softmax", "LogSoftmax", {"dim": 1}, lambda: nn.LogSoftmax(1),
          T([4, 3], 0, 1))
    layer("noncontig_gelu", "GELU", {}, lambda: nn.GELU(), T([4, 3], 0, 1))
    layer("noncontig_prelu", "PReLU", {"num_parameters": 3}, lambda: nn.PReLU(3),
          T([2, 4, 3], 1, 2, away))
    layer("noncontig_flatten", "Flatten", {}, lambda: nn.Flatten(), T([2, 3, 4], 1, 2))
    layer("noncontig_upsample", "Upsample", {"scale_factor": 2, "mode": "nearest"},
          lambda: nn.Upsample(scale_factor=2, mode="nearest"), T([1, 2, 3, 2], 2, 3))
    layer("noncontig_embedding", "Embedding", {"num_embeddings": 6, "embedding_dim": 2},
          lambda: nn.Embedding(6, 2),
          lambda: [(torch.tensor([[1, 5, 1], [0, 2, 5]], dtype=I64), 0, (0, 1))])
    layer("noncontig_concat", "Concat", {"dim": 1}, lambda: Concat(1),
          lambda: [(U([3, 2]), 1, (0, 1)), (U([2, 2]), 1)])


def model_cases():
    for kind in MODELS:
        emit_layout(kind)

    # MLP: 784 -> 256 -> 128 -> 10. Weights and the input come from gen_values (235k values
    # would not fit the size budget); the first layer's weight gradient is written sampled.
    def fan_in_scale(fan_in):
        return 1.0 / math.sqrt(fan_in)

    mlp_gens = {}
    for k, (key, shape, fan) in enumerate(
        [("1.weight", [256, 784], 784), ("1.bias", [256], 784), ("3.weight", [128, 256], 256),
         ("3.bias", [128], 256), ("5.weight", [10, 128], 128), ("5.bias", [10], 128)]
    ):
        mlp_gens[key] = Gen(shape, 1000 + k, fan_in_scale(fan))
    emit_case("model_mlp", "MLP", {}, "both", make_mlp,
              lambda: [(Gen([3, 1, 28, 28], 2000, 1.0), 1)], gens=mlp_gens)

    def cnn():
        m = make_cnn()
        randomize_state(m)
        return m

    # The second conv's weight (1152 values) comes from gen_values to save space.
    cnn_gens = {"4.weight": Gen([16, 8, 3, 3], 1100, 1.0 / math.sqrt(72))}
    for mode in ("train", "eval"):
        emit_case("model_cnn_" + mode, "CNN", {}, mode, cnn,
                  lambda: [(U([4, 1, 8, 8]), 1)], gens=cnn_gens)

    def res():
        m = ResBlock(4)
        randomize_state(m)
        return m

    for mode in ("train", "eval"):
        emit_case("model_resblock_" + mode, "ResBlock", {}, mode, res,
                  lambda: [(U([2, 4, 5, 5]), 1)])


def main():
    torch.set_num_threads(1)
    linear_cases()
    conv1d_cases()
    conv2d_cases()
    conv_transpose2d_cases()
    pool_cases()
    norm_cases()
    misc_cases()
    activation_cases()
    merge_cases()
    noncontiguous_cases()
    model_cases()
    total = 0
    for fx in FX.values():
        fx.write()
        size = os.path.getsize(fx.path)
        total += size
        print("%s: %d cases, %d bytes" % (os.path.basename(fx.path), fx.count, size))
    print("total %d bytes" % total)


if __name__ == "__main__":
    main()
