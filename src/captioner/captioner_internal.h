/* captioner_internal.h: the captioner's two halves, for captioner_batch.c (photos encoded one at a
 * time in lanes, then searched together). Private to src/captioner*.c. */
#ifndef ATTNCAP_CAPTIONER_INTERNAL_H
#define ATTNCAP_CAPTIONER_INTERNAL_H
#include "attncap/captioner.h"
#include "attncap/detect.h"
#include "attncap/regions.h"

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

/* captioner_regions.c. A model with regions (its config's regions > 0): its detector (found beside the
 * model at model_path, in models/, the installed data or ../shared/encoders; missing is an error naming
 * the file), opened once. Touches nothing of c->model (which may be loading meanwhile). */
int ac_captioner_open_detector(ac_captioner *c, const char *model_path, int regions, int threads, ac_err *err);
void ac_captioner_close_detector(ac_captioner *c);
/* The photo's (as read, its own aspect ratio) detections as regions, with its ImageNet words' (a model
 * with them: from probs, ac_captioner_encode's classes of the same grid) the best of both by score:
 * written to regions (at most the model's config.regions) and their vectors appended to ann after the
 * grid[0] x grid[1] cells. *n_regions = 0 when det is NULL (a model without regions). */
int ac_captioner_detect(const ac_captioner *c, ac_detector *det, const ac_image *photo, float *ann, const float *probs,
                        const int *grid, ac_region *regions, int *n_regions, ac_err *err);
/* ac_captioner_detect in two: the options the model's detections are found with, and the detections
 * d made regions (written to regions; their vectors appended to ann; d freed): their count. */
ac_detect_options ac_captioner_detect_options(const ac_captioner *c);
int ac_captioner_attach(const ac_captioner *c, ac_detector *det, ac_detections *d, float *ann, const float *probs,
                        const int *grid, ac_region *regions);
/* Both CNNs of a photo: ac_captioner_encode of img, then ac_captioner_detect of photo (its regions and
 * their count); with beside, the detector on one of the encoder's pool threads while the others
 * encode (ac_cnn_beside; the same results; the encoder's error first when both fail). */
int ac_captioner_cnns(const ac_captioner *c, ac_encoder *enc, ac_detector *det, int beside, const ac_image *img,
                      const ac_image *photo, float *ann, float *probs, int *grid, ac_region *regions, int *n_regions,
                      ac_err *err);
/* ac_captioner_run with the photo as read beside its square (the detector sees the photo). */
int ac_captioner_run_photo(ac_captioner *c, const ac_image *square, const ac_image *photo, ac_caption *out,
                           double *t_cnn, double *t_dec, ac_err *err);
/* A copy of the regions into the caption and its runners-up (when the search saw n of them). */
int ac_caption_set_regions(ac_caption *out, const ac_region *regions, int n);
#endif
