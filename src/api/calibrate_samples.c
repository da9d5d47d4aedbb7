/* calibrate_samples.c: the samples of the tool "calibrate" (calibrate_samples.h): a caption is right
 * when every object it names (objects.h) is named by one of the photo's references; a tag when a
 * reference says one of its forms, or the object it names. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/dataset.h"
#include "attncap/objects.h"
#include "alloc_internal.h"
#include "calibrate_samples.h"

int ac_calibrate_push(sample_set *s, double x, int y) {
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 256;
        double *nx = ac_realloc(s->x, sizeof(double) * (size_t)cap);
        if (nx) s->x = nx;
        int *ny = ac_realloc(s->y, sizeof(int) * (size_t)cap);
        if (ny) s->y = ny;
        if (!nx || !ny) return -1;
        s->cap = cap;
    }
    s->x[s->n] = x, s->y[s->n++] = y;
    return 0;
}

int ac_calibrate_push_tag(tag_set *t, int photo, ac_tag_obs o) {
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 1024;
        ac_tag_obs *no = ac_realloc(t->obs, sizeof *no * (size_t)cap);
        if (no) t->obs = no;
        int *np = ac_realloc(t->photo, sizeof *np * (size_t)cap);
        if (np) t->photo = np;
        if (!no || !np) return -1;
        t->cap = cap;
    }
    t->photo[t->n] = photo, t->obs[t->n++] = o;
    return 0;
}

/* truth[c] = 1 for the objects any of the photo's references names. */
static int refs_objects(const ac_ds_image *im, uint8_t truth[AC_N_OBJECTS], ac_err *err) {
    uint8_t r[AC_N_OBJECTS];
    memset(truth, 0, AC_N_OBJECTS);
    for (int k = 0; k < im->n_caps; k++) {
        if (ac_objects_in_text(im->caps[k], r, err) < 0) return -1;
        for (int c = 0; c < AC_N_OBJECTS; c++) truth[c] |= r[c];
    }
    return 0;
}

/* Confidence: the caption is right when no object it names is named by none of the references. */
static int add_caption(const cJSON *o, const ac_ds_image *im, sample_set *s, ac_err *err) {
    const cJSON *lp = cJSON_GetObjectItemCaseSensitive(o, "logprob"), *tok = cJSON_GetObjectItemCaseSensitive(o, "tokens"),
                *capn = cJSON_GetObjectItemCaseSensitive(o, "caption");
    if (!cJSON_IsNumber(lp) || !cJSON_IsArray(tok) || !cJSON_IsString(capn)) return ac_errf(err, "not a caption's JSON line");
    uint8_t cand[AC_N_OBJECTS], truth[AC_N_OBJECTS];
    if (ac_objects_in_text(capn->valuestring, cand, err) < 0 || refs_objects(im, truth, err)) return -1;
    int right = 1;
    for (int c = 0; c < AC_N_OBJECTS; c++) right &= !cand[c] || truth[c];
    return ac_calibrate_push(s, lp->valuedouble / (cJSON_GetArraySize(tok) + 1), right) ? ac_errf(err, "out of memory") : 0;
}

/* --tags: each tag of the photo, named when a reference says one of its forms or, for a word that names
 * one of COCO's object categories (objects.h: toilet seat, aircraft), that object: "a toilet" names the
 * toilet seat's object as the object metric counts it. */
static int add_tags(const cJSON *o, const ac_ds_image *im, const ac_tag_table *table, tag_set *t, ac_err *err) {
    const cJSON *tags = cJSON_GetObjectItemCaseSensitive(o, "tags"), *x;
    if (tags && !cJSON_IsArray(tags)) return ac_errf(err, "\"tags\" is not an array");
    uint8_t truth[AC_N_OBJECTS]; /* the references' objects, found once a tag needs them */
    int have_truth = 0;
    cJSON_ArrayForEach(x, tags) {
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(x, "word"), *p = cJSON_GetObjectItemCaseSensitive(x, "prob");
        if (!cJSON_IsString(w) || !cJSON_IsNumber(p) || !(p->valuedouble > 0 && p->valuedouble <= 1))
            return ac_errf(err, "a tag needs a word and a prob in (0, 1]");
        const int wi = ac_tag_word_index(table, w->valuestring);
        if (wi < 0) return ac_errf(err, "tag '%.60s' is not a word of the tag table", w->valuestring);
        uint8_t objects[AC_N_OBJECTS];
        const int n_objects = ac_objects_in_text(w->valuestring, objects, err);
        if (n_objects < 0) return -1;
        int named = 0;
        for (int k = 0; k < im->n_caps && !named; k++)
            if ((named = ac_tag_word_in_text(table, wi, im->caps[k], err)) < 0) return -1;
        if (!named && n_objects > 0) {
            if (!have_truth && refs_objects(im, truth, err)) return -1;
            have_truth = 1;
            for (int c = 0; c < AC_N_OBJECTS; c++) named |= objects[c] && truth[c];
        }
        if (ac_calibrate_push_tag(t, t->photos, (ac_tag_obs){wi, p->valuedouble, named})) return ac_errf(err, "out of memory");
    }
    t->photos++;
    return 0;
}

int ac_calibrate_add_pair(const char *refs, const char *results, const ac_tag_table *table, sample_set *s, tag_set *t,
                          ac_err *err) {
    ac_dataset ds;
    if (ac_dataset_load(refs, NULL, &ds, err)) return -1;
    FILE *f = fopen(results, "r");
    if (!f) {
        ac_dataset_free(&ds);
        return ac_errf(err, "%s: cannot open", results);
    }
    char *line = NULL;
    size_t cap = 0;
    int rc = 0, lineno = 0, used = 0;
    while (!rc && getline(&line, &cap, f) > 0) {
        lineno++;
        cJSON *o = cJSON_Parse(line);
        const cJSON *img = cJSON_GetObjectItemCaseSensitive(o, "image");
        if (!cJSON_IsString(img)) rc = ac_errf(err, "%s:%d: not a caption's JSON line", results, lineno);
        else {
            const char *base = strrchr(img->valuestring, '/');
            base = base ? base + 1 : img->valuestring;
            const ac_ds_image *im = NULL;
            for (int i = 0; i < ds.n && !im; i++)
                if (!strcmp(ds.images[i].key, base)) im = &ds.images[i];
            if (im && (table ? add_tags(o, im, table, t, err) : add_caption(o, im, s, err)))
                rc = ac_err_prefix(err, "%s:%d", results, lineno);
            used += im != NULL;
        }
        cJSON_Delete(o);
    }
    free(line);
    fclose(f);
    ac_dataset_free(&ds);
    if (!rc && used == 0) rc = ac_errf(err, "%s: no photo of %s in its references", results, refs);
    return rc;
}
