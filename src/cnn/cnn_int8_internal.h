/* cnn_int8_internal.h: AC_PRECISION_INT8, a quantized TFLite graph run on its integers with TFLite's
 * integer semantics (the reference kernels' arithmetic, bit for bit). cnn_int8.c plans it from the
 * float plan (cnn.c) and runs it; cnn_int8_kernels.c holds the kernels. Not a public header.
 *
 * Every activation is kept as uint8, "stored" values: a uint8 tensor's own q, an int8 tensor's q + 128
 * (its zero point moved by 128 too), so one set of kernels serves both; (q - zero point) and so every
 * product, sum and requantization is the same integer either way. Weights are kept as int8 w' = q - c
 * (c = 128 for uint8 filters, 0 for int8), so a product is u8 x s8, the operands of `vpdpbusd`. */
#ifndef ATTNCAP_CNN_INT8_INTERNAL_H
#define ATTNCAP_CNN_INT8_INTERNAL_H
#include <stddef.h>
#include <stdint.h>

#include "attncap/common.h"
#include "pool.h"

struct ac_cnn;

/* TFLite's fixed-point arithmetic (quantization_util.cc, common.h), exactly. */
/* real = m * 2^(shift - 31); m in [2^30, 2^31), or 0 (shift 0) for 0 and multipliers under 2^-32. */
void ac_i8_quantize_multiplier(double real, int32_t *m, int *shift);
/* RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x * 2^max(shift,0), m), max(-shift,0)). */
static inline int32_t ac_i8_mbqm(int32_t x, int32_t m, int shift) {
    const int left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
    const int32_t xs = (int32_t)((uint32_t)x << left); /* TFLite's x * (1 << left), which wraps the same */
    int32_t h;
    if (xs == INT32_MIN && m == INT32_MIN) h = INT32_MAX;
    else {
        const int64_t ab = (int64_t)xs * m, nudge = ab >= 0 ? (1 << 30) : 1 - (1 << 30);
        h = (int32_t)((ab + nudge) / ((int64_t)1 << 31)); /* C's division truncates, as TFLite's */
    }
    const int32_t mask = (int32_t)(((int64_t)1 << right) - 1), rem = h & mask, thr = (mask >> 1) + (h < 0);
    return (h >> right) + (rem > thr);
}

/* AffineQuantize of the float input: out = clamp(round(x / scale) + zs, 0, 255) (zs: the stored zero
 * point; round half away from zero, x / scale in float32, as TFLite). -1 at a non-finite value. */
int ac_i8_quantize(const float *x, size_t n, float scale, int32_t zs, uint8_t *out);

/* The least and greatest of x[0..n) (n >= 1); -1 at a non-finite value. */
int ac_i8_range(const float *x, size_t n, float *lo, float *hi);

/* Requantization of one output column set: out = clamp(mbqm(acc + bias, m, shift) + zp, lo, hi). */
typedef struct ac_i8_requant {
    const int32_t *mult;  /* per output channel */
    const int32_t *shift; /* per output channel */
    int32_t zp, lo, hi;   /* stored zero point and clamp (the fused activation's range) */
} ac_i8_requant;

/* acc[0..n) (int32, channels c0..c0+n of rq) -> out; acc is clobbered. */
void ac_i8_requant_row(int32_t *acc, int n, const ac_i8_requant *rq, int c0, uint8_t *out);

/* A product's weights packed for the kernels: n columns (output channels) of k, padded to kp = k
 * rounded up to 4 and np = n rounded up to 16; [np/16][kp/4][16][4] int8, zeros in the padding. */
typedef struct ac_i8_gemm_w {
    int n, k, kp, np;
    int8_t *packed;
    int32_t *col;   /* per column: bias - zx * sum_k w' + k * zx * d (the constant part of the sum) */
    int32_t d;      /* weight zero point less c: each row's sum of x times -d joins the sum (0 for int8) */
} ac_i8_gemm_w;
/* Where column o's weight j sits in packed. */
static inline size_t ac_i8_packed_at(const ac_i8_gemm_w *w, int o, int j) {
    return ((size_t)(o / 16) * (size_t)(w->kp / 4) + (size_t)(j / 4)) * 64 + (size_t)(o % 16) * 4 + (size_t)(j % 4);
}

/* c[m][n] = requant(sum_k a[m][k] * w'[n][k] + col[n] - d * sum_k a[m][k]). a: rows of lda bytes (k
 * used); c: rows of ldc bytes. The kernel: AVX512-VNNI where the CPU has it, else AVX-VNNI, else AVX2
 * (16-bit products), else plain C (also forced by ac_i8_set_isa, for tests); the same integers.
 * Depthwise, ADD and the requantization of depthwise rows run on AVX-512 with VNNI's CPUs, else in C. */
void ac_i8_gemm(int m, const uint8_t *a, int lda, const ac_i8_gemm_w *w, const ac_i8_requant *rq, uint8_t *c, int ldc,
                ac_pool *pool);
struct ac_i8_add;
/* The same, then each requantized output x becomes ADD(x, other) (p: x the first operand), other
 * laid out as c: a residual ADD run in the product's output, the same integers as after it. */
void ac_i8_gemm_add(int m, const uint8_t *a, int lda, const ac_i8_gemm_w *w, const ac_i8_requant *rq, uint8_t *c, int ldc,
                    const struct ac_i8_add *p, const uint8_t *other, ac_pool *pool);
/* The product with a float output (a float graph's convolution run on integers, cnn_q8.c): c[r][o] =
 * clamp(fma((float)sum, scale[o], bias[o]), lo, hi), sum the integer sum with w->col's constant part;
 * the same bits on every kernel. */
typedef struct ac_i8_fout {
    const float *scale; /* per column (w->np of them) */
    const float *bias;  /* per column, or NULL */
    float lo, hi;
    float *c;
    int ldc;
    /* then, if not NULL, called on each block of outputs just stored (rows r0..r0+rows, columns
     * c0..c0+n of c) while they are in cache: the activation and sum the product does not apply */
    void (*then)(void *ctx, float *c, int ldc, int r0, int rows, int c0, int n);
    void *ctx;
} ac_i8_fout;
void ac_i8_gemm_float(int m, const uint8_t *a, int lda, const ac_i8_gemm_w *w, const ac_i8_fout *f, ac_pool *pool);
enum { AC_I8_ISA_C = 0, AC_I8_ISA_AVX2 = 1, AC_I8_ISA_AVXVNNI = 2, AC_I8_ISA_AVX512VNNI = 3 };
int ac_i8_isa_runs(int isa);  /* whether this CPU runs that level's kernels */
int ac_i8_isa_best(void);     /* the best this CPU runs */
void ac_i8_set_isa(int isa);  /* at most this one from now on (-1: the best); for tests and benches */
int ac_i8_isa(void);          /* the one in use: the highest this CPU runs within the limit */
const char *ac_i8_isa_name(int isa);

/* Window geometry (as ac_conv_geom) with stored zero points. */
typedef struct ac_i8_geom {
    int h, w, c, oh, ow, oc, kh, kw, sh, sw, dh, dw, pt, pl;
} ac_i8_geom;

/* im2col of a u8 NHWC image into rows of kp bytes (taps in [kh][kw][c] order, zx outside the image, 0
 * in the k padding); rows [r0, r1) of the output. */
void ac_i8_im2col(const ac_i8_geom *g, const uint8_t *in, uint8_t zx, int kp, int r0, int r1, uint8_t *cols);
void ac_i8_im2col_all(const ac_i8_geom *g, const uint8_t *in, uint8_t zx, int kp, uint8_t *cols, ac_pool *pool); /* every row, on the pool */
/* DEPTHWISE_CONV_2D (multiplier oc / c): wq [kh*kw][oc] (q - zw), bias [oc], inner [oc] = bias - zx *
 * the sum of the channel's taps; taps outside the image skipped, as TFLite's reference. wp: for a
 * 3 x 3 filter of multiplier 1 without dilation, wq packed by ac_i8_dw3x3_pack (AVX512-VNNI's kernel
 * takes it), else NULL. */
void ac_i8_depthwise(const ac_i8_geom *g, const uint8_t *in, int32_t zx, const int32_t *wq, const int16_t *wp,
                     const int32_t *bias, const int32_t *inner, const ac_i8_requant *rq, uint8_t *out, ac_pool *pool);
size_t ac_i8_dw3x3_packed_count(int c);                      /* int16s of ac_i8_dw3x3_pack's output */
void ac_i8_dw3x3_pack(const int32_t *wq, int c, int16_t *wp); /* wq [9][c], each within int16 */
/* ADD of two same-shaped tensors (add.cc / reference AddElementwise). */
typedef struct ac_i8_add {
    int32_t zx1, zx2, m1, m2, mo; /* stored zero points of the inputs and the three multipliers */
    int s1, s2, so, left_shift;
    int32_t zo, lo, hi;
} ac_i8_add;
void ac_i8_add_run(const ac_i8_add *p, const uint8_t *a, const uint8_t *b, uint8_t *o, size_t n, ac_pool *pool);
/* AVERAGE_POOL_2D / MAX_POOL_2D (input and output share scale and zero point, as TFLite requires);
 * off: 128 for int8 tensors (the average rounds half away from zero on q), 0 for uint8 (half up). */
void ac_i8_pool(const ac_i8_geom *g, int is_max, int off, int32_t lo, int32_t hi, const uint8_t *in, uint8_t *out);

/* The plan (cnn_int8.c). */
typedef struct cnn_int8 cnn_int8;
/* NULL with err set when the graph is not quantized or has an operator without an integer kernel. */
cnn_int8 *ac_cnn_int8_create(const struct ac_cnn *c, ac_err *err);
int ac_cnn_int8_run(struct ac_cnn *c, const float *input, float *output, ac_err *err);
void ac_cnn_int8_free(cnn_int8 *p);
/* The last run's stored values of the input (input != 0) or the output tensor, and their offset
 * (q = stored - off); NULL unless the plan runs in int8. */
const uint8_t *ac_cnn_int8_stored(const struct ac_cnn *c, int input, int *off);
#endif
