/* ac_decoder_fix_attention (decoder.h): the attention experiment, against models that do the same
 * thing by their own weights: "uniform" is an additive model whose score vector w_e is zero (every
 * cell scores the same, so the softmax is uniform); "peak" is the same model in hard-attention mode
 * (its argmax step). Teacher forcing (ac_decoder_attend_grid) over a full and a masked grid. */
#include <math.h>
#include <string.h>

#include "attncap/decoder.h"
#include "test.h"

static ac_decoder_config cfg(int heads) {
    ac_decoder_config c = {.vocab = 11, .embed = 5, .hidden = 6, .att = 4, .dim = 8, .n_ann = 6, .grid_h = 2,
                           .grid_w = 3, .dropout = 0.0f, .lambda = 0.7f, .heads = heads};
    return c;
}

enum { N_WORDS = 4, L = 6 };
static const int WORDS[N_WORDS] = {4, 9, 7, 5};

typedef struct run {
    float alpha[(N_WORDS + 1) * L], wlp[N_WORDS + 1];
} run;

static int attend(const ac_decoder *d, const float *ann, int gh, int gw, run *r) {
    ac_err err;
    double lp;
    return ac_decoder_attend_grid(d, ann, gh, gw, WORDS, N_WORDS, r->alpha, NULL, r->wlp, &lp, &err);
}

static void test_uniform_is_equal_scores(void) {
    const int grids[2][2] = {{2, 3}, {2, 2}}; /* the model's grid, and a photo of 4 of its 6 cells */
    for (int heads = 1; heads <= 2; heads++)
        for (int g = 0; g < 2; g++) {
            ac_decoder_config c = cfg(heads);
            ac_decoder fixed, flat;
            ac_err err;
            CHECK(ac_decoder_init(&fixed, &c, 3, &err) == 0 && ac_decoder_init(&flat, &c, 3, &err) == 0);
            memset(flat.att_we, 0, sizeof(float) * (size_t)c.att); /* every score 0 + the same bias */
            CHECKF(ac_decoder_fix_attention(&fixed, "uniform", &err) == 0, "%s", err.msg);
            float ann[L * 8];
            fill_ann(ann, L * 8, 5);
            run a, b, own;
            const int gh = grids[g][0], gw = grids[g][1], n = gh * gw;
            CHECK(attend(&fixed, ann, gh, gw, &a) == 0 && attend(&flat, ann, gh, gw, &b) == 0);
            for (int k = 0; k <= N_WORDS; k++) {
                CHECK_NEAR(a.wlp[k], b.wlp[k], 1e-5);
                for (int l = 0; l < L; l++) CHECK(a.alpha[k * L + l] == (l < n ? 1.0f / (float)n : 0.0f));
            }
            /* back to the model's own weights: they differ from uniform and change the words' odds */
            CHECK(ac_decoder_fix_attention(&fixed, "model", &err) == 0 && attend(&fixed, ann, gh, gw, &own) == 0);
            double d = 0;
            for (int k = 0; k <= N_WORDS; k++) d += fabs(own.wlp[k] - a.wlp[k]);
            CHECK(d > 1e-4);
            ac_decoder_free(&fixed), ac_decoder_free(&flat);
        }
}

static void test_peak_is_hard_argmax(void) {
    const int grids[2][2] = {{2, 3}, {1, 3}};
    for (int heads = 1; heads <= 2; heads++)
        for (int g = 0; g < 2; g++) {
            ac_decoder_config c = cfg(heads), ch = c;
            ch.attention_mode = AC_ATTENTION_HARD, ch.reinforce = 1, ch.expected = 0.5f;
            ac_decoder soft, hard;
            ac_err err;
            CHECK(ac_decoder_init(&soft, &c, 9, &err) == 0);
            CHECKF(ac_decoder_init(&hard, &ch, 9, &err) == 0, "%s", err.msg);
            memcpy(hard.params, soft.params, sizeof(float) * soft.n_params);
            CHECK(ac_decoder_fix_attention(&soft, "peak", &err) == 0);
            float ann[L * 8];
            fill_ann(ann, L * 8, 11);
            run a, b;
            const int gh = grids[g][0], gw = grids[g][1], n = gh * gw;
            CHECK(attend(&soft, ann, gh, gw, &a) == 0 && attend(&hard, ann, gh, gw, &b) == 0);
            for (int k = 0; k <= N_WORDS; k++) {
                CHECK(a.wlp[k] == b.wlp[k]);
                double sum = 0;
                int hot = 0;
                for (int l = 0; l < L; l++) sum += a.alpha[k * L + l], hot += a.alpha[k * L + l] > 0;
                CHECK_NEAR(sum, 1.0, 1e-6); /* with 2 heads, the mean of two one-hot rows */
                CHECK(hot >= 1 && hot <= heads);
                for (int l = n; l < L; l++) CHECK(a.alpha[k * L + l] == 0);
            }
            ac_decoder_free(&soft), ac_decoder_free(&hard);
        }
}

static void test_refused(void) {
    ac_decoder_config c = cfg(1);
    ac_decoder d;
    ac_err err;
    CHECK(ac_decoder_init(&d, &c, 1, &err) == 0);
    CHECK(ac_decoder_fix_attention(&d, "flat", &err) != 0 && strstr(err.msg, "'flat': model, uniform or peak"));
    CHECK(ac_decoder_fix_attention(&d, NULL, &err) != 0);
    ac_decoder_free(&d);
    ac_decoder_config t = {.vocab = 11, .embed = 8, .hidden = 16, .att = 8, .dim = 8, .n_ann = 6, .grid_h = 2,
                           .grid_w = 3, .heads = 2, .layers = 1, .decoder = AC_DECODER_TRANSFORMER,
                           .attention = AC_ATTENTION_SCALED_DOT};
    CHECKF(ac_decoder_init(&d, &t, 1, &err) == 0, "%s", err.msg);
    CHECK(ac_decoder_fix_attention(&d, "uniform", &err) != 0 && strstr(err.msg, "the model is a transformer"));
    CHECK(ac_decoder_fix_attention(&d, "model", &err) == 0);
    ac_decoder_free(&d);
}

int main(void) {
    RUN(test_uniform_is_equal_scores);
    RUN(test_peak_is_hard_argmax);
    RUN(test_refused);
    return TEST_EXIT();
}
