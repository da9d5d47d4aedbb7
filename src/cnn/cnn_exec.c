/* cnn_exec.c: runs the plan ac_cnn_create made (cnn.c), step by step, into its reusable buffers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cnn_int8_internal.h"
#include "cnn_plan.h"
#include "cnn_q8.h"
#include "cnn_silu.h"

static void run_mean(const ac_cnn *c, const cnn_step *s) {
    const cnn_tensor *x = &c->t[s->op->inputs[0]];
    const ac_tfl_tensor *ax = &c->m->tensors[s->op->inputs[1]];
    cnn_tensor *o = &c->t[s->op->outputs[0]];
    int red[AC_TFL_MAX_DIMS] = {0};
    size_t nax = ax->ndim == 0 ? 1 : (size_t)ax->shape[0];
    for (size_t k = 0; k < nax; k++) red[((int)ax->data[k] + x->ndim) % x->ndim] = 1;
    /* output strides over the kept dims, 0 over the reduced ones */
    size_t ostride[AC_TFL_MAX_DIMS], st = 1, nred = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        ostride[d] = red[d] ? 0 : st;
        if (!red[d]) st *= (size_t)x->shape[d];
        else nred *= (size_t)x->shape[d];
    }
    memset(o->data, 0, o->count * sizeof(float));
    int idx[AC_TFL_MAX_DIMS] = {0};
    size_t oi = 0;
    for (size_t i = 0; i < x->count; i++) {
        o->data[oi] += x->data[i];
        for (int d = x->ndim - 1; d >= 0; d--) { /* odometer increment */
            oi += ostride[d];
            if (++idx[d] < x->shape[d]) break;
            oi -= ostride[d] * (size_t)x->shape[d];
            idx[d] = 0;
        }
    }
    float inv = 1.0f / (float)nred;
    for (size_t i = 0; i < o->count; i++) o->data[i] *= inv;
}

static void run_pad(const ac_cnn *c, const cnn_step *s) {
    const cnn_tensor *x = &c->t[s->op->inputs[0]];
    const float *p = c->m->tensors[s->op->inputs[1]].data;
    cnn_tensor *o = &c->t[s->op->outputs[0]];
    int xs[4] = {1, 1, 1, 1}, os[4] = {1, 1, 1, 1}, lo[4] = {0, 0, 0, 0}, off = 4 - x->ndim;
    for (int d = 0; d < x->ndim; d++) xs[off + d] = x->shape[d], os[off + d] = o->shape[d], lo[off + d] = (int)p[2 * d];
    memset(o->data, 0, o->count * sizeof(float));
    for (int i0 = 0; i0 < xs[0]; i0++)
        for (int i1 = 0; i1 < xs[1]; i1++)
            for (int i2 = 0; i2 < xs[2]; i2++) {
                size_t src = (((size_t)i0 * xs[1] + i1) * xs[2] + i2) * xs[3];
                size_t dst = ((((size_t)(i0 + lo[0]) * os[1] + i1 + lo[1]) * os[2]) + i2 + lo[2]) * os[3] + lo[3];
                memcpy(o->data + dst, x->data + src, (size_t)xs[3] * sizeof(float));
            }
}

typedef struct concat_job {
    const ac_cnn *c;
    const cnn_step *s;
    size_t outer, inner;
    int axis;
} concat_job;

/* Output rows (the dimensions before the axis) [outer t / nt, outer (t + 1) / nt): each input's part in turn. */
static void concat_rows(void *arg, int t, int nt) {
    const concat_job *j = arg;
    const cnn_tensor *o = &j->c->t[j->s->op->outputs[0]];
    const size_t orow = (size_t)o->shape[j->axis] * j->inner, r0 = j->outer * (size_t)t / (size_t)nt,
                 r1 = j->outer * (size_t)(t + 1) / (size_t)nt;
    size_t at = 0;
    for (int k = 0; k < j->s->op->n_in; k++) {
        const cnn_tensor *x = &j->c->t[j->s->op->inputs[k]];
        const size_t row = (size_t)x->shape[j->axis] * j->inner;
        if (!(j->s->slice_in >> k & 1)) /* a slice's part is gathered apart */
            for (size_t r = r0; r < r1; r++) memcpy(o->data + r * orow + at, x->data + r * row, row * sizeof(float));
        at += row;
    }
}

static void run_concat(const ac_cnn *c, const cnn_step *s) {
    cnn_tensor *o = &c->t[s->op->outputs[0]];
    int nd = o->ndim, axis = s->op->axis < 0 ? s->op->axis + nd : s->op->axis;
    concat_job j = {c, s, 1, 1, axis};
    for (int d = 0; d < axis; d++) j.outer *= (size_t)o->shape[d];
    for (int d = axis + 1; d < nd; d++) j.inner *= (size_t)o->shape[d];
    const size_t orow = (size_t)o->shape[axis] * j.inner;
    for (size_t k = 0, at = 0; k < (size_t)s->op->n_in; k++) { /* absorbed slices: from their own input */
        const int x = s->op->inputs[k];
        const size_t row = (size_t)c->t[x].shape[axis] * j.inner;
        if (s->slice_in >> k & 1) {
            const cnn_step *sl = s - 1;
            while (sl->op->outputs[0] != x) sl--; /* planned: an earlier step writes it */
            ac_cnn_run_slice_into(c, sl, o->data + at, row, orow);
        }
        at += row;
    }
    if (s->slice_in != (s->op->n_in < 64 ? (1ull << s->op->n_in) - 1 : ~0ull))
        ac_pool_run(o->count >= (1u << 15) && j.outer > 1 ? c->pool : NULL, concat_rows, &j);
    ac_cnn_bias_act(o->data, 1, (int)o->count, NULL, s->op->activation, NULL);
}

static void run_unary(const ac_cnn *c, const cnn_step *s) {
    const cnn_tensor *x = &c->t[s->op->inputs[0]];
    cnn_tensor *o = &c->t[s->op->outputs[0]];
    int code = s->op->opcode;
    if (code == OP_RELU || code == OP_RELU6 || code == OP_RELU_N1_TO_1) {
        memcpy(o->data, x->data, o->count * sizeof(float));
        ac_cnn_bias_act(o->data, 1, (int)o->count, NULL,
                        code == OP_RELU ? CNN_ACT_RELU : code == OP_RELU6 ? CNN_ACT_RELU6 : CNN_ACT_RELU_N1_TO_1, NULL);
        return;
    }
    if (code == OP_LOGISTIC) {
        ac_cnn_sigmoid(x->data, o->data, o->count);
        return;
    }
    for (size_t i = 0; i < o->count; i++) {
        float v = x->data[i];
        if (code == OP_LOGISTIC) v = 1.0f / (1.0f + expf(-v));
        else if (code == OP_TANH) v = tanhf(v);
        else if (code == OP_HARD_SWISH) v = v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f;
        o->data[i] = v;
    }
}

static ac_cnn_weights step_weights(const ac_cnn *c, const cnn_step *s) {
    const int bf16 = c->precision == AC_PRECISION_BF16X2;
    return (ac_cnn_weights){ac_cnn_in_data(c, s, 1), s->packed, bf16 ? s->bf16 : NULL, bf16 ? s->bf16_scale : NULL};
}

static void run_step(ac_cnn *c, const cnn_step *s) {
    const ac_tfl_op *op = s->op;
    cnn_tensor *o = &c->t[op->outputs[0]];
    const float *x = s->padded ? ac_cnn_in_data(c, s - 1, 0) : ac_cnn_in_data(c, s, 0); /* a folded PAD's input */
    if (s->fused || s->absorbed) return; /* runs with the next step, or ran with the one before */
    if (s->silu_step) o = &c->t[c->steps[s->silu_step].op->outputs[0]]; /* its activation is the MUL's SiLU */
    ac_cnn_sum sum = {NULL, 0}; /* a residual ADD run inside this conv: its output is the ADD's */
    if (s->sum_step) {
        const cnn_step *add = &c->steps[s->sum_step];
        int other = add->op->inputs[0] == op->outputs[0];
        sum = (ac_cnn_sum){ac_cnn_in_data(c, add, other), add->op->activation};
        o = &c->t[add->op->outputs[0]];
    }
    if (s > c->steps && s[-1].fused) { /* conv, depthwise [, projection]: s is the last */
        const cnn_step *pj = s->op->opcode == OP_CONV_2D ? s : NULL, *dw = pj ? s - 1 : s, *pw = dw - 1;
        const ac_cnn_weights pw_wt = step_weights(c, pw), pj_wt = pj ? step_weights(c, pj) : pw_wt;
        ac_cnn_pw_dw(&pw->g, ac_cnn_in_data(c, pw, 0), &pw_wt, ac_cnn_in_data(c, pw, 2), &dw->g, ac_cnn_in_data(c, dw, 1), ac_cnn_in_data(c, dw, 2),
                     pj ? &pj->g : NULL, pj ? &pj_wt : NULL, pj ? ac_cnn_in_data(c, pj, 2) : NULL, o->data, sum.add ? &sum : NULL,
                     c->fuse_scratch, c->pool, pw->fuse_chunks);
        return;
    }
    switch (op->opcode) {
    case OP_CONV_2D: {
        if (c->q8 && !ac_cnn_q8_conv(c, s, x, o->data, sum.add ? &sum : NULL)) break; /* its products on integers */
        const ac_cnn_weights wt = step_weights(c, s);
        ac_cnn_conv2d(&s->g, x, &wt, ac_cnn_in_data(c, s, 2), o->data, sum.add ? &sum : NULL, c->scratch, c->pool);
        break;
    }
    case OP_DEPTHWISE_CONV_2D: ac_cnn_depthwise(&s->g, x, ac_cnn_in_data(c, s, 1), ac_cnn_in_data(c, s, 2), o->data, c->pool); break;
    case OP_AVERAGE_POOL_2D: ac_cnn_pool2d(&s->g, 0, x, o->data); break;
    case OP_MAX_POOL_2D: ac_cnn_pool2d(&s->g, 1, x, o->data); break;
    case OP_MEAN: run_mean(c, s); break;
    case OP_PAD: run_pad(c, s); break;
    case OP_CONCATENATION: run_concat(c, s); break;
    case OP_SOFTMAX: {
        int n = o->shape[o->ndim - 1];
        ac_cnn_softmax(x, o->data, o->count / (size_t)n, n, op->beta);
        break;
    }
    case OP_FULLY_CONNECTED: {
        const ac_tfl_tensor *w = &c->m->tensors[op->inputs[1]];
        ac_cnn_fully_connected(o->shape[0], w->shape[0], w->shape[1], x, w->data, ac_cnn_in_data(c, s, 2), op->activation, o->data);
        break;
    }
    case OP_RESHAPE: case OP_SQUEEZE: case OP_QUANTIZE: case OP_DEQUANTIZE:
        if (o->data != x) memcpy(o->data, x, o->count * sizeof(float));
        break;
    default:
        if (ac_cnn_run_tensor_op(c, s)) run_unary(c, s);
        break;
    }
}
int ac_cnn_run(ac_cnn *c, const float *input, float *output, ac_err *err) {
    if (c->int8) return output ? ac_cnn_int8_run(c, input, output, err) : ac_errf(err, "%s: an int8 run needs an output buffer", c->m->path);
    cnn_tensor *in = &c->t[c->in_t], *o = &c->t[c->out_t];
    ac_pool_wake(c->pool); /* the workers wake while the input is copied, and spin from layer to layer */
    if (input != in->data) memcpy(in->data, input, in->count * sizeof(float));
    /* OpenBLAS's thread count is process-wide: set it only when needed, so plans running at once
     * in different threads (without BLAS) do not race on it. One thread: our pool spreads the
     * products (ac_cnn_gemm), and OpenBLAS's own splitting would make results depend on the count. */
    if (c->uses_blas) ac_set_threads(1);
    for (int k = 0; k < c->n_steps; k++) run_step(c, &c->steps[k]);
    for (int k = 0; k < c->n_outs; k++) {
        const cnn_tensor *t = &c->t[c->outs[k]];
        for (size_t i = 0; i < t->count; i++)
            if (!isfinite(t->data[i])) return ac_errf(err, "%s: non-finite value in '%.200s'", c->m->path, ac_cnn_tname(c, c->outs[k]));
    }
    if (output) memcpy(output, o->data, o->count * sizeof(float));
    return 0;
}

/* NHWC for 4-D (a batch other than 1 folded into h); otherwise rows x last dimension on a h x 1 grid.
 * Always h * w * ch = the number of floats. */
static void nhwc(const cnn_tensor *o, int *h, int *w, int *ch) {
    if (o->ndim == 4) *h = o->shape[0] * o->shape[1], *w = o->shape[2], *ch = o->shape[3];
    else if (o->ndim == 0) *h = *w = *ch = 1;
    else *ch = o->shape[o->ndim - 1], *w = 1, *h = (int)(o->count / (size_t)o->shape[o->ndim - 1]);
}

const float *ac_cnn_output(const ac_cnn *c, int k, int *h, int *w, int *ch) {
    if (k < 0 || k >= c->n_outs || c->int8) return NULL;
    nhwc(&c->t[c->outs[k]], h, w, ch);
    return c->t[c->outs[k]].data;
}

void ac_cnn_output_shape(const ac_cnn *c, int *h, int *w, int *ch) { nhwc(&c->t[c->out_t], h, w, ch); }

double ac_cnn_flops(const ac_cnn *c) { return c->flops; }

float *ac_cnn_input(ac_cnn *c) { return c->t[c->in_t].data; }

void ac_cnn_input_shape(const ac_cnn *c, int *in_h, int *in_w, int *ch) {
    const cnn_tensor *t = &c->t[c->in_t];
    *in_h = t->shape[1], *in_w = t->shape[2], *ch = t->shape[3];
}
