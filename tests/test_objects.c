/* Object mentions (objects.h): the matcher on hand-made captions with known answers (synonyms,
 * plurals, multi-word names, blockers, the orange and animal-modifier rules), the scores of a
 * hand-computed set, novel counts, hostile input, and a sanity run on COCO's own references. */
#include <stdint.h>

#include "attncap/dataset.h"
#include "attncap/metrics.h"
#include "attncap/objects.h"
#include "test.h"

/* Flags from a ", "-separated list of category names (-1 in *bad if a name is unknown). */
static void flags_of(const char *names, uint8_t out[AC_N_OBJECTS], int *bad) {
    memset(out, 0, AC_N_OBJECTS);
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", names);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ') tok++;
        int k = ac_object_index(tok);
        if (k < 0) *bad = 1;
        else out[k] = 1;
    }
}

static void test_names(void) {
    CHECK(ac_object_name(0) && !strcmp(ac_object_name(0), "person"));
    CHECK(!strcmp(ac_object_name(79), "toothbrush"));
    CHECK(ac_object_name(80) == NULL && ac_object_name(-1) == NULL);
    /* the matcher's fixed indices (person, the animals bird..giraffe, orange) are COCO's order */
    CHECK(ac_object_index("bird") == 14 && ac_object_index("giraffe") == 23 && ac_object_index("orange") == 49);
    CHECK(ac_object_index("tv") == 62 && ac_object_index("no such thing") == -1);
    for (int k = 0; k < AC_N_OBJECTS; k++) {
        CHECKF(ac_object_index(ac_object_name(k)) == k, "%s is not unique", ac_object_name(k));
        CHECK(ac_object_synonyms(k) && ac_object_synonyms(k)[0]);
    }
}

/* Every phrase in exactly one list; alone, each synonym names its category only, each blocker nothing. */
static void test_table(void) {
    const char *seen[2000];
    int n = 0;
    for (int k = 0; k <= AC_N_OBJECTS; k++) {
        const char *const *list = k < AC_N_OBJECTS ? ac_object_synonyms(k) : ac_object_blockers();
        for (; *list; list++) {
            for (int j = 0; j < n; j++) CHECKF(strcmp(seen[j], *list), "'%s' is listed twice", *list);
            CHECK(n < 2000);
            seen[n++] = *list;
            CHECKF(!strchr(*list, '-') && !strstr(*list, "  ") && (*list)[0] != ' ', "'%s' is not in token form", *list);
            uint8_t p[AC_N_OBJECTS];
            int c = ac_objects_in_tokens(*list, p);
            if (k < AC_N_OBJECTS) CHECKF(c == 1 && p[k], "'%s' alone does not name %s only", *list, ac_object_name(k));
            else CHECKF(c == 0, "blocker '%s' names something", *list);
        }
    }
    CHECK(n > 500);
    CHECKF(n <= AC_OBJECT_PHRASES_MAX, "%d phrases: the matcher's table holds %d", n, AC_OBJECT_PHRASES_MAX);
}

static void test_captions(void) {
    static const char *const cases[][2] = {
        /* synonyms, case and punctuation through the tokenizer */
        {"A man eating a hot dog.", "person, hot dog"},
        {"Two men playing Frisbee in the park.", "person, frisbee"},
        {"A MOTORBIKE and a Motor-Cycle", "motorcycle"},
        {"a couch and a sofa", "couch"},
        {"a cell phone, a phone and a T.V.", "cell phone, tv"},
        {"jets and a plane", "airplane"},
        {"a computer mouse and keyboard on a desk near a laptop", "dining table, laptop, mouse, keyboard"},
        /* plurals: +s, +es, y -> ies, irregular */
        {"Ponies and puppies", "dog, horse"},
        {"sandwiches, buses and toothbrushes", "bus, sandwich, toothbrush"},
        {"knives forks spoons", "fork, knife, spoon"},
        {"children and their mice", "person, mouse"},
        {"blue skies", ""},
        /* multi-word names, longest first */
        {"Two hot-dogs on a bun", "hot dog"},
        {"A teddy bear next to a brown bear", "bear, teddy bear"},
        {"A player swings a baseball bat at the ball", "person, baseball bat, sports ball"},
        {"A catcher's mitt", "baseball glove"},
        {"A red fire hydrant near a stop sign and a parking meter", "fire hydrant, stop sign, parking meter"},
        {"a traffic light over the street light", "traffic light"},
        {"She holds a tennis racket and a wine glass", "tennis racket, wine glass"},
        {"a hair dryer", "hair drier"},
        {"a microwave oven and a toaster oven", "microwave, toaster"},
        {"the passenger train", "train"},
        /* blockers */
        {"people at the bus stop", "person"},
        {"a toilet and toilet paper", "toilet"},
        {"a cowboy hat and cowboy boots on a bench", "bench"}, /* a hat is not a cowboy */
        {"three young males", "person"},
        {"a skier on skis at the ski slope", "person, skis"},
        {"a pitcher of water", ""},
        {"a pitcher throws the ball", "person, sports ball"},
        {"they play table tennis", ""},
        /* animal modifiers */
        {"a baby elephant with its mother", "elephant"},
        {"a mother holding her baby", "person"},
        {"a mother duck and ducklings", "bird"},
        /* orange: fruit or colour */
        {"an orange cat", "cat"},
        {"a bowl with an orange", "bowl, orange"},
        {"an orange on a plate", "orange"},
        {"an orange and white bus", "bus"},
        {"a white and orange kite", "kite"},
        {"an apple and orange slices", "apple, orange"},
        {"the truck is orange", "truck"},
        {"oranges", "orange"},
        /* nothing */
        {"", ""},
        {"   ", ""},
        {"M\xe1\xbb\x99t ng\xc6\xb0\xe1\xbb\x9di \xc4\x91\xc3\xa0n \xc3\xb4ng", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t got[AC_N_OBJECTS], want[AC_N_OBJECTS];
        int bad = 0;
        flags_of(cases[i][1], want, &bad);
        CHECKF(!bad, "unknown name in '%s'", cases[i][1]);
        ac_err e;
        int n = ac_objects_in_text(cases[i][0], got, &e);
        char g[1024];
        ac_objects_join(got, ", ", g, sizeof g);
        CHECKF(n >= 0 && !memcmp(got, want, AC_N_OBJECTS), "'%s': got [%s], want [%s]", cases[i][0], g, cases[i][1]);
    }
}

/* Each vocabulary word's category as the caption matcher reads the word alone: synonyms and
 * plurals map, words of a phrase alone ("hot", "parking") and the special tokens do not. */
static void test_vocab_objects(void) {
    ac_vocab *v;
    ac_err err;
    const char *json = "[\"<pad>\",\"<start>\",\"<end>\",\"<unk>\",\"men\",\"sofa\",\"dogs\",\"hot\",\"parking\","
                       "\"a\",\"giraffe\",\"tv\"]";
    CHECKF(ac_vocab_from_json(json, &v, &err) == 0, "%s", err.msg);
    signed char wo[12];
    ac_objects_of_vocab(v, wo);
    const char *want[12] = {NULL, NULL, NULL, NULL, "person", "couch", "dog", NULL, NULL, NULL, "giraffe", "tv"};
    for (int w = 0; w < 12; w++) {
        const char *got = wo[w] >= 0 ? ac_object_name(wo[w]) : NULL;
        CHECKF(want[w] ? got && !strcmp(got, want[w]) : !got, "%s: %s, want %s", ac_vocab_word(v, w), got ? got : "none",
               want[w] ? want[w] : "none");
    }
    /* Repeatable: the objects' words but a person's; the words already marked stay so, the rest 0. */
    unsigned char rep[12] = {0};
    rep[9] = 1; /* "a", marked by the counts */
    ac_objects_repeatable(v, rep);
    const unsigned char want_rep[12] = {0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1};
    for (int w = 0; w < 12; w++)
        CHECKF(rep[w] == want_rep[w], "%s: repeatable %d, want %d", ac_vocab_word(v, w), rep[w], want_rep[w]);
    ac_vocab_free(v);
}

static void test_join(void) {
    uint8_t p[AC_N_OBJECTS] = {0};
    char b[64];
    CHECK(ac_objects_join(p, ", ", b, sizeof b) == 0 && b[0] == 0);
    p[0] = p[52] = p[79] = 1;
    CHECK(ac_objects_join(p, ", ", b, sizeof b) == strlen("person, hot dog, toothbrush"));
    CHECK(!strcmp(b, "person, hot dog, toothbrush"));
    char small[8];
    CHECK(ac_objects_join(p, ", ", small, sizeof small) == strlen("person, hot dog, toothbrush"));
    CHECK(!strcmp(small, "person,"));
    CHECK(ac_objects_join(p, ", ", NULL, 0) == strlen("person, hot dog, toothbrush"));
}

static void add(ac_eval_set *s, const char *id, const char *const *refs, int n, const char *cand) {
    ac_err e;
    if (ac_eval_set_add(s, id, refs, n, cand, 1, &e)) printf("# add %s: %s\n", id, e.msg);
}

/* Four photos whose counts are worked out by hand in the comments. */
static void make_set(ac_eval_set *s) {
    /* refs: {person, horse}, {person, horse, dog}, {horse}: truth person, horse; named + dog.
     * cand {person, dog, horse, cat}: TP 2 (person, horse), FP 2 (dog, cat), hallucinated: cat. */
    const char *a[] = {"A man rides a horse.", "A person on a horse near a dog.", "A horse in a field."};
    add(s, "A", a, 3, "A man and a dog on a horse with a cat.");
    /* refs: {hot dog} x2, {dining table}: truth hot dog. cand {dog, dining table}: FP 2, FN 1 (hot dog),
     * hallucinated: dog. */
    const char *b[] = {"A hot dog on a plate.", "A hot dog with mustard.", "Food on a table."};
    add(s, "B", b, 3, "A dog on a table.");
    /* refs {teddy bear, bed} x2: cand the same: TP 2 */
    const char *c[] = {"Two teddy bears on a bed.", "Stuffed animals on a bed."};
    add(s, "C", c, 2, "A teddy bear on a bed.");
    /* one reference: truth needs min(2, 1) = 1 reference: {giraffe}; cand names nothing: FN 1 */
    const char *d[] = {"A giraffe."};
    add(s, "D", d, 1, "An empty street.");
}

static void test_scores(void) {
    ac_eval_set s = {0};
    make_set(&s);
    CHECK(s.n == 4);
    ac_object_scores o;
    ac_err e;
    CHECK(ac_objects_score(&s, &o, &e) == 0);
    /* TP 2+0+2+0, FP 2+2+0+0, FN 0+1+0+1; hallucinated cat (A), dog (B) */
    CHECK(o.n == 4 && o.tp == 4 && o.fp == 4 && o.fn == 2 && o.mentioned == 8 && o.hallucinated == 2);
    CHECK_NEAR(o.precision, 0.5, 1e-12);
    CHECK_NEAR(o.recall, 4.0 / 6, 1e-12);
    CHECK_NEAR(o.f1, 4.0 / 7, 1e-12); /* 2PR/(P+R) = (2 * 1/2 * 2/3) / (7/6) */
    CHECK_NEAR(o.chair_i, 0.25, 1e-12);
    CHECK(o.captions_hallucinating == 2);
    CHECK_NEAR(o.chair_s, 0.5, 1e-12);
    int dog = ac_object_index("dog"), cat = ac_object_index("cat"), hot = ac_object_index("hot dog"),
        table = ac_object_index("dining table"), giraffe = ac_object_index("giraffe"), teddy = ac_object_index("teddy bear");
    CHECK(o.fp_k[dog] == 2 && o.hall_k[dog] == 1); /* in A one reference names the dog: not hallucinated */
    CHECK(o.fp_k[cat] == 1 && o.hall_k[cat] == 1);
    CHECK(o.fp_k[table] == 1 && o.hall_k[table] == 0);
    CHECK(o.fn_k[hot] == 1 && o.fn_k[giraffe] == 1 && o.tp_k[teddy] == 1 && o.tp_k[0] == 1);
    uint8_t cand[AC_N_OBJECTS], truth[AC_N_OBJECTS], hall[AC_N_OBJECTS], missed[AC_N_OBJECTS];
    ac_object_scores_image(&o, 1, cand, truth, hall, missed);
    char b[256];
    ac_objects_join(cand, ",", b, sizeof b);
    CHECKF(!strcmp(b, "dog,dining table"), "%s", b);
    ac_objects_join(truth, ",", b, sizeof b);
    CHECKF(!strcmp(b, "hot dog"), "%s", b);
    ac_objects_join(hall, ",", b, sizeof b);
    CHECKF(!strcmp(b, "dog"), "%s", b);
    ac_objects_join(missed, ",", b, sizeof b);
    CHECKF(!strcmp(b, "hot dog"), "%s", b);
    CHECK(isnan(o.novel_recall) && o.novel_max == 0);

    /* novel: giraffe 0 photos, hot dog 3, teddy bear 50, every other category 100 */
    int counts[AC_N_OBJECTS];
    for (int k = 0; k < AC_N_OBJECTS; k++) counts[k] = 100;
    counts[giraffe] = 0, counts[hot] = 3, counts[teddy] = 50;
    ac_object_scores_set_novel(&o, counts, 10);
    CHECK(o.n_novel == 2 && o.novel[giraffe] && o.novel[hot] && !o.novel[teddy]);
    CHECK(o.novel_tp == 0 && o.novel_truth == 2 && o.novel_mentioned == 0);
    CHECK_NEAR(o.novel_recall, 0.0, 1e-12);
    ac_object_scores_set_novel(&o, counts, 60); /* now teddy bear too: 1 of 3 */
    CHECK(o.n_novel == 3 && o.novel_tp == 1 && o.novel_truth == 3 && o.novel_mentioned == 1);
    CHECK_NEAR(o.novel_recall, 1.0 / 3, 1e-12);
    ac_object_scores_free(&o);

    /* ac_metrics_compute carries the same object scores */
    ac_scores sc;
    CHECK(ac_metrics_compute(&s, 0, NULL, &sc, &e) == 0);
    CHECK(sc.objects.tp == 4 && sc.objects.fp == 4 && sc.objects.fn == 2 && sc.objects.cand);
    char *j = ac_scores_to_json_flags(&sc, AC_SCORES_JSON_PER_CATEGORY);
    CHECK(j && strstr(j, "\"CHAIR-i\":\t0.25") && strstr(j, "\"per_category\"") && strstr(j, "\"precision\":\t0.5"));
    free(j);
    ac_scores_free(&sc);
    ac_eval_set_free(&s);

    /* nothing to score: undefined ratios */
    ac_eval_set empty = {0};
    CHECK(ac_objects_score(&empty, &o, &e) == 0);
    CHECK(o.n == 0 && isnan(o.precision) && isnan(o.recall) && isnan(o.f1) && isnan(o.chair_i) && isnan(o.chair_s));
    ac_object_scores_free(&o);
}

static void test_photo_counts(void) {
    char *c0[] = {"A dog runs.", "Two dogs play."};
    char *c1[] = {"A cat.", "A dog and a cat."};
    char *c2[] = {"A dog."};
    char *c3[] = {"fine", "bad \xff byte"};
    ac_ds_image im[4] = {
        {"p0.jpg", "p0.jpg", "p0", AC_SPLIT_TRAIN, 2, c0},
        {"p1.jpg", "p1.jpg", "p1", AC_SPLIT_TRAIN, 2, c1},
        {"p2.jpg", "p2.jpg", "p2", AC_SPLIT_VAL, 1, c2},
        {"p3.jpg", "p3.jpg", "p3", AC_SPLIT_TEST, 2, c3},
    };
    ac_dataset ds = {3, im, NULL, "tsv"};
    int counts[AC_N_OBJECTS], n = 0, dog = ac_object_index("dog"), cat = ac_object_index("cat");
    ac_err e;
    CHECK(ac_objects_photo_counts(&ds, AC_SPLIT_TRAIN, counts, &n, &e) == 0);
    CHECK(n == 2 && counts[dog] == 2 && counts[cat] == 1 && counts[0] == 0); /* a photo counts once */
    CHECK(ac_objects_photo_counts(&ds, AC_SPLIT_NONE, counts, &n, &e) == 0);
    CHECK(n == 3 && counts[dog] == 3 && counts[cat] == 1);
    ds.n = 4;
    CHECK(ac_objects_photo_counts(&ds, AC_SPLIT_NONE, counts, &n, &e) == -1);
    CHECKF(strstr(e.msg, "caption 2 of p3.jpg"), "%s", e.msg);
}

static void test_hostile(void) {
    uint8_t p[AC_N_OBJECTS];
    ac_err e;
    /* separators only, and hyphen runs */
    CHECK(ac_objects_in_tokens("- -- --- ", p) == 0);
    CHECK(ac_objects_in_tokens("hot-", p) == 0 && ac_objects_in_tokens("-dog-", p) == 1 && p[ac_object_index("dog")]);
    CHECK(ac_objects_in_tokens("hot", p) == 0 && ac_objects_in_tokens("teddy", p) == 1);
    /* a phrase cut off at the end of the text */
    CHECK(ac_objects_in_tokens("fire", p) == 0 && ac_objects_in_tokens("a stop", p) == 0);
    /* 1 MB of tokens: every category once; and 1 MB of arbitrary bytes */
    size_t big = 1 << 20;
    char *s = malloc(big + 1);
    CHECK(s);
    size_t at = 0;
    for (int k = 0; at + 64 < big; k = (k + 1) % AC_N_OBJECTS) at += (size_t)snprintf(s + at, 64, "a %s and ", ac_object_name(k));
    CHECK(ac_objects_in_tokens(s, p) == AC_N_OBJECTS);
    uint32_t x = 12345;
    for (size_t i = 0; i < big; i++) x = x * 1103515245u + 12345u, s[i] = (char)(1 + (x >> 16) % 255);
    s[big] = 0;
    CHECK(ac_objects_in_tokens(s, p) >= 0);
    /* the tokenizer refuses over-long and invalid captions: an error, no result */
    CHECK(ac_objects_in_text(s, p, &e) == -1 && e.msg[0]);
    CHECK(ac_objects_in_text("a dog \xc3", p, &e) == -1 && e.msg[0]);
    for (int k = 0; k < AC_N_OBJECTS; k++) CHECK(p[k] == 0);
    free(s);
}

/* Vietnamese captions: UTF-8 throughout; only English loan words may name a category. */
static void test_vietnamese(void) {
    const char *path = test_shared("data/vi/captions.tsv");
    if (!path) SKIP("needs ../shared/data/vi/captions.tsv");
    ac_dataset ds;
    ac_err e;
    CHECKF(ac_dataset_load(path, NULL, &ds, &e) == 0, "%s", e.msg);
    int counts[AC_N_OBJECTS], n = 0, named = 0;
    CHECKF(ac_objects_photo_counts(&ds, AC_SPLIT_NONE, counts, &n, &e) == 0, "%s", e.msg);
    for (int k = 0; k < AC_N_OBJECTS; k++) named += counts[k];
    CHECKF(n > 2000 && named < n / 10, "%d photos, %d category mentions", n, named);
    ac_dataset_free(&ds);
}

/* One COCO reference as the candidate against the other four: people agree on objects. */
static void test_coco_leave_one_out(void) {
    const char *path = test_shared("data/coco/captions.json");
    if (!path) SKIP("needs ../shared/data/coco/captions.json");
    ac_dataset ds;
    ac_err e;
    CHECKF(ac_dataset_load(path, NULL, &ds, &e) == 0, "%s", e.msg);
    ac_eval_set s = {0};
    for (int i = 0; i < ds.n; i++)
        if (ds.images[i].n_caps >= 3)
            CHECKF(ac_eval_set_add(&s, ds.images[i].id, (const char *const *)ds.images[i].caps + 1, ds.images[i].n_caps - 1,
                                   ds.images[i].caps[0], 1, &e) == 0, "%s", e.msg);
    ac_object_scores o;
    CHECK(s.n >= 90 && ac_objects_score(&s, &o, &e) == 0);
    printf("# coco leave-one-out: %d photos, P %.3f R %.3f F1 %.3f CHAIR-i %.3f\n", o.n, o.precision, o.recall, o.f1,
           o.chair_i);
    CHECK(o.precision > 0.75 && o.recall > 0.6 && o.chair_i < 0.12 && o.mentioned > 100);
    ac_object_scores_free(&o);
    ac_eval_set_free(&s);
    ac_dataset_free(&ds);
}

int main(void) {
    RUN(test_names);
    RUN(test_table);
    RUN(test_captions);
    RUN(test_vocab_objects);
    RUN(test_join);
    RUN(test_scores);
    RUN(test_photo_counts);
    RUN(test_hostile);
    RUN(test_vietnamese);
    RUN(test_coco_leave_one_out);
    return TEST_EXIT();
}
