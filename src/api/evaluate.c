/* evaluate.c: the core API's coco-caption metrics (attncap.h) over metrics.h, as `attncap eval`
 * computes them: raw captions tokenized the coco-caption way, METEOR with the default WordNet. */
#include "attncap/attncap.h"

#include <math.h>
#include <stdio.h>

#include "attncap/metrics.h"

int ac_evaluate(int n, const char *const *candidates, const char *const *const *references, const int *n_references,
                unsigned flags, ac_metrics *out, ac_err *err) {
    if (n <= 0 || !candidates || !references || !n_references) return ac_errf(err, "evaluate: no captions given");
    ac_eval_set set = {0};
    int rc = -1;
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "%d", i);
        int ok = candidates[i] && references[i];
        for (int j = 0; ok && j < n_references[i]; j++) ok = references[i][j] != NULL;
        if (!ok) {
            ac_errf(err, "evaluate: image %d: its caption or a reference is missing (NULL)", i);
            goto done;
        }
        if (ac_eval_set_add(&set, id, references[i], n_references[i], candidates[i], 1, err)) goto done;
    }
    ac_scores sc;
    if (ac_metrics_compute(&set, flags & AC_EVAL_NO_METEOR ? 0 : AC_METRICS_METEOR, NULL, &sc, err)) goto done;
    *out = (ac_metrics){.n = sc.n, .meteor = sc.meteor, .rouge_l = sc.rouge_l, .cider_d = sc.cider_d};
    for (int k = 0; k < 4; k++) out->bleu[k] = sc.bleu[k];
    if (flags & AC_EVAL_NO_METEOR) out->meteor = NAN;
    ac_scores_free(&sc);
    rc = 0;
done:
    ac_eval_set_free(&set);
    return rc;
}
