/* attncap/dataset.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/dataset.h: captioned-photo sets. Readers for COCO captions JSON, Karpathy dataset_*.json,
 * Flickr8k (Flickr8k.token.txt + split files) and TSV/CSV of image<TAB>caption lines. Malformed
 * files give an error naming the file and line (or JSON path), never a crash. */
#ifndef ATTNCAP_DATASET_H
#define ATTNCAP_DATASET_H
#include "attncap/common.h"
#include "attncap/tokenize.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { AC_SPLIT_TRAIN = 0, AC_SPLIT_VAL = 1, AC_SPLIT_TEST = 2, AC_SPLIT_NONE = 3 } ac_split;

typedef struct ac_ds_image {
    char *key;      /* photo file name without directory: the feature-cache key */
    char *path;     /* full path to the photo (image_dir joined with its relative path) */
    char *id;       /* the dataset's id for it (COCO image_id as text, else the key) */
    ac_split split;
    int n_caps;
    char **caps;    /* raw captions as in the file */
} ac_ds_image;

typedef struct ac_dataset {
    int n;
    ac_ds_image *images;
    char *image_dir;
    char *format; /* "coco", "karpathy", "flickr8k", "tsv" */
} ac_dataset;

/* SPEC: a Flickr8k directory (with Flickr8k.token.txt; photos in DIR/images or DIR/Flicker8k_Dataset),
 * a .json (COCO captions or Karpathy, told apart by content; photos in its dir's images/ unless
 * image_dir is given), or a .tsv/.csv file of image<TAB>caption[<TAB>split] (image,caption[,split])
 * lines, photos in images/ beside it. Images without a split in the file (COCO; TSV/CSV lines without
 * one) get one by the FNV-1a 64 hash h of the key: h ^= h >> 29, r = h % 100, r < 90 train, r < 95
 * val, else test (90/5/5, deterministic; `attncap help data`). image_dir may be NULL. */
int ac_dataset_load(const char *spec, const char *image_dir, ac_dataset *ds, ac_err *err);
void ac_dataset_free(ac_dataset *ds);
ac_split ac_split_parse(const char *s); /* "train", "val"/"dev", "test"; AC_SPLIT_NONE otherwise */
/* The captions of SPECS (comma-separated data sets, as ac_dataset_load reads them), of the photos of
 * one split (AC_SPLIT_NONE: all), tokenized and appended to toks[0..*n) (capacity *cap, grown with
 * realloc; the caller frees each with ac_tokens_free, then the array). Captions that are not valid
 * UTF-8, empty or longer than max_words are skipped. */
int ac_dataset_read_tokens(const char *specs, ac_split split, int max_words, ac_tokens **toks, int *n, int *cap,
                           ac_err *err);
#ifdef __cplusplus
}
#endif
#endif
