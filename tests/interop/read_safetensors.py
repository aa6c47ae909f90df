#!/usr/bin/python3
"""Read a safetensors file (one Myelin wrote, or any other) with plain json + numpy: no
safetensors package needed. Usable as a module and as a script.

    /usr/bin/python3 tests/interop/read_safetensors.py FILE [--values]

prints the metadata and every tensor's dtype and shape (with --values, the values too) and
checks the file the way Myelin's reader does: known dtypes, sizes that match the shapes, and
data_offsets that cover the byte buffer exactly (no overlaps, no holes). Exit status 1 on a
malformed file.

As a module:

    from read_safetensors import read_safetensors, to_torch
    tensors, metadata = read_safetensors(path)   # {name: numpy array} in header order
    state_dict = to_torch(tensors)               # torch tensors (BF16 restored) for
                                                 # model.load_state_dict(state_dict, strict=True)

numpy has no bfloat16: BF16 tensors come back as numpy.uint16 arrays of raw bits whose names are
listed in `tensors.bfloat16`; `bf16_to_float32` widens them exactly, and `to_torch` turns them
back into torch.bfloat16 tensors.
"""
import json
import struct
import sys

import numpy as np

DTYPES = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),  # raw bits; see bf16_to_float32
    "I64": np.dtype("<i8"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
MAX_HEADER = 100_000_000


class SafetensorsError(ValueError):
    pass


class Tensors(dict):
    """{name: numpy array} in header order; `bfloat16` names the BF16 entries (uint16 bits)."""

    def __init__(self):
        super().__init__()
        self.bfloat16 = set()


def bf16_to_float32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def read_safetensors(path):
    """Returns (Tensors, metadata dict). Raises SafetensorsError naming what is wrong."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise SafetensorsError(f"{path}: shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > MAX_HEADER or n > len(raw) - 8:
        raise SafetensorsError(f"{path}: header length {n} is implausible or beyond the file")
    try:
        header = json.loads(raw[8:8 + n].decode("utf-8"),
                            object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SafetensorsError(f"{path}: the header is not valid JSON: {e}") from e
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: the header is not a JSON object")
    buffer = memoryview(raw)[8 + n:]
    metadata = header.pop("__metadata__", {}) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise SafetensorsError(f"{path}: __metadata__ must map strings to strings")

    tensors = Tensors()
    spans = []
    for name, info in header.items():
        dtype, shape, (begin, end) = info["dtype"], info["shape"], info["data_offsets"]
        if dtype not in DTYPES:
            raise SafetensorsError(f"{path}: tensor {name!r}: unsupported dtype {dtype!r}")
        if any(not isinstance(d, int) or d < 0 for d in shape):
            raise SafetensorsError(f"{path}: tensor {name!r}: bad shape {shape}")
        count = 1
        for d in shape:
            count *= d
        if not 0 <= begin <= end <= len(buffer) or end - begin != count * DTYPES[dtype].itemsize:
            raise SafetensorsError(
                f"{path}: tensor {name!r}: data_offsets [{begin}, {end}] do not fit {dtype} "
                f"{shape} in a {len(buffer)}-byte buffer")
        array = np.frombuffer(buffer[begin:end], dtype=DTYPES[dtype]).reshape(shape).copy()
        if dtype == "BF16":
            tensors.bfloat16.add(name)
        tensors[name] = array
        spans.append((begin, end, name))
    covered = 0
    for begin, end, name in sorted(spans):
        if begin != covered:
            raise SafetensorsError(f"{path}: tensor {name!r} starts at {begin}, expected "
                                   f"{covered} (overlap or hole)")
        covered = end
    if covered != len(buffer):
        raise SafetensorsError(f"{path}: bytes [{covered}, {len(buffer)}) belong to no tensor")
    return tensors, metadata


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise SafetensorsError(f"duplicate keys in the header: {keys}")
    return dict(pairs)


def to_torch(tensors):
    """numpy arrays -> torch tensors with the file's dtypes (BF16 included), same order."""
    import torch

    out = {}
    for name, array in tensors.items():
        if name in getattr(tensors, "bfloat16", ()):
            out[name] = torch.from_numpy(array.view(np.int16).copy()).view(torch.bfloat16)
        else:
            out[name] = torch.from_numpy(array)
    return out


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    try:
        tensors, metadata = read_safetensors(argv[1])
    except (SafetensorsError, OSError, KeyError, TypeError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for key, value in metadata.items():
        print(f"metadata {key} = {value!r}")
    for name, array in tensors.items():
        dtype = "bfloat16" if name in tensors.bfloat16 else str(array.dtype)
        print(f"{name}: {dtype} {list(array.shape)}")
        if "--values" in argv[2:]:
            shown = bf16_to_float32(array) if name in tensors.bfloat16 else array
            print("   ", np.array2string(shown.reshape(-1), threshold=50))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
