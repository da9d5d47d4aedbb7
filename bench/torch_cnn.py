"""torch_cnn.py: the PyTorch peer of bench/bench_cnn.c (run by bench/cnn.sh with /usr/bin/python3).

Same model file, same dequantized float32 weights (parsed by tools/tflite_py.py), same layer, same
input size and thread count; PyTorch 1.13's own conv kernels (NCHW and channels_last tried, the
faster one reported). Prints: torch size=S layout=L ms=BEST (best of ITERS runs, as bench_cnn)
usage: torch_cnn.py MODEL.tflite LAYER SIZE THREADS ITERS
"""
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tflite_py import read_model  # noqa: E402
from torch_ref import TorchGraph  # noqa: E402


def main():
    path, layer, size, threads, iters = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    torch.set_num_threads(threads)
    m = read_model(open(path, "rb").read())
    t = [i for i, x in enumerate(m["tensors"]) if x["name"].split(";")[0] == layer or x["name"] == layer][0]
    g = TorchGraph(m, upto=t)
    c = m["tensors"][m["inputs"][0]]["shape"][3]
    x = np.random.default_rng(0).uniform(-1, 1, size=(1, size, size, c)).astype(np.float32)
    def run(n):
        times = []
        with torch.inference_mode():
            for _ in range(n):
                t0 = time.perf_counter()
                g(x)
                times.append(time.perf_counter() - t0)
        return 1e3 * float(np.min(times))

    # probe both layouts briefly, then time the faster one
    run(2)
    probe = {"nchw": run(3)}
    nchw_w = dict(g.w)
    for k, (w, b) in nchw_w.items():
        if w.dim() == 4:
            g.w[k] = (w.contiguous(memory_format=torch.channels_last), b)
    probe["channels_last"] = run(3)
    layout = min(probe, key=probe.get)
    if layout == "nchw":
        g.w = nchw_w
    best = (layout, run(iters))
    print("torch size=%d layout=%s ms=%.3f" % (size, best[0], best[1]))


if __name__ == "__main__":
    main()
