/* attncap/presence_data.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/presence_data.h: the presence head's training set (presence.h) from captioned photos and
 * their feature cache.
 *
 * x = each photo's whole-grid mean annotation vector (ac_presence_pool); y = which of COCO's 80
 * categories (objects.h) at least min(2, its captions) of its references name. A category becomes a
 * group of the head when at least min_photos of the photos have it; its forms are objects.h's
 * synonyms and their regular plurals (cat, cats, kitten, kittens...). */
#ifndef ATTNCAP_PRESENCE_DATA_H
#define ATTNCAP_PRESENCE_DATA_H
#include <stdint.h>

#include "attncap/common.h"
#include "attncap/dataset.h"
#include "attncap/features.h"
#include "attncap/objects.h"
#include "attncap/presence.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_presence_set {
    int n, dim;                 /* photos, vector size */
    float *x;                   /* [n, dim] */
    uint8_t *y;                 /* [n, AC_N_OBJECTS]: category present */
    int positives[AC_N_OBJECTS]; /* photos with each category */
    int missing;                /* photos of the sets the cache lacks (skipped) */
} ac_presence_set;

/* The photos of `split` (AC_SPLIT_NONE: all) of the n_sets sets that fc holds, each key once (the
 * first set naming it). Fails on a caption the tokenizer refuses (naming the photo) or an empty set. */
int ac_presence_set_build(const ac_feature_cache *fc, const ac_dataset *sets, int n_sets, ac_split split,
                          ac_presence_set *out, ac_err *err);
void ac_presence_set_free(ac_presence_set *s);

/* The categories with at least min_photos positives: *groups (k of them, each with its prior; the
 * caller frees each with its forms, or through ac_presence_init + ac_presence_free), cats[k] their
 * category indices, and y_out [n, k] (malloc'd) the set's labels of those. Returns k (0: none
 * qualifies), or -1. */
int ac_presence_set_groups(const ac_presence_set *s, int min_photos, ac_presence_group **groups,
                           int cats[AC_N_OBJECTS], uint8_t **y_out, ac_err *err);
/* The same for the k given categories cats[k] (any number of positives): *groups and y_out [n, k].
 * Returns 0 or -1. */
int ac_presence_set_groups_of(const ac_presence_set *s, const int *cats, int k, ac_presence_group **groups,
                              uint8_t **y_out, ac_err *err);
/* The set's labels of the k categories cats[k]: y_out [n, k] (malloc'd), and prior[k] (may be NULL)
 * the share of its photos that show each. Returns 0 or -1. */
int ac_presence_set_labels(const ac_presence_set *s, const int *cats, int k, uint8_t **y_out, float *prior, ac_err *err);
#ifdef __cplusplus
}
#endif
#endif
