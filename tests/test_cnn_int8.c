/* test_cnn_int8.c: AC_PRECISION_INT8 against independent integer arithmetic.
 *  - ac_i8_mbqm against TFLite's SaturatingRoundingDoublingHighMul + RoundingDivideByPOT written out
 *    in 128-bit arithmetic on hand values and random ones; QuantizeMultiplier on hand-worked values;
 *  - the float input's quantization on every kernel against roundf (ties both ways, the clamp, NaN);
 *  - the product: every kernel this CPU runs (AVX512-VNNI, AVX-VNNI, AVX2, C) against the sum
 *    of (w - zw)(x - zx) + bias requantized by the formula above, on shapes with every kind of tail,
 *    uint8-style filters (zero point 131) and int8 ones (zero point 0);
 *  - the depthwise convolution: every kernel against the sum over the taps inside the image of
 *    (x - zx) * w + bias requantized, 3 x 3 and 5 x 5, strides 1 and 2, channel counts with every tail
 *    of the 32-channel blocks, images narrower than the filter;
 *  - both shipped MobileNetV2 encoders (uint8 per-tensor, int8 per-channel) to Conv_1 on two shared
 *    photos at 224 and 448 (and the uint8 one on to its AVERAGE_POOL_2D): every output integer equal to TFLite's reference kernels re-implemented
 *    in NumPy (tools/tflite_int8_ref.py, /usr/bin/python3), on every kernel this CPU runs, 1 and 2 threads;
 *  - a clone keeps int8 and its bits, f32 again gives float32's; an operator without an integer kernel
 *    refused with a message naming it; a float graph's int8 is cnn_q8.c's (tests/test_cnn_q8.c).
 * The models skip without ../shared, the reference without /usr/bin/python3 and numpy. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attncap/encoder.h"
#include "attncap/image.h"
#include "cnn_int8_internal.h"
#include "cnn_plan.h"
#include "test.h"

/* TFLite's MultiplyByQuantizedMultiplier as written, in wide arithmetic. */
static int32_t mbqm_ref(int32_t x, int32_t m, int shift) {
    const int left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
    const int64_t a = (int64_t)x * ((int64_t)1 << left);
    if (a > INT32_MAX || a < INT32_MIN) return 0; /* not asked */
    __int128 ab = (__int128)a * m, nudge = ab >= 0 ? (1 << 30) : 1 - (1 << 30), v = ab + nudge;
    __int128 h = v / ((__int128)1 << 31); /* truncation toward zero */
    if (a == INT32_MIN && m == INT32_MIN) h = INT32_MAX;
    const int64_t hh = (int64_t)h, mask = ((int64_t)1 << right) - 1, rem = hh & mask, thr = (mask >> 1) + (hh < 0);
    return (int32_t)((hh >> right) + (rem > thr)); /* >> of a negative: arithmetic (GCC) */
}

static void test_fixed_point(void) {
    int32_t m;
    int sh;
    ac_i8_quantize_multiplier(0.5, &m, &sh);
    CHECK(m == (1 << 30) && sh == 0);
    ac_i8_quantize_multiplier(1.0, &m, &sh);
    CHECK(m == (1 << 30) && sh == 1);
    ac_i8_quantize_multiplier(0.75, &m, &sh);
    CHECK(m == 3 << 29 && sh == 0);
    ac_i8_quantize_multiplier(1.0 - 1e-12, &m, &sh); /* rounds to 2^31: carried into the exponent */
    CHECK(m == (1 << 30) && sh == 1);
    ac_i8_quantize_multiplier(0.0, &m, &sh);
    CHECK(m == 0 && sh == 0);
    ac_i8_quantize_multiplier(1e-12, &m, &sh); /* under 2^-31 of a quantum: 0 */
    CHECK(m == 0 && sh == 0);
    /* SaturatingRoundingDoublingHighMul rounds x * 2^30 / 2^31 half up (its nudge), not away from zero */
    CHECK(ac_i8_mbqm(5, 1 << 30, 0) == 3 && ac_i8_mbqm(-5, 1 << 30, 0) == -2);
    CHECK(ac_i8_mbqm(-3, 1 << 30, -1) == -1); /* -1.5 -> -1, then RoundingDivideByPOT's -0.5 -> away from zero: -1 */
    CHECK(ac_i8_mbqm(7, 1 << 30, -2) == 1);   /* 3.5 (SRDHM 4) / 4 = 1 */
    CHECK(ac_i8_mbqm(INT32_MIN, INT32_MIN, 0) == INT32_MAX);
    unsigned s = 1;
    for (int i = 0; i < 200000; i++) {
        s = s * 1103515245u + 12345u;
        const int32_t x = (int32_t)(s ^ (s >> 7)) >> (s % 13);
        s = s * 1103515245u + 12345u;
        const int32_t mm = (int32_t)((1u << 30) | (s >> 2));
        const int e = -(int)(s % 12);
        CHECKF(ac_i8_mbqm(x, mm, e) == mbqm_ref(x, mm, e), "mbqm(%d, %d, %d) = %d, reference %d", x, mm, e,
               ac_i8_mbqm(x, mm, e), mbqm_ref(x, mm, e));
    }
}

/* The float input's quantization against roundf on every kernel: ties both ways, the clamp, a NaN. */
static void test_quantize_input(void) {
    enum { N = 1000 };
    float x[N];
    uint8_t got[N];
    const float scale = 0.0078125f; /* ties: x / scale = k + 0.5 exactly */
    unsigned s = 5;
    for (int i = 0; i < N; i++) {
        s = s * 1103515245u + 12345u;
        x[i] = i < 200 ? ((float)(i - 100) + 0.5f) * scale : ((float)(s >> 8 & 0xffff) / 65536.0f - 0.5f) * 5.0f;
    }
    x[N - 1] = 1e30f, x[N - 2] = -1e30f;
    for (int isa = AC_I8_ISA_C; isa <= ac_i8_isa_best(); isa++) {
        if (!ac_i8_isa_runs(isa)) continue;
        ac_i8_set_isa(isa);
        CHECK(ac_i8_quantize(x, N - 3, scale, 131, got) == 0); /* a tail of 13 past the last 16 */
        CHECK(ac_i8_quantize(x + N - 3, 3, scale, 131, got + N - 3) == 0);
        for (int i = 0; i < N; i++) {
            const float r = roundf(x[i] / scale);
            const int want = r < -1000 ? 0 : r > 1000 ? 255 : (int)r + 131 < 0 ? 0 : (int)r + 131 > 255 ? 255 : (int)r + 131;
            CHECKF(got[i] == want, "%s: x[%d] = %.9g -> %d, want %d", ac_i8_isa_name(isa), i, x[i], got[i], want);
        }
        x[17] = NAN;
        CHECK(ac_i8_quantize(x, N, scale, 131, got) < 0);
        x[17] = 0;
    }
    ac_i8_set_isa(-1);
}

static void test_gemm_kernels(void) {
    static const int shapes[][3] = {{1, 1, 1}, {9, 16, 4}, {50, 33, 160}, {37, 96, 27}, {300, 1280, 20}, {64, 24, 96}, {17, 49, 7}};
    const int best = ac_i8_isa_best();
    unsigned s = 11;
#define R8() (s = s * 1103515245u + 12345u, (int)(s >> 16 & 0xff))
    for (size_t sh = 0; sh < sizeof shapes / sizeof *shapes; sh++)
        for (int style = 0; style < 2; style++) {
            const int m = shapes[sh][0], n = shapes[sh][1], k = shapes[sh][2], cw = style ? 128 : 0;
            const int32_t zw = style ? 131 : 0, zx = style ? 3 : 128 + 17;
            ac_i8_gemm_w w = {n, k, (k + 3) & ~3, (n + 15) & ~15, NULL, NULL, zw - cw};
            uint8_t *a = malloc((size_t)m * k), *got = malloc((size_t)m * n), *want = malloc((size_t)m * n);
            int32_t *q = malloc((size_t)n * k * sizeof *q), *bias = malloc((size_t)w.np * sizeof *bias);
            int32_t *mult = calloc((size_t)w.np, sizeof *mult), *shf = calloc((size_t)w.np, sizeof *shf);
            w.packed = calloc((size_t)w.np * w.kp, 1), w.col = calloc((size_t)w.np, sizeof *w.col);
            for (int i = 0; i < m * k; i++) a[i] = (uint8_t)R8();
            for (int o = 0; o < n; o++) {
                int64_t sum = 0;
                bias[o] = (R8() - 128) * 97;
                ac_i8_quantize_multiplier(0.0004 + 0.00003 * o, &mult[o], &shf[o]);
                for (int j = 0; j < k; j++) {
                    q[o * k + j] = style ? R8() : R8() - 128; /* the filter's own integers */
                    const int wp = q[o * k + j] - cw;
                    w.packed[((size_t)(o / 16) * (w.kp / 4) + j / 4) * 64 + (o % 16) * 4 + j % 4] = (int8_t)wp;
                    sum += wp;
                }
                w.col[o] = (int32_t)(bias[o] - (int64_t)zx * sum + (int64_t)k * zx * w.d);
            }
            const ac_i8_requant rq = {mult, shf, 100, 5, 250};
            for (int r = 0; r < m; r++)
                for (int o = 0; o < n; o++) {
                    int64_t acc = bias[o];
                    for (int j = 0; j < k; j++) acc += (int64_t)(q[o * k + j] - zw) * (a[r * k + j] - zx);
                    int32_t v = mbqm_ref((int32_t)acc, mult[o], shf[o]) + 100;
                    want[r * n + o] = (uint8_t)(v < 5 ? 5 : v > 250 ? 250 : v);
                }
            for (int isa = AC_I8_ISA_C; isa <= best; isa++)
                for (int threads = 1; threads <= 2 && ac_i8_isa_runs(isa); threads++) {
                    ac_i8_set_isa(isa);
                    ac_pool *pool = ac_pool_create(threads);
                    memset(got, 0xee, (size_t)m * n);
                    ac_i8_gemm(m, a, k, &w, &rq, got, n, pool);
                    ac_pool_free(pool);
                    int bad = 0;
                    for (int i = 0; i < m * n; i++) bad += got[i] != want[i];
                    CHECKF(!bad, "%d x %d x %d style %d on %s, %d threads: %d of %d outputs differ", m, n, k, style,
                           ac_i8_isa_name(isa), threads, bad, m * n);
                }
            ac_i8_set_isa(-1);
            free(a), free(got), free(want), free(q), free(bias), free(mult), free(shf), free(w.packed), free(w.col);
        }
    printf("  kernels checked:");
    for (int isa = AC_I8_ISA_C; isa <= best; isa++)
        if (ac_i8_isa_runs(isa)) printf(" %s", ac_i8_isa_name(isa));
    printf("\n");
}

/* Our Conv_1 integers against tools/tflite_int8_ref.py's for one model, photo and size. */
static int check_model(const char *model, const char *layer, const char *photo_path, const char *photo, int size, int isa,
                       int threads) {
    ac_err err = {0};
    ac_encoder enc;
    ac_image img = {0};
    if (ac_encoder_open(model, layer, size, threads, &enc, &err) < 0) {
        printf("FAIL %s: %s\n", t_cur_name, err.msg);
        return -1;
    }
    int rc = -1;
    ac_i8_set_isa(isa);
    float *out = malloc((size_t)enc.grid_h * enc.grid_w * enc.dim * sizeof *out);
    if (ac_image_load(photo_path, &img, &err) < 0 || ac_encoder_set_precision(&enc, AC_PRECISION_INT8, &err) < 0 ||
        ac_encoder_encode(&enc, &img, out, &err) < 0) {
        printf("FAIL %s: %s\n", t_cur_name, err.msg);
        goto done;
    }
    int off_in, off_out;
    const uint8_t *xin = ac_cnn_int8_stored(enc.cnn, 1, &off_in), *y = ac_cnn_int8_stored(enc.cnn, 0, &off_out);
    const size_t n_in = (size_t)size * size * 3, n_out = (size_t)enc.grid_h * enc.grid_w * enc.dim;
    char fin[] = "/tmp/attncap_i8_inXXXXXX", fout[] = "/tmp/attncap_i8_outXXXXXX";
    int fdi = mkstemp(fin), fdo = mkstemp(fout);
    uint8_t *qin = malloc(n_in);
    for (size_t i = 0; i < n_in; i++) qin[i] = (uint8_t)(xin[i] - off_in); /* int8 bytes are two's complement */
    const int wrote = fdi >= 0 && write(fdi, qin, n_in) == (ssize_t)n_in;
    free(qin);
    if (fdi >= 0) close(fdi);
    if (fdo >= 0) close(fdo);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s %d %d '%s' %s %s", test_fixture("../../tools/tflite_int8_ref.py"), model, size,
             size, enc.cnn->m->tensors[enc.cnn->out_t].name, fin, fout);
    if (!wrote || system(cmd) != 0) {
        printf("FAIL %s: %s\n", t_cur_name, cmd);
        goto cleanup;
    }
    FILE *f = fopen(fout, "rb");
    int32_t *ref = malloc(n_out * sizeof *ref);
    const size_t got = f ? fread(ref, sizeof *ref, n_out, f) : 0;
    if (f) fclose(f);
    size_t bad = 0;
    int worst = 0;
    for (size_t i = 0; i < got; i++) {
        const int d = abs((int)y[i] - off_out - ref[i]);
        bad += d != 0;
        if (d > worst) worst = d;
    }
    printf("  %s %s %d (%s, %d threads): %zu of %zu integers of %s differ from the reference (max %d)\n",
           strrchr(model, '/') + 1, photo, size, ac_i8_isa_name(ac_i8_isa()), threads, bad, n_out, enc.layer, worst);
    if (got != n_out || bad) printf("FAIL %s: %s at %d differs from the reference\n", t_cur_name, photo, size);
    else rc = 0;
    free(ref);
cleanup:
    unlink(fin), unlink(fout);
done:
    ac_i8_set_isa(-1);
    free(out);
    ac_image_free(&img);
    ac_encoder_close(&enc);
    return rc;
}

static void test_models_vs_reference(void) {
    static const char *const models[] = {"encoders/mobilenet_v2_1.0_224_quant.tflite", "encoders/tf2_mobilenet_v2_1.0_224_ptq.tflite"};
    static const char *const photos[] = {"grace_hopper", "cat"};
    if (access("/usr/bin/python3", X_OK) || system("/usr/bin/python3 -c 'import numpy' 2>/dev/null"))
        SKIP("needs /usr/bin/python3 with numpy (the reference)");
    int ran = 0;
    for (int mi = 0; mi < 2; mi++) {
        const char *model = test_shared(models[mi]);
        if (!model) continue;
        char mp[4096];
        snprintf(mp, sizeof mp, "%s", model);
        for (int pi = 0; pi < 2; pi++) {
            char rel[64], pp[4096];
            snprintf(rel, sizeof rel, "images/%s.bmp", photos[pi]);
            const char *photo = test_shared(rel);
            if (!photo) continue;
            snprintf(pp, sizeof pp, "%s", photo);
            for (int size = 224; size <= 448; size += 224) {
                /* the best kernel on 2 threads everywhere; C and 1 thread on the first photo at 224 */
                if (check_model(mp, NULL, pp, photos[pi], size, -1, 2) < 0) return (void)(t_cur_failed = 1);
                for (int isa = AC_I8_ISA_C; pi == 0 && size == 224 && isa < ac_i8_isa_best(); isa++) /* the other kernels */
                    if (ac_i8_isa_runs(isa) && check_model(mp, NULL, pp, photos[pi], size, isa, 1 + isa % 2) < 0) return (void)(t_cur_failed = 1);
                ran++;
            }
        }
    }
    if (!ran) SKIP("needs ../shared/encoders and ../shared/images");
    /* and on through the uint8 graph's AVERAGE_POOL_2D */
    const char *model = test_shared(models[0]), *photo = test_shared("images/cat.bmp");
    if (model && photo) {
        char mp[4096], pp[4096];
        snprintf(mp, sizeof mp, "%s", model), snprintf(pp, sizeof pp, "%s", photo);
        if (check_model(mp, "MobilenetV2/Logits/AvgPool", pp, "cat", 224, -1, 1) < 0) t_cur_failed = 1;
    }
}

/* A clone keeps int8 and its bits; back to f32 gives float32's bits; an operator without an integer
 * kernel (the TF2 classifier's MEAN) is refused naming it, leaving the plan as it was. */
static void test_clone_switch_refuse(void) {
    const char *u8 = test_shared("encoders/mobilenet_v2_1.0_224_quant.tflite"), *photo = test_shared("images/grace_hopper.bmp");
    if (!u8 || !photo) SKIP("needs ../shared/encoders and ../shared/images");
    char mp[4096], pp[4096];
    snprintf(mp, sizeof mp, "%s", u8), snprintf(pp, sizeof pp, "%s", photo);
    ac_err err = {0};
    ac_encoder enc, ref;
    ac_image img = {0};
    CHECK(ac_image_load(pp, &img, &err) == 0);
    CHECK(ac_encoder_open(mp, NULL, 224, 2, &enc, &err) == 0 && ac_encoder_open(mp, NULL, 224, 1, &ref, &err) == 0);
    const size_t n = (size_t)enc.grid_h * enc.grid_w * enc.dim;
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *f = malloc(n * sizeof *f);
    CHECK(ac_encoder_encode(&ref, &img, f, &err) == 0);
    CHECK(ac_encoder_set_precision(&enc, AC_PRECISION_INT8, &err) == 0 && ac_encoder_precision(&enc) == AC_PRECISION_INT8);
    CHECK(ac_encoder_encode(&enc, &img, a, &err) == 0);
    ac_cnn *clone = NULL;
    CHECK(ac_cnn_clone(enc.cnn, 1, &clone, &err) == 0 && ac_cnn_precision(clone) == AC_PRECISION_INT8);
    const float *x = ac_cnn_input(enc.cnn); /* the last photo's normalised input */
    CHECK(ac_cnn_run(clone, x, b, &err) == 0);
    CHECK(memcmp(a, b, n * sizeof *a) == 0);
    ac_cnn_free(clone);
    CHECK(memcmp(a, f, n * sizeof *a) != 0); /* int8 is not float32 */
    CHECK(ac_encoder_set_precision(&enc, AC_PRECISION_F32, &err) == 0 && ac_encoder_encode(&enc, &img, b, &err) == 0);
    CHECK(memcmp(b, f, n * sizeof *b) == 0);
    free(a), free(b), free(f);
    ac_encoder_close(&enc), ac_encoder_close(&ref), ac_image_free(&img);
    const char *tf2 = test_shared("encoders/tf2_mobilenet_v2_1.0_224_ptq.tflite");
    if (!tf2) return;
    ac_encoder cls;
    CHECK(ac_encoder_open_classifier(tf2, 1, &cls, &err) == 0);
    CHECK(ac_encoder_set_precision(&cls, AC_PRECISION_INT8, &err) < 0 && ac_encoder_precision(&cls) == AC_PRECISION_F32);
    printf("  %s\n", err.msg);
    CHECK(strstr(err.msg, "MEAN") && strstr(err.msg, "no int8 kernel"));
    ac_encoder_close(&cls);
}

/* DEPTHWISE_CONV_2D: each kernel against the formula (the taps inside the image, as TFLite's reference). */
static void test_depthwise_kernels(void) {
    static const int shapes[][6] = {/* h, w, c, k, stride, pad */
                                    {5, 7, 1, 3, 1, 1}, {9, 6, 16, 3, 2, 0}, {8, 8, 24, 3, 1, 1}, {7, 9, 40, 3, 2, 1},
                                    {6, 5, 144, 3, 1, 1}, {2, 1, 33, 3, 1, 1}, {11, 10, 96, 3, 2, 1}, {6, 6, 8, 5, 1, 2}};
    const int best = ac_i8_isa_best();
    unsigned s = 23;
    for (size_t sh = 0; sh < sizeof shapes / sizeof *shapes; sh++) {
        const int h = shapes[sh][0], w = shapes[sh][1], c = shapes[sh][2], k = shapes[sh][3], st = shapes[sh][4], pad = shapes[sh][5];
        const int oh = (h + 2 * pad - k) / st + 1, ow = (w + 2 * pad - k) / st + 1, zx = 121;
        const ac_i8_geom g = {h, w, c, oh, ow, c, k, k, st, st, 1, 1, pad, pad};
        uint8_t *in = malloc((size_t)h * w * c), *got = malloc((size_t)oh * ow * c), *want = malloc((size_t)oh * ow * c);
        int32_t *wq = malloc((size_t)k * k * c * sizeof *wq), *bias = malloc((size_t)c * sizeof *bias);
        int32_t *inner = malloc((size_t)c * sizeof *inner), *mult = malloc((size_t)c * sizeof *mult), *shf = malloc((size_t)c * sizeof *shf);
        int16_t *wp = k == 3 ? malloc(ac_i8_dw3x3_packed_count(c) * sizeof *wp) : NULL;
        for (int i = 0; i < h * w * c; i++) in[i] = (uint8_t)R8();
        for (int i = 0; i < k * k * c; i++) wq[i] = R8() * 2 - 255; /* uint8 filters' q - zw: -255..255 */
        for (int o = 0; o < c; o++) {
            bias[o] = (R8() - 128) * 311, inner[o] = bias[o];
            for (int t = 0; t < k * k; t++) inner[o] -= zx * wq[t * c + o];
            ac_i8_quantize_multiplier(0.0002 + 0.00001 * o, &mult[o], &shf[o]);
        }
        if (wp) ac_i8_dw3x3_pack(wq, c, wp);
        const ac_i8_requant rq = {mult, shf, 7, 0, 255};
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++)
                for (int o = 0; o < c; o++) {
                    int64_t acc = bias[o];
                    for (int ky = 0; ky < k; ky++)
                        for (int kx = 0; kx < k; kx++) {
                            const int y = oy * st - pad + ky, x = ox * st - pad + kx;
                            if (y >= 0 && y < h && x >= 0 && x < w) acc += (int64_t)(in[(y * w + x) * c + o] - zx) * wq[(ky * k + kx) * c + o];
                        }
                    const int32_t v = mbqm_ref((int32_t)acc, mult[o], shf[o]) + 7;
                    want[(oy * ow + ox) * c + o] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
                }
        for (int isa = AC_I8_ISA_C; isa <= best; isa++)
            for (int threads = 1; threads <= 2 && ac_i8_isa_runs(isa); threads++) {
                ac_i8_set_isa(isa);
                ac_pool *pool = ac_pool_create(threads);
                memset(got, 0xee, (size_t)oh * ow * c);
                ac_i8_depthwise(&g, in, zx, wq, wp, bias, inner, &rq, got, pool);
                ac_pool_free(pool);
                int bad = 0;
                for (int i = 0; i < oh * ow * c; i++) bad += got[i] != want[i];
                CHECKF(!bad, "%dx%dx%d, %dx%d stride %d on %s, %d threads: %d of %d outputs differ", h, w, c, k, k, st,
                       ac_i8_isa_name(isa), threads, bad, oh * ow * c);
            }
        ac_i8_set_isa(-1);
        free(in), free(got), free(want), free(wq), free(bias), free(inner), free(mult), free(shf), free(wp);
    }
}

/* A float graph is not refused: its int8 is the dynamic one of cnn_q8.c (tests/test_cnn_q8.c), not this plan. */
static void test_float_graph_dynamic(void) {
    ac_err err = {0};
    ac_tfl_model *m = NULL;
    ac_cnn *c = NULL;
    CHECK(ac_tfl_load(test_fixture("cnn/op_conv1x1.tflite"), &m, &err) == 0);
    CHECK(ac_cnn_create(m, NULL, 0, 0, 1, &c, &err) == 0);
    CHECKF(ac_cnn_set_precision(c, AC_PRECISION_INT8, &err) == 0, "%s", err.msg);
    CHECK(ac_cnn_precision(c) == AC_PRECISION_INT8 && !c->int8 && c->q8);
    CHECK(ac_cnn_set_precision(c, AC_PRECISION_F32, &err) == 0 && !c->q8);
    ac_cnn_free(c);
    ac_tfl_free(m);
}

int main(void) {
    RUN(test_fixed_point);
    RUN(test_quantize_input);
    RUN(test_gemm_kernels);
    RUN(test_depthwise_kernels);
    RUN(test_float_graph_dynamic);
    RUN(test_clone_switch_refuse);
    RUN(test_models_vs_reference);
    return TEST_EXIT();
}
