/* lstm_step.c: the soft-attention LSTM's inference step (decoder_internal.h's ac_lstm_step): the
 * queries, the attention and z, the cell, the deep output and each row's log-probabilities (softmax,
 * the absent objects' priors, the copy path). With the decoder's helper threads (ac_decoder_set_threads)
 * every part is split over them: the products by column panels, the scores by cells, z by channels,
 * the cell by hidden units, the rows' tails by rows; each number is computed the same way whatever
 * its chunk, so the results are the same bits for any thread count. */
#pragma GCC optimize("O3")
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention_internal.h"
#include "copy_internal.h"
#include "decoder_internal.h"
#include "hard_attention_internal.h"
#include "pool.h"

/* A product of the step, its panels of 64 columns split over the pool's chunks. */
typedef struct split_mul {
    int M, N, K, lda, ldc;
    const float *A;
    const uint16_t *W16;
    float *C;
} split_mul;

static void mul_chunk(void *arg, int t, int n) {
    const split_mul *m = arg;
    int n0, n1;
    ac_pool_chunk(m->N, 64, t, n, &n0, &n1);
    if (n1 > n0) ac_smm_nn_hp(m->M, n1 - n0, m->K, m->A, m->lda, m->W16 + (size_t)n0 * m->K, m->C + n0, m->ldc);
}

/* C[M, N] += A[M, K] W: the packed half-precision copy when there is one (same bits, faster), over
 * the helper threads when the decoder has them. */
static void mul(const ac_decoder *dec, int M, int N, int K, const float *A, int lda, const float *W, const uint16_t *W16,
                float *C, int ldc) {
    if (!W16) ac_smm_nn(M, N, K, A, lda, W, N, C, ldc);
    else if (!dec->step_pool || N < 128) ac_smm_nn_hp(M, N, K, A, lda, W16, C, ldc);
    else {
        split_mul m = {M, N, K, lda, ldc, A, W16, C};
        ac_pool_run(dec->step_pool, mul_chunk, &m);
    }
}

/* The copy path (copy_internal.h) on row k's log-probabilities (k0: the photo's first row). copy 1: the
 * row's gate from h_t and z_t (x's z part, already times beta), its regions' attention the heads' mean
 * of ah [K, heads, L]. copy 2: the pointer's scores of the regions' keys against the row's query q
 * [K, A], and the sentinel from h_t. */
static void copy_row(const ac_decoder *dec, const ac_dec_image *im, int k, int k0, const float *q, const float *ah,
                     const float *x, const float *h_out, int ldo, float *logp, float *account) {
    const ac_decoder_config *cf = &dec->cfg;
    const int E = cf->embed, H = cf->hidden, D = cf->dim, L = cf->n_ann, V = cf->vocab, X = E + D + H;
    const int nh = ac_attention_heads(cf), A = ac_attention_key_dim(cf);
    if (account) memset(account + (size_t)k * AC_DECODER_ACCOUNT_ROW, 0, sizeof(float) * AC_DECODER_ACCOUNT_ROW);
    if (!im->regions || !im->has_categories) return;
    const int g0 = im->gh * im->gw;
    float abar[AC_REGIONS_MAX], e[AC_REGIONS_MAX], u;
    const ac_copy_regions reg = {im->regions, im->cat, abar};
    if (cf->copy == 2) {
        u = ac_copy_pointer_forward(dec, &reg, im->proj + (size_t)g0 * A, q + (size_t)k * A, h_out + (size_t)k * ldo,
                                    e, abar, NULL);
    } else {
        ac_copy_region_attention(ah + (size_t)k * nh * L, nh, L, g0, im->regions, abar);
        u = ac_copy_gate_logit(dec, h_out + (size_t)k * ldo, x + (size_t)k * X + E);
    }
    if (im->copy_trace) { /* the account's step: the mixture's terms, logp left as it is */
        float *tr = im->copy_trace + (size_t)(k - k0) * (1 + im->regions);
        tr[0] = 1.0f / (1.0f + expf(-u));
        memcpy(tr + 1, abar, sizeof(float) * (size_t)im->regions);
        return;
    }
    const float gate = 1.0f / (1.0f + expf(-u));
    if (account) { /* before the mixture: the vocabulary's own log p_w, as teacher forcing's trace has it */
        float *a = account + (size_t)k * AC_DECODER_ACCOUNT_ROW;
        ac_copy_row_account(dec, &reg, gate, logp + (size_t)k * V, a, a + AC_REGIONS_MAX);
    }
    ac_copy_mix_logp(dec, &reg, gate, logp + (size_t)k * V);
}

/* The parts of a step that are per row or per cell, split over the decoder's helper threads when it
 * has them (ac_pool_run with a NULL pool runs the one chunk in the caller). Every split computes the
 * same bits: a cell's score, a column of z and a row's softmax are each computed the same way whatever
 * chunk they fall in. */
typedef struct step_job {
    const ac_decoder *dec;
    const ac_attention_fn *att;
    int n_photos, K;
    const ac_dec_image *const *img;
    const int *rows;
    const float *q, *x;
    float *ah, *z, *logp, *account;
    const float *beta, *g, *c; /* each row's beta; the LSTM's gate sums [K, 4H]; its cells (rows ldc apart) */
    float *h_out, *c_out;      /* the new h and c, rows ldo apart */
    int ldc, ldo;
} step_job;

/* Attention scores of every row's cells [l0, l1) of its photo. */
static void scores_chunk(void *arg, int t, int n) {
    const step_job *j = arg;
    const int L = j->dec->cfg.n_ann, A = j->att->A, nh = j->att->heads;
    for (int p = 0, k0 = 0; p < j->n_photos; k0 += j->rows[p++]) {
        const ac_dec_image *im = j->img[p];
        int l0, l1;
        ac_pool_chunk(im->n, 1, t, n, &l0, &l1);
        for (int k = k0; l1 > l0 && k < k0 + j->rows[p]; k++)
            ac_attention_scores_forward_masked(j->att, L, l1 - l0, j->q + (size_t)k * A, im->proj + (size_t)l0 * A,
                                               j->ah + (size_t)k * nh * L + l0, NULL);
    }
}

/* z = beta alpha^T a for channels [c0, c1), each photo's rows in one pass over its annotations; head
 * h's attention weighs its own channels. */
static void z_chunk(void *arg, int t, int n) {
    const step_job *j = arg;
    const ac_decoder_config *cf = &j->dec->cfg;
    const int E = cf->embed, D = cf->dim, L = cf->n_ann, X = E + D + cf->hidden, nh = j->att->heads, dv = D / nh;
    int c0, c1;
    ac_pool_chunk(D, 16, t, n, &c0, &c1);
    for (int p = 0, k0 = 0; p < j->n_photos; k0 += j->rows[p++])
        for (int h = c0 / dv; h < nh && h * dv < c1; h++) {
            const int a = c0 > h * dv ? c0 : h * dv, b = c1 < (h + 1) * dv ? c1 : (h + 1) * dv;
            ac_smm_nn(j->rows[p], b - a, j->img[p]->n, j->ah + (size_t)k0 * nh * L + (size_t)h * L, nh * L,
                      j->img[p]->ann + a, D, j->z + (size_t)k0 * X + a, X);
        }
    for (int k = 0; k < j->K; k++)
        for (int i = c0; i < c1; i++) j->z[(size_t)k * X + i] *= j->beta[k];
}

/* The LSTM cell for hidden units [c0, c1) of every row: c' = f c + i g, h' = o tanh(c'). */
static void gates_chunk(void *arg, int t, int n) {
    const step_job *j = arg;
    const int H = j->dec->cfg.hidden;
    int c0, c1;
    ac_pool_chunk(H, 16, t, n, &c0, &c1);
    for (int k = 0; k < j->K; k++) {
        const float *gk = j->g + (size_t)k * 4 * H, *ck = j->c + (size_t)k * j->ldc;
        float *hk = j->h_out + (size_t)k * j->ldo, *cn = j->c_out + (size_t)k * j->ldo;
        for (int i = c0; i < c1; i++) {
            const float ig = ac_sigmoidf(gk[i]), fg = ac_sigmoidf(gk[H + i]), gg = ac_tanhf(gk[2 * H + i]),
                        og = ac_sigmoidf(gk[3 * H + i]);
            cn[i] = fg * ck[i] + ig * gg;
            hk[i] = og * ac_tanhf(cn[i]);
        }
    }
}

/* Row t's logits to log-probabilities: the absent objects' priors, the softmax, the copy path. */
static void tail_row(void *arg, int t, int n) {
    const step_job *j = arg;
    const ac_decoder *dec = j->dec;
    const int V = dec->cfg.vocab;
    int k1, k = 0;
    for (ac_pool_chunk(j->K, 1, t, n, &k, &k1); k < k1; k++) {
        int p = 0, k0 = 0;
        while (k >= k0 + j->rows[p]) k0 += j->rows[p++];
        const ac_dec_image *im = j->img[p];
        float *lp = j->logp + (size_t)k * V;
        if (dec->absent_b && dec->copy && im->has_categories) ac_copy_absent_logits(dec, im->cat, im->regions, 1, lp, V);
        ac_softmax_row(lp, V, 1);
        if (dec->cfg.copy && dec->copy) copy_row(dec, im, k, k0, j->q, j->ah, j->x, j->h_out, j->ldo, j->logp, j->account);
        else if (j->account) memset(j->account + (size_t)k * AC_DECODER_ACCOUNT_ROW, 0, sizeof(float) * AC_DECODER_ACCOUNT_ROW);
    }
}

/* All products go through ac_smm_nn / ac_smm_nn_hp: with few rows a general sgemm spends more time
 * packing the weights than multiplying, and its threading can change the rounding; here every weight
 * matrix is streamed once per step (by column panels over the helper threads), with each output
 * summed in a fixed order that does not depend on the other rows: a row's results are the same bits
 * whichever photos' rows share the step, and for any thread count. */
/* h, c, h_out and c_out have row strides (the beam search keeps a hypothesis's h and c side by side). */
void ac_lstm_step(const ac_decoder *dec, int n_photos, const ac_dec_image *const *img, const int *rows,
                      const int *prev, const float *h, int ldh, const float *c, int ldc, float *h_out, float *c_out,
                      int ldo, float *logp, float *alpha, float *beta, float *account, float *buf) {
    const ac_decoder_config *cf = &dec->cfg;
    const int E = cf->embed, H = cf->hidden, D = cf->dim, L = cf->n_ann, V = cf->vocab;
    const int X = E + D + H;
    const ac_attention_fn att = ac_attention_fn_of(dec);
    const int A = att.A, nh = att.heads;
    int K = 0;
    for (int p = 0; p < n_photos; p++) K += rows[p];
    if (K <= 0) return;
    float *q = buf, *x = q + (size_t)K * A, *g = x + (size_t)K * X, *o = g + (size_t)K * 4 * H;
    float *ah = nh > 1 ? o + (size_t)K * E : alpha; /* [K, heads, L]: each head's attention */
    if (dec->att_wh) { /* the queries: h W_h, or h itself (general) */
        memset(q, 0, sizeof(float) * (size_t)K * A);
        mul(dec, K, A, H, h, ldh, dec->att_wh, dec->att_wh16, q, A);
    } else {
        for (int k = 0; k < K; k++) memcpy(q + (size_t)k * H, h + (size_t)k * ldh, sizeof(float) * H);
    }
    step_job job = {dec, &att, n_photos, K, img, rows, q, x, ah, x + E, logp, account, g, g, c, h_out, c_out, ldc, ldo};
    ac_pool_run(dec->step_pool, scores_chunk, &job);
    float *be = g; /* beta per hypothesis, parked in g until the gates are computed */
    for (int p = 0, k0 = 0; p < n_photos; k0 += rows[p++]) {
        const int n = img[p]->n; /* the photo's cells; the masked rest of each head's L get weight 0 */
        for (int k = k0; k < k0 + rows[p]; k++) {
            float *al = ah + (size_t)k * nh * L;
            for (int j = 0; j < nh; j++) {
                ac_softmax_row(al + (size_t)j * L, n, 0);
                memset(al + (size_t)j * L + n, 0, sizeof(float) * (size_t)(L - n));
            }
            if (dec->fixed_attention == FIX_UNIFORM) {
                for (int j = 0; j < nh; j++)
                    for (int l = 0; l < n; l++) al[(size_t)j * L + l] = 1.0f / (float)n;
            } else if ((cf->attention_mode == AC_ATTENTION_HARD && !dec->hard_expected) ||
                       dec->fixed_attention == FIX_PEAK) { /* one location per head; a padded one has alpha 0 */
                int s[64];
                ac_hard_attention_argmax(al, nh, L, s);
                ac_hard_attention_onehot(al, nh, L, s);
            }
            float bp = dec->beta_b[0];
            for (int j = 0; j < H; j++) bp += dec->beta_w[j] * h[(size_t)k * ldh + j];
            be[k] = 1.0f / (1.0f + expf(-bp));
            if (beta) beta[k] = be[k];
            float *xk = x + (size_t)k * X;
            int w = prev[k] >= 0 && prev[k] < V ? prev[k] : AC_UNK;
            if (dec->emb16) ac_f16_to_f32_n(dec->emb16 + (size_t)w * E, xk, (size_t)E); /* exact */
            else memcpy(xk, dec->emb + (size_t)w * E, sizeof(float) * E);
            memset(xk + E, 0, sizeof(float) * D);
            memcpy(xk + E + D, h + (size_t)k * ldh, sizeof(float) * H);
        }
    }
    ac_pool_run(dec->step_pool, z_chunk, &job); /* beta times alpha^T a; be is read before g is set */
    for (int k = 0; nh > 1 && k < K; k++) /* what the overlays show: the heads' mean, or the head asked for */
        for (int l = 0; l < L; l++) {
            const float *a = ah + (size_t)k * nh * L + l;
            float s = 0;
            for (int j = 0; j < nh; j++) s += a[(size_t)j * L];
            alpha[(size_t)k * L + l] = dec->shown_head > 0 ? a[(size_t)(dec->shown_head - 1) * L] : s / nh;
        }
    for (int k = 0; k < K; k++) memcpy(g + (size_t)k * 4 * H, dec->lstm_b, sizeof(float) * 4 * H);
    mul(dec, K, 4 * H, X, x, X, dec->lstm_w, dec->lstm_w16, g, 4 * H);
    ac_pool_run(dec->step_pool, gates_chunk, &job);
    for (int k = 0; k < K; k++) memcpy(o + (size_t)k * E, x + (size_t)k * X, sizeof(float) * E); /* E y */
    /* deep output: tanh(E y + h L_h + z L_z) L_o + b_o */
    mul(dec, K, E, H, h_out, ldo, dec->out_lh, dec->out_lh16, o, E);
    mul(dec, K, E, D, x + E, X, dec->out_lz, dec->out_lz16, o, E);
    for (size_t i = 0; i < (size_t)K * E; i++) o[i] = ac_tanhf(o[i]);
    for (int k = 0; k < K; k++) memcpy(logp + (size_t)k * V, dec->out_bo, sizeof(float) * V);
    mul(dec, K, V, E, o, E, dec->out_lo, dec->out_lo16, logp, V);
    ac_pool_run_n(dec->step_pool, tail_row, &job, K);
}

