#!/usr/bin/env bash
# The export check of issue 37 by hand, for any checkpoint (the word-language examples' included):
# the checkpoint exported as ONNX and PyTorch code, the examples `myelin eval` evaluates written
# out by myelin_export_inputs, and PyTorch (python3-torch) and onnxruntime (when
# MYELIN_ONNXRUNTIME_NODE_MODULES names a node_modules with onnxruntime-node) counted against
# `myelin eval`'s classes, with the largest logit difference.
#   bench/export_check_text.sh CHECKPOINT [BUILD_DIR]     (train one: build/app/myelin train
#   resources/examples/word_language_lstm.myelin --epochs 1)
set -euo pipefail
checkpoint=$1
build=${2:-build}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/app/myelin" eval --checkpoint "$checkpoint" --predictions "$work/eval.csv" | head -1
"$build/app/myelin" export --checkpoint "$checkpoint" --format onnx -o "$work/model.onnx"
"$build/app/myelin" export --checkpoint "$checkpoint" --format pytorch -o "$work/model.py"
"$build/bench/myelin_export_inputs" "$checkpoint" "$work/inputs.safetensors"
/usr/bin/python3 -c "import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True); print('python3-onnx', onnx.__version__, 'checker: OK')" "$work/model.onnx"
/usr/bin/python3 "$here/export_agreement_inputs.py" "$work/model.py" "$checkpoint" "$work/inputs.safetensors" "$work/eval.csv"
if [[ -n "${MYELIN_ONNXRUNTIME_NODE_MODULES:-}" ]]; then
    NODE_PATH=$MYELIN_ONNXRUNTIME_NODE_MODULES node "$here/export_agreement_inputs_ort.js" "$work/model.onnx" "$work/inputs.safetensors" "$work/eval.csv"
else
    echo "onnxruntime: skipped (set MYELIN_ONNXRUNTIME_NODE_MODULES)"
fi
