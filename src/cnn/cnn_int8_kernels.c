/* cnn_int8_kernels.c: the integer kernels of AC_PRECISION_INT8 (cnn_int8_internal.h). Every kernel
 * computes TFLite's reference integers exactly; the vector paths only change how fast. The product
 * kernels are chosen at run time: AVX512-VNNI (`vpdpbusd` on 512 bits), AVX-VNNI (the same on 256
 * bits), AVX2 (16-bit products), else plain C. The input's quantization and the patches' layout
 * (im2col) are cnn_int8_layout.c's. */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "cnn_int8_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define I8_X86 1
#endif

void ac_i8_quantize_multiplier(double real, int32_t *m, int *shift) {
    *m = 0, *shift = 0;
    if (real == 0.0) return;
    const double q = frexp(real, shift);
    int64_t qf = (int64_t)round(q * (double)(1LL << 31)); /* TfLiteRound: half away from zero */
    if (qf == (1LL << 31)) qf /= 2, ++*shift;
    if (*shift < -31) *shift = 0, qf = 0;
    *m = (int32_t)qf;
}

/* ---- which kernels ---- */

static int isa_cap = -1; /* ac_i8_set_isa's limit, -1 none */

/* The levels this CPU runs, one bit each. Not a ladder: AMD's Zen 4 has AVX512-VNNI without
 * AVX-VNNI (the VEX-encoded VPDPBUSD), Intel's Alder Lake the reverse. */
static int cpu_isas(void) {
    int set = 1 << AC_I8_ISA_C;
#if defined(I8_X86)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2")) return set;
    set |= 1 << AC_I8_ISA_AVX2;
    if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
        set |= 1 << AC_I8_ISA_AVX512VNNI;
    unsigned a, b, c, d; /* AVX-VNNI: CPUID.(7,1):EAX bit 4 (GCC's __builtin_cpu_supports may not know it) */
    __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(1));
    if (a >> 4 & 1) set |= 1 << AC_I8_ISA_AVXVNNI;
#endif
    return set;
}

static int isas(void) { /* asked once: CPUID traps to the hypervisor in a VM (microseconds) */
    static _Atomic int set = -1;
    int s = set;
    if (s < 0) set = s = cpu_isas();
    return s;
}

int ac_i8_isa_runs(int isa) { return isa >= AC_I8_ISA_C && isa <= AC_I8_ISA_AVX512VNNI && (isas() >> isa & 1); }

/* the highest level at most `cap` that this CPU runs (C always) */
static int best_up_to(int cap) {
    while (cap > AC_I8_ISA_C && !ac_i8_isa_runs(cap)) cap--;
    return cap;
}

int ac_i8_isa_best(void) { return best_up_to(AC_I8_ISA_AVX512VNNI); }

void ac_i8_set_isa(int isa) { isa_cap = isa; }

int ac_i8_isa(void) { return best_up_to(isa_cap >= 0 && isa_cap < AC_I8_ISA_AVX512VNNI ? isa_cap : AC_I8_ISA_AVX512VNNI); }

const char *ac_i8_isa_name(int isa) {
    static const char *const names[] = {"c", "avx2", "avx-vnni", "avx512-vnni"};
    return isa >= 0 && isa <= 3 ? names[isa] : "?";
}

/* ---- requantization ---- */

static void requant_c(int32_t *acc, int n, const ac_i8_requant *rq, int c0, uint8_t *out) {
    for (int j = 0; j < n; j++) {
        int32_t v = ac_i8_mbqm(acc[j], rq->mult[c0 + j], rq->shift[c0 + j]) + rq->zp;
        out[j] = (uint8_t)(v < rq->lo ? rq->lo : v > rq->hi ? rq->hi : v);
    }
}

#if defined(I8_X86)
/* 16 lanes of ac_i8_mbqm + zp + clamp. SaturatingRoundingDoublingHighMul is floor((x*m + 2^30) / 2^31)
 * for every x and m >= 0 (the nudge 1 - 2^30 with truncation toward zero of a negative product is the
 * same floor); its value fits 32 bits, whose low half a logical 64-bit shift gives as well. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static inline __m512i mbqm16(__m512i x, __m512i m, __m512i ls, __m512i rs) {
    x = _mm512_sllv_epi32(x, ls);
    const __m512i half = _mm512_set1_epi64(1LL << 30);
    __m512i ev = _mm512_srli_epi64(_mm512_add_epi64(_mm512_mul_epi32(x, m), half), 31);
    __m512i od = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), _mm512_srli_epi64(m, 32)), half);
    od = _mm512_slli_epi64(_mm512_srli_epi64(od, 31), 32);
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

/* 16 lanes of add1 (shifts <= 0, left shift 20: ac_i8_add_run checks before it calls). */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static inline __m512i add16(const ac_i8_add *p, __m512i a, __m512i b) {
    const __m512i zero = _mm512_setzero_si512();
    a = _mm512_slli_epi32(_mm512_sub_epi32(a, _mm512_set1_epi32(p->zx1)), 20);
    b = _mm512_slli_epi32(_mm512_sub_epi32(b, _mm512_set1_epi32(p->zx2)), 20);
    const __m512i s = _mm512_add_epi32(mbqm16(a, _mm512_set1_epi32(p->m1), zero, _mm512_set1_epi32(-p->s1)),
                                       mbqm16(b, _mm512_set1_epi32(p->m2), zero, _mm512_set1_epi32(-p->s2)));
    const __m512i v = _mm512_add_epi32(mbqm16(s, _mm512_set1_epi32(p->mo), zero, _mm512_set1_epi32(-p->so)), _mm512_set1_epi32(p->zo));
    return _mm512_min_epi32(_mm512_max_epi32(v, _mm512_set1_epi32(p->lo)), _mm512_set1_epi32(p->hi));
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) static void requant_512(int32_t *acc, int n, const ac_i8_requant *rq, int c0,
                                                                    uint8_t *out) {
    const __m512i zp = _mm512_set1_epi32(rq->zp), lo = _mm512_set1_epi32(rq->lo), hi = _mm512_set1_epi32(rq->hi);
    const __m512i zero = _mm512_setzero_si512();
    for (int j = 0; j < n; j += 16) {
        const __mmask16 k = n - j >= 16 ? 0xffff : (__mmask16)((1u << (n - j)) - 1);
        const __m512i sh = _mm512_maskz_loadu_epi32(k, rq->shift + c0 + j);
        const __m512i v = rq16(_mm512_maskz_loadu_epi32(k, acc + j), _mm512_maskz_loadu_epi32(k, rq->mult + c0 + j),
                               _mm512_max_epi32(sh, zero), _mm512_max_epi32(_mm512_sub_epi32(zero, sh), zero), zp, lo, hi);
        _mm_mask_storeu_epi8(out + j, k, _mm512_cvtepi32_epi8(v));
    }
}

/* mbqm16 on 8 lanes (AVX2: a blend for the mask, a compare's -1 for the rounding step). */
__attribute__((target("avx2"))) static inline __m256i mbqm8(__m256i x, __m256i m, __m256i ls, __m256i rs) {
    x = _mm256_sllv_epi32(x, ls);
    const __m256i half = _mm256_set1_epi64x(1LL << 30), one = _mm256_set1_epi32(1);
    const __m256i ev = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(x, m), half), 31);
    __m256i od = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), _mm256_srli_epi64(m, 32)), half);
    od = _mm256_slli_epi64(_mm256_srli_epi64(od, 31), 32);
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

__attribute__((target("avx2"))) static void requant_256(int32_t *acc, int n, const ac_i8_requant *rq, int c0, uint8_t *out) {
    const __m256i zp = _mm256_set1_epi32(rq->zp), lo = _mm256_set1_epi32(rq->lo), hi = _mm256_set1_epi32(rq->hi);
    const __m256i zero = _mm256_setzero_si256();
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        const __m256i sh = _mm256_loadu_si256((const __m256i *)(rq->shift + c0 + j));
        store8_u8(out + j, rq8(_mm256_loadu_si256((const __m256i *)(acc + j)),
                               _mm256_loadu_si256((const __m256i *)(rq->mult + c0 + j)), _mm256_max_epi32(sh, zero),
                               _mm256_max_epi32(_mm256_sub_epi32(zero, sh), zero), zp, lo, hi));
    }
    if (j < n) requant_c(acc + j, n - j, rq, c0 + j, out + j);
}
#endif

void ac_i8_requant_row(int32_t *acc, int n, const ac_i8_requant *rq, int c0, uint8_t *out) {
#if defined(I8_X86)
    if (ac_i8_isa() == AC_I8_ISA_AVX512VNNI) {
        requant_512(acc, n, rq, c0, out);
        return;
    }
    if (ac_i8_isa() >= AC_I8_ISA_AVX2) {
        requant_256(acc, n, rq, c0, out);
        return;
    }
#endif
    requant_c(acc, n, rq, c0, out);
}

/* ---- the product ---- */

typedef struct gemm_job {
    int m, lda, ldc, isa;
    int col_groups; /* tasks t cover row part t / col_groups and panel part t % col_groups */
    const uint8_t *a;
    const ac_i8_gemm_w *w;
    const ac_i8_requant *rq;
    uint8_t *c;
    const ac_i8_add *sum; /* a residual ADD of other (laid out as c), or NULL */
    const uint8_t *other;
} gemm_job;

/* One element of ADD (add.cc's reference AddElementwise), stored values in and out. */
static inline uint8_t add1(const ac_i8_add *p, int32_t a, int32_t b) {
    const int32_t x1 = (a - p->zx1) * (1 << p->left_shift), x2 = (b - p->zx2) * (1 << p->left_shift);
    const int32_t s = ac_i8_mbqm(x1, p->m1, p->s1) + ac_i8_mbqm(x2, p->m2, p->s2);
    const int32_t v = ac_i8_mbqm(s, p->mo, p->so) + p->zo;
    return (uint8_t)(v < p->lo ? p->lo : v > p->hi ? p->hi : v);
}

static int add_vector_ok(const ac_i8_add *p) { return p->left_shift == 20 && p->s1 <= 0 && p->s2 <= 0 && p->so <= 0; }

#if defined(I8_X86)
/* add1 on 8 lanes of bytes (add_vector_ok's shifts), o may be a or b. */
__attribute__((target("avx2"))) static inline void add8(const ac_i8_add *p, const uint8_t *a, const uint8_t *b, uint8_t *o) {
    const __m256i zero = _mm256_setzero_si256();
    const __m256i x1 = _mm256_slli_epi32(_mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)a)), _mm256_set1_epi32(p->zx1)), 20);
    const __m256i x2 = _mm256_slli_epi32(_mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)b)), _mm256_set1_epi32(p->zx2)), 20);
    const __m256i s = _mm256_add_epi32(mbqm8(x1, _mm256_set1_epi32(p->m1), zero, _mm256_set1_epi32(-p->s1)),
                                       mbqm8(x2, _mm256_set1_epi32(p->m2), zero, _mm256_set1_epi32(-p->s2)));
    const __m256i v = _mm256_add_epi32(mbqm8(s, _mm256_set1_epi32(p->mo), zero, _mm256_set1_epi32(-p->so)), _mm256_set1_epi32(p->zo));
    store8_u8(o, _mm256_min_epi32(_mm256_max_epi32(v, _mm256_set1_epi32(p->lo)), _mm256_set1_epi32(p->hi)));
}
#endif

/* The requantization into out (row r, columns c0..c0+n), then the residual ADD if any. */
static void requant_store(const gemm_job *j, int32_t *v, int n, int r, int c0) {
    uint8_t *out = j->c + (size_t)r * j->ldc + c0;
    const uint8_t *other = j->sum ? j->other + (size_t)r * j->ldc + c0 : NULL;
    int q = 0;
#if defined(I8_X86)
    if (j->isa >= AC_I8_ISA_AVX2) {
        requant_256(v, n, j->rq, c0, out);
        if (j->sum && add_vector_ok(j->sum))
            for (; q + 8 <= n; q += 8) add8(j->sum, out + q, other + q, out + q);
    } else
#endif
        requant_c(v, n, j->rq, c0, out);
    for (; j->sum && q < n; q++) out[q] = add1(j->sum, out[q], other[q]);
}

enum { MR = 8 };

static int32_t row_sum(const uint8_t *a, int k) {
    int32_t s = 0;
    for (int i = 0; i < k; i++) s += a[i];
    return s;
}

/* Rows [r0, r1) in plain C: the reference the vector kernels must equal. */
static void gemm_rows_c(const gemm_job *j, int r0, int r1, int p0, int p1) {
    const ac_i8_gemm_w *w = j->w;
    int32_t acc[16];
    for (int r = r0; r < r1; r++) {
        const uint8_t *a = j->a + (size_t)r * j->lda;
        const int32_t rs = w->d ? -w->d * row_sum(a, w->k) : 0;
        for (int p = p0; p < p1; p++) {
            const int8_t *b = w->packed + (size_t)p * w->kp * 16;
            for (int q = 0; q < 16; q++) acc[q] = w->col[p * 16 + q] + rs;
            for (int k = 0; k < w->k; k++)
                for (int q = 0; q < 16; q++) acc[q] += (int32_t)a[k] * b[(k >> 2) * 64 + q * 4 + (k & 3)];
            const int n = w->n - p * 16 < 16 ? w->n - p * 16 : 16;
            requant_store(j, acc, n, r, p * 16);
        }
    }
}

#if defined(I8_X86)
/* Four bytes of row a at k (k + 4 may pass the row's end k_end: the missing bytes read as 0). */
static inline int32_t quad(const uint8_t *a, int k, int k_end) {
    int32_t v = 0;
    memcpy(&v, a + k, k + 4 <= k_end ? 4 : (size_t)(k_end - k));
    return v;
}

/* Each row's sum times -d (rows of a block, once for all its panels). */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void row_sums_512(const uint8_t *const *ar, int k, int32_t d, int32_t *rs) {
    for (int i = 0; i < MR; i++) {
        if (!d) {
            rs[i] = 0;
            continue;
        }
        __m512i acc = _mm512_setzero_si512();
        for (int p = 0; p < k; p += 64) {
            const __mmask64 km = k - p >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (k - p)) - 1);
            acc = _mm512_add_epi64(acc, _mm512_sad_epu8(_mm512_maskz_loadu_epi8(km, ar[i] + p), _mm512_setzero_si512()));
        }
        rs[i] = -d * (int32_t)_mm512_reduce_add_epi64(acc);
    }
}

/* MR = 8 rows (ar: row pointers; rows past nr repeat a valid one, computed, not stored) x NB (1 or 2)
 * panels of 16 columns from panel p0, on AVX512-VNNI: 16 named accumulators (GCC spills an array of
 * them), each broadcast of 4 bytes of a row feeding NB `vpdpbusd`. The sums go through memory to the
 * requantization. */
#define I8_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define I8_DECL(i) __m512i c##i##0 = _mm512_setzero_si512(), c##i##1 = _mm512_setzero_si512(); const uint8_t *a##i = ar[i];
#define I8_STEP(i)                                                                                                        \
    {                                                                                                                     \
        const __m512i v = _mm512_set1_epi32(QUAD(a##i));                                                                  \
        c##i##0 = _mm512_dpbusd_epi32(c##i##0, v, b0);                                                                    \
        if (nb > 1) c##i##1 = _mm512_dpbusd_epi32(c##i##1, v, b1);                                                        \
    }
#define I8_STORE(i) _mm512_store_si512(sums[i], c##i##0), _mm512_store_si512(sums[i] + 16, c##i##1);
#define I8_KERNEL_512(NB)                                                                                                  \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) static void kern512_##NB(                            \
        const gemm_job *j, const uint8_t *const *ar, const int32_t *rs, int r0, int nr, int p0) {                       \
        const ac_i8_gemm_w *w = j->w;                                                                                     \
        const int nb = NB;                                                                                                \
        I8_ROWS(I8_DECL)                                                                                                  \
        const int8_t *b = w->packed + (size_t)p0 * w->kp * 16;                                                           \
        const size_t pstride = (size_t)w->kp * 16;                                                                        \
        const int kfull = w->k & ~3;                                                                                      \
        int k = 0;                                                                                                        \
        for (; k < kfull; k += 4, b += 64) {                                                                              \
            const __m512i b0 = _mm512_loadu_si512(b), b1 = NB > 1 ? _mm512_loadu_si512(b + pstride) : b0;                 \
            I8_ROWS(I8_STEP)                                                                                              \
        }                                                                                                                 \
        if (k < w->k) {                                                                                                   \
            const __m512i b0 = _mm512_loadu_si512(b), b1 = NB > 1 ? _mm512_loadu_si512(b + pstride) : b0;                 \
            I8_ROWS(I8_STEP_TAIL)                                                                                         \
        }                                                                                                                 \
        int32_t sums[MR][32] __attribute__((aligned(64)));                                                                \
        I8_ROWS(I8_STORE)                                                                                                 \
        const ac_i8_requant *rq = j->rq;                                                                                  \
        const __m512i zp = _mm512_set1_epi32(rq->zp), lo = _mm512_set1_epi32(rq->lo), hi = _mm512_set1_epi32(rq->hi);    \
        const __m512i zero = _mm512_setzero_si512();                                                                      \
        for (int p = 0; p < NB; p++) {                                                                                    \
            const int c0 = (p0 + p) * 16, n = w->n - c0 < 16 ? w->n - c0 : 16;                                            \
            const __mmask16 km = n == 16 ? 0xffff : (__mmask16)((1u << n) - 1);                                           \
            const __m512i col = _mm512_loadu_si512(w->col + c0), m = _mm512_loadu_si512(rq->mult + c0);                   \
            const __m512i sh = _mm512_loadu_si512(rq->shift + c0);                                                        \
            const __m512i ls = _mm512_max_epi32(sh, zero), rsh = _mm512_max_epi32(_mm512_sub_epi32(zero, sh), zero);      \
            for (int i = 0; i < nr; i++) {                                                                                \
                const __m512i v = _mm512_add_epi32(_mm512_add_epi32(_mm512_load_si512(sums[i] + p * 16), col),            \
                                                   _mm512_set1_epi32(rs[i]));                                             \
                __m512i y = rq16(v, m, ls, rsh, zp, lo, hi);                                                              \
                if (j->sum)                                                                                               \
                    y = add16(j->sum, y, _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(km, j->other + (size_t)(r0 + i) * j->ldc + c0))); \
                _mm_mask_storeu_epi8(j->c + (size_t)(r0 + i) * j->ldc + c0, km, _mm512_cvtepi32_epi8(y));                 \
            }                                                                                                             \
        }                                                                                                                 \
    }
/* four bytes of a row at k: the main loop's whole quads; the tail's (past the row's end: 0) */
static inline int32_t quad4(const uint8_t *a) {
    int32_t v;
    memcpy(&v, a, 4);
    return v;
}
#define QUAD(p) quad4((p) + k)
#define I8_STEP_TAIL(i)                                                                                                   \
    {                                                                                                                     \
        const __m512i v = _mm512_set1_epi32(quad(a##i, k, w->k));                                                         \
        c##i##0 = _mm512_dpbusd_epi32(c##i##0, v, b0);                                                                    \
        if (nb > 1) c##i##1 = _mm512_dpbusd_epi32(c##i##1, v, b1);                                                        \
    }
I8_KERNEL_512(1)
I8_KERNEL_512(2)

/* The same on 256 bits (AVX-VNNI, `{vex} vpdpbusd`): a panel is two vectors; MR rows x 1 panel. The
 * requantization runs in C on the stored sums (the AVX-512 epilogue is not available here). */
__attribute__((target("avx2,avxvnni"))) static void kern256(const gemm_job *j, const uint8_t *const *ar, const int32_t *rs,
                                                         int r0, int nr, int p0) {
    const ac_i8_gemm_w *w = j->w;
    __m256i acc[MR][2];
    for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = _mm256_setzero_si256();
    const int8_t *b = w->packed + (size_t)p0 * w->kp * 16;
    const int kfull = w->k & ~3;
    for (int k = 0; k < w->k; k += 4, b += 64) {
        const __m256i b0 = _mm256_loadu_si256((const __m256i *)b), b1 = _mm256_loadu_si256((const __m256i *)(b + 32));
        for (int i = 0; i < MR; i++) { /* whole quads without quad()'s variable-length copy, a call */
            const __m256i av = _mm256_set1_epi32(k < kfull ? quad4(ar[i] + k) : quad(ar[i], k, w->k));
            acc[i][0] = _mm256_dpbusd_avx_epi32(acc[i][0], av, b0);
            acc[i][1] = _mm256_dpbusd_avx_epi32(acc[i][1], av, b1);
        }
    }
    const int c0 = p0 * 16, n = w->n - c0 < 16 ? w->n - c0 : 16;
    int32_t v[16];
    for (int i = 0; i < nr; i++) {
        _mm256_storeu_si256((__m256i *)v, acc[i][0]);
        _mm256_storeu_si256((__m256i *)(v + 8), acc[i][1]);
        for (int q = 0; q < n; q++) v[q] += w->col[c0 + q] + rs[i];
        requant_store(j, v, n, r0 + i, c0);
    }
}
#endif

/* One step of kern_avx2: the four bytes Q0 of one row and Q1 of another, widened to 16 bits, times the
 * panel's 4 x 16 weights at b. The accumulators are named (an array of them stays in memory). */
#define AVX2_MADD(q, Q)                                                                                                   \
    {                                                                                                                     \
        const __m256i bw = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b + 16 * q)));                        \
        s0##q = _mm256_add_epi32(s0##q, _mm256_madd_epi16(x0, bw));                                                       \
        s1##q = _mm256_add_epi32(s1##q, _mm256_madd_epi16(x1, bw));                                                       \
    }
#define AVX2_STEP(Q0, Q1)                                                                                                 \
    {                                                                                                                     \
        const __m256i x0 = _mm256_cvtepu8_epi16(_mm_set1_epi32(Q0)), x1 = _mm256_cvtepu8_epi16(_mm_set1_epi32(Q1));      \
        AVX2_MADD(0, Q) AVX2_MADD(1, Q) AVX2_MADD(2, Q) AVX2_MADD(3, Q)                                                   \
    }

/* AVX2 without VNNI: u8 x s8 as 16-bit products (`vpmaddwd`: `vpmaddubsw` would saturate), two
 * rows at a time over one panel; each 32-bit lane holds half a column's sum until the end. */
__attribute__((target("avx2"))) static void kern_avx2(const gemm_job *j, const uint8_t *const *ar, const int32_t *rs, int r0,
                                                      int nr, int p0) {
    const ac_i8_gemm_w *w = j->w;
    const int c0 = p0 * 16, n = w->n - c0 < 16 ? w->n - c0 : 16, kfull = w->k & ~3;
    /* the panel's requantization, for every row (read only for a whole panel) */
    const ac_i8_requant *rq = j->rq;
    const __m256i zero = _mm256_setzero_si256(), zp = _mm256_set1_epi32(rq->zp), lo = _mm256_set1_epi32(rq->lo),
                  hi = _mm256_set1_epi32(rq->hi);
    __m256i col0 = zero, col1 = zero, m0 = zero, m1 = zero, ls0 = zero, ls1 = zero, rs0 = zero, rs1 = zero;
    if (n == 16) {
        const __m256i sh0 = _mm256_loadu_si256((const __m256i *)(rq->shift + c0));
        const __m256i sh1 = _mm256_loadu_si256((const __m256i *)(rq->shift + c0 + 8));
        col0 = _mm256_loadu_si256((const __m256i *)(w->col + c0)), col1 = _mm256_loadu_si256((const __m256i *)(w->col + c0 + 8));
        m0 = _mm256_loadu_si256((const __m256i *)(rq->mult + c0)), m1 = _mm256_loadu_si256((const __m256i *)(rq->mult + c0 + 8));
        ls0 = _mm256_max_epi32(sh0, zero), ls1 = _mm256_max_epi32(sh1, zero);
        rs0 = _mm256_max_epi32(_mm256_sub_epi32(zero, sh0), zero), rs1 = _mm256_max_epi32(_mm256_sub_epi32(zero, sh1), zero);
    }
    for (int i = 0; i < nr; i += 2) {
        const uint8_t *a0 = ar[i], *a1 = ar[i + 1 < MR ? i + 1 : i];
        __m256i s00 = _mm256_setzero_si256(), s01 = s00, s02 = s00, s03 = s00, s10 = s00, s11 = s00, s12 = s00, s13 = s00;
        const int8_t *b = w->packed + (size_t)p0 * w->kp * 16;
        int k = 0;
        for (; k < kfull; k += 4, b += 64) AVX2_STEP(quad4(a0 + k), quad4(a1 + k))
        if (k < w->k) AVX2_STEP(quad(a0, k, w->k), quad(a1, k, w->k)) /* the rows' last bytes */
        const __m256i acc[2][4] = {{s00, s01, s02, s03}, {s10, s11, s12, s13}};
        for (int h = 0; h < 2 && i + h < nr; h++) {
            /* each column's two half-sums added, in column order, plus its weights' and the row's terms */
            const __m256i r = _mm256_set1_epi32(rs[i + h]);
            __m256i v0 = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[h][0], acc[h][1]), 0xd8);
            __m256i v1 = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[h][2], acc[h][3]), 0xd8);
            if (n == 16 && !j->sum) { /* a whole panel, no residual: requantized and stored here */
                v0 = _mm256_add_epi32(_mm256_add_epi32(v0, col0), r), v1 = _mm256_add_epi32(_mm256_add_epi32(v1, col1), r);
                uint8_t *out = j->c + (size_t)(r0 + i + h) * j->ldc + c0;
                store8_u8(out, rq8(v0, m0, ls0, rs0, zp, lo, hi));
                store8_u8(out + 8, rq8(v1, m1, ls1, rs1, zp, lo, hi));
                continue;
            }
            int32_t v[16];
            _mm256_storeu_si256((__m256i *)v, v0);
            _mm256_storeu_si256((__m256i *)(v + 8), v1);
            for (int q = 0; q < n; q++) v[q] += w->col[c0 + q] + rs[i + h];
            requant_store(j, v, n, r0 + i + h, c0);
        }
    }
}

static void gemm_task(void *arg, int t, int n) {
    const gemm_job *j = arg;
    const int cg = j->col_groups, rn = n / cg, rt = t / cg, ct = t % cg, pairs = (j->w->np / 16 + 1) / 2;
    const int blocks = (j->m + MR - 1) / MR, b0 = (int)((long)blocks * rt / rn), b1 = (int)((long)blocks * (rt + 1) / rn);
    const int r0 = b0 * MR, r1 = b1 * MR < j->m ? b1 * MR : j->m;
    const int panels = j->w->np / 16, pa = 2 * (pairs * ct / cg), pb = 2 * (pairs * (ct + 1) / cg);
    const int p0 = pa, p1 = pb < panels ? pb : panels;
    if (r0 >= r1 || p0 >= p1) return;
#if defined(I8_X86)
    if (j->isa >= AC_I8_ISA_AVX2) {
        for (int r = r0; r < r1; r += MR) {
            const int nr = r1 - r < MR ? r1 - r : MR;
            const uint8_t *ar[MR];
            int32_t rs[MR];
            for (int i = 0; i < MR; i++) ar[i] = j->a + (size_t)(r + (i < nr ? i : nr - 1)) * j->lda;
            if (j->isa == AC_I8_ISA_AVX512VNNI) {
                row_sums_512(ar, j->w->k, j->w->d, rs);
                int p = p0;
                for (; p + 2 <= p1; p += 2) kern512_2(j, ar, rs, r, nr, p);
                if (p < p1) kern512_1(j, ar, rs, r, nr, p);
            } else {
                for (int i = 0; i < MR; i++) rs[i] = j->w->d ? -j->w->d * row_sum(ar[i], j->w->k) : 0;
                for (int p = p0; p < p1; p++)
                    if (j->isa == AC_I8_ISA_AVXVNNI) kern256(j, ar, rs, r, nr, p);
                    else kern_avx2(j, ar, rs, r, nr, p);
            }
        }
        return;
    }
#endif
    gemm_rows_c(j, r0, r1, p0, p1);
}

void ac_i8_gemm(int m, const uint8_t *a, int lda, const ac_i8_gemm_w *w, const ac_i8_requant *rq, uint8_t *c, int ldc,
                ac_pool *pool) {
    ac_i8_gemm_add(m, a, lda, w, rq, c, ldc, NULL, NULL, pool);
}

void ac_i8_gemm_add(int m, const uint8_t *a, int lda, const ac_i8_gemm_w *w, const ac_i8_requant *rq, uint8_t *c, int ldc,
                    const ac_i8_add *sum, const uint8_t *other, ac_pool *pool) {
    gemm_job j = {m, lda, ldc, ac_i8_isa(), 1, a, w, rq, c, sum, other};
    if (sum && j.isa == AC_I8_ISA_AVX512VNNI && !add_vector_ok(sum)) j.isa = AC_I8_ISA_AVX2; /* its ADD in C */
    const int chunks = ac_pool_chunks(pool), blocks = (m + MR - 1) / MR, pairs = (w->np / 16 + 1) / 2;
    if (chunks <= 1 || (blocks < 2 && pairs < 2)) {
        gemm_task(&j, 0, 1);
        return;
    }
    /* few row blocks (the last layers: 7 x 7 pixels, 1280 columns): split the columns too */
    if (blocks < 4 * chunks) j.col_groups = pairs < 4 * chunks / blocks + 1 ? pairs : 4 * chunks / blocks + 1;
    const int rparts = blocks < chunks ? blocks : chunks;
    ac_pool_run_n(pool, gemm_task, &j, rparts * j.col_groups);
}

/* ---- depthwise, add, pools ---- */

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

typedef struct add_job {
    const ac_i8_add *p;
    const uint8_t *a, *b;
    uint8_t *o;
    size_t n;
} add_job;

/* MultiplyByQuantizedMultiplierSmallerThanOneExp: shift <= 0. */
static inline int32_t mbqm_small(int32_t x, int32_t m, int shift) { return ac_i8_mbqm(x, m, shift); }

static void add_task(void *arg, int t, int nt) {
    const add_job *j = arg;
    const ac_i8_add *p = j->p;
    const size_t i0 = j->n * (size_t)t / (size_t)nt, i1 = j->n * (size_t)(t + 1) / (size_t)nt;
    for (size_t i = i0; i < i1; i++) {
        const int32_t x1 = ((int32_t)j->a[i] - p->zx1) * (1 << p->left_shift);
        const int32_t x2 = ((int32_t)j->b[i] - p->zx2) * (1 << p->left_shift);
        const int32_t s = mbqm_small(x1, p->m1, p->s1) + mbqm_small(x2, p->m2, p->s2);
        const int32_t v = mbqm_small(s, p->mo, p->so) + p->zo;
        j->o[i] = (uint8_t)(v < p->lo ? p->lo : v > p->hi ? p->hi : v);
    }
}

#if defined(I8_X86)
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void add_task_512(void *arg, int t, int nt) {
    const add_job *j = arg;
    const ac_i8_add *p = j->p;
    const size_t i0 = j->n * (size_t)t / (size_t)nt, i1 = j->n * (size_t)(t + 1) / (size_t)nt;
    const __m512i zero = _mm512_setzero_si512(), z1 = _mm512_set1_epi32(p->zx1), z2 = _mm512_set1_epi32(p->zx2);
    const __m512i m1 = _mm512_set1_epi32(p->m1), m2 = _mm512_set1_epi32(p->m2), mo = _mm512_set1_epi32(p->mo);
    const __m512i r1 = _mm512_set1_epi32(-p->s1), r2 = _mm512_set1_epi32(-p->s2), ro = _mm512_set1_epi32(-p->so);
    const __m512i zo = _mm512_set1_epi32(p->zo), lo = _mm512_set1_epi32(p->lo), hi = _mm512_set1_epi32(p->hi);
    for (size_t i = i0; i < i1; i += 16) {
        const __mmask16 km = i1 - i >= 16 ? 0xffff : (__mmask16)((1u << (i1 - i)) - 1);
        const __m512i a = _mm512_slli_epi32(_mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(km, j->a + i)), z1), 20);
        const __m512i b = _mm512_slli_epi32(_mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(km, j->b + i)), z2), 20);
        const __m512i s = _mm512_add_epi32(mbqm16(a, m1, zero, r1), mbqm16(b, m2, zero, r2));
        const __m512i v = _mm512_add_epi32(mbqm16(s, mo, zero, ro), zo);
        _mm_mask_storeu_epi8(j->o + i, km, _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(v, lo), hi)));
    }
}
#endif

#if defined(I8_X86)
__attribute__((target("avx2"))) static void add_task_256(void *arg, int t, int nt) {
    const add_job *j = arg;
    const size_t i0 = j->n * (size_t)t / (size_t)nt, i1 = j->n * (size_t)(t + 1) / (size_t)nt;
    size_t i = i0;
    for (; i + 8 <= i1; i += 8) add8(j->p, j->a + i, j->b + i, j->o + i);
    for (; i < i1; i++) j->o[i] = add1(j->p, j->a[i], j->b[i]);
}
#endif

void ac_i8_add_run(const ac_i8_add *p, const uint8_t *a, const uint8_t *b, uint8_t *o, size_t n, ac_pool *pool) {
    add_job j = {p, a, b, o, n};
    void (*fn)(void *, int, int) = add_task;
#if defined(I8_X86)
    if (ac_i8_isa() == AC_I8_ISA_AVX512VNNI && add_vector_ok(p)) fn = add_task_512;
    else if (ac_i8_isa() >= AC_I8_ISA_AVX2 && add_vector_ok(p)) fn = add_task_256;
#endif
    if (!pool || n < 4096) fn(&j, 0, 1);
    else ac_pool_run(pool, fn, &j);
}

void ac_i8_pool(const ac_i8_geom *g, int is_max, int off, int32_t lo, int32_t hi, const uint8_t *in, uint8_t *out) {
    for (int oy = 0; oy < g->oh; oy++)
        for (int ox = 0; ox < g->ow; ox++)
            for (int c = 0; c < g->c; c++) {
                int32_t acc = is_max ? INT32_MIN : 0, cnt = 0;
                for (int ky = 0; ky < g->kh; ky++) {
                    const int y = oy * g->sh - g->pt + ky;
                    if (y < 0 || y >= g->h) continue;
                    for (int kx = 0; kx < g->kw; kx++) {
                        const int x = ox * g->sw - g->pl + kx;
                        if (x < 0 || x >= g->w) continue;
                        const int32_t v = (int32_t)in[((size_t)y * g->w + x) * g->c + c] - off; /* q */
                        acc = is_max ? (v > acc ? v : acc) : acc + v;
                        cnt++;
                    }
                }
                if (!is_max && cnt) /* uint8: (acc + n/2) / n; int8: half away from zero */
                    acc = acc >= 0 || !off ? (acc + cnt / 2) / cnt : (acc - cnt / 2) / cnt;
                acc += off;
                out[((size_t)oy * g->ow + ox) * g->c + c] = (uint8_t)(acc < lo ? lo : acc > hi ? hi : acc);
            }
}
