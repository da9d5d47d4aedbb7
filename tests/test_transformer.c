/* test_transformer.c: the transformer decoder: its training gradients (finite differences against an
 * independent double-precision re-implementation, written here per caption from decoder.h's equations),
 * its parity with PyTorch (tools/torch_transformer.py), the inference step with its key/value cache
 * against the full-sequence forward, and the step's rows against a step of each photo alone. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/decoder.h"
#include "attncap/safetensors.h"
#include "decoder_internal.h" /* the dropout mask hash: masks are inputs the reference must share */
#include "decoder_checks.h"
#include "test.h"

static ac_decoder_config tf_cfg(void) {
    ac_decoder_config c = {.vocab = 11, .embed = 8, .hidden = 12, .att = 8, .dim = 7, .n_ann = 6, .grid_h = 2,
                           .grid_w = 3, .dropout = 0.0f, .lambda = 0.0f, .attention = AC_ATTENTION_SCALED_DOT,
                           .heads = 2, .decoder = AC_DECODER_TRANSFORMER, .layers = 2};
    return c;
}

/* ---- the reference: plain loops per caption, double precision ---- */

static const double *T_(const ac_decoder_config *c, const double *P, const char *name) {
    ac_dec_tensor t[AC_DEC_MAX_TENSORS];
    const int n = ac_decoder_tensors(c, t, NULL);
    for (int i = 0; i < n; i++)
        if (!strcmp(t[i].name, name)) return P + t[i].offset;
    abort();
}

static void ref_ln(const double *x, int d, const double *g, const double *b, double *y) {
    double m = 0, v = 0;
    for (int j = 0; j < d; j++) m += x[j];
    m /= d;
    for (int j = 0; j < d; j++) v += (x[j] - m) * (x[j] - m);
    v /= d;
    for (int j = 0; j < d; j++) y[j] = (x[j] - m) / sqrt(v + 1e-5) * g[j] + b[j];
}

/* y [m] = b + x [n] W [n, m] */
static void ref_lin(const double *x, int n, const double *W, const double *b, int m, double *y) {
    for (int j = 0; j < m; j++) {
        y[j] = b ? b[j] : 0;
        for (int k = 0; k < n; k++) y[j] += x[k] * W[k * m + j];
    }
}

/* The site's mask for element (row r, column j) of a d-wide activation. */
static double ref_mask(uint64_t seed, int site, int r, int j, int d, double p) {
    if (p <= 0) return 1;
    const uint64_t s = ac_mix64(seed + 0xD6E8FEB86659FD93ull * (uint64_t)(site + 1));
    return ac_dropout_keep(s, (uint64_t)r * d + j, (float)p) ? 1 / (1 - p) : 0;
}

/* The loss; logits [N, V] caption-major if not NULL. */
static double ref_loss(const ac_decoder_config *c, const double *P, const ref_batch *b, int train, uint64_t seed,
                       double *logits_out) {
    const int d = c->embed, F = c->hidden, V = c->vocab, D = c->dim, L = c->n_ann, Y = c->layers;
    const int nh = c->heads > 1 ? c->heads : 1, dh = d / nh;
    const double p = train ? c->dropout : 0;
    const double *emb = T_(c, P, "emb"), *mw = T_(c, P, "tf_mem_w"), *mb = T_(c, P, "tf_mem_b"),
                 *mg = T_(c, P, "tf_mem_ln_g"), *mbn = T_(c, P, "tf_mem_ln_b"), *l1g = T_(c, P, "tf_ln1_g"),
                 *l1b = T_(c, P, "tf_ln1_b"), *wqkv = T_(c, P, "tf_self_wqkv"), *bqkv = T_(c, P, "tf_self_bqkv"),
                 *wo = T_(c, P, "tf_self_wo"), *bo = T_(c, P, "tf_self_bo"), *l2g = T_(c, P, "tf_ln2_g"),
                 *l2b = T_(c, P, "tf_ln2_b"), *cwq = T_(c, P, "tf_cross_wq"), *cbq = T_(c, P, "tf_cross_bq"),
                 *cwkv = T_(c, P, "tf_cross_wkv"), *cbkv = T_(c, P, "tf_cross_bkv"), *cwo = T_(c, P, "tf_cross_wo"),
                 *cbo = T_(c, P, "tf_cross_bo"), *l3g = T_(c, P, "tf_ln3_g"), *l3b = T_(c, P, "tf_ln3_b"),
                 *w1 = T_(c, P, "tf_ff_w1"), *b1 = T_(c, P, "tf_ff_b1"), *w2 = T_(c, P, "tf_ff_w2"),
                 *b2 = T_(c, P, "tf_ff_b2"), *lfg = T_(c, P, "tf_lnf_g"), *lfb = T_(c, P, "tf_lnf_b"),
                 *ow = T_(c, P, "out_lo"), *ob = T_(c, P, "out_bo");
    enum { MT = 16 };
    double mem[16][16], kv[16][32], x[MT][16], u[MT][16], qkv[MT][48], o[16], z[16], f[64], s[64], lg[64], pre[16];
    int N = 0, row0 = 0;
    for (int i = 0; i < b->B; i++) N += b->len[i];
    double ce = 0;
    for (int i = 0; i < b->B; i++) {
        const int n = b->len[i];
        const float *a = b->ann[i];
        for (int l = 0; l < L; l++) {
            for (int j = 0; j < d; j++) {
                pre[j] = mb[j];
                for (int k = 0; k < D; k++) pre[j] += a[l * D + k] * mw[k * d + j];
            }
            ref_ln(pre, d, mg, mbn, mem[l]);
        }
        for (int t = 0; t < n; t++) {
            const int y = t ? b->words[i * b->stride + t - 1] : AC_START;
            for (int j = 0; j < d; j++) {
                const double ang = t / pow(10000.0, 2.0 * (j / 2) / d);
                x[t][j] = (sqrt((double)d) * emb[y * d + j] + (j % 2 ? cos(ang) : sin(ang))) *
                          ref_mask(seed, 0, row0 + t, j, d, p);
            }
        }
        for (int ly = 0; ly < Y; ly++) {
            for (int l = 0; l < L; l++) ref_lin(mem[l], d, cwkv + ly * d * 2 * d, cbkv + ly * 2 * d, 2 * d, kv[l]);
            for (int t = 0; t < n; t++) {
                ref_ln(x[t], d, l1g + ly * d, l1b + ly * d, u[t]);
                ref_lin(u[t], d, wqkv + ly * d * 3 * d, bqkv + ly * 3 * d, 3 * d, qkv[t]);
            }
            for (int t = 0; t < n; t++) { /* position t sees 0..t */
                for (int h = 0; h < nh; h++) {
                    double mx = -1e300, sum = 0;
                    for (int j = 0; j <= t; j++) {
                        s[j] = 0;
                        for (int k = 0; k < dh; k++) s[j] += qkv[t][h * dh + k] * qkv[j][d + h * dh + k];
                        s[j] /= sqrt((double)dh);
                        mx = s[j] > mx ? s[j] : mx;
                    }
                    for (int j = 0; j <= t; j++) sum += (s[j] = exp(s[j] - mx));
                    for (int k = 0; k < dh; k++) {
                        o[h * dh + k] = 0;
                        for (int j = 0; j <= t; j++) o[h * dh + k] += s[j] / sum * qkv[j][2 * d + h * dh + k];
                    }
                }
                ref_lin(o, d, wo + ly * d * d, bo + ly * d, d, z);
                for (int j = 0; j < d; j++) u[t][j] = z[j]; /* the branch, added below once every t has read x */
            }
            for (int t = 0; t < n; t++)
                for (int j = 0; j < d; j++) x[t][j] += u[t][j] * ref_mask(seed, 1 + 3 * ly, row0 + t, j, d, p);
            for (int t = 0; t < n; t++) {
                double q[16];
                ref_ln(x[t], d, l2g + ly * d, l2b + ly * d, u[t]);
                ref_lin(u[t], d, cwq + ly * d * d, cbq + ly * d, d, q);
                for (int h = 0; h < nh; h++) {
                    double mx = -1e300, sum = 0;
                    for (int l = 0; l < L; l++) {
                        s[l] = 0;
                        for (int k = 0; k < dh; k++) s[l] += q[h * dh + k] * kv[l][h * dh + k];
                        s[l] /= sqrt((double)dh);
                        mx = s[l] > mx ? s[l] : mx;
                    }
                    for (int l = 0; l < L; l++) sum += (s[l] = exp(s[l] - mx));
                    for (int k = 0; k < dh; k++) {
                        o[h * dh + k] = 0;
                        for (int l = 0; l < L; l++) o[h * dh + k] += s[l] / sum * kv[l][d + h * dh + k];
                    }
                }
                ref_lin(o, d, cwo + ly * d * d, cbo + ly * d, d, z);
                for (int j = 0; j < d; j++) x[t][j] += z[j] * ref_mask(seed, 2 + 3 * ly, row0 + t, j, d, p);
                ref_ln(x[t], d, l3g + ly * d, l3b + ly * d, u[t]);
                ref_lin(u[t], d, w1 + ly * d * F, b1 + ly * F, F, f);
                for (int k = 0; k < F; k++) f[k] = f[k] > 0 ? f[k] : 0;
                ref_lin(f, F, w2 + ly * F * d, b2 + ly * d, d, z);
                for (int j = 0; j < d; j++) x[t][j] += z[j] * ref_mask(seed, 3 + 3 * ly, row0 + t, j, d, p);
            }
        }
        for (int t = 0; t < n; t++) {
            const int tg = t < n - 1 ? b->words[i * b->stride + t] : AC_END;
            ref_ln(x[t], d, lfg, lfb, u[t]);
            ref_lin(u[t], d, ow, ob, V, lg);
            double mx = -1e300, sum = 0;
            for (int v = 0; v < V; v++) mx = lg[v] > mx ? lg[v] : mx;
            for (int v = 0; v < V; v++) sum += exp(lg[v] - mx);
            ce += mx + log(sum) - lg[tg];
            if (logits_out) memcpy(logits_out + (size_t)(row0 + t) * V, lg, sizeof(double) * V);
        }
        row0 += n;
    }
    return ce / N;
}

/* ---- gradients ---- */

enum { B = 4, ST = 6 };

/* A decoder away from its initial point (biases, gains not 1), so that every gradient is exercised. */
static int make_decoder(ac_decoder *dec, const ac_decoder_config *c, unsigned seed) {
    ac_err err;
    if (ac_decoder_init(dec, c, seed, &err)) return printf("# %s\n", err.msg), -1;
    for (size_t i = 0; i < dec->n_params; i++) dec->params[i] += 0.1f * (float)sin(1.0 + 3.7 * i);
    return 0;
}

static void gradcheck(float dropout, int shared) {
    ac_decoder_config c = tf_cfg();
    c.dropout = dropout;
    ac_decoder dec;
    CHECK(make_decoder(&dec, &c, 7) == 0);
    static float ann[B][6 * 7];
    const float *annp[B];
    for (int i = 0; i < B; i++) fill_ann(ann[i], 6 * c.dim, 11 + i), annp[i] = ann[i];
    if (shared) annp[2] = annp[0], annp[3] = annp[1]; /* two photos with two captions each */
    const int len[B] = {6, 4, 4, 2};
    int words[B * ST];
    for (int k = 0; k < B * ST; k++) words[k] = 4 + (k * 5) % 7;
    ac_dec_batch bt = {B, len, words, ST, annp, NULL, 0, NULL, NULL, NULL, NULL, NULL};
    ac_dec_work *w = ac_dec_work_new(&c, 2, 2);
    CHECK(w);
    float *grad = malloc(sizeof(float) * dec.n_params);
    ac_dec_stats st;
    ac_err err;
    const uint64_t seed = 4242;
    CHECKF(ac_decoder_forward_backward(&dec, w, &bt, 1, seed, grad, &st, &err) == 0, "%s", err.msg);
    double *P = malloc(sizeof(double) * dec.n_params);
    for (size_t i = 0; i < dec.n_params; i++) P[i] = dec.params[i];
    ref_batch rb = {B, ST, len, words, annp, NULL};
    const double l0 = ref_loss(&c, P, &rb, 1, seed, NULL);
    CHECK_NEAR(st.loss, l0, 1e-5 * fabs(l0));
    ac_dec_tensor t[AC_DEC_MAX_TENSORS];
    const int nt = ac_decoder_tensors(&c, t, NULL);
    const double eps = 1e-5;
    for (int k = 0; k < nt; k++) {
        const size_t n = (size_t)t[k].rows * t[k].cols;
        double worst = 0, gmax = 0, wa = 0, wn = 0;
        size_t wi = 0;
        for (size_t j = 0; j < n; j++) gmax = fmax(gmax, fabs(grad[t[k].offset + j]));
        for (size_t j = 0; j < n; j++) {
            double *q = P + t[k].offset + j, keep = *q;
            *q = keep + eps;
            const double lp = ref_loss(&c, P, &rb, 1, seed, NULL);
            *q = keep - eps;
            const double lm = ref_loss(&c, P, &rb, 1, seed, NULL);
            *q = keep;
            const double num = (lp - lm) / (2 * eps), an = grad[t[k].offset + j];
            const double e = fabs(num - an) / (fmax(fabs(num), 1e-2 * gmax) + 1e-7);
            if (e > worst) worst = e, wi = j, wa = an, wn = num;
        }
        if (getenv("GC_VERBOSE")) printf("# %-14s worst rel %.2e gmax %.2e\n", t[k].name, worst, gmax);
        CHECKF(gmax > 0, "%s: all-zero gradient", t[k].name);
        CHECKF(worst < 3e-4, "dropout %g shared %d: %s[%zu]: analytic %.9g, numeric %.9g (rel %.3g)", dropout, shared,
               t[k].name, wi, wa, wn, worst);
    }
    free(P), free(grad);
    ac_dec_work_free(w);
    ac_decoder_free(&dec);
}
static void test_gradcheck_no_dropout(void) { gradcheck(0.0f, 0); }
static void test_gradcheck_dropout_shared_photos(void) { gradcheck(0.3f, 1); }

static double ref_objective(const ac_decoder_config *c, const double *P, const ref_batch *b, int train, uint64_t seed) {
    return ref_loss(c, P, b, train, seed, NULL);
}

/* dctx_sum (the trainer's learned "no photo" context: every annotation vector shifted by x) against
 * central differences of the reference; then the pool's combination of 2 shards against one pass. */
static void test_context_shift(void) {
    ac_decoder_config c = tf_cfg();
    c.dropout = 0.2f;
    ac_decoder dec;
    char why[512];
    CHECK(make_decoder(&dec, &c, 5) == 0);
    const int rc = context_shift_run(&dec, ref_objective, NULL, why, sizeof why);
    ac_decoder_free(&dec);
    CHECKF(rc == 0, "%s", why);
}

/* ---- inference ---- */

/* Step by step with the key/value cache (ac_decoder_advance, what the beam search and teacher forcing
 * run) against the whole caption at once: the training forward's logits (float32, sgemm) and the
 * reference's (double); the log-probabilities of every step agree. With the cache left out (each step
 * seeing only itself) they would not: the check is also that the words before matter. */
static void test_kv_cache_equals_full_sequence(void) {
    ac_decoder_config c = tf_cfg();
    c.layers = 3;
    ac_decoder dec;
    CHECK(make_decoder(&dec, &c, 3) == 0);
    float ann[6 * 7];
    fill_ann(ann, 42, 8);
    enum { n = 7 };
    const int words[n] = {5, 9, 4, 4, 10, 6, 7}, len = n + 1;
    const float *annp = ann;
    ac_dec_batch bt = {1, &len, words, n, &annp, NULL, 0, NULL, NULL, NULL, NULL, NULL};
    ac_dec_work *w = ac_dec_work_new(&c, 1, len);
    ac_dec_stats st;
    ac_err err;
    CHECKF(ac_decoder_forward_backward(&dec, w, &bt, 0, 0, NULL, &st, &err) == 0, "%s", err.msg);
    const float *full = ac_dec_work_logits(w);
    double *P = malloc(sizeof(double) * dec.n_params), ref[len * 11];
    for (size_t i = 0; i < dec.n_params; i++) P[i] = dec.params[i];
    ref_batch rb = {1, n, &len, words, &annp, NULL};
    ref_loss(&c, P, &rb, 0, 0, ref);
    const size_t HP = ac_decoder_hist_size(&c);
    CHECK(ac_decoder_state_size(&c) == 0 && HP == (size_t)3 * 2 * 8);
    float *hist = malloc(sizeof(float) * HP * len), logp[11], alpha[6], beta;
    float *scr = malloc(sizeof(float) * (ac_decoder_advance_scratch(&c, 1, n) + (n + 1) * HP)), *other = scr + HP;
    ac_dec_image *img = ac_decoder_prepare(&dec, ann);
    const ac_dec_image *im = img;
    const int one = 1;
    double worst = 0, worst_ref = 0, moved = 0;
    for (int t = 0; t < len; t++) {
        const int prev = t ? words[t - 1] : AC_START;
        const float *h = hist;
        ac_decoder_advance(&dec, 1, &im, &one, t, &prev, NULL, &h, NULL, hist + (size_t)t * HP, logp, alpha, &beta, scr);
        double m = -1e300, s = 0, mr = -1e300, sr = 0, sa = 0;
        for (int v = 0; v < 11; v++) m = fmax(m, full[t * 11 + v]), mr = fmax(mr, ref[t * 11 + v]);
        for (int v = 0; v < 11; v++) s += exp(full[t * 11 + v] - m), sr += exp(ref[t * 11 + v] - mr);
        for (int v = 0; v < 11; v++) {
            worst = fmax(worst, fabs(logp[v] - (full[t * 11 + v] - m - log(s))));
            worst_ref = fmax(worst_ref, fabs(logp[v] - (ref[t * 11 + v] - mr - log(sr))));
        }
        for (int l = 0; l < 6; l++) sa += alpha[l];
        CHECK_NEAR(sa, 1.0, 1e-5);
        CHECK(beta == 1.0f);
        /* the same word at position t after another history: another distribution (t > 0) */
        if (t > 0) {
            float lp2[11];
            const float *oh = other;
            for (size_t i = 0; i < (size_t)t * HP; i++) other[i] = hist[i] + 0.5f;
            ac_decoder_advance(&dec, 1, &im, &one, t, &prev, NULL, &oh, NULL, scr, lp2, alpha, NULL,
                               other + (size_t)n * HP);
            for (int v = 0; v < 11; v++) moved = fmax(moved, fabs(lp2[v] - logp[v]));
        }
    }
    CHECKF(worst < 2e-5, "cached steps differ from the full-sequence forward by %g", worst);
    CHECKF(worst_ref < 2e-5, "cached steps differ from the reference by %g", worst_ref);
    CHECKF(moved > 1e-3, "the history changes nothing (%g)", moved);
    /* teacher forcing is the same steps */
    float al[(n + 1) * 6], wl[n + 1];
    double lp;
    CHECK(ac_decoder_attend_words(&dec, ann, words, n, al, NULL, wl, &lp, &err) == 0);
    CHECK_NEAR(lp, -st.ce_sum, 1e-4);
    ac_dec_image_free(img);
    free(hist), free(scr), free(P);
    ac_dec_work_free(w);
    ac_decoder_free(&dec);
}

/* Rows of several photos, with different histories, in one step: the same bits as each photo's rows
 * alone; and ac_decoder_show_head shows one head of the last layer's cross-attention, whose mean over the
 * heads is the default. */
static void test_step_rows_same_bits(void) {
    ac_decoder_config c = tf_cfg();
    c.heads = 4;
    ac_decoder dec;
    CHECK(make_decoder(&dec, &c, 9) == 0);
    float ann[2][6 * 7];
    fill_ann(ann[0], 42, 1), fill_ann(ann[1], 42, 2);
    const ac_dec_image *im[2] = {ac_decoder_prepare(&dec, ann[0]), ac_decoder_prepare(&dec, ann[1])};
    enum { K = 3, t = 4, V = 11, L = 6 };
    const size_t HP = ac_decoder_hist_size(&c);
    float hist[K][t * 2 * 2 * 8];
    for (int k = 0; k < K; k++)
        for (size_t i = 0; i < t * HP; i++) hist[k][i] = sinf(0.37f * (float)i + (float)k);
    const float *hp[K] = {hist[0], hist[1], hist[2]};
    const int rows[2] = {2, 1}, prev[K] = {5, 7, 9};
    float *scr = malloc(sizeof(float) * ac_decoder_advance_scratch(&c, K, t));
    float ho[2][K * 2 * 2 * 8], lp[2][K * V], al[2][K * L], be[2][K];
    ac_decoder_advance(&dec, 2, im, rows, t, prev, NULL, hp, NULL, ho[0], lp[0], al[0], be[0], scr);
    for (int p = 0, k0 = 0; p < 2; k0 += rows[p++])
        ac_decoder_advance(&dec, 1, &im[p], &rows[p], t, prev + k0, NULL, hp + k0, NULL, ho[1] + k0 * HP, lp[1] + k0 * V,
                           al[1] + k0 * L, be[1] + k0, scr);
    CHECK(!memcmp(ho[0], ho[1], sizeof ho[0]) && !memcmp(lp[0], lp[1], sizeof lp[0]) && !memcmp(al[0], al[1], sizeof al[0]));
    float mean[K * L] = {0}, one[K * L];
    ac_err err;
    for (int h = 1; h <= 4; h++) {
        CHECK(ac_decoder_show_head(&dec, h, &err) == 0);
        ac_decoder_advance(&dec, 2, im, rows, t, prev, NULL, hp, NULL, ho[1], lp[1], one, be[1], scr);
        CHECK(!memcmp(lp[0], lp[1], sizeof lp[0])); /* the words do not change */
        for (int i = 0; i < K * L; i++) mean[i] += one[i] / 4;
    }
    for (int i = 0; i < K * L; i++) CHECK_NEAR(mean[i], al[0][i], 1e-6);
    CHECK(ac_decoder_show_head(&dec, 5, &err) != 0);
    free(scr);
    ac_dec_image_free((ac_dec_image *)im[0]), ac_dec_image_free((ac_dec_image *)im[1]);
    ac_decoder_free(&dec);
}

/* ---- PyTorch parity ---- */

/* tools/torch_transformer.py --fixture computed the logits, loss and every gradient in float64 for fixed
 * parameters, inputs (two captions share a photo) and dropout masks (the same counter hash); ours
 * (float32) match to 1e-4. */
static void test_torch_parity(void) {
    char path[4096], why[512];
    const char *root = getenv("ATTNCAP_ROOT");
    snprintf(path, sizeof path, "%s/tests/fixtures/transformer_parity.safetensors", root ? root : ".");
    ac_decoder_config c;
    CHECKF(parity_run(path, &c, 0, 1e-4, why, sizeof why) == 0, "%s", why);
    CHECK(c.decoder == AC_DECODER_TRANSFORMER && c.layers == 2 && c.heads == 3 && c.dropout > 0);
}

/* A config the transformer cannot have is refused with a line. */
static void test_config_checks(void) {
    ac_err err;
    ac_decoder_config c = tf_cfg();
    CHECK(ac_decoder_check_config(&c, &err) == 0);
    c.heads = 3;
    CHECK(ac_decoder_check_config(&c, &err) != 0 && strstr(err.msg, "3 heads do not divide"));
    c = tf_cfg(), c.embed = c.att = 9, c.heads = 0;
    CHECK(ac_decoder_check_config(&c, &err) != 0 && strstr(err.msg, "even"));
    c = tf_cfg(), c.layers = 0;
    CHECK(ac_decoder_check_config(&c, &err) != 0 && strstr(err.msg, "layers"));
    c = tf_cfg(), c.att = 4;
    CHECK(ac_decoder_check_config(&c, &err) != 0 && strstr(err.msg, "att = embed"));
    c = tf_cfg(), c.decoder = AC_DECODER_LSTM, c.attention = AC_ATTENTION_ADDITIVE, c.heads = 0;
    CHECK(ac_decoder_check_config(&c, &err) != 0 && strstr(err.msg, "no layers"));
    c.layers = 0;
    CHECK(ac_decoder_check_config(&c, &err) == 0);
    c = tf_cfg(), c.attention_mode = AC_ATTENTION_HARD, c.reinforce = 1, c.entropy = 0.01f, c.expected = 0.5f;
    CHECK(ac_decoder_check_config(&c, &err) != 0 && strstr(err.msg, "hard attention is the LSTM decoder's"));
}

/* Masked cross-attention: a photo of 2x2 cells padded into the model's 2x3 grid (the padding NaN, so a
 * read of it would show) is captioned, scored and trained exactly as by the same weights with a 2x2
 * grid (a transformer's tensors do not depend on L): the same log-probabilities, attention on the
 * photo's own cells only, the same loss and gradient. Two captions of one photo that disagree on its
 * cells are refused. */
static void test_masked_cross_attention(void) {
    ac_decoder_config c6 = tf_cfg(), c4 = tf_cfg();
    c4.grid_h = 2, c4.grid_w = 2, c4.n_ann = 4;
    ac_decoder d6, d4;
    ac_err err;
    CHECK(ac_decoder_init(&d6, &c6, 3, &err) == 0 && ac_decoder_init(&d4, &c4, 4, &err) == 0);
    CHECK(d6.n_params == d4.n_params);
    memcpy(d4.params, d6.params, sizeof(float) * d6.n_params);
    const int D = c6.dim;
    float ann6[6 * 7], ann4[4 * 7];
    fill_ann(ann4, 4 * D, 5);
    memcpy(ann6, ann4, sizeof ann4);
    for (int i = 4 * D; i < 6 * D; i++) ann6[i] = NAN;
    const int words[3] = {5, 6, 4};
    float al6[4 * 6], al4[4 * 4], wl6[4], wl4[4];
    double lp6, lp4;
    CHECKF(ac_decoder_attend_grid(&d6, ann6, 2, 2, words, 3, al6, NULL, wl6, &lp6, &err) == 0, "%s", err.msg);
    CHECK(ac_decoder_attend_grid(&d4, ann4, 2, 2, words, 3, al4, NULL, wl4, &lp4, &err) == 0);
    CHECK(isfinite(lp6));
    CHECK_NEAR(lp6, lp4, 1e-5);
    for (int k = 0; k <= 3; k++) {
        CHECK_NEAR(wl6[k], wl4[k], 1e-5);
        for (int l = 0; l < 4; l++) CHECK_NEAR(al6[k * 6 + l], al4[k * 4 + l], 1e-6);
        CHECK(al6[k * 6 + 4] == 0 && al6[k * 6 + 5] == 0);
    }
    /* training: the same loss and gradient, with dropout (its masks depend on the tokens, not on L) */
    d6.cfg.dropout = d4.cfg.dropout = 0.3f;
    const float *a6[2] = {ann6, ann6}, *a4[2] = {ann4, ann4};
    const int len[2] = {4, 3}, ws[2 * 3] = {5, 6, 4, 7, 8, 0}, nv[2] = {4, 4};
    ac_dec_work *w6 = ac_dec_work_new(&c6, 2, 4), *w4 = ac_dec_work_new(&c4, 2, 4);
    float *g6 = malloc(sizeof(float) * d6.n_params), *g4 = malloc(sizeof(float) * d4.n_params);
    ac_dec_stats s6, s4;
    ac_dec_batch b6 = {2, len, ws, 3, a6, NULL, 0, nv, NULL, NULL, NULL, NULL}, b4 = {2, len, ws, 3, a4, NULL, 0, NULL, NULL, NULL, NULL, NULL};
    CHECKF(ac_decoder_forward_backward(&d6, w6, &b6, 1, 77, g6, &s6, &err) == 0, "%s", err.msg);
    CHECK(ac_decoder_forward_backward(&d4, w4, &b4, 1, 77, g4, &s4, &err) == 0);
    CHECK(isfinite(s6.loss));
    CHECK_NEAR(s6.loss, s4.loss, 1e-5);
    double worst = 0, big = 0;
    for (size_t i = 0; i < d6.n_params; i++) {
        const double e = fabs((double)g6[i] - g4[i]);
        worst = e > worst ? e : worst, big = fabs(g4[i]) > big ? fabs(g4[i]) : big;
    }
    CHECKF(big > 0 && worst <= 1e-5 * big, "gradient differs by %g (largest %g)", worst, big);
    const int nv_bad[2] = {4, 3};
    b6.n_valid = nv_bad;
    CHECK(ac_decoder_forward_backward(&d6, w6, &b6, 0, 0, NULL, &s6, &err) != 0 &&
          strstr(err.msg, "give it 3 and 4 cells"));
    ac_dec_work_free(w6), ac_dec_work_free(w4);
    free(g6), free(g4);
    ac_decoder_free(&d6), ac_decoder_free(&d4);
}

int main(void) {
    RUN(test_config_checks);
    RUN(test_masked_cross_attention);
    RUN(test_gradcheck_no_dropout);
    RUN(test_gradcheck_dropout_shared_photos);
    RUN(test_context_shift);
    RUN(test_kv_cache_equals_full_sequence);
    RUN(test_step_rows_same_bits);
    RUN(test_torch_parity);
    return TEST_EXIT();
}
