"""decode_peers.py: decode + resize of 12-megapixel JPEGs to the encoder's 448x448 (`make bench`),
ours against Pillow's and OpenCV's reduced decodes, side by side in one interleaved run.

Photos: the first BENCH_PHOTOS (4) COCO photos of ../shared/data/coco/images upscaled with Pillow
(Lanczos) to 4032x3024 (3024x4032 for a portrait one), quality 90, written once into
bench/.cache/photos12mp/ (git ignores it). Upscaled photos are smoother than a phone's, so the
entropy decoding every peer must do is somewhat cheaper than on a real 12 MP photo.

Peers, each given the file's bytes in memory (reading the file is not timed):
  attncap          ac_image_load_mem_min(448, 448): libjpeg-turbo's DCT scaling (here 1/4), then
                   ac_image_resize (bench/peers/attncap_decode.c, a process of its own)
  attncap before   ac_image_load_mem (stb_image, the whole photo) + ac_image_resize: the captioner
                   until this change
  PIL draft        Image.draft("RGB", (448, 448)) (libjpeg's scaling, the same factor), then
                   resize((448, 448), BILINEAR): Pillow's antialiased triangle filter, ours too
  OpenCV reduced   cv2.imdecode(IMREAD_REDUCED_COLOR_k), k the same factor, then cv2.resize
                   INTER_AREA (its antialiased shrink); cv2.setNumThreads(1)
All on one thread. Every round asks each peer in turn for BENCH_ITERS (2) passes over each photo, so a
change of load hits all alike; each pass is timed by the wall clock and by the decoding thread's CPU
time (steadier on a shared machine: time spent waiting for a core is not counted). Besides the times: each result's mean absolute difference (per
channel value, 0..255) from "attncap before", the full decode.

With BENCH_BASELINE_ATTNCAP=PATH (another build's attncap, e.g. one built before this change) it
also times `attncap caption --verbose` on the first photo against this build's (BUILD/attncap, or
BENCH_ATTNCAP=PATH), the two binaries in turn.

env: BENCH_ROUNDS (5), BENCH_ITERS (2), BENCH_PHOTOS (4), BENCH_SIDE (448), BUILD (build)
usage: /usr/bin/python3 bench/decode_peers.py
"""
import io
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("BUILD", "build")
CACHE = os.path.join(HERE, ".cache", "photos12mp")


def make_photos(data, n):
    from PIL import Image
    src = os.path.join(data, "data", "coco", "images")
    names = sorted(f for f in os.listdir(src) if f.endswith(".jpg"))[:n]
    os.makedirs(CACHE, exist_ok=True)
    out = []
    for name in names:
        p = os.path.join(CACHE, name[:-4] + "_12mp.jpg")
        if not os.path.isfile(p):
            im = Image.open(os.path.join(src, name)).convert("RGB")
            size = (4032, 3024) if im.width >= im.height else (3024, 4032)
            im.resize(size, Image.LANCZOS).save(p + ".tmp", "JPEG", quality=90)
            os.replace(p + ".tmp", p)
        out.append(p)
    return out


def timed(fn, n):
    """n calls of fn, each as (wall-clock ms, this thread's CPU ms)."""
    t = []
    for _ in range(n):
        t0, c0 = time.perf_counter(), time.thread_time()
        fn()
        t.append(((time.perf_counter() - t0) * 1e3, (time.thread_time() - c0) * 1e3))
    return t


def size_of(data):
    """A JPEG's width and height, from its header (Pillow)."""
    from PIL import Image
    return Image.open(io.BytesIO(data)).size


def factor(w, h, side):
    """The smallest of 1/8, 1/4, 1/2 keeping both sides >= side (as ours, Pillow's draft and this
    bench's OpenCV call choose it), as its denominator; 1 if none."""
    for d in (8, 4, 2):
        if -(-w // d) >= side and -(-h // d) >= side:
            return d
    return 1


class Ours:
    """bench/peers/attncap_decode in MODE, a process of its own."""

    def __init__(self, mode):
        exe = os.path.join(ROOT, BUILD, "bench", "peers", "attncap_decode")
        if not os.access(exe, os.X_OK):
            raise RuntimeError("not built (make bench)")
        self.mode = mode
        self.p = subprocess.Popen([exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if self.p.stdout.readline().strip() != "ready":
            raise RuntimeError("did not start")

    def ask(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        reply = self.p.stdout.readline().split()
        if not reply or reply[0] == "error:":
            raise RuntimeError(" ".join(reply) or "died")
        return reply

    def run(self, path, data, side, n):
        return [tuple(float(x) for x in t.split("/")) for t in self.ask("run %d %d %s %s" % (n, side, self.mode, path))[1:]]

    def pixels(self, path, data, side):
        import numpy as np
        with tempfile.NamedTemporaryFile(suffix=".rgb") as f:
            self.ask("save %d %s %s %s" % (side, self.mode, path, f.name))
            return np.fromfile(f.name, dtype=np.uint8).reshape(side, side, 3)


class Pil:
    def __init__(self):
        from PIL import Image
        self.Image = Image

    def once(self, data, side):
        im = self.Image.open(io.BytesIO(data))
        im.draft("RGB", (side, side))
        return im.convert("RGB").resize((side, side), self.Image.BILINEAR)

    def run(self, path, data, side, n):
        return timed(lambda: self.once(data, side), n)

    def pixels(self, path, data, side):
        import numpy as np
        return np.asarray(self.once(data, side))


class OpenCv:
    def __init__(self):
        import cv2
        import numpy as np
        cv2.setNumThreads(1)
        self.cv2, self.np = cv2, np

    def once(self, data, side):
        cv2 = self.cv2
        buf = self.np.frombuffer(data, self.np.uint8)
        w, h = size_of(data)
        flag = {1: cv2.IMREAD_COLOR, 2: cv2.IMREAD_REDUCED_COLOR_2, 4: cv2.IMREAD_REDUCED_COLOR_4,
                8: cv2.IMREAD_REDUCED_COLOR_8}[factor(w, h, side)]
        return cv2.resize(cv2.imdecode(buf, flag), (side, side), interpolation=cv2.INTER_AREA)

    def run(self, path, data, side, n):
        return timed(lambda: self.once(data, side), n)

    def pixels(self, path, data, side):
        return self.once(data, side)[:, :, ::-1]  # BGR -> RGB


def caption_times(exe, photo, rounds):
    """Per run: (process seconds, the --verbose run's seconds, its decode+resize ms)."""
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        r = subprocess.run([exe, "caption", "--verbose", photo], capture_output=True, text=True)
        wall = time.perf_counter() - t0
        run = re.search(r"in ([0-9.]+) s", r.stderr)
        dec = re.search(r"decode\+resize ([0-9.]+) ms", r.stderr)
        cap = r.stdout.strip().split("\t")[1] if "\t" in r.stdout else r.stderr.strip()[-200:]
        out.append((wall, float(run.group(1)) if run else float("nan"), float(dec.group(1)) if dec else float("nan"), cap))
    return out


def stats(v):
    return statistics.median(v), min(v), max(v)


def main():
    data = os.environ.get("ATTNCAP_DATA") or os.path.join(ROOT, "..", "shared")
    if not os.path.isdir(os.path.join(data, "data", "coco", "images")):
        print("decode: skipped (needs ../shared/data/coco/images)")
        return
    try:
        import numpy as np
        from PIL import Image  # noqa: F401
    except ImportError:
        print("decode: skipped (needs /usr/bin/python3 with numpy and Pillow: python3-pil)")
        return
    rounds, iters = int(os.environ.get("BENCH_ROUNDS", 5)), int(os.environ.get("BENCH_ITERS", 2))
    side = int(os.environ.get("BENCH_SIDE", 448))
    photos = make_photos(data, int(os.environ.get("BENCH_PHOTOS", 4)))
    blobs = [open(p, "rb").read() for p in photos]
    peers, missing = [], []
    for name, make in (("attncap", lambda: Ours("reduced")), ("attncap before", lambda: Ours("full")),
                       ("PIL draft", Pil), ("OpenCV reduced", OpenCv)):
        try:
            peers.append((name, make()))
        except (RuntimeError, ImportError) as e:
            missing.append("%s: %s" % (name, e))
    load0 = os.getloadavg()
    print("decode+resize of %d JPEGs of 12 MP (%s) to %dx%d, one thread, %d rounds x %d passes; load %.2f %.2f %.2f"
          % (len(photos), ", ".join("%dx%d" % size_of(b) for b in blobs), side, side, rounds, iters, *load0))
    for m in missing:
        print("# skipped %s" % m)
    times = {name: [] for name, _ in peers}
    for _ in range(rounds):
        for path, blob in zip(photos, blobs):
            for name, peer in peers:
                times[name] += peer.run(path, blob, side, iters)
    load1 = os.getloadavg()
    ref = dict(peers).get("attncap before")
    diffs = {name: [] for name, _ in peers}
    if ref:
        for path, blob in zip(photos, blobs):
            r = ref.pixels(path, blob, side).astype(np.int16)
            for name, peer in peers:
                diffs[name].append(float(np.abs(peer.pixels(path, blob, side).astype(np.int16) - r).mean()))
    print("| ms per photo, median / best / worst | wall clock | CPU (the decoding thread) | vs full decode (mean abs diff, 0..255) |")
    print("| --- | --- | --- | --- |")
    for name, _ in peers:
        cols = ["%.1f / %.1f / %.1f" % stats([t[k] for t in times[name]]) for k in (0, 1)]
        d = "%.3f" % statistics.mean(diffs[name]) if diffs[name] else "-"
        print("| %s | %s | %s | %s |" % (name, *cols, d))
    ours = times.get("attncap")
    for other in ("PIL draft", "OpenCV reduced", "attncap before"):
        if ours and times.get(other):
            r = []
            for k in (0, 1):
                a, b = [t[k] for t in ours], [t[k] for t in times[other]]
                r += [statistics.median(a) / statistics.median(b), min(a) / min(b)]
            print("attncap / %s: wall %.2f (median), %.2f (best); CPU %.2f (median), %.2f (best)" % (other, *r))
    print("load at the end: %.2f %.2f %.2f" % load1)
    base = os.environ.get("BENCH_BASELINE_ATTNCAP")
    exe = os.environ.get("BENCH_ATTNCAP") or os.path.join(ROOT, BUILD, "attncap")
    if base and os.access(base, os.X_OK) and os.access(exe, os.X_OK):
        n = max(3, rounds)
        res = {"this build": [], "baseline": []}
        for _ in range(n):
            res["this build"] += caption_times(exe, photos[0], 1)
            res["baseline"] += caption_times(base, photos[0], 1)
        print("`attncap caption --verbose %s`, %d runs each, in turn; load %.2f %.2f %.2f at the end"
              % (os.path.relpath(photos[0], ROOT), n, *os.getloadavg()))
        print("| median / best / worst | process s | run s (after loading) | decode+resize ms | caption |")
        print("| --- | --- | --- | --- | --- |")
        for name, r in res.items():
            cols = ["%.3f / %.3f / %.3f" % stats([x[k] for x in r]) for k in (0, 1)]
            cols.append("%.1f / %.1f / %.1f" % stats([x[2] for x in r]))
            print("| %s (%s) | %s | %s | %s | %s |" % (name, exe if name == "this build" else base, *cols, r[0][3]))
    for name, peer in peers:
        if isinstance(peer, Ours):
            peer.p.stdin.close()
            peer.p.wait()


if __name__ == "__main__":
    main()
