/* train_metrics.c: validation scores for early stopping: corpus BLEU-4 and CIDEr-D (metrics.h) of
 * the validation photos' generated captions against their references. */
#include <math.h>
#include <stdlib.h>

#include "attncap/metrics.h"
#include "train_internal.h"
#include "alloc_internal.h"

int ac_train_metrics_available(void) { return 1; }

int ac_train_score(int n, const char *const *cands, const int *n_refs, char *const *const *refs, double *bleu4,
                   double *cider, ac_err *err) {
    *bleu4 = *cider = NAN;
    ac_eval_item *it = ac_calloc((size_t)n + 1, sizeof *it);
    if (!it) return ac_errf(err, "out of memory");
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (n_refs[i] < 1) continue; /* a photo without usable references cannot be scored */
        it[m].n_refs = n_refs[i], it[m].refs = (char **)refs[i], it[m].cand = (char *)cands[i];
        m++;
    }
    double b[4];
    ac_bleu_counts bc;
    int rc = 0;
    if (m == 0) rc = ac_errf(err, "validation: no photo with references to score");
    else if (ac_bleu(it, m, b, &bc, NULL) || ac_cider_d(it, m, cider, NULL)) rc = ac_errf(err, "validation: out of memory");
    else *bleu4 = b[3];
    free(it);
    return rc;
}
