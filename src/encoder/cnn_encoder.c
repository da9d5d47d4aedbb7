/* cnn_encoder.c: photo -> annotation vectors. A TFLite classifier cut at a conv layer, run at a chosen
 * square input size: resize (squash), normalise as the model's input quantization says, run. */
#include <stdlib.h>
#include <string.h>

#include "attncap/encoder.h"
#include "cnn_internal.h"

ac_input_norm ac_tfl_input_norm(const ac_tfl_model *m) {
    ac_input_norm n = {127.5f, 1.0f / 127.5f}; /* float models: the usual [-1, 1] */
    if (!m || m->n_inputs < 1) return n;
    const ac_tfl_tensor *t = &m->tensors[m->inputs[0]];
    if (t->n_quant >= 1 && t->scale[0] > 0) {
        /* real = (q - zero_point) * scale, where q is the pixel for uint8 inputs and pixel - 128 for int8 */
        n.mean = (float)t->zero_point[0] + (t->type == 9 ? 128.0f : 0.0f);
        n.scale = t->scale[0];
    }
    return n;
}

/* First ';'-separated component of a tensor name: TFLite joins the names of fused TF ops. */
static size_t first_len(const char *s) {
    const char *e = strchr(s, ';');
    return e ? (size_t)(e - s) : strlen(s);
}

/* Resolves a layer name: exact tensor name, else the tensor whose first name component equals it. */
int ac_cnn_find_layer(const ac_tfl_model *m, const char *name) {
    int i = ac_tfl_find_tensor(m, name);
    if (i >= 0) return i;
    size_t n = strlen(name);
    for (int k = 0; k < m->n_tensors; k++)
        if (!m->tensors[k].data && first_len(m->tensors[k].name) == n && !strncmp(m->tensors[k].name, name, n)) return k;
    return -1;
}

/* The default layer: MobileNetV2's last conv if present, else the input of the last pooling op. */
static int default_layer(const ac_tfl_model *m) {
    int i = ac_cnn_find_layer(m, "MobilenetV2/Conv_1/Relu6");
    if (i >= 0) return i;
    for (int k = m->n_ops - 1; k >= 0; k--) {
        int code = m->ops[k].opcode;
        if ((code == 1 || code == 40 || code == 17) && m->ops[k].n_in > 0) return m->ops[k].inputs[0];
    }
    return -1;
}

static int encoder_open(const char *path, const char *layer, int use_output, int size, int threads, ac_encoder *enc,
                        ac_err *err) {
    memset(enc, 0, sizeof *enc);
    if (size < 0 || size > 8192) return ac_errf(err, "%s: input size %d out of range", path, size);
    if (ac_tfl_load(path, &enc->model, err) < 0) return -1;
    ac_tfl_model *m = enc->model;
    int t = use_output ? (m->n_outputs ? m->outputs[0] : -1) : layer ? ac_cnn_find_layer(m, layer) : default_layer(m);
    if (t < 0) {
        if (layer) ac_errf(err, "%s: no tensor named '%s' (see `attncap info %s`)", path, layer, path);
        else ac_errf(err, "%s: no default layer (no pooling op); pass a layer name", path);
        goto fail;
    }
    const ac_tfl_tensor *in = &m->tensors[m->inputs[0]];
    if (m->n_inputs != 1 || in->ndim != 4 || in->shape[3] != 3) {
        ac_errf(err, "%s: the model's input is not one RGB image", path);
        goto fail;
    }
    enc->size = size ? size : in->shape[1];
    /* the short name when it identifies the tensor, so caches record "MobilenetV2/Conv_1/Relu6" */
    const char *full = m->tensors[t].name;
    size_t n = first_len(full);
    enc->layer = strndup(full, n);
    if (!enc->layer || ac_cnn_find_layer(m, enc->layer) != t) {
        free(enc->layer);
        enc->layer = strdup(full);
    }
    if (!enc->layer) {
        ac_errf(err, "out of memory");
        goto fail;
    }
    if (ac_cnn_create(m, full, enc->size, enc->size, threads, &enc->cnn, err) < 0) goto fail;
    ac_cnn_output_shape(enc->cnn, &enc->grid_h, &enc->grid_w, &enc->dim);
    enc->norm = ac_tfl_input_norm(m);
    if (ac_sha256_file(path, enc->sha256, err) < 0) goto fail;
    if (!(enc->path = strdup(path))) {
        ac_errf(err, "out of memory");
        goto fail;
    }
    return 0;
fail:
    ac_encoder_close(enc);
    return -1;
}

int ac_encoder_open(const char *path, const char *layer, int size, int threads, ac_encoder *enc, ac_err *err) {
    return encoder_open(path, layer, 0, size, threads, enc, err);
}

int ac_classifier_open(const char *path, int threads, ac_encoder *enc, ac_err *err) {
    return encoder_open(path, NULL, 1, 0, threads, enc, err);
}

int ac_resize_squash(const ac_image *photo, int size, ac_resize policy, ac_image *square, ac_err *err) {
    if (policy == AC_RESIZE_BILINEAR) return ac_image_resize_bilinear(photo, size, size, square, err);
    return ac_image_resize(photo, size, size, square, err);
}

int ac_encoder_prepare(const ac_encoder *enc, const ac_image *photo, ac_image *square, ac_err *err) {
    return ac_resize_squash(photo, enc->size, enc->resize, square, err);
}

int ac_encoder_encode(ac_encoder *enc, const ac_image *img, float *out, ac_err *err) {
    ac_image r = {0};
    const ac_image *src = img;
    if (img->w != enc->size || img->h != enc->size) { /* else prepared already (ac_encoder_prepare) */
        if (ac_encoder_prepare(enc, img, &r, err) < 0) return -1;
        src = &r;
    }
    float *x = ac_cnn_input(enc->cnn); /* normalise straight into the plan's input buffer */
    ac_image_to_float(src, enc->norm.mean, enc->norm.scale, x);
    ac_image_free(&r);
    return ac_cnn_run(enc->cnn, x, out, err);
}

void ac_encoder_close(ac_encoder *enc) {
    if (!enc) return;
    ac_cnn_free(enc->cnn);
    ac_tfl_free(enc->model);
    free(enc->layer);
    free(enc->path);
    memset(enc, 0, sizeof *enc);
}
