/* beam_internal.h: the memo of a photo's decoder steps (beam_memo.c), for the beam search. Private to
 * src/beam*.c. */
#ifndef ATTNCAP_BEAM_INTERNAL_H
#define ATTNCAP_BEAM_INTERNAL_H
#include "attncap/beam.h"

/* A row: the decoder's outputs for one hypothesis, [state_out | its history entry | logp V | alpha L |
 * beta 1] (decoder.h's ac_decoder_advance; the LSTM's state is [h_out H | c_out H], its entry empty). */
size_t ac_memo_row_size(const ac_decoder *dec);
/* The row of the hypothesis words[0..t) (after <start>), or NULL if not kept. */
const float *ac_memo_find(const ac_beam_memo *m, const int *words, int t);
/* Keeps a copy of row for words[0..t); when memory runs out it is just not kept. */
void ac_memo_add(ac_beam_memo *m, const int *words, int t, const float *row);
#endif
