/* attncap/report.h: the evaluation report, a static self-contained index.html (inline CSS and
 * JavaScript, no network): the scores, then one row per image (thumbnail, generated caption,
 * references, CIDEr-D, BLEU-4, METEOR, the objects it names (true, hallucinated, missed; objects.h),
 * link to its attention sheet), sortable by clicking a column header, worst CIDEr-D first by
 * default. The object scores (precision, recall, F1, CHAIR, novel recall when set) sit under the
 * metrics when scores->objects is filled. Thumbnails and sheets are files under the report
 * directory, referenced by relative paths. */
#ifndef ATTNCAP_REPORT_H
#define ATTNCAP_REPORT_H
#include "attncap/metrics.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_report {
    const char *title;       /* e.g. "attncap eval: flickr8k test" */
    const char *subtitle;    /* free text under the title (model, data, beam), may be NULL */
    const ac_eval_set *set;  /* images in order; ids, references, candidates */
    const ac_scores *scores; /* per-image arrays must be set */
    char **thumbs;           /* [set->n] paths relative to the report dir, or NULL entries / NULL */
    char **sheets;           /* [set->n] likewise: attention sheets */
} ac_report;

/* Writes DIR/index.html atomically (DIR is created). */
int ac_report_write(const char *dir, const ac_report *r, ac_err *err);
#ifdef __cplusplus
}
#endif
#endif
