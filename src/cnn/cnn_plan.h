/* cnn_plan.h: the planned graph ac_cnn_create builds (cnn.c) and ac_cnn_run executes (cnn_exec.c). */
#ifndef ATTNCAP_CNN_PLAN_H
#define ATTNCAP_CNN_PLAN_H

#include "attncap/cnn.h"

#include "cnn_internal.h"

enum {
    OP_ADD = 0, OP_AVERAGE_POOL_2D = 1, OP_CONCATENATION = 2, OP_CONV_2D = 3, OP_DEPTHWISE_CONV_2D = 4,
    OP_DEQUANTIZE = 6, OP_FULLY_CONNECTED = 9, OP_LOGISTIC = 14, OP_MAX_POOL_2D = 17, OP_MUL = 18, OP_RELU = 19,
    OP_RELU_N1_TO_1 = 20, OP_RELU6 = 21, OP_RESHAPE = 22, OP_SOFTMAX = 25, OP_TANH = 28, OP_PAD = 34, OP_MEAN = 40,
    OP_SQUEEZE = 43, OP_QUANTIZE = 114, OP_HARD_SWISH = 117,
    OP_TRANSPOSE = 39, OP_SUB = 41, OP_STRIDED_SLICE = 45, OP_EXP = 47, OP_RESIZE_NEAREST_NEIGHBOR = 97,
    OP_SCATTER_ND = 122, OP_BROADCAST_TO = 130,
};

typedef struct cnn_tensor {
    int ndim;
    int shape[AC_TFL_MAX_DIMS];
    size_t count;
    float *data; /* constant data (from the model) or the assigned activation buffer */
    int slot;    /* activation buffer index, -1 for constants and unplanned tensors */
    int planned; /* shape known */
} cnn_tensor;

typedef struct cnn_step {
    const ac_tfl_op *op;
    int index;     /* operator index in the model */
    ac_conv_geom g;   /* window ops */
    float *packed; /* CONV_2D weights packed for ac_cnn_gemm */
    int packed_shared; /* packed is another plan's (ac_cnn_clone_size_shared): not freed with this one */
    uint16_t *bf16; /* the same packed for AMX (ac_cnn_gemm_bf16_pack), once the plan runs in bf16x2 */
    float *bf16_scale; /* and their column scales */
    int fused;     /* a pointwise CONV_2D run inside the next step, a DEPTHWISE_CONV_2D (ac_cnn_pw_dw) */
    int fuse_chunks; /* the head of a fused group: how many chunks the pool cuts it into */
    int sum_step;  /* > 0: the ADD (that step) runs inside this CONV_2D's output (plan_sums) */
    int absorbed;  /* an ADD run by the step before; a LOGISTIC or MUL run by a conv's SiLU; a PAD folded into the next conv */
    int silu_step; /* > 0: this conv's activation is the SiLU of LOGISTIC + MUL (that step), into the MUL's output (plan_silu) */
    int padded;    /* the step before is a PAD folded into this conv's padding: the conv reads the PAD's input (plan_pads) */
    unsigned long long slice_in; /* CONCATENATION: bit k set, input k is an absorbed STRIDED_SLICE's, gathered in place */
    int slice_first[AC_TFL_MAX_DIMS], slice_step[AC_TFL_MAX_DIMS]; /* STRIDED_SLICE: first index, step per input dim */
    int perm[AC_TFL_MAX_DIMS];                                     /* TRANSPOSE: output dim d reads input dim perm[d] */
} cnn_step;

struct ac_cnn {
    const ac_tfl_model *m;
    cnn_tensor *t;
    cnn_step *steps;
    int n_steps;
    int in_t, out_t;     /* out_t = outs[0] */
    int outs[AC_CNN_MAX_OUTPUTS], n_outs; /* the tensors the plan stops at (ac_cnn_create_outputs) */
    char *keep;          /* [n_tensors] 1 for each of outs: computed, never fused away or released */
    float **slots;       /* into arena */
    size_t *slot_size;
    int n_slots;
    float *scratch;      /* into arena */
    size_t scratch_size;
    float *fuse_scratch; /* band buffers of fused steps, per pool chunk (into arena) */
    size_t fuse_size;
    float *arena;        /* every activation and scratch buffer, one allocation */
    size_t arena_size;   /* floats */
    int arena_owned;     /* 0: another plan's (ac_cnn_clone_size_shared), which outlives this one */

    ac_pool *pool;
    int threads;
    int uses_blas; /* a step calls OpenBLAS (fully connected; convs without our own product) */
    ac_precision precision;
    struct cnn_int8 *int8; /* the integer plan (cnn_int8.c) while a quantized graph runs in AC_PRECISION_INT8 */
    struct cnn_q8 *q8;     /* a float graph's int8 convolutions (cnn_q8.c) while it runs in AC_PRECISION_INT8 */
    const struct ac_cnn *base; /* a shared clone's base (ac_cnn_clone_size_shared), which outlives it; else NULL */
    double flops;
};

/* Planning helpers (cnn.c) the operator files share: an error naming the operator; an output's
 * shape (checked against the element limit); operand k's tensor index once its shape is known
 * (want_const: it must be a constant). Each returns -1 with err set on failure. */
int ac_cnn_plan_err(const ac_cnn *c, const cnn_step *s, ac_err *err, const char *why);
int ac_cnn_plan_shape(ac_cnn *c, const cnn_step *s, int i, const int *shape, int ndim, ac_err *err);
int ac_cnn_plan_operand(const ac_cnn *c, const cnn_step *s, int k, int want_const, ac_err *err);

/* The N-D tensor operators (cnn_tensor_ops.c): ADD, SUB and MUL with NumPy broadcasting, EXP,
 * STRIDED_SLICE, TRANSPOSE, BROADCAST_TO, SCATTER_ND, RESIZE_NEAREST_NEIGHBOR. Each returns 1 for an
 * operator it does not handle; planning returns 0 or -1 (err set), running cannot fail once planned. */
int ac_cnn_plan_tensor_op(ac_cnn *c, cnn_step *s, ac_err *err);
int ac_cnn_run_tensor_op(const ac_cnn *c, const cnn_step *s);
/* STRIDED_SLICEs run inside the CONCATENATION that alone reads them (planned after every step, before
 * buffers: marks them absorbed and sets the concatenation's slice_in); the concatenation runs such a
 * slice (step s) into its output: element i of it at out[(i / row) * orow + i % row]. */
void ac_cnn_plan_slices_into_concat(ac_cnn *c, const char *keep, int *last_use);
void ac_cnn_run_slice_into(const ac_cnn *c, const cnn_step *s, float *out, size_t row, size_t orow);

static inline const char *ac_cnn_tname(const ac_cnn *c, int i) { return c->m->tensors[i].name; }

/* Input k of a step (NULL when absent). */
static inline const float *ac_cnn_in_data(const ac_cnn *c, const cnn_step *s, int k) {
    int i = s->op->n_in > k ? s->op->inputs[k] : -1;
    return i >= 0 ? c->t[i].data : NULL;
}

#endif
