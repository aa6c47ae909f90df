#!/usr/bin/python3
"""The same workloads as bench_ops.cpp in PyTorch; prints {"workload": seconds_per_iteration}.

usage: /usr/bin/python3 bench/torch_ops.py --threads T    (needs: apt-get install python3-torch)
"""
import argparse, json, time
import torch


def timeit(fn, min_time=1.0, warmup=3):
    for _ in range(warmup):
        fn()
    n, start = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_time and n >= 5:
            return elapsed / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
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

    out = {
        "sgemm_1024": timeit(lambda: torch.mm(a, b)),
        "add_4M": timeit(lambda: torch.add(x, y)),
        "mul_4M": timeit(lambda: torch.mul(x, y)),
        "relu_4M": timeit(lambda: torch.relu(x)),
        "softmax_4096x1000": timeit(lambda: torch.softmax(s, 1)),
        "small_add_fwd_bwd": timeit(small),
        "torch_version": torch.__version__,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
