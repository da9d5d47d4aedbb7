/* objects_score.c: object scores of an evaluation set (precision, recall, F1, CHAIR-i, CHAIR-s,
 * novel recall), the photo counts that define novel categories, and their JSON (see objects.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/metrics.h"
#include "attncap/objects.h"
#include "attncap/tokenize.h"
#include "json_internal.h"
#include "alloc_internal.h"

static double ratio(long long a, long long b) { return b > 0 ? (double)a / (double)b : NAN; }

int ac_objects_score(const ac_eval_set *s, ac_object_scores *out, ac_err *err) {
    memset(out, 0, sizeof *out);
    out->novel_recall = NAN;
    int n = s->n > 0 ? s->n : 0;
    size_t cells = (size_t)(n ? n : 1) * AC_N_OBJECTS;
    out->cand = ac_calloc(cells, 1), out->truth = ac_calloc(cells, 1), out->named = ac_calloc(cells, 1);
    uint8_t ref[AC_N_OBJECTS];
    int votes[AC_N_OBJECTS]; /* references naming each category */
    if (!out->cand || !out->truth || !out->named) {
        ac_object_scores_free(out);
        return ac_errf(err, "object scores: out of memory");
    }
    out->n = n;
    for (int i = 0; i < n; i++) {
        const ac_eval_item *it = &s->items[i];
        uint8_t *cand = out->cand + (size_t)i * AC_N_OBJECTS, *truth = out->truth + (size_t)i * AC_N_OBJECTS,
                *named = out->named + (size_t)i * AC_N_OBJECTS;
        memset(votes, 0, AC_N_OBJECTS * sizeof(int));
        for (int r = 0; r < it->n_refs; r++) {
            ac_objects_in_tokens(it->refs[r], ref);
            for (int k = 0; k < AC_N_OBJECTS; k++) votes[k] += ref[k];
        }
        int need = it->n_refs < AC_OBJECTS_TRUTH_REFS ? it->n_refs : AC_OBJECTS_TRUTH_REFS;
        ac_objects_in_tokens(it->cand ? it->cand : "", cand);
        int hallucinating = 0;
        for (int k = 0; k < AC_N_OBJECTS; k++) {
            named[k] = votes[k] > 0;
            truth[k] = need > 0 && votes[k] >= need;
            if (cand[k] && truth[k]) out->tp_k[k]++;
            if (cand[k] && !truth[k]) out->fp_k[k]++;
            if (!cand[k] && truth[k]) out->fn_k[k]++;
            if (cand[k] && !named[k]) out->hall_k[k]++, hallucinating = 1;
        }
        out->captions_hallucinating += hallucinating;
    }
    for (int k = 0; k < AC_N_OBJECTS; k++) {
        out->tp += out->tp_k[k], out->fp += out->fp_k[k], out->fn += out->fn_k[k];
        out->hallucinated += out->hall_k[k];
    }
    out->mentioned = out->tp + out->fp;
    out->precision = ratio(out->tp, out->tp + out->fp);
    out->recall = ratio(out->tp, out->tp + out->fn);
    out->f1 = ratio(2 * out->tp, 2 * out->tp + out->fp + out->fn);
    out->chair_i = ratio(out->hallucinated, out->mentioned);
    out->chair_s = ratio(out->captions_hallucinating, n);
    return 0;
}

void ac_object_scores_set_novel(ac_object_scores *o, const int photo_counts[AC_N_OBJECTS], int max_photos) {
    o->novel_max = max_photos;
    o->n_novel = 0;
    o->novel_tp = o->novel_truth = o->novel_mentioned = 0;
    for (int k = 0; k < AC_N_OBJECTS; k++) {
        o->source_photos[k] = photo_counts[k];
        o->novel[k] = photo_counts[k] < max_photos;
        if (!o->novel[k]) continue;
        o->n_novel++;
        o->novel_tp += o->tp_k[k];
        o->novel_truth += o->tp_k[k] + o->fn_k[k];
        o->novel_mentioned += o->tp_k[k] + o->fp_k[k];
    }
    o->novel_recall = ratio(o->novel_tp, o->novel_truth);
}

void ac_object_scores_free(ac_object_scores *o) {
    free(o->cand);
    free(o->truth);
    free(o->named);
    o->cand = o->truth = o->named = NULL;
}

void ac_object_scores_image(const ac_object_scores *o, int i, uint8_t cand[AC_N_OBJECTS], uint8_t truth[AC_N_OBJECTS],
                            uint8_t hallucinated[AC_N_OBJECTS], uint8_t missed[AC_N_OBJECTS]) {
    const uint8_t *c = o->cand + (size_t)i * AC_N_OBJECTS, *t = o->truth + (size_t)i * AC_N_OBJECTS,
                  *nm = o->named + (size_t)i * AC_N_OBJECTS;
    for (int k = 0; k < AC_N_OBJECTS; k++) {
        if (cand) cand[k] = c[k];
        if (truth) truth[k] = t[k];
        if (hallucinated) hallucinated[k] = c[k] && !nm[k];
        if (missed) missed[k] = t[k] && !c[k];
    }
}

int ac_objects_photo_counts(const ac_dataset *ds, ac_split split, int counts[AC_N_OBJECTS], int *n_photos,
                            ac_err *err) {
    memset(counts, 0, AC_N_OBJECTS * sizeof *counts);
    int photos = 0;
    uint8_t any[AC_N_OBJECTS], one[AC_N_OBJECTS];
    for (int i = 0; i < ds->n; i++) {
        const ac_ds_image *im = &ds->images[i];
        if (split != AC_SPLIT_NONE && im->split != split) continue;
        memset(any, 0, sizeof any);
        for (int c = 0; c < im->n_caps; c++) {
            if (ac_objects_in_text(im->caps[c], one, err) < 0)
                return ac_err_prefix(err, "caption %d of %s", c + 1, im->key);
            for (int k = 0; k < AC_N_OBJECTS; k++) any[k] |= one[k];
        }
        for (int k = 0; k < AC_N_OBJECTS; k++) counts[k] += any[k];
        photos++;
    }
    if (n_photos) *n_photos = photos;
    return 0;
}

/* ---- JSON ---- */

/* Rounded to 6 decimals through text, as eval_io.c does, so JSON shows clean numbers. */
static cJSON *num(double x) {
    if (isnan(x)) return cJSON_CreateNull();
    char b[64];
    snprintf(b, sizeof b, "%.6f", x);
    return cJSON_CreateNumber(strtod(b, NULL));
}

static cJSON *names(const uint8_t *flags) {
    cJSON *a = cJSON_CreateArray();
    for (int k = 0; a && k < AC_N_OBJECTS; k++)
        if (flags[k]) cJSON_AddItemToArray(a, cJSON_CreateString(ac_object_name(k)));
    return a;
}

cJSON *ac_object_scores_json(const ac_object_scores *o, int per_category) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddItemToObject(j, "precision", num(o->precision));
    cJSON_AddItemToObject(j, "recall", num(o->recall));
    cJSON_AddItemToObject(j, "F1", num(o->f1));
    cJSON_AddItemToObject(j, "CHAIR-i", num(o->chair_i));
    cJSON_AddItemToObject(j, "CHAIR-s", num(o->chair_s));
    cJSON_AddNumberToObject(j, "tp", (double)o->tp);
    cJSON_AddNumberToObject(j, "fp", (double)o->fp);
    cJSON_AddNumberToObject(j, "fn", (double)o->fn);
    cJSON_AddNumberToObject(j, "mentioned", (double)o->mentioned);
    cJSON_AddNumberToObject(j, "hallucinated", (double)o->hallucinated);
    cJSON_AddNumberToObject(j, "captions_hallucinating", o->captions_hallucinating);
    cJSON_AddNumberToObject(j, "truth_min_refs", AC_OBJECTS_TRUTH_REFS);
    if (o->novel_max > 0) {
        cJSON *nv = cJSON_CreateObject();
        cJSON_AddItemToObject(j, "novel", nv);
        cJSON_AddNumberToObject(nv, "max_photos", o->novel_max);
        cJSON_AddItemToObject(nv, "categories", names(o->novel));
        cJSON_AddItemToObject(nv, "recall", num(o->novel_recall));
        cJSON_AddNumberToObject(nv, "tp", (double)o->novel_tp);
        cJSON_AddNumberToObject(nv, "truth", (double)o->novel_truth);
        cJSON_AddNumberToObject(nv, "mentioned", (double)o->novel_mentioned);
    }
    if (per_category) {
        cJSON *pc = cJSON_CreateObject();
        cJSON_AddItemToObject(j, "per_category", pc);
        for (int k = 0; k < AC_N_OBJECTS; k++) {
            cJSON *c = cJSON_CreateObject();
            cJSON_AddItemToObject(pc, ac_object_name(k), c);
            cJSON_AddNumberToObject(c, "tp", o->tp_k[k]);
            cJSON_AddNumberToObject(c, "fp", o->fp_k[k]);
            cJSON_AddNumberToObject(c, "fn", o->fn_k[k]);
            cJSON_AddNumberToObject(c, "hallucinated", o->hall_k[k]);
            if (o->novel_max > 0) {
                cJSON_AddNumberToObject(c, "source_photos", o->source_photos[k]);
                cJSON_AddBoolToObject(c, "novel", o->novel[k]);
            }
        }
    }
    return j;
}

cJSON *ac_object_image_json(const ac_object_scores *o, int i) {
    uint8_t cand[AC_N_OBJECTS], truth[AC_N_OBJECTS], hall[AC_N_OBJECTS], missed[AC_N_OBJECTS];
    ac_object_scores_image(o, i, cand, truth, hall, missed);
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddItemToObject(j, "candidate", names(cand));
    cJSON_AddItemToObject(j, "truth", names(truth));
    cJSON_AddItemToObject(j, "hallucinated", names(hall));
    cJSON_AddItemToObject(j, "missed", names(missed));
    return j;
}
