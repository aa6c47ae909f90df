#!/usr/bin/env bash
# Bring a model from PyTorch and fine-tune it in Myelin (README, "Bring a model from PyTorch"):
#   1. PyTorch trains a small CNN on five Fashion-MNIST classes and exports it to ONNX;
#   2. `myelin import` turns it into a project and a checkpoint of Myelin layers;
#   3. the project's head is replaced by a 10-class one and the rest frozen;
#   4. `myelin train` fine-tunes it on all ten classes, starting from the imported weights.
# Needs /usr/bin/python3 with python3-torch, dataset-fashion-mnist and a built tree.
#   scripts/finetune_from_pytorch/run.sh [BUILD_DIR] [OUT_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
out=${2:-$(mktemp -d)}
mkdir -p "$out"
/usr/bin/python3 "$here/train_cnn_in_pytorch.py" "$out"
"$build/app/myelin" import "$out/cnn5.onnx" -o "$out/imported.myelin"
/usr/bin/python3 "$here/make_finetune_project.py" "$out/imported.myelin" "$root/resources/examples" \
    "$out/finetune.myelin"
"$build/app/myelin" check "$out/finetune.myelin" | grep -E "parameters|OK"
# The imported project names its weights (training.init_weights): the copy keeps them.
"$build/app/myelin" train "$out/finetune.myelin" --store "$out/runs.sqlite" | grep -E "^(warning|initial|epoch [0-9]+/[0-9]+ step [0-9]+:|test:)"
echo "files in $out"
