/* evaluator.c: the core API's evaluator (attncap.h) over metrics.h: options set by key from text,
 * checked against a table of their kinds and ranges (those `attncap eval` has always enforced), then a
 * run in the order `attncap eval` has always taken: what cannot go together is refused first, then
 * everything that can fail fast (the model found, the compared run, the novel categories' source) is
 * read before any photo is captioned. */
#include "evaluator_internal.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/captioner.h"
#include "attncap/locate.h"
#include "attncap/naming_opts.h"
#include "alloc_internal.h"
#include "options_internal.h"

#define TXT(k, m) {k, OPTION_TEXT, offsetof(struct ac_evaluator, m), 0, 0}
#define INT(k, m, lo, hi) {k, OPTION_INT, offsetof(struct ac_evaluator, m), lo, hi}
#define SWITCH(k, m) {k, OPTION_SWITCH, offsetof(struct ac_evaluator, m), 0, 1}
static const option OPTIONS[] = {
    TXT("refs", refs), TXT("results", refs) /* not stored here: see ac_evaluator_set */, TXT("pairs", pairs),
    TXT("data", data), TXT("images", images), TXT("split", split), TXT("model", model), TXT("encoder", encoder),
    TXT("features", features), INT("limit", limit, 1, 1e9), TXT("shard", shard_spec), INT("beam", beam, 1, 100),
    {"len_alpha", OPTION_FLOAT, offsetof(struct ac_evaluator, len_alpha), 0, 10}, INT("max_len", max_len, 1, 200),
    SWITCH("allow_repeats", allow_repeats), TXT("tags", tags), TXT("naming", naming), TXT("precision", precision),
    INT("threads", threads, 0, 256), TXT("hard_context", hard_context), TXT("fix_attention", fix_attention),
    SWITCH("meteor", meteor), TXT("wordnet", wordnet), TXT("novel_from", novel_from), TXT("novel_split", novel_split),
    INT("novel_max", novel_max, 1, 1e9), TXT("per_image", per_image), TXT("results_out", results_out),
    TXT("report", report), TXT("compare", compare), SWITCH("sheets", sheets),
};
#undef TXT
#undef INT
#undef SWITCH
#define N_OPTIONS (int)(sizeof OPTIONS / sizeof OPTIONS[0])
#define RESULTS_OPTION 1 /* OPTIONS[1]: "results" adds a file (e->results) */
_Static_assert(N_OPTIONS <= 64, "the evaluator's text[] holds every option");

int ac_evaluator_open(ac_evaluator **out, ac_err *err) {
    ac_evaluator *e = *out = ac_calloc(1, sizeof **out);
    if (!e) return ac_errf(err, "out of memory");
    e->split = "test", e->novel_split = "train", e->novel_max = 10;
    e->meteor = 1, e->sheets = 1, e->len_alpha = -1;
    return 0;
}

/* What a run made; the options stay. */
static void forget_run(ac_evaluator *e) {
    free(e->model_path), e->model_path = NULL;
    if (e->scored) ac_scores_free(&e->scores);
    e->scored = 0, e->n_ref_images = 0;
    ac_eval_set_free(&e->set);
    memset(&e->set, 0, sizeof e->set);
    if (e->compared) ac_scores_free(&e->other_scores), ac_eval_set_free(&e->other_set);
    e->compared = 0;
}

void ac_evaluator_close(ac_evaluator *e) {
    if (!e) return;
    forget_run(e);
    for (int i = 0; i < N_OPTIONS; i++) free(e->text[i]);
    for (int i = 0; i < e->n_results; i++) free(e->results[i]);
    free(e);
}

const char *ac_evaluator_option(int i, int *is_switch) { return ac_option_key(OPTIONS, N_OPTIONS, i, is_switch); }

int ac_evaluator_set(ac_evaluator *e, const char *key, const char *value, ac_err *err) {
    const int i = ac_option_find(OPTIONS, N_OPTIONS, key);
    if (i < 0) return ac_errc(err, AC_ERR_OPTIONS, "unknown evaluation option '%.80s'", key ? key : "");
    if (i == RESULTS_OPTION) {
        if (!value || !*value) return ac_errc(err, AC_ERR_OPTIONS, "option 'results' wants a file");
        if (e->n_results == EVAL_MAX_RESULTS)
            return ac_errc(err, AC_ERR_OPTIONS, "option 'results' takes at most %d files", EVAL_MAX_RESULTS);
        if (!(e->results[e->n_results] = ac_strdup(value))) return ac_errf(err, "out of memory");
        e->n_results++;
        return 0;
    }
    if (!strcmp(OPTIONS[i].key, "tags") && value && strcmp(value, "auto") && strcmp(value, "off"))
        return ac_errc(err, AC_ERR_OPTIONS, "option 'tags' wants auto or off, got '%.80s'", value);
    if (!strcmp(OPTIONS[i].key, "precision") && ac_option_check_precision(value, err)) return -1;
    ac_err why;
    if (!strcmp(OPTIONS[i].key, "naming") && value && *value && ac_naming_check_json(value, &why))
        return ac_errc(err, AC_ERR_OPTIONS, "option 'naming' is not a naming record: %s", why.msg);
    if (!strcmp(OPTIONS[i].key, "shard")) {
        ac_shard s = {0};
        if (value && ac_shard_parse(value, &s, &why))
            return ac_errc(err, AC_ERR_OPTIONS, "option 'shard' is not a share: %s", why.msg);
        if (ac_option_set(&OPTIONS[i], e, &e->text[i], value, err)) return -1;
        e->shard = s;
        return 0;
    }
    return ac_option_set(&OPTIONS[i], e, &e->text[i], value, err);
}

const char *ac_evaluator_get(ac_evaluator *e, const char *key) {
    const int i = ac_option_find(OPTIONS, N_OPTIONS, key);
    if (i == RESULTS_OPTION) return e->n_results ? e->results[0] : "";
    return i < 0 ? NULL : ac_option_get(&OPTIONS[i], e, e->shown, sizeof e->shown);
}

/* What cannot go together, before anything is read. */
static int check_options(const ac_evaluator *e, ac_err *err) {
    const int modes = (e->pairs != NULL) + (e->refs || e->n_results) + (e->model || e->data);
    if (modes != 1 || (e->refs && !e->n_results) || (e->n_results && !e->refs) || (e->model && !e->data))
        return ac_errc(err, AC_ERR_OPTIONS, "need exactly one of refs with results, pairs, or data (with model, or "
                                            "the default model)");
    if (e->shard_spec && !e->data)
        return ac_errc(err, AC_ERR_OPTIONS, "the option shard takes a share of data's photos (score the shares' "
                                            "results together)");
    if (e->compare && (!e->report || e->pairs))
        return ac_errc(err, AC_ERR_OPTIONS, "the option compare needs report, and refs or data (the references to "
                                            "score it)");
    return 0;
}

/* The other run of "compare": its results scored against the same references. */
static int load_compare(ac_evaluator *e, ac_err *err) {
    const char *path = e->compare;
    if (ac_eval_load_results_in(e->refs ? e->refs : e->data, e->images, &path, 1, &e->other_set, NULL, err)) return -1;
    if (ac_metrics_compute(&e->other_set, e->meteor ? AC_METRICS_METEOR : 0, e->wordnet, &e->other_scores, err)) {
        ac_eval_set_free(&e->other_set);
        memset(&e->other_set, 0, sizeof e->other_set);
        return -1;
    }
    e->compared = 1;
    return 0;
}

static void free_paths(char **p, int n) {
    for (int i = 0; p && i < n; i++) free(p[i]);
    free(p);
}

int ac_evaluator_run(ac_evaluator *e, ac_eval_fn on_event, void *user, ac_err *err) {
    forget_run(e);
    e->on_event = on_event, e->user = user;
    if (check_options(e, err)) return -1;
    int novel[AC_N_OBJECTS], rc = 0;
    char **thumbs = NULL, **sheets = NULL, *subtitle = NULL;
    if (e->data && ac_find_model(e->model, &e->model_path, err)) rc = -1;
    else if (e->compare && load_compare(e, err)) rc = ac_err_prefix(err, "compare");
    else if (e->novel_from && ac_evaluation_novel_counts(e, novel, err)) rc = -1;
    else if (e->pairs) rc = ac_eval_load_pairs(e->pairs, &e->set, err);
    else if (e->refs)
        rc = ac_eval_load_results_in(e->refs, e->images, (const char *const *)e->results, e->n_results, &e->set,
                                     &e->n_ref_images, err);
    else rc = ac_evaluation_caption_split(e, &thumbs, &sheets, &subtitle, err);
    if (!rc && e->results_out && ac_eval_write_results(e->results_out, &e->set, e->data ? e->model_path : NULL, err))
        rc = -1;
    if (!rc && e->set.n > 0) { /* else an empty share: an empty results_out, nothing to score */
        rc = ac_metrics_compute(&e->set, e->meteor ? AC_METRICS_METEOR : 0, e->wordnet, &e->scores, err);
        e->scored = !rc;
        if (!rc) ac_evaluation_warn_trained(e);
        if (!rc && e->novel_from) ac_object_scores_set_novel(&e->scores.objects, novel, e->novel_max);
        if (!rc && e->per_image && ac_scores_write_per_image(e->per_image, &e->set, &e->scores, err)) rc = -1;
        if (!rc && e->report && ac_evaluation_write_report(e, thumbs, sheets, subtitle, err)) rc = -1;
    }
    free_paths(thumbs, e->set.n), free_paths(sheets, e->set.n), free(subtitle);
    if (rc) forget_run(e);
    return rc;
}

int ac_evaluator_images(const ac_evaluator *e) { return e->scored ? e->scores.n : 0; }

int ac_evaluator_metrics(const ac_evaluator *e, ac_metrics *out) {
    if (!e->scored) return -1;
    const ac_scores *sc = &e->scores;
    *out = (ac_metrics){.n = sc->n, .meteor = sc->meteor, .rouge_l = sc->rouge_l, .cider_d = sc->cider_d};
    for (int k = 0; k < 4; k++) out->bleu[k] = sc->bleu[k];
    return 0;
}

char *ac_evaluator_json(const ac_evaluator *e, unsigned flags) {
    if (!e->scored) return NULL;
    return ac_scores_to_json_flags(&e->scores, flags & AC_EVAL_PER_CATEGORY ? AC_SCORES_JSON_PER_CATEGORY : 0);
}

char *ac_evaluator_text(const ac_evaluator *e, unsigned flags) { return e->scored ? ac_evaluation_text(e, flags) : NULL; }
