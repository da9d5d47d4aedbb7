/* captioner_internal.h: the captioner's two halves, for captioner_batch.c (photos encoded one at a
 * time in lanes, then searched together). Private to src/captioner*.c. */
#ifndef ATTNCAP_CAPTIONER_INTERNAL_H
#define ATTNCAP_CAPTIONER_INTERNAL_H
#include "attncap/captioner.h"

/* The photo (any size: prepared here when needed) -> its annotations ann [L, D], its own grid into
 * grid[2] (h, w; may be NULL: the model's unless the encoder keeps the aspect ratio) and, when the
 * captioner wants classes, their probabilities into probs (as ac_captioner.probs; the windows moved
 * into a smaller photo grid, ac_grid_windows_fit). */
int ac_captioner_encode(const ac_captioner *c, ac_encoder *enc, float *ann, float *probs, int *grid, const ac_image *img,
                        ac_err *err);
/* The captions of n encoded photos (tasks' ann and probs), searched together as the captioner's
 * settings say (given caption, plain search, or naming): each the caption ac_captioner_run gives.
 * concurrent: other lanes may search at the same time (the step's helper threads are not used). */
void ac_captioner_search(const ac_captioner *c, int n, ac_name_task *tasks, int concurrent);
#endif
