/* tune.c: the decoding-settings grid (see tune.h). */
#include "attncap/tune.h"
#include "alloc_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/decode_rows.h"

int ac_tune_grid(const ac_model *m, const ac_feature_cache *fc, const ac_rows_regions *regions,
                 const ac_tune_photo *photos, int n,
                 const ac_beam_opts *base, const int *beams, int nb, const float *alphas, int na, int meteor,
                 const char *wordnet, int threads, ac_tune_point *out, ac_err *err) {
    if (n < 1 || nb < 1 || na < 1) return ac_errf(err, "tune: nothing to do (%d photos, %d beams, %d alphas)", n, nb, na);
    int *rows = ac_malloc(sizeof(int) * (size_t)n);
    char **texts = ac_calloc((size_t)n, sizeof(char *));
    int rc = rows && texts ? 0 : ac_errf(err, "out of memory");
    for (int i = 0; !rc && i < n; i++) rows[i] = photos[i].row;
    for (int b = 0; !rc && b < nb; b++)
        for (int a = 0; !rc && a < na; a++) {
            ac_tune_point *p = &out[b * na + a];
            memset(p, 0, sizeof *p);
            p->opts = *base;
            p->opts.beam = beams[b], p->opts.len_alpha = alphas[a];
            if (ac_decode_rows(&m->dec, m->vocab, fc, rows, n, regions, &p->opts, threads, texts, err)) {
                rc = -1;
                break;
            }
            ac_eval_set set = {0};
            for (int i = 0; !rc && i < n; i++)
                rc = ac_eval_set_add(&set, photos[i].id, photos[i].refs, photos[i].n_refs, texts[i], 1, err);
            for (int i = 0; i < n; i++) free(texts[i]), texts[i] = NULL;
            if (!rc) rc = ac_metrics_compute(&set, meteor ? AC_METRICS_METEOR : 0, wordnet, &p->scores, err);
            ac_eval_set_free(&set);
            /* keep the corpus scores only: the per-image arrays and the objects' per-photo rows go, the
             * pooled counts stay */
            if (!rc) ac_scores_free(&p->scores);
        }
    free(rows);
    free(texts);
    return rc;
}
