/* detector.c: the COCO detector of detect.h: letterbox, the graph on our engine, decoding and
 * per-class greedy non-maximum suppression.
 *
 * The graph ends in its own decoding of the head's levels (YOLOX: per level a 1 x h x w x (5 + K)
 * concatenation of raw box, objectness and class scores; then transposes, a concatenation of the
 * levels, grid offsets added and strides multiplied through SCATTER_ND, 20 operators over all N x
 * (5 + K) values, a tenth of the detector's time). Where the levels are found, the plan stops at them
 * (ac_cnn_create_outputs) and the decoding is done here, only for the anchors a class passes on:
 * centre (raw + cell) x stride, size exp(raw) x stride, the same float operations in the same order
 * as the graph's, so the same bits (tests/test_detector_levels.c against the whole graph). Another
 * graph runs whole. */
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
#define MAX_LEVELS AC_CNN_MAX_OUTPUTS
#define RECT_PLANS 8 /* plans kept for inputs other than S x S (a photo's aspect; in the square plan's memory) */

/* The plan for one input size (h x w), and when it last ran. */
typedef struct sized_plan {
    ac_cnn *cnn;
    int h, w;
    unsigned long used;
} sized_plan;

struct ac_detector {
    ac_tfl_model *model;
    ac_cnn *cnn;        /* the graph up to its levels, or whole (n_levels 0), at S x S */
    sized_plan rect[RECT_PLANS]; /* the same at a photo's own aspect (levels only), least recently used out;
                                    they live in cnn's buffers and filters: one runs at a time */
    unsigned long runs;
    int threads;
    int stride;         /* the coarsest level's: the input's sides are multiples of it */
    int size;           /* S */
    int n_anchors, n_labels;
    int n_levels;       /* the plan's outputs, finest first; their anchors in the graph's order */
    char **labels;
    float *raw;         /* n_anchors * (5 + n_labels) floats for ac_detector_run_raw; NULL until asked */
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

/* The head's levels: the CONCATENATIONs whose output is 1 x h x w x (5 + K) with S a whole multiple
 * of h and of w (the stride), finest first, their anchors adding up to the graph's. 0 when the graph
 * has no such levels (it then runs whole). */
static int find_levels(const ac_tfl_model *m, int S, int n_labels, int n_anchors, const char **names) {
    int n = 0, idx[MAX_LEVELS];
    for (int k = 0; k < m->n_ops; k++) {
        const ac_tfl_op *op = &m->ops[k];
        if (op->opcode != 2 /* CONCATENATION */ || op->n_out != 1 || op->outputs[0] < 0) continue;
        const ac_tfl_tensor *t = &m->tensors[op->outputs[0]];
        if (t->ndim != 4 || t->shape[0] != 1 || t->shape[3] != 5 + n_labels || t->shape[1] < 1 || t->shape[2] < 1 ||
            S % t->shape[1] || S % t->shape[2] || S / t->shape[1] != S / t->shape[2])
            continue;
        if (n == MAX_LEVELS) return 0;
        idx[n++] = op->outputs[0];
    }
    long total = 0;
    for (int i = 0; i < n; i++) { /* finest first (insertion sort: a handful) */
        for (int j = i; j > 0 && m->tensors[idx[j]].shape[1] > m->tensors[idx[j - 1]].shape[1]; j--) {
            const int t = idx[j];
            idx[j] = idx[j - 1], idx[j - 1] = t;
        }
    }
    for (int i = 0; i < n; i++) total += (long)m->tensors[idx[i]].shape[1] * m->tensors[idx[i]].shape[2], names[i] = m->tensors[idx[i]].name;
    return total == n_anchors ? n : 0;
}

/* The planned levels' coarsest stride, once each is 1 x h x w x (5 + K) with S a whole multiple of
 * its sides and their anchors the graph's; 0 if not (a tensor name the file gives twice). */
static int levels_stride(const ac_detector *d) {
    long total = 0;
    int stride = 0;
    for (int l = 0; l < d->n_levels; l++) {
        int h, w, c;
        if (!ac_cnn_output(d->cnn, l, &h, &w, &c) || c != 5 + d->n_labels || h < 1 || w < 1 || d->size % h ||
            d->size % w || d->size / h != d->size / w)
            return 0;
        total += (long)h * w;
        if (d->size / h > stride) stride = d->size / h;
    }
    return total == d->n_anchors ? stride : 0;
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
    d->threads = threads;
    if (ac_tfl_load(model_path, &d->model, err) < 0 || load_labels(d, model_path, o.labels, err) < 0) goto fail;
    const ac_tfl_model *m = d->model;
    const ac_tfl_tensor *in = m->n_inputs == 1 ? &m->tensors[m->inputs[0]] : NULL;
    if (!in || in->ndim != 4 || in->shape[1] != in->shape[2] || in->shape[3] != 3 || in->shape[1] < 32) {
        ac_errf(err, "%s: not a detector (input must be 1 x S x S x 3)", model_path);
        goto fail;
    }
    d->size = in->shape[1];
    const ac_tfl_tensor *ot = m->n_outputs == 1 ? &m->tensors[m->outputs[0]] : NULL;
    if (!ot || ot->ndim < 2 || ot->shape[ot->ndim - 1] != 5 + d->n_labels) {
        ac_errf(err, "%s: output has %d values per anchor, %d expected for the %d labels", model_path,
                ot && ot->ndim ? ot->shape[ot->ndim - 1] : 0, 5 + d->n_labels, d->n_labels);
        goto fail;
    }
    long anchors = 1;
    for (int k = 0; k + 1 < ot->ndim; k++) anchors *= ot->shape[k] > 0 ? ot->shape[k] : 0;
    d->n_anchors = (int)(anchors < (1 << 24) ? anchors : 0);
    const char *levels[MAX_LEVELS];
    d->n_levels = find_levels(m, d->size, d->n_labels, d->n_anchors, levels);
    if (d->n_levels && ac_cnn_create_outputs(m, levels, d->n_levels, d->size, d->size, threads, &d->cnn, err) < 0) goto fail;
    if (d->n_levels && !(d->stride = levels_stride(d))) { /* names that reach other tensors: the graph runs whole */
        ac_cnn_free(d->cnn);
        d->cnn = NULL, d->n_levels = 0;
    }
    if (!d->n_levels && ac_cnn_create(m, NULL, d->size, d->size, threads, &d->cnn, err) < 0) goto fail;
    int h, w, c;
    ac_cnn_output_shape(d->cnn, &h, &w, &c);
    if (!d->n_levels && (c != 5 + d->n_labels || (long)h * w != d->n_anchors || !d->n_anchors)) {
        ac_errf(err, "%s: output has %d values per anchor, %d expected for the %d labels", model_path, c,
                5 + d->n_labels, d->n_labels);
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
    for (int k = 0; k < RECT_PLANS; k++) ac_cnn_free(d->rect[k].cnn); /* before the plan whose memory they use */
    ac_cnn_free(d->cnn);
    ac_tfl_free(d->model);
    if (d->labels)
        for (int i = 0; i < d->n_labels; i++) free(d->labels[i]);
    free(d->labels);
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
int ac_detector_levels(const ac_detector *d) { return d->n_levels; }

int ac_detector_find_label(const ac_detector *d, const char *name) {
    for (int i = 0; i < d->n_labels; i++)
        if (!strcmp(d->labels[i], name)) return i;
    return -1;
}

/* The photo's letterbox: scaled by r = min(S / w, S / h) to round(w r) x round(h r). */
static void letterbox_size(const ac_detector *d, int img_w, int img_h, float *r, int *w, int *h) {
    const int S = d->size;
    *r = fminf((float)S / (float)img_w, (float)S / (float)img_h);
    *w = (int)lroundf((float)img_w * *r), *h = (int)lroundf((float)img_h * *r);
    *w = *w < 1 ? 1 : *w > S ? S : *w;
    *h = *h < 1 ? 1 : *h > S ? S : *h;
}

void ac_detector_input_dims(const ac_detector *d, int img_w, int img_h, int *in_h, int *in_w) {
    float r;
    int w, h;
    if (!d->n_levels || img_w < 1 || img_h < 1) {
        *in_h = *in_w = d->size;
        return;
    }
    letterbox_size(d, img_w, img_h, &r, &w, &h);
    *in_h = (h + d->stride - 1) / d->stride * d->stride, *in_w = (w + d->stride - 1) / d->stride * d->stride;
}

int ac_detector_letterbox(const ac_detector *d, const ac_image *img, int H, int W, float *input, float *scale, ac_err *err) {
    if (img->w < 1 || img->h < 1) return ac_errf(err, "empty image");
    float r;
    int w, h;
    letterbox_size(d, img->w, img->h, &r, &w, &h);
    if (H < h || W < w) return ac_errf(err, "detector input %dx%d is smaller than the photo's letterbox %dx%d", W, H, w, h);
    ac_image small = {0};
    const ac_image *src = img;
    if (w != img->w || h != img->h) {
        if (ac_image_resize_bilinear(img, w, h, &small, err) < 0) return -1;
        src = &small;
    }
    for (int y = 0; y < H; y++) {
        float *q = input + (size_t)y * W * 3;
        int x = 0;
        if (y < h)
            for (const uint8_t *p = src->px + (size_t)y * w * 3; x < w; x++, p += 3, q += 3)
                q[0] = p[2], q[1] = p[1], q[2] = p[0]; /* BGR */
        for (; x < W; x++, q += 3) q[0] = q[1] = q[2] = 114.0f;
    }
    ac_image_free(&small);
    *scale = r;
    return 0;
}

/* Level l's anchor a of plan c decoded as the graph decodes it: box[0..3] = centre x, y, width, height
 * in input pixels. Its row (5 + K floats) is returned. */
static const float *level_anchor(const ac_cnn *c, int l, int a, float box[4]) {
    int h, w, ch, in_h, in_w, in_c;
    const float *p = ac_cnn_output(c, l, &h, &w, &ch) + (size_t)a * ch;
    ac_cnn_input_shape(c, &in_h, &in_w, &in_c);
    const float s = (float)(in_h / h);
    box[0] = (p[0] + (float)(a % w)) * s, box[1] = (p[1] + (float)(a / w)) * s;
    box[2] = expf(p[2]) * s, box[3] = expf(p[3]) * s;
    return p;
}

/* The plan for an H x W input: S x S's own, else one kept from before, else a new one in the place of
 * the least recently used. */
static ac_cnn *plan_for(ac_detector *d, int H, int W, ac_err *err) {
    if (H == d->size && W == d->size) return d->cnn;
    sized_plan *oldest = &d->rect[0];
    d->runs++;
    for (int k = 0; k < RECT_PLANS; k++) {
        sized_plan *p = &d->rect[k];
        if (p->cnn && p->h == H && p->w == W) return p->used = d->runs, p->cnn;
        if (!p->cnn || (oldest->cnn && p->used < oldest->used)) oldest = p;
    }
    ac_cnn *c;
    if (ac_cnn_clone_size_shared(d->cnn, H, W, d->threads, &c, err) < 0) return NULL;
    ac_cnn_free(oldest->cnn);
    *oldest = (sized_plan){c, H, W, d->runs};
    return c;
}

int ac_detector_use_precision(ac_detector *d, ac_precision p, ac_err *err) {
    if (p != AC_PRECISION_INT8) p = AC_PRECISION_F32; /* auto; bf16x2 splits quantized filters only, and these are float */
    if (ac_cnn_set_precision(d->cnn, p, err) < 0) return -1;
    for (int k = 0; k < RECT_PLANS; k++) /* the others are made again at the new precision when needed */
        ac_cnn_free(d->rect[k].cnn), d->rect[k] = (sized_plan){0};
    return 0;
}

ac_precision ac_detector_precision(const ac_detector *d) { return ac_cnn_precision(d->cnn); } /* every plan's */

int ac_detector_run_raw(ac_detector *d, const float *input, int H, int W, const float **raw, int *n_anchors, ac_err *err) {
    const size_t row = (size_t)(5 + d->n_labels);
    if (!d->n_levels && (H != d->size || W != d->size))
        return ac_errf(err, "this detector runs whole, at %dx%d only (not %dx%d)", d->size, d->size, W, H);
    if (H < 1 || W < 1 || H > d->size || W > d->size) /* no more anchors than S x S's: d->raw holds those */
        return ac_errf(err, "detector input %dx%d outside 1..%d a side", W, H, d->size);
    ac_cnn *plan = plan_for(d, H, W, err);
    if (!plan) return -1;
    if (!d->raw && !(d->raw = ac_malloc((size_t)d->n_anchors * row * sizeof(float)))) return ac_errf(err, "out of memory");
    if (ac_cnn_run(plan, input, d->n_levels ? NULL : d->raw, err) < 0) return -1;
    float *q = d->raw;
    int n = d->n_levels ? 0 : d->n_anchors;
    for (int l = 0; l < d->n_levels; l++) {
        int h, w, c;
        ac_cnn_output(plan, l, &h, &w, &c);
        for (int a = 0; a < h * w; a++, q += row) {
            const float *p = level_anchor(plan, l, a, q);
            memcpy(q + 4, p + 4, (row - 4) * sizeof(float));
        }
        n += h * w;
    }
    *raw = d->raw, *n_anchors = n;
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

/* The (anchor, class) pairs over the bar, in the photo's pixels, then greedy NMS per class. */
typedef struct candidates {
    ac_detection *c;
    size_t n, cap;
} candidates;

/* Anchor a's row p with its decoded box (centre, size in input pixels) for a photo of w x h scaled by r. */
static int add_anchor(candidates *cs, const float *p, const float box[4], int a, int n_labels, float r, int w, int h,
                      float min_score, ac_err *err) {
    for (int k = 0; k < n_labels; k++) {
        float s = p[4] * p[5 + k];
        if (!(s >= min_score)) continue;
        /* a graph that is no detector's (scores not probabilities, boxes not numbers) is refused
         * rather than turned into boxes detect.h does not promise */
        if (!(s <= 1) || !(p[4] >= 0) || !isfinite(box[0] + box[1] + box[2] + box[3]))
            return ac_errf(err, "the detector's output at anchor %d is not a detection (score %g, box %g %g %g %g): "
                           "not a detector's graph", a, s, box[0], box[1], box[2], box[3]);
        if (cs->n == cs->cap) {
            size_t cap = cs->cap ? 2 * cs->cap : 64;
            ac_detection *g = ac_realloc(cs->c, cap * sizeof *g);
            if (!g) return ac_errf(err, "out of memory");
            cs->c = g, cs->cap = cap;
        }
        float cx = box[0] / r, cy = box[1] / r, bw = box[2] / r, bh = box[3] / r;
        cs->c[cs->n++] = (ac_detection){clampf(cx - bw / 2, (float)w), clampf(cy - bh / 2, (float)h),
                                        clampf(cx + bw / 2, (float)w), clampf(cy + bh / 2, (float)h), s, k};
    }
    return 0;
}

static void suppress(candidates *cs, const ac_detect_options *o, ac_detections *out) {
    ac_detection *c = cs->c;
    if (cs->n > 1) qsort(c, cs->n, sizeof *c, by_score); /* none: c is NULL */
    /* greedy NMS per class: keep a box unless a kept box of its class overlaps it by more than nms_iou */
    size_t kept = 0;
    for (size_t i = 0; i < cs->n && (int)kept < o->max_detections; i++) {
        int drop = 0;
        for (size_t j = 0; j < kept && !drop; j++) drop = c[j].label == c[i].label && ac_box_iou(&c[j], &c[i]) > o->nms_iou;
        if (!drop) c[kept++] = c[i];
    }
    out->n = (int)kept;
    out->items = c;
}

int ac_detector_decode(const float *raw, int n_anchors, int n_labels, float r, int w, int h,
                       const ac_detect_options *opts, ac_detections *out, ac_err *err) {
    ac_detect_options o = opts ? *opts : ac_detect_options_default();
    memset(out, 0, sizeof *out);
    out->width = w, out->height = h;
    candidates cs = {0};
    for (int a = 0; a < n_anchors; a++) {
        const float *p = raw + (size_t)a * (5 + n_labels);
        if (add_anchor(&cs, p, p, a, n_labels, r, w, h, o.min_score, err)) return free(cs.c), -1;
    }
    suppress(&cs, &o, out);
    return 0;
}

int ac_detector_detect(ac_detector *d, const ac_image *img, const ac_detect_options *opts, ac_detections *out,
                       ac_err *err) {
    float r;
    int H, W, n;
    const float *raw;
    memset(out, 0, sizeof *out);
    ac_detector_input_dims(d, img->w, img->h, &H, &W); /* an empty photo: S x S, refused by the letterbox */
    ac_cnn *plan = plan_for(d, H, W, err);
    if (!plan) return -1;
    float *input = ac_cnn_input(plan); /* letterboxed in place: no copy of the input */
    if (ac_detector_letterbox(d, img, H, W, input, &r, err) < 0) return -1;
    if (!d->n_levels) {
        if (ac_detector_run_raw(d, input, H, W, &raw, &n, err) < 0) return -1;
        return ac_detector_decode(raw, n, d->n_labels, r, img->w, img->h, opts, out, err);
    }
    if (ac_cnn_run(plan, input, NULL, err) < 0) return -1;
    ac_detect_options o = opts ? *opts : ac_detect_options_default();
    out->width = img->w, out->height = img->h;
    candidates cs = {0};
    for (int l = 0, first = 0; l < d->n_levels; l++) {
        int lh, lw, c;
        const float *p = ac_cnn_output(plan, l, &lh, &lw, &c);
        for (int a = 0; a < lh * lw; a++, p += c) {
            float best = p[5]; /* the box only where a class passes (objectness x its best class) */
            for (int k = 1; k < d->n_labels; k++) best = p[5 + k] > best ? p[5 + k] : best;
            if (!(p[4] * best >= o.min_score) && !(p[4] < 0) && !isnan(best)) continue;
            float box[4];
            level_anchor(plan, l, a, box);
            if (add_anchor(&cs, p, box, first + a, d->n_labels, r, img->w, img->h, o.min_score, err)) return free(cs.c), -1;
        }
        first += lh * lw;
    }
    suppress(&cs, &o, out);
    return 0;
}

void ac_detections_free(ac_detections *d) {
    if (!d) return;
    free(d->items);
    memset(d, 0, sizeof *d);
}
