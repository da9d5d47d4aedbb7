/* test_cnn_bf16.c: the bf16x2 products (AMX) against float64 sums and against the float32 engine.
 *  - bfloat16 rounding on hand-worked values (ties to even, carries into the exponent, NaN);
 *  - the product on shapes with every kind of tail, weights a quantized filter's integers times a
 *    per-column scale that bfloat16 cannot hold (so packing w rounded instead of q would show), checked
 *    against a float64 sum of the exact terms: within 2^-20 of the terms' magnitude, where rounding the
 *    activations once (no lo part) misses by ~2^-9; the same bits for 1, 2 and 3 threads;
 *  - packing refuses a column that is not integers times its scale, and rows too long for the kernel;
 *  - MobileNetV2 to Conv_1 on a shared photo at 224 and 448: 1 - cosine <= 1e-8 against float32, the
 *    same bits on 1 and 2 threads, kept by a clone, and AUTO choosing it.
 * Everything but the rounding skips, with a message, on a CPU without AMX-BF16. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/encoder.h"
#include "attncap/image.h"
#include "cnn_internal.h"
#include "test.h"

static void test_bf16_round(void) {
    /* 1 + m/128 are the bfloat16 numbers in [1, 2) */
    CHECK(ac_cnn_bf16_round(1.0f) == 0x3f80);
    CHECK(ac_cnn_bf16_round(1.0f + 1.0f / 256) == 0x3f80);       /* halfway to 1 + 1/128: to the even 1 */
    CHECK(ac_cnn_bf16_round(1.0f + 3.0f / 256) == 0x3f82);       /* halfway between 1/128 and 2/128: to 2/128 */
    CHECK(ac_cnn_bf16_round(1.0f + 1.0f / 256 + 1e-6f) == 0x3f81); /* past halfway: up */
    CHECK(ac_cnn_bf16_round(1.99999f) == 0x4000);                /* carries into the exponent: 2 */
    CHECK(ac_cnn_bf16_round(-255.0f) == 0xc37f);                 /* an 8-bit integer is exact */
    CHECK(ac_cnn_bf16_float(ac_cnn_bf16_round(-255.0f)) == -255.0f);
    CHECK(ac_cnn_bf16_float(0xc37f) == -255.0f);
    CHECK(isnan(ac_cnn_bf16_float(ac_cnn_bf16_round(NAN))));
}

#define RND(seed) ((float)((*(seed) = *(seed) * 1103515245u + 12345u) >> 8 & 0xffff) / 16384.0f - 2.0f)

static void test_bf16_gemm(void) {
    if (!ac_cnn_bf16_supported()) SKIP("this CPU has no AMX-BF16");
    static const int shapes[][3] = {{1, 1, 1},   {50, 33, 160}, {37, 16, 9},    {300, 1280, 20},
                                    {49, 320, 960}, {64, 32, 17}, {33, 17, 1536}, {96, 48, 31}};
    unsigned seed = 7;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        float *a = malloc((size_t)m * k * sizeof *a), *w = malloc((size_t)n * k * sizeof *w);
        float *bias = malloc((size_t)n * sizeof *bias), *scales = malloc((size_t)n * sizeof *scales);
        float *add = malloc((size_t)m * n * sizeof *add), *got[3];
        uint16_t *packed = malloc(ac_cnn_gemm_bf16_packed_size(n, k) * sizeof *packed);
        float *col_scale = malloc((size_t)ac_cnn_gemm_bf16_columns(n) * sizeof *col_scale);
        for (size_t i = 0; i < (size_t)m * k; i++) a[i] = RND(&seed) * 3.0f;
        for (int c = 0; c < n; c++) {
            scales[c] = 0.0123f * (1.0f + 0.01f * (float)c); /* 0.0123 is no bfloat16 */
            for (int p = 0; p < k; p++) {
                const int q = (int)(RND(&seed) * 127.0f); /* |q| <= 254 */
                w[(size_t)c * k + p] = (float)((double)q * scales[c]);
            }
            bias[c] = RND(&seed);
        }
        for (size_t i = 0; i < (size_t)m * n; i++) add[i] = RND(&seed);
        CHECK(ac_cnn_gemm_bf16_pack(n, k, w, scales, packed, col_scale) == 0);
        const ac_cnn_sum sum = {add, CNN_ACT_RELU};
        for (int t = 0; t < 3; t++) {
            got[t] = malloc((size_t)m * n * sizeof *got[t]);
            ac_pool *pool = ac_pool_create(t + 1);
            ac_cnn_gemm_bf16(m, n, k, a, packed, col_scale, bias, CNN_ACT_NONE, got[t], s % 2 ? &sum : NULL, pool);
            ac_pool_free(pool);
        }
        double worst = 0;
        for (int r = 0; r < m; r++)
            for (int c = 0; c < n; c++) {
                double want = bias[c], mag = fabs(bias[c]);
                for (int p = 0; p < k; p++) {
                    const double term = (double)a[(size_t)r * k + p] * w[(size_t)c * k + p];
                    want += term, mag += fabs(term);
                }
                if (s % 2) {
                    want += add[(size_t)r * n + c], mag += fabs(add[(size_t)r * n + c]);
                    if (want < 0) want = 0;
                }
                const double e = fabs(got[0][(size_t)r * n + c] - want) / (mag + 1e-30);
                if (e > worst) worst = e;
            }
        printf("  %d x %d x %d: worst error %.2g of the terms' magnitude\n", m, n, k, worst);
        CHECKF(worst <= 1.0 / 1048576, "%d x %d x %d: error %.3g of the terms' magnitude", m, n, k, worst);
        CHECKF(!memcmp(got[0], got[1], (size_t)m * n * sizeof **got) && !memcmp(got[0], got[2], (size_t)m * n * sizeof **got),
               "%d x %d x %d: thread counts differ", m, n, k);
        for (int t = 0; t < 3; t++) free(got[t]);
        free(a), free(w), free(bias), free(scales), free(add), free(packed), free(col_scale);
    }
}

static void test_bf16_pack_refuses(void) {
    float w[2 * 4] = {1, 2, 3, 4, 0.5f, 1, 1, 1}, scales[2] = {1, 1}, col_scale[32];
    uint16_t packed[1024];
    CHECK(ac_cnn_gemm_bf16_packed_size(2, 4) <= sizeof packed / sizeof *packed);
    CHECK(ac_cnn_gemm_bf16_pack(2, 4, w, scales, packed, col_scale) == -1); /* 0.5 is no integer */
    w[4] = 257; /* too many bits for bfloat16 */
    CHECK(ac_cnn_gemm_bf16_pack(2, 4, w, scales, packed, col_scale) == -1);
    w[4] = -256;
    CHECK(ac_cnn_gemm_bf16_pack(2, 4, w, scales, packed, col_scale) == 0);
    CHECK(col_scale[0] == 1.0f && col_scale[31] == 1.0f);
    /* rows longer than the kernel's stack buffer: refused whatever the weights */
    const int k = AC_CNN_BF16_MAX_K + 1;
    float *wl = calloc((size_t)k, sizeof *wl), one = 1;
    uint16_t *pl = malloc(ac_cnn_gemm_bf16_packed_size(1, k) * sizeof *pl);
    CHECK(wl && pl);
    CHECK(ac_cnn_gemm_bf16_pack(1, k, wl, &one, pl, col_scale) == -1);
    CHECK(ac_cnn_gemm_bf16_pack(1, k - 1, wl, &one, pl, col_scale) == 0);
    free(wl), free(pl);
}

static double cosine(const float *a, const float *b, size_t n) {
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < n; i++) ab += (double)a[i] * b[i], aa += (double)a[i] * a[i], bb += (double)b[i] * b[i];
    return ab / (sqrt(aa * bb) + 1e-30);
}

static void test_bf16_encoder(void) {
    const char *mp = test_shared("encoders/mobilenet_v2_1.0_224_quant.tflite"), *photo = test_shared("images/cat.bmp");
    if (!mp || !photo) SKIP("needs ../shared/encoders/mobilenet_v2_1.0_224_quant.tflite and ../shared/images/cat.bmp");
    ac_err err;
    ac_precision p;
    CHECK(ac_precision_parse("bf16x2", &p, &err) == 0 && p == AC_PRECISION_BF16X2);
    CHECK(ac_precision_parse("f32", &p, &err) == 0 && p == AC_PRECISION_F32);
    CHECK(ac_precision_parse("fp16", &p, &err) == -1 && strstr(err.msg, "fp16"));
    if (!ac_precision_available(AC_PRECISION_BF16X2)) SKIP("this CPU has no AMX-BF16");
    ac_image img;
    CHECKF(ac_image_load(photo, &img, &err) == 0, "%s", err.msg);
    for (int size = 224; size <= 448; size += 224) {
        ac_encoder f32, bf, lane;
        CHECKF(ac_encoder_open(mp, NULL, size, 2, &f32, &err) == 0 && ac_encoder_open(mp, NULL, size, 2, &bf, &err) == 0,
               "%s", err.msg);
        CHECK(ac_encoder_precision(&f32) == AC_PRECISION_F32); /* the default */
        CHECKF(ac_encoder_set_precision(&bf, AC_PRECISION_AUTO, &err) == 0, "%s", err.msg);
        CHECK(ac_encoder_precision(&bf) == AC_PRECISION_BF16X2);
        CHECKF(ac_encoder_lane(&bf, 1, &lane, &err) == 0, "%s", err.msg);
        CHECK(ac_encoder_precision(&lane) == AC_PRECISION_BF16X2);
        const size_t n = (size_t)f32.grid_h * f32.grid_w * f32.dim;
        float *y32 = malloc(n * sizeof *y32), *y = malloc(n * sizeof *y), *y1 = malloc(n * sizeof *y1);
        CHECK(ac_encoder_encode(&f32, &img, y32, &err) == 0 && ac_encoder_encode(&bf, &img, y, &err) == 0 &&
              ac_encoder_encode(&lane, &img, y1, &err) == 0);
        const double d = 1.0 - cosine(y32, y, n);
        double worst = 0, top = 0;
        for (size_t i = 0; i < n; i++) {
            if (fabs(y[i] - y32[i]) > worst) worst = fabs(y[i] - y32[i]);
            if (fabs(y32[i]) > top) top = fabs(y32[i]);
        }
        printf("  Conv_1 at %d: 1 - cosine %.2g against float32, largest difference %.2g (largest value %.3g)\n", size, d,
               worst, top);
        CHECKF(d <= 1e-8, "at %d: 1 - cosine %.3g", size, d);
        CHECKF(memcmp(y, y1, n * sizeof *y) == 0, "at %d: 1 and 2 threads differ", size);
        CHECKF(memcmp(y, y32, n * sizeof *y) != 0, "at %d: the same bits as float32: bf16x2 did not run", size);
        free(y32), free(y), free(y1);
        ac_encoder_lane_close(&lane);
        ac_encoder_close(&bf);
        ac_encoder_close(&f32);
    }
    ac_image_free(&img);
}

int main(void) {
    RUN(test_bf16_round);
    RUN(test_bf16_gemm);
    RUN(test_bf16_pack_refuses);
    RUN(test_bf16_encoder);
    return TEST_EXIT();
}
