/* attncap/naming_opts.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/naming_opts.h: the naming's settings (naming.h), and the model file's "naming" record of them.
 *
 * In the model family, not the naming's: ac_model_load checks the record (ac_naming_check_json) before
 * anything names a photo with it, so the model file never stores settings the naming would refuse. */
#ifndef ATTNCAP_NAMING_OPTS_H
#define ATTNCAP_NAMING_OPTS_H
#include "attncap/beam.h"
#include "attncap/model.h"
#include "attncap/presence.h"

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
/* The defaults with the fields recorded in m's metadata "naming" (ac_naming_apply_json), and mode AUTO
 * when the model records them. A record that fails ac_naming_check_json (only a model built in memory:
 * ac_model_load refuses the file) gives the defaults. */
ac_naming_opts ac_naming_opts_for_model(const ac_model *m);
/* A "naming" record checked: a JSON object whose every key is one of threshold [0, 1], max_tags (a
 * whole number in [0, AC_MAX_CONSTRAINTS]), max_drop [0, 100], min_confidence [0, 1], absent [0, 1],
 * absent_object [0, 1], trust_logprob [-100, 0], presence_absent [0, 1], presence_ratio [0, 100],
 * trust_seen [0, 1e9], rare_max_drop [0, 100], tag_objects_only [0, 1] (on when above 0),
 * tag_min_precision [0, 1], each a number in its range; one line naming the first that is not.
 * ac_model_load refuses a file whose "naming" fails it, and `attncap tune --naming` writes none. */
int ac_naming_check_json(const char *json, ac_err *err);
/* o with the fields a "naming" record gives set from it (the others, and the mode, left as they are);
 * a record that fails ac_naming_check_json changes nothing and returns -1 with its message. */
int ac_naming_apply_json(ac_naming_opts *o, const char *json, ac_err *err);

#ifdef __cplusplus
}
#endif
#endif
