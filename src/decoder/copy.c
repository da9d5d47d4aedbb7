/* copy.c: the copy path (copy_internal.h says what it computes): the category -> words table, the
 * inference step's mixture and the training objective's per-token loss and gradient. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "attncap/regions.h"
#include "attention_internal.h"
#include "copy_internal.h"
#include "alloc_internal.h"

/* The words of category c are words[off[c] .. off[c + 1] - 1]; cat[w] is word w's category or -1. */
struct ac_copy_sets {
    int off[AC_COPY_CATEGORIES_MAX + 1];
    int *words; /* [V] at most */
    short *cat; /* [V] */
};

int ac_decoder_set_copy_words(ac_decoder *dec, const short *word_category, ac_err *err) {
    const int V = dec->cfg.vocab;
    struct ac_copy_sets *s = ac_calloc(1, sizeof *s);
    if (s) s->words = ac_malloc(sizeof *s->words * (size_t)V), s->cat = ac_malloc(sizeof *s->cat * (size_t)V);
    if (!s || !s->words || !s->cat) {
        if (s) free(s->words), free(s->cat);
        free(s);
        return ac_errf(err, "out of memory");
    }
    int count[AC_COPY_CATEGORIES_MAX] = {0};
    for (int w = 0; w < V; w++) {
        const int c = word_category[w];
        s->cat[w] = (short)(c >= 0 && c < AC_COPY_CATEGORIES_MAX ? c : -1);
        if (s->cat[w] >= 0) count[c]++;
    }
    s->off[0] = 0;
    for (int c = 0; c < AC_COPY_CATEGORIES_MAX; c++) s->off[c + 1] = s->off[c] + count[c], count[c] = s->off[c];
    for (int w = 0; w < V; w++)
        if (s->cat[w] >= 0) s->words[count[(int)s->cat[w]]++] = w;
    ac_decoder_free_copy_words(dec);
    dec->copy = s;
    return 0;
}

void ac_decoder_free_copy_words(ac_decoder *dec) {
    if (!dec->copy) return;
    free(dec->copy->words), free(dec->copy->cat), free(dec->copy);
    dec->copy = NULL;
}

float ac_copy_gate_logit(const ac_decoder *dec, const float *h, const float *z) {
    const int H = dec->cfg.hidden, D = dec->cfg.dim;
    float u = dec->copy_b[0];
    for (int j = 0; j < H; j++) u += dec->copy_w[j] * h[j];
    for (int j = 0; j < D; j++) u += dec->copy_w[H + j] * z[j];
    return u;
}

/* Pi per category of the regions (pi normalised over the regions whose category has words); returns
 * the number of categories with Pi > 0 written to cats[]/Pi[] (at most reg->n), 0 when there is
 * nothing to copy. */
static int category_shares(const struct ac_copy_sets *s, const ac_copy_regions *reg, int *cats, double *Pi, double *A) {
    double sum = 0;
    for (int r = 0; r < reg->n; r++) {
        const int c = reg->cat[r];
        if (c < AC_COPY_CATEGORIES_MAX && s->off[c + 1] > s->off[c]) sum += reg->abar[r];
    }
    *A = sum;
    if (!(sum > 0)) return 0;
    int n = 0;
    for (int r = 0; r < reg->n; r++) {
        const int c = reg->cat[r];
        if (c >= AC_COPY_CATEGORIES_MAX || s->off[c + 1] == s->off[c]) continue;
        int k = 0;
        while (k < n && cats[k] != c) k++;
        if (k == n) cats[n] = c, Pi[n++] = 0;
        Pi[k] += reg->abar[r] / sum;
    }
    return n;
}

/* The gate kept inside (0, 1): a float sigmoid reaches exactly 0 or 1 for |u| > 17, and a gate of 1
 * would give every word outside the regions' categories (<end> too) probability 0. */
static double clamp_gate(float gate) { return gate < 1e-6f ? 1e-6 : gate > 1 - 1e-6 ? 1 - 1e-6 : gate; }

/* log sum_{w in S(c)} exp(x_w) */
static double log_set_sum(const struct ac_copy_sets *s, int c, const float *x) {
    double mx = -INFINITY, t = 0;
    for (int i = s->off[c]; i < s->off[c + 1]; i++) mx = x[s->words[i]] > mx ? x[s->words[i]] : mx;
    for (int i = s->off[c]; i < s->off[c + 1]; i++) t += exp(x[s->words[i]] - mx);
    return mx + log(t);
}

/* Word w of the row: log p_w plus keep, or plus add[k] if its category is the regions' k-th. */
static inline float mixed(const struct ac_copy_sets *s, const int *cats, int n, const double *add, double keep,
                          const float *logp, int w) {
    const int c = s->cat[w];
    int k = 0;
    while (c >= 0 && k < n && cats[k] != c) k++;
    return (float)(logp[w] + (c < 0 || k == n ? keep : add[k]));
}

/* The words w + j of a vector's lanes j set in `lanes` (those of the regions' categories), one by one:
 * before the vector's store of the others, which leaves them as they are. */
static inline void mixed_lanes(const struct ac_copy_sets *s, const int *cats, int n, const double *add, double keep,
                               float *logp, int w, unsigned lanes) {
    for (; lanes; lanes &= lanes - 1) {
        const int j = __builtin_ctz(lanes);
        logp[w + j] = mixed(s, cats, n, add, keep, logp, w + j);
    }
}

void ac_copy_mix_logp(const ac_decoder *dec, const ac_copy_regions *reg, float gate, float *logp) {
    const struct ac_copy_sets *s = dec->copy;
    int cats[AC_REGIONS_MAX];
    double Pi[AC_REGIONS_MAX], A;
    const int n = s && reg->n <= AC_REGIONS_MAX ? category_shares(s, reg, cats, Pi, &A) : 0;
    if (!n) return;
    const int V = dec->cfg.vocab;
    const double g = clamp_gate(gate), keep = log1p(-g);
    double add[AC_REGIONS_MAX]; /* log((1 - g) p_w + g Pi_c p_w / Q_c) - log p_w, with log Q_c before logp changes */
    for (int k = 0; k < n; k++) add[k] = log((1 - g) + g * Pi[k] * exp(-log_set_sum(s, cats[k], logp)));
    int w = 0;
#if defined(__AVX512F__) && defined(__AVX512DQ__)
    /* 16 words at a time: (float)(log p_w + keep) in double as below, the words of the regions'
     * categories (a few dozen of the row) one by one */
    const __m512d kd = _mm512_set1_pd(keep);
    for (; w + 16 <= V; w += 16) {
        const __m512i c = _mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(s->cat + w)));
        __mmask16 mine = 0;
        for (int k = 0; k < n; k++) mine |= _mm512_cmpeq_epi32_mask(c, _mm512_set1_epi32(cats[k]));
        const __m512 x = _mm512_loadu_ps(logp + w);
        const __m256 lo = _mm512_cvtpd_ps(_mm512_add_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(x)), kd)),
                     hi = _mm512_cvtpd_ps(_mm512_add_pd(_mm512_cvtps_pd(_mm512_extractf32x8_ps(x, 1)), kd));
        mixed_lanes(s, cats, n, add, keep, logp, w, mine);
        _mm512_mask_storeu_ps(logp + w, (__mmask16)~mine, _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1));
    }
#elif defined(__AVX2__)
    /* the same 8 words at a time */
    const __m256d kd = _mm256_set1_pd(keep);
    for (; w + 8 <= V; w += 8) {
        const __m256i c = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(s->cat + w)));
        __m256i eq = _mm256_setzero_si256();
        for (int k = 0; k < n; k++) eq = _mm256_or_si256(eq, _mm256_cmpeq_epi32(c, _mm256_set1_epi32(cats[k])));
        const unsigned mine = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(eq));
        const __m256 x = _mm256_loadu_ps(logp + w);
        const __m128 lo = _mm256_cvtpd_ps(_mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(x)), kd)),
                     hi = _mm256_cvtpd_ps(_mm256_add_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)), kd));
        mixed_lanes(s, cats, n, add, keep, logp, w, mine);
        _mm256_maskstore_ps(logp + w, _mm256_xor_si256(eq, _mm256_set1_epi32(-1)), _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1));
    }
#endif
    for (; w < V; w++) logp[w] = mixed(s, cats, n, add, keep, logp, w);
}

int ac_copy_word_may_copy(const ac_decoder *dec, const unsigned char *cat, int n, int y) {
    const struct ac_copy_sets *s = dec->copy;
    const int cy = s && y >= 0 && y < dec->cfg.vocab ? s->cat[y] : -1;
    for (int r = 0; cy >= 0 && r < n; r++)
        if (cat[r] == cy) return 1;
    return 0;
}

/* Over p_y: p(y) / p_y = (1 - g) + g Pi_c / Q_c, and region r's part g pi_r / Q_c of it, so the shares
 * need neither p_y nor p(y) (no underflow for an unlikely word). Both depend on y only through its
 * category: one pass gives every category of the regions, and the word's account is read off it. */
void ac_copy_row_account(const ac_decoder *dec, const ac_copy_regions *reg, float gate, const float *logp,
                         float *share, float *from) {
    const struct ac_copy_sets *s = dec->copy;
    const int nr = reg->n < AC_REGIONS_MAX ? reg->n : AC_REGIONS_MAX;
    for (int r = 0; r < nr; r++) share[r] = 0, from[r] = 0;
    int cats[AC_REGIONS_MAX];
    double Pi[AC_REGIONS_MAX], A;
    const int n = s && reg->n <= AC_REGIONS_MAX ? category_shares(s, reg, cats, Pi, &A) : 0;
    const double g = clamp_gate(gate);
    for (int k = 0; k < n; k++) {
        const double q = exp(-log_set_sum(s, cats[k], logp)); /* 1 / Q_c */
        const double copied = g * Pi[k] * q, ratio = (1 - g) + copied; /* p(y) / p_y */
        for (int r = 0; r < nr; r++)
            if (reg->cat[r] == cats[k]) share[r] = (float)(copied / ratio), from[r] = (float)(g * (reg->abar[r] / A) * q / ratio);
    }
}

float ac_copy_word_account(const ac_decoder *dec, const ac_copy_regions *reg, float gate, const float *logp, int y,
                           float *region) {
    float share[AC_REGIONS_MAX], from[AC_REGIONS_MAX];
    ac_copy_row_account(dec, reg, gate, logp, share, from);
    return ac_copy_account_of_word(dec, reg->cat, reg->n, share, from, y, region);
}

float ac_copy_account_of_word(const ac_decoder *dec, const unsigned char *cat, int n, const float *share,
                              const float *from, int y, float *region) {
    const struct ac_copy_sets *s = dec->copy;
    const int cy = s && y >= 0 && y < dec->cfg.vocab ? s->cat[y] : -1;
    float copied = 0;
    for (int r = 0; r < n; r++) {
        const int mine = cy >= 0 && r < AC_REGIONS_MAX && cat[r] == cy;
        if (mine) copied = share[r];
        if (region) region[r] = mine ? from[r] : 0;
    }
    return copied;
}

/* What a token's loss and gradient share: log p_y, the log-normaliser of the logits, and P. */
typedef struct copy_token {
    int n, cats[AC_REGIONS_MAX];
    double Pi[AC_REGIONS_MAX], A;
    double lz;      /* log sum_w exp(logits_w) */
    double py, P;   /* p_y and p(y) */
    int ky;         /* y's category among cats, -1 if none */
    double lq_y;    /* log Q of y's category (unnormalised logits' log-sum over S(c(y)) - lz) */
    double m_y;     /* p_y / Q_{c(y)} (0 if ky < 0) */
} copy_token;

static void token_forward(const ac_decoder *dec, const ac_copy_regions *reg, float gate, const float *x, int y,
                          copy_token *t) {
    const struct ac_copy_sets *s = dec->copy;
    const int V = dec->cfg.vocab;
    double mx = x[0], z = 0;
    for (int w = 1; w < V; w++) mx = x[w] > mx ? x[w] : mx;
    for (int w = 0; w < V; w++) z += exp(x[w] - mx);
    t->lz = mx + log(z);
    t->py = exp(x[y] - t->lz);
    t->n = s && reg->n <= AC_REGIONS_MAX ? category_shares(s, reg, t->cats, t->Pi, &t->A) : 0;
    t->ky = -1, t->m_y = 0, t->lq_y = 0;
    const int cy = s ? s->cat[y] : -1;
    for (int k = 0; cy >= 0 && k < t->n; k++)
        if (t->cats[k] == cy) t->ky = k;
    if (t->ky >= 0) {
        t->lq_y = log_set_sum(s, cy, x) - t->lz;
        t->m_y = exp(x[y] - t->lz - t->lq_y);
    }
    const double g = t->n ? clamp_gate(gate) : 0;
    t->P = (1 - g) * t->py + (t->ky >= 0 ? g * t->Pi[t->ky] * t->m_y : 0);
}

double ac_copy_xent(const ac_decoder *dec, const ac_copy_regions *reg, float gate, const float *logits, int y,
                    double *switch_loss) {
    copy_token t;
    token_forward(dec, reg, gate, logits, y, &t);
    *switch_loss = 0;
    if (!t.n) return t.lz - logits[y]; /* nothing to copy: the plain cross-entropy */
    const double g = clamp_gate(gate);
    *switch_loss = -(t.ky >= 0 ? log(g) : log1p(-g));
    return -log(t.P > 1e-300 ? t.P : 1e-300);
}

/* With C = Pi_{c(y)} m_y, P = (1 - g) p_y + g C, a = (1 - g) p_y / P, b = g C / P (a + b = 1):
 *   d(-log P)/d x_k  = a p_k + b [k in S(c(y))] p_k / Q_{c(y)} - [k = y]
 *   d(-log P)/d g    = (p_y - C) / P,   times g (1 - g) for the gate's pre-activation
 *   d(-log P)/d pi_r = -g [c_r = c(y)] m_y / P,  and through pi_r = abar_r / A:
 *   d/d abar_r       = (d/d pi_r - sum_r' pi_r' d/d pi_r') / A  for regions of named categories, else 0. */
void ac_copy_xent_grad(const ac_decoder *dec, const ac_copy_regions *reg, float gate, float *x, int y, float k,
                       float *dgate_logit, float *dabar) {
    const struct ac_copy_sets *s = dec->copy;
    const int V = dec->cfg.vocab;
    copy_token t;
    token_forward(dec, reg, gate, x, y, &t);
    for (int r = 0; r < reg->n; r++) dabar[r] = 0;
    *dgate_logit = 0;
    if (!t.n) { /* the plain cross-entropy's gradient */
        for (int w = 0; w < V; w++) x[w] = (float)(k * exp(x[w] - t.lz));
        x[y] -= k;
        return;
    }
    const double g = clamp_gate(gate), P = t.P > 1e-300 ? t.P : 1e-300, C = t.ky >= 0 ? t.Pi[t.ky] * t.m_y : 0;
    const double a = (1 - g) * t.py / P, b = g * C / P;
    const int cy = t.ky >= 0 ? t.cats[t.ky] : -1;
    for (int w = 0; w < V; w++) { /* p_k = exp(x_k - lz); p_k / Q = exp(x_k - lz - lq) */
        const double lp = x[w] - t.lz;
        x[w] = (float)(k * (a * exp(lp) + (cy >= 0 && s->cat[w] == cy ? b * exp(lp - t.lq_y) : 0)));
    }
    x[y] -= k;
    *dgate_logit = (float)(k * ((t.py - C) / P * g * (1 - g) + AC_COPY_SWITCH_WEIGHT * (g - (t.ky >= 0))));
    if (t.ky < 0 || !(t.A > 0)) return;
    /* dpi_r = -g m_y / P for regions of y's category; sum_r' pi_r' dpi_r' = -g m_y Pi_{c(y)} / P */
    const double dpi = -g * t.m_y / P, mean = dpi * t.Pi[t.ky];
    for (int r = 0; r < reg->n; r++) {
        const int c = reg->cat[r];
        if (c >= AC_COPY_CATEGORIES_MAX || s->off[c + 1] == s->off[c]) continue;
        dabar[r] = (float)(k * ((c == cy ? dpi : 0) - mean) / t.A);
    }
}

/* ---- copy 2: the pointer and its sentinel ---- */

static int named(const struct ac_copy_sets *s, int c) { return c < AC_COPY_CATEGORIES_MAX && s->off[c + 1] > s->off[c]; }

static ac_attention_fn pointer_fn(const ac_decoder *dec) {
    return (ac_attention_fn){AC_ATTENTION_ADDITIVE, ac_attention_key_dim(&dec->cfg), 1, dec->ptr_we, 1.0f};
}

float ac_copy_pointer_forward(const ac_decoder *dec, const ac_copy_regions *reg, const float *keys, const float *q,
                              const float *h, float *e, float *abar, float *cache) {
    const struct ac_copy_sets *s = dec->copy;
    const ac_attention_fn f = pointer_fn(dec);
    const int H = dec->cfg.hidden;
    ac_attention_scores_forward(&f, reg->n, q, keys, e, cache);
    float mx = -INFINITY;
    for (int r = 0; r < reg->n; r++)
        if (named(s, reg->cat[r]) && e[r] > mx) mx = e[r];
    if (mx == -INFINITY) {
        for (int r = 0; r < reg->n; r++) abar[r] = 0;
        return -INFINITY;
    }
    double sum = 0;
    for (int r = 0; r < reg->n; r++) sum += abar[r] = named(s, reg->cat[r]) ? expf(e[r] - mx) : 0.0f;
    float es = dec->ptr_bs[0];
    for (int j = 0; j < H; j++) es += dec->ptr_ws[j] * h[j];
    return (float)(mx + log(sum) - es);
}

/* u = log sum_r exp(e_r) - e_s gives du/de_r = pi_r and du/de_s = -1; abar_r = exp(e_r - max) gives
 * dabar_r/de_r = abar_r (the max moves every abar in proportion, which the mixture does not see:
 * sum_r abar_r dabar_r = 0). */
void ac_copy_pointer_backward(const ac_decoder *dec, const ac_copy_regions *reg, const float *keys, const float *q,
                              const float *h, const float *cache, float du, const float *dabar, float *dq,
                              float *dkeys, float *g_we, float *g_ws, float *g_bs, float *dh) {
    const int H = dec->cfg.hidden;
    const ac_attention_fn f = pointer_fn(dec);
    float de[AC_REGIONS_MAX];
    double sum = 0;
    for (int r = 0; r < reg->n; r++) sum += reg->abar[r];
    if (!(sum > 0)) return;
    for (int r = 0; r < reg->n; r++) de[r] = (float)(du * reg->abar[r] / sum + dabar[r] * reg->abar[r]);
    ac_attention_scores_backward(&f, reg->n, q, keys, cache, de, dq, dkeys, g_we, NULL);
    for (int j = 0; j < H; j++) g_ws[j] -= du * h[j], dh[j] -= du * dec->ptr_ws[j];
    g_bs[0] -= du;
}

/* present [AC_COPY_CATEGORIES]: 1 for the categories of the regions cat [n]. */
static void categories_present(const unsigned char *cat, int n, unsigned char *present) {
    memset(present, 0, AC_COPY_CATEGORIES);
    for (int r = 0; r < n; r++)
        if (cat[r] < AC_COPY_CATEGORIES) present[cat[r]] = 1;
}

void ac_copy_absent_logits(const ac_decoder *dec, const unsigned char *cat, int n, int rows, float *logits, int ld) {
    const struct ac_copy_sets *s = dec->copy;
    unsigned char present[AC_COPY_CATEGORIES];
    categories_present(cat, n, present);
    for (int c = 0; c < AC_COPY_CATEGORIES; c++) {
        const float b = dec->absent_b[c];
        if (present[c] || b == 0) continue;
        for (int k = 0; k < rows; k++)
            for (int i = s->off[c]; i < s->off[c + 1]; i++) logits[(size_t)k * ld + s->words[i]] += b;
    }
}

void ac_copy_absent_grad(const ac_decoder *dec, const unsigned char *cat, int n, const float *dlogits, float *g_absent) {
    const struct ac_copy_sets *s = dec->copy;
    unsigned char present[AC_COPY_CATEGORIES];
    categories_present(cat, n, present);
    for (int c = 0; c < AC_COPY_CATEGORIES; c++) {
        if (present[c]) continue;
        float sum = 0;
        for (int i = s->off[c]; i < s->off[c + 1]; i++) sum += dlogits[s->words[i]];
        g_absent[c] += sum;
    }
}
