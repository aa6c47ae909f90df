#!/usr/bin/python3
"""Inference as a user meets it (issue 42): `myelin eval` on the shipped fashion_cnn and
word_language_lstm at batch 256, against PyTorch's eval-mode no_grad loop over the same network
with the same weights and onnxruntime on our own exported ONNX file, side by side in one run,
alternated, median of the rounds.

What is timed:
  * myelin: the process's own "evaluated in S s" (`myelin eval`): reading the test split from
    disk, its transforms, the forward passes, the metrics and every example's outputs. The
    process start, the checkpoint's load and the model's build are outside.
  * PyTorch: the no_grad loop over the test split already in memory as float tensors (or token
    ids): forward and argmax only. The reading and the conversion are outside.
  * onnxruntime (node, onnxruntime-node; MYELIN_ONNXRUNTIME_NODE_MODULES names its node_modules):
    session.run on `myelin export --format onnx`'s file over the test images already in memory
    as float32 (the word-language model: as many random token ids as the test split has), batch
    256; the session's creation is outside. Skipped (and said) without onnxruntime-node.
So the comparison is conservative against Myelin: its figure includes the data loading the
others leave out. PyTorch runs with tcmalloc preloaded when Debian's libtcmalloc-minimal4 is
there (what Intel's PyTorch CPU guide recommends), else glibc's malloc; named in the output.

The checkpoints come from a short `myelin train --max-steps` (the speed of a forward does not
depend on how well the weights are trained); the accuracy printed is the checkpoint's.

usage: /usr/bin/python3 bench/eval_inference.py [--myelin build/app/myelin] [--threads 2]
                                                [--rounds 3] [--batch 256] [--steps 30]
needs: apt-get install python3-torch dataset-fashion-mnist wamerican wngerman ...
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
EXAMPLES = os.path.join(ROOT, "resources", "examples")
TCMALLOC = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode not in (0, 3):  # 3: --max-steps stopped the run, as asked
        sys.exit("eval_inference.py: %s failed:\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    return r.stdout + r.stderr


def prepared_project(name, work, batch):
    project = json.load(open(os.path.join(EXAMPLES, name + ".myelin")))
    project["data"]["batch_size"] = batch
    path = os.path.join(work, name + ".myelin")
    json.dump(project, open(path, "w"))
    return project, path


def train_checkpoint(myelin, path, work, steps, threads):
    out = run([myelin, "train", path, "--store", os.path.join(work, "runs.sqlite"),
               "--checkpoint-dir", os.path.join(work, "ck-" + os.path.basename(path)),
               "--max-steps", str(steps), "--threads", str(threads)])
    checkpoints = re.findall(r"^checkpoint: (.+)$", out, re.M)
    if not checkpoints:
        sys.exit("eval_inference.py: no checkpoint from myelin train:\n" + out)
    return checkpoints[-1].strip()


def myelin_eval(myelin, path, checkpoint, threads):
    out = run([myelin, "eval", path, "--checkpoint", checkpoint, "--threads", str(threads)])
    rate = float(re.search(r"evaluated in [0-9.]+ s \(([0-9.]+) examples/s\)", out).group(1))
    accuracy = float(re.search(r"accuracy=([0-9.]+)", out).group(1))
    examples = int(re.search(r"\((\d+) examples\)", out).group(1))
    return rate, accuracy, examples


def torch_env(threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    if os.path.exists(TCMALLOC):
        env["LD_PRELOAD"] = TCMALLOC
    return env


# The PyTorch side runs in a child process (tcmalloc must be preloaded at its start): it prints
# one examples/s figure per round.
TORCH_CHILD = r'''
import json, os, sys, time
import numpy as np
import torch
sys.path.insert(0, HERE)
torch.set_num_threads(THREADS)
from word_language_parity import read_safetensors
state, _ = read_safetensors(CHECKPOINT)
state = {k: v for k, v in state.items() if not k.startswith("optimizer.")}
if KIND == "cnn":
    from torch import nn
    import quant_ptq
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
    model.load_state_dict(state, strict=True)
    x = torch.from_numpy(quant_ptq.idx("t10k-images-idx3-ubyte.gz").astype(np.float32) / 255.0)
else:
    from word_language_graph import build_model
    project = json.load(open(PROJECT))
    model = build_model(project)
    model.load_state_dict(state, strict=True)
    vocab = [n for n in project["model"]["nodes"]
             if n["kind"] == "Embedding"][0]["attrs"]["num_embeddings"]
    g = torch.Generator().manual_seed(1)
    x = torch.randint(1, vocab, (EXAMPLES, project["data"]["source"]["max_length"]), generator=g)
model.eval()
with torch.no_grad():
    model(x[:BATCH])  # warm-up
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for i in range(0, len(x), BATCH):
            model(x[i:i + BATCH]).argmax(1)
        print(len(x) / (time.perf_counter() - start), flush=True)
'''


def torch_rates(kind, checkpoint, project_path, examples, threads, batch, rounds):
    code = TORCH_CHILD
    for key, value in {"HERE": repr(HERE), "THREADS": str(threads), "CHECKPOINT": repr(checkpoint),
                       "KIND": repr(kind), "PROJECT": repr(project_path),
                       "EXAMPLES": str(examples), "BATCH": str(batch),
                       "ROUNDS": str(rounds)}.items():
        code = code.replace(key, value)
    r = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True, text=True,
                       env=torch_env(threads))
    if r.returncode != 0:
        sys.exit("eval_inference.py: the PyTorch side failed:\n" + r.stderr[-3000:])
    return [float(v) for v in r.stdout.split()]


# images: Fashion-MNIST's test images as float32 [b, 1, 28, 28]; or "tokens:N:L:V": N examples of
# L random token ids below V as int64 [b, L] (the word-language models).
ORT_CHILD = r'''
const ort = require("onnxruntime-node");
const fs = require("fs"), zlib = require("zlib");
(async () => {
  const [model, images, batch, rounds] = process.argv.slice(1);
  const B = Number(batch);
  let n, width, make;
  if (images.startsWith("tokens:")) {
    const [, count, length, vocab] = images.split(":").map(Number);
    n = count; width = length;
    const all = new BigInt64Array(n * width);
    let seed = 1;
    for (let i = 0; i < all.length; ++i) {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      all[i] = BigInt(1 + (seed % (vocab - 1)));
    }
    make = (s, b) => new ort.Tensor("int64", all.subarray(s * width, (s + b) * width), [b, width]);
  } else {
    const raw = zlib.gunzipSync(fs.readFileSync(images));
    n = raw.readUInt32BE(4); width = 784;
    const all = new Float32Array(n * width);
    for (let i = 0; i < n * width; ++i) all[i] = raw[16 + i] / 255;
    make = (s, b) => new ort.Tensor("float32", all.subarray(s * width, (s + b) * width), [b, 1, 28, 28]);
  }
  const session = await ort.InferenceSession.create(model);
  const name = session.inputNames[0];
  for (let r = 0; r < Number(rounds); ++r) {
    const start = process.hrtime.bigint();
    for (let s = 0; s < n; s += B) await session.run({ [name]: make(s, Math.min(B, n - s)) });
    console.log(n / (Number(process.hrtime.bigint() - start) / 1e9));
  }
  console.error("onnxruntime " + ort.env.versions.common);
})();
'''


def ort_rates(onnx_path, threads, batch, rounds, inputs=None):
    modules = os.environ.get("MYELIN_ONNXRUNTIME_NODE_MODULES", "/tmp/ort/node_modules")
    if not os.path.isdir(os.path.join(modules, "onnxruntime-node")):
        return None, "onnxruntime-node not found (MYELIN_ONNXRUNTIME_NODE_MODULES)"
    env = dict(os.environ, NODE_PATH=modules, OMP_NUM_THREADS=str(threads))
    images = inputs or "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"
    r = subprocess.run(["node", "-e", ORT_CHILD, onnx_path, images, str(batch), str(rounds)],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        return None, "onnxruntime failed: " + r.stderr[-500:]
    return [float(v) for v in r.stdout.split()], r.stderr.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--myelin", default=os.path.join(ROOT, "build", "app", "myelin"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=30)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="myelin-inference-")
    allocator = "tcmalloc" if os.path.exists(TCMALLOC) else "glibc malloc"

    for name, kind in (("fashion_cnn", "cnn"), ("word_language_lstm", "lstm")):
        project, path = prepared_project(name, work, a.batch)
        checkpoint = train_checkpoint(a.myelin, path, work, a.steps, a.threads)
        mine, accuracy = [], None
        theirs = []
        ort, ort_note = None, ""
        onnx_path = os.path.join(work, name + ".onnx")
        run([a.myelin, "export", "--checkpoint", checkpoint, "--format", "onnx", "-o", onnx_path])
        ort_inputs = None
        if kind == "lstm":
            vocab = [n for n in project["model"]["nodes"]
                     if n["kind"] == "Embedding"][0]["attrs"]["num_embeddings"]
            ort_inputs = "tokens:%d:%d:%d"  # filled in once the test split's size is known
        for _ in range(a.rounds):  # alternated: one round of each at a time
            rate, accuracy, examples = myelin_eval(a.myelin, path, checkpoint, a.threads)
            mine.append(rate)
            theirs += torch_rates(kind, checkpoint, path, examples, a.threads, a.batch, 1)
            inputs = ort_inputs % (examples, project["data"]["source"]["max_length"],
                                   vocab) if ort_inputs else None
            got, ort_note = ort_rates(onnx_path, a.threads, a.batch, 1, inputs)
            if got is not None:
                ort = (ort or []) + got
        row = {"workload": "eval_" + name, "batch": a.batch, "threads": a.threads,
               "unit": "examples/s", "myelin": round(statistics.median(mine)),
               "myelin_rounds": [round(v) for v in mine], "accuracy": accuracy,
               "pytorch": round(statistics.median(theirs)),
               "pytorch_rounds": [round(v) for v in theirs], "pytorch_allocator": allocator,
               "ratio_vs_pytorch": round(statistics.median(mine) / statistics.median(theirs), 2)}
        if ort:
            row["onnxruntime"] = round(statistics.median(ort))
            row["onnxruntime_rounds"] = [round(v) for v in ort]
            row["ratio_vs_onnxruntime"] = round(statistics.median(mine) / statistics.median(ort),
                                                2)
        row["onnxruntime_note"] = ort_note
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
