/* cnn_int8_layout.c: the integer path's data movement (cnn_int8_internal.h): a float input quantized
 * to uint8 as TFLite's QUANTIZE does (roundf, half away from zero), and a convolution's patches laid
 * out as rows of the product (im2col, the padding filled with the input's zero point). */
#include <math.h>
#include <string.h>

#include "cnn_int8_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define I8_X86 1
#endif

/* ---- input quantization ---- */

static int quantize_c(const float *x, size_t n, float scale, int32_t zs, uint8_t *out) {
    for (size_t i = 0; i < n; i++) {
        const float v = x[i] / scale;
        if (!isfinite(v)) return -1;
        const float r = roundf(v);
        const int32_t q = (r > 1e6f ? 1000000 : r < -1e6f ? -1000000 : (int32_t)r) + zs;
        out[i] = (uint8_t)(q < 0 ? 0 : q > 255 ? 255 : q);
    }
    return 0;
}

#if defined(I8_X86)
/* roundf (half away from zero) of x / scale: t = trunc(v), then one more away from zero where
 * |v - t| >= 0.5 (v - t is exact). */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static int quantize_512(const float *x, size_t n, float scale, int32_t zs, uint8_t *out) {
    const __m512 sc = _mm512_set1_ps(scale), half = _mm512_set1_ps(0.5f), inf = _mm512_set1_ps(INFINITY);
    const __m512 big = _mm512_set1_ps(1e6f), one = _mm512_set1_ps(1.0f);
    const __m512i z = _mm512_set1_epi32(zs), lo = _mm512_setzero_si512(), hi = _mm512_set1_epi32(255);
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 km = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
        const __m512 v = _mm512_div_ps(_mm512_maskz_loadu_ps(km, x + i), sc);
        if (_mm512_cmp_ps_mask(_mm512_abs_ps(v), inf, _CMP_LT_OQ) != 0xffff) return -1; /* masked lanes are 0 */
        __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        const __mmask16 up = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(v, t)), half, _CMP_GE_OQ);
        const __m512 away = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(one),
                                                                _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32((int)0x80000000))));
        t = _mm512_mask_add_ps(t, up, t, away);
        t = _mm512_min_ps(_mm512_max_ps(t, _mm512_sub_ps(_mm512_setzero_ps(), big)), big);
        const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(t), z);
        _mm_mask_storeu_epi8(out + i, km, _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(q, lo), hi)));
    }
    return 0;
}
#endif

int ac_i8_quantize(const float *x, size_t n, float scale, int32_t zs, uint8_t *out) {
#if defined(I8_X86)
    if (ac_i8_isa() == AC_I8_ISA_AVX512VNNI) return quantize_512(x, n, scale, zs, out);
#endif
    return quantize_c(x, n, scale, zs, out);
}

static int range_c(const float *x, size_t n, float *lo, float *hi) {
    float a = x[0], b = x[0];
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i])) return -1;
        a = x[i] < a ? x[i] : a, b = x[i] > b ? x[i] : b;
    }
    *lo = a, *hi = b;
    return 0;
}

#if defined(I8_X86)
__attribute__((target("avx512f,avx512bw,avx512vl"))) static int range_512(const float *x, size_t n, float *lo, float *hi) {
    __m512 a = _mm512_set1_ps(x[0]), b = a; /* masked-off lanes load x[0] too: no effect */
    const __m512 inf = _mm512_set1_ps(INFINITY);
    __mmask16 bad = 0;
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 km = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
        const __m512 v = _mm512_mask_loadu_ps(a, km, x + i);
        bad |= _mm512_cmp_ps_mask(_mm512_abs_ps(v), inf, _CMP_NLT_UQ); /* inf or NaN */
        a = _mm512_min_ps(a, v), b = _mm512_max_ps(b, v);
    }
    if (bad) return -1;
    *lo = _mm512_reduce_min_ps(a), *hi = _mm512_reduce_max_ps(b);
    return 0;
}
#endif

int ac_i8_range(const float *x, size_t n, float *lo, float *hi) {
#if defined(I8_X86)
    if (ac_i8_isa() == AC_I8_ISA_AVX512VNNI) return range_512(x, n, lo, hi);
#endif
    return range_c(x, n, lo, hi);
}

/* ---- im2col ---- */

/* n bytes from s to d: a few (a window row of 3 channels) in 8-byte words, inline, where a call to
 * memcpy per tap cost more than the product of the first layer itself. */
static inline void copy_bytes(uint8_t *d, const uint8_t *s, int n) {
    if (n > 32) {
        memcpy(d, s, (size_t)n);
        return;
    }
    int i = 0;
    for (; i + 8 <= n; i += 8) memcpy(d + i, s + i, 8);
    for (; i < n; i++) d[i] = s[i];
}

void ac_i8_im2col(const ac_i8_geom *g, const uint8_t *in, uint8_t zx, int kp, int r0, int r1, uint8_t *cols) {
    const int k = g->kh * g->kw * g->c, span = g->kw * g->c; /* a window row: kw taps, contiguous if dw is 1 */
    int oy = r0 / g->ow, ox = r0 % g->ow;
    for (int r = r0; r < r1; r++) {
        uint8_t *d = cols + (size_t)(r - r0) * kp;
        const int x0 = ox * g->sw - g->pl, inside = g->dw == 1 && x0 >= 0 && x0 + g->kw <= g->w;
        for (int ky = 0; ky < g->kh; ky++) {
            const int y = oy * g->sh - g->pt + ky * g->dh;
            if (inside && y >= 0 && y < g->h) {
                copy_bytes(d, in + ((size_t)y * g->w + x0) * g->c, span);
                d += span;
                continue;
            }
            for (int kx = 0; kx < g->kw; kx++, d += g->c) {
                const int x = x0 + kx * g->dw;
                if (y < 0 || y >= g->h || x < 0 || x >= g->w) memset(d, zx, (size_t)g->c);
                else copy_bytes(d, in + ((size_t)y * g->w + x) * g->c, g->c);
            }
        }
        for (int q = k; q < kp; q++) cols[(size_t)(r - r0) * kp + q] = 0;
        if (++ox == g->ow) ox = 0, oy++;
    }
}

typedef struct im2col_job {
    const ac_i8_geom *g;
    const uint8_t *in;
    uint8_t zx;
    int kp, m;
    uint8_t *cols;
} im2col_job;

static void im2col_task(void *arg, int t, int n) {
    const im2col_job *j = arg;
    const int r0 = (int)((long)j->m * t / n), r1 = (int)((long)j->m * (t + 1) / n);
    ac_i8_im2col(j->g, j->in, j->zx, j->kp, r0, r1, j->cols + (size_t)r0 * j->kp);
}

void ac_i8_im2col_all(const ac_i8_geom *g, const uint8_t *in, uint8_t zx, int kp, uint8_t *cols, ac_pool *pool) {
    im2col_job j = {g, in, zx, kp, g->oh * g->ow, cols};
    if (!pool) im2col_task(&j, 0, 1);
    else ac_pool_run(pool, im2col_task, &j);
}
