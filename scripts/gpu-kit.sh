#!/usr/bin/env bash
# The GPU check kit (issue 36): everything a short visit to a GPU machine needs, built here.
#
#   scripts/gpu-kit.sh build        (here, on a Debian 12 machine) a Release build with the CUDA
#                                   backend for sm_90 + PTX (-lineinfo, portable host code) in
#                                   build-gpu-kit/, packed with its Debian runtime libraries, the
#                                   shipped examples, Fashion-MNIST and the word lists into
#                                   gpu-kit/myelin-gpu-kit.tar.xz (at most 60 MiB), then checked
#                                   unpacked in an empty folder: every library but CUDA's resolves
#                                   inside the kit, and the CPU legs pass with the kit's alone.
#   myelin-gpu-kit/gpu-kit.sh run [OUT]
#                                   (there, from the unpacked kit) finds the image's CUDA
#                                   libraries, runs every CUDA test leg, compute-sanitizer on
#                                   test_backend_ops, fashion_cnn and word_language_lstm on cuda
#                                   against the CPU, and the GPU bench beside PyTorch on the same
#                                   GPU; writes OUT/gpu-report.md and its logs (6 files).
#
# On the device machine, from the repository root:
#   mkdir -p /tmp/kit && { tar -xJf gpu-kit/myelin-gpu-kit.tar.xz -C /tmp/kit ||
#     python3 -m tarfile -e gpu-kit/myelin-gpu-kit.tar.xz /tmp/kit; } &&
#     /tmp/kit/myelin-gpu-kit/gpu-kit.sh run "$OUT"
# (docs/gpu.md says more.)
set -euo pipefail

# Every test executable with a CUDA leg, or whose answer depends on the device (they print
# "CUDA: <device>" or "CUDA: skipped (<reason>)"), and the trajectory test as the CPU's anchor.
KIT_TESTS=(test_backend_ops test_backend_ops_sequence test_nn_kernels test_device_training test_device_transfer
    test_trainer_device test_trainer_precision test_autocast test_grad_scaler test_tensor
    test_cuda_module test_cuda_allocator test_staging_pool test_cli_device
    test_cli_project_device)
# Fashion-MNIST in the kit: the first 30,000 training images (2 epochs of fashion_cnn are 470
# steps) and all 10,000 test images, as raw IDX, which xz packs into 15 MB where the gzip files
# alone are 30 MB. (So test_trajectory, whose record is of the whole set, stays out.)
KIT_FASHION_TRAIN=30000
# What the kit does not carry: glibc, libstdc++ and libgcc_s (the image's are newer and its CUDA
# libraries need them) and CUDA's own libraries (the image's pip packages and toolkit have them).
KIT_EXCLUDED='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libutil|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libcudnn[a-z_]*|libnvrtc|libnvJitLink|libnccl)\.so'
KIT_MAX_BYTES=$((60 * 1024 * 1024))
# The word lists word_language*.myelin read (the Debian packages w*).
KIT_DICTS=(american-english ngerman french italian spanish portuguese dutch swedish)

die() {
    echo "gpu-kit: $*" >&2
    exit 1
}

# ---------------------------------------------------------------------------------------------
# build (here)

kit_build() {
    cd "$(dirname "${BASH_SOURCE[0]}")/.."
    # shellcheck source=scripts/deps.sh
    source scripts/deps.sh
    myelin_ensure_deps
    command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]] ||
        die "no CUDA toolkit (nvcc) here: the kit's CUDA backend cannot be built"
    local build=${MYELIN_GPU_KIT_BUILD_DIR:-build-gpu-kit}
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMYELIN_CUDA=ON \
        -DMYELIN_NATIVE=OFF -DMYELIN_BUILD_UI=OFF -DMYELIN_BUILD_BENCH=ON \
        "-DCMAKE_CUDA_ARCHITECTURES=90-real;90-virtual" -DCMAKE_CUDA_FLAGS=-lineinfo
    cmake --build "$build" -j"$(nproc)" --target myelin myelin_cuda_backend myelin_bench_gpu \
        "${KIT_TESTS[@]}"
    [[ -f "$build/core/libmyelin_cuda.so" ]] ||
        die "$build/core/libmyelin_cuda.so was not built (cuDNN or cuBLAS missing?)"

    local root=gpu-kit kit=gpu-kit/myelin-gpu-kit
    rm -rf "$kit" "$root/myelin-gpu-kit.tar.xz"
    mkdir -p "$kit/bin" "$kit/lib" "$kit/source/tests" "$kit/source/bench" \
        "$kit/source/scripts" "$kit/data/fashion-mnist" "$kit/data/dict"
    cp "$build/app/myelin" "$build/bench/myelin_bench_gpu" "$kit/bin/"
    local t
    for t in "${KIT_TESTS[@]}"; do
        cp "$(find "$build/tests" -type f -name "$t" -perm -u+x | head -1)" "$kit/bin/" ||
            die "test executable $t not found in $build/tests"
    done
    # Our libraries under their sonames, then every library they need that the kit must carry.
    local lib
    for lib in "$build"/core/libmyelin_core.so.* "$build"/export/libmyelin_export.so.*; do
        [[ -L "$lib" ]] && cp -L "$lib" "$kit/lib/$(basename "$lib")"
    done
    cp "$build/core/libmyelin_cuda.so" "$kit/lib/"
    local name path
    while read -r name path; do
        [[ "$name" =~ $KIT_EXCLUDED || "$name" == libmyelin* ]] && continue
        [[ -f "$kit/lib/$name" ]] || cp -L "$path" "$kit/lib/$name"
    done < <(LD_LIBRARY_PATH="$kit/lib" ldd "$kit"/bin/* "$kit"/lib/*.so* 2>/dev/null |
        awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u)

    cp -r resources "$kit/source/"
    cp -r tests/golden "$kit/source/tests/"
    cp bench/torch_gpu_step.py "$kit/source/bench/"
    cp scripts/gpu-kit.sh "$kit/source/scripts/"
    cp scripts/gpu-kit.sh "$kit/gpu-kit.sh"
    cp scripts/gpu_kit_report.py "$kit/"
    /usr/bin/python3 - "$kit/data/fashion-mnist" "$KIT_FASHION_TRAIN" <<'PY'
import gzip, struct, sys
out, keep = sys.argv[1], int(sys.argv[2])
for part, limit in (("train", keep), ("t10k", None)):
    for kind, size in (("images-idx3-ubyte", 784), ("labels-idx1-ubyte", 1)):
        name = f"{part}-{kind}"
        data = gzip.open(f"/usr/share/datasets/fashion-mnist/{name}.gz").read()
        header = 16 if size == 784 else 8
        n = struct.unpack(">I", data[4:8])[0] if limit is None else min(limit, struct.unpack(">I", data[4:8])[0])
        with open(f"{out}/{name}", "wb") as f:
            f.write(data[:4] + struct.pack(">I", n) + data[8:header] + data[header:header + n * size])
PY
    for t in "${KIT_DICTS[@]}"; do
        cp -L "/usr/share/dict/$t" "$kit/data/dict/$t"
    done
    {
        echo "source_dir=$(pwd)"
        echo "build_dir=$(cd "$build" && pwd)"
        echo "commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!gpu-kit' || echo '+changes')"
        echo "built=$(date -u '+%Y-%m-%d %H:%M UTC') on $(. /etc/os-release && echo "$PRETTY_NAME")"
        echo "version=$("$build/app/myelin" --version | head -1)"
    } >"$kit/MANIFEST"
    strip --strip-unneeded "$kit"/bin/* 2>/dev/null || true

    XZ_OPT="-9 -T$(nproc)" tar -C "$root" -cJf "$root/myelin-gpu-kit.tar.xz" myelin-gpu-kit
    local bytes
    bytes=$(stat -c %s "$root/myelin-gpu-kit.tar.xz")
    echo "gpu-kit: $root/myelin-gpu-kit.tar.xz: $((bytes / 1024 / 1024)) MiB" \
        "($(du -sh "$kit" | cut -f1) unpacked, $(ls "$kit/lib" | wc -l) libraries)"
    ((bytes <= KIT_MAX_BYTES)) || die "the archive is over 60 MiB"
    kit_verify "$root/myelin-gpu-kit.tar.xz"
}

# Unpacks the archive into an empty folder and checks it as the GPU machine will see it.
kit_verify() {
    local archive=$1 dir
    dir=$(mktemp -d)
    tar -xJf "$archive" -C "$dir"
    local kit=$dir/myelin-gpu-kit missing
    # Every library resolves inside the kit, but glibc's, libstdc++'s, libgcc_s's and CUDA's.
    missing=$(env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH="$kit/lib" ldd "$kit"/bin/* "$kit"/lib/*.so* |
        awk -v kit="$kit/lib/" -v excluded="$KIT_EXCLUDED" '
            $2 == "=>" && $1 !~ excluded && index($3, kit) != 1 {print $1 " => " $3}' | sort -u)
    [[ -z "$missing" ]] || die "libraries not carried by the kit:"$'\n'"$missing"
    echo "gpu-kit: every library but glibc's, libstdc++'s, libgcc_s's and CUDA's is in the kit"
    # The CPU legs, with nothing from the environment but the kit's libraries.
    local t failed=()
    for t in "${KIT_TESTS[@]}"; do
        if env -i PATH=/usr/bin:/bin HOME="$dir" QT_QPA_PLATFORM=offscreen \
            LD_LIBRARY_PATH="$kit/lib" "$kit/bin/$t" >"$dir/$t.log" 2>&1; then
            echo "gpu-kit: $t passed $(sed -n 's/^QINFO *: [^ ]* CUDA: /(CUDA: /p' "$dir/$t.log" |
                head -1 | sed 's/$/)/')"
        else
            failed+=("$t")
            grep -m3 -A1 'FAIL!' "$dir/$t.log" >&2 || tail -5 "$dir/$t.log" >&2
        fi
    done
    ((${#failed[@]} == 0)) || die "CPU legs failed in the unpacked kit: ${failed[*]}"
    env -i LD_LIBRARY_PATH="$kit/lib" "$kit/bin/myelin" --version
    rm -rf "$dir"
    echo "gpu-kit: the unpacked kit's CPU legs pass (${#KIT_TESTS[@]} tests)"
}

# ---------------------------------------------------------------------------------------------
# run (on the GPU machine, from the unpacked kit)

kit_run() {
    local kit
    kit=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    [[ -f "$kit/MANIFEST" ]] || die "run this from the unpacked kit (myelin-gpu-kit/gpu-kit.sh)"
    local out=${1:-${OUT:-$kit/out}}
    mkdir -p "$out"
    local logs=$out work
    work=$(mktemp -d)
    local started=$SECONDS budget=${KIT_BUDGET_S:-470}
    local python=${PYTHON:-python3}
    local source_dir build_dir
    source_dir=$(sed -n 's/^source_dir=//p' "$kit/MANIFEST")
    build_dir=$(sed -n 's/^build_dir=//p' "$kit/MANIFEST")

    # CUDA's libraries: the pip packages' lib folders (nvidia.cublas, nvidia.cudnn, ...), then
    # the toolkit's. The kit's own come first; glibc and libstdc++ are the image's.
    local cuda_dirs
    cuda_dirs=$("$python" - <<'PY' 2>/dev/null || true
import glob, os, site, sys
bases = list(site.getsitepackages()) + [site.getusersitepackages()] + sys.path
dirs = []
for base in bases:
    for d in sorted(glob.glob(os.path.join(base, "nvidia", "*", "lib"))) + \
             sorted(glob.glob(os.path.join(base, "nvidia", "cu*", "lib"))):
        if d not in dirs:
            dirs.append(d)
print(":".join(dirs))
PY
)
    if [[ -z "$cuda_dirs" ]]; then # a Python that cannot see them: look where pip puts them
        cuda_dirs=$(find / -xdev -maxdepth 8 -type d -path '*/site-packages/nvidia/*/lib' \
            2>/dev/null | sort | paste -sd:)
    fi
    local d
    for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
        [[ -d "$d" ]] && cuda_dirs+=":$d"
    done
    # Python (PyTorch, the report's sqlite3) keeps the image's own libraries: the kit's Debian 12
    # zlib or SQLite could lack a symbol the image's modules were built against.
    local image_ld=${LD_LIBRARY_PATH:-}
    py() { LD_LIBRARY_PATH="$image_ld" "$python" "$@"; }
    export LD_LIBRARY_PATH="$kit/lib:${cuda_dirs#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export QT_QPA_PLATFORM=offscreen PATH="$kit/bin:/usr/local/cuda/bin:$PATH"

    # The paths compiled into the tests and named by the examples, where this machine lacks them.
    link_if_missing() { [[ -e "$2" ]] || { mkdir -p "$(dirname "$2")" && ln -s "$1" "$2"; }; }
    link_if_missing "$kit/source" "$source_dir"
    link_if_missing "$kit/bin/myelin" "$build_dir/app/myelin"
    link_if_missing "$kit/data/fashion-mnist" /usr/share/datasets/fashion-mnist
    for d in "$kit"/data/dict/*; do link_if_missing "$d" "/usr/share/dict/$(basename "$d")"; done

    {
        echo "## kit"
        cat "$kit/MANIFEST"
        echo "## machine"
        date -u '+%Y-%m-%d %H:%M UTC'
        uname -a
        nvidia-smi || echo "nvidia-smi: not found"
        echo "## LD_LIBRARY_PATH"
        echo "$LD_LIBRARY_PATH" | tr ':' '\n'
        echo "## myelin --version"
        myelin --version 2>&1 || true
        echo "## ldd libmyelin_cuda.so"
        ldd "$kit/lib/libmyelin_cuda.so" 2>&1 || true
    } >"$logs/env.log" 2>&1

    # 1. Every test leg.
    : >"$logs/tests.log"
    local t
    # (Hung tests must not eat the visit: 150 s each, and none started after 300 s.)
    for t in "${KIT_TESTS[@]}"; do
        echo "===== $t" >>"$logs/tests.log"
        if ((SECONDS - started > 300)); then
            echo "skipped: over the kit's time budget" >>"$logs/tests.log"
            echo "===== $t exit 125" >>"$logs/tests.log"
            continue
        fi
        local rc=0
        (cd "$work" && timeout 150 "$kit/bin/$t") >>"$logs/tests.log" 2>&1 || rc=$?
        echo "===== $t exit $rc" >>"$logs/tests.log"
    done

    # 2. compute-sanitizer's memcheck over every primitive on the device.
    local sanitizer
    sanitizer=$(command -v compute-sanitizer || true)
    if [[ -n "$sanitizer" ]] && ((SECONDS - started > 330)); then
        echo "compute-sanitizer: skipped: over the kit's time budget" >"$logs/sanitizer.log"
    elif [[ -n "$sanitizer" ]]; then
        (cd "$work" && timeout 200 "$sanitizer" --tool memcheck --print-limit 20 \
            "$kit/bin/test_backend_ops") >"$logs/sanitizer.log" 2>&1 ||
            echo "===== exit $?" >>"$logs/sanitizer.log"
    else
        echo "compute-sanitizer: not found" >"$logs/sanitizer.log"
    fi

    # 3. The examples on cuda against the CPU (losses per step and final metrics, from the store).
    local examples=$kit/source/resources/examples threads
    threads=$(nproc)
    py - "$examples" "$work" <<'PY' || echo "gpu-kit: the float16 projects could not be written" >&2
import json, sys
examples, work = sys.argv[1], sys.argv[2]
for name in ("fashion_cnn", "word_language_lstm"):
    p = json.load(open(f"{examples}/{name}.myelin"))
    p["training"]["precision"] = "float16"
    json.dump(p, open(f"{examples}/{name}_float16.myelin", "w"), indent=1)
PY
    : >"$logs/train.log"
    train() { # label project device [args...]
        local label=$1 project=$2 device=$3
        shift 3
        if ((SECONDS - started > budget)); then
            echo "===== $label skipped: over the kit's time budget" >>"$logs/train.log"
            return
        fi
        echo "===== $label" >>"$logs/train.log"
        local rc=0 t0=$SECONDS
        timeout 240 myelin train "$examples/$project.myelin" --device "$device" \
            --threads "$threads" --store "$work/runs.sqlite" --name "$label" \
            --checkpoint-dir "$work/ck-$label" "$@" >>"$logs/train.log" 2>&1 || rc=$?
        echo "===== $label exit $rc after $((SECONDS - t0)) s" >>"$logs/train.log"
    }
    train cnn_cuda_float32 fashion_cnn cuda --epochs 2
    train cnn_cuda_float16 fashion_cnn_float16 cuda --epochs 2
    train cnn_cpu fashion_cnn cpu --epochs 2
    train lstm_cuda_float32 word_language_lstm cuda --max-steps 200
    train lstm_cuda_float16 word_language_lstm_float16 cuda --max-steps 200
    train lstm_cpu word_language_lstm cpu --max-steps 200

    # 4. The bench: Myelin's trainer on cuda:0 and PyTorch's plain loop on the same GPU.
    : >"$logs/bench.log"
    if ((SECONDS - started < budget)); then
        echo "===== myelin_bench_gpu" >>"$logs/bench.log"
        timeout 200 myelin_bench_gpu --threads "$threads" --batches 128,1024 \
            --source-dir "$kit/source" >>"$logs/bench.log" 2>&1 ||
            echo "===== myelin_bench_gpu exit $?" >>"$logs/bench.log"
    fi
    if ((SECONDS - started < budget + 60)); then
        echo "===== torch_gpu_step.py" >>"$logs/bench.log"
        timeout 150 env LD_LIBRARY_PATH="$image_ld" "$python" \
            "$kit/source/bench/torch_gpu_step.py" \
            --data "$kit/data/fashion-mnist" --batches 128,1024 >>"$logs/bench.log" 2>&1 ||
            echo "===== torch_gpu_step.py exit $?" >>"$logs/bench.log"
    fi

    py "$kit/gpu_kit_report.py" --logs "$logs" --store "$work/runs.sqlite" \
        --seconds "$((SECONDS - started))" >"$out/gpu-report.md" ||
        echo "gpu-kit: the report could not be written (see the logs)" >>"$out/gpu-report.md"
    cat "$out/gpu-report.md"
    rm -rf "$work"
}

case "${1:-}" in
build) kit_build ;;
verify) kit_verify "${2:-gpu-kit/myelin-gpu-kit.tar.xz}" ;;
run)
    shift
    kit_run "$@"
    ;;
*)
    echo "usage: scripts/gpu-kit.sh build | verify [ARCHIVE]   (here)" >&2
    echo "       myelin-gpu-kit/gpu-kit.sh run [OUT]            (on the GPU machine)" >&2
    exit 2
    ;;
esac
