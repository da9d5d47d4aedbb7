/* evaluator_internal.h: the core's evaluator (attncap.h, ac_evaluator_*) in three files: its options
 * and run (evaluator.c), captioning a data set's split (evaluator_split.c), and what a run adds around
 * the scores: the novel categories' source, the trained-photos warning, the report and the text
 * (evaluator_report.c). Private to src/api/. */
#ifndef ATTNCAP_EVALUATOR_INTERNAL_H
#define ATTNCAP_EVALUATOR_INTERNAL_H
#include "attncap/attncap.h"
#include "attncap/metrics.h"
#include "attncap/shard.h"

#define EVAL_MAX_RESULTS 256 /* results files scored together (a sharded run's shares) */

struct ac_evaluator {
    /* the options (ac_evaluator_set; text ones borrowed from text[]) */
    const char *refs, *pairs, *data, *images, *split, *model, *encoder, *features, *shard_spec, *tags, *naming;
    const char *precision, *hard_context, *fix_attention, *wordnet, *novel_from, *novel_split, *per_image;
    const char *results_out, *report, *compare;
    int limit, beam, max_len, allow_repeats, threads, meteor, sheets, novel_max;
    float len_alpha;           /* -1: the model's */
    char *results[EVAL_MAX_RESULTS]; /* owned; "results" adds one each time it is set */
    int n_results;
    ac_shard shard;            /* shard_spec parsed (every photo without) */
    char *text[64];            /* the text options' copies (owned) */
    char shown[64];            /* ac_evaluator_get's number */
    /* the last run's */
    char *model_path;          /* the model "data" was captioned with (found), or NULL */
    ac_eval_set set;
    ac_scores scores;
    int scored;                /* scores holds the run's */
    int n_ref_images;          /* "refs": the references' images */
    ac_eval_set other_set;     /* "compare": the other run, scored against the same references */
    ac_scores other_scores;
    int compared;
    /* to the caller */
    ac_eval_fn on_event;
    void *user;
};

/* Captions the photos of e->data's split (limit first, then the shard's share) into e->set, with a
 * report also each photo's thumbnail and attention sheet (*thumbs, *sheets: [set.n] relative paths)
 * and the report's subtitle. An empty share of a non-empty split leaves the set empty and returns 0. */
int ac_evaluation_caption_split(ac_evaluator *e, char ***thumbs, char ***sheets, char **subtitle, ac_err *err);

/* How many photos of e->novel_from's novel_split name each category (read before any captioning, so a
 * bad source fails fast). */
int ac_evaluation_novel_counts(const ac_evaluator *e, int counts[AC_N_OBJECTS], ac_err *err);
/* A warning event for each model (the one "data" was captioned with, else each result's own, when the
 * results name it) that records training photos among the photos scored: their scores overstate it. */
void ac_evaluation_warn_trained(const ac_evaluator *e);
/* e->report's index.html over the run's set and scores; thumbs, sheets [set.n] or NULL (the thumbnails
 * are then made from the photos found), subtitle may be NULL. */
int ac_evaluation_write_report(const ac_evaluator *e, char **thumbs, char **sheets, const char *subtitle, ac_err *err);
/* The scores as `attncap eval` prints them (malloc'd), NULL when out of memory. */
char *ac_evaluation_text(const ac_evaluator *e, unsigned flags);
#endif
