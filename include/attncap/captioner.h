/* attncap/captioner.h: not part of the stable API; may change in any release (the core: attncap.h,
 * whose ac_captioner is this struct). Photo -> caption with attention, end to end (what `attncap caption` and the
 * caption benchmark run): find and load the model, find the encoder it was trained with (checked by
 * SHA-256), prepare the photo exactly as the training photos were (the recorded resize: squashed to
 * size x size, or at its own aspect ratio on a padded grid), encode, beam search. */
#ifndef ATTNCAP_CAPTIONER_H
#define ATTNCAP_CAPTIONER_H
#include "attncap/beam.h"
#include "attncap/encoder.h"
#include "attncap/decoder.h"
#include "attncap/model.h"
#include "attncap/image.h"
#include "attncap/locate.h"
#include "attncap/naming.h"
#include "attncap/tags.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Finding the model and the encoder when not given: locate.h. */

struct ac_captioner { /* typedef: attncap.h */
    ac_model model;
    ac_encoder enc;
    ac_encoder_id id;
    ac_beam_opts beam;
    int grid_h, grid_w, L, D;
    float *ann;     /* [L, D] scratch */
    int *given;     /* NULL, or the caption set by ac_captioner_set_given (word ids) */
    char **given_words; /* its words as written (tokenized) */
    int n_given;
    /* ImageNet class probabilities from the same CNN pass (ac_captioner_want_classes; head NULL = off) */
    ac_class_head *head;
    ac_grid_window *windows;
    int n_windows, n_classes;
    float *probs; /* [1 + n_windows][n_classes] of the last ac_captioner_run: whole photo, then each window */
    /* Naming what the encoder sees (naming.h): c->naming starts as the model's settings
     * (ac_naming_opts_for_model); ac_captioner_set_naming changes them. */
    ac_naming_opts naming;
    char *naming_words;  /* owned copy of naming.words */
    ac_tag_table *tags;  /* the class -> word table, loaded when a mode needs it */
    ac_presence *presence; /* presence.safetensors beside the model, loaded with the table in AUTO (NULL if none) */
    signed char *word_object; /* the model's words' COCO categories, made when the naming first asks
                                 (tag_objects_only; naming.word_object points here) */
    int keep_min_side; /* ac_captioner_batch reads each photo only as large as the encoder needs
                          (ac_encoder_min_photo, ac_image_load_min), whatever it keeps, so a caption
                          does not depend on what else is asked for; a photo kept for the callback
                          (keep_photos) is read again when that read is smaller than this on a side
                          (0, the default: kept photos are read whole). Overlays: their long side
                          (ac_overlay_opts.max_side). */
    /* The core API's (attncap.h): */
    int threads;         /* as opened (0: the default) */
    int overlay_size;    /* ac_captioner_set_overlay_size's (0: the default); a batch keeping photos sets
                            keep_min_side from it while it runs, so its callbacks must not read that */
    struct ac_font *font; /* loaded when overlays are first written */
    /* A model with regions (regions.h): its detector (NULL otherwise), its path and label names. */
    struct ac_detector *det;
    char *det_path;
    const char **det_names;
    int cnns_beside; /* with 2 threads or more and a detector: the detector runs on one of the encoder's
                        threads while the others encode (ac_captioner_run) */
};
/* model_flag/encoder_flag may be NULL (search). threads: 0 = default. c->beam starts as the
 * model's decoding settings (ac_model.decode: the defaults, or those chosen on dev for it). */
int ac_captioner_init(ac_captioner *c, const char *model_flag, const char *encoder_flag, int threads, ac_err *err);
void ac_captioner_free(ac_captioner *c);
/* photo -> the encoder's input, prepared as the model's training photos were (squashed, or at the
 * photo's own aspect ratio: encoder.h); thread-safe: may run in a decoding thread. */
int ac_captioner_prepare(const ac_captioner *c, const ac_image *photo, ac_image *prepared, ac_err *err);
/* square (or any photo: then resized here) -> caption. t_cnn/t_dec (may be NULL) get seconds added. */
int ac_captioner_run(ac_captioner *c, const ac_image *square, ac_caption *out, double *t_cnn, double *t_dec,
                     ac_err *err);

/* From now on ac_captioner_run (and the lanes) return this caption for every photo, with its
 * attention and log-probability under the model, instead of searching for one: where the model
 * looks for each word of a caption it did not choose. The caption is tokenized as the training
 * captions were; a word outside the model's vocabulary is fed as <unk> and keeps its own label
 * (ac_caption.labels). NULL: search again. */
int ac_captioner_set_given(ac_captioner *c, const char *caption, ac_err *err);

/* From now on ac_captioner_run (and lanes opened afterwards) also run the encoder graph's classifier
 * head on the annotation grid (ac_class_head: no second CNN pass) over the whole photo and the given
 * windows (copied; NULL/0 = whole photo only), into c->probs / lane->probs, before decoding.
 * Captions and annotations are unchanged. Fails if the encoder's graph has no such head. */
int ac_captioner_want_classes(ac_captioner *c, const ac_grid_window *win, int n_win, ac_err *err);

/* Tags, constraints and confidence for every photo from now on: o's mode AUTO loads the class ->
 * word table (table_path, or imagenet_words.tsv beside the model file) and the presence head
 * (presence.safetensors beside the model file, when there is one: presence.h) and runs the
 * classifier head on the whole photo and its four 7x7 quadrants and centre window (at a 14x14 grid;
 * scaled to the grid otherwise); GIVEN requires o->words (the table, if found, adds their plural forms);
 * OFF plain search. Open lanes after. */
int ac_captioner_set_naming(ac_captioner *c, const ac_naming_opts *o, const char *table_path, ac_err *err);

/* A lane captions photos concurrently with others of the same captioner: its own CNN plan (with
 * `threads` threads) and scratch, sharing the captioner's model and weights (read-only while lanes
 * run). Same captions as ac_captioner_run, bit for bit. With 2 cores, two lanes of 1 thread keep both
 * busy over many photos (decode, resize, beam search are single-threaded) where one 2-thread CNN
 * leaves a core idle between layers and outside the CNN. */
typedef struct ac_captioner_lane {
    ac_encoder enc; /* shallow copy of the captioner's, with the lane's own plan */
    float *ann;     /* [L, D] scratch */
    float *probs;   /* as ac_captioner.probs, of the lane's last photo (when the captioner wants classes) */
    struct ac_detector *det; /* the lane's own detector (a model with regions) */
} ac_captioner_lane;
int ac_captioner_lane_open(const ac_captioner *c, int threads, ac_captioner_lane *lane, ac_err *err);
void ac_captioner_lane_close(ac_captioner_lane *lane);
int ac_captioner_lane_run(const ac_captioner *c, ac_captioner_lane *lane, const ac_image *img, ac_caption *out,
                          double *t_cnn, double *t_dec, ac_err *err);

/* One photo's caption as a JSON object (malloc'd; NULL when out of memory), one line as `attncap
 * caption --json` prints it: image, caption, tokens, logprob, token_logprobs (each token's, then
 * <end>'s; 4 decimals; when known), score (the ranking score), then what
 * naming added (unknown_words, confidence, described, tags), alternatives (the runners-up, when
 * searched for), overlays (the files written for it), and when `attention` the weights per token
 * ("attention": [[L weights], ...], 4 significant digits) and "grid": [grid_h, grid_w] (the caption's
 * own grid when it has one, ac_caption.grid_h: then L = its cells); m: the model that made it (its
 * words, its regions' labels). */
char *ac_caption_json(const char *image, const ac_caption *c, const ac_model *m, const char *const *overlays,
                      int n_overlays, int attention, int grid_h, int grid_w);

/* Batch captioning (captioner_batch.c): many photo files, results delivered in input order.
 * Over many photos, one lane per thread (each a one-thread CNN) reads, squashes, encodes and searches
 * a photo at a time; with one thread, or one photo, a second thread reads and squashes the next
 * photos while the caller's thread runs the CNN with all the threads. Either way at most a few
 * photos are in flight, and the captions are those of ac_captioner_run, bit for bit, on the photo as
 * the batch reads it: ac_image_load_min at ac_encoder_min_photo's size (a JPEG of 2 x 448 - 1 pixels or
 * more on each side comes reduced by libjpeg-turbo's DCT scaling: image.h). */
typedef struct ac_batch_result {
    int index;             /* into paths */
    const char *path;      /* NULL for a photo in memory (ac_captioner_batch_inputs) */
    int ok;                /* 1 captioned; 0 failed, err says why */
    int run_failed;        /* it failed in the encoder or the search (err names no file), not reading */
    ac_err err;
    const ac_image *photo; /* the photo as read (keep_photos), for overlays; else NULL */
    const ac_caption *caption;
    double t_decode, t_cnn, t_search; /* seconds */
    double t_wait;         /* seconds the caller's thread waited for this result after the one before */
    void *tag;             /* ac_captioner_batch_stream: the source's tag for this photo; NULL for a list */
    int searched_with;     /* photos whose searches ran together, this one included (1 with one lane) */
} ac_batch_result;
typedef struct ac_batch_stats {
    int lanes, lane_threads; /* lanes and CNN threads in each */
    double t_wait;           /* seconds the caller's thread waited for results */
} ac_batch_stats;
/* The lanes a batch of n photos runs in with `threads` threads (0: default), each lane's CNN threads
 * into *lane_threads (may be NULL): one per thread over many photos, else one with every thread. */
int ac_captioner_batch_lanes(int threads, int n, int *lane_threads);
/* Captions paths[0..n) with `threads` threads (0: default), calling on_result(user, r) on the
 * caller's thread once per photo, in input order (r and what it points to live until it returns; it may
 * move r->caption and r->photo out, leaving them zeroed: the batch frees what they hold after).
 * A photo that fails is a result with ok = 0, not an error. Returns -1 only when the lanes or the
 * threads cannot be set up. The captioner must not be used otherwise while this runs. */
int ac_captioner_batch(ac_captioner *c, const char *const *paths, int n, int threads, int keep_photos,
                       void (*on_result)(void *user, const ac_batch_result *r), void *user, ac_batch_stats *stats,
                       ac_err *err);
/* The same over photos given as files, encoded bytes or pixels (ac_input, attncap.h; r->path is the
 * input's path, NULL for a photo in memory). */
int ac_captioner_batch_inputs(ac_captioner *c, const ac_input *in, int n, int threads, int keep_photos,
                              void (*on_result)(void *user, const ac_batch_result *r), void *user,
                              ac_batch_stats *stats, ac_err *err);
/* Photos handed out as they arrive (a server's requests), for ac_captioner_batch_stream. next is called
 * with the batch's lock held, so it must not block: 1 when it filled *in (a photo that stays valid
 * until its result is delivered) and *tag (handed back in the result); 0 when it has none now; -1
 * when none will ever come. wait blocks until next would not return 0 (no lock held). */
typedef struct ac_batch_source {
    int (*next)(void *user, ac_input *in, void **tag);
    void (*wait)(void *user);
    void *user;
    int max_search; /* photos searched together at most (0: the batch's own, 8) */
} ac_batch_source;
/* ac_captioner_batch_inputs over the photos of src until its next returns -1: the lanes (or the
 * decoding thread) are opened once and kept busy for as long as the source lasts, results delivered
 * on the caller's thread in the order the photos were taken. Returns 0 when the source has ended;
 * -1 (having taken no photo) when the lanes or the threads cannot be set up. */
int ac_captioner_batch_stream(ac_captioner *c, const ac_batch_source *src, int threads, int keep_photos,
                              void (*on_result)(void *user, const ac_batch_result *r), void *user, ac_err *err);
#ifdef __cplusplus
}
#endif
#endif
