/* attention.c: the attention score functions of decoder.h, forward and backward, one query against
 * the L keys of one photo (row-vector convention: keys[l] is row l of [L, A]), head by head: head j
 * is the same with q, k_l and w_e cut to their columns j A/n .. (j+1) A/n - 1 (A then means A/n).
 *
 *   additive    e_l = w_e . tanh(k_l + q)
 *   dot         e_l = q . k_l                 scaled-dot: times 1/sqrt(A)   general: as dot (q = h)
 *   cosine      e_l = tau (q . k_l) / (|q| |k_l|),  |x| = sqrt(x . x + eps),  tau = exp(s)
 *
 * Backward (de = d loss / d e):
 *   additive    dpre = de_l w_e (1 - th_l^2): dk_l += dpre, dq += dpre, dw_e += de_l th_l
 *   dot         dk_l += c de_l q, dq += c de_l k_l (c = 1 or 1/sqrt(A))
 *   cosine      with c_l = cos(q, k_l): dq += tau de_l (k_l / (|q||k_l|) - c_l q / |q|^2),
 *               dk_l += tau de_l (q / (|q||k_l|) - c_l k_l / |k_l|^2), ds += de_l e_l
 * (the eps inside the norms keeps these exact: d|x|/dx = x / |x| still). */
#pragma GCC optimize("O3")
#include "attention_internal.h"

#include <math.h>

#include "decoder_internal.h"

#define COS_EPS 1e-8f

unsigned ac_attention_tensors(int score) {
    switch (score) {
    case AC_ATTENTION_ADDITIVE: return AC_ATTENTION_HAS_BA | AC_ATTENTION_HAS_WH | AC_ATTENTION_HAS_WE;
    case AC_ATTENTION_DOT:
    case AC_ATTENTION_SCALED_DOT: return AC_ATTENTION_HAS_WH;
    case AC_ATTENTION_COSINE: return AC_ATTENTION_HAS_BA | AC_ATTENTION_HAS_WH | AC_ATTENTION_HAS_LOGTAU;
    default: return 0; /* general: W_a alone */
    }
}

int ac_attention_key_dim(const ac_decoder_config *c) {
    return c->attention == AC_ATTENTION_GENERAL ? c->hidden : c->att;
}

int ac_attention_heads(const ac_decoder_config *c) { return c->heads > 1 ? c->heads : 1; }

ac_attention_fn ac_attention_fn_of(const ac_decoder *dec) {
    ac_attention_fn f = {dec->cfg.attention, ac_attention_key_dim(&dec->cfg), ac_attention_heads(&dec->cfg),
                         dec->att_we, 1.0f};
    if (dec->att_logtau) f.tau = expf(dec->att_logtau[0]);
    return f;
}

size_t ac_attention_cache_size(const ac_decoder_config *c) {
    return c->attention == AC_ATTENTION_ADDITIVE ? (size_t)c->n_ann * (size_t)c->att : 0;
}

/* ---- row kernels: 16 partial sums, so that the reductions vectorise ---- */

#if defined(__AVX2__) && !defined(__AVX512F__)
#include <immintrin.h>
/* ac_tanhf on 8 lanes, the same operations in the same order (no fused multiply-add), so the same bits.
 * GCC vectorises the scalar loop below with AVX-512's masks, but not with AVX2: its clamp stays a
 * branch, and the attention ran one element at a time (a tenth of a caption's CPU). max(lo, x) and
 * min(hi, x) return x when x is NaN, as the scalar clamp does. */
static inline __m256 tanh8(__m256 x) {
    const __m256 lim = _mm256_set1_ps(AC_TANH_LIM);
    x = _mm256_min_ps(lim, _mm256_max_ps(_mm256_sub_ps(_mm256_setzero_ps(), lim), x));
    const __m256 x2 = _mm256_mul_ps(x, x);
#define STEP(v, c) v = _mm256_add_ps(_mm256_mul_ps(v, x2), _mm256_set1_ps(c))
    __m256 p = _mm256_set1_ps(AC_TANH_A13);
    STEP(p, AC_TANH_A11), STEP(p, AC_TANH_A9), STEP(p, AC_TANH_A7), STEP(p, AC_TANH_A5), STEP(p, AC_TANH_A3);
    STEP(p, AC_TANH_A1);
    p = _mm256_mul_ps(p, x);
    __m256 q = _mm256_set1_ps(AC_TANH_B6);
    STEP(q, AC_TANH_B4), STEP(q, AC_TANH_B2), STEP(q, AC_TANH_B0);
#undef STEP
    return _mm256_div_ps(p, q);
}
#endif

/* w_e . tanh(k + q), keeping the tanh in th when store (the training forward). */
static inline float additive_row(int A, const float *restrict k, const float *restrict q, const float *restrict we,
                                 float *restrict th, int store) {
    float acc[16] = {0}, e = 0;
    int j = 0;
#if defined(__AVX2__) && !defined(__AVX512F__)
    /* acc[0..7] and acc[8..15] as two registers: each lane sums the same terms in the same order */
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    for (; j + 16 <= A; j += 16) {
        const __m256 t0 = tanh8(_mm256_add_ps(_mm256_loadu_ps(k + j), _mm256_loadu_ps(q + j)));
        const __m256 t1 = tanh8(_mm256_add_ps(_mm256_loadu_ps(k + j + 8), _mm256_loadu_ps(q + j + 8)));
        if (store) _mm256_storeu_ps(th + j, t0), _mm256_storeu_ps(th + j + 8, t1);
        a0 = _mm256_add_ps(a0, _mm256_mul_ps(t0, _mm256_loadu_ps(we + j)));
        a1 = _mm256_add_ps(a1, _mm256_mul_ps(t1, _mm256_loadu_ps(we + j + 8)));
    }
    _mm256_storeu_ps(acc, a0), _mm256_storeu_ps(acc + 8, a1);
#endif
    for (; j + 16 <= A; j += 16)
        for (int i = 0; i < 16; i++) {
            const float t = ac_tanhf(k[j + i] + q[j + i]);
            if (store) th[j + i] = t;
            acc[i] += t * we[j + i];
        }
    for (; j < A; j++) {
        const float t = ac_tanhf(k[j] + q[j]);
        if (store) th[j] = t;
        e += t * we[j];
    }
    for (int i = 0; i < 16; i++) e += acc[i];
    return e;
}

static inline float dot_row(int A, const float *restrict x, const float *restrict y) {
    float acc[16] = {0}, e = 0;
    int j = 0;
    for (; j + 16 <= A; j += 16)
        for (int i = 0; i < 16; i++) acc[i] += x[j + i] * y[j + i];
    for (; j < A; j++) e += x[j] * y[j];
    for (int i = 0; i < 16; i++) e += acc[i];
    return e;
}

/* y += s x */
static inline void axpy_row(int A, float s, const float *restrict x, float *restrict y) {
    for (int j = 0; j < A; j++) y[j] += s * x[j];
}

static float dot_scale(const ac_attention_fn *f) {
    return f->score == AC_ATTENTION_SCALED_DOT ? 1.0f / sqrtf((float)f->A) : 1.0f;
}

static float eps_norm(int A, const float *x) { return sqrtf(dot_row(A, x, x) + COS_EPS); }

/* ---- forward ---- */

/* One head: f->A is the head's width, keys' rows are ldk apart. */
static void head_forward(const ac_attention_fn *f, int L, const float *q, const float *keys, int ldk, float *e,
                         float *cache) {
    const int A = f->A;
    switch (f->score) {
    case AC_ATTENTION_ADDITIVE:
        if (cache)
            for (int l = 0; l < L; l++)
                e[l] = additive_row(A, keys + (size_t)l * ldk, q, f->we, cache + (size_t)l * A, 1);
        else
            for (int l = 0; l < L; l++) e[l] = additive_row(A, keys + (size_t)l * ldk, q, f->we, NULL, 0);
        break;
    case AC_ATTENTION_COSINE: {
        const float tq = f->tau / eps_norm(A, q);
        for (int l = 0; l < L; l++) {
            const float *k = keys + (size_t)l * ldk;
            e[l] = tq * dot_row(A, q, k) / eps_norm(A, k);
        }
        break;
    }
    default: { /* dot, scaled-dot, general */
        const float s = dot_scale(f);
        for (int l = 0; l < L; l++) e[l] = s * dot_row(A, q, keys + (size_t)l * ldk);
    }
    }
}

/* ---- backward ---- */

static void head_backward(const ac_attention_fn *f, int L, const float *q, const float *keys, int ldk,
                          const float *cache, const float *de, float *dq, float *dkeys, float *dwe, float *dlogtau) {
    const int A = f->A;
    switch (f->score) {
    case AC_ATTENTION_ADDITIVE:
        for (int l = 0; l < L; l++) {
            const float *restrict th = cache + (size_t)l * A, *restrict we = f->we;
            float *restrict dk = dkeys + (size_t)l * ldk, *restrict dqr = dq, *restrict dw = dwe;
            const float d = de[l];
            for (int j = 0; j < A; j++) {
                const float t = th[j], dpre = d * we[j] * (1.0f - t * t);
                dw[j] += d * t;
                dk[j] += dpre;
                dqr[j] += dpre;
            }
        }
        break;
    case AC_ATTENTION_COSINE: {
        const float nq = eps_norm(A, q);
        float ds = 0;
        for (int l = 0; l < L; l++) {
            const float *k = keys + (size_t)l * ldk;
            const float nk = eps_norm(A, k), c = dot_row(A, q, k) / (nq * nk), g = f->tau * de[l];
            ds += de[l] * f->tau * c;
            axpy_row(A, g / (nq * nk), k, dq);
            axpy_row(A, -g * c / (nq * nq), q, dq);
            float *dk = dkeys + (size_t)l * ldk;
            axpy_row(A, g / (nq * nk), q, dk);
            axpy_row(A, -g * c / (nk * nk), k, dk);
        }
        *dlogtau += ds;
        break;
    }
    default: {
        const float s = dot_scale(f);
        for (int l = 0; l < L; l++) {
            axpy_row(A, s * de[l], keys + (size_t)l * ldk, dq);
            axpy_row(A, s * de[l], q, dkeys + (size_t)l * ldk);
        }
    }
    }
}

/* ---- all heads ---- */

/* Head j of f: its width and its columns of w_e. */
static ac_attention_fn head_of(const ac_attention_fn *f, int j) {
    ac_attention_fn h = *f;
    h.A = f->A / f->heads, h.heads = 1;
    if (f->we) h.we = f->we + (size_t)j * h.A;
    return h;
}

void ac_attention_scores_forward_masked(const ac_attention_fn *f, int L, int n, const float *q, const float *keys,
                                        float *e, float *cache) {
    for (int j = 0; j < f->heads; j++) {
        const ac_attention_fn h = head_of(f, j);
        const size_t c = (size_t)j * h.A;
        head_forward(&h, n, q + c, keys + c, f->A, e + (size_t)j * L, cache ? cache + c * L : NULL);
    }
}

void ac_attention_scores_forward(const ac_attention_fn *f, int L, const float *q, const float *keys, float *e,
                                 float *cache) {
    ac_attention_scores_forward_masked(f, L, L, q, keys, e, cache);
}

void ac_attention_scores_backward_masked(const ac_attention_fn *f, int L, int n, const float *q, const float *keys,
                                         const float *cache, const float *de, float *dq, float *dkeys, float *dwe,
                                         float *dlogtau) {
    for (int j = 0; j < f->heads; j++) {
        const ac_attention_fn h = head_of(f, j);
        const size_t c = (size_t)j * h.A;
        head_backward(&h, n, q + c, keys + c, f->A, cache ? cache + c * L : NULL, de + (size_t)j * L, dq + c,
                      dkeys + c, dwe ? dwe + c : NULL, dlogtau);
    }
}

void ac_attention_scores_backward(const ac_attention_fn *f, int L, const float *q, const float *keys,
                                  const float *cache, const float *de, float *dq, float *dkeys, float *dwe,
                                  float *dlogtau) {
    ac_attention_scores_backward_masked(f, L, L, q, keys, cache, de, dq, dkeys, dwe, dlogtau);
}

/* ---- softmax ---- */

void ac_attention_softmax_forward_masked(float *e, int rows, int L, int n) {
    for (float *x = e; x < e + (size_t)rows * L; x += L) {
        float mx = x[0], s = 0;
        for (int l = 1; l < n; l++) mx = x[l] > mx ? x[l] : mx;
        for (int l = 0; l < n; l++) s += (x[l] = expf(x[l] - mx));
        for (int l = 0; l < n; l++) x[l] /= s;
        for (int l = n; l < L; l++) x[l] = 0.0f;
    }
}

void ac_attention_softmax_forward(float *e, int rows, int L) { ac_attention_softmax_forward_masked(e, rows, L, L); }

void ac_attention_softmax_backward_masked(const float *alpha, const float *dalpha, int rows, int L, int n, float *de) {
    for (size_t r = 0; r < (size_t)rows * L; r += L) {
        float s = 0;
        for (int l = 0; l < n; l++) s += alpha[r + l] * dalpha[r + l];
        for (int l = 0; l < n; l++) de[r + l] = alpha[r + l] * (dalpha[r + l] - s);
        for (int l = n; l < L; l++) de[r + l] = 0.0f;
    }
}

void ac_attention_softmax_backward(const float *alpha, const float *dalpha, int rows, int L, float *de) {
    ac_attention_softmax_backward_masked(alpha, dalpha, rows, L, L, de);
}
