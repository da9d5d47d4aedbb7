/* cnn_kernels.c: float32 NHWC kernels (batch 1), run over the thread pool (pool.c).
 *
 * Convolutions are matrix products (cnn_gemm.c): a 1x1 stride-1 conv is one product on the
 * activations as they lie (NHWC rows are pixels), a k x k conv is im2col + product. Depthwise
 * convolutions are memory-bound and sgemm cannot help, so they get a vectorised direct kernel: NHWC
 * keeps a pixel's channels contiguous, so each tap is a fused multiply-add over channel vectors,
 * with the accumulators kept in registers across the taps. Work is split across threads by output
 * rows; each output element is computed the same way whatever the split, so results do not depend
 * on the thread count. */
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cnn_internal.h"
#include "cnn_silu.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#define VL 16
typedef __m512 vf;
#define V_LOAD(p) _mm512_loadu_ps(p)
#define V_STORE(p, v) _mm512_storeu_ps(p, v)
#define V_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define V_SET1(x) _mm512_set1_ps(x)
#define V_MAX(a, b) _mm512_max_ps(a, b)
#define V_MIN(a, b) _mm512_min_ps(a, b)
#define V_ADD(a, b) _mm512_add_ps(a, b)
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define VL 8
typedef __m256 vf;
#define V_LOAD(p) _mm256_loadu_ps(p)
#define V_STORE(p, v) _mm256_storeu_ps(p, v)
#define V_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define V_SET1(x) _mm256_set1_ps(x)
#define V_MAX(a, b) _mm256_max_ps(a, b)
#define V_MIN(a, b) _mm256_min_ps(a, b)
#define V_ADD(a, b) _mm256_add_ps(a, b)
#else
#define VL 1
typedef float vf;
#define V_LOAD(p) (*(p))
#define V_STORE(p, v) (*(p) = (v))
#define V_FMA(a, b, c) fmaf(a, b, c)
#define V_SET1(x) (x)
#define V_MAX(a, b) fmaxf(a, b)
#define V_MIN(a, b) fminf(a, b)
#define V_ADD(a, b) ((a) + (b))
#endif

/* ---- geometry ---- */

int ac_cnn_out_size(int in, int k, int stride, int dil, int valid, int *pad_before) {
    long eff = (long)(k - 1) * dil + 1;
    *pad_before = 0;
    if (valid) return in >= eff ? (int)((in - eff) / stride + 1) : 0;
    long out = ((long)in + stride - 1) / stride;
    long need = (out - 1) * stride + eff - in;
    if (need > 0) *pad_before = (int)(need / 2);
    return (int)out;
}

static inline float clampf(float x, float lo, float hi) { return x < lo ? lo : x > hi ? hi : x; }

/* First and one-past-last tap index k with 0 <= base + k * dil < size. */
static inline void tap_range(int base, int dil, int k, int size, int *lo, int *hi) {
    int a = base >= 0 ? 0 : (-base + dil - 1) / dil;
    int b = size - base <= 0 ? 0 : (size - base + dil - 1) / dil;
    *lo = a;
    *hi = b < k ? b : k;
    if (*hi < *lo) *hi = *lo;
}

/* ---- bias + activation ---- */

typedef struct bias_job {
    float *x;
    size_t rows;
    int n;
    const float *bias;
    float lo, hi;
} bias_job;

static void bias_rows(void *arg, int t, int nt) {
    bias_job *j = arg;
    size_t r0 = j->rows * (size_t)t / (size_t)nt, r1 = j->rows * (size_t)(t + 1) / (size_t)nt;
    vf vlo = V_SET1(j->lo), vhi = V_SET1(j->hi);
    for (size_t r = r0; r < r1; r++) {
        float *x = j->x + r * (size_t)j->n;
        int c = 0;
        if (j->bias) {
            for (; c + VL <= j->n; c += VL) V_STORE(x + c, V_MIN(V_MAX(V_ADD(V_LOAD(x + c), V_LOAD(j->bias + c)), vlo), vhi));
            for (; c < j->n; c++) x[c] = clampf(x[c] + j->bias[c], j->lo, j->hi);
        } else {
            for (; c + VL <= j->n; c += VL) V_STORE(x + c, V_MIN(V_MAX(V_LOAD(x + c), vlo), vhi));
            for (; c < j->n; c++) x[c] = clampf(x[c], j->lo, j->hi);
        }
    }
}

void ac_cnn_bias_act(float *x, size_t rows, int n, const float *bias, int act, ac_pool *pool) {
    bias_job j = {x, rows, n, bias, 0, 0};
    ac_cnn_act_bounds(act, &j.lo, &j.hi);
    if (!bias && act == CNN_ACT_NONE) return;
    if (rows * (size_t)n < 16384) pool = NULL; /* not worth waking a thread */
    ac_pool_run(pool, bias_rows, &j);
}

/* ---- convolution ---- */

static int conv_is_pointwise(const ac_conv_geom *g) {
    return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 && g->pl == 0 && g->oh == g->h &&
           g->ow == g->w;
}

size_t ac_cnn_conv2d_scratch(const ac_conv_geom *g) {
    return conv_is_pointwise(g) ? 0 : (size_t)g->oh * g->ow * g->kh * g->kw * g->c;
}

typedef struct im2col_job {
    const ac_conv_geom *g;
    const float *in;
    float *col;
} im2col_job;

/* col[(oy-oy0)*ow+ox][(ky*kw+kx)*c + ci] for output rows [oy0, oy1): the patch in the weight layout
 * [kh][kw][c], zeros for padding. */
static void im2col_range(const ac_conv_geom *g, const float *in, float *col, int oy0, int oy1) {
    size_t K = (size_t)g->kh * g->kw * g->c, cb = (size_t)g->c * sizeof(float);
    for (int oy = oy0; oy < oy1; oy++)
        for (int ox = 0; ox < g->ow; ox++) {
            float *dst = col + ((size_t)(oy - oy0) * g->ow + ox) * K;
            int ix0 = ox * g->sw - g->pl, whole = g->dw == 1 && ix0 >= 0 && ix0 + g->kw <= g->w;
            for (int ky = 0; ky < g->kh; ky++) {
                int iy = oy * g->sh - g->pt + ky * g->dh;
                if (whole && iy >= 0 && iy < g->h) { /* the row of the window is contiguous */
                    memcpy(dst, in + ((size_t)iy * g->w + ix0) * g->c, cb * (size_t)g->kw);
                    dst += (size_t)g->kw * g->c;
                    continue;
                }
                for (int kx = 0; kx < g->kw; kx++, dst += g->c) {
                    int ix = ox * g->sw - g->pl + kx * g->dw;
                    if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w) memset(dst, 0, cb);
                    else memcpy(dst, in + ((size_t)iy * g->w + ix) * g->c, cb);
                }
            }
        }
}

static void im2col_rows(void *arg, int t, int nt) {
    im2col_job *j = arg;
    const ac_conv_geom *g = j->g;
    int oy0 = g->oh * t / nt, oy1 = g->oh * (t + 1) / nt;
    im2col_range(g, j->in, j->col + (size_t)oy0 * g->ow * g->kh * g->kw * g->c, oy0, oy1);
}

/* An im2col conv band by band: each chunk of output rows takes bands of `rows` output rows in turn, lays
 * out a band's patches in its own part of the scratch (small enough to stay in L2) and multiplies them
 * there, instead of the whole patch matrix written to memory and read back (YOLOX's first conv: 208 x
 * 208 patches of 108 floats, 18 MB). The product of each row is the same chain of FMAs however the
 * rows are blocked (ac_cnn_gemm), so the results are the same bits as the whole matrix's. */
typedef struct conv_band_job {
    const ac_conv_geom *g;
    const float *in, *bias;
    const ac_cnn_weights *wt;
    float *out, *scratch;
    const ac_cnn_sum *sum;
    int rows;
} conv_band_job;

static void conv_bands(void *arg, int t, int nt) {
    const conv_band_job *j = arg;
    const ac_conv_geom *g = j->g;
    const size_t K = (size_t)g->kh * g->kw * g->c;
    float *col = j->scratch + (size_t)t * j->rows * g->ow * K;
    for (int oy = g->oh * t / nt, end = g->oh * (t + 1) / nt; oy < end; oy += j->rows) {
        const int n = end - oy < j->rows ? end - oy : j->rows;
        const size_t at = (size_t)oy * g->ow * g->oc;
        const ac_cnn_sum band_sum = {j->sum ? j->sum->add + at : NULL, j->sum ? j->sum->act : 0};
        im2col_range(g, j->in, col, oy, oy + n);
        ac_cnn_gemm(n * g->ow, g->oc, (int)K, col, j->wt, j->bias, g->act, j->out + at, j->sum ? &band_sum : NULL, NULL);
    }
}

void ac_cnn_conv2d(const ac_conv_geom *g, const float *in, const ac_cnn_weights *wt, const float *bias, float *out,
                   const ac_cnn_sum *sum, float *scratch, ac_pool *pool) {
    int M = g->oh * g->ow, K = g->kh * g->kw * g->c;
    const float *A = in;
    const int chunks = ac_pool_chunks(pool), rows = (1 << 15) / (g->ow * K) > 1 ? (1 << 15) / (g->ow * K) : 1;
    if (!conv_is_pointwise(g) && (size_t)M * K > (1u << 19) && (size_t)chunks * rows <= (size_t)g->oh) {
        conv_band_job j = {g, in, bias, wt, out, scratch, sum, rows};
        ac_pool_run(pool, conv_bands, &j);
        return;
    }
    if (!conv_is_pointwise(g)) {
        im2col_job j = {g, in, scratch};
        ac_pool_run((size_t)M * K < 16384 ? NULL : pool, im2col_rows, &j);
        A = scratch;
    }
    ac_cnn_gemm(M, g->oc, K, A, wt, bias, g->act, out, sum, pool);
}

/* ---- depthwise ---- */

typedef struct dw_job {
    const ac_conv_geom *g;
    const float *in, *wt, *bias;
    float *out;
    int row0;  /* in holds input rows from row0 on (a band of them when fused with the conv before) */
    int orow0; /* out holds output rows from orow0 on (a band when fused with the conv after) */
} dw_job;

/* One output pixel, all channels: any kernel, stride, dilation, multiplier; window clipped to the image. */
static void dw_pixel(const dw_job *j, int oy, int ox, float lo, float hi) {
    const ac_conv_geom *g = j->g;
    const int C = g->oc, mult = g->oc / g->c;
    const float *in = j->in, *wt = j->wt, *bias = j->bias;
    vf vlo = V_SET1(lo), vhi = V_SET1(hi), vzero = V_SET1(0.0f);
    int iy0 = oy * g->sh - g->pt, ky0, ky1, ix0 = ox * g->sw - g->pl, kx0, kx1;
    tap_range(iy0, g->dh, g->kh, g->h, &ky0, &ky1);
    tap_range(ix0, g->dw, g->kw, g->w, &kx0, &kx1);
    float *o = j->out + ((size_t)(oy - j->orow0) * g->ow + ox) * C;
    if (mult != 1) { /* rare (depth multiplier > 1): plain loops */
        for (int oc = 0; oc < C; oc++) {
            float acc = bias ? bias[oc] : 0.0f;
            for (int ky = ky0; ky < ky1; ky++)
                for (int kx = kx0; kx < kx1; kx++) {
                    size_t ip = ((size_t)(iy0 + ky * g->dh - j->row0) * g->w + (ix0 + kx * g->dw)) * g->c;
                    acc += in[ip + oc / mult] * wt[(size_t)(ky * g->kw + kx) * C + oc];
                }
            o[oc] = clampf(acc, lo, hi);
        }
        return;
    }
    int c = 0;
    for (; c + 4 * VL <= C; c += 4 * VL) {
        vf a0, a1, a2, a3;
        if (bias) a0 = V_LOAD(bias + c), a1 = V_LOAD(bias + c + VL), a2 = V_LOAD(bias + c + 2 * VL), a3 = V_LOAD(bias + c + 3 * VL);
        else a0 = a1 = a2 = a3 = vzero;
        for (int ky = ky0; ky < ky1; ky++) {
            const float *irow = in + (size_t)(iy0 + ky * g->dh - j->row0) * g->w * C + c;
            const float *wrow = wt + (size_t)ky * g->kw * C + c;
            for (int kx = kx0; kx < kx1; kx++) {
                const float *ip = irow + (size_t)(ix0 + kx * g->dw) * C, *wp = wrow + (size_t)kx * C;
                a0 = V_FMA(V_LOAD(ip), V_LOAD(wp), a0);
                a1 = V_FMA(V_LOAD(ip + VL), V_LOAD(wp + VL), a1);
                a2 = V_FMA(V_LOAD(ip + 2 * VL), V_LOAD(wp + 2 * VL), a2);
                a3 = V_FMA(V_LOAD(ip + 3 * VL), V_LOAD(wp + 3 * VL), a3);
            }
        }
        V_STORE(o + c, V_MIN(V_MAX(a0, vlo), vhi));
        V_STORE(o + c + VL, V_MIN(V_MAX(a1, vlo), vhi));
        V_STORE(o + c + 2 * VL, V_MIN(V_MAX(a2, vlo), vhi));
        V_STORE(o + c + 3 * VL, V_MIN(V_MAX(a3, vlo), vhi));
    }
    for (; c + VL <= C; c += VL) {
        vf a0 = bias ? V_LOAD(bias + c) : vzero;
        for (int ky = ky0; ky < ky1; ky++)
            for (int kx = kx0; kx < kx1; kx++) {
                const float *ip = in + ((size_t)(iy0 + ky * g->dh - j->row0) * g->w + (ix0 + kx * g->dw)) * C + c;
                a0 = V_FMA(V_LOAD(ip), V_LOAD(wt + (size_t)(ky * g->kw + kx) * C + c), a0);
            }
        V_STORE(o + c, V_MIN(V_MAX(a0, vlo), vhi));
    }
    for (; c < C; c++) {
        float acc = bias ? bias[c] : 0.0f;
        for (int ky = ky0; ky < ky1; ky++)
            for (int kx = kx0; kx < kx1; kx++)
                acc = fmaf(in[((size_t)(iy0 + ky * g->dh - j->row0) * g->w + (ix0 + kx * g->dw)) * C + c],
                           wt[(size_t)(ky * g->kw + kx) * C + c], acc);
        o[c] = clampf(acc, lo, hi);
    }
}

/* 3x3, multiplier 1, channels a multiple of the vector width, no dilation (MobileNet's case): for the
 * pixels whose window lies inside the image horizontally, sweep the row with the block's nine weight
 * vectors held in registers and four output pixels in flight. Taps are summed in the same order as
 * dw_pixel (ky, then kx), so both paths give the same bits. */
static void dw3x3_row(const dw_job *j, int oy, int ox_a, int ox_b, vf vlo, vf vhi) {
    const ac_conv_geom *g = j->g;
    const int C = g->oc, W = g->w, sw = g->sw;
    int iy0 = oy * g->sh - g->pt, ky0, ky1;
    tap_range(iy0, 1, 3, g->h, &ky0, &ky1);
    for (int c = 0; c < C; c += VL) {
        vf w00, w01, w02, w10, w11, w12, w20, w21, w22, b = j->bias ? V_LOAD(j->bias + c) : V_SET1(0.0f);
        const float *wt = j->wt + c;
        w00 = V_LOAD(wt), w01 = V_LOAD(wt + C), w02 = V_LOAD(wt + 2 * C);
        w10 = V_LOAD(wt + 3 * C), w11 = V_LOAD(wt + 4 * C), w12 = V_LOAD(wt + 5 * C);
        w20 = V_LOAD(wt + 6 * C), w21 = V_LOAD(wt + 7 * C), w22 = V_LOAD(wt + 8 * C);
        /* rows outside the image are never read (and their addresses never formed) */
        const float *r0 = ky0 == 0 ? j->in + (size_t)(iy0 - j->row0) * W * C + c : NULL;
        const float *r1 = j->in + (size_t)(iy0 + 1 - j->row0) * W * C + c;
        const float *r2 = ky1 == 3 ? j->in + (size_t)(iy0 + 2 - j->row0) * W * C + c : NULL;
        float *o = j->out + ((size_t)(oy - j->orow0) * g->ow) * C + c;
#define TAPS(acc, ix)                                                                              \
    do {                                                                                           \
        size_t q = (size_t)(ix) * C;                                                               \
        if (ky0 == 0) acc = V_FMA(V_LOAD(r0 + q), w00, acc), acc = V_FMA(V_LOAD(r0 + q + C), w01, acc), \
                      acc = V_FMA(V_LOAD(r0 + q + 2 * C), w02, acc);                                 \
        acc = V_FMA(V_LOAD(r1 + q), w10, acc), acc = V_FMA(V_LOAD(r1 + q + C), w11, acc);            \
        acc = V_FMA(V_LOAD(r1 + q + 2 * C), w12, acc);                                             \
        if (ky1 == 3) acc = V_FMA(V_LOAD(r2 + q), w20, acc), acc = V_FMA(V_LOAD(r2 + q + C), w21, acc), \
                      acc = V_FMA(V_LOAD(r2 + q + 2 * C), w22, acc);                                 \
    } while (0)
        int ox = ox_a;
        for (; ox + 4 <= ox_b; ox += 4) {
            vf a0 = b, a1 = b, a2 = b, a3 = b;
            int ix = ox * sw - g->pl;
            TAPS(a0, ix);
            TAPS(a1, ix + sw);
            TAPS(a2, ix + 2 * sw);
            TAPS(a3, ix + 3 * sw);
            V_STORE(o + (size_t)ox * C, V_MIN(V_MAX(a0, vlo), vhi));
            V_STORE(o + (size_t)(ox + 1) * C, V_MIN(V_MAX(a1, vlo), vhi));
            V_STORE(o + (size_t)(ox + 2) * C, V_MIN(V_MAX(a2, vlo), vhi));
            V_STORE(o + (size_t)(ox + 3) * C, V_MIN(V_MAX(a3, vlo), vhi));
        }
        for (; ox < ox_b; ox++) {
            vf a0 = b;
            TAPS(a0, ox * sw - g->pl);
            V_STORE(o + (size_t)ox * C, V_MIN(V_MAX(a0, vlo), vhi));
        }
#undef TAPS
    }
}

/* Output rows [oy0, oy1). */
static void dw_range(const dw_job *j, int oy0, int oy1) {
    const ac_conv_geom *g = j->g;
    float lo, hi;
    ac_cnn_act_bounds(g->act, &lo, &hi);
    int fast = VL > 1 && g->kh == 3 && g->kw == 3 && g->dh == 1 && g->dw == 1 && g->oc == g->c && g->c % VL == 0;
    /* output columns whose 3-wide window is inside the image: ox*sw - pl >= 0 and ox*sw - pl + 2 < w */
    int ox_a = fast ? (g->pl + g->sw - 1) / g->sw : g->ow, ox_b = fast ? (g->w - 3 + g->pl) / g->sw + 1 : g->ow;
    if (g->w - 3 + g->pl < 0) ox_b = 0;
    if (ox_a > g->ow) ox_a = g->ow;
    if (ox_b > g->ow) ox_b = g->ow;
    if (ox_b < ox_a) ox_b = ox_a;
    for (int oy = oy0; oy < oy1; oy++) {
        int ky0, ky1, a = ox_a, b = ox_b;
        tap_range(oy * g->sh - g->pt, 1, 3, g->h, &ky0, &ky1);
        if (ky0 > 1 || ky1 < 2) a = b = g->ow; /* the middle row is outside: the general path */
        for (int ox = 0; ox < a; ox++) dw_pixel(j, oy, ox, lo, hi);
        if (b > a) dw3x3_row(j, oy, a, b, V_SET1(lo), V_SET1(hi));
        for (int ox = b; ox < g->ow; ox++) dw_pixel(j, oy, ox, lo, hi);
        if (g->act == CNN_ACT_SILU) ac_cnn_silu_inplace(j->out + (size_t)(oy - j->orow0) * g->ow * g->oc, (size_t)g->ow * g->oc);
    }
}

static void dw_rows(void *arg, int t, int nt) {
    const dw_job *j = arg;
    dw_range(j, j->g->oh * t / nt, j->g->oh * (t + 1) / nt);
}

void ac_cnn_depthwise(const ac_conv_geom *g, const float *in, const float *wt, const float *bias, float *out, ac_pool *pool) {
    dw_job j = {g, in, wt, bias, out, 0, 0};
    if ((size_t)g->oh * g->ow * g->oc < 8192) pool = NULL;
    ac_pool_run(pool, dw_rows, &j);
}

/* ---- conv + depthwise, fused ----
 * In MobileNets a 1x1 conv expands the channels six-fold and a depthwise conv reads the result once
 * (and the first 3x3 conv's output, after an im2col as large, too).
 * At 448x448 the expanded tensor is up to 19 MB: written to memory by the product and read back by
 * the depthwise conv, both run at memory speed. Fused, each chunk of output rows goes band by band:
 * the product computes just the expanded rows the band's windows need (rows shared with the previous
 * band are kept, not recomputed) into a buffer that stays in L2, and the depthwise conv reads them
 * there. Each element is computed by the very kernels and in the same order as unfused, so the
 * results are the same bits. Chunks recompute the kh - sh rows they share with their neighbour. */

enum { PWDW_BUF_FLOATS = 1 << 17 }; /* 512 KB of expanded rows per band */

int ac_cnn_conv_is_pointwise(const ac_conv_geom *g) { return conv_is_pointwise(g); }

static int pwdw_band(const ac_conv_geom *dw) {
    int rows = PWDW_BUF_FLOATS / (dw->w * dw->c), band = rows < dw->kh ? 1 : (rows - dw->kh) / dw->sh + 1;
    return band < 1 ? 1 : band > dw->oh ? dw->oh : band;
}

/* Per chunk: the band's expanded rows, then (for a conv other than 1x1) their im2col, then (with a
 * projection after) the band's depthwise output. */
size_t ac_cnn_pw_dw_scratch(const ac_conv_geom *pw, const ac_conv_geom *dw, const ac_conv_geom *pj) {
    size_t rows = (size_t)((pwdw_band(dw) - 1) * dw->sh + dw->kh);
    return rows * dw->w * dw->c + (conv_is_pointwise(pw) ? 0 : rows * pw->ow * pw->kh * pw->kw * pw->c) +
           (pj ? (size_t)pwdw_band(dw) * dw->ow * dw->oc : 0);
}

typedef struct pwdw_job {
    const ac_conv_geom *pw, *dw, *pj;
    const float *in;
    const ac_cnn_weights *pw_wt, *pj_wt;
    const float *pw_bias, *dw_wt, *dw_bias, *pj_bias;
    float *out, *scratch;
    const ac_cnn_sum *sum;
    size_t per_chunk;
    int band;
} pwdw_job;

static void pwdw_rows(void *arg, int t, int nt) {
    const pwdw_job *j = arg;
    const ac_conv_geom *d = j->dw, *p = j->pw;
    const size_t row = (size_t)d->w * d->c; /* floats per expanded row */
    float *buf = j->scratch + (size_t)t * j->per_chunk;
    float *col = buf + (size_t)((j->band - 1) * d->sh + d->kh) * row; /* im2col rows, unless 1x1 */
    const int K = p->kh * p->kw * p->c, pointwise = conv_is_pointwise(p);
    float *dwo = col + (pointwise ? 0 : (size_t)((j->band - 1) * d->sh + d->kh) * p->ow * K); /* with pj */
    dw_job dj = {d, buf, j->dw_wt, j->dw_bias, j->pj ? dwo : j->out, 0, 0};
    int oy1 = d->oh * (t + 1) / nt, have_lo = 0, have_hi = 0; /* expanded rows in buf: [have_lo, have_hi) */
    for (int b0 = d->oh * t / nt; b0 < oy1; b0 += j->band) {
        int b1 = b0 + j->band < oy1 ? b0 + j->band : oy1;
        int lo = b0 * d->sh - d->pt, hi = (b1 - 1) * d->sh - d->pt + d->kh;
        if (lo < 0) lo = 0;
        if (hi > d->h) hi = d->h;
        if (hi < lo) hi = lo;
        int from = lo;
        if (have_hi > lo && lo >= have_lo) { /* keep the rows this band shares with the last one */
            memmove(buf, buf + (size_t)(lo - have_lo) * row, (size_t)(have_hi - lo) * row * sizeof(float));
            from = have_hi;
        }
        if (hi > from) {
            const float *a = j->in + (size_t)from * p->w * p->c;
            if (!pointwise) im2col_range(p, j->in, col, from, hi), a = col;
            ac_cnn_gemm((hi - from) * p->ow, p->oc, K, a, j->pw_wt, j->pw_bias, p->act, buf + (size_t)(from - lo) * row,
                     NULL, NULL);
        }
        have_lo = lo, have_hi = hi;
        dj.row0 = lo;
        if (j->pj) dj.orow0 = b0;
        dw_range(&dj, b0, b1);
        if (j->pj) { /* the projection of the band's rows, from L2 */
            const size_t at = (size_t)b0 * d->ow * j->pj->oc;
            const ac_cnn_sum band_sum = {j->sum ? j->sum->add + at : NULL, j->sum ? j->sum->act : 0};
            ac_cnn_gemm((b1 - b0) * d->ow, j->pj->oc, d->oc, dwo, j->pj_wt, j->pj_bias, j->pj->act, j->out + at,
                     j->sum ? &band_sum : NULL, NULL);
        }
    }
}

void ac_cnn_pw_dw(const ac_conv_geom *pw, const float *in, const ac_cnn_weights *pw_wt, const float *pw_bias,
                  const ac_conv_geom *dw, const float *dw_wt, const float *dw_bias, const ac_conv_geom *pj,
                  const ac_cnn_weights *pj_wt, const float *pj_bias, float *out, const ac_cnn_sum *sum, float *scratch,
                  ac_pool *pool, int chunks) {
    pwdw_job j = {pw, dw, pj, in, pw_wt, pj_wt, pw_bias, dw_wt, dw_bias, pj_bias, out, scratch, sum,
                  ac_cnn_pw_dw_scratch(pw, dw, pj), pwdw_band(dw)};
    ac_pool_run_n(pool, pwdw_rows, &j, chunks);
}

/* ---- elementwise ---- */

typedef struct add_job {
    const float *a, *b;
    float *o;
    size_t n;
    int act;
} add_job;

static void add_part(void *arg, int t, int nt) {
    const add_job *j = arg;
    float lo, hi;
    ac_cnn_act_bounds(j->act, &lo, &hi);
    vf vlo = V_SET1(lo), vhi = V_SET1(hi);
    size_t vecs = j->n / VL, i = vecs * (size_t)t / (size_t)nt * VL, end = vecs * (size_t)(t + 1) / (size_t)nt * VL;
    if (t == nt - 1) end = j->n;
    for (; i + VL <= end; i += VL) V_STORE(j->o + i, V_MIN(V_MAX(V_ADD(V_LOAD(j->a + i), V_LOAD(j->b + i)), vlo), vhi));
    for (; i < end; i++) j->o[i] = clampf(j->a[i] + j->b[i], lo, hi);
}

/* Over the pool too: at 448 MobileNetV2's residual sums are up to 1.2 MB, and the other thread
 * would otherwise wait for them. */
void ac_cnn_add(const float *a, const float *b, float *o, size_t n, int act, ac_pool *pool) {
    add_job j = {a, b, o, n, act};
    ac_pool_run(n < 16384 ? NULL : pool, add_part, &j);
}

/* ---- pooling ---- */

/* MAX_POOL_2D one output row at a time in two passes, the maximum down each column of the window's
 * rows (into vrow, w x C floats) and then across the window's columns: kh w + kw ow comparisons per
 * channel instead of kh kw ow (YOLOX's 13 x 13 pools on 13 x 13 maps: 6.5 times fewer). The maximum
 * of the same values, so the same result. */
enum { POOL_VROW_FLOATS = 1 << 12 }; /* 16 KB on the stack */

/* m[i] = x[i] > m[i] ? x[i] : m[i] for i < n (V_MAX is that very selection). */
static inline void max_into(float *restrict m, const float *restrict x, int n) {
    int i = 0;
    for (; i + VL <= n; i += VL) V_STORE(m + i, V_MAX(V_LOAD(x + i), V_LOAD(m + i)));
    for (; i < n; i++) m[i] = x[i] > m[i] ? x[i] : m[i];
}

static void max_pool_rows(const ac_conv_geom *g, const float *in, float *out, float lo, float hi) {
    float vrow[POOL_VROW_FLOATS];
    const int C = g->c;
    for (int oy = 0; oy < g->oh; oy++) {
        int iy0 = oy * g->sh - g->pt, ky0, ky1;
        tap_range(iy0, 1, g->kh, g->h, &ky0, &ky1);
        for (int i = 0; i < g->w * C; i++) vrow[i] = -FLT_MAX;
        for (int ky = ky0; ky < ky1; ky++) max_into(vrow, in + (size_t)(iy0 + ky) * g->w * C, g->w * C);
        for (int ox = 0; ox < g->ow; ox++) {
            int ix0 = ox * g->sw - g->pl, kx0, kx1;
            tap_range(ix0, 1, g->kw, g->w, &kx0, &kx1);
            float *o = out + ((size_t)oy * g->ow + ox) * C;
            for (int c = 0; c < C; c++) o[c] = -FLT_MAX;
            for (int kx = kx0; kx < kx1; kx++) max_into(o, vrow + (size_t)(ix0 + kx) * C, C);
            for (int c = 0; c < C; c++) o[c] = clampf(o[c], lo, hi);
        }
    }
}

void ac_cnn_pool2d(const ac_conv_geom *g, int is_max, const float *in, float *out) {
    float lo, hi;
    ac_cnn_act_bounds(g->act, &lo, &hi);
    const int C = g->c;
    if (is_max && (size_t)g->w * C <= POOL_VROW_FLOATS) {
        max_pool_rows(g, in, out, lo, hi);
        return;
    }
    for (int oy = 0; oy < g->oh; oy++) {
        int iy0 = oy * g->sh - g->pt, ky0, ky1;
        tap_range(iy0, 1, g->kh, g->h, &ky0, &ky1);
        for (int ox = 0; ox < g->ow; ox++) {
            int ix0 = ox * g->sw - g->pl, kx0, kx1;
            tap_range(ix0, 1, g->kw, g->w, &kx0, &kx1);
            float *o = out + ((size_t)oy * g->ow + ox) * C;
            for (int c = 0; c < C; c++) o[c] = is_max ? -FLT_MAX : 0.0f;
            for (int ky = ky0; ky < ky1; ky++)
                for (int kx = kx0; kx < kx1; kx++) {
                    const float *ip = in + ((size_t)(iy0 + ky) * g->w + (ix0 + kx)) * C;
                    if (is_max)
                        for (int c = 0; c < C; c++) o[c] = ip[c] > o[c] ? ip[c] : o[c];
                    else
                        for (int c = 0; c < C; c++) o[c] += ip[c];
                }
            /* TFLite averages over the window's pixels that fall inside the image */
            int count = (ky1 - ky0) * (kx1 - kx0);
            float inv = count > 0 ? 1.0f / (float)count : 0.0f;
            for (int c = 0; c < C; c++) o[c] = clampf(is_max ? o[c] : o[c] * inv, lo, hi);
        }
    }
}

/* ---- dense ---- */

void ac_cnn_fully_connected(int m, int n, int k, const float *in, const float *wt, const float *bias, int act, float *out) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, in, k, wt, k, 0.0f, out, n);
    ac_cnn_bias_act(out, (size_t)m, n, bias, act, NULL);
}

void ac_cnn_softmax(const float *in, float *out, size_t rows, int n, float beta) {
    for (size_t r = 0; r < rows; r++) {
        const float *x = in + r * (size_t)n;
        float *y = out + r * (size_t)n;
        float mx = -FLT_MAX;
        for (int i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
        double sum = 0;
        for (int i = 0; i < n; i++) sum += (y[i] = expf((x[i] - mx) * beta));
        float inv = (float)(1.0 / sum);
        for (int i = 0; i < n; i++) y[i] *= inv;
    }
}
