/* teacher.c: a given caption through the decoder's inference step (decoder.h's teacher forcing): the
 * attention and log-probability of each of its words, and a copy model's account of where each word
 * came from. The same ac_decoder_advance calls as the search's, so a caption the search made gets the
 * same bits here. */
#pragma GCC optimize("O3")
#include "attncap/decoder.h"
#include "attncap/regions.h"

#include <stdlib.h>
#include <string.h>

#include "copy_internal.h"
#include "decoder_internal.h"
#include "alloc_internal.h"

int ac_decoder_copy_shares(const ac_decoder *dec, const ac_dec_image *img, const int *words, int n, float *share,
                           float *region, ac_err *err) {
    return ac_decoder_copy_shares_many(dec, 1, &img, &words, &n, &share, &region, err);
}

/* The captions run side by side, longest first, so those still running at step k are a prefix of the
 * rows: each step streams the weights once for all of them. A caption stops after its last word that a
 * region's category could give (ac_copy_word_may_copy): the steps after it account for nothing (0), and
 * a step depends only on the words before it. */
int ac_decoder_copy_shares_many(const ac_decoder *dec, int n, const ac_dec_image *const *img,
                                const int *const *words, const int *n_words, float *const *share,
                                float *const *region, ac_err *err) {
    const ac_decoder_config *c = &dec->cfg;
    const int V = c->vocab, H = c->hidden;
    int K = 0, steps = 0; /* the captions that copy, and the longest one's steps */
    int *upto = ac_malloc((size_t)(n > 0 ? n : 1) * sizeof *upto); /* each caption's steps to take */
    if (!upto) return ac_errf(err, "out of memory");
    for (int i = 0; i < n; i++) {
        const int nr = img[i]->regions;
        for (int k = 0; k <= n_words[i]; k++) share[i][k] = 0;
        if (region[i]) memset(region[i], 0, ((size_t)n_words[i] + 1) * (size_t)nr * sizeof *region[i]);
        for (int k = 0; k < n_words[i]; k++)
            if (words[i][k] < 0 || words[i][k] >= V)
                return free(upto), ac_errf(err, "copy shares: word id %d outside 0..%d", words[i][k], V - 1);
        upto[i] = 0;
        if (c->copy && dec->copy && nr && img[i]->has_categories)
            for (int k = 0; k <= n_words[i]; k++)
                if (ac_copy_word_may_copy(dec, img[i]->cat, nr, k < n_words[i] ? words[i][k] : AC_END)) upto[i] = k + 1;
        K += upto[i] > 0;
    }
    if (!K) return free(upto), 0;
    int *order = ac_malloc((size_t)K * sizeof *order);
    ac_dec_image *traced = ac_malloc((size_t)K * sizeof *traced);
    const ac_dec_image **tp = ac_malloc((size_t)K * sizeof *tp);
    int *rows = ac_malloc((size_t)K * sizeof *rows), *prev = ac_malloc((size_t)K * sizeof *prev);
    const size_t tr_size = 1 + AC_REGIONS_MAX;
    const size_t need = (size_t)K * (4 * (size_t)H + (size_t)V + (size_t)c->n_ann + tr_size) +
                        ac_decoder_step_scratch(c, K);
    float *buf = ac_malloc(need * sizeof *buf);
    if (!order || !traced || !tp || !rows || !prev || !buf) {
        free(upto), free(order), free(traced), free(tp), free(rows), free(prev), free(buf);
        return ac_errf(err, "out of memory");
    }
    K = 0;
    for (int i = 0; i < n; i++) /* insertion by steps, most first; ties keep their order */
        if (upto[i]) {
            int j = K++;
            for (; j > 0 && upto[order[j - 1]] < upto[i]; j--) order[j] = order[j - 1];
            order[j] = i;
        }
    steps = upto[order[0]];
    float *st = buf, *st2 = st + (size_t)K * 2 * H, *lv = st2 + (size_t)K * 2 * H, *al = lv + (size_t)K * V;
    float *tr = al + (size_t)K * c->n_ann, *scratch = tr + (size_t)K * tr_size;
    ac_decoder alone = *dec; /* on this thread (the account may run beside other lanes) */
    alone.step_pool = NULL;
    for (int r = 0; r < K; r++) {
        /* each photo traced (decoder_internal.h): the step leaves lv the vocabulary's own log p_w and writes
         * the mixture's gate and regions' weights to tr, from which copy.c takes p(w) apart */
        traced[r] = *img[order[r]];
        traced[r].copy_trace = tr + (size_t)r * tr_size;
        tp[r] = &traced[r], rows[r] = 1;
        ac_decoder_start(dec, img[order[r]], st + (size_t)r * 2 * H);
    }
    for (int k = 0, live = K; k < steps; k++) {
        while (live > 0 && upto[order[live - 1]] <= k) live--;
        for (int r = 0; r < live; r++) {
            const int i = order[r];
            prev[r] = k ? words[i][k - 1] : AC_START;
        }
        ac_decoder_advance(&alone, live, tp, rows, k, prev, st, NULL, st2, NULL, lv, al, NULL, scratch);
        for (int r = 0; r < live; r++) {
            const int i = order[r], nr = img[i]->regions, w = k < n_words[i] ? words[i][k] : AC_END;
            const float *t = tr + (size_t)r * tr_size;
            const ac_copy_regions reg = {nr, img[i]->cat, t + 1};
            share[i][k] = ac_copy_word_account(dec, &reg, t[0], lv + (size_t)r * V, w,
                                               region[i] ? region[i] + (size_t)k * nr : NULL);
        }
        memcpy(st, st2, (size_t)live * 2 * H * sizeof *st);
    }
    free(upto), free(order), free(traced), free(tp), free(rows), free(prev), free(buf);
    return 0;
}

int ac_decoder_attend(const ac_decoder *dec, const float *ann, const int *words, int n, float *alpha, float *beta,
                      double *logprob, ac_err *err) {
    return ac_decoder_attend_words(dec, ann, words, n, alpha, beta, NULL, logprob, err);
}

int ac_decoder_attend_words(const ac_decoder *dec, const float *ann, const int *words, int n, float *alpha,
                            float *beta, float *word_logp, double *logprob, ac_err *err) {
    return ac_decoder_attend_grid(dec, ann, dec->cfg.grid_h, dec->cfg.grid_w, words, n, alpha, beta, word_logp, logprob,
                                  err);
}

int ac_decoder_attend_grid(const ac_decoder *dec, const float *ann, int grid_h, int grid_w, const int *words, int n,
                           float *alpha, float *beta, float *word_logp, double *logprob, ac_err *err) {
    if (ac_decoder_check_grid(&dec->cfg, grid_h, grid_w, err)) return -1;
    ac_dec_image *img = ac_decoder_prepare_grid(dec, ann, grid_h, grid_w);
    if (!img) return ac_errf(err, "out of memory");
    const int rc = ac_decoder_attend_image(dec, img, words, n, alpha, beta, word_logp, logprob, err);
    ac_dec_image_free(img);
    return rc;
}

int ac_decoder_attend_image(const ac_decoder *dec, const ac_dec_image *img, const int *words, int n, float *alpha,
                            float *beta, float *word_logp, double *logprob, ac_err *err) {
    const int V = dec->cfg.vocab, L = dec->cfg.n_ann;
    const size_t S = ac_decoder_state_size(&dec->cfg), P = ac_decoder_hist_size(&dec->cfg);
    for (int k = 0; k < n; k++)
        if (words[k] < 0 || words[k] >= V) return ac_errf(err, "teacher forcing: word id %d outside 0..%d", words[k], V - 1);
    float *buf = ac_malloc((2 * S + ((size_t)n + 1) * P + V + ac_decoder_advance_scratch(&dec->cfg, 1, n)) * sizeof *buf);
    if (!buf) return ac_errf(err, "out of memory");
    float *st = buf, *st2 = st + S, *hist = st2 + S, *logp = hist + ((size_t)n + 1) * P, *scratch = logp + V;
    ac_decoder_start(dec, img, st);
    const int one = 1;
    double lp = 0;
    for (int k = 0; k <= n; k++) {
        const int prev = k ? words[k - 1] : AC_START;
        const float *h = hist;
        ac_decoder_advance(dec, 1, &img, &one, k, &prev, st, &h, st2, hist + (size_t)k * P, logp, alpha + (size_t)k * L,
                           beta ? beta + k : NULL, scratch);
        lp += logp[k < n ? words[k] : AC_END];
        if (word_logp) word_logp[k] = logp[k < n ? words[k] : AC_END];
        memcpy(st, st2, S * sizeof *st);
    }
    if (logprob) *logprob = lp;
    free(buf);
    return 0;
}
