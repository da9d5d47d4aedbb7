#!/usr/bin/python3
"""Writes the photos tests/test_image_reduced.c and tests/test_image_formats.c read, with Pillow.

usage: image_inputs.py jpeg OUT_DIR [SHARED_PHOTO...]   large JPEGs for the reduced decode
       image_inputs.py formats OUT_DIR                  the same pixels as PNG, WebP and TIFF
Exits 3 when Pillow (or numpy) is missing, so the test can say so and skip.
"""
import os
import sys

try:
    import numpy as np
    from PIL import Image
except ImportError:
    sys.exit(3)


def detailed(w, h, seed):
    """A synthetic photo with detail at every scale: smooth colour fields, noise, hard edges and thin
    lines (the content where a reduced decode differs most from a full one)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.empty((h, w, 3), np.float32)
    for c in range(3):
        img[..., c] = 128 + 60 * np.sin(x / (37 + 11 * c) + c) * np.cos(y / (53 - 7 * c))
    img += rng.normal(0, 12, (h, w, 3)).astype(np.float32)           # sensor-like noise
    img[(x.astype(int) // 97 + y.astype(int) // 89) % 2 == 0] *= 0.6    # hard-edged checkerboard
    img[(x.astype(int) % 61) < 2] = (250, 250, 250)                    # thin bright lines
    img[(y.astype(int) % 47) < 1] = (10, 20, 30)
    return Image.fromarray(np.clip(img, 0, 255).astype(np.uint8), "RGB")


def jpegs(out, shared):
    big = detailed(4032, 3024, 1)
    big.save(os.path.join(out, "syn_420.jpg"), quality=90)
    detailed(4031, 3023, 2).save(os.path.join(out, "syn_444_odd_prog.jpg"), quality=90, subsampling=0, progressive=True)
    detailed(2000, 1500, 3).convert("L").save(os.path.join(out, "syn_gray.jpg"), quality=90)
    exif = Image.Exif()
    exif[0x0112] = 6  # stored landscape, upright portrait
    big.save(os.path.join(out, "syn_exif6.jpg"), quality=90, exif=exif.tobytes())
    detailed(1600, 1200, 4).convert("CMYK").save(os.path.join(out, "syn_cmyk.jpg"), quality=90)
    for i, p in enumerate(shared):  # real photos, upscaled to 12 MP (long side 4032, aspect kept)
        im = Image.open(p).convert("RGB")
        w, h = (4032, 3024) if im.width >= im.height else (3024, 4032)
        im.resize((w, h), Image.LANCZOS).save(os.path.join(out, "shared%d_12mp.jpg" % i), quality=90)


def formats(out):
    rgb = detailed(97, 61, 5)
    rgb.save(os.path.join(out, "rgb.png"))
    rgb.save(os.path.join(out, "rgb_lossless.webp"), lossless=True)
    rgb.save(os.path.join(out, "rgb_lossy.webp"), quality=80)
    Image.open(os.path.join(out, "rgb_lossy.webp")).convert("RGB").save(os.path.join(out, "rgb_lossy_pil.png"))
    rgb.save(os.path.join(out, "rgb_raw.tif"))
    rgb.save(os.path.join(out, "rgb_lzw.tif"), compression="tiff_lzw")
    rgb.save(os.path.join(out, "rgb_deflate.tif"), compression="tiff_adobe_deflate")
    gray = rgb.convert("L")
    gray.save(os.path.join(out, "gray.png"))
    gray.save(os.path.join(out, "gray.tif"))
    gray.save(os.path.join(out, "gray_lossless.webp"), lossless=True)
    rgba = rgb.convert("RGBA")
    a = np.asarray(rgba).copy()
    a[..., 3] = (np.arange(97)[None, :] * 255 // 96).astype(np.uint8)
    rgba = Image.fromarray(a, "RGBA")
    rgba.save(os.path.join(out, "rgba.png"))
    rgba.save(os.path.join(out, "rgba_lossless.webp"), lossless=True)
    rgba.save(os.path.join(out, "rgba.tif"))


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("jpeg", "formats"):
        sys.exit(__doc__)
    os.makedirs(sys.argv[2], exist_ok=True)
    jpegs(sys.argv[2], sys.argv[3:]) if sys.argv[1] == "jpeg" else formats(sys.argv[2])
