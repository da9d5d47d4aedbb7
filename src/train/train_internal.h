/* train_internal.h: pieces of the trainer shared between src/train/train*.c and src/train/plot.c. */
#ifndef ATTNCAP_TRAIN_INTERNAL_H
#define ATTNCAP_TRAIN_INTERNAL_H
#include "attncap/common.h"
#include "attncap/dataset.h"
#include "attncap/decoder.h"
#include "attncap/model.h"
#include "attncap/features.h"
#include "attncap/train.h"
#include "attncap/regions.h"

/* Where training stands; saved in checkpoints. */
typedef struct ac_train_state {
    int epoch;          /* current epoch (0-based) */
    int pos;            /* next batch of the epoch */
    long step;          /* optimizer steps done (Adam's t) */
    double lr;
    double best;        /* best validation score so far (higher is better), -inf if none */
    double best_loss;   /* its validation loss (breaks ties of the score) */
    long best_step;
    int bad;            /* evaluations since the best */
    int done;           /* early-stopped or finished */
    double win_ce;      /* train CE and tokens since the last evaluation */
    long win_tok;
    long evals;
    double win_reward;  /* self-critical training: the samples' rewards, summed over photos since the last evaluation */
    long win_photos;
    double hard_baseline; /* hard attention: the REINFORCE baseline per token (ac_train_opts) */
} ac_train_state;

/* One evaluation: a row of the CSV log and a point of the plot. */
typedef struct ac_hist {
    long step;
    double epoch; /* fractional */
    double train_loss, val_loss, bleu4, cider, lr, seconds;
    double reward; /* self-critical training: the samples' mean reward (NAN otherwise) */
} ac_hist;

/* The training run (train.c): data, model, optimizer buffers, state. */
#define AC_TEXT_OBJECTS 8
typedef struct ac_train_example {
    int feat, feat_flip; /* feature rows; feat_flip -1 if none */
    int n;               /* words */
    int *w, *wf;         /* [n] ids; wf: with left/right swapped (NULL if no flip) */
    unsigned char n_obj, obj[AC_TEXT_OBJECTS]; /* region models: the COCO objects the caption names */
} ac_train_example;

typedef struct ac_val_image {
    int feat;
    char *id;
    int n_refs;
    char **refs; /* tokenized, joined */
} ac_val_image;

typedef struct ac_trainer {
    const ac_train_opts *o;
    ac_dataset ds;
    ac_feature_cache fc;
    ac_model model;
    int L, D;   /* annotation vectors per photo (grid cells + R) and their size */
    int Lg, R;  /* grid cells, region slots (0: no regions) */
    ac_region *reg;          /* [feature rows, R] each photo's regions (train_regions.c) */
    unsigned char *n_reg;    /* [feature rows] how many */
    int n_reg_photos;        /* photos with detections */
    float region_scale, region_min;
    ac_train_example *ex, *vex;
    int n_ex, n_vex;
    ac_val_image *vi;
    int n_vi;
    int use_flip;
    int n_photos, n_missing; /* training photos, and those without features (left out) */
    int n_held_out;          /* training photos made val photos: the data set has none (hold_out_val) */
    /* photos: the captions of photo k are ex[img_start[k] .. img_start[k] + img_n[k]) */
    int n_img, *img_start, *img_n, max_caps;
    int per_batch; /* photos per batch (grouped batches) */
    int steps;     /* batches per epoch */
    float *grad, *m, *v;
    float *ema; /* averaged weights (NULL if off); swapped into the model while evaluating */
    ac_dec_pool *work;
    /* more captioned photos (o->extra_data), all for training */
    ac_dataset xds[8];
    int n_xds;
    /* captions without photos (train_text.c) */
    ac_train_example *tex;           /* feat = -1 */
    int n_tex;
    int text_batch;         /* text captions per step */
    float *null_ctx;        /* [D] the learned no-photo context */
    /* How the detector treats the training photos' captions, which the pseudo-regions of captions
     * without photos imitate (train_regions.c): */
    float *named_score;     /* [n_named_score] the best region's score of each object a photo caption names */
    int n_named_score;
    float named_found;      /* P(the photo has a region of an object | a caption names it) */
    unsigned char *unnamed_cat; /* the regions of photo caption i that it does not name: */
    float *unnamed_score;       /* [unnamed_start[i] .. unnamed_start[i + 1]) */
    int *unnamed_start;         /* [n_ex + 1] */
    float *null_m, *null_v; /* [D] its Adam moments */
    float *null_g;          /* [D] its gradient */
    float *null_ann;        /* [shards, L, D]: null_ctx repeated, one "photo" per shard */
    float *grad_text;       /* [n_params] */
    int *text_perm, text_perm_round; /* the order of the text captions in round text_perm_round */
    int *cnt_paired, *cnt_text;      /* [V] word counts by source, recorded in the model */
    struct ac_scst *scst;   /* self-critical training's references and buffers (o->scst; train_scst.c) */
    /* state */
    ac_train_state st;
    ac_hist *hist;
    int n_hist, cap_hist;
} ac_trainer;

/* train_data.c */
/* Loads o->data (and o->extra_data, o->text, o->detections), builds the vocabulary, encodes
 * every caption into tr->ex and opens the feature cache; -1 with err naming the file and the problem. */
int ac_train_load_data(ac_trainer *tr, ac_err *err);

/* train_regions.c */
/* Reads o->detections into tr->reg / tr->n_reg (tr->R, region_min set). */
int ac_train_regions_load(ac_trainer *tr, ac_err *err);
/* ann holds feature row `row`'s gh x gw cells: appends its regions, sets *n_valid. */
void ac_train_photo_regions(const ac_trainer *tr, int row, int gh, int gw, float *ann, int *n_valid, int *n_regions,
                            unsigned char *cat, float *score);
/* The COCO objects a tokenized caption names (at most AC_TEXT_OBJECTS) into obj; returns how many. */
int ac_train_text_objects(const ac_tokens *t, unsigned char *obj);
/* What the pseudo-regions imitate (named_score .. unnamed_start above), from the photo captions. */
int ac_train_text_regions_init(ac_trainer *tr, ac_err *err);
/* A caption without a photo's pseudo-photo: the no-photo context, then its pseudo-regions. */
void ac_train_text_regions(const ac_trainer *tr, const ac_train_example *e, uint64_t seed, float *ann, int *n_valid,
                           int *n_regions, unsigned char *cat, float *score);

/* train_scst.c: self-critical training (o->scst samples per photo). */
typedef struct ac_scst ac_scst;
/* A photo of a step: its annotation vectors (gh x gw cells, then n_regions regions of categories cat
 * and scores score, NULL: each 1) and its index among tr's photos (img_start, img_n). */
typedef struct ac_scst_photo {
    const float *ann;
    int gh, gw, n_regions;
    const unsigned char *cat;
    const float *score;
    int img;
} ac_scst_photo;
/* The references (every training photo's captions) and the buffers for steps of up to max_photos. */
int ac_train_scst_init(ac_trainer *tr, int max_photos, ac_err *err);
void ac_train_scst_free(ac_trainer *tr);
/* Step `step`'s batch: o->scst captions sampled from dec for each of the n photos, each weighted by its
 * reward's advantage (ac_dec_batch.weight); *mean_reward, the samples' mean CIDEr-D. The batch points
 * into tr's buffers and ph's until the next call. */
int ac_train_scst_batch(ac_trainer *tr, const ac_decoder *dec, const ac_scst_photo *ph, int n, long step,
                        ac_dec_batch *out, double *mean_reward, ac_err *err);

/* train_text.c */
/* Tokenizes the captions of o->text's datasets, appending them to *toks (grown as needed; *cap is its
 * capacity, *n its count). Invalid UTF-8, empty or over-long captions are skipped. */
int ac_train_read_text(ac_trainer *tr, ac_tokens **toks, int *n, int *cap, ac_err *err);
/* Word counts by source over the encoded examples; a JSON object {"paired":[...],"text":[...]} with
 * one count per vocabulary id (malloc'd, NULL if out of memory). */
char *ac_train_vocab_counts_json(ac_trainer *tr);
/* Starts the no-photo context at the mean annotation vector of the first training photos, and
 * allocates what text batches need. */
int ac_train_text_init(ac_trainer *tr, ac_err *err);
/* Copies the weights of the model at `path` into tr->model.dec (same sizes; rows of words absent from
 * its vocabulary keep their initial values). */
int ac_train_warm_start(ac_trainer *tr, const char *path, ac_err *err);
/* The text captions of step `step`: idx[0..nb), a deterministic function of (seed, step). */
int ac_train_text_select(ac_trainer *tr, long step, int *idx, ac_err *err);

/* Appends one evaluation to tr->hist; -1 if out of memory. */
int ac_train_hist_add(ac_trainer *tr, const ac_hist *h);

/* train_ckpt.c: "OUT.ckpt" (malloc'd; NULL if out of memory). */
char *ac_train_ckpt_path(const char *out);
/* Writes tr's checkpoint atomically. */
int ac_train_save_ckpt(ac_trainer *tr, ac_err *err);
/* Loads the checkpoint of o->out into tr (model, Adam moments, average, state, history) and the
 * options that decide the trajectory into *o. */
/* kept[kept_n] receives the options given (o->resume_given) that differ from the checkpoint's ("" if
 * none); they are an error unless o->resume_force, when kept says what was done: a learning rate
 * given replaces the checkpoint's (o->lr and the current rate), the other options are the
 * checkpoint's. */
int ac_train_load_ckpt(ac_trainer *tr, ac_train_opts *o, char *kept, size_t kept_n, ac_err *err);

/* train_opt.c: clips g to global norm `clip` (0 = no clipping), then one Adam step t (1-based) with
 * L2 weight decay wd, then (if ema is not NULL) ema = ema_decay ema + (1 - ema_decay) p, in up to
 * `threads` threads; returns the norm before clipping. Deterministic for any thread count. */
double ac_clip_and_adam(float *p, float *g, float *m, float *v, float *ema, float ema_decay, size_t n, float clip,
                        double lr, long t, float wd, int threads);

/* Metrics for validation (train_metrics.c): 0 if the metrics module is not built in. */
int ac_train_metrics_available(void);
/* Corpus BLEU-4 and CIDEr-D of n candidates against their references (tokenized, joined). */
int ac_train_score(int n, const char *const *cands, const int *n_refs, char *const *const *refs, double *bleu4,
                   double *cider, ac_err *err);

/* plot.c: training curves to a PNG. Up to 4 series on a shared x axis (step); NAN values are gaps.
 * Left axis: losses; the right-hand series (right != 0) gets its own scale. */
typedef struct ac_plot_series {
    const char *name;
    const double *y; /* [n] */
    int right;
    unsigned rgb;
} ac_plot_series;
int ac_plot_png(const char *path, const char *title, const char *xlabel, int n, const double *x,
                const ac_plot_series *s, int n_series, ac_err *err);
#endif
