#!/usr/bin/python3
"""The same workloads as bench_ops.cpp in PyTorch; prints {"workload": seconds_per_iteration}
(wall) and {"cpu_workload": ...} (this thread's CPU time, less disturbed by other processes).

usage: /usr/bin/python3 bench/torch_ops.py --threads T [--only add_4M,small_add_fwd_bwd]
       [--min-time S]    (needs: apt-get install python3-torch)
"""
import argparse, json, time
import torch


def timeit(fn, min_time=1.0, warmup=3):
    for _ in range(warmup):
        fn()
    n, start, cpu_start = 0, time.perf_counter(), time.thread_time()
    while True:
        fn()
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_time and n >= 5:
            return elapsed / n, (time.thread_time() - cpu_start) / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default="", help="comma-separated workloads (default: all)")
    ap.add_argument("--min-time", type=float, default=1.0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    x, y = torch.randn(4 << 20), torch.randn(4 << 20)
    s = torch.randn(4096, 1000)
    p, q = torch.randn(16, requires_grad=True), torch.randn(16, requires_grad=True)
    g = torch.ones(16)

    def small():
        (p + q).backward(g)

    workloads = {
        "sgemm_1024": lambda: torch.mm(a, b),
        "add_4M": lambda: torch.add(x, y),
        "mul_4M": lambda: torch.mul(x, y),
        "relu_4M": lambda: torch.relu(x),
        "softmax_4096x1000": lambda: torch.softmax(s, 1),
        "small_add_fwd_bwd": small,
    }
    only = [w for w in args.only.split(",") if w]
    out = {}
    for name, fn in workloads.items():
        if only and name not in only:
            continue
        out[name], out["cpu_" + name] = timeit(fn, args.min_time)
    out["torch_version"] = torch.__version__
    print(json.dumps(out))


if __name__ == "__main__":
    main()
