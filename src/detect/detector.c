/* detector.c: the COCO detector of detect.h: letterbox, the graph on our engine, decoding and
 * per-class greedy non-maximum suppression. */
#include "attncap/detect.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/cnn.h"
#include "attncap/locate.h"
#include "attncap/tflite.h"
#include "alloc_internal.h"

#define MAX_LABELS 1000
#define LABEL_BYTES (1 << 20)

struct ac_detector {
    ac_tfl_model *model;
    ac_cnn *cnn;
    int size;           /* S */
    int n_anchors, n_labels;
    char **labels;
    float *input, *raw; /* S*S*3 and n_anchors * (5 + n_labels) floats */
    float min_score;    /* ac_detector_opts' */
};

ac_detect_options ac_detect_options_default(void) { return (ac_detect_options){0.3f, 0.45f, 100}; }

static int load_labels(ac_detector *d, const char *model_path, const char *labels_path, ac_err *err) {
    char *path = NULL, *text = NULL;
    size_t len;
    if (!labels_path) { /* coco_labels.txt beside the model */
        const char *slash = strrchr(model_path, '/');
        size_t dir = slash ? (size_t)(slash - model_path + 1) : 0;
        if (!(path = ac_malloc(dir + 16))) return ac_errf(err, "out of memory");
        memcpy(path, model_path, dir);
        strcpy(path + dir, "coco_labels.txt");
        labels_path = path;
    }
    int rc = ac_read_file(labels_path, LABEL_BYTES, &text, &len, err);
    if (rc < 0) {
        free(path);
        return -1;
    }
    if (!(d->labels = ac_calloc(MAX_LABELS, sizeof *d->labels))) rc = ac_errf(err, "out of memory");
    for (char *line = text, *next; rc == 0 && line < text + len && *line; line = next) {
        next = strchr(line, '\n');
        next = next ? next + 1 : text + len;
        size_t n = (size_t)(next - line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ')) n--;
        if (!n) continue;
        if (d->n_labels == MAX_LABELS) {
            rc = ac_errf(err, "%s: more than %d labels", labels_path, MAX_LABELS);
            break;
        }
        if (!(d->labels[d->n_labels] = ac_malloc(n + 1))) {
            rc = ac_errf(err, "out of memory");
            break;
        }
        memcpy(d->labels[d->n_labels], line, n);
        d->labels[d->n_labels++][n] = 0;
    }
    if (rc == 0 && d->n_labels == 0) rc = ac_errf(err, "%s: no labels", labels_path);
    free(text);
    free(path);
    return rc;
}

void ac_detector_opts_init(ac_detector_opts *o) {
    memset(o, 0, sizeof *o);
    o->min_score = ac_detect_options_default().min_score;
}

int ac_detector_open(const char *path, const ac_detector_opts *opts, ac_detector **out, ac_err *err) {
    *out = NULL;
    ac_detector_opts o;
    if (opts) o = *opts;
    else ac_detector_opts_init(&o);
    if (o.threads < 0 || !(o.min_score >= 0 && o.min_score <= 1))
        return ac_errf(err, "detector options: negative threads or min_score outside 0..1");
    char *found = NULL; /* path NULL: searched as the captioner finds its companion, with no model */
    if (!path && ac_find_companion(NULL, "ATTNCAP_DETECTOR", NULL, "yolox_nano.tflite", &found, err) < 0) return -1;
    const char *model_path = path ? path : found;
    ac_detector *d = ac_calloc(1, sizeof *d);
    if (!d) {
        free(found);
        return ac_errf(err, "out of memory");
    }
    d->min_score = o.min_score;
    const int threads = o.threads;
    if (ac_tfl_load(model_path, &d->model, err) < 0 || load_labels(d, model_path, o.labels, err) < 0) goto fail;
    const ac_tfl_model *m = d->model;
    const ac_tfl_tensor *in = m->n_inputs == 1 ? &m->tensors[m->inputs[0]] : NULL;
    if (!in || in->ndim != 4 || in->shape[1] != in->shape[2] || in->shape[3] != 3 || in->shape[1] < 32) {
        ac_errf(err, "%s: not a detector (input must be 1 x S x S x 3)", model_path);
        goto fail;
    }
    d->size = in->shape[1];
    if (ac_cnn_create(m, NULL, d->size, d->size, threads, &d->cnn, err) < 0) goto fail;
    int h, w, c;
    ac_cnn_output_shape(d->cnn, &h, &w, &c);
    if (c != 5 + d->n_labels || w != 1) {
        ac_errf(err, "%s: output has %d values per anchor, %d expected for the %d labels", model_path, c,
                5 + d->n_labels, d->n_labels);
        goto fail;
    }
    d->n_anchors = h;
    d->input = ac_malloc((size_t)d->size * d->size * 3 * sizeof(float));
    d->raw = ac_malloc((size_t)h * c * sizeof(float));
    if (!d->input || !d->raw) {
        ac_errf(err, "out of memory");
        goto fail;
    }
    free(found);
    *out = d;
    return 0;
fail:
    free(found);
    ac_detector_close(d);
    return -1;
}

void ac_detector_close(ac_detector *d) {
    if (!d) return;
    ac_cnn_free(d->cnn);
    ac_tfl_free(d->model);
    if (d->labels)
        for (int i = 0; i < d->n_labels; i++) free(d->labels[i]);
    free(d->labels);
    free(d->input);
    free(d->raw);
    free(d);
}

int ac_detector_labels(const ac_detector *d) { return d->n_labels; }
ac_detect_options ac_detector_options(const ac_detector *d) {
    ac_detect_options o = ac_detect_options_default();
    o.min_score = d->min_score;
    return o;
}
int ac_detector_input_size(const ac_detector *d) { return d->size; }
const char *ac_detector_label(const ac_detector *d, int i) { return i >= 0 && i < d->n_labels ? d->labels[i] : NULL; }
size_t ac_detector_raw_count(const ac_detector *d) { return (size_t)d->n_anchors * (size_t)(5 + d->n_labels); }

int ac_detector_find_label(const ac_detector *d, const char *name) {
    for (int i = 0; i < d->n_labels; i++)
        if (!strcmp(d->labels[i], name)) return i;
    return -1;
}

int ac_detector_letterbox(const ac_detector *d, const ac_image *img, float *input, float *scale, ac_err *err) {
    const int S = d->size;
    if (img->w < 1 || img->h < 1) return ac_errf(err, "empty image");
    float r = fminf((float)S / (float)img->w, (float)S / (float)img->h);
    int w = (int)lroundf((float)img->w * r), h = (int)lroundf((float)img->h * r);
    w = w < 1 ? 1 : w > S ? S : w;
    h = h < 1 ? 1 : h > S ? S : h;
    ac_image small = {0};
    const ac_image *src = img;
    if (w != img->w || h != img->h) {
        if (ac_image_resize_bilinear(img, w, h, &small, err) < 0) return -1;
        src = &small;
    }
    for (size_t i = 0; i < (size_t)S * S * 3; i++) input[i] = 114.0f;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const uint8_t *p = src->px + ((size_t)y * w + x) * 3;
            float *q = input + ((size_t)y * S + x) * 3;
            q[0] = p[2], q[1] = p[1], q[2] = p[0]; /* BGR */
        }
    ac_image_free(&small);
    *scale = r;
    return 0;
}

int ac_detector_run_raw(ac_detector *d, const float *input, const float **raw, ac_err *err) {
    if (ac_cnn_run(d->cnn, input, d->raw, err) < 0) return -1;
    *raw = d->raw;
    return 0;
}

float ac_box_iou(const ac_detection *a, const ac_detection *b) {
    float iw = fminf(a->x1, b->x1) - fmaxf(a->x0, b->x0), ih = fminf(a->y1, b->y1) - fmaxf(a->y0, b->y0);
    if (iw <= 0 || ih <= 0) return 0.0f;
    float inter = iw * ih, ua = (a->x1 - a->x0) * (a->y1 - a->y0) + (b->x1 - b->x0) * (b->y1 - b->y0) - inter;
    return ua > 0 ? inter / ua : 0.0f;
}

static int by_score(const void *a, const void *b) {
    const ac_detection *x = a, *y = b;
    if (x->score != y->score) return x->score < y->score ? 1 : -1;
    return x->label - y->label; /* ties in a fixed order */
}

/* v in [0, hi]; NaN (inf - inf of a huge box) is 0 */
static float clampf(float v, float hi) { return v > 0 ? (v < hi ? v : hi) : 0; }

int ac_detector_decode(const float *raw, int n_anchors, int n_labels, float r, int w, int h,
                       const ac_detect_options *opts, ac_detections *out, ac_err *err) {
    ac_detect_options o = opts ? *opts : ac_detect_options_default();
    memset(out, 0, sizeof *out);
    out->width = w, out->height = h;
    const int stride = 5 + n_labels;
    /* every (anchor, class) over the bar, in the photo's pixels */
    size_t n = 0, cap = 64;
    ac_detection *c = ac_malloc(cap * sizeof *c);
    if (!c) return ac_errf(err, "out of memory");
    for (int a = 0; a < n_anchors; a++) {
        const float *p = raw + (size_t)a * stride;
        for (int k = 0; k < n_labels; k++) {
            float s = p[4] * p[5 + k];
            if (!(s >= o.min_score)) continue;
            /* a graph that is no detector's (scores not probabilities, boxes not numbers) is refused
             * rather than turned into boxes detect.h does not promise */
            if (!(s <= 1) || !(p[4] >= 0) || !isfinite(p[0] + p[1] + p[2] + p[3])) {
                free(c);
                return ac_errf(err, "the detector's output at anchor %d is not a detection (score %g, box %g %g %g %g): "
                               "not a detector's graph", a, s, p[0], p[1], p[2], p[3]);
            }
            if (n == cap) {
                ac_detection *g = ac_realloc(c, 2 * cap * sizeof *c);
                if (!g) {
                    free(c);
                    return ac_errf(err, "out of memory");
                }
                c = g, cap *= 2;
            }
            float cx = p[0] / r, cy = p[1] / r, bw = p[2] / r, bh = p[3] / r;
            c[n++] = (ac_detection){clampf(cx - bw / 2, (float)w), clampf(cy - bh / 2, (float)h), clampf(cx + bw / 2, (float)w),
                                    clampf(cy + bh / 2, (float)h), s, k};
        }
    }
    qsort(c, n, sizeof *c, by_score);
    /* greedy NMS per class: keep a box unless a kept box of its class overlaps it by more than nms_iou */
    size_t kept = 0;
    for (size_t i = 0; i < n && (int)kept < o.max_detections; i++) {
        int drop = 0;
        for (size_t j = 0; j < kept && !drop; j++) drop = c[j].label == c[i].label && ac_box_iou(&c[j], &c[i]) > o.nms_iou;
        if (!drop) c[kept++] = c[i];
    }
    out->n = (int)kept;
    out->items = c;
    return 0;
}

int ac_detector_detect(ac_detector *d, const ac_image *img, const ac_detect_options *opts, ac_detections *out,
                       ac_err *err) {
    float r;
    const float *raw;
    memset(out, 0, sizeof *out);
    if (ac_detector_letterbox(d, img, d->input, &r, err) < 0 || ac_detector_run_raw(d, d->input, &raw, err) < 0) return -1;
    return ac_detector_decode(raw, d->n_anchors, d->n_labels, r, img->w, img->h, opts, out, err);
}

void ac_detections_free(ac_detections *d) {
    if (!d) return;
    free(d->items);
    memset(d, 0, sizeof *d);
}
