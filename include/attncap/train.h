/* attncap/train.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/train.h: training a decoder (decoder.h: the soft-attention LSTM, or the transformer) on a
 * captioned-photo set and a feature cache.
 *
 * Adam (bias-corrected) on the objective of decoder_train.c, gradient clipping by global norm, the
 * learning rate multiplied by lr_decay after every lr_patience evaluations without improvement of
 * the validation score (ties broken by validation loss), early stopping after `patience` of them. The best model (by the validation score) is written atomically
 * to `out`; a checkpoint (parameters, Adam moments, position in the data order, history) to
 * `out`.ckpt every `checkpoint_every` steps and after each evaluation, so `resume` continues exactly:
 * the data order and the dropout masks are functions of (seed, epoch, step), and a resumed run gives
 * byte-identical weights to an uninterrupted one. With `ema`, the average is part of the checkpoint and
 * is what gets validated and saved. */
#ifndef ATTNCAP_TRAIN_H
#define ATTNCAP_TRAIN_H
#include "attncap/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What training reports as it goes (ac_train_event and its kinds) is in the core, attncap.h. */
typedef struct ac_train_opts {
    const char *data;       /* dataset SPEC (dataset.h) */
    const char *image_dir;  /* optional */
    const char *features;   /* feature cache dir (features.h) */
    const char *out;        /* best model */
    /* The defaults are the shipped model's recipe (models/README.md, tools/train_flickr8k.sh). */
    int epochs;             /* max epochs (default 16) */
    int batch;              /* captions per step (default 64) */
    float lr;               /* Adam step size (default 4e-4) */
    float lr_min;           /* the plateau decay never takes it below this (default 0: no floor) */
    int embed, hidden, att; /* default 256, 512, 256 */
    float dropout, lambda;  /* default 0.5, 1.0 */
    const char *attention;  /* score function by name (decoder.h; default NULL = "additive"; the
                             * transformer's is scaled-dot) */
    int heads;              /* attention heads (decoder.h; default 0 = one, for the transformer 4) */
    const char *decoder;    /* decoder kind by name (decoder.h; default NULL = "lstm"): "transformer" has
                             * width embed, feed-forward width hidden and `layers` layers (att unused) */
    int layers;             /* transformer layers (default 0 = 2) */
    const char *attention_mode; /* "soft" or "hard" (decoder.h; default NULL = soft; hard is the LSTM's).
                             * Hard: the REINFORCE baseline b is a moving average (decay 0.9 per step, as Xu
                             * et al.) of the sampled captions' cross-entropy per token, starting at the
                             * targets' unigram entropy, and the captions without photos (text) train soft */
    float reinforce, entropy, expected_context; /* hard's lambda_r (default 1), lambda_e (default 0.01) and
                             * chance of a caption on the expected context (default 0.5) */
    int min_count;          /* vocabulary threshold (default 5) */
    float clip;             /* global gradient norm clip, 0 = none (default 5) */
    float weight_decay;     /* L2 added to the gradient (default 0) */
    float ema;              /* exponential moving average of the weights, decay per step (default 0.999;
                             * 0 = off): validation and the saved model use the averaged weights */
    int patience;           /* evaluations without improvement before stopping (default 4) */
    float lr_decay;         /* factor on plateau (default 0.5) */
    int lr_patience;        /* decay after this many evaluations without improvement (default 2) */
    int checkpoint_every;   /* steps (default 500); 0 = only after evaluations */
    int eval_every;         /* steps between evaluations (default 0 = once per epoch) */
    int resume;
    /* On resume, the options that decide the trajectory come from the checkpoint. Those named in
     * resume_given (option names as the checkpoint records them: "lr", "batch", "hidden", ...; others
     * are ignored) must equal the checkpoint's, else ac_train fails (AC_ERR_RESUME_OPTIONS) naming
     * them, unless resume_force: then the checkpoint's values are kept and AC_TRAIN_RESUMED says which. */
    const char *const *resume_given;
    int n_resume_given;
    int resume_force;
    const char *val_metric; /* "cider", "bleu4" or "loss" (default: cider if metrics are built, else loss) */
    int beam;               /* beam size for the validation captions (default 3; 1 = greedy) */
    int max_val;            /* validation photos (default 0 = all) */
    unsigned long long seed;
    const char *log_csv, *plot_png;
    int max_train;          /* use only the first N training captions (0 = all): smoke tests */
    int max_words;          /* skip training captions longer than this (default 32) */
    int flip;               /* use "#flip" feature keys with left/right swapped: -1 auto, 0 no, 1 yes */
    int fp16;               /* store the model as F16 */
    int max_steps;          /* stop after this many steps in total (0 = no limit): tests */
    int shards;             /* batch shards computed in parallel (default 2); part of the arithmetic */
    int threads;            /* threads for the shards (default: ac_default_threads()) */
    int map_features;       /* leave the feature rows in the shard files, mapped (features.h): 1 always,
                             * 0 never, -1 (default) when they would take over half the memory */
    int group;              /* batches of whole photos (all their captions, ~batch captions): the photo's
                             * W_a a is computed once for its captions (default 1) */
    /* Beyond one captioned-photo set (see train_text.c): */
    const char *extra_data; /* comma-separated dataset SPECs whose every photo (any split) is a training
                             * photo, next to data's train split; photos need features in the cache */
    const char *text;       /* comma-separated dataset SPECs read as captions without photos: each step
                             * adds a batch of them, run through the same decoder with a learned
                             * "no photo" context in place of the photo (z_t, h_0, c_0 all come from it),
                             * so every word of the text gets an embedding and an output row */
    float text_ratio;       /* text captions per step = text_ratio * batch (default 1 when text is set) */
    float text_weight;      /* weight of the text batch's loss against the photo batch's (default 1) */
    const char *detections; /* comma-separated `attncap detect` outputs for the photos (regions.h): the
                               decoder attends over each photo's detected objects beside its grid, and
                               captions without photos get their object words as pseudo-regions */
    int regions;            /* regions per photo (default 10 with detections; 0: none) */
    int copy;               /* with regions: the copy path (decoder.h config.copy): a word can come from a
                             * region's category; 1: the attended region's, through a learned gate; 2: the
                             * pointer's region, against its sentinel */
    int absent;             /* with copy: learned priors of the words of objects no region shows
                             * (decoder.h config.absent) */
    int object_init;        /* with copy: the photo's objects set the initial state (config.object_init) */
    const char *imagenet_words; /* with copy: a tag table (tags.h, models/imagenet_words.tsv): the words
                             * COCO lacks that the encoder's classifier can say become copy categories
                             * (config.imagenet_words, imagenet_words.h): photos get regions of them
                             * from the classifier, captions without photos pseudo-regions */
    int scst;               /* 0 (default): cross-entropy on the captions. K > 1: self-critical training
                             * (train_scst.c): K captions sampled per photo, each weighted by how much its
                             * CIDEr-D beats the photo's other samples'; a fine-tune (with init) of an LSTM
                             * with soft attention, on the photos alone (text is not used) */
    float scst_penalty;     /* with scst: each object a sample names that none of its photo's captions
                             * name (objects.h; what CHAIR counts as hallucinated) costs this much reward */
    const char *init;       /* start from this model's weights (same sizes); words new to its
                             * vocabulary start fresh, the others keep their rows */
    /* Progress and results, called on the training thread (NULL: silent). */
    void (*on_event)(const ac_train_event *ev, void *user);
    void *user;
} ac_train_opts;

void ac_train_defaults(ac_train_opts *o);
/* Runs training, reporting through o->on_event. Prints nothing. */
int ac_train(const ac_train_opts *o, ac_err *err);
#ifdef __cplusplus
}
#endif
#endif
