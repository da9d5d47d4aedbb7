/* test_encoder_id: the encoder identity's one owner (encoder_id.c): the JSON it writes, byte for byte
 * as feature caches have stored it (hand-written here), read back; what counts as the same encoder;
 * and the resize policy it records deciding how ac_encoder_prepare squashes a photo (against pixels
 * computed by hand). */
#include <stdlib.h>
#include <string.h>

#include "attncap/encoder.h"
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

int main(void) {
    RUN(written_as_caches_store_it);
    RUN(same_encoder);
    RUN(policy_decides_the_squash);
    return TEST_EXIT();
}
