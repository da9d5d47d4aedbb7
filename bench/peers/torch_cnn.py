"""torch_cnn.py: PyTorch 1.13 as a peer of bench/cnn_peers.py (protocol: serve.h), in two modes:
  eager  the network (graph.torch_net) run op by op, as a PyTorch user writes it;
  jit    the same module traced, frozen and passed through torch.jit.optimize_for_inference
         (oneDNN convolutions with fused activations): the fastest PyTorch offers on a CPU.
Input and output are NCHW tensors prepared outside the timed call.
usage: torch_cnn.py MODE MODEL.tflite LAYER SIZE THREADS INPUT.f32 OUTPUT.f32   (/usr/bin/python3)
"""
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import graph  # noqa: E402


def main():
    mode, model, layer, size, threads, in_path, out_path = sys.argv[1:8]
    size, threads = int(size), int(threads)
    torch.set_num_threads(threads)
    try:
        net = graph.torch_net(model, layer, size)
    except ValueError as e:
        print("skip: %s" % e, flush=True)
        sys.exit(3)
    x = np.fromfile(in_path, dtype="<f4").reshape(1, size, size, 3)
    x = torch.from_numpy(x.transpose(0, 3, 1, 2).copy())
    with torch.inference_mode():
        if mode == "jit":
            net = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(net, x)))
            for _ in range(3):  # the profiling executor specialises on the first calls
                net(x)
        y = net(x)
        y.permute(0, 2, 3, 1).contiguous().numpy().astype("<f4").tofile(out_path)
        print("ready", flush=True)
        for line in sys.stdin:
            if line.startswith("run "):
                times = []
                for _ in range(int(line.split()[1])):
                    t0 = time.perf_counter()
                    net(x)
                    times.append((time.perf_counter() - t0) * 1e3)
                print("ms " + " ".join("%.4f" % t for t in times), flush=True)


if __name__ == "__main__":
    main()
