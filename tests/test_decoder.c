/* test_decoder.c: the decoder's inference step, its training gradients (finite differences against
 * an independent double-precision re-implementation) and its parity with PyTorch. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/decoder.h"
#include "attncap/safetensors.h"
#include "decoder_internal.h" /* the dropout mask hash: masks are inputs the reference must share */
#include "decoder_checks.h"
#include "test.h"

static ac_decoder_config tiny_cfg(void) {
    ac_decoder_config c = {.vocab = 11, .embed = 5, .hidden = 6, .att = 4, .dim = 7, .n_ann = 6, .grid_h = 2,
                           .grid_w = 3, .dropout = 0.0f, .lambda = 0.7f};
    return c;
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

static double sig(double x) { return 1.0 / (1.0 + exp(-x)); }

/* Hard attention (decoder.h) in ref_loss, when set: loc [N, heads] the location each time-major row's
 * head takes (-1: the caption is on the expected context), held fixed; the loss adds, per caption i with
 * locations, c.reinforce coef[i] log p(s_i | a) - c.entropy H(s_i). ce, logp [B] (out, may be NULL):
 * each caption's cross-entropy and log p(s_i | a). */
typedef struct {
    const int *loc;
    const double *coef;
    double *ce, *logp;
} ref_hard_t;
static const ref_hard_t *ref_hard;

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
    double ce = 0, pen = 0, sur = 0; /* sur: hard attention's terms */
    double *proj = malloc(sizeof(double) * L * A), *h = malloc(sizeof(double) * H), *cc = malloc(sizeof(double) * H),
           *hw = malloc(sizeof(double) * (A + H)), *al = malloc(sizeof(double) * nh * L), *x = malloc(sizeof(double) * (E + D + H)),
           *g = malloc(sizeof(double) * 4 * H), *o = malloc(sizeof(double) * E), *lg = malloc(sizeof(double) * V),
           *S = malloc(sizeof(double) * nh * L), *mean = malloc(sizeof(double) * D);
    for (int i = 0; ref_hard && i < b->B; i++) {
        if (ref_hard->ce) ref_hard->ce[i] = 0;
        if (ref_hard->logp) ref_hard->logp[i] = 0;
    }
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
            const int *loc = ref_hard ? ref_hard->loc + row * nh : NULL; /* NULL or loc[0] < 0: soft */
            if (loc && loc[0] < 0) loc = NULL;
            for (int j = 0; j < nh; j++) {
                double *aj = al + j * L;
                mx = -1e300, s = 0;
                for (int l = 0; l < n; l++) {
                    aj[l] = ref_score(c->attention, dk, hw + j * dk, proj + l * A + j * dk, we ? we + j * dk : NULL, lt);
                    mx = aj[l] > mx ? aj[l] : mx;
                }
                for (int l = 0; l < n; l++) s += (aj[l] = exp(aj[l] - mx));
                for (int l = 0; l < n; l++) aj[l] /= s, S[j * L + l] += aj[l];
                if (!loc) continue;
                double ent = 0;
                for (int l = 0; l < n; l++) ent -= aj[l] * log(aj[l]);
                sur += c->reinforce * ref_hard->coef[i] * log(aj[loc[j]]) - c->entropy * ent;
                if (ref_hard->logp) ref_hard->logp[i] += log(aj[loc[j]]);
            }
            double bp = bb[0];
            for (int k = 0; k < H; k++) bp += bw[k] * h[k];
            const double beta = sig(bp);
            for (int e = 0; e < E; e++) x[e] = emb[y * E + e];
            for (int d = 0; d < D; d++) {
                x[E + d] = 0;
                for (int l = 0; l < n; l++) x[E + d] += (loc ? l == loc[d / dv] : al[d / dv * L + l]) * a[l * D + d];
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
            if (ref_hard && ref_hard->ce) ref_hard->ce[i] += mx + log(s) - lg[tg];
        }
        for (int j = 0; j < nh; j++)
            for (int l = 0; l < n; l++) pen += (1 - S[j * L + l]) * (1 - S[j * L + l]);
    }
    free(proj), free(h), free(cc), free(hw), free(al), free(x), free(g), free(o), free(lg), free(S), free(mean);
    return (ce + c->lambda * pen + sur) / N;
}

/* Every parameter's gradient against central differences of the reference. A hard-attention config
 * holds the forward's locations fixed (read back from it) and the REINFORCE factors (ce_i - n_i b) at
 * their values, as decoder.h's objective says. masked: the photos bring 2, 6, 3 and 1 of the 6 cells
 * (3, 5, 3, 5 when shared), their padding NaN: the masked softmax must never read it. (A photo of 2
 * cells under cosine heads of 2 columns is ill-conditioned in float32 with or without masks: an
 * unmasked 1 x 2 grid misses 3e-4 by as much.) */
static void gradcheck_cfg(ac_decoder_config c, int shared, int masked) {
    const int score = c.attention, heads = c.heads;
    ref_hard = NULL;
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
    ac_dec_batch bt = {B, len, words, ST, annp, NULL, 1.25 /* hard: the baseline */, nv, NULL, NULL, NULL, NULL};
    ac_dec_work *w = ac_dec_work_new(&c, 2, 2); /* deliberately small: it must grow */
    CHECK(w);
    float *grad = malloc(sizeof(float) * dec.n_params);
    ac_dec_stats st;
    const uint64_t seed = 12345;
    CHECK(ac_decoder_forward_backward(&dec, w, &bt, 1, seed, grad, &st, &err) == 0);
    double *P = malloc(sizeof(double) * dec.n_params);
    for (size_t i = 0; i < dec.n_params; i++) P[i] = dec.params[i];
    ref_batch rb = {B, ST, len, words, annp, nv};
    static int loc[B * ST * 2];
    static double coef[B], ce[B];
    static ref_hard_t rh = {loc, coef, ce, NULL};
    int n_sampled = 0;
    if (c.attention_mode == AC_ATTENTION_HARD) {
        const int nh = heads > 1 ? heads : 1;
        memcpy(loc, ac_dec_work_locations(w), sizeof(int) * (size_t)st.ntok * nh);
        for (int i = 0; i < B; i++) n_sampled += loc[i * nh] >= 0; /* row i: caption i's first step */
        CHECKF(n_sampled > 0 && n_sampled < B && st.hard_captions == n_sampled, "%d of %d captions sampled", n_sampled, B);
        ref_hard = &rh;
        ref_loss(&c, P, &rb, 1, seed); /* the captions' cross-entropy */
        for (int i = 0; i < B; i++) coef[i] = ce[i] - len[i] * bt.baseline;
    }
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
    ref_hard = NULL;
    free(P);
    free(grad);
    ac_dec_work_free(w);
    ac_decoder_free(&dec);
}
static void gradcheck(float dropout, int shared, int score, int width, int heads, int masked) {
    ac_decoder_config c = tiny_cfg();
    c.dropout = dropout;
    c.attention = score;
    c.heads = heads;
    if (heads > 1) c.dim = 8; /* the heads split the channels */
    if (width) c.att = c.hidden = width;
    gradcheck_cfg(c, shared, masked);
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
    ac_decoder dec;
    ac_err err;
    char why[512];
    CHECK(ac_decoder_init(&dec, &c, 5, &err) == 0);
    for (size_t i = 0; i < dec.n_params; i++) dec.params[i] += 0.05f * (float)sin(2.0 + 1.3 * i);
    static const int nv_own[4] = {4, 6, 3, 3}; /* masked: the padding NaN, never read (the shift moves it too) */
    const int rc = context_shift_run(&dec, ref_loss, masked ? nv_own : NULL, why, sizeof why);
    ac_decoder_free(&dec);
    CHECKF(rc == 0, "%s x%d: %s", ac_decoder_attention_name(score), heads, why);
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

/* ---- hard attention ---- */

/* (1) The estimator's every term, the locations held fixed: the forward's samples (2 of the 4 captions
 * here; the others train on the expected context), with dropout, shared photos and 2 heads. */
static void test_hard_gradcheck(void) {
    for (int heads = 0; heads <= 2; heads += 2)
        for (int score = AC_ATTENTION_ADDITIVE; score <= AC_ATTENTION_SCALED_DOT; score += 2) {
            ac_decoder_config c = tiny_cfg();
            c.dropout = 0.3f, c.attention = score, c.heads = heads, c.dim = heads ? 8 : 7;
            c.attention_mode = AC_ATTENTION_HARD, c.reinforce = 0.7f, c.entropy = 0.3f, c.expected = 0.4f;
            gradcheck_cfg(c, 1, 0);
            gradcheck_cfg(c, 1, 1); /* masks: a padded cell (alpha 0) is never sampled */
        }
}

/* The expected objective E_s[-log p(y|s,a)] / N of ref_batch rb, every path s enumerated: the L^n
 * joint locations of its n rows (one head). */
static double hard_exact_objective(const ac_decoder_config *c, const double *P, const ref_batch *rb, int n) {
    int loc[8];
    double coef[2] = {0}, ce[2], logp[2], f = 0;
    ref_hard_t rh = {loc, coef, ce, logp};
    ref_hard = &rh;
    int paths = 1;
    for (int r = 0; r < n; r++) paths *= c->n_ann;
    for (int k = 0; k < paths; k++) {
        for (int r = 0, x = k; r < n; r++, x /= c->n_ann) loc[r] = x % c->n_ann;
        const double l = ref_loss(c, P, rb, 0, 0); /* (sum of ce) / N: no penalty, no entropy, coef 0 */
        f += exp(logp[0] + logp[1]) * l;
    }
    ref_hard = NULL;
    return f;
}

/* The worst, over the parameters, of |mean of M draws of dec's gradient - exact| / tolerance (see
 * below), and where (*wi, with that mean). */
static double hard_estimator_error(const ac_decoder *dec, ac_dec_work *w, const ac_dec_batch *bt, const double *exact,
                                   size_t *wi, double *wmean) {
    enum { M = 20000 };
    const size_t np = dec->n_params;
    float *g = malloc(sizeof(float) * np);
    double *sum = calloc(np, sizeof(double)), *sq = calloc(np, sizeof(double)), gmax = 0, worst = -1;
    ac_dec_stats st;
    ac_err err;
    for (int m = 0; m < M; m++) {
        if (ac_decoder_forward_backward(dec, w, bt, 1, 1000 + m, g, &st, &err)) break;
        for (size_t i = 0; i < np; i++) sum[i] += g[i], sq[i] += (double)g[i] * g[i];
    }
    for (size_t i = 0; i < np; i++) gmax = fmax(gmax, fabs(exact[i]));
    for (size_t i = 0; i < np; i++) {
        const double mean = sum[i] / M, se = sqrt(fmax(sq[i] / M - mean * mean, 0) / M);
        const double r = fabs(mean - exact[i]) / (5 * se + 1e-5 * gmax);
        if (r > worst) worst = r, *wi = i, *wmean = mean;
    }
    free(g), free(sum), free(sq);
    return worst;
}

/* (2) The estimator is unbiased: the mean of M draws of its gradient (lambda_r = 1, lambda_e = 0,
 * lambda = 0, a baseline b = 2 that is not the mean: unbiased for any b) against the exact gradient of
 * the expected objective, computed by enumerating the 4^3 joint locations of two captions of 2 and 1
 * steps on a 2x2 grid and central differences, for every parameter. With a chance e of the expected
 * context, the exact gradient is e grad(soft objective) + (1 - e) grad(expected objective).
 * Tolerance: per parameter, 5 standard errors of the mean (from the draws' own variance) + 1e-5 of the
 * largest gradient (float32 against double). For ~600 parameters with normal errors, the chance of a
 * false alarm is under 600 x 5.7e-7 = 3.4e-4 (and the draws are fixed by their seeds). The same check
 * must reject the estimator without its score-function term (lambda_r = 0: only the pathwise gradient). */
static void test_hard_unbiased(void) {
    ac_decoder_config c = tiny_cfg();
    c.n_ann = 4, c.grid_h = c.grid_w = 2, c.lambda = 0;
    c.attention_mode = AC_ATTENTION_HARD, c.reinforce = 1, c.entropy = 0;
    ac_decoder dec;
    ac_err err;
    CHECK(ac_decoder_init(&dec, &c, 17, &err) == 0);
    for (size_t i = 0; i < dec.n_params; i++) dec.params[i] += 0.3f * (float)sin(0.7 + 2.3 * i);
    for (int i = 0; i < c.hidden; i++) dec.att_we[i % c.att] *= 4; /* attention far from uniform */
    float ann[2][4 * 7];
    fill_ann(ann[0], 28, 41), fill_ann(ann[1], 28, 42);
    const float *annp[2] = {ann[0], ann[1]};
    const int len[2] = {2, 1}, words[2] = {6, 0};
    const size_t np = dec.n_params;
    double *P = malloc(sizeof(double) * np), *exact = malloc(sizeof(double) * 3 * np), *ghard = exact + np,
           *gsoft = ghard + np;
    for (size_t i = 0; i < np; i++) P[i] = dec.params[i];
    ref_batch rb = {2, 1, len, words, annp, NULL};
    for (size_t i = 0; i < np; i++) {
        const double keep = P[i], eps = 1e-5;
        double f[2], soft[2];
        for (int sg = 0; sg < 2; sg++) {
            P[i] = keep + (sg ? -eps : eps);
            f[sg] = hard_exact_objective(&c, P, &rb, 3);
            soft[sg] = ref_loss(&c, P, &rb, 0, 0); /* ref_hard NULL: the soft objective */
        }
        P[i] = keep;
        ghard[i] = (f[0] - f[1]) / (2 * eps), gsoft[i] = (soft[0] - soft[1]) / (2 * eps);
    }
    ac_dec_batch bt = {2, len, words, 1, annp, NULL, 2.0, NULL, NULL, NULL, NULL, NULL};
    ac_dec_work *w = ac_dec_work_new(&c, 2, 2);
    for (int k = 0; k < 2; k++) {
        const float e = k ? 0.5f : 0.0f;
        for (size_t i = 0; i < np; i++) exact[i] = (1 - e) * ghard[i] + e * gsoft[i];
        dec.cfg.expected = e;
        size_t wi;
        double mean;
        const double r = hard_estimator_error(&dec, w, &bt, exact, &wi, &mean);
        CHECKF(r <= 1, "e = %g: param %zu: mean of the draws %.7g, exact %.7g (%.2f x the tolerance)", e, wi, mean,
               exact[wi], r);
        dec.cfg.reinforce = 0;
        const double r0 = hard_estimator_error(&dec, w, &bt, exact, &wi, &mean);
        dec.cfg.reinforce = 1;
        if (getenv("GC_VERBOSE")) printf("# hard e = %g: worst |mean - exact| / tolerance %.3g, without REINFORCE %.3g\n", e, r, r0);
        CHECKF(r0 > 3, "e = %g: the estimator without REINFORCE passes too (%.2f): the check has no power", e, r0);
    }
    free(P), free(exact);
    ac_dec_work_free(w);
    ac_decoder_free(&dec);
}

/* The inference step (beam search's) and the batched training forward are separate code: they must
 * agree on the log-probabilities of a caption fed word by word. Hard attention: both take the most
 * likely location, and the step reports it as one lit cell, the most likely one of the expected
 * context's attention. */
static void step_matches_training_forward(int score, int heads, int mode) {
    ac_decoder_config c = tiny_cfg();
    c.dropout = 0.5f; /* must be ignored with train = 0 */
    c.attention = score;
    c.heads = heads;
    c.attention_mode = mode, c.expected = 0.5f; /* with train = 0, no caption is on the expected context */
    if (heads > 1) c.dim = 8;
    ac_decoder dec;
    ac_err err;
    CHECK(ac_decoder_init(&dec, &c, 3, &err) == 0);
    float ann[2][48];
    fill_ann(ann[0], 6 * c.dim, 5), fill_ann(ann[1], 6 * c.dim, 9);
    const float *annp[2] = {ann[0], ann[1]};
    const int len[2] = {4, 2}, words[2 * 3] = {5, 6, 7, 8, 0, 0};
    ac_dec_batch bt = {2, len, words, 3, annp, NULL, 0, NULL, NULL, NULL, NULL, NULL};
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
            if (mode == AC_ATTENTION_HARD && !heads) {
                float h3[6], c3[6], lp3[11], al3[6];
                CHECK(ac_decoder_hard_context(&dec, "expected", &err) == 0);
                ac_decoder_step(&dec, im, 1, &prev, h, cc, h3, c3, lp3, al3, NULL, scr);
                CHECK(ac_decoder_hard_context(&dec, "argmax", &err) == 0);
                int best = 0;
                for (int l = 1; l < 6; l++) best = al3[l] > al3[best] ? l : best;
                for (int l = 0; l < 6; l++) CHECKF(al[l] == (l == best), "step %d: alpha[%d] = %g, lit %d", t, l, al[l], best);
            }
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
/* A copy model: the inference step's log p of each fed word (the copy mixture over the vocabulary's
 * log-softmax, copy.c) sums to the training forward's cross-entropy, and each step's row is a
 * distribution; the regions' categories set on the prepared photo are what the batch gives. */
static void step_matches_training_copy(int kind, int absent, int objects) {
    ac_decoder_config c = tiny_cfg();
    c.dropout = 0.5f, c.grid_h = 2, c.grid_w = 2, c.regions = 2, c.copy = kind, c.region_scale = 60, c.absent = absent;
    c.object_init = objects;
    ac_decoder dec;
    ac_err err;
    CHECK(ac_decoder_init(&dec, &c, 3, &err) == 0);
    if (kind == 1) dec.copy_b[0] = 0.5f; /* a gate well open */
    else dec.ptr_bs[0] = -0.5f;          /* the sentinel low: the same */
    if (absent) dec.absent_b[2] = -1.5f, dec.absent_b[5] = 0.7f, dec.absent_b[9] = -0.4f; /* each unseen in one photo */
    for (int k = 0; objects && k < AC_COPY_CATEGORIES * c.hidden; k++) /* zero at initialisation: make them count */
        dec.obj_h[k] = 0.8f * (float)sin(0.7 * k), dec.obj_c[k] = 0.8f * (float)cos(1.3 * k);
    const short word_cat[11] = {-1, -1, -1, -1, 2, 2, 5, -1, 5, 9, -1};
    CHECK(ac_decoder_set_copy_words(&dec, word_cat, &err) == 0);
    float ann[2][48];
    fill_ann(ann[0], 6 * c.dim, 5), fill_ann(ann[1], 6 * c.dim, 9);
    const float *annp[2] = {ann[0], ann[1]};
    const int len[2] = {5, 3}, words[2 * 4] = {5, 6, 4, 8, 9, 4, 0, 0}, n_valid[2] = {6, 5}, n_regions[2] = {2, 1};
    const unsigned char cat0[2] = {2, 5}, cat1[1] = {9}, *cats[2] = {cat0, cat1};
    const float score0[2] = {0.7f, 0.4f}, score1[1] = {0.9f}, *scores[2] = {score0, score1};
    ac_dec_batch bt = {2, len, words, 4, annp, NULL, 0, n_valid, n_regions, cats, scores, NULL};
    ac_dec_work *w = ac_dec_work_new(&c, 2, 5);
    ac_dec_stats st;
    CHECK(ac_decoder_forward_backward(&dec, w, &bt, 0, 1, NULL, &st, &err) == 0);
    double ce = 0;
    for (int i = 0; i < 2; i++) {
        ac_dec_image *im = ac_decoder_prepare_regions(&dec, ann[i], 2, 2, n_regions[i]);
        const int ci[2] = {cats[i][0], i ? 0 : cats[i][1]};
        ac_dec_image_set_categories(im, ci, scores[i]);
        float st0[12], st1[12], lp[11], al[6], scr[256];
        CHECK(ac_decoder_advance_scratch(&c, 1, 8) <= 256);
        ac_decoder_start(&dec, im, st0);
        const ac_dec_image *imp = im;
        const int one = 1;
        for (int t = 0; t < len[i]; t++) {
            const int prev = t ? words[i * 4 + t - 1] : AC_START, y = t < len[i] - 1 ? words[i * 4 + t] : AC_END;
            ac_decoder_advance(&dec, 1, &imp, &one, t, &prev, st0, NULL, st1, NULL, lp, al, NULL, scr);
            double s = 0;
            for (int v = 0; v < 11; v++) s += exp(lp[v]);
            CHECK_NEAR(s, 1.0, 1e-5);
            ce -= lp[y];
            memcpy(st0, st1, sizeof st0);
        }
        ac_dec_image_free(im);
    }
    CHECKF(fabs(ce - st.ce_sum) <= 1e-4 * st.ce_sum, "copy %d absent %d objects %d: steps %.9g, training forward %.9g",
           kind, absent, objects, ce, st.ce_sum);
    ac_dec_work_free(w);
    ac_decoder_free(&dec);
}
/* Caption weights (self-critical training, train.h): the weighted batch's loss and gradient are
 * the captions' own, each alone in a batch, times its weight (and its share of the tokens), on a
 * pointer model with its priors (the copy path's per-token gradient and the switch's supervision
 * scale with it); the pool's shards carry the weights; weights of 1 are no weights. */
static void test_caption_weights(void) {
    ac_decoder_config c = tiny_cfg();
    c.dropout = 0, c.lambda = 0, c.grid_h = 2, c.grid_w = 2, c.regions = 2, c.copy = 2, c.region_scale = 60, c.absent = 1;
    ac_decoder dec;
    ac_err err;
    CHECK(ac_decoder_init(&dec, &c, 7, &err) == 0);
    dec.ptr_bs[0] = -0.5f, dec.absent_b[5] = -0.8f;
    const short word_cat[11] = {-1, -1, -1, -1, 2, 2, 5, -1, 5, 9, -1};
    CHECK(ac_decoder_set_copy_words(&dec, word_cat, &err) == 0);
    float ann[2][48];
    fill_ann(ann[0], 6 * c.dim, 4), fill_ann(ann[1], 6 * c.dim, 8);
    enum { B = 3, ST = 4 };
    const float *annp[B] = {ann[0], ann[1], ann[0]};
    const int len[B] = {5, 4, 2}, words[B * ST] = {5, 6, 4, 8, 9, 4, 6, 0, 4, 0, 0, 0}, n_valid[B] = {6, 5, 6},
              n_regions[B] = {2, 1, 2};
    const unsigned char cat0[2] = {2, 5}, cat1[1] = {9}, *cats[B] = {cat0, cat1, cat0};
    const float weight[B] = {0.7f, -1.3f, 2.0f}, ones[B] = {1, 1, 1};
    ac_dec_batch bt = {B, len, words, ST, annp, NULL, 0, n_valid, n_regions, cats, NULL, weight};
    const size_t np = dec.n_params;
    float *gw = malloc(sizeof(float) * np), *g1 = malloc(sizeof(float) * np), *gsum = calloc(np, sizeof(float));
    ac_dec_work *w = ac_dec_work_new(&c, B, 6);
    ac_dec_pool *pool = ac_dec_pool_new(&c, 2, 2, B, 6);
    CHECK(gw && g1 && gsum && w && pool);
    ac_dec_stats st, s1, sp;
    CHECKF(ac_decoder_forward_backward(&dec, w, &bt, 0, 0, gw, &st, &err) == 0, "%s", err.msg);
    double loss = 0;
    for (int b = 0; b < B; b++) {
        ac_dec_batch one = {1, len + b, words + b * ST, ST, annp + b, NULL, 0, n_valid + b, n_regions + b, cats + b, NULL, NULL};
        CHECKF(ac_decoder_forward_backward(&dec, w, &one, 0, 0, g1, &s1, &err) == 0, "%s", err.msg);
        const double k = (double)weight[b] * s1.ntok / st.ntok;
        loss += k * s1.loss;
        for (size_t i = 0; i < np; i++) gsum[i] += (float)(k * g1[i]);
    }
    double worst = 0, big = 0;
    for (size_t i = 0; i < np; i++) worst = fmax(worst, fabs(gw[i] - gsum[i])), big = fmax(big, fabs(gsum[i]));
    CHECKF(fabs(st.loss - loss) <= 1e-5 * fabs(loss) && big > 0 && worst <= 1e-5 * big,
           "weighted loss %.9g, captions alone %.9g; gradient off by %g (largest %g)", st.loss, loss, worst, big);
    CHECKF(ac_dec_pool_forward_backward(pool, &dec, &bt, 0, 0, g1, &sp, &err) == 0, "%s", err.msg);
    worst = 0;
    for (size_t i = 0; i < np; i++) worst = fmax(worst, fabs(g1[i] - gw[i]));
    CHECKF(fabs(sp.loss - st.loss) <= 1e-6 * fabs(st.loss) && worst <= 1e-5 * big, "pool: loss %.9g against %.9g, gradient off by %g",
           sp.loss, st.loss, worst);
    bt.weight = ones;
    CHECK(ac_decoder_forward_backward(&dec, w, &bt, 0, 0, gw, &st, &err) == 0);
    bt.weight = NULL;
    CHECK(ac_decoder_forward_backward(&dec, w, &bt, 0, 0, g1, &s1, &err) == 0);
    CHECK(st.loss == s1.loss && !memcmp(gw, g1, sizeof(float) * np));
    const float nan_weight[B] = {1, NAN, 1};
    bt.weight = nan_weight;
    CHECK(ac_decoder_forward_backward(&dec, w, &bt, 0, 0, gw, &st, &err) == -1 && strstr(err.msg, "weight"));
    free(gw), free(g1), free(gsum);
    ac_dec_pool_free(pool);
    ac_dec_work_free(w);
    ac_decoder_free(&dec);
}
static void test_step_matches_training_copy(void) { step_matches_training_copy(1, 0, 0); }
static void test_step_matches_training_pointer(void) {
    step_matches_training_copy(2, 0, 0);
    step_matches_training_copy(2, 1, 0); /* config.absent: the step adds the priors as the training forward does */
    step_matches_training_copy(2, 1, 1); /* config.object_init: the step starts from the regions as training does */
}

/* ac_decoder_copy_shares: a word no region's category names was never copied; with the gate shut
 * nothing was, with it wide open every word of a present category was (entirely). */
static void copy_shares(int kind) {
    ac_decoder_config c = tiny_cfg();
    c.grid_h = 2, c.grid_w = 2, c.regions = 2, c.copy = kind, c.region_scale = 60;
    ac_decoder dec;
    ac_err err;
    CHECK(ac_decoder_init(&dec, &c, 5, &err) == 0);
    const short word_cat[11] = {-1, -1, -1, -1, 2, 2, 5, -1, 5, 9, -1};
    CHECK(ac_decoder_set_copy_words(&dec, word_cat, &err) == 0);
    float ann[48];
    fill_ann(ann, 6 * c.dim, 7);
    ac_dec_image *im = ac_decoder_prepare_regions(&dec, ann, 2, 2, 2);
    const int cat[2] = {2, 9}, words[5] = {4, 7, 9, 6, 5};
    float share[6];
    CHECK(ac_decoder_copy_shares(&dec, im, words, 5, share, NULL, &err) == 0);
    for (int k = 0; k < 6; k++) CHECKF(share[k] == 0, "no categories set: word %d share %g", k, share[k]);
    ac_dec_image_set_categories(im, cat, NULL);
    const float gates[3] = {-30, 0, 30};
    for (int g = 0; g < 3; g++) {
        if (kind == 1) dec.copy_b[0] = gates[g];
        else dec.ptr_bs[0] = -gates[g]; /* the sentinel against the regions */
        CHECK(ac_decoder_copy_shares(&dec, im, words, 5, share, NULL, &err) == 0);
        for (int k = 0; k <= 5; k++) {
            const int w = k < 5 ? words[k] : AC_END, present = w < 11 && (word_cat[w] == 2 || word_cat[w] == 9);
            if (!present) CHECKF(fabsf(share[k]) < 1e-5f, "gate %g: word %d (no region) share %g", gates[g], w, share[k]);
            else if (g == 0) CHECKF(share[k] < 1e-5f, "gate shut: word %d share %g", w, share[k]);
            else if (g == 2) CHECKF(share[k] > 1 - 1e-4f, "gate open: word %d share %g", w, share[k]);
            else CHECKF(share[k] > 0.01f && share[k] < 0.99f, "gate 0.5: word %d share %g", w, share[k]);
        }
    }
    ac_dec_image_free(im);
    ac_decoder_free(&dec);
}
static void test_copy_shares(void) { copy_shares(1); }
static void test_pointer_shares(void) { copy_shares(2); }

static void test_step_matches_training_forward(void) {
    for (int s = 0; s < AC_ATTENTION_COUNT; s++)
        for (int mode = 0; mode < AC_ATTENTION_MODE_COUNT; mode++)
            step_matches_training_forward(s, 0, mode), step_matches_training_forward(s, 2, mode);
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
    ac_dec_batch bt = {B, len, words, ST, annp, NULL, 0, NULL, NULL, NULL, NULL, NULL};
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
    char path[4096], why[512];
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
    ac_decoder_config c;
    CHECKF(parity_run(path, &c, masked, 1e-4, why, sizeof why) == 0, "%s x%d: %s", ac_decoder_attention_name(score), heads, why);
    CHECKF(c.attention == score && c.heads == heads && c.decoder == AC_DECODER_LSTM, "%s: config says %s, %d heads",
           path, ac_decoder_attention_name(c.attention), c.heads);
}
static void test_torch_parity(void) {
    for (int s = 0; s < AC_ATTENTION_COUNT; s++) torch_parity(s, 0, 0);
    torch_parity(AC_ATTENTION_ADDITIVE, 2, 0), torch_parity(AC_ATTENTION_SCALED_DOT, 2, 0);
}
/* The same with masks (tools/torch_decoder.py --mask: photos of 2, 6, 3, 5 and 1 of the 6 cells, their
 * padding NaN; PyTorch masks the scores with -inf), every score function and two with 2 heads. */
/* Hard attention's estimator (tools/torch_decoder.py --hard): the sampled locations, the REINFORCE
 * surrogate with its baseline and the entropy bonus, differentiated by PyTorch's autograd, against
 * our hand-written backward (hard_attention.c); one head, and two heads over masked photos. */
static void test_torch_parity_hard(void) {
    const char *root = getenv("ATTNCAP_ROOT");
    const char *names[2] = {"decoder_parity_hard", "decoder_parity_hard_mask_heads2"};
    for (int k = 0; k < 2; k++) {
        char path[4096], why[512];
        ac_decoder_config c;
        snprintf(path, sizeof path, "%s/tests/fixtures/%s.safetensors", root ? root : ".", names[k]);
        CHECKF(parity_run(path, &c, k == 1, 1e-4, why, sizeof why) == 0, "%s: %s", names[k], why);
        CHECK(c.attention_mode == AC_ATTENTION_HARD && c.reinforce > 0 && c.entropy > 0);
    }
}

static void test_torch_parity_masked(void) {
    for (int s = 0; s < AC_ATTENTION_COUNT; s++) torch_parity(s, 0, 1);
    torch_parity(AC_ATTENTION_ADDITIVE, 2, 1), torch_parity(AC_ATTENTION_COSINE, 2, 1);
}
/* Photos of 1, 2, 1, 3 and 1 of the 6 cells (tools/torch_decoder.py --sparse): fewer than half the
 * batch's rows are used, so the products with W_a run photo by photo over their own rows (the path of
 * captions without photos given pseudo-regions, train_regions.c). */
static void test_torch_parity_sparse(void) {
    char path[4096], why[512];
    const char *root = getenv("ATTNCAP_ROOT");
    ac_decoder_config c;
    snprintf(path, sizeof path, "%s/tests/fixtures/decoder_parity_sparse_additive.safetensors", root ? root : ".");
    CHECKF(parity_run(path, &c, 1, 1e-4, why, sizeof why) == 0, "sparse: %s", why);
}

/* A copy model's fixture (tests/fixtures/decoder_parity_NAME.safetensors): its config.copy is `copy`,
 * its config.absent `absent`, its config.object_init `objects`. */
static void parity_copy_fixture(const char *name, int copy, int absent, int objects) {
    char path[4096], why[512];
    const char *root = getenv("ATTNCAP_ROOT");
    ac_decoder_config c;
    snprintf(path, sizeof path, "%s/tests/fixtures/decoder_parity_%s.safetensors", root ? root : ".", name);
    CHECKF(parity_run(path, &c, 1, 1e-4, why, sizeof why) == 0, "%s: %s", name, why);
    CHECK(c.copy == copy && c.regions == 2 && c.absent == absent && c.object_init == objects);
}

/* The copy path (config.copy; tools/torch_decoder.py --copy): regions of a category named twice, of one
 * no word names, captions without regions, targets inside and outside the word sets; the loss, logits
 * and every gradient (the gate's and, through pi, the attention's) against PyTorch's autograd. */
static void test_torch_parity_copy(void) { parity_copy_fixture("copy", 1, 0, 0); }

/* The pointer (config.copy 2; tools/torch_decoder.py --pointer): the same batch, the regions scored
 * against the sentinel in one softmax there (here: the log-sum-exp against the sentinel's score and
 * the renormalised regions); every gradient, the pointer's own and through the keys and queries into
 * W_a, b_a and W_h, against autograd. */
static void test_torch_parity_pointer(void) { parity_copy_fixture("pointer", 2, 0, 0); }

/* config.absent (tools/torch_decoder.py --pointer --absent): the pointer's batch with the priors of the
 * words of categories no region of the photo shows (a caption without regions: every category) added
 * to the logits; their gradient, and every other, against autograd. */
static void test_torch_parity_absent(void) { parity_copy_fixture("pointer_absent", 2, 1, 0); }

/* config.object_init (tools/torch_decoder.py --pointer --absent --object-init): the absent fixture's
 * batch with each caption's regions' best score per category in the initial state (a category twice in
 * a photo at two scores, one no word names, a caption without regions); every gradient, obj_h and obj_c
 * included, against autograd. */
static void test_torch_parity_objects(void) { parity_copy_fixture("pointer_objects", 2, 1, 1); }

/* config.imagenet_words (tools/torch_decoder.py --pointer --absent --object-init --imagenet): the same
 * batch with two categories moved past COCO's 80 (ImageNet words 203, which words name, and 180, which
 * none does): the copy names them as any category, absent priors and object init leave them out;
 * every gradient against autograd. With categories kept in a signed byte, 203 read as -53 fails. */
static void test_torch_parity_imagenet(void) {
    parity_copy_fixture("pointer_imagenet", 2, 1, 1);
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
    /* one value of 13,440 that float16 cannot hold (in the middle of the second block of 1,024 the
     * test takes at once, and in the tail) keeps the float32 path */
    for (int at = 1500; at <= 13439; at += 13439 - 1500) {
        const float keep = b.lstm_w[at];
        b.lstm_w[at] = nextafterf(keep, 1.0f);
        CHECKF(ac_decoder_use_f16(&b) == 0 && !b.lstm_w16, "lstm_w[%d] is not float16", at);
        b.lstm_w[at] = keep;
    }
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
        SKIP("no float16 kernel on this CPU build (AVX-512 BW/VL, or AVX2 with FMA and F16C)");
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
    RUN(test_hard_gradcheck);
    RUN(test_hard_unbiased);
    RUN(test_torch_parity_masked);
    RUN(test_torch_parity_sparse);
    RUN(test_torch_parity_copy);
    RUN(test_step_matches_training_copy);
    RUN(test_caption_weights);
    RUN(test_copy_shares);
    RUN(test_torch_parity_pointer);
    RUN(test_torch_parity_absent);
    RUN(test_torch_parity_objects);
    RUN(test_torch_parity_imagenet);
    RUN(test_step_matches_training_pointer);
    RUN(test_pointer_shares);
    RUN(test_torch_parity_hard);
    RUN(test_step_f16_same_bits);
    RUN(test_step_photos_scores);
    return TEST_EXIT();
}
