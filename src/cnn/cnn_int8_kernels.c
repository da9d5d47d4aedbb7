/* cnn_int8_kernels.c: the integer kernels of AC_PRECISION_INT8 (cnn_int8_internal.h). Every kernel
 * computes TFLite's reference integers exactly; the vector paths only change how fast. The product
 * kernels are chosen at run time: AVX512-VNNI (`vpdpbusd` on 512 bits), AVX-VNNI (the same on 256
 * bits), AVX2 (16-bit products), else plain C; the product may end in floats instead (a float graph's
 * convolutions, cnn_q8.c). The input's quantization and the patches' layout (im2col) are
 * cnn_int8_layout.c's, the depthwise convolution cnn_int8_depthwise.c's. */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "cnn_int8_internal.h"
#include "cnn_int8_simd.h"

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
    const ac_i8_fout *f; /* float output (ac_i8_gemm_float) instead of the requantization, or NULL */
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
    if (j->f) { /* fmaf: the vector kernels' fused multiply-add, so the same bits */
        const ac_i8_fout *f = j->f;
        float *o = f->c + (size_t)r * f->ldc + c0;
        for (int q = 0; q < n; q++) {
            const float y = fmaf((float)v[q], f->scale[c0 + q], f->bias ? f->bias[c0 + q] : 0.0f);
            o[q] = y < f->lo ? f->lo : y > f->hi ? f->hi : y;
        }
        if (f->then) f->then(f->ctx, f->c, f->ldc, r, 1, c0, n);
        return;
    }
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

/* The float output of kern512's sums: rows [r0, r0 + nr) x nb panels from p0, as requant_store's. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void float_store_512(const gemm_job *j, int32_t (*sums)[32], const int32_t *rs,
                                                                        int r0, int nr, int p0, int nb) {
    const ac_i8_fout *f = j->f;
    const ac_i8_gemm_w *w = j->w;
    const __m512 lo = _mm512_set1_ps(f->lo), hi = _mm512_set1_ps(f->hi);
    for (int p = 0; p < nb; p++) {
        const int c0 = (p0 + p) * 16, n = w->n - c0 < 16 ? w->n - c0 : 16;
        const __mmask16 km = n == 16 ? 0xffff : (__mmask16)((1u << n) - 1);
        const __m512i col = _mm512_loadu_si512(w->col + c0); /* col and scale padded to np */
        const __m512 sc = _mm512_maskz_loadu_ps(km, f->scale + c0), b = f->bias ? _mm512_maskz_loadu_ps(km, f->bias + c0) : _mm512_setzero_ps();
        for (int i = 0; i < nr; i++) {
            const __m512i v = _mm512_add_epi32(_mm512_add_epi32(_mm512_load_si512(sums[i] + p * 16), col), _mm512_set1_epi32(rs[i]));
            const __m512 y = _mm512_min_ps(_mm512_max_ps(_mm512_fmadd_ps(_mm512_cvtepi32_ps(v), sc, b), lo), hi);
            float *o = f->c + (size_t)(r0 + i) * f->ldc + c0;
            if (n == 16) _mm512_storeu_ps(o, y); /* a masked store would not forward to then's loads */
            else _mm512_mask_storeu_ps(o, km, y);
        }
    }
    if (f->then) {
        const int c0 = p0 * 16, n = w->n - c0 < 16 * nb ? w->n - c0 : 16 * nb;
        f->then(f->ctx, f->c, f->ldc, r0, nr, c0, n);
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
        if (j->f) {                                                                                                       \
            float_store_512(j, sums, rs, r0, nr, p0, NB);                                                                 \
            return;                                                                                                       \
        }                                                                                                                 \
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
    const ac_i8_requant *rq = j->rq; /* NULL for a float output: requant_store's */
    const __m256i zero = _mm256_setzero_si256(), zp = _mm256_set1_epi32(rq ? rq->zp : 0), lo = _mm256_set1_epi32(rq ? rq->lo : 0),
                  hi = _mm256_set1_epi32(rq ? rq->hi : 0);
    __m256i col0 = zero, col1 = zero, m0 = zero, m1 = zero, ls0 = zero, ls1 = zero, rs0 = zero, rs1 = zero;
    if (n == 16 && rq) {
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
            if (n == 16 && !j->sum && rq) { /* a whole panel, no residual: requantized and stored here */
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

static void gemm_run(gemm_job *j, ac_pool *pool);

void ac_i8_gemm_add(int m, const uint8_t *a, int lda, const ac_i8_gemm_w *w, const ac_i8_requant *rq, uint8_t *c, int ldc,
                    const ac_i8_add *sum, const uint8_t *other, ac_pool *pool) {
    gemm_job j = {m, lda, ldc, ac_i8_isa(), 1, a, w, rq, c, sum, other, NULL};
    gemm_run(&j, pool);
}

void ac_i8_gemm_float(int m, const uint8_t *a, int lda, const ac_i8_gemm_w *w, const ac_i8_fout *f, ac_pool *pool) {
    gemm_job j = {m, lda, f->ldc, ac_i8_isa(), 1, a, w, NULL, NULL, NULL, NULL, f};
    gemm_run(&j, pool);
}

static void gemm_run(gemm_job *jp, ac_pool *pool) {
    gemm_job j = *jp;
    const int m = j.m;
    const ac_i8_gemm_w *w = j.w;
    const ac_i8_add *sum = j.sum;
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

/* ---- add, pools (depthwise: cnn_int8_depthwise.c) ---- */

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
