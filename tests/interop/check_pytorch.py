#!/usr/bin/python3
"""Checks, by hand, that Myelin checkpoints and PyTorch interoperate (needs Debian's
python3-torch and dataset-fashion-mnist; not run in CI).

1. Myelin -> PyTorch: trains resources/examples/fashion_cnn.myelin for a few steps with the
   built `myelin` CLI, loads the checkpoint's weights (read with plain json + numpy) into the
   same CNN written in PyTorch with load_state_dict(strict=True), and compares the two models'
   outputs on the whole Fashion-MNIST test set (from `myelin eval --predictions`).
2. PyTorch -> Myelin: saves the PyTorch model's state_dict (perturbed) as safetensors, fine-tunes
   from it with `myelin train --init-weights` and a frozen first convolution, and checks that the
   frozen layer still holds PyTorch's weights in Myelin's checkpoint.

    /usr/bin/python3 tests/interop/check_pytorch.py [--myelin build/app/myelin] [--steps 50]

Prints what it compares and exits 1 on a mismatch.
"""
import argparse
import gzip
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from read_safetensors import read_safetensors, to_torch  # noqa: E402


def fashion_cnn():
    # The model of resources/examples/fashion_cnn.myelin (= shared/bench/torch_baseline.py's).
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name, t in tensors.items():
        a = t.detach().contiguous().numpy().astype("<f4")
        b = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def run(cmd):
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--myelin", default=os.path.join(ROOT, "build/app/myelin"))
    ap.add_argument("--steps", type=int, default=50)
    a = ap.parse_args()
    project = os.path.join(ROOT, "resources/examples/fashion_cnn.myelin")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "runs.sqlite")
        ckdir = os.path.join(tmp, "ck")
        subprocess.run([a.myelin, "train", project, "--store", store, "--checkpoint-dir", ckdir,
                        "--max-steps", str(a.steps)], check=False)  # exit 3: stopped at max-steps
        ckpts = sorted(f for f in os.listdir(ckdir) if f.endswith(".safetensors"))
        ckpt = os.path.join(ckdir, ckpts[-1])
        tensors, metadata = read_safetensors(ckpt)
        state = {k: v for k, v in to_torch(tensors).items() if not k.startswith("optimizer.")}
        model = fashion_cnn()
        model.load_state_dict(state, strict=True)  # raises on any missing/unexpected/shape issue
        print(f"1. {os.path.basename(ckpt)}: load_state_dict(strict=True) OK ({len(state)} tensors)")

        preds = os.path.join(tmp, "preds.csv")
        run([a.myelin, "eval", project, "--checkpoint", ckpt, "--predictions", preds])
        ours = np.loadtxt(preds, delimiter=",", skiprows=1)
        target, our_logits = ours[:, 0].astype(np.int64), ours[:, 1:]
        # The same test images, scaled to [0, 1] as the project's ScaleTo01 transform does.
        with gzip.open("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz") as f:
            images = np.frombuffer(f.read()[16:], np.uint8).reshape(-1, 1, 28, 28)
        x = torch.from_numpy(images.astype(np.float32) / 255.0)
        model.eval()
        with torch.no_grad():
            theirs = torch.cat([model(x[i:i + 1000]) for i in range(0, len(x), 1000)]).numpy()
        diff = np.abs(theirs - our_logits).max()
        agree = (theirs.argmax(1) == our_logits.argmax(1)).mean()
        acc = (theirs.argmax(1) == target).mean()
        print(f"   outputs on {len(x)} test images: max |difference| {diff:.2e}, "
              f"predictions agree {agree * 100:.2f}%, PyTorch accuracy {acc:.4f}")
        if diff > 1e-3 or agree < 0.999:
            failures += 1
            print("   MISMATCH")

        # 2. PyTorch -> Myelin with a frozen first layer.
        torch.manual_seed(0)
        pretrained = fashion_cnn()
        weights = os.path.join(tmp, "pretrained.safetensors")
        write_safetensors(weights, pretrained.state_dict())
        with open(project) as f:
            p = json.load(f)
        p["model"]["nodes"][1]["frozen"] = True  # the first Conv2d
        frozen_project = os.path.join(tmp, "frozen.myelin")
        with open(frozen_project, "w") as f:
            json.dump(p, f)
        ck2 = os.path.join(tmp, "ck2")
        subprocess.run([a.myelin, "train", frozen_project, "--store", store, "--checkpoint-dir", ck2,
                        "--max-steps", "5", "--init-weights", weights], check=False)
        last = sorted(f for f in os.listdir(ck2) if f.endswith(".safetensors"))[-1]
        after, _ = read_safetensors(os.path.join(ck2, last))
        same = np.array_equal(after["0.weight"], pretrained.state_dict()["0.weight"].numpy())
        moved = not np.array_equal(after["7.weight"], pretrained.state_dict()["7.weight"].numpy())
        print(f"2. PyTorch weights -> Myelin: frozen 0.weight unchanged: {same}; "
              f"trainable 7.weight changed: {moved}")
        if not (same and moved):
            failures += 1
    print("OK" if failures == 0 else f"{failures} check(s) FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
