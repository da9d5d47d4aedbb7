/* test_limits.c: each limit of ac_limits (common.h) is enforced where a hostile file would exhaust
 * the machine, and its error is one line naming the limit's environment variable. Every test sets
 * the variable to a tiny value, checks the refusal, then checks the same input passes with the
 * variable unset (so the refusal is the limit's doing, not some other error). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/cnn.h"
#include "attncap/dataset.h"
#include "attncap/decoder.h"
#include "attncap/model.h"
#include "attncap/image.h"
#include "attncap/safetensors.h"
#include "attncap/tflite.h"
#include "attncap/tokenize.h"
#include "attncap/vocab.h"
#include "test.h"


static const char *tmp(const char *name) {
    static char buf[8][4096];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, 4096, "%s/%s", test_tmpdir(), name);
    return b;
}

static void write_text(const char *path, const char *s) {
    FILE *f = fopen(path, "w");
    fputs(s, f);
    fclose(f);
}

/* The error names var and has no newline. */
#define CHECK_LIMIT_ERR(rc, err, var) \
    CHECKF((rc) != 0 && strstr((err).msg, var) && !strchr((err).msg, '\n'), "rc %d, message: %s", (rc), (err).msg)

static void test_image_pixels(void) {
    ac_image img;
    ac_err err;
    setenv("ATTNCAP_MAX_IMAGE_PIXELS", "20", 1); /* rgb.png is 7x5 */
    int rc = ac_image_load(test_fixture("img/rgb.png"), &img, &err);
    CHECK_LIMIT_ERR(rc, err, "ATTNCAP_MAX_IMAGE_PIXELS");
    if (!rc) ac_image_free(&img);
    unsetenv("ATTNCAP_MAX_IMAGE_PIXELS");
    CHECKF(ac_image_load(test_fixture("img/rgb.png"), &img, &err) == 0, "%s", err.msg);
    ac_image big;
    setenv("ATTNCAP_MAX_IMAGE_PIXELS", "1000", 1);
    rc = ac_image_resize(&img, 100, 100, &big, &err); /* a resize target is capped too */
    CHECK_LIMIT_ERR(rc, err, "ATTNCAP_MAX_IMAGE_PIXELS");
    if (!rc) ac_image_free(&big);
    unsetenv("ATTNCAP_MAX_IMAGE_PIXELS");
    ac_image_free(&img);
}

static void test_file_bytes(void) {
    ac_err err;
    const char *tsv = tmp("caps.tsv");
    write_text(tsv, "a.jpg\tA dog runs on the grass.\nb.jpg\tTwo cats.\n");
    setenv("ATTNCAP_MAX_FILE_BYTES", "16", 1);
    ac_dataset ds;
    int rc = ac_dataset_load(tsv, NULL, &ds, &err);
    CHECK_LIMIT_ERR(rc, err, "ATTNCAP_MAX_FILE_BYTES");
    if (!rc) ac_dataset_free(&ds);
    ac_st_file st;
    rc = ac_st_read(test_fixture("st_python.safetensors"), &st, &err);
    CHECK_LIMIT_ERR(rc, err, "ATTNCAP_MAX_FILE_BYTES");
    if (!rc) ac_st_free(&st);
    ac_tfl_model *m;
    rc = ac_tfl_load(test_fixture("cnn/op_conv1x1.tflite"), &m, &err);
    CHECK_LIMIT_ERR(rc, err, "ATTNCAP_MAX_FILE_BYTES");
    if (!rc) ac_tfl_free(m);
    ac_image img;
    rc = ac_image_load(test_fixture("img/rgb.png"), &img, &err);
    CHECK_LIMIT_ERR(rc, err, "ATTNCAP_MAX_FILE_BYTES");
    if (!rc) ac_image_free(&img);
    unsetenv("ATTNCAP_MAX_FILE_BYTES");
    CHECKF(ac_dataset_load(tsv, NULL, &ds, &err) == 0, "%s", err.msg);
    ac_dataset_free(&ds);
    CHECKF(ac_st_read(test_fixture("st_python.safetensors"), &st, &err) == 0, "%s", err.msg);
    ac_st_free(&st);
    CHECKF(ac_tfl_load(test_fixture("cnn/op_conv1x1.tflite"), &m, &err) == 0, "%s", err.msg);
    ac_tfl_free(m);
}

static ac_model tiny_model(void) {
    ac_model m;
    memset(&m, 0, sizeof m);
    const char *w[] = {"a", "dog", "runs"};
    ac_tokens t = {3, (char **)w};
    ac_err err;
    if (ac_vocab_build(&t, 1, 1, &m.vocab, &err)) abort();
    ac_decoder_config c = {.vocab = ac_vocab_size(m.vocab), .embed = 3, .hidden = 2, .att = 2, .dim = 2, .n_ann = 2,
                           .grid_h = 1, .grid_w = 2, .dropout = 0.5f, .lambda = 1.0f};
    if (ac_decoder_init(&m.dec, &c, 5, &err)) abort();
    m.encoder_json = strdup("{\"file\":\"x.tflite\",\"sha256\":\"ab\",\"layer\":\"L\",\"size\":32,\"grid_h\":1,\"grid_w\":2,\"dim\":2}");
    return m;
}

static void test_tensor_elems(void) {
    ac_err err;
    setenv("ATTNCAP_MAX_TENSOR_ELEMS", "3", 1);
    ac_st_file st;
    int rc = ac_st_read(test_fixture("st_python.safetensors"), &st, &err);
    CHECK_LIMIT_ERR(rc, err, "ATTNCAP_MAX_TENSOR_ELEMS");
    if (!rc) ac_st_free(&st);
    ac_tfl_model *m;
    rc = ac_tfl_load(test_fixture("cnn/op_conv1x1.tflite"), &m, &err);
    CHECK_LIMIT_ERR(rc, err, "ATTNCAP_MAX_TENSOR_ELEMS");
    if (!rc) ac_tfl_free(m);
    unsetenv("ATTNCAP_MAX_TENSOR_ELEMS");
    /* the CNN plan: a 3x3 conv on 7x9x3 needs a 63 x 27 = 1701-float im2col buffer, while no tensor
     * (input 189, filter 135, output 315 elements) is over 1000 */
    CHECKF(ac_tfl_load(test_fixture("cnn/op_conv3x3_s1_same_odd.tflite"), &m, &err) == 0, "%s", err.msg);
    ac_cnn *cnn;
    setenv("ATTNCAP_MAX_TENSOR_ELEMS", "1000", 1);
    rc = ac_cnn_create(m, NULL, 7, 9, 1, &cnn, &err);
    CHECK_LIMIT_ERR(rc, err, "ATTNCAP_MAX_TENSOR_ELEMS");
    CHECKF(rc != 0 && strstr(err.msg, "im2col") && strstr(err.msg, "1000"), "message: %s", err.msg);
    if (!rc) ac_cnn_free(cnn);
    setenv("ATTNCAP_MAX_TENSOR_ELEMS", "300", 1); /* now the 315-element output speaks first */
    rc = ac_cnn_create(m, NULL, 7, 9, 1, &cnn, &err);
    CHECK_LIMIT_ERR(rc, err, "ATTNCAP_MAX_TENSOR_ELEMS");
    if (!rc) ac_cnn_free(cnn);
    unsetenv("ATTNCAP_MAX_TENSOR_ELEMS");
    CHECKF(ac_cnn_create(m, NULL, 7, 9, 1, &cnn, &err) == 0, "%s", err.msg);
    ac_cnn_free(cnn);
    ac_tfl_free(m);
    /* the model file: its parameter count is checked against the limit too */
    ac_model mo = tiny_model(), r;
    CHECKF(ac_model_save(&mo, tmp("m.safetensors"), 0, NULL, &err) == 0, "%s", err.msg);
    setenv("ATTNCAP_MAX_TENSOR_ELEMS", "50", 1);
    rc = ac_model_load(tmp("m.safetensors"), &r, &err);
    CHECK_LIMIT_ERR(rc, err, "ATTNCAP_MAX_TENSOR_ELEMS");
    if (!rc) ac_model_free(&r);
    unsetenv("ATTNCAP_MAX_TENSOR_ELEMS");
    CHECKF(ac_model_load(tmp("m.safetensors"), &r, &err) == 0, "%s", err.msg);
    ac_model_free(&r);
    ac_model_free(&mo);
}

static void test_caption_bytes(void) {
    ac_err err;
    const char *cap = "A dog runs on the grass next to a red ball.";
    const char *tsv = tmp("caps2.tsv");
    write_text(tsv, "a.jpg\tA dog runs on the grass next to a red ball.\n");
    setenv("ATTNCAP_MAX_CAPTION_BYTES", "10", 1);
    ac_tokens t;
    int rc = ac_tokenize(cap, &t, &err);
    CHECK_LIMIT_ERR(rc, err, "ATTNCAP_MAX_CAPTION_BYTES");
    if (!rc) ac_tokens_free(&t);
    ac_dataset ds;
    rc = ac_dataset_load(tsv, NULL, &ds, &err);
    CHECK_LIMIT_ERR(rc, err, "ATTNCAP_MAX_CAPTION_BYTES");
    if (!rc) ac_dataset_free(&ds);
    unsetenv("ATTNCAP_MAX_CAPTION_BYTES");
    CHECKF(ac_tokenize(cap, &t, &err) == 0, "%s", err.msg);
    ac_tokens_free(&t);
    CHECKF(ac_dataset_load(tsv, NULL, &ds, &err) == 0, "%s", err.msg);
    ac_dataset_free(&ds);
}

static void test_vocab(void) {
    ac_err err;
    const char *w[] = {"a", "dog", "runs", "on", "grass"};
    ac_tokens t = {5, (char **)w};
    ac_vocab *v;
    setenv("ATTNCAP_MAX_VOCAB", "6", 1);
    int rc = ac_vocab_build(&t, 1, 1, &v, &err);
    CHECK_LIMIT_ERR(rc, err, "ATTNCAP_MAX_VOCAB");
    if (!rc) ac_vocab_free(v);
    rc = ac_vocab_from_json("[\"<pad>\",\"<start>\",\"<end>\",\"<unk>\",\"a\",\"dog\",\"runs\"]", &v, &err);
    CHECK_LIMIT_ERR(rc, err, "ATTNCAP_MAX_VOCAB");
    if (!rc) ac_vocab_free(v);
    unsetenv("ATTNCAP_MAX_VOCAB");
    ac_model mo = tiny_model(), r; /* 7 words */
    CHECKF(ac_model_save(&mo, tmp("mv.safetensors"), 0, NULL, &err) == 0, "%s", err.msg);
    setenv("ATTNCAP_MAX_VOCAB", "6", 1);
    rc = ac_model_load(tmp("mv.safetensors"), &r, &err);
    CHECK_LIMIT_ERR(rc, err, "ATTNCAP_MAX_VOCAB");
    if (!rc) ac_model_free(&r);
    unsetenv("ATTNCAP_MAX_VOCAB");
    CHECKF(ac_vocab_build(&t, 1, 1, &v, &err) == 0, "%s", err.msg);
    ac_vocab_free(v);
    CHECKF(ac_model_load(tmp("mv.safetensors"), &r, &err) == 0, "%s", err.msg);
    ac_model_free(&r);
    ac_model_free(&mo);
}

int main(void) {
    RUN(test_image_pixels);
    RUN(test_file_bytes);
    RUN(test_tensor_elems);
    RUN(test_caption_bytes);
    RUN(test_vocab);
    return TEST_EXIT();
}
