/* cnn_int8_simd.h: the integer path's vector requantization (TFLite's MultiplyByQuantizedMultiplier on
 * 16 or 8 lanes, then the zero point and the clamp), shared by its kernel files. Inline, each with
 * its own target: the files are built for baseline x86-64 and choose at run time (ac_i8_isa). Not a
 * public header. */
#ifndef ATTNCAP_CNN_INT8_SIMD_H
#define ATTNCAP_CNN_INT8_SIMD_H
#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define I8_X86 1
#endif

#if defined(I8_X86)
/* 16 lanes of ac_i8_mbqm + zp + clamp. SaturatingRoundingDoublingHighMul is floor((x*m + 2^30) / 2^31)
 * for every x and m >= 0 (the nudge 1 - 2^30 with truncation toward zero of a negative product is the
 * same floor); its value fits 32 bits, whose low half a logical 64-bit shift gives as well. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static inline __m512i mbqm16(__m512i x, __m512i m, __m512i ls, __m512i rs) {
    x = _mm512_sllv_epi32(x, ls);
    const __m512i half = _mm512_set1_epi64(1LL << 30);
    __m512i ev = _mm512_srli_epi64(_mm512_add_epi64(_mm512_mul_epi32(x, m), half), 31);
    __m512i od = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), _mm512_srli_epi64(m, 32)), half);
    od = _mm512_slli_epi64(od, 1); /* bits 31..62 into the high half, which the blend takes */
    __m512i h = _mm512_mask_blend_epi32(0xAAAA, ev, od);
    const __m512i mask = _mm512_sub_epi32(_mm512_sllv_epi32(_mm512_set1_epi32(1), rs), _mm512_set1_epi32(1));
    const __m512i rem = _mm512_and_si512(h, mask);
    const __m512i thr = _mm512_sub_epi32(_mm512_srli_epi32(mask, 1), _mm512_srai_epi32(h, 31));
    h = _mm512_srav_epi32(h, rs);
    return _mm512_mask_sub_epi32(h, _mm512_cmpgt_epi32_mask(rem, thr), h, _mm512_set1_epi32(-1));
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) static inline __m512i rq16(__m512i x, __m512i m, __m512i ls, __m512i rs,
                                                                       __m512i zp, __m512i lo, __m512i hi) {
    const __m512i h = _mm512_add_epi32(mbqm16(x, m, ls, rs), zp);
    return _mm512_min_epi32(_mm512_max_epi32(h, lo), hi);
}

/* mbqm16 on 8 lanes (AVX2: a blend for the mask, a compare's -1 for the rounding step). */
__attribute__((target("avx2"))) static inline __m256i mbqm8(__m256i x, __m256i m, __m256i ls, __m256i rs) {
    x = _mm256_sllv_epi32(x, ls);
    const __m256i half = _mm256_set1_epi64x(1LL << 30), one = _mm256_set1_epi32(1);
    const __m256i ev = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(x, m), half), 31);
    __m256i od = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), _mm256_srli_epi64(m, 32)), half);
    od = _mm256_slli_epi64(od, 1); /* bits 31..62 into the high half, which the blend takes */
    __m256i h = _mm256_blend_epi32(ev, od, 0xAA);
    const __m256i mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, rs), one);
    const __m256i rem = _mm256_and_si256(h, mask);
    const __m256i thr = _mm256_sub_epi32(_mm256_srli_epi32(mask, 1), _mm256_srai_epi32(h, 31));
    h = _mm256_srav_epi32(h, rs);
    return _mm256_sub_epi32(h, _mm256_cmpgt_epi32(rem, thr));
}

__attribute__((target("avx2"))) static inline __m256i rq8(__m256i x, __m256i m, __m256i ls, __m256i rs, __m256i zp,
                                                        __m256i lo, __m256i hi) {
    const __m256i h = _mm256_add_epi32(mbqm8(x, m, ls, rs), zp);
    return _mm256_min_epi32(_mm256_max_epi32(h, lo), hi);
}

/* 8 int32 lanes in 0..255 stored as 8 bytes. */
__attribute__((target("avx2"))) static inline void store8_u8(uint8_t *out, __m256i v) {
    const __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64((__m128i *)out, _mm_packus_epi16(w, w));
}

#endif
#endif
