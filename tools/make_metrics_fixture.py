#!/usr/bin/python3
"""Writes tests/fixtures/metrics_ref.json: random small caption sets scored by a Python transcription
of coco-caption's scorers (pycocoevalcap bleu/bleu_scorer.py with option 'closest', rouge/rouge.py,
cider/cider_scorer.py i.e. CIDEr-D with sigma 6), used by tests/test_metrics.c as an independent
reference for the C metrics on inputs the hand-made cases do not reach (repeated n-grams, many
references, empty candidates, ties in reference length).

Regenerate:  /usr/bin/python3 tools/make_metrics_fixture.py tests/fixtures/metrics_ref.json
"""
import copy
import json
import math
import random
import sys
from collections import defaultdict

import numpy as np


# ---- BLEU (bleu_scorer.py) ----
def precook(s, n=4):
    words = s.split()
    counts = defaultdict(int)
    for k in range(1, n + 1):
        for i in range(len(words) - k + 1):
            counts[tuple(words[i:i + k])] += 1
    return len(words), counts


def cook_refs(refs, n=4):
    reflen, maxcounts = [], {}
    for ref in refs:
        rl, counts = precook(ref, n)
        reflen.append(rl)
        for ngram, count in counts.items():
            maxcounts[ngram] = max(maxcounts.get(ngram, 0), count)
    return reflen, maxcounts


def cook_test(test, crefs, n=4):
    reflen, refmaxcounts = crefs
    testlen, counts = precook(test, n)
    result = {"reflen": reflen, "testlen": testlen,
              "guess": [max(0, testlen - k + 1) for k in range(1, n + 1)], "correct": [0] * n}
    for ngram, count in counts.items():
        result["correct"][len(ngram) - 1] += min(refmaxcounts.get(ngram, 0), count)
    return result


def bleu(items, n=4):
    small, tiny = 1e-9, 1e-15
    bleu_list = [[] for _ in range(n)]
    totalcomps = {'testlen': 0, 'reflen': 0, 'guess': [0] * n, 'correct': [0] * n}
    for refs, cand in items:
        comps = cook_test(cand, cook_refs(refs))
        testlen = comps['testlen']
        totalcomps['testlen'] += testlen
        reflen = min((abs(l - testlen), l) for l in comps['reflen'])[1]
        totalcomps['reflen'] += reflen
        for key in ['guess', 'correct']:
            for k in range(n):
                totalcomps[key][k] += comps[key][k]
        b = 1.
        for k in range(n):
            b *= (float(comps['correct'][k]) + tiny) / (float(comps['guess'][k]) + small)
            bleu_list[k].append(b ** (1. / (k + 1)))
        ratio = (testlen + tiny) / (reflen + small)
        if ratio < 1:
            for k in range(n):
                bleu_list[k][-1] *= math.exp(1 - 1 / ratio)
    bleus, b = [], 1.
    for k in range(n):
        b *= float(totalcomps['correct'][k] + tiny) / (totalcomps['guess'][k] + small)
        bleus.append(b ** (1. / (k + 1)))
    ratio = (totalcomps['testlen'] + tiny) / (totalcomps['reflen'] + small)
    if ratio < 1:
        for k in range(n):
            bleus[k] *= math.exp(1 - 1 / ratio)
    return bleus, bleu_list[3], totalcomps


# ---- ROUGE-L (rouge.py) ----
def my_lcs(string, sub):
    if len(string) < len(sub):
        sub, string = string, sub
    lengths = [[0 for i in range(0, len(sub) + 1)] for j in range(0, len(string) + 1)]
    for j in range(1, len(sub) + 1):
        for i in range(1, len(string) + 1):
            if string[i - 1] == sub[j - 1]:
                lengths[i][j] = lengths[i - 1][j - 1] + 1
            else:
                lengths[i][j] = max(lengths[i - 1][j], lengths[i][j - 1])
    return lengths[len(string)][len(sub)]


def rouge(cand, refs, beta=1.2):
    prec, rec = [], []
    token_c = cand.split(" ")
    for reference in refs:
        token_r = reference.split(" ")
        lcs = my_lcs(token_r, token_c)
        prec.append(lcs / float(len(token_c)))
        rec.append(lcs / float(len(token_r)))
    prec_max, rec_max = max(prec), max(rec)
    if prec_max != 0 and rec_max != 0:
        return ((1 + beta ** 2) * prec_max * rec_max) / float(rec_max + beta ** 2 * prec_max)
    return 0.0


# ---- CIDEr-D (cider/cider_scorer.py) ----
def cider(items, n=4, sigma=6.0):
    crefs = [[precook(r, n)[1] for r in refs] for refs, _ in items]
    ctest = [precook(c, n)[1] for _, c in items]
    df = defaultdict(float)
    for refs in crefs:
        for ngram in set([ngram for ref in refs for (ngram, count) in ref.items()]):
            df[ngram] += 1
    ref_len = np.log(float(len(crefs)))

    def counts2vec(cnts):
        vec = [defaultdict(float) for _ in range(n)]
        length = 0
        norm = [0.0 for _ in range(n)]
        for ngram, term_freq in cnts.items():
            d = np.log(max(1.0, df[ngram]))
            k = len(ngram) - 1
            vec[k][ngram] = float(term_freq) * (ref_len - d)
            norm[k] += pow(vec[k][ngram], 2)
            if k == 1:
                length += term_freq
        return vec, [np.sqrt(x) for x in norm], length

    def sim(vec_hyp, vec_ref, norm_hyp, norm_ref, length_hyp, length_ref):
        delta = float(length_hyp - length_ref)
        val = np.array([0.0 for _ in range(n)])
        for k in range(n):
            for ngram, count in vec_hyp[k].items():
                val[k] += min(vec_hyp[k][ngram], vec_ref[k][ngram]) * vec_ref[k][ngram]
            if (norm_hyp[k] != 0) and (norm_ref[k] != 0):
                val[k] /= (norm_hyp[k] * norm_ref[k])
            val[k] *= np.e ** (-(delta ** 2) / (2 * sigma ** 2))
        return val

    scores = []
    for test, refs in zip(ctest, crefs):
        vec, norm, length = counts2vec(test)
        score = np.array([0.0 for _ in range(n)])
        for ref in refs:
            vec_ref, norm_ref, length_ref = counts2vec(ref)
            score += sim(vec, vec_ref, norm, norm_ref, length, length_ref)
        score_avg = np.mean(score) / len(refs) * 10.0
        scores.append(float(score_avg))
    return float(np.mean(np.array(scores))), scores


def main():
    rng = random.Random(1234)
    vocab = ["a", "the", "dog", "cat", "man", "on", "in", "red", "grass", "runs", "sits", "of", "with",
             "m\u1ed9t", "ng\u01b0\u1eddi", "caf\u00e9"]
    sets = []
    for case in range(24):
        n_img = rng.randint(1, 6)
        items = []
        for _ in range(n_img):
            v = vocab[:rng.randint(3, len(vocab))]
            refs = [" ".join(rng.choice(v) for _ in range(rng.randint(1, 12))) for _ in range(rng.randint(1, 5))]
            r = rng.random()
            if r < 0.1:
                cand = ""
            elif r < 0.3:
                cand = rng.choice(refs)
            elif r < 0.45:
                cand = " ".join([rng.choice(v)] * rng.randint(1, 6))
            else:
                cand = " ".join(rng.choice(v) for _ in range(rng.randint(1, 16)))
            items.append((refs, cand))
        b, b4img, counts = bleu(copy.deepcopy(items))
        cm, cimg = cider(items) if n_img >= 1 else (0.0, [])
        sets.append({
            "items": [{"refs": r, "cand": c} for r, c in items],
            "bleu": b, "bleu4_img": b4img,
            "counts": {"testlen": counts["testlen"], "reflen": counts["reflen"],
                       "guess": counts["guess"], "correct": counts["correct"]},
            "rouge_img": [rouge(c, r) for r, c in items],
            "cider": cm, "cider_img": cimg,
        })
    with open(sys.argv[1], "w") as f:
        json.dump(sets, f, ensure_ascii=False, indent=0)


if __name__ == "__main__":
    main()
