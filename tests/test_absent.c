/* A copy model's absent priors (decoder.h config.absent; tune.h ac_absent_match): one round's move
 * against its formula worked by hand, ac_decoder_add_absent keeping every weight and, with the priors
 * at 0, every step's bits, the priors lowering exactly their category's words on a photo without a
 * region of it, and ac_model_set_absent's file loading back with them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/decoder.h"
#include "attncap/model.h"
#include "attncap/tune.h"
#include "test.h"

/* log((5.6 + 0.5) / (25 + 0.5)) = log(6.1 / 25.5) = -1.43036 (a calculator's); a category said 40 times
 * where references say it 0.4: log(0.9 / 40.5) = -3.8067, clamped to -2; one the references say more
 * than the captions rises, but never above 0; one neither says keeps its prior. */
static void test_step(void) {
    double refs[AC_COPY_CATEGORIES] = {0}, said[AC_COPY_CATEGORIES] = {0};
    float prior[AC_COPY_CATEGORIES] = {0};
    refs[13] = 5.6, said[13] = 25; /* bench */
    refs[60] = 0.4, said[60] = 40;
    refs[0] = 28.6, said[0] = 26, prior[0] = -0.05f; /* rises by log(29.1 / 26.5) = 0.0936, stops at 0 */
    refs[1] = 3, said[1] = 1, prior[1] = -1.0f;      /* rises by log(3.5 / 1.5) = 0.8473 */
    prior[2] = -0.7f;                                /* neither says it: unchanged */
    ac_absent_step(refs, said, prior);
    CHECK_NEAR(prior[13], -1.43036, 1e-4);
    CHECK_NEAR(prior[60], -2.0, 1e-6);
    CHECK(prior[0] == 0.0f);
    CHECK_NEAR(prior[1], -1.0 + 0.84730, 1e-4);
    CHECK(prior[2] == -0.7f);
    for (int c = 3; c < AC_COPY_CATEGORIES; c++)
        if (c != 13 && c != 60) CHECKF(prior[c] == 0.0f, "category %d moved to %g", c, prior[c]);
}

#define V 11
static const short word_cat[V] = {-1, -1, -1, -1, 2, 2, 5, -1, 5, 9, -1};

/* One step's log-probabilities of a photo with regions of categories 2 and 9 (none of 5). */
static void step(const ac_decoder *dec, const float *ann, float *lp) {
    ac_dec_image *im = ac_decoder_prepare_regions(dec, ann, 2, 2, 2);
    const int cat[2] = {2, 9}, prev = AC_START, one = 1;
    ac_dec_image_set_categories(im, cat, NULL);
    float st[64], st2[64], al[6], scr[512];
    CHECK(ac_decoder_advance_scratch(&dec->cfg, 1, 1) <= 512 && ac_decoder_state_size(&dec->cfg) <= 64);
    const ac_dec_image *imp = im;
    ac_decoder_start(dec, im, st);
    ac_decoder_advance(dec, 1, &imp, &one, 0, &prev, st, NULL, st2, NULL, lp, al, NULL, scr);
    ac_dec_image_free(im);
}

static void test_add_absent_and_priors(void) {
    ac_decoder_config c = {.vocab = V, .embed = 5, .hidden = 6, .att = 4, .dim = 7, .n_ann = 6, .grid_h = 2,
                           .grid_w = 2, .regions = 2, .copy = 2, .region_scale = 60};
    ac_decoder dec, ref;
    ac_err err;
    CHECK(ac_decoder_init(&dec, &c, 9, &err) == 0 && ac_decoder_init(&ref, &c, 9, &err) == 0);
    CHECK(ac_decoder_set_copy_words(&dec, word_cat, &err) == 0 && ac_decoder_set_copy_words(&ref, word_cat, &err) == 0);
    float ann[6 * 7], lp0[V], lp1[V], lp2[V];
    fill_ann(ann, 6 * 7, 3);
    step(&ref, ann, lp0);
    CHECK(ac_decoder_add_absent(&dec, &err) == 0);
    CHECK(dec.cfg.absent == 1 && dec.absent_b && dec.n_params == ref.n_params + AC_COPY_CATEGORIES);
    CHECK(!memcmp(dec.params, ref.params, sizeof(float) * ref.n_params)); /* the other weights, where they were */
    for (int k = 0; k < AC_COPY_CATEGORIES; k++) CHECK(dec.absent_b[k] == 0.0f);
    step(&dec, ann, lp1);
    CHECK(!memcmp(lp0, lp1, sizeof lp0)); /* priors at 0: the same bits */
    /* category 5 (words 6, 8) has no region: a prior of -1.5 divides their odds by e^1.5 against every
     * other word; the present categories' (2: words 4, 5) prior does nothing. The vocabulary's own
     * softmax (the copy's mixture off: config.copy 0, the word sets kept) shows it exactly. */
    dec.absent_b[5] = -1.5f, dec.absent_b[2] = -3.0f;
    dec.cfg.copy = 0, ref.cfg.copy = 0;
    step(&ref, ann, lp0);
    step(&dec, ann, lp2);
    double lse_before = 0, lse_after = 0; /* p(w) = p0(w) e^{b} / Z: Z from the moved words alone */
    for (int w = 0; w < V; w++) lse_before += exp(lp0[w]), lse_after += exp(lp0[w]) * (word_cat[w] == 5 ? exp(-1.5) : 1);
    const double logZ = log(lse_after / lse_before);
    for (int w = 0; w < V; w++) {
        const double want = lp0[w] + (word_cat[w] == 5 ? -1.5 : 0) - logZ;
        CHECKF(fabs(lp2[w] - want) < 2e-5, "word %d: %g, want %g", w, lp2[w], want);
    }
    ac_decoder_free(&dec), ac_decoder_free(&ref);
}

/* A model with tensors after absent_b's place (config.object_init's obj_h, obj_c) keeps each tensor's
 * values under its name: the layout moves them, the weights do not. */
static void test_add_absent_keeps_later_tensors(void) {
    ac_decoder_config c = {.vocab = V, .embed = 5, .hidden = 6, .att = 4, .dim = 7, .n_ann = 6, .grid_h = 2,
                           .grid_w = 2, .regions = 2, .copy = 2, .region_scale = 60, .object_init = 1};
    ac_decoder dec, ref;
    ac_err err;
    CHECK(ac_decoder_init(&dec, &c, 9, &err) == 0 && ac_decoder_init(&ref, &c, 9, &err) == 0);
    for (size_t i = 0; i < ref.n_params; i++) dec.params[i] = ref.params[i] = (float)sin(0.1 * (double)i + 0.3);
    CHECK(ac_decoder_add_absent(&dec, &err) == 0 && dec.absent_b && dec.obj_h && dec.obj_c);
    ac_dec_tensor t[AC_DEC_MAX_TENSORS], r[AC_DEC_MAX_TENSORS];
    const int nt = ac_decoder_tensors(&dec.cfg, t, NULL), nr = ac_decoder_tensors(&ref.cfg, r, NULL);
    CHECK(nt == nr + 1);
    for (int i = 0, j = 0; i < nt; i++) {
        if (!strcmp(t[i].name, "absent_b")) continue;
        CHECKF(j < nr && !strcmp(t[i].name, r[j].name) &&
                   !memcmp(dec.params + t[i].offset, ref.params + r[j].offset, sizeof(float) * t[i].rows * t[i].cols),
               "tensor %s moved or changed", t[i].name);
        j++;
    }
    for (int k = 0; k < AC_COPY_CATEGORIES; k++) CHECK(dec.absent_b[k] == 0.0f);
    ac_decoder_free(&dec), ac_decoder_free(&ref);
}

/* ac_model_set_absent: a copy model's file gets config.absent and absent_b (F16 as its weights), and
 * loads back with them; a model without copy is refused with its file named. */
static void test_set_absent_file(void) {
    ac_model m;
    memset(&m, 0, sizeof m);
    const char *w[] = {"a", "dog", "runs", "on", "grass", "a", "dog"};
    ac_tokens t = {7, (char **)w};
    ac_err err;
    CHECK(ac_vocab_build(&t, 1, 1, &m.vocab, &err) == 0);
    ac_decoder_config c = {.vocab = ac_vocab_size(m.vocab), .embed = 6, .hidden = 5, .att = 4, .dim = 3, .n_ann = 6,
                           .grid_h = 2, .grid_w = 2, .regions = 2, .region_scale = 60, .copy = 2};
    CHECK(ac_decoder_init(&m.dec, &c, 5, &err) == 0);
    m.encoder_json = strdup("{\"file\":\"x.tflite\",\"sha256\":\"ab\",\"layer\":\"L\",\"size\":64,\"grid_h\":2,\"grid_w\":2,\"dim\":3}");
    char path[4096], plain[4096];
    snprintf(path, sizeof path, "%s/absent.st", test_tmpdir());
    snprintf(plain, sizeof plain, "%s/plain.st", test_tmpdir());
    const char *meta[] = {"decode", "{\"beam\":2}", NULL};
    CHECKF(ac_model_save(&m, path, 1, meta, &err) == 0, "%s", err.msg);
    float prior[AC_COPY_CATEGORIES] = {0};
    prior[13] = -1.43f, prior[60] = -2.0f;
    CHECKF(ac_model_set_absent(path, prior, &err) == 0, "%s", err.msg);
    ac_model r;
    CHECKF(ac_model_load(path, &r, &err) == 0, "%s", err.msg);
    CHECK(r.dec.cfg.absent == 1 && r.dec.absent_b && r.decode.beam == 2);
    CHECK(fabsf(r.dec.absent_b[13] + 1.43f) < 1e-3f && r.dec.absent_b[60] == -2.0f && r.dec.absent_b[0] == 0.0f);
    ac_model_free(&r);
    m.dec.cfg.copy = 0, m.dec.cfg.regions = 0, m.dec.cfg.n_ann = 4; /* the same tensors fit a model without regions */
    CHECKF(ac_model_save(&m, plain, 1, NULL, &err) == 0, "%s", err.msg);
    err.msg[0] = 0;
    CHECK(ac_model_set_absent(plain, prior, &err) == -1 && strstr(err.msg, "plain.st") && strstr(err.msg, "copy"));
    ac_model_free(&m);
}

int main(void) {
    RUN(test_step);
    RUN(test_add_absent_and_priors);
    RUN(test_add_absent_keeps_later_tensors);
    RUN(test_set_absent_file);
    return TEST_EXIT();
}
