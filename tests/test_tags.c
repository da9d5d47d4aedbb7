/* test_tags.c: ImageNet classes from the annotation grid, and classes -> caption words.
 *  - the classifier head after the annotation layer (ac_class_head) against a float64 NumPy reference
 *    (tests/fixtures/cnn/head_ref.bin, tools/numpy_head.py) on a synthetic grid, whole and windows;
 *  - at 224 the head on Conv_1 gives the bits of the full graph (what `attncap classify` prints) and the
 *    known answers of ../shared/README.md; the captioner with classes on gives the same captions;
 *  - grid windows on hand-worked layouts;
 *  - the tag table (ac_tag_table): hostile files, aggregation on hand-made probabilities, word ids;
 *  - the WordNet walk of tools/imagenet_words on known classes (tests/imagenet_words.sh). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/captioner.h"
#include "attncap/cnn.h"
#include "attncap/image.h"
#include "attncap/tags.h"
#include "attncap/vocab.h"
#include "test.h"

#define ENCODER "encoders/mobilenet_v2_1.0_224_quant.tflite"

static float *read_floats(const char *path, size_t *n) {
    char *data;
    size_t len;
    ac_err err;
    if (ac_read_file(path, 1u << 26, &data, &len, &err) < 0) return NULL;
    *n = len / 4;
    float *f = malloc(len + 4);
    memcpy(f, data, len);
    free(data);
    return f;
}

static void head_vs_numpy(void) {
    const char *mp = test_shared(ENCODER);
    if (!mp) SKIP("needs ../shared/" ENCODER);
    enum { GH = 6, GW = 5, DIM = 1280, NC = 1001 };
    const ac_grid_window win[3] = {{1, 1, 3, 3}, {3, 2, 3, 3}, {0, 4, 6, 1}};
    size_t n_ref;
    float *ref = read_floats("tests/fixtures/cnn/head_ref.bin", &n_ref);
    CHECK(ref && n_ref == 4 * NC);
    float *grid = malloc((size_t)GH * GW * DIM * sizeof *grid), *probs = malloc(4 * NC * sizeof *probs);
    for (uint64_t i = 0; i < (uint64_t)GH * GW * DIM; i++)
        grid[i] = (float)(((i * 2654435761u) & 0xffffffffu) % 1000) * 0.006f;
    ac_err err;
    ac_encoder enc;
    ac_class_head *h;
    CHECKF(ac_encoder_open(mp, NULL, 224, 1, &enc, &err) == 0, "%s", err.msg);
    CHECKF(ac_class_head_open(&enc, &h, &err) == 0, "%s", err.msg);
    CHECK(ac_class_head_classes(h) == NC);
    CHECKF(ac_class_head_forward(h, grid, GH, GW, DIM, win, 3, probs, &err) == 0, "%s", err.msg);
    double worst = 0;
    for (int i = 0; i < 4 * NC; i++) worst = fmax(worst, fabs((double)probs[i] - ref[i]));
    printf("  head vs NumPy float64: max abs difference %.3g over 4 rows of 1001\n", worst);
    CHECK(worst < 1e-5); /* float32 sums of 1280 products against float64 */
    /* a window outside the grid, a wrong depth: errors, not reads out of bounds */
    const ac_grid_window bad = {4, 0, 3, 5};
    CHECK(ac_class_head_forward(h, grid, GH, GW, DIM, &bad, 1, probs, &err) < 0 && strstr(err.msg, "outside"));
    CHECK(ac_class_head_forward(h, grid, GH, GW, 576, NULL, 0, probs, &err) < 0 && strstr(err.msg, "576"));
    ac_class_head_free(h);
    ac_encoder_close(&enc);
    /* a layer not followed by the pool: no head, one line naming the file */
    CHECKF(ac_encoder_open(mp, "MobilenetV2/expanded_conv_13/expand/Relu6", 224, 1, &enc, &err) == 0, "%s", err.msg);
    CHECK(ac_class_head_open(&enc, &h, &err) < 0 && strstr(err.msg, mp) && strstr(err.msg, "pool") && !h);
    ac_encoder_close(&enc);
    free(grid), free(probs), free(ref);
}

/* At the native size the head run after Conv_1 is the rest of the graph: same bits as classify. */
static void head_equals_classify(void) {
    const char *mp = test_shared(ENCODER);
    const char *photos[3] = {"images/cat.bmp", "images/parrot.jpg", "images/grace_hopper.bmp"};
    const int want[3] = {286, 89, 653}; /* Egyptian cat, macaw, military uniform */
    const float want_p[3] = {0.78f, 0.998f, 0.93f};
    if (!mp) SKIP("needs ../shared/" ENCODER);
    ac_err err;
    ac_encoder enc, cls;
    ac_class_head *h;
    CHECKF(ac_encoder_open(mp, NULL, 224, 1, &enc, &err) == 0, "%s", err.msg);
    CHECKF(ac_encoder_open_classifier(mp, 1, &cls, &err) == 0, "%s", err.msg);
    CHECKF(ac_class_head_open(&enc, &h, &err) == 0, "%s", err.msg);
    float *ann = malloc(7 * 7 * 1280 * sizeof *ann), full[1001], head[1001];
    for (int k = 0; k < 3; k++) {
        const char *p = test_shared(photos[k]);
        if (!p) continue;
        ac_image img;
        CHECKF(ac_image_load(p, &img, &err) == 0, "%s", err.msg);
        CHECKF(ac_encoder_encode(&enc, &img, ann, &err) == 0, "%s", err.msg);
        CHECKF(ac_encoder_encode(&cls, &img, full, &err) == 0, "%s", err.msg);
        ac_image_free(&img);
        CHECKF(ac_class_head_forward(h, ann, 7, 7, 1280, NULL, 0, head, &err) == 0, "%s", err.msg);
        int best = 0;
        for (int i = 1; i < 1001; i++) best = head[i] > head[best] ? i : best;
        printf("  %s: head top-1 %d p=%.4f, full graph p=%.4f\n", photos[k], best, head[best], full[best]);
        CHECKF(memcmp(head, full, sizeof head) == 0, "%s: the head differs from the full graph", photos[k]);
        CHECKF(best == want[k] && fabsf(head[best] - want_p[k]) < 0.01f, "%s: top-1 %d p=%.4f", photos[k], best, head[best]);
    }
    ac_class_head_free(h);
    ac_encoder_close(&enc);
    ac_encoder_close(&cls);
    free(ann);
}

static void grid_windows(void) {
    ac_grid_window w[80];
    /* quadrants + centre at 14x14, side 7 */
    CHECK(ac_grid_windows(14, 14, 7, 2, 1, w, 80) == 5);
    const int q[5][2] = {{0, 0}, {0, 7}, {7, 0}, {7, 7}, {3, 3}};
    for (int k = 0; k < 5; k++) CHECK(w[k].y == q[k][0] && w[k].x == q[k][1] && w[k].h == 7 && w[k].w == 7);
    /* 3 per axis: 0, 3.5 -> 4, 7; the centre (3, 3) is new */
    CHECK(ac_grid_windows(14, 14, 7, 3, 1, w, 80) == 10 && w[4].y == 4 && w[4].x == 4 && w[9].y == 3);
    /* every position, the centre already among them */
    CHECK(ac_grid_windows(14, 14, 7, 8, 1, w, 80) == 64);
    for (int k = 0; k < 64; k++) CHECK(w[k].y == k / 8 && w[k].x == k % 8);
    /* side larger than the grid: clipped, one window; cap respected; nonsense gives none */
    CHECK(ac_grid_windows(7, 7, 9, 2, 1, w, 80) == 1 && w[0].h == 7 && w[0].y == 0);
    CHECK(ac_grid_windows(14, 14, 7, 8, 0, w, 10) == 10);
    CHECK(ac_grid_windows(0, 14, 7, 2, 1, w, 80) == 0 && ac_grid_windows(14, 14, 0, 2, 1, w, 80) == 0);
    /* odd leftovers: 5x6 grid, side 3, centred */
    CHECK(ac_grid_windows(5, 6, 3, 1, 0, w, 80) == 1 && w[0].y == 1 && w[0].x == 1);
}

/* The captioner with classes on: same annotations and caption; probabilities are the head's. */
static void captioner_classes(void) {
    if (!test_shared(ENCODER) || !ac_is_file("models/attncap.safetensors"))
        SKIP("needs models/attncap.safetensors and ../shared/" ENCODER);
    char encoder[4096];
    snprintf(encoder, sizeof encoder, "%s", test_shared(ENCODER)); /* test_shared's buffer is reused */
    const char *photo = test_shared("images/cat.bmp");
    if (!photo) SKIP("needs ../shared/images/cat.bmp");
    ac_err err;
    ac_captioner c;
    ac_image img;
    ac_caption a, b;
    CHECKF(ac_image_load(photo, &img, &err) == 0, "%s", err.msg);
    CHECKF(ac_captioner_init(&c, "models/attncap.safetensors", encoder, 1, &err) == 0, "%s", err.msg);
    CHECKF(ac_captioner_run(&c, &img, &a, NULL, NULL, &err) == 0, "%s", err.msg);
    size_t n_ann = (size_t)c.L * c.D;
    float *ann = malloc(n_ann * sizeof *ann);
    memcpy(ann, c.ann, n_ann * sizeof *ann);
    ac_grid_window w[8];
    int nw = ac_grid_windows(c.enc.grid_h, c.enc.grid_w, 7, 2, 1, w, 8);
    CHECKF(ac_captioner_want_classes(&c, w, nw, &err) == 0, "%s", err.msg);
    CHECK(c.n_classes == 1001 && c.n_windows == 5);
    CHECKF(ac_captioner_run(&c, &img, &b, NULL, NULL, &err) == 0, "%s", err.msg);
    CHECK(memcmp(ann, c.ann, n_ann * sizeof *ann) == 0);
    CHECK(a.n == b.n && memcmp(a.words, b.words, (size_t)a.n * sizeof *a.words) == 0 && a.score == b.score);
    float *want = malloc(6 * 1001 * sizeof *want);
    ac_class_head *h;
    CHECKF(ac_class_head_open(&c.enc, &h, &err) == 0, "%s", err.msg);
    CHECKF(ac_class_head_forward(h, ann, c.enc.grid_h, c.enc.grid_w, c.D, w, nw, want, &err) == 0, "%s", err.msg);
    CHECK(memcmp(want, c.probs, 6 * 1001 * sizeof *want) == 0);
    /* a lane computes the same */
    ac_captioner_lane lane;
    ac_caption l;
    CHECKF(ac_captioner_lane_open(&c, 1, &lane, &err) == 0, "%s", err.msg);
    CHECKF(ac_captioner_lane_run(&c, &lane, &img, &l, NULL, NULL, &err) == 0, "%s", err.msg);
    CHECK(lane.probs && memcmp(want, lane.probs, 6 * 1001 * sizeof *want) == 0);
    int best = 0;
    for (int i = 1; i < 1001; i++) best = c.probs[i] > c.probs[best] ? i : best;
    printf("  cat.bmp at 448, whole photo: class %d p=%.3f\n", best, c.probs[best]);
    CHECK(best >= 282 && best <= 286); /* a domestic cat (tabby ... Egyptian cat) */
    float mx[1001];
    ac_class_probs_max(c.probs, 1 + nw, 1001, mx);
    for (int i = 0; i < 1001; i++) {
        float m = 0;
        for (int r = 0; r < 1 + nw; r++) m = fmaxf(m, c.probs[r * 1001 + i]);
        CHECK(mx[i] == m);
    }
    printf("  cat.bmp, max over photo and 5 windows: class %d p=%.3f\n", best, mx[best]);
    ac_caption_free(&l);
    ac_captioner_lane_close(&lane);
    ac_class_head_free(h);
    ac_caption_free(&a), ac_caption_free(&b);
    ac_captioner_free(&c);
    ac_image_free(&img);
    free(ann), free(want);
}

/* ---- the table ---- */

static const char TABLE[] = "# comment\n"
                            "0\t\tbackground\t\t0\t\t\n"
                            "1\tn02124075\tEgyptian cat\tcat\t3000\tcat|cats\t0:egyptian cat=0 2:cat=3000\n"
                            "2\tn02123045\ttabby\tcat\t3000\tcat|cats|kitty\n"
                            "\n"
                            "3\tn02099601\tgolden retriever\tdog\t13000\tdog|dogs\r\n"
                            "4\tn07697537\thotdog\thot dog\t412\thot dog|hot dogs|hotdog\n"
                            "5\tn02391049\tzebra\tzebra\t1300\tzebra|zebras";

static int parse(const char *text, ac_tag_table **t, ac_err *err) { return ac_tag_table_parse(text, strlen(text), "T.tsv", t, err); }

static void table_hostile(void) {
    ac_tag_table *t;
    ac_err err;
    CHECKF(parse(TABLE, &t, &err) == 0, "%s", err.msg);
    CHECK(ac_tag_table_classes(t) == 6 && ac_tag_table_words(t) == 4);
    CHECK(ac_tag_class_word(t, 0) == -1 && ac_tag_class_word(t, 1) == ac_tag_class_word(t, 2));
    CHECK(ac_tag_class_word(t, 6) == -1 && ac_tag_class_word(t, -1) == -1 && ac_tag_word(t, 4) == NULL);
    const char *const *forms;
    int w = ac_tag_class_word(t, 2);
    CHECK(!strcmp(ac_tag_word(t, w), "cat") && ac_tag_word_forms(t, w, &forms) == 3 && !strcmp(forms[2], "kitty"));
    CHECK(!strcmp(ac_tag_word(t, ac_tag_class_word(t, 3)), "dog")); /* CR LF line */
    ac_tag_table_free(t);
    /* every truncation of a good table: loads or one error line naming the file, never a crash */
    for (size_t n = 0; n < sizeof TABLE - 1; n++) {
        int rc = ac_tag_table_parse(TABLE, n, "T.tsv", &t, &err);
        CHECK(rc == 0 ? t != NULL : t == NULL && !strncmp(err.msg, "T.tsv", 5) && !strchr(err.msg, '\n'));
        ac_tag_table_free(t);
    }
    static const struct {
        const char *text, *why;
    } bad[] = {
        {"", "no classes"},
        {"# only a comment\n", "no classes"},
        {"1\t\tbackground\t\t0\t\n", "out of order"},
        {"0\t\tbackground\t\t0\n", "fields"},
        {"0\t\tbackground\tcat\t0\t\n", "forms"},
        {"0\t\tbackground\t\t0\tcat\n", "forms"},
        {"0\tn1\tx\tcat\t5\tcat\n", "synset"},
        {"0\tn02124075\tx\tcat\t-5\tcat\n", "count"},
        {"0\tn02124075\tx\tcat\t\tcat\n", "count"},
        {"0\tn02124075\tx\tcat\t5\tcats|cat\n", "first form"},
        {"0\tn02124075\tx\tcat\t5\tcat||cats\n", "form"},
        {"0\tn02124075\tx\tcat\t5\tcat|a b c d e f g h i\n", "form"},
        {"0\tn02124075\tx\tcat  dog\t5\tcat  dog\n", "word"},
        {"0\tn02124075\tx\t cat\t5\t cat\n", "word"},
        {"x\tn02124075\tx\tcat\t5\tcat\n", "index"},
        {"99999999\tn02124075\tx\tcat\t5\tcat\n", "index"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        CHECKF(parse(bad[k].text, &t, &err) < 0 && t == NULL, "case %zu loaded", k);
        CHECKF(strstr(err.msg, "T.tsv") && strstr(err.msg, bad[k].why), "case %zu: %s", k, err.msg);
    }
    /* too many forms, an over-long field, a NUL byte */
    char big[8192];
    int n = snprintf(big, sizeof big, "0\tn02124075\tx\tcat\t5\tcat");
    for (int f = 0; f < 40; f++) n += snprintf(big + n, sizeof big - (size_t)n, "|cat%d", f);
    snprintf(big + n, sizeof big - (size_t)n, "\n");
    CHECK(parse(big, &t, &err) < 0 && strstr(err.msg, "forms"));
    n = snprintf(big, sizeof big, "0\tn02124075\t");
    memset(big + n, 'x', 5000);
    snprintf(big + n + 5000, sizeof big - (size_t)n - 5000, "\tcat\t5\tcat\n");
    CHECK(parse(big, &t, &err) < 0 && strstr(err.msg, "longer"));
    const char nul[] = "0\tn02124075\tx\tc\0t\t5\tcat\n";
    CHECK(ac_tag_table_parse(nul, sizeof nul - 1, "T.tsv", &t, &err) < 0 && strstr(err.msg, "NUL"));
    CHECK(ac_tag_table_load("/nonexistent/words.tsv", &t, &err) < 0 && strstr(err.msg, "/nonexistent/words.tsv"));
}

/* Sums within a row (classes sharing a word), maximum over rows, threshold, order, cap. */
static void tags_aggregate(void) {
    ac_tag_table *t;
    ac_err err;
    CHECKF(parse(TABLE, &t, &err) == 0, "%s", err.msg);
    const int cat = ac_tag_class_word(t, 1), dog = ac_tag_class_word(t, 3), hot = ac_tag_class_word(t, 4),
              zebra = ac_tag_class_word(t, 5);
    /* background 0.1 (no word), cat classes 0.3 + 0.25, dog 0.2, hot dog 0.15, zebra 0 */
    const float probs[2][6] = {{0.1f, 0.3f, 0.25f, 0.2f, 0.15f, 0.0f}, {0.0f, 0.05f, 0.0f, 0.9f, 0.0f, 0.05f}};
    ac_tag tags[8];
    int n = ac_tags_from_probs(t, probs[0], 1, 6, 0.15f, tags, 8, &err);
    CHECK(n == 3 && tags[0].word == cat && tags[1].word == dog && tags[2].word == hot);
    CHECK_NEAR(tags[0].prob, 0.55, 1e-6);
    CHECK_NEAR(tags[2].prob, 0.15, 1e-7);
    /* with the window row: dog 0.9 first, cat keeps its whole-photo 0.55, zebra 0.05 under the threshold */
    n = ac_tags_from_probs(t, probs[0], 2, 6, 0.05f, tags, 8, &err);
    CHECK(n == 4 && tags[0].word == dog && tags[1].word == cat && tags[2].word == hot && tags[3].word == zebra);
    CHECK_NEAR(tags[0].prob, 0.9, 1e-7);
    CHECK(ac_tags_from_probs(t, probs[0], 2, 6, 0.5f, tags, 1, &err) == 1 && tags[0].word == dog);
    CHECK(ac_tags_from_probs(t, probs[0], 2, 6, 0.95f, tags, 8, &err) == 0);
    CHECK(ac_tags_from_probs(t, probs[0], 1, 1001, 0.1f, tags, 8, &err) < 0 && strstr(err.msg, "1001"));
    CHECK(ac_tags_from_probs(t, probs[0], 0, 6, 0.1f, tags, 8, &err) < 0);
    /* word ids: "cats", "hotdog" and zebra are not in the vocabulary; "hot dogs" is (two tokens) */
    ac_vocab *v;
    CHECK(ac_vocab_from_json("[\"<pad>\",\"<start>\",\"<end>\",\"<unk>\",\"a\",\"cat\",\"dogs\",\"hot\",\"dog\",\"kitty\"]",
                             &v, &err) == 0);
    n = ac_tags_from_probs(t, probs[0], 2, 6, 0.05f, tags, 8, &err);
    ac_tag_ids ids[8];
    int dropped[8], nd = -1;
    CHECK(ac_tags_to_ids(t, v, tags, n, ids, dropped, &nd, &err) == 3 && nd == 1 && dropped[0] == 3);
    CHECK(ids[0].word == dog && ids[0].n_alts == 2 && ids[0].alts[0].n == 1 && ids[0].alts[0].ids[0] == 8 &&
          ids[0].alts[1].ids[0] == 6);
    CHECK(ids[1].word == cat && ids[1].n_alts == 2 && ids[1].alts[0].ids[0] == 5 && ids[1].alts[1].ids[0] == 9);
    CHECK(ids[2].word == hot && ids[2].n_alts == 2 && ids[2].alts[0].n == 2 && ids[2].alts[0].ids[0] == 7 &&
          ids[2].alts[0].ids[1] == 8 && ids[2].alts[1].n == 2 && ids[2].alts[1].ids[1] == 6);
    CHECK_NEAR(ids[2].prob, 0.15, 1e-7);
    /* a form spelling a special token is no word of the vocabulary */
    ac_tag_table *sp;
    CHECK(parse("0\tn02124075\tx\tcat\t5\tcat|<end>|a <pad>\n", &sp, &err) == 0);
    ac_tag one = {0, 1.0f};
    CHECK(ac_tags_to_ids(sp, v, &one, 1, ids, NULL, NULL, &err) == 1 && ids[0].n_alts == 1 && ids[0].alts[0].ids[0] == 5);
    ac_tag_table_free(sp);
    ac_tag oob = {99, 1.0f};
    CHECK(ac_tags_to_ids(t, v, &oob, 1, ids, NULL, NULL, &err) < 0 && strstr(err.msg, "99"));
    ac_vocab_free(v);
    ac_tag_table_free(t);
}

/* The committed table loads, covers the 1001 classes, and gives the expected words. */
static void committed_table(void) {
    ac_tag_table *t;
    ac_err err;
    CHECKF(ac_tag_table_load("models/imagenet_words.tsv", &t, &err) == 0, "%s", err.msg);
    CHECK(ac_tag_table_classes(t) == 1001 && ac_tag_class_word(t, 0) == -1);
    const struct {
        int cls;
        const char *word;
    } want[] = {{286, "cat"}, {282, "cat"}, {208, "dog"}, {780, "bus"}, {935, "hot dog"}, {340, "horse"},
                {964, "pizza"}, {621, "laptop"}, {341, "zebra"}};
    for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
        const char *w = ac_tag_word(t, ac_tag_class_word(t, want[k].cls));
        CHECKF(w && !strcmp(w, want[k].word), "class %d: %s, expected %s", want[k].cls, w ? w : "(none)", want[k].word);
    }
    const char *m = ac_tag_word(t, ac_tag_class_word(t, 89)); /* macaw */
    CHECK(m && (!strcmp(m, "parrot") || !strcmp(m, "bird")));
    ac_tag_table_free(t);
}

int main(void) {
    RUN(head_vs_numpy);
    RUN(head_equals_classify);
    RUN(grid_windows);
    RUN(captioner_classes);
    RUN(table_hostile);
    RUN(tags_aggregate);
    RUN(committed_table);
    return TEST_EXIT();
}
