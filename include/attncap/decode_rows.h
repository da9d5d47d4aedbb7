/* attncap/decode_rows.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/decode_rows.h: captioning many photos of a feature cache at once (training's validation
 * scores, tune's grids), each by the beam search of beam.h. */
#ifndef ATTNCAP_DECODE_ROWS_H
#define ATTNCAP_DECODE_ROWS_H
#include "attncap/beam.h"
#include "attncap/features.h"
#include "attncap/regions.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Captions photos rows[0..n) of a feature cache (each on its own grid, ac_features_grid) with opts,
 * and, when regions is not NULL, with its regions appended as the captioner appends a photo's
 * detections (a regions model on its grid alone sees less than the captioner gives it); photo i on
 * thread i % threads (each thread with its own buffers; BLAS is single-threaded meanwhile), so the
 * result does not depend on the thread count. texts[i] (malloc'd, words joined by spaces) for every
 * i, or -1 with all freed. */
int ac_decode_rows(const ac_decoder *dec, const ac_vocab *vocab, const ac_feature_cache *fc, const int *rows, int n,
                   const ac_rows_regions *regions, const ac_beam_opts *o, int threads, char **texts, ac_err *err);

#ifdef __cplusplus
}
#endif
#endif
