/* eval_cli.h: the parts of `attncap eval` beside its flags (cmd_eval.c): captioning a data set's
 * split (eval_caption.c) and printing the scores (eval_print.c). */
#ifndef ATTNCAP_CLI_EVAL_CLI_H
#define ATTNCAP_CLI_EVAL_CLI_H
#include "attncap/metrics.h"
#include "attncap/shard.h"
#include "tag_flags.h"

typedef struct cli_eval_opts {
    const char *refs, *results, *pairs, *per_image, *wordnet, *model, *data, *images, *split, *encoder;
    const char *report, *results_out, *features, *shard_spec, *compare;
    const char *novel_from, *novel_split, *hard_context, *fix_attention;
    cli_tag_flags tf;
    ac_shard shard;
    const char *precision; /* --precision, or NULL */
    int json, meteor, beam, limit, threads, sheets, quiet, max_len, novel_max, per_category, allow_repeats;
    float len_alpha; /* -1: the model's */
} cli_eval_opts;

/* Captions the photos of --data's --split (--limit first, then this task's --shard share) with the
 * model, or with the model alone over --features, into set; with --report also the thumbnails and
 * attention sheets (*thumbs, *sheets: [set->n] relative paths) and the report's subtitle. An empty
 * share of a non-empty split leaves set empty and returns 0. */
int cli_eval_caption_split(const cli_eval_opts *o, ac_eval_set *set, char ***thumbs, char ***sheets, char **subtitle,
                           ac_err *err);

/* --novel-from: how many photos of the source name each category. */
int cli_eval_novel_counts(const cli_eval_opts *o, int counts[AC_N_OBJECTS], ac_err *err);

/* The scores as text (the default output). n_ref_images: the references' images (--refs), else 0. */
void cli_eval_print_scores(const cli_eval_opts *o, const ac_scores *sc, int n_ref_images);
/* A warning on stderr for each model (model: the one --data was captioned with, else each item's
 * own, when the results name it) that records training photos among the photos scored: their
 * scores overstate it. */
void cli_eval_warn_trained(const ac_eval_set *set, const char *model);
#endif
