#!/usr/bin/python3
"""What a user meets: `myelin train` on the shipped Fashion-MNIST examples (capture, run store and
checkpoints as shipped) against the plain PyTorch loop of ../shared/bench/torch_baseline.py (same
model, batch, optimizer), side by side in one run, alternated, median of the rounds.

Both sides are timed the same way: the training loop of each epoch, first batch to last step
(myelin prints it as "training loop: N examples in S s"; torch_baseline.py as epoch_s), so model
building, data loading, validation, test and checkpoint writing are outside on both sides.

PyTorch runs at its best: with tcmalloc preloaded (Debian's libtcmalloc-minimal4, what Intel's
PyTorch CPU tuning guide recommends) and with glibc's malloc told to keep freed memory
(MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_); the faster of the two is the comparison and is
named in the output. PyTorch with glibc's defaults is printed beside it for reference. Myelin
runs with glibc's defaults: it has its own caching allocator. Where OpenBLAS does not recognise
the CPU, both sides run with OPENBLAS_CORETYPE set (blas_env.py; named in the output).

usage: /usr/bin/python3 bench/train_cli.py [--threads T] [--rounds R] [--models mlp,cnn]
       [--epochs-mlp E] [--epochs-cnn E] [--myelin build/app/myelin]
Prints one JSON line per model: {"workload": "train_cli_mlp", "myelin", "pytorch", "unit",
"ratio", "pytorch_config", ...}.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import blas_env

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BASELINE = os.path.join(ROOT, "..", "shared", "bench", "torch_baseline.py")
TCMALLOC = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"
GLIBC_KEEP = {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "67108864"}


def timed(cmd, env):
    """Runs cmd under /usr/bin/time; returns (stdout, peak RSS in MB)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        out = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", t.name] + cmd, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if out.returncode != 0:
            sys.exit(f"train_cli.py: {' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
        return out.stdout, int(t.read().split()[-1]) / 1024.0


def training_loop_rate(stdout):
    """Examples/s of the training loop `myelin train` printed; None when it printed none."""
    m = re.search(r"training loop: (\d+) examples in ([0-9.]+) s", stdout)
    return int(m.group(1)) / float(m.group(2)) if m else None


def run_myelin(binary, model, epochs, threads, store):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    project = os.path.join(ROOT, "resources", "examples", f"fashion_{model}.myelin")
    out, rss = timed([binary, "train", project, "--epochs", str(epochs), "--threads",
                      str(threads), "--store", store], env)
    rate = training_loop_rate(out)
    if rate is None:
        sys.exit("train_cli.py: myelin train printed no training-loop time:\n" + out[-2000:])
    return rate, rss


def run_torch(model, epochs, threads, config):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    if config == "tcmalloc":
        env["LD_PRELOAD"] = TCMALLOC
    elif config == "glibc-keep":
        env.update(GLIBC_KEEP)
    out, rss = timed(["/usr/bin/python3", BASELINE, "--model", model, "--epochs", str(epochs),
                      "--threads", str(threads)], env)
    return json.loads(out.strip().splitlines()[-1])["train_samples_per_s"], rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", default="mlp,cnn")
    ap.add_argument("--epochs-mlp", type=int, default=2)
    ap.add_argument("--epochs-cnn", type=int, default=1)
    ap.add_argument("--myelin", default=os.path.join(ROOT, "build", "app", "myelin"))
    a = ap.parse_args()
    blas = blas_env.apply()  # both sides: OpenBLAS's kernels for this CPU
    configs = (["tcmalloc"] if os.path.exists(TCMALLOC) else []) + ["glibc-keep", "glibc-default"]
    with tempfile.TemporaryDirectory() as tmp:
        for model in a.models.split(","):
            epochs = a.epochs_mlp if model == "mlp" else a.epochs_cnn
            ours, ours_rss = [], []
            theirs = {c: [] for c in configs}
            theirs_rss = {c: [] for c in configs}
            for r in range(a.rounds):  # alternated: every configuration meets the same machine
                store = os.path.join(tmp, f"{model}-{r}.db")
                s, rss = run_myelin(a.myelin, model, epochs, a.threads, store)
                ours.append(s)
                ours_rss.append(rss)
                for c in configs:
                    s, rss = run_torch(model, epochs, a.threads, c)
                    theirs[c].append(s)
                    theirs_rss[c].append(rss)
            med = {c: statistics.median(v) for c, v in theirs.items()}
            best = max((c for c in configs if c != "glibc-default"), key=lambda c: med[c])
            mine = statistics.median(ours)
            print(json.dumps({
                "workload": "train_cli_" + model, "myelin": round(mine, 1),
                "pytorch": round(med[best], 1), "unit": "samples/s",
                "ratio": round(mine / med[best], 2), "pytorch_config": best,
                "pytorch_glibc_default": round(med["glibc-default"], 1),
                "ratio_vs_glibc_default": round(mine / med["glibc-default"], 2),
                "myelin_rounds": [round(x) for x in ours],
                "pytorch_rounds": [round(x) for x in theirs[best]],
                "myelin_peak_rss_mb": round(statistics.median(ours_rss), 1),
                "pytorch_peak_rss_mb": round(statistics.median(theirs_rss[best]), 1),
                "epochs": epochs, "threads": a.threads, "rounds": a.rounds, **blas}), flush=True)


if __name__ == "__main__":
    main()
