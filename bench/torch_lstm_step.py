#!/usr/bin/python3
"""PyTorch side of bench/bench_lstm.cpp: an LSTM (input 64, hidden 256) over batch 64 x 32 steps,
a Linear(256, 10) on the last step's output, cross-entropy, backward, Adam. Alternating rounds of
--steps steps after a 3-step warm-up; prints the median ms per step (wall and the process's
CPU time) as one JSON line.

usage: /usr/bin/python3 bench/torch_lstm_step.py [--steps S] [--rounds R] [--threads T]
           [--layers L] [--bidirectional] [--gru | --rnn]
"""
import argparse, json, time
import torch, torch.nn as nn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--bidirectional", action="store_true")
    ap.add_argument("--gru", action="store_true")
    ap.add_argument("--rnn", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    B, T, I, H, C = 64, 32, 64, 256, 10
    cls, kind = (nn.GRU, "gru") if a.gru else (nn.RNN, "rnn") if a.rnn else (nn.LSTM, "lstm")
    rnn = cls(I, H, num_layers=a.layers, bidirectional=a.bidirectional)
    D = 2 if a.bidirectional else 1
    head = nn.Linear(D * H, C)
    opt = torch.optim.Adam(list(rnn.parameters()) + list(head.parameters()), lr=1e-3)
    lossf = nn.CrossEntropyLoss()
    x = torch.randn(T, B, I)
    y = torch.randint(0, C, (B,))

    def step():
        opt.zero_grad()
        out, _ = rnn(x)
        loss = lossf(head(out[T - 1]), y)
        loss.backward()
        opt.step()

    for _ in range(3):
        step()
    ms, cpu_ms = [], []
    for _ in range(a.rounds):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(a.steps):
            step()
        ms.append((time.perf_counter() - t0) * 1000.0 / a.steps)
        cpu_ms.append((time.process_time() - c0) * 1000.0 / a.steps)
    ms.sort()
    cpu_ms.sort()
    median = ms[len(ms) // 2]
    print(json.dumps({"bench": "torch_train_step_" + kind, "layers": a.layers,
                      "bidirectional": a.bidirectional, "threads": a.threads,
                      "ms_per_step": round(median, 3),
                      "cpu_ms_per_step": round(cpu_ms[len(cpu_ms) // 2], 3), "samples_per_s": round(B * 1000.0 / median, 1)}))


if __name__ == "__main__":
    main()
