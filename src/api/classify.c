/* classify.c: the core API's classifier (attncap.h) over encoder.h's whole-graph classifier, the path
 * `attncap classify` takes: a photo file read only as large as the input needs (ac_image_load_min),
 * squashed, run; its top classes chosen by partial selection (equal probabilities: the lower class
 * first). A result is the public ac_classify_result followed by what it points into. */
#include "attncap/attncap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/cnn.h"
#include "attncap/encoder.h"
#include "attncap/image.h"
#include "attncap/locate.h"
#include "alloc_internal.h"

struct ac_classifier {
    ac_encoder enc;
    int open;         /* enc is open */
    char **labels;    /* [n_labels]: line i of the labels file */
    int n_labels, n_classes;
    int min_w, min_h; /* a photo is read at least this large (ac_encoder_min_photo) */
};

typedef struct classify_result {
    ac_classify_result pub; /* first: the caller's pointer is this */
    float *probs;
    int *top;
    char *image;
} classify_result;

/* Labels: one a line (a last line without its newline counts), CR LF tolerated. */
static int read_labels(ac_classifier *c, const char *path, ac_err *err) {
    char *data;
    size_t len;
    if (ac_read_file(path, 64u << 20, &data, &len, err) < 0) return -1;
    int cap = 0, oom = 0;
    for (char *p = data, *e; p < data + len && !oom; p = e + 1) {
        e = memchr(p, '\n', (size_t)(data + len - p));
        if (!e) e = data + len;
        size_t l = (size_t)(e - p);
        if (l && p[l - 1] == '\r') l--;
        if (c->n_labels == cap) {
            cap = cap ? cap * 2 : 1024;
            char **nl = ac_realloc(c->labels, (size_t)cap * sizeof *nl);
            if (!nl) {
                oom = 1;
                break;
            }
            c->labels = nl;
        }
        if (!(c->labels[c->n_labels] = ac_strndup(p, l))) oom = 1;
        else c->n_labels++;
    }
    free(data);
    return oom ? ac_errf(err, "%s: out of memory", path) : 0;
}

int ac_classifier_open(const char *path, const char *labels, int threads, ac_classifier **out, ac_err *err) {
    *out = NULL;
    if (threads < 0) return ac_errf(err, "classifier: %d threads", threads);
    char *own_path = NULL, *own_labels = NULL;
    if ((!path && !(path = own_path = ac_data_file("encoders/mobilenet_v2_1.0_224_quant.tflite", "classifier", err))) ||
        (!labels && !(labels = own_labels = ac_data_file("encoders/imagenet_labels.txt", "classifier", err)))) {
        free(own_path);
        return -1;
    }
    ac_classifier *c = ac_calloc(1, sizeof *c);
    int rc = c ? 0 : ac_errf(err, "out of memory");
    /* the labels first, then the graph, as `attncap classify` has always read them */
    if (rc == 0 && (read_labels(c, labels, err) || ac_encoder_open_classifier(path, threads, &c->enc, err))) rc = -1;
    if (rc == 0) {
        c->open = 1;
        c->n_classes = c->enc.grid_h * c->enc.grid_w * c->enc.dim;
        ac_encoder_min_photo(&c->enc, &c->min_w, &c->min_h);
        rc = ac_classifier_set_precision(c, NULL, err);
    }
    free(own_path), free(own_labels);
    if (rc) {
        ac_classifier_close(c);
        return -1;
    }
    *out = c;
    return 0;
}

void ac_classifier_close(ac_classifier *c) {
    if (!c) return;
    if (c->open) ac_encoder_close(&c->enc);
    for (int i = 0; i < c->n_labels; i++) free(c->labels[i]);
    free(c->labels);
    free(c);
}

const char *ac_classifier_label(const ac_classifier *c, int cls) {
    return cls >= 0 && cls < c->n_classes && cls < c->n_labels ? c->labels[cls] : NULL;
}

int ac_classifier_set_precision(ac_classifier *c, const char *precision, ac_err *err) {
    ac_precision p;
    if (ac_precision_parse(precision ? precision : ac_default_precision(), &p, err)) return -1;
    return c ? ac_encoder_set_precision(&c->enc, p, err) : 0;
}

void ac_classify_result_free(ac_classify_result *pub) {
    classify_result *r = (classify_result *)pub;
    if (!r) return;
    free(r->probs), free(r->top), free(r->image);
    free(r);
}

/* The photo of in, read as `attncap classify` reads a file (at least min_w x min_h when it can be
 * read smaller); AC_ERR_BAD_IMAGE when it cannot be. */
static int read_photo(const ac_classifier *c, const ac_input *in, ac_image *img, ac_err *err) {
    int rc;
    if (in->path) rc = ac_image_load_min(in->path, c->min_w, c->min_h, img, err);
    else if (in->data) {
        if (!in->size) return ac_errc(err, AC_ERR_BAD_IMAGE, "photo in memory: no bytes given");
        char name[64];
        snprintf(name, sizeof name, "photo of %zu bytes", in->size);
        rc = ac_image_load_mem_min(in->data, in->size, name, c->min_w, c->min_h, img, err);
    } else if (in->rgb) {
        const unsigned long long max = (unsigned long long)ac_limits_get().max_image_pixels;
        if (in->width <= 0 || in->height <= 0)
            return ac_errc(err, AC_ERR_BAD_IMAGE, "pixels: bad size %d x %d (width x height)", in->width, in->height);
        if ((unsigned long long)in->width * (unsigned long long)in->height > max)
            return ac_errc(err, AC_ERR_BAD_IMAGE, "pixels: %d x %d is over the limit of %llu pixels (ATTNCAP_MAX_IMAGE_PIXELS)",
                           in->width, in->height, max);
        const size_t bytes = (size_t)in->width * (size_t)in->height * 3;
        *img = (ac_image){in->width, in->height, ac_malloc(bytes)};
        if (!img->px) return ac_errf(err, "out of memory");
        memcpy(img->px, in->rgb, bytes);
        return 0;
    } else return ac_errc(err, AC_ERR_BAD_IMAGE, "no photo given (an ac_input with no path, data or pixels)");
    if (rc && err) err->code = AC_ERR_BAD_IMAGE;
    return rc;
}

int ac_classify(ac_classifier *c, const ac_input *in, int top, ac_classify_result **out, ac_err *err) {
    *out = NULL;
    if (!in) return ac_errc(err, AC_ERR_BAD_IMAGE, "no photo given");
    if (top < 0) return ac_errf(err, "classify: top %d is negative", top);
    if (top > c->n_classes) top = c->n_classes;
    classify_result *r = ac_calloc(1, sizeof *r);
    if (!r || !(r->probs = ac_malloc((size_t)c->n_classes * sizeof *r->probs)) ||
        (top && !(r->top = ac_malloc((size_t)top * sizeof *r->top))) || (in->path && !(r->image = ac_strdup(in->path)))) {
        ac_classify_result_free((ac_classify_result *)r);
        return ac_errf(err, "out of memory");
    }
    ac_image img = {0};
    if (read_photo(c, in, &img, err) || ac_encoder_encode(&c->enc, &img, r->probs, err)) {
        ac_image_free(&img);
        ac_classify_result_free(&r->pub);
        return -1;
    }
    ac_image_free(&img);
    for (int j = 0; j < top; j++) { /* partial selection: top is small */
        int best = -1;
        for (int k = 0; k < c->n_classes; k++) {
            int taken = 0;
            for (int q = 0; q < j && !taken; q++) taken = r->top[q] == k;
            if (!taken && (best < 0 || r->probs[k] > r->probs[best])) best = k;
        }
        r->top[j] = best;
    }
    r->pub = (ac_classify_result){r->image, c->n_classes, r->probs, top, r->top};
    *out = &r->pub;
    return 0;
}
