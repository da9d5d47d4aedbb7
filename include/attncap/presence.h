/* attncap/presence.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/presence.h: which objects a photo shows, learned from captioned photos.
 *
 * ImageNet's head (encoder.h) knows a thousand classes but no person, table or giraffe; a photo's
 * references name them. A presence head is K logistic classifiers over the encoder's average-pooled
 * annotation vectors, the lexical classifiers of DCC (Hendricks et al. 2016):
 *     p_k = sigmoid(w_k . x + b_k),   x = the mean of the grid's annotation vectors (or of a window's).
 * One k per word group: one of COCO's object categories with the surface forms captions name it by
 * (objects.h's synonyms: person = man, men, woman, skier...). Group k is present in a training photo
 * when at least 2 of its references name it. The naming (naming.h: presence_absent, presence_ratio)
 * never lets a caption say a group the head is sure is absent (why: docs/naming.md).
 *
 * The file (models/presence.safetensors beside the model, `attncap presence` writes it): tensors "w"
 * [K, D] and "b" [K] (F32 or F16), __metadata__ "format" "attncap-presence-1", "encoder" (the
 * identity of the encoder whose features it was fitted on, encoder.h), "groups" (JSON array of K
 * {"name": ..., "forms": [...], "prior": ...} objects, forms tokenized as captions are; "prior", the
 * share of the training photos showing the group, is optional: heads written before it lack it) and
 * "training" (notes). */
#ifndef ATTNCAP_PRESENCE_H
#define ATTNCAP_PRESENCE_H
#include <stddef.h>
#include <stdint.h>

#include "attncap/common.h"
#include "attncap/encoder.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AC_PRESENCE_MAX_FORMS 512 /* person: ~140 synonyms and their plurals */

typedef struct ac_presence_group {
    char *name;   /* "person" */
    int n_forms;
    char **forms; /* "man", "men", "young man"... */
    float prior;  /* the share of the head's training photos that show it (0: not recorded) */
} ac_presence_group;

typedef struct ac_presence {
    int k, dim;
    float *w;            /* [k, dim] */
    float *b;            /* [k] */
    ac_presence_group *groups; /* [k] */
    char *encoder_json;  /* the identity of the encoder it was fitted on */
} ac_presence;

/* Loads and validates (shapes, finite values, groups = k, forms non-empty). Errors name the file. */
int ac_presence_load(const char *path, ac_presence *p, ac_err *err);
int ac_presence_load_mem(const void *data, size_t len, const char *name, ac_presence *p, ac_err *err);
/* Writes atomically; training_json (may be NULL) goes to metadata "training". fp16: F16 weights. */
int ac_presence_save(const ac_presence *p, const char *path, int fp16, const char *training_json, ac_err *err);
void ac_presence_free(ac_presence *p);
void ac_presence_groups_free(ac_presence_group *groups, int k); /* k groups and their forms */
/* An empty head of k groups over dim-vectors (weights zero); the groups' names and forms are copied. */
int ac_presence_init(ac_presence *p, int k, int dim, const ac_presence_group *groups, const char *encoder_json,
                     ac_err *err);

/* prob[n, k] = sigmoid(x[n, dim] . w^T + b). */
void ac_presence_forward(const ac_presence *p, const float *x, int n, float *prob);
/* The loss of prob (from ac_presence_forward) against labels y[n, k] (0/1): the mean over the n*k
 * binary cross-entropies plus l2/2 |w|^2 (b not decayed). dw [k, dim] and db [k] receive its
 * gradient. Returns the loss. */
double ac_presence_backward(const ac_presence *p, const float *x, const float *prob, const uint8_t *y, int n,
                            float l2, float *dw, float *db);

typedef struct ac_presence_fit_opts {
    int steps;   /* full-batch Adam steps (default 400) */
    float lr;    /* 0.01 */
    float l2;    /* 1e-3 */
    /* progress after each step (may be NULL); nonzero return stops */
    int (*progress)(void *ctx, int step, int steps, double loss);
    void *ctx;
} ac_presence_fit_opts;
ac_presence_fit_opts ac_presence_fit_defaults(void);
/* Fits w and b to x[n, dim] and y[n, k] from their current values (steps 0: leaves them);
 * *final_loss is the loss of the head it leaves. Deterministic. Returns 0, or -1 (out of memory, or
 * stopped by progress: err says which). */
int ac_presence_fit(ac_presence *p, const float *x, const uint8_t *y, int n, const ac_presence_fit_opts *o,
                    double *final_loss, ac_err *err);

/* The head over a photo's annotation grid ann[grid_h * grid_w, dim]: row 0 the whole grid's mean,
 * row 1 + j window j's (ac_grid_windows), prob[(1 + n_win), k]. */
int ac_presence_rows(const ac_presence *p, const float *ann, int grid_h, int grid_w, const ac_grid_window *win,
                     int n_win, float *prob, ac_err *err);
/* x[dim] = the mean of the window's annotation vectors. */
void ac_presence_pool(const float *ann, int grid_w, int dim, const ac_grid_window *win, float *x);
#ifdef __cplusplus
}
#endif
#endif
