/* tests/test_meteor.c: METEOR 1.5 reproduction. Expected values are computed here by hand from
 * METEOR's definitions (parameters alpha 0.85, beta 0.2, gamma 0.6, delta 0.75, module weights
 * exact 1, stem 0.6, synonym 0.8), never captured from our own output; the golden case compares
 * with coco-caption's published METEOR for ../shared/metrics/magic_mscoco_result.json. */
#include <cjson/cJSON.h>

#include "attncap/meteor.h"
#include "attncap/tokenize.h"
#include "test.h"

static ac_meteor *M;

/* METEOR's formulas for a segment whose words are all content words and whose matches all come
 * from one module of weight w: m matches, lengths t and r, c chunks. */
static double by_hand(double w, double m, double t, double r, double c, int perfect) {
    double P = w * m * 0.75 / (0.75 * t), R = w * m * 0.75 / (0.75 * r);
    double fmean = 1.0 / (0.15 / P + 0.85 / R);
    double frag = perfect ? 0 : c / m;
    return fmean * (1 - 0.6 * pow(frag, 0.2));
}

static double seg1(const char *cand, const char *ref, ac_meteor_stats *st) {
    const char *refs[1] = {ref};
    return ac_meteor_segment(M, cand, refs, 1, st);
}

static void test_identical_is_one(void) {
    ac_meteor_stats st;
    /* All matched, one chunk: METEOR sets the fragmentation to 0, so the score is exactly 1. */
    CHECK_NEAR(seg1("a dog runs in the park", "a dog runs in the park", &st), 1.0, 1e-12);
    CHECK(st.chunks == 1 && st.test_word_matches == 6 && st.test_func == 3);
    CHECK_NEAR(st.precision, 1.0, 1e-12);
}

static void test_one_chunk_vs_many(void) {
    ac_meteor_stats st;
    /* Content words only. Same order: 3 matches in 1 chunk. */
    double s1 = seg1("red green blue", "red green blue yellow", &st);
    CHECK(st.chunks == 1);
    CHECK_NEAR(s1, by_hand(1, 3, 3, 4, 1, 0), 1e-12);
    CHECK_NEAR(s1, 0.40391304, 1e-6); /* 0.779221 * (1 - 0.6 * (1/3)^0.2) */
    /* Reversed: every match its own chunk. */
    double s3 = seg1("blue green red", "red green blue yellow", &st);
    CHECK(st.chunks == 3);
    CHECK_NEAR(s3, by_hand(1, 3, 3, 4, 3, 0), 1e-12);
    CHECK_NEAR(s3, 0.31168831, 1e-6); /* fmean * (1 - 0.6) */
    CHECK(s1 > s3);
}

static void test_stem_match(void) {
    ac_meteor_stats st;
    /* zorbs/zorb (unknown to WordNet): a stem match (weight 0.6), the only match: P = R = 0.6,
     * all words matched in one chunk -> no penalty. */
    CHECK_NEAR(seg1("zorbs", "zorb", &st), 0.6, 1e-12);
    CHECK(st.test_content[AC_METEOR_STEM] == 1 && st.test_content[AC_METEOR_EXACT] == 0);
    /* dogs/dog without synonyms: the same. (With synonyms see test_search_quirk.) */
    int syn = ac_meteor_has_synonyms(M);
    ac_meteor_set_synonyms(M, 0);
    double sd = seg1("dogs", "dog", &st);
    ac_meteor_set_synonyms(M, syn);
    CHECK_NEAR(sd, 0.6, 1e-12);
    /* Mixed: "brown dogs bark" vs "brown dog barked loudly": exact brown, stems dog(s), bark(ed). */
    double s = seg1("brown dogs bark", "brown dog barked loudly", &st);
    double tw = 0.75 * (1 + 0.6 + 0.6), P = tw / (0.75 * 3), R = tw / (0.75 * 4);
    double want = 1.0 / (0.15 / P + 0.85 / R) * (1 - 0.6 * pow(1.0 / 3, 0.2));
    CHECK(st.chunks == 1);
    CHECK_NEAR(s, want, 1e-12);
}

static void test_synonym_match(void) {
    if (!ac_meteor_has_synonyms(M)) SKIP("WordNet (Debian wordnet-base) is not installed");
    ac_meteor_stats st;
    /* car/automobile share WordNet synset car.n.01: a synonym match of weight 0.8. */
    CHECK_NEAR(seg1("car", "automobile", &st), 0.8, 1e-12);
    CHECK(st.test_content[AC_METEOR_SYNONYM] == 1);
    /* Through the exception list: "geese" -> goose, a synonym of nothing here but itself; and
     * through the suffix rules: "automobiles" -> automobile, synonym of "car". */
    CHECK_NEAR(seg1("automobiles", "car", &st), 0.8, 1e-12);
    CHECK_NEAR(seg1("mice", "mouse", &st), 0.8, 1e-12); /* different stems, same base form */
    /* Off: no match at all. */
    ac_meteor_set_synonyms(M, 0);
    double s = seg1("car", "automobile", &st);
    ac_meteor_set_synonyms(M, 1);
    CHECK_NEAR(s, 0.0, 1e-12);
}

static void test_empty(void) {
    ac_meteor_stats st;
    CHECK_NEAR(seg1("", "a dog runs", &st), 0.0, 0);
    CHECK(st.test_len == 0 && st.ref_len == 3);
    CHECK_NEAR(seg1("a dog runs", "", &st), 0.0, 0);
    CHECK_NEAR(seg1("", "", &st), 0.0, 0);
    CHECK_NEAR(ac_meteor_segment(M, "dog", NULL, 0, &st), 0.0, 0);
    CHECK_NEAR(seg1("cat", "dog", &st), 0.0, 0);
}

static void test_best_reference(void) {
    ac_meteor_stats st;
    const char *refs[3] = {"a cat", "red green blue yellow", "nothing here"};
    double s = ac_meteor_segment(M, "red green blue", refs, 3, &st);
    CHECK_NEAR(s, by_hand(1, 3, 3, 4, 1, 0), 1e-12);
    CHECK(st.ref_len == 4);
}

static void test_search_quirk(void) {
    ac_meteor_stats st;
    /* Two candidate words stem-match the one reference word, so neither match is definite. The
     * beam search adds stem weights (0.5) to int counters, where they count 0, and then prefers
     * fewer chunks: skipping wins and METEOR 1.5 aligns nothing. */
    CHECK_NEAR(seg1("dog dog", "dogs", &st), 0.0, 0);
    CHECK(st.test_word_matches == 0);
    /* An exact alternative is taken (it counts 1 in the search). */
    CHECK(seg1("dogs dog", "dog", &st) > 0 && st.test_content[AC_METEOR_EXACT] == 1);
    /* dogs/dog with WordNet: "dogs" -> base form "dog" also makes a synonym match, so the pair
     * has two matches, none is definite, and the search drops both (an isolated pair; inside a
     * chunk the stem match is kept because it saves a chunk). */
    if (ac_meteor_has_synonyms(M)) {
        CHECK_NEAR(seg1("dogs", "dog", &st), 0.0, 0);
        double s = seg1("two dogs play", "two dog play", &st);
        CHECK(st.chunks == 1 && st.test_content[AC_METEOR_STEM] == 1);
        /* "two" is a function word (0.25), dogs (stem, 0.6) and play (exact) content words (0.75);
         * every word matched in one chunk: no penalty, and P = R. */
        double P = (0.25 * 1 + 0.75 * 0.6 + 0.75 * 1) / (0.25 + 0.75 * 2);
        CHECK_NEAR(s, P, 1e-12);
    }
}

static void test_function_words(void) {
    ac_meteor_stats st;
    /* "the" is a function word (weight 1 - delta = 0.25), "dog" a content word (0.75).
     * cand "the dog", ref "the cat": the matches. P = R = 0.25 / (0.25 + 0.75). */
    double s = seg1("the dog", "the cat", &st);
    CHECK(st.test_func == 1 && st.ref_func == 1 && st.test_function[0] == 1);
    double P = 0.25, fmean = 1.0 / (0.15 / P + 0.85 / P);
    CHECK_NEAR(s, fmean * (1 - 0.6 * pow(1.0, 0.2)), 1e-12);
}

static void test_aggregate(void) {
    /* Corpus METEOR comes from summed statistics; a perfect segment's chunk is not summed. */
    const char *c[2] = {"red green blue", "blue green red"};
    const char *r0[1] = {"red green blue"}, *r1[1] = {"red green blue yellow"};
    const char *const *refs[2] = {r0, r1};
    int nr[2] = {1, 1};
    double seg[2];
    double s = ac_meteor_corpus(M, 2, c, refs, nr, seg);
    CHECK_NEAR(seg[0], 1.0, 1e-12);
    CHECK_NEAR(seg[1], by_hand(1, 3, 3, 4, 3, 0), 1e-12);
    /* Sums: test 6 words, ref 7, 6 matches each side, chunks 0 + 3. */
    double P = 1.0, R = 6.0 / 7, fmean = 1.0 / (0.15 / P + 0.85 / R);
    double want = fmean * (1 - 0.6 * pow(3.0 / 6, 0.2));
    CHECK_NEAR(s, want, 1e-12);
    CHECK(fabs(s - (seg[0] + seg[1]) / 2) > 1e-3); /* not the mean of segment scores */
}

static void test_long_and_hostile(void) {
    /* Thousands of repeated words: cut at AC_METEOR_MAX_WORDS, scored quickly, no crash. */
    size_t n = 20000;
    char *a = malloc(2 * n + 1), *b = malloc(2 * n + 1);
    for (size_t i = 0; i < n; i++) a[2 * i] = 'a', a[2 * i + 1] = ' ', b[2 * i] = i % 2 ? 'a' : 'b', b[2 * i + 1] = ' ';
    a[2 * n] = b[2 * n] = 0;
    ac_meteor_stats st;
    double t0 = ac_now();
    double s1 = seg1(a, a, &st);
    CHECK(st.test_len == AC_METEOR_MAX_WORDS);
    CHECK_NEAR(s1, 1.0, 1e-12);
    double s2 = seg1(a, b, &st);
    CHECK(s2 >= 0 && s2 <= 1);
    /* Speed is for bench/, not a timed test: just report it. */
    printf("# hostile 20,000-word lines scored in %.2f s\n", ac_now() - t0);
    free(a);
    free(b);
    /* Control bytes, invalid UTF-8, lone punctuation. */
    CHECK(seg1("\x01\x02 \xc3 \xe2\x82 ||| ???", "a b", &st) >= 0);
}

static void test_open_errors(void) {
    ac_meteor *m;
    ac_err err;
    char dir[4096], path[4200];
    CHECK(ac_meteor_open("/nonexistent/wordnet", &m, &err) == -1);
    CHECK(strstr(err.msg, "/nonexistent/wordnet/index.noun") != NULL);
    /* A malformed index file names the file and the line. */
    snprintf(dir, sizeof dir, "%s/wn", test_tmpdir());
    CHECK(!ac_mkdirs(dir, &err));
    static const char *const pos[4] = {"noun", "verb", "adj", "adv"};
    for (int k = 0; k < 4; k++) {
        snprintf(path, sizeof path, "%s/index.%s", dir, pos[k]);
        const char *txt = k == 1 ? "  licence line\nrun v 2 0 2 0 00001740\n" : "dog n 1 0 1 0 02084071\n";
        CHECK(!ac_write_file_atomic(path, txt, strlen(txt), &err));
        snprintf(path, sizeof path, "%s/%s.exc", dir, pos[k]);
        CHECK(!ac_write_file_atomic(path, "dogs dog\n", 9, &err));
    }
    CHECK(ac_meteor_open(dir, &m, &err) == -1);
    CHECKF(strstr(err.msg, "index.verb:2") != NULL, "%s", err.msg);
    /* Fixed, it loads and works. */
    snprintf(path, sizeof path, "%s/index.verb", dir);
    CHECK(!ac_write_file_atomic(path, "run v 1 0 1 0 00001740\n", 23, &err));
    CHECKF(!ac_meteor_open(dir, &m, &err), "%s", err.msg);
    CHECK(ac_meteor_has_synonyms(m));
    ac_meteor_close(m);
}

static void check_norm(const char *in, const char *want) {
    char *got = ac_meteor_normalize(in);
    int ok = got && !strcmp(got, want);
    if (!ok) printf("  normalize(\"%s\") = \"%s\", want \"%s\"\n", in, got ? got : "(null)", want);
    free(got);
    if (!ok) t_cur_failed = 1;
}

static void test_normalizer(void) {
    check_norm("A man in a T-shirt.", "a man in a t shirt .");
    check_norm("the man's dog", "the man 's dog");
    check_norm("the man 's dog", "the man ' s dog");
    check_norm("do n't", "do n 't");
    check_norm("The U.S. flag", "the us flag");
    check_norm("St. louis", "st. louis");
    check_norm("a,b 1,000 3:00", "a , b 1,000 3 : 00");
    check_norm("\xe2\x80\x9cHi\xe2\x80\x9d said `he'", "\" hi \" said ' he '");
    check_norm("wait... what", "wait ... what");
    check_norm("\xc3\x80LA CAF\xc3\x89", "\xc3\xa0la caf\xc3\xa9");
    check_norm("x & y / z", "x & y / z");
    check_norm("  ", "");
    /* Letters outside METEOR's Latin-1/Latin-A/Cyrillic class are split off as punctuation
     * would be (Vietnamese u-horn and o-horn-grave here); invalid UTF-8 becomes U+FFFD. */
    check_norm("ng\xc6\xb0\xe1\xbb\x9di \xc4\x90i", "ng \xc6\xb0 \xe1\xbb\x9d i \xc4\x91i");
    check_norm("a\xff", "a \xef\xbf\xbd");
    CHECK(!t_cur_failed);
}

/* coco-caption's tokenisation (PTBTokenizer -lowerCase, punctuation removed), joined by spaces. */
static char *coco_tok(const char *text) {
    ac_tokens t;
    ac_err err;
    if (ac_tokenize(text, &t, &err)) return strdup("");
    char *s = ac_tokens_join(&t);
    ac_tokens_free(&t);
    return s ? s : strdup("");
}

static void test_golden(void) {
    const char *path = test_shared("metrics/magic_mscoco_result.json");
    if (!path) SKIP("../shared/metrics/magic_mscoco_result.json not found");
    char *data;
    size_t len;
    ac_err err;
    CHECKF(!ac_read_file(path, (size_t)1 << 30, &data, &len, &err), "%s", err.msg);
    cJSON *root = cJSON_Parse(data);
    free(data);
    CHECK(root && cJSON_IsArray(root));
    int n = cJSON_GetArraySize(root);
    char **cands = calloc((size_t)n, sizeof *cands);
    char ***refs = calloc((size_t)n, sizeof *refs);
    int *nr = calloc((size_t)n, sizeof *nr);
    for (int i = 0; i < n; i++) {
        cJSON *e = cJSON_GetArrayItem(root, i), *caps = cJSON_GetObjectItem(e, "captions");
        cands[i] = coco_tok(cJSON_GetObjectItem(e, "prediction")->valuestring);
        nr[i] = cJSON_GetArraySize(caps);
        refs[i] = calloc((size_t)nr[i], sizeof(char *));
        for (int r = 0; r < nr[i]; r++) refs[i][r] = coco_tok(cJSON_GetArrayItem(caps, r)->valuestring);
    }
    cJSON_Delete(root);
    double t0 = ac_now();
    double s = ac_meteor_corpus(M, n, (const char *const *)cands, (const char *const *const *)refs, nr, NULL);
    double t1 = ac_now();
    ac_meteor_set_synonyms(M, 0);
    double s_nosyn = ac_meteor_corpus(M, n, (const char *const *)cands, (const char *const *const *)refs, nr, NULL);
    ac_meteor_set_synonyms(M, 1);
    printf("# golden METEOR %.4f (coco-caption 0.174), without synonyms %.4f, %d images in %.3f s\n", s,
           s_nosyn, n, t1 - t0);
    for (int i = 0; i < n; i++) {
        for (int r = 0; r < nr[i]; r++) free(refs[i][r]);
        free(refs[i]);
        free(cands[i]);
    }
    free(refs);
    free(cands);
    free(nr);
    CHECK(n == 4982);
    CHECK_NEAR(s, 0.174, 0.01);
    CHECK(s_nosyn < s);                /* WordNet synonyms add matches */
    CHECK_NEAR(s_nosyn, 0.174, 0.015); /* exact + stem alone are already close */
}

int main(void) {
    ac_err err;
    if (ac_meteor_open(NULL, &M, &err)) {
        printf("FAIL open: %s\n", err.msg);
        return 1;
    }
    RUN(test_identical_is_one);
    RUN(test_one_chunk_vs_many);
    RUN(test_stem_match);
    RUN(test_synonym_match);
    RUN(test_empty);
    RUN(test_best_reference);
    RUN(test_search_quirk);
    RUN(test_function_words);
    RUN(test_aggregate);
    RUN(test_normalizer);
    RUN(test_long_and_hostile);
    RUN(test_open_errors);
    RUN(test_golden);
    ac_meteor_close(M);
    return TEST_EXIT();
}
