#!/usr/bin/env bash
# Data-parallel training (issue 19) on fashion_cnn: 2 MPI ranks x 1 thread (batch 128 each,
# global 256) against 1 process x 2 threads (batch 128), --max-steps optimizer steps each,
# alternated ROUNDS times. Prints one JSON line per run: the training loop's samples/s (what
# `myelin train` reports: every rank's examples over the loop's wall time, data loading and
# validation excluded) and, for the ranks, where the gradient averaging's time went (the wait
# after backward, and how many bucket allreduces started during backward).
# Usage: bench/dist_fashion_cnn.sh [BUILD_DIR] [STEPS] [ROUNDS]
set -euo pipefail
build=${1:-build}
steps=${2:-60}
rounds=${3:-3}
project=resources/examples/fashion_cnn.myelin
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,tcp
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# CPU time of the whole job (perf stat task-clock, children included: both ranks' start-up and
# data loading too), less disturbed by the other load on the machine than wall time.
timed() { # perf output file, command...
  local out=$1
  shift
  perf stat -x, -e task-clock -o "$out" -- "$@"
}
report() { # label, output file, perf file
  /usr/bin/python3 - "$1" "$2" "$steps" "$(cut -d' ' -f1-3 /proc/loadavg)" "$3" <<'PY'
import json, re, sys
label, path, steps, load, perf = sys.argv[1:]
text = open(path).read()
cpu = None
for line in open(perf):
    if "task-clock" in line:
        cpu = round(float(line.split(",")[0]) / 1000, 2)
loop = re.search(r"training loop: (\d+) examples in ([\d.]+) s \((\d+) examples/s\)", text)
avg = re.search(r"after backward, pack ([\d.]+) ms, wait ([\d.]+) ms, unpack ([\d.]+) ms per "
                r"step; (\d+) of (\d+) bucket allreduces started during backward", text)
out = {"workload": "dist_fashion_cnn", "config": label, "steps": int(steps),
       "samples_per_s": int(loop.group(3)) if loop else None, "job_cpu_s": cpu,
       "load_after": load}
if avg:
    out.update({"avg_wait_ms_per_step": float(avg.group(2)),
                "avg_pack_unpack_ms_per_step": float(avg.group(1)) + float(avg.group(3)),
                "buckets_started_in_backward": f"{avg.group(4)}/{avg.group(5)}"})
print(json.dumps(out))
PY
}
for ((r = 0; r < rounds; ++r)); do
  timed "$tmp/one$r.perf" "$build/app/myelin" train "$project" --store "$tmp/one$r.db" \
    --threads 2 --max-steps "$steps" >"$tmp/one$r.out" 2>&1 || true
  report "1 rank x 2 threads" "$tmp/one$r.out" "$tmp/one$r.perf"
  timed "$tmp/two$r.perf" mpirun -np 2 --oversubscribe "$build/app/myelin" train "$project" \
    --store "$tmp/two$r.db" --threads 1 --max-steps "$steps" >"$tmp/two$r.out" 2>&1 || true
  report "2 ranks x 1 thread" "$tmp/two$r.out" "$tmp/two$r.perf"
  timed "$tmp/three$r.perf" mpirun -np 2 --oversubscribe "$build/app/myelin" train "$project" \
    --store "$tmp/three$r.db" --threads 1 --max-steps "$steps" --dist-no-overlap \
    >"$tmp/three$r.out" 2>&1 || true
  report "2 ranks x 1 thread, no overlap" "$tmp/three$r.out" "$tmp/three$r.perf"
done
