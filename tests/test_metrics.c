/* Metrics tests. Expected values are worked out by hand from the definitions in coco-caption's
 * bleu_scorer.py, rouge.py and cider_scorer.py (see metrics.h), and the golden case is
 * coco-caption's published output for ../shared/metrics/magic_mscoco_result.json. */
#include "attncap/metrics.h"
#include "attncap/tokenize.h"
#include "test.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>

/* One image: refs separated by '|', already tokenized. */
static void add(ac_eval_set *s, const char *refs, const char *cand) {
    char *buf = strdup(refs), *save = NULL;
    const char *r[16];
    int n = 0;
    for (char *t = strtok_r(buf, "|", &save); t; t = strtok_r(NULL, "|", &save)) r[n++] = t;
    ac_err e;
    if (ac_eval_set_add(s, NULL, r, n, cand, 0, &e)) printf("  add: %s\n", e.msg);
    free(buf);
}

static void test_bleu_exact_match(void) {
    ac_eval_set s = {0};
    add(&s, "a b c d", "a b c d");
    double b[4], img[1];
    ac_bleu_counts c;
    CHECK(ac_bleu(s.items, s.n, b, &c, img) == 0);
    CHECK(c.testlen == 4 && c.reflen == 4);
    CHECK(c.guess[0] == 4 && c.guess[3] == 1 && c.correct[0] == 4 && c.correct[3] == 1);
    for (int k = 0; k < 4; k++) CHECK_NEAR(b[k], 1.0, 1e-8);
    CHECK_NEAR(img[0], 1.0, 1e-8);
    ac_eval_set_free(&s);
}

static void test_bleu_longer_candidate(void) {
    /* closest ref length to 6 among 3 and 4 is 4; no brevity penalty */
    ac_eval_set s = {0};
    add(&s, "a b c|a b c d", "a b c d e f");
    double b[4];
    ac_bleu_counts c;
    CHECK(ac_bleu(s.items, s.n, b, &c, NULL) == 0);
    CHECK(c.testlen == 6 && c.reflen == 4);
    CHECK(c.correct[0] == 4 && c.correct[1] == 3 && c.correct[2] == 2 && c.correct[3] == 1);
    CHECK(c.guess[0] == 6 && c.guess[1] == 5 && c.guess[2] == 4 && c.guess[3] == 3);
    CHECK_NEAR(b[0], 4.0 / 6, 1e-9);
    CHECK_NEAR(b[1], sqrt(4.0 / 6 * 3.0 / 5), 1e-9);
    CHECK_NEAR(b[3], pow(1.0 / 15, 0.25), 1e-9);
    ac_eval_set_free(&s);
}

static void test_bleu_brevity_and_ties(void) {
    ac_eval_set s = {0};
    add(&s, "a b c d", "a b"); /* BP exp(1 - 4/2); no trigrams: (tiny/small) factors */
    double b[4], img[2];
    ac_bleu_counts c;
    CHECK(ac_bleu(s.items, s.n, b, &c, img) == 0);
    double bp = exp(1 - 4.0 / 2);
    CHECK_NEAR(b[0], bp, 1e-9);
    CHECK_NEAR(b[1], bp, 1e-9);
    CHECK_NEAR(b[2] / (pow(1e-15 / 1e-9, 1.0 / 3) * bp), 1.0, 1e-8);
    CHECK_NEAR(b[3] / (pow(1e-12, 0.25) * bp), 1.0, 1e-8);
    ac_eval_set_free(&s);
    /* tie between lengths 4 and 6 for a candidate of 5: the shorter wins */
    add(&s, "x x x x x x|y y y y", "z z z z z");
    CHECK(ac_bleu(s.items, s.n, b, &c, NULL) == 0);
    CHECK(c.reflen == 4);
    ac_eval_set_free(&s);
}

static void test_bleu_repeated_ngrams(void) {
    ac_eval_set s = {0};
    add(&s, "the cat|the the dog", "the the the the");
    double b[4];
    ac_bleu_counts c;
    CHECK(ac_bleu(s.items, s.n, b, &c, NULL) == 0);
    /* "the" x4 clipped to 2 (max in one ref), "the the" x3 clipped to 1 */
    CHECK(c.correct[0] == 2 && c.correct[1] == 1 && c.correct[2] == 0);
    CHECK(c.reflen == 3);
    CHECK_NEAR(b[0], 0.5, 1e-9);
    ac_eval_set_free(&s);
}

static void test_empty_candidate(void) {
    ac_eval_set s = {0};
    add(&s, "a dog runs", "");
    add(&s, "a cat", "a cat");
    ac_scores sc;
    ac_err e;
    CHECK(ac_metrics_compute(&s, 0, NULL, &sc, &e) == 0);
    CHECK(sc.counts.testlen == 2 && sc.counts.reflen == 5);
    CHECK(sc.img_bleu4[0] == 0.0);
    CHECK(sc.img_rouge_l[0] == 0.0 && sc.img_cider_d[0] == 0.0);
    CHECK_NEAR(sc.img_rouge_l[1], 1.0, 1e-12);
    CHECK(isnan(sc.meteor));
    ac_scores_free(&sc);
    ac_eval_set_free(&s);
}

static void test_rouge(void) {
    char *r1[] = {"a c d e f"};
    /* LCS 3: P = 3/4, R = 3/5, F = 2.44 P R / (R + 1.44 P) */
    CHECK_NEAR(ac_rouge_l("a b c d", r1, 1), 2.44 * 0.75 * 0.6 / (0.6 + 1.44 * 0.75), 1e-12);
    /* max precision and max recall are taken over references separately */
    char *r2[] = {"a b", "a b c d e f g h"};
    CHECK_NEAR(ac_rouge_l("a b c d", r2, 2), 1.0, 1e-12);
    char *r3[] = {"x y"};
    CHECK(ac_rouge_l("a b", r3, 1) == 0.0);
    CHECK(ac_rouge_l("", r3, 1) == 0.0);
    /* repeated words: LCS of "a a a" and "a b a" is 2 */
    char *r4[] = {"a b a"};
    CHECK_NEAR(ac_rouge_l("a a a", r4, 1), 2.44 * (2.0 / 3) * (2.0 / 3) / (2.0 / 3 + 1.44 * 2.0 / 3), 1e-12);
}

static void test_cider(void) {
    ac_eval_set s = {0};
    /* N = 2, idf = log 2 - log df; df(a) = 2 makes "a" weightless */
    add(&s, "a b|a c", "a b");
    add(&s, "a d", "x");
    double mean, img[2];
    CHECK(ac_cider_d(s.items, s.n, &mean, img) == 0);
    CHECK_NEAR(img[0], (2.0 + 0.0) / 4 / 2 * 10, 1e-9);
    CHECK_NEAR(img[1], 0.0, 1e-12);
    CHECK_NEAR(mean, 1.25, 1e-9);
    ac_eval_set_free(&s);
    /* Gaussian penalty on the bigram-count difference (1 vs 2), sigma 6 */
    add(&s, "a b c", "a b");
    add(&s, "d e", "d e");
    CHECK(ac_cider_d(s.items, s.n, &mean, img) == 0);
    double sim = (2 / sqrt(6.0) + 1 / sqrt(2.0)) * exp(-1.0 / 72);
    CHECK_NEAR(img[0], sim / 4 * 10, 1e-9);
    CHECK_NEAR(img[1], 5.0, 1e-9);
    ac_eval_set_free(&s);
}

static void test_non_ascii(void) {
    ac_eval_set s = {0};
    ac_err e;
    const char *refs[] = {"M\xe1\xbb\x99t ng\xc6\xb0\xe1\xbb\x9di \xc4\x91\xc3\xa0n \xc3\xb4ng ."};
    CHECK(ac_eval_set_add(&s, "vi1", refs, 1, "M\xe1\xbb\x98T ng\xc6\xb0\xe1\xbb\x9di .", 1, &e) == 0);
    CHECK(!strcmp(s.items[0].cand, "m\xe1\xbb\x99t ng\xc6\xb0\xe1\xbb\x9di"));
    double b[4];
    ac_bleu_counts c;
    CHECK(ac_bleu(s.items, s.n, b, &c, NULL) == 0);
    CHECK(c.testlen == 2 && c.reflen == 4 && c.correct[0] == 2 && c.correct[1] == 1 && c.correct[2] == 0);
    CHECK_NEAR(b[0], exp(1 - 4.0 / 2), 1e-9);
    const char *bad[] = {"bad \xff"};
    CHECK(ac_eval_set_add(&s, "img7", bad, 1, "x", 1, &e) == -1);
    CHECK(strstr(e.msg, "img7") && strstr(e.msg, "UTF-8"));
    CHECK(ac_eval_set_add(&s, "img8", bad, 0, "x", 1, &e) == -1);
    ac_eval_set_free(&s);
}

/* Random sets scored by tools/make_metrics_fixture.py (a transcription of coco-caption's Python). */
static void test_python_reference(void) {
    const char *path = test_fixture("metrics_ref.json");
    char *d;
    size_t len;
    ac_err e;
    CHECKF(ac_read_file(path, 1u << 24, &d, &len, &e) == 0, "%s", e.msg);
    cJSON *j = cJSON_Parse(d);
    free(d);
    CHECK(j && cJSON_GetArraySize(j) > 10);
    int cases = 0;
    cJSON *set;
    cJSON_ArrayForEach(set, j) {
        ac_eval_set s = {0};
        cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItem(set, "items")) {
            const char *refs[16];
            int n = 0;
            cJSON *r;
            cJSON_ArrayForEach(r, cJSON_GetObjectItem(it, "refs")) refs[n++] = r->valuestring;
            CHECK(ac_eval_set_add(&s, NULL, refs, n, cJSON_GetObjectItem(it, "cand")->valuestring, 0, &e) == 0);
        }
        ac_scores sc;
        CHECK(ac_metrics_compute(&s, 0, NULL, &sc, &e) == 0);
        cJSON *c = cJSON_GetObjectItem(set, "counts");
        CHECK(sc.counts.testlen == cJSON_GetObjectItem(c, "testlen")->valueint);
        CHECK(sc.counts.reflen == cJSON_GetObjectItem(c, "reflen")->valueint);
        for (int k = 0; k < 4; k++) {
            CHECK(sc.counts.guess[k] == cJSON_GetArrayItem(cJSON_GetObjectItem(c, "guess"), k)->valueint);
            CHECK(sc.counts.correct[k] == cJSON_GetArrayItem(cJSON_GetObjectItem(c, "correct"), k)->valueint);
            CHECK_NEAR(sc.bleu[k], cJSON_GetArrayItem(cJSON_GetObjectItem(set, "bleu"), k)->valuedouble, 1e-12);
        }
        for (int i = 0; i < s.n; i++) {
            CHECK_NEAR(sc.img_bleu4[i], cJSON_GetArrayItem(cJSON_GetObjectItem(set, "bleu4_img"), i)->valuedouble, 1e-12);
            CHECK_NEAR(sc.img_rouge_l[i], cJSON_GetArrayItem(cJSON_GetObjectItem(set, "rouge_img"), i)->valuedouble, 1e-12);
            CHECK_NEAR(sc.img_cider_d[i], cJSON_GetArrayItem(cJSON_GetObjectItem(set, "cider_img"), i)->valuedouble, 1e-9);
        }
        CHECK_NEAR(sc.cider_d, cJSON_GetObjectItem(set, "cider")->valuedouble, 1e-9);
        /* One candidate at a time against the set's references (self-critical training's reward):
         * coco-caption's per-image scores, whatever the candidates scored before (every other one,
         * in reverse, first: their new n-grams must not move the corpus's weights). */
        ac_cider_corpus *corpus = ac_cider_corpus_new(s.items, s.n);
        CHECK(corpus != NULL);
        for (int i = s.n - 1; corpus && i >= 0; i -= 2) CHECK(ac_cider_corpus_score(corpus, i, s.items[(i + 1) % s.n].cand) >= 0);
        for (int i = 0; corpus && i < s.n; i++)
            CHECK_NEAR(ac_cider_corpus_score(corpus, i, s.items[i].cand),
                       cJSON_GetArrayItem(cJSON_GetObjectItem(set, "cider_img"), i)->valuedouble, 1e-9);
        if (corpus) CHECK(ac_cider_corpus_score(corpus, s.n, "a") == -1);
        ac_cider_corpus_free(corpus);
        ac_scores_free(&sc);
        ac_eval_set_free(&s);
        cases++;
    }
    cJSON_Delete(j);
    CHECK(cases == 24);
}

static int load_golden(ac_eval_set *s) {
    const char *p = test_shared("metrics/magic_mscoco_result.json");
    if (!p) return 1;
    char *d;
    size_t len;
    ac_err e;
    if (ac_read_file(p, 1u << 30, &d, &len, &e)) return -1;
    cJSON *j = cJSON_Parse(d);
    free(d);
    if (!j) return -1;
    cJSON *it;
    cJSON_ArrayForEach(it, j) {
        cJSON *c = cJSON_GetObjectItem(it, "captions"), *pr = cJSON_GetObjectItem(it, "prediction");
        const char *refs[64];
        int n = 0;
        cJSON *r;
        cJSON_ArrayForEach(r, c) if (n < 64) refs[n++] = r->valuestring;
        if (ac_eval_set_add(s, NULL, refs, n, pr->valuestring, 1, &e)) { cJSON_Delete(j); return -1; }
    }
    cJSON_Delete(j);
    return 0;
}

static void test_golden(void) {
    ac_eval_set s = {0};
    int r = load_golden(&s);
    if (r == 1) SKIP("needs ../shared/metrics/magic_mscoco_result.json");
    CHECK(r == 0 && s.n == 4982);
    ac_scores sc;
    ac_err e;
    CHECKF(ac_metrics_compute(&s, 0, NULL, &sc, &e) == 0, "%s", e.msg);
    const ac_bleu_counts *c = &sc.counts;
    printf("# testlen %lld reflen %lld guess [%lld %lld %lld %lld] correct [%lld %lld %lld %lld]\n", c->testlen,
           c->reflen, c->guess[0], c->guess[1], c->guess[2], c->guess[3], c->correct[0], c->correct[1], c->correct[2],
           c->correct[3]);
    printf("# BLEU %.4f %.4f %.4f %.4f ROUGE_L %.4f CIDEr %.4f\n", sc.bleu[0], sc.bleu[1], sc.bleu[2], sc.bleu[3],
           sc.rouge_l, sc.cider_d);
    CHECK(c->testlen == 47153 && c->reflen == 47168);
    CHECK(c->guess[0] == 47153 && c->guess[1] == 42171 && c->guess[2] == 37189 && c->guess[3] == 32207);
    CHECK(c->correct[0] == 26801 && c->correct[1] == 9496 && c->correct[2] == 2857 && c->correct[3] == 902);
    CHECK_NEAR(sc.bleu[0], 0.568, 0.001);
    CHECK_NEAR(sc.bleu[1], 0.358, 0.001);
    CHECK_NEAR(sc.bleu[2], 0.214, 0.001);
    CHECK_NEAR(sc.bleu[3], 0.129, 0.001);
    CHECK_NEAR(sc.rouge_l, 0.399, 0.001);
    CHECK_NEAR(sc.cider_d, 0.493, 0.001);
    ac_scores_free(&sc);
    ac_eval_set_free(&s);
}

static void test_golden_meteor(void) {
    ac_eval_set s = {0};
    int r = load_golden(&s);
    if (r == 1) SKIP("needs ../shared/metrics/magic_mscoco_result.json");
    CHECK(r == 0);
    ac_scores sc;
    ac_err e;
    if (ac_metrics_compute(&s, AC_METRICS_METEOR, NULL, &sc, &e)) {
        ac_eval_set_free(&s);
        SKIP("METEOR unavailable: %s", e.msg);
    }
    printf("# METEOR %.4f\n", sc.meteor);
    CHECK_NEAR(sc.meteor, 0.174, 0.01);
    CHECK(sc.img_meteor != NULL);
    ac_scores_free(&sc);
    ac_eval_set_free(&s);
}

int main(void) {
    RUN(test_bleu_exact_match);
    RUN(test_bleu_longer_candidate);
    RUN(test_bleu_brevity_and_ties);
    RUN(test_bleu_repeated_ngrams);
    RUN(test_empty_candidate);
    RUN(test_rouge);
    RUN(test_cider);
    RUN(test_non_ascii);
    RUN(test_python_reference);
    RUN(test_golden);
    RUN(test_golden_meteor);
    return TEST_EXIT();
}
