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
/* input: in_h*in_w*C floats (NHWC, batch 1), already normalised. output: out_h*out_w*out_c floats. */
int ac_cnn_run(ac_cnn *cnn, const float *input, float *output, ac_err *err);
void ac_cnn_output_shape(const ac_cnn *cnn, int *h, int *w, int *c);
/* The plan's own input buffer (in_h*in_w*C floats): fill it and pass it to ac_cnn_run to skip a copy. */
float *ac_cnn_input(ac_cnn *cnn);
double ac_cnn_flops(const ac_cnn *cnn); /* multiply-adds x 2 of one run */
void ac_cnn_free(ac_cnn *cnn);

#ifdef __cplusplus
}
#endif
#endif
