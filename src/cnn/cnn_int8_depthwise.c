/* cnn_int8_depthwise.c: the integer path's DEPTHWISE_CONV_2D (cnn_int8_internal.h): TFLite's reference
 * integers, any window in C; 3 x 3 windows of multiplier 1 on AVX512-VNNI (two taps per `vpdpwssd`)
 * or AVX2. */
#include <string.h>

#include "cnn_int8_internal.h"
#include "cnn_int8_simd.h"

typedef struct dw_job {
    const ac_i8_geom *g;
    const uint8_t *in;
    int32_t zx;
    const int32_t *wq, *bias, *inner;
    const ac_i8_requant *rq;
    uint8_t *out;
    const int16_t *wp; /* 3 x 3: ac_i8_dw3x3_pack's pairs, or NULL */
} dw_job;

enum { DW_MAX_C = 4096 };

static void dw_task(void *arg, int t, int n) {
    const dw_job *j = arg;
    const ac_i8_geom *g = j->g;
    const int y0 = (int)((long)g->oh * t / n), y1 = (int)((long)g->oh * (t + 1) / n), oc = g->oc, mult = oc / g->c;
    int32_t acc[DW_MAX_C];
    for (int oy = y0; oy < y1; oy++)
        for (int ox = 0; ox < g->ow; ox++) {
            memcpy(acc, j->bias, (size_t)oc * sizeof *acc);
            for (int ky = 0; ky < g->kh; ky++) {
                const int y = oy * g->sh - g->pt + ky * g->dh;
                if (y < 0 || y >= g->h) continue;
                for (int kx = 0; kx < g->kw; kx++) {
                    const int x = ox * g->sw - g->pl + kx * g->dw;
                    if (x < 0 || x >= g->w) continue;
                    const uint8_t *src = j->in + ((size_t)y * g->w + x) * g->c;
                    const int32_t *wt = j->wq + (size_t)(ky * g->kw + kx) * oc;
                    const int32_t zx = j->zx;
                    if (mult == 1)
                        for (int c = 0; c < oc; c++) acc[c] += ((int32_t)src[c] - zx) * wt[c];
                    else
                        for (int c = 0; c < oc; c++) acc[c] += ((int32_t)src[c / mult] - zx) * wt[c];
                }
            }
            ac_i8_requant_row(acc, oc, j->rq, 0, j->out + ((size_t)oy * g->ow + ox) * oc);
        }
}

#if defined(I8_X86)
/* The output columns [*xa, *xb) whose 3 taps are all inside the image (the 3 x 3 kernels' fast path). */
static void dw3x3_inner_columns(const ac_i8_geom *g, int *xa, int *xb) {
    int a = 0, b = g->ow;
    while (a < g->ow && a * g->sw - g->pl < 0) a++;
    while (b > a && (b - 1) * g->sw - g->pl + 2 >= g->w) b--;
    *xa = a, *xb = b;
}

#endif

/* 3 x 3, multiplier 1, no dilation, on AVX512-VNNI: two taps per `vpdpwssd`. For each output row and
 * block of 32 channels, taps a and b of a pixel are loaded as 32 bytes each and interleaved
 * (a0 b0 a1 b1 ...) into 16-bit pairs; VPDPWSSD adds a * wa + b * wb to each channel's int32 sum, so
 * nine taps take five instructions (the ninth paired with a zero weight) where 16-lane products took
 * nine multiplies and nine adds. The interleave works within 128-bit lanes, so one sum holds channels
 * 0-7 and 16-23 of the block and the other 8-15 and 24-31; the packed weights (ac_i8_dw3x3_pack), the
 * bias and the multipliers are laid out in that order, and the bytes put back in order at the store.
 * Inside the image the zero point's share is in `inner` (bias - zx * the sum of the taps), so a tap is
 * x * w; at the borders (x - zx) * w over the taps inside, channels in order, as dw_task. The same
 * int32 sums (no product or pair sum overflows: |x * w| <= 255 * 255). */
enum { DW_PAIRS = 5 };

size_t ac_i8_dw3x3_packed_count(int c) { return (size_t)(c + 31) / 32 * DW_PAIRS * 2 * 32; }

/* Lane i (0..15) of half h of a 32-channel block holds channel 8h + i (i < 8) or 8h + 8 + i. */
static inline int dw_lane_channel(int h, int i) { return 8 * h + (i < 8 ? i : i + 8); }

void ac_i8_dw3x3_pack(const int32_t *wq, int c, int16_t *wp) {
    for (int c0 = 0; c0 < c; c0 += 32)
        for (int p = 0; p < DW_PAIRS; p++)
            for (int h = 0; h < 2; h++, wp += 32)
                for (int i = 0; i < 16; i++) {
                    const int ch = c0 + dw_lane_channel(h, i), ta = 2 * p, tb = 2 * p + 1;
                    wp[2 * i] = (int16_t)(ch < c ? wq[(size_t)ta * c + ch] : 0);
                    wp[2 * i + 1] = (int16_t)(ch < c && tb < 9 ? wq[(size_t)tb * c + ch] : 0);
                }
}

#if defined(I8_X86)
/* A per-channel int32 array's 16 lanes for half h of the block at c0 (n of its channels exist). */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static inline __m512i dw_half_load(const int32_t *p, int c0, int n, int h) {
    const int a = n - 8 * h, b = n - 8 * h - 16; /* channels in the lanes' two runs of 8 */
    const __mmask8 ka = a >= 8 ? 0xff : a > 0 ? (__mmask8)((1u << a) - 1) : 0, kb = b >= 8 ? 0xff : b > 0 ? (__mmask8)((1u << b) - 1) : 0;
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_maskz_loadu_epi32(ka, p + c0 + 8 * h)),
                              _mm256_maskz_loadu_epi32(kb, p + c0 + 8 * h + 16), 1);
}

/* One border pixel's block of channels [c0, c0 + n), in order: taps outside the image skipped. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void dw3x3_border_512(const dw_job *j, int ybase, int xbase, int c0, int n,
                                                                         uint8_t *dst) {
    const ac_i8_geom *g = j->g;
    const int C = g->c;
    const __m512i zero = _mm512_setzero_si512(), zx = _mm512_set1_epi32(j->zx);
    for (int q = 0; q < n; q += 16) {
        const int cc = c0 + q;
        const __mmask16 km = n - q >= 16 ? 0xffff : (__mmask16)((1u << (n - q)) - 1);
        __m512i acc = _mm512_maskz_loadu_epi32(km, j->bias + cc);
        for (int ky = 0; ky < 3; ky++) {
            const int y = ybase + ky;
            if (y < 0 || y >= g->h) continue;
            for (int kx = 0; kx < 3; kx++) {
                const int x = xbase + kx;
                if (x < 0 || x >= g->w) continue;
                const __m512i v = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(km, j->in + ((size_t)y * g->w + x) * C + cc));
                const __m512i w = _mm512_maskz_loadu_epi32(km, j->wq + (size_t)(ky * 3 + kx) * C + cc);
                acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(_mm512_sub_epi32(v, zx), w));
            }
        }
        const __m512i sh = _mm512_maskz_loadu_epi32(km, j->rq->shift + cc);
        const __m512i y = rq16(acc, _mm512_maskz_loadu_epi32(km, j->rq->mult + cc), _mm512_max_epi32(sh, zero),
                               _mm512_max_epi32(_mm512_sub_epi32(zero, sh), zero), _mm512_set1_epi32(j->rq->zp),
                               _mm512_set1_epi32(j->rq->lo), _mm512_set1_epi32(j->rq->hi));
        _mm_mask_storeu_epi8(dst + q, km, _mm512_cvtepi32_epi8(y));
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) static void dw3x3_task_vnni(void *arg, int t, int n) {
    const dw_job *j = arg;
    const ac_i8_geom *g = j->g;
    const int y0 = (int)((long)g->oh * t / n), y1 = (int)((long)g->oh * (t + 1) / n), C = g->c;
    const size_t row = (size_t)g->w * C;
    const __m512i zero = _mm512_setzero_si512(), zp = _mm512_set1_epi32(j->rq->zp);
    const __m512i lo = _mm512_set1_epi32(j->rq->lo), hi = _mm512_set1_epi32(j->rq->hi);
    int xa, xb;
    dw3x3_inner_columns(g, &xa, &xb);
    for (int oy = y0; oy < y1; oy++) {
        const int ybase = oy * g->sh - g->pt, yin = ybase >= 0 && ybase + 2 < g->h;
        for (int c0 = 0; c0 < C; c0 += 32) {
            const int nc = C - c0 < 32 ? C - c0 : 32;
            const __mmask32 km = nc == 32 ? 0xffffffffu : (__mmask32)((1u << nc) - 1);
            const int16_t *wp = j->wp + (size_t)(c0 / 32) * DW_PAIRS * 2 * 32;
            __m512i w[DW_PAIRS][2], inner[2], m[2], ls[2], rs[2];
            for (int h = 0; h < 2; h++) {
                for (int p = 0; p < DW_PAIRS; p++) w[p][h] = _mm512_loadu_si512(wp + (p * 2 + h) * 32);
                inner[h] = dw_half_load(j->inner, c0, nc, h);
                m[h] = dw_half_load(j->rq->mult, c0, nc, h);
                const __m512i sh = dw_half_load(j->rq->shift, c0, nc, h);
                ls[h] = _mm512_max_epi32(sh, zero), rs[h] = _mm512_max_epi32(_mm512_sub_epi32(zero, sh), zero);
            }
            uint8_t *dst = j->out + (size_t)oy * g->ow * C + c0;
            for (int ox = 0; ox < g->ow; ox++) {
                const int xbase = ox * g->sw - g->pl;
                if (!yin || ox < xa || ox >= xb) {
                    dw3x3_border_512(j, ybase, xbase, c0, nc, dst + (size_t)ox * C);
                    continue;
                }
                const uint8_t *src = j->in + (size_t)ybase * row + (size_t)xbase * C + c0;
                __m512i s0 = inner[0], s1 = inner[1];
#define DW_PAIR(p, a, b)                                                                          \
    do {                                                                                          \
        const __m256i va = _mm256_maskz_loadu_epi8(km, a), vb = _mm256_maskz_loadu_epi8(km, b); \
        s0 = _mm512_dpwssd_epi32(s0, _mm512_cvtepu8_epi16(_mm256_unpacklo_epi8(va, vb)), w[p][0]); \
        s1 = _mm512_dpwssd_epi32(s1, _mm512_cvtepu8_epi16(_mm256_unpackhi_epi8(va, vb)), w[p][1]); \
    } while (0)
                DW_PAIR(0, src, src + C);
                DW_PAIR(1, src + 2 * C, src + row);
                DW_PAIR(2, src + row + C, src + row + 2 * C);
                DW_PAIR(3, src + 2 * row, src + 2 * row + C);
                DW_PAIR(4, src + 2 * row + 2 * C, src + 2 * row + 2 * C); /* its second weight 0 */
#undef DW_PAIR
                const __m128i b0 = _mm512_cvtepi32_epi8(rq16(s0, m[0], ls[0], rs[0], zp, lo, hi)); /* channels 0-7, 16-23 */
                const __m128i b1 = _mm512_cvtepi32_epi8(rq16(s1, m[1], ls[1], rs[1], zp, lo, hi)); /* 8-15, 24-31 */
                const __m256i o = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi64(b0, b1)), _mm_unpackhi_epi64(b0, b1), 1);
                _mm256_mask_storeu_epi8(dst + (size_t)ox * C, km, o);
            }
        }
    }
}

/* The same on AVX2, 8 channels at a time. */
__attribute__((target("avx2"))) static void dw3x3_task_256(void *arg, int t, int n) {
    const dw_job *j = arg;
    const ac_i8_geom *g = j->g;
    const int y0 = (int)((long)g->oh * t / n), y1 = (int)((long)g->oh * (t + 1) / n), C = g->c;
    const size_t row = (size_t)g->w * C;
    const __m256i zero = _mm256_setzero_si256(), zx = _mm256_set1_epi32(j->zx), zp = _mm256_set1_epi32(j->rq->zp);
    const __m256i lo = _mm256_set1_epi32(j->rq->lo), hi = _mm256_set1_epi32(j->rq->hi);
    int xa, xb;
    dw3x3_inner_columns(g, &xa, &xb);
    for (int oy = y0; oy < y1; oy++) {
        const int ybase = oy * g->sh - g->pt, yin = ybase >= 0 && ybase + 2 < g->h;
        for (int c0 = 0; c0 < C; c0 += 8) { /* C a multiple of 8 (ac_i8_depthwise) */
            __m256i w[9];
            for (int q = 0; q < 9; q++) w[q] = _mm256_loadu_si256((const __m256i *)(j->wq + (size_t)q * C + c0));
            const __m256i inner = _mm256_loadu_si256((const __m256i *)(j->inner + c0));
            const __m256i bias = _mm256_loadu_si256((const __m256i *)(j->bias + c0));
            const __m256i m = _mm256_loadu_si256((const __m256i *)(j->rq->mult + c0));
            const __m256i sh = _mm256_loadu_si256((const __m256i *)(j->rq->shift + c0));
            const __m256i ls = _mm256_max_epi32(sh, zero), rs = _mm256_max_epi32(_mm256_sub_epi32(zero, sh), zero);
            uint8_t *dst = j->out + (size_t)oy * g->ow * C + c0;
            for (int ox = 0; ox < g->ow; ox++) {
                const int xbase = ox * g->sw - g->pl;
                __m256i acc;
#define LOAD8(p) _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p)))
                if (yin && ox >= xa && ox < xb) {
                    const uint8_t *src = j->in + (size_t)ybase * row + (size_t)xbase * C + c0;
#define TAP(q, off) acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(LOAD8(src + (off)), w[q]))
                    acc = inner;
                    TAP(0, 0); TAP(1, C); TAP(2, 2 * C);
                    TAP(3, row); TAP(4, row + C); TAP(5, row + 2 * C);
                    TAP(6, 2 * row); TAP(7, 2 * row + C); TAP(8, 2 * row + 2 * C);
#undef TAP
                } else {
                    acc = bias;
                    for (int ky = 0; ky < 3; ky++) {
                        const int y = ybase + ky;
                        if (y < 0 || y >= g->h) continue;
                        for (int kx = 0; kx < 3; kx++) {
                            const int x = xbase + kx;
                            if (x < 0 || x >= g->w) continue;
                            const __m256i v = LOAD8(j->in + (size_t)y * row + (size_t)x * C + c0);
                            acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(_mm256_sub_epi32(v, zx), w[ky * 3 + kx]));
                        }
                    }
                }
#undef LOAD8
                store8_u8(dst + (size_t)ox * C, rq8(acc, m, ls, rs, zp, lo, hi));
            }
        }
    }
}
#endif

void ac_i8_depthwise(const ac_i8_geom *g, const uint8_t *in, int32_t zx, const int32_t *wq, const int16_t *wp,
                     const int32_t *bias, const int32_t *inner, const ac_i8_requant *rq, uint8_t *out, ac_pool *pool) {
    dw_job j = {g, in, zx, wq, bias, inner, rq, out, wp};
    void (*fn)(void *, int, int) = dw_task;
#if defined(I8_X86)
    const int dw3x3 = g->oc == g->c && g->kh == 3 && g->kw == 3 && g->dh == 1 && g->dw == 1;
    if (ac_i8_isa() == AC_I8_ISA_AVX512VNNI && dw3x3 && wp) fn = dw3x3_task_vnni;
    else if (ac_i8_isa() >= AC_I8_ISA_AVX2 && dw3x3 && g->c % 8 == 0) fn = dw3x3_task_256;
#endif
    if (!pool) fn(&j, 0, 1);
    else ac_pool_run(pool, fn, &j);
}

