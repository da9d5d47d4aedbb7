/* config.object_init as the captioner sets it up: a photo prepared from its detected regions
 * (ac_name_task_prepare, what every caption search starts from) starts the LSTM at
 *   h_0 = tanh(b + mean(a) W_init_h + sum_c o_c U_h[c]),  o_c = the best score of category c's regions
 * (and c_0 likewise), computed here in double from the tensors (decoder.h), so a path that dropped the
 * scores (every region 1) or a category's second region (the best is 0.8, not 0.3) would fail. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/decoder.h"
#include "attncap/naming.h"
#include "test.h"

enum { V = 11, E = 5, H = 6, D = 7, GH = 2, GW = 2, R = 3 };

static void test_initial_state_from_regions(void) {
    ac_decoder_config c = {.vocab = V, .embed = E, .hidden = H, .att = 4, .dim = D, .n_ann = GH * GW + R,
                           .grid_h = GH, .grid_w = GW, .regions = R, .copy = 2, .region_scale = 60, .object_init = 1};
    ac_decoder dec;
    ac_err err;
    CHECKF(ac_decoder_init(&dec, &c, 4, &err) == 0, "%s", err.msg);
    CHECK(dec.obj_h && dec.obj_c);
    for (int k = 0; k < AC_COPY_CATEGORIES * H; k++) /* zero at initialisation: make them count */
        dec.obj_h[k] = 0.9f * (float)sin(0.37 * k + 1), dec.obj_c[k] = 0.9f * (float)cos(0.53 * k);
    float ann[(GH * GW + R) * D];
    fill_ann(ann, (GH * GW + R) * D, 8);
    const ac_region regions[R] = {{0, 0, 0.5f, 0.5f, 0.8f, 2}, {0.5f, 0.5f, 1, 1, 0.3f, 2}, {0, 0.5f, 1, 1, 0.5f, 9}};
    ac_name_task task = {.ann = ann, .n_regions = R, .regions = regions};
    ac_dec_image *img = ac_name_task_prepare(&dec, &task, &err);
    CHECKF(img, "%s", err.msg);
    float h[H], cs[H];
    ac_decoder_initial_state(&dec, img, h, cs);
    const double o[AC_COPY_CATEGORIES] = {[2] = 0.8, [9] = 0.5};
    const int n = GH * GW + R;
    double worst = 0;
    for (int j = 0; j < H; j++) {
        double ph = dec.init_h_b[j], pc = dec.init_c_b[j];
        for (int d = 0; d < D; d++) {
            double m = 0;
            for (int l = 0; l < n; l++) m += ann[l * D + d];
            ph += m / n * dec.init_h_w[d * H + j], pc += m / n * dec.init_c_w[d * H + j];
        }
        for (int k = 0; k < AC_COPY_CATEGORIES; k++)
            ph += o[k] * dec.obj_h[k * H + j], pc += o[k] * dec.obj_c[k * H + j];
        worst = fmax(worst, fmax(fabs(tanh(ph) - h[j]), fabs(tanh(pc) - cs[j])));
    }
    CHECKF(worst < 1e-5, "h_0, c_0 off by %.3g from the formula", worst);
    /* the objects count: the same photo without its regions' categories starts elsewhere */
    ac_name_task plain = {.ann = ann, .n_regions = R};
    ac_dec_image *img2 = ac_name_task_prepare(&dec, &plain, &err);
    float h2[H], c2[H];
    CHECK(img2);
    ac_decoder_initial_state(&dec, img2, h2, c2);
    CHECK(memcmp(h, h2, sizeof h) != 0);
    ac_dec_image_free(img2);
    ac_dec_image_free(img);
    ac_decoder_free(&dec);
}

int main(void) {
    RUN(test_initial_state_from_regions);
    return TEST_EXIT();
}
