#!/usr/bin/python3
"""int8 post-training quantization of fashion_cnn, side by side with PyTorch (issue 38).

One run, same machine, same thread count:
  1. `myelin train` a copy of resources/examples/fashion_cnn.myelin (validation_fraction 0, so
     the training split is Fashion-MNIST's own order and both tools calibrate on the same
     examples: the first --batches batches of the training file);
  2. `myelin quantize` it (static, per-channel weights, --observer for the activations);
  3. `myelin eval` of the float and the int8 checkpoint: accuracy and examples/s;
  4. PyTorch's eager int8 model of the same network from the same float weights: fused
     conv+relu / linear+relu, the 'onednn' engine where this torch has it (else 'fbgemm'),
     per-channel weight qconfig with the same activation observer, calibrated on the same
     batches; its accuracy and examples/s over the same test set and batch size.
Sizes on disk: the float weights (myelin export --format safetensors) against the int8
checkpoint.

usage: /usr/bin/python3 bench/quant_ptq.py [--myelin build/app/myelin] [--epochs 2]
                                           [--batches 32] [--observer histogram] [--threads 2]
needs: apt-get install python3-torch dataset-fashion-mnist
"""
import argparse, gzip, json, os, re, struct, subprocess, sys, tempfile, time

import numpy as np
import torch
import torch.nn as nn
import torch.ao.quantization as tq

ROOT = "/usr/share/datasets/fashion-mnist/"
HERE = os.path.dirname(os.path.abspath(__file__))


def idx(path):
    with gzip.open(ROOT + path, "rb") as f:
        data = f.read()
    magic, n = struct.unpack(">II", data[:8])
    if magic == 2051:
        r, c = struct.unpack(">II", data[8:16])
        return np.frombuffer(data, np.uint8, offset=16).reshape(n, 1, r, c)
    return np.frombuffer(data, np.uint8, offset=8)


def read_safetensors(path):
    dtypes = {"F32": np.float32, "I64": np.int64, "U8": np.uint8, "I8": np.int8}
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, e in header.items():
        if name == "__metadata__" or e["dtype"] not in dtypes:
            continue
        b, end = e["data_offsets"]
        out[name] = np.frombuffer(data[b:end], dtypes[e["dtype"]]).reshape(e["shape"])
    return out


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    return r.stdout + r.stderr


class Net(nn.Module):
    """fashion_cnn, fused where PyTorch's eager quantization fuses."""

    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
            nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        return self.dequant(self.features(self.quant(x)))


def eval_torch(model, x, y, batch):
    correct, start = 0, time.perf_counter()
    with torch.no_grad():
        for i in range(0, len(x), batch):
            correct += (model(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum().item()
    seconds = time.perf_counter() - start
    return correct / len(x), len(x) / seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--myelin", default=os.path.join(HERE, "..", "build", "app", "myelin"))
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batches", type=int, default=32)
    ap.add_argument("--observer", default="histogram")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--qat-epochs", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    work = tempfile.mkdtemp(prefix="myelin-quant-")
    project = json.load(open(os.path.join(HERE, "..", "resources", "examples",
                                          "fashion_cnn.myelin")))
    project["data"]["validation_fraction"] = 0.0
    project["training"]["epochs"] = a.epochs
    project_path = os.path.join(work, "fashion_cnn.myelin")
    json.dump(project, open(project_path, "w"))
    batch = project["data"]["batch_size"]

    # 1-3: Myelin.
    run([a.myelin, "train", project_path, "--store", os.path.join(work, "runs.sqlite"),
         "--checkpoint-dir", os.path.join(work, "ck"), "--threads", str(a.threads)])
    ck = sorted(os.listdir(os.path.join(work, "ck")))[-1]
    ck = os.path.join(work, "ck", ck)
    int8 = os.path.join(work, "int8.safetensors")
    quantize_out = run([a.myelin, "quantize", project_path, "--checkpoint", ck, "-o", int8,
                        "--calibration-batches", str(a.batches), "--observer", a.observer])
    weights = os.path.join(work, "float.safetensors")
    run([a.myelin, "export", "--checkpoint", ck, "--format", "safetensors", "-o", weights])

    def myelin_eval(path):
        out = run([a.myelin, "eval", "--checkpoint", path, "--threads", str(a.threads)])
        acc = float(re.search(r"accuracy=([0-9.]+)", out).group(1))
        rate = float(re.search(r"\(([0-9.]+) examples/s\)", out).group(1))
        return acc, rate

    qat = os.path.join(work, "qat.safetensors")
    qat_out = run([a.myelin, "quantize", project_path, "--checkpoint", ck, "-o", qat,
                   "--calibration-batches", str(a.batches), "--qat-epochs", str(a.qat_epochs),
                   "--qat-lr", "1e-4"])
    f_acc, f_rate = myelin_eval(ck)
    q_acc, q_rate = myelin_eval(int8)
    qat_acc, qat_rate = myelin_eval(qat)

    # 4: PyTorch's eager int8 model from the same float weights.
    engines = torch.backends.quantized.supported_engines
    engine = "onednn" if "onednn" in engines else "fbgemm"
    torch.backends.quantized.engine = engine
    state = read_safetensors(weights)
    net = Net()
    net.features.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in state.items()
                                  if not k.startswith("optimizer.")})
    net.eval()
    xtr = torch.from_numpy(idx("train-images-idx3-ubyte.gz").astype(np.float32) / 255.0)
    xte = torch.from_numpy(idx("t10k-images-idx3-ubyte.gz").astype(np.float32) / 255.0)
    yte = torch.from_numpy(idx("t10k-labels-idx1-ubyte.gz").astype(np.int64))
    t_float_acc, t_float_rate = eval_torch(net, xte, yte, batch)
    observers = {"histogram": tq.HistogramObserver.with_args(reduce_range=False),
                 "minmax": tq.MinMaxObserver.with_args(reduce_range=False),
                 "moving-average": tq.MovingAverageMinMaxObserver.with_args(reduce_range=False)}
    net.qconfig = tq.QConfig(activation=observers[a.observer],
                             weight=tq.default_per_channel_weight_observer)
    tq.fuse_modules(net.features, [["0", "1"], ["3", "4"], ["7", "8"]], inplace=True)
    tq.prepare(net, inplace=True)
    with torch.no_grad():
        for i in range(a.batches):
            net(xtr[i * batch:(i + 1) * batch])
    tq.convert(net, inplace=True)
    t_acc, t_rate = eval_torch(net, xte, yte, batch)

    float_bytes, int8_bytes = os.path.getsize(weights), os.path.getsize(int8)
    rows = [
        ("myelin float32", f_acc, f_rate),
        ("myelin int8 (%s, %d batches)" % (a.observer, a.batches), q_acc, q_rate),
        ("myelin int8 QAT (%d epoch, lr 1e-4)" % a.qat_epochs, qat_acc, qat_rate),
        ("torch %s float32" % torch.__version__, t_float_acc, t_float_rate),
        ("torch int8 eager (%s)" % engine, t_acc, t_rate),
    ]
    print("fashion_cnn, %d epochs, %d threads, batch %d" % (a.epochs, a.threads, batch))
    for name, acc, rate in rows:
        print("  %-34s accuracy %.4f   %8.0f examples/s" % (name, acc, rate))
    print("  accuracy drop (myelin int8): PTQ %.2f pt, QAT %.2f pt" %
          (100 * (f_acc - q_acc), 100 * (f_acc - qat_acc)))
    print("  size: float weights %d bytes, int8 checkpoint %d bytes (%.3fx)" %
          (float_bytes, int8_bytes, int8_bytes / float_bytes))
    print("  int8 / float32 throughput (myelin): %.2fx" % (q_rate / f_rate))
    print("  myelin int8 / torch int8 throughput: %.2fx" % (q_rate / t_rate))
    print("quantize said:\n  " + "\n  ".join(quantize_out.strip().splitlines()))


if __name__ == "__main__":
    main()
