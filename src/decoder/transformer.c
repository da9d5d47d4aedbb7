/* transformer.c: the transformer decoder (decoder.h): its parameters and initialisation, the kernels
 * its inference and training share, the per-photo keys and values of the cross-attention, and the
 * inference step over a key/value cache. Training (batched forward and backward) is transformer_train.c.
 *
 * Parameter tensors (one float buffer, in this order; Y = layers, a stacked tensor holds every layer:
 * layer l's matrix is rows l in .. (l + 1) in - 1, its vector row l):
 *   emb          [V, d]                          x_0 = sqrt(d) emb[y] + PE(t)
 *   tf_mem_w     [D, d]  tf_mem_b [d]            m = LN(a W_m + b_m; tf_mem_ln_g, tf_mem_ln_b [d])
 *   tf_ln1_g, tf_ln1_b [Y, d]                    the self-attention branch's layer norm
 *   tf_self_wqkv [Y d, 3d]  tf_self_bqkv [Y, 3d]  [q | k | v] = LN_1(x) W + b
 *   tf_self_wo   [Y d, d]   tf_self_bo [Y, d]     the heads' outputs side by side, projected
 *   tf_ln2_g, tf_ln2_b [Y, d]
 *   tf_cross_wq  [Y d, d]   tf_cross_bq [Y, d]    queries from LN_2(x)
 *   tf_cross_wkv [Y d, 2d]  tf_cross_bkv [Y, 2d]  [k | v] = m W + b, once per photo
 *   tf_cross_wo  [Y d, d]   tf_cross_bo [Y, d]
 *   tf_ln3_g, tf_ln3_b [Y, d]
 *   tf_ff_w1 [Y d, F]  tf_ff_b1 [Y, F]  tf_ff_w2 [Y F, d]  tf_ff_b2 [Y, d]   W_2 relu(W_1 LN_3(x) + b_1) + b_2
 *   tf_lnf_g, tf_lnf_b [d]
 *   out_lo [d, V]  out_bo [V]                    logits = LN_f(x) W_o + b_o
 * Row-vector convention: y = x W. Head j of a q, k or v row is its columns j dh .. (j + 1) dh - 1. */
#pragma GCC optimize("O3")
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "attention_internal.h"
#include "decoder_internal.h"
#include "transformer_internal.h"
#include "alloc_internal.h"

ac_tf_dims ac_tf_dims_of(const ac_decoder_config *c) {
    const int nh = ac_attention_heads(c);
    return (ac_tf_dims){c->embed, c->hidden, nh, c->embed / nh, c->layers, c->vocab, c->dim, c->n_ann};
}

/* The tensors: name, rows and columns per layer (stacked: times Y), and where the view keeps them. */
#define N_TF 29
static int spec(const ac_decoder_config *c, ac_dec_tensor *t, size_t *member, int *stacked) {
    const int d = c->embed, F = c->hidden, V = c->vocab, D = c->dim, Y = c->layers;
    const struct { const char *name; int rows, cols, stacked; size_t member; } s[N_TF] = {
#define M_(m) offsetof(ac_tf_view, m)
        {"emb", V, d, 0, M_(emb)},
        {"tf_mem_w", D, d, 0, M_(mem_w)},        {"tf_mem_b", 1, d, 0, M_(mem_b)},
        {"tf_mem_ln_g", 1, d, 0, M_(mem_g)},     {"tf_mem_ln_b", 1, d, 0, M_(mem_bn)},
        {"tf_ln1_g", 1, d, 1, M_(ln1_g)},        {"tf_ln1_b", 1, d, 1, M_(ln1_b)},
        {"tf_self_wqkv", d, 3 * d, 1, M_(wqkv)}, {"tf_self_bqkv", 1, 3 * d, 1, M_(bqkv)},
        {"tf_self_wo", d, d, 1, M_(wo)},         {"tf_self_bo", 1, d, 1, M_(bo)},
        {"tf_ln2_g", 1, d, 1, M_(ln2_g)},        {"tf_ln2_b", 1, d, 1, M_(ln2_b)},
        {"tf_cross_wq", d, d, 1, M_(cwq)},       {"tf_cross_bq", 1, d, 1, M_(cbq)},
        {"tf_cross_wkv", d, 2 * d, 1, M_(cwkv)}, {"tf_cross_bkv", 1, 2 * d, 1, M_(cbkv)},
        {"tf_cross_wo", d, d, 1, M_(cwo)},       {"tf_cross_bo", 1, d, 1, M_(cbo)},
        {"tf_ln3_g", 1, d, 1, M_(ln3_g)},        {"tf_ln3_b", 1, d, 1, M_(ln3_b)},
        {"tf_ff_w1", d, F, 1, M_(w1)},           {"tf_ff_b1", 1, F, 1, M_(b1)},
        {"tf_ff_w2", F, d, 1, M_(w2)},           {"tf_ff_b2", 1, d, 1, M_(b2)},
        {"tf_lnf_g", 1, d, 0, M_(lnf_g)},        {"tf_lnf_b", 1, d, 0, M_(lnf_b)},
        {"out_lo", d, V, 0, M_(out_w)},          {"out_bo", 1, V, 0, M_(out_b)},
#undef M_
    };
    size_t off = 0;
    for (int i = 0; i < N_TF; i++) {
        t[i] = (ac_dec_tensor){s[i].name, s[i].stacked ? Y * s[i].rows : s[i].rows, s[i].cols, off};
        off += (size_t)t[i].rows * (size_t)t[i].cols;
        if (member) member[i] = s[i].member;
        if (stacked) stacked[i] = s[i].stacked;
    }
    return N_TF;
}

int ac_tf_tensors(const ac_decoder_config *c, ac_dec_tensor *t, size_t *n_params) {
    const int n = spec(c, t, NULL, NULL);
    if (n_params) *n_params = t[n - 1].offset + (size_t)t[n - 1].rows * t[n - 1].cols;
    return n;
}

ac_tf_view ac_tf_view_of(const ac_decoder_config *c, float *base) {
    ac_tf_view v;
    ac_dec_tensor t[N_TF];
    size_t member[N_TF];
    spec(c, t, member, NULL);
    for (int i = 0; i < N_TF; i++) *(float **)(void *)((char *)&v + member[i]) = base + t[i].offset;
    return v;
}

int ac_tf_check_config(const ac_decoder_config *c, ac_err *err) {
    if (c->layers < 1 || c->layers > 64) return ac_errf(err, "transformer layers = %d out of range [1, 64]", c->layers);
    if (c->embed % 2) return ac_errf(err, "transformer width %d must be even (sine and cosine positions)", c->embed);
    if (c->att != c->embed)
        return ac_errf(err, "transformer attention width %d must be its width %d (att = embed)", c->att, c->embed);
    return 0;
}

void ac_tf_init(ac_decoder *dec, uint64_t seed) {
    const ac_decoder_config *c = &dec->cfg;
    ac_dec_tensor t[N_TF];
    int stacked[N_TF];
    spec(c, t, NULL, stacked);
    uint64_t s = seed * 0x2545F4914F6CDD1Dull + 777;
    for (int i = 0; i < N_TF; i++) {
        float *p = dec->params + t[i].offset;
        const size_t n = (size_t)t[i].rows * t[i].cols;
        const char *nm = t[i].name;
        const size_t k = strlen(nm);
        const int gain = k > 2 && !strcmp(nm + k - 2, "_g"); /* a layer norm's gain */
        const int vector = t[i].rows == (stacked[i] ? c->layers : 1);
        const double in = stacked[i] ? (double)t[i].rows / c->layers : t[i].rows;
        double r = 0;
        if (!strcmp(nm, "emb")) r = sqrt(3.0 / c->embed); /* standard deviation 1 / sqrt(d) */
        else if (!vector) r = sqrt(6.0 / (in + t[i].cols)); /* Glorot uniform, per layer */
        for (size_t j = 0; j < n; j++) p[j] = gain ? 1.0f : r ? (float)((2 * ac_uniform01(&s) - 1) * r) : 0.0f;
    }
}

/* ---- kernels shared with training ---- */

void ac_tf_position(int d, int t, float *pe) {
    for (int i = 0; i < d / 2; i++) {
        const double a = t / pow(10000.0, 2.0 * i / d);
        pe[2 * i] = (float)sin(a), pe[2 * i + 1] = (float)cos(a);
    }
}

void ac_tf_layer_norm(int n, int d, const float *x, const float *g, const float *b, float *y, float *xhat,
                      float *rstd) {
    for (int r = 0; r < n; r++) {
        const float *xr = x + (size_t)r * d;
        float *yr = y + (size_t)r * d, mean = 0, var = 0;
        for (int j = 0; j < d; j++) mean += xr[j];
        mean /= (float)d;
        for (int j = 0; j < d; j++) var += (xr[j] - mean) * (xr[j] - mean);
        const float rs = 1.0f / sqrtf(var / (float)d + AC_TF_LN_EPS);
        if (rstd) rstd[r] = rs;
        for (int j = 0; j < d; j++) {
            const float h = (xr[j] - mean) * rs;
            if (xhat) xhat[(size_t)r * d + j] = h;
            yr[j] = h * g[j] + b[j];
        }
    }
}

/* ---- inference ---- */

ac_dec_image *ac_tf_prepare(const ac_decoder *dec, const float *ann, int n) {
    const ac_tf_dims z = ac_tf_dims_of(&dec->cfg);
    const ac_tf_view P = ac_tf_view_of(&dec->cfg, dec->params);
    const int d = z.d, L = z.L;
    ac_dec_image *im = ac_calloc(1, sizeof *im);
    float *m = ac_malloc(sizeof(float) * (size_t)L * d);
    if (im) im->kv = ac_malloc(sizeof(float) * (size_t)z.Y * L * 2 * d);
    if (!im || !m || !im->kv) {
        free(m);
        if (im) free(im->kv), free(im);
        return NULL;
    }
    im->L = L, im->D = z.D, im->A = d, im->n = n;
    for (int l = 0; l < n; l++) memcpy(m + (size_t)l * d, P.mem_b, sizeof(float) * d);
    ac_smm_nn(n, d, z.D, ann, z.D, P.mem_w, d, m, d);
    ac_tf_layer_norm(n, d, m, P.mem_g, P.mem_bn, m, NULL, NULL);
    for (int y = 0; y < z.Y; y++) { /* each layer's keys and values of the photo's own cells */
        float *kv = im->kv + (size_t)y * L * 2 * d;
        for (int l = 0; l < n; l++) memcpy(kv + (size_t)l * 2 * d, AC_TF_LAYER(P.cbkv, y, 2 * d), sizeof(float) * 2 * d);
        ac_smm_nn(n, 2 * d, d, m, d, AC_TF_LAYER(P.cwkv, y, (size_t)d * 2 * d), 2 * d, kv, 2 * d);
    }
    free(m);
    return im;
}

size_t ac_tf_step_scratch(const ac_decoder_config *c, int K, int t_max) {
    const ac_tf_dims z = ac_tf_dims_of(c);
    const size_t k = (size_t)(K > 0 ? K : 1), sc = (size_t)(t_max + 1 > z.L ? t_max + 1 : z.L);
    return k * (7 * (size_t)z.d + (size_t)z.F + (size_t)z.nh * z.L) + (size_t)z.d + sc;
}

static float dot(const float *a, const float *b, int n) {
    float s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* x [K, d] += b + in [K, n] W [n, d]: a residual branch's output projection (tmp [K, d]). */
static void branch_add(int K, int d, int n, const float *in, const float *W, const float *b, float *tmp, float *x) {
    for (int k = 0; k < K; k++) memcpy(tmp + (size_t)k * d, b, sizeof(float) * d);
    ac_smm_nn(K, d, n, in, n, W, d, tmp, d);
    for (size_t i = 0; i < (size_t)K * d; i++) x[i] += tmp[i];
}

/* Every product is ac_smm_nn's (each output summed in a fixed order, whatever the other rows), and the
 * attention runs row by row: a row's results are the same bits in any company, as the LSTM's step. */
void ac_tf_step(const ac_decoder *dec, int n_photos, const ac_dec_image *const *img, const int *rows, int t,
                const int *prev, const float *const *hist, float *hist_out, float *logp, float *alpha, float *beta,
                float *buf) {
    const ac_tf_dims z = ac_tf_dims_of(&dec->cfg);
    const ac_tf_view P = ac_tf_view_of(&dec->cfg, dec->params);
    const int d = z.d, F = z.F, nh = z.nh, dh = z.dh, L = z.L, V = z.V, Y = z.Y;
    const size_t HP = (size_t)Y * 2 * d; /* history floats per position */
    const float scale = 1.0f / sqrtf((float)dh);
    int K = 0;
    for (int p = 0; p < n_photos; p++) K += rows[p];
    if (K <= 0) return;
    float *x = buf, *u = x + (size_t)K * d, *qkv = u + (size_t)K * d, *att = qkv + (size_t)K * 3 * d;
    float *tmp = att + (size_t)K * d, *f = tmp + (size_t)K * d, *probs = f + (size_t)K * F;
    float *pe = probs + (size_t)K * nh * L, *sc = pe + d;
    ac_tf_position(d, t, pe);
    const float sq = sqrtf((float)d);
    for (int k = 0; k < K; k++) {
        const int w = prev[k] >= 0 && prev[k] < V ? prev[k] : AC_UNK;
        for (int j = 0; j < d; j++) x[(size_t)k * d + j] = sq * P.emb[(size_t)w * d + j] + pe[j];
    }
    for (int y = 0; y < Y; y++) {
        /* masked self-attention: position t against positions 0..t of its own row (the cache, then itself) */
        ac_tf_layer_norm(K, d, x, AC_TF_LAYER(P.ln1_g, y, d), AC_TF_LAYER(P.ln1_b, y, d), u, NULL, NULL);
        for (int k = 0; k < K; k++) memcpy(qkv + (size_t)k * 3 * d, AC_TF_LAYER(P.bqkv, y, 3 * d), sizeof(float) * 3 * d);
        ac_smm_nn(K, 3 * d, d, u, d, AC_TF_LAYER(P.wqkv, y, (size_t)d * 3 * d), 3 * d, qkv, 3 * d);
        for (int k = 0; k < K; k++) {
            const float *q = qkv + (size_t)k * 3 * d;
            float *mine = hist_out + (size_t)k * HP + (size_t)y * 2 * d;
            memcpy(mine, q + d, sizeof(float) * 2 * d);
            for (int h = 0; h < nh; h++) {
                for (int j = 0; j <= t; j++) {
                    const float *kj = (j < t ? hist[k] + (size_t)j * HP + (size_t)y * 2 * d : mine) + h * dh;
                    sc[j] = dot(q + h * dh, kj, dh) * scale;
                }
                ac_softmax_row(sc, t + 1, 0);
                float *o = att + (size_t)k * d + h * dh;
                memset(o, 0, sizeof(float) * dh);
                for (int j = 0; j <= t; j++) {
                    const float *vj = (j < t ? hist[k] + (size_t)j * HP + (size_t)y * 2 * d : mine) + d + h * dh;
                    for (int i = 0; i < dh; i++) o[i] += sc[j] * vj[i];
                }
            }
        }
        branch_add(K, d, d, att, AC_TF_LAYER(P.wo, y, (size_t)d * d), AC_TF_LAYER(P.bo, y, d), tmp, x);
        /* cross-attention: each row against its photo's own cells' keys and values (n of the L) */
        ac_tf_layer_norm(K, d, x, AC_TF_LAYER(P.ln2_g, y, d), AC_TF_LAYER(P.ln2_b, y, d), u, NULL, NULL);
        float *q = qkv;
        for (int k = 0; k < K; k++) memcpy(q + (size_t)k * d, AC_TF_LAYER(P.cbq, y, d), sizeof(float) * d);
        ac_smm_nn(K, d, d, u, d, AC_TF_LAYER(P.cwq, y, (size_t)d * d), d, q, d);
        for (int p = 0, k0 = 0; p < n_photos; k0 += rows[p++]) {
            const float *kv = img[p]->kv + (size_t)y * L * 2 * d;
            const int n = img[p]->n;
            for (int k = k0; k < k0 + rows[p]; k++)
                for (int h = 0; h < nh; h++) {
                    const float *qh = q + (size_t)k * d + h * dh;
                    for (int l = 0; l < n; l++) sc[l] = dot(qh, kv + (size_t)l * 2 * d + h * dh, dh) * scale;
                    ac_softmax_row(sc, n, 0);
                    for (int l = n; l < L; l++) sc[l] = 0;
                    float *o = att + (size_t)k * d + h * dh;
                    memset(o, 0, sizeof(float) * dh);
                    for (int l = 0; l < n; l++) {
                        const float *vl = kv + (size_t)l * 2 * d + d + h * dh;
                        for (int i = 0; i < dh; i++) o[i] += sc[l] * vl[i];
                    }
                    if (y == Y - 1) memcpy(probs + ((size_t)k * nh + h) * L, sc, sizeof(float) * L);
                }
        }
        branch_add(K, d, d, att, AC_TF_LAYER(P.cwo, y, (size_t)d * d), AC_TF_LAYER(P.cbo, y, d), tmp, x);
        /* position-wise feed-forward */
        ac_tf_layer_norm(K, d, x, AC_TF_LAYER(P.ln3_g, y, d), AC_TF_LAYER(P.ln3_b, y, d), u, NULL, NULL);
        for (int k = 0; k < K; k++) memcpy(f + (size_t)k * F, AC_TF_LAYER(P.b1, y, F), sizeof(float) * F);
        ac_smm_nn(K, F, d, u, d, AC_TF_LAYER(P.w1, y, (size_t)d * F), F, f, F);
        for (size_t i = 0; i < (size_t)K * F; i++) f[i] = f[i] > 0 ? f[i] : 0;
        branch_add(K, d, F, f, AC_TF_LAYER(P.w2, y, (size_t)F * d), AC_TF_LAYER(P.b2, y, d), tmp, x);
    }
    ac_tf_layer_norm(K, d, x, P.lnf_g, P.lnf_b, u, NULL, NULL);
    for (int k = 0; k < K; k++) memcpy(logp + (size_t)k * V, P.out_b, sizeof(float) * V);
    ac_smm_nn(K, V, d, u, d, P.out_w, V, logp, V);
    for (int k = 0; k < K; k++) ac_softmax_row(logp + (size_t)k * V, V, 1);
    /* what the overlays show: the last layer's cross-attention, the heads' mean or the head asked for */
    for (int k = 0; k < K; k++) {
        const float *pk = probs + (size_t)k * nh * L;
        for (int l = 0; l < L; l++) {
            float s = 0;
            for (int h = 0; h < nh; h++) s += pk[(size_t)h * L + l];
            alpha[(size_t)k * L + l] = dec->shown_head > 0 ? pk[(size_t)(dec->shown_head - 1) * L + l] : s / nh;
        }
        if (beta) beta[k] = 1.0f;
    }
}
