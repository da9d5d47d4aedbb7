/* cnn_silu.h: SiLU, x * sigmoid(x) = x / (1 + exp(-x)), the activation YOLOX puts after every conv
 * (LOGISTIC then MUL in the flatbuffer), run by the kernels on their way out (CNN_ACT_SILU); and
 * LOGISTIC itself.
 *
 * exp is Cephes' single-precision scheme: n = round(x / ln 2), r = x - n ln 2 in two parts, a
 * degree-6 polynomial for e^r on |r| <= ln 2 / 2, times 2^n; within 2 ulp of the exact value on
 * [-87, 88]. sigmoid is then 1 / (1 + e^-x) by a true division (no reciprocal estimate), and the
 * product rounds once more: the result is within a few ulp of x * sigmoid(x) computed exactly.
 * Beyond the range e^-x saturates to 0 or infinity (SiLU a zero of the right sign there, or below
 * 1e-35 in magnitude). tests/test_cnn_silu.c holds them to 4 ulp of libm's double precision.
 * Inline: compiled into each kernel file for its instruction set. */
#ifndef ATTNCAP_CNN_SILU_H
#define ATTNCAP_CNN_SILU_H
#include <math.h>
#include <stddef.h>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

#define SILU_LOG2E 1.44269504088896341f
#define SILU_LN2_HI 0.693359375f
#define SILU_LN2_LO -2.12194440e-4f
#define SILU_P0 1.9875691500e-4f
#define SILU_P1 1.3981999507e-3f
#define SILU_P2 8.3334519073e-3f
#define SILU_P3 4.1665795894e-2f
#define SILU_P4 1.6666665459e-1f
#define SILU_P5 5.0000001201e-1f

#if defined(__AVX512F__)
/* e^-x */
static inline __attribute__((always_inline)) __m512 ac_cnn_expneg16(__m512 x) {
    const __m512 t = _mm512_min_ps(_mm512_max_ps(_mm512_sub_ps(_mm512_setzero_ps(), x), _mm512_set1_ps(-104.0f)),
                                   _mm512_set1_ps(89.0f)); /* -x, where 2^n is still finite or exactly 0 */
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(t, _mm512_set1_ps(SILU_LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(SILU_LN2_HI), t);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(SILU_LN2_LO), r);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(SILU_P0), r, _mm512_set1_ps(SILU_P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(SILU_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(SILU_P3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(SILU_P4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(SILU_P5));
    return _mm512_scalef_ps(_mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f)), n);
}

static inline __attribute__((always_inline)) __m512 ac_cnn_silu16(__m512 x) {
    return _mm512_div_ps(x, _mm512_add_ps(ac_cnn_expneg16(x), _mm512_set1_ps(1.0f)));
}
#endif

#if defined(__AVX2__) && defined(__FMA__)
/* e^-x */
static inline __attribute__((always_inline)) __m256 ac_cnn_expneg8(__m256 x) {
    /* 2^n built in the exponent bits: n within [-126, 127], so -x is kept to [-87.3, 88.3] */
    const __m256 t = _mm256_min_ps(_mm256_max_ps(_mm256_sub_ps(_mm256_setzero_ps(), x), _mm256_set1_ps(-87.3f)),
                                   _mm256_set1_ps(88.3f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(t, _mm256_set1_ps(SILU_LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(SILU_LN2_HI), t);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(SILU_LN2_LO), r);
    __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(SILU_P0), r, _mm256_set1_ps(SILU_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(SILU_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(SILU_P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(SILU_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(SILU_P5));
    const __m256 pow2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
    const __m256 e = _mm256_mul_ps(_mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f)), pow2);
    /* past the clamp above e^-x is infinite: x / (1 + e^-x) a zero, not x / e^88.3 */
    return _mm256_blendv_ps(e, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(x, _mm256_set1_ps(-88.3f), _CMP_LT_OQ));
}

static inline __attribute__((always_inline)) __m256 ac_cnn_silu8(__m256 x) {
    return _mm256_div_ps(x, _mm256_add_ps(ac_cnn_expneg8(x), _mm256_set1_ps(1.0f)));
}
#endif

static inline float ac_cnn_silu1(float x) { return x / (1.0f + expf(-x)); }

/* x[i] = silu(x[i]) for i < n. */
static inline void ac_cnn_silu_inplace(float *x, size_t n) {
    size_t i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, ac_cnn_silu16(_mm512_loadu_ps(x + i)));
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(x + i, m, ac_cnn_silu16(_mm512_maskz_loadu_ps(m, x + i)));
        i = n;
    }
#elif defined(__AVX2__) && defined(__FMA__)
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, ac_cnn_silu8(_mm256_loadu_ps(x + i)));
#endif
    for (; i < n; i++) x[i] = ac_cnn_silu1(x[i]);
}

/* y[i] = 1 / (1 + e^-x[i]) (LOGISTIC) for i < n, within a few ulp as SiLU. */
static inline void ac_cnn_sigmoid(const float *x, float *y, size_t n) {
    size_t i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_add_ps(ac_cnn_expneg16(_mm512_loadu_ps(x + i)), _mm512_set1_ps(1.0f))));
#elif defined(__AVX2__) && defined(__FMA__)
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_add_ps(ac_cnn_expneg8(_mm256_loadu_ps(x + i)), _mm256_set1_ps(1.0f))));
#endif
    for (; i < n; i++) y[i] = 1.0f / (1.0f + expf(-x[i]));
}

#endif
