/* metrics_rouge.c: ROUGE-L as coco-caption's rouge/rouge.py computes it: tokens are the caption
 * split on single spaces (so an empty caption is one empty token), LCS by dynamic programming,
 * precision = LCS / |cand| and recall = LCS / |ref| per reference, then the maximum precision and
 * the maximum recall over references (separately) give F = (1 + b^2) P R / (R + b^2 P), b = 1.2. */
#include <stdlib.h>
#include <string.h>

#include "attncap/metrics.h"
#include "alloc_internal.h"

static const double BETA = 1.2;

/* Splits on every ' ' (Python's str.split(" ")); returns pointers and lengths into s. */
static int split_spaces(const char *s, const char ***w, int **len) {
    int n = 1;
    for (const char *p = s; *p; p++) n += *p == ' ';
    *w = ac_malloc((size_t)n * sizeof **w);
    *len = ac_malloc((size_t)n * sizeof **len);
    if (!*w || !*len) { free(*w); free(*len); return -1; }
    int k = 0;
    const char *st = s;
    for (const char *p = s;; p++)
        if (*p == ' ' || !*p) {
            (*w)[k] = st;
            (*len)[k++] = (int)(p - st);
            if (!*p) break;
            st = p + 1;
        }
    return n;
}

static int tok_eq(const char *a, int la, const char *b, int lb) { return la == lb && !memcmp(a, b, (size_t)la); }

static int lcs(const char **a, const int *la, int na, const char **b, const int *lb, int nb, int *row) {
    /* one row of the DP table over b; prev holds the diagonal */
    for (int j = 0; j <= nb; j++) row[j] = 0;
    for (int i = 1; i <= na; i++) {
        int prev = 0;
        for (int j = 1; j <= nb; j++) {
            int tmp = row[j];
            if (tok_eq(a[i - 1], la[i - 1], b[j - 1], lb[j - 1])) row[j] = prev + 1;
            else if (row[j - 1] > row[j]) row[j] = row[j - 1];
            prev = tmp;
        }
    }
    return row[nb];
}

double ac_rouge_l(const char *cand, char *const *refs, int n_refs) {
    const char **cw;
    int *cl;
    int nc = split_spaces(cand, &cw, &cl);
    if (nc < 0) return -1;
    double pmax = 0, rmax = 0;
    for (int r = 0; r < n_refs; r++) {
        const char **rw;
        int *rlen;
        int nr = split_spaces(refs[r], &rw, &rlen);
        int *row = nr < 0 ? NULL : ac_malloc((size_t)(nc + 1) * sizeof *row);
        if (!row) { /* a reference left out would give another score */
            if (nr >= 0) free(rw), free(rlen);
            free(cw), free(cl);
            return -1;
        }
        int l = lcs(rw, rlen, nr, cw, cl, nc, row);
        double p = (double)l / nc, rc = (double)l / nr;
        if (p > pmax) pmax = p;
        if (rc > rmax) rmax = rc;
        free(row);
        free(rw);
        free(rlen);
    }
    free(cw);
    free(cl);
    if (pmax == 0 || rmax == 0) return 0;
    return (1 + BETA * BETA) * pmax * rmax / (rmax + BETA * BETA * pmax);
}
