/* cnn_gemm.c: the matrix product behind pointwise (1x1) and im2col convolutions, with bias and the
 * fused activation applied on the way out.
 *
 * Why not just sgemm: in MobileNets the products are tall and thin (M = pixels, up to 50k; K and N
 * between 16 and 1280), where a general sgemm spends much of its time packing A and synchronising
 * threads. Here the weights are packed once, when the plan is made, into panels of 32 output
 * channels ([K][32] each), and activations are used in place: NHWC rows are already the rows of A.
 * An 8 x 32 register tile (16 AVX-512 accumulators) takes, per k, two loads of weights and eight
 * broadcast activations for sixteen FMAs. Threads split the work by blocks of output rows (or of
 * panels when there are few rows), and each output element is computed the same way whatever the
 * split, so the result does not depend on the thread count. Without AVX-512 this falls back to
 * OpenBLAS sgemm on the unpacked weights. */
#include <cblas.h>
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "cnn_internal.h"

#define NR 32
#define MR 8

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

static void act_bounds(int act, float *lo, float *hi) {
    *lo = -FLT_MAX, *hi = FLT_MAX;
    if (act == CNN_ACT_RELU) *lo = 0.0f;
    else if (act == CNN_ACT_RELU6) *lo = 0.0f, *hi = 6.0f;
    else if (act == CNN_ACT_RELU_N1_TO_1) *lo = -1.0f, *hi = 1.0f;
}


/* c[0..mr)[0..nr) = clamp(a[0..mr)[:] . panel + bias). Rows past mr repeat the last one (their results
 * are not stored), so a short tail needs no copy. */
static inline void tile_8x32(int k, const float *a, int lda, const float *panel, const float *bias, int nr,
                             __m512 vlo, __m512 vhi, float *c, int ldc, int mr) {
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
#define STORE_ROW(r, v0, v1)                                                                                 \
    if (r < mr) {                                                                                            \
        _mm512_mask_storeu_ps(c + (size_t)r * ldc, m0, _mm512_min_ps(_mm512_max_ps(v0, vlo), vhi));         \
        if (m1) _mm512_mask_storeu_ps(c + (size_t)r * ldc + 16, m1, _mm512_min_ps(_mm512_max_ps(v1, vlo), vhi)); \
    }
    STORE_ROW(0, c00, c01) STORE_ROW(1, c10, c11) STORE_ROW(2, c20, c21) STORE_ROW(3, c30, c31)
    STORE_ROW(4, c40, c41) STORE_ROW(5, c50, c51) STORE_ROW(6, c60, c61) STORE_ROW(7, c70, c71)
#undef STORE_ROW
}

/* The same for panels of at most 16 columns: 16 rows x 16 columns, so no FMA is spent on padding. */
static inline void tile_16x16(int k, const float *a, int lda, const float *panel, const float *bias, int nr,
                              __m512 vlo, __m512 vhi, float *c, int ldc, int mr) {
    __mmask16 m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1);
    __m512 b0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
    __m512 acc[16];
    const float *row[16];
#pragma GCC unroll 16
    for (int r = 0; r < 16; r++) acc[r] = b0, row[r] = a + (size_t)(r < mr ? r : mr - 1) * lda;
    for (int p = 0; p < k; p++) {
        __m512 w0 = _mm512_loadu_ps(panel + (size_t)p * NR);
#pragma GCC unroll 16
        for (int r = 0; r < 16; r++) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(row[r][p]), w0, acc[r]);
    }
    for (int r = 0; r < mr; r++) _mm512_mask_storeu_ps(c + (size_t)r * ldc, m0, _mm512_min_ps(_mm512_max_ps(acc[r], vlo), vhi));
}

typedef struct gemm_job {
    int m, n, k;
    const float *a, *packed, *bias;
    float *c;
    float lo, hi;
    int split_rows; /* 1: threads take row blocks; 0: threads take panels */
} gemm_job;

#define MC 64 /* rows per cache block: 64 x K activations stay in L2 while the panels stream by */

static void gemm_part(void *arg, int t, int nt) {
    gemm_job *j = arg;
    int mblocks = (j->m + MC - 1) / MC, np = (j->n + NR - 1) / NR;
    int mb0 = 0, mb1 = mblocks, pb0 = 0, pb1 = np;
    if (j->split_rows) mb0 = mblocks * t / nt, mb1 = mblocks * (t + 1) / nt;
    else pb0 = np * t / nt, pb1 = np * (t + 1) / nt;
    __m512 vlo = _mm512_set1_ps(j->lo), vhi = _mm512_set1_ps(j->hi);
    for (int mb = mb0; mb < mb1; mb++) {
        int r0 = mb * MC, r1 = r0 + MC < j->m ? r0 + MC : j->m;
        for (int pb = pb0; pb < pb1; pb++) {
            const float *panel = j->packed + (size_t)pb * j->k * NR;
            int nr = j->n - pb * NR < NR ? j->n - pb * NR : NR;
            const float *bias = j->bias ? j->bias + pb * NR : NULL;
            if (nr <= 16) {
                for (int r = r0; r < r1; r += 16) {
                    int mr = r1 - r < 16 ? r1 - r : 16;
                    tile_16x16(j->k, j->a + (size_t)r * j->k, j->k, panel, bias, nr, vlo, vhi, j->c + (size_t)r * j->n + pb * NR, j->n, mr);
                }
                continue;
            }
            for (int r = r0; r < r1; r += MR) {
                int mr = r1 - r < MR ? r1 - r : MR;
                tile_8x32(j->k, j->a + (size_t)r * j->k, j->k, panel, bias, nr, vlo, vhi, j->c + (size_t)r * j->n + pb * NR, j->n, mr);
            }
        }
    }
}

void ac_cnn_gemm(int m, int n, int k, const float *a, const float *w, const float *packed, const float *bias, int act,
                 float *c, ac_pool *pool) {
    (void)w;
    gemm_job j = {m, n, k, a, packed, bias, c, 0, 0, 1};
    act_bounds(act, &j.lo, &j.hi);
    int mblocks = (m + MC - 1) / MC, np = (n + NR - 1) / NR;
    j.split_rows = mblocks >= 16 || mblocks >= np; /* chunks over the dimension with more blocks */
    if ((double)m * n * k < 2e5) pool = NULL;
    ac_pool_run(pool, gemm_part, &j);
}
#else
/* Without AVX-512 the products go to OpenBLAS, single-threaded, in chunks of BLAS_ROWS rows spread
 * over our pool: the chunks (and so every call's shape and summation order) are the same for any
 * thread count, which OpenBLAS's own threading does not promise. */
#define BLAS_ROWS 64
typedef struct blas_job {
    int m, n, k;
    const float *a, *w;
    float *c;
} blas_job;

static void blas_part(void *arg, int t, int T) {
    const blas_job *j = arg;
    const int chunks = (j->m + BLAS_ROWS - 1) / BLAS_ROWS;
    for (int q = t; q < chunks; q += T) {
        const int r0 = q * BLAS_ROWS, r = j->m - r0 < BLAS_ROWS ? j->m - r0 : BLAS_ROWS;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r, j->n, j->k, 1.0f, j->a + (size_t)r0 * j->k, j->k, j->w,
                    j->k, 0.0f, j->c + (size_t)r0 * j->n, j->n);
    }
}

void ac_cnn_gemm(int m, int n, int k, const float *a, const float *w, const float *packed, const float *bias, int act,
                 float *c, ac_pool *pool) {
    (void)packed;
    blas_job j = {m, n, k, a, w, c};
    ac_pool_run(pool, blas_part, &j);
    ac_cnn_bias_act(c, (size_t)m, n, bias, act, pool);
}
#endif
