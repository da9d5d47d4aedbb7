/* detect_dump: the detector's steps on one photo, for checking them against an independent
 * reference (tests/detector_ref.sh, tools/numpy_graph.py): writes the letterboxed input (H*W*3 float32,
 * BGR 0..255, at the size ac_detector_detect feeds: the photo's aspect in whole strides) and the raw
 * output decoded as the graph decodes it (float32) to files, and prints the detections after NMS
 * (min score 0.3, IoU 0.45), one "label score x0 y0 x1 y1" line each, then "scale R" and "input H W".
 * usage: detect_dump MODEL.tflite PHOTO INPUT.f32 OUTPUT.f32 */
#include <stdio.h>
#include <stdlib.h>

#include "attncap/detect.h"

static int write_floats(const char *path, const float *x, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(x, sizeof *x, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: detect_dump MODEL.tflite PHOTO INPUT.f32 OUTPUT.f32\n");
        return 2;
    }
    ac_err err;
    ac_detector *det;
    ac_image img = {0};
    if (ac_detector_open(argv[1], NULL, &det, &err) < 0 || ac_image_load(argv[2], &img, &err) < 0) {
        fprintf(stderr, "detect_dump: %s\n", err.msg);
        return 1;
    }
    int H, W, n = 0;
    ac_detector_input_dims(det, img.w, img.h, &H, &W);
    float *in = malloc((size_t)H * W * 3 * sizeof *in), r;
    const float *raw;
    ac_detections d;
    if (!in || ac_detector_letterbox(det, &img, H, W, in, &r, &err) < 0 || ac_detector_run_raw(det, in, H, W, &raw, &n, &err) < 0 ||
        write_floats(argv[3], in, (size_t)H * W * 3) < 0 ||
        write_floats(argv[4], raw, (size_t)n * (size_t)(5 + ac_detector_labels(det))) < 0 ||
        ac_detector_decode(raw, n, ac_detector_labels(det), r, img.w, img.h, NULL, &d, &err) < 0) {
        fprintf(stderr, "detect_dump: %s\n", in ? err.msg : "out of memory");
        return 1;
    }
    for (int i = 0; i < d.n; i++)
        printf("%d %.6f %.4f %.4f %.4f %.4f\n", d.items[i].label, d.items[i].score, d.items[i].x0, d.items[i].y0,
               d.items[i].x1, d.items[i].y1);
    printf("scale %.9g\ninput %d %d\n", r, H, W);
    ac_detections_free(&d);
    free(in);
    ac_image_free(&img);
    ac_detector_close(det);
    return 0;
}
