/* decoder_parity.h: a decoder's PyTorch parity fixture (tools/torch_decoder.py for the LSTM,
 * tools/torch_transformer.py for the transformer: float64 logits, loss and every gradient for fixed
 * parameters, inputs and dropout masks) run through ac_decoder_forward_backward in float32.
 * Included by tests/test_decoder.c and tests/test_transformer.c. */
#ifndef ATTNCAP_TEST_DECODER_PARITY_H
#define ATTNCAP_TEST_DECODER_PARITY_H
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/decoder.h"
#include "attncap/safetensors.h"

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
 * 0, or -1 with why[] saying what differs. GC_VERBOSE=1 prints each tensor's worst error. */
static int parity_run(const char *path, ac_decoder_config *c, double tol, char *why, size_t n_why) {
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
                       *tp = ac_st_find(&f, "photo"), *tg = ac_st_find(&f, "logits");
    if (!ta || !tl || !tw || !tg || tl->dtype != AC_ST_I32 || tw->dtype != AC_ST_I32 || (tp && tp->dtype != AC_ST_I32) ||
        tl->shape[0] > 16 || tw->shape[1] > 16 || ta->shape[0] > 16) {
        parity_fail(why, n_why, "%s: ann, len, words, logits (and photo) not as expected", path);
        goto done;
    }
    const int B = (int)tl->shape[0], stride = (int)tw->shape[1];
    int len[16], words[16 * 16];
    const float *annp[16];
    memcpy(len, tl->data, tl->nbytes);
    memcpy(words, tw->data, tw->nbytes);
    ann = malloc(ta->nbytes);
    if (!ann || ac_st_to_f32(ta, ann, (size_t)ta->shape[0] * c->n_ann * c->dim, path, &err)) goto done;
    for (int i = 0; i < B; i++) annp[i] = ann + (size_t)(tp ? ((const int32_t *)tp->data)[i] : i) * c->n_ann * c->dim;
    ac_dec_batch bt = {B, len, words, stride, annp, NULL};
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
    if (!(fabs(st.loss - want) <= 1e-5 * want)) {
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
#endif
