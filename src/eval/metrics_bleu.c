/* metrics_bleu.c: coco-caption's corpus BLEU (bleu/bleu_scorer.py, compute_score(option='closest')).
 * Per image: candidate n-gram counts clipped by the maximum count in any one reference; guesses
 * max(0, len - n + 1); the reference length closest to the candidate's (ties: the shorter).
 * Corpus: sums of all those; BLEU-n = (prod_{k<=n} (correct_k + tiny) / (guess_k + small))^(1/n)
 * times the brevity penalty exp(1 - reflen/testlen) when testlen < reflen. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/metrics.h"
#include "metrics_internal.h"
#include "alloc_internal.h"

static const double TINY = 1e-15, SMALL = 1e-9;

/* Occurrences of the n-gram w[0..n) in s[0..len). */
static int count_ngram(const int *s, int len, const int *w, int n) {
    int c = 0;
    for (int i = 0; i + n <= len; i++) {
        int k = 0;
        while (k < n && s[i + k] == w[k]) k++;
        c += k == n;
    }
    return c;
}

/* Is the n-gram at position i the first occurrence of its kind in s? */
static int first_occurrence(const int *s, int i, int n) {
    for (int j = 0; j < i; j++)
        if (!memcmp(s + j, s + i, (size_t)n * sizeof *s)) return 0;
    return 1;
}

static void bleu_from_counts(const long long correct[4], const long long guess[4], double testlen, double reflen,
                             double out[4]) {
    double b = 1.0;
    for (int k = 0; k < 4; k++) {
        b *= ((double)correct[k] + TINY) / ((double)guess[k] + SMALL);
        out[k] = pow(b, 1.0 / (k + 1));
    }
    double ratio = (testlen + TINY) / (reflen + SMALL);
    if (ratio < 1)
        for (int k = 0; k < 4; k++) out[k] *= exp(1 - 1 / ratio);
}

/* Image it's clipped n-gram counts (correct), guesses, candidate length and closest reference length
 * (ties: the shorter), as bleu_scorer.py's cook_test. Returns -1 on OOM. */
static int image_counts(ac_strmap *words, const ac_eval_item *it, long long guess[4], long long correct[4], int *testlen,
                        int *reflen) {
    int tl, nr = it->n_refs, rc = 0;
    int *c = ac_metric_words(words, it->cand, &tl);
    int **r = ac_calloc((size_t)(nr ? nr : 1), sizeof *r);
    int *rl = ac_calloc((size_t)(nr ? nr : 1), sizeof *rl);
    if (!c || !r || !rl) rc = -1;
    for (int j = 0; j < nr && !rc; j++)
        if (!(r[j] = ac_metric_words(words, it->refs[j], &rl[j]))) rc = -1;
    if (!rc) {
        for (int k = 0; k < 4; k++) guess[k] = tl - k > 0 ? tl - k : 0, correct[k] = 0;
        for (int k = 1; k <= 4; k++)
            for (int p = 0; p + k <= tl; p++) {
                if (!first_occurrence(c, p, k)) continue;
                int cc = count_ngram(c, tl, c + p, k), mx = 0;
                for (int j = 0; j < nr; j++) {
                    int rc2 = count_ngram(r[j], rl[j], c + p, k);
                    if (rc2 > mx) mx = rc2;
                }
                correct[k - 1] += cc < mx ? cc : mx;
            }
        int best = -1;
        for (int j = 0; j < nr; j++) {
            int d = abs(rl[j] - tl), bd = best < 0 ? 0 : abs(best - tl);
            if (best < 0 || d < bd || (d == bd && rl[j] < best)) best = rl[j];
        }
        *testlen = tl, *reflen = best < 0 ? 0 : best;
    }
    for (int j = 0; r && j < nr; j++) free(r[j]);
    free(r);
    free(rl);
    free(c);
    return rc;
}

int ac_bleu(const ac_eval_item *items, int n, double bleu[4], ac_bleu_counts *counts, double *img_bleu4) {
    ac_strmap words = {0};
    ac_bleu_counts tot;
    memset(&tot, 0, sizeof tot);
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        long long guess[4], correct[4];
        int tl, best;
        if (image_counts(&words, &items[i], guess, correct, &tl, &best)) rc = -1;
        else {
            tot.testlen += tl;
            tot.reflen += best;
            for (int k = 0; k < 4; k++) tot.guess[k] += guess[k], tot.correct[k] += correct[k];
            if (img_bleu4) {
                double b[4];
                bleu_from_counts(correct, guess, tl, best, b);
                img_bleu4[i] = b[3];
            }
        }
    }
    ac_strmap_free(&words);
    if (rc) return -1;
    bleu_from_counts(tot.correct, tot.guess, (double)tot.testlen, (double)tot.reflen, bleu);
    if (counts) *counts = tot;
    return 0;
}

int ac_bleu4_smoothed(const ac_eval_item *items, int n, double *img) {
    ac_strmap words = {0};
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        long long guess[4], correct[4];
        int tl, best;
        if (image_counts(&words, &items[i], guess, correct, &tl, &best)) {
            rc = -1;
            break;
        }
        /* Lin & Och 2004: one more match and one more guess for n = 2..4; unigrams as they are, so a
         * caption sharing no word with its references still scores 0 */
        double logp = 0;
        for (int k = 0; k < 4; k++) {
            double c = (double)correct[k] + (k > 0), g = (double)guess[k] + (k > 0);
            logp += c > 0 && g > 0 ? log(c / g) : -INFINITY;
        }
        double bp = tl == 0 ? 0 : tl < best ? exp(1.0 - (double)best / tl) : 1.0;
        img[i] = isinf(logp) ? 0.0 : bp * exp(logp / 4);
    }
    ac_strmap_free(&words);
    return rc;
}
