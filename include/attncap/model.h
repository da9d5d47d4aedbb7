/* attncap/model.h: not part of the stable API; may change in any release (the core: attncap.h).
 * The model file, the one thing `attncap caption` needs besides the encoder.
 *
 * One safetensors file (safetensors.h) holds the decoder's tensors (F32 or F16, names and shapes as
 * ac_decoder_tensors lists them) and __metadata__:
 *   "format"   "attncap-decoder-1"
 *   "config"   the decoder's config (JSON: vocab, embed, hidden, att, dim, n_ann, grid_h, grid_w,
 *              dropout, lambda)
 *   "vocab"    JSON array of the words in id order (vocab.h)
 *   "encoder"  the identity of the encoder the decoder was trained on (JSON, as in features.h)
 *   "training" optional: the trainer's record (JSON; kept as notes, never interpreted)
 *   "decode"   optional: the decoding settings chosen on dev photos by `attncap tune` (JSON with
 *              beam 1..100, max_len 1..200, len_alpha 0..10, and "repeatable": the only words a caption
 *              may say twice, an array of strings (`attncap tune --repeats`); other keys are notes)
 *   "naming"   optional: how tags become constraints, chosen on dev photos (naming_opts.h; JSON;
 *              an unknown key or a value out of range is refused)
 *   "confidence" optional: the calibration of the captions' confidence (confidence.h; JSON a, b, n)
 *   "tag_precision" optional: each tag word's precision on the training photos (tag_precision.h)
 *   "vocab_counts" optional: each word's count in captioned photos and in text (JSON: "paired" and
 *              "text", arrays of vocab counts; "paired" is read, naming.h's trust uses it)
 *   "training_photos" optional: the photos trained on, hashed (below; checked at load: its keys,
 *              the hash's name, n, 8 hex digits per photo in ascending order)
 *   "imagenet_words" with config.imagenet_words only: the words the copy names from the encoder's
 *              classifier (imagenet_words.h; checked at load against the vocabulary and the config)
 * Everything is read and checked once, by ac_model_load; the decoder and the beam search never see
 * the file. */
#ifndef ATTNCAP_MODEL_H
#define ATTNCAP_MODEL_H
#include "attncap/beam.h"
#include "attncap/common.h"
#include "attncap/confidence.h"
#include "attncap/decoder.h"
#include "attncap/imagenet_words.h"
#include "attncap/tag_precision.h"
#include "attncap/vocab.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ac_model { /* typedef: attncap.h */
    ac_decoder dec;
    ac_vocab *vocab;
    char *encoder_json;  /* metadata "encoder" */
    char *training_json; /* metadata "training", NULL if absent */
    char *path;          /* the file it was loaded from; NULL for a model built in memory */
    ac_beam_opts decode; /* how to caption with it: ac_beam_defaults() with the fields metadata "decode"
                            records (beam, max_len, len_alpha) in their place */
    char *naming_json;   /* metadata "naming", NULL if absent (naming_opts.h reads it) */
    ac_confidence confidence; /* metadata "confidence"; n = 0 (and a = b = 0) if absent */
    ac_tag_precision tag_precision; /* metadata "tag_precision"; n_obs = 0 if absent */
    int *paired_counts;       /* [vocab] each word's count in the captions of the photos it trained on
                                 (metadata "vocab_counts" "paired"); NULL if absent */
    unsigned char *no_repeat; /* [vocab] the words decode.no_repeat points to: every real word but those
                                 of "decode" "repeatable"; NULL if absent */
    ac_imagenet_words imagenet; /* metadata "imagenet_words" (config.imagenet_words of them); n = 0 if absent */
};

/* Loads and validates: shapes against the config, vocabulary size against it, every value finite,
 * no unknown tensors, "encoder" a JSON object, "decode" (if present) a JSON object whose beam,
 * max_len and len_alpha (each optional) are numbers in range, "vocab_counts" (if present) an object
 * whose "paired" is an array of vocab counts (integers >= 0), "training_photos" (if present) a record as
 * ac_training_photos_json writes. F16 or F32 storage. Errors name the
 * file and the problem; on error *m is left empty. */
int ac_model_load(const char *path, ac_model *m, ac_err *err);
/* ac_model_load for captioning: the weights the decoder's step streams, stored as F16, go straight
 * into the float16 copies its kernel reads, the word embeddings stay as stored, and neither gets a
 * float32 copy (decoder.h's ac_decoder_take_f16; the other weights as ac_model_load reads them). The
 * same captions; such a model cannot be saved or trained. */
int ac_model_load_for_captions(const char *path, ac_model *m, ac_err *err);
/* A copy model's word sets from its vocabulary (decoder.h's ac_decoder_set_copy_words with objects.h's
 * reading of each word, then its ImageNet words' forms); ac_model_load does this. */
int ac_model_copy_words(ac_model *m, ac_err *err);
/* Writes format, config, vocab, encoder (m->encoder_json, or "{}") and the optional
 * NULL-terminated key, value, key, value... of extra_meta (e.g. "training", "decode"), atomically.
 * fp16: store the weights as F16. m->decode is not written (it is a choice made on dev photos after
 * training: ac_model_set_meta records it). */
int ac_model_save(const ac_model *m, const char *path, int fp16, const char *const *extra_meta, ac_err *err);
void ac_model_free(ac_model *m);
/* A model for captioning: found as ac_find_model finds it (model_flag, or NULL to search; locate.h),
 * loaded by ac_model_load_for_captions (m->path is where it was found) and its decoder given its
 * float16 weights for inference (ac_decoder_use_f16: half the weight traffic, same captions). */
int ac_model_init(const char *model_flag, ac_model *m, ac_err *err);
/* ac_model_init of the model file at path, already found. */
int ac_model_init_at(const char *path, ac_model *m, ac_err *err);

/* Rewrites a model file with metadata key = value (added or replaced), everything else kept byte for
 * byte; atomically. The file is not validated as a model (any safetensors file is rewritten). */
int ac_model_set_meta(const char *path, const char *key, const char *value, ac_err *err);
/* The same for one member or more of a JSON-object record: the members of `fields` (a JSON object)
 * are added to metadata key's object (created if absent), replacing their namesakes; the record's
 * other members are kept (tune's grid choice keeps "decode" "repeatable" and the reverse). */
int ac_model_merge_meta(const char *path, const char *key, const char *fields, ac_err *err);

/* Rewrites a copy model's file with config.absent on and its priors absent_b = prior
 * [AC_COPY_CATEGORIES] (tune.h ac_absent_match; stored as the other weights are, F16 or F32), everything
 * else kept; atomically. */
int ac_model_set_absent(const char *path, const float *prior, ac_err *err);

/* The photos a model was trained on, as its metadata "training_photos" records them (training.c):
 * {"hash": "...", "n": N, "hashes": "..."}: each photo's file name (any directory left out) hashed
 * (the low 32 bits of ac_hash_bytes, FNV-1a 64), as 8 hex digits, sorted, without repeats.
 * ac_training_photos_json: that record for names[0..n) (malloc'd; NULL when out of memory). */
char *ac_training_photos_json(const char *const *names, int n);
/* How many of names[0..n) (paths or file names) the model file at path records as training photos
 * (*hits), and how many it records (*n_trained); both -1 when it records none. Only the header is
 * read. -1 with err for an unreadable file or a malformed record. */
int ac_model_training_photos_hits(const char *path, const char *const *names, int n, int *hits, int *n_trained,
                                  ac_err *err);
#ifdef __cplusplus
}
#endif
#endif
