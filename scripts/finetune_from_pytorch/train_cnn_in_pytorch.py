"""Step 1 of the fine-tuning example (run.sh): a small CNN trained in PyTorch on five of
Fashion-MNIST's ten classes (T-shirt/top, Trouser, Pullover, Dress, Coat), then exported to ONNX
as torch.onnx.export writes it (opset 17, a symbolic batch). Inputs are scaled to [0, 1], as
Myelin's ScaleTo01 does. With /usr/bin/python3 (python3-torch, dataset-fashion-mnist).
    python3 train_cnn_in_pytorch.py OUT_DIR [EPOCHS]"""
import gzip
import struct
import sys

import torch
from torch import nn

DATA = "/usr/share/datasets/fashion-mnist"
CLASSES = 5


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4 : 4 + 4 * dims])
    return torch.frombuffer(bytearray(data[4 + 4 * dims :]), dtype=torch.uint8).reshape(shape)


def split(kind):
    images = read_idx(f"{DATA}/{kind}-images-idx3-ubyte.gz").float().div(255).unsqueeze(1)
    labels = read_idx(f"{DATA}/{kind}-labels-idx1-ubyte.gz").long()
    keep = labels < CLASSES
    return images[keep], labels[keep]


def main(out_dir, epochs=2):
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 64), nn.ReLU(), nn.Linear(64, CLASSES))
    x, y = split("train")
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        model.train()
        order = torch.randperm(len(x))
        for start in range(0, len(x), 128):
            batch = order[start : start + 128]
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x[batch]), y[batch])
            loss.backward()
            optimizer.step()
        print(f"PyTorch epoch {epoch + 1}: loss {loss.item():.4f}")
    model.eval()
    tx, ty = split("t10k")
    with torch.no_grad():
        accuracy = (model(tx).argmax(1) == ty).float().mean().item()
    print(f"PyTorch: test accuracy on classes 0-{CLASSES - 1}: {accuracy:.4f} ({len(ty)} images)")
    torch.onnx.export(model, tx[:1], f"{out_dir}/cnn5.onnx", opset_version=17,
                      input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
    print(f"wrote {out_dir}/cnn5.onnx")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 2)
