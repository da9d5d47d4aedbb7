/* smm.c: C[M, N] += A[M, K] B[K, N] for few rows M (the recurrence's per-step products, M = captions
 * still running, <= 32) and a large B (the weights). A general sgemm packs all of B into its own
 * layout on every call, which for M this small costs more than the arithmetic. Here B is packed once
 * per training step (ac_smm_pack, shared by all time steps and both directions of the recurrence),
 * and the kernel streams it: a panel of 64 columns (4 AVX-512 vectors) against 6 rows of A at a time,
 * 24 accumulators in registers, one sequential pass over K. Column tails use masked stores, so any N
 * works. With AVX2, FMA and F16C (no AVX-512) the same kernels run on 16-column tiles (32 for the
 * half-precision product of 1-3 rows), with the same bits; without either, plain C loops. */
#pragma GCC optimize("O3")
#include <cblas.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decoder_internal.h"

/* Packed B: panels of 64 columns, each K x 64 contiguous (the last panel zero-padded), so the kernel
 * reads memory sequentially. Packing is done once per training step for all time steps. */
size_t ac_smm_packed_size(int K, int N) { return (size_t)((N + 63) / 64) * 64 * (size_t)K; }

void ac_smm_pack(int K, int N, const float *B, int ldb, int trans, float *Bp) {
    for (int p = 0; p < (N + 63) / 64; p++) {
        float *dst = Bp + (size_t)p * 64 * K;
        const int n0 = 64 * p, nc = N - n0 < 64 ? N - n0 : 64;
        if (!trans) {
            for (int k = 0; k < K; k++) {
                const float *src = B + (size_t)k * ldb + n0;
                float *d = dst + (size_t)k * 64;
                for (int j = 0; j < nc; j++) d[j] = src[j];
                for (int j = nc; j < 64; j++) d[j] = 0;
            }
        } else { /* B is given as [N, K]: element (k, n) at B[n * ldb + k] */
            for (int k0 = 0; k0 < K; k0 += 16) {
                const int k1 = k0 + 16 < K ? k0 + 16 : K;
                for (int j = 0; j < 64; j++)
                    for (int k = k0; k < k1; k++) dst[(size_t)k * 64 + j] = j < nc ? B[(size_t)(n0 + j) * ldb + k] : 0;
            }
        }
    }
}

/* The same panels of half-precision weights (ac_smm_nn_hp's layout). */
void ac_smm_pack_h(int K, int N, const uint16_t *B, int ldb, uint16_t *Bp) {
    for (int p = 0; p < (N + 63) / 64; p++) {
        const int n0 = 64 * p, nc = N - n0 < 64 ? N - n0 : 64;
        for (int k = 0; k < K; k++) {
            uint16_t *d = Bp + ((size_t)p * K + k) * 64;
            memcpy(d, B + (size_t)k * ldb + n0, sizeof *d * (size_t)nc);
            if (nc < 64) memset(d + nc, 0, sizeof *d * (size_t)(64 - nc));
        }
    }
}

/* For each block of up to 6 rows: a = its rows of A from A_BASE, c = its rows of C from C_BASE, and
 * FAMILY_<rows>(the other arguments, which may name a and c). */
#define ROW_BLOCKS(FAMILY, A_BASE, C_BASE, ...)                                                              \
    for (int m0 = 0; m0 < M; m0 += 6) {                                                                      \
        const float *a = (A_BASE) + (size_t)m0 * lda;                                                        \
        float *c = (C_BASE) + (size_t)m0 * ldc;                                                              \
        switch (M - m0 < 6 ? M - m0 : 6) {                                                                   \
        case 1: FAMILY##_1(__VA_ARGS__); break;                                                              \
        case 2: FAMILY##_2(__VA_ARGS__); break;                                                              \
        case 3: FAMILY##_3(__VA_ARGS__); break;                                                              \
        case 4: FAMILY##_4(__VA_ARGS__); break;                                                              \
        case 5: FAMILY##_5(__VA_ARGS__); break;                                                              \
        default: FAMILY##_6(__VA_ARGS__); break;                                                             \
        }                                                                                                    \
    }

#if defined(__AVX512F__)
#include <immintrin.h>

#define KERNEL(MR)                                                                                           \
    static void kern_##MR(int K, const float *A, int lda, const float *Bp, float *C, int ldc, int nv,         \
                          __mmask16 last) {                                                                  \
        __m512 acc[MR][4];                                                                                   \
        _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) \
            acc[r][j] = _mm512_setzero_ps();                                                                 \
        for (int k = 0; k < K; k++) {                                                                        \
            const float *b = Bp + (size_t)k * 64;                                                            \
            __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16), b2 = _mm512_loadu_ps(b + 32),      \
                   b3 = _mm512_loadu_ps(b + 48);                                                             \
            _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {                                           \
                __m512 a = _mm512_set1_ps(A[(size_t)r * lda + k]);                                          \
                acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);                                               \
                acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);                                               \
                acc[r][2] = _mm512_fmadd_ps(a, b2, acc[r][2]);                                               \
                acc[r][3] = _mm512_fmadd_ps(a, b3, acc[r][3]);                                               \
            }                                                                                                \
        }                                                                                                    \
        _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) { \
            if (j >= nv) break;                                                                              \
            __mmask16 m = j == nv - 1 ? last : (__mmask16)0xFFFF;                                            \
            float *c = C + (size_t)r * ldc + 16 * j;                                                         \
            _mm512_mask_storeu_ps(c, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, c), acc[r][j]));              \
        }                                                                                                    \
    }
KERNEL(1)
KERNEL(2)
KERNEL(3)
KERNEL(4)
KERNEL(5)
KERNEL(6)

void ac_smm_nn_packed(int M, int N, int K, const float *A, int lda, const float *Bp, float *C, int ldc) {
    if (M <= 0 || N <= 0 || K <= 0) return;
    for (int p = 0; p < (N + 63) / 64; p++) {
        const int n0 = 64 * p, nc = N - n0 < 64 ? N - n0 : 64, nv = (nc + 15) / 16, rem = nc - 16 * (nv - 1);
        const __mmask16 last = (__mmask16)(rem == 16 ? 0xFFFF : (1u << rem) - 1);
        const float *b = Bp + (size_t)p * 64 * K;
        for (int m0 = 0; m0 < M; m0 += 6) {
            const float *a = A + (size_t)m0 * lda;
            float *c = C + (size_t)m0 * ldc + n0;
            switch (M - m0 < 6 ? M - m0 : 6) {
            case 1: kern_1(K, a, lda, b, c, ldc, nv, last); break;
            case 2: kern_2(K, a, lda, b, c, ldc, nv, last); break;
            case 3: kern_3(K, a, lda, b, c, ldc, nv, last); break;
            case 4: kern_4(K, a, lda, b, c, ldc, nv, last); break;
            case 5: kern_5(K, a, lda, b, c, ldc, nv, last); break;
            default: kern_6(K, a, lda, b, c, ldc, nv, last); break;
            }
        }
    }
}
/* Unpacked B (inference: the weights as stored, no second copy). Column panels of B would be read
 * with a stride of a whole row (a new page per k for the 8 KB rows of the LSTM weights, which defeats
 * the hardware prefetcher), so for few rows the loop runs the other way: B row by row, 4 rows at a
 * time, each a contiguous stream, with C (M x 1024 columns, in L1) updated in place. Every output still
 * sums over k in ascending order. The weights come from memory (the LSTM's alone are 16 MB): each
 * 4 KB page starts a new stream the hardware prefetcher has to discover, so the next 4 rows are
 * prefetched by hand while these are used (about 12% faster per step on this machine). Larger M (the per-photo projection) uses 6-row blocks of this. */
#define KSTREAM(NAME, MR, T, LOAD)                                                                           \
    static void NAME##_##MR(int N, int K, const float *A, int lda, const T *B, int ldb, float *C, int ldc) {  \
        for (int n0 = 0; n0 < N; n0 += 1024) {                                                               \
            const int nc = N - n0 < 1024 ? N - n0 : 1024;                                                    \
            for (int k0 = 0; k0 < K; k0 += 4) {                                                              \
                const int kc = K - k0 < 4 ? K - k0 : 4;                                                      \
                __m512 a[MR][4];                                                                             \
                _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) \
                    a[r][q] = _mm512_set1_ps(q < kc ? A[(size_t)r * lda + k0 + q] : 0.0f);                  \
                const T *b = B + (size_t)k0 * ldb + n0;                                                      \
                const T *b1 = kc > 1 ? b + ldb : b, *b2 = kc > 2 ? b + 2 * (size_t)ldb : b,                \
                        *b3 = kc > 3 ? b + 3 * (size_t)ldb : b;                                              \
                const int pf = k0 + 8 <= K; /* the next 4 rows, a line ahead of each load */               \
                const char *p0 = (const char *)(b + (pf ? 4 * (size_t)ldb : 0));                             \
                const size_t row = sizeof(T) * (size_t)ldb;                                                  \
                for (int j = 0; j < nc; j += 16) {                                                           \
                    if (pf) {                                                                                \
                        _mm_prefetch(p0 + sizeof(T) * j, _MM_HINT_T0);                                       \
                        _mm_prefetch(p0 + sizeof(T) * j + row, _MM_HINT_T0);                                 \
                        _mm_prefetch(p0 + sizeof(T) * j + 2 * row, _MM_HINT_T0);                             \
                        _mm_prefetch(p0 + sizeof(T) * j + 3 * row, _MM_HINT_T0);                             \
                    }                                                                                        \
                    const __mmask16 m = nc - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (nc - j)) - 1); \
                    __m512 v0 = LOAD(m, b + j), v1 = LOAD(m, b1 + j), v2 = LOAD(m, b2 + j), v3 = LOAD(m, b3 + j); \
                    _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {                                   \
                        float *c = C + (size_t)r * ldc + n0 + j;                                             \
                        __m512 acc = _mm512_maskz_loadu_ps(m, c);                                            \
                        acc = _mm512_fmadd_ps(a[r][0], v0, acc);                                             \
                        if (kc > 1) acc = _mm512_fmadd_ps(a[r][1], v1, acc);                                 \
                        if (kc > 2) acc = _mm512_fmadd_ps(a[r][2], v2, acc);                                 \
                        if (kc > 3) acc = _mm512_fmadd_ps(a[r][3], v3, acc);                                 \
                        _mm512_mask_storeu_ps(c, m, acc);                                                    \
                    }                                                                                        \
                }                                                                                            \
            }                                                                                                \
        }                                                                                                    \
    }
#define LOAD_F32(m, p) _mm512_maskz_loadu_ps(m, p)
KSTREAM(kstream, 1, float, LOAD_F32) KSTREAM(kstream, 2, float, LOAD_F32) KSTREAM(kstream, 3, float, LOAD_F32)
KSTREAM(kstream, 4, float, LOAD_F32) KSTREAM(kstream, 5, float, LOAD_F32) KSTREAM(kstream, 6, float, LOAD_F32)
#if defined(__AVX512BW__) && defined(__AVX512VL__)
#define HAVE_HTILE 1
#endif

/* Many rows (the per-photo attention projection, L = 49..196 rows): weights are reused across row
 * blocks, so B (up to 1.5 MB) is read from L2 and the kernel is compute-bound. A 6 x 64 tile of C then
 * stays in registers over the whole of K, loaded once and stored once, where kstream reloads it every
 * 4 rows of B. Each element goes through the same chain C = fma(a_k, b_k, C), k ascending: same bits. */
#define KTILE(MR)                                                                                            \
    static void ktile_##MR(int N, int K, const float *A, int lda, const float *B, int ldb, float *C, int ldc) { \
        for (int n0 = 0; n0 < N; n0 += 64) {                                                                 \
            __mmask16 m[4];                                                                                  \
            _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) {                                            \
                int left = N - n0 - 16 * q;                                                                  \
                m[q] = left >= 16 ? (__mmask16)0xFFFF : left > 0 ? (__mmask16)((1u << left) - 1) : 0;        \
            }                                                                                                \
            __m512 acc[MR][4];                                                                               \
            _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) \
                acc[r][q] = _mm512_maskz_loadu_ps(m[q], C + (size_t)r * ldc + n0 + 16 * q);                 \
            for (int k = 0; k < K; k++) {                                                                    \
                const float *b = B + (size_t)k * ldb + n0;                                                   \
                __m512 v0 = _mm512_maskz_loadu_ps(m[0], b), v1 = _mm512_maskz_loadu_ps(m[1], b + 16),        \
                       v2 = _mm512_maskz_loadu_ps(m[2], b + 32), v3 = _mm512_maskz_loadu_ps(m[3], b + 48);   \
                _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {                                       \
                    __m512 a = _mm512_set1_ps(A[(size_t)r * lda + k]);                                      \
                    acc[r][0] = _mm512_fmadd_ps(a, v0, acc[r][0]);                                           \
                    acc[r][1] = _mm512_fmadd_ps(a, v1, acc[r][1]);                                           \
                    acc[r][2] = _mm512_fmadd_ps(a, v2, acc[r][2]);                                           \
                    acc[r][3] = _mm512_fmadd_ps(a, v3, acc[r][3]);                                           \
                }                                                                                            \
            }                                                                                                \
            _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) \
                _mm512_mask_storeu_ps(C + (size_t)r * ldc + n0 + 16 * q, m[q], acc[r][q]);                  \
        }                                                                                                    \
    }
KTILE(1)
KTILE(2)
KTILE(3)
KTILE(4)
KTILE(5)
KTILE(6)


#ifdef HAVE_HTILE
/* Half-precision weights packed in panels of 64 columns (ac_smm_pack_h), for any number of rows: a
 * 6 x 64 tile of C stays in registers (24 accumulators) while a panel streams by, so each weight
 * loaded serves up to 6 rows instead of being reloaded with C every 4 rows of B (kstream). Rows are
 * taken 6 at a time over a block of 256 rows of the panel (32 KB: it stays in L1 for every row
 * block), the tile stored back to C between blocks. Each element still goes through the chain
 * C = fma(a_k, b_k, C) with k ascending: the same bits as ac_smm_nn, for any M and any grouping of
 * rows (which is what lets the beams of many photos share one product). */
#define HTILE(MR)                                                                                            \
    static void htile_##MR(int K, const float *A, int lda, const uint16_t *Bp, float *C, int ldc,            \
                           const __mmask16 *m) {                                                             \
        __m512 acc[MR][4];                                                                                   \
        _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) \
            acc[r][q] = _mm512_maskz_loadu_ps(m[q], C + (size_t)r * ldc + 16 * q);                          \
        for (int k = 0; k < K; k++) {                                                                        \
            const uint16_t *b = Bp + (size_t)k * 64;                                                         \
            __m512 v0 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)b)),                             \
                   v1 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(b + 16))),                      \
                   v2 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(b + 32))),                      \
                   v3 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(b + 48)));                      \
            _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {                                           \
                __m512 a = _mm512_set1_ps(A[(size_t)r * lda + k]);                                          \
                acc[r][0] = _mm512_fmadd_ps(a, v0, acc[r][0]);                                               \
                acc[r][1] = _mm512_fmadd_ps(a, v1, acc[r][1]);                                               \
                acc[r][2] = _mm512_fmadd_ps(a, v2, acc[r][2]);                                               \
                acc[r][3] = _mm512_fmadd_ps(a, v3, acc[r][3]);                                               \
            }                                                                                                \
        }                                                                                                    \
        _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) \
            _mm512_mask_storeu_ps(C + (size_t)r * ldc + 16 * q, m[q], acc[r][q]);                           \
    }
HTILE(1)
HTILE(2)
HTILE(3)
HTILE(4)
HTILE(5)
HTILE(6)

void ac_smm_nn_hp(int M, int N, int K, const float *A, int lda, const uint16_t *Bp, float *C, int ldc) {
    if (M <= 0 || N <= 0 || K <= 0) return;
    enum { KC = 256 };
    for (int p = 0; p < (N + 63) / 64; p++) {
        const int n0 = 64 * p;
        __mmask16 m[4];
        for (int q = 0; q < 4; q++) {
            const int left = N - n0 - 16 * q;
            m[q] = left >= 16 ? (__mmask16)0xFFFF : left > 0 ? (__mmask16)((1u << left) - 1) : 0;
        }
        for (int k0 = 0; k0 < K; k0 += KC) {
            const int kc = K - k0 < KC ? K - k0 : KC;
            const uint16_t *b = Bp + ((size_t)p * K + k0) * 64;
            for (int m0 = 0; m0 < M; m0 += 6) {
                const float *a = A + (size_t)m0 * lda + k0;
                float *c = C + (size_t)m0 * ldc + n0;
                switch (M - m0 < 6 ? M - m0 : 6) {
                case 1: htile_1(kc, a, lda, b, c, ldc, m); break;
                case 2: htile_2(kc, a, lda, b, c, ldc, m); break;
                case 3: htile_3(kc, a, lda, b, c, ldc, m); break;
                case 4: htile_4(kc, a, lda, b, c, ldc, m); break;
                case 5: htile_5(kc, a, lda, b, c, ldc, m); break;
                default: htile_6(kc, a, lda, b, c, ldc, m); break;
                }
            }
        }
    }
}

int ac_smm_has_f16(void) { return 1; }
#endif
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define HAVE_HTILE 1

/* AVX2 (8 floats a vector, 16 registers): the kernels above on tiles of 16 columns where AVX-512
 * takes 64, every element through the same chain of FMAs in the same order, so the same bits as the
 * AVX-512 build (and the same captions). */
static inline __m256i lanes8(int n) { return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)); }
/* The first n (any int; <= 0: none, >= 8: all) of 8 floats. */
static inline __m256 load8(const float *p, int n) {
    return n >= 8 ? _mm256_loadu_ps(p) : n > 0 ? _mm256_maskload_ps(p, lanes8(n)) : _mm256_setzero_ps();
}
static inline void store8(float *p, int n, __m256 v) {
    if (n >= 8) _mm256_storeu_ps(p, v);
    else if (n > 0) _mm256_maskstore_ps(p, lanes8(n), v);
}
static inline __m256 half8(const uint16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }

/* A tile of MR rows x 16 columns over K: acc[r] = C (or 0 for the packed kernel, added to C after),
 * then acc = fma(a_rk, b_k, acc) for k ascending. B_AT(k) gives the tile's row k of B as two vectors. */
#define TILE16(NAME, MR, BTYPE, B_AT, FROM_C)                                                                \
    static void NAME##_##MR(int K, const float *A, int lda, const BTYPE *B, int ldb, float *C, int ldc, int nc) { \
        __m256 acc[MR][2];                                                                                   \
        _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {                                               \
            acc[r][0] = FROM_C ? load8(C + (size_t)r * ldc, nc) : _mm256_setzero_ps();                        \
            acc[r][1] = FROM_C ? load8(C + (size_t)r * ldc + 8, nc - 8) : _mm256_setzero_ps();                \
        }                                                                                                    \
        for (int k = 0; k < K; k++) {                                                                        \
            __m256 v0, v1;                                                                                   \
            B_AT(B + (size_t)k * ldb, v0, v1);                                                               \
            _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {                                           \
                const __m256 a = _mm256_broadcast_ss(A + (size_t)r * lda + k);                               \
                acc[r][0] = _mm256_fmadd_ps(a, v0, acc[r][0]);                                               \
                acc[r][1] = _mm256_fmadd_ps(a, v1, acc[r][1]);                                               \
            }                                                                                                \
        }                                                                                                    \
        _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {                                               \
            float *c = C + (size_t)r * ldc;                                                                  \
            store8(c, nc, FROM_C ? acc[r][0] : _mm256_add_ps(load8(c, nc), acc[r][0]));                      \
            store8(c + 8, nc - 8, FROM_C ? acc[r][1] : _mm256_add_ps(load8(c + 8, nc - 8), acc[r][1]));     \
        }                                                                                                    \
    }
#define F32_AT(b, v0, v1) (v0 = _mm256_loadu_ps(b), v1 = _mm256_loadu_ps((b) + 8))
#define F32_AT_MASKED(b, v0, v1) (v0 = load8(b, nc), v1 = load8((b) + 8, nc - 8))
#define F16_AT(b, v0, v1) (v0 = half8(b), v1 = half8((b) + 8))
#define TILES(NAME, BTYPE, B_AT, FROM_C)                                                                     \
    TILE16(NAME, 1, BTYPE, B_AT, FROM_C) TILE16(NAME, 2, BTYPE, B_AT, FROM_C) TILE16(NAME, 3, BTYPE, B_AT, FROM_C) \
    TILE16(NAME, 4, BTYPE, B_AT, FROM_C) TILE16(NAME, 5, BTYPE, B_AT, FROM_C) TILE16(NAME, 6, BTYPE, B_AT, FROM_C)
TILES(kern, float, F32_AT, 0)          /* packed float panels (training): acc from 0, then C += acc */
TILES(ktile16, float, F32_AT_MASKED, 1) /* B as stored, C in registers over all of K */
TILES(ktile16f, float, F32_AT, 1)       /* the same on 16 whole columns: no mask to test at each k */
TILE16(htile, 4, uint16_t, F16_AT, 1)  /* packed half panels, 4-6 rows (1-3: htile32 below) */
TILE16(htile, 5, uint16_t, F16_AT, 1) TILE16(htile, 6, uint16_t, F16_AT, 1)

void ac_smm_nn_packed(int M, int N, int K, const float *A, int lda, const float *Bp, float *C, int ldc) {
    if (M <= 0 || N <= 0 || K <= 0) return;
    for (int n0 = 0; n0 < N; n0 += 16) {
        const float *b = Bp + (size_t)(n0 / 64) * 64 * K + n0 % 64;
        ROW_BLOCKS(kern, A, C + n0, K, a, lda, b, 64, c, ldc, N - n0)
    }
}

/* Few rows: B streamed row by row, 4 rows of B at a time, C updated in place (see the AVX-512 kstream:
 * the same order, with the next 4 rows prefetched). A row of A is broadcast from memory at each use. */
#define KSTREAM8(MR)                                                                                         \
    static void kstream_##MR(int N, int K, const float *A, int lda, const float *B, int ldb, float *C, int ldc) { \
        for (int n0 = 0; n0 < N; n0 += 1024) {                                                               \
            const int nc = N - n0 < 1024 ? N - n0 : 1024;                                                    \
            for (int k0 = 0; k0 < K; k0 += 4) {                                                              \
                const int kc = K - k0 < 4 ? K - k0 : 4;                                                      \
                const float *b = B + (size_t)k0 * ldb + n0;                                                  \
                const float *b1 = kc > 1 ? b + ldb : b, *b2 = kc > 2 ? b + 2 * (size_t)ldb : b,            \
                            *b3 = kc > 3 ? b + 3 * (size_t)ldb : b;                                          \
                const int pf = k0 + 8 <= K;                                                                  \
                const char *p0 = (const char *)(b + (pf ? 4 * (size_t)ldb : 0));                             \
                const size_t row = sizeof(float) * (size_t)ldb;                                              \
                for (int j = 0; j < nc; j += 8) {                                                            \
                    if (pf && j % 16 == 0) {                                                                 \
                        _mm_prefetch(p0 + sizeof(float) * j, _MM_HINT_T0);                                   \
                        _mm_prefetch(p0 + sizeof(float) * j + row, _MM_HINT_T0);                             \
                        _mm_prefetch(p0 + sizeof(float) * j + 2 * row, _MM_HINT_T0);                         \
                        _mm_prefetch(p0 + sizeof(float) * j + 3 * row, _MM_HINT_T0);                         \
                    }                                                                                        \
                    const int left = nc - j;                                                                 \
                    const __m256 v0 = load8(b + j, left), v1 = load8(b1 + j, left), v2 = load8(b2 + j, left), \
                                 v3 = load8(b3 + j, left);                                                   \
                    _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {                                   \
                        const float *a = A + (size_t)r * lda + k0;                                           \
                        float *c = C + (size_t)r * ldc + n0 + j;                                             \
                        __m256 acc = load8(c, left);                                                         \
                        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(a), v0, acc);                              \
                        if (kc > 1) acc = _mm256_fmadd_ps(_mm256_broadcast_ss(a + 1), v1, acc);              \
                        if (kc > 2) acc = _mm256_fmadd_ps(_mm256_broadcast_ss(a + 2), v2, acc);              \
                        if (kc > 3) acc = _mm256_fmadd_ps(_mm256_broadcast_ss(a + 3), v3, acc);              \
                        store8(c, left, acc);                                                                \
                    }                                                                                        \
                }                                                                                            \
            }                                                                                                \
        }                                                                                                    \
    }
KSTREAM8(1) KSTREAM8(2) KSTREAM8(3) KSTREAM8(4) KSTREAM8(5) KSTREAM8(6)

/* Up to 3 rows on 32 columns of a half panel: with 16 columns, one row is two chains of dependent
 * FMAs, and the FMA's latency, not its throughput, sets the pace (a beam of 1-3 hypotheses, one
 * photo: what a caption's latency waits on). 4 chains a row here; each element's chain is the same
 * fma(a_k, b_k, C) with k ascending: the same bits. */
#define HTILE32(MR)                                                                                          \
    static void htile32_##MR(int K, const float *A, int lda, const uint16_t *B, float *C, int ldc, int nc) {  \
        __m256 acc[MR][4];                                                                                   \
        _Pragma("GCC unroll 4") for (int r = 0; r < MR; r++) _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) \
            acc[r][q] = load8(C + (size_t)r * ldc + 8 * q, nc - 8 * q);                                      \
        for (int k = 0; k < K; k++) {                                                                        \
            const uint16_t *b = B + (size_t)k * 64;                                                          \
            _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) {                                            \
                const __m256 v = half8(b + 8 * q);                                                           \
                _Pragma("GCC unroll 4") for (int r = 0; r < MR; r++)                                         \
                    acc[r][q] = _mm256_fmadd_ps(_mm256_broadcast_ss(A + (size_t)r * lda + k), v, acc[r][q]); \
            }                                                                                                \
        }                                                                                                    \
        _Pragma("GCC unroll 4") for (int r = 0; r < MR; r++) _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) \
            store8(C + (size_t)r * ldc + 8 * q, nc - 8 * q, acc[r][q]);                                      \
    }
HTILE32(1) HTILE32(2) HTILE32(3)

/* htile32 on float B as stored (ldb), for the products of few rows (a photo's beam): C in registers over
 * all of K, where kstream loads and stores C every 4 k and broadcasts each a again for every 8
 * columns (on 16 registers the broadcasts cannot stay). The same chain per element: the same bits. */
#define KTILE32_K_LOOP(MR, LOAD)                                                                             \
    for (int k = 0; k < K; k++) {                                                                            \
        const float *b = B + (size_t)k * ldb;                                                                \
        _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) {                                                \
            const __m256 v = LOAD;                                                                           \
            _Pragma("GCC unroll 4") for (int r = 0; r < MR; r++)                                             \
                acc[r][q] = _mm256_fmadd_ps(_mm256_broadcast_ss(A + (size_t)r * lda + k), v, acc[r][q]);     \
        }                                                                                                    \
    }
#define KTILE32(MR)                                                                                          \
    static void ktile32_##MR(int K, const float *A, int lda, const float *B, int ldb, float *C, int ldc, int nc) { \
        __m256 acc[MR][4];                                                                                   \
        _Pragma("GCC unroll 4") for (int r = 0; r < MR; r++) _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) \
            acc[r][q] = load8(C + (size_t)r * ldc + 8 * q, nc - 8 * q);                                      \
        if (nc >= 32) KTILE32_K_LOOP(MR, _mm256_loadu_ps(b + 8 * q)) /* whole columns: no mask to test */    \
        else KTILE32_K_LOOP(MR, load8(b + 8 * q, nc - 8 * q))                                                \
        _Pragma("GCC unroll 4") for (int r = 0; r < MR; r++) _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++) \
            store8(C + (size_t)r * ldc + 8 * q, nc - 8 * q, acc[r][q]);                                      \
    }
KTILE32(1) KTILE32(2) KTILE32(3)

void ac_smm_nn_hp(int M, int N, int K, const float *A, int lda, const uint16_t *Bp, float *C, int ldc) {
    if (M <= 0 || N <= 0 || K <= 0) return;
    enum { KC = 256 };
    for (int p = 0; p < (N + 63) / 64; p++)
        for (int k0 = 0; k0 < K; k0 += KC) {
            const int kc = K - k0 < KC ? K - k0 : KC;
            const uint16_t *panel = Bp + ((size_t)p * K + k0) * 64;
            for (int m0 = 0; m0 < M; m0 += 6) {
                const int mr = M - m0 < 6 ? M - m0 : 6;
                const float *a = A + (size_t)m0 * lda + k0;
                float *c = C + (size_t)m0 * ldc + 64 * p;
                for (int q = 0; q < 4 && 64 * p + 16 * q < N; q += mr <= 3 ? 2 : 1) {
                    const int nc = N - 64 * p - 16 * q;
                    switch (mr) {
                    case 1: htile32_1(kc, a, lda, panel + 16 * q, c + 16 * q, ldc, nc); break;
                    case 2: htile32_2(kc, a, lda, panel + 16 * q, c + 16 * q, ldc, nc); break;
                    case 3: htile32_3(kc, a, lda, panel + 16 * q, c + 16 * q, ldc, nc); break;
                    case 4: htile_4(kc, a, lda, panel + 16 * q, 64, c + 16 * q, ldc, nc); break;
                    case 5: htile_5(kc, a, lda, panel + 16 * q, 64, c + 16 * q, ldc, nc); break;
                    default: htile_6(kc, a, lda, panel + 16 * q, 64, c + 16 * q, ldc, nc); break;
                    }
                }
            }
        }
}

int ac_smm_has_f16(void) { return 1; }
#endif

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__) && defined(__F16C__))
#if !defined(__AVX512F__)
/* Rows in blocks of 3 on 32 columns of B at a time, each slice of B read once per block while cached. */
static void ktile32_rows(int M, int N, int K, const float *A, int lda, const float *B, int ldb, float *C, int ldc) {
    for (int n0 = 0; n0 < N; n0 += 32)
        for (int m0 = 0; m0 < M; m0 += 3) {
            const float *a = A + (size_t)m0 * lda;
            float *c = C + (size_t)m0 * ldc + n0;
            switch (M - m0 < 3 ? M - m0 : 3) {
            case 1: ktile32_1(K, a, lda, B + n0, ldb, c, ldc, N - n0); break;
            case 2: ktile32_2(K, a, lda, B + n0, ldb, c, ldc, N - n0); break;
            default: ktile32_3(K, a, lda, B + n0, ldb, c, ldc, N - n0); break;
            }
        }
}
#endif

/* Which kernel, as measured on the decoder's shapes (bench/bench_smm; every choice gives the same bits).
 * One row, or few rows over a long K (a float LSTM's 2048 x 2048: a new page of B at every k down a
 * column slice): B streamed row by row (kstream). Otherwise C held in registers over all of K (ktile),
 * the rows in blocks over slices of B's columns: 1.7x kstream's speed for a beam's 3 rows of the
 * attention context (3 x 1280 x 206), and on AVX2 2x there and 1.6x for the attention's keys
 * (206 x 256 x 1280), whose B is past a 1 MB L2 if every block of rows reads all of it. */
void ac_smm_nn(int M, int N, int K, const float *A, int lda, const float *B, int ldb, float *C, int ldc) {
    if (M <= 0 || N <= 0 || K <= 0) return;
#if defined(__AVX512F__)
    if (M == 1 || (M < 6 && K > 1280)) {
        ROW_BLOCKS(kstream, A, C, N, K, a, lda, B, ldb, c, ldc)
    } else {
        ROW_BLOCKS(ktile, A, C, N, K, a, lda, B, ldb, c, ldc)
    }
#else
    if (M == 1 || K > 1280) {
        ROW_BLOCKS(kstream, A, C, N, K, a, lda, B, ldb, c, ldc)
    } else if (M < 6) {
        ktile32_rows(M, N, K, A, lda, B, ldb, C, ldc);
    } else { /* a slice of 16 columns for every block of 6 rows while it is in cache */
        for (int n0 = 0; n0 < N; n0 += 16) {
            if (N - n0 >= 16) ROW_BLOCKS(ktile16f, A, C + n0, K, a, lda, B + n0, ldb, c, ldc, 16)
            else ROW_BLOCKS(ktile16, A, C + n0, K, a, lda, B + n0, ldb, c, ldc, N - n0)
        }
    }
#endif
}
#else
void ac_smm_nn_packed(int M, int N, int K, const float *A, int lda, const float *Bp, float *C, int ldc) {
    if (M <= 0 || N <= 0 || K <= 0) return;
    for (int p = 0; p < (N + 63) / 64; p++) {
        const int n0 = 64 * p, nc = N - n0 < 64 ? N - n0 : 64;
        const float *b = Bp + (size_t)p * 64 * K;
        for (int m = 0; m < M; m++) {
            float acc[64] = {0};
            for (int k = 0; k < K; k++) {
                const float a = A[(size_t)m * lda + k];
                for (int j = 0; j < 64; j++) acc[j] += a * b[(size_t)k * 64 + j];
            }
            for (int j = 0; j < nc; j++) C[(size_t)m * ldc + n0 + j] += acc[j];
        }
    }
}

void ac_smm_nn(int M, int N, int K, const float *A, int lda, const float *B, int ldb, float *C, int ldc) {
    if (M <= 0 || N <= 0 || K <= 0) return;
    for (int n0 = 0; n0 < N; n0 += 64) {
        const int nc = N - n0 < 64 ? N - n0 : 64;
        for (int m = 0; m < M; m++) {
            float acc[64] = {0};
            for (int k = 0; k < K; k++) {
                const float a = A[(size_t)m * lda + k], *b = B + (size_t)k * ldb + n0;
                for (int j = 0; j < nc; j++) acc[j] += a * b[j];
            }
            for (int j = 0; j < nc; j++) C[(size_t)m * ldc + n0 + j] += acc[j];
        }
    }
}
#endif

#ifndef HAVE_HTILE
/* Without AVX-512 (BW, VL) the decoder keeps no half copies and never calls this; should someone
 * else, it still computes the product (portable, slow) rather than fail. */
int ac_smm_has_f16(void) { return 0; }
void ac_smm_nn_hp(int M, int N, int K, const float *A, int lda, const uint16_t *Bp, float *C, int ldc) {
    for (int m = 0; m < M; m++)
        for (int k = 0; k < K; k++) {
            const float a = A[(size_t)m * lda + k];
            for (int j = 0; j < N; j++)
                C[(size_t)m * ldc + j] += a * ac_f16_to_f32(Bp[((size_t)(j / 64) * K + k) * 64 + j % 64]);
        }
}
#endif
