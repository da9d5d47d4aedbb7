/* attncap/meteor.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/meteor.h: METEOR 1.5 as coco-caption runs it (`meteor-1.5.jar - - -stdio -l en -norm`),
 * reproduced in C: the -norm normaliser, exact / stem (Snowball English) / synonym (WordNet 3.0)
 * matching, the aligner's beam search (with its quirks), content/function word weighting and the
 * ranking-task English parameters alpha 0.85, beta 0.20, gamma 0.60, delta 0.75, module weights
 * exact 1.0, stem 0.6, synonym 0.8, paraphrase 0.6.
 *
 * Not reproduced: the paraphrase table (not available here; its module never matches) and
 * METEOR's exact function-word list (ours follows the rule METEOR's was made by: words with a
 * relative frequency above 1e-3 in English news). See src/eval/metrics_meteor.c for measured effects.
 *
 * Inputs are plain UTF-8 captions (coco-caption passes them PTB-tokenized and lowercased); the
 * -norm normaliser is applied to them as METEOR does.
 *
 * An ac_meteor holds loaded resources and scratch buffers: one per thread. */
#ifndef ATTNCAP_METEOR_H
#define ATTNCAP_METEOR_H
#include "attncap/common.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { AC_METEOR_EXACT, AC_METEOR_STEM, AC_METEOR_SYNONYM, AC_METEOR_PARAPHRASE, AC_METEOR_MODULES };

/* Words of a line beyond this are ignored: METEOR's search costs grow with the square of the
 * words per position, so a hostile line of thousands of repeated words must not stall scoring.
 * Captions are far shorter. */
enum { AC_METEOR_MAX_WORDS = 256 };

/* METEOR's sufficient statistics of one segment (or a sum of segments), word counts as doubles
 * as METEOR keeps them. "test" is the candidate, "ref" the reference. */
typedef struct ac_meteor_stats {
    double test_len, ref_len;   /* words after normalisation */
    double test_func, ref_func; /* function words among them */
    double test_content[AC_METEOR_MODULES], ref_content[AC_METEOR_MODULES];   /* matched, per module */
    double test_function[AC_METEOR_MODULES], ref_function[AC_METEOR_MODULES];
    double chunks;
    double test_word_matches, ref_word_matches;
    /* Filled by ac_meteor_compute(): */
    double precision, recall, fmean, frag_penalty, score;
} ac_meteor_stats;

typedef struct ac_meteor ac_meteor;

/* Loads the Snowball English stemmer, the function-word list and WordNet (index.* and *.exc from
 * wordnet_dir; NULL means /usr/share/wordnet). With wordnet_dir NULL and no WordNet installed, the
 * scorer still opens with exact + stem matching only: check ac_meteor_has_synonyms() and warn.
 * An explicit wordnet_dir that is missing or unreadable is an error. */
int ac_meteor_open(const char *wordnet_dir, ac_meteor **m, ac_err *err);
void ac_meteor_close(ac_meteor *m);
/* 1 if WordNet synonyms are loaded and enabled. */
int ac_meteor_has_synonyms(const ac_meteor *m);
/* Turns synonym matching off (0) or back on (1, only if WordNet was loaded). For measurements. */
void ac_meteor_set_synonyms(ac_meteor *m, int on);

/* Scores one candidate against its references as METEOR's SCORE command does: the candidate is
 * aligned to each reference and the reference with the best score wins (first on ties). Fills
 * *st (may be NULL) with that reference's statistics and returns its score in [0, 1], or -1 on
 * allocation failure. n_refs == 0 gives 0. */
double ac_meteor_segment(ac_meteor *m, const char *cand, const char *const *refs, int n_refs,
                         ac_meteor_stats *st);

/* Adds s into agg as METEOR's aggregation does (a perfect segment's single chunk is not counted). */
void ac_meteor_stats_add(ac_meteor_stats *agg, const ac_meteor_stats *s);
/* METEOR's computeMetrics: fills precision..score of st from its counts and returns the score. */
double ac_meteor_compute(ac_meteor_stats *st);

/* The score coco-caption reports: segments scored one by one, their statistics summed, METEOR
 * computed on the sum (not the mean of segment scores). refs[i] has n_refs[i] references.
 * seg_scores (may be NULL) receives each segment's score. Returns -1 on allocation failure. */
double ac_meteor_corpus(ac_meteor *m, int n, const char *const *cands, const char *const *const *refs,
                        const int *n_refs, double *seg_scores);

/* METEOR's -norm normalisation of one line (tokenisation of punctuation, dashes, contractions,
 * dots; then lowercasing), as a malloc'd string of space-separated tokens; NULL if out of memory. */
char *ac_meteor_normalize(const char *line);
#ifdef __cplusplus
}
#endif
#endif
