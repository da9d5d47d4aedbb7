/* int8_cosine: how far `--precision int8` moves the encoder's features from float32's. For each photo
 * (paths on stdin) the annotation grid of both precisions, and 1 - cosine between them over the whole
 * grid and per cell (the decoder attends to cells). Prints the mean, median and worst over photos.
 *   int8_cosine ENCODER.tflite [SIZE (448)] < photos.txt
 * Dev tool (reported in docs/speed.md's int8 notes); not part of attncap. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/encoder.h"
#include "attncap/image.h"

static int cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double one_minus_cos(const float *a, const float *b, size_t n) {
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < n; i++) ab += (double)a[i] * b[i], aa += (double)a[i] * a[i], bb += (double)b[i] * b[i];
    return aa > 0 && bb > 0 ? 1 - ab / (sqrt(aa) * sqrt(bb)) : (aa == bb ? 0 : 1);
}

static void report(const char *what, double *v, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += v[i];
    qsort(v, (size_t)n, sizeof *v, cmp);
    printf("%-22s mean %.3g  median %.3g  worst %.3g  (%d)\n", what, s / n, v[n / 2], v[n - 1], n);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: int8_cosine ENCODER.tflite [SIZE] < photos.txt\n");
        return 2;
    }
    const int size = argc > 2 ? atoi(argv[2]) : 448;
    ac_err err = {0};
    ac_encoder f32, i8;
    if (ac_encoder_open(argv[1], NULL, size, 0, &f32, &err) < 0 || ac_encoder_open(argv[1], NULL, size, 0, &i8, &err) < 0 ||
        ac_encoder_set_precision(&i8, AC_PRECISION_INT8, &err) < 0) {
        fprintf(stderr, "int8_cosine: %s\n", err.msg);
        return 1;
    }
    const size_t n = (size_t)f32.grid_h * f32.grid_w * f32.dim;
    const int cells = f32.grid_h * f32.grid_w;
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    int cap = 1024, np = 0, nc = 0;
    double *whole = malloc((size_t)cap * sizeof *whole), *cell = malloc((size_t)cap * cells * sizeof *cell);
    char line[4096];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!*line) continue;
        ac_image img = {0};
        if (ac_image_load(line, &img, &err) < 0 || ac_encoder_encode(&f32, &img, a, &err) < 0 ||
            ac_encoder_encode(&i8, &img, b, &err) < 0) {
            fprintf(stderr, "int8_cosine: %s\n", err.msg);
            return 1;
        }
        ac_image_free(&img);
        if (np == cap) {
            cap *= 2;
            whole = realloc(whole, (size_t)cap * sizeof *whole), cell = realloc(cell, (size_t)cap * cells * sizeof *cell);
        }
        whole[np++] = one_minus_cos(a, b, n);
        for (int k = 0; k < cells; k++) cell[nc++] = one_minus_cos(a + (size_t)k * f32.dim, b + (size_t)k * f32.dim, (size_t)f32.dim);
    }
    if (!np) return 1;
    printf("%s at %d, int8 vs f32, 1 - cosine:\n", argv[1], size);
    report("whole grid per photo", whole, np);
    report("per cell", cell, nc);
    return 0;
}
