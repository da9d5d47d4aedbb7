#!/usr/bin/python3
"""torch_caption.py: the `attncap caption` pipeline re-implemented in PyTorch, the peer of bench/caption.c.

Same model file and weights: the decoder is read from the attncap safetensors (F16/F32), the encoder is
the model's TFLite graph run with torch ops (tools/torch_ref.py over tools/tflite_py.py, weights
dequantized to float32, up to the model's encoder layer). Same pipeline: PIL decode, squash to
size x size (PIL's antialiased bilinear, as ac_image_resize), (pixel - mean) * scale, CNN, the soft-
attention LSTM step of src/decoder/decoder.c batched over the live hypotheses, and the shrinking beam search of
src/search/beam.c (K best of all candidates, finished hypotheses leave the beam, score = logprob / (n+1)^alpha).

usage: /usr/bin/python3 tools/torch_caption.py --model M.safetensors --encoder E.tflite [--beam 3]
           [--max-len 20] [--len-alpha 1] [--threads N (0 = faster of 1, 2)] [--latency N] IMAGE...
Prints "PATH<TAB>caption" per photo, then on stderr "latency_ms MIN MEDIAN" (with --latency N: N warm runs
of the first photo, each decode + resize + CNN + beam), "throughput IMAGES_PER_S" over all photos and
"cpu_per_image SECONDS" (CPU time of the process: fair when the machine is shared).
Dev tool only (/usr/bin/python3 with torch); nothing here is a runtime dependency.
"""
import argparse
import json
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tflite_py import read_model  # noqa: E402
from torch_ref import TorchGraph  # noqa: E402

PAD, START, END, UNK = 0, 1, 2, 3


def read_safetensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    hdr = json.loads(b[8:8 + n])
    meta = hdr.pop("__metadata__", {})
    base = 8 + n
    out = {}
    for k, t in hdr.items():
        dt = {"F32": np.float32, "F16": np.float16}[t["dtype"]]
        s, e = t["data_offsets"]
        out[k] = torch.from_numpy(np.frombuffer(b[base + s:base + e], dtype=dt).astype(np.float32).reshape(t["shape"]))
    return out, meta


class Decoder:
    def __init__(self, path):
        self.t, meta = read_safetensors(path)
        self.cfg = json.loads(meta["config"])
        self.vocab = json.loads(meta["vocab"])
        self.enc = json.loads(meta["encoder"])
        for k in ("att_ba", "att_we", "beta_w", "beta_b", "init_h_b", "init_c_b", "lstm_b", "out_bo"):
            self.t[k] = self.t[k].reshape(-1)

    def prepare(self, ann):  # ann [L, D]
        t = self.t
        return ann, ann @ t["att_wa"] + t["att_ba"], ann.mean(0)

    def initial(self, img):
        t, m = self.t, img[2]
        return torch.tanh(m @ t["init_h_w"] + t["init_h_b"])[None], torch.tanh(m @ t["init_c_w"] + t["init_c_b"])[None]

    def step(self, img, prev, h, c):  # prev [K], h/c [K, H]
        t = self.t
        ann, proj, _ = img
        H = h.shape[1]
        e = torch.tanh(proj[None] + (h @ t["att_wh"])[:, None]) @ t["att_we"]  # [K, L]
        alpha = torch.softmax(e, 1)
        beta = torch.sigmoid(h @ t["beta_w"] + t["beta_b"])  # [K]
        z = beta[:, None] * (alpha @ ann)
        ey = t["emb"][prev]
        g = torch.cat([ey, z, h], 1) @ t["lstm_w"] + t["lstm_b"]
        i, f, gg, o = torch.sigmoid(g[:, :H]), torch.sigmoid(g[:, H:2 * H]), torch.tanh(g[:, 2 * H:3 * H]), torch.sigmoid(g[:, 3 * H:])
        c2 = f * c + i * gg
        h2 = o * torch.tanh(c2)
        out = torch.tanh(ey + h2 @ t["out_lh"] + z @ t["out_lz"]) @ t["out_lo"] + t["out_bo"]
        return h2, c2, torch.log_softmax(out, 1), alpha


def beam_search(dec, ann, K, T, len_alpha, allow_unk=False):
    img = dec.prepare(ann)
    h, c = dec.initial(img)
    prev = torch.tensor([START])
    seqs, lps = [[]], torch.zeros(1, dtype=torch.float64)
    best, finished = None, 0
    for t in range(T + 1):
        h2, c2, logp, _ = dec.step(img, prev, h, c)
        cand = lps[:, None] + logp.double()
        cand[:, PAD] = cand[:, START] = -float("inf")
        if not allow_unk:
            cand[:, UNK] = -float("inf")
        if t == T:
            keep = torch.full_like(cand, -float("inf"))
            keep[:, END] = cand[:, END]
            cand = keep
        m = K - finished
        flat = cand.reshape(-1)
        # K best, ties by lower flat index (= hypothesis, then word), as src/search/beam.c
        order = sorted(torch.topk(flat, min(m, flat.numel())).indices.tolist(), key=lambda i: (-flat[i].item(), i))
        V = cand.shape[1]
        nseqs, nlps, rows, words = [], [], [], []
        for idx in order[:m]:
            k, w = divmod(idx, V)
            lp = flat[idx].item()
            if lp == -float("inf"):
                continue
            if w == END:
                finished += 1
                n = len(seqs[k])
                s = lp if len_alpha == 0 else lp / (n + 1) ** len_alpha
                if best is None or s > best[0]:
                    best = (s, seqs[k], lp)
                continue
            nseqs.append(seqs[k] + [w])
            nlps.append(lp)
            rows.append(k)
            words.append(w)
        if not rows or finished >= K:
            break
        idx = torch.tensor(rows)
        h, c, prev = h2[idx], c2[idx], torch.tensor(words)
        seqs, lps = nseqs, torch.tensor(nlps, dtype=torch.float64)
    return best


class Captioner:
    def __init__(self, model, encoder):
        self.dec = Decoder(model)
        e = self.dec.enc
        m = read_model(open(encoder, "rb").read())
        layer = e.get("layer") or "MobilenetV2/Conv_1/Relu6"
        idx = [i for i, t in enumerate(m["tensors"]) if t["name"].split(";")[0] == layer]
        self.layer = idx[0]
        self.graph = TorchGraph(m, upto=self.layer)
        self.size = int(e.get("size", 224))
        it = m["tensors"][m["inputs"][0]]
        if "norm_mean" in e:
            self.norm = (e["norm_mean"], e["norm_scale"])
        elif it["scale"]:
            self.norm = (it["zero_point"][0] + (128 if it["type"] == 9 else 0), it["scale"][0])
        else:
            self.norm = (127.5, 1 / 127.5)

    def caption(self, path, K, T, len_alpha):
        im = Image.open(path).convert("RGB").resize((self.size, self.size), Image.BILINEAR)
        x = (np.asarray(im, dtype=np.float32) - self.norm[0]) * self.norm[1]
        grid = self.graph(x[None])[self.layer]  # [1, gh, gw, D]
        ann = torch.from_numpy(grid.reshape(-1, grid.shape[-1]))
        best = beam_search(self.dec, ann, K, T, len_alpha)
        return " ".join(self.dec.vocab[w] for w in best[1]) if best else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--encoder", required=True)
    ap.add_argument("--beam", type=int, default=3)
    ap.add_argument("--max-len", type=int, default=20)
    ap.add_argument("--len-alpha", type=float, default=1.0)
    ap.add_argument("--threads", type=int, default=0, help="0: the faster of 1 and 2 (probed)")
    ap.add_argument("--latency", type=int, default=0)
    ap.add_argument("images", nargs="+")
    a = ap.parse_args()
    cap = Captioner(a.model, a.encoder)
    with torch.no_grad():
        if a.threads == 0:  # on a busy machine 2 threads can be much slower than 1: use torch at its best
            best = None
            for th in (1, 2):
                torch.set_num_threads(th)
                cap.caption(a.images[0], a.beam, a.max_len, a.len_alpha)
                t0 = time.perf_counter()
                for _ in range(3):
                    cap.caption(a.images[0], a.beam, a.max_len, a.len_alpha)
                t = time.perf_counter() - t0
                if best is None or t < best[0]:
                    best = (t, th)
            a.threads = best[1]
        torch.set_num_threads(a.threads)
        print("threads %d" % a.threads, file=sys.stderr)
        cap.caption(a.images[0], a.beam, a.max_len, a.len_alpha)  # warm-up
        if a.latency:
            ts = []
            for _ in range(a.latency):
                t0 = time.perf_counter()
                cap.caption(a.images[0], a.beam, a.max_len, a.len_alpha)
                ts.append(time.perf_counter() - t0)
            ts.sort()
            print("latency_ms %.2f %.2f" % (1e3 * ts[0], 1e3 * ts[len(ts) // 2]), file=sys.stderr)
        t0, c0 = time.perf_counter(), time.process_time()
        for p in a.images:
            print("%s\t%s" % (p, cap.caption(p, a.beam, a.max_len, a.len_alpha)))
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
    print("throughput %.3f" % (len(a.images) / dt), file=sys.stderr)
    print("cpu_per_image %.4f" % (dc / len(a.images)), file=sys.stderr)


if __name__ == "__main__":
    main()
