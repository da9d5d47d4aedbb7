/* attncap_cnn: our CNN engine as a peer of bench/cnn_peers.py (protocol: serve.h), and the machine's
 * sgemm peak (a large OpenBLAS sgemm on the same threads), against which every peer's GFLOP/s is
 * read. It also prints "flops F", the layer's multiply-adds x 2 as our planner counts them.
 * `attncap_cnn --bf16 ARGS...`: the products in bfloat16 (cnn.h), skipped where the CPU cannot;
 * `attncap_cnn --int8 ARGS...`: the quantized graph on its integers (AC_PRECISION_INT8). */
#include <string.h>

#include <cblas.h>

#include "attncap/encoder.h"
#include "serve.h"

static double sgemm_peak(int threads) {
    int n = 1536;
    float *a = malloc((size_t)n * n * 4), *b = malloc((size_t)n * n * 4), *c = malloc((size_t)n * n * 4);
    if (!a || !b || !c) return 0;
    for (size_t i = 0; i < (size_t)n * n; i++) a[i] = (float)(i % 7) * 0.1f, b[i] = (float)(i % 5) * 0.1f;
    ac_set_threads(threads);
    double best = 1e30;
    for (int r = 0; r < 8; r++) {
        double t0 = ac_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        double t = ac_now() - t0;
        if (r > 0 && t < best) best = t;
    }
    free(a), free(b), free(c);
    return 2.0 * n * n * n / best / 1e9;
}

typedef struct ours {
    ac_encoder enc;
    const float *x;
    float *y;
} ours;

static int run_ours(void *p) {
    ours *o = p;
    ac_err err = {{0}, 0};
    if (ac_cnn_run(o->enc.cnn, o->x, o->y, &err) < 0) {
        fprintf(stderr, "attncap_cnn: %s\n", err.msg);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    const int bf16 = argc > 1 && strcmp(argv[1], "--bf16") == 0, int8 = argc > 1 && strcmp(argv[1], "--int8") == 0;
    if (bf16 || int8) argv[1] = argv[0], argv++, argc--;
    peer_args a = peer_parse(argc, argv);
    ours o;
    ac_err err = {{0}, 0};
    if (ac_encoder_open(a.model, a.layer, a.size, a.threads, &o.enc, &err) < 0) peer_skip(err.msg);
    if (bf16 && ac_encoder_set_precision(&o.enc, AC_PRECISION_BF16X2, &err) < 0) peer_skip(err.msg);
    if (int8 && ac_encoder_set_precision(&o.enc, AC_PRECISION_INT8, &err) < 0) peer_skip(err.msg);
    size_t n_out = (size_t)o.enc.grid_h * o.enc.grid_w * o.enc.dim;
    o.x = peer_read_input(&a);
    if (!(o.y = malloc(n_out * sizeof *o.y))) peer_skip("out of memory");
    printf("flops %.0f\n", ac_cnn_flops(o.enc.cnn));
    peer_serve(&a, &o, run_ours, sgemm_peak, o.y, n_out);
    ac_encoder_close(&o.enc);
    return 0;
}
