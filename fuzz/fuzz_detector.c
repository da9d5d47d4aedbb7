/* fuzz/fuzz_detector.c: libFuzzer target for the COCO detector (detect.h) over a hostile graph: the input
 * is a TFLite flatbuffer, written as a detector file with a coco_labels.txt beside it, then opened with
 * ac_detector_open (the reader, the engine's planner at the graph's own S x S input with the operators a
 * detector brings: PAD widths, STRIDED_SLICE bounds, strides and masks, TRANSPOSE permutations,
 * BROADCAST_TO, SCATTER_ND indices and shapes, RESIZE_NEAREST_NEIGHBOR sizes, the output's anchors x
 * (5 + labels) check) and, for what opens and is small, one ac_detector_detect on a photo made from the
 * input's bytes (letterbox, the run, box decoding, NMS). The labels file holds as many labels as the
 * graph's output has values per anchor beyond 5 (when it plans; else 2), so that the check passes and
 * the run is reached. Contract checked: an error is one line naming the file; every detection has a
 * label in range, a score in [0, 1] and a box inside the photo. Seeds: fuzz/make_detector_seeds.py.
 * Replayed by tests/test_fuzz_regress.c. */
#include "fuzz_main.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/cnn.h"
#include "attncap/detect.h"
#include "attncap/tflite.h"

static char fuzz_detector_dir[4096];

static void fuzz_detector_msg(const ac_err *err, const char *path) {
    if (getenv("ATTNCAP_FUZZ_VERBOSE")) fprintf(stderr, "fuzz_detector: %s\n", err->msg);
    if (strchr(err->msg, '\n') || (path && !strstr(err->msg, path))) abort(); /* one line naming the file */
}

static int fuzz_detector(const uint8_t *data, size_t size) {
    if (!fuzz_detector_dir[0]) {
        snprintf(fuzz_detector_dir, sizeof fuzz_detector_dir, "%s/fuzz-detector-XXXXXX",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(fuzz_detector_dir)) abort();
    }
    char path[4200], labels[4200];
    snprintf(path, sizeof path, "%s/detector.tflite", fuzz_detector_dir);
    snprintf(labels, sizeof labels, "%s/coco_labels.txt", fuzz_detector_dir);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    fwrite(data, 1, size, f);
    fclose(f);
    ac_tfl_model *m;
    ac_err err;
    if (ac_tfl_load(path, &m, &err)) {
        fuzz_detector_msg(&err, path);
        return 0;
    }
    /* the graph's values per anchor at the detector's input size: that many labels, + 5 */
    int n_labels = 2;
    double flops = 1e30;
    const ac_tfl_tensor *in = m->n_inputs == 1 ? &m->tensors[m->inputs[0]] : NULL;
    if (in && in->ndim == 4 && in->shape[1] == in->shape[2] && in->shape[3] == 3 && in->shape[1] >= 32) {
        ac_cnn *c;
        if (ac_cnn_create(m, NULL, in->shape[1], in->shape[1], 1, &c, &err) == 0) {
            int h, w, ch;
            ac_cnn_output_shape(c, &h, &w, &ch);
            if (ch > 5 && ch <= 5 + 1000) n_labels = ch - 5;
            flops = ac_cnn_flops(c);
            ac_cnn_free(c);
        } else {
            fuzz_detector_msg(&err, NULL);
        }
    }
    ac_tfl_free(m);
    if (!(f = fopen(labels, "w"))) abort();
    for (int i = 0; i < n_labels; i++) fprintf(f, "label%d\n", i);
    fclose(f);
    ac_detector *d;
    if (ac_detector_open(path, &(ac_detector_opts){.threads = 1}, &d, &err)) {
        fuzz_detector_msg(&err, NULL); /* the engine's plan errors name the operator, not always the file */
        return 0;
    }
    if (ac_detector_labels(d) != n_labels) abort();
    if (flops < 5e7) {
        /* a photo of 23 x 37 pixels from the input's bytes: the letterbox scales it up, odd sizes */
        enum { PW = 23, PH = 37 };
        uint8_t px[PW * PH * 3];
        for (size_t i = 0; i < sizeof px; i++) px[i] = size ? data[i % size] : (uint8_t)i;
        ac_image img = {PW, PH, px};
        ac_detect_options o = ac_detect_options_default();
        o.min_score = size ? data[size - 1] / 512.0f : 0; /* low: many boxes reach NMS */
        ac_detections dets;
        if (ac_detector_detect(d, &img, &o, &dets, &err) == 0) {
            if (dets.n < 0 || dets.n > o.max_detections) abort();
            for (int i = 0; i < dets.n; i++) {
                const ac_detection *b = &dets.items[i];
                if (b->label < 0 || b->label >= n_labels || !(b->score >= 0 && b->score <= 1)) abort();
                if (!(b->x0 >= 0 && b->x0 <= b->x1 && b->x1 <= PW && b->y0 >= 0 && b->y0 <= b->y1 && b->y1 <= PH)) abort();
                if (i && dets.items[i - 1].score < b->score) abort(); /* highest score first */
            }
            ac_detections_free(&dets);
        } else {
            fuzz_detector_msg(&err, NULL);
        }
    }
    ac_detector_close(d);
    return 0;
}

AC_FUZZ_MAIN(fuzz_detector, "ATTNCAP_MAX_TENSOR_ELEMS", "4000000")
