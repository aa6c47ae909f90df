#!/usr/bin/python3
"""Write the seed corpus of the fuzz targets: tests/fuzz/corpus/<target>/*.

Run by hand (standard library only) after changing a seed; the files are committed:

    /usr/bin/python3 tests/fuzz/make_seed_corpus.py

Seeds are small valid inputs of each format plus a few broken ones that reach the error paths.
Regression inputs (files that once crashed a reader) are committed next to them with names
starting "regression-"; this script never touches those.
"""
import base64
import gzip
import json
import os
import struct
import zlib

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, name, data):
    directory = os.path.join(CORPUS, target)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)


# ---- safetensors ---------------------------------------------------------------------------

def safetensors(entries, metadata=None, raw_header=None):
    """entries: [(name, dtype, shape, bytes)] laid out in order."""
    header = {"__metadata__": metadata} if metadata else {}
    data = b""
    for name, dtype, shape, payload in entries:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    text = raw_header if raw_header is not None else json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds():
    write("safetensors", "empty.safetensors", safetensors([]))
    write("safetensors", "one_f32.safetensors",
          safetensors([("w", "F32", [2, 2], struct.pack("<4f", 1, -2, 0.5, 3))],
                      {"format": "pt", "epoch": "1"}))
    write("safetensors", "all_dtypes.safetensors", safetensors([
        ("f64", "F64", [1], struct.pack("<d", 2.5)),
        ("i64", "I64", [2], struct.pack("<2q", -1, 7)),
        ("f32", "F32", [], struct.pack("<f", 1.0)),
        ("f16", "F16", [2], struct.pack("<2e", 1.0, -0.5)),
        ("bf16", "BF16", [1], struct.pack("<H", 0x3F80)),
        ("u8", "U8", [3], bytes([0, 128, 255])),
        ("mask", "BOOL", [2], bytes([1, 0])),
        ("empty", "F32", [0, 4], b""),
    ]))
    write("safetensors", "overlap.safetensors",
          safetensors([], raw_header=b'{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},'
                                     b'"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}')
          + b"xyz")
    write("safetensors", "bad_metadata.safetensors",
          safetensors([], raw_header=b'{"__metadata__":{"k":{"nested":[1,2]}}}'))


# ---- IDX -----------------------------------------------------------------------------------

def idx(dims, payload):
    return bytes([0, 0, 8, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + payload


def idx_seeds():
    images = idx([2, 3, 3], bytes(range(18)))
    write("idx", "images_2x3x3.idx", images)
    write("idx", "images_2x3x3.idx.gz", gzip.compress(images, mtime=0))
    write("idx", "labels_5.idx", idx([5], bytes([0, 1, 2, 9, 3])))
    write("idx", "zero_dim.idx", idx([0, 28, 28], b""))
    write("idx", "truncated.idx", idx([4, 4], bytes(5)))


# ---- NPY -----------------------------------------------------------------------------------

def npy(major, header, payload):
    dict_text = header.encode()
    prefix = 6 + 2 + (2 if major == 1 else 4)
    dict_text += b" " * (-(prefix + len(dict_text) + 1) % 64) + b"\n"
    length = struct.pack("<H" if major == 1 else "<I", len(dict_text))
    return b"\x93NUMPY" + bytes([major, 0]) + length + dict_text + payload


def npy_seeds():
    write("npy", "f4_2x3.npy", npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                   struct.pack("<6f", 1, 2, 3, 4, 5, 6)))
    write("npy", "i8_v2.npy", npy(2, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }",
                                  struct.pack("<3q", 7, -8, 9)))
    write("npy", "u1_scalar_v3.npy",
          npy(3, "{'descr': '|u1', 'fortran_order': False, 'shape': (), }", b"\xff"))
    write("npy", "f8_empty.npy",
          npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 5), }", b""))
    write("npy", "fortran.npy", npy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }",
                                    struct.pack("<f", 1)))


# ---- CSV -----------------------------------------------------------------------------------
# The first byte holds fuzz_csv's option flags: 1 header, 2-4 delimiter (",;\t|"), 8 target
# column ("y" with a header, "0" without), 16 categorical target, 32 feature column ("a" / "1").

def csv_seeds():
    write("csv", "numeric_target.csv", bytes([1 | 8]) + b"a,b,y\n1,2.5,3\n-4,5e3,6\n")
    write("csv", "categorical.csv",
          bytes([1 | 8 | 16 | 32]) + b"\xef\xbb\xbfa,b,y\r\n1,2,cat\r\n3,4,dog\r\n5,6,cat\r\n")
    write("csv", "quoted.csv", bytes([1]) + b'a,"b, quoted"\n"1","2"\n\n" 3 ",4\n')
    write("csv", "no_header_semicolon.csv", bytes([2 | 8]) + b"1;2;3\n4;5;6")
    write("csv", "ragged.csv", bytes([1 | 6]) + b"a|b\n1|2|3\n")


# ---- images --------------------------------------------------------------------------------

def png(width, height, bit_depth, color_type, rows, extra_chunks=(), interlace=0):
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, interlace)
    raw = b"".join(b"\x00" + row for row in rows)  # filter type 0 on every scanline
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
            + b"".join(chunk(k, d) for k, d in extra_chunks)
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


JPEGS = {
    # libjpeg-turbo, quality 50: 5x3 grey, 4x4 RGB, 9x2 RGB progressive (jpeg_simple_progression)
    "grey_5x3.jpg":
        "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDABALDA4MChAODQ4SERATGCgaGBYWGDEjJR0oOjM9PDkzODdASFxOQERXRTc4UG1R"
        "V19iZ2hnPk1xeXBkeFxlZ2P/wAALCAADAAUBAREA/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgED"
        "AwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RF"
        "RkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJ"
        "ytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/9oACAEBAAA/AM/xCTp9pYy2X7hp9/mCPhTtC4wOg6npX//Z",
    "rgb_4x4.jpg":
        "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDABALDA4MChAODQ4SERATGCgaGBYWGDEjJR0oOjM9PDkzODdASFxOQERXRTc4UG1R"
        "V19iZ2hnPk1xeXBkeFxlZ2P/2wBDARESEhgVGC8aGi9jQjhCY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2Nj"
        "Y2NjY2NjY2NjY2NjY2P/wAARCAAEAAQDASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAA"
        "AgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6"
        "Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXG"
        "x8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREA"
        "AgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5"
        "OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPE"
        "xcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oADAMBAAIRAxEAPwCaHTIbsM7PJFtwAsRCjlQ3p/tY+gFFFFUm"
        "7I7YU4OOqR//2Q==",
    "rgb_9x2_progressive.jpg":
        "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDABALDA4MChAODQ4SERATGCgaGBYWGDEjJR0oOjM9PDkzODdASFxOQERXRTc4UG1R"
        "V19iZ2hnPk1xeXBkeFxlZ2P/2wBDARESEhgVGC8aGi9jQjhCY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2Nj"
        "Y2NjY2NjY2NjY2NjY2P/wgARCAACAAkDASIAAhEBAxEB/8QAFgABAQEAAAAAAAAAAAAAAAAAAAME/8QAFAEBAAAAAAAAAAAA"
        "AAAAAAAAAv/aAAwDAQACEAMQAAABnsGf/8QAFRABAQAAAAAAAAAAAAAAAAAAAEL/2gAIAQEAAQUCl//EABYRAAMAAAAAAAAA"
        "AAAAAAAAAAACMf/aAAgBAwEBPwF6f//EABYRAAMAAAAAAAAAAAAAAAAAAAACQf/aAAgBAgEBPwFaf//EABcQAAMBAAAAAAAA"
        "AAAAAAAAAAIQQfD/2gAIAQEABj8CLRf/xAAYEAACAwAAAAAAAAAAAAAAAAABECFxwf/aAAgBAQABPyERVtf/2gAMAwEAAgAD"
        "AAAAEIP/xAAWEQADAAAAAAAAAAAAAAAAAAAAscH/2gAIAQMBAT8Qmj//xAAXEQADAQAAAAAAAAAAAAAAAAAAAbHB/9oACAEC"
        "AQE/ELYj/8QAFxABAQEBAAAAAAAAAAAAAAAAAREAIf/aAAgBAQABPxAxnAgDN3//2Q==",
}


def image_seeds():
    write("image", "grey8_3x2.png", png(3, 2, 8, 0, [bytes([0, 128, 255]), bytes([1, 2, 3])]))
    write("image", "rgba8_2x2.png",
          png(2, 2, 8, 6, [bytes([255, 0, 0, 255, 0, 255, 0, 128]), bytes([0, 0, 255, 0] * 2)]))
    # Adam7 on 8x1 pixels 1,0,1,1,0,0,1,0: passes 1, 2, 4 and 6 each hold one scanline.
    write("image", "palette1_8x1_interlaced.png",
          png(8, 1, 1, 3, [bytes([0b10000000]), bytes([0]), bytes([0b11000000]),
                           bytes([0b01000000])],
              [(b"PLTE", bytes([0, 0, 0, 255, 255, 255]))], interlace=1))
    write("image", "rgb16_1x1.png", png(1, 1, 16, 2, [bytes([0xFF, 0xFF, 0x80, 0x00, 0, 1])]))
    for name, text in JPEGS.items():
        write("image", name, base64.b64decode(text))


def main():
    safetensors_seeds()
    idx_seeds()
    npy_seeds()
    csv_seeds()
    image_seeds()
    for target in sorted(os.listdir(CORPUS)):
        files = os.listdir(os.path.join(CORPUS, target))
        print(f"corpus/{target}: {len(files)} files")


if __name__ == "__main__":
    main()
