/* beam_internal.h: the memo of a photo's decoder steps (beam_memo.c) and the constraint automaton
 * (constraints.c), for the beam search (beam.c). Private to src/search/. */
#ifndef ATTNCAP_BEAM_INTERNAL_H
#define ATTNCAP_BEAM_INTERNAL_H
#include "attncap/beam.h"

/* A row: the decoder's outputs for one hypothesis, [state_out | its history entry | logp V | alpha L |
 * beta 1 | a copy model's account AC_DECODER_ACCOUNT_ROW] (decoder.h's ac_decoder_advance_account; the
 * LSTM's state is [h_out H | c_out H], its entry empty). */
size_t ac_memo_row_size(const ac_decoder *dec);
/* 1 when the search keeps each word's account (a copy model's: an LSTM with config.copy). */
int ac_search_keeps_account(const ac_decoder *dec);
/* The row of the hypothesis words[0..t) (after <start>), or NULL if not kept. */
const float *ac_memo_find(const ac_beam_memo *m, const int *words, int t);
/* Keeps a copy of row for words[0..t); when memory runs out it is just not kept. */
void ac_memo_add(ac_beam_memo *m, const int *words, int t, const float *row);

/* The constraint automaton: a state is (the mask of constraints met, the depth: how many words of some
 * unmet phrase the hypothesis ends with). */
typedef struct ac_beam_fsm {
    int C;            /* constraints; 0 = unconstrained: one state */
    int depths;       /* the longest phrase's length: depth 0..depths-1 */
    int n_states;     /* 2^C * depths; state = met mask * depths + depth */
    const ac_constraint *con;
    unsigned char *in_phrase; /* [V]: 1 if the word is in some alternative; NULL without constraints */
} ac_beam_fsm;
/* 0 if o's constraints are well formed for a vocabulary of V words (counts in range, phrases of real
 * words), else -1 with a message naming the constraint. */
int ac_beam_check_constraints(const ac_beam_opts *o, int V, ac_err *err);
/* The automaton of o's constraints (one state when there are none); -1 when out of memory. The caller
 * frees f->in_phrase. */
int ac_beam_fsm_init(ac_beam_fsm *f, const ac_beam_opts *o, int V);
/* The state of words[0..t) (which meet `mask`) followed by w. A word in no phrase can neither
 * complete one nor begin one: the state is (mask, depth 0). */
int ac_beam_fsm_next(const ac_beam_fsm *f, const int *words, int t, int mask, int w);
#endif
