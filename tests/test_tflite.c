/* test_tflite.c: the TFLite reader on valid, hostile, truncated and mutated files. A bad file must give
 * one error naming the file and the problem, never a crash (this binary also runs under ASan/UBSan).
 * Fixtures: tests/fixtures/cnn/{op,bad}_*.tflite, written by tools/torch_ops.py. The fuzzer's
 * reproducers (fuzz/crashes/tflite) are replayed by test_fuzz_regress. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/cnn.h"
#include "attncap/tflite.h"
#include "test.h"

#define FIX "tests/fixtures/cnn/"

static char *slurp(const char *path, size_t *len) {
    char *d;
    ac_err err;
    return ac_read_file(path, 1u << 30, &d, len, &err) < 0 ? NULL : d;
}

static void test_valid_small(void) {
    ac_err err;
    ac_tfl_model *m;
    CHECKF(ac_tfl_load(FIX "op_quantized_weights.tflite", &m, &err) == 0, "%s", err.msg);
    CHECK(m->n_inputs == 1 && m->n_outputs == 1 && m->n_ops == 3);
    const ac_tfl_tensor *in = &m->tensors[m->inputs[0]];
    CHECK(in->ndim == 4 && in->shape[1] == 6 && in->shape[3] == 4 && in->type == 0 && !in->data);
    CHECK(!strcmp(m->ops[0].opname, "CONV_2D") && !strcmp(m->ops[1].opname, "DEPTHWISE_CONV_2D"));
    CHECK(m->ops[1].stride_h == 2 && m->ops[1].padding == 0 && m->ops[0].activation == 3);
    const ac_tfl_tensor *w = &m->tensors[m->ops[0].inputs[1]];
    CHECK(w->type == 3 && w->n_quant == 1 && w->zero_point[0] == 120 && w->data);
    const ac_tfl_tensor *w2 = &m->tensors[m->ops[1].inputs[1]];
    CHECK(w2->type == 9 && w2->n_quant == 5 && w2->quant_dim == 3 && w2->data);
    CHECK(m->tensors[m->ops[2].inputs[1]].type == 1); /* float16 */
    CHECK(ac_tfl_find_tensor(m, "input") == m->inputs[0] && ac_tfl_find_tensor(m, "nope") == -1);
    ac_tfl_free(m);
}

static void test_bad_cases(void) {
    size_t len;
    char *list = slurp(FIX "bad_cases.txt", &len);
    if (!list) SKIP("no " FIX "bad_cases.txt");
    int n = 0;
    for (char *line = strtok(list, "\n"); line; line = strtok(NULL, "\n")) {
        char *stage = strchr(line, '\t');
        CHECK(stage);
        *stage++ = 0;
        char *want = strchr(stage, '\t');
        CHECK(want);
        *want++ = 0;
        char path[512];
        snprintf(path, sizeof path, FIX "bad_%s.tflite", line);
        ac_err err = {0};
        ac_tfl_model *m;
        int rc = ac_tfl_load(path, &m, &err);
        if (!strcmp(stage, "plan")) {
            CHECKF(rc == 0, "%s: %s", path, err.msg);
            ac_cnn *c;
            rc = ac_cnn_create(m, NULL, 0, 0, 1, &c, &err);
            ac_tfl_free(m);
        }
        CHECKF(rc < 0, "%s: accepted", path);
        CHECKF(strstr(err.msg, want) && strstr(err.msg, path), "%s: message '%s' lacks '%s' or the path", path, err.msg, want);
        CHECKF(!strchr(err.msg, '\n'), "%s: multi-line message", path);
        n++;
    }
    free(list);
    CHECK(n >= 10);
}

static void test_not_tflite(void) {
    ac_err err;
    ac_tfl_model *m;
    CHECK(ac_tfl_load("/nonexistent/model.tflite", &m, &err) < 0 && strstr(err.msg, "/nonexistent/model.tflite"));
    CHECK(ac_tfl_load(FIX, &m, &err) < 0 && strstr(err.msg, "directory"));
    CHECK(ac_tfl_load_mem("", 0, "empty.tflite", &m, &err) < 0 && strstr(err.msg, "empty.tflite"));
    char junk[64] = "0123456789abcdefghijklmnopqrstuvwxyz";
    CHECK(ac_tfl_load_mem(junk, sizeof junk, "junk", &m, &err) < 0 && strstr(err.msg, "TFL3"));
    /* right identifier, root offset past the end */
    uint8_t b[16] = {0xf0, 0xff, 0xff, 0x7f, 'T', 'F', 'L', '3'};
    CHECK(ac_tfl_load_mem(b, sizeof b, "root", &m, &err) < 0 && strstr(err.msg, "corrupt"));
    /* root table whose vtable offset points before the start */
    uint8_t c[16] = {8, 0, 0, 0, 'T', 'F', 'L', '3', 0x40, 0, 0, 0};
    CHECK(ac_tfl_load_mem(c, sizeof c, "vtable", &m, &err) < 0 && strstr(err.msg, "vtable"));
}

static int bad_messages;

/* Loads (and, if that works, plans and runs) a possibly broken model: must not crash; a refusal must
 * come with a one-line message naming the file. */
static int try_model(const void *data, size_t len) {
    ac_err err = {0};
    ac_tfl_model *m;
    if (ac_tfl_load_mem(data, len, "mutant", &m, &err) < 0) {
        if (!strstr(err.msg, "mutant") || strchr(err.msg, '\n')) {
            if (bad_messages++ < 3) printf("  bad message: '%s'\n", err.msg);
        }
        return 0;
    }
    ac_cnn *c;
    int ok = 0;
    if (ac_cnn_create(m, NULL, 0, 0, 1, &c, &err) == 0) {
        const ac_tfl_tensor *in = &m->tensors[m->inputs[0]];
        size_t n = (size_t)in->shape[1] * in->shape[2] * in->shape[3];
        int h, w, ch;
        ac_cnn_output_shape(c, &h, &w, &ch);
        float *x = calloc(n + 1, sizeof *x), *y = calloc((size_t)h * w * ch + 1, sizeof *y);
        if (x && y) ac_cnn_run(c, x, y, &err);
        free(x);
        free(y);
        ac_cnn_free(c);
        ok = 1;
    }
    ac_tfl_free(m);
    return ok;
}

static uint64_t rng = 88172645463325252ull;
static uint32_t next_rand(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static void test_truncated_and_mutated_small(void) {
    setenv("ATTNCAP_MAX_TENSOR_ELEMS", "4000000", 1); /* a mutated shape may not ask for gigabytes */
    const char *files[] = {FIX "op_quantized_weights.tflite", FIX "op_head_fc_softmax.tflite", FIX "op_concat_axis3.tflite",
                           FIX "op_mean_keep0.tflite", FIX "op_pad_conv.tflite"};
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        size_t len;
        char *d = slurp(files[f], &len);
        CHECKF(d, "%s missing", files[f]);
        for (size_t l = 0; l < len; l++) { /* every truncation */
            char *t = malloc(l + 1);
            memcpy(t, d, l);
            try_model(t, l);
            free(t);
        }
        char *mu = malloc(len);
        for (int k = 0; k < 1500; k++) {
            memcpy(mu, d, len);
            int nb = 1 + next_rand() % 4;
            for (int j = 0; j < nb; j++) {
                size_t at = next_rand() % len;
                uint32_t r = next_rand();
                mu[at] = (char)(r & 3 ? r >> 8 : (r & 4 ? 0xff : 0x80)); /* random, or extremes */
            }
            try_model(mu, len);
        }
        free(mu);
        free(d);
    }
    unsetenv("ATTNCAP_MAX_TENSOR_ELEMS");
    CHECK(bad_messages == 0);
}

static void test_truncated_and_mutated_real(void) {
    const char *p = test_shared("encoders/mobilenet_v1_0.25_128_quant.tflite");
    if (!p) SKIP("needs ../shared/encoders/mobilenet_v1_0.25_128_quant.tflite");
    setenv("ATTNCAP_MAX_TENSOR_ELEMS", "4000000", 1);
    size_t len;
    char *d = slurp(p, &len);
    CHECK(d);
    CHECK(try_model(d, len) == 1);
    /* (the last ~4% of this file is not referenced by the model: cutting it is harmless) */
    for (int k = 0; k < 60; k++) {
        size_t l = k < 30 ? (size_t)k * 7 : next_rand() % (len * 9 / 10);
        CHECKF(try_model(d, l) == 0, "truncated to %zu of %zu bytes: accepted", l, len);
    }
    char *mu = malloc(len);
    for (int k = 0; k < 60; k++) {
        memcpy(mu, d, len);
        /* the tables and vectors (not the weights) sit at the start and the end of the file */
        size_t at = k % 2 ? next_rand() % 4096 : len - 1 - next_rand() % 8192;
        mu[at] = (char)next_rand();
        mu[(at + 1) % len] = (char)next_rand();
        try_model(mu, len);
    }
    free(mu);
    free(d);
    unsetenv("ATTNCAP_MAX_TENSOR_ELEMS");
}

int main(void) {
    RUN(test_valid_small);
    RUN(test_bad_cases);
    RUN(test_not_tflite);
    RUN(test_truncated_and_mutated_small);
    RUN(test_truncated_and_mutated_real);
    return TEST_EXIT();
}
