/* serve.h: the line protocol every CNN peer of bench/cnn_peers.py speaks (the C ones include this).
 *
 * A peer is started as  PEER MODEL.tflite LAYER SIZE THREADS INPUT.f32 OUTPUT.f32 : it builds its
 * network, runs it once on INPUT (1 x SIZE x SIZE x 3 float32, NHWC), writes the layer's output to
 * OUTPUT (NHWC float32, for the driver's cosine check) and prints "ready". Then, for each line on
 * stdin, "run N" prints "ms T1 ... TN" (N timed forward passes), "peak" prints "peak GFLOPS" when the
 * peer measures the sgemm peak, and end of input ends it. Keeping every peer alive and asking each
 * for a few runs in turn is what lets the driver interleave them, so a change in the machine's load
 * hits all of them alike. A peer that cannot run prints "skip: WHY" and exits 3. */
#ifndef BENCH_PEERS_SERVE_H
#define BENCH_PEERS_SERVE_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct peer_args {
    const char *model, *layer, *in_path, *out_path;
    int size, threads;
} peer_args;

static double peer_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void peer_skip(const char *why) {
    printf("skip: %s\n", why);
    fflush(stdout);
    exit(3);
}

static peer_args peer_parse(int argc, char **argv) {
    if (argc != 7) peer_skip("usage: PEER MODEL.tflite LAYER SIZE THREADS INPUT.f32 OUTPUT.f32");
    peer_args a = {argv[1], argv[2], argv[5], argv[6], atoi(argv[3]), atoi(argv[4])};
    if (a.size < 32 || a.threads < 1) peer_skip("bad size or thread count");
    return a;
}

/* The input image: size x size x 3 floats. */
static float *peer_read_input(const peer_args *a) {
    size_t n = (size_t)a->size * a->size * 3;
    float *x = malloc(n * sizeof *x);
    FILE *f = fopen(a->in_path, "rb");
    if (!x || !f || fread(x, sizeof *x, n, f) != n) peer_skip("cannot read the input file");
    fclose(f);
    return x;
}

/* run: one forward pass (0 = ok). peak: the sgemm peak in GFLOP/s, or NULL. */
static int peer_serve(const peer_args *a, void *ctx, int (*run)(void *), double (*peak)(int threads),
                      const float *out, size_t n_out) {
    if (run(ctx)) peer_skip("the first forward pass failed");
    FILE *f = fopen(a->out_path, "wb");
    if (!f || fwrite(out, sizeof *out, n_out, f) != n_out || fclose(f)) peer_skip("cannot write the output file");
    printf("ready\n");
    fflush(stdout);
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        int n = 0;
        if (sscanf(line, "run %d", &n) == 1) {
            printf("ms");
            for (int i = 0; i < n; i++) {
                double t0 = peer_now_ms();
                if (run(ctx)) peer_skip("a forward pass failed");
                printf(" %.4f", peer_now_ms() - t0);
            }
            printf("\n");
        } else if (!strncmp(line, "peak", 4)) {
            printf("peak %.2f\n", peak ? peak(a->threads) : 0.0);
        }
        fflush(stdout);
    }
    return 0;
}
#endif
