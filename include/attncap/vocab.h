/* attncap/vocab.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/vocab.h: word <-> id. Ids 0..3 are <pad> <start> <end> <unk>; the rest are the training
 * captions' words seen at least min_count times, most frequent first (ties alphabetical). */
#ifndef ATTNCAP_VOCAB_H
#define ATTNCAP_VOCAB_H
#include "attncap/common.h"
#include "attncap/tokenize.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { AC_PAD = 0, AC_START = 1, AC_END = 2, AC_UNK = 3 };

typedef struct ac_vocab ac_vocab;

/* Builds from tokenized captions. */
int ac_vocab_build(const ac_tokens *caps, int n_caps, int min_count, ac_vocab **v, ac_err *err);
/* Serialised as a JSON array of words in id order (stored in model metadata). */
char *ac_vocab_to_json(const ac_vocab *v);
int ac_vocab_from_json(const char *json, ac_vocab **v, ac_err *err);
int ac_vocab_size(const ac_vocab *v);
const char *ac_vocab_word(const ac_vocab *v, int id);
int ac_vocab_id(const ac_vocab *v, const char *word); /* AC_UNK if absent */
/* Encodes tokens as ids (unknown -> AC_UNK), without <start>/<end>. out has room for t->n ids. */
void ac_vocab_encode(const ac_vocab *v, const ac_tokens *t, int *out);
/* repeatable[V]: 1 for the words that people say twice in one caption often enough that a caption
 * may do so: used in at least min_captions of caps and said twice or more in at least min_rate of
 * those ("a", "the", "tennis": a tennis player with a tennis racket), 0 for the others ("bathroom":
 * "a bathroom with a bathroom" is a decoder's loop, not a description) and the special ids.
 * (ac_objects_repeatable adds the objects' words.)
 * Words outside the vocabulary are not counted. */
int ac_vocab_repeatable(const ac_vocab *v, const ac_tokens *caps, int n_caps, double min_rate, int min_captions,
                        unsigned char *repeatable, ac_err *err);
void ac_vocab_free(ac_vocab *v);
#ifdef __cplusplus
}
#endif
#endif
