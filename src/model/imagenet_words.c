/* imagenet_words.c: a copy model's ImageNet words (imagenet_words.h): recorded in and read back from
 * the model file, and a photo's regions of them (chosen from the tag table: naming/imagenet_table.c). */
#include "attncap/imagenet_words.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/objects.h"
#include "alloc_internal.h"

void ac_imagenet_words_free(ac_imagenet_words *w) {
    if (!w) return;
    for (int j = 0; w->word && j < w->n; j++) free(w->word[j]);
    free(w->word), free(w->form_off), free(w->form_id), free(w->class_word);
    memset(w, 0, sizeof *w);
}

int ac_imagenet_words_alloc(ac_imagenet_words *w, int n, int n_forms, int n_classes, ac_err *err) {
    memset(w, 0, sizeof *w);
    w->n = n, w->n_classes = n_classes;
    w->word = ac_calloc((size_t)n + 1, sizeof *w->word);
    w->form_off = ac_calloc((size_t)n + 1, sizeof *w->form_off);
    w->form_id = ac_malloc(sizeof *w->form_id * ((size_t)n_forms + 1));
    w->class_word = ac_malloc(sizeof *w->class_word * ((size_t)n_classes + 1));
    if (!w->word || !w->form_off || !w->form_id || !w->class_word) {
        ac_imagenet_words_free(w);
        return ac_errf(err, "out of memory");
    }
    for (int c = 0; c < n_classes; c++) w->class_word[c] = -1;
    return 0;
}

void ac_imagenet_words_categories(const ac_imagenet_words *w, short *word_category) {
    for (int j = 0; j < w->n; j++)
        for (int f = w->form_off[j]; f < w->form_off[j + 1]; f++)
            word_category[w->form_id[f]] = (short)(AC_COPY_CATEGORIES + j);
}

const char *ac_imagenet_words_name(const ac_imagenet_words *w, int category) {
    const int j = category - AC_COPY_CATEGORIES;
    return w && j >= 0 && j < w->n ? w->word[j] : NULL;
}

const char *ac_region_label(const ac_imagenet_words *w, int category) {
    return category < AC_COPY_CATEGORIES ? ac_object_name(category) : ac_imagenet_words_name(w, category);
}

void ac_imagenet_words_in_caption(const short *word_category, const int *ids, int n, unsigned char *cat, int *n_cat,
                                  int cap) {
    for (int i = 0; i < n && *n_cat < cap; i++) {
        const int c = word_category[ids[i]];
        if (c < AC_COPY_CATEGORIES) continue; /* COCO's, or none: the matcher's, not this */
        int seen = 0;
        for (int k = 0; k < *n_cat; k++) seen |= cat[k] == c;
        if (!seen) cat[(*n_cat)++] = (unsigned char)c;
    }
}

int ac_imagenet_words_regions(const ac_imagenet_words *w, const float *probs, int n_rows, const ac_grid_window *win,
                              int gh, int gw, float min_score, ac_region *out, int cap) {
    float best[AC_IMAGENET_WORDS_MAX] = {0}, row[AC_IMAGENET_WORDS_MAX];
    int best_row[AC_IMAGENET_WORDS_MAX] = {0};
    const int nw = w->n < AC_IMAGENET_WORDS_MAX ? w->n : AC_IMAGENET_WORDS_MAX;
    for (int r = 0; r < n_rows; r++) { /* one pass over a row's classes: each word's classes summed, in class order */
        memset(row, 0, sizeof row);
        const float *p = probs + (size_t)r * w->n_classes;
        for (int c = 0; c < w->n_classes; c++)
            if (w->class_word[c] >= 0 && w->class_word[c] < nw) row[w->class_word[c]] += p[c];
        for (int j = 0; j < nw; j++)
            if (row[j] > best[j]) best[j] = row[j], best_row[j] = r;
    }
    int n = 0;
    for (int j = 0; j < nw; j++) {
        if (!(best[j] >= min_score)) continue;
        ac_region r = {0, 0, 1, 1, best[j] > 1 ? 1 : best[j], AC_COPY_CATEGORIES + j};
        if (best_row[j] > 0) {
            const ac_grid_window *g = &win[best_row[j] - 1];
            r.x0 = (float)g->x / (float)gw, r.x1 = (float)(g->x + g->w) / (float)gw;
            r.y0 = (float)g->y / (float)gh, r.y1 = (float)(g->y + g->h) / (float)gh;
        }
        int at = n < cap ? n++ : cap; /* insertion, best first; the last falls off when full */
        while (at > 0 && out[at - 1].score < r.score) {
            if (at < cap) out[at] = out[at - 1];
            at--;
        }
        if (at < cap) out[at] = r;
    }
    return n;
}

/* ---- the model file's record ---- */

char *ac_imagenet_words_json(const ac_imagenet_words *w, const ac_vocab *v) {
    cJSON *o = cJSON_CreateObject(), *words = cJSON_CreateArray();
    int ok = o && words && cJSON_AddNumberToObject(o, "classes", w->n_classes);
    if (ok) cJSON_AddItemToObject(o, "words", words);
    else cJSON_Delete(words);
    for (int j = 0; ok && j < w->n; j++) {
        cJSON *x = cJSON_CreateObject(), *forms = cJSON_CreateArray(), *cls = cJSON_CreateArray();
        ok = x && forms && cls && cJSON_AddStringToObject(x, "word", w->word[j]);
        for (int f = w->form_off[j]; ok && f < w->form_off[j + 1]; f++)
            ok = cJSON_AddItemToArray(forms, cJSON_CreateString(ac_vocab_word(v, w->form_id[f])));
        for (int c = 0; ok && c < w->n_classes; c++)
            if (w->class_word[c] == j) ok = cJSON_AddItemToArray(cls, cJSON_CreateNumber(c));
        if (ok) {
            cJSON_AddItemToObject(x, "forms", forms), cJSON_AddItemToObject(x, "classes", cls);
            ok = cJSON_AddItemToArray(words, x);
        } else {
            cJSON_Delete(x), cJSON_Delete(forms), cJSON_Delete(cls);
        }
    }
    char *s = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return s;
}

static int parse_fail(cJSON *o, ac_imagenet_words *out, int rc) {
    cJSON_Delete(o);
    ac_imagenet_words_free(out);
    return rc;
}

int ac_imagenet_words_parse(const char *json, const ac_vocab *v, int n_expected, ac_imagenet_words *out, ac_err *err) {
    memset(out, 0, sizeof *out);
    cJSON *o = json ? cJSON_Parse(json) : NULL;
    const cJSON *cls = o ? cJSON_GetObjectItemCaseSensitive(o, "classes") : NULL,
                *words = o ? cJSON_GetObjectItemCaseSensitive(o, "words") : NULL;
    if (!cJSON_IsObject(o) || !cJSON_IsNumber(cls) || cls->valuedouble < 1 || cls->valuedouble > 100000 ||
        !cJSON_IsArray(words))
        return parse_fail(o, out, ac_errf(err, "imagenet_words: not an object with 'classes' (1 to 100000) and 'words'"));
    const cJSON *x;
    cJSON_ArrayForEach(x, o) if (strcmp(x->string, "classes") && strcmp(x->string, "words"))
        return parse_fail(o, out, ac_errf(err, "imagenet_words: unknown key '%.80s'", x->string));
    const int n = cJSON_GetArraySize(words), nc = (int)cls->valuedouble;
    if (n != n_expected)
        return parse_fail(o, out, ac_errf(err, "imagenet_words: %d words, the config says %d", n, n_expected));
    int n_forms = 0;
    cJSON_ArrayForEach(x, words) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(x, "forms");
        n_forms += cJSON_IsArray(f) ? cJSON_GetArraySize(f) : 0;
    }
    if (ac_imagenet_words_alloc(out, n, n_forms, nc, err)) return parse_fail(o, out, -1);
    const int V = ac_vocab_size(v);
    signed char *coco = ac_malloc((size_t)V);
    short *owner = ac_malloc(sizeof *owner * (size_t)V);
    if (!coco || !owner) {
        free(coco), free(owner);
        return parse_fail(o, out, ac_errf(err, "out of memory"));
    }
    ac_objects_of_vocab(v, coco);
    for (int i = 0; i < V; i++) owner[i] = -1;
    int j = 0, at = 0, rc = 0;
    cJSON_ArrayForEach(x, words) {
        const cJSON *wd = cJSON_GetObjectItemCaseSensitive(x, "word"), *f = cJSON_GetObjectItemCaseSensitive(x, "forms"),
                    *c = cJSON_GetObjectItemCaseSensitive(x, "classes"), *k;
        if (!cJSON_IsObject(x) || cJSON_GetArraySize(x) != 3 || !cJSON_IsString(wd) || !cJSON_IsArray(f) ||
            cJSON_GetArraySize(f) < 1 || !cJSON_IsArray(c)) {
            rc = ac_errf(err, "imagenet_words: word %d is not {\"word\", \"forms\" (at least one), \"classes\"}", j);
            break;
        }
        if (!(out->word[j] = ac_strdup(wd->valuestring))) {
            rc = ac_errf(err, "out of memory");
            break;
        }
        out->form_off[j] = at;
        cJSON_ArrayForEach(k, f) {
            const int id = cJSON_IsString(k) ? ac_vocab_id(v, k->valuestring) : AC_UNK;
            if (id <= AC_UNK) rc = ac_errf(err, "imagenet_words: '%.80s': a form not in the vocabulary", wd->valuestring);
            else if (coco[id] >= 0)
                rc = ac_errf(err, "imagenet_words: '%.80s': form '%.80s' names COCO's %s", wd->valuestring,
                             k->valuestring, ac_object_name(coco[id]));
            else if (owner[id] >= 0)
                rc = ac_errf(err, "imagenet_words: '%.80s': form '%.80s' is another word's too", wd->valuestring, k->valuestring);
            if (rc) break;
            owner[id] = (short)j, out->form_id[at++] = id;
        }
        if (rc) break;
        out->form_off[j + 1] = at;
        cJSON_ArrayForEach(k, c) {
            const double cv = cJSON_IsNumber(k) ? k->valuedouble : -1;
            if (!(cv >= 0 && cv < nc && cv == (int)cv) || out->class_word[(int)cv] >= 0) {
                rc = ac_errf(err, "imagenet_words: '%.80s': a class out of range or another word's", wd->valuestring);
                break;
            }
            out->class_word[(int)cv] = (short)j;
        }
        if (rc) break;
        j++;
    }
    free(coco), free(owner);
    if (rc) return parse_fail(o, out, rc);
    cJSON_Delete(o);
    return 0;
}
