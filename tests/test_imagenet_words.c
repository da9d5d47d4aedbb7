/* test_imagenet_words.c: a copy model's ImageNet words (imagenet_words.h) on hand-made tables,
 * vocabularies and probabilities, each answer worked out here:
 *  - the words a model gets from a tag table (COCO's words left to the detector, counts first, one-token
 *    forms of the vocabulary, a form to one word only, at most max);
 *  - the model file's record: written and read back, and every malformed record refused in one line;
 *  - a caption's ImageNet words, a photo's regions of them (summed classes, the best window) against a
 *    brute-force loop over every word, row and class, and the merge with the detector's regions. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/imagenet_words.h"
#include "attncap/objects.h"
#include "attncap/tags.h"
#include "attncap/vocab.h"
#include "test.h"

/* classes 1-2 a cat (COCO), 3-4 a butterfly, 5 a fountain, 6 a "hot dog" (two tokens), 7 a castle
 * (not in the vocabulary), 8 a moth whose only one-token form, "butterfly", the butterfly took */
static const char TABLE[] = "0\t\tbackground\t\t0\t\t\n"
                            "1\tn02124075\tEgyptian cat\tcat\t3000\tcat|cats\n"
                            "2\tn02123045\ttabby\tcat\t3000\tcat|cats|moggy\n"
                            "3\tn02276258\tadmiral\tbutterfly\t500\tbutterfly|butterflies\n"
                            "4\tn02277742\tringlet\tbutterfly\t500\tbutterfly|butterflies\n"
                            "5\tn03388043\tfountain\tfountain\t900\tfountain|fountains|water fountain\n"
                            "6\tn07697537\thotdog\thot dog\t412\thot dog|hot dogs\n"
                            "7\tn02980441\tcastle\tcastle\t700\tcastle|castles\n"
                            "8\tn02280649\tmoth\tmoth\t100\tmoth|butterfly\n";
static const char VOCAB[] = "[\"<pad>\",\"<start>\",\"<end>\",\"<unk>\",\"a\",\"cat\",\"butterfly\",\"butterflies\","
                            "\"fountain\",\"hot\",\"dog\",\"moth\",\"water\",\"moggy\"]";
enum { W_CAT = 5, W_BUTTERFLY, W_BUTTERFLIES, W_FOUNTAIN, W_HOT, W_DOG, W_MOTH, W_WATER, W_MOGGY, NV };

static int load(ac_tag_table **t, ac_vocab **v) {
    ac_err err;
    if (ac_tag_table_parse(TABLE, strlen(TABLE), "T.tsv", t, &err)) return printf("# %s\n", err.msg), -1;
    if (ac_vocab_from_json(VOCAB, v, &err)) return printf("# %s\n", err.msg), -1;
    return 0;
}

static void test_from_table(void) {
    ac_tag_table *t;
    ac_vocab *v;
    ac_err err;
    CHECK(load(&t, &v) == 0);
    ac_imagenet_words w;
    CHECKF(ac_imagenet_words_from_table(t, v, 10, &w, &err) == 0, "%s", err.msg);
    /* counts first: fountain 900, butterfly 500, moth 100; cat is COCO's (and so its "moggy", though
     * moggy alone names nothing), hot dog two tokens, castle not in the vocabulary */
    CHECKF(w.n == 3 && w.n_classes == 9, "%d words, %d classes", w.n, w.n_classes);
    CHECK(!strcmp(w.word[0], "fountain") && !strcmp(w.word[1], "butterfly") && !strcmp(w.word[2], "moth"));
    CHECK(w.form_off[1] - w.form_off[0] == 1 && w.form_id[w.form_off[0]] == W_FOUNTAIN); /* "water fountain": two tokens */
    CHECK(w.form_off[2] - w.form_off[1] == 2 && w.form_id[w.form_off[1]] == W_BUTTERFLY &&
          w.form_id[w.form_off[1] + 1] == W_BUTTERFLIES);
    CHECK(w.form_off[3] - w.form_off[2] == 1 && w.form_id[w.form_off[2]] == W_MOTH); /* butterfly stays the butterfly's */
    const short want[9] = {-1, -1, -1, 1, 1, 0, -1, -1, 2};
    for (int c = 0; c < 9; c++) CHECKF(w.class_word[c] == want[c], "class %d -> %d", c, w.class_word[c]);
    short cat[NV];
    for (int i = 0; i < NV; i++) cat[i] = -1;
    ac_imagenet_words_categories(&w, cat);
    CHECK(cat[W_FOUNTAIN] == AC_COPY_CATEGORIES && cat[W_BUTTERFLIES] == AC_COPY_CATEGORIES + 1 &&
          cat[W_MOTH] == AC_COPY_CATEGORIES + 2 && cat[W_CAT] == -1 && cat[W_WATER] == -1 && cat[W_MOGGY] == -1);
    CHECK(!strcmp(ac_region_label(&w, AC_COPY_CATEGORIES + 1), "butterfly") && !strcmp(ac_region_label(&w, 0), "person"));
    CHECK(ac_region_label(&w, AC_COPY_CATEGORIES + 3) == NULL && ac_region_label(NULL, AC_COPY_CATEGORIES) == NULL);
    ac_imagenet_words_free(&w);
    CHECK(ac_imagenet_words_from_table(t, v, 2, &w, &err) == 0 && w.n == 2 && w.class_word[8] == -1); /* at most max */
    ac_imagenet_words_free(&w);
    ac_tag_table_free(t);
    ac_vocab_free(v);
}

static void test_record(void) {
    ac_tag_table *t;
    ac_vocab *v;
    ac_err err;
    CHECK(load(&t, &v) == 0);
    ac_imagenet_words w, back;
    CHECK(ac_imagenet_words_from_table(t, v, 10, &w, &err) == 0);
    char *json = ac_imagenet_words_json(&w, v);
    CHECK(json && strstr(json, "{\"word\":\"butterfly\",\"forms\":[\"butterfly\",\"butterflies\"],\"classes\":[3,4]}"));
    CHECKF(ac_imagenet_words_parse(json, v, 3, &back, &err) == 0, "%s", err.msg);
    int same = back.n == w.n && back.n_classes == w.n_classes;
    for (int j = 0; same && j <= w.n; j++) same = back.form_off[j] == w.form_off[j] && (j == w.n || !strcmp(back.word[j], w.word[j]));
    for (int f = 0; same && f < w.form_off[w.n]; f++) same = back.form_id[f] == w.form_id[f];
    for (int c = 0; same && c < w.n_classes; c++) same = back.class_word[c] == w.class_word[c];
    CHECK(same);
    ac_imagenet_words_free(&back);
    CHECK(ac_imagenet_words_parse(json, v, 2, &back, &err) < 0 && strstr(err.msg, "3 words, the config says 2"));
    free(json);
    static const struct {
        const char *json, *why;
    } bad[] = {
        {"[]", "not an object"},
        {"{\"classes\":9}", "not an object"},
        {"{\"classes\":0,\"words\":[]}", "not an object"},
        {"{\"classes\":9,\"words\":[],\"extra\":1}", "unknown key 'extra'"},
        {"{\"classes\":9,\"words\":[{\"word\":\"moth\",\"forms\":[\"moth\"]}]}", "word 0 is not"},
        {"{\"classes\":9,\"words\":[{\"word\":\"moth\",\"forms\":[],\"classes\":[8]}]}", "word 0 is not"},
        {"{\"classes\":9,\"words\":[{\"word\":\"x\",\"forms\":[\"zebra\"],\"classes\":[8]}]}", "not in the vocabulary"},
        {"{\"classes\":9,\"words\":[{\"word\":\"x\",\"forms\":[\"cat\"],\"classes\":[8]}]}", "names COCO's cat"},
        {"{\"classes\":9,\"words\":[{\"word\":\"x\",\"forms\":[\"moth\",\"moth\"],\"classes\":[8]}]}", "another word's too"},
        {"{\"classes\":9,\"words\":[{\"word\":\"x\",\"forms\":[\"moth\"],\"classes\":[9]}]}", "out of range"},
        {"{\"classes\":9,\"words\":[{\"word\":\"x\",\"forms\":[\"moth\"],\"classes\":[1.5]}]}", "out of range"},
        {"{\"classes\":9,\"words\":[{\"word\":\"x\",\"forms\":[\"moth\"],\"classes\":[8,8]}]}", "another word's"},
        {"{\"classes\":9,\"words\":[{\"word\":\"x\",\"forms\":[\"moth\"],\"classes\":[8]},"
         "{\"word\":\"y\",\"forms\":[\"water\"],\"classes\":[8]}]}", "another word's"},
        {"{\"classes\":9,\"words\":[{\"word\":\"x\",\"forms\":[\"moth\"],\"classes\":[]},"
         "{\"word\":\"y\",\"forms\":[\"moth\"],\"classes\":[]}]}", "another word's too"},
        {"not json", "not an object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const int n = strstr(bad[i].json, "\"y\"") ? 2 : strstr(bad[i].json, "\"word\"") ? 1 : 0;
        CHECKF(ac_imagenet_words_parse(bad[i].json, v, n, &back, &err) < 0 && strstr(err.msg, bad[i].why),
               "%s: %s", bad[i].json, err.msg);
        CHECK(back.n == 0 && back.word == NULL); /* nothing left behind */
    }
    ac_imagenet_words_free(&w);
    ac_tag_table_free(t);
    ac_vocab_free(v);
}

static void test_in_caption(void) {
    ac_tag_table *t;
    ac_vocab *v;
    ac_err err;
    CHECK(load(&t, &v) == 0);
    ac_imagenet_words w;
    CHECK(ac_imagenet_words_from_table(t, v, 10, &w, &err) == 0);
    signed char coco[NV];
    short wc[NV]; /* as the model's copy table has them: COCO's categories, then the ImageNet words */
    ac_objects_of_vocab(v, coco);
    for (int i = 0; i < NV; i++) wc[i] = coco[i];
    ac_imagenet_words_categories(&w, wc);
    CHECK(wc[W_CAT] >= 0 && wc[W_CAT] < AC_COPY_CATEGORIES); /* cat: COCO's, which the lookup passes over */
    const int ids[] = {4, W_BUTTERFLIES, W_CAT, W_FOUNTAIN, W_BUTTERFLY, W_MOTH};
    unsigned char cat[8] = {17}; /* a COCO category there already */
    int n = 1;
    ac_imagenet_words_in_caption(wc, ids, 6, cat, &n, 8);
    CHECKF(n == 4 && cat[0] == 17 && cat[1] == AC_COPY_CATEGORIES + 1 && cat[2] == AC_COPY_CATEGORIES &&
           cat[3] == AC_COPY_CATEGORIES + 2, "%d: %d %d %d", n, cat[1], cat[2], cat[3]); /* each once, in order */
    n = 1;
    ac_imagenet_words_in_caption(wc, ids, 6, cat, &n, 2); /* no more than cap */
    CHECK(n == 2);
    ac_imagenet_words_free(&w);
    ac_tag_table_free(t);
    ac_vocab_free(v);
}

/* The regions as imagenet_words.h says, by brute force: for each word, each row's sum over all
 * classes that mean it; the best row; kept from min_score; then sorted by score. */
static int brute_regions(const ac_imagenet_words *w, const float *probs, int rows, const ac_grid_window *win, int gh,
                         int gw, float min_score, ac_region *out) {
    int n = 0;
    for (int j = 0; j < w->n; j++) {
        double best = -1;
        int at = 0;
        for (int r = 0; r < rows; r++) {
            double s = 0;
            for (int c = 0; c < w->n_classes; c++) s += w->class_word[c] == j ? probs[r * w->n_classes + c] : 0;
            if (s > best) best = s, at = r;
        }
        if (best < min_score) continue;
        ac_region g = {0, 0, 1, 1, (float)best, AC_COPY_CATEGORIES + j};
        if (at) {
            const ac_grid_window *q = &win[at - 1];
            g = (ac_region){(float)q->x / gw, (float)q->y / gh, (float)(q->x + q->w) / gw, (float)(q->y + q->h) / gh,
                            (float)best, AC_COPY_CATEGORIES + j};
        }
        out[n++] = g;
    }
    for (int a = 0; a < n; a++) /* stable: equal scores keep the words' order */
        for (int b = n - 1; b > a; b--)
            if (out[b].score > out[b - 1].score) {
                ac_region x = out[b];
                out[b] = out[b - 1], out[b - 1] = x;
            }
    return n;
}

static void test_regions(void) {
    ac_imagenet_words w;
    ac_err err;
    enum { NW = 40, NC = 120, ROWS = 3, GH = 14, GW = 10 };
    CHECK(ac_imagenet_words_alloc(&w, NW, NW, NC, &err) == 0);
    for (int c = 0; c < NC; c++) w.class_word[c] = (short)(c % 7 == 3 ? -1 : c % NW);
    const ac_grid_window win[ROWS - 1] = {{0, 0, 7, 5}, {7, 5, 7, 5}};
    static float probs[ROWS * NC];
    unsigned s = 12345;
    for (int trial = 0; trial < 50; trial++) {
        for (int r = 0; r < ROWS; r++) { /* a softmax-like row: a few large values, the rest small */
            double sum = 0;
            for (int c = 0; c < NC; c++) {
                s = s * 1103515245u + 12345u;
                float x = (float)((s >> 8) % 1000) / 1000.0f;
                probs[r * NC + c] = x > 0.97f ? x * 20 : x * 0.05f;
                sum += probs[r * NC + c];
            }
            for (int c = 0; c < NC; c++) probs[r * NC + c] = (float)(probs[r * NC + c] / sum);
        }
        ac_region got[AC_REGIONS_MAX], want[NW];
        const float min_score = trial % 2 ? 0.2f : 0.05f;
        const int n = ac_imagenet_words_regions(&w, probs, ROWS, win, GH, GW, min_score, got, AC_REGIONS_MAX);
        const int nw = brute_regions(&w, probs, ROWS, win, GH, GW, min_score, want);
        CHECKF(n == (nw < AC_REGIONS_MAX ? nw : AC_REGIONS_MAX), "trial %d: %d regions, brute force %d", trial, n, nw);
        for (int k = 0; k < n; k++) {
            CHECKF(got[k].category == want[k].category && fabsf(got[k].score - want[k].score) < 1e-5f &&
                       got[k].x0 == want[k].x0 && got[k].y1 == want[k].y1,
                   "trial %d region %d: %d %g vs %d %g", trial, k, got[k].category, got[k].score, want[k].category,
                   want[k].score);
        }
        const int cap = 2, nc = ac_imagenet_words_regions(&w, probs, ROWS, win, GH, GW, min_score, got, cap);
        CHECK(nc == (nw < cap ? nw : cap) && (nc < 1 || got[0].category == want[0].category));
    }
    /* a tie between rows: the first (the whole photo before a window) */
    memset(probs, 0, sizeof probs);
    probs[0 * NC + 1] = probs[1 * NC + 1] = probs[2 * NC + 1] = 0.5f;
    ac_region g[1];
    CHECK(ac_imagenet_words_regions(&w, probs, ROWS, win, GH, GW, 0.2f, g, 1) == 1 && g[0].category == AC_COPY_CATEGORIES + 1 &&
          g[0].x0 == 0 && g[0].x1 == 1 && g[0].score == 0.5f);
    probs[0 * NC + 1] = 0.25f; /* now the first window's */
    CHECK(ac_imagenet_words_regions(&w, probs, ROWS, win, GH, GW, 0.2f, g, 1) == 1 && g[0].x1 == 0.5f && g[0].y1 == 0.5f);
    ac_imagenet_words_free(&w);
}

static void test_merge(void) {
    const ac_region a[3] = {{0, 0, 1, 1, 0.9f, 1}, {0, 0, 1, 1, 0.5f, 2}, {0, 0, 1, 1, 0.3f, 3}};
    const ac_region b[2] = {{0, 0, 1, 1, 0.5f, 80}, {0, 0, 1, 1, 0.4f, 81}};
    ac_region out[5];
    int n = ac_regions_merge(a, 3, b, 2, 5, out);
    const int want[5] = {1, 2, 80, 81, 3}; /* by score, the detector's first on a tie */
    CHECK(n == 5);
    for (int k = 0; k < n; k++) CHECKF(out[k].category == want[k], "%d: %d", k, out[k].category);
    CHECK(ac_regions_merge(a, 3, b, 2, 2, out) == 2 && out[1].category == 2);
    CHECK(ac_regions_merge(a, 0, b, 2, 4, out) == 2 && out[0].category == 80);
    CHECK(ac_regions_merge(a, 3, b, 0, 4, out) == 3 && out[2].category == 3);
}

int main(void) {
    RUN(test_from_table);
    RUN(test_record);
    RUN(test_in_caption);
    RUN(test_regions);
    RUN(test_merge);
    return TEST_EXIT();
}
