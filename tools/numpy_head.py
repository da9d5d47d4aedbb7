"""numpy_head.py: a float64 NumPy reference of the classifier head after the annotation layer, for tests/test_tags.c.

Regenerate (needs ../shared and Debian's python3-numpy):
    /usr/bin/python3 tools/numpy_head.py ../shared tests/fixtures/cnn/head_ref.bin

The head of mobilenet_v2_1.0_224_quant.tflite (MobilenetV2/Logits: average pool -> 1x1 conv -> softmax)
read by tools/tflite_py.py (independent of src/formats/tflite.c), weights dequantized there, run in float64 on a
synthetic 6x5x1280 grid that the C test rebuilds bit for bit: value (row-major NHWC index i) =
float32(((i * 2654435761) mod 2^32) mod 1000) * float32(0.006). Writes float32 probabilities,
one row of 1001 per window of WINDOWS (y, x, h, w; the first is the whole grid).
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tflite_py import read_model  # noqa: E402

GRID_H, GRID_W, DIM = 6, 5, 1280
WINDOWS = [(0, 0, 6, 5), (1, 1, 3, 3), (3, 2, 3, 3), (0, 4, 6, 1)]


def main():
    shared, out = sys.argv[1], sys.argv[2]
    m = read_model(open(os.path.join(shared, "encoders", "mobilenet_v2_1.0_224_quant.tflite"), "rb").read())
    ops = {op["opname"]: op for op in m["ops"]}
    conv = [op for op in m["ops"] if op["opname"] == "CONV_2D"][-1]  # the Logits 1x1 conv
    w = m["tensors"][conv["inputs"][1]]["data"].reshape(1001, DIM).astype(np.float64)
    b = m["tensors"][conv["inputs"][2]]["data"].astype(np.float64)
    assert "SOFTMAX" in ops and m["tensors"][conv["inputs"][1]]["name"].startswith("MobilenetV2/Logits")
    i = np.arange(GRID_H * GRID_W * DIM, dtype=np.uint64)
    k = ((i * np.uint64(2654435761)) % np.uint64(1 << 32)) % np.uint64(1000)
    grid = (k.astype(np.float32) * np.float32(0.006)).reshape(GRID_H, GRID_W, DIM).astype(np.float64)
    rows = []
    for y, x, h, ww in WINDOWS:
        pooled = grid[y:y + h, x:x + ww].mean((0, 1))
        z = w @ pooled + b
        e = np.exp(z - z.max())
        rows.append(e / e.sum())
        top = int(np.argmax(rows[-1]))
        print((y, x, h, ww), "top", top, float(rows[-1][top]))
    np.concatenate(rows).astype("<f4").tofile(out)


if __name__ == "__main__":
    main()
