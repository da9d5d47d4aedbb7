/* xnnpack_cnn: XNNPACK (Debian's libxnnpack-dev, its subgraph API) as a peer of bench/cnn_peers.py
 * (protocol: serve.h). The graph is read with our TFLite reader, so XNNPACK gets the very float32
 * weights our engine dequantizes; TensorFlow's SAME padding is given as explicit (possibly
 * asymmetric) padding. Supports what MobileNets use up to their last conv: CONV_2D,
 * DEPTHWISE_CONV_2D, ADD, and (DE)QUANTIZE as identities. Built only when XNNPACK is installed. */
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

int main(int argc, char **argv) {
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
    xnn_define_tensor_value(sg, xnn_datatype_fp32, 4, dims, NULL, 0, XNN_VALUE_FLAG_EXTERNAL_INPUT, &id[in]);
    for (int k = 0; k < m->n_ops && target < 0; k++) {
        const ac_tfl_op *op = &m->ops[k];
        int x = op->inputs[0], y = op->outputs[0], is_target = same_name(m->tensors[y].name, a.layer);
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
            xnn_define_tensor_value(sg, xnn_datatype_fp32, 4, wd, w->data, XNN_INVALID_VALUE_ID, 0, &wid);
            if (op->n_in > 2 && op->inputs[2] >= 0)
                xnn_define_tensor_value(sg, xnn_datatype_fp32, 1, bd, m->tensors[op->inputs[2]].data, XNN_INVALID_VALUE_ID, 0, &bid);
            size_t od[4] = {1, (size_t)shape[y][0], (size_t)shape[y][1], (size_t)oc};
            xnn_define_tensor_value(sg, xnn_datatype_fp32, 4, od, NULL, is_target ? 1 : XNN_INVALID_VALUE_ID,
                                    is_target ? XNN_VALUE_FLAG_EXTERNAL_OUTPUT : 0, &id[y]);
            enum xnn_status st =
                dw ? xnn_define_depthwise_convolution_2d(sg, pt, pr, pb, pl, kh, kw, op->stride_h, op->stride_w, 1, 1, 1,
                                                         oc, lo, hi, id[x], wid, bid, id[y], 0)
                   : xnn_define_convolution_2d(sg, pt, pr, pb, pl, kh, kw, op->stride_h, op->stride_w, 1, 1, 1,
                                               shape[x][2], oc, lo, hi, id[x], wid, bid, id[y], 0);
            if (st != xnn_status_success) peer_skip("XNNPACK refused a convolution");
            if (is_target) target = y;
            continue;
        } else {
            peer_skip("unsupported operator before the layer");
        }
        size_t od[4] = {1, (size_t)shape[y][0], (size_t)shape[y][1], (size_t)shape[y][2]};
        xnn_define_tensor_value(sg, xnn_datatype_fp32, 4, od, NULL, is_target ? 1 : XNN_INVALID_VALUE_ID,
                                is_target ? XNN_VALUE_FLAG_EXTERNAL_OUTPUT : 0, &id[y]);
        if (xnn_define_add2(sg, lo, hi, id[x], id[op->inputs[1]], id[y], 0) != xnn_status_success) peer_skip("XNNPACK refused an ADD");
        if (is_target) target = y;
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
