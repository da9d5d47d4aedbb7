/* Captions drawn from the decoder (sample.h): a drawn caption's log-probability is what teacher
 * forcing gives it (the training forward, another path through the decoder), the first words come as
 * often as the step's distribution says (a binomial bound over 6,000 draws), <pad>, <start> and
 * <unk> never come, and the same seed draws the same captions. On a pointer model with its priors
 * and regions, so the copy mixture is part of what is drawn. */
#include <stdint.h>

#include "attncap/sample.h"
#include "attncap/vocab.h"
#include "test.h"

enum { V = 11, MAXLEN = 6 };

static int pointer_decoder(ac_decoder *dec) {
    ac_decoder_config c = {.vocab = V, .embed = 5, .hidden = 6, .att = 4, .dim = 7, .n_ann = 6, .grid_h = 2,
                           .grid_w = 2, .lambda = 0, .regions = 2, .copy = 2, .region_scale = 60, .absent = 1};
    ac_err err;
    if (ac_decoder_init(dec, &c, 11, &err)) return -1;
    dec->ptr_bs[0] = -0.5f, dec->absent_b[5] = -0.8f;
    for (int k = 0; k < V; k++) /* <unk> likely (and never drawn); <end> likely enough that most captions end */
        dec->out_bo[k] = k == AC_UNK ? 2.0f : k == AC_END ? 2.0f : 0.3f * (float)(k % 4);
    const short word_cat[V] = {-1, -1, -1, -1, 2, 2, 5, -1, 5, 9, -1};
    return ac_decoder_set_copy_words(dec, word_cat, &err);
}

static float ann[2][6 * 7];
static const int cats[2][2] = {{2, 5}, {9, 0}}, n_regions[2] = {2, 1};

static int prepare(const ac_decoder *dec, ac_dec_image **img) {
    fill_ann(ann[0], 6 * 7, 3), fill_ann(ann[1], 6 * 7, 8);
    for (int p = 0; p < 2; p++) {
        if (!(img[p] = ac_decoder_prepare_regions(dec, ann[p], 2, 2, n_regions[p]))) return -1;
        ac_dec_image_set_categories(img[p], cats[p], NULL);
    }
    return 0;
}

static void test_logp_is_teacher_forcing(void) {
    ac_decoder dec;
    ac_dec_image *img[2];
    CHECK(pointer_decoder(&dec) == 0 && prepare(&dec, img) == 0);
    enum { K = 8, R = 2 * K };
    ac_sampler *s = ac_sampler_new(&dec.cfg, R, MAXLEN);
    int words[R * MAXLEN], len[R];
    double logp[R];
    CHECK(s && ac_sample_captions(s, &dec, (const ac_dec_image *const *)img, 2, K, 42, words, len, logp) == 0);
    ac_dec_work *w = ac_dec_work_new(&dec.cfg, 1, MAXLEN + 1);
    int checked = 0, lengths = 0;
    for (int i = 0; i < R; i++) {
        CHECK(len[i] >= 0 && len[i] <= MAXLEN);
        lengths |= 1 << len[i];
        for (int k = 0; k < len[i]; k++) CHECK(words[i * MAXLEN + k] > AC_UNK && words[i * MAXLEN + k] < V);
        if (len[i] == MAXLEN) continue; /* cut: no <end> was drawn */
        const int p = i / K, one_len = len[i] + 1, nv = 4 + n_regions[p];
        const unsigned char cat[2] = {(unsigned char)cats[p][0], (unsigned char)cats[p][1]}, *catp = cat;
        const float *annp = ann[p];
        ac_dec_batch b = {1, &one_len, words + i * MAXLEN, MAXLEN, &annp, NULL, 0, &nv, &n_regions[p], &catp, NULL, NULL};
        ac_dec_stats st;
        ac_err err;
        CHECKF(ac_decoder_forward_backward(&dec, w, &b, 0, 0, NULL, &st, &err) == 0, "%s", err.msg);
        CHECK_NEAR(-st.ce_sum, logp[i], 1e-4 * (1 + fabs(logp[i])));
        checked++;
    }
    CHECKF(checked >= R / 2 && (lengths & (lengths - 1)), "%d of %d captions ended; lengths 0x%x", checked, R, lengths);
    ac_dec_work_free(w);
    ac_sampler_free(s);
    for (int p = 0; p < 2; p++) ac_dec_image_free(img[p]);
    ac_decoder_free(&dec);
}

static void test_first_words_follow_the_distribution(void) {
    ac_decoder dec;
    ac_dec_image *img[2];
    CHECK(pointer_decoder(&dec) == 0 && prepare(&dec, img) == 0);
    enum { K = 3000, R = 2 * K };
    ac_sampler *s = ac_sampler_new(&dec.cfg, R, 1);
    int *words = malloc(sizeof(int) * R), len[R];
    CHECK(s && words && ac_sample_captions(s, &dec, (const ac_dec_image *const *)img, 2, K, 7, words, len, NULL) == 0);
    for (int p = 0; p < 2; p++) { /* the step's distribution at <start>, without <pad>, <start>, <unk> */
        float st[12], st1[12], lp[V], al[6], scr[512];
        CHECK(ac_decoder_advance_scratch(&dec.cfg, 1, 2) <= 512);
        const int one = 1, start = AC_START;
        const ac_dec_image *im = img[p];
        ac_decoder_start(&dec, im, st);
        ac_decoder_advance(&dec, 1, &im, &one, 0, &start, st, NULL, st1, NULL, lp, al, NULL, scr);
        double total = 0, count[V] = {0};
        for (int v = AC_END; v < V; v++) total += v == AC_UNK ? 0 : exp(lp[v]);
        CHECK(exp(lp[AC_UNK]) > 0.1); /* <unk> is likely here, and still never drawn */
        for (int k = 0; k < K; k++) {
            const int i = p * K + k, w = len[i] == 0 ? AC_END : words[i];
            CHECK(w >= AC_END && w != AC_UNK && w < V);
            count[w]++;
        }
        for (int v = AC_END; v < V; v++) {
            const double q = v == AC_UNK ? 0 : exp(lp[v]) / total, f = count[v] / K;
            CHECKF(fabs(f - q) <= 4.5 * sqrt(q * (1 - q) / K) + 1e-9, "photo %d word %d: drawn %.4f, p %.4f", p, v, f, q);
        }
    }
    int again[R], len2[R];
    CHECK(ac_sample_captions(s, &dec, (const ac_dec_image *const *)img, 2, K, 7, again, len2, NULL) == 0);
    CHECK(!memcmp(len, len2, sizeof len));
    for (int i = 0; i < R; i++) CHECK(len[i] == 0 || again[i] == words[i]);
    CHECK(ac_sample_captions(s, &dec, (const ac_dec_image *const *)img, 2, K, 8, again, len2, NULL) == 0);
    int differ = 0;
    for (int i = 0; i < R; i++) differ += len2[i] != len[i] || (len[i] && again[i] != words[i]);
    CHECK(differ > R / 10);
    CHECK(ac_sample_captions(s, &dec, (const ac_dec_image *const *)img, 2, K + 1, 7, again, len2, NULL) == -1); /* too many rows */
    free(words);
    ac_sampler_free(s);
    for (int p = 0; p < 2; p++) ac_dec_image_free(img[p]);
    ac_decoder_free(&dec);
}

int main(void) {
    RUN(test_logp_is_teacher_forcing);
    RUN(test_first_words_follow_the_distribution);
    return TEST_EXIT();
}
