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
#include "attncap/overlay.h"

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

/* The files a report row links to (report_files.c), for image i (0-based) of the set:
 * DIR/thumbs/NNNNN.png, the photo with its long side at most 200 pixels, and
 * DIR/sheets/NNNNN_KEY/sheet.png, the attention sheet of its caption (long side 768; KEY is the
 * photo's key up to its first '.', other characters than [A-Za-z0-9_-] made '_'; an earlier sheet
 * there is replaced). Each returns its path relative to DIR (malloc'd), or NULL (err). */
char *ac_report_thumb(const char *dir, int i, const ac_image *photo, ac_err *err);
char *ac_report_sheet(const char *dir, int i, const char *key, const ac_image *photo, const ac_caption *c,
                      const ac_vocab *v, int grid_h, int grid_w, const ac_font *font, int threads, ac_err *err);
#ifdef __cplusplus
}
#endif
#endif
