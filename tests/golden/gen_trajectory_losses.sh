#!/usr/bin/env bash
# Records the training losses of the first steps of the shipped Fashion-MNIST examples (their
# seed, capture as shipped, 2 threads) into tests/golden/trajectory_losses.txt, which
# tests/core/test_trajectory.cpp compares within float32 reordering (1e-5 relative per step) on
# any machine. Speed work must not move them beyond that; re-record only for an intended
# numerical change, and say so in the commit.
#
#   tests/golden/gen_trajectory_losses.sh [path/to/myelin]   (default build/app/myelin)
#
# The 'cpu' line names the machine's kernels (vector ISA, OpenBLAS core) for the reader; the test
# does not compare it: bits are compared only between runs the test makes itself.
set -euo pipefail
cd "$(dirname "$0")/../.."
myelin=${1:-build/app/myelin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=tests/golden/trajectory_losses.txt
{
  echo "# Exact losses (IEEE doubles to 17 digits: bit-exact) per optimizer step of the shipped examples; written by"
  echo "# tests/golden/gen_trajectory_losses.sh with $($myelin --version | head -1)."
  isa=$("$myelin" --version | sed -n 's/.*CPU ([0-9]* threads*, \([^)]*\)).*/\1/p')
  core=$(/usr/bin/python3 -c 'import ctypes; l = ctypes.CDLL("libopenblas.so.0")
l.openblas_get_corename.restype = ctypes.c_char_p; print(l.openblas_get_corename().decode())')
  echo "cpu $isa $core"
} >"$out.tmp"
for model in mlp cnn; do
  steps=$([ "$model" = mlp ] && echo 40 || echo 8)
  "$myelin" train "resources/examples/fashion_$model.myelin" --max-steps "$steps" --threads 2 \
    --store "$tmp/runs.db" --checkpoint-dir "$tmp/ck-$model" >/dev/null || [ $? -eq 3 ]
  echo "case fashion_$model $steps" >>"$out.tmp"
  sqlite3 "$tmp/runs.db" "SELECT printf('%!.17g', value) FROM metrics WHERE key = 'loss' AND run = \
    (SELECT MAX(run) FROM metrics) ORDER BY step" >>"$out.tmp"
done
mv "$out.tmp" "$out"
