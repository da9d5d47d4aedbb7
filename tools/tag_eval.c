/* tag_eval: how well the encoder's own ImageNet tags (ac_class_head + models/imagenet_words.tsv) name
 * what reference captions name, on captioned photos (a measurement for choosing thresholds, not a test).
 *
 *   tag_eval [--encoder M.tflite] [--words W.tsv] [--size 448] [--threads N] CAPTIONS.json...
 *
 * Per photo: one CNN run at --size (squashed, antialiased, as the captioner prepares photos), the
 * classifier head over the whole grid and every 7x7 window, and one CNN run at 224 (whole photo, what
 * `attncap classify` sees). Sources of tags: whole photo at 224; whole photo at --size; + quadrants and
 * centre; + 3x3 windows and centre; + every 7x7 window (a word scores the sum of its classes'
 * probabilities, ac_tags_from_probs); and two with a word scoring its best class instead of the sum.
 * For thresholds 0.1 0.2 0.3 0.5:
 *   precision = tags named by at least one reference (any surface form as a token sequence) / tags;
 *   recall@1 (@2) = table words named by >= 1 (>= 2) references that are tags / such words.
 * Only words of the table can be tags, so recall counts those words only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/encoder.h"
#include "attncap/dataset.h"
#include "attncap/image.h"
#include "attncap/tags.h"
#include "attncap/tokenize.h"

enum { N_SRC = 7, N_THR = 4, MAX_WIN = 128 };
static const float THRESHOLDS[N_THR] = {0.1f, 0.2f, 0.3f, 0.5f};
static const char *const SOURCES[N_SRC] = {"whole photo at 224", "whole photo at S", "S: + 4 quadrants + centre",
                                           "S: + 3x3 windows + centre", "S: + every 7x7 window",
                                           "S: + 4 quadrants + centre, best class", "S: + every 7x7 window, best class"};

/* The alternative to ac_tags_from_probs's sum: a word scores its most probable class (max over rows
 * and over its classes), so 118 dog breeds at 3 % each do not make a 0.35 "dog". */
static int tags_best_class(const ac_tag_table *t, const float *probs, int n_rows, int nc, float thr, ac_tag *out) {
    int nw = ac_tag_table_words(t), n = 0;
    float *best = calloc((size_t)nw + 1, sizeof *best);
    for (int r = 0; r < n_rows; r++)
        for (int c = 0; c < nc; c++) {
            int w = ac_tag_class_word(t, c);
            if (w >= 0 && probs[(size_t)r * nc + c] > best[w]) best[w] = probs[(size_t)r * nc + c];
        }
    for (int w = 0; w < nw; w++)
        if (best[w] >= thr && best[w] > 0) out[n++] = (ac_tag){w, best[w]};
    free(best);
    return n;
}

typedef struct stats {
    long tags, right, truth1, found1, truth2, found2;
} stats;

/* Whether tokens contain the phrase (tokens separated by single spaces) as a contiguous run. */
static int contains(const ac_tokens *t, const char *phrase) {
    char toks[8][256];
    int n = 0;
    for (const char *p = phrase; *p && n < 8; n++) {
        size_t l = strcspn(p, " ");
        if (l >= sizeof toks[0]) return 0;
        memcpy(toks[n], p, l);
        toks[n][l] = 0;
        p += l + (p[l] == ' ');
    }
    for (int a = 0; a + n <= t->n; a++) {
        int k = 0;
        while (k < n && !strcmp(t->tok[a + k], toks[k])) k++;
        if (k == n) return 1;
    }
    return 0;
}

/* Rows = the whole grid then the windows of set `which` picked out of all 7x7 positions. */
static int pick_rows(const float *all, const ac_grid_window *pos, int n_pos, int gh, int gw, int which, int nc, float *rows) {
    ac_grid_window w[MAX_WIN];
    int nw = which == 2 ? ac_grid_windows(gh, gw, 7, 2, 1, w, MAX_WIN) : which == 3 ? ac_grid_windows(gh, gw, 7, 3, 1, w, MAX_WIN) : 0;
    memcpy(rows, all, (size_t)nc * sizeof *rows);
    int n = 1;
    if (which == 4) {
        memcpy(rows, all, (size_t)(1 + n_pos) * nc * sizeof *rows);
        return 1 + n_pos;
    }
    for (int k = 0; k < nw; k++)
        for (int q = 0; q < n_pos; q++)
            if (pos[q].y == w[k].y && pos[q].x == w[k].x) memcpy(rows + (size_t)n++ * nc, all + (size_t)(1 + q) * nc, (size_t)nc * sizeof *rows);
    return n;
}

int main(int argc, char **argv) {
    const char *enc_path = "models/mobilenet_v2_1.0_224_quant.tflite", *words_path = "models/imagenet_words.tsv";
    int size = 448, threads = 1;
    const char *sets[16];
    int n_sets = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--encoder") && v) enc_path = v, i++;
        else if (!strcmp(a, "--words") && v) words_path = v, i++;
        else if (!strcmp(a, "--size") && v) size = atoi(v), i++;
        else if (!strcmp(a, "--threads") && v) threads = atoi(v), i++;
        else if (a[0] == '-') return fprintf(stderr, "usage: tag_eval [--encoder M] [--words W] [--size S] [--threads N] CAPTIONS.json...\n"), 2;
        else if (n_sets < 16) sets[n_sets++] = a;
    }
    if (!n_sets) return fprintf(stderr, "tag_eval: no captions file given\n"), 2;
    ac_err err;
    ac_encoder enc, enc224;
    ac_class_head *head, *head224;
    ac_tag_table *table;
    if (ac_tag_table_load(words_path, &table, &err) || ac_encoder_open(enc_path, NULL, size, threads, &enc, &err) ||
        ac_encoder_open(enc_path, NULL, 224, threads, &enc224, &err) || ac_class_head_open(&enc, &head, &err) ||
        ac_class_head_open(&enc224, &head224, &err)) {
        fprintf(stderr, "tag_eval: %s\n", err.msg);
        return 1;
    }
    const int nc = ac_class_head_classes(head), nw_words = ac_tag_table_words(table);
    ac_grid_window pos[MAX_WIN];
    int n_pos = ac_grid_windows(enc.grid_h, enc.grid_w, 7, enc.grid_h - 6 > 0 ? enc.grid_h - 6 : 1, 0, pos, MAX_WIN);
    float *ann = malloc((size_t)enc.grid_h * enc.grid_w * enc.dim * sizeof *ann), *ann224 = malloc(7 * 7 * 1280 * sizeof *ann224);
    float *all = malloc((size_t)(1 + n_pos) * nc * sizeof *all), *rows = malloc((size_t)(1 + n_pos) * nc * sizeof *rows);
    float *whole224 = malloc((size_t)nc * sizeof *whole224);
    ac_tag *tags = malloc((size_t)nw_words * sizeof *tags);
    int *named = malloc((size_t)nw_words * sizeof *named);
    stats st[N_SRC][N_THR] = {{{0}}};
    /* per word, for the quadrants + centre source at 0.3: times a tag, times right */
    long *w_tag = calloc((size_t)nw_words, sizeof *w_tag), *w_right = calloc((size_t)nw_words, sizeof *w_right);
    long n_photos = 0;
    double t0 = ac_now();
    for (int s = 0; s < n_sets; s++) {
        ac_dataset ds;
        if (ac_dataset_load(sets[s], NULL, &ds, &err)) {
            fprintf(stderr, "tag_eval: %s\n", err.msg);
            return 1;
        }
        for (int i = 0; i < ds.n; i++) {
            ac_image img;
            if (ac_image_load(ds.images[i].path, &img, &err) || ac_encoder_encode(&enc, &img, ann, &err) ||
                ac_encoder_encode(&enc224, &img, ann224, &err) ||
                ac_class_head_forward(head, ann, enc.grid_h, enc.grid_w, enc.dim, pos, n_pos, all, &err) ||
                ac_class_head_forward(head224, ann224, enc224.grid_h, enc224.grid_w, enc224.dim, NULL, 0, whole224, &err)) {
                fprintf(stderr, "tag_eval: %s\n", err.msg);
                return 1;
            }
            ac_image_free(&img);
            /* how many references name each table word */
            ac_tokens refs[16];
            int nr = ds.images[i].n_caps < 16 ? ds.images[i].n_caps : 16;
            for (int r = 0; r < nr; r++)
                if (ac_tokenize(ds.images[i].caps[r], &refs[r], &err)) refs[r] = (ac_tokens){0};
            for (int w = 0; w < nw_words; w++) {
                const char *const *forms;
                int nf = ac_tag_word_forms(table, w, &forms);
                named[w] = 0;
                for (int r = 0; r < nr; r++) {
                    int hit = 0;
                    for (int f = 0; f < nf && !hit; f++) hit = contains(&refs[r], forms[f]);
                    named[w] += hit;
                }
            }
            for (int r = 0; r < nr; r++) ac_tokens_free(&refs[r]);
            for (int src = 0; src < N_SRC; src++) {
                const float *p = src == 0 ? whole224 : rows;
                int n_rows = src == 0 ? 1 : pick_rows(all, pos, n_pos, enc.grid_h, enc.grid_w, src == 5 ? 2 : src == 6 ? 4 : src, nc, rows);
                for (int th = 0; th < N_THR; th++) {
                    int n = src >= 5 ? tags_best_class(table, p, n_rows, nc, THRESHOLDS[th], tags)
                                     : ac_tags_from_probs(table, p, n_rows, nc, THRESHOLDS[th], tags, nw_words, &err);
                    stats *o = &st[src][th];
                    char *is_tag = calloc((size_t)nw_words, 1);
                    for (int k = 0; k < n; k++) is_tag[tags[k].word] = 1, o->right += named[tags[k].word] >= 1;
                    for (int k = 0; k < n && src == 2 && th == 2; k++) w_tag[tags[k].word]++, w_right[tags[k].word] += named[tags[k].word] >= 1;
                    o->tags += n;
                    for (int w = 0; w < nw_words; w++) {
                        o->truth1 += named[w] >= 1, o->found1 += named[w] >= 1 && is_tag[w];
                        o->truth2 += named[w] >= 2, o->found2 += named[w] >= 2 && is_tag[w];
                    }
                    free(is_tag);
                }
            }
            n_photos++;
            if (n_photos % 50 == 0) fprintf(stderr, "tag_eval: %ld photos, %.0f s\n", n_photos, ac_now() - t0);
        }
        ac_dataset_free(&ds);
    }
    printf("%ld photos; encoder %s at %d (grid %dx%d, %d windows of 7x7); %d tag words\n", n_photos, enc_path, size,
           enc.grid_h, enc.grid_w, n_pos, nw_words);
    printf("| source | threshold | tags/photo | precision | recall@1 | recall@2 |\n| --- | --- | --- | --- | --- | --- |\n");
    for (int src = 0; src < N_SRC; src++)
        for (int th = 0; th < N_THR; th++) {
            const stats *o = &st[src][th];
            char name[64];
            snprintf(name, sizeof name, "%s", SOURCES[src]);
            char *S = strstr(name, "S");
            if (S && src > 0) {
                char tmp[64];
                snprintf(tmp, sizeof tmp, "%.*s%d%s", (int)(S - name), name, size, S + 1);
                snprintf(name, sizeof name, "%s", tmp);
            }
            printf("| %s | %.1f | %.2f | %.3f | %.3f | %.3f |\n", name, THRESHOLDS[th], (double)o->tags / (double)n_photos,
                   o->tags ? (double)o->right / (double)o->tags : 0.0, o->truth1 ? (double)o->found1 / (double)o->truth1 : 0.0,
                   o->truth2 ? (double)o->found2 / (double)o->truth2 : 0.0);
        }
    printf("\nwords tagged at least 3 times (%d: + 4 quadrants + centre, p >= 0.3): word tags right\n", size);
    for (int w = 0; w < nw_words; w++)
        if (w_tag[w] >= 3) printf("  %s %ld %ld\n", ac_tag_word(table, w), w_tag[w], w_right[w]);
    free(w_tag), free(w_right);
    free(ann), free(ann224), free(all), free(rows), free(whole224), free(tags), free(named);
    ac_class_head_free(head), ac_class_head_free(head224);
    ac_encoder_close(&enc), ac_encoder_close(&enc224);
    ac_tag_table_free(table);
    return 0;
}
