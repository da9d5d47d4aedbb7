"""tflite_int8_ref.py: TFLite's reference integer kernels re-implemented in NumPy, from TFLite's
documented semantics (reference_ops / reference_integer_ops, quantization_util.cc, kernel_util.cc),
independent of src/cnn/cnn_int8*.c: the check of `--precision int8` (tests/test_cnn_int8.c).

  tflite_int8_ref.py MODEL H W LAYER IN.bin OUT.bin
IN.bin: the graph's input tensor (1 x H x W x C) as its own integers (uint8 or int8 bytes); OUT.bin:
the integers q of tensor LAYER (full name) as int32 little-endian. Runs CONV_2D, DEPTHWISE_CONV_2D,
ADD, AVERAGE_POOL_2D, RESHAPE and QUANTIZE, in int64 (every sum exact), with:
  - sums of (filter - filter zero point) * (input - input zero point) over the taps inside the image
    (taps outside skipped), plus the int32 bias;
  - MultiplyByQuantizedMultiplier: SaturatingRoundingDoublingHighMul (nudge, division truncating
    toward zero) then RoundingDivideByPOT, as written in TFLite's common.h;
  - QuantizeMultiplier (frexp, round half away from zero, 2^31 carried into the exponent);
  - multipliers: a uint8 conv's float32(input scale * filter scale) / output scale
    (GetQuantizedConvolutionMultipler), an int8 conv's double per channel; ADD's left shift 20;
  - fused activations as clamps at zero point + round(f / scale) (float32), half away from zero.
Dev tool; run with /usr/bin/python3 (numpy)."""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tflite_py  # noqa: E402

D31 = 1 << 31


def raw_ints(b):
    """Each tensor's constant data as its own integers (None for activations), read from the buffers."""
    r = tflite_py._Reader(b)
    root = r.table(r.u32(0))
    buffers = [bytes(r.vector_raw(bt, 0)) for bt in r.tables(root, 4)]
    sg = r.tables(root, 2)[0]
    out = []
    for tt in r.tables(sg, 0):
        shape, ttype, buf = r.vector(tt, 0, "i"), r.scalar(tt, 1, "b"), r.scalar(tt, 2, "I")
        raw = buffers[buf] if buf < len(buffers) else b""
        dt = {2: "<i4", 3: "u1", 9: "i1"}.get(ttype)
        out.append(np.frombuffer(raw, dtype=dt).astype(np.int64).reshape(shape) if raw and dt else None)
    return out


def tround(x):
    """TfLiteRound (std::round): half away from zero."""
    return math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)


def quantize_multiplier(real):
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    qf = tround(q * D31)
    if qf == D31:
        qf //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return qf, shift


def srdhm(a, b):
    ab = a.astype(np.int64) * b
    v = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    return np.where(v >= 0, v // D31, -((-v) // D31))  # C++ division: toward zero


def rdbp(x, e):
    mask = (np.int64(1) << e) - 1
    rem = x & mask
    thr = (mask >> 1) + (x < 0)
    return (x >> e) + (rem > thr)


def mbqm(x, m, shift):
    """MultiplyByQuantizedMultiplier, m and shift scalars or broadcasting arrays."""
    m, shift = np.asarray(m, np.int64), np.asarray(shift, np.int64)
    left, right = np.maximum(shift, 0), np.maximum(-shift, 0)
    xs = x * (np.int64(1) << left)
    assert np.all(np.abs(xs) < D31), "left shift overflows int32"
    return rdbp(srdhm(xs, m), right)


def qrange(t):
    return (-128, 127) if t["type"] == 9 else (0, 255)


def act_range(act, t):
    scale, zp = np.float32(t["scale"][0]), t["zero_point"][0]
    qmin, qmax = qrange(t)
    q = lambda f: zp + int(tround(float(np.float32(f) / scale)))  # noqa: E731  float32 division
    if act == 1:
        return max(qmin, q(0.0)), qmax
    if act == 3:
        return max(qmin, q(0.0)), min(qmax, q(6.0))
    if act == 2:
        return max(qmin, q(-1.0)), min(qmax, q(1.0))
    return qmin, qmax


def same_pad(n, k, s, d, valid):
    if valid:
        return (n - (k - 1) * d - 1) // s + 1, 0
    out = (n + s - 1) // s
    total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
    return out, total // 2


def window(x, o, k_h, k_w, zp_fill):
    """The input padded (with the input's zero point: its terms are 0) and the output size."""
    H, W = x.shape[0], x.shape[1]
    sh, sw = o["opt"].get("stride_h", 1), o["opt"].get("stride_w", 1)
    dh, dw = o["opt"].get("dil_h", 1), o["opt"].get("dil_w", 1)
    valid = o["opt"].get("padding", 0) == 1
    oh, pt = same_pad(H, k_h, sh, dh, valid)
    ow, pl = same_pad(W, k_w, sw, dw, valid)
    ph = max((oh - 1) * sh + (k_h - 1) * dh + 1 - H - pt, 0)
    pw = max((ow - 1) * sw + (k_w - 1) * dw + 1 - W - pl, 0)
    xp = np.pad(x, ((pt, ph), (pl, pw), (0, 0)), constant_values=zp_fill)
    return xp, oh, ow, sh, sw, dh, dw


def conv_multipliers(tin, tw, tout, n):
    ws = tw["scale"]
    out = []
    for c in range(n):
        s = ws[c if len(ws) > 1 else 0]
        if tin["type"] == 3:  # uint8: GetQuantizedConvolutionMultipler, float32 product
            real = float(np.float32(tin["scale"][0]) * np.float32(s)) / float(tout["scale"][0])
        else:
            real = tin["scale"][0] * s / tout["scale"][0]
        out.append(quantize_multiplier(real))
    m = np.array([a for a, _ in out], np.int64)
    sh = np.array([b for _, b in out], np.int64)
    return m, sh


def run(model_bytes, H, W, layer, x_in):
    m = tflite_py.read_model(model_bytes)
    ints = raw_ints(model_bytes)
    T = m["tensors"]
    target = [i for i, t in enumerate(T) if t["name"] == layer]
    assert target, "no tensor " + layer
    target = target[0]
    vals = {m["inputs"][0]: x_in.astype(np.int64).reshape(H, W, -1)}
    for o in m["ops"]:
        if target in vals:
            break
        name, ins, out = o["opname"], o["inputs"], o["outputs"][0]
        to = T[out]
        zo = to["zero_point"][0]
        if name in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            ti, tw = T[ins[0]], T[ins[1]]
            x = vals[ins[0]]
            zi = ti["zero_point"][0]
            w = ints[ins[1]]
            wz = np.array(tw["zero_point"] or [0], np.int64)
            bias = ints[ins[2]] if len(ins) > 2 and ins[2] >= 0 else None
            if name == "CONV_2D":
                n, kh, kw, _ = w.shape
                r = w - (wz.reshape(-1, 1, 1, 1) if len(wz) > 1 else wz[0])
            else:
                _, kh, kw, n = w.shape
                r = (w - (wz.reshape(1, 1, 1, -1) if len(wz) > 1 else wz[0]))[0]
            xp, oh, ow, sh, sw, dh, dw = window(x - zi, o, kh, kw, 0)
            acc = np.zeros((oh, ow, n), np.int64)
            for ky in range(kh):
                for kx in range(kw):
                    patch = xp[ky * dh: ky * dh + (oh - 1) * sh + 1: sh, kx * dw: kx * dw + (ow - 1) * sw + 1: sw, :]
                    if name == "CONV_2D":
                        acc += patch @ r[:, ky, kx, :].T
                    else:
                        mult = n // patch.shape[2]
                        acc += np.repeat(patch, mult, axis=2) * r[ky, kx, :]
            if bias is not None:
                acc += bias
            mm, ss = conv_multipliers(ti, tw, to, n)
            y = mbqm(acc, mm, ss) + zo
            lo, hi = act_range(o["opt"].get("act", 0), to)
            vals[out] = np.clip(y, lo, hi)
        elif name == "ADD":
            a, b = T[ins[0]], T[ins[1]]
            s1, s2, so = a["scale"][0], b["scale"][0], to["scale"][0]
            twice = 2.0 * max(s1, s2)
            m1, e1 = quantize_multiplier(s1 / twice)
            m2, e2 = quantize_multiplier(s2 / twice)
            mo, eo = quantize_multiplier(twice / (float(1 << 20) * so))
            x1 = (vals[ins[0]] - a["zero_point"][0]) * (1 << 20)
            x2 = (vals[ins[1]] - b["zero_point"][0]) * (1 << 20)
            s = mbqm(x1, m1, e1) + mbqm(x2, m2, e2)
            y = mbqm(s, mo, eo) + zo
            lo, hi = act_range(o["opt"].get("act", 0), to)
            vals[out] = np.clip(y, lo, hi)
        elif name == "AVERAGE_POOL_2D":
            x = vals[ins[0]]
            kh, kw = o["opt"]["filter_h"], o["opt"]["filter_w"]
            xp, oh, ow, sh, sw, _, _ = window(x, o, kh, kw, 0)
            cnt = window(np.ones(x.shape[:2] + (1,), np.int64), o, kh, kw, 0)[0]
            acc = np.zeros((oh, ow, x.shape[2]), np.int64)
            n = np.zeros((oh, ow, 1), np.int64)
            for ky in range(kh):
                for kx in range(kw):
                    acc += xp[ky: ky + (oh - 1) * sh + 1: sh, kx: kx + (ow - 1) * sw + 1: sw]
                    n += cnt[ky: ky + (oh - 1) * sh + 1: sh, kx: kx + (ow - 1) * sw + 1: sw]
            half = n // 2
            if to["type"] == 9:
                y = np.where(acc > 0, (acc + half) // n, -((-(acc - half)) // n))
            else:
                y = (acc + half) // n
            lo, hi = act_range(o["opt"].get("act", 0), to)
            vals[out] = np.clip(y, lo, hi)
        elif name == "RESHAPE":
            vals[out] = vals[ins[0]].reshape(-1)
        elif name == "QUANTIZE":
            ti = T[ins[0]]
            mq, eq = quantize_multiplier(ti["scale"][0] / to["scale"][0])
            y = mbqm(vals[ins[0]] - ti["zero_point"][0], mq, eq) + zo
            lo, hi = qrange(to)
            vals[out] = np.clip(y, lo, hi)
        else:
            raise SystemExit("tflite_int8_ref: no kernel for " + name)
    return vals[target]


def main():
    if len(sys.argv) != 7:
        raise SystemExit(__doc__)
    model, H, W, layer, fin, fout = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
    b = open(model, "rb").read()
    it = tflite_py.read_model(b)
    tin = it["tensors"][it["inputs"][0]]
    x = np.fromfile(fin, dtype=np.int8 if tin["type"] == 9 else np.uint8)
    y = run(b, H, W, layer, x)
    y.astype("<i4").tofile(fout)


if __name__ == "__main__":
    main()
