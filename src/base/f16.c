/* f16.c: IEEE half precision <-> float32 (common.h), one value at a time in plain C and n at a time with
 * F16C where the build has it. An instruction-set file (Makefile ISA_FILES): the installed library
 * picks the F16C variant at load time on a CPU that has it, so reading a float16 feature cache or
 * model costs the same there as in a -march=native build. */
#include "attncap/common.h"

#include <stdint.h>
#include <string.h>

uint16_t ac_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t mant = x & 0x7fffff;
    if (((x >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0)); /* inf/nan */
    if (exp >= 31) return (uint16_t)(sign | 0x7c00);                                      /* overflow */
    if (exp <= 0) {                                                                       /* subnormal */
        if (exp < -10) return (uint16_t)sign;
        mant |= 0x800000;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)exp << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++; /* may carry into exponent: correct */
    return (uint16_t)half;
}

float ac_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, x;
    if (exp == 0) {
        if (mant == 0) {
            x = sign;
        } else { /* subnormal: normalise */
            exp = 127 - 15 + 1;
            while (!(mant & 0x400)) mant <<= 1, exp--;
            x = sign | (exp << 23) | ((mant & 0x3ff) << 13);
        }
    } else if (exp == 31) {
        x = sign | 0x7f800000 | (mant << 13);
    } else {
        x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

#if defined(__F16C__) && defined(__AVX2__)
#include <immintrin.h>
/* 8 halves -> 8 floats with vcvtph2ps, exact for every finite half; a group of 8 holding an
 * infinity or a NaN (exponent 31: vcvtph2ps would quiet a signalling NaN), and the tail, go through
 * ac_f16_to_f32. */
void ac_f16_to_f32_n(const void *src, float *dst, size_t n) {
    const uint8_t *p = src;
    for (size_t i = 0; i < n;) {
        if (i + 8 <= n) {
            const __m128i h = _mm_loadu_si128((const __m128i *)(p + 2 * i));
            const __m128i e = _mm_and_si128(h, _mm_set1_epi16(0x7c00));
            if (!_mm_movemask_epi8(_mm_cmpeq_epi16(e, _mm_set1_epi16(0x7c00)))) {
                _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
                i += 8;
                continue;
            }
        }
        for (const size_t end = i + 8 < n ? i + 8 : n; i < end; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            dst[i] = ac_f16_to_f32(h);
        }
    }
}

/* 8 floats -> 8 halves with vcvtps2ph, rounding to nearest even as ac_f32_to_f16 does (an f32
 * subnormal is +-0 either way); a group holding an infinity or a NaN (ac_f32_to_f16 gives every
 * NaN one quiet payload), and the tail, go through ac_f32_to_f16. */
void ac_f32_to_f16_n(const float *src, uint16_t *dst, size_t n) {
    for (size_t i = 0; i < n;) {
        if (i + 8 <= n) {
            const __m256 f = _mm256_loadu_ps(src + i);
            const __m256i e = _mm256_and_si256(_mm256_castps_si256(f), _mm256_set1_epi32(0x7f800000));
            if (!_mm256_movemask_epi8(_mm256_cmpeq_epi32(e, _mm256_set1_epi32(0x7f800000)))) {
                _mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
                i += 8;
                continue;
            }
        }
        for (const size_t end = i + 8 < n ? i + 8 : n; i < end; i++) dst[i] = ac_f32_to_f16(src[i]);
    }
}
#else
void ac_f16_to_f32_n(const void *src, float *dst, size_t n) {
    const uint8_t *p = src;
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        dst[i] = ac_f16_to_f32(h);
    }
}

void ac_f32_to_f16_n(const float *src, uint16_t *dst, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = ac_f32_to_f16(src[i]);
}
#endif
