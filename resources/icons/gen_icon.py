#!/usr/bin/env python3
"""Draw the Myelin Studio icon: a neuron whose axon is wrapped in myelin sheaths.

One list of shapes renders both resources/icons/myelin.svg (packaging, scalable) and
resources/icons/myelin.png (256 px; Qt reads PNG without the optional SVG plugin).
Plain Python 3, no third-party modules:

    python3 resources/icons/gen_icon.py
"""
import math
import os
import struct
import zlib

SIZE = 256
BG_TOP = (0x3B, 0x6F, 0xA3)
BG_BOTTOM = (0x24, 0x48, 0x70)
CELL = (0xF5, 0xF2, 0xEB)
MYELIN = (0xF2, 0xB8, 0x5B)

SOMA = (72.0, 128.0)
# (kind, params, colour); coordinates on a 256 x 256 canvas.
SHAPES = [
    # dendrites, drawn under the soma
    ("capsule", (SOMA, (44.0, 78.0), 6.0), CELL),
    ("capsule", ((52.0, 92.0), (30.0, 96.0), 4.5), CELL),
    ("capsule", (SOMA, (36.0, 136.0), 6.0), CELL),
    ("capsule", (SOMA, (50.0, 182.0), 6.0), CELL),
    ("capsule", ((58.0, 162.0), (32.0, 172.0), 4.5), CELL),
    # soma
    ("circle", (SOMA, 26.0), CELL),
    # axon and its terminal
    ("capsule", (SOMA, (220.0, 128.0), 3.5), CELL),
    ("circle", ((222.0, 128.0), 7.0), CELL),
    # myelin sheaths with nodes of Ranvier between them
    ("capsule", ((117.0, 128.0), (127.0, 128.0), 11.0), MYELIN),
    ("capsule", ((157.0, 128.0), (167.0, 128.0), 11.0), MYELIN),
    ("capsule", ((197.0, 128.0), (199.0, 128.0), 11.0), MYELIN),
]
BG_RECT = (16.0, 16.0, 240.0, 240.0, 52.0)  # x0, y0, x1, y1, corner radius


def hexcol(c):
    return "#%02X%02X%02X" % c


def svg():
    x0, y0, x1, y1, r = BG_RECT
    out = [
        '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">'
        % (SIZE, SIZE, SIZE, SIZE),
        '  <title>Myelin Studio</title>',
        '  <defs><linearGradient id="bg" x1="0" y1="0" x2="0" y2="1">',
        '    <stop offset="0" stop-color="%s"/><stop offset="1" stop-color="%s"/>'
        % (hexcol(BG_TOP), hexcol(BG_BOTTOM)),
        "  </linearGradient></defs>",
        '  <rect x="%g" y="%g" width="%g" height="%g" rx="%g" fill="url(#bg)"/>'
        % (x0, y0, x1 - x0, y1 - y0, r),
    ]
    for kind, p, col in SHAPES:
        if kind == "circle":
            (cx, cy), rad = p
            out.append('  <circle cx="%g" cy="%g" r="%g" fill="%s"/>' % (cx, cy, rad, hexcol(col)))
        else:
            (ax, ay), (bx, by), rad = p
            out.append(
                '  <line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="%g" '
                'stroke-linecap="round"/>' % (ax, ay, bx, by, hexcol(col), 2 * rad)
            )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def sd_circle(px, py, p):
    (cx, cy), r = p
    return math.hypot(px - cx, py - cy) - r


def sd_capsule(px, py, p):
    (ax, ay), (bx, by), r = p
    dx, dy = bx - ax, by - ay
    t = ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)
    t = min(1.0, max(0.0, t))
    return math.hypot(px - ax - t * dx, py - ay - t * dy) - r


def sd_round_rect(px, py):
    x0, y0, x1, y1, r = BG_RECT
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    hx, hy = (x1 - x0) / 2 - r, (y1 - y0) / 2 - r
    qx, qy = abs(px - cx) - hx, abs(py - cy) - hy
    outside = math.hypot(max(qx, 0.0), max(qy, 0.0))
    return outside + min(max(qx, qy), 0.0) - r


def coverage(d):
    return min(1.0, max(0.0, 0.5 - d))  # one pixel of anti-aliasing


def png():
    rows = []
    for y in range(SIZE):
        row = bytearray([0])  # filter: none
        py = y + 0.5
        t = (py - BG_RECT[1]) / (BG_RECT[3] - BG_RECT[1])
        bg = [a + (b - a) * min(1.0, max(0.0, t)) for a, b in zip(BG_TOP, BG_BOTTOM)]
        for x in range(SIZE):
            px = x + 0.5
            alpha = coverage(sd_round_rect(px, py))
            rgb = list(bg)
            if alpha > 0.0:
                for kind, p, col in SHAPES:
                    d = sd_circle(px, py, p) if kind == "circle" else sd_capsule(px, py, p)
                    c = coverage(d)
                    if c > 0.0:
                        rgb = [u + (v - u) * c for u, v in zip(rgb, col)]
            row += bytes(int(round(v)) for v in rgb) + bytes([int(round(alpha * 255))])
        rows.append(bytes(row))

    def chunk(tag, data):
        body = tag + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"".join(rows), 9))
        + chunk(b"IEND", b"")
    )


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "myelin.svg"), "w", encoding="utf-8") as f:
        f.write(svg())
    with open(os.path.join(here, "myelin.png"), "wb") as f:
        f.write(png())


if __name__ == "__main__":
    main()
