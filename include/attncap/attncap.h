/* attncap/attncap.h: libattncap's stable core API, whole in this one header.
 *
 *     #include <attncap/attncap.h>          cc prog.c $(pkg-config --cflags --libs attncap)
 *
 * Photo -> caption with visual attention (Xu et al. 2015, "Show, Attend and Tell"): open a captioner
 * (the model file and the encoder it was trained with), caption photos (a file, an encoded photo in
 * memory, RGB pixels, or many at once), read each result (the caption, its confidence, its words, where
 * the model looked for each word, the runners-up, the tags), draw its overlays or print it as JSON, and
 * score captions against references as coco-caption does; detect COCO objects (1.1) and classify a
 * photo's ImageNet classes (1.2); caption a list of photos with each result handed over as it is done,
 * and read what a result holds beyond its struct: its detected objects, the attention on them, what was
 * copied (1.3); cache photos' features and train a model on them (1.4); evaluate as `attncap eval`
 * does, describe a model or encoder file, write the page of a caption run, and run the
 * maintainers' tools (1.6); run the detector's products on integers (1.7).
 *
 * Conventions
 *  - Handles are opaque: ac_model, ac_captioner, ac_detector, ac_classifier, ac_trainer, ac_featurizer,
 *    ac_evaluator, ac_tool.
 *    Each is made by <handle>_open and destroyed by <handle>_close (close(NULL) does nothing). Results
 *    are freed by ac_result_free (ac_detect_result_free, ac_classify_result_free), strings the library
 *    returns by ac_free.
 *  - Every fallible call returns 0, or -1 with a one-line message in *err that names the file and the
 *    problem (err may be NULL). The library never prints and never exits.
 *  - Options: pass NULL for the defaults, or fill a struct with <name>_init and change what you need.
 *  - Threads: a handle is used by one thread at a time; different handles are independent. A call
 *    uses the threads its captioner was opened with.
 *  - C99 and C++ (extern "C"). Only the names declared here (AC_API) are exported by libattncap.so;
 *    the other headers of include/attncap/ are unstable (they may change in any release) and are
 *    reached through the static library only. A change that breaks this header's ABI bumps the
 *    SONAME (libattncap.so.N); structs the library allocates (ac_result) may grow at their end.
 *  - Environment: ATTNCAP_MODEL, ATTNCAP_ENCODER, ATTNCAP_DETECTOR, ATTNCAP_DATA, ATTNCAP_THREADS,
 *    ATTNCAP_PRECISION, the ATTNCAP_MAX_* limits (README.md) are read as `attncap` reads them;
 *    ATTNCAP_NAMING is the program's (ac_captioner_set_naming_record takes such a record). */
#ifndef ATTNCAP_ATTNCAP_H
#define ATTNCAP_ATTNCAP_H

#include <stddef.h>

#if defined(__GNUC__) || defined(__clang__)
#define AC_API __attribute__((visibility("default")))
#else
#define AC_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Version ---------------------------------------------------------------------------------- */

#define AC_VERSION_MAJOR 1
#define AC_VERSION_MINOR 7
#define AC_VERSION_PATCH 0
/* AC_VERSION: of the header compiled against; ac_version(): of the library running */
#define AC_VERSION "1.7.0"

AC_API const char *ac_version(void); /* "MAJOR.MINOR.PATCH", a static string */

/* ---- Errors and memory ------------------------------------------------------------------------ */

typedef struct ac_err {
    char msg[1024]; /* one line naming the file and the problem; never names a command-line flag */
    int code;       /* an ac_err_code: what a caller can do about it */
} ac_err;

typedef enum ac_err_code {
    AC_ERR_FAILED = 0,      /* anything else */
    AC_ERR_NO_MODEL,        /* no model path given and none found where the search looks */
    AC_ERR_NO_ENCODER,      /* the model's encoder is not found (or the model does not name it) */
    AC_ERR_EXISTS,          /* an output exists and replacing it was not asked for */
    AC_ERR_OTHER_ENCODER,   /* a feature directory holds another encoder's features */
    AC_ERR_NOT_FEATURES,    /* a directory that should hold features does not */
    AC_ERR_RESUME_OPTIONS,  /* resuming training with options other than the checkpoint's */
    AC_ERR_BAD_IMAGE,       /* the photo cannot be read or decoded (the caller's input, not the model) */
    AC_ERR_OPTIONS,         /* an option is unknown, or its value is out of range or does not go with another's (1.4) */
} ac_err_code;

AC_API void ac_free(void *p); /* frees a string the library returned (ac_result_json, ac_detect_result_json); NULL is fine */

/* ---- Handles ---------------------------------------------------------------------------------- */

typedef struct ac_model ac_model;         /* a model file: decoder, vocabulary, recorded settings */
typedef struct ac_captioner ac_captioner; /* a model with its encoder, ready to caption photos */
typedef struct ac_detector ac_detector;   /* an object detector (see "Detectors") */
typedef struct ac_classifier ac_classifier; /* an ImageNet classifier (see "Classifiers", since 1.2) */

/* ---- Models ----------------------------------------------------------------------------------- */

/* The model file's name the search looks for (since 1.3; where it looks: below). */
#define AC_DEFAULT_MODEL_NAME "attncap.safetensors"
/* path NULL: $ATTNCAP_MODEL, else models/attncap.safetensors beside the program or here (err->code
 * AC_ERR_NO_MODEL when none is found). Loaded and checked whole. */
AC_API int ac_model_open(const char *path, ac_model **out, ac_err *err);
AC_API void ac_model_close(ac_model *m);
AC_API const char *ac_model_path(const ac_model *m); /* where it was found */
AC_API int ac_model_words(const ac_model *m);        /* vocabulary size, the special tokens included */
AC_API const char *ac_model_word(const ac_model *m, int id); /* NULL outside 0..words-1 */

/* ---- Captioners ------------------------------------------------------------------------------- */

typedef struct ac_captioner_opts {
    const char *encoder;   /* the TFLite encoder; NULL: found by the model's record ($ATTNCAP_ENCODER,
                              models/, ../shared/encoders). Its SHA-256 must match the model's */
    int threads;           /* 0: $ATTNCAP_THREADS, else every core (> 0 also sets OpenBLAS's, process-wide) */
    int beam;              /* beam size, 1 = greedy; 0: the model's setting */
    int max_len;           /* most words; 0: the model's */
    float len_alpha;       /* length normalisation, score = logprob / (words+1)^len_alpha; < 0: the model's */
    int nbest;             /* > 1: each result also holds up to nbest - 1 runners-up (at most beam - 1) */
    const char *tags;      /* naming what the encoder sees: NULL the model's setting (as `attncap
                              caption`), "auto", "off", or "word,word,...": words the caption must say */
    const char *tag_table; /* ImageNet class -> word table; NULL: imagenet_words.tsv beside the model */
} ac_captioner_opts;
AC_API void ac_captioner_opts_init(ac_captioner_opts *o); /* the defaults: len_alpha -1, the rest 0/NULL */

/* model: a path, or NULL to search (ac_model_open). opts NULL: the defaults, with which a caption is
 * exactly the one `attncap caption` prints. */
AC_API int ac_captioner_open(const char *model, const ac_captioner_opts *opts, ac_captioner **out, ac_err *err);
AC_API void ac_captioner_close(ac_captioner *c);
AC_API const ac_model *ac_captioner_model(const ac_captioner *c); /* borrowed: lives as long as c */
/* From now on every caption is this one (NULL: search again): instead of searching, the results show
 * where the model looks for each word of a caption it did not choose, and its log-probabilities. A
 * word outside the vocabulary is fed as <unk> and keeps its own spelling in the result. */
AC_API int ac_captioner_set_given(ac_captioner *c, const char *caption, ac_err *err);
/* Since 1.3. The k-th word (k = 0, 1, ...) of the caption set by ac_captioner_set_given that is outside
 * the model's vocabulary (fed as <unk>), as tokenized; NULL past the last, or with no caption set.
 * Borrowed: valid until the caption is set again or c is closed. */
AC_API const char *ac_captioner_given_unknown(const ac_captioner *c, int k);

/* Since 1.2. Setters for what ac_captioner_opts cannot hold. Each applies from the next caption call
 * on; none may run while a caption call on c runs. On failure -1 with the message, and c as it was. */

/* The CNN's arithmetic, as `attncap caption --precision`: "auto" (int8 for a model trained on int8
 * features, else bf16x2 where the CPU has AMX, else f32), "f32" (float32: the same bits on every CPU), "bf16x2" (AMX) or "int8" (a quantized encoder on
 * its own integers, and the model's detector's products on integers); NULL: $ATTNCAP_PRECISION, else "auto" (what ac_captioner_open sets). Refused: an
 * unknown name, bf16x2 on a CPU without AMX, int8 for an encoder that is not quantized. c NULL: only
 * checks the name (to refuse a bad one before opening anything). */
AC_API int ac_captioner_set_precision(ac_captioner *c, const char *precision, ac_err *err);
/* Naming what the encoder sees: tags and tag_table as ac_captioner_opts' (tags NULL: the model's
 * setting; tag_table NULL: the table loaded already, else the one beside the model), with the numeric
 * settings ac_captioner_set_naming_record gave. */
AC_API int ac_captioner_set_tags(ac_captioner *c, const char *tags, const char *tag_table, ac_err *err);
/* The naming's numeric settings (its thresholds): the fields of json, a JSON object with keys of the
 * model file's "naming" record (threshold, max_tags, max_drop, ...: models/README.md), laid over the
 * model's record, as `attncap caption` lays $ATTNCAP_NAMING over it; NULL: the model's record alone.
 * The tags set (ac_captioner_set_tags) stay. Refused: not such an object, an unknown key, a value out
 * of its range (the message names the first). */
AC_API int ac_captioner_set_naming_record(ac_captioner *c, const char *json, ac_err *err);

/* How the search may end a caption, as `attncap caption --allow-unk --allow-repeats`: flags 0 (what
 * ac_captioner_open sets) never emits <unk> and lets a word come twice only if the model's record
 * says people repeat it; AC_SEARCH_ALLOW_UNK lets <unk> be emitted, AC_SEARCH_ALLOW_REPEATS any word
 * come twice. Refused: an unknown flag. */
#define AC_SEARCH_ALLOW_UNK 1u
#define AC_SEARCH_ALLOW_REPEATS 2u
AC_API int ac_captioner_set_search(ac_captioner *c, unsigned flags, ac_err *err);
/* The overlays' long side in pixels, as `attncap caption --size`: 64..8192, every photo drawn that
 * large (a smaller one enlarged), and photos captioned with AC_KEEP_PHOTO kept at least that large;
 * 0 (what ac_captioner_open sets): 1024, a smaller photo keeps its size. Refused: another size; since
 * 1.3 also when the font the overlays are drawn with is missing (loaded here, so that a program can
 * say so before captioning; without this call ac_result_write_overlays loads it). */
AC_API int ac_captioner_set_overlay_size(ac_captioner *c, int size, ac_err *err);
/* Research switches on the model's attention (1.6), from the next caption on: "head" (a model with
 * attention heads shows head N, 1..heads, instead of their mean; the words do not change), "hard_context"
 * (a hard-attention model decodes with "argmax", its default, or "expected", the soft step),
 * "fix_attention" ("uniform", "peak" or "model" replaces the weights the step uses). They change what
 * the model computes and exist for studying it, not for captioning photos. Refused: an unknown key or a
 * head that is not a number (AC_ERR_OPTIONS), a head the model lacks, a soft model asked for a hard
 * context, an unknown name. */
AC_API int ac_captioner_set_attention(ac_captioner *c, const char *key, const char *value, ac_err *err);
/* ---- Captioning ------------------------------------------------------------------------------- */

typedef struct ac_alternative {
    const char *text;      /* a runner-up caption */
    double logprob, score; /* as ac_result's */
} ac_alternative;

typedef struct ac_result_tag { /* a word for what the encoder's ImageNet classes see */
    const char *word;   /* "cat" */
    const char *cls;    /* the class it comes from, "Egyptian cat" ("" when none) */
    float prob;         /* its score */
    float precision;    /* how often the training photos' references named it at this score; NaN: unknown */
    int in_vocab;       /* the model can say it */
    int forced;         /* the search was constrained to say it (and the caption does) */
    int named;          /* the caption names it */
} ac_result_tag;

typedef struct ac_result {
    const char *error;       /* ac_caption_batch only: NULL, or why this photo has no caption */
    int error_code;          /* an ac_err_code, with error */
    const char *image;       /* the photo's path; NULL for a photo in memory */
    const char *text;        /* the caption, its words joined by single spaces ("" with error) */
    int n_words;
    const char *const *words;   /* [n_words] */
    const float *word_logprobs; /* [n_words + 1] each word's log-probability given the words before it,
                                   then <end>'s; NULL when not known */
    double logprob;          /* their sum */
    double score;            /* the ranking score: logprob / (n_words + 1)^len_alpha */
    double confidence;       /* the calibrated probability that the caption is right; NaN when the model
                                has no calibration */
    int described;           /* 1: the model was unsure, and a description of its best tag replaced it */
    int grid_h, grid_w;      /* the attention grid (the photo's own when the encoder keeps its aspect) */
    const float *attention;  /* [n_words][grid_h][grid_w], row-major: where the model looked for each
                                word; each word's weights sum to 1 (a detected object's share spread
                                over its box's cells: ac_result_region_attention, since 1.3; a copy
                                model's copied word shows where it was copied from: ac_result_copied) */
    int n_alternatives;      /* runners-up (ac_captioner_opts.nbest), best first */
    const ac_alternative *alternatives;
    int n_tags;              /* the photo's tags, best first (when the captioner names what it sees) */
    const ac_result_tag *tags;
    int n_overlays;          /* the files ac_result_write_overlays wrote, words then the sheet */
    const char *const *overlays;
} ac_result;

/* Flags of the caption calls. */
#define AC_KEEP_PHOTO 1u /* the result keeps the photo as read, for ac_result_write_overlays */

/* One photo: a file, an encoded photo in memory (JPEG, PNG, ...), or pixels (height x width x 3 RGB
 * bytes, row by row). On success *out is a result to free with ac_result_free; on failure -1, *out
 * NULL, and err->code AC_ERR_BAD_IMAGE when the photo itself is the problem. */
AC_API int ac_caption_file(ac_captioner *c, const char *path, unsigned flags, ac_result **out, ac_err *err);
AC_API int ac_caption_bytes(ac_captioner *c, const void *data, size_t size, unsigned flags, ac_result **out,
                            ac_err *err);
AC_API int ac_caption_rgb(ac_captioner *c, const unsigned char *rgb, int height, int width, unsigned flags,
                          ac_result **out, ac_err *err);

/* Many photos at once: each input sets one source (the first of path, data, rgb that is not NULL). */
typedef struct ac_input {
    const char *path;
    const void *data;
    size_t size;
    const unsigned char *rgb;
    int height, width;
} ac_input;
/* Captions in[0..n) with the captioner's threads (photos read, encoded and searched together: the
 * captions are those of the one-photo calls, bit for bit) into out[0..n), each a result to free with
 * ac_result_free; a photo that fails is a result whose error says why. -1 (every out[i] NULL) only
 * when the batch cannot run at all (out of memory, no threads). */
AC_API int ac_caption_batch(ac_captioner *c, const ac_input *in, int n, unsigned flags, ac_result **out,
                            ac_err *err);

AC_API void ac_result_free(ac_result *r);

/* Since 1.3. in[0..n) captioned as ac_caption_batch captions them (the same threads and lanes, the same
 * captions bit for bit), each result handed to each(user, i, r) on the calling thread as soon as it
 * and every photo before it is captioned, in input order: for many photos, whose results need not all
 * be in memory at once. r (ac_caption_batch's out[i]) is the caller's to free with ac_result_free; NULL
 * only when out of memory for it. each must not caption with c or change its settings (it may write
 * the result's overlays and JSON). -1 (no result handed over) only when the batch cannot run at all
 * (out of memory, no threads). flags as the caption calls'. */
typedef void (*ac_each_fn)(void *user, int index, ac_result *r);
AC_API int ac_caption_each(ac_captioner *c, const ac_input *in, int n, unsigned flags, ac_each_fn each, void *user,
                           ac_err *err);
/* Since 1.3. How many lanes (each reads, encodes and searches photos on its own threads, beside the
 * others) a batch of n photos runs in on c (ac_caption_batch, ac_caption_each), and each lane's CNN
 * threads into *lane_threads (may be NULL): one lane with every thread for one photo or one thread. */
AC_API int ac_captioner_lanes(const ac_captioner *c, int n, int *lane_threads);

/* Since 1.3: what a result holds beyond its struct (whose array elements cannot grow). */
/* The calibrated probability that runner-up i (0 .. n_alternatives-1) is right, as ac_result.confidence
 * is the caption's; NaN when the model has no calibration or i is out of range. */
AC_API double ac_result_alternative_confidence(const ac_result *r, int i);
#define AC_SECONDS_READ 0   /* reading, decoding and resizing the photo */
#define AC_SECONDS_CNN 1    /* the encoder */
#define AC_SECONDS_SEARCH 2 /* the search (its share of a search run for several photos together) */
#define AC_SECONDS_WAITED 3 /* the calling thread waited for this result after handing over the one before */
/* The seconds one stage (AC_SECONDS_*) of the photo's captioning took, measured as it ran; 0 for a
 * stage the photo did not reach (a result with an error), NaN for an unknown stage. */
AC_API double ac_result_seconds(const ac_result *r, int stage);

/* Since 1.3. The detected objects ("regions") a model trained with detections attends to beside the
 * grid's cells and, with a pointer (a copy model), names by copying their category's word: what
 * `attncap caption --json --attention` prints as "regions", "region_attention" and "copied". Getters,
 * not fields appended to ac_result: a program built against 1.3 that calls them fails to load against
 * an older library (version node ATTNCAP_1.3) instead of reading past its smaller struct. Each returns
 * a count and sets *out (out may be NULL: the count alone) to an array borrowed from r, valid until
 * ac_result_free, or to NULL when the count is 0; a result with an error has none of them (0). */
typedef struct ac_result_region { /* a detection the decoder attended to; the struct never grows */
    const char *label;      /* its COCO category, "giraffe" (a static string) */
    float score;            /* the detector's score, 0..1 */
    float x0, y0, x1, y1;   /* its box as fractions of the photo's width and height, 0 <= x0 <= x1 <= 1 */
} ac_result_region;
/* The n regions the decoder attended to, best first, into *out ([n]); 0 for a model trained without
 * detections or a photo where the detector kept nothing. */
AC_API int ac_result_regions(const ac_result *r, const ac_result_region **out);
/* The attention each word gave each region, [n_words][n] row-major into *out (also NULL for a caption
 * without words): the weights ac_result.attention spreads over the cells whose centres lie in each
 * region's box (the cell under its centre when none does), so a word's cells still sum to 1, these
 * included; a word's regions sum to at most 1, the rest went to the cells directly. A copy model's
 * copied word: its weights as shown, the copies' regions included (ac_result_copied). Returns n,
 * ac_result_regions' count. */
AC_API int ac_result_region_attention(const ac_result *r, const float **out);
/* A copy model's account of the caption: [n_words + 1] into *out, each word's (then <end>'s) share of
 * its probability that came from copying a region's category, 0..1 (0 for a word the vocabulary alone
 * gave, near 1 for one a region named; never NaN). Returns n_words + 1, or 0 for a model without copy
 * or a photo without regions; `attncap caption --json` prints "copied" exactly when this is not 0.
 * The attention shown for a word (ac_result.attention, ac_result_region_attention, the overlays) tells
 * where it came from: 1 - share times the attention of its step, plus on each region the part of the
 * word's probability copied from that region (so "giraffes" copied whole from the giraffe's box lights
 * that box, and a word the vocabulary alone gave shows its step's attention unchanged). */
AC_API int ac_result_copied(const ac_result *r, const float **out);

/* Since 1.2. Photos that arrive over time (a server's requests), captioned as ac_caption_batch does
 * (the same captions, bit for bit) and each handed to done as soon as it (and every photo taken before
 * it) is captioned, so a lone photo is not kept waiting for others.
 *  - next(user, in, tag): called from the stream's threads (the calling one among them), one call at
 *    a time, with the stream's lock held, so it must not block: 1 when it filled *in (which stays
 *    valid until that photo's done returns) and *tag (handed back to done); 0 when it has no photo
 *    now; -1 when none will ever come (the stream ends once the photos taken are done).
 *  - wait(user): blocks until next would not return 0 (or the stream should end); called from the
 *    stream's threads, perhaps several at once, with no lock held.
 *  - done(user, tag, r, together): on the calling thread, once per photo taken, in the order they were
 *    taken. r is the photo's result, the caller's to free with ac_result_free (a photo that fails is
 *    a result whose error says why, as in ac_caption_batch); NULL only when out of memory for it.
 *    together: how many photos' searches ran with this one (itself included).
 * max_together: at most this many photos searched together (0, or over 8: 8). flags as the caption
 * calls'. Returns 0 when next has returned -1 and every photo taken is done; -1 (no photo
 * taken) when the stream cannot start (out of memory, no threads). Uses the captioner's threads (a
 * photo taken while no other is in work gets all of them for its CNNs, so a lone request is not run on
 * one core); the callbacks may read c (ac_result_json, ac_captioner_model) but not caption with it or
 * change it. */
typedef int (*ac_stream_next_fn)(void *user, ac_input *in, void **tag);
typedef void (*ac_stream_wait_fn)(void *user);
typedef void (*ac_stream_done_fn)(void *user, void *tag, ac_result *r, int together);
AC_API int ac_caption_stream(ac_captioner *c, ac_stream_next_fn next, ac_stream_wait_fn wait, ac_stream_done_fn done,
                             void *user, int max_together, unsigned flags, ac_err *err);

/* ---- Showing results -------------------------------------------------------------------------- */

#define AC_OVERLAY_FORCE 1u      /* replace an existing DIR/STEM */
#define AC_OVERLAY_SHEET_ONLY 2u /* only the contact sheet (--sheet-only) */
/* Since 1.2, each as `attncap caption`'s flag: */
#define AC_OVERLAY_STYLE_SPOT 4u      /* the paper's white highlight, not a heat map (--style spot) */
#define AC_OVERLAY_BASE_COLOUR 8u     /* the heat map over the photo's colours, not grey (--base colour) */
#define AC_OVERLAY_SCALE_ABSOLUTE 16u /* a cell's weight as it is (0..1), not each map min..max (--scale absolute) */
#define AC_OVERLAY_FORMAT_JPEG 32u    /* JPEG files (quality 90, .jpg), not PNG (--format jpg) */
/* Writes DIR/STEM/NN_<word>.png per word and DIR/STEM/sheet.png, as `attncap caption --overlays DIR`
 * does (a result captioned with AC_KEEP_PHOTO). stem NULL: the photo's file name without extension
 * ("photo" for one in memory). DIR/STEM appears whole or not at all; an existing one is refused
 * (err->code AC_ERR_EXISTS) without AC_OVERLAY_FORCE. The files go into r->overlays. Refused: an
 * unknown flag. Their long side: ac_captioner_set_overlay_size's. */
AC_API int ac_result_write_overlays(ac_captioner *c, ac_result *r, const char *dir, const char *stem,
                                    unsigned flags, ac_err *err);
/* Since 1.3. The STEMs ac_result_write_overlays gives photos paths[0..n) written into one DIR when asked
 * for stem NULL, each unique: the file name without its extension, a second one NAME-2, a third NAME-3,
 * ... in order; into stems[0..n), each to free with ac_free (nothing to free on failure). */
AC_API int ac_overlay_stems(const char *const *paths, int n, char **stems, ac_err *err);

#define AC_JSON_ATTENTION 1u /* also "attention" (per word, grid_h * grid_w weights) and "grid" */
/* The result as one line of `attncap caption --json` (image: the name to print, NULL the result's
 * path or ""); free with ac_free. NULL when out of memory or when r has an error. */
AC_API char *ac_result_json(const ac_captioner *c, const ac_result *r, const char *image, unsigned flags);
/* Since 1.3. Writes path with ac_result_json's line and a newline, whole (a temporary file beside it,
 * renamed) or not at all, as `attncap caption --overlays DIR` writes DIR/STEM/caption.json (its folder
 * must exist; an existing file is replaced). Refused: a result with an error. */
AC_API int ac_result_write_json(const ac_captioner *c, const ac_result *r, const char *path, const char *image,
                                unsigned flags, ac_err *err);

/* ---- Evaluation ------------------------------------------------------------------------------- */

typedef struct ac_metrics {
    int n;            /* images scored */
    double bleu[4];   /* BLEU-1..4 */
    double meteor;    /* NaN without METEOR */
    double rouge_l;   /* ROUGE-L */
    double cider_d;   /* CIDEr-D */
} ac_metrics;
#define AC_EVAL_NO_METEOR 1u /* skip METEOR (the slowest; needs WordNet) */
/* The coco-caption metrics of candidates[i] against references[i][0..n_references[i]) for i < n, raw
 * text (tokenized here as coco-caption does), as `attncap eval` computes them. */
AC_API int ac_evaluate(int n, const char *const *candidates, const char *const *const *references,
                       const int *n_references, unsigned flags, ac_metrics *out, ac_err *err);

/* An evaluation as `attncap eval` runs it (1.6): coco-caption's metrics and the object scores (COCO's 80
 * categories: precision, recall, F1, CHAIR) of captions in files, or of a model's captions of a data
 * set's split, with per-image scores, the captions and an HTML report written on the way. Options by
 * key from text, as the trainer's: the flags of `attncap eval --help` without the dashes. What is scored
 * is one of
 *  - "refs" (references: COCO JSON, Karpathy JSON, a Flickr8k folder, TSV/CSV) with "results" (a
 *    results file; each "results" set adds one, scored together: a sharded run's shares);
 *  - "pairs" (a file of references with the caption each);
 *  - "data" (a data set) captioned first: its "split" (test), "limit" photos, this task's "shard"
 *    share, with "model" (default: found as ac_captioner_open finds it), "encoder", "features" (a cache
 *    in place of the encoder), "beam", "len_alpha", "max_len", "allow_repeats", "tags" (auto or off),
 *    "naming" (a naming record over the model's: ac_captioner_set_naming_record), "precision",
 *    "threads", "hard_context", "fix_attention".
 * Beside them: "meteor" (1), "wordnet", "novel_from" / "novel_split" / "novel_max" (the recall of
 * categories seldom named in that data set), and files written as the run ends (atomically): "per_image",
 * "results_out", "report" (a folder: index.html, thumbnails, with "data" attention "sheets") and the
 * run to "compare" in it. */
typedef struct ac_evaluator ac_evaluator;

typedef struct ac_eval_event {
    int done, total;     /* photos captioned ("data") of total; done 0: captioning starts */
    const char *warning; /* a warning, one line (the scores of photos the model was trained on overstate
                          * it); NULL: progress */
} ac_eval_event;         /* may grow at its end */
typedef void (*ac_eval_fn)(const ac_eval_event *ev, void *user);

AC_API int ac_evaluator_open(ac_evaluator **out, ac_err *err);
AC_API void ac_evaluator_close(ac_evaluator *e);
/* As ac_trainer_set, _get and _option, for the options above; ac_evaluator_get(e, "results") is the
 * first results file. */
AC_API int ac_evaluator_set(ac_evaluator *e, const char *key, const char *value, ac_err *err);
AC_API const char *ac_evaluator_get(ac_evaluator *e, const char *key);
AC_API const char *ac_evaluator_option(int i, int *is_switch);
/* Scores with the options set, events to on_event (NULL: none). 0 when scored, or when this task's
 * "shard" share of the split is empty (ac_evaluator_images 0; "results_out" then holds no caption);
 * else -1 with err (AC_ERR_OPTIONS: options that do not go together). Each run starts afresh. */
AC_API int ac_evaluator_run(ac_evaluator *e, ac_eval_fn on_event, void *user, ac_err *err);
/* After a run that scored: */
AC_API int ac_evaluator_images(const ac_evaluator *e); /* images scored (0 before a run) */
AC_API int ac_evaluator_metrics(const ac_evaluator *e, ac_metrics *out); /* -1 before a run */
#define AC_EVAL_PER_CATEGORY 2u /* ac_evaluator_json, _text: also each category's counts */
/* The scores as `attncap eval --json` prints them (an object: "BLEU-1".., "bleu_counts", "objects"), or as
 * its text lines; ac_free them. NULL before a run or out of memory. */
AC_API char *ac_evaluator_json(const ac_evaluator *e, unsigned flags);
AC_API char *ac_evaluator_text(const ac_evaluator *e, unsigned flags);

/* ---- Files (1.6) ------------------------------------------------------------------------------ */
#define AC_DESCRIBE_NO_OPS 1u     /* without a TFLite model's operators (a safetensors file's metadata) */
#define AC_DESCRIBE_NO_TENSORS 2u /* without the tensors */
#define AC_DESCRIBE_VOCAB 4u      /* instead: a model's vocabulary, a word a line in id order, as WORD<TAB>PAIRED
                                   * <TAB>TEXT (its counts in the captioned photos and in the captions without
                                   * photos it was trained on; empty when the model does not record them) */
/* What a file holds, as `attncap info` prints it, into *text (ac_free it): a TFLite model's inputs,
 * outputs, operators (strides, padding, fused activation) and tensors (shape, type, quantization: a
 * tensor's name is a layer the featurizer takes), or a safetensors file's (an attncap model, checkpoint
 * or feature shard) metadata and tensors; only the header is read. */
AC_API int ac_describe_file(const char *path, unsigned flags, char **text, ac_err *err);

/* A line the library has to say that is not an error (a file gone, skipped; the run goes on). */
typedef void (*ac_note_fn)(const char *line, void *user);
/* The HTML page of a caption run without references, as `attncap report` writes it: dir/index.html (dir
 * made if missing) lists each photo of captions (a file of `attncap caption --json` lines) with its
 * thumbnail (dir/thumbs/), caption, confidence and, when the run wrote overlays, its attention sheet
 * (copied to dir/sheets/), sortable and searchable. title NULL: "attncap caption: CAPTIONS". A photo or
 * sheet gone since the run leaves its row without one, said to note (NULL: nobody). *photos (may be
 * NULL): the rows. */
AC_API int ac_report_captions(const char *captions, const char *dir, const char *title, ac_note_fn note, void *user,
                              int *photos, ac_err *err);

/* ---- Tools (1.6) ------------------------------------------------------------------------------ */
/* The maintainers' jobs behind `attncap NAME`, one handle for all: "ground" (does the attention for a
 * word sit on the object it names: hand-drawn or detected boxes, the pointing game and the attention's
 * mass, per object class), "presence" (fit the presence head on captioned photos' features), "calibrate"
 * (fit a model's confidence, or its tags' precision, on captioned photos; a list option pair: "refs" and
 * "results"), "tune" (a model's decoding setting, absent priors, naming and repeat records). Options by key from text, as the trainer's: the command's flags without the
 * dashes (`attncap NAME --help`); a list option ("photos") takes one value each time it is set. The
 * report comes as lines, each what the command prints on stdout. */
typedef struct ac_tool ac_tool;

typedef struct ac_tool_event {
    int done, total;    /* progress when line and note are NULL: done of total; done 0: it starts */
    const char *line;   /* a line of the report, without its newline */
    const char *note;   /* a line said beside the report (what it read, what it skipped) */
    int problem;        /* with note: something could not be done (a photo left out); the run goes on */
    const char *status; /* with progress: a short state beside it ("loss 0.1234"), or NULL */
} ac_tool_event;        /* may grow at its end */
typedef void (*ac_tool_fn)(const ac_tool_event *ev, void *user);

/* The i-th tool's name (i from 0; NULL past the last). */
AC_API const char *ac_tool_name(int i);
/* The tool name with its default options into *out (AC_ERR_OPTIONS for an unknown name). */
AC_API int ac_tool_open(const char *name, ac_tool **out, ac_err *err);
AC_API void ac_tool_close(ac_tool *t);
/* As ac_trainer_set, _get and _option, for the tool's options (ac_tool_get of a list option: its first). */
AC_API int ac_tool_set(ac_tool *t, const char *key, const char *value, ac_err *err);
AC_API const char *ac_tool_get(ac_tool *t, const char *key);
AC_API const char *ac_tool_option(const ac_tool *t, int i, int *is_switch);
/* Runs the tool, events to on_event (NULL: none). 0 when it ran (notes may have come), else -1 with err
 * (AC_ERR_OPTIONS: options that do not go together). */
AC_API int ac_tool_run(ac_tool *t, ac_tool_fn on_event, void *user, ac_err *err);

/* ---- Shares of a job (1.6) --------------------------------------------------------------------- */
/* Which of paths [n] this task's share owns, as the featurizer's and the evaluator's option "shard" split
 * photos: spec "I/N" (those whose file name hashes to I mod N) or "slurm" (the Slurm job array's task of
 * its tasks, from the environment). keep[i] 1 or 0 (paths and keep may be NULL with n 0: only checks
 * spec); *index and *count (may be NULL) the share. A bad spec: AC_ERR_OPTIONS, naming it. */
AC_API int ac_shard_select(const char *spec, const char *const *paths, int n, unsigned char *keep, int *index,
                           int *count, ac_err *err);

/* ---- Detectors -------------------------------------------------------------------------------- */
/* Since 1.1. A COCO object detector (YOLOX-nano, a TFLite graph run by the library's engine): the
 * boxes of the 80 kinds of object in a photo, as `attncap detect` prints them. */

typedef struct ac_detector_opts {
    const char *labels; /* class names, one a line; NULL: coco_labels.txt beside the detector */
    int threads;        /* 0: $ATTNCAP_THREADS, else every core */
    float min_score;    /* keep detections scored at least this (objectness x class probability, 0..1) */
} ac_detector_opts;
AC_API void ac_detector_opts_init(ac_detector_opts *o); /* the defaults: min_score 0.3, the rest 0/NULL */

/* path: the detector's .tflite, or NULL to search as a captioner finds its companion: $ATTNCAP_DETECTOR,
 * else yolox_nano.tflite in models/ (here or beside the program), the installed data directories, then
 * ../shared/encoders. opts NULL: the defaults, with which the boxes are exactly those `attncap detect`
 * prints. */
AC_API int ac_detector_open(const char *path, const ac_detector_opts *opts, ac_detector **out, ac_err *err);
/* Its convolutions' arithmetic (since 1.7), as `attncap detect --precision`: "f32" (the default; "auto" and "bf16x2"
 * too; NULL: $ATTNCAP_PRECISION, else auto) or "int8" (the products on integers, each filter per channel and each
 * input per photo quantized to 8 bits: ~20 % less time, scores ~0.01 from float32's). */
AC_API int ac_detector_set_precision(ac_detector *d, const char *precision, ac_err *err);
AC_API void ac_detector_close(ac_detector *d);
AC_API int ac_detector_labels(const ac_detector *d);                 /* how many classes */
AC_API const char *ac_detector_label(const ac_detector *d, int label); /* NULL outside 0..labels-1 */

typedef struct ac_detect_box {
    float x0, y0, x1, y1; /* the box in the photo's pixels, 0 <= x0 <= x1 <= width, likewise y */
    float score;          /* objectness x class probability */
    int label;            /* its class, 0 .. ac_detector_labels() - 1 */
    const char *name;     /* the class's name, ac_detector_label(label) */
} ac_detect_box;

typedef struct ac_detect_result {
    const char *image;          /* the photo's path; NULL for a photo in memory */
    int width, height;          /* the photo the boxes are in (upright: after its EXIF orientation) */
    int n_boxes;                /* after per-class non-maximum suppression, highest score first */
    const ac_detect_box *boxes;
} ac_detect_result;

/* One photo, as ac_caption_file / _bytes / _rgb take it (flags: AC_KEEP_PHOTO for
 * ac_detect_result_draw). On success *out is a result to free with ac_detect_result_free; on failure
 * -1, *out NULL, and err->code AC_ERR_BAD_IMAGE when the photo itself is the problem. */
AC_API int ac_detect_file(ac_detector *d, const char *path, unsigned flags, ac_detect_result **out, ac_err *err);
AC_API int ac_detect_bytes(ac_detector *d, const void *data, size_t size, unsigned flags, ac_detect_result **out,
                           ac_err *err);
AC_API int ac_detect_rgb(ac_detector *d, const unsigned char *rgb, int height, int width, unsigned flags,
                         ac_detect_result **out, ac_err *err);
AC_API void ac_detect_result_free(ac_detect_result *r);

/* Writes path (a PNG, replaced whole or left as it was) with the photo of r (detected with
 * AC_KEEP_PHOTO) and its boxes drawn, labels and scores above them, as `attncap detect --draw`. */
AC_API int ac_detect_result_draw(ac_detector *d, const ac_detect_result *r, const char *path, ac_err *err);
/* r as one line of `attncap detect` (image: the name to print, NULL the result's path or ""); free
 * with ac_free. NULL when out of memory. */
AC_API char *ac_detect_result_json(const ac_detect_result *r, const char *image);

/* ---- Classifiers ------------------------------------------------------------------------------ */
/* Since 1.2. An ImageNet classifier: a TFLite graph whose output is the classes' probabilities (the
 * captioner's MobileNet encoder, whole), run in float32 on its dequantized weights (or as
 * ac_classifier_set_precision says): the classes `attncap classify` prints. */

/* path: the .tflite, NULL: encoders/mobilenet_v2_1.0_224_quant.tflite in the data directory
 * ($ATTNCAP_DATA, else ../shared here or above the program; err->code AC_ERR_NO_ENCODER when there is
 * none); labels: a text file, line i naming class i, NULL: encoders/imagenet_labels.txt there.
 * threads 0: $ATTNCAP_THREADS, else every core. Precision: $ATTNCAP_PRECISION, else auto. */
AC_API int ac_classifier_open(const char *path, const char *labels, int threads, ac_classifier **out, ac_err *err);
AC_API void ac_classifier_close(ac_classifier *c);
/* The name of class cls: NULL outside 0 .. classes-1 or past the labels file's last line. */
AC_API const char *ac_classifier_label(const ac_classifier *c, int cls);
/* As ac_captioner_set_precision (c NULL: only checks the name). */
AC_API int ac_classifier_set_precision(ac_classifier *c, const char *precision, ac_err *err);

typedef struct ac_classify_result {
    const char *image;  /* the photo's path; NULL for a photo in memory */
    int n_classes;
    const float *probs; /* [n_classes]: each class's probability */
    int n_top;          /* min(top, n_classes) */
    const int *top;     /* [n_top]: the most probable classes, best first (equal ones: the lower first) */
} ac_classify_result;
/* One photo (in: a file, encoded bytes or pixels, as ac_caption_batch takes it), squashed to the
 * classifier's input, into *out, a result to free with ac_classify_result_free, with its top most
 * probable classes (top >= 0). On failure -1, *out NULL, err->code AC_ERR_BAD_IMAGE when the photo
 * itself is the problem. */
AC_API int ac_classify(ac_classifier *c, const ac_input *in, int top, ac_classify_result **out, ac_err *err);
AC_API void ac_classify_result_free(ac_classify_result *r);

/* ---- Training (1.4) --------------------------------------------------------------------------- */
/* Trains a model on captioned photos whose features were cached (`attncap features`), as `attncap train`
 * does: the options are its flags' names without the dashes ("data", "features", "out", "epochs", "lr",
 * "extra_data" or "extra-data", ...; `attncap train --help` says what each does), the defaults its
 * (the shipped model's recipe). Progress comes to a callback; the best model is written atomically to
 * "out", a checkpoint beside it, and with "resume" a run continues where it stopped. */
typedef struct ac_trainer ac_trainer;

/* What training reports as it goes, to ac_trainer_run's callback (the library prints nothing; `attncap
 * train` turns these into its lines and progress bar). Fields not named for a kind are zero. */
typedef enum ac_train_event_kind {
    AC_TRAIN_START,      /* data loaded, model built: the counts below */
    AC_TRAIN_EPOCH,      /* an epoch (re)starts: epoch, epochs, steps, pos (> 0 when resumed mid-epoch) */
    AC_TRAIN_PROGRESS,   /* a step is done: epoch, epochs, pos of steps, loss, text_loss, tok_per_s, seconds */
    AC_TRAIN_VALIDATING, /* an evaluation begins (it may take a while) */
    AC_TRAIN_EVALUATION, /* an evaluation is done: the row below, best, stopping */
    AC_TRAIN_RESUMED,    /* a checkpoint was loaded: step, epoch, pos of steps; note: what force did
                          * with the options given that differ from the checkpoint's (the learning
                          * rate given replaces the checkpoint's; the others are the checkpoint's), or
                          * NULL */
    AC_TRAIN_FINISHED    /* training is over (or was over before this resume): finish, best_step,
                          * best_score (NAN if none) of metric, step, epoch (done), epochs; stopping:
                          * it stopped early (more epochs would not continue it) */
} ac_train_event_kind;

typedef enum ac_train_finish {
    AC_TRAIN_ALL_EPOCHS,  /* every epoch ran */
    AC_TRAIN_EARLY_STOP,  /* no improvement for `patience` evaluations */
    AC_TRAIN_MAX_STEPS,   /* max_steps reached */
    AC_TRAIN_WAS_FINISHED /* resumed a run that had already finished: nothing to do */
} ac_train_finish;

typedef struct ac_train_event {
    ac_train_event_kind kind;
    /* AC_TRAIN_START */
    int captions, flipped, text_captions, text_batch, val_photos, vocab, grouped, mapped_features;
    int photos, missing_photos; /* training photos, and how many of them have no cached features (left out) */
    int held_out; /* the data set has no val photo: this many of its training photos (a tenth, at least
                   * one) were held out as val photos for the run (photos does not count them) */
    size_t params;
    /* AC_TRAIN_EPOCH, AC_TRAIN_PROGRESS: epoch (1-based) of epochs; step pos of steps in the epoch */
    int epoch, epochs, pos, steps;
    double loss;      /* mean train cross-entropy per token since the last evaluation */
    double text_loss; /* of the batch of captions without photos; NAN without --text */
    double tok_per_s; /* training tokens per second since the epoch (re)started */
    double seconds;   /* since the epoch (re)started */
    /* AC_TRAIN_EVALUATION: one row of the log (bleu4 and cider NAN when not computed) */
    long step;
    double epoch_frac, train_loss, val_loss, bleu4, cider, lr, minutes;
    double window_tok_per_s; /* training tokens per second since the previous evaluation */
    int best;                /* best so far: the model was saved */
    int stopping;            /* no improvement for `patience` evaluations: training stops */
    /* AC_TRAIN_RESUMED, AC_TRAIN_FINISHED */
    const char *note;
    ac_train_finish finish;
    long best_step;
    double best_score;
    const char *metric; /* "cider", "bleu4" or "loss" (best_score is then minus the loss) */
    /* AC_TRAIN_PROGRESS, AC_TRAIN_EVALUATION (since 1.5): self-critical training's (option scst) mean
     * reward, the CIDEr-D of the captions it sampled since the last evaluation; NAN without scst */
    double reward;
} ac_train_event;

/* Called on the training thread, in the order above; the struct may grow at its end. */
typedef void (*ac_train_fn)(const ac_train_event *ev, void *user);

/* A trainer with the default options into *out (ac_trainer_close frees it). */
AC_API int ac_trainer_open(ac_trainer **out, ac_err *err);
AC_API void ac_trainer_close(ac_trainer *t);
/* Sets option `key` from its text: a number of the option's kind in its range, a path or a name, or for
 * a switch "1" or "0" (NULL: "1"). An unknown key or a bad value is refused naming the key and the value
 * (the option keeps its value). Given options are checked against a resumed run's checkpoint. */
AC_API int ac_trainer_set(ac_trainer *t, const char *key, const char *value, ac_err *err);
/* The option's value as text (the default until set; "" for a text option not set), NULL for an unknown
 * key; valid until the next call on t. */
AC_API const char *ac_trainer_get(ac_trainer *t, const char *key);
/* The i-th option's key (i from 0; NULL past the last) and whether it is a switch (takes no value on a
 * command line). */
AC_API const char *ac_trainer_option(int i, int *is_switch);
/* Trains with the options set (data, features and out are needed), reporting to on_event (NULL: none)
 * with user. Returns 0 when training ended (every epoch, early stopping, or a finished run resumed),
 * else -1 with err (code AC_ERR_RESUME_OPTIONS: resuming with options other than the checkpoint's). */
AC_API int ac_trainer_run(ac_trainer *t, ac_train_fn on_event, void *user, ac_err *err);

/* ---- Feature caches (1.4) --------------------------------------------------------------------- */
/* What training reads: each photo's annotation vectors, cached once (`attncap features`) in a directory
 * of shard files; a rerun skips the photos already there, so an interrupted one resumes. Options by key
 * from text, as the trainer's: "encoder" (a .tflite; default the data directory's
 * encoders/mobilenet_v2_1.0_224_quant.tflite), "layer" (default: the last conv layer before pooling),
 * "size" (448), "resize" (squash or aspect), "shard_size" (photos per file, 256), "shard" ("I/N" or
 * "slurm": only this task's share of the photos), "threads", "precision", "fp16", "flip". */
typedef struct ac_featurizer ac_featurizer;

typedef struct ac_featurizer_event {
    int done, total;   /* photos to encode (this share's not cached yet) done, of total; done 0: the start */
    const char *error; /* a photo that failed, one line naming it (the others go on); NULL: progress */
} ac_featurizer_event; /* may grow at its end */
typedef void (*ac_featurizer_fn)(const ac_featurizer_event *ev, void *user);

typedef struct ac_featurizer_stats {
    int photos;                    /* given: this share's (merge: rows written) */
    int encoded, skipped, failed;  /* rows encoded now (a photo and its "flip" mirror: 2), photos already
                                    * cached, photos that could not be read */
    int shards;                    /* shard files written */
    int inputs;                    /* merge: caches that held rows */
    int grid_h, grid_w, dim;       /* the cache's grid */
    int shard_index, shard_count;  /* the share ("shard"), 0 and 0 without */
} ac_featurizer_stats; /* the caller's: it keeps this size (a later count comes through a new call) */

AC_API int ac_featurizer_open(ac_featurizer **out, ac_err *err);
AC_API void ac_featurizer_close(ac_featurizer *f);
/* As ac_trainer_set, _get and _option, for the options above. */
AC_API int ac_featurizer_set(ac_featurizer *f, const char *key, const char *value, ac_err *err);
AC_API const char *ac_featurizer_get(ac_featurizer *f, const char *key);
AC_API const char *ac_featurizer_option(int i, int *is_switch);
/* Caches photos [n] (paths; keys: their file names) in the directory out (made if needed; one made by
 * another encoder, layer or size is refused), each failure to on_event (NULL: none) and counted, progress
 * after each photo. 0 when every photo was tried (stats->failed may be > 0; stats may be NULL), -1 on an
 * error that stops it (the options, the encoder, the directory). The layer's name: ac_featurizer_get(f,
 * "layer") after a run. */
AC_API int ac_featurizer_run(ac_featurizer *f, const char *out, const char *const *photos, int n,
                             ac_featurizer_fn on_event, void *user, ac_featurizer_stats *stats, ac_err *err);
/* Merges the caches dirs [n] of a sharded run into the new cache out ("shard_size" photos a file), each
 * row as stored: the bytes one run over the photos in sorted order writes. Refused: caches of another
 * encoder, a photo in two, an out that exists and is not empty. */
AC_API int ac_featurizer_merge(ac_featurizer *f, const char *out, const char *const *dirs, int n,
                               ac_featurizer_stats *stats, ac_err *err);

#ifdef __cplusplus
}
#endif
#endif
