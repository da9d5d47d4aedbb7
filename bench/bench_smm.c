/* bench_smm.c: the decoder's per-step products for few rows (src/decoder/smm.c, ac_smm_nn_hp: the
 * weights as packed float16) against OpenBLAS on the same product in float32 (sgemm, and M sgemv
 * calls), side by side in one run, one thread each: M = 1, 2, 3 and 6 rows (a beam of one photo is 1-3 hypotheses; 6 is the
 * kernel's row block) at the shipped model's two large shapes, the LSTM (K 2048 x N 2048) and the
 * output layer (K 256 x N 8,916). Then its float32 products on B as stored (ac_smm_nn) against
 * sgemm: a photo's attention keys (206 cells and objects x 1280 -> 256), the attention context of a
 * beam (3 or 6 rows x 206 -> 1280) and the initial state (1 x 1280 -> 512). Rounds interleave the
 * contenders so the machine's load falls on all; prints each one's median, best and worst
 * microseconds per product over the rounds (each round's figure: the best of its repetitions) and
 * ours as a ratio of the faster OpenBLAS median.
 * Usage: bench_smm [rounds (15)] [repetitions per round (40)] */
#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "decoder_internal.h"

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum { MAX_ROUNDS = 100 };

/* ac_smm_nn (float32 B as stored) against sgemm on the decoder's float products. */
static int bench_float(int rounds, int reps) {
    static const struct { const char *name; int M, K, N; } shapes[] = {
        {"keys", 206, 1280, 256}, {"context", 3, 206, 1280}, {"context", 6, 206, 1280}, {"init", 1, 1280, 512}};
    printf("%-7s %5s %5s %3s | %-26s | %-26s | %s\n", "shape", "K", "N", "M", "ours (float32 B) med/best/worst",
           "OpenBLAS sgemm med/best/worst", "ours / OpenBLAS");
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const int M = shapes[s].M, K = shapes[s].K, N = shapes[s].N;
        float *A = malloc(sizeof *A * (size_t)M * K), *B = malloc(sizeof *B * (size_t)K * N), *C = calloc((size_t)M * N, sizeof *C);
        if (!A || !B || !C) return fprintf(stderr, "bench_smm: out of memory\n"), 1;
        for (size_t i = 0; i < (size_t)M * K; i++) A[i] = (float)(i % 13) * 0.01f - 0.06f;
        for (size_t i = 0; i < (size_t)K * N; i++) B[i] = (float)(i % 7) * 0.01f - 0.03f;
        double t[2][MAX_ROUNDS];
        for (int round = 0; round < rounds; round++)
            for (int who = 0; who < 2; who++) {
                double best = 1e30;
                for (int i = 0; i < reps; i++) {
                    const double t0 = now_us();
                    if (who == 0) ac_smm_nn(M, N, K, A, K, B, N, C, N);
                    else cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, A, K, B, N, 1.0f, C, N);
                    const double dt = now_us() - t0;
                    if (dt < best) best = dt;
                }
                t[who][round] = best;
            }
        for (int who = 0; who < 2; who++) qsort(t[who], (size_t)rounds, sizeof(double), cmp_double);
        printf("%-7s %5d %5d %3d |", shapes[s].name, K, N, M);
        for (int who = 0; who < 2; who++) printf(" %8.1f %8.1f %8.1f |", t[who][rounds / 2], t[who][0], t[who][rounds - 1]);
        printf(" %.2f\n", t[0][rounds / 2] / t[1][rounds / 2]);
        free(A), free(B), free(C);
    }
    return 0;
}

int main(int argc, char **argv) {
    const int rounds = argc > 1 && atoi(argv[1]) > 0 && atoi(argv[1]) <= MAX_ROUNDS ? atoi(argv[1]) : 15;
    const int reps = argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : 40;
    if (!ac_smm_has_f16()) {
        printf("bench_smm: no float16 kernel in this build (AVX-512 BW/VL, or AVX2 with FMA and F16C): skipped\n");
        return 0;
    }
    openblas_set_num_threads(1);
    static const struct { const char *name; int K, N; } shapes[] = {{"LSTM", 2048, 2048}, {"output", 256, 8916}};
    static const int rows[] = {1, 2, 3, 6};
    printf("bench_smm: C[M, N] += A[M, K] B[K, N], one thread, %d rounds of the best of %d; us per product\n", rounds, reps);
    printf("%-7s %5s %5s %2s | %-26s | %-26s | %-26s | %s\n", "shape", "K", "N", "M", "ours (float16 B) med/best/worst",
           "OpenBLAS sgemm med/best/worst", "OpenBLAS M x sgemv", "ours / OpenBLAS");
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const int K = shapes[s].K, N = shapes[s].N;
        uint16_t *B16 = malloc(sizeof *B16 * (size_t)K * N), *Bp = malloc(sizeof *Bp * ac_smm_packed_size(K, N));
        float *B = malloc(sizeof *B * (size_t)K * N), *A = malloc(sizeof *A * 6 * (size_t)K), *C = malloc(sizeof *C * 6 * (size_t)N);
        if (!B16 || !Bp || !B || !A || !C) return fprintf(stderr, "bench_smm: out of memory\n"), 1;
        unsigned seed = 11;
        for (size_t i = 0; i < (size_t)K * N; i++) {
            seed = seed * 1103515245u + 12345u;
            B16[i] = ac_f32_to_f16(((float)(seed >> 16 & 0x7FFF) / 16384.0f - 1.0f) * 0.05f);
            B[i] = ac_f16_to_f32(B16[i]);
        }
        for (int i = 0; i < 6 * K; i++) A[i] = (float)(i % 13) * 0.01f - 0.06f;
        ac_smm_pack_h(K, N, B16, N, Bp);
        for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
            const int M = rows[r];
            double t[3][MAX_ROUNDS];
            for (int round = 0; round < rounds; round++)
                for (int who = 0; who < 3; who++) {
                    double best = 1e30;
                    for (int i = 0; i < reps; i++) {
                        const double t0 = now_us();
                        if (who == 0) ac_smm_nn_hp(M, N, K, A, K, Bp, C, N);
                        else if (who == 1)
                            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, A, K, B, N, 1.0f, C, N);
                        else /* row m of C += A's row m times B, i.e. B^T a_m with B stored [K, N] */
                            for (int m = 0; m < M; m++)
                                cblas_sgemv(CblasRowMajor, CblasTrans, K, N, 1.0f, B, N, A + (size_t)m * K, 1, 1.0f, C + (size_t)m * N, 1);
                        const double dt = now_us() - t0;
                        if (dt < best) best = dt;
                    }
                    t[who][round] = best;
                }
            for (int who = 0; who < 3; who++) qsort(t[who], (size_t)rounds, sizeof(double), cmp_double);
            const double peer = t[1][rounds / 2] < t[2][rounds / 2] ? t[1][rounds / 2] : t[2][rounds / 2];
            printf("%-7s %5d %5d %2d |", shapes[s].name, K, N, M);
            for (int who = 0; who < 3; who++) printf(" %8.1f %8.1f %8.1f |", t[who][rounds / 2], t[who][0], t[who][rounds - 1]);
            printf(" %.2f\n", t[0][rounds / 2] / peer);
        }
        free(B16), free(Bp), free(B), free(A), free(C);
    }
    return bench_float(rounds, reps);
}
