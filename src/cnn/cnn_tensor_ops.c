/* cnn_tensor_ops.c: the operators that move, pick or combine elements of N-D tensors rather than
 * filter images: elementwise ADD / SUB / MUL with NumPy broadcasting, EXP, STRIDED_SLICE, TRANSPOSE,
 * BROADCAST_TO, SCATTER_ND and RESIZE_NEAREST_NEIGHBOR (a detector's neck and its box decoding).
 *
 * Planning (ac_cnn_plan_tensor_op) checks every operand and constant against the shapes the plan
 * propagated, so running (ac_cnn_run_tensor_op) cannot index out of bounds: a slice's bounds are
 * clamped as TensorFlow clamps them, a permutation must be one, SCATTER_ND's indices must be constant
 * and inside the output. Tensors have at most AC_TFL_MAX_DIMS dimensions; rank 0 is one element. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cnn_plan.h"

#define MAXD AC_TFL_MAX_DIMS

/* Row-major strides of a shape. */
static void strides_of(const int *shape, int nd, size_t *st) {
    size_t s = 1;
    for (int d = nd - 1; d >= 0; d--) st[d] = s, s *= (size_t)shape[d];
}

/* A constant operand as small integers (shapes, permutations, slice bounds): n values read into v,
 * each exactly an integer within +-2^30. -1 if not. */
static int const_ints(const ac_cnn *c, int i, int *v, int n) {
    const ac_tfl_tensor *t = &c->m->tensors[i];
    if (!t->data || c->t[i].count != (size_t)n) return -1;
    for (int k = 0; k < n; k++) {
        float x = t->data[k];
        if (!(x >= -1073741824.0f && x <= 1073741824.0f) || x != floorf(x)) return -1;
        v[k] = (int)x;
    }
    return 0;
}

/* A walk over every element of an output of nd dimensions, with the element offset of each of up to
 * two inputs advanced by their own strides (0 along a broadcast dimension). */
typedef struct walk {
    int nd, shape[MAXD], idx[MAXD];
    size_t st[2][MAXD], off[2];
} walk;

static void walk_init(walk *w, const int *shape, int nd) {
    memset(w, 0, sizeof *w);
    w->nd = nd;
    memcpy(w->shape, shape, (size_t)nd * sizeof *shape);
}

static void walk_next(walk *w) {
    for (int d = w->nd - 1; d >= 0; d--) {
        w->off[0] += w->st[0][d], w->off[1] += w->st[1][d];
        if (++w->idx[d] < w->shape[d]) return;
        w->off[0] -= w->st[0][d] * (size_t)w->shape[d], w->off[1] -= w->st[1][d] * (size_t)w->shape[d];
        w->idx[d] = 0;
    }
}

/* The walk over all but the last two of nd dimensions, each step a block of the last two (n[0] rows
 * of n[1] elements; the output's elements in order), given the two inputs' strides st[0], st[1] along
 * all nd: in[i][0], in[i][1] are input i's strides along the block's two dimensions (a tensor of rank
 * 1 or 0 is one block of one row). Returns the number of blocks: the per-element odometer of a plain
 * walk costs more than the copying itself when the rows are short (Focus's slices: 3 channels). */
static size_t walk_blocks(walk *w, const int *shape, int nd, size_t st[2][MAXD], int n[2], size_t in[2][2]) {
    const int outer = nd > 2 ? nd - 2 : 0;
    walk_init(w, shape, outer);
    size_t blocks = 1;
    for (int d = 0; d < outer; d++) w->st[0][d] = st[0][d], w->st[1][d] = st[1][d], blocks *= (size_t)shape[d];
    for (int b = 0; b < 2; b++) { /* block dimension b is nd - 2 + b, absent below rank 2 */
        const int d = nd - 2 + b;
        n[b] = d >= 0 ? shape[d] : 1;
        in[0][b] = d >= 0 ? st[0][d] : 0, in[1][b] = d >= 0 ? st[1][d] : 0;
    }
    return blocks;
}

/* out (n[0] x n[1], in order) = x[at + i s[0] + j s[1]]: one block of a walk. Offsets in size_t,
 * where a negative step wraps around to the right element. Returns the end of what it wrote. */
static float *gather_block(float *out, const float *x, size_t at, const int n[2], const size_t s[2]) {
    for (int i = 0; i < n[0]; i++, at += s[0], out += n[1])
        if (s[1] == 1) memcpy(out, x + at, (size_t)n[1] * sizeof *out);
        else for (int j = 0; j < n[1]; j++) out[j] = x[at + (size_t)j * s[1]];
    return out;
}

/* Strides of input x (rank xd) read by an output of rank nd under NumPy broadcasting: x is aligned
 * to the output's last dimensions and a dimension of size 1 is repeated (stride 0). */
static void broadcast_strides(const cnn_tensor *x, int nd, size_t *st) {
    size_t xs[MAXD];
    strides_of(x->shape, x->ndim, xs);
    for (int d = 0; d < nd; d++) {
        int e = d - (nd - x->ndim);
        st[d] = e < 0 || x->shape[e] == 1 ? 0 : xs[e];
    }
}

/* ---- planning ---- */

static int plan_binary(ac_cnn *c, cnn_step *s, ac_err *err) {
    int a, b;
    if ((a = ac_cnn_plan_operand(c, s, 0, 0, err)) < 0 || (b = ac_cnn_plan_operand(c, s, 1, 0, err)) < 0) return -1;
    if (s->op->activation < 0 || s->op->activation > 3) return ac_cnn_plan_err(c, s, err, "unsupported fused activation");
    const cnn_tensor *x = &c->t[a], *y = &c->t[b];
    int nd = x->ndim > y->ndim ? x->ndim : y->ndim, shape[MAXD];
    for (int d = 0; d < nd; d++) {
        int ex = d - (nd - x->ndim), ey = d - (nd - y->ndim);
        int dx = ex < 0 ? 1 : x->shape[ex], dy = ey < 0 ? 1 : y->shape[ey];
        if (dx != dy && dx != 1 && dy != 1) return ac_cnn_plan_err(c, s, err, "operand shapes do not broadcast");
        shape[d] = dx == 1 ? dy : dx;
    }
    if (nd == 0) return ac_cnn_plan_shape(c, s, s->op->outputs[0], (int[]){1}, 1, err);
    return ac_cnn_plan_shape(c, s, s->op->outputs[0], shape, nd, err);
}

/* TensorFlow's strided slice bounds for one dimension of size n: the first index and the count. */
static int slice_dim(int n, int begin, int end, int stride, int begin_masked, int end_masked, int shrink, int *first,
                     int *count) {
    if (shrink) { /* one index, the dimension dropped */
        int b = begin < 0 ? begin + n : begin;
        if (b < 0 || b >= n) return -1;
        *first = b, *count = 1;
        return 0;
    }
    long lo, hi;
    if (stride > 0) lo = 0, hi = n;
    else lo = -1, hi = n - 1;
    long b = begin_masked ? (stride > 0 ? lo : hi) : (begin < 0 ? (long)begin + n : begin);
    long e = end_masked ? (stride > 0 ? hi : lo) : (end < 0 ? (long)end + n : end);
    b = b < lo ? lo : b > hi ? hi : b;
    e = e < lo ? lo : e > hi ? hi : e;
    long k = stride > 0 ? (e - b + stride - 1) / stride : (b - e + (-stride) - 1) / (-stride);
    *first = (int)b, *count = k > 0 ? (int)k : 0;
    return 0;
}

static int plan_strided_slice(ac_cnn *c, cnn_step *s, ac_err *err) {
    const ac_tfl_op *op = s->op;
    int a;
    if ((a = ac_cnn_plan_operand(c, s, 0, 0, err)) < 0) return -1;
    const cnn_tensor *x = &c->t[a];
    int nd = x->ndim, begin[MAXD], end[MAXD], stride[MAXD];
    for (int k = 1; k <= 3; k++)
        if (ac_cnn_plan_operand(c, s, k, 1, err) < 0) return -1;
    if (const_ints(c, op->inputs[1], begin, nd) < 0 || const_ints(c, op->inputs[2], end, nd) < 0 ||
        const_ints(c, op->inputs[3], stride, nd) < 0)
        return ac_cnn_plan_err(c, s, err, "begin, end and strides must be integer constants, one per input dimension");
    if (op->ellipsis_mask || op->new_axis_mask)
        return ac_cnn_plan_err(c, s, err, "ellipsis and new-axis masks are not supported");
    int shape[MAXD], ond = 0;
    for (int d = 0; d < nd; d++) {
        int first, count, shrink = op->shrink_axis_mask >> d & 1;
        if (stride[d] == 0) return ac_cnn_plan_err(c, s, err, "a stride is 0");
        int e = op->slice_offset ? begin[d] + end[d] : end[d];
        if (slice_dim(x->shape[d], begin[d], e, stride[d], op->begin_mask >> d & 1, op->end_mask >> d & 1, shrink, &first,
                      &count) < 0)
            return ac_cnn_plan_err(c, s, err, "a shrunk index is outside the input");
        s->slice_first[d] = first, s->slice_step[d] = stride[d];
        if (!shrink) shape[ond++] = count;
    }
    if (ond == 0) shape[ond++] = 1;
    return ac_cnn_plan_shape(c, s, op->outputs[0], shape, ond, err);
}

static int plan_transpose(ac_cnn *c, cnn_step *s, ac_err *err) {
    int a, p[MAXD], seen[MAXD] = {0}, shape[MAXD];
    if ((a = ac_cnn_plan_operand(c, s, 0, 0, err)) < 0 || ac_cnn_plan_operand(c, s, 1, 1, err) < 0) return -1;
    const cnn_tensor *x = &c->t[a];
    if (const_ints(c, s->op->inputs[1], p, x->ndim) < 0) return ac_cnn_plan_err(c, s, err, "permutation must be an integer constant of the input's rank");
    for (int d = 0; d < x->ndim; d++) {
        if (p[d] < 0 || p[d] >= x->ndim || seen[p[d]]++) return ac_cnn_plan_err(c, s, err, "not a permutation");
        shape[d] = x->shape[p[d]];
        s->perm[d] = p[d];
    }
    return ac_cnn_plan_shape(c, s, s->op->outputs[0], shape, x->ndim, err);
}

static int plan_broadcast_to(ac_cnn *c, cnn_step *s, ac_err *err) {
    int a, b, shape[MAXD];
    if ((a = ac_cnn_plan_operand(c, s, 0, 0, err)) < 0 || (b = ac_cnn_plan_operand(c, s, 1, 1, err)) < 0) return -1;
    const cnn_tensor *x = &c->t[a];
    int nd = (int)c->t[b].count;
    if (c->t[b].ndim != 1 || nd < 1 || nd > MAXD || nd < x->ndim || const_ints(c, b, shape, nd) < 0)
        return ac_cnn_plan_err(c, s, err, "target shape must be an integer constant vector at least as long as the input's rank");
    for (int d = 0; d < nd; d++) {
        int e = d - (nd - x->ndim);
        if (e >= 0 && x->shape[e] != 1 && x->shape[e] != shape[d]) return ac_cnn_plan_err(c, s, err, "input does not broadcast to the target shape");
    }
    return ac_cnn_plan_shape(c, s, s->op->outputs[0], shape, nd, err);
}

/* SCATTER_ND(indices, updates, shape): a zero tensor of `shape` with each update added at its index
 * (TFLite sums duplicates). The indices must be a constant [..., K] whose every tuple lies inside the
 * output; the updates' shape is the indices' leading dimensions followed by the output's last rank - K. */
static int plan_scatter_nd(ac_cnn *c, cnn_step *s, ac_err *err) {
    int ii, u, sh, shape[MAXD];
    if ((ii = ac_cnn_plan_operand(c, s, 0, 1, err)) < 0 || (u = ac_cnn_plan_operand(c, s, 1, 0, err)) < 0 ||
        (sh = ac_cnn_plan_operand(c, s, 2, 1, err)) < 0)
        return -1;
    const cnn_tensor *ix = &c->t[ii], *up = &c->t[u];
    int nd = (int)c->t[sh].count;
    if (c->t[sh].ndim != 1 || nd < 1 || nd > MAXD || const_ints(c, sh, shape, nd) < 0)
        return ac_cnn_plan_err(c, s, err, "shape must be an integer constant vector");
    if (ix->ndim < 1) return ac_cnn_plan_err(c, s, err, "indices must have a last dimension");
    int K = ix->shape[ix->ndim - 1];
    if (K < 1 || K > nd) return ac_cnn_plan_err(c, s, err, "index tuples longer than the output's rank");
    /* updates = indices.shape[:-1] + shape[K:] */
    int lead = ix->ndim - 1, want = lead + nd - K;
    int ok = up->ndim == want;
    for (int d = 0; ok && d < lead; d++) ok = up->shape[d] == ix->shape[d];
    for (int d = K; ok && d < nd; d++) ok = up->shape[lead + d - K] == shape[d];
    if (!ok) return ac_cnn_plan_err(c, s, err, "updates' shape does not match the indices and the output");
    const float *iv = c->m->tensors[ii].data;
    size_t tuples = ix->count / (size_t)K;
    for (size_t t = 0; t < tuples; t++)
        for (int k = 0; k < K; k++) {
            float v = iv[t * (size_t)K + (size_t)k];
            if (!(v >= 0 && v < shape[k]) || v != floorf(v)) return ac_cnn_plan_err(c, s, err, "an index is outside the output");
        }
    return ac_cnn_plan_shape(c, s, s->op->outputs[0], shape, nd, err);
}

static int plan_resize_nearest(ac_cnn *c, cnn_step *s, ac_err *err) {
    int a, b, hw[2];
    if ((a = ac_cnn_plan_operand(c, s, 0, 0, err)) < 0 || (b = ac_cnn_plan_operand(c, s, 1, 1, err)) < 0) return -1;
    const cnn_tensor *x = &c->t[a];
    if (x->ndim != 4 || x->shape[0] != 1) return ac_cnn_plan_err(c, s, err, "input must be 1 x H x W x C");
    if (const_ints(c, b, hw, 2) < 0 || hw[0] < 1 || hw[1] < 1 || hw[0] > 65536 || hw[1] > 65536)
        return ac_cnn_plan_err(c, s, err, "size must be two positive integer constants");
    /* A converter writes the size for the input size the graph was traced at: an upsampling by a whole
     * factor of the tensor's size in the file (a detector's neck: 13 -> 26) keeps its factor when the
     * plan runs at another input size (a detector fed a photo's own aspect). */
    const ac_tfl_tensor *decl = &c->m->tensors[a];
    for (int d = 0; d < 2; d++) {
        const int was = decl->ndim == 4 ? decl->shape[1 + d] : 0;
        if (was > 0 && x->shape[1 + d] != was && hw[d] % was == 0) hw[d] = x->shape[1 + d] * (hw[d] / was);
    }
    int shape[4] = {1, hw[0], hw[1], x->shape[3]};
    return ac_cnn_plan_shape(c, s, s->op->outputs[0], shape, 4, err);
}

int ac_cnn_plan_tensor_op(ac_cnn *c, cnn_step *s, ac_err *err) {
    switch (s->op->opcode) {
    case OP_ADD: case OP_SUB: case OP_MUL: return plan_binary(c, s, err);
    case OP_EXP: {
        int a = ac_cnn_plan_operand(c, s, 0, 0, err);
        return a < 0 ? -1 : ac_cnn_plan_shape(c, s, s->op->outputs[0], c->t[a].shape, c->t[a].ndim, err);
    }
    case OP_STRIDED_SLICE: return plan_strided_slice(c, s, err);
    case OP_TRANSPOSE: return plan_transpose(c, s, err);
    case OP_BROADCAST_TO: return plan_broadcast_to(c, s, err);
    case OP_SCATTER_ND: return plan_scatter_nd(c, s, err);
    case OP_RESIZE_NEAREST_NEIGHBOR: return plan_resize_nearest(c, s, err);
    default: return 1;
    }
}

/* ---- running ---- */

static void run_binary(const ac_cnn *c, const cnn_step *s) {
    const cnn_tensor *x = &c->t[s->op->inputs[0]], *y = &c->t[s->op->inputs[1]];
    cnn_tensor *o = &c->t[s->op->outputs[0]];
    const int code = s->op->opcode;
    if (code == OP_ADD && x->count == o->count && y->count == o->count) { /* MobileNetV2's residuals */
        ac_cnn_add(x->data, y->data, o->data, o->count, s->op->activation, c->pool);
        return;
    }
    if (x->count == o->count && y->count == o->count) {
        const float *a = x->data, *b = y->data;
        float *r = o->data;
        size_t n = o->count;
        if (code == OP_MUL) for (size_t i = 0; i < n; i++) r[i] = a[i] * b[i];
        else if (code == OP_SUB) for (size_t i = 0; i < n; i++) r[i] = a[i] - b[i];
        else for (size_t i = 0; i < n; i++) r[i] = a[i] + b[i];
    } else {
        walk w;
        size_t st[2][MAXD], in[2][2];
        int n[2];
        broadcast_strides(x, o->ndim, st[0]);
        broadcast_strides(y, o->ndim, st[1]);
        float *r = o->data;
        for (size_t blocks = walk_blocks(&w, o->shape, o->ndim, st, n, in); blocks--; walk_next(&w))
            for (int i = 0; i < n[0]; i++, r += n[1]) {
                const float *a = x->data + w.off[0] + i * in[0][0], *b = y->data + w.off[1] + i * in[1][0];
                const size_t sa = in[0][1], sb = in[1][1];
                if (code == OP_MUL) for (int k = 0; k < n[1]; k++) r[k] = a[k * sa] * b[k * sb];
                else if (code == OP_SUB) for (int k = 0; k < n[1]; k++) r[k] = a[k * sa] - b[k * sb];
                else for (int k = 0; k < n[1]; k++) r[k] = a[k * sa] + b[k * sb];
            }
    }
    if (s->op->activation) ac_cnn_bias_act(o->data, 1, (int)o->count, NULL, s->op->activation, NULL);
}

/* Marks each STRIDED_SLICE whose output only a CONCATENATION reads (YOLOX's Focus: four pixel
 * phases of the photo side by side in channels) to run inside it (ac_cnn_run_slice_into): the
 * concatenation gathers the slice's elements straight into its output, without the slice's tensor and
 * its copy. Before buffers are assigned: the slice's output gets none, its input lives until the
 * concatenation has run. */
void ac_cnn_plan_slices_into_concat(ac_cnn *c, const char *keep, int *last_use) {
    for (int k = 0; k < c->n_steps; k++) {
        cnn_step *cat = &c->steps[k];
        if (cat->op->opcode != OP_CONCATENATION || cat->op->n_in > 64) continue;
        for (int i = 0; i < cat->op->n_in; i++) {
            const int y = cat->op->inputs[i];
            int once = y >= 0 && !keep[y] && last_use[y] == k, j = k - 1;
            for (int q = 0; q < cat->op->n_in; q++) once &= q == i || cat->op->inputs[q] != y;
            while (once && j >= 0 && c->steps[j].op->outputs[0] != y) j--;
            if (!once || j < 0) continue;
            cnn_step *sl = &c->steps[j];
            if (sl->op->opcode != OP_STRIDED_SLICE || sl->op->n_out != 1 || sl->absorbed) continue;
            sl->absorbed = 1;
            cat->slice_in |= 1ull << i;
            const int x = sl->op->inputs[0];
            if (last_use[x] < k) last_use[x] = k;
        }
    }
}

/* The STRIDED_SLICE of step s, its element i (in order) written to out[(i / row) * orow + i % row]. */
static void slice_into(const ac_cnn *c, const cnn_step *s, float *out, size_t row, size_t orow) {
    const cnn_tensor *x = &c->t[s->op->inputs[0]];
    const cnn_tensor *o = &c->t[s->op->outputs[0]];
    size_t xs[MAXD];
    strides_of(x->shape, x->ndim, xs);
    int shape[MAXD], od = 0;
    for (int d = 0; d < x->ndim; d++) shape[d] = s->op->shrink_axis_mask >> d & 1 ? 1 : o->shape[od++];
    walk w;
    size_t base = 0, st[2][MAXD] = {{0}}, in[2][2], q = 0, rem = 0;
    for (int d = 0; d < x->ndim; d++) {
        base += (size_t)s->slice_first[d] * xs[d];
        st[0][d] = (size_t)((ptrdiff_t)s->slice_step[d] * (ptrdiff_t)xs[d]); /* wraps for negative steps */
    }
    int n[2];
    for (size_t blocks = walk_blocks(&w, shape, x->ndim, st, n, in); blocks--; walk_next(&w))
        for (int i = 0; i < n[0]; i++) {
            const size_t at = base + w.off[0] + (size_t)i * in[0][0];
            if ((size_t)n[1] == row && in[0][1] == 1 && rem == 0) { /* a row of the slice is one of the output (Focus) */
                float *d = out + q++ * orow;
                const float *from = x->data + at;
                if (row <= 8) /* a pixel's 3 channels: a call to memcpy each cost more than the copy */
                    for (size_t k = 0; k < row; k++) d[k] = from[k];
                else memcpy(d, from, row * sizeof *out);
                continue;
            }
            for (int j = 0; j < n[1]; j++) {
                out[q * orow + rem] = x->data[at + (size_t)j * in[0][1]];
                if (++rem == row) rem = 0, q++;
            }
        }
}

void ac_cnn_run_slice_into(const ac_cnn *c, const cnn_step *s, float *out, size_t row, size_t orow) {
    slice_into(c, s, out, row, orow);
}

static void run_strided_slice(const ac_cnn *c, const cnn_step *s) {
    const cnn_tensor *x = &c->t[s->op->inputs[0]];
    cnn_tensor *o = &c->t[s->op->outputs[0]];
    size_t xs[MAXD];
    strides_of(x->shape, x->ndim, xs);
    /* walk the input's dimensions with the kept counts (a shrunk dimension counts 1) */
    int shape[MAXD], od = 0;
    for (int d = 0; d < x->ndim; d++) shape[d] = s->op->shrink_axis_mask >> d & 1 ? 1 : o->shape[od++];
    walk w;
    size_t base = 0, st[2][MAXD] = {{0}}, in[2][2];
    for (int d = 0; d < x->ndim; d++) {
        base += (size_t)s->slice_first[d] * xs[d];
        st[0][d] = (size_t)((ptrdiff_t)s->slice_step[d] * (ptrdiff_t)xs[d]); /* wraps for negative steps */
    }
    int n[2];
    float *r = o->data;
    for (size_t blocks = walk_blocks(&w, shape, x->ndim, st, n, in); blocks--; walk_next(&w))
        r = gather_block(r, x->data, base + w.off[0], n, in[0]);
}

static void run_transpose(const ac_cnn *c, const cnn_step *s) {
    const cnn_tensor *x = &c->t[s->op->inputs[0]];
    cnn_tensor *o = &c->t[s->op->outputs[0]];
    size_t xs[MAXD];
    strides_of(x->shape, x->ndim, xs);
    walk w;
    size_t st[2][MAXD] = {{0}}, in[2][2];
    for (int d = 0; d < o->ndim; d++) st[0][d] = xs[s->perm[d]];
    int n[2];
    float *r = o->data;
    for (size_t blocks = walk_blocks(&w, o->shape, o->ndim, st, n, in); blocks--; walk_next(&w))
        r = gather_block(r, x->data, w.off[0], n, in[0]);
}

static void run_broadcast_to(const ac_cnn *c, const cnn_step *s) {
    const cnn_tensor *x = &c->t[s->op->inputs[0]];
    cnn_tensor *o = &c->t[s->op->outputs[0]];
    walk w;
    size_t st[2][MAXD] = {{0}}, in[2][2];
    broadcast_strides(x, o->ndim, st[0]);
    int n[2];
    float *r = o->data;
    for (size_t blocks = walk_blocks(&w, o->shape, o->ndim, st, n, in); blocks--; walk_next(&w))
        r = gather_block(r, x->data, w.off[0], n, in[0]);
}

static void run_scatter_nd(const ac_cnn *c, const cnn_step *s) {
    const cnn_tensor *ix = &c->t[s->op->inputs[0]], *up = &c->t[s->op->inputs[1]];
    cnn_tensor *o = &c->t[s->op->outputs[0]];
    int K = ix->shape[ix->ndim - 1];
    size_t os[MAXD], tuples = ix->count / (size_t)K, slice = up->count / (tuples ? tuples : 1);
    strides_of(o->shape, o->ndim, os);
    memset(o->data, 0, o->count * sizeof(float));
    for (size_t t = 0; t < tuples; t++) {
        size_t at = 0;
        for (int k = 0; k < K; k++) at += (size_t)ix->data[t * (size_t)K + (size_t)k] * os[k];
        for (size_t j = 0; j < slice; j++) o->data[at + j] += up->data[t * slice + j];
    }
}

/* TensorFlow's nearest-neighbour source index of output index i (scale = in / out, or with
 * align_corners (in - 1) / (out - 1)); half_pixel_centers samples at pixel centres. */
static int nearest(int i, int in, int out, int align, int half) {
    float scale = align && out > 1 ? (float)(in - 1) / (float)(out - 1) : (float)in / (float)out;
    float v = ((float)i + (half ? 0.5f : 0.0f)) * scale;
    int k = align ? (int)roundf(v) : (int)floorf(v);
    return k < 0 ? 0 : k >= in ? in - 1 : k;
}

static void run_resize_nearest(const ac_cnn *c, const cnn_step *s) {
    const cnn_tensor *x = &c->t[s->op->inputs[0]];
    cnn_tensor *o = &c->t[s->op->outputs[0]];
    int H = x->shape[1], W = x->shape[2], C = x->shape[3], OH = o->shape[1], OW = o->shape[2];
    for (int y = 0; y < OH; y++) {
        int sy = nearest(y, H, OH, s->op->align_corners, s->op->half_pixel_centers);
        for (int xx = 0; xx < OW; xx++) {
            int sx = nearest(xx, W, OW, s->op->align_corners, s->op->half_pixel_centers);
            memcpy(o->data + ((size_t)y * OW + xx) * C, x->data + ((size_t)sy * W + sx) * C, (size_t)C * sizeof(float));
        }
    }
}

int ac_cnn_run_tensor_op(const ac_cnn *c, const cnn_step *s) {
    switch (s->op->opcode) {
    case OP_ADD: case OP_SUB: case OP_MUL: run_binary(c, s); return 0;
    case OP_EXP: {
        const cnn_tensor *x = &c->t[s->op->inputs[0]];
        cnn_tensor *o = &c->t[s->op->outputs[0]];
        for (size_t i = 0; i < o->count; i++) o->data[i] = expf(x->data[i]);
        return 0;
    }
    case OP_STRIDED_SLICE: run_strided_slice(c, s); return 0;
    case OP_TRANSPOSE: run_transpose(c, s); return 0;
    case OP_BROADCAST_TO: run_broadcast_to(c, s); return 0;
    case OP_SCATTER_ND: run_scatter_nd(c, s); return 0;
    case OP_RESIZE_NEAREST_NEIGHBOR: run_resize_nearest(c, s); return 0;
    default: return 1;
    }
}
