/* transformer_train.c: batched forward and backward of the transformer decoder (decoder.h; its
 * parameters and inference step are transformer.c's).
 *
 * Layout. Token rows are caption-major: caption b's steps t = 0 .. len[b] - 1 are rows off[b] + t
 * (inputs <start> w_1 .. w_n at positions 0 .. n, targets w_1 .. w_n <end>). Everything position-wise
 * (layer norms, projections, the feed-forward, the output) is one sgemm over all N rows; the attention
 * runs per caption and head: self-attention over the caption's own rows with the causal mask,
 * cross-attention against its photo's keys and values, which the captions of a photo share (computed
 * once per photo and layer, and their gradients summed there).
 *
 * Objective (what grad differentiates; tools/torch_transformer.py computes the same):
 *   loss = sum_tokens -log p(target) / N
 * Dropout (train, p = config.dropout) multiplies by keep / (1 - p) the embedded input x_0 (site 0) and
 * each residual branch's output before it is added (site 1 + 3 l + j: j = 0 self-attention, 1 cross-
 * attention, 2 feed-forward of layer l), element r d + i of a site kept iff ac_dropout_keep(site_seed,
 * r d + i, p), site_seed = ac_mix64(seed + 0xD6E8FEB86659FD93 (site + 1)). */
#pragma GCC optimize("O3")
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention_internal.h"
#include "decoder_internal.h"
#include "transformer_internal.h"
#include "alloc_internal.h"

struct ac_tf_work {
    ac_decoder_config cfg;
    ac_tf_dims z;
    int B, N, U, T, S2;            /* captions, tokens, photos, longest caption, sum of len^2 */
    int dropped;                   /* the last forward drew dropout masks (ms, mc, mf, m0 hold them) */
    int capB, capN, capU, capT, capS2;
    int *len, *off, *soff, *uimg;  /* [B], [B + 1], [B + 1] (offsets of each caption's len^2 block), [B] */
    int *uval;                     /* [B]: each photo's own cells (the first uval[u] of its L; the rest padding,
                                      never read, never attended) */
    int *in_tok, *tgt, *pos;       /* [N] */
    const float **uptr;            /* [B]: the photos' annotations */
    float *pe;                     /* [T, d] */
    /* the photos' memory: [U L, d]; per layer keys and values [Y, U L, 2d] */
    float *mxh, *mrs, *mem, *ckv, *dckv, *dmem;
    /* per layer [Y, ...], per token */
    float *xh1, *rs1, *u1, *qkv, *ps, *att, *ms; /* LN_1, [q|k|v] [N, 3d], probs [S2 nh], heads' outputs, mask */
    float *xh2, *rs2, *u2, *q, *pc, *catt, *mc;  /* LN_2, queries, probs [N, nh, L], outputs, mask */
    float *xh3, *rs3, *u3, *f, *mf;              /* LN_3, relu output [N, F], mask */
    float *m0, *x, *xhf, *rsf, *y, *logits;     /* input mask, the stream, LN_f, its output, [N, V] */
    /* backward scratch */
    float *dx, *du, *dz, *dqkv, *datt, *dq, *df, *dP; /* dP: [max(T, L) T] */
};

static void *grow(void *p, size_t n) {
    free(p);
    return ac_malloc(n ? n : 1);
}

/* Buffers for B captions, N tokens, U photos, T steps, S2 = sum len^2. -1: out of memory. */
static int reserve(ac_tf_work *w, int B, int N, int U, int T, int S2) {
    const ac_tf_dims z = w->z;
    const size_t d = z.d, F = z.F, Y = z.Y, L = z.L, nh = z.nh, V = z.V;
    int ok = 1;
#define AL(p, n) ok &= (((p) = grow((p), sizeof(*(p)) * (n))) != NULL)
    if (B > w->capB) {
        const size_t b = (size_t)B;
        AL(w->len, b), AL(w->off, b + 1), AL(w->soff, b + 1), AL(w->uimg, b), AL(w->uptr, b), AL(w->uval, b);
        w->capB = B;
    }
    if (U > w->capU) {
        const size_t ul = (size_t)U * L;
        AL(w->mxh, ul * d), AL(w->mrs, ul), AL(w->mem, ul * d), AL(w->ckv, Y * ul * 2 * d), AL(w->dckv, ul * 2 * d);
        AL(w->dmem, ul * d);
        w->capU = U;
    }
    if (T > w->capT) {
        const size_t t = (size_t)T, lt = L > t ? L : t;
        AL(w->pe, t * d), AL(w->dP, lt * t);
        w->capT = T;
    }
    if (S2 > w->capS2) {
        AL(w->ps, Y * (size_t)S2 * nh);
        w->capS2 = S2;
    }
    if (N > w->capN) {
        const size_t n = (size_t)N, nd = n * d;
        AL(w->in_tok, n), AL(w->tgt, n), AL(w->pos, n);
        AL(w->xh1, Y * nd), AL(w->rs1, Y * n), AL(w->u1, Y * nd), AL(w->qkv, Y * 3 * nd), AL(w->att, Y * nd);
        AL(w->ms, Y * nd), AL(w->xh2, Y * nd), AL(w->rs2, Y * n), AL(w->u2, Y * nd), AL(w->q, Y * nd);
        AL(w->pc, Y * n * nh * L), AL(w->catt, Y * nd), AL(w->mc, Y * nd), AL(w->xh3, Y * nd), AL(w->rs3, Y * n);
        AL(w->u3, Y * nd), AL(w->f, Y * n * F), AL(w->mf, Y * nd), AL(w->m0, nd), AL(w->x, nd), AL(w->xhf, nd);
        AL(w->rsf, n), AL(w->y, nd), AL(w->logits, n * V), AL(w->dx, nd), AL(w->du, nd), AL(w->dz, nd);
        AL(w->dqkv, 3 * nd), AL(w->datt, nd), AL(w->dq, nd), AL(w->df, n * F);
        w->capN = N;
    }
#undef AL
    if (!ok) w->capB = w->capN = w->capU = w->capT = w->capS2 = 0; /* reallocate everything next time */
    return ok ? 0 : -1;
}

ac_tf_work *ac_tf_work_new(const ac_decoder_config *c) {
    ac_tf_work *w = ac_calloc(1, sizeof *w);
    if (!w) return NULL;
    w->cfg = *c, w->z = ac_tf_dims_of(c);
    return w;
}

void ac_tf_work_free(ac_tf_work *w) {
    if (!w) return;
    void *ps[] = {w->len, w->off, w->soff, w->uimg, w->uval, (void *)w->uptr, w->in_tok, w->tgt, w->pos, w->pe, w->mxh,
                  w->mrs, w->mem, w->ckv, w->dckv, w->dmem, w->xh1, w->rs1, w->u1, w->qkv, w->ps, w->att, w->ms,
                  w->xh2, w->rs2, w->u2, w->q, w->pc, w->catt, w->mc, w->xh3, w->rs3, w->u3, w->f, w->mf, w->m0,
                  w->x, w->xhf, w->rsf, w->y, w->logits, w->dx, w->du, w->dz, w->dqkv, w->datt, w->dq, w->df, w->dP};
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) free(ps[i]);
    free(w);
}

const float *ac_tf_work_logits(const ac_tf_work *w) { return w->logits; }

/* C = alpha op(A) op(B) + beta C, row-major; skips empty products. */
static void mm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
               float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0 || K <= 0) return;
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda,
                B, ldb, beta, C, ldc);
}

static void rows_set(float *x, int n, int k, const float *v) {
    for (int i = 0; i < n; i++) memcpy(x + (size_t)i * k, v, sizeof(float) * k);
}

static void colsum_add(const float *x, int n, int k, float *out) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < k; j++) out[j] += x[(size_t)i * k + j];
}

static uint64_t site_seed(uint64_t seed, int site) { return ac_mix64(seed + 0xD6E8FEB86659FD93ull * (uint64_t)(site + 1)); }

/* m [N, d] = the site's dropout mask (0 or 1 / (1 - p)). */
static void make_mask(float *m, size_t n, uint64_t seed, int site, float p) {
    const uint64_t s = site_seed(seed, site);
    const float keep = 1.0f / (1.0f - p);
    for (size_t i = 0; i < n; i++) m[i] = ac_dropout_keep(s, i, p) ? keep : 0.0f;
}

/* Softmax of each of n rows (stride ld) over its first k(i) entries, the rest set to 0: k(i) = i + 1
 * when causal (the self-attention's mask), else `valid` (the photo's own cells of the cols). */
static void softmax_rows(float *p, int n, int cols, int ld, int causal, int valid) {
    for (int i = 0; i < n; i++) {
        float *r = p + (size_t)i * ld, m = r[0], s = 0;
        const int k = causal ? i + 1 : valid;
        for (int j = 1; j < k; j++) m = r[j] > m ? r[j] : m;
        for (int j = 0; j < k; j++) s += (r[j] = expf(r[j] - m));
        for (int j = 0; j < k; j++) r[j] /= s;
        for (int j = k; j < cols; j++) r[j] = 0;
    }
}

/* d scores / scale = P (dP - rowsum(dP P)) in place of dP [n, cols] (P's rows at stride ldp). */
static void softmax_back(const float *P, int ldp, float *dP, int n, int cols) {
    for (int i = 0; i < n; i++) {
        float *r = dP + (size_t)i * cols;
        ac_attention_softmax_backward(P + (size_t)i * ldp, r, 1, cols, r);
    }
}

/* Layer norm backward over n rows: dx (= or +=) from dy, with the forward's xhat and rstd; dg, db +=. */
static void ln_back(int n, int d, const float *dy, const float *g, const float *xhat, const float *rstd, float *dx,
                    int add, float *dg, float *db) {
    for (int r = 0; r < n; r++) {
        const float *dyr = dy + (size_t)r * d, *xr = xhat + (size_t)r * d;
        float *dxr = dx + (size_t)r * d, m1 = 0, m2 = 0;
        for (int j = 0; j < d; j++) {
            const float dh = dyr[j] * g[j];
            m1 += dh, m2 += dh * xr[j];
            dg[j] += dyr[j] * xr[j], db[j] += dyr[j];
        }
        m1 /= (float)d, m2 /= (float)d;
        for (int j = 0; j < d; j++) {
            const float v = rstd[r] * (dyr[j] * g[j] - m1 - xr[j] * m2);
            dxr[j] = add ? dxr[j] + v : v;
        }
    }
}

/* x += mask * (b + in W): a residual branch (in [N, n], W [n, d]); z [N, d] keeps b + in W. */
static void branch_fwd(int N, int d, int n, const float *in, const float *W, const float *b, const float *mask,
                       float *z, float *x) {
    rows_set(z, N, d, b);
    mm(0, 0, N, d, n, 1.0f, in, n, W, d, 1.0f, z, d);
    for (size_t i = 0; i < (size_t)N * d; i++) x[i] += mask ? mask[i] * z[i] : z[i];
}

/* Its backward: dz = mask * dx; gW += in^T dz, gb += colsum dz; din = dz W^T. */
static void branch_back(int N, int d, int n, const float *in, const float *W, const float *mask, const float *dx,
                        float *dz, float *gW, float *gb, float *din) {
    for (size_t i = 0; i < (size_t)N * d; i++) dz[i] = mask ? mask[i] * dx[i] : dx[i];
    colsum_add(dz, N, d, gb);
    mm(1, 0, n, d, N, 1.0f, in, n, dz, d, 0.0f, gW, d);
    mm(0, 1, N, n, d, 1.0f, dz, d, W, d, 0.0f, din, n);
}

/* ---- forward ---- */

static void forward(const ac_decoder *dec, ac_tf_work *w, int train, uint64_t seed, ac_dec_stats *st) {
    const ac_tf_dims z = w->z;
    const ac_tf_view P = ac_tf_view_of(&dec->cfg, dec->params);
    const int d = z.d, F = z.F, nh = z.nh, dh = z.dh, L = z.L, V = z.V, N = w->N, UL = w->U * L;
    const size_t nd = (size_t)N * d;
    const float p = train ? dec->cfg.dropout : 0.0f, scale = 1.0f / sqrtf((float)dh), sq = sqrtf((float)d);
    w->dropped = p > 0;
    /* the photos' memory, and every layer's keys and values of it */
    rows_set(w->mem, UL, d, P.mem_b);
    for (int u = 0; u < w->U; u++) /* a padded cell's memory is LN(b_m): never attended */
        mm(0, 0, w->uval[u], d, z.D, 1.0f, w->uptr[u], z.D, P.mem_w, d, 1.0f, w->mem + (size_t)u * L * d, d);
    ac_tf_layer_norm(UL, d, w->mem, P.mem_g, P.mem_bn, w->mem, w->mxh, w->mrs);
    for (int l = 0; l < z.Y; l++) {
        float *kv = w->ckv + (size_t)l * UL * 2 * d;
        rows_set(kv, UL, 2 * d, AC_TF_LAYER(P.cbkv, l, 2 * d));
        mm(0, 0, UL, 2 * d, d, 1.0f, w->mem, d, AC_TF_LAYER(P.cwkv, l, (size_t)d * 2 * d), 2 * d, 1.0f, kv, 2 * d);
    }
    /* x_0 */
    for (int t = 0; t < w->T; t++) ac_tf_position(d, t, w->pe + (size_t)t * d);
    for (int r = 0; r < N; r++)
        for (int j = 0; j < d; j++)
            w->x[(size_t)r * d + j] = sq * P.emb[(size_t)w->in_tok[r] * d + j] + w->pe[(size_t)w->pos[r] * d + j];
    if (p > 0) {
        make_mask(w->m0, nd, seed, 0, p);
        for (size_t i = 0; i < nd; i++) w->x[i] *= w->m0[i];
    }
    for (int l = 0; l < z.Y; l++) {
        float *u1 = w->u1 + l * nd, *qkv = w->qkv + l * 3 * nd, *att = w->att + l * nd, *ps = w->ps + (size_t)l * w->S2 * nh;
        float *u2 = w->u2 + l * nd, *q = w->q + l * nd, *pc = w->pc + (size_t)l * N * nh * L, *catt = w->catt + l * nd;
        float *u3 = w->u3 + l * nd, *f = w->f + (size_t)l * N * F, *kv = w->ckv + (size_t)l * UL * 2 * d;
        float *ms = p > 0 ? w->ms + l * nd : NULL, *mc = p > 0 ? w->mc + l * nd : NULL, *mf = p > 0 ? w->mf + l * nd : NULL;
        if (p > 0) {
            make_mask(ms, nd, seed, 1 + 3 * l, p), make_mask(mc, nd, seed, 2 + 3 * l, p);
            make_mask(mf, nd, seed, 3 + 3 * l, p);
        }
        /* masked self-attention */
        ac_tf_layer_norm(N, d, w->x, AC_TF_LAYER(P.ln1_g, l, d), AC_TF_LAYER(P.ln1_b, l, d), u1, w->xh1 + l * nd,
                         w->rs1 + (size_t)l * N);
        rows_set(qkv, N, 3 * d, AC_TF_LAYER(P.bqkv, l, 3 * d));
        mm(0, 0, N, 3 * d, d, 1.0f, u1, d, AC_TF_LAYER(P.wqkv, l, (size_t)d * 3 * d), 3 * d, 1.0f, qkv, 3 * d);
        for (int b = 0; b < w->B; b++)
            for (int h = 0; h < nh; h++) {
                const int n = w->len[b];
                const float *Q = qkv + (size_t)w->off[b] * 3 * d + h * dh;
                float *Pb = ps + (size_t)w->soff[b] * nh + (size_t)h * n * n;
                mm(0, 1, n, n, dh, scale, Q, 3 * d, Q + d, 3 * d, 0.0f, Pb, n);
                softmax_rows(Pb, n, n, n, 1, n);
                mm(0, 0, n, dh, n, 1.0f, Pb, n, Q + 2 * d, 3 * d, 0.0f, att + (size_t)w->off[b] * d + h * dh, d);
            }
        branch_fwd(N, d, d, att, AC_TF_LAYER(P.wo, l, (size_t)d * d), AC_TF_LAYER(P.bo, l, d), ms, w->dz, w->x);
        /* cross-attention */
        ac_tf_layer_norm(N, d, w->x, AC_TF_LAYER(P.ln2_g, l, d), AC_TF_LAYER(P.ln2_b, l, d), u2, w->xh2 + l * nd,
                         w->rs2 + (size_t)l * N);
        rows_set(q, N, d, AC_TF_LAYER(P.cbq, l, d));
        mm(0, 0, N, d, d, 1.0f, u2, d, AC_TF_LAYER(P.cwq, l, (size_t)d * d), d, 1.0f, q, d);
        for (int b = 0; b < w->B; b++)
            for (int h = 0; h < nh; h++) {
                const int n = w->len[b], r0 = w->off[b];
                const float *Kc = kv + (size_t)w->uimg[b] * L * 2 * d + h * dh;
                float *Pc = pc + ((size_t)r0 * nh + h) * L;
                mm(0, 1, n, L, dh, scale, q + (size_t)r0 * d + h * dh, d, Kc, 2 * d, 0.0f, Pc, nh * L);
                softmax_rows(Pc, n, L, nh * L, 0, w->uval[w->uimg[b]]); /* padded cells get 0 */
                mm(0, 0, n, dh, L, 1.0f, Pc, nh * L, Kc + d, 2 * d, 0.0f, catt + (size_t)r0 * d + h * dh, d);
            }
        branch_fwd(N, d, d, catt, AC_TF_LAYER(P.cwo, l, (size_t)d * d), AC_TF_LAYER(P.cbo, l, d), mc, w->dz, w->x);
        /* feed-forward */
        ac_tf_layer_norm(N, d, w->x, AC_TF_LAYER(P.ln3_g, l, d), AC_TF_LAYER(P.ln3_b, l, d), u3, w->xh3 + l * nd,
                         w->rs3 + (size_t)l * N);
        rows_set(f, N, F, AC_TF_LAYER(P.b1, l, F));
        mm(0, 0, N, F, d, 1.0f, u3, d, AC_TF_LAYER(P.w1, l, (size_t)d * F), F, 1.0f, f, F);
        for (size_t i = 0; i < (size_t)N * F; i++) f[i] = f[i] > 0 ? f[i] : 0;
        branch_fwd(N, d, F, f, AC_TF_LAYER(P.w2, l, (size_t)F * d), AC_TF_LAYER(P.b2, l, d), mf, w->dz, w->x);
    }
    ac_tf_layer_norm(N, d, w->x, P.lnf_g, P.lnf_b, w->y, w->xhf, w->rsf);
    rows_set(w->logits, N, V, P.out_b);
    mm(0, 0, N, V, d, 1.0f, w->y, d, P.out_w, V, 1.0f, w->logits, V);
    const double ce = ac_xent_sum(w->logits, N, V, w->tgt);
    st->ce_sum = ce, st->weighted_sum = ce, st->pen_sum = 0, st->ntok = N, st->loss = ce / N;
}

/* ---- backward ---- */

static void backward(const ac_decoder *dec, ac_tf_work *w, float *grad, float *dctx_sum) {
    const ac_tf_dims z = w->z;
    const ac_tf_view P = ac_tf_view_of(&dec->cfg, dec->params);
    memset(grad, 0, sizeof(float) * dec->n_params);
    const ac_tf_view G = ac_tf_view_of(&dec->cfg, grad);
    const int d = z.d, F = z.F, nh = z.nh, dh = z.dh, L = z.L, V = z.V, N = w->N, UL = w->U * L;
    const size_t nd = (size_t)N * d;
    const float scale = 1.0f / sqrtf((float)dh), inv = 1.0f / N, sq = sqrtf((float)d);
    ac_xent_grad(w->logits, N, V, w->tgt, inv); /* logits -> (softmax - onehot) / N */
    colsum_add(w->logits, N, V, G.out_b);
    mm(1, 0, d, V, N, 1.0f, w->y, d, w->logits, V, 0.0f, G.out_w, V);
    mm(0, 1, N, d, V, 1.0f, w->logits, V, P.out_w, V, 0.0f, w->du, d);
    ln_back(N, d, w->du, P.lnf_g, w->xhf, w->rsf, w->dx, 0, G.lnf_g, G.lnf_b);
    memset(w->dmem, 0, sizeof(float) * (size_t)UL * d);
    for (int l = z.Y - 1; l >= 0; l--) {
        const float *u1 = w->u1 + l * nd, *qkv = w->qkv + l * 3 * nd, *att = w->att + l * nd;
        const float *ps = w->ps + (size_t)l * w->S2 * nh, *u2 = w->u2 + l * nd, *q = w->q + l * nd;
        const float *pc = w->pc + (size_t)l * N * nh * L, *catt = w->catt + l * nd, *u3 = w->u3 + l * nd;
        const float *f = w->f + (size_t)l * N * F, *kv = w->ckv + (size_t)l * UL * 2 * d;
        const float *ms = w->dropped ? w->ms + l * nd : NULL, *mc = w->dropped ? w->mc + l * nd : NULL,
                    *mf = w->dropped ? w->mf + l * nd : NULL;
        /* feed-forward */
        branch_back(N, d, F, f, AC_TF_LAYER(P.w2, l, (size_t)F * d), mf, w->dx, w->dz, AC_TF_LAYER(G.w2, l, (size_t)F * d),
                    AC_TF_LAYER(G.b2, l, d), w->df);
        for (size_t i = 0; i < (size_t)N * F; i++) w->df[i] = f[i] > 0 ? w->df[i] : 0;
        colsum_add(w->df, N, F, AC_TF_LAYER(G.b1, l, F));
        mm(1, 0, d, F, N, 1.0f, u3, d, w->df, F, 0.0f, AC_TF_LAYER(G.w1, l, (size_t)d * F), F);
        mm(0, 1, N, d, F, 1.0f, w->df, F, AC_TF_LAYER(P.w1, l, (size_t)d * F), F, 0.0f, w->du, d);
        ln_back(N, d, w->du, AC_TF_LAYER(P.ln3_g, l, d), w->xh3 + l * nd, w->rs3 + (size_t)l * N, w->dx, 1,
                AC_TF_LAYER(G.ln3_g, l, d), AC_TF_LAYER(G.ln3_b, l, d));
        /* cross-attention */
        branch_back(N, d, d, catt, AC_TF_LAYER(P.cwo, l, (size_t)d * d), mc, w->dx, w->dz, AC_TF_LAYER(G.cwo, l, (size_t)d * d),
                    AC_TF_LAYER(G.cbo, l, d), w->datt);
        memset(w->dckv, 0, sizeof(float) * (size_t)UL * 2 * d);
        for (int b = 0; b < w->B; b++)
            for (int h = 0; h < nh; h++) {
                const int n = w->len[b], r0 = w->off[b];
                const size_t ko = (size_t)w->uimg[b] * L * 2 * d + h * dh;
                const float *Pc = pc + ((size_t)r0 * nh + h) * L, *dO = w->datt + (size_t)r0 * d + h * dh;
                mm(0, 1, n, L, dh, 1.0f, dO, d, kv + ko + d, 2 * d, 0.0f, w->dP, L);           /* dP = dO V^T */
                mm(1, 0, L, dh, n, 1.0f, Pc, nh * L, dO, d, 1.0f, w->dckv + ko + d, 2 * d);     /* dV += P^T dO */
                softmax_back(Pc, nh * L, w->dP, n, L);
                mm(0, 0, n, dh, L, scale, w->dP, L, kv + ko, 2 * d, 0.0f, w->dq + (size_t)r0 * d + h * dh, d); /* dQ */
                mm(1, 0, L, dh, n, scale, w->dP, L, q + (size_t)r0 * d + h * dh, d, 1.0f, w->dckv + ko, 2 * d); /* dK */
            }
        colsum_add(w->dq, N, d, AC_TF_LAYER(G.cbq, l, d));
        mm(1, 0, d, d, N, 1.0f, u2, d, w->dq, d, 0.0f, AC_TF_LAYER(G.cwq, l, (size_t)d * d), d);
        mm(0, 1, N, d, d, 1.0f, w->dq, d, AC_TF_LAYER(P.cwq, l, (size_t)d * d), d, 0.0f, w->du, d);
        ln_back(N, d, w->du, AC_TF_LAYER(P.ln2_g, l, d), w->xh2 + l * nd, w->rs2 + (size_t)l * N, w->dx, 1,
                AC_TF_LAYER(G.ln2_g, l, d), AC_TF_LAYER(G.ln2_b, l, d));
        colsum_add(w->dckv, UL, 2 * d, AC_TF_LAYER(G.cbkv, l, 2 * d));
        mm(1, 0, d, 2 * d, UL, 1.0f, w->mem, d, w->dckv, 2 * d, 0.0f, AC_TF_LAYER(G.cwkv, l, (size_t)d * 2 * d), 2 * d);
        mm(0, 1, UL, d, 2 * d, 1.0f, w->dckv, 2 * d, AC_TF_LAYER(P.cwkv, l, (size_t)d * 2 * d), 2 * d, 1.0f, w->dmem, d);
        /* masked self-attention */
        branch_back(N, d, d, att, AC_TF_LAYER(P.wo, l, (size_t)d * d), ms, w->dx, w->dz, AC_TF_LAYER(G.wo, l, (size_t)d * d),
                    AC_TF_LAYER(G.bo, l, d), w->datt);
        for (int b = 0; b < w->B; b++)
            for (int h = 0; h < nh; h++) {
                const int n = w->len[b], r0 = w->off[b];
                const float *Pb = ps + (size_t)w->soff[b] * nh + (size_t)h * n * n, *Q = qkv + (size_t)r0 * 3 * d + h * dh;
                const float *dO = w->datt + (size_t)r0 * d + h * dh;
                float *dQ = w->dqkv + (size_t)r0 * 3 * d + h * dh;
                mm(0, 1, n, n, dh, 1.0f, dO, d, Q + 2 * d, 3 * d, 0.0f, w->dP, n); /* dP = dO V^T */
                mm(1, 0, n, dh, n, 1.0f, Pb, n, dO, d, 0.0f, dQ + 2 * d, 3 * d);    /* dV = P^T dO */
                softmax_back(Pb, n, w->dP, n, n);
                mm(0, 0, n, dh, n, scale, w->dP, n, Q + d, 3 * d, 0.0f, dQ, 3 * d);   /* dQ = dS K */
                mm(1, 0, n, dh, n, scale, w->dP, n, Q, 3 * d, 0.0f, dQ + d, 3 * d);   /* dK = dS^T Q */
            }
        colsum_add(w->dqkv, N, 3 * d, AC_TF_LAYER(G.bqkv, l, 3 * d));
        mm(1, 0, d, 3 * d, N, 1.0f, u1, d, w->dqkv, 3 * d, 0.0f, AC_TF_LAYER(G.wqkv, l, (size_t)d * 3 * d), 3 * d);
        mm(0, 1, N, d, 3 * d, 1.0f, w->dqkv, 3 * d, AC_TF_LAYER(P.wqkv, l, (size_t)d * 3 * d), 3 * d, 0.0f, w->du, d);
        ln_back(N, d, w->du, AC_TF_LAYER(P.ln1_g, l, d), w->xh1 + l * nd, w->rs1 + (size_t)l * N, w->dx, 1,
                AC_TF_LAYER(G.ln1_g, l, d), AC_TF_LAYER(G.ln1_b, l, d));
    }
    /* x_0 = mask (sqrt(d) emb[y] + PE) */
    for (int r = 0; r < N; r++) {
        float *ge = G.emb + (size_t)w->in_tok[r] * d;
        const float *dr = w->dx + (size_t)r * d, *m = w->dropped ? w->m0 + (size_t)r * d : NULL;
        for (int j = 0; j < d; j++) ge[j] += sq * (m ? m[j] * dr[j] : dr[j]);
    }
    /* the memory: m = LN(a W_m + b_m) */
    ln_back(UL, d, w->dmem, P.mem_g, w->mxh, w->mrs, w->dmem, 0, G.mem_g, G.mem_bn);
    colsum_add(w->dmem, UL, d, G.mem_b);
    for (int u = 0; u < w->U; u++)
        mm(1, 0, z.D, d, w->uval[u], 1.0f, w->uptr[u], z.D, w->dmem + (size_t)u * L * d, d, 1.0f, G.mem_w, d);
    if (dctx_sum) { /* a shift x of every annotation vector moves every a W_m by x W_m */
        float *cs = w->dz; /* [d] */
        memset(cs, 0, sizeof(float) * d);
        colsum_add(w->dmem, UL, d, cs);
        cblas_sgemv(CblasRowMajor, CblasNoTrans, z.D, d, 1.0f, P.mem_w, d, cs, 1, 0.0f, dctx_sum, 1);
    }
}

int ac_tf_forward_backward(const ac_decoder *dec, ac_tf_work *w, const ac_dec_batch *b, int train, uint64_t seed,
                           float *grad, ac_dec_stats *st, ac_err *err) {
    int N = 0, S2 = 0, T = 0;
    for (int i = 0; i < b->B; i++) N += b->len[i], S2 += b->len[i] * b->len[i], T = b->len[i] > T ? b->len[i] : T;
    if (reserve(w, b->B, N, b->B, T, S2)) return ac_errf(err, "decoder batch: out of memory");
    w->B = b->B, w->N = N, w->T = T, w->S2 = S2, w->U = 0;
    for (int i = 0, r = 0; i < b->B; i++) {
        const int nv = b->n_valid ? b->n_valid[i] : w->z.L;
        int u = 0;
        while (u < w->U && w->uptr[u] != b->ann[i]) u++;
        if (u == w->U) w->uptr[w->U] = b->ann[i], w->uval[w->U++] = nv; /* its captions agree (checked) */
        w->uimg[i] = u, w->len[i] = b->len[i], w->off[i] = r;
        w->soff[i] = i ? w->soff[i - 1] + b->len[i - 1] * b->len[i - 1] : 0;
        const int *ws = b->words + (size_t)i * b->stride;
        for (int t = 0; t < b->len[i]; t++, r++) {
            w->in_tok[r] = t ? ws[t - 1] : AC_START;
            w->tgt[r] = t < b->len[i] - 1 ? ws[t] : AC_END;
            w->pos[r] = t;
        }
    }
    w->off[b->B] = N;
    ac_dec_stats s = {0}; /* soft attention: no hard terms */
    forward(dec, w, train, seed, &s);
    if (st) *st = s;
    if (grad) backward(dec, w, grad, b->dctx_sum);
    return 0;
}
