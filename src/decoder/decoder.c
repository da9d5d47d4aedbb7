/* decoder.c: the soft-attention decoder's parameters, initialisation and inference step.
 * Training (batched forward + backward) lives in decoder_train.c.
 *
 * Parameter tensors (one float buffer, in this order):
 *   emb      [V, E]          word embeddings E
 *   att_wa   [D, A]  att_ba [A]   W_a, b_a: annotation projection (once per photo)
 *   att_wh   [H, A]  att_we [A]   W_h, w_e: e_ti = w_e . tanh(W_a a_i + b_a + W_h h)
 *   beta_w   [H]     beta_b [1]   the scalar gate beta = sigmoid(w_b . h + b_b)
 *   init_h_w [D, H]  init_h_b [H]  h_0 = tanh(mean(a) W + b)
 *   init_c_w [D, H]  init_c_b [H]  c_0 = tanh(mean(a) W + b)
 *   lstm_w   [E + D + H, 4H]  lstm_b [4H]   gates of [E y; z; h], order i f g o
 *   out_lh   [H, E]  out_lz [D, E]  out_lo [E, V]  out_bo [V]   deep output
 * Row-vector convention: y = x W with x [rows] and W [rows, cols]. */
#pragma GCC optimize("O3")
#include "attncap/decoder.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder_internal.h"

int ac_decoder_tensors(const ac_decoder_config *c, ac_dec_tensor *t, size_t *n_params) {
    const int V = c->vocab, E = c->embed, H = c->hidden, A = c->att, D = c->dim;
    const struct { const char *name; int r, k; } spec[AC_DEC_MAX_TENSORS] = {
        {"emb", V, E},          {"att_wa", D, A},      {"att_ba", 1, A},      {"att_wh", H, A},
        {"att_we", 1, A},       {"beta_w", 1, H},      {"beta_b", 1, 1},      {"init_h_w", D, H},
        {"init_h_b", 1, H},     {"init_c_w", D, H},    {"init_c_b", 1, H},    {"lstm_w", E + D + H, 4 * H},
        {"lstm_b", 1, 4 * H},   {"out_lh", H, E},      {"out_lz", D, E},      {"out_lo", E, V},
        {"out_bo", 1, V},
    };
    size_t off = 0;
    for (int i = 0; i < AC_DEC_MAX_TENSORS; i++) {
        t[i].name = spec[i].name;
        t[i].rows = spec[i].r;
        t[i].cols = spec[i].k;
        t[i].offset = off;
        off += (size_t)spec[i].r * (size_t)spec[i].k;
    }
    if (n_params) *n_params = off;
    return AC_DEC_MAX_TENSORS;
}

int ac_decoder_check_config(const ac_decoder_config *c, ac_err *err) {
    ac_limits lim = ac_limits_get();
    if (c->vocab < 5 || (uint64_t)c->vocab > lim.max_vocab)
        return ac_errf(err, "vocabulary size %d out of range [5, %llu] (limit ATTNCAP_MAX_VOCAB)", c->vocab, (unsigned long long)lim.max_vocab);
    const struct { const char *n; int v, max; } d[] = {
        {"embed", c->embed, 8192}, {"hidden", c->hidden, 8192}, {"att", c->att, 8192},
        {"dim", c->dim, 16384},    {"grid_h", c->grid_h, 256},  {"grid_w", c->grid_w, 256},
    };
    for (size_t i = 0; i < sizeof d / sizeof *d; i++)
        if (d[i].v < 1 || d[i].v > d[i].max) return ac_errf(err, "%s = %d out of range [1, %d]", d[i].n, d[i].v, d[i].max);
    if (c->n_ann != c->grid_h * c->grid_w)
        return ac_errf(err, "n_ann = %d but grid is %dx%d", c->n_ann, c->grid_h, c->grid_w);
    if (!(c->dropout >= 0 && c->dropout < 1)) return ac_errf(err, "dropout %g not in [0, 1)", c->dropout);
    if (!(c->lambda >= 0 && c->lambda < 1e6)) return ac_errf(err, "lambda %g out of range", c->lambda);
    ac_dec_tensor t[AC_DEC_MAX_TENSORS];
    size_t n;
    ac_decoder_tensors(c, t, &n);
    if (n > lim.max_tensor_elems)
        return ac_errf(err, "decoder has %zu parameters, over the limit of %llu (raise ATTNCAP_MAX_TENSOR_ELEMS)", n,
                       (unsigned long long)lim.max_tensor_elems);
    return 0;
}

static void bind(ac_decoder *dec) {
    ac_dec_tensor t[AC_DEC_MAX_TENSORS];
    ac_decoder_tensors(&dec->cfg, t, &dec->n_params);
    float **v[AC_DEC_MAX_TENSORS] = {&dec->emb,      &dec->att_wa,   &dec->att_ba,   &dec->att_wh,   &dec->att_we,
                                     &dec->beta_w,   &dec->beta_b,   &dec->init_h_w, &dec->init_h_b, &dec->init_c_w,
                                     &dec->init_c_b, &dec->lstm_w,   &dec->lstm_b,   &dec->out_lh,   &dec->out_lz,
                                     &dec->out_lo,   &dec->out_bo};
    for (int i = 0; i < AC_DEC_MAX_TENSORS; i++) *v[i] = dec->params + t[i].offset;
}

int ac_decoder_alloc(ac_decoder *dec, const ac_decoder_config *cfg, ac_err *err) {
    memset(dec, 0, sizeof *dec);
    if (ac_decoder_check_config(cfg, err)) return -1;
    dec->cfg = *cfg;
    ac_dec_tensor t[AC_DEC_MAX_TENSORS];
    ac_decoder_tensors(cfg, t, &dec->n_params);
    dec->params = calloc(dec->n_params, sizeof(float));
    if (!dec->params) return ac_errf(err, "out of memory for %zu decoder parameters", dec->n_params);
    bind(dec);
    return 0;
}

/* xoshiro-free, tiny: splitmix64 stream for initialisation. */
static double uniform01(uint64_t *s) {
    *s += 0x9E3779B97F4A7C15ull;
    return (double)(ac_mix64(*s) >> 11) * (1.0 / 9007199254740992.0);
}

int ac_decoder_init(ac_decoder *dec, const ac_decoder_config *cfg, unsigned long long seed, ac_err *err) {
    if (ac_decoder_alloc(dec, cfg, err)) return -1;
    ac_dec_tensor t[AC_DEC_MAX_TENSORS];
    ac_decoder_tensors(cfg, t, NULL);
    uint64_t s = seed * 0x2545F4914F6CDD1Dull + 12345;
    for (int i = 0; i < AC_DEC_MAX_TENSORS; i++) {
        float *p = dec->params + t[i].offset;
        size_t n = (size_t)t[i].rows * t[i].cols;
        double r;
        if (!strcmp(t[i].name, "emb")) r = 0.1;                         /* small, as in arctic-captions */
        else if (!strcmp(t[i].name, "att_we")) r = sqrt(6.0 / (t[i].cols + 1));
        else if (!strcmp(t[i].name, "beta_w")) r = sqrt(6.0 / (t[i].cols + 1));
        else if (t[i].rows == 1) r = 0; /* biases */
        else r = sqrt(6.0 / (t[i].rows + t[i].cols)); /* Glorot uniform */
        for (size_t j = 0; j < n; j++) p[j] = r ? (float)((2 * uniform01(&s) - 1) * r) : 0.0f;
    }
    /* Forget-gate bias 1: remember by default early in training. */
    for (int j = 0; j < cfg->hidden; j++) dec->lstm_b[cfg->hidden + j] = 1.0f;
    return 0;
}

void ac_decoder_free(ac_decoder *dec) {
    if (!dec) return;
    free(dec->params);
    free(dec->lstm_w16), free(dec->out_lo16);
    memset(dec, 0, sizeof *dec);
}

/* dst = src as float16 if every value converts exactly; else 0 (dst untouched beyond what was read). */
static int to_f16_exact(const float *src, size_t n, uint16_t *dst) {
    for (size_t i = 0; i < n; i++) {
        dst[i] = ac_f32_to_f16(src[i]);
        if (ac_f16_to_f32(dst[i]) != src[i] && !(src[i] != src[i])) return 0;
    }
    return 1;
}

int ac_decoder_use_f16(ac_decoder *dec) {
    const ac_decoder_config *c = &dec->cfg;
    if (dec->lstm_w16 || !ac_smm_has_f16()) return dec->lstm_w16 != NULL;
    size_t n_lstm = (size_t)(c->embed + c->dim + c->hidden) * 4 * c->hidden, n_lo = (size_t)c->embed * c->vocab;
    uint16_t *a = malloc(n_lstm * sizeof *a), *b = malloc(n_lo * sizeof *b);
    if (!a || !b) {
        free(a), free(b);
        return -1;
    }
    if (!to_f16_exact(dec->lstm_w, n_lstm, a) || !to_f16_exact(dec->out_lo, n_lo, b)) {
        free(a), free(b);
        return 0;
    }
    dec->lstm_w16 = a, dec->out_lo16 = b;
    return 1;
}

/* ---- inference ---- */

struct ac_dec_image {
    int L, D, A;
    float *ann;  /* [L, D] */
    float *proj; /* [L, A]  W_a a_i + b_a */
    float *mean; /* [D] */
};

ac_dec_image *ac_decoder_prepare(const ac_decoder *dec, const float *ann) {
    const int L = dec->cfg.n_ann, D = dec->cfg.dim, A = dec->cfg.att;
    ac_dec_image *im = calloc(1, sizeof *im);
    if (!im) return NULL;
    im->L = L, im->D = D, im->A = A;
    im->ann = malloc(sizeof(float) * (size_t)L * D);
    im->proj = malloc(sizeof(float) * (size_t)L * A);
    im->mean = calloc((size_t)D, sizeof(float));
    if (!im->ann || !im->proj || !im->mean) {
        ac_dec_image_free(im);
        return NULL;
    }
    memcpy(im->ann, ann, sizeof(float) * (size_t)L * D);
    for (int l = 0; l < L; l++) memcpy(im->proj + (size_t)l * A, dec->att_ba, sizeof(float) * A);
    ac_smm_nn(L, A, D, ann, D, dec->att_wa, A, im->proj, A);
    for (int l = 0; l < L; l++)
        for (int d = 0; d < D; d++) im->mean[d] += ann[(size_t)l * D + d];
    for (int d = 0; d < D; d++) im->mean[d] /= (float)L;
    return im;
}

void ac_dec_image_free(ac_dec_image *im) {
    if (!im) return;
    free(im->ann);
    free(im->proj);
    free(im->mean);
    free(im);
}

void ac_decoder_initial_state(const ac_decoder *dec, const ac_dec_image *im, float *h, float *c) {
    const int D = dec->cfg.dim, H = dec->cfg.hidden;
    memcpy(h, dec->init_h_b, sizeof(float) * H);
    memcpy(c, dec->init_c_b, sizeof(float) * H);
    ac_smm_nn(1, H, D, im->mean, D, dec->init_h_w, H, h, H);
    ac_smm_nn(1, H, D, im->mean, D, dec->init_c_w, H, c, H);
    for (int j = 0; j < H; j++) h[j] = ac_tanhf(h[j]), c[j] = ac_tanhf(c[j]);
}

/* Numerically stable in-place softmax (or log-softmax) of one row. */
static void softmax_row(float *x, int n, int log_out) {
    float m = x[0];
    for (int i = 1; i < n; i++) m = x[i] > m ? x[i] : m;
    double s = 0;
    if (log_out) {
        for (int i = 0; i < n; i++) s += expf(x[i] - m);
        float ls = m + (float)log(s);
        for (int i = 0; i < n; i++) x[i] -= ls;
    } else {
        for (int i = 0; i < n; i++) s += (x[i] = expf(x[i] - m));
        float inv = (float)(1.0 / s);
        for (int i = 0; i < n; i++) x[i] *= inv;
    }
}

size_t ac_decoder_step_scratch(const ac_decoder_config *cf, int K) {
    const size_t X = (size_t)cf->embed + cf->dim + cf->hidden;
    return (size_t)K * cf->att + (size_t)K * X + (size_t)K * 4 * cf->hidden + (size_t)K * cf->embed + (size_t)cf->att;
}

/* All products go through ac_smm_nn: with K <= beam rows a general sgemm spends more time packing the
 * weights than multiplying, and its threading can change the rounding; here every weight matrix is
 * streamed once per step, single-threaded, in a fixed order (same result for any thread count). */
void ac_decoder_step(const ac_decoder *dec, const ac_dec_image *im, int K, const int *prev, const float *h,
                     const float *c, float *h_out, float *c_out, float *logp, float *alpha, float *beta,
                     float *buf) {
    const ac_decoder_config *cf = &dec->cfg;
    const int E = cf->embed, H = cf->hidden, A = cf->att, D = cf->dim, L = cf->n_ann, V = cf->vocab;
    const int X = E + D + H;
    float *hw = buf, *x = hw + (size_t)K * A, *g = x + (size_t)K * X, *o = g + (size_t)K * 4 * H;
    float *th = o + (size_t)K * E;
    memset(hw, 0, sizeof(float) * (size_t)K * A);
    ac_smm_nn(K, A, H, h, H, dec->att_wh, A, hw, A);
    float *be = g; /* beta per hypothesis, parked in g until the gates are computed */
    for (int k = 0; k < K; k++) {
        float *al = alpha + (size_t)k * L;
        for (int l = 0; l < L; l++) al[l] = ac_att_row_fwd(A, im->proj + (size_t)l * A, hw + (size_t)k * A, dec->att_we, th);
        softmax_row(al, L, 0);
        float bp = dec->beta_b[0];
        for (int j = 0; j < H; j++) bp += dec->beta_w[j] * h[(size_t)k * H + j];
        be[k] = 1.0f / (1.0f + expf(-bp));
        if (beta) beta[k] = be[k];
        float *xk = x + (size_t)k * X;
        int w = prev[k] >= 0 && prev[k] < V ? prev[k] : AC_UNK;
        memcpy(xk, dec->emb + (size_t)w * E, sizeof(float) * E);
        memset(xk + E, 0, sizeof(float) * D);
        memcpy(xk + E + D, h + (size_t)k * H, sizeof(float) * H);
    }
    /* z = beta * alpha^T a, all hypotheses in one pass over the annotations */
    ac_smm_nn(K, D, L, alpha, L, im->ann, D, x + E, X);
    for (int k = 0; k < K; k++) {
        float *zk = x + (size_t)k * X + E, b = be[k];
        for (int j = 0; j < D; j++) zk[j] *= b;
    }
    for (int k = 0; k < K; k++) memcpy(g + (size_t)k * 4 * H, dec->lstm_b, sizeof(float) * 4 * H);
    if (dec->lstm_w16) ac_smm_nn_h(K, 4 * H, X, x, X, dec->lstm_w16, 4 * H, g, 4 * H);
    else ac_smm_nn(K, 4 * H, X, x, X, dec->lstm_w, 4 * H, g, 4 * H);
    for (int k = 0; k < K; k++) {
        const float *gk = g + (size_t)k * 4 * H, *ck = c + (size_t)k * H;
        float *hk = h_out + (size_t)k * H, *cn = c_out + (size_t)k * H;
        for (int j = 0; j < H; j++) {
            float ig = ac_sigmoidf(gk[j]), fg = ac_sigmoidf(gk[H + j]), gg = ac_tanhf(gk[2 * H + j]),
                  og = ac_sigmoidf(gk[3 * H + j]);
            cn[j] = fg * ck[j] + ig * gg;
            hk[j] = og * ac_tanhf(cn[j]);
        }
        memcpy(o + (size_t)k * E, x + (size_t)k * X, sizeof(float) * E); /* E y */
    }
    /* deep output: tanh(E y + h L_h + z L_z) L_o + b_o */
    ac_smm_nn(K, E, H, h_out, H, dec->out_lh, E, o, E);
    ac_smm_nn(K, E, D, x + E, X, dec->out_lz, E, o, E);
    for (size_t i = 0; i < (size_t)K * E; i++) o[i] = ac_tanhf(o[i]);
    for (int k = 0; k < K; k++) memcpy(logp + (size_t)k * V, dec->out_bo, sizeof(float) * V);
    if (dec->out_lo16) ac_smm_nn_h(K, V, E, o, E, dec->out_lo16, V, logp, V);
    else ac_smm_nn(K, V, E, o, E, dec->out_lo, V, logp, V);
    for (int k = 0; k < K; k++) softmax_row(logp + (size_t)k * V, V, 1);
}

/* ---- teacher forcing ---- */

int ac_decoder_attend(const ac_decoder *dec, const float *ann, const int *words, int n, float *alpha, float *beta,
                      double *logprob, ac_err *err) {
    return ac_decoder_attend_words(dec, ann, words, n, alpha, beta, NULL, logprob, err);
}

int ac_decoder_attend_words(const ac_decoder *dec, const float *ann, const int *words, int n, float *alpha,
                            float *beta, float *word_logp, double *logprob, ac_err *err) {
    const int H = dec->cfg.hidden, V = dec->cfg.vocab, L = dec->cfg.n_ann;
    for (int k = 0; k < n; k++)
        if (words[k] < 0 || words[k] >= V) return ac_errf(err, "teacher forcing: word id %d outside 0..%d", words[k], V - 1);
    float *buf = malloc(((size_t)4 * H + V + ac_decoder_step_scratch(&dec->cfg, 1)) * sizeof *buf);
    ac_dec_image *img = ac_decoder_prepare(dec, ann);
    if (!buf || !img) {
        free(buf);
        ac_dec_image_free(img);
        return ac_errf(err, "out of memory");
    }
    float *h = buf, *c = h + H, *h2 = c + H, *c2 = h2 + H, *logp = c2 + H, *scratch = logp + V;
    ac_decoder_initial_state(dec, img, h, c);
    double lp = 0;
    for (int k = 0; k <= n; k++) {
        int prev = k ? words[k - 1] : AC_START;
        ac_decoder_step(dec, img, 1, &prev, h, c, h2, c2, logp, alpha + (size_t)k * L, beta ? beta + k : NULL,
                        scratch);
        lp += logp[k < n ? words[k] : AC_END];
        if (word_logp) word_logp[k] = logp[k < n ? words[k] : AC_END];
        memcpy(h, h2, (size_t)H * sizeof *h);
        memcpy(c, c2, (size_t)H * sizeof *c);
    }
    if (logprob) *logprob = lp;
    free(buf);
    ac_dec_image_free(img);
    return 0;
}
