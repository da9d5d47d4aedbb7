/* test_cnn_q8.c: a float graph's convolutions on integers (AC_PRECISION_INT8 of a float graph, cnn_q8.c).
 *  - each single-conv fixture (tests/fixtures/cnn/op_conv*.tflite: strides, dilation, SAME and VALID
 *    padding, odd sizes, 1x1 to 5x5) against the scheme written out here as plain loops from the
 *    file's float filters: per-channel symmetric filter integers, the input's per-tensor range, the
 *    integer sum of each window over the taps inside the photo, fmaf of it with the two scales plus
 *    the bias, then the activation: the same bits, on every kernel this CPU runs, 1 and 2 threads;
 *  - and within the quantization's error of PyTorch's float output (the fixture's own);
 *  - back to f32 gives float32's bits again. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/cnn.h"
#include "attncap/common.h"
#include "cnn_int8_internal.h"
#include "cnn_plan.h"
#include "test.h"

static const char *const cases[] = {"conv1x1", "conv1x1_s2", "conv2x3_s21_same", "conv3x3_dil2_same", "conv3x3_dil2_valid_s2",
                                    "conv3x3_s1_same_odd", "conv3x3_s2_same_even", "conv3x3_s2_same_odd", "conv3x3_s2_valid",
                                    "conv4x4_s3_same", "conv5x5_s2_same"};

typedef struct fixture {
    float *buf;
    const float *x, *want;
    int in_dims[4];
    size_t n_in, n_out;
} fixture;

/* op_<name>.bin: int32 n_dims, dims..., float input; int32 n_dims, dims..., float expected. */
static int load_fixture(const char *name, fixture *f) {
    char path[512];
    snprintf(path, sizeof path, "cnn/op_%s.bin", name);
    char *data;
    size_t len;
    ac_err err;
    if (ac_read_file(test_fixture(path), 1u << 26, &data, &len, &err) < 0) return -1;
    f->buf = malloc(len + 4);
    memcpy(f->buf, data, len);
    free(data);
    const int32_t *h = (const int32_t *)f->buf;
    int nd = h[0];
    f->n_in = 1;
    for (int d = 0; d < nd; d++) f->in_dims[d] = h[1 + d], f->n_in *= (size_t)h[1 + d];
    f->x = f->buf + 1 + nd;
    const int32_t *ho = (const int32_t *)(f->x + f->n_in);
    f->n_out = 1;
    for (int d = 0; d < ho[0]; d++) f->n_out *= (size_t)ho[1 + d];
    f->want = (const float *)(ho + 1 + ho[0]);
    return 0;
}

/* The scheme of cnn_q8.c, written out. */
static void reference(const ac_conv_geom *g, const float *x, const float *w, const float *bias, float *y) {
    float lo = 0, hi = 0;
    const size_t n_in = (size_t)g->h * g->w * g->c;
    for (size_t i = 0; i < n_in; i++) lo = fminf(lo, x[i]), hi = fmaxf(hi, x[i]);
    const float sx = hi > lo ? (hi - lo) / 255.0f : 1.0f, inv = 1.0f / sx;
    const int32_t zx = (int32_t)fminf(fmaxf(nearbyintf(-lo / sx), 0), 255);
    int32_t *u = malloc(n_in * sizeof *u);
    for (size_t i = 0; i < n_in; i++) u[i] = (int32_t)fminf(fmaxf(nearbyintf(x[i] * inv) + (float)zx, 0), 255);
    const int k = g->kh * g->kw * g->c;
    int32_t *q = malloc((size_t)k * sizeof *q);
    float act_lo, act_hi;
    ac_cnn_act_bounds(g->act, &act_lo, &act_hi);
    for (int o = 0; o < g->oc; o++) {
        float top = 0;
        for (int j = 0; j < k; j++) top = fmaxf(top, fabsf(w[(size_t)o * k + j]));
        const float sw = top > 0 ? top / 127.0f : 1.0f;
        for (int j = 0; j < k; j++) q[j] = (int32_t)fminf(fmaxf(nearbyintf(w[(size_t)o * k + j] / sw), -127), 127);
        for (int oy = 0; oy < g->oh; oy++)
            for (int ox = 0; ox < g->ow; ox++) {
                int64_t acc = 0;
                for (int ky = 0; ky < g->kh; ky++)
                    for (int kx = 0; kx < g->kw; kx++) {
                        const int iy = oy * g->sh - g->pt + ky * g->dh, ix = ox * g->sw - g->pl + kx * g->dw;
                        if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w) continue;
                        for (int ci = 0; ci < g->c; ci++)
                            acc += (int64_t)(u[((size_t)iy * g->w + ix) * g->c + ci] - zx) * q[(ky * g->kw + kx) * g->c + ci];
                    }
                const float v = fmaf((float)acc, sx * sw, bias ? bias[o] : 0.0f);
                y[((size_t)oy * g->ow + ox) * g->oc + o] = fminf(fmaxf(v, act_lo), act_hi);
            }
    }
    free(u), free(q);
}

static void test_fixtures(void) {
    const int best = ac_i8_isa_best();
    int ran = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        fixture f;
        char path[512];
        if (load_fixture(cases[ci], &f) < 0) continue;
        snprintf(path, sizeof path, "cnn/op_%s.tflite", cases[ci]);
        ac_err err = {0};
        ac_tfl_model *m = NULL;
        ac_cnn *c = NULL;
        float *ref = calloc(f.n_out, sizeof *ref), *got = calloc(f.n_out, sizeof *got), *f32 = calloc(f.n_out, sizeof *f32);
        CHECKF(ac_tfl_load(test_fixture(path), &m, &err) == 0, "%s", err.msg);
        CHECKF(m && ac_cnn_create(m, NULL, f.in_dims[1], f.in_dims[2], 1, &c, &err) == 0, "%s", err.msg);
        if (!c) goto next;
        const cnn_step *s = NULL;
        for (int k = 0; k < c->n_steps && !s; k++)
            if (c->steps[k].op->opcode == OP_CONV_2D) s = &c->steps[k];
        CHECKF(s != NULL, "%s: no CONV_2D", cases[ci]);
        if (!s) goto next;
        reference(&s->g, f.x, ac_cnn_in_data(c, s, 1), ac_cnn_in_data(c, s, 2), ref);
        CHECK(ac_cnn_run(c, f.x, f32, &err) == 0);
        for (int isa = AC_I8_ISA_C; isa <= best; isa++)
            for (int threads = 1; threads <= 2 && ac_i8_isa_runs(isa); threads++) {
                ac_cnn *t = NULL;
                ac_i8_set_isa(isa);
                CHECKF(ac_cnn_clone(c, threads, &t, &err) == 0 && ac_cnn_set_precision(t, AC_PRECISION_INT8, &err) == 0 &&
                           ac_cnn_run(t, f.x, got, &err) == 0,
                       "%s: %s", cases[ci], err.msg);
                size_t bad = 0;
                for (size_t i = 0; i < f.n_out; i++) bad += memcmp(&got[i], &ref[i], sizeof *got) != 0;
                CHECKF(!bad, "%s on %s, %d threads: %zu of %zu outputs differ from the scheme written out", cases[ci],
                       ac_i8_isa_name(isa), threads, bad, f.n_out);
                ac_cnn_free(t);
            }
        ac_i8_set_isa(-1);
        double err_max = 0, ref_max = 0; /* and near PyTorch's float32 output */
        for (size_t i = 0; i < f.n_out; i++)
            err_max = fmax(err_max, fabs((double)got[i] - f.want[i])), ref_max = fmax(ref_max, fabs(f.want[i]));
        printf("  %-22s %6zu outputs: max |int8 - float| %.4f of max |float| %.3f\n", cases[ci], f.n_out, err_max, ref_max);
        CHECKF(err_max <= 0.03 * ref_max + 1e-6, "%s: int8 %.4f from float (max |float| %.3f)", cases[ci], err_max, ref_max);
        CHECK(ac_cnn_set_precision(c, AC_PRECISION_INT8, &err) == 0 && ac_cnn_set_precision(c, AC_PRECISION_F32, &err) == 0 &&
              ac_cnn_run(c, f.x, got, &err) == 0 && !memcmp(got, f32, f.n_out * sizeof *got)); /* float32 again */
        ran++;
    next:
        ac_cnn_free(c);
        ac_tfl_free(m);
        free(ref), free(got), free(f32), free(f.buf);
    }
    CHECKF(ran == (int)(sizeof cases / sizeof *cases), "%d of %zu fixtures ran", ran, sizeof cases / sizeof *cases);
}

int main(void) {
    RUN(test_fixtures);
    return TEST_EXIT();
}
