"""fuzz/make_detector_seeds.py: the seed corpus of the `detector` fuzz target (fuzz/corpus/detector/): small
float TFLite graphs shaped as a detector (input 1 x 32 x 32 x 3, output 1 x A x (5 + labels), 2 labels), each
built around the operators a YOLOX graph brings beyond the classifier's: PAD before a VALID convolution,
STRIDED_SLICE (the focus layer's space-to-depth, the box decoding's column picks, a shrunk axis), TRANSPOSE,
BROADCAST_TO, SCATTER_ND with constant indices and computed updates, RESIZE_NEAREST_NEIGHBOR, EXP,
LOGISTIC, SUB, MUL, CONCATENATION. Written with tools/tflite_py.py (independent of src/formats/tflite.c).
Run with /usr/bin/python3 (numpy): python3 fuzz/make_detector_seeds.py [OUT_DIR]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import tflite_py as tp  # noqa: E402

tp.CODES.update({"STRIDED_SLICE": 45, "TRANSPOSE": 39, "EXP": 47, "LOGISTIC": 14, "SUB": 41,
                 "RESIZE_NEAREST_NEIGHBOR": 97, "BROADCAST_TO": 130, "SCATTER_ND": 122})
rng = np.random.default_rng(35)
C = 7  # 5 + 2 labels


class G:
    """A graph being written: tensors by index, ops in order."""

    def __init__(self):
        self.t, self.ops = [], []
        self.x = self.tensor([1, 32, 32, 3])

    def tensor(self, shape, data=None, type="float32"):
        self.t.append(dict(name=f"t{len(self.t)}", shape=list(shape), type=type, data=data))
        return len(self.t) - 1

    def const_i(self, vals):
        a = np.array(vals, dtype=np.int32)
        return self.tensor(a.shape, a, "int32")

    def op(self, name, inputs, shape, **opt):
        y = self.tensor(shape)
        d = dict(op=name, inputs=inputs, outputs=[y])
        if "raw" in opt:
            d["raw_opt"] = opt.pop("raw")
        d["opt"] = opt
        self.ops.append(d)
        return y

    def conv(self, x, cin, cout, k, s, hw, padding=0):
        w = self.tensor([cout, k, k, cin], rng.normal(0, 0.3, (cout, k, k, cin)).astype(np.float32))
        b = self.tensor([cout], rng.normal(0, 0.1, cout).astype(np.float32))
        return self.op("CONV_2D", [x, w, b], [1, hw, hw, cout], padding=padding, stride_w=s, stride_h=s)

    def reshape(self, x, shape):
        return self.op("RESHAPE", [x, self.const_i(shape)], shape)

    def slice(self, x, begin, end, strides, shape, begin_mask=0, end_mask=0, shrink=0):
        return self.op("STRIDED_SLICE", [x, self.const_i(begin), self.const_i(end), self.const_i(strides)], shape,
                       raw=(32, [("i", begin_mask), ("i", end_mask), ("i", 0), ("i", 0), ("i", shrink)]))

    def bytes(self, y, squash=True):
        """The graph with output y (through LOGISTIC when squash: scores that are probabilities, so a
        run reaches the box decoding and NMS rather than the detector's refusal)."""
        if squash:
            y = self.op("LOGISTIC", [y], self.t[y]["shape"])
        return tp.write_model(self.t, self.ops, [self.x], [y])


def pad_conv():
    g = G()
    p = g.op("PAD", [g.x, g.const_i([[0, 0], [1, 1], [1, 1], [0, 0]])], [1, 34, 34, 3])
    y = g.conv(p, 3, C, 3, 2, 16, padding=1)
    return g.bytes(g.reshape(y, [1, 256, C]))


def focus():
    g = G()
    parts = [g.slice(g.x, [0, i, j, 0], [1, 32, 32, 3], [1, 2, 2, 1], [1, 16, 16, 3]) for i, j in ((0, 0), (1, 0), (0, 1), (1, 1))]
    cat = g.op("CONCATENATION", parts, [1, 16, 16, 12], axis=3)
    y = g.conv(cat, 12, C, 1, 1, 16)
    return g.bytes(g.reshape(y, [1, 256, C]))


def decode():
    g = G()
    y = g.reshape(g.conv(g.x, 3, C, 1, 4, 8), [1, 64, C])
    xy = g.slice(y, [0, 0, 0], [1, 64, 2], [1, 1, 1], [1, 64, 2])
    grid = np.stack(np.meshgrid(np.arange(8), np.arange(8)), -1).reshape(1, 64, 2).astype(np.float32)
    xy = g.op("ADD", [xy, g.tensor([1, 64, 2], grid)], [1, 64, 2])
    wh = g.op("EXP", [g.slice(y, [0, 0, 2], [1, 64, 4], [1, 1, 1], [1, 64, 2])], [1, 64, 2])
    sc = g.op("LOGISTIC", [g.slice(y, [0, 0, 4], [0, 0, 0], [1, 1, 1], [1, 64, 3], end_mask=7)], [1, 64, 3])
    return g.bytes(g.op("CONCATENATION", [xy, wh, sc], [1, 64, C], axis=2), squash=False)


def scatter():
    g = G()
    y = g.reshape(g.conv(g.x, 3, C, 3, 2, 16), [1, 256, C])
    upd = g.slice(y, [0, 0, 0], [1, 2, C], [1, 1, 1], [2, C], shrink=1)  # computed updates, axis 0 shrunk
    sc = g.op("SCATTER_ND", [g.const_i([[1], [5]]), upd, g.const_i([256, C])], [256, C])
    return g.bytes(g.op("SUB", [y, sc], [1, 256, C]))


def resize_transpose():
    g = G()
    y = g.conv(g.x, 3, C, 1, 4, 8)
    r = g.op("RESIZE_NEAREST_NEIGHBOR", [y, g.const_i([16, 16])], [1, 16, 16, C], raw=(74, [("B", 0), ("B", 0)]))
    t = g.op("TRANSPOSE", [r, g.const_i([0, 2, 1, 3])], [1, 16, 16, C])
    return g.bytes(g.reshape(t, [1, 256, C]))


def broadcast():
    g = G()
    y = g.reshape(g.conv(g.x, 3, C, 3, 2, 16), [1, 256, C])
    w = g.tensor([1, 1, C], rng.normal(1, 0.2, (1, 1, C)).astype(np.float32))
    b = g.op("BROADCAST_TO", [w, g.const_i([1, 256, C])], [1, 256, C])
    return g.bytes(g.op("MUL", [y, b], [1, 256, C]))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "detector")
    os.makedirs(out, exist_ok=True)
    for f in (pad_conv, focus, decode, scatter, resize_transpose, broadcast):
        with open(os.path.join(out, f"seed_{f.__name__}.tflite"), "wb") as fh:
            fh.write(f())
    g = G()  # scores that are no probabilities: the detector refuses them (one line)
    with open(os.path.join(out, "seed_raw_scores.tflite"), "wb") as fh:
        fh.write(g.bytes(g.reshape(g.conv(g.x, 3, C, 3, 2, 16), [1, 256, C]), squash=False))


if __name__ == "__main__":
    main()
