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
 * Cell (r, c) covers [c / grid_w, (c + 1) / grid_w] x [r / grid_h, (r + 1) / grid_h] of the photo. */
#ifndef ATTNCAP_GROUNDING_H
#define ATTNCAP_GROUNDING_H
#include "attncap/common.h"

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
    ac_box *boxes;
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
/* 1 if `word` is one of the object's words. */
int ac_ground_names(const ac_ground_object *o, const char *word);

/* The fraction of the unit square covered by the union of the boxes (clipped to it). */
double ac_ground_area(const ac_box *boxes, int n);
/* The attention inside the union of the boxes (see above). alpha [grid_h * grid_w], row-major. */
double ac_ground_mass(const float *alpha, int grid_h, int grid_w, const ac_box *boxes, int n);
/* 1 if the cell with the largest weight (the first, on ties) overlaps the union with positive area. */
int ac_ground_hit(const float *alpha, int grid_h, int grid_w, const ac_box *boxes, int n);

/* The pointing game's chance level: the fraction of cells that overlap the union. */
double ac_ground_hit_chance(int grid_h, int grid_w, const ac_box *boxes, int n);

/* The attention of a given caption's words (teacher forcing) is ac_decoder_attend (decoder.h). */
#ifdef __cplusplus
}
#endif
#endif
