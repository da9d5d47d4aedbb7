"""check_detector.py: checks the detector's steps (tools/detect_dump) against independent references.

  check_detector.py MODEL PHOTO INPUT.f32 OUTPUT.f32 DETECTIONS.txt

- letterbox: the photo decoded by PIL, resized by a NumPy bilinear resampler (half-pixel centres,
  no antialiasing, as cv2.INTER_LINEAR), placed top-left on 114, BGR: mean |diff| <= 1.5 levels and
  99th percentile <= 6 (decoders differ by IDCT rounding), padding exactly 114;
- the graph: tools/numpy_graph.py in float64 on the same input (at the photo's aspect, H x W in whole
  strides: the graph run up to its three levels, decoded here as the graph decodes them, centre
  (raw + cell) x stride and size exp(raw) x stride; S x S: the whole graph, its own decoding
  included): boxes within 0.05 px, objectness and
  class probabilities within 1e-3 relative + 2e-5 absolute (our float32 accumulation: measured up to
  0.032 px and 6e-5 on the samples; float32 rounding of each operator's output alone gives 0.0025 px);
- decoding and NMS: per-class greedy NMS (score >= 0.3, IoU > 0.45 dropped) written here over the
  reference output: the same detections (label, box within 0.01 px, score within 1e-4).
Prints ok/FAIL lines; exits 1 on any failure. Run with /usr/bin/python3 (numpy, PIL).
"""
import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import numpy_graph  # noqa: E402

model, photo, inp, outp, dets = sys.argv[1:6]
fails = 0


def report(name, ok, why=""):
    global fails
    print(("ok " if ok else "FAIL ") + name + ("" if ok else ": " + why))
    fails += 0 if ok else 1


def bilinear(img, w, h):
    H, W, _ = img.shape
    ys = (np.arange(h) + 0.5) * H / h - 0.5
    xs = (np.arange(w) + 0.5) * W / w - 0.5
    y0 = np.clip(np.floor(ys).astype(int), 0, H - 1); y1 = np.clip(y0 + 1, 0, H - 1)
    x0 = np.clip(np.floor(xs).astype(int), 0, W - 1); x1 = np.clip(x0 + 1, 0, W - 1)
    fy = np.clip(ys - np.floor(ys), 0, 1)[:, None, None]; fx = np.clip(xs - np.floor(xs), 0, 1)[None, :, None]
    ys_neg = ys < 0
    fy = np.where(ys_neg[:, None, None], 0, fy)
    xs_neg = xs < 0
    fx = np.where(xs_neg[None, :, None], 0, fx)
    a = img[y0][:, x0] * (1 - fx) + img[y0][:, x1] * fx
    b = img[y1][:, x0] * (1 - fx) + img[y1][:, x1] * fx
    return a * (1 - fy) + b * fy


S = 416
lines = open(dets).read().split("\n")
H, W = [int(v) for v in [l for l in lines if l.startswith("input")][0].split()[1:3]]
x = np.fromfile(inp, dtype="<f4").reshape(1, H, W, 3)
try:
    from PIL import Image, ImageOps
    im = np.asarray(ImageOps.exif_transpose(Image.open(photo)).convert("RGB"), dtype=np.float64)
    r = min(S / im.shape[1], S / im.shape[0])
    w, h = int(round(im.shape[1] * r)), int(round(im.shape[0] * r))
    ref = np.full((H, W, 3), 114.0)
    ref[:h, :w] = np.round(bilinear(im, w, h))[:, :, ::-1]
    d = np.abs(ref - x[0])
    inside = d[:h, :w]
    report("letterbox", inside.mean() <= 1.5 and np.percentile(inside, 99) <= 6 and (d[h:] == 0).all() and (d[:, w:] == 0).all(),
           "mean %.3f p99 %.1f, padding max %.1f" % (inside.mean(), np.percentile(inside, 99), max(d[h:].max(initial=0), d[:, w:].max(initial=0))))
except ImportError:
    print("skip letterbox: needs python3-pil")
    r = None

ours = np.fromfile(outp, dtype="<f4").astype(np.float64).reshape(-1, 85)
if (H, W) == (S, S):
    refo = numpy_graph.run(open(model, "rb").read(), x).reshape(-1, 85)
else:
    import tflite_py  # noqa: E402
    T = tflite_py.read_model(open(model, "rb").read())["tensors"]
    names = sorted({t["name"] for t in T if len(t["shape"]) == 4 and t["shape"][3] == 85 and "concat" in t["name"]},
                   key=lambda n: -next(t["shape"][1] for t in T if t["name"] == n))
    rows = []
    for lv in numpy_graph.run(open(model, "rb").read(), x, names):
        h, w = lv.shape[1], lv.shape[2]
        p = lv.reshape(-1, 85).copy()
        stride = H // h
        gy, gx = np.divmod(np.arange(h * w), w)
        p[:, 0] = (p[:, 0] + gx) * stride
        p[:, 1] = (p[:, 1] + gy) * stride
        p[:, 2:4] = np.exp(p[:, 2:4]) * stride
        rows.append(p)
    refo = np.concatenate(rows)
    print("reference: the graph to its levels %s at %dx%d, decoded here" % ([r.shape[0] for r in rows], W, H))
db = np.abs(ours[:, :4] - refo[:, :4]).max()
ds = np.abs(ours[:, 4:] - refo[:, 4:]) / (1e-3 * np.abs(refo[:, 4:]) + 2e-5)
print("graph: boxes max |diff| %.4g px, probabilities max |diff| %.3g" % (db, np.abs(ours[:, 4:] - refo[:, 4:]).max()))
report("graph", db <= 0.05 and ds.max() <= 1, "boxes max |diff| %.4g px, probabilities worst %.3g x the tolerance" % (db, ds.max()))

scale = float([l for l in lines if l.startswith("scale")][0].split()[1])
got = [list(map(float, l.split())) for l in lines if l and not l.startswith("scale") and not l.startswith("input")]
# reference decoding + per-class greedy NMS
if r is not None:
    pw, ph = im.shape[1], im.shape[0]
else:
    pw = ph = 1e9
cand = []
for a in range(refo.shape[0]):
    p = refo[a]
    for k in range(80):
        s = p[4] * p[5 + k]
        if s >= 0.3:
            cx, cy, bw, bh = p[:4] / scale
            cand.append((s, k, np.clip(cx - bw / 2, 0, pw), np.clip(cy - bh / 2, 0, ph), np.clip(cx + bw / 2, 0, pw), np.clip(cy + bh / 2, 0, ph)))
cand.sort(key=lambda c: (-c[0], c[1]))


def iou(a, b):
    iw = min(a[4], b[4]) - max(a[2], b[2]); ih = min(a[5], b[5]) - max(a[3], b[3])
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    return inter / ((a[4] - a[2]) * (a[5] - a[3]) + (b[4] - b[2]) * (b[5] - b[3]) - inter)


kept = []
for c in cand:
    if all(not (k[1] == c[1] and iou(k, c) > 0.45) for k in kept):
        kept.append(c)
same = len(kept) == len(got) and all(int(g[0]) == k[1] and abs(g[1] - k[0]) <= 1e-4 and
                                     max(abs(g[2 + j] - k[2 + j]) for j in range(4)) <= 0.01 for g, k in zip(got, kept))
report("nms", same, "ours %s, reference %s" % ([(int(g[0]), round(g[1], 3)) for g in got], [(k[1], round(k[0], 3)) for k in kept]))
print("detections: " + ", ".join("%d:%.2f" % (k[1], k[0]) for k in kept))
sys.exit(1 if fails else 0)
