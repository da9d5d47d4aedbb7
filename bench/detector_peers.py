"""detector_peers.py: the COCO detector's graph (../shared/encoders/yolox_nano.tflite, the whole of it: input
1 x 416 x 416 x 3 to the decoded 3549 x 85 output, before NMS) on 1 and 2 threads, our engine against
ONNX Runtime and XNNPACK, side by side in one run with the same weights (`make bench`, bench/detector.sh).

Peers as bench/cnn_peers.py runs them (its Peer class; the protocol of bench/peers/serve.h): ours is
bench/peers/attncap_cnn on the graph's output tensor; ONNX Runtime (npm onnxruntime-node) runs the
ONNX model bench/peers/detector_onnx.py writes from the flatbuffer, operator for operator; XNNPACK
(bench/peers/xnnpack_cnn.c, Debian's libxnnpack-dev) is asked too and says which operator it lacks.
Every round asks each live peer in turn for ITERS runs, each round starting with another peer. Input:
uniform random pixel values in [0, 255) (fixed seed), the detector's range; each peer's output is
compared with ours (largest absolute difference, over the largest absolute value). Beside wall-clock
milliseconds, each peer's CPU time per run (its process's, from /proc), steadier on a loaded machine.

env: BENCH_ROUNDS (10), BENCH_ITERS (5), BENCH_THREADS_LIST (1,2), BENCH_PEERS (attncap,onnxruntime,xnnpack),
     BENCH_BASELINE (another build's attncap_cnn: a peer "baseline"), BENCH_PAUSE (0.02)
usage: detector_peers.py [MODEL.tflite]   (/usr/bin/python3; numpy; python3-onnx for ONNX Runtime)
"""
import os
import statistics
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "peers"))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from cnn_peers import CACHE, NAMES, Peer, command, env_list  # noqa: E402

SIZE = 416


def cpu_seconds(pid):
    """User + system CPU time of a process so far (/proc, Linux), in seconds; 0 where unreadable."""
    try:
        f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def make_onnx(model):
    try:
        import detector_onnx
        os.makedirs(CACHE, exist_ok=True)
        path = os.path.join(CACHE, "detector_%d.onnx" % SIZE)
        detector_onnx.to_onnx(model, SIZE, path)
        return path
    except ImportError as e:
        return "python3-onnx missing (%s)" % e
    except ValueError as e:
        return "graph not converted: %s" % e


def main():
    data = os.environ.get("ATTNCAP_DATA") or os.path.join(HERE, "..", "..", "shared")
    model = sys.argv[1] if len(sys.argv) > 1 else os.path.join(data, "encoders", "yolox_nano.tflite")
    if not os.path.isfile(model):
        print("detector_peers: skipped (no model; needs ../shared/encoders/yolox_nano.tflite)")
        return
    from tflite_py import read_model
    m = read_model(open(model, "rb").read())
    layer = m["tensors"][m["outputs"][0]]["name"]
    rounds, iters = int(os.environ.get("BENCH_ROUNDS", 10)), int(os.environ.get("BENCH_ITERS", 5))
    pause = float(os.environ.get("BENCH_PAUSE", 0.02))
    threads_list = [int(t) for t in env_list("BENCH_THREADS_LIST", "1,2")]
    peers = env_list("BENCH_PEERS", "attncap,onnxruntime,xnnpack")
    if os.environ.get("BENCH_BASELINE") and "baseline" not in peers:
        peers.insert(1, "baseline")
    load0, t0 = os.getloadavg(), time.time()
    print("# %s, %dx%d, the whole graph (to '%s', before NMS); %d rounds x %d runs per peer, interleaved; "
          "load average %.2f %.2f %.2f at the start" % (os.path.basename(model), SIZE, SIZE, layer, rounds, iters, *load0))
    onnx = make_onnx(model) if "onnxruntime" in peers else None
    tmp = tempfile.mkdtemp(prefix="detector_peers.")
    in_path = os.path.join(tmp, "in.f32")
    np.random.default_rng(416).uniform(0, 255, size=(1, SIZE, SIZE, 3)).astype("<f4").tofile(in_path)
    rows, skipped = [], {}
    for threads in threads_list:
        live = []
        for name in peers:
            cmd = command(name, model, onnx)
            if isinstance(cmd, str):
                skipped[name] = cmd
                continue
            argv, mpath = cmd
            out_path = os.path.join(tmp, "%s_%d.f32" % (name, threads))
            p = Peer(name, argv + [mpath, layer, str(SIZE), str(threads), in_path, out_path], SIZE, threads, in_path, out_path)
            (live.append(p) if not p.error else skipped.__setitem__(name, p.error))
        ours = next((p for p in live if p.name == "attncap"), None)
        if not ours:
            print("detector_peers: attncap's peer did not start: %s" % skipped.get("attncap"))
            return
        cpu = {p.name: 0.0 for p in live}
        for r in range(rounds):
            for p in live[r % len(live):] + live[:r % len(live)]:
                c0 = cpu_seconds(p.p.pid)
                if not p.run(iters):
                    skipped[p.name] = p.error
                    live.remove(p)
                cpu[p.name] += cpu_seconds(p.p.pid) - c0
                time.sleep(pause)
        for p in live:
            a, b = ours.out, p.out
            diff = float(np.abs(a - b).max() / np.abs(a).max()) if a.shape == b.shape else float("nan")
            rows.append((threads, p.name, statistics.median(p.times), min(p.times), max(p.times), diff,
                         1e3 * cpu[p.name] / len(p.times)))
            p.close()
    load1 = os.getloadavg()
    for name, why in skipped.items():
        if name == "xnnpack" and "unsupported" in why:
            why += " (the subgraph API of Debian's libxnnpack-dev, 2022, has no concatenation, slice, transpose or" \
                   " nearest-neighbour resize: YOLOX concatenates from its 5th operator on)"
        print("# %s skipped: %s" % (NAMES.get(name, name), why))
    print("%3s  %-20s %9s %8s %9s %11s %12s" % ("thr", "peer", "median ms", "best ms", "worst ms", "CPU ms/run", "max |diff|"))
    for threads, name, med, best, worst, diff, cpu_ms in rows:
        print("%3d  %-20s %9.2f %8.2f %9.2f %11.2f %12.1e" % (threads, NAMES[name], med, best, worst, cpu_ms, diff))
    shown = [n for n in peers if any(r[1] == n for r in rows)]
    print("\n| %dx%d, median / best / worst ms | " % (SIZE, SIZE) + " | ".join(NAMES[n] for n in shown) + " |")
    print("| --- |" + " --- |" * len(shown))
    for threads in threads_list:
        cells = []
        for n in shown:
            r = [x for x in rows if x[:2] == (threads, n)]
            cells.append("%.2f / %.2f / %.2f" % r[0][2:5] if r else "")
        print("| %d thread%s | %s |" % (threads, "s" * (threads > 1), " | ".join(cells)))
    print("\n# max |diff|: the largest absolute difference from our output over our largest absolute value")
    print("# CPU ms/run: the peer process's user + system time over its timed runs (/proc; 10 ms ticks summed over")
    print("# all rounds), which a loaded machine inflates less than wall time; with 2 threads it counts spinning too")
    print("# %.0f s; load average %.2f %.2f %.2f at the end" % (time.time() - t0, *load1))
    for f in os.listdir(tmp):
        os.remove(os.path.join(tmp, f))
    os.rmdir(tmp)


if __name__ == "__main__":
    main()
