/* test_mask.c: grids of any shape (decoder.h, masks). A photo of gh x gw cells padded into a model's
 * larger grid must be captioned exactly as a model whose grid is gh x gw captions it unpadded (the
 * decoder's parameters do not depend on the grid): the same bits for the inference step (alone and
 * joint with other photos), the same loss and gradient (to float rounding) for training, and a weight
 * of exactly 0 on every padded cell, whatever the padding holds (NaN here). Bad grids are refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/beam.h"
#include "attncap/decoder.h"
#include "attention_internal.h" /* the masked softmax */
#include "decoder_internal.h" /* ac_decoder_alloc */
#include "test.h"

enum { V = 11, E = 5, H = 6, A = 4, D = 8 };

static ac_decoder_config cfg_of(int gh, int gw, int score, int heads) {
    ac_decoder_config c = {.vocab = V, .embed = E, .hidden = H, .att = A, .dim = D, .n_ann = gh * gw, .grid_h = gh,
                           .grid_w = gw, .dropout = 0.0f, .lambda = 0.7f, .attention = score, .heads = heads};
    return c;
}

static void fill(float *a, int n, unsigned seed) {
    for (int i = 0; i < n; i++) a[i] = (float)((((i * 2654435761u + seed * 40503u) >> 8) % 1000) / 1000.0 * 2.0);
}

/* The same parameters in a decoder of another grid. */
static void twin(const ac_decoder *a, int gh, int gw, ac_decoder *b) {
    ac_decoder_config c = a->cfg;
    c.grid_h = gh, c.grid_w = gw, c.n_ann = gh * gw;
    ac_err err;
    CHECKF(ac_decoder_alloc(b, &c, &err) == 0 && b->n_params == a->n_params, "%s", err.msg);
    memcpy(b->params, a->params, sizeof(float) * a->n_params);
}

/* The masked softmax kernels: over the first n of each row (against the formula in double), the rest
 * exactly 0 whatever it held (NaN, huge), forward and backward. */
static void test_masked_softmax_kernels(void) {
    enum { R = 2, LL = 6, N = 4 };
    float e[R * LL], alpha[R * LL], da[R * LL], de[R * LL];
    for (int i = 0; i < R * LL; i++) {
        const int l = i % LL;
        e[i] = l < N ? 0.7f * (float)(i % 5) - 1.0f : (l == N ? NAN : 1e30f);
        da[i] = l < N ? 0.3f * (float)(i % 3) - 0.2f : NAN;
    }
    memcpy(alpha, e, sizeof e);
    ac_attention_softmax_forward_masked(alpha, R, LL, N);
    ac_attention_softmax_backward_masked(alpha, da, R, LL, N, de);
    int ok = 1;
    for (int r = 0; r < R; r++) {
        double z = 0, s = 0, p[N];
        for (int l = 0; l < N; l++) z += exp(e[r * LL + l]);
        for (int l = 0; l < N; l++) p[l] = exp(e[r * LL + l]) / z, s += p[l] * da[r * LL + l];
        for (int l = 0; l < N; l++)
            ok &= fabs(alpha[r * LL + l] - p[l]) < 1e-6 && fabs(de[r * LL + l] - p[l] * (da[r * LL + l] - s)) < 1e-6;
        for (int l = N; l < LL; l++) ok &= alpha[r * LL + l] == 0.0f && de[r * LL + l] == 0.0f;
    }
    CHECK(ok);
}

/* One step of K rows on a photo of 2 x 3 cells: padded into a 3 x 4 grid (NaN padding) and unpadded in
 * a 2 x 3 model, the same bits; the padded alphas exactly 0; then the joint step of that photo with a
 * full one gives each its own step's bits. */
static void step_invariance(int score, int heads) {
    ac_decoder big, small;
    ac_err err;
    ac_decoder_config c = cfg_of(3, 4, score, heads);
    CHECKF(ac_decoder_init(&big, &c, 5, &err) == 0, "%s", err.msg);
    twin(&big, 2, 3, &small);
    float own[6 * D], padded[12 * D], full[12 * D];
    fill(own, 6 * D, 3), fill(full, 12 * D, 4);
    memcpy(padded, own, sizeof own);
    for (int k = 6 * D; k < 12 * D; k++) padded[k] = NAN;
    ac_dec_image *ip = ac_decoder_prepare_grid(&big, padded, 2, 3), *iu = ac_decoder_prepare(&small, own);
    ac_dec_image *ifull = ac_decoder_prepare(&big, full);
    CHECK(ip && iu && ifull);
    int gh, gw;
    ac_dec_image_grid(ip, &gh, &gw);
    CHECK(gh == 2 && gw == 3);
    ac_dec_image_grid(ifull, &gh, &gw);
    CHECK(gh == 3 && gw == 4);
    enum { K = 3 };
    const int prev[K] = {AC_START, 7, 5};
    float h0[H], c0[H], h1[H], c1[H], h[K * H], cc[K * H];
    ac_decoder_initial_state(&big, ip, h0, c0);
    ac_decoder_initial_state(&small, iu, h1, c1);
    CHECK(!memcmp(h0, h1, sizeof h0) && !memcmp(c0, c1, sizeof c0));
    for (int k = 0; k < K; k++)
        for (int j = 0; j < H; j++) h[k * H + j] = h0[j] + 0.1f * k, cc[k * H + j] = c0[j] - 0.05f * k;
    float *scr = malloc(sizeof(float) * ac_decoder_step_scratch(&big.cfg, 2 * K));
    float ho[2][2 * K * H], co[2][2 * K * H], lp[2][2 * K * V], al[2][2 * K * 12], be[2][2 * K];
    ac_decoder_step(&big, ip, K, prev, h, cc, ho[0], co[0], lp[0], al[0], be[0], scr);
    ac_decoder_step(&small, iu, K, prev, h, cc, ho[1], co[1], lp[1], al[1], be[1], scr);
    int same = !memcmp(ho[0], ho[1], sizeof(float) * K * H) && !memcmp(co[0], co[1], sizeof(float) * K * H) &&
               !memcmp(lp[0], lp[1], sizeof(float) * K * V) && !memcmp(be[0], be[1], sizeof(float) * K);
    int zero = 1;
    for (int k = 0; k < K; k++) {
        same &= !memcmp(al[0] + k * 12, al[1] + k * 6, sizeof(float) * 6);
        for (int l = 6; l < 12; l++) zero &= al[0][k * 12 + l] == 0.0f;
    }
    CHECKF(same, "%s x%d: padded and unpadded steps differ", ac_decoder_attention_name(score), heads);
    CHECKF(zero, "%s x%d: a padded cell has weight", ac_decoder_attention_name(score), heads);
    /* joint: the full photo's K rows, then the padded photo's K rows */
    const ac_dec_image *two[2] = {ifull, ip};
    const int rows[2] = {K, K};
    int prev2[2 * K];
    float h2[2 * K * H], c2[2 * K * H], hj[2 * K * H], cj[2 * K * H], lj[2 * K * V], aj[2 * K * 12], bj[2 * K];
    for (int k = 0; k < 2 * K; k++) prev2[k] = prev[k % K];
    memcpy(h2, h, sizeof h), memcpy(h2 + K * H, h, sizeof h), memcpy(c2, cc, sizeof cc), memcpy(c2 + K * H, cc, sizeof cc);
    ac_decoder_step_photos(&big, 2, two, rows, prev2, h2, c2, hj, cj, lj, aj, bj, scr);
    ac_decoder_step(&big, ifull, K, prev, h, cc, ho[1], co[1], lp[1], al[1], be[1], scr);
    CHECKF(!memcmp(hj + K * H, ho[0], sizeof(float) * K * H) && !memcmp(lj + K * V, lp[0], sizeof(float) * K * V) &&
               !memcmp(aj + K * 12, al[0], sizeof(float) * K * 12) && !memcmp(hj, ho[1], sizeof(float) * K * H) &&
               !memcmp(lj, lp[1], sizeof(float) * K * V) && !memcmp(aj, al[1], sizeof(float) * K * 12),
           "%s x%d: the joint step differs from each photo's own", ac_decoder_attention_name(score), heads);
    free(scr);
    ac_dec_image_free(ip), ac_dec_image_free(iu), ac_dec_image_free(ifull);
    ac_decoder_free(&big), ac_decoder_free(&small);
}
static void test_step_padding_invariance(void) {
    for (int s = 0; s < AC_ATTENTION_COUNT; s++) step_invariance(s, 0), step_invariance(s, 2);
}

/* Teacher forcing on the padded photo gives the unpadded model's attention, log-probabilities and
 * gates, bit for bit. */
static void test_attend_padding_invariance(void) {
    ac_decoder big, small;
    ac_err err;
    ac_decoder_config c = cfg_of(3, 4, AC_ATTENTION_ADDITIVE, 0);
    CHECKF(ac_decoder_init(&big, &c, 8, &err) == 0, "%s", err.msg);
    twin(&big, 1, 5, &small); /* a panorama: one row of five cells */
    float own[5 * D], padded[12 * D];
    fill(own, 5 * D, 9);
    memcpy(padded, own, sizeof own);
    for (int k = 5 * D; k < 12 * D; k++) padded[k] = NAN;
    const int words[3] = {5, 6, 7};
    float a0[4 * 12], a1[4 * 5], b0[4], b1[4], w0[4], w1[4];
    double lp0, lp1;
    CHECK(ac_decoder_attend_grid(&big, padded, 1, 5, words, 3, a0, b0, w0, &lp0, &err) == 0);
    CHECK(ac_decoder_attend_words(&small, own, words, 3, a1, b1, w1, &lp1, &err) == 0);
    int same = lp0 == lp1 && !memcmp(b0, b1, sizeof b0) && !memcmp(w0, w1, sizeof w0);
    for (int k = 0; k < 4; k++) {
        same &= !memcmp(a0 + k * 12, a1 + k * 5, sizeof(float) * 5);
        for (int l = 5; l < 12; l++) same &= a0[k * 12 + l] == 0.0f;
    }
    CHECK(same);
    ac_decoder_free(&big), ac_decoder_free(&small);
}

/* The beam search (with runners-up) and a forced caption on the padded photo: the unpadded model's
 * words, scores and attention, the attention over the photo's own 2 x 3 cells (ac_caption.grid_h). */
static void test_search_padding_invariance(void) {
    for (int s = 0; s < AC_ATTENTION_COUNT; s++) {
        ac_decoder big, small;
        ac_err err;
        ac_decoder_config c = cfg_of(3, 4, s, 2);
        CHECKF(ac_decoder_init(&big, &c, 12, &err) == 0, "%s", err.msg);
        for (int i = 0; i < E * V; i++) big.out_lo[i] *= 5; /* confident enough to stop early */
        twin(&big, 2, 3, &small);
        float own[6 * D], padded[12 * D];
        fill(own, 6 * D, 31);
        memcpy(padded, own, sizeof own);
        for (int k = 6 * D; k < 12 * D; k++) padded[k] = NAN;
        ac_beam_opts o = ac_beam_defaults();
        o.nbest = 3, o.max_len = 6, o.allow_unk = 1;
        ac_caption a, b;
        CHECKF(ac_beam_search_grid(&big, padded, 2, 3, &o, &a, &err) == 0, "%s", err.msg);
        CHECKF(ac_beam_search(&small, own, &o, &b, &err) == 0, "%s", err.msg);
        int same = a.grid_h == 2 && a.grid_w == 3 && b.grid_h == 2 && b.grid_w == 3 && a.n_alt == b.n_alt;
        for (int k = -1; same && k < a.n_alt; k++) {
            const ac_caption *x = k < 0 ? &a : &a.alt[k], *y = k < 0 ? &b : &b.alt[k];
            same = x->n == y->n && x->logprob == y->logprob && !memcmp(x->words, y->words, sizeof(int) * (size_t)x->n) &&
                   x->grid_h == 2 && x->grid_w == 3 && !memcmp(x->alpha, y->alpha, sizeof(float) * (size_t)(x->n + 1) * 6);
        }
        CHECKF(same, "%s: padded and unpadded searches differ", ac_decoder_attention_name(s));
        ac_caption fa, fb;
        CHECK(ac_caption_forced_grid(&big, padded, 2, 3, a.words, a.n, &fa, &err) == 0);
        CHECK(ac_caption_forced(&small, own, a.words, a.n, &fb, &err) == 0);
        CHECK(fa.grid_h == 2 && fa.grid_w == 3 && fa.logprob == fb.logprob && fa.logprob == a.logprob &&
              !memcmp(fa.alpha, fb.alpha, sizeof(float) * (size_t)(fa.n + 1) * 6) &&
              !memcmp(fa.alpha, a.alpha, sizeof(float) * (size_t)(fa.n + 1) * 6));
        ac_caption_free(&fb);
        CHECK(ac_beam_search_grid(&big, padded, 4, 4, &o, &fb, &err) == -1 && strstr(err.msg, "grid"));
        ac_caption_free(&a), ac_caption_free(&b), ac_caption_free(&fa);
        ac_decoder_free(&big), ac_decoder_free(&small);
    }
}

/* Training: a batch of two photos of 2 x 3 cells padded into 3 x 4 (NaN padding) has the loss and
 * gradient of the same batch unpadded in a 2 x 3 model; and a batch mixing a photo of 3 cells with a
 * full one (in a 2 x 3 model) has the token-weighted sum of the two photos' own losses and gradients,
 * the first computed by a 1 x 3 model, for every score function, one head and two, through one pass
 * and through the pool's shards. (Float rounding differs with the batch's shape: 1e-5 of the largest
 * gradient; a cell read or weighted wrongly moves them by far more.) */
static void train_invariance(int score, int heads) {
    ac_decoder big, small, tiny;
    ac_err err;
    ac_decoder_config c = cfg_of(3, 4, score, heads);
    CHECKF(ac_decoder_init(&big, &c, 6, &err) == 0, "%s", err.msg);
    for (size_t i = 0; i < big.n_params; i++) big.params[i] += 0.05f * (float)sin(1.0 + 3.7 * i);
    twin(&big, 2, 3, &small);
    twin(&big, 1, 3, &tiny);
    enum { B = 3, ST = 5 };
    static float own[2][6 * D], padded[2][12 * D];
    for (int p = 0; p < 2; p++) {
        fill(own[p], 6 * D, 20 + p);
        memcpy(padded[p], own[p], sizeof own[p]);
        for (int k = 6 * D; k < 12 * D; k++) padded[p][k] = NAN;
    }
    const int len[B] = {5, 4, 2};
    int words[B * ST];
    for (int k = 0; k < B * ST; k++) words[k] = 4 + (k * 5) % 7;
    const float *pp[B] = {padded[0], padded[1], padded[0]}, *op[B] = {own[0], own[1], own[0]};
    const int nv[B] = {6, 6, 6};
    const size_t P = big.n_params;
    float *g[3] = {malloc(sizeof(float) * P), malloc(sizeof(float) * P), malloc(sizeof(float) * P)};
    ac_dec_stats s[3];
    ac_dec_work *w = ac_dec_work_new(&big.cfg, B, ST), *ws = ac_dec_work_new(&small.cfg, B, ST),
                *wt = ac_dec_work_new(&tiny.cfg, B, ST);
    ac_dec_batch bp = {B, len, words, ST, pp, NULL, 0, nv, NULL, NULL, NULL, NULL}, bu = {B, len, words, ST, op, NULL, 0, NULL, NULL, NULL, NULL, NULL};
    CHECKF(ac_decoder_forward_backward(&big, w, &bp, 0, 0, g[0], &s[0], &err) == 0, "%s", err.msg);
    CHECKF(ac_decoder_forward_backward(&small, ws, &bu, 0, 0, g[1], &s[1], &err) == 0, "%s", err.msg);
    double gm = 0, worst = 0;
    for (size_t i = 0; i < P; i++) gm = fmax(gm, fabs(g[1][i]));
    for (size_t i = 0; i < P; i++) worst = fmax(worst, fabs(g[0][i] - g[1][i]));
    CHECKF(s[0].ntok == s[1].ntok && fabs(s[0].loss - s[1].loss) <= 1e-6 * s[1].loss && worst <= 1e-5 * gm && gm > 0,
           "%s x%d padded: loss %.9g vs %.9g, gradient off by %.3g of %.3g", ac_decoder_attention_name(score), heads,
           s[0].loss, s[1].loss, worst, gm);
    /* mixing: caption 0 on photo 0's first 3 cells, captions 1 and 2 on photo 1 (full) in the 2 x 3 model */
    const float *mp[B] = {own[0], own[1], own[1]};
    const int mv[B] = {3, 6, 6};
    ac_dec_batch bm = {B, len, words, ST, mp, NULL, 0, mv, NULL, NULL, NULL, NULL};
    CHECKF(ac_decoder_forward_backward(&small, ws, &bm, 0, 0, g[0], &s[0], &err) == 0, "%s", err.msg);
    /* the pool cuts it into whole photos: the same */
    float *gpool = malloc(sizeof(float) * P);
    ac_dec_stats sp;
    ac_dec_pool *pool = ac_dec_pool_new(&small.cfg, 2, 2, B, ST);
    CHECK(pool && ac_dec_pool_forward_backward(pool, &small, &bm, 0, 0, gpool, &sp, &err) == 0);
    ac_dec_batch b0 = {1, len, words, ST, mp, NULL, 0, NULL, NULL, NULL, NULL, NULL}, b1 = {2, len + 1, words + ST, ST, mp + 1, NULL, 0, NULL, NULL, NULL, NULL, NULL};
    CHECKF(ac_decoder_forward_backward(&tiny, wt, &b0, 0, 0, g[1], &s[1], &err) == 0, "%s", err.msg);
    CHECKF(ac_decoder_forward_backward(&small, ws, &b1, 0, 0, g[2], &s[2], &err) == 0, "%s", err.msg);
    const double N = s[1].ntok + s[2].ntok;
    const double want = (s[1].loss * s[1].ntok + s[2].loss * s[2].ntok) / N;
    gm = 0, worst = 0;
    double worst_pool = 0;
    for (size_t i = 0; i < P; i++) {
        const double sum = (g[1][i] * s[1].ntok + g[2][i] * s[2].ntok) / N;
        gm = fmax(gm, fabs(sum));
        worst = fmax(worst, fabs(g[0][i] - sum));
        worst_pool = fmax(worst_pool, fabs(gpool[i] - sum));
    }
    CHECKF(fabs(s[0].loss - want) <= 1e-6 * want && fabs(sp.loss - want) <= 1e-6 * want && worst <= 1e-5 * gm &&
               worst_pool <= 1e-5 * gm,
           "%s x%d mixed: loss %.9g (pool %.9g) vs %.9g, gradient off by %.3g (pool %.3g) of %.3g",
           ac_decoder_attention_name(score), heads, s[0].loss, sp.loss, want, worst, worst_pool, gm);
    ac_dec_pool_free(pool);
    free(gpool);
    for (int k = 0; k < 3; k++) free(g[k]);
    ac_dec_work_free(w), ac_dec_work_free(ws), ac_dec_work_free(wt);
    ac_decoder_free(&big), ac_decoder_free(&small), ac_decoder_free(&tiny);
}
static void test_train_padding_invariance(void) {
    for (int s = 0; s < AC_ATTENTION_COUNT; s++) train_invariance(s, 0), train_invariance(s, 2);
}

/* An empty grid, or more cells than the model has, is refused in one line; so is a photo given two
 * different grids in one batch. */
static void test_bad_grids(void) {
    ac_decoder dec;
    ac_err err;
    ac_decoder_config c = cfg_of(2, 3, AC_ATTENTION_ADDITIVE, 0);
    CHECKF(ac_decoder_init(&dec, &c, 1, &err) == 0, "%s", err.msg);
    float ann[6 * D];
    fill(ann, 6 * D, 1);
    const int bad[][2] = {{0, 3}, {2, 0}, {-1, -6}, {3, 3}, {1, 7}, {7, 1}};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        CHECK(ac_decoder_prepare_grid(&dec, ann, bad[k][0], bad[k][1]) == NULL);
        CHECK(ac_decoder_check_grid(&dec.cfg, bad[k][0], bad[k][1], &err) == -1 && strstr(err.msg, "grid") &&
              !strchr(err.msg, '\n'));
        float al[6 * 2];
        const int w[1] = {5};
        CHECK(ac_decoder_attend_grid(&dec, ann, bad[k][0], bad[k][1], w, 1, al, NULL, NULL, NULL, &err) == -1);
    }
    const int len[2] = {3, 2}, words[2 * 2] = {5, 6, 7, 8};
    const float *ap[2] = {ann, ann};
    ac_dec_work *w = ac_dec_work_new(&dec.cfg, 2, 3);
    const int zero[2] = {0, 3}, over[2] = {3, 7}, differ[2] = {3, 4};
    const int *cases[3] = {zero, over, differ};
    for (int k = 0; k < 3; k++) {
        ac_dec_batch b = {2, len, words, 2, ap, NULL, 0, cases[k], NULL, NULL, NULL, NULL};
        ac_dec_stats st;
        CHECK(ac_decoder_forward_backward(&dec, w, &b, 0, 0, NULL, &st, &err) == -1 && !strchr(err.msg, '\n'));
        CHECKF(strstr(err.msg, "decoder batch"), "%s", err.msg);
    }
    ac_dec_work_free(w);
    ac_decoder_free(&dec);
}

int main(void) {
    RUN(test_masked_softmax_kernels);
    RUN(test_step_padding_invariance);
    RUN(test_attend_padding_invariance);
    RUN(test_search_padding_invariance);
    RUN(test_train_padding_invariance);
    RUN(test_bad_grids);
    return TEST_EXIT();
}
