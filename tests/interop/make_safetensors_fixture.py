#!/usr/bin/python3
"""Write tests/golden/safetensors_fixture.safetensors, the golden safetensors file that
tests/core/test_safetensors.cpp (`golden_fixture`) reads and checks value by value.

Run by hand:

    /usr/bin/python3 tests/interop/make_safetensors_fixture.py

The file is written byte by byte with the standard library only (json + struct; no numpy, no
torch, no safetensors package), laid out the way the reference implementation
(huggingface/safetensors) lays out `save_file`: "__metadata__" first, then the tensors sorted by
decreasing dtype alignment and then by name, in the JSON header and in the byte buffer alike;
the header is padded with spaces to a multiple of 8 bytes. That order differs from the order in
which TENSORS lists them, so the test also sees a file whose order is not Myelin's own.

Every value is exactly representable in its dtype (no rounding is involved), and the expected
values in the C++ test are the literals below. Output is deterministic; keep the file small
(it is committed; about 1 KB).
"""
import json
import math
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "golden", "safetensors_fixture.safetensors")

# name -> (dtype tag, shape, values in row-major order)
TENSORS = [
    ("linear.weight", "F32", [2, 3], [-1.0, -0.5, 0.0, 0.5, 1.0, 1.5]),
    ("specials", "F32", [4], [math.inf, -math.inf, math.nan, -0.0]),
    ("scalar", "F32", [], [42.0]),
    ("empty", "F32", [0, 3], []),
    ("float64", "F64", [3], [1.0 / 3.0, -2.5, 1e300]),
    ("half", "F16", [4], [1.0, -2.0, 0.0999755859375, 65504.0]),
    ("bfloat16", "BF16", [3], [1.0, -3.140625, 2.0 ** 100]),
    ("labels", "I64", [2, 2], [0, -1, 2 ** 62, -(2 ** 63)]),
    ("bytes", "U8", [5], [0, 1, 127, 128, 255]),
    ("mask", "BOOL", [2, 2], [True, False, False, True]),
]
METADATA = {"format": "pt", "epoch": "3", "note": "written by make_safetensors_fixture.py \u2713"}

ITEM_SIZE = {"F64": 8, "I64": 8, "F32": 4, "F16": 2, "BF16": 2, "U8": 1, "BOOL": 1}


def bf16_bits(x):
    """bfloat16 bits of x, which must be exactly representable (upper half of its float32)."""
    (bits,) = struct.unpack("<I", struct.pack("<f", x))
    assert bits & 0xFFFF == 0, f"{x} is not exactly representable in bfloat16"
    return bits >> 16


def pack(dtype, values):
    floats = {"F32": "f", "F64": "d", "F16": "e"}
    if dtype in floats:
        code = f"<{len(values)}{floats[dtype]}"
        out = struct.pack(code, *values)
        same = [a == b or (math.isnan(a) and math.isnan(b))
                for a, b in zip(struct.unpack(code, out), values)]
        assert all(same), f"{dtype} values must be exactly representable: {values}"
        return out
    if dtype == "BF16":
        return struct.pack(f"<{len(values)}H", *[bf16_bits(v) for v in values])
    if dtype == "I64":
        return struct.pack(f"<{len(values)}q", *values)
    if dtype in ("U8", "BOOL"):
        return bytes(int(v) for v in values)
    raise ValueError(dtype)


def write_safetensors(path, tensors, metadata):
    """tensors: [(name, dtype, shape, values)]; the reference implementation's layout."""
    ordered = sorted(tensors, key=lambda t: (-ITEM_SIZE[t[1]], t[0]))
    header = {"__metadata__": metadata} if metadata else {}
    buffer = b""
    for name, dtype, shape, values in ordered:
        count = math.prod(shape)
        assert count == len(values), name
        data = pack(dtype, values)
        assert len(data) == count * ITEM_SIZE[dtype]
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(buffer), len(buffer) + len(data)]}
        buffer += data
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.write(buffer)


def main():
    write_safetensors(OUT, TENSORS, METADATA)
    size = os.path.getsize(OUT)
    assert size < 10_000, size
    print(f"wrote {os.path.relpath(OUT)} ({size} bytes, {len(TENSORS)} tensors)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
