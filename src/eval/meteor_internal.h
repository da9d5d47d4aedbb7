/* meteor_internal.h (internal to the METEOR module: metrics_meteor.c, meteor_normalize.c,
 * meteor_wordnet.c): a string table, and WordNet 3.0 as METEOR's synonym matcher sees it.
 *
 * WordNet: METEOR ships two derived files, english.synsets (every index lemma -> the set of its synset
 * offsets, all parts of speech merged, offsets compared as bare integers) and english.exceptions
 * (the four *.exc morphological exception lists, inflected form -> base forms). We build the same
 * two maps from Debian's wordnet-base index.* and *.exc files. */
#ifndef ATTNCAP_METEOR_INTERNAL_H
#define ATTNCAP_METEOR_INTERNAL_H
#include <stddef.h>
#include <stdint.h>

#include "attncap/common.h"

/* A string interning table: strings get dense ids 0, 1, 2, ... in insertion order. */
typedef struct ac_strtab {
    char *chars;
    size_t chars_len, chars_cap;
    uint32_t *off; /* id -> offset in chars */
    uint32_t n, cap;
    uint32_t *slots; /* open addressing, id + 1 (0 = empty) */
    uint32_t n_slots;
} ac_strtab;

/* Id of s[0..len) or -1. */
int64_t ac_strtab_find(const ac_strtab *t, const char *s, size_t len);
/* Id of s[0..len), added if new; -1 if out of memory. */
int64_t ac_strtab_intern(ac_strtab *t, const char *s, size_t len);
static inline const char *ac_strtab_str(const ac_strtab *t, uint32_t id) { return t->chars + t->off[id]; }
void ac_strtab_free(ac_strtab *t);

typedef struct ac_wordnet ac_wordnet;

/* Loads dir/index.{noun,verb,adj,adv} and dir/{noun,verb,adj,adv}.exc. */
int ac_wordnet_load(const char *dir, ac_wordnet **wn, ac_err *err);
void ac_wordnet_free(ac_wordnet *wn);

/* The synset set METEOR's SynonymMatcher gives a word: getSynSets(word) united with
 * getStemSynSets(word) (exception-list bases, else WordNet's suffix-rule morphology). Writes a
 * sorted, duplicate-free list into *buf (grown with realloc as needed; *cap tracks its size) and
 * returns its length, or -1 if out of memory. */
int ac_wordnet_synonym_sets(const ac_wordnet *wn, const char *word, uint32_t **buf, int *cap);

/* Number of lemmas loaded (for tests and reports). */
int ac_wordnet_lemma_count(const ac_wordnet *wn);
#endif
