/* test_detector_levels: the detector's plan stops at the head's levels and decodes them in C
 * (detector.c); that must be the graph's own decoding bit for bit. On sample photos letterboxed as
 * the detector does, ac_detector_run_raw (levels + C) against the whole graph's output run by the
 * engine (ac_cnn_create with no output name: the graph's transposes, SCATTER_ND and EXP), every float
 * equal, on 1 and 2 threads; and each level of the multi-output plan equal to a plan that stops at that
 * tensor alone (ac_cnn_create_outputs against ac_cnn_create). The float64 NumPy reference of the whole
 * graph is tests/detector_ref.sh's. Needs ../shared/encoders/yolox_nano.tflite. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/attncap.h"
#include "attncap/cnn.h"
#include "attncap/detect.h"
#include "attncap/tflite.h"
#include "test.h"

static void levels_decode_as_the_graph(void) {
    const char *model = test_shared("encoders/yolox_nano.tflite");
    if (!model) SKIP("needs ../shared/encoders/yolox_nano.tflite");
    ac_err err;
    ac_tfl_model *m = NULL;
    CHECKF(ac_tfl_load(model, &m, &err) == 0, "%s", err.msg);
    const char *photos[] = {"samples/kite.jpg", "samples/horses.jpg", "samples/giraffe.jpg"};
    for (int threads = 1; threads <= 2; threads++) {
        ac_detector *d = NULL;
        ac_detector_opts o;
        ac_detector_opts_init(&o);
        o.threads = threads;
        o.labels = NULL;
        CHECKF(ac_detector_open(model, &o, &d, &err) == 0, "%s", err.msg);
        CHECKF(ac_detector_levels(d) == 3, "levels %d", ac_detector_levels(d));
        const int S = ac_detector_input_size(d);
        ac_cnn *whole = NULL;
        CHECKF(ac_cnn_create(m, NULL, S, S, threads, &whole, &err) == 0, "%s", err.msg);
        const size_t n = (size_t)3549 * 85; /* 52^2 + 26^2 + 13^2 anchors */
        float *input = malloc((size_t)S * S * 3 * sizeof(float)), *want = malloc(n * sizeof(float));
        CHECK(input && want);
        for (size_t p = 0; p < sizeof photos / sizeof *photos; p++) {
            ac_image img = {0};
            float r;
            const float *raw = NULL;
            int anchors = 0;
            CHECKF(ac_image_load(test_repo_path(photos[p]), &img, &err) == 0, "%s", err.msg);
            CHECKF(ac_detector_letterbox(d, &img, S, S, input, &r, &err) == 0, "%s", err.msg);
            CHECKF(ac_cnn_run(whole, input, want, &err) == 0, "%s", err.msg);
            CHECKF(ac_detector_run_raw(d, input, S, S, &raw, &anchors, &err) == 0 && anchors == 3549, "%s", err.msg);
            size_t diff = 0, first = n;
            for (size_t i = 0; i < n; i++)
                if (memcmp(&raw[i], &want[i], sizeof(float))) diff++, first = first < i ? first : i;
            CHECKF(diff == 0, "%s, %d threads: %zu of %zu floats differ, the first at anchor %zu value %zu: %.9g vs the graph's %.9g",
                   photos[p], threads, diff, n, first / 85, first % 85, raw[first], want[first]);
            ac_image_free(&img);
        }
        free(input), free(want);
        ac_cnn_free(whole);
        ac_detector_close(d);
    }
    ac_tfl_free(m);
}

/* At a photo's own aspect (416 x 320 for the 4:3 samples, 416 x 288 for 3:2 ones) ac_detector_detect
 * decodes only the anchors some class passes on, straight from the levels; that must give what
 * decoding every anchor of ac_detector_run_raw's output gives (ac_detector_decode), at every score
 * bar; and the input sizes are the letterbox's in whole strides of 32. */
static void aspect_detect_as_raw(void) {
    const char *model = test_shared("encoders/yolox_nano.tflite");
    if (!model) SKIP("needs ../shared/encoders/yolox_nano.tflite");
    ac_err err;
    ac_detector *d = NULL;
    CHECKF(ac_detector_open(model, NULL, &d, &err) == 0, "%s", err.msg);
    const struct { int w, h, in_h, in_w; } dims[] = {{640, 480, 320, 416}, {480, 640, 416, 320}, {640, 427, 288, 416},
                                                     {500, 500, 416, 416}, {4032, 3024, 320, 416}, {10000, 10, 32, 416}};
    for (size_t k = 0; k < sizeof dims / sizeof *dims; k++) {
        int H, W;
        ac_detector_input_dims(d, dims[k].w, dims[k].h, &H, &W);
        CHECKF(H == dims[k].in_h && W == dims[k].in_w, "%dx%d -> %dx%d", dims[k].w, dims[k].h, W, H);
    }
    const char *photos[] = {"samples/kite.jpg", "samples/person.jpg", "samples/dog.jpg", "samples/giraffe.jpg"};
    const float bars[] = {0.3f, 0.05f, 0.0f};
    for (size_t p = 0; p < sizeof photos / sizeof *photos; p++) {
        ac_image img = {0};
        CHECKF(ac_image_load(test_repo_path(photos[p]), &img, &err) == 0, "%s", err.msg);
        int H, W, n = 0;
        float r;
        ac_detector_input_dims(d, img.w, img.h, &H, &W);
        float *input = malloc((size_t)H * W * 3 * sizeof(float));
        const float *raw = NULL;
        CHECK(input != NULL);
        CHECKF(ac_detector_letterbox(d, &img, H, W, input, &r, &err) == 0, "%s", err.msg);
        CHECKF(ac_detector_run_raw(d, input, H, W, &raw, &n, &err) == 0, "%s", err.msg);
        CHECK(n == (H / 8) * (W / 8) + (H / 16) * (W / 16) + (H / 32) * (W / 32));
        for (size_t b = 0; b < sizeof bars / sizeof *bars; b++) {
            ac_detect_options o = ac_detect_options_default();
            o.min_score = bars[b];
            ac_detections a, e;
            CHECKF(ac_detector_decode(raw, n, 80, r, img.w, img.h, &o, &e, &err) == 0, "%s", err.msg);
            CHECKF(ac_detector_detect(d, &img, &o, &a, &err) == 0, "%s", err.msg);
            CHECKF(a.n == e.n && (a.n == 0 || !memcmp(a.items, e.items, sizeof *a.items * (size_t)a.n)),
                   "%s at %g: %d detections against %d", photos[p], bars[b], a.n, e.n);
            ac_detections_free(&a), ac_detections_free(&e);
            /* run_raw's buffer is the detector's: run it again for the next bar */
            CHECKF(ac_detector_run_raw(d, input, H, W, &raw, &n, &err) == 0, "%s", err.msg);
        }
        free(input);
        ac_image_free(&img);
    }
    ac_detector_close(d);
}

/* The plans of several input sizes share the square plan's buffers and filters
 * (ac_cnn_clone_size_shared): a photo's detections must not depend on what ran before it in them. The
 * samples (four aspects) one after another, forwards then backwards, in one detector against each in a
 * fresh one. */
static void shared_plans_forget(void) {
    const char *model = test_shared("encoders/yolox_nano.tflite");
    if (!model) SKIP("needs ../shared/encoders/yolox_nano.tflite");
    const char *photos[] = {"samples/kite.jpg", "samples/giraffe.jpg", "samples/person.jpg", "samples/dog.jpg", "samples/eagle.jpg", "samples/horses.jpg"};
    enum { N = sizeof photos / sizeof *photos };
    ac_err err;
    ac_image img[N];
    ac_detections fresh[N];
    memset(img, 0, sizeof img);
    for (int p = 0; p < N; p++) {
        ac_detector *d = NULL;
        CHECKF(ac_image_load(test_repo_path(photos[p]), &img[p], &err) == 0, "%s", err.msg);
        CHECKF(ac_detector_open(model, NULL, &d, &err) == 0, "%s", err.msg);
        CHECKF(ac_detector_detect(d, &img[p], NULL, &fresh[p], &err) == 0, "%s", err.msg);
        ac_detector_close(d);
    }
    ac_detector *d = NULL;
    CHECKF(ac_detector_open(model, NULL, &d, &err) == 0, "%s", err.msg);
    for (int k = 0; k < 2 * N; k++) {
        const int p = k < N ? k : 2 * N - 1 - k;
        ac_detections got;
        CHECKF(ac_detector_detect(d, &img[p], NULL, &got, &err) == 0, "%s", err.msg);
        CHECKF(got.n == fresh[p].n && (got.n == 0 || !memcmp(got.items, fresh[p].items, sizeof *got.items * (size_t)got.n)),
               "%s after %s: %d detections, %d fresh", photos[p], k ? photos[k - 1 < N ? k - 1 : 2 * N - k] : "nothing", got.n,
               fresh[p].n);
        ac_detections_free(&got);
    }
    ac_detector_close(d);
    for (int p = 0; p < N; p++) ac_detections_free(&fresh[p]), ac_image_free(&img[p]);
}

/* The head's three level tensors, found as the detector finds them (1 x h x w x 85 concatenations). */
static int level_names(const ac_tfl_model *m, const char **names) {
    int n = 0;
    for (int k = 0; k < m->n_ops && n < 3; k++) {
        const ac_tfl_op *op = &m->ops[k];
        const ac_tfl_tensor *t = op->n_out == 1 && op->outputs[0] >= 0 ? &m->tensors[op->outputs[0]] : NULL;
        if (op->opcode == 2 && t && t->ndim == 4 && t->shape[3] == 85) names[n++] = t->name;
    }
    return n;
}

static void outputs_as_single_plans(void) {
    const char *model = test_shared("encoders/yolox_nano.tflite");
    if (!model) SKIP("needs ../shared/encoders/yolox_nano.tflite");
    ac_err err;
    ac_tfl_model *m = NULL;
    CHECKF(ac_tfl_load(model, &m, &err) == 0, "%s", err.msg);
    const char *names[3];
    CHECK(level_names(m, names) == 3);
    ac_cnn *multi = NULL, *one = NULL;
    CHECKF(ac_cnn_create_outputs(m, names, 3, 416, 416, 2, &multi, &err) == 0, "%s", err.msg);
    float *in = ac_cnn_input(multi);
    for (size_t i = 0; i < (size_t)416 * 416 * 3; i++) in[i] = (float)((i * 2654435761u) >> 24); /* 0..255 */
    float *copy = malloc((size_t)416 * 416 * 3 * sizeof(float));
    CHECK(copy != NULL);
    memcpy(copy, in, (size_t)416 * 416 * 3 * sizeof(float));
    CHECKF(ac_cnn_run(multi, in, NULL, &err) == 0, "%s", err.msg);
    int strides = 0; /* bit 3, 4, 5: the levels at strides 8, 16, 32 */
    for (int k = 0; k < 3; k++) {
        int h, w, c, h1, w1, c1;
        const float *got = ac_cnn_output(multi, k, &h, &w, &c);
        CHECKF(ac_cnn_create(m, names[k], 416, 416, 1, &one, &err) == 0, "%s", err.msg);
        ac_cnn_output_shape(one, &h1, &w1, &c1);
        CHECK(got && h == h1 && w == w1 && c == c1 && c == 85 && h == w && 416 % h == 0);
        strides |= 416 / h;
        float *want = malloc((size_t)h * w * c * sizeof(float));
        CHECK(want != NULL);
        CHECKF(ac_cnn_run(one, copy, want, &err) == 0, "%s", err.msg);
        CHECKF(!memcmp(got, want, (size_t)h * w * c * sizeof(float)), "level %d differs from its own plan's", k);
        free(want);
        ac_cnn_free(one);
        one = NULL;
    }
    CHECKF(strides == (8 | 16 | 32), "strides %#x", strides);
    int h, w, c;
    CHECK(ac_cnn_output(multi, 3, &h, &w, &c) == NULL && ac_cnn_output(multi, -1, &h, &w, &c) == NULL);
    /* a clone keeps the outputs */
    ac_cnn *clone = NULL;
    CHECKF(ac_cnn_clone(multi, 1, &clone, &err) == 0, "%s", err.msg);
    CHECKF(ac_cnn_run(clone, copy, NULL, &err) == 0, "%s", err.msg);
    for (int k = 0; k < 3; k++) {
        int h2, w2, c2;
        const float *a = ac_cnn_output(multi, k, &h, &w, &c), *b = ac_cnn_output(clone, k, &h2, &w2, &c2);
        CHECK(a && b && h == h2 && !memcmp(a, b, (size_t)h * w * c * sizeof(float)));
    }
    ac_cnn_free(clone);
    /* refused: no output, too many, one twice, an unknown name */
    const char *twice[2] = {names[0], names[0]}, *unknown[1] = {"no such tensor"};
    CHECK(ac_cnn_create_outputs(m, names, 0, 416, 416, 1, &one, &err) == -1 && !one);
    CHECK(ac_cnn_create_outputs(m, names, AC_CNN_MAX_OUTPUTS + 1, 416, 416, 1, &one, &err) == -1 && !one);
    CHECK(ac_cnn_create_outputs(m, twice, 2, 416, 416, 1, &one, &err) == -1 && strstr(err.msg, "twice"));
    CHECK(ac_cnn_create_outputs(m, unknown, 1, 416, 416, 1, &one, &err) == -1 && strstr(err.msg, "no such tensor"));
    /* int8 of this float graph (cnn_q8.c) on a photo (the noise above drives its activations to 1e7,
     * beyond 8 bits' reach): every output finite, near float32's on average (the boxes after NMS:
     * tests/core_detect.sh); f32 again gives float32's bits */
    ac_image photo = {0}, sq = {0};
    CHECKF(ac_image_load(test_repo_path("samples/giraffe.jpg"), &photo, &err) == 0 && ac_image_resize_bilinear(&photo, 416, 416, &sq, &err) == 0,
           "%s", err.msg);
    for (size_t i = 0; sq.px && i < (size_t)416 * 416; i++)
        for (int ch = 0; ch < 3; ch++) copy[i * 3 + ch] = sq.px[i * 3 + 2 - ch]; /* BGR */
    float *f32[3] = {NULL, NULL, NULL};
    size_t n[3] = {0, 0, 0};
    CHECKF(ac_cnn_run(multi, copy, NULL, &err) == 0, "%s", err.msg);
    for (int k = 0; k < 3; k++) {
        const float *a = ac_cnn_output(multi, k, &h, &w, &c);
        n[k] = (size_t)h * w * c;
        if ((f32[k] = malloc(n[k] * sizeof(float)))) memcpy(f32[k], a, n[k] * sizeof(float));
    }
    CHECKF(ac_cnn_set_precision(multi, AC_PRECISION_INT8, &err) == 0 && ac_cnn_run(multi, copy, NULL, &err) == 0, "%s", err.msg);
    for (int k = 0; k < 3 && f32[k]; k++) {
        const float *a = ac_cnn_output(multi, k, &h, &w, &c);
        double top = 0, box = 0, prob = 0, box_max = 0, prob_max = 0;
        int finite = 1;
        for (size_t i = 0; i < n[k]; i++) {
            const double d = fabs(a[i] - f32[k][i]);
            finite &= isfinite(a[i]) != 0;
            if (i % 85 < 4) top = fmax(top, fabs(f32[k][i])), box += d, box_max = fmax(box_max, d);
            else prob += d, prob_max = fmax(prob_max, d);
        }
        box /= (double)(n[k] / 85 * 4), prob /= (double)(n[k] / 85 * 81);
        printf("  level %d in int8: box terms %.4f apart on average (at most %.3f; max |term| %.2f), probabilities %.4f (at most %.3f)\n", k,
               box, box_max, top, prob, prob_max);
        CHECKF(finite && box < 0.04 * top && prob < 0.005, "level %d: int8's box terms %g from float32's on average (max %g), probabilities %g",
               k, box, top, prob);
    }
    CHECK(ac_cnn_set_precision(multi, AC_PRECISION_F32, &err) == 0 && ac_cnn_run(multi, copy, NULL, &err) == 0);
    for (int k = 0; k < 3 && f32[k]; k++) CHECK(!memcmp(ac_cnn_output(multi, k, &h, &w, &c), f32[k], n[k] * sizeof(float)));
    for (int k = 0; k < 3; k++) free(f32[k]);
    ac_image_free(&photo), ac_image_free(&sq);
    free(copy);
    ac_cnn_free(multi);
    ac_tfl_free(m);
}

int main(void) {
    RUN(levels_decode_as_the_graph);
    RUN(outputs_as_single_plans);
    RUN(aspect_detect_as_raw);
    RUN(shared_plans_forget);
    return TEST_EXIT();
}
