/* eval_report.h: what attncap eval --report adds around the library's report (report.h): the
 * thumbnails of photos found, the run to --compare with, the title and the model's name. */
#ifndef ATTNCAP_CLI_EVAL_REPORT_H
#define ATTNCAP_CLI_EVAL_REPORT_H
#include "attncap/image.h"
#include "attncap/metrics.h"

/* The other run of --compare: RESULTS scored against refs_spec (photos in images, may be NULL). */
typedef struct eval_compare {
    const char *path;
    ac_eval_set set;
    ac_scores scores;
    int loaded;
} eval_compare;
int eval_compare_load(eval_compare *c, const char *refs_spec, const char *images, const char *path, int meteor,
                      const char *wordnet, ac_err *err);
void eval_compare_free(eval_compare *c);

typedef struct eval_report_in {
    const char *dir;      /* --report DIR */
    const char *what;     /* what was scored: the data set, the results or the pairs file */
    const char *split;    /* --data's split, or NULL */
    const char *model;    /* the model file that captioned (--data), or NULL: the results' "model" */
    const char *subtitle; /* may be NULL */
    const ac_eval_set *set;
    const ac_scores *scores;
    char **thumbs;        /* [set->n] or NULL: then made here from the items' photos */
    char **sheets;        /* [set->n] or NULL */
    const eval_compare *compare; /* NULL: none */
} eval_report_in;
int eval_report_write(const eval_report_in *in, ac_err *err);

#endif
