/* cnn_int8.c: AC_PRECISION_INT8 (cnn.h): a quantized graph run on its own integers, with TFLite's
 * reference integer semantics, from the plan cnn.c made (its steps, shapes and window geometry).
 *
 * The float photo is quantized as the graph's input tensor says (TFLite's AffineQuantize), every
 * operator runs on integers (kernels: cnn_int8_kernels.c) and the requested tensor is dequantized to
 * float32. Multipliers as TFLite prepares them: a uint8 graph's conv/depthwise multiplier from the
 * float32 product of input and filter scales (GetQuantizedConvolutionMultipler), an int8 graph's per
 * channel from double products (PopulateConvolutionQuantizationParams), ADD's three with a left
 * shift of 20 (add.cc), all through QuantizeMultiplier. Biases are the file's int32s (tflite.h's
 * ints); the model reader keeps 8-bit filters dequantized to float32, whose integers r = q - zero
 * point (|r| <= 255) are recovered exactly: the one r whose float32 product with the scale is the
 * constant (a filter where that fails is refused). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cnn_int8_internal.h"
#include "cnn_plan.h"
#include "alloc_internal.h"

enum { K_CONV, K_DW, K_ADD, K_POOL, K_COPY, K_REQ, K_DONE /* an ADD its CONV_2D ran (plan_sums) */ };

typedef struct i8_step {
    int kind, in0, in1, out;
    ac_i8_geom g;
    int pointwise;
    ac_i8_gemm_w w;
    int32_t *dwq, *inner; /* depthwise: the filter's q - zw, and bias less zx times each channel's sum */
    int16_t *dwp;         /* a 3 x 3 depthwise filter of multiplier 1: dwq packed in pairs of taps */
    int32_t *bias, *mult, *shift;
    ac_i8_requant rq;
    int32_t zx;
    ac_i8_add add; /* K_ADD; K_CONV with sum: the residual ADD it runs, its own output the first operand */
    int sum, other; /* K_CONV: runs the next step's ADD of tensor `other`; d->out is then the ADD's */
    int is_max, off;
    uint8_t lut[256]; /* K_REQ: stored in -> stored out */
} i8_step;

struct cnn_int8 {
    int n_steps;
    i8_step *st;
    int *slot; /* per tensor, -1 none */
    uint8_t **slots;
    int n_slots;
    uint8_t *cols;
    float in_scale, out_scale;
    int32_t in_zp, out_zp; /* stored zero points */
};

typedef struct tq {
    float scale;
    int32_t zp, off, qmin, qmax; /* stored zero point (zero point + off), off 128 for int8 */
    int is_int8;
} tq;

static int serr(const ac_cnn *c, const cnn_step *s, ac_err *err, const char *why) {
    const int o = s->op->n_out > 0 ? s->op->outputs[0] : -1;
    return ac_errf(err, "%s: int8: operator %d (%s, output '%.160s'): %s", c->m->path, s->index, s->op->opname,
                   o >= 0 ? ac_cnn_tname(c, o) : "?", why);
}

static int tensor_q(const ac_cnn *c, const cnn_step *s, int i, tq *q, ac_err *err) {
    const ac_tfl_tensor *t = &c->m->tensors[i];
    char why[300];
    if (t->type != 3 && t->type != 9) {
        snprintf(why, sizeof why, "tensor '%.120s' is %s, not a quantized UINT8 or INT8 (int8 runs quantized graphs only; use f32)",
                 t->name, ac_tfl_typename(t->type));
        return serr(c, s, err, why);
    }
    if (t->n_quant != 1 || !(t->scale[0] > 0) || !isfinite(t->scale[0])) {
        snprintf(why, sizeof why, "tensor '%.120s' has no per-tensor quantization", t->name);
        return serr(c, s, err, why);
    }
    q->is_int8 = t->type == 9;
    q->off = q->is_int8 ? 128 : 0;
    q->qmin = 0, q->qmax = 255;
    q->scale = t->scale[0];
    const int64_t zp = t->zero_point[0] + q->off;
    if (zp < 0 || zp > 255) {
        snprintf(why, sizeof why, "tensor '%.120s' has a zero point out of its type's range", t->name);
        return serr(c, s, err, why);
    }
    q->zp = (int32_t)zp;
    return 0;
}

/* TFLite's CalculateActivationRangeQuantized, in stored values. */
static void act_range(int act, const tq *o, int32_t *lo, int32_t *hi) {
    const int32_t zq = o->zp - o->off, qmin = -o->off, qmax = 255 - o->off;
#define QUANT(f) (zq + (int32_t)roundf((f) / o->scale))
    int32_t a = qmin, b = qmax;
    if (act == 1) a = QUANT(0.0f) > qmin ? QUANT(0.0f) : qmin;
    else if (act == 3) a = QUANT(0.0f) > qmin ? QUANT(0.0f) : qmin, b = QUANT(6.0f) < qmax ? QUANT(6.0f) : qmax;
    else if (act == 2) a = QUANT(-1.0f) > qmin ? QUANT(-1.0f) : qmin, b = QUANT(1.0f) < qmax ? QUANT(1.0f) : qmax;
#undef QUANT
    *lo = a + o->off, *hi = b + o->off;
}

/* The integer r = q - zero point of element i of constant t (channel ch), exactly: the one whose
 * product with the scale, rounded to float32, is the stored constant. -1 if none or not unique. */
static int recover(const ac_tfl_tensor *t, size_t i, int ch, int64_t *r) {
    const double sc = t->scale[t->n_quant > 1 ? ch : 0];
    const float v = t->data[i];
    if (!(sc > 0)) return -1;
    const double x = nearbyint((double)v / sc);
    if (fabs(x) > 2147483647.0 || (float)(x * sc) != v || (float)((x + 1) * sc) == v || (float)((x - 1) * sc) == v) return -1;
    *r = (int64_t)x;
    return 0;
}

static int filter_ok(const ac_tfl_tensor *w, int qdim, int nch) {
    return (w->type == 3 || w->type == 9) && (w->n_quant == 1 || (w->n_quant == nch && w->quant_dim == qdim));
}

/* Bias (or zeros) and the per-channel multipliers of a conv or depthwise step. */
static int conv_common(const ac_cnn *c, const cnn_step *s, i8_step *d, const tq *in, const tq *out, int nalloc, ac_err *err) {
    const ac_tfl_tensor *w = &c->m->tensors[s->op->inputs[1]];
    const int oc = s->g.oc;
    d->bias = ac_calloc((size_t)nalloc, sizeof *d->bias);
    d->mult = ac_calloc((size_t)nalloc, sizeof *d->mult);
    d->shift = ac_calloc((size_t)nalloc, sizeof *d->shift);
    if (!d->bias || !d->mult || !d->shift) return serr(c, s, err, "out of memory");
    if (s->op->n_in > 2 && s->op->inputs[2] >= 0) {
        const ac_tfl_tensor *b = &c->m->tensors[s->op->inputs[2]];
        if (b->type != 2 || !b->ints) return serr(c, s, err, "bias is not an INT32 vector");
        memcpy(d->bias, b->ints, (size_t)oc * sizeof *d->bias);
    }
    for (int o = 0; o < oc; o++) {
        const float ws = w->scale[w->n_quant > 1 ? o : 0];
        double real = in->is_int8 ? (double)in->scale * (double)ws / (double)out->scale
                                  : (double)(in->scale * ws) / (double)out->scale; /* legacy uint8: float product */
        int sh;
        ac_i8_quantize_multiplier(real, &d->mult[o], &sh);
        d->shift[o] = sh;
    }
    int32_t lo, hi;
    act_range(s->op->activation, out, &lo, &hi);
    d->rq = (ac_i8_requant){d->mult, d->shift, out->zp, lo, hi};
    d->zx = in->zp;
    return 0;
}

static int plan_conv(const ac_cnn *c, const cnn_step *s, i8_step *d, const tq *in, const tq *out, ac_err *err) {
    const ac_tfl_tensor *w = &c->m->tensors[s->op->inputs[1]];
    const int n = s->g.oc, k = s->g.kh * s->g.kw * s->g.c;
    if (!filter_ok(w, 0, n)) return serr(c, s, err, "filter is not UINT8/INT8 quantized per tensor or per output channel");
    if (k > 16384) return serr(c, s, err, "filter too deep for 32-bit sums");
    ac_i8_gemm_w *g = &d->w;
    g->n = n, g->k = k, g->kp = (k + 3) & ~3, g->np = (n + 15) & ~15;
    if (conv_common(c, s, d, in, out, g->np, err) < 0) return -1;
    g->packed = ac_calloc((size_t)g->np * g->kp, 1);
    g->col = ac_calloc((size_t)g->np, sizeof *g->col);
    if (!g->packed || !g->col) return serr(c, s, err, "out of memory");
    const int cw = w->type == 3 ? 128 : 0;
    for (int o = 0; o < n; o++) {
        const int64_t zw = w->zero_point[w->n_quant > 1 ? o : 0];
        if (o == 0) g->d = (int32_t)(zw - cw);
        else if (zw - cw != g->d) return serr(c, s, err, "filter zero points differ between channels");
        int64_t sum = 0;
        for (int j = 0; j < k; j++) {
            int64_t r;
            if (recover(w, (size_t)o * k + j, o, &r) < 0) return serr(c, s, err, "filter integers cannot be recovered exactly");
            const int64_t wp = r + zw - cw; /* w' = q - c */
            if (wp < -128 || wp > 127) return serr(c, s, err, "filter integer out of its type's range");
            g->packed[ac_i8_packed_at(g, o, j)] = (int8_t)wp;
            sum += wp;
        }
        g->col[o] = (int32_t)(d->bias[o] - (int64_t)d->zx * sum + (int64_t)k * d->zx * g->d);
    }
    d->g = (ac_i8_geom){s->g.h, s->g.w, s->g.c, s->g.oh, s->g.ow, s->g.oc, s->g.kh, s->g.kw, s->g.sh, s->g.sw, s->g.dh, s->g.dw, s->g.pt, s->g.pl};
    d->pointwise = s->g.kh == 1 && s->g.kw == 1 && s->g.sh == 1 && s->g.sw == 1 && s->g.pt == 0 && s->g.pl == 0;
    return 0;
}

static int plan_dw(const ac_cnn *c, const cnn_step *s, i8_step *d, const tq *in, const tq *out, ac_err *err) {
    const ac_tfl_tensor *w = &c->m->tensors[s->op->inputs[1]];
    const int oc = s->g.oc, taps = s->g.kh * s->g.kw;
    if (!filter_ok(w, 3, oc)) return serr(c, s, err, "filter is not UINT8/INT8 quantized per tensor or per channel");
    if (oc > 4096) return serr(c, s, err, "over 4096 channels");
    if (conv_common(c, s, d, in, out, oc, err) < 0) return -1;
    d->dwq = ac_malloc((size_t)taps * oc * sizeof *d->dwq);
    if (!d->dwq || !(d->inner = ac_malloc((size_t)oc * sizeof *d->inner))) return serr(c, s, err, "out of memory");
    memcpy(d->inner, d->bias, (size_t)oc * sizeof *d->inner);
    for (int t = 0; t < taps; t++)
        for (int o = 0; o < oc; o++) {
            int64_t r;
            if (recover(w, (size_t)t * oc + o, o, &r) < 0 || r < -255 || r > 255)
                return serr(c, s, err, "filter integers cannot be recovered exactly");
            d->dwq[(size_t)t * oc + o] = (int32_t)r;
            d->inner[o] -= d->zx * (int32_t)r;
        }
    d->g = (ac_i8_geom){s->g.h, s->g.w, s->g.c, s->g.oh, s->g.ow, s->g.oc, s->g.kh, s->g.kw, s->g.sh, s->g.sw, s->g.dh, s->g.dw, s->g.pt, s->g.pl};
    if (s->g.kh == 3 && s->g.kw == 3 && s->g.dh == 1 && s->g.dw == 1 && oc == s->g.c) {
        if (!(d->dwp = ac_malloc(ac_i8_dw3x3_packed_count(oc) * sizeof *d->dwp))) return serr(c, s, err, "out of memory");
        ac_i8_dw3x3_pack(d->dwq, oc, d->dwp);
    }
    return 0;
}

static int plan_add(const ac_cnn *c, const cnn_step *s, i8_step *d, ac_err *err) {
    tq a, b, o;
    if (tensor_q(c, s, s->op->inputs[0], &a, err) || tensor_q(c, s, s->op->inputs[1], &b, err) || tensor_q(c, s, s->op->outputs[0], &o, err))
        return -1;
    if (c->t[s->op->inputs[0]].count != c->t[s->op->outputs[0]].count || c->t[s->op->inputs[1]].count != c->t[s->op->outputs[0]].count)
        return serr(c, s, err, "broadcasting ADD has no int8 kernel");
    if (c->m->tensors[s->op->inputs[0]].data || c->m->tensors[s->op->inputs[1]].data) return serr(c, s, err, "ADD of a constant has no int8 kernel");
    ac_i8_add *p = &d->add;
    p->left_shift = 20;
    const double twice = 2 * (double)(a.scale > b.scale ? a.scale : b.scale);
    ac_i8_quantize_multiplier((double)a.scale / twice, &p->m1, &p->s1);
    ac_i8_quantize_multiplier((double)b.scale / twice, &p->m2, &p->s2);
    ac_i8_quantize_multiplier(twice / ((double)(1 << 20) * (double)o.scale), &p->mo, &p->so);
    p->zx1 = a.zp, p->zx2 = b.zp, p->zo = o.zp;
    act_range(s->op->activation, &o, &p->lo, &p->hi);
    return 0;
}

static int plan_one(const ac_cnn *c, const cnn_step *s, i8_step *d, ac_err *err) {
    const ac_tfl_op *op = s->op;
    d->in0 = op->inputs[0], d->in1 = op->n_in > 1 ? op->inputs[1] : -1, d->out = op->outputs[0];
    if (op->n_out != 1) return serr(c, s, err, "several outputs");
    tq in, out;
    if (tensor_q(c, s, d->in0, &in, err) || tensor_q(c, s, d->out, &out, err)) return -1;
    switch (op->opcode) {
    case OP_CONV_2D: d->kind = K_CONV; return plan_conv(c, s, d, &in, &out, err);
    case OP_DEPTHWISE_CONV_2D: d->kind = K_DW; return plan_dw(c, s, d, &in, &out, err);
    case OP_ADD: d->kind = K_ADD; return plan_add(c, s, d, err);
    case OP_AVERAGE_POOL_2D:
    case OP_MAX_POOL_2D:
        if (in.scale != out.scale || in.zp != out.zp || in.is_int8 != out.is_int8) return serr(c, s, err, "pool changes quantization");
        d->kind = K_POOL, d->is_max = op->opcode == OP_MAX_POOL_2D, d->off = in.off;
        act_range(op->activation, &out, &d->rq.lo, &d->rq.hi);
        d->g = (ac_i8_geom){s->g.h, s->g.w, s->g.c, s->g.oh, s->g.ow, s->g.oc, s->g.kh, s->g.kw, s->g.sh, s->g.sw, 1, 1, s->g.pt, s->g.pl};
        return 0;
    case OP_RESHAPE:
    case OP_SQUEEZE:
        if (in.scale != out.scale || in.zp != out.zp || in.is_int8 != out.is_int8) return serr(c, s, err, "reshape changes quantization");
        d->in1 = -1;
        d->kind = K_COPY;
        return 0;
    case OP_QUANTIZE: { /* requantization (quantize.cc's Requantize), as a table of the 256 stored values */
        int32_t m;
        int sh;
        ac_i8_quantize_multiplier((double)in.scale / (double)out.scale, &m, &sh);
        for (int v = 0; v < 256; v++) {
            const int32_t r = ac_i8_mbqm(v - in.zp, m, sh) + out.zp;
            d->lut[v] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
        }
        d->kind = K_REQ;
        return 0;
    }
    default: return serr(c, s, err, "no int8 kernel (int8 runs CONV_2D, DEPTHWISE_CONV_2D, ADD, AVERAGE_POOL_2D, MAX_POOL_2D, RESHAPE, QUANTIZE)");
    }
}

void ac_cnn_int8_free(cnn_int8 *p) {
    if (!p) return;
    for (int k = 0; k < p->n_steps; k++) {
        i8_step *d = &p->st[k];
        free(d->w.packed), free(d->w.col), free(d->dwq), free(d->dwp), free(d->inner), free(d->bias), free(d->mult), free(d->shift);
    }
    if (p->slots)
        for (int q = 0; q < p->n_slots; q++) free(p->slots[q]);
    free(p->slots), free(p->slot), free(p->st), free(p->cols), free(p);
}

/* Each CONV_2D whose output only the next step reads, an ADD of it and another tensor of its shape
 * (MobileNetV2's residual connections), runs that ADD on its requantized outputs as they are made
 * (ac_i8_gemm_add): the ADD's operands swapped if need be so the conv's output is the first (the sum
 * is symmetric), the conv writing the ADD's output; the conv's own output is never stored. */
static void plan_sums(const ac_cnn *c, cnn_int8 *p) {
    for (int k = 0; k + 1 < p->n_steps; k++) {
        i8_step *d = &p->st[k], *a = &p->st[k + 1];
        if (d->kind != K_CONV || a->kind != K_ADD || d->out == c->out_t || (a->in0 == d->out) == (a->in1 == d->out)) continue;
        int readers = 0;
        for (int q = 0; q < p->n_steps; q++)
            readers += p->st[q].in0 == d->out || (p->st[q].kind == K_ADD && p->st[q].in1 == d->out);
        if (readers != 1 || c->t[a->out].count != c->t[d->out].count) continue;
        ac_i8_add x = a->add;
        if (a->in1 == d->out) /* the conv is the second operand: swap */
            x.zx1 = a->add.zx2, x.zx2 = a->add.zx1, x.m1 = a->add.m2, x.m2 = a->add.m1, x.s1 = a->add.s2, x.s2 = a->add.s1;
        d->add = x;
        d->sum = 1, d->other = a->in0 == d->out ? a->in1 : a->in0;
        d->out = a->out;
        a->kind = K_DONE;
        k++;
    }
}

/* Buffers: each tensor a slot, freed after its last reader (the input and the output never). */
static int plan_buffers(const ac_cnn *c, cnn_int8 *p, size_t *cols, ac_err *err) {
    const int nt = c->m->n_tensors;
    int *last = ac_malloc((size_t)nt * sizeof *last), *busy = ac_calloc((size_t)p->n_steps + 2, sizeof *busy);
    size_t *size = ac_calloc((size_t)p->n_steps + 2, sizeof *size);
    p->slot = ac_malloc((size_t)nt * sizeof *p->slot);
    if (!last || !busy || !size || !p->slot) {
        free(last), free(busy), free(size);
        return ac_errf(err, "out of memory");
    }
    for (int i = 0; i < nt; i++) last[i] = -1, p->slot[i] = -1;
    for (int k = 0; k < p->n_steps; k++) {
        const i8_step *d = &p->st[k];
        if (d->kind == K_DONE) continue;
        last[d->in0] = k;
        if (d->kind == K_ADD) last[d->in1] = k;
        if (d->kind == K_CONV && d->sum) last[d->other] = k;
    }
    p->slot[c->in_t] = 0, busy[0] = 1, size[0] = c->t[c->in_t].count, p->n_slots = 1;
    for (int k = 0; k < p->n_steps; k++) {
        const i8_step *d = &p->st[k];
        if (d->kind == K_DONE) continue;
        const size_t need = c->t[d->out].count;
        int best = -1;
        for (int q = 0; q < p->n_slots; q++)
            if (!busy[q] && (best < 0 || (size[q] >= need) > (size[best] >= need) ||
                             ((size[q] >= need) == (size[best] >= need) && (size[q] >= need ? size[q] < size[best] : size[q] > size[best]))))
                best = q;
        if (best < 0) best = p->n_slots++;
        if (size[best] < need) size[best] = need;
        busy[best] = 1, p->slot[d->out] = best;
        if (d->kind == K_CONV && !d->pointwise) {
            const size_t n = (size_t)d->g.oh * d->g.ow * d->w.kp;
            if (n > *cols) *cols = n;
        }
        const int ins[2] = {d->in0, d->kind == K_ADD ? d->in1 : d->kind == K_CONV && d->sum ? d->other : -1};
        for (int j = 0; j < 2; j++)
            if (ins[j] >= 0 && ins[j] != c->in_t && ins[j] != c->out_t && last[ins[j]] == k && p->slot[ins[j]] >= 0 &&
                (j == 0 || ins[1] != ins[0]))
                busy[p->slot[ins[j]]] = 0;
    }
    int rc = 0;
    if (!(p->slots = ac_calloc((size_t)p->n_slots, sizeof *p->slots))) rc = ac_errf(err, "out of memory");
    for (int q = 0; !rc && q < p->n_slots; q++)
        if (!(p->slots[q] = ac_malloc(size[q] ? size[q] : 1))) rc = ac_errf(err, "out of memory for int8 activations");
    free(last), free(busy), free(size);
    return rc;
}

cnn_int8 *ac_cnn_int8_create(const ac_cnn *c, ac_err *err) {
    cnn_int8 *p = ac_calloc(1, sizeof *p);
    if (!p || !(p->st = ac_calloc((size_t)c->n_steps + 1, sizeof *p->st))) {
        free(p);
        ac_errf(err, "out of memory");
        return NULL;
    }
    const cnn_step pseudo = {.op = c->steps[0].op, .index = c->steps[0].index};
    tq in, out;
    const ac_tfl_tensor *it = &c->m->tensors[c->in_t];
    if (it->type != 3 && it->type != 9) {
        ac_errf(err, "%s: int8 runs quantized graphs only, and this one's input '%.120s' is %s (use f32)", c->m->path, it->name,
                ac_tfl_typename(it->type));
        goto fail;
    }
    if (tensor_q(c, &pseudo, c->in_t, &in, err) || tensor_q(c, &pseudo, c->out_t, &out, err)) goto fail;
    p->in_scale = in.scale, p->in_zp = in.zp;
    p->out_scale = out.scale, p->out_zp = out.zp;
    for (int k = 0; k < c->n_steps; k++, p->n_steps++)
        if (plan_one(c, &c->steps[k], &p->st[k], err) < 0) {
            p->n_steps++;
            goto fail;
        }
    plan_sums(c, p);
    size_t cols = 0;
    if (plan_buffers(c, p, &cols, err) < 0) goto fail;
    if (cols && !(p->cols = ac_malloc(cols))) {
        ac_errf(err, "out of memory for im2col");
        goto fail;
    }
    return p;
fail:
    ac_cnn_int8_free(p);
    return NULL;
}

static uint8_t *buf(const cnn_int8 *p, int t) { return p->slots[p->slot[t]]; }

int ac_cnn_int8_run(ac_cnn *c, const float *input, float *output, ac_err *err) {
    cnn_int8 *p = c->int8;
    const size_t n_in = c->t[c->in_t].count;
    uint8_t *x = buf(p, c->in_t);
    if (ac_i8_quantize(input, n_in, p->in_scale, p->in_zp, x) < 0) return ac_errf(err, "%s: non-finite input value", c->m->path);
    ac_pool_wake(c->pool);
    for (int k = 0; k < p->n_steps; k++) {
        i8_step *d = &p->st[k];
        if (d->kind == K_DONE) continue; /* its conv ran it (its first operand has no buffer) */
        const uint8_t *a = buf(p, d->in0);
        uint8_t *o = buf(p, d->out);
        switch (d->kind) {
        case K_CONV: {
            const int m = d->g.oh * d->g.ow;
            if (!d->pointwise) ac_i8_im2col_all(&d->g, a, (uint8_t)d->zx, d->w.kp, p->cols, c->pool);
            ac_i8_gemm_add(m, d->pointwise ? a : p->cols, d->pointwise ? d->g.c : d->w.kp, &d->w, &d->rq, o, d->g.oc,
                           d->sum ? &d->add : NULL, d->sum ? buf(p, d->other) : NULL, c->pool);
            break;
        }
        case K_DW: ac_i8_depthwise(&d->g, a, d->zx, d->dwq, d->dwp, d->bias, d->inner, &d->rq, o, c->pool); break;
        case K_ADD: ac_i8_add_run(&d->add, a, buf(p, d->in1), o, c->t[d->out].count, c->pool); break;
        case K_POOL: ac_i8_pool(&d->g, d->is_max, d->off, d->rq.lo, d->rq.hi, a, o); break;
        case K_COPY: if (o != a) memcpy(o, a, c->t[d->out].count); break;
        case K_REQ:
            for (size_t i = 0; i < c->t[d->out].count; i++) o[i] = d->lut[a[i]];
            break;
        }
    }
    const uint8_t *y = buf(p, c->out_t);
    const double sc = p->out_scale;
    for (size_t i = 0; i < c->t[c->out_t].count; i++) output[i] = (float)(sc * ((int32_t)y[i] - p->out_zp));
    return 0;
}

const uint8_t *ac_cnn_int8_stored(const ac_cnn *c, int input, int *off) {
    const cnn_int8 *p = c->int8;
    if (!p) return NULL;
    const int t = input ? c->in_t : c->out_t;
    *off = c->m->tensors[t].type == 9 ? 128 : 0;
    return buf(p, t);
}
