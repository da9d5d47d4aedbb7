/* test_cnn.c: the float engine against PyTorch.
 *  - single ops and small chains (tests/fixtures/cnn/op_*.tflite + .bin, written by tools/torch_ops.py):
 *    padding/stride edge cases, dilation, depth multiplier, pools, mean, pad, concat, FC, softmax...
 *  - whole MobileNets on the shared photos (tests/fixtures/cnn/ref_*.bin, tools/torch_mobilenet.py):
 *    top-5 and probabilities within 1e-3, Conv_1 annotation grids at 224 and 448 with cosine >= 0.9999.
 *  - MobileNetV1 0.25 cut at its last conv, at sizes from 256 to 512 (odd ones too), where the engine
 *    fuses a pointwise conv, the depthwise conv after it and the pointwise conv after that (ac_cnn_pw_dw)
 *    into runs of pointwise and depthwise convs back to back (tests/fixtures/cnn/ref_v1_sizes.bin).
 *  - determinism: 1 and 2 threads give the same bits.
 *  - the product behind the convs (ac_cnn_gemm) against a plain loop of fmaf: with our own kernels
 *    (AVX-512, AVX2) the same bits for every shape, tail and thread count. */
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/encoder.h"
#include "attncap/image.h"
#include "cnn_internal.h"
#include "test.h"

#define FIX "tests/fixtures/cnn/"

static float *read_floats(const char *path, size_t *n) {
    char *data;
    size_t len;
    ac_err err;
    if (ac_read_file(path, 1u << 28, &data, &len, &err) < 0) return NULL;
    *n = len / 4;
    float *f = malloc(len + 4);
    memcpy(f, data, len);
    free(data);
    return f;
}

static double cosine(const float *a, const float *b, size_t n) {
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < n; i++) ab += (double)a[i] * b[i], aa += (double)a[i] * a[i], bb += (double)b[i] * b[i];
    return ab / (sqrt(aa * bb) + 1e-30);
}

/* ---- single-op fixtures ---- */

/* op_<name>.bin: int32 n_in_dims, dims..., floats input; int32 n_out_dims, dims..., floats expected. */
static int run_op_case(const char *name, char *why, size_t whylen) {
    char mpath[512], bpath[512];
    snprintf(mpath, sizeof mpath, FIX "op_%s.tflite", name);
    snprintf(bpath, sizeof bpath, FIX "op_%s.bin", name);
    size_t n;
    float *b = read_floats(bpath, &n);
    if (!b) return snprintf(why, whylen, "%s: cannot read", bpath), -1;
    int32_t *hi = (int32_t *)b;
    int nd = hi[0], dims[8], pos = 1 + nd;
    size_t cin = 1;
    for (int d = 0; d < nd; d++) dims[d] = hi[1 + d], cin *= (size_t)dims[d];
    const float *x = b + pos;
    int32_t *ho = (int32_t *)(b + pos + cin);
    int ond = ho[0];
    size_t cout = 1;
    for (int d = 0; d < ond; d++) cout *= (size_t)ho[1 + d];
    const float *want = (const float *)(ho + 1 + ond);
    ac_err err;
    ac_tfl_model *m;
    ac_cnn *c = NULL;
    int rc = -1;
    if (ac_tfl_load(mpath, &m, &err) < 0) {
        snprintf(why, whylen, "%s", err.msg);
        free(b);
        return -1;
    }
    float *got = calloc(cout + 1, sizeof *got);
    if (ac_cnn_create(m, NULL, dims[1], dims[2], 2, &c, &err) < 0 || ac_cnn_run(c, x, got, &err) < 0) {
        snprintf(why, whylen, "%s", err.msg);
        goto done;
    }
    double maxerr = 0, maxref = 0;
    for (size_t i = 0; i < cout; i++) {
        double e = fabs((double)got[i] - want[i]);
        if (e > maxerr) maxerr = e;
        if (fabs(want[i]) > maxref) maxref = fabs(want[i]);
    }
    if (maxerr > 1e-4 * (1 + maxref)) {
        snprintf(why, whylen, "%s: max abs error %g (max |ref| %g)", name, maxerr, maxref);
        goto done;
    }
    rc = 0;
done:
    free(got);
    ac_cnn_free(c);
    ac_tfl_free(m);
    free(b);
    return rc;
}

static void test_ops(void) {
    DIR *d = opendir(FIX);
    if (!d) SKIP("no %s", FIX);
    struct dirent *e;
    int n = 0, bad = 0;
    char why[1200];
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (strncmp(e->d_name, "op_", 3) || l < 10 || strcmp(e->d_name + l - 7, ".tflite")) continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(l - 10), e->d_name + 3);
        n++;
        if (run_op_case(name, why, sizeof why) < 0) {
            printf("  op case %s: %s\n", name, why);
            bad++;
        }
    }
    closedir(d);
    CHECKF(n >= 10, "only %d op fixtures found", n);
    CHECKF(bad == 0, "%d of %d op cases failed", bad, n);
}

/* ---- the product ---- */

static float clamp_act(float x, int act) {
    float lo = act == CNN_ACT_RELU || act == CNN_ACT_RELU6 ? 0.0f : act == CNN_ACT_RELU_N1_TO_1 ? -1.0f : -3e38f;
    float hi = act == CNN_ACT_RELU6 ? 6.0f : act == CNN_ACT_RELU_N1_TO_1 ? 1.0f : 3e38f;
    return x < lo ? lo : x > hi ? hi : x;
}

/* c = act(bias + a . w), then act2(c + add): one fmaf after another, bias first, k in order: the chain
 * every output element of our kernels is, whatever the tile, panel, row block or thread. Shapes cover
 * both tiles, column tails (n not a multiple of 8 or 16), row tails, K from 1, with and without a sum. */
static void test_gemm_chain(void) {
    const int shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {13, 24, 27}, {100, 40, 17}, {196, 144, 24}, {61, 8, 96},
                             {50, 33, 160}, {37, 16, 9}, {300, 1280, 20}, {12544, 32, 27}, {49, 320, 960}};
    unsigned seed = 12345;
    int bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes && !bad; s++) {
        const int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        float *a = malloc((size_t)m * k * sizeof *a), *w = malloc((size_t)n * k * sizeof *w), *bias = malloc((size_t)n * sizeof *bias);
        float *add = malloc((size_t)m * n * sizeof *add), *want = malloc((size_t)m * n * sizeof *want), *got = malloc((size_t)m * n * sizeof *got);
        float *packed = malloc(ac_cnn_gemm_packed_size(n, k) * sizeof *packed);
#define RND() ((float)((seed = seed * 1103515245u + 12345u) >> 8 & 0xffff) / 16384.0f - 2.0f)
        for (size_t i = 0; i < (size_t)m * k; i++) a[i] = RND();
        for (size_t i = 0; i < (size_t)n * k; i++) w[i] = RND();
        for (int i = 0; i < n; i++) bias[i] = RND();
        for (size_t i = 0; i < (size_t)m * n; i++) add[i] = RND();
#undef RND
        ac_cnn_gemm_pack(n, k, w, packed);
        for (int variant = 0; variant < 4 && !bad; variant++) {
            const int act = variant == 0 ? CNN_ACT_NONE : variant == 1 ? CNN_ACT_RELU6 : variant == 2 ? CNN_ACT_RELU_N1_TO_1 : CNN_ACT_RELU;
            const int with_sum = variant >= 2, with_bias = variant != 3;
            const ac_cnn_sum sum = {add, variant == 2 ? CNN_ACT_RELU : CNN_ACT_NONE};
            for (int r = 0; r < m; r++)
                for (int c = 0; c < n; c++) {
                    float acc = with_bias ? bias[c] : 0.0f;
                    for (int p = 0; p < k; p++) acc = fmaf(a[(size_t)r * k + p], w[(size_t)c * k + p], acc);
                    acc = clamp_act(acc, act);
                    want[(size_t)r * n + c] = with_sum ? clamp_act(acc + add[(size_t)r * n + c], sum.act) : acc;
                }
            for (int threads = 1; threads <= 3 && !bad; threads++) {
                ac_pool *pool = ac_pool_create(threads);
                memset(got, 0, (size_t)m * n * sizeof *got);
                const ac_cnn_weights wt = {w, packed, NULL, NULL};
                ac_cnn_gemm(m, n, k, a, &wt, with_bias ? bias : NULL, act, got, with_sum ? &sum : NULL, pool);
                ac_pool_free(pool);
                for (size_t i = 0; i < (size_t)m * n && !bad; i++) {
#if defined(AC_CNN_OWN_GEMM)
                    const int same = memcmp(&got[i], &want[i], sizeof *got) == 0;
#else /* OpenBLAS sums in its own order */
                    const int same = fabsf(got[i] - want[i]) <= 1e-4f * (1.0f + fabsf(want[i]));
#endif
                    if (!same) {
                        printf("  %d x %d x %d, variant %d, %d threads: element %zu is %.9g, the fmaf chain gives %.9g\n", m, n,
                               k, variant, threads, i, got[i], want[i]);
                        bad = 1;
                    }
                }
            }
        }
        free(a), free(w), free(bias), free(add), free(want), free(got), free(packed);
    }
    CHECK(!bad);
}

/* ---- whole networks ---- */

/* PyTorch's bilinear resize (align_corners=False, no antialias), in float: the reference's own. */
static void torch_resize(const ac_image *img, int size, float mean, float scale, float *out) {
    float sy = (float)img->h / size, sx = (float)img->w / size;
    for (int y = 0; y < size; y++) {
        float fy = fmaxf((y + 0.5f) * sy - 0.5f, 0.0f);
        int y0 = (int)fy, y1 = y0 + 1 < img->h ? y0 + 1 : img->h - 1;
        float ly = fy - y0;
        for (int x = 0; x < size; x++) {
            float fx = fmaxf((x + 0.5f) * sx - 0.5f, 0.0f);
            int x0 = (int)fx, x1 = x0 + 1 < img->w ? x0 + 1 : img->w - 1;
            float lx = fx - x0;
            for (int c = 0; c < 3; c++) {
                const uint8_t *p = img->px;
                float v00 = p[((size_t)y0 * img->w + x0) * 3 + c], v01 = p[((size_t)y0 * img->w + x1) * 3 + c];
                float v10 = p[((size_t)y1 * img->w + x0) * 3 + c], v11 = p[((size_t)y1 * img->w + x1) * 3 + c];
                float v = (1 - ly) * ((1 - lx) * v00 + lx * v01) + ly * ((1 - lx) * v10 + lx * v11);
                out[((size_t)y * size + x) * 3 + c] = (v - mean) * scale;
            }
        }
    }
}

static const char *models[] = {"mobilenet_v2_1.0_224_quant", "tf2_mobilenet_v2_1.0_224_ptq",
                               "mobilenet_v1_0.25_128_quant", "mobilenet_v1_0.5_160_quant"};
#define SAMPLES 8960

static void check_photo(const char *photo) {
    char rel[256], ref[256];
    snprintf(rel, sizeof rel, "images/%s.bmp", photo);
    snprintf(ref, sizeof ref, FIX "ref_%s.bin", photo);
    const char *img_path = test_shared(rel);
    if (!img_path) SKIP("needs ../shared/%s", rel);
    size_t nref;
    float *r = read_floats(ref, &nref);
    CHECKF(r && nref == 4 * 10 + 2 * (1280 + SAMPLES), "%s: bad fixture", ref);
    ac_image img;
    ac_err err;
    CHECKF(ac_image_load(img_path, &img, &err) == 0, "%s", err.msg);
    float *x = malloc(448 * 448 * 3 * sizeof *x), *y = malloc(14 * 14 * 1280 * sizeof *y);
    const float *rp = r;
    for (int k = 0; k < 4; k++, rp += 10) {
        char rel2[256];
        snprintf(rel2, sizeof rel2, "encoders/%s.tflite", models[k]);
        const char *mp = test_shared(rel2);
        if (!mp) continue;
        ac_tfl_model *m;
        ac_cnn *c;
        CHECKF(ac_tfl_load(mp, &m, &err) == 0, "%s", err.msg);
        CHECKF(ac_cnn_create(m, NULL, 0, 0, 2, &c, &err) == 0, "%s", err.msg);
        int size = m->tensors[m->inputs[0]].shape[1];
        ac_input_norm nrm = ac_tfl_input_norm(m);
        torch_resize(&img, size, nrm.mean, nrm.scale, x);
        CHECKF(ac_cnn_run(c, x, y, &err) == 0, "%s", err.msg);
        int best = 0;
        for (int i = 1; i < 1001; i++)
            if (y[i] > y[best]) best = i;
        CHECKF(best == (int)rp[0], "%s %s: top-1 %d, reference %d", photo, models[k], best, (int)rp[0]);
        for (int j = 0; j < 5; j++)
            CHECKF(fabs(y[(int)rp[j]] - rp[5 + j]) <= 1e-3, "%s %s: class %d prob %.5f, reference %.5f", photo,
                   models[k], (int)rp[j], y[(int)rp[j]], rp[5 + j]);
        printf("  %s %s: top-1 %d p=%.4f (ref %.4f)\n", photo, models[k], best, y[best], rp[5]);
        ac_cnn_free(c);
        ac_tfl_free(m);
    }
    const char *mp = test_shared("encoders/mobilenet_v2_1.0_224_quant.tflite");
    if (mp) {
        for (int s = 0; s < 2; s++) {
            int size = s ? 448 : 224;
            ac_encoder enc;
            CHECKF(ac_encoder_open(mp, NULL, size, 2, &enc, &err) == 0, "%s", err.msg);
            CHECK(!strcmp(enc.layer, "MobilenetV2/Conv_1/Relu6"));
            CHECK(enc.grid_h == size / 32 && enc.grid_w == size / 32 && enc.dim == 1280);
            torch_resize(&img, size, enc.norm.mean, enc.norm.scale, x);
            CHECKF(ac_cnn_run(enc.cnn, x, y, &err) == 0, "%s", err.msg);
            size_t L = (size_t)enc.grid_h * enc.grid_w, n = L * 1280, stride = n / SAMPLES;
            float mean[1280] = {0}, samp[SAMPLES];
            for (size_t i = 0; i < n; i++) mean[i % 1280] += y[i] / (float)L;
            for (size_t i = 0; i < SAMPLES; i++) samp[i] = y[i * stride];
            const float *rm = r + 40 + (size_t)s * (1280 + SAMPLES), *rs = rm + 1280;
            double c1 = cosine(mean, rm, 1280), c2 = cosine(samp, rs, SAMPLES);
            printf("  %s Conv_1 at %d: cosine of mean %.7f, of %d sampled values %.7f\n", photo, size, c1, SAMPLES, c2);
            ac_encoder_close(&enc);
            CHECKF(c1 >= 0.9999 && c2 >= 0.9999, "%s at %d: cosine %.6f / %.6f", photo, size, c1, c2);
        }
    }
    free(x);
    free(y);
    free(r);
    ac_image_free(&img);
}

static void test_grace_hopper(void) { check_photo("grace_hopper"); }
static void test_cat(void) { check_photo("cat"); }

/* MobileNetV1 has no expansion convs: each pointwise conv both ends one fused group (as the
 * projection after a depthwise conv) and feeds the next depthwise conv. From 384 on its early layers
 * are large enough to fuse, and the planner once let a group's projection head a second group, so the
 * first group never ran (a NULL input, SIGSEGV in the product). Grids against PyTorch, 1 and 2
 * threads: every sampled value within 1e-4 of the largest reference value, the means' cosine 0.99999. */
static void test_v1_sizes(void) {
    const char *mp = test_shared("encoders/mobilenet_v1_0.25_128_quant.tflite");
    const char *img_path = test_shared("images/grace_hopper.bmp");
    if (!mp || !img_path) SKIP("needs ../shared/encoders/mobilenet_v1_0.25_128_quant.tflite and images/grace_hopper.bmp");
    size_t nref;
    float *r = read_floats(FIX "ref_v1_sizes.bin", &nref);
    CHECKF(r && nref >= 1, FIX "ref_v1_sizes.bin: cannot read");
    enum { DIM = 256, V1_SAMPLES = 2048 };
    int nsizes = (int)r[0];
    CHECKF(nref == 1 + (size_t)nsizes * (3 + DIM + V1_SAMPLES), FIX "ref_v1_sizes.bin: bad size");
    ac_image img;
    ac_err err;
    CHECKF(ac_image_load(img_path, &img, &err) == 0, "%s", err.msg);
    const float *rp = r + 1;
    int bad = 0;
    for (int k = 0; k < nsizes && !bad; k++, rp += 3 + DIM + V1_SAMPLES) {
        int size = (int)rp[0], gh = (int)rp[1], gw = (int)rp[2];
        const float *rmean = rp + 3, *rsamp = rmean + DIM;
        float *x = malloc((size_t)size * size * 3 * sizeof *x), *y = malloc((size_t)gh * gw * DIM * sizeof *y);
        for (int threads = 1; threads <= 2 && !bad; threads++) {
            ac_encoder enc;
            if (ac_encoder_open(mp, NULL, size, threads, &enc, &err) < 0) {
                printf("  v1 at %d: %s\n", size, err.msg);
                bad = 1;
                break;
            }
            if (enc.grid_h != gh || enc.grid_w != gw || enc.dim != DIM) {
                printf("  v1 at %d: grid %dx%dx%d, reference %dx%dx%d\n", size, enc.grid_h, enc.grid_w, enc.dim, gh, gw, DIM);
                bad = 1;
            }
            torch_resize(&img, size, enc.norm.mean, enc.norm.scale, x);
            if (!bad && ac_cnn_run(enc.cnn, x, y, &err) < 0) printf("  v1 at %d: %s\n", size, err.msg), bad = 1;
            ac_encoder_close(&enc);
            if (bad) break;
            size_t L = (size_t)gh * gw, n = L * DIM, stride = n / V1_SAMPLES;
            float mean[DIM] = {0};
            for (size_t i = 0; i < n; i++) mean[i % DIM] += y[i] / (float)L;
            double maxref = 0, maxerr = 0;
            for (size_t i = 0; i < V1_SAMPLES; i++) {
                maxref = fmax(maxref, fabs(rsamp[i]));
                maxerr = fmax(maxerr, fabs((double)y[i * stride] - rsamp[i]));
            }
            double c = cosine(mean, rmean, DIM);
            printf("  v1 at %d, %d thread%s: grid %dx%d, max abs error %.2g of max %.3g, cosine of means %.8f\n", size,
                   threads, threads > 1 ? "s" : "", gh, gw, maxerr, maxref, c);
            if (!(maxerr <= 1e-4 * maxref) || !(c >= 0.99999)) bad = 1;
        }
        free(x);
        free(y);
    }
    free(r);
    ac_image_free(&img);
    CHECKF(!bad, "MobileNetV1 0.25 differs from PyTorch (see above)");
}

/* Same bits with 1, 2 and 3 threads (no reduction order depends on the split: the pool cuts each
 * product, depthwise conv, sum and fused group differently for each count), at a size the model was
 * not built for and at the encoder's sizes, where at 448 the fused groups get their own chunk counts. */
static void test_threads_deterministic(void) {
    const char *mp = test_shared("encoders/mobilenet_v2_1.0_224_quant.tflite");
    if (!mp) SKIP("needs ../shared/encoders/mobilenet_v2_1.0_224_quant.tflite");
    ac_err err;
    ac_tfl_model *m;
    CHECKF(ac_tfl_load(mp, &m, &err) == 0, "%s", err.msg);
    const int sizes[3] = {160, 224, 448};
    for (int k = 0; k < 3; k++) {
        int size = sizes[k];
        float *x = malloc((size_t)size * size * 3 * sizeof *x), *y[3];
        for (int i = 0; i < size * size * 3; i++) x[i] = (float)(((long)i * 7919) % 255) / 127.5f - 1.0f;
        size_t n = 0;
        for (int t = 0; t < 3; t++) {
            ac_cnn *c;
            CHECKF(ac_cnn_create(m, "MobilenetV2/Conv_1/Relu6;MobilenetV2/Conv_1/add_fold;MobilenetV2/Conv_1/Conv2D_Fold;"
                                    "MobilenetV2/Conv_1/BatchNorm_Fold/bias", size, size, t + 1, &c, &err) == 0, "%s", err.msg);
            int h, w, ch;
            ac_cnn_output_shape(c, &h, &w, &ch);
            CHECK(h == (size + 31) / 32 && w == (size + 31) / 32 && ch == 1280);
            n = (size_t)h * w * ch;
            y[t] = malloc(n * sizeof(float));
            CHECKF(ac_cnn_run(c, x, y[t], &err) == 0, "%s", err.msg);
            ac_cnn_free(c);
        }
        CHECKF(memcmp(y[0], y[1], n * sizeof(float)) == 0, "size %d: 1 and 2 threads differ", size);
        CHECKF(memcmp(y[0], y[2], n * sizeof(float)) == 0, "size %d: 1 and 3 threads differ", size);
        for (int t = 0; t < 3; t++) free(y[t]);
        free(x);
    }
    ac_tfl_free(m);
}

/* Layer names: the short (first ';' part) name, a stride-16 layer, the default of a TF2 model, errors. */
static void test_encoder_layers(void) {
    const char *mp = test_shared("encoders/mobilenet_v2_1.0_224_quant.tflite");
    const char *tf2 = test_shared("encoders/tf2_mobilenet_v2_1.0_224_ptq.tflite");
    if (!mp || !tf2) SKIP("needs ../shared/encoders/mobilenet_v2_1.0_224_quant.tflite and tf2_mobilenet_v2_1.0_224_ptq.tflite");
    ac_encoder enc;
    ac_err err;
    CHECKF(ac_encoder_open(mp, "MobilenetV2/expanded_conv_13/expand/Relu6", 224, 1, &enc, &err) == 0, "%s", err.msg);
    CHECK(enc.grid_h == 14 && enc.grid_w == 14 && enc.dim == 576 && enc.size == 224);
    CHECK(!strcmp(enc.layer, "MobilenetV2/expanded_conv_13/expand/Relu6"));
    CHECK(fabs(enc.norm.mean - 128.0f) < 1e-6 && fabs(enc.norm.scale - 0.0078125f) < 1e-9);
    CHECK(strlen(enc.sha256) == 64);
    ac_encoder_close(&enc);
    CHECKF(ac_encoder_open(tf2, NULL, 0, 1, &enc, &err) == 0, "%s", err.msg);
    CHECK(enc.grid_h == 7 && enc.dim == 1280 && enc.size == 224);
    CHECKF(!strcmp(enc.layer, "MobileNetV2/Conv2d_18_1/relu6/Relu6"), "default layer of the TF2 model: %s", enc.layer);
    ac_encoder_close(&enc);
    CHECK(ac_encoder_open(mp, "no/such/layer", 224, 1, &enc, &err) < 0 && strstr(err.msg, "no/such/layer") && strstr(err.msg, mp));
    CHECK(ac_encoder_open(mp, NULL, 100000, 1, &enc, &err) < 0 && strstr(err.msg, "100000"));
    CHECK(ac_encoder_open("/nonexistent.tflite", NULL, 224, 1, &enc, &err) < 0 && strstr(err.msg, "/nonexistent.tflite"));
    /* the classifier head cannot run at another size: a clear error, not a crash */
    ac_tfl_model *m;
    ac_cnn *c;
    CHECKF(ac_tfl_load(mp, &m, &err) == 0, "%s", err.msg);
    CHECK(ac_cnn_create(m, NULL, 320, 320, 1, &c, &err) < 0 && strstr(err.msg, "RESHAPE"));
    ac_tfl_free(m);
}

int main(void) {
    RUN(test_ops);
    RUN(test_gemm_chain);
    RUN(test_grace_hopper);
    RUN(test_cat);
    RUN(test_v1_sizes);
    RUN(test_threads_deterministic);
    RUN(test_encoder_layers);
    return TEST_EXIT();
}
