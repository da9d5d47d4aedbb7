/* attncap/imagenet_words.h: not part of the stable API; may change in any release (the core: attncap.h).
 * The words COCO's categories lack, named through a copy model's own copy path (decoder.h's
 * config.imagenet_words): a word the encoder's ImageNet classifier can say (butterfly, fountain,
 * castle) is a copy category after COCO's 80, a photo gets a region of it where the classifier sees
 * it, and the decoder names it as it names a detected giraffe. No threshold of its own, no rule:
 * the region competes with the detector's (the model's region_min_score, its regions at most), and
 * the pointer learns when to copy it.
 *
 * A model records its words in metadata "imagenet_words" (model.h):
 *   {"classes": 1001, "words": [{"word": "butterfly", "forms": ["butterfly", "butterflies"],
 *                               "classes": [321, 322, 323, 324, 325, 326]}, ...]}
 * word j is category AC_COPY_CATEGORIES + j; its forms are the vocabulary words that name it (one token
 * each); its classes the classifier outputs that mean it (of "classes" outputs). Checked at load: as
 * many words as config.imagenet_words, every form a word of the vocabulary that names no COCO category
 * and no other ImageNet word, every class in range and in one word at most.
 *
 * A photo's score of word j is the classifier's probability of its classes, summed, in the best of
 * the whole photo and the naming's windows (encoder.h ac_grid_naming_windows, the classifier's own
 * scale at 448), as the tags' (tags.h ac_tags_from_probs); its region is that window. */
#ifndef ATTNCAP_IMAGENET_WORDS_H
#define ATTNCAP_IMAGENET_WORDS_H
#include "attncap/common.h"
#include "attncap/decoder.h"
#include "attncap/encoder.h"
#include "attncap/features.h"
#include "attncap/regions.h"
#include "attncap/vocab.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_imagenet_words {
    int n;            /* words (0: none) */
    int n_classes;    /* the classifier's outputs (1001 for the ImageNet MobileNets) */
    char **word;      /* [n] the word, as the table names it ("butterfly") */
    int *form_off;    /* [n + 1]: word j's forms are form_id[form_off[j] .. form_off[j + 1] - 1] */
    int *form_id;     /* vocabulary ids */
    short *class_word; /* [n_classes] the word a class means, -1 for none */
} ac_imagenet_words;

/* At most this many words: copy categories AC_COPY_CATEGORIES .. AC_COPY_CATEGORIES_MAX - 1. */
#define AC_IMAGENET_WORDS_MAX 175

/* Room for n words, n_forms forms and n_classes classes, no class mapped yet (class_word all -1). */
int ac_imagenet_words_alloc(ac_imagenet_words *w, int n, int n_forms, int n_classes, ac_err *err);
/* metadata "imagenet_words" (above), checked against the vocabulary; n_expected: the config's count. */
int ac_imagenet_words_parse(const char *json, const ac_vocab *v, int n_expected, ac_imagenet_words *out, ac_err *err);
/* That record (malloc'd); NULL when out of memory. */
char *ac_imagenet_words_json(const ac_imagenet_words *w, const ac_vocab *v);
void ac_imagenet_words_free(ac_imagenet_words *w);

/* Sets word_category[id] = AC_COPY_CATEGORIES + j for every form of word j (the rest left as they are). */
void ac_imagenet_words_categories(const ac_imagenet_words *w, short *word_category);
/* The word category c names (c >= AC_COPY_CATEGORIES), NULL if none. */
const char *ac_imagenet_words_name(const ac_imagenet_words *w, int category);
/* A region's label: its COCO category's name (objects.h), or its ImageNet word (w may be NULL: none). */
const char *ac_region_label(const ac_imagenet_words *w, int category);
/* The caption's words (vocabulary ids, n of them) that are forms of an ImageNet word: their categories,
 * each once, appended to cat (which holds *n_cat, room for cap). word_category [vocab]: each word's
 * category, as ac_imagenet_words_categories fills it (ids below AC_COPY_CATEGORIES are passed over). */
void ac_imagenet_words_in_caption(const short *word_category, const int *ids, int n, unsigned char *cat, int *n_cat,
                                  int cap);

/* A photo's regions of its ImageNet words: probs holds n_rows rows of w->n_classes probabilities (the
 * whole photo, then win[0 .. n_rows - 2], grid gh x gw: ac_class_head_forward's layout); each word
 * scoring at least min_score gets a region (its best row's window, the whole photo for row 0). Writes
 * at most cap, best first; returns how many. */
int ac_imagenet_words_regions(const ac_imagenet_words *w, const float *probs, int n_rows, const ac_grid_window *win,
                              int gh, int gw, float min_score, ac_region *out, int cap);
/* A feature cache's rows given their ImageNet words' regions as the captioner gives a photo them: the
 * encoder the cache came from (its identity, found as ac_find_encoder finds it beside model_path) runs
 * its classifier head on each row's grid over the whole photo and the naming's windows; each row's
 * regions (rr: its detections, ac_rows_regions_load) become the best `max` (<= rr->stride) of its
 * detections and its words' regions scoring at least min_score. Training and scoring from features
 * thus see the regions a photo gets when captioned. threads: the head's rows in parallel (0: all). */
int ac_imagenet_words_add_to_rows(const ac_imagenet_words *w, const ac_feature_cache *fc, const char *model_path,
                                  float min_score, int max, int threads, ac_rows_regions *rr, ac_err *err);

#ifdef __cplusplus
}
#endif
#endif
