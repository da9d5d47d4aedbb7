/* attncap/report.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/report.h: the evaluation report, a static self-contained index.html (inline CSS and
 * JavaScript, no network): the model's name, the scores, a histogram of the per-image CIDEr-D, a
 * search box that filters the rows, then one row per image (thumbnail, generated caption and
 * references as written, CIDEr-D, smoothed sentence BLEU-4, METEOR, ROUGE-L, the objects it names
 * (true, hallucinated, missed; objects.h), link to its attention sheet), sortable by clicking a
 * column header, worst CIDEr-D first by default. The object scores (precision, recall, F1, CHAIR,
 * novel recall when set) sit under the metrics when scores->objects is filled. With a second run
 * (other_set), its scores sit beside these, and each row shows its caption and the CIDEr-D delta.
 * Thumbnails and sheets are files under the report directory, referenced by relative paths. */
#ifndef ATTNCAP_REPORT_H
#define ATTNCAP_REPORT_H
#include "attncap/metrics.h"
#include "attncap/overlay.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_report {
    const char *title;       /* e.g. "attncap eval: flickr8k test" */
    const char *subtitle;    /* free text under the title (data, beam), may be NULL */
    const char *model;       /* the model's name, may be NULL */
    const ac_eval_set *set;  /* images in order; ids, references, candidates */
    const ac_scores *scores; /* per-image arrays must be set */
    char **thumbs;           /* [set->n] paths relative to the report dir, or NULL entries / NULL */
    char **sheets;           /* [set->n] likewise: attention sheets */
    /* A second run to compare with (NULL: none): its images are matched to set's by id; those it lacks
     * show a dash. Its scores are computed over its own images. */
    const char *other_name;  /* e.g. its results file */
    const char *other_model; /* may be NULL */
    const ac_eval_set *other_set;
    const ac_scores *other_scores;
} ac_report;

/* Writes DIR/index.html atomically (DIR is created). */
int ac_report_write(const char *dir, const ac_report *r, ac_err *err);

/* A caption run without references, as a page: each photo's thumbnail, caption, confidence and
 * attention sheet, sortable by confidence and searchable, as the report's table is. */
typedef struct ac_gallery {
    const char *title;           /* e.g. "attncap caption: photos/" */
    const char *subtitle;        /* may be NULL */
    int n;
    const char *const *photos;   /* [n] the photos as captioned */
    const char *const *captions; /* [n] */
    const double *confidence;    /* [n] NAN where unknown; NULL: none */
    char **thumbs, **sheets;     /* [n] paths relative to DIR (ac_report_thumb), NULL entries / NULL */
} ac_gallery;
/* Writes DIR/index.html atomically (DIR is created). */
int ac_gallery_write(const char *dir, const ac_gallery *g, ac_err *err);

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
