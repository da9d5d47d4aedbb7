/* expsum.c: expf over rows of floats, vectorised with the C library's bits (expsum_internal.h).
 *
 * glibc's expf (x86-64, the build it picks on a CPU with FMA and AVX2, which is every CPU this code
 * is compiled for), for |x| below 88 and down to -103.28:
 *   z = x N / ln 2 + 1.5 2^52 (one fused multiply-add, N = 32), k = the integer in z's low bits,
 *   r = x N / ln 2 - (z - 1.5 2^52) (fused), s = 2^(k / N) from a table of 2^(i/32) for k mod 32
 *   and k div 32 added to the exponent, y = ((C0 r + C1) r^2 + (C2 r + 1)) s rounded to float.
 * Above 88.72: +inf; below -103.97 (and -inf): 0; in [-103.97, -103.28): the smallest subnormal (its
 * "may underflow" path). A NaN gives a NaN. The constants are glibc's (__exp2f_data: the table is
 * 2^(i/32) less i 2^47, so adding k 2^47 puts k div 32 in the exponent). */
#include "expsum_internal.h"

#include <math.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define VEXP 1

static const uint64_t TAB[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51, 0x3fef72b83c7d517b,
    0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1, 0x3fef06fe0a31b715, 0x3feef1a7373aa9cb,
    0x3feedea64c123422, 0x3feece086061892d, 0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429,
    0x3feea47eb03a5585, 0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d, 0x3feee89f995ad3ad,
    0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069, 0x3fef5818dcfba487, 0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da, 0x3fefd0765b6e4540};
static const uint64_t INVLN2N = 0x40471547652b82fe, SHIFT = 0x4338000000000000, C0 = 0x3ebc6af84b912394,
                      C1 = 0x3f2ebfce50fac4f3, C2 = 0x3f962e42ff0c52d6;
static const uint32_t OVER = 0x42b17217 /* 88.72283 */, UNDER = 0xc2cff1b4 /* -103.97208 */,
                      MAY_UNDER = 0xc2ce8ecf /* -103.27892 */;

static double as_double(uint64_t u) {
    union { uint64_t u; double d; } v = {u};
    return v.d;
}
static float as_float(uint32_t u) {
    union { uint32_t u; float f; } v = {u};
    return v.f;
}
#endif

#if defined(VEXP) && defined(__AVX512F__) && defined(__AVX512DQ__) /* DQ: the 8-float halves */
enum { W = 16 };
/* 8 doubles' worth: the polynomial times 2^(k/N), to float. */
static __m256 exp8(__m256 xf) {
    const __m512d xd = _mm512_cvtps_pd(xf), inv = _mm512_set1_pd(as_double(INVLN2N)), shift = _mm512_set1_pd(as_double(SHIFT));
    const __m512d z = _mm512_fmadd_pd(xd, inv, shift);
    const __m512i k = _mm512_castpd_si512(z);
    const __m512d r = _mm512_fmsub_pd(inv, xd, _mm512_sub_pd(z, shift));
    const __m512i *tab = (const __m512i *)(const void *)TAB;
    const __m512i lo = _mm512_permutex2var_epi64(_mm512_loadu_si512(tab), k, _mm512_loadu_si512(tab + 1)),
                  hi = _mm512_permutex2var_epi64(_mm512_loadu_si512(tab + 2), k, _mm512_loadu_si512(tab + 3));
    const __m512i t = _mm512_mask_blend_epi64(_mm512_test_epi64_mask(k, _mm512_set1_epi64(16)), lo, hi);
    const __m512d s = _mm512_castsi512_pd(_mm512_add_epi64(t, _mm512_slli_epi64(k, 47)));
    const __m512d p = _mm512_fmadd_pd(r, _mm512_set1_pd(as_double(C0)), _mm512_set1_pd(as_double(C1)));
    const __m512d q = _mm512_fmadd_pd(r, _mm512_set1_pd(as_double(C2)), _mm512_set1_pd(1.0));
    return _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_fmadd_pd(p, _mm512_mul_pd(r, r), q), s));
}
/* expf of 16 floats. */
static __m512 expw(__m512 x) {
    __m512 y = _mm512_insertf32x8(_mm512_castps256_ps512(exp8(_mm512_castps512_ps256(x))), exp8(_mm512_extractf32x8_ps(x, 1)), 1);
    y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_set1_ps(as_float(OVER)), _CMP_GT_OQ), _mm512_set1_ps(INFINITY));
    y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_set1_ps(as_float(MAY_UNDER)), _CMP_LT_OQ), _mm512_set1_ps(0x1p-149f));
    return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_set1_ps(as_float(UNDER)), _CMP_LT_OQ), _mm512_setzero_ps());
}
#define LOADW _mm512_loadu_ps
#define STOREW _mm512_storeu_ps
#define SUBW(a, m) _mm512_sub_ps(a, _mm512_set1_ps(m))
#define MAXW _mm512_max_ps
#define SETW _mm512_set1_ps
typedef __m512 vecw;
#elif defined(VEXP)
enum { W = 8 };
static __m128 exp4(__m128 xf) {
    const __m256d xd = _mm256_cvtps_pd(xf), inv = _mm256_set1_pd(as_double(INVLN2N)), shift = _mm256_set1_pd(as_double(SHIFT));
    const __m256d z = _mm256_fmadd_pd(xd, inv, shift);
    const __m256i k = _mm256_castpd_si256(z);
    const __m256d r = _mm256_fmsub_pd(inv, xd, _mm256_sub_pd(z, shift));
    const __m256i t = _mm256_i64gather_epi64((const long long *)TAB, _mm256_and_si256(k, _mm256_set1_epi64x(31)), 8);
    const __m256d s = _mm256_castsi256_pd(_mm256_add_epi64(t, _mm256_slli_epi64(k, 47)));
    const __m256d p = _mm256_fmadd_pd(r, _mm256_set1_pd(as_double(C0)), _mm256_set1_pd(as_double(C1)));
    const __m256d q = _mm256_fmadd_pd(r, _mm256_set1_pd(as_double(C2)), _mm256_set1_pd(1.0));
    return _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_fmadd_pd(p, _mm256_mul_pd(r, r), q), s));
}
static __m256 expw(__m256 x) {
    __m256 y = _mm256_set_m128(exp4(_mm256_extractf128_ps(x, 1)), exp4(_mm256_castps256_ps128(x)));
    y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(x, _mm256_set1_ps(as_float(OVER)), _CMP_GT_OQ));
    y = _mm256_blendv_ps(y, _mm256_set1_ps(0x1p-149f), _mm256_cmp_ps(x, _mm256_set1_ps(as_float(MAY_UNDER)), _CMP_LT_OQ));
    return _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, _mm256_set1_ps(as_float(UNDER)), _CMP_LT_OQ));
}
#define LOADW _mm256_loadu_ps
#define STOREW _mm256_storeu_ps
#define SUBW(a, m) _mm256_sub_ps(a, _mm256_set1_ps(m))
#define MAXW _mm256_max_ps
#define SETW _mm256_set1_ps
typedef __m256 vecw;
#endif

double ac_exp_sum(const float *x, size_t n, float m, float *out) {
    double s = 0;
    size_t i = 0;
#if defined(VEXP)
    for (; i + W <= n; i += W) {
        float e[W];
        STOREW(e, expw(SUBW(LOADW(x + i), m)));
        for (int j = 0; j < W; j++) s += e[j]; /* in order: the loop's bits */
        if (out) STOREW(out + i, LOADW(e));
    }
#endif
    for (; i < n; i++) {
        const float e = expf(x[i] - m);
        s += e;
        if (out) out[i] = e;
    }
    return s;
}

float ac_max_row(const float *x, size_t n) {
    float m = x[0];
    size_t i = 1;
#if defined(VEXP)
    if (n > 2 * W) {
        /* max(v, acc) keeps acc when v is a NaN, as the loop does, and when they are equal */
        vecw acc = SETW(m);
        for (i = 0; i + W <= n; i += W) acc = MAXW(LOADW(x + i), acc);
        float lanes[W];
        STOREW(lanes, acc);
        for (int j = 0; j < W; j++) m = lanes[j] > m ? lanes[j] : m;
        for (size_t k = i; k < n; k++) m = x[k] > m ? x[k] : m;
        if (m != 0) return m;
        /* a zero maximum: which zero the loop keeps depends on the order, so take the loop's */
        m = x[0], i = 1;
    }
#endif
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}
