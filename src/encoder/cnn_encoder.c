/* cnn_encoder.c: photo -> annotation vectors. A TFLite classifier cut at a conv layer, run at a chosen
 * square input size: resize (squash), normalise as the model's input quantization says, run. Keeping
 * the aspect ratio (AC_RESIZE_ASPECT), the plan runs at the photo's own shape instead: one plan per
 * shape, kept for the next photos of that shape. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/encoder.h"
#include "cnn_internal.h"
#include "alloc_internal.h"

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
    enc->threads = threads;
    /* the short name when it identifies the tensor, so caches record "MobilenetV2/Conv_1/Relu6" */
    const char *full = m->tensors[t].name;
    size_t n = first_len(full);
    enc->layer = ac_strndup(full, n);
    if (!enc->layer || ac_cnn_find_layer(m, enc->layer) != t) {
        free(enc->layer);
        enc->layer = ac_strdup(full);
    }
    if (!enc->layer) {
        ac_errf(err, "out of memory");
        goto fail;
    }
    if (ac_cnn_create(m, full, enc->size, enc->size, threads, &enc->cnn, err) < 0) goto fail;
    ac_cnn_output_shape(enc->cnn, &enc->grid_h, &enc->grid_w, &enc->dim);
    enc->norm = ac_tfl_input_norm(m);
    if (ac_sha256_file(path, enc->sha256, err) < 0) goto fail;
    if (!(enc->path = ac_strdup(path))) {
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

int ac_encoder_open_classifier(const char *path, int threads, ac_encoder *enc, ac_err *err) {
    return encoder_open(path, NULL, 1, 0, threads, enc, err);
}

int ac_resize_squash(const ac_image *photo, int size, ac_resize policy, ac_image *square, ac_err *err) {
    if (policy == AC_RESIZE_BILINEAR) return ac_image_resize_bilinear(photo, size, size, square, err);
    return ac_image_resize(photo, size, size, square, err);
}

/* The short side: size * short / long rounded to a multiple of the stride, within [stride, size]. */
static int short_side(int size, int stride, int s, int l) {
    const long k = lround((double)size * s / l / stride);
    const long v = (k < 1 ? 1 : k) * (long)stride;
    return v > size ? size : (int)v;
}

void ac_resize_dims(int w, int h, int size, int stride, ac_resize policy, int *out_w, int *out_h) {
    *out_w = *out_h = size;
    if (policy != AC_RESIZE_ASPECT || w < 1 || h < 1 || w == h) return;
    if (stride < 1) stride = 1;
    if (w > h) *out_h = short_side(size, stride, h, w);
    else *out_w = short_side(size, stride, w, h);
}

int ac_resize_photo(const ac_image *photo, int size, int stride, ac_resize policy, ac_image *out, ac_err *err) {
    if (policy != AC_RESIZE_ASPECT) return ac_resize_squash(photo, size, policy, out, err);
    int w, h;
    ac_resize_dims(photo->w, photo->h, size, stride, policy, &w, &h);
    return ac_image_resize(photo, w, h, out, err);
}

void ac_encoder_min_photo(const ac_encoder *enc, int *min_w, int *min_h) {
    const int side = enc->resize == AC_RESIZE_BILINEAR ? 0 : enc->size;
    *min_w = *min_h = side;
}

int ac_encoder_stride(const ac_encoder *enc) { return enc->grid_h > 0 && enc->size >= enc->grid_h ? enc->size / enc->grid_h : 1; }

int ac_encoder_set_resize(ac_encoder *enc, ac_resize policy, ac_err *err) {
    if (policy < AC_RESIZE_ANTIALIASED || policy > AC_RESIZE_ASPECT)
        return ac_errf(err, "%s: unknown resize policy %d", enc->path ? enc->path : "encoder", (int)policy);
    if (policy == AC_RESIZE_ASPECT && (enc->grid_h < 1 || enc->grid_h != enc->grid_w || enc->size % enc->grid_h))
        return ac_errf(err, "%s: keeping the aspect ratio needs a square grid and an input size that is a multiple of it "
                            "(size %d, grid %dx%d)", enc->path ? enc->path : "encoder", enc->size, enc->grid_h, enc->grid_w);
    enc->resize = policy;
    return 0;
}

int ac_encoder_prepare(const ac_encoder *enc, const ac_image *photo, ac_image *prepared, ac_err *err) {
    return ac_resize_photo(photo, enc->size, ac_encoder_stride(enc), enc->resize, prepared, err);
}

/* ---- plans of other shapes (AC_RESIZE_ASPECT) ---- */

enum { SHAPES = 4 }; /* a 4:3, a 3:4, a 3:2 photo ... at a time (each plan holds its own packed weights and buffers) */
struct ac_encoder_shapes {
    ac_cnn *cnn[SHAPES];
    int h[SHAPES], w[SHAPES];
    unsigned long used[SHAPES], clock;
};

static void shapes_free(struct ac_encoder_shapes *s) {
    for (int k = 0; s && k < SHAPES; k++) ac_cnn_free(s->cnn[k]);
    free(s);
}

/* The plan for an input of w x h: the encoder's own at size x size, else one of the kept shapes (made
 * now, replacing the least recently used, if new). */
static ac_cnn *plan_for(ac_encoder *enc, int h, int w, ac_err *err) {
    if (h == enc->size && w == enc->size) return enc->cnn;
    if (!enc->shapes && !(enc->shapes = ac_calloc(1, sizeof *enc->shapes))) {
        ac_errf(err, "out of memory");
        return NULL;
    }
    struct ac_encoder_shapes *s = enc->shapes;
    int k = 0;
    for (int i = 0; i < SHAPES; i++) {
        if (s->cnn[i] && s->h[i] == h && s->w[i] == w) {
            s->used[i] = ++s->clock;
            return s->cnn[i];
        }
        if (s->cnn[k] && (!s->cnn[i] || s->used[i] < s->used[k])) k = i;
    }
    ac_cnn_free(s->cnn[k]);
    s->cnn[k] = NULL;
    if (ac_cnn_clone_size(enc->cnn, h, w, enc->threads, &s->cnn[k], err)) return NULL;
    s->h[k] = h, s->w[k] = w, s->used[k] = ++s->clock;
    return s->cnn[k];
}

int ac_encoder_encode_grid(ac_encoder *enc, const ac_image *img, float *out, int *grid_h, int *grid_w, ac_err *err) {
    int w, h;
    ac_resize_dims(img->w, img->h, enc->size, ac_encoder_stride(enc), enc->resize, &w, &h);
    ac_image r = {0};
    const ac_image *src = img;
    if (img->w != w || img->h != h) { /* else prepared already (ac_encoder_prepare) */
        if (ac_encoder_prepare(enc, img, &r, err) < 0) return -1;
        src = &r;
    }
    ac_cnn *cnn = plan_for(enc, h, w, err);
    if (!cnn) {
        ac_image_free(&r);
        return -1;
    }
    float *x = ac_cnn_input(cnn); /* normalise straight into the plan's input buffer */
    ac_image_to_float(src, enc->norm.mean, enc->norm.scale, x);
    ac_image_free(&r);
    int gh, gw, dim;
    ac_cnn_output_shape(cnn, &gh, &gw, &dim);
    if (dim != enc->dim || gh > enc->grid_h || gw > enc->grid_w)
        return ac_errf(err, "%s: a %dx%d input gives a %dx%dx%d grid, outside the encoder's %dx%dx%d", enc->path, w, h,
                       gh, gw, dim, enc->grid_h, enc->grid_w, enc->dim);
    if (ac_cnn_run(cnn, x, out, err)) return -1;
    const size_t own = (size_t)gh * gw * dim; /* the photo's cells first (row-major), then zero padding */
    memset(out + own, 0, ((size_t)enc->grid_h * enc->grid_w * enc->dim - own) * sizeof *out);
    if (grid_h) *grid_h = gh;
    if (grid_w) *grid_w = gw;
    return 0;
}

int ac_encoder_encode(ac_encoder *enc, const ac_image *img, float *out, ac_err *err) {
    return ac_encoder_encode_grid(enc, img, out, NULL, NULL, err);
}

int ac_encoder_set_precision(ac_encoder *enc, ac_precision p, ac_err *err) {
    /* an encoder's int8 is its own graph's integers (features that name "int8" mean those), not the
     * float graph's quantized convolutions the detector may run */
    if (p == AC_PRECISION_INT8 && !ac_cnn_quantized(enc->cnn))
        return ac_errf(err, "%s: int8 runs quantized encoders only, and this one is float (use f32)", enc->path);
    if (ac_cnn_set_precision(enc->cnn, p, err) < 0) return -1;
    for (int k = 0; enc->shapes && k < SHAPES; k++)
        if (enc->shapes->cnn[k] && ac_cnn_set_precision(enc->shapes->cnn[k], p, err) < 0) return -1;
    return 0;
}

ac_precision ac_encoder_precision(const ac_encoder *enc) { return ac_cnn_precision(enc->cnn); }

int ac_encoder_lane(const ac_encoder *enc, int threads, ac_encoder *lane, ac_err *err) {
    *lane = *enc;
    lane->cnn = NULL, lane->shapes = NULL, lane->threads = threads;
    return ac_cnn_clone(enc->cnn, threads, &lane->cnn, err);
}

void ac_encoder_lane_close(ac_encoder *lane) {
    if (!lane) return;
    ac_cnn_free(lane->cnn); /* the rest belongs to the encoder it was made from */
    shapes_free(lane->shapes);
    memset(lane, 0, sizeof *lane);
}

void ac_encoder_close(ac_encoder *enc) {
    if (!enc) return;
    ac_cnn_free(enc->cnn);
    shapes_free(enc->shapes);
    ac_tfl_free(enc->model);
    free(enc->layer);
    free(enc->path);
    memset(enc, 0, sizeof *enc);
}
