/* train_internal.h: pieces of the trainer shared between src/train*.c and src/plot.c. */
#ifndef ATTNCAP_TRAIN_INTERNAL_H
#define ATTNCAP_TRAIN_INTERNAL_H
#include "attncap/common.h"

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
} ac_train_state;

/* One evaluation: a row of the CSV log and a point of the plot. */
typedef struct ac_hist {
    long step;
    double epoch; /* fractional */
    double train_loss, val_loss, bleu4, cider, lr, seconds;
} ac_hist;

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
