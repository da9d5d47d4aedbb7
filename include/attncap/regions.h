/* attncap/regions.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/regions.h: detected objects as annotation vectors (Anderson et al. 2018, "Bottom-Up and
 * Top-Down Attention"), so the decoder attends over the photo's grid cells and its objects together,
 * and names what it attends to.
 *
 * A region is a detection kept for the decoder: its box normalised to the photo (0..1, so a photo
 * squashed to the encoder's square and its grid agree), its score and its COCO category (objects.h
 * numbering). Its annotation vector is
 *     a_r = mean of the grid cells whose centres lie inside the box (the cell under the box's centre
 *           when none does)  +  score * code_scale * code(category)
 * where code(k) is a fixed pseudo-random unit vector per category (a function of k and D alone, the
 * same on every machine). The first term says what the encoder sees there; the second says which
 * object the detector named and how sure it was. The decoder learns from captioned photos (and from
 * captions alone, whose object words become pseudo-regions, train.h) which code goes with which word:
 * that is how a word no training photo showed still gets said when the detector sees the object.
 * A photo's L annotation vectors are its gh x gw grid cells, then its r regions (r <= the model's
 * config.regions), then padding that the masked softmax never reads (decoder.h). */
#ifndef ATTNCAP_REGIONS_H
#define ATTNCAP_REGIONS_H
#include "attncap/common.h"
#include "attncap/detect.h"
#include "attncap/features.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AC_REGIONS_MAX 32
#define AC_REGION_MAX_DIM 4096 /* D of ac_region_vector at most */
/* What `attncap train --detections` records in a new model (config.regions, region_scale,
 * region_min_score): 10 regions; a code of norm 60 at score 1, about twice a grid cell's norm (the
 * median cell of MobileNetV2's Conv_1 at 448 is 27): at 20 the decoder put 1-12 % of a word's
 * attention on regions and seldom named them (docs/experiments/regions.md); detections from 0.2. */
#define AC_REGIONS_DEFAULT 10
#define AC_REGION_SCALE 60.0f
#define AC_REGION_MIN_SCORE 0.2f

typedef struct ac_region {
    float x0, y0, x1, y1; /* normalised to the photo: 0 <= x0 <= x1 <= 1 */
    float score;          /* the detector's score, 0..1 */
    int category;         /* COCO category (objects.h), 0..AC_N_OBJECTS - 1, or a model's ImageNet word
                             (AC_N_OBJECTS + j, imagenet_words.h) */
} ac_region;

/* The regions of d: detections scored at least min_score whose label is a COCO category name
 * (names: the detector's labels, n_names of them), best first, at most max (<= AC_REGIONS_MAX).
 * Returns how many were written to out. */
int ac_regions_from_detections(const ac_detections *d, const char *const *names, int n_names, float min_score, int max,
                               ac_region *out);
/* The regions a photo keeps of a (the detector's, best first) and b (others, best first, e.g. its
 * ImageNet words', imagenet_words.h): the best `max` of both by score, a's first on a tie, best first,
 * into out (room for max; not a or b). Returns how many. */
int ac_regions_merge(const ac_region *a, int na, const ac_region *b, int nb, int max, ac_region *out);
/* Mirrors a region left-right (a flipped photo's features). */
void ac_region_flip(ac_region *r);
/* code(k): D floats of unit norm. */
void ac_region_code(int category, int D, float *code);
/* a_r as above from a photo's grid [gh * gw, D] (row-major cells), D <= AC_REGION_MAX_DIM. */
void ac_region_vector(const float *grid, int gh, int gw, int D, const ac_region *r, float code_scale, float *out);

/* The regions of a feature cache's photos: row r's n[r] regions are regions[r * stride ...]. */
typedef struct ac_rows_regions {
    ac_region *regions;
    unsigned char *n; /* [cache rows], each <= stride */
    int stride;       /* regions a photo at most (<= AC_REGIONS_MAX) */
} ac_rows_regions;
/* Reads `attncap detect` JSON lines (files: comma-separated paths) into out for the rows of fc, each
 * photo found by file name (a "#flip" row gets its photo's regions mirrored), chosen as the captioner
 * chooses them (ac_regions_from_detections with min_score and max). *matched (may be NULL): the photos
 * of fc found. On error out is empty and err names the file and line. Free with ac_rows_regions_free. */
int ac_rows_regions_load(const char *files, const ac_feature_cache *fc, float min_score, int max, ac_rows_regions *out,
                         int *matched, ac_err *err);
/* Row `row`'s regions as a model with `max` of them (its config.regions) sees them: *out points at
 * them; returns how many (at most max and the stride). */
int ac_rows_regions_of(const ac_rows_regions *r, int row, int max, const ac_region **out);
void ac_rows_regions_free(ac_rows_regions *r);

#ifdef __cplusplus
}
#endif
#endif
