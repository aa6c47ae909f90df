"""An exported PyTorch model (the .py `myelin export --format pytorch` writes) on the examples
`myelin_export_inputs` wrote, against `myelin eval --predictions`: how many examples get the same
class, and the largest logit difference. With /usr/bin/python3 (python3-torch).
    python3 export_agreement_inputs.py MODEL.py CHECKPOINT INPUTS.safetensors EVAL.csv"""
import csv
import importlib.util
import sys

import torch


def main(model_py, checkpoint, inputs_path, eval_csv):
    spec = importlib.util.spec_from_file_location("exported", model_py)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.load_checkpoint(checkpoint)
    inputs = module.read_safetensors(inputs_path)[0]["inputs"]
    with open(eval_csv) as f:
        rows = list(csv.reader(f))[1:]
    expected = torch.tensor([[float(v) for v in row[1:]] for row in rows])
    outputs = []
    with torch.no_grad():
        for start in range(0, inputs.size(0), 500):
            outputs.append(model(inputs[start : start + 500]).float())
    got = torch.cat(outputs)
    agree = int((got.argmax(1) == expected.argmax(1)).sum())
    diff = float((got - expected).abs().max())
    print(f"PyTorch {torch.__version__}: {agree} of {len(rows)} examples give the class myelin eval "
          f"predicts; largest logit difference {diff:.3g}")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(*sys.argv[1:])
