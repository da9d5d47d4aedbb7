/* decoder_checks.h: checks both decoders' tests run (tests/test_decoder.c for the LSTM,
 * tests/test_transformer.c for the transformer), each against its own independent reference:
 *   - a PyTorch parity fixture (tools/torch_decoder.py, tools/torch_transformer.py: float64 logits, loss
 *     and every gradient for fixed parameters, inputs and dropout masks) through
 *     ac_decoder_forward_backward in float32;
 *   - dctx_sum (the gradient of a shift of every annotation vector: the trainer's "no photo" context)
 *     against central differences of the test's double-precision reference. */
#ifndef ATTNCAP_TEST_DECODER_CHECKS_H
#define ATTNCAP_TEST_DECODER_CHECKS_H
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/decoder.h"
#include "attncap/regions.h"
#include "attncap/safetensors.h"

/* A batch as the references read it, and a reference's objective (the test's own re-implementation). */
typedef struct {
    int B, stride;
    const int *len, *words;
    const float *const *ann;
    const int *n_valid; /* NULL, or caption i's photo is its first n_valid[i] cells (the rest never read) */
} ref_batch;
typedef double (*ref_loss_fn)(const ac_decoder_config *c, const double *P, const ref_batch *b, int train,
                              uint64_t seed);

static int parity_fail(char *why, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return -1;
}

/* The fixture at `path` (its config into *c): loss within 1e-5, logits and every gradient within tol
 * (relative, entries far below a tensor's scale judged against 1e-2 of it). Captions' photos: the
 * fixture's "photo" map (caption -> row of "ann") if it has one, else one row of "ann" per caption.
 * masked: the fixture must have "n_valid" [B] (each caption's photo owns its first n_valid cells),
 * else it must not. 0, or -1 with why[] saying what differs. GC_VERBOSE=1 prints each tensor's worst error. */
static int parity_run(const char *path, ac_decoder_config *c, int masked, double tol, char *why, size_t n_why) {
    ac_st_file f;
    ac_err err;
    if (ac_st_read(path, &f, &err)) return parity_fail(why, n_why, "%s", err.msg);
    ac_decoder dec = {0};
    ac_dec_work *w = NULL;
    float *ann = NULL, *grad = NULL, *ref = NULL;
    int rc = -1;
    if (ac_decoder_config_from_json(ac_st_meta(&f, "config"), c, &err) || ac_decoder_alloc(&dec, c, &err)) {
        parity_fail(why, n_why, "%s", err.msg);
        goto done;
    }
    ac_dec_tensor t[AC_DEC_MAX_TENSORS];
    const int nt = ac_decoder_tensors(c, t, NULL);
    for (int i = 0; i < nt; i++) { /* the fixture's parameters, under the decoder's names */
        const ac_st_tensor *x = ac_st_find(&f, t[i].name);
        if (!x || ac_st_to_f32(x, dec.params + t[i].offset, (size_t)t[i].rows * t[i].cols, path, &err)) {
            parity_fail(why, n_why, "tensor %s", t[i].name);
            goto done;
        }
    }
    const ac_st_tensor *ta = ac_st_find(&f, "ann"), *tl = ac_st_find(&f, "len"), *tw = ac_st_find(&f, "words"),
                       *tp = ac_st_find(&f, "photo"), *tg = ac_st_find(&f, "logits"), *tv = ac_st_find(&f, "n_valid");
    if (!ta || !tl || !tw || !tg || tl->dtype != AC_ST_I32 || tw->dtype != AC_ST_I32 || (tp && tp->dtype != AC_ST_I32) ||
        tl->shape[0] > 16 || tw->shape[1] > 16 || ta->shape[0] > 16) {
        parity_fail(why, n_why, "%s: ann, len, words, logits (and photo) not as expected", path);
        goto done;
    }
    if (!masked != !tv || (tv && (tv->dtype != AC_ST_I32 || tv->shape[0] != tl->shape[0]))) {
        parity_fail(why, n_why, "%s: n_valid %s", path, masked ? "missing or not [B] int32" : "in an unmasked fixture");
        goto done;
    }
    const int B = (int)tl->shape[0], stride = (int)tw->shape[1];
    int len[16], words[16 * 16], n_valid[16];
    const float *annp[16];
    if (tv) memcpy(n_valid, tv->data, tv->nbytes);
    memcpy(len, tl->data, tl->nbytes);
    memcpy(words, tw->data, tw->nbytes);
    ann = malloc(ta->nbytes);
    if (!ann || ac_st_to_f32(ta, ann, (size_t)ta->shape[0] * c->n_ann * c->dim, path, &err)) goto done;
    for (int i = 0; i < B; i++) annp[i] = ann + (size_t)(tp ? ((const int32_t *)tp->data)[i] : i) * c->n_ann * c->dim;
    const char *baseline = ac_st_meta(&f, "baseline"); /* hard attention's (tools/torch_decoder.py --hard) */
    ac_dec_batch bt = {B, len, words, stride, annp, NULL, baseline ? strtod(baseline, NULL) : 0, tv ? n_valid : NULL, NULL, NULL, NULL, NULL};
    /* a copy model's (tools/torch_decoder.py --copy): the word sets and each caption's regions */
    const ac_st_tensor *tnr = ac_st_find(&f, "n_regions"), *twc = ac_st_find(&f, "word_category"),
                       *trc = ac_st_find(&f, "region_cat");
    const ac_st_tensor *trs = ac_st_find(&f, "region_score"); /* config.object_init's fixture */
    int n_regions[16];
    unsigned char cats[16][AC_REGIONS_MAX];
    float scores[16][AC_REGIONS_MAX];
    const unsigned char *catp[16];
    const float *scorep[16];
    if (!c->copy != !tnr || (tnr && (!twc || !trc || tnr->shape[0] != B || twc->shape[0] != c->vocab ||
                                    trc->shape[0] != B || trc->shape[1] > AC_REGIONS_MAX))) {
        parity_fail(why, n_why, "%s: copy's n_regions, word_category, region_cat missing or not as expected", path);
        goto done;
    }
    if (!c->object_init != !trs || (trs && (trs->dtype != AC_ST_F32 || trs->shape[0] != B || trs->shape[1] != trc->shape[1]))) {
        parity_fail(why, n_why, "%s: region_score %s", path, c->object_init ? "missing or not [B, regions] float32" : "without object_init");
        goto done;
    }
    if (tnr) {
        short wc[64];
        for (int v = 0; v < c->vocab && v < 64; v++) wc[v] = (short)((const int32_t *)twc->data)[v];
        if (c->vocab > 64 || ac_decoder_set_copy_words(&dec, wc, &err)) {
            parity_fail(why, n_why, "%s: word sets", path);
            goto done;
        }
        for (int i = 0; i < B; i++) {
            n_regions[i] = ((const int32_t *)tnr->data)[i], catp[i] = cats[i];
            for (int r = 0; r < trc->shape[1]; r++) cats[i][r] = (unsigned char)((const int32_t *)trc->data)[i * trc->shape[1] + r];
            for (int r = 0; trs && r < trs->shape[1]; r++) scores[i][r] = ((const float *)trs->data)[i * trs->shape[1] + r];
            scorep[i] = scores[i];
        }
        bt.n_regions = n_regions, bt.region_cat = catp, bt.region_score = trs ? scorep : NULL;
    }
    w = ac_dec_work_new(c, B, len[0]);
    grad = malloc(sizeof(float) * dec.n_params);
    ref = malloc(sizeof(float) * dec.n_params + tg->nbytes);
    ac_dec_stats st, st2;
    const unsigned long long seed = strtoull(ac_st_meta(&f, "seed"), NULL, 10);
    if (!w || !grad || !ref || ac_decoder_forward_backward(&dec, w, &bt, 1, seed, NULL, &st, &err)) {
        parity_fail(why, n_why, "forward: %s", w && grad && ref ? err.msg : "out of memory");
        goto done;
    }
    const double want = strtod(ac_st_meta(&f, "loss"), NULL);
    if (!(fabs(st.loss - want) <= 1e-5 * fabs(want))) { /* hard attention's surrogate may be negative */
        parity_fail(why, n_why, "loss %.9g, torch %.9g", st.loss, want);
        goto done;
    }
    if (tg->shape[0] != st.ntok || tg->shape[1] != c->vocab ||
        ac_st_to_f32(tg, ref, (size_t)st.ntok * c->vocab, path, &err)) {
        parity_fail(why, n_why, "logits [%lld, %lld] for %d tokens", (long long)tg->shape[0], (long long)tg->shape[1],
                    st.ntok);
        goto done;
    }
    const float *lg = ac_dec_work_logits(w);
    for (int i = 0; i < st.ntok * c->vocab; i++)
        if (!(fabs(lg[i] - ref[i]) <= tol * (fabs(ref[i]) + 1))) {
            parity_fail(why, n_why, "logit %d: ours %.9g, torch %.9g", i, lg[i], ref[i]);
            goto done;
        }
    if (ac_decoder_forward_backward(&dec, w, &bt, 1, seed, grad, &st2, &err) || st2.loss != st.loss) {
        parity_fail(why, n_why, "backward: %s", err.msg);
        goto done;
    }
    for (int k = 0; k < nt; k++) {
        char name[64];
        snprintf(name, sizeof name, "grad.%s", t[k].name);
        const ac_st_tensor *gt = ac_st_find(&f, name);
        const size_t n = (size_t)t[k].rows * t[k].cols;
        if (!gt || ac_st_to_f32(gt, ref, n, path, &err)) {
            parity_fail(why, n_why, "%s missing", name);
            goto done;
        }
        double gmax = 0, worst = 0;
        size_t wi = 0;
        for (size_t j = 0; j < n; j++) gmax = fmax(gmax, fabs(ref[j]));
        for (size_t j = 0; j < n; j++) {
            const double e = fabs(grad[t[k].offset + j] - ref[j]) / (fabs(ref[j]) + 1e-2 * gmax + 1e-12);
            if (e > worst) worst = e, wi = j;
        }
        if (getenv("GC_VERBOSE")) printf("# parity %-14s worst rel %.2e\n", t[k].name, worst);
        if (!(worst < tol)) {
            parity_fail(why, n_why, "%s[%zu]: ours %.9g, torch %.9g (rel %.3g)", t[k].name, wi, grad[t[k].offset + wi],
                        ref[wi], worst);
            goto done;
        }
    }
    rc = 0;
done:
    free(ref), free(grad), free(ann);
    ac_dec_work_free(w);
    ac_decoder_free(&dec);
    ac_st_free(&f);
    return rc;
}

/* dctx_sum of dec (dropout on, 4 captions, one photo six copies of one vector and shared by two
 * captions; n_ann 6, dim <= 8) against central differences of ref shifting every annotation vector;
 * then, without dropout, 2 shards through the pool against one pass (gradient and dctx_sum).
 * nv: NULL, or [4] the captions' photos' own cells (masks; their padding NaN, which must not be read;
 * the same for the captions that share a photo). 0, or -1 with why[]. */
static int context_shift_run(ac_decoder *dec, ref_loss_fn ref, const int *nv, char *why, size_t n_why) {
    enum { B = 4, ST = 6 };
    ac_decoder_config c = dec->cfg;
    const int D = c.dim, LD = 6 * D;
    if (c.n_ann != 6 || D > 8) return parity_fail(why, n_why, "context_shift_run: n_ann 6 and dim <= 8 only");
    static float ann[B][6 * 8], sh[B][6 * 8];
    const float *annp[B], *shp[B];
    for (int i = 0; i < B; i++) {
        for (int k = 0; k < LD; k++) ann[i][k] = (float)((((k * 2654435761u + (31u + i) * 40503u) >> 8) % 1000) / 500.0);
        annp[i] = ann[i], shp[i] = sh[i];
    }
    for (int k = 0; k < LD; k++) ann[2][k] = ann[2][k % D]; /* one photo: six copies of one vector */
    annp[3] = annp[2], shp[3] = shp[2];
    for (int i = 0; nv && i < B; i++)
        for (int k = nv[i] * D; k < LD; k++) ann[i][k] = NAN;
    const int len[B] = {6, 5, 3, 2};
    int words[B * ST];
    for (int k = 0; k < B * ST; k++) words[k] = 4 + (k * 3) % 7;
    float dctx[8], dctx2[8];
    ac_dec_batch bt = {B, len, words, ST, annp, dctx, 0, nv, NULL, NULL, NULL, NULL};
    ac_dec_work *w = ac_dec_work_new(&c, B, 8);
    ac_dec_pool *pool = ac_dec_pool_new(&c, 2, 2, B, 8);
    float *grad = malloc(sizeof(float) * dec->n_params), *g1 = malloc(sizeof(float) * dec->n_params);
    double *P = malloc(sizeof(double) * dec->n_params);
    ac_dec_stats st, st2;
    ac_err err;
    const uint64_t seed = 99;
    int rc = -1;
    if (!w || !pool || !grad || !g1 || !P || ac_decoder_forward_backward(dec, w, &bt, 1, seed, grad, &st, &err)) {
        parity_fail(why, n_why, "forward: %s", w && pool && grad && g1 && P ? err.msg : "out of memory");
        goto done;
    }
    for (size_t i = 0; i < dec->n_params; i++) P[i] = dec->params[i];
    ref_batch rb = {B, ST, len, words, shp, nv};
    const double eps = 1e-3;
    double gmax = 0;
    for (int d = 0; d < D; d++) gmax = fmax(gmax, fabs(dctx[d]));
    if (!(gmax > 0)) {
        parity_fail(why, n_why, "dctx_sum is all zero");
        goto done;
    }
    for (int d = 0; d < D; d++) {
        double l[2];
        for (int sgn = 0; sgn < 2; sgn++) {
            for (int i = 0; i < B; i++)
                for (int k = 0; k < LD; k++) sh[i][k] = ann[i][k] + (k % D == d ? (sgn ? -eps : eps) : 0.0f);
            l[sgn] = ref(&c, P, &rb, 1, seed);
        }
        const double num = (l[0] - l[1]) / (2 * eps);
        if (!(fabs(num - dctx[d]) < 2e-3 * gmax + 1e-6)) {
            parity_fail(why, n_why, "dctx[%d]: analytic %.7g, numeric %.7g", d, dctx[d], num);
            goto done;
        }
    }
    /* without dropout, through the pool (2 shards): the single pass's gradient and dctx_sum */
    const float dropout = dec->cfg.dropout;
    dec->cfg.dropout = c.dropout = 0;
    rc = ac_decoder_forward_backward(dec, w, &bt, 0, 0, g1, &st, &err);
    bt.dctx_sum = dctx2;
    if (!rc) rc = ac_dec_pool_forward_backward(pool, dec, &bt, 0, 0, grad, &st2, &err);
    dec->cfg.dropout = dropout;
    if (rc) {
        parity_fail(why, n_why, "%s", err.msg);
        goto done;
    }
    rc = -1;
    double worst = 0, big = 0;
    for (size_t i = 0; i < dec->n_params; i++) worst = fmax(worst, fabs(grad[i] - g1[i])), big = fmax(big, fabs(g1[i]));
    if (!(fabs(st2.loss - st.loss) <= 1e-6 * fabs(st.loss)) || !(worst <= 1e-5 * big)) {
        parity_fail(why, n_why, "pool: loss %.9g against %.9g, gradient off by %g (largest %g)", st2.loss, st.loss, worst, big);
        goto done;
    }
    for (int d = 0; d < D; d++)
        if (!(fabs(dctx2[d] - dctx[d]) <= 1e-5 * gmax + 1e-7)) {
            parity_fail(why, n_why, "pool: dctx[%d] %.9g against %.9g", d, dctx2[d], dctx[d]);
            goto done;
        }
    rc = 0;
done:
    ac_dec_pool_free(pool);
    ac_dec_work_free(w);
    free(grad), free(g1), free(P);
    return rc;
}
#endif
