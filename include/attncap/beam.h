/* attncap/beam.h: greedy and beam-search decoding with length normalisation. Every hypothesis
 * carries its own attention history, so the returned alphas belong to the returned caption. */
#ifndef ATTNCAP_BEAM_H
#define ATTNCAP_BEAM_H
#include "attncap/decoder.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_caption {
    int n;          /* words, without <start>/<end> */
    int *words;     /* [n] */
    float *alpha;   /* [n + 1, L]: attention for each word and for the final <end> */
    float *beta;    /* [n + 1] */
    double logprob; /* sum of log p of the words and <end> */
    double score;   /* the ranking score (length-normalised) */
    char **labels;  /* NULL, or [n] words to show instead of the vocabulary's (a given caption's own
                       words, which may lie outside the vocabulary and were fed as <unk>) */
    int n_alt;      /* with ac_beam_opts.nbest > 1: the runners-up, best first (distinct captions, */
    struct ac_caption *alt; /* each with its own attention), owned by this caption */
} ac_caption;

typedef struct ac_beam_opts {
    int beam;          /* K; 1 = greedy (default 3). The beam shrinks as hypotheses finish (see beam.c) */
    int max_len;       /* words, default 20 */
    float len_alpha;   /* score = logprob / len^len_alpha, len = words + 1 (<end> counts); 0 = none,
                          1 = mean per token (default, as Xu et al.'s code) */
    int allow_unk;     /* 0: <unk> is never emitted */
    int nbest;         /* > 1: also return the next nbest - 1 finished captions by score in
                          ac_caption.alt (at most beam - 1 of them: the beam finishes beam captions) */
} ac_beam_opts;
ac_beam_opts ac_beam_defaults(void);
/* The defaults overridden by the decoding settings chosen on dev for a model, if its file records
 * them (metadata "decode": JSON with beam, max_len, len_alpha); out-of-range values are ignored. */
ac_beam_opts ac_beam_opts_for_model(const char *model_path);

int ac_beam_search(const ac_decoder *dec, const float *ann /* [L, D] */, const ac_beam_opts *opts,
                   ac_caption *out, ac_err *err);
void ac_caption_free(ac_caption *c);
/* The caption's words joined by spaces (malloc'd). */
char *ac_caption_text(const ac_caption *c, const ac_vocab *v);
/* Word k as shown: its label if the caption has labels, else the vocabulary's word (or "<unk>"). */
const char *ac_caption_word(const ac_caption *c, const ac_vocab *v, int k);
#ifdef __cplusplus
}
#endif
#endif
