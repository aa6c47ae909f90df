#!/usr/bin/env python3
"""PyTorch on the same GPU: the anchor of the GPU kit's bench (scripts/gpu-kit.sh run).

The plain training loop of the shipped Fashion-MNIST MLP and CNN (the models of
resources/examples/fashion_{mlp,cnn}.myelin: Adam lr 1e-3, cross-entropy) at PyTorch's best on a
GPU: the whole training set on the device as float32 in [0, 1], a new permutation per epoch,
no host read of the loss inside the loop, TF32 off for matmul and cuDNN (as Myelin's default).
float32 and AMP (torch.autocast float16 + GradScaler). One JSON line per model, batch and
precision: samples/s from the end of the 5th step to the last, the device synchronised at both.

    python3 bench/torch_gpu_step.py --data DIR [--batches 128,1024] [--steps-mlp N] [--steps-cnn N]
"""
import argparse
import gzip
import json
import os
import struct
import time

import torch
import torch.nn as nn


def idx(path):
    """An IDX file as a uint8 tensor, raw or gzip-compressed (PATH or PATH.gz), as Myelin's
    reader takes it (no numpy: the GPU image's Python may not have it)."""
    if not os.path.exists(path):
        path += ".gz"
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        data = bytearray(f.read())
    magic, n = struct.unpack(">II", data[:8])
    if magic == 2051:
        rows, cols = struct.unpack(">II", data[8:16])
        return torch.frombuffer(data, dtype=torch.uint8, offset=16).reshape(n, 1, rows, cols)
    return torch.frombuffer(data, dtype=torch.uint8, offset=8)


def make_model(name):
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                             nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def samples_per_second(name, x, y, batch, steps, amp):
    torch.manual_seed(0)
    model = make_model(name).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    scaler = torch.amp.GradScaler("cuda", enabled=amp)
    n = x.shape[0]
    per_epoch = n // batch
    steps = min(steps, per_epoch)  # one epoch at most, full batches, as Myelin's side
    perm = torch.randperm(n, device="cuda")
    start = None
    for step in range(1, steps + 1):
        b = perm[(step - 1) * batch:step * batch]
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
            loss = loss_fn(model(x[b]), y[b])
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        if step == 5:
            torch.cuda.synchronize()
            start = time.perf_counter()
    torch.cuda.synchronize()
    return (steps - 5) * batch / (time.perf_counter() - start), steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--batches", default="128,1024")
    ap.add_argument("--steps-mlp", type=int, default=200)
    ap.add_argument("--steps-cnn", type=int, default=60)
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True  # PyTorch at its best: cuDNN picks by timing
    images = idx(os.path.join(a.data, "train-images-idx3-ubyte"))
    labels = idx(os.path.join(a.data, "train-labels-idx1-ubyte"))
    x = (images.to(torch.float32) / 255.0).cuda()
    y = labels.to(torch.int64).cuda()
    held_out = x.shape[0] // 10  # Myelin's examples hold out 10% for validation
    x = x[:x.shape[0] - held_out]
    y = y[:y.shape[0] - held_out]
    for name in ("mlp", "cnn"):
        for batch in (int(b) for b in a.batches.split(",")):
            for amp in (False, True):
                steps = a.steps_mlp if name == "mlp" else a.steps_cnn
                rate, timed = samples_per_second(name, x, y, batch, steps, amp)
                print(json.dumps({"framework": "pytorch-" + torch.__version__,
                                  "device": torch.cuda.get_device_name(0),
                                  "model": name, "batch": batch,
                                  "precision": "float16" if amp else "float32",
                                  "steps": timed, "samples_per_s": round(rate, 1)}), flush=True)


if __name__ == "__main__":
    main()
