/* test_encoder_id: the encoder identity's one owner (encoder_id.c): the JSON it writes, byte for byte
 * as feature caches have stored it (hand-written here), read back; what counts as the same encoder;
 * and the resize policy it records deciding how ac_encoder_prepare, and feature extraction, squash a
 * photo (against pixels computed by hand). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/encoder.h"
#include "attncap/features.h"
#include "attncap/png.h"
#include "test.h"

static ac_encoder fake_encoder(void) {
    static char path[] = "/some/dir/mobilenet_v2_1.0_224_quant.tflite", layer[] = "MobilenetV2/Conv_1/Relu6";
    ac_encoder e;
    memset(&e, 0, sizeof e);
    e.path = path, e.layer = layer, e.size = 448, e.grid_h = 14, e.grid_w = 14, e.dim = 1280;
    e.norm.mean = 128, e.norm.scale = 0.0078125f;
    strcpy(e.sha256, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    return e;
}

static void written_as_caches_store_it(void) {
    ac_encoder e = fake_encoder();
    char *j = ac_encoder_id_json(&e);
    const char *want = "{\"file\":\"mobilenet_v2_1.0_224_quant.tflite\",\"sha256\":\"0123456789abcdef0123456789abcdef"
                       "0123456789abcdef0123456789abcdef\",\"layer\":\"MobilenetV2/Conv_1/Relu6\",\"size\":448,"
                       "\"grid_h\":14,\"grid_w\":14,\"dim\":1280,\"norm_mean\":128,\"norm_scale\":0.0078125,"
                       "\"resize\":\"squash, antialiased bilinear\"}";
    CHECKF(j && !strcmp(j, want), "%s", j ? j : "(null)");
    ac_encoder_id id, back;
    ac_err err;
    CHECK(ac_encoder_id_parse(j, "x", &id, &err) == 0 && id.policy == AC_RESIZE_ANTIALIASED && id.size == 448 &&
          id.has_norm && id.norm_mean == 128 && !strcmp(id.layer, e.layer));
    free(j);
    e.resize = AC_RESIZE_BILINEAR;
    j = ac_encoder_id_json(&e);
    CHECK(j && strstr(j, "\"resize\":\"bilinear\"") && ac_encoder_id_parse(j, "x", &back, &err) == 0 &&
          back.policy == AC_RESIZE_BILINEAR);
    free(j);
    CHECK(ac_encoder_id_same(&id, &back)); /* the policy is how photos are prepared, not what encodes them */
    char d[256];
    ac_encoder_id_describe(&id, d, sizeof d);
    CHECKF(!strcmp(d, "sha256 0123456789ab, layer MobilenetV2/Conv_1/Relu6, size 448"), "%s", d);
}

static void same_encoder(void) {
    ac_encoder_id a, b;
    ac_err err;
    const char *base = "{\"file\":\"a.tflite\",\"sha256\":\"aa\",\"layer\":\"L\",\"size\":448,\"grid_h\":14,\"grid_w\":14,\"dim\":8}";
    CHECK(ac_encoder_id_parse(base, "a", &a, &err) == 0);
    CHECK(ac_encoder_id_parse("{\"file\":\"renamed.tflite\",\"sha256\":\"aa\",\"layer\":\"L\",\"size\":448,\"grid_h\":14,"
                              "\"grid_w\":14,\"dim\":8}", "b", &b, &err) == 0);
    CHECK(ac_encoder_id_same(&a, &b)); /* the same bytes under another name */
    b.sha256[0] = 'b';
    CHECK(!ac_encoder_id_same(&a, &b));
    CHECK(ac_encoder_id_parse("{\"file\":\"a.tflite\",\"layer\":\"L\",\"size\":448,\"grid_h\":14,\"grid_w\":14,\"dim\":8}",
                              "b", &b, &err) == 0);
    CHECK(ac_encoder_id_same(&a, &b)); /* no hash recorded: by name */
    b.size = 224;
    CHECK(!ac_encoder_id_same(&a, &b));
    b = a, strcpy(b.layer, "M");
    CHECK(!ac_encoder_id_same(&a, &b));
    b = a, b.grid_w = 7;
    CHECK(!ac_encoder_id_same(&a, &b));
}

/* The integer path's features are another input: recorded as "precision": "int8" (float32's identity is
 * written as before, so earlier caches and models keep their bytes), never the same as float's, and the
 * precision "auto" becomes for a model trained on them; a precision this reader does not know is an
 * error, not float. With the shipped encoder: what an open encoder writes in each precision. */
static void int8_features_are_another_input(void) {
    const char *f = "{\"file\":\"a.tflite\",\"sha256\":\"aa\",\"layer\":\"L\",\"size\":448,\"grid_h\":14,\"grid_w\":14,\"dim\":8";
    char j[512];
    ac_encoder_id fl, q, old;
    ac_err err;
    snprintf(j, sizeof j, "%s,\"precision\":\"int8\"}", f);
    CHECK(ac_encoder_id_parse(j, "q", &q, &err) == 0 && q.int8);
    snprintf(j, sizeof j, "%s,\"precision\":\"float32\"}", f);
    CHECK(ac_encoder_id_parse(j, "f", &fl, &err) == 0 && !fl.int8);
    snprintf(j, sizeof j, "%s}", f);
    CHECK(ac_encoder_id_parse(j, "o", &old, &err) == 0 && !old.int8);
    CHECK(ac_encoder_id_same(&fl, &old) && !ac_encoder_id_same(&q, &fl) && !ac_encoder_id_same(&fl, &q));
    CHECK(ac_encoder_id_precision(&q, AC_PRECISION_AUTO) == AC_PRECISION_INT8);
    CHECK(ac_encoder_id_precision(&q, AC_PRECISION_F32) == AC_PRECISION_F32); /* asked for: kept */
    CHECK(ac_encoder_id_precision(&old, AC_PRECISION_AUTO) == AC_PRECISION_AUTO);
    char d[256];
    ac_encoder_id_describe(&q, d, sizeof d);
    CHECKF(strstr(d, ", int8"), "%s", d);
    snprintf(j, sizeof j, "%s,\"precision\":\"int4\"}", f);
    CHECK(ac_encoder_id_parse(j, "model.st", &q, &err) == -1 && strstr(err.msg, "model.st") && strstr(err.msg, "int4"));
    snprintf(j, sizeof j, "%s,\"precision\":8}", f);
    CHECK(ac_encoder_id_parse(j, "model.st", &q, &err) == -1 && strstr(err.msg, "precision"));
    const char *u8 = test_shared("encoders/mobilenet_v2_1.0_224_quant.tflite");
    if (!u8) SKIP("the writer's half needs ../shared/encoders");
    ac_encoder e;
    CHECKF(ac_encoder_open(u8, NULL, 224, 1, &e, &err) == 0, "%s", err.msg);
    char *w = ac_encoder_id_json(&e);
    CHECKF(w && !strstr(w, "precision"), "%s", w ? w : "(null)");
    free(w);
    CHECKF(ac_encoder_set_precision(&e, AC_PRECISION_INT8, &err) == 0, "%s", err.msg);
    w = ac_encoder_id_json(&e);
    CHECKF(w && strstr(w, "\"precision\":\"int8\"") && ac_encoder_id_parse(w, "w", &q, &err) == 0 && q.int8, "%s",
           w ? w : "(null)");
    free(w);
    ac_encoder_close(&e);
}

/* A 4x1 grey ramp 0, 80, 160, 240 squashed to 2x2. Plain bilinear with half-pixel centres samples at
 * x = 0.5 and 2.5: (0+80)/2 = 40 and (160+240)/2 = 200. Antialiased (a triangle filter stretched by
 * the scale 2) weighs pixel centres at distance 0.5 and 1.5 as 3/4 and 1/4: output 0 sees 0, 80
 * (and 160 at 1.5) -> (0*3 + 80*3 + 160*1) / 7 = 57.1, rounding to 57; output 1 mirrors it:
 * (80*1 + 160*3 + 240*3) / 7 = 182.9 -> 183. */
static void policy_decides_the_squash(void) {
    unsigned char px[4 * 3];
    for (int x = 0; x < 4; x++) px[3 * x] = px[3 * x + 1] = px[3 * x + 2] = (unsigned char)(80 * x);
    ac_image ramp = {4, 1, px};
    ac_encoder e = fake_encoder();
    e.size = 2;
    ac_image sq = {0};
    ac_err err;
    e.resize = AC_RESIZE_BILINEAR;
    CHECK(ac_encoder_prepare(&e, &ramp, &sq, &err) == 0 && sq.w == 2 && sq.h == 2);
    if (sq.px) CHECKF(sq.px[0] == 40 && sq.px[3] == 200 && sq.px[6] == 40, "bilinear %d %d", sq.px[0], sq.px[3]);
    ac_image_free(&sq);
    e.resize = AC_RESIZE_ANTIALIASED;
    CHECK(ac_encoder_prepare(&e, &ramp, &sq, &err) == 0);
    if (sq.px) CHECKF(sq.px[0] == 57 && sq.px[3] == 183, "antialiased %d %d", sq.px[0], sq.px[3]);
    ac_image_free(&sq);
}

/* The squashed photo's two top pixels, as the feature cache stores them. */
static int ramp_encode(void *ctx, const ac_image *img, float *out, int *gh, int *gw, ac_err *err) {
    (void)ctx, (void)err, (void)gh, (void)gw;
    out[0] = img->px[0], out[1] = img->px[3];
    return 0;
}

/* Extraction squashes by the policy of the identity it records (the ramp above, through a PNG). */
static void extraction_follows_the_policy(void) {
    const char *t = getenv("ATTNCAP_TEST_TMP");
    char dir[4096], photo[4200], out[4200];
    snprintf(dir, sizeof dir, "%s/encoder_id_XXXXXX", t && *t ? t : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
    unsigned char px[4 * 3];
    for (int x = 0; x < 4; x++) px[3 * x] = px[3 * x + 1] = px[3 * x + 2] = (unsigned char)(80 * x);
    ac_image ramp = {4, 1, px};
    ac_err err;
    snprintf(photo, sizeof photo, "%s/ramp.png", dir);
    CHECKF(ac_png_write(photo, &ramp, &err) == 0, "%s", err.msg);
    const char *ids[2] = {"{\"file\":\"f.tflite\",\"sha256\":\"ab\",\"layer\":\"L\",\"size\":2,\"grid_h\":1,\"grid_w\":1,"
                          "\"dim\":2,\"resize\":\"bilinear\"}",
                          "{\"file\":\"f.tflite\",\"sha256\":\"ab\",\"layer\":\"L\",\"size\":2,\"grid_h\":1,\"grid_w\":1,"
                          "\"dim\":2,\"resize\":\"squash, antialiased bilinear\"}"};
    const float want[2][2] = {{40, 200}, {57, 183}};
    for (int k = 0; k < 2; k++) {
        snprintf(out, sizeof out, "%s/cache%d", dir, k);
        ac_feature_source src = {NULL, ramp_encode, 2, 1, 1, 2, ids[k]};
        ac_features_opts o = {out, 0, 0, 0, NULL, NULL, NULL};
        ac_features_stats st;
        const char *paths[1] = {photo};
        ac_feature_cache fc;
        CHECKF(ac_features_extract(&src, paths, 1, &o, &st, &err) == 0 && st.encoded == 1, "%s", err.msg);
        CHECKF(ac_features_load(out, &fc, &err) == 0, "%s", err.msg);
        float scratch[2];
        const float *row = fc.n == 1 ? ac_features_row(&fc, 0, scratch) : NULL;
        CHECKF(row && row[0] == want[k][0] && row[1] == want[k][1], "policy %d: %g %g", k, row ? row[0] : -1,
               row ? row[1] : -1);
        ac_features_free(&fc);
    }
}

/* AC_RESIZE_ASPECT: recorded and read back as its own policy, not interchangeable with a squashing
 * one of the same file; the input shapes it makes (by hand: 640x480 at 448, stride 32: 448 x 336 ->
 * 10.5 strides, rounded to 11: 352); and refused on a grid that is not square or a size that is not
 * a multiple of it. */
static void aspect_policy(void) {
    ac_encoder e = fake_encoder();
    ac_err err;
    CHECK(ac_encoder_set_resize(&e, AC_RESIZE_ASPECT, &err) == 0 && e.resize == AC_RESIZE_ASPECT);
    CHECK(ac_encoder_stride(&e) == 32);
    char *j = ac_encoder_id_json(&e);
    ac_encoder_id a, sq;
    CHECKF(j && strstr(j, "\"resize\":\"" AC_ENCODER_ASPECT_TEXT "\"") && ac_encoder_id_parse(j, "x", &a, &err) == 0 &&
               a.policy == AC_RESIZE_ASPECT,
           "%s", j ? j : "(null)");
    free(j);
    e.resize = AC_RESIZE_ANTIALIASED;
    j = ac_encoder_id_json(&e);
    CHECK(j && ac_encoder_id_parse(j, "x", &sq, &err) == 0);
    free(j);
    CHECK(!ac_encoder_id_same(&a, &sq) && ac_encoder_id_same(&a, &a));
    char d[256];
    ac_encoder_id_describe(&a, d, sizeof d);
    CHECKF(strstr(d, "aspect kept"), "%s", d);
    const struct { int w, h, ow, oh; } cases[] = {
        {640, 480, 448, 352}, {480, 640, 352, 448}, {640, 427, 448, 288}, {500, 500, 448, 448}, {100, 100, 448, 448},
        {10000, 1, 448, 32},  {1, 10000, 32, 448},  {896, 447, 448, 224}, {300, 200, 448, 288}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        int w, h;
        ac_resize_dims(cases[k].w, cases[k].h, 448, 32, AC_RESIZE_ASPECT, &w, &h);
        CHECKF(w == cases[k].ow && h == cases[k].oh, "%dx%d -> %dx%d", cases[k].w, cases[k].h, w, h);
        ac_resize_dims(cases[k].w, cases[k].h, 448, 32, AC_RESIZE_ANTIALIASED, &w, &h);
        CHECK(w == 448 && h == 448);
    }
    unsigned char px[8 * 2 * 3] = {0};
    ac_image wide = {8, 2, px}, out = {0};
    CHECK(ac_resize_photo(&wide, 16, 4, AC_RESIZE_ASPECT, &out, &err) == 0 && out.w == 16 && out.h == 4);
    ac_image_free(&out);
    e.size = 300, e.grid_h = e.grid_w = 10; /* 300 = 10 x 30: fine */
    CHECK(ac_encoder_set_resize(&e, AC_RESIZE_ASPECT, &err) == 0);
    e.size = 300, e.grid_h = e.grid_w = 7; /* not a multiple */
    CHECK(ac_encoder_set_resize(&e, AC_RESIZE_ASPECT, &err) == -1 && strstr(err.msg, "multiple") && !strchr(err.msg, '\n'));
    e.size = 448, e.grid_h = 14, e.grid_w = 7; /* not square */
    CHECK(ac_encoder_set_resize(&e, AC_RESIZE_ASPECT, &err) == -1 && strstr(err.msg, "square grid"));
    CHECK(ac_encoder_set_resize(&e, (ac_resize)7, &err) == -1 && e.resize != (ac_resize)7);
}

int main(void) {
    RUN(written_as_caches_store_it);
    RUN(aspect_policy);
    RUN(same_encoder);
    RUN(int8_features_are_another_input);
    RUN(policy_decides_the_squash);
    RUN(extraction_follows_the_policy);
    return TEST_EXIT();
}
