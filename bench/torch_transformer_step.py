#!/usr/bin/python3
"""PyTorch side of bench/bench_transformer.cpp: the same Transformer-encoder training step
(2 layers, d_model 128, 4 heads, dim_feedforward 512, batch first, seq 64, batch 32, mean over
the steps, linear head to 10 classes, cross-entropy, Adam), timed the same way (3 warm-up steps,
--steps timed, median of --rounds). Prints one JSON line. --workload mha times only one
MultiheadAttention's forward and backward on the same input (myelin_bench_transformer's too).

usage: /usr/bin/python3 bench/torch_transformer_step.py [--workload step|mha] [--steps N]
                                                        [--rounds N] [--threads N] [--dropout P]
"""
import argparse, json, resource, time

import torch
import torch.nn as nn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--workload", default="step")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(128, 4, 512, a.dropout, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2)
    head = nn.Linear(128, 10)
    opt = torch.optim.Adam(list(encoder.parameters()) + list(head.parameters()))
    lossf = nn.CrossEntropyLoss()
    x = torch.randn(32, 64, 128)
    y = torch.randint(0, 10, (32,))

    mha = nn.MultiheadAttention(128, 4, dropout=a.dropout, batch_first=True)
    grad_out = torch.randn(32, 64, 128)

    def step():
        if a.workload == "mha":
            mha.zero_grad()
            mha(x, x, x, need_weights=False)[0].backward(grad_out)
            return
        opt.zero_grad()
        loss = lossf(head(encoder(x).mean(1)), y)
        loss.backward()
        opt.step()

    per_step, cpu_per_step = [], []  # CPU time moves less than wall time on a loaded machine
    for _ in range(a.rounds):
        for _ in range(3):
            step()
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(a.steps):
            step()
        cpu_per_step.append((time.process_time() - c0) / a.steps)
        per_step.append((time.perf_counter() - t0) / a.steps)
    per_step.sort()
    cpu_per_step.sort()
    med = per_step[len(per_step) // 2]
    name = "mha_fwd_bwd" if a.workload == "mha" else "train_step_transformer"
    print(json.dumps({"workload": name, "ms_per_step": round(1000 * med, 3),
                      "train_samples_per_s": round(32 / med, 1),
                      "min_ms": round(1000 * per_step[0], 3), "max_ms": round(1000 * per_step[-1], 3),
                      "cpu_ms_per_step": round(1000 * cpu_per_step[len(cpu_per_step) // 2], 3),
                      "dropout": a.dropout, "threads": a.threads,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}))


if __name__ == "__main__":
    main()
