/* eval_report.c: attncap eval --report's thumbnails, compared run, title and model name (see
 * eval_report.h); the page itself is the library's (report.c). */
#include "eval_report.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/png.h"
#include "attncap/report.h"

int eval_compare_load(eval_compare *c, const char *refs_spec, const char *images, const char *path, int meteor,
                      const char *wordnet, ac_err *err) {
    memset(c, 0, sizeof *c);
    c->path = path;
    if (ac_eval_load_results_in(refs_spec, images, &path, 1, &c->set, NULL, err)) return -1;
    if (ac_metrics_compute(&c->set, meteor ? AC_METRICS_METEOR : 0, wordnet, &c->scores, err)) {
        ac_eval_set_free(&c->set);
        return -1;
    }
    c->loaded = 1;
    return 0;
}

void eval_compare_free(eval_compare *c) {
    if (!c->loaded) return;
    ac_scores_free(&c->scores);
    ac_eval_set_free(&c->set);
    c->loaded = 0;
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

int eval_report_write(const eval_report_in *in, ac_err *err) {
    const ac_eval_set *set = in->set;
    char **thumbs = in->thumbs, **own = NULL;
    if (!thumbs && (own = thumbs = calloc((size_t)set->n, sizeof *thumbs)))
        for (int i = 0; i < set->n; i++) { /* the photos of --refs data sets, when found */
            ac_image photo = {0};
            ac_err e2;
            if (set->items[i].path && !ac_image_load(set->items[i].path, &photo, &e2))
                thumbs[i] = ac_report_thumb(in->dir, i, &photo, &e2);
            ac_image_free(&photo);
        }
    const char *model = in->model ? base_name(in->model) : results_model(set);
    char title[1024];
    int k = snprintf(title, sizeof title, "attncap eval: %s", model ? model : base_name(in->what));
    if (model || in->split) k += snprintf(title + k, sizeof title - (size_t)k, " on %s", in->what);
    if (in->split) snprintf(title + k, sizeof title - (size_t)k, " (%s split)", in->split);
    const eval_compare *c = in->compare;
    ac_report r = {.title = title, .subtitle = in->subtitle, .model = in->model ? in->model : model, .set = set,
                   .scores = in->scores, .thumbs = thumbs, .sheets = in->sheets};
    if (c) r.other_name = c->path, r.other_model = results_model(&c->set), r.other_set = &c->set, r.other_scores = &c->scores;
    int rc = ac_report_write(in->dir, &r, err);
    for (int i = 0; own && i < set->n; i++) free(own[i]);
    free(own);
    return rc;
}
