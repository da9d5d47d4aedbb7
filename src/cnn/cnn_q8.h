/* cnn_q8.h: AC_PRECISION_INT8 for a float graph: its convolutions' products on integers, dynamically
 * quantized (cnn_q8.c); a quantized graph's int8 is cnn_int8_internal.h's. Not a public header. */
#ifndef ATTNCAP_CNN_Q8_H
#define ATTNCAP_CNN_Q8_H
#include "attncap/common.h"

struct ac_cnn;
struct cnn_step;
struct ac_cnn_sum;
typedef struct cnn_q8 cnn_q8;

/* The int8 filters of each CONV_2D of float filters that runs on its own, and the buffers a run needs.
 * share: the base's (c a shared clone of it, no larger, never running while it does), whose filters
 * and buffers c then borrows; or NULL. NULL with err set when out of memory. */
cnn_q8 *ac_cnn_q8_create(const struct ac_cnn *c, const cnn_q8 *share, ac_err *err);
void ac_cnn_q8_free(cnn_q8 *p);
/* Step s's convolution of x into out, then the residual sum if any: 0, or 1 when s is not one of
 * the plan's int8 steps (or x is not finite), for float32's kernels to run it. */
int ac_cnn_q8_conv(const struct ac_cnn *c, const struct cnn_step *s, const float *x, float *out, const struct ac_cnn_sum *sum);
#endif
