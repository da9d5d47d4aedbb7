"""numpy_graph.py: runs a float TFLite graph in float64 NumPy, written from TensorFlow's documented
operator semantics and independent of src/cnn: the reference the detector's engine is checked against
(tests/detector_ref.sh). Reads the flatbuffer with tools/tflite_py.py (also independent of
src/formats/tflite.c).

  run(model_bytes, input_nhwc) -> the graph's first output, float64
  run(model_bytes, input_nhwc, outputs=[name, ...]) -> those tensors, each computed as soon as its
      operators have run (what follows them is not run: a detector's levels at another input size)

An input of another size than the file's runs the graph at that size, as TensorFlow would trace it:
RESIZE_NEAREST_NEIGHBOR's constant size, a whole multiple of its input's size in the file, keeps that
factor of the input it is given.

Operators: CONV_2D, DEPTHWISE_CONV_2D, MAX_POOL_2D, AVERAGE_POOL_2D, ADD, SUB, MUL, LOGISTIC, EXP,
PAD, CONCATENATION, RESHAPE, STRIDED_SLICE, TRANSPOSE, BROADCAST_TO, SCATTER_ND,
RESIZE_NEAREST_NEIGHBOR. Dev tool only; run with /usr/bin/python3 (numpy).
"""
import math
import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import tflite_py  # noqa: E402

ACT = {0: lambda x: x, 1: lambda x: np.maximum(x, 0), 2: lambda x: np.clip(x, -1, 1), 3: lambda x: np.clip(x, 0, 6)}


def same_pad(n, k, s, d):
    """TensorFlow's SAME padding: output ceil(n / s), the odd pixel of padding at the end."""
    out = -(-n // s)
    ek = (k - 1) * d + 1
    total = max((out - 1) * s + ek - n, 0)
    return out, total // 2, total - total // 2


def windows(x, kh, kw, sh, sw, dh, dw, padding, fill):
    """x [H, W, C] -> [OH, OW, kh, kw, C] windows, TF padding (0 SAME, 1 VALID)."""
    H, W, _ = x.shape
    if padding == 0:
        oh, pt, pb = same_pad(H, kh, sh, dh)
        ow, pl, pr = same_pad(W, kw, sw, dw)
        x = np.pad(x, ((pt, pb), (pl, pr), (0, 0)), constant_values=fill)
    else:
        oh = (H - (kh - 1) * dh - 1) // sh + 1
        ow = (W - (kw - 1) * dw - 1) // sw + 1
    rows = [[x[i * dh: i * dh + (oh - 1) * sh + 1: sh, j * dw: j * dw + (ow - 1) * sw + 1: sw, :]
             for j in range(kw)] for i in range(kh)]
    return np.stack([np.stack(r, axis=2) for r in rows], axis=2)  # [oh, ow, kh, kw, C]


def conv(x, w, b, o):
    win = windows(x[0], w.shape[1], w.shape[2], o["stride_h"], o["stride_w"], o.get("dil_h", 1), o.get("dil_w", 1),
                  o["padding"], 0.0)
    y = np.tensordot(win, w, axes=([2, 3, 4], [1, 2, 3]))
    if b is not None:
        y = y + b
    return ACT[o["act"]](y)[None]


def depthwise(x, w, b, o):
    win = windows(x[0], w.shape[1], w.shape[2], o["stride_h"], o["stride_w"], o.get("dil_h", 1), o.get("dil_w", 1),
                  o["padding"], 0.0)
    mult = w.shape[3] // x.shape[3]
    win = np.repeat(win, mult, axis=4)
    y = np.einsum("hwijc,ijc->hwc", win, w[0])
    if b is not None:
        y = y + b
    return ACT[o["act"]](y)[None]


def pool(x, o, is_max):
    if is_max:
        win = windows(x[0], o["filter_h"], o["filter_w"], o["stride_h"], o["stride_w"], 1, 1, o["padding"], -np.inf)
        return ACT[o["act"]](win.max(axis=(2, 3)))[None]
    win = windows(x[0], o["filter_h"], o["filter_w"], o["stride_h"], o["stride_w"], 1, 1, o["padding"], np.nan)
    return ACT[o["act"]](np.nanmean(win, axis=(2, 3)))[None]


def strided_slice(x, begin, end, strides, o):
    assert not o.get("ellipsis_mask") and not o.get("new_axis_mask")
    idx, squeeze = [], []
    for d in range(x.ndim):
        b, e, s = int(begin[d]), int(end[d]), int(strides[d])
        if o.get("offset"):
            e = b + e
        if o.get("shrink_axis_mask", 0) >> d & 1:
            idx.append(b)
            continue
        idx.append(slice(None if o.get("begin_mask", 0) >> d & 1 else b, None if o.get("end_mask", 0) >> d & 1 else e, s))
    return x[tuple(idx)]


def resize_nearest(x, size, o):
    H, W = x.shape[1], x.shape[2]
    OH, OW = int(size[0]), int(size[1])
    align, half = o.get("align_corners", 0), o.get("half_pixel_centers", 0)

    def src(i, n, on):
        scale = (n - 1) / (on - 1) if align and on > 1 else n / on
        v = (i + (0.5 if half else 0.0)) * scale
        k = int(round(v)) if align else math.floor(v)
        return min(max(k, 0), n - 1)
    ys = [src(i, H, OH) for i in range(OH)]
    xs = [src(i, W, OW) for i in range(OW)]
    return x[:, ys][:, :, xs]


def scatter_nd(indices, updates, shape):
    out = np.zeros([int(v) for v in shape])
    idx = indices.astype(np.int64)
    K = idx.shape[-1]
    flat = idx.reshape(-1, K)
    upd = updates.reshape((flat.shape[0],) + out.shape[K:])
    np.add.at(out, tuple(flat.T), upd)
    return out


def run(model_bytes, image, outputs=None):
    m = tflite_py.read_model(model_bytes)
    T = m["tensors"]
    vals = {m["inputs"][0]: np.asarray(image, dtype=np.float64)}
    want = None if outputs is None else [next(i for i, t in enumerate(T) if t["name"] == n) for n in outputs]
    needed = set(want) if want is not None else None
    if needed is not None:  # only the operators the wanted tensors depend on
        for op in reversed(m["ops"]):
            if any(i in needed for i in op["outputs"]):
                needed.update(i for i in op["inputs"] if i >= 0)

    def get(i):
        if i in vals:
            return vals[i]
        d = T[i]["data"]
        return None if d is None else d.astype(np.float64)
    for op in m["ops"]:
        if needed is not None and not any(i in needed for i in op["outputs"]):
            continue
        c, o = op["opcode"], op["opt"]
        ins = [get(i) if i >= 0 else None for i in op["inputs"]]
        if c == 3:
            y = conv(ins[0], ins[1], ins[2] if len(ins) > 2 else None, o)
        elif c == 4:
            y = depthwise(ins[0], ins[1], ins[2] if len(ins) > 2 else None, o)
        elif c in (17, 1):
            y = pool(ins[0], o, c == 17)
        elif c in (0, 18, 41):
            a, b = ins
            y = a + b if c == 0 else a * b if c == 18 else a - b
            y = ACT[o.get("act", 0)](y)
        elif c == 14:
            y = 1.0 / (1.0 + np.exp(-ins[0]))
        elif c == 47:
            y = np.exp(ins[0])
        elif c == 34:
            y = np.pad(ins[0], [(int(p[0]), int(p[1])) for p in ins[1]])
        elif c == 2:
            y = ACT[o.get("act", 0)](np.concatenate(ins, axis=o["axis"]))
        elif c == 22:
            shape = T[op["outputs"][0]]["shape"]
            y = ins[0].reshape(shape)
        elif c == 45:
            y = strided_slice(ins[0], ins[1], ins[2], ins[3], o)
        elif c == 39:
            y = np.transpose(ins[0], [int(v) for v in ins[1]])
        elif c == 130:
            y = np.broadcast_to(ins[0], [int(v) for v in ins[1]]).copy()
        elif c == 122:
            y = scatter_nd(ins[0], ins[1], ins[2])
        elif c == 97:
            size = [int(v) for v in ins[1]]
            decl = T[op["inputs"][0]]["shape"]
            for d in range(2):
                if ins[0].shape[1 + d] != decl[1 + d] and size[d] % decl[1 + d] == 0:
                    size[d] = ins[0].shape[1 + d] * (size[d] // decl[1 + d])
            y = resize_nearest(ins[0], size, o)
        else:
            raise SystemExit("numpy_graph: operator %d not implemented" % c)
        vals[op["outputs"][0]] = y
        if want is not None and all(i in vals for i in want):
            return [vals[i] for i in want]
    return vals[m["outputs"][0]]


if __name__ == "__main__":
    # numpy_graph.py MODEL.tflite INPUT.f32 H W C OUT.f64: runs the graph on a raw float32 NHWC input
    model, inp, H, W, C, out = sys.argv[1:7]
    x = np.fromfile(inp, dtype="<f4").reshape(1, int(H), int(W), int(C))
    y = run(open(model, "rb").read(), x)
    y.astype("<f8").tofile(out)
    print("numpy_graph: output", list(y.shape))
