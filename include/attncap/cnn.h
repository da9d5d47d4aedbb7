/* attncap/cnn.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/cnn.h: the engine: the float32 NHWC plan that runs a TFLite graph (up to a chosen tensor)
 * at any input size on floats. It knows no photos: the encoder built on it (encoder.h) turns a photo
 * into its input and its output into annotation vectors and class probabilities. */
#ifndef ATTNCAP_CNN_H
#define ATTNCAP_CNN_H
#include "attncap/common.h"
#include "attncap/tflite.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A runnable plan: shapes propagated for in_h x in_w, buffers allocated once. */
typedef struct ac_cnn ac_cnn;
/* output_tensor: tensor name to stop at, or NULL for the graph's output. threads: 0 = default. */
int ac_cnn_create(const ac_tfl_model *model, const char *output_tensor, int in_h, int in_w, int threads,
                  ac_cnn **cnn, ac_err *err);
/* Another plan of the same graph, output and input size with its own buffers and thread count, so
 * several photos can be encoded at once (the model must outlive it). Same results bit for bit. */
int ac_cnn_clone(const ac_cnn *cnn, int threads, ac_cnn **out, ac_err *err);
/* The same at another input size (in_h x in_w): a fully convolutional graph runs at any size, its
 * output grid following the input's. */
int ac_cnn_clone_size(const ac_cnn *cnn, int in_h, int in_w, int threads, ac_cnn **out, ac_err *err);
/* The same, living in cnn's memory: its activations and scratch in cnn's buffers (when they fit there,
 * as they do for an input no larger on either side) and cnn's packed filters, so a plan per input size
 * costs little more than its bookkeeping (a detector fed each photo at its own aspect). The two must
 * never run at once, and cnn must outlive it. */
int ac_cnn_clone_size_shared(const ac_cnn *cnn, int in_h, int in_w, int threads, ac_cnn **out, ac_err *err);
/* The graph up to several tensors at once (names: n of 1..AC_CNN_MAX_OUTPUTS, each computed once and
 * kept whole after a run, read with ac_cnn_output): a detector's levels, say, without the graph's own
 * decoding of them. The first is the one ac_cnn_run copies out and ac_cnn_output_shape describes;
 * such a plan runs in float32 or bf16x2, not int8. Clones keep the outputs. */
#define AC_CNN_MAX_OUTPUTS 8
int ac_cnn_create_outputs(const ac_tfl_model *model, const char *const *names, int n, int in_h, int in_w, int threads,
                          ac_cnn **cnn, ac_err *err);
/* input: in_h*in_w*C floats (NHWC, batch 1), already normalised. output: out_h*out_w*out_c floats of
 * the (first) output, or NULL to copy nothing (read the outputs in place with ac_cnn_output). */
int ac_cnn_run(ac_cnn *cnn, const float *input, float *output, ac_err *err);
/* NHWC for 4-D (a batch other than 1 folded into h); otherwise rows x last dimension on an h x 1 grid:
 * always h * w * c = the number of output floats. */
void ac_cnn_output_shape(const ac_cnn *cnn, int *h, int *w, int *c);
/* Output k (0 <= k < n of ac_cnn_create_outputs, 0 for ac_cnn_create's plan) in the plan's own buffer,
 * valid until the next run or ac_cnn_free, its shape as ac_cnn_output_shape's; NULL for another k or
 * an int8 plan (which dequantizes into ac_cnn_run's output only). */
const float *ac_cnn_output(const ac_cnn *cnn, int k, int *h, int *w, int *c);
/* The plan's own input buffer (in_h*in_w*C floats): fill it and pass it to ac_cnn_run to skip a copy. */
float *ac_cnn_input(ac_cnn *cnn);
void ac_cnn_input_shape(const ac_cnn *cnn, int *in_h, int *in_w, int *c);
double ac_cnn_flops(const ac_cnn *cnn); /* multiply-adds x 2 of one run */

/* The arithmetic of the convolutions' matrix products (most of a run's time). F32, the default:
 * float32 FMAs, the same bits on every x86-64 CPU and for any thread count. BF16X2: on AMX (Intel
 * Xeon 4th generation on), the products of a quantized model's filters as tile products of bfloat16
 * into float32: each activation split into two bfloat16 (16 bits of mantissa between them), each
 * weight the model's own integer (exact) times its scale. Outputs differ from F32's by rounding
 * alone (MobileNetV2 to Conv_1: 1 - cosine 7e-10; captions of 1,150 dev photos identical) and are
 * the same for any thread count; float filters, depthwise convs, pools and sums stay float32.
 * Returns -1 (err) if the CPU has no AMX-BF16. Clones keep the plan's precision. A BF16X2 run keeps
 * 192 KB of rounded activations on the stack of each thread that computes a product (glibc's
 * default thread stack is 8 MB; a caller's own threads need at least that much to spare). */
#define AC_HAVE_PRECISION 1 /* for code built against older trees too (bench/latency.c) */
/* INT8: a quantized graph (uint8 per-tensor or int8 per-channel) run on its own integers with
 * TFLite's reference integer semantics, bit for bit (zero points, int32 sums, requantization by
 * TFLite's fixed-point multipliers and rounding, fused activations as integer clamps, ADD with its
 * own rescaling): the input is quantized as the graph's input tensor says, the output dequantized.
 * Products on AVX512-VNNI or AVX-VNNI where the CPU has them, else plain C: the same integers on
 * every CPU and for any thread count. Runs CONV_2D, DEPTHWISE_CONV_2D, ADD, AVERAGE_POOL_2D,
 * MAX_POOL_2D, RESHAPE and QUANTIZE (MobileNetV2 up to Conv_1); -1 (err naming the operator or the
 * tensor) for another operator. Never chosen by AUTO. INT8 of a float graph (ac_cnn_quantized 0): its
 * convolutions' products on integers, each filter per output channel and each input per run
 * quantized to 8 bits, the rest float32 (cnn_q8.c; the detector's); the same for any thread count. */
typedef enum { AC_PRECISION_AUTO = -1, AC_PRECISION_F32 = 0, AC_PRECISION_BF16X2 = 1, AC_PRECISION_INT8 = 2 } ac_precision;
/* AUTO: BF16X2 where the CPU has it, else F32 (never fails for want of AMX). */
int ac_cnn_set_precision(ac_cnn *cnn, ac_precision p, ac_err *err);
int ac_precision_available(ac_precision p); /* F32, AUTO and INT8 always (the graph decides); BF16X2 with AMX-BF16 */
/* "auto", "f32", "bf16x2", "int8" -> the enum; an unknown name is one line naming it and the choices. */
int ac_precision_parse(const char *name, ac_precision *p, ac_err *err);
ac_precision ac_cnn_precision(const ac_cnn *cnn);
int ac_cnn_quantized(const ac_cnn *cnn); /* 1: the graph's input is UINT8 or INT8 (a quantized graph) */
/* fn(arg) on one of the plan's threads while the caller runs passes of the plan: that thread takes
 * no share of them until fn returns (the others take it), then joins them; with one thread fn runs at
 * once. Another piece of work (the detector's pass, on its own plan) beside this plan's without more
 * threads than cores. One at a time: ac_cnn_beside_wait returns when fn is done, and must be called
 * before the next ac_cnn_beside and before ac_cnn_free. */
void ac_cnn_beside(ac_cnn *cnn, void (*fn)(void *arg), void *arg);
void ac_cnn_beside_wait(ac_cnn *cnn);
void ac_cnn_free(ac_cnn *cnn);

#ifdef __cplusplus
}
#endif
#endif
