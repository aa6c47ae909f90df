#!/usr/bin/env python3
"""Replays a Myelin training run of a word-language project in PyTorch on exactly Myelin's data
(issue 18: is the Transformer's accuracy gap to PyTorch a bug or noise?).

`myelin_word_language_trace` (bench/word_language_trace.cpp) trains the project with Myelin's
Trainer and writes its initial weights, its train / validation / test splits as token ids, every
step's batch (indices into the training split), loss and gradient norm, and snapshots of the
weights. This script rebuilds the model in PyTorch with Myelin's names (word_language_graph.py),
loads the initial weights strictly, and trains on the same batches in the same order with the
project's optimizer, twice: in float32 (what Myelin computes in) and in float64 (the reference:
how far float32 rounding alone carries a trajectory). It prints, per step, the loss on both
sides, and at the end:
  - the first step whose loss differs from PyTorch float32's by more than --tolerance (relative),
  - Myelin's and PyTorch float32's distance from the float64 trajectory (loss and, at each
    snapshot, the weights: the largest ||a - b|| / ||b|| over the tensors): a correct float32 implementation drifts from float64 as much as
    PyTorch float32 does,
  - the mean training loss of each epoch on each side (after the trajectories part, a bug
    would show as a systematic difference),
  - with a whole run (--steps 0), the test accuracy of both on Myelin's test split.

usage: python3 bench/word_language_trace.py [PROJECT] [--build DIR] [--seed S] [--steps N]
           [--threads N] [--snapshots K,...] [--trace DIR] [--tolerance T] [--no-double]
           [--print-every N] [--save-losses FILE]
--trace DIR reuses a trace written before (the tool is not run).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from word_language_graph import build_model, make_optimizer  # noqa: E402
from word_language_parity import read_safetensors  # noqa: E402

EXAMPLES = os.path.join(HERE, "..", "resources", "examples")


def read_split(path):
    rows = [[int(v) for v in line.split(",")] for line in open(path) if line.strip()]
    ids = torch.tensor([r[1:] for r in rows], dtype=torch.int64)
    return ids, torch.tensor([r[0] for r in rows], dtype=torch.int64)


def read_steps(path):
    steps = []
    for line in open(path):
        v = line.strip().split(",")
        steps.append(dict(step=int(v[0]), epoch=int(v[1]), loss=float(v[2]),
                          grad_norm=float(v[3]), rows=torch.tensor([int(i) for i in v[4:]])))
    return steps


def replay(project, trace, steps, dtype, snapshots):
    """PyTorch's run from Myelin's initial weights on Myelin's batches: per-step losses and
    gradient norms, the weights at the snapshot steps, the model."""
    model = build_model(project)
    initial, _ = read_safetensors(os.path.join(trace, "initial.safetensors"))
    model.load_state_dict(initial, strict=True)
    model.to(dtype)
    training = project["training"]
    optimizer = make_optimizer(training["optimizer"], model.parameters())
    clip = training.get("clip_grad_norm")
    x, y = read_split(os.path.join(trace, "train.csv"))
    losses, norms, weights = [], [], {}
    model.train()
    for s in steps:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x[s["rows"]]), y[s["rows"]])
        loss.backward()
        norms.append(torch.sqrt(sum((p.grad.double() ** 2).sum() for p in model.parameters()
                                    if p.grad is not None)).item())
        if clip:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        losses.append(loss.item())
        if s["step"] in snapshots:
            weights[s["step"]] = {k: v.detach().double().clone()
                                  for k, v in model.state_dict().items()}
    return losses, norms, weights, model


def accuracy(model, trace, split):
    path = os.path.join(trace, split + ".csv")
    if not os.path.exists(path):
        return None
    x, y = read_split(path)
    model.eval()
    with torch.no_grad():
        return (model(x).argmax(1) == y).double().mean().item()


def weight_distance(a, b):
    """The largest relative distance ||a - b|| / ||b|| over the tensors, and that tensor."""
    return max(((a[k] - b[k]).norm().item() / max(b[k].norm().item(), 1e-30), k) for k in b)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("project", nargs="?",
                        default=os.path.join(EXAMPLES, "word_language_transformer.myelin"))
    parser.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=200, help="0: the project's whole run")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--snapshots", default="1,2,10,50,100,200")
    parser.add_argument("--trace", help="a trace directory written before")
    parser.add_argument("--tolerance", type=float, default=1e-4,
                        help="relative loss difference counted as a divergence")
    parser.add_argument("--no-double", action="store_true", help="skip the float64 replay")
    parser.add_argument("--print-every", type=int, default=20)
    parser.add_argument("--save-losses", help="write every step's losses (JSON) here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    project = json.load(open(args.project))
    snapshots = {int(k) for k in args.snapshots.split(",") if k}

    with tempfile.TemporaryDirectory() as scratch:
        trace = args.trace
        if not trace:
            trace = os.path.join(scratch, "trace")
            tool = os.path.join(args.build, "bench", "myelin_word_language_trace")
            started = time.time()
            subprocess.run([tool, "--project", args.project, "-o", trace, "--seed",
                            str(args.seed), "--steps", str(args.steps), "--threads",
                            str(args.threads), "--snapshots", args.snapshots], check=True)
            print(f"Myelin: {time.time() - started:.0f} s")
        steps = read_steps(os.path.join(trace, "steps.csv"))
        result = dict(line.split() for line in open(os.path.join(trace, "result.txt")))
        myelin_loss = [s["loss"] for s in steps]
        myelin_norm = [s["grad_norm"] for s in steps]
        started = time.time()
        t32, n32, w32, model32 = replay(project, trace, steps, torch.float32, snapshots)
        print(f"PyTorch float32 replay: {time.time() - started:.0f} s")
        t64 = n64 = w64 = model64 = None
        if not args.no_double:
            t64, n64, w64, model64 = replay(project, trace, steps, torch.float64, snapshots)

        def rel(a, b):
            return abs(a - b) / max(abs(b), 1e-12)

        print("step   Myelin loss  PyTorch f32   rel diff   grad norm rel diff"
              + ("   |Myelin-f64|  |f32-f64| (loss, rel)" if t64 else ""))
        first = None
        for i, s in enumerate(steps):
            d = rel(myelin_loss[i], t32[i])
            if first is None and d > args.tolerance:
                first = s["step"]
            if (i + 1) % args.print_every == 0 or i < 5 or s["step"] == first:
                line = (f"{s['step']:5d}  {myelin_loss[i]:.7f}  {t32[i]:.7f}  {d:9.2e}  "
                        f"{rel(myelin_norm[i], n32[i]):9.2e}")
                if t64:
                    line += f"  {rel(myelin_loss[i], t64[i]):12.2e}  {rel(t32[i], t64[i]):9.2e}"
                print(line)
        print(f"first step with a relative loss difference > {args.tolerance:g}: "
              f"{first if first is not None else 'none'} (of {len(steps)})")
        if t64:
            # Rounding alone: how far each float32 trajectory is from the float64 one.
            for lo, hi in ((0, 50), (50, 200), (200, len(steps))):
                if lo >= len(steps):
                    break
                hi = min(hi, len(steps))

                def median(values):
                    values = sorted(values)
                    return values[len(values) // 2]
                print(f"steps {lo + 1}-{hi}: median relative loss distance from PyTorch f64: "
                      f"Myelin {median([rel(myelin_loss[i], t64[i]) for i in range(lo, hi)]):.2e}, "
                      f"PyTorch f32 {median([rel(t32[i], t64[i]) for i in range(lo, hi)]):.2e}")
        # Once the trajectories have parted, a bug would show as a systematic difference: the
        # mean training loss per epoch on each side.
        epochs = sorted({s["epoch"] for s in steps})
        for e in epochs:
            idx = [i for i, s in enumerate(steps) if s["epoch"] == e]

            def mean(values):
                return sum(values[i] for i in idx) / len(idx)
            line = (f"epoch {e + 1}: mean training loss Myelin {mean(myelin_loss):.4f}, "
                    f"PyTorch f32 {mean(t32):.4f}")
            if t64:
                line += f", PyTorch f64 {mean(t64):.4f}"
            print(line)
        if args.save_losses:
            with open(args.save_losses, "w") as f:
                json.dump({"epoch": [s["epoch"] for s in steps], "myelin": myelin_loss,
                           "torch_f32": t32, "torch_f64": t64}, f)
        for k in sorted(snapshots):
            path = os.path.join(trace, f"step_{k}.safetensors")
            if k not in w32 or not os.path.exists(path):
                continue
            mine, _ = read_safetensors(path)
            mine = {n: v.double() for n, v in mine.items()}
            d, name = weight_distance(mine, w32[k])
            line = f"weights after step {k}: ||Myelin - PyTorch f32|| / ||.|| {d:.2e} ({name})"
            if w64:
                line += (f"; Myelin - f64 {weight_distance(mine, w64[k])[0]:.2e}, "
                         f"PyTorch f32 - f64 {weight_distance(w32[k], w64[k])[0]:.2e}")
            print(line)
        if "test_accuracy" in result:
            line = (f"test accuracy on Myelin's test split: Myelin "
                    f"{100 * float(result['test_accuracy']):.2f}, PyTorch f32 "
                    f"{100 * accuracy(model32, trace, 'test'):.2f}")
            if model64 is not None:
                line += f", PyTorch f64 {100 * accuracy(model64, trace, 'test'):.2f}"
            print(line)


if __name__ == "__main__":
    main()
