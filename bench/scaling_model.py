#!/usr/bin/env python3
"""Cost model of one data-parallel training step (docs/scaling.md).

One step on N ranks = compute (forward + backward + optimizer, as one rank measures it here) plus
the part of the gradient allreduce that backward does not hide. Gradients are averaged in buckets
(reverse parameter order, --bucket-mb, as `myelin train` under MPI does); a bucket's ring
allreduce starts when its last gradient is ready (gradients are taken as ready at an even rate
over backward) and after the previous bucket's, on one channel:

    T_ring(bytes, N) = 2 (N-1)/N * bytes / bandwidth + 2 (N-1) * latency
    start_i  = max(ready_i, finish_{i-1}),  finish_i = start_i + T_ring(bucket_i, N)
    step(N)  = t_compute + max(0, finish_last - t_backward)

Throughput is N x batch / step(N), efficiency t_compute / step(N).

Inputs are measured, not assumed: `--measure` runs `myelin train PROJECT --max-steps K --threads T`
for each model and reads the training loop's time and the parameter count; or give them as
--model NAME:PARAMS:STEP_MS:BATCH.

    /usr/bin/python3 bench/scaling_model.py --measure --myelin build/app/myelin --threads 1
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

MODELS = [
    ("fashion_cnn", "resources/examples/fashion_cnn.myelin"),
    ("fashion_resnet", "resources/examples/fashion_resnet.myelin"),
    ("mlp_25m", "bench/mlp_25m.myelin"),
]
RANKS = [2, 4, 8, 16, 32, 64, 128, 256]
LINKS_GBPS = [10, 25, 100]


def ring_seconds(ranks, nbytes, gbps, latency_s):
    bandwidth = gbps * 1e9 / 8
    return 2 * (ranks - 1) / ranks * nbytes / bandwidth + 2 * (ranks - 1) * latency_s


def step_seconds(model, ranks, gbps, latency_s, backward_share, bucket_bytes):
    """The step time on `ranks` ranks and the communication time left exposed after backward."""
    total = model["params"] * 4
    t_compute = model["step_s"]
    t_backward = backward_share * t_compute
    finish, done = 0.0, 0
    while done < total:
        size = min(bucket_bytes, total - done)
        done += size
        ready = t_backward * done / total
        finish = max(ready, finish) + ring_seconds(ranks, size, gbps, latency_s)
    exposed = max(0.0, finish - t_backward)
    return t_compute + exposed, exposed


def measure(myelin, project, steps, threads):
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [os.path.abspath(myelin), "train", os.path.abspath(project), "--max-steps", str(steps),
             "--threads", str(threads), "--dist", "none",
             "--store", os.path.join(tmp, "runs.sqlite")],
            capture_output=True, text=True, cwd=tmp)
    text = out.stdout + out.stderr
    params = re.search(r"model: (\d+) parameters", text)
    loop = re.search(r"training loop: (\d+) examples in ([0-9.]+) s", text)
    if not params or not loop:
        sys.exit(f"could not read the training time of {project}:\n{text}")
    examples, seconds = int(loop.group(1)), float(loop.group(2))
    return int(params.group(1)), seconds / steps, examples // steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--measure", action="store_true", help="measure each model's step here")
    ap.add_argument("--myelin", default="build/app/myelin")
    ap.add_argument("--threads", type=int, default=1, help="compute threads per rank")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--model", action="append", default=[],
                    help="NAME:PARAMS:STEP_MS:BATCH (instead of --measure)")
    ap.add_argument("--backward-share", type=float, default=0.6,
                    help="backward's share of the step (FLOPs: 2 of 3, less the optimizer)")
    ap.add_argument("--latency-us", type=float, default=30.0, help="per message, per hop")
    ap.add_argument("--bucket-mb", type=float, default=25.0)
    args = ap.parse_args()

    models = []
    for spec in args.model:
        name, params, step_ms, batch = spec.split(":")
        models.append(dict(name=name, params=int(params), step_s=float(step_ms) / 1e3,
                           batch=int(batch)))
    if args.measure:
        for name, project in MODELS:
            params, step_s, batch = measure(args.myelin, project, args.steps, args.threads)
            models.append(dict(name=name, params=params, step_s=step_s, batch=batch))
    if not models:
        sys.exit("give --measure or --model")

    bucket_bytes = args.bucket_mb * 1e6
    latency = args.latency_us * 1e-6
    print(f"inputs: {args.threads} thread(s) per rank, latency {args.latency_us:g} us, "
          f"buckets {args.bucket_mb:g} MB, backward {args.backward_share:g} of the step")
    for m in models:
        print(f"{m['name']}: {m['params']:,} parameters = {m['params'] * 4 / 1e6:.2f} MB of "
              f"gradients, step {m['step_s'] * 1e3:.1f} ms at batch {m['batch']} per rank "
              f"({m['batch'] / m['step_s']:,.0f} samples/s on one rank)")
    for m in models:
        print(f"\n{m['name']}: samples/s (efficiency)\n")
        print("| ranks | " + " | ".join(f"{g} Gb/s" for g in LINKS_GBPS) + " |")
        print("|---|" + "---|" * len(LINKS_GBPS))
        for n in RANKS:
            cells = []
            for g in LINKS_GBPS:
                step, _ = step_seconds(m, n, g, latency, args.backward_share, bucket_bytes)
                cells.append(f"{n * m['batch'] / step:,.0f} ({m['step_s'] / step:.0%})")
            print(f"| {n} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
