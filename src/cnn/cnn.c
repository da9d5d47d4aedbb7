/* cnn.c: plans a TFLite graph to run in float32 (NHWC, batch 1) at any input size (cnn_exec.c runs it).
 *
 * ac_cnn_create plans once: it keeps only the operators needed for the requested tensor, propagates
 * shapes from the chosen input size, checks every operator's operands, and assigns each activation
 * tensor to one of a few reusable buffers (a tensor's buffer is released after its last reader), so
 * ac_cnn_run allocates nothing. Quantized models run with their dequantized weights: QUANTIZE and
 * DEQUANTIZE become copies, and activations stay in float. */
#include "attncap/cnn.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cnn_int8_internal.h"
#include "cnn_plan.h"
#include "cnn_q8.h"
#include "alloc_internal.h"

/* A plan's activation and scratch buffers (free() frees them). Those of 4 MB or more (at 448: the first
 * layers' outputs, the band buffers) are asked for transparent huge pages where Linux offers them on
 * request (THP "madvise"): a 2 MB page faults in once where 512 pages of 4 KB fault one by one, which
 * on the first photo after loading costs more than the pass itself touching them, and the CNN's
 * streaming over them misses the TLB less. Without THP it is an aligned allocation like any other. */
static void *activations_alloc(size_t bytes) {
    enum { HUGE = 2u << 20 };
    if (bytes < 2 * (size_t)HUGE) return ac_malloc(bytes);
    const size_t n = (bytes + HUGE - 1) / HUGE * HUGE;
    void *p = ac_aligned_alloc(HUGE, n);
#if defined(MADV_HUGEPAGE)
    if (p) (void)madvise(p, n, MADV_HUGEPAGE); /* advice only: its failure changes nothing */
#endif
    return p;
}

/* The offset of n more floats in an arena of *total floats so far, at a 64-byte boundary. */
static size_t arena_take(size_t *total, size_t n) {
    const size_t at = *total;
    *total += (n + 15) / 16 * 16;
    return at;
}

static size_t shape_count(const int *shape, int ndim) {
    size_t n = 1;
    for (int d = 0; d < ndim; d++) n *= (size_t)shape[d];
    return n;
}

static int act_ok(const cnn_step *s) { return s->op->activation >= 0 && s->op->activation <= 3; }

/* Window geometry for CONV_2D / DEPTHWISE_CONV_2D / pools. */
static int plan_window(ac_cnn *c, cnn_step *s, const cnn_tensor *in, int kh, int kw, int oc, ac_err *err) {
    const ac_tfl_op *op = s->op;
    if (in->ndim != 4 || in->shape[0] != 1) return ac_cnn_plan_err(c, s, err, "input must be 1 x H x W x C");
    if (op->stride_h < 1 || op->stride_w < 1 || op->dilation_h < 1 || op->dilation_w < 1 || op->stride_h > 1024 ||
        op->stride_w > 1024 || op->dilation_h > 1024 || op->dilation_w > 1024)
        return ac_cnn_plan_err(c, s, err, "stride or dilation out of range");
    if (kh < 1 || kw < 1 || kh > 4096 || kw > 4096) return ac_cnn_plan_err(c, s, err, "kernel size out of range");
    if (op->padding != 0 && op->padding != 1) return ac_cnn_plan_err(c, s, err, "unknown padding type");
    if (!act_ok(s)) return ac_cnn_plan_err(c, s, err, "unsupported fused activation (only NONE, RELU, RELU_N1_TO_1, RELU6)");
    ac_conv_geom *g = &s->g;
    g->h = in->shape[1], g->w = in->shape[2], g->c = in->shape[3];
    g->kh = kh, g->kw = kw, g->sh = op->stride_h, g->sw = op->stride_w, g->dh = op->dilation_h, g->dw = op->dilation_w;
    g->oh = ac_cnn_out_size(g->h, kh, g->sh, g->dh, op->padding == 1, &g->pt);
    g->ow = ac_cnn_out_size(g->w, kw, g->sw, g->dw, op->padding == 1, &g->pl);
    g->oc = oc;
    g->act = op->activation;
    int shape[4] = {1, g->oh, g->ow, oc};
    return ac_cnn_plan_shape(c, s, op->outputs[0], shape, 4, err);
}

/* Checks a weight/bias constant's shape. */
static int check_const(const ac_cnn *c, const cnn_step *s, int i, int ndim, const int *shape, ac_err *err) {
    const ac_tfl_tensor *t = &c->m->tensors[i];
    int ok = t->ndim == ndim;
    for (int d = 0; ok && d < ndim; d++) ok = t->shape[d] == shape[d];
    if (!ok) {
        char msg[256];
        snprintf(msg, sizeof msg, "constant '%.120s' has an unexpected shape", t->name);
        return ac_cnn_plan_err(c, s, err, msg);
    }
    return 0;
}

/* base: a plan of the same graph whose packed filters this one borrows (ac_cnn_clone_size_shared), or NULL. */
static int plan_step(ac_cnn *c, cnn_step *s, const ac_cnn *base, ac_err *err) {
    const ac_tfl_op *op = s->op;
    const ac_tfl_model *m = c->m;
    if (op->n_out < 1 || op->outputs[0] < 0) return ac_cnn_plan_err(c, s, err, "operator has no output");
    if (m->tensors[op->outputs[0]].data) return ac_cnn_plan_err(c, s, err, "operator writes a constant tensor");
    if (c->t[op->outputs[0]].planned) return ac_cnn_plan_err(c, s, err, "output tensor is already computed (graph not in order)");
    int out = op->outputs[0], a, b, r = ac_cnn_plan_tensor_op(c, s, err);
    if (r <= 0) return r;
    switch (op->opcode) {
    case OP_CONV_2D: {
        if ((a = ac_cnn_plan_operand(c, s, 0, 0, err)) < 0 || (b = ac_cnn_plan_operand(c, s, 1, 1, err)) < 0) return -1;
        const ac_tfl_tensor *w = &m->tensors[b];
        if (w->ndim != 4) return ac_cnn_plan_err(c, s, err, "filter must be 4-D [out][kh][kw][in]");
        if (c->t[a].ndim != 4 || w->shape[3] != c->t[a].shape[3]) return ac_cnn_plan_err(c, s, err, "filter depth differs from the input's channels");
        if (op->n_in > 2 && op->inputs[2] >= 0) {
            int bi = ac_cnn_plan_operand(c, s, 2, 1, err);
            if (bi < 0 || check_const(c, s, bi, 1, &w->shape[0], err) < 0) return -1;
        }
        if (plan_window(c, s, &c->t[a], w->shape[1], w->shape[2], w->shape[0], err) < 0) return -1;
        size_t need = ac_cnn_conv2d_scratch(&s->g);
        if (need > ac_limits_get().max_tensor_elems) {
            char why[160];
            snprintf(why, sizeof why, "im2col buffer of %zu floats is over the limit of %llu tensor elements (raise ATTNCAP_MAX_TENSOR_ELEMS)",
                     need, (unsigned long long)ac_limits_get().max_tensor_elems);
            return ac_cnn_plan_err(c, s, err, why);
        }
        if (need > c->scratch_size) c->scratch_size = need;
        int K = s->g.kh * s->g.kw * s->g.c;
        const cnn_step *twin = base && c->n_steps < base->n_steps ? &base->steps[c->n_steps] : NULL;
        if (twin && twin->op == s->op && twin->packed) { /* the same filter packed the same way: base's */
            s->packed = twin->packed;
            s->packed_shared = 1;
        } else {
            if (!(s->packed = ac_malloc(ac_cnn_gemm_packed_size(s->g.oc, K) * sizeof(float)))) return ac_cnn_plan_err(c, s, err, "out of memory");
            ac_cnn_gemm_pack(s->g.oc, K, w->data, s->packed);
        }
        c->flops += 2.0 * s->g.oh * s->g.ow * (double)s->g.oc * s->g.kh * s->g.kw * s->g.c;
#if !defined(AC_CNN_OWN_GEMM)
        c->uses_blas = 1;
#endif
        return 0;
    }
    case OP_DEPTHWISE_CONV_2D: {
        if ((a = ac_cnn_plan_operand(c, s, 0, 0, err)) < 0 || (b = ac_cnn_plan_operand(c, s, 1, 1, err)) < 0) return -1;
        const ac_tfl_tensor *w = &m->tensors[b];
        if (w->ndim != 4 || w->shape[0] != 1) return ac_cnn_plan_err(c, s, err, "filter must be [1][kh][kw][out]");
        if (c->t[a].ndim != 4) return ac_cnn_plan_err(c, s, err, "input must be 1 x H x W x C");
        int cin = c->t[a].shape[3], oc = w->shape[3];
        if (cin <= 0 || oc % cin != 0) return ac_cnn_plan_err(c, s, err, "filter channels are not a multiple of the input's");
        if (op->n_in > 2 && op->inputs[2] >= 0) {
            int bi = ac_cnn_plan_operand(c, s, 2, 1, err);
            if (bi < 0 || check_const(c, s, bi, 1, &oc, err) < 0) return -1;
        }
        if (plan_window(c, s, &c->t[a], w->shape[1], w->shape[2], oc, err) < 0) return -1;
        c->flops += 2.0 * s->g.oh * s->g.ow * (double)s->g.oc * s->g.kh * s->g.kw;
        return 0;
    }
    case OP_AVERAGE_POOL_2D:
    case OP_MAX_POOL_2D:
        if ((a = ac_cnn_plan_operand(c, s, 0, 0, err)) < 0) return -1;
        if (c->t[a].ndim != 4) return ac_cnn_plan_err(c, s, err, "input must be 1 x H x W x C");
        return plan_window(c, s, &c->t[a], op->filter_h, op->filter_w, c->t[a].shape[3], err);
    case OP_QUANTIZE:
    case OP_DEQUANTIZE:
    case OP_RELU:
    case OP_RELU6:
    case OP_RELU_N1_TO_1:
    case OP_LOGISTIC:
    case OP_TANH:
    case OP_HARD_SWISH:
        if ((a = ac_cnn_plan_operand(c, s, 0, 0, err)) < 0) return -1;
        return ac_cnn_plan_shape(c, s, out, c->t[a].shape, c->t[a].ndim, err);
    case OP_SOFTMAX:
        if ((a = ac_cnn_plan_operand(c, s, 0, 0, err)) < 0) return -1;
        if (c->t[a].ndim < 1) return ac_cnn_plan_err(c, s, err, "softmax of a scalar");
        return ac_cnn_plan_shape(c, s, out, c->t[a].shape, c->t[a].ndim, err);
    case OP_RESHAPE:
    case OP_SQUEEZE: {
        if ((a = ac_cnn_plan_operand(c, s, 0, 0, err)) < 0) return -1;
        int shape[AC_TFL_MAX_DIMS], nd = 0, infer = -1;
        const ac_tfl_tensor *st = op->opcode == OP_RESHAPE && op->n_in > 1 && op->inputs[1] >= 0 ? &m->tensors[op->inputs[1]] : NULL;
        if (st && st->data && st->ndim == 1 && st->shape[0] <= AC_TFL_MAX_DIMS) {
            nd = st->shape[0];
            for (int d = 0; d < nd; d++) {
                float v = st->data[d];
                if (!(v >= -1 && v <= 1e9)) return ac_cnn_plan_err(c, s, err, "bad target shape");
                shape[d] = (int)v;
            }
        } else if (op->opcode == OP_RESHAPE && op->n_new_shape > 0) {
            nd = op->n_new_shape;
            memcpy(shape, op->new_shape, (size_t)nd * sizeof *shape);
        } else { /* the shape the file recorded for the output */
            nd = m->tensors[out].ndim;
            memcpy(shape, m->tensors[out].shape, (size_t)nd * sizeof *shape);
        }
        size_t known = 1;
        for (int d = 0; d < nd; d++) {
            if (shape[d] == -1 && infer < 0) infer = d;
            else if (shape[d] <= 0) return ac_cnn_plan_err(c, s, err, "bad target shape");
            else known *= (size_t)shape[d];
        }
        if (infer >= 0) {
            if (c->t[a].count % known) return ac_cnn_plan_err(c, s, err, "cannot infer the -1 dimension");
            shape[infer] = (int)(c->t[a].count / known);
        } else if (known != c->t[a].count) {
            return ac_cnn_plan_err(c, s, err, "element count differs from the target shape (is the input size the one this part "
                          "of the model was built for?)");
        }
        return ac_cnn_plan_shape(c, s, out, shape, nd, err);
    }
    case OP_MEAN: {
        if ((a = ac_cnn_plan_operand(c, s, 0, 0, err)) < 0 || (b = ac_cnn_plan_operand(c, s, 1, 1, err)) < 0) return -1;
        const cnn_tensor *x = &c->t[a];
        const ac_tfl_tensor *ax = &m->tensors[b];
        size_t nax = ax->ndim == 0 ? 1 : (size_t)ax->shape[0];
        if (ax->ndim > 1 || nax > AC_TFL_MAX_DIMS) return ac_cnn_plan_err(c, s, err, "bad axes operand");
        int red[AC_TFL_MAX_DIMS] = {0}, shape[AC_TFL_MAX_DIMS], nd = 0;
        for (size_t k = 0; k < nax; k++) {
            if (!(ax->data[k] >= -AC_TFL_MAX_DIMS && ax->data[k] <= AC_TFL_MAX_DIMS)) return ac_cnn_plan_err(c, s, err, "axis out of range");
            int d = (int)ax->data[k];
            if (d < 0) d += x->ndim;
            if (d < 0 || d >= x->ndim) return ac_cnn_plan_err(c, s, err, "axis out of range");
            red[d] = 1;
        }
        for (int d = 0; d < x->ndim; d++)
            if (!red[d]) shape[nd++] = x->shape[d];
            else if (op->keep_dims) shape[nd++] = 1;
        if (nd == 0) shape[nd++] = 1;
        return ac_cnn_plan_shape(c, s, out, shape, nd, err);
    }
    case OP_PAD: {
        if ((a = ac_cnn_plan_operand(c, s, 0, 0, err)) < 0 || (b = ac_cnn_plan_operand(c, s, 1, 1, err)) < 0) return -1;
        const cnn_tensor *x = &c->t[a];
        const ac_tfl_tensor *p = &m->tensors[b];
        if (p->ndim != 2 || p->shape[0] != x->ndim || p->shape[1] != 2 || x->ndim > 4) return ac_cnn_plan_err(c, s, err, "paddings must be [rank][2], rank <= 4");
        int shape[AC_TFL_MAX_DIMS];
        for (int d = 0; d < x->ndim; d++) {
            float lo = p->data[2 * d], hi = p->data[2 * d + 1];
            if (lo < 0 || hi < 0 || lo > 1e6 || hi > 1e6) return ac_cnn_plan_err(c, s, err, "padding out of range");
            shape[d] = x->shape[d] + (int)lo + (int)hi;
        }
        return ac_cnn_plan_shape(c, s, out, shape, x->ndim, err);
    }
    case OP_CONCATENATION: {
        if (op->n_in < 1) return ac_cnn_plan_err(c, s, err, "no inputs");
        if ((a = ac_cnn_plan_operand(c, s, 0, 0, err)) < 0) return -1;
        if (!act_ok(s)) return ac_cnn_plan_err(c, s, err, "unsupported fused activation");
        int nd = c->t[a].ndim, axis = op->axis < 0 ? op->axis + nd : op->axis, shape[AC_TFL_MAX_DIMS];
        if (axis < 0 || axis >= nd) return ac_cnn_plan_err(c, s, err, "axis out of range");
        memcpy(shape, c->t[a].shape, sizeof shape);
        for (int k = 1; k < op->n_in; k++) {
            if ((b = ac_cnn_plan_operand(c, s, k, 0, err)) < 0) return -1;
            if (c->t[b].ndim != nd) return ac_cnn_plan_err(c, s, err, "inputs differ in rank");
            for (int d = 0; d < nd; d++)
                if (d != axis && c->t[b].shape[d] != shape[d]) return ac_cnn_plan_err(c, s, err, "inputs differ off the axis");
            shape[axis] += c->t[b].shape[axis];
        }
        return ac_cnn_plan_shape(c, s, out, shape, nd, err);
    }
    case OP_FULLY_CONNECTED: {
        if ((a = ac_cnn_plan_operand(c, s, 0, 0, err)) < 0 || (b = ac_cnn_plan_operand(c, s, 1, 1, err)) < 0) return -1;
        if (!act_ok(s)) return ac_cnn_plan_err(c, s, err, "unsupported fused activation");
        const ac_tfl_tensor *w = &m->tensors[b];
        if (w->ndim != 2 || w->shape[1] <= 0) return ac_cnn_plan_err(c, s, err, "weights must be [out][in]");
        if (c->t[a].count % (size_t)w->shape[1]) return ac_cnn_plan_err(c, s, err, "input size is not a multiple of the weights' depth");
        if (op->n_in > 2 && op->inputs[2] >= 0) {
            int bi = ac_cnn_plan_operand(c, s, 2, 1, err);
            if (bi < 0 || check_const(c, s, bi, 1, &w->shape[0], err) < 0) return -1;
        }
        int shape[2] = {(int)(c->t[a].count / (size_t)w->shape[1]), w->shape[0]};
        c->flops += 2.0 * shape[0] * (double)w->shape[0] * w->shape[1];
        c->uses_blas = 1;
        return ac_cnn_plan_shape(c, s, out, shape, 2, err);
    }
    default: {
        char msg[128];
        snprintf(msg, sizeof msg, "unsupported operator %s", op->opname);
        return ac_cnn_plan_err(c, s, err, msg);
    }
    }
}


/* ---- planning ---- */

static int find_output(const ac_tfl_model *m, const char *name, ac_err *err) {
    if (!name) {
        if (m->n_outputs < 1) return ac_errf(err, "%s: model declares no output", m->path);
        return m->outputs[0];
    }
    int i = ac_tfl_find_tensor(m, name);
    if (i < 0) return ac_errf(err, "%s: no tensor named '%s' (see `attncap info %s`)", m->path, name, m->path);
    return i;
}

#if defined(AC_CNN_OWN_GEMM)
/* How many chunks a fused group's output rows are cut into. Each chunk recomputes the kh - sh
 * expanded rows it shares with its neighbour, so a group gets fewer, longer chunks than the pool's
 * default: one per thread, more only while each keeps 32 output rows or more per thread (at 448 on
 * two threads the first group gets 6 chunks, the others 2; one thread: 1, nothing recomputed). */
static int fuse_chunks(const ac_cnn *c, const ac_conv_geom *dw) {
    int T = ac_pool_threads(c->pool), per = dw->oh / (32 * T), most = ac_pool_chunks(c->pool) / T;
    return T * (per < 1 ? 1 : per > most ? most : per);
}
#endif

/* Marks each CONV_2D whose output is large (past L2) and read only by the next step, a
 * depthwise conv, to run fused with it (ac_cnn_pw_dw), and sizes the band buffers. Before buffers
 * are assigned: the fused conv's output needs none, and its inputs must outlive the pair. Only with our
 * own product (AVX-512 or AVX2), whose results do not depend on how the rows are blocked. Not when the chunks
 * would recompute more than 1/8 of the expanded rows. (At 448 on two threads the 28 x 28 blocks,
 * fused in two chunks that recompute 2 of 30 rows, took 0.44 ms where unfused they took 0.64.) */
static int plan_fusion(ac_cnn *c, const char *keep, int *last_use, ac_err *err) {
#if defined(AC_CNN_OWN_GEMM)
    size_t need = 0;
    for (int k = 0; k + 1 < c->n_steps; k++) {
        cnn_step *pw = &c->steps[k], *dw = &c->steps[k + 1];
        int x = pw->op->outputs[0];
        if (pw->op->opcode != OP_CONV_2D || dw->op->opcode != OP_DEPTHWISE_CONV_2D) continue;
        if (keep[x] || dw->op->inputs[0] != x || last_use[x] != k + 1 || pw->op->n_out != 1) continue;
        if (dw->g.oc != dw->g.c || dw->g.dh != 1 || dw->g.dw != 1 || c->t[x].count < (1u << 18)) continue;
        int chunks = fuse_chunks(c, &dw->g);
        if (dw->g.oh < 4 * chunks || (dw->g.kh - dw->g.sh) * (chunks - 1) * 8 > dw->g.h) continue;
        /* and the pointwise projection after it, if it alone reads the depthwise output */
        cnn_step *pj = k + 2 < c->n_steps ? &c->steps[k + 2] : NULL;
        int y = dw->op->outputs[0];
        if (pj && (pj->op->opcode != OP_CONV_2D || !ac_cnn_conv_is_pointwise(&pj->g) || pj->op->inputs[0] != y ||
                   keep[y] || last_use[y] != k + 2 || dw->op->n_out != 1))
            pj = NULL;
        /* their outputs get no buffer; the conv's inputs must live until the group has run */
        pw->fused = 1;
        pw->fuse_chunks = chunks;
        if (pj) dw->fused = 1;
        int last = pj ? k + 2 : k + 1;
        for (int j = 0; j < pw->op->n_in; j++)
            if (pw->op->inputs[j] >= 0 && last_use[pw->op->inputs[j]] < last) last_use[pw->op->inputs[j]] = last;
        size_t n = ac_cnn_pw_dw_scratch(&pw->g, &dw->g, pj ? &pj->g : NULL) * (size_t)chunks;
        if (n > need) need = n;
        /* on past the group: the loop's k++ lands after its last step. The projection must not start
         * a group of its own (MobileNetV1's pointwise convs feed the next depthwise conv): marked
         * fused, it would be skipped as a group's head and its group, whose last step it is, never run */
        k = last;
    }
    c->fuse_size = need; /* allocated with the other buffers (plan_create) */
#else
    (void)c, (void)keep, (void)last_use, (void)err;
#endif
    return 0;
}

/* Marks each ADD of two tensors of one shape whose one operand is the output of the CONV_2D just
 * before it, read by nothing else (MobileNetV2's residual connections), to run inside that conv:
 * the conv writes act(conv + other operand) straight into the ADD's output, the same operations
 * without a pass over memory and a pool job of their own. Before buffers are assigned: the conv's
 * own output needs none, and the ADD's is taken when the conv runs. */
static void plan_sums(ac_cnn *c, const char *keep, const int *last_use) {
    for (int k = 1; k < c->n_steps; k++) {
        cnn_step *conv = &c->steps[k - 1], *add = &c->steps[k];
        if (add->op->opcode != OP_ADD || add->op->n_in != 2 || conv->op->opcode != OP_CONV_2D || conv->fused ||
            conv->op->n_out != 1 || add->op->n_out != 1)
            continue;
        int x = conv->op->outputs[0], a = add->op->inputs[0], b = add->op->inputs[1], y = add->op->outputs[0];
        if (keep[x] || last_use[x] != k || (a == x) == (b == x) || a < 0 || b < 0) continue;
        const cnn_tensor *other = &c->t[a == x ? b : a];
        if (other->count != c->t[x].count || c->t[y].count != c->t[x].count) continue;
        conv->sum_step = k;
        add->absorbed = 1;
    }
}

/* Marks each CONV_2D / DEPTHWISE_CONV_2D without a fused activation whose output x only the next two
 * steps read, LOGISTIC(x) -> s then MUL(x, s), to apply SiLU x * sigmoid(x) on its way out
 * (CNN_ACT_SILU) straight into the MUL's output: YOLOX's activation after every conv, without the
 * sigmoid tensor and two passes over memory. Not for a conv inside a fused group (plan_fusion). */
static void plan_silu(ac_cnn *c, const char *keep, const int *last_use) {
    for (int k = 0; k + 2 < c->n_steps; k++) {
        cnn_step *conv = &c->steps[k], *lg = &c->steps[k + 1], *mul = &c->steps[k + 2];
        const int code = conv->op->opcode;
        if ((code != OP_CONV_2D && code != OP_DEPTHWISE_CONV_2D) || conv->g.act != CNN_ACT_NONE || conv->fused ||
            conv->sum_step || (k > 0 && c->steps[k - 1].fused) || conv->op->n_out != 1)
            continue;
        if (lg->op->opcode != OP_LOGISTIC || mul->op->opcode != OP_MUL || mul->op->n_in != 2 || mul->op->activation != 0 ||
            lg->op->n_out != 1 || mul->op->n_out != 1)
            continue;
        const int x = conv->op->outputs[0], s = lg->op->outputs[0], a = mul->op->inputs[0], b = mul->op->inputs[1];
        if (keep[x] || keep[s] || lg->op->inputs[0] != x || !((a == x && b == s) || (a == s && b == x)) ||
            last_use[x] != k + 2 || last_use[s] != k + 2)
            continue;
        conv->g.act = CNN_ACT_SILU;
        conv->silu_step = k + 2;
        lg->absorbed = mul->absorbed = 1;
        k += 2;
    }
}

/* Folds each PAD of zeros along height and width only whose output only the next step reads, a
 * CONV_2D or DEPTHWISE_CONV_2D with VALID padding (YOLOX's before its stride-2 depthwise convs), into
 * that conv's padding: the conv reads the PAD's input, its windows clipped to the image as SAME's
 * are, so the padded tensor is never written. The output size stays the padded input's. */
static void plan_pads(ac_cnn *c, const char *keep, int *last_use) {
    for (int k = 0; k + 1 < c->n_steps; k++) {
        cnn_step *pad = &c->steps[k], *conv = &c->steps[k + 1];
        const int code = conv->op->opcode;
        if (pad->op->opcode != OP_PAD || (code != OP_CONV_2D && code != OP_DEPTHWISE_CONV_2D) || conv->op->padding != 1 ||
            conv->fused || pad->op->n_out != 1)
            continue;
        const int x = pad->op->inputs[0], y = pad->op->outputs[0];
        const float *p = c->m->tensors[pad->op->inputs[1]].data;
        if (keep[y] || conv->op->inputs[0] != y || last_use[y] != k + 1 || c->t[x].ndim != 4 || p[0] || p[1] || p[6] ||
            p[7] || conv->g.pt || conv->g.pl)
            continue;
        conv->g.h = c->t[x].shape[1], conv->g.w = c->t[x].shape[2];
        conv->g.pt = (int)p[2], conv->g.pl = (int)p[4];
        conv->padded = 1;
        pad->absorbed = 1;
        if (last_use[x] < k + 1) last_use[x] = k + 1;
    }
}

/* targets: the indices of the n tensors to stop at (1 <= n <= AC_CNN_MAX_OUTPUTS). */
static int plan_create(const ac_tfl_model *m, const int *targets, int n, int in_h, int in_w, int threads,
                       const ac_cnn *base, ac_cnn **out, ac_err *err);

int ac_cnn_create(const ac_tfl_model *m, const char *output_tensor, int in_h, int in_w, int threads, ac_cnn **out,
                  ac_err *err) {
    *out = NULL;
    const int target = find_output(m, output_tensor, err);
    return target < 0 ? -1 : plan_create(m, &target, 1, in_h, in_w, threads, NULL, out, err);
}

int ac_cnn_create_outputs(const ac_tfl_model *m, const char *const *names, int n, int in_h, int in_w, int threads,
                          ac_cnn **out, ac_err *err) {
    *out = NULL;
    int targets[AC_CNN_MAX_OUTPUTS];
    if (n < 1 || n > AC_CNN_MAX_OUTPUTS) return ac_errf(err, "%s: %d outputs asked for (1 to %d)", m->path, n, AC_CNN_MAX_OUTPUTS);
    for (int k = 0; k < n; k++) {
        if (!names[k]) return ac_errf(err, "%s: output %d has no name", m->path, k);
        if ((targets[k] = find_output(m, names[k], err)) < 0) return -1;
        for (int j = 0; j < k; j++)
            if (targets[j] == targets[k]) return ac_errf(err, "%s: tensor '%s' asked for twice", m->path, names[k]);
    }
    return plan_create(m, targets, n, in_h, in_w, threads, NULL, out, err);
}

int ac_cnn_clone(const ac_cnn *c, int threads, ac_cnn **out, ac_err *err) {
    const cnn_tensor *in = &c->t[c->in_t];
    return ac_cnn_clone_size(c, in->shape[1], in->shape[2], threads, out, err);
}

static int clone_size(const ac_cnn *c, int in_h, int in_w, int threads, const ac_cnn *base, ac_cnn **out, ac_err *err) {
    if (in_h < 1 || in_w < 1) return ac_errf(err, "%s: input size %dx%d out of range", c->m->path, in_h, in_w);
    if (plan_create(c->m, c->outs, c->n_outs, in_h, in_w, threads, base, out, err) < 0) return -1;
    if (ac_cnn_set_precision(*out, c->precision, err) < 0) {
        ac_cnn_free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

int ac_cnn_clone_size(const ac_cnn *c, int in_h, int in_w, int threads, ac_cnn **out, ac_err *err) {
    return clone_size(c, in_h, in_w, threads, NULL, out, err);
}

int ac_cnn_clone_size_shared(const ac_cnn *c, int in_h, int in_w, int threads, ac_cnn **out, ac_err *err) {
    return clone_size(c, in_h, in_w, threads, c, out, err);
}

int ac_cnn_quantized(const ac_cnn *c) {
    const int type = c->m->tensors[c->in_t].type;
    return type == 3 || type == 9; /* UINT8, INT8 */
}

int ac_cnn_set_precision(ac_cnn *c, ac_precision p, ac_err *err) {
    if (p == AC_PRECISION_INT8 && !ac_cnn_quantized(c)) { /* a float graph: its convolutions quantized (cnn_q8.c) */
        cnn_q8 *q = c->q8 ? c->q8 : ac_cnn_q8_create(c, c->base ? c->base->q8 : NULL, err);
        if (!q) return -1;
        c->q8 = q, c->precision = p;
        return 0;
    }
    ac_cnn_q8_free(c->q8); /* any other precision: float32's convolutions again */
    c->q8 = NULL;
    if (p == AC_PRECISION_INT8 && c->n_outs > 1)
        return ac_errf(err, "%s: int8 runs a plan of one output (this one stops at %d tensors)", c->m->path, c->n_outs);
    if (p == AC_PRECISION_INT8 || c->int8) { /* cnn_int8.c: its own plan, made or dropped */
        cnn_int8 *q = p == AC_PRECISION_INT8 ? (c->int8 ? c->int8 : ac_cnn_int8_create(c, err)) : NULL;
        if (p == AC_PRECISION_INT8 && !q) return -1;
        if (q != c->int8) ac_cnn_int8_free(c->int8);
        c->int8 = q;
        if (q) return c->precision = p, 0;
    }
    if (p != AC_PRECISION_AUTO && p != AC_PRECISION_F32 && p != AC_PRECISION_BF16X2)
        return ac_errf(err, "%s: unknown precision %d", c->m->path, (int)p);
    const int amx = p != AC_PRECISION_F32 && ac_cnn_bf16_supported();
    if (p == AC_PRECISION_AUTO) p = amx ? AC_PRECISION_BF16X2 : AC_PRECISION_F32;
    if (p == AC_PRECISION_F32) {
        c->precision = p;
        return 0;
    }
    if (!amx) return ac_errf(err, "bf16x2 needs a CPU with AMX-BF16 (this one has none)");
    for (int k = 0; k < c->n_steps; k++) { /* every product of a quantized filter, once */
        cnn_step *s = &c->steps[k];
        const ac_tfl_tensor *w = s->packed ? &c->m->tensors[s->op->inputs[1]] : NULL;
        const int K = s->g.kh * s->g.kw * s->g.c, n = s->g.oc;
        if (!w || s->bf16 || !(w->n_quant == 1 || (w->n_quant == n && w->quant_dim == 0)))
            continue; /* a float filter stays float32: bfloat16 would round its weights */
        float *scales = ac_malloc((size_t)n * sizeof *scales);
        s->bf16 = ac_malloc(ac_cnn_gemm_bf16_packed_size(n, K) * sizeof *s->bf16);
        s->bf16_scale = ac_malloc((size_t)ac_cnn_gemm_bf16_columns(n) * sizeof *s->bf16_scale);
        if (!scales || !s->bf16 || !s->bf16_scale) {
            free(scales), free(s->bf16), free(s->bf16_scale);
            s->bf16 = NULL, s->bf16_scale = NULL;
            return ac_errf(err, "%s: out of memory for bfloat16 weights", c->m->path);
        }
        for (int o = 0; o < n; o++) scales[o] = w->scale[w->n_quant == 1 ? 0 : o];
        if (ac_cnn_gemm_bf16_pack(n, K, ac_cnn_in_data(c, s, 1), scales, s->bf16, s->bf16_scale) < 0) {
            free(s->bf16), free(s->bf16_scale); /* not integers times the scale after all, or too long: float32 */
            s->bf16 = NULL, s->bf16_scale = NULL;
        }
        free(scales);
    }
    c->precision = p;
    return 0;
}

ac_precision ac_cnn_precision(const ac_cnn *c) { return c->precision; }

static int plan_create(const ac_tfl_model *m, const int *targets, int n_targets, int in_h, int in_w, int threads,
                       const ac_cnn *base, ac_cnn **out, ac_err *err) {
    *out = NULL;
    if (m->n_inputs != 1) return ac_errf(err, "%s: model has %d inputs, one image input expected", m->path, m->n_inputs);
    const ac_tfl_tensor *it = &m->tensors[m->inputs[0]];
    if (it->ndim != 4 || it->shape[0] != 1 || it->shape[3] < 1)
        return ac_errf(err, "%s: input tensor '%s' is not 1 x H x W x C", m->path, it->name);
    if (in_h <= 0) in_h = it->shape[1];
    if (in_w <= 0) in_w = it->shape[2];
    if (in_h < 1 || in_w < 1 || in_h > 16384 || in_w > 16384)
        return ac_errf(err, "%s: input size %dx%d out of range", m->path, in_h, in_w);
    ac_cnn *c = ac_calloc(1, sizeof *c);
    if (!c) return ac_errf(err, "out of memory");
    c->m = m;
    c->in_t = m->inputs[0];
    c->out_t = targets[0];
    c->n_outs = n_targets;
    memcpy(c->outs, targets, sizeof *targets * (size_t)n_targets);
    c->t = ac_calloc((size_t)m->n_tensors, sizeof *c->t);
    c->steps = ac_calloc((size_t)m->n_ops + 1, sizeof *c->steps);
    c->keep = ac_calloc((size_t)m->n_tensors + 1, 1);
    int *last_use = ac_malloc(((size_t)m->n_tensors + 1) * sizeof *last_use);
    char *needed = ac_calloc((size_t)m->n_tensors + 1, 1), *opneeded = ac_calloc((size_t)m->n_ops + 1, 1);
    if (!c->t || !c->steps || !c->keep || !last_use || !needed || !opneeded) {
        ac_errf(err, "out of memory");
        goto fail;
    }
    const char *keep = c->keep;
    for (int k = 0; k < n_targets; k++) c->keep[targets[k]] = 1;
    for (int i = 0; i < m->n_tensors; i++) {
        c->t[i].slot = -1;
        last_use[i] = -1;
        const ac_tfl_tensor *t = &m->tensors[i];
        if (t->data) { /* constants keep their file shape */
            c->t[i].ndim = t->ndim;
            memcpy(c->t[i].shape, t->shape, sizeof t->shape);
            c->t[i].count = shape_count(t->shape, t->ndim);
            c->t[i].data = t->data;
            c->t[i].planned = 1;
        }
    }
    /* Keep the operators the targets depend on: walk backwards from them. */
    for (int k = 0; k < n_targets; k++) needed[targets[k]] = 1;
    for (int k = m->n_ops - 1; k >= 0; k--) {
        const ac_tfl_op *op = &m->ops[k];
        int any = 0;
        for (int j = 0; j < op->n_out; j++) any |= op->outputs[j] >= 0 && needed[op->outputs[j]];
        if (!any) continue;
        opneeded[k] = 1;
        for (int j = 0; j < op->n_in; j++)
            if (op->inputs[j] >= 0 && !m->tensors[op->inputs[j]].data) needed[op->inputs[j]] = 1;
    }
    int shape[4] = {1, in_h, in_w, it->shape[3]};
    cnn_step pseudo = {.op = &m->ops[0], .index = -1};
    if (m->n_ops == 0 || keep[c->in_t]) {
        ac_errf(err, "%s: nothing to run (the requested tensor is the input)", m->path);
        goto fail;
    }
    if (ac_cnn_plan_shape(c, &pseudo, c->in_t, shape, 4, err) < 0) goto fail;
    for (int k = 0; k < m->n_ops; k++) {
        if (!opneeded[k]) continue;
        cnn_step *s = &c->steps[c->n_steps];
        s->op = &m->ops[k];
        s->index = k;
        if (plan_step(c, s, base, err) < 0) goto fail;
        for (int j = 0; j < s->op->n_in; j++)
            if (s->op->inputs[j] >= 0) last_use[s->op->inputs[j]] = c->n_steps;
        c->n_steps++;
    }
    for (int k = 0; k < n_targets; k++)
        if (!c->t[targets[k]].planned) {
            ac_errf(err, "%s: tensor '%.200s' is not computed from the input", m->path, ac_cnn_tname(c, targets[k]));
            goto fail;
        }
    c->threads = threads > 0 ? threads : ac_default_threads();
    c->pool = ac_pool_create(c->threads);
    if (plan_fusion(c, keep, last_use, err)) goto fail;
    plan_sums(c, keep, last_use);
    plan_silu(c, keep, last_use);
    plan_pads(c, keep, last_use);
    ac_cnn_plan_slices_into_concat(c, keep, last_use);
    /* Buffers: walk the steps; an output takes a free slot (grown to fit) and frees its inputs after
     * their last reader. The input and the targets are never released. */
    int *slot_busy = ac_calloc((size_t)c->n_steps * 2 + 4, sizeof *slot_busy);
    c->slot_size = ac_calloc((size_t)c->n_steps * 2 + 4, sizeof *c->slot_size);
    if (!slot_busy || !c->slot_size) {
        free(slot_busy);
        ac_errf(err, "out of memory");
        goto fail;
    }
    c->t[c->in_t].slot = 0;
    slot_busy[0] = 1;
    c->slot_size[0] = c->t[c->in_t].count;
    c->n_slots = 1;
    for (int k = 0; k < c->n_steps; k++) {
        const cnn_step *st = &c->steps[k];
        const ac_tfl_op *op = st->op;
        for (int j = 0; j < op->n_out; j++) {
            int o = st->sum_step ? c->steps[st->sum_step].op->outputs[0] : st->silu_step ? c->steps[st->silu_step].op->outputs[0] : op->outputs[j];
            if (o < 0 || c->t[o].slot >= 0 || !c->t[o].planned || m->tensors[o].data || st->fused || st->absorbed) continue;
            /* the smallest free slot that fits, else the largest free one (grown), else a new one */
            int best = -1, grow = -1;
            for (int q = 0; q < c->n_slots; q++) {
                if (slot_busy[q]) continue;
                if (c->slot_size[q] >= c->t[o].count) {
                    if (best < 0 || c->slot_size[q] < c->slot_size[best]) best = q;
                } else if (grow < 0 || c->slot_size[q] > c->slot_size[grow]) grow = q;
            }
            if (best < 0) best = grow;
            if (best < 0) best = c->n_slots++;
            if (c->slot_size[best] < c->t[o].count) c->slot_size[best] = c->t[o].count;
            slot_busy[best] = 1;
            c->t[o].slot = best;
        }
        for (int j = 0; j < op->n_in; j++) {
            int i = op->inputs[j];
            if (i >= 0 && i != c->in_t && !keep[i] && c->t[i].slot >= 0 && last_use[i] == k) slot_busy[c->t[i].slot] = 0;
        }
        for (int j = 0; j < op->n_out; j++) { /* outputs nobody reads */
            int o = op->outputs[j];
            if (o >= 0 && !keep[o] && c->t[o].slot >= 0 && last_use[o] < 0) slot_busy[c->t[o].slot] = 0;
        }
    }
    free(slot_busy);
    c->slots = ac_calloc((size_t)c->n_slots, sizeof *c->slots);
    if (!c->slots) {
        ac_errf(err, "out of memory");
        goto fail;
    }
    /* One arena: the slots, im2col's scratch and the band buffers, each at a 64-byte boundary. A shared
     * clone lives in its base's arena when it fits there (it never runs while the base does). */
    size_t off[2] = {0, 0}, total = 0, *slot_off = ac_malloc(sizeof *slot_off * (size_t)c->n_slots);
    if (!slot_off) {
        ac_errf(err, "out of memory");
        goto fail;
    }
    for (int q = 0; q < c->n_slots; q++) slot_off[q] = arena_take(&total, c->slot_size[q] ? c->slot_size[q] : 1);
    off[0] = arena_take(&total, c->scratch_size);
    off[1] = arena_take(&total, c->fuse_size);
    c->base = base;
    if (base && base->arena && base->arena_size >= total) {
        c->arena = base->arena, c->arena_size = base->arena_size;
    } else {
        c->arena_size = total ? total : 1;
        if (!(c->arena = activations_alloc(c->arena_size * sizeof(float)))) {
            free(slot_off);
            ac_errf(err, "out of memory for activations (%zu floats)", c->arena_size);
            goto fail;
        }
        c->arena_owned = 1;
    }
    for (int q = 0; q < c->n_slots; q++) c->slots[q] = c->arena + slot_off[q];
    free(slot_off);
    c->scratch = c->scratch_size ? c->arena + off[0] : NULL;
    c->fuse_scratch = c->fuse_size ? c->arena + off[1] : NULL;
    for (int i = 0; i < m->n_tensors; i++)
        if (c->t[i].slot >= 0) c->t[i].data = c->slots[c->t[i].slot];
    free(last_use);
    free(needed);
    free(opneeded);
    *out = c;
    return 0;
fail:
    free(last_use);
    free(needed);
    free(opneeded);
    ac_cnn_free(c);
    return -1;
}

void ac_cnn_free(ac_cnn *c) {
    if (!c) return;
    free(c->slots);
    free(c->slot_size);
    if (c->arena_owned) free(c->arena);
    ac_cnn_int8_free(c->int8);
    ac_cnn_q8_free(c->q8);
    if (c->steps)
        for (int k = 0; k < c->n_steps; k++) {
            if (!c->steps[k].packed_shared) free(c->steps[k].packed);
            free(c->steps[k].bf16), free(c->steps[k].bf16_scale);
        }
    free(c->steps);
    free(c->t);
    free(c->keep);
    ac_pool_free(c->pool);
    free(c);
}

void ac_cnn_beside(ac_cnn *c, void (*fn)(void *), void *arg) { ac_pool_beside(c->pool, fn, arg); }

void ac_cnn_beside_wait(ac_cnn *c) { ac_pool_beside_wait(c->pool); }
