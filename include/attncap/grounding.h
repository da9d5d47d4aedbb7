/* attncap/grounding.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/grounding.h: does the attention for a word sit on the object it names?
 *
 * A box file lists objects drawn by hand on photos: one object per line,
 *   PHOTO <TAB> WORD[,WORD...] <TAB> x0,y0,x1,y1[ x0,y0,x1,y1...]
 * with box corners as fractions of the photo's width and height (0..1, so they hold for the
 * squashed square the encoder sees, whatever the photo's size). Blank lines and lines starting with
 * '#' are ignored. Several boxes form one object (e.g. "horses" over two animals): their union.
 *
 * For a word's attention map alpha (the grid_h x grid_w weights, summing to 1) and an object:
 *   mass  = the attention inside the object: sum over cells of alpha * (the fraction of the cell
 *           the union of boxes covers); a map spread evenly over the photo gets mass = area;
 *   area  = the fraction of the photo the union covers;
 *   hit   = the pointing game: the cell with the most attention overlaps the object; a cell drawn
 *           at random does so with probability `chance`.
 * Cell (r, c) covers [c / grid_w, (c + 1) / grid_w] x [r / grid_h, (r + 1) / grid_h] of the photo.
 *
 * A model with regions (regions.h) also attends to detected objects: a row of its attention is the
 * grid's cells, then its regions. A region's weight counts as spread evenly over its own box, so
 * all of it is inside an object whose union holds the box (ac_ground_row_mass); the pointing game
 * takes the most attended of the cells and regions (a region hits when its box overlaps the object).
 * A copy model's caption is scored on the attention it shows (beam.h ac_caption_copy_account): a word
 * copied from a region counts that region's part of it, so a copied "giraffe" is grounded where the
 * pointer took it from, not only where the step's context attention looked.
 *
 * Detected objects instead of hand-drawn ones (`attncap ground --boxes detected`): a photo's objects
 * are COCO's 80 categories (objects.h), each with the boxes the detector (detect.h) found of it, and
 * a word names an object when the object matcher reads the word alone as that category ("horses"
 * -> horse, "man" -> person). A category the detector did not find has no boxes: a word naming it
 * is "not detected", not scored. */
#ifndef ATTNCAP_GROUNDING_H
#define ATTNCAP_GROUNDING_H
#include "attncap/common.h"
#include "attncap/detect.h"
#include "attncap/regions.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_box {
    float x0, y0, x1, y1;
} ac_box;

typedef struct ac_ground_object {
    char *photo;  /* as written in the file (a path, relative to a root directory or absolute) */
    int n_words;
    char **words; /* the words that name the object, lower case */
    int n_boxes;
    ac_box *boxes; /* n_boxes >= 1 from a box file; 0 for a detected category the detector did not find */
    int category;  /* detected objects: the COCO category (objects.h); -1 from a box file */
} ac_ground_object;

typedef struct ac_ground_set {
    int n;
    ac_ground_object *obj;
} ac_ground_set;

/* Reads a box file. Errors name the file and line (bad box, corner outside 0..1, x1 <= x0, ...). */
int ac_ground_load(const char *path, ac_ground_set *set, ac_err *err);
/* The same from memory (len bytes, need not be NUL-terminated); path names it in errors. */
int ac_ground_parse(const char *data, size_t len, const char *path, ac_ground_set *set, ac_err *err);
void ac_ground_free(ac_ground_set *set);
/* 1 if object o is the first of its photo's in the set (a caller scores each photo once, there). */
int ac_ground_first_of_photo(const ac_ground_set *set, int o);
/* 1 if `word` is one of the object's words (a detected object: if the word names its category). */
int ac_ground_names(const ac_ground_object *o, const char *word);

/* The fraction of the unit square covered by the union of the boxes (clipped to it). */
double ac_ground_area(const ac_box *boxes, int n);
/* The attention inside the union of the boxes (see above). alpha [grid_h * grid_w], row-major. */
double ac_ground_mass(const float *alpha, int grid_h, int grid_w, const ac_box *boxes, int n);
/* 1 if the cell with the largest weight (the first, on ties) overlaps the union with positive area. */
int ac_ground_hit(const float *alpha, int grid_h, int grid_w, const ac_box *boxes, int n);

/* The pointing game's chance level: the fraction of cells that overlap the union. */
double ac_ground_hit_chance(int grid_h, int grid_w, const ac_box *boxes, int n);

/* A caption's attention: rows of grid_h * grid_w cells (row-major), then n_regions regions (0 for a
 * grid model; regions [n_regions], as ac_caption holds them). */
typedef struct ac_ground_attention {
    const float *alpha;
    int grid_h, grid_w, n_regions;
    const ac_region *regions;
} ac_ground_attention;
/* Row k's attention inside the union: ac_ground_mass over its cells plus each region's weight times
 * the share of the region's box inside the union (a box of no area: all or nothing, by its centre). */
double ac_ground_row_mass(const ac_ground_attention *a, int k, const ac_box *boxes, int n);
/* Row k's pointing game: ac_ground_hit when a cell has the largest weight (the first, on ties; cells
 * before regions), else whether that region's box overlaps the union with positive area (a box of
 * no area: its centre lies in it). */
int ac_ground_row_hit(const ac_ground_attention *a, int k, const ac_box *boxes, int n);

/* The COCO category (objects.h) the word names alone, as the object matcher reads it, or -1. */
int ac_ground_word_category(const char *word);
/* Appends the photo's 80 detected objects to set: object k is COCO category k (its word: the
 * category's name), its boxes the detections of d whose label (labels[label], n_labels names) is
 * that category's name, as fractions of d's photo, best first, at most 64 (none: not detected).
 * Labels that are no COCO category are left out. */
int ac_ground_add_detected(ac_ground_set *set, const char *photo, const ac_detections *d, const char *const *labels,
                           int n_labels, ac_err *err);
/* Reads the photo at path whole (as `attncap detect` does), detects its objects with det's options
 * (ac_detector_options) and appends them as ac_ground_add_detected does, named `photo`. */
int ac_ground_detect(ac_detector *det, const char *path, const char *photo, ac_ground_set *set, ac_err *err);

/* The attention of a given caption's words (teacher forcing) is ac_decoder_attend (decoder.h). */
#ifdef __cplusplus
}
#endif
#endif
