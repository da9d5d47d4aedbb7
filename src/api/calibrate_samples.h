/* calibrate_samples.h: the samples the tool "calibrate" fits (tool_calibrate.c), read from pairs of
 * references and caption --json results (calibrate_samples.c). Private to src/api/. */
#ifndef ATTNCAP_CALIBRATE_SAMPLES_H
#define ATTNCAP_CALIBRATE_SAMPLES_H
#include "attncap/tag_precision.h"
#include "attncap/tags.h"

/* The confidence's samples: x[i] a caption's mean log-probability per token, y[i] 1 when it is right. */
typedef struct sample_set {
    int n, cap;
    double *x;
    int *y;
} sample_set;

/* The tags' observations (--tags): obs[i] from the photo numbered photo[i] (its line among all results). */
typedef struct tag_set {
    int n, cap, photos;
    ac_tag_obs *obs;
    int *photo;
} tag_set;

/* Appends a sample; -1 when out of memory (the set is unchanged). */
int ac_calibrate_push(sample_set *s, double x, int y);
int ac_calibrate_push_tag(tag_set *t, int photo, ac_tag_obs o);
/* One (refs, results) pair: every result line with a photo in refs becomes samples of s, or, with a
 * table ("tags"), its tags become observations of t. A problem: -1 with err naming the file (and line). */
int ac_calibrate_add_pair(const char *refs, const char *results, const ac_tag_table *table, sample_set *s, tag_set *t,
                          ac_err *err);
#endif
