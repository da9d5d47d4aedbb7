/* attncap/naming.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/naming.h: name what the encoder sees.
 *
 * The decoder learned its nouns from a few thousand captioned photos; the encoder's ImageNet head knows
 * a thousand object classes. From the same CNN pass (cnn.h, ac_class_head) the classes' probabilities
 * become tag words through the class -> word table (tags.h: Egyptian cat -> cat), and a tag the
 * caption does not already name becomes a constraint of the beam search (beam.h: the caption must
 * contain "cat" or "cats"), when the model agrees it fits: the constrained caption is taken only if
 * its mean log-probability per token is at most max_drop below the free caption's. The attention of a
 * forced word is the model's own when it said the word (the search keeps every hypothesis's attention).
 *
 * Confidence: a calibrated probability that the caption is right (confidence.h), from the model's
 * calibration; below min_confidence the caption is replaced by a plain description from the best tag
 * ("a photo of a cat"), itself scored by the model with its attention (teacher forcing). */
#ifndef ATTNCAP_NAMING_H
#define ATTNCAP_NAMING_H
#include "attncap/beam.h"
#include "attncap/confidence.h"
#include "attncap/model.h"
#include "attncap/naming_opts.h"
#include "attncap/presence.h"
#include "attncap/regions.h"
#include "attncap/tags.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One photo: the free beam search, then the tags and the constrained search as above, then the
 * confidence. probs: n_rows rows of n_classes (ac_class_head_forward's layout), NULL when the mode is
 * OFF or GIVEN. Fills out (tags, confidence, description flag included). Deterministic. */
int ac_name_caption(const ac_model *m, const ac_tag_table *t, const ac_naming_opts *o, const ac_beam_opts *bo,
                    const float *ann, const float *probs, int n_rows, int n_classes, ac_caption *out, ac_err *err);

/* Many photos at once, each named exactly as ac_name_caption would (same captions bit for bit): their
 * free searches go together (ac_beam_search_photos), then their constrained searches, round by
 * round. A photo that fails (failed, err) does not stop the others. Returns 0 if none failed. */
typedef struct ac_name_task {
    const float *ann;   /* [L, D] */
    const float *probs; /* as ac_name_caption's */
    ac_caption out;     /* the caller frees it */
    int failed;
    ac_err err;
    int grid_h, grid_w; /* the photo's own grid (decoder.h, masks); 0: the model's */
    int n_regions;      /* regions after the grid's cells in ann (regions.h); 0: none */
    const ac_region *regions; /* [n_regions] what they are (a copy model copies from their categories); may be NULL */
} ac_name_task;
int ac_name_captions(const ac_model *m, const ac_tag_table *t, const ac_naming_opts *o, const ac_beam_opts *bo,
                     int n_rows, int n_classes, int n, ac_name_task *tasks);
/* A task's photo grid: its own, or cfg's when it gives none. */
void ac_name_task_grid(const ac_decoder_config *cfg, const ac_name_task *task, int *gh, int *gw);
/* A task's photo prepared for the decoder: its grid, its regions and their categories (a copy model
 * copies from them; config.absent reads which it lacks). NULL with err for a grid the model refuses, or
 * out of memory; the caller frees it (ac_dec_image_free). */
ac_dec_image *ac_name_task_prepare(const ac_decoder *dec, const ac_name_task *task, ac_err *err);
/* A copy model's account (beam.h ac_captions_copy_account) of every task's caption whose img[i] is not NULL,
 * in one pass: a task with an error gets failed and err, and the others are unchanged. */
void ac_name_tasks_copy_account(const ac_decoder *dec, int n, ac_name_task *tasks, const ac_dec_image *const *img);

#ifdef __cplusplus
}
#endif
#endif
