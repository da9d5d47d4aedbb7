/* metrics.c: the evaluation set (tokenized references and candidates) and ac_metrics_compute, which
 * runs BLEU, ROUGE-L, CIDEr-D (metrics_*.c) and METEOR (meteor.h) over it. */
#include "attncap/metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/meteor.h"
#include "attncap/tokenize.h"
#include "metrics_internal.h"
#include "alloc_internal.h"

static char *norm_caption(const char *raw, int tokenize, const char *id, ac_err *err) {
    if (!tokenize) {
        char *d = ac_strdup(raw);
        if (!d) ac_errf(err, "out of memory");
        return d;
    }
    ac_tokens t;
    if (ac_tokenize(raw, &t, err)) {
        ac_err_prefix(err, "image %s", id ? id : "?");
        return NULL;
    }
    char *j = ac_tokens_join(&t);
    ac_tokens_free(&t);
    if (!j) ac_errf(err, "out of memory");
    return j;
}

int ac_eval_set_add(ac_eval_set *s, const char *id, const char *const *refs, int n_refs, const char *cand,
                    int tokenize, ac_err *err) {
    if (n_refs <= 0) return ac_errf(err, "image %s: no reference captions", id ? id : "?");
    if (!cand) return ac_errf(err, "image %s: no candidate caption", id ? id : "?");
    if (s->n == s->cap) {
        int nc = s->cap ? s->cap * 2 : 256;
        ac_eval_item *ni = ac_realloc(s->items, (size_t)nc * sizeof *ni);
        if (!ni) return ac_errf(err, "out of memory");
        s->items = ni;
        s->cap = nc;
    }
    ac_eval_item it = {0};
    it.n_refs = n_refs;
    it.id = id ? ac_strdup(id) : NULL;
    it.refs = ac_calloc((size_t)n_refs, sizeof *it.refs);
    int rc = (!it.refs || (id && !it.id)) ? ac_errf(err, "out of memory") : 0;
    for (int j = 0; !rc && j < n_refs; j++)
        if (!(it.refs[j] = norm_caption(refs[j], tokenize, id, err))) rc = -1;
    if (!rc && !(it.cand = norm_caption(cand, tokenize, id, err))) rc = -1;
    if (!rc && tokenize) { /* as written, for reports */
        it.cand_raw = ac_strdup(cand);
        it.refs_raw = ac_calloc((size_t)n_refs, sizeof *it.refs_raw);
        for (int j = 0; it.refs_raw && j < n_refs; j++)
            if (!(it.refs_raw[j] = ac_strdup(refs[j]))) rc = -1;
        if (rc || !it.cand_raw || !it.refs_raw) rc = ac_errf(err, "out of memory");
    }
    if (rc) {
        ac_eval_set tmp = {1, 0, &it}; /* cap 0: items is not the heap's */
        ac_eval_set_free(&tmp);
        return -1;
    }
    s->items[s->n++] = it;
    return 0;
}

void ac_eval_set_free(ac_eval_set *s) {
    for (int i = 0; i < s->n; i++) {
        ac_eval_item *it = &s->items[i];
        for (int j = 0; j < it->n_refs; j++) {
            if (it->refs) free(it->refs[j]);
            if (it->refs_raw) free(it->refs_raw[j]);
        }
        free(it->refs), free(it->refs_raw);
        free(it->cand), free(it->cand_raw);
        free(it->id), free(it->path), free(it->model);
    }
    if (s->cap) free(s->items);
    memset(s, 0, sizeof *s);
}

static int run_meteor(const ac_eval_set *s, const char *wordnet, ac_scores *out, ac_err *err) {
    ac_meteor *m;
    if (ac_meteor_open(wordnet, &m, err)) return ac_err_prefix(err, "METEOR");
    int n = s->n;
    const char **cands = ac_malloc((size_t)n * sizeof *cands);
    const char *const **refs = ac_malloc((size_t)n * sizeof *refs);
    int *nr = ac_malloc((size_t)n * sizeof *nr);
    out->img_meteor = ac_malloc((size_t)n * sizeof *out->img_meteor);
    int rc = 0;
    if (!cands || !refs || !nr || !out->img_meteor) rc = ac_errf(err, "METEOR: out of memory");
    if (!rc) {
        for (int i = 0; i < n; i++) {
            cands[i] = s->items[i].cand;
            refs[i] = (const char *const *)s->items[i].refs;
            nr[i] = s->items[i].n_refs;
        }
        out->meteor = ac_meteor_corpus(m, n, cands, refs, nr, out->img_meteor);
        if (out->meteor < 0) rc = ac_errf(err, "METEOR: out of memory");
    }
    free(cands);
    free(refs);
    free(nr);
    ac_meteor_close(m);
    return rc;
}

int ac_metrics_compute(const ac_eval_set *s, int flags, const char *meteor_wordnet, ac_scores *out, ac_err *err) {
    memset(out, 0, sizeof *out);
    out->meteor = NAN;
    if (s->n <= 0) return ac_errf(err, "nothing to score: no images");
    int n = s->n;
    out->n = n;
    out->img_bleu4 = ac_malloc((size_t)n * sizeof(double));
    out->img_rouge_l = ac_malloc((size_t)n * sizeof(double));
    out->img_cider_d = ac_malloc((size_t)n * sizeof(double));
    out->img_bleu4_smooth = ac_malloc((size_t)n * sizeof(double));
    if (!out->img_bleu4 || !out->img_rouge_l || !out->img_cider_d || !out->img_bleu4_smooth ||
        ac_bleu(s->items, n, out->bleu, &out->counts, out->img_bleu4) ||
        ac_bleu4_smoothed(s->items, n, out->img_bleu4_smooth) ||
        ac_cider_d(s->items, n, &out->cider_d, out->img_cider_d)) {
        ac_scores_free(out);
        return ac_errf(err, "metrics: out of memory");
    }
    double sum = 0;
    for (int i = 0; i < n; i++) {
        out->img_rouge_l[i] = ac_rouge_l(s->items[i].cand, s->items[i].refs, s->items[i].n_refs);
        if (out->img_rouge_l[i] < 0) {
            ac_scores_free(out);
            return ac_errf(err, "metrics: out of memory");
        }
        sum += out->img_rouge_l[i];
    }
    out->rouge_l = sum / n;
    if ((flags & AC_METRICS_METEOR) && run_meteor(s, meteor_wordnet, out, err)) {
        ac_scores_free(out);
        return -1;
    }
    if (ac_objects_score(s, &out->objects, err)) {
        ac_scores_free(out);
        return -1;
    }
    return 0;
}

void ac_scores_free(ac_scores *sc) {
    free(sc->img_bleu4);
    free(sc->img_rouge_l);
    free(sc->img_cider_d);
    free(sc->img_meteor);
    free(sc->img_bleu4_smooth);
    sc->img_bleu4 = sc->img_rouge_l = sc->img_cider_d = sc->img_meteor = sc->img_bleu4_smooth = NULL;
    ac_object_scores_free(&sc->objects);
}
