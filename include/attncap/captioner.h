/* attncap/captioner.h: photo -> caption with attention, end to end (what `attncap caption` and the
 * caption benchmark run): find and load the model, find the encoder it was trained with (checked by
 * SHA-256), prepare the photo exactly as the training photos were (squashed to size x size with the
 * recorded resize), encode, beam search. */
#ifndef ATTNCAP_CAPTIONER_H
#define ATTNCAP_CAPTIONER_H
#include "attncap/beam.h"
#include "attncap/cnn.h"
#include "attncap/decoder.h"
#include "attncap/image.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AC_DEFAULT_MODEL_NAME "attncap-flickr8k.safetensors"

/* The encoder identity stored in a model (and a feature cache): see features.h. */
typedef struct ac_encoder_id {
    char file[256];  /* the .tflite file name, e.g. mobilenet_v2_1.0_224_quant.tflite */
    char sha256[65]; /* "" if absent */
    char layer[256]; /* "" = default */
    char resize[32]; /* "bilinear" = plain bilinear; anything else = antialiased (ac_image_resize) */
    int size, grid_h, grid_w, dim;
    int has_norm;
    float norm_mean, norm_scale;
} ac_encoder_id;
int ac_encoder_id_parse(const char *json, const char *what, ac_encoder_id *id, ac_err *err);

/* The model path: flag if not NULL, else $ATTNCAP_MODEL, else models/AC_DEFAULT_MODEL_NAME in the
 * current directory or beside the executable (its directory and up to three parents), else the only
 * models/ *.safetensors there. malloc'd. */
int ac_find_model(const char *flag, char **path, ac_err *err);
/* The encoder: flag, $ATTNCAP_ENCODER, else id->file in models/ (as above, and beside the model
 * file), then in ac_find_data_dir()/encoders/. Its SHA-256 must equal id->sha256 (when recorded):
 * a different file is refused. */
int ac_find_encoder(const char *flag, const char *model_path, const ac_encoder_id *id, char **path, ac_err *err);

typedef struct ac_captioner {
    ac_model model;
    ac_encoder enc;
    ac_encoder_id id;
    ac_beam_opts beam;
    int grid_h, grid_w, L, D;
    float *ann;     /* [L, D] scratch */
    int *given;     /* NULL, or the caption set by ac_captioner_set_given (word ids) */
    char **given_words; /* its words as written (tokenized) */
    int n_given;
} ac_captioner;
/* model_flag/encoder_flag may be NULL (search). threads: 0 = default. c->beam starts from
 * ac_beam_defaults(), overridden by the model's optional metadata "decode" (JSON: beam, max_len,
 * len_alpha: the settings chosen on dev for it). */
int ac_captioner_open(ac_captioner *c, const char *model_flag, const char *encoder_flag, int threads, ac_err *err);
void ac_captioner_close(ac_captioner *c);
/* photo -> the encoder's square input (thread-safe: may run in a decoding thread). */
int ac_captioner_prepare(const ac_captioner *c, const ac_image *photo, ac_image *square, ac_err *err);
/* square (or any photo: then resized here) -> caption. t_cnn/t_dec (may be NULL) get seconds added. */
int ac_captioner_run(ac_captioner *c, const ac_image *square, ac_caption *out, double *t_cnn, double *t_dec,
                     ac_err *err);

/* From now on ac_captioner_run (and the lanes) return this caption for every photo, with its
 * attention and log-probability under the model, instead of searching for one: where the model
 * looks for each word of a caption it did not choose. The caption is tokenized as the training
 * captions were; a word outside the model's vocabulary is fed as <unk> and keeps its own label
 * (ac_caption.labels). NULL: search again. */
int ac_captioner_set_given(ac_captioner *c, const char *caption, ac_err *err);

/* A lane captions photos concurrently with others of the same captioner: its own CNN plan (with
 * `threads` threads) and scratch, sharing the captioner's model and weights (read-only while lanes
 * run). Same captions as ac_captioner_run, bit for bit. With 2 cores, two lanes of 1 thread keep both
 * busy over many photos (decode, resize, beam search are single-threaded) where one 2-thread CNN
 * leaves a core idle between layers and outside the CNN. */
typedef struct ac_captioner_lane {
    ac_encoder enc; /* shallow copy of the captioner's, with the lane's own plan */
    float *ann;     /* [L, D] scratch */
} ac_captioner_lane;
int ac_captioner_lane_open(const ac_captioner *c, int threads, ac_captioner_lane *lane, ac_err *err);
void ac_captioner_lane_close(ac_captioner_lane *lane);
int ac_captioner_lane_run(const ac_captioner *c, ac_captioner_lane *lane, const ac_image *img, ac_caption *out,
                          double *t_cnn, double *t_dec, ac_err *err);
#ifdef __cplusplus
}
#endif
#endif
