/* test_decoder.c: the decoder's inference step, its training gradients (finite differences against
 * an independent double-precision re-implementation) and its parity with PyTorch. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/decoder.h"
#include "attncap/safetensors.h"
#include "decoder_internal.h" /* the dropout mask hash: masks are inputs the reference must share */
#include "test.h"

static ac_decoder_config tiny_cfg(void) {
    ac_decoder_config c = {.vocab = 11, .embed = 5, .hidden = 6, .att = 4, .dim = 7, .n_ann = 6, .grid_h = 2,
                           .grid_w = 3, .dropout = 0.0f, .lambda = 0.7f};
    return c;
}

static void fill_ann(float *a, int n, unsigned seed) {
    for (int i = 0; i < n; i++) a[i] = (float)((((i * 2654435761u + seed * 40503u) >> 8) % 1000) / 1000.0 * 2.0);
}

static void test_step_is_a_distribution(void) {
    ac_decoder_config c = tiny_cfg();
    ac_decoder dec;
    ac_err err;
    CHECK(ac_decoder_init(&dec, &c, 1, &err) == 0);
    float ann[6 * 7];
    fill_ann(ann, 42, 3);
    ac_dec_image *im = ac_decoder_prepare(&dec, ann);
    CHECK(im);
    float h[2 * 6], cc[2 * 6], h2[12], c2[12], logp[2 * 11], al[2 * 6], be[2];
    ac_decoder_initial_state(&dec, im, h, cc);
    memcpy(h + 6, h, sizeof(float) * 6);
    memcpy(cc + 6, cc, sizeof(float) * 6);
    int prev[2] = {AC_START, 7};
    float *scr = malloc(sizeof(float) * ac_decoder_step_scratch(&c, 2));
    ac_decoder_step(&dec, im, 2, prev, h, cc, h2, c2, logp, al, be, scr);
    for (int k = 0; k < 2; k++) {
        double sp = 0, sa = 0;
        for (int v = 0; v < 11; v++) sp += exp(logp[k * 11 + v]);
        for (int l = 0; l < 6; l++) sa += al[k * 6 + l];
        CHECK_NEAR(sp, 1.0, 1e-5);
        CHECK_NEAR(sa, 1.0, 1e-5);
        CHECK(be[k] > 0 && be[k] < 1);
    }
    /* Same previous word and state -> same row; different word -> different row. */
    int same[2] = {7, 7};
    float logp2[22];
    ac_decoder_step(&dec, im, 2, same, h, cc, h2, c2, logp2, al, be, scr);
    for (int v = 0; v < 11; v++) CHECK_NEAR(logp2[v], logp2[11 + v], 1e-6);
    for (int v = 0; v < 11; v++) CHECK_NEAR(logp2[11 + v], logp[11 + v], 1e-6);
    free(scr);
    ac_dec_image_free(im);
    ac_decoder_free(&dec);
}


/* ---- an independent double-precision reference of the training objective ----
 * Written per caption with plain loops straight from the equations in decoder.h / decoder_train.c;
 * it shares nothing with decoder_train.c but the parameter layout and the dropout mask hash. */
typedef struct {
    int B, stride;
    const int *len, *words;
    const float *const *ann;
    const int *n_valid; /* NULL, or caption i's photo is its first n_valid[i] cells (the rest never read) */
} ref_batch;

static double sig(double x) { return 1.0 / (1.0 + exp(-x)); }

/* The tensor `name` of P laid out for c, or NULL if c's score function has none. */
static const double *ref_tensor(const ac_decoder_config *c, const double *P, const char *name) {
    ac_dec_tensor t[AC_DEC_MAX_TENSORS];
    const int n = ac_decoder_tensors(c, t, NULL);
    for (int i = 0; i < n; i++)
        if (!strcmp(t[i].name, name)) return P + t[i].offset;
    return NULL;
}

/* The score of query q against key k (both K wide), straight from decoder.h's table. */
static double ref_score(int score, int K, const double *q, const double *k, const double *we, const double *logtau) {
    double e = 0, qq = 0, kk = 0;
    for (int j = 0; j < K; j++) {
        e += score == AC_ATTENTION_ADDITIVE ? we[j] * tanh(k[j] + q[j]) : q[j] * k[j];
        qq += q[j] * q[j], kk += k[j] * k[j];
    }
    if (score == AC_ATTENTION_SCALED_DOT) e /= sqrt((double)K);
    if (score == AC_ATTENTION_COSINE) e *= exp(logtau[0]) / (sqrt(qq + 1e-8) * sqrt(kk + 1e-8));
    return e;
}

static double ref_loss(const ac_decoder_config *c, const double *P, const ref_batch *b, int train, uint64_t seed) {
    const int V = c->vocab, E = c->embed, H = c->hidden, D = c->dim, L = c->n_ann;
    const int A = c->attention == AC_ATTENTION_GENERAL ? H : c->att; /* key width: general's keys meet h itself */
#define T_(name) ref_tensor(c, P, name)
    const double *emb = T_("emb"), *wa = T_("att_wa"), *ba = T_("att_ba"), *wh = T_("att_wh"), *we = T_("att_we"),
                 *lt = T_("att_logtau"), *bw = T_("beta_w"), *bb = T_("beta_b"), *ihw = T_("init_h_w"),
                 *ihb = T_("init_h_b"), *icw = T_("init_c_w"), *icb = T_("init_c_b"), *lw = T_("lstm_w"),
                 *lb = T_("lstm_b"), *lh = T_("out_lh"), *lz = T_("out_lz"), *lo = T_("out_lo"), *bo = T_("out_bo");
#undef T_
    const int nh = c->heads > 1 ? c->heads : 1, dk = A / nh, dv = D / nh; /* head j: key columns j dk.., channels j dv.. */
    const double p = train ? c->dropout : 0.0;
    const uint64_t seed2 = ac_mix64(seed ^ 0x5DEECE66Dull);
    int N = 0;
    for (int i = 0; i < b->B; i++) N += b->len[i];
    double ce = 0, pen = 0;
    double *proj = malloc(sizeof(double) * L * A), *h = malloc(sizeof(double) * H), *cc = malloc(sizeof(double) * H),
           *hw = malloc(sizeof(double) * (A + H)), *al = malloc(sizeof(double) * nh * L), *x = malloc(sizeof(double) * (E + D + H)),
           *g = malloc(sizeof(double) * 4 * H), *o = malloc(sizeof(double) * E), *lg = malloc(sizeof(double) * V),
           *S = malloc(sizeof(double) * nh * L), *mean = malloc(sizeof(double) * D);
    for (int i = 0; i < b->B; i++) {
        const float *a = b->ann[i];
        const int n = b->n_valid ? b->n_valid[i] : L; /* the photo's cells: the softmax runs over them alone */
        for (int d = 0; d < D; d++) {
            mean[d] = 0;
            for (int l = 0; l < n; l++) mean[d] += a[l * D + d];
            mean[d] /= n;
        }
        for (int l = 0; l < n; l++)
            for (int j = 0; j < A; j++) {
                proj[l * A + j] = ba ? ba[j] : 0;
                for (int d = 0; d < D; d++) proj[l * A + j] += a[l * D + d] * wa[d * A + j];
            }
        for (int j = 0; j < H; j++) {
            double sh = ihb[j], sc = icb[j];
            for (int d = 0; d < D; d++) sh += mean[d] * ihw[d * H + j], sc += mean[d] * icw[d * H + j];
            h[j] = tanh(sh), cc[j] = tanh(sc);
        }
        for (int l = 0; l < nh * L; l++) S[l] = 0;
        for (int tt = 0; tt < b->len[i]; tt++) {
            int row = 0; /* time-major row of (caption i, step tt), for the dropout masks */
            for (int s2 = 0; s2 < tt; s2++)
                for (int k = 0; k < b->B; k++) row += b->len[k] > s2;
            row += i;
            const int y = tt ? b->words[i * b->stride + tt - 1] : AC_START;
            const int tg = tt < b->len[i] - 1 ? b->words[i * b->stride + tt] : AC_END;
            for (int j = 0; j < A; j++) { /* the query: h W_h, or h (general) */
                hw[j] = wh ? 0 : h[j];
                for (int k = 0; wh && k < H; k++) hw[j] += h[k] * wh[k * A + j];
            }
            double mx, s;
            for (int j = 0; j < nh; j++) {
                double *aj = al + j * L;
                mx = -1e300, s = 0;
                for (int l = 0; l < n; l++) {
                    aj[l] = ref_score(c->attention, dk, hw + j * dk, proj + l * A + j * dk, we ? we + j * dk : NULL, lt);
                    mx = aj[l] > mx ? aj[l] : mx;
                }
                for (int l = 0; l < n; l++) s += (aj[l] = exp(aj[l] - mx));
                for (int l = 0; l < n; l++) aj[l] /= s, S[j * L + l] += aj[l];
            }
            double bp = bb[0];
            for (int k = 0; k < H; k++) bp += bw[k] * h[k];
            const double beta = sig(bp);
            for (int e = 0; e < E; e++) x[e] = emb[y * E + e];
            for (int d = 0; d < D; d++) {
                x[E + d] = 0;
                for (int l = 0; l < n; l++) x[E + d] += al[d / dv * L + l] * a[l * D + d];
                x[E + d] *= beta;
            }
            for (int k = 0; k < H; k++) x[E + D + k] = h[k];
            for (int k = 0; k < 4 * H; k++) {
                g[k] = lb[k];
                for (int m = 0; m < E + D + H; m++) g[k] += x[m] * lw[m * 4 * H + k];
            }
            for (int k = 0; k < H; k++) {
                cc[k] = sig(g[H + k]) * cc[k] + sig(g[k]) * tanh(g[2 * H + k]);
                h[k] = sig(g[3 * H + k]) * tanh(cc[k]);
            }
            for (int e = 0; e < E; e++) {
                o[e] = x[e];
                for (int k = 0; k < H; k++) {
                    double m1 = p > 0 ? (ac_dropout_keep(seed, (uint64_t)row * H + k, (float)p) ? 1 / (1 - p) : 0) : 1;
                    o[e] += h[k] * m1 * lh[k * E + e];
                }
                for (int d = 0; d < D; d++) o[e] += x[E + d] * lz[d * E + e];
                double m2 = p > 0 ? (ac_dropout_keep(seed2, (uint64_t)row * E + e, (float)p) ? 1 / (1 - p) : 0) : 1;
                o[e] = tanh(o[e]) * m2;
            }
            mx = -1e300, s = 0;
            for (int v = 0; v < V; v++) {
                lg[v] = bo[v];
                for (int e = 0; e < E; e++) lg[v] += o[e] * lo[e * V + v];
                mx = lg[v] > mx ? lg[v] : mx;
            }
            for (int v = 0; v < V; v++) s += exp(lg[v] - mx);
            ce += mx + log(s) - lg[tg];
        }
        for (int j = 0; j < nh; j++)
            for (int l = 0; l < n; l++) pen += (1 - S[j * L + l]) * (1 - S[j * L + l]);
    }
    free(proj), free(h), free(cc), free(hw), free(al), free(x), free(g), free(o), free(lg), free(S), free(mean);
    return (ce + c->lambda * pen) / N;
}

/* masked: the photos bring 2, 6, 3 and 1 of the 6 cells (3, 5, 3, 5 when shared), their padding NaN:
 * the masked softmax must never read it. (A photo of 2 cells under cosine heads of 2 columns is
 * ill-conditioned in float32 with or without masks: an unmasked 1 x 2 grid misses 3e-4 by as much.) */
static void gradcheck(float dropout, int shared, int score, int width, int heads, int masked) {
    ac_decoder_config c = tiny_cfg();
    c.dropout = dropout;
    c.attention = score;
    c.heads = heads;
    if (heads > 1) c.dim = 8; /* the heads split the channels */
    if (width) c.att = c.hidden = width;
    ac_decoder dec;
    ac_err err;
    CHECK(ac_decoder_init(&dec, &c, 7, &err) == 0);
    /* Non-zero biases so that their gradients are exercised from a generic point. */
    for (size_t i = 0; i < dec.n_params; i++) dec.params[i] += 0.05f * (float)sin(1.0 + 3.7 * i);
    enum { B = 4, ST = 6 };
    static float ann[B][6 * 8];
    const float *annp[B];
    for (int i = 0; i < B; i++) fill_ann(ann[i], 6 * c.dim, 11 + i), annp[i] = ann[i];
    if (shared) annp[2] = annp[0], annp[3] = annp[1]; /* two photos with two captions each */
    const int len[B] = {6, 4, 4, 2};
    const int nv_own[B] = {2, 6, 3, 1}, nv_shared[B] = {3, 5, 3, 5}, *nv = masked ? shared ? nv_shared : nv_own : NULL;
    for (int i = 0; nv && i < B; i++)
        for (int k = nv[i] * c.dim; k < 6 * c.dim; k++) ann[i][k] = NAN;
    int words[B * ST];
    for (int k = 0; k < B * ST; k++) words[k] = 4 + (k * 7) % 7;
    ac_dec_batch bt = {B, len, words, ST, annp, NULL, nv};
    ac_dec_work *w = ac_dec_work_new(&c, 2, 2); /* deliberately small: it must grow */
    CHECK(w);
    float *grad = malloc(sizeof(float) * dec.n_params);
    ac_dec_stats st;
    const uint64_t seed = 12345;
    CHECK(ac_decoder_forward_backward(&dec, w, &bt, 1, seed, grad, &st, &err) == 0);
    double *P = malloc(sizeof(double) * dec.n_params);
    for (size_t i = 0; i < dec.n_params; i++) P[i] = dec.params[i];
    ref_batch rb = {B, ST, len, words, annp, nv};
    double l0 = ref_loss(&c, P, &rb, 1, seed);
    CHECK_NEAR(st.loss, l0, 1e-5 * fabs(l0));
    ac_dec_tensor t[AC_DEC_MAX_TENSORS];
    const int nt = ac_decoder_tensors(&c, t, NULL);
    const double eps = 1e-5;
    for (int k = 0; k < nt; k++) {
        size_t n = (size_t)t[k].rows * t[k].cols;
        double worst = 0, gmax = 0;
        size_t wi = 0;
        double wa = 0, wn = 0;
        for (size_t j = 0; j < n; j++) gmax = fmax(gmax, fabs(grad[t[k].offset + j]));
        for (size_t j = 0; j < n; j++) {
            double *q = P + t[k].offset + j, keep = *q;
            *q = keep + eps;
            double lp = ref_loss(&c, P, &rb, 1, seed);
            *q = keep - eps;
            double lm = ref_loss(&c, P, &rb, 1, seed);
            *q = keep;
            double num = (lp - lm) / (2 * eps), an = grad[t[k].offset + j];
            /* float32 analytic vs double numeric: relative to the tensor's largest gradient */
            double e = fabs(num - an) / (fmax(fabs(num), 1e-2 * gmax) + 1e-7);
            if (e > worst) worst = e, wi = j, wa = an, wn = num;
        }
        if (getenv("GC_VERBOSE"))
            printf("# %s%s %-10s worst rel %.2e gmax %.2e\n", ac_decoder_attention_name(score), masked ? " masked" : "",
                   t[k].name, worst, gmax);
        CHECKF(gmax > 0 || !strcmp(t[k].name, "emb"), "%s %s: all-zero gradient", ac_decoder_attention_name(score), t[k].name);
        CHECKF(worst < 3e-4, "%s%s %s[%zu]: analytic %.9g, numeric %.9g (rel %.3g)", ac_decoder_attention_name(score),
               masked ? " masked" : "", t[k].name, wi, wa, wn, worst);
    }
    free(P);
    free(grad);
    ac_dec_work_free(w);
    ac_decoder_free(&dec);
}
/* dctx_sum: d loss / d x, x added to every annotation vector of every photo (the trainer's learned
 * "no photo" context is this with all vectors equal), against central differences of the reference;
 * then the pool's combination against the single pass. */
static void gradcheck_context_shift(int score, int heads, int masked) {
    ac_decoder_config c = tiny_cfg();
    c.dropout = 0.3f;
    c.attention = score;
    c.heads = heads;
    if (heads > 1) c.dim = 8; /* the heads split the channels */
    const int D = c.dim, LD = 6 * D;
    ac_decoder dec;
    ac_err err;
    CHECK(ac_decoder_init(&dec, &c, 5, &err) == 0);
    for (size_t i = 0; i < dec.n_params; i++) dec.params[i] += 0.05f * (float)sin(2.0 + 1.3 * i);
    enum { B = 4, ST = 6 };
    static float ann[B][6 * 8], sh[B][6 * 8];
    const float *annp[B], *shp[B];
    for (int i = 0; i < B; i++) fill_ann(ann[i], LD, 31 + i), annp[i] = ann[i], shp[i] = sh[i];
    for (int k = 0; k < LD; k++) ann[2][k] = ann[2][k % D]; /* one photo: six copies of one vector */
    annp[3] = annp[2], shp[3] = shp[2];
    const int len[B] = {6, 5, 3, 2}, nv_own[B] = {4, 6, 3, 3}, *nv = masked ? nv_own : NULL;
    for (int i = 0; nv && i < B; i++) /* masked: the padding NaN, never read (the shift moves it too) */
        for (int k = nv[i] * D; k < LD; k++) ann[i][k] = NAN;
    int words[B * ST];
    for (int k = 0; k < B * ST; k++) words[k] = 4 + (k * 3) % 7;
    float dctx[8], dctx2[8];
    ac_dec_batch bt = {B, len, words, ST, annp, dctx, nv};
    ac_dec_work *w = ac_dec_work_new(&c, B, 8);
    float *grad = malloc(sizeof(float) * dec.n_params);
    ac_dec_stats st;
    const uint64_t seed = 99;
    CHECK(ac_decoder_forward_backward(&dec, w, &bt, 1, seed, grad, &st, &err) == 0);
    double *P = malloc(sizeof(double) * dec.n_params);
    for (size_t i = 0; i < dec.n_params; i++) P[i] = dec.params[i];
    ref_batch rb = {B, ST, len, words, shp, nv};
    const double eps = 1e-3;
    double gmax = 0;
    for (int d = 0; d < D; d++) gmax = fmax(gmax, fabs(dctx[d]));
    CHECK(gmax > 0);
    for (int d = 0; d < D; d++) {
        double l[2];
        for (int sgn = 0; sgn < 2; sgn++) {
            for (int i = 0; i < B; i++)
                for (int k = 0; k < LD; k++) sh[i][k] = ann[i][k] + (k % D == d ? (sgn ? -eps : eps) : 0.0f);
            l[sgn] = ref_loss(&c, P, &rb, 1, seed);
        }
        const double num = (l[0] - l[1]) / (2 * eps);
        CHECKF(fabs(num - dctx[d]) < 2e-3 * gmax + 1e-6, "%s x%d dctx[%d]: analytic %.7g, numeric %.7g",
               ac_decoder_attention_name(score), heads, d, dctx[d], num);
    }
    /* Without a gradient the buffer is left alone; through the pool (2 shards) it matches. */
    c.dropout = 0;
    dec.cfg.dropout = 0;
    CHECK(ac_decoder_forward_backward(&dec, w, &bt, 0, 0, grad, &st, &err) == 0);
    bt.dctx_sum = dctx2;
    ac_dec_pool *p = ac_dec_pool_new(&c, 2, 2, B, 8);
    CHECK(p && ac_dec_pool_forward_backward(p, &dec, &bt, 0, 0, grad, &st, &err) == 0);
    for (int d = 0; d < D; d++) CHECK_NEAR(dctx2[d], dctx[d], 1e-5 * gmax + 1e-7);
    ac_dec_pool_free(p);
    free(P), free(grad);
    ac_dec_work_free(w);
    ac_decoder_free(&dec);
}
static void test_gradcheck_context_shift(void) {
    for (int s = 0; s < AC_ATTENTION_COUNT; s++) gradcheck_context_shift(s, 0, 0), gradcheck_context_shift(s, 0, 1);
    gradcheck_context_shift(AC_ATTENTION_ADDITIVE, 2, 0), gradcheck_context_shift(AC_ATTENTION_SCALED_DOT, 2, 0);
    gradcheck_context_shift(AC_ATTENTION_COSINE, 2, 1);
}
static void test_gradcheck_no_dropout(void) { gradcheck(0.0f, 0, AC_ATTENTION_ADDITIVE, 0, 0, 0); }
static void test_gradcheck_dropout(void) { gradcheck(0.4f, 0, AC_ATTENTION_ADDITIVE, 0, 0, 0); }
static void test_gradcheck_shared_photos(void) { gradcheck(0.3f, 1, AC_ATTENTION_ADDITIVE, 0, 0, 0); }
/* Every score function with dropout and shared photos (a shared photo's keys get the gradients of
 * all its captions), at A = H = 4 and at 17, where the score kernels' 16-wide loops run too. */
static void test_gradcheck_scores(void) {
    for (int s = 0; s < AC_ATTENTION_COUNT; s++) {
        if (s != AC_ATTENTION_ADDITIVE) gradcheck(0.3f, 1, s, 0, 0, 0);
        gradcheck(0.3f, 1, s, 17, 0, 0);
    }
}
/* Multi-head attention: every score with 2 heads (A = 4 and H = 6 key columns and D = 8 channels split
 * in two); 4 heads of 4 columns (additive); 2 heads of 16, where the kernels' 16-wide loops run (cosine). */
static void test_gradcheck_heads(void) {
    for (int s = 0; s < AC_ATTENTION_COUNT; s++) gradcheck(0.3f, 1, s, 0, 2, 0);
    gradcheck(0.3f, 1, AC_ATTENTION_ADDITIVE, 16, 4, 0);
    gradcheck(0.3f, 1, AC_ATTENTION_COSINE, 32, 2, 0);
}
/* Masked softmax (photos with fewer cells than the grid, their padding NaN): every score function,
 * one photo per caption and shared photos, one head and two, and the 16-wide loops at 17. */
static void test_gradcheck_masked(void) {
    for (int s = 0; s < AC_ATTENTION_COUNT; s++) {
        gradcheck(0.3f, 0, s, 0, 0, 1);
        gradcheck(0.3f, 1, s, 0, 2, 1);
    }
    gradcheck(0.3f, 1, AC_ATTENTION_ADDITIVE, 17, 0, 1);
    gradcheck(0.3f, 0, AC_ATTENTION_COSINE, 32, 2, 1);
}

/* The inference step (beam search's) and the batched training forward are separate code: they must
 * agree on the log-probabilities of a caption fed word by word. */
static void step_matches_training_forward(int score, int heads) {
    ac_decoder_config c = tiny_cfg();
    c.dropout = 0.5f; /* must be ignored with train = 0 */
    c.attention = score;
    c.heads = heads;
    if (heads > 1) c.dim = 8;
    ac_decoder dec;
    ac_err err;
    CHECK(ac_decoder_init(&dec, &c, 3, &err) == 0);
    float ann[2][48];
    fill_ann(ann[0], 6 * c.dim, 5), fill_ann(ann[1], 6 * c.dim, 9);
    const float *annp[2] = {ann[0], ann[1]};
    const int len[2] = {4, 2}, words[2 * 3] = {5, 6, 7, 8, 0, 0};
    ac_dec_batch bt = {2, len, words, 3, annp, NULL, NULL};
    ac_dec_work *w = ac_dec_work_new(&c, 2, 4);
    ac_dec_stats st;
    CHECK(ac_decoder_forward_backward(&dec, w, &bt, 0, 1, NULL, &st, &err) == 0);
    const float *lg = ac_dec_work_logits(w);
    for (int i = 0; i < 2; i++) {
        ac_dec_image *im = ac_decoder_prepare(&dec, ann[i]);
        float h[6], cc[6], h2[6], c2[6], lp[11], al[6], scr[256];
        CHECK(ac_decoder_step_scratch(&c, 1) <= 256);
        ac_decoder_initial_state(&dec, im, h, cc);
        int row = i;
        for (int t = 0; t < len[i]; t++) {
            int prev = t ? words[i * 3 + t - 1] : AC_START;
            ac_decoder_step(&dec, im, 1, &prev, h, cc, h2, c2, lp, al, NULL, scr);
            double mx = -1e30, s = 0;
            for (int v = 0; v < 11; v++) mx = fmax(mx, lg[row * 11 + v]);
            for (int v = 0; v < 11; v++) s += exp(lg[row * 11 + v] - mx);
            for (int v = 0; v < 11; v++) CHECK_NEAR(lp[v], lg[row * 11 + v] - mx - log(s), 1e-5);
            memcpy(h, h2, sizeof h), memcpy(cc, c2, sizeof cc);
            row += t < len[1] ? 2 : 1; /* step t's block has 2 rows while caption 1 runs */
        }
        ac_dec_image_free(im);
    }
    ac_dec_work_free(w);
    ac_decoder_free(&dec);
}
static void test_step_matches_training_forward(void) {
    for (int s = 0; s < AC_ATTENTION_COUNT; s++) step_matches_training_forward(s, 0), step_matches_training_forward(s, 2);
}

/* Shards: the pool's combined gradient equals the single-pass gradient of the whole batch
 * (dropout off, so both compute the same function), for 1..3 shards and threads. */
static void test_pool_matches_single(void) {
    ac_decoder_config c = tiny_cfg();
    c.hidden = 20, c.att = 18, c.dim = 33; /* sizes that exercise the kernel's column tails */
    ac_decoder dec;
    ac_err err;
    CHECK(ac_decoder_init(&dec, &c, 9, &err) == 0);
    enum { B = 7, ST = 6 };
    static float ann[B][6 * 33];
    const float *annp[B];
    for (int i = 0; i < B; i++) fill_ann(ann[i], 6 * 33, 20 + i), annp[i] = ann[i];
    annp[4] = annp[0], annp[5] = annp[1], annp[6] = annp[1]; /* photos with several captions */
    const int len[B] = {7, 6, 6, 4, 3, 2, 1};
    int words[B * ST];
    for (int k = 0; k < B * ST; k++) words[k] = 4 + (k * 5) % 7;
    ac_dec_batch bt = {B, len, words, ST, annp, NULL, NULL};
    float *g1 = malloc(sizeof(float) * dec.n_params), *g2 = malloc(sizeof(float) * dec.n_params);
    ac_dec_work *w = ac_dec_work_new(&c, B, 8);
    ac_dec_stats s1, s2;
    CHECK(ac_decoder_forward_backward(&dec, w, &bt, 0, 0, g1, &s1, &err) == 0);
    for (int shards = 1; shards <= 5; shards++) /* 5 shards > 4 photos: one stays empty */
        for (int threads = 1; threads <= 2; threads++) {
            ac_dec_pool *p = ac_dec_pool_new(&c, shards, threads, B, 8);
            CHECK(p);
            CHECK(ac_dec_pool_forward_backward(p, &dec, &bt, 0, 0, g2, &s2, &err) == 0);
            CHECK(s2.ntok == s1.ntok);
            CHECK_NEAR(s2.loss, s1.loss, 1e-5 * s1.loss);
            double gm = 0;
            for (size_t i = 0; i < dec.n_params; i++) gm = fmax(gm, fabs(g1[i]));
            for (size_t i = 0; i < dec.n_params; i++) CHECK_NEAR(g2[i], g1[i], 1e-5 * gm);
            ac_dec_pool_free(p);
        }
    free(g1), free(g2);
    ac_dec_work_free(w);
    ac_decoder_free(&dec);
}

/* PyTorch parity: tools/torch_decoder.py --fixture computed logits, loss and every gradient in
 * float64 for fixed parameters, inputs and dropout masks, one fixture per score function (the
 * additive one without the config field, as files before score functions) and two with 2 heads;
 * ours (float32) must match to 1e-4. masked: the fixture's photos own only some cells (n_valid). */
static void torch_parity(int score, int heads, int masked) {
    char path[4096];
    const char *root = getenv("ATTNCAP_ROOT");
    if (masked)
        snprintf(path, sizeof path, "%s/tests/fixtures/decoder_parity_mask_%s%s.safetensors", root ? root : ".",
                 heads > 1 ? "heads2_" : "", ac_decoder_attention_name(score));
    else if (heads > 1)
        snprintf(path, sizeof path, "%s/tests/fixtures/decoder_parity_heads%d_%s.safetensors", root ? root : ".", heads,
                 ac_decoder_attention_name(score));
    else
        snprintf(path, sizeof path, "%s/tests/fixtures/decoder_parity%s%s.safetensors", root ? root : ".",
                 score ? "_" : "", score ? ac_decoder_attention_name(score) : "");
    ac_st_file f;
    ac_err err;
    CHECKF(ac_st_read(path, &f, &err) == 0, "%s", err.msg);
    ac_decoder_config c;
    CHECKF(ac_decoder_config_from_json(ac_st_meta(&f, "config"), &c, &err) == 0, "%s", err.msg);
    CHECKF(c.attention == score && c.heads == heads, "%s: config says %s, %d heads", path,
           ac_decoder_attention_name(c.attention), c.heads);
    ac_decoder dec;
    CHECK(ac_decoder_alloc(&dec, &c, &err) == 0);
    ac_dec_tensor dt[AC_DEC_MAX_TENSORS];
    const int nt = ac_decoder_tensors(&c, dt, NULL);
    for (int i = 0; i < nt; i++) { /* the fixture's parameters, under the decoder's names */
        const ac_st_tensor *t = ac_st_find(&f, dt[i].name);
        CHECKF(t && ac_st_to_f32(t, dec.params + dt[i].offset, (size_t)dt[i].rows * dt[i].cols, path, &err) == 0,
               "tensor %s", dt[i].name);
    }
    const ac_st_tensor *ta = ac_st_find(&f, "ann"), *tl = ac_st_find(&f, "len"), *tw = ac_st_find(&f, "words");
    CHECK(ta && tl && tw && tl->dtype == AC_ST_I32 && tw->dtype == AC_ST_I32);
    const int B = (int)tl->shape[0], stride = (int)tw->shape[1];
    int len[16], words[16 * 16];
    const float *annp[16];
    float *ann = malloc(ta->nbytes);
    CHECK(B <= 16 && stride <= 16);
    memcpy(len, tl->data, tl->nbytes);
    memcpy(words, tw->data, tw->nbytes);
    CHECK(ac_st_to_f32(ta, ann, (size_t)B * c.n_ann * c.dim, path, &err) == 0);
    for (int i = 0; i < B; i++) annp[i] = ann + (size_t)i * c.n_ann * c.dim;
    const ac_st_tensor *tv = ac_st_find(&f, "n_valid");
    int n_valid[16];
    CHECKF(!masked == !tv && (!tv || (tv->dtype == AC_ST_I32 && tv->shape[0] == B)), "%s: n_valid", path);
    if (tv) memcpy(n_valid, tv->data, tv->nbytes);
    ac_dec_batch bt = {B, len, words, stride, annp, NULL, tv ? n_valid : NULL};
    ac_dec_work *w = ac_dec_work_new(&c, B, len[0]);
    float *grad = malloc(sizeof(float) * dec.n_params);
    ac_dec_stats st;
    const unsigned long long seed = strtoull(ac_st_meta(&f, "seed"), NULL, 10);
    CHECKF(ac_decoder_forward_backward(&dec, w, &bt, 1, seed, NULL, &st, &err) == 0, "%s", err.msg);
    const double want_loss = strtod(ac_st_meta(&f, "loss"), NULL);
    CHECK_NEAR(st.loss, want_loss, 1e-5 * want_loss);
    const ac_st_tensor *tg = ac_st_find(&f, "logits");
    CHECK(tg && tg->shape[0] == st.ntok && tg->shape[1] == c.vocab);
    float *ref = malloc(sizeof(float) * dec.n_params + tg->nbytes);
    CHECK(ac_st_to_f32(tg, ref, (size_t)st.ntok * c.vocab, path, &err) == 0);
    const float *lg = ac_dec_work_logits(w);
    for (int i = 0; i < st.ntok * c.vocab; i++) CHECK_NEAR(lg[i], ref[i], 1e-4 * (fabs(ref[i]) + 1));
    ac_dec_stats st2;
    CHECKF(ac_decoder_forward_backward(&dec, w, &bt, 1, seed, grad, &st2, &err) == 0, "%s", err.msg);
    CHECK(st2.loss == st.loss);
    ac_dec_tensor t[AC_DEC_MAX_TENSORS];
    ac_decoder_tensors(&c, t, NULL);
    for (int k = 0; k < nt; k++) {
        char name[64];
        snprintf(name, sizeof name, "grad.%s", t[k].name);
        const ac_st_tensor *gt = ac_st_find(&f, name);
        size_t n = (size_t)t[k].rows * t[k].cols;
        CHECKF(gt && ac_st_to_f32(gt, ref, n, path, &err) == 0, "%s missing", name);
        double gmax = 0, worst = 0;
        size_t wi = 0;
        for (size_t j = 0; j < n; j++) gmax = fmax(gmax, fabs(ref[j]));
        for (size_t j = 0; j < n; j++) {
            /* relative error, with entries far below the tensor's scale judged against 1e-2 of it */
            double e = fabs(grad[t[k].offset + j] - ref[j]) / (fabs(ref[j]) + 1e-2 * gmax + 1e-12);
            if (e > worst) worst = e, wi = j;
        }
        if (getenv("GC_VERBOSE"))
            printf("# parity %s %-10s worst rel %.2e\n", ac_decoder_attention_name(score), t[k].name, worst);
        CHECKF(worst < 1e-4, "%s %s[%zu]: ours %.9g, torch %.9g (rel %.3g)", ac_decoder_attention_name(score), t[k].name,
               wi, grad[t[k].offset + wi], ref[wi], worst);
    }
    free(ref), free(grad), free(ann);
    ac_dec_work_free(w);
    ac_decoder_free(&dec);
    ac_st_free(&f);
}
static void test_torch_parity(void) {
    for (int s = 0; s < AC_ATTENTION_COUNT; s++) torch_parity(s, 0, 0);
    torch_parity(AC_ATTENTION_ADDITIVE, 2, 0), torch_parity(AC_ATTENTION_SCALED_DOT, 2, 0);
}
/* The same with masks (tools/torch_decoder.py --mask: photos of 2, 6, 3, 5 and 1 of the 6 cells, their
 * padding NaN; PyTorch masks the scores with -inf), every score function and two with 2 heads. */
static void test_torch_parity_masked(void) {
    for (int s = 0; s < AC_ATTENTION_COUNT; s++) torch_parity(s, 0, 1);
    torch_parity(AC_ATTENTION_ADDITIVE, 2, 1), torch_parity(AC_ATTENTION_COSINE, 2, 1);
}

static void f16_same_bits(int score, int heads, int masked) {
    ac_decoder_config cfg = {.vocab = 300, .embed = 24, .hidden = 40, .att = 16, .dim = 20, .n_ann = 12,
                             .grid_h = 3, .grid_w = 4, .attention = score, .heads = heads};
    ac_decoder a, b;
    ac_err err;
    CHECKF(ac_decoder_init(&a, &cfg, 11, &err) == 0, "%s", err.msg);
    CHECKF(ac_decoder_init(&b, &cfg, 11, &err) == 0, "%s", err.msg);
    CHECK(ac_decoder_use_f16(&b) == 0); /* random float32 weights are not float16 */
    CHECK(b.lstm_w16 == NULL);
    for (size_t i = 0; i < a.n_params; i++) a.params[i] = b.params[i] = ac_f16_to_f32(ac_f32_to_f16(a.params[i]));
    CHECKF(ac_decoder_use_f16(&b) == 1 && b.lstm_w16 && b.out_lo16 && !b.att_wh16 == !b.att_wh, "%s x%d",
           ac_decoder_attention_name(score), heads);
    float ann[12 * 20];
    for (int i = 0; i < 12 * 20; i++) ann[i] = (float)((i * 29) % 23) / 23.0f;
    /* with masks too: a photo of 2 x 3 of the 3 x 4 cells */
    ac_dec_image *ia = masked ? ac_decoder_prepare_grid(&a, ann, 2, 3) : ac_decoder_prepare(&a, ann),
                 *ib = masked ? ac_decoder_prepare_grid(&b, ann, 2, 3) : ac_decoder_prepare(&b, ann);
    int same = 1;
    float *scr = malloc(sizeof(float) * ac_decoder_step_scratch(&a.cfg, 16));
    for (int K = 1; K <= 16 && same; K += 14) { /* 1 and 15 hypotheses */
        int prev[16];
        float h[16 * 40], c[16 * 40], out[2][16 * (2 * 40 + 300 + 12 + 1)];
        for (int k = 0; k < K; k++) prev[k] = 4 + 17 * k;
        for (int i = 0; i < K * 40; i++) h[i] = sinf((float)i), c[i] = cosf((float)i);
        for (int v = 0; v < 2; v++) {
            float *o = out[v];
            ac_decoder_step(v ? &b : &a, v ? ib : ia, K, prev, h, c, o, o + K * 40, o + 2 * K * 40,
                            o + K * (2 * 40 + 300), o + K * (2 * 40 + 300 + 12), scr);
        }
        same = !memcmp(out[0], out[1], sizeof(float) * (size_t)K * (2 * 40 + 300 + 12 + 1));
    }
    free(scr);
    ac_dec_image_free(ia), ac_dec_image_free(ib);
    ac_decoder_free(&a), ac_decoder_free(&b);
    CHECKF(same, "%s x%d%s", ac_decoder_attention_name(score), heads, masked ? " masked" : "");
}

/* The step with float16 copies of the streamed weights gives the same bits as the float32 step, for
 * few hypotheses (streaming kernels on both sides) and many (the float32 side tiles), when the
 * weights are exactly float16, for every score function (general has no W_h to copy), with 2
 * heads and with masks (a photo of 2 x 3 of the 3 x 4 cells); a decoder whose weights are not keeps the
 * float32 path. */
static void test_step_f16_same_bits(void) {
    if (!ac_smm_has_f16()) {
        ac_decoder_config cfg = {.vocab = 300, .embed = 24, .hidden = 40, .att = 16, .dim = 20, .n_ann = 12,
                                 .grid_h = 3, .grid_w = 4};
        ac_decoder a;
        ac_err err;
        CHECKF(ac_decoder_init(&a, &cfg, 11, &err) == 0, "%s", err.msg);
        for (size_t i = 0; i < a.n_params; i++) a.params[i] = ac_f16_to_f32(ac_f32_to_f16(a.params[i]));
        CHECK(ac_decoder_use_f16(&a) == 0);
        ac_decoder_free(&a);
        SKIP("no float16 kernel on this CPU build (AVX-512 BW/VL)");
    }
    for (int s = 0; s < AC_ATTENTION_COUNT; s++)
        f16_same_bits(s, 0, 0), f16_same_bits(s, 2, 0), f16_same_bits(s, 0, 1), f16_same_bits(s, 2, 1);
}

/* The joint step of several photos (the batched beam search's) gives every row the same bits as a
 * step of its photo alone, for every score function and with 2 heads. */
static void test_step_photos_scores(void) {
    for (int s = 0; s < AC_ATTENTION_COUNT; s++)
        for (int heads = 0; heads <= 2; heads += 2) {
            ac_decoder_config c = tiny_cfg();
            c.attention = s, c.heads = heads, c.dim = 8;
            ac_decoder dec;
            ac_err err;
            CHECKF(ac_decoder_init(&dec, &c, 13, &err) == 0, "%s", err.msg);
            float ann[2][6 * 8];
            fill_ann(ann[0], 48, 21), fill_ann(ann[1], 48, 22);
            const ac_dec_image *im[2] = {ac_decoder_prepare(&dec, ann[0]), ac_decoder_prepare(&dec, ann[1])};
            enum { K = 3, H = 6, V = 11, L = 6, OUT = 2 * H + V + L + 1 };
            const int rows[2] = {2, 1}, prev[K] = {AC_START, 7, 5};
            float h[K * H], cc[K * H], joint[K * OUT], alone[K * OUT], scr[512];
            CHECK(ac_decoder_step_scratch(&c, K) <= 512);
            for (int i = 0; i < K * H; i++) h[i] = sinf(0.7f * i), cc[i] = cosf(0.3f * i);
            float *o = joint;
            ac_decoder_step_photos(&dec, 2, im, rows, prev, h, cc, o, o + K * H, o + 2 * K * H, o + K * (2 * H + V),
                                   o + K * (2 * H + V + L), scr);
            for (int p = 0, k0 = 0; p < 2; k0 += rows[p++]) { /* the same layout, filled photo by photo */
                const int n = rows[p];
                o = alone;
                ac_decoder_step(&dec, im[p], n, prev + k0, h + k0 * H, cc + k0 * H, o + k0 * H, o + K * H + k0 * H,
                                o + 2 * K * H + k0 * V, o + K * (2 * H + V) + k0 * L, o + K * (2 * H + V + L) + k0, scr);
            }
            CHECKF(!memcmp(joint, alone, sizeof joint), "%s x%d", ac_decoder_attention_name(s), heads);
            ac_dec_image_free((ac_dec_image *)im[0]), ac_dec_image_free((ac_dec_image *)im[1]);
            ac_decoder_free(&dec);
        }
}

int main(void) {
    RUN(test_step_is_a_distribution);
    RUN(test_step_matches_training_forward);
    RUN(test_gradcheck_no_dropout);
    RUN(test_gradcheck_dropout);
    RUN(test_gradcheck_shared_photos);
    RUN(test_gradcheck_scores);
    RUN(test_gradcheck_heads);
    RUN(test_gradcheck_masked);
    RUN(test_gradcheck_context_shift);
    RUN(test_pool_matches_single);
    RUN(test_torch_parity);
    RUN(test_torch_parity_masked);
    RUN(test_step_f16_same_bits);
    RUN(test_step_photos_scores);
    return TEST_EXIT();
}
