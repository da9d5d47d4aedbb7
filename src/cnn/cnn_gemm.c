/* cnn_gemm.c: the matrix product behind pointwise (1x1) and im2col convolutions, with bias and the
 * fused activation applied on the way out.
 *
 * Why not just sgemm: in MobileNets the products are tall and thin (M = pixels, up to 50k; K and N
 * between 16 and 1280), where a general sgemm spends much of its time packing A and synchronising
 * threads. Here the weights are packed once, when the plan is made, into panels of 32 output
 * channels ([K][32] each), and activations are used in place: NHWC rows are already the rows of A.
 * An 8 x 32 register tile (16 AVX-512 accumulators) takes, per k, two loads of weights and eight
 * broadcast activations for sixteen FMAs. Threads split the work by (row block, panel) units, and
 * each output element is computed the same way whatever the split, so the result does not depend
 * on the thread count. With AVX2 and FMA (no AVX-512) the same scheme runs on 16-column panels and a
 * 6 x 16 tile (12 accumulators of 8 floats): every output element is the same chain of fused
 * multiply-adds, bias first, then k in order, so both give the same bits. Without either this falls
 * back to OpenBLAS sgemm on the unpacked weights. */
#include <cblas.h>
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "cnn_internal.h"
#include "cnn_silu.h"

#if defined(__AVX512F__)
#define NR 32 /* columns per packed panel */
#define MR 8  /* rows of the wide tile (NR columns) */
#define MR_NARROW 8 /* rows of the narrow tile (NR / 2 columns or fewer): 16 spilled row pointers (YOLOX's first conv, N = 16) */
#else
#define NR 16
#define MR 6
#define MR_NARROW 12
#endif

size_t ac_cnn_gemm_packed_size(int n, int k) { return (size_t)((n + NR - 1) / NR) * NR * (size_t)k; }

void ac_cnn_gemm_pack(int n, int k, const float *w, float *packed) {
    int np = (n + NR - 1) / NR;
    for (int pb = 0; pb < np; pb++)
        for (int p = 0; p < k; p++)
            for (int j = 0; j < NR; j++) {
                int col = pb * NR + j;
                packed[((size_t)pb * k + p) * NR + j] = col < n ? w[(size_t)col * k + p] : 0.0f;
            }
}

#if defined(__AVX512F__)
#include <immintrin.h>


/* What happens to a result on its way out: the conv's activation (a clamp, or SiLU), then (add not
 * NULL) the fused residual sum and its activation, as the ADD would have done it. */
typedef struct epilogue {
    __m512 lo, hi, sum_lo, sum_hi;
    int silu;
} epilogue;

/* always_inline: GCC declined to inline the tiles once they took the sum, and the products with few
 * columns or a short K (16 -> 96 at 224 x 224) lost 3-7% to the calls. */
#define TILE_INLINE static inline __attribute__((always_inline))

TILE_INLINE void store16(float *c, const float *add, __mmask16 m, __m512 v, const epilogue *e) {
    v = _mm512_min_ps(_mm512_max_ps(v, e->lo), e->hi);
    if (e->silu) v = ac_cnn_silu16(v);
    if (add) v = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(v, _mm512_maskz_loadu_ps(m, add)), e->sum_lo), e->sum_hi);
    _mm512_mask_storeu_ps(c, m, v);
}

/* c[0..mr)[0..nr) = clamp(a[0..mr)[:] . panel + bias), then the sum with add (laid out as c) if not
 * NULL. Rows past mr repeat the last one (their results are not stored), so a short tail needs no copy. */
TILE_INLINE void tile_wide(int k, const float *a, int lda, const float *panel, const float *bias, int nr,
                           const epilogue *e, float *c, const float *add, int ldc, int mr) {
    __mmask16 m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1);
    __mmask16 m1 = nr >= 32 ? 0xffff : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1) : 0;
    __m512 b0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
    __m512 b1 = bias ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
    __m512 c00 = b0, c01 = b1, c10 = b0, c11 = b1, c20 = b0, c21 = b1, c30 = b0, c31 = b1;
    __m512 c40 = b0, c41 = b1, c50 = b0, c51 = b1, c60 = b0, c61 = b1, c70 = b0, c71 = b1;
#define ROW(r) (a + (size_t)(r < mr ? r : mr - 1) * lda)
    const float *a0 = ROW(0), *a1 = ROW(1), *a2 = ROW(2), *a3 = ROW(3), *a4 = ROW(4), *a5 = ROW(5), *a6 = ROW(6), *a7 = ROW(7);
#undef ROW
    for (int p = 0; p < k; p++) {
        __m512 w0 = _mm512_loadu_ps(panel + (size_t)p * NR), w1 = _mm512_loadu_ps(panel + (size_t)p * NR + 16);
        __m512 x;
        x = _mm512_set1_ps(a0[p]), c00 = _mm512_fmadd_ps(x, w0, c00), c01 = _mm512_fmadd_ps(x, w1, c01);
        x = _mm512_set1_ps(a1[p]), c10 = _mm512_fmadd_ps(x, w0, c10), c11 = _mm512_fmadd_ps(x, w1, c11);
        x = _mm512_set1_ps(a2[p]), c20 = _mm512_fmadd_ps(x, w0, c20), c21 = _mm512_fmadd_ps(x, w1, c21);
        x = _mm512_set1_ps(a3[p]), c30 = _mm512_fmadd_ps(x, w0, c30), c31 = _mm512_fmadd_ps(x, w1, c31);
        x = _mm512_set1_ps(a4[p]), c40 = _mm512_fmadd_ps(x, w0, c40), c41 = _mm512_fmadd_ps(x, w1, c41);
        x = _mm512_set1_ps(a5[p]), c50 = _mm512_fmadd_ps(x, w0, c50), c51 = _mm512_fmadd_ps(x, w1, c51);
        x = _mm512_set1_ps(a6[p]), c60 = _mm512_fmadd_ps(x, w0, c60), c61 = _mm512_fmadd_ps(x, w1, c61);
        x = _mm512_set1_ps(a7[p]), c70 = _mm512_fmadd_ps(x, w0, c70), c71 = _mm512_fmadd_ps(x, w1, c71);
    }
#define STORE_ROW(r, v0, v1)                                                                         \
    if (r < mr) {                                                                                    \
        store16(c + (size_t)r * ldc, add ? add + (size_t)r * ldc : NULL, m0, v0, e);                 \
        if (m1) store16(c + (size_t)r * ldc + 16, add ? add + (size_t)r * ldc + 16 : NULL, m1, v1, e); \
    }
    STORE_ROW(0, c00, c01) STORE_ROW(1, c10, c11) STORE_ROW(2, c20, c21) STORE_ROW(3, c30, c31)
    STORE_ROW(4, c40, c41) STORE_ROW(5, c50, c51) STORE_ROW(6, c60, c61) STORE_ROW(7, c70, c71)
#undef STORE_ROW
}

/* The same for panels of at most 16 columns: MR_NARROW rows x 16 columns, so no FMA is spent on padding. */
TILE_INLINE void tile_narrow(int k, const float *a, int lda, const float *panel, const float *bias, int nr,
                             const epilogue *e, float *c, const float *add, int ldc, int mr) {
    __mmask16 m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1);
    __m512 b0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
    __m512 acc[MR_NARROW];
    const float *row[MR_NARROW];
#pragma GCC unroll 16
    for (int r = 0; r < MR_NARROW; r++) acc[r] = b0, row[r] = a + (size_t)(r < mr ? r : mr - 1) * lda;
    for (int p = 0; p < k; p++) {
        __m512 w0 = _mm512_loadu_ps(panel + (size_t)p * NR);
#pragma GCC unroll 16
        for (int r = 0; r < MR_NARROW; r++) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(row[r][p]), w0, acc[r]);
    }
    for (int r = 0; r < mr; r++) store16(c + (size_t)r * ldc, add ? add + (size_t)r * ldc : NULL, m0, acc[r], e);
}

#define SET1 _mm512_set1_ps
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

typedef struct epilogue {
    __m256 lo, hi, sum_lo, sum_hi;
    int silu;
} epilogue;

#define TILE_INLINE static inline __attribute__((always_inline))

/* The first n (0..8) lanes. */
TILE_INLINE __m256i lanes(int n) { return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)); }

/* n: how many of the 8 columns are real (8: plain loads and stores, the usual case). */
TILE_INLINE void store8(float *c, const float *add, int n, __m256 v, const epilogue *e) {
    v = _mm256_min_ps(_mm256_max_ps(v, e->lo), e->hi);
    if (e->silu) v = ac_cnn_silu8(v);
    if (add) {
        __m256 s = n >= 8 ? _mm256_loadu_ps(add) : _mm256_maskload_ps(add, lanes(n));
        v = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(v, s), e->sum_lo), e->sum_hi);
    }
    if (n >= 8) _mm256_storeu_ps(c, v);
    else _mm256_maskstore_ps(c, lanes(n), v);
}

TILE_INLINE __m256 load_bias(const float *bias, int n) {
    if (!bias || n <= 0) return _mm256_setzero_ps();
    return n >= 8 ? _mm256_loadu_ps(bias) : _mm256_maskload_ps(bias, lanes(n));
}

/* c[0..mr)[0..nr) = clamp(a[0..mr)[:] . panel + bias), then the sum with add (laid out as c) if not
 * NULL. Rows past mr repeat the last one (their results are not stored), so a short tail needs no copy. */
TILE_INLINE void tile_wide(int k, const float *a, int lda, const float *panel, const float *bias, int nr,
                           const epilogue *e, float *c, const float *add, int ldc, int mr) {
    const int n0 = nr < 8 ? nr : 8, n1 = nr - 8;
    const __m256 b0 = load_bias(bias, n0), b1 = load_bias(bias ? bias + 8 : NULL, n1);
    __m256 c00 = b0, c01 = b1, c10 = b0, c11 = b1, c20 = b0, c21 = b1, c30 = b0, c31 = b1, c40 = b0, c41 = b1, c50 = b0, c51 = b1;
#define ROW(r) (a + (size_t)(r < mr ? r : mr - 1) * lda)
    const float *a0 = ROW(0), *a1 = ROW(1), *a2 = ROW(2), *a3 = ROW(3), *a4 = ROW(4), *a5 = ROW(5);
#undef ROW
    for (int p = 0; p < k; p++) {
        const __m256 w0 = _mm256_loadu_ps(panel + (size_t)p * NR), w1 = _mm256_loadu_ps(panel + (size_t)p * NR + 8);
        __m256 x;
        x = _mm256_broadcast_ss(a0 + p), c00 = _mm256_fmadd_ps(x, w0, c00), c01 = _mm256_fmadd_ps(x, w1, c01);
        x = _mm256_broadcast_ss(a1 + p), c10 = _mm256_fmadd_ps(x, w0, c10), c11 = _mm256_fmadd_ps(x, w1, c11);
        x = _mm256_broadcast_ss(a2 + p), c20 = _mm256_fmadd_ps(x, w0, c20), c21 = _mm256_fmadd_ps(x, w1, c21);
        x = _mm256_broadcast_ss(a3 + p), c30 = _mm256_fmadd_ps(x, w0, c30), c31 = _mm256_fmadd_ps(x, w1, c31);
        x = _mm256_broadcast_ss(a4 + p), c40 = _mm256_fmadd_ps(x, w0, c40), c41 = _mm256_fmadd_ps(x, w1, c41);
        x = _mm256_broadcast_ss(a5 + p), c50 = _mm256_fmadd_ps(x, w0, c50), c51 = _mm256_fmadd_ps(x, w1, c51);
    }
#define STORE_ROW(r, v0, v1)                                                                  \
    if (r < mr) {                                                                             \
        store8(c + (size_t)r * ldc, add ? add + (size_t)r * ldc : NULL, n0, v0, e);           \
        if (n1 > 0) store8(c + (size_t)r * ldc + 8, add ? add + (size_t)r * ldc + 8 : NULL, n1, v1, e); \
    }
    STORE_ROW(0, c00, c01) STORE_ROW(1, c10, c11) STORE_ROW(2, c20, c21) STORE_ROW(3, c30, c31)
    STORE_ROW(4, c40, c41) STORE_ROW(5, c50, c51)
#undef STORE_ROW
}

/* The same for panels of at most 8 columns: 12 rows x 8 columns. */
TILE_INLINE void tile_narrow(int k, const float *a, int lda, const float *panel, const float *bias, int nr,
                             const epilogue *e, float *c, const float *add, int ldc, int mr) {
    const __m256 b0 = load_bias(bias, nr);
    __m256 acc[MR_NARROW];
    const float *row[MR_NARROW];
#pragma GCC unroll 12
    for (int r = 0; r < MR_NARROW; r++) acc[r] = b0, row[r] = a + (size_t)(r < mr ? r : mr - 1) * lda;
    for (int p = 0; p < k; p++) {
        const __m256 w0 = _mm256_loadu_ps(panel + (size_t)p * NR);
#pragma GCC unroll 12
        for (int r = 0; r < MR_NARROW; r++) acc[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(row[r] + p), w0, acc[r]);
    }
    for (int r = 0; r < mr; r++) store8(c + (size_t)r * ldc, add ? add + (size_t)r * ldc : NULL, nr, acc[r], e);
}

#define SET1 _mm256_set1_ps
#endif

#if defined(AC_CNN_OWN_GEMM)
typedef struct gemm_job {
    int m, n, k;
    const float *a, *packed, *bias;
    float *c;
    const float *add; /* the fused residual sum's other operand, laid out as c, or NULL */
    int act, sum_act;
    int mblocks, mc; /* row blocks of mc rows (the last may be shorter) */
} gemm_job;

#define MC 64 /* at most this many rows per cache block: mc x K activations stay in L2 while the panels stream by */

/* The work is a grid of units, one per (row block, panel), numbered row block first; chunk t of nt
 * takes the units [U t / nt, U (t + 1) / nt). Every shape gets even chunks this way, the 14 x 14
 * layers (4 row blocks, 10 panels) as well as the 112 x 112 ones (196 row blocks). */
static void gemm_part(void *arg, int t, int nt) {
    gemm_job *j = arg;
    const int np = (j->n + NR - 1) / NR, units = j->mblocks * np;
    const int u0 = (int)((long)units * t / nt), u1 = (int)((long)units * (t + 1) / nt);
    float lo, hi, sum_lo, sum_hi;
    ac_cnn_act_bounds(j->act, &lo, &hi);
    ac_cnn_act_bounds(j->sum_act, &sum_lo, &sum_hi);
    const epilogue e = {SET1(lo), SET1(hi), SET1(sum_lo), SET1(sum_hi), j->act == CNN_ACT_SILU};
    for (int u = u0; u < u1; u++) {
        const int mb = u / np, pb = u % np;
        const int r0 = mb * j->mc, r1 = r0 + j->mc < j->m ? r0 + j->mc : j->m;
        const float *panel = j->packed + (size_t)pb * j->k * NR;
        const int nr = j->n - pb * NR < NR ? j->n - pb * NR : NR;
        const float *bias = j->bias ? j->bias + pb * NR : NULL;
        if (nr <= NR / 2) {
            for (int r = r0; r < r1; r += MR_NARROW) {
                int mr = r1 - r < MR_NARROW ? r1 - r : MR_NARROW;
                const size_t at = (size_t)r * j->n + pb * NR;
                tile_narrow(j->k, j->a + (size_t)r * j->k, j->k, panel, bias, nr, &e, j->c + at, j->add ? j->add + at : NULL, j->n, mr);
            }
            continue;
        }
        for (int r = r0; r < r1; r += MR) {
            int mr = r1 - r < MR ? r1 - r : MR;
            const size_t at = (size_t)r * j->n + pb * NR;
            tile_wide(j->k, j->a + (size_t)r * j->k, j->k, panel, bias, nr, &e, j->c + at, j->add ? j->add + at : NULL, j->n, mr);
        }
    }
}

static void gemm_f32(int m, int n, int k, const float *a, const ac_cnn_weights *wt, const float *bias, int act, float *c,
                     const ac_cnn_sum *sum, ac_pool *pool) {
    gemm_job j = {m, n, k, a, wt->packed, bias, c, sum ? sum->add : NULL, act, sum ? sum->act : 0, 1, m};
    if ((double)m * n * k < 2e5) pool = NULL;
    /* Row blocks of even size, a multiple of the tile's rows (196 rows: 56, 56, 56, 28 rather than
     * 64, 64, 64, 4), and enough of them for four units per chunk when there are few panels (7 x 7
     * rows, 5 panels: 7 blocks of 8 rows, not one block that leaves 3 of 8 chunks empty). */
    const int np = (n + NR - 1) / NR, want = (4 * ac_pool_chunks(pool) + np - 1) / np, most = (m + MR - 1) / MR;
    j.mblocks = (m + MC - 1) / MC;
    if (j.mblocks < want) j.mblocks = want < most ? want : most;
    j.mc = ((m + j.mblocks - 1) / j.mblocks + MR - 1) / MR * MR;
    j.mblocks = (m + j.mc - 1) / j.mc;
    ac_pool_run(pool, gemm_part, &j);
}
#else
/* Without AVX-512 or AVX2 the products go to OpenBLAS, single-threaded, in chunks of BLAS_ROWS rows spread
 * over our pool: the chunks (and so every call's shape and summation order) are the same for any
 * thread count, which OpenBLAS's own threading does not promise. */
#define BLAS_ROWS 64
typedef struct blas_job {
    int m, n, k;
    const float *a, *w;
    float *c;
    const float *bias;
    int act;
    const ac_cnn_sum *sum;
} blas_job;

static inline float clamp(float x, float lo, float hi) { return x < lo ? lo : x > hi ? hi : x; }

/* rows [r0, r0 + r) of c: the bias and activation, then the residual sum and its activation, the same
 * operations in the same order as the conv's and the ADD's own passes (here, so that the product
 * needs nothing from the other kernels). */
static void blas_epilogue(const blas_job *j, int r0, int r) {
    float lo, hi, sum_lo, sum_hi;
    ac_cnn_act_bounds(j->act, &lo, &hi);
    ac_cnn_act_bounds(j->sum ? j->sum->act : CNN_ACT_NONE, &sum_lo, &sum_hi);
    for (size_t row = (size_t)r0; row < (size_t)(r0 + r); row++) /* rows, then columns: no division per element */
        for (size_t col = 0, i = row * j->n; col < (size_t)j->n; col++, i++) {
            float x = clamp(j->bias ? j->c[i] + j->bias[col] : j->c[i], lo, hi);
            if (j->act == CNN_ACT_SILU) x = ac_cnn_silu1(x);
            j->c[i] = j->sum ? clamp(x + j->sum->add[i], sum_lo, sum_hi) : x;
        }
}

static void blas_part(void *arg, int t, int T) {
    const blas_job *j = arg;
    const int chunks = (j->m + BLAS_ROWS - 1) / BLAS_ROWS;
    for (int q = t; q < chunks; q += T) {
        const int r0 = q * BLAS_ROWS, r = j->m - r0 < BLAS_ROWS ? j->m - r0 : BLAS_ROWS;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r, j->n, j->k, 1.0f, j->a + (size_t)r0 * j->k, j->k, j->w,
                    j->k, 0.0f, j->c + (size_t)r0 * j->n, j->n);
        blas_epilogue(j, r0, r);
    }
}

static void gemm_f32(int m, int n, int k, const float *a, const ac_cnn_weights *wt, const float *bias, int act, float *c,
                     const ac_cnn_sum *sum, ac_pool *pool) {
    blas_job j = {m, n, k, a, wt->w, c, bias, act, sum};
    ac_pool_run(pool, blas_part, &j);
}
#endif

void ac_cnn_gemm(int m, int n, int k, const float *a, const ac_cnn_weights *wt, const float *bias, int act, float *c,
                 const ac_cnn_sum *sum, ac_pool *pool) {
    if (wt->bf16 && act == CNN_ACT_SILU && !sum) { /* the AMX kernels clamp only: SiLU as a pass of its own */
        ac_cnn_gemm_bf16(m, n, k, a, wt->bf16, wt->bf16_scale, bias, CNN_ACT_NONE, c, NULL, pool);
        ac_cnn_silu_inplace(c, (size_t)m * n);
    } else if (wt->bf16) ac_cnn_gemm_bf16(m, n, k, a, wt->bf16, wt->bf16_scale, bias, act, c, sum, pool);
    else gemm_f32(m, n, k, a, wt, bias, act, c, sum, pool);
}
