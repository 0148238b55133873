#!/usr/bin/env python3
"""Check that a PNG is a real picture: at least WxH pixels and not blank (more than one distinct
colour, and a reasonable share of non-background pixels). Standard library only (zlib).

usage: png_check.py FILE MIN_WIDTH MIN_HEIGHT
"""
import struct
import sys
import zlib


def main():
    path, min_w, min_h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        print(f"{path}: not a PNG")
        return 1
    pos, idat = 8, b""
    w = h = bit_depth = colour = 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            w, h, bit_depth, colour = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    if w < min_w or h < min_h:
        print(f"{path}: {w}x{h}, expected at least {min_w}x{min_h}")
        return 1
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[colour]
    bpp = channels * bit_depth // 8
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    pixels = {}
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        for x in range(0, stride, bpp * 7):  # sample every 7th pixel
            px = bytes(line[x:x + bpp])
            pixels[px] = pixels.get(px, 0) + 1
        prev = line
    total = sum(pixels.values())
    background = max(pixels.values())
    if len(pixels) < 3 or background > 0.97 * total:
        print(f"{path}: looks blank ({len(pixels)} colours, {background / total:.0%} background)")
        return 1
    print(f"{path}: {w}x{h}, {len(pixels)} colours, {1 - background / total:.0%} drawn")
    return 0


if __name__ == "__main__":
    sys.exit(main())
