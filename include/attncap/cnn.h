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

/* The classifier head that follows the encoder's layer in the same graph (MobileNet: global average
 * pool -> 1x1 conv "Logits" -> reshape -> softmax), run on the annotation grid ac_encoder_encode
 * already wrote: ImageNet class probabilities of the whole photo, and of windows of the grid, from
 * the same CNN pass. The whole-grid row at the model's native size is the graph's own output bit
 * for bit (same kernels, same order; checked with the AVX-512 product and with OpenBLAS). At 448
 * (grid 14x14) a 7x7 window sees the photo at the scale the classifier was trained at, while the
 * whole 14x14 average is a flatter, less confident distribution. Cost at 448: 0.5 ms for the whole
 * photo, 0.9 ms with 5 windows, 7 ms with all 64 windows of 7x7 (the CNN: ~50 ms on one thread). */
typedef struct ac_class_head ac_class_head;
/* Fails (one line) when the graph past enc->layer is not pool -> [reshape] -> 1x1 conv or fully
 * connected -> [reshape] -> softmax. Keeps pointers into enc->model, which must outlive it. Read-only
 * after opening: one head serves any number of threads. */
int ac_class_head_open(const ac_encoder *enc, ac_class_head **head, ac_err *err);
int ac_class_head_classes(const ac_class_head *head); /* 1001 for the ImageNet MobileNets */
void ac_class_head_free(ac_class_head *head);

/* A window of the annotation grid: rows y..y+h-1, columns x..x+w-1. */
typedef struct ac_grid_window {
    int y, x, h, w;
} ac_grid_window;
/* Standard windows: side x side (clipped to the grid), per_axis positions per axis spread evenly from
 * edge to edge (2 = the four quadrants; 1 = one centred; side 7 and 8 at 14x14 = every position),
 * plus a centred one if `centre` and not already there. Writes at most cap; returns how many. */
int ac_grid_windows(int grid_h, int grid_w, int side, int per_axis, int centre, ac_grid_window *out, int cap);
/* ann: grid_h*grid_w*dim floats (as ac_encoder_encode wrote them). probs: (1 + n_win) rows of
 * n_classes: row 0 the whole grid, row 1 + k window k. Allocates its scratch per call. */
int ac_class_head_forward(const ac_class_head *head, const float *ann, int grid_h, int grid_w, int dim,
                          const ac_grid_window *win, int n_win, float *probs, ac_err *err);
/* out[c] = the maximum of probs[r][c] over the n_rows rows: each class at its most confident, over
 * the whole photo and the windows. */
void ac_class_probs_max(const float *probs, int n_rows, int n_classes, float *out);
#ifdef __cplusplus
}
#endif
#endif
