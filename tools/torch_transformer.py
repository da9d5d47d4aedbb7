#!/usr/bin/python3
"""The attncap transformer decoder re-implemented in PyTorch: the independent reference for
tests/test_transformer.c (parity of logits, loss and every gradient).

Model and objective as include/attncap/decoder.h says (pre-LN; row-vector convention in our tensors,
y = x W, so PyTorch's weights are their transposes). The attention is PyTorch's own
F.multi_head_attention_forward (its head split, scaling and masking), so the fixture checks that ours
is the standard multi-head attention, not only that it is self-consistent:
  x_0 = sqrt(d) emb[y] + PE(t)             PE(t, 2i) = sin(t / 10000^(2i/d)), PE(t, 2i+1) = cos(...)
  m   = LN(a W_m + b_m)
  per layer: x += SelfAttn(LN_1(x)) (causal), x += CrossAttn(LN_2(x), m), x += W_2 relu(W_1 LN_3(x) + b_1) + b_2
  logits = LN_f(x) W_o + b_o,  loss = sum CE / N
Dropout multiplies x_0 and each branch's output by masks from the counter hash of
src/decoder/decoder_internal.h (site 0: x_0; site 1 + 3 l + j: layer l's branch j = self, cross, ff),
element r d + i of token row r, rows caption-major: the C test rebuilds them from the seed.

Usage:
  /usr/bin/python3 tools/torch_transformer.py --fixture tests/fixtures/transformer_parity.safetensors
      regenerates the parity fixture (float64 computation, stored as F32)
"""
import argparse, json, math, os, sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_decoder import M64, START, END, keep_mask, mix64, write_safetensors  # noqa: E402


def tensor_specs(c):
    """(name, shape) in the C decoder's order; stacked per-layer tensors have a leading layer axis here."""
    V, d, Fw, D, Y = c["vocab"], c["embed"], c["hidden"], c["dim"], c["layers"]
    return [("emb", (V, d)), ("tf_mem_w", (D, d)), ("tf_mem_b", (d,)), ("tf_mem_ln_g", (d,)), ("tf_mem_ln_b", (d,)),
            ("tf_ln1_g", (Y, d)), ("tf_ln1_b", (Y, d)), ("tf_self_wqkv", (Y, d, 3 * d)), ("tf_self_bqkv", (Y, 3 * d)),
            ("tf_self_wo", (Y, d, d)), ("tf_self_bo", (Y, d)), ("tf_ln2_g", (Y, d)), ("tf_ln2_b", (Y, d)),
            ("tf_cross_wq", (Y, d, d)), ("tf_cross_bq", (Y, d)), ("tf_cross_wkv", (Y, d, 2 * d)),
            ("tf_cross_bkv", (Y, 2 * d)), ("tf_cross_wo", (Y, d, d)), ("tf_cross_bo", (Y, d)),
            ("tf_ln3_g", (Y, d)), ("tf_ln3_b", (Y, d)), ("tf_ff_w1", (Y, d, Fw)), ("tf_ff_b1", (Y, Fw)),
            ("tf_ff_w2", (Y, Fw, d)), ("tf_ff_b2", (Y, d)), ("tf_lnf_g", (d,)), ("tf_lnf_b", (d,)),
            ("out_lo", (d, V)), ("out_bo", (V,))]


def c_shape(shape):
    """How the C model file stores a tensor: stacked matrices as [Y rows, cols], vectors 1-D when Y = 1."""
    if len(shape) == 3:
        return (shape[0] * shape[1], shape[2])
    if len(shape) == 2 and shape[0] == 1:
        return (shape[1],)
    return shape


def site_mask(seed, site, n, d, p):
    s = mix64((seed + 0xD6E8FEB86659FD93 * (site + 1)) & M64)
    return keep_mask(s, n * d, p).reshape(n, d).astype(np.float64) / (1.0 - np.float32(p))


def mha(P, l, q_in, kv_in, cross, mask):
    """PyTorch's multi-head attention with our weights (transposed to its x W^T convention)."""
    d, nh = q_in.shape[-1], P["heads"]
    if cross:
        wkv = P["tf_cross_wkv"][l]
        out, _ = F.multi_head_attention_forward(
            q_in[:, None, :], kv_in[:, None, :], kv_in[:, None, :], d, nh, None,
            torch.cat([P["tf_cross_bq"][l], P["tf_cross_bkv"][l]]), None, None, False, 0.0,
            P["tf_cross_wo"][l].T, P["tf_cross_bo"][l], training=False, need_weights=False,
            use_separate_proj_weight=True, q_proj_weight=P["tf_cross_wq"][l].T, k_proj_weight=wkv[:, :d].T,
            v_proj_weight=wkv[:, d:].T)
    else:
        out, _ = F.multi_head_attention_forward(
            q_in[:, None, :], q_in[:, None, :], q_in[:, None, :], d, nh, P["tf_self_wqkv"][l].T,
            P["tf_self_bqkv"][l], None, None, False, 0.0, P["tf_self_wo"][l].T, P["tf_self_bo"][l],
            training=False, need_weights=False, attn_mask=mask)
    return out[:, 0, :]


def forward(P, c, ann, photo, lens, words, masks):
    """ann [U, L, D]; photo[b]: caption b's photo; masks: dict site -> [N, d] (or None: no dropout).
    Returns loss, logits [N, V] caption-major, ce_sum, N."""
    d, Y = c["embed"], c["layers"]
    ln = lambda x, g, b: F.layer_norm(x, (d,), g, b, eps=1e-5)
    mem = ln(ann @ P["tf_mem_w"] + P["tf_mem_b"], P["tf_mem_ln_g"], P["tf_mem_ln_b"])
    pos = torch.arange(max(lens), dtype=torch.float64)[:, None]
    inv = torch.tensor([10000.0 ** (-2.0 * (j // 2) / d) for j in range(d)], dtype=torch.float64)
    pe = torch.where(torch.arange(d) % 2 == 0, torch.sin(pos * inv), torch.cos(pos * inv))
    logits, tgts, row = [], [], 0
    for b, n in enumerate(lens):
        m = (lambda s: masks[s][row:row + n]) if masks else (lambda s: 1.0)
        y = torch.tensor([START] + [int(w) for w in words[b, :n - 1]])
        tgts.append(torch.tensor([int(w) for w in words[b, :n - 1]] + [END]))
        x = (math.sqrt(d) * P["emb"][y] + pe[:n]) * m(0)
        causal = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)  # True: not allowed
        for l in range(Y):
            x = x + mha(P, l, ln(x, P["tf_ln1_g"][l], P["tf_ln1_b"][l]), None, False, causal) * m(1 + 3 * l)
            x = x + mha(P, l, ln(x, P["tf_ln2_g"][l], P["tf_ln2_b"][l]), mem[photo[b]], True, None) * m(2 + 3 * l)
            h = torch.relu(ln(x, P["tf_ln3_g"][l], P["tf_ln3_b"][l]) @ P["tf_ff_w1"][l] + P["tf_ff_b1"][l])
            x = x + (h @ P["tf_ff_w2"][l] + P["tf_ff_b2"][l]) * m(3 + 3 * l)
        logits.append(ln(x, P["tf_lnf_g"], P["tf_lnf_b"]) @ P["out_lo"] + P["out_bo"])
        row += n
    logits = torch.cat(logits)
    ce = F.cross_entropy(logits, torch.cat(tgts), reduction="sum")
    return ce / logits.shape[0], logits, ce, logits.shape[0]


def make_fixture(path):
    c = {"vocab": 13, "embed": 12, "hidden": 20, "att": 12, "dim": 10, "n_ann": 6, "grid_h": 2, "grid_w": 3,
         "dropout": 0.3, "lambda": 0, "attention": "scaled-dot", "heads": 3, "decoder": "transformer", "layers": 2}
    seed = 31337
    rng = np.random.default_rng(2026)
    P = {}
    for name, shape in tensor_specs(c):
        if name.endswith("_g"):
            a = 1 + 0.1 * rng.standard_normal(shape)
        elif name == "emb":
            a = rng.standard_normal(shape) / math.sqrt(c["embed"])
        elif len(shape) >= 2 and not (len(shape) == 2 and shape[0] == c["layers"]):
            a = 0.4 * rng.standard_normal(shape)
        else:
            a = 0.1 * rng.standard_normal(shape)
        P[name] = a.astype(np.float32)
    lens = [6, 5, 5, 3, 1]
    photo = [0, 1, 0, 2, 1]  # captions 0 and 2 share photo 0, 1 and 4 photo 1
    stride = 7
    words = rng.integers(4, c["vocab"], size=(len(lens), stride)).astype(np.int32)
    ann = np.abs(rng.standard_normal((3, c["n_ann"], c["dim"]))).astype(np.float32)
    N, d, p = sum(lens), c["embed"], c["dropout"]
    masks = {s: torch.tensor(site_mask(seed, s, N, d, p)) for s in range(1 + 3 * c["layers"])}
    Pt = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in P.items()}
    Pt["heads"] = c["heads"]
    loss, logits, ce, n = forward(Pt, c, torch.tensor(ann, dtype=torch.float64), photo, lens, words, masks)
    loss.backward()
    specs = tensor_specs(c)
    out = [(k, P[k].reshape(c_shape(s))) for k, s in specs]
    out += [("ann", ann), ("photo", np.array(photo, dtype=np.int32)), ("len", np.array(lens, dtype=np.int32)),
            ("words", words), ("logits", logits.detach().numpy().astype(np.float32)),
            ("loss", np.array([loss.item()], dtype=np.float32))]
    out += [("grad." + k, Pt[k].grad.numpy().astype(np.float32).reshape(c_shape(s))) for k, s in specs]
    meta = {"config": json.dumps(c), "seed": str(seed), "ce_sum": repr(ce.item()), "loss": repr(loss.item()),
            "tool": "tools/torch_transformer.py --fixture (torch %s, float64)" % torch.__version__}
    write_safetensors(path, out, meta)
    print("wrote %s: loss %.9f, %d tokens" % (path, loss.item(), n))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixture", required=True)
    make_fixture(ap.parse_args().fixture)
