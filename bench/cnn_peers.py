"""cnn_peers.py: MobileNetV2 to Conv_1 (the encoder) at 224 and 448 on 1 and 2 threads, our engine
against the strongest CPU peers, side by side in one run with the same weights (`make bench`).

Peers (bench/peers/, each skipped with a message when missing): XNNPACK (Debian libxnnpack-dev,
subgraph API; and its QU8 / QS8 integer operators on the quantized graph, beside our int8 path), ONNX Runtime (npm onnxruntime-node, installed by `bench/cnn.sh` into bench/.cache),
PyTorch frozen TorchScript + optimize_for_inference, and eager PyTorch (/usr/bin/python3). Each
peer is a process that builds its network once and then runs it when asked (serve.h); every round
asks each peer in turn for ITERS runs, so a change of load hits all of them alike. The first
output of each is compared with ours (cosine). The sgemm peak (OpenBLAS, 1536^3, same threads) is
measured in the same run, before and after, and the better one kept.

env: BENCH_ROUNDS (10), BENCH_ITERS (5), BENCH_SIZES (224,448), BENCH_THREADS_LIST (1,2),
     BENCH_PEERS (all: attncap,xnnpack,onnxruntime,torch-jit,torch-eager),
     BENCH_BASELINE (another build's build/bench/peers/attncap_cnn, e.g. main's: a peer "baseline"),
     BENCH_PAUSE (seconds between two peers' turns, 0.02: time for the last one's spinning threads to
     sleep; under `chrt -f`, where a spinning thread is never preempted by one of its own priority,
     0.25: XNNPACK's threads spin for some 25 ms after a run)
usage: cnn_peers.py [MODEL.tflite [LAYER]]   (/usr/bin/python3; numpy)
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"), "bench", "peers")
CACHE = os.path.join(HERE, ".cache")
NAMES = {"attncap": "attncap", "attncap-bf16": "attncap bf16x2", "attncap-int8": "attncap int8", "xnnpack": "XNNPACK",
         "xnnpack-int8": "XNNPACK int8", "onnxruntime": "ONNX Runtime", "torch-jit": "PyTorch TorchScript",
         "torch-eager": "PyTorch eager", "baseline": "attncap (baseline)"}


def env_list(name, default):
    return [x for x in os.environ.get(name, default).split(",") if x]


def command(peer, model, onnx_path):
    """The peer's command line before the common arguments, or a reason it is missing."""
    if peer == "attncap":
        exe = os.path.join(BUILD, "attncap_cnn")
        return ([exe], model) if os.access(exe, os.X_OK) else "not built (make bench)"
    if peer == "attncap-bf16":
        exe = os.path.join(BUILD, "attncap_cnn")
        return ([exe, "--bf16"], model) if os.access(exe, os.X_OK) else "not built (make bench)"
    if peer == "attncap-int8":
        exe = os.path.join(BUILD, "attncap_cnn")
        return ([exe, "--int8"], model) if os.access(exe, os.X_OK) else "not built (make bench)"
    if peer == "xnnpack-int8":
        exe = os.path.join(BUILD, "xnnpack_cnn")
        return ([exe, "--quant"], model) if os.access(exe, os.X_OK) else "not built (apt-get install libxnnpack-dev libpthreadpool-dev)"
    if peer == "baseline":
        exe = os.environ.get("BENCH_BASELINE", "")
        return ([exe], model) if os.access(exe, os.X_OK) else "BENCH_BASELINE is not an executable"
    if peer == "xnnpack":
        exe = os.path.join(BUILD, "xnnpack_cnn")
        return ([exe], model) if os.access(exe, os.X_OK) else "not built (apt-get install libxnnpack-dev libpthreadpool-dev)"
    if peer == "onnxruntime":
        if not os.path.isdir(os.path.join(CACHE, "node_modules", "onnxruntime-node")):
            return "onnxruntime-node not installed (npm install --ignore-scripts --prefix bench/.cache onnxruntime-node)"
        if isinstance(onnx_path, str) and os.path.isfile(onnx_path):
            return (["node", os.path.join(HERE, "peers", "ort_cnn.js")], onnx_path)
        return onnx_path or "no ONNX model"
    if peer.startswith("torch-"):
        return ([sys.executable, os.path.join(HERE, "peers", "torch_cnn.py"), peer[6:]], model)
    return "unknown peer"


def make_onnx(model, layer, size):
    """The ONNX model at `size` in bench/.cache (python3-onnx), or why not."""
    try:
        sys.path.insert(0, os.path.join(HERE, "peers"))
        import graph
        os.makedirs(CACHE, exist_ok=True)
        path = os.path.join(CACHE, "mobilenet_%d.onnx" % size)
        graph.to_onnx(model, layer, size, path)
        return path
    except ImportError as e:
        return "python3-onnx missing (%s)" % e
    except ValueError as e:
        return str(e)


class Peer:
    def __init__(self, name, argv, size, threads, in_path, out_path):
        self.name, self.times, self.flops = name, [], None
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
                   ORT_NODE_MODULES=os.path.join(CACHE, "node_modules"))
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=env, cwd=ROOT)
        self.error = None
        for line in self.p.stdout:
            if line.startswith("flops "):
                self.flops = float(line.split()[1])
            elif line.startswith("ready"):
                self.out = np.fromfile(out_path, dtype="<f4").astype(np.float64)
                return
            elif line.startswith("skip: "):
                break
        self.error = (line[6:].strip() if line.startswith("skip: ") else "") or self.p.stderr.read().strip()[-300:] or "failed"
        self.close()

    def ask(self, what):
        """The peer's answer as words; [] if it has died (a crash is reported, not hidden)."""
        try:
            self.p.stdin.write(what + "\n")
            self.p.stdin.flush()
            return self.p.stdout.readline().split()
        except BrokenPipeError:
            return []

    def run(self, n):
        """True if the peer answered; else self.error says how it died."""
        reply = self.ask("run %d" % n)
        if not reply or reply[0] != "ms":
            self.p.wait()
            self.error = "died (exit status %d): %s" % (self.p.returncode, self.p.stderr.read().strip()[-300:])
            return False
        self.times += [float(t) for t in reply[1:]]
        return True

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            self.p.wait()


def main():
    data = os.environ.get("ATTNCAP_DATA") or os.path.join(ROOT, "..", "shared")
    model = sys.argv[1] if len(sys.argv) > 1 else next(
        (p for p in (os.path.join(data, "encoders", "mobilenet_v2_1.0_224_quant.tflite"),
                     os.path.join(ROOT, "models", "mobilenet_v2_1.0_224_quant.tflite")) if os.path.isfile(p)), None)
    layer = sys.argv[2] if len(sys.argv) > 2 else "MobilenetV2/Conv_1/Relu6"
    if not model:
        print("cnn_peers: skipped (no model; needs ../shared/encoders/mobilenet_v2_1.0_224_quant.tflite)")
        return
    rounds, iters = int(os.environ.get("BENCH_ROUNDS", 10)), int(os.environ.get("BENCH_ITERS", 5))
    pause = float(os.environ.get("BENCH_PAUSE", 0.02))
    sizes = [int(s) for s in env_list("BENCH_SIZES", "224,448")]
    thread_list = [int(t) for t in env_list("BENCH_THREADS_LIST", "1,2")]
    peers = env_list("BENCH_PEERS", ",".join(n for n in NAMES if n != "baseline"))
    if os.environ.get("BENCH_BASELINE") and "baseline" not in peers:
        peers.insert(1, "baseline")
    load0, t_start = os.getloadavg(), time.time()
    print("# %s to %s; %d rounds x %d runs per peer, interleaved, %g s between turns; load average %.2f %.2f %.2f at the start"
          % (os.path.basename(model), layer, rounds, iters, pause, *load0))
    onnx = {s: make_onnx(model, layer, s) for s in sizes} if "onnxruntime" in peers else {}
    rows, peak, skipped, cosines = [], {}, {}, {}
    tmp = tempfile.mkdtemp(prefix="cnn_peers.")
    for threads in thread_list:
        for size in sizes:
            in_path = os.path.join(tmp, "in%d.f32" % size)
            np.random.default_rng(size).uniform(-1, 1, size=(1, size, size, 3)).astype("<f4").tofile(in_path)
            live = []
            for name in peers:
                cmd = command(name, model, onnx.get(size))
                if isinstance(cmd, str):
                    skipped[name] = cmd
                    continue
                argv, m = cmd
                out_path = os.path.join(tmp, "%s_%d_%d.f32" % (name, size, threads))
                p = Peer(name, argv + [m, layer, str(size), str(threads), in_path, out_path], size, threads, in_path, out_path)
                if p.error:
                    skipped[name] = p.error
                else:
                    live.append(p)
            ours = next((p for p in live if p.name == "attncap"), None)
            if not ours:
                print("cnn_peers: attncap's peer did not start: %s" % skipped.get("attncap"))
                return
            best_peak = float(ours.ask("peak")[1])
            for r in range(rounds):
                for p in live[r % len(live):] + live[:r % len(live)]:  # each round starts with another peer
                    if not p.run(iters):
                        print("# %s at %d, %d threads: %s" % (NAMES[p.name], size, threads, p.error))
                        skipped[p.name] = p.error
                        live.remove(p)
                    time.sleep(pause)  # let the last peer's spinning threads go to sleep
            if ours not in live:
                print("cnn_peers: attncap failed")
                sys.exit(1)
            best_peak = max(best_peak, float(ours.ask("peak")[1]))
            peak[threads] = max(peak.get(threads, 0), best_peak)
            for p in live:
                a, b = ours.out, p.out
                cosines[(p.name, size, threads)] = float(a @ b / np.sqrt((a @ a) * (b @ b))) if a.shape == b.shape else float("nan")
                rows.append((size, threads, p.name, min(p.times), statistics.median(p.times), ours.flops, max(p.times)))
                p.close()
    load1 = os.getloadavg()
    for name, why in skipped.items():
        print("# %s skipped: %s" % (NAMES.get(name, name), why))
    print("# sgemm peak (OpenBLAS 1536^3, best of before/after each size): "
          + ", ".join("%d thread%s %.1f GFLOP/s" % (t, "s" * (t > 1), peak[t]) for t in sorted(peak)))
    print("%-5s %3s  %-20s %8s %9s %8s %8s %6s %10s" % ("size", "thr", "peer", "best ms", "median ms", "worst ms", "GFLOP/s",
                                                      "%peak", "1 - cosine"))
    for size, threads, name, best, med, flops, worst in rows:
        gf = flops / best / 1e6
        print("%-5d %3d  %-20s %8.2f %9.2f %8.2f %8.1f %5.0f%% %10.1e" % (size, threads, NAMES[name], best, med, worst, gf,
                                                                          100 * gf / peak[threads], 1 - cosines[(name, size, threads)]))
    shown = [n for n in peers if any(r[2] == n for r in rows)]
    print("\n| best / median / worst ms | " + " | ".join(NAMES[n] for n in shown) + " |")
    print("| --- |" + " --- |" * len(shown))
    for threads in thread_list:
        for size in sizes:
            cells = []
            for n in shown:
                r = [x for x in rows if x[:3] == (size, threads, n)]
                cells.append("%.2f / %.2f / %.2f" % (r[0][3], r[0][4], r[0][6]) if r else "")
            lead = min((x for x in rows if x[:2] == (size, threads)), key=lambda x: x[3], default=None)
            cells = ["**%s**" % c if lead and n == lead[2] else c for c, n in zip(cells, shown)]
            print("| %d, %d thread%s | %s |" % (size, threads, "s" * (threads > 1), " | ".join(cells)))
    print("\n# %.0f s; load average %.2f %.2f %.2f at the end" % (time.time() - t_start, *load1))
    for f in os.listdir(tmp):
        os.remove(os.path.join(tmp, f))
    os.rmdir(tmp)


if __name__ == "__main__":
    main()
