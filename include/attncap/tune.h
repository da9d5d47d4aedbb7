/* attncap/tune.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/tune.h: choosing a model's decoding settings (beam width, length normalisation) on
 * held-out photos. The choice is recorded in the model file as metadata "decode" (JSON, with
 * ac_model_set_meta), which ac_model_load reads into ac_model.decode, so attncap caption and eval use
 * it by default. */
#ifndef ATTNCAP_TUNE_H
#define ATTNCAP_TUNE_H
#include "attncap/beam.h"
#include "attncap/model.h"
#include "attncap/regions.h"
#include "attncap/features.h"
#include "attncap/metrics.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One photo to score against: its cache row and raw reference captions. */
typedef struct ac_tune_photo {
    int row;
    const char *id;
    int n_refs;
    const char *const *refs;
} ac_tune_photo;

typedef struct ac_tune_point {
    ac_beam_opts opts;
    ac_scores scores; /* without per-image arrays */
} ac_tune_point;

/* Scores every combination of beams[0..nb) x alphas[0..na) (other settings from base) on the
 * photos: out[b * na + a]. meteor: also compute METEOR (wordnet dir or NULL for the default).
 * regions: the cache rows' regions for a regions model (regions.h), else NULL. */
int ac_tune_grid(const ac_model *m, const ac_feature_cache *fc, const ac_rows_regions *regions,
                 const ac_tune_photo *photos, int n,
                 const ac_beam_opts *base, const int *beams, int nb, const float *alphas, int na, int meteor,
                 const char *wordnet, int threads, ac_tune_point *out, ac_err *err);

#ifdef __cplusplus
}
#endif
#endif
