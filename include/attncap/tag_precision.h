/* attncap/tag_precision.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/tag_precision.h: how often a tag word is right, learned from the training photos.
 *
 * A tag's score (tags.h) says how sure the encoder's ImageNet head is, not how often people looking at
 * such a photo name the word, and words differ widely in that (docs/naming.md has measured ones). So
 * each word gets its own precision curve,
 *     P(a reference names w | the encoder tags w with score p) = sigmoid(a + b logit(p) + u_w),
 * a logistic regression fitted by maximum likelihood on the tags of the model's training photos (the
 * encoder never trained on them, so its tags there behave as on a user's photo) with a Gaussian prior
 * u_w ~ N(0, 1/lambda): a word seen a few times stays near the shared curve a + b logit(p), a word never
 * seen is on it. Naming (naming.h) forces a tag only when its precision reaches a bar. The model file
 * records the fit (metadata "tag_precision"; `attncap calibrate --tags` writes it). */
#ifndef ATTNCAP_TAG_PRECISION_H
#define ATTNCAP_TAG_PRECISION_H
#include "attncap/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_tag_precision_word {
    char *word;     /* owned */
    int fired;      /* training photos it was a tag of */
    int named;      /* ... whose references name it */
    double u;       /* its offset from the shared curve */
    double sd;      /* u's posterior standard deviation (Laplace: 1 / sqrt(lambda + sum p (1 - p))) */
} ac_tag_precision_word;

typedef struct ac_tag_precision {
    double a, b;    /* the shared curve */
    double lambda;  /* the prior's precision the fit used */
    int n_obs;      /* tags it was fitted on (0: not fitted) */
    int n_words;
    ac_tag_precision_word *words; /* sorted by word (strcmp), for lookup */
} ac_tag_precision;

/* One tag of one photo: words[word] was a tag with score prob, and the photo's references name it or not. */
typedef struct ac_tag_obs {
    int word;
    double prob;
    int named;
} ac_tag_obs;

/* Maximizes sum_i log P(named_i) - lambda/2 sum_w u_w^2 over a, b, u (Newton steps on (a, b) and on each
 * u_w in turn, to convergence). words: n_words distinct names; obs[i].word < n_words; prob in (0, 1]
 * (clipped to [1e-4, 1 - 1e-4] for the logit). Needs both labels among the observations and lambda > 0.
 * out is filled (the words with at least one observation); free it with ac_tag_precision_free. */
int ac_tag_precision_fit(const char *const *words, int n_words, const ac_tag_obs *obs, int n_obs, double lambda,
                         ac_tag_precision *out, ac_err *err);
/* P(named) of word at score prob; NAN when tp is not fitted. A word it never saw (or NULL): the shared
 * curve. */
double ac_tag_precision_of(const ac_tag_precision *tp, const char *word, double prob);
/* The same with u_w raised by z posterior standard deviations (a word never seen: u = 0, sd =
 * 1 / sqrt(lambda)): how precise the word may still be, as far as the training photos can tell. A rule
 * that bans a word below a bar by this bound (z > 0) bans only words the photos show to be imprecise,
 * not those they say little of. */
double ac_tag_precision_bound(const ac_tag_precision *tp, const char *word, double prob, double z);
/* The word's entry, or NULL. */
const ac_tag_precision_word *ac_tag_precision_find(const ac_tag_precision *tp, const char *word);
/* {"a":..,"b":..,"lambda":..,"n":..,"words":{"robe":[fired,named,u,sd],...}} (malloc'd) and back:
 * from_json refuses non-finite numbers, sd <= 0, counts that are not integers with 0 <= named <= fired,
 * and duplicates. */
char *ac_tag_precision_to_json(const ac_tag_precision *tp);
int ac_tag_precision_from_json(const char *json, ac_tag_precision *tp, ac_err *err);
void ac_tag_precision_free(ac_tag_precision *tp);

#ifdef __cplusplus
}
#endif
#endif
