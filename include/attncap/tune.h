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

/* A copy model's absent priors (decoder.h config.absent) matched on held-out photos: `rounds` times,
 * caption the photos with the current priors (opts, decoded as tune's grid decodes) and move each
 * category's prior (ac_absent_step) by how much more often the captions name it on a photo without a
 * region of it (S_c: captions that name c, read by the objects' matcher as CHAIR reads them) than the
 * photos' references do (R_c: each photo's share of its references that name c), then caption once
 * more to measure. A beam search says a frequent object's word more often than people do (the mode of
 * "a man sitting on a ..." is "bench", though each reference says something else), which the words'
 * likelihood cannot see: fitted by likelihood on the same references the priors come out calibrated and
 * the captions hardly change (docs/experiments/regions.md). m's decoder gets config.absent
 * (ac_decoder_add_absent) and ends with the matched priors. */
#define AC_ABSENT_PSEUDO 0.5
typedef struct ac_absent_match_report {
    float prior[AC_COPY_CATEGORIES];
    double refs[AC_COPY_CATEGORIES];         /* R_c */
    double said_before[AC_COPY_CATEGORIES];  /* S_c with the priors the model came with (0 without) */
    double said_after[AC_COPY_CATEGORIES];   /* S_c with the matched priors */
    int photos, rounds;
} ac_absent_match_report;
int ac_absent_match(ac_model *m, const ac_feature_cache *fc, const ac_rows_regions *regions, const ac_tune_photo *photos,
                    int n, const ac_beam_opts *opts, int rounds, int threads, ac_absent_match_report *out, ac_err *err);
/* One round's move: prior[c] += log((refs[c] + a) / (said[c] + a)) clamped to [-2, 2], a =
 * AC_ABSENT_PSEUDO (a category neither says unseen keeps its prior), then at most 0: the detector's
 * silence can only lower an object's odds. refs, said, prior [AC_COPY_CATEGORIES]. */
void ac_absent_step(const double *refs, const double *said, float *prior);

#ifdef __cplusplus
}
#endif
#endif
