/* attncap/metrics.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/metrics.h: the coco-caption metrics, reproduced in C.
 *
 * Inputs are already tokenized the coco-caption way (ac_tokenize + ac_tokens_join: lowercased PTB
 * tokens separated by single spaces); ac_eval_set_add tokenizes raw captions for you.
 *   BLEU-1..4  bleu/bleu_scorer.py: corpus BLEU, n-gram counts clipped by the maximum count over an
 *              image's references and summed over the corpus; brevity penalty with the reference
 *              length closest to each candidate (ties: the shorter); tiny = 1e-15, small = 1e-9.
 *   ROUGE-L    rouge/rouge.py: per image, the maximum LCS precision and the maximum LCS recall over
 *              references (taken separately), F with beta = 1.2; averaged over images.
 *   CIDEr-D    cider/cider_scorer.py: TF-IDF n-gram vectors (n = 1..4), document frequencies from
 *              the references of the evaluated set, idf = log(N images) - log(max(1, df)); clipped
 *              candidate weights, cosine per n, Gaussian length penalty sigma = 6 on the difference
 *              of the two captions' bigram counts (the scorer's own "length"), mean over n, averaged
 *              over references, x10; averaged over images.
 *   METEOR     meteor.h (METEOR 1.5 semantics), when the scorer is available.
 * Beside them, object mentions (objects.h): precision, recall, F1 and hallucination (CHAIR) of the
 * COCO categories the candidates name. */
#ifndef ATTNCAP_METRICS_H
#define ATTNCAP_METRICS_H
#include "attncap/common.h"
#include "attncap/objects.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One scored image: its references and one candidate, tokenized and space-joined. */
typedef struct ac_eval_item {
    char *id;      /* the image's id as text (may be NULL) */
    int n_refs;
    char **refs;
    char *cand;
    char *path;    /* the photo, when known (for reports); may be NULL */
    char *cand_raw;   /* the candidate as written, when ac_eval_set_add tokenized it (else NULL) */
    char **refs_raw;  /* [n_refs] likewise the references as written (else NULL) */
    char *model;      /* the model that wrote the candidate, when the results say (else NULL) */
} ac_eval_item;

/* A set of items that owns its strings. */
typedef struct ac_eval_set {
    int n, cap;
    ac_eval_item *items;
} ac_eval_set;

/* Appends an image. Raw captions are tokenized (tokenize = 1; the raw text is kept beside them, for
 * reports) or taken as already tokenized (0).
 * Errors (invalid UTF-8, over-long caption, no references) name the id. */
int ac_eval_set_add(ac_eval_set *s, const char *id, const char *const *refs, int n_refs, const char *cand,
                    int tokenize, ac_err *err);
void ac_eval_set_free(ac_eval_set *s);

typedef struct ac_bleu_counts {
    long long testlen, reflen;
    long long guess[4], correct[4];
} ac_bleu_counts;

typedef struct ac_scores {
    int n;                 /* images scored */
    double bleu[4];        /* BLEU-1..4 */
    ac_bleu_counts counts; /* the corpus statistics coco-caption prints */
    double meteor;         /* NAN if METEOR was not computed */
    double rouge_l;
    double cider_d;
    /* Per image (n entries each, malloc'd; freed by ac_scores_free): */
    double *img_bleu4;     /* bleu_scorer's per-sentence BLEU-4 (with its per-sentence brevity penalty):
                            * 0 whenever no 4-gram matches, as coco-caption's per-image scores */
    double *img_bleu4_smooth; /* sentence BLEU-4 smoothed as Lin & Och 2004 (ac_bleu4_smoothed) */
    double *img_rouge_l;
    double *img_cider_d;
    double *img_meteor;    /* NULL if METEOR was not computed */
    ac_object_scores objects; /* object mentions (objects.h), per image too; novel ones unset */
} ac_scores;

enum {
    AC_METRICS_METEOR = 1, /* also compute METEOR (needs WordNet for synonyms; see meteor.h) */
};

/* Computes all metrics over the set. flags: AC_METRICS_*. meteor_wordnet: WordNet dir or NULL for
 * the default. Fails on an empty set or when a requested METEOR scorer cannot be opened. */
int ac_metrics_compute(const ac_eval_set *s, int flags, const char *meteor_wordnet, ac_scores *out, ac_err *err);
void ac_scores_free(ac_scores *sc);

/* The individual metrics over n items (used by ac_metrics_compute, exposed for tests). */
/* bleu[4] and counts over the corpus; img_bleu4 (may be NULL) per image. Returns -1 on OOM. */
int ac_bleu(const ac_eval_item *items, int n, double bleu[4], ac_bleu_counts *counts, double *img_bleu4);
/* Per image: sentence-level BLEU-4 with add-one smoothing of the 2..4-gram precisions (Lin & Och
 * 2004, "BLEU+1"; NLTK's smoothing method 2), the same clipping and closest-reference brevity
 * penalty as ac_bleu; 0 only when no word matches. Returns -1 on OOM. */
int ac_bleu4_smoothed(const ac_eval_item *items, int n, double *img);
/* ROUGE-L of one candidate against its references; -1 when out of memory. */
double ac_rouge_l(const char *cand, char *const *refs, int n_refs);
/* CIDEr-D: the mean, and per image into img (may be NULL). Returns -1 on OOM. */
int ac_cider_d(const ac_eval_item *items, int n, double *mean, double *img);
/* CIDEr-D of one candidate at a time against a fixed corpus: the n items' references (their cand is
 * not read) give the document frequencies once, and ac_cider_corpus_score(c, i, cand) is what
 * ac_cider_d would give image i with cand as its candidate (df depends on the references alone).
 * Self-critical training's reward (train.h). NULL / -1 when out of memory (or i out of range). */
typedef struct ac_cider_corpus ac_cider_corpus;
ac_cider_corpus *ac_cider_corpus_new(const ac_eval_item *items, int n);
double ac_cider_corpus_score(ac_cider_corpus *c, int i, const char *cand);
void ac_cider_corpus_free(ac_cider_corpus *c);

/* ---- loading and writing (eval_io.c) ---- */

/* Scores COCO-format results [{"image_id": ..., "caption": "..."}] against references in any
 * format ac_dataset_load reads (COCO captions JSON, Karpathy JSON, Flickr8k dir or token file,
 * TSV/CSV). Ids are matched as text: the COCO image_id, else the photo's file name (with or
 * without extension). The set holds the images of the results, in their order, as coco-caption
 * does; a result whose id is not among the references, a duplicate id, a missing or empty caption
 * are errors. *n_refs_images (may be NULL) receives how many images the references have. */
int ac_eval_load_results(const char *refs_spec, const char *results_path, ac_eval_set *s, int *n_refs_images,
                         ac_err *err);
/* The same over several results files (the shares of a sharded run), in order. Each may be a JSON list
 * or JSON lines, one object per line: attncap caption --json output, whose "image" path stands for a
 * missing "image_id" by its file name, so the shares' outputs concatenated are a results file too.
 * An image in two files is refused (naming both); a file may be empty when the others are not. */
int ac_eval_load_results_files(const char *refs_spec, const char *const *paths, int n_paths, ac_eval_set *s,
                               int *n_refs_images, ac_err *err);
/* The same, the photos of the references looked up in images_dir (NULL: where the data set's format
 * says, see dataset.h); a photo not found there is taken from the result's "image" path when that is
 * a file. A result's "model" string, when present, is kept as the item's model. */
int ac_eval_load_results_in(const char *refs_spec, const char *images_dir, const char *const *paths, int n_paths,
                            ac_eval_set *s, int *n_refs_images, ac_err *err);
/* A JSON list of {"captions": [refs...], "prediction": "..."} (an "image_id" or "image_name" in an
 * entry becomes its id, else its index). */
int ac_eval_load_pairs(const char *path, ac_eval_set *s, ac_err *err);
/* {"BLEU-1": x, ..., "METEOR": x|null, "ROUGE-L": x, "CIDEr-D": x, "bleu_counts": {...}, "images": n,
 * "objects": {"precision": x, "recall": x, "F1": x, "CHAIR-i": x, "CHAIR-s": x, "tp": .., "novel": {...}
 * (when set)}} (malloc'd; NULL when out of memory). */
char *ac_scores_to_json(const ac_scores *sc);
enum {
    AC_SCORES_JSON_PER_CATEGORY = 1, /* also "objects": {"per_category": {"person": {"tp": .., ...}, ...}} */
};
char *ac_scores_to_json_flags(const ac_scores *sc, int flags);
/* Per-image scores, written atomically: CSV if path ends in .csv (image_id,BLEU-4,METEOR,ROUGE-L,
 * CIDEr-D,candidate,objects,truth,hallucinated,missed; the object columns are category names joined
 * by "; "), else a JSON list of objects that also holds the references and an "objects" entry
 * {"candidate": [...], "truth": [...], "hallucinated": [...], "missed": [...]}. */
int ac_scores_write_per_image(const char *path, const ac_eval_set *s, const ac_scores *sc, ac_err *err);
/* The candidates as scored (tokenized), in COCO results format [{"image_id": ..., "caption": ...}],
 * one result a line, written atomically; ac_eval_load_results reads it back. model: the model file
 * that captioned them, or NULL; each result then names it ("model": its file name), so that a report
 * of these results can. */
int ac_eval_write_results(const char *path, const ac_eval_set *s, const char *model, ac_err *err);
#ifdef __cplusplus
}
#endif
#endif
