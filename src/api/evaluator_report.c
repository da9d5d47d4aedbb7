/* evaluator_report.c: what an evaluation adds around its scores (evaluator_internal.h): the novel
 * categories' source, the warning about training photos among those scored, the HTML report (the page
 * itself is report.c's: here its thumbnails, title and the compared run) and the scores as text. */
#include "alloc_internal.h"
#include "evaluator_internal.h"
#include "text_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/dataset.h"
#include "attncap/model.h"
#include "attncap/objects.h"
#include "attncap/png.h"
#include "attncap/report.h"

int ac_evaluation_novel_counts(const ac_evaluator *e, int counts[AC_N_OBJECTS], ac_err *err) {
    ac_split split = AC_SPLIT_NONE;
    if (strcmp(e->novel_split, "all") && (split = ac_split_parse(e->novel_split)) == AC_SPLIT_NONE)
        return ac_errc(err, AC_ERR_OPTIONS, "unknown novel_split '%s' (train, val, test or all)", e->novel_split);
    ac_dataset ds;
    if (ac_dataset_load(e->novel_from, NULL, &ds, err)) return -1;
    int photos = 0, rc = ac_objects_photo_counts(&ds, split, counts, &photos, err);
    ac_dataset_free(&ds);
    if (rc) return ac_err_prefix(err, "%s", e->novel_from);
    if (photos == 0) return ac_errf(err, "%s: no photos in split '%s'", e->novel_from, e->novel_split);
    return 0;
}

static void warn(const ac_evaluator *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(const ac_evaluator *e, const char *fmt, ...) {
    if (!e->on_event) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    const ac_eval_event ev = {.warning = line};
    e->on_event(&ev, e->user);
}

void ac_evaluation_warn_trained(const ac_evaluator *e) {
    const ac_eval_set *set = &e->set;
    const char *model = e->data ? e->model_path : NULL;
    const char **names = ac_malloc(sizeof *names * ((size_t)set->n + 1));
    if (!names) return;
    for (int first = 0; first < set->n; first++) { /* each model once, at its first item */
        const char *m = model ? model : set->items[first].model;
        int seen = !m;
        for (int k = 0; !seen && k < first; k++) seen = !model && set->items[k].model && !strcmp(set->items[k].model, m);
        if (seen || (model && first > 0)) continue;
        int n = 0, hits, n_trained;
        for (int i = 0; i < set->n; i++) {
            const ac_eval_item *it = &set->items[i];
            const char *name = it->path ? it->path : it->id;
            if (name && (model || (it->model && !strcmp(it->model, m)))) names[n++] = name;
        }
        ac_err err;
        if (ac_model_training_photos_hits(m, names, n, &hits, &n_trained, &err)) continue; /* scoring goes on */
        if (hits > 0)
            warn(e, "%d of the %d photos scored are among the %d %s was trained on (by file name): these scores "
                    "overstate how it captions new photos", hits, n, n_trained, m);
    }
    free(names);
}

/* The model a set of results names (their "model"), when they all name the same one. */
static const char *results_model(const ac_eval_set *s) {
    const char *m = s->n ? s->items[0].model : NULL;
    for (int i = 1; m && i < s->n; i++)
        if (!s->items[i].model || strcmp(s->items[i].model, m)) return NULL;
    return m;
}

static const char *base_name(const char *p) {
    if (!p) return "";
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

int ac_evaluation_write_report(const ac_evaluator *e, char **thumbs, char **sheets, const char *subtitle, ac_err *err) {
    const ac_eval_set *set = &e->set;
    const char *what = e->data ? e->data : e->pairs ? e->pairs : e->results[0];
    const char *split = e->data ? e->split : NULL, *captioned_by = e->data ? e->model_path : NULL;
    char **own = NULL;
    if (!thumbs && (own = thumbs = ac_calloc((size_t)set->n, sizeof *thumbs)))
        for (int i = 0; i < set->n; i++) { /* the photos of the references' data sets, when found */
            ac_image photo = {0};
            ac_err e2;
            if (set->items[i].path && !ac_image_load(set->items[i].path, &photo, &e2))
                thumbs[i] = ac_report_thumb(e->report, i, &photo, &e2);
            ac_image_free(&photo);
        }
    const char *model = captioned_by ? base_name(captioned_by) : results_model(set);
    char title[1024];
    int k = snprintf(title, sizeof title, "attncap eval: %s", model ? model : base_name(what));
    if (model || split) k += snprintf(title + k, sizeof title - (size_t)k, " on %s", what);
    if (split) snprintf(title + k, sizeof title - (size_t)k, " (%s split)", split);
    ac_report r = {.title = title, .subtitle = subtitle, .model = captioned_by ? captioned_by : model, .set = set,
                   .scores = &e->scores, .thumbs = thumbs, .sheets = sheets};
    if (e->compared)
        r.other_name = e->compare, r.other_model = results_model(&e->other_set), r.other_set = &e->other_set,
        r.other_scores = &e->other_scores;
    int rc = ac_report_write(e->report, &r, err);
    for (int i = 0; own && i < set->n; i++) free(own[i]);
    free(own);
    return rc;
}

static void add_ratio(ac_text *t, const char *label, double x) {
    if (isnan(x)) ac_text_add(t, "%s -", label);
    else ac_text_add(t, "%s %.4f", label, x);
}

/* The object lines. */
static void add_objects(ac_text *t, const ac_evaluator *e, const ac_object_scores *ob, unsigned flags) {
    add_ratio(t, "objects  precision", ob->precision), add_ratio(t, " recall", ob->recall), add_ratio(t, " F1", ob->f1);
    ac_text_add(t, " (TP %lld, FP %lld, FN %lld; truth: named by >= %d references)\n", ob->tp, ob->fp, ob->fn,
        AC_OBJECTS_TRUTH_REFS);
    add_ratio(t, "CHAIR-i ", ob->chair_i);
    ac_text_add(t, " (%lld of %lld named objects are named by no reference)\n", ob->hallucinated, ob->mentioned);
    add_ratio(t, "CHAIR-s ", ob->chair_s);
    ac_text_add(t, " (%d of %d captions name one)\n", ob->captions_hallucinating, ob->n);
    if (ob->novel_max > 0) {
        char names[2048];
        ac_objects_join(ob->novel, " ", names, sizeof names);
        add_ratio(t, "novel    recall", ob->novel_recall);
        ac_text_add(t, " (%lld of %lld; named %lld times; %d categories in < %d photos of %s %s: %s)\n", ob->novel_tp,
            ob->novel_truth, ob->novel_mentioned, ob->n_novel, ob->novel_max, e->novel_from, e->novel_split, names);
    }
    if (flags & AC_EVAL_PER_CATEGORY) {
        ac_text_add(t, "%-16s %5s %5s %5s %5s%s\n", "category", "TP", "FP", "FN", "hall", ob->novel_max > 0 ? " photos" : "");
        for (int k = 0; k < AC_N_OBJECTS; k++) {
            if (!(ob->tp_k[k] || ob->fp_k[k] || ob->fn_k[k] || (ob->novel_max > 0 && ob->novel[k]))) continue;
            ac_text_add(t, "%-16s %5d %5d %5d %5d", ac_object_name(k), ob->tp_k[k], ob->fp_k[k], ob->fn_k[k], ob->hall_k[k]);
            if (ob->novel_max > 0) ac_text_add(t, " %6d%s", ob->source_photos[k], ob->novel[k] ? " novel" : "");
            ac_text_add(t, "\n");
        }
    }
}

char *ac_evaluation_text(const ac_evaluator *e, unsigned flags) {
    const ac_scores *sc = &e->scores;
    const ac_bleu_counts *c = &sc->counts;
    ac_text t = ac_text_new();
    ac_text_add(&t, "images   %d", sc->n);
    if (e->refs && e->n_ref_images > sc->n) ac_text_add(&t, " (of %d in the references)", e->n_ref_images);
    ac_text_add(&t, "\ntestlen %lld, reflen %lld, guess [%lld, %lld, %lld, %lld], correct [%lld, %lld, %lld, %lld]\n",
        c->testlen, c->reflen, c->guess[0], c->guess[1], c->guess[2], c->guess[3], c->correct[0], c->correct[1],
        c->correct[2], c->correct[3]);
    for (int k = 0; k < 4; k++) ac_text_add(&t, "BLEU-%d   %.4f\n", k + 1, sc->bleu[k]);
    if (!isnan(sc->meteor)) ac_text_add(&t, "METEOR   %.4f\n", sc->meteor);
    ac_text_add(&t, "ROUGE-L  %.4f\nCIDEr-D  %.4f\n", sc->rouge_l, sc->cider_d);
    add_objects(&t, e, &sc->objects, flags);
    if (e->report) ac_text_add(&t, "report   %s/index.html\n", e->report);
    return t.s;
}
