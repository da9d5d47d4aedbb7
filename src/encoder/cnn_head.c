/* cnn_head.c: the classifier head that follows the annotation layer in the same TFLite graph
 * (MobileNet: AVERAGE_POOL_2D over the grid -> 1x1 CONV_2D "Logits" -> RESHAPE -> SOFTMAX), run on
 * the annotation grid the encoder already computed: class probabilities of the whole photo and of
 * windows of the grid, without a second CNN pass.
 *
 * The whole-grid row is computed with the engine's own kernels in the engine's order (window sum in
 * row-major pixel order, times 1/count, ac_cnn_gemm with one row, ac_cnn_softmax), so at the model's native
 * size it gives the same bits as running the graph to its output (tests/test_tags.c checks it). */
#include <stdlib.h>
#include <string.h>

#include "attncap/encoder.h"
#include "cnn_internal.h"
#include "alloc_internal.h"

enum { OP_AVERAGE_POOL_2D = 1, OP_CONV_2D = 3, OP_DEQUANTIZE = 6, OP_FULLY_CONNECTED = 9, OP_RESHAPE = 22,
       OP_SOFTMAX = 25, OP_MEAN = 40, OP_SQUEEZE = 43, OP_QUANTIZE = 114 };

struct ac_class_head {
    int dim, n_classes;
    int pool_act, logits_act; /* fused activations of the pool and of the logits op */
    float beta;               /* softmax */
    const float *w;           /* [n_classes][dim], the model's dequantized weights */
    const float *bias;        /* [n_classes] or NULL */
    float *packed;            /* w packed for ac_cnn_gemm */
};

/* The one operator that reads tensor t (first input), or NULL. */
static const ac_tfl_op *reader_of(const ac_tfl_model *m, int t) {
    const ac_tfl_op *found = NULL;
    for (int k = 0; k < m->n_ops; k++)
        for (int j = 0; j < m->ops[k].n_in; j++)
            if (m->ops[k].inputs[j] == t) {
                if (found && found != &m->ops[k]) return NULL; /* read twice: not a plain chain */
                found = &m->ops[k];
            }
    return found;
}

/* Past ops that leave the values as they are (shape changes, (de)quantization: the engine runs in float). */
static const ac_tfl_op *next_op(const ac_tfl_model *m, int t) {
    const ac_tfl_op *op = reader_of(m, t);
    while (op && op->n_out >= 1 && op->inputs[0] == t &&
           (op->opcode == OP_RESHAPE || op->opcode == OP_SQUEEZE || op->opcode == OP_QUANTIZE || op->opcode == OP_DEQUANTIZE)) {
        t = op->outputs[0];
        op = t >= 0 ? reader_of(m, t) : NULL;
    }
    return op && op->n_in >= 1 && op->inputs[0] == t && op->n_out >= 1 && op->outputs[0] >= 0 ? op : NULL;
}

int ac_class_head_open(const ac_encoder *enc, ac_class_head **out, ac_err *err) {
    *out = NULL;
    const ac_tfl_model *m = enc->model;
    const char *path = enc->path ? enc->path : "model";
    int t = m && enc->layer ? ac_cnn_find_layer(m, enc->layer) : -1;
    if (t < 0) return ac_errf(err, "%s: no annotation layer to start the classifier head from", path);
    const ac_tfl_op *pool = next_op(m, t);
    if (!pool || (pool->opcode != OP_AVERAGE_POOL_2D && pool->opcode != OP_MEAN))
        return ac_errf(err, "%s: the layer '%s' is not followed by a global average pool (no classifier head)", path,
                       enc->layer);
    if (pool->opcode == OP_MEAN) { /* must reduce exactly the two spatial axes */
        const ac_tfl_tensor *ax = pool->n_in > 1 && pool->inputs[1] >= 0 ? &m->tensors[pool->inputs[1]] : NULL;
        int ok = ax && ax->data && ax->ndim == 1 && ax->shape[0] == 2;
        for (int k = 0; ok && k < 2; k++) ok = ax->data[k] == 1.0f || ax->data[k] == 2.0f;
        if (!ok || ax->data[0] == ax->data[1])
            return ac_errf(err, "%s: the MEAN after '%s' does not average over height and width", path, enc->layer);
    }
    const ac_tfl_op *lg = next_op(m, pool->outputs[0]);
    if (!lg || (lg->opcode != OP_CONV_2D && lg->opcode != OP_FULLY_CONNECTED) || lg->n_in < 2 || lg->inputs[1] < 0)
        return ac_errf(err, "%s: no 1x1 convolution or fully connected layer after the pool of '%s'", path, enc->layer);
    const ac_tfl_tensor *w = &m->tensors[lg->inputs[1]];
    int n = w->ndim >= 1 ? w->shape[0] : 0, d = enc->dim;
    int shape_ok = lg->opcode == OP_CONV_2D ? w->ndim == 4 && w->shape[1] == 1 && w->shape[2] == 1 && w->shape[3] == d
                                            : w->ndim == 2 && w->shape[1] == d;
    if (!w->data || !shape_ok || n < 1)
        return ac_errf(err, "%s: the logits weights '%.120s' are not [classes][%d]", path, w->name, d);
    const ac_tfl_tensor *b = lg->n_in > 2 && lg->inputs[2] >= 0 ? &m->tensors[lg->inputs[2]] : NULL;
    if (b && (!b->data || b->ndim != 1 || b->shape[0] != n))
        return ac_errf(err, "%s: the logits bias '%.120s' is not [%d]", path, b->name, n);
    if (lg->activation < 0 || lg->activation > 3 || pool->activation < 0 || pool->activation > 3)
        return ac_errf(err, "%s: unsupported fused activation in the classifier head", path);
    const ac_tfl_op *sm = next_op(m, lg->outputs[0]);
    if (!sm || sm->opcode != OP_SOFTMAX)
        return ac_errf(err, "%s: the classifier head after '%s' does not end in a softmax", path, enc->layer);
    ac_class_head *h = ac_calloc(1, sizeof *h);
    if (!h) return ac_errf(err, "out of memory");
    h->dim = d, h->n_classes = n;
    h->pool_act = pool->opcode == OP_AVERAGE_POOL_2D ? pool->activation : CNN_ACT_NONE;
    h->logits_act = lg->activation;
    h->beta = sm->beta;
    h->w = w->data;
    h->bias = b ? b->data : NULL;
    if (!(h->packed = ac_malloc(ac_cnn_gemm_packed_size(n, d) * sizeof(float)))) {
        free(h);
        return ac_errf(err, "out of memory");
    }
    ac_cnn_gemm_pack(n, d, h->w, h->packed);
    *out = h;
    return 0;
}

int ac_class_head_classes(const ac_class_head *h) { return h ? h->n_classes : 0; }

void ac_class_head_free(ac_class_head *h) {
    if (!h) return;
    free(h->packed);
    free(h);
}

int ac_grid_windows(int grid_h, int grid_w, int side, int per_axis, int centre, ac_grid_window *out, int cap) {
    if (grid_h < 1 || grid_w < 1 || side < 1 || per_axis < 0 || cap < 0) return 0;
    int sh = side < grid_h ? side : grid_h, sw = side < grid_w ? side : grid_w, n = 0;
    /* evenly spread from edge to edge, rounded to the nearest cell (halves up); 1 = centred */
    for (int i = 0; i < per_axis; i++)
        for (int j = 0; j < per_axis; j++) {
            int y = per_axis == 1 ? (grid_h - sh) / 2 : (2 * i * (grid_h - sh) + per_axis - 1) / (2 * (per_axis - 1));
            int x = per_axis == 1 ? (grid_w - sw) / 2 : (2 * j * (grid_w - sw) + per_axis - 1) / (2 * (per_axis - 1));
            int dup = 0;
            for (int k = 0; k < n && !dup; k++) dup = out[k].y == y && out[k].x == x;
            if (!dup && n < cap) out[n++] = (ac_grid_window){y, x, sh, sw};
        }
    if (centre) {
        ac_grid_window c = {(grid_h - sh) / 2, (grid_w - sw) / 2, sh, sw};
        int dup = 0;
        for (int k = 0; k < n && !dup; k++) dup = out[k].y == c.y && out[k].x == c.x;
        if (!dup && n < cap) out[n++] = c;
    }
    return n;
}

int ac_grid_naming_windows(int grid_h, int grid_w, ac_grid_window out[AC_NAMING_WINDOWS]) {
    const int side = (grid_h < grid_w ? grid_h : grid_w) / 2;
    return side >= 2 ? ac_grid_windows(grid_h, grid_w, side, 2, 1, out, AC_NAMING_WINDOWS) : 0;
}

void ac_grid_windows_fit(ac_grid_window *win, int n, int grid_h, int grid_w) {
    for (int k = 0; k < n; k++) {
        ac_grid_window *w = &win[k];
        w->h = w->h < grid_h ? w->h : grid_h, w->w = w->w < grid_w ? w->w : grid_w;
        w->y = w->y + w->h <= grid_h ? w->y : grid_h - w->h, w->x = w->x + w->w <= grid_w ? w->x : grid_w - w->w;
    }
}

/* out[dim] = clamp(mean of the window's cells): the same order of additions as ac_cnn_pool2d. */
static void window_mean(const float *ann, int grid_w, int dim, const ac_grid_window *win, int act, float *out) {
    float lo = -3.402823466e38f, hi = 3.402823466e38f;
    if (act == CNN_ACT_RELU) lo = 0.0f;
    else if (act == CNN_ACT_RELU6) lo = 0.0f, hi = 6.0f;
    else if (act == CNN_ACT_RELU_N1_TO_1) lo = -1.0f, hi = 1.0f;
    for (int c = 0; c < dim; c++) out[c] = 0.0f;
    for (int y = win->y; y < win->y + win->h; y++)
        for (int x = win->x; x < win->x + win->w; x++) {
            const float *p = ann + ((size_t)y * grid_w + x) * dim;
            for (int c = 0; c < dim; c++) out[c] += p[c];
        }
    float inv = 1.0f / (float)(win->h * win->w);
    for (int c = 0; c < dim; c++) {
        float v = out[c] * inv;
        out[c] = v < lo ? lo : v > hi ? hi : v;
    }
}

int ac_class_head_forward(const ac_class_head *h, const float *ann, int grid_h, int grid_w, int dim,
                          const ac_grid_window *win, int n_win, float *probs, ac_err *err) {
    if (dim != h->dim) return ac_errf(err, "classifier head: annotations of %d floats, the head takes %d", dim, h->dim);
    if (grid_h < 1 || grid_w < 1 || n_win < 0 || (n_win && !win)) return ac_errf(err, "classifier head: bad grid or windows");
    for (int k = 0; k < n_win; k++)
        if (win[k].h < 1 || win[k].w < 1 || win[k].y < 0 || win[k].x < 0 || win[k].y + win[k].h > grid_h ||
            win[k].x + win[k].w > grid_w)
            return ac_errf(err, "classifier head: window %d (%d,%d %dx%d) outside the %dx%d grid", k, win[k].y, win[k].x,
                           win[k].h, win[k].w, grid_h, grid_w);
    const int rows = 1 + n_win, n = h->n_classes;
    float *pooled = ac_malloc((size_t)rows * dim * sizeof *pooled), *logits = ac_malloc((size_t)rows * n * sizeof *logits);
    if (!pooled || !logits) {
        free(pooled), free(logits);
        return ac_errf(err, "out of memory");
    }
    const ac_grid_window whole = {0, 0, grid_h, grid_w};
    for (int r = 0; r < rows; r++) window_mean(ann, grid_w, dim, r ? &win[r - 1] : &whole, h->pool_act, pooled + (size_t)r * dim);
    /* the whole grid alone, as the graph runs it (one row); the windows together */
    const ac_cnn_weights wt = {h->w, h->packed, NULL, NULL}; /* float32 always: the head is a small part of a photo */
    ac_cnn_gemm(1, n, dim, pooled, &wt, h->bias, h->logits_act, logits, NULL, NULL);
    if (n_win) ac_cnn_gemm(n_win, n, dim, pooled + dim, &wt, h->bias, h->logits_act, logits + n, NULL, NULL);
    ac_cnn_softmax(logits, probs, (size_t)rows, n, h->beta);
    free(pooled), free(logits);
    for (size_t i = 0; i < (size_t)rows * n; i++)
        if (!(probs[i] >= 0.0f && probs[i] <= 1.0f)) return ac_errf(err, "classifier head: non-finite probability");
    return 0;
}

void ac_class_probs_max(const float *probs, int n_rows, int n_classes, float *out) {
    for (int c = 0; c < n_classes; c++) out[c] = n_rows > 0 ? probs[c] : 0.0f;
    for (int r = 1; r < n_rows; r++)
        for (int c = 0; c < n_classes; c++) {
            float p = probs[(size_t)r * n_classes + c];
            out[c] = p > out[c] ? p : out[c];
        }
}
