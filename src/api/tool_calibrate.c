/* tool_calibrate.c: the tool "calibrate" (tool_internal.h; `attncap calibrate`): fits a model's caption
 * confidence on dev photos (confidence.h), or its tags' precision on its training photos
 * (tag_precision.h), from pairs of references and caption results; records the fit in the model. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/confidence.h"
#include "attncap/model.h"
#include "attncap/tag_precision.h"
#include "attncap/tags.h"
#include "alloc_internal.h"
#include "calibrate_samples.h"
#include "tool_internal.h"

#define MAX_PAIRS 8

typedef struct calibrate_opts {
    const char *write, *tag_table, *lambda;
    int tags;
} calibrate_opts;

static const option OPTIONS[] = {
    {"write", OPTION_TEXT, offsetof(calibrate_opts, write), 0, 0},
    {"tags", OPTION_SWITCH, offsetof(calibrate_opts, tags), 0, 1},
    {"tag_table", OPTION_TEXT, offsetof(calibrate_opts, tag_table), 0, 0},
    {"lambda", OPTION_TEXT, offsetof(calibrate_opts, lambda), 0, 0}, /* text: read as a double */
};

static void defaults(void *state) { (void)state; }

static int write_meta(ac_tool *t, const char *model, const char *key, char *json, ac_err *err) {
    const int rc = !json ? ac_errf(err, "out of memory") : ac_model_set_meta(model, key, json, err);
    free(json);
    if (!rc) ac_tool_printf(t, "written to %s\n", model);
    return rc;
}

static int calibrate_confidence(ac_tool *t, const sample_set *s, const char *write, ac_err *err) {
    ac_confidence half, all;
    /* Halves by position (even / odd): fit on one, measure on the other. */
    sample_set a = {0}, b = {0};
    int rc = -1;
    for (int i = 0; i < s->n; i++)
        if (ac_calibrate_push(i % 2 ? &b : &a, s->x[i], s->y[i])) {
            ac_errf(err, "out of memory");
            goto out;
        }
    int right = 0;
    for (int i = 0; i < s->n; i++) right += s->y[i];
    if (ac_confidence_fit(a.x, a.y, a.n, &half, err) || ac_confidence_fit(s->x, s->y, s->n, &all, err)) goto out;
    const double base = (double)right / s->n;
    ac_tool_printf(t, "captions %d, right %d (%.3f)\n", s->n, right, base);
    ac_tool_printf(t, "fit on half, measured on the other half: calibration error %.3f, log-loss %.4f (a constant %.3f: %.4f)\n",
           ac_confidence_ece(&half, b.x, b.y, b.n, 10), ac_confidence_nll(&half, b.x, b.y, b.n),
           base, -(base * log(base) + (1 - base) * log(1 - base)));
    ac_tool_printf(t, "fit on all: a %.4f, b %.4f; calibration error %.3f, log-loss %.4f\n", all.a, all.b,
           ac_confidence_ece(&all, s->x, s->y, s->n, 10), ac_confidence_nll(&all, s->x, s->y, s->n));
    rc = write ? write_meta(t, write, "confidence", ac_confidence_to_json(&all), err) : 0;
out:
    free(a.x), free(a.y), free(b.x), free(b.y);
    return rc;
}

/* Mean log-loss of obs (those of odd photos if odd = 1) under tp, with or without the words' offsets. */
static double tags_nll(const ac_tag_precision *tp, const ac_tag_table *table, const tag_set *ts, int odd, int offsets) {
    double s = 0;
    int n = 0;
    for (int i = 0; i < ts->n; i++) {
        if (ts->photo[i] % 2 != odd) continue;
        const char *w = offsets ? ac_tag_word(table, ts->obs[i].word) : NULL; /* NULL: the shared curve */
        const double p = ac_tag_precision_of(tp, w, ts->obs[i].prob);
        s -= log(ts->obs[i].named ? p : 1 - p), n++;
    }
    return n ? s / n : NAN;
}

static int by_fired(const void *x, const void *y) {
    const ac_tag_precision_word *a = x, *b = y;
    return a->fired != b->fired ? b->fired - a->fired : strcmp(a->word, b->word);
}

static int calibrate_tags(ac_tool *tool, const ac_tag_table *table, const tag_set *t, double lambda, const char *write,
                          ac_err *err) {
    const int nw = ac_tag_table_words(table);
    const char **words = ac_malloc(sizeof *words * (size_t)(nw > 0 ? nw : 1));
    tag_set even = {0};
    ac_tag_precision half = {0}, all = {0};
    int rc = -1;
    if (!words) {
        ac_errf(err, "out of memory");
        goto out;
    }
    for (int w = 0; w < nw; w++) words[w] = ac_tag_word(table, w);
    for (int i = 0; i < t->n; i++)
        if (t->photo[i] % 2 == 0 && ac_calibrate_push_tag(&even, t->photo[i], t->obs[i])) {
            ac_errf(err, "out of memory");
            goto out;
        }
    if (ac_tag_precision_fit(words, nw, even.obs, even.n, lambda, &half, err) ||
        ac_tag_precision_fit(words, nw, t->obs, t->n, lambda, &all, err))
        goto out;
    int named = 0;
    for (int i = 0; i < t->n; i++) named += t->obs[i].named;
    const double base = (double)named / t->n;
    ac_tool_printf(tool, "photos %d, tags %d, named by a reference %d (%.3f), words %d\n", t->photos, t->n, named, base, all.n_words);
    ac_tool_printf(tool, "fit on half the photos, measured on the other half: log-loss %.4f (the shared curve alone %.4f, a constant %.4f)\n",
           tags_nll(&half, table, t, 1, 1), tags_nll(&half, table, t, 1, 0), -(base * log(base) + (1 - base) * log(1 - base)));
    ac_tool_printf(tool, "fit on all (lambda %g): shared curve sigmoid(%.4f + %.4f logit p): p 0.2 -> %.3f, 0.5 -> %.3f, 0.9 -> %.3f\n",
           lambda, all.a, all.b, ac_tag_precision_of(&all, NULL, 0.2), ac_tag_precision_of(&all, NULL, 0.5),
           ac_tag_precision_of(&all, NULL, 0.9));
    ac_tag_precision_word *sorted = ac_malloc(sizeof *sorted * (size_t)(all.n_words > 0 ? all.n_words : 1));
    if (!sorted) {
        ac_errf(err, "out of memory");
        goto out;
    }
    memcpy(sorted, all.words, sizeof *sorted * (size_t)all.n_words);
    qsort(sorted, (size_t)all.n_words, sizeof *sorted, by_fired);
    ac_tool_printf(tool, "%-20s %6s %6s %8s %8s %8s\n", "word", "tags", "named", "at 0.3", "at 0.6", "at 0.9");
    for (int i = 0; i < all.n_words; i++)
        ac_tool_printf(tool, "%-20s %6d %6d %8.3f %8.3f %8.3f\n", sorted[i].word, sorted[i].fired, sorted[i].named,
               ac_tag_precision_of(&all, sorted[i].word, 0.3), ac_tag_precision_of(&all, sorted[i].word, 0.6),
               ac_tag_precision_of(&all, sorted[i].word, 0.9));
    free(sorted);
    rc = write ? write_meta(tool, write, "tag_precision", ac_tag_precision_to_json(&all), err) : 0;
out:
    free(words), free(even.obs), free(even.photo);
    ac_tag_precision_free(&half), ac_tag_precision_free(&all);
    return rc;
}

static int run(ac_tool *tool, void *state, ac_err *err) {
    const calibrate_opts *o = state;
    const char *const *refs = (const char *const *)tool->items[0], *const *results = (const char *const *)tool->items[1];
    const int nr = tool->n_items[0], nres = tool->n_items[1], tags = o->tags;
    const char *write = o->write, *table_path = o->tag_table;
    double lambda = 1;
    if (o->lambda) {
        char *end;
        lambda = strtod(o->lambda, &end);
        if (!*o->lambda || *end || !(lambda > 0 && lambda <= 1e6))
            return ac_errc(err, AC_ERR_OPTIONS, "option 'lambda' must be a number in (0, 1e6], not '%s'", o->lambda);
    }
    if (nr == 0 || nr != nres) return ac_errc(err, AC_ERR_OPTIONS, "give refs and results in pairs");
    if (nr > MAX_PAIRS) return ac_errc(err, AC_ERR_OPTIONS, "at most %d pairs of refs and results", MAX_PAIRS);
    if (!tags && table_path) return ac_errc(err, AC_ERR_OPTIONS, "the option tag_table goes with tags");
    ac_tag_table *table = NULL;
    char beside[4096];
    if (tags && !table_path) {
        if (!write)
            return ac_errc(err, AC_ERR_OPTIONS, "tags needs tag_table (a file) or write (a model: its table beside it)");
        const char *slash = strrchr(write, '/');
        snprintf(beside, sizeof beside, "%.*s%simagenet_words.tsv", slash ? (int)(slash - write) : 0, write, slash ? "/" : "");
        table_path = beside;
    }
    if (tags && ac_tag_table_load(table_path, &table, err)) return -1;
    sample_set s = {0};
    tag_set t = {0};
    int rc = 0;
    for (int i = 0; !rc && i < nr; i++) rc = ac_calibrate_add_pair(refs[i], results[i], table, &s, &t, err);
    if (!rc) rc = tags ? calibrate_tags(tool, table, &t, lambda, write, err) : calibrate_confidence(tool, &s, write, err);
    free(s.x), free(s.y), free(t.obs), free(t.photo);
    ac_tag_table_free(table);
    return rc;
}

static const tool_kind KIND = {"calibrate", OPTIONS, (int)(sizeof OPTIONS / sizeof OPTIONS[0]), {"refs", "results"},
                                     sizeof(calibrate_opts), defaults, run};
const tool_kind *ac_tool_calibrate_kind(void) { return &KIND; }
