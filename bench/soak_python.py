"""bench/soak_python.py: the soak of bench/soak.c through the Python package (python/, ctypes): one
Captioner captions the shared COCO photos over and over (caption(keep_photo=True), then overlay() into a
temp folder whose photo folder is deleted at once), and every SAMPLE photos reads the process's VmRSS,
open file descriptors and threads. Verdict: RSS within 5 % of its value at the first sample, fds and
threads equal to theirs. Run by bench/soak.sh (ATTNCAP_LIB: the shared library; PYTHONPATH: python/).

usage: python3 bench/soak_python.py [PHOTOS_TOTAL] [SAMPLE]   (default 2040 and 204)"""
import glob
import os
import shutil
import sys
import tempfile
import time

import attncap


def status():
    rss = thr = -1
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("Threads:"):
                thr = int(line.split()[1])
    return rss, thr


def main():
    total = int(sys.argv[1]) if len(sys.argv) > 1 else 2040
    every = int(sys.argv[2]) if len(sys.argv) > 2 else 204
    shared = os.environ.get("ATTNCAP_DATA", "../shared")
    photos = sorted(glob.glob(f"{shared}/data/coco/images/*.jpg") + glob.glob(f"{shared}/data/coco_extra/images/*.jpg"))
    if not photos:
        print(f"soak_python: no photos in {shared}/data/coco*/images: skipped")
        return 0
    tmp = tempfile.mkdtemp(prefix="attncap-soak-py-")
    cap = attncap.Captioner(os.environ.get("ATTNCAP_MODEL"))
    print(f"# soak_python: {total} captions of {len(photos)} photos ({total / len(photos):.1f} passes), overlays into "
          f"{tmp}, a sample every {every}; model {cap.model_path}; attncap {attncap.__version__ if hasattr(attncap, '__version__') else ''}")
    print(f"# {'photos':>8} {'rss_kB':>10} {'vs_first':>8} {'fds':>5} {'threads':>7} {'photos/s':>9} overlays", flush=True)
    rss0 = fds0 = thr0 = None
    rss_min = rss_max = 0
    changes = errors = overlays = 0
    t0 = tw = time.time()
    for i in range(total):
        p = photos[i % len(photos)]
        try:
            r = cap.caption(p, keep_photo=True)
            files = cap.overlay(r, tmp, stem=f"p{i}")
            overlays += len(files)
            del r
        except attncap.Error as e:
            print(f"soak_python: {e}", file=sys.stderr)
            errors += 1
        shutil.rmtree(os.path.join(tmp, f"p{i}"), ignore_errors=True)
        if (i + 1) % every == 0 or i + 1 == total:
            rss, thr = status()
            fds = len(os.listdir("/proc/self/fd")) - 1
            if rss0 is None:
                rss0 = rss_min = rss_max = rss
                fds0, thr0 = fds, thr
            rss_min, rss_max = min(rss_min, rss), max(rss_max, rss)
            changes += (fds != fds0) + (thr != thr0)
            t = time.time()
            rate = every / (t - tw) if (i + 1) % every == 0 else 0
            print(f"  {i + 1:8d} {rss:10d} {100.0 * (rss - rss0) / rss0:+7.2f}% {fds:5d} {thr:7d} {rate:9.2f} {overlays}", flush=True)
            tw = t
    cap.close()
    shutil.rmtree(tmp, ignore_errors=True)
    dev = 100.0 * max(rss_max - rss0, rss0 - rss_min) / rss0
    ok = dev <= 5.0 and changes == 0 and errors == 0
    el = time.time() - t0
    print(f"# {total} captions in {el:.0f} s ({total / el:.2f} photos/s), {overlays} overlay files, {errors} errors; RSS "
          f"{rss0} kB at the first sample, {rss_min}..{rss_max} kB after (max deviation {dev:.2f} %), fds {fds0}, "
          f"threads {thr0}, {changes} changes")
    print(f"{'PASS' if ok else 'FAIL'}: RSS within 5 % of the first sample's, fds and threads constant, no error")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
