/* cnn_gemm_bf16.c: ac_cnn_gemm's products on AMX, for plans that ask for it (AC_PRECISION_BF16X2).
 *
 * Why: the CNN's 1x1 products are most of a photo's time, and they already run at ~85% of the float32
 * FMA peak. An AMX tile multiply (TDPBF16PS) does a 16 x 16 x 32 product of bfloat16 into float32 in
 * one instruction, many times the multiply-adds per cycle of AVX-512's FMAs. bfloat16 has an 8-bit
 * mantissa, which alone would move MobileNetV2's features by 1 - cosine ~1e-3 (measured) and change
 * captions; so nothing is rounded that way:
 *  - weights: a quantized model's filters are integers q - zero point (|q| <= 255: exact in bfloat16)
 *    times a scale, which multiplies the float32 sum instead; float filters are not packed (they stay
 *    float32, cnn.c);
 *  - activations: each x is split into hi = bf16(x) and lo = bf16(x - hi), two products instead of
 *    one, 16 bits of mantissa between them (a relative error of at most 2^-17 per element).
 * The features then differ from float32's by 1 - cosine < 1e-9 (tests/test_cnn_bf16.c).
 * AVX512-BF16's VDPBF16PS alone (no AMX) measured no faster than the float32 FMAs on the Xeon we
 * have (one port), so only AMX is used.
 *
 * Layout: panels of 32 output channels, k taken in pairs and padded to a multiple of 32:
 * panel[k/2][32 columns][2] bfloat16, a pair being one 32-bit lane; 16 rows of pairs of one half of
 * the panel are a B tile (stride 128 bytes). A block of 32 rows of activations is split into hi and
 * lo pairs once per block, on the stack (rows of at most AC_CNN_BF16_MAX_K values); each unit (32
 * rows, one panel) keeps four 16 x 16 float32 accumulator tiles. Units are computed the same way
 * whichever thread takes them, so results do not depend on the thread count.
 *
 * The file is compiled for AMX whatever the build's -march (its functions are only called once
 * ac_cnn_bf16_supported() has found AMX and Linux's permission to use it), so a portable build keeps
 * the fast path. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cnn_internal.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HAVE_BF16_KERNELS 1
#endif

/* Round to nearest even (NaN kept a quiet NaN): what VCVTNE2PS2BF16 does to normal numbers. */
uint16_t ac_cnn_bf16_round(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float ac_cnn_bf16_float(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

#define NR 32 /* columns per panel */
#define MB 32 /* rows per unit: two A tiles */
#define BF16_PAIRS(k) (((k) + 31) / 32 * 16) /* pairs per row, padded to whole tiles */

int ac_cnn_gemm_bf16_columns(int n) { return (n + NR - 1) / NR * NR; }

size_t ac_cnn_gemm_bf16_packed_size(int n, int k) { return (size_t)((n + NR - 1) / NR) * NR * (size_t)BF16_PAIRS(k) * 2; }

/* Whether each of column col's weights is exactly (as float32) an integer of at most 256 in magnitude
 * times scale: a quantized model's weights, (q - zero point) x scale. bfloat16 holds such integers
 * exactly. */
static int column_is_scaled_integers(const float *wc, int k, float scale) {
    if (!(scale > 0.0f) || !isfinite(scale)) return 0;
    for (int p = 0; p < k; p++) {
        const double q = nearbyint((double)wc[p] / scale);
        if (fabs(q) > 256.0 || (float)(q * scale) != wc[p]) return 0;
    }
    return 1;
}

int ac_cnn_gemm_bf16_pack(int n, int k, const float *w, const float *scales, uint16_t *packed, float *col_scale) {
    const int np = (n + NR - 1) / NR, kp = BF16_PAIRS(k);
    if (k > AC_CNN_BF16_MAX_K) return -1; /* rows longer than the kernel's buffer */
    for (int col = 0; col < n; col++)
        if (!column_is_scaled_integers(w + (size_t)col * k, k, scales[col])) return -1;
    for (int col = 0; col < np * NR; col++) col_scale[col] = col < n ? scales[col] : 1.0f;
    for (int pb = 0; pb < np; pb++)
        for (int p = 0; p < kp; p++)
            for (int j = 0; j < NR; j++)
                for (int e = 0; e < 2; e++) {
                    const int col = pb * NR + j, kk = 2 * p + e;
                    const double q = col < n && kk < k ? nearbyint((double)w[(size_t)col * k + kk] / scales[col]) : 0.0;
                    packed[(((size_t)pb * kp + p) * NR + j) * 2 + e] = ac_cnn_bf16_round((float)q);
                }
    return 0;
}

#if defined(HAVE_BF16_KERNELS)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARCH_REQ_XCOMP_PERM 0x1023 /* arch_prctl: ask for an extended state component */
#define XFEATURE_XTILEDATA 18      /* the AMX tiles' data */

int ac_cnn_bf16_supported(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    const int amx = (d >> 22 & 1) && (d >> 24 & 1); /* AMX-BF16, AMX-TILE */
    const int avx512 = (b >> 16 & 1) && (b >> 30 & 1) && (b >> 31 & 1); /* F, BW, VL */
    if (!amx || !avx512 || !__get_cpuid_count(7, 1, &a, &b, &c, &d) || !(a >> 5 & 1)) return 0; /* AVX512-BF16 */
    /* Linux hands the tiles' 8 KB of state to a process only when asked; asking again is harmless. */
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16,amx-tile,amx-bf16")
#include <immintrin.h>

/* hi[r][0..kp) = the pairs of row r of a (k floats) rounded, lo[r] = the pairs of what rounding left
 * (x - hi, rounded again): hi + lo is x to a relative 2^-17. Zero past k; rows past mr are zero. */
static void split_rows(const float *a, int k, int mr, uint32_t *hi, uint32_t *lo, int kp) {
    for (int r = 0; r < MB; r++) {
        uint32_t *dh = hi + (size_t)r * kp, *dl = lo + (size_t)r * kp;
        if (r >= mr) {
            memset(dh, 0, (size_t)kp * sizeof *dh);
            memset(dl, 0, (size_t)kp * sizeof *dl);
            continue;
        }
        const float *src = a + (size_t)r * k;
        for (int p = 0; p < 2 * kp; p += 32) {
            const int left = k - p;
            const __mmask16 m0 = left >= 16 ? 0xffff : left > 0 ? (__mmask16)((1u << left) - 1) : 0;
            const __mmask16 m1 = left >= 32 ? 0xffff : left > 16 ? (__mmask16)((1u << (left - 16)) - 1) : 0;
            const __m512 x0 = _mm512_maskz_loadu_ps(m0, src + p), x1 = _mm512_maskz_loadu_ps(m1, src + p + 16);
            const __m512bh h = _mm512_cvtne2ps_pbh(x1, x0);
            /* back to float: each bfloat16 is the top half of a float32 */
            const __m512i hw = (__m512i)h;
            const __m512 h0 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(hw)), 16));
            const __m512 h1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(hw, 1)), 16));
            _mm512_storeu_si512((void *)(dh + p / 2), hw);
            _mm512_storeu_si512((void *)(dl + p / 2), (__m512i)_mm512_cvtne2ps_pbh(_mm512_sub_ps(x1, h1), _mm512_sub_ps(x0, h0)));
        }
    }
}

typedef struct tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t bytes_per_row[16];
    uint8_t rows[16];
} tile_config;

typedef struct gemm_job {
    int m, n, k;
    const float *a;
    const uint16_t *packed;
    const float *scale, *bias;
    float *c;
    const float *add;
    int act, sum_act;
} gemm_job;

/* The accumulator tiles 0-3 += the 32 rows of pairs at a (row stride kp pairs), as tiles 4 and 5, times
 * the B tiles 6 and 7 already loaded (7 only when wide). */
static inline __attribute__((always_inline)) void tile_products(const uint32_t *a, int kp, int wide) {
    _tile_loadd(4, a, kp * 4);
    _tile_loadd(5, a + (size_t)16 * kp, kp * 4);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(2, 5, 6);
    if (wide) {
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(3, 5, 7);
    }
}

/* Units (32-row block, panel), row block first; chunk t of nt takes an even share. Tiles: 0-3 the
 * accumulators (rows 0-15 / 16-31 x columns 0-15 / 16-31), 4-5 the two A tiles, 6-7 the two B tiles. */
static void gemm_part(void *arg, int t, int nt) {
    const gemm_job *j = arg;
    const int np = (j->n + NR - 1) / NR, mblocks = (j->m + MB - 1) / MB, units = mblocks * np, kp = BF16_PAIRS(j->k);
    const int u0 = (int)((long)units * t / nt), u1 = (int)((long)units * (t + 1) / nt);
    if (u0 >= u1) return;
    float lo, hi, sum_lo, sum_hi;
    ac_cnn_act_bounds(j->act, &lo, &hi);
    ac_cnn_act_bounds(j->sum_act, &sum_lo, &sum_hi);
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi), slo = _mm512_set1_ps(sum_lo), shi = _mm512_set1_ps(sum_hi);
    tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int i = 0; i < 8; i++) cfg.bytes_per_row[i] = 64, cfg.rows[i] = 16;
    _tile_loadconfig(&cfg);
    uint32_t a_hi[MB * (AC_CNN_BF16_MAX_K / 2)] __attribute__((aligned(64))); /* 96 KB each */
    uint32_t a_lo[MB * (AC_CNN_BF16_MAX_K / 2)] __attribute__((aligned(64)));
    float acc[MB * NR] __attribute__((aligned(64)));
    int have = -1; /* the row block split into a_hi and a_lo */
    for (int u = u0; u < u1; u++) {
        const int mb = u / np, pb = u % np, r0 = mb * MB, mr = j->m - r0 < MB ? j->m - r0 : MB;
        if (mb != have) split_rows(j->a + (size_t)r0 * j->k, j->k, mr, a_hi, a_lo, kp), have = mb;
        const uint16_t *panel = j->packed + (size_t)pb * kp * 2 * NR;
        const int nr = j->n - pb * NR < NR ? j->n - pb * NR : NR, wide = nr > 16;
        _tile_zero(0); /* the tile macros are statements */
        _tile_zero(2);
        if (wide) {
            _tile_zero(1);
            _tile_zero(3);
        }
        for (int p = 0; p < kp; p += 16) { /* hi's products, then lo's with the same weights */
            _tile_loadd(6, panel + (size_t)p * 2 * NR, 4 * NR);
            if (wide) _tile_loadd(7, panel + (size_t)p * 2 * NR + 32, 4 * NR);
            tile_products(a_hi + p, kp, wide);
            tile_products(a_lo + p, kp, wide);
        }
        _tile_stored(0, acc, 4 * NR);
        _tile_stored(2, acc + 16 * NR, 4 * NR);
        if (wide) {
            _tile_stored(1, acc + 16, 4 * NR);
            _tile_stored(3, acc + 16 * NR + 16, 4 * NR);
        }
        const __mmask16 m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1);
        const __mmask16 m1 = nr >= 32 ? 0xffff : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1) : 0;
        const float *bias = j->bias ? j->bias + pb * NR : NULL;
        const __m512 b0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
        const __m512 b1 = bias ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
        const __m512 s0 = _mm512_loadu_ps(j->scale + pb * NR), s1 = _mm512_loadu_ps(j->scale + pb * NR + 16);
        for (int r = 0; r < mr; r++)
            for (int h = 0; h < 2; h++) {
                const __mmask16 m = h ? m1 : m0;
                if (!m) continue;
                const size_t at = (size_t)(r0 + r) * j->n + pb * NR + 16 * h;
                __m512 v = _mm512_fmadd_ps(_mm512_load_ps(acc + r * NR + 16 * h), h ? s1 : s0, h ? b1 : b0);
                v = _mm512_min_ps(_mm512_max_ps(v, vlo), vhi);
                if (j->add) v = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(v, _mm512_maskz_loadu_ps(m, j->add + at)), slo), shi);
                _mm512_mask_storeu_ps(j->c + at, m, v);
            }
    }
    _tile_release(); /* no tile state for the kernel to save while this thread does other work */
}

void ac_cnn_gemm_bf16(int m, int n, int k, const float *a, const uint16_t *packed, const float *col_scale,
                      const float *bias, int act, float *c, const ac_cnn_sum *sum, ac_pool *pool) {
    gemm_job j = {m, n, k, a, packed, col_scale, bias, c, sum ? sum->add : NULL, act, sum ? sum->act : 0};
    if ((double)m * n * k < 2e5) pool = NULL;
    ac_pool_run(pool, gemm_part, &j);
}
#pragma GCC pop_options
#else
int ac_cnn_bf16_supported(void) { return 0; }
void ac_cnn_gemm_bf16(int m, int n, int k, const float *a, const uint16_t *packed, const float *col_scale,
                      const float *bias, int act, float *c, const ac_cnn_sum *sum, ac_pool *pool) {
    (void)m, (void)n, (void)k, (void)a, (void)packed, (void)col_scale, (void)bias, (void)act, (void)c, (void)sum, (void)pool;
}
#endif
