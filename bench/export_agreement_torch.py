# Runs an exported model's .py (myelin export --format pytorch) with its checkpoint on the
# Fashion-MNIST test images and counts how often its class is the one `myelin eval` predicted.
# usage: python3 export_agreement_torch.py MODEL.py CHECKPOINT t10k-images.gz eval.csv
import csv, gzip, importlib.util, sys
import numpy as np
import torch

spec = importlib.util.spec_from_file_location("cnn", sys.argv[1])
cnn = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cnn)
model = cnn.load_checkpoint(sys.argv[2])
with gzip.open(sys.argv[3], "rb") as f:
    data = f.read()
images = torch.from_numpy(np.frombuffer(data, dtype=np.uint8, offset=16).copy()).reshape(-1, *cnn.INPUT_SHAPE)
with open(sys.argv[4]) as f:
    rows = list(csv.reader(f))[1:]
expected = torch.tensor([max(range(len(r) - 1), key=lambda c: float(r[c + 1])) for r in rows])
with torch.no_grad():
    predicted = model(cnn.preprocess(images)).argmax(dim=1)
print(f"PyTorch {torch.__version__}: {int((predicted == expected).sum())} of {len(expected)} test images give the class myelin eval predicts")
