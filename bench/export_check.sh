#!/usr/bin/env bash
# The export check of issue 15 by hand: a Fashion-MNIST checkpoint exported as ONNX and PyTorch
# code, its classes on all 10,000 test images from OpenCV DNN, onnxruntime (when
# MYELIN_ONNXRUNTIME_NODE_MODULES names a node_modules with onnxruntime-node) and python3-torch
# counted against `myelin eval`'s, and python3-onnx's checker on the file.
#   bench/export_check.sh CHECKPOINT [BUILD_DIR]     (train one: build/app/myelin train
#   resources/examples/fashion_cnn.myelin --epochs 1)
set -euo pipefail
checkpoint=$1
build=${2:-build}
here=$(cd "$(dirname "$0")" && pwd)
images=/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/app/myelin" eval --checkpoint "$checkpoint" --predictions "$work/eval.csv" | head -1
"$build/app/myelin" export --checkpoint "$checkpoint" --format onnx -o "$work/model.onnx"
"$build/app/myelin" export --checkpoint "$checkpoint" --format pytorch -o "$work/model.py"
/usr/bin/python3 -c "import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True); print('python3-onnx', onnx.__version__, 'checker: OK')" "$work/model.onnx"
"$build/bench/myelin_export_agreement" "$work/model.onnx" "$images" "$work/eval.csv"
/usr/bin/python3 "$here/export_agreement_torch.py" "$work/model.py" "$checkpoint" "$images" "$work/eval.csv"
if [[ -n "${MYELIN_ONNXRUNTIME_NODE_MODULES:-}" ]]; then
    NODE_PATH=$MYELIN_ONNXRUNTIME_NODE_MODULES node "$here/export_agreement_ort.js" "$work/model.onnx" "$images" "$work/eval.csv"
else
    echo "onnxruntime: skipped (set MYELIN_ONNXRUNTIME_NODE_MODULES)"
fi
