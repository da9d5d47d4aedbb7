/* eval_report.h: what attncap eval --report adds around the library's report (report.h): the
 * thumbnails of photos found, the run to --compare with, the title and the model's name. */
#ifndef ATTNCAP_CLI_EVAL_REPORT_H
#define ATTNCAP_CLI_EVAL_REPORT_H
#include "attncap/image.h"
#include "attncap/metrics.h"

/* "DIR/thumbs/NNNNN.png" from photo (long side 200); returns the relative path (malloc'd) or NULL. */
char *eval_write_thumb(const char *dir, int i, const ac_image *photo, ac_err *err);

/* --results-out: the generated captions as scored (tokenized), in COCO results format, one result a
 * line, each naming the model when given (its file name), so a report of them (--compare) can. */
int eval_write_results(const char *path, const ac_eval_set *s, const char *model, ac_err *err);

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
