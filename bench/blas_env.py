#!/usr/bin/python3
"""OpenBLAS's kernel choice, made fair for both sides of a comparison.

Debian's OpenBLAS (0.3.21, DYNAMIC_ARCH) picks its kernels from the CPU's model number. Under a
hypervisor that hides the model ("Intel(R) Xeon(R) Processor") it falls back to its generic SSE3
kernels (Prescott) even on an AVX-512 CPU: PyTorch's MLP step, whose GEMMs are OpenBLAS's, then
runs 2.2x slower (26.7k against 59.8k samples/s on such a machine, 2026-11-28). PyTorch's users
would set OPENBLAS_CORETYPE there; so does every bench script, for both sides (Myelin links the
same OpenBLAS for its general matmul, attention and recurrent GEMMs).

As a module: apply() sets OPENBLAS_CORETYPE in os.environ when OpenBLAS picked a weaker core than
the CPU supports (a value the caller already set is kept) and returns a description for the
output. As a script: prints `OPENBLAS_CORETYPE=<core>` when an override is needed (bench/run.sh
exports it), and the description on stderr.
"""
import ctypes
import json
import os
import sys

# OpenBLAS's generic and pre-AVX2 cores: what it falls back to on a model number it does not know.
FALLBACK_CORES = {"prescott", "core2", "penryn", "dunnington", "nehalem", "atom", "katmai",
                  "coppermine", "northwood", "banias", "unknown"}


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def supported_core(flags):
    """The best OpenBLAS core the CPU's features allow (SkylakeX measured fastest for PyTorch's
    MLP step on an AVX-512 Xeon: 59.8k samples/s against Cooperlake's 51.0k)."""
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        return "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Haswell"
    return None


def openblas_corename():
    """The core OpenBLAS picks in a fresh process with this environment, or None without it."""
    for name in ("libopenblas.so.0", "libblas.so.3"):
        try:
            lib = ctypes.CDLL(name)
            fn = lib.openblas_get_corename
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_char_p
        return fn().decode()
    return None


def apply():
    """Sets OPENBLAS_CORETYPE for child processes when needed; returns what was decided."""
    if os.environ.get("OPENBLAS_CORETYPE"):
        return {"openblas_core": os.environ["OPENBLAS_CORETYPE"], "openblas_override": "caller"}
    detected = openblas_corename()
    best = supported_core(cpu_flags())
    if detected and best and detected.lower() in FALLBACK_CORES:
        os.environ["OPENBLAS_CORETYPE"] = best
        return {"openblas_core": best, "openblas_detected": detected,
                "openblas_override": "OPENBLAS_CORETYPE (OpenBLAS did not recognise this CPU)"}
    return {"openblas_core": detected}


if __name__ == "__main__":
    decision = apply()
    print(json.dumps(decision), file=sys.stderr)
    if decision.get("openblas_override", "").startswith("OPENBLAS_CORETYPE"):
        print("OPENBLAS_CORETYPE=" + decision["openblas_core"])
