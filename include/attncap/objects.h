/* attncap/objects.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/objects.h: which of COCO's 80 object categories a caption names, and object scores of
 * generated captions against their references, with the CHAIR metric of Rohrbach et al. 2018
 * ("Object Hallucination in Image Captioning") as the anchor.
 *
 * Matching (src/data/objects.c). A caption is tokenized as the metrics tokenize it (tokenize.h: lowercased
 * PTB tokens); tokens are further split at hyphens, so "hot-dog" reads "hot dog". Each category has
 * a synonym list of our own: words and multi-word phrases ("person": man, women, skier, ...; "tv":
 * television, monitor; "dining table": table, desk), each also matching the regular plurals of its
 * last word (+s; +es after s x z ch sh o; consonant + y -> ies); irregular plurals are listed.
 * Left to right, at each word the longest phrase that starts there wins and its words are used up:
 * "hot dog" names hot dog and not dog, "teddy bear" not bear, "wine glass" not ..., "microwave
 * oven" not oven. Some phrases name nothing and only block a shorter one ("bus stop", "toilet
 * paper", "ski slope", "oven mitt", "dvd player", "zebra crossing"). Two rules beyond phrases:
 *   - a person word used as an animal's modifier names only the animal: "baby elephant", "mother
 *     duck", "adult giraffes", and after "its" ("an elephant and its baby");
 *   - "orange" names the fruit only where a noun cannot follow it as a colour: at the end ("holding an
 *     orange"), or before a function word, a verb or a fruit part ("an orange on a plate", "orange
 *     slices"), and not after "is"/"painted"/... or before "and"/"or" + a colour ("orange and white
 *     cat"). "oranges" is always the fruit.
 * Only these English words match: in a Vietnamese caption only English loan words do ("beagle",
 * "jeep"), and any bytes are safe to match.
 *
 * Scores (src/eval/objects_score.c) over an evaluation set (metrics.h; its captions are already tokenized).
 * Per photo: truth = the categories named by at least min(AC_OBJECTS_TRUTH_REFS, n_refs) of its
 * references; named = the categories any reference names; C = the candidate's categories. Pooled
 * over photos and categories: TP = |C and truth|, FP = |C - truth|, FN = |truth - C|; precision,
 * recall, F1. A category of C that no reference names is hallucinated: CHAIR-i = hallucinated / |C|
 * (pooled: the share of named objects that no reference names), CHAIR-s = the share of captions
 * (all captions) naming at least one hallucinated object. A category named by one reference only is
 * neither truth nor hallucinated: it counts as a false positive but not as a hallucination.
 * Novel categories (those a training set names in fewer than N photos, ac_objects_photo_counts):
 * novel recall = TP / (TP + FN) over their truth only. Undefined ratios (0/0) are NAN. */
#ifndef ATTNCAP_OBJECTS_H
#define ATTNCAP_OBJECTS_H
#include "attncap/common.h"
#include "attncap/dataset.h"
#include "attncap/vocab.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AC_N_OBJECTS 80
#define AC_OBJECT_PERSON 0 /* COCO's category 0 */
#define AC_OBJECTS_TRUTH_REFS 2 /* truth: named by at least this many references (fewer if the photo has fewer) */

/* COCO's name of category k (0..79, in COCO's category order: "person", "bicycle", ..., "toothbrush"),
 * NULL when out of range. */
const char *ac_object_name(int k);
/* The category of a COCO name, -1 if none. */
int ac_object_index(const char *name);
/* Category k's synonyms, a NULL-terminated list of space-separated phrases (lowercased tokens). */
const char *const *ac_object_synonyms(int k);
/* The phrases that name no category but block shorter matches inside them (NULL-terminated). */
const char *const *ac_object_blockers(void);
/* The most synonyms and blockers the matcher's table holds, all together (today's: 656). */
#define AC_OBJECT_PHRASES_MAX 1024

/* Sets present[k] to 1 for each category that `tokens` (a caption already tokenized and joined by
 * single spaces, as ac_eval_set holds them) names, 0 for the others. Returns how many are present.
 * Never fails; any text is accepted. */
int ac_objects_in_tokens(const char *tokens, uint8_t present[AC_N_OBJECTS]);
/* The same for a raw caption, tokenized first. Returns -1 (message in err) when the tokenizer
 * refuses it (invalid UTF-8, longer than the caption limit). */
int ac_objects_in_text(const char *caption, uint8_t present[AC_N_OBJECTS], ac_err *err);
/* word_object[w] = the category vocabulary word w names alone, as the matcher reads it (plurals too:
 * "men" -> person), or -1; the special tokens -1. Computed per word: 8 ms for 8,916 words (2026-11-29). */
void ac_objects_of_vocab(const ac_vocab *v, signed char *word_object);
/* Sets repeatable[w] = 1 for every vocabulary word that names an object other than a person (laptop,
 * couches, hot dog's "dog"...), leaving the others as they are: what `attncap tune --repeats` adds to
 * the words people repeat. Forbidding a second "laptop" makes the search fill that slot with another
 * object, most often a wrong one; a person's words stay out ("a man ... a man" is a loop). */
void ac_objects_repeatable(const ac_vocab *v, unsigned char *repeatable);
/* The names of the present categories joined by sep into buf (always NUL-terminated; truncated if
 * n is too small). Returns the length the whole list needs. */
size_t ac_objects_join(const uint8_t present[AC_N_OBJECTS], const char *sep, char *buf, size_t n);

typedef struct ac_object_scores {
    int n;                          /* photos */
    long long tp, fp, fn;           /* pooled over photos and categories */
    long long mentioned;            /* categories the candidates name, summed over photos (TP + FP) */
    long long hallucinated;         /* of those, named by no reference */
    int captions_hallucinating;     /* candidates naming at least one hallucinated category */
    double precision, recall, f1;   /* NAN when undefined */
    double chair_i, chair_s;        /* hallucinated / mentioned; captions_hallucinating / n */
    int tp_k[AC_N_OBJECTS], fp_k[AC_N_OBJECTS], fn_k[AC_N_OBJECTS], hall_k[AC_N_OBJECTS];
    /* Novel categories, after ac_object_scores_set_novel (else n_novel = 0, novel_max = 0 and
     * novel_recall NAN): */
    int novel_max;                       /* novel: named in fewer than this many source photos */
    int source_photos[AC_N_OBJECTS];     /* photos of the source naming each category */
    uint8_t novel[AC_N_OBJECTS];
    int n_novel;
    long long novel_tp, novel_truth;     /* TP and TP + FN over the novel categories */
    long long novel_mentioned;           /* novel categories the candidates name */
    double novel_recall;
    /* Per photo, n rows of AC_N_OBJECTS flags each (row i = photo i of the set; malloc'd): */
    uint8_t *cand;  /* named by the candidate */
    uint8_t *truth; /* named by >= min(AC_OBJECTS_TRUTH_REFS, n_refs) references */
    uint8_t *named; /* named by at least one reference */
} ac_object_scores;

struct ac_eval_set;
/* Scores the candidates of s against their references (see the top of this file). An empty set
 * gives n = 0 and NAN ratios. Returns -1 only when out of memory. */
int ac_objects_score(const struct ac_eval_set *s, ac_object_scores *out, ac_err *err);
/* Marks as novel the categories named in fewer than max_photos of a source's photos
 * (photo_counts from ac_objects_photo_counts) and computes the novel counts and recall. */
void ac_object_scores_set_novel(ac_object_scores *o, const int photo_counts[AC_N_OBJECTS], int max_photos);
void ac_object_scores_free(ac_object_scores *o);
/* Photo i's lists as flags: named by the candidate, truth, hallucinated (named by the candidate and
 * no reference), missed (truth the candidate does not name). Any output may be NULL. */
void ac_object_scores_image(const ac_object_scores *o, int i, uint8_t cand[AC_N_OBJECTS], uint8_t truth[AC_N_OBJECTS],
                            uint8_t hallucinated[AC_N_OBJECTS], uint8_t missed[AC_N_OBJECTS]);

/* For each category, how many photos of ds in `split` (AC_SPLIT_NONE: every photo) name it, a photo
 * naming a category when at least one of its captions does. *n_photos (may be NULL) receives how
 * many photos were counted. A caption the tokenizer refuses is an error naming the photo. */
int ac_objects_photo_counts(const ac_dataset *ds, ac_split split, int counts[AC_N_OBJECTS], int *n_photos,
                            ac_err *err);
#ifdef __cplusplus
}
#endif
#endif
