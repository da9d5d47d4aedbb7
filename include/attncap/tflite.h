/* attncap/tflite.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/tflite.h: a TFLite flatbuffer reader written from the public schema. Every offset, vector
 * length and buffer range is checked against the file size; weights are dequantized to float32
 * (uint8 per-tensor, int8 per-channel, int32 bias, float16, float32). */
#ifndef ATTNCAP_TFLITE_H
#define ATTNCAP_TFLITE_H
#include <stdint.h>

#include "attncap/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AC_TFL_MAX_DIMS 6

typedef struct ac_tfl_tensor {
    char *name;
    int type;   /* TFLite TensorType: 0 FLOAT32, 1 FLOAT16, 2 INT32, 3 UINT8, 9 INT8, ... */
    int ndim;
    int shape[AC_TFL_MAX_DIMS];
    /* quantization (per-tensor when n_quant == 1, per-channel along quant_dim otherwise) */
    int n_quant;
    float *scale;
    int64_t *zero_point;
    int quant_dim;
    float *data; /* dequantized constant data (weights/biases), NULL for activations */
    int32_t *ints; /* an INT32 constant's own integers (float32 does not hold every bias), else NULL */
} ac_tfl_tensor;

typedef struct ac_tfl_op {
    int opcode;          /* TFLite BuiltinOperator */
    char opname[32];     /* "CONV_2D", ... */
    int n_in, n_out;
    int *inputs, *outputs; /* tensor indices, -1 = optional absent */
    /* builtin options, those the engine uses */
    int padding;          /* 0 SAME, 1 VALID */
    int stride_w, stride_h, dilation_w, dilation_h;
    int filter_w, filter_h; /* pools */
    int depth_multiplier;
    int activation;       /* 0 NONE, 1 RELU, 2 RELU_N1_TO_1, 3 RELU6 */
    int axis;             /* concatenation */
    int keep_dims;        /* mean */
    float beta;           /* softmax */
    int n_new_shape;      /* reshape (ReshapeOptions.new_shape; else the op's second input) */
    int new_shape[AC_TFL_MAX_DIMS];
    /* strided slice: bit d of a mask is dimension d (TensorFlow's semantics); offset: end = begin + end */
    int begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask, slice_offset;
    int align_corners, half_pixel_centers; /* resize */
} ac_tfl_op;

typedef struct ac_tfl_model {
    int n_tensors, n_ops;
    ac_tfl_tensor *tensors;
    ac_tfl_op *ops;
    int n_inputs, n_outputs;
    int *inputs, *outputs;
    char *path;
} ac_tfl_model;

int ac_tfl_load(const char *path, ac_tfl_model **model, ac_err *err);
int ac_tfl_load_mem(const void *data, size_t len, const char *name, ac_tfl_model **model, ac_err *err);
void ac_tfl_free(ac_tfl_model *model);
int ac_tfl_find_tensor(const ac_tfl_model *model, const char *name); /* index or -1 */
const char *ac_tfl_opname(int builtin_code);  /* "CONV_2D", ... or NULL if unknown */
const char *ac_tfl_typename(int tensor_type); /* "FLOAT32", "UINT8", ... or "?" */
#ifdef __cplusplus
}
#endif
#endif
