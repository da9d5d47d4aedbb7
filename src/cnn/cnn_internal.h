/* cnn_internal.h: the float32 NHWC kernels behind cnn.c (batch 1), and a tiny thread pool.
 * Not a public header: shapes are checked by the planner in cnn.c before any kernel runs. */
#ifndef ATTNCAP_CNN_INTERNAL_H
#define ATTNCAP_CNN_INTERNAL_H
#include <float.h>
#include <stddef.h>
#include <stdint.h>

#include "pool.h"

/* Fused activations, TFLite numbering; CNN_ACT_SILU (x * sigmoid(x), cnn_silu.h) is ours: the planner
 * sets it on a conv followed by LOGISTIC and MUL (plan_silu in cnn.c). Its clamp bounds are NONE's. */
enum { CNN_ACT_NONE = 0, CNN_ACT_RELU = 1, CNN_ACT_RELU_N1_TO_1 = 2, CNN_ACT_RELU6 = 3, CNN_ACT_SILU = 16 };

/* The clamp [lo, hi] a fused activation applies (NONE: the whole float range). Inline: the kernels'
 * files are compiled for several instruction sets each. */
static inline void ac_cnn_act_bounds(int act, float *lo, float *hi) {
    *lo = -FLT_MAX, *hi = FLT_MAX;
    if (act == CNN_ACT_RELU) *lo = 0.0f;
    else if (act == CNN_ACT_RELU6) *lo = 0.0f, *hi = 6.0f;
    else if (act == CNN_ACT_RELU_N1_TO_1) *lo = -1.0f, *hi = 1.0f;
}

/* Geometry of a 2-D window op: input h x w x c, output oh x ow x oc, kernel kh x kw, strides,
 * dilations, and the top/left padding (bottom/right padding is implied by the output size). */
typedef struct ac_conv_geom {
    int h, w, c;
    int oh, ow, oc;
    int kh, kw, sh, sw, dh, dw, pt, pl;
    int act;
} ac_conv_geom;

/* Output size and top/left padding along one axis, exactly as TensorFlow: SAME gives
 * ceil(in / stride) with the odd pixel of padding at the end; VALID no padding. 0 if empty. */
int ac_cnn_out_size(int in, int k, int stride, int dil, int valid, int *pad_before);

/* A residual sum run inside the conv before it (MobileNetV2's ADD after a projection): each output
 * element becomes clamp_act(out + add[i]) once the conv's own bias and activation are applied, the
 * very operations of the ADD run after it, without a pass of its own. add has the output's layout. */
typedef struct ac_cnn_sum {
    const float *add;
    int act;
} ac_cnn_sum;

/* ac_cnn_gemm runs our own kernels (AVX-512, or AVX2 with FMA: every output element the same chain of
 * FMAs, whatever the blocking); else OpenBLAS, whose results depend on the product's shape. */
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#define AC_CNN_OWN_GEMM 1
#endif

/* A product's weights as the kernels read them, made once per plan. */
typedef struct ac_cnn_weights {
    const float *w;          /* [n][k] as the model has them (what OpenBLAS reads without our kernels) */
    const float *packed;     /* ac_cnn_gemm_pack(w) */
    const uint16_t *bf16;    /* ac_cnn_gemm_bf16_pack(w): the product runs on AMX (AC_PRECISION_BF16X2);
                                NULL: float32 */
    const float *bf16_scale; /* its column scales */
} ac_cnn_weights;

/* c[m][n] = act(a[m][:] . w[n][:] + bias[n]) (cnn_gemm.c), then the sum if any (NULL: none), on AMX
 * when wt->bf16 is set (cnn_gemm_bf16.c), else in float32 FMAs.
 * ac_cnn_gemm_packed_size floats for the packing. bias may be NULL. */
size_t ac_cnn_gemm_packed_size(int n, int k);
void ac_cnn_gemm_pack(int n, int k, const float *w, float *packed);
void ac_cnn_gemm(int m, int n, int k, const float *a, const ac_cnn_weights *wt, const float *bias, int act, float *c,
                 const ac_cnn_sum *sum, ac_pool *pool);

/* AC_PRECISION_BF16X2 (cnn_gemm_bf16.c): AMX tile products of bfloat16 pairs into float32. Each
 * activation is split into two bfloat16, hi = round(x) and lo = round(x - hi) (16 bits of mantissa
 * between them), each weight is a quantized model's integer q - zero point (exact in bfloat16) and
 * its scale multiplies the sum. Supported when the CPU has AMX-BF16 and AVX512-BF16 and Linux grants
 * the tiles (GCC on x86-64); activation rows of at most AC_CNN_BF16_MAX_K values (on the stack). */
#define AC_CNN_BF16_MAX_K 1536
int ac_cnn_bf16_supported(void);
uint16_t ac_cnn_bf16_round(float x); /* to nearest even */
float ac_cnn_bf16_float(uint16_t h);
size_t ac_cnn_gemm_bf16_packed_size(int n, int k); /* uint16s */
int ac_cnn_gemm_bf16_columns(int n);               /* floats of col_scale: n rounded up to whole panels */
/* scales[n]: each column's quantization scale. -1 (nothing usable written) if k > AC_CNN_BF16_MAX_K,
 * or unless every weight of column j is exactly, as float32, an integer of magnitude <= 256 times
 * scales[j]. */
int ac_cnn_gemm_bf16_pack(int n, int k, const float *w, const float *scales, uint16_t *packed, float *col_scale);
void ac_cnn_gemm_bf16(int m, int n, int k, const float *a, const uint16_t *packed, const float *col_scale,
                      const float *bias, int act, float *c, const ac_cnn_sum *sum, ac_pool *pool);

/* CONV_2D: wt's w [oc][kh][kw][c] and its packings, bias [oc] or NULL. scratch holds oh*ow*kh*kw*c
 * floats (im2col), unused for a 1x1 stride-1 unpadded conv (the input is the matrix as it lies). */
void ac_cnn_conv2d(const ac_conv_geom *g, const float *in, const ac_cnn_weights *wt, const float *bias, float *out,
                   const ac_cnn_sum *sum, float *scratch, ac_pool *pool);
size_t ac_cnn_conv2d_scratch(const ac_conv_geom *g);
/* DEPTHWISE_CONV_2D: wt [kh][kw][oc], oc = c * multiplier, output channel o reads input channel o / mult. */
void ac_cnn_depthwise(const ac_conv_geom *g, const float *in, const float *wt, const float *bias, float *out, ac_pool *pool);
/* A CONV_2D (weights packed for ac_cnn_gemm; pointwise as it lies, others through im2col) whose output
 * only feeds a DEPTHWISE_CONV_2D (multiplier 1, no dilation), optionally followed by a pointwise
 * CONV_2D (pj, may be NULL) that alone reads the depthwise output: all at once, band by band,
 * without materialising the intermediate tensors; the same bits as running them in turn. out is the
 * last one's output (sum: a residual sum after the projection, or NULL), cut into `chunks` chunks of rows. scratch: ac_cnn_pw_dw_scratch(pw, dw, pj) floats
 * per chunk. */
int ac_cnn_conv_is_pointwise(const ac_conv_geom *g);
size_t ac_cnn_pw_dw_scratch(const ac_conv_geom *pw, const ac_conv_geom *dw, const ac_conv_geom *pj);
void ac_cnn_pw_dw(const ac_conv_geom *pw, const float *in, const ac_cnn_weights *pw_wt, const float *pw_bias,
                  const ac_conv_geom *dw, const float *dw_wt, const float *dw_bias, const ac_conv_geom *pj,
                  const ac_cnn_weights *pj_wt, const float *pj_bias, float *out, const ac_cnn_sum *sum, float *scratch,
                  ac_pool *pool, int chunks);
/* AVERAGE_POOL_2D (average over the window's pixels inside the image, as TFLite) and MAX_POOL_2D. */
void ac_cnn_pool2d(const ac_conv_geom *g, int is_max, const float *in, float *out);
/* out[m][n] = act(in[m][:] . wt[n][:] + bias[n]), wt [n][k]. */
void ac_cnn_fully_connected(int m, int n, int k, const float *in, const float *wt, const float *bias, int act, float *out);
/* x[i] = act(x[i] + bias[i % n]) over rows of n; bias may be NULL. */
void ac_cnn_bias_act(float *x, size_t rows, int n, const float *bias, int act, ac_pool *pool);
/* o = act(a + b), same shapes. */
void ac_cnn_add(const float *a, const float *b, float *o, size_t n, int act, ac_pool *pool);
void ac_cnn_softmax(const float *in, float *out, size_t rows, int n, float beta);
/* A layer name as ac_encoder_open takes it (full tensor name, or its first ';'-separated part) ->
 * tensor index, or -1 (cnn_encoder.c). */
struct ac_tfl_model;
int ac_cnn_find_layer(const struct ac_tfl_model *m, const char *name);
#endif
