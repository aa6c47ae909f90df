#!/usr/bin/env bash
# Runs the core micro-benchmarks and the same ops in PyTorch with the same thread count, and
# prints one JSON line per workload: {"workload", "myelin", "pytorch", "unit", "ratio"}
# (ratio > 1: Myelin is faster). usage: bench/run.sh [threads]   (default: nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-$(nproc)}
benches=(myelin_bench_ops myelin_train_fashion myelin_bench_store myelin_bench_graph
  myelin_bench_data myelin_bench_capture myelin_bench_amp myelin_bench_lstm
  myelin_bench_transformer myelin_bench_gpu)
for b in "${benches[@]}"; do
  if [ ! -x "build/bench/$b" ]; then
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DMYELIN_BUILD_BENCH=ON >/dev/null
    cmake --build build --target "${benches[@]}" -j"$(nproc)" >/dev/null
    break
  fi
done
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "bench/run.sh: PyTorch is needed for the comparison: apt-get install python3-torch" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# PyTorch at its best, as its CPU tuning guide configures it: tcmalloc preloaded when Debian's
# libtcmalloc-minimal4 is installed, else glibc told to keep freed memory (its default mmaps and
# unmaps every activation above 128 KiB: a page fault per 4 KiB every step). Myelin runs with
# glibc's defaults (it caches its own blocks). glibc-default PyTorch figures are printed beside.
tcmalloc=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
if [ -e "$tcmalloc" ]; then
  torch_config=tcmalloc
  torch_best=(env LD_PRELOAD="$tcmalloc")
else
  torch_config=glibc-keep
  torch_best=(env MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=67108864)
fi
# Both sides: OpenBLAS's kernels for this CPU where it does not recognise the model (blas_env.py).
blas_override=$(/usr/bin/python3 bench/blas_env.py 2>"$tmp/blas.json")
if [ -n "$blas_override" ]; then export "${blas_override?}"; fi
echo "{\"pytorch_config\": \"$torch_config\", \"openblas\": $(cat "$tmp/blas.json")}"
OMP_NUM_THREADS=$threads MYELIN_NUM_THREADS=$threads build/bench/myelin_bench_ops \
  --benchmark_format=json --benchmark_min_time=1 >"$tmp/myelin.json" 2>/dev/null
OMP_NUM_THREADS=$threads "${torch_best[@]}" /usr/bin/python3 bench/torch_ops.py \
  --threads "$threads" >"$tmp/torch.json"
# Training steps (batch 128, Adam), each framework and model in its own process so peak RSS is
# the workload's own.
steps_mlp=${MYELIN_BENCH_STEPS_MLP:-400}
steps_cnn=${MYELIN_BENCH_STEPS_CNN:-100}
for model in mlp cnn; do
  steps=$([ "$model" = mlp ] && echo "$steps_mlp" || echo "$steps_cnn")
  OMP_NUM_THREADS=$threads build/bench/myelin_train_fashion --model "$model" --steps "$steps" \
    --threads "$threads" >"$tmp/myelin_$model.json"
  OMP_NUM_THREADS=$threads "${torch_best[@]}" /usr/bin/python3 bench/torch_train_step.py \
    --model "$model" --steps "$steps" --threads "$threads" >"$tmp/torch_$model.json"
  OMP_NUM_THREADS=$threads /usr/bin/python3 bench/torch_train_step.py --model "$model" \
    --steps "$steps" --threads "$threads" >"$tmp/torch_default_$model.json"
done
/usr/bin/python3 - "$tmp" "$threads" "$torch_config" <<'PY'
import json, sys
tmp = sys.argv[1]
m = {b["name"].split("/")[0]: b for b in json.load(open(tmp + "/myelin.json"))["benchmarks"]}
t = json.load(open(tmp + "/torch.json"))
threads = int(sys.argv[2])
config = sys.argv[3]
def secs(name):
    b = m[name]
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
    return b["real_time"] * scale
def line(workload, ours, theirs, unit, higher_is_better, **extra):
    ratio = ours / theirs if higher_is_better else theirs / ours
    d = {"workload": workload, "myelin": round(ours, 3), "pytorch": round(theirs, 3), "unit": unit,
         "ratio": round(ratio, 2), "threads": threads, "pytorch_config": config}
    d.update(extra)
    print(json.dumps(d))
peak = m["BM_fma_peak"]["flops"] / 1e9
ours = 2 * 1024**3 / secs("BM_sgemm_1024") / 1e9
line("sgemm_1024", ours, 2 * 1024**3 / t["sgemm_1024"] / 1e9, "GFLOP/s", True,
     peak_gflops=round(peak, 1), myelin_pct_of_peak=round(100 * ours / peak, 1))
for w in ("add_4M", "mul_4M", "relu_4M"):
    n = 4 << 20
    line(w, n / secs("BM_" + w) / 1e9, n / t[w] / 1e9, "Gelem/s", True)
n = 4096 * 1000
line("softmax_4096x1000", n / secs("BM_softmax_4096x1000") / 1e9, n / t["softmax_4096x1000"] / 1e9, "Gelem/s", True)
line("small_add_fwd_bwd", secs("BM_small_add_fwd_bwd") * 1e6, t["small_add_fwd_bwd"] * 1e6, "us/iter", False)
for model in ("mlp", "cnn"):
    ours = json.load(open(f"{tmp}/myelin_{model}.json"))
    theirs = json.load(open(f"{tmp}/torch_{model}.json"))
    default = json.load(open(f"{tmp}/torch_default_{model}.json"))
    line("train_step_" + model, ours["train_samples_per_s"], theirs["train_samples_per_s"], "samples/s",
         True, myelin_peak_rss_mb=round(ours["peak_rss_mb"], 1),
         pytorch_peak_rss_mb=round(theirs["peak_rss_mb"], 1),
         pytorch_glibc_default=round(default["train_samples_per_s"], 1))
PY
# What a user meets: `myelin train` on the shipped examples against torch_baseline.py's loop
# (PyTorch at its best, named in the output), alternated, median of 3, peak RSS.
/usr/bin/python3 bench/train_cli.py --threads "$threads" --rounds 3
# The studio's Train against the CLI on the same project (offscreen; built with the UI only).
if [ -x build/bench/myelin_bench_studio_train ]; then
  /usr/bin/python3 bench/train_studio.py --threads "$threads" --rounds 3
fi
# Run store (no PyTorch counterpart): ingest points/s, list_runs over 100 runs, a 1M-point series
# downsampled to 2000 buckets; one JSON line each with its goal. The store file lives in $tmp.
build/bench/myelin_bench_store --dir "$tmp/store" 2>/dev/null
# Model graph analysis on every edit (500 nodes, goal: well under a 16.7 ms frame), DataLoader
# throughput on Fashion-MNIST with 0/1/2 workers (goal: far above the CNN step's samples/s),
# the trainer's capture overhead on the CNN (goal <= 5%), and the CNN's training step with
# bfloat16 autocast vs float32 (speedup; docs/performance.md explains the number).
build/bench/myelin_bench_graph
OMP_NUM_THREADS=$threads build/bench/myelin_bench_data
OMP_NUM_THREADS=$threads build/bench/myelin_bench_capture --threads "$threads"
OMP_NUM_THREADS=$threads build/bench/myelin_bench_amp --threads "$threads"
# The studio editor: an attribute edit and its undo on a 502-node graph, shape inference, scene
# update and repaint included (offscreen; goal: within a 16.7 ms frame). Built with the UI only.
if [ -x build/bench/myelin_bench_editor ]; then
  build/bench/myelin_bench_editor 2>/dev/null
fi
# Sequence models against the same in PyTorch (at its best, as above): an LSTM training step
# (batch 64, seq 32, input 64, hidden 256, last step -> Linear -> cross-entropy, Adam) and a
# Transformer-encoder step (2 layers, d_model 128, 4 heads, seq 64, batch 32, dropout 0.1):
# ratio of ms per step (wall), with each side's CPU ms.
for model in lstm transformer; do
  OMP_NUM_THREADS=$threads "build/bench/myelin_bench_$model" --threads "$threads" \
    >"$tmp/myelin_$model.json"
  OMP_NUM_THREADS=$threads "${torch_best[@]}" /usr/bin/python3 "bench/torch_${model}_step.py" \
    --threads "$threads" >"$tmp/torch_$model.json"
done
/usr/bin/python3 - "$tmp" "$threads" "$torch_config" <<'PY'
import json, sys
for model in ("lstm", "transformer"):
    ours = json.load(open(f"{sys.argv[1]}/myelin_{model}.json"))
    theirs = json.load(open(f"{sys.argv[1]}/torch_{model}.json"))
    print(json.dumps({"workload": "train_step_" + model, "myelin": ours["ms_per_step"],
                      "pytorch": theirs["ms_per_step"], "unit": "ms/step",
                      "ratio": round(theirs["ms_per_step"] / ours["ms_per_step"], 2),
                      "threads": int(sys.argv[2]), "pytorch_config": sys.argv[3],
                      "myelin_cpu_ms": ours["cpu_ms_per_step"],
                      "pytorch_cpu_ms": theirs["cpu_ms_per_step"]}))
PY
# Data-parallel training over MPI (issue 19), where mpirun is installed: 2 ranks x 1 thread
# against 1 process x 2 threads on fashion_cnn (samples/s, job CPU, the gradient averaging's
# wait after backward and its allreduces started during backward).
if command -v mpirun >/dev/null; then
  bench/dist_fashion_cnn.sh build 60 1
fi
# The GPU (issue 17), where a CUDA device is usable: the MLP and CNN training steps on cuda:0
# against the CPU, sgemm and convolution throughput against the device's FP32 peak. Elsewhere it
# prints "GPU: skipped (<reason>)", and a part the device cannot run yet says why.
OMP_NUM_THREADS=$threads build/bench/myelin_bench_gpu --threads "$threads"
