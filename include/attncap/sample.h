/* attncap/sample.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/sample.h: captions drawn at random from a decoder's own distribution, word by word (the
 * search's other half: beam.h finds the likeliest caption, this draws one as likely as the model
 * says). Self-critical training (train.h's scst) learns from them.
 *
 * Each word is drawn from the step's p(w) as the search sees it (a copy model's mixture included),
 * with <pad>, <start> and <unk> left out and the rest renormalised; a caption ends at <end> or after
 * max_len words. The draws are a hash of (seed, row, position): the same seed, the same captions. */
#ifndef ATTNCAP_SAMPLE_H
#define ATTNCAP_SAMPLE_H
#include <stdint.h>

#include "attncap/decoder.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_sampler ac_sampler; /* buffers for up to max_rows captions of up to max_len words */
ac_sampler *ac_sampler_new(const ac_decoder_config *cfg, int max_rows, int max_len); /* NULL: out of memory */
void ac_sampler_free(ac_sampler *s);

/* K captions for each of the n prepared photos (their rows stepped together, each row's results its
 * photo's alone: decoder.h ac_decoder_step_photos; the LSTM only). Caption i = p K + k (photo p):
 * words[i * max_len ...] its len[i] words (<end> not counted); logp[i] (may be NULL) the sum of log p of
 * its words and of the <end> that closed it (none for a caption cut at max_len), under the unrenormalised
 * distribution: what teacher forcing gives the same caption. -1 if n K is over max_rows or the decoder
 * is not an LSTM. */
int ac_sample_captions(ac_sampler *s, const ac_decoder *dec, const ac_dec_image *const *img, int n, int K, uint64_t seed,
                       int *words, int *len, double *logp);

#ifdef __cplusplus
}
#endif
#endif
