/* attncap/cnn.h: the float32 NHWC engine that runs a TFLite graph (up to a chosen tensor) at any
 * input size, and the encoder built on it: photo -> L annotation vectors of D floats. */
#ifndef ATTNCAP_CNN_H
#define ATTNCAP_CNN_H
#include "attncap/common.h"
#include "attncap/image.h"
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
/* input: in_h*in_w*C floats (NHWC, batch 1), already normalised. output: out_h*out_w*out_c floats. */
int ac_cnn_run(ac_cnn *cnn, const float *input, float *output, ac_err *err);
void ac_cnn_output_shape(const ac_cnn *cnn, int *h, int *w, int *c);
/* The plan's own input buffer (in_h*in_w*C floats): fill it and pass it to ac_cnn_run to skip a copy. */
float *ac_cnn_input(ac_cnn *cnn);
double ac_cnn_flops(const ac_cnn *cnn); /* multiply-adds x 2 of one run */
void ac_cnn_free(ac_cnn *cnn);

/* How to turn pixels into the encoder's input: real = (pixel - mean) * scale. For uint8 models
 * taken from the input tensor's quantization (real = (q - zero_point) * scale). */
typedef struct ac_input_norm {
    float mean, scale;
} ac_input_norm;
ac_input_norm ac_tfl_input_norm(const ac_tfl_model *model);

/* Encoder = model + plan + preprocessing. The photo is squashed (aspect not kept) to size x size. */
typedef struct ac_encoder {
    ac_tfl_model *model;
    ac_cnn *cnn;
    int size;                 /* input side, e.g. 224 or 448 */
    char *layer;              /* output tensor name */
    ac_input_norm norm;
    int grid_h, grid_w, dim;  /* L = grid_h * grid_w annotation vectors of dim floats */
    char sha256[65];          /* of the .tflite file: the encoder's identity */
    char *path;
} ac_encoder;
/* layer NULL = default (the last conv layer before pooling; for MobileNetV2 "MobilenetV2/Conv_1/Relu6").
 * A layer name matches a tensor's full name or the first ';'-separated part of it (TFLite joins the
 * names of fused ops). size 0 = the model's native input size. threads 0 = default. */
int ac_encoder_open(const char *tflite_path, const char *layer, int size, int threads, ac_encoder *enc, ac_err *err);
/* out: grid_h*grid_w*dim floats (row-major grid, then channels). */
int ac_encoder_encode(ac_encoder *enc, const ac_image *img, float *out, ac_err *err);
void ac_encoder_close(ac_encoder *enc);
/* The whole classifier: an encoder whose "layer" is the model's output (class probabilities for the
 * usual softmax models; grid 1 x 1, dim = number of classes), at the model's native input size. */
int ac_classifier_open(const char *tflite_path, int threads, ac_encoder *enc, ac_err *err);
#ifdef __cplusplus
}
#endif
#endif
