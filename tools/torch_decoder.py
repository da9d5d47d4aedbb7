#!/usr/bin/python3
"""The attncap soft-attention decoder re-implemented in PyTorch: the independent reference for
tests/test_decoder.c (parity of logits, loss and every gradient) and the peer of bench/bench_train.c.

Model and objective exactly as src/decoder/decoder_train.c (row-vector convention, y = x W):
  e_ti  = w_e . tanh(a_i W_a + b_a + h W_h),  alpha = softmax_i e_ti,  beta = sigmoid(h . w_b + b_b)
          (the additive score; config "attention" picks another, as include/attncap/decoder.h:
           dot (a_i W_a) . (h W_h), scaled-dot the same / sqrt(A), general (a_i W_a) . h with W_a [D, H],
           cosine exp(s) cos(a_i W_a + b_a, h W_h) with |x| = sqrt(x . x + 1e-8))
  z     = beta * sum_i alpha_i a_i
  i,f,g,o = [E y; z; h] W_lstm + b (order i f g o), c' = f c + i g, h' = o tanh(c')
  logits = dropout(tanh(E y + dropout(h') L_h + z L_z)) L_o + b_o
  h_0 = tanh(mean(a) W_init_h + b), c_0 = tanh(mean(a) W_init_c + b)
  loss = (sum_tokens CE + lambda * sum_captions sum_i (1 - sum_t alpha_ti)^2) / N_tokens
Hard attention (--hard; config attention_mode "hard", Xu et al. 2015 4.1): each caption, by a coin
from the seed, trains on the expected context (as soft attention) with probability config "expected_context",
else on locations s_t sampled from alpha_t by the same counter hash as src/decoder/hard_attention.c
(one per head: z = beta * head j's channels of a_{s_tj}), and the objective gains
  - entropy * sum_t H(alpha_t) + reinforce * sum_i stop_grad(ce_i - n_i b) * log p(s_i | a)
over the sampled captions (ce_i their cross-entropy, n_i their tokens, b the baseline): the
score-function estimator written as a surrogate loss whose autograd gradient is the estimator.
Captions are sorted by length descending; at step t the first B_t are still running (the same
shrinking batch as the C code); token rows are time-major.
Masks (decoder.h): a photo may own only its first n of the L cells (n_valid per caption); the rest is
padding. Here the padding is masked the textbook way, independently of the C code's "never read":
scores of padded cells set to -inf before the softmax (torch.masked_fill), the mean and the penalty
taken over a boolean mask of the valid cells, and the padding replaced by zeros before anything
multiplies it (the fixture fills it with NaN, which the C code must never read).

Usage:
  /usr/bin/python3 tools/torch_decoder.py --fixture tests/fixtures/decoder_parity.safetensors
      regenerates the parity fixture (float64 computation, stored as F32; dropout masks from the same
      counter hash as src/decoder/decoder_internal.h, so the C test reproduces them from the seed)
  /usr/bin/python3 tools/torch_decoder.py --attention dot --fixture tests/fixtures/decoder_parity_dot.safetensors
      the same for another score function (dot, scaled-dot, general, cosine), at A = 20 and H = 18 so
      that the C kernels' 16-wide loops run; --heads 2 splits the attention in two heads; --mask gives
      the photos 2, 6, 3, 5 and 1 of their 6 cells (NaN padding): the masked softmax; --hard: hard
      attention's estimator (tests/fixtures/decoder_parity_hard*.safetensors); --copy: config.copy's
      objective on a 2x2 grid with 2 regions (tests/fixtures/decoder_parity_copy.safetensors); --pointer
      config.copy 2; --absent with either: config.absent's priors of unseen objects' words
  /usr/bin/python3 tools/torch_decoder.py --bench [--seconds S] [--threads 2]
      training-step throughput (forward + backward, target tokens/s) at the shipped size, float32
"""
import argparse, json, math, struct, sys, time

import numpy as np
import torch
import torch.nn.functional as F

PAD, START, END, UNK = 0, 1, 2, 3
M64 = (1 << 64) - 1


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def keep_mask(seed, n, p):
    """ac_dropout_keep(seed, idx, p) for idx in 0..n-1: keep iff float32(top 24 bits / 2^24) >= p."""
    out = np.empty(n, dtype=bool)
    pf = np.float32(p)
    for i in range(n):
        h = mix64((seed + (i + 1) * 0x9E3779B97F4A7C15) & M64)
        out[i] = np.float32(h >> 40) * np.float32(1.0 / 16777216.0) >= pf
    return out


SCORE_TENSORS = {"additive": ("att_ba", "att_wh", "att_we"), "dot": ("att_wh",), "scaled-dot": ("att_wh",),
                 "general": (), "cosine": ("att_ba", "att_wh", "att_logtau")}


def tensor_specs(c):
    V, E, H, A, D = c["vocab"], c["embed"], c["hidden"], c["att"], c["dim"]
    score = c.get("attention", "additive")
    att = [("att_wa", (D, H if score == "general" else A)), ("att_ba", (A,)), ("att_wh", (H, A)), ("att_we", (A,)),
           ("att_logtau", (1,))]
    return [("emb", (V, E))] + [t for t in att if t[0] in ("att_wa",) + SCORE_TENSORS[score]] + [
            ("beta_w", (H,)), ("beta_b", (1,)), ("init_h_w", (D, H)), ("init_h_b", (H,)), ("init_c_w", (D, H)),
            ("init_c_b", (H,)), ("lstm_w", (E + D + H, 4 * H)), ("lstm_b", (4 * H,)), ("out_lh", (H, E)),
            ("out_lz", (D, E)), ("out_lo", (E, V)), ("out_bo", (V,))] + (
            [("copy_w", (H + D,)), ("copy_b", (1,))] if c.get("copy") == 1 else []) + (
            [("ptr_we", (H if score == "general" else A,)), ("ptr_ws", (H,)), ("ptr_bs", (1,))]
            if c.get("copy") == 2 else []) + ([("absent_b", (80,))] if c.get("absent") else []) + \
        ([("obj_h", (80, H)), ("obj_c", (80, H))] if c.get("object_init") else [])


def scores(P, c, keys, hp, j=0, n=1):
    """e [bt, L]: head j of n's attention scores of the queries from hp [bt, H] against keys [bt, L, K]:
    the head's 1/n of the key and query columns (and of w_e)."""
    score = c.get("attention", "additive")
    q = hp if score == "general" else hp @ P["att_wh"]
    dk = q.shape[1] // n
    cols = slice(j * dk, (j + 1) * dk)
    q, keys = q[:, cols], keys[:, :, cols]
    if score == "additive":
        return torch.tanh(keys + q[:, None, :]) @ P["att_we"][cols]
    e = (keys * q[:, None, :]).sum(2)
    if score == "scaled-dot":
        e = e / math.sqrt(dk)
    if score == "cosine":
        nq = torch.sqrt((q * q).sum(1) + 1e-8)
        nk = torch.sqrt((keys * keys).sum(2) + 1e-8)
        e = torch.exp(P["att_logtau"]) * e / (nq[:, None] * nk)
    return e


def uniform53(seed, idx):
    """The C code's u in [0, 1): the top 53 bits of mix64(seed + (idx + 1) * golden)."""
    return (mix64((seed + (idx + 1) * 0x9E3779B97F4A7C15) & M64) >> 11) * (1.0 / 9007199254740992.0)


def sample_cell(alpha, u):
    """ac_hard_attention_sample for one head: inverse CDF over the cells with alpha > 0; also the distance
    of u to the nearest cumulative boundary (the float32 alphas of the C code must fall the same way)."""
    cum, pick, margin = 0.0, -1, 1.0
    for l, a in enumerate(alpha):
        if a <= 0:
            continue
        pick = l
        cum += a
        margin = min(margin, abs(u - cum))
        if u < cum:
            break
    return max(pick, 0), margin


def copy_nll(logits, tgt, gate, abar, cats, word_cat):
    """-log p(y) of the copy path (include/attncap/decoder.h, config.copy), written from its definition:
    p(w) = (1 - g) p_w + g sum_{r: w names c_r} pi_r p_w / sum_{w' naming c_r} p_w', with pi the
    regions' attention renormalised over the regions whose category names some word. Rows without such
    a region: the plain cross-entropy. logits [bt, V], tgt [bt], gate [bt], abar [bt, R], cats: per row a
    list of R categories (None: no regions), word_cat [V] (-1: names none). Rows with such a region add
    the switch's supervision: the binary cross-entropy of g against "y names a region's category"."""
    p = torch.softmax(logits, 1)
    out = []
    for i in range(logits.shape[0]):
        y = int(tgt[i])
        keep = [r for r, k in enumerate(cats[i] or []) if (word_cat == k).any()]
        if not keep:
            out.append(-torch.log(p[i, y]))
            continue
        pi = abar[i, keep] / abar[i, keep].sum()
        copy = torch.zeros((), dtype=logits.dtype)
        for j, r in enumerate(keep):
            k = cats[i][r]
            if word_cat[y] == k:
                copy = copy + pi[j] * p[i, y] / p[i, torch.tensor(word_cat == k)].sum()
        named = float(any(word_cat[y] == cats[i][r] for r in keep))
        bce = F.binary_cross_entropy(gate[i], torch.tensor(named, dtype=logits.dtype))
        out.append(-torch.log((1 - gate[i]) * p[i, y] + gate[i] * copy) + bce)
    return torch.stack(out)


def forward(P, c, ann, lens, words, train, masks=None, n_valid=None, hard=None, copy=None):
    """P: dict of parameter tensors; ann [B, L, D]; lens (descending); words [B, stride] (w_1..w_n).
    masks: None (torch dropout when train) or (m1 [N, H], m2 [N, E]) explicit scaled masks.
    n_valid: None, or [B] the cells each caption's photo owns (the first n of L; the rest padding).
    hard: None (soft attention), or {"seed": dropout seed, "baseline": b}: hard attention's training
    objective (module docstring); hard["margin"] receives the smallest distance of a sampling draw to a
    cell boundary.
    copy: None, or {"n_regions": [B], "cats": [B] lists, "word_cat": np [V]}: config.copy's objective
    (copy_nll), a caption's regions the last n_regions of its photo's n_valid cells.
    Returns loss, logits [N, V] time-major, ce_sum, pen_sum, N."""
    H, p = c["hidden"], c["dropout"] if train else 0.0
    B, T = len(lens), lens[0]
    L = ann.shape[1]
    valid = torch.ones(B, L, dtype=torch.bool) if n_valid is None else \
        torch.arange(L)[None, :] < torch.tensor(n_valid)[:, None]  # [B, L]
    ann = torch.where(valid[:, :, None], ann, torch.zeros((), dtype=ann.dtype))
    mean = ann.sum(1) / valid.sum(1, keepdim=True).to(ann.dtype)
    proj = ann @ P["att_wa"] + (P["att_ba"] if "att_ba" in P else 0)
    pre_h, pre_c = mean @ P["init_h_w"] + P["init_h_b"], mean @ P["init_c_w"] + P["init_c_b"]
    if copy is not None and c.get("object_init"):  # o_c: the best score of the caption's regions of category c
        o = torch.zeros(B, 80, dtype=ann.dtype)
        for i in range(B):
            for k in range(copy["n_regions"][i]):
                cat, s = copy["cats"][i][k], copy["scores"][i][k]
                if cat < 80:  # COCO's categories only: an ImageNet word has no row of obj_h
                    o[i, cat] = max(o[i, cat].item(), s)
        pre_h, pre_c = pre_h + o @ P["obj_h"], pre_c + o @ P["obj_c"]
    h, cc = torch.tanh(pre_h), torch.tanh(pre_c)
    n = c.get("heads", 1)
    dv = ann.shape[2] // n
    S = torch.zeros(B, n * ann.shape[1], dtype=ann.dtype)
    lens_t = torch.tensor(lens)
    logits, tgts, row, copy_rows = [], [], 0, []
    if hard is not None:
        seed_loc, seed_coin = mix64(hard["seed"] ^ 0x4C4F434154494F4E), mix64(hard["seed"] ^ 0x434F494E00)
        sampled = [uniform53(seed_coin, i) >= c["expected_context"] for i in range(B)]
        logp = [torch.zeros((), dtype=ann.dtype) for _ in range(B)]
        ent = torch.zeros((), dtype=ann.dtype)
        hard["margin"] = 1.0
    for t in range(T):
        bt = int((lens_t > t).sum())
        hp, cp = h[:bt], cc[:bt]
        y = torch.full((bt,), START, dtype=torch.long) if t == 0 else words[:bt, t - 1]
        tgt = torch.where(lens_t[:bt] - 1 > t, words[:bt, min(t, words.shape[1] - 1)], torch.tensor(END))
        # head j attends with its own softmax and reads its own 1/n of the channels
        alphas = [torch.softmax(scores(P, c, proj[:bt], hp, j, n).masked_fill(~valid[:bt], float("-inf")), dim=1)
                  for j in range(n)]
        alpha = torch.cat(alphas, 1)
        beta = torch.sigmoid(hp @ P["beta_w"] + P["beta_b"])
        ctx = torch.cat([(a[:, :, None] * ann[:bt, :, j * dv:(j + 1) * dv]).sum(1) for j, a in enumerate(alphas)], 1)
        if hard is not None:  # the sampled captions read one cell per head instead
            rows = []
            for i in range(bt):
                if not sampled[i]:
                    rows.append(ctx[i])
                    continue
                parts = []
                for j, a in enumerate(alphas):
                    s, m = sample_cell(a[i].detach().tolist(), uniform53(seed_loc, (row + i) * n + j))
                    hard["margin"] = min(hard["margin"], m)
                    parts.append(ann[i, s, j * dv:(j + 1) * dv])
                    logp[i] = logp[i] + torch.log(a[i, s])
                    ai = a[i][valid[i]]
                    ent = ent - (ai * torch.log(ai)).sum()
                rows.append(torch.cat(parts))
            ctx = torch.stack(rows)
        z = beta[:, None] * ctx
        ey = P["emb"][y]
        g = torch.cat([ey, z, hp], 1) @ P["lstm_w"] + P["lstm_b"]
        i, f = torch.sigmoid(g[:, :H]), torch.sigmoid(g[:, H:2 * H])
        gg, o = torch.tanh(g[:, 2 * H:3 * H]), torch.sigmoid(g[:, 3 * H:])
        cc = f * cp + i * gg
        h = o * torch.tanh(cc)
        if masks is not None:
            hd = h * masks[0][row:row + bt]
        else:
            hd = F.dropout(h, p, train)
        out = torch.tanh(ey + hd @ P["out_lh"] + z @ P["out_lz"])
        od = out * masks[1][row:row + bt] if masks is not None else F.dropout(out, p, train)
        logits.append(od @ P["out_lo"] + P["out_bo"])
        if copy is not None and c.get("absent"):  # + b_c on the words of each category no region of the photo has
            wc = torch.tensor(copy["word_cat"], dtype=torch.long)
            unseen = torch.tensor([[0 <= wc[w] < 80 and int(wc[w]) not in copy["cats"][i][:copy["n_regions"][i]]
                                    for w in range(len(wc))] for i in range(bt)], dtype=ann.dtype)
            logits[-1] = logits[-1] + unseen * P["absent_b"][wc.clamp(min=0, max=79)]  # COCO's only
        tgts.append(tgt)
        if copy is not None and c["copy"] == 2:  # the pointer: regions against the sentinel, one softmax
            q = hp if c.get("attention", "additive") == "general" else hp @ P["att_wh"]
            gate, abar, cats = [], torch.zeros(bt, c["regions"], dtype=ann.dtype), []
            for i in range(bt):
                nr = copy["n_regions"][i]
                g0 = (n_valid[i] if n_valid is not None else L) - nr
                cats.append(copy["cats"][i][:nr] if nr else None)
                named = [r for r in range(nr) if (copy["word_cat"] == copy["cats"][i][r]).any()]
                if not named:
                    gate.append(torch.zeros((), dtype=ann.dtype))
                    continue
                e = torch.tanh(proj[i, [g0 + r for r in named]] + q[i]) @ P["ptr_we"]
                es = hd[i] @ P["ptr_ws"] + P["ptr_bs"]
                wts = torch.softmax(torch.cat([e, es]), 0)
                gate.append(1 - wts[-1])
                for j, r in enumerate(named):
                    abar[i, r] = wts[j]
            copy_rows.append(copy_nll(logits[-1], tgt, torch.stack(gate), abar, cats, copy["word_cat"]))
        elif copy is not None:
            gate = torch.sigmoid(torch.cat([hd, z], 1) @ P["copy_w"] + P["copy_b"])
            abar = torch.zeros(bt, c["regions"], dtype=ann.dtype)
            cats = []
            for i in range(bt):
                nr = copy["n_regions"][i]
                g0 = (n_valid[i] if n_valid is not None else L) - nr
                if nr:
                    abar[i, :nr] = sum(a[i, g0:g0 + nr] for a in alphas) / n
                cats.append(copy["cats"][i][:nr] if nr else None)
            copy_rows.append(copy_nll(logits[-1], tgt, gate, abar, cats, copy["word_cat"]))
        S = S + F.pad(alpha, (0, 0, 0, B - bt))
        row += bt
    logits = torch.cat(logits)
    ce_rows = F.cross_entropy(logits, torch.cat(tgts), reduction="none") if copy is None else torch.cat(copy_rows)
    ce = ce_rows.sum()
    pen = (((1 - S) ** 2) * valid.repeat(1, n)).sum()  # over each photo's own cells, every head
    N = logits.shape[0]
    loss = ce + c["lambda"] * pen
    if hard is not None:
        owner = torch.cat([torch.arange(int((lens_t > t).sum())) for t in range(T)])  # the caption of each row
        for i in range(B):
            if sampled[i]:
                adv = ce_rows[owner == i].sum().detach() - lens[i] * hard["baseline"]
                loss = loss + c["reinforce"] * adv * logp[i]
        loss = loss - c["entropy"] * ent
    return loss / N, logits, ce, pen, N


def write_safetensors(path, tensors, meta):
    """tensors: list of (name, np.ndarray float32/int32)."""
    hdr, off, blobs = {}, 0, []
    for name, a in tensors:
        a = np.ascontiguousarray(a)
        dt = {np.dtype(np.float32): "F32", np.dtype(np.int32): "I32"}[a.dtype]
        hdr[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        blobs.append(a.tobytes())
        off += a.nbytes
    hdr["__metadata__"] = meta
    h = json.dumps(hdr).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as fp:
        fp.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def make_fixture(path, score, heads, masked=False, hard_mode=False, sparse=False, copy_mode=0, absent=False,
                 object_init=False, imagenet=False):
    c = {"vocab": 13, "embed": 8, "hidden": 8, "att": 6, "dim": 10, "n_ann": 6, "grid_h": 2, "grid_w": 3,
         "dropout": 0.3, "lambda": 0.5}
    if copy_mode:  # a 2x2 grid and 2 regions; words 4-9 name categories 0, 0, 1, 3, 3, 3 (none names 7)
        c.update(grid_h=2, grid_w=2, regions=2, region_scale=60, region_min_score=0.2, copy=copy_mode)
        if absent:
            c.update(absent=1)
        if object_init:
            c.update(object_init=1)
        if imagenet:  # categories 3 and 7 become ImageNet words 123 and 100 (past COCO's 80 and a signed byte)
            c.update(imagenet_words=124)
    if hard_mode:  # every term of the estimator, and both kinds of captions in the batch
        c.update(attention_mode="hard", reinforce=0.7, entropy=0.05, expected_context=0.4)
    if score != "additive":  # (the additive fixture predates the field: absent means additive)
        c.update(hidden=18, att=20, attention=score)
    if heads > 1:  # 20 (or general's 18) key columns and 10 channels split in two
        c.update(hidden=18, att=20, heads=heads)
    seed = 777
    rng = np.random.default_rng(2024)
    P = {}
    for name, shape in tensor_specs(c):
        P[name] = (rng.standard_normal(shape) * (0.5 if len(shape) == 2 else 0.2)).astype(np.float32)
    if score == "cosine":  # tau near 10, as a model starts (AC_ATTENTION_LOGTAU_INIT), not near 1
        P["att_logtau"] += np.float32(math.log(10))
    lens = [6, 5, 5, 3, 1]
    stride = 7
    words = rng.integers(4, c["vocab"], size=(len(lens), stride)).astype(np.int32)
    ann = np.abs(rng.standard_normal((len(lens), c["n_ann"], c["dim"]))).astype(np.float32)
    n_valid, copy = None, None
    if copy_mode:  # cells 4, 4, 4, 4, 2 then 2, 1, 0, 2, 1 regions; a category twice, one that names nothing
        masked = True
        word_cat = np.array([-1] * 4 + [0, 0, 1, 3, 3, 3] + [-1] * 3, dtype=np.int32)
        n_regions = [2, 1, 0, 2, 1]
        cats = [[0, 3], [7], [], [3, 3], [1]]
        # scores: category 3 twice in one photo (o takes the larger), 7 names no word but still counts
        scores = [[0.9, 0.35], [0.6], [], [0.5, 0.8], [0.45]]
        if imagenet:
            inet = {3: 80 + 123, 7: 80 + 100}
            word_cat = np.array([inet.get(int(k), int(k)) for k in word_cat], dtype=np.int32)
            cats = [[inet.get(k, k) for k in row] for row in cats]
        copy = {"n_regions": n_regions, "cats": cats, "scores": scores, "word_cat": word_cat}
        n_valid = [6, 5, 4, 6, 3]
        for b, nv in enumerate(n_valid):
            ann[b, nv:, :] = np.nan
    elif masked:  # photos of 2, 6, 3, 5 and 1 of the 6 cells; their padding NaN (never to be read)
        n_valid = [1, 2, 1, 3, 1] if sparse else [2, 6, 3, 5, 1]
        for b, nv in enumerate(n_valid):
            ann[b, nv:, :] = np.nan
    N = sum(lens)
    H, E, p = c["hidden"], c["embed"], c["dropout"]
    scale = 1.0 / (1.0 - np.float32(p))
    m1 = keep_mask(seed, N * H, p).reshape(N, H) * np.float32(scale)
    seed2 = mix64((seed ^ 0x5DEECE66D) & M64)
    m2 = keep_mask(seed2, N * E, p).reshape(N, E) * np.float32(scale)
    Pt = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in P.items()}
    hard = {"seed": seed, "baseline": 2.1} if hard_mode else None
    loss, logits, ce, pen, n = forward(Pt, c, torch.tensor(ann, dtype=torch.float64), lens,
                                       torch.tensor(words, dtype=torch.long), True,
                                       (torch.tensor(m1, dtype=torch.float64), torch.tensor(m2, dtype=torch.float64)),
                                       n_valid, hard, copy)
    assert math.isfinite(loss.item())
    if hard is not None:  # float32 alphas in C: no draw may sit this close to a cell boundary
        assert hard["margin"] > 1e-5, "a draw is %.2g from a boundary: pick another seed" % hard["margin"]
    loss.backward()
    out = [(k, P[k]) for k, _ in tensor_specs(c)]
    out += [("ann", ann), ("len", np.array(lens, dtype=np.int32)), ("words", words)]
    if n_valid is not None:
        out += [("n_valid", np.array(n_valid, dtype=np.int32))]
    if copy is not None:
        out += [("n_regions", np.array(copy["n_regions"], dtype=np.int32)), ("word_category", copy["word_cat"]),
                ("region_cat", np.array([(k + [255, 255])[:2] for k in copy["cats"]], dtype=np.int32))]
        if c.get("object_init"):
            out += [("region_score", np.array([(s + [0, 0])[:2] for s in copy["scores"]], dtype=np.float32))]
    out += [
            ("logits", logits.detach().numpy().astype(np.float32)),
            ("loss", np.array([loss.item()], dtype=np.float32))]
    out += [("grad." + k, Pt[k].grad.numpy().astype(np.float32)) for k, _ in tensor_specs(c)]
    meta = {"config": json.dumps(c), "seed": str(seed),
            **({"baseline": repr(hard["baseline"])} if hard is not None else {}), "ce_sum": repr(ce.item()), "pen_sum": repr(pen.item()),
            "loss": repr(loss.item()), "tool": "tools/torch_decoder.py --fixture (torch %s, float64)" % torch.__version__}
    write_safetensors(path, out, meta)
    print("wrote %s: loss %.9f, %d tokens" % (path, loss.item(), n))


def bench(seconds, threads, B=32, V=2500, E=512, H=512, A=512):
    torch.set_num_threads(threads)
    c = {"vocab": V, "embed": E, "hidden": H, "att": A, "dim": 1280, "n_ann": 49, "dropout": 0.5, "lambda": 1.0}
    g = torch.Generator().manual_seed(1)
    P = {}
    for name, shape in tensor_specs(c):
        P[name] = (torch.rand(shape, generator=g) - 0.5).mul_(0.1).requires_grad_(True)
    lens = [1 + 20 - (i * 14) // B for i in range(B)]  # the same lengths as bench/bench_train.c
    words = torch.randint(4, V, (B, 40), generator=g)
    ann = torch.rand(B, 49, 1280, generator=g) * 2
    def step():
        for t in P.values():
            t.grad = None
        loss, _, _, _, n = forward(P, c, ann, lens, words, True)
        loss.backward()
        return n
    step()
    t0, c0, toks, steps = time.time(), time.process_time(), 0, 0
    while True:
        toks += step()
        steps += 1
        t = time.time() - t0
        if t >= seconds:
            break
    cpu = time.process_time() - c0
    print("pytorch   train step: %d steps, %.0f target tokens/s, %.0f per CPU-second (batch %d, E=H=A=%d/%d/%d, V=%d, "
          "%d threads, torch %s)" % (steps, toks / t, toks / cpu, B, E, H, A, V, threads, torch.__version__))
    return toks / t


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixture")
    ap.add_argument("--attention", default="additive", choices=sorted(SCORE_TENSORS))
    ap.add_argument("--heads", type=int, default=1)
    ap.add_argument("--mask", action="store_true", help="photos own only some of the cells (masked softmax)")
    ap.add_argument("--hard", action="store_true", help="hard attention's training objective (REINFORCE)")
    ap.add_argument("--sparse", action="store_true", help="with --mask: photos of 1, 2, 1, 3 and 1 of the 6 cells "
                    "(fewer than half the rows: the C code's per-photo products with W_a, captions without photos "
                    "given regions)")
    ap.add_argument("--copy", action="store_true", help="config.copy: a 2x2 grid, 2 regions and the copy "
                    "path's objective (tests/fixtures/decoder_parity_copy.safetensors)")
    ap.add_argument("--pointer", action="store_true", help="config.copy 2, the pointer and its sentinel, on the "
                    "same batch (tests/fixtures/decoder_parity_pointer.safetensors)")
    ap.add_argument("--absent", action="store_true", help="with --copy or --pointer: config.absent's priors "
                    "(tests/fixtures/decoder_parity_pointer_absent.safetensors)")
    ap.add_argument("--object-init", action="store_true", help="with --copy or --pointer: config.object_init, the "
                    "regions' categories and scores in the initial state "
                    "(tests/fixtures/decoder_parity_pointer_objects.safetensors, with --absent)")
    ap.add_argument("--imagenet", action="store_true", help="with --copy or --pointer: two of the categories are "
                    "ImageNet words (config.imagenet_words; 203 and 180, past COCO's 80 and a signed byte), which "
                    "absent and object_init leave out (tests/fixtures/decoder_parity_pointer_imagenet.safetensors, "
                    "with --absent --object-init)")
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    if a.fixture:
        make_fixture(a.fixture, a.attention, a.heads, a.mask or a.sparse, a.hard, a.sparse,
                     2 if a.pointer else 1 if a.copy else 0, a.absent, a.object_init, a.imagenet)
    if a.bench:
        bench(a.seconds, a.threads)
    if not a.fixture and not a.bench:
        ap.print_help()
