#!/usr/bin/python3
"""Writes tests/golden/optim.txt: PyTorch 1.13 reference values for Myelin's losses, optimizers,
gradient clipping and learning-rate schedulers (read by tests/core/test_loss.cpp, test_optim.cpp
and test_sched.cpp).

Run with Debian's python3-torch:  /usr/bin/python3 tests/golden/gen_golden_optim.py

Deterministic: each case reseeds torch from a CRC-32 of its name.

Format (one record per line, fields separated by spaces, '#' starts a comment):
  case <name>
  kind loss|optim|clip|sched|plateau
  attr <key> <value>                 options (doubles %.17g, ints, lists [1,2], strings)
  tensor <name> <dtype> <rg> <shape> <values...>   inputs (rg: requires grad)
  out <dtype> <shape> <values...>    loss value(s)
  grad <name> <dtype> <shape> <values...>          gradient of sum(out * gout) (gout: tensor "gout"
                                     for reduction none, else implicit 1)
  param <i> <dtype> <shape> <values...>            optimizer: parameter i after the steps
  state <i> <key> <dtype> <shape> <values...>      optimizer: state of parameter i after the steps
  sub <type> <key=value>...          sched: a SequentialLR's wrapped scheduler
  lrs <group> <values...>            sched: lr after construction and after each step
  momentum <group> <values...>       OneCycleLR: momentum / beta1 per step
  metrics <values...>                plateau: the metric passed to each step
  total <value>                      clip: total norm returned
  end
"""
import math
import os
import zlib

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "optim.txt")
lines = []


def seed(name):
    torch.manual_seed(zlib.crc32(name.encode()))


def fmt_vals(t):
    t = t.detach().reshape(-1)
    if t.dtype == torch.int64:
        return " ".join(str(int(v)) for v in t.tolist())
    if t.dtype == torch.float64:
        return " ".join("%.17g" % v for v in t.tolist())
    return " ".join("%.9g" % v for v in t.tolist())


def dtag(t):
    return {torch.float32: "f32", torch.float64: "f64", torch.int64: "i64"}[t.dtype]


def shape(t):
    return "[" + ",".join(str(s) for s in t.shape) + "]"


def emit(*parts):
    lines.append(" ".join(str(p) for p in parts))


def fnum(v):
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "%.17g" % v
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(fnum(x) for x in v) + "]"
    return str(v)


# ---------------------------------------------------------------------------------------------
# Losses

F = torch.nn.functional


def loss_case(name, fn, tensors, attrs):
    """tensors: list of (name, tensor, requires_grad). fn(dict of leaves) -> output."""
    emit("case", name)
    emit("kind", "loss")
    for k, v in attrs.items():
        emit("attr", k, fnum(v))
    leaves = {}
    for tname, t, rg in tensors:
        leaf = t.detach().clone().requires_grad_(rg)
        leaves[tname] = leaf
        emit("tensor", tname, dtag(t), 1 if rg else 0, shape(t), fmt_vals(t))
    out = fn(leaves)
    emit("out", dtag(out), shape(out), fmt_vals(out))
    if attrs.get("reduction") == "none":
        gout = torch.randn(out.shape, dtype=out.dtype)
        emit("tensor", "gout", dtag(gout), 0, shape(gout), fmt_vals(gout))
    else:
        gout = torch.ones_like(out)
    rg_names = [n for n, _, rg in tensors if rg]
    grads = torch.autograd.grad(out, [leaves[n] for n in rg_names], gout, allow_unused=True)
    for n, g in zip(rg_names, grads):
        if g is None:
            g = torch.zeros_like(leaves[n])
        emit("grad", n, dtag(g), shape(g), fmt_vals(g))
    emit("end")


REDUCTIONS = ["mean", "sum", "none"]


def gen_losses():
    # element-wise regression losses
    for red in REDUCTIONS:
        for loss, extra in [("mse_loss", {}), ("l1_loss", {}), ("smooth_l1_loss", {"beta": 1.0}),
                            ("smooth_l1_loss", {"beta": 0.5}), ("smooth_l1_loss", {"beta": 0.0}),
                            ("huber_loss", {"delta": 1.0}), ("huber_loss", {"delta": 0.3})]:
            name = "loss_%s_%s%s" % (loss, red, "".join("_%s%g" % kv for kv in extra.items()))
            seed(name)
            x = torch.randn(4, 5) * 1.5
            y = torch.randn(4, 5)
            attrs = {"loss": loss, "reduction": red, **extra}

            def fn(L, loss=loss, red=red, extra=extra):
                return getattr(F, loss)(L["input"], L["target"], reduction=red, **extra)

            loss_case(name, fn, [("input", x, True), ("target", y, True)], attrs)

    # cross_entropy with class indices
    ce_variants = [
        ("basic", {}, False),
        ("weight", {"weight": True}, False),
        ("ignore", {"ignore_index": 2}, False),
        ("ignore_default", {"ignore_index": -100, "set_ignored": -100}, False),
        ("smooth", {"label_smoothing": 0.1}, False),
        ("smooth_weight_ignore", {"label_smoothing": 0.2, "weight": True, "ignore_index": 1}, False),
        ("smooth_ignore", {"label_smoothing": 0.15, "ignore_index": 3}, False),
        ("spatial", {"weight": True, "ignore_index": 0, "label_smoothing": 0.1}, True),
    ]
    for red in REDUCTIONS:
        for vname, opts, spatial in ce_variants:
            name = "loss_cross_entropy_%s_%s" % (vname, red)
            seed(name)
            C = 5
            if spatial:
                x = torch.randn(3, C, 2, 3) * 2
                t = torch.randint(0, C, (3, 2, 3))
            else:
                x = torch.randn(6, C) * 2
                t = torch.randint(0, C, (6,))
                t[0] = opts.get("ignore_index", 0) if "ignore_index" in opts else t[0]
            if "set_ignored" in opts:
                t[1] = opts["set_ignored"]
            w = torch.rand(C) + 0.5
            attrs = {"loss": "cross_entropy", "reduction": red}
            kw = {"reduction": red}
            tensors = [("input", x, True), ("target", t, False)]
            if opts.get("weight"):
                tensors.append(("weight", w, False))
                kw["weight"] = "weight"
            if "ignore_index" in opts:
                attrs["ignore_index"] = opts["ignore_index"]
                kw["ignore_index"] = opts["ignore_index"]
            if "label_smoothing" in opts:
                attrs["label_smoothing"] = opts["label_smoothing"]
                kw["label_smoothing"] = opts["label_smoothing"]

            def fn(L, kw=kw):
                k = dict(kw)
                if "weight" in k:
                    k["weight"] = L["weight"]
                return F.cross_entropy(L["input"], L["target"], **k)

            loss_case(name, fn, tensors, attrs)

    # 1-D input, 0-dim target
    for red in ["mean", "sum"]:
        name = "loss_cross_entropy_1d_%s" % red
        seed(name)
        x = torch.randn(5)
        t = torch.tensor(3)
        loss_case(name, lambda L, red=red: F.cross_entropy(L["input"], L["target"], reduction=red),
                  [("input", x, True), ("target", t, False)],
                  {"loss": "cross_entropy", "reduction": red})

    # probability targets
    for red in REDUCTIONS:
        for vname, kw in [("basic", {}), ("weight", {"weight": True}),
                          ("smooth", {"label_smoothing": 0.1}),
                          ("smooth_weight", {"label_smoothing": 0.2, "weight": True})]:
            name = "loss_cross_entropy_prob_%s_%s" % (vname, red)
            seed(name)
            x = torch.randn(4, 5)
            p = torch.softmax(torch.randn(4, 5), 1)
            w = torch.rand(5) + 0.5
            attrs = {"loss": "cross_entropy", "reduction": red}
            tensors = [("input", x, True), ("target", p, True)]
            if kw.get("weight"):
                tensors.append(("weight", w, False))
            if "label_smoothing" in kw:
                attrs["label_smoothing"] = kw["label_smoothing"]

            def fn(L, red=red, kw=kw):
                return F.cross_entropy(L["input"], L["target"], reduction=red,
                                       weight=L.get("weight"),
                                       label_smoothing=kw.get("label_smoothing", 0.0))

            loss_case(name, fn, tensors, attrs)

    # nll_loss
    for red in REDUCTIONS:
        for vname, opts, spatial in [("basic", {}, False), ("weight_ignore", {"weight": True, "ignore_index": 1}, False),
                                     ("spatial", {"weight": True}, True)]:
            name = "loss_nll_loss_%s_%s" % (vname, red)
            seed(name)
            if spatial:
                x = torch.log_softmax(torch.randn(2, 4, 3), 1)
                t = torch.randint(0, 4, (2, 3))
            else:
                x = torch.log_softmax(torch.randn(6, 4), 1)
                t = torch.randint(0, 4, (6,))
                t[0] = 1
            w = torch.rand(4) + 0.5
            attrs = {"loss": "nll_loss", "reduction": red}
            tensors = [("input", x, True), ("target", t, False)]
            if opts.get("weight"):
                tensors.append(("weight", w, False))
            if "ignore_index" in opts:
                attrs["ignore_index"] = opts["ignore_index"]

            def fn(L, red=red, opts=opts):
                return F.nll_loss(L["input"], L["target"], weight=L.get("weight"), reduction=red,
                                  ignore_index=opts.get("ignore_index", -100))

            loss_case(name, fn, tensors, attrs)

    # binary cross-entropy
    for red in REDUCTIONS:
        for vname, weighted in [("basic", False), ("weight", True)]:
            name = "loss_binary_cross_entropy_%s_%s" % (vname, red)
            seed(name)
            x = torch.sigmoid(torch.randn(3, 4) * 2)
            y = torch.rand(3, 4)
            w = torch.rand(4) + 0.5
            tensors = [("input", x, True), ("target", y, True)]
            if weighted:
                tensors.append(("weight", w, False))
            loss_case(name, lambda L, red=red: F.binary_cross_entropy(L["input"], L["target"], weight=L.get("weight"), reduction=red),
                      tensors, {"loss": "binary_cross_entropy", "reduction": red})
        for vname, weighted, posw in [("basic", False, False), ("weight", True, False),
                                      ("pos_weight", False, True), ("both", True, True)]:
            name = "loss_bce_with_logits_%s_%s" % (vname, red)
            seed(name)
            x = torch.randn(3, 4) * 3
            y = torch.rand(3, 4)
            w = torch.rand(3, 4) + 0.5
            pw = torch.rand(4) * 3 + 0.2
            tensors = [("input", x, True), ("target", y, True)]
            if weighted:
                tensors.append(("weight", w, False))
            if posw:
                tensors.append(("pos_weight", pw, False))
            loss_case(name, lambda L, red=red: F.binary_cross_entropy_with_logits(
                L["input"], L["target"], weight=L.get("weight"), pos_weight=L.get("pos_weight"), reduction=red),
                tensors, {"loss": "binary_cross_entropy_with_logits", "reduction": red})

    # kl_div
    for red in ["mean", "sum", "none", "batchmean"]:
        for log_target in [False, True]:
            name = "loss_kl_div_%s_%s" % (red, "logt" if log_target else "prob")
            seed(name)
            x = torch.log_softmax(torch.randn(3, 5), 1)
            t = torch.softmax(torch.randn(3, 5), 1)
            if log_target:
                t = t.log()
            loss_case(name, lambda L, red=red, lt=log_target: F.kl_div(L["input"], L["target"], reduction=red, log_target=lt),
                      [("input", x, True), ("target", t, True)],
                      {"loss": "kl_div", "reduction": red, "log_target": log_target})

    # cosine_embedding_loss and margin_ranking_loss
    for red in REDUCTIONS:
        for margin in [0.0, 0.3]:
            name = "loss_cosine_embedding_%s_m%g" % (red, margin)
            seed(name)
            a = torch.randn(6, 4)
            b = torch.randn(6, 4)
            y = torch.tensor([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
            loss_case(name, lambda L, red=red, m=margin: F.cosine_embedding_loss(L["x1"], L["x2"], L["target"], margin=m, reduction=red),
                      [("x1", a, True), ("x2", b, True), ("target", y, False)],
                      {"loss": "cosine_embedding_loss", "reduction": red, "margin": margin})
            name = "loss_margin_ranking_%s_m%g" % (red, margin)
            seed(name)
            a = torch.randn(6)
            b = torch.randn(6)
            y = torch.tensor([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
            loss_case(name, lambda L, red=red, m=margin: F.margin_ranking_loss(L["x1"], L["x2"], L["target"], margin=m, reduction=red),
                      [("x1", a, True), ("x2", b, True), ("target", y, False)],
                      {"loss": "margin_ranking_loss", "reduction": red, "margin": margin})


# ---------------------------------------------------------------------------------------------
# Optimizers: three parameters (p0 [3,4] and p2 [2] in group 0, p1 [5] in group 1); p2 never
# gets a gradient. Gradient of each step: A * (p - C), element-wise in float32 (computed
# identically by Myelin), so the trajectories differ only by the optimizers' arithmetic.

STEPS = 20


def optim_case(name, cls, opts, group1):
    seed(name)
    p0 = torch.randn(3, 4)
    p1 = torch.randn(5)
    p2 = torch.randn(2)
    A0 = torch.rand(3, 4) * 1.5 + 0.5
    A1 = torch.rand(5) * 1.5 + 0.5
    C0 = torch.randn(3, 4)
    C1 = torch.randn(5)
    emit("case", name)
    emit("kind", "optim")
    emit("attr", "optimizer", cls)
    emit("attr", "steps", STEPS)
    for k, v in opts.items():
        emit("attr", k, fnum(v))
    for k, v in group1.items():
        emit("attr", "group1." + k, fnum(v))
    for n, t in [("p0", p0), ("p1", p1), ("p2", p2), ("A0", A0), ("A1", A1), ("C0", C0), ("C1", C1)]:
        emit("tensor", n, dtag(t), 0, shape(t), fmt_vals(t))
    params = [p0.clone().requires_grad_(), p1.clone().requires_grad_(), p2.clone().requires_grad_()]
    kw = dict(opts)
    if "beta1" in kw:
        kw["betas"] = (kw.pop("beta1"), kw.pop("beta2"))
    g1 = dict(group1)
    if "beta1" in g1:
        g1["betas"] = (g1.pop("beta1"), g1.pop("beta2"))
    ctor = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW,
            "rmsprop": torch.optim.RMSprop, "adagrad": torch.optim.Adagrad}[cls]
    opt = ctor([{"params": [params[0], params[2]]}, {"params": [params[1]], **g1}], foreach=False, **kw)
    for _ in range(STEPS):
        opt.zero_grad()
        with torch.no_grad():
            params[0].grad = A0 * (params[0].detach() - C0)
            params[1].grad = A1 * (params[1].detach() - C1)
        opt.step()
    for i, p in enumerate(params):
        emit("param", i, dtag(p), shape(p), fmt_vals(p))
    sd = opt.state_dict()
    for i in sorted(sd["state"].keys()):
        for k, v in sorted(sd["state"][i].items()):
            if v is None:
                continue
            if not torch.is_tensor(v):
                v = torch.tensor(float(v))
            emit("state", i, k, dtag(v), shape(v), fmt_vals(v))
    emit("end")


def gen_optim():
    cases = [
        ("sgd_plain", "sgd", {"lr": 0.1}, {"lr": 0.05}),
        ("sgd_momentum", "sgd", {"lr": 0.05, "momentum": 0.9}, {"lr": 0.02}),
        ("sgd_dampening", "sgd", {"lr": 0.05, "momentum": 0.9, "dampening": 0.1}, {"momentum": 0.5}),
        ("sgd_nesterov", "sgd", {"lr": 0.05, "momentum": 0.9, "nesterov": True}, {"lr": 0.1}),
        ("sgd_weight_decay", "sgd", {"lr": 0.05, "momentum": 0.8, "weight_decay": 0.05}, {"weight_decay": 0.0}),
        ("sgd_maximize", "sgd", {"lr": 0.01, "momentum": 0.5, "maximize": True}, {}),
        ("adam_default", "adam", {"lr": 0.01}, {"lr": 0.005}),
        ("adam_amsgrad", "adam", {"lr": 0.05, "amsgrad": True}, {"lr": 0.01}),
        ("adam_weight_decay", "adam", {"lr": 0.02, "weight_decay": 0.1}, {"weight_decay": 0.0}),
        ("adam_betas_eps", "adam", {"lr": 0.03, "beta1": 0.8, "beta2": 0.99, "eps": 1e-6}, {"beta1": 0.5, "beta2": 0.9}),
        ("adam_maximize", "adam", {"lr": 0.01, "maximize": True}, {}),
        ("adamw_default", "adamw", {"lr": 0.01}, {"lr": 0.02}),
        ("adamw_amsgrad_wd", "adamw", {"lr": 0.05, "weight_decay": 0.1, "amsgrad": True}, {"weight_decay": 0.0}),
        ("rmsprop_default", "rmsprop", {"lr": 0.01}, {"lr": 0.005}),
        ("rmsprop_momentum", "rmsprop", {"lr": 0.01, "momentum": 0.9}, {"alpha": 0.9}),
        ("rmsprop_centered", "rmsprop", {"lr": 0.01, "centered": True}, {"eps": 1e-4}),
        ("rmsprop_all", "rmsprop", {"lr": 0.005, "alpha": 0.95, "momentum": 0.5, "centered": True, "weight_decay": 0.1}, {"momentum": 0.0}),
        ("rmsprop_maximize", "rmsprop", {"lr": 0.001, "maximize": True}, {}),
        ("adagrad_default", "adagrad", {"lr": 0.1}, {"lr": 0.05}),
        ("adagrad_lr_decay", "adagrad", {"lr": 0.1, "lr_decay": 0.05}, {"lr_decay": 0.0}),
        ("adagrad_init_wd", "adagrad", {"lr": 0.1, "initial_accumulator_value": 0.1, "weight_decay": 0.1, "eps": 1e-6}, {}),
        ("adagrad_maximize", "adagrad", {"lr": 0.01, "maximize": True}, {}),
    ]
    for name, cls, opts, g1 in cases:
        optim_case("optim_" + name, cls, opts, g1)


def gen_clip():
    for name, max_norm, norm_type, scale in [("l2", 1.0, 2.0, 1.0), ("l2_noclip", 100.0, 2.0, 1.0),
                                             ("l1", 2.0, 1.0, 1.0), ("inf", 0.5, math.inf, 1.0),
                                             ("p3", 0.7, 3.0, 2.0)]:
        cname = "clip_" + name
        seed(cname)
        g0 = torch.randn(3, 4) * scale
        g1 = torch.randn(5) * scale
        emit("case", cname)
        emit("kind", "clip")
        emit("attr", "max_norm", fnum(max_norm))
        emit("attr", "norm_type", "inf" if math.isinf(norm_type) else fnum(norm_type))
        emit("tensor", "g0", "f32", 0, shape(g0), fmt_vals(g0))
        emit("tensor", "g1", "f32", 0, shape(g1), fmt_vals(g1))
        p0 = torch.zeros(3, 4, requires_grad=True)
        p1 = torch.zeros(5, requires_grad=True)
        p2 = torch.zeros(2, requires_grad=True)  # no grad: skipped
        p0.grad = g0.clone()
        p1.grad = g1.clone()
        total = torch.nn.utils.clip_grad_norm_([p0, p1, p2], max_norm, norm_type)
        emit("total", "%.9g" % total.item())
        emit("grad", "g0", "f32", shape(g0), fmt_vals(p0.grad))
        emit("grad", "g1", "f32", shape(g1), fmt_vals(p1.grad))
        emit("end")


# ---------------------------------------------------------------------------------------------
# Schedulers: two groups (lr 0.1 and 0.01), 100 steps.

SCHED_STEPS = 100
S = torch.optim.lr_scheduler


def make_sched(opt, typ, kw):
    kw = dict(kw)
    if typ == "onecycle":
        if "anneal_strategy" in kw:
            kw["anneal_strategy"] = kw["anneal_strategy"]
        return S.OneCycleLR(opt, **kw)
    cls = {"steplr": S.StepLR, "multisteplr": S.MultiStepLR, "exponential": S.ExponentialLR,
           "cosine": S.CosineAnnealingLR, "warm_restarts": S.CosineAnnealingWarmRestarts,
           "linear": S.LinearLR, "constant": S.ConstantLR}[typ]
    return cls(opt, **kw)


def kv(kw):
    return " ".join("%s=%s" % (k, fnum(v)) for k, v in kw.items())


def sched_case(name, typ, kw, optimizer="sgd", subs=None):
    emit("case", name)
    emit("kind", "sched")
    emit("attr", "scheduler", typ)
    emit("attr", "optimizer", optimizer)
    for k, v in kw.items():
        emit("attr", k, fnum(v))
    params = [torch.zeros(2, requires_grad=True), torch.zeros(2, requires_grad=True)]
    groups = [{"params": [params[0]], "lr": 0.1}, {"params": [params[1]], "lr": 0.01}]
    if optimizer == "sgd":
        opt = torch.optim.SGD(groups, lr=0.1, momentum=0.9)
    else:
        opt = torch.optim.Adam(groups, lr=0.1)
    if typ == "sequential":
        children = []
        for st, skw in subs:
            emit("sub", st, kv(skw))
            children.append(make_sched(opt, st, skw))
        sched = S.SequentialLR(opt, children, milestones=kw["milestones"])
    else:
        sched = make_sched(opt, typ, kw)
    lrs = [[g["lr"] for g in opt.param_groups]]
    moms = []

    def mom():
        return [g["betas"][0] if optimizer == "adam" else g["momentum"] for g in opt.param_groups]

    moms.append(mom())
    for _ in range(SCHED_STEPS):
        opt.step()
        sched.step()
        lrs.append(list(sched.get_last_lr()))
        moms.append(mom())
    for g in range(2):
        emit("lrs", g, " ".join("%.17g" % l[g] for l in lrs))
    if typ == "onecycle":
        for g in range(2):
            emit("momentum", g, " ".join("%.17g" % m[g] for m in moms))
    emit("end")


def gen_sched():
    sched_case("sched_steplr", "steplr", {"step_size": 7, "gamma": 0.5})
    sched_case("sched_multisteplr", "multisteplr", {"milestones": [10, 30, 30, 60], "gamma": 0.5})
    sched_case("sched_exponential", "exponential", {"gamma": 0.95})
    sched_case("sched_cosine_t30", "cosine", {"T_max": 30, "eta_min": 0.001})
    sched_case("sched_cosine_t100", "cosine", {"T_max": 100})
    sched_case("sched_cosine_t7", "cosine", {"T_max": 7, "eta_min": 0.0005})
    sched_case("sched_warm_restarts_t10", "warm_restarts", {"T_0": 10})
    sched_case("sched_warm_restarts_t5_mult2", "warm_restarts", {"T_0": 5, "T_mult": 2, "eta_min": 0.001})
    sched_case("sched_onecycle_cos", "onecycle", {"max_lr": [1.0, 0.1], "total_steps": 100})
    sched_case("sched_onecycle_linear", "onecycle", {"max_lr": [0.5, 0.05], "total_steps": 120, "anneal_strategy": "linear"})
    sched_case("sched_onecycle_three_phase", "onecycle", {"max_lr": [1.0, 0.2], "total_steps": 100, "three_phase": True, "pct_start": 0.25, "div_factor": 10.0, "final_div_factor": 100.0})
    sched_case("sched_onecycle_adam", "onecycle", {"max_lr": [0.01, 0.001], "epochs": 10, "steps_per_epoch": 11, "base_momentum": 0.8, "max_momentum": 0.9}, optimizer="adam")
    sched_case("sched_linear_warmup", "linear", {"start_factor": 0.25, "end_factor": 1.0, "total_iters": 10})
    sched_case("sched_linear_decay", "linear", {"start_factor": 1.0, "end_factor": 0.1, "total_iters": 40})
    sched_case("sched_constant", "constant", {"factor": 0.5, "total_iters": 10})
    sched_case("sched_sequential_warmup_cosine", "sequential", {"milestones": [5]},
               subs=[("linear", {"start_factor": 0.1, "total_iters": 5}), ("cosine", {"T_max": 95})])
    sched_case("sched_sequential_constant_exp", "sequential", {"milestones": [3]},
               subs=[("constant", {"factor": 0.5, "total_iters": 3}), ("exponential", {"gamma": 0.9})])
    sched_case("sched_sequential_three", "sequential", {"milestones": [10, 40]},
               subs=[("linear", {"start_factor": 0.2, "total_iters": 10}), ("steplr", {"step_size": 10, "gamma": 0.5}),
                     ("cosine", {"T_max": 60, "eta_min": 0.001})])
    sched_case("sched_sequential_restarts", "sequential", {"milestones": [8]},
               subs=[("constant", {"factor": 0.3, "total_iters": 8}), ("warm_restarts", {"T_0": 10, "T_mult": 2})])

    # ReduceLROnPlateau with scripted metrics
    def metrics_seq(kind):
        out = []
        for i in range(SCHED_STEPS):
            if kind == "min":
                v = 1.0 / (1.0 + 0.2 * i) if i < 25 else 0.166 + 0.002 * math.sin(i)
                if 60 <= i < 64:
                    v = 0.1 - 0.01 * (i - 60)
            else:
                v = 0.5 + 0.01 * i if i < 30 else 0.8 + 0.05 * math.cos(i * 0.7)
            out.append(float("%.17g" % v))
        return out

    for name, kw, kind in [
        ("plateau_min_rel", {"mode": "min", "factor": 0.5, "patience": 3, "cooldown": 2}, "min"),
        ("plateau_min_abs_minlr", {"mode": "min", "factor": 0.3, "patience": 2, "threshold": 0.001, "threshold_mode": "abs", "min_lr": [0.02, 0.001]}, "min"),
        ("plateau_max_abs", {"mode": "max", "factor": 0.1, "patience": 5, "threshold": 0.01, "threshold_mode": "abs", "cooldown": 3, "eps": 1e-4}, "max"),
        ("plateau_max_rel", {"mode": "max", "factor": 0.7, "patience": 0, "threshold": 0.05}, "max"),
    ]:
        emit("case", "sched_" + name)
        emit("kind", "plateau")
        for k, v in kw.items():
            emit("attr", k, fnum(v))
        params = [torch.zeros(2, requires_grad=True), torch.zeros(2, requires_grad=True)]
        opt = torch.optim.SGD([{"params": [params[0]], "lr": 0.1}, {"params": [params[1]], "lr": 0.01}], lr=0.1)
        sched = S.ReduceLROnPlateau(opt, **kw)
        ms = metrics_seq(kind)
        emit("metrics", " ".join("%.17g" % m for m in ms))
        lrs = [[g["lr"] for g in opt.param_groups]]
        for m in ms:
            opt.step()
            sched.step(m)
            lrs.append([g["lr"] for g in opt.param_groups])
        for g in range(2):
            emit("lrs", g, " ".join("%.17g" % l[g] for l in lrs))
        emit("end")


def main():
    torch.set_num_threads(1)
    gen_losses()
    gen_optim()
    gen_clip()
    gen_sched()
    n = sum(1 for l in lines if l.startswith("case "))
    header = ["# Myelin golden fixtures for losses, optimizers, clipping and schedulers,",
              "# generated by tests/golden/gen_golden_optim.py (do not edit).",
              "# torch %s; format: see the generator's docstring" % torch.__version__,
              "# cases %d" % n]
    with open(OUT, "w") as f:
        f.write("\n".join(header + lines) + "\n")
    print("wrote %s: %d cases" % (OUT, n))


if __name__ == "__main__":
    main()
