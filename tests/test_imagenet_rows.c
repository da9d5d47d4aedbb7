/* test_imagenet_rows.c: ImageNet words' regions where they are made, on the samples (needs ../shared's
 * encoder and detector):
 *  - the captioner: the shipped model given the words of models/imagenet_words.tsv (config.imagenet_words)
 *    gives the kite photo regions of words COCO lacks, each scored as the classifier head says when run
 *    here on the photo's own annotation grid and summed here class by class, its box the window that
 *    scored best, and labelled with its word in the caption's JSON;
 *  - training and scoring from features (ac_imagenet_words_add_to_rows) give a cached photo the same
 *    regions of its words as the captioner gives the photo, bit for bit. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attncap/attncap.h"
#include "attncap/captioner.h"
#include "attncap/imagenet_words.h"
#include "attncap/model.h"
#include "attncap/tags.h"
#include "test.h"

#define ENCODER "encoders/mobilenet_v2_1.0_224_quant.tflite"
#define DETECTOR "encoders/yolox_nano.tflite"
static const char *const PHOTOS[] = {"samples/kite.jpg", "samples/dog.jpg", "samples/eagle.jpg"};
enum { N_PHOTOS = 3 };

static char dir[64];

/* The shipped model with the table's words, saved in dir; NULL if the files are missing. */
static const char *imagenet_model(ac_err *err) {
    static char path[128];
    ac_model m;
    ac_tag_table *t;
    if (ac_model_load("models/attncap.safetensors", &m, err)) return NULL;
    if (ac_tag_table_load("models/imagenet_words.tsv", &t, err)) return ac_model_free(&m), NULL;
    int rc = ac_imagenet_words_from_table(t, m.vocab, AC_IMAGENET_WORDS_MAX, &m.imagenet, err);
    ac_tag_table_free(t);
    m.dec.cfg.imagenet_words = m.imagenet.n;
    snprintf(path, sizeof path, "%s/m.safetensors", dir);
    if (!rc) rc = ac_model_save(&m, path, 1, NULL, err);
    ac_model_free(&m);
    return rc ? NULL : path;
}

/* word j's score in probs (rows of n classes) by a plain loop, and its best row */
static double word_score(const ac_imagenet_words *w, int j, const float *probs, int rows, int *best_row) {
    double best = 0;
    for (int r = 0; r < rows; r++) {
        double s = 0;
        for (int c = 0; c < w->n_classes; c++)
            if (w->class_word[c] == j) s += probs[(size_t)r * w->n_classes + c];
        if (s > best) best = s, *best_row = r;
    }
    return best;
}

static void test_captioner_and_rows(void) {
    const char *enc = test_shared(ENCODER), *det = test_shared(DETECTOR);
    if (!enc || !det) SKIP("needs ../shared/" ENCODER " and " DETECTOR);
    if (access("models/attncap.safetensors", R_OK) || access("models/imagenet_words.tsv", R_OK))
        SKIP("run from the repository (models/)");
    ac_err err;
    snprintf(dir, sizeof dir, "/tmp/attncap_inet_XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    const char *mp = imagenet_model(&err);
    CHECKF(mp, "%s", err.msg);
    setenv("ATTNCAP_DETECTOR", det, 1);
    ac_captioner c;
    CHECKF(ac_captioner_init(&c, mp, enc, 2, &err) == 0, "%s", err.msg);
    const ac_imagenet_words *w = &c.model.imagenet;
    CHECKF(w->n > 100 && c.head && c.n_classes == 1001 && c.n_windows == AC_NAMING_WINDOWS, "%d words", w->n);
    ac_class_head *head;
    CHECK(ac_class_head_open(&c.enc, &head, &err) == 0);
    ac_region got[N_PHOTOS][AC_REGIONS_MAX];
    int n_got[N_PHOTOS], imagenet_seen = 0;
    for (int p = 0; p < N_PHOTOS; p++) {
        int mw, mh;
        ac_image im, sq;
        ac_caption cap;
        ac_encoder_min_photo(&c.enc, &mw, &mh);
        CHECK(ac_image_load_min(PHOTOS[p], mw, mh, &im, &err) == 0 && ac_captioner_prepare(&c, &im, &sq, &err) == 0);
        CHECKF(ac_captioner_run(&c, &sq, &cap, NULL, NULL, &err) == 0, "%s", err.msg);
        n_got[p] = cap.n_regions;
        memcpy(got[p], cap.regions, sizeof *cap.regions * (size_t)cap.n_regions);
        /* the classes, here, from the grid the captioner encoded (its ann's first cells) */
        float probs[(1 + AC_NAMING_WINDOWS) * 1001];
        ac_grid_window win[AC_NAMING_WINDOWS];
        const int nw = ac_grid_naming_windows(c.grid_h, c.grid_w, win);
        CHECK(ac_class_head_forward(head, c.ann, c.grid_h, c.grid_w, c.D, win, nw, probs, &err) == 0);
        float worst_kept = 1;
        for (int k = 0; k < cap.n_regions; k++) worst_kept = fminf(worst_kept, cap.regions[k].score);
        for (int j = 0; j < w->n; j++) {
            int row = 0, at = -1;
            const double s = word_score(w, j, probs, 1 + nw, &row);
            for (int k = 0; k < cap.n_regions; k++)
                if (cap.regions[k].category == AC_COPY_CATEGORIES + j) at = k;
            if (at < 0) { /* not kept: below the model's floor, or the regions were full of better ones */
                CHECKF(s < c.model.dec.cfg.region_min_score || (cap.n_regions == c.model.dec.cfg.regions && s <= worst_kept),
                       "%s: %s scored %g and is not a region", PHOTOS[p], w->word[j], s);
                continue;
            }
            imagenet_seen++;
            const ac_region *g = &cap.regions[at];
            CHECKF(fabs(g->score - s) < 1e-6, "%s: %s %g, summed here %g", PHOTOS[p], w->word[j], g->score, s);
            const float x0 = row ? (float)win[row - 1].x / c.grid_w : 0, y1 = row ? (float)(win[row - 1].y + win[row - 1].h) / c.grid_h : 1;
            CHECKF(g->x0 == x0 && g->y1 == y1, "%s: %s's box", PHOTOS[p], w->word[j]);
        }
        if (p == 0) { /* its JSON labels the word */
            char *json = ac_caption_json(PHOTOS[p], &cap, &c.model, NULL, 0, 0, 0, 0);
            int labelled = 0;
            for (int k = 0; json && k < cap.n_regions; k++) {
                const char *word = ac_imagenet_words_name(w, cap.regions[k].category);
                char want[128];
                snprintf(want, sizeof want, "\"label\":\"%s\"", word ? word : "");
                labelled += word && strstr(json, want) != NULL;
            }
            CHECKF(json && labelled > 0, "%s", json ? json : "no JSON");
            free(json);
        }
        ac_caption_free(&cap);
        ac_image_free(&im), ac_image_free(&sq);
    }
    CHECKF(imagenet_seen > 0, "no ImageNet word's region in the samples");
    /* the same photos through a feature cache (float32, read as the captioner reads them) */
    char cache[96];
    snprintf(cache, sizeof cache, "%s/features", dir);
    ac_featurizer *f;
    CHECK(ac_featurizer_open(&f, &err) == 0);
    CHECK(ac_featurizer_set(f, "encoder", enc, &err) == 0 && ac_featurizer_set(f, "threads", "2", &err) == 0);
    CHECKF(ac_featurizer_run(f, cache, PHOTOS, N_PHOTOS, NULL, NULL, NULL, &err) == 0, "%s", err.msg);
    ac_featurizer_close(f);
    ac_feature_cache fc;
    CHECKF(ac_features_load(cache, &fc, &err) == 0 && fc.n == N_PHOTOS, "%s", err.msg);
    ac_region rows[N_PHOTOS * AC_REGIONS_MAX];
    unsigned char n_rows[N_PHOTOS] = {0};
    ac_rows_regions rr = {rows, n_rows, AC_REGIONS_MAX};
    CHECKF(ac_imagenet_words_add_to_rows(w, &fc, mp, c.model.dec.cfg.region_min_score, AC_REGIONS_MAX, 2, &rr, &err) == 0,
           "%s", err.msg);
    for (int p = 0; p < N_PHOTOS; p++) {
        const char *key = strrchr(PHOTOS[p], '/') + 1;
        const int r = ac_features_find(&fc, key);
        CHECK(r >= 0);
        for (int k = 0; r >= 0 && k < n_got[p]; k++) {
            if (got[p][k].category < AC_COPY_CATEGORIES) continue;
            int same = 0;
            for (int i = 0; i < n_rows[r]; i++) same |= !memcmp(&rows[r * AC_REGIONS_MAX + i], &got[p][k], sizeof got[p][k]);
            CHECKF(same, "%s: %s's region differs in the cache's row", key, ac_imagenet_words_name(w, got[p][k].category));
        }
    }
    ac_features_free(&fc);
    ac_class_head_free(head);
    ac_captioner_free(&c);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

int main(void) {
    RUN(test_captioner_and_rows);
    return TEST_EXIT();
}
