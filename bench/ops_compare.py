#!/ usr / bin / python3
"""bench_ops.cpp against torch_ops.py, alternated round by round, medians per workload.

Prints one JSON line per workload: Myelin's and PyTorch's wall and CPU (this thread's) time per
iteration, and the ratios PyTorch / Myelin (> 1: Myelin is faster). With --before DIR, a second
Myelin run per round loads libmyelin_core from DIR (a copy of the library before a change), so
before, after and PyTorch alternate in the same rounds.

usage: /usr/bin/python3 bench/ops_compare.py [--threads 1] [--rounds 3] [--min-time 1]
           [--only add_4M,mul_4M,relu_4M,small_add_fwd_bwd] [--before /tmp/lib_before]
"""
import argparse, json, os, statistics, subprocess, sys

import blas_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TCMALLOC = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"


def run_myelin(binary, threads, only, min_time, libdir=None):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MYELIN_NUM_THREADS=str(threads))
    if libdir:
        env["LD_LIBRARY_PATH"] = libdir
    pattern = "|".join("BM_" + w + "$" for w in only) if only else "."
    cmd = [binary, "--benchmark_format=json", f"--benchmark_min_time={min_time}",
           f"--benchmark_filter=({pattern.replace('$', '/')})"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    res = {}
    for b in json.loads(out)["benchmarks"]:
        name = b["name"].split("/")[0][3:]
        s = scale[b["time_unit"]]
        res[name] = (b["real_time"] * s, b["cpu_time"] * s)
    return res


def run_torch(threads, only, min_time):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    config = "glibc"
    if os.path.exists(TCMALLOC):  # PyTorch at its best, as bench/run.sh runs it
        env["LD_PRELOAD"] = TCMALLOC
        config = "tcmalloc"
    cmd = ["/usr/bin/python3", os.path.join(ROOT, "bench/torch_ops.py"), "--threads", str(threads),
           "--min-time", str(min_time), "--only", ",".join(only)]
    t = json.loads(subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout)
    return {
w: (t[w], t["cpu_" + w]) for w in only if w in t}, config


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--only", default="add_4M,mul_4M,relu_4M,small_add_fwd_bwd")
    ap.add_argument("--binary", default=os.path.join(ROOT, "build/bench/myelin_bench_ops"))
    ap.add_argument("--before", default="", help="folder holding the old libmyelin_core.so.*")
    args = ap.parse_args()
    blas = blas_env.apply()  # both sides: OpenBLAS's kernels for this CPU
    only = [w for w in args.only.split(",") if w]
    sides = {"myelin": [], "before": [], "pytorch": []}
    config = ""
    for _ in range(args.rounds):
        sides["myelin"].append(run_myelin(args.binary, args.threads, only, args.min_time))
        if args.before:
            sides["before"].append(
                run_myelin(args.binary, args.threads, only, args.min_time, args.before))
        res, config = run_torch(args.threads, only, args.min_time)
        sides["pytorch"].append(res)
    load = os.getloadavg()[0]
    for w in only:
        line = {"workload": w, "threads": args.threads, "rounds": args.rounds,
                "pytorch_config": config, "load_after": round(load, 1)}
        med = {}
        for side, rounds in sides.items():
            if not rounds:
                continue
            wall = statistics.median(r[w][0] for r in rounds)
            cpu = statistics.median(r[w][1] for r in rounds)
            med[side] = (wall, cpu)
            line[side + "_us"] = round(wall * 1e6, 3)
            line[side + "_cpu_us"] = round(cpu * 1e6, 3)
        for side in ("myelin", "before"):
            if side in med:
                line[side + "_ratio_wall"] = round(med["pytorch"][0] / med[side][0], 2)
                line[side + "_ratio_cpu"] = round(med["pytorch"][1] / med[side][1], 2)
        line.update(blas)
        print(json.dumps(line))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
