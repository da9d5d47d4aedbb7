/* xnnpack_cnn: XNNPACK (Debian's libxnnpack-dev, its subgraph API) as a peer of bench/cnn_peers.py
 * (protocol: serve.h). The graph is read with our TFLite reader, so XNNPACK gets the very float32
 * weights our engine dequantizes; TensorFlow's SAME padding is given as explicit (possibly
 * asymmetric) padding. Supports what MobileNets use up to their last conv: CONV_2D,
 * DEPTHWISE_CONV_2D, ADD, and (DE)QUANTIZE as identities. Built only when XNNPACK is installed.
 * `xnnpack_cnn --quant ARGS...`: the quantized graph on XNNPACK's integer operators instead (QU8 for a
 * uint8 graph, QS8 with per-channel filters for an int8 one): the file's own integers, the float
 * photo converted to the input's quantization and the layer converted back to float32 (Convert nodes),
 * as our AC_PRECISION_INT8 does. XNNPACK rounds its own way, so its integers are not TFLite's bit for bit. */
#include <math.h>
#include <pthreadpool.h>
#include <xnnpack.h>

#include "attncap/tflite.h"
#include "serve.h"

typedef struct xnn_peer {
    xnn_runtime_t rt;
    struct xnn_external_value ext[2];
} xnn_peer;

static int run_xnn(void *p) {
    xnn_peer *x = p;
    return xnn_invoke_runtime(x->rt) != xnn_status_success;
}

/* TensorFlow's output size and leading padding along one axis (the odd pixel goes after). */
static int out_size(int in, int k, int s, int same, int *before, int *after) {
    int out = same ? (in + s - 1) / s : (in - k) / s + 1, total = (out - 1) * s + k - in;
    if (!same || total < 0) total = 0;
    *before = total / 2, *after = total - total / 2;
    return out;
}

static int same_name(const char *tensor, const char *layer) {
    size_t n = strlen(layer);
    return !strcmp(tensor, layer) || (!strncmp(tensor, layer, n) && tensor[n] == ';');
}

static int quant = 0; /* --quant */

/* A tensor's value: float32, or (quant) as the TFLite file quantizes it, with its integers when
 * constant (recovered from the reader's dequantized floats; an INT32 bias from its own ints). */
static void define_value(xnn_subgraph_t sg, const ac_tfl_tensor *t, size_t nd, const size_t *dims, int channel_dim,
                         uint32_t ext, uint32_t flags, uint32_t *id) {
    const int q = quant && (t->type == 3 || t->type == 9 || t->type == 2) && t->n_quant >= 1;
    if (!q) {
        if (xnn_define_tensor_value(sg, xnn_datatype_fp32, nd, dims, t->data, ext, flags, id) != xnn_status_success)
            peer_skip("XNNPACK refused a value");
        return;
    }
    const void *data = NULL;
    size_t n = 1;
    for (size_t d = 0; d < nd; d++) n *= dims[d];
    if (t->data && t->type == 2) data = t->ints;
    else if (t->data) { /* 8-bit filters: q = round(value / scale) + zero point, per channel */
        uint8_t *b = malloc(n);
        size_t inner = 1;
        for (size_t d = (size_t)channel_dim + 1; d < nd; d++) inner *= dims[d];
        for (size_t i = 0; i < n; i++) {
            const int ch = t->n_quant > 1 ? (int)((i / inner) % (size_t)t->n_quant) : 0;
            const long v = lrint((double)t->data[i] / t->scale[ch]) + (long)t->zero_point[ch];
            b[i] = (uint8_t)(t->type == 9 ? (uint8_t)(int8_t)v : (uint8_t)v);
        }
        data = b;
    }
    enum xnn_status st;
    if (t->n_quant > 1)
        st = xnn_define_channelwise_quantized_tensor_value(sg, t->type == 2 ? xnn_datatype_qcint32 : xnn_datatype_qcint8, t->scale,
                                                          nd, (size_t)channel_dim, dims, data, ext, flags, id);
    else
        st = xnn_define_quantized_tensor_value(sg, t->type == 2 ? xnn_datatype_qint32 : t->type == 3 ? xnn_datatype_quint8 : xnn_datatype_qint8,
                                               (int32_t)t->zero_point[0], t->scale[0], nd, dims, data, ext, flags, id);
    if (st != xnn_status_success) peer_skip("XNNPACK refused a quantized value");
}

/* An operator's output; the layer asked for is the external output 1, in float32: a quantized one
 * through a Convert node, which finish_output adds once the operator's node is defined (XNNPACK runs
 * the nodes in the order they are defined). */
static uint32_t f32_out = XNN_INVALID_VALUE_ID;

static void define_output(xnn_subgraph_t sg, const ac_tfl_tensor *t, const size_t *od, int is_target, uint32_t *id) {
    if (!is_target || !quant || t->type == 0) {
        define_value(sg, t, 4, od, 0, is_target ? 1 : XNN_INVALID_VALUE_ID, is_target ? XNN_VALUE_FLAG_EXTERNAL_OUTPUT : 0, id);
        return;
    }
    define_value(sg, t, 4, od, 0, XNN_INVALID_VALUE_ID, 0, id);
    if (xnn_define_tensor_value(sg, xnn_datatype_fp32, 4, od, NULL, 1, XNN_VALUE_FLAG_EXTERNAL_OUTPUT, &f32_out) != xnn_status_success)
        peer_skip("XNNPACK refused the output value");
}

static void finish_output(xnn_subgraph_t sg, uint32_t id) {
    if (f32_out != XNN_INVALID_VALUE_ID && xnn_define_convert(sg, id, f32_out, 0) != xnn_status_success)
        peer_skip("XNNPACK refused the output's Convert");
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--quant")) quant = 1, argv[1] = argv[0], argv++, argc--;
    peer_args a = peer_parse(argc, argv);
    ac_tfl_model *m;
    ac_err err = {{0}, 0};
    if (ac_tfl_load(a.model, &m, &err) < 0) peer_skip(err.msg);
    if (xnn_initialize(NULL) != xnn_status_success) peer_skip("xnn_initialize failed");
    xnn_subgraph_t sg;
    if (xnn_create_subgraph(2, 0, &sg) != xnn_status_success) peer_skip("xnn_create_subgraph failed");
    /* per TFLite tensor: its XNNPACK value and NHWC shape (h, w, c) */
    uint32_t *id = malloc((size_t)m->n_tensors * sizeof *id);
    int (*shape)[3] = calloc((size_t)m->n_tensors, sizeof *shape);
    for (int i = 0; i < m->n_tensors; i++) id[i] = XNN_INVALID_VALUE_ID;
    int in = m->inputs[0], target = -1;
    shape[in][0] = shape[in][1] = a.size, shape[in][2] = m->tensors[in].shape[3];
    size_t dims[4] = {1, (size_t)a.size, (size_t)a.size, (size_t)shape[in][2]};
    uint32_t f32_in;
    xnn_define_tensor_value(sg, xnn_datatype_fp32, 4, dims, NULL, 0, XNN_VALUE_FLAG_EXTERNAL_INPUT, &f32_in);
    const int q_in = quant && m->tensors[in].n_quant >= 1 && m->tensors[in].type != 0;
    if (!q_in) id[in] = f32_in;
    for (int k = 0; k < m->n_ops && target < 0; k++) {
        const ac_tfl_op *op = &m->ops[k];
        int x = op->inputs[0], y = op->outputs[0], is_target = same_name(m->tensors[y].name, a.layer);
        if (quant && !strcmp(op->opname, "QUANTIZE") && x == in && q_in) { /* the float photo straight to y's quantization */
            memcpy(shape[y], shape[x], sizeof shape[x]);
            define_value(sg, &m->tensors[y], 4, dims, 0, XNN_INVALID_VALUE_ID, 0, &id[y]);
            if (xnn_define_convert(sg, f32_in, id[y], 0) != xnn_status_success) peer_skip("XNNPACK refused a Convert");
            continue;
        }
        if (q_in && x == in && id[in] == XNN_INVALID_VALUE_ID) {
            define_value(sg, &m->tensors[in], 4, dims, 0, XNN_INVALID_VALUE_ID, 0, &id[in]);
            if (xnn_define_convert(sg, f32_in, id[in], 0) != xnn_status_success) peer_skip("XNNPACK refused a Convert");
        }
        if (id[x] == XNN_INVALID_VALUE_ID) peer_skip("an operator reads a tensor that is not computed");
        float lo = -INFINITY, hi = INFINITY;
        if (op->activation == 1) lo = 0;
        else if (op->activation == 2) lo = -1, hi = 1;
        else if (op->activation == 3) lo = 0, hi = 6;
        if (!strcmp(op->opname, "QUANTIZE") || !strcmp(op->opname, "DEQUANTIZE")) {
            id[y] = id[x], memcpy(shape[y], shape[x], sizeof shape[x]);
            if (is_target) peer_skip("the layer is a (de)quantization");
            continue;
        }
        if (!strcmp(op->opname, "ADD")) {
            int x2 = op->inputs[1];
            if (id[x2] == XNN_INVALID_VALUE_ID || memcmp(shape[x], shape[x2], sizeof shape[x])) peer_skip("unsupported ADD");
            memcpy(shape[y], shape[x], sizeof shape[x]);
        } else if (!strcmp(op->opname, "CONV_2D") || !strcmp(op->opname, "DEPTHWISE_CONV_2D")) {
            const ac_tfl_tensor *w = &m->tensors[op->inputs[1]];
            int dw = op->opname[0] == 'D', kh = w->shape[1], kw = w->shape[2], oc = dw ? w->shape[3] : w->shape[0];
            if (op->dilation_h != 1 || op->dilation_w != 1 || (dw && oc != shape[x][2])) peer_skip("unsupported convolution");
            int pt, pb, pl, pr;
            shape[y][0] = out_size(shape[x][0], kh, op->stride_h, op->padding == 0, &pt, &pb);
            shape[y][1] = out_size(shape[x][1], kw, op->stride_w, op->padding == 0, &pl, &pr);
            shape[y][2] = oc;
            uint32_t wid, bid = XNN_INVALID_VALUE_ID;
            size_t wd[4] = {(size_t)w->shape[0], (size_t)kh, (size_t)kw, (size_t)w->shape[3]}, bd[1] = {(size_t)oc};
            define_value(sg, w, 4, wd, dw ? 3 : 0, XNN_INVALID_VALUE_ID, 0, &wid);
            if (op->n_in > 2 && op->inputs[2] >= 0) define_value(sg, &m->tensors[op->inputs[2]], 1, bd, 0, XNN_INVALID_VALUE_ID, 0, &bid);
            size_t od[4] = {1, (size_t)shape[y][0], (size_t)shape[y][1], (size_t)oc};
            define_output(sg, &m->tensors[y], od, is_target, &id[y]);
            enum xnn_status st =
                dw ? xnn_define_depthwise_convolution_2d(sg, pt, pr, pb, pl, kh, kw, op->stride_h, op->stride_w, 1, 1, 1,
                                                         oc, lo, hi, id[x], wid, bid, id[y], 0)
                   : xnn_define_convolution_2d(sg, pt, pr, pb, pl, kh, kw, op->stride_h, op->stride_w, 1, 1, 1,
                                               shape[x][2], oc, lo, hi, id[x], wid, bid, id[y], 0);
            if (st != xnn_status_success) peer_skip("XNNPACK refused a convolution");
            if (is_target) target = y, finish_output(sg, id[y]);
            continue;
        } else {
            peer_skip("unsupported operator before the layer");
        }
        size_t od[4] = {1, (size_t)shape[y][0], (size_t)shape[y][1], (size_t)shape[y][2]};
        define_output(sg, &m->tensors[y], od, is_target, &id[y]);
        if (xnn_define_add2(sg, lo, hi, id[x], id[op->inputs[1]], id[y], 0) != xnn_status_success) peer_skip("XNNPACK refused an ADD");
        if (is_target) target = y, finish_output(sg, id[y]);
    }
    if (target < 0) peer_skip("no such layer");
    /* one thread: no pool at all, as XNNPACK's own benchmarks do */
    pthreadpool_t pool = a.threads > 1 ? pthreadpool_create((size_t)a.threads) : NULL;
    xnn_peer p;
    if (xnn_create_runtime_v2(sg, pool, 0, &p.rt) != xnn_status_success) peer_skip("xnn_create_runtime_v2 failed");
    size_t n_out = (size_t)shape[target][0] * shape[target][1] * shape[target][2];
    float *xin = peer_read_input(&a), *yout = malloc(n_out * sizeof *yout);
    p.ext[0] = (struct xnn_external_value){0, xin};
    p.ext[1] = (struct xnn_external_value){1, yout};
    if (xnn_setup_runtime(p.rt, 2, p.ext) != xnn_status_success) peer_skip("xnn_setup_runtime failed");
    peer_serve(&a, &p, run_xnn, NULL, yout, n_out);
    xnn_delete_runtime(p.rt);
    xnn_delete_subgraph(sg);
    if (pool) pthreadpool_destroy(pool);
    ac_tfl_free(m);
    return 0;
}
