#!/usr/bin/python3
"""Writes the image fixtures of tests/test_image.c into tests/fixtures/img/ with Pillow, numpy, zlib
and torch (independent implementations of decoding, EXIF orientation and resizing).

Regenerate:  /usr/bin/python3 tools/make_image_fixtures.py
Deterministic (fixed seed). manifest.json holds:
  decode: [{file, w, h, rgb (w*h*3 ints, row-major), tol}]: the RGB8 each file must decode to
          (alpha composited over white, 16-bit rounded to 8), tol = allowed max abs difference.
  exif:   {w, h, rgb, files: [{file, orientation}]}: JPEGs whose EXIF orientation 1..8 makes them
          come out as the upright image (checked here with PIL.ImageOps.exif_transpose).
  resize: [{w, h, src, cases: [{w, h, mode, out}]}]: torch.nn.functional.interpolate in float32,
          mode "aa" = bilinear antialias=True, "bilinear" = antialias=False, align_corners=False.
"""
import io
import json
import os
import struct
import zlib

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image, ImageOps

D = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "img")
os.makedirs(D, exist_ok=True)
rng = np.random.RandomState(1234)
man = {"decode": [], "exif": {}, "resize": []}


def over_white(rgba):
    c, a = rgba[..., :3].astype(np.float64), rgba[..., 3:4].astype(np.float64)
    return np.round((c * a + 255 * (255 - a)) / 255).astype(np.uint8)


def add(name, expect_rgb, tol=0):
    h, w, _ = expect_rgb.shape
    man["decode"].append({"file": name, "w": int(w), "h": int(h), "rgb": expect_rgb.reshape(-1).tolist(), "tol": tol})


def png_raw(name, arr16, color_type):
    """A 16-bit PNG written by hand (Pillow cannot write 16-bit RGB)."""
    h, w = arr16.shape[:2]
    raw = b"".join(b"\0" + arr16[y].astype(">u2").tobytes() for y in range(h))
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, color_type, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    open(os.path.join(D, name), "wb").write(png)


# Lossless formats, exact expectations.
rgb = rng.randint(0, 256, (5, 7, 3)).astype(np.uint8)
Image.fromarray(rgb).save(os.path.join(D, "rgb.png")); add("rgb.png", rgb)
Image.fromarray(rgb).save(os.path.join(D, "rgb.bmp")); add("rgb.bmp", rgb)
gray = rng.randint(0, 256, (4, 6)).astype(np.uint8)
Image.fromarray(gray, "L").save(os.path.join(D, "gray.png")); add("gray.png", np.repeat(gray[..., None], 3, 2))
Image.fromarray(gray, "L").save(os.path.join(D, "gray.bmp")); add("gray.bmp", np.repeat(gray[..., None], 3, 2))
rgba = rng.randint(0, 256, (3, 5, 4)).astype(np.uint8)
rgba[0, 0, 3], rgba[0, 1, 3] = 0, 255
Image.fromarray(rgba, "RGBA").save(os.path.join(D, "rgba.png")); add("rgba.png", over_white(rgba))
la = rng.randint(0, 256, (3, 4, 2)).astype(np.uint8)
Image.fromarray(la, "LA").save(os.path.join(D, "gray_alpha.png"))
add("gray_alpha.png", over_white(np.concatenate([la[..., :1]] * 3 + [la[..., 1:]], 2)))
pal = Image.fromarray(rng.randint(0, 4, (6, 5)).astype(np.uint8), "P")
pal.putpalette([255, 0, 0, 0, 128, 0, 10, 20, 250, 200, 200, 7] + [0] * 756)
pal.save(os.path.join(D, "palette.gif")); add("palette.gif", np.array(pal.convert("RGB")))
pal.save(os.path.join(D, "palette.png")); add("palette.png", np.array(pal.convert("RGB")))
c16 = rng.randint(0, 65536, (4, 3, 3)).astype(np.uint16)
c16[0, 0] = [0, 65535, 128]  # 128/65535*255 = 0.498: rounds to 0, (stb's >>8 too); 
c16[0, 1] = [129, 32896, 32767]  # 0.502 -> 1 (stb's >>8 gives 0): catches truncation instead of rounding
png_raw("rgb16.png", c16, 2); add("rgb16.png", np.round(c16 / 65535 * 255).astype(np.uint8))
a16 = rng.randint(0, 65536, (2, 3, 4)).astype(np.uint16)
png_raw("rgba16.png", a16, 6)
c, a = a16[..., :3] / 65535, a16[..., 3:] / 65535
add("rgba16.png", np.round((c * a + (1 - a)) * 255).astype(np.uint8), tol=1)
g16 = rng.randint(0, 65536, (3, 3)).astype(np.uint16)
png_raw("gray16.png", g16, 0); add("gray16.png", np.repeat(np.round(g16 / 65535 * 255).astype(np.uint8)[..., None], 3, 2))
# Adam7-interlaced PNG, written by hand (Pillow cannot): stb must de-interlace it.
def png_interlaced(name, arr):
    h, w = arr.shape[:2]
    raw = b""
    for x0, y0, dx, dy in [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]:
        sub = arr[y0::dy, x0::dx]
        if sub.size:
            raw += b"".join(b"\0" + sub[y].tobytes() for y in range(sub.shape[0]))
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 1))
    png += chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    open(os.path.join(D, name), "wb").write(png)


inter = rng.randint(0, 256, (11, 13, 3)).astype(np.uint8)
png_interlaced("interlaced.png", inter); add("interlaced.png", inter)
assert (np.array(Image.open(os.path.join(D, "interlaced.png")).convert("RGB")) == inter).all()

# A zlib bomb: a 1x1 RGB PNG whose IDAT inflates to 8 MB (the file is ~8 KB). Not in the manifest:
# test_image.c expects it to be refused.
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
open(os.path.join(D, "zbomb.png"), "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
                                               + chunk(b"IDAT", zlib.compress(b"\0" * (8 << 20), 9)) + chunk(b"IEND", b""))

# A smooth JPEG: decoders (stb vs libjpeg) differ by a few levels.
yy, xx = np.mgrid[0:16, 0:24]
smooth = np.stack([xx * 10, yy * 15, 128 + 0 * xx], 2).astype(np.uint8)
Image.fromarray(smooth).save(os.path.join(D, "smooth.jpg"), quality=95, subsampling=0)
add("smooth.jpg", np.array(Image.open(os.path.join(D, "smooth.jpg")).convert("RGB")), tol=4)

# EXIF orientation: stored image S such that applying orientation o gives the upright U.
colors = [[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 0], [255, 0, 255], [0, 255, 255]]
U = np.zeros((24, 16, 3), np.uint8)  # 3 rows x 2 columns of 8x8 blocks: no symmetry
for i, col in enumerate(colors):
    U[(i // 2) * 8:(i // 2) * 8 + 8, (i % 2) * 8:(i % 2) * 8 + 8] = col
inverse = {1: None, 2: Image.FLIP_LEFT_RIGHT, 3: Image.ROTATE_180, 4: Image.FLIP_TOP_BOTTOM,
           5: Image.TRANSPOSE, 6: Image.ROTATE_90, 7: Image.TRANSVERSE, 8: Image.ROTATE_270}


def exif_bytes(o, be):
    e = ">" if be else "<"
    entries = [(0x010F, 2, 4, b"abc\0"), (0x0112, 3, 1, struct.pack(e + "HH", o, 0))]  # Make, then Orientation
    ifd = struct.pack(e + "H", len(entries))
    for tag, typ, cnt, val in entries:
        ifd += struct.pack(e + "HHI", tag, typ, cnt) + val
    ifd += struct.pack(e + "I", 0)
    return b"Exif\0\0" + (b"MM" if be else b"II") + struct.pack(e + "HI", 42, 8) + ifd


man["exif"] = {"w": 16, "h": 24, "rgb": U.reshape(-1).tolist(), "files": []}
for o in range(1, 9):
    S = Image.fromarray(U)
    if inverse[o] is not None:
        S = S.transpose(inverse[o])
    name = "exif%d.jpg" % o
    S.save(os.path.join(D, name), quality=95, subsampling=0, exif=exif_bytes(o, be=o % 2 == 0))
    back = np.array(ImageOps.exif_transpose(Image.open(os.path.join(D, name))).convert("RGB")).astype(int)
    assert back.shape == U.shape and np.abs(back - U).mean() < 3, (o, np.abs(back - U).mean())
    man["exif"]["files"].append({"file": name, "orientation": o})

# Resize against torch (float32).
for (w, h, cases) in [(13, 11, [(5, 4), (7, 3), (13, 11), (20, 17), (6, 25), (1, 1)]), (40, 30, [(9, 7), (224, 3)])]:
    src = rng.randint(0, 256, (h, w, 3)).astype(np.uint8)
    t = torch.from_numpy(src.astype(np.float32)).permute(2, 0, 1)[None]
    entry = {"w": w, "h": h, "src": src.reshape(-1).tolist(), "cases": []}
    for (ow, oh) in cases:
        for mode, aa in [("aa", True), ("bilinear", False)]:
            out = F.interpolate(t, size=(oh, ow), mode="bilinear", align_corners=False, antialias=aa)
            out = out[0].permute(1, 2, 0).numpy().reshape(-1)
            entry["cases"].append({"w": ow, "h": oh, "mode": mode, "out": [round(float(v), 4) for v in out]})
    man["resize"].append(entry)

json.dump(man, open(os.path.join(D, "manifest.json"), "w"), separators=(",", ":"))
print("wrote", D, sorted(os.listdir(D)))
