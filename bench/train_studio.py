#!/usr/bin/python3
"""The studio's Train against `myelin train` on the same project: myelin_bench_studio_train (the
main window offscreen, live dock plotting, Model tab in front, capture as shipped, without the
bench's event-loop latency probe, which a user's studio does not run) and the CLI
with --max-steps, alternated, median of the rounds. Goal: the studio within 5% of the CLI.

The studio's figure is its throughput between the first and the last step the window saw; the
CLI's is its training loop's (first batch to last step, so it includes the first step's one-time
primitive set-up: a few hundred steps make that < 1%).

usage: /usr/bin/python3 bench/train_studio.py [--threads T] [--rounds R] [--steps S]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import blas_env
from train_cli import training_loop_rate  # the same parse of myelin's output

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--model", default="cnn")
    a = ap.parse_args()
    blas_env.apply()  # OpenBLAS's kernels for this CPU, as train_cli.py runs the CLI
    project = os.path.join(ROOT, "resources", "examples", f"fashion_{a.model}.myelin")
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), MYELIN_NUM_THREADS=str(a.threads),
               QT_QPA_PLATFORM="offscreen")
    studio, cli = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            out = subprocess.run([os.path.join(ROOT, "build", "bench", "myelin_bench_studio_train"),
                                  project, str(a.steps), "model", "no-probe"], env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if out.returncode != 0:
                sys.exit("train_studio.py: the studio bench failed:\n" + out.stderr[-2000:])
            studio.append(json.loads(out.stdout.strip().splitlines()[-1])["samples_per_second"])
            out = subprocess.run([os.path.join(ROOT, "build", "app", "myelin"), "train", project,
                                  "--max-steps", str(a.steps), "--threads", str(a.threads),
                                  "--store", os.path.join(tmp, f"cli-{r}.db")],
                                 env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            rate = training_loop_rate(out.stdout)
            if out.returncode not in (0, 3) or rate is None:  # 3: stopped at --max-steps
                sys.exit("train_studio.py: myelin train failed:\n" + out.stdout[-1000:] +
                         out.stderr[-1000:])
            cli.append(rate)
    s, c = statistics.median(studio), statistics.median(cli)
    print(json.dumps({"workload": f"train_studio_{a.model}", "studio": round(s, 1),
                      "cli": round(c, 1), "unit": "samples/s", "studio_vs_cli": round(s / c, 3),
                      "studio_rounds": [round(x) for x in studio],
                      "cli_rounds": [round(x) for x in cli], "steps": a.steps,
                      "threads": a.threads}))


if __name__ == "__main__":
    main()
