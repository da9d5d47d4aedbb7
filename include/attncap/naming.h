/* attncap/naming.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/naming.h: name what the encoder sees.
 *
 * The decoder learned its nouns from a few thousand captioned photos; the encoder's ImageNet head knows
 * a thousand object classes. From the same CNN pass (cnn.h, ac_class_head) the classes' probabilities
 * become tag words through the class -> word table (tags.h: Egyptian cat -> cat), and a tag the
 * caption does not already name becomes a constraint of the beam search (beam.h: the caption must
 * contain "cat" or "cats"), when the model agrees it fits: the constrained caption is taken only if
 * its mean log-probability per token is at most max_drop below the free caption's. The attention of a
 * forced word is the model's own when it said the word (the search keeps every hypothesis's attention).
 *
 * Confidence: a calibrated probability that the caption is right (confidence.h), from the model's
 * calibration; below min_confidence the caption is replaced by a plain description from the best tag
 * ("a photo of a cat"), itself scored by the model with its attention (teacher forcing). */
#ifndef ATTNCAP_NAMING_H
#define ATTNCAP_NAMING_H
#include "attncap/beam.h"
#include "attncap/confidence.h"
#include "attncap/model.h"
#include "attncap/presence.h"
#include "attncap/regions.h"
#include "attncap/tags.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { AC_TAGS_OFF = 0, AC_TAGS_AUTO = 1, AC_TAGS_GIVEN = 2 } ac_tags_mode;

typedef struct ac_naming_opts {
    ac_tags_mode mode;
    float threshold;      /* AUTO: a tag word's score (tags.h: the largest, over the whole photo and the
                             windows, of its classes' summed probability) must reach this */
    int max_tags;         /* at most this many constraints, the most probable first */
    float max_drop;       /* AUTO: the constrained caption's mean token log-probability may be at most
                             this far below the free caption's; larger drops keep the free caption */
    float min_confidence; /* a caption whose confidence is below this is replaced by a description from
                             the best tag the model can say (0 = never) */
    const char *words;    /* GIVEN: comma-separated words or phrases that must appear ("cat,sofa") */
    float absent;         /* AUTO: a word of AC_NAMING_WELL_COVERED or more classes (dog: 118, bird: 52,
                             cat...) whose score is below this is never said: the encoder is sure it is
                             not there (0 = off) */
    float absent_object;  /* AUTO: nor a word of fewer classes that names one of COCO's objects other than a
                             person (objects.h: couch, bed, table, duck) scoring below this (0 = off). A
                             token another word the photo shows needs is never banned (hot dog's "dog") */
    float trust_logprob;  /* AUTO: a free caption whose mean token log-probability (ac_caption_mean_logprob,
                             the confidence's raw score) reaches this is kept as it is unless a tag scores
                             AC_NAMING_SURE or more (0 = tags are always tried). The raw score, not the
                             calibrated confidence: refitting the calibration must not change captions */
    float trust_seen;     /* AUTO: the trust covers only tag words the captions of the model's training
                             photos said at least this often (model.h paired_counts; its most said
                             form); rarer ones are tried whatever the confidence (0 = all covered) */
    float rare_max_drop;  /* AUTO: max_drop for a constrained caption that must say such a rare object
                             (0 = max_drop): its language model knows little of it either */
    const ac_presence *presence; /* AUTO: a presence head over the model's encoder (presence.h), or NULL */
    float presence_absent; /* AUTO, with presence: a group (person, dining table...) whose probability over
                              the whole photo is below this is never said, none of its one-word forms
                              (0 = off) */
    float presence_ratio;  /* AUTO, with presence: nor one whose probability is below this times its prior
                              (the share of the head's training photos that show it; presence.h): at 1, a
                              group the head finds less likely in this photo than in the average training
                              photo is never said (0 = off; a group without a recorded prior is not
                              affected) */
    int tag_objects_only;  /* AUTO: non-zero = a constrained caption names no object (one of COCO's
                              categories, objects.h) but those of the free caption and of its required
                              tags; 0 = off. The model's "naming" records it as a number in [0, 1], on
                              when above 0 */
    float min_precision;  /* AUTO: a tag is not forced when its precision (tag_precision.h: how often the
                             references of the model's training photos named it at such a score) is below
                             this even AC_NAMING_PRECISION_Z posterior standard deviations up: only words
                             the photos show to be imprecise are held back (a model without the fit, or 0:
                             off) */
    const signed char *word_object; /* with tag_objects_only: [vocab] the category each of the model's
                               words names (ac_objects_of_vocab), or NULL: made on each call */
} ac_naming_opts;
#define AC_NAMING_SURE 0.9f
#define AC_NAMING_PRECISION_Z 1.645 /* one-sided 95 %: held back when 95 % sure it is below the bar */
#define AC_NAMING_WELL_COVERED 5

/* off; threshold 0.5, max_tags 2, max_drop 0.6, min_confidence 0, absent 0; a model's metadata
 * "naming" (the values chosen on dev photos, models/README.md) overrides them (ac_naming_opts_for_model). */
ac_naming_opts ac_naming_defaults(void);
/* The defaults with the fields recorded in m's metadata "naming" (JSON: threshold, max_tags, max_drop,
 * min_confidence, absent, absent_object, trust_logprob, presence_absent, presence_ratio, trust_seen,
 * rare_max_drop, tag_objects_only, tag_min_precision), and mode AUTO when the model records them. */
ac_naming_opts ac_naming_opts_for_model(const ac_model *m);
/* A model's "naming" metadata checked: every key known, every value in its range (one line naming
 * the first that is not). ac_model_load refuses a file that fails it. */
int ac_naming_check_json(const char *json, ac_err *err);

/* One photo: the free beam search, then the tags and the constrained search as above, then the
 * confidence. probs: n_rows rows of n_classes (ac_class_head_forward's layout), NULL when the mode is
 * OFF or GIVEN. Fills out (tags, confidence, description flag included). Deterministic. */
int ac_name_caption(const ac_model *m, const ac_tag_table *t, const ac_naming_opts *o, const ac_beam_opts *bo,
                    const float *ann, const float *probs, int n_rows, int n_classes, ac_caption *out, ac_err *err);

/* Many photos at once, each named exactly as ac_name_caption would (same captions bit for bit): their
 * free searches go together (ac_beam_search_photos), then their constrained searches, round by
 * round. A photo that fails (failed, err) does not stop the others. Returns 0 if none failed. */
typedef struct ac_name_task {
    const float *ann;   /* [L, D] */
    const float *probs; /* as ac_name_caption's */
    ac_caption out;     /* the caller frees it */
    int failed;
    ac_err err;
    int grid_h, grid_w; /* the photo's own grid (decoder.h, masks); 0: the model's */
    int n_regions;      /* regions after the grid's cells in ann (regions.h); 0: none */
    const ac_region *regions; /* [n_regions] what they are (a copy model copies from their categories); may be NULL */
} ac_name_task;
int ac_name_captions(const ac_model *m, const ac_tag_table *t, const ac_naming_opts *o, const ac_beam_opts *bo,
                     int n_rows, int n_classes, int n, ac_name_task *tasks);
/* A task's photo grid: its own, or cfg's when it gives none. */
void ac_name_task_grid(const ac_decoder_config *cfg, const ac_name_task *task, int *gh, int *gw);

#ifdef __cplusplus
}
#endif
#endif
