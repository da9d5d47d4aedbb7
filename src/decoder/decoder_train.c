/* decoder_train.c: batched forward and backward of the soft-attention decoder (training).
 *
 * Layout. A batch holds B captions sorted by length descending, so at step t the captions still
 * running are rows 0..B_t-1. Every per-token array is [N, ...] with N = sum_t B_t, time-major:
 * block t (rows off[t] .. off[t] + B_t) holds step t of captions 0..B_t-1. This lets everything that
 * does not depend on the recurrence run as one big sgemm over all N tokens:
 *   before the loop   E y W_e  (the word part of the LSTM gates) and W_a a + b_a (per caption)
 *   after the loop    the whole deep output and the logits; in the backward pass every weight
 *                     gradient (X^T dG, Hprev^T dhW, ...) is one sgemm over N rows.
 * Only what the recurrence needs stays per step: h W_h (attention), [z; h] W_zh (gates), and in the
 * backward pass dG W_zh^T and dhW W_h^T: B_t-row products by smm.c on weights packed once per call.
 *
 * Objective (what grad differentiates; tools/torch_decoder.py uses the same):
 *   loss = ( sum_tokens -log p(target) + lambda * sum_captions sum_heads sum_i (1 - sum_t alpha_ti)^2 ) / N
 * i.e. the per-caption sums of arctic-captions (CE summed over the caption's words, plus lambda times
 * the doubly stochastic penalty), divided by the number of target tokens N of the batch. With masks
 * (ac_dec_batch.n_valid) i runs over the photo's own cells, and alpha is the masked softmax (decoder.h).
 * Hard attention (decoder.h) adds its terms per caption that samples its locations (hard_attention.c);
 * a padded cell's alpha is 0, so it is never sampled nor taken. */
#pragma GCC optimize("O3")
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/decoder.h"
#include "attention_internal.h"
#include "copy_internal.h"
#include "decoder_internal.h"
#include "hard_attention_internal.h"
#include "transformer_internal.h"
#include "alloc_internal.h"

struct ac_dec_work {
    ac_decoder_config cfg;
    ac_tf_work *tf; /* a transformer's work (transformer_train.c); the rest is the LSTM's */
    int capB, capT, capN;
    int B, T, N;
    int *bt, *off; /* [capT], [capT + 1] */
    int *in_tok, *tgt; /* [N] */
    /* per photo: captions of the same photo (same ann pointer) share its annotations, W_a a + b_a and
     * its gradient, so a batch of 5 captions per photo computes those once per photo */
    int U, *uimg;                     /* photos in the batch; caption -> photo [B] */
    const float **uptr;               /* [B] */
    int *uval;                        /* [B] each photo's own cells: the first uval[u] of L (masks) */
    float *ann, *proj, *dproj;        /* [U, L, D], [U, L, K], [U, L, K]: the keys (K = ac_attention_key_dim) */
    /* per caption */
    float *mean;                      /* [B, D] */
    float *h0, *c0, *dh, *dc;         /* [B, H] */
    float *S;                         /* [B, heads L] sum_t alpha */
    float *dX, *dal, *de;             /* [B, D + H], [heads L], [heads L] scratch */
    float *dshift;                    /* [K + 2H] scratch of ctx_shift_grad */
    /* per token */
    float *ey;          /* [N, E]  E y_{t-1} */
    float *G;           /* [N, 4H] gates (pre-activation, then activations i f g o) */
    float *X;           /* [N, D + H]  [z_t; h_{t-1}] */
    float *ctx;         /* [N, D]  sum_i alpha_i a_i */
    float *beta, *dbp;  /* [N] */
    float *alpha;       /* [N, heads, L] */
    float *q;           /* [N, K] the attention queries (h W_h, or h) */
    float *acache;      /* [N, ac_attention_cache_size] what the score's backward needs (additive: its tanh) */
    float *hs, *cs, *tc; /* [N, H] h_t, c_t, tanh(c_t) */
    float *m1, *hd;     /* [N, H] dropout mask on h (0 or 1/(1-p)) and the dropped h */
    float *m2, *to, *od; /* [N, E] mask, tanh output, dropped output */
    float *logits;      /* [N, V] (probabilities / dlogits in the backward pass) */
    float *dG;          /* [N, 4H] */
    float *dq;          /* [N, K] */
    float *dh_out;      /* [N, H] */
    float *dz_out;      /* [N, D] */
    float *dO, *d2;     /* [N, E] */
    /* The recurrence's weights packed for ac_smm_nn_packed: W_zh, W_zh^T, W_h, W_h^T. Packed here
     * per call (own) or once per step by the pool for all its shards (ext). */
    float *pack_own;
    const float *pk[4];
    int pk_ext;
    float *dctx_sum; /* the batch's dctx_sum (NULL: not wanted) */
    /* hard attention */
    int *loc;      /* [N, heads] the location each head took; -1: the caption is on the expected context */
    int *cap_mode; /* [B] CAP_EXPECTED, CAP_SAMPLED or CAP_ARGMAX */
    double *cap_ce; /* [B] the caption's cross-entropy */
    float *kr;     /* [B] d loss / d log p(s | a) of a sampled caption: lambda_r (ce - n b) / N */
    /* copy (config.copy, copy_internal.h) */
    const int *nreg;                  /* the batch's n_regions (NULL: nothing to copy) */
    const unsigned char *const *rcat; /* the batch's region_cat */
    const float *const *rscore;       /* the batch's region_score (NULL: each 1) */
    const float *cw;                  /* the batch's caption weights (NULL: each 1) */
    float *cgate, *cdu;               /* [N] the gate g, and d loss / d its pre-activation */
    float *cabar, *cdabar;            /* [N, regions] the regions' attention (heads' mean), d loss / d it */
    float *cptr;                      /* copy 2: [N, regions, K] the pointer's tanh */
    float *cdq;                       /* copy 2: [N, K] the pointer's d loss / d query */
};
enum { CAP_EXPECTED, CAP_SAMPLED, CAP_ARGMAX };

/* Floats needed to pack the four recurrent weights (W_h: not for a score without it). */
static size_t pack_size(const ac_decoder_config *c, size_t off[5]) {
    if (c->decoder != AC_DECODER_LSTM) {
        for (int i = 0; i < 5; i++) off[i] = 0;
        return 1;
    }
    const int H = c->hidden, A = c->att, DH = c->dim + c->hidden;
    const int wh = (ac_attention_tensors(c->attention) & AC_ATTENTION_HAS_WH) != 0;
    off[0] = 0;
    off[1] = off[0] + ac_smm_packed_size(DH, 4 * H);   /* X [.., DH] x W_zh [DH, 4H] */
    off[2] = off[1] + ac_smm_packed_size(4 * H, DH);   /* dG [.., 4H] x W_zh^T */
    off[3] = off[2] + (wh ? ac_smm_packed_size(H, A) : 0); /* h [.., H] x W_h [H, A] */
    off[4] = off[3] + (wh ? ac_smm_packed_size(A, H) : 0); /* dq [.., A] x W_h^T */
    return off[4];
}

void ac_dec_pack_weights(const ac_decoder *dec, float *buf, const float *pk[4]) {
    const ac_decoder_config *c = &dec->cfg;
    if (c->decoder != AC_DECODER_LSTM) return;
    const int E = c->embed, H = c->hidden, A = c->att, DH = c->dim + c->hidden;
    size_t off[5];
    pack_size(c, off);
    const float *W_zh = dec->lstm_w + (size_t)E * 4 * H;
    ac_smm_pack(DH, 4 * H, W_zh, 4 * H, 0, buf + off[0]);
    ac_smm_pack(4 * H, DH, W_zh, 4 * H, 1, buf + off[1]);
    if (dec->att_wh) {
        ac_smm_pack(H, A, dec->att_wh, A, 0, buf + off[2]);
        ac_smm_pack(A, H, dec->att_wh, A, 1, buf + off[3]);
    }
    for (int i = 0; i < 4; i++) pk[i] = buf + off[i];
}

size_t ac_dec_pack_size(const ac_decoder_config *c) {
    size_t off[5];
    return pack_size(c, off);
}

void ac_dec_work_use_packed(ac_dec_work *w, const float *const pk[4]) {
    memcpy(w->pk, pk, sizeof w->pk);
    w->pk_ext = 1;
}

static void *xrealloc(void *p, size_t n) {
    free(p);
    return ac_malloc(n ? n : 1);
}

/* (Re)allocates for B captions and N tokens, T steps. Returns -1 on out of memory. */
static int work_reserve(ac_dec_work *w, int B, int T, int N) {
    const ac_decoder_config *c = &w->cfg;
    const size_t E = c->embed, H = c->hidden, K = (size_t)ac_attention_key_dim(c), D = c->dim, L = c->n_ann,
                 V = c->vocab, AC = ac_attention_cache_size(c), HL = (size_t)ac_attention_heads(c) * L;
    int ok = 1;
#define AL(p, n) ok &= (((p) = xrealloc((p), sizeof(*(p)) * (n))) != NULL)
    if (T > w->capT) {
        AL(w->bt, (size_t)T);
        AL(w->off, (size_t)T + 1);
        w->capT = T;
    }
    if (B > w->capB) {
        size_t b = (size_t)B;
        AL(w->uimg, b); AL(w->uptr, b); AL(w->uval, b);
        AL(w->ann, b * L * D); AL(w->mean, b * D); AL(w->proj, b * L * K); AL(w->dproj, b * L * K);
        AL(w->h0, b * H); AL(w->c0, b * H); AL(w->dh, b * H); AL(w->dc, b * H); AL(w->S, b * HL);
        AL(w->dX, b * (D + H)); AL(w->dal, HL); AL(w->de, HL); AL(w->dshift, K + 2 * H);
        AL(w->cap_mode, b); AL(w->cap_ce, b); AL(w->kr, b);
        w->capB = B;
    }
    if (N > w->capN) {
        size_t n = (size_t)N;
        AL(w->in_tok, n); AL(w->tgt, n);
        AL(w->ey, n * E); AL(w->G, n * 4 * H); AL(w->X, n * (D + H)); AL(w->ctx, n * D);
        AL(w->beta, n); AL(w->dbp, n); AL(w->alpha, n * HL); AL(w->q, n * K); AL(w->acache, n * AC);
        AL(w->hs, n * H); AL(w->cs, n * H); AL(w->tc, n * H); AL(w->m1, n * H); AL(w->hd, n * H);
        AL(w->m2, n * E); AL(w->to, n * E); AL(w->od, n * E); AL(w->logits, n * V);
        AL(w->dG, n * 4 * H); AL(w->dq, n * K); AL(w->dh_out, n * H); AL(w->dz_out, n * D);
        AL(w->dO, n * E); AL(w->d2, n * E); AL(w->loc, n * (size_t)ac_attention_heads(c));
        AL(w->cgate, n); AL(w->cdu, n); AL(w->cabar, n * (c->regions + 1)); AL(w->cdabar, n * (c->regions + 1));
        AL(w->cptr, c->copy == 2 ? n * c->regions * K : 1); AL(w->cdq, c->copy == 2 ? n * K : 1);
        w->capN = N;
    }
#undef AL
    if (!ok) w->capB = w->capT = w->capN = 0; /* force reallocation next time */
    return ok ? 0 : -1;
}

ac_dec_work *ac_dec_work_new(const ac_decoder_config *cfg, int max_B, int max_T) {
    ac_dec_work *w = ac_calloc(1, sizeof *w);
    if (!w) return NULL;
    w->cfg = *cfg;
    if (cfg->decoder == AC_DECODER_TRANSFORMER ? !(w->tf = ac_tf_work_new(cfg)) : work_reserve(w, max_B, max_T, max_B * max_T)) {
        ac_dec_work_free(w);
        return NULL;
    }
    return w;
}

void ac_dec_work_free(ac_dec_work *w) {
    if (!w) return;
    void *ps[] = {w->uimg, w->uval, (void *)w->uptr, w->bt, w->off, w->in_tok, w->tgt, w->ann, w->mean, w->proj, w->dproj, w->h0, w->c0, w->dh,
                  w->dc, w->S, w->dX, w->dal, w->de, w->ey, w->G, w->X, w->ctx, w->beta, w->dbp, w->alpha,
                  w->q, w->acache, w->hs, w->cs, w->tc, w->m1, w->hd, w->m2, w->to, w->od, w->logits, w->dG, w->dq,
                  w->dh_out, w->dz_out, w->dO, w->d2, w->pack_own, w->dshift, w->loc, w->cap_mode, w->cap_ce, w->kr,
                  w->cgate, w->cdu, w->cabar, w->cdabar, w->cptr, w->cdq};
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) free(ps[i]);
    ac_tf_work_free(w->tf);
    free(w);
}

const float *ac_dec_work_logits(const ac_dec_work *w) { return w->tf ? ac_tf_work_logits(w->tf) : w->logits; }
const int *ac_dec_work_locations(const ac_dec_work *w) { return w->loc; }

/* C = alpha op(A) op(B) + beta C, row-major; skips empty products. */
static void mm(int ta, int tb, int M, int N, int K, const float *A, int lda, const float *B, int ldb, float beta,
               float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        if (beta == 0)
            for (int i = 0; i < M; i++) memset(C + (size_t)i * ldc, 0, sizeof(float) * N);
        return;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, A, lda,
                B, ldb, beta, C, ldc);
}

static void colsum_add(const float *x, int n, int k, float *out) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < k; j++) out[j] += x[(size_t)i * k + j];
}

/* ---- row kernels: restrict-qualified so that the compiler vectorises them ---- */

/* Gate pre-activations g [4H] -> activations (in place), c, tanh(c), h. */
static void lstm_row_fwd(int H, float *restrict g, const float *restrict cp, float *restrict c, float *restrict tc,
                         float *restrict h) {
    for (int j = 0; j < H; j++) {
        const float ig = ac_sigmoidf(g[j]), fg = ac_sigmoidf(g[H + j]), gg = ac_tanhf(g[2 * H + j]),
                    og = ac_sigmoidf(g[3 * H + j]);
        g[j] = ig, g[H + j] = fg, g[2 * H + j] = gg, g[3 * H + j] = og;
        c[j] = fg * cp[j] + ig * gg;
        tc[j] = ac_tanhf(c[j]);
        h[j] = og * tc[j];
    }
}

/* dh (from the next step) + dh_out (from the output) and dc -> gate pre-activation gradients dg,
 * and dc for the previous step (in place). */
static void lstm_row_bwd(int H, const float *restrict gt, const float *restrict tc, const float *restrict cp,
                         const float *restrict dh, const float *restrict dho, float *restrict dc, float *restrict dg) {
    for (int j = 0; j < H; j++) {
        const float ig = gt[j], fg = gt[H + j], gg = gt[2 * H + j], og = gt[3 * H + j];
        const float dhj = dh[j] + dho[j];
        const float dcc = dc[j] + dhj * og * (1.0f - tc[j] * tc[j]);
        dg[j] = dcc * gg * ig * (1.0f - ig);
        dg[H + j] = dcc * cp[j] * fg * (1.0f - fg);
        dg[2 * H + j] = dcc * ig * (1.0f - gg * gg);
        dg[3 * H + j] = dhj * tc[j] * og * (1.0f - og);
        dc[j] = dcc * fg;
    }
}

/* ---- forward ---- */

/* Hard attention's terms of the objective over the sampled captions (decoder.h), and each one's
 * d loss / d log p(s | a), kr = lambda_r (ce - n b) / N, for the backward. */
static void hard_terms(ac_dec_work *w, const ac_dec_batch *b, ac_dec_stats *st) {
    const ac_decoder_config *c = &w->cfg;
    const int L = c->n_ann, nh = ac_attention_heads(c), HL = nh * L;
    st->hard_captions = st->hard_ntok = 0;
    st->hard_ce_sum = st->ent_sum = st->score_sum = 0;
    for (int i = 0; i < w->B; i++) {
        w->kr[i] = 0;
        if (w->cap_mode[i] != CAP_SAMPLED) continue;
        const double adv = w->cap_ce[i] - b->len[i] * b->baseline;
        double lp = 0;
        for (int t = 0; t < b->len[i]; t++) {
            const int r = w->off[t] + i;
            lp += ac_hard_attention_logp(w->alpha + (size_t)r * HL, nh, L, w->loc + (size_t)r * nh);
            st->ent_sum += ac_hard_attention_entropy(w->alpha + (size_t)r * HL, nh, L);
        }
        st->hard_captions++, st->hard_ntok += b->len[i], st->hard_ce_sum += w->cap_ce[i];
        st->score_sum += adv * lp;
        w->kr[i] = (float)(c->reinforce * adv / w->N);
    }
}

/* Whether most photos of the batch use few of the L rows (captions without photos given regions:
 * the no-photo context and a few pseudo-regions): the products with W_a then run per photo over its
 * own rows only. A batch of whole grids keeps the one product over all U L rows (and its bits). */
static int few_rows(const ac_dec_work *w) {
    long used = 0;
    for (int u = 0; u < w->U; u++) used += w->uval[u];
    return used * 2 < (long)w->U * w->cfg.n_ann;
}

/* Whether the batch copies: a copy model with its word sets, given the regions' categories. */
static int copy_on(const ac_decoder *dec, const ac_dec_work *w) { return dec->cfg.copy && dec->copy && w->nreg; }

/* Token r (of caption i)'s regions for copy.c: their categories and attention. */
static ac_copy_regions copy_regions(const ac_dec_work *w, int i, int r) {
    return (ac_copy_regions){w->nreg[i], w->rcat[i], w->cabar + (size_t)r * (w->cfg.regions + 1)};
}

/* The copy path's forward: each token's gate and its regions' attention, its photo's last nreg rows.
 * copy 1: g = sigmoid(w_c . [dropped h_t; z_t] + b_c), the attention the heads' mean; copy 2: the
 * pointer's regions against its sentinel (on the dropped h_t). */
static void copy_forward(const ac_decoder *dec, ac_dec_work *w) {
    const ac_decoder_config *c = &dec->cfg;
    const int H = c->hidden, D = c->dim, L = c->n_ann, nh = ac_attention_heads(c), R1 = c->regions + 1;
    const int K = ac_attention_key_dim(c);
    for (int t = 0; t < w->T; t++)
        for (int i = 0; i < w->bt[t]; i++) {
            const int r = w->off[t] + i, nr = w->nreg[i], g0 = w->uval[w->uimg[i]] - nr;
            if (c->copy == 2) {
                float e[AC_REGIONS_MAX];
                w->cgate[r] = 0;
                if (!nr) continue;
                const ac_copy_regions reg = copy_regions(w, i, r);
                const float u = ac_copy_pointer_forward(dec, &reg, w->proj + ((size_t)w->uimg[i] * L + g0) * K,
                                                        w->q + (size_t)r * K, w->hd + (size_t)r * H, e,
                                                        w->cabar + (size_t)r * R1, w->cptr + (size_t)r * c->regions * K);
                w->cgate[r] = 1.0f / (1.0f + expf(-u));
                continue;
            }
            const float u = ac_copy_gate_logit(dec, w->hd + (size_t)r * H, w->X + (size_t)r * (D + H));
            w->cgate[r] = 1.0f / (1.0f + expf(-u));
            ac_copy_region_attention(w->alpha + (size_t)r * nh * L, nh, L, g0, nr, w->cabar + (size_t)r * R1);
        }
}

static void forward(const ac_decoder *dec, ac_dec_work *w, const ac_dec_batch *b, int train, uint64_t seed,
                    ac_dec_stats *st) {
    const ac_decoder_config *c = &dec->cfg;
    const int E = c->embed, H = c->hidden, D = c->dim, L = c->n_ann, V = c->vocab, DH = D + H;
    const int B = w->B, N = w->N, T = w->T;
    const float p = train ? c->dropout : 0.0f, keep_scale = 1.0f / (1.0f - p);
    const ac_attention_fn att = ac_attention_fn_of(dec);
    const int A = att.A, nh = att.heads, HL = nh * L, dv = D / nh;
    const size_t AC = ac_attention_cache_size(c);

    /* Hard attention: which captions sample their locations (see decoder.h). */
    const uint64_t seed_loc = ac_mix64(seed ^ 0x4C4F434154494F4Eull), seed_coin = ac_mix64(seed ^ 0x434F494E00ull);
    for (int i = 0; i < B; i++) {
        const double u = (double)(ac_mix64(seed_coin + (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull) >> 11) *
                         (1.0 / 9007199254740992.0);
        w->cap_mode[i] = c->attention_mode != AC_ATTENTION_HARD ? CAP_EXPECTED
                         : !train ? (dec->hard_expected ? CAP_EXPECTED : CAP_ARGMAX)
                         : u < c->expected ? CAP_EXPECTED : CAP_SAMPLED;
    }

    /* Per photo: annotations (its own cells; the padding after them zeroed, so the keys' and W_a's
     * products over all L rows never see what lay there) and W_a a + b_a; per caption: mean
     * annotation over the photo's cells, h_0, c_0. */
    const int U = w->U;
    for (int u = 0; u < U; u++) {
        const size_t nd = (size_t)w->uval[u] * D;
        memcpy(w->ann + (size_t)u * L * D, w->uptr[u], sizeof(float) * nd);
        memset(w->ann + (size_t)u * L * D + nd, 0, sizeof(float) * ((size_t)L * D - nd));
    }
    for (int i = 0; i < B; i++) {
        float *m = w->mean + (size_t)i * D;
        const float *a = w->ann + (size_t)w->uimg[i] * L * D;
        const int n = w->uval[w->uimg[i]];
        memset(m, 0, sizeof(float) * D);
        for (int l = 0; l < n; l++)
            for (int d = 0; d < D; d++) m[d] += a[(size_t)l * D + d];
        for (int d = 0; d < D; d++) m[d] *= 1.0f / n;
    }
    for (int r = 0; r < U * L; r++)
        if (dec->att_ba) memcpy(w->proj + (size_t)r * A, dec->att_ba, sizeof(float) * A);
        else memset(w->proj + (size_t)r * A, 0, sizeof(float) * A);
    if (few_rows(w))
        for (int u = 0; u < U; u++) /* only each photo's own rows (the rest stay b_a: their annotation is 0) */
            mm(0, 0, w->uval[u], A, D, w->ann + (size_t)u * L * D, D, dec->att_wa, A, 1.0f, w->proj + (size_t)u * L * A, A);
    else
        mm(0, 0, U * L, A, D, w->ann, D, dec->att_wa, A, 1.0f, w->proj, A);
    for (int i = 0; i < B; i++) {
        memcpy(w->h0 + (size_t)i * H, dec->init_h_b, sizeof(float) * H);
        memcpy(w->c0 + (size_t)i * H, dec->init_c_b, sizeof(float) * H);
    }
    mm(0, 0, B, H, D, w->mean, D, dec->init_h_w, H, 1.0f, w->h0, H);
    mm(0, 0, B, H, D, w->mean, D, dec->init_c_w, H, 1.0f, w->c0, H);
    if (dec->obj_h && w->nreg) /* config.object_init: the photo's objects */
        for (int i = 0; i < B; i++)
            ac_decoder_objects_init(dec, w->rcat[i], w->rscore ? w->rscore[i] : NULL, w->nreg[i], w->h0 + (size_t)i * H,
                                    w->c0 + (size_t)i * H);
    for (size_t i = 0; i < (size_t)B * H; i++) w->h0[i] = ac_tanhf(w->h0[i]), w->c0[i] = ac_tanhf(w->c0[i]);

    /* Word inputs for all tokens, and their share of the gates: G = E y W_e + b. */
    for (int r = 0; r < N; r++) {
        memcpy(w->ey + (size_t)r * E, dec->emb + (size_t)w->in_tok[r] * E, sizeof(float) * E);
        memcpy(w->G + (size_t)r * 4 * H, dec->lstm_b, sizeof(float) * 4 * H);
    }
    mm(0, 0, N, 4 * H, E, w->ey, E, dec->lstm_w, 4 * H, 1.0f, w->G, 4 * H);

    for (int t = 0; t < T; t++) {
        const int Bt = w->bt[t], r0 = w->off[t];
        const float *hp = t ? w->hs + (size_t)w->off[t - 1] * H : w->h0;
        const float *cp = t ? w->cs + (size_t)w->off[t - 1] * H : w->c0;
        float *qt = w->q + (size_t)r0 * A;
        if (dec->att_wh) {
            memset(qt, 0, sizeof(float) * (size_t)Bt * A);
            ac_smm_nn_packed(Bt, A, H, hp, H, w->pk[2], qt, A);
        } else {
            memcpy(qt, hp, sizeof(float) * (size_t)Bt * H);
        }
        for (int i = 0; i < Bt; i++) {
            const int r = r0 + i, n = w->uval[w->uimg[i]];
            float *al = w->alpha + (size_t)r * HL;
            ac_attention_scores_forward_masked(&att, L, n, qt + (size_t)i * A, w->proj + (size_t)w->uimg[i] * L * A, al,
                                               w->acache + (size_t)r * AC);
            ac_attention_softmax_forward_masked(al, nh, L, n);
            float bp = dec->beta_b[0];
            for (int j = 0; j < H; j++) bp += dec->beta_w[j] * hp[(size_t)i * H + j];
            const float be = 1.0f / (1.0f + expf(-bp));
            w->beta[r] = be;
            float *cx = w->ctx + (size_t)r * D, *x = w->X + (size_t)r * DH;
            const float *a = w->ann + (size_t)w->uimg[i] * L * D;
            int *lc = w->loc + (size_t)r * nh;
            if (w->cap_mode[i] == CAP_EXPECTED) {
                for (int j = 0; j < nh; j++) /* head j: its channels */
                    cblas_sgemv(CblasRowMajor, CblasTrans, n, dv, 1.0f, a + (size_t)j * dv, D, al + (size_t)j * L, 1,
                                0.0f, cx + (size_t)j * dv, 1);
                for (int j = 0; j < nh; j++) lc[j] = -1;
            } else { /* one location per head */
                if (w->cap_mode[i] == CAP_SAMPLED) ac_hard_attention_sample(al, nh, L, seed_loc, (uint64_t)r, lc);
                else ac_hard_attention_argmax(al, nh, L, lc);
                ac_hard_attention_context_forward(a, L, D, nh, lc, cx);
            }
            for (int d = 0; d < D; d++) x[d] = be * cx[d];
            memcpy(x + D, hp + (size_t)i * H, sizeof(float) * H);
        }
        ac_smm_nn_packed(Bt, 4 * H, DH, w->X + (size_t)r0 * DH, DH, w->pk[0], w->G + (size_t)r0 * 4 * H, 4 * H);
        for (int i = 0; i < Bt; i++) {
            const int r = r0 + i;
            float *g = w->G + (size_t)r * 4 * H, *cn = w->cs + (size_t)r * H, *tcn = w->tc + (size_t)r * H,
                  *hn = w->hs + (size_t)r * H;
            const float *cpi = cp + (size_t)i * H;
            lstm_row_fwd(H, g, cpi, cn, tcn, hn);
        }
    }

    /* Deep output over all tokens: to = tanh(E y + (h*m1) L_h + z L_z), od = to * m2. */
    for (size_t k = 0; k < (size_t)N * H; k++) {
        w->m1[k] = p > 0 ? (ac_dropout_keep(seed, k, p) ? keep_scale : 0.0f) : 1.0f;
        w->hd[k] = w->hs[k] * w->m1[k];
    }
    memcpy(w->to, w->ey, sizeof(float) * (size_t)N * E);
    mm(0, 0, N, E, H, w->hd, H, dec->out_lh, E, 1.0f, w->to, E);
    mm(0, 0, N, E, D, w->X, DH, dec->out_lz, E, 1.0f, w->to, E);
    const uint64_t seed2 = ac_mix64(seed ^ 0x5DEECE66Dull);
    for (size_t k = 0; k < (size_t)N * E; k++) {
        w->to[k] = ac_tanhf(w->to[k]);
        w->m2[k] = p > 0 ? (ac_dropout_keep(seed2, k, p) ? keep_scale : 0.0f) : 1.0f;
        w->od[k] = w->to[k] * w->m2[k];
    }
    for (int r = 0; r < N; r++) memcpy(w->logits + (size_t)r * V, dec->out_bo, sizeof(float) * V);
    mm(0, 0, N, V, E, w->od, E, dec->out_lo, V, 1.0f, w->logits, V);
    if (copy_on(dec, w) && dec->absent_b) /* config.absent: the priors of the words of unseen objects */
        for (int t = 0; t < T; t++)
            for (int i = 0; i < w->bt[t]; i++)
                ac_copy_absent_logits(dec, w->rcat[i], w->nreg[i], 1, w->logits + (size_t)(w->off[t] + i) * V, V);
    if (copy_on(dec, w)) copy_forward(dec, w);

    double ce = 0, sw = 0, wsum = 0;
    const int copy = copy_on(dec, w);
    for (int i = 0; i < B; i++) w->cap_ce[i] = 0;
    for (int t = 0; t < T; t++) /* rows in order, and each caption's share */
        for (int i = 0; i < w->bt[t]; i++) {
            const int r = w->off[t] + i;
            double l, s1 = 0;
            if (copy && w->nreg[i] > 0) {
                const ac_copy_regions reg = copy_regions(w, i, r);
                l = ac_copy_xent(dec, &reg, w->cgate[r], w->logits + (size_t)r * V, w->tgt[r], &s1);
                sw += s1;
            } else {
                l = ac_xent_sum(w->logits + (size_t)r * V, 1, V, w->tgt + r);
            }
            ce += l, w->cap_ce[i] += l;
            wsum += (w->cw ? w->cw[i] : 1.0) * (l + AC_COPY_SWITCH_WEIGHT * s1);
        }
    memset(w->S, 0, sizeof(float) * (size_t)B * HL);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < w->bt[t]; i++)
            for (int l = 0; l < HL; l++) w->S[(size_t)i * HL + l] += w->alpha[(size_t)(w->off[t] + i) * HL + l];
    double pen = 0; /* over each photo's own cells (a padded cell would add the constant 1) */
    for (int i = 0; i < B; i++)
        for (int j = 0, n = w->uval[w->uimg[i]]; j < nh; j++)
            for (int l = 0; l < n; l++) {
                const double s = w->S[(size_t)i * HL + (size_t)j * L + l];
                pen += (1.0 - s) * (1.0 - s);
            }
    st->ce_sum = ce;
    st->pen_sum = pen;
    st->switch_sum = sw;
    st->weighted_sum = wsum;
    st->ntok = N;
    hard_terms(w, b, st);
    st->loss = (wsum + c->lambda * pen - c->entropy * st->ent_sum + c->reinforce * st->score_sum) / N;
}

/* ---- backward ---- */

typedef struct {
    float *emb, *att_wa, *att_ba, *att_wh, *att_we, *att_logtau, *beta_w, *beta_b, *init_h_w, *init_h_b, *init_c_w,
        *init_c_b, *lstm_w, *lstm_b, *out_lh, *out_lz, *out_lo, *out_bo, *copy_w, *copy_b, *ptr_we, *ptr_ws, *ptr_bs, *absent_b,
        *obj_h, *obj_c;
} grads;

/* The gradient's views, at the parameters' offsets (NULL where the decoder has no such tensor). */
static grads bind_grads(const ac_decoder *dec, float *g) {
    grads r;
#define G_(name) r.name = dec->name ? g + (dec->name - dec->params) : NULL
    G_(emb); G_(att_wa); G_(att_ba); G_(att_wh); G_(att_we); G_(att_logtau); G_(beta_w); G_(beta_b); G_(init_h_w); G_(init_h_b);
    G_(init_c_w); G_(init_c_b); G_(lstm_w); G_(lstm_b); G_(out_lh); G_(out_lz); G_(out_lo); G_(out_bo); G_(copy_w);
    G_(copy_b); G_(ptr_we); G_(ptr_ws); G_(ptr_bs); G_(absent_b); G_(obj_h); G_(obj_c);
#undef G_
    return r;
}

/* The rest of dctx_sum, after the recurrence (which added the context path): a shift x of every
 * annotation vector also moves each key W_a a_l (+ b_a) by W_a^T x, and mean(a) by x (h_0, c_0).
 * Called with dproj complete and dh, dc holding d loss / d (pre-activation of h_0, c_0). */
static void ctx_shift_grad(const ac_decoder *dec, ac_dec_work *w) {
    const ac_decoder_config *c = &dec->cfg;
    const int H = c->hidden, A = ac_attention_key_dim(c), D = c->dim, L = c->n_ann, B = w->B;
    float *sp = w->dshift, *sh = sp + A, *sc = sh + H; /* sum_{u,l} dproj [A]; sum_b dh_0, dc_0 [H] */
    memset(sp, 0, sizeof(float) * (size_t)(A + 2 * H));
    colsum_add(w->dproj, w->U * L, A, sp);
    colsum_add(w->dh, B, H, sh);
    colsum_add(w->dc, B, H, sc);
    cblas_sgemv(CblasRowMajor, CblasNoTrans, D, A, 1.0f, dec->att_wa, A, sp, 1, 1.0f, w->dctx_sum, 1);
    cblas_sgemv(CblasRowMajor, CblasNoTrans, D, H, 1.0f, dec->init_h_w, H, sh, 1, 1.0f, w->dctx_sum, 1);
    cblas_sgemv(CblasRowMajor, CblasNoTrans, D, H, 1.0f, dec->init_c_w, H, sc, 1, 1.0f, w->dctx_sum, 1);
}

static void backward(const ac_decoder *dec, ac_dec_work *w, float *grad) {
    const ac_decoder_config *c = &dec->cfg;
    const int E = c->embed, H = c->hidden, D = c->dim, L = c->n_ann, V = c->vocab, DH = D + H;
    const ac_attention_fn att = ac_attention_fn_of(dec);
    const int A = att.A, nh = att.heads, HL = nh * L, dv = D / nh;
    const size_t AC = ac_attention_cache_size(c);
    const int B = w->B, N = w->N, T = w->T;
    const float inv = 1.0f / N;
    memset(grad, 0, sizeof(float) * dec->n_params);
    grads g = bind_grads(dec, grad);

    const int copy = copy_on(dec, w), R1 = c->regions + 1;
    if (!copy && !w->cw) {
        ac_xent_grad(w->logits, N, V, w->tgt, inv); /* logits -> dlogits = (softmax - onehot) / N */
    } else { /* per token: the copy path's gradient where a caption has regions (copy_internal.h), its weight */
        for (int t = 0; t < T; t++)
            for (int i = 0; i < w->bt[t]; i++) {
                const int r = w->off[t] + i;
                const float k = w->cw ? inv * w->cw[i] : inv;
                if (copy) w->cdu[r] = 0;
                if (copy && w->nreg[i] > 0) {
                    const ac_copy_regions reg = copy_regions(w, i, r);
                    ac_copy_xent_grad(dec, &reg, w->cgate[r], w->logits + (size_t)r * V, w->tgt[r], k, &w->cdu[r],
                                      w->cdabar + (size_t)r * R1);
                } else {
                    ac_xent_grad(w->logits + (size_t)r * V, 1, V, w->tgt + r, k);
                }
                if (copy && dec->absent_b) ac_copy_absent_grad(dec, w->rcat[i], w->nreg[i], w->logits + (size_t)r * V, g.absent_b);
            }
    }
    colsum_add(w->logits, N, V, g.out_bo);
    mm(1, 0, E, V, N, w->od, E, w->logits, V, 0.0f, g.out_lo, V);
    mm(0, 1, N, E, V, w->logits, V, dec->out_lo, V, 0.0f, w->d2, E);
    for (size_t k = 0; k < (size_t)N * E; k++) w->dO[k] = w->d2[k] * w->m2[k] * (1.0f - w->to[k] * w->to[k]);
    for (int r = 0; r < N; r++) {
        float *ge = g.emb + (size_t)w->in_tok[r] * E;
        const float *d = w->dO + (size_t)r * E;
        for (int j = 0; j < E; j++) ge[j] += d[j];
    }
    mm(1, 0, H, E, N, w->hd, H, w->dO, E, 0.0f, g.out_lh, E);
    mm(0, 1, N, H, E, w->dO, E, dec->out_lh, E, 0.0f, w->dh_out, H);
    mm(1, 0, D, E, N, w->X, DH, w->dO, E, 0.0f, g.out_lz, E);
    mm(0, 1, N, D, E, w->dO, E, dec->out_lz, E, 0.0f, w->dz_out, D);
    if (copy && c->copy == 1) /* the gate u = w_c . [dropped h; z] + b_c */
        for (int r = 0; r < N; r++) {
            const float du = w->cdu[r];
            if (du == 0) continue;
            const float *hd = w->hd + (size_t)r * H, *z = w->X + (size_t)r * DH;
            float *dh = w->dh_out + (size_t)r * H, *dz = w->dz_out + (size_t)r * D;
            for (int j = 0; j < H; j++) g.copy_w[j] += du * hd[j], dh[j] += du * dec->copy_w[j];
            for (int j = 0; j < D; j++) g.copy_w[H + j] += du * z[j], dz[j] += du * dec->copy_w[H + j];
            g.copy_b[0] += du;
        }
    memset(w->dproj, 0, sizeof(float) * (size_t)w->U * L * A);
    if (copy && c->copy == 2) /* the pointer: its sentinel on the dropped h_t, its scores on the keys and queries */
        for (int t = 0; t < T; t++)
            for (int i = 0; i < w->bt[t]; i++) {
                const int r = w->off[t] + i, nr = w->nreg[i], g0 = w->uval[w->uimg[i]] - nr;
                float *dq = w->cdq + (size_t)r * A;
                memset(dq, 0, sizeof(float) * A);
                if (!nr) continue;
                const ac_copy_regions reg = copy_regions(w, i, r);
                const size_t k0 = ((size_t)w->uimg[i] * L + g0) * A;
                ac_copy_pointer_backward(dec, &reg, w->proj + k0, w->q + (size_t)r * A, w->hd + (size_t)r * H,
                                         w->cptr + (size_t)r * c->regions * A, w->cdu[r], w->cdabar + (size_t)r * R1,
                                         dq, w->dproj + k0, g.ptr_we, g.ptr_ws, g.ptr_bs, w->dh_out + (size_t)r * H);
            }
    for (size_t k = 0; k < (size_t)N * H; k++) w->dh_out[k] *= w->m1[k];

    /* The penalty's gradient w.r.t. alpha_ti is the same for every t of a caption. */
    const float pk = 2.0f * c->lambda * inv;
    for (size_t k = 0; k < (size_t)B * HL; k++) w->S[k] = pk * (w->S[k] - 1.0f);
    memset(w->dh, 0, sizeof(float) * (size_t)B * H);
    memset(w->dc, 0, sizeof(float) * (size_t)B * H);

    for (int t = T - 1; t >= 0; t--) {
        const int Bt = w->bt[t], r0 = w->off[t];
        const float *cp = t ? w->cs + (size_t)w->off[t - 1] * H : w->c0;
        for (int i = 0; i < Bt; i++) {
            const int r = r0 + i;
            const float *gt = w->G + (size_t)r * 4 * H, *tcn = w->tc + (size_t)r * H, *cpi = cp + (size_t)i * H,
                        *dho = w->dh_out + (size_t)r * H;
            float *dh = w->dh + (size_t)i * H, *dc = w->dc + (size_t)i * H, *dg = w->dG + (size_t)r * 4 * H;
            lstm_row_bwd(H, gt, tcn, cpi, dh, dho, dc, dg);
        }
        memset(w->dX, 0, sizeof(float) * (size_t)Bt * DH);
        ac_smm_nn_packed(Bt, DH, 4 * H, w->dG + (size_t)r0 * 4 * H, 4 * H, w->pk[1], w->dX, DH);
        for (int i = 0; i < Bt; i++) {
            const int r = r0 + i, n = w->uval[w->uimg[i]];
            float *dz = w->dX + (size_t)i * DH, *dh = w->dh + (size_t)i * H;
            const float *dzo = w->dz_out + (size_t)r * D, *cx = w->ctx + (size_t)r * D, *al = w->alpha + (size_t)r * HL;
            const float be = w->beta[r];
            float dbeta = 0;
            for (int d = 0; d < D; d++) {
                dz[d] += dzo[d];
                dbeta += dz[d] * cx[d];
                dz[d] *= be; /* now d ctx */
            }
            const float dbp = dbeta * be * (1.0f - be);
            w->dbp[r] = dbp;
            const int mode = w->cap_mode[i];
            for (int j = 0; w->dctx_sum && j < nh; j++) {
                /* head j's ctx = sum_l alpha_l a_l: a shift x of every a_l moves it by (sum_l alpha_l) x
                 * (by x for a location: its weights are one-hot) */
                float sa = mode == CAP_EXPECTED ? 0 : 1;
                for (int l = 0; mode == CAP_EXPECTED && l < n; l++) sa += al[(size_t)j * L + l];
                for (int d = j * dv; d < (j + 1) * dv; d++) w->dctx_sum[d] += sa * dz[d];
            }
            for (int j = 0; j < H; j++) dh[j] = dz[D + j] + dbp * dec->beta_w[j];
            const float *a = w->ann + (size_t)w->uimg[i] * L * D;
            if (mode == CAP_EXPECTED)
                for (int j = 0; j < nh; j++)
                    cblas_sgemv(CblasRowMajor, CblasNoTrans, n, dv, 1.0f, a + (size_t)j * dv, D, dz + (size_t)j * dv, 1,
                                0.0f, w->dal + (size_t)j * L, 1);
            else /* a location's context does not depend on alpha */
                memset(w->dal, 0, sizeof(float) * (size_t)HL);
            for (int l = 0; l < HL; l++) w->dal[l] += w->S[(size_t)i * HL + l]; /* (beyond n: not read) */
            for (int k = 0; copy && c->copy == 1 && k < w->nreg[i]; k++) /* the copy's pi, from the heads' mean */
                for (int j = 0; j < nh; j++) w->dal[(size_t)j * L + n - w->nreg[i] + k] += w->cdabar[(size_t)r * R1 + k] / nh;
            ac_attention_softmax_backward_masked(al, w->dal, nh, L, n, w->de);
            if (mode == CAP_SAMPLED) /* REINFORCE and the entropy bonus (a padded cell: alpha 0, adds 0) */
                ac_hard_attention_backward(al, nh, L, w->loc + (size_t)r * nh, w->kr[i], c->entropy * inv, w->de);
            float *dq = w->dq + (size_t)r * A;
            if (copy && c->copy == 2) memcpy(dq, w->cdq + (size_t)r * A, sizeof(float) * A);
            else memset(dq, 0, sizeof(float) * A);
            ac_attention_scores_backward_masked(&att, L, n, w->q + (size_t)r * A, w->proj + (size_t)w->uimg[i] * L * A,
                                                w->acache + (size_t)r * AC, w->de, dq,
                                                w->dproj + (size_t)w->uimg[i] * L * A, g.att_we, g.att_logtau);
        }
        if (dec->att_wh) ac_smm_nn_packed(Bt, H, A, w->dq + (size_t)r0 * A, A, w->pk[3], w->dh, H);
        else /* general: the query is h itself */
            for (size_t k = 0; k < (size_t)Bt * H; k++) w->dh[k] += w->dq[(size_t)r0 * H + k];
    }

    /* h_0, c_0 */
    for (size_t k = 0; k < (size_t)B * H; k++) {
        w->dh[k] *= 1.0f - w->h0[k] * w->h0[k];
        w->dc[k] *= 1.0f - w->c0[k] * w->c0[k];
    }
    if (w->dctx_sum) ctx_shift_grad(dec, w);
    mm(1, 0, D, H, B, w->mean, D, w->dh, H, 0.0f, g.init_h_w, H);
    mm(1, 0, D, H, B, w->mean, D, w->dc, H, 0.0f, g.init_c_w, H);
    colsum_add(w->dh, B, H, g.init_h_b);
    colsum_add(w->dc, B, H, g.init_c_b);
    for (int i = 0; g.obj_h && w->nreg && i < B; i++) { /* d loss / d U = o^T d(pre-activation) */
        float o[AC_COPY_CATEGORIES];
        ac_decoder_objects_vector(w->rcat[i], w->rscore ? w->rscore[i] : NULL, w->nreg[i], o);
        for (int k = 0; k < AC_COPY_CATEGORIES; k++)
            if (o[k] != 0)
                for (int j = 0; j < H; j++) {
                    g.obj_h[(size_t)k * H + j] += o[k] * w->dh[(size_t)i * H + j];
                    g.obj_c[(size_t)k * H + j] += o[k] * w->dc[(size_t)i * H + j];
                }
    }
    /* attention projection */
    if (few_rows(w))
        for (int u = 0; u < w->U; u++)
            mm(1, 0, D, A, w->uval[u], w->ann + (size_t)u * L * D, D, w->dproj + (size_t)u * L * A, A, u ? 1.0f : 0.0f, g.att_wa, A);
    else
        mm(1, 0, D, A, w->U * L, w->ann, D, w->dproj, A, 0.0f, g.att_wa, A);
    if (g.att_ba) colsum_add(w->dproj, w->U * L, A, g.att_ba);
    if (g.att_wh) mm(1, 0, H, A, N, w->X + D, DH, w->dq, A, 0.0f, g.att_wh, A);
    cblas_sgemv(CblasRowMajor, CblasTrans, N, H, 1.0f, w->X + D, DH, w->dbp, 1, 0.0f, g.beta_w, 1);
    for (int r = 0; r < N; r++) g.beta_b[0] += w->dbp[r];
    /* LSTM weights: word rows from E y, the rest from [z; h] */
    mm(1, 0, E, 4 * H, N, w->ey, E, w->dG, 4 * H, 0.0f, g.lstm_w, 4 * H);
    mm(1, 0, DH, 4 * H, N, w->X, DH, w->dG, 4 * H, 0.0f, g.lstm_w + (size_t)E * 4 * H, 4 * H);
    colsum_add(w->dG, N, 4 * H, g.lstm_b);
    mm(0, 1, N, E, 4 * H, w->dG, 4 * H, dec->lstm_w, 4 * H, 0.0f, w->d2, E);
    for (int r = 0; r < N; r++) {
        float *ge = g.emb + (size_t)w->in_tok[r] * E;
        const float *d = w->d2 + (size_t)r * E;
        for (int j = 0; j < E; j++) ge[j] += d[j];
    }
}

int ac_decoder_forward_backward(const ac_decoder *dec, ac_dec_work *w, const ac_dec_batch *b, int train,
                                unsigned long long dropout_seed, float *grad, ac_dec_stats *st, ac_err *err) {
    const ac_decoder_config *c = &dec->cfg;
    if (dec->f16_only) return ac_errf(err, "the decoder was loaded for captioning (float16 weights only) and cannot train");
    if (memcmp(&w->cfg, c, sizeof *c) != 0) {
        ac_decoder_config a = w->cfg, z = *c;
        a.dropout = z.dropout, a.lambda = z.lambda; /* only sizes must match */
        a.attention_mode = z.attention_mode, a.reinforce = z.reinforce, a.entropy = z.entropy, a.expected = z.expected;
        if (memcmp(&a, &z, sizeof a)) return ac_errf(err, "decoder batch: workspace built for another config");
        w->cfg = *c;
    }
    if (b->B < 1) return ac_errf(err, "decoder batch: empty");
    int T = b->len[0], N = 0;
    for (int i = 0; i < b->B; i++) {
        if (b->len[i] < 1 || (i && b->len[i] > b->len[i - 1]))
            return ac_errf(err, "decoder batch: caption lengths must be >= 1 and sorted descending");
        if (b->len[i] - 1 > b->stride) return ac_errf(err, "decoder batch: caption longer than its stride");
        for (int k = 0; k < b->len[i] - 1; k++) {
            int v = b->words[(size_t)i * b->stride + k];
            if (v < 0 || v >= c->vocab) return ac_errf(err, "decoder batch: word id %d out of range", v);
        }
        N += b->len[i];
    }
    for (int i = 0; b->n_valid && i < b->B; i++) {
        if (b->n_valid[i] < 1 || b->n_valid[i] > c->n_ann)
            return ac_errf(err, "decoder batch: caption %d's photo has %d annotation vectors, not 1..%d", i, b->n_valid[i],
                           c->n_ann);
        for (int j = 0; j < i; j++) /* the captions of one photo agree on its cells (both decoders rely on it) */
            if (b->ann[j] == b->ann[i] && b->n_valid[j] != b->n_valid[i])
                return ac_errf(err, "decoder batch: captions %d and %d of one photo give it %d and %d cells", i, j,
                               b->n_valid[i], b->n_valid[j]);
    }
    for (int i = 0; b->n_regions && i < b->B; i++) {
        const int n = b->n_valid ? b->n_valid[i] : c->n_ann;
        if (b->n_regions[i] < 0 || b->n_regions[i] > c->regions || b->n_regions[i] >= n || (b->n_regions[i] && !b->region_cat))
            return ac_errf(err, "decoder batch: caption %d's photo has %d regions (the model: at most %d, fewer than its %d rows)",
                           i, b->n_regions[i], c->regions, n);
    }
    if (b->weight && (w->tf || c->attention_mode == AC_ATTENTION_HARD))
        return ac_errf(err, "decoder batch: caption weights are the soft-attention LSTM's");
    for (int i = 0; b->weight && i < b->B; i++)
        if (!isfinite(b->weight[i])) return ac_errf(err, "decoder batch: caption %d's weight is %g", i, b->weight[i]);
    if (w->tf) return ac_tf_forward_backward(dec, w->tf, b, train, dropout_seed, grad, st, err);
    if (work_reserve(w, b->B, T, N)) return ac_errf(err, "decoder batch: out of memory");
    w->B = b->B, w->T = T, w->N = N, w->U = 0;
    w->nreg = b->n_regions, w->rcat = b->region_cat, w->rscore = b->n_regions ? b->region_score : NULL;
    w->cw = b->weight;
    for (int i = 0; i < b->B; i++) {
        const int n = b->n_valid ? b->n_valid[i] : c->n_ann;
        int u = 0;
        while (u < w->U && w->uptr[u] != b->ann[i]) u++;
        if (u == w->U) w->uptr[w->U] = b->ann[i], w->uval[w->U++] = n;
        w->uimg[i] = u;
    }
    int r = 0;
    for (int t = 0; t < T; t++) {
        int bt = 0;
        while (bt < b->B && b->len[bt] > t) bt++;
        w->bt[t] = bt;
        w->off[t] = r;
        for (int i = 0; i < bt; i++, r++) {
            const int *ws = b->words + (size_t)i * b->stride;
            w->in_tok[r] = t == 0 ? AC_START : ws[t - 1];
            w->tgt[r] = t < b->len[i] - 1 ? ws[t] : AC_END;
        }
    }
    w->off[T] = r;
    if (!w->pk_ext) {
        size_t off[5];
        if (!w->pack_own && !(w->pack_own = ac_malloc(sizeof(float) * pack_size(c, off))))
            return ac_errf(err, "decoder batch: out of memory");
        ac_dec_pack_weights(dec, w->pack_own, w->pk);
    }
    ac_dec_stats s;
    forward(dec, w, b, train, dropout_seed, &s);
    if (st) *st = s;
    w->dctx_sum = grad ? b->dctx_sum : NULL;
    if (w->dctx_sum) memset(w->dctx_sum, 0, sizeof(float) * (size_t)c->dim);
    if (grad) backward(dec, w, grad);
    return 0;
}
