#!/usr/bin/python3
"""PyTorch side of bench/run.sh's train_step workloads: the models of
../shared/bench/torch_baseline.py, batch 128, Adam, forward + loss + backward + step, timed over
--steps steps after a 3-step warm-up on real Fashion-MNIST batches. Prints samples/s, peak RSS and
the process CPU time per step (steadier than wall time on a shared machine).

usage: /usr/bin/python3 bench/torch_train_step.py --model mlp|cnn --steps S --threads T
"""
import argparse, gzip, json, resource, struct, time
import numpy as np
import torch, torch.nn as nn

ROOT = "/usr/share/datasets/fashion-mnist/"


def idx(path):
    with gzip.open(ROOT + path, "rb") as f:
        data = f.read()
    magic, n = struct.unpack(">II", data[:8])
    if magic == 2051:
        r, c = struct.unpack(">II", data[8:16])
        return np.frombuffer(data, np.uint8, offset=16).reshape(n, 1, r, c)
    return np.frombuffer(data, np.uint8, offset=8)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="mlp")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    x = torch.from_numpy(idx("train-images-idx3-ubyte.gz").astype(np.float32) / 255.0)
    y = torch.from_numpy(idx("train-labels-idx1-ubyte.gz").astype(np.int64))
    if a.model == "mlp":
        model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                              nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    else:
        model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    lossf = nn.CrossEntropyLoss()
    perm = torch.randperm(x.shape[0])
    t0, c0 = time.perf_counter(), time.process_time()
    for s in range(a.steps + 3):
        if s == 3:
            t0, c0 = time.perf_counter(), time.process_time()
        b = perm[s * a.batch:(s + 1) * a.batch]
        opt.zero_grad()
        loss = lossf(model(x[b]), y[b])
        loss.backward()
        opt.step()
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(json.dumps({"model": a.model, "train_samples_per_s": a.steps * a.batch / elapsed,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
                      "cpu_ms_per_step": cpu * 1e3 / a.steps}))


if __name__ == "__main__":
    main()
