/* bench_cnn: MobileNetV2 (up to MobilenetV2/Conv_1/Relu6, the encoder) at 224 and 448 on 2 threads,
 * side by side in one run with PyTorch 1.13 float32 on the same dequantized weights
 * (bench/torch_cnn.py via /usr/bin/python3, skipped if that is missing), plus the machine's sgemm
 * peak (a large OpenBLAS sgemm on the same threads) to report the fraction of peak we reach.
 * Our runs come before and after the peer's, so a change in machine load hits both; each side reports
 * its best of BENCH_ITERS runs.
 * usage: bench_cnn [MODEL.tflite [LAYER]]   (default: $ATTNCAP_DATA/encoders/mobilenet_v2_1.0_224_quant.tflite)
 * env: BENCH_THREADS (2), BENCH_ITERS (20) */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/encoder.h"
#include "attncap/locate.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double sgemm_peak(int threads) {
    int n = 1536;
    float *a = malloc((size_t)n * n * 4), *b = malloc((size_t)n * n * 4), *c = malloc((size_t)n * n * 4);
    for (size_t i = 0; i < (size_t)n * n; i++) a[i] = (float)(i % 7) * 0.1f, b[i] = (float)(i % 5) * 0.1f;
    ac_set_threads(threads);
    double best = 1e30;
    for (int r = 0; r < 12; r++) {
        double t0 = ac_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        double t = ac_now() - t0;
        if (r > 0 && t < best) best = t;
    }
    free(a), free(b), free(c);
    return 2.0 * n * n * n / best / 1e9;
}

/* best ms of `iters` runs (after 3 warm-up runs): on a shared machine the minimum is the steadiest
 * estimate of what the code can do; the peer is measured the same way. */
static double time_ours(ac_cnn *c, const float *x, float *y, int iters) {
    ac_err err;
    double *t = malloc((size_t)iters * sizeof *t);
    for (int i = 0; i < iters + 3; i++) {
        double t0 = ac_now();
        if (ac_cnn_run(c, x, y, &err) < 0) {
            fprintf(stderr, "bench_cnn: %s\n", err.msg);
            exit(1);
        }
        if (i >= 3) t[i - 3] = (ac_now() - t0) * 1e3;
    }
    qsort(t, (size_t)iters, sizeof *t, cmp_double);
    double best = t[0];
    free(t);
    return best;
}

static double time_torch(const char *model, const char *layer, int size, int threads, int iters) {
    if (!ac_is_file("/usr/bin/python3") || !ac_is_file("bench/torch_cnn.py")) return -1;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=%d timeout 900 /usr/bin/python3 bench/torch_cnn.py '%s' '%s' %d %d %d 2>/dev/null",
             threads, model, layer, size, threads, iters);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    char line[512];
    double ms = -1;
    while (fgets(line, sizeof line, p)) {
        char *s = strstr(line, "ms=");
        if (s && !strncmp(line, "torch", 5)) ms = atof(s + 3);
    }
    pclose(p);
    return ms;
}

int main(int argc, char **argv) {
    char *data = ac_find_data_dir(), *def = data ? ac_path_join(data, "encoders/mobilenet_v2_1.0_224_quant.tflite") : NULL;
    const char *model = argc > 1 ? argv[1] : def;
    const char *layer = argc > 2 ? argv[2] : "MobilenetV2/Conv_1/Relu6";
    int threads = getenv("BENCH_THREADS") ? atoi(getenv("BENCH_THREADS")) : 2;
    int iters = getenv("BENCH_ITERS") ? atoi(getenv("BENCH_ITERS")) : 20;
    if (!model || !ac_is_file(model)) {
        printf("bench_cnn: skipped (no model; needs ../shared/encoders/mobilenet_v2_1.0_224_quant.tflite)\n");
        return 0;
    }
    double peak = sgemm_peak(threads);
    double res[2][3];
    for (int size = 224; size <= 448; size *= 2) {
        ac_encoder enc;
        ac_err err;
        if (ac_encoder_open(model, layer, size, threads, &enc, &err) < 0) {
            fprintf(stderr, "bench_cnn: %s\n", err.msg);
            return 1;
        }
        size_t nin = (size_t)size * size * 3, nout = (size_t)enc.grid_h * enc.grid_w * enc.dim;
        float *x = malloc(nin * sizeof *x), *y = malloc(nout * sizeof *y);
        for (size_t i = 0; i < nin; i++) x[i] = (float)((i * 2654435761u) % 255) / 127.5f - 1.0f;
        double a = time_ours(enc.cnn, x, y, iters);
        double torch_ms = time_torch(model, layer, size, threads, iters);
        double b = time_ours(enc.cnn, x, y, iters);
        double ours = a < b ? a : b, gflop = ac_cnn_flops(enc.cnn) / 1e9;
        res[size / 448][0] = ours, res[size / 448][1] = torch_ms, res[size / 448][2] = gflop;
        free(x), free(y);
        ac_encoder_close(&enc);
    }
    /* the peak again, after: the better of the two is the machine's (load only lowers it) */
    double peak2 = sgemm_peak(threads);
    if (peak2 > peak) peak = peak2;
    printf("sgemm peak (1536^3, %d threads, best of before/after): %.1f GFLOP/s\n", threads, peak);
    printf("%-6s %10s %10s %10s %9s %12s\n", "size", "ours ms", "torch ms", "speed-up", "GFLOP", "ours %peak");
    for (int k = 0; k < 2; k++) {
        char tbuf[32] = "n/a", sbuf[32] = "n/a";
        if (res[k][1] > 0) {
            snprintf(tbuf, sizeof tbuf, "%.2f", res[k][1]);
            snprintf(sbuf, sizeof sbuf, "%.2fx", res[k][1] / res[k][0]);
        }
        printf("%-6d %10.2f %10s %10s %9.3f %11.1f%%\n", 224 << k, res[k][0], tbuf, sbuf, res[k][2],
               100.0 * res[k][2] / (res[k][0] / 1e3) / peak);
    }
    free(def);
    free(data);
    return 0;
}
