#!/usr/bin/env python3
"""Checks that a Myelin checkpoint of the word-language examples loads into the same model in
PyTorch by name and predicts the same.

For each project (default: resources/examples/word_language_lstm.myelin and
word_language_transformer.myelin):
  1. `myelin train PROJECT --max-steps N` writes a checkpoint (a safetensors file: the model's
     state_dict under its own names, then the optimizer's under optimizer.state.*);
  2. `myelin_word_language_dump` runs the checkpoint on the project's test split the way
     `myelin eval` does and writes each example's token ids and logits;
  3. the model is rebuilt in PyTorch with Myelin's module names (word_language_graph.py), the
     checkpoint's model tensors are loaded with load_state_dict(strict=True), and the same ids
     run through it in eval mode.
  4. the gradient of the mean cross-entropy over the first --gradient-examples examples (train
     mode) is computed on both sides and compared parameter by parameter.
Prints the prediction agreement, the largest |logit difference| and the largest gradient
difference (relative to the parameter's largest gradient) per project and exits 1 when a
prediction differs (beyond a near-tie), a logit by more than --tolerance or a gradient by more
than --grad-tolerance.

usage: python3 bench/word_language_parity.py [PROJECT...] [--build DIR] [--steps N]
                                             [--examples N] [--tolerance T] [--threads N]
                                             [--gradient-examples N] [--grad-tolerance T]
"""
import argparse
import csv
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from word_language_graph import build_model  # noqa: E402

EXAMPLES = os.path.join(HERE, "..", "resources", "examples")
DTYPES = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64, "BF16": torch.bfloat16,
          "F16": torch.float16, "U8": torch.uint8, "BOOL": torch.bool}


def read_safetensors(path):
    """name -> tensor, and the metadata (the format: an 8-byte little-endian header length, a
    JSON header, then the tensors' bytes)."""
    with open(path, "rb") as f:
        raw = f.read()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + length])
    data = raw[8 + length:]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        dtype = DTYPES[entry["dtype"]]
        flat = torch.frombuffer(bytearray(data[begin:end]), dtype=dtype) if end > begin else \
            torch.zeros(0, dtype=dtype)
        tensors[name] = flat.reshape(entry["shape"]).clone()
    return tensors, header.get("__metadata__", {})


def run(command):
    r = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return r.returncode, r.stdout


def check(project_path, args, workdir):
    name = os.path.splitext(os.path.basename(project_path))[0]
    myelin = os.path.join(args.build, "app", "myelin")
    dump = os.path.join(args.build, "bench", "myelin_word_language_dump")
    code, out = run([myelin, "train", project_path, "--store", os.path.join(workdir, "runs.sqlite"),
                     "--checkpoint-dir", os.path.join(workdir, name), "--max-steps",
                     str(args.steps), "--threads", str(args.threads)])
    checkpoints = re.findall(r"^checkpoint: (.+)$", out, re.M)
    if code not in (0, 3) or not checkpoints:
        sys.exit(f"{name}: myelin train failed (exit {code}):\n{out}")
    checkpoint = checkpoints[-1].strip()
    table = os.path.join(workdir, name + ".csv")
    gradients = os.path.join(workdir, name + "_gradients.safetensors")
    code, out = run([dump, "--checkpoint", checkpoint, "--project", project_path, "--limit",
                     str(args.examples), "--threads", str(args.threads), "-o", table,
                     "--gradients", gradients, "--gradient-examples",
                     str(args.gradient_examples)])
    if code != 0:
        sys.exit(f"{name}: myelin_word_language_dump failed (exit {code}):\n{out}")

    project = json.load(open(project_path))
    steps = project["data"]["source"]["max_length"]
    rows = [[float(v) for v in row] for row in csv.reader(open(table))]
    ids = torch.tensor([[int(v) for v in row[1:1 + steps]] for row in rows], dtype=torch.int64)
    targets = torch.tensor([int(row[0]) for row in rows], dtype=torch.int64)
    myelin_logits = torch.tensor([row[1 + steps:] for row in rows], dtype=torch.float64)

    tensors, _ = read_safetensors(checkpoint)
    state = {k: v for k, v in tensors.items() if not k.startswith("optimizer.state.")}
    model = build_model(project)
    model.load_state_dict(state, strict=True)  # raises on any missing or unexpected name
    model.eval()
    with torch.no_grad():
        torch_logits = model(ids).double()

    # The gradients of one training step's loss (mean cross-entropy over the first examples, in
    # train mode: the example projects have no dropout, so it is deterministic).
    model.train()
    model.zero_grad()
    count = min(args.gradient_examples, len(rows))
    nn.functional.cross_entropy(model(ids[:count]), targets[:count]).backward()
    myelin_grads, _ = read_safetensors(gradients)
    worst, worst_name = 0.0, ""
    for param_name, p in model.named_parameters():
        g = myelin_grads[param_name].double()
        scale = max(g.abs().max().item(), 1e-12)
        rel = (p.grad.double() - g).abs().max().item() / scale
        if rel > worst:
            worst, worst_name = rel, param_name

    diff = (torch_logits - myelin_logits).abs().max().item()
    mine, theirs = myelin_logits.argmax(1), torch_logits.argmax(1)
    agree = (mine == theirs).float().mean().item()
    # A differing prediction counts only where Myelin's two best logits are not a near-tie.
    top2 = myelin_logits.topk(2, dim=1).values
    near_tie = (top2[:, 0] - top2[:, 1]) <= 2 * args.tolerance
    real_disagreements = int(((mine != theirs) & ~near_tie).sum().item())
    ok = real_disagreements == 0 and diff <= args.tolerance and worst <= args.grad_tolerance
    print(f"{name}: {len(state)} tensors loaded by name (strict); {len(rows)} test examples; "
          f"predictions agree {100 * agree:.2f}%; max |logit difference| {diff:.3g}; "
          f"gradients on {count} examples: max |difference| / max |gradient| {worst:.3g} "
          f"({worst_name}) -> {'OK' if ok else 'MISMATCH'}")
    return ok


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("projects", nargs="*",
                        default=[os.path.join(EXAMPLES, "word_language_lstm.myelin"),
                                 os.path.join(EXAMPLES, "word_language_transformer.myelin")])
    parser.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    parser.add_argument("--steps", type=int, default=60, help="training steps before the check")
    parser.add_argument("--examples", type=int, default=1000)
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--gradient-examples", type=int, default=64)
    parser.add_argument("--grad-tolerance", type=float, default=1e-4,
                        help="largest |difference| / max |gradient| per parameter")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as workdir:
        results = [check(os.path.abspath(p), args, workdir) for p in args.projects]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
